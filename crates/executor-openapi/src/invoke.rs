//! Calling an operation: arguments → request (server, path, query, headers, body), response →
//! [`ToolOutcome`]. Arguments are validated against the binding before any request is made.

// `ToolError` is the agent-facing value every failure becomes; returning it by value keeps the
// one error path simple, and errors are the cold path of a call.
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use executor_core::{ToolError, ToolOutcome};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::b64;
use crate::extract::{containers, is_binary_schema, is_json, is_ndjson, is_textual};
use crate::model::{ParamLocation, Server};

/// What the engine stores with each tool (serialised as JSON in [`crate::OpenApiTool::binding`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Binding {
    /// Uppercase HTTP method.
    pub method: String,
    /// Path template, `{name}` variables.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_id: Option<String>,
    /// Candidate servers (operation-level, else the spec's); the first is the default.
    #[serde(default)]
    pub servers: Vec<BindingServer>,
    #[serde(default)]
    pub parameters: Vec<BindingParam>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<BindingBody>,
    /// Whether the call accepts a `server: {url?, variables?}` argument.
    #[serde(default)]
    pub server_arg: bool,
    /// The success response is declared binary (returned as a ToolFile).
    #[serde(default)]
    pub response_binary: bool,
}

pub type BindingServer = Server;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingParam {
    pub name: String,
    #[serde(rename = "in")]
    pub location: ParamLocation,
    #[serde(default)]
    pub required: bool,
    /// Resolved style (`form`, `simple`, `label`, `matrix`, `spaceDelimited`, `pipeDelimited`,
    /// `deepObject`).
    pub style: String,
    pub explode: bool,
    #[serde(default)]
    pub allow_reserved: bool,
    /// Set for parameters described by `content` (the value is serialised as that media type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// Read from the top-level argument of the same name (false when the name clashes with an
    /// earlier parameter: then only from its container, e.g. `query.id`).
    #[serde(default = "yes")]
    pub top_level: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingBody {
    #[serde(default)]
    pub required: bool,
    /// Media types in spec order; the first is the default.
    pub media: Vec<BindingMedia>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BindingMedia {
    pub content_type: String,
    pub kind: BodyKind,
    /// The media type's `encoding` map (form bodies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoding: Option<Value>,
    /// Top-level body properties declared `format: binary` (Swagger 2 `type: file`), or arrays
    /// of them: a multipart body sends a string given for one as a file's content.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub binary_fields: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyKind {
    Json,
    Form,
    Multipart,
    Text,
    Binary,
}

impl BodyKind {
    pub(crate) fn of(content_type: &str, schema: Option<&Value>) -> BodyKind {
        let e = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if e == "application/x-www-form-urlencoded" {
            BodyKind::Form
        } else if e.starts_with("multipart/") {
            BodyKind::Multipart
        } else if is_json(&e) {
            BodyKind::Json
        } else if schema.is_some_and(is_binary_schema) {
            BodyKind::Binary
        } else if is_textual(&e) {
            BodyKind::Text
        } else {
            BodyKind::Binary
        }
    }
}

/// Per-connection call settings the engine assembles.
#[derive(Debug, Clone)]
pub struct CallConfig {
    /// The integration's `baseUrl` override (wins over the spec's servers).
    pub base_url: Option<String>,
    /// Static integration headers, then rendered auth headers (`executor_core::auth::render`).
    pub headers: BTreeMap<String, String>,
    /// Static integration query parameters, then rendered auth query placements.
    pub query: BTreeMap<String, String>,
    /// Time to wait for the response headers (spec: 110 s).
    pub timeout: Duration,
    /// Time to read a (non-streamed) response body (spec: 60 s).
    pub body_timeout: Duration,
    /// NDJSON / event-stream responses are read up to this many bytes…
    pub stream_max_bytes: usize,
    /// …or for this long, whichever comes first.
    pub stream_max_duration: Duration,
    /// Larger non-streamed bodies fail with `tool_output_too_large` (`details: {bytes, limit}`).
    pub max_body_bytes: usize,
    /// An API at an address written in its URL that this does not allow is refused before it
    /// is dialled (the HTTP client checks every connection it makes; this spares the dial).
    pub network: executor_core::network::NetworkAccess,
}

impl Default for CallConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            headers: BTreeMap::new(),
            query: BTreeMap::new(),
            timeout: Duration::from_secs(110),
            body_timeout: Duration::from_secs(60),
            stream_max_bytes: 1024 * 1024,
            stream_max_duration: Duration::from_secs(10),
            max_body_bytes: 64 * 1024 * 1024,
            network: executor_core::network::NetworkAccess::LOCAL,
        }
    }
}

// ---- validation ---------------------------------------------------------------------------

struct Issues(Vec<(String, String)>);

impl Issues {
    fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push((path.into(), message.into()));
    }

    fn into_error(self) -> Option<ToolError> {
        if self.0.is_empty() {
            return None;
        }
        let message = if self.0.len() == 1 {
            self.0[0].1.clone()
        } else {
            let all: Vec<&str> = self.0.iter().map(|(_, m)| m.as_str()).collect();
            format!("Invalid arguments: {}", all.join(" "))
        };
        let issues: Vec<Value> = self
            .0
            .into_iter()
            .map(|(path, message)| {
                let path: Vec<Value> = if path.is_empty() {
                    Vec::new()
                } else {
                    path.split('.').map(|p| json!(p)).collect()
                };
                json!({ "path": path, "message": message })
            })
            .collect();
        Some(
            ToolError::new("invalid_tool_arguments", message)
                .with_details(json!({ "issues": issues })),
        )
    }
}

pub(crate) fn binding_from(binding: &Value) -> Result<Binding, ToolError> {
    Binding::deserialize(binding).map_err(|e| {
        ToolError::new(
            "binding_error",
            format!("The stored OpenAPI binding of this tool is unreadable: {e}"),
        )
    })
}

pub(crate) fn args_object(args: &Value) -> Result<&Map<String, Value>, ToolError> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    match args {
        Value::Object(o) => Ok(o),
        Value::Null => Ok(EMPTY.get_or_init(Map::new)),
        other => Err(ToolError::new(
            "invalid_tool_arguments",
            format!(
                "Arguments must be an object, got {}.",
                crate::parse::kind_of(other)
            ),
        )
        .with_details(json!({ "issues": [{ "path": [], "message": "Expected an object" }] }))),
    }
}

/// Validates arguments against the binding: unknown arguments, missing required parameters or
/// body, bad `contentType`, `server` or base64 → `invalid_tool_arguments` with `details.issues`
/// (`[{path: [..], message}]`). Nothing is sent.
pub fn validate_args(binding: &Value, args: &Value) -> Result<(), ToolError> {
    let b = binding_from(binding)?;
    check(&b, args_object(args)?)
}

/// The top-level argument names a binding accepts (parameters first), and the containers.
fn accepted(b: &Binding) -> (Vec<&str>, Vec<&'static str>) {
    let mut names: Vec<&str> = b
        .parameters
        .iter()
        .filter(|p| p.top_level)
        .map(|p| p.name.as_str())
        .collect();
    if let Some(body) = &b.body {
        for n in ["body", "input"] {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        if body.media.iter().any(|m| m.kind == BodyKind::Binary) && !names.contains(&"bodyBase64") {
            names.push("bodyBase64");
        }
        if body.media.len() > 1 && !names.contains(&"contentType") {
            names.push("contentType");
        }
    }
    if b.server_arg && !names.contains(&"server") {
        names.push("server");
    }
    let mut conts: Vec<&'static str> = Vec::new();
    for p in &b.parameters {
        for c in containers(p.location) {
            if !conts.contains(c) && !names.contains(c) {
                conts.push(c);
            }
        }
    }
    (names, conts)
}

pub(crate) fn check(b: &Binding, args: &Map<String, Value>) -> Result<(), ToolError> {
    let mut issues = Issues(Vec::new());
    let (names, conts) = accepted(b);
    for (key, value) in args {
        if names.contains(&key.as_str()) {
            continue;
        }
        if conts.contains(&key.as_str()) {
            let Value::Object(inner) = value else {
                issues.push(
                    key.clone(),
                    format!("Argument \"{key}\" must be an object."),
                );
                continue;
            };
            for k in inner.keys() {
                let known = b.parameters.iter().any(|p| {
                    containers(p.location).contains(&key.as_str())
                        && (p.name == *k
                            || (p.location == ParamLocation::Header
                                && p.name.eq_ignore_ascii_case(k)))
                });
                if !known {
                    issues.push(
                        format!("{key}.{k}"),
                        format!("Unknown argument \"{key}.{k}\"."),
                    );
                }
            }
            continue;
        }
        issues.push(
            key.clone(),
            format!(
                "Unknown argument \"{key}\". This operation accepts: {}.",
                if names.is_empty() {
                    "no arguments".to_owned()
                } else {
                    names.join(", ")
                }
            ),
        );
    }
    for p in &b.parameters {
        if p.required && lookup(args, p).is_none_or(Value::is_null) {
            issues.push(
                p.name.clone(),
                format!(
                    "Missing required {} parameter: {}",
                    p.location.as_str(),
                    p.name
                ),
            );
        }
    }
    if let Some(body) = &b.body {
        let given = body_arg(args).is_some_and(|v| !v.is_null())
            || args.get("bodyBase64").is_some_and(|v| !v.is_null());
        if body.required && !given {
            issues.push("body", "Missing required request body");
        }
        if let Some(ct) = args.get("contentType").filter(|_| body.media.len() > 1) {
            let ok = ct
                .as_str()
                .is_some_and(|ct| body.media.iter().any(|m| m.content_type == ct));
            if !ok {
                let all: Vec<&str> = body.media.iter().map(|m| m.content_type.as_str()).collect();
                issues.push(
                    "contentType",
                    format!("contentType must be one of: {}.", all.join(", ")),
                );
            }
        }
        if let Some(v) = args.get("bodyBase64")
            && !v.is_null()
            && v.as_str().and_then(b64::decode).is_none()
        {
            issues.push("bodyBase64", "bodyBase64 is not valid base64.");
        }
    }
    if b.server_arg
        && let Some(server) = args.get("server").filter(|v| !v.is_null())
    {
        check_server(b, server, &mut issues);
    }
    match issues.into_error() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn check_server(b: &Binding, server: &Value, issues: &mut Issues) {
    let Value::Object(s) = server else {
        issues.push(
            "server",
            "Argument \"server\" must be an object {url?, variables?}.",
        );
        return;
    };
    for k in s.keys() {
        if k != "url" && k != "variables" {
            issues.push(
                format!("server.{k}"),
                format!("Unknown argument \"server.{k}\"."),
            );
        }
    }
    let chosen = match s.get("url") {
        None | Some(Value::Null) => b.servers.first(),
        Some(Value::String(u)) => match b.servers.iter().find(|x| x.url == *u) {
            Some(x) => Some(x),
            None => {
                let all: Vec<&str> = b.servers.iter().map(|x| x.url.as_str()).collect();
                issues.push(
                    "server.url",
                    format!("server.url must be one of: {}.", all.join(", ")),
                );
                return;
            }
        },
        Some(_) => {
            issues.push("server.url", "server.url must be a string.");
            return;
        }
    };
    if let Some(vars) = s.get("variables").filter(|v| !v.is_null()) {
        let Value::Object(vars) = vars else {
            issues.push("server.variables", "server.variables must be an object.");
            return;
        };
        for (name, v) in vars {
            let decl = chosen.and_then(|c| c.variables.iter().find(|x| x.name == *name));
            let Some(decl) = decl else {
                issues.push(
                    format!("server.variables.{name}"),
                    format!("Unknown server variable \"{name}\"."),
                );
                continue;
            };
            let text = scalar_text(v);
            if !decl.enum_values.is_empty() && !decl.enum_values.contains(&text) {
                issues.push(
                    format!("server.variables.{name}"),
                    format!(
                        "Server variable \"{name}\" must be one of: {}.",
                        decl.enum_values.join(", ")
                    ),
                );
            }
        }
    }
}

/// A parameter's value: the top-level argument of its name, else its containers.
pub(crate) fn lookup<'a>(args: &'a Map<String, Value>, p: &BindingParam) -> Option<&'a Value> {
    if p.top_level
        && let Some(v) = args.get(&p.name)
    {
        return Some(v);
    }
    for c in containers(p.location) {
        if let Some(Value::Object(inner)) = args.get(*c) {
            if let Some(v) = inner.get(&p.name) {
                return Some(v);
            }
            if p.location == ParamLocation::Header
                && let Some((_, v)) = inner.iter().find(|(k, _)| k.eq_ignore_ascii_case(&p.name))
            {
                return Some(v);
            }
        }
    }
    None
}

pub(crate) fn body_arg(args: &Map<String, Value>) -> Option<&Value> {
    args.get("body").or_else(|| args.get("input"))
}

// ---- encoding -----------------------------------------------------------------------------

/// RFC 3986 unreserved characters are the only ones left as they are.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
/// `allowReserved` path values keep the reserved characters a path may carry.
const PATH_RESERVED: &AsciiSet = &UNRESERVED
    .remove(b':')
    .remove(b'/')
    .remove(b'@')
    .remove(b'!')
    .remove(b'$')
    .remove(b'&')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b'+')
    .remove(b',')
    .remove(b';')
    .remove(b'=')
    .remove(b'[')
    .remove(b']');
/// `allowReserved` query values keep those a query value may carry (not `&`, `=`, `+`, `#`).
const QUERY_RESERVED: &AsciiSet = &UNRESERVED
    .remove(b':')
    .remove(b'/')
    .remove(b'?')
    .remove(b'@')
    .remove(b'!')
    .remove(b'$')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*')
    .remove(b',')
    .remove(b';')
    .remove(b'[')
    .remove(b']');

/// Percent-encodes (UTF-8) everything outside `keep`.
fn pct(s: &str, keep: &'static AsciiSet) -> String {
    utf8_percent_encode(s, keep).to_string()
}

fn scalar_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        other => other.to_string(),
    }
}

fn path_value(p: &BindingParam, v: &Value) -> String {
    let extra = if p.allow_reserved {
        PATH_RESERVED
    } else {
        UNRESERVED
    };
    let enc = |s: &str| pct(s, extra);
    if p.content_type.is_some() {
        return enc(&v.to_string());
    }
    let (prefix, sep) = match p.style.as_str() {
        "label" => (".".to_owned(), if p.explode { "." } else { "," }),
        "matrix" => (format!(";{}=", pct(&p.name, UNRESERVED)), ","),
        _ => (String::new(), ","),
    };
    match v {
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(|i| enc(&scalar_text(i))).collect();
            if p.style == "matrix" && p.explode {
                let name = pct(&p.name, UNRESERVED);
                parts.iter().map(|x| format!(";{name}={x}")).collect()
            } else {
                format!("{prefix}{}", parts.join(sep))
            }
        }
        Value::Object(o) => {
            let parts: Vec<String> = o
                .iter()
                .map(|(k, x)| {
                    if p.explode {
                        format!("{}={}", enc(k), enc(&scalar_text(x)))
                    } else {
                        format!("{},{}", enc(k), enc(&scalar_text(x)))
                    }
                })
                .collect();
            if p.style == "matrix" && p.explode {
                parts.iter().map(|x| format!(";{x}")).collect()
            } else {
                format!("{prefix}{}", parts.join(sep))
            }
        }
        other => format!("{prefix}{}", enc(&scalar_text(other))),
    }
}

fn push_query(out: &mut Vec<String>, p: &BindingParam, v: &Value) {
    let extra = if p.allow_reserved {
        QUERY_RESERVED
    } else {
        UNRESERVED
    };
    let enc = |s: &str| pct(s, extra);
    let name = pct(&p.name, UNRESERVED);
    if p.content_type.is_some() {
        out.push(format!("{name}={}", enc(&v.to_string())));
        return;
    }
    match v {
        Value::Null => {}
        Value::Array(items) => {
            let vals: Vec<String> = items.iter().map(|i| enc(&scalar_text(i))).collect();
            match p.style.as_str() {
                "spaceDelimited" => out.push(format!("{name}={}", vals.join("%20"))),
                "pipeDelimited" => out.push(format!("{name}={}", vals.join("|"))),
                _ if p.explode => out.extend(vals.iter().map(|x| format!("{name}={x}"))),
                _ => out.push(format!("{name}={}", vals.join(","))),
            }
        }
        Value::Object(o) => match p.style.as_str() {
            "deepObject" => {
                for (k, x) in o {
                    out.push(format!("{name}[{}]={}", enc(k), enc(&scalar_text(x))));
                }
            }
            "form" if p.explode => {
                for (k, x) in o {
                    out.push(format!("{}={}", enc(k), enc(&scalar_text(x))));
                }
            }
            "form" => {
                let parts: Vec<String> = o
                    .iter()
                    .map(|(k, x)| format!("{},{}", enc(k), enc(&scalar_text(x))))
                    .collect();
                out.push(format!("{name}={}", parts.join(",")));
            }
            _ => out.push(format!("{name}={}", enc(&v.to_string()))),
        },
        other => out.push(format!("{name}={}", enc(&scalar_text(other)))),
    }
}

fn header_value(p: &BindingParam, v: &Value) -> String {
    if p.content_type.is_some() {
        return v.to_string();
    }
    match v {
        Value::Array(items) => items.iter().map(scalar_text).collect::<Vec<_>>().join(","),
        Value::Object(o) => o
            .iter()
            .map(|(k, x)| {
                if p.explode {
                    format!("{k}={}", scalar_text(x))
                } else {
                    format!("{k},{}", scalar_text(x))
                }
            })
            .collect::<Vec<_>>()
            .join(","),
        other => scalar_text(other),
    }
}

/// One property's declared `encoding` entry (form and multipart bodies).
struct PartEncoding<'a> {
    style: Option<&'a str>,
    explode: Option<bool>,
    content_type: Option<&'a str>,
}

impl<'a> PartEncoding<'a> {
    fn of(encoding: Option<&'a Value>, name: &str) -> Self {
        let e = encoding.and_then(|e| e.get(name));
        PartEncoding {
            style: e.and_then(|e| e.get("style")).and_then(Value::as_str),
            explode: e.and_then(|e| e.get("explode")).and_then(Value::as_bool),
            content_type: e.and_then(|e| e.get("contentType")).and_then(Value::as_str),
        }
    }

    fn json(&self) -> bool {
        self.content_type.is_some_and(is_json)
    }
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Object(_) | Value::Array(_))
}

/// `prefix[key][0][sub]=leaf` pairs: the bracket convention of `style: deepObject` form bodies
/// (Stripe's, and what Rack, PHP and `qs` decode). Arrays keep their indices even with one item,
/// so a one-element list stays a list on the server.
fn bracket_leaves(prefix: String, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Null => {}
        Value::Object(o) => {
            for (k, x) in o {
                bracket_leaves(format!("{prefix}[{}]", pct(k, UNRESERVED)), x, out);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                bracket_leaves(format!("{prefix}[{i}]"), x, out);
            }
        }
        scalar => out.push((prefix, scalar_text(scalar))),
    }
}

/// `application/x-www-form-urlencoded`, following each property's `encoding` (style, explode,
/// contentType). A property with no declared style is `form`/`explode` for scalars and arrays
/// of scalars; nested objects and arrays of objects use brackets, because OpenAPI defines no
/// flat form for them and brackets are what form decoders read (a JSON string is read by none).
fn form_pairs(body: &Map<String, Value>, encoding: Option<&Value>) -> String {
    let mut out: Vec<String> = Vec::new();
    let enc = |s: &str| pct(s, UNRESERVED);
    for (k, v) in body {
        let e = PartEncoding::of(encoding, k);
        let explode = e.explode.unwrap_or(e.style.is_none_or(|s| s == "form"));
        let name = enc(k);
        let nested = match v {
            Value::Object(_) => true,
            Value::Array(items) => !items.iter().all(is_scalar),
            _ => false,
        };
        match v {
            Value::Null => {}
            _ if e.json() => out.push(format!("{name}={}", enc(&v.to_string()))),
            _ if e.style == Some("deepObject") || (e.style.is_none() && nested) => {
                let mut leaves = Vec::new();
                bracket_leaves(name, v, &mut leaves);
                out.extend(leaves.into_iter().map(|(k, x)| format!("{k}={}", enc(&x))));
            }
            Value::Array(items) => {
                let vals: Vec<String> = items.iter().map(|i| enc(&scalar_text(i))).collect();
                match e.style {
                    Some("spaceDelimited") => out.push(format!("{name}={}", vals.join("%20"))),
                    Some("pipeDelimited") => out.push(format!("{name}={}", vals.join("|"))),
                    _ if explode => out.extend(vals.iter().map(|x| format!("{name}={x}"))),
                    _ => out.push(format!("{name}={}", vals.join(","))),
                }
            }
            Value::Object(o) if explode => {
                // `style: form, explode: true`: the properties become fields of their own.
                for (sk, x) in o {
                    out.push(format!("{}={}", enc(sk), enc(&scalar_text(x))));
                }
            }
            Value::Object(o) => {
                let parts: Vec<String> = o
                    .iter()
                    .map(|(sk, x)| format!("{},{}", enc(sk), enc(&scalar_text(x))))
                    .collect();
                out.push(format!("{name}={}", parts.join(",")));
            }
            other => out.push(format!("{name}={}", enc(&scalar_text(other)))),
        }
    }
    out.join("&")
}

/// Bytes the sandbox passed: the prelude's `{_tag:"Bytes", encoding:"base64", data}` (what a
/// `Uint8Array`, another typed array or an `ArrayBuffer` becomes on its way out), a ToolFile
/// `{_tag:"ToolFile", name?, mimeType?, encoding:"base64", data}`, or `{bodyBase64}`.
pub(crate) struct FileArg {
    pub(crate) bytes: Vec<u8>,
    pub(crate) mime: Option<String>,
    pub(crate) name: Option<String>,
}

pub(crate) fn file_like(v: &Value) -> Option<FileArg> {
    let o = v.as_object()?;
    let data = o
        .get("bodyBase64")
        .or_else(|| {
            let tagged = matches!(
                o.get("_tag").and_then(Value::as_str),
                Some("ToolFile" | "Bytes")
            );
            (tagged
                || o.contains_key("mimeType")
                || o.get("encoding").and_then(Value::as_str) == Some("base64"))
            .then(|| o.get("data"))
            .flatten()
        })?
        .as_str()?;
    let bytes = b64::decode(data)?;
    Some(FileArg {
        bytes,
        mime: o.get("mimeType").and_then(Value::as_str).map(str::to_owned),
        name: o.get("name").and_then(Value::as_str).map(str::to_owned),
    })
}

static BOUNDARY_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A declared part content type usable as one (`image/png`), not a list or a wildcard.
fn concrete_type(ct: Option<&str>) -> Option<&str> {
    ct.map(str::trim)
        .filter(|c| !c.is_empty() && !c.contains(',') && !c.contains('*'))
}

struct Multipart {
    boundary: String,
    out: Vec<u8>,
}

impl Multipart {
    fn new() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let boundary = format!(
            "executor-{nanos:x}-{:x}",
            BOUNDARY_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        Multipart {
            boundary,
            out: Vec::new(),
        }
    }

    fn quote(s: &str) -> String {
        s.replace('"', "%22").replace(['\r', '\n'], " ")
    }

    fn head(&mut self, name: &str, filename: Option<&str>, ct: Option<&str>) {
        let mut h = format!(
            "--{}\r\nContent-Disposition: form-data; name=\"{}\"",
            self.boundary,
            Self::quote(name)
        );
        if let Some(f) = filename {
            let _ = write!(h, "; filename=\"{}\"", Self::quote(f));
        }
        h.push_str("\r\n");
        if let Some(ct) = ct {
            let _ = write!(h, "Content-Type: {ct}\r\n");
        }
        h.push_str("\r\n");
        self.out.extend_from_slice(h.as_bytes());
    }

    fn part(&mut self, name: &str, filename: Option<&str>, ct: Option<&str>, data: &[u8]) {
        self.head(name, filename, ct);
        self.out.extend_from_slice(data);
        self.out.extend_from_slice(b"\r\n");
    }

    fn file(&mut self, name: &str, file: FileArg, declared_ct: Option<&str>) {
        let filename = file.name.unwrap_or_else(|| name.to_owned());
        let mime = file
            .mime
            .or_else(|| concrete_type(declared_ct).map(str::to_owned))
            .or_else(|| sniff(&file.bytes).map(str::to_owned))
            .unwrap_or_else(|| "application/octet-stream".to_owned());
        self.part(name, Some(&filename), Some(&mime), &file.bytes);
    }

    /// One value as one part: bytes → a file part; a string for a `format: binary` property → a
    /// file part of its text; an object or array → a JSON part; a scalar → a text part.
    fn value(&mut self, name: &str, v: &Value, declared_ct: Option<&str>, binary: bool) {
        if let Some(file) = file_like(v) {
            return self.file(name, file, declared_ct);
        }
        match v {
            Value::Null => {}
            Value::String(s) if binary => self.file(
                name,
                FileArg {
                    bytes: s.clone().into_bytes(),
                    mime: None,
                    name: None,
                },
                declared_ct,
            ),
            Value::Object(_) | Value::Array(_) => {
                let ct = concrete_type(declared_ct).unwrap_or("application/json");
                self.part(name, None, Some(ct), v.to_string().as_bytes());
            }
            other => {
                let ct = concrete_type(declared_ct).filter(|c| !c.starts_with("text/plain"));
                self.part(name, None, ct, scalar_text(other).as_bytes());
            }
        }
    }

    fn finish(mut self) -> (Vec<u8>, String) {
        self.out
            .extend_from_slice(format!("--{}--\r\n", self.boundary).as_bytes());
        (
            self.out,
            format!("multipart/form-data; boundary={}", self.boundary),
        )
    }
}

/// `multipart/form-data`: files as file parts (filename, content type), arrays as repeated
/// parts, objects as one JSON part, unless the property's `encoding` says otherwise
/// (`contentType` JSON: one JSON part; `style: deepObject`: one text part per bracketed leaf,
/// as Stripe's file upload declares for `file_link_data`).
fn multipart(
    body: &Map<String, Value>,
    encoding: Option<&Value>,
    binary: &[String],
) -> (Vec<u8>, String) {
    let mut m = Multipart::new();
    for (k, v) in body {
        let e = PartEncoding::of(encoding, k);
        let is_binary = binary.iter().any(|b| b == k);
        match v {
            Value::Null => {}
            _ if file_like(v).is_some() => m.value(k, v, e.content_type, is_binary),
            _ if e.style == Some("deepObject") && !is_scalar(v) => {
                let mut leaves = Vec::new();
                bracket_leaves(k.clone(), v, &mut leaves);
                for (name, text) in leaves {
                    m.part(&name, None, None, text.as_bytes());
                }
            }
            Value::Array(items) if !e.json() => {
                for i in items {
                    m.value(k, i, e.content_type, is_binary);
                }
            }
            other => m.value(k, other, e.content_type, is_binary),
        }
    }
    m.finish()
}

/// Request body bytes and content type, from `body`/`input`/`bodyBase64` and `contentType`.
fn build_body(
    body: &BindingBody,
    args: &Map<String, Value>,
) -> Result<Option<(Vec<u8>, String)>, ToolError> {
    let media = args
        .get("contentType")
        .and_then(Value::as_str)
        .and_then(|ct| body.media.iter().find(|m| m.content_type == ct))
        .or_else(|| body.media.first());
    let Some(media) = media else { return Ok(None) };
    let value = body_arg(args).filter(|v| !v.is_null());
    let b64 = args
        .get("bodyBase64")
        .and_then(Value::as_str)
        .filter(|_| media.kind == BodyKind::Binary || body_arg(args).is_none());
    let bad = |m: &str| {
        ToolError::new("invalid_tool_arguments", m.to_owned())
            .with_details(json!({ "issues": [{ "path": ["body"], "message": m }] }))
    };
    let ct = media.content_type.clone();
    if let Some(b64) = b64 {
        let bytes = b64::decode(b64).ok_or_else(|| bad("bodyBase64 is not valid base64."))?;
        return Ok(Some((bytes, ct)));
    }
    let Some(value) = value else { return Ok(None) };
    let out = match media.kind {
        BodyKind::Json => (serde_json::to_vec(value).unwrap_or_default(), ct),
        BodyKind::Form => match value {
            Value::Object(o) => (form_pairs(o, media.encoding.as_ref()).into_bytes(), ct),
            Value::String(s) => (s.clone().into_bytes(), ct),
            _ => return Err(bad("A form body must be an object of fields.")),
        },
        BodyKind::Multipart => match value {
            Value::Object(o) => multipart(o, media.encoding.as_ref(), &media.binary_fields),
            _ => return Err(bad("A multipart body must be an object of fields.")),
        },
        BodyKind::Binary => match value {
            Value::String(s) => (s.clone().into_bytes(), ct),
            other => match file_like(other) {
                Some(file) => (file.bytes, ct),
                None => (serde_json::to_vec(other).unwrap_or_default(), ct),
            },
        },
        BodyKind::Text => match value {
            Value::String(s) => (s.clone().into_bytes(), ct),
            other => (other.to_string().into_bytes(), ct),
        },
    };
    Ok(Some(out))
}

fn config_error(message: String) -> ToolError {
    ToolError::new("invalid_base_url", message).with_retryable(false)
}

/// The base URL: the integration's override, else the chosen server with variables filled.
fn base_url(
    b: &Binding,
    args: &Map<String, Value>,
    config: &CallConfig,
) -> Result<String, ToolError> {
    if let Some(u) = config
        .base_url
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty())
    {
        return Ok(u.to_owned());
    }
    let chosen_arg = if b.server_arg {
        args.get("server")
    } else {
        None
    };
    let server = chosen_arg
        .and_then(|s| s.get("url"))
        .and_then(Value::as_str)
        .and_then(|u| b.servers.iter().find(|s| s.url == u))
        .or_else(|| b.servers.first());
    let Some(server) = server else {
        return Err(config_error(
            "This OpenAPI integration has no server URL: set the integration's baseUrl.".to_owned(),
        ));
    };
    let mut url = server.url.clone();
    for var in &server.variables {
        let value = chosen_arg
            .and_then(|s| s.get("variables"))
            .and_then(|v| v.get(&var.name))
            .filter(|v| !v.is_null())
            .map(scalar_text)
            .unwrap_or_else(|| var.default.clone());
        url = url.replace(&format!("{{{}}}", var.name), &value);
    }
    if url.starts_with("//") {
        url = format!("https:{url}");
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(config_error(format!(
            "The spec's server URL \"{url}\" is not absolute: set the integration's baseUrl to the API's address."
        )));
    }
    Ok(url)
}

/// Builds the full request URL (without auth query placements' secrets in any error message).
fn build_url(
    b: &Binding,
    args: &Map<String, Value>,
    config: &CallConfig,
) -> Result<String, ToolError> {
    let base = base_url(b, args, config)?;
    let (base, base_query) = match base.split_once('?') {
        Some((a, q)) => (a.to_owned(), Some(q.to_owned())),
        None => (base, None),
    };
    let mut path = b.path.clone();
    let mut query: Vec<String> = Vec::new();
    if let Some(q) = base_query.filter(|q| !q.is_empty()) {
        query.push(q);
    }
    for p in &b.parameters {
        let Some(v) = lookup(args, p).filter(|v| !v.is_null()) else {
            continue;
        };
        match p.location {
            ParamLocation::Path => {
                path = path.replace(&format!("{{{}}}", p.name), &path_value(p, v));
            }
            ParamLocation::Query if !config.query.contains_key(&p.name) => {
                push_query(&mut query, p, v);
            }
            _ => {}
        }
    }
    let leftover = crate::extract::template_vars(&path);
    if !leftover.is_empty() {
        let m = format!("Unresolved path parameters: {}", leftover.join(", "));
        return Err(ToolError::new("invalid_tool_arguments", m.clone())
            .with_details(json!({ "issues": [{ "path": [], "message": m }] })));
    }
    for (k, v) in &config.query {
        query.push(format!("{}={}", pct(k, UNRESERVED), pct(v, UNRESERVED)));
    }
    let mut url = String::with_capacity(base.len() + path.len() + 64);
    url.push_str(base.trim_end_matches('/'));
    if !path.starts_with('/') {
        url.push('/');
    }
    url.push_str(&path);
    if !query.is_empty() {
        url.push('?');
        url.push_str(&query.join("&"));
    }
    Ok(url)
}

fn header_error(name: &str) -> ToolError {
    let m = format!("Header \"{name}\" has a value that cannot be sent in an HTTP header.");
    ToolError::new("invalid_tool_arguments", m.clone())
        .with_details(json!({ "issues": [{ "path": [name], "message": m }] }))
}

fn insert_header(map: &mut HeaderMap, name: &str, value: &str) -> Result<(), ToolError> {
    let n = HeaderName::from_bytes(name.as_bytes()).map_err(|_| header_error(name))?;
    let v = HeaderValue::from_str(value).map_err(|_| header_error(name))?;
    map.insert(n, v);
    Ok(())
}

/// `Basic user:pass` (a pasted raw pair) → `Basic base64(user:pass)`; encoded values pass through.
fn basic_value(value: &str) -> Option<String> {
    let rest = value.strip_prefix("Basic ")?;
    rest.contains(':')
        .then(|| format!("Basic {}", b64::encode(rest.as_bytes())))
}

// ---- invocation ---------------------------------------------------------------------------

/// Invokes one operation. Arguments are validated first ([`validate_args`]); then the request is
/// built (server, path, query, headers, body), sent, and the response decoded:
/// 2xx → `{ok:true, data, http:{status, headers}}`; 401/403 → `connection_rejected`; other
/// statuses → `upstream_http_error` (status, extracted message, `details.body` excerpt);
/// timeouts → `upstream_response_headers_timeout` / `upstream_response_body_timeout`;
/// network failures → `upstream_unreachable`; an address the server does not connect to →
/// `address_not_allowed`.
pub async fn invoke(
    http: &reqwest::Client,
    binding: &Value,
    args: Value,
    config: &CallConfig,
) -> ToolOutcome {
    match invoke_inner(http, binding, &args, config).await {
        Ok(o) => o,
        Err(e) => ToolOutcome::Err(e),
    }
}

async fn invoke_inner(
    http: &reqwest::Client,
    binding: &Value,
    args: &Value,
    config: &CallConfig,
) -> Result<ToolOutcome, ToolError> {
    let b = binding_from(binding)?;
    let args = args_object(args)?;
    check(&b, args)?;
    let url = build_url(&b, args, config)?;
    if let Ok(parsed) = url::Url::parse(&url)
        && let Some(host) = parsed.host_str()
    {
        config
            .network
            .check_host(host)
            .map_err(|refused| refused.tool_error())?;
    }
    let method = reqwest::Method::from_bytes(b.method.as_bytes()).map_err(|_| {
        ToolError::new(
            "binding_error",
            format!("Unsupported HTTP method {}", b.method),
        )
    })?;

    let mut headers = HeaderMap::new();
    headers.insert(
        reqwest::header::USER_AGENT,
        HeaderValue::from_static("executor"),
    );
    let mut cookies: Vec<String> = Vec::new();
    for p in &b.parameters {
        let Some(v) = lookup(args, p).filter(|v| !v.is_null()) else {
            continue;
        };
        match p.location {
            ParamLocation::Header => insert_header(&mut headers, &p.name, &header_value(p, v))?,
            ParamLocation::Cookie => {
                let text = match v {
                    Value::Array(items) => {
                        items.iter().map(scalar_text).collect::<Vec<_>>().join(",")
                    }
                    other => scalar_text(other),
                };
                cookies.push(format!("{}={}", p.name, pct(&text, UNRESERVED)));
            }
            _ => {}
        }
    }
    for (k, v) in &config.headers {
        if k.eq_ignore_ascii_case("authorization")
            && let Some(encoded) = basic_value(v)
        {
            insert_header(&mut headers, k, &encoded)?;
            continue;
        }
        if k.eq_ignore_ascii_case("cookie") {
            cookies.push(v.clone());
            continue;
        }
        insert_header(&mut headers, k, v)?;
    }
    if !cookies.is_empty() {
        insert_header(&mut headers, "cookie", &cookies.join("; "))?;
    }
    let body = match &b.body {
        Some(body) => build_body(body, args)?,
        None => None,
    };
    if let Some((_, ct)) = &body
        && !headers.contains_key(reqwest::header::CONTENT_TYPE)
    {
        insert_header(&mut headers, "content-type", ct)?;
    }
    if !headers.contains_key(reqwest::header::ACCEPT) {
        headers.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json, */*;q=0.8"),
        );
    }

    let mut req = http.request(method, &url).headers(headers);
    if let Some((bytes, _)) = body {
        req = req.body(bytes);
    }
    let sent = tokio::time::timeout(config.timeout, req.send()).await;
    let resp = match sent {
        Err(_) => {
            return Err(ToolError::new(
                "upstream_response_headers_timeout",
                format!(
                    "The API did not answer within {} s.",
                    config.timeout.as_secs_f64()
                ),
            )
            .with_retryable(true));
        }
        Ok(Err(e)) => return Err(request_error(e)),
        Ok(Ok(r)) => r,
    };
    decode(resp, &b, config).await
}

fn request_error(e: reqwest::Error) -> ToolError {
    if let Some(refused) = executor_core::network::AddressNotAllowed::find(&e) {
        return refused.tool_error();
    }
    // Never echo the URL: auth query placements would leak with it.
    let host = e
        .url()
        .and_then(|u| u.host_str())
        .unwrap_or("the API")
        .to_owned();
    let timeout = e.is_timeout();
    let connect = e.is_connect();
    let cause = e.without_url();
    let mut detail = cause.to_string();
    let mut source = std::error::Error::source(&cause);
    while let Some(s) = source {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        source = s.source();
    }
    if timeout {
        ToolError::new(
            "upstream_response_headers_timeout",
            format!("The request to {host} timed out."),
        )
        .with_retryable(true)
    } else if connect {
        ToolError::new(
            "upstream_unreachable",
            format!("Could not connect to {host}: {detail}"),
        )
        .with_retryable(true)
    } else {
        ToolError::new(
            "upstream_unreachable",
            format!("The request to {host} failed: {detail}"),
        )
        .with_retryable(true)
    }
}

fn headers_json(h: &HeaderMap) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in h {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        match out.get_mut(k.as_str()) {
            Some(Value::String(existing)) => {
                existing.push_str(", ");
                existing.push_str(&v);
            }
            _ => {
                out.insert(k.as_str().to_owned(), Value::String(v));
            }
        }
    }
    out
}

enum Read {
    Complete(Vec<u8>),
    Truncated(Vec<u8>),
}

/// Reads a body until `max` bytes or `deadline`; `strict` turns both limits into errors.
async fn read_body(
    resp: &mut reqwest::Response,
    max: usize,
    budget: Duration,
    strict: bool,
) -> Result<Read, ToolError> {
    let deadline = tokio::time::Instant::now() + budget;
    // Read before the body: reqwest's hint shrinks as the body is read.
    let declared = resp.content_length().and_then(|n| usize::try_from(n).ok());
    let too_large = |bytes: usize| {
        ToolError::new(
            "tool_output_too_large",
            format!(
                "The API's response is larger than {max} bytes (the tool output limit). Ask for less (a page, a filter, fewer fields)."
            ),
        )
        .with_retryable(false)
        .with_details(serde_json::json!({"bytes": bytes, "limit": max}))
    };
    if strict && let Some(bytes) = declared.filter(|&n| n > max) {
        // Refused before a byte of it is buffered.
        return Err(too_large(bytes));
    }
    let mut buf: Vec<u8> = Vec::new();
    loop {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Err(_) if strict => {
                return Err(ToolError::new(
                    "upstream_response_body_timeout",
                    format!(
                        "The API's response body did not arrive within {} s.",
                        budget.as_secs_f64()
                    ),
                )
                .with_retryable(true));
            }
            Err(_) => return Ok(Read::Truncated(buf)),
            Ok(Err(e)) => return Err(request_error(e)),
            Ok(Ok(None)) => return Ok(Read::Complete(buf)),
            Ok(Ok(Some(chunk))) => {
                if buf.len() + chunk.len() > max {
                    if strict {
                        // The same error value as an answer over the engine's output cap.
                        return Err(too_large(declared.unwrap_or(buf.len() + chunk.len())));
                    }
                    let room = max - buf.len();
                    buf.extend_from_slice(&chunk[..room]);
                    return Ok(Read::Truncated(buf));
                }
                buf.extend_from_slice(&chunk);
            }
        }
    }
}

async fn decode(
    mut resp: reqwest::Response,
    b: &Binding,
    config: &CallConfig,
) -> Result<ToolOutcome, ToolError> {
    let status = resp.status();
    let mut headers = headers_json(resp.headers());
    let ct = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();

    if !status.is_success() {
        let bytes = match read_body(&mut resp, 1024 * 1024, config.body_timeout, false).await? {
            Read::Complete(b) | Read::Truncated(b) => b,
        };
        return Ok(ToolOutcome::Err(upstream_error(
            status, &headers, &ct, &bytes,
        )));
    }

    let streamed = is_ndjson(&ct) || ct.to_ascii_lowercase().starts_with("text/event-stream");
    let data = if streamed {
        let started = Instant::now();
        let read = read_body(
            &mut resp,
            config.stream_max_bytes,
            config.stream_max_duration.min(config.body_timeout),
            false,
        )
        .await?;
        let (bytes, complete) = match read {
            Read::Complete(b) => (b, true),
            Read::Truncated(b) => (b, false),
        };
        headers.insert(
            "x-executor-stream".into(),
            json!(if complete { "complete" } else { "truncated" }),
        );
        headers.insert(
            "x-executor-stream-bytes".into(),
            json!(bytes.len().to_string()),
        );
        headers.insert(
            "x-executor-stream-duration-ms".into(),
            json!(started.elapsed().as_millis().to_string()),
        );
        if is_ndjson(&ct) {
            ndjson_rows(&bytes, complete)
        } else {
            Value::String(String::from_utf8_lossy(&bytes).into_owned())
        }
    } else {
        let bytes =
            match read_body(&mut resp, config.max_body_bytes, config.body_timeout, true).await? {
                Read::Complete(b) | Read::Truncated(b) => b,
            };
        if bytes.is_empty() || status.as_u16() == 204 || b.method == "HEAD" {
            Value::Null
        } else if is_json(&ct) && !ct.trim().starts_with("*/*") {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
        } else if binary_response(&ct, b.response_binary) {
            tool_file(&bytes, &ct, &headers)
        } else {
            Value::String(String::from_utf8_lossy(&bytes).into_owned())
        }
    };
    Ok(ToolOutcome::Ok {
        data,
        http: Some(json!({ "status": status.as_u16(), "headers": headers })),
    })
}

fn binary_response(ct: &str, declared_binary: bool) -> bool {
    if ct.trim().is_empty() {
        return declared_binary;
    }
    if is_json(ct) || is_textual(ct) {
        return declared_binary && !is_json(ct) && !ct.to_ascii_lowercase().starts_with("text/");
    }
    true
}

fn ndjson_rows(bytes: &[u8], complete: bool) -> Value {
    let text = String::from_utf8_lossy(bytes);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if !complete && !text.ends_with('\n') {
        // The last line was cut by the size or time cap.
        lines.pop();
    }
    Value::Array(
        lines
            .into_iter()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|_| Value::String(l.to_owned())))
            .collect(),
    )
}

fn sniff(bytes: &[u8]) -> Option<&'static str> {
    let starts = |p: &[u8]| bytes.starts_with(p);
    Some(if starts(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if starts(b"\xff\xd8\xff") {
        "image/jpeg"
    } else if starts(b"GIF87a") || starts(b"GIF89a") {
        "image/gif"
    } else if starts(b"%PDF-") {
        "application/pdf"
    } else if bytes.len() > 12 && starts(b"RIFF") && &bytes[8..12] == b"WEBP" {
        "image/webp"
    } else if starts(b"PK\x03\x04") {
        "application/zip"
    } else if starts(b"\x1f\x8b") {
        "application/gzip"
    } else {
        return None;
    })
}

fn tool_file(bytes: &[u8], ct: &str, headers: &Map<String, Value>) -> Value {
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let generic = essence.is_empty()
        || essence == "application/octet-stream"
        || essence == "binary/octet-stream"
        || essence == "application/binary";
    let mime = if generic {
        sniff(bytes).map(str::to_owned).unwrap_or_else(|| {
            if essence.is_empty() {
                "application/octet-stream".to_owned()
            } else {
                essence.clone()
            }
        })
    } else {
        essence
    };
    let mut file = json!({
        "_tag": "ToolFile",
        "mimeType": mime,
        "encoding": "base64",
        "data": b64::encode(bytes),
        "byteLength": bytes.len(),
    });
    if let Some(name) = headers
        .get("content-disposition")
        .and_then(Value::as_str)
        .and_then(disposition_filename)
    {
        file["name"] = json!(name);
    }
    file
}

fn disposition_filename(v: &str) -> Option<String> {
    for part in v.split(';') {
        let part = part.trim();
        if let Some(rest) = part.strip_prefix("filename=") {
            let name = rest.trim_matches('"');
            if !name.is_empty() {
                return Some(name.to_owned());
            }
        }
    }
    None
}

const EXCERPT_CHARS: usize = 4096;

fn upstream_error(
    status: reqwest::StatusCode,
    headers: &Map<String, Value>,
    ct: &str,
    bytes: &[u8],
) -> ToolError {
    let text = String::from_utf8_lossy(bytes);
    let parsed: Option<Value> = if is_json(ct) || text.trim_start().starts_with('{') {
        serde_json::from_slice(bytes).ok()
    } else {
        None
    };
    let extracted = parsed.as_ref().and_then(upstream_message);
    let reason = status.canonical_reason().unwrap_or("");
    let code = status.as_u16();
    let head = format!(
        "HTTP {code}{}{reason}",
        if reason.is_empty() { "" } else { " " }
    );
    let message = match &extracted {
        Some(m) => format!("{head}: {m}"),
        None => head,
    };
    let truncated = text.chars().count() > EXCERPT_CHARS;
    let body = match parsed {
        Some(v) if !truncated => v,
        _ => {
            let mut s: String = text.chars().take(EXCERPT_CHARS).collect();
            if truncated {
                s.push('…');
            }
            Value::String(s)
        }
    };
    let mut details = json!({ "status": code, "body": body });
    if truncated {
        details["truncated"] = json!(true);
    }
    let rate_limited = headers
        .get("x-ratelimit-remaining")
        .and_then(Value::as_str)
        .is_some_and(|v| v.trim() == "0")
        || headers.contains_key("retry-after");
    if (code == 401 || code == 403) && !rate_limited {
        details["category"] = json!("authentication");
        details["recovery"] = json!(
            "The API rejected this connection's credentials. Check or replace the connection \
             (executor.coreTools.connections.list, executor.coreTools.connections.createHandoff)."
        );
        return ToolError::new("connection_rejected", message)
            .with_status(code)
            .with_details(details)
            .with_retryable(false);
    }
    let retryable = code == 408 || code == 429 || code >= 500 || rate_limited;
    ToolError::new("upstream_http_error", message)
        .with_status(code)
        .with_details(details)
        .with_retryable(retryable)
}

/// The human message in a JSON error body (`message`, `error.message`, `error_description`…).
fn upstream_message(v: &Value) -> Option<String> {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    s(v.get("message"))
        .or_else(|| s(v.pointer("/error/message")))
        .or_else(|| s(v.get("error_description")))
        .or_else(|| s(v.get("error")))
        .or_else(|| s(v.get("detail")))
        .or_else(|| s(v.pointer("/errors/0/message")))
        .or_else(|| s(v.get("title")))
        .map(|m| m.chars().take(500).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn param(name: &str, location: ParamLocation, style: &str, explode: bool) -> BindingParam {
        BindingParam {
            name: name.into(),
            location,
            required: false,
            style: style.into(),
            explode,
            allow_reserved: false,
            content_type: None,
            top_level: true,
        }
    }

    #[test]
    fn query_styles() {
        let mut q = Vec::new();
        let arr = json!(["a b", "c"]);
        push_query(
            &mut q,
            &param("t", ParamLocation::Query, "form", true),
            &arr,
        );
        push_query(
            &mut q,
            &param("u", ParamLocation::Query, "form", false),
            &arr,
        );
        push_query(
            &mut q,
            &param("v", ParamLocation::Query, "spaceDelimited", false),
            &arr,
        );
        push_query(
            &mut q,
            &param("w", ParamLocation::Query, "pipeDelimited", false),
            &arr,
        );
        let obj = json!({"x": 1, "y": "z"});
        push_query(
            &mut q,
            &param("o", ParamLocation::Query, "deepObject", true),
            &obj,
        );
        push_query(
            &mut q,
            &param("p", ParamLocation::Query, "form", true),
            &obj,
        );
        push_query(
            &mut q,
            &param("r", ParamLocation::Query, "form", false),
            &obj,
        );
        assert_eq!(
            q.join("&"),
            "t=a%20b&t=c&u=a%20b,c&v=a%20b%20c&w=a%20b|c&o[x]=1&o[y]=z&x=1&y=z&r=x,1,y,z"
        );
    }

    #[test]
    fn path_styles() {
        let p = param("id", ParamLocation::Path, "simple", false);
        assert_eq!(path_value(&p, &json!("a/b c?")), "a%2Fb%20c%3F");
        assert_eq!(path_value(&p, &json!([1, 2])), "1,2");
        let l = param("id", ParamLocation::Path, "label", false);
        assert_eq!(path_value(&l, &json!("x")), ".x");
        let m = param("id", ParamLocation::Path, "matrix", true);
        assert_eq!(path_value(&m, &json!([1, 2])), ";id=1;id=2");
        let mut r = param("id", ParamLocation::Path, "simple", false);
        r.allow_reserved = true;
        assert_eq!(path_value(&r, &json!("a/b")), "a/b");
    }

    #[test]
    fn multipart_and_binary_bodies() {
        let body = BindingBody {
            required: true,
            media: vec![BindingMedia {
                content_type: "multipart/form-data".into(),
                kind: BodyKind::Multipart,
                encoding: None,
                binary_fields: Vec::new(),
            }],
        };
        let args = json!({"body": {"note": "hi", "meta": {"a": 1},
            "file": {"_tag": "ToolFile", "name": "x.png", "mimeType": "image/png", "data": "iVBO"}}});
        let (bytes, ct) = build_body(&body, args.as_object().unwrap())
            .unwrap()
            .unwrap();
        let boundary = ct.strip_prefix("multipart/form-data; boundary=").unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.contains("name=\"note\"\r\n\r\nhi\r\n"), "{text}");
        assert!(
            text.contains("Content-Type: application/json\r\n\r\n{\"a\":1}"),
            "{text}"
        );
        assert!(
            text.contains("filename=\"x.png\"\r\nContent-Type: image/png"),
            "{text}"
        );
        assert!(text.ends_with(&format!("--{boundary}--\r\n")));
        let bin = BindingBody {
            required: true,
            media: vec![BindingMedia {
                content_type: "application/octet-stream".into(),
                kind: BodyKind::Binary,
                encoding: None,
                binary_fields: Vec::new(),
            }],
        };
        let args = json!({"bodyBase64": "aGk="});
        let (bytes, _) = build_body(&bin, args.as_object().unwrap())
            .unwrap()
            .unwrap();
        assert_eq!(bytes, b"hi");
    }

    #[test]
    fn basic_auth_and_messages() {
        assert_eq!(
            basic_value("Basic user:pass").as_deref(),
            Some("Basic dXNlcjpwYXNz")
        );
        assert_eq!(basic_value("Basic dXNlcjpwYXNz"), None);
        assert_eq!(
            upstream_message(&json!({"error": {"message": "nope"}})).as_deref(),
            Some("nope")
        );
        let rows = ndjson_rows(b"{\"a\":1}\n{\"a\":2}\n{\"a\"", false);
        assert_eq!(rows, json!([{"a":1},{"a":2}]));
    }
}
