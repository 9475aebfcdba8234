//! Integrations, connections and their tools: the catalog every surface reads.
//!
//! `catalog/` holds integrations, connections (create refuses a taken normalised name with
//! `ConnectionAlreadyExists` unless `replace`; a new row is pending until its tools are produced
//! and `discard_interrupted_creates`, run by the binary before serving, removes the rest;
//! credential origins — `value`, `values`, `from` and the core tools' per-variable `inputs`, all
//! checked by `CredentialOrigin::resolve`: one provider per connection —, tool production on create
//! and refresh) and tool listing; stale catalogs (marked by a downstream `tools/list_changed`, or
//! older than 2 minutes for live MCP catalogs, or produced before their integration's last config
//! revision) are re-listed in the background, concurrently, while reads answer at once.

mod graphql;
pub(crate) mod health;
mod mcp;

pub(crate) use mcp::watch_list_changed;
mod openapi;
mod replicas;

pub(crate) use replicas::follow_other_replicas;

pub use openapi::OpenApiPreview;
pub(crate) mod tool_cache;

use std::collections::BTreeMap;

use executor_core::auth::AuthMethod;
use executor_core::schema_ts::{ToolTypes, render_tool_types};
use executor_core::{Owner, ToolAddress, now_ms};
use executor_store::{
    ConnectionKey, ConnectionRecord, IntegrationRecord, ToolChangeFilter, ToolChangeRecord,
    ToolFilter, ToolSummary,
};
use serde_json::Value;

use crate::Engine;
use crate::caller::{Caller, RowsKey};
use crate::error::{EngineError, EngineResult};
use crate::kinds::Kind;

/// A create still pending after this long was interrupted: producing a catalog takes at most
/// a few call timeouts.
const INTERRUPTED_CREATE_AGE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// Slug of the static built-in integration, always listed first.
use crate::credentials::providers::item_ids;
use crate::error::connection_not_found;
use crate::kinds::mcp::parse_session_label;
pub(crate) use crate::names::{connection_name, connection_path};
use crate::static_tool::BUILTIN_INTEGRATION;

/// An integration as the catalog presents it.
#[derive(Debug, Clone)]
pub struct IntegrationView {
    pub slug: String,
    pub name: String,
    pub description: String,
    pub kind: String,
    pub can_remove: bool,
    pub can_refresh: bool,
    pub auth_methods: Vec<AuthMethod>,
    pub display_url: Option<String>,
}

impl IntegrationView {
    fn builtin() -> Self {
        IntegrationView {
            slug: BUILTIN_INTEGRATION.to_owned(),
            name: "Executor".to_owned(),
            description: "Built-in tools to manage Executor itself.".to_owned(),
            kind: "built-in".to_owned(),
            can_remove: false,
            can_refresh: false,
            auth_methods: Vec::new(),
            display_url: None,
        }
    }

    pub(crate) fn from_record(record: &IntegrationRecord) -> Self {
        let description = record.description.clone().unwrap_or_default();
        let name = crate::kinds::display_name(record);
        let (auth_methods, display_url) = match Kind::of(&record.plugin_id) {
            Some(kind) => (
                kind.auth_methods(&record.config),
                kind.display_url(&record.config),
            ),
            None => (Vec::new(), None),
        };
        IntegrationView {
            slug: record.slug.clone(),
            name,
            description,
            kind: record.plugin_id.clone(),
            can_remove: record.can_remove,
            can_refresh: record.can_refresh,
            auth_methods,
            display_url,
        }
    }
}

/// Where a new connection's credential values come from (exactly one).
#[derive(Debug, Clone)]
pub enum CredentialOrigin {
    /// Sugar for the variable `token`.
    Value(String),
    Values(BTreeMap<String, String>),
    /// An item of a registered provider, for the variable `token`.
    From {
        provider: String,
        id: String,
    },
    /// One origin per variable (the core tool's form). All inputs must share one provider.
    Inputs(BTreeMap<String, InputOrigin>),
}

/// The origin of one credential input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputOrigin {
    /// A value the caller pasted; stored in the default writable provider.
    Value(String),
    /// An item of a registered provider, referenced and never copied.
    From { provider: String, id: String },
}

/// A connection's credential inputs once their origin is checked (spec §1.4): a connection row
/// carries one provider, so its inputs are either all pasted or all items of one provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResolvedInputs {
    /// `{variable: value}` to write to the default writable provider (empty values dropped).
    Pasted(BTreeMap<String, String>),
    /// `{variable: itemId}` of `provider`.
    External {
        provider: String,
        items: BTreeMap<String, String>,
    },
}

impl CredentialOrigin {
    /// Checks the inputs against the spec's rules. `none` templates may have no input; whether
    /// an external provider is registered is the caller's check (it holds the registry).
    pub(crate) fn resolve(self, template: &str) -> EngineResult<ResolvedInputs> {
        let inputs: Vec<(String, InputOrigin)> = match self {
            CredentialOrigin::Value(v) => vec![("token".to_owned(), InputOrigin::Value(v))],
            CredentialOrigin::Values(values) => values
                .into_iter()
                .map(|(k, v)| (k, InputOrigin::Value(v)))
                .collect(),
            CredentialOrigin::From { provider, id } => {
                vec![("token".to_owned(), InputOrigin::From { provider, id })]
            }
            CredentialOrigin::Inputs(inputs) => inputs.into_iter().collect(),
        };
        let invalid = |message: &str| EngineError::InvalidConnectionInput {
            message: message.to_owned(),
        };
        let mut pasted = BTreeMap::new();
        let mut external: BTreeMap<String, (String, String)> = BTreeMap::new();
        for (variable, origin) in inputs {
            match origin {
                // An empty paste is no input (forms send `value: ""` for `none`).
                InputOrigin::Value(v) if v.is_empty() => {}
                InputOrigin::Value(v) => {
                    pasted.insert(variable, v);
                }
                InputOrigin::From { provider, id } => {
                    external.insert(variable, (provider, id));
                }
            }
        }
        if !pasted.is_empty() && !external.is_empty() {
            return Err(invalid(
                "A connection cannot mix pasted and external-provider inputs.",
            ));
        }
        if template == "none" && !(pasted.is_empty() && external.is_empty()) {
            // A credential given for no auth method would be stored and never sent.
            return Err(invalid(
                "The auth method \"none\" takes no credential; pick the integration's auth method the value is for (its authMethods[].template).",
            ));
        }
        let Some((_, (provider, _))) = external.first_key_value() else {
            if pasted.is_empty() && template != "none" {
                return Err(invalid(
                    "A connection must supply at least one credential input.",
                ));
            }
            return Ok(ResolvedInputs::Pasted(pasted));
        };
        let provider = provider.clone();
        if external.values().any(|(p, _)| *p != provider) {
            return Err(invalid(
                "A connection's inputs must all use the same external provider.",
            ));
        }
        Ok(ResolvedInputs::External {
            provider,
            items: external.into_iter().map(|(k, (_, id))| (k, id)).collect(),
        })
    }
}

#[derive(Debug, Clone)]
pub struct ConnectionInput {
    pub owner: Owner,
    pub name: String,
    pub integration: String,
    pub template: String,
    pub identity_label: Option<String>,
    pub description: Option<String>,
    pub origin: CredentialOrigin,
    /// Replace a connection of the same (normalised) name, credentials included; without it, a
    /// taken name is `ConnectionAlreadyExists`.
    pub replace: bool,
}

#[derive(Debug, Clone, Default)]
pub struct ToolListFilter {
    pub integration: Option<String>,
    pub owner: Option<Owner>,
    pub connection: Option<String>,
    pub query: Option<String>,
    /// Agent surfaces hide blocked tools; the HTTP listing shows them unless told otherwise.
    pub exclude_blocked: bool,
}

/// What policy patterns match for a listed tool: `<integration>.<owner>.<connection>.<tool>`,
/// or a static tool's fqid.
pub(crate) fn policy_id_of(t: &ToolSummary) -> String {
    if t.connection == crate::STATIC_TOOL_CONNECTION && t.integration == BUILTIN_INTEGRATION {
        format!("{BUILTIN_INTEGRATION}.{}", t.name)
    } else {
        t.address().path()
    }
}

/// Whether a listed tool's annotations ask for approval by default.
pub(crate) fn summary_requires_approval(t: &ToolSummary) -> bool {
    t.annotations
        .as_ref()
        .and_then(|a| a.get("requiresApproval"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false)
}

/// Longest integration name or connection identity label accepted, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Longest description accepted, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 4_000;

/// A name or description a person will read: bounded, and free of control characters (a
/// description may have line breaks and tabs).
pub(crate) fn check_text(field: &str, value: Option<&str>, max: usize) -> EngineResult<()> {
    let Some(value) = value else { return Ok(()) };
    let invalid = |message: String| EngineError::InvalidInput { message };
    if value.chars().count() > max {
        return Err(invalid(format!(
            "{field} is too long: at most {max} characters."
        )));
    }
    let multiline = max > MAX_NAME_CHARS;
    if value
        .chars()
        .any(|c| c.is_control() && !(multiline && matches!(c, '\n' | '\r' | '\t')))
    {
        return Err(invalid(format!(
            "{field} must not contain control characters{}.",
            if multiline {
                " other than line breaks and tabs"
            } else {
                ""
            }
        )));
    }
    Ok(())
}

/// The slug, name and description of an integration as a person gave them (bounded, no
/// control characters), checked before anything is dialled or stored.
pub(crate) fn check_integration_text(
    slug: Option<&str>,
    name: Option<&str>,
    description: Option<&str>,
) -> EngineResult<()> {
    check_text("slug", slug, MAX_NAME_CHARS)?;
    check_text("name", name, MAX_NAME_CHARS)?;
    check_text("description", description, MAX_DESCRIPTION_CHARS)
}

impl Engine {
    /// Closes the downstream sessions of the tenant's connections of an integration, every
    /// subject's: a removed or reconfigured integration's sessions must not serve another call.
    pub(crate) async fn close_integration_sessions(&self, caller: &Caller, slug: &str) {
        let tenant = caller.tenant().to_owned();
        let slug = slug.to_owned();
        self.inner
            .mcp
            .close_where(move |label| {
                parse_session_label(label)
                    .is_some_and(|(scope, key)| scope.tenant == tenant && key.integration == slug)
            })
            .await;
    }

    /// Closes the downstream sessions of one connection: every subject's for an org
    /// connection, the caller's for their own.
    pub(crate) async fn close_connection_sessions(&self, caller: &Caller, key: &ConnectionKey) {
        let owner = caller.scope().clone();
        let key = key.clone();
        self.inner
            .mcp
            .close_where(move |label| {
                parse_session_label(label).is_some_and(|(scope, k)| {
                    scope.tenant == owner.tenant
                        && k == key
                        && (k.owner == Owner::Org || scope.subject == owner.subject)
                })
            })
            .await;
    }

    // ---- integrations -------------------------------------------------------------------

    pub async fn list_integrations(&self, caller: &Caller) -> EngineResult<Vec<IntegrationView>> {
        let records = self.inner.store.list_integrations(caller.scope()).await?;
        let mut out = Vec::with_capacity(records.len() + 1);
        out.push(IntegrationView::builtin());
        out.extend(
            records
                .iter()
                .filter(|r| r.slug != BUILTIN_INTEGRATION)
                .map(IntegrationView::from_record),
        );
        Ok(out)
    }

    pub async fn get_integration(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<IntegrationView> {
        if slug == BUILTIN_INTEGRATION {
            return Ok(IntegrationView::builtin());
        }
        self.integration_record(caller, slug)
            .await
            .map(|r| IntegrationView::from_record(&r))
    }

    pub(crate) async fn integration_record(
        &self,
        caller: &Caller,
        slug: &str,
    ) -> EngineResult<IntegrationRecord> {
        self.inner
            .store
            .get_integration(caller.scope(), slug)
            .await?
            .ok_or_else(|| EngineError::IntegrationNotFound {
                slug: slug.to_owned(),
            })
    }

    pub async fn update_integration(
        &self,
        caller: &Caller,
        slug: &str,
        name: Option<String>,
        description: Option<String>,
    ) -> EngineResult<IntegrationView> {
        self.ensure_may_write(caller, None, "change integrations")
            .await?;
        if slug == BUILTIN_INTEGRATION {
            return Err(EngineError::IntegrationNotFound {
                slug: slug.to_owned(),
            });
        }
        check_integration_text(None, name.as_deref(), description.as_deref())?;
        let updated = self
            .inner
            .store
            .update_integration_meta(caller.scope(), slug, name, description)
            .await?
            .ok_or_else(|| EngineError::IntegrationNotFound {
                slug: slug.to_owned(),
            })?;
        Ok(IntegrationView::from_record(&updated))
    }

    /// Removes an integration with its connections and tools, and closes its downstream
    /// sessions. An unknown slug is `IntegrationNotFound` and the built-in one
    /// `IntegrationRemovalNotAllowed` (issue #17: answering `removed` for them hid typos).
    pub async fn remove_integration(&self, caller: &Caller, slug: &str) -> EngineResult<()> {
        self.ensure_may_write(caller, None, "remove integrations")
            .await?;
        if slug == BUILTIN_INTEGRATION {
            return Err(EngineError::IntegrationRemovalNotAllowed {
                slug: slug.to_owned(),
            });
        }
        let record = self.integration_record(caller, slug).await?;
        if !record.can_remove {
            return Err(EngineError::IntegrationRemovalNotAllowed {
                slug: slug.to_owned(),
            });
        }
        let connections = self
            .inner
            .store
            .list_connections(caller.scope(), Some(slug), None)
            .await?;
        self.inner
            .store
            .delete_integration(caller.scope(), slug)
            .await?;
        for connection in &connections {
            self.delete_owned_items(caller, connection).await?;
        }
        if record.plugin_id == crate::kinds::mcp::PLUGIN_ID {
            crate::kinds::mcp::forget_static_values(&self.inner.kind_env(caller), &record).await?;
        }
        self.close_integration_sessions(caller, slug).await;
        self.catalog_changed();
        Ok(())
    }

    // ---- connections --------------------------------------------------------------------

    pub async fn list_connections(
        &self,
        caller: &Caller,
        integration: Option<&str>,
        owner: Option<Owner>,
    ) -> EngineResult<Vec<ConnectionRecord>> {
        Ok(self
            .inner
            .store
            .list_connections(caller.scope(), integration, owner)
            .await?)
    }

    pub async fn get_connection(
        &self,
        caller: &Caller,
        key: &ConnectionKey,
    ) -> EngineResult<ConnectionRecord> {
        self.inner
            .store
            .get_connection(caller.scope(), key)
            .await?
            .ok_or_else(|| connection_not_found(key))
    }

    /// Creates a connection and produces its tools before returning. A name already taken (after
    /// normalisation) is `ConnectionAlreadyExists` unless `input.replace`, which replaces that
    /// connection, credentials included. A new row is marked pending until its tools are
    /// produced: a create that never answered (the process died) is undone at the next start
    /// ([`Engine::discard_interrupted_creates`]).
    pub async fn create_connection(
        &self,
        caller: &Caller,
        input: ConnectionInput,
    ) -> EngineResult<ConnectionRecord> {
        self.ensure_may_write(caller, Some(input.owner), "create workspace connections")
            .await?;
        let integration = self.integration_record(caller, &input.integration).await?;
        if input.owner == Owner::User && caller.scope().subject.is_none() {
            return Err(EngineError::InvalidConnectionInput {
                message: "Cannot create a personal connection: this context has no user subject."
                    .to_owned(),
            });
        }
        let name = connection_name(&input.name)?;
        check_text(
            "description",
            input.description.as_deref(),
            MAX_DESCRIPTION_CHARS,
        )?;
        check_text(
            "identityLabel",
            input.identity_label.as_deref(),
            MAX_NAME_CHARS,
        )?;
        let view = IntegrationView::from_record(&integration);
        if input.template != "none" && !view.auth_methods.iter().any(|m| m.slug() == input.template)
        {
            let known: Vec<&str> = view.auth_methods.iter().map(AuthMethod::slug).collect();
            return Err(EngineError::InvalidConnectionInput {
                message: format!(
                    "Unknown auth method {:?} for integration {:?}; it declares: {}.",
                    input.template,
                    input.integration,
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            });
        }
        let key = ConnectionKey {
            owner: input.owner,
            integration: input.integration.clone(),
            name: name.clone(),
        };
        let item_prefix = format!("connection:{}:{}:{}", input.owner, input.integration, name);
        // Pasted values go to the default writable provider; references name an item of any
        // registered provider. Everything is checked before anything is written.
        let providers = &self.inner.providers;
        let mut item_ids = serde_json::Map::new();
        let (provider, pasted) = match input.origin.resolve(&input.template)? {
            ResolvedInputs::Pasted(values) => {
                let provider = providers.default_writable(caller)?;
                for variable in values.keys() {
                    let item = format!("{item_prefix}:{variable}");
                    item_ids.insert(variable.clone(), Value::String(item));
                }
                (provider, values)
            }
            ResolvedInputs::External { provider, items } => {
                let provider = providers.get(caller, &provider).ok_or_else(|| {
                    EngineError::CredentialProviderNotRegistered {
                        provider: provider.clone(),
                    }
                })?;
                // A reference names an item of the connection's owner only: a member's
                // personal connection cannot read another member's values.
                self.check_referenced_items(caller, provider, input.owner, items.values())
                    .await?;
                for (variable, item) in items {
                    item_ids.insert(variable, Value::String(item));
                }
                (provider, BTreeMap::new())
            }
        };
        let now = now_ms();
        let record = ConnectionRecord {
            owner: input.owner,
            integration: input.integration.clone(),
            name,
            template: input.template.clone(),
            provider: provider.key().to_owned(),
            item_ids: Value::Object(item_ids),
            identity_label: input.identity_label,
            description: input.description,
            last_health: None,
            tools_synced_at: None,
            expires_at: None,
            created_at: now,
            updated_at: now,
            oauth: None,
        };
        let store = &self.inner.store;
        let replacing =
            input.replace && store.get_connection(caller.scope(), &key).await?.is_some();
        if replacing {
            for (variable, value) in &pasted {
                provider
                    .put(
                        caller.scope(),
                        key.owner,
                        &format!("{item_prefix}:{variable}"),
                        value,
                    )
                    .await?;
            }
            store.upsert_connection(caller.scope(), &record).await?;
        } else {
            // The row first: a taken name must not overwrite the other connection's values.
            match store.insert_connection(caller.scope(), &record).await {
                Ok(_) => {}
                Err(executor_store::StoreError::AlreadyExists) => {
                    return Err(EngineError::ConnectionAlreadyExists {
                        owner: key.owner,
                        integration: key.integration,
                        name: key.name,
                    });
                }
                Err(e) => return Err(e.into()),
            }
            let written = async {
                for (variable, value) in &pasted {
                    provider
                        .put(
                            caller.scope(),
                            key.owner,
                            &format!("{item_prefix}:{variable}"),
                            value,
                        )
                        .await?;
                }
                Ok::<_, EngineError>(())
            }
            .await;
            if let Err(e) = written {
                self.undo_create(caller, &key, &record).await;
                return Err(e);
            }
        }
        // A re-saved connection may carry other credentials: its old sessions must not be reused.
        self.close_connection_sessions(caller, &key).await;
        if let Err(e) = self.produce_tools(caller, &integration, &key).await {
            if !replacing {
                self.undo_create(caller, &key, &record).await;
            }
            return Err(e);
        }
        self.catalog_changed();
        self.get_connection(caller, &key).await
    }

    /// Removes a connection whose create failed after its row was written.
    async fn undo_create(&self, caller: &Caller, key: &ConnectionKey, record: &ConnectionRecord) {
        if let Err(e) = self
            .inner
            .store
            .delete_connection(caller.scope(), key)
            .await
        {
            tracing::warn!(error = %e, connection = %connection_path(key), "could not undo a failed create");
        }
        if let Err(e) = self.delete_owned_items(caller, record).await {
            tracing::warn!(error = %e, connection = %connection_path(key), "could not delete a failed create's values");
        }
    }

    /// Undoes the creates a previous process never answered (it died while producing their
    /// tools): their rows and the values they wrote. Run at start, before serving. Replicas of
    /// a shared database leave alone creates younger than [`INTERRUPTED_CREATE_AGE`]: another
    /// replica may be producing their tools right now.
    pub async fn discard_interrupted_creates(&self, caller: &Caller) -> EngineResult<usize> {
        let store = &self.inner.store;
        let created_before = if self.shares_database() {
            now_ms().saturating_sub(INTERRUPTED_CREATE_AGE.as_millis() as i64)
        } else {
            i64::MAX
        };
        let taken = store
            .take_pending_connections(caller.scope(), created_before)
            .await?;
        for record in &taken {
            tracing::warn!(
                connection = %connection_path(&record.key()),
                "removed a connection whose create was interrupted (never acknowledged)"
            );
            self.delete_owned_items(caller, record).await?;
        }
        if !taken.is_empty() {
            self.catalog_changed();
        }
        Ok(taken.len())
    }

    pub async fn update_connection(
        &self,
        caller: &Caller,
        key: &ConnectionKey,
        description: Option<Option<String>>,
        identity_label: Option<Option<String>>,
    ) -> EngineResult<ConnectionRecord> {
        self.ensure_may_write(caller, Some(key.owner), "change workspace connections")
            .await?;
        check_text(
            "description",
            description.as_ref().and_then(|d| d.as_deref()),
            MAX_DESCRIPTION_CHARS,
        )?;
        check_text(
            "identityLabel",
            identity_label.as_ref().and_then(|d| d.as_deref()),
            MAX_NAME_CHARS,
        )?;
        self.inner
            .store
            .update_connection_meta(caller.scope(), key, description, identity_label)
            .await?
            .ok_or_else(|| connection_not_found(key))
    }

    pub async fn remove_connection(
        &self,
        caller: &Caller,
        key: &ConnectionKey,
    ) -> EngineResult<()> {
        self.ensure_may_write(caller, Some(key.owner), "remove workspace connections")
            .await?;
        let record = self.get_connection(caller, key).await?;
        self.inner
            .store
            .delete_connection(caller.scope(), key)
            .await?;
        self.delete_owned_items(caller, &record).await?;
        self.close_connection_sessions(caller, key).await;
        self.catalog_changed();
        Ok(())
    }

    /// Deletes the values a connection wrote (its pasted values, item ids
    /// `connection:<owner>:<integration>:<name>:<variable>`, its owner's) from its provider.
    /// Items it only references (`from`) belong to the user and stay.
    async fn delete_owned_items(
        &self,
        caller: &Caller,
        connection: &ConnectionRecord,
    ) -> EngineResult<()> {
        let Some(provider) = self.inner.providers.get(caller, &connection.provider) else {
            return Ok(());
        };
        let prefix = format!(
            "connection:{}:{}:{}:",
            connection.owner, connection.integration, connection.name
        );
        for item in item_ids(&connection.item_ids).values() {
            if item.starts_with(&prefix) {
                provider
                    .delete(caller.scope(), connection.owner, item)
                    .await?;
            }
        }
        Ok(())
    }

    /// Re-produces a connection's tools and returns the new list.
    pub async fn refresh_connection(
        &self,
        caller: &Caller,
        key: &ConnectionKey,
    ) -> EngineResult<Vec<ToolSummary>> {
        Ok(self.refresh_connection_diff(caller, key).await?.tools)
    }

    /// Re-lists a connection's tools from its server (no cache in between) and answers the new
    /// list with what changed since the last listing (recorded as tool changes).
    pub async fn refresh_connection_diff(
        &self,
        caller: &Caller,
        key: &ConnectionKey,
    ) -> EngineResult<Refreshed> {
        self.get_connection(caller, key).await?;
        let integration = self.integration_record(caller, &key.integration).await?;
        let changes = self.produce_tools(caller, &integration, key).await?;
        self.catalog_changed();
        let tools = self
            .list_tools(
                caller,
                &ToolListFilter {
                    integration: Some(key.integration.clone()),
                    owner: Some(key.owner),
                    connection: Some(key.name.clone()),
                    query: None,
                    exclude_blocked: false,
                },
            )
            .await?;
        Ok(Refreshed { tools, changes })
    }

    /// Recorded changes of tool definitions between listings, newest first.
    pub async fn list_tool_changes(
        &self,
        caller: &Caller,
        filter: &ToolChangeFilter,
    ) -> EngineResult<Vec<ToolChangeRecord>> {
        Ok(self
            .inner
            .store
            .list_tool_changes(caller.scope(), filter)
            .await?)
    }

    /// A person accepts a recorded change: the tool's calls stop pausing for it, and its current
    /// definition is the one people trust. An org connection's change takes an admin on the
    /// team server (a personal one's, its owner: nobody else sees it). Records who accepted.
    pub async fn accept_tool_change(
        &self,
        caller: &Caller,
        id: &str,
    ) -> EngineResult<ToolChangeRecord> {
        let not_found = || EngineError::ToolChangeNotFound { id: id.to_owned() };
        let owner = self
            .inner
            .store
            .list_tool_changes(
                caller.scope(),
                &ToolChangeFilter {
                    id: Some(id.to_owned()),
                    ..ToolChangeFilter::default()
                },
            )
            .await?
            .first()
            .map(|c| c.owner)
            .ok_or_else(not_found)?;
        self.ensure_may_write(caller, Some(owner), "accept tool changes")
            .await?;
        let by = caller.member_email().unwrap_or("local owner").to_owned();
        let accepted = self
            .inner
            .store
            .accept_tool_change(caller.scope(), id, &by)
            .await?
            .ok_or_else(not_found)?;
        // The gate's view of waiting tools is per generation.
        self.tools_changed();
        Ok(accepted)
    }

    /// Runs the integration's plugin to produce the connection's tools and records how they
    /// changed since the last listing. A failed sync keeps the previous catalog and records why
    /// on the connection's health (no changes).
    pub(crate) async fn produce_tools(
        &self,
        caller: &Caller,
        integration: &IntegrationRecord,
        key: &ConnectionKey,
    ) -> EngineResult<Vec<ToolChangeRecord>> {
        self.produce(caller, integration, key, false).await
    }

    /// A background re-sync: an empty list where tools existed keeps the old catalog, since a
    /// remote server that briefly lists nothing should not wipe what agents rely on.
    async fn produce_tools_in_background(
        &self,
        caller: &Caller,
        integration: &IntegrationRecord,
        key: &ConnectionKey,
    ) -> EngineResult<Vec<ToolChangeRecord>> {
        self.produce(caller, integration, key, true).await
    }

    async fn produce(
        &self,
        caller: &Caller,
        integration: &IntegrationRecord,
        key: &ConnectionKey,
        background: bool,
    ) -> EngineResult<Vec<ToolChangeRecord>> {
        let produced = match Kind::of(&integration.plugin_id) {
            Some(kind) => {
                kind.produce(&self.inner.kind_env(caller), integration, key)
                    .await
            }
            None => Err(format!(
                "no integration kind {:?} in this build",
                integration.plugin_id
            )),
        };
        let produced = match produced {
            Ok(produced) if background && produced.tools.is_empty() => {
                let existing = self
                    .inner
                    .store
                    .list_tools(
                        caller.scope(),
                        &ToolFilter {
                            integration: Some(key.integration.clone()),
                            owner: Some(key.owner),
                            connection: Some(key.name.clone()),
                            query: None,
                        },
                    )
                    .await?;
                if existing.is_empty() {
                    Ok(produced)
                } else {
                    Err("the server listed no tools; keeping the previous catalog".to_owned())
                }
            }
            other => other,
        };
        let changes = match produced {
            Ok(produced) => {
                self.inner
                    .store
                    .replace_tools(caller.scope(), key, &produced.tools, &produced.definitions)
                    .await?
            }
            Err(reason) => {
                tracing::warn!(integration = %key.integration, connection = %key.name, %reason, "tool sync failed");
                self.inner
                    .store
                    .mark_sync_failed(caller.scope(), key, &reason)
                    .await?;
                Vec::new()
            }
        };
        for change in &changes {
            if change.kind == "changed" {
                tracing::warn!(
                    tool = %change.address(),
                    fields = ?change.fields,
                    escalated = change.escalated,
                    waits_for_acceptance = change.requires_acceptance,
                    change = %change.id,
                    "a tool's definition changed upstream"
                );
            }
        }
        // After the write, so that a cache rebuilt from here on sees the new tools.
        self.tools_changed();
        Ok(changes)
    }

    // ---- tools --------------------------------------------------------------------------

    /// Static tools first, then every connection's tools. Stale catalogs are refreshed in the
    /// background; this answers at once with the last good catalog.
    pub async fn list_tools(
        &self,
        caller: &Caller,
        filter: &ToolListFilter,
    ) -> EngineResult<Vec<ToolSummary>> {
        self.refresh_stale_catalogs(caller);
        let static_owner = if caller.scope().subject.is_some() {
            Owner::User
        } else {
            Owner::Org
        };
        let query = filter.query.as_deref().map(str::to_lowercase);
        let mut out: Vec<ToolSummary> = self
            .inner
            .core_tools
            .iter()
            .map(|t| t.summary(static_owner))
            .filter(|t| {
                filter
                    .integration
                    .as_deref()
                    .is_none_or(|i| i == t.integration)
                    && filter.owner.is_none_or(|o| o == t.owner)
                    && filter
                        .connection
                        .as_deref()
                        .is_none_or(|c| c == t.connection)
                    && query.as_deref().is_none_or(|q| {
                        format!("{} {}", t.name, t.description)
                            .to_lowercase()
                            .contains(q)
                    })
            })
            .collect();
        out.extend(
            self.inner
                .store
                .list_tools(
                    caller.scope(),
                    &ToolFilter {
                        integration: filter.integration.clone(),
                        owner: filter.owner,
                        connection: filter.connection.clone(),
                        query: filter.query.clone(),
                    },
                )
                .await?,
        );
        if filter.exclude_blocked {
            let policies = self.policy_set(caller).await?;
            out.retain(|t| {
                policies.resolve(&policy_id_of(t), false).action()
                    != executor_core::policy::PolicyAction::Block
            });
        }
        Ok(out)
    }

    /// Re-lists one stale connection's tools, unless another process sharing the database is
    /// doing it or did it since its catalog was seen stale (`seen`: its `tools_synced_at` then).
    async fn refresh_once_across_replicas(
        &self,
        caller: &Caller,
        key: &ConnectionKey,
        seen: Option<i64>,
    ) -> EngineResult<()> {
        let store = &self.inner.store;
        let Some(claim) = store.try_lock_catalog_refresh(caller.scope(), key).await? else {
            return Ok(());
        };
        let result = async {
            if self.shares_database() {
                let now = store.get_connection(caller.scope(), key).await?;
                if now.is_none_or(|c| c.tools_synced_at != seen) {
                    return Ok(());
                }
            }
            let integration = self.integration_record(caller, &key.integration).await?;
            self.produce_tools_in_background(caller, &integration, key)
                .await
                .map(drop)
        }
        .await;
        claim.release().await;
        result
    }

    /// Starts background refreshes of connections whose catalog is stale (marked by a
    /// `list_changed`, never synced) or older than the remote-catalog TTL. Concurrent, one per
    /// connection at a time, checked at most once a second; never waited for.
    pub(crate) fn refresh_stale_catalogs(&self, caller: &Caller) {
        let now = now_ms();
        {
            let mut checked = lock(&self.inner.freshness.last_check);
            let last = checked.entry(caller.rows_key()).or_insert(0);
            if now - *last < 1_000 {
                return;
            }
            *last = now;
        }
        let engine = self.clone();
        let caller = caller.clone();
        self.inner.io.spawn(async move {
            let caller = &caller;
            let (connections, integrations) = match tokio::try_join!(
                engine.list_connections(caller, None, None),
                async { Ok(engine.inner.store.list_integrations(caller.scope()).await?) }
            ) {
                Ok(both) => both,
                Err(e) => return tracing::warn!(error = %e, "could not check catalog freshness"),
            };
            let integrations: std::collections::HashMap<&str, &IntegrationRecord> =
                integrations.iter().map(|i| (i.slug.as_str(), i)).collect();
            for connection in connections {
                let Some(integration) = integrations.get(connection.integration.as_str()) else {
                    continue;
                };
                let live = Kind::of(&integration.plugin_id).is_some_and(Kind::has_live_catalog);
                let stale = match connection.tools_synced_at {
                    None => true,
                    // The integration's document or auth changed since (perhaps by another
                    // subject), or a live catalog is older than its TTL.
                    Some(at) => {
                        integration.config_revised_at.is_some_and(|rev| rev > at)
                            || (live && now - at > REMOTE_CATALOG_TTL_MS)
                    }
                };
                if !stale {
                    continue;
                }
                let key = ConnectionKey {
                    owner: connection.owner,
                    integration: connection.integration.clone(),
                    name: connection.name.clone(),
                };
                let flight = (caller.rows_key(), key.clone());
                if !lock(&engine.inner.freshness.in_flight).insert(flight.clone()) {
                    continue;
                }
                let engine = engine.clone();
                let caller = caller.clone();
                let seen = connection.tools_synced_at;
                engine.inner.io.clone().spawn(async move {
                    let caller = &caller;
                    let result = engine.refresh_once_across_replicas(caller, &key, seen).await;
                    if let Err(e) = result {
                        tracing::warn!(error = %e, connection = %connection_path(&key), "background catalog refresh failed");
                    }
                    lock(&engine.inner.freshness.in_flight).remove(&flight);
                });
            }
        });
    }

    /// A tool's schemas, shared definitions and TypeScript previews; `ToolNotFound` for unknown
    /// addresses. Takes a dynamic address (`tools.…`) or a static fqid (`executor.coreTools.…`).
    pub async fn tool_schema(&self, caller: &Caller, address: &str) -> EngineResult<ToolSchema> {
        let not_found = || EngineError::ToolNotFound {
            address: address.to_owned(),
            suggestions: Vec::new(),
        };
        let blocked = |id: &str, set: &executor_core::policy::PolicySet| {
            set.resolve(id, false).action() == executor_core::policy::PolicyAction::Block
        };
        let policies = self.policy_set(caller).await?;
        if let Some(tool) = crate::static_tool::find(self.inner.core_tools, address) {
            if blocked(tool.fqid, &policies) {
                return Err(not_found());
            }
            let input = (tool.input_schema)();
            let types = render_tool_types(Some(&input), None, &serde_json::Map::new());
            return Ok(ToolSchema {
                address: address.to_owned(),
                name: tool.name().to_owned(),
                description: tool.description.to_owned(),
                input_schema: Some(input),
                output_schema: None,
                definitions: serde_json::Map::new(),
                types,
            });
        }
        let parsed = ToolAddress::parse(address).map_err(|_| not_found())?;
        if blocked(&parsed.path(), &policies) {
            return Err(not_found());
        }
        let tool = self
            .inner
            .store
            .get_tool(caller.scope(), &parsed)
            .await?
            .ok_or_else(not_found)?;
        let definitions = self
            .inner
            .store
            .tool_definitions(
                caller.scope(),
                &ConnectionKey {
                    owner: parsed.owner,
                    integration: parsed.integration.clone(),
                    name: parsed.connection.clone(),
                },
            )
            .await?;
        // Only what this tool's schemas reach: a connection's tools share every definition.
        let definitions = executor_core::schema_refs::reachable_definitions(
            &[tool.input_schema.as_ref(), tool.output_schema.as_ref()],
            &definitions,
        );
        let types = render_tool_types(
            tool.input_schema.as_ref(),
            tool.output_schema.as_ref(),
            &definitions,
        );
        Ok(ToolSchema {
            address: address.to_owned(),
            name: tool.name,
            description: tool.description,
            input_schema: tool.input_schema,
            output_schema: tool.output_schema,
            definitions,
            types,
        })
    }
}

/// A refreshed connection's tools and how they changed since its last listing.
#[derive(Debug, Clone)]
pub struct Refreshed {
    pub tools: Vec<ToolSummary>,
    pub changes: Vec<ToolChangeRecord>,
}

/// A tool with everything `describe` and `GET /api/tools/schema` show.
#[derive(Debug, Clone)]
pub struct ToolSchema {
    pub address: String,
    pub name: String,
    pub description: String,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    pub definitions: serde_json::Map<String, Value>,
    pub types: ToolTypes,
}

/// Remote catalogs are re-listed when older than this (2 minutes). It was 15 minutes, and only
/// a listing of tools looked: an upstream tool that turned destructive kept its read-only
/// annotation in the catalog (and the tool cache) for as long, and agents that only execute
/// code never triggered the re-list at all (issue #39). Executions now look too.
const REMOTE_CATALOG_TTL_MS: i64 = 2 * 60 * 1000;

/// Bookkeeping of background catalog refreshes.
#[derive(Default)]
pub(crate) struct Freshness {
    /// When each tenant and subject's catalog was last looked over (epoch ms).
    last_check: std::sync::Mutex<std::collections::HashMap<RowsKey, i64>>,
    in_flight: std::sync::Mutex<std::collections::HashSet<(RowsKey, ConnectionKey)>>,
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Engine {
    /// Stores a new removable, refreshable integration of `plugin_id` and marks the catalog
    /// changed; a taken slug is `IntegrationAlreadyExists`.
    pub(crate) async fn insert_new_integration(
        &self,
        caller: &Caller,
        slug: &str,
        plugin_id: &str,
        name: String,
        description: Option<String>,
        config: &impl serde::Serialize,
    ) -> EngineResult<()> {
        check_integration_text(Some(slug), Some(&name), description.as_deref())?;
        let now = now_ms();
        let record = IntegrationRecord {
            slug: slug.to_owned(),
            plugin_id: plugin_id.to_owned(),
            name: Some(name),
            description,
            config: serde_json::to_value(config)
                .map_err(|e| EngineError::Internal(e.to_string()))?,
            can_remove: true,
            can_refresh: true,
            config_revised_at: Some(now),
            created_at: now,
            updated_at: now,
        };
        match self
            .inner
            .store
            .insert_integration(caller.scope(), &record)
            .await
        {
            Ok(()) => {
                self.catalog_changed();
                Ok(())
            }
            Err(executor_store::StoreError::AlreadyExists) => {
                Err(EngineError::IntegrationAlreadyExists {
                    slug: slug.to_owned(),
                })
            }
            Err(e) => Err(e.into()),
        }
    }
}

impl Engine {
    /// `Ok` when the caller may make this server fetch `url` to learn what is there (the MCP
    /// and OAuth probes, the OpenAPI preview): workspace admins and local owners any URL, since
    /// adding an integration is theirs; a member only the OAuth metadata of an MCP server that
    /// is already in the catalog, which connecting with OAuth needs (issue #39: members made the
    /// server fetch any URL through these).
    pub(crate) async fn ensure_may_probe(
        &self,
        caller: &Caller,
        url: &str,
        oauth_of_catalog: bool,
    ) -> EngineResult<()> {
        if self.may_write_org(caller).await? {
            return Ok(());
        }
        if oauth_of_catalog {
            let records = self.inner.store.list_integrations(caller.scope()).await?;
            let wanted = url.trim();
            if records.iter().any(|r| {
                r.plugin_id == crate::kinds::mcp::PLUGIN_ID
                    && crate::kinds::mcp::display_url(&r.config).as_deref() == Some(wanted)
            }) {
                return Ok(());
            }
        }
        self.audit_denied(caller, "catalog.probe", "catalog", "probe a server");
        Err(EngineError::OrgWriteDenied {
            message: "Only workspace admins can make the server look at a URL that is not one of                       the workspace's integrations. Ask an admin to add it."
                .to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pasted(v: &str) -> InputOrigin {
        InputOrigin::Value(v.to_owned())
    }

    fn item(provider: &str, id: &str) -> InputOrigin {
        InputOrigin::From {
            provider: provider.to_owned(),
            id: id.to_owned(),
        }
    }

    fn resolve(inputs: &[(&str, InputOrigin)], template: &str) -> Result<ResolvedInputs, String> {
        CredentialOrigin::Inputs(
            inputs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), v.clone()))
                .collect(),
        )
        .resolve(template)
        .map_err(|e| e.to_string())
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn inputs_share_one_provider() {
        assert_eq!(
            resolve(&[("token", pasted("t")), ("user", pasted("u"))], "apikey"),
            Ok(ResolvedInputs::Pasted(map(&[
                ("token", "t"),
                ("user", "u")
            ])))
        );
        assert_eq!(
            resolve(
                &[("a", item("file", "A")), ("b", item("file", "B"))],
                "apikey"
            ),
            Ok(ResolvedInputs::External {
                provider: "file".to_owned(),
                items: map(&[("a", "A"), ("b", "B")]),
            })
        );
        assert_eq!(
            resolve(&[("a", pasted("x")), ("b", item("file", "B"))], "apikey"),
            Err("A connection cannot mix pasted and external-provider inputs.".to_owned())
        );
        assert_eq!(
            resolve(
                &[("a", item("file", "A")), ("b", item("vault", "B"))],
                "apikey"
            ),
            Err("A connection's inputs must all use the same external provider.".to_owned())
        );
        // Empty pastes are no input: allowed for `none`, refused otherwise.
        assert_eq!(
            resolve(&[("token", pasted(""))], "none"),
            Ok(ResolvedInputs::Pasted(BTreeMap::new()))
        );
        assert_eq!(
            resolve(&[], "apikey"),
            Err("A connection must supply at least one credential input.".to_owned())
        );
        // A value for "none" would be stored and never sent (issue #18): refused.
        assert!(
            resolve(&[("token", pasted("ghp_x"))], "none")
                .unwrap_err()
                .contains("takes no credential")
        );
        assert!(resolve(&[("token", item("file", "T"))], "none").is_err());
        assert_eq!(
            resolve(&[("a", pasted("")), ("b", item("file", "B"))], "apikey"),
            Ok(ResolvedInputs::External {
                provider: "file".to_owned(),
                items: map(&[("b", "B")]),
            })
        );
    }
}
