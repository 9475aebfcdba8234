//! Live `/mcp` sessions: who may use each, how many live, and how long an idle one is held.
//!
//! A session is bound to the credential that opened it ([`SessionCredential`]: on a team server
//! the OAuth grant, API key or sign-in session, on a local server the token) and to its endpoint;
//! the MCP router answers a request of another credential as if the session did not exist.
//!
//! Caps (issue #17: 5,000 `initialize` calls without DELETE held 280 MB): [`CappedSessions`]
//! wraps rmcp's [`LocalSessionManager`] and, when an `initialize` would go over a cap (per
//! credential, and in all), first closes the idle session that has been idle longest. A session
//! is idle when no request of it is in flight (its response stream has ended); a session whose
//! calls are still running is never closed under its client. When every session in the way is
//! busy, the `initialize` is answered with a JSON-RPC error and no session is kept.
//!
//! Idle sessions (issue #39): every session is recorded in the store ([`KeptSessions`]) with its
//! credential and endpoint. One idle for [`McpSessionLimits::idle`] (no request in flight, none
//! begun) leaves memory but keeps its record, and its next request restores it from the record
//! as a replica would (rmcp replays its `initialize`), so an agent that keeps a session for hours
//! never meets a 404. The record goes with an HTTP DELETE, with an eviction over a cap, or
//! [`executor_engine`]'s lifetime after it was opened. rmcp's own idle timeout (5 minutes, also
//! while a long call sends nothing) is off: [`spawn_idle_sweeper`] does this instead.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use executor_engine::{Engine, McpSessionRecord};
use futures::Stream;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, ErrorCode, ErrorData, GetExtensions, ServerJsonRpcMessage,
};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionRestoreMarker, SessionState,
    SessionStore, SessionStoreError,
};
use serde_json::json;

use super::Resource;

/// JSON-RPC error code of a refused `initialize` (in the implementation-defined server range).
pub const SESSION_LIMIT_CODE: i32 = -32001;

/// How many `/mcp` sessions may live at once, and how long an idle one is held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct McpSessionLimits {
    /// In all.
    pub total: usize,
    /// Per credential (a token, API key or OAuth grant; sessions of an open server share one).
    pub per_token: usize,
    /// How long a session with no request leaves it in memory; then it is released and its
    /// next request restores it from its record.
    pub idle: Duration,
}

impl McpSessionLimits {
    pub const DEFAULT_TOTAL: usize = 1_000;
    pub const DEFAULT_PER_TOKEN: usize = 256;
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(24 * 3600);
}

impl Default for McpSessionLimits {
    fn default() -> Self {
        Self {
            total: Self::DEFAULT_TOTAL,
            per_token: Self::DEFAULT_PER_TOKEN,
            idle: Self::DEFAULT_IDLE,
        }
    }
}

/// Who opened an MCP session, as the front door proved it: SHA-256 (hex) of the identity the
/// request's credential stands for. The team server's front door names the OAuth grant, API
/// key or sign-in session (so a refreshed access token of the same grant is the same); a local
/// server's, the `Authorization` header (its one token), which is also what a request without
/// one is taken as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionCredential(Arc<str>);

impl SessionCredential {
    /// Of an identity the front door resolved (`oauth-grant:<id>`, `api-key:<id>`, …).
    pub(crate) fn of_identity(identity: &str) -> Self {
        Self(Arc::from(sha256_hex(identity.as_bytes())))
    }

    /// Of a request's `Authorization` header (a local server's token).
    pub(crate) fn of_authorization(authorization: Option<&axum::http::HeaderValue>) -> Self {
        Self(Arc::from(sha256_hex(
            authorization.map(|v| v.as_bytes()).unwrap_or_default(),
        )))
    }

    /// Of a request: what its front door set, else its `Authorization` header.
    pub(crate) fn of(extensions: &axum::http::Extensions, headers: &axum::http::HeaderMap) -> Self {
        extensions.get::<Self>().cloned().unwrap_or_else(|| {
            Self::of_authorization(headers.get(axum::http::header::AUTHORIZATION))
        })
    }

    pub(crate) fn digest(&self) -> &str {
        &self.0
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// What is known of one live session. Shared with its response streams, which update it
/// without taking the map's lock.
struct Activity {
    /// Who opened it ([`SessionCredential`], a digest: never the token itself).
    owner: Arc<str>,
    in_flight: AtomicUsize,
    /// Milliseconds since [`CappedSessions::epoch`] of its last request or response end.
    last_active: AtomicU64,
    /// The endpoint it was created on; it is refused on any other.
    resource: Resource,
}

/// [`LocalSessionManager`] with caps on live sessions.
pub struct CappedSessions {
    inner: LocalSessionManager,
    limits: McpSessionLimits,
    live: Mutex<HashMap<SessionId, Arc<Activity>>>,
    epoch: Instant,
    /// Where each new session is recorded, so that it can be restored after it idled out of
    /// memory, after a restart, or on another replica ([`KeptSessions`]).
    kept: Option<Engine>,
}

impl CappedSessions {
    pub fn new(limits: McpSessionLimits) -> Self {
        let mut inner = LocalSessionManager::default()
            .with_event_store(Arc::new(super::events::SessionEvents::new()));
        // Idle sessions are released by `spawn_idle_sweeper`, which knows a call in flight.
        inner.session_config.keep_alive = None;
        Self {
            inner,
            limits: McpSessionLimits {
                total: limits.total.max(1),
                per_token: limits.per_token.max(1),
                idle: limits.idle.max(Duration::from_millis(100)),
            },
            live: Mutex::new(HashMap::new()),
            epoch: Instant::now(),
            kept: None,
        }
    }

    /// Records every new session in `engine`'s store.
    pub fn kept_in(mut self, engine: Engine) -> Self {
        self.kept = Some(engine);
        self
    }

    /// Where sessions are kept, when replicas share them.
    pub(crate) fn kept(&self) -> Option<&Engine> {
        self.kept.as_ref()
    }

    /// Live (initialized, not closed) sessions.
    pub fn live(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Arc<Activity>>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn touch(&self, id: &SessionId) -> Option<Arc<Activity>> {
        let activity = self.lock().get(id).cloned()?;
        activity.last_active.store(self.now(), Ordering::Relaxed);
        Some(activity)
    }

    /// The credential digest and resource session `id` is bound to, while it lives here.
    pub(crate) fn binding(&self, id: &SessionId) -> Option<(Arc<str>, Resource)> {
        self.lock()
            .get(id)
            .map(|a| (a.owner.clone(), a.resource.clone()))
    }

    /// Sessions with no request in flight and none begun for the idle limit.
    fn idle_sessions(&self) -> Vec<SessionId> {
        let limit = u64::try_from(self.limits.idle.as_millis()).unwrap_or(u64::MAX);
        let now = self.now();
        self.lock()
            .iter()
            .filter(|(_, a)| {
                a.in_flight.load(Ordering::Acquire) == 0
                    && now.saturating_sub(a.last_active.load(Ordering::Relaxed)) >= limit
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Releases the sessions idle past the limit from memory. Their records stay (where they
    /// are kept), so each one's next request restores it.
    async fn release_idle(&self) {
        for id in self.idle_sessions() {
            tracing::debug!(session = %id, "releasing an idle MCP session from memory");
            self.lock().remove(&id);
            if let Err(e) = self.inner.close_session(&id).await {
                tracing::debug!(error = %e, "could not close an idle MCP session");
            }
        }
    }

    fn resource_of(message: &ClientJsonRpcMessage) -> Resource {
        match message {
            ClientJsonRpcMessage::Request(request) => request
                .request
                .extensions()
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Resource>())
                .cloned(),
            _ => None,
        }
        .unwrap_or(Resource::Default)
    }

    fn owner_of(message: &ClientJsonRpcMessage) -> Arc<str> {
        let credential = match message {
            ClientJsonRpcMessage::Request(request) => request
                .request
                .extensions()
                .get::<axum::http::request::Parts>()
                .map(|parts| SessionCredential::of(&parts.extensions, &parts.headers)),
            _ => None,
        };
        credential
            .unwrap_or_else(|| SessionCredential::of_authorization(None))
            .0
    }

    /// What to keep of a new session for the other replicas (nothing for a replayed one, which
    /// is kept already, or without replicas).
    fn kept_record(
        &self,
        id: &SessionId,
        message: &ClientJsonRpcMessage,
    ) -> Option<McpSessionRecord> {
        self.kept.as_ref()?;
        let ClientJsonRpcMessage::Request(request) = message else {
            return None;
        };
        let extensions = request.request.extensions();
        if extensions.get::<SessionRestoreMarker>().is_some() {
            return None;
        }
        let ClientRequest::InitializeRequest(init) = &request.request else {
            return None;
        };
        extensions.get::<axum::http::request::Parts>()?;
        Some(McpSessionRecord {
            id: id.to_string(),
            token_hash: Self::owner_of(message).to_string(),
            resource: Self::resource_of(message).path(),
            initialize: serde_json::to_value(&init.params).ok()?,
            created_at: executor_core::now_ms(),
        })
    }

    /// Admits a new session of `token`, naming the idle sessions to close to make room, or says
    /// which cap refused it. Decided under the lock, so concurrent `initialize`s cannot both
    /// take the last place.
    fn admit(
        &self,
        id: &SessionId,
        owner: Arc<str>,
        resource: Resource,
    ) -> Result<Vec<SessionId>, Refused> {
        let mut live = self.lock();
        let oldest_idle =
            |live: &HashMap<SessionId, Arc<Activity>>, only_mine: bool, skip: &[SessionId]| {
                live.iter()
                    .filter(|(sid, a)| {
                        (!only_mine || a.owner == owner)
                            && a.in_flight.load(Ordering::Acquire) == 0
                            && !skip.contains(sid)
                    })
                    .min_by_key(|(_, a)| a.last_active.load(Ordering::Relaxed))
                    .map(|(sid, _)| sid.clone())
            };
        let mut evicted = Vec::new();
        if live.values().filter(|a| a.owner == owner).count() >= self.limits.per_token {
            let victim = oldest_idle(&live, true, &evicted).ok_or(Refused {
                scope: "token",
                limit: self.limits.per_token,
            })?;
            evicted.push(victim);
        }
        if live.len() - evicted.len() >= self.limits.total {
            let victim = oldest_idle(&live, false, &evicted).ok_or(Refused {
                scope: "server",
                limit: self.limits.total,
            })?;
            evicted.push(victim);
        }
        for victim in &evicted {
            live.remove(victim);
        }
        live.insert(
            id.clone(),
            Arc::new(Activity {
                owner,
                in_flight: AtomicUsize::new(0),
                last_active: AtomicU64::new(self.now()),
                resource,
            }),
        );
        Ok(evicted)
    }
}

/// Releases idle sessions from memory while `sessions` lives (its server's router).
pub(crate) fn spawn_idle_sweeper(sessions: Weak<CappedSessions>) {
    let Some(idle) = sessions.upgrade().map(|s| s.limits.idle) else {
        return;
    };
    let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(60));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(sessions) = sessions.upgrade() else {
                return;
            };
            sessions.release_idle().await;
        }
    });
}

/// rmcp's view of the kept sessions: the `initialize` parameters it replays to serve a session
/// this process does not hold (released while idle, opened before a restart or on another
/// replica). Records are written by [`CappedSessions`], which knows the credential and endpoint;
/// the MCP router checks both before a session is replayed.
pub(crate) struct KeptSessions {
    engine: Engine,
}

impl KeptSessions {
    pub(crate) fn new(engine: Engine) -> Self {
        Self { engine }
    }
}

#[async_trait::async_trait]
impl SessionStore for KeptSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(rec) = self.engine.agent_session(session_id).await? else {
            return Ok(None);
        };
        Ok(Some(SessionState::new(serde_json::from_value(
            rec.initialize,
        )?)))
    }

    async fn store(
        &self,
        _session_id: &str,
        _state: &SessionState,
    ) -> Result<(), SessionStoreError> {
        // Written with its token and endpoint when the session was admitted.
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.engine.forget_agent_session(session_id).await?)
    }
}

/// An `initialize` over a cap whose sessions are all busy.
struct Refused {
    scope: &'static str,
    limit: usize,
}

impl Refused {
    fn error(&self) -> ErrorData {
        let whose = match self.scope {
            "token" => "for this token",
            _ => "on this server",
        };
        ErrorData::new(
            ErrorCode(SESSION_LIMIT_CODE),
            format!(
                "Too many MCP sessions: {} live sessions {whose} are all busy (the limit is {}). \
                 End sessions you no longer use (HTTP DELETE with their Mcp-Session-Id), or \
                 retry when a call has finished.",
                self.limit, self.limit
            ),
            Some(json!({"_tag": "McpSessionLimitError", "scope": self.scope, "limit": self.limit})),
        )
    }
}

/// Marks its session busy while a response stream is open.
struct Busy {
    activity: Arc<Activity>,
    epoch: Instant,
}

impl Busy {
    fn new(activity: Arc<Activity>, epoch: Instant) -> Self {
        activity.in_flight.fetch_add(1, Ordering::AcqRel);
        Self { activity, epoch }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.activity.last_active.store(now, Ordering::Relaxed);
        self.activity.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

type BoxedSse = Pin<Box<dyn Stream<Item = ServerSseMessage> + Send + Sync + 'static>>;

/// A request's response stream, holding its session busy until it ends or is dropped.
struct Tracked {
    inner: BoxedSse,
    busy: Option<Busy>,
}

impl Stream for Tracked {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.as_mut().poll_next(cx);
        if matches!(next, Poll::Ready(None)) {
            self.busy = None;
        }
        next
    }
}

impl SessionManager for CappedSessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // Counted once initialized: rmcp calls `initialize_session` right after, in the same
        // request, and rmcp's own init timeout ends one that is never initialized.
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let request_id = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        match self.admit(id, Self::owner_of(&message), Self::resource_of(&message)) {
            Ok(evicted) => {
                for victim in evicted {
                    tracing::debug!(session = %victim, "closing the longest idle MCP session to admit a new one");
                    self.inner.close_session(&victim).await?;
                    if let Some(engine) = &self.kept {
                        let _ = engine.forget_agent_session(&victim).await;
                    }
                }
            }
            Err(refused) => {
                tracing::warn!(
                    scope = refused.scope,
                    limit = refused.limit,
                    "refused an MCP session: every live session is busy"
                );
                self.inner.close_session(id).await?;
                return Ok(ServerJsonRpcMessage::error(refused.error(), request_id));
            }
        }
        let kept = self.kept_record(id, &message);
        let answer = self.inner.initialize_session(id, message).await;
        if answer.is_err() {
            self.lock().remove(id);
        } else if let (Some(engine), Some(rec)) = (&self.kept, kept)
            && let Err(e) = engine.remember_agent_session(&rec).await
        {
            // The session works here; only another replica could not serve it.
            tracing::warn!(error = %e, "could not keep an MCP session for the other replicas");
        }
        answer
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        // Its record stays: this is also how a session ends in memory (released while idle, at
        // shutdown). The client's DELETE forgets it (the MCP router), and so does an eviction.
        self.lock().remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // Busy before the request reaches the session, so it cannot be evicted mid-call.
        let busy = self.touch(id).map(|a| Busy::new(a, self.epoch));
        let inner = self.inner.create_stream(id, message).await?;
        Ok(Tracked {
            inner: Box::pin(inner),
            busy,
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // A listening GET stream is not a request in flight: the session stays evictable.
        self.touch(id);
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        self.inner.resume(id, last_event_id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // Without records (an embedder's manager), an unknown session is a 404.
        if self.kept.is_none() {
            return Ok(RestoreOutcome::NotSupported);
        }
        self.inner.restore_session(id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(s: &str) -> SessionId {
        Arc::from(s)
    }

    fn busy(sessions: &CappedSessions, id: &str) -> Busy {
        Busy::new(
            sessions.lock().get(&sid(id)).unwrap().clone(),
            sessions.epoch,
        )
    }

    fn admit(sessions: &CappedSessions, id: &str, token: u64) -> Result<Vec<String>, String> {
        // Distinct activity times, so "longest idle" is well defined.
        std::thread::sleep(std::time::Duration::from_millis(2));
        sessions
            .admit(&sid(id), Arc::from(token.to_string()), Resource::Default)
            .map(|v| v.iter().map(|s| s.to_string()).collect())
            .map_err(|r| format!("{}:{}", r.scope, r.limit))
    }

    #[test]
    fn caps_per_token_and_in_all_evicting_the_longest_idle() {
        let s = CappedSessions::new(McpSessionLimits {
            total: 3,
            per_token: 2,
            ..McpSessionLimits::default()
        });
        assert_eq!(admit(&s, "a1", 1), Ok(vec![]));
        assert_eq!(admit(&s, "a2", 1), Ok(vec![]));
        // Token 1 is at its cap: its longest idle session goes.
        assert_eq!(admit(&s, "a3", 1), Ok(vec!["a1".into()]));
        assert_eq!(admit(&s, "b1", 2), Ok(vec![]));
        // The server is at its cap: the longest idle of anyone's goes.
        assert_eq!(admit(&s, "b2", 2), Ok(vec!["a2".into()]));
        assert_eq!(s.live(), 3);
        // A session with a request in flight is never closed; a refusal changes nothing.
        let _a3 = busy(&s, "a3");
        let _b1 = busy(&s, "b1");
        let b2 = busy(&s, "b2");
        assert_eq!(admit(&s, "c1", 3), Err("server:3".into()));
        assert_eq!(admit(&s, "b3", 2), Err("token:2".into()));
        assert_eq!(s.live(), 3);
        // Once its request ends, it is idle again.
        drop(b2);
        assert_eq!(admit(&s, "b3", 2), Ok(vec!["b2".into()]));
        // A request's end counts as activity: `b1` was active after `b3` arrived.
        std::thread::sleep(std::time::Duration::from_millis(2));
        drop(_b1);
        assert_eq!(admit(&s, "b4", 2), Ok(vec!["b3".into()]));
    }
}
