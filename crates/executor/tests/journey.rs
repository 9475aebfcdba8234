//! The seed journey through the real HTTP API against a real session-stateful rmcp server:
//! state set by one tool call is visible to the next call, because both ride one downstream
//! `Mcp-Session-Id`. Variants: concurrent calls, a session the server forgot, and closing.

mod support;

use std::time::Duration;

use executor_mcp::testing::serve_stateful;
use serde_json::{Value, json};
use support::Harness;

const SEED_CODE: &str = r#"
const selected = await tools.stateful.org.main.select_workspace({});
const read = await tools.stateful.org.main.get_workspace({});
return JSON.stringify({ selected, read });
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_journey_rides_one_downstream_session() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;

    fixture.clear_requests();
    let executed = h.execute(SEED_CODE).await;
    assert_eq!(executed["status"], "completed", "{executed}");
    assert_eq!(executed["isError"], false, "{executed}");
    let text = executed["text"].as_str().unwrap();
    assert!(text.contains("selected:ws-e2e"), "{text}");
    assert!(
        text.contains("workspace:ws-e2e"),
        "the second call must see the first call's state: {text}"
    );
    assert_eq!(
        fixture.ledger.session_ids().len(),
        1,
        "{:#?}",
        fixture.requests()
    );
    assert_eq!(fixture.ledger.initialize_count(), 1);

    // A second execution leases the pooled session: the state is still there, no new dial.
    fixture.clear_requests();
    let again = h
        .execute("return (await tools.stateful.org.main.get_workspace({})).data.content[0].text")
        .await;
    assert_eq!(again["text"], "workspace:ws-e2e", "{again}");
    assert_eq!(
        fixture.ledger.initialize_count(),
        0,
        "{:#?}",
        fixture.requests()
    );

    // Removing the connection and the integration closes the session with DELETE.
    let (status, _) = h
        .call(
            reqwest::Method::DELETE,
            "/api/connections/org/stateful/main",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = h
        .call(reqwest::Method::DELETE, "/api/mcp/servers/stateful", None)
        .await;
    assert_eq!((status, body), (200, json!({"removed": true})));
    assert_eq!(h.engine.live_mcp_sessions(), 0);
    assert_eq!(
        fixture.live_sessions().await,
        0,
        "{:#?}",
        fixture.requests()
    );
    assert!(!fixture.ledger.deleted_session_ids().is_empty());
    h.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_in_one_execution_share_the_session() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;
    fixture.clear_requests();
    let executed = h
        .execute(
            r#"
            await tools.stateful.org.main.select_workspace({});
            const reads = await Promise.all([
              tools.stateful.org.main.get_workspace({}),
              tools.stateful.org.main.slow({ ms: 50 }),
              tools.stateful.org.main.get_workspace({}),
              tools.stateful.org.main.slow({ ms: 50 }),
              tools.stateful.org.main.get_workspace({}),
            ]);
            return reads.map(r => r.ok ? r.data.content[0].text : r.error.code);
            "#,
        )
        .await;
    assert_eq!(executed["isError"], false, "{executed}");
    let results = executed["structured"]["result"].as_array().unwrap();
    assert_eq!(results.len(), 5);
    for i in [0, 2, 4] {
        assert_eq!(results[i], "workspace:ws-e2e", "{executed}");
    }
    assert_eq!(
        fixture.ledger.session_ids().len(),
        1,
        "{:#?}",
        fixture.requests()
    );
    assert_eq!(fixture.ledger.initialize_count(), 1);

    // Concurrent executions each lease a session; afterwards at most one stays open upstream.
    let runs =
        (0..6).map(|_| h.execute("return (await tools.stateful.org.main.slow({ ms: 30 })).ok"));
    for run in futures::future::join_all(runs).await {
        assert_eq!(run["text"], "true", "{run}");
    }
    assert_eq!(h.engine.live_mcp_sessions(), 1);
    assert_eq!(fixture.live_sessions().await, 1);
    h.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forgotten_session_is_redialled_once() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;
    let first = h.execute(SEED_CODE).await;
    assert_eq!(first["isError"], false, "{first}");

    fixture.forget_sessions().await;
    fixture.clear_requests();
    let second = h
        .execute("return (await tools.stateful.org.main.get_workspace({})).data.content[0].text")
        .await;
    assert_eq!(second["isError"], false, "{second}");
    // The server forgot the state with the session; what matters is that the call went through.
    assert_eq!(second["text"], "no workspace selected", "{second}");
    assert!(
        fixture.requests().iter().any(|r| r.status == 404),
        "{:#?}",
        fixture.requests()
    );
    assert_eq!(fixture.ledger.initialize_count(), 1, "exactly one redial");
    h.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_every_downstream_session() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;
    for _ in 0..3 {
        let run = h.execute(SEED_CODE).await;
        assert_eq!(run["isError"], false, "{run}");
    }
    assert_eq!(
        fixture.live_sessions().await,
        1,
        "one pooled session per identity"
    );
    h.shutdown.cancel();
    h.engine.shutdown().await;
    assert_eq!(h.engine.live_mcp_sessions(), 0);
    assert_eq!(
        fixture.live_sessions().await,
        0,
        "{:#?}",
        fixture.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destructive_tool_pauses_until_approved() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;
    let code = r#"
        await tools.stateful.org.main.select_workspace({});
        const r = await tools.stateful.org.main.delete_everything({ really: true });
        const after = await tools.stateful.org.main.get_workspace({});
        return [r.data.content[0].text, after.data.content[0].text];
    "#;

    let paused = h.execute_gated(code).await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let id = paused["structured"]["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("exec_"), "{id}");
    assert_eq!(paused["structured"]["status"], "waiting_for_interaction");
    assert_eq!(
        paused["structured"]["interaction"]["address"],
        "tools.stateful.org.main.delete_everything"
    );
    let text = paused["text"].as_str().unwrap();
    assert!(
        text.starts_with("Execution paused: Delete everything"),
        "{text}"
    );
    assert!(
        text.contains("\"really\": true"),
        "the approval shows the arguments: {text}"
    );

    let (status, view) = h
        .call(reqwest::Method::GET, &format!("/api/executions/{id}"), None)
        .await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["structured"]["executionId"], id.as_str());

    let (status, done) = h
        .post(
            &format!("/api/executions/{id}/resume"),
            json!({"action": "accept"}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["structured"]["result"],
        json!(["deleted", "workspace:ws-e2e"]),
        "{done}"
    );
    // The approval wait did not cost the execution its downstream session.
    assert_eq!(
        fixture.ledger.call_session_ids().len(),
        1,
        "{:#?}",
        fixture.requests()
    );

    // A repeated resume replays the recorded outcome; the pause itself is gone.
    let (status, again) = h
        .post(
            &format!("/api/executions/{id}/resume"),
            json!({"action": "accept"}),
        )
        .await;
    assert_eq!((status, &again), (200, &done));
    let (status, gone) = h
        .call(reqwest::Method::GET, &format!("/api/executions/{id}"), None)
        .await;
    assert_eq!(status, 404, "{gone}");
    assert_eq!(gone["_tag"], "ExecutionNotFoundError");

    // Declining makes the call throw inside the code, where it can be caught.
    let paused = h
        .execute_gated("try { await tools.stateful.org.main.delete_everything({}); return 'ran'; } catch (e) { return String(e.message); }")
        .await;
    let id = paused["structured"]["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, declined) = h
        .post(
            &format!("/api/executions/{id}/resume"),
            json!({"action": "decline"}),
        )
        .await;
    assert_eq!(declined["status"], "completed", "{declined}");
    let message = declined["structured"]["result"].as_str().unwrap();
    assert!(
        message.contains("requires approval but the request was declined"),
        "{message}"
    );
    h.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spinning_script_does_not_stall_the_server() {
    let h = Harness::start_with(Duration::from_secs(2)).await;
    let spinning = {
        let http = h.http.clone();
        let url = format!("{}/api/executions", h.base);
        tokio::spawn(async move {
            let r = http
                .post(url)
                .json(&json!({"code": "while (true) {}"}))
                .send()
                .await
                .unwrap();
            r.json::<Value>().await.unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let t = std::time::Instant::now();
        let (status, _) = h.call(reqwest::Method::GET, "/api/health", None).await;
        assert_eq!(status, 200);
        slowest = slowest.max(t.elapsed());
    }
    let t = std::time::Instant::now();
    let other = h.execute("return 2").await;
    let other_took = t.elapsed();
    assert_eq!(other["text"], "2", "{other}");
    // Generous bounds for a loaded 2-core CI machine; a stalled server takes the full 2 s.
    assert!(
        slowest < Duration::from_millis(500),
        "health took {slowest:?} while a script spun"
    );
    assert!(
        other_took < Duration::from_millis(1000),
        "another execution took {other_took:?}"
    );
    let spun = spinning.await.unwrap();
    assert_eq!(spun["isError"], true, "{spun}");
    assert!(
        spun["text"].as_str().unwrap().contains("timed out"),
        "{spun}"
    );
    h.shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_catalog_is_relisted_in_the_background() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;
    // The fixture's change_tools sends notifications/tools/list_changed on the session.
    let changed = h
        .execute("return (await tools.stateful.org.main.change_tools({})).ok")
        .await;
    assert_eq!(changed["text"], "true", "{changed}");
    fixture.clear_requests();
    // A read answers at once from the last good catalog and starts the re-list in the background.
    let started = std::time::Instant::now();
    let (status, tools) = h.get("/api/tools?integration=stateful").await;
    assert_eq!(status, 200);
    assert!(!tools.as_array().unwrap().is_empty(), "{tools}");
    assert!(started.elapsed() < Duration::from_secs(1));
    // The stale mark lands asynchronously after the notification, and freshness is checked at
    // most once a second: keep reading, as clients do, until the re-list shows upstream.
    let mut relisted = false;
    for _ in 0..40 {
        if fixture
            .requests()
            .iter()
            .any(|r| r.rpc_method.as_deref() == Some("tools/list"))
        {
            relisted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let (status, _) = h.get("/api/tools?integration=stateful").await;
        assert_eq!(status, 200);
    }
    assert!(
        relisted,
        "no background tools/list after list_changed: {:#?}",
        fixture.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_a_connection_rejected_value() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, "stateful").await;
    // The server goes away; the catalog stays.
    drop(fixture);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let executed = h
        .execute("return await tools.stateful.org.main.get_workspace({})")
        .await;
    let result = &executed["structured"]["result"];
    assert_eq!(result["ok"], false, "{executed}");
    assert_eq!(result["error"]["code"], "connection_rejected", "{executed}");
    assert!(
        result["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Couldn't reach"),
        "{executed}"
    );
    assert_eq!(result["error"]["retryable"], false);
}
