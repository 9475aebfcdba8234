//! The MCP integration kind: stored config, adding and probing servers, producing tools from a
//! server's catalog, and invoking them on the execution's downstream session.
//!
//! `kinds/mcp.rs` (and its catalog writes in `catalog/mcp.rs`) (stored config, remote and stdio
//! add, probe, discovery, calls on the execution's scope; static `headers`/`queryParams` (and an
//! endpoint's query string, moved there) are sealed as vault items `mcp:<slug>:header|query:<name>`
//! with `"••••"` left in the config, read back at connect time by `unsealed_config`, kept when a
//! replace sends the mask back; a stdio add spawns the command once to list its tools, stores
//! `{transport:"stdio", command, args?, cwd?, authenticationTemplate:[stdio_env "env" | none]}` and
//! creates the org connection `default` with the supplied env values; config replace: the whole
//! config read and checked like an add (a remote server must answer, a stdio command must be
//! found), sessions closed, every visible connection re-listed; auth methods merge/replace, the
//! kinds checked per transport; removal also removes the dynamically registered OAuth clients only
//! this integration used),
//!
//! MCP error mapping (`kinds::mcp::call_error_outcome`): 401/403 at the handshake or the call →
//! `connection_rejected`, `insufficient_scope` → `oauth_scope_insufficient`, other connect failures
//! → `connection_rejected` with the message, an unknown-tool JSON-RPC rejection →
//! `mcp_tool_unknown` (catalog marked stale), a stdio server where they are off →
//! `stdio_mcp_disabled`, anything else opaque.

use std::collections::BTreeMap;

use executor_core::auth::{
    AuthMethod, AuthMethodInput, Carrier, Rendered, assign_auth_slugs, parse_auth_method_input,
};
use executor_core::{Owner, ToolAddress, ToolError, ToolOutcome, slugify};
use executor_mcp::{
    CallFailure, McpError, RemoteTarget, RemoteTransport, SessionKey, StdioTarget, Target,
};
use executor_sandbox::HostReply;
use executor_store::{ConnectionKey, IntegrationRecord, ToolRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Produced;
use super::{CallContext, KindEnv};
use crate::error::internal_tool_error;
use crate::error::{EngineError, EngineResult};

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

    pub(crate) fn remote_transport(&self) -> RemoteTransport {
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

/// What the stored config and the API show instead of a static header or query value: the value
/// itself is sealed in the vault (item [`static_item`]). Sent back in a config replace, it keeps
/// the stored value.
pub const MASKED_VALUE: &str = "••••";

/// The vault item of a remote server's static header (`carrier` `header`) or query parameter
/// (`query`).
pub(crate) fn static_item(slug: &str, carrier: &str, name: &str) -> String {
    format!("mcp:{slug}:{carrier}:{name}")
}

impl McpConfig {
    /// Moves the endpoint's query string into `query_params` (explicit parameters win), so an
    /// `?api_key=…` is sealed like any static parameter and never shown in the endpoint.
    pub(crate) fn split_endpoint_query(&mut self) {
        let Ok(mut url) = url::Url::parse(&self.endpoint) else {
            return;
        };
        if url.query().is_none() {
            return;
        }
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        url.set_query(None);
        for (name, value) in pairs {
            self.query_params.entry(name).or_insert(value);
        }
        self.endpoint = url.to_string();
    }

    /// Replaces masked values with those of `previous` (the stored config, unsealed): a config
    /// read back from the API and sent again keeps its secrets. A mask with nothing behind it
    /// is refused.
    pub(crate) fn keep_masked(
        &mut self,
        headers: &BTreeMap<String, String>,
        query: &BTreeMap<String, String>,
    ) -> EngineResult<()> {
        for (field, map, previous) in [
            ("headers", &mut self.headers, headers),
            ("queryParams", &mut self.query_params, query),
        ] {
            for (name, value) in map.iter_mut() {
                if value == MASKED_VALUE {
                    *value = previous.get(name).cloned().ok_or_else(|| {
                        invalid(format!(
                            "{field}.{name} is {MASKED_VALUE:?}, which keeps a stored value, but none is stored for it; send the value."
                        ))
                    })?;
                }
            }
        }
        Ok(())
    }

    /// The config as shown: every static header and query value masked (also those of rows
    /// written before they were sealed).
    pub(crate) fn masked(mut self) -> Self {
        self.split_endpoint_query();
        for value in self
            .headers
            .values_mut()
            .chain(self.query_params.values_mut())
        {
            *value = MASKED_VALUE.to_owned();
        }
        self
    }
}

/// The stored config of an MCP integration with its static values read back from the vault.
pub(crate) async fn unsealed_config(
    env: &KindEnv<'_>,
    integration: &IntegrationRecord,
) -> EngineResult<McpConfig> {
    let mut config = McpConfig::from_value(&integration.config).ok_or_else(|| {
        EngineError::Internal(format!(
            "integration {} has no valid MCP config",
            integration.slug
        ))
    })?;
    for (carrier, map) in [
        ("header", &mut config.headers),
        ("query", &mut config.query_params),
    ] {
        for (name, value) in map.iter_mut() {
            // Anything else is a plaintext value of a row written before they were sealed.
            if value == MASKED_VALUE {
                let item = static_item(&integration.slug, carrier, name);
                *value = env
                    .store
                    .get_secret(env.caller.scope(), Owner::Org, &item)
                    .await?
                    .ok_or_else(|| {
                        EngineError::Internal(format!("the sealed value {item:?} is missing"))
                    })?;
            }
        }
    }
    Ok(config)
}

/// Deletes the sealed static values of `config` (a stored, masked config) whose names `keep`
/// does not have.
pub(crate) async fn delete_static_values(
    env: &KindEnv<'_>,
    slug: &str,
    config: &McpConfig,
    keep: Option<&McpConfig>,
) -> EngineResult<()> {
    for (carrier, map, kept) in [
        ("header", &config.headers, keep.map(|k| &k.headers)),
        ("query", &config.query_params, keep.map(|k| &k.query_params)),
    ] {
        for (name, value) in map {
            if value == MASKED_VALUE && !kept.is_some_and(|k| k.contains_key(name)) {
                env.store
                    .delete_secret(
                        env.caller.scope(),
                        Owner::Org,
                        &static_item(slug, carrier, name),
                    )
                    .await?;
            }
        }
    }
    Ok(())
}

/// Seals every static header and query value of `config` in the vault and leaves
/// [`MASKED_VALUE`] in its place.
pub(crate) async fn seal_static_values(
    env: &KindEnv<'_>,
    slug: &str,
    config: &mut McpConfig,
) -> EngineResult<()> {
    for (carrier, map) in [
        ("header", &mut config.headers),
        ("query", &mut config.query_params),
    ] {
        for (name, value) in map.iter_mut() {
            env.store
                .put_secret(
                    env.caller.scope(),
                    Owner::Org,
                    &static_item(slug, carrier, name),
                    value,
                )
                .await?;
            *value = MASKED_VALUE.to_owned();
        }
    }
    Ok(())
}

/// Deletes the sealed static values of a removed MCP integration.
pub(crate) async fn forget_static_values(
    env: &KindEnv<'_>,
    integration: &IntegrationRecord,
) -> EngineResult<()> {
    match McpConfig::from_value(&integration.config) {
        Some(config) => delete_static_values(env, &integration.slug, &config, None).await,
        None => Ok(()),
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
    /// Declared methods as read from the request (slugs are backfilled here).
    pub authentication_template: Option<Vec<AuthMethodInput>>,
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

pub(crate) fn default_slug(name: &str, endpoint: &str) -> String {
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

pub(crate) fn url_host(endpoint: &str) -> Option<String> {
    let rest = endpoint.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some(host.split(':').next().unwrap_or(host).to_owned())
}

/// The slug of a stdio server: the slugified name, else the command's basename, else `mcp`.
pub(crate) fn default_stdio_slug(name: &str, command: &str) -> String {
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
pub(crate) fn valid_env_name(name: &str) -> bool {
    !name.is_empty() && !name.contains(['=', '\0']) && name.trim() == name
}

pub(crate) fn stdio_error(message: String) -> EngineError {
    EngineError::McpConnection {
        transport: "stdio".to_owned(),
        message,
        http_status: None,
        insufficient_scope: false,
    }
}

/// The API error of a failed dial or discovery against a server reached over `transport`.
pub(crate) fn connect_error(e: McpError, transport: &str) -> EngineError {
    match e {
        McpError::Connect {
            transport,
            message,
            http_status,
        } => EngineError::McpConnection {
            transport,
            message,
            http_status,
            insufficient_scope: false,
        },
        // At any stage: the credentials are fine but lack a scope, which is the connection's
        // problem rather than the tool list's.
        McpError::InsufficientScope { message, .. } => EngineError::McpConnection {
            transport: transport.to_owned(),
            message,
            http_status: Some(403),
            insufficient_scope: true,
        },
        McpError::ListTools {
            message,
            http_status,
        } => EngineError::McpToolDiscovery {
            stage: "list_tools",
            message,
            http_status,
        },
        McpError::StdioDisabled => EngineError::StdioMcpDisabled {
            message: stdio_disabled_message(),
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
            transport: transport.to_owned(),
            http_status: other.http_status(),
            message: other.to_string(),
            insufficient_scope: false,
        },
    }
}

/// Why a stdio MCP server is refused where they are off.
pub(crate) fn stdio_disabled_message() -> String {
    "stdio MCP servers run a command on the executor's host and are disabled on this server; its operator can enable them with --allow-stdio-mcp (EXECUTOR_ALLOW_STDIO_MCP=1).".to_owned()
}

/// 401/403 at the door: the server is there, it wants credentials. A 403 `insufficient_scope`
/// is not one: credentials were sent (static headers) and were accepted, but lack a scope,
/// which the caller must hear about.
pub(crate) fn is_auth_wall(e: &McpError) -> bool {
    e.is_auth_rejection() && !matches!(e, McpError::InsufficientScope { .. })
}

pub(crate) fn validate_endpoint(endpoint: &str) -> EngineResult<()> {
    let ok = (endpoint.starts_with("http://") || endpoint.starts_with("https://"))
        && url_host(endpoint).is_some_and(|h| !h.is_empty());
    if ok {
        Ok(())
    } else {
        Err(EngineError::McpConnection {
            transport: "remote".to_owned(),
            message: format!("{endpoint:?} is not an http(s) URL of an MCP server."),
            http_status: None,
            insufficient_scope: false,
        })
    }
}

// ---- replacing a server's config or auth methods, removing it (spec §3.9) -----------------

pub(crate) fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::InvalidInput {
        message: message.into(),
    }
}

pub(crate) fn kind_name(method: &AuthMethod) -> &'static str {
    match method {
        AuthMethod::None { .. } => "none",
        AuthMethod::Apikey { .. } => "apikey",
        AuthMethod::Oauth2 { .. } => "oauth2",
        AuthMethod::StdioEnv { .. } => "stdio_env",
    }
}

/// The auth methods a server of this transport can use: `none`, `apikey` (header and query
/// placements) and `oauth2` for a remote server; `stdio_env` and `none` for a stdio one.
pub(crate) fn check_methods(stdio: bool, methods: &[AuthMethod]) -> EngineResult<()> {
    for method in methods {
        match (stdio, method) {
            (_, AuthMethod::None { .. }) | (false, AuthMethod::Oauth2 { .. }) => {}
            (false, AuthMethod::Apikey { placements, .. }) => {
                if placements.iter().any(|p| p.carrier == Carrier::Env) {
                    return Err(invalid(format!(
                        "Auth method {:?}: a remote MCP server takes header or query placements, not env.",
                        method.slug()
                    )));
                }
            }
            (true, AuthMethod::StdioEnv { vars, .. }) => {
                if let Some(bad) = vars.iter().find(|v| !valid_env_name(v)) {
                    return Err(invalid(format!(
                        "Auth method {:?}: {bad:?} is not a valid environment variable name.",
                        method.slug()
                    )));
                }
            }
            (true, other) => {
                return Err(invalid(format!(
                    "Auth method {:?}: a stdio MCP server takes `stdio_env` or `none` auth methods, not `{}`.",
                    other.slug(),
                    kind_name(other)
                )));
            }
            (false, other) => {
                return Err(invalid(format!(
                    "Auth method {:?}: `stdio_env` auth methods are for stdio MCP servers; a remote one takes `none`, `apikey` or `oauth2`.",
                    other.slug()
                )));
            }
        }
    }
    Ok(())
}

impl McpConfig {
    /// Reads a whole config as `POST /api/mcp/servers/:slug/config` receives it and puts it in
    /// stored form (spec §3.9 "Stored config"): auth methods read like an add's (the input
    /// dialect or the stored form, slugs backfilled, `[none]` when there are none), defaults
    /// filled in, fields of the other transport dropped. `Err` says what is wrong.
    pub(crate) fn from_input(value: &Value) -> EngineResult<Self> {
        let Value::Object(fields) = value else {
            return Err(invalid("config must be a JSON object."));
        };
        let inputs = match fields.get("authenticationTemplate") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    parse_auth_method_input(v)
                        .map_err(|e| invalid(format!("config.authenticationTemplate[{i}]: {e}")))
                })
                .collect::<EngineResult<Vec<AuthMethodInput>>>()?,
            Some(_) => {
                return Err(invalid(
                    "config.authenticationTemplate must be an array of auth methods.",
                ));
            }
        };
        let mut rest = fields.clone();
        rest.remove("authenticationTemplate");
        let mut config: McpConfig = serde_json::from_value(Value::Object(rest))
            .map_err(|e| invalid(format!("Invalid MCP config: {e}.")))?;
        config.authentication_template = assign_auth_slugs(inputs);
        if config.authentication_template.is_empty() {
            config.authentication_template = vec![AuthMethod::none()];
        }
        match config.transport.as_str() {
            "remote" => {
                config.endpoint = config.endpoint.trim().to_owned();
                if config.endpoint.is_empty() {
                    return Err(invalid("A remote MCP server needs an endpoint."));
                }
                validate_endpoint(&config.endpoint)?;
                let transport = match config.remote_transport.as_deref() {
                    None => RemoteTransport::Auto,
                    Some(raw) => raw.parse().map_err(|_| {
                        invalid(format!(
                            "config.remoteTransport must be \"streamable-http\", \"sse\" or \"auto\", got {raw:?}."
                        ))
                    })?,
                };
                config.remote_transport = Some(transport.as_str().to_owned());
                config.command = None;
                config.args.clear();
                config.cwd = None;
                config.env.clear();
            }
            "stdio" => {
                let command = config.command.as_deref().map(str::trim).unwrap_or("");
                if command.is_empty() {
                    return Err(invalid("A stdio MCP server needs a command."));
                }
                config.command = Some(command.to_owned());
                config.cwd = config.cwd.take().filter(|c| !c.trim().is_empty());
                if let Some(bad) = config.env.keys().find(|k| !valid_env_name(k)) {
                    return Err(invalid(format!(
                        "config.env: {bad:?} is not a valid environment variable name."
                    )));
                }
                config.endpoint.clear();
                config.remote_transport = None;
                config.headers.clear();
                config.query_params.clear();
            }
            other => {
                return Err(invalid(format!(
                    "config.transport must be \"remote\" or \"stdio\", got {other:?}."
                )));
            }
        }
        check_methods(config.is_stdio(), &config.authentication_template)?;
        Ok(config)
    }
}

/// Whether a stdio server's command can be found (a path, relative to `cwd` when given, or a
/// name on the `PATH` the child would search). The server is not started: its secret
/// environment lives on connections, and each connection's re-listing starts it with that.
pub(crate) fn check_command(config: &McpConfig) -> EngineResult<()> {
    let command = config.command.as_deref().unwrap_or("");
    let found = if command.contains(['/', '\\']) {
        let path = std::path::Path::new(command);
        match (&config.cwd, path.is_relative()) {
            (Some(cwd), true) => std::path::Path::new(cwd).join(path).is_file(),
            _ => path.is_file(),
        }
    } else {
        let search = config
            .env
            .get("PATH")
            .map(std::ffi::OsString::from)
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        std::env::split_paths(&search).any(|dir| dir.join(command).is_file())
    };
    if found {
        Ok(())
    } else {
        Err(stdio_error(format!(
            "The command {command:?} of the stdio MCP server was not found."
        )))
    }
}

/// A stored config as the API shows it (static values masked).
pub(crate) fn masked_config(config: &Value) -> Value {
    McpConfig::from_value(config)
        .and_then(|c| serde_json::to_value(c.masked()).ok())
        .unwrap_or_else(|| config.clone())
}

/// Where and how a connection's tools are reached: the request target with credentials rendered
/// in, and the pool identity of its downstream session.
pub(crate) struct ResolvedTarget {
    pub(crate) target: Target,
    pub(crate) key: SessionKey,
}

/// Builds the target for a connection. `Err(ToolError)` when its credentials are incomplete.
pub(crate) async fn resolve_target(
    env: &KindEnv<'_>,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> EngineResult<Result<ResolvedTarget, Box<ToolError>>> {
    let config = unsealed_config(env, integration).await?;
    let credentials = match env
        .credentials
        .resolve(env.caller, &config.authentication_template, key)
        .await?
    {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let target = config.target_with(&credentials.rendered);
    let session = SessionKey::for_target(
        &target,
        &credentials.connection.template,
        &credentials.values,
        session_label(env.caller.scope(), key),
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
    env: &KindEnv<'_>,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> Result<Produced, String> {
    let resolved = match resolve_target(env, integration, key).await {
        Ok(Ok(r)) => r,
        Ok(Err(tool_error)) => return Err(tool_error.message),
        Err(e) => return Err(e.to_string()),
    };
    let discovery = env
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

/// Calls one MCP tool on the execution's session for its connection.
pub(crate) async fn call(
    env: &KindEnv<'_>,
    ctx: &dyn CallContext,
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
    let elicitor = ctx.elicitor(address, &args);
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
    let outcome = match result {
        Ok(result) => executor_mcp::call_result_to_outcome(&tool.name, result),
        Err(McpError::Timeout { stage: "call" }) => ToolOutcome::Err(super::upstream_timeout(
            &address.integration,
            env.call_timeout,
        )),
        Err(e) => match call_error_outcome(&tool.name, &address.integration, &e) {
            Some(outcome) => outcome,
            None => return HostReply::Reject(internal_tool_error(&e.to_string())),
        },
    };
    // The server no longer knows the tool (as a result or as an error): the catalog is stale.
    if let ToolOutcome::Err(e) = &outcome
        && e.code == "mcp_tool_unknown"
    {
        let key = ConnectionKey::new(
            address.owner,
            address.integration.clone(),
            address.connection.clone(),
        );
        if let Err(e) = env.store.mark_stale(env.caller.scope(), &key).await {
            tracing::warn!(error = %e, "could not mark a catalog stale");
        }
    }
    HostReply::Resolve(outcome.to_json())
}

/// The failures of a downstream call the agent sees as values (spec §6 "Error mapping"):
/// HTTP 401/403 at the handshake or the call → `connection_rejected`, a 403 whose challenge
/// says `insufficient_scope` → `oauth_scope_insufficient`, any other failure to connect →
/// `connection_rejected` with its message, an unknown-tool rejection → `mcp_tool_unknown`, any
/// other JSON-RPC error → `mcp_rpc_error`, a connection lost mid-call →
/// `upstream_connection_reset`, an answer that is not MCP → `upstream_protocol_error`.
/// `None`: an infrastructure defect (opaque in the sandbox).
pub(crate) fn call_error_outcome(
    tool_id: &str,
    integration: &str,
    e: &McpError,
) -> Option<ToolOutcome> {
    match e {
        McpError::InsufficientScope { message, .. } => Some(ToolOutcome::Err(
            super::scope_insufficient(integration, message),
        )),
        McpError::AddressNotAllowed(refused) => Some(ToolOutcome::Err(refused.tool_error())),
        McpError::StdioDisabled => Some(ToolOutcome::Err(
            ToolError::new("stdio_mcp_disabled", stdio_disabled_message())
                .with_retryable(false)
                .with_status(403),
        )),
        McpError::Connect {
            http_status: Some(status @ (401 | 403)),
            message,
            ..
        }
        | McpError::Call {
            http_status: Some(status @ (401 | 403)),
            message,
            ..
        } => Some(ToolOutcome::Err(super::rejected(
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
        McpError::SessionLost { label, message } => Some(ToolOutcome::Err(
            ToolError::new(
                "upstream_session_lost",
                format!(
                    "This execution was resumed after executor restarted, and the MCP session it \
                     had with {integration} is gone ({message}). State that earlier calls set in \
                     that session (a selection, a login) is lost, so the call was not sent to a \
                     new session. Run the code again from the start."
                ),
            )
            .with_retryable(false)
            .with_details(serde_json::json!({"integration": integration, "connection": label})),
        )),
        // A JSON-RPC error is the server's answer: the agent's to handle.
        McpError::Rpc { .. } => Some(executor_mcp::error_to_outcome(tool_id, e)),
        // A broken answer is the upstream's fault, not ours (issue #39): a value with a code.
        // The message names no endpoint (its query may hold a credential).
        McpError::Call {
            http_status,
            failure,
            ..
        } => {
            let (code, message, retryable) = match failure {
                CallFailure::ConnectionLost => (
                    "upstream_connection_reset",
                    format!("The MCP server of {integration} dropped the connection before it answered the call."),
                    true,
                ),
                CallFailure::Protocol => (
                    "upstream_protocol_error",
                    match http_status {
                        Some(status) => format!("The MCP server of {integration} answered the call with HTTP {status} and no MCP answer."),
                        None => format!("The MCP server of {integration} answered the call with something that is not an MCP answer (a truncated or malformed body)."),
                    },
                    false,
                ),
            };
            Some(ToolOutcome::Err(
                ToolError::new(code, message)
                    .with_retryable(retryable)
                    .with_details(serde_json::json!({
                        "integration": integration,
                        "httpStatus": http_status,
                    })),
            ))
        }
        _ => None,
    }
}

/// Pool label of a connection's downstream sessions for one caller's scope:
/// `<tenant>/<subject>/<integration>/<owner>/<name>`, tenant and subject percent-encoded. The
/// scope is part of it so that no session (and no state a stateful server keeps in it) passes
/// from one tenant or user to another, even for an org connection with the same credentials.
pub(crate) fn session_label(scope: &executor_store::Scope, key: &ConnectionKey) -> String {
    use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
    let subject = scope.subject.as_deref().unwrap_or("");
    format!(
        "{}/{}/{}/{}/{}",
        utf8_percent_encode(&scope.tenant, NON_ALPHANUMERIC),
        utf8_percent_encode(subject, NON_ALPHANUMERIC),
        key.integration,
        key.owner,
        key.name
    )
}

/// The scope and connection of a [`session_label`].
pub(crate) fn parse_session_label(label: &str) -> Option<(executor_store::Scope, ConnectionKey)> {
    let mut parts = label.splitn(5, '/');
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8()
            .ok()
            .map(|s| s.into_owned())
    };
    let tenant = decode(parts.next()?)?;
    let subject = decode(parts.next()?)?;
    let integration = parts.next()?.to_owned();
    let owner = parts.next()?.parse().ok()?;
    let name = parts.next()?.to_owned();
    let scope = executor_store::Scope::new(tenant, (!subject.is_empty()).then_some(subject));
    Some((
        scope,
        ConnectionKey {
            owner,
            integration,
            name,
        },
    ))
}

/// A session record saved by a build whose labels had no scope (`<integration>/<owner>/<name>`,
/// before issue #19), relabelled for `scope`, the execution's own: so a pause made before an
/// upgrade still reattaches to its sessions. Current labels are kept as they are.
pub(crate) fn current_record(
    mut record: executor_mcp::SessionRecord,
    scope: &executor_store::Scope,
) -> executor_mcp::SessionRecord {
    if parse_session_label(&record.label).is_none() {
        let mut parts = record.label.splitn(3, '/');
        if let (Some(integration), Some(Ok(owner)), Some(name)) = (
            parts.next(),
            parts.next().map(str::parse::<executor_core::Owner>),
            parts.next(),
        ) {
            let key = ConnectionKey::new(owner, integration.to_owned(), name.to_owned());
            record.label = session_label(scope, &key);
        }
    }
    record
}

#[cfg(test)]
mod label_tests {
    use super::*;

    #[test]
    fn labels_carry_the_scope_and_old_ones_are_relabelled() {
        let scope = executor_store::Scope::new("a/b c", Some("ü".into()));
        let key = ConnectionKey::new(executor_core::Owner::Org, "fx", "main");
        let label = session_label(&scope, &key);
        assert_eq!(
            parse_session_label(&label),
            Some((scope.clone(), key.clone()))
        );
        let old = executor_mcp::SessionRecord {
            label: "fx/org/main".into(),
            transport: "streamable-http".into(),
            session_id: Some("s".into()),
            protocol_version: None,
            server: None,
        };
        assert_eq!(current_record(old.clone(), &scope).label, label);
        let current = executor_mcp::SessionRecord {
            label: label.clone(),
            ..old
        };
        assert_eq!(current_record(current, &scope).label, label);
    }
}
