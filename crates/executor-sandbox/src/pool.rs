//! The bounded pool that runs executions on its own tokio runtime or on a runtime it shares.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::{HostCalls, RunOptions, RunOutput, SandboxLimits, runner};

/// Extra time past `wall_time` before the pool gives up on an execution that did not stop itself.
const WALL_GRACE: Duration = Duration::from_secs(2);

/// Native stack for JS threads (virtual memory; only touched pages are committed). QuickJS has its
/// own limit (`stack_bytes`); the rest is for oxc, which recurses with the code's nesting depth
/// (measured: 256 KiB of maximally nested code fits).
pub const JS_THREAD_STACK: usize = 256 * 1024 * 1024;

/// Bounded pool of executions: at most `max_concurrent` run at once, the rest wait for a permit.
///
/// Owns a multi-thread tokio runtime (threads named `executor-js`). Built with [`Self::sharing`],
/// it also runs up to a number of executions on the workers of a runtime it is given, next to
/// their other tasks (a long stretch of JS hands those tasks to another thread, see `runner`);
/// executions beyond that number spill to its own threads, so a busy server still uses every CPU.
pub struct SandboxPool {
    limits: SandboxLimits,
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    shared: Option<Shared>,
    /// Executions placed and not yet ended, wherever they run.
    placed: Arc<AtomicUsize>,
    permits: Arc<Semaphore>,
}

/// The runtime executions may share, and how many may run there at once.
struct Shared {
    handle: tokio::runtime::Handle,
    slots: usize,
}

/// Where one execution runs ([`SandboxPool::place`]); counted as placed while it runs.
pub struct Placement {
    /// The shared runtime, when it runs there.
    shared: Option<tokio::runtime::Handle>,
    _counted: Counted,
}

/// One unit of a running count, given back on drop.
struct Counted(Arc<AtomicUsize>);

impl Counted {
    /// Counts one more; returns the count before.
    fn add(count: &Arc<AtomicUsize>) -> (Self, usize) {
        let before = count.fetch_add(1, Ordering::AcqRel);
        (Self(count.clone()), before)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Placement {
    /// The execution runs on the shared runtime: its host's futures may be polled where the
    /// JavaScript awaits them (they are already on that runtime).
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }
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
            shared: None,
            placed: Arc::default(),
            permits: Arc::new(Semaphore::new(max_concurrent.max(1))),
        }
    }

    /// [`Self::new`], and up to `slots` executions at once run on the runtime of `shared`, which
    /// must be multi-thread (a long stretch of JS hands the worker's other tasks to another
    /// thread; on a current-thread runtime it would hold them) and whose threads have a stack of
    /// [`JS_THREAD_STACK`] bytes.
    pub fn sharing(
        limits: SandboxLimits,
        threads: usize,
        max_concurrent: usize,
        shared: tokio::runtime::Handle,
        slots: usize,
    ) -> Self {
        let mut pool = Self::new(limits, threads, max_concurrent);
        pool.shared = Some(Shared {
            handle: shared,
            slots: slots.max(1),
        });
        pool
    }

    /// Decides where the next execution runs: on the shared runtime when fewer executions than
    /// its slots are running at all (a lone agent's, whose calls gain most from sharing a thread
    /// with their MCP sessions), else on the pool's own threads — under load the shared workers
    /// have requests to serve, and the other CPUs should run the JavaScript.
    pub fn place(&self) -> Placement {
        let (counted, others) = Counted::add(&self.placed);
        // Fewer placed than slots at all implies fewer than slots on the shared runtime.
        let shared = self
            .shared
            .as_ref()
            .filter(|shared| others < shared.slots)
            .map(|shared| shared.handle.clone());
        Placement {
            shared,
            _counted: counted,
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
        self.run_placed(self.place(), code, host, options).await
    }

    /// [`Self::run_with`] where `placement` ([`Self::place`]) says.
    pub async fn run_placed(
        &self,
        placement: Placement,
        code: &str,
        host: Arc<dyn HostCalls>,
        options: RunOptions,
    ) -> RunOutput {
        let Ok(permit) = self.permits.clone().acquire_owned().await else {
            return crate::failed("The sandbox pool is shut down");
        };
        let code = code.to_owned();
        let limits = self.limits.clone();
        let handle = placement
            .shared
            .clone()
            .unwrap_or_else(|| self.handle.clone());
        let task = handle.spawn(async move {
            let _permit = permit;
            if placement.is_shared() {
                // Lets the worker read the IO driver first: requests waiting there are placed
                // while this one counts as running, so under load they spill (one worker runs
                // a short execution to its end before it looks at the sockets again).
                tokio::task::yield_now().await;
            }
            let _placement = placement;
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
