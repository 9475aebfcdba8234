//! executor-mcp: Executor's downstream MCP client (spec §6).
//!
//! * [`McpClient`] is the per-process session pool. [`McpClient::discover`] lists a server's tools on a
//!   fresh session and closes it; [`McpClient::scope`] hands out an [`ExecutionScope`] in which every call
//!   to the same [`SessionKey`] rides ONE downstream session (concurrent calls included). When the scope
//!   finishes, at most one idle session per key is kept for later executions (idle TTL), the rest are
//!   closed with HTTP DELETE.
//! * Transports: streamable HTTP (rmcp's reqwest client) and legacy HTTP+SSE (2024-11-05, our own shim in
//!   [`sse`]), or `auto` (streamable HTTP first, SSE fallback unless the server answered 401/403); and
//!   stdio ([`StdioTarget`]: a child process per session, in its own process group, terminated and
//!   reaped when its session closes).
//! * Elicitations (`elicitation/create`, form or URL) a server sends while it handles a `tools/call` go
//!   to the [`Elicitor`] that call was made with ([`ExecutionScope::call_tool_with`]); sessions that
//!   list or call tools advertise elicitation `{form:{}, url:{}}`, sampling (forwarded to the call's
//!   [`Sampler`], the agent's own client, else refused with a JSON-RPC error) and `roots` (an empty
//!   list): servers that register tools only for capable clients list them to us.
//! * [`call_result_to_outcome`] maps a `CallToolResult` into the sandbox result union.

mod discovery;
mod elicit;
mod error;
pub mod network;
mod outcome;
mod pool;
mod reattach;
pub mod sse;
mod target;
mod upstream_http;

#[cfg(feature = "testing")]
pub mod stdio_fixture;
#[cfg(feature = "testing")]
pub mod testing;

pub use discovery::{DiscoveredTool, Discovery, ProbeResult, map_tools};
pub use elicit::{ElicitAction, ElicitAnswer, Elicitation, Elicitor, Sampler, SamplingError};
pub use error::{CallFailure, McpError, challenge_param};
pub use outcome::{call_result_to_outcome, error_to_outcome, is_unknown_tool_message};
pub use pool::{ExecutionScope, McpClient, McpClientConfig};
pub use reattach::SessionRecord;
pub use target::{
    INHERITED_ENV, RemoteTarget, RemoteTransport, SessionKey, StdioTarget, Target, TargetRef,
    inherited_env, is_inherited_env,
};

/// Client identity sent in `initialize` (spec §6).
pub const CLIENT_NAME: &str = "executor-mcp";
/// Client version sent in `initialize` (spec §6).
pub const CLIENT_VERSION: &str = "0.1.0";
