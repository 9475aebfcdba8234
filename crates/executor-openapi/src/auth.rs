//! Auth methods derived from a spec's security schemes (spec §7 "Add") and the preview
//! (`POST /api/openapi/preview`).
//!
//! Each security requirement object whose schemes can all be rendered onto headers or query
//! parameters becomes one `apikey-<index>` method (0-based, in document order: top-level
//! `security`, then operations' own, then schemes no requirement names): `apiKey` in header or
//! query → that placement; `http bearer` → `Authorization` with prefix `"Bearer "`;
//! `http basic` → `Authorization` with prefix `"Basic "` whose value is `base64(user:pass)`
//! (see [`encode_basic_credentials`]). A requirement naming several schemes becomes one method
//! with one placement (and one credential variable, named after its scheme) per scheme.
//! OAuth2 / OpenID Connect schemes are listed as presets in the preview and, after those, offered
//! as a pasted bearer token (flows Executor cannot run, implicit and password, are reported in
//! [`DerivedAuth::skipped`]); a spec with no scheme at all is offered a bearer token; cookie API
//! keys and other HTTP schemes are not renderable and are reported too.

use std::collections::BTreeMap;

use executor_core::auth::{AuthMethod, Carrier, Placement};
use executor_core::slugify;
use serde::Serialize;
use serde_json::{Value, json};

use crate::b64;
use crate::extract::{ExtractionFailure, named_operations};
use crate::model::*;

/// The value of a Basic `Authorization` credential: `base64(user:pass)`. The stored placement
/// adds the `"Basic "` prefix.
pub fn encode_basic_credentials(user: &str, password: &str) -> String {
    b64::encode(format!("{user}:{password}").as_bytes())
}

fn placement(scheme: &SecurityScheme, variable: Option<String>) -> Option<Placement> {
    let (carrier, name, prefix) = match &scheme.kind {
        SecuritySchemeKind::ApiKey {
            location: ApiKeyLocation::Header,
            param_name,
        } => (Carrier::Header, param_name.clone(), None),
        SecuritySchemeKind::ApiKey {
            location: ApiKeyLocation::Query,
            param_name,
        } => (Carrier::Query, param_name.clone(), None),
        SecuritySchemeKind::Http { scheme: s, .. } if s == "bearer" => (
            Carrier::Header,
            "Authorization".to_owned(),
            Some("Bearer ".to_owned()),
        ),
        SecuritySchemeKind::Http { scheme: s, .. } if s == "basic" => (
            Carrier::Header,
            "Authorization".to_owned(),
            Some("Basic ".to_owned()),
        ),
        _ => return None,
    };
    Some(Placement {
        carrier,
        name,
        prefix,
        variable,
        literal: None,
    })
}

fn single_label(scheme: &SecurityScheme) -> Option<String> {
    match &scheme.kind {
        SecuritySchemeKind::Http { scheme: s, .. } if s == "bearer" => {
            Some("Bearer token".to_owned())
        }
        SecuritySchemeKind::Http { scheme: s, .. } if s == "basic" => {
            Some("HTTP Basic (base64 of user:password)".to_owned())
        }
        _ => None,
    }
}

/// Requirement objects in document order (top-level, then operations'), then every declared
/// scheme not named by any requirement, deduplicated.
fn requirements(spec: &Spec) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut push = |r: &Vec<String>| {
        let mut sorted = r.clone();
        sorted.sort();
        if !r.is_empty()
            && !out.iter().any(|e| {
                let mut s = e.clone();
                s.sort();
                s == sorted
            })
        {
            out.push(r.clone());
        }
    };
    for r in &spec.security {
        push(r);
    }
    for op in &spec.operations {
        for r in op.security.iter().flatten() {
            push(r);
        }
    }
    for s in &spec.security_schemes {
        if !out.iter().any(|r| r.contains(&s.name)) {
            out.push(vec![s.name.clone()]);
        }
    }
    out
}

/// Auth methods derived from the spec's security schemes (see the module docs).
pub fn derive_auth_methods(spec: &Spec) -> Vec<AuthMethod> {
    derive_auth(spec).methods
}

/// Derived auth methods, and what of the spec's security could not be offered as it is written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DerivedAuth {
    pub methods: Vec<AuthMethod>,
    /// One entry per security scheme (or flow) offered only in part, with the reason; the add
    /// answer lists them with the skipped operations.
    pub skipped: Vec<ExtractionFailure>,
}

fn bearer_placement() -> Placement {
    Placement {
        carrier: Carrier::Header,
        name: "Authorization".to_owned(),
        prefix: Some("Bearer ".to_owned()),
        variable: None,
        literal: None,
    }
}

/// Like [`derive_auth_methods`], with the reasons for what it could not offer as written:
/// OAuth2 and OpenID Connect schemes are also offered as a pasted bearer token (an access token
/// obtained elsewhere), and flows Executor cannot run (implicit, password) are reported; a spec
/// that declares no scheme at all (GitHub's REST description) is offered a bearer token, since
/// most APIs that forget to declare one take it.
pub fn derive_auth(spec: &Spec) -> DerivedAuth {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for req in requirements(spec) {
        let schemes: Vec<&SecurityScheme> = req
            .iter()
            .filter_map(|n| spec.security_schemes.iter().find(|s| s.name == *n))
            .collect();
        if schemes.len() != req.len() {
            continue;
        }
        let several = schemes.len() > 1;
        let placements: Option<Vec<Placement>> = schemes
            .iter()
            .map(|s| {
                let var = several.then(|| {
                    let v = slugify(&s.name);
                    if v.is_empty() { "token".to_owned() } else { v }
                });
                placement(s, var)
            })
            .collect();
        let Some(placements) = placements else {
            continue;
        };
        let label = if several {
            Some(req.join(" + "))
        } else {
            single_label(schemes[0])
        };
        let method = AuthMethod::Apikey {
            slug: format!("apikey-{}", out.len()),
            label,
            placements,
        };
        out.push(method);
    }
    let has_bearer = |out: &[AuthMethod]| {
        out.iter().any(|m| {
            matches!(m, AuthMethod::Apikey { placements, .. } if placements == &[bearer_placement()])
        })
    };
    for s in &spec.security_schemes {
        let what = match &s.kind {
            SecuritySchemeKind::OAuth2 { flows } => {
                let names: Vec<&str> = flows
                    .as_object()
                    .map(|f| f.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                let unsupported: Vec<&str> = names
                    .iter()
                    .copied()
                    .filter(|f| !["authorizationCode", "clientCredentials"].contains(f))
                    .collect();
                if !unsupported.is_empty() {
                    skipped.push(ExtractionFailure {
                        operation: format!("securityScheme {}", s.name),
                        message: format!(
                            "OAuth2 {} flow{} cannot be run by Executor; the scheme is offered as a bearer token (paste an access token obtained elsewhere).",
                            unsupported.join(", "),
                            if unsupported.len() == 1 { "" } else { "s" },
                        ),
                    });
                }
                format!("OAuth2 {}", s.name)
            }
            SecuritySchemeKind::OpenIdConnect { .. } => format!("OpenID Connect {}", s.name),
            SecuritySchemeKind::ApiKey {
                location: ApiKeyLocation::Cookie,
                ..
            }
            | SecuritySchemeKind::Other { .. } => {
                skipped.push(ExtractionFailure {
                    operation: format!("securityScheme {}", s.name),
                    message: "This kind of security scheme cannot be placed by Executor; set the credential as a static header or with an authenticationTemplate.".to_owned(),
                });
                continue;
            }
            SecuritySchemeKind::Http { scheme, .. } if scheme != "bearer" && scheme != "basic" => {
                skipped.push(ExtractionFailure {
                    operation: format!("securityScheme {}", s.name),
                    message: format!("HTTP \"{scheme}\" authentication cannot be placed by Executor; set the Authorization header with an authenticationTemplate."),
                });
                continue;
            }
            _ => continue,
        };
        if !has_bearer(&out) {
            out.push(AuthMethod::Apikey {
                slug: format!("apikey-{}", out.len()),
                label: Some(format!("Bearer token ({what}: an access token)")),
                placements: vec![bearer_placement()],
            });
        }
    }
    if spec.security_schemes.is_empty() {
        out.push(AuthMethod::Apikey {
            slug: format!("apikey-{}", out.len()),
            label: Some("Bearer token (the spec declares no security scheme)".to_owned()),
            placements: vec![bearer_placement()],
        });
    }
    DerivedAuth {
        methods: out,
        skipped,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecuritySchemeSummary {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none", rename = "in")]
    pub location: Option<ApiKeyLocation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub param_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_format: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An apikey method in the add/configure input dialect (`{type:"apiKey", headers, queryParams}`),
/// ready to post back as `authenticationTemplate`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeaderPreset {
    pub slug: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub label: String,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub query_params: BTreeMap<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2Preset {
    /// `oauth-<securitySchemeName>`.
    pub slug: String,
    pub security_scheme: String,
    /// `authorizationCode`, `clientCredentials`, `implicit`, `password`, or `openIdConnect`.
    pub flow: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery_url: Option<String>,
    pub scopes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    pub title: Option<String>,
    pub description: Option<String>,
    pub version: Option<String>,
    pub servers: Vec<Server>,
    pub operation_count: usize,
    pub tags: Vec<String>,
    pub security_schemes: Vec<SecuritySchemeSummary>,
    pub auth_strategies: Vec<AuthMethod>,
    pub header_presets: Vec<HeaderPreset>,
    pub oauth2_presets: Vec<OAuth2Preset>,
    /// Tool names of GET operations without required parameters (cheap "is it alive" calls).
    pub health_check_candidates: Vec<String>,
    /// Operations that could not be read (they will not become tools).
    pub failures: Vec<ExtractionFailure>,
}

fn summary(s: &SecurityScheme) -> SecuritySchemeSummary {
    let mut out = SecuritySchemeSummary {
        name: s.name.clone(),
        kind: String::new(),
        location: None,
        param_name: None,
        scheme: None,
        bearer_format: None,
        description: s.description.clone(),
    };
    match &s.kind {
        SecuritySchemeKind::ApiKey {
            location,
            param_name,
        } => {
            out.kind = "apiKey".into();
            out.location = Some(*location);
            out.param_name = Some(param_name.clone());
        }
        SecuritySchemeKind::Http {
            scheme,
            bearer_format,
        } => {
            out.kind = "http".into();
            out.scheme = Some(scheme.clone());
            out.bearer_format = bearer_format.clone();
        }
        SecuritySchemeKind::OAuth2 { .. } => out.kind = "oauth2".into(),
        SecuritySchemeKind::OpenIdConnect { .. } => out.kind = "openIdConnect".into(),
        SecuritySchemeKind::Other { kind } => out.kind = kind.clone(),
    }
    out
}

fn header_preset(m: &AuthMethod) -> Option<HeaderPreset> {
    let AuthMethod::Apikey {
        slug, placements, ..
    } = m
    else {
        return None;
    };
    let mut headers = BTreeMap::new();
    let mut query_params = BTreeMap::new();
    for p in placements {
        let var = json!({ "type": "variable", "name": p.variable_name().unwrap_or("token") });
        let value = match p.prefix.as_deref().filter(|x| !x.is_empty()) {
            Some(prefix) => json!([prefix, var]),
            None => json!([var]),
        };
        match p.carrier {
            Carrier::Header => headers.insert(p.name.clone(), value),
            Carrier::Query => query_params.insert(p.name.clone(), value),
            Carrier::Env => None,
        };
    }
    Some(HeaderPreset {
        slug: slug.clone(),
        kind: "apiKey",
        label: m.label(),
        headers,
        query_params,
    })
}

fn absolute(url: Option<&Value>, base: Option<&str>) -> Option<String> {
    let url = url?.as_str()?.to_owned();
    if url.starts_with("http://") || url.starts_with("https://") {
        return Some(url);
    }
    match base.and_then(|b| url::Url::parse(b).ok()) {
        Some(b) => b.join(&url).ok().map(|u| u.to_string()).or(Some(url)),
        None => Some(url),
    }
}

fn oauth2_presets(spec: &Spec) -> Vec<OAuth2Preset> {
    let base = spec.servers.first().map(|s| s.url.as_str());
    let mut out = Vec::new();
    for s in &spec.security_schemes {
        match &s.kind {
            SecuritySchemeKind::OAuth2 { flows } => {
                for flow in ["authorizationCode", "clientCredentials"] {
                    let Some(f) = flows.get(flow) else { continue };
                    out.push(OAuth2Preset {
                        slug: format!("oauth-{}", s.name),
                        security_scheme: s.name.clone(),
                        flow: flow.to_owned(),
                        authorization_url: absolute(f.get("authorizationUrl"), base),
                        token_url: absolute(f.get("tokenUrl"), base),
                        discovery_url: None,
                        scopes: f
                            .get("scopes")
                            .and_then(Value::as_object)
                            .map(|o| o.keys().cloned().collect())
                            .unwrap_or_default(),
                    });
                    break;
                }
            }
            SecuritySchemeKind::OpenIdConnect { url } => out.push(OAuth2Preset {
                slug: format!("oauth-{}", s.name),
                security_scheme: s.name.clone(),
                flow: "openIdConnect".to_owned(),
                authorization_url: None,
                token_url: None,
                discovery_url: Some(url.clone()),
                scopes: vec!["openid".to_owned()],
            }),
            _ => {}
        }
    }
    out
}

/// What `POST /api/openapi/preview` shows before an integration is added.
pub fn preview(spec: &Spec) -> Preview {
    let auth_strategies = derive_auth_methods(spec);
    let health_check_candidates = named_operations(spec)
        .into_iter()
        .filter(|(_, op)| {
            op.method == "get"
                && !op.parameters.iter().any(|p| p.required)
                && crate::extract::template_vars(&op.path).is_empty()
        })
        .map(|(name, _)| name)
        .take(20)
        .collect();
    Preview {
        title: spec.title.clone(),
        description: spec.description.clone(),
        version: spec.version.clone(),
        servers: spec.servers.clone(),
        operation_count: spec.operations.len(),
        tags: spec.tags.clone(),
        security_schemes: spec.security_schemes.iter().map(summary).collect(),
        header_presets: auth_strategies.iter().filter_map(header_preset).collect(),
        auth_strategies,
        oauth2_presets: oauth2_presets(spec),
        health_check_candidates,
        failures: spec.failures.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_spec;

    #[test]
    fn derives_methods() {
        let spec = parse_spec(
            r#"{"openapi":"3.0.0","info":{"title":"t","version":"1"},"paths":{},
            "security":[{"key":[]},{"key":[],"app":[]}],
            "components":{"securitySchemes":{
              "key":{"type":"apiKey","in":"header","name":"X-Key"},
              "app":{"type":"apiKey","in":"query","name":"app_id"},
              "bearer":{"type":"http","scheme":"bearer"},
              "basic":{"type":"http","scheme":"basic"},
              "cookie":{"type":"apiKey","in":"cookie","name":"sid"},
              "oauth":{"type":"oauth2","flows":{"clientCredentials":{"tokenUrl":"/token","scopes":{"read":""}}}}
            }}}"#,
        )
        .unwrap();
        let m = serde_json::to_value(derive_auth_methods(&spec)).unwrap();
        assert_eq!(
            m,
            json!([
              {"kind":"apikey","slug":"apikey-0","placements":[{"carrier":"header","name":"X-Key"}]},
              {"kind":"apikey","slug":"apikey-1","label":"key + app","placements":[
                {"carrier":"header","name":"X-Key","variable":"key"},
                {"carrier":"query","name":"app_id","variable":"app"}]},
              {"kind":"apikey","slug":"apikey-2","label":"Bearer token","placements":[
                {"carrier":"header","name":"Authorization","prefix":"Bearer "}]},
              {"kind":"apikey","slug":"apikey-3","label":"HTTP Basic (base64 of user:password)","placements":[
                {"carrier":"header","name":"Authorization","prefix":"Basic "}]}
            ])
        );
        let p = preview(&spec);
        assert_eq!(p.oauth2_presets.len(), 1);
        assert_eq!(p.oauth2_presets[0].slug, "oauth-oauth");
        assert_eq!(
            p.header_presets[0].headers["X-Key"],
            json!([{"type":"variable","name":"token"}])
        );
        assert_eq!(encode_basic_credentials("user", "pass"), "dXNlcjpwYXNz");
    }
}
