//! `executor.coreTools.connections.*`: list, create (from provider items or pasted inputs),
//! the browser handoff for credentials a person should type, remove and refresh. They call the
//! same engine operations as `/api/connections`, so the rules (and their messages) are shared.

use std::collections::BTreeMap;

use executor_core::ToolError;
use executor_store::{ConnectionKey, ConnectionRecord, ToolSummary};
use serde_json::{Value, json};

use super::{Args, CoreResult, web_link};
use crate::caller::Caller;
use crate::catalog::{ConnectionInput, CredentialOrigin, InputOrigin};
use crate::views::connection_json;
use crate::{BUILTIN_INTEGRATION, Engine};

const LIST: &str = "executor.coreTools.connections.list";
const CREATE: &str = "executor.coreTools.connections.create";
const HANDOFF: &str = "executor.coreTools.connections.createHandoff";
const REMOVE: &str = "executor.coreTools.connections.remove";
const REFRESH: &str = "executor.coreTools.connections.refresh";

fn owner_schema() -> Value {
    json!({"type": "string", "enum": ["org", "user"]})
}

fn item_ref_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "provider": {"type": "string", "description": "A key from providers.list."},
            "id": {"type": "string", "description": "An item id from providers.items."}
        },
        "required": ["provider", "id"],
        "additionalProperties": false
    })
}

pub(super) fn list_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "integration": {"type": "string", "description": "Only connections of this integration slug."},
            "owner": owner_schema(),
            "verbose": {"type": "boolean", "description": "Include the full granted OAuth scope string."}
        },
        "additionalProperties": false
    })
}

pub(super) fn create_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "owner": owner_schema(),
            "name": {"type": "string", "description": "Connection name; normalised to camelCase (letters of any script and digits are kept)."},
            "integration": {"type": "string"},
            "template": {"type": "string", "description": "An auth method slug of the integration, or \"none\"."},
            "identityLabel": {"type": ["string", "null"]},
            "description": {"type": ["string", "null"]},
            "replace": {"type": "boolean", "description": "Replace a connection of the same name (credentials included); without it a taken name is an error."},
            "from": item_ref_schema(),
            "inputs": {
                "type": "object",
                "description": "Per-variable origins: a pasted value, or { provider, id }. All inputs share one provider.",
                "additionalProperties": {"anyOf": [{"type": "string"}, item_ref_schema()]}
            }
        },
        "required": ["owner", "name", "integration", "template"],
        "additionalProperties": false
    })
}

pub(super) fn handoff_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "integration": {"type": "string"},
            "owner": owner_schema(),
            "template": {"type": "string", "description": "Auth method to preselect."},
            "label": {"type": "string", "description": "A non-secret label for the account."}
        },
        "required": ["integration"],
        "additionalProperties": false
    })
}

pub(super) fn ref_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "owner": owner_schema(),
            "integration": {"type": "string"},
            "name": {"type": "string"}
        },
        "required": ["owner", "integration", "name"],
        "additionalProperties": false
    })
}

/// A listed connection: the grant's scope string is summarised as a count unless `verbose`
/// (long scope lists crowd an agent's context for little use).
fn list_item(record: &ConnectionRecord, verbose: bool) -> Value {
    let mut item = connection_json(record);
    let scope = record.oauth.as_ref().and_then(|o| o.scope.as_deref());
    item["oauthScopeCount"] = json!(scope.map(|s| s.split_whitespace().count()));
    if !verbose && let Some(map) = item.as_object_mut() {
        map.remove("oauthScope");
    }
    item
}

pub(super) async fn list(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    let args = Args::new(LIST, args, &["integration", "owner", "verbose"])?;
    let integration = args.str("integration")?;
    let owner = args.opt_owner("owner")?;
    let verbose = args.bool("verbose")?.unwrap_or(false);
    let list = engine
        .agent_connections(caller, integration.as_deref(), owner)
        .await?;
    Ok(json!({
        "items": list.iter().map(|c| list_item(c, verbose)).collect::<Vec<_>>(),
    }))
}

/// One input origin: a pasted string, `{provider, id}`, or the SDK's `{from: {provider, id}}`.
fn input_origin(variable: &str, value: &Value) -> Result<InputOrigin, String> {
    let item = |v: &Value| {
        let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        match (field("provider"), field("id")) {
            (Some(provider), Some(id)) => Some(InputOrigin::From { provider, id }),
            _ => None,
        }
    };
    match value {
        Value::String(s) => Some(InputOrigin::Value(s.clone())),
        Value::Object(map) if map.contains_key("from") => item(&map["from"]),
        Value::Object(_) => item(value),
        _ => None,
    }
    .ok_or_else(|| {
        format!("inputs.{variable} must be a pasted string or {{ provider, id }}, got {value}")
    })
}

pub(super) async fn create(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    let a = Args::new(
        CREATE,
        args,
        &[
            "owner",
            "name",
            "integration",
            "template",
            "identityLabel",
            "description",
            "from",
            "inputs",
            "replace",
        ],
    )?;
    let origin = match (a.get("from"), a.get("inputs")) {
        (Some(_), Some(_)) => {
            return Err(a.invalid("pass either `from` or `inputs`, not both").into());
        }
        (Some(from), None) => match input_origin("token", from) {
            Ok(InputOrigin::From { provider, id }) => CredentialOrigin::From { provider, id },
            _ => {
                return Err(a
                    .invalid(&format!("`from` must be {{ provider, id }}, got {from}"))
                    .into());
            }
        },
        (None, Some(Value::Object(inputs))) => CredentialOrigin::Inputs(
            inputs
                .iter()
                .map(|(variable, v)| Ok((variable.clone(), input_origin(variable, v)?)))
                .collect::<Result<BTreeMap<_, _>, String>>()
                .map_err(|m| a.invalid(&m))?,
        ),
        (None, Some(other)) => {
            return Err(a
                .invalid(&format!("`inputs` must be an object, got {other}"))
                .into());
        }
        // No origin: right for `template: "none"`; the engine says what is missing otherwise.
        (None, None) => CredentialOrigin::Values(BTreeMap::new()),
    };
    let input = ConnectionInput {
        owner: a.owner("owner")?,
        name: a.required("name")?,
        integration: a.required("integration")?,
        template: a.required("template")?,
        identity_label: a.str("identityLabel")?,
        description: a.str("description")?,
        origin,
        replace: a.bool("replace")?.unwrap_or(false),
    };
    let created = engine.create_connection(caller, input).await?;
    Ok(connection_json(&created))
}

/// `<web>/integrations/<slug>?addAccount=1&owner&template&label`: the integration's Add account
/// form, where the person types the credential so it never passes through the agent.
pub(super) async fn create_handoff(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    let a = Args::new(
        HANDOFF,
        args,
        &["integration", "owner", "template", "label"],
    )?;
    let integration = a.required("integration")?;
    let owner = a.opt_owner("owner")?;
    let (template, label) = (a.str("template")?, a.str("label")?);
    if integration == BUILTIN_INTEGRATION {
        return Err(a
            .invalid("the built-in integration takes no connections")
            .into());
    }
    // A link to an integration that does not exist would only show the person an error page.
    engine.get_integration(caller, &integration).await?;
    let mut query = vec![("addAccount", "1".to_owned())];
    query.extend(owner.map(|o| ("owner", o.as_str().to_owned())));
    query.extend(template.map(|t| ("template", t)));
    query.extend(label.map(|l| ("label", l)));
    let url = web_link(engine, &integration, &query)?;
    Ok(json!({
        "url": url,
        "instructions": "Ask the user to open this URL and add the account in the Executor web UI. \
            Do not ask them to paste the credential into chat. When they are done, call \
            executor.coreTools.connections.list for the integration to find the new connection.",
    }))
}

fn key_of(tool: &'static str, args: &Value) -> Result<ConnectionKey, Box<ToolError>> {
    let a = Args::new(tool, args, &["owner", "integration", "name"])?;
    Ok(ConnectionKey::new(
        a.owner("owner")?,
        a.required("integration")?,
        a.required("name")?,
    ))
}

pub(super) async fn remove(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    let key = key_of(REMOVE, args)?;
    engine.remove_connection(caller, &key).await?;
    Ok(json!({"removed": true}))
}

fn tool_json(t: &ToolSummary) -> Value {
    json!({
        "address": t.address().to_string(),
        "owner": t.owner.as_str(),
        "integration": t.integration,
        "connection": t.connection,
        "name": t.name,
        "pluginId": t.plugin_id,
        "description": t.description,
    })
}

/// The refreshed tools, and the connection's health after it: a failed sync keeps the old
/// catalog and says why there, which an agent could not tell from the list alone.
pub(super) async fn refresh(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    let key = key_of(REFRESH, args)?;
    let tools = engine.refresh_connection(caller, &key).await?;
    let connection = engine.get_connection(caller, &key).await?;
    Ok(json!({
        "tools": tools.iter().map(tool_json).collect::<Vec<_>>(),
        "lastHealth": connection.last_health,
    }))
}
