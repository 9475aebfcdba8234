//! Tool definitions and how they change between two listings (a "rug pull": a tool whose
//! description, schemas or annotations changed upstream after people and policies trusted it).
//!
//! A definition is the tool's name, description, input and output schemas and annotations. Its
//! fingerprint is the SHA-256 of its canonical JSON (object keys sorted at every level, no
//! whitespace), so the same definition always has the same fingerprint whatever order a server
//! lists its keys in. [`compare`] says which fields changed and whether the change needs a
//! person's acceptance before the tool runs without asking again.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// What a tool is, as far as people and policies trust it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    pub description: String,
    pub input_schema: Option<Value>,
    pub output_schema: Option<Value>,
    pub annotations: Option<Value>,
}

/// The fields of a definition, in the order a diff reports them.
pub const FIELDS: [&str; 4] = ["description", "inputSchema", "outputSchema", "annotations"];

impl ToolDefinition {
    /// The definition as the API shows it: `{name, description, inputSchema, outputSchema,
    /// annotations}` (absent parts as `null`).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert(
            "description".into(),
            Value::String(self.description.clone()),
        );
        m.insert(
            "inputSchema".into(),
            self.input_schema.clone().unwrap_or(Value::Null),
        );
        m.insert(
            "outputSchema".into(),
            self.output_schema.clone().unwrap_or(Value::Null),
        );
        m.insert(
            "annotations".into(),
            self.annotations.clone().unwrap_or(Value::Null),
        );
        Value::Object(m)
    }

    /// Reads back what [`Self::to_json`] wrote.
    pub fn from_json(value: &Value) -> Option<Self> {
        let some = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
        Some(ToolDefinition {
            name: value.get("name")?.as_str()?.to_owned(),
            description: value
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            input_schema: some(value.get("inputSchema")),
            output_schema: some(value.get("outputSchema")),
            annotations: some(value.get("annotations")),
        })
    }

    /// SHA-256 (hex) of the canonical JSON of the definition.
    pub fn fingerprint(&self) -> String {
        let mut text = String::new();
        canonical(&self.to_json(), &mut text);
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    fn field(&self, field: &str) -> Option<&Value> {
        match field {
            "inputSchema" => self.input_schema.as_ref(),
            "outputSchema" => self.output_schema.as_ref(),
            "annotations" => self.annotations.as_ref(),
            _ => None,
        }
    }
}

/// Writes `value` as JSON with every object's keys sorted and no whitespace.
pub fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// How a tool's definition changed between two listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comparison {
    /// The changed fields ([`FIELDS`] order); empty when the definitions are the same.
    pub fields: Vec<&'static str>,
    /// The annotations ask for less caution than before: read-only no more, destructive or
    /// open-world now, no longer idempotent, or approval now required by default.
    pub escalated: bool,
}

/// Compares two definitions of one tool.
pub fn compare(before: &ToolDefinition, after: &ToolDefinition) -> Comparison {
    let mut fields = Vec::new();
    if before.description != after.description {
        fields.push("description");
    }
    for field in &FIELDS[1..] {
        let (a, b) = (before.field(field), after.field(field));
        let same = match (a, b) {
            (Some(a), Some(b)) => {
                let (mut x, mut y) = (String::new(), String::new());
                canonical(a, &mut x);
                canonical(b, &mut y);
                x == y
            }
            (None, None) => true,
            _ => false,
        };
        if !same {
            fields.push(field);
        }
    }
    Comparison {
        escalated: escalates(before.annotations.as_ref(), after.annotations.as_ref()),
        fields,
    }
}

/// The behaviour hints a definition declares, with MCP's defaults for absent ones
/// (`readOnlyHint` false, `destructiveHint` true, `idempotentHint` false, `openWorldHint` true).
/// They are read from the upstream annotations an MCP tool keeps (`upstreamAnnotations`) or from
/// the annotations themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Hints {
    read_only: bool,
    destructive: bool,
    idempotent: bool,
    open_world: bool,
    requires_approval: bool,
}

fn hints(annotations: Option<&Value>) -> Hints {
    let upstream = annotations.and_then(|a| a.get("upstreamAnnotations").or(Some(a)));
    let flag = |name: &str| upstream.and_then(|u| u.get(name)).and_then(Value::as_bool);
    Hints {
        read_only: flag("readOnlyHint").unwrap_or(false),
        destructive: flag("destructiveHint").unwrap_or(true),
        idempotent: flag("idempotentHint").unwrap_or(false),
        open_world: flag("openWorldHint").unwrap_or(true),
        requires_approval: annotations
            .and_then(|a| a.get("requiresApproval"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

/// Whether `after`'s annotations are more dangerous than `before`'s.
pub fn escalates(before: Option<&Value>, after: Option<&Value>) -> bool {
    let (b, a) = (hints(before), hints(after));
    // A read-only tool's other hints mean nothing (MCP): it neither destroys nor reaches out.
    let destructive = |h: &Hints| !h.read_only && h.destructive;
    (b.read_only && !a.read_only)
        || (!destructive(&b) && destructive(&a))
        || (b.idempotent && !a.idempotent && !a.read_only)
        || (!b.open_world && a.open_world)
        || (!b.requires_approval && a.requires_approval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(description: &str, annotations: Value) -> ToolDefinition {
        ToolDefinition {
            name: "t".into(),
            description: description.into(),
            input_schema: Some(json!({"type": "object", "properties": {"a": {"type": "string"}}})),
            output_schema: None,
            annotations: Some(annotations),
        }
    }

    #[test]
    fn fingerprints_ignore_key_order_and_see_every_field() {
        let a = def(
            "d",
            json!({"realName": "t", "upstreamAnnotations": {"readOnlyHint": true, "title": "T"}}),
        );
        let mut b = a.clone();
        b.annotations = Some(
            json!({"upstreamAnnotations": {"title": "T", "readOnlyHint": true}, "realName": "t"}),
        );
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint().len(), 64);
        let mut c = a.clone();
        c.output_schema = Some(json!({"type": "object"}));
        assert_ne!(a.fingerprint(), c.fingerprint());
        assert_eq!(compare(&a, &c).fields, ["outputSchema"]);
        assert_eq!(
            compare(&a, &b),
            Comparison {
                fields: vec![],
                escalated: false
            }
        );
        assert_eq!(ToolDefinition::from_json(&a.to_json()), Some(a));
    }

    #[test]
    fn more_dangerous_annotations_escalate() {
        let ro = json!({"upstreamAnnotations": {"readOnlyHint": true}});
        let rw = json!({"upstreamAnnotations": {"readOnlyHint": false, "destructiveHint": false}});
        let destructive =
            json!({"upstreamAnnotations": {"destructiveHint": true}, "requiresApproval": true});
        let closed = json!({"upstreamAnnotations": {"readOnlyHint": true, "openWorldHint": false}});
        assert!(escalates(Some(&ro), Some(&rw)));
        assert!(escalates(Some(&rw), Some(&destructive)));
        assert!(escalates(Some(&closed), Some(&ro)));
        assert!(!escalates(Some(&destructive), Some(&ro)));
        assert!(!escalates(Some(&rw), Some(&ro)));
        // No hints at all: MCP's defaults (not read-only, destructive, open world).
        assert!(escalates(Some(&ro), None));
        assert!(!escalates(None, None));
        // Kinds without upstream hints: only requiresApproval counts.
        assert!(escalates(
            Some(&json!({})),
            Some(&json!({"requiresApproval": true}))
        ));
        let c = compare(&def("d", ro.clone()), &def("e", destructive));
        assert_eq!(c.fields, ["description", "annotations"]);
        assert!(c.escalated);
    }
}
