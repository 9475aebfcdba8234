//! JSON shapes that both the HTTP API and the core tools answer with, built in one place so the
//! two surfaces cannot drift apart. Never a credential value: item ids stay inside.
//!
//! `views.rs`: the JSON shapes the HTTP API and the core tools both answer with (a connection, an
//! OAuth client, a probe, the OAuth connection projection), so the two surfaces cannot drift apart.

use executor_core::address::connection_address;
use executor_store::ConnectionRecord;
use serde_json::{Value, json};

use crate::credentials::oauth::{OAuthClientView, OAuthConnection, OAuthProbe, ORIGIN_DCR};

/// A connection as `GET /api/connections/...` shows it.
pub fn connection_json(record: &ConnectionRecord) -> Value {
    let oauth = record.oauth.as_ref();
    json!({
        "owner": record.owner.as_str(),
        "name": record.name,
        "integration": record.integration,
        "template": record.template,
        "provider": record.provider,
        "address": connection_address(&record.integration, record.owner, &record.name),
        "identityLabel": record.identity_label,
        "description": record.description,
        "expiresAt": record.expires_at,
        "oauthClient": oauth.and_then(|o| o.client.as_deref()),
        "oauthClientOwner": oauth.and_then(|o| o.client_owner).map(|o| o.as_str()),
        "oauthScope": oauth.and_then(|o| o.scope.as_deref()),
        "missingOAuthScopes": oauth.map(|o| o.missing_scopes.as_slice()).unwrap_or_default(),
        "lastHealth": record.last_health,
    })
}

/// The OAuth connection projection of start / complete: a connection without `description` /
/// `lastHealth`, with the token's expiry and OAuth columns.
pub fn oauth_connection_json(c: &OAuthConnection) -> Value {
    let mut connection = c.connection.clone();
    connection.expires_at = c.oauth.expires_at;
    connection.oauth = Some(c.oauth.clone());
    let mut v = connection_json(&connection);
    if let Some(map) = v.as_object_mut() {
        map.remove("description");
        map.remove("lastHealth");
    }
    v
}

/// An OAuth client as `GET /api/oauth/clients` shows it: never its secret.
pub fn oauth_client_json(c: &OAuthClientView) -> Value {
    let mut origin = json!({"kind": "manual"});
    if c.origin_kind == ORIGIN_DCR {
        origin = json!({"kind": ORIGIN_DCR});
        if let Some(i) = &c.origin_integration {
            origin["integration"] = json!(i);
        }
    }
    let mut v = json!({
        "owner": c.owner.as_str(),
        "slug": c.slug,
        "grant": c.grant,
        "authorizationUrl": c.authorization_url,
        "tokenUrl": c.token_url,
        "clientId": c.client_id,
        "origin": origin,
    });
    if let Some(r) = &c.resource {
        v["resource"] = json!(r);
    }
    if let Some(m) = &c.token_endpoint_auth_method {
        v["tokenEndpointAuthMethod"] = json!(m);
    }
    v
}

/// What `POST /api/oauth/probe` found; absent fields are left out.
pub fn oauth_probe_json(p: &OAuthProbe) -> Value {
    let mut v = json!({"authorizationUrl": p.authorization_url, "tokenUrl": p.token_url});
    for (name, value) in [
        ("issuer", p.issuer.clone().map(Value::from)),
        ("resource", p.resource.clone().map(Value::from)),
        (
            "scopesSupported",
            p.scopes_supported.clone().map(Value::from),
        ),
        (
            "registrationEndpoint",
            p.registration_endpoint.clone().map(Value::from),
        ),
        (
            "tokenEndpointAuthMethodsSupported",
            p.token_endpoint_auth_methods_supported
                .clone()
                .map(Value::from),
        ),
        (
            "clientIdMetadataDocumentSupported",
            p.client_id_metadata_document_supported.map(Value::from),
        ),
    ] {
        if let Some(value) = value {
            v[name] = value;
        }
    }
    v
}
