//! The MCP integration kind: stored config, adding and probing servers, producing tools from a
//! server's catalog, and invoking them on the execution's downstream session.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Weak};

use executor_core::auth::{
    AuthMethod, AuthMethodInput, Carrier, Placement, Rendered, assign_auth_slugs,
    merge_auth_methods, parse_auth_method_input,
};
use executor_core::{Owner, ToolAddress, ToolError, ToolOutcome, now_ms, slugify};
use executor_mcp::{McpError, RemoteTarget, RemoteTransport, SessionKey, StdioTarget, Target};
use executor_sandbox::HostReply;
use executor_store::{ConnectionKey, IntegrationRecord, ToolRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::caller::Caller;
use crate::catalog::{ConnectionInput, CredentialOrigin, session_label};
use crate::credentials::oauth::ORIGIN_DCR;
use crate::error::{EngineError, EngineResult};
use crate::executions::dispatch::{ExecutionCtx, internal_tool_error};
use crate::kinds::Produced;
use crate::kinds::openapi::random_base36;
use crate::{AuthTemplateMode, Engine, Inner};

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

/// What the stored config and the API show instead of a static header or query value: the value
/// itself is sealed in the vault (item [`static_item`]). Sent back in a config replace, it keeps
/// the stored value.
pub const MASKED_VALUE: &str = "••••";

/// The vault item of a remote server's static header (`carrier` `header`) or query parameter
/// (`query`).
fn static_item(slug: &str, carrier: &str, name: &str) -> String {
    format!("mcp:{slug}:{carrier}:{name}")
}

impl McpConfig {
    /// Moves the endpoint's query string into `query_params` (explicit parameters win), so an
    /// `?api_key=…` is sealed like any static parameter and never shown in the endpoint.
    fn split_endpoint_query(&mut self) {
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
    fn keep_masked(
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
    inner: &Inner,
    caller: &Caller,
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
                *value = inner
                    .store
                    .get_secret(caller.scope(), &item)
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
async fn delete_static_values(
    inner: &Inner,
    caller: &Caller,
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
                inner
                    .store
                    .delete_secret(caller.scope(), &static_item(slug, carrier, name))
                    .await?;
            }
        }
    }
    Ok(())
}

/// Seals every static header and query value of `config` in the vault and leaves
/// [`MASKED_VALUE`] in its place.
async fn seal_static_values(
    inner: &Inner,
    caller: &Caller,
    slug: &str,
    config: &mut McpConfig,
) -> EngineResult<()> {
    for (carrier, map) in [
        ("header", &mut config.headers),
        ("query", &mut config.query_params),
    ] {
        for (name, value) in map.iter_mut() {
            inner
                .store
                .put_secret(caller.scope(), &static_item(slug, carrier, name), value)
                .await?;
            *value = MASKED_VALUE.to_owned();
        }
    }
    Ok(())
}

/// Deletes the sealed static values of a removed MCP integration.
pub(crate) async fn forget_static_values(
    inner: &Inner,
    caller: &Caller,
    integration: &IntegrationRecord,
) -> EngineResult<()> {
    match McpConfig::from_value(&integration.config) {
        Some(config) => delete_static_values(inner, caller, &integration.slug, &config, None).await,
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
        insufficient_scope: false,
    }
}

/// The API error of a failed dial or discovery against a server reached over `transport`.
fn connect_error(e: McpError, transport: &str) -> EngineError {
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

/// 401/403 at the door: the server is there, it wants credentials. A 403 `insufficient_scope`
/// is not one: credentials were sent (static headers) and were accepted, but lack a scope,
/// which the caller must hear about.
fn is_auth_wall(e: &McpError) -> bool {
    e.is_auth_rejection() && !matches!(e, McpError::InsufficientScope { .. })
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
            insufficient_scope: false,
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
                let oauth = self
                    .probe_oauth(endpoint)
                    .await
                    .inspect_err(|e| tracing::debug!(error = %e, "no usable OAuth metadata for an MCP server behind an auth wall"))
                    .ok();
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
            Err(e) => Err(connect_error(e, RemoteTransport::Auto.as_str())),
        }
    }

    /// Adds a remote MCP server after checking that it answers as one. Nothing is stored when it
    /// does not (an auth wall counts as answering: credentials come with a connection).
    pub async fn add_mcp_server(
        &self,
        caller: &Caller,
        input: AddMcpServer,
    ) -> EngineResult<String> {
        crate::catalog::check_integration_text(
            input.slug.as_deref(),
            Some(&input.name),
            input.description.as_deref(),
        )?;
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
                .get_integration(caller.scope(), &slug)
                .await?
                .is_some()
        {
            return Err(EngineError::IntegrationAlreadyExists { slug });
        }
        let authentication_template = match (input.authentication_template, input.auth) {
            (Some(methods), _) if !methods.is_empty() => assign_auth_slugs(methods),
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
        let mut config = McpConfig {
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
        config.split_endpoint_query();
        config.keep_masked(&BTreeMap::new(), &BTreeMap::new())?;
        check_methods(false, &config.authentication_template)?;
        self.check_answers(&config).await?;
        let name = if input.name.trim().is_empty() {
            slug.clone()
        } else {
            input.name.trim().to_owned()
        };
        let description = input
            .description
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| name.clone());
        // Static headers and query parameters are credentials (`Authorization: Bearer …`,
        // `?api_key=…`): sealed like a connection's, shown masked.
        seal_static_values(&self.inner, caller, &slug, &mut config).await?;
        if let Err(e) = self
            .insert_new_integration(caller, &slug, PLUGIN_ID, name, Some(description), &config)
            .await
        {
            // Not ours to delete when the slug was taken meanwhile: its values are its own.
            if !matches!(e, EngineError::IntegrationAlreadyExists { .. }) {
                delete_static_values(&self.inner, caller, &slug, &config, None).await?;
            }
            return Err(e);
        }
        Ok(slug)
    }

    /// Adds a stdio MCP server (spec §3.9) after spawning it once and listing its tools with the
    /// supplied env values; nothing is stored when that fails. Declared secrets (`envVars` and the
    /// keys of `env`) become the `stdio_env` method `env`; the org connection `default` is created
    /// when values were supplied (template `env`) or nothing is declared (template `none`).
    pub async fn add_stdio_mcp_server(
        &self,
        caller: &Caller,
        input: AddStdioMcpServer,
    ) -> EngineResult<String> {
        crate::catalog::check_integration_text(
            input.slug.as_deref(),
            Some(&input.name),
            input.description.as_deref(),
        )?;
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
                .get_integration(caller.scope(), &slug)
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
            Err(e) => return Err(connect_error(e, "stdio")),
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
        self.insert_new_integration(caller, &slug, PLUGIN_ID, name, Some(description), &config)
            .await?;
        let template = match (input.env.is_empty(), config.authentication_template.first()) {
            (false, _) => Some("env"),
            (true, Some(AuthMethod::None { .. })) => Some("none"),
            _ => None,
        };
        if let Some(template) = template {
            let created = self
                .create_connection(
                    caller,
                    ConnectionInput {
                        owner: Owner::Org,
                        name: "default".to_owned(),
                        integration: slug.clone(),
                        template: template.to_owned(),
                        identity_label: None,
                        description: None,
                        origin: CredentialOrigin::Values(input.env),
                        replace: false,
                    },
                )
                .await;
            if let Err(e) = created {
                // Leave nothing half-made behind.
                if let Err(cleanup) = self.remove_integration(caller, &slug).await {
                    tracing::warn!(error = %cleanup, %slug, "could not remove a half-added stdio server");
                }
                return Err(e);
            }
        }
        Ok(slug)
    }

    /// Seals the static header and query values (and endpoint query strings) that builds before
    /// issue #17 stored in clear in MCP configs. Run at start, before serving; returns how many
    /// integrations were rewritten.
    pub async fn seal_legacy_mcp_values(&self, caller: &Caller) -> EngineResult<usize> {
        let mut sealed = 0;
        for mut record in self.inner.store.list_integrations(caller.scope()).await? {
            if record.plugin_id != PLUGIN_ID {
                continue;
            }
            let Some(mut config) = McpConfig::from_value(&record.config) else {
                continue;
            };
            let before = config.endpoint.clone();
            config.split_endpoint_query();
            let clear = config
                .headers
                .values()
                .chain(config.query_params.values())
                .any(|v| v != MASKED_VALUE);
            if !clear && config.endpoint == before {
                continue;
            }
            // Values already sealed stay in the vault; only clear ones are written.
            let mut fresh = config.clone();
            fresh.headers.retain(|_, v| v != MASKED_VALUE);
            fresh.query_params.retain(|_, v| v != MASKED_VALUE);
            seal_static_values(&self.inner, caller, &record.slug, &mut fresh).await?;
            config.headers.extend(fresh.headers);
            config.query_params.extend(fresh.query_params);
            record.config =
                serde_json::to_value(&config).map_err(|e| EngineError::Internal(e.to_string()))?;
            self.inner
                .store
                .upsert_integration(caller.scope(), &record)
                .await?;
            tracing::info!(slug = %record.slug, "sealed the MCP server's static headers and query values");
            sealed += 1;
        }
        if sealed > 0 {
            self.catalog_changed();
        }
        Ok(sealed)
    }

    /// `None` when the slug is unknown or not an MCP integration.
    pub async fn get_mcp_server(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<Option<McpServerView>> {
        let Some(record) = self
            .inner
            .store
            .get_integration(caller.scope(), slug)
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
            config: masked_config(&record.config),
        }))
    }
}

// ---- replacing a server's config or auth methods, removing it (spec §3.9) -----------------

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::InvalidInput {
        message: message.into(),
    }
}

fn kind_name(method: &AuthMethod) -> &'static str {
    match method {
        AuthMethod::None { .. } => "none",
        AuthMethod::Apikey { .. } => "apikey",
        AuthMethod::Oauth2 { .. } => "oauth2",
        AuthMethod::StdioEnv { .. } => "stdio_env",
    }
}

/// The auth methods a server of this transport can use: `none`, `apikey` (header and query
/// placements) and `oauth2` for a remote server; `stdio_env` and `none` for a stdio one.
fn check_methods(stdio: bool, methods: &[AuthMethod]) -> EngineResult<()> {
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
    fn from_input(value: &Value) -> EngineResult<Self> {
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
fn check_command(config: &McpConfig) -> EngineResult<()> {
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

impl Engine {
    /// Whether the remote server answers as an MCP server, dialled with the config's static
    /// headers and query parameters only (an auth wall counts: credentials come with a
    /// connection). Nothing is stored by the callers when it does not.
    async fn check_answers(&self, config: &McpConfig) -> EngineResult<()> {
        match self
            .inner
            .mcp
            .discover(&config.target_with(&Rendered::default()))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_auth_wall(&e) => Ok(()),
            Err(e) => Err(connect_error(e, config.remote_transport().as_str())),
        }
    }

    /// The MCP integration `slug`: `IntegrationNotFound` when unknown or of another kind.
    async fn mcp_record(&self, caller: &Caller, slug: &str) -> EngineResult<IntegrationRecord> {
        let record = self.integration_record(caller, slug).await?;
        if record.plugin_id != PLUGIN_ID {
            return Err(EngineError::IntegrationNotFound {
                slug: slug.to_owned(),
            });
        }
        Ok(record)
    }

    async fn store_mcp_config(
        &self,
        caller: &Caller,
        record: &mut IntegrationRecord,
        config: &McpConfig,
    ) -> EngineResult<()> {
        let now = now_ms();
        record.config =
            serde_json::to_value(config).map_err(|e| EngineError::Internal(e.to_string()))?;
        record.config_revised_at = Some(now);
        record.updated_at = now;
        self.inner
            .store
            .upsert_integration(caller.scope(), record)
            .await?;
        Ok(())
    }

    /// Replaces the stored config of the MCP server `slug` (remote or stdio) and revises its
    /// tools: every connection visible here is listed again at once (a failure keeps its
    /// previous tools and is recorded on it), the others on their next read. A config that does
    /// not read, a remote server that does not answer or a stdio command that is not found is
    /// refused, and nothing changes. Returns the stored config.
    pub async fn set_mcp_config(
        &self,
        caller: &Caller,
        slug: &str,
        config: &Value,
    ) -> EngineResult<Value> {
        let mut record = self.mcp_record(caller, slug).await?;
        let mut config = McpConfig::from_input(config)?;
        let stored = McpConfig::from_value(&record.config);
        let previous = unsealed_config(&self.inner, caller, &record).await?;
        if !config.is_stdio() {
            config.split_endpoint_query();
            config.keep_masked(&previous.headers, &previous.query_params)?;
        }
        if config.is_stdio() {
            check_command(&config)?;
        } else {
            self.check_answers(&config).await?;
        }
        seal_static_values(&self.inner, caller, slug, &mut config).await?;
        self.store_mcp_config(caller, &mut record, &config).await?;
        if let Some(stored) = &stored {
            delete_static_values(&self.inner, caller, slug, stored, Some(&config)).await?;
        }
        // Sessions dialled under the old config (another endpoint, command or headers) must not
        // serve another call, and cached connections must be resolved again.
        self.close_integration_sessions(caller, slug).await;
        self.catalog_changed();
        for connection in self.list_connections(caller, Some(slug), None).await? {
            self.produce_tools(caller, &record, &connection.key())
                .await?;
        }
        self.catalog_changed();
        Ok(masked_config(&record.config))
    }

    /// Sets the auth methods of the MCP server `slug`: `Replace` declares the whole list (slugs
    /// backfilled), `Merge` replaces same-slug methods in place and appends the others. A stdio
    /// server takes `stdio_env` / `none` methods, a remote one `none` / `apikey` / `oauth2`.
    /// Connections re-list their tools on their next read. Returns the stored methods.
    pub async fn set_mcp_auth(
        &self,
        caller: &Caller,
        slug: &str,
        methods: Vec<AuthMethodInput>,
        mode: AuthTemplateMode,
    ) -> EngineResult<Vec<AuthMethod>> {
        let mut record = self.mcp_record(caller, slug).await?;
        let mut config = McpConfig::from_value(&record.config).ok_or_else(|| {
            EngineError::Internal(format!("integration {slug} has no valid MCP config"))
        })?;
        let mut next = match mode {
            AuthTemplateMode::Replace => assign_auth_slugs(methods),
            AuthTemplateMode::Merge => merge_auth_methods(
                config.authentication_template.clone(),
                methods,
                random_base36,
            ),
        };
        if next.is_empty() {
            next = vec![AuthMethod::none()];
        }
        check_methods(config.is_stdio(), &next)?;
        config.authentication_template = next;
        self.store_mcp_config(caller, &mut record, &config).await?;
        self.catalog_changed();
        Ok(config.authentication_template)
    }

    /// Removes the integration `slug` (any kind, as the original's route does; an unknown slug
    /// is `IntegrationNotFound`), then the OAuth clients dynamically registered for it: those its connections
    /// used and those whose origin names it, unless a connection of another integration uses
    /// them. Manual clients are never removed.
    pub async fn remove_mcp_server(&self, caller: &Caller, slug: &str) -> EngineResult<()> {
        // Unknown and built-in slugs fail before anything is looked at.
        if slug == crate::BUILTIN_INTEGRATION {
            return self.remove_integration(caller, slug).await;
        }
        self.integration_record(caller, slug).await?;
        let connections = self.list_connections(caller, None, None).await?;
        let client_of = |c: &executor_store::ConnectionRecord| {
            let oauth = c.oauth.as_ref()?;
            Some((oauth.client_owner.unwrap_or(c.owner), oauth.client.clone()?))
        };
        let (here, elsewhere): (Vec<_>, Vec<_>) =
            connections.iter().partition(|c| c.integration == slug);
        let used_here: HashSet<(Owner, String)> = here.into_iter().filter_map(client_of).collect();
        let used_elsewhere: HashSet<(Owner, String)> =
            elsewhere.into_iter().filter_map(client_of).collect();
        let doomed: Vec<(Owner, String)> = self
            .list_oauth_clients(caller)
            .await?
            .into_iter()
            .filter(|c| c.origin_kind == ORIGIN_DCR)
            .filter_map(|c| {
                let ours = c.origin_integration.as_deref() == Some(slug);
                let key = (c.owner, c.slug);
                ((ours || used_here.contains(&key)) && !used_elsewhere.contains(&key))
                    .then_some(key)
            })
            .collect();
        self.remove_integration(caller, slug).await?;
        for (owner, client) in doomed {
            self.remove_oauth_client(caller, owner, &client).await?;
        }
        Ok(())
    }
}

/// A stored config as the API shows it (static values masked).
fn masked_config(config: &Value) -> Value {
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
    inner: &Inner,
    caller: &Caller,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> EngineResult<Result<ResolvedTarget, Box<ToolError>>> {
    let config = unsealed_config(inner, caller, integration).await?;
    let credentials =
        match crate::credentials::resolve(inner, caller, &config.authentication_template, key)
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
        session_label(caller.scope(), key),
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
    caller: &Caller,
    integration: &IntegrationRecord,
    key: &ConnectionKey,
) -> Result<Produced, String> {
    let resolved = match resolve_target(inner, caller, integration, key).await {
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
        let Some((scope, key)) = crate::catalog::parse_session_label(label) else {
            return;
        };
        let io = inner.io.clone();
        io.spawn(async move {
            if let Err(e) = inner.store.mark_stale(&scope, &key).await {
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
    let elicitor = crate::executions::elicitation::for_call(ctx, address, &args);
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
        Err(McpError::Timeout { stage: "call" }) => {
            ToolOutcome::Err(inner.call_limits.timed_out(&address.integration))
        }
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
        if let Err(e) = inner
            .store
            .mark_stale(ctx.journal.caller.scope(), &key)
            .await
        {
            tracing::warn!(error = %e, "could not mark a catalog stale");
        }
    }
    HostReply::Resolve(outcome.to_json())
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
        McpError::Rpc { .. } => {
            let outcome = executor_mcp::error_to_outcome(tool_id, e);
            matches!(&outcome, ToolOutcome::Err(err) if err.code == "mcp_tool_unknown")
                .then_some(outcome)
        }
        _ => None,
    }
}
