//! OpenAPI schema → JSON Schema for tools: component references become `#/$defs/X` (shared
//! definitions), other local references are inlined (cycle-safe), external or dangling references
//! become `{}` with a note, `nullable` becomes a `null` type, and `allOf` members that are plain
//! inline object schemas are merged.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::parse::{lookup_ref, percent_decode};

/// JSON Schema keywords whose value is one subschema (shared with `validate`'s loosening walk).
pub(crate) const ONE_SUBSCHEMA_KEYWORDS: [&str; 11] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
];

const COMPONENT_PREFIX: &str = "#/components/schemas/";
const MAX_DEPTH: usize = 96;

/// Keys whose values are data, not schemas: never rewritten.
const DATA_KEYS: [&str; 6] = ["example", "examples", "default", "enum", "const", "xml"];

pub(crate) struct Rewriter<'a> {
    doc: &'a Value,
    schemas: Option<&'a Map<String, Value>>,
    /// Non-component references being inlined right now (cycle guard).
    inlining: HashSet<String>,
}

impl<'a> Rewriter<'a> {
    pub(crate) fn new(doc: &'a Value) -> Self {
        Self {
            doc,
            schemas: doc
                .get("components")
                .and_then(|c| c.get("schemas"))
                .and_then(Value::as_object),
            inlining: HashSet::new(),
        }
    }

    pub(crate) fn rewrite(&mut self, schema: &Value) -> Value {
        self.walk(schema, 0)
    }

    fn walk(&mut self, v: &Value, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return json!({});
        }
        match v {
            Value::Object(map) => self.walk_object(map, depth),
            Value::Array(items) => {
                Value::Array(items.iter().map(|i| self.walk(i, depth + 1)).collect())
            }
            Value::Bool(_) => v.clone(),
            // Anything else in schema position is not a schema; accept anything.
            _ => json!({}),
        }
    }

    fn walk_object(&mut self, map: &Map<String, Value>, depth: usize) -> Value {
        if let Some(Value::String(r)) = map.get("$ref") {
            let mut out = self.reference(r, depth);
            // OpenAPI 3.1 allows siblings next to `$ref`; keep descriptive ones.
            if let Value::Object(o) = &mut out {
                for key in [
                    "description",
                    "title",
                    "deprecated",
                    "readOnly",
                    "writeOnly",
                ] {
                    if let Some(v) = map.get(key)
                        && !o.contains_key(key)
                    {
                        o.insert(key.to_owned(), v.clone());
                    }
                }
            }
            return out;
        }
        let mut out = Map::with_capacity(map.len());
        for (key, value) in map {
            if DATA_KEYS.contains(&key.as_str()) || key.starts_with("x-") {
                out.insert(key.clone(), value.clone());
                continue;
            }
            let new = match key.as_str() {
                // Maps of name → schema.
                "properties" | "patternProperties" | "$defs" | "definitions"
                | "dependentSchemas" => match value {
                    Value::Object(props) => Value::Object(
                        props
                            .iter()
                            .map(|(k, s)| (k.clone(), self.walk(s, depth + 1)))
                            .collect(),
                    ),
                    _ => continue,
                },
                // Single schema or list of schemas.
                k if ONE_SUBSCHEMA_KEYWORDS.contains(&k) => match value {
                    Value::Object(_) | Value::Array(_) | Value::Bool(_) => {
                        self.walk(value, depth + 1)
                    }
                    _ => continue,
                },
                "allOf" | "anyOf" | "oneOf" | "prefixItems" => match value {
                    Value::Array(items) => {
                        Value::Array(items.iter().map(|s| self.walk(s, depth + 1)).collect())
                    }
                    _ => continue,
                },
                // Everything else (type, format, required, discriminator, …) is kept as is.
                _ => value.clone(),
            };
            out.insert(key.clone(), new);
        }
        nullable_to_type(&mut out);
        merge_all_of(&mut out);
        Value::Object(out)
    }

    fn reference(&mut self, r: &str, depth: usize) -> Value {
        if let Some(rest) = r.strip_prefix(COMPONENT_PREFIX) {
            let first = rest.split('/').next().unwrap_or("");
            let name = percent_decode(first).replace("~1", "/").replace("~0", "~");
            if self.schemas.is_some_and(|s| s.contains_key(&name)) {
                return json!({ "$ref": format!("#/$defs/{rest}") });
            }
            return json!({ "description": format!("Unresolved reference {r}") });
        }
        if !r.starts_with('#') {
            return json!({ "description": format!("External reference {r} (not loaded)") });
        }
        if self.inlining.contains(r) {
            // A cycle through a non-component reference: stop here.
            return json!({});
        }
        let Ok(target) = lookup_ref(self.doc, r) else {
            return json!({ "description": format!("Unresolved reference {r}") });
        };
        self.inlining.insert(r.to_owned());
        let out = self.walk(target, depth + 1);
        self.inlining.remove(r);
        out
    }
}

/// OpenAPI 3.0 `nullable: true` → JSON Schema `type: [T, "null"]`.
fn nullable_to_type(out: &mut Map<String, Value>) {
    if out.get("nullable").and_then(Value::as_bool) != Some(true) {
        if out.get("nullable").is_some_and(Value::is_boolean) {
            out.remove("nullable");
        }
        return;
    }
    if let Some(Value::String(t)) = out.get("type") {
        let t = t.clone();
        out.insert("type".into(), json!([t, "null"]));
        out.remove("nullable");
    }
}

/// Keywords an `allOf` member may carry and still be merged into its parent.
const MERGEABLE: [&str; 6] = [
    "type",
    "properties",
    "required",
    "description",
    "title",
    "additionalProperties",
];

/// Merges the inline, plain object members of `allOf` into the parent; references and members
/// with other keywords stay in `allOf`. The parent's own keywords win over members'.
fn merge_all_of(out: &mut Map<String, Value>) {
    let Some(Value::Array(members)) = out.get("allOf") else {
        return;
    };
    let (plain, rest): (Vec<&Value>, Vec<&Value>) = members.iter().partition(|m| {
        m.as_object().is_some_and(|o| {
            o.keys().all(|k| MERGEABLE.contains(&k.as_str()))
                && o.get("type").is_none_or(|t| t == "object")
        })
    });
    if plain.is_empty() {
        return;
    }
    let parent_type = out.get("type").cloned();
    if parent_type.as_ref().is_some_and(|t| t != "object") {
        return;
    }
    let rest: Vec<Value> = rest.into_iter().cloned().collect();
    let plain: Vec<Value> = plain.into_iter().cloned().collect();
    let mut properties = match out.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let mut required: Vec<Value> = match out.remove("required") {
        Some(Value::Array(r)) => r,
        _ => Vec::new(),
    };
    for m in plain {
        let Value::Object(m) = m else { continue };
        for (k, v) in m {
            match k.as_str() {
                "properties" => {
                    if let Value::Object(p) = v {
                        for (name, s) in p {
                            properties.entry(name).or_insert(s);
                        }
                    }
                }
                "required" => {
                    if let Value::Array(r) = v {
                        for name in r {
                            if !required.contains(&name) {
                                required.push(name);
                            }
                        }
                    }
                }
                _ => {
                    out.entry(k).or_insert(v);
                }
            }
        }
    }
    if !properties.is_empty() {
        out.insert("properties".into(), Value::Object(properties));
    }
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    if rest.is_empty() {
        out.remove("allOf");
    } else {
        out.insert("allOf".into(), Value::Array(rest));
    }
    if !out.contains_key("type") && out.contains_key("properties") {
        out.insert("type".into(), json!("object"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_refs_nullable_and_all_of() {
        let doc = json!({
            "components": {"schemas": {
                "Pet": {"type": "object", "properties": {"name": {"type": "string", "nullable": true}}},
                "Node": {"type": "object", "properties": {"next": {"$ref": "#/components/schemas/Node"}}}
            }},
            "paths": {"/a": {"get": {"parameters": [{"schema": {"type": "object",
                "properties": {"self": {"$ref": "#/paths/~1a/get/parameters/0/schema"}}}}]}}}
        });
        let mut rw = Rewriter::new(&doc);
        let pet = rw.rewrite(&doc["components"]["schemas"]["Pet"]);
        assert_eq!(pet["properties"]["name"]["type"], json!(["string", "null"]));
        assert_eq!(
            rw.rewrite(&json!({"$ref": "#/components/schemas/Node"})),
            json!({"$ref": "#/$defs/Node"})
        );
        let dangling = rw.rewrite(&json!({"$ref": "#/components/schemas/Nope"}));
        assert!(
            dangling["description"]
                .as_str()
                .unwrap()
                .contains("Unresolved")
        );
        // A cycle through a non-component pointer terminates.
        let inline = rw.rewrite(&json!({"$ref": "#/paths/~1a/get/parameters/0/schema"}));
        assert_eq!(inline["properties"]["self"], json!({}));
        let merged = rw.rewrite(&json!({"allOf": [
            {"$ref": "#/components/schemas/Pet"},
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}}
        ]}));
        assert_eq!(
            merged,
            json!({"allOf": [{"$ref": "#/$defs/Pet"}], "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]})
        );
    }
}
