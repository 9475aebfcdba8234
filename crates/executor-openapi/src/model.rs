//! The normalised model a spec is parsed into. Schemas stay raw JSON (with `$ref`s into
//! `#/components/schemas/…`); everything else (parameters, bodies, responses, path items) has
//! its `$ref`s resolved.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::extract::ExtractionFailure;

/// The dialect the text was written in (Swagger 2.0 is converted to the 3.0 shape on parse).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SpecFormat {
    Swagger2,
    OpenApi30,
    OpenApi31,
}

#[derive(Debug, Clone)]
pub struct Spec {
    pub format: SpecFormat,
    /// The document's own `openapi` / `swagger` field.
    pub spec_version: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub version: Option<String>,
    pub servers: Vec<Server>,
    /// Declared security schemes, in document order.
    pub security_schemes: Vec<SecurityScheme>,
    /// Top-level `security`: each requirement object is the list of scheme names required together.
    pub security: Vec<Vec<String>>,
    /// Declared tag names (document `tags`), then tags only used by operations.
    pub tags: Vec<String>,
    pub operations: Vec<Operation>,
    /// Operations (or parts) that could not be read; extraction reports them.
    pub failures: Vec<ExtractionFailure>,
    /// The whole document in OpenAPI 3 shape, for resolving non-component `$ref`s in schemas.
    pub(crate) doc: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Server {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variables: Vec<ServerVariable>,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerVariable {
    pub name: String,
    #[serde(default)]
    pub default: String,
    #[serde(rename = "enum", default, skip_serializing_if = "Vec::is_empty")]
    pub enum_values: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SecurityScheme {
    pub name: String,
    pub description: Option<String>,
    pub kind: SecuritySchemeKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ApiKeyLocation {
    Header,
    Query,
    Cookie,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SecuritySchemeKind {
    ApiKey {
        location: ApiKeyLocation,
        param_name: String,
    },
    /// `type: http`; `scheme` lowercased (`bearer`, `basic`, …).
    Http {
        scheme: String,
        bearer_format: Option<String>,
    },
    OAuth2 {
        flows: Value,
    },
    OpenIdConnect {
        url: String,
    },
    Other {
        kind: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamLocation {
    Path,
    Query,
    Header,
    Cookie,
}

impl ParamLocation {
    pub fn as_str(self) -> &'static str {
        match self {
            ParamLocation::Path => "path",
            ParamLocation::Query => "query",
            ParamLocation::Header => "header",
            ParamLocation::Cookie => "cookie",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub name: String,
    pub location: ParamLocation,
    pub required: bool,
    pub description: Option<String>,
    pub deprecated: bool,
    /// The schema (or the schema of the first `content` entry), raw.
    pub schema: Option<Value>,
    pub style: Option<String>,
    pub explode: Option<bool>,
    pub allow_reserved: bool,
    /// Set when the parameter is described by `content` (serialised with that media type).
    pub content_type: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MediaType {
    pub content_type: String,
    pub schema: Option<Value>,
    /// `encoding` map (form bodies), raw.
    pub encoding: Option<Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RequestBody {
    pub required: bool,
    pub description: Option<String>,
    pub content: Vec<MediaType>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// `200`, `2XX`, `default`…
    pub status: String,
    pub description: Option<String>,
    pub content: Vec<MediaType>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// Lowercase HTTP method.
    pub method: String,
    pub path: String,
    pub operation_id: Option<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub deprecated: bool,
    /// Path-level and operation-level parameters merged (operation wins on name+location).
    pub parameters: Vec<Parameter>,
    pub request_body: Option<RequestBody>,
    pub responses: Vec<Response>,
    /// Operation- or path-level `servers` (empty = the spec's).
    pub servers: Vec<Server>,
    /// Operation-level `security` (None = inherits the spec's).
    pub security: Option<Vec<Vec<String>>>,
    /// `x-executor-toolPath`, when given.
    pub tool_path: Option<String>,
}

impl Spec {
    /// `components.schemas` as written (refs not yet rewritten).
    pub fn schemas(&self) -> Option<&Map<String, Value>> {
        self.doc
            .get("components")
            .and_then(|c| c.get("schemas"))
            .and_then(Value::as_object)
    }

    /// The whole document in OpenAPI 3 shape (Swagger 2.0 converted).
    pub fn document(&self) -> &Value {
        &self.doc
    }
}

impl Operation {
    /// `GET /pets/{id}`, the name failures and descriptions use.
    pub fn label(&self) -> String {
        format!("{} {}", self.method.to_ascii_uppercase(), self.path)
    }
}
