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
            | AuthMethod::Oauth2 { slug } => slug,
        }
    }

    /// Distinct credential variables this method needs, in placement order.
    pub fn variables(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        if let AuthMethod::Apikey { placements, .. } = self {
            for p in placements {
                if let Some(v) = p.variable_name()
                    && !out.iter().any(|x| x == v)
                {
                    out.push(v.to_owned());
                }
            }
        }
        out
    }

    /// Label shown to people: `API key (<first placement name>)` by default.
    pub fn label(&self) -> String {
        match self {
            AuthMethod::None { .. } => "None".to_owned(),
            AuthMethod::Oauth2 { .. } => "OAuth".to_owned(),
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
    let AuthMethod::Apikey { placements, .. } = method else {
        return out;
    };
    for p in placements {
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
}
