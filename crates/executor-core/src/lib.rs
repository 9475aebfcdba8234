//! Domain types and pure rules of Executor: owners, addresses, names, the tool result union and
//! the formatting of an execution's result. No IO, no async, no wire framework.

pub mod address;
pub mod auth;
pub mod names;
pub mod network;
pub mod outcome;
pub mod policy;
pub mod result;
pub mod schema_refs;
pub mod schema_ts;
pub mod search;
pub mod tool_change;

pub use address::{AddressError, Owner, ToolAddress};
pub use names::{
    CONNECTION_NAME_RULE, MAX_CONNECTION_NAME_CHARS, normalize_connection_name, sanitize_tool_name,
    slugify, unique_tool_names,
};
pub use outcome::{ToolError, ToolOutcome};
pub use result::{Completed, RunOutput, format_completed, truncate_text};

/// Milliseconds since the Unix epoch, the unit every stored timestamp uses.
pub fn now_ms() -> i64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
