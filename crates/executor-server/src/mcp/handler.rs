//! The MCP server handler: `execute`, `skills`, `resume` (spec §5), one instance per MCP session
//! (or per request for stateless clients, and one for the whole stdio connection).

use std::sync::OnceLock;
use std::time::Duration;

use executor_core::Completed;
use executor_engine::{
    AgentLink, Caller, Engine, EngineError, ExecutionOutcome, Paused, ResumeAction,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitationAction, Implementation,
    InitializeRequestParams, InitializeResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::skills;

pub const SERVER_NAME: &str = "executor";
pub const SERVER_VERSION: &str = "1.0.0";

/// How long a browser-mode `resume` waits for the person's decision.
const BROWSER_WAIT: Duration = Duration::from_secs(4 * 60 + 1);
const BROWSER_POLL: Duration = Duration::from_millis(250);

/// How approvals reach a person (`?elicitation_mode=`), chosen when the session is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ElicitationMode {
    /// The agent relays the question and answers with the `resume` tool.
    #[default]
    Model,
    /// The agent sends the person to an approval page; `resume` waits for their decision.
    Browser,
    /// The approval is forwarded to the MCP client with `elicitation/create`.
    Native,
}

impl ElicitationMode {
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "model" => Some(Self::Model),
            "browser" => Some(Self::Browser),
            "native" => Some(Self::Native),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Model => "model",
            Self::Browser => "browser",
            Self::Native => "native",
        }
    }

    /// From a request query string: `elicitation_mode=…`, or the legacy `allow_model_resume=true`.
    fn from_query(query: &str) -> Option<Self> {
        let mut mode = None;
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match key.as_ref() {
                "elicitation_mode" => mode = Self::parse(&value).or(mode),
                "allow_model_resume" if value == "true" && mode.is_none() => {
                    mode = Some(Self::Model);
                }
                _ => {}
            }
        }
        mode
    }
}

/// One MCP server instance over the engine.
pub struct ExecutorMcp {
    engine: Engine,
    /// Who requests act for when the transport says nothing (stdio); over HTTP each request
    /// carries the caller the front door resolved.
    default_caller: Caller,
    default_mode: ElicitationMode,
    /// Fixed at `initialize` from the request's query; stateless requests carry their own.
    mode: OnceLock<ElicitationMode>,
    /// `http://<host>` of the request that created the session (browser approval links).
    origin: OnceLock<String>,
    /// Cancelled when this instance is dropped: ends its list_changed forwarder.
    alive: CancellationToken,
}

impl Drop for ExecutorMcp {
    fn drop(&mut self) {
        self.alive.cancel();
    }
}

impl ExecutorMcp {
    pub fn new(engine: Engine, default_caller: Caller, default_mode: ElicitationMode) -> Self {
        Self {
            engine,
            default_caller,
            default_mode,
            mode: OnceLock::new(),
            origin: OnceLock::new(),
            alive: CancellationToken::new(),
        }
    }

    fn request_parts(extensions: &rmcp::model::Extensions) -> Option<&http::request::Parts> {
        extensions.get::<http::request::Parts>()
    }

    /// The request's caller (set by the HTTP front door), else the instance's.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Caller {
        Self::request_parts(&context.extensions)
            .and_then(|parts| parts.extensions.get::<Caller>())
            .unwrap_or(&self.default_caller)
            .clone()
    }

    fn mode(&self, context: &RequestContext<RoleServer>) -> ElicitationMode {
        if let Some(mode) = self.mode.get() {
            return *mode;
        }
        Self::request_parts(&context.extensions)
            .and_then(|parts| parts.uri.query())
            .and_then(ElicitationMode::from_query)
            .unwrap_or(self.default_mode)
    }

    fn origin(&self, context: &RequestContext<RoleServer>) -> Option<String> {
        if let Some(origin) = self.origin.get() {
            return Some(origin.clone());
        }
        Self::request_parts(&context.extensions).and_then(origin_of)
    }

    async fn connected_slugs(&self, caller: &Caller) -> Vec<String> {
        match self.engine.agent_connections(caller, None, None).await {
            Ok(connections) => connections.into_iter().map(|c| c.integration).collect(),
            Err(e) => {
                tracing::warn!(error = %e, "listing connections for the MCP surface failed");
                Vec::new()
            }
        }
    }

    async fn tools(
        &self,
        caller: &Caller,
        mode: ElicitationMode,
        peer: &Peer<RoleServer>,
    ) -> Vec<Tool> {
        let slugs = self.connected_slugs(caller).await;
        let mut tools = vec![
            tool(json!({
                "name": "execute",
                "description": skills::execute_description(&slugs),
                "inputSchema": {
                    "type": "object",
                    "properties": {"code": {
                        "type": "string",
                        "minLength": 1,
                        "description": "TypeScript or JavaScript to run. Top-level await and return work; the returned value is the result."
                    }},
                    "required": ["code"],
                },
            })),
            tool(json!({
                "name": "skills",
                "description": "Guides for using Executor. Call with no name for the index, or `skills({ name: \"execute\" })` before writing code.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string", "description": "Skill to fetch, e.g. \"execute\"."}},
                },
                "annotations": {"readOnlyHint": true},
            })),
        ];
        match mode {
            ElicitationMode::Native if can_elicit(peer) => {}
            ElicitationMode::Browser => tools.push(tool(json!({
                "name": "resume",
                "description": "Wait for the user's decision on a paused execution after they opened its approval URL, and return what the execution did next.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"executionId": {"type": "string", "description": "executionId from the paused execute result."}},
                    "required": ["executionId"],
                },
            }))),
            _ => tools.push(tool(json!({
                "name": "resume",
                "description": "Resume a paused execution with the user's decision. Only call this after the user answered the question in the paused execute result.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "executionId": {"type": "string", "description": "executionId from the paused execute result."},
                        "action": {"type": "string", "enum": ["accept", "decline", "cancel"], "description": "The user's decision."},
                        "content": {"type": "string", "default": "{}", "description": "JSON-encoded object answering the requested schema, if any. Default \"{}\"."},
                    },
                    "required": ["executionId", "action"],
                },
            }))),
        }
        tools
    }

    async fn execute(
        &self,
        args: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let code = args
            .get("code")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("");
        if code.is_empty() {
            let message = "`code` must be a non-empty string of TypeScript to run, for example {\"code\": \"return 1\"}.";
            return error_result(
                format!("Error: {message}"),
                json!({"status": "error", "error": message}),
            );
        }
        let caller = self.caller(context);
        let progress = super::progress::for_request(
            &context.peer,
            context.meta.get_progress_token(),
            context.ct.clone(),
        );
        let agent = AgentLink {
            sampler: super::sampling::for_peer(&context.peer),
            progress: progress.as_ref().map(|p| p.sink()),
        };
        // A client that cancels the request (`notifications/cancelled`) or closes the session
        // cancels the execution: dropping it stops its sandbox and its upstream requests.
        let outcome = tokio::select! {
            outcome = self.engine.execute_for_agent(&caller, code.to_owned(), false, agent) => outcome,
            () = context.ct.cancelled() => {
                let message = "The request was cancelled by the client.";
                return error_result(format!("Error: {message}"), json!({"status": "error", "error": message}));
            }
        };
        // Native-mode pauses are answered inside `present`; the calls resumed there report too.
        let result = self.present(outcome, context).await;
        if let Some(progress) = progress {
            progress.finish().await;
        }
        result
    }

    /// Turns an outcome into a tool result; in native mode answers pauses through the client.
    async fn present(
        &self,
        mut outcome: Result<ExecutionOutcome, EngineError>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let mode = self.mode(context);
        let caller = self.caller(context);
        loop {
            let paused = match outcome {
                Err(e) => return engine_error(e),
                Ok(ExecutionOutcome::Completed(completed)) => return completed_result(completed),
                Ok(ExecutionOutcome::Paused(paused)) => paused,
            };
            match mode {
                ElicitationMode::Native if can_elicit(&context.peer) => {
                    let (action, content) = self.elicit(&caller, &paused, &context.peer).await;
                    outcome = self
                        .engine
                        .resume(&caller, &paused.execution_id, action, content)
                        .await;
                }
                ElicitationMode::Browser => match self.origin(context) {
                    Some(origin) => {
                        return browser_paused(&paused, &origin, session_id(context).as_deref());
                    }
                    None => return paused_result(paused),
                },
                _ => return paused_result(paused),
            }
        }
    }

    /// Asks the client; a dropped request (client gone) cancels the pause so the execution ends.
    async fn elicit(
        &self,
        caller: &Caller,
        paused: &Paused,
        peer: &Peer<RoleServer>,
    ) -> (ResumeAction, Option<Value>) {
        let interaction = &paused.structured["interaction"];
        let message = interaction["message"]
            .as_str()
            .unwrap_or(&paused.text)
            .to_owned();
        let params = match interaction["url"].as_str() {
            // A downstream server sends the person to a URL: in URL mode when the client has
            // it, else as a form that shows the URL.
            Some(url)
                if peer
                    .supported_elicitation_modes()
                    .contains(&rmcp::service::ElicitationMode::Url) =>
            {
                serde_json::from_value(json!({
                    "mode": "url",
                    "message": message,
                    "url": url,
                    "elicitationId": format!("{}-{}", paused.execution_id, rand::random::<u32>()),
                }))
            }
            Some(url) => serde_json::from_value(json!({
                "mode": "form",
                "message": format!("Please visit this URL to continue: {url}\n\n{message}"),
                "requestedSchema": {"type": "object", "properties": {}},
            })),
            // An approval ({}), or the form a downstream server asks for.
            None => serde_json::from_value(json!({
                "mode": "form",
                "message": message,
                "requestedSchema": interaction
                    .get("requestedSchema")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            })),
        };
        let params = match params {
            Ok(params) => params,
            Err(e) => {
                tracing::error!(error = %e, "building the elicitation request failed");
                return (ResumeAction::Cancel, None);
            }
        };
        let guard = CancelPauseOnDrop {
            engine: self.engine.clone(),
            caller: caller.clone(),
            execution_id: Some(paused.execution_id.clone()),
        };
        let answer = peer.create_elicitation(params).await;
        guard.disarm();
        match answer {
            Ok(result) => {
                let action = match result.action {
                    ElicitationAction::Accept => ResumeAction::Accept,
                    ElicitationAction::Decline => ResumeAction::Decline,
                    _ => ResumeAction::Cancel,
                };
                let content = result
                    .content
                    .filter(|c| c.as_object().is_some_and(|o| !o.is_empty()));
                (action, content)
            }
            Err(e) => {
                tracing::info!(error = %e, execution_id = %paused.execution_id, "elicitation failed; cancelling the paused call");
                (ResumeAction::Cancel, None)
            }
        }
    }

    async fn resume(
        &self,
        args: &Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let Some(id) = args
            .get("executionId")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            let message =
                "`executionId` is required: pass the executionId from the paused execute result.";
            return error_result(
                format!("Error: {message}"),
                json!({"status": "error", "error": message}),
            );
        };
        if self.mode(context) == ElicitationMode::Browser {
            return self.wait_for_browser(id, context).await;
        }
        let action = args.get("action").and_then(Value::as_str).unwrap_or("");
        let Some(action) = ResumeAction::parse(action) else {
            let message =
                format!("`action` must be \"accept\", \"decline\" or \"cancel\" (got {action:?}).");
            return error_result(
                format!("Error: {message}"),
                json!({"status": "error", "error": message}),
            );
        };
        let content = match args.get("content") {
            Some(Value::String(raw)) => serde_json::from_str::<Value>(raw)
                .ok()
                .filter(|v| v.as_object().is_some_and(|o| !o.is_empty())),
            Some(Value::Object(o)) if !o.is_empty() => Some(Value::Object(o.clone())),
            _ => None,
        };
        let outcome = self
            .engine
            .resume(&self.caller(context), id, action, content)
            .await;
        self.present(outcome, context).await
    }

    /// Browser mode: waits until the person answered on the approval page.
    async fn wait_for_browser(
        &self,
        id: &str,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let caller = self.caller(context);
        let initial = match self.engine.paused_execution(&caller, id).await {
            Ok(paused) => Some(paused.structured),
            Err(EngineError::ExecutionNotFound { .. }) => None,
            Err(e) => return engine_error(e),
        };
        let deadline = tokio::time::Instant::now() + BROWSER_WAIT;
        let mut misses = 0;
        loop {
            match self.engine.paused_execution(&caller, id).await {
                Ok(paused) if Some(&paused.structured) != initial.as_ref() => {
                    return self
                        .present(Ok(ExecutionOutcome::Paused(paused)), context)
                        .await;
                }
                Ok(_) => misses = 0,
                Err(EngineError::ExecutionNotFound { .. }) => {
                    // Not paused: settled (replayed below) or still running after the answer.
                    // Two misses in a row so a pause being handed to its next interaction is not
                    // mistaken for the end.
                    misses += 1;
                    if misses >= 2 {
                        match self
                            .engine
                            .resume(&caller, id, ResumeAction::Cancel, None)
                            .await
                        {
                            Ok(ExecutionOutcome::Completed(done)) => return completed_result(done),
                            Ok(other) => return self.present(Ok(other), context).await,
                            Err(EngineError::ExecutionNotFound { .. }) if initial.is_none() => {
                                return not_found(id);
                            }
                            Err(EngineError::ExecutionNotFound { .. }) => {}
                            Err(e) => return engine_error(e),
                        }
                    }
                }
                Err(e) => return engine_error(e),
            }
            if tokio::time::Instant::now() >= deadline {
                let message = format!(
                    "The user has not answered yet. Ask them to open the approval URL, then call resume({{ executionId: \"{id}\" }}) again."
                );
                return error_result(
                    message.clone(),
                    json!({"status": "user_approval_pending", "executionId": id, "error": message}),
                );
            }
            tokio::select! {
                _ = tokio::time::sleep(BROWSER_POLL) => {}
                _ = context.ct.cancelled() => return error_result("Cancelled.".to_owned(), json!({"status": "cancelled"})),
            }
        }
    }

    fn skills(&self, args: &Map<String, Value>, slugs: Vec<String>) -> CallToolResult {
        match args.get("name").and_then(Value::as_str).map(str::trim) {
            None | Some("") => text_result(skills::index(), false),
            Some(skills::EXECUTE_SKILL) => text_result(skills::execute_skill(&slugs), false),
            Some(other) => text_result(
                format!("{}\n\nNo skill named \"{other}\".", skills::index()),
                true,
            ),
        }
    }

    /// Forwards catalog changes as `notifications/tools/list_changed` while this instance lives.
    fn forward_list_changed(&self, peer: Peer<RoleServer>) {
        let mut changes = self.engine.subscribe_catalog_changes();
        let alive = self.alive.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = alive.cancelled() => return,
                    change = changes.recv() => match change {
                        Ok(()) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    },
                }
                if peer.is_transport_closed() {
                    return;
                }
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!(error = %e, "could not send tools/list_changed");
                    if peer.is_transport_closed() {
                        return;
                    }
                }
            }
        });
    }
}

/// What every Executor MCP server (HTTP, stdio, the stdio bridge) announces: tools, with
/// `listChanged`.
pub fn server_config() -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build(),
    )
    .with_server_info(Implementation::new(SERVER_NAME, SERVER_VERSION))
}

impl ServerHandler for ExecutorMcp {
    fn get_info(&self) -> ServerConfig {
        server_config()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        let mode = self.mode(&context);
        let _ = self.mode.set(mode);
        if let Some(origin) = Self::request_parts(&context.extensions).and_then(origin_of) {
            let _ = self.origin.set(origin);
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.forward_list_changed(context.peer);
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mode = self.mode(&context);
        Ok(ListToolsResult::with_all_items(
            self.tools(&self.caller(&context), mode, &context.peer)
                .await,
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "execute" => self.execute(&args, &context).await,
            "skills" => self.skills(&args, self.connected_slugs(&self.caller(&context)).await),
            "resume" => {
                let mode = self.mode(&context);
                if mode == ElicitationMode::Native && can_elicit(&context.peer) {
                    return Err(ErrorData::invalid_params("Unknown tool: resume", None));
                }
                self.resume(&args, &context).await
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown tool: {other}"),
                    None,
                ));
            }
        };
        Ok(result.into())
    }
}

/// Cancels a pause whose elicitation was abandoned (the request future dropped).
struct CancelPauseOnDrop {
    engine: Engine,
    caller: Caller,
    execution_id: Option<String>,
}

impl CancelPauseOnDrop {
    fn disarm(mut self) {
        self.execution_id = None;
    }
}

impl Drop for CancelPauseOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.execution_id.take() else {
            return;
        };
        let engine = self.engine.clone();
        let caller = self.caller.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                tracing::info!(execution_id = %id, "MCP client went away during an approval; cancelling");
                let _ = engine.resume(&caller, &id, ResumeAction::Cancel, None).await;
            });
        }
    }
}

/// Whether the client can be asked with `elicitation/create` (a form, on a protocol that still
/// allows server-to-client requests).
fn can_elicit(peer: &Peer<RoleServer>) -> bool {
    let Some(info) = peer.peer_info() else {
        return false;
    };
    info.protocol_version.as_str() < ProtocolVersion::V_2026_07_28.as_str()
        && peer
            .supported_elicitation_modes()
            .contains(&rmcp::service::ElicitationMode::Form)
}

fn origin_of(parts: &http::request::Parts) -> Option<String> {
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| parts.uri.authority().map(|a| a.to_string()))?;
    Some(format!("http://{host}"))
}

fn tool(value: Value) -> Tool {
    serde_json::from_value(value).expect("static tool definition")
}

fn text_result(text: String, is_error: bool) -> CallToolResult {
    let mut result = CallToolResult::success(vec![rmcp::model::ContentBlock::text(text)]);
    if is_error {
        result.is_error = Some(true);
    }
    result
}

fn with_structured(mut result: CallToolResult, structured: Value) -> CallToolResult {
    result.structured_content = Some(structured);
    result
}

fn error_result(text: String, structured: Value) -> CallToolResult {
    with_structured(text_result(text, true), structured)
}

fn completed_result(completed: Completed) -> CallToolResult {
    if completed.content.is_empty() {
        return with_structured(
            text_result(completed.text, completed.is_error),
            completed.structured,
        );
    }
    // Emitted output reaches the agent as the blocks it is (images as images, files decoded).
    let blocks = completed
        .content
        .into_iter()
        .map(|block| {
            serde_json::from_value::<rmcp::model::ContentBlock>(block.clone())
                .unwrap_or_else(|_| rmcp::model::ContentBlock::text(block.to_string()))
        })
        .collect();
    let mut result = CallToolResult::success(blocks);
    if completed.is_error {
        result.is_error = Some(true);
    }
    with_structured(result, completed.structured)
}

fn paused_result(paused: Paused) -> CallToolResult {
    with_structured(text_result(paused.text, false), paused.structured)
}

/// The `Mcp-Session-Id` the request came on (none for stateless requests).
fn session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    ExecutorMcp::request_parts(&context.extensions)?
        .headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
        .map(str::to_owned)
}

/// The approval link names the session (spec §4): the page answers the pause through it, under
/// the rules of the endpoint that made it (a toolkit's pause is not the global API's to answer).
fn browser_paused(paused: &Paused, origin: &str, session: Option<&str>) -> CallToolResult {
    let id = &paused.execution_id;
    let approval_url = match session {
        Some(sid) => format!(
            "{origin}/resume/{id}?mcp_session_id={}",
            url::form_urlencoded::byte_serialize(sid.as_bytes()).collect::<String>()
        ),
        None => format!("{origin}/resume/{id}"),
    };
    let resume_prompt = format!("resume({{ executionId: \"{id}\" }})");
    let message = paused.structured["interaction"]["message"]
        .as_str()
        .unwrap_or("");
    let text = format!(
        "User approval required.\n\nTell the user to open this URL while signed in and approve or decline the paused interaction:\n{approval_url}\n\nRequired next steps for this agent:\n1. Show the user the URL above (and what is being approved: {message}).\n2. Then call {resume_prompt}; it waits for the user's decision and returns the result.\nexecutionId: {id}"
    );
    with_structured(
        text_result(text, false),
        json!({
            "status": "user_approval_required",
            "executionId": id,
            "approvalUrl": approval_url,
            "resumePrompt": resume_prompt,
        }),
    )
}

fn not_found(id: &str) -> CallToolResult {
    error_result(
        format!(
            "Paused execution is unknown: {id}. It may have been answered already, or the server restarted and lost it. To recover, run the execute tool again with the same code."
        ),
        json!({"status": "execution_not_found", "executionId": id, "recovery": "re_execute"}),
    )
}

fn engine_error(e: EngineError) -> CallToolResult {
    match e {
        EngineError::ExecutionNotFound { execution_id } => not_found(&execution_id),
        EngineError::Internal(cause) => {
            let id = format!("{:08x}", rand::random::<u32>());
            tracing::error!(correlation_id = %id, %cause, "MCP tool call failed");
            let message = format!("Internal tool error [{id}]");
            error_result(
                format!("Error: {message}"),
                json!({"status": "error", "error": message}),
            )
        }
        other => {
            let message = other.to_string();
            error_result(
                format!("Error: {message}"),
                json!({"status": "error", "error": message}),
            )
        }
    }
}
