//! executor-sandbox: runs agent TypeScript/JavaScript in a fresh QuickJS runtime per execution.
//!
//! * [`prepare`] recovers the program from the agent's text (fenced blocks, bare functions,
//!   `export default`) and strips TypeScript with oxc.
//! * [`SandboxPool`] runs executions on its own tokio runtime (threads named `executor-js`) or,
//!   while a slot is free, on the workers of a runtime it shares with the caller, bounded by a
//!   semaphore; a stretch of JS over 1 ms hands the shared worker's other tasks to another
//!   thread, so a spinning script never stalls the caller's runtime.
//! * Inside the sandbox the only door to the outside is [`HostCalls`], reached through the lazy
//!   `tools` proxy; `console.*` and `emit` are captured into [`RunOutput`].
//!
//! Limits per execution: memory, stack, a JS-time budget (paused while host calls are in flight)
//! and a wall-clock budget.

mod pool;
mod prepare;
mod runner;

use std::time::Duration;

pub use pool::{JS_THREAD_STACK, Placement, SandboxPool, Slot};
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

    /// The time the code sees, in epoch milliseconds: `Date.now()`, `new Date()` without
    /// arguments, `Date()` and `performance.now()` all read it. Called on the JS thread, so it
    /// must not block. The default is the system clock; a host that replays an execution returns
    /// the values it handed out the first time.
    fn clock(&self) -> f64 {
        system_clock_ms()
    }
}

/// The system clock in epoch milliseconds (whole milliseconds, like `Date.now()`).
pub fn system_clock_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as f64)
        .unwrap_or(0.0)
}

/// Per-execution options of [`SandboxPool::run_with`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunOptions {
    /// Seed of `Math.random` (a xoshiro128** generator): the same seed gives the same sequence,
    /// so a re-run of the same code sees the same random numbers.
    pub seed: u64,
    /// Epoch milliseconds that `performance.now()` counts from (`performance.timeOrigin`).
    /// `None`: the first clock reading of the execution.
    pub time_origin_ms: Option<f64>,
}

impl Default for RunOptions {
    /// A fresh random seed; `performance.now()` counts from the first clock reading.
    fn default() -> Self {
        Self {
            seed: fresh_seed(),
            time_origin_ms: None,
        }
    }
}

/// A seed from the system clock and a process-wide counter (not for cryptography).
fn fresh_seed() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    splitmix64(nanos ^ COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed))
}

/// One step of SplitMix64 (used to spread seeds into generator state).
pub(crate) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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

/// Bytes that crossed between scripts and the host (arguments and replies, as JSON text) since
/// [`take_transfer_over`] last said enough had: the allocator keeps the pages such traffic
/// used (200,000-key arguments left the process 60 MB larger for good, issue #39), so the host
/// hands them back once a lot has crossed. One count for the process, as its memory is.
static TRANSFERRED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(crate) fn count_transfer(bytes: usize) {
    TRANSFERRED.fetch_add(bytes as u64, std::sync::atomic::Ordering::Relaxed);
}

/// `true`, and the count starts again, once at least `threshold` bytes have crossed.
pub fn take_transfer_over(threshold: u64) -> bool {
    use std::sync::atomic::Ordering;
    TRANSFERRED
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n >= threshold).then_some(0)
        })
        .is_ok()
}

/// An output that is only an error.
pub(crate) fn failed(message: impl Into<String>) -> RunOutput {
    RunOutput {
        error: Some(message.into()),
        ..RunOutput::default()
    }
}
