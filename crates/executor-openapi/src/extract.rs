//! Operations → tools (spec §7): `group.leaf` names, input schema (parameters + body + content
//! type + server choice), output schema from the success response, approval on writes, and the
//! JSON binding the engine stores so a call never re-reads the spec.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::invoke::{Binding, BindingBody, BindingMedia, BindingParam, BodyKind};
use crate::model::{MediaType, Operation, ParamLocation, Server, Spec};
use crate::parse::METHODS;
use crate::schema::Rewriter;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenApiTool {
    /// `group.leaf`, unique within the extraction.
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub requires_approval: bool,
    /// `"<METHOD> <path>"` when approval is required.
    pub approval_description: Option<String>,
    /// A serialised [`Binding`]: everything [`crate::invoke`] needs.
    pub binding: Value,
    /// Earlier names of this tool that still call it (see `legacy_name`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtractionFailure {
    /// `"GET /path"` (or the path when the whole path item is unreadable).
    pub operation: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Extraction {
    pub tools: Vec<OpenApiTool>,
    /// Shared definitions (`components.schemas`), referenced as `#/$defs/X` from tool schemas.
    pub definitions: Map<String, Value>,
    /// Operations that could not be turned into tools.
    pub failures: Vec<ExtractionFailure>,
}

/// Arguments the invoker reads besides parameters.
pub(crate) const PATH_CONTAINERS: [&str; 3] = ["path", "pathParams", "params"];
pub(crate) const QUERY_CONTAINERS: [&str; 3] = ["query", "queryParams", "params"];
pub(crate) const HEADER_CONTAINERS: [&str; 2] = ["headers", "header"];
pub(crate) const COOKIE_CONTAINERS: [&str; 2] = ["cookies", "cookie"];

pub(crate) fn containers(location: ParamLocation) -> &'static [&'static str] {
    match location {
        ParamLocation::Path => &PATH_CONTAINERS,
        ParamLocation::Query => &QUERY_CONTAINERS,
        ParamLocation::Header => &HEADER_CONTAINERS,
        ParamLocation::Cookie => &COOKIE_CONTAINERS,
    }
}

/// Turns every readable operation into a tool; unreadable ones are listed in `failures`.
pub fn extract(spec: &Spec) -> Extraction {
    let mut rw = Rewriter::new(&spec.doc);
    let mut definitions = Map::new();
    if let Some(schemas) = spec
        .doc
        .pointer("/components/schemas")
        .and_then(Value::as_object)
    {
        for (name, s) in schemas {
            definitions.insert(name.clone(), rw.rewrite(s));
        }
    }

    let named = named_operations(spec);
    let names: HashSet<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
    let mut tools = Vec::with_capacity(named.len());
    let failures = spec.failures.clone();
    for (name, op) in &named {
        let mut t = tool(spec, op, name.clone(), &mut rw);
        if let Some(old) =
            legacy_name(op).filter(|old| old != name && !names.contains(old.as_str()))
        {
            t.aliases.push(old);
        }
        tools.push(t);
    }
    Extraction {
        tools,
        definitions,
        failures,
    }
}

/// Operations sorted by path (then method) with their unique tool names.
pub(crate) fn named_operations(spec: &Spec) -> Vec<(String, &Operation)> {
    let mut ops: Vec<&Operation> = spec.operations.iter().collect();
    let method_rank = |m: &str| METHODS.iter().position(|x| *x == m).unwrap_or(99);
    ops.sort_by(|a, b| {
        a.path
            .cmp(&b.path)
            .then(method_rank(&a.method).cmp(&method_rank(&b.method)))
    });
    let names = tool_names(&ops);
    names.into_iter().zip(ops).collect()
}

/// Header parameters OpenAPI says are ignored (set by content negotiation and auth).
fn ignored_header(name: &str) -> bool {
    ["accept", "content-type", "authorization"].contains(&name.to_ascii_lowercase().as_str())
}

fn tool(spec: &Spec, op: &Operation, name: String, rw: &mut Rewriter<'_>) -> OpenApiTool {
    let method = op.method.to_ascii_uppercase();
    let label = format!("{method} {}", op.path);
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    let mut params: Vec<BindingParam> = Vec::new();
    let mut top_level: HashSet<String> = HashSet::new();
    // Containers holding parameters whose names clash with an earlier one.
    let mut container_props: HashMap<&'static str, (Map<String, Value>, Vec<Value>)> =
        HashMap::new();

    let mut declared: Vec<(String, ParamLocation, bool, Value, crate::model::Parameter)> =
        Vec::new();
    for p in &op.parameters {
        if p.location == ParamLocation::Header && ignored_header(&p.name) {
            continue;
        }
        let mut schema = match &p.schema {
            Some(s) => rw.rewrite(s),
            None => json!({ "type": "string" }),
        };
        if let Value::Object(o) = &mut schema {
            if let Some(d) = &p.description
                && !o.contains_key("description")
            {
                o.insert("description".into(), json!(d));
            }
            if p.deprecated {
                o.insert("deprecated".into(), json!(true));
            }
        }
        declared.push((p.name.clone(), p.location, p.required, schema, p.clone()));
    }
    // Template variables with no declared parameter become required string path parameters.
    for var in template_vars(&op.path) {
        if !declared
            .iter()
            .any(|(n, l, ..)| *l == ParamLocation::Path && *n == var)
        {
            let p = crate::model::Parameter {
                name: var.clone(),
                location: ParamLocation::Path,
                required: true,
                description: None,
                deprecated: false,
                schema: None,
                style: None,
                explode: None,
                allow_reserved: false,
                content_type: None,
            };
            declared.push((var, ParamLocation::Path, true, json!({"type": "string"}), p));
        }
    }

    let has_body = op
        .request_body
        .as_ref()
        .is_some_and(|b| !b.content.is_empty());
    let reserved: HashSet<&str> = if has_body {
        ["body", "input", "bodyBase64", "contentType"]
            .into_iter()
            .collect()
    } else {
        HashSet::new()
    };
    for (pname, location, req, schema, p) in declared {
        let is_top = !top_level.contains(&pname) && !reserved.contains(pname.as_str());
        if is_top {
            top_level.insert(pname.clone());
            properties.insert(pname.clone(), schema);
            if req {
                required.push(json!(pname));
            }
        } else {
            let container = containers(location)[0];
            let entry = container_props.entry(container).or_default();
            entry.0.insert(pname.clone(), schema);
            if req {
                entry.1.push(json!(pname));
            }
        }
        let style = p.style.clone().unwrap_or_else(|| {
            match location {
                ParamLocation::Query | ParamLocation::Cookie => "form",
                ParamLocation::Path | ParamLocation::Header => "simple",
            }
            .to_owned()
        });
        let explode = p.explode.unwrap_or(style == "form");
        params.push(BindingParam {
            name: pname,
            location,
            required: req,
            style,
            explode,
            allow_reserved: p.allow_reserved,
            content_type: p.content_type.clone(),
            top_level: is_top,
        });
    }
    for (container, (props, req)) in container_props {
        if properties.contains_key(container) {
            continue;
        }
        let mut s = json!({ "type": "object", "properties": props, "additionalProperties": false });
        if !req.is_empty() {
            s["required"] = Value::Array(req.clone());
            required.push(json!(container));
        }
        properties.insert(container.to_owned(), s);
    }

    // Request body.
    let mut body_binding = None;
    if let Some(b) = op.request_body.as_ref().filter(|b| !b.content.is_empty()) {
        let media: Vec<BindingMedia> = b
            .content
            .iter()
            .map(|m| {
                let kind = BodyKind::of(&m.content_type, m.schema.as_ref());
                BindingMedia {
                    content_type: m.content_type.clone(),
                    kind,
                    encoding: m.encoding.clone(),
                    binary_fields: if kind == BodyKind::Multipart {
                        binary_fields(spec, m.schema.as_ref())
                    } else {
                        Vec::new()
                    },
                }
            })
            .collect();
        let first = &b.content[0];
        let all_binary = media.iter().all(|m| m.kind == BodyKind::Binary);
        let any_binary = media.iter().any(|m| m.kind == BodyKind::Binary);
        let body_schema = if all_binary {
            json!({ "type": "string", "format": "binary",
                    "description": "The raw body: text, a Uint8Array or a ToolFile (or bodyBase64)." })
        } else {
            let m = b
                .content
                .iter()
                .find(|m| BodyKind::of(&m.content_type, m.schema.as_ref()) != BodyKind::Binary)
                .unwrap_or(first);
            let mut s = match &m.schema {
                Some(s) => rw.rewrite(s),
                None => json!({ "type": "object" }),
            };
            if let (Some(d), Value::Object(o)) = (&b.description, &mut s)
                && !o.contains_key("description")
            {
                o.insert("description".into(), json!(d));
            }
            s
        };
        properties.insert("body".into(), body_schema);
        if any_binary {
            properties.insert(
                "bodyBase64".into(),
                json!({ "type": "string", "contentEncoding": "base64",
                        "description": "The request body as base64-encoded bytes." }),
            );
        }
        if b.required && !all_binary {
            required.push(json!("body"));
        }
        if media.len() > 1 {
            let types: Vec<Value> = media.iter().map(|m| json!(m.content_type)).collect();
            properties.insert(
                "contentType".into(),
                json!({ "type": "string", "enum": types, "default": media[0].content_type,
                        "description": "Request body media type." }),
            );
        }
        body_binding = Some(BindingBody {
            required: b.required,
            media,
        });
    }

    // Servers: operation/path level, else the spec's.
    let servers: Vec<Server> = if op.servers.is_empty() {
        spec.servers.clone()
    } else {
        op.servers.clone()
    };
    let server_arg = !top_level.contains("server")
        && (servers.len() > 1 || servers.iter().any(|s| !s.variables.is_empty()));
    if server_arg {
        properties.insert("server".into(), server_schema(&servers));
    }

    let mut input_schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        input_schema["required"] = Value::Array(required);
    }

    let (output_schema, response_binary) = output(op, rw);
    let requires_approval = matches!(method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE");
    let binding = Binding {
        method: method.clone(),
        path: op.path.clone(),
        operation_id: op.operation_id.clone(),
        servers,
        parameters: params,
        body: body_binding,
        server_arg,
        response_binary,
    };
    let mut description = tool_description(op.summary.as_deref(), op.description.as_deref())
        .unwrap_or_else(|| label.clone());
    let shadowed = credential_shadowed(spec, op);
    if !shadowed.is_empty() {
        // The connection's credential is placed after the parameters and wins; say so rather
        // than drop the agent's value without a word.
        let names: Vec<String> = shadowed.iter().map(|s| format!("`{s}`")).collect();
        let _ = write!(
            description,
            "\n\nNote: {} {} set from the connection's credentials, which win over a value passed here.",
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
        );
    }
    OpenApiTool {
        name,
        description,
        input_schema,
        output_schema,
        requires_approval,
        approval_description: requires_approval.then_some(label),
        binding: serde_json::to_value(&binding).unwrap_or(Value::Null),
        aliases: Vec::new(),
    }
}

/// Header and query parameters of `op` that one of the spec's API-key schemes places too (by
/// name, headers case-insensitively): the credential overwrites them.
fn credential_shadowed(spec: &Spec, op: &Operation) -> Vec<String> {
    use crate::model::{ApiKeyLocation, SecuritySchemeKind};
    let mut out = Vec::new();
    for p in &op.parameters {
        let clash = spec.security_schemes.iter().any(|s| match &s.kind {
            SecuritySchemeKind::ApiKey {
                location: ApiKeyLocation::Header,
                param_name,
            } => p.location == ParamLocation::Header && p.name.eq_ignore_ascii_case(param_name),
            SecuritySchemeKind::ApiKey {
                location: ApiKeyLocation::Query,
                param_name,
            } => p.location == ParamLocation::Query && p.name == *param_name,
            _ => false,
        });
        if clash && !out.contains(&p.name) {
            out.push(p.name.clone());
        }
    }
    out
}

/// Top-level properties of a multipart body schema that are binary strings (or arrays of them).
fn binary_fields(spec: &Spec, schema: Option<&Value>) -> Vec<String> {
    let doc = spec.document();
    let deref = |s: &'_ Value| -> Value {
        crate::parse::resolve(doc, s)
            .cloned()
            .unwrap_or(Value::Null)
    };
    let Some(schema) = schema.map(deref) else {
        return Vec::new();
    };
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    props
        .iter()
        .filter(|(_, p)| {
            let p = deref(p);
            let items = p.get("items").map(deref);
            is_binary_schema(&p) || items.as_ref().is_some_and(is_binary_schema)
        })
        .map(|(k, _)| k.clone())
        .collect()
}

fn server_schema(servers: &[Server]) -> Value {
    let urls: Vec<Value> = servers.iter().map(|s| json!(s.url)).collect();
    let mut vars = Map::new();
    for s in servers {
        for v in &s.variables {
            if vars.contains_key(&v.name) {
                continue;
            }
            let mut vs = json!({ "type": "string", "default": v.default });
            if !v.enum_values.is_empty() {
                vs["enum"] = json!(v.enum_values);
            }
            if let Some(d) = &v.description {
                vs["description"] = json!(d);
            }
            vars.insert(v.name.clone(), vs);
        }
    }
    let mut props = Map::new();
    props.insert(
        "url".into(),
        json!({ "type": "string", "enum": urls, "default": urls.first().cloned().unwrap_or(Value::Null) }),
    );
    if !vars.is_empty() {
        props.insert(
            "variables".into(),
            json!({ "type": "object", "properties": vars, "additionalProperties": false }),
        );
    }
    json!({
        "type": "object",
        "description": "Which API server to call (defaults to the first).",
        "properties": props,
        "additionalProperties": false,
    })
}

/// The ToolFile shape binary responses are returned as.
pub(crate) fn tool_file_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "_tag": { "const": "ToolFile" },
            "name": { "type": "string" },
            "mimeType": { "type": "string" },
            "encoding": { "const": "base64" },
            "data": { "type": "string" },
            "byteLength": { "type": "integer" }
        },
        "required": ["_tag", "mimeType", "encoding", "data", "byteLength"]
    })
}

/// Output schema of the first 2xx response with content, and whether it is binary.
fn output(op: &Operation, rw: &mut Rewriter<'_>) -> (Option<Value>, bool) {
    let mut successes: Vec<_> = op
        .responses
        .iter()
        .filter(|r| r.status.starts_with('2'))
        .collect();
    successes.sort_by_key(|r| {
        (
            r.status.to_ascii_uppercase().contains('X'),
            r.status.clone(),
        )
    });
    let Some(resp) = successes.iter().find(|r| !r.content.is_empty()) else {
        return (None, false);
    };
    let pick = |pred: &dyn Fn(&MediaType) -> bool| resp.content.iter().find(|m| pred(m));
    let media = pick(&|m| is_json(&m.content_type))
        .or_else(|| pick(&|m| is_ndjson(&m.content_type)))
        .unwrap_or(&resp.content[0]);
    let ct = media.content_type.as_str();
    if is_ndjson(ct) {
        let item = media
            .schema
            .as_ref()
            .map(|s| rw.rewrite(s))
            .unwrap_or(json!({}));
        return (Some(json!({ "type": "array", "items": item })), false);
    }
    if is_json(ct) {
        return (media.schema.as_ref().map(|s| rw.rewrite(s)), false);
    }
    if BodyKind::of(ct, media.schema.as_ref()) == BodyKind::Binary
        || media.schema.as_ref().is_some_and(is_binary_schema)
    {
        return (Some(tool_file_schema()), true);
    }
    (Some(json!({ "type": "string" })), false)
}

pub(crate) fn is_binary_schema(s: &Value) -> bool {
    matches!(
        s.get("format").and_then(Value::as_str),
        Some("binary") | Some("byte")
    ) && s.get("type").and_then(Value::as_str) != Some("object")
}

fn essence(ct: &str) -> String {
    ct.split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

pub(crate) fn is_json(ct: &str) -> bool {
    let e = essence(ct);
    e == "application/json"
        || e.ends_with("+json")
        || e == "text/json"
        || e == "*/*"
        || (e.starts_with("application/") && e.ends_with("/json"))
}

pub(crate) fn is_ndjson(ct: &str) -> bool {
    matches!(
        essence(ct).as_str(),
        "application/x-ndjson"
            | "application/ndjson"
            | "application/stream+json"
            | "application/jsonl"
            | "application/x-jsonlines"
            | "application/jsonlines"
    )
}

pub(crate) fn is_textual(ct: &str) -> bool {
    let e = essence(ct);
    e.starts_with("text/")
        || e.ends_with("+xml")
        || e.ends_with("/xml")
        || e == "application/x-www-form-urlencoded"
        || e == "application/javascript"
        || e == "application/graphql"
        || e == "application/yaml"
        || e == "application/x-yaml"
        || e.ends_with("+yaml")
        || e == "application/problem+json"
}

/// `{name}` variables of a path template.
pub(crate) fn template_vars(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        let name = &after[..end];
        if !name.is_empty() && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
        rest = &after[end + 1..];
    }
    out
}

// ---- naming -------------------------------------------------------------------------------

/// Lowercase words of an identifier: splits on non-alphanumerics and case boundaries
/// (`getHTTPResponse2` → get, http, response2).
fn words(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_ascii_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_ascii_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c.to_ascii_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn capitalise(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

pub(crate) fn camel_case(s: &str) -> String {
    let mut out = String::new();
    for (i, w) in words(s).iter().enumerate() {
        if i == 0 {
            out.push_str(w);
        } else {
            out.push_str(&capitalise(w));
        }
    }
    out
}

fn pascal_case(s: &str) -> String {
    words(s).iter().map(|w| capitalise(w)).collect()
}

fn is_version_segment(seg: &str) -> bool {
    let s = seg.to_ascii_lowercase();
    let Some(rest) = s.strip_prefix('v') else {
        return false;
    };
    !rest.is_empty()
        && rest
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn version_segment(path: &str) -> Option<String> {
    path.split('/')
        .find(|s| is_version_segment(s))
        .map(str::to_ascii_lowercase)
        .map(|v| v.replace('.', "_"))
}

fn group_of(op: &Operation) -> String {
    if let Some(tag) = op.tags.first() {
        let g = camel_case(tag);
        if !g.is_empty() {
            return g;
        }
    }
    for seg in op.path.split('/') {
        if seg.is_empty()
            || is_version_segment(seg)
            || seg.eq_ignore_ascii_case("api")
            || seg.starts_with('{')
        {
            continue;
        }
        let g = camel_case(seg);
        if !g.is_empty() {
            return g;
        }
    }
    "root".to_owned()
}

fn leaf_of(op: &Operation, group: &str) -> String {
    if let Some(id) = &op.operation_id {
        // Drop a leading part of the id (up to a delimiter) that spells the group, however many
        // words it has: `code-scanning/list-alerts-for-repo` in `codeScanning` is
        // `listAlertsForRepo`.
        let id_for_leaf = id
            .char_indices()
            .filter(|(_, c)| !c.is_ascii_alphanumeric())
            .find(|(at, _)| camel_case(&id[..*at]).eq_ignore_ascii_case(group))
            .map(|(at, c)| &id[at + c.len_utf8()..])
            .filter(|rest| rest.chars().any(|c| c.is_ascii_alphanumeric()))
            .unwrap_or(id.as_str());
        let leaf = camel_case(id_for_leaf);
        if !leaf.is_empty() {
            return leaf;
        }
    }
    let mut leaf = op.method.to_ascii_lowercase();
    for seg in op.path.split('/') {
        leaf.push_str(&pascal_case(seg));
    }
    leaf
}

/// The summary first (it is what names the operation: search ranks the first line highest),
/// then the description when it says more.
fn tool_description(summary: Option<&str>, description: Option<&str>) -> Option<String> {
    let summary = summary.map(str::trim).filter(|s| !s.is_empty());
    let description = description.map(str::trim).filter(|s| !s.is_empty());
    match (summary, description) {
        (Some(s), Some(d)) if d.starts_with(s) => Some(d.to_owned()),
        (Some(s), Some(d)) => Some(format!("{s}\n\n{d}")),
        (s, d) => s.or(d).map(str::to_owned),
    }
}

/// The name issue #18 retired: only the group's first word was dropped from the operation id
/// (`codeScanning.codeScanningListAlertsForRepo`). Kept as an alias so agent code that used it runs.
fn legacy_name(op: &Operation) -> Option<String> {
    if op.tool_path.is_some() {
        return None;
    }
    let group = group_of(op);
    let id = op.operation_id.as_ref()?;
    let segments: Vec<&str> = id
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|s| !s.is_empty())
        .collect();
    let rest = if segments.len() > 1 && camel_case(segments[0]).eq_ignore_ascii_case(&group) {
        let pos = id.find(segments[0]).unwrap_or(0) + segments[0].len();
        &id[pos..]
    } else {
        id.as_str()
    };
    let leaf = camel_case(rest);
    (!leaf.is_empty()).then(|| format!("{group}.{leaf}"))
}

fn hash8(s: &str) -> String {
    // FNV-1a, 32 bits: stable across runs and versions.
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

/// Names in rounds: `group.leaf`; colliding ones get the version segment (`group.v2.leaf`), then
/// the PascalCase method, then an 8-char hash; anything still equal gets `_2`, `_3`…
fn tool_names(ops: &[&Operation]) -> Vec<String> {
    let mut names: Vec<String> = ops
        .iter()
        .map(|op| {
            if let Some(p) = &op.tool_path {
                let p = p.trim().trim_matches('.');
                if !p.is_empty() {
                    return p.to_owned();
                }
            }
            let g = group_of(op);
            let l = leaf_of(op, &g);
            format!("{g}.{l}")
        })
        .collect();
    let collided = |names: &[String]| -> Vec<bool> {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for n in names {
            *counts.entry(n.as_str()).or_default() += 1;
        }
        names.iter().map(|n| counts[n.as_str()] > 1).collect()
    };
    for round in 0..3 {
        let dup = collided(&names);
        if !dup.iter().any(|d| *d) {
            break;
        }
        for (i, op) in ops.iter().enumerate() {
            if !dup[i] || op.tool_path.is_some() {
                continue;
            }
            match round {
                0 => {
                    if let Some(v) = version_segment(&op.path)
                        && let Some((g, l)) = names[i].split_once('.')
                    {
                        names[i] = format!("{g}.{v}.{l}");
                    }
                }
                1 => names[i].push_str(&pascal_case(&op.method)),
                _ => {
                    let h = hash8(&format!("{} {}", op.method, op.path));
                    names[i] = format!("{}_{h}", names[i]);
                }
            }
        }
    }
    let mut used: HashSet<String> = HashSet::new();
    names
        .into_iter()
        .map(|n| {
            let mut candidate = n.clone();
            let mut k = 2;
            while used.contains(&candidate) {
                candidate = format!("{n}_{k}");
                k += 1;
            }
            used.insert(candidate.clone());
            candidate
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naming_rules() {
        assert_eq!(words("getHTTPResponse2"), vec!["get", "http", "response2"]);
        assert_eq!(camel_case("repos/get-content"), "reposGetContent");
        assert_eq!(camel_case("Pet Store"), "petStore");
        assert_eq!(camel_case("deleteAlias"), "deleteAlias");
        assert!(
            is_version_segment("v2.1") && !is_version_segment("v") && !is_version_segment("vx")
        );
        let op = |method: &str, path: &str, id: Option<&str>, tag: Option<&str>| Operation {
            method: method.into(),
            path: path.into(),
            operation_id: id.map(Into::into),
            summary: None,
            description: None,
            tags: tag.into_iter().map(Into::into).collect(),
            deprecated: false,
            parameters: vec![],
            request_body: None,
            responses: vec![],
            servers: vec![],
            security: None,
            tool_path: None,
        };
        let a = op(
            "get",
            "/repos/{owner}",
            Some("repos/get-content"),
            Some("repos"),
        );
        assert_eq!(leaf_of(&a, &group_of(&a)), "getContent");
        // A group of several words is dropped whole, not only its first word.
        let scan = op(
            "get",
            "/repos/{owner}/{repo}/code-scanning/alerts",
            Some("code-scanning/list-alerts-for-repo"),
            Some("code-scanning"),
        );
        assert_eq!(group_of(&scan), "codeScanning");
        assert_eq!(leaf_of(&scan, "codeScanning"), "listAlertsForRepo");
        assert_eq!(
            legacy_name(&scan).as_deref(),
            Some("codeScanning.codeScanningListAlertsForRepo")
        );
        // An id that is only the group keeps it.
        let only = op("get", "/pets", Some("pets"), Some("pets"));
        assert_eq!(leaf_of(&only, "pets"), "pets");
        assert_eq!(
            tool_description(Some("Get a repository"), Some("The parent and source…")),
            Some("Get a repository\n\nThe parent and source…".into())
        );
        assert_eq!(
            tool_description(Some("List pets"), Some("List pets, paged.")),
            Some("List pets, paged.".into())
        );
        assert_eq!(tool_description(None, Some(" d ")), Some("d".into()));
        assert_eq!(tool_description(Some(""), None), None);
        let b = op("get", "/api/v1/{id}/users/{x}", None, None);
        assert_eq!(group_of(&b), "users");
        assert_eq!(leaf_of(&b, "users"), "getApiV1IdUsersX");
        let c = op("get", "/{id}", None, None);
        assert_eq!(group_of(&c), "root");
        let ops = [
            op("get", "/v1/pets", Some("list"), Some("pets")),
            op("get", "/v2/pets", Some("list"), Some("pets")),
            op("get", "/pets", Some("same"), Some("pets")),
            op("post", "/pets", Some("same"), Some("pets")),
            op("get", "/x", Some("dup"), Some("x")),
            op("get", "/x/", Some("dup"), Some("x")),
        ];
        let refs: Vec<&Operation> = ops.iter().collect();
        let names = tool_names(&refs);
        assert_eq!(names[0], "pets.v1.list");
        assert_eq!(names[1], "pets.v2.list");
        assert_eq!(names[2], "pets.sameGet");
        assert_eq!(names[3], "pets.samePost");
        assert!(names[4].starts_with("x.dupGet_") && names[5].starts_with("x.dupGet_"));
        assert_ne!(names[4], names[5]);
    }
}
