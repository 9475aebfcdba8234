//! Auth methods ("templates") an integration declares, and how a connection's credential values
//! are rendered onto a request (spec §1.3). Stored form is always placements.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where a placement puts its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Carrier {
    Header,
    Query,
    Env,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub carrier: Carrier,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub literal: Option<String>,
}

impl Placement {
    /// The credential variable this placement reads, if it is not a literal.
    pub fn variable_name(&self) -> Option<&str> {
        if self.literal.is_some() {
            None
        } else {
            Some(self.variable.as_deref().unwrap_or("token"))
        }
    }
}

/// One declared auth method, in its stored (canonical) form.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AuthMethod {
    None {
        slug: String,
    },
    Apikey {
        slug: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        placements: Vec<Placement>,
    },
    Oauth2 {
        slug: String,
    },
    /// MCP stdio: the connection's values become the child process's environment variables
    /// (`{slug:"env", kind:"stdio_env", vars:[...]}`).
    StdioEnv {
        slug: String,
        #[serde(default)]
        vars: Vec<String>,
    },
}

impl AuthMethod {
    pub fn none() -> Self {
        AuthMethod::None {
            slug: "none".to_owned(),
        }
    }

    pub fn slug(&self) -> &str {
        match self {
            AuthMethod::None { slug }
            | AuthMethod::Apikey { slug, .. }
            | AuthMethod::Oauth2 { slug }
            | AuthMethod::StdioEnv { slug, .. } => slug,
        }
    }

    /// Distinct credential variables this method needs, in placement order.
    pub fn variables(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        match self {
            AuthMethod::Apikey { placements, .. } => {
                for p in placements {
                    if let Some(v) = p.variable_name()
                        && !out.iter().any(|x| x == v)
                    {
                        out.push(v.to_owned());
                    }
                }
            }
            AuthMethod::StdioEnv { vars, .. } => {
                for v in vars {
                    if !out.iter().any(|x| x == v) {
                        out.push(v.clone());
                    }
                }
            }
            AuthMethod::None { .. } | AuthMethod::Oauth2 { .. } => {}
        }
        out
    }

    /// The placements a method renders, as the catalog projects them (spec §1.3): an apikey's
    /// own, and for `stdio_env` one `{carrier:"env", name:v, variable:v}` per variable.
    pub fn placements(&self) -> Vec<Placement> {
        match self {
            AuthMethod::Apikey { placements, .. } => placements.clone(),
            AuthMethod::StdioEnv { .. } => self
                .variables()
                .into_iter()
                .map(|v| Placement {
                    carrier: Carrier::Env,
                    name: v.clone(),
                    prefix: None,
                    variable: Some(v),
                    literal: None,
                })
                .collect(),
            AuthMethod::None { .. } | AuthMethod::Oauth2 { .. } => Vec::new(),
        }
    }

    /// Label shown to people: `API key (<first placement name>)` by default.
    pub fn label(&self) -> String {
        match self {
            AuthMethod::None { .. } => "None".to_owned(),
            AuthMethod::Oauth2 { .. } => "OAuth".to_owned(),
            AuthMethod::StdioEnv { .. } => "Environment variables".to_owned(),
            AuthMethod::Apikey { label: Some(l), .. } => l.clone(),
            AuthMethod::Apikey { placements, .. } => match placements.first() {
                Some(p) => format!("API key ({})", p.name),
                None => "API key".to_owned(),
            },
        }
    }
}

/// Picks the method a connection uses: exact slug, else the only declared method, else none.
pub fn select_method<'a>(methods: &'a [AuthMethod], template: &str) -> Option<&'a AuthMethod> {
    methods
        .iter()
        .find(|m| m.slug() == template)
        .or(if methods.len() == 1 {
            methods.first()
        } else {
            None
        })
}

/// Headers and query parameters a method renders from credential values. A placement whose
/// variable has no value is skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    pub headers: BTreeMap<String, String>,
    pub query: BTreeMap<String, String>,
    pub env: BTreeMap<String, String>,
}

pub fn render(method: &AuthMethod, values: &BTreeMap<String, String>) -> Rendered {
    let mut out = Rendered::default();
    for p in &method.placements() {
        let value = match (&p.literal, p.variable_name()) {
            (Some(literal), _) => literal.clone(),
            (None, Some(var)) => match values.get(var) {
                Some(v) => format!("{}{v}", p.prefix.as_deref().unwrap_or("")),
                None => continue,
            },
            (None, None) => continue,
        };
        let target = match p.carrier {
            Carrier::Header => &mut out.headers,
            Carrier::Query => &mut out.query,
            Carrier::Env => &mut out.env,
        };
        target.insert(p.name.clone(), value);
    }
    out
}

// ---- input dialect (add / configure endpoints) ------------------------------------------------

/// One method as an add/configure endpoint received it, before slugs are assigned. `slug` is the
/// caller's (trimmed, `None` when absent or blank); the slug inside `method` is a placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthMethodInput {
    pub slug: Option<String>,
    pub method: AuthMethod,
}

/// Reads one entry of an `authenticationTemplate` array (spec §1.3). Accepted forms:
/// - the stored form: `{kind:"none"|"apikey"|"oauth2", slug?, label?, placements?}`;
/// - the input dialect: `{slug?, type:"apiKey", label?, headers?:{Name: value},
///   queryParams?:{name: value}}`, where a value is a string (a literal) or an array
///   `[prefixLiteral..., {type:"variable", name}]` with at most one variable, last;
/// - `{type:"none"}` and `{type:"oauth2", …}` (OAuth endpoints come with the OAuth flow; only
///   the slug is kept today).
///
/// `Err` is a person-readable decode error (the wire layer answers 400).
pub fn parse_auth_method_input(value: &serde_json::Value) -> Result<AuthMethodInput, String> {
    use serde_json::Value;
    let Value::Object(obj) = value else {
        return Err("An auth method must be a JSON object.".to_owned());
    };
    let slug = match obj.get("slug") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.trim().to_owned()).filter(|s| !s.is_empty()),
        Some(_) => return Err("An auth method's slug must be a string.".to_owned()),
    };
    let label = match obj.get("label") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()).filter(|s| !s.trim().is_empty()),
        Some(_) => return Err("An auth method's label must be a string.".to_owned()),
    };
    if obj.contains_key("kind") {
        let mut canonical = obj.clone();
        canonical
            .entry("slug")
            .or_insert_with(|| Value::String(String::new()));
        if matches!(canonical.get("slug"), Some(Value::Null)) {
            canonical.insert("slug".to_owned(), Value::String(String::new()));
        }
        let method: AuthMethod = serde_json::from_value(Value::Object(canonical))
            .map_err(|e| format!("Invalid auth method: {e}"))?;
        if let AuthMethod::Apikey { placements, .. } = &method {
            if placements.is_empty() {
                return Err("An apikey auth method needs at least one placement.".to_owned());
            }
            if let Some(p) = placements.iter().find(|p| p.name.trim().is_empty()) {
                return Err(format!(
                    "A placement needs a non-empty name (carrier {:?}).",
                    p.carrier
                ));
            }
        }
        return Ok(AuthMethodInput { slug, method });
    }
    let kind = obj.get("type").and_then(Value::as_str).ok_or_else(|| {
        "An auth method needs a \"type\" (\"apiKey\", \"oauth2\" or \"none\") or a stored \"kind\"."
            .to_owned()
    })?;
    let method = match kind {
        "none" => AuthMethod::None {
            slug: String::new(),
        },
        "oauth2" => AuthMethod::Oauth2 {
            slug: String::new(),
        },
        "apiKey" | "apikey" => {
            let mut placements = Vec::new();
            for (field, carrier) in [
                ("headers", Carrier::Header),
                ("queryParams", Carrier::Query),
            ] {
                match obj.get(field) {
                    None | Some(Value::Null) => {}
                    Some(Value::Object(entries)) => {
                        for (name, v) in entries {
                            placements.push(dialect_placement(carrier, name, v)?);
                        }
                    }
                    Some(_) => return Err(format!("{field} must be an object of name → value.")),
                }
            }
            if placements.is_empty() {
                return Err(
                    "An apiKey auth method needs at least one entry in headers or queryParams."
                        .to_owned(),
                );
            }
            AuthMethod::Apikey {
                slug: String::new(),
                label,
                placements,
            }
        }
        other => {
            return Err(format!(
                "Unknown auth method type {other:?}: expected \"apiKey\", \"oauth2\" or \"none\"."
            ));
        }
    };
    Ok(AuthMethodInput { slug, method })
}

/// A dialect value: `"literal"` or `[prefix..., {type:"variable", name}]`.
fn dialect_placement(
    carrier: Carrier,
    name: &str,
    value: &serde_json::Value,
) -> Result<Placement, String> {
    use serde_json::Value;
    if name.trim().is_empty() {
        return Err("A header or query parameter name must not be empty.".to_owned());
    }
    let mut placement = Placement {
        carrier,
        name: name.to_owned(),
        prefix: None,
        variable: None,
        literal: None,
    };
    match value {
        Value::String(s) => placement.literal = Some(s.clone()),
        Value::Array(parts) => {
            let mut prefix = String::new();
            let mut variable: Option<String> = None;
            for (i, part) in parts.iter().enumerate() {
                match part {
                    Value::String(s) => prefix.push_str(s),
                    Value::Object(o)
                        if o.get("type").and_then(Value::as_str) == Some("variable") =>
                    {
                        if i + 1 != parts.len() {
                            return Err(format!(
                                "{name}: a variable must be the last element of the value."
                            ));
                        }
                        let var = o
                            .get("name")
                            .and_then(Value::as_str)
                            .map(str::trim)
                            .filter(|v| !v.is_empty())
                            .ok_or_else(|| format!("{name}: a variable needs a name."))?;
                        variable = Some(var.to_owned());
                    }
                    _ => {
                        return Err(format!(
                            "{name}: each element must be a string or {{\"type\":\"variable\",\"name\":…}}."
                        ));
                    }
                }
            }
            match variable {
                Some(v) => {
                    placement.prefix = Some(prefix).filter(|p| !p.is_empty());
                    placement.variable = Some(v).filter(|v| v != "token");
                }
                None => placement.literal = Some(prefix),
            }
        }
        _ => {
            return Err(format!(
                "{name}: the value must be a string or an array ending in a variable."
            ));
        }
    }
    Ok(placement)
}

fn with_slug(method: AuthMethod, slug: String) -> AuthMethod {
    match method {
        AuthMethod::None { .. } => AuthMethod::None { slug },
        AuthMethod::Oauth2 { .. } => AuthMethod::Oauth2 { slug },
        AuthMethod::StdioEnv { vars, .. } => AuthMethod::StdioEnv { slug, vars },
        AuthMethod::Apikey {
            label, placements, ..
        } => AuthMethod::Apikey {
            slug,
            label,
            placements,
        },
    }
}

/// The slug a method gets when the caller gave none: `none`, `oauth2`, a single placement's
/// carrier (`header` / `query`), else `apikey`.
pub fn default_auth_slug(method: &AuthMethod) -> &'static str {
    match method {
        AuthMethod::None { .. } => "none",
        AuthMethod::Oauth2 { .. } => "oauth2",
        AuthMethod::StdioEnv { .. } => "env",
        AuthMethod::Apikey { placements, .. } if placements.len() == 1 => {
            match placements[0].carrier {
                Carrier::Header => "header",
                Carrier::Query => "query",
                Carrier::Env => "env",
            }
        }
        AuthMethod::Apikey { .. } => "apikey",
    }
}

/// Slug backfill for a whole list (add, or configure with `mode: "replace"`): a caller-supplied
/// slug wins, else the kind default; collisions get `_2`, `_3`…
pub fn assign_auth_slugs(inputs: Vec<AuthMethodInput>) -> Vec<AuthMethod> {
    let mut out: Vec<AuthMethod> = Vec::with_capacity(inputs.len());
    for input in inputs {
        let base = input
            .slug
            .clone()
            .unwrap_or_else(|| default_auth_slug(&input.method).to_owned());
        let mut slug = base.clone();
        let mut n = 2;
        while out.iter().any(|m| m.slug() == slug) {
            slug = format!("{base}_{n}");
            n += 1;
        }
        out.push(with_slug(input.method, slug));
    }
    out
}

/// The "merge" configure flow: an entry whose slug names an existing method replaces it in
/// place, others are appended; blank slugs and slugs repeated within `inputs` get
/// `custom_<random>` (`random` returns the suffix, e.g. 6 base36 characters).
pub fn merge_auth_methods(
    existing: Vec<AuthMethod>,
    inputs: Vec<AuthMethodInput>,
    mut random: impl FnMut() -> String,
) -> Vec<AuthMethod> {
    let mut out = existing;
    let mut seen: Vec<String> = Vec::new();
    for input in inputs {
        let wanted = input.slug.clone().filter(|s| !seen.contains(s));
        let slug = match wanted {
            Some(s) => s,
            None => loop {
                let candidate = format!("custom_{}", random());
                if !out.iter().any(|m| m.slug() == candidate) && !seen.contains(&candidate) {
                    break candidate;
                }
            },
        };
        seen.push(slug.clone());
        let method = with_slug(input.method, slug.clone());
        match out.iter_mut().find(|m| m.slug() == slug) {
            Some(existing) => *existing = method,
            None => out.push(method),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stored_form_round_trips() {
        let m: AuthMethod = serde_json::from_value(json!({
            "slug":"header","kind":"apikey",
            "placements":[{"carrier":"header","name":"Authorization","prefix":"Bearer "}]
        }))
        .unwrap();
        assert_eq!(m.slug(), "header");
        assert_eq!(m.variables(), vec!["token"]);
        assert_eq!(m.label(), "API key (Authorization)");
        let none: AuthMethod =
            serde_json::from_value(json!({"slug":"none","kind":"none"})).unwrap();
        assert_eq!(none, AuthMethod::none());
    }

    #[test]
    fn renders_placements() {
        let m = AuthMethod::Apikey {
            slug: "apikey".into(),
            label: None,
            placements: vec![
                Placement {
                    carrier: Carrier::Header,
                    name: "Authorization".into(),
                    prefix: Some("Bearer ".into()),
                    variable: None,
                    literal: None,
                },
                Placement {
                    carrier: Carrier::Query,
                    name: "app".into(),
                    prefix: None,
                    variable: Some("app".into()),
                    literal: None,
                },
                Placement {
                    carrier: Carrier::Header,
                    name: "X-Fixed".into(),
                    prefix: None,
                    variable: None,
                    literal: Some("1".into()),
                },
            ],
        };
        let values = BTreeMap::from([("token".to_owned(), "s3cret".to_owned())]);
        let r = render(&m, &values);
        assert_eq!(
            r.headers.get("Authorization").map(String::as_str),
            Some("Bearer s3cret")
        );
        assert_eq!(r.headers.get("X-Fixed").map(String::as_str), Some("1"));
        assert!(r.query.is_empty(), "a placement without a value is skipped");
    }

    #[test]
    fn stdio_env_renders_into_env() {
        let m: AuthMethod = serde_json::from_value(
            json!({"slug": "env", "kind": "stdio_env", "vars": ["API_KEY", "REGION", "API_KEY"]}),
        )
        .unwrap();
        assert_eq!(m.slug(), "env");
        assert_eq!(m.label(), "Environment variables");
        assert_eq!(m.variables(), vec!["API_KEY", "REGION"]);
        assert_eq!(
            serde_json::to_value(&m).unwrap(),
            json!({"kind": "stdio_env", "slug": "env", "vars": ["API_KEY", "REGION", "API_KEY"]})
        );
        let values = BTreeMap::from([("API_KEY".to_owned(), "k".to_owned())]);
        let r = render(&m, &values);
        assert_eq!(
            r.env,
            BTreeMap::from([("API_KEY".to_owned(), "k".to_owned())])
        );
        assert!(r.headers.is_empty() && r.query.is_empty());
        let p = &m.placements()[1];
        assert_eq!(
            (p.carrier, p.name.as_str(), p.variable_name()),
            (Carrier::Env, "REGION", Some("REGION"))
        );
    }

    #[test]
    fn selects_methods() {
        let methods = vec![
            AuthMethod::none(),
            AuthMethod::Oauth2 {
                slug: "oauth2".into(),
            },
        ];
        assert_eq!(
            select_method(&methods, "oauth2").map(AuthMethod::slug),
            Some("oauth2")
        );
        assert_eq!(select_method(&methods, "nope"), None);
        assert_eq!(
            select_method(&methods[..1], "nope").map(AuthMethod::slug),
            Some("none")
        );
    }

    #[test]
    fn reads_the_input_dialect() {
        let input = parse_auth_method_input(&json!({
            "type": "apiKey",
            "headers": {"Authorization": ["Bearer ", {"type": "variable", "name": "token"}], "X-Fixed": "1"},
            "queryParams": {"app": [{"type": "variable", "name": "app"}]}
        }))
        .unwrap();
        assert_eq!(input.slug, None);
        let methods = assign_auth_slugs(vec![input]);
        assert_eq!(
            serde_json::to_value(&methods).unwrap(),
            json!([{"kind": "apikey", "slug": "apikey", "placements": [
                {"carrier": "header", "name": "Authorization", "prefix": "Bearer "},
                {"carrier": "header", "name": "X-Fixed", "literal": "1"},
                {"carrier": "query", "name": "app", "variable": "app"}
            ]}])
        );
        assert_eq!(methods[0].label(), "API key (Authorization)");
        assert_eq!(methods[0].variables(), vec!["token", "app"]);

        for bad in [
            json!({"type": "apiKey", "headers": {"X": [{"type": "variable", "name": "a"}, "suffix"]}}),
            json!({"type": "apiKey", "headers": {"X": [{"type": "variable", "name": "a"}, {"type": "variable", "name": "b"}]}}),
            json!({"type": "apiKey", "headers": {"X": 3}}),
            json!({"type": "apiKey"}),
            json!({"type": "digest"}),
            json!({"kind": "apikey", "placements": []}),
            json!("apiKey"),
        ] {
            assert!(parse_auth_method_input(&bad).is_err(), "{bad}");
        }
        // The stored form is accepted as it is; a missing slug is backfilled.
        let stored = parse_auth_method_input(
            &json!({"kind": "apikey", "placements": [{"carrier": "query", "name": "key"}]}),
        )
        .unwrap();
        assert_eq!(assign_auth_slugs(vec![stored])[0].slug(), "query");
    }

    #[test]
    fn slug_backfill_and_merge() {
        let header = |slug: Option<&str>, name: &str| AuthMethodInput {
            slug: slug.map(str::to_owned),
            method: AuthMethod::Apikey {
                slug: String::new(),
                label: None,
                placements: vec![Placement {
                    carrier: Carrier::Header,
                    name: name.into(),
                    prefix: None,
                    variable: None,
                    literal: None,
                }],
            },
        };
        let none = AuthMethodInput {
            slug: None,
            method: AuthMethod::none(),
        };
        let assigned = assign_auth_slugs(vec![
            header(None, "A"),
            header(None, "B"),
            none,
            header(Some("mine"), "C"),
        ]);
        let slugs: Vec<&str> = assigned.iter().map(AuthMethod::slug).collect();
        assert_eq!(slugs, vec!["header", "header_2", "none", "mine"]);

        let mut n = 0;
        let merged = merge_auth_methods(
            assigned,
            vec![
                header(Some("header_2"), "B2"),
                header(None, "D"),
                header(Some("x"), "E"),
                header(Some("x"), "F"),
            ],
            || {
                n += 1;
                format!("r{n}")
            },
        );
        let slugs: Vec<&str> = merged.iter().map(AuthMethod::slug).collect();
        assert_eq!(
            slugs,
            vec![
                "header",
                "header_2",
                "none",
                "mine",
                "custom_r1",
                "x",
                "custom_r2"
            ]
        );
        assert_eq!(merged[1].label(), "API key (B2)", "replaced in place");
    }
}
