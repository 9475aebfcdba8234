use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

/// Remote transport of an MCP server (wire names `streamable-http` | `sse` | `auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RemoteTransport {
    StreamableHttp,
    Sse,
    #[default]
    Auto,
}

impl RemoteTransport {
    pub fn as_str(&self) -> &'static str {
        match self {
            RemoteTransport::StreamableHttp => "streamable-http",
            RemoteTransport::Sse => "sse",
            RemoteTransport::Auto => "auto",
        }
    }
}

impl fmt::Display for RemoteTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RemoteTransport {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "streamable-http" | "streamable_http" | "http" => Ok(RemoteTransport::StreamableHttp),
            "sse" => Ok(RemoteTransport::Sse),
            "auto" | "" => Ok(RemoteTransport::Auto),
            other => Err(format!(
                "unknown MCP remote transport \"{other}\" (expected \"streamable-http\", \"sse\" or \"auto\")"
            )),
        }
    }
}

/// A remote MCP server as dialled: endpoint, transport, and the final headers/query parameters
/// (static ones plus credential placements, already merged by the caller).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoteTarget {
    pub endpoint: String,
    pub transport: RemoteTransport,
    pub headers: BTreeMap<String, String>,
    pub query: BTreeMap<String, String>,
}

impl RemoteTarget {
    pub fn new(endpoint: impl Into<String>, transport: RemoteTransport) -> Self {
        Self {
            endpoint: endpoint.into(),
            transport,
            headers: BTreeMap::new(),
            query: BTreeMap::new(),
        }
    }

    /// The endpoint with `query` appended (existing query parameters of the same name are replaced).
    pub fn url(&self) -> Result<url::Url, url::ParseError> {
        let mut url = url::Url::parse(self.endpoint.trim())?;
        if !self.query.is_empty() {
            let kept: Vec<(String, String)> = url
                .query_pairs()
                .filter(|(k, _)| !self.query.contains_key(k.as_ref()))
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect();
            let mut pairs = url.query_pairs_mut();
            pairs.clear();
            for (k, v) in kept.iter().map(|(k, v)| (k.as_str(), v.as_str())) {
                pairs.append_pair(k, v);
            }
            for (k, v) in &self.query {
                pairs.append_pair(k, v);
            }
        }
        Ok(url)
    }
}

/// The variables of the executor's own environment a stdio server inherits: what a program
/// needs to find its tools, its home and its locale, and nothing else (the executor's secrets
/// and settings, `EXECUTOR_*`, `DATABASE_URL`, `RUST_LOG`, proxies, cloud credentials, never).
/// Besides these exact names, every `LC_*`.
pub const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    // What Windows programs cannot start without.
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
];

/// Whether a stdio server inherits the executor's variable `name` (see [`INHERITED_ENV`]).
pub fn is_inherited_env(name: &str) -> bool {
    // Windows spells variable names in any case; elsewhere a name is exact.
    let same = |allowed: &&str| {
        if cfg!(windows) {
            name.eq_ignore_ascii_case(allowed)
        } else {
            name == *allowed
        }
    };
    name.starts_with("LC_") || INHERITED_ENV.iter().any(same)
}

/// The executor's variables a stdio server inherits, with their values.
pub fn inherited_env() -> impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)> {
    std::env::vars_os().filter(|(name, _)| name.to_str().is_some_and(is_inherited_env))
}

/// A stdio MCP server as spawned: `command args` in `cwd`, with `env` set on top of the
/// allow-listed part of the executor's environment ([`INHERITED_ENV`]; the integration's static
/// env, then the connection's `stdio_env` values, already merged by the caller).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StdioTarget {
    pub command: String,
    pub args: Vec<String>,
    pub cwd: Option<String>,
    pub env: BTreeMap<String, String>,
    /// Variables of the inherited environment ([`INHERITED_ENV`]) the server must not get.
    pub env_remove: Vec<String>,
}

impl StdioTarget {
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            ..Self::default()
        }
    }

    /// `command arg1 arg2…` as shown in messages (never the environment: it holds secrets).
    pub fn command_line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Where a downstream MCP server lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Remote(RemoteTarget),
    Stdio(StdioTarget),
}

impl From<RemoteTarget> for Target {
    fn from(t: RemoteTarget) -> Self {
        Target::Remote(t)
    }
}

impl From<StdioTarget> for Target {
    fn from(t: StdioTarget) -> Self {
        Target::Stdio(t)
    }
}

/// A borrowed [`Target`]: what the client's methods take (`&RemoteTarget`, `&StdioTarget` and
/// `&Target` all convert).
#[derive(Debug, Clone, Copy)]
pub enum TargetRef<'a> {
    Remote(&'a RemoteTarget),
    Stdio(&'a StdioTarget),
}

impl TargetRef<'_> {
    /// The endpoint, or the command line of a stdio server (for messages).
    pub fn describe(&self) -> String {
        match self {
            TargetRef::Remote(t) => t.endpoint.clone(),
            TargetRef::Stdio(t) => t.command_line(),
        }
    }
}

impl<'a> From<&'a RemoteTarget> for TargetRef<'a> {
    fn from(t: &'a RemoteTarget) -> Self {
        TargetRef::Remote(t)
    }
}

impl<'a> From<&'a StdioTarget> for TargetRef<'a> {
    fn from(t: &'a StdioTarget) -> Self {
        TargetRef::Stdio(t)
    }
}

impl<'a> From<&'a Target> for TargetRef<'a> {
    fn from(t: &'a Target) -> Self {
        match t {
            Target::Remote(r) => TargetRef::Remote(r),
            Target::Stdio(s) => TargetRef::Stdio(s),
        }
    }
}

/// Pool identity of a downstream session. Two calls with equal keys may share a session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey {
    digest: String,
    label: String,
}

impl SessionKey {
    /// endpoint, transport, sorted headers, sorted query, auth template and sorted credential values →
    /// one stable key. `label` groups sessions for eviction (`"<integration>/<owner>/<connection>"`),
    /// and only calls of one label share a session.
    pub fn new(
        target: &RemoteTarget,
        template: &str,
        credentials: &BTreeMap<String, String>,
        label: impl Into<String>,
    ) -> Self {
        // BTreeMaps serialise sorted; serde_json keeps this object's insertion order.
        let canonical = serde_json::json!({
            "endpoint": target.endpoint,
            "transport": "remote",
            "remoteTransport": target.transport.as_str(),
            "headers": target.headers,
            "queryParams": target.query,
            "template": template,
            "credentials": credentials,
        });
        let digest = hex::encode(Sha256::digest(canonical.to_string().as_bytes()));
        Self {
            digest,
            label: label.into(),
        }
    }

    /// [`SessionKey::new`] for any target: a stdio server's identity is its command, arguments,
    /// working directory and environment (with the auth template and credential values).
    pub fn for_target<'a>(
        target: impl Into<TargetRef<'a>>,
        template: &str,
        credentials: &BTreeMap<String, String>,
        label: impl Into<String>,
    ) -> Self {
        let target = match target.into() {
            TargetRef::Remote(remote) => return Self::new(remote, template, credentials, label),
            TargetRef::Stdio(stdio) => stdio,
        };
        let canonical = serde_json::json!({
            "transport": "stdio",
            "command": target.command,
            "args": target.args,
            "cwd": target.cwd,
            "env": target.env,
            "template": template,
            "credentials": credentials,
        });
        let digest = hex::encode(Sha256::digest(canonical.to_string().as_bytes()));
        Self {
            digest,
            label: label.into(),
        }
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    /// The stable digest (hex SHA-256 of the canonical identity JSON; no secrets in clear).
    pub fn digest(&self) -> &str {
        &self.digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_round_trip() {
        for t in [
            RemoteTransport::StreamableHttp,
            RemoteTransport::Sse,
            RemoteTransport::Auto,
        ] {
            assert_eq!(t.as_str().parse::<RemoteTransport>().unwrap(), t);
        }
        assert!("ws".parse::<RemoteTransport>().is_err());
    }

    #[test]
    fn key_is_stable_and_sensitive() {
        let mut a = RemoteTarget::new("http://h/mcp", RemoteTransport::Auto);
        a.headers.insert("x-b".into(), "2".into());
        a.headers.insert("x-a".into(), "1".into());
        let creds = BTreeMap::from([("token".to_owned(), "s3cret".to_owned())]);
        let k1 = SessionKey::new(&a, "none", &creds, "i/org/main");
        let k2 = SessionKey::new(&a.clone(), "none", &creds.clone(), "other-label");
        assert_eq!(k1.digest(), k2.digest());
        assert!(!k1.digest().contains("s3cret"));
        let creds2 = BTreeMap::from([("token".to_owned(), "other".to_owned())]);
        assert_ne!(
            k1.digest(),
            SessionKey::new(&a, "none", &creds2, "x").digest()
        );
        assert_ne!(
            k1.digest(),
            SessionKey::new(&a, "apikey", &creds, "x").digest()
        );
    }

    #[test]
    fn url_appends_query() {
        let mut t = RemoteTarget::new("http://h/mcp?a=1&k=old", RemoteTransport::Auto);
        t.query.insert("k".into(), "new v".into());
        let url = t.url().unwrap();
        assert_eq!(url.as_str(), "http://h/mcp?a=1&k=new+v");
    }
}
