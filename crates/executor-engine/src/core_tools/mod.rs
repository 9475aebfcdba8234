//! What the sandbox offers besides integration tools: `tools.search`, `tools.describe.tool`,
//! `tools.executor.integrations.list`, and the static core tools under `executor.coreTools.*`.
//! They run through the dispatcher like every other call. Core tools call the same engine
//! operations as the HTTP routes (`connections.rs`, `oauth.rs` here hold their argument
//! parsing and result shapes).

mod connections;
mod oauth;

use std::sync::Arc;

use executor_core::policy::{PolicyAction, PolicyAuthor};
use executor_core::search::{SearchEntry, SearchIndex, SearchQuery, suggest};
use executor_core::{Owner, ToolError, ToolOutcome};
use executor_sandbox::HostReply;
use serde_json::{Map, Value, json};

use crate::caller::Caller;
use crate::error::{EngineError, EngineResult};
use crate::static_tool::StaticTool;
use crate::{Engine, Inner};

/// Default page size of search and listings called from the sandbox.
const DEFAULT_LIMIT: usize = 12;

fn no_input() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

fn integrations_list_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words that must all appear in the slug, description or kind."},
            "limit": {"type": "integer", "minimum": 1},
            "offset": {"type": "integer", "minimum": 0}
        },
        "additionalProperties": false
    })
}

fn providers_items_input() -> Value {
    json!({
        "type": "object",
        "properties": {"provider": {"type": "string"}},
        "required": ["provider"],
        "additionalProperties": false
    })
}

/// The static tools of this build (spec §4.4, without `integrations.detect`: the engine has no
/// detection yet). Writes that bind credentials, mint connections or change what runs without
/// asking require approval, and so does `oauth.probe` (it makes the server fetch the URL the
/// code names, so unasked it would let agent code reach internal addresses); reads and browser
/// handoffs do not.
pub(crate) const STATIC_TOOLS: &[StaticTool] = &[
    StaticTool {
        fqid: "executor.coreTools.integrations.list",
        description: "List the integrations in the catalog with their tool counts.",
        input_schema: integrations_list_input,
        requires_approval: false,
        needs_person: false,
    },
    StaticTool {
        fqid: "executor.coreTools.connections.list",
        description: "List saved connections (credentials) and their tool addresses; never their values. OAuth scopes are counted (oauthScopeCount); verbose: true adds the granted scope string.",
        input_schema: connections::list_input,
        requires_approval: false,
        needs_person: false,
    },
    StaticTool {
        fqid: "executor.coreTools.connections.create",
        description: "Create a connection (replace: true replaces one of the same name): { owner, name, integration, template, from: { provider, id } } or inputs: { <variable>: { provider, id } | \"<pasted value>\" } (one provider for all inputs). template \"none\" needs no origin. For API keys a person should type, use connections.createHandoff; for OAuth, oauth.start.",
        input_schema: connections::create_input,
        requires_approval: true,
        needs_person: true,
    },
    StaticTool {
        fqid: "executor.coreTools.connections.createHandoff",
        description: "Get a browser URL that opens the Add account form of an integration, so the user enters the credential in the web UI instead of the chat: { integration, owner?, template?, label? }.",
        input_schema: connections::handoff_input,
        requires_approval: false,
        needs_person: false,
    },
    StaticTool {
        fqid: "executor.coreTools.connections.remove",
        description: "Remove a connection and its tools: { owner, integration, name }.",
        input_schema: connections::ref_input,
        requires_approval: true,
        needs_person: true,
    },
    StaticTool {
        fqid: "executor.coreTools.connections.refresh",
        description: "List a connection's tools again from its integration: { owner, integration, name }. Returns the tools and the connection's health (a failed sync keeps the old tools and says why).",
        input_schema: connections::ref_input,
        requires_approval: true,
        needs_person: false,
    },
    StaticTool {
        fqid: "executor.coreTools.providers.list",
        description: "List the credential providers connections can read secrets from.",
        input_schema: no_input,
        requires_approval: false,
        needs_person: false,
    },
    StaticTool {
        fqid: "executor.coreTools.providers.items",
        description: "List the items a credential provider holds (names only, never values).",
        input_schema: providers_items_input,
        requires_approval: false,
        needs_person: false,
    },
    StaticTool {
        fqid: "executor.coreTools.oauth.clients.list",
        description: "List registered OAuth clients (never their secrets).",
        input_schema: no_input,
        requires_approval: false,
        needs_person: false,
    },
    StaticTool {
        fqid: "executor.coreTools.oauth.clients.create",
        description: "Register or replace an OAuth client without a secret (a public PKCE client): { owner, slug, grant, clientId, tokenUrl, authorizationUrl?, resource? }. For a client with a secret, use oauth.clients.createHandoff.",
        input_schema: oauth::clients_create_input,
        requires_approval: true,
        needs_person: true,
    },
    StaticTool {
        fqid: "executor.coreTools.oauth.clients.createHandoff",
        description: "Get a browser URL that opens the Register OAuth app form of an integration, pre-filled with the non-secret fields, so the user enters the client secret in the web UI.",
        input_schema: oauth::clients_handoff_input,
        requires_approval: false,
        needs_person: false,
    },
    StaticTool {
        fqid: "executor.coreTools.oauth.clients.registerDynamic",
        description: "Register an OAuth client by RFC 7591 dynamic registration (reused for the same issuer, resource and redirect URI); take the endpoints from oauth.probe.",
        input_schema: oauth::clients_register_input,
        requires_approval: true,
        needs_person: true,
    },
    StaticTool {
        fqid: "executor.coreTools.oauth.clients.remove",
        description: "Remove an OAuth client: { owner, slug }. Its connections stay and fail at their next refresh.",
        input_schema: oauth::clients_remove_input,
        requires_approval: true,
        needs_person: true,
    },
    StaticTool {
        fqid: "executor.coreTools.oauth.probe",
        description: "Discover OAuth endpoints for a URL (RFC 9728 protected resource, then RFC 8414 / OIDC metadata).",
        input_schema: oauth::probe_input,
        requires_approval: true,
        needs_person: true,
    },
    StaticTool {
        fqid: "executor.coreTools.oauth.start",
        description: "Start OAuth for a new connection with a registered client. Client credentials connect at once (status connected); authorization code returns an authorizationUrl for the user to open (status redirect).",
        input_schema: oauth::start_input,
        requires_approval: true,
        needs_person: true,
    },
    StaticTool {
        fqid: "executor.coreTools.oauth.cancel",
        description: "Cancel a pending OAuth sign-in by its state.",
        input_schema: oauth::cancel_input,
        requires_approval: false,
        needs_person: false,
    },
    StaticTool {
        fqid: "executor.coreTools.policies.list",
        description: "List tool policies (approve, require_approval, block), most specific first.",
        input_schema: no_input,
        requires_approval: false,
        needs_person: false,
    },
    StaticTool {
        fqid: "executor.coreTools.policies.create",
        description: "Create a tool policy: { owner, pattern, action: approve | require_approval | block, position? }. Patterns are <integration>.<owner>.<connection>.<tool> with whole-segment * wildcards.",
        input_schema: policy_create_input,
        requires_approval: true,
        needs_person: true,
    },
    StaticTool {
        fqid: "executor.coreTools.policies.update",
        description: "Change a tool policy's pattern, action or position: { owner, id, pattern?, action?, position? }.",
        input_schema: policy_update_input,
        requires_approval: true,
        needs_person: true,
    },
    StaticTool {
        fqid: "executor.coreTools.policies.remove",
        description: "Remove a tool policy: { owner, id }.",
        input_schema: policy_remove_input,
        requires_approval: true,
        needs_person: true,
    },
];

fn policy_create_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "owner": {"type": "string", "enum": ["org", "user"]},
            "pattern": {"type": "string", "description": "e.g. github.*.*.issues.* or *"},
            "action": {"type": "string", "enum": ["approve", "require_approval", "block"]},
            "position": {"type": "string", "description": "Fractional-index key; lower runs first. Omit for the default by specificity."}
        },
        "required": ["owner", "pattern", "action"],
        "additionalProperties": false
    })
}

fn policy_update_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "owner": {"type": "string", "enum": ["org", "user"]},
            "id": {"type": "string"},
            "pattern": {"type": "string"},
            "action": {"type": "string", "enum": ["approve", "require_approval", "block"]},
            "position": {"type": "string"}
        },
        "required": ["owner", "id"],
        "additionalProperties": false
    })
}

fn policy_remove_input() -> Value {
    json!({
        "type": "object",
        "properties": {"owner": {"type": "string", "enum": ["org", "user"]}, "id": {"type": "string"}},
        "required": ["owner", "id"],
        "additionalProperties": false
    })
}

pub(crate) fn static_tool(fqid: &str) -> Option<&'static StaticTool> {
    crate::static_tool::find(STATIC_TOOLS, fqid)
}

/// The helpers that describe themselves in `describe.tool`.
const HELPERS: &[(&str, &str)] = &[
    (
        "search",
        "Search the tool catalog: tools.search({ query, namespace?, limit?, offset? }).",
    ),
    (
        "describe.tool",
        "Describe one tool with TypeScript types: tools.describe.tool({ path }).",
    ),
    (
        "executor.integrations.list",
        "List integrations: tools.executor.integrations.list({ query?, limit?, offset? }).",
    ),
];

/// Sandbox helpers (not tools: no policy applies); `None` means "not a helper".
pub(crate) async fn dispatch_helper(
    inner: &Arc<Inner>,
    caller: &Caller,
    path: &str,
    args: &Value,
) -> Option<HostReply> {
    let engine = Engine {
        inner: inner.clone(),
    };
    let reply = match path {
        "search" => search(&engine, caller, args).await,
        "describe.tool" => describe(&engine, caller, args).await,
        "executor.integrations.list" => integrations_list(&engine, caller, args).await,
        _ => return None,
    };
    Some(match reply {
        Ok(Ok(data)) => HostReply::Resolve(data),
        Ok(Err(message)) => HostReply::Reject(message),
        Err(e) => HostReply::Reject(crate::error::internal_tool_error(&e.to_string())),
    })
}

/// Runs a static core tool (after the dispatcher's policy gate). Core tools answer with the
/// result union: bad arguments are `invalid_tool_arguments` and the engine's user-actionable
/// errors carry their own codes, never a throw; only defects reject (opaquely).
pub(crate) async fn run_static(
    engine: &Engine,
    caller: &Caller,
    tool: &StaticTool,
    args: &Value,
) -> HostReply {
    let reply: CoreResult = match tool.fqid {
        "executor.coreTools.integrations.list" => {
            legacy(integrations_list(engine, caller, args).await)
        }
        "executor.coreTools.connections.list" => connections::list(engine, caller, args).await,
        "executor.coreTools.connections.create" => connections::create(engine, caller, args).await,
        "executor.coreTools.connections.createHandoff" => {
            connections::create_handoff(engine, caller, args).await
        }
        "executor.coreTools.connections.remove" => connections::remove(engine, caller, args).await,
        "executor.coreTools.connections.refresh" => {
            connections::refresh(engine, caller, args).await
        }
        "executor.coreTools.providers.list" => Ok(json!(engine.list_providers(caller))),
        "executor.coreTools.providers.items" => legacy(providers_items(engine, caller, args).await),
        "executor.coreTools.oauth.clients.list" => oauth::clients_list(engine, caller).await,
        "executor.coreTools.oauth.clients.create" => {
            oauth::clients_create(engine, caller, args).await
        }
        "executor.coreTools.oauth.clients.createHandoff" => {
            oauth::clients_create_handoff(engine, caller, args).await
        }
        "executor.coreTools.oauth.clients.registerDynamic" => {
            oauth::clients_register_dynamic(engine, caller, args).await
        }
        "executor.coreTools.oauth.clients.remove" => {
            oauth::clients_remove(engine, caller, args).await
        }
        "executor.coreTools.oauth.probe" => oauth::probe(engine, caller, args).await,
        "executor.coreTools.oauth.start" => oauth::start(engine, caller, args).await,
        "executor.coreTools.oauth.cancel" => oauth::cancel(engine, caller, args).await,
        "executor.coreTools.policies.list" => legacy(policies_list(engine, caller).await),
        "executor.coreTools.policies.create" => legacy(policies_create(engine, caller, args).await),
        "executor.coreTools.policies.update" => policies_update(engine, caller, args).await,
        "executor.coreTools.policies.remove" => policies_remove(engine, caller, args).await,
        other => Err(EngineError::Internal(format!("static tool {other} has no handler")).into()),
    };
    match reply {
        Ok(data) => HostReply::Resolve(ToolOutcome::ok(data).to_json()),
        Err(CoreFailure::Tool(error)) => HostReply::Resolve(ToolOutcome::Err(*error).to_json()),
        Err(CoreFailure::Engine(e)) => engine_failure(&e),
    }
}

/// An engine error as the sandbox sees it: a tool error value, or an opaque internal error.
pub(crate) fn engine_failure(e: &EngineError) -> HostReply {
    match tool_error(e) {
        Some(error) => HostReply::Resolve(ToolOutcome::Err(error).to_json()),
        None => HostReply::Reject(crate::error::internal_tool_error(&e.to_string())),
    }
}

/// Why a core tool did not answer: a tool-level error for the result union, or an engine error
/// still to be mapped (by [`tool_error`]) or hidden (defects).
pub(super) enum CoreFailure {
    Tool(Box<ToolError>),
    Engine(EngineError),
}

impl From<Box<ToolError>> for CoreFailure {
    fn from(e: Box<ToolError>) -> Self {
        CoreFailure::Tool(e)
    }
}

impl From<EngineError> for CoreFailure {
    fn from(e: EngineError) -> Self {
        CoreFailure::Engine(e)
    }
}

pub(super) type CoreResult = Result<Value, CoreFailure>;

fn legacy(result: BuiltinResult) -> CoreResult {
    match result {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(message)) => Err(Box::new(ToolError::new("invalid_tool_arguments", message)).into()),
        Err(e) => Err(e.into()),
    }
}

/// The engine errors a caller can act on, as the codes the sandbox sees (the HTTP API's tags
/// in snake case); `None` for defects.
fn tool_error(e: &EngineError) -> Option<ToolError> {
    let (code, message) = match e {
        EngineError::InvalidPolicy { message } | EngineError::InvalidInput { message } => {
            ("invalid_tool_arguments", message.clone())
        }
        EngineError::PolicyNotFound { id } => {
            ("policy_not_found", format!("Policy not found: {id}"))
        }
        EngineError::InvalidConnectionInput { message } => {
            ("invalid_connection_input", message.clone())
        }
        EngineError::IntegrationNotFound { slug } => (
            "integration_not_found",
            format!("Integration not found: {slug}"),
        ),
        EngineError::ConnectionNotFound {
            owner,
            integration,
            name,
        } => (
            "connection_not_found",
            format!(
                "Connection not found: {}",
                executor_core::address::connection_address(integration, *owner, name)
            ),
        ),
        EngineError::CredentialProviderNotRegistered { provider } => (
            "credential_provider_not_registered",
            format!("Credential provider not registered: {provider} (see providers.list)"),
        ),
        EngineError::OAuth { tag, message } => {
            return Some(ToolError::new(snake_tag(tag), message.clone()));
        }
        EngineError::OrgWriteDenied { message } => ("org_write_denied", message.clone()),
        EngineError::StdioMcpDisabled { message } => ("stdio_mcp_disabled", message.clone()),
        EngineError::OAuthSessionNotFound { state } => (
            "oauth_session_not_found",
            format!("No pending OAuth sign-in with state {state} (used, cancelled or expired)."),
        ),
        _ => return None,
    };
    Some(ToolError::new(code, message))
}

/// The rows a core tool writes, when it writes any: `Some(owner)` (or `Some(None)` for the
/// catalog) and what it does, for the role check the dispatcher makes before asking a person
/// (a call that must fail is not worth an approval). `None` for reads, handoffs (a person
/// finishes them elsewhere) and arguments without a readable owner (the tool refuses those).
pub(crate) fn writes(fqid: &str, args: &Value) -> Option<(Option<Owner>, &'static str)> {
    let what = match fqid {
        "executor.coreTools.policies.create" => "create workspace policies",
        "executor.coreTools.policies.update" => "change workspace policies",
        "executor.coreTools.policies.remove" => "remove workspace policies",
        "executor.coreTools.connections.create" => "create workspace connections",
        "executor.coreTools.connections.remove" => "remove workspace connections",
        "executor.coreTools.oauth.clients.create"
        | "executor.coreTools.oauth.clients.registerDynamic" => "add workspace OAuth apps",
        "executor.coreTools.oauth.clients.remove" => "remove workspace OAuth apps",
        "executor.coreTools.oauth.start" => "create workspace connections",
        _ => return None,
    };
    let owner = args.get("owner")?.as_str()?.parse::<Owner>().ok()?;
    Some((Some(owner), what))
}

/// `OAuthStartError` → `oauth_start_error`.
fn snake_tag(tag: &str) -> String {
    let mut out = String::new();
    for (i, c) in tag.replacen("OAuth", "Oauth", 1).chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// `<web base>/integrations/<integration>?<query>`: a page of the web UI for a person to open.
fn web_link(
    engine: &Engine,
    integration: &str,
    query: &[(&str, String)],
) -> Result<String, Box<ToolError>> {
    let base = engine.web_base_url().ok_or_else(|| {
        Box::new(ToolError::new(
            "web_ui_unavailable",
            "No web address is known for this executor: run `executor web` (or set \
             EXECUTOR_WEB_BASE_URL) so the user has a page to open.",
        ))
    })?;
    let path: String = url::form_urlencoded::byte_serialize(integration.as_bytes()).collect();
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())))
        .finish();
    Ok(format!("{base}/integrations/{path}?{query}"))
}

/// A core tool's arguments: an object (or nothing), read key by key with messages that name the
/// tool. Unknown keys are refused, so a typo (or a smuggled secret) is not silently dropped.
pub(super) struct Args<'a> {
    tool: &'static str,
    map: Option<&'a Map<String, Value>>,
}

impl<'a> Args<'a> {
    pub(super) fn new(
        tool: &'static str,
        args: &'a Value,
        known: &[&str],
    ) -> Result<Self, Box<ToolError>> {
        let invalid = |m: String| Box::new(ToolError::new("invalid_tool_arguments", m));
        let map = object_args(tool, args).map_err(invalid)?;
        if let Some(unknown) = map.and_then(|m| m.keys().find(|k| !known.contains(&k.as_str()))) {
            return Err(invalid(format!(
                "{tool}: unknown argument `{unknown}`; it takes {}.",
                known.join(", ")
            )));
        }
        Ok(Args { tool, map })
    }

    pub(super) fn invalid(&self, message: &str) -> Box<ToolError> {
        Box::new(ToolError::new(
            "invalid_tool_arguments",
            format!("{}: {message}", self.tool),
        ))
    }

    /// A present, non-null value.
    pub(super) fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.and_then(|m| m.get(key)).filter(|v| !v.is_null())
    }

    pub(super) fn str(&self, key: &str) -> Result<Option<String>, Box<ToolError>> {
        string_arg(self.map, self.tool, key)
            .map_err(|m| Box::new(ToolError::new("invalid_tool_arguments", m)))
    }

    pub(super) fn required(&self, key: &str) -> Result<String, Box<ToolError>> {
        self.str(key)?
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| self.invalid(&format!("`{key}` is required")))
    }

    pub(super) fn opt_owner(&self, key: &str) -> Result<Option<Owner>, Box<ToolError>> {
        self.str(key)?
            .map(|o| {
                o.parse()
                    .map_err(|_| self.invalid(&format!("`{key}` must be \"org\" or \"user\"")))
            })
            .transpose()
    }

    pub(super) fn owner(&self, key: &str) -> Result<Owner, Box<ToolError>> {
        self.opt_owner(key)?
            .ok_or_else(|| self.invalid(&format!("`{key}` is required (\"org\" or \"user\")")))
    }

    pub(super) fn bool(&self, key: &str) -> Result<Option<bool>, Box<ToolError>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(self.invalid(&format!("`{key}` must be a boolean, got {other}"))),
        }
    }

    pub(super) fn strings(&self, key: &str) -> Result<Option<Vec<String>>, Box<ToolError>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .map(Some)
                .ok_or_else(|| self.invalid(&format!("`{key}` must be an array of strings"))),
            Some(other) => {
                Err(self.invalid(&format!("`{key}` must be an array of strings, got {other}")))
            }
        }
    }
}

/// `[{id, name}]` of a provider: names only, never values; empty for unknown providers.
async fn providers_items(engine: &Engine, caller: &Caller, args: &Value) -> BuiltinResult {
    const T: &str = "executor.coreTools.providers.items";
    let provider = match object_args(T, args).and_then(|map| string_arg(map, T, "provider")) {
        Ok(Some(provider)) => provider,
        Ok(None) => return Ok(Err(format!("{T}: provider is required"))),
        Err(message) => return Ok(Err(message)),
    };
    let items = engine.provider_items(caller, &provider).await?;
    Ok(Ok(Value::Array(
        items
            .into_iter()
            .map(|item| json!({"id": item.id, "name": item.name}))
            .collect(),
    )))
}

pub(crate) fn policy_json(p: &crate::PolicyView) -> Value {
    json!({
        "id": p.id, "owner": p.owner.as_str(), "pattern": p.pattern, "action": p.action.as_str(),
        "position": p.position, "createdAt": p.created_at, "updatedAt": p.updated_at, "matches": p.matches,
        "author": p.author.as_str(),
    })
}

async fn policies_list(engine: &Engine, caller: &Caller) -> BuiltinResult {
    let list = engine.list_policies(caller).await?;
    Ok(Ok(
        json!({"items": list.iter().map(policy_json).collect::<Vec<_>>()}),
    ))
}

fn owner_arg(map: Option<&Map<String, Value>>, tool: &str) -> Result<executor_core::Owner, String> {
    match string_arg(map, tool, "owner")? {
        Some(o) => o
            .parse()
            .map_err(|_| format!("{tool}: owner must be \"org\" or \"user\"")),
        None => Err(format!("{tool}: owner is required (\"org\" or \"user\")")),
    }
}

async fn policies_create(engine: &Engine, caller: &Caller, args: &Value) -> BuiltinResult {
    const T: &str = "executor.coreTools.policies.create";
    let parsed = (|| {
        let map = object_args(T, args)?;
        let owner = owner_arg(map, T)?;
        let pattern = string_arg(map, T, "pattern")?.ok_or(format!("{T}: pattern is required"))?;
        let action = string_arg(map, T, "action")?.ok_or(format!("{T}: action is required"))?;
        Ok::<_, String>((owner, pattern, action, string_arg(map, T, "position")?))
    })();
    let (owner, pattern, action, position) = match parsed {
        Ok(v) => v,
        Err(message) => return Ok(Err(message)),
    };
    // Recorded as the agent's: it can tighten anything but never loosen a person's block.
    let created = engine
        .create_policy_by(
            caller,
            PolicyAuthor::Agent,
            owner,
            &pattern,
            &action,
            position,
        )
        .await?;
    Ok(Ok(policy_json(&created)))
}

async fn policies_update(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    const T: &str = "executor.coreTools.policies.update";
    let parsed = (|| {
        let map = object_args(T, args)?;
        let owner = owner_arg(map, T)?;
        let id = string_arg(map, T, "id")?.ok_or(format!("{T}: id is required"))?;
        Ok::<_, String>((
            owner,
            id,
            string_arg(map, T, "pattern")?,
            string_arg(map, T, "action")?,
            string_arg(map, T, "position")?,
        ))
    })();
    let (owner, id, pattern, action, position) =
        parsed.map_err(|m| Box::new(ToolError::new("invalid_tool_arguments", m)))?;
    agent_may_change(engine, caller, owner, &id).await?;
    let updated = engine
        .update_policy(
            caller,
            &id,
            owner,
            pattern.as_deref(),
            action.as_deref(),
            position,
        )
        .await?;
    Ok(policy_json(&updated))
}

async fn policies_remove(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    const T: &str = "executor.coreTools.policies.remove";
    let parsed = (|| {
        let map = object_args(T, args)?;
        let owner = owner_arg(map, T)?;
        let id = string_arg(map, T, "id")?.ok_or(format!("{T}: id is required"))?;
        Ok::<_, String>((owner, id))
    })();
    let (owner, id) = parsed.map_err(|m| Box::new(ToolError::new("invalid_tool_arguments", m)))?;
    agent_may_change(engine, caller, owner, &id).await?;
    engine.remove_policy(caller, owner, &id).await?;
    Ok(json!({"removed": true}))
}

/// An agent changes only the rules agents wrote: editing or removing a person's rule from an
/// execution would loosen it as surely as an `approve` rule above it. (An author never changes.)
async fn agent_may_change(
    engine: &Engine,
    caller: &Caller,
    owner: Owner,
    id: &str,
) -> Result<(), CoreFailure> {
    if engine.policy_author(caller, owner, id).await? == Some(PolicyAuthor::Person) {
        return Err(Box::new(ToolError::new(
            "policy_written_by_person",
            format!(
                "Policy {id} was written by a person; an agent may change or remove only the \
                 rules agents wrote. Ask the user to change it in the web UI or the HTTP API."
            ),
        ))
        .into());
    }
    Ok(())
}

/// `Ok(Err(message))` = bad arguments, thrown in the sandbox.
type BuiltinResult = EngineResult<Result<Value, String>>;

/// Checks a static tool's arguments against its input schema before the policy gate, so a call
/// that must fail never asks a person for approval (spec §4.7): an object, no unknown keys when
/// the schema closes them, the required keys present, and each given key of the declared JSON
/// type and enum. The tool's own parsing still runs after the gate for the finer rules.
pub(crate) fn check_args(tool: &StaticTool, args: &Value) -> Result<(), Box<ToolError>> {
    let invalid = |m: String| Box::new(ToolError::new("invalid_tool_arguments", m));
    let name = tool.fqid;
    let map = object_args(name, args).map_err(invalid)?;
    let schema = (tool.input_schema)();
    let properties = schema.get("properties").and_then(Value::as_object);
    let given = |key: &str| map.and_then(|m| m.get(key)).filter(|v| !v.is_null());
    if schema.get("additionalProperties") == Some(&Value::Bool(false))
        && let (Some(map), Some(properties)) = (map, properties)
        // A secret-looking key is left to the tool, whose refusal says where secrets go.
        && let Some(unknown) = map
            .keys()
            .find(|k| !properties.contains_key(k.as_str()) && !crate::error::is_secret_key(k))
    {
        let known: Vec<&str> = properties.keys().map(String::as_str).collect();
        return Err(invalid(format!(
            "{name}: unknown argument `{unknown}`; it takes {}.",
            known.join(", ")
        )));
    }
    for key in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if given(key).is_none() {
            return Err(invalid(format!("{name}: `{key}` is required")));
        }
    }
    for (key, property) in properties.into_iter().flatten() {
        let Some(value) = given(key) else { continue };
        let types: Vec<&str> = match property.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| json_type_matches(t, value)) {
            return Err(invalid(format!(
                "{name}: `{key}` must be {}, got {value}",
                types.join(" or ")
            )));
        }
        if let Some(allowed) = property.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(invalid(format!(
                "{name}: `{key}` must be one of {}, got {value}",
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

fn json_type_matches(expected: &str, value: &Value) -> bool {
    match expected {
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "integer" => value.as_f64().is_some_and(|f| f.fract() == 0.0),
        "number" => value.is_number(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        // A type this check does not know: leave it to the tool.
        _ => true,
    }
}

fn object_args<'a>(
    helper: &str,
    args: &'a Value,
) -> Result<Option<&'a Map<String, Value>>, String> {
    match args {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        other => Err(format!("{helper} expects an object: got {other}")),
    }
}

fn string_arg(
    map: Option<&Map<String, Value>>,
    helper: &str,
    key: &str,
) -> Result<Option<String>, String> {
    match map.and_then(|m| m.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("{helper}: `{key}` must be a string, got {other}")),
    }
}

fn count_arg(
    map: Option<&Map<String, Value>>,
    helper: &str,
    key: &str,
    positive: bool,
) -> Result<Option<usize>, String> {
    match map.and_then(|m| m.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            let ok = n
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= if positive { 1.0 } else { 0.0 });
            ok.map(|f| Some(f as usize)).ok_or_else(|| {
                format!(
                    "{helper}: `{key}` must be a {} integer, got {n}",
                    if positive { "positive" } else { "non-negative" }
                )
            })
        }
        Some(other) => Err(format!("{helper}: `{key}` must be a number, got {other}")),
    }
}

fn page_json<T>(items: Vec<T>, total: usize, offset: usize, to_json: impl Fn(T) -> Value) -> Value {
    let shown = items.len();
    let has_more = offset + shown < total;
    json!({
        "items": items.into_iter().map(to_json).collect::<Vec<_>>(),
        "total": total,
        "hasMore": has_more,
        "nextOffset": if has_more { json!(offset + shown) } else { Value::Null },
    })
}

async fn search(engine: &Engine, caller: &Caller, args: &Value) -> BuiltinResult {
    let parse = || -> Result<SearchQuery, String> {
        const H: &str = "tools.search";
        let map = object_args(H, args)?;
        Ok(SearchQuery {
            query: string_arg(map, H, "query")?.unwrap_or_default(),
            namespace: string_arg(map, H, "namespace")?.filter(|n| !n.is_empty()),
            limit: count_arg(map, H, "limit", true)?.unwrap_or(DEFAULT_LIMIT),
            offset: count_arg(map, H, "offset", false)?.unwrap_or(0),
        })
    };
    let query = match parse() {
        Ok(q) => q,
        Err(message) => return Ok(Err(message)),
    };
    let index = engine.search_index(caller).await?;
    let page = index.search(&query);
    let items: Vec<Value> = page
        .items
        .into_iter()
        .map(|hit| {
            let mut item = json!({"path": hit.path, "name": hit.name, "integration": hit.integration, "score": hit.score});
            if !hit.description.is_empty() {
                item["description"] = json!(hit.description);
            }
            item
        })
        .collect();
    Ok(Ok(json!({
        "items": items,
        "total": page.total,
        "hasMore": page.has_more,
        "nextOffset": page.next_offset,
    })))
}

async fn describe(engine: &Engine, caller: &Caller, args: &Value) -> BuiltinResult {
    const H: &str = "tools.describe.tool";
    let map = match object_args(H, args) {
        Ok(m) => m,
        Err(message) => return Ok(Err(message)),
    };
    if map.is_some_and(|m| m.contains_key("includeSchemas")) {
        return Ok(Err(format!(
            "{H}: `includeSchemas` is not supported; it always returns TypeScript types."
        )));
    }
    let path = match string_arg(map, H, "path") {
        Ok(Some(p)) if !p.trim().is_empty() => p.trim().trim_start_matches("tools.").to_owned(),
        Ok(_) => return Ok(Err(format!("{H} expects {{ path: string }}"))),
        Err(message) => return Ok(Err(message)),
    };
    if let Some((_, description)) = HELPERS.iter().find(|(p, _)| *p == path) {
        return Ok(Ok(
            json!({"path": path, "name": path, "description": description}),
        ));
    }
    let address = if static_tool(&path).is_some() {
        path.clone()
    } else {
        format!("tools.{path}")
    };
    let schema = match engine.tool_schema(caller, &address).await {
        Ok(schema) => schema,
        Err(crate::EngineError::ToolNotFound { .. }) => {
            let leaf = path.rsplit('.').next().unwrap_or(&path);
            let namespace = path.split('.').next().filter(|n| *n != leaf);
            let mut suggestions = suggest(&*engine.search_index(caller).await?, leaf, namespace, 5);
            if suggestions.is_empty() {
                suggestions = engine.suggestions(caller, leaf, None).await;
            }
            let mut error =
                json!({"code": "tool_not_found", "message": format!("Tool not found: {path}")});
            if !suggestions.is_empty() {
                error["suggestions"] = json!(suggestions);
            }
            return Ok(Ok(json!({"path": path, "error": error})));
        }
        Err(e) => return Err(e),
    };
    let mut body = json!({
        "path": path,
        "name": schema.name,
        "outputTypeScript": schema.types.output,
        "typeScriptDefinitions": schema.types.definitions,
    });
    if !schema.description.is_empty() {
        body["description"] = json!(schema.description);
    }
    if let Some(input) = schema.types.input {
        body["inputTypeScript"] = json!(input);
    }
    Ok(Ok(body))
}

async fn integrations_list(engine: &Engine, caller: &Caller, args: &Value) -> BuiltinResult {
    const H: &str = "tools.executor.integrations.list";
    let map = match object_args(H, args) {
        Ok(m) => m,
        Err(message) => return Ok(Err(message)),
    };
    let (query, limit, offset) = match (|| {
        Ok::<_, String>((
            string_arg(map, H, "query")?
                .unwrap_or_default()
                .to_lowercase(),
            count_arg(map, H, "limit", true)?.unwrap_or(DEFAULT_LIMIT),
            count_arg(map, H, "offset", false)?.unwrap_or(0),
        ))
    })() {
        Ok(v) => v,
        Err(message) => return Ok(Err(message)),
    };
    let integrations = engine.list_integrations(caller).await?;
    // Inside a toolkit only what it exposes is counted, and an integration with nothing
    // exposed is not listed (spec §1.9).
    let in_toolkit = caller.toolkit().is_some();
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for tool in engine
        .list_tools(
            caller,
            &crate::ToolListFilter {
                exclude_blocked: in_toolkit,
                ..crate::ToolListFilter::default()
            },
        )
        .await?
    {
        *counts.entry(tool.integration).or_default() += 1;
    }
    let words: Vec<&str> = query.split_whitespace().collect();
    let mut matching: Vec<_> = integrations
        .into_iter()
        .filter(|i| !in_toolkit || counts.contains_key(&i.slug))
        .filter(|i| {
            let hay = format!("{} {} {}", i.slug, i.description, i.kind).to_lowercase();
            words.iter().all(|w| hay.contains(w))
        })
        .collect();
    matching.sort_by(|a, b| a.slug.cmp(&b.slug));
    let total = matching.len();
    let page: Vec<_> = matching.into_iter().skip(offset).take(limit).collect();
    Ok(Ok(page_json(page, total, offset, |i| {
        let tool_count = counts.get(&i.slug).copied().unwrap_or(0);
        let mut item = json!({
            "id": i.slug, "name": i.slug, "kind": i.kind,
            "canRemove": i.can_remove, "canRefresh": i.can_refresh, "toolCount": tool_count,
        });
        if !i.description.is_empty() && i.description != i.slug {
            item["description"] = json!(i.description);
        }
        item
    })))
}

/// The search index over every visible tool, rebuilt when the catalog's generation moves.
#[derive(Default)]
pub(crate) struct IndexCache {
    /// By tenant, subject and policy source (blocked tools are left out).
    indexes: crate::cache::PerKey<crate::caller::PolicyKey, SearchIndex>,
}

impl Engine {
    pub(crate) async fn search_index(&self, caller: &Caller) -> EngineResult<Arc<SearchIndex>> {
        let generation = self
            .inner
            .catalog_generation
            .load(std::sync::atomic::Ordering::Acquire);
        self.inner
            .search_index
            .indexes
            .get_or_build(caller.policy_key(), generation, || {
                self.build_search_index(caller)
            })
            .await
    }

    async fn build_search_index(&self, caller: &Caller) -> EngineResult<SearchIndex> {
        let tools = self
            .inner
            .store
            .list_tools(caller.scope(), &executor_store::ToolFilter::default())
            .await?;
        // Blocked tools are invisible to agents: not searchable, not describable.
        let policies = self.policy_set(caller).await?;
        let visible = |id: &str| policies.resolve(id, false).action() != PolicyAction::Block;
        let mut entries: Vec<SearchEntry> = STATIC_TOOLS
            .iter()
            .filter(|t| visible(t.fqid))
            .map(|t| SearchEntry {
                path: t.fqid.to_owned(),
                name: t.name().to_owned(),
                description: t.description.to_owned(),
                integration: crate::BUILTIN_INTEGRATION.to_owned(),
            })
            .collect();
        entries.extend(
            tools
                .into_iter()
                .map(|t| (t.address().path(), t))
                .filter(|(path, _)| visible(path))
                .map(|(path, t)| SearchEntry {
                    path,
                    name: t.name,
                    description: t.description,
                    integration: t.integration,
                }),
        );
        Ok(SearchIndex::new(entries))
    }

    /// Tool-not-found suggestions from the ranked search.
    pub(crate) async fn suggestions(
        &self,
        caller: &Caller,
        leaf: &str,
        namespace: Option<&str>,
    ) -> Vec<String> {
        match self.search_index(caller).await {
            Ok(index) => suggest(&index, leaf, namespace, 5),
            Err(_) => Vec::new(),
        }
    }
}
