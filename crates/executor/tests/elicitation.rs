//! Downstream MCP elicitations bridged to the agent (spec §4.6, §6): a real rmcp fixture server
//! (`serve_eliciting`) sends `elicitation/create` while it runs one of our tool calls; the
//! execution pauses like an approval and the answer (accept + content, decline, cancel) goes back
//! to the server. Over HTTP, over `/mcp` in model mode (the `resume` tool) and native mode (the
//! agent's MCP client answers the forwarded elicitation), and across a restart of the server.

mod support;

use std::sync::{Arc, Mutex};

use executor_mcp::testing::{StatefulMcpServer, confirm_delete_schema, serve_eliciting};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, ElicitationAction, Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::Harness;

const SLUG: &str = "elicit";

async fn start(fixture: &StatefulMcpServer) -> Harness {
    let h = Harness::start().await;
    h.add_fixture(fixture, SLUG).await;
    h
}

fn code(tool: &str, args: Value) -> String {
    format!("return (await tools.{SLUG}.org.main.{tool}({args})).data.content[0].text")
}

fn execution_id(paused: &Value) -> String {
    assert_eq!(paused["status"], "paused", "{paused}");
    paused["structured"]["executionId"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn resume_with(h: &Harness, id: &str, action: &str, content: Option<Value>) -> Value {
    let mut body = json!({"action": action});
    if let Some(content) = content {
        body["content"] = content;
    }
    let (status, body) = h.post(&format!("/api/executions/{id}/resume"), body).await;
    assert_eq!(status, 200, "{body}");
    body
}

fn completed_text(outcome: &Value) -> String {
    assert_eq!(outcome["status"], "completed", "{outcome}");
    outcome["text"].as_str().unwrap_or_default().to_owned()
}

/// `tools/call` requests the fixture answered.
fn tool_calls(fixture: &StatefulMcpServer) -> usize {
    fixture
        .requests()
        .iter()
        .filter(|r| r.rpc_method.as_deref() == Some("tools/call") && r.status < 300)
        .count()
}

fn assert_form_pause(paused: &Value, item: &str) -> String {
    let id = execution_id(paused);
    let structured = &paused["structured"];
    assert_eq!(structured["status"], "waiting_for_interaction");
    let interaction = &structured["interaction"];
    let message = format!("Delete {item}? Confirm and give a reason.");
    assert_eq!(interaction["kind"], "form", "{paused}");
    assert_eq!(interaction["message"], message.as_str());
    assert_eq!(
        interaction["address"],
        format!("tools.{SLUG}.org.main.confirm_delete")
    );
    assert_eq!(interaction["args"], json!({"item": item}));
    assert_eq!(interaction["requestedSchema"], confirm_delete_schema());
    assert!(
        interaction["instructions"]
            .as_str()
            .unwrap()
            .contains("content"),
        "{paused}"
    );
    let text = paused["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("Execution paused: {message}\n")),
        "{text}"
    );
    let schema = serde_json::to_string_pretty(&confirm_delete_schema()).unwrap();
    assert!(
        text.contains(&format!(
            "\nRequested schema:\n{schema}\nexecutionId: {id}\n"
        )),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "\ninstructions: {}",
            interaction["instructions"].as_str().unwrap()
        )),
        "{text}"
    );
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_pause_then_accept_with_content_reaches_the_server() {
    let fixture = serve_eliciting().await;
    let h = start(&fixture).await;
    let paused = h
        .execute_gated(&code("confirm_delete", json!({"item": "report"})))
        .await;
    let id = assert_form_pause(&paused, "report");
    // Read back as it was returned.
    let (status, view) = h.get(&format!("/api/executions/{id}")).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["structured"], paused["structured"]);
    assert_eq!(view["text"], paused["text"]);
    // The browser approval page is the console's, which builds the form from that API answer
    // (issue #17: the page is public, so it holds none of the call's data itself).
    let page = h
        .http
        .get(format!("{}/resume/{id}", h.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("<div id=\"root\">"), "{page}");
    assert!(!page.contains("report"), "{page}");

    let content = json!({"confirm": true, "reason": "outdated"});
    let done = resume_with(&h, &id, "accept", Some(content.clone())).await;
    let got: Value = serde_json::from_str(&completed_text(&done)).unwrap();
    assert_eq!(got, json!({"action": "accept", "content": content}));
    assert_eq!(
        fixture.elicited.entries(),
        [json!({"tool": "confirm_delete", "action": "accept", "content": content})]
    );
    // Idempotent: the same outcome, nothing asked or sent again.
    assert_eq!(resume_with(&h, &id, "decline", None).await, done);
    assert_eq!(fixture.elicited.entries().len(), 1);
    assert_eq!(tool_calls(&fixture), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decline_and_cancel_go_to_the_server_which_finishes_the_call() {
    let fixture = serve_eliciting().await;
    let h = start(&fixture).await;
    for (action, expected) in [("decline", "declined"), ("cancel", "cancelled")] {
        let paused = h
            .execute_gated(&code("confirm_delete", json!({"item": "x"})))
            .await;
        let id = assert_form_pause(&paused, "x");
        // Content given with a refusal is not sent.
        let done = resume_with(&h, &id, action, Some(json!({"confirm": true}))).await;
        assert_eq!(completed_text(&done), expected, "{done}");
    }
    assert_eq!(
        fixture.elicited.entries(),
        [
            json!({"tool": "confirm_delete", "action": "decline"}),
            json!({"tool": "confirm_delete", "action": "cancel"}),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_approve_answers_only_forms_that_ask_for_nothing() {
    let fixture = serve_eliciting().await;
    let h = start(&fixture).await;
    // Nothing to fill in: accepted inline.
    let done = h.execute(&code("acknowledge", json!({}))).await;
    assert_eq!(completed_text(&done), "acknowledged:accept");
    assert_eq!(
        fixture.elicited.entries(),
        [json!({"tool": "acknowledge", "action": "accept", "content": {}})]
    );

    // A form with fields pauses even for the approver.
    let paused = h
        .execute(&code("confirm_delete", json!({"item": "a"})))
        .await;
    let id = assert_form_pause(&paused, "a");
    let done = resume_with(
        &h,
        &id,
        "accept",
        Some(json!({"confirm": false, "reason": "keep"})),
    )
    .await;
    assert!(completed_text(&done).contains("keep"), "{done}");

    // So does a URL: kind "url" with the URL, in the text too.
    let paused = h.execute(&code("open_link", json!({}))).await;
    let id = execution_id(&paused);
    let interaction = &paused["structured"]["interaction"];
    assert_eq!(interaction["kind"], "url", "{paused}");
    assert_eq!(interaction["message"], "Sign in to continue.");
    let url = interaction["url"].as_str().unwrap();
    assert!(url.starts_with("https://auth.example/link/"), "{paused}");
    assert!(interaction.get("requestedSchema").is_none(), "{paused}");
    let text = paused["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!(
            "Execution paused: Sign in to continue.\nOpen this URL in a browser:\n{url}\n"
        )),
        "{text}"
    );
    let done = resume_with(&h, &id, "accept", None).await;
    assert_eq!(completed_text(&done), "link:accept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_can_elicit_and_one_call_can_elicit_twice() {
    let fixture = serve_eliciting().await;
    let h = start(&fixture).await;
    let (status, body) = h
        .post(
            "/api/policies",
            json!({"owner": "org", "pattern": format!("{SLUG}.*.*.confirm_delete"), "action": "require_approval"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let approval = h
        .execute_gated(&code("confirm_delete", json!({"item": "db"})))
        .await;
    let id = execution_id(&approval);
    assert_eq!(
        approval["structured"]["interaction"]["requestedSchema"],
        json!({"type": "object", "properties": {}})
    );
    assert!(
        approval["structured"]["interaction"]["message"]
            .as_str()
            .unwrap()
            .starts_with("Approve tools.elicit.org.main.confirm_delete?"),
        "{approval}"
    );
    assert_eq!(tool_calls(&fixture), 0);
    let elicited = resume_with(&h, &id, "accept", None).await;
    assert_eq!(assert_form_pause(&elicited, "db"), id, "the same execution");
    let done = resume_with(
        &h,
        &id,
        "accept",
        Some(json!({"confirm": true, "reason": "r"})),
    )
    .await;
    assert!(completed_text(&done).contains("\"reason\":\"r\""), "{done}");

    // Two questions in one call: two pauses, one after the other.
    let first = h.execute_gated(&code("two_questions", json!({}))).await;
    let id = execution_id(&first);
    assert_eq!(
        first["structured"]["interaction"]["message"],
        "The first question?"
    );
    let second = resume_with(&h, &id, "accept", Some(json!({"first": "a"}))).await;
    assert_eq!(
        second["structured"]["interaction"]["message"], "The second question?",
        "{second}"
    );
    let done = resume_with(&h, &id, "accept", Some(json!({"second": "b"}))).await;
    assert_eq!(completed_text(&done), "first=a,second=b");
}

// ---- MCP ------------------------------------------------------------------------------------------

/// An agent's MCP client; with `answer`, it declares elicitation (form and URL) and answers so.
#[derive(Clone)]
struct Agent {
    answer: Option<(ElicitationAction, Option<Value>)>,
    asked: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Agent {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = match self.answer {
            None => ClientCapabilities::default(),
            Some(_) => {
                serde_json::from_value(json!({"elicitation": {"form": {}, "url": {}}})).unwrap()
            }
        };
        ClientConfig::new(
            capabilities,
            Implementation::new("elicitation-agent", "0.0.1"),
        )
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked
            .lock()
            .unwrap()
            .push(serde_json::to_value(&request).unwrap());
        match self.answer.clone() {
            Some((action, content)) => {
                let result = ElicitResult::new(action);
                Ok(match content {
                    Some(content) => result.with_content(content),
                    None => result,
                })
            }
            None => Err(ErrorData::invalid_request("no elicitation here", None)),
        }
    }
}

async fn agent(
    h: &Harness,
    query: &str,
    answer: Option<(ElicitationAction, Option<Value>)>,
) -> (RunningService<RoleClient, Agent>, Arc<Mutex<Vec<Value>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let handler = Agent {
        answer,
        asked: asked.clone(),
    };
    let transport = StreamableHttpClientTransport::from_uri(format!("{}/mcp{query}", h.base));
    (handler.serve(transport).await.expect("connects"), asked)
}

async fn call(
    client: &RunningService<RoleClient, Agent>,
    name: &str,
    args: Value,
) -> CallToolResult {
    client
        .call_tool(
            CallToolRequestParams::new(name.to_owned())
                .with_arguments(args.as_object().cloned().unwrap_or_default()),
        )
        .await
        .expect("tools/call answers")
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(result).unwrap()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_model_mode_resume_tool_answers_with_content() {
    let fixture = serve_eliciting().await;
    let h = start(&fixture).await;
    let (client, asked) = agent(&h, "", None).await;
    let paused = call(
        &client,
        "execute",
        json!({"code": code("confirm_delete", json!({"item": "mcp"}))}),
    )
    .await;
    let structured = paused.structured_content.clone().unwrap();
    let id = assert_form_pause(
        &json!({"status": "paused", "text": text(&paused), "structured": structured}),
        "mcp",
    );
    let done = call(
        &client,
        "resume",
        json!({"executionId": id, "action": "accept", "content": "{\"confirm\":true,\"reason\":\"via resume\"}"}),
    )
    .await;
    assert_ne!(done.is_error, Some(true), "{}", text(&done));
    let got: Value = serde_json::from_str(&text(&done)).unwrap();
    assert_eq!(
        got["content"],
        json!({"confirm": true, "reason": "via resume"})
    );
    assert!(asked.lock().unwrap().is_empty(), "model mode never elicits");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_native_mode_forwards_the_servers_elicitation_to_the_agent() {
    let fixture = serve_eliciting().await;
    let h = start(&fixture).await;
    let content = json!({"confirm": true, "reason": "native"});
    let (client, asked) = agent(
        &h,
        "?elicitation_mode=native",
        Some((ElicitationAction::Accept, Some(content.clone()))),
    )
    .await;
    let done = call(
        &client,
        "execute",
        json!({"code": code("confirm_delete", json!({"item": "n"}))}),
    )
    .await;
    assert_ne!(done.is_error, Some(true), "{}", text(&done));
    let got: Value = serde_json::from_str(&text(&done)).unwrap();
    assert_eq!(got, json!({"action": "accept", "content": content}));
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked.len(), 1, "{asked:?}");
        assert_eq!(asked[0]["message"], "Delete n? Confirm and give a reason.");
        assert_eq!(asked[0]["requestedSchema"], confirm_delete_schema());
    }

    // A URL goes out in URL mode to a client that has it.
    let done = call(
        &client,
        "execute",
        json!({"code": code("open_link", json!({}))}),
    )
    .await;
    assert_eq!(text(&done), "link:accept");
    {
        let asked = asked.lock().unwrap();
        assert_eq!(asked[1]["mode"], "url", "{asked:?}");
        assert!(
            asked[1]["url"]
                .as_str()
                .unwrap()
                .starts_with("https://auth.example/link/")
        );
    }
    client.cancel().await.unwrap();

    // A declining agent: the server hears the decline.
    let (client, _) = agent(
        &h,
        "?elicitation_mode=native",
        Some((ElicitationAction::Decline, None)),
    )
    .await;
    let done = call(
        &client,
        "execute",
        json!({"code": code("confirm_delete", json!({}))}),
    )
    .await;
    assert_eq!(text(&done), "declined");
    client.cancel().await.unwrap();
}

// ---- restart --------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_elicitation_survives_a_restart() {
    let fixture = serve_eliciting().await;
    let h = start(&fixture).await;
    let paused = h
        .execute_gated(&code("confirm_delete", json!({"item": "kept"})))
        .await;
    let id = assert_form_pause(&paused, "kept");
    let (_, before) = h.get(&format!("/api/executions/{id}")).await;

    let h = h.restart().await;
    let (status, view) = h.get(&format!("/api/executions/{id}")).await;
    assert_eq!(status, 200, "the new process knows the pause: {view}");
    assert_eq!(view, before);
    // The server's call was cut off by the shutdown; the replay sends it again, the server asks
    // again, and the stored answer answers it.
    let content = json!({"confirm": true, "reason": "after restart"});
    let done = resume_with(&h, &id, "accept", Some(content.clone())).await;
    let got: Value = serde_json::from_str(&completed_text(&done)).unwrap();
    assert_eq!(got, json!({"action": "accept", "content": content}));
    let answers = fixture.elicited.entries();
    assert_eq!(
        answers.last().unwrap(),
        &json!({"tool": "confirm_delete", "action": "accept", "content": content}),
        "{answers:?}"
    );
    assert_eq!(
        tool_calls(&fixture),
        2,
        "sent once before, once on the replay"
    );
    assert_eq!(
        resume_with(&h, &id, "cancel", None).await,
        done,
        "idempotent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_earlier_answers_of_the_call_are_not_asked_again() {
    let fixture = serve_eliciting().await;
    let h = start(&fixture).await;
    let (status, body) = h
        .post(
            "/api/policies",
            json!({"owner": "org", "pattern": format!("{SLUG}.*.*.two_questions"), "action": "require_approval"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let approval = h.execute_gated(&code("two_questions", json!({}))).await;
    let id = execution_id(&approval);
    let first = resume_with(&h, &id, "accept", None).await;
    assert_eq!(
        first["structured"]["interaction"]["message"],
        "The first question?"
    );
    let second = resume_with(&h, &id, "accept", Some(json!({"first": "a"}))).await;
    assert_eq!(
        second["structured"]["interaction"]["message"],
        "The second question?"
    );

    let h = h.restart().await;
    // The approval and the first answer are given again from the journal; the second question
    // gets the new answer. Nothing pauses.
    let done = resume_with(&h, &id, "accept", Some(json!({"second": "b"}))).await;
    assert_eq!(completed_text(&done), "first=a,second=b", "{done}");
}
