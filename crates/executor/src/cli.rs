//! Flags, then validated settings.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "executor",
    version,
    about = "The integration layer for AI agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server in the foreground and print its URL.
    Web(ServeFlags),
    /// Manage the background server.
    #[command(subcommand)]
    Daemon(DaemonCommand),
    /// Serve MCP over stdin/stdout: bridges to the running server of this data directory, or
    /// serves from the data directory itself when none runs.
    Mcp(McpFlags),
}

/// Limits of every tool call, shared by `web`, `daemon run` and `mcp`.
#[derive(Args, Clone)]
struct CallFlags {
    /// How long one tool call may wait for its upstream (a duration like 30s, 2m); time a person
    /// spends answering the call's elicitations does not count.
    #[arg(long, env = "EXECUTOR_CALL_TIMEOUT", default_value = "120s")]
    call_timeout: String,
    /// Largest tool answer handed to the code, in MiB; larger ones are a
    /// `tool_output_too_large` error value.
    #[arg(long, env = "EXECUTOR_MAX_TOOL_OUTPUT_MIB", default_value_t = 16)]
    max_tool_output_mib: usize,
}

impl CallFlags {
    fn limits(&self) -> anyhow::Result<executor_engine::CallLimitsConfig> {
        let call_timeout = parse_duration(&self.call_timeout)
            .with_context(|| format!("invalid call timeout {:?}", self.call_timeout))?;
        if call_timeout < Duration::from_millis(100) {
            bail!("the call timeout must be at least 100ms");
        }
        if self.max_tool_output_mib == 0 || self.max_tool_output_mib > 1024 {
            bail!("--max-tool-output-mib must be between 1 and 1024");
        }
        Ok(executor_engine::CallLimitsConfig {
            call_timeout,
            max_output_bytes: self.max_tool_output_mib * 1024 * 1024,
            ..executor_engine::CallLimitsConfig::default()
        })
    }
}

#[derive(Args, Clone)]
struct McpFlags {
    /// How approvals reach a person: `model` (the agent asks and calls `resume`), `native`
    /// (forwarded to the MCP client as elicitations) or `browser` (an approval page; needs a
    /// running server).
    #[arg(long, default_value = "model")]
    elicitation_mode: String,
    /// JS-time budget of one execution when serving from the data directory itself.
    #[arg(long, env = "EXECUTOR_EXECUTION_TIMEOUT", default_value = "5m")]
    execution_timeout: String,
    /// How long a paused execution waits for a decision before it expires and is cleaned up:
    /// a duration like 30m, 24h.
    #[arg(long, env = "EXECUTOR_PAUSE_TTL", default_value = "24h")]
    pause_ttl: String,
    #[command(flatten)]
    calls: CallFlags,
}

/// Validated settings of `executor mcp`.
pub(crate) struct McpSettings {
    pub(crate) data_dir: PathBuf,
    pub(crate) scope_dir: PathBuf,
    pub(crate) execution_timeout: Duration,
    pub(crate) pause_ttl: Duration,
    pub(crate) elicitation_mode: executor_server::mcp::ElicitationMode,
    pub(crate) calls: executor_engine::CallLimitsConfig,
}

impl McpFlags {
    fn settings(&self) -> anyhow::Result<McpSettings> {
        let elicitation_mode = executor_server::mcp::ElicitationMode::parse(&self.elicitation_mode)
            .with_context(|| {
                format!(
                    "--elicitation-mode must be model, native or browser, got {:?}",
                    self.elicitation_mode
                )
            })?;
        Ok(McpSettings {
            data_dir: data_dir()?,
            scope_dir: scope_dir()?,
            execution_timeout: execution_timeout(&self.execution_timeout)?,
            pause_ttl: pause_ttl(&self.pause_ttl)?,
            elicitation_mode,
            calls: self.calls.limits()?,
        })
    }
}

#[derive(Subcommand)]
enum DaemonCommand {
    /// Start the server (in the background unless --foreground).
    Run(ServeFlags),
}

#[derive(Args, Clone)]
struct ServeFlags {
    /// Port to listen on (0 picks a free one).
    #[arg(long, env = "PORT", default_value_t = 4788)]
    port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    hostname: String,
    /// JS-time budget of one execution: milliseconds, or a duration like 30s, 5m.
    #[arg(long, env = "EXECUTOR_EXECUTION_TIMEOUT", default_value = "5m")]
    execution_timeout: String,
    /// How long a paused execution waits for a decision before it expires and is cleaned up:
    /// a duration like 30m, 24h.
    #[arg(long, env = "EXECUTOR_PAUSE_TTL", default_value = "24h")]
    pause_ttl: String,
    /// Stay in the foreground (the default for `web`).
    #[arg(long)]
    foreground: bool,
    /// Another `Host` (`name` or `name:port`) accepted on `/mcp` besides loopback; repeatable.
    /// Requests with any other Host or browser Origin get 403 (DNS-rebinding protection).
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    #[command(flatten)]
    calls: CallFlags,
    /// Most `/mcp` sessions alive at once; over it the longest idle one is closed, and when all
    /// are busy `initialize` is refused with a JSON-RPC error.
    #[arg(long, env = "EXECUTOR_MAX_MCP_SESSIONS", default_value_t = executor_server::McpSessionLimits::DEFAULT_TOTAL)]
    max_mcp_sessions: usize,
    /// Most `/mcp` sessions alive at once for one bearer token (same rules).
    #[arg(long, env = "EXECUTOR_MAX_MCP_SESSIONS_PER_TOKEN", default_value_t = executor_server::McpSessionLimits::DEFAULT_PER_TOKEN)]
    max_mcp_sessions_per_token: usize,
}

/// Everything the server needs, validated.
pub(crate) struct Settings {
    pub(crate) bind: (IpAddr, u16),
    pub(crate) data_dir: PathBuf,
    pub(crate) scope_dir: PathBuf,
    pub(crate) execution_timeout: Duration,
    pub(crate) pause_ttl: Duration,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) calls: executor_engine::CallLimitsConfig,
    pub(crate) mcp_sessions: executor_server::McpSessionLimits,
}

impl ServeFlags {
    fn settings(&self) -> anyhow::Result<Settings> {
        let host: IpAddr = match self.hostname.as_str() {
            "localhost" => IpAddr::from([127, 0, 0, 1]),
            other => other
                .parse()
                .with_context(|| format!("--hostname {other:?} is not an IP address"))?,
        };
        Ok(Settings {
            bind: (host, self.port),
            data_dir: data_dir()?,
            scope_dir: scope_dir()?,
            execution_timeout: execution_timeout(&self.execution_timeout)?,
            pause_ttl: pause_ttl(&self.pause_ttl)?,
            allowed_hosts: self.allowed_hosts.clone(),
            calls: self.calls.limits()?,
            mcp_sessions: mcp_session_limits(
                self.max_mcp_sessions,
                self.max_mcp_sessions_per_token,
            )?,
        })
    }
}

fn mcp_session_limits(
    total: usize,
    per_token: usize,
) -> anyhow::Result<executor_server::McpSessionLimits> {
    if total == 0 || per_token == 0 {
        bail!("--max-mcp-sessions and --max-mcp-sessions-per-token must be at least 1");
    }
    Ok(executor_server::McpSessionLimits { total, per_token })
}

fn execution_timeout(raw: &str) -> anyhow::Result<Duration> {
    let timeout =
        parse_duration(raw).with_context(|| format!("invalid execution timeout {raw:?}"))?;
    if timeout < Duration::from_millis(100) {
        bail!("the execution timeout must be at least 100ms");
    }
    Ok(timeout)
}

fn pause_ttl(raw: &str) -> anyhow::Result<Duration> {
    let ttl = parse_duration(raw).with_context(|| format!("invalid pause TTL {raw:?}"))?;
    if ttl < Duration::from_secs(1) {
        bail!("the pause TTL must be at least 1s");
    }
    Ok(ttl)
}

fn scope_dir() -> anyhow::Result<PathBuf> {
    match std::env::var_os("EXECUTOR_SCOPE_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => std::env::current_dir().context("reading the current directory"),
    }
}

fn data_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os("EXECUTOR_DATA_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").context("neither EXECUTOR_DATA_DIR nor HOME is set")?;
    Ok(PathBuf::from(home).join(".executor"))
}

/// `1500` (milliseconds), `500ms`, `30s`, `5m`, `1h`.
pub(crate) fn parse_duration(raw: &str) -> anyhow::Result<Duration> {
    let raw = raw.trim();
    let split = raw.find(|c: char| !c.is_ascii_digit()).unwrap_or(raw.len());
    let (digits, unit) = raw.split_at(split);
    let n: u64 = digits.parse().context("expected a number")?;
    Ok(match unit.trim() {
        "" | "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        other => bail!("unknown unit {other:?} (use ms, s, m or h)"),
    })
}

pub(crate) fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match cli.command {
        Command::Web(flags) => crate::server::run(flags.settings()?),
        Command::Daemon(DaemonCommand::Run(flags)) if flags.foreground => {
            crate::server::run(flags.settings()?)
        }
        Command::Daemon(DaemonCommand::Run(flags)) => {
            crate::server::spawn_background(flags.settings()?)
        }
        Command::Mcp(flags) => crate::mcp_stdio::run(flags.settings()?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1500").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
    }
}
