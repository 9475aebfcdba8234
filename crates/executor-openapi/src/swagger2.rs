//! Swagger 2.0 → OpenAPI 3.0 shape: servers from `schemes`/`host`/`basePath`, `definitions` →
//! `components.schemas`, `securityDefinitions` → `components.securitySchemes`, body and
//! `formData` parameters → `requestBody`, response schemas under each `produces` media type,
//! `collectionFormat` → `style`/`explode`. Parameter and response `$ref`s are inlined.

use serde_json::{Map, Value, json};

use crate::parse::{METHODS, resolve};

pub(crate) fn convert(src: &Value) -> Value {
    let mut out = Map::new();
    out.insert("openapi".into(), json!("3.0.3"));
    for key in ["info", "tags", "externalDocs", "security"] {
        if let Some(v) = src.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    out.insert("servers".into(), Value::Array(servers(src)));

    let mut components = Map::new();
    if let Some(defs) = src.get("definitions").filter(|d| d.is_object()) {
        components.insert("schemas".into(), defs.clone());
    }
    if let Some(defs) = src.get("securityDefinitions").and_then(Value::as_object) {
        let mut schemes = Map::new();
        for (name, d) in defs {
            schemes.insert(name.clone(), security_scheme(d));
        }
        components.insert("securitySchemes".into(), Value::Object(schemes));
    }
    out.insert("components".into(), Value::Object(components));

    let global_consumes = media_list(src.get("consumes"));
    let global_produces = media_list(src.get("produces"));
    let mut paths = Map::new();
    if let Some(src_paths) = src.get("paths").and_then(Value::as_object) {
        for (path, item) in src_paths {
            let Ok(item) = resolve(src, item) else {
                continue;
            };
            let Some(item_obj) = item.as_object() else {
                continue;
            };
            let mut new_item = Map::new();
            for method in METHODS {
                let Some(op) = item_obj.get(method).filter(|o| o.is_object()) else {
                    continue;
                };
                new_item.insert(
                    method.into(),
                    operation(
                        src,
                        op,
                        item.get("parameters"),
                        &global_consumes,
                        &global_produces,
                    ),
                );
            }
            paths.insert(path.clone(), Value::Object(new_item));
        }
    }
    out.insert("paths".into(), Value::Object(paths));
    let mut out = Value::Object(out);
    rewrite_refs(&mut out, 0);
    out
}

fn servers(src: &Value) -> Vec<Value> {
    let base_path = src
        .get("basePath")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim_end_matches('/');
    let base_path = if base_path.is_empty() || base_path.starts_with('/') {
        base_path.to_owned()
    } else {
        format!("/{base_path}")
    };
    match src
        .get("host")
        .and_then(Value::as_str)
        .filter(|h| !h.is_empty())
    {
        Some(host) => {
            let schemes: Vec<&str> = src
                .get("schemes")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .filter(|v: &Vec<&str>| !v.is_empty())
                .unwrap_or_else(|| vec!["https"]);
            schemes
                .into_iter()
                .map(|s| json!({ "url": format!("{s}://{host}{base_path}") }))
                .collect()
        }
        None if !base_path.is_empty() => vec![json!({ "url": base_path })],
        None => Vec::new(),
    }
}

fn security_scheme(d: &Value) -> Value {
    let mut out = Map::new();
    if let Some(desc) = d.get("description") {
        out.insert("description".into(), desc.clone());
    }
    match d.get("type").and_then(Value::as_str).unwrap_or("") {
        "basic" => {
            out.insert("type".into(), json!("http"));
            out.insert("scheme".into(), json!("basic"));
        }
        "apiKey" => {
            out.insert("type".into(), json!("apiKey"));
            for key in ["name", "in"] {
                if let Some(v) = d.get(key) {
                    out.insert(key.into(), v.clone());
                }
            }
        }
        "oauth2" => {
            out.insert("type".into(), json!("oauth2"));
            let flow = match d.get("flow").and_then(Value::as_str).unwrap_or("") {
                "implicit" => "implicit",
                "password" => "password",
                "application" => "clientCredentials",
                _ => "authorizationCode",
            };
            let mut f = Map::new();
            for key in ["authorizationUrl", "tokenUrl"] {
                if let Some(v) = d.get(key) {
                    f.insert(key.into(), v.clone());
                }
            }
            f.insert(
                "scopes".into(),
                d.get("scopes").cloned().unwrap_or_else(|| json!({})),
            );
            out.insert("flows".into(), json!({ flow: f }));
        }
        other => {
            out.insert("type".into(), json!(other));
        }
    }
    Value::Object(out)
}

fn media_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn operation(
    src: &Value,
    op: &Value,
    path_params: Option<&Value>,
    global_consumes: &[String],
    global_produces: &[String],
) -> Value {
    let mut out = Map::new();
    for key in [
        "operationId",
        "summary",
        "description",
        "tags",
        "deprecated",
        "security",
        "x-executor-toolPath",
    ] {
        if let Some(v) = op.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    let mut consumes = media_list(op.get("consumes"));
    if consumes.is_empty() {
        consumes = global_consumes.to_vec();
    }
    let mut produces = media_list(op.get("produces"));
    if produces.is_empty() {
        produces = global_produces.to_vec();
    }
    if produces.is_empty() {
        produces.push("application/json".into());
    }

    // Path-level then operation-level; the operation wins on (name, in).
    let mut params: Vec<&Value> = Vec::new();
    for list in [path_params, op.get("parameters")] {
        for p in list.and_then(Value::as_array).into_iter().flatten() {
            let Ok(p) = resolve(src, p) else {
                // Keep the broken reference: the parser reports it for this operation.
                params.push(p);
                continue;
            };
            let key = (p.get("name"), p.get("in"));
            params.retain(|e| (e.get("name"), e.get("in")) != key);
            params.push(p);
        }
    }

    let mut parameters = Vec::new();
    let mut body: Option<Value> = None;
    let mut form_props = Map::new();
    let mut form_required = Vec::new();
    let mut has_file = false;
    for p in params {
        match p.get("in").and_then(Value::as_str) {
            Some("body") => {
                let schema = p.get("schema").cloned().unwrap_or_else(|| json!({}));
                let types = if consumes.is_empty() {
                    vec!["application/json".to_owned()]
                } else {
                    consumes.clone()
                };
                let mut content = Map::new();
                for ct in types {
                    content.insert(ct, json!({ "schema": schema.clone() }));
                }
                let mut b = Map::new();
                b.insert("content".into(), Value::Object(content));
                if let Some(req) = p.get("required") {
                    b.insert("required".into(), req.clone());
                }
                if let Some(d) = p.get("description") {
                    b.insert("description".into(), d.clone());
                }
                body = Some(Value::Object(b));
            }
            Some("formData") => {
                let Some(name) = p.get("name").and_then(Value::as_str) else {
                    continue;
                };
                if p.get("type").and_then(Value::as_str) == Some("file") {
                    has_file = true;
                }
                let mut schema = param_schema(p);
                if let (Some(d), Some(obj)) = (p.get("description"), schema.as_object_mut()) {
                    obj.insert("description".into(), d.clone());
                }
                form_props.insert(name.to_owned(), schema);
                if p.get("required").and_then(Value::as_bool) == Some(true) {
                    form_required.push(json!(name));
                }
            }
            Some(_) if p.get("$ref").is_none() => {
                let mut np = Map::new();
                for key in ["name", "in", "required", "description", "deprecated"] {
                    if let Some(v) = p.get(key) {
                        np.insert(key.into(), v.clone());
                    }
                }
                np.insert("schema".into(), param_schema(p));
                if p.get("type").and_then(Value::as_str) == Some("array") {
                    let (style, explode) = match p
                        .get("collectionFormat")
                        .and_then(Value::as_str)
                        .unwrap_or("csv")
                    {
                        "multi" => ("form", true),
                        "ssv" => ("spaceDelimited", false),
                        "pipes" => ("pipeDelimited", false),
                        _ => ("form", false),
                    };
                    if p.get("in").and_then(Value::as_str) == Some("query") {
                        np.insert("style".into(), json!(style));
                    }
                    np.insert("explode".into(), json!(explode));
                }
                parameters.push(Value::Object(np));
            }
            // Unknown locations and broken references go through for the parser to report.
            _ => parameters.push(p.clone()),
        }
    }
    if !form_props.is_empty() {
        let ct = if has_file
            || consumes
                .iter()
                .any(|c| c.starts_with("multipart/form-data"))
        {
            "multipart/form-data"
        } else {
            "application/x-www-form-urlencoded"
        };
        let mut schema = json!({ "type": "object", "properties": form_props });
        if !form_required.is_empty() {
            schema["required"] = Value::Array(form_required.clone());
        }
        body = Some(json!({
            "required": !form_required.is_empty(),
            "content": { ct: { "schema": schema } },
        }));
    }
    out.insert("parameters".into(), Value::Array(parameters));
    if let Some(b) = body {
        out.insert("requestBody".into(), b);
    }

    let mut responses = Map::new();
    if let Some(rs) = op.get("responses").and_then(Value::as_object) {
        for (status, r) in rs {
            let r = resolve(src, r).unwrap_or(r);
            let mut nr = Map::new();
            nr.insert(
                "description".into(),
                r.get("description").cloned().unwrap_or_else(|| json!("")),
            );
            if let Some(schema) = r.get("schema") {
                let mut content = Map::new();
                for ct in &produces {
                    content.insert(ct.clone(), json!({ "schema": schema.clone() }));
                }
                nr.insert("content".into(), Value::Object(content));
            }
            responses.insert(status.clone(), Value::Object(nr));
        }
    }
    out.insert("responses".into(), Value::Object(responses));
    Value::Object(out)
}

/// The JSON Schema of a non-body Swagger 2 parameter (its type keywords sit on the parameter).
fn param_schema(p: &Value) -> Value {
    let mut s = Map::new();
    for key in [
        "type",
        "format",
        "items",
        "enum",
        "default",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "pattern",
        "minItems",
        "maxItems",
        "uniqueItems",
        "multipleOf",
    ] {
        if let Some(v) = p.get(key) {
            s.insert(key.into(), v.clone());
        }
    }
    if s.get("type").and_then(Value::as_str) == Some("file") {
        s.insert("type".into(), json!("string"));
        s.insert("format".into(), json!("binary"));
    }
    if let Some(schema) = p.get("schema")
        && s.is_empty()
    {
        return schema.clone();
    }
    if s.is_empty() {
        s.insert("type".into(), json!("string"));
    }
    Value::Object(s)
}

/// `#/definitions/X` → `#/components/schemas/X` everywhere.
fn rewrite_refs(v: &mut Value, depth: usize) {
    if depth > 300 {
        return;
    }
    match v {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some(rest) = r.strip_prefix("#/definitions/")
            {
                *r = format!("#/components/schemas/{rest}");
            }
            for (_, child) in map.iter_mut() {
                rewrite_refs(child, depth + 1);
            }
        }
        Value::Array(a) => {
            for child in a {
                rewrite_refs(child, depth + 1);
            }
        }
        _ => {}
    }
}
