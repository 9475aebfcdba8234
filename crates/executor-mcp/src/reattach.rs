//! Coming back to a downstream session after a restart (issue #17: a paused execution resumed
//! in a new process had its next call land on a new session, which had lost the state the
//! first call set).
//!
//! A streamable-HTTP session is the server's `Mcp-Session-Id`, so it outlives our process if we
//! do not DELETE it. [`Linked`] wraps the HTTP client of one session's transport: it records the
//! session id the server gave, skips the DELETE of a session kept for a paused execution, and,
//! to reattach, answers rmcp's handshake (`initialize`, `notifications/initialized`) itself with
//! what the server answered the first time, so the next request carries the old session id. A
//! server that has forgotten the session answers 404, which the scope reports as
//! [`crate::McpError::SessionLost`] instead of dialling a new session. A stdio session is a child
//! process that died with us: it cannot be reattached, and its calls answer the same error.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, InitializeResult, ServerJsonRpcMessage, ServerResult,
};
use rmcp::transport::streamable_http_client::SseError;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sse_stream_rmcp::Sse;

/// What it takes to come back to one downstream session: kept with a paused execution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    /// The connection the session belongs to ([`crate::SessionKey::label`]).
    pub label: String,
    /// `streamable-http` (reattachable), `stateless` (nothing to reattach), `stdio` or `sse`
    /// (cannot be reattached).
    pub transport: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The server's `initialize` result, answered again to rmcp when reattaching.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Value>,
}

pub(crate) const STREAMABLE: &str = "streamable-http";
/// Streamable HTTP without a session id: nothing to come back to, and nothing lost.
pub(crate) const STATELESS: &str = "stateless";

/// State shared by a pooled session and its transport's HTTP client.
#[derive(Default)]
pub(crate) struct SessionLink {
    /// The `Mcp-Session-Id` the server assigned (streamable HTTP only).
    pub(crate) session_id: OnceLock<Arc<str>>,
    /// Closing does not DELETE the session: a paused execution will come back to it.
    pub(crate) keep: AtomicBool,
    /// Set when reattaching: the handshake is answered from here, not sent.
    handshake: Mutex<Option<Handshake>>,
}

struct Handshake {
    session_id: Arc<str>,
    server: InitializeResult,
    initialized: bool,
}

impl SessionLink {
    /// A link that reattaches to `session_id` of a server that answered `server` to `initialize`.
    pub(crate) fn reattaching(session_id: &str, server: InitializeResult) -> Self {
        let link = Self::default();
        let _ = link.session_id.set(Arc::from(session_id));
        *link.handshake.lock().unwrap_or_else(|p| p.into_inner()) = Some(Handshake {
            session_id: Arc::from(session_id),
            server,
            initialized: false,
        });
        link
    }

    /// The answer to a handshake message while reattaching, without asking the server.
    fn answer(&self, message: &ClientJsonRpcMessage) -> Option<StreamableHttpPostResponse> {
        let mut guard = self.handshake.lock().unwrap_or_else(|p| p.into_inner());
        let handshake = guard.as_mut()?;
        match message {
            ClientJsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::InitializeRequest(_))
                    && !handshake.initialized =>
            {
                handshake.initialized = true;
                Some(StreamableHttpPostResponse::Json(
                    ServerJsonRpcMessage::response(
                        ServerResult::InitializeResult(handshake.server.clone()),
                        request.id.clone(),
                    ),
                    Some(handshake.session_id.to_string()),
                ))
            }
            // The server had it the first time; from here on every message is sent.
            ClientJsonRpcMessage::Notification(_) if handshake.initialized => {
                *guard = None;
                Some(StreamableHttpPostResponse::Accepted)
            }
            _ => {
                *guard = None;
                None
            }
        }
    }
}

/// The HTTP client of one session's transport, tied to its [`SessionLink`].
#[derive(Clone)]
pub(crate) struct Linked<C> {
    pub(crate) inner: C,
    pub(crate) link: Arc<SessionLink>,
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Linked<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
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
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
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
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        if let Some(answer) = self.link.answer(&message) {
            return Ok(answer);
        }
        let response = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await?;
        if let StreamableHttpPostResponse::Json(_, Some(id))
        | StreamableHttpPostResponse::Sse(_, Some(id)) = &response
        {
            let _ = self.link.session_id.set(Arc::from(id.as_str()));
        }
        Ok(response)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        if self.link.keep.load(Ordering::SeqCst) {
            tracing::debug!("keeping a downstream MCP session for a paused execution");
            return Ok(());
        }
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
