//! The dispatcher: every tool call of an execution goes through here, from path to address,
//! to catalog, to approval, to the integration kind that invokes it.
//!
//! The dispatcher (`dispatch.rs`) is the one path of every tool call: sandbox helpers (`search`,
//! `describe.tool`, `executor.integrations.list`, in `core_tools/`) answer directly; static core
//! tools (`executor.coreTools.*`) and integration tools pass the one policy `Gate` (block →
//! `tool_blocked`; approve; require_approval → pause unless `autoApprove`) before they run. Core
//! tools with `needs_person` (those changing policies, connections, OAuth clients or credentials,
//! and `oauth.probe`, which fetches a URL the code names) pause even under `autoApprove`; only a
//! person-written `approve` rule naming the tool exactly skips the pause. The core tools
//! (`core_tools/`: `connections.rs`, `oauth.rs`) call the same `Engine` methods as the HTTP routes
//! (so input rules and their messages are shared) and answer the result union; they never take or
//! return a secret value (OAuth client secrets and credentials a person should type go through the
//! `createHandoff` links, built on the web base URL: `EngineConfig::web_base_url`, else the address
//! `executor_server::serve_with` reports via `Engine::serving_at`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use executor_core::policy::{Decision, NotGranted, PolicyAction, PolicySet};
use executor_core::{ToolAddress, ToolError, ToolOutcome};
use executor_mcp::ExecutionScope;
use executor_sandbox::{HostCalls, HostReply};
use executor_store::{ConnectionKey, ToolFilter, ToolRecord};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio::sync::{OnceCell, oneshot};

use super::journal::{Journal, PauseSink};
use super::{ExecEvent, PauseKind, PauseRequest, ResumeAction};
use crate::Inner;
use crate::caller::Caller;
use crate::error::internal_tool_error;
use crate::kinds::{CallContext, Connected, Kind};

/// Arguments shown in an approval are cut to this many characters.
const APPROVAL_ARGS_PREVIEW: usize = 4_000;

/// A connection resolved once per execution, or why its calls cannot be made.
type TargetSlot = OnceCell<Result<Target, Box<ToolError>>>;

/// A resolved connection, whether it holds an OAuth token (which a 401 may have us refresh),
/// and the token epoch read before its credentials were.
#[derive(Clone)]
struct Target {
    connected: Arc<Connected>,
    oauth: bool,
    epoch: u64,
}

/// State of one execution shared by its tool calls.
pub(crate) struct ExecutionCtx {
    mcp: Mutex<Option<Arc<ExecutionScope>>>,
    auto_approve: bool,
    events: PauseSink,
    /// The execution's journal: calls, clock values, its row in the store.
    pub(crate) journal: Arc<Journal>,
    /// Resolved connections, so that repeated calls skip the store and credential reads.
    targets: Mutex<HashMap<ConnectionKey, Arc<TargetSlot>>>,
    /// What the agent's own MCP client lends the execution (sampling, progress).
    pub(crate) agent: super::AgentLink,
}

impl ExecutionCtx {
    pub(crate) fn new(
        scope: ExecutionScope,
        auto_approve: bool,
        events: PauseSink,
        journal: Arc<Journal>,
    ) -> Self {
        Self {
            mcp: Mutex::new(Some(Arc::new(scope))),
            auto_approve,
            events,
            journal,
            targets: Mutex::new(HashMap::new()),
            agent: Default::default(),
        }
    }

    pub(crate) fn mcp_scope(&self) -> Option<Arc<ExecutionScope>> {
        lock(&self.mcp).clone()
    }

    /// Where this execution's pauses go (elicitations of its downstream servers included).
    pub(crate) fn pause_sink(&self) -> PauseSink {
        self.events.clone()
    }

    /// The caller is the approver (`autoApprove`).
    pub(crate) fn auto_approve(&self) -> bool {
        self.auto_approve
    }

    /// Returns the execution's downstream sessions to the pool.
    pub(crate) async fn finish(&self) {
        let scope = lock(&self.mcp).take();
        if let Some(scope) = scope {
            match Arc::try_unwrap(scope) {
                Ok(scope) => scope.finish().await,
                // A call still in flight holds it; its drop returns the sessions.
                Err(still_shared) => drop(still_shared),
            }
        }
    }
}

impl CallContext for ExecutionCtx {
    fn mcp_scope(&self) -> Option<Arc<ExecutionScope>> {
        ExecutionCtx::mcp_scope(self)
    }

    fn elicitor(&self, address: &ToolAddress, args: &Value) -> Arc<dyn executor_mcp::Elicitor> {
        super::elicitation::for_call(self, address, args)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The sandbox's door. Each call runs on the IO runtime: polled where the JavaScript awaits it
/// when the sandbox shares that runtime ([`crate::JsThreads::Shared`]), else spawned onto it, so
/// network IO never runs on the sandbox's own threads.
pub(crate) struct ExecutionHost {
    pub(crate) inner: Arc<Inner>,
    pub(crate) ctx: Arc<ExecutionCtx>,
    /// The JavaScript runs on the IO runtime ([`executor_sandbox::Placement::is_shared`]).
    pub(crate) inline: bool,
}

impl HostCalls for ExecutionHost {
    fn call(&self, path: String, args: Value) -> BoxFuture<'static, HostReply> {
        let inner = self.inner.clone();
        let ctx = self.ctx.clone();
        let inline = self.inline;
        // Numbered now, in the order the code calls, whenever the future first runs.
        let issued = super::journal::issue(&ctx, &path, &args);
        Box::pin(async move {
            if inline {
                // Already on the IO runtime's worker: polled here, no hop.
                return super::journal::call(inner, ctx, issued, path, args).await;
            }
            let io = inner.io.clone();
            // Aborted when the execution is dropped (cancelled): the call's upstream request
            // goes with it.
            let mut call =
                AbortOnDrop(io.spawn(super::journal::call(inner, ctx, issued, path, args)));
            match (&mut call.0).await {
                Ok(reply) => reply,
                Err(join_error) => HostReply::Reject(internal_tool_error(&join_error.to_string())),
            }
        })
    }

    fn clock(&self) -> f64 {
        self.ctx.journal.clock()
    }
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn resolve_path(path: &str) -> Option<ToolAddress> {
    match path.strip_prefix("tools.") {
        Some(_) => ToolAddress::parse(path).ok(),
        None => ToolAddress::parse_path(path).ok(),
    }
}

/// One tool call (journaling and replay happen around it, in `journal::call`).
pub(crate) async fn dispatch(
    inner: Arc<Inner>,
    ctx: Arc<ExecutionCtx>,
    path: String,
    args: Value,
) -> HostReply {
    // The execution's caller: every read below is theirs.
    let journal = ctx.journal.clone();
    let caller = &journal.caller;
    if let Some(reply) = crate::core_tools::dispatch_helper(&inner, caller, &path, &args).await {
        return reply;
    }
    let engine = crate::Engine {
        inner: inner.clone(),
    };
    if let Some(tool) = crate::core_tools::static_tool(&path) {
        // Before the gate, as for integration tools.
        if let Err(e) = crate::core_tools::check_args(tool, &args) {
            return HostReply::Resolve(ToolOutcome::Err(*e).to_json());
        }
        // A member's workspace write is refused before anyone is asked to approve it.
        if caller.member_email().is_some()
            && let Some((owner, what)) = crate::core_tools::writes(tool.fqid, &args)
            && let Err(e) = engine.ensure_may_write(caller, owner, what).await
        {
            return crate::core_tools::engine_failure(&e);
        }
        let gate = Gate {
            path: &path,
            policy_id: tool.fqid,
            address: tool.fqid,
            requires_approval: tool.requires_approval,
            needs_person: tool.needs_person,
            approval_description: None,
            tool: None,
            changed: None,
        };
        if let Err(reply) = gate.pass(&engine, &ctx, &args).await {
            return reply;
        }
        return crate::core_tools::run_static(&engine, caller, tool, &args).await;
    }
    let Some(address) = resolve_path(&path) else {
        // Not an integration address: an unknown helper or static tool.
        let leaf = path.rsplit('.').next().unwrap_or(&path);
        let suggestions = engine.suggestions(caller, leaf, None).await;
        return HostReply::Resolve(tool_not_found(&path, suggestions).to_json());
    };
    let set = match engine.policy_set(caller).await {
        Ok(set) => set,
        Err(e) => return HostReply::Reject(internal_tool_error(&e.to_string())),
    };
    // Outside a toolkit's grant a tool is refused before it is looked up, so the answer is the
    // same whether it exists or not: a toolkit's agent learns nothing of the tools beyond it.
    if let Decision::NotGranted { reason } = set.resolve(&address.path(), false) {
        return HostReply::Resolve(ToolOutcome::Err(not_granted(&path, reason)).to_json());
    }
    let tool = match crate::catalog::tool_cache::get(&inner, caller, &address).await {
        Ok(Some(tool)) => tool,
        Ok(None) => {
            if let Some(refused) = refused_at_sync(&inner, caller, &address).await {
                return HostReply::Resolve(ToolOutcome::Err(refused).to_json());
            }
            let suggestions = suggestions(&inner, caller, &set, &address).await;
            return HostReply::Resolve(tool_not_found(&path, suggestions).to_json());
        }
        Err(e) => return HostReply::Reject(internal_tool_error(&e.to_string())),
    };
    // Found under an old name (an alias): policies and approvals see its real name.
    let address = if tool.name == address.tool {
        address
    } else {
        ToolAddress {
            tool: tool.name.clone(),
            ..address
        }
    };
    let key = ConnectionKey::new(
        address.owner,
        address.integration.clone(),
        address.connection.clone(),
    );
    let target = match connect(&inner, caller, &ctx, &key, &tool.plugin_id).await {
        Ok(Ok(t)) => t,
        Ok(Err(tool_error)) => return HostReply::Resolve(ToolOutcome::Err(*tool_error).to_json()),
        Err(cause) => return HostReply::Reject(internal_tool_error(&cause)),
    };
    let connected = &target.connected;
    // Before the gate: a call that must fail is not worth a person's approval.
    if let Err(e) = connected
        .validate(&inner.kind_env(caller), &tool, &args)
        .await
    {
        return HostReply::Resolve(ToolOutcome::Err(*e).to_json());
    }
    // A definition that changed upstream since people trusted it waits for their acceptance.
    let changed = match crate::catalog::tool_cache::pending_change(&inner, caller, &address).await {
        Ok(changed) => changed,
        Err(e) => return HostReply::Reject(internal_tool_error(&e.to_string())),
    };
    let policy_id = address.path();
    let full_address = address.to_string();
    let gate = Gate {
        path: &path,
        policy_id: &policy_id,
        address: &full_address,
        requires_approval: requires_approval(&tool),
        needs_person: false,
        approval_description: annotation_str(&tool, "approvalDescription"),
        tool: Some((&address, &tool)),
        changed: changed.as_deref(),
    };
    if let Err(reply) = gate.pass(&engine, &ctx, &args).await {
        return reply;
    }
    if !target.oauth {
        return invoke(&inner, caller, &ctx, connected, &address, &tool, args).await;
    }
    let reply = invoke(
        &inner,
        caller,
        &ctx,
        connected,
        &address,
        &tool,
        args.clone(),
    )
    .await;
    if !refused_as_unauthenticated(&reply) {
        return reply;
    }
    // A 401 means the upstream did nothing: refresh the token once and call again.
    match crate::credentials::oauth::refresh_after_rejection(&inner, caller, &key, target.epoch)
        .await
    {
        Ok(None) => reply,
        Ok(Some(Err(tool_error))) => HostReply::Resolve(ToolOutcome::Err(*tool_error).to_json()),
        Err(e) => {
            tracing::warn!(integration = %key.integration, connection = %key.name, error = %e, "could not refresh a refused OAuth token");
            reply
        }
        Ok(Some(Ok(()))) => {
            forget_target(&ctx, &key, &target);
            match connect(&inner, caller, &ctx, &key, &tool.plugin_id).await {
                Ok(Ok(fresh)) => {
                    invoke(
                        &inner,
                        caller,
                        &ctx,
                        &fresh.connected,
                        &address,
                        &tool,
                        args,
                    )
                    .await
                }
                Ok(Err(tool_error)) => HostReply::Resolve(ToolOutcome::Err(*tool_error).to_json()),
                Err(cause) => HostReply::Reject(internal_tool_error(&cause)),
            }
        }
    }
}

/// Calls the tool holding a share of its integration's slots until it answered: an
/// integration whose calls hang holds at most its own slots.
async fn invoke(
    inner: &Inner,
    caller: &Caller,
    ctx: &ExecutionCtx,
    connected: &Connected,
    address: &ToolAddress,
    tool: &ToolRecord,
    args: Value,
) -> HostReply {
    let _slot = match inner
        .call_limits
        .slot(caller.tenant(), &address.integration)
        .await
    {
        Ok(slot) => slot,
        Err(busy) => return HostReply::Resolve(ToolOutcome::Err(busy).to_json()),
    };
    connected
        .invoke(&inner.kind_env(caller), ctx, address, tool, args)
        .await
}

/// `connection_rejected` with HTTP 401: the upstream refused the credentials themselves (a 403
/// refuses the caller's rights, which a new token of the same grant would not change).
fn refused_as_unauthenticated(reply: &HostReply) -> bool {
    let HostReply::Resolve(value) = reply else {
        return false;
    };
    value["ok"] == false
        && value["error"]["code"] == "connection_rejected"
        && value["error"]["status"] == 401
}

/// Drops the execution's resolved connection if it is still `used`, so the next call resolves
/// it again with the new token (another call may have done so already).
fn forget_target(ctx: &ExecutionCtx, key: &ConnectionKey, used: &Target) {
    let mut targets = lock(&ctx.targets);
    let stale = targets.get(key).is_some_and(
        |slot| matches!(slot.get(), Some(Ok(t)) if Arc::ptr_eq(&t.connected, &used.connected)),
    );
    if stale {
        targets.remove(key);
    }
}

/// The connection, resolved by its kind once per execution.
async fn connect(
    inner: &Arc<Inner>,
    caller: &Caller,
    ctx: &ExecutionCtx,
    key: &ConnectionKey,
    plugin_id: &str,
) -> Result<Result<Target, Box<ToolError>>, String> {
    let Some(kind) = Kind::of(plugin_id) else {
        return Err(format!("no integration kind {plugin_id:?}"));
    };
    let cell = lock(&ctx.targets).entry(key.clone()).or_default().clone();
    let resolved = cell
        .get_or_try_init(|| async {
            let epoch = inner.oauth_refresh.epoch(caller, key);
            // Resolved by an earlier execution since the catalog last changed: no store reads.
            let cache_key = (caller.rows_key(), key.clone());
            let (generation, cached) = inner.connection_cache.lookup(inner, &cache_key);
            if let Some(connected) = cached {
                // Only vault-held, non-OAuth connections are cached.
                return Ok::<_, String>(Ok(Target {
                    connected,
                    oauth: false,
                    epoch,
                }));
            }
            let integration = inner
                .store
                .get_integration(caller.scope(), &key.integration)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("integration {} vanished", key.integration))?;
            let connected = kind
                .connect(&inner.kind_env(caller), &integration, key)
                .await
                .map(|r| r.map(Arc::new))
                .map_err(|e| e.to_string())?;
            let connected = match connected {
                Ok(c) => c,
                Err(tool_error) => return Ok(Err(tool_error)),
            };
            let (cacheable, oauth) = credential_lifetime(inner, caller, key).await;
            if cacheable && connected.shareable() {
                inner
                    .connection_cache
                    .insert(generation, cache_key, connected.clone());
            }
            Ok(Ok(Target {
                connected,
                oauth,
                epoch,
            }))
        })
        .await?;
    Ok(match resolved {
        Ok(c) => Ok(c.clone()),
        Err(e) => Err(e.clone()),
    })
}

/// Whether a connection's credentials stay valid until the catalog changes: values sealed in the
/// vault (whose writes move the generation). OAuth tokens expire and are refreshed at call time,
/// and other providers (the user's `auth.json`, a keychain) change behind our back, so those
/// connections are resolved again by every execution. `(cacheable, holds an OAuth token)`.
async fn credential_lifetime(inner: &Inner, caller: &Caller, key: &ConnectionKey) -> (bool, bool) {
    match inner.store.get_connection(caller.scope(), key).await {
        Ok(Some(c)) => {
            let oauth = c.oauth.is_some();
            let cacheable = c.provider == crate::credentials::providers::VAULT
                && !oauth
                && c.expires_at.is_none();
            (cacheable, oauth)
        }
        // Unknown: resolve it again next time, and let a 401 try a refresh.
        _ => (false, true),
    }
}

fn requires_approval(tool: &ToolRecord) -> bool {
    tool.annotations
        .as_ref()
        .and_then(|a| a.get("requiresApproval"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn annotation_str<'a>(tool: &'a ToolRecord, key: &str) -> Option<&'a str> {
    tool.annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// The policy gate every tool call passes, dynamic and static alike: block, approve, or pause
/// for a person's decision.
struct Gate<'a> {
    /// The path the code called, for messages.
    path: &'a str,
    /// What policy patterns match: `<integration>.<owner>.<connection>.<tool>` or a static fqid.
    policy_id: &'a str,
    /// How approvals name the tool.
    address: &'a str,
    requires_approval: bool,
    /// Only a person's approval, or a person's `approve` rule naming this exact tool, lets it
    /// run ([`crate::core_tools::StaticTool::needs_person`]).
    needs_person: bool,
    approval_description: Option<&'a str>,
    /// The integration tool being called: a person's approval of a call records its
    /// definition as one they trusted (a later change of it then waits for acceptance).
    tool: Option<(&'a ToolAddress, &'a ToolRecord)>,
    /// The recorded change of the tool's definition that waits for a person's acceptance: every
    /// call pauses for a person, whatever the rules and `autoApprove` say (they were written
    /// for the old definition); only a block rule still blocks.
    changed: Option<&'a str>,
}

impl Gate<'_> {
    /// Whether an `approve` decision may skip asking: always for ordinary tools; for tools that
    /// need a person only when the people's rules alone approve it by a rule naming the tool
    /// exactly, so that neither `*` nor a rule an agent wrote for itself lifts the question.
    fn approve_covers(&self, set: &PolicySet) -> bool {
        !self.needs_person
            || matches!(set.resolve_people(self.policy_id, self.requires_approval),
                Decision::Rule { pattern, action: PolicyAction::Approve, .. }
                if pattern == self.policy_id)
    }

    async fn pass(
        &self,
        engine: &crate::Engine,
        ctx: &ExecutionCtx,
        args: &Value,
    ) -> Result<(), HostReply> {
        let set = engine
            .policy_set(&ctx.journal.caller)
            .await
            .map_err(|e| HostReply::Reject(internal_tool_error(&e.to_string())))?;
        let decision = set.resolve(self.policy_id, self.requires_approval);
        let head = match (&decision, decision.action()) {
            (_, PolicyAction::Block) => {
                let refusal = match &decision {
                    Decision::NotGranted { reason } => not_granted(self.path, *reason),
                    _ => ToolError::new(
                        "tool_blocked",
                        format!("Tool blocked by policy: {}", self.path),
                    )
                    .with_retryable(false)
                    .with_details(json!({ "path": self.path, "pattern": decision.pattern() })),
                };
                return Err(HostReply::Resolve(ToolOutcome::Err(refusal).to_json()));
            }
            _ if self.changed.is_some() => {
                let change = self.changed.unwrap_or_default();
                format!(
                    "Approve {}? Its definition changed upstream since it was trusted (tool change {change}); a person decides each call until someone accepts the change (POST /api/tool-changes/{change}/accept).",
                    self.address
                )
            }
            (_, PolicyAction::Approve) if self.approve_covers(&set) => return Ok(()),
            _ if ctx.auto_approve && !self.needs_person => return Ok(()),
            _ if self.needs_person => format!(
                "Approve {}? (a person decides each call of this tool: autoApprove and wildcard or agent-written rules do not cover it)",
                self.address
            ),
            (Decision::Rule { pattern, .. }, _) => {
                format!("Approve {}? (matched policy: {pattern})", self.address)
            }
            // The plugin default (a toolkit's refusal always blocks, above).
            _ => self
                .approval_description
                .map(str::to_owned)
                .unwrap_or_else(|| format!("Approve {}?", self.address)),
        };
        let message = approval_message(&head, self.path, args);
        let (respond, answer) = oneshot::channel();
        let request = PauseRequest {
            message,
            address: self.address.to_owned(),
            args: args.clone(),
            kind: PauseKind::Approval,
            respond,
        };
        if ctx.events.send(ExecEvent::Paused(request)).is_err() {
            return Err(HostReply::Reject(declined(self.path, "cancelled")));
        }
        match answer.await {
            Ok((ResumeAction::Accept, _)) => {
                if let (Some((address, tool)), None) = (self.tool, self.changed) {
                    let fingerprint = executor_store::tool_definition(tool).fingerprint();
                    if let Err(e) = engine
                        .inner
                        .store
                        .approve_tool_definition(ctx.journal.caller.scope(), address, &fingerprint)
                        .await
                    {
                        tracing::warn!(error = %e, tool = %address, "could not record an approved tool definition");
                    }
                }
                Ok(())
            }
            Ok((ResumeAction::Decline, _)) => {
                Err(HostReply::Reject(declined(self.path, "declined")))
            }
            Ok((ResumeAction::Cancel, _)) | Err(_) => {
                Err(HostReply::Reject(declined(self.path, "cancelled")))
            }
        }
    }
}

fn approval_message(head: &str, path: &str, args: &Value) -> String {
    let shown = if args.is_null() {
        json!({})
    } else {
        super::journal::redact_args(path, args)
    };
    let mut preview = serde_json::to_string_pretty(&shown).unwrap_or_default();
    if preview.chars().count() > APPROVAL_ARGS_PREVIEW {
        preview = preview
            .chars()
            .take(APPROVAL_ARGS_PREVIEW)
            .collect::<String>()
            + "...";
    }
    format!("{head}\n\nArguments:\n{preview}")
}

fn declined(path: &str, how: &str) -> String {
    format!("Tool \"{path}\" requires approval but the request was {how} by the user.")
}

/// `connection_rejected` for a call into a connection that has no tools because the upstream
/// refused its credentials when they were listed (a GraphQL endpoint that refuses the token's
/// introspection, say): "tool not found" would send the agent looking for another name.
async fn refused_at_sync(
    inner: &Inner,
    caller: &Caller,
    address: &ToolAddress,
) -> Option<ToolError> {
    let key = ConnectionKey::new(
        address.owner,
        address.integration.clone(),
        address.connection.clone(),
    );
    let connection = inner
        .store
        .get_connection(caller.scope(), &key)
        .await
        .ok()??;
    let detail = connection.last_health.as_ref()?.get("detail")?.as_str()?;
    let status = [401u16, 403]
        .into_iter()
        .find(|s| detail.contains(&format!("HTTP {s}")))?;
    let filter = ToolFilter {
        integration: Some(key.integration.clone()),
        owner: Some(key.owner),
        connection: Some(key.name.clone()),
        query: None,
    };
    let tools = inner.store.list_tools(caller.scope(), &filter).await.ok()?;
    tools
        .is_empty()
        .then(|| crate::kinds::rejected(&key.integration, status, "The upstream", detail))
}

fn tool_not_found(path: &str, suggestions: Vec<String>) -> ToolOutcome {
    let mut details = json!({ "path": path });
    if !suggestions.is_empty() {
        details["suggestions"] = json!(suggestions);
    }
    ToolOutcome::Err(
        ToolError::new("tool_not_found", format!("Tool not found: {path}")).with_details(details),
    )
}

/// A toolkit's refusal of a tool it does not grant, worded the same for any path.
fn not_granted(path: &str, reason: NotGranted) -> ToolError {
    ToolError::new(
        "tool_blocked",
        format!("Tool blocked: this toolkit does not grant {path}"),
    )
    .with_retryable(false)
    .with_details(json!({ "path": path, "reason": reason.as_str() }))
}

/// Up to five tools of the same connection whose name or description mentions the leaf, else
/// the connection's first five; only tools the caller's policies let it see (a toolkit's
/// grant, no blocked tool), as in search.
async fn suggestions(
    inner: &Inner,
    caller: &Caller,
    set: &PolicySet,
    address: &ToolAddress,
) -> Vec<String> {
    let filter = ToolFilter {
        integration: Some(address.integration.clone()),
        owner: Some(address.owner),
        connection: Some(address.connection.clone()),
        query: None,
    };
    let Ok(mut tools) = inner.store.list_tools(caller.scope(), &filter).await else {
        return Vec::new();
    };
    tools.retain(|t| set.resolve(&t.address().path(), false).action() != PolicyAction::Block);
    let leaf = address
        .tool
        .rsplit('.')
        .next()
        .unwrap_or(&address.tool)
        .to_lowercase();
    let path = |t: &executor_store::ToolSummary| {
        format!("{}.{}.{}.{}", t.integration, t.owner, t.connection, t.name)
    };
    let matching: Vec<String> = tools
        .iter()
        .filter(|t| {
            t.name.to_lowercase().contains(&leaf) || t.description.to_lowercase().contains(&leaf)
        })
        .take(5)
        .map(path)
        .collect();
    if matching.is_empty() {
        tools.iter().take(5).map(path).collect()
    } else {
        matching
    }
}
