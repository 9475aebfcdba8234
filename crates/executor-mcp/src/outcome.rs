use executor_core::{ToolError, ToolOutcome};
use serde_json::{Value, json};

use crate::McpError;

fn unknown_tool(tool_id: &str) -> ToolOutcome {
    ToolOutcome::Err(ToolError::new(
        "mcp_tool_unknown",
        format!(
            "The MCP server no longer provides tool \"{tool_id}\". Its tool catalog changed; list tools again and retry with a current tool."
        ),
    ))
}

/// True for the unknown-tool rejections servers use (spec §6 "Catalog drift"):
/// "Unknown tool: <name>", "Tool <name> not found / is not available / does not exist".
pub fn is_unknown_tool_message(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    if lower.contains("unknown tool") {
        return true;
    }
    lower.contains("tool")
        && (lower.contains("not found")
            || lower.contains("is not available")
            || lower.contains("does not exist"))
}

fn first_text(result: &Value) -> Option<String> {
    result
        .get("content")?
        .as_array()?
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .map(str::trim)
        .find(|t| !t.is_empty())
        .map(str::to_owned)
}

/// Maps a CallToolResult (JSON) into the sandbox result union (spec §6 "Invocation").
pub fn call_result_to_outcome(tool_id: &str, result: Value) -> ToolOutcome {
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    if !is_error {
        return ToolOutcome::ok(result);
    }
    let text = first_text(&result);
    if let Some(text) = &text
        && is_unknown_tool_message(text)
        && text.len() < 500
    {
        return unknown_tool(tool_id);
    }
    let content = result.get("content").cloned().unwrap_or_else(|| json!([]));
    ToolOutcome::Err(
        ToolError::new(
            "mcp_tool_error",
            text.unwrap_or_else(|| "MCP tool returned an error".to_owned()),
        )
        .with_details(json!({ "content": content })),
    )
}

/// Maps a `tools/call` failure into the sandbox result union.
///
/// * JSON-RPC -32602/-32601 "Unknown tool" → `mcp_tool_unknown` (the caller should mark the catalog stale);
/// * other JSON-RPC errors → `mcp_rpc_error` with the server's message;
/// * a 403 `insufficient_scope` challenge → `oauth_scope_insufficient`;
/// * 401/403 or a failed dial → `connection_rejected` (spec §6 "Error mapping");
/// * a stdio server where they are off → `stdio_mcp_disabled`;
/// * anything else → `mcp_call_failed` (the engine may treat it as an infrastructure defect).
pub fn error_to_outcome(tool_id: &str, error: &McpError) -> ToolOutcome {
    match error {
        McpError::Rpc { code, message, .. } => {
            if matches!(code, -32602 | -32601) && is_unknown_tool_message(message) {
                return unknown_tool(tool_id);
            }
            ToolOutcome::Err(
                ToolError::new("mcp_rpc_error", message.clone())
                    .with_details(json!({ "code": code })),
            )
        }
        McpError::InsufficientScope { message, .. } => ToolOutcome::Err(
            ToolError::new("oauth_scope_insufficient", message.clone()).with_status(403),
        ),
        McpError::Connect { message, .. } => {
            ToolOutcome::Err(ToolError::new("connection_rejected", message.clone()))
        }
        McpError::StdioDisabled => ToolOutcome::Err(
            ToolError::new("stdio_mcp_disabled", error.to_string()).with_status(403),
        ),
        McpError::AddressNotAllowed(refused) => ToolOutcome::Err(refused.tool_error()),
        other if other.is_auth_rejection() => {
            ToolOutcome::Err(ToolError::new("connection_rejected", other.to_string()))
        }
        other => ToolOutcome::Err(ToolError::new("mcp_call_failed", other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(o: ToolOutcome) -> ToolError {
        match o {
            ToolOutcome::Err(e) => e,
            ToolOutcome::Ok { data, .. } => panic!("expected error, got {data}"),
        }
    }

    #[test]
    fn ok_results_pass_through_whole() {
        let r = json!({"content":[{"type":"text","text":"hi"}],"structuredContent":{"n":1},"isError":false});
        match call_result_to_outcome("t", r.clone()) {
            ToolOutcome::Ok { data, .. } => assert_eq!(data, r),
            ToolOutcome::Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn error_envelopes_map_to_mcp_tool_error() {
        let r = json!({"content":[{"type":"image","data":"x","mimeType":"image/png"},{"type":"text","text":"  "},{"type":"text","text":"boom"}],"isError":true});
        let e = err(call_result_to_outcome("t", r));
        assert_eq!(e.code, "mcp_tool_error");
        assert_eq!(e.message, "boom");
        assert_eq!(e.details.unwrap()["content"].as_array().unwrap().len(), 3);
        let e = err(call_result_to_outcome(
            "t",
            json!({"content":[],"isError":true}),
        ));
        assert_eq!(e.message, "MCP tool returned an error");
    }

    #[test]
    fn unknown_tools_map_to_mcp_tool_unknown() {
        let e = err(call_result_to_outcome(
            "gone",
            json!({"content":[{"type":"text","text":"Tool gone not found"}],"isError":true}),
        ));
        assert_eq!(e.code, "mcp_tool_unknown");
        assert!(e.message.contains("\"gone\""));
        let e = err(error_to_outcome(
            "gone",
            &McpError::Rpc {
                code: -32602,
                message: "Unknown tool: gone".into(),
                data: None,
            },
        ));
        assert_eq!(e.code, "mcp_tool_unknown");
        let e = err(error_to_outcome(
            "x",
            &McpError::Rpc {
                code: -32000,
                message: "nope".into(),
                data: None,
            },
        ));
        assert_eq!(e.code, "mcp_rpc_error");
        let e = err(error_to_outcome(
            "x",
            &McpError::Call {
                message: "denied".into(),
                http_status: Some(401),
                failure: crate::CallFailure::Protocol,
            },
        ));
        assert_eq!(e.code, "connection_rejected");
    }
}
