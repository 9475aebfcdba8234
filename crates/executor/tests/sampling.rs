//! A downstream server's `sampling/createMessage` reaches the model of the agent whose
//! execution made the call (issue #18): the agent's MCP client declared sampling, so its
//! `/mcp` session forwards the request; a client that did not is refused with a JSON-RPC error
//! the server can read. Against a real rmcp fixture that lists its sampling tool only to clients
//! that declare sampling.

// Sampling is deprecated by SEP-2577 but still part of the protocol.
#![allow(deprecated)]

mod support;

use std::sync::{Arc, Mutex};

use executor_mcp::testing::serve_capable;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, Implementation,
};
use rmcp::service::RequestContext;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::Harness;

/// An agent's MCP client; with `samples`, it declares sampling and answers "hello".
#[derive(Clone)]
struct Agent {
    samples: bool,
    asked: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = if self.samples {
            serde_json::from_value(json!({"sampling": {}})).unwrap()
        } else {
            ClientCapabilities::default()
        };
        ClientConfig::new(capabilities, Implementation::new("sampling-agent", "0.0.1"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.asked
            .lock()
            .unwrap()
            .push(serde_json::to_value(&params).unwrap());
        Ok(
            serde_json::from_value(json!({"model": "agent-model", "role": "assistant",
            "content": {"type": "text", "text": "hello"}, "stopReason": "endTurn"}))
            .unwrap(),
        )
    }
}

async fn sample_through(h: &Harness, samples: bool) -> (String, Vec<Value>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent {
        samples,
        asked: asked.clone(),
    };
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/mcp", h.base));
    let client = agent.serve(transport).await.expect("connects");
    let code = "const r = await tools.capable.org.main.sample({}); \
                return r.ok ? r.data.content[0].text : r.error.message";
    let result = client
        .call_tool(
            CallToolRequestParams::new("execute")
                .with_arguments(json!({"code": code}).as_object().cloned().unwrap()),
        )
        .await
        .expect("tools/call answers");
    client.cancel().await.unwrap();
    let text = serde_json::to_value(&result).unwrap()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let asked = asked.lock().unwrap().clone();
    (text, asked)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_sampling_request_reaches_the_agents_model() {
    let fixture = serve_capable().await;
    let h = Harness::start().await;
    h.add_mcp_server("Capable", &fixture.url, "capable").await;
    // Listed: our client declares sampling, elicitation and roots when it lists tools.
    let (_, tools) = h.get("/api/tools?integration=capable").await;
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["address"].as_str())
        .collect();
    for tool in ["sample", "ask_with_defaults", "count_roots"] {
        assert!(
            names.contains(&format!("tools.capable.org.main.{tool}").as_str()),
            "{names:?}"
        );
    }

    let (text, asked) = sample_through(&h, true).await;
    assert!(text.contains("model agent-model said hello"), "{text}");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["messages"][0]["content"]["text"], "Say hi");

    // An agent without sampling: the server hears a JSON-RPC error that says why.
    let (text, asked) = sample_through(&h, false).await;
    assert!(asked.is_empty());
    assert!(text.contains("sampling failed"), "{text}");
    assert!(text.contains("does not support sampling"), "{text}");
}
