//! The bounded pool that runs executions on a dedicated tokio runtime.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::{HostCalls, RunOptions, RunOutput, SandboxLimits, runner};

/// Extra time past `wall_time` before the pool gives up on an execution that did not stop itself.
const WALL_GRACE: Duration = Duration::from_secs(2);

/// Native stack for JS threads (virtual memory; only touched pages are committed). QuickJS has its
/// own limit (`stack_bytes`); the rest is for oxc, which recurses with the code's nesting depth
/// (measured: 256 KiB of maximally nested code fits).
const JS_THREAD_STACK: usize = 256 * 1024 * 1024;

/// Bounded pool that runs executions OFF the caller's async workers.
///
/// Owns a multi-thread tokio runtime (threads named `executor-js`); at most `max_concurrent`
/// executions run at once, the rest wait for a permit.
pub struct SandboxPool {
    limits: SandboxLimits,
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    permits: Arc<Semaphore>,
}

impl std::fmt::Debug for SandboxPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxPool")
            .field("limits", &self.limits)
            .field("available_permits", &self.permits.available_permits())
            .finish_non_exhaustive()
    }
}

impl SandboxPool {
    /// Starts the pool's runtime with `threads` worker threads (at least 1) and admits at most
    /// `max_concurrent` executions (at least 1) at a time.
    ///
    /// # Panics
    /// If the operating system refuses to start the worker threads.
    pub fn new(limits: SandboxLimits, threads: usize, max_concurrent: usize) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads.max(1))
            .thread_name("executor-js")
            .thread_stack_size(JS_THREAD_STACK)
            .enable_all()
            .build()
            .expect("failed to start the executor-js runtime");
        let handle = runtime.handle().clone();
        Self {
            limits,
            runtime: Some(runtime),
            handle,
            permits: Arc::new(Semaphore::new(max_concurrent.max(1))),
        }
    }

    /// The limits applied to every execution.
    pub fn limits(&self) -> &SandboxLimits {
        &self.limits
    }

    /// Runs `code` in a fresh sandbox. Never panics; every failure is reported in
    /// [`RunOutput::error`]. Dropping the returned future aborts the execution.
    pub async fn run(&self, code: &str, host: Arc<dyn HostCalls>) -> RunOutput {
        self.run_with(code, host, RunOptions::default()).await
    }

    /// [`Self::run`] with a chosen `Math.random` seed and `performance.now()` origin (the clock
    /// itself is [`HostCalls::clock`]).
    pub async fn run_with(
        &self,
        code: &str,
        host: Arc<dyn HostCalls>,
        options: RunOptions,
    ) -> RunOutput {
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return crate::failed("The sandbox pool is shut down");
        };
        let code = code.to_owned();
        let limits = self.limits.clone();
        let task = self.handle.spawn(async move {
            let _permit = permit;
            let budget = limits.wall_time.saturating_add(WALL_GRACE);
            match tokio::time::timeout(budget, runner::execute(&code, host, &limits, options)).await
            {
                Ok(out) => out,
                Err(_) => crate::failed(runner::wall_clock_message(&limits)),
            }
        });
        let mut task = AbortOnDrop(task);
        match (&mut task.0).await {
            Ok(out) => out,
            Err(err) if err.is_panic() => {
                let panic = err.into_panic();
                let detail = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".to_string());
                tracing::error!(%detail, "sandbox execution panicked");
                crate::failed(format!("Internal sandbox error: {detail}"))
            }
            Err(_) => crate::failed("The execution was cancelled"),
        }
    }
}

impl Drop for SandboxPool {
    fn drop(&mut self) {
        // Dropping a runtime inside an async context panics; this never blocks.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
