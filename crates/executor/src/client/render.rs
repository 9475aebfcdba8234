//! Text for people: tables, one-line summaries, and the skeleton of a form's answer.

use serde_json::{Map, Value, json};

/// Left-aligned columns separated by two spaces; the last column is not padded.
pub(crate) fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let columns = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for (i, cell) in cells.enumerate() {
            if i + 1 < columns {
                text.push_str(cell);
                let pad = widths[i] - cell.chars().count() + 2;
                text.extend(std::iter::repeat_n(' ', pad));
            } else {
                text.push_str(cell);
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(&mut headers.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

/// The first line of `text`, at most `max` characters (an ellipsis marks a cut).
pub(crate) fn summary(text: &str, max: usize) -> String {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if first.chars().count() <= max {
        return first.to_owned();
    }
    let cut: String = first.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

/// A value as the CLI prints a result: a string as it is, anything else as 2-space JSON.
pub(crate) fn value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    }
}

/// A skeleton answer for a form's requested schema: its required properties, each with a
/// placeholder of its type (an enum's first value, `"<string>"`, 0, false, [], a nested
/// skeleton up to four levels down).
pub(crate) fn content_template(schema: &Value) -> Value {
    skeleton(schema, 0)
}

fn skeleton(schema: &Value, depth: usize) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    if let Some(constant) = schema.get("const") {
        return constant.clone();
    }
    if let Some(default) = schema.get("default") {
        return default.clone();
    }
    let kind = match &schema["type"] {
        Value::String(kind) => kind.as_str(),
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .unwrap_or("string"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    match kind {
        "object" => {
            let mut out = Map::new();
            if depth < 4 {
                let required: Vec<&str> = schema["required"]
                    .as_array()
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if let Some(properties) = schema["properties"].as_object() {
                    for (name, property) in properties {
                        if required.contains(&name.as_str()) {
                            out.insert(name.clone(), skeleton(property, depth + 1));
                        }
                    }
                }
            }
            Value::Object(out)
        }
        "array" => json!([]),
        "number" | "integer" => json!(0),
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => json!("<string>"),
    }
}

/// A tool as `describe` shows it: its path, description, TypeScript input and output, and the
/// type definitions those name. `schema` holds `inputTypeScript`, `outputTypeScript` and
/// `typeScriptDefinitions` (a `ToolSchemaView` or a `describe.tool` answer); the TypeScript is
/// indented by `pad`.
pub(crate) fn tool_card(path: &str, description: &str, schema: &Value, pad: &str) -> String {
    let indent = |text: &str| {
        text.lines()
            .map(|l| format!("{pad}{l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut out = format!("Tool: {path}\n");
    let description = description.trim();
    if !description.is_empty() {
        out.push_str(&format!("\n{description}\n"));
    }
    for (label, key) in [("Input", "inputTypeScript"), ("Output", "outputTypeScript")] {
        if let Some(ts) = schema[key].as_str() {
            out.push_str(&format!("\n{label}:\n{}\n", indent(ts)));
        }
    }
    if let Some(defs) = schema["typeScriptDefinitions"].as_object() {
        let shown: Vec<&str> = defs
            .iter()
            .filter(|(name, _)| mentions(&out, name))
            .map(|(_, ts)| ts.as_str().unwrap_or(""))
            .collect();
        if !shown.is_empty() {
            out.push_str("\nTypes:\n");
            for ts in shown {
                out.push_str(&format!("{}\n", indent(ts)));
            }
        }
    }
    out
}

/// Whether TypeScript `text` names the type `name` (as a whole word).
fn mentions(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// `message`, then the suggested paths under "Did you mean:".
pub(crate) fn did_you_mean(mut message: String, suggestions: &[String]) -> String {
    if !suggestions.is_empty() {
        message.push_str("\nDid you mean:");
        for suggestion in suggestions {
            message.push_str("\n  ");
            message.push_str(suggestion);
        }
    }
    message
}

/// `text` quoted for a POSIX shell, so a printed command can be pasted as it is.
pub(crate) fn shell_quote(text: &str) -> String {
    shlex::try_quote(text)
        .map(|q| q.into_owned())
        .unwrap_or_else(|_| format!("'{}'", text.replace('\0', "")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_fill_required_properties_only() {
        let schema = json!({
            "type": "object",
            "required": ["choice", "count", "nested", "tags", "ok"],
            "properties": {
                "choice": {"type": "string", "enum": ["b", "a"]},
                "count": {"type": "integer"},
                "optional": {"type": "string"},
                "nested": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
                "tags": {"type": "array"},
                "ok": {"type": ["boolean", "null"]}
            }
        });
        assert_eq!(
            content_template(&schema),
            json!({"choice": "b", "count": 0, "nested": {"name": "<string>"}, "tags": [], "ok": false})
        );
        assert_eq!(
            content_template(&json!({"type": "object", "properties": {}})),
            json!({})
        );
    }

    #[test]
    fn deep_schemas_stop_at_four_levels() {
        let mut schema = json!({"type": "string"});
        for _ in 0..8 {
            schema = json!({"type": "object", "required": ["x"], "properties": {"x": schema}});
        }
        let text = content_template(&schema).to_string();
        assert_eq!(text, r#"{"x":{"x":{"x":{"x":{}}}}}"#);
    }

    #[test]
    fn tables_align_and_quotes_paste() {
        let text = table(
            &["NAME", "KIND"],
            &[
                vec!["a".into(), "mcp".into()],
                vec!["longer".into(), "openapi".into()],
            ],
        );
        assert_eq!(text, "NAME    KIND\na       mcp\nlonger  openapi\n");
        for text in [r#"{"a":"it's"}"#, "plain", "a b $HOME `x`"] {
            assert_eq!(
                shlex::split(&shell_quote(text)).unwrap(),
                vec![text.to_owned()]
            );
        }
        assert_eq!(summary("\n  first line  \nsecond", 80), "first line");
        assert_eq!(summary("abcdefghij", 5), "abcd…");
        assert_eq!(value(&json!("a \"raw\" string\n")), "a \"raw\" string\n");
        assert_eq!(value(&json!({"a": 1})), "{\n  \"a\": 1\n}");
    }
}
