//! The MCP integration kind: stored config, adding and probing servers, producing tools from a
//! server's catalog, and invoking them on the execution's downstream session.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use executor_core::auth::{AuthMethod, Carrier, Placement, Rendered};
use executor_core::{Owner, ToolAddress, ToolError, ToolOutcome, slugify};
use executor_mcp::{McpError, RemoteTarget, RemoteTransport, SessionKey, StdioTarget, Target};
use executor_sandbox::HostReply;
use executor_store::{ConnectionKey, IntegrationRecord, ToolRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{ConnectionInput, CredentialOrigin, session_label};
use crate::dispatch::{ExecutionCtx, internal_tool_error};
use crate::error::{EngineError, EngineResult};
use crate::kinds::Produced;
use crate::{Engine, Inner};

pub(crate) const PLUGIN_ID: &str = "mcp";

/// Stored (plugin-private) config of an MCP integration (spec §3.9): remote `{transport:"remote",
/// endpoint, remoteTransport, queryParams?, headers?, authenticationTemplate}` or stdio
/// `{transport:"stdio", command, args?, cwd?, env? (legacy static env), authenticationTemplate}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct McpConfig {
    pub(crate) transport: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub(crate) endpoint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) remote_transport: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) query_params: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) args: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cwd: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) env: BTreeMap<String, String>,
    #[serde(default)]
    pub(crate) authentication_template: Vec<AuthMethod>,
}

impl McpConfig {
    pub(crate) fn from_value(value: &Value) -> Option<Self> {
        serde_json::from_value(value.clone()).ok()
    }

    pub(crate) fn is_stdio(&self) -> bool {
        self.transport == "stdio"
    }

    fn remote_transport(&self) -> RemoteTransport {
        self.remote_transport
            .as_deref()
            .and_then(|t| t.parse().ok())
            .unwrap_or(RemoteTransport::Auto)
    }

    /// The server as dialled with `rendered` credentials: remote placements overwrite same-named
    /// static headers / query parameters; a stdio server's environment is the static `env` plus
    /// the connection's `stdio_env` values (on top of the executor's own environment).
    pub(crate) fn target_with(&self, rendered: &Rendered) -> Target {
        if self.is_stdio() {
            let mut env = self.env.clone();
            env.extend(rendered.env.clone());
            return Target::Stdio(StdioTarget {
                command: self.command.clone().unwrap_or_default(),
                args: self.args.clone(),
                cwd: self.cwd.clone(),
                env,
                // The vault's master key stays with the executor.
                env_remove: vec![executor_store::SECRET_KEY_ENV.to_owned()],
            });
        }
        let mut headers = self.headers.clone();
        headers.extend(rendered.headers.clone());
        let mut query = self.query_params.clone();
        query.extend(rendered.query.clone());
        Target::Remote(RemoteTarget {
            endpoint: self.endpoint.clone(),
            transport: self.remote_transport(),
            headers,
            query,
        })
    }
}

/// The `auth` shorthand of `POST /api/mcp/servers`.
#[derive(Debug, Clone)]
pub enum McpAuthShorthand {
    None,
    Header {
        header_name: String,
        prefix: Option<String>,
    },
    Oauth2,
}

/// Input of adding a stdio MCP server (`transport:"stdio"` of `POST /api/mcp/servers`).
#[derive(Debug, Clone, Default)]
pub struct AddStdioMcpServer {
    pub name: String,
    pub description: Option<String>,
    pub command: String,
    pub args: Vec<String>,
    /// Secret environment variables the server needs (declared; values come with a connection).
    pub env_vars: Vec<String>,
    /// Values supplied at add time: they go to the auto-created `default` connection.
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub slug: Option<String>,
}

/// Input of adding a remote MCP server.
#[derive(Debug, Clone)]
pub struct AddMcpServer {
    pub name: String,
    pub description: Option<String>,
    pub endpoint: String,
    pub remote_transport: RemoteTransport,
    pub slug: Option<String>,
    pub query_params: BTreeMap<String, String>,
    pub headers: BTreeMap<String, String>,
    pub authentication_template: Option<Vec<AuthMethod>>,
    pub auth: Option<McpAuthShorthand>,
}

#[derive(Debug, Clone)]
pub struct McpServerView {
    pub slug: String,
    pub description: String,
    pub kind: String,
    pub can_remove: bool,
    pub can_refresh: bool,
    pub config: Value,
}

#[derive(Debug, Clone)]
pub struct ProbeView {
    pub connected: bool,
    pub requires_authentication: bool,
    pub requires_oauth: bool,
    pub supports_dynamic_registration: bool,
    pub name: String,
    pub slug: String,
    pub tool_count: Option<usize>,
    pub server_name: Option<String>,
    pub instructions: Option<String>,
}

fn default_slug(name: &str, endpoint: &str) -> String {
    let from_name = slugify(name);
    if !from_name.is_empty() {
        return from_name;
    }
    let host = url_host(endpoint).map(|h| slugify(&h)).unwrap_or_default();
    if host.is_empty() {
        "mcp".to_owned()
    } else {
        host
    }
}

fn url_host(endpoint: &str) -> Option<String> {
    let rest = endpoint.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some(host.split(':').next().unwrap_or(host).to_owned())
}

/// The slug of a stdio server: the slugified name, else the command's basename, else `mcp`.
fn default_stdio_slug(name: &str, command: &str) -> String {
    let from_name = slugify(name);
    if !from_name.is_empty() {
        return from_name;
    }
    let base = command
        .trim()
        .rsplit(['/', '\\'])
        .next()
        .map(slugify)
        .unwrap_or_default();
    if base.is_empty() {
        "mcp".to_owned()
    } else {
        base
    }
}

/// An environment variable name a process can be given.
fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0']) && name.trim() == name
}

fn stdio_error(message: String) -> EngineError {
    EngineError::McpConnection {
        transport: "stdio".to_owned(),
        message,
        http_status: None,
    }
}

fn connect_error(e: McpError) -> EngineError {
    match e {
        McpError::Connect {
            transport,
            message,
            http_status,
        } => EngineError::McpConnection {
            transport,
            message,
            http_status,
        },
        McpError::ListTools {
            message,
            http_status,
        } => EngineError::McpToolDiscovery {
            stage: "list_tools",
            message,
            http_status,
        },
        McpError::InsufficientScope {
            stage: "list_tools",
            message,
            ..
        } => EngineError::McpToolDiscovery {
            stage: "list_tools",
            message,
            http_status: Some(403),
        },
        McpError::Timeout { stage } => EngineError::McpToolDiscovery {
            stage: if stage == "list_tools" {
                "list_tools"
            } else {
                "connect"
            },
            message: format!("The MCP server did not answer in time ({stage})."),
            http_status: None,
        },
        other => EngineError::McpConnection {
            transport: "remote".to_owned(),
            http_status: other.http_status(),
            message: other.to_string(),
        },
    }
}

/// 401/403 at the door: the server is there, it wants credentials.
fn is_auth_wall(e: &McpError) -> bool {
    e.is_auth_rejection()
}

fn validate_endpoint(endpoint: &str) -> EngineResult<()> {
    let ok = (endpoint.starts_with("http://") || endpoint.starts_with("https://"))
        && url_host(endpoint).is_some_and(|h| !h.is_empty());
    if ok {
        Ok(())
    } else {
        Err(EngineError::McpConnection {
            transport: "remote".to_owned(),
            message: format!("{endpoint:?} is not an http(s) URL of an MCP server."),
            http_status: None,
        })
    }
}

impl Engine {
    pub async fn probe_mcp(
        &self,
        endpoint: &str,
        headers: BTreeMap<String, String>,
        query: BTreeMap<String, String>,
    ) -> EngineResult<ProbeView> {
        validate_endpoint(endpoint)?;
        let target = RemoteTarget {
            endpoint: endpoint.to_owned(),
            transport: RemoteTransport::Auto,
            headers,
            query,
        };
        let slug = default_slug("", endpoint);
        match self.inner.mcp.discover(&target).await {
            Ok(found) => Ok(ProbeView {
                connected: true,
                requires_authentication: false,
                requires_oauth: false,
                supports_dynamic_registration: false,
                name: found.server_name.clone().unwrap_or_else(|| slug.clone()),
                slug: found
                    .server_name
                    .as_deref()
                    .map(slugify)
                    .filter(|s| !s.is_empty())
                    .unwrap_or(slug),
                tool_count: Some(found.tools.len()),
                server_name: found.server_name,
                instructions: found.instructions,
            }),
            Err(e) if is_auth_wall(&e) => {
                // An OAuth-protected server publishes where to authorise (RFC 9728 / 8414).
                let oauth = self.probe_oauth(endpoint).await.ok();
                Ok(ProbeView {
                    connected: false,
                    requires_authentication: true,
                    requires_oauth: oauth.is_some(),
                    supports_dynamic_registration: oauth
                        .as_ref()
                        .is_some_and(|o| o.registration_endpoint.is_some()),
                    name: slug.clone(),
                    slug,
                    tool_count: None,
                    server_name: None,
                    instructions: None,
                })
            }
            Err(e) => Err(connect_error(e)),
        }
    }

    /// Adds a remote MCP server after checking that it answers as one. Nothing is stored when it
    /// does not (an auth wall counts as answering: credentials come with a connection).
    pub async fn add_mcp_server(&self, input: AddMcpServer) -> EngineResult<String> {
        validate_endpoint(&input.endpoint)?;
        let slug = match input
            .slug
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(s) => s.to_owned(),
            None => default_slug(&input.name, &input.endpoint),
        };
        if slug == crate::BUILTIN_INTEGRATION
            || self
                .inner
                .store
                .get_integration(&self.inner.scope, &slug)
                .await?
                .is_some()
        {
            return Err(EngineError::IntegrationAlreadyExists { slug });
        }
        let authentication_template = match (input.authentication_template, input.auth) {
            (Some(methods), _) if !methods.is_empty() => methods,
            (
                _,
                Some(McpAuthShorthand::Header {
                    header_name,
                    prefix,
                }),
            ) => vec![AuthMethod::Apikey {
                slug: "header".to_owned(),
                label: None,
                placements: vec![Placement {
                    carrier: Carrier::Header,
                    name: header_name,
                    prefix,
                    variable: None,
                    literal: None,
                }],
            }],
            (_, Some(McpAuthShorthand::Oauth2)) => vec![AuthMethod::Oauth2 {
                slug: "oauth2".to_owned(),
            }],
            _ => vec![AuthMethod::none()],
        };
        let config = McpConfig {
            transport: "remote".to_owned(),
            endpoint: input.endpoint.clone(),
            remote_transport: Some(input.remote_transport.as_str().to_owned()),
            query_params: input.query_params,
            headers: input.headers,
            command: None,
            args: Vec::new(),
            cwd: None,
            env: BTreeMap::new(),
            authentication_template,
        };
        match self
            .inner
            .mcp
            .discover(&config.target_with(&Rendered::default()))
            .await
        {
            Ok(_) => {}
            Err(e) if is_auth_wall(&e) => {}
            Err(e) => return Err(connect_error(e)),
        }
        let name = if input.name.trim().is_empty() {
            slug.clone()
        } else {
            input.name.trim().to_owned()
        };
        let description = input
            .description
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| name.clone());
        self.insert_new_integration(&slug, PLUGIN_ID, name, Some(description), &config)
            .await?;
        Ok(slug)
    }

    /// Adds a stdio MCP server (spec §3.9) after spawning it once and listing its tools with the
    /// supplied env values; nothing is stored when that fails. Declared secrets (`envVars` and the
    /// keys of `env`) become the `stdio_env` method `env`; the org connection `default` is created
    /// when values were supplied (template `env`) or nothing is declared (template `none`).
    pub async fn add_stdio_mcp_server(&self, input: AddStdioMcpServer) -> EngineResult<String> {
        let command = input.command.trim().to_owned();
        if command.is_empty() {
            return Err(stdio_error(
                "A stdio MCP server needs a command.".to_owned(),
            ));
        }
        let mut vars: Vec<String> = Vec::new();
        for var in input.env_vars.iter().chain(input.env.keys()) {
            if !valid_env_name(var) {
                return Err(stdio_error(format!(
                    "{var:?} is not a valid environment variable name."
                )));
            }
            if !vars.contains(var) {
                vars.push(var.clone());
            }
        }
        let slug = match input
            .slug
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            Some(s) => s.to_owned(),
            None => default_stdio_slug(&input.name, &command),
        };
        if slug == crate::BUILTIN_INTEGRATION
            || self
                .inner
                .store
                .get_integration(&self.inner.scope, &slug)
                .await?
                .is_some()
        {
            return Err(EngineError::IntegrationAlreadyExists { slug });
        }
        let authentication_template = if vars.is_empty() {
            vec![AuthMethod::none()]
        } else {
            vec![AuthMethod::StdioEnv {
                slug: "env".to_owned(),
                vars,
            }]
        };
        let config = McpConfig {
            transport: "stdio".to_owned(),
            endpoint: String::new(),
            remote_transport: None,
            query_params: BTreeMap::new(),
            headers: BTreeMap::new(),
            command: Some(command),
            args: input.args,
            cwd: input.cwd.filter(|c| !c.trim().is_empty()),
            env: BTreeMap::new(),
            authentication_template,
        };
        let probe = Rendered {
            env: input.env.clone(),
            ..Rendered::default()
        };
        let Target::Stdio(target) = config.target_with(&probe) else {
            unreachable!("a stdio config yields a stdio target")
        };
        match self.inner.mcp.discover(&target).await {
            Ok(_) => {}
            Err(McpError::Timeout { .. }) => {
                return Err(stdio_error(format!(
                    "The stdio MCP server `{}` did not answer in time (tools/list within {} s).",
                    target.command_line(),
                    self.inner.mcp.config().discovery_timeout.as_secs()
                )));
            }
            Err(e) => return Err(connect_error(e)),
        }
        let name = if input.name.trim().is_empty() {
            slug.clone()
        } else {
            input.name.trim().to_owned()
        };
        let description = input
            .description
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| name.clone());
        self.insert_new_integration(&slug, PLUGIN_ID, name, Some(description), &config)
            .await?;
        let template = match (input.env.is_empty(), config.authentication_template.first()) {
            (false, _) => Some("env"),
            (true, Some(AuthMethod::None { .. })) => Some("none"),
            _ => None,
        };
        if let Some(template) = template {
            let created = self
                .create_connection(ConnectionInput {
                    owner: Owner::Org,
                    name: "default".to_owned(),
                    integration: slug.clone(),
                    template: template.to_owned(),
                    identity_label: None,
                    description: None,
                    origin: CredentialOrigin::Values(input.env),
                })
                .await;
            if let Err(e) = created {
                // Leave nothing half-made behind.
                if let Err(cleanup) = self.remove_integration(&slug).await {
                    tracing::warn!(error = %cleanup, %slug, "could not remove a half-added stdio server");
                }
                return Err(e);
            }
        }
        Ok(slug)
    }

    /// `None` when the slug is unknown or not an MCP integration.
    pub async fn get_mcp_server(&self, slug: &str) -> EngineResult<Option<McpServerView>> {
        let Some(record) = self
            .inner
            .store
            .get_integration(&self.inner.scope, slug)
            .await?
        else {
            return Ok(None);
        };
        if record.plugin_id != PLUGIN_ID {
            return Ok(None);
        }
        let view = crate::IntegrationView::from_record(&record);
        Ok(Some(McpServerView {
            slug: record.slug,
            description: view.description,
            kind: record.plugin_id,
            can_remove: record.can_remove,
            can_refresh: record.can_refresh,
            config: record.config,
        }))
    }
}

/// Where and how a connection's tools are reached: the request target with credentials rendered
/// in, and the pool identity of its downstream session.
pub(crate) struct ResolvedTarget {
    pub(crate) target: Target,
    pub(crate) key: SessionKey,
}

/// Builds the target for a connection. `Err(ToolError)` when its credentials are incomplete.
pub(crate) async fn resolve_target(
    inner: &Inner,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> EngineResult<Result<ResolvedTarget, Box<ToolError>>> {
    let config = McpConfig::from_value(&integration.config).ok_or_else(|| {
        EngineError::Internal(format!(
            "integration {} has no valid MCP config",
            integration.slug
        ))
    })?;
    let credentials =
        match crate::credentials::resolve(inner, &config.authentication_template, key).await? {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
    let target = config.target_with(&credentials.rendered);
    let session = SessionKey::for_target(
        &target,
        &credentials.connection.template,
        &credentials.values,
        session_label(key),
    );
    Ok(Ok(ResolvedTarget {
        target,
        key: session,
    }))
}

pub(crate) fn auth_methods(config: &Value) -> Vec<AuthMethod> {
    McpConfig::from_value(config)
        .map(|c| c.authentication_template)
        .unwrap_or_default()
}

pub(crate) fn display_url(config: &Value) -> Option<String> {
    McpConfig::from_value(config)
        .filter(|c| !c.is_stdio())
        .map(|c| c.endpoint)
}

/// Lists the server's tools with the connection's credentials.
pub(crate) async fn produce_tools(
    inner: &Inner,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> Result<Produced, String> {
    let resolved = match resolve_target(inner, integration, key).await {
        Ok(Ok(r)) => r,
        Ok(Err(tool_error)) => return Err(tool_error.message),
        Err(e) => return Err(e.to_string()),
    };
    let discovery = inner
        .mcp
        .discover(&resolved.target)
        .await
        .map_err(|e| e.to_string())?;
    let tools = discovery
        .tools
        .into_iter()
        .map(|t| ToolRecord {
            integration: key.integration.clone(),
            owner: key.owner,
            connection: key.name.clone(),
            plugin_id: PLUGIN_ID.to_owned(),
            name: t.id,
            description: t.description,
            input_schema: Some(t.input_schema),
            output_schema: t.output_schema,
            annotations: Some(t.annotations),
            binding: None,
        })
        .collect();
    Ok(Produced {
        tools,
        definitions: serde_json::Map::new(),
    })
}

/// Marks a connection's catalog stale when its server says its tool list changed.
pub(crate) fn watch_list_changed(inner: &Arc<Inner>) {
    let weak: Weak<Inner> = Arc::downgrade(inner);
    inner.mcp.on_list_changed(Arc::new(move |label: &str| {
        let Some(inner) = weak.upgrade() else { return };
        let mut parts = label.splitn(3, '/');
        let (Some(integration), Some(owner), Some(name)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        let Ok(owner) = owner.parse() else { return };
        let key = ConnectionKey {
            owner,
            integration: integration.to_owned(),
            name: name.to_owned(),
        };
        let io = inner.io.clone();
        io.spawn(async move {
            if let Err(e) = inner.store.mark_stale(&inner.scope, &key).await {
                tracing::warn!(error = %e, "could not mark a catalog stale");
            }
        });
    }));
}

/// Calls one MCP tool on the execution's session for its connection.
pub(crate) async fn call(
    inner: &Arc<Inner>,
    ctx: &ExecutionCtx,
    resolved: &ResolvedTarget,
    address: &ToolAddress,
    tool: &ToolRecord,
    args: Value,
) -> HostReply {
    let Some(scope) = ctx.mcp_scope() else {
        return HostReply::Reject(internal_tool_error("execution already finished"));
    };
    let real_name = tool
        .annotations
        .as_ref()
        .and_then(|a| a.get("realName"))
        .and_then(Value::as_str)
        .unwrap_or(&tool.name)
        .to_owned();
    // The server's elicitations during this call pause the execution like an approval.
    let elicitor = crate::elicitation::for_call(ctx, address.to_string(), &args);
    let arguments = match args {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let result = scope
        .call_tool_with(
            &resolved.key,
            &resolved.target,
            &real_name,
            arguments,
            Some(elicitor),
        )
        .await;
    match result {
        Ok(result) => {
            let outcome = executor_mcp::call_result_to_outcome(&tool.name, result);
            if let ToolOutcome::Err(e) = &outcome
                && e.code == "mcp_tool_unknown"
            {
                let key = ConnectionKey::new(
                    address.owner,
                    address.integration.clone(),
                    address.connection.clone(),
                );
                if let Err(e) = inner.store.mark_stale(&inner.scope, &key).await {
                    tracing::warn!(error = %e, "could not mark a catalog stale");
                }
            }
            HostReply::Resolve(outcome.to_json())
        }
        Err(e) => match call_error_outcome(&tool.name, &address.integration, &e) {
            Some(outcome) => {
                if let ToolOutcome::Err(err) = &outcome
                    && err.code == "mcp_tool_unknown"
                {
                    let key = ConnectionKey::new(
                        address.owner,
                        address.integration.clone(),
                        address.connection.clone(),
                    );
                    if let Err(e) = inner.store.mark_stale(&inner.scope, &key).await {
                        tracing::warn!(error = %e, "could not mark a catalog stale");
                    }
                }
                HostReply::Resolve(outcome.to_json())
            }
            None => HostReply::Reject(internal_tool_error(&e.to_string())),
        },
    }
}

/// The failures of a downstream call the agent sees as values (spec §6 "Error mapping"):
/// HTTP 401/403 at the handshake or the call → `connection_rejected`, a 403 whose challenge
/// says `insufficient_scope` → `oauth_scope_insufficient`, any other failure to connect →
/// `connection_rejected` with its message, an unknown-tool rejection → `mcp_tool_unknown`.
/// `None`: an infrastructure defect (opaque in the sandbox).
fn call_error_outcome(tool_id: &str, integration: &str, e: &McpError) -> Option<ToolOutcome> {
    match e {
        McpError::InsufficientScope { message, .. } => Some(ToolOutcome::Err(
            crate::credentials::scope_insufficient(integration, message),
        )),
        McpError::Connect {
            http_status: Some(status @ (401 | 403)),
            message,
            ..
        }
        | McpError::Call {
            http_status: Some(status @ (401 | 403)),
            message,
        } => Some(ToolOutcome::Err(crate::credentials::rejected(
            integration,
            *status,
            "The MCP server",
            message,
        ))),
        McpError::Connect { message, .. } => Some(ToolOutcome::Err(
            ToolError::new("connection_rejected", message.clone())
                .with_retryable(false)
                .with_details(serde_json::json!({
                    "category": "authentication",
                    "integration": integration,
                    "upstream": message,
                    "recovery": "The MCP server could not be reached or did not answer as one. Check the connection with executor.coreTools.connections.list.",
                })),
        )),
        McpError::Rpc { .. } => {
            let outcome = executor_mcp::error_to_outcome(tool_id, e);
            matches!(&outcome, ToolOutcome::Err(err) if err.code == "mcp_tool_unknown")
                .then_some(outcome)
        }
        _ => None,
    }
}
