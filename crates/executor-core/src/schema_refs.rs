//! Which shared definitions a tool's schemas reach. A connection's tools share one `$defs` map
//! (GitHub's spec: 969 schemas); sending all of it with one tool made `GET /api/tools/schema`
//! for a single GitHub tool 2.6 MB (issue #18). [`reachable_definitions`] keeps the ones the
//! schemas reference, transitively.

use std::collections::HashSet;

use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};

/// The entries of `definitions` that `roots` reference through `$ref`s of the forms
/// `#/$defs/X…`, `#/definitions/X…` and `#/components/schemas/X…`, and those they reference in
/// turn. Values under `example(s)`, `default`, `enum`, `const` and `x-` extensions are data, not
/// schemas.
pub fn reachable_definitions(
    roots: &[Option<&Value>],
    definitions: &Map<String, Value>,
) -> Map<String, Value> {
    let mut seen: HashSet<&str> = HashSet::new();
    let mut pending: Vec<&Value> = roots.iter().flatten().copied().collect();
    let mut out = Map::new();
    while let Some(schema) = pending.pop() {
        collect_refs(schema, &mut |name| {
            if let Some((key, target)) = definitions.get_key_value(name)
                && seen.insert(key.as_str())
            {
                out.insert(key.clone(), target.clone());
                pending.push(target);
            }
        });
    }
    out
}

fn collect_refs(value: &Value, found: &mut impl FnMut(&str)) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get("$ref")
                && let Some(name) = definition_name(reference)
            {
                found(&name);
            }
            for (key, child) in object {
                if !matches!(
                    key.as_str(),
                    "example" | "examples" | "default" | "enum" | "const"
                ) && !key.starts_with("x-")
                {
                    collect_refs(child, found);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, found)),
        _ => {}
    }
}

/// `#/$defs/A~1B/properties/x` → `A/B` (JSON-pointer escapes, then URI percent-encoding).
fn definition_name(reference: &str) -> Option<String> {
    let pointer = reference.strip_prefix('#')?;
    let rest = pointer
        .strip_prefix("/$defs/")
        .or_else(|| pointer.strip_prefix("/definitions/"))
        .or_else(|| pointer.strip_prefix("/components/schemas/"))?;
    let segment = rest.split('/').next()?;
    let decoded = percent_decode_str(segment).decode_utf8_lossy();
    Some(decoded.replace("~1", "/").replace("~0", "~"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_what_the_schemas_reach_and_nothing_else() {
        let defs = json!({
            "Issue": {"type": "object", "properties": {"user": {"$ref": "#/$defs/User"}}},
            "User": {"type": "object", "properties": {"org": {"$ref": "#/components/schemas/Org"}}},
            "Org": {"type": "object", "properties": {"self": {"$ref": "#/$defs/Org"}}},
            "a/b": {"type": "string"},
            "Unused": {"type": "string"},
            "InExample": {"type": "string"}
        });
        let defs = defs.as_object().unwrap();
        let input = json!({"properties": {
            "x": {"$ref": "#/$defs/a~1b"},
            "y": {"default": {"$ref": "#/$defs/InExample"}}
        }});
        let output = json!({"$ref": "#/definitions/Issue/properties/user"});
        let kept = reachable_definitions(&[Some(&input), Some(&output), None], defs);
        let mut names: Vec<&str> = kept.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["Issue", "Org", "User", "a/b"]);
        assert!(reachable_definitions(&[None], defs).is_empty());
        assert_eq!(definition_name("#/$defs/a%20b").as_deref(), Some("a b"));
        assert_eq!(definition_name("https://x/#/$defs/A"), None);
    }
}
