//! The HTTP client of the streamable-HTTP transport: keep-alive connections that still answer at
//! once on servers that leave Nagle's algorithm on.
//!
//! A streamable-HTTP server answers a POST with an SSE stream written in (at least) two pieces:
//! headers plus rmcp's priming event first, the JSON-RPC response a moment later. If the server
//! leaves Nagle on (no TCP_NODELAY, common: axum and hyper servers, Java), the second write waits
//! for the ACK of the first; on a reused keep-alive connection Linux acknowledges in delayed-ACK
//! ("pingpong") mode, so that ACK comes only after the ~40 ms timer, and every call costs ~44 ms.
//! rmcp's own client therefore opens a fresh TCP (and for https, TLS) connection per POST, which
//! costs a handshake per tool call: on loopback about a quarter of a call, against a remote server
//! one or two round trips.
//!
//! This client keeps connections alive and sets `TCP_QUICKACK` after every read from the socket,
//! so the kernel acknowledges at once and the server's second write is never held. Idle
//! connections are kept only briefly ([`IDLE_TIMEOUT`]): the calls that gain are those of one
//! execution, milliseconds apart, and a connection is never reused after a server (gunicorn 2 s,
//! Node and uvicorn 5 s) may have closed it. Where quick ACKs are not available (not Linux), or an
//! environment proxy applies to the endpoint (`HTTP_PROXY`/`HTTPS_PROXY`/`ALL_PROXY`, `NO_PROXY`),
//! the transport uses reqwest with a fresh connection per POST as before (see `pool.rs`).
//!
//! The mapping of responses to [`StreamableHttpError`] follows rmcp's reqwest client: the session
//! pool, OAuth and the error diagnosis read the same variants whichever client carried the call.

use executor_core::network::NetworkAccess;
use std::borrow::Cow;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::{BoxStream, Stream, StreamExt};
use http::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, LOCATION, RETRY_AFTER, WWW_AUTHENTICATE,
};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, SseError, StreamableHttpClient,
    StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream_rmcp::{Sse, SseStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// How long an idle connection is kept for the next call. Shorter than the keep-alive timeout of
/// common servers (gunicorn 2 s), so a kept connection is never one the server is closing.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(1);
/// Idle connections kept per host (an execution's concurrent calls each hold one while in flight).
const MAX_IDLE_PER_HOST: usize = 16;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A response body dropped before its end is read on, this long and this far, so that its
/// connection can serve the next call; beyond either the connection is closed.
const DRAIN_WAIT: Duration = Duration::from_millis(100);
const DRAIN_MAX_BYTES: usize = 64 * 1024;
/// Same-origin 307/308 redirects followed, as rmcp's default client does.
const MAX_REDIRECTS: usize = 10;
/// rmcp's default limit on one SSE event when the transport passes none.
const DEFAULT_MAX_SSE_EVENT: usize = 16 * 1024 * 1024;
const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";
const ACCEPT_BOTH: &str = "text/event-stream, application/json";

/// Whether this platform can keep streamable-HTTP connections alive without Nagle stalls.
pub(crate) const QUICK_ACK_AVAILABLE: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// A failure of the HTTP exchange itself (connect, TLS, I/O, redirects); answers the server did
/// send are mapped to the other [`StreamableHttpError`] variants.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UpstreamHttpError {
    #[error("error connecting: {0}")]
    Connect(#[source] std::io::Error),
    #[error("TLS handshake failed: {0}")]
    Tls(#[source] std::io::Error),
    #[error("HTTP exchange failed: {0}")]
    Http(#[source] hyper::Error),
    #[error("error reading the response body: {0}")]
    Body(#[source] hyper::Error),
    #[error("an SSE event exceeds {max} bytes")]
    EventTooLarge { max: usize },
    #[error("invalid request: {0}")]
    InvalidRequest(#[source] http::Error),
    #[error("{0}")]
    Redirect(String),
    /// The endpoint is not an http(s) URL with a host.
    #[error("{0}")]
    Url(String),
}

impl UpstreamHttpError {
    /// The connection could not be established (refused, DNS, TLS handshake, timeout).
    pub(crate) fn is_connect(&self) -> bool {
        matches!(self, Self::Connect(_) | Self::Tls(_))
    }
}

type HttpError = StreamableHttpError<UpstreamHttpError>;

/// A TCP stream that asks the kernel for an immediate ACK after every read (see the module docs).
struct QuickAckTcp(TcpStream);

impl QuickAckTcp {
    fn quick_ack(&self) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            // A failure only means a possibly delayed ACK: nothing to report.
            let _ = socket2::SockRef::from(&self.0).set_tcp_quickack(true);
        }
    }
}

impl AsyncRead for QuickAckTcp {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.0).poll_read(cx, buf))?;
        if buf.filled().len() > before {
            // Linux leaves quick-ACK mode as soon as we send again (the next request), so this is
            // set again after each read, not once per connection.
            self.quick_ack();
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for QuickAckTcp {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// Where a connection goes: connections are pooled per origin.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Origin {
    https: bool,
    /// As in the URL (an IPv6 address keeps its brackets).
    host: Arc<str>,
    port: u16,
}

impl Origin {
    fn of(uri: &Uri) -> Result<Self, UpstreamHttpError> {
        let invalid =
            |what: &str| UpstreamHttpError::Url(format!("cannot connect to {uri}: {what}"));
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(invalid("not an http(s) URL")),
        };
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| invalid("no host"))?;
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        Ok(Self {
            https,
            host: host.into(),
            port,
        })
    }

    /// The host to resolve or to name in TLS: without an IPv6 address's brackets.
    fn bare_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }

    fn host_header(&self) -> Result<HeaderValue, UpstreamHttpError> {
        let default_port = if self.https { 443 } else { 80 };
        let value = if self.port == default_port {
            self.host.to_string()
        } else {
            format!("{}:{}", self.host, self.port)
        };
        HeaderValue::try_from(value)
            .map_err(|e| UpstreamHttpError::InvalidRequest(http::Error::from(e)))
    }
}

struct IdleConnection {
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

#[derive(Default)]
struct PoolState {
    idle: HashMap<Origin, Vec<IdleConnection>>,
    /// A task closes expired idle connections while any are kept.
    sweeping: bool,
}

struct Shared {
    tls: tokio_rustls::TlsConnector,
    access: NetworkAccess,
    state: Mutex<PoolState>,
}

fn lock(state: &Mutex<PoolState>) -> std::sync::MutexGuard<'_, PoolState> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

fn fresh(idle: &IdleConnection) -> bool {
    idle.since.elapsed() < IDLE_TIMEOUT && !idle.sender.is_closed()
}

impl Shared {
    /// The most recently used idle connection to `origin` that is still fresh.
    fn checkout(&self, origin: &Origin) -> Option<SendRequest<Full<Bytes>>> {
        let mut state = lock(&self.state);
        let idle = state.idle.get_mut(origin)?;
        while let Some(connection) = idle.pop() {
            if fresh(&connection) {
                return Some(connection.sender);
            }
        }
        None
    }

    fn release(self: &Arc<Self>, origin: Origin, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let mut state = lock(&self.state);
        let idle = state.idle.entry(origin).or_default();
        if idle.len() >= MAX_IDLE_PER_HOST {
            return;
        }
        idle.push(IdleConnection {
            sender,
            since: Instant::now(),
        });
        if !state.sweeping
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            state.sweeping = true;
            runtime.spawn(sweep(Arc::downgrade(self)));
        }
    }
}

/// Close idle connections past [`IDLE_TIMEOUT`] (dropping the last `SendRequest` ends the
/// connection's task, which closes the socket); stop when none is left, or with the client.
async fn sweep(shared: Weak<Shared>) {
    loop {
        tokio::time::sleep(IDLE_TIMEOUT).await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let mut state = lock(&shared.state);
        state.idle.retain(|_, idle| {
            idle.retain(fresh);
            !idle.is_empty()
        });
        if state.idle.is_empty() {
            state.sweeping = false;
            return;
        }
    }
}

/// A connection lent to one exchange; back to the pool once its response body has been read.
struct Lease {
    shared: Arc<Shared>,
    origin: Origin,
    sender: SendRequest<Full<Bytes>>,
}

impl Lease {
    fn release(self) {
        self.shared.release(self.origin, self.sender);
    }
}

/// A response body that returns its connection to the pool as soon as its end is read.
pub(crate) struct UpstreamBody {
    body: Option<Incoming>,
    /// The next item, read ahead to see whether the end follows a chunk.
    ahead: Option<Result<Bytes, hyper::Error>>,
    done: bool,
    lease: Option<Lease>,
}

impl UpstreamBody {
    fn new(body: Incoming, lease: Lease) -> Self {
        Self {
            body: Some(body),
            ahead: None,
            done: false,
            lease: Some(lease),
        }
    }

    fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, hyper::Error>>> {
        let Some(body) = self.body.as_mut() else {
            return Poll::Ready(None);
        };
        loop {
            match ready!(Pin::new(&mut *body).poll_frame(cx)) {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data()
                        && !data.is_empty()
                    {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
                Some(Err(e)) => {
                    // The connection is unusable after a failed read.
                    self.lease = None;
                    self.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                None => {
                    self.done = true;
                    if let Some(lease) = self.lease.take() {
                        lease.release();
                    }
                    return Poll::Ready(None);
                }
            }
        }
    }
}

impl Stream for UpstreamBody {
    type Item = Result<Bytes, UpstreamHttpError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(item) = self.ahead.take() {
            return Poll::Ready(Some(item.map_err(UpstreamHttpError::Body)));
        }
        if self.done {
            return Poll::Ready(None);
        }
        match ready!(self.poll_data(cx)) {
            Some(Ok(data)) => {
                // Read ahead: when the end is already here, the connection goes back to the pool
                // now, before the caller acts on this chunk; its next request would otherwise
                // find no idle connection and open one.
                if let Poll::Ready(Some(next)) = self.poll_data(cx) {
                    self.ahead = Some(next);
                }
                Poll::Ready(Some(Ok(data)))
            }
            other => Poll::Ready(other.map(|item| item.map_err(UpstreamHttpError::Body))),
        }
    }
}

impl Drop for UpstreamBody {
    fn drop(&mut self) {
        if self.done || self.lease.is_none() {
            return;
        }
        // Unread rest (a 202's empty body, a stream its reader left): often already here.
        let mut cx = Context::from_waker(Waker::noop());
        let mut budget = DRAIN_MAX_BYTES;
        loop {
            match self.poll_data(&mut cx) {
                Poll::Ready(Some(Ok(data))) if data.len() < budget => budget -= data.len(),
                Poll::Ready(_) => return,
                Poll::Pending => break,
            }
        }
        let (Some(mut body), Some(lease)) = (self.body.take(), self.lease.take()) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let ended = tokio::time::timeout(DRAIN_WAIT, async {
                while let Some(frame) = body.frame().await {
                    match frame {
                        Ok(frame) => {
                            let len = frame.data_ref().map_or(0, Bytes::len);
                            if len >= budget {
                                return false;
                            }
                            budget -= len;
                        }
                        Err(_) => return false,
                    }
                }
                true
            })
            .await;
            if ended == Ok(true) {
                lease.release();
            }
        });
    }
}

/// Resolve `origin` and connect to the first address `access` allows that answers (an address
/// written in the URL is resolved to itself, so it is checked too).
async fn connect_tcp(origin: &Origin, access: NetworkAccess) -> std::io::Result<TcpStream> {
    let mut last = None;
    let found = tokio::net::lookup_host((origin.bare_host(), origin.port))
        .await?
        .collect();
    let allowed = crate::network::allowed_addresses(access, found)
        .map_err(|refused| std::io::Error::new(std::io::ErrorKind::PermissionDenied, refused))?;
    for addr in allowed {
        match TcpStream::connect(addr).await {
            Ok(tcp) => return Ok(tcp),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "failed to lookup address: no address",
        )
    }))
}

/// Run hyper's HTTP/1 handshake on `io` and drive the connection on the runtime.
async fn handshake<T>(io: T) -> Result<SendRequest<Full<Bytes>>, UpstreamHttpError>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(UpstreamHttpError::Http)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "upstream HTTP connection ended");
        }
    });
    Ok(sender)
}

fn timed_out() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, "connect timed out")
}

/// The keep-alive streamable-HTTP client (cheap to clone: one connection pool).
#[derive(Clone)]
pub(crate) struct UpstreamHttp(Arc<Shared>);

impl UpstreamHttp {
    /// Build the client: loads the platform's root certificates for https endpoints.
    pub(crate) fn new(access: NetworkAccess) -> Result<Self, rustls::Error> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut tls = {
            use rustls_platform_verifier::BuilderVerifierExt;
            rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()?
                .with_platform_verifier()?
                .with_no_client_auth()
        };
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self(Arc::new(Shared {
            tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
            access,
            state: Mutex::default(),
        })))
    }

    /// A new connection to `origin` (TCP, TLS for https, the HTTP/1 handshake).
    async fn connect(
        &self,
        origin: &Origin,
    ) -> Result<SendRequest<Full<Bytes>>, UpstreamHttpError> {
        let tcp = tokio::time::timeout(CONNECT_TIMEOUT, connect_tcp(origin, self.0.access))
            .await
            .map_err(|_| UpstreamHttpError::Connect(timed_out()))?
            .map_err(UpstreamHttpError::Connect)?;
        let _ = tcp.set_nodelay(true);
        let tcp = QuickAckTcp(tcp);
        if !origin.https {
            return handshake(TokioIo::new(tcp)).await;
        }
        let name = rustls::pki_types::ServerName::try_from(origin.bare_host().to_owned()).map_err(
            |e| UpstreamHttpError::Tls(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)),
        )?;
        let tls = tokio::time::timeout(CONNECT_TIMEOUT, self.0.tls.connect(name, tcp))
            .await
            .map_err(|_| UpstreamHttpError::Tls(timed_out()))?
            .map_err(UpstreamHttpError::Tls)?;
        handshake(TokioIo::new(tls)).await
    }

    /// One exchange on a pooled connection, or a new one. A request a reused connection never
    /// wrote (the server had closed it) is retried on another; one that was written is not.
    async fn exchange(
        &self,
        origin: &Origin,
        mut request: Request<Full<Bytes>>,
    ) -> Result<Response<UpstreamBody>, UpstreamHttpError> {
        loop {
            let (mut sender, reused) = match self.0.checkout(origin) {
                Some(sender) => (sender, true),
                None => (self.connect(origin).await?, false),
            };
            if reused && sender.ready().await.is_err() {
                continue;
            }
            match sender.try_send_request(request).await {
                Ok(response) => {
                    let lease = Lease {
                        shared: self.0.clone(),
                        origin: origin.clone(),
                        sender,
                    };
                    return Ok(response.map(|body| UpstreamBody::new(body, lease)));
                }
                Err(mut e) => match e.take_message() {
                    Some(unsent) if reused => request = unsent,
                    _ => return Err(UpstreamHttpError::Http(e.into_error())),
                },
            }
        }
    }

    /// Send a request, following same-origin 307/308 redirects (which keep method and body).
    async fn send(
        &self,
        method: Method,
        uri: &str,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<Response<UpstreamBody>, HttpError> {
        let mut uri: Uri = uri
            .parse()
            .map_err(|e: http::uri::InvalidUri| client_error(InvalidRequest(e.into())))?;
        for _ in 0..=MAX_REDIRECTS {
            let origin = Origin::of(&uri).map_err(client_error)?;
            let path = uri.path_and_query().map_or("/", |p| p.as_str());
            let mut request = Request::builder()
                .method(method.clone())
                .uri(path)
                .body(Full::new(body.clone()))
                .map_err(|e| client_error(InvalidRequest(e)))?;
            *request.headers_mut() = headers.clone();
            let host = origin.host_header().map_err(client_error)?;
            request.headers_mut().insert(HOST, host);
            let response = self
                .exchange(&origin, request)
                .await
                .map_err(client_error)?;
            if !matches!(
                response.status(),
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            ) {
                return Ok(response);
            }
            let next = redirect_target(&uri, response.headers()).ok_or_else(|| {
                client_error(UpstreamHttpError::Redirect(format!(
                    "HTTP {} from {uri} without a usable same-origin Location",
                    response.status()
                )))
            })?;
            tracing::debug!(from = %uri.path(), to = %next.path(), "following a redirect");
            uri = next;
        }
        Err(client_error(UpstreamHttpError::Redirect(format!(
            "more than {MAX_REDIRECTS} redirects from {uri}"
        ))))
    }
}

use UpstreamHttpError::InvalidRequest;

fn client_error(e: UpstreamHttpError) -> HttpError {
    StreamableHttpError::Client(e)
}

/// The target of a redirect when it stays on the same scheme, host and port.
fn redirect_target(from: &Uri, headers: &HeaderMap) -> Option<Uri> {
    let location = headers.get(LOCATION)?.to_str().ok()?;
    let base = url::Url::parse(&from.to_string()).ok()?;
    let next = base.join(location).ok()?;
    if next.origin() != base.origin() {
        return None;
    }
    next.as_str().parse().ok()
}

/// The request headers common to all three methods; custom headers may not replace the ones the
/// transport owns (`MCP-Protocol-Version` passes: rmcp's worker injects it this way).
fn request_headers(
    auth_token: Option<String>,
    session_id: Option<&str>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
) -> Result<HeaderMap, HttpError> {
    let mut headers = HeaderMap::with_capacity(custom_headers.len() + 4);
    for (name, value) in custom_headers {
        if matches!(name.as_str(), "accept" | SESSION_ID | LAST_EVENT_ID) {
            return Err(StreamableHttpError::ReservedHeaderConflict(
                name.to_string(),
            ));
        }
        headers.insert(name, value);
    }
    if let Some(token) = auth_token {
        let value = HeaderValue::try_from(format!("Bearer {token}")).map_err(|_| {
            StreamableHttpError::UnexpectedServerResponse(Cow::Borrowed(
                "the bearer token is not a valid header value",
            ))
        })?;
        headers.insert(AUTHORIZATION, sensitive(value));
    }
    if let Some(id) = session_id {
        let value = HeaderValue::from_str(id).map_err(|_| {
            StreamableHttpError::UnexpectedServerResponse(Cow::Borrowed(
                "the server's session id is not a valid header value",
            ))
        })?;
        headers.insert(SESSION_ID, value);
    }
    Ok(headers)
}

fn sensitive(mut value: HeaderValue) -> HeaderValue {
    value.set_sensitive(true);
    value
}

/// The media type (without parameters) of `value` is `expected`.
fn media_type_is(value: &HeaderValue, expected: &str) -> bool {
    value
        .to_str()
        .ok()
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

/// 401 and 403 with a challenge become the errors OAuth acts on.
fn auth_challenge(response: &Response<UpstreamBody>) -> Result<(), HttpError> {
    let status = response.status();
    if !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        return Ok(());
    }
    let Some(header) = response.headers().get(WWW_AUTHENTICATE) else {
        return Ok(());
    };
    let header = header.to_str().map_err(|_| {
        StreamableHttpError::UnexpectedServerResponse(Cow::Borrowed(
            "invalid www-authenticate header value",
        ))
    })?;
    Err(if status == StatusCode::UNAUTHORIZED {
        StreamableHttpError::AuthRequired(AuthRequiredError::new(header.to_owned()))
    } else {
        StreamableHttpError::InsufficientScope(InsufficientScopeError::new(
            header.to_owned(),
            crate::error::challenge_param(header, "scope"),
        ))
    })
}

/// 429 and 5xx keep their status and `Retry-After` for the transport's retry logic.
fn status_error(status: StatusCode, headers: &HeaderMap) -> Option<HttpStatusError> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    // `HttpStatusError::new` drops an oversized value.
    let retry_after = header_str(headers, RETRY_AFTER.as_str());
    Some(HttpStatusError::new(status.as_u16(), retry_after))
}

/// The whole body, refused beyond `max` bytes (checked before buffering each chunk).
async fn read_bounded(response: Response<UpstreamBody>, max: usize) -> Result<Vec<u8>, HttpError> {
    let declared = response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
    }
    let mut stream = response.into_body();
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(client_error)?;
        if chunk.len() > max - body.len() {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// At most `max` bytes of the body, for a diagnostic; the rest is not read.
async fn read_prefix(response: Response<UpstreamBody>, max: usize) -> String {
    let mut stream = response.into_body();
    let mut body = Vec::new();
    while body.len() < max {
        match stream.next().await {
            Some(Ok(chunk)) => {
                let take = chunk.len().min(max - body.len());
                body.extend_from_slice(&chunk[..take]);
            }
            Some(Err(_)) => return "<failed to read response body>".to_owned(),
            None => break,
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The SSE events of `response`, each refused beyond `max_event` bytes.
fn sse_events(
    response: Response<UpstreamBody>,
    max_event: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut limit = EventLimit::new(max_event);
    let bytes = response.into_body().map(move |chunk| {
        let chunk = chunk?;
        limit.feed(&chunk)?;
        Ok::<_, UpstreamHttpError>(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// Counts the bytes of the SSE event being received; a blank line ends an event.
struct EventLimit {
    max: usize,
    current: usize,
    at_line_start: bool,
    after_cr: bool,
}

impl EventLimit {
    fn new(max: usize) -> Self {
        Self {
            max,
            current: 0,
            at_line_start: true,
            after_cr: false,
        }
    }

    fn feed(&mut self, chunk: &[u8]) -> Result<(), UpstreamHttpError> {
        for &byte in chunk {
            let after_cr = std::mem::take(&mut self.after_cr);
            match byte {
                // The LF of a CRLF pair: the line already ended at the CR.
                b'\n' if after_cr => {}
                b'\r' | b'\n' => {
                    if self.at_line_start {
                        self.current = 0;
                    }
                    self.at_line_start = true;
                    self.after_cr = byte == b'\r';
                }
                _ => {
                    self.at_line_start = false;
                    self.current += 1;
                    if self.current > self.max {
                        return Err(UpstreamHttpError::EventTooLarge { max: self.max });
                    }
                }
            }
        }
        Ok(())
    }
}

fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name)?.to_str().ok().map(str::to_owned)
}

impl StreamableHttpClient for UpstreamHttp {
    type Error = UpstreamHttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let session_attached = session_id.is_some();
        let mut headers = request_headers(auth_token, session_id.as_deref(), custom_headers)?;
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
        let body = serde_json::to_vec(&message).map_err(StreamableHttpError::Deserialize)?;
        let response = self
            .send(Method::POST, &uri, headers, Bytes::from(body))
            .await?;
        auth_challenge(&response)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_attached {
            return Err(StreamableHttpError::SessionExpired);
        }
        let content_type = response.headers().get(CONTENT_TYPE).cloned();
        let is_json = content_type
            .as_ref()
            .is_some_and(|ct| media_type_is(ct, JSON));
        // 429 and non-JSON 5xx answers are classified without reading their bodies.
        let status_error = match status_error(status, response.headers()) {
            Some(error) if !is_json || status == StatusCode::TOO_MANY_REQUESTS => {
                return Err(error.into());
            }
            other => other,
        };
        let new_session = header_str(response.headers(), SESSION_ID);
        // A POST of a notification, response or error leaves no request waiting on this answer.
        let awaits_no_response = matches!(
            message,
            ClientJsonRpcMessage::Notification(_)
                | ClientJsonRpcMessage::Response(_)
                | ClientJsonRpcMessage::Error(_)
        );
        let empty = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .is_some_and(|v| v.as_bytes() == b"0");
        if status.is_success() && empty && awaits_no_response {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            // A JSON-RPC error in a failed answer is the server's reply to the request; any other
            // body is a diagnostic, of which a prefix is kept. (rmcp's client also re-correlates a
            // rejected `server/discover`; this transport never sends one: it initializes.)
            let unchallenged_auth =
                matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
            let text = if is_json && !unchallenged_auth {
                match read_bounded(response, limits.max_json_response_size).await {
                    Ok(body) => {
                        if let Ok(error @ JsonRpcMessage::Error(_)) =
                            serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                        {
                            return Ok(StreamableHttpPostResponse::Json(error, new_session));
                        }
                        let keep = body.len().min(limits.max_error_response_size);
                        String::from_utf8_lossy(&body[..keep]).into_owned()
                    }
                    Err(e @ StreamableHttpError::ResponseBodyTooLarge { .. }) => {
                        return Err(status_error.map(Into::into).unwrap_or(e));
                    }
                    Err(_) => "<failed to read response body>".to_owned(),
                }
            } else {
                read_prefix(response, limits.max_error_response_size).await
            };
            if let Some(error) = status_error {
                return Err(error.into());
            }
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {text}"),
            )));
        }
        match content_type {
            Some(ct) if media_type_is(&ct, EVENT_STREAM) => Ok(StreamableHttpPostResponse::Sse(
                sse_events(response, limits.max_sse_event_size),
                new_session,
            )),
            Some(ct) if media_type_is(&ct, JSON) => {
                let body = read_bounded(response, limits.max_json_response_size).await?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, new_session)),
                    Err(_) if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
                    Err(e) => Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                        format!("the response is not JSON-RPC: {e}"),
                    ))),
                }
            }
            // Some servers answer `notifications/initialized` with a bare 200.
            _ if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
            other => Err(StreamableHttpError::UnexpectedContentType(
                other.map(|ct| String::from_utf8_lossy(ct.as_bytes()).into_owned()),
            )),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        let headers = request_headers(auth_token, Some(&session_id), custom_headers)?;
        let response = self
            .send(Method::DELETE, &uri, headers, Bytes::new())
            .await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            tracing::debug!("the server does not support deleting sessions");
            return Ok(());
        }
        if status.is_client_error() || status.is_server_error() {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} closing the session"),
            )));
        }
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_token,
            custom_headers,
            DEFAULT_MAX_SSE_EVENT,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let mut headers = request_headers(auth_token, session_id.as_deref(), custom_headers)?;
        headers.insert(ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
        if let Some(id) = last_event_id
            && let Ok(value) = HeaderValue::try_from(id)
        {
            headers.insert(LAST_EVENT_ID, value);
        }
        let response = self.send(Method::GET, &uri, headers, Bytes::new()).await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        auth_challenge(&response)?;
        if let Some(error) = status_error(status, response.headers()) {
            return Err(error.into());
        }
        if !status.is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status} opening the event stream"),
            )));
        }
        match response.headers().get(CONTENT_TYPE) {
            Some(ct) if media_type_is(ct, EVENT_STREAM) || media_type_is(ct, JSON) => {
                Ok(sse_events(response, max_sse_event_size))
            }
            other => Err(StreamableHttpError::UnexpectedContentType(
                other.map(|ct| String::from_utf8_lossy(ct.as_bytes()).into_owned()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn an_event_over_the_limit_is_refused_and_a_blank_line_resets_the_count() {
        let mut limit = EventLimit::new(10);
        limit.feed(b"data: 1234\n\n").expect("10 bytes fit");
        limit
            .feed(b"data: 1234\r\n\r\ndata: 12")
            .expect("a CRLF blank line ends the event");
        limit.feed(b"34\r").expect("still 10");
        limit.feed(b"\n").expect("LF of a CRLF split across chunks");
        assert!(matches!(
            limit.feed(b"x"),
            Err(UpstreamHttpError::EventTooLarge { max: 10 })
        ));
        let mut split = EventLimit::new(8);
        assert!(split.feed(b"data: ").is_ok() && split.feed(b"abc").is_err());
    }

    #[test]
    fn redirects_stay_on_the_origin() {
        let from: Uri = "http://127.0.0.1:9/mcp".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(LOCATION, HeaderValue::from_static("/v2/mcp"));
        assert_eq!(
            redirect_target(&from, &headers).map(|u| u.to_string()),
            Some("http://127.0.0.1:9/v2/mcp".to_owned())
        );
        headers.insert(
            LOCATION,
            HeaderValue::from_static("http://evil.example/mcp"),
        );
        assert_eq!(redirect_target(&from, &headers), None);
    }

    /// What the raw server answers: the whole response, and whether to close the connection
    /// after it (without saying so in a header).
    type Answer = (String, bool);

    /// A minimal HTTP/1.1 server on loopback that answers each request by its path and counts the
    /// connections it accepts.
    async fn raw_server(
        answer: fn(&str) -> Answer,
    ) -> (String, Arc<AtomicUsize>, Arc<Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let heads = Arc::new(Mutex::new(Vec::new()));
        let (count, log) = (accepted.clone(), heads.clone());
        tokio::spawn(async move {
            while let Ok((mut tcp, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                let log = log.clone();
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    loop {
                        let head_end = loop {
                            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                                break at + 4;
                            }
                            let mut chunk = [0u8; 4096];
                            match tcp.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        };
                        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                        let length = head
                            .lines()
                            .find_map(|l| {
                                let (name, value) = l.split_once(':')?;
                                name.eq_ignore_ascii_case("content-length")
                                    .then(|| value.trim().parse::<usize>().ok())?
                            })
                            .unwrap_or(0);
                        while buf.len() < head_end + length {
                            let mut chunk = [0u8; 4096];
                            match tcp.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        buf.drain(..head_end + length);
                        let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
                        log.lock().unwrap().push(head);
                        let (response, close) = answer(&path);
                        if tcp.write_all(response.as_bytes()).await.is_err() || close {
                            return;
                        }
                    }
                });
            }
        });
        (format!("http://{addr}"), accepted, heads)
    }

    fn json(status: &str, extra: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    const PONG: &str = r#"{"jsonrpc":"2.0","id":1,"result":{}}"#;

    fn ping() -> ClientJsonRpcMessage {
        serde_json::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap()
    }

    async fn post(
        client: &UpstreamHttp,
        url: String,
        session: Option<&str>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        client
            .post_message(
                url.into(),
                ping(),
                session.map(Arc::from),
                None,
                HashMap::new(),
            )
            .await
    }

    fn sse(status: &str) -> String {
        let body = format!("data: {PONG}\n\n");
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        )
    }

    fn answers(path: &str) -> Answer {
        match path {
            "/json" => (json("200 OK", "", PONG), false),
            "/sse" => (sse("200 OK"), false),
            "/closing" => (json("200 OK", "", PONG), true),
            "/accepted" => ("HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned(), false),
            "/login" => (
                json("401 Unauthorized", "www-authenticate: Bearer resource_metadata=\"x\"\r\n", "{}"),
                false,
            ),
            "/scope" => (
                json(
                    "403 Forbidden",
                    "www-authenticate: Bearer error=\"insufficient_scope\", scope=\"a b\"\r\n",
                    "{}",
                ),
                false,
            ),
            "/gone" => (json("404 Not Found", "", "{}"), false),
            "/busy" => (
                "HTTP/1.1 503 Service Unavailable\r\nretry-after: 7\r\ncontent-length: 4\r\n\r\nbusy"
                    .to_owned(),
                false,
            ),
            "/rpc-error" => (
                json(
                    "500 Internal Server Error",
                    "",
                    r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"boom"}}"#,
                ),
                false,
            ),
            "/moved" => (
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: /json\r\ncontent-length: 0\r\n\r\n"
                    .to_owned(),
                false,
            ),
            "/away" => (
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://other.invalid/json\r\ncontent-length: 0\r\n\r\n"
                    .to_owned(),
                false,
            ),
            _ => (json("400 Bad Request", "", "{}"), false),
        }
    }

    #[tokio::test]
    async fn one_connection_carries_sequential_exchanges_and_returns_when_the_body_ends() {
        let (base, accepted, _) = raw_server(answers).await;
        let client = UpstreamHttp::new(NetworkAccess::LOCAL).unwrap();
        for path in ["/json", "/sse", "/accepted", "/json", "/sse"] {
            match post(&client, format!("{base}{path}"), None).await.unwrap() {
                StreamableHttpPostResponse::Sse(mut events, _) => {
                    let event = events.next().await.expect("one event").expect("an event");
                    assert_eq!(event.data.as_deref(), Some(PONG));
                    assert!(events.next().await.is_none());
                }
                StreamableHttpPostResponse::Json(..) | StreamableHttpPostResponse::Accepted => {}
                other => panic!("{path}: {other:?}"),
            }
        }
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "one keep-alive connection"
        );
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_not_reused() {
        let (base, accepted, _) = raw_server(answers).await;
        let client = UpstreamHttp::new(NetworkAccess::LOCAL).unwrap();
        for _ in 0..3 {
            let answer = post(&client, format!("{base}/closing"), None).await;
            assert!(
                matches!(answer, Ok(StreamableHttpPostResponse::Json(..))),
                "{answer:?}"
            );
            // The close reaches the pooled connection's task a moment after the response.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn answers_map_to_the_errors_the_pool_and_oauth_read() {
        let (base, accepted, heads) = raw_server(answers).await;
        let client = UpstreamHttp::new(NetworkAccess::LOCAL).unwrap();
        let url = |path: &str| format!("{base}{path}");
        assert!(matches!(
            post(&client, url("/login"), None).await,
            Err(StreamableHttpError::AuthRequired(e)) if e.www_authenticate_header.contains("resource_metadata")
        ));
        match post(&client, url("/scope"), None).await {
            Err(StreamableHttpError::InsufficientScope(e)) => {
                assert_eq!(e.required_scope.as_deref(), Some("a b"));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            post(&client, url("/gone"), Some("s-1")).await,
            Err(StreamableHttpError::SessionExpired)
        ));
        match post(&client, url("/busy"), None).await {
            Err(StreamableHttpError::HttpStatus(e)) => {
                assert_eq!((e.status, e.retry_after.as_deref()), (503, Some("7")));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            post(&client, url("/rpc-error"), None).await,
            Ok(StreamableHttpPostResponse::Json(
                JsonRpcMessage::Error(_),
                _
            ))
        ));
        assert!(matches!(
            post(&client, url("/nothing-here"), None).await,
            Err(StreamableHttpError::UnexpectedServerResponse(text)) if text.starts_with("HTTP 400")
        ));
        assert!(matches!(
            post(&client, url("/moved"), None).await,
            Ok(StreamableHttpPostResponse::Json(
                JsonRpcMessage::Response(_),
                _
            ))
        ));
        assert!(matches!(
            post(&client, url("/away"), None).await,
            Err(StreamableHttpError::Client(UpstreamHttpError::Redirect(_)))
        ));
        // Every answer above, read or not, left its connection reusable.
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        let heads = heads.lock().unwrap().clone();
        let gone = heads.iter().find(|h| h.starts_with("POST /gone ")).unwrap();
        assert!(gone.contains("mcp-session-id: s-1"), "{gone}");
        assert!(
            gone.to_ascii_lowercase()
                .contains(&format!("host: {}", &base[7..])),
            "{gone}"
        );
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_connect_error() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let client = UpstreamHttp::new(NetworkAccess::LOCAL).unwrap();
        match post(&client, format!("http://127.0.0.1:{port}/mcp"), None).await {
            Err(StreamableHttpError::Client(e)) => assert!(e.is_connect(), "{e}"),
            other => panic!("{other:?}"),
        }
    }
}
