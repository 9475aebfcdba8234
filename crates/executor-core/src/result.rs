//! Formatting an execution's outcome into `text` / `structured` / `isError` (spec §4.5), and the
//! MCP content blocks of what it emitted (spec §5).

use base64::Engine as _;
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
    /// MCP content blocks (as JSON) when the execution emitted output: the emitted items, then the
    /// text (see [`content_with_emitted`]). Empty when nothing was emitted: `text` alone is the
    /// content then.
    pub content: Vec<Value>,
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
    let blocks: Vec<Value> = output.emitted.iter().flat_map(emitted_blocks).collect();
    if blocks.is_empty() {
        return format_text(output);
    }
    let logs = (!output.logs.is_empty()).then(|| format!("Logs:\n{}", output.logs.join("\n")));
    let mut completed = format_text(output);
    completed.content = content_with_emitted(blocks, &completed, logs);
    completed
}

/// Emitted text files are decoded up to this many characters.
pub const MAX_EMITTED_TEXT_CHARS: usize = 64_000;

/// The content of an execution that emitted output: the emitted blocks, then the error text (with
/// its logs), or the result text when there is a return value, or only `Logs:` when there are logs.
/// The "(no return value; N item(s) emitted…)" placeholder is not repeated: the items are there.
fn content_with_emitted(
    mut blocks: Vec<Value>,
    completed: &Completed,
    logs: Option<String>,
) -> Vec<Value> {
    let has_result = completed
        .structured
        .get("result")
        .is_some_and(|r| !r.is_null());
    let trailer = if completed.is_error || has_result {
        Some(completed.text.clone())
    } else {
        logs
    };
    if let Some(text) = trailer {
        blocks.push(json!({"type": "text", "text": text}));
    }
    blocks
}

const CONTENT_BLOCK_TYPES: [&str; 5] = ["text", "image", "audio", "resource", "resource_link"];

/// One `emit(value)` as MCP content blocks (spec §4.2, §5): a ToolFile is a leading
/// `File output: <name> (<mime>, <n> bytes)` line and then an image / audio block, its decoded text
/// (text-like MIME types), or an embedded `executor-file:///<name>` resource; an MCP content block
/// passes through; a string is a text block; any other value is its JSON as text.
pub fn emitted_blocks(item: &Value) -> Vec<Value> {
    if let Some(file) = tool_file(item) {
        return file_blocks(&file);
    }
    if let Some(kind) = item.get("type").and_then(Value::as_str)
        && CONTENT_BLOCK_TYPES.contains(&kind)
        && is_content_block(kind, item)
    {
        return vec![item.clone()];
    }
    let text = match item {
        Value::String(s) => s.clone(),
        other => serde_json::to_string(other).unwrap_or_default(),
    };
    vec![json!({"type": "text", "text": text})]
}

/// The fields each block type must carry to pass through as that block; anything else is text.
fn is_content_block(kind: &str, item: &Value) -> bool {
    let has = |key: &str| item.get(key).is_some_and(Value::is_string);
    match kind {
        "text" => has("text"),
        "image" | "audio" => has("data") && has("mimeType"),
        "resource" => item
            .get("resource")
            .and_then(|r| r.get("uri"))
            .is_some_and(Value::is_string),
        "resource_link" => has("uri") && has("name"),
        _ => false,
    }
}

struct ToolFile<'a> {
    name: &'a str,
    mime: &'a str,
    data: &'a str,
    byte_length: Option<u64>,
}

fn tool_file(item: &Value) -> Option<ToolFile<'_>> {
    if item.get("_tag").and_then(Value::as_str) != Some("ToolFile") {
        return None;
    }
    let data = item.get("data")?.as_str()?;
    Some(ToolFile {
        name: item.get("name").and_then(Value::as_str).unwrap_or("file"),
        mime: item
            .get("mimeType")
            .and_then(Value::as_str)
            .unwrap_or("application/octet-stream"),
        data,
        byte_length: item.get("byteLength").and_then(Value::as_u64),
    })
}

/// MIME types whose bytes are shown as text.
pub fn is_text_like(mime: &str) -> bool {
    let essence = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence.starts_with("text/")
        || essence.ends_with("+json")
        || essence.ends_with("+xml")
        || matches!(
            essence.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/x-javascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/csv"
                | "application/x-ndjson"
                | "application/graphql"
                | "application/sql"
        )
}

fn file_blocks(file: &ToolFile<'_>) -> Vec<Value> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(file.data.trim())
        .ok();
    let size = file
        .byte_length
        .or_else(|| bytes.as_ref().map(|b| b.len() as u64))
        .unwrap_or(0);
    let header = json!({
        "type": "text",
        "text": format!("File output: {} ({}, {size} bytes)", file.name, file.mime),
    });
    let mime = file.mime.to_ascii_lowercase();
    let body = if mime.starts_with("image/") {
        json!({"type": "image", "data": file.data, "mimeType": file.mime})
    } else if mime.starts_with("audio/") {
        json!({"type": "audio", "data": file.data, "mimeType": file.mime})
    } else if let Some(text) = bytes
        .filter(|_| is_text_like(&mime))
        .and_then(|b| String::from_utf8(b).ok())
    {
        let text = match text.char_indices().nth(MAX_EMITTED_TEXT_CHARS) {
            Some((cut, _)) => format!(
                "{}\n... [truncated {} chars]",
                &text[..cut],
                text[cut..].chars().count()
            ),
            None => text,
        };
        json!({"type": "text", "text": text})
    } else {
        json!({"type": "resource", "resource": {
            "uri": format!("executor-file:///{}", file.name),
            "mimeType": file.mime,
            "blob": file.data,
        }})
    };
    vec![header, body]
}

fn format_text(output: RunOutput) -> Completed {
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
            content: Vec::new(),
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
        content: Vec::new(),
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
    fn emitted_output_becomes_content_blocks() {
        let png = base64::engine::general_purpose::STANDARD.encode([137u8, 80, 78, 71]);
        let csv = base64::engine::general_purpose::STANDARD.encode("a,b\n1,2\n");
        let c = format_completed(RunOutput {
            result: None,
            logs: vec!["[log] x".into()],
            emitted: vec![
                json!({"_tag":"ToolFile","name":"p.png","mimeType":"image/png","encoding":"base64","data":png,"byteLength":4}),
                json!({"_tag":"ToolFile","name":"t.csv","mimeType":"text/csv","encoding":"base64","data":csv}),
                json!({"_tag":"ToolFile","name":"z.bin","mimeType":"application/zip","encoding":"base64","data":png}),
                json!({"type":"image","data":png,"mimeType":"image/png"}),
                json!({"type":"image"}),
                json!("plain"),
                json!({"n":1}),
            ],
            error: None,
        });
        assert_eq!(c.structured["emitted"], json!(7));
        assert_eq!(
            c.content,
            vec![
                json!({"type":"text","text":"File output: p.png (image/png, 4 bytes)"}),
                json!({"type":"image","data":png,"mimeType":"image/png"}),
                json!({"type":"text","text":"File output: t.csv (text/csv, 8 bytes)"}),
                json!({"type":"text","text":"a,b\n1,2\n"}),
                json!({"type":"text","text":"File output: z.bin (application/zip, 4 bytes)"}),
                json!({"type":"resource","resource":{"uri":"executor-file:///z.bin","mimeType":"application/zip","blob":png}}),
                json!({"type":"image","data":png,"mimeType":"image/png"}),
                json!({"type":"text","text":"{\"type\":\"image\"}"}),
                json!({"type":"text","text":"plain"}),
                json!({"type":"text","text":"{\"n\":1}"}),
                json!({"type":"text","text":"Logs:\n[log] x"}),
            ]
        );
        // A return value or an error follows the items; nothing emitted → no content list.
        let c = format_completed(RunOutput {
            result: Some(json!("done")),
            emitted: vec![json!("a")],
            ..Default::default()
        });
        assert_eq!(
            c.content,
            vec![
                json!({"type":"text","text":"a"}),
                json!({"type":"text","text":"done"})
            ]
        );
        let c = format_completed(RunOutput {
            error: Some("boom".into()),
            emitted: vec![json!("a")],
            ..Default::default()
        });
        assert_eq!(c.content[1], json!({"type":"text","text":"Error: boom"}));
        assert!(format_completed(RunOutput::default()).content.is_empty());
    }

    #[test]
    fn long_text_files_are_cut() {
        let big = base64::engine::general_purpose::STANDARD
            .encode("x".repeat(MAX_EMITTED_TEXT_CHARS + 3));
        let blocks = emitted_blocks(
            &json!({"_tag":"ToolFile","name":"a.txt","mimeType":"text/plain; charset=utf-8","data":big}),
        );
        let text = blocks[1]["text"].as_str().unwrap();
        assert!(
            text.ends_with("\n... [truncated 3 chars]"),
            "{}",
            &text[text.len() - 40..]
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
