use serde_json::{Map, Value, json};

/// One upstream tool as Executor catalogs it (spec §6 "Tool mapping").
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredTool {
    /// Sanitized, unique tool id (`sanitize_tool_name` + `_2`, `_3`… for duplicates).
    pub id: String,
    /// The name the server knows the tool by (sent in `tools/call`).
    pub real_name: String,
    /// Server description, or `MCP tool: <name>`.
    pub description: String,
    /// `inputSchema` (or legacy `parameters`), `{type:"object"}` when absent.
    pub input_schema: Value,
    /// Schema of the full CallToolResult the tool returns. When the tool declares an `outputSchema`,
    /// `structuredContent` is that schema and required. Always `Some` (every call returns a
    /// CallToolResult); `Option` is kept for callers that may drop it.
    pub output_schema: Option<Value>,
    /// `{realName, upstreamAnnotations?, title?, requiresApproval?, approvalDescription?}`.
    pub annotations: Value,
}

impl DiscoveredTool {
    pub fn requires_approval(&self) -> bool {
        self.annotations.get("requiresApproval") == Some(&Value::Bool(true))
    }
}

/// Result of a discovery: server identity and the mapped tools.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Discovery {
    pub server_name: Option<String>,
    pub instructions: Option<String>,
    pub tools: Vec<DiscoveredTool>,
}

/// Probe result (spec §3.9 `POST /api/mcp/probe`), the transport-level part of it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProbeResult {
    pub connected: bool,
    /// The server answered 401/403 (an auth wall).
    pub requires_authentication: bool,
    pub tool_count: Option<usize>,
    pub server_name: Option<String>,
    pub instructions: Option<String>,
    /// The HTTP status of the auth wall, if any.
    pub http_status: Option<u16>,
}

/// Schema of a CallToolResult; `structuredContent` is the tool's `outputSchema` (required) when given.
pub(crate) fn call_tool_result_schema(output_schema: Option<&Value>) -> Value {
    let mut properties = Map::new();
    properties.insert(
        "content".into(),
        json!({"type": "array", "items": {"type": "object"}}),
    );
    let mut required = vec![Value::from("content")];
    if let Some(schema) = output_schema {
        properties.insert("structuredContent".into(), schema.clone());
        required.push(Value::from("structuredContent"));
    }
    properties.insert("isError".into(), json!({"const": false}));
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
    })
}

/// Maps raw `tools/list` entries (as JSON) to catalog tools, in order.
pub fn map_tools(tools: &[Value]) -> Vec<DiscoveredTool> {
    let names: Vec<String> = tools
        .iter()
        .map(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    let ids = executor_core::unique_tool_names(names.iter().map(String::as_str));
    tools
        .iter()
        .zip(names)
        .zip(ids)
        .map(|((tool, real_name), id)| {
            let description = tool
                .get("description")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|d| !d.is_empty())
                .map(str::to_owned)
                .unwrap_or_else(|| format!("MCP tool: {real_name}"));
            let input_schema = tool
                .get("inputSchema")
                .or_else(|| tool.get("parameters"))
                .filter(|s| s.is_object())
                .cloned()
                .unwrap_or_else(|| json!({"type": "object"}));
            let output_schema =
                call_tool_result_schema(tool.get("outputSchema").filter(|s| s.is_object()));
            let upstream = tool.get("annotations").filter(|a| a.is_object());
            let mut annotations = Map::new();
            annotations.insert("realName".into(), Value::String(real_name.clone()));
            if let Some(title) = tool.get("title").and_then(Value::as_str) {
                annotations.insert("title".into(), Value::String(title.to_owned()));
            }
            if let Some(upstream) = upstream {
                annotations.insert("upstreamAnnotations".into(), upstream.clone());
                if upstream.get("destructiveHint") == Some(&Value::Bool(true)) {
                    let approval = upstream
                        .get("title")
                        .and_then(Value::as_str)
                        .unwrap_or(&real_name)
                        .to_owned();
                    annotations.insert("requiresApproval".into(), Value::Bool(true));
                    annotations.insert("approvalDescription".into(), Value::String(approval));
                }
            }
            DiscoveredTool {
                id,
                real_name,
                description,
                input_schema,
                output_schema: Some(output_schema),
                annotations: Value::Object(annotations),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_names_descriptions_schemas_annotations() {
        let tools = vec![
            json!({"name": "Get Workspace", "inputSchema": {"type":"object","properties":{"a":{"type":"string"}}}}),
            json!({"name": "get-workspace", "description": "dup", "inputSchema": {"type":"object"}}),
            json!({"name": "delete_all", "description": "  Deletes  ", "inputSchema": {"type":"object"},
                   "annotations": {"destructiveHint": true, "title": "Delete everything"}}),
            json!({"name": "rm", "annotations": {"destructiveHint": true}}),
            json!({"name": "typed", "inputSchema": {"type":"object"},
                   "outputSchema": {"type":"object","properties":{"n":{"type":"number"}}}}),
            json!({"name": "legacy", "parameters": {"type":"object","properties":{}}}),
        ];
        let out = map_tools(&tools);
        let ids: Vec<_> = out.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "get_workspace",
                "get_workspace_2",
                "delete_all",
                "rm",
                "typed",
                "legacy"
            ]
        );
        assert_eq!(out[0].description, "MCP tool: Get Workspace");
        assert_eq!(out[0].real_name, "Get Workspace");
        assert_eq!(out[2].description, "Deletes");
        assert!(out[2].requires_approval());
        assert_eq!(
            out[2].annotations["approvalDescription"],
            "Delete everything"
        );
        assert_eq!(out[3].annotations["approvalDescription"], "rm");
        assert!(!out[0].requires_approval());
        let typed = out[4].output_schema.as_ref().unwrap();
        assert_eq!(
            typed["properties"]["structuredContent"]["properties"]["n"]["type"],
            "number"
        );
        assert_eq!(typed["required"], json!(["content", "structuredContent"]));
        assert_eq!(typed["properties"]["isError"], json!({"const": false}));
        assert_eq!(
            out[5].input_schema,
            json!({"type":"object","properties":{}})
        );
        assert_eq!(out[3].input_schema, json!({"type":"object"}));
    }
}
