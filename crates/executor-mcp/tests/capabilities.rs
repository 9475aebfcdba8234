//! What our client declares and answers besides elicitation, against a real rmcp fixture server
//! that lists tools by the client's capabilities (as `server-everything` does): sampling
//! forwarded to the call's sampler (else a JSON-RPC error), `roots/list` answered with an empty
//! list, and the defaults of an accepted form filled in (SEP-1034).

#[allow(dead_code, unreachable_pub)]
#[path = "../src/testing.rs"]
mod testing;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use executor_mcp::{
    ElicitAction, ElicitAnswer, Elicitation, Elicitor, McpClient, McpClientConfig, RemoteTarget,
    RemoteTransport, Sampler, SamplingError, SessionKey,
};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

fn target(url: &str) -> RemoteTarget {
    RemoteTarget::new(url, RemoteTransport::StreamableHttp)
}

fn key(t: &RemoteTarget) -> SessionKey {
    SessionKey::new(t, "none", &BTreeMap::new(), "capable/org/main")
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Accepts every form with `content`; samples with `sampler` when it has one.
struct Caller {
    content: Option<Value>,
    sampler: Option<Arc<dyn Sampler>>,
}

impl Elicitor for Caller {
    fn elicit(&self, _request: Elicitation) -> BoxFuture<'static, ElicitAnswer> {
        let answer = ElicitAnswer {
            action: ElicitAction::Accept,
            content: self.content.clone(),
        };
        Box::pin(async move { answer })
    }

    fn sampler(&self) -> Option<Arc<dyn Sampler>> {
        self.sampler.clone()
    }
}

/// A model that always says "hi", recording what it was asked.
#[derive(Default)]
struct Model {
    asked: Mutex<Vec<Value>>,
}

impl Sampler for Model {
    fn create_message(&self, params: Value) -> BoxFuture<'static, Result<Value, SamplingError>> {
        self.asked.lock().unwrap().push(params);
        Box::pin(async {
            Ok(json!({"model": "test-model", "role": "assistant",
                "content": {"type": "text", "text": "hi"}, "stopReason": "endTurn"}))
        })
    }
}

async fn call(client: &McpClient, url: &str, tool: &str, caller: Option<Caller>) -> Value {
    let t = target(url);
    let scope = client.scope();
    let elicitor = caller.map(|c| Arc::new(c) as Arc<dyn Elicitor>);
    let result = scope
        .call_tool_with(&key(&t), &t, tool, Map::new(), elicitor)
        .await
        .expect("the call answers");
    scope.finish().await;
    result
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_lists_the_tools_a_server_keeps_for_capable_clients() {
    let server = testing::serve_capable().await;
    let client = McpClient::new(McpClientConfig::default());
    let found = client.discover(&target(&server.url)).await.unwrap();
    let names: Vec<&str> = found.tools.iter().map(|t| t.real_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "plain",
            "report",
            "ask_with_defaults",
            "sample",
            "count_roots"
        ],
        "elicitation, sampling and roots are declared while listing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roots_list_is_answered_with_an_empty_list() {
    let server = testing::serve_capable().await;
    let client = McpClient::new(McpClientConfig::default());
    let result = call(&client, &server.url, "count_roots", None).await;
    assert_eq!(text(&result), "roots:0", "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_goes_to_the_sampler_of_the_call() {
    let server = testing::serve_capable().await;
    let client = McpClient::new(McpClientConfig::default());
    let model = Arc::new(Model::default());
    let caller = Caller {
        content: None,
        sampler: Some(model.clone()),
    };
    let result = call(&client, &server.url, "sample", Some(caller)).await;
    assert_eq!(text(&result), "model test-model said hi", "{result}");
    let asked = model.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["messages"][0]["content"]["text"], "Say hi");
    assert_eq!(asked[0]["maxTokens"], 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_without_a_sampler_is_a_json_rpc_error() {
    let server = testing::serve_capable().await;
    let client = McpClient::new(McpClientConfig::default());
    for caller in [
        None,
        Some(Caller {
            content: None,
            sampler: None,
        }),
    ] {
        let result = call(&client, &server.url, "sample", caller).await;
        let said = text(&result);
        assert!(said.starts_with("sampling failed: "), "{result}");
        assert!(!executor_mcp::is_unknown_tool_message(&said), "{said}");
        assert!(
            said.contains("sampling/createMessage refused"),
            "a clear message: {said}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_form_gets_the_schema_defaults_the_person_left_out() {
    let server = testing::serve_capable().await;
    let client = McpClient::new(McpClientConfig::default());
    let got = |result: Value| -> Value { serde_json::from_str(&text(&result)).unwrap() };
    // Accepted with nothing: every default.
    let caller = Caller {
        content: None,
        sampler: None,
    };
    let result = got(call(&client, &server.url, "ask_with_defaults", Some(caller)).await);
    assert_eq!(result["action"], "accept");
    assert_eq!(
        result["content"],
        json!({"name": "Ada", "count": 3, "color": "red"})
    );
    // Partly filled: the person's values stand, the rest are defaults; no default, no value.
    let caller = Caller {
        content: Some(json!({"name": "Bo", "note": "n"})),
        sampler: None,
    };
    let result = got(call(&client, &server.url, "ask_with_defaults", Some(caller)).await);
    assert_eq!(
        result["content"],
        json!({"name": "Bo", "note": "n", "count": 3, "color": "red"})
    );
}
