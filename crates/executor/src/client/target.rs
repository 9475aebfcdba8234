//! Choosing the server a command talks to, and its credentials.
//!
//! Order: `--base-url`, `--server <profile>`, the default profile, the running local server of
//! this data directory (its manifest), `http://127.0.0.1:4788`. Credentials: the profile's, else
//! `EXECUTOR_API_KEY` / `EXECUTOR_AUTH_TOKEN`, else (for a local origin) the data directory's
//! token file, read when the request is made so a daemon this command starts is covered.

use std::path::{Path, PathBuf};

use clap::Args;

use super::profiles::Profiles;
use super::{CliError, CliResult};
use crate::control;

/// Where no flag, profile or manifest says otherwise.
pub(crate) const DEFAULT_ORIGIN: &str = "http://127.0.0.1:4788";

/// Flags of every command that talks to a server.
#[derive(Args, Clone, Default, Debug)]
pub(crate) struct ConnectFlags {
    /// The server's origin, e.g. http://127.0.0.1:4788 (a local one with nothing listening is
    /// started for this data directory).
    #[arg(long, value_name = "ORIGIN", conflicts_with = "server")]
    pub(crate) base_url: Option<String>,
    /// A saved server profile (`executor server list`).
    #[arg(long, value_name = "PROFILE")]
    pub(crate) server: Option<String>,
    /// The workspace directory a daemon this command starts serves (`EXECUTOR_SCOPE_DIR`).
    #[arg(long, value_name = "DIR")]
    pub(crate) scope: Option<PathBuf>,
}

/// How the target was chosen: shown in messages, and repeated in the `executor resume` lines a
/// paused call prints so they reach the same server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Chosen {
    BaseUrl,
    Profile(String),
    DefaultProfile(String),
    Manifest,
    Default,
}

/// A server to talk to.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// `scheme://host[:port]`, no trailing slash.
    pub(crate) origin: String,
    /// The port of a plain-http loopback origin, which may be auto-started.
    pub(crate) local_port: Option<u16>,
    pub(crate) chosen: Chosen,
    /// A bearer token from the profile or the environment; `None` = the local token file.
    pub(crate) token: Option<String>,
    pub(crate) data_dir: PathBuf,
    pub(crate) scope_dir: Option<PathBuf>,
}

impl Target {
    /// The bearer token for a request now.
    pub(crate) fn bearer(&self) -> Option<String> {
        self.token.clone().or_else(|| {
            self.local_port
                .and_then(|_| control::read_token(&self.data_dir))
        })
    }

    /// The flags that make another command reach the same server (empty when it would anyway).
    pub(crate) fn repeat_flags(&self) -> String {
        match &self.chosen {
            Chosen::BaseUrl => format!(" --base-url {}", self.origin),
            Chosen::Profile(name) => format!(" --server {name}"),
            _ => String::new(),
        }
    }

    /// `--base-url X` / `--server P` / `the default profile P` / …, for messages.
    pub(crate) fn described(&self) -> String {
        match &self.chosen {
            Chosen::BaseUrl => format!("{} (--base-url)", self.origin),
            Chosen::Profile(name) => format!("{} (profile {name})", self.origin),
            Chosen::DefaultProfile(name) => format!("{} (default profile {name})", self.origin),
            Chosen::Manifest => format!("{} (the running local server)", self.origin),
            Chosen::Default => self.origin.clone(),
        }
    }
}

/// A validated origin: `(origin, local port)`.
pub(crate) fn parse_origin(raw: &str) -> CliResult<(String, Option<u16>)> {
    let url = url::Url::parse(raw.trim()).map_err(|e| {
        CliError::usage(format!(
            "{raw:?} is not a URL ({e}); use e.g. http://127.0.0.1:4788"
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(CliError::usage(format!(
            "{raw:?}: only http:// and https:// servers are supported"
        )));
    }
    if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
        return Err(CliError::usage(format!(
            "{raw:?}: give the server's origin only (scheme, host and port), without a path"
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(CliError::usage(format!(
            "{raw:?}: put credentials in EXECUTOR_API_KEY or a profile, not in the URL"
        )));
    }
    let host = url
        .host_str()
        .ok_or_else(|| CliError::usage(format!("{raw:?} has no host")))?;
    let port = url.port_or_known_default().unwrap_or(80);
    let origin = match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    };
    let local = url.scheme() == "http" && is_local_host(host);
    Ok((origin, local.then_some(port)))
}

/// `localhost`, `127.0.0.1` and `[::1]` are one host: this machine's loopback.
pub(crate) fn is_local_host(host: &str) -> bool {
    matches!(
        host.trim_start_matches('[').trim_end_matches(']'),
        "localhost" | "127.0.0.1" | "::1"
    )
}

/// Chooses the server for a command.
pub(crate) fn resolve(flags: &ConnectFlags, data_dir: &Path) -> CliResult<Target> {
    let env_token = std::env::var("EXECUTOR_API_KEY")
        .ok()
        .or_else(|| std::env::var("EXECUTOR_AUTH_TOKEN").ok())
        .filter(|t| !t.is_empty());
    let scope_dir = flags.scope.clone().map(|dir| absolute(&dir));
    let manifest = control::read_manifest(data_dir).filter(|m| m.pid_alive());
    let target = |origin: &str, chosen: Chosen, token: Option<String>| -> CliResult<Target> {
        let (mut origin, local_port) = parse_origin(origin)?;
        if let Some(port) = local_port {
            // One local host however it is spelled: the address this data directory's server
            // listens on when it is on this port, else the one a started daemon binds.
            origin = match manifest.as_ref().filter(|m| m.port() == Some(port)) {
                Some(m) => m.url.clone(),
                None => format!("http://127.0.0.1:{port}"),
            };
        }
        Ok(Target {
            origin,
            local_port,
            chosen,
            token,
            data_dir: data_dir.to_path_buf(),
            scope_dir: scope_dir.clone(),
        })
    };
    if let Some(base_url) = &flags.base_url {
        return target(base_url, Chosen::BaseUrl, env_token);
    }
    let profiles = Profiles::load(data_dir)?;
    if let Some(name) = &flags.server {
        let profile = profiles.get(name).ok_or_else(|| {
            CliError::usage(format!(
                "no server profile named {name:?} (see `executor server list`)"
            ))
        })?;
        let token = profile.token.clone().or(env_token);
        return target(&profile.origin, Chosen::Profile(name.clone()), token);
    }
    if let Some(profile) = profiles.default_profile() {
        let token = profile.token.clone().or(env_token);
        return target(
            &profile.origin,
            Chosen::DefaultProfile(profile.name.clone()),
            token,
        );
    }
    if let Some(m) = &manifest {
        return target(&m.url, Chosen::Manifest, env_token);
    }
    target(DEFAULT_ORIGIN, Chosen::Default, env_token)
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_origins_are_one_host() {
        for raw in [
            "http://localhost:4788",
            "http://127.0.0.1:4788/",
            "http://[::1]:4788",
        ] {
            let (_, port) = parse_origin(raw).unwrap();
            assert_eq!(port, Some(4788), "{raw}");
        }
        assert_eq!(parse_origin("http://127.0.0.1").unwrap().1, Some(80));
        assert_eq!(parse_origin("https://localhost:4788").unwrap().1, None);
        assert_eq!(parse_origin("http://example.com:4788").unwrap().1, None);
        assert_eq!(
            parse_origin("https://executor.example.com/").unwrap().0,
            "https://executor.example.com"
        );
    }

    #[test]
    fn bad_origins_are_usage_errors() {
        for raw in [
            "127.0.0.1:4788",
            "ftp://x",
            "http://x/api",
            "http://u:p@x",
            "nonsense",
        ] {
            assert_eq!(parse_origin(raw).unwrap_err().code, 2, "{raw}");
        }
    }
}
