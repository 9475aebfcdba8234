//! One execution: fresh QuickJS runtime + context, prelude, agent code, limits, error mapping.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures::FutureExt;
use rquickjs::context::EvalOptions;
use rquickjs::prelude::Async;
use rquickjs::{AsyncContext, AsyncRuntime, Ctx, Function, Module, Value, WriteOptions};

use crate::pool::Spare;
use crate::prepare::{MAIN_FN, PreparedCode, prepare};
use crate::{HostCalls, HostReply, RunOptions, RunOutput, SandboxLimits};

const PRELUDE: &str = include_str!("prelude.js");
const PRELUDE_FILE: &str = "__executor_prelude__";
const AGENT_FILE: &str = "agent";

/// Caps on what an execution can accumulate outside the JS heap.
const MAX_LOG_BYTES: usize = 1024 * 1024;
const MAX_EMIT_BYTES: usize = 64 * 1024 * 1024;

/// Stack frames shown in an error message.
const MAX_FRAMES: usize = 10;

const TRIP_NONE: u8 = 0;
const TRIP_JS: u8 = 1;
const TRIP_WALL: u8 = 2;

pub(crate) fn js_time_message(limits: &SandboxLimits) -> String {
    format!("Execution timed out after {}ms", limits.js_time.as_millis())
}

pub(crate) fn wall_clock_message(limits: &SandboxLimits) -> String {
    format!(
        "Execution exceeded the wall-clock limit of {}ms",
        limits.wall_time.as_millis()
    )
}

/// JS-time and wall-clock budgets.
///
/// The JS-time clock is paused while a host call is in flight; after each dispatch returns, the
/// deadline becomes `lastReturn + js_time` (spec §4.8). Because a script can also spin *while* a
/// call is in flight (and then the call cannot even complete, since its result is delivered on the
/// same thread), one uninterrupted stretch of JS execution longer than `js_time` also trips it.
struct Budget {
    origin: Instant,
    js_time_ns: u64,
    wall_deadline_ns: u64,
    js_deadline_ns: AtomicU64,
    in_flight: AtomicUsize,
    /// When the current poll of the execution future started (`IDLE` when not being polled).
    poll_start_ns: AtomicU64,
    /// This poll already handed its worker's other tasks to another thread ([`hand_off_worker`]).
    handed_off: AtomicBool,
    tripped: AtomicU8,
}

const IDLE: u64 = u64::MAX;

/// One stretch of JavaScript longer than this hands the worker's other tasks to another thread.
const HAND_OFF_AFTER_NS: u64 = 1_000_000;

/// The longest a hand-off waits for another thread to take the worker's queue.
const HAND_OFF_WAIT: Duration = Duration::from_millis(100);

/// Code longer than this is prepared (parsed, TypeScript stripped) as heavy work.
const HEAVY_CODE_BYTES: usize = 64 * 1024;

/// A host reply longer than this is decoded as heavy work.
const HEAVY_REPLY_BYTES: usize = 1024 * 1024;

/// JavaScript may run on the workers of a runtime that also serves requests and network IO
/// (the server runs it there: the execution, its tool calls and its MCP sessions then share one
/// thread, with no hop between runtimes per call). A stretch of JS that runs long — a spinning
/// script, a heavy parse — must not hold those other tasks: this moves the current worker's
/// queue and IO driver to another thread (tokio's `block_in_place`), and the JS keeps this
/// thread until its poll returns. Does nothing outside a multi-thread runtime.
fn hand_off_worker() {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
        return;
    }
    tokio::task::block_in_place(|| {
        // On return, `block_in_place` takes the worker back unless another thread already has
        // it, and the thread it starts needs a moment: wait until a task spawned now has run,
        // which on a one-worker runtime means the new thread drives the worker's queue (with
        // more workers, one of them may run it first; they can steal that queue anyway).
        let (ran, wait) = std::sync::mpsc::sync_channel(1);
        handle.spawn(async move {
            let _ = ran.try_send(());
        });
        let _ = wait.recv_timeout(HAND_OFF_WAIT);
    });
}

impl Budget {
    fn new(limits: &SandboxLimits, origin: Instant) -> Self {
        let js_time_ns = duration_ns(limits.js_time);
        let now = duration_ns(origin.elapsed());
        Self {
            origin,
            js_time_ns,
            wall_deadline_ns: duration_ns(limits.wall_time),
            js_deadline_ns: AtomicU64::new(now.saturating_add(js_time_ns)),
            in_flight: AtomicUsize::new(0),
            poll_start_ns: AtomicU64::new(IDLE),
            handed_off: AtomicBool::new(false),
            tripped: AtomicU8::new(TRIP_NONE),
        }
    }

    fn now_ns(&self) -> u64 {
        duration_ns(self.origin.elapsed())
    }

    /// Called by QuickJS's interrupt handler while JS runs; `true` aborts the script.
    fn should_interrupt(&self) -> bool {
        if self.tripped.load(Ordering::Relaxed) != TRIP_NONE {
            return true;
        }
        let now = self.now_ns();
        if now >= self.wall_deadline_ns {
            self.trip(TRIP_WALL);
            return true;
        }
        let poll_start = self.poll_start_ns.load(Ordering::Acquire);
        let spinning = poll_start != IDLE && now.saturating_sub(poll_start) >= self.js_time_ns;
        if spinning || self.js_deadline_passed(now) {
            self.trip(TRIP_JS);
            return true;
        }
        if poll_start != IDLE && now.saturating_sub(poll_start) >= HAND_OFF_AFTER_NS {
            self.hand_off_once();
        }
        false
    }

    /// Marks the start of a poll of the execution future (JS is about to run).
    fn poll_started(&self) {
        self.handed_off.store(false, Ordering::Release);
        self.poll_start_ns.store(self.now_ns(), Ordering::Release);
    }

    /// [`hand_off_worker`], at most once per poll (after that this thread is no longer a worker).
    fn hand_off_once(&self) {
        if !self.handed_off.swap(true, Ordering::AcqRel) {
            hand_off_worker();
        }
    }

    fn js_deadline_passed(&self, now: u64) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
            && now >= self.js_deadline_ns.load(Ordering::Acquire)
    }

    fn instant_at(&self, ns: u64) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.origin + Duration::from_nanos(ns))
    }

    fn trip(&self, reason: u8) {
        let _ =
            self.tripped
                .compare_exchange(TRIP_NONE, reason, Ordering::AcqRel, Ordering::Relaxed);
    }

    fn begin_dispatch(self: &Arc<Self>) -> DispatchGuard {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        DispatchGuard(self.clone())
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

struct DispatchGuard(Arc<Budget>);

impl Drop for DispatchGuard {
    fn drop(&mut self) {
        let budget = &self.0;
        let deadline = budget.now_ns().saturating_add(budget.js_time_ns);
        budget.js_deadline_ns.fetch_max(deadline, Ordering::AcqRel);
        budget.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Console lines and emitted values, kept outside the JS heap (and capped).
#[derive(Default)]
struct Sink {
    logs: Vec<String>,
    log_bytes: usize,
    logs_truncated: bool,
    emitted: Vec<serde_json::Value>,
    emit_bytes: usize,
}

impl Sink {
    fn log(&mut self, level: &str, text: &str) {
        if self.logs_truncated {
            return;
        }
        let line = format!("[{level}] {text}");
        if self.log_bytes + line.len() > MAX_LOG_BYTES {
            self.logs_truncated = true;
            self.logs
                .push("[warn] log output truncated (more than 1 MiB of logs)".to_string());
            return;
        }
        self.log_bytes += line.len();
        self.logs.push(line);
    }

    fn emit(&mut self, json: &str) -> bool {
        if self.emit_bytes + json.len() > MAX_EMIT_BYTES {
            return false;
        }
        self.emit_bytes += json.len();
        self.emitted
            .push(serde_json::from_str(json).unwrap_or(serde_json::Value::Null));
        true
    }
}

type SharedSink = Arc<Mutex<Sink>>;

fn lock(sink: &SharedSink) -> std::sync::MutexGuard<'_, Sink> {
    sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What binds a sandbox to the one execution that runs in it: the sandbox's host functions and
/// interrupt handler reach the execution only through this. Sandboxes are made before their
/// execution is known (see [`Sandbox`]), and after the execution the binding is cleared, so a
/// sandbox freed later holds nothing of it (its host, and through the host its MCP sessions).
#[derive(Default)]
struct Binding(Mutex<Option<Arc<Bound>>>);

struct Bound {
    host: Arc<dyn HostCalls>,
    budget: Arc<Budget>,
    sink: SharedSink,
    seed: [u32; 4],
    time_origin_ms: f64,
}

impl Binding {
    fn get(&self) -> Option<Arc<Bound>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn set(&self, bound: Option<Arc<Bound>>) {
        *self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = bound;
    }
}

/// A fresh QuickJS runtime and context with the prelude run, not yet bound to an execution. Each
/// serves one execution and is then freed: a sandbox is never reused. Making one and freeing one
/// are most of a small execution's CPU, so the pool makes the next one, and frees the last one,
/// while it has nothing else to do (see `pool`).
pub(crate) struct Sandbox {
    // Field order is drop order: the context before its runtime.
    ctx: AsyncContext,
    _runtime: AsyncRuntime,
    binding: Arc<Binding>,
}

impl Sandbox {
    /// Makes a sandbox with `limits`' memory and stack limits.
    pub(crate) async fn new(limits: &SandboxLimits) -> Result<Self, String> {
        let rt = AsyncRuntime::new().map_err(|e| format!("Failed to start QuickJS: {e}"))?;
        rt.set_memory_limit(limits.memory_bytes).await;
        rt.set_max_stack_size(limits.stack_bytes).await;
        let binding = Arc::new(Binding::default());
        let interrupt = binding.clone();
        rt.set_interrupt_handler(Some(Box::new(move || {
            interrupt
                .get()
                .is_some_and(|bound| bound.budget.should_interrupt())
        })))
        .await;
        let ctx = AsyncContext::full(&rt)
            .await
            .map_err(|e| format!("Failed to create the QuickJS context: {e}"))?;
        let prelude =
            prelude_bytecode().map_err(|e| format!("Failed to set up the sandbox: {e}"))?;
        let host_functions = binding.clone();
        ctx.with(|ctx| {
            install_host_functions(&ctx, host_functions)?;
            run_prelude(&ctx, prelude).map_err(|e| describe_setup_error(&ctx, e))
        })
        .await
        .map_err(|e| format!("Failed to set up the sandbox: {e}"))?;
        Ok(Self {
            ctx,
            _runtime: rt,
            binding,
        })
    }
}

/// Runs one execution to completion in the spare sandbox, or in one made now. Never
/// panics on agent input. Returns the sandbox when it can be freed later; one with host calls
/// still in flight (never awaited by the code) is freed before this returns, since those calls
/// hold the execution's host.
pub(crate) async fn execute(
    code: &str,
    host: Arc<dyn HostCalls>,
    limits: &SandboxLimits,
    options: RunOptions,
    spare: &Spare,
) -> (RunOutput, Option<Sandbox>) {
    let origin = Instant::now();
    if code.len() > HEAVY_CODE_BYTES {
        hand_off_worker();
    }
    let prepared = match prepare(code) {
        Ok(p) => p,
        Err(message) => return (crate::failed(message), None),
    };
    let sandbox = match spare.take_or_make(limits).await {
        Ok(sandbox) => sandbox,
        Err(message) => return (crate::failed(message), None),
    };
    let budget = Arc::new(Budget::new(limits, origin));
    let sink: SharedSink = Arc::default();
    sandbox.binding.set(Some(Arc::new(Bound {
        host,
        budget: budget.clone(),
        sink: sink.clone(),
        seed: seed_state(options.seed),
        time_origin_ms: options.time_origin_ms.unwrap_or(f64::NAN),
    })));

    let outcome = run_quickjs(&sandbox, &prepared, limits, budget.clone()).await;
    sandbox.binding.set(None);
    let sandbox = if budget.in_flight.load(Ordering::Acquire) == 0 {
        Some(sandbox)
    } else {
        drop(sandbox);
        None
    };
    let outcome = match budget.tripped.load(Ordering::Acquire) {
        TRIP_JS => Err(js_time_message(limits)),
        TRIP_WALL => Err(wall_clock_message(limits)),
        _ => outcome,
    };

    let sink = std::mem::take(&mut *lock(&sink));
    let (result, error) = match outcome {
        Ok(result) => (result, None),
        Err(error) => (None, Some(error)),
    };
    let output = RunOutput {
        result,
        error,
        logs: sink.logs,
        emitted: sink.emitted,
    };
    (output, sandbox)
}

type Outcome = Result<Option<serde_json::Value>, String>;

async fn run_quickjs(
    sandbox: &Sandbox,
    prepared: &PreparedCode,
    limits: &SandboxLimits,
    budget: Arc<Budget>,
) -> Outcome {
    let memory_limit = limits.memory_bytes;
    let poll_budget = budget.clone();
    let mut execution =
        Box::pin(sandbox.ctx.async_with(async move |ctx| {
            run_in_context(ctx, prepared, budget, memory_limit).await
        }));
    // Every poll of this future is the JS thread running JS (or polling host futures).
    std::future::poll_fn(|cx| {
        poll_budget.poll_started();
        let poll = execution.as_mut().poll(cx);
        poll_budget.poll_start_ns.store(IDLE, Ordering::Release);
        poll
    })
    .await
}

async fn run_in_context<'js>(
    ctx: Ctx<'js>,
    prepared: &PreparedCode,
    budget: Arc<Budget>,
    memory_limit: usize,
) -> Outcome {
    let fail = |ctx: &Ctx<'js>, err: rquickjs::Error| -> String {
        describe_error(ctx, err, prepared, memory_limit)
    };
    let value: Value<'js> = ctx
        .eval_with_options(prepared.js(), eval_options(AGENT_FILE))
        .map_err(|e| fail(&ctx, e))?;
    let Some(promise) = value.into_promise() else {
        return Err("Internal error: the program did not produce a promise".into());
    };
    let value = settle(promise, &budget)
        .await
        .ok_or_else(String::new)?
        .map_err(|e| fail(&ctx, e))?;
    to_json(&ctx, value).map_err(|e| match e {
        JsonError::Js(err) => format!("Result is not JSON-serialisable: {}", fail(&ctx, err)),
        JsonError::Other(msg) => msg,
    })
}

/// Waits for the main promise while enforcing the budgets when JS is idle: the wall clock, and the
/// JS-time deadline when no host call is in flight (then nothing can ever settle the promise).
/// `None` means a budget tripped.
async fn settle<'js>(
    promise: rquickjs::Promise<'js>,
    budget: &Budget,
) -> Option<rquickjs::Result<Value<'js>>> {
    let mut settled = promise.into_future::<Value<'js>>();
    let timer = tokio::time::sleep_until(budget.instant_at(budget.wall_deadline_ns));
    let mut timer = std::pin::pin!(timer);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(result) = Pin::new(&mut settled).poll(cx) {
            return Poll::Ready(Some(result));
        }
        let now = budget.now_ns();
        if now >= budget.wall_deadline_ns {
            budget.trip(TRIP_WALL);
            return Poll::Ready(None);
        }
        let mut wake_at = budget.wall_deadline_ns;
        if budget.in_flight.load(Ordering::Acquire) == 0 {
            if budget.js_deadline_passed(now) {
                budget.trip(TRIP_JS);
                return Poll::Ready(None);
            }
            wake_at = wake_at.min(budget.js_deadline_ns.load(Ordering::Acquire));
        }
        let target = budget.instant_at(wake_at);
        if timer.deadline() != target {
            timer.as_mut().reset(target);
        }
        if timer.as_mut().poll(cx).is_ready() {
            cx.waker().wake_by_ref();
        }
        Poll::Pending
    })
    .await
}

/// The prelude as QuickJS bytecode, compiled once per process. Parsing its source took most of a
/// small execution's CPU (≈ 0.45 of 0.7 ms here); reading bytecode into each fresh context is
/// several times cheaper. Compiled as a module, since rquickjs reads bytecode only for modules.
/// Compiled by the first execution rather than at start-up, so an idle server has not run QuickJS.
fn prelude_bytecode() -> Result<&'static [u8], String> {
    static BYTECODE: OnceLock<Result<Box<[u8]>, String>> = OnceLock::new();
    BYTECODE
        .get_or_init(|| {
            let compile = || -> rquickjs::Result<Vec<u8>> {
                let rt = rquickjs::Runtime::new()?;
                let ctx = rquickjs::Context::full(&rt)?;
                ctx.with(|ctx| {
                    Module::declare(ctx, PRELUDE_FILE, PRELUDE)?.write(WriteOptions {
                        // Line numbers stay; the source text of the prelude's functions does not.
                        strip_source: true,
                        ..WriteOptions::default()
                    })
                })
            };
            compile()
                .map(Vec::into_boxed_slice)
                .map_err(|e| format!("Failed to compile the sandbox prelude: {e}"))
        })
        .as_deref()
        .map_err(Clone::clone)
}

/// Runs the prelude in `ctx`: loads its bytecode (from [`prelude_bytecode`]) as a module and
/// evaluates it.
fn run_prelude(ctx: &Ctx<'_>, bytecode: &'static [u8]) -> rquickjs::Result<()> {
    // SAFETY: `Module::load` trusts its bytes to be well-formed bytecode for this QuickJS build,
    // and (it reads them as ROM data) to outlive every function made from them. These bytes were
    // written by `Module::write` of the same QuickJS, in this process, from our own source, and
    // are `'static`. This is the workspace's one `unsafe` (see ARCHITECTURE.md).
    #[allow(unsafe_code)]
    let module = unsafe { Module::load(ctx.clone(), bytecode) }?;
    let (_module, promise) = module.eval()?;
    // The prelude has no top-level `await`: evaluating it settles its promise at once (a
    // rejection is thrown into the context, as a pending exception, by `result`).
    promise
        .result::<()>()
        .unwrap_or(Err(rquickjs::Error::WouldBlock))
}

fn eval_options(filename: &str) -> EvalOptions {
    let mut opts = EvalOptions::default();
    opts.global = true;
    opts.strict = true;
    opts.filename = Some(filename.to_string());
    opts
}

/// The prelude's way into the host. Each function asks the binding for the execution it serves:
/// a call made while none is bound (a sandbox not yet taken, or one whose execution ended)
/// reaches nothing.
fn install_host_functions(ctx: &Ctx<'_>, binding: Arc<Binding>) -> Result<(), String> {
    let install = || -> rquickjs::Result<()> {
        let globals = ctx.globals();

        let clock_binding = binding.clone();
        let clock = Function::new(ctx.clone(), move || -> f64 {
            clock_binding
                .get()
                .map_or(f64::NAN, |bound| bound.host.clock())
        })?;
        globals.set("__executor_clock", clock)?;

        let seed_binding = binding.clone();
        let seed = Function::new(ctx.clone(), move || -> Vec<u32> {
            seed_binding
                .get()
                .map_or_else(|| seed_state(0).to_vec(), |bound| bound.seed.to_vec())
        })?;
        globals.set("__executor_seed", seed)?;

        let origin_binding = binding.clone();
        let time_origin = Function::new(ctx.clone(), move || -> f64 {
            origin_binding
                .get()
                .map_or(f64::NAN, |bound| bound.time_origin_ms)
        })?;
        globals.set("__executor_time_origin", time_origin)?;

        let call_binding = binding.clone();
        let call = Function::new(
            ctx.clone(),
            Async(move |path: String, args: String| {
                // The dispatch is in flight from the moment JS makes the call.
                let started = call_binding
                    .get()
                    .map(|bound| (bound.host.clone(), bound.budget.begin_dispatch()));
                async move {
                    match started {
                        Some((host, guard)) => dispatch(host, guard, path, args).await,
                        None => "eThe execution has ended".to_string(),
                    }
                }
            }),
        )?;
        globals.set("__executor_call", call)?;

        let log_binding = binding.clone();
        let log = Function::new(ctx.clone(), move |level: String, text: String| {
            if let Some(bound) = log_binding.get() {
                lock(&bound.sink).log(&level, &text);
            }
        })?;
        globals.set("__executor_log", log)?;

        let emit_binding = binding.clone();
        let emit = Function::new(ctx.clone(), move |json: String| -> bool {
            emit_binding
                .get()
                .is_some_and(|bound| lock(&bound.sink).emit(&json))
        })?;
        globals.set("__executor_emit", emit)?;
        Ok(())
    };
    install().map_err(|e| e.to_string())
}

/// A failure of the prelude (ours, so never expected), as text.
fn describe_setup_error(ctx: &Ctx<'_>, err: rquickjs::Error) -> String {
    match err {
        rquickjs::Error::Exception => {
            let exc = ctx.catch();
            exc.as_exception()
                .and_then(rquickjs::Exception::message)
                .unwrap_or_else(|| format!("{exc:?}"))
        }
        other => other.to_string(),
    }
}

/// The four 32-bit words of the xoshiro128** state for `seed` (never all zero).
fn seed_state(seed: u64) -> [u32; 4] {
    let a = crate::splitmix64(seed);
    let b = crate::splitmix64(a);
    let words = [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32];
    if words.iter().all(|w| *w == 0) {
        [1, 2, 3, 4]
    } else {
        words
    }
}

/// One host call: `"r<json>"` resolves, `"e<message>"` rejects (decoded by the prelude).
async fn dispatch(
    host: Arc<dyn HostCalls>,
    guard: DispatchGuard,
    path: String,
    args: String,
) -> String {
    crate::count_transfer(args.len());
    let args = if args.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(&args).unwrap_or(serde_json::Value::Null)
    };
    let reply = AssertUnwindSafe(async move { host.call(path, args).await })
        .catch_unwind()
        .await;
    match reply {
        Ok(HostReply::Resolve(value)) => {
            let mut out = String::from("r");
            out.push_str(&value.to_string());
            crate::count_transfer(out.len());
            if out.len() > HEAVY_REPLY_BYTES {
                // QuickJS decodes it within this poll, where no interrupt handler runs.
                guard.0.hand_off_once();
            }
            out
        }
        Ok(HostReply::Reject(message)) => format!("e{message}"),
        Err(_) => {
            tracing::error!("host call panicked");
            "eInternal tool error: the host call panicked".to_string()
        }
    }
}

enum JsonError {
    Js(rquickjs::Error),
    Other(String),
}

fn to_json<'js>(ctx: &Ctx<'js>, value: Value<'js>) -> Result<Option<serde_json::Value>, JsonError> {
    if value.is_undefined() {
        return Ok(None);
    }
    if value.is_function() {
        return Err(JsonError::Other(
            "Result is not JSON-serialisable: the code returned a function \
             (did you forget to call a tool, e.g. `await tools.x.y(args)`?)"
                .into(),
        ));
    }
    if value.is_symbol() {
        return Err(JsonError::Other(
            "Result is not JSON-serialisable: the code returned a symbol".into(),
        ));
    }
    let Some(json) = ctx.json_stringify(value).map_err(JsonError::Js)? else {
        return Ok(None);
    };
    let json = json.to_string().map_err(JsonError::Js)?;
    serde_json::from_str(&json)
        .map(Some)
        .map_err(|e| JsonError::Other(format!("Result is not JSON-serialisable: {e}")))
}

/// Turns a QuickJS error (usually a pending exception) into a message for the agent, with stack
/// frames mapped back to the agent's code.
fn describe_error<'js>(
    ctx: &Ctx<'js>,
    err: rquickjs::Error,
    prepared: &PreparedCode,
    memory_limit: usize,
) -> String {
    let message = match err {
        rquickjs::Error::Exception => {
            let exc = ctx.catch();
            describe_exception(ctx, exc, prepared)
        }
        rquickjs::Error::Allocation => "InternalError: out of memory".to_string(),
        other => other.to_string(),
    };
    let mib = memory_limit / (1024 * 1024);
    if message.contains("out of memory") {
        format!("{message} (memory limit {mib} MiB)")
    } else if message == "Uncaught: null" {
        // QuickJS throws `null` when it cannot even allocate the out-of-memory error.
        format!("{message} (if nothing throws null, the script ran out of memory: limit {mib} MiB)")
    } else {
        message
    }
}

fn string_prop<'js>(ctx: &Ctx<'js>, obj: &rquickjs::Object<'js>, key: &str) -> Option<String> {
    match obj.get::<_, Value<'js>>(key) {
        Ok(v) => v.as_string().and_then(|s| s.to_string().ok()),
        Err(_) => {
            let _ = ctx.catch();
            None
        }
    }
}

fn describe_exception<'js>(ctx: &Ctx<'js>, exc: Value<'js>, prepared: &PreparedCode) -> String {
    if let Some(obj) = exc.as_object() {
        let name = string_prop(ctx, obj, "name");
        let message = string_prop(ctx, obj, "message");
        if name.is_some() || message.is_some() {
            let mut out = match (name, message) {
                (Some(n), Some(m)) if !m.is_empty() => format!("{n}: {m}"),
                (Some(n), _) => n,
                (None, Some(m)) => m,
                (None, None) => unreachable!(),
            };
            if let Some(stack) = string_prop(ctx, obj, "stack") {
                let frames = map_stack(&stack, prepared);
                for frame in frames.iter().take(MAX_FRAMES) {
                    out.push_str("\n    at ");
                    out.push_str(frame);
                }
                if frames.len() > MAX_FRAMES {
                    let more = frames.len() - MAX_FRAMES;
                    out.push_str(&format!("\n    ... {more} more frames"));
                }
            }
            return out;
        }
    }
    if let Some(s) = exc.as_string().and_then(|s| s.to_string().ok()) {
        return format!("Uncaught: {s}");
    }
    match ctx.json_stringify(exc.clone()) {
        Ok(Some(s)) => match s.to_string() {
            Ok(s) => format!("Uncaught: {s}"),
            Err(_) => "Uncaught exception".to_string(),
        },
        _ => {
            let _ = ctx.catch();
            match exc.type_of() {
                rquickjs::Type::Null => "Uncaught: null".to_string(),
                rquickjs::Type::Undefined => "Uncaught: undefined".to_string(),
                other => format!("Uncaught exception ({other})"),
            }
        }
    }
}

/// Keeps only the agent's frames from a QuickJS stack and maps them to the submitted code.
fn map_stack(stack: &str, prepared: &PreparedCode) -> Vec<String> {
    let mut frames = Vec::new();
    for line in stack.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("at ") else {
            continue;
        };
        let (name, location) = match rest.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
            Some((name, location)) => (Some(name.trim()), location),
            None => (None, rest),
        };
        let mut parts = location.rsplitn(3, ':');
        let (Some(col), Some(line_no), Some(file)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        // `<eval>` is the script's top level: our wrapper's invocation of the main function.
        if file != AGENT_FILE || name == Some("<eval>") {
            continue;
        }
        let (Ok(line_no), Ok(col)) = (line_no.parse::<u32>(), col.parse::<u32>()) else {
            continue;
        };
        let Some((line_no, col)) = prepared.original_position(line_no, col) else {
            continue;
        };
        let name = name.filter(|n| !n.is_empty() && *n != MAIN_FN && *n != "<anonymous>");
        frames.push(match name {
            Some(name) => format!("{name} (line {line_no}, column {col})"),
            None => format!("line {line_no}, column {col}"),
        });
    }
    frames
}
