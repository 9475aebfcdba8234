//! Real MCP fixture servers for integration tests (feature `testing`).
//!
//! * [`serve_stateful`]: an rmcp streamable-HTTP server (`StreamableHttpService` + `LocalSessionManager`,
//!   mounted in axum on `127.0.0.1:0`). Each MCP session gets its own [`StatefulHandler`] holding
//!   `selected: Option<String>` — the shape of Render's workspace selection. An axum middleware keeps a
//!   request ledger (HTTP method, `Mcp-Session-Id`, JSON-RPC method, status), and
//!   [`StatefulMcpServer::forget_sessions`] makes the server forget every session (old ids → 404).
//! * [`serve_legacy_sse`]: the same tools behind a legacy (2024-11-05) HTTP+SSE endpoint
//!   ([`serve_legacy_sse_requiring_scope`]: one tool's calls refused with 403 `insufficient_scope`).
//! * [`serve_many_tools`]: a stateless streamable-HTTP server with `n` tools in one `tools/list` page
//!   (catalog-size benchmarks).
//! * [`serve_mutable`]: a streamable-HTTP server whose tool definitions a test changes between
//!   listings (a "rug pull").
//! * [`serve_eliciting`]: a streamable-HTTP server whose tools ask the client with
//!   `elicitation/create` while they run ([`eliciting_tools`]), recording every answer it got.
//!
//! Tools: `select_workspace {workspace?}`, `get_workspace`, `slow {ms}`, `fail` (isError),
//! `typed` (outputSchema + structuredContent), `delete_everything` (destructiveHint),
//! `Weird Name!` (sanitised to `weird_name`), `change_tools` (sends `notifications/tools/list_changed`).
//! `tools/list` is paginated, 3 tools per page.

use std::collections::{BTreeSet, HashMap};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::StreamExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientJsonRpcMessage, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    ServerJsonRpcMessage, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Tools per `tools/list` page.
pub const PAGE_SIZE: usize = 3;

/// Per-session fixture handler.
#[derive(Clone, Default)]
pub struct StatefulHandler {
    selected: Arc<Mutex<Option<String>>>,
}

fn tool(value: Value) -> Tool {
    serde_json::from_value(value).expect("fixture tool")
}

/// The fixture's tool list.
pub fn fixture_tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    vec![
        tool(
            json!({"name": "select_workspace", "description": "Selects the workspace for this MCP session",
            "inputSchema": {"type": "object", "properties": {"workspace": {"type": "string"}}}}),
        ),
        tool(
            json!({"name": "get_workspace", "description": "Returns the workspace selected earlier in this MCP session",
            "inputSchema": empty}),
        ),
        tool(
            json!({"name": "slow", "description": "Sleeps for ms milliseconds",
            "inputSchema": {"type": "object", "properties": {"ms": {"type": "number"}}}}),
        ),
        tool(
            json!({"name": "fail", "description": "Always returns an error result", "inputSchema": empty}),
        ),
        tool(
            json!({"name": "typed", "description": "Returns structured content",
            "inputSchema": empty,
            "outputSchema": {"type": "object", "properties": {"count": {"type": "number"}}, "required": ["count"]}}),
        ),
        tool(json!({"name": "delete_everything", "inputSchema": empty,
            "annotations": {"title": "Delete everything", "destructiveHint": true}})),
        tool(
            json!({"name": "Weird Name!", "description": "A tool whose name needs sanitising", "inputSchema": empty}),
        ),
        tool(
            json!({"name": "change_tools", "description": "Announces a tool list change", "inputSchema": empty}),
        ),
    ]
}

fn text_result(text: impl Into<String>, is_error: bool) -> CallToolResult {
    serde_json::from_value(json!({
        "content": [{"type": "text", "text": text.into()}],
        "isError": is_error,
    }))
    .expect("fixture result")
}

impl ServerHandler for StatefulHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("session-stateful-test-server", "1.0.0"))
        .with_instructions("Select a workspace first.")
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let all = fixture_tools();
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let end = (start + PAGE_SIZE).min(all.len());
        let mut result = ListToolsResult::with_all_items(all[start.min(end)..end].to_vec());
        result.next_cursor = (end < all.len()).then(|| end.to_string());
        Ok(result)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let result = match request.name.as_ref() {
            "select_workspace" => {
                let ws = args
                    .get("workspace")
                    .and_then(Value::as_str)
                    .unwrap_or("ws-e2e")
                    .to_owned();
                *self.selected.lock().unwrap() = Some(ws.clone());
                text_result(format!("selected:{ws}"), false)
            }
            "get_workspace" => match self.selected.lock().unwrap().clone() {
                Some(ws) => text_result(format!("workspace:{ws}"), false),
                None => text_result("no workspace selected", false),
            },
            "slow" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(50);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                text_result(format!("slept:{ms}"), false)
            }
            "fail" => text_result("something went wrong", true),
            "typed" => serde_json::from_value(json!({
                "content": [{"type": "text", "text": "{\"count\":3}"}],
                "structuredContent": {"count": 3},
            }))
            .expect("typed result"),
            "delete_everything" => text_result("deleted", false),
            "Weird Name!" => text_result("weird", false),
            "change_tools" => {
                let _ = context.peer.notify_tool_list_changed().await;
                text_result("changed", false)
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

/// One request seen by a fixture server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LedgerEntry {
    /// HTTP method (`POST`, `GET`, `DELETE`).
    pub method: String,
    /// `Mcp-Session-Id` request header (or the legacy SSE `sessionId` query parameter).
    pub session_id: Option<String>,
    /// JSON-RPC method of a POSTed request/notification (`"response"` for client responses).
    pub rpc_method: Option<String>,
    /// HTTP response status.
    pub status: u16,
    /// Request path and query.
    pub uri: String,
    /// `Authorization` request header.
    pub authorization: Option<String>,
}

/// Shared request ledger.
#[derive(Clone, Default)]
pub struct Ledger(Arc<Mutex<Vec<LedgerEntry>>>);

impl Ledger {
    pub fn entries(&self) -> Vec<LedgerEntry> {
        self.0.lock().unwrap().clone()
    }
    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
    /// Distinct session ids carried by requests.
    pub fn session_ids(&self) -> BTreeSet<String> {
        self.entries()
            .into_iter()
            .filter_map(|e| e.session_id)
            .collect()
    }
    /// Session ids of successful `tools/call` POSTs.
    pub fn call_session_ids(&self) -> BTreeSet<String> {
        self.entries()
            .into_iter()
            .filter(|e| e.rpc_method.as_deref() == Some("tools/call") && e.status < 300)
            .filter_map(|e| e.session_id)
            .collect()
    }
    /// Number of `initialize` requests (= sessions dialled).
    pub fn initialize_count(&self) -> usize {
        self.entries()
            .iter()
            .filter(|e| e.rpc_method.as_deref() == Some("initialize"))
            .count()
    }
    /// Session ids that received a DELETE.
    pub fn deleted_session_ids(&self) -> BTreeSet<String> {
        self.entries()
            .into_iter()
            .filter(|e| e.method == "DELETE")
            .filter_map(|e| e.session_id)
            .collect()
    }
    fn push(&self, entry: LedgerEntry) {
        self.0.lock().unwrap().push(entry);
    }
}

async fn ledger_middleware(State(ledger): State<Ledger>, request: Request, next: Next) -> Response {
    let method = request.method().to_string();
    let uri = request.uri().to_string();
    let authorization = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut session_id = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if session_id.is_none() {
        session_id = request.uri().query().and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "sessionId")
                .map(|(_, v)| v.into_owned())
        });
    }
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let rpc_method = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| {
        v.get("method")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| {
                (v.get("result").is_some() || v.get("error").is_some())
                    .then(|| "response".to_owned())
            })
    });
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    ledger.push(LedgerEntry {
        method,
        session_id,
        rpc_method,
        status: response.status().as_u16(),
        uri,
        authorization,
    });
    response
}

async fn bind() -> (tokio::net::TcpListener, SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    (listener, addr)
}

fn spawn_server(
    listener: tokio::net::TcpListener,
    router: Router,
    cancel: CancellationToken,
) -> Arc<AtomicUsize> {
    spawn_server_with(listener, router, cancel, true)
}

/// Serve `router`; returns the count of TCP connections accepted so far.
fn spawn_server_with(
    listener: tokio::net::TcpListener,
    router: Router,
    cancel: CancellationToken,
    nodelay: bool,
) -> Arc<AtomicUsize> {
    use axum::serve::ListenerExt;
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    // Like any well-behaved MCP server: small SSE writes must not wait on Nagle. (`nodelay: false`
    // imitates servers that leave Nagle on, for latency regression tests.)
    let listener = listener.tap_io(move |tcp| {
        counter.fetch_add(1, Ordering::SeqCst);
        if nodelay {
            let _ = tcp.set_nodelay(true);
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async move { cancel.cancelled_owned().await })
            .await;
    });
    accepted
}

/// The session-stateful streamable-HTTP fixture. Stops when dropped.
pub struct StatefulMcpServer {
    /// `http://127.0.0.1:<port>/mcp`
    pub url: String,
    pub addr: SocketAddr,
    pub ledger: Ledger,
    /// Elicitation results the server received ([`serve_eliciting`] only).
    pub elicited: ElicitLog,
    sessions: Arc<LocalSessionManager>,
    accepted: Arc<AtomicUsize>,
    cancel: CancellationToken,
}

impl StatefulMcpServer {
    /// TCP connections the server has accepted.
    pub fn connections_accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
    /// Forget every session: requests carrying an old `Mcp-Session-Id` now get HTTP 404.
    pub async fn forget_sessions(&self) {
        self.sessions.sessions.write().await.clear();
    }
    /// Sessions the server currently holds.
    pub async fn live_sessions(&self) -> usize {
        self.sessions.sessions.read().await.len()
    }
    pub fn requests(&self) -> Vec<LedgerEntry> {
        self.ledger.entries()
    }
    pub fn clear_requests(&self) {
        self.ledger.clear();
    }
}

impl Drop for StatefulMcpServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Start the session-stateful streamable-HTTP fixture on `127.0.0.1:0` (TCP_NODELAY on accepted
/// sockets).
pub async fn serve_stateful() -> StatefulMcpServer {
    serve_stateful_with(true).await
}

/// [`serve_stateful`], choosing whether accepted sockets get TCP_NODELAY. `false` imitates upstream
/// servers that leave Nagle's algorithm on.
pub async fn serve_stateful_with(nodelay: bool) -> StatefulMcpServer {
    let cancel = CancellationToken::new();
    let sessions = Arc::new(LocalSessionManager::default());
    let service: StreamableHttpService<StatefulHandler, LocalSessionManager> =
        StreamableHttpService::new(
            || Ok(StatefulHandler::default()),
            sessions.clone(),
            StreamableHttpServerConfig::default()
                .with_sse_keep_alive(None)
                .with_cancellation_token(cancel.child_token()),
        );
    let ledger = Ledger::default();
    let router = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(
            ledger.clone(),
            ledger_middleware,
        ));
    let (listener, addr) = bind().await;
    let accepted = spawn_server_with(listener, router, cancel.clone(), nodelay);
    StatefulMcpServer {
        url: format!("http://{addr}/mcp"),
        addr,
        ledger,
        elicited: ElicitLog::default(),
        sessions,
        accepted,
        cancel,
    }
}

type Inbox = futures::channel::mpsc::UnboundedSender<ClientJsonRpcMessage>;

#[derive(Clone, Default)]
struct SseState {
    inboxes: Arc<Mutex<HashMap<String, Inbox>>>,
    next: Arc<AtomicU64>,
}

/// The legacy HTTP+SSE fixture (`GET /sse`, `POST /message?sessionId=…`). Stops when dropped.
pub struct LegacySseServer {
    /// `http://127.0.0.1:<port>/sse`
    pub url: String,
    pub addr: SocketAddr,
    pub ledger: Ledger,
    state: SseState,
    cancel: CancellationToken,
}

impl LegacySseServer {
    /// Open SSE streams whose server session is still running.
    pub fn live_sessions(&self) -> usize {
        let mut inboxes = self.state.inboxes.lock().unwrap();
        inboxes.retain(|_, tx| !tx.is_closed());
        inboxes.len()
    }
}

impl Drop for LegacySseServer {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

struct InboxGuard {
    state: SseState,
    id: String,
}

impl Drop for InboxGuard {
    fn drop(&mut self) {
        self.state.inboxes.lock().unwrap().remove(&self.id);
    }
}

async fn sse_get(State(state): State<SseState>) -> Response {
    let id = format!("sse-{}", state.next.fetch_add(1, Ordering::SeqCst));
    let (in_tx, in_rx) = futures::channel::mpsc::unbounded::<ClientJsonRpcMessage>();
    let (out_tx, out_rx) = futures::channel::mpsc::unbounded::<ServerJsonRpcMessage>();
    state.inboxes.lock().unwrap().insert(id.clone(), in_tx);
    tokio::spawn(async move {
        if let Ok(running) = StatefulHandler::default().serve((out_tx, in_rx)).await {
            let _ = running.waiting().await;
        }
    });
    let endpoint = futures::stream::once(futures::future::ready(Ok::<_, Infallible>(
        Event::default()
            .event("endpoint")
            .data(format!("/message?sessionId={id}")),
    )));
    // Dropping the response stream (client went away) removes the inbox, which ends the session.
    let guard = InboxGuard {
        state: state.clone(),
        id,
    };
    let messages = out_rx.map(move |msg| {
        let _keep = &guard;
        Ok::<_, Infallible>(
            Event::default()
                .event("message")
                .data(serde_json::to_string(&msg).unwrap_or_default()),
        )
    });
    Sse::new(endpoint.chain(messages)).into_response()
}

async fn sse_post(
    State(state): State<SseState>,
    Query(query): Query<HashMap<String, String>>,
    body: axum::body::Bytes,
) -> Response {
    let Some(id) = query.get("sessionId") else {
        return (StatusCode::BAD_REQUEST, "missing sessionId").into_response();
    };
    let Some(inbox) = state.inboxes.lock().unwrap().get(id).cloned() else {
        return (StatusCode::NOT_FOUND, "unknown session").into_response();
    };
    let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(&body) else {
        return (StatusCode::BAD_REQUEST, "invalid JSON-RPC").into_response();
    };
    if inbox.unbounded_send(message).is_err() {
        return (StatusCode::NOT_FOUND, "session closed").into_response();
    }
    StatusCode::ACCEPTED.into_response()
}

/// Start the legacy HTTP+SSE fixture on `127.0.0.1:0` (TCP_NODELAY on accepted sockets).
pub async fn serve_legacy_sse() -> LegacySseServer {
    serve_legacy_sse_with(true).await
}

/// [`serve_legacy_sse`], choosing whether accepted sockets get TCP_NODELAY.
pub async fn serve_legacy_sse_with(nodelay: bool) -> LegacySseServer {
    legacy_sse(nodelay, None).await
}

/// [`serve_legacy_sse`] where a `tools/call` of `tool` is refused with HTTP 403 and the RFC 6750
/// challenge `Bearer error="insufficient_scope", scope="<scope>"` (a token lacking a scope).
pub async fn serve_legacy_sse_requiring_scope(
    tool: &'static str,
    scope: &'static str,
) -> LegacySseServer {
    legacy_sse(true, Some((tool, scope))).await
}

/// Refuses `tools/call` of the guarded tool with 403 `insufficient_scope`.
async fn scope_guard(
    State((tool, scope)): State<(&'static str, &'static str)>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, 64 * 1024 * 1024)
        .await
        .unwrap_or_default();
    let rpc: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if rpc["method"] == "tools/call" && rpc["params"]["name"] == tool {
        let mut response = Response::new(Body::from("insufficient scope"));
        *response.status_mut() = StatusCode::FORBIDDEN;
        if let Ok(challenge) = axum::http::HeaderValue::from_str(&format!(
            r#"Bearer error="insufficient_scope", scope="{scope}""#
        )) {
            response
                .headers_mut()
                .insert(axum::http::header::WWW_AUTHENTICATE, challenge);
        }
        return response;
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

async fn legacy_sse(nodelay: bool, guard: Option<(&'static str, &'static str)>) -> LegacySseServer {
    let cancel = CancellationToken::new();
    let state = SseState::default();
    let ledger = Ledger::default();
    let mut router = Router::new()
        .route("/sse", get(sse_get))
        .route("/message", axum::routing::post(sse_post))
        .with_state(state.clone());
    if let Some(guard) = guard {
        router = router.layer(middleware::from_fn_with_state(guard, scope_guard));
    }
    let router = router.layer(middleware::from_fn_with_state(
        ledger.clone(),
        ledger_middleware,
    ));
    let (listener, addr) = bind().await;
    let _ = spawn_server_with(listener, router, cancel.clone(), nodelay);
    LegacySseServer {
        url: format!("http://{addr}/sse"),
        addr,
        ledger,
        state,
        cancel,
    }
}

/// A plain HTTP server answering every request with `status` and `body` (auth walls, non-MCP URLs).
pub async fn serve_static(
    status: u16,
    content_type: &'static str,
    body: &'static str,
) -> (String, CancellationToken) {
    let cancel = CancellationToken::new();
    let router = Router::new().fallback(move || async move {
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
        response.headers_mut().insert(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static(content_type),
        );
        response
    });
    let (listener, addr) = bind().await;
    let _ = spawn_server(listener, router, cancel.clone());
    (format!("http://{addr}/mcp"), cancel)
}

/// Handler of [`serve_many_tools`]: `n` stateless tools, all listed in one `tools/list` page.
#[derive(Clone)]
pub struct ManyToolsHandler {
    tools: Arc<Vec<Tool>>,
}

/// `n` tools shaped like a large real catalog: `op_0000` … with a sentence of description and a
/// small object schema (`id` string, `limit` number, `verbose` boolean; `id` required).
pub fn many_tools(n: usize) -> Vec<Tool> {
    (0..n)
        .map(|i| {
            tool(json!({
                "name": format!("op_{i:04}"),
                "description": format!("Operation number {i} of the large catalog: reads or updates resource group {} by id", i % 97),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "Resource id"},
                        "limit": {"type": "number", "description": "Maximum items to return"},
                        "verbose": {"type": "boolean"}
                    },
                    "required": ["id"]
                }
            }))
        })
        .collect()
}

impl ServerHandler for ManyToolsHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("many-tools-test-server", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if !self.tools.iter().any(|t| t.name == request.name) {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {}", request.name),
                None,
            ));
        }
        Ok(text_result(format!("ok:{}", request.name), false).into())
    }
}

/// A streamable-HTTP MCP server with `n` tools ([`many_tools`]), on `127.0.0.1:0`. Stops when
/// dropped. For catalog-size benchmarks and tests.
pub async fn serve_many_tools(n: usize) -> StatefulMcpServer {
    let cancel = CancellationToken::new();
    let sessions = Arc::new(LocalSessionManager::default());
    let tools = Arc::new(many_tools(n));
    let service: StreamableHttpService<ManyToolsHandler, LocalSessionManager> =
        StreamableHttpService::new(
            move || {
                Ok(ManyToolsHandler {
                    tools: tools.clone(),
                })
            },
            sessions.clone(),
            StreamableHttpServerConfig::default()
                .with_sse_keep_alive(None)
                .with_cancellation_token(cancel.child_token()),
        );
    let ledger = Ledger::default();
    let router = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(
            ledger.clone(),
            ledger_middleware,
        ));
    let (listener, addr) = bind().await;
    let accepted = spawn_server(listener, router, cancel.clone());
    StatefulMcpServer {
        url: format!("http://{addr}/mcp"),
        addr,
        ledger,
        elicited: ElicitLog::default(),
        sessions,
        accepted,
        cancel,
    }
}

/// Elicitation results a fixture server received, in order: `{tool, action, content?}` (or
/// `{tool, error}` when the request failed).
#[derive(Clone, Default)]
pub struct ElicitLog(Arc<Mutex<Vec<Value>>>);

impl ElicitLog {
    pub fn entries(&self) -> Vec<Value> {
        self.0.lock().unwrap().clone()
    }
    pub fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
    fn push(&self, entry: Value) {
        self.0.lock().unwrap().push(entry);
    }
}

/// The requested schema of `confirm_delete`.
pub fn confirm_delete_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "confirm": {"type": "boolean", "description": "Really delete it?"},
            "reason": {"type": "string", "description": "Why"}
        },
        "required": ["confirm", "reason"]
    })
}

/// Tools of [`serve_eliciting`]:
/// * `confirm_delete {item}` asks (form) for `{confirm: boolean, reason: string}` and answers with
///   text `{"action":"accept","content":{…}}` (what it got), `declined` or `cancelled`;
/// * `acknowledge` asks with a form of no properties → `acknowledged:<action>`;
/// * `open_link` asks in URL mode → `link:<action>`;
/// * `two_questions` asks twice in a row (`{first}`, then `{second}`) → `first=<…>,second=<…>`;
/// * `plain` asks nothing → `plain`.
pub fn eliciting_tools() -> Vec<Tool> {
    let empty = json!({"type": "object", "properties": {}});
    vec![
        tool(
            json!({"name": "confirm_delete", "description": "Deletes an item after asking the user to confirm",
            "inputSchema": {"type": "object", "properties": {"item": {"type": "string"}}}}),
        ),
        tool(
            json!({"name": "acknowledge", "description": "Asks the user to acknowledge", "inputSchema": empty}),
        ),
        tool(
            json!({"name": "open_link", "description": "Sends the user to a URL", "inputSchema": empty}),
        ),
        tool(
            json!({"name": "two_questions", "description": "Asks the user two questions", "inputSchema": empty}),
        ),
        tool(json!({"name": "plain", "description": "Asks nothing", "inputSchema": empty})),
    ]
}

/// Per-session handler of [`serve_eliciting`].
#[derive(Clone)]
pub struct ElicitingHandler {
    log: ElicitLog,
    links: Arc<AtomicU64>,
}

impl ElicitingHandler {
    async fn ask(
        &self,
        tool: &str,
        peer: &rmcp::Peer<RoleServer>,
        params: Value,
    ) -> Result<rmcp::model::ElicitResult, String> {
        let params: rmcp::model::ElicitRequestParams =
            serde_json::from_value(params).expect("fixture elicitation");
        match peer.create_elicitation(params).await {
            Ok(result) => {
                let mut entry = json!({"tool": tool, "action": serde_json::to_value(&result.action).unwrap_or(Value::Null)});
                if let Some(content) = &result.content {
                    entry["content"] = content.clone();
                }
                self.log.push(entry);
                Ok(result)
            }
            Err(e) => {
                self.log.push(json!({"tool": tool, "error": e.to_string()}));
                Err(e.to_string())
            }
        }
    }
}

fn action_name(result: &rmcp::model::ElicitResult) -> String {
    serde_json::to_value(&result.action)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

impl ServerHandler for ElicitingHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("eliciting-test-server", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(eliciting_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let peer = &context.peer;
        let name = request.name.as_ref();
        let result = match name {
            "confirm_delete" => {
                let item = args.get("item").and_then(Value::as_str).unwrap_or("it");
                let asked = self
                    .ask(
                        name,
                        peer,
                        json!({"mode": "form", "message": format!("Delete {item}? Confirm and give a reason."),
                            "requestedSchema": confirm_delete_schema()}),
                    )
                    .await;
                match asked {
                    Ok(r) if action_name(&r) == "accept" => text_result(
                        json!({"action": "accept", "content": r.content}).to_string(),
                        false,
                    ),
                    Ok(r) if action_name(&r) == "decline" => text_result("declined", false),
                    Ok(_) => text_result("cancelled", false),
                    Err(e) => text_result(format!("elicitation failed: {e}"), true),
                }
            }
            "acknowledge" => {
                let asked = self
                    .ask(
                        name,
                        peer,
                        json!({"mode": "form", "message": "Please acknowledge.",
                            "requestedSchema": {"type": "object", "properties": {}}}),
                    )
                    .await;
                match asked {
                    Ok(r) => text_result(format!("acknowledged:{}", action_name(&r)), false),
                    Err(e) => text_result(format!("elicitation failed: {e}"), true),
                }
            }
            "open_link" => {
                let n = self.links.fetch_add(1, Ordering::SeqCst);
                let asked = self
                    .ask(
                        name,
                        peer,
                        json!({"mode": "url", "message": "Sign in to continue.",
                            "url": format!("https://auth.example/link/{n}"), "elicitationId": format!("link-{n}")}),
                    )
                    .await;
                match asked {
                    Ok(r) => text_result(format!("link:{}", action_name(&r)), false),
                    Err(e) => text_result(format!("elicitation failed: {e}"), true),
                }
            }
            "two_questions" => {
                let mut answers = Vec::new();
                for key in ["first", "second"] {
                    let asked = self
                        .ask(
                            name,
                            peer,
                            json!({"mode": "form", "message": format!("The {key} question?"),
                                "requestedSchema": {"type": "object", "properties": {key: {"type": "string"}}, "required": [key]}}),
                        )
                        .await;
                    let answer = match asked {
                        Ok(r) => r
                            .content
                            .as_ref()
                            .and_then(|c| c.get(key))
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .unwrap_or_else(|| action_name(&r)),
                        Err(e) => format!("error {e}"),
                    };
                    answers.push(format!("{key}={answer}"));
                }
                text_result(answers.join(","), false)
            }
            "plain" => text_result("plain", false),
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

/// A streamable-HTTP MCP server whose tools elicit ([`eliciting_tools`]), on `127.0.0.1:0`. The
/// answers it receives are in [`StatefulMcpServer::elicited`]. Stops when dropped.
pub async fn serve_eliciting() -> StatefulMcpServer {
    let cancel = CancellationToken::new();
    let sessions = Arc::new(LocalSessionManager::default());
    let log = ElicitLog::default();
    let links = Arc::new(AtomicU64::new(0));
    let handler_log = log.clone();
    let service: StreamableHttpService<ElicitingHandler, LocalSessionManager> =
        StreamableHttpService::new(
            move || {
                Ok(ElicitingHandler {
                    log: handler_log.clone(),
                    links: links.clone(),
                })
            },
            sessions.clone(),
            StreamableHttpServerConfig::default()
                .with_sse_keep_alive(None)
                .with_cancellation_token(cancel.child_token()),
        );
    let ledger = Ledger::default();
    let router = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(
            ledger.clone(),
            ledger_middleware,
        ));
    let (listener, addr) = bind().await;
    let accepted = spawn_server(listener, router, cancel.clone());
    StatefulMcpServer {
        url: format!("http://{addr}/mcp"),
        addr,
        ledger,
        elicited: log,
        sessions,
        accepted,
        cancel,
    }
}

/// Per-session handler of [`serve_capable`]: like `server-everything`, it lists some tools only
/// to clients that declared the capability they need.
#[derive(Clone, Default)]
pub struct CapableHandler;

/// The requested schema of `ask_with_defaults` (SEP-1034 defaults on every property).
pub fn defaults_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "Ada"},
            "count": {"type": "integer", "default": 3},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
            "note": {"type": "string"}
        }
    })
}

impl ServerHandler for CapableHandler {
    fn get_info(&self) -> ServerConfig {
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("capable-test-server", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caps = context
            .peer
            .peer_info()
            .map(|info| info.capabilities.clone())
            .unwrap_or_default();
        let empty = json!({"type": "object", "properties": {}});
        let mut tools = vec![
            tool(json!({"name": "plain", "description": "Needs nothing", "inputSchema": empty})),
            tool(
                json!({"name": "report", "description": "Reports progress 1/2 and 2/2 with the call's progressToken, logs one message (on the GET stream), answers with the token", "inputSchema": empty}),
            ),
        ];
        if caps.elicitation.is_some() {
            tools.push(tool(json!({"name": "ask_with_defaults", "description": "Elicits a form whose fields have defaults; answers with the content it got", "inputSchema": empty})));
        }
        if caps.sampling.is_some() {
            tools.push(tool(json!({"name": "sample", "description": "Asks the client's model; answers with its text", "inputSchema": empty})));
        }
        if caps.roots.is_some() {
            tools.push(tool(json!({"name": "count_roots", "description": "Lists the client's roots", "inputSchema": empty})));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    // Sampling and roots are deprecated by SEP-2577 but still in the protocol.
    #[allow(deprecated)]
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let peer = &context.peer;
        let result = match request.name.as_ref() {
            "plain" => text_result("plain", false),
            "report" => {
                let token = context.meta.get_progress_token();
                if let Some(token) = &token {
                    for step in [1.0, 2.0] {
                        let mut param =
                            rmcp::model::ProgressNotificationParam::new(token.clone(), step);
                        param.total = Some(2.0);
                        param.message = Some(format!("step {step}"));
                        let _ = peer.notify_progress(param).await;
                    }
                }
                let _ = peer
                    .notify_logging_message(
                        rmcp::model::LoggingMessageNotificationParam::new(
                            rmcp::model::LoggingLevel::Warning,
                            json!("disk almost full"),
                        )
                        .with_logger("fixture"),
                    )
                    .await;
                // rmcp sends a notification not tied to a request on the session's GET stream,
                // which races the result on the POST stream: give it a moment.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                let token = token.map(|t| serde_json::to_value(&t).unwrap_or(Value::Null));
                text_result(json!({"progressToken": token}).to_string(), false)
            }
            "ask_with_defaults" => {
                let params: rmcp::model::ElicitRequestParams = serde_json::from_value(
                    json!({"mode": "form", "message": "Check these.", "requestedSchema": defaults_schema()}),
                )
                .expect("fixture elicitation");
                match peer.create_elicitation(params).await {
                    Ok(r) => text_result(
                        json!({"action": r.action, "content": r.content}).to_string(),
                        false,
                    ),
                    Err(e) => text_result(format!("elicitation failed: {e}"), true),
                }
            }
            "sample" => {
                let params: rmcp::model::CreateMessageRequestParams = serde_json::from_value(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Say hi"}}],
                    "maxTokens": 10
                }))
                .expect("fixture sampling");
                match peer.create_message(params).await {
                    Ok(r) => {
                        let v = serde_json::to_value(&r).unwrap_or(Value::Null);
                        text_result(
                            format!(
                                "model {} said {}",
                                v["model"].as_str().unwrap_or(""),
                                v["content"]["text"].as_str().unwrap_or("")
                            ),
                            false,
                        )
                    }
                    Err(e) => text_result(format!("sampling failed: {e}"), true),
                }
            }
            "count_roots" => match peer.list_roots().await {
                Ok(r) => text_result(format!("roots:{}", r.roots.len()), false),
                Err(e) => text_result(format!("roots failed: {e}"), true),
            },
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

/// A streamable-HTTP MCP server that lists tools by the client's capabilities
/// ([`CapableHandler`]), on `127.0.0.1:0`. Stops when dropped.
pub async fn serve_capable() -> StatefulMcpServer {
    let cancel = CancellationToken::new();
    let sessions = Arc::new(LocalSessionManager::default());
    let service: StreamableHttpService<CapableHandler, LocalSessionManager> =
        StreamableHttpService::new(
            || Ok(CapableHandler),
            sessions.clone(),
            StreamableHttpServerConfig::default()
                .with_sse_keep_alive(None)
                .with_cancellation_token(cancel.child_token()),
        );
    let ledger = Ledger::default();
    let router = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(
            ledger.clone(),
            ledger_middleware,
        ));
    let (listener, addr) = bind().await;
    let accepted = spawn_server(listener, router, cancel.clone());
    StatefulMcpServer {
        url: format!("http://{addr}/mcp"),
        addr,
        ledger,
        elicited: ElicitLog::default(),
        sessions,
        accepted,
        cancel,
    }
}

/// Handler of [`serve_mutable`]: the tools a test set last, listed in one page; every call
/// answers `ok:<name>`.
#[derive(Clone)]
pub struct MutableToolsHandler {
    tools: Arc<Mutex<Vec<Tool>>>,
}

impl ServerHandler for MutableToolsHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mutable-tools-test-server", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tools.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(text_result(format!("ok:{}", request.name), false).into())
    }
}

/// A streamable-HTTP server whose tool definitions a test changes between listings
/// ([`MutableMcpServer::set_tools`]): the shape of an upstream that changes a tool behind its
/// users' back (a "rug pull"). Stops when dropped.
pub struct MutableMcpServer {
    pub server: StatefulMcpServer,
    tools: Arc<Mutex<Vec<Tool>>>,
}

impl MutableMcpServer {
    /// Replaces the listed tools (raw `tools/list` entries).
    pub fn set_tools(&self, tools: Vec<Value>) {
        *self.tools.lock().unwrap_or_else(|p| p.into_inner()) =
            tools.into_iter().map(tool).collect();
    }
}

/// Starts [`MutableMcpServer`] listing `tools` (raw `tools/list` entries) on `127.0.0.1:0`.
pub async fn serve_mutable(tools: Vec<Value>) -> MutableMcpServer {
    let cancel = CancellationToken::new();
    let sessions = Arc::new(LocalSessionManager::default());
    let listed = Arc::new(Mutex::new(tools.into_iter().map(tool).collect::<Vec<_>>()));
    let shared = listed.clone();
    let service: StreamableHttpService<MutableToolsHandler, LocalSessionManager> =
        StreamableHttpService::new(
            move || {
                Ok(MutableToolsHandler {
                    tools: shared.clone(),
                })
            },
            sessions.clone(),
            StreamableHttpServerConfig::default()
                .with_sse_keep_alive(None)
                .with_cancellation_token(cancel.child_token()),
        );
    let ledger = Ledger::default();
    let router = Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(
            ledger.clone(),
            ledger_middleware,
        ));
    let (listener, addr) = bind().await;
    let accepted = spawn_server(listener, router, cancel.clone());
    MutableMcpServer {
        server: StatefulMcpServer {
            url: format!("http://{addr}/mcp"),
            addr,
            ledger,
            elicited: ElicitLog::default(),
            sessions,
            accepted,
            cancel,
        },
        tools: listed,
    }
}
