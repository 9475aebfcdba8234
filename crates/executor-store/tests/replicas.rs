//! Several stores on one PostgreSQL database, as replicas use it: no owner lock, migrations
//! once, one key for the deployment, writes announced to the others, and a pause claimed once.

use std::time::Duration;

use executor_store::{
    ExecutionRecord, ExecutionStatus, ExecutionStore, IntegrationRecord, MasterKey, Owner, Scope,
    SqlStore, Store, StoreError,
};
use serde_json::json;

mod support;
use support::TestDb;

fn scope() -> Scope {
    Scope::new("t1", Some("alice".into()))
}

fn integration(slug: &str) -> IntegrationRecord {
    IntegrationRecord {
        slug: slug.into(),
        plugin_id: "mcp".into(),
        name: None,
        description: None,
        config: json!({}),
        can_remove: true,
        can_refresh: false,
        config_revised_at: None,
        created_at: 1,
        updated_at: 1,
    }
}

fn paused(id: &str) -> ExecutionRecord {
    ExecutionRecord {
        id: id.to_owned(),
        code: "return 1".to_owned(),
        auto_approve: false,
        status: ExecutionStatus::Paused,
        seed: 7,
        started_at: 10,
        updated_at: 10,
        finished_at: None,
        expires_at: None,
        duration_ms: None,
        tool_calls: 0,
        clock: json!([]),
        pending: Some(json!({"kind": "approval"})),
        outcome: None,
    }
}

/// Two stores at once: both start (migrations run once under sqlx's lock), both read what the
/// other wrote.
#[tokio::test]
async fn replicas_share_one_database_and_migrate_it_once() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let (a, b) = tokio::join!(db.open(), db.open());
    a.insert_integration(&scope(), &integration("gh"))
        .await
        .unwrap();
    let seen = b.get_integration(&scope(), "gh").await.unwrap();
    assert_eq!(seen.map(|i| i.slug).as_deref(), Some("gh"));
    b.put_secret(&scope(), Owner::Org, "item", "s3cret")
        .await
        .unwrap();
    assert_eq!(
        a.get_secret(&scope(), Owner::Org, "item")
            .await
            .unwrap()
            .as_deref(),
        Some("s3cret")
    );
    a.close().await;
    b.close().await;
}

/// A replica started with another key than the one the secrets were sealed with is refused at
/// start, in a sentence that names the setting; with the right key it opens.
#[tokio::test]
async fn a_key_that_cannot_open_the_secrets_is_refused_at_start() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let first = db.open().await;
    first
        .put_secret(&scope(), Owner::Org, "item", "s3cret")
        .await
        .unwrap();
    first.close().await;
    let err = db
        .try_open_with_key(MasterKey::generate())
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Config(_)), "{err:?}");
    assert!(err.to_string().contains("EXECUTOR_SECRET_KEY"), "{err}");
    db.open().await.close().await;
}

/// A catalog write on one replica moves the other's change counter (LISTEN/NOTIFY); an
/// execution write does not.
#[tokio::test]
async fn catalog_writes_are_announced_to_the_other_replicas() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let (a, b) = tokio::join!(db.open(), db.open());
    let mut changes = b.catalog_changes().expect("PostgreSQL announces changes");
    let before = *changes.borrow_and_update();

    a.save_execution(&scope(), &paused("ex-1"), &[])
        .await
        .unwrap();
    let quiet = tokio::time::timeout(Duration::from_millis(300), changes.changed()).await;
    assert!(quiet.is_err(), "an execution write is not a catalog change");

    a.insert_integration(&scope(), &integration("gh"))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), changes.changed())
        .await
        .expect("announced within 5 s")
        .unwrap();
    assert!(*changes.borrow() > before);
    a.close().await;
    b.close().await;
}

/// Two replicas resuming one pause at once: exactly one claims it.
#[tokio::test]
async fn a_pause_is_claimed_by_one_replica() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let (a, b) = tokio::join!(db.open(), db.open());
    for round in 0..20 {
        let id = format!("ex-r{round}");
        a.save_execution(&scope(), &paused(&id), &[]).await.unwrap();
        let s = scope();
        let (x, y) = tokio::join!(
            a.claim_paused_execution(&s, &id, 20),
            b.claim_paused_execution(&s, &id, 20)
        );
        assert!(
            x.unwrap() ^ y.unwrap(),
            "round {round}: exactly one claim wins"
        );
    }
    a.close().await;
    b.close().await;
}

/// SQLite keeps its owner lock; PostgreSQL has none, so this only concerns the file.
#[tokio::test]
async fn the_sqlite_file_still_has_one_owner() {
    let db = TestDb::sqlite();
    let first = db.open().await;
    let err = SqlStore::open(db.path()).await.unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err:?}");
    first.close().await;
}

/// Background work has one leader at a time; when the leader goes away another replica takes
/// over at its next ask.
#[tokio::test]
async fn one_replica_leads_the_background_work_until_it_goes_away() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let (a, b) = tokio::join!(db.open(), db.open());
    assert!(a.lead_background().await);
    assert!(a.lead_background().await, "the leader keeps leading");
    assert!(!b.lead_background().await, "one leader at a time");
    a.close().await;
    let mut took_over = false;
    for _ in 0..50 {
        if b.lead_background().await {
            took_over = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(took_over, "the other replica leads once the first is gone");
    b.close().await;
}

/// A connection's catalog refresh is claimed by one replica at a time; released, the next may
/// claim it. Other connections are not held up.
#[tokio::test]
async fn a_catalog_refresh_is_claimed_by_one_replica_at_a_time() {
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let (a, b) = tokio::join!(db.open(), db.open());
    let key = executor_store::ConnectionKey::new(executor_store::Owner::Org, "gh", "main");
    let other = executor_store::ConnectionKey::new(executor_store::Owner::Org, "gh", "other");
    let held = a.try_lock_catalog_refresh(&scope(), &key).await.unwrap();
    assert!(held.is_some());
    assert!(
        b.try_lock_catalog_refresh(&scope(), &key)
            .await
            .unwrap()
            .is_none()
    );
    let unrelated = b.try_lock_catalog_refresh(&scope(), &other).await.unwrap();
    assert!(unrelated.is_some(), "another connection is not held up");
    held.unwrap().release().await;
    let next = b.try_lock_catalog_refresh(&scope(), &key).await.unwrap();
    assert!(next.is_some(), "released, the other replica claims it");
    next.unwrap().release().await;
    unrelated.unwrap().release().await;
    a.close().await;
    b.close().await;
}

/// A replica whose connections to the database are cut (a failover, a proxy restart) still
/// hears the next write, and one made while it was cut off.
#[tokio::test]
async fn announcements_survive_a_lost_connection() {
    use sqlx::Connection as _;
    let Some(db) = TestDb::postgres().await else {
        return;
    };
    let (a, b) = tokio::join!(db.open(), db.open());
    let mut changes = b.catalog_changes().expect("PostgreSQL announces changes");
    changes.borrow_and_update();
    let mut admin = sqlx::PgConnection::connect(db.url().unwrap())
        .await
        .unwrap();
    sqlx::query(
        "SELECT pg_terminate_backend(pid)::text FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    admin.close().await.ok();
    a.insert_integration(&scope(), &integration("after-cut"))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), changes.changed())
        .await
        .expect("announced within 10 s of the cut")
        .unwrap();
    a.close().await;
    b.close().await;
}
