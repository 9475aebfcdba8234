//! executor-sandbox: runs agent TypeScript/JavaScript in a fresh QuickJS runtime per execution.
//!
//! * [`prepare`] recovers the program from the agent's text (fenced blocks, bare functions,
//!   `export default`) and strips TypeScript with oxc.
//! * [`SandboxPool`] runs executions on its own tokio runtime (threads named `executor-js`),
//!   bounded by a semaphore, so a spinning script never stalls the caller's runtime.
//! * Inside the sandbox the only door to the outside is [`HostCalls`], reached through the lazy
//!   `tools` proxy; `console.*` and `emit` are captured into [`RunOutput`].
//!
//! Limits per execution: memory, stack, a JS-time budget (paused while host calls are in flight)
//! and a wall-clock budget.

mod pool;
mod prepare;
mod runner;

use std::time::Duration;

pub use pool::SandboxPool;
pub use prepare::{PreparedCode, prepare};

/// Resource limits applied to every execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxLimits {
    /// QuickJS heap limit (default 64 MiB).
    pub memory_bytes: usize,
    /// QuickJS stack limit (default 1 MiB).
    pub stack_bytes: usize,
    /// JS-time budget (default 5 min); the clock is paused while a host call is in flight and
    /// restarts from the moment the last dispatch returned.
    pub js_time: Duration,
    /// Wall-clock budget for the whole execution, host calls included (default 30 min).
    pub wall_time: Duration,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        Self {
            memory_bytes: 64 * 1024 * 1024,
            stack_bytes: 1024 * 1024,
            js_time: Duration::from_secs(5 * 60),
            wall_time: Duration::from_secs(30 * 60),
        }
    }
}

/// The sandbox's only door to the outside.
pub trait HostCalls: Send + Sync + 'static {
    /// `path` = the dotted path after `tools` (e.g. `"github.org.main.list_repos"`, `"search"`,
    /// `"describe.tool"`); `args` = the call's FIRST argument as JSON (`undefined` → `Value::Null`).
    fn call(
        &self,
        path: String,
        args: serde_json::Value,
    ) -> futures::future::BoxFuture<'static, HostReply>;
}

/// How a host call settles its promise in the sandbox.
#[derive(Debug, Clone, PartialEq)]
pub enum HostReply {
    /// The promise resolves with this JSON value.
    Resolve(serde_json::Value),
    /// The promise rejects with `new Error(message)` (catchable in JS).
    Reject(String),
}

/// The outcome of one execution (the core type, so the engine formats it without conversion).
pub use executor_core::RunOutput;

/// An output that is only an error.
pub(crate) fn failed(message: impl Into<String>) -> RunOutput {
    RunOutput {
        error: Some(message.into()),
        ..RunOutput::default()
    }
}
