//! The downstream elicitation bridge against a real rmcp fixture server on 127.0.0.1: a server
//! that sends `elicitation/create` while it handles a `tools/call` is answered by the elicitor of
//! exactly that call, concurrent calls on one session included.

#[allow(dead_code, unreachable_pub)]
#[path = "../src/testing.rs"]
mod testing;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use executor_mcp::{
    ElicitAction, ElicitAnswer, Elicitation, Elicitor, McpClient, McpClientConfig, RemoteTarget,
    RemoteTransport, SessionKey,
};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

fn target(url: &str) -> RemoteTarget {
    RemoteTarget::new(url, RemoteTransport::StreamableHttp)
}

fn key(t: &RemoteTarget) -> SessionKey {
    SessionKey::new(t, "none", &BTreeMap::new(), "eliciting/org/main")
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

/// Answers every elicitation with a fixed answer after `delay`, recording what it was asked.
struct Scripted {
    answer: ElicitAnswer,
    delay: Duration,
    asked: Mutex<Vec<Elicitation>>,
}

impl Scripted {
    fn new(action: ElicitAction, content: Option<Value>) -> Arc<Self> {
        Arc::new(Self {
            answer: ElicitAnswer { action, content },
            delay: Duration::ZERO,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<Elicitation> {
        self.asked.lock().unwrap().clone()
    }
}

impl Elicitor for Scripted {
    fn elicit(&self, request: Elicitation) -> BoxFuture<'static, ElicitAnswer> {
        self.asked.lock().unwrap().push(request);
        let (answer, delay) = (self.answer.clone(), self.delay);
        Box::pin(async move {
            tokio::time::sleep(delay).await;
            answer
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_elicitation_reaches_the_calls_elicitor_and_its_answer_the_server() {
    let server = testing::serve_eliciting().await;
    let client = McpClient::new(McpClientConfig::default());
    let t = target(&server.url);
    let scope = client.scope();
    let elicitor = Scripted::new(
        ElicitAction::Accept,
        Some(json!({"confirm": true, "reason": "old"})),
    );
    let result = scope
        .call_tool_with(
            &key(&t),
            &t,
            "confirm_delete",
            args(json!({"item": "report"})),
            Some(elicitor.clone()),
        )
        .await
        .expect("call");
    assert_eq!(
        serde_json::from_str::<Value>(&text(&result)).unwrap(),
        json!({"action": "accept", "content": {"confirm": true, "reason": "old"}})
    );
    assert_eq!(
        elicitor.asked(),
        [Elicitation::Form {
            message: "Delete report? Confirm and give a reason.".into(),
            requested_schema: testing::confirm_delete_schema(),
        }]
    );

    // Decline and cancel travel as they are; a URL-mode request arrives as one.
    for (action, expected) in [
        (ElicitAction::Decline, "declined"),
        (ElicitAction::Cancel, "cancelled"),
    ] {
        let elicitor = Scripted::new(action, None);
        let result = scope
            .call_tool_with(&key(&t), &t, "confirm_delete", Map::new(), Some(elicitor))
            .await
            .unwrap();
        assert_eq!(text(&result), expected);
    }
    let elicitor = Scripted::new(ElicitAction::Accept, None);
    let result = scope
        .call_tool_with(
            &key(&t),
            &t,
            "open_link",
            Map::new(),
            Some(elicitor.clone()),
        )
        .await
        .unwrap();
    assert_eq!(text(&result), "link:accept");
    assert!(
        matches!(&elicitor.asked()[..], [Elicitation::Url { url, elicitation_id, message }]
            if url.starts_with("https://auth.example/link/") && elicitation_id.starts_with("link-") && message == "Sign in to continue."),
        "{:?}",
        elicitor.asked()
    );
    scope.finish().await;
    assert_eq!(client.live_sessions(), 1, "one session served every call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_on_one_session_each_get_their_own_elicitations() {
    let server = testing::serve_eliciting().await;
    let client = McpClient::new(McpClientConfig::default());
    let t = target(&server.url);
    let scope = Arc::new(client.scope());
    let calls = (0..6).map(|i| {
        let (scope, t) = (scope.clone(), t.clone());
        async move {
            let elicitor = Arc::new(Scripted {
                answer: ElicitAnswer {
                    action: ElicitAction::Accept,
                    content: Some(json!({"confirm": true, "reason": format!("r{i}")})),
                },
                // Later calls answer sooner, so answers cross.
                delay: Duration::from_millis(20 * (6 - i)),
                asked: Mutex::new(Vec::new()),
            });
            let result = scope
                .call_tool_with(
                    &key(&t),
                    &t,
                    "confirm_delete",
                    args(json!({"item": format!("item{i}")})),
                    Some(elicitor.clone()),
                )
                .await
                .unwrap();
            (i, text(&result), elicitor.asked())
        }
    });
    for (i, result, asked) in futures::future::join_all(calls).await {
        let got: Value = serde_json::from_str(&result).unwrap();
        assert_eq!(got["content"]["reason"], format!("r{i}"), "{result}");
        assert_eq!(asked.len(), 1);
        assert_eq!(
            asked[0].message(),
            format!("Delete item{i}? Confirm and give a reason.")
        );
    }
    assert_eq!(server.ledger.call_session_ids().len(), 1, "one session");
    Arc::try_unwrap(scope).unwrap().finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_elicitor_the_elicitation_is_cancelled() {
    let server = testing::serve_eliciting().await;
    let client = McpClient::new(McpClientConfig::default());
    let t = target(&server.url);
    let scope = client.scope();
    let result = scope
        .call_tool(&key(&t), &t, "confirm_delete", Map::new())
        .await
        .unwrap();
    assert_eq!(text(&result), "cancelled");
    assert_eq!(
        server.elicited.entries(),
        [json!({"tool": "confirm_delete", "action": "cancel"})]
    );
    scope.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_timeout_does_not_run_while_a_person_is_asked() {
    let server = testing::serve_eliciting().await;
    let client = McpClient::new(McpClientConfig {
        call_timeout: Duration::from_millis(300),
        ..McpClientConfig::default()
    });
    let t = target(&server.url);
    let scope = client.scope();
    let elicitor = Arc::new(Scripted {
        answer: ElicitAnswer {
            action: ElicitAction::Accept,
            content: Some(json!({"first": "a", "second": "b"})),
        },
        delay: Duration::from_millis(500),
        asked: Mutex::new(Vec::new()),
    });
    let result = scope
        .call_tool_with(
            &key(&t),
            &t,
            "two_questions",
            Map::new(),
            Some(elicitor.clone()),
        )
        .await
        .expect("answered after the call timeout, still fine");
    assert_eq!(text(&result), "first=a,second=b");
    assert_eq!(elicitor.asked().len(), 2);
    scope.finish().await;
}
