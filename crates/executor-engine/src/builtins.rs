//! What the sandbox offers besides integration tools: `tools.search`, `tools.describe.tool`,
//! `tools.executor.integrations.list`, and the static core tools under `executor.coreTools.*`.
//! They run through the dispatcher like every other call.

use std::sync::Arc;

use executor_core::ToolOutcome;
use executor_core::policy::PolicyAction;
use executor_core::search::{SearchEntry, SearchIndex, SearchQuery, suggest};
use executor_sandbox::HostReply;
use serde_json::{Map, Value, json};

use crate::error::EngineResult;
use crate::{Engine, Inner};

/// Listings show static tools under this connection of the built-in integration.
pub const STATIC_TOOL_CONNECTION: &str = "coreTools";

/// Default page size of search and listings called from the sandbox.
const DEFAULT_LIMIT: usize = 12;

/// A tool the product itself provides, addressed by its fqid (no `tools.` root).
pub(crate) struct StaticTool {
    /// e.g. `executor.coreTools.connections.list`
    pub(crate) fqid: &'static str,
    pub(crate) description: &'static str,
    pub(crate) input_schema: fn() -> Value,
    pub(crate) requires_approval: bool,
}

impl StaticTool {
    /// Name in listings: the fqid without `executor.`.
    pub(crate) fn name(&self) -> &'static str {
        self.fqid.strip_prefix("executor.").unwrap_or(self.fqid)
    }

    /// The list projection: owner `user` when the executor has a subject, else `org`.
    pub(crate) fn summary(&self, owner: executor_core::Owner) -> executor_store::ToolSummary {
        let mut annotations = json!({"static": true});
        if self.requires_approval {
            annotations["requiresApproval"] = json!(true);
        }
        executor_store::ToolSummary {
            integration: crate::BUILTIN_INTEGRATION.to_owned(),
            owner,
            connection: STATIC_TOOL_CONNECTION.to_owned(),
            plugin_id: "built-in".to_owned(),
            name: self.name().to_owned(),
            description: self.description.to_owned(),
            annotations: Some(annotations),
        }
    }
}

fn no_input() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

fn connections_list_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "integration": {"type": "string", "description": "Only connections of this integration slug."},
            "owner": {"type": "string", "enum": ["org", "user"]},
            "verbose": {"type": "boolean", "description": "Include OAuth scope details."}
        },
        "additionalProperties": false
    })
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

/// The static tools of this build. Approval-gated ones arrive with the policies work.
pub(crate) const STATIC_TOOLS: &[StaticTool] = &[
    StaticTool {
        fqid: "executor.coreTools.integrations.list",
        description: "List the integrations in the catalog with their tool counts.",
        input_schema: integrations_list_input,
        requires_approval: false,
    },
    StaticTool {
        fqid: "executor.coreTools.connections.list",
        description: "List saved connections (credentials) and their tool addresses.",
        input_schema: connections_list_input,
        requires_approval: false,
    },
    StaticTool {
        fqid: "executor.coreTools.providers.list",
        description: "List the credential providers connections can read secrets from.",
        input_schema: no_input,
        requires_approval: false,
    },
    StaticTool {
        fqid: "executor.coreTools.providers.items",
        description: "List the items a credential provider holds (names only, never values).",
        input_schema: providers_items_input,
        requires_approval: false,
    },
    StaticTool {
        fqid: "executor.coreTools.policies.list",
        description: "List tool policies (approve, require_approval, block), most specific first.",
        input_schema: no_input,
        requires_approval: false,
    },
    StaticTool {
        fqid: "executor.coreTools.policies.create",
        description: "Create a tool policy: { owner, pattern, action: approve | require_approval | block, position? }. Patterns are <integration>.<owner>.<connection>.<tool> with whole-segment * wildcards.",
        input_schema: policy_create_input,
        requires_approval: true,
    },
    StaticTool {
        fqid: "executor.coreTools.policies.update",
        description: "Change a tool policy's pattern, action or position: { owner, id, pattern?, action?, position? }.",
        input_schema: policy_update_input,
        requires_approval: true,
    },
    StaticTool {
        fqid: "executor.coreTools.policies.remove",
        description: "Remove a tool policy: { owner, id }.",
        input_schema: policy_remove_input,
        requires_approval: true,
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
    STATIC_TOOLS.iter().find(|t| t.fqid == fqid)
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
    path: &str,
    args: &Value,
) -> Option<HostReply> {
    let engine = Engine {
        inner: inner.clone(),
    };
    let reply = match path {
        "search" => search(&engine, args).await,
        "describe.tool" => describe(&engine, args).await,
        "executor.integrations.list" => integrations_list(&engine, args).await,
        _ => return None,
    };
    Some(match reply {
        Ok(Ok(data)) => HostReply::Resolve(data),
        Ok(Err(message)) => HostReply::Reject(message),
        Err(e) => HostReply::Reject(crate::dispatch::internal_tool_error(&e.to_string())),
    })
}

/// Runs a static core tool (after the dispatcher's policy gate). Core tools answer with the
/// result union: bad arguments are `invalid_tool_arguments`, never a throw.
pub(crate) async fn run_static(engine: &Engine, tool: &StaticTool, args: &Value) -> HostReply {
    let reply = match tool.fqid {
        "executor.coreTools.integrations.list" => integrations_list(engine, args).await,
        "executor.coreTools.connections.list" => connections_list(engine, args).await,
        "executor.coreTools.providers.list" => Ok(Ok(json!(engine.list_providers()))),
        "executor.coreTools.providers.items" => providers_items(engine, args).await,
        "executor.coreTools.policies.list" => policies_list(engine).await,
        "executor.coreTools.policies.create" => policies_create(engine, args).await,
        "executor.coreTools.policies.update" => policies_update(engine, args).await,
        "executor.coreTools.policies.remove" => policies_remove(engine, args).await,
        other => Err(crate::EngineError::Internal(format!(
            "static tool {other} has no handler"
        ))),
    };
    match reply {
        Ok(Ok(data)) => HostReply::Resolve(ToolOutcome::ok(data).to_json()),
        Ok(Err(message)) => HostReply::Resolve(
            ToolOutcome::Err(executor_core::ToolError::new(
                "invalid_tool_arguments",
                message,
            ))
            .to_json(),
        ),
        Err(crate::EngineError::InvalidPolicy { message }) => HostReply::Resolve(
            ToolOutcome::Err(executor_core::ToolError::new(
                "invalid_tool_arguments",
                message,
            ))
            .to_json(),
        ),
        Err(crate::EngineError::PolicyNotFound { id }) => HostReply::Resolve(
            ToolOutcome::Err(executor_core::ToolError::new(
                "policy_not_found",
                format!("Policy not found: {id}"),
            ))
            .to_json(),
        ),
        Err(e) => HostReply::Reject(crate::dispatch::internal_tool_error(&e.to_string())),
    }
}

/// `[{id, name}]` of a provider: names only, never values; empty for unknown providers.
async fn providers_items(engine: &Engine, args: &Value) -> BuiltinResult {
    const T: &str = "executor.coreTools.providers.items";
    let provider = match object_args(T, args).and_then(|map| string_arg(map, T, "provider")) {
        Ok(Some(provider)) => provider,
        Ok(None) => return Ok(Err(format!("{T}: provider is required"))),
        Err(message) => return Ok(Err(message)),
    };
    let items = engine.provider_items(&provider).await?;
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
    })
}

async fn policies_list(engine: &Engine) -> BuiltinResult {
    let list = engine.list_policies().await?;
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

async fn policies_create(engine: &Engine, args: &Value) -> BuiltinResult {
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
    let created = engine
        .create_policy(owner, &pattern, &action, position)
        .await?;
    Ok(Ok(policy_json(&created)))
}

async fn policies_update(engine: &Engine, args: &Value) -> BuiltinResult {
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
    let (owner, id, pattern, action, position) = match parsed {
        Ok(v) => v,
        Err(message) => return Ok(Err(message)),
    };
    let updated = engine
        .update_policy(&id, owner, pattern.as_deref(), action.as_deref(), position)
        .await?;
    Ok(Ok(policy_json(&updated)))
}

async fn policies_remove(engine: &Engine, args: &Value) -> BuiltinResult {
    const T: &str = "executor.coreTools.policies.remove";
    let parsed = (|| {
        let map = object_args(T, args)?;
        let owner = owner_arg(map, T)?;
        let id = string_arg(map, T, "id")?.ok_or(format!("{T}: id is required"))?;
        Ok::<_, String>((owner, id))
    })();
    let (owner, id) = match parsed {
        Ok(v) => v,
        Err(message) => return Ok(Err(message)),
    };
    engine.remove_policy(owner, &id).await?;
    Ok(Ok(json!({"removed": true})))
}

/// `Ok(Err(message))` = bad arguments, thrown in the sandbox.
type BuiltinResult = EngineResult<Result<Value, String>>;

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

async fn search(engine: &Engine, args: &Value) -> BuiltinResult {
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
    let index = engine.search_index().await?;
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

async fn describe(engine: &Engine, args: &Value) -> BuiltinResult {
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
    let schema = match engine.tool_schema(&address).await {
        Ok(schema) => schema,
        Err(crate::EngineError::ToolNotFound { .. }) => {
            let leaf = path.rsplit('.').next().unwrap_or(&path);
            let namespace = path.split('.').next().filter(|n| *n != leaf);
            let mut suggestions = suggest(&*engine.search_index().await?, leaf, namespace, 5);
            if suggestions.is_empty() {
                suggestions = engine.suggestions(leaf, None).await;
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

async fn integrations_list(engine: &Engine, args: &Value) -> BuiltinResult {
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
    let integrations = engine.list_integrations().await?;
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for tool in engine.list_tools(&crate::ToolListFilter::default()).await? {
        *counts.entry(tool.integration).or_default() += 1;
    }
    let words: Vec<&str> = query.split_whitespace().collect();
    let mut matching: Vec<_> = integrations
        .into_iter()
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

async fn connections_list(engine: &Engine, args: &Value) -> BuiltinResult {
    const H: &str = "executor.coreTools.connections.list";
    let map = match object_args(H, args) {
        Ok(m) => m,
        Err(message) => return Ok(Err(message)),
    };
    let (integration, owner) = match (|| {
        let owner = match string_arg(map, H, "owner")? {
            None => None,
            Some(o) => Some(
                o.parse()
                    .map_err(|_| format!("{H}: owner must be \"org\" or \"user\""))?,
            ),
        };
        Ok::<_, String>((string_arg(map, H, "integration")?, owner))
    })() {
        Ok(v) => v,
        Err(message) => return Ok(Err(message)),
    };
    let list = engine
        .list_connections(integration.as_deref(), owner)
        .await?;
    Ok(Ok(json!({
        "items": list.iter().map(|c| json!({
            "owner": c.owner.as_str(),
            "integration": c.integration,
            "name": c.name,
            "template": c.template,
            "provider": c.provider,
            "address": executor_core::address::connection_address(&c.integration, c.owner, &c.name),
            "identityLabel": c.identity_label,
            "description": c.description,
            "lastHealth": c.last_health,
            "oauthScopeCount": 0,
        })).collect::<Vec<_>>(),
    })))
}

/// The search index over every visible tool, rebuilt when the catalog's generation moves.
pub(crate) struct IndexCache {
    cached: tokio::sync::Mutex<Option<(u64, Arc<SearchIndex>)>>,
}

impl Default for IndexCache {
    fn default() -> Self {
        Self {
            cached: tokio::sync::Mutex::new(None),
        }
    }
}

impl Engine {
    pub(crate) async fn search_index(&self) -> EngineResult<Arc<SearchIndex>> {
        let generation = self
            .inner
            .catalog_generation
            .load(std::sync::atomic::Ordering::Acquire);
        let mut cached = self.inner.search_index.cached.lock().await;
        if let Some((g, index)) = cached.as_ref()
            && *g == generation
        {
            return Ok(index.clone());
        }
        let tools = self
            .inner
            .store
            .list_tools(&self.inner.scope, &executor_store::ToolFilter::default())
            .await?;
        // Blocked tools are invisible to agents: not searchable, not describable.
        let policies = self.policy_set().await?;
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
        let index = Arc::new(SearchIndex::new(entries));
        *cached = Some((generation, index.clone()));
        Ok(index)
    }

    /// Tool-not-found suggestions from the ranked search.
    pub(crate) async fn suggestions(&self, leaf: &str, namespace: Option<&str>) -> Vec<String> {
        match self.search_index().await {
            Ok(index) => suggest(&index, leaf, namespace, 5),
            Err(_) => Vec::new(),
        }
    }
}
