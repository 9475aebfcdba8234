//! The API's own OpenAPI 3.1 document (`GET /api/openapi.json`), generated from the route
//! handlers' `#[utoipa::path]` attributes and the body types, and a reference page built from
//! it (`GET /api/docs`). Both are public: they describe the API and hold no data.

pub(crate) mod schemas;

use std::sync::OnceLock;

use axum::Extension;
use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::{
    approval_routes, graphql_routes, health_routes, mcp_routes, oauth_routes, openapi_routes,
    routes, team, toolkit_routes,
};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Executor API",
        description = "Configure integrations (MCP servers, OpenAPI specs, GraphQL APIs), their connections and tool policies, and run code against them. Every route but health, the OAuth callback and these documents needs `Authorization: Bearer <token>`. Errors are JSON objects whose `_tag` names them.",
        license(name = "MIT")
    ),
    modifiers(&Bearer),
    security(("bearer" = [])),
    paths(
        openapi_json, docs_page,
        routes::health, routes::readiness, routes::server_info,
        routes::list_integrations, routes::get_integration, routes::patch_integration, routes::remove_integration,
        routes::list_connections, routes::create_connection, routes::get_connection, routes::patch_connection,
        routes::remove_connection, routes::refresh_connection, routes::refresh_connection_diff,
        routes::list_tool_changes, routes::accept_tool_change,
        routes::list_policies, routes::create_policy, routes::update_policy, routes::remove_policy,
        routes::list_providers, routes::provider_items,
        routes::list_tools, routes::tool_schema,
        routes::list_executions, routes::execute, routes::execution_events, routes::get_execution,
        routes::execution_journal, routes::resume_execution,
        approval_routes::session_paused, approval_routes::session_resume,
        mcp_routes::probe_mcp, mcp_routes::add_mcp_server, mcp_routes::get_mcp_server,
        mcp_routes::remove_mcp_server, mcp_routes::set_config, mcp_routes::set_auth,
        graphql_routes::add_integration, graphql_routes::get_integration, graphql_routes::get_config,
        graphql_routes::set_config,
        openapi_routes::preview, openapi_routes::add_spec, openapi_routes::get_integration,
        openapi_routes::remove_integration, openapi_routes::get_config, openapi_routes::configure,
        openapi_routes::update_spec,
        health_routes::get_spec, health_routes::put_spec, health_routes::candidates,
        health_routes::check_connection, health_routes::validate,
        oauth_routes::list_clients, oauth_routes::put_client, oauth_routes::register_dynamic,
        oauth_routes::remove_client, oauth_routes::start, oauth_routes::complete, oauth_routes::cancel,
        oauth_routes::probe, oauth_routes::callback, oauth_routes::await_result,
        oauth_routes::client_metadata, oauth_routes::client_metadata_for_target,
        toolkit_routes::list_toolkits, toolkit_routes::create_toolkit, toolkit_routes::get_toolkit,
        toolkit_routes::update_toolkit, toolkit_routes::remove_toolkit, toolkit_routes::toolkit_tools,
        toolkit_routes::list_policies, toolkit_routes::create_policy, toolkit_routes::update_policy,
        toolkit_routes::remove_policy, toolkit_routes::list_connections,
        toolkit_routes::create_connection, toolkit_routes::remove_connection,
    ),
    tags(
        (name = "integrations", description = "Configured MCP servers, OpenAPI specs and GraphQL APIs"),
        (name = "connections", description = "Accounts (credentials) of an integration"),
        (name = "tools", description = "The catalog agents call"),
        (name = "policies", description = "Which tool calls run, need a person's approval, or are blocked"),
        (name = "toolkits", description = "Named allow-lists of tools, each its own MCP endpoint `/mcp/toolkits/<slug>`"),
        (name = "executions", description = "Running code against the tools; pauses, approvals and history"),
        (name = "mcp", description = "Adding and configuring MCP servers"),
        (name = "openapi", description = "Adding and configuring OpenAPI specs"),
        (name = "graphql", description = "Adding and configuring GraphQL endpoints"),
        (name = "health", description = "Health checks of connections"),
        (name = "oauth", description = "OAuth clients and sign-in flows"),
        (name = "providers", description = "Credential providers"),
        (name = "meta", description = "This server"),
    )
)]
struct ApiDoc;

/// The team server's own routes (`executor serve`), added to [`ApiDoc`] in the document it
/// serves. Kept apart so the local server's document (and `web/openapi.json`, and schemathesis,
/// which fuzzes a local server) lists only what the local server answers.
#[derive(OpenApi)]
#[openapi(
    paths(
        team::routes::setup_status, team::routes::invite_status, team::routes::sign_up,
        team::routes::sign_in, team::routes::sign_out, team::routes::me, team::routes::roles,
        team::routes::members, team::routes::set_role, team::routes::remove_member,
        team::routes::api_keys, team::routes::create_api_key, team::routes::delete_api_key,
        team::routes::invites, team::routes::create_invite, team::routes::revoke_invite,
        team::routes::audit_events,
        team::oauth::protected_resource_root, team::oauth::protected_resource,
        team::oauth::authorization_server, team::oauth::register, team::oauth::authorize,
        team::oauth::token, team::oauth::revoke, team::oauth::consent_view,
        team::oauth::answer_consent, team::oauth::cli_login, team::oauth::device_code,
        team::oauth::device_token, team::oauth::device_status, team::oauth::approve_device,
    ),
    tags(
        (name = "accounts", description = "The team server's people: set-up, sign-in, members, roles, invites, API keys, the audit log"),
        (name = "oauth-server", description = "The team server as the OAuth 2.1 authorization server of its MCP endpoints, and the CLI's device login"),
    )
)]
struct TeamDoc;

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The document, built once.
pub(crate) fn document() -> &'static utoipa::openapi::OpenApi {
    static DOC: OnceLock<utoipa::openapi::OpenApi> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = ApiDoc::openapi();
        doc.info.version = env!("CARGO_PKG_VERSION").to_owned();
        doc
    })
}

/// The team server's document: [`document`] and its own routes. Its requests are signed in
/// by a session (cookie or bearer), an API key or, on `/mcp`, an OAuth access token.
pub(crate) fn team_document() -> &'static utoipa::openapi::OpenApi {
    static DOC: OnceLock<utoipa::openapi::OpenApi> = OnceLock::new();
    DOC.get_or_init(|| {
        let mut doc = document().clone();
        doc.merge(TeamDoc::openapi());
        doc.info.description = Some(
            "The team server (`executor serve`): configure integrations, their connections and tool policies, and run code against them, as a signed-in member. Requests are signed in by the session cookie, `Authorization: Bearer` with a session token or an API key (`exk_…`), or on `/mcp` an OAuth access token. Errors are JSON objects whose `_tag` names them; the OAuth endpoints answer RFC 6749 errors.".to_owned(),
        );
        doc
    })
}

fn document_json(team: bool) -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    static TEAM_JSON: OnceLock<String> = OnceLock::new();
    let (cell, doc) = if team {
        (&TEAM_JSON, team_document())
    } else {
        (&JSON, document())
    };
    cell.get_or_init(|| doc.to_pretty_json().unwrap_or_else(|_| "{}".to_owned()))
}

/// This document.
#[utoipa::path(get, path = "/api/openapi.json", tag = "meta", security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", body = Object)))]
pub(crate) async fn openapi_json(team: Option<Extension<crate::team::Team>>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        document_json(team.is_some()),
    )
        .into_response()
}

/// A reference page of the API, built from this document.
#[utoipa::path(get, path = "/api/docs", tag = "meta", security(()),
    responses((status = 200, description = "HTML", body = String, content_type = "text/html")))]
pub(crate) async fn docs_page(team: Option<Extension<crate::team::Team>>) -> Html<&'static str> {
    static PAGE: OnceLock<String> = OnceLock::new();
    static TEAM_PAGE: OnceLock<String> = OnceLock::new();
    if team.is_some() {
        return Html(TEAM_PAGE.get_or_init(|| render_page(team_document())));
    }
    Html(PAGE.get_or_init(|| render_page(document())))
}

fn esc(text: &str) -> String {
    html_escape::encode_text(text).into_owned()
}

/// The operations a path item holds, with their methods.
fn operations(
    item: &utoipa::openapi::PathItem,
) -> impl Iterator<Item = (&'static str, &Operation)> {
    [
        ("GET", &item.get),
        ("POST", &item.post),
        ("PUT", &item.put),
        ("PATCH", &item.patch),
        ("DELETE", &item.delete),
    ]
    .into_iter()
    .filter_map(|(method, op)| op.as_ref().map(|op| (method, op)))
}

/// `(METHOD, path, operation)`.
type Entry<'a> = (String, String, &'a Operation);

/// Server-rendered: one section per tag, one entry per operation (method, path, what it
/// takes, what it answers, the error tags). No script, so the page works under any policy.
fn render_page(doc: &utoipa::openapi::OpenApi) -> String {
    let mut by_tag: Vec<(String, Vec<Entry<'_>>)> = doc
        .tags
        .iter()
        .flatten()
        .map(|t| (t.name.clone(), Vec::new()))
        .collect();
    for (path, item) in doc.paths.paths.iter() {
        for (method, op) in operations(item) {
            let tag = op
                .tags
                .as_ref()
                .and_then(|t| t.first())
                .cloned()
                .unwrap_or_default();
            match by_tag.iter_mut().find(|(name, _)| *name == tag) {
                Some((_, list)) => list.push((method.to_owned(), path.clone(), op)),
                None => by_tag.push((tag, vec![(method.to_owned(), path.clone(), op)])),
            }
        }
    }
    let mut html = String::from(concat!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
        "<meta name=\"color-scheme\" content=\"light dark\"><title>Executor API reference</title><style>",
        "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.45}",
        "code{font-family:ui-monospace,monospace}.op{border:1px solid #8884;border-radius:8px;padding:.6rem .9rem;margin:.6rem 0}",
        ".m{font-weight:700;display:inline-block;min-width:4.2rem}.muted{opacity:.75}ul{margin:.3rem 0}",
        "</style></head><body><h1>Executor API reference</h1>",
    ));
    if let Some(d) = &doc.info.description {
        html.push_str(&format!("<p>{}</p>", esc(d)));
    }
    html.push_str(
        "<p>The machine-readable document: <a href=\"/api/openapi.json\"><code>/api/openapi.json</code></a> (OpenAPI 3.1).</p><nav><ul>",
    );
    for (tag, ops) in &by_tag {
        if !ops.is_empty() {
            html.push_str(&format!("<li><a href=\"#{0}\">{0}</a></li>", esc(tag)));
        }
    }
    html.push_str("</ul></nav>");
    for (tag, ops) in &by_tag {
        if ops.is_empty() {
            continue;
        }
        let about = doc
            .tags
            .iter()
            .flatten()
            .find(|t| &t.name == tag)
            .and_then(|t| t.description.clone())
            .unwrap_or_default();
        html.push_str(&format!(
            "<h2 id=\"{0}\">{0}</h2><p class=\"muted\">{1}</p>",
            esc(tag),
            esc(&about)
        ));
        for (method, path, op) in ops {
            html.push_str(&format!(
                "<div class=\"op\"><div><span class=\"m\">{method}</span><code>{}</code></div>",
                esc(path)
            ));
            if let Some(summary) = &op.summary {
                html.push_str(&format!("<p>{}</p>", esc(summary)));
            }
            if let Some(params) = &op.parameters
                && !params.is_empty()
            {
                html.push_str("<ul>");
                for p in params {
                    let utoipa::openapi::RefOr::T(p) = p else {
                        continue;
                    };
                    html.push_str(&format!(
                        "<li><code>{}</code> <span class=\"muted\">({})</span> {}</li>",
                        esc(&p.name),
                        match p.parameter_in {
                            utoipa::openapi::path::ParameterIn::Path => "path",
                            utoipa::openapi::path::ParameterIn::Query
                            | utoipa::openapi::path::ParameterIn::QueryString => "query",
                            utoipa::openapi::path::ParameterIn::Header => "header",
                            utoipa::openapi::path::ParameterIn::Cookie => "cookie",
                        },
                        esc(p.description.as_deref().unwrap_or_default())
                    ));
                }
                html.push_str("</ul>");
            }
            if op.request_body.is_some() {
                html.push_str("<p class=\"muted\">Takes a JSON body (schema in the document).</p>");
            }
            html.push_str("<ul>");
            for (status, response) in op.responses.responses.iter() {
                let description = match response {
                    utoipa::openapi::RefOr::T(r) => r.description.clone(),
                    utoipa::openapi::RefOr::Ref(r) => r.ref_location.clone(),
                };
                html.push_str(&format!(
                    "<li><code>{}</code> {}</li>",
                    esc(status),
                    esc(&description)
                ));
            }
            html.push_str("</ul></div>");
        }
    }
    html.push_str("</body></html>");
    html
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// `(METHOD, /api/path)` of every route the routers declare, read from their source: a
    /// route added without a `#[utoipa::path]` fails here.
    fn routed() -> BTreeSet<(String, String)> {
        routes_in(&[
            include_str!("../routes.rs"),
            include_str!("../mcp_routes.rs"),
            include_str!("../approval_routes.rs"),
            include_str!("../graphql_routes.rs"),
            include_str!("../openapi_routes.rs"),
            include_str!("../health_routes.rs"),
            include_str!("../oauth_routes.rs"),
            include_str!("../toolkit_routes.rs"),
        ])
    }

    /// The team server's routes (under `/api`, but for the `/.well-known` documents).
    fn team_routed() -> BTreeSet<(String, String)> {
        routes_in(&[
            include_str!("../team/routes.rs"),
            include_str!("../team/oauth.rs"),
        ])
    }

    fn routes_in(sources: &[&str]) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        for source in sources {
            // `.route("path", get(a).post(b))`, possibly over several lines.
            let mut rest: &str = source;
            while let Some(at) = rest.find(".route(") {
                rest = &rest[at + ".route(".len()..];
                let Some(open) = rest.find('"') else { break };
                let Some(close) = rest[open + 1..].find('"') else {
                    break;
                };
                let path = &rest[open + 1..open + 1 + close];
                // The method router is the rest of the `.route(` call: up to its closing paren.
                let mut depth = 1;
                let end = rest
                    .char_indices()
                    .find(|&(_, c)| {
                        match c {
                            '(' => depth += 1,
                            ')' => depth -= 1,
                            _ => {}
                        }
                        depth == 0
                    })
                    .map_or(rest.len(), |(i, _)| i);
                let methods = &rest[open + 1 + close..end];
                for method in ["get", "post", "put", "patch", "delete"] {
                    let call = format!("{method}(");
                    if methods.match_indices(&call).any(|(i, _)| {
                        i == 0
                            || !methods.as_bytes()[i - 1].is_ascii_alphanumeric()
                                && methods.as_bytes()[i - 1] != b'_'
                    }) {
                        let path = path.replace("{*", "{");
                        let full = if path.starts_with("/.well-known") {
                            path
                        } else {
                            format!("/api{path}")
                        };
                        out.insert((method.to_uppercase(), full));
                    }
                }
            }
        }
        out
    }

    fn documented() -> BTreeSet<(String, String)> {
        documented_in(document())
    }

    fn documented_in(doc: &utoipa::openapi::OpenApi) -> BTreeSet<(String, String)> {
        let mut out = BTreeSet::new();
        for (path, item) in doc.paths.paths.iter() {
            for (method, _) in operations(item) {
                out.insert((method.to_owned(), path.clone()));
            }
        }
        out
    }

    #[test]
    fn the_team_document_adds_every_team_route_and_nothing_else() {
        let routed = team_routed();
        assert!(
            routed.len() > 25,
            "the route scan found too little: {routed:?}"
        );
        let added: BTreeSet<_> = documented_in(team_document())
            .difference(&documented())
            .cloned()
            .collect();
        assert_eq!(
            routed.difference(&added).collect::<Vec<_>>(),
            Vec::<&(String, String)>::new(),
            "team routes missing from the team document"
        );
        assert_eq!(
            added.difference(&routed).collect::<Vec<_>>(),
            Vec::<&(String, String)>::new(),
            "documented team operations no router serves"
        );
    }

    #[test]
    fn every_route_is_in_the_document_and_nothing_else_is() {
        let routed = routed();
        assert!(
            routed.len() > 40,
            "the route scan found too little: {routed:?}"
        );
        let documented = documented();
        let missing: Vec<_> = routed.difference(&documented).collect();
        assert!(
            missing.is_empty(),
            "routes missing from the OpenAPI document: {missing:?}"
        );
        let extra: Vec<_> = documented.difference(&routed).collect();
        assert!(
            extra.is_empty(),
            "documented operations no router serves: {extra:?}"
        );
    }

    #[test]
    fn the_document_is_openapi_3_1_with_bearer_auth_and_error_bodies() {
        let json: serde_json::Value = serde_json::from_str(document_json(false)).unwrap();
        assert!(json["openapi"].as_str().unwrap().starts_with("3.1"));
        assert_eq!(
            json["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
        assert_eq!(
            json["paths"]["/api/health"]["get"]["security"],
            serde_json::json!([{}])
        );
        let get = &json["paths"]["/api/integrations/{slug}"]["get"];
        assert_eq!(
            get["responses"]["404"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/Error"
        );
        assert_eq!(
            json["components"]["schemas"]["Error"]["required"],
            serde_json::json!(["_tag"])
        );
        // Every operation has a summary a person can read.
        let mut unsummarised = Vec::new();
        for (path, item) in json["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                if op.get("summary").is_none() {
                    unsummarised.push(format!("{method} {path}"));
                }
            }
        }
        assert!(
            unsummarised.is_empty(),
            "operations without a summary: {unsummarised:#?}"
        );
    }

    #[test]
    fn the_reference_page_lists_every_operation() {
        let page = render_page(document());
        for (method, path) in documented() {
            assert!(
                page.contains(&format!(
                    "<span class=\"m\">{method}</span><code>{}</code>",
                    esc(&path)
                )),
                "{method} {path}"
            );
        }
    }

    /// The console's client types are generated from `web/openapi.json`; it must be this
    /// document. `UPDATE_API_DOC=1 cargo test -p executor-server api_doc` rewrites it (then
    /// `npm run gen:api` in `web/`).
    #[test]
    fn the_consoles_copy_of_the_document_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../web/openapi.json");
        let current = format!("{}\n", document_json(false));
        if std::env::var_os("UPDATE_API_DOC").is_some() {
            std::fs::write(path, &current).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == current,
            "web/openapi.json is not this document: run `UPDATE_API_DOC=1 cargo test -p executor-server api_doc`, then `npm run gen:api` in web/"
        );
    }
}
