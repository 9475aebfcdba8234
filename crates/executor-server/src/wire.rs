//! Wire shapes of the `/api` routes, built from engine values.

use std::collections::BTreeMap;

use executor_core::Completed;
use executor_core::auth::{AuthMethod, AuthMethodInput, Carrier, parse_auth_method_input};
use executor_engine::{
    AuthTemplateMode, BUILTIN_INTEGRATION, ExecutionOutcome, ExecutionSummary, IntegrationView,
    Paused, PolicyView, STATIC_TOOL_CONNECTION, ToolSchema,
};
use executor_store::{ConnectionRecord, ExecutionCallRecord, ExecutionRecord, ToolSummary};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::error::ApiError;

pub(crate) fn integration(view: &IntegrationView) -> Value {
    let mut body = json!({
        "slug": view.slug,
        "name": view.name,
        "description": view.description,
        "kind": view.kind,
        "canRemove": view.can_remove,
        "canRefresh": view.can_refresh,
        "authMethods": view.auth_methods.iter().map(|m| {
            let mut descriptor = auth_method(m);
            // MCP OAuth endpoints are discovered live from the server (spec §1.3).
            if view.kind == "mcp"
                && matches!(m, AuthMethod::Oauth2 { .. })
                && let Some(url) = &view.display_url
            {
                descriptor["oauth"] =
                    json!({"discoveryUrl": url, "supportsDynamicRegistration": true});
            }
            descriptor
        }).collect::<Vec<_>>(),
    });
    if let Some(url) = &view.display_url {
        body["displayUrl"] = json!(url);
    }
    body
}

fn auth_method(method: &AuthMethod) -> Value {
    match method {
        AuthMethod::None { slug } => {
            json!({"id": slug, "label": method.label(), "kind": "none", "template": slug})
        }
        AuthMethod::Oauth2 { slug } => {
            json!({"id": slug, "label": method.label(), "kind": "oauth", "template": slug})
        }
        AuthMethod::Apikey { slug, .. } | AuthMethod::StdioEnv { slug, .. } => {
            // stdio_env projects as an apikey with one `env` placement per variable (§1.3).
            let placements: Vec<Value> = method
                .placements()
                .iter()
                .map(|p| {
                    let mut v = json!({
                        "carrier": match p.carrier { Carrier::Header => "header", Carrier::Query => "query", Carrier::Env => "env" },
                        "name": p.name,
                        "prefix": p.prefix.clone().unwrap_or_default(),
                    });
                    if let Some(var) = p.variable_name() {
                        v["variable"] = json!(var);
                    }
                    if let Some(lit) = &p.literal {
                        v["literal"] = json!(lit);
                    }
                    v
                })
                .collect();
            json!({"id": slug, "label": method.label(), "kind": "apikey", "template": slug, "placements": placements})
        }
    }
}

pub(crate) fn connection(record: &ConnectionRecord) -> Value {
    executor_engine::views::connection_json(record)
}

/// Static tools are addressed by their fqid (`executor.<name>`), dynamic ones by `tools.…`.
fn is_static(t: &ToolSummary) -> bool {
    t.integration == BUILTIN_INTEGRATION && t.connection == STATIC_TOOL_CONNECTION
}

fn tool_address(t: &ToolSummary) -> String {
    if is_static(t) {
        format!("{BUILTIN_INTEGRATION}.{}", t.name)
    } else {
        format!(
            "tools.{}.{}.{}.{}",
            t.integration,
            t.owner.as_str(),
            t.connection,
            t.name
        )
    }
}

pub(crate) fn tool(t: &ToolSummary, include_annotations: bool) -> Value {
    let mut body = json!({
        "address": tool_address(t),
        "owner": t.owner.as_str(),
        "integration": t.integration,
        "connection": t.connection,
        "name": t.name,
        "pluginId": t.plugin_id,
        "description": t.description,
    });
    if is_static(t) {
        body["static"] = json!(true);
    }
    if include_annotations && let Some(Value::Object(a)) = &t.annotations {
        for key in ["requiresApproval", "approvalDescription", "mayElicit"] {
            if let Some(v) = a.get(key) {
                body[key] = v.clone();
            }
        }
    }
    body
}

/// `POST …/refresh` items: the list projection without annotations.
pub(crate) fn refreshed_tool(t: &ToolSummary) -> Value {
    tool(t, false)
}

pub(crate) fn tool_schema(t: &ToolSchema) -> Value {
    let mut body = json!({
        "address": t.address,
        "name": t.name,
        "description": t.description,
    });
    if let Some(s) = &t.input_schema {
        body["inputSchema"] = s.clone();
    }
    if let Some(s) = &t.output_schema {
        body["outputSchema"] = s.clone();
    }
    if !t.definitions.is_empty() {
        body["schemaDefinitions"] = Value::Object(t.definitions.clone());
    }
    if let Some(ts) = &t.types.input {
        body["inputTypeScript"] = json!(ts);
    }
    body["outputTypeScript"] = json!(t.types.output);
    body["typeScriptDefinitions"] = json!(t.types.definitions);
    body
}

/// Beyond the original: `content` carries the MCP content blocks of emitted output (images, files,
/// resources), so the HTTP API does not lose what `emit` produced.
pub(crate) fn completed(c: &Completed) -> Value {
    let mut body = json!({"status": "completed", "text": c.text, "structured": c.structured, "isError": c.is_error});
    if !c.content.is_empty() {
        body["content"] = Value::Array(c.content.clone());
    }
    body
}

pub(crate) fn paused(p: &Paused) -> Value {
    json!({"status": "paused", "text": p.text, "structured": p.structured})
}

/// `GET /api/executions` items.
pub(crate) fn execution_summary(e: &ExecutionSummary) -> Value {
    let mut body = json!({
        "id": e.id,
        "status": e.status.as_str(),
        "startedAt": e.started_at,
        "toolCalls": e.tool_calls,
    });
    if let Some(at) = e.finished_at {
        body["finishedAt"] = json!(at);
    }
    if let Some(ms) = e.duration_ms {
        body["durationMs"] = json!(ms);
    }
    if let Some(is_error) = e.is_error {
        body["isError"] = json!(is_error);
    }
    body
}

/// `GET /api/executions/:id/journal`: the summary fields, the code, the outcome and the calls.
pub(crate) fn execution_record(r: &ExecutionRecord, calls: &[ExecutionCallRecord]) -> Value {
    let mut body = execution_summary(&ExecutionSummary {
        id: r.id.clone(),
        status: r.status,
        started_at: r.started_at,
        finished_at: r.finished_at,
        duration_ms: r.duration_ms,
        tool_calls: r.tool_calls,
        is_error: r
            .outcome
            .as_ref()
            .and_then(|o| o.get("isError"))
            .and_then(Value::as_bool),
    });
    body["code"] = json!(r.code);
    body["autoApprove"] = json!(r.auto_approve);
    if let Some(outcome) = &r.outcome {
        body["outcome"] = outcome.clone();
    }
    if let Some(at) = r.expires_at {
        body["expiresAt"] = json!(at);
    }
    if let Some(pending) = &r.pending {
        // What a person is asked; the recorded caller and downstream sessions stay inside.
        let mut shown = serde_json::Map::new();
        for key in [
            "seq",
            "message",
            "address",
            "kind",
            "args",
            "requestedSchema",
            "url",
        ] {
            if let Some(v) = pending.get(key) {
                shown.insert(key.to_owned(), v.clone());
            }
        }
        body["pending"] = Value::Object(shown);
    }
    body["calls"] = calls
        .iter()
        .map(|c| {
            let mut call = json!({
                "seq": c.seq,
                "path": c.path,
                "args": c.args,
                "startedAt": c.started_at,
            });
            if let Some(ms) = c.duration_ms {
                call["durationMs"] = json!(ms);
            }
            if let Some(outcome) = &c.outcome {
                call["outcome"] = outcome.clone();
            }
            if let Some(pause) = &c.pause {
                call["approval"] = json!({
                    "message": pause.get("message"),
                    "kind": pause.get("kind"),
                    "decision": pause.get("decision"),
                });
            }
            call
        })
        .collect();
    body
}

/// [`outcome`] of execution `id`. Beyond the original, a settled answer names its execution
/// (to read its journal); a paused one already does, in `structured`, and keeps the original's
/// exact shape.
pub(crate) fn outcome_of(id: &str, o: &ExecutionOutcome) -> Value {
    let mut body = outcome(o);
    if matches!(o, ExecutionOutcome::Completed(_)) {
        body["executionId"] = json!(id);
    }
    body
}

pub(crate) fn outcome(o: &ExecutionOutcome) -> Value {
    match o {
        ExecutionOutcome::Completed(c) => completed(c),
        ExecutionOutcome::Paused(p) => paused(p),
    }
}

/// A policy, with the count of known tools its pattern matches (beyond the original: a rule
/// that matches nothing shows `matches: 0` at once).
pub(crate) fn policy(p: &PolicyView) -> Value {
    json!({
        "id": p.id,
        "owner": p.owner.as_str(),
        "pattern": p.pattern,
        "action": p.action.as_str(),
        "position": p.position,
        "createdAt": p.created_at,
        "updatedAt": p.updated_at,
        "matches": p.matches,
        "author": p.author.as_str(),
    })
}

// ---- auth methods in requests ---------------------------------------------------------------

/// The entries of an `authenticationTemplate` array as add/configure endpoints take them (the
/// input dialect or the stored form, spec §1.3); a bad entry is a schema error naming it.
pub(crate) fn auth_method_inputs<'a>(
    entries: impl IntoIterator<Item = &'a Value>,
) -> Result<Vec<AuthMethodInput>, ApiError> {
    entries
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            parse_auth_method_input(v)
                .map_err(|e| ApiError::schema(format!("authenticationTemplate[{i}]: {e}")))
        })
        .collect()
}

/// `mode` of the configure endpoints: `"merge"` (the default) or `"replace"`.
pub(crate) fn auth_template_mode(raw: Option<&str>) -> Result<AuthTemplateMode, ApiError> {
    match raw {
        None | Some("merge") => Ok(AuthTemplateMode::Merge),
        Some("replace") => Ok(AuthTemplateMode::Replace),
        Some(other) => Err(ApiError::schema(format!(
            "mode must be \"merge\" or \"replace\", got {other:?}"
        ))),
    }
}

// ---- request bodies -------------------------------------------------------------------------

/// PATCH bodies name exactly what they change: an unknown field is a typo that would
/// otherwise change nothing and answer 200.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PatchIntegrationBody {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CreateConnectionBody {
    pub(crate) owner: String,
    pub(crate) name: String,
    pub(crate) integration: String,
    pub(crate) template: String,
    #[serde(default)]
    pub(crate) identity_label: Option<String>,
    #[serde(default)]
    pub(crate) description: Option<String>,
    #[serde(default)]
    pub(crate) value: Option<String>,
    #[serde(default)]
    pub(crate) values: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub(crate) from: Option<FromBody>,
    /// Replace a connection of the same (normalised) name instead of answering 409.
    #[serde(default)]
    pub(crate) replace: bool,
}

/// Where a connection's or a check's credentials come from: `value`, `values`, `from`, or
/// none at all (a method without credentials; any other method then says what is missing).
pub(crate) fn credential_origin(
    value: Option<String>,
    values: Option<BTreeMap<String, String>>,
    from: Option<FromBody>,
) -> Result<executor_engine::CredentialOrigin, ApiError> {
    use executor_engine::CredentialOrigin;
    Ok(match (value, values, from) {
        (Some(v), None, None) => CredentialOrigin::Value(v),
        (None, Some(v), None) => CredentialOrigin::Values(v),
        (None, None, Some(f)) => CredentialOrigin::From {
            provider: f.provider,
            id: f.id,
        },
        (None, None, None) => CredentialOrigin::Values(BTreeMap::new()),
        _ => {
            return Err(ApiError::schema(
                "Expected at most one credential origin: value, values or from.",
            ));
        }
    })
}

#[derive(Deserialize, ToSchema)]
#[schema(as = CredentialFrom)]
pub(crate) struct FromBody {
    pub(crate) provider: String,
    pub(crate) id: String,
}

/// `absent` = unchanged, `null` = clear.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PatchConnectionBody {
    #[serde(default, deserialize_with = "present")]
    pub(crate) description: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub(crate) identity_label: Option<Option<String>>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExecuteBody {
    pub(crate) code: String,
    #[serde(default)]
    pub(crate) auto_approve: bool,
}

#[derive(Deserialize, ToSchema)]
pub(crate) struct ResumeBody {
    pub(crate) action: String,
    #[serde(default)]
    pub(crate) content: Option<Value>,
}

impl ResumeBody {
    /// The action, or the 400 every resume route answers for another word.
    pub(crate) fn action(&self) -> Result<executor_engine::ResumeAction, ApiError> {
        executor_engine::ResumeAction::parse(&self.action).ok_or_else(|| {
            ApiError::schema(format!(
                "action must be \"accept\", \"decline\" or \"cancel\", got {:?}",
                self.action
            ))
        })
    }
}

#[derive(Deserialize, ToSchema)]
pub(crate) struct CreatePolicyBody {
    pub(crate) owner: String,
    pub(crate) pattern: String,
    pub(crate) action: String,
    #[serde(default)]
    pub(crate) position: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdatePolicyBody {
    pub(crate) owner: String,
    #[serde(default)]
    pub(crate) pattern: Option<String>,
    #[serde(default)]
    pub(crate) action: Option<String>,
    #[serde(default)]
    pub(crate) position: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub(crate) struct OwnerBody {
    pub(crate) owner: String,
}

/// A recorded tool change as the API shows it (`ToolChange` in the document).
pub(crate) fn tool_change(c: &executor_store::ToolChangeRecord) -> Value {
    json!({
        "id": c.id,
        "address": c.address().to_string(),
        "owner": c.owner.as_str(),
        "integration": c.integration,
        "connection": c.connection,
        "tool": c.tool,
        "kind": c.kind,
        "fields": c.fields,
        "before": c.before,
        "after": c.after,
        "beforeFingerprint": c.before_fingerprint,
        "afterFingerprint": c.after_fingerprint,
        "escalated": c.escalated,
        "requiresAcceptance": c.requires_acceptance,
        "detectedAt": c.detected_at,
        "acceptedAt": c.accepted_at,
        "acceptedBy": c.accepted_by,
    })
}

/// A refresh's tools and diff (`RefreshDiff` in the document).
pub(crate) fn refresh_diff(r: &executor_engine::Refreshed) -> Value {
    let names = |kind: &str| -> Vec<&str> {
        r.changes
            .iter()
            .filter(|c| c.kind == kind)
            .map(|c| c.tool.as_str())
            .collect()
    };
    let changed: Vec<Value> = r
        .changes
        .iter()
        .filter(|c| c.kind == "changed")
        .map(|c| {
            json!({
                "name": c.tool,
                "fields": c.fields,
                "escalated": c.escalated,
                "requiresAcceptance": c.requires_acceptance,
                "changeId": c.id,
            })
        })
        .collect();
    json!({
        "tools": r.tools.iter().map(refreshed_tool).collect::<Vec<_>>(),
        "diff": {"added": names("added"), "removed": names("removed"), "changed": changed},
    })
}
