//! Issue #39: agent code nested 48,000 levels deep (96 KB of `{`, under the 256 KiB code cap)
//! made one 3.1 GB allocation in the code generator and aborted the server; 125,000 levels grew
//! to 20 GB. Memory grew with the square of the depth (each generated line was indented by its
//! depth). Every nesting shape of the grammar, as deep as the size cap allows, must now be
//! prepared or refused within [`PREPARE_MEMORY_BOUND`], the bound ARCHITECTURE.md documents.
//!
//! The allocator of this test binary counts the bytes alive at once, so the figure is the real
//! peak of `prepare`, not an estimate.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use executor_sandbox::{HostCalls, HostReply, SandboxLimits, SandboxPool, prepare};
use futures::FutureExt;
use futures::future::BoxFuture;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts sizes.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout is passed on as it came.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let live = if new_size >= layout.size() {
            LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size()
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed) - (layout.size() - new_size)
        };
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: as for `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most `prepare` may hold at once for any code under the size cap (documented in
/// ARCHITECTURE.md, "executor-sandbox").
const PREPARE_MEMORY_BOUND: usize = 128 * 1024 * 1024;

/// The largest code `prepare` accepts.
const CAP: usize = 256 * 1024;

/// `open` repeated, then `middle`, then `close` repeated, as many levels as fit under the cap.
fn nest(open: &str, middle: &str, close: &str) -> String {
    let levels = (CAP - middle.len() - 64) / (open.len() + close.len());
    let mut code = String::with_capacity(CAP);
    for _ in 0..levels {
        code.push_str(open);
    }
    code.push_str(middle);
    for _ in 0..levels {
        code.push_str(close);
    }
    code
}

/// Each way the grammar nests, as deep as the cap allows.
fn shapes() -> Vec<(&'static str, String)> {
    vec![
        ("blocks", nest("{", "", "}")),
        ("if chain", nest("if (1) ", ";", "")),
        ("while chain", nest("while (0) ", ";", "")),
        ("labels", {
            let mut code = String::new();
            let mut i = 0;
            while code.len() < CAP - 64 {
                code.push_str(&format!("l{i}:"));
                i += 1;
            }
            code.push(';');
            code
        }),
        ("try", nest("try {", "", "} finally {}")),
        ("functions", nest("function f() {", "", "}")),
        ("arrows", nest("() => ", "1", "")),
        ("classes", nest("class A { m() {", "", "} }")),
        (
            "class expressions",
            nest("(class { static x = ", "1", " })"),
        ),
        ("objects", nest("({ a: ", "1", " })")),
        ("arrays", nest("[", "", "]")),
        ("parentheses", nest("(", "1", ")")),
        ("calls", nest("f(", "1", ")")),
        ("templates", nest("`${", "1", "}`")),
        ("unary", nest("!", "1", "")),
        ("ternaries", nest("1 ? 1 : ", "1", "")),
        ("assignments", nest("a = ", "1", "")),
        (
            "types",
            format!("type T = {};", nest("Array<", "number", ">")),
        ),
        (
            "type literals",
            format!("type T = {};", nest("{ a: ", "number", " }")),
        ),
        ("unions", format!("type T = {};", nest("(1 | ", "2", ")"))),
        ("jsx", nest("<a>", "", "</a>")),
        ("unclosed blocks", nest("{", "", "")),
        ("unclosed brackets", nest("[", "", "")),
    ]
}

/// A host that answers every call with `null`.
struct Null;

impl HostCalls for Null {
    fn call(&self, _path: String, _args: serde_json::Value) -> BoxFuture<'static, HostReply> {
        async { HostReply::Resolve(serde_json::Value::Null) }.boxed()
    }
}

/// Allocations are counted process-wide: one shape at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn every_nesting_shape_is_prepared_or_refused_within_the_memory_bound() {
    let _one = SERIAL.lock().unwrap();
    let mut report = Vec::new();
    for (shape, code) in shapes() {
        assert!(code.len() <= CAP, "{shape}: {} bytes", code.len());
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let outcome = prepare(&code);
        let peak = PEAK.load(Ordering::Relaxed) - before;
        let verdict = match &outcome {
            Ok(_) => "prepared".to_owned(),
            Err(e) => e.chars().take(90).collect(),
        };
        report.push(format!(
            "{shape:>18}: {:>6} KiB peak, {verdict}",
            peak / 1024
        ));
        drop(outcome);
        assert!(
            peak <= PREPARE_MEMORY_BOUND,
            "{shape}: prepare held {peak} bytes at once (bound {PREPARE_MEMORY_BOUND})\n{}",
            report.join("\n")
        );
    }
    println!("{}", report.join("\n"));
}

/// Prepared, each shape also runs (QuickJS parses it again under its own stack and heap
/// limits): every run ends with a result or an error, and the process lives on.
#[test]
fn every_nesting_shape_runs_to_an_answer() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let pool = SandboxPool::new(SandboxLimits::default(), 2, 4);
        for (shape, code) in shapes() {
            let before = LIVE.load(Ordering::Relaxed);
            PEAK.store(before, Ordering::Relaxed);
            let out = pool.run(&code, std::sync::Arc::new(Null)).await;
            let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
            if let Some(error) = &out.error {
                assert!(!error.is_empty(), "{shape}");
            }
            // The QuickJS heap is capped at 64 MiB on top of what prepare holds.
            assert!(
                peak <= PREPARE_MEMORY_BOUND + 64 * 1024 * 1024,
                "{shape}: the run held {peak} bytes at once"
            );
        }
    });
}
