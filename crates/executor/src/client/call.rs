//! `executor call` and `executor resume`: one tool call as an execution, and the answer to a
//! paused one, printed for a person (or whole with `--json`).

use std::process::ExitCode;

use serde_json::{Value, json};

use super::api::Api;
use super::render::{content_template, did_you_mean, shell_quote, value};
use super::{CliError, CliResult};

/// A parsed `call` command line: the tool's path segments and its arguments.
#[derive(Debug, PartialEq)]
pub(crate) struct Invocation {
    pub(crate) path: Vec<String>,
    pub(crate) args: Value,
}

/// Splits `call`'s words into path segments (space-separated, dotted, or both) and the trailing
/// arguments (`'{json}'` or `@file.json`, an object). Wrong input is a usage error: nothing is
/// sent.
pub(crate) fn parse_invocation(words: &[String]) -> CliResult<Invocation> {
    let mut words = words.to_vec();
    let args = match words.last() {
        Some(last) if last.trim_start().starts_with('{') => {
            let text = words.pop().unwrap_or_default();
            parse_object(&text, "the arguments")?
        }
        Some(last) if last.starts_with('@') => {
            let file = words.pop().unwrap_or_default();
            let path = &file[1..];
            let text = std::fs::read_to_string(path)
                .map_err(|e| CliError::usage(format!("cannot read arguments from {path}: {e}")))?;
            parse_object(&text, path)?
        }
        _ => json!({}),
    };
    let path = path_segments(&words)?;
    if path.is_empty() {
        return Err(CliError::usage(
            "name the tool: executor call <integration> <owner> <connection> <tool> ['{json}'] (see executor call --help)",
        ));
    }
    Ok(Invocation { path, args })
}

/// `github org main issues.create` and `github.org.main.issues.create` are one path.
pub(crate) fn path_segments(words: &[String]) -> CliResult<Vec<String>> {
    let mut path = Vec::new();
    for word in words {
        if word.starts_with('{') || word.starts_with('@') {
            return Err(CliError::usage(format!(
                "{word:?}: the arguments come last, after the tool's path"
            )));
        }
        for segment in word.split('.') {
            if segment.is_empty()
                || !segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            {
                return Err(CliError::usage(format!(
                    "{word:?} is not a tool path: segments are letters, digits, '_' and '-', joined by '.' or spaces"
                )));
            }
            path.push(segment.to_owned());
        }
    }
    Ok(path)
}

fn parse_object(text: &str, what: &str) -> CliResult<Value> {
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(CliError::usage(format!(
            "{what}: expected a JSON object like '{{\"key\": \"value\"}}'"
        ))),
        Err(e) => Err(CliError::usage(format!("{what}: invalid JSON: {e}"))),
    }
}

/// The code of one call: the function looked up segment by segment, so a path segment is
/// never read as code.
pub(crate) fn call_code(invocation: &Invocation) -> String {
    let mut lookup = String::from("tools");
    for segment in &invocation.path {
        lookup.push('[');
        lookup.push_str(&Value::String(segment.clone()).to_string());
        lookup.push(']');
    }
    format!("return await {lookup}({});", invocation.args)
}

/// How to print an outcome.
#[derive(Clone, Copy)]
pub(crate) struct Output {
    pub(crate) json: bool,
}

/// `executor call`.
pub(crate) async fn call(api: &Api, invocation: Invocation, output: Output) -> CliResult {
    let mut outcome = api.execute(&call_code(&invocation)).await?;
    suggest_when_unknown(api, &invocation.path, &mut outcome).await;
    print_outcome(api, &outcome, output)
}

/// A `tool_not_found` the server had no suggestion for gets the catalog's closest paths.
async fn suggest_when_unknown(api: &Api, path: &[String], outcome: &mut Value) {
    if !unknown_without_suggestions(outcome) {
        return;
    }
    let closest = super::browse::closest_in_catalog(api, path).await;
    add_suggestions(outcome, closest);
}

// Both read through `pointer`: indexing a `Value` mutably inserts keys into objects and panics
// on anything else (a tool may answer a bare string).
fn unknown_without_suggestions(outcome: &Value) -> bool {
    outcome
        .pointer("/structured/result/error")
        .is_some_and(|error| error["code"] == "tool_not_found" && suggestions_of(error).is_empty())
}

fn add_suggestions(outcome: &mut Value, closest: Vec<String>) {
    let Some(Value::Object(error)) = outcome.pointer_mut("/structured/result/error") else {
        return;
    };
    if closest.is_empty() {
        return;
    }
    match error.get_mut("details") {
        Some(Value::Object(details)) => {
            details.insert("suggestions".to_owned(), json!(closest));
        }
        _ => {
            error.insert("details".to_owned(), json!({ "suggestions": closest }));
        }
    }
}

/// Suggested paths of a tool error, wherever the server put them, without the `tools.` root.
pub(crate) fn suggestions_of(error: &Value) -> Vec<String> {
    let list = error["suggestions"]
        .as_array()
        .or_else(|| error["details"]["suggestions"].as_array());
    list.map(|list| {
        list.iter()
            .filter_map(|s| {
                s.as_str()
                    .or_else(|| s["path"].as_str())
                    .map(|p| p.trim_start_matches("tools.").to_owned())
            })
            .collect()
    })
    .unwrap_or_default()
}

/// `executor resume`.
pub(crate) async fn resume(
    api: &Api,
    id: &str,
    action: &str,
    content: Option<Value>,
    output: Output,
) -> CliResult {
    match api.resume(id, action, content).await? {
        Some(outcome) => print_outcome(api, &outcome, output),
        None => Err(CliError::failed(format!(
            "no paused execution {id} on {}: it was answered already, expired, or was started on another server",
            api.target.origin
        ))),
    }
}

/// Prints a completed, failed or paused execution; the exit code says which.
pub(crate) fn print_outcome(api: &Api, outcome: &Value, output: Output) -> CliResult {
    let paused = outcome["status"] == "paused";
    let failure = if paused { None } else { failure(outcome) };
    if output.json {
        println!(
            "{}",
            serde_json::to_string_pretty(outcome).unwrap_or_default()
        );
        return match failure {
            Some(_) => Ok(ExitCode::from(1)),
            None => Ok(ExitCode::SUCCESS),
        };
    }
    if paused {
        print!("{}", paused_text(api, outcome));
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(message) = failure {
        return Err(CliError::failed(message));
    }
    let result = &outcome["structured"]["result"];
    let shown = match tool_envelope(result) {
        Some(Ok(data)) => data,
        _ => result,
    };
    if !shown.is_null() {
        println!("{}", value(shown));
    }
    Ok(ExitCode::SUCCESS)
}

/// `{ok:true, data}` → `Ok(data)`, `{ok:false, error}` → `Err(error)`: how a tool answers.
fn tool_envelope(result: &Value) -> Option<Result<&Value, &Value>> {
    match result["ok"] {
        Value::Bool(true) if result.get("data").is_some() => Some(Ok(&result["data"])),
        Value::Bool(false) if result.get("error").is_some() => Some(Err(&result["error"])),
        _ => None,
    }
}

/// The message of an execution that failed, or of a tool that answered an error.
fn failure(outcome: &Value) -> Option<String> {
    let structured = &outcome["structured"];
    if outcome["isError"] == true || structured["status"] == "error" {
        let error = &structured["error"];
        let message = error
            .as_str()
            .map(str::to_owned)
            .or_else(|| error["message"].as_str().map(str::to_owned))
            .or_else(|| {
                outcome["text"]
                    .as_str()
                    .map(|t| t.trim_start_matches("Error: ").to_owned())
            })
            .unwrap_or_else(|| "the execution failed".to_owned());
        return Some(plain_error(&message));
    }
    let Some(Err(error)) = tool_envelope(&structured["result"]) else {
        return None;
    };
    let mut message = error["message"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| error.to_string());
    if let Some(code) = error["code"].as_str() {
        message = format!("{message} ({code})");
    }
    Some(did_you_mean(message, &suggestions_of(error)))
}

/// A thrown error as a person reads it: without the `Error: ` the sandbox prefixes, and without
/// the source position, which points into code `call` generated, not code they wrote.
fn plain_error(message: &str) -> String {
    let mut text = message.trim();
    while let Some(rest) = text.strip_prefix("Error: ") {
        text = rest.trim_start();
    }
    text.lines()
        .filter(|line| {
            let line = line.trim();
            !(line.starts_with("at line ") && line.contains(", column "))
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim_end()
        .to_owned()
}

/// What a person needs to answer a pause: the question, the browser link, and commands that
/// answer it from this terminal.
fn paused_text(api: &Api, outcome: &Value) -> String {
    let structured = &outcome["structured"];
    let id = structured["executionId"].as_str().unwrap_or_default();
    let interaction = &structured["interaction"];
    let mut out = String::new();
    let message = interaction["message"]
        .as_str()
        .or_else(|| outcome["text"].as_str())
        .unwrap_or("The execution is waiting for an answer.");
    out.push_str("Paused: ");
    out.push_str(message.trim_end());
    out.push('\n');
    if let Some(url) = interaction["url"].as_str() {
        out.push_str(&format!(
            "\nOpen this URL in a browser to continue:\n  {url}\n"
        ));
    }
    let schema = &interaction["requestedSchema"];
    let asks = schema["properties"]
        .as_object()
        .is_some_and(|p| !p.is_empty());
    if asks {
        out.push_str(&format!(
            "\nRequested schema:\n{}\n",
            serde_json::to_string_pretty(schema).unwrap_or_default()
        ));
    }
    out.push_str(&format!(
        "\nApprove in browser: {}/resume/{id}\n",
        api.target.origin
    ));
    let flags = api.target.repeat_flags();
    let base = format!("executor resume --execution-id {id}{flags}");
    out.push_str("\nOr answer here:\n");
    if asks {
        let template = content_template(schema).to_string();
        out.push_str(&format!(
            "  {base} --action accept --content {}\n",
            shell_quote(&template)
        ));
    } else {
        out.push_str(&format!("  {base} --action accept\n"));
    }
    if interaction["kind"] != "url" {
        out.push_str(&format!("  {base} --action decline\n"));
        out.push_str(&format!("  {base} --action cancel\n"));
    }
    out
}

/// `--content`: a JSON object, or a usage error before anything is sent.
pub(crate) fn parse_content(raw: Option<&str>) -> CliResult<Option<Value>> {
    raw.map(|text| parse_object(text, "--content")).transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn spaced_dotted_and_mixed_paths_are_one() {
        let a = parse_invocation(&words(&[
            "github",
            "org",
            "main",
            "issues.create",
            "{\"a\":1}",
        ]))
        .unwrap();
        let b = parse_invocation(&words(&["github.org.main.issues.create", "{\"a\":1}"])).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.path.len(), 5);
        assert_eq!(
            call_code(&a),
            r#"return await tools["github"]["org"]["main"]["issues"]["create"]({"a":1});"#
        );
        assert_eq!(parse_invocation(&words(&["x.y"])).unwrap().args, json!({}));
    }

    #[test]
    fn bad_arguments_are_usage_errors() {
        for bad in [
            vec!["a.b", "{not json"],
            vec!["a.b", "{\"a\":1} trailing"],
            vec!["a..b"],
            vec!["a.b;alert(1)"],
            vec!["{\"a\":1}", "a.b"],
            vec!["a.b", "@/definitely/missing.json"],
            vec![],
        ] {
            let e = parse_invocation(&words(&bad)).unwrap_err();
            assert_eq!(e.code, 2, "{bad:?}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("args.json");
        std::fs::write(&file, "[1,2]").unwrap();
        let e = parse_invocation(&words(&["a.b", &format!("@{}", file.display())])).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("args.json"), "{e}");
        std::fs::write(&file, r#"{"q":"x"}"#).unwrap();
        let ok = parse_invocation(&words(&["a.b", &format!("@{}", file.display())])).unwrap();
        assert_eq!(ok.args, json!({"q": "x"}));
    }

    #[test]
    fn any_result_shape_is_safe_to_inspect() {
        for result in [
            json!("a bare string"),
            json!([1, 2]),
            json!(null),
            json!({"ok": true, "data": 1}),
        ] {
            let mut outcome =
                json!({"status": "completed", "structured": {"result": result.clone()}});
            assert!(!unknown_without_suggestions(&outcome));
            add_suggestions(&mut outcome, vec!["a.b".to_owned()]);
            assert_eq!(outcome["structured"]["result"], result, "left as it was");
            assert_eq!(failure(&outcome), None);
        }
        let mut unknown = json!({"structured": {"result": {"ok": false,
            "error": {"code": "tool_not_found", "message": "no", "details": {"path": "x"}}}}});
        assert!(unknown_without_suggestions(&unknown));
        add_suggestions(&mut unknown, vec!["a.org.main.echo".to_owned()]);
        assert!(!unknown_without_suggestions(&unknown));
        assert_eq!(
            unknown["structured"]["result"]["error"]["details"]["path"],
            "x"
        );
    }

    #[test]
    fn tool_errors_fail_with_suggestions() {
        let outcome = json!({"status": "completed", "isError": false, "structured": {"status": "completed",
            "result": {"ok": false, "error": {"code": "tool_not_found", "message": "no tool x",
            "details": {"suggestions": ["tools.a.org.main.echo", {"path": "a.org.main.add"}]}}}}});
        let message = failure(&outcome).unwrap();
        assert!(message.contains("no tool x (tool_not_found)"), "{message}");
        assert!(
            message.contains("\n  a.org.main.echo\n  a.org.main.add"),
            "{message}"
        );
        let fine =
            json!({"status": "completed", "structured": {"result": {"ok": true, "data": 1}}});
        assert_eq!(failure(&fine), None);
        let thrown = json!({"status": "completed", "isError": true, "text": "Error: boom",
            "structured": {"status": "error", "error": "boom"}});
        assert_eq!(failure(&thrown).as_deref(), Some("boom"));
        let declined = json!({"status": "completed", "isError": true, "structured": {"status": "error",
            "error": "Error: Tool \"x\" was declined by the user.\n    at line 1, column 14"}});
        assert_eq!(
            failure(&declined).as_deref(),
            Some("Tool \"x\" was declined by the user.")
        );
    }
}
