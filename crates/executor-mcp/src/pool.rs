//! The downstream session pool and per-execution scopes (spec §6 "Session reuse").

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

// Sampling and roots are deprecated by SEP-2577 but still part of the versions we speak.
use executor_core::network::NetworkAccess;
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
    ClientCapabilities, ClientConfig, ClientRequest, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationCapability,
    FormElicitationCapability, Implementation, ListRootsResult, LoggingMessageNotificationParam,
    PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion, RequestId,
    RootsCapabilities, SamplingCapability, ServerResult, UrlElicitationCapability,
};
use rmcp::service::{
    InboundStreamOrigin, NotificationContext, PeerRequestOptions, RequestContext, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::discovery::{Discovery, ProbeResult, map_tools};
use crate::elicit::{Elicitor, Routes};
use crate::error::{self, McpError};
use crate::reattach::{Linked, STATELESS, STREAMABLE, SessionLink, SessionRecord};
use crate::sse::SseClientTransport;
use crate::target::{RemoteTarget, RemoteTransport, SessionKey, StdioTarget, TargetRef};
use crate::upstream_http::{self, UpstreamHttp};
use crate::{CLIENT_NAME, CLIENT_VERSION};

/// Tunables of the downstream client.
#[derive(Debug, Clone)]
pub struct McpClientConfig {
    /// Bound on a whole discovery (connect + every `tools/list` page), and on dialling a session.
    pub discovery_timeout: Duration,
    /// Idle pooled sessions older than this are closed.
    pub idle_ttl: Duration,
    /// Bound on one `tools/call`.
    pub call_timeout: Duration,
    /// Maximum `tools/list` pages followed.
    pub max_pages: usize,
    /// Whether stdio servers may be spawned at all. `false` (the team server unless its operator
    /// allows them): every stdio connect fails with [`McpError::StdioDisabled`] before anything
    /// is spawned.
    pub allow_stdio: bool,
    /// Where remote servers may be: every connection is checked on the address it reaches
    /// ([`crate::network`]).
    pub network: NetworkAccess,
}

impl Default for McpClientConfig {
    fn default() -> Self {
        Self {
            discovery_timeout: Duration::from_secs(15),
            idle_ttl: Duration::from_secs(5 * 60),
            call_timeout: Duration::from_secs(10 * 60),
            max_pages: 100,
            allow_stdio: true,
            network: NetworkAccess::LOCAL,
        }
    }
}

/// Largest JSON response accepted from a downstream server.
const MAX_JSON_RESPONSE: usize = 64 * 1024 * 1024;
/// Bound on closing one session (DELETE).
const CLOSE_TIMEOUT: Duration = Duration::from_secs(10);

type ListChangedCallback = Arc<dyn Fn(&str) + Send + Sync>;
type Callbacks = RwLock<Vec<ListChangedCallback>>;

/// rmcp client handler of one downstream session.
#[derive(Clone)]
struct Handler {
    label: Arc<str>,
    callbacks: Arc<Callbacks>,
    /// The calls in flight on this session (sessions that make tool calls): elicitations and
    /// sampling requests are routed to the call they belong to. Discovery sessions have none:
    /// they cancel elicitations and refuse sampling.
    routes: Option<Arc<Routes>>,
}

/// What every session advertises, discovery included: servers that register tools only for
/// clients able to answer them (elicitation, sampling) would otherwise hide those tools from
/// the catalog. Sampling is forwarded to the agent's own client where it has one, else refused
/// with a JSON-RPC error; roots are an empty list (we expose no filesystem).
#[allow(deprecated)]
fn client_capabilities() -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = Some(
        ElicitationCapability::default()
            .with_form(FormElicitationCapability::default())
            .with_url(UrlElicitationCapability::default()),
    );
    capabilities.sampling = Some(SamplingCapability::default());
    capabilities.roots = Some(RootsCapabilities::default());
    capabilities
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let capabilities = client_capabilities();
        ClientConfig::new(
            capabilities,
            Implementation::new(CLIENT_NAME, CLIENT_VERSION),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, rmcp::ErrorData> {
        let origin = context.extensions.get::<InboundStreamOrigin>();
        match &self.routes {
            Some(routes) => Ok(routes.elicit(&self.label, request, origin).await),
            None => Ok(ElicitResult::new(rmcp::model::ElicitationAction::Cancel)),
        }
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, rmcp::ErrorData> {
        let origin = context.extensions.get::<InboundStreamOrigin>();
        match &self.routes {
            Some(routes) => routes.sample(&self.label, params, origin).await,
            None => Err(rmcp::ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "sampling/createMessage refused: this session only lists what the server offers",
                None,
            )),
        }
    }

    #[allow(deprecated)]
    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, rmcp::ErrorData> {
        Ok(ListRootsResult::default())
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        if let Some(routes) = &self.routes {
            routes.progress(&self.label, params);
        }
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        context: NotificationContext<RoleClient>,
    ) {
        if let Some(routes) = &self.routes {
            let origin = context.extensions.get::<InboundStreamOrigin>();
            routes.log(&self.label, params, origin);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if self.label.is_empty() {
            return;
        }
        let callbacks: Vec<ListChangedCallback> = match self.callbacks.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        };
        for callback in callbacks {
            callback(&self.label);
        }
    }
}

type Service = RunningService<RoleClient, Handler>;

/// One open downstream session.
struct Session {
    serial: u64,
    digest: String,
    label: String,
    peer: Peer<RoleClient>,
    service: Mutex<Option<Service>>,
    broken: AtomicBool,
    routes: Arc<Routes>,
    /// Its session id (streamable HTTP) and whether closing it may DELETE it.
    link: Arc<SessionLink>,
    /// `stdio`, or what the remote answered as (see [`SessionRecord::transport`]).
    transport: &'static str,
    /// Reattached after a restart: a 404 means the server lost the state, not "redial".
    reattached: bool,
}

impl Session {
    fn usable(&self) -> bool {
        !self.broken.load(Ordering::SeqCst) && !self.peer.is_transport_closed()
    }
}

struct Idle {
    session: Arc<Session>,
    since: Instant,
}

/// What sessions are shared by: the whole key, label included. The digest alone (endpoint,
/// headers, template, credentials) is equal for two tenants, two users or two connections that
/// reach one server the same way, and handing one's session to the other carries a stateful
/// server's per-session state across them (the isolation tests in `executor`).
fn pool_id(label: &str, digest: &str) -> String {
    format!("{label}\n{digest}")
}

#[derive(Default)]
struct PoolState {
    /// At most one idle session per [`pool_id`].
    idle: HashMap<String, Idle>,
    /// Leased sessions: serial → (label, key digest).
    leased: HashMap<u64, (String, String)>,
    /// Leased sessions to close instead of pooling when returned.
    doomed: HashSet<u64>,
    /// After `shutdown`: nothing is pooled any more.
    closed: bool,
}

/// The HTTP clients of the downstream transports, built on first use (or by
/// [`McpClient::warm_up`]): building one loads the system's root certificates, hundreds of files,
/// which a server that has only started needs no sooner than its first downstream call.
#[derive(Clone)]
struct LazyHttpClients(Arc<std::sync::OnceLock<HttpClients>>, NetworkAccess);

impl LazyHttpClients {
    fn get(&self) -> &HttpClients {
        self.0.get_or_init(|| HttpClients::new(self.1))
    }
}

/// The HTTP clients of the downstream transports.
struct HttpClients {
    /// Legacy HTTP+SSE: keep-alive connection pool (its POSTs are answered with a bare 202).
    pooled: reqwest::Client,
    /// Streamable HTTP: keep-alive connections with quick ACKs ([`upstream_http`]), so a tool call
    /// costs no TCP or TLS handshake. `None` where the platform has no `TCP_QUICKACK`.
    keep_alive: Option<UpstreamHttp>,
    /// Streamable HTTP through an environment proxy, or without quick ACKs: reqwest, with no idle
    /// connection reuse — every POST rides a fresh connection, which starts in quick-ACK mode (see
    /// [`upstream_http`] for the Nagle/delayed-ACK stall this avoids). This is what rmcp's own
    /// default client does (`pool_max_idle_per_host(0)`). Tested by `tests/latency.rs`.
    fresh: reqwest::Client,
    /// The `HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY`/`NO_PROXY` rules reqwest applies.
    proxies: hyper_util::client::proxy::matcher::Matcher,
    /// Where the clients may connect.
    access: NetworkAccess,
}

impl HttpClients {
    fn new(access: NetworkAccess) -> Self {
        let builder = || {
            crate::network::guarded(reqwest::Client::builder(), access)
                .connect_timeout(Duration::from_secs(10))
                .tcp_nodelay(true)
        };
        let pooled = builder().build().unwrap_or_else(|_| reqwest::Client::new());
        let fresh = builder()
            .pool_max_idle_per_host(0)
            .build()
            .unwrap_or_else(|_| pooled.clone());
        let keep_alive = if upstream_http::QUICK_ACK_AVAILABLE {
            UpstreamHttp::new(access)
                .inspect_err(
                    |e| tracing::warn!(error = %e, "no keep-alive HTTP client; TLS set-up failed"),
                )
                .ok()
        } else {
            None
        };
        Self {
            pooled,
            keep_alive,
            fresh,
            proxies: hyper_util::client::proxy::matcher::Matcher::from_env(),
            access,
        }
    }

    /// The keep-alive client for `url`, unless a proxy applies to it.
    fn keep_alive_for(&self, url: &url::Url) -> Option<&UpstreamHttp> {
        let client = self.keep_alive.as_ref()?;
        let uri: http::Uri = url.as_str().parse().ok()?;
        self.proxies.intercept(&uri).is_none().then_some(client)
    }
}

struct Inner {
    config: McpClientConfig,
    http: LazyHttpClients,
    state: Mutex<PoolState>,
    callbacks: Arc<Callbacks>,
    live: AtomicUsize,
    serial: AtomicU64,
    stop: CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Inner {
    async fn close_session(&self, session: Arc<Session>) {
        let service = lock(&session.service).take();
        if let Some(service) = service {
            self.live.fetch_sub(1, Ordering::SeqCst);
            match tokio::time::timeout(CLOSE_TIMEOUT, service.cancel()).await {
                Ok(_) => tracing::debug!(label = %session.label, "closed downstream MCP session"),
                Err(_) => {
                    tracing::warn!(label = %session.label, "closing downstream MCP session timed out")
                }
            }
        }
    }

    async fn close_all(&self, sessions: Vec<Arc<Session>>) {
        futures::future::join_all(sessions.into_iter().map(|s| self.close_session(s))).await;
    }

    /// Close idle sessions older than the TTL.
    async fn sweep(&self) {
        let now = Instant::now();
        let expired: Vec<Arc<Session>> = {
            let mut state = lock(&self.state);
            let keys: Vec<String> = state
                .idle
                .iter()
                .filter(|(_, idle)| {
                    now.duration_since(idle.since) >= self.config.idle_ttl || !idle.session.usable()
                })
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter()
                .filter_map(|k| state.idle.remove(k))
                .map(|idle| idle.session)
                .collect()
        };
        self.close_all(expired).await;
    }

    async fn dial(
        &self,
        target: TargetRef<'_>,
        key: &SessionKey,
    ) -> Result<Arc<Session>, McpError> {
        self.dial_linked(target, key, Arc::default(), false).await
    }

    /// Comes back to the session of `record` (a paused execution's, before a restart), or says
    /// why it cannot: a stdio child or a legacy SSE stream did not survive the restart.
    async fn reattach(
        &self,
        target: TargetRef<'_>,
        key: &SessionKey,
        record: &SessionRecord,
    ) -> Result<Arc<Session>, McpError> {
        let lost = |why: &str| McpError::SessionLost {
            label: key.label().to_owned(),
            message: why.to_owned(),
        };
        if record.transport == STATELESS {
            // No session, so no state to lose.
            return self.dial(target, key).await;
        }
        let (TargetRef::Remote(remote), STREAMABLE) = (target, record.transport.as_str()) else {
            return Err(lost(match record.transport.as_str() {
                "stdio" => "its server was a local process, which ended when executor restarted",
                _ => "its transport (legacy SSE) cannot be resumed after a restart",
            }));
        };
        let (Some(session_id), Some(server)) = (&record.session_id, &record.server) else {
            return Err(lost("no session id was recorded for it"));
        };
        let server: rmcp::model::InitializeResult = serde_json::from_value(server.clone())
            .map_err(|_| lost("the recorded server answer no longer reads"))?;
        let mut remote = remote.clone();
        remote.transport = RemoteTransport::StreamableHttp;
        let link = Arc::new(SessionLink::reattaching(session_id, server));
        self.dial_linked(TargetRef::Remote(&remote), key, link, true)
            .await
    }

    async fn dial_linked(
        &self,
        target: TargetRef<'_>,
        key: &SessionKey,
        link: Arc<SessionLink>,
        reattached: bool,
    ) -> Result<Arc<Session>, McpError> {
        let routes = Arc::new(Routes::default());
        let handler = Handler {
            label: Arc::from(key.label()),
            callbacks: self.callbacks.clone(),
            routes: Some(routes.clone()),
        };
        let service = match tokio::time::timeout(
            self.config.discovery_timeout,
            connect(
                self.http.get(),
                target,
                handler,
                self.config.discovery_timeout,
                self.config.allow_stdio,
                Linking {
                    link: link.clone(),
                    reinit: !reattached,
                },
            ),
        )
        .await
        {
            Ok(result) => result?,
            Err(_) => return Err(McpError::Timeout { stage: "connect" }),
        };
        self.live.fetch_add(1, Ordering::SeqCst);
        let serial = self.serial.fetch_add(1, Ordering::SeqCst);
        let transport = match target {
            TargetRef::Stdio(_) => "stdio",
            TargetRef::Remote(_) if link.session_id.get().is_some() => STREAMABLE,
            TargetRef::Remote(r) if r.transport == RemoteTransport::StreamableHttp => STATELESS,
            TargetRef::Remote(_) => "sse",
        };
        Ok(Arc::new(Session {
            serial,
            digest: key.digest().to_owned(),
            label: key.label().to_owned(),
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            broken: AtomicBool::new(false),
            routes,
            link,
            transport,
            reattached,
        }))
    }

    fn lease(&self, session: &Arc<Session>) {
        lock(&self.state).leased.insert(
            session.serial,
            (session.label.clone(), session.digest.clone()),
        );
    }

    /// Retires the sessions of `key`'s label dialled under another key: the connection's
    /// credentials or config changed since (a refreshed OAuth token, a replaced header), so
    /// they carry stale values. Idle ones are closed now, leased ones when returned.
    async fn retire_other_generations(&self, key: &SessionKey) {
        if key.label().is_empty() {
            return;
        }
        let stale = |label: &str, digest: &str| label == key.label() && digest != key.digest();
        let sessions: Vec<Arc<Session>> = {
            let mut state = lock(&self.state);
            let doomed: Vec<u64> = state
                .leased
                .iter()
                .filter(|(_, (label, digest))| stale(label, digest))
                .map(|(serial, _)| *serial)
                .collect();
            state.doomed.extend(doomed);
            let keys: Vec<String> = state
                .idle
                .iter()
                .filter(|(_, idle)| stale(&idle.session.label, &idle.session.digest))
                .map(|(k, _)| k.clone())
                .collect();
            keys.iter()
                .filter_map(|k| state.idle.remove(k))
                .map(|idle| idle.session)
                .collect()
        };
        if !sessions.is_empty() {
            tracing::debug!(
                label = key.label(),
                count = sessions.len(),
                "closing MCP sessions dialled with superseded credentials"
            );
        }
        self.close_all(sessions).await;
    }

    /// A pooled session for `key` if one is idle and fresh; else a new dial. `bool` = reused.
    async fn acquire(
        &self,
        target: TargetRef<'_>,
        key: &SessionKey,
    ) -> Result<(Arc<Session>, bool), McpError> {
        let idle = lock(&self.state)
            .idle
            .remove(&pool_id(key.label(), key.digest()));
        if let Some(idle) = idle {
            if idle.since.elapsed() < self.config.idle_ttl && idle.session.usable() {
                self.lease(&idle.session);
                return Ok((idle.session, true));
            }
            self.close_session(idle.session).await;
        }
        self.retire_other_generations(key).await;
        let session = self.dial(target, key).await?;
        self.lease(&session);
        Ok((session, false))
    }

    /// Return a leased session: pool it (one idle per key) or close it.
    async fn release(&self, session: Arc<Session>) {
        let to_close = {
            let mut state = lock(&self.state);
            state.leased.remove(&session.serial);
            let doomed = state.doomed.remove(&session.serial);
            let id = pool_id(&session.label, &session.digest);
            if doomed || state.closed || !session.usable() || state.idle.contains_key(&id) {
                Some(session)
            } else {
                state.idle.insert(
                    id,
                    Idle {
                        session,
                        since: Instant::now(),
                    },
                );
                None
            }
        };
        if let Some(session) = to_close {
            self.close_session(session).await;
        }
    }
}

/// How a streamable-HTTP session is tied to its pooled [`Session`].
#[derive(Clone)]
struct Linking {
    link: Arc<SessionLink>,
    /// Let rmcp re-initialize a session the server forgot; never for a reattached one, whose
    /// state a fresh session would not have.
    reinit: bool,
}

/// Build the rmcp client transport for `target` and run the handshake.
async fn connect(
    http: &HttpClients,
    target: TargetRef<'_>,
    handler: Handler,
    sse_timeout: Duration,
    allow_stdio: bool,
    linking: Linking,
) -> Result<Service, McpError> {
    let target = match target {
        TargetRef::Remote(remote) => remote,
        TargetRef::Stdio(_) if !allow_stdio => return Err(McpError::StdioDisabled),
        TargetRef::Stdio(stdio) => return connect_stdio(stdio, handler).await,
    };
    crate::network::check_url(http.access, &target.endpoint)
        .map_err(McpError::AddressNotAllowed)?;
    match target.transport {
        RemoteTransport::StreamableHttp => connect_streamable(http, target, handler, linking).await,
        RemoteTransport::Sse => connect_sse(&http.pooled, target, handler, sse_timeout).await,
        RemoteTransport::Auto => {
            match connect_streamable(http, target, handler.clone(), linking).await {
                Ok(service) => Ok(service),
                Err(e) if e.is_auth_rejection() => Err(e),
                Err(McpError::Connect {
                    message,
                    http_status,
                    ..
                }) if message.starts_with("Couldn't reach") => Err(McpError::Connect {
                    transport: "auto".into(),
                    message,
                    http_status,
                }),
                Err(streamable) => {
                    match connect_sse(&http.pooled, target, handler, sse_timeout).await {
                        Ok(service) => Ok(service),
                        Err(sse) => {
                            tracing::debug!(%sse, "legacy SSE fallback failed too");
                            Err(match streamable {
                                McpError::Connect {
                                    message,
                                    http_status,
                                    ..
                                } => McpError::Connect {
                                    transport: "auto".into(),
                                    message,
                                    http_status,
                                },
                                other => other,
                            })
                        }
                    }
                }
            }
        }
    }
}

fn invalid_url(transport: &str, target: &RemoteTarget, e: impl std::fmt::Display) -> McpError {
    McpError::Connect {
        transport: transport.to_owned(),
        message: format!(
            "\"{}\" is not a valid MCP endpoint URL: {e}",
            target.endpoint
        ),
        http_status: None,
    }
}

/// Headers rmcp sets itself and refuses as custom headers.
fn is_reserved_header(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "accept" | "mcp-session-id" | "last-event-id" | "mcp-protocol-version" | "content-type"
    )
}

fn header_pairs(
    transport: &str,
    target: &RemoteTarget,
) -> Result<Vec<(http::HeaderName, http::HeaderValue)>, McpError> {
    target
        .headers
        .iter()
        .filter(|(k, _)| !is_reserved_header(k))
        .map(|(k, v)| {
            let name = http::HeaderName::from_bytes(k.trim().as_bytes()).map_err(|e| {
                McpError::Connect {
                    transport: transport.to_owned(),
                    message: format!("Invalid header name \"{k}\": {e}"),
                    http_status: None,
                }
            })?;
            let value = http::HeaderValue::from_str(v).map_err(|e| McpError::Connect {
                transport: transport.to_owned(),
                message: format!("Invalid value for header \"{k}\": {e}"),
                http_status: None,
            })?;
            Ok((name, value))
        })
        .collect()
}

async fn connect_streamable(
    http: &HttpClients,
    target: &RemoteTarget,
    handler: Handler,
    linking: Linking,
) -> Result<Service, McpError> {
    const T: &str = "streamable-http";
    let url = target.url().map_err(|e| invalid_url(T, target, e))?;
    let headers: HashMap<_, _> = header_pairs(T, target)?.into_iter().collect();
    let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
        .max_json_response_size(MAX_JSON_RESPONSE)
        .max_concurrent_requests(64)
        .reinit_on_expired_session(linking.reinit)
        .custom_headers(headers);
    let served = match http.keep_alive_for(&url) {
        Some(client) => {
            handler
                .serve(StreamableHttpClientTransport::with_client(
                    Linked {
                        inner: client.clone(),
                        link: linking.link,
                    },
                    config,
                ))
                .await
        }
        None => {
            handler
                .serve(StreamableHttpClientTransport::with_client(
                    Linked {
                        inner: http.fresh.clone(),
                        link: linking.link,
                    },
                    config,
                ))
                .await
        }
    };
    served.map_err(|e| error::connect_error(T, &target.endpoint, &e))
}

async fn connect_sse(
    http: &reqwest::Client,
    target: &RemoteTarget,
    handler: Handler,
    timeout: Duration,
) -> Result<Service, McpError> {
    const T: &str = "sse";
    let url = target.url().map_err(|e| invalid_url(T, target, e))?;
    let headers: http::HeaderMap = header_pairs(T, target)?.into_iter().collect();
    let transport = SseClientTransport::connect(http.clone(), url, headers, timeout)
        .await
        .map_err(|e| error::sse_connect_error(&target.endpoint, &e))?;
    handler
        .serve(transport)
        .await
        .map_err(|e| error::connect_error(T, &target.endpoint, &e))
}

/// Lines of a stdio server's stderr kept for error messages.
const STDERR_TAIL: usize = 20;

/// Spawn a stdio MCP server and run the handshake. The child runs in its own process group (so
/// closing the session also ends what it started), with `kill_on_drop`; its stderr is logged at
/// debug level and the last lines are quoted when the handshake fails.
async fn connect_stdio(target: &StdioTarget, handler: Handler) -> Result<Service, McpError> {
    use rmcp::transport::TokioChildProcess;
    use tokio::io::AsyncBufReadExt;

    const T: &str = "stdio";
    let command_line = target.command_line();
    let fail = |message: String| McpError::Connect {
        transport: T.to_owned(),
        message,
        http_status: None,
    };
    if target.command.trim().is_empty() {
        return Err(fail("A stdio MCP server needs a command.".to_owned()));
    }
    let mut command = tokio::process::Command::new(&target.command);
    // Nothing of the executor's own environment but the basics a program needs: its secrets
    // and configuration (`EXECUTOR_*`, `DATABASE_URL`, `RUST_LOG`…) stay with it.
    command.env_clear().envs(crate::target::inherited_env());
    for name in &target.env_remove {
        command.env_remove(name);
    }
    command
        .args(&target.args)
        .envs(&target.env)
        .kill_on_drop(true);
    if let Some(cwd) = target.cwd.as_deref().filter(|c| !c.trim().is_empty()) {
        command.current_dir(cwd);
    }
    #[allow(unused_mut)]
    let mut wrapped = process_wrap::tokio::CommandWrap::from(command);
    #[cfg(unix)]
    wrapped.wrap(process_wrap::tokio::ProcessGroup::leader());
    let (transport, stderr) = TokioChildProcess::builder(wrapped)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| {
            let cwd = target
                .cwd
                .as_deref()
                .map(|c| format!(" in {c}"))
                .unwrap_or_default();
            fail(format!(
                "Couldn't start the stdio MCP server `{command_line}`{cwd}: {e}"
            ))
        })?;
    let pid = transport.id();
    let tail: Arc<Mutex<std::collections::VecDeque<String>>> = Arc::default();
    let reader = stderr.map(|stderr| {
        let tail = tail.clone();
        let command_line = command_line.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(command = %command_line, pid, "stdio MCP server: {line}");
                let mut tail = lock(&tail);
                if tail.len() == STDERR_TAIL {
                    tail.pop_front();
                }
                tail.push_back(error::truncate(&line, 500));
            }
        })
    });
    match handler.serve(transport).await {
        Ok(service) => {
            tracing::debug!(command = %command_line, pid, "stdio MCP server started");
            Ok(service)
        }
        Err(e) => {
            // The child is gone (or being killed): give its last words a moment to arrive.
            if let Some(reader) = reader {
                let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
            }
            let reason = match &e {
                rmcp::service::ClientInitializeError::ConnectionClosed(_) => {
                    "it exited or closed its stdout during the handshake".to_owned()
                }
                rmcp::service::ClientInitializeError::JsonRpcError(e) => {
                    format!("initialize failed: {}", e.message)
                }
                other => other.to_string(),
            };
            let stderr: Vec<String> = lock(&tail).iter().cloned().collect();
            let mut message = format!(
                "The stdio MCP server `{command_line}` did not complete the MCP handshake: {reason}"
            );
            if !stderr.is_empty() {
                message.push_str(&format!("; its stderr ended with: {}", stderr.join("\n")));
            }
            Err(fail(message))
        }
    }
}

/// The downstream MCP client: discovery plus the session pool. Cheap to clone.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("config", &self.inner.config)
            .field("live_sessions", &self.live_sessions())
            .finish()
    }
}

impl Default for McpClient {
    fn default() -> Self {
        Self::new(McpClientConfig::default())
    }
}

impl McpClient {
    /// Creates the pool. When called inside a tokio runtime, an idle reaper task is started; it holds
    /// only a weak reference and stops when the last clone is dropped or on [`McpClient::shutdown`].
    /// (Outside a runtime, idle sessions are still evicted lazily on acquire.)
    /// Builds the HTTP clients now (they load the system's root certificates), so the first
    /// downstream call does not pay for it. Blocking: run it off the async workers.
    pub fn warm_up(&self) {
        self.inner.http.get();
    }

    pub fn new(config: McpClientConfig) -> Self {
        let http = LazyHttpClients(Arc::default(), config.network);
        let inner = Arc::new(Inner {
            config,
            http,
            state: Mutex::new(PoolState::default()),
            callbacks: Arc::new(RwLock::new(Vec::new())),
            live: AtomicUsize::new(0),
            serial: AtomicU64::new(0),
            stop: CancellationToken::new(),
        });
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let weak: Weak<Inner> = Arc::downgrade(&inner);
            let stop = inner.stop.clone();
            let period = (inner.config.idle_ttl / 4)
                .clamp(Duration::from_millis(20), Duration::from_secs(30));
            handle.spawn(async move {
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = tokio::time::sleep(period) => {}
                    }
                    let Some(inner) = weak.upgrade() else { break };
                    inner.sweep().await;
                }
            });
        }
        Self { inner }
    }

    pub fn config(&self) -> &McpClientConfig {
        &self.inner.config
    }

    /// Fresh session, paginated `tools/list` (≤ `max_pages`), then the session is closed. The whole
    /// discovery is bounded by `discovery_timeout`.
    pub async fn discover<'a>(
        &self,
        target: impl Into<TargetRef<'a>>,
    ) -> Result<Discovery, McpError> {
        let target: TargetRef<'a> = target.into();
        let timeout = self.inner.config.discovery_timeout;
        let max_pages = self.inner.config.max_pages.max(1);
        let handler = Handler {
            label: Arc::from(""),
            callbacks: self.inner.callbacks.clone(),
            routes: None,
        };
        let http = self.inner.http.clone();
        let allow_stdio = self.inner.config.allow_stdio;
        let work = async move {
            let linking = Linking {
                link: Arc::default(),
                reinit: true,
            };
            let service =
                connect(http.get(), target, handler, timeout, allow_stdio, linking).await?;
            let listed = list_all_tools(service.peer(), &target.describe(), max_pages).await;
            let info = service.peer().peer_info();
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, service.cancel()).await;
            let tools = listed?;
            Ok(Discovery {
                server_name: info
                    .as_ref()
                    .and_then(|i| i.server_info.as_ref())
                    .map(|s| s.name.clone())
                    .filter(|n| !n.is_empty()),
                instructions: info.as_ref().and_then(|i| i.instructions.clone()),
                tools: map_tools(&tools),
            })
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(McpError::Timeout { stage: "discovery" }),
        }
    }

    /// Probe (spec §3.9): full discovery; 401/403 → `requires_authentication`.
    pub async fn probe<'a>(
        &self,
        target: impl Into<TargetRef<'a>>,
    ) -> Result<ProbeResult, McpError> {
        match self.discover(target).await {
            Ok(d) => Ok(ProbeResult {
                connected: true,
                requires_authentication: false,
                tool_count: Some(d.tools.len()),
                server_name: d.server_name,
                instructions: d.instructions,
                http_status: None,
            }),
            Err(e) if e.is_auth_rejection() => Ok(ProbeResult {
                connected: false,
                requires_authentication: true,
                tool_count: None,
                server_name: None,
                instructions: None,
                http_status: e.http_status(),
            }),
            Err(e) => Err(e),
        }
    }

    /// A per-execution scope: every call through it to the same [`SessionKey`] rides ONE session.
    pub fn scope(&self) -> ExecutionScope {
        ExecutionScope {
            inner: self.inner.clone(),
            slots: Mutex::new(HashMap::new()),
            reattach: Mutex::new(HashMap::new()),
            lost: Mutex::new(HashMap::new()),
        }
    }

    /// Close (HTTP DELETE) every pooled session whose label satisfies `pred`; leased ones are closed
    /// when their scope returns them.
    pub async fn close_where(&self, pred: impl Fn(&str) -> bool) {
        let sessions: Vec<Arc<Session>> = {
            let mut state = lock(&self.inner.state);
            let keys: Vec<String> = state
                .idle
                .iter()
                .filter(|(_, idle)| pred(&idle.session.label))
                .map(|(k, _)| k.clone())
                .collect();
            let doomed: Vec<u64> = state
                .leased
                .iter()
                .filter(|(_, (label, _))| pred(label))
                .map(|(serial, _)| *serial)
                .collect();
            state.doomed.extend(doomed);
            keys.iter()
                .filter_map(|k| state.idle.remove(k))
                .map(|i| i.session)
                .collect()
        };
        self.inner.close_all(sessions).await;
    }

    /// Close every pooled session; leased sessions are closed when returned. Nothing is pooled after.
    pub async fn shutdown(&self) {
        self.inner.stop.cancel();
        let sessions: Vec<Arc<Session>> = {
            let mut state = lock(&self.inner.state);
            state.closed = true;
            let leased: Vec<u64> = state.leased.keys().copied().collect();
            state.doomed.extend(leased);
            state.idle.drain().map(|(_, i)| i.session).collect()
        };
        self.inner.close_all(sessions).await;
    }

    /// Number of open downstream sessions, pooled or leased.
    pub fn live_sessions(&self) -> usize {
        self.inner.live.load(Ordering::SeqCst)
    }

    /// Number of idle pooled sessions.
    pub fn idle_sessions(&self) -> usize {
        lock(&self.inner.state).idle.len()
    }

    /// Register a callback invoked with the session's label on `notifications/tools/list_changed`.
    pub fn on_list_changed(&self, f: Arc<dyn Fn(&str) + Send + Sync>) {
        match self.inner.callbacks.write() {
            Ok(mut c) => c.push(f),
            Err(poisoned) => poisoned.into_inner().push(f),
        }
    }
}

async fn list_all_tools(
    peer: &Peer<RoleClient>,
    endpoint: &str,
    max_pages: usize,
) -> Result<Vec<Value>, McpError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..max_pages {
        let params = cursor
            .clone()
            .map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
        let page = peer
            .list_tools(params)
            .await
            .map_err(|e| error::list_error(endpoint, &e))?;
        for tool in &page.tools {
            tools.push(serde_json::to_value(tool).unwrap_or(Value::Null));
        }
        match page.next_cursor {
            Some(next) if !next.is_empty() && seen.insert(next.clone()) => cursor = Some(next),
            _ => break,
        }
    }
    Ok(tools)
}

/// Sends `notifications/cancelled` for a call its caller stopped waiting for (dropped), so the
/// server does not keep working on a result nobody reads.
struct AbandonedCall<'a> {
    peer: &'a Peer<RoleClient>,
    id: Option<RequestId>,
}

impl AbandonedCall<'_> {
    fn disarm(mut self) {
        self.id = None;
    }
}

impl Drop for AbandonedCall<'_> {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let notification = CancelledNotification::new(CancelledNotificationParam::new(
                    Some(id),
                    Some("request abandoned by the caller".to_owned()),
                ));
                let _ = peer.send_notification(notification.into()).await;
            });
        }
    }
}

/// A leased session held by a scope.
struct Lease {
    session: Arc<Session>,
    reused: bool,
}

#[derive(Default)]
struct Slot {
    lease: tokio::sync::Mutex<Option<Lease>>,
}

/// A per-execution scope of downstream sessions. Send + Sync; share it via `Arc`.
pub struct ExecutionScope {
    inner: Arc<Inner>,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    /// Sessions to come back to, by connection label: a paused execution resumed after a
    /// restart. A label stays here until its session is reattached, so every call to it fails
    /// alike rather than one of them landing on a fresh session.
    reattach: Mutex<HashMap<String, SessionRecord>>,
    /// Labels whose session turned out lost, and why: their later calls fail alike.
    lost: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for ExecutionScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutionScope")
            .field("keys", &lock(&self.slots).len())
            .finish()
    }
}

impl ExecutionScope {
    /// The scope's session for `key`, leased on first use. Concurrent first calls wait for one dial.
    async fn session(
        &self,
        key: &SessionKey,
        target: TargetRef<'_>,
        force_fresh: Option<&Arc<Session>>,
    ) -> Result<(Arc<Session>, bool), McpError> {
        let slot = lock(&self.slots)
            .entry(pool_id(key.label(), key.digest()))
            .or_default()
            .clone();
        let mut guard = slot.lease.lock().await;
        if let Some(lease) = guard.as_ref() {
            let replaced = force_fresh.is_some_and(|old| Arc::ptr_eq(old, &lease.session));
            if lease.session.usable() && !replaced {
                return Ok((lease.session.clone(), lease.reused));
            }
        }
        if let Some(old) = guard.take() {
            if force_fresh.is_some() {
                old.session.broken.store(true, Ordering::SeqCst);
            }
            self.inner.release(old.session).await;
        }
        if let Some(message) = lock(&self.lost).get(key.label()).cloned() {
            return Err(McpError::SessionLost {
                label: key.label().to_owned(),
                message,
            });
        }
        let hint = lock(&self.reattach).get(key.label()).cloned();
        let (session, reused) = if let Some(record) = hint {
            let session = match self.inner.reattach(target, key, &record).await {
                Ok(session) => session,
                Err(e) => return Err(self.mark_lost(key, e)),
            };
            lock(&self.reattach).remove(key.label());
            self.inner.lease(&session);
            (session, false)
        } else if force_fresh.is_some() {
            let session = self.inner.dial(target, key).await?;
            self.inner.lease(&session);
            (session, false)
        } else {
            self.inner.acquire(target, key).await?
        };
        *guard = Some(Lease {
            session: session.clone(),
            reused,
        });
        Ok((session, reused))
    }

    async fn invoke(
        &self,
        session: &Session,
        endpoint: &str,
        real_name: &str,
        arguments: &serde_json::Map<String, Value>,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<Value, (McpError, Option<u16>)> {
        let params =
            CallToolRequestParams::new(real_name.to_owned()).with_arguments(arguments.clone());
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // Registered before it is sent, so an elicitation that races the registration of its
        // request id still finds the call.
        let registration = session.routes.register(elicitor);
        let call = async {
            let handle = session
                .peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await?;
            // rmcp puts a fresh `progressToken` in every request's `_meta`: progress the server
            // reports with it is this call's.
            registration.sent(handle.id.clone(), handle.progress_token.clone());
            let abandoned = AbandonedCall {
                peer: &session.peer,
                id: Some(handle.id.clone()),
            };
            let response = handle.await_response().await;
            abandoned.disarm();
            // rmcp spawned a task for each notification the server sent before its result
            // (progress, log messages) before it handed us the result; yielding lets those run
            // first, so the call's log lines make it into the execution's logs. (Not a
            // guarantee on a multi-threaded runtime, but the handlers are a lock and a push.)
            for _ in 0..2 {
                tokio::task::yield_now().await;
            }
            response
        };
        tokio::pin!(call);
        // The call timeout does not run while the server waits for a person's answer to one of
        // its elicitations; it restarts when the answer is given.
        let timeout = self.inner.config.call_timeout;
        let mut deadline = tokio::time::Instant::now() + timeout;
        let response = loop {
            tokio::select! {
                response = &mut call => break response,
                _ = tokio::time::sleep_until(deadline) => {
                    let now = tokio::time::Instant::now();
                    if registration.waiting() {
                        deadline = now + timeout;
                        continue;
                    }
                    match registration.answered_at() {
                        Some(at) if at + timeout > now => deadline = at + timeout,
                        _ => return Err((McpError::Timeout { stage: "call" }, None)),
                    }
                }
            }
        };
        match response {
            Ok(ServerResult::CallToolResult(result)) => Ok(serde_json::to_value(&result)
                .unwrap_or_else(|e| {
                    serde_json::json!({"content": [{"type": "text", "text": format!("unserialisable result: {e}")}], "isError": true})
                })),
            Ok(ServerResult::EmptyResult(_)) => Ok(serde_json::json!({"content": []})),
            Ok(ServerResult::InputRequiredResult(_) | ServerResult::CreateTaskResult(_)) => {
                let (mapped, _) =
                    error::call_error(endpoint, &rmcp::ServiceError::UnexpectedResponse);
                Err((mapped, None))
            }
            // Results that carry only `_meta` / `resultType`.
            Ok(other) => Ok(serde_json::to_value(&other).unwrap_or(Value::Null)),
            Err(e) => {
                let (mapped, diagnosis) = error::call_error(endpoint, &e);
                let status = diagnosis.status;
                // A token the server turned away (401, or 403 other than a missing scope) will
                // not work on the next call either.
                let rejected = status == Some(401)
                    || (status == Some(403) && diagnosis.insufficient_scope.is_none());
                if diagnosis.broken
                    || diagnosis.unreachable.is_some()
                    || rejected
                    || matches!(status, Some(400 | 404 | 408))
                {
                    session.broken.store(true, Ordering::SeqCst);
                }
                Err((mapped, status))
            }
        }
    }

    /// `tools/call {name: real_name, arguments}` on this scope's session for `key`.
    /// Returns the raw CallToolResult as JSON (content / structuredContent / isError).
    /// Elicitations the server sends during the call are cancelled (see [`Self::call_tool_with`]).
    pub async fn call_tool<'a>(
        &self,
        key: &SessionKey,
        target: impl Into<TargetRef<'a>>,
        real_name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<Value, McpError> {
        self.call_tool_with(key, target, real_name, arguments, None)
            .await
    }

    /// [`Self::call_tool`], with `elicitor` answering the `elicitation/create` requests the server
    /// sends while it handles this call.
    pub async fn call_tool_with<'a>(
        &self,
        key: &SessionKey,
        target: impl Into<TargetRef<'a>>,
        real_name: &str,
        arguments: serde_json::Map<String, Value>,
        elicitor: Option<Arc<dyn Elicitor>>,
    ) -> Result<Value, McpError> {
        let target: TargetRef<'a> = target.into();
        let endpoint = target.describe();
        let (session, reused) = self.session(key, target, None).await?;
        match self
            .invoke(&session, &endpoint, real_name, &arguments, elicitor.clone())
            .await
        {
            Ok(v) => Ok(v),
            // The server forgot the session this execution had before the restart: its state
            // is gone, and a new session would answer as if it had never been set.
            Err((_, Some(404))) if session.reattached => Err(self.mark_lost(
                key,
                McpError::SessionLost {
                    label: key.label().to_owned(),
                    message:
                        "the server no longer knows the session (it expired or the server restarted)"
                            .to_owned(),
                },
            )),
            // A reused session the server forgot: redial once and retry (rmcp's own transparent
            // re-initialisation normally handles this first).
            Err((_, Some(404))) if reused => {
                tracing::debug!(
                    label = key.label(),
                    "pooled MCP session expired; redialling once"
                );
                let (fresh, _) = self.session(key, target, Some(&session)).await?;
                self.invoke(&fresh, &endpoint, real_name, &arguments, elicitor)
                    .await
                    .map_err(|(e, _)| e)
            }
            Err((e, _)) => Err(e),
        }
    }

    /// Remembers that `key`'s session is lost (when `e` says so), so no later call of this
    /// execution lands on a new session instead.
    fn mark_lost(&self, key: &SessionKey, e: McpError) -> McpError {
        if let McpError::SessionLost { message, .. } = &e {
            lock(&self.lost).insert(key.label().to_owned(), message.clone());
        }
        e
    }

    /// Sessions to reattach instead of dialling (see [`SessionRecord`]).
    pub fn reattach_to(&self, records: impl IntoIterator<Item = SessionRecord>) {
        let mut hints = lock(&self.reattach);
        for record in records {
            hints.insert(record.label.clone(), record);
        }
    }

    /// What it would take to come back to this scope's sessions (and to those it still has to
    /// reattach) after a restart.
    pub fn records(&self) -> Vec<SessionRecord> {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).values().cloned().collect();
        let mut records: Vec<SessionRecord> = lock(&self.reattach).values().cloned().collect();
        for slot in slots {
            let Ok(guard) = slot.lease.try_lock() else {
                continue;
            };
            let Some(lease) = guard.as_ref() else {
                continue;
            };
            let session = &lease.session;
            if session.label.is_empty() || records.iter().any(|r| r.label == session.label) {
                continue;
            }
            let info = session.peer.peer_info();
            records.push(SessionRecord {
                label: session.label.clone(),
                transport: session.transport.to_owned(),
                session_id: session.link.session_id.get().map(|id| id.to_string()),
                protocol_version: info.as_ref().map(|i| i.protocol_version.to_string()),
                server: info.and_then(|i| serde_json::to_value(&*i).ok()),
            });
        }
        records
    }

    /// Keeps this scope's remote sessions open at the server when they are closed (no DELETE),
    /// so the execution can come back to them after a restart.
    pub fn preserve(&self) {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).values().cloned().collect();
        for slot in slots {
            if let Ok(guard) = slot.lease.try_lock()
                && let Some(lease) = guard.as_ref()
            {
                lease.session.link.keep.store(true, Ordering::SeqCst);
            }
        }
    }

    fn take_leases(&self) -> Vec<Arc<Session>> {
        let slots: Vec<Arc<Slot>> = lock(&self.slots).drain().map(|(_, s)| s).collect();
        slots
            .into_iter()
            .filter_map(|slot| match slot.lease.try_lock() {
                Ok(mut guard) => guard.take().map(|l| l.session),
                Err(_) => None,
            })
            .collect()
    }

    /// Return every session to the pool (one idle per key; broken ones are closed).
    pub async fn finish(self) {
        let sessions = self.take_leases();
        let inner = self.inner.clone();
        futures::future::join_all(sessions.into_iter().map(|s| inner.release(s))).await;
    }
}

impl Drop for ExecutionScope {
    fn drop(&mut self) {
        let sessions = self.take_leases();
        if sessions.is_empty() {
            return;
        }
        let inner = self.inner.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    futures::future::join_all(sessions.into_iter().map(|s| inner.release(s))).await;
                });
            }
            Err(_) => {
                // No runtime: drop the services (rmcp cancels them); keep the accounting right.
                let mut state = lock(&inner.state);
                for s in sessions {
                    state.leased.remove(&s.serial);
                    state.doomed.remove(&s.serial);
                    if lock(&s.service).take().is_some() {
                        inner.live.fetch_sub(1, Ordering::SeqCst);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper_util::client::proxy::matcher::Matcher;

    #[test]
    fn a_proxied_endpoint_takes_the_client_that_honours_the_proxy() {
        let mut http = HttpClients::new(NetworkAccess::LOCAL);
        http.proxies = Matcher::builder()
            .all("http://proxy.internal:3128")
            .no("localhost,127.0.0.1")
            .build();
        let exempt = url::Url::parse("http://127.0.0.1:9/mcp").unwrap();
        let proxied = url::Url::parse("https://mcp.example.com/mcp").unwrap();
        assert_eq!(
            http.keep_alive_for(&exempt).is_some(),
            upstream_http::QUICK_ACK_AVAILABLE
        );
        assert!(http.keep_alive_for(&proxied).is_none());
        http.proxies = Matcher::builder().build();
        assert_eq!(
            http.keep_alive_for(&proxied).is_some(),
            upstream_http::QUICK_ACK_AVAILABLE
        );
    }
}
