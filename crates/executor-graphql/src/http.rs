//! One GraphQL-over-HTTP POST: JSON body, the connection's headers and query parameters, a bounded
//! response body.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

/// Larger responses are refused rather than buffered.
pub(crate) const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;
/// How much of an unexpected body is quoted in messages.
const SNIPPET_CHARS: usize = 200;

pub(crate) struct RequestParts<'a> {
    pub(crate) endpoint: &'a str,
    pub(crate) headers: &'a BTreeMap<String, String>,
    pub(crate) query: &'a BTreeMap<String, String>,
    pub(crate) timeout: Duration,
}

pub(crate) struct HttpResponse {
    pub(crate) status: u16,
    pub(crate) content_type: Option<String>,
    pub(crate) www_authenticate: Option<String>,
    /// The body parsed as JSON, when it is JSON.
    pub(crate) json: Option<Value>,
    /// The start of the body as text (for messages).
    pub(crate) snippet: String,
}

impl HttpResponse {
    /// `: <first 200 chars of the body>` or nothing.
    pub(crate) fn snippet_suffix(&self) -> String {
        if self.snippet.is_empty() {
            String::new()
        } else {
            format!(": {}", self.snippet)
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum SendError {
    #[error("the request timed out")]
    Timeout,
    #[error("{0}")]
    Transport(String),
    #[error("the response is larger than {} MiB", MAX_RESPONSE_BYTES / (1024 * 1024))]
    TooLarge,
    #[error("invalid endpoint URL {0}")]
    BadEndpoint(String),
    #[error("invalid header {0:?}")]
    BadHeader(String),
    /// The endpoint is at an address the server does not connect to.
    #[error("{0}")]
    Refused(executor_core::network::AddressNotAllowed),
}

fn describe(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

fn classify(e: reqwest::Error) -> SendError {
    if let Some(refused) = executor_core::network::AddressNotAllowed::find(&e) {
        SendError::Refused(refused.clone())
    } else if e.is_timeout() {
        SendError::Timeout
    } else {
        SendError::Transport(describe(&e))
    }
}

pub(crate) async fn send_json(
    http: &reqwest::Client,
    parts: &RequestParts<'_>,
    body: &Value,
) -> Result<HttpResponse, SendError> {
    let mut url = url::Url::parse(parts.endpoint)
        .map_err(|e| SendError::BadEndpoint(format!("{}: {e}", parts.endpoint)))?;
    if !parts.query.is_empty() {
        url.query_pairs_mut().extend_pairs(parts.query.iter());
    }
    let mut request = http
        .post(url)
        .timeout(parts.timeout)
        .header(
            reqwest::header::ACCEPT,
            "application/graphql-response+json, application/json;q=0.9",
        )
        .json(body);
    for (name, value) in parts.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| SendError::BadHeader(name.clone()))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| SendError::BadHeader(name.to_string()))?;
        request = request.header(name, value);
    }
    let mut response = request.send().await.map_err(classify)?;
    let status = response.status().as_u16();
    let header = |name: reqwest::header::HeaderName| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header(reqwest::header::CONTENT_TYPE);
    let www_authenticate = header(reqwest::header::WWW_AUTHENTICATE);
    if response
        .content_length()
        .is_some_and(|n| n > MAX_RESPONSE_BYTES as u64)
    {
        return Err(SendError::TooLarge);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(classify)? {
        if bytes.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(SendError::TooLarge);
        }
        bytes.extend_from_slice(&chunk);
    }
    let json = serde_json::from_slice::<Value>(&bytes).ok();
    let text = String::from_utf8_lossy(&bytes);
    let trimmed = text.trim();
    let mut snippet: String = trimmed.chars().take(SNIPPET_CHARS).collect();
    if trimmed.chars().nth(SNIPPET_CHARS).is_some() {
        snippet.push('…');
    }
    Ok(HttpResponse {
        status,
        content_type,
        www_authenticate,
        json,
        snippet,
    })
}
