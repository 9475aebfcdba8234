//! The execution journal on both backends: save/upsert rules, listing, claims, expiry and purge.

use executor_store::{
    ExecutionCallRecord, ExecutionFilter, ExecutionRecord, ExecutionStatus, ExecutionStore, Scope,
    SqlStore,
};
use serde_json::json;

mod support;

fn record(id: &str, status: ExecutionStatus, started_at: i64) -> ExecutionRecord {
    ExecutionRecord {
        id: id.to_owned(),
        code: "return 1".to_owned(),
        auto_approve: false,
        status,
        seed: u64::MAX - 7,
        started_at,
        updated_at: started_at,
        finished_at: None,
        expires_at: None,
        duration_ms: None,
        tool_calls: 0,
        clock: json!([1.0, 2.5]),
        pending: None,
        outcome: None,
    }
}

fn call(seq: i64, outcome: Option<serde_json::Value>) -> ExecutionCallRecord {
    ExecutionCallRecord {
        seq,
        path: "a.org.main.t".to_owned(),
        args: json!({"q": seq}),
        args_hash: format!("h{seq}"),
        outcome,
        pause: None,
        started_at: 10,
        duration_ms: None,
    }
}

/// Code is sealed at rest (agents paste credentials into it) and read back in clear, one
/// execution at a time and through the history writer's batches; a restart reads it again.
#[tokio::test]
async fn code_is_sealed_at_rest() {
    let dir = tempfile::tempdir().unwrap();
    let scope = Scope::local("t");
    let secret = "pasted_credential_in_code";
    let mut one = record("one", ExecutionStatus::Paused, 1);
    one.code = format!("return await tools.x.org.main.create({{ value: \"{secret}\" }})");
    let mut two = record("two", ExecutionStatus::Completed, 2);
    two.code = format!("// {secret}\nreturn 2");
    {
        let store = SqlStore::open(dir.path()).await.unwrap();
        store.save_execution(&scope, &one, &[]).await.unwrap();
        store
            .save_executions(&scope, &[(two.clone(), Vec::new())])
            .await
            .unwrap();
        for rec in [&one, &two] {
            let read = store.get_execution(&scope, &rec.id).await.unwrap().unwrap();
            assert_eq!(read.code, rec.code);
        }
        store.close().await;
    }
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "code in clear on disk"
        );
    }
    let store = SqlStore::open(dir.path()).await.unwrap();
    let read = store.get_execution(&scope, "one").await.unwrap().unwrap();
    assert_eq!(read.code, one.code);
    store.close().await;
}

/// Issue #17: journaled arguments and outcomes were stored in clear (tokens pasted into
/// arguments, the data tools answered). They are sealed like the code; rows of older builds
/// (plain JSON) still read.
#[tokio::test]
async fn journal_arguments_outcomes_and_pauses_are_sealed_and_old_rows_read() {
    let dir = tempfile::tempdir().unwrap();
    let scope = Scope::local("t");
    let rec = record("sealed", ExecutionStatus::Paused, 1);
    let mut first = call(0, Some(json!({"resolve": "tool-data-m4rker"})));
    first.args = json!({"token": "arg-m4rker"});
    let mut second = call(1, None);
    second.pause = Some(json!({"answers": [{"content": {"pin": "pause-m4rker"}}]}));
    {
        let store = SqlStore::open(dir.path()).await.unwrap();
        store
            .save_execution(&scope, &rec, &[first.clone(), second.clone()])
            .await
            .unwrap();
        let mut third = call(2, Some(json!({"resolve": "batch-m4rker"})));
        third.args = json!({"q": "batch-arg-m4rker"});
        store.save_execution_call("sealed", &third).await.unwrap();
        let calls = store.execution_calls("sealed").await.unwrap();
        assert_eq!(calls, [first.clone(), second.clone(), third]);
        store.close().await;
    }
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("m4rker"),
            "journal data in clear on disk"
        );
    }
    // A row an older build wrote in clear.
    {
        let options =
            sqlx::sqlite::SqliteConnectOptions::new().filename(dir.path().join("data.db"));
        let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
        sqlx::query(
            "INSERT INTO execution_call (execution_id, seq, path, args, args_hash, outcome, pause, started_at) \
             VALUES ('sealed', 3, 'a.org.main.t', '{\"q\":3}', 'h3', '{\"resolve\":3}', NULL, 10)",
        )
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;
    }
    let store = SqlStore::open(dir.path()).await.unwrap();
    let calls = store.execution_calls("sealed").await.unwrap();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0], first);
    assert_eq!(calls[3].args, json!({"q": 3}));
    assert_eq!(calls[3].outcome, Some(json!({"resolve": 3})));
    store.close().await;
}

both_backends! {
    async fn save_read_and_upsert_rules(db: &TestDb) {
        let store = db.open().await;
        let scope = Scope::local("t");
        let mut rec = record("exec_1", ExecutionStatus::Paused, 100);
        rec.pending = Some(json!({"seq": 1, "message": "ok?"}));
        rec.expires_at = Some(1_000);
        rec.tool_calls = 2;
        store
            .save_execution(
                &scope,
                &rec,
                &[call(0, Some(json!({"resolve": 1}))), call(1, None)],
            )
            .await
            .unwrap();
        assert_eq!(
            store.get_execution(&scope, "exec_1").await.unwrap(),
            Some(rec.clone())
        );
        // Another tenant or subject sees nothing.
        assert_eq!(
            store
                .get_execution(&Scope::local("u"), "exec_1")
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            store
                .get_execution(&Scope::new("t", Some("bob".into())), "exec_1")
                .await
                .unwrap(),
            None
        );

        // A stored outcome is never replaced by NULL; a new one lands.
        store
            .save_execution_call("exec_1", &call(0, None))
            .await
            .unwrap();
        store
            .save_execution_call("exec_1", &call(1, Some(json!({"reject": "no"}))))
            .await
            .unwrap();
        let calls = store.execution_calls("exec_1").await.unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].outcome, Some(json!({"resolve": 1})));
        assert_eq!(calls[1].outcome, Some(json!({"reject": "no"})));

        // Settled rows do not change again.
        let mut done = rec.clone();
        done.status = ExecutionStatus::Completed;
        done.pending = None;
        done.finished_at = Some(200);
        done.duration_ms = Some(100);
        done.outcome = Some(json!({"text": "1", "structured": {}, "isError": false}));
        store.save_execution(&scope, &done, &[]).await.unwrap();
        store.save_execution(&scope, &rec, &[]).await.unwrap();
        let read = store
            .get_execution(&scope, "exec_1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(read.status, ExecutionStatus::Completed);
        assert_eq!(read.seed, u64::MAX - 7);
    }

    async fn claims_expiry_recovery_listing_and_purge(db: &TestDb) {
        let store = db.open().await;
        let scope = Scope::local("t");
        let mut paused = record("exec_p", ExecutionStatus::Paused, 100);
        paused.expires_at = Some(1_000);
        store.save_execution(&scope, &paused, &[]).await.unwrap();
        let mut late = record("exec_late", ExecutionStatus::Paused, 200);
        late.expires_at = Some(500);
        store.save_execution(&scope, &late, &[]).await.unwrap();
        let mut done = record("exec_done", ExecutionStatus::Failed, 300);
        done.finished_at = Some(350);
        done.duration_ms = Some(50);
        done.outcome = Some(json!({"text": "Error: x", "structured": {}, "isError": true}));
        store
            .save_execution(&scope, &done, &[call(0, None)])
            .await
            .unwrap();

        // Past its expiry a pause cannot be claimed; one claim wins.
        assert!(
            !store
                .claim_paused_execution(&scope, "exec_late", 600)
                .await
                .unwrap()
        );
        assert!(
            store
                .claim_paused_execution(&scope, "exec_p", 600)
                .await
                .unwrap()
        );
        assert!(
            !store
                .claim_paused_execution(&scope, "exec_p", 600)
                .await
                .unwrap()
        );

        let expired = store
            .expire_paused_executions(600, &json!({"text": "expired", "isError": true}))
            .await
            .unwrap();
        assert_eq!(expired, vec!["exec_late".to_owned()]);
        let failed = store
            .fail_running_executions(700, 700, &json!({"text": "interrupted", "isError": true}))
            .await
            .unwrap();
        assert_eq!(failed, 1);

        let list = store
            .list_executions(&scope, &Default::default(), 10, 0)
            .await
            .unwrap();
        let ids: Vec<_> = list
            .iter()
            .map(|e| (e.id.as_str(), e.status, e.is_error))
            .collect();
        assert_eq!(
            ids,
            vec![
                ("exec_done", ExecutionStatus::Failed, Some(true)),
                ("exec_late", ExecutionStatus::Expired, Some(true)),
                ("exec_p", ExecutionStatus::Failed, Some(true)),
            ]
        );
        assert_eq!(
            store
                .list_executions(&scope, &Default::default(), 1, 1)
                .await
                .unwrap()[0]
                .id,
            "exec_late"
        );

        assert_eq!(store.delete_settled_executions(650).await.unwrap(), 2);
        assert!(store.execution_calls("exec_done").await.unwrap().is_empty());
        assert_eq!(
            store
                .list_executions(&scope, &Default::default(), 10, 0)
                .await
                .unwrap()
                .len(),
            1
        );
    }

    async fn batches_are_written_in_chunks(db: &TestDb) {
        let store = db.open().await;
        let scope = Scope::local("t");
        let batch: Vec<_> = (0..87)
            .map(|i| {
                let mut rec = record(&format!("exec_{i:03}"), ExecutionStatus::Completed, i);
                rec.finished_at = Some(i + 1);
                rec.outcome = Some(json!({"text": "1", "structured": {}, "isError": false}));
                let calls = if i % 10 == 0 {
                    vec![call(0, Some(json!({"resolve": i})))]
                } else {
                    vec![]
                };
                rec.tool_calls = calls.len() as i64;
                (rec, calls)
            })
            .collect();
        store.save_executions(&scope, &batch).await.unwrap();
        let list = store
            .list_executions(&scope, &Default::default(), 500, 0)
            .await
            .unwrap();
        assert_eq!(list.len(), 87);
        assert_eq!(list[0].id, "exec_086");
        assert_eq!(list[86].id, "exec_000");
        assert_eq!(list[86].tool_calls, 1);
        assert_eq!(
            store.execution_calls("exec_080").await.unwrap()[0].outcome,
            Some(json!({"resolve": 80}))
        );
        assert_eq!(
            store
                .get_execution(&scope, "exec_042")
                .await
                .unwrap()
                .unwrap(),
            batch[42].0
        );
    }

    async fn the_history_filters_by_status_and_by_integration_called(db: &TestDb) {
        let store = db.open().await;
        let scope = Scope::local("t");
        let with_path = |seq: i64, path: &str| ExecutionCallRecord {
            path: path.to_owned(),
            ..call(seq, Some(json!({"resolve": 1})))
        };
        let rows = [
            (
                "exec_a",
                ExecutionStatus::Completed,
                vec![with_path(0, "git_hub.org.main.list")],
            ),
            (
                "exec_b",
                ExecutionStatus::Paused,
                vec![with_path(0, "gitxhub.org.main.list")],
            ),
            (
                "exec_c",
                ExecutionStatus::Completed,
                vec![with_path(0, "git_hub")],
            ),
            ("exec_d", ExecutionStatus::Failed, vec![]),
        ];
        for (i, (id, status, calls)) in rows.into_iter().enumerate() {
            let mut rec = record(id, status, i as i64);
            rec.tool_calls = calls.len() as i64;
            store.save_execution(&scope, &rec, &calls).await.unwrap();
        }
        let ids = |filter: ExecutionFilter| {
            let store = &store;
            let scope = &scope;
            async move {
                store
                    .list_executions(scope, &filter, 10, 0)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|e| e.id)
                    .collect::<Vec<_>>()
            }
        };
        let by_integration = |slug: &str| ExecutionFilter {
            integration: Some(slug.to_owned()),
            ..Default::default()
        };
        // `_` is not a wildcard, and a prefix of a slug is not the slug.
        assert_eq!(ids(by_integration("git_hub")).await, ["exec_c", "exec_a"]);
        assert_eq!(ids(by_integration("git")).await, Vec::<String>::new());
        let completed = ExecutionFilter {
            status: Some(ExecutionStatus::Completed),
            ..Default::default()
        };
        assert_eq!(ids(completed.clone()).await, ["exec_c", "exec_a"]);
        assert_eq!(
            ids(ExecutionFilter {
                integration: Some("gitxhub".into()),
                ..completed
            })
            .await,
            Vec::<String>::new()
        );
        assert_eq!(ids(ExecutionFilter::default()).await.len(), 4);
        // Another caller's rows stay out whatever the filter.
        let other = store
            .list_executions(&Scope::local("u"), &by_integration("git_hub"), 10, 0)
            .await
            .unwrap();
        assert!(other.is_empty());
    }
}
