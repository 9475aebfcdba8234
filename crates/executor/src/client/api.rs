//! Requests to a server's HTTP API. A local origin with nothing listening is started first
//! ([`super::autostart`]); any other unreachable server is exit 3 with what was tried.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use super::target::Target;
use super::{CliError, CliResult, autostart};

/// How long one request may take. Executions can pause on a person, never block on one, so
/// this bounds a hung server, not a slow tool (the server's own limits are shorter).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

pub(crate) struct Api {
    http: reqwest::Client,
    pub(crate) target: Target,
}

/// A JSON answer with its status.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) body: Value,
    /// The bearer the request carried (read when it was made).
    sent_bearer: Option<String>,
}

impl Api {
    pub(crate) fn new(target: Target) -> CliResult<Api> {
        let mut builder = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("executor-cli/", env!("CARGO_PKG_VERSION")));
        if target.origin.starts_with("http://") {
            // Plain HTTP: no root certificates to load (they cost more than the whole call), and
            // a loopback server is never reached through a proxy.
            builder = builder.tls_certs_only([]);
            if target.local_port.is_some() {
                builder = builder.no_proxy();
            }
        }
        let http = builder
            .build()
            .map_err(|e| CliError::failed(format!("building the HTTP client: {e}")))?;
        Ok(Api { http, target })
    }

    /// `POST /api/executions {code}`.
    pub(crate) async fn execute(&self, code: &str) -> CliResult<Value> {
        let answer = self
            .send(
                Method::POST,
                "/api/executions",
                Some(json!({ "code": code })),
            )
            .await?;
        self.expect_ok(answer)
    }

    /// `POST /api/executions/:id/resume`; `None` when the server knows no such pause.
    pub(crate) async fn resume(
        &self,
        id: &str,
        action: &str,
        content: Option<Value>,
    ) -> CliResult<Option<Value>> {
        let mut body = json!({ "action": action });
        if let Some(content) = content {
            body["content"] = content;
        }
        let path = format!(
            "/api/executions/{}/resume",
            percent_encoding::utf8_percent_encode(id, percent_encoding::NON_ALPHANUMERIC)
        );
        let answer = self.send(Method::POST, &path, Some(body)).await?;
        if answer.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        self.expect_ok(answer).map(Some)
    }

    /// `GET <path>` with a JSON answer.
    pub(crate) async fn get(&self, path: &str) -> CliResult<Answer> {
        self.send(Method::GET, path, None).await
    }

    pub(crate) fn expect_ok(&self, answer: Answer) -> CliResult<Value> {
        if answer.status.is_success() {
            return Ok(answer.body);
        }
        Err(self.refusal(&answer))
    }

    /// A non-2xx answer as a message: the error's `_tag` and message, or a hint for a 401.
    pub(crate) fn refusal(&self, answer: &Answer) -> CliError {
        if answer.status == StatusCode::UNAUTHORIZED {
            let how = if self.target.token.is_some() {
                "rejected the credentials it was sent (401): check the profile's token or EXECUTOR_API_KEY"
            } else if self.target.local_port.is_some() {
                "rejected this data directory's token (401): after `executor server rotate-token`, restart it (executor daemon restart); if it is another data directory's server, set EXECUTOR_DATA_DIR or send its token in EXECUTOR_API_KEY"
            } else {
                "requires authentication (401): set EXECUTOR_API_KEY, or save a token with `executor server add <name> <origin> --token-stdin`"
            };
            return CliError::failed(format!("{} {how}", self.target.origin));
        }
        let tag = answer.body["_tag"].as_str().unwrap_or("error");
        let detail = answer.body["message"]
            .as_str()
            .map(str::to_owned)
            .or_else(|| {
                answer.body["traceId"]
                    .as_str()
                    .map(|t| format!("trace id {t}"))
            })
            .unwrap_or_else(|| answer.body.to_string());
        CliError::failed(format!(
            "{} answered {} {tag}: {detail}",
            self.target.origin,
            answer.status.as_u16()
        ))
    }

    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> CliResult<Answer> {
        let first = self
            .waiting(self.try_send(method.clone(), path, body.as_ref()))
            .await;
        match first {
            Err(e) if e.is_connect() && self.target.local_port.is_some() => {
                autostart::ensure_running(&self.target).await?;
                self.waiting(self.try_send(method, path, body.as_ref()))
                    .await
                    .map_err(|e| self.unreachable(&e))
            }
            Err(e) => Err(self.unreachable(&e)),
            // A daemon another command started just now: this request read the token file
            // before the daemon wrote it and reached the port once it listened. Once more,
            // with the token that is there now.
            Ok(answer)
                if answer.status == StatusCode::UNAUTHORIZED
                    && answer.sent_bearer != self.target.bearer() =>
            {
                self.waiting(self.try_send(method, path, body.as_ref()))
                    .await
                    .map_err(|e| self.unreachable(&e))
            }
            Ok(answer) => Ok(answer),
        }
    }

    /// A request with a spinner: a first call may wait seconds on an upstream's discovery.
    async fn waiting<T>(&self, request: impl std::future::Future<Output = T>) -> T {
        let _spinner =
            super::spinner::Spinner::start(format!("Waiting for {}…", self.target.origin));
        request.await
    }

    async fn try_send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, reqwest::Error> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.target.origin));
        let sent_bearer = self.target.bearer();
        if let Some(token) = &sent_bearer {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await?;
        let status = response.status();
        let bytes = response.bytes().await?;
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        Ok(Answer {
            status,
            body,
            sent_bearer,
        })
    }

    fn unreachable(&self, error: &reqwest::Error) -> CliError {
        let cause = std::error::Error::source(error)
            .map(|s| s.to_string())
            .unwrap_or_else(|| error.to_string());
        let hint = if self.target.local_port.is_some() {
            "start it with `executor daemon run`, or choose another with --base-url / --server"
        } else {
            "check the address and your network, or choose another with --base-url / --server"
        };
        CliError::unreachable(format!(
            "could not reach the server at {}: {cause}; {hint}",
            self.target.described()
        ))
    }
}

/// Whether something answers `GET /api/health` at a plain-http local `origin` within `timeout`.
/// One client serves every probe of a command (a start polls every few milliseconds).
pub(crate) async fn local_healthy(origin: &str, timeout: Duration) -> bool {
    static PROBE: std::sync::OnceLock<Option<reqwest::Client>> = std::sync::OnceLock::new();
    let probe = PROBE.get_or_init(|| {
        reqwest::Client::builder()
            .tls_certs_only([])
            .no_proxy()
            .build()
            .ok()
    });
    let Some(http) = probe else {
        return false;
    };
    let request = http.get(format!("{origin}/api/health")).timeout(timeout);
    match request.send().await {
        Ok(response) => response.status().is_success(),
        Err(_) => false,
    }
}
