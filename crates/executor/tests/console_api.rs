//! The routes the console's executions pages read, beyond the original's API: the live feed of
//! executions (server-sent events), the recorded journal of one execution, and the history's
//! filters. Against a real MCP fixture whose `delete_everything` needs a person's approval.

mod support;

use std::time::Duration;

use executor_mcp::testing::serve_stateful;
use futures::StreamExt;
use serde_json::Value;
use support::{Harness, Options};

const SLUG: &str = "stateful";

/// Reads `event: execution` items off an SSE response until `want` of them arrived.
async fn read_events(response: reqwest::Response, want: usize) -> Vec<Value> {
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while events.len() < want {
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .expect("the feed sends the events in time")
            .expect("the feed stays open")
            .unwrap();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let mut name = "";
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    name = v.trim();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim());
                }
            }
            if name == "execution" {
                events.push(serde_json::from_str(&data).unwrap());
            }
        }
    }
    events
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_feed_reports_start_pause_resume_and_settle_and_the_journal_records_the_calls() {
    let fixture = serve_stateful().await;
    let h = Harness::start().await;
    h.add_fixture(&fixture, SLUG).await;

    let feed = h
        .http
        .get(format!("{}/api/executions/events", h.base))
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status(), 200);
    assert!(
        feed.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let reader = tokio::spawn(read_events(feed, 4));
    // Subscribed before the execution starts (the response headers came back).
    let code = format!(
        "await tools.{SLUG}.org.main.select_workspace({{workspace: 'w1', token: 'sk-live-abcdefghijklmnop'}});\n\
         await tools.{SLUG}.org.main.delete_everything({{}});\nreturn 'done'"
    );
    let paused = h.execute_gated(&code).await;
    assert_eq!(paused["status"], "paused", "{paused}");
    let id = paused["structured"]["executionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, done) = h.resume(&id, "accept").await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["text"], "done", "{done}");

    let events = reader.await.unwrap();
    let statuses: Vec<_> = events
        .iter()
        .map(|e| {
            assert_eq!(e["id"], id, "{e}");
            e["status"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(statuses, ["running", "paused", "running", "completed"]);
    assert_eq!(events[3]["isError"], false);
    assert!(events[3]["durationMs"].is_number(), "{}", events[3]);

    let (status, record) = h.get(&format!("/api/executions/{id}/journal")).await;
    assert_eq!(status, 200, "{record}");
    assert_eq!(record["status"], "completed");
    assert_eq!(record["code"], code);
    assert_eq!(record["outcome"]["text"], "done");
    let calls = record["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2, "{record}");
    assert_eq!(
        calls[0]["path"],
        format!("{SLUG}.org.main.select_workspace")
    );
    assert!(calls[0]["outcome"].get("resolve").is_some(), "{record}");
    // The pasted credential is not in the journal (the code is shown to its owner as written).
    assert!(
        !record["calls"]
            .to_string()
            .contains("sk-live-abcdefghijklmnop"),
        "{record}"
    );
    assert_eq!(calls[1]["approval"]["decision"], "accept", "{record}");
    assert!(record.get("pending").is_none());

    // The history filters.
    let ids = |body: &Value| -> Vec<String> {
        body.as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    };
    h.execute("return 2").await;
    let (_, all) = h.get("/api/executions").await;
    assert_eq!(ids(&all).len(), 2);
    let (_, called) = h.get(&format!("/api/executions?integration={SLUG}")).await;
    assert_eq!(ids(&called), std::slice::from_ref(&id));
    let (_, other) = h.get("/api/executions?integration=elsewhere").await;
    assert!(ids(&other).is_empty());
    let (_, completed) = h
        .get(&format!(
            "/api/executions?status=completed&integration={SLUG}"
        ))
        .await;
    assert_eq!(ids(&completed), [id]);
    let (_, paused) = h.get("/api/executions?status=paused").await;
    assert!(ids(&paused).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_filter_or_an_unknown_execution_is_a_clear_4xx() {
    let h = Harness::start_opts(Options {
        auth_token: Some("console-test-token".into()),
        ..Options::default()
    })
    .await;
    let (status, body) = h.get("/api/executions?status=done").await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["_tag"], "HttpApiSchemaError");
    let (status, body) = h.get("/api/executions/exec_nope/journal").await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["_tag"], "ExecutionNotFoundError");
    // A feed without the token is refused like every other API route.
    let anonymous = reqwest::Client::new()
        .get(format!("{}/api/executions/events", h.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
}
