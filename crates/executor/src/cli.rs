//! Flags, then validated settings.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, CommandFactory, Parser, Subcommand};

use crate::client::target::{self, ConnectFlags};
use crate::client::{
    CliError, api::Api, block_on, browse, call, daemon, login, profiles, service, tools,
};

#[derive(Parser)]
#[command(
    name = "executor",
    version,
    about = "The integration layer for AI agents",
    after_help = "Commands that talk to a server choose it with --base-url or --server, else the default profile, else this data directory's running server, else http://127.0.0.1:4788 (started on demand).\nExit codes: 0 done (a paused call included), 1 failed, 2 bad command line, 3 no server answered."
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Call one tool: `executor call github org main issues.create '{"title":"x"}'`.
    Call(CallArgs),
    /// Answer a paused call: approve, decline or cancel it.
    Resume(ResumeArgs),
    /// Find tools and integrations.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Run the server in the foreground and print its URL.
    Web(ServeFlags),
    /// Run the team server: people sign in (the first account owns the organisation, others
    /// join by invite), each with API keys and OAuth for their agents. Configure with
    /// EXECUTOR_WEB_BASE_URL, EXECUTOR_ORG_NAME, EXECUTOR_ORG_SLUG, and optionally
    /// EXECUTOR_BOOTSTRAP_ADMIN_EMAIL / _PASSWORD.
    Serve(ServeFlags),
    /// Manage the background server of this data directory.
    #[command(subcommand)]
    Daemon(DaemonCommand),
    /// Serve MCP over stdin/stdout: bridges to the running server of this data directory, or
    /// serves from the data directory itself when none runs.
    Mcp(McpFlags),
    /// Sign in to a team server (`executor serve`) from this machine: approve the code in the
    /// browser, and the sign-in is saved as a profile (made the default).
    Login {
        /// The team server's origin, e.g. https://executor.example.com.
        #[arg(long, value_name = "ORIGIN")]
        base_url: String,
        /// The profile to save it as (default: the server's host and port).
        #[arg(long, value_name = "PROFILE")]
        name: Option<String>,
    },
    /// End the sign-in of a profile (the default one unless --server says which).
    Logout(ConnectFlags),
    /// Who this machine is signed in to a team server as.
    Whoami(ConnectFlags),
    /// Saved servers (profiles) and the local API token.
    #[command(subcommand)]
    Server(ServerCommand),
    /// Run the daemon under the OS's service manager (systemd --user, launchd).
    #[command(subcommand)]
    Service(ServiceCommand),
    /// Print a shell completion script: `executor completions bash > /etc/bash_completion.d/executor`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Args)]
#[command(disable_help_flag = true)]
struct CallArgs {
    /// The tool's path, as segments, dotted, or both, then optionally its arguments as a JSON
    /// object or @file.json.
    #[arg(value_name = "PATH… [ARGS]")]
    words: Vec<String>,
    /// Print the whole outcome as JSON.
    #[arg(long)]
    json: bool,
    /// Browse the tools under the path instead of calling it.
    #[arg(short = 'h', long)]
    help: bool,
    /// With --help: only the entries matching TEXT.
    #[arg(long = "match", value_name = "TEXT", requires = "help")]
    filter: Option<String>,
    /// With --help: at most N entries.
    #[arg(long, default_value_t = 50, requires = "help")]
    limit: usize,
    #[command(flatten)]
    connect: ConnectFlags,
}

#[derive(Args)]
struct ResumeArgs {
    /// The paused execution (`exec_…`), as `call` printed it.
    #[arg(long)]
    execution_id: String,
    #[arg(long, value_enum, default_value = "accept")]
    action: ResumeAction,
    /// The answer to a form, a JSON object.
    #[arg(long, value_name = "JSON")]
    content: Option<String>,
    /// Print the whole outcome as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    connect: ConnectFlags,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ResumeAction {
    Accept,
    Decline,
    Cancel,
}

#[derive(Subcommand)]
enum ToolsCommand {
    /// Rank tools by a query.
    Search {
        query: String,
        /// Only tools of this integration.
        #[arg(long)]
        namespace: Option<String>,
        #[arg(long, default_value_t = 12)]
        limit: usize,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connect: ConnectFlags,
    },
    /// One tool's description and TypeScript input and output.
    Describe {
        path: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connect: ConnectFlags,
    },
    /// The integrations and how many tools each has.
    Integrations {
        #[arg(long)]
        query: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        connect: ConnectFlags,
    },
}

#[derive(Subcommand)]
enum ServerCommand {
    /// Save a server: `executor server add team https://executor.example.com --default`.
    Add {
        name: String,
        origin: String,
        #[arg(long)]
        display_name: Option<String>,
        /// Make it the default for every command.
        #[arg(long)]
        default: bool,
        /// Read a bearer token for it from stdin (else EXECUTOR_API_KEY is sent at call time).
        #[arg(long)]
        token_stdin: bool,
    },
    /// The saved servers (`*` marks the default).
    List,
    /// Make a saved server the default.
    Use { name: String },
    /// Forget a saved server.
    Remove { name: String },
    /// Write a new local API token (a running server keeps the old one until it restarts).
    RotateToken,
}

#[derive(Subcommand)]
enum ServiceCommand {
    /// Install and start the service (taking over from a daemon started by hand).
    Install {
        #[arg(long, default_value_t = crate::client::service::DEFAULT_PORT)]
        port: u16,
        /// Print the unit instead of installing it.
        #[arg(long)]
        print: bool,
        /// The workspace it serves (`EXECUTOR_SCOPE_DIR`; default: the data directory).
        #[arg(long, value_name = "DIR")]
        scope: Option<PathBuf>,
    },
    /// Stop and remove the service.
    Uninstall,
    /// Whether the service is registered and serving (exit 3 when not serving).
    Status,
    /// Restart the service.
    Restart {
        #[arg(long, default_value_t = crate::client::service::DEFAULT_PORT)]
        port: u16,
    },
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

/// Where everything is kept, shared by `web`, `daemon run` and `mcp`.
#[derive(Args, Clone)]
struct DatabaseFlags {
    /// Keep everything in this PostgreSQL database (`postgres://user:password@host:5432/db`)
    /// instead of the data directory's SQLite file; any number of servers may share it. Needs
    /// EXECUTOR_SECRET_KEY, the same on every server.
    #[arg(
        long,
        env = "EXECUTOR_DATABASE_URL",
        hide_env_values = true,
        value_name = "URL"
    )]
    database_url: Option<String>,
}

/// Where the store lives, validated.
#[derive(Clone)]
pub(crate) enum Database {
    /// `data.db` in the data directory.
    DataDir,
    /// A PostgreSQL database replicas share, and the key every replica seals secrets with.
    Postgres {
        url: String,
        key: executor_store::MasterKey,
    },
}

impl DatabaseFlags {
    fn database(&self) -> anyhow::Result<Database> {
        let Some(url) = self
            .database_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
        else {
            return Ok(Database::DataDir);
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            bail!(
                "--database-url must be a postgres:// URL; SQLite needs none (it is the data directory's data.db)"
            );
        }
        let env = executor_store::SECRET_KEY_ENV;
        let Some(text) = std::env::var(env).ok().filter(|k| !k.trim().is_empty()) else {
            bail!(
                "{env} is required with a PostgreSQL database: every server sharing it seals and opens secrets with that key. Generate one with `openssl rand -hex 32` and give each server the same value"
            );
        };
        let key = executor_store::MasterKey::parse(text.trim())
            .with_context(|| format!("reading {env}"))?;
        Ok(Database::Postgres {
            url: url.to_owned(),
            key,
        })
    }

    /// What a background start hands its child, by environment (the URL holds a password).
    fn forwarded_env(&self) -> Vec<(&'static str, String)> {
        self.database_url
            .iter()
            .map(|url| ("EXECUTOR_DATABASE_URL", url.clone()))
            .collect()
    }
}

#[derive(Args, Clone)]
struct McpFlags {
    /// How approvals reach a person: `model` (the agent asks and calls `resume`), `native`
    /// (forwarded to the MCP client as elicitations) or `browser` (an approval page; needs a
    /// running server).
    #[arg(long, default_value = "model")]
    elicitation_mode: String,
    /// Serve a toolkit's endpoint (`/mcp/toolkits/<slug>`): the agent sees only the tools that
    /// toolkit grants, under the toolkit's policies alone.
    #[arg(long, value_name = "SLUG")]
    toolkit: Option<String>,
    /// Bridge to this saved server (a team server you signed in to with `executor login`)
    /// instead of this data directory.
    #[arg(long, value_name = "PROFILE", conflicts_with = "base_url")]
    server: Option<String>,
    /// Bridge to the server at this origin, with EXECUTOR_API_KEY as its credential.
    #[arg(long, value_name = "ORIGIN")]
    base_url: Option<String>,
    /// JS-time budget of one execution when serving from the data directory itself.
    #[arg(long, env = "EXECUTOR_EXECUTION_TIMEOUT", default_value = "5m")]
    execution_timeout: String,
    /// How long a paused execution waits for a decision before it expires and is cleaned up:
    /// a duration like 30m, 24h.
    #[arg(long, env = "EXECUTOR_PAUSE_TTL", default_value = "24h")]
    pause_ttl: String,
    #[command(flatten)]
    calls: CallFlags,
    #[command(flatten)]
    database: DatabaseFlags,
}

/// Validated settings of `executor mcp`.
pub(crate) struct McpSettings {
    pub(crate) data_dir: PathBuf,
    pub(crate) scope_dir: PathBuf,
    pub(crate) execution_timeout: Duration,
    pub(crate) pause_ttl: Duration,
    pub(crate) elicitation_mode: executor_server::mcp::ElicitationMode,
    /// The toolkit whose endpoint to serve, if any.
    pub(crate) toolkit: Option<String>,
    pub(crate) calls: executor_engine::CallLimitsConfig,
    pub(crate) database: Database,
    /// `--server` / `--base-url`: the origin to bridge to and its bearer token.
    pub(crate) remote: Option<(String, Option<String>)>,
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
        if let Some(slug) = &self.toolkit
            && !executor_engine::is_valid_slug(slug)
        {
            anyhow::bail!(
                "--toolkit must be a toolkit slug (1–63 of a-z, 0-9 and '-', not starting or ending with '-'), got {slug:?}"
            );
        }
        let remote = if self.server.is_some() || self.base_url.is_some() {
            let data_dir = data_dir()?;
            let flags = ConnectFlags {
                base_url: self.base_url.clone(),
                server: self.server.clone(),
                scope: None,
            };
            let target =
                target::resolve(&flags, &data_dir).map_err(|e| anyhow::anyhow!(e.message))?;
            let token = target.bearer();
            Some((target.origin, token))
        } else {
            None
        };
        Ok(McpSettings {
            remote,
            toolkit: self.toolkit.clone(),
            data_dir: data_dir()?,
            scope_dir: scope_dir()?,
            execution_timeout: execution_timeout(&self.execution_timeout)?,
            pause_ttl: pause_ttl(&self.pause_ttl)?,
            elicitation_mode,
            calls: self.calls.limits()?,
            database: self.database.database()?,
        })
    }
}

#[derive(Subcommand)]
enum DaemonCommand {
    /// Start the server (in the background unless --foreground).
    Run(ServeFlags),
    /// Whether the server answers: exit 0 when it does, 3 when it does not.
    Status(ConnectFlags),
    /// Stop the server and wait for it to exit.
    Stop(ConnectFlags),
    /// Stop the server, then start it again with the same flags.
    Restart(ConnectFlags),
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
    /// How long an `/mcp` session with no request stays in memory (a duration like 30m, 24h);
    /// then it is released, and its next request restores it from its record, which lives 7
    /// days from the session's start or until the client deletes it.
    #[arg(long, env = "EXECUTOR_MCP_SESSION_IDLE_TIMEOUT", default_value = "24h")]
    mcp_session_idle_timeout: String,
    #[command(flatten)]
    database: DatabaseFlags,
    /// The API's bearer token, instead of the one minted into the data directory (replicas
    /// behind one load balancer share one; at least 16 characters).
    #[arg(
        long,
        env = "EXECUTOR_AUTH_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    auth_token: Option<String>,
    /// `serve`: let admins add stdio MCP servers, which run a command on this host as the
    /// server's user (off by default; a local `web` server always allows them).
    #[arg(
        long,
        env = "EXECUTOR_ALLOW_STDIO_MCP",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    allow_stdio_mcp: bool,
    /// `serve`: let upstream servers be on private networks and loopback (10/8, 192.168/16,
    /// 127/8, fc00::/7…), which the team server refuses by default so members cannot make it
    /// fetch from inside its network. Link-local and cloud metadata addresses are refused
    /// whatever this says; a local `web` server always allows private networks.
    #[arg(
        long,
        env = "EXECUTOR_ALLOW_PRIVATE_NETWORK",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    allow_private_network: bool,
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
    /// `web` (a server in a terminal) rather than `daemon run`: said in the manifest.
    pub(crate) foreground_web: bool,
    pub(crate) database: Database,
    /// The API token given by the operator; `None`: the data directory's own.
    pub(crate) auth_token: Option<String>,
    /// `serve`: the team server, with accounts instead of the API token.
    pub(crate) team: bool,
    /// `serve --allow-stdio-mcp`.
    pub(crate) allow_stdio_mcp: bool,
    /// `serve --allow-private-network`.
    pub(crate) allow_private_network: bool,
}

impl Settings {
    /// What this server may do on its host: a local one everything its user can, the team
    /// server what its operator allowed.
    pub(crate) fn exposure(&self) -> crate::server::Exposure {
        if !self.team {
            return crate::server::Exposure::LOCAL;
        }
        crate::server::Exposure {
            allow_stdio_mcp: self.allow_stdio_mcp,
            network: executor_core::network::NetworkAccess {
                allow_private: self.allow_private_network,
            },
        }
    }
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
                &self.mcp_session_idle_timeout,
            )?,
            foreground_web: false,
            database: self.database.database()?,
            auth_token: self.auth_token.as_deref().map(auth_token).transpose()?,
            team: false,
            allow_stdio_mcp: self.allow_stdio_mcp,
            allow_private_network: self.allow_private_network,
        })
    }
}

/// An operator's API token: long enough not to be guessed, and sendable in a header.
fn auth_token(raw: &str) -> anyhow::Result<String> {
    let token = raw.trim();
    if token.chars().count() < 16 {
        bail!("--auth-token must be at least 16 characters");
    }
    if !token.chars().all(|c| c.is_ascii_graphic()) {
        bail!("--auth-token must be printable ASCII without spaces");
    }
    Ok(token.to_owned())
}

fn mcp_session_limits(
    total: usize,
    per_token: usize,
    idle: &str,
) -> anyhow::Result<executor_server::McpSessionLimits> {
    if total == 0 || per_token == 0 {
        bail!("--max-mcp-sessions and --max-mcp-sessions-per-token must be at least 1");
    }
    let idle = parse_duration(idle)
        .with_context(|| format!("invalid --mcp-session-idle-timeout {idle:?}"))?;
    if idle < Duration::from_secs(1) {
        bail!("--mcp-session-idle-timeout must be at least 1s");
    }
    Ok(executor_server::McpSessionLimits {
        total,
        per_token,
        idle,
    })
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

/// Parses the command line (a usage error is one line and exit 2; `--help` and `--version`
/// print and exit 0) and runs the command.
pub(crate) fn run() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match dispatch(cli.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("executor: {e}");
            ExitCode::from(e.code)
        }
    }
}

fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let rendered = e.render().to_string();
            let first = rendered
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid command line")
                .trim_start_matches("error: ");
            eprintln!("executor: {first} (see executor --help)");
            ExitCode::from(2)
        }
    }
}

fn dispatch(command: Command) -> Result<ExitCode, CliError> {
    let serves = matches!(
        command,
        Command::Web(_) | Command::Serve(_) | Command::Mcp(_)
    ) || matches!(&command, Command::Daemon(DaemonCommand::Run(flags)) if flags.foreground);
    if !serves {
        crate::client::die_on_closed_pipe();
    }
    let data_dir = || data_dir().map_err(CliError::from);
    let api = |connect: &ConnectFlags| -> Result<Api, CliError> {
        Api::new(target::resolve(connect, &data_dir()?)?)
    };
    match command {
        Command::Web(flags) => {
            let mut settings = flags.settings()?;
            settings.foreground_web = true;
            Ok(crate::server::run(settings)?)
        }
        Command::Serve(flags) => {
            let mut settings = flags.settings()?;
            if settings.auth_token.is_some() {
                return Err(anyhow::anyhow!(
                    "--auth-token is for `executor web`; the team server signs people in (API keys for agents)"
                )
                .into());
            }
            settings.foreground_web = true;
            settings.team = true;
            Ok(crate::server::run(settings)?)
        }
        Command::Daemon(DaemonCommand::Run(flags)) if flags.foreground => {
            Ok(crate::server::run(flags.settings()?)?)
        }
        Command::Daemon(DaemonCommand::Run(flags)) => {
            let settings = flags.settings()?;
            let args = flags.forwarded_args(&settings);
            let mut env = flags.database.forwarded_env();
            if let Some(token) = &settings.auth_token {
                env.push(("EXECUTOR_AUTH_TOKEN", token.clone()));
            }
            block_on(daemon::run_background(
                &settings.data_dir,
                &settings.scope_dir,
                settings.bind.0,
                settings.bind.1,
                args,
                env,
            ))
        }
        Command::Daemon(DaemonCommand::Status(connect)) => {
            block_on(async move { daemon::status(&connect, &data_dir()?).await })
        }
        Command::Daemon(DaemonCommand::Stop(connect)) => {
            block_on(async move { daemon::stop(&connect, &data_dir()?).await })
        }
        Command::Daemon(DaemonCommand::Restart(connect)) => {
            block_on(async move { daemon::restart(&connect, &data_dir()?).await })
        }
        Command::Mcp(flags) => Ok(crate::mcp_stdio::run(flags.settings()?)?),
        Command::Call(args) => {
            let output = call::Output { json: args.json };
            if args.help {
                // The arguments a person left at the end do not matter to browsing.
                let words: Vec<String> = args
                    .words
                    .iter()
                    .filter(|w| !w.starts_with('{') && !w.starts_with('@'))
                    .cloned()
                    .collect();
                let prefix = call::path_segments(&words)?;
                let api = api(&args.connect)?;
                return block_on(async move {
                    browse::browse(&api, prefix, args.filter.as_deref(), args.limit.max(1)).await
                });
            }
            let invocation = call::parse_invocation(&args.words)?;
            let api = api(&args.connect)?;
            block_on(async move { call::call(&api, invocation, output).await })
        }
        Command::Resume(args) => {
            let content = call::parse_content(args.content.as_deref())?;
            if args.execution_id.trim().is_empty() {
                return Err(CliError::usage("--execution-id is empty"));
            }
            let action = match args.action {
                ResumeAction::Accept => "accept",
                ResumeAction::Decline => "decline",
                ResumeAction::Cancel => "cancel",
            };
            let api = api(&args.connect)?;
            let output = call::Output { json: args.json };
            block_on(async move {
                call::resume(&api, &args.execution_id, action, content, output).await
            })
        }
        Command::Tools(ToolsCommand::Search {
            query,
            namespace,
            limit,
            json,
            connect,
        }) => {
            let api = api(&connect)?;
            block_on(async move {
                tools::search(&api, &query, namespace.as_deref(), limit.max(1), json).await
            })
        }
        Command::Tools(ToolsCommand::Describe {
            path,
            json,
            connect,
        }) => {
            let api = api(&connect)?;
            block_on(async move { tools::describe(&api, &path, json).await })
        }
        Command::Tools(ToolsCommand::Integrations {
            query,
            limit,
            json,
            connect,
        }) => {
            let api = api(&connect)?;
            block_on(async move {
                tools::integrations(&api, query.as_deref(), limit.max(1), json).await
            })
        }
        Command::Login { base_url, name } => {
            let dir = data_dir()?;
            block_on(async move { login::login(&dir, &base_url, name.as_deref()).await })
        }
        Command::Logout(connect) => {
            let dir = data_dir()?;
            block_on(async move { login::logout(&dir, &connect).await })
        }
        Command::Whoami(connect) => {
            let dir = data_dir()?;
            block_on(async move { login::whoami(&dir, &connect).await })
        }
        Command::Server(command) => {
            let data_dir = data_dir()?;
            match command {
                ServerCommand::Add {
                    name,
                    origin,
                    display_name,
                    default,
                    token_stdin,
                } => profiles::add(
                    &data_dir,
                    &name,
                    &origin,
                    display_name,
                    default,
                    token_stdin,
                ),
                ServerCommand::List => profiles::list(&data_dir),
                ServerCommand::Use { name } => profiles::use_profile(&data_dir, &name),
                ServerCommand::Remove { name } => profiles::remove(&data_dir, &name),
                ServerCommand::RotateToken => profiles::rotate_token(&data_dir),
            }
        }
        Command::Service(command) => {
            let data_dir = data_dir()?;
            match command {
                ServiceCommand::Install { port, print, scope } => {
                    let spec = service::spec(&data_dir, scope.as_deref(), port)?;
                    block_on(service::install(spec, print))
                }
                ServiceCommand::Uninstall => service::uninstall(),
                ServiceCommand::Status => block_on(service::status(&data_dir)),
                ServiceCommand::Restart { port } => {
                    let spec = service::spec(&data_dir, None, port)?;
                    block_on(service::restart(spec))
                }
            }
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "executor",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

impl ServeFlags {
    /// The flags a background start hands its `daemon run --foreground` child.
    fn forwarded_args(&self, settings: &Settings) -> Vec<String> {
        let mut args = vec![
            "--port".to_owned(),
            settings.bind.1.to_string(),
            "--hostname".to_owned(),
            settings.bind.0.to_string(),
            "--execution-timeout".to_owned(),
            format!("{}ms", settings.execution_timeout.as_millis()),
            "--pause-ttl".to_owned(),
            format!("{}ms", settings.pause_ttl.as_millis()),
            "--call-timeout".to_owned(),
            format!("{}ms", settings.calls.call_timeout.as_millis()),
            "--max-tool-output-mib".to_owned(),
            (settings.calls.max_output_bytes / (1024 * 1024)).to_string(),
            "--max-mcp-sessions".to_owned(),
            settings.mcp_sessions.total.to_string(),
            "--max-mcp-sessions-per-token".to_owned(),
            settings.mcp_sessions.per_token.to_string(),
            "--mcp-session-idle-timeout".to_owned(),
            format!("{}ms", settings.mcp_sessions.idle.as_millis()),
        ];
        for allowed in &self.allowed_hosts {
            args.push("--allowed-host".to_owned());
            args.push(allowed.clone());
        }
        args
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
