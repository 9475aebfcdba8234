//! Legacy HTTP+SSE client transport (MCP 2024-11-05), which rmcp 3.x no longer ships.
//!
//! `GET <endpoint>` (Accept: text/event-stream) opens the stream; the first `endpoint` event carries the
//! URL (relative to the endpoint) to POST JSON-RPC messages to; server messages arrive as `message`
//! events on the stream. Closing = dropping the stream.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use sse_stream::SseByteStream;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A legacy-SSE transport failure (connect or POST).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct SseTransportError {
    pub message: String,
    pub status: Option<u16>,
    /// Set when the host could not be reached (e.g. "connection refused").
    pub unreachable: Option<String>,
    /// Set when the endpoint answered, but not like a legacy MCP SSE endpoint.
    pub not_mcp: Option<String>,
    /// The `WWW-Authenticate` challenge of a 401/403 answer, read like streamable HTTP's
    /// (RFC 6750 `insufficient_scope` tells a missing scope from a rejected token).
    pub www_authenticate: Option<String>,
    /// Set when the connection was refused for where it goes ([`crate::network`]).
    pub refused: Option<executor_core::network::AddressNotAllowed>,
}

impl SseTransportError {
    fn plain(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            status: None,
            unreachable: None,
            not_mcp: None,
            www_authenticate: None,
            refused: None,
        }
    }

    /// A non-success answer: its status and, for 401/403, its challenge.
    fn status(message: String, response: &reqwest::Response, not_mcp: Option<String>) -> Self {
        let status = response.status().as_u16();
        let www_authenticate = matches!(status, 401 | 403)
            .then(|| {
                response
                    .headers()
                    .get(reqwest::header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            })
            .flatten();
        Self {
            message,
            status: Some(status),
            unreachable: None,
            not_mcp,
            www_authenticate,
            refused: None,
        }
    }

    fn from_reqwest(e: &reqwest::Error) -> Self {
        let d = crate::error::diagnose(e);
        Self {
            message: e.to_string(),
            status: d.status,
            unreachable: d.unreachable,
            not_mcp: None,
            www_authenticate: None,
            refused: d.refused,
        }
    }
}

/// rmcp [`Transport`] for a legacy HTTP+SSE server.
pub struct SseClientTransport {
    http: reqwest::Client,
    post_url: Arc<url::Url>,
    headers: HeaderMap,
    rx: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: Option<JoinHandle<()>>,
}

impl SseClientTransport {
    /// Opens the event stream and waits (≤ `timeout`) for the `endpoint` event.
    pub async fn connect(
        http: reqwest::Client,
        url: url::Url,
        headers: HeaderMap,
        timeout: Duration,
    ) -> Result<Self, SseTransportError> {
        let fut = Self::connect_inner(http, url, headers);
        match tokio::time::timeout(timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(SseTransportError::plain(
                "timed out waiting for the SSE endpoint event",
            )),
        }
    }

    async fn connect_inner(
        http: reqwest::Client,
        url: url::Url,
        headers: HeaderMap,
    ) -> Result<Self, SseTransportError> {
        let response = http
            .get(url.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| SseTransportError::from_reqwest(&e))?;
        let status = response.status();
        if !status.is_success() {
            let auth = matches!(status.as_u16(), 401 | 403);
            return Err(SseTransportError::status(
                format!("SSE endpoint answered HTTP {status}"),
                &response,
                (!auth).then(|| format!("GET answered HTTP {status}")),
            ));
        }
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        if !content_type
            .to_ascii_lowercase()
            .starts_with("text/event-stream")
        {
            return Err(SseTransportError {
                message: format!("SSE endpoint answered with content type {content_type:?}"),
                status: Some(status.as_u16()),
                unreachable: None,
                www_authenticate: None,
                refused: None,
                not_mcp: Some(format!(
                    "it answered with content type {}",
                    if content_type.is_empty() {
                        "<none>"
                    } else {
                        &content_type
                    }
                )),
            });
        }
        let mut events = SseByteStream::new(response.bytes_stream());
        // Wait for the endpoint event.
        let post_url = loop {
            match events.next().await {
                Some(Ok(event)) => {
                    if event.event.as_deref() == Some("endpoint") {
                        let data = event.data.unwrap_or_default();
                        let joined = url.join(data.trim()).map_err(|e| {
                            SseTransportError::plain(format!(
                                "invalid SSE endpoint event {data:?}: {e}"
                            ))
                        })?;
                        break joined;
                    }
                }
                Some(Err(e)) => {
                    return Err(SseTransportError::plain(format!("SSE stream error: {e}")));
                }
                None => {
                    return Err(SseTransportError {
                        message: "SSE stream ended before the endpoint event".into(),
                        status: None,
                        unreachable: None,
                        not_mcp: Some("no `endpoint` event on the SSE stream".into()),
                        www_authenticate: None,
                        refused: None,
                    });
                }
            }
        };
        let (tx, rx) = mpsc::channel(64);
        let reader = tokio::spawn(async move {
            while let Some(item) = events.next().await {
                let Ok(event) = item else { break };
                let is_message = matches!(event.event.as_deref(), None | Some("message"));
                if !is_message {
                    continue;
                }
                let Some(data) = event.data else { continue };
                match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                    Ok(msg) => {
                        if tx.send(msg).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => tracing::warn!("ignoring unparsable legacy SSE message: {e}"),
                }
            }
        });
        Ok(Self {
            http,
            post_url: Arc::new(post_url),
            headers,
            rx,
            reader: Some(reader),
        })
    }

    /// The URL messages are POSTed to (from the `endpoint` event).
    pub fn post_url(&self) -> &url::Url {
        &self.post_url
    }
}

impl Transport<RoleClient> for SseClientTransport {
    type Error = SseTransportError;

    fn name() -> Cow<'static, str> {
        "LegacySseClientTransport".into()
    }

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let http = self.http.clone();
        let url = self.post_url.clone();
        let headers = self.headers.clone();
        async move {
            let response = http
                .post(url.as_str())
                .headers(headers)
                .json(&item)
                .send()
                .await
                .map_err(|e| SseTransportError::from_reqwest(&e))?;
            let status = response.status();
            if status.is_success() {
                Ok(())
            } else {
                Err(SseTransportError::status(
                    format!("legacy SSE POST answered HTTP {status}"),
                    &response,
                    None,
                ))
            }
        }
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        self.rx.recv().await
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(reader) = self.reader.take() {
            reader.abort();
        }
        self.rx.close();
        Ok(())
    }
}

impl Drop for SseClientTransport {
    fn drop(&mut self) {
        if let Some(reader) = self.reader.take() {
            reader.abort();
        }
    }
}
