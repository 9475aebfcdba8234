//! `executor mcp`: the agent MCP surface over stdin/stdout (stdout is the protocol; logs go to
//! stderr).
//!
//! One writer per data directory: if no server runs, this process opens the data directory
//! itself (owner lock) and serves from its own engine. If the lock is held, it reads the running
//! server's manifest (`server-control/server.json`) and bridges to its `/mcp` (or, with
//! `--toolkit <slug>`, `/mcp/toolkits/<slug>`): an rmcp stdio
//! server whose handler forwards `tools/list` and `tools/call` to an rmcp streamable-HTTP client,
//! and forwards `tools/list_changed` and elicitations back from it.

use std::process::ExitCode;
use std::time::Duration;

use executor_server::mcp::{ElicitationMode, ExecutorMcp};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams,
    ElicitResult, Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData, Peer, RoleClient, RoleServer, ServerHandler, ServiceExt};

use crate::cli::McpSettings;
use crate::control::read_manifest;
use crate::server::{OpenError, open_engine, wait_for_signal};

/// How long to wait for a starting server's manifest when the data directory is locked.
const MANIFEST_WAIT: Duration = Duration::from_secs(10);

pub(crate) fn run(settings: McpSettings) -> anyhow::Result<ExitCode> {
    crate::server::init_logging();
    crate::server::io_runtime()?.block_on(serve(settings))
}

async fn serve(settings: McpSettings) -> anyhow::Result<ExitCode> {
    if let Some((origin, token)) = &settings.remote {
        tracing::info!(%origin, "bridging MCP on stdio to the chosen server");
        return serve_stdio(Bridge {
            endpoint: endpoint(origin, &settings),
            token: token.clone(),
            upstream: tokio::sync::OnceCell::new(),
        })
        .await;
    }
    match open_engine(
        &settings.data_dir,
        &settings.database,
        &settings.scope_dir,
        settings.execution_timeout,
        settings.pause_ttl,
        settings.calls.clone(),
    )
    .await
    {
        Ok(opened) => {
            let mut mode = settings.elicitation_mode;
            if mode == ElicitationMode::Browser {
                tracing::warn!(
                    "browser approvals need a running server (`executor web`); using model mode"
                );
                mode = ElicitationMode::Model;
            }
            tracing::info!(data_dir = %settings.data_dir.display(), "serving MCP on stdio from the data directory");
            let caller = match &settings.toolkit {
                Some(slug) => opened
                    .caller
                    .clone()
                    .with_policies(executor_engine::PolicySource::Toolkit(slug.clone())),
                None => opened.caller.clone(),
            };
            let handler = ExecutorMcp::new(opened.engine.clone(), caller, mode);
            let result = serve_stdio(handler).await;
            opened.close().await;
            result
        }
        Err(OpenError::Locked(locked)) => {
            let url = find_server(&settings.data_dir, &locked).await?;
            tracing::info!(%url, "bridging MCP on stdio to the running server");
            serve_stdio(Bridge {
                endpoint: endpoint(&url, &settings),
                token: crate::control::read_token(&settings.data_dir),
                upstream: tokio::sync::OnceCell::new(),
            })
            .await
        }
        Err(OpenError::Other(e)) => Err(e),
    }
}

/// The `/mcp` endpoint (or the toolkit's) of the server at `url`.
fn endpoint(url: &str, settings: &McpSettings) -> String {
    let resource = match &settings.toolkit {
        Some(slug) => format!("/mcp/toolkits/{slug}"),
        None => "/mcp".to_owned(),
    };
    format!(
        "{}{resource}?elicitation_mode={}",
        url.trim_end_matches('/'),
        settings.elicitation_mode.as_str()
    )
}

/// Serves `handler` on stdin/stdout until the client hangs up or a signal arrives.
async fn serve_stdio<H: ServerHandler>(handler: H) -> anyhow::Result<ExitCode> {
    let running = match handler.serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(e) => {
            // The client went away (or spoke no MCP) before initializing.
            tracing::info!(error = %e, "stdio MCP session did not start");
            return Ok(ExitCode::SUCCESS);
        }
    };
    let cancel = running.cancellation_token();
    tokio::select! {
        quit = running.waiting() => {
            if let Err(e) = quit {
                tracing::warn!(error = %e, "stdio MCP session ended with an error");
            }
        }
        () = wait_for_signal() => cancel.cancel(),
    }
    Ok(ExitCode::SUCCESS)
}

/// The URL of the server that owns the data directory, from its manifest.
async fn find_server(
    data_dir: &std::path::Path,
    locked: &executor_store::StoreError,
) -> anyhow::Result<String> {
    let deadline = tokio::time::Instant::now() + MANIFEST_WAIT;
    loop {
        if let Some(manifest) = read_manifest(data_dir).filter(|m| m.pid_alive()) {
            tracing::debug!(pid = manifest.pid, url = %manifest.url, "found the running server");
            return Ok(manifest.url);
        }
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!(
                "{locked}; and no running server announced itself in {} (is another `executor mcp` serving this data directory?)",
                crate::control::manifest_path(data_dir).display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The stdio side of the bridge. Connects upstream when the stdio client initializes, with the
/// client's own capabilities, so elicitation support is passed through.
struct Bridge {
    endpoint: String,
    /// The server's API token (`server-control/auth.json`, same data directory).
    token: Option<String>,
    upstream: tokio::sync::OnceCell<RunningService<RoleClient, Upstream>>,
}

impl Bridge {
    fn upstream(&self) -> Result<Peer<RoleClient>, ErrorData> {
        self.upstream
            .get()
            .map(|running| running.peer().clone())
            .ok_or_else(|| ErrorData::internal_error("not initialized", None))
    }
}

fn upstream_error(e: rmcp::ServiceError) -> ErrorData {
    match e {
        rmcp::ServiceError::McpError(error) => error,
        other => ErrorData::internal_error(format!("executor server: {other}"), None),
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        executor_server::mcp::server_config()
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let handler = Upstream {
            downstream: context.peer.clone(),
            capabilities: request.capabilities.clone(),
            client_info: request.client_info.clone(),
        };
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.endpoint.as_str())
            .max_json_response_size(64 * 1024 * 1024)
            .reinit_on_expired_session(true);
        if let Some(token) = &self.token {
            config = config.auth_header(token.clone());
        }
        let transport = StreamableHttpClientTransport::from_config(config);
        let running = handler.serve(transport).await.map_err(|e| {
            tracing::error!(error = %e, endpoint = %self.endpoint, "cannot reach the executor server");
            ErrorData::internal_error(
                format!("cannot reach the executor server at {}: {e}", self.endpoint),
                None,
            )
        })?;
        if self.upstream.set(running).is_err() {
            return Err(ErrorData::invalid_request("already initialized", None));
        }
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.upstream()?
            .list_tools(request)
            .await
            .map_err(upstream_error)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.upstream()?
            .call_tool_once(request)
            .await
            .map_err(upstream_error)
    }
}

/// The HTTP side of the bridge: passes notifications and elicitations back to the stdio client.
#[derive(Clone)]
struct Upstream {
    downstream: Peer<RoleServer>,
    capabilities: ClientCapabilities,
    client_info: Implementation,
}

impl ClientHandler for Upstream {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(self.capabilities.clone(), self.client_info.clone())
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if let Err(e) = self.downstream.notify_tool_list_changed().await {
            tracing::debug!(error = %e, "could not forward tools/list_changed");
        }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.downstream
            .create_elicitation(request)
            .await
            .map_err(|e| ErrorData::internal_error(format!("stdio client: {e}"), None))
    }
}
