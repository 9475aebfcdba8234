//! Formatting an execution's outcome into `text` / `structured` / `isError` (spec §4.5).

use serde_json::{Value, json};

/// What the sandbox produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunOutput {
    pub result: Option<Value>,
    pub error: Option<String>,
    pub logs: Vec<String>,
    pub emitted: Vec<Value>,
}

/// A completed execution as both surfaces (HTTP, MCP) report it.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed {
    pub text: String,
    pub structured: Value,
    pub is_error: bool,
}

/// Results longer than this are cut, with a note of how much was cut.
pub const MAX_TEXT_CHARS: usize = 30_000;

/// Cuts `text` to [`MAX_TEXT_CHARS`] characters, appending `\n... [truncated N chars]`.
pub fn truncate_text(text: String) -> String {
    let total = text.chars().count();
    if total <= MAX_TEXT_CHARS {
        return text;
    }
    let cut = text
        .char_indices()
        .nth(MAX_TEXT_CHARS)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    format!(
        "{}\n... [truncated {} chars]",
        &text[..cut],
        total - MAX_TEXT_CHARS
    )
}

fn render_result(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

pub fn format_completed(output: RunOutput) -> Completed {
    let emitted = output.emitted.len();
    let logs_suffix = if output.logs.is_empty() {
        String::new()
    } else {
        format!("\nLogs:\n{}", output.logs.join("\n"))
    };
    let mut structured = serde_json::Map::new();
    if let Some(error) = output.error {
        let text = truncate_text(format!("Error: {error}{logs_suffix}"));
        structured.insert("status".into(), json!("error"));
        structured.insert("error".into(), json!(error));
        if emitted > 0 {
            structured.insert("emitted".into(), json!(emitted));
        }
        structured.insert("logs".into(), json!(output.logs));
        return Completed {
            text,
            structured: Value::Object(structured),
            is_error: true,
        };
    }
    let body = match &output.result {
        Some(value) => truncate_text(render_result(value)),
        None if emitted > 0 => {
            format!("(no return value; {emitted} item(s) emitted to the user)")
        }
        None => "(no result)".to_owned(),
    };
    structured.insert("status".into(), json!("completed"));
    structured.insert("result".into(), output.result.unwrap_or(Value::Null));
    if emitted > 0 {
        structured.insert("emitted".into(), json!(emitted));
    }
    structured.insert("logs".into(), json!(output.logs));
    Completed {
        text: format!("{body}{logs_suffix}"),
        structured: Value::Object(structured),
        is_error: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(output: RunOutput, text: &str, structured: Value, is_error: bool) {
        let c = format_completed(output);
        assert_eq!(c.text, text);
        assert_eq!(c.structured, structured);
        assert_eq!(c.is_error, is_error);
    }

    #[test]
    fn formats_results() {
        check(
            RunOutput {
                result: Some(json!(1)),
                ..Default::default()
            },
            "1",
            json!({"status":"completed","result":1,"logs":[]}),
            false,
        );
        check(
            RunOutput {
                result: Some(json!("hi")),
                logs: vec!["[log] x".into()],
                ..Default::default()
            },
            "hi\nLogs:\n[log] x",
            json!({"status":"completed","result":"hi","logs":["[log] x"]}),
            false,
        );
        check(
            RunOutput {
                result: Some(json!({"a":[1]})),
                ..Default::default()
            },
            "{\n  \"a\": [\n    1\n  ]\n}",
            json!({"status":"completed","result":{"a":[1]},"logs":[]}),
            false,
        );
        check(
            RunOutput::default(),
            "(no result)",
            json!({"status":"completed","result":null,"logs":[]}),
            false,
        );
        check(
            RunOutput {
                emitted: vec![json!("x"), json!("y")],
                ..Default::default()
            },
            "(no return value; 2 item(s) emitted to the user)",
            json!({"status":"completed","result":null,"emitted":2,"logs":[]}),
            false,
        );
        check(
            RunOutput {
                error: Some("boom".into()),
                logs: vec!["[warn] w".into()],
                ..Default::default()
            },
            "Error: boom\nLogs:\n[warn] w",
            json!({"status":"error","error":"boom","logs":["[warn] w"]}),
            true,
        );
    }

    #[test]
    fn truncates_long_text() {
        let long = "é".repeat(MAX_TEXT_CHARS + 5);
        let out = truncate_text(long);
        assert!(out.ends_with("\n... [truncated 5 chars]"));
        assert_eq!(out.chars().filter(|c| *c == 'é').count(), MAX_TEXT_CHARS);
        assert_eq!(truncate_text("short".into()), "short");
    }
}

#[cfg(test)]
mod float_tests {
    /// Results cross from the sandbox as JSON text; a number must come back as the same double
    /// (serde_json's default float parsing may be one ULP off: `float_roundtrip` is on).
    #[test]
    fn floats_round_trip_through_json_text() {
        for text in ["0.9008941648062319", "0.1", "1e-7", "123456789.12345678"] {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            let parsed: f64 = text.parse().unwrap();
            assert_eq!(value.as_f64(), Some(parsed), "{text}");
        }
    }
}
