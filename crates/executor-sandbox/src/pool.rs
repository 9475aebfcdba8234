//! The bounded pool that runs executions on its own tokio runtime or on a runtime it shares.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::runner::Sandbox;
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
    max_concurrent: usize,
    spare: Arc<Spare>,
}

/// One of the pool's running slots, taken before the run: its holder decides how long it waits
/// for one and how many may wait (the engine's admission). Dropping it frees the slot.
pub struct Slot(tokio::sync::OwnedSemaphorePermit);

/// The sandbox the next execution takes, made while the pool had nothing else to do.
///
/// Making a sandbox (QuickJS runtime, context, prelude) and freeing one are about half of a small
/// execution's CPU. An execution that ends in a quiet pool (no other execution placed, and none
/// overlapping for [`QUIET`]) hands both to a task of their own, after its result: the next
/// execution of a lone agent then starts in a sandbox made between its requests. In a busy pool
/// each execution makes and frees its own, as before: the work is the same, and done ahead it
/// costs more there (measured: ≈ 4 % of the throughput at 8 in flight, a sandbox made on one
/// thread and used on another starts with cold caches), while the next request is already
/// waiting and gains nothing.
pub(crate) struct Spare {
    slot: tokio::sync::Mutex<Option<Sandbox>>,
    origin: Instant,
    /// When executions last overlapped, in ns since `origin` (`NEVER` if they have not).
    busy_at_ns: AtomicU64,
}

/// How long after executions last overlapped the pool counts as quiet again.
const QUIET: Duration = Duration::from_millis(50);

const NEVER: u64 = u64::MAX;

impl Default for Spare {
    fn default() -> Self {
        Self {
            slot: tokio::sync::Mutex::default(),
            origin: Instant::now(),
            busy_at_ns: AtomicU64::new(NEVER),
        }
    }
}

impl Spare {
    /// The spare sandbox, waiting for it when it is being made; else a new one.
    pub(crate) async fn take_or_make(&self, limits: &SandboxLimits) -> Result<Sandbox, String> {
        let spare = self.slot.lock().await.take();
        match spare {
            Some(sandbox) => Ok(sandbox),
            None => Sandbox::new(limits).await,
        }
    }

    /// Makes the spare sandbox if there is none. Holds the slot while it does, so an execution
    /// that arrives meanwhile waits for this one rather than making a second.
    async fn refill(&self, limits: &SandboxLimits) {
        let mut slot = self.slot.lock().await;
        if slot.is_none() {
            match Sandbox::new(limits).await {
                Ok(sandbox) => *slot = Some(sandbox),
                Err(error) => tracing::warn!(%error, "could not make a spare sandbox"),
            }
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(NEVER - 1)
    }

    /// Executions overlap now.
    fn mark_busy(&self) {
        self.busy_at_ns.store(self.now_ns(), Ordering::Relaxed);
    }

    /// No execution but the one ending is placed, and none overlapped for [`QUIET`].
    fn is_quiet(&self, placed: usize) -> bool {
        let busy_at = self.busy_at_ns.load(Ordering::Relaxed);
        placed <= 1
            && (busy_at == NEVER || self.now_ns().saturating_sub(busy_at) >= duration_ns(QUIET))
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(NEVER - 1)
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
            max_concurrent: max_concurrent.max(1),
            spare: Arc::default(),
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
        if others > 0 {
            self.spare.mark_busy();
        }
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

    /// Whether a sandbox made ahead of time waits for the next execution (see `Spare`); waits
    /// while one is being made. For tests and diagnostics.
    pub async fn has_spare(&self) -> bool {
        self.spare.slot.lock().await.is_some()
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

    /// A slot now, if one is free.
    pub fn try_slot(&self) -> Option<Slot> {
        self.permits.clone().try_acquire_owned().ok().map(Slot)
    }

    /// Waits for a slot; `None` once the pool is shut down.
    pub async fn slot(&self) -> Option<Slot> {
        self.permits.clone().acquire_owned().await.ok().map(Slot)
    }

    /// How many executions run at once.
    pub fn slots(&self) -> usize {
        self.max_concurrent
    }

    /// [`Self::run_with`] where `placement` ([`Self::place`]) says.
    pub async fn run_placed(
        &self,
        placement: Placement,
        code: &str,
        host: Arc<dyn HostCalls>,
        options: RunOptions,
    ) -> RunOutput {
        let Some(slot) = self.slot().await else {
            return crate::failed("The sandbox pool is shut down");
        };
        self.run_in(slot, placement, code, host, options).await
    }

    /// [`Self::run_placed`] in a slot taken beforehand ([`Self::try_slot`], [`Self::slot`]).
    pub async fn run_in(
        &self,
        slot: Slot,
        placement: Placement,
        code: &str,
        host: Arc<dyn HostCalls>,
        options: RunOptions,
    ) -> RunOutput {
        let permit = slot.0;
        let code = code.to_owned();
        let limits = self.limits.clone();
        let handle = placement
            .shared
            .clone()
            .unwrap_or_else(|| self.handle.clone());
        let spare = self.spare.clone();
        let placed = self.placed.clone();
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
            let run = runner::execute(&code, host, &limits, options, &spare);
            let Ok((out, used)) = tokio::time::timeout(budget, run).await else {
                return crate::failed(runner::wall_clock_message(&limits));
            };
            // A quiet pool: make the next sandbox and free this one after the result is
            // handed back (see `Spare`).
            if spare.is_quiet(placed.load(Ordering::Acquire)) {
                tokio::spawn(async move {
                    spare.refill(&limits).await;
                    drop(used);
                });
            } else {
                drop(used);
            }
            out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_is_quiet_only_alone_and_a_while_after_executions_overlapped() {
        let spare = Spare::default();
        assert!(spare.is_quiet(1), "a pool that never overlapped is quiet");
        assert!(spare.is_quiet(0));
        assert!(!spare.is_quiet(2), "another execution is placed");
        spare.mark_busy();
        assert!(!spare.is_quiet(1), "executions overlapped just now");
        std::thread::sleep(QUIET + Duration::from_millis(10));
        assert!(spare.is_quiet(1));
        assert!(!spare.is_quiet(2));
    }

    #[tokio::test]
    async fn an_execution_that_ends_beside_another_makes_no_spare() {
        let pool = SandboxPool::new(SandboxLimits::default(), 2, 4);
        let _other = pool.place();
        let out = pool.run("return 1", Arc::new(NoHost)).await;
        assert_eq!(out.error, None);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(
            !pool.has_spare().await,
            "a busy pool makes each sandbox when it is needed"
        );
    }

    struct NoHost;

    impl HostCalls for NoHost {
        fn call(
            &self,
            _path: String,
            _args: serde_json::Value,
        ) -> futures::future::BoxFuture<'static, crate::HostReply> {
            Box::pin(async { crate::HostReply::Reject("no tools here".into()) })
        }
    }
}
