//! The store suite: each `both_backends!` test runs on SQLite and on PostgreSQL; the rest are
//! about the SQLite file (owner lock, pragmas, bytes at rest).

use std::path::Path;

use executor_store::{
    Backend, ConnectionKey, ConnectionRecord, IntegrationRecord, Owner, SCHEMA_VERSION, Scope,
    SqlStore, Store, StoreError, ToolAddress, ToolFilter, ToolRecord,
};
use serde_json::{Map, Value, json};

mod support;
use support::TestDb;

fn alice() -> Scope {
    Scope::new("t1", Some("alice".into()))
}
fn bob() -> Scope {
    Scope::new("t1", Some("bob".into()))
}
fn no_subject() -> Scope {
    Scope::new("t1", None)
}

fn integration(slug: &str) -> IntegrationRecord {
    IntegrationRecord {
        slug: slug.into(),
        plugin_id: "mcp".into(),
        name: Some(format!("{slug} name")),
        description: Some(format!("{slug} description")),
        config: json!({"endpoint": format!("https://{slug}.example/mcp"), "n": 1}),
        can_remove: true,
        can_refresh: true,
        config_revised_at: Some(5),
        created_at: 1_000,
        updated_at: 1_000,
    }
}

fn connection(owner: Owner, integration: &str, name: &str) -> ConnectionRecord {
    ConnectionRecord {
        owner,
        integration: integration.into(),
        name: name.into(),
        template: "apikey".into(),
        provider: "file".into(),
        item_ids: json!({"token": format!("connection:{owner}:{integration}:{name}:token")}),
        identity_label: None,
        description: None,
        last_health: None,
        tools_synced_at: None,
        expires_at: None,
        created_at: 2_000,
        updated_at: 2_000,
        oauth: None,
    }
}

fn tool(name: &str, description: &str) -> ToolRecord {
    ToolRecord {
        // Identity columns come from the key given to replace_tools.
        integration: String::new(),
        owner: Owner::Org,
        connection: String::new(),
        plugin_id: "mcp".into(),
        name: name.into(),
        description: description.into(),
        input_schema: Some(json!({"type": "object", "properties": {"q": {"$ref": "#/$defs/Q"}}})),
        output_schema: Some(json!({"type": "string"})),
        annotations: Some(json!({"requiresApproval": false})),
        binding: Some(json!({"method": "get", "path": "/x"})),
    }
}

fn defs(pairs: &[(&str, Value)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

async fn open(dir: &Path) -> SqlStore {
    SqlStore::open(dir).await.expect("open store")
}

/// A store with integration `gh` and connections org/main, alice's user/mine.
async fn seeded(db: &TestDb) -> SqlStore {
    seed(db.open().await).await
}

async fn seed(store: SqlStore) -> SqlStore {
    store
        .insert_integration(&alice(), &integration("gh"))
        .await
        .unwrap();
    store
        .upsert_connection(&alice(), &connection(Owner::Org, "gh", "main"))
        .await
        .unwrap();
    store
        .upsert_connection(&alice(), &connection(Owner::User, "gh", "mine"))
        .await
        .unwrap();
    store
}

#[tokio::test]
async fn second_open_fails_at_once_while_locked() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("nested").join("data");
    let first = open(&data_dir).await;
    assert!(data_dir.join("data.db.owner-lock").exists());

    let started = std::time::Instant::now();
    let err = SqlStore::open(&data_dir).await.unwrap_err();
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    match &err {
        StoreError::Locked { path, holder_hint } => {
            assert_eq!(path, &data_dir);
            assert_eq!(
                holder_hint.as_deref(),
                Some(format!("pid {}", std::process::id()).as_str())
            );
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    let message = err.to_string();
    assert_eq!(
        message,
        format!(
            "another executor server (pid {}) already owns the data directory {}; stop it or use a different EXECUTOR_DATA_DIR",
            std::process::id(),
            data_dir.display()
        )
    );

    first.close().await;
    let second = open(&data_dir).await;
    // Dropping (without close) also releases the lock.
    drop(second);
    let third = open(&data_dir).await;
    third.close().await;
}

#[tokio::test]
async fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    open(dir.path()).await.close().await;

    // Stamp the database as written by a newer build.
    {
        use sqlx::ConnectOptions;
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(dir.path().join("data.db"))
            .connect()
            .await
            .unwrap();
        let version: String =
            sqlx::query_scalar("SELECT value FROM meta WHERE key = 'schema_version'")
                .fetch_one(&mut conn)
                .await
                .unwrap();
        assert_eq!(version, SCHEMA_VERSION.to_string());
        sqlx::query("UPDATE meta SET value = ? WHERE key = 'schema_version'")
            .bind((SCHEMA_VERSION + 1).to_string())
            .execute(&mut conn)
            .await
            .unwrap();
        use sqlx::Connection;
        conn.close().await.unwrap();
    }

    let err = SqlStore::open(dir.path()).await.unwrap_err();
    match err {
        StoreError::NewerSchema { found, supported } => {
            assert_eq!(found, SCHEMA_VERSION + 1);
            assert_eq!(supported, SCHEMA_VERSION);
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }
    // The refused open released the lock again: a failed open leaves nothing held.
    let err = SqlStore::open(dir.path()).await.unwrap_err();
    assert!(matches!(err, StoreError::NewerSchema { .. }));
}

/// Every file the store leaves in its data directory, as bytes.
fn data_dir_bytes(dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            all.extend(std::fs::read(&path).unwrap());
        }
    }
    all
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn secrets_are_sealed_at_rest_and_bound_to_the_master_key() {
    let dir = tempfile::tempdir().unwrap();
    let key = executor_store::MasterKey::generate();
    let s = Scope::local("t");
    let secret = "sk_live_0123456789abcdefSECRET";
    {
        let store = SqlStore::open_with_key(dir.path(), key.clone())
            .await
            .unwrap();
        store
            .put_secret(&s, Owner::Org, "connection:org:gh:main:token", secret)
            .await
            .unwrap();
        // Overwrite: the old sealed value must not linger either.
        store
            .put_secret(&s, Owner::Org, "connection:org:gh:main:token", secret)
            .await
            .unwrap();
        assert_eq!(
            store
                .get_secret(&s, Owner::Org, "connection:org:gh:main:token")
                .await
                .unwrap()
                .as_deref(),
            Some(secret)
        );
        // Scan while open (WAL present) and after close (checkpointed).
        assert!(!contains(&data_dir_bytes(dir.path()), secret));
        store.close().await;
    }
    assert!(!contains(&data_dir_bytes(dir.path()), secret));

    let store = SqlStore::open_with_key(dir.path(), key.clone())
        .await
        .unwrap();
    assert_eq!(
        store
            .get_secret(&s, Owner::Org, "connection:org:gh:main:token")
            .await
            .unwrap()
            .as_deref(),
        Some(secret)
    );
    store.close().await;

    // Another key cannot open it, and says why.
    let store = SqlStore::open_with_key(dir.path(), executor_store::MasterKey::generate())
        .await
        .unwrap();
    let err = store
        .get_secret(&s, Owner::Org, "connection:org:gh:main:token")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("another master key"), "{err}");
    assert!(!err.contains(secret));
    store.close().await;
}

#[tokio::test]
async fn plaintext_secrets_from_older_builds_are_sealed_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let key = executor_store::MasterKey::generate();
    let s = Scope::local("t");
    let store = SqlStore::open_with_key(dir.path(), key.clone())
        .await
        .unwrap();
    store.close().await;
    {
        // What a pre-vault build wrote (moved aside by migration 0012).
        let pool = sqlx::SqlitePool::connect(&format!(
            "sqlite://{}",
            dir.path().join("data.db").display()
        ))
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO secret_unowned (tenant, item_id, value, created_at, updated_at) \
             VALUES ('t', 'legacy', 'plain-old-token', 1, 1)",
        )
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }
    let store = SqlStore::open_with_key(dir.path(), key).await.unwrap();
    assert_eq!(
        store
            .get_secret(&s, Owner::Org, "legacy")
            .await
            .unwrap()
            .as_deref(),
        Some("plain-old-token")
    );
    store.close().await;
    assert!(!contains(&data_dir_bytes(dir.path()), "plain-old-token"));
}

#[tokio::test]
async fn in_memory_store_works() {
    let store = SqlStore::open_in_memory().await.unwrap();
    let s = Scope::local("t");
    store
        .insert_integration(&s, &integration("x"))
        .await
        .unwrap();
    store
        .upsert_connection(&s, &connection(Owner::User, "x", "c"))
        .await
        .unwrap();
    store
        .replace_tools(
            &s,
            &ConnectionKey::new(Owner::User, "x", "c"),
            &[tool("t", "")],
            &Map::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .list_tools(&s, &ToolFilter::default())
            .await
            .unwrap()
            .len(),
        1
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_readers_and_writers() {
    let dir = tempfile::tempdir().unwrap();
    let store = std::sync::Arc::new(seed(open(dir.path()).await).await);
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let key = ConnectionKey::new(Owner::Org, "gh", "main");
            for j in 0..10 {
                if i % 2 == 0 {
                    store
                        .replace_tools(
                            &alice(),
                            &key,
                            &[tool(&format!("t{i}_{j}"), ""), tool("common", "")],
                            &Map::new(),
                        )
                        .await
                        .unwrap();
                } else {
                    let tools = store
                        .list_tools(&alice(), &ToolFilter::default())
                        .await
                        .unwrap();
                    // Readers never see a half-replaced catalog.
                    assert!(tools.is_empty() || tools.len() == 2, "{}", tools.len());
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

both_backends! {
    async fn integration_crud_round_trip(db: &TestDb) {
        let store = db.open().await;
        let s = alice();

        assert!(store.list_integrations(&s).await.unwrap().is_empty());
        store
            .insert_integration(&s, &integration("zeta"))
            .await
            .unwrap();
        store
            .insert_integration(&s, &integration("alpha"))
            .await
            .unwrap();

        let got = store.get_integration(&s, "zeta").await.unwrap().unwrap();
        assert_eq!(got, integration("zeta"));
        let slugs: Vec<_> = store
            .list_integrations(&s)
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.slug)
            .collect();
        assert_eq!(slugs, ["alpha", "zeta"]);

        // Duplicate slug in the tenant.
        assert!(matches!(
            store.insert_integration(&s, &integration("zeta")).await,
            Err(StoreError::AlreadyExists)
        ));
        // Same slug in another tenant is fine; tenants do not see each other.
        let other = Scope::local("t2");
        store
            .insert_integration(&other, &integration("zeta"))
            .await
            .unwrap();
        assert_eq!(store.list_integrations(&other).await.unwrap().len(), 1);

        // Upsert replaces but keeps created_at.
        let mut changed = integration("zeta");
        changed.config = json!({"endpoint": "https://new"});
        changed.can_remove = false;
        changed.created_at = 9_999;
        changed.updated_at = 9_999;
        store.upsert_integration(&s, &changed).await.unwrap();
        let got = store.get_integration(&s, "zeta").await.unwrap().unwrap();
        assert_eq!(got.config, json!({"endpoint": "https://new"}));
        assert!(!got.can_remove);
        assert_eq!(got.created_at, 1_000);
        assert_eq!(got.updated_at, 9_999);
        // Upsert of a new slug inserts.
        store
            .upsert_integration(&s, &integration("mid"))
            .await
            .unwrap();
        assert!(store.get_integration(&s, "mid").await.unwrap().is_some());

        // Meta update: absent = unchanged.
        let got = store
            .update_integration_meta(&s, "zeta", Some("Zeta".into()), None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.name.as_deref(), Some("Zeta"));
        assert_eq!(got.description.as_deref(), Some("zeta description"));
        assert!(
            store
                .update_integration_meta(&s, "nope", Some("x".into()), None)
                .await
                .unwrap()
                .is_none()
        );

        assert!(store.delete_integration(&s, "zeta").await.unwrap());
        assert!(!store.delete_integration(&s, "zeta").await.unwrap());
        assert!(store.get_integration(&s, "zeta").await.unwrap().is_none());
        assert!(
            store
                .get_integration(&other, "zeta")
                .await
                .unwrap()
                .is_some()
        );
        store.close().await;
    }

    async fn delete_integration_cascades_across_owners_and_subjects(db: &TestDb) {
        let store = seeded(db).await;
        store
            .upsert_connection(&bob(), &connection(Owner::User, "gh", "bobs"))
            .await
            .unwrap();
        store
            .insert_integration(&alice(), &integration("other"))
            .await
            .unwrap();
        store
            .upsert_connection(&alice(), &connection(Owner::Org, "other", "main"))
            .await
            .unwrap();
        for (scope, key) in [
            (alice(), ConnectionKey::new(Owner::Org, "gh", "main")),
            (alice(), ConnectionKey::new(Owner::User, "gh", "mine")),
            (bob(), ConnectionKey::new(Owner::User, "gh", "bobs")),
            (alice(), ConnectionKey::new(Owner::Org, "other", "main")),
        ] {
            store
                .replace_tools(&scope, &key, &[tool("t", "d")], &defs(&[("Q", json!({}))]))
                .await
                .unwrap();
        }

        assert!(store.delete_integration(&alice(), "gh").await.unwrap());

        for scope in [alice(), bob()] {
            assert!(
                store
                    .list_connections(&scope, Some("gh"), None)
                    .await
                    .unwrap()
                    .is_empty()
            );
            let tools = store
                .list_tools(&scope, &ToolFilter::default())
                .await
                .unwrap();
            assert!(tools.iter().all(|t| t.integration == "other"));
        }
        assert!(
            store
                .tool_definitions(&bob(), &ConnectionKey::new(Owner::User, "gh", "bobs"))
                .await
                .unwrap()
                .is_empty()
        );
        // The other integration is untouched.
        assert_eq!(
            store
                .list_tools(&alice(), &ToolFilter::default())
                .await
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            store
                .tool_definitions(&alice(), &ConnectionKey::new(Owner::Org, "other", "main"))
                .await
                .unwrap()
                .len(),
            1
        );
        store.close().await;
    }

    async fn connection_crud_and_upsert_keeps_description(db: &TestDb) {
        let store = db.open().await;
        let s = alice();
        let key = ConnectionKey::new(Owner::Org, "gh", "main");

        let mut rec = connection(Owner::Org, "gh", "main");
        rec.description = Some("work account".into());
        rec.identity_label = Some("alice@example.com".into());
        rec.expires_at = Some(77);
        rec.last_health = Some(json!({"status": "healthy", "checkedAt": 1}));
        let stored = store.upsert_connection(&s, &rec).await.unwrap();
        assert_eq!(stored, rec);
        assert_eq!(
            store.get_connection(&s, &key).await.unwrap(),
            Some(rec.clone())
        );

        // Re-save without description/label keeps them, keeps created_at, replaces the rest.
        let mut again = connection(Owner::Org, "gh", "main");
        again.provider = "keychain".into();
        again.item_ids = json!({"token": "new-item"});
        again.created_at = 5_000;
        again.updated_at = 5_000;
        let stored = store.upsert_connection(&s, &again).await.unwrap();
        assert_eq!(stored.description.as_deref(), Some("work account"));
        assert_eq!(stored.identity_label.as_deref(), Some("alice@example.com"));
        assert_eq!(stored.provider, "keychain");
        assert_eq!(stored.item_ids, json!({"token": "new-item"}));
        assert_eq!(stored.created_at, 2_000);
        assert_eq!(stored.updated_at, 5_000);
        // A new description wins.
        again.description = Some("renamed".into());
        let stored = store.upsert_connection(&s, &again).await.unwrap();
        assert_eq!(stored.description.as_deref(), Some("renamed"));

        // Same name on another integration is a different connection.
        store
            .upsert_connection(&s, &connection(Owner::Org, "linear", "main"))
            .await
            .unwrap();
        assert_eq!(
            store.list_connections(&s, None, None).await.unwrap().len(),
            2
        );
        assert_eq!(
            store
                .list_connections(&s, Some("gh"), None)
                .await
                .unwrap()
                .len(),
            1
        );

        // update_connection_meta: None = unchanged, Some(None) = clear.
        let updated = store
            .update_connection_meta(&s, &key, None, Some(None))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(updated.description.as_deref(), Some("renamed"));
        assert_eq!(updated.identity_label, None);
        let updated = store
            .update_connection_meta(&s, &key, Some(Some("d2".into())), None)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(updated.description.as_deref(), Some("d2"));
        assert_eq!(updated.identity_label, None);
        let updated = store
            .update_connection_meta(&s, &key, Some(None), Some(Some("id".into())))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(updated.description, None);
        assert_eq!(updated.identity_label.as_deref(), Some("id"));
        assert!(
            store
                .update_connection_meta(
                    &s,
                    &ConnectionKey::new(Owner::Org, "gh", "nope"),
                    None,
                    None
                )
                .await
                .unwrap()
                .is_none()
        );

        // delete_connection removes its tools and definitions too.
        store
            .replace_tools(&s, &key, &[tool("a", "")], &defs(&[("Q", json!({}))]))
            .await
            .unwrap();
        assert!(store.delete_connection(&s, &key).await.unwrap());
        assert!(!store.delete_connection(&s, &key).await.unwrap());
        assert!(store.get_connection(&s, &key).await.unwrap().is_none());
        assert!(
            store
                .list_tools(&s, &ToolFilter::default())
                .await
                .unwrap()
                .is_empty()
        );
        assert!(store.tool_definitions(&s, &key).await.unwrap().is_empty());
        store.close().await;
    }

    async fn user_and_org_visibility_across_subjects(db: &TestDb) {
        let store = seeded(db).await;
        let org_key = ConnectionKey::new(Owner::Org, "gh", "main");
        let mine = ConnectionKey::new(Owner::User, "gh", "mine");
        store
            .replace_tools(&alice(), &org_key, &[tool("shared", "")], &Map::new())
            .await
            .unwrap();
        store
            .replace_tools(&alice(), &mine, &[tool("private", "")], &Map::new())
            .await
            .unwrap();

        // Alice sees both; Bob and a subject-less scope see only the org row.
        let names = |v: Vec<ConnectionRecord>| v.into_iter().map(|c| c.name).collect::<Vec<_>>();
        assert_eq!(
            names(store.list_connections(&alice(), None, None).await.unwrap()),
            ["main", "mine"]
        );
        assert_eq!(
            names(store.list_connections(&bob(), None, None).await.unwrap()),
            ["main"]
        );
        assert_eq!(
            names(
                store
                    .list_connections(&no_subject(), None, None)
                    .await
                    .unwrap()
            ),
            ["main"]
        );
        assert_eq!(
            names(
                store
                    .list_connections(&alice(), None, Some(Owner::User))
                    .await
                    .unwrap()
            ),
            ["mine"]
        );
        assert!(store.get_connection(&bob(), &mine).await.unwrap().is_none());
        assert!(
            store
                .get_connection(&bob(), &org_key)
                .await
                .unwrap()
                .is_some()
        );
        let bob_tools = store
            .list_tools(&bob(), &ToolFilter::default())
            .await
            .unwrap();
        assert_eq!(bob_tools.len(), 1);
        assert_eq!(bob_tools[0].name, "shared");
        let private = ToolAddress::parse("tools.gh.user.mine.private").unwrap();
        assert!(store.get_tool(&bob(), &private).await.unwrap().is_none());
        assert!(store.get_tool(&alice(), &private).await.unwrap().is_some());

        // Bob cannot edit or delete Alice's connection; his own same-named one is separate.
        assert!(
            store
                .update_connection_meta(&bob(), &mine, Some(Some("x".into())), None)
                .await
                .unwrap()
                .is_none()
        );
        assert!(!store.delete_connection(&bob(), &mine).await.unwrap());
        store
            .upsert_connection(&bob(), &connection(Owner::User, "gh", "mine"))
            .await
            .unwrap();
        assert_eq!(
            store
                .list_connections(&bob(), None, None)
                .await
                .unwrap()
                .len(),
            2
        );
        assert!(store.delete_connection(&bob(), &mine).await.unwrap());
        assert!(
            store
                .get_connection(&alice(), &mine)
                .await
                .unwrap()
                .is_some()
        );

        // Writing a user row without a subject is refused.
        assert!(matches!(
            store
                .upsert_connection(&no_subject(), &connection(Owner::User, "gh", "x"))
                .await,
            Err(StoreError::NoSubject)
        ));
        assert!(matches!(
            store
                .replace_tools(&no_subject(), &mine, &[], &Map::new())
                .await,
            Err(StoreError::NoSubject)
        ));
        // Org rows are writable without a subject.
        store
            .upsert_connection(&no_subject(), &connection(Owner::Org, "gh", "ci"))
            .await
            .unwrap();
        assert!(
            store
                .get_connection(&bob(), &ConnectionKey::new(Owner::Org, "gh", "ci"))
                .await
                .unwrap()
                .is_some()
        );
        store.close().await;
    }

    async fn replace_tools_replaces_atomically(db: &TestDb) {
        let store = seeded(db).await;
        let s = alice();
        let key = ConnectionKey::new(Owner::Org, "gh", "main");

        store
            .replace_tools(
                &s,
                &key,
                &[tool("old_a", ""), tool("old_b", "")],
                &defs(&[("Old", json!({"type": "string"}))]),
            )
            .await
            .unwrap();
        let synced = store
            .get_connection(&s, &key)
            .await
            .unwrap()
            .unwrap()
            .tools_synced_at;
        assert!(synced.is_some());

        store
            .replace_tools(
                &s,
                &key,
                &[tool("new", "fresh")],
                &defs(&[
                    ("B", json!({"type": "integer"})),
                    ("A", json!({"type": "null"})),
                ]),
            )
            .await
            .unwrap();
        let names: Vec<_> = store
            .list_tools(&s, &ToolFilter::default())
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["new"]);
        let d = store.tool_definitions(&s, &key).await.unwrap();
        assert_eq!(
            d.keys().collect::<Vec<_>>(),
            ["B", "A"],
            "stored order kept"
        );
        assert_eq!(d["B"], json!({"type": "integer"}));

        // A failing replacement (duplicate tool names) leaves the previous catalog intact.
        let err = store
            .replace_tools(
                &s,
                &key,
                &[tool("dup", ""), tool("dup", "")],
                &defs(&[("X", json!({}))]),
            )
            .await;
        assert!(err.is_err());
        let names: Vec<_> = store
            .list_tools(&s, &ToolFilter::default())
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["new"]);
        assert_eq!(
            store
                .tool_definitions(&s, &key)
                .await
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["B", "A"]
        );

        // Unknown connection: NotFound, nothing written.
        let ghost = ConnectionKey::new(Owner::Org, "gh", "ghost");
        assert!(matches!(
            store
                .replace_tools(&s, &ghost, &[tool("x", "")], &Map::new())
                .await,
            Err(StoreError::NotFound)
        ));
        assert_eq!(
            store
                .list_tools(&s, &ToolFilter::default())
                .await
                .unwrap()
                .len(),
            1
        );

        // Empty replacement clears the catalog.
        store
            .replace_tools(&s, &key, &[], &Map::new())
            .await
            .unwrap();
        assert!(
            store
                .list_tools(&s, &ToolFilter::default())
                .await
                .unwrap()
                .is_empty()
        );
        store.close().await;
    }

    async fn list_tools_filters_and_omits_schemas(db: &TestDb) {
        let store = seeded(db).await;
        let s = alice();
        store
            .insert_integration(&s, &integration("linear"))
            .await
            .unwrap();
        store
            .upsert_connection(&s, &connection(Owner::Org, "linear", "main"))
            .await
            .unwrap();
        store
            .replace_tools(
                &s,
                &ConnectionKey::new(Owner::Org, "gh", "main"),
                &[
                    tool("list_issues", "List GitHub issues"),
                    tool("create_pr", "Open a pull request"),
                ],
                &Map::new(),
            )
            .await
            .unwrap();
        store
            .replace_tools(
                &s,
                &ConnectionKey::new(Owner::User, "gh", "mine"),
                &[tool("list_issues", "List GitHub issues")],
                &Map::new(),
            )
            .await
            .unwrap();
        store
            .replace_tools(
                &s,
                &ConnectionKey::new(Owner::Org, "linear", "main"),
                &[tool("query.issues", "Search ÜBER issues")],
                &Map::new(),
            )
            .await
            .unwrap();

        let list = |f: ToolFilter| {
            let store = &store;
            let s = s.clone();
            async move {
                store
                    .list_tools(&s, &f)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|t| t.address().to_string())
                    .collect::<Vec<_>>()
            }
        };

        assert_eq!(
            list(ToolFilter::default()).await,
            [
                "tools.gh.org.main.create_pr",
                "tools.gh.org.main.list_issues",
                "tools.gh.user.mine.list_issues",
                "tools.linear.org.main.query.issues",
            ]
        );
        assert_eq!(
            list(ToolFilter {
                integration: Some("linear".into()),
                ..Default::default()
            })
            .await,
            ["tools.linear.org.main.query.issues"]
        );
        assert_eq!(
            list(ToolFilter {
                owner: Some(Owner::User),
                ..Default::default()
            })
            .await,
            ["tools.gh.user.mine.list_issues"]
        );
        assert_eq!(
            list(ToolFilter {
                integration: Some("gh".into()),
                owner: Some(Owner::Org),
                connection: Some("main".into()),
                ..Default::default()
            })
            .await,
            [
                "tools.gh.org.main.create_pr",
                "tools.gh.org.main.list_issues"
            ]
        );
        // Query: case-insensitive substring over name + " " + description.
        assert_eq!(
            list(ToolFilter {
                query: Some("PULL".into()),
                ..Default::default()
            })
            .await,
            ["tools.gh.org.main.create_pr"]
        );
        assert_eq!(
            list(ToolFilter {
                query: Some("pull issues".into()),
                ..Default::default()
            })
            .await,
            Vec::<String>::new()
        );
        assert_eq!(
            list(ToolFilter {
                query: Some("create_pr open".into()),
                ..Default::default()
            })
            .await,
            ["tools.gh.org.main.create_pr"]
        );
        assert_eq!(
            list(ToolFilter {
                query: Some("über".into()),
                ..Default::default()
            })
            .await,
            ["tools.linear.org.main.query.issues"]
        );
        assert_eq!(
            list(ToolFilter {
                query: Some("issues".into()),
                connection: Some("main".into()),
                ..Default::default()
            })
            .await,
            [
                "tools.gh.org.main.list_issues",
                "tools.linear.org.main.query.issues"
            ]
        );

        // The summary carries the annotations but no schemas (the type has no schema fields).
        let summary = &store.list_tools(&s, &ToolFilter::default()).await.unwrap()[0];
        assert_eq!(
            summary.annotations,
            Some(json!({"requiresApproval": false}))
        );
        assert_eq!(summary.plugin_id, "mcp");
        store.close().await;
    }

    async fn get_tool_by_address_with_dotted_name(db: &TestDb) {
        let store = seeded(db).await;
        let s = alice();
        let key = ConnectionKey::new(Owner::Org, "gh", "main");
        let mut t = tool("query.hello", "Say hello");
        t.annotations = None;
        t.output_schema = None;
        store
            .replace_tools(&s, &key, &[t.clone(), tool("query", "")], &Map::new())
            .await
            .unwrap();

        let address = ToolAddress::parse("tools.gh.org.main.query.hello").unwrap();
        let got = store.get_tool(&s, &address).await.unwrap().unwrap();
        assert_eq!(
            got,
            ToolRecord {
                integration: "gh".into(),
                owner: Owner::Org,
                connection: "main".into(),
                ..t
            }
        );
        assert_eq!(got.address(), address);
        assert_eq!(
            got.input_schema,
            Some(json!({"type": "object", "properties": {"q": {"$ref": "#/$defs/Q"}}}))
        );
        for missing in [
            "tools.gh.org.main.query.bye",
            "tools.gh.user.main.query.hello",
            "tools.gh.org.other.query.hello",
            "tools.gl.org.main.query.hello",
        ] {
            let a = ToolAddress::parse(missing).unwrap();
            assert!(store.get_tool(&s, &a).await.unwrap().is_none(), "{missing}");
        }
        store.close().await;
    }

    async fn mark_stale_and_sync_failure(db: &TestDb) {
        let store = seeded(db).await;
        let s = alice();
        let key = ConnectionKey::new(Owner::Org, "gh", "main");
        store
            .replace_tools(&s, &key, &[tool("a", "")], &Map::new())
            .await
            .unwrap();
        let get = || async { store.get_connection(&s, &key).await.unwrap().unwrap() };
        assert!(get().await.tools_synced_at.is_some());

        store.mark_stale(&s, &key).await.unwrap();
        assert_eq!(get().await.tools_synced_at, None);

        let before = executor_core::now_ms();
        store
            .mark_sync_failed(&s, &key, "connection refused")
            .await
            .unwrap();
        let conn = get().await;
        let health = conn.last_health.unwrap();
        assert_eq!(health["status"], "degraded");
        assert_eq!(health["detail"], "Tool sync failing: connection refused");
        assert!(health["checkedAt"].as_i64().unwrap() >= before);
        assert!(conn.tools_synced_at.unwrap() >= before);
        // The previous catalog is kept.
        assert_eq!(
            store
                .list_tools(&s, &ToolFilter::default())
                .await
                .unwrap()
                .len(),
            1
        );

        // A successful sync clears the sync-failure health...
        store
            .replace_tools(&s, &key, &[tool("b", "")], &Map::new())
            .await
            .unwrap();
        assert_eq!(get().await.last_health, None);
        // ...but not another health verdict.
        store
            .upsert_connection(&s, &{
                let mut c = connection(Owner::Org, "gh", "main");
                c.last_health = Some(json!({"status": "expired", "checkedAt": 1, "httpStatus": 401}));
                c
            })
            .await
            .unwrap();
        store
            .replace_tools(&s, &key, &[tool("b", "")], &Map::new())
            .await
            .unwrap();
        assert_eq!(get().await.last_health.unwrap()["status"], "expired");

        // Marking a missing connection is a no-op.
        let ghost = ConnectionKey::new(Owner::Org, "gh", "ghost");
        store.mark_stale(&s, &ghost).await.unwrap();
        store.mark_sync_failed(&s, &ghost, "x").await.unwrap();
        store.close().await;
    }

    async fn data_survives_close_and_reopen(db: &TestDb) {
        let store = seeded(db).await;
        let key = ConnectionKey::new(Owner::User, "gh", "mine");
        store
            .replace_tools(
                &alice(),
                &key,
                &[tool("a", "desc")],
                &defs(&[("Q", json!({"type": "string"}))]),
            )
            .await
            .unwrap();
        store
            .put_secret(&alice(), Owner::User, "item-1", "s3cret")
            .await
            .unwrap();
        store.close().await;
        if db.backend() == Backend::Sqlite {
            assert!(db.path().join("data.db").exists());
        }

        let store = db.open().await;
        assert!(
            store
                .get_integration(&alice(), "gh")
                .await
                .unwrap()
                .is_some()
        );
        let conn = store.get_connection(&alice(), &key).await.unwrap().unwrap();
        assert!(conn.tools_synced_at.is_some(), "stamped by replace_tools");
        assert_eq!(
            conn,
            ConnectionRecord {
                tools_synced_at: conn.tools_synced_at,
                ..connection(Owner::User, "gh", "mine")
            }
        );
        let tool = store
            .get_tool(
                &alice(),
                &ToolAddress::parse("tools.gh.user.mine.a").unwrap(),
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(tool.description, "desc");
        assert_eq!(
            store.tool_definitions(&alice(), &key).await.unwrap()["Q"],
            json!({"type": "string"})
        );
        assert_eq!(
            store
                .get_secret(&alice(), Owner::User, "item-1")
                .await
                .unwrap()
                .as_deref(),
            Some("s3cret")
        );
        store.close().await;
    }

    async fn secrets_round_trip(db: &TestDb) {
        let store = db.open().await;
        let s = alice();
        assert_eq!(store.get_secret(&s, Owner::Org, "k").await.unwrap(), None);
        store.put_secret(&s, Owner::Org, "k", "v1").await.unwrap();
        store.put_secret(&s, Owner::Org, "k", "v2").await.unwrap();
        // The organisation's items are the tenant's: every subject of it, no other tenant.
        assert_eq!(
            store.get_secret(&bob(), Owner::Org, "k").await.unwrap().as_deref(),
            Some("v2")
        );
        assert_eq!(
            store.get_secret(&Scope::local("t2"), Owner::Org, "k").await.unwrap(),
            None
        );
        assert_eq!(store.get_secret(&s, Owner::User, "k").await.unwrap(), None);
        store.put_secret(&s, Owner::Org, "a", "v0").await.unwrap();
        assert_eq!(
            store.list_secret_ids(&bob(), Owner::Org).await.unwrap(),
            vec!["a", "k"]
        );
        assert!(
            store
                .list_secret_ids(&Scope::local("t2"), Owner::Org)
                .await
                .unwrap()
                .is_empty()
        );
        store.delete_secret(&s, Owner::Org, "a").await.unwrap();
        store.delete_secret(&s, Owner::Org, "k").await.unwrap();
        assert_eq!(store.get_secret(&s, Owner::Org, "k").await.unwrap(), None);
        store.delete_secret(&s, Owner::Org, "k").await.unwrap();
        store.close().await;
    }

    /// Issue #39: two members' personal items of one id were one row, so a member could read,
    /// overwrite and delete another's.
    async fn personal_secrets_are_their_members_alone(db: &TestDb) {
        let store = db.open().await;
        let item = "connection:user:gh:main:token";
        store.put_secret(&alice(), Owner::User, item, "alice-token").await.unwrap();
        assert_eq!(store.get_secret(&bob(), Owner::User, item).await.unwrap(), None);
        assert!(store.list_secret_ids(&bob(), Owner::User).await.unwrap().is_empty());
        assert!(store.list_secret_ids(&bob(), Owner::Org).await.unwrap().is_empty());
        // Bob's item of the same id is his own; writing and deleting it leaves Alice's.
        store.put_secret(&bob(), Owner::User, item, "bob-token").await.unwrap();
        assert_eq!(
            store.get_secret(&bob(), Owner::User, item).await.unwrap().as_deref(),
            Some("bob-token")
        );
        store.delete_secret(&bob(), Owner::User, item).await.unwrap();
        assert_eq!(store.get_secret(&bob(), Owner::User, item).await.unwrap(), None);
        assert_eq!(
            store.get_secret(&alice(), Owner::User, item).await.unwrap().as_deref(),
            Some("alice-token")
        );
        assert_eq!(
            store.list_secret_ids(&alice(), Owner::User).await.unwrap(),
            vec![item]
        );
        assert_eq!(store.get_secret(&alice(), Owner::Org, item).await.unwrap(), None);
        // A caller without a subject has no personal items.
        assert!(matches!(
            store.put_secret(&no_subject(), Owner::User, item, "x").await,
            Err(StoreError::NoSubject)
        ));
        assert_eq!(store.get_secret(&no_subject(), Owner::User, item).await.unwrap(), None);
        assert!(store.list_secret_ids(&no_subject(), Owner::User).await.unwrap().is_empty());
        store.delete_secret(&no_subject(), Owner::User, item).await.unwrap();
        store.close().await;
        // Still apart after a reopen.
        let store = db.open().await;
        assert_eq!(
            store.get_secret(&alice(), Owner::User, item).await.unwrap().as_deref(),
            Some("alice-token")
        );
        store.close().await;
    }

    /// The rows of a build before schema 12 go to the owner whose connection or OAuth app wrote
    /// them; what cannot be told (two members' connections of one name, no writer left) stays
    /// unused in `secret_unowned` with the reason.
    async fn secrets_of_older_builds_go_to_their_owners(db: &TestDb) {
        db.migrate_raw_to(11).await;
        db.execute_raw(
            "INSERT INTO connection (tenant, owner, subject, integration, name, template, provider, item_ids, created_at, updated_at) VALUES \
               ('t1', 'user', 'alice', 'gh', 'main', 'apikey', 'vault', '{\"token\":\"connection:user:gh:main:token\"}', 1, 1), \
               ('t1', 'user', 'bob',   'gh', 'main', 'apikey', 'vault', '{\"token\":\"connection:user:gh:main:token\"}', 1, 1), \
               ('t1', 'user', 'alice', 'gh', 'solo', 'apikey', 'vault', '{\"token\":\"connection:user:gh:solo:token\"}', 1, 1), \
               ('t1', 'user', 'bob',   'gh', 'stolen', 'apikey', 'vault', '{\"token\":\"connection:user:gh:solo:token\"}', 1, 1), \
               ('t1', 'org',  '',      'gh', 'main', 'apikey', 'vault', '{\"token\":\"connection:org:gh:main:token\"}', 1, 1); \
             INSERT INTO secret (tenant, item_id, value, created_at, updated_at) VALUES \
               ('t1', 'connection:user:gh:main:token', 'shared-token', 1, 2), \
               ('t1', 'connection:user:gh:solo:token', 'alice-solo', 1, 2), \
               ('t1', 'connection:org:gh:main:token', 'org-token', 1, 2), \
               ('t1', 'connection:user:gh:gone:token', 'orphan-token', 1, 2), \
               ('t1', 'mcp:gh:header:X-Key', 'static-header', 1, 2);",
        )
        .await;
        let store = db.open().await;
        let get = |scope: Scope, owner: Owner, item: &'static str| {
            let store = &store;
            async move { store.get_secret(&scope, owner, item).await.unwrap() }
        };
        assert_eq!(get(alice(), Owner::User, "connection:user:gh:solo:token").await.as_deref(), Some("alice-solo"));
        assert_eq!(get(bob(), Owner::User, "connection:user:gh:solo:token").await, None, "a reference is not a claim");
        assert_eq!(get(bob(), Owner::Org, "connection:org:gh:main:token").await.as_deref(), Some("org-token"));
        assert_eq!(get(bob(), Owner::Org, "mcp:gh:header:X-Key").await.as_deref(), Some("static-header"));
        for scope in [alice(), bob()] {
            assert_eq!(get(scope.clone(), Owner::User, "connection:user:gh:main:token").await, None);
            assert_eq!(get(scope, Owner::Org, "connection:user:gh:main:token").await, None);
        }
        assert_eq!(get(alice(), Owner::User, "connection:user:gh:gone:token").await, None);
        store.close().await;
        // What could not be attributed is recorded with its reason, sealed, and kept.
        assert_eq!(
            db.count_raw(
                "SELECT COUNT(*) FROM secret_unowned WHERE substr(value, 1, 3) = 'v1:' AND ( \
                   (item_id = 'connection:user:gh:main:token' AND unattributed LIKE '2 members%') \
                   OR (item_id = 'connection:user:gh:gone:token' AND unattributed LIKE 'no personal%'))"
            )
            .await,
            2
        );
        assert_eq!(db.count_raw("SELECT COUNT(*) FROM secret_unowned").await, 2);
        assert_eq!(db.count_raw("SELECT COUNT(*) FROM secret").await, 3);
        // A reopen moves nothing more and loses nothing.
        let store = db.open().await;
        assert_eq!(
            store.get_secret(&alice(), Owner::User, "connection:user:gh:solo:token").await.unwrap().as_deref(),
            Some("alice-solo")
        );
        store.close().await;
        assert_eq!(db.count_raw("SELECT COUNT(*) FROM secret_unowned").await, 2);
    }

    async fn blobs_are_content_addressed_per_tenant(db: &TestDb) {
        let store = db.open().await;
        let a = Scope::local("a");
        let b = Scope::local("b");
        let hash = store.put_blob(&a, b"openapi: 3.1.0").await.unwrap();
        // sha256("openapi: 3.1.0"), so the same text is one row whoever stores it.
        assert_eq!(hash.len(), 64);
        assert_eq!(store.put_blob(&a, b"openapi: 3.1.0").await.unwrap(), hash);
        assert_eq!(
            store.get_blob(&a, &hash).await.unwrap().as_deref(),
            Some(&b"openapi: 3.1.0"[..])
        );
        assert_eq!(store.get_blob(&b, &hash).await.unwrap(), None);
        assert!(!store.delete_blob(&b, &hash).await.unwrap());
        assert!(store.delete_blob(&a, &hash).await.unwrap());
        assert_eq!(store.get_blob(&a, &hash).await.unwrap(), None);
    }

    /// Issue #17 (kill during a create): a connection inserted as pending stays visible while its
    /// create runs; storing its tools (or its sync failure) settles it, and what is still pending
    /// at the next start is taken with its tools. A taken name is refused and nothing changes.
    async fn pending_connections_settle_or_are_taken(db: &TestDb) {
        let store = db.open().await;
        let scope = alice();
        store
            .insert_integration(&scope, &integration("gh"))
            .await
            .unwrap();
        let settled = connection(Owner::Org, "gh", "settled");
        let failed = connection(Owner::Org, "gh", "failed");
        let interrupted = connection(Owner::User, "gh", "interrupted");
        for rec in [&settled, &failed, &interrupted] {
            store.insert_connection(&scope, rec).await.unwrap();
        }
        let mut clash = connection(Owner::Org, "gh", "settled");
        clash.provider = "other".to_owned();
        assert!(matches!(
            store.insert_connection(&scope, &clash).await,
            Err(StoreError::AlreadyExists)
        ));
        assert_eq!(
            store
                .get_connection(&scope, &settled.key())
                .await
                .unwrap()
                .unwrap()
                .provider,
            settled.provider
        );
        store
            .replace_tools(&scope, &settled.key(), &[tool("a", "A")], &Map::new())
            .await
            .unwrap();
        store
            .mark_sync_failed(&scope, &failed.key(), "down")
            .await
            .unwrap();
        // A tool stored for the interrupted one is taken with it.
        store
            .replace_tools(&scope, &interrupted.key(), &[tool("b", "B")], &Map::new())
            .await
            .unwrap();
        store.mark_stale(&scope, &interrupted.key()).await.unwrap();
        db.execute_raw("UPDATE connection SET pending_create = 1 WHERE name = 'interrupted'")
            .await;
        let taken = store.take_pending_connections(&scope, i64::MAX).await.unwrap();
        assert_eq!(
            taken.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["interrupted"]
        );
        let names: Vec<String> = store
            .list_connections(&scope, Some("gh"), None)
            .await
            .unwrap()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["failed", "settled"]);
        let tools = store
            .list_tools(&scope, &ToolFilter::default())
            .await
            .unwrap();
        assert_eq!(tools.len(), 1, "{tools:?}");
        assert!(
            store
                .take_pending_connections(&scope, i64::MAX)
                .await
                .unwrap()
                .is_empty()
        );
        store.close().await;
    }

    /// Agent MCP sessions: kept once (a second save of the id changes nothing), read back,
    /// deleted, and purged by age.
    async fn mcp_sessions_round_trip_and_purge(db: &TestDb) {
        use executor_store::McpSessionRecord;
        let store = db.open().await;
        let rec = |id: &str, created_at: i64| McpSessionRecord {
            id: id.into(),
            token_hash: "ab".repeat(32),
            resource: "/toolkits/ops".into(),
            initialize: json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
            created_at,
        };
        store.save_mcp_session(&rec("s1", 100)).await.unwrap();
        let mut other = rec("s1", 100);
        other.resource = String::new();
        store.save_mcp_session(&other).await.unwrap();
        assert_eq!(store.get_mcp_session("s1").await.unwrap(), Some(rec("s1", 100)));
        store.save_mcp_session(&rec("s2", 200)).await.unwrap();
        assert_eq!(store.delete_mcp_sessions_before(150).await.unwrap(), 1);
        assert_eq!(store.get_mcp_session("s1").await.unwrap(), None);
        store.delete_mcp_session("s2").await.unwrap();
        assert_eq!(store.get_mcp_session("s2").await.unwrap(), None);
        store.close().await;
    }
}
