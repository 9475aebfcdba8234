//! The schema model read from a standard introspection result, and the introspection itself.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::GraphqlError;
use crate::http::{RequestParts, send_json};

/// The standard `IntrospectionQuery` (type references nested 7 levels). It asks only for what every
/// server since the June 2018 spec answers (no `specifiedByURL`, `isRepeatable`, or deprecated
/// arguments), so old servers accept it too.
pub const INTROSPECTION_QUERY: &str = r#"query IntrospectionQuery {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types { ...FullType }
  }
}

fragment FullType on __Type {
  kind
  name
  description
  fields(includeDeprecated: true) {
    name
    description
    args { ...InputValue }
    type { ...TypeRef }
    isDeprecated
    deprecationReason
  }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) {
    name
    description
    isDeprecated
    deprecationReason
  }
  possibleTypes { ...TypeRef }
}

fragment InputValue on __InputValue {
  name
  description
  type { ...TypeRef }
  defaultValue
}

fragment TypeRef on __Type {
  kind
  name
  ofType {
    kind
    name
    ofType {
      kind
      name
      ofType {
        kind
        name
        ofType {
          kind
          name
          ofType {
            kind
            name
            ofType {
              kind
              name
              ofType {
                kind
                name
              }
            }
          }
        }
      }
    }
  }
}"#;

/// How long an introspection request may take, headers and body together.
pub const INTROSPECTION_TIMEOUT: Duration = Duration::from_secs(60);

/// A GraphQL schema as introspection describes it. Serialises compactly (type references as
/// GraphQL type strings such as `"[ID!]!"`) through [`to_json`] / [`from_json`], so the engine can
/// store one snapshot per connection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Schema {
    pub query_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_type: Option<String>,
    /// Every named type, by name.
    pub types: BTreeMap<String, TypeDef>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TypeKind {
    Scalar,
    Object,
    Interface,
    Union,
    Enum,
    InputObject,
}

impl TypeKind {
    /// Object, interface or union: needs a selection set.
    pub fn is_composite(self) -> bool {
        matches!(self, Self::Object | Self::Interface | Self::Union)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeDef {
    pub kind: TypeKind,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Object and interface fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<Field>,
    /// Input object fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_fields: Vec<InputValue>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enum_values: Vec<EnumValue>,
    /// Union members and interface implementations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub possible_types: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interfaces: Vec<String>,
}

impl TypeDef {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Field {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<InputValue>,
    #[serde(rename = "type")]
    pub ty: TypeRef,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_deprecated: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputValue {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "type")]
    pub ty: TypeRef,
    /// The default as GraphQL literal text, e.g. `"10"`, `"ASC"`, `"\"x\""`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_value: Option<String>,
}

impl InputValue {
    /// Non-null without a default: the caller must supply it.
    pub fn is_required(&self) -> bool {
        self.ty.is_non_null() && self.default_value.is_none()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnumValue {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_deprecated: bool,
}

/// A type reference: `Name`, `[T]`, `T!`. Displays (and serialises) as GraphQL type text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeRef {
    Named(String),
    List(Box<TypeRef>),
    NonNull(Box<TypeRef>),
}

impl TypeRef {
    /// The innermost named type.
    pub fn named(&self) -> &str {
        match self {
            Self::Named(n) => n,
            Self::List(t) | Self::NonNull(t) => t.named(),
        }
    }

    pub fn is_non_null(&self) -> bool {
        matches!(self, Self::NonNull(_))
    }

    /// Without an outer `!`.
    pub fn nullable(&self) -> &TypeRef {
        match self {
            Self::NonNull(t) => t,
            other => other,
        }
    }
}

impl fmt::Display for TypeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Named(n) => f.write_str(n),
            Self::List(t) => write!(f, "[{t}]"),
            Self::NonNull(t) => write!(f, "{t}!"),
        }
    }
}

impl FromStr for TypeRef {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if let Some(inner) = s.strip_suffix('!') {
            let inner: TypeRef = inner.parse()?;
            if inner.is_non_null() {
                return Err(format!("invalid GraphQL type `{s}`"));
            }
            return Ok(Self::NonNull(Box::new(inner)));
        }
        if let Some(inner) = s.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
            return Ok(Self::List(Box::new(inner.parse()?)));
        }
        if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Ok(Self::Named(s.to_owned()));
        }
        Err(format!("invalid GraphQL type `{s}`"))
    }
}

impl Serialize for TypeRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for TypeRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Schema {
    pub fn get(&self, name: &str) -> Option<&TypeDef> {
        self.types.get(name)
    }

    /// The root type of an operation kind (`"query"` / `"mutation"`).
    pub fn root(&self, kind: &str) -> Option<&TypeDef> {
        let name = match kind {
            "query" => self.query_type.as_deref(),
            "mutation" => self.mutation_type.as_deref(),
            "subscription" => self.subscription_type.as_deref(),
            _ => None,
        }?;
        self.get(name)
    }

    /// Whether `ty` (after unwrapping) names an object, interface or union.
    pub fn is_composite(&self, ty: &TypeRef) -> bool {
        self.get(ty.named()).is_some_and(|t| t.kind.is_composite())
    }
}

/// The compact snapshot of a schema (what [`from_json`] reads back).
pub fn to_json(schema: &Schema) -> Value {
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

/// Reads a snapshot written by [`to_json`].
pub fn from_json(json: &Value) -> Result<Schema, GraphqlError> {
    Schema::deserialize(json)
        .map_err(|e| GraphqlError::Introspection(format!("Invalid stored GraphQL schema: {e}")))
}

// ---------------------------------------------------------------------------------------------
// Introspection JSON → Schema

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSchema {
    query_type: Option<RawName>,
    mutation_type: Option<RawName>,
    subscription_type: Option<RawName>,
    types: Vec<RawType>,
}

#[derive(Deserialize)]
struct RawName {
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawType {
    kind: String,
    name: Option<String>,
    description: Option<String>,
    fields: Option<Vec<RawField>>,
    input_fields: Option<Vec<RawInputValue>>,
    interfaces: Option<Vec<RawTypeRef>>,
    enum_values: Option<Vec<RawEnumValue>>,
    possible_types: Option<Vec<RawTypeRef>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawField {
    name: String,
    description: Option<String>,
    #[serde(default)]
    args: Vec<RawInputValue>,
    #[serde(rename = "type")]
    ty: RawTypeRef,
    #[serde(default)]
    is_deprecated: bool,
    deprecation_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawInputValue {
    name: String,
    description: Option<String>,
    #[serde(rename = "type")]
    ty: RawTypeRef,
    default_value: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEnumValue {
    name: String,
    description: Option<String>,
    #[serde(default)]
    is_deprecated: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTypeRef {
    kind: String,
    name: Option<String>,
    of_type: Option<Box<RawTypeRef>>,
}

impl RawTypeRef {
    fn convert(&self) -> Result<TypeRef, String> {
        match self.kind.as_str() {
            "NON_NULL" | "LIST" => {
                let inner = self
                    .of_type
                    .as_ref()
                    .ok_or_else(|| format!("a {} type reference has no ofType", self.kind))?
                    .convert()?;
                Ok(if self.kind == "LIST" {
                    TypeRef::List(Box::new(inner))
                } else {
                    TypeRef::NonNull(Box::new(inner))
                })
            }
            _ => self
                .name
                .clone()
                .map(TypeRef::Named)
                .ok_or_else(|| format!("a {} type reference has no name", self.kind)),
        }
    }
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty())
}

/// Reads a standard introspection result: `{"data":{"__schema":…}}` or `{"__schema":…}`.
pub fn parse_introspection(json: &Value) -> Result<Schema, GraphqlError> {
    let raw_schema = json
        .get("data")
        .and_then(|d| d.get("__schema"))
        .or_else(|| json.get("__schema"));
    let Some(raw_schema) = raw_schema.filter(|s| s.is_object()) else {
        if let Some(messages) = error_messages(json) {
            return Err(GraphqlError::Introspection(format!(
                "The introspection result holds GraphQL errors instead of a schema (is introspection disabled?): {messages}"
            )));
        }
        return Err(GraphqlError::Introspection(
            "This is not a GraphQL introspection result: expected {\"data\":{\"__schema\":…}} or {\"__schema\":…}.".into(),
        ));
    };
    let raw = RawSchema::deserialize(raw_schema).map_err(|e| {
        GraphqlError::Introspection(format!("The introspection result is malformed: {e}"))
    })?;
    let invalid = |e: String| {
        GraphqlError::Introspection(format!("The introspection result is malformed: {e}"))
    };

    let mut types = BTreeMap::new();
    for t in raw.types {
        let Some(name) = t.name else { continue };
        let kind = match t.kind.as_str() {
            "SCALAR" => TypeKind::Scalar,
            "OBJECT" => TypeKind::Object,
            "INTERFACE" => TypeKind::Interface,
            "UNION" => TypeKind::Union,
            "ENUM" => TypeKind::Enum,
            "INPUT_OBJECT" => TypeKind::InputObject,
            other => return Err(invalid(format!("type {name} has unknown kind {other}"))),
        };
        let convert_inputs =
            |values: Option<Vec<RawInputValue>>| -> Result<Vec<InputValue>, String> {
                values
                    .unwrap_or_default()
                    .into_iter()
                    .map(|v| {
                        Ok(InputValue {
                            ty: v.ty.convert()?,
                            name: v.name,
                            description: non_empty(v.description),
                            default_value: v.default_value,
                        })
                    })
                    .collect()
            };
        let fields = t
            .fields
            .unwrap_or_default()
            .into_iter()
            .map(|f| {
                Ok(Field {
                    ty: f.ty.convert()?,
                    args: convert_inputs(Some(f.args))?,
                    name: f.name,
                    description: non_empty(f.description),
                    is_deprecated: f.is_deprecated,
                    deprecation_reason: non_empty(f.deprecation_reason),
                })
            })
            .collect::<Result<Vec<_>, String>>()
            .map_err(invalid)?;
        let names = |refs: Option<Vec<RawTypeRef>>| -> Vec<String> {
            refs.unwrap_or_default()
                .into_iter()
                .filter_map(|r| r.name)
                .collect()
        };
        types.insert(
            name.clone(),
            TypeDef {
                kind,
                description: non_empty(t.description),
                fields,
                input_fields: convert_inputs(t.input_fields).map_err(invalid)?,
                enum_values: t
                    .enum_values
                    .unwrap_or_default()
                    .into_iter()
                    .map(|v| EnumValue {
                        name: v.name,
                        description: non_empty(v.description),
                        is_deprecated: v.is_deprecated,
                    })
                    .collect(),
                possible_types: names(t.possible_types),
                interfaces: names(t.interfaces),
                name,
            },
        );
    }
    let schema = Schema {
        query_type: raw.query_type.map(|n| n.name),
        mutation_type: raw.mutation_type.map(|n| n.name),
        subscription_type: raw.subscription_type.map(|n| n.name),
        types,
    };
    for (kind, root) in [
        ("query", &schema.query_type),
        ("mutation", &schema.mutation_type),
    ] {
        if let Some(root) = root
            && schema.get(root).is_none_or(|t| t.kind != TypeKind::Object)
        {
            return Err(invalid(format!(
                "the {kind} root type {root} is not an object type of the schema"
            )));
        }
    }
    if schema.query_type.is_none() {
        return Err(invalid("the schema has no query root type".into()));
    }
    Ok(schema)
}

/// `"first; second"` from a GraphQL `errors` array, when there is one.
pub(crate) fn error_messages(json: &Value) -> Option<String> {
    let errors = json.get("errors")?.as_array()?;
    if errors.is_empty() {
        return None;
    }
    let messages: Vec<&str> = errors
        .iter()
        .map(|e| {
            e.get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
        })
        .take(5)
        .collect();
    Some(messages.join("; "))
}

/// Runs [`INTROSPECTION_QUERY`] against `endpoint` with the connection's headers and query
/// parameters. Anything but a schema is a [`GraphqlError`] with a message a person can act on.
pub async fn introspect(
    http: &reqwest::Client,
    endpoint: &str,
    headers: &BTreeMap<String, String>,
    query: &BTreeMap<String, String>,
) -> Result<Schema, GraphqlError> {
    let body = serde_json::json!({
        "query": INTROSPECTION_QUERY,
        "operationName": "IntrospectionQuery",
    });
    let parts = RequestParts {
        endpoint,
        headers,
        query,
        timeout: INTROSPECTION_TIMEOUT,
    };
    let response = send_json(http, &parts, &body).await.map_err(|e| {
        GraphqlError::Unreachable(format!(
            "Could not run the GraphQL introspection query against {endpoint}: {e}"
        ))
    })?;
    let status = response.status;
    if status == 401 || status == 403 {
        return Err(GraphqlError::AuthRejected {
            status,
            message: format!(
                "The GraphQL endpoint {endpoint} rejected the credentials with HTTP {status} during introspection{}",
                response.snippet_suffix()
            ),
        });
    }
    let Some(json) = response.json.as_ref() else {
        return Err(GraphqlError::Introspection(format!(
            "{endpoint} does not look like a GraphQL endpoint: the introspection query was answered with HTTP {status}{} and a body that is not JSON{}",
            response
                .content_type
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default(),
            response.snippet_suffix()
        )));
    };
    if json.get("data").is_none() && json.get("errors").is_none() && json.get("__schema").is_none()
    {
        return Err(GraphqlError::Introspection(format!(
            "{endpoint} does not look like a GraphQL endpoint: the introspection query was answered with HTTP {status} and JSON that has neither `data` nor `errors`{}",
            response.snippet_suffix()
        )));
    }
    if !(200..300).contains(&status) && json.pointer("/data/__schema").is_none() {
        let detail = error_messages(json)
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        return Err(GraphqlError::Introspection(format!(
            "The GraphQL introspection query against {endpoint} failed with HTTP {status}{detail}"
        )));
    }
    parse_introspection(json).map_err(|e| match e {
        GraphqlError::Introspection(m) => {
            GraphqlError::Introspection(format!("Introspection of {endpoint} failed. {m}"))
        }
        other => other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn type_refs_round_trip() {
        for s in ["ID", "ID!", "[ID!]!", "[[Int]!]", "[String]"] {
            let t: TypeRef = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
        }
        assert!("ID!!".parse::<TypeRef>().is_err());
        assert!("[ID".parse::<TypeRef>().is_err());
    }

    #[test]
    fn rejects_non_introspection_json() {
        let e = parse_introspection(&json!({"hello": 1})).unwrap_err();
        assert!(
            e.to_string().contains("not a GraphQL introspection result"),
            "{e}"
        );
        let e = parse_introspection(&json!({"errors": [{"message": "introspection is disabled"}]}))
            .unwrap_err();
        assert!(e.to_string().contains("introspection is disabled"), "{e}");
    }

    #[test]
    fn accepts_both_envelopes_and_round_trips() {
        let schema = json!({
            "queryType": {"name": "Query"},
            "mutationType": null,
            "subscriptionType": null,
            "types": [
                {"kind": "OBJECT", "name": "Query", "description": "", "fields": [
                    {"name": "hello", "description": null, "args": [
                        {"name": "to", "description": null, "type": {"kind": "NON_NULL", "name": null, "ofType": {"kind": "SCALAR", "name": "String", "ofType": null}}, "defaultValue": null}
                    ], "type": {"kind": "SCALAR", "name": "String", "ofType": null}, "isDeprecated": false, "deprecationReason": null}
                ], "inputFields": null, "interfaces": [], "enumValues": null, "possibleTypes": null},
                {"kind": "SCALAR", "name": "String", "description": null, "fields": null, "inputFields": null, "interfaces": null, "enumValues": null, "possibleTypes": null}
            ]
        });
        let a = parse_introspection(&json!({"data": {"__schema": schema.clone()}})).unwrap();
        let b = parse_introspection(&json!({"__schema": schema})).unwrap();
        assert_eq!(a, b);
        let hello = a.root("query").unwrap().field("hello").unwrap();
        assert_eq!(hello.args[0].ty.to_string(), "String!");
        assert_eq!(from_json(&to_json(&a)).unwrap(), a);
    }
}
