//! `executor tools search|describe|integrations`: the sandbox's own discovery helpers, run as an
//! execution and printed as tables (or as JSON with `--json`).

use std::process::ExitCode;

use serde_json::{Value, json};

use super::api::Api;
use super::render::{did_you_mean, summary, table, tool_card};
use super::{CliError, CliResult};

/// Runs `return await <helper>(<args>)` and hands back its result, or the failure as exit 1.
async fn run_helper(api: &Api, helper: &str, args: Value) -> CliResult<Value> {
    let outcome = api
        .execute(&format!("return await {helper}({args});"))
        .await?;
    if outcome["isError"] == true || outcome["status"] != "completed" {
        let text = outcome["text"].as_str().unwrap_or("the execution failed");
        return Err(CliError::failed(
            text.trim_start_matches("Error: ").to_owned(),
        ));
    }
    Ok(outcome["structured"]["result"].clone())
}

/// A helper's page of results: printed whole for `--json` (then `None`), else its items and
/// total.
async fn page(
    api: &Api,
    helper: &str,
    args: Value,
    as_json: bool,
) -> CliResult<Option<(Vec<Value>, u64)>> {
    let page = run_helper(api, helper, args).await?;
    if as_json {
        print_json(&page);
        return Ok(None);
    }
    let items = page["items"].as_array().cloned().unwrap_or_default();
    let total = page["total"].as_u64().unwrap_or(items.len() as u64);
    Ok(Some((items, total)))
}

fn print_json(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

/// `tools search <query> [--namespace N] [--limit 12]`.
pub(crate) async fn search(
    api: &Api,
    query: &str,
    namespace: Option<&str>,
    limit: usize,
    as_json: bool,
) -> CliResult {
    let mut args = json!({ "query": query, "limit": limit });
    if let Some(namespace) = namespace {
        args["namespace"] = json!(namespace);
    }
    let Some((items, total)) = page(api, "tools.search", args, as_json).await? else {
        return Ok(ExitCode::SUCCESS);
    };
    if items.is_empty() {
        println!("No tools match {query:?}.");
        println!("List the integrations: executor tools integrations");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|item| {
            vec![
                item["path"].as_str().unwrap_or("").to_owned(),
                summary(item["description"].as_str().unwrap_or(""), 80),
            ]
        })
        .collect();
    print!("{}", table(&["PATH", "DESCRIPTION"], &rows));
    println!(
        "\n{} of {total}. Describe one: executor tools describe <path>",
        items.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// `tools describe <path>`.
pub(crate) async fn describe(api: &Api, path: &str, as_json: bool) -> CliResult {
    let path = path.trim_start_matches("tools.");
    let described = run_helper(api, "tools.describe.tool", json!({ "path": path })).await?;
    if as_json {
        print_json(&described);
        return match described.get("error") {
            Some(_) => Ok(ExitCode::from(1)),
            None => Ok(ExitCode::SUCCESS),
        };
    }
    if let Some(error) = described.get("error") {
        let message = error["message"]
            .as_str()
            .unwrap_or("no such tool")
            .to_owned();
        let mut suggestions = super::call::suggestions_of(error);
        if suggestions.is_empty() {
            let wanted: Vec<String> = path.split('.').map(str::to_owned).collect();
            suggestions = super::browse::closest_in_catalog(api, &wanted).await;
        }
        return Err(CliError::failed(did_you_mean(message, &suggestions)));
    }
    let shown_path = described["path"].as_str().unwrap_or(path);
    let description = described["description"].as_str().unwrap_or("");
    print!("{}", tool_card(shown_path, description, &described, ""));
    Ok(ExitCode::SUCCESS)
}

/// `tools integrations [--query Q] [--limit 50]`.
pub(crate) async fn integrations(
    api: &Api,
    query: Option<&str>,
    limit: usize,
    as_json: bool,
) -> CliResult {
    let mut args = json!({ "limit": limit });
    if let Some(query) = query {
        args["query"] = json!(query);
    }
    let Some((items, total)) = page(api, "tools.executor.integrations.list", args, as_json).await?
    else {
        return Ok(ExitCode::SUCCESS);
    };
    if items.is_empty() {
        println!(
            "No integrations{}.",
            match query {
                Some(q) => format!(" match {q:?}"),
                None => String::new(),
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|item| {
            vec![
                item["id"].as_str().unwrap_or("").to_owned(),
                item["kind"].as_str().unwrap_or("").to_owned(),
                item["toolCount"].as_u64().unwrap_or(0).to_string(),
                summary(item["description"].as_str().unwrap_or(""), 70),
            ]
        })
        .collect();
    print!("{}", table(&["ID", "KIND", "TOOLS", "DESCRIPTION"], &rows));
    if total > items.len() as u64 {
        println!("\n{} of {total}; --limit shows more.", items.len());
    }
    Ok(ExitCode::SUCCESS)
}
