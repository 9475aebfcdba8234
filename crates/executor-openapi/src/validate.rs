//! Arguments checked against the tool's whole input schema (types, enums, cheap formats, nested
//! `required`, `additionalProperties: false`) before any request, with the `jsonschema` crate.
//!
//! An [`ArgsValidator`] is compiled once per tool (the engine caches it) from the tool's input
//! schema and the `$defs` it reaches; [`ArgsValidator::validate`] first runs the binding's own
//! checks ([`crate::validate_args`]: unknown keys, containers, `server`, base64), then validates
//! the arguments as the schema sees them: every parameter under its own name (or its container
//! when the name clashes), the body under `body` whichever alias carried it.
//!
//! The schema is loosened where OpenAPI and JSON Schema disagree, so a call the API would take is
//! never refused: `oneOf` is read as `anyOf` (specs list overlapping members), `required`
//! properties that are `readOnly` are not required in a request, boolean
//! `exclusiveMinimum`/`exclusiveMaximum` (3.0) become numeric, Stripe's
//! `x-stripeBypassValidation` enums accept any value, and `format: binary` strings also take
//! bytes (a `Uint8Array` or a ToolFile). A schema the crate cannot compile (an ECMA regex it
//! does not read) is compiled again without `pattern`s and formats, and failing that the
//! binding's checks alone apply.

#![allow(clippy::result_large_err)]

use executor_core::ToolError;
use serde_json::{Map, Value, json};

use crate::extract::containers;
use crate::invoke::{Binding, args_object, binding_from, body_arg, check, lookup};

/// At most this many problems are reported in one `invalid_tool_arguments`.
const MAX_ISSUES: usize = 8;
/// A quoted value in a message is cut here (an object that matched no `anyOf` member).
const MAX_MESSAGE_CHARS: usize = 300;
/// Schemas nested deeper than this are accepted as they are (`{}`) in the validation copy.
const MAX_DEPTH: usize = 64;

/// A tool's compiled argument check.
pub struct ArgsValidator {
    binding: Binding,
    schema: Option<jsonschema::Validator>,
}

impl std::fmt::Debug for ArgsValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgsValidator")
            .field("method", &self.binding.method)
            .field("path", &self.binding.path)
            .field("schema", &self.schema.is_some())
            .finish()
    }
}

impl ArgsValidator {
    /// Compiles the check of one tool. `definitions` are the shared `$defs` its schema refers to
    /// as `#/$defs/X` (only those it reaches are copied). Err only for an unreadable binding.
    pub fn compile(
        binding: &Value,
        input_schema: Option<&Value>,
        definitions: &Map<String, Value>,
    ) -> Result<Self, ToolError> {
        let binding = binding_from(binding)?;
        let schema = input_schema.and_then(|s| compile_schema(s, definitions));
        Ok(Self { binding, schema })
    }

    /// Whether the whole schema is checked (false: only the binding's checks could be compiled).
    pub fn checks_schema(&self) -> bool {
        self.schema.is_some()
    }

    /// `invalid_tool_arguments` (with `details.issues: [{path, message}]`) or Ok. Nothing is sent.
    pub fn validate(&self, args: &Value) -> Result<(), ToolError> {
        let args = args_object(args)?;
        check(&self.binding, args)?;
        let Some(schema) = &self.schema else {
            return Ok(());
        };
        let (instance, body_alias) = canonical(&self.binding, args);
        let mut issues: Vec<(Vec<String>, String)> = Vec::new();
        for error in schema.iter_errors(&instance) {
            if issues.len() == MAX_ISSUES {
                break;
            }
            let mut path: Vec<String> = error
                .instance_path()
                .into_iter()
                .map(|s| match s {
                    jsonschema::paths::LocationSegment::Property(p) => p.to_string(),
                    jsonschema::paths::LocationSegment::Index(i) => i.to_string(),
                })
                .collect();
            if let (Some(first), Some(alias)) = (path.first_mut(), body_alias)
                && first == "body"
            {
                *first = alias.to_owned();
            }
            issues.push((path, cut(&error.to_string())));
        }
        if issues.is_empty() {
            return Ok(());
        }
        let line = |(path, message): &(Vec<String>, String)| {
            if path.is_empty() {
                message.clone()
            } else {
                format!("{}: {message}", path.join("."))
            }
        };
        let message = if issues.len() == 1 {
            format!("Invalid argument {}.", line(&issues[0]))
        } else {
            let all: Vec<String> = issues.iter().map(line).collect();
            format!("Invalid arguments: {}.", all.join("; "))
        };
        let details: Vec<Value> = issues
            .iter()
            .map(|(path, m)| json!({ "path": path, "message": m }))
            .collect();
        Err(ToolError::new("invalid_tool_arguments", message)
            .with_retryable(false)
            .with_details(json!({ "issues": details })))
    }
}

fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_MESSAGE_CHARS {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(MAX_MESSAGE_CHARS).collect();
    out.push('…');
    out
}

/// The arguments as the input schema describes them: parameters under their declared names
/// (or their container), nulls left out (an absent optional parameter), the body under `body`.
/// Returns the alias the body came under when it was not `body`, to report paths as written.
fn canonical(b: &Binding, args: &Map<String, Value>) -> (Value, Option<&'static str>) {
    let mut out = Map::new();
    for p in &b.parameters {
        let Some(v) = lookup(args, p).filter(|v| !v.is_null()) else {
            continue;
        };
        if p.top_level {
            out.insert(p.name.clone(), v.clone());
        } else {
            let container = containers(p.location)[0];
            let entry = out
                .entry(container.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = entry {
                m.insert(p.name.clone(), v.clone());
            }
        }
    }
    let mut alias = None;
    if b.body.is_some() {
        if let Some(v) = body_arg(args).filter(|v| !v.is_null()) {
            out.insert("body".to_owned(), v.clone());
            if !args.contains_key("body") {
                alias = Some("input");
            }
        }
        for k in ["bodyBase64", "contentType"] {
            if let Some(v) = args.get(k).filter(|v| !v.is_null()) {
                out.insert(k.to_owned(), v.clone());
            }
        }
    }
    if b.server_arg
        && let Some(v) = args.get("server").filter(|v| !v.is_null())
    {
        out.insert("server".to_owned(), v.clone());
    }
    (Value::Object(out), alias)
}

fn compile_schema(
    input: &Value,
    definitions: &Map<String, Value>,
) -> Option<jsonschema::Validator> {
    let mut root = loosen(input, definitions, 0);
    if let Value::Object(o) = &mut root {
        // Required parameters and the body (or `bodyBase64`) are the binding's check, with
        // messages that name the parameter's location.
        o.remove("required");
    }
    let defs = executor_core::schema_refs::reachable_definitions(&[Some(input)], definitions);
    if !defs.is_empty()
        && let Value::Object(o) = &mut root
    {
        let loosened: Map<String, Value> = defs
            .into_iter()
            .map(|(k, v)| (k, loosen(&v, definitions, 0)))
            .collect();
        o.insert("$defs".to_owned(), Value::Object(loosened));
    }
    let build = |schema: &Value, formats: bool| {
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .should_validate_formats(formats)
            .build(schema)
    };
    match build(&root, true) {
        Ok(v) => Some(v),
        Err(first) => {
            let mut plain = root.clone();
            strip_patterns(&mut plain, 0);
            match build(&plain, false) {
                Ok(v) => {
                    tracing::debug!(error = %first, "tool schema compiled without its patterns");
                    Some(v)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "tool schema could not be compiled; only the binding's checks apply");
                    None
                }
            }
        }
    }
}

fn def_name(r: &str) -> Option<String> {
    let rest = r.strip_prefix("#/$defs/")?;
    let first = rest.split('/').next().unwrap_or("");
    Some(
        crate::parse::percent_decode(first)
            .replace("~1", "/")
            .replace("~0", "~"),
    )
}

/// Keys whose values are data, not schemas.
const DATA_KEYS: [&str; 6] = [
    "example",
    "examples",
    "default",
    "enum",
    "const",
    "x-examples",
];

/// What a `format: binary` string also accepts: bytes from the sandbox or a ToolFile.
fn bytes_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "_tag": { "enum": ["Bytes", "ToolFile"] },
            "data": { "type": "string" }
        },
        "required": ["data"]
    })
}

fn is_read_only(s: &Value, definitions: &Map<String, Value>) -> bool {
    if s.get("readOnly").and_then(Value::as_bool) == Some(true) {
        return true;
    }
    s.get("$ref")
        .and_then(Value::as_str)
        .and_then(def_name)
        .and_then(|n| definitions.get(&n))
        .and_then(|d| d.get("readOnly"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// The validation copy of a schema (see the module docs for what is loosened and why).
fn loosen(v: &Value, definitions: &Map<String, Value>, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return json!({});
    }
    let Value::Object(o) = v else {
        return v.clone();
    };
    let mut out = Map::with_capacity(o.len());
    for (k, x) in o {
        let key = if k == "oneOf" { "anyOf" } else { k.as_str() };
        let new = match key {
            _ if DATA_KEYS.contains(&key) || key.starts_with("x-") => x.clone(),
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                match x {
                    Value::Object(m) => Value::Object(
                        m.iter()
                            .map(|(n, s)| (n.clone(), loosen(s, definitions, depth + 1)))
                            .collect(),
                    ),
                    other => other.clone(),
                }
            }
            "anyOf" | "allOf" | "prefixItems" => match x {
                Value::Array(a) => Value::Array(
                    a.iter()
                        .map(|s| loosen(s, definitions, depth + 1))
                        .collect(),
                ),
                other => other.clone(),
            },
            k if crate::schema::ONE_SUBSCHEMA_KEYWORDS.contains(&k) => {
                loosen(x, definitions, depth + 1)
            }
            _ => x.clone(),
        };
        // `oneOf` and `anyOf` side by side: keep both as one `allOf` of the two.
        if key == "anyOf"
            && let Some(existing) = out.remove("anyOf")
        {
            let all = out.entry("allOf").or_insert_with(|| json!([]));
            if let Value::Array(a) = all {
                a.push(json!({ "anyOf": existing }));
                a.push(json!({ "anyOf": new }));
            }
            continue;
        }
        out.insert(key.to_owned(), new);
    }
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        match out.get(flag) {
            Some(Value::Bool(true)) => match out.remove(bound) {
                Some(n) => {
                    out.insert(flag.to_owned(), n);
                }
                None => {
                    out.remove(flag);
                }
            },
            Some(Value::Bool(false)) => {
                out.remove(flag);
            }
            _ => {}
        }
    }
    if o.get("x-stripeBypassValidation").and_then(Value::as_bool) == Some(true) {
        out.remove("enum");
    }
    if let (Some(Value::Array(req)), Some(Value::Object(props))) =
        (out.get("required"), o.get("properties"))
    {
        let kept: Vec<Value> = req
            .iter()
            .filter(|n| {
                n.as_str()
                    .and_then(|n| props.get(n))
                    .is_none_or(|s| !is_read_only(s, definitions))
            })
            .cloned()
            .collect();
        out.insert("required".to_owned(), Value::Array(kept));
    }
    let binary = o.get("format").and_then(Value::as_str) == Some("binary")
        && o.get("type").is_none_or(|t| {
            t == "string" || t.as_array().is_some_and(|a| a.contains(&json!("string")))
        });
    if binary {
        let mut any = vec![Value::Object(out), bytes_schema()];
        if let Value::Object(first) = &mut any[0] {
            // The string branch stays a plain string: `format: binary` is not a format to check.
            first.remove("format");
        }
        return json!({ "anyOf": any });
    }
    Value::Object(out)
}

fn strip_patterns(v: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(o) => {
            o.remove("pattern");
            o.remove("patternProperties");
            for (k, x) in o.iter_mut() {
                if !DATA_KEYS.contains(&k.as_str()) {
                    strip_patterns(x, depth + 1);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| strip_patterns(x, depth + 1)),
        _ => {}
    }
}
