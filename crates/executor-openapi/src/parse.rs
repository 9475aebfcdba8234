//! Text → [`Spec`]: JSON or YAML, OpenAPI 3.0 / 3.1, Swagger 2.0 (converted first). Walks raw
//! JSON so that imperfect real-world specs load; a broken operation is recorded as a failure and
//! the rest still load.

use serde_json::{Map, Value};

use crate::error::OpenApiError;
use crate::extract::ExtractionFailure;
use crate::model::*;

/// HTTP methods an OpenAPI path item may hold, in the order tools are listed.
pub(crate) const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// How many `$ref` hops a reference chain may take before it is declared circular.
const MAX_REF_HOPS: usize = 32;

/// Parses a spec from JSON or YAML text. OpenAPI 3.0 and 3.1 are read as they are; Swagger 2.0
/// is converted to the 3.0 shape first. Anything else is an [`OpenApiError::Parse`] saying why.
pub fn parse_spec(text: &str) -> Result<Spec, OpenApiError> {
    parse_spec_with_overrides(text, None)
}

/// [`parse_spec`] after applying `overrides` (RFC 6902 JSON Patch operations, the integration's
/// `specOverrides`) to the document. A failing operation is [`OpenApiError::Override`].
pub fn parse_spec_with_overrides(
    text: &str,
    overrides: Option<&Value>,
) -> Result<Spec, OpenApiError> {
    let mut doc = parse_document(text)?;
    if let Some(ops) = overrides {
        crate::patch::apply(&mut doc, ops)?;
    }
    let obj = match &doc {
        Value::Object(o) => o,
        other => {
            return Err(OpenApiError::Parse(format!(
                "The document is not an OpenAPI spec: expected a JSON or YAML object at the top level, found {}.",
                kind_of(other)
            )));
        }
    };
    if let Some(v) = obj.get("swagger") {
        let v = scalar_string(v).unwrap_or_default();
        if !v.starts_with('2') {
            return Err(OpenApiError::Parse(format!(
                "Unsupported Swagger version \"{v}\": only Swagger 2.0 and OpenAPI 3.0/3.1 documents are supported."
            )));
        }
        let converted = crate::swagger2::convert(&doc);
        return build(converted, SpecFormat::Swagger2, v);
    }
    let Some(version) = obj.get("openapi") else {
        let keys: Vec<&str> = obj.keys().take(8).map(String::as_str).collect();
        return Err(OpenApiError::Parse(format!(
            "The document is not an OpenAPI spec: it has no \"openapi\" or \"swagger\" field (top-level keys: {}).",
            if keys.is_empty() {
                "none".to_owned()
            } else {
                keys.join(", ")
            }
        )));
    };
    let version = scalar_string(version).unwrap_or_default();
    let format = if version.starts_with("3.0") {
        SpecFormat::OpenApi30
    } else if version.starts_with("3.") {
        SpecFormat::OpenApi31
    } else {
        return Err(OpenApiError::Parse(format!(
            "Unsupported OpenAPI version \"{version}\": only OpenAPI 3.0, 3.1 and Swagger 2.0 documents are supported."
        )));
    };
    build(doc, format, version)
}

/// JSON first when the text looks like JSON, else YAML (a superset). Errors name both attempts.
fn parse_document(text: &str) -> Result<Value, OpenApiError> {
    let trimmed = text.trim_start_matches('\u{feff}').trim();
    if trimmed.is_empty() {
        return Err(OpenApiError::Parse(
            "The document is empty: expected an OpenAPI spec in JSON or YAML.".to_owned(),
        ));
    }
    let lower: String = trimmed
        .chars()
        .take(64)
        .collect::<String>()
        .to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
        return Err(OpenApiError::Parse(
            "The document is an HTML page, not an OpenAPI spec (point to the spec's JSON or YAML file rather than its documentation page).".to_owned(),
        ));
    }
    let json_err = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        match serde_json::from_str::<Value>(trimmed) {
            Ok(v) => return Ok(v),
            Err(e) => Some(e),
        }
    } else {
        None
    };
    let limit = crate::yaml_depth::MAX_FLOW_DEPTH;
    if let Some(line) = crate::yaml_depth::flow_depth_exceeded(trimmed, limit) {
        return Err(OpenApiError::Parse(format!(
            "The document nests `[`/`{{` collections more than {limit} levels deep (line {line}): no OpenAPI spec needs that."
        )));
    }
    match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(trimmed) {
        Ok(mut y) => {
            // Merge keys (`<<: *anchor`) are common in hand-written YAML specs.
            let _ = y.apply_merge();
            Ok(yaml_to_json(y, 0))
        }
        Err(yaml_err) => Err(OpenApiError::Parse(match json_err {
            Some(e) => format!("The document is not valid JSON ({e}) or YAML ({yaml_err})."),
            None => format!("The document is not valid YAML or JSON: {yaml_err}."),
        })),
    }
}

/// YAML → JSON with keys stringified (`200:` response codes are integers in YAML).
fn yaml_to_json(y: serde_yaml_ng::Value, depth: usize) -> Value {
    use serde_yaml_ng::Value as Y;
    if depth > 256 {
        return Value::Null;
    }
    match y {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map(Value::Number)
                    .unwrap_or(Value::Null)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(seq) => Value::Array(
            seq.into_iter()
                .map(|v| yaml_to_json(v, depth + 1))
                .collect(),
        ),
        Y::Mapping(m) => {
            let mut out = Map::with_capacity(m.len());
            for (k, v) in m {
                let key = match k {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    Y::Null => "null".to_owned(),
                    other => match yaml_to_json(other, depth + 1) {
                        Value::String(s) => s,
                        v => v.to_string(),
                    },
                };
                out.insert(key, yaml_to_json(v, depth + 1));
            }
            Value::Object(out)
        }
        Y::Tagged(t) => yaml_to_json(t.value, depth + 1),
    }
}

pub(crate) fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A string, number or boolean as text (YAML `version: 1.0` is a number).
pub(crate) fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn str_field(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(scalar_string)
}

/// Follows `$ref` chains to the referenced value. Only local (`#/…`) references are supported.
pub(crate) fn resolve<'a>(doc: &'a Value, mut v: &'a Value) -> Result<&'a Value, String> {
    for _ in 0..MAX_REF_HOPS {
        let Some(r) = v.get("$ref").and_then(Value::as_str) else {
            return Ok(v);
        };
        v = lookup_ref(doc, r)?;
    }
    Err("circular $ref chain".to_owned())
}

/// The value a local reference points at.
pub(crate) fn lookup_ref<'a>(doc: &'a Value, r: &str) -> Result<&'a Value, String> {
    let Some(fragment) = r.strip_prefix('#') else {
        return Err(format!("external $ref \"{r}\" is not supported"));
    };
    let pointer = percent_decode(fragment);
    if pointer.is_empty() {
        return Ok(doc);
    }
    doc.pointer(&pointer)
        .ok_or_else(|| format!("unresolved $ref \"{r}\""))
}

/// `%XX` escapes decoded (a JSON Pointer in a URI fragment); malformed escapes stay as written.
pub(crate) fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

fn build(doc: Value, format: SpecFormat, spec_version: String) -> Result<Spec, OpenApiError> {
    let info = doc.get("info").cloned().unwrap_or(Value::Null);
    let servers = parse_servers(&doc, doc.get("servers"));
    let security_schemes = parse_security_schemes(&doc);
    let security = parse_security(doc.get("security")).unwrap_or_default();
    let mut tags: Vec<String> = doc
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|t| str_field(t, "name")).collect())
        .unwrap_or_default();
    let mut operations = Vec::new();
    let mut failures = Vec::new();
    if let Some(paths) = doc.get("paths") {
        match paths {
            Value::Object(paths) => {
                for (path, item) in paths {
                    if !path.starts_with('/') {
                        // `x-` extensions and junk keys.
                        continue;
                    }
                    parse_path_item(&doc, path, item, &mut operations, &mut failures);
                }
            }
            Value::Null => {}
            other => {
                return Err(OpenApiError::Parse(format!(
                    "The OpenAPI document's \"paths\" must be an object, found {}.",
                    kind_of(other)
                )));
            }
        }
    }
    for op in &operations {
        for t in &op.tags {
            if !tags.contains(t) {
                tags.push(t.clone());
            }
        }
    }
    Ok(Spec {
        format,
        spec_version,
        title: str_field(&info, "title"),
        description: str_field(&info, "description"),
        version: str_field(&info, "version"),
        servers,
        security_schemes,
        security,
        tags,
        operations,
        failures,
        doc,
    })
}

pub(crate) fn parse_servers(doc: &Value, v: Option<&Value>) -> Vec<Server> {
    let Some(arr) = v.and_then(Value::as_array) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for s in arr {
        let Ok(s) = resolve(doc, s) else { continue };
        let Some(url) = str_field(s, "url") else {
            continue;
        };
        let mut variables = Vec::new();
        if let Some(vars) = s.get("variables").and_then(Value::as_object) {
            for (name, var) in vars {
                let enum_values: Vec<String> = var
                    .get("enum")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(scalar_string).collect())
                    .unwrap_or_default();
                let default = str_field(var, "default")
                    .or_else(|| enum_values.first().cloned())
                    .unwrap_or_default();
                variables.push(ServerVariable {
                    name: name.clone(),
                    default,
                    enum_values,
                    description: str_field(var, "description"),
                });
            }
        }
        out.push(Server {
            url,
            description: str_field(s, "description"),
            variables,
        });
    }
    out
}

fn parse_security_schemes(doc: &Value) -> Vec<SecurityScheme> {
    let Some(schemes) = doc
        .get("components")
        .and_then(|c| c.get("securitySchemes"))
        .and_then(Value::as_object)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, s) in schemes {
        let Ok(s) = resolve(doc, s) else { continue };
        let ty = str_field(s, "type").unwrap_or_default();
        let kind = match ty.to_ascii_lowercase().as_str() {
            "apikey" => {
                let location = match str_field(s, "in")
                    .unwrap_or_default()
                    .to_ascii_lowercase()
                    .as_str()
                {
                    "query" => ApiKeyLocation::Query,
                    "cookie" => ApiKeyLocation::Cookie,
                    _ => ApiKeyLocation::Header,
                };
                SecuritySchemeKind::ApiKey {
                    location,
                    param_name: str_field(s, "name").unwrap_or_else(|| name.clone()),
                }
            }
            "http" => SecuritySchemeKind::Http {
                scheme: str_field(s, "scheme")
                    .unwrap_or_default()
                    .to_ascii_lowercase(),
                bearer_format: str_field(s, "bearerFormat"),
            },
            "oauth2" => SecuritySchemeKind::OAuth2 {
                flows: s.get("flows").cloned().unwrap_or(Value::Null),
            },
            "openidconnect" => SecuritySchemeKind::OpenIdConnect {
                url: str_field(s, "openIdConnectUrl").unwrap_or_default(),
            },
            _ => SecuritySchemeKind::Other { kind: ty },
        };
        out.push(SecurityScheme {
            name: name.clone(),
            description: str_field(s, "description"),
            kind,
        });
    }
    out
}

fn parse_security(v: Option<&Value>) -> Option<Vec<Vec<String>>> {
    let arr = v?.as_array()?;
    Some(
        arr.iter()
            .filter_map(Value::as_object)
            .map(|o| o.keys().cloned().collect())
            .collect(),
    )
}

fn parse_path_item(
    doc: &Value,
    path: &str,
    item: &Value,
    operations: &mut Vec<Operation>,
    failures: &mut Vec<ExtractionFailure>,
) {
    let item = match resolve(doc, item) {
        Ok(v @ Value::Object(_)) => v,
        Ok(Value::Null) => return,
        Ok(other) => {
            failures.push(ExtractionFailure {
                operation: path.to_owned(),
                message: format!("path item must be an object, found {}", kind_of(other)),
            });
            return;
        }
        Err(e) => {
            failures.push(ExtractionFailure {
                operation: path.to_owned(),
                message: e,
            });
            return;
        }
    };
    let path_params = item.get("parameters");
    let path_servers = parse_servers(doc, item.get("servers"));
    for method in METHODS {
        let Some(op) = item.get(method) else { continue };
        let label = format!("{} {path}", method.to_ascii_uppercase());
        match parse_operation(doc, path, method, op, path_params, &path_servers) {
            Ok(op) => operations.push(op),
            Err(message) => failures.push(ExtractionFailure {
                operation: label,
                message,
            }),
        }
    }
}

fn parse_operation(
    doc: &Value,
    path: &str,
    method: &str,
    op: &Value,
    path_params: Option<&Value>,
    path_servers: &[Server],
) -> Result<Operation, String> {
    let op = resolve(doc, op)?;
    if !op.is_object() {
        return Err(format!(
            "operation must be an object, found {}",
            kind_of(op)
        ));
    }
    let mut parameters: Vec<Parameter> = Vec::new();
    for list in [path_params, op.get("parameters")] {
        let Some(list) = list else { continue };
        let Some(list) = list.as_array() else {
            if list.is_null() {
                continue;
            }
            return Err("\"parameters\" must be an array".to_owned());
        };
        for p in list {
            let p = parse_parameter(doc, p)?;
            // Operation-level parameters override path-level ones with the same name and location.
            if let Some(existing) = parameters
                .iter_mut()
                .find(|e| e.name == p.name && e.location == p.location)
            {
                *existing = p;
            } else {
                parameters.push(p);
            }
        }
    }
    let request_body = match op.get("requestBody") {
        None | Some(Value::Null) => None,
        Some(b) => {
            let b = resolve(doc, b).map_err(|e| format!("requestBody: {e}"))?;
            Some(RequestBody {
                required: b.get("required").and_then(Value::as_bool).unwrap_or(false),
                description: str_field(b, "description"),
                content: parse_content(doc, b.get("content")),
            })
        }
    };
    let mut responses = Vec::new();
    if let Some(rs) = op.get("responses").and_then(Value::as_object) {
        for (status, r) in rs {
            if status.starts_with("x-") {
                continue;
            }
            // A broken response reference only loses that response's schema.
            let Ok(r) = resolve(doc, r) else {
                responses.push(Response {
                    status: status.clone(),
                    description: None,
                    content: Vec::new(),
                });
                continue;
            };
            responses.push(Response {
                status: status.clone(),
                description: str_field(r, "description"),
                content: parse_content(doc, r.get("content")),
            });
        }
    }
    let mut servers = parse_servers(doc, op.get("servers"));
    if servers.is_empty() {
        servers = path_servers.to_vec();
    }
    Ok(Operation {
        method: method.to_owned(),
        path: path.to_owned(),
        operation_id: str_field(op, "operationId").filter(|s| !s.trim().is_empty()),
        summary: str_field(op, "summary").filter(|s| !s.trim().is_empty()),
        description: str_field(op, "description").filter(|s| !s.trim().is_empty()),
        tags: op
            .get("tags")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(scalar_string).collect())
            .unwrap_or_default(),
        deprecated: op
            .get("deprecated")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        parameters,
        request_body,
        responses,
        servers,
        security: parse_security(op.get("security")),
        tool_path: str_field(op, "x-executor-toolPath").filter(|s| !s.trim().is_empty()),
    })
}

fn parse_parameter(doc: &Value, p: &Value) -> Result<Parameter, String> {
    let p = resolve(doc, p).map_err(|e| format!("parameter: {e}"))?;
    let name = str_field(p, "name").ok_or("a parameter has no \"name\"")?;
    let location = match str_field(p, "in")
        .unwrap_or_default()
        .to_ascii_lowercase()
        .as_str()
    {
        "path" => ParamLocation::Path,
        "query" => ParamLocation::Query,
        "header" => ParamLocation::Header,
        "cookie" => ParamLocation::Cookie,
        other => {
            return Err(format!(
                "parameter \"{name}\" has an unsupported location \"{other}\""
            ));
        }
    };
    let (schema, content_type) = match (p.get("schema"), p.get("content")) {
        (Some(s), _) => (Some(s.clone()), None),
        (None, Some(c)) => match c.as_object().and_then(|c| c.iter().next()) {
            Some((ct, media)) => (media.get("schema").cloned(), Some(ct.clone())),
            None => (None, None),
        },
        (None, None) => (None, None),
    };
    Ok(Parameter {
        required: location == ParamLocation::Path
            || p.get("required").and_then(Value::as_bool).unwrap_or(false),
        name,
        location,
        description: str_field(p, "description"),
        deprecated: p
            .get("deprecated")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        schema,
        style: str_field(p, "style"),
        explode: p.get("explode").and_then(Value::as_bool),
        allow_reserved: p
            .get("allowReserved")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        content_type,
    })
}

fn parse_content(doc: &Value, content: Option<&Value>) -> Vec<MediaType> {
    let Some(content) = content.and_then(Value::as_object) else {
        return Vec::new();
    };
    content
        .iter()
        .map(|(ct, media)| {
            let media = resolve(doc, media).unwrap_or(media);
            MediaType {
                content_type: ct.trim().to_owned(),
                schema: media.get("schema").cloned(),
                encoding: media.get("encoding").cloned(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("/a%20b"), "/a b");
        assert_eq!(percent_decode("/a%2"), "/a%2");
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }

    #[test]
    fn a_flow_nesting_bomb_is_refused_before_the_yaml_parser() {
        // 140,000 `[` kept libyaml busy for 26 s (quadratic in flow depth) before its recursion
        // limit refused them; also as invalid JSON, which falls back to YAML.
        for bomb in [
            format!("openapi: 3.0.0\npaths: {}", "[".repeat(140_000)),
            format!("{{\"openapi\": {}", "[".repeat(140_000)),
        ] {
            let started = std::time::Instant::now();
            let e = parse_spec(&bomb).unwrap_err();
            assert!(e.to_string().contains("levels deep (line"), "{e}");
            assert!(started.elapsed() < std::time::Duration::from_secs(1));
        }
    }

    #[test]
    fn clear_errors() {
        let e = parse_spec("").unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = parse_spec("<!DOCTYPE html><html></html>").unwrap_err();
        assert!(e.to_string().contains("HTML"), "{e}");
        let e = parse_spec("{\"name\": 1}").unwrap_err();
        assert!(e.to_string().contains("no \"openapi\""), "{e}");
        let e = parse_spec("openapi: 4.0.0\n").unwrap_err();
        assert!(e.to_string().contains("Unsupported OpenAPI version"), "{e}");
        let e = parse_spec("swagger: '1.2'\n").unwrap_err();
        assert!(e.to_string().contains("Swagger"), "{e}");
        let e = parse_spec("just a string").unwrap_err();
        assert!(e.to_string().contains("a string"), "{e}");
        let e = parse_spec("{ not json").unwrap_err();
        assert!(e.to_string().contains("not valid"), "{e}");
    }

    #[test]
    fn yaml_integer_keys_and_merge() {
        let spec = parse_spec(
            "openapi: 3.0.0\ninfo: {title: T, version: 1.0}\npaths:\n  /a:\n    get:\n      responses:\n        200:\n          description: ok\n",
        )
        .unwrap();
        assert_eq!(spec.version.as_deref(), Some("1.0"));
        assert_eq!(spec.operations[0].responses[0].status, "200");
    }
}
