//! `executor.coreTools.oauth.*`: OAuth clients (list, create without a secret, the browser
//! handoff for confidential ones, dynamic registration, remove), probe, start and cancel. Same
//! engine operations as `/api/oauth/*`; no secret is ever taken from or given to the sandbox.

use executor_core::ToolError;
use serde_json::{Value, json};

use super::{Args, CoreResult, web_link};
use crate::caller::Caller;
use crate::credentials::oauth::{
    GRANT_AUTHORIZATION_CODE, OAuthClientInput, OAuthStart, OAuthStarted, RegisterDynamicClient,
};
use crate::views::{oauth_client_json as client_json, oauth_connection_json, oauth_probe_json};
use crate::{BUILTIN_INTEGRATION, Engine, OAUTH_CALLBACK_PATH};

const CLIENTS_CREATE: &str = "executor.coreTools.oauth.clients.create";
const CLIENTS_HANDOFF: &str = "executor.coreTools.oauth.clients.createHandoff";
const CLIENTS_REGISTER: &str = "executor.coreTools.oauth.clients.registerDynamic";
const CLIENTS_REMOVE: &str = "executor.coreTools.oauth.clients.remove";
const PROBE: &str = "executor.coreTools.oauth.probe";
const START: &str = "executor.coreTools.oauth.start";
const CANCEL: &str = "executor.coreTools.oauth.cancel";

fn owner_schema() -> Value {
    json!({"type": "string", "enum": ["org", "user"]})
}

fn grant_schema() -> Value {
    json!({"type": "string", "enum": ["authorization_code", "client_credentials"]})
}

fn nullable_string() -> Value {
    json!({"type": ["string", "null"]})
}

fn strings_schema() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

pub(super) fn clients_create_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "owner": owner_schema(),
            "slug": {"type": "string"},
            "authorizationUrl": {"type": "string", "description": "Required for authorization_code."},
            "tokenUrl": {"type": "string"},
            "grant": grant_schema(),
            "clientId": {"type": "string"},
            "resource": nullable_string(),
            "originIntegration": nullable_string(),
            "tokenEndpointAuthMethod": {"type": "string", "enum": ["client_secret_basic", "client_secret_post", "none"], "description": "Omit to read it from the authorization server's metadata."}
        },
        "required": ["owner", "slug", "tokenUrl", "grant", "clientId"],
        "additionalProperties": false
    })
}

pub(super) fn clients_handoff_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "integration": {"type": "string"},
            "owner": owner_schema(),
            "slug": {"type": "string"},
            "grant": grant_schema(),
            "clientId": {"type": "string"},
            "authorizationUrl": {"type": "string"},
            "tokenUrl": {"type": "string"},
            "resource": nullable_string(),
            "label": {"type": "string"}
        },
        "required": ["integration"],
        "additionalProperties": false
    })
}

pub(super) fn clients_register_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "owner": owner_schema(),
            "slug": {"type": "string", "description": "Omit for dcr-<host>."},
            "issuer": nullable_string(),
            "registrationEndpoint": {"type": "string"},
            "authorizationUrl": {"type": "string"},
            "tokenUrl": {"type": "string"},
            "resource": nullable_string(),
            "scopes": strings_schema(),
            "tokenEndpointAuthMethodsSupported": strings_schema(),
            "clientName": {"type": "string"},
            "redirectUri": nullable_string(),
            "originIntegration": nullable_string()
        },
        "required": ["owner", "registrationEndpoint", "authorizationUrl", "tokenUrl"],
        "additionalProperties": false
    })
}

pub(super) fn clients_remove_input() -> Value {
    json!({
        "type": "object",
        "properties": {"owner": owner_schema(), "slug": {"type": "string"}},
        "required": ["owner", "slug"],
        "additionalProperties": false
    })
}

pub(super) fn probe_input() -> Value {
    json!({
        "type": "object",
        "properties": {"url": {"type": "string", "description": "An issuer, or a protected resource (e.g. an MCP endpoint)."}},
        "required": ["url"],
        "additionalProperties": false
    })
}

pub(super) fn start_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "client": {"type": "string", "description": "Client slug from oauth.clients.list."},
            "clientOwner": owner_schema(),
            "owner": owner_schema(),
            "name": {"type": "string", "description": "Name of the connection to create."},
            "integration": {"type": "string"},
            "template": {"type": "string", "description": "The integration's OAuth method slug."},
            "identityLabel": nullable_string(),
            "redirectUri": nullable_string(),
            "scopes": strings_schema()
        },
        "required": ["client", "clientOwner", "owner", "name", "integration", "template"],
        "additionalProperties": false
    })
}

pub(super) fn cancel_input() -> Value {
    json!({
        "type": "object",
        "properties": {"state": {"type": "string"}},
        "required": ["state"],
        "additionalProperties": false
    })
}

pub(super) async fn clients_list(engine: &Engine, caller: &Caller) -> CoreResult {
    let clients = engine.list_oauth_clients(caller).await?;
    Ok(Value::Array(clients.iter().map(client_json).collect()))
}

/// Registers a public client (or a client-credentials one whose secret a person adds in the
/// web UI): a secret typed here would pass through the agent's context.
pub(super) async fn clients_create(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    let a = Args::new(
        CLIENTS_CREATE,
        args,
        &[
            "owner",
            "slug",
            "authorizationUrl",
            "tokenUrl",
            "grant",
            "clientId",
            "resource",
            "originIntegration",
            "tokenEndpointAuthMethod",
        ],
    )
    .map_err(|e| secret_refused(args, e))?;
    let slug = engine
        .put_oauth_client(
            caller,
            OAuthClientInput {
                owner: a.owner("owner")?,
                slug: a.required("slug")?,
                authorization_url: a.str("authorizationUrl")?.unwrap_or_default(),
                token_url: a.required("tokenUrl")?,
                grant: a.required("grant")?,
                client_id: a.required("clientId")?,
                client_secret: None,
                resource: a.str("resource")?,
                origin_integration: a.str("originIntegration")?,
                token_endpoint_auth_method: a.str("tokenEndpointAuthMethod")?,
            },
        )
        .await?;
    Ok(json!({"client": slug}))
}

/// A refused `clientSecret` gets a message that says where a secret goes instead.
fn secret_refused(args: &Value, refused: Box<ToolError>) -> Box<ToolError> {
    if args.get("clientSecret").is_some() {
        Box::new(ToolError::new(
            "invalid_tool_arguments",
            "OAuth client secrets are never passed through the sandbox: call \
             executor.coreTools.oauth.clients.createHandoff and let the user enter the secret in \
             the web UI.",
        ))
    } else {
        refused
    }
}

/// `<web>/integrations/<slug>?addAccount=1&oauthClient=1&…`: the Register OAuth app form,
/// pre-filled with the non-secret fields; the person types the secret there.
pub(super) async fn clients_create_handoff(
    engine: &Engine,
    caller: &Caller,
    args: &Value,
) -> CoreResult {
    let a = Args::new(
        CLIENTS_HANDOFF,
        args,
        &[
            "integration",
            "owner",
            "slug",
            "grant",
            "clientId",
            "authorizationUrl",
            "tokenUrl",
            "resource",
            "label",
        ],
    )
    .map_err(|e| secret_refused(args, e))?;
    let integration = a.required("integration")?;
    if integration == BUILTIN_INTEGRATION {
        return Err(a
            .invalid("the built-in integration takes no OAuth clients")
            .into());
    }
    engine.get_integration(caller, &integration).await?;
    let mut query = vec![
        ("addAccount", "1".to_owned()),
        ("oauthClient", "1".to_owned()),
    ];
    query.extend(
        a.opt_owner("owner")?
            .map(|o| ("owner", o.as_str().to_owned())),
    );
    for (key, param) in [
        ("slug", "clientSlug"),
        ("grant", "grant"),
        ("clientId", "clientId"),
        ("authorizationUrl", "authorizationUrl"),
        ("tokenUrl", "tokenUrl"),
        ("resource", "resource"),
        ("label", "label"),
    ] {
        query.extend(a.str(key)?.filter(|v| !v.is_empty()).map(|v| (param, v)));
    }
    let url = web_link(engine, &integration, &query)?;
    Ok(json!({
        "url": url,
        "instructions": "Ask the user to open this URL and register the OAuth app in the Executor \
            web UI, entering the client secret there. Do not ask them to paste the client secret \
            into chat. When they are done, call executor.coreTools.oauth.clients.list to find the \
            client (owner and slug), then executor.coreTools.oauth.start.",
    }))
}

/// `<web base>/api/oauth/callback`, the redirect URI of flows started here.
fn callback_url(engine: &Engine) -> Option<String> {
    engine
        .web_base_url()
        .map(|base| format!("{base}{OAUTH_CALLBACK_PATH}"))
}

fn no_callback() -> Box<ToolError> {
    Box::new(ToolError::new(
        "oauth_start_error",
        "No redirect URI: this executor serves no web address. Run `executor web` (or set \
         EXECUTOR_WEB_BASE_URL), or pass redirectUri.",
    ))
}

pub(super) async fn clients_register_dynamic(
    engine: &Engine,
    caller: &Caller,
    args: &Value,
) -> CoreResult {
    let a = Args::new(
        CLIENTS_REGISTER,
        args,
        &[
            "owner",
            "slug",
            "issuer",
            "registrationEndpoint",
            "authorizationUrl",
            "tokenUrl",
            "resource",
            "scopes",
            "tokenEndpointAuthMethodsSupported",
            "clientName",
            "redirectUri",
            "originIntegration",
        ],
    )?;
    let redirect_uri = match a.str("redirectUri")?.filter(|r| !r.trim().is_empty()) {
        Some(uri) => uri,
        None => callback_url(engine).ok_or_else(no_callback)?,
    };
    let slug = engine
        .register_dynamic_client(
            caller,
            RegisterDynamicClient {
                owner: a.owner("owner")?,
                slug: a.str("slug")?,
                issuer: a.str("issuer")?,
                registration_endpoint: a.required("registrationEndpoint")?,
                authorization_url: a.required("authorizationUrl")?,
                token_url: a.required("tokenUrl")?,
                resource: a.str("resource")?,
                scopes: a.strings("scopes")?.unwrap_or_default(),
                token_endpoint_auth_methods_supported: a
                    .strings("tokenEndpointAuthMethodsSupported")?,
                client_name: a.str("clientName")?,
                redirect_uri,
                origin_integration: a.str("originIntegration")?,
            },
        )
        .await?;
    Ok(json!({"client": slug}))
}

/// `removed: false` when no client of that owner has the slug (the HTTP route is idempotent and
/// says true; an agent sweeping slugs is better told which ones were not there).
pub(super) async fn clients_remove(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    let a = Args::new(CLIENTS_REMOVE, args, &["owner", "slug"])?;
    let removed = engine
        .remove_oauth_client(caller, a.owner("owner")?, &a.required("slug")?)
        .await?;
    Ok(json!({"removed": removed}))
}

pub(super) async fn probe(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    let a = Args::new(PROBE, args, &["url"])?;
    let p = engine.probe_oauth(caller, &a.required("url")?).await?;
    Ok(oauth_probe_json(&p))
}

/// Client credentials mint the connection here; an authorization-code client answers with
/// the URL the person must open (the callback then creates the connection).
pub(super) async fn start(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    let a = Args::new(
        START,
        args,
        &[
            "client",
            "clientOwner",
            "owner",
            "name",
            "integration",
            "template",
            "identityLabel",
            "redirectUri",
            "scopes",
        ],
    )?;
    let client = a.required("client")?;
    let client_owner = a.owner("clientOwner")?;
    let redirect_uri = match a.str("redirectUri")?.filter(|r| !r.trim().is_empty()) {
        Some(uri) => uri,
        None => match callback_url(engine) {
            Some(uri) => uri,
            // Client credentials need no redirect; a code flow cannot start without one.
            None => {
                let code_flow = engine.list_oauth_clients(caller).await?.iter().any(|c| {
                    c.owner == client_owner
                        && c.slug == client
                        && c.grant == GRANT_AUTHORIZATION_CODE
                });
                if code_flow {
                    return Err(no_callback().into());
                }
                String::new()
            }
        },
    };
    let started = engine
        .start_oauth(
            caller,
            OAuthStart {
                client,
                client_owner,
                owner: a.owner("owner")?,
                name: a.required("name")?,
                integration: a.required("integration")?,
                template: a.required("template")?,
                identity_label: a.str("identityLabel")?,
                redirect_uri,
                scopes: a.strings("scopes")?.unwrap_or_default(),
            },
        )
        .await?;
    Ok(match started {
        OAuthStarted::Connected(c) => {
            json!({"status": "connected", "connection": oauth_connection_json(&c)})
        }
        OAuthStarted::Redirect {
            authorization_url,
            state,
        } => json!({
            "status": "redirect",
            "authorizationUrl": authorization_url,
            "state": state,
            "instructions": "Ask the user to open authorizationUrl in their browser and sign in; \
                the connection is created when the provider redirects back. Then call \
                executor.coreTools.connections.list to check it. If they give up, call \
                executor.coreTools.oauth.cancel with this state.",
        }),
    })
}

pub(super) async fn cancel(engine: &Engine, caller: &Caller, args: &Value) -> CoreResult {
    let a = Args::new(CANCEL, args, &["state"])?;
    engine.cancel_oauth(caller, &a.required("state")?).await?;
    Ok(json!({"cancelled": true}))
}
