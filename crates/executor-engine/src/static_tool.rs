//! What a core tool is, apart from what it does: its address, description, input schema and
//! approval flags. The catalog lists them and policies match them without knowing the core
//! tools' code (the engine hands them the table `core_tools` declares).

use serde_json::{Value, json};

/// Slug of the built-in integration (the core tools' home in listings).
pub const BUILTIN_INTEGRATION: &str = "executor";

/// Listings show static tools under this connection of the built-in integration.
pub const STATIC_TOOL_CONNECTION: &str = "coreTools";

/// A tool the product itself provides, addressed by its fqid (no `tools.` root).
pub(crate) struct StaticTool {
    /// e.g. `executor.coreTools.connections.list`
    pub(crate) fqid: &'static str,
    pub(crate) description: &'static str,
    pub(crate) input_schema: fn() -> Value,
    pub(crate) requires_approval: bool,
    /// `autoApprove` does not cover it, nor does a wildcard `approve` rule or one an agent wrote:
    /// a person approves each call unless a person's `approve` rule names this tool exactly.
    /// Set on the tools that change policies, connections, OAuth clients or credentials, and on
    /// those that make the server reach a URL the code names.
    pub(crate) needs_person: bool,
}

impl StaticTool {
    /// Name in listings: the fqid without `executor.`.
    pub(crate) fn name(&self) -> &'static str {
        self.fqid.strip_prefix("executor.").unwrap_or(self.fqid)
    }

    /// The list projection: owner `user` when the executor has a subject, else `org`.
    pub(crate) fn summary(&self, owner: executor_core::Owner) -> executor_store::ToolSummary {
        let mut annotations = json!({"static": true});
        if self.requires_approval {
            annotations["requiresApproval"] = json!(true);
        }
        executor_store::ToolSummary {
            integration: BUILTIN_INTEGRATION.to_owned(),
            owner,
            connection: STATIC_TOOL_CONNECTION.to_owned(),
            plugin_id: "built-in".to_owned(),
            name: self.name().to_owned(),
            description: self.description.to_owned(),
            annotations: Some(annotations),
        }
    }
}

/// The tool of `fqid` in `tools`.
pub(crate) fn find(tools: &'static [StaticTool], fqid: &str) -> Option<&'static StaticTool> {
    tools.iter().find(|t| t.fqid == fqid)
}
