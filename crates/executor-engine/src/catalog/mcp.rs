//! Adding and configuring mcp integrations: the catalog writes of the kind whose protocol
//! `kinds::mcp` speaks.

use std::sync::{Arc, Weak};

use super::{ConnectionInput, CredentialOrigin};
use crate::Inner;
use crate::caller::Caller;
use crate::credentials::oauth::ORIGIN_DCR;
use crate::error::{EngineError, EngineResult};
use crate::kinds::mcp::*;
use crate::kinds::openapi::random_base36;
use crate::{AuthTemplateMode, Engine};
use executor_core::auth::{
    AuthMethod, AuthMethodInput, Carrier, Placement, Rendered, assign_auth_slugs,
    merge_auth_methods,
};
use executor_core::{Owner, now_ms, slugify};
use executor_mcp::{McpError, RemoteTarget, RemoteTransport, Target};
use executor_store::IntegrationRecord;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

impl Engine {
    /// What the MCP server at `endpoint` says of itself. Admins only on the team server.
    pub async fn probe_mcp(
        &self,
        caller: &Caller,
        endpoint: &str,
        headers: BTreeMap<String, String>,
        query: BTreeMap<String, String>,
    ) -> EngineResult<ProbeView> {
        validate_endpoint(endpoint)?;
        self.ensure_may_probe(caller, endpoint, false).await?;
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
                    .discover_oauth(endpoint)
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
        self.ensure_may_write(caller, None, "add integrations")
            .await?;
        super::check_integration_text(
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
        seal_static_values(&self.inner.kind_env(caller), &slug, &mut config).await?;
        if let Err(e) = self
            .insert_new_integration(caller, &slug, PLUGIN_ID, name, Some(description), &config)
            .await
        {
            // Not ours to delete when the slug was taken meanwhile: its values are its own.
            if !matches!(e, EngineError::IntegrationAlreadyExists { .. }) {
                delete_static_values(&self.inner.kind_env(caller), &slug, &config, None).await?;
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
        self.ensure_stdio_allowed(caller, "add a stdio MCP server")?;
        self.ensure_may_write(caller, None, "add integrations")
            .await?;
        super::check_integration_text(
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
        // On record before it runs, whether or not the add then succeeds.
        self.audit_before(
            caller,
            "mcp.stdio.add",
            &slug,
            stdio_spawn_record(&config, input.env.keys()),
        )
        .await?;
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
            seal_static_values(&self.inner.kind_env(caller), &record.slug, &mut fresh).await?;
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

/// What the audit log records of a stdio command about to run: what runs, where, and the
/// names (never the values) of the variables it is given.
fn stdio_spawn_record<'a>(config: &McpConfig, env: impl Iterator<Item = &'a String>) -> Value {
    let env: Vec<&String> = env.collect();
    serde_json::json!({
        "command": config.command,
        "args": config.args,
        "cwd": config.cwd,
        "envNames": env,
    })
}

impl Engine {
    /// Refuses a stdio MCP server where they are off ([`executor_mcp::McpClientConfig::allow_stdio`]),
    /// before anything is looked at or spawned; a member's attempt is on record.
    fn ensure_stdio_allowed(&self, caller: &Caller, what: &str) -> EngineResult<()> {
        if self.inner.mcp.config().allow_stdio {
            return Ok(());
        }
        self.audit_denied(caller, "mcp.stdio", "catalog", what);
        Err(EngineError::StdioMcpDisabled {
            message: stdio_disabled_message(),
        })
    }

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
        if config.get("transport").and_then(Value::as_str) == Some("stdio") {
            self.ensure_stdio_allowed(caller, "configure a stdio MCP server")?;
        }
        self.ensure_may_write(caller, None, "change integrations")
            .await?;
        let mut record = self.mcp_record(caller, slug).await?;
        let mut config = McpConfig::from_input(config)?;
        let stored = McpConfig::from_value(&record.config);
        let previous = unsealed_config(&self.inner.kind_env(caller), &record).await?;
        if !config.is_stdio() {
            config.split_endpoint_query();
            config.keep_masked(&previous.headers, &previous.query_params)?;
        }
        if config.is_stdio() {
            self.ensure_stdio_allowed(caller, "configure a stdio MCP server")?;
            check_command(&config)?;
            // Its connections are listed again below, which runs the command.
            self.audit_before(
                caller,
                "mcp.stdio.configure",
                slug,
                stdio_spawn_record(&config, config.env.keys()),
            )
            .await?;
        } else {
            self.check_answers(&config).await?;
        }
        seal_static_values(&self.inner.kind_env(caller), slug, &mut config).await?;
        self.store_mcp_config(caller, &mut record, &config).await?;
        if let Some(stored) = &stored {
            delete_static_values(&self.inner.kind_env(caller), slug, stored, Some(&config)).await?;
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
        self.ensure_may_write(caller, None, "change integrations")
            .await?;
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
        self.ensure_may_write(caller, None, "remove integrations")
            .await?;
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

/// Marks a connection's catalog stale when its server says its tool list changed.
pub(crate) fn watch_list_changed(inner: &Arc<Inner>) {
    let weak: Weak<Inner> = Arc::downgrade(inner);
    inner.mcp.on_list_changed(Arc::new(move |label: &str| {
        let Some(inner) = weak.upgrade() else { return };
        let Some((scope, key)) = parse_session_label(label) else {
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
