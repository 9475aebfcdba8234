//! Fetching a spec by URL (spec §7: 60 s, `Accept` for JSON and YAML), and resolving relative
//! server URLs against the spec's location.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::OpenApiError;
use crate::model::{Server, Spec};

/// The `Accept` header spec fetches send.
pub const SPEC_ACCEPT: &str = "application/json, application/yaml, text/yaml, */*";

const FETCH_TIMEOUT: Duration = Duration::from_secs(60);
const MAX_SPEC_BYTES: usize = 128 * 1024 * 1024;

/// The URL as shown in messages: without its query (it may carry a key).
fn shown(url: &url::Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    let _ = u.set_password(None);
    u.to_string()
}

/// Fetches spec text (GET, `Accept: application/json, application/yaml, text/yaml, */*`, the
/// integration's static headers, 60 s for the whole exchange, at most 128 MiB).
pub async fn fetch_spec(
    http: &reqwest::Client,
    url: &str,
    headers: &BTreeMap<String, String>,
) -> Result<String, OpenApiError> {
    let parsed = url::Url::parse(url.trim()).map_err(|e| {
        OpenApiError::Fetch(format!("The spec URL \"{url}\" is not a valid URL ({e})."))
    })?;
    if parsed.scheme() != "http" && parsed.scheme() != "https" {
        return Err(OpenApiError::Fetch(format!(
            "The spec URL must use http or https, not \"{}\".",
            parsed.scheme()
        )));
    }
    let display = shown(&parsed);
    let mut req = http.get(parsed.clone());
    if !headers.keys().any(|k| k.eq_ignore_ascii_case("accept")) {
        req = req.header(reqwest::header::ACCEPT, SPEC_ACCEPT);
    }
    for (k, v) in headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let work = async {
        let mut resp = req.send().await.map_err(|e| {
            OpenApiError::Fetch(format!(
                "Could not fetch the OpenAPI spec from {display}: {}",
                describe(e)
            ))
        })?;
        let status = resp.status();
        if !status.is_success() {
            return Err(OpenApiError::Fetch(format!(
                "Could not fetch the OpenAPI spec from {display}: the server answered HTTP {}{}.",
                status.as_u16(),
                status
                    .canonical_reason()
                    .map(|r| format!(" {r}"))
                    .unwrap_or_default()
            )));
        }
        let mut buf: Vec<u8> = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| {
            OpenApiError::Fetch(format!(
                "Could not read the OpenAPI spec from {display}: {}",
                describe(e)
            ))
        })? {
            if buf.len() + chunk.len() > MAX_SPEC_BYTES {
                return Err(OpenApiError::Fetch(format!(
                    "The OpenAPI spec at {display} is larger than {} MiB.",
                    MAX_SPEC_BYTES / 1024 / 1024
                )));
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8_lossy(&buf).into_owned())
    };
    match tokio::time::timeout(FETCH_TIMEOUT, work).await {
        Ok(r) => r,
        Err(_) => Err(OpenApiError::Fetch(format!(
            "Fetching the OpenAPI spec from {display} timed out after {} s.",
            FETCH_TIMEOUT.as_secs()
        ))),
    }
}

fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut s = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

/// Resolves relative server URLs (`/v1`, `api/`) against the URL the spec was fetched from; a
/// spec without servers gets the spec URL's origin (OpenAPI's default server is `/`).
pub fn resolve_relative_servers(spec: &mut Spec, spec_url: &str) {
    let Ok(base) = url::Url::parse(spec_url) else {
        return;
    };
    let fix = |servers: &mut Vec<Server>| {
        for s in servers.iter_mut() {
            if s.url.contains("://") || s.url.starts_with('{') {
                continue;
            }
            if let Ok(joined) = base.join(&s.url) {
                // `join` percent-encodes `{`/`}`; put server variables back.
                s.url = joined.to_string().replace("%7B", "{").replace("%7D", "}");
            }
        }
    };
    if spec.servers.is_empty() {
        spec.servers.push(Server {
            url: base.origin().ascii_serialization(),
            description: None,
            variables: Vec::new(),
        });
    }
    fix(&mut spec.servers);
    for op in &mut spec.operations {
        fix(&mut op.servers);
    }
}
