//! One tool call: arguments → GraphQL operation and variables → POST → result union.

use std::collections::BTreeMap;
use std::time::Duration;

use executor_core::outcome::{ToolError, ToolOutcome};
use serde_json::{Map, Value, json};

use crate::extract::Binding;
use crate::http::{HttpResponse, RequestParts, SendError, send_json};
use crate::schema::Schema;
use crate::validate::{Checked, check};

/// The operation text and variables of one call, after the arguments passed [`check`].
pub(crate) fn build_operation(
    binding: &Binding,
    checked: &Checked<'_>,
) -> (String, Map<String, Value>) {
    let mut declarations = Vec::new();
    let mut call_args = Vec::new();
    let mut variables = Map::new();
    for (name, value) in &checked.arguments {
        let Some(arg) = binding.args.iter().find(|a| a.name == *name) else {
            continue;
        };
        declarations.push(format!("${name}: {}", arg.ty));
        call_args.push(format!("{name}: ${name}"));
        variables.insert((*name).to_owned(), (*value).clone());
    }
    let mut text = binding.kind.as_str().to_owned();
    if !declarations.is_empty() {
        text.push('(');
        text.push_str(&declarations.join(", "));
        text.push(')');
    }
    text.push_str(" { ");
    text.push_str(&binding.field);
    if !call_args.is_empty() {
        text.push('(');
        text.push_str(&call_args.join(", "));
        text.push(')');
    }
    if let Some(selection) = checked.select.or(binding.selection.as_deref()) {
        text.push_str(" { ");
        text.push_str(selection);
        text.push_str(" }");
    }
    text.push_str(" }");
    (text, variables)
}

/// The operation text and variables a call would send (for previews and tests). Runs the same
/// checks as [`invoke`].
pub fn render_operation(
    schema: Option<&Schema>,
    binding: &Value,
    args: &Value,
) -> Result<(String, Value), Box<ToolError>> {
    let binding =
        Binding::from_value(binding).map_err(|m| Box::new(ToolError::new("binding_error", m)))?;
    let checked = check(schema, &binding, args)?;
    let (query, variables) = build_operation(&binding, &checked);
    Ok((query, Value::Object(variables)))
}

/// Calls one tool. Arguments are checked first ([`crate::validate_args`] without a schema: unknown
/// and missing arguments, `select` syntax); call [`invoke_with_schema`] to also check `select`
/// fields against the schema. Never sends a request for arguments that fail the checks.
///
/// Outcomes: `{ok:true, data}` where `data` is the root field's value; `graphql_errors` (first
/// message, `details.errors` with messages/paths/extensions, `details.data` the partial data);
/// `connection_rejected` / `oauth_scope_insufficient` on 401/403; `graphql_http_error` for other
/// non-2xx answers or bodies that are not GraphQL responses; `graphql_request_failed` when the
/// endpoint could not be reached or timed out.
pub async fn invoke(
    http: &reqwest::Client,
    endpoint: &str,
    binding: &Value,
    args: Value,
    headers: &BTreeMap<String, String>,
    query: &BTreeMap<String, String>,
    timeout: Duration,
) -> ToolOutcome {
    invoke_with_schema(http, endpoint, None, binding, args, headers, query, timeout).await
}

/// [`invoke`], validating `select` against `schema` (the connection's snapshot) when given.
#[allow(clippy::too_many_arguments)]
pub async fn invoke_with_schema(
    http: &reqwest::Client,
    endpoint: &str,
    schema: Option<&Schema>,
    binding: &Value,
    args: Value,
    headers: &BTreeMap<String, String>,
    query: &BTreeMap<String, String>,
    timeout: Duration,
) -> ToolOutcome {
    let binding = match Binding::from_value(binding) {
        Ok(b) => b,
        Err(m) => return ToolOutcome::Err(ToolError::new("binding_error", m)),
    };
    let checked = match check(schema, &binding, &args) {
        Ok(c) => c,
        Err(e) => return ToolOutcome::Err(*e),
    };
    let (text, variables) = build_operation(&binding, &checked);
    let mut body = Map::new();
    body.insert("query".into(), Value::String(text));
    if !variables.is_empty() {
        body.insert("variables".into(), Value::Object(variables));
    }
    let parts = RequestParts {
        endpoint,
        headers,
        query,
        timeout,
    };
    tracing::debug!(field = %binding.field, kind = binding.kind.as_str(), "graphql call");
    match send_json(http, &parts, &Value::Object(body)).await {
        Ok(response) => map_response(&binding, endpoint, response),
        Err(SendError::Timeout) => ToolOutcome::Err(
            ToolError::new(
                "graphql_request_failed",
                format!(
                    "The GraphQL request to {endpoint} timed out after {} s",
                    timeout.as_secs_f64()
                ),
            )
            .with_retryable(true),
        ),
        Err(SendError::Refused(refused)) => ToolOutcome::Err(refused.tool_error()),
        Err(e @ (SendError::BadHeader(_) | SendError::BadEndpoint(_))) => ToolOutcome::Err(
            ToolError::new(
                "graphql_request_failed",
                format!("The GraphQL request cannot be sent: {e}"),
            )
            .with_retryable(false),
        ),
        Err(e) => ToolOutcome::Err(
            ToolError::new(
                "graphql_request_failed",
                format!("The GraphQL request to {endpoint} failed: {e}"),
            )
            .with_retryable(!matches!(e, SendError::TooLarge)),
        ),
    }
}

fn map_response(binding: &Binding, endpoint: &str, response: HttpResponse) -> ToolOutcome {
    let status = response.status;
    if status == 401 || status == 403 {
        let insufficient_scope = status == 403
            && response
                .www_authenticate
                .as_deref()
                .is_some_and(|h| h.contains("insufficient_scope"));
        let upstream = response
            .json
            .as_ref()
            .and_then(crate::schema::error_messages)
            .unwrap_or_else(|| response.snippet.clone());
        let (code, message, recovery) = if insufficient_scope {
            (
                "oauth_scope_insufficient",
                format!(
                    "The GraphQL endpoint refused the call: the connection's token lacks a required scope (HTTP 403){}",
                    suffix(&upstream)
                ),
                "Tell the user the connection needs more scopes; they can re-create it with executor.coreTools.connections.createHandoff.",
            )
        } else {
            (
                "connection_rejected",
                format!(
                    "The GraphQL endpoint rejected the connection's credentials (HTTP {status}){}",
                    suffix(&upstream)
                ),
                "Check the connection with executor.coreTools.connections.list and re-create it with valid credentials (executor.coreTools.connections.createHandoff).",
            )
        };
        return ToolOutcome::Err(
            ToolError::new(code, message)
                .with_status(status)
                .with_retryable(false)
                .with_details(json!({
                    "category": "authentication",
                    "upstream": upstream,
                    "recovery": recovery,
                })),
        );
    }
    let success = (200..300).contains(&status);
    let Some(json) = response.json.as_ref().filter(|j| j.is_object()) else {
        return ToolOutcome::Err(
            ToolError::new(
                "graphql_http_error",
                format!(
                    "The GraphQL endpoint {endpoint} answered HTTP {status} with a body that is not a GraphQL response{}",
                    response.snippet_suffix()
                ),
            )
            .with_status(status)
            .with_retryable(status >= 500 || status == 429)
            .with_details(json!({"body": response.snippet})),
        );
    };
    if let Some(errors) = json
        .get("errors")
        .and_then(Value::as_array)
        .filter(|e| !e.is_empty())
    {
        let first = errors[0]
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("GraphQL error without a message");
        let message = if errors.len() > 1 {
            format!("{first} (and {} more GraphQL errors)", errors.len() - 1)
        } else {
            first.to_owned()
        };
        let mut details = Map::new();
        details.insert("errors".into(), Value::Array(errors.clone()));
        if let Some(data) = json.get("data").filter(|d| !d.is_null()) {
            details.insert("data".into(), data.clone());
        }
        let mut error =
            ToolError::new("graphql_errors", message).with_details(Value::Object(details));
        if !success {
            error = error.with_status(status);
        }
        return ToolOutcome::Err(error);
    }
    if !success {
        return ToolOutcome::Err(
            ToolError::new(
                "graphql_http_error",
                format!(
                    "The GraphQL endpoint {endpoint} answered HTTP {status}{}",
                    response.snippet_suffix()
                ),
            )
            .with_status(status)
            .with_retryable(status >= 500 || status == 429)
            .with_details(json!({"body": json})),
        );
    }
    match json.get("data") {
        Some(Value::Object(data)) => {
            ToolOutcome::ok(data.get(&binding.field).cloned().unwrap_or(Value::Null))
        }
        _ => ToolOutcome::Err(
            ToolError::new(
                "graphql_http_error",
                format!(
                    "The GraphQL endpoint {endpoint} answered without `data` or `errors`{}",
                    response.snippet_suffix()
                ),
            )
            .with_status(status)
            .with_details(json!({"body": json})),
        ),
    }
}

fn suffix(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}
