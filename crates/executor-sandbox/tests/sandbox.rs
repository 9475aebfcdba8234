//! End-to-end tests of the sandbox through the public API.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use executor_sandbox::{HostCalls, HostReply, RunOutput, SandboxLimits, SandboxPool};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

/// A host for tests: the last path segment picks the behaviour.
#[derive(Default)]
struct TestHost {
    calls: AtomicUsize,
    in_flight: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    paths: std::sync::Mutex<Vec<(String, Value)>>,
}

impl HostCalls for TestHost {
    fn call(&self, path: String, args: Value) -> BoxFuture<'static, HostReply> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.paths
            .lock()
            .unwrap()
            .push((path.clone(), args.clone()));
        let in_flight = self.in_flight.clone();
        let max = self.max_in_flight.clone();
        async move {
            let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            max.fetch_max(now, Ordering::SeqCst);
            let leaf = path.rsplit('.').next().unwrap_or_default().to_string();
            let reply = match leaf.as_str() {
                "echo" => HostReply::Resolve(json!({ "path": path, "echo": args })),
                "sleep" => {
                    let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(10);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    HostReply::Resolve(json!({ "slept": ms }))
                }
                "fail" => HostReply::Reject(format!("tool {path}: upstream 500")),
                "panic" => panic!("host exploded"),
                _ => HostReply::Resolve(json!({ "path": path, "args": args })),
            };
            in_flight.fetch_sub(1, Ordering::SeqCst);
            reply
        }
        .boxed()
    }
}

fn limits() -> SandboxLimits {
    SandboxLimits {
        js_time: Duration::from_secs(3),
        wall_time: Duration::from_secs(20),
        ..SandboxLimits::default()
    }
}

async fn run_with(limits: SandboxLimits, code: &str) -> (RunOutput, Arc<TestHost>) {
    let pool = SandboxPool::new(limits, 2, 4);
    let host = Arc::new(TestHost::default());
    let out = pool.run(code, host.clone()).await;
    (out, host)
}

async fn run(code: &str) -> RunOutput {
    run_with(limits(), code).await.0
}

async fn ok(code: &str) -> Option<Value> {
    let out = run(code).await;
    assert_eq!(out.error, None, "code: {code}\nlogs: {:?}", out.logs);
    out.result
}

async fn err(code: &str) -> String {
    let out = run(code).await;
    out.error
        .unwrap_or_else(|| panic!("expected an error for {code}, got {:?}", out.result))
}

#[tokio::test]
async fn returns_values_of_every_json_type() {
    assert_eq!(ok("return 1").await, Some(json!(1)));
    assert_eq!(ok("return 'hi'").await, Some(json!("hi")));
    assert_eq!(ok("return true").await, Some(json!(true)));
    assert_eq!(ok("return null").await, Some(Value::Null));
    assert_eq!(ok("return 1.5").await, Some(json!(1.5)));
    assert_eq!(
        ok("return { b: [1, 'x', { c: null }], a: 2 }").await,
        Some(json!({ "b": [1, "x", { "c": null }], "a": 2 }))
    );
    assert_eq!(
        ok("return { f() {}, u: undefined, n: 1 }").await,
        Some(json!({ "n": 1 }))
    );
}

#[tokio::test]
async fn no_return_yields_no_result() {
    assert_eq!(ok("const x = 1; x + 1;").await, None);
    assert_eq!(ok("return undefined").await, None);
    assert_eq!(ok("").await, None);
}

#[tokio::test]
async fn non_serialisable_results_are_errors() {
    let e = err("const a = {}; a.self = a; return a;").await;
    assert!(e.starts_with("Result is not JSON-serialisable"), "{e}");
    let e = err("return 10n").await;
    assert!(e.starts_with("Result is not JSON-serialisable"), "{e}");
}

#[tokio::test]
async fn returning_a_function_is_a_clear_error() {
    let e = err("const f = () => 1; return f;").await;
    assert!(e.contains("returned a function"), "{e}");
}

#[tokio::test]
async fn tool_calls_cross_into_the_host() {
    let (out, host) = run_with(limits(), "return await tools.a.b.c.echo({ x: 1 })").await;
    assert_eq!(out.error, None);
    assert_eq!(
        out.result,
        Some(json!({ "path": "a.b.c.echo", "echo": { "x": 1 } }))
    );
    assert_eq!(host.calls.load(Ordering::SeqCst), 1);

    // Bracket access with dots, no args, extra args ignored.
    let (out, host) = run_with(
        limits(),
        "const r1 = await tools['my.ns'].list();\nconst r2 = await tools.x.y(undefined, 2);\nreturn [r1, r2];",
    )
    .await;
    assert_eq!(out.error, None);
    assert_eq!(
        out.result,
        Some(json!([
            { "path": "my.ns.list", "args": null },
            { "path": "x.y", "args": null }
        ]))
    );
    let paths = host.paths.lock().unwrap().clone();
    assert_eq!(paths[0], ("my.ns.list".to_string(), Value::Null));

    // Deep paths and built-in style paths.
    assert_eq!(
        ok("return (await tools.github.org.main.list_repos({ per_page: 2 })).path").await,
        Some(json!("github.org.main.list_repos"))
    );
    assert_eq!(
        ok("return (await tools.describe.tool({ path: 'a.b' })).args").await,
        Some(json!({ "path": "a.b" }))
    );
}

#[tokio::test]
async fn promise_all_runs_host_calls_concurrently() {
    let code = "const t = Date.now();\n\
                await Promise.all([tools.a.sleep({ ms: 300 }), tools.b.sleep({ ms: 300 }), tools.c.sleep({ ms: 300 })]);\n\
                return Date.now() - t;";
    let started = Instant::now();
    let (out, host) = run_with(limits(), code).await;
    let elapsed = started.elapsed();
    assert_eq!(out.error, None);
    assert_eq!(host.max_in_flight.load(Ordering::SeqCst), 3);
    assert!(elapsed < Duration::from_millis(750), "took {elapsed:?}");
    assert!(out.result.unwrap().as_f64().unwrap() >= 290.0);
}

#[tokio::test]
async fn host_rejections_are_catchable_errors() {
    assert_eq!(
        ok("try { await tools.a.b.fail({}); return 'no'; } catch (e) { return 'caught: ' + e.message + ' ' + (e instanceof Error); }")
            .await,
        Some(json!("caught: tool a.b.fail: upstream 500 true"))
    );
    let e = err("const x = 1;\nawait tools.a.b.fail();\nreturn x;").await;
    assert!(e.starts_with("Error: tool a.b.fail: upstream 500"), "{e}");
    // The stack points at the agent's call site, not the prelude.
    assert!(e.contains("line 2"), "{e}");
    assert!(!e.contains("prelude"), "{e}");
}

#[tokio::test]
async fn host_panics_become_rejections() {
    let e = err("await tools.x.panic();").await;
    assert!(e.contains("Internal tool error"), "{e}");
}

#[tokio::test]
async fn awaiting_a_namespace_does_not_hang() {
    let out = tokio::time::timeout(
        Duration::from_secs(5),
        run("const ns = await tools.github; return typeof ns;"),
    )
    .await
    .expect("awaiting the proxy hung");
    assert_eq!(out.error, None);
    assert_eq!(out.result, Some(json!("function")));
    assert_eq!(
        ok("return tools.a.then === undefined && tools[Symbol.iterator] === undefined").await,
        Some(json!(true))
    );
}

#[tokio::test]
async fn tools_cannot_be_enumerated() {
    for code in [
        "return Object.keys(tools)",
        "return Object.keys(tools.github)",
        "return { ...tools.github }",
        "const k = []; for (const x in tools) k.push(x); return k;",
        "return Reflect.ownKeys(tools)",
    ] {
        let e = err(code).await;
        assert!(e.starts_with("TypeError: tools"), "{code}: {e}");
        assert!(
            e.contains("is a lazy proxy and cannot be enumerated"),
            "{code}: {e}"
        );
        assert!(e.contains("tools.search("), "{code}: {e}");
    }
    let e = err("return Object.keys(tools.github.org)").await;
    assert!(
        e.starts_with("TypeError: tools.github.org is a lazy proxy"),
        "{e}"
    );
}

#[tokio::test]
async fn calling_the_root_throws() {
    let e = err("await tools({})").await;
    assert!(
        e.starts_with("TypeError: Tool path missing in invocation"),
        "{e}"
    );
}

#[tokio::test]
async fn console_is_captured() {
    let out = run(
        "console.log('hello', { a: 1 }, [1, 2], 3);\nconsole.warn('w');\nconsole.error(new Error('bad'));\nconsole.info(undefined, null);\nconsole.debug(() => 1);\nreturn 1;",
    )
    .await;
    assert_eq!(out.error, None);
    assert_eq!(
        out.logs,
        vec![
            "[log] hello {\"a\":1} [1,2] 3",
            "[warn] w",
            "[error] Error: bad",
            "[info] undefined null",
            "[debug] [Function]",
        ]
    );
}

#[tokio::test]
async fn logs_survive_errors() {
    let out = run("console.log('before');\nthrow new Error('boom');").await;
    assert_eq!(out.logs, vec!["[log] before"]);
    assert!(out.error.unwrap().starts_with("Error: boom"));
}

#[tokio::test]
async fn fetch_is_disabled() {
    let e = err("await fetch('https://example.com')").await;
    assert!(e.contains("fetch is disabled in QuickJS executor"), "{e}");
}

#[tokio::test]
async fn emit_collects_values() {
    let out = run("emit('text'); emit({ type: 'text', text: 'hi' }); const r = emit(1); return r === undefined;").await;
    assert_eq!(out.error, None);
    assert_eq!(out.result, Some(json!(true)));
    assert_eq!(
        out.emitted,
        vec![
            json!("text"),
            json!({ "type": "text", "text": "hi" }),
            json!(1)
        ]
    );
}

#[tokio::test]
async fn no_host_helpers_or_timers_are_visible() {
    assert_eq!(
        ok("return [typeof __executor_call, typeof __executor_log, typeof __executor_emit, typeof setTimeout, typeof require, typeof process, Object.keys(globalThis).includes('tools')]").await,
        Some(json!(["undefined", "undefined", "undefined", "undefined", "undefined", "undefined", false]))
    );
}

#[tokio::test]
async fn the_prelude_source_is_not_visible() {
    // The prelude is loaded as bytecode without its source text: its functions do not print the
    // helpers they close over.
    let printed = ok("return [String(console.log), String(emit), String(Math.random), String(Date.now)].join(' ')")
        .await
        .unwrap();
    let printed = printed.as_str().unwrap();
    assert!(!printed.contains("hostLog"), "{printed}");
    assert!(!printed.contains("hostEmit"), "{printed}");
    assert!(!printed.contains("imul"), "{printed}");
    assert!(!printed.contains("clock"), "{printed}");
}

#[tokio::test]
async fn typescript_runs() {
    let code = r#"
interface Repo { name: string; stars: number }
type Names = string[];
enum Color { Red = 1, Green = Red + 4 }
declare const nothing: unknown;
class Counter {
  constructor(private start: number, public readonly step: number = 2) {}
  get next(): number { return this.start + this.step; }
}
function top<T extends { stars: number }>(items: T[], n: number): T[] {
  return [...items].sort((a, b) => b.stars - a.stars).slice(0, n);
}
const repos = (await tools.x.echo({ list: [{ name: "alpha", stars: 1 }, { name: "beta", stars: 50 }, { name: "gamma", stars: 12 }] })).echo.list as Repo[];
const maybe: Repo | undefined = repos[0];
const names: Names = top<Repo>(repos, 2).map((r) => r.name);
const cfg = { total: repos.reduce((s, r) => s + r.stars, 0) } satisfies { total: number };
return { total: cfg.total, top: names, color: Color.Green, first: maybe!.name, next: new Counter(1).next };
"#;
    assert_eq!(
        ok(code).await,
        Some(
            json!({ "total": 63, "top": ["beta", "gamma"], "color": 5, "first": "alpha", "next": 3 })
        )
    );
}

#[tokio::test]
async fn code_recovery_forms_run() {
    let cases: &[(&str, Value)] = &[
        (
            "Here is the code:\n```ts\nconst x: number = 41;\nreturn x + 1;\n```\nDone.",
            json!(42),
        ),
        ("```js\nreturn 'js'\n```", json!("js")),
        ("```\nreturn 'bare'\n```", json!("bare")),
        ("() => 7", json!(7)),
        (
            "async () => { const r = await tools.a.echo({ v: 1 }); return r.echo.v; }",
            json!(1),
        ),
        ("(async () => 8) as any", json!(8)),
        (
            "(async () => { return await tools.a.echo({ v: 2 }); })();",
            json!({ "path": "a.echo", "echo": { "v": 2 } }),
        ),
        ("async function main() { return 9; }", json!(9)),
        ("function main(): number { return 10 }", json!(10)),
        ("export default 11", json!(11)),
        ("export default { a: 12 }", json!({ "a": 12 })),
        ("export default async () => 13", json!(13)),
        ("export default async function () { return 14 }", json!(14)),
        (
            "export default async function run() { return 15 }",
            json!(15),
        ),
    ];
    for (code, expected) in cases {
        assert_eq!(ok(code).await.as_ref(), Some(expected), "code: {code}");
    }
}

#[tokio::test]
async fn syntax_errors_report_agent_positions() {
    let e = err("const a = 1;\nconst b = a +* 2;\nreturn b;").await;
    assert!(e.starts_with("SyntaxError: "), "{e}");
    assert!(e.ends_with("(line 2, column 14)"), "{e}");

    let e = err("return 1 +").await;
    assert!(e.starts_with("SyntaxError: "), "{e}");
    assert!(e.contains("(line 1,"), "{e}");

    let e = err("Sure!\n```ts\nconst ok = 1;\nconst bad: = 2;\n```").await;
    assert!(e.ends_with("(line 4, column 12)"), "{e}");
}

#[tokio::test]
async fn runtime_errors_report_agent_lines() {
    let e = err("const a = 1;\nconst b = 2;\nthrow new Error(\"boom\");").await;
    assert!(e.starts_with("Error: boom"), "{e}");
    assert!(e.contains("at line 3, column"), "{e}");
    assert!(!e.contains("__executor"), "{e}");

    let e = err("function inner(x: number) {\n  return (x as any).missing.deep;\n}\nconst v = 1;\nreturn inner(v);").await;
    assert!(e.starts_with("TypeError:"), "{e}");
    assert!(e.contains("at inner (line 2, column"), "{e}");
    assert!(e.contains("at line 5, column"), "{e}");

    // Inside a fenced block: lines count from the top of the submitted text.
    let e = err("Plan:\n\n```ts\ntype T = { a: number };\nconst t: T = { a: 1 };\nif (t.a) throw new RangeError('bad ' + t.a);\n```").await;
    assert!(e.starts_with("RangeError: bad 1"), "{e}");
    assert!(e.contains("at line 6, column"), "{e}");

    // Column of a thrown error.
    let e = err("const x = 1; throw new Error('c');").await;
    assert!(e.starts_with("Error: c\n    at line 1, column "), "{e}");
    let col: u32 = e.rsplit("column ").next().unwrap().parse().unwrap();
    assert!((14..=30).contains(&col), "{e}");
    assert_eq!(e.matches("\n    at ").count(), 1, "{e}");
}

#[tokio::test]
async fn thrown_non_errors_are_reported() {
    assert_eq!(err("throw 'plain'").await, "Uncaught: plain");
    assert_eq!(err("throw { code: 1 }").await, "Uncaught: {\"code\":1}");
    assert!(
        err("await Promise.reject(null)")
            .await
            .starts_with("Uncaught: null")
    );
}

/// A budget long enough that "stalled" (waiting for the whole budget) and "slow because the
/// machine is loaded" cannot be confused.
fn two_second_js_time() -> SandboxLimits {
    SandboxLimits {
        js_time: Duration::from_secs(2),
        wall_time: Duration::from_secs(10),
        ..SandboxLimits::default()
    }
}

fn short_js_time() -> SandboxLimits {
    SandboxLimits {
        js_time: Duration::from_millis(300),
        wall_time: Duration::from_secs(10),
        ..SandboxLimits::default()
    }
}

#[tokio::test]
async fn infinite_loops_time_out() {
    for code in [
        "while (true) {}",
        "await tools.a.echo({}); for (;;) {}",
        "while (true) { await null; }",
        "try { while (true) {} } catch (e) { return 'caught'; }",
    ] {
        let started = Instant::now();
        let (out, _) = run_with(short_js_time(), code).await;
        let elapsed = started.elapsed();
        assert_eq!(
            out.error.as_deref(),
            Some("Execution timed out after 300ms"),
            "{code}"
        );
        assert!(elapsed < Duration::from_secs(3), "{code}: took {elapsed:?}");
    }
}

#[tokio::test]
async fn js_time_is_paused_during_host_calls() {
    let (out, _) = run_with(
        short_js_time(),
        "const a = await tools.x.sleep({ ms: 500 });\nconst b = await tools.x.sleep({ ms: 400 });\nreturn [a.slept, b.slept];",
    )
    .await;
    assert_eq!(out.error, None);
    assert_eq!(out.result, Some(json!([500, 400])));
}

#[tokio::test]
async fn wall_clock_budget_fires_during_a_long_host_call() {
    let limits = SandboxLimits {
        js_time: Duration::from_millis(300),
        wall_time: Duration::from_millis(700),
        ..SandboxLimits::default()
    };
    let started = Instant::now();
    let (out, _) = run_with(
        limits,
        "console.log('start'); await tools.x.sleep({ ms: 5000 }); return 1;",
    )
    .await;
    let elapsed = started.elapsed();
    assert_eq!(
        out.error.as_deref(),
        Some("Execution exceeded the wall-clock limit of 700ms")
    );
    assert_eq!(out.logs, vec!["[log] start"]);
    assert!(elapsed < Duration::from_millis(2500), "took {elapsed:?}");
}

#[tokio::test]
async fn spinning_while_a_host_call_is_in_flight_still_times_out() {
    // JS time is paused while a call is in flight, but one uninterrupted stretch of JS longer than
    // the budget is still JS time (the call cannot even complete while JS holds the thread).
    let limits = SandboxLimits {
        js_time: Duration::from_millis(300),
        wall_time: Duration::from_millis(800),
        ..SandboxLimits::default()
    };
    let started = Instant::now();
    let (out, _) = run_with(
        limits.clone(),
        "tools.x.sleep({ ms: 60000 }); while (true) {}",
    )
    .await;
    assert_eq!(
        out.error.as_deref(),
        Some("Execution timed out after 300ms")
    );
    assert!(
        started.elapsed() < Duration::from_millis(700),
        "took {:?}",
        started.elapsed()
    );
    let (out, _) = run_with(
        limits,
        "const p = tools.x.sleep({ ms: 60000 }); await null; while (true) {}",
    )
    .await;
    assert_eq!(
        out.error.as_deref(),
        Some("Execution timed out after 300ms")
    );
}

#[tokio::test]
async fn a_promise_that_never_settles_times_out() {
    let started = Instant::now();
    let (out, _) = run_with(short_js_time(), "await new Promise(() => {}); return 1;").await;
    assert_eq!(
        out.error.as_deref(),
        Some("Execution timed out after 300ms")
    );
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn memory_bombs_are_stopped() {
    let limits = SandboxLimits {
        memory_bytes: 16 * 1024 * 1024,
        ..limits()
    };
    let (out, _) = run_with(
        limits.clone(),
        "const a = []; while (true) a.push('x'.repeat(1000) + a.length);",
    )
    .await;
    let e = out.error.expect("expected an error");
    assert!(e.contains("out of memory"), "{e}");

    let (out, _) = run_with(
        limits.clone(),
        "const a = [];\nwhile (true) a.push({ n: a.length, s: 'y'.repeat(100) });",
    )
    .await;
    let e = out.error.expect("expected an error");
    assert!(e.contains("out of memory"), "{e}");

    let (out, _) = run_with(limits, "let s = 'x'; while (true) s = s + s;").await;
    let e = out.error.expect("expected an error");
    assert!(
        e.contains("out of memory")
            || e.contains("string too long")
            || e.contains("invalid string length"),
        "{e}"
    );
}

#[tokio::test]
async fn deep_recursion_is_stopped() {
    let e = err("function f(n: number): number { return f(n + 1) + 1; }\nreturn f(0);").await;
    assert!(
        e.contains("Maximum call stack size exceeded") || e.contains("stack overflow"),
        "{e}"
    );
    assert!(e.lines().count() <= 12, "{e}");
    // Catchable, and the sandbox keeps working afterwards.
    assert_eq!(
        ok("function f(n) { return f(n + 1) + 1; }\ntry { f(0); } catch (e) { return 'caught'; }")
            .await,
        Some(json!("caught"))
    );
}

#[tokio::test]
async fn a_spinning_execution_does_not_block_others() {
    let pool = Arc::new(SandboxPool::new(two_second_js_time(), 2, 4));
    let host: Arc<dyn HostCalls> = Arc::new(TestHost::default());
    let spinner = {
        let pool = pool.clone();
        let host = host.clone();
        tokio::spawn(async move { pool.run("while (true) {}", host).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let out = pool
        .run("return await tools.a.echo({ q: 1 })", host.clone())
        .await;
    assert_eq!(out.error, None);
    assert!(
        started.elapsed() < Duration::from_millis(1000),
        "took {:?}",
        started.elapsed()
    );
    let spun = spinner.await.unwrap();
    assert_eq!(
        spun.error.as_deref(),
        Some("Execution timed out after 2000ms")
    );
}

#[test]
fn caller_runtime_stays_responsive_while_a_script_spins() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let pool = Arc::new(SandboxPool::new(two_second_js_time(), 1, 1));
        let host: Arc<dyn HostCalls> = Arc::new(TestHost::default());
        let spinner = {
            let pool = pool.clone();
            tokio::spawn(async move { pool.run("while (true) {}", host).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        for _ in 0..5 {
            let t = Instant::now();
            tokio::time::sleep(Duration::from_millis(10)).await;
            // A stalled caller would wait for the whole 2 s JS budget; the margin below that
            // absorbs scheduling noise on a loaded 2-core machine.
            assert!(
                t.elapsed() < Duration::from_millis(500),
                "caller stalled for {:?}",
                t.elapsed()
            );
        }
        let out = spinner.await.unwrap();
        assert_eq!(
            out.error.as_deref(),
            Some("Execution timed out after 2000ms")
        );
    });
}

#[tokio::test]
async fn concurrency_is_bounded_by_the_semaphore() {
    let pool = Arc::new(SandboxPool::new(limits(), 2, 1));
    let host = Arc::new(TestHost::default());
    let started = Instant::now();
    let a = pool.run("await tools.a.sleep({ ms: 200 }); return 1", host.clone());
    let b = pool.run("await tools.b.sleep({ ms: 200 }); return 2", host.clone());
    let (a, b) = tokio::join!(a, b);
    assert_eq!((a.result, b.result), (Some(json!(1)), Some(json!(2))));
    assert_eq!(host.max_in_flight.load(Ordering::SeqCst), 1);
    assert!(started.elapsed() >= Duration::from_millis(390));
}

#[tokio::test]
async fn many_executions_share_a_pool() {
    let pool = Arc::new(SandboxPool::new(limits(), 2, 64));
    let host: Arc<dyn HostCalls> = Arc::new(TestHost::default());
    let mut tasks = Vec::new();
    for i in 0..50 {
        let pool = pool.clone();
        let host = host.clone();
        tasks.push(tokio::spawn(async move {
            pool.run(
                &format!("await tools.a.sleep({{ ms: 50 }}); return {i};"),
                host,
            )
            .await
        }));
    }
    for (i, t) in tasks.into_iter().enumerate() {
        assert_eq!(t.await.unwrap().result, Some(json!(i)));
    }
    assert_eq!(pool.limits(), &limits());
}

#[tokio::test]
async fn dropping_a_run_and_the_pool_is_safe() {
    let pool = SandboxPool::new(short_js_time(), 1, 1);
    let host: Arc<dyn HostCalls> = Arc::new(TestHost::default());
    let r = tokio::time::timeout(
        Duration::from_millis(50),
        pool.run("await tools.x.sleep({ms: 1000})", host.clone()),
    )
    .await;
    assert!(r.is_err());
    // The permit is released once the aborted execution is gone.
    let out = tokio::time::timeout(Duration::from_secs(5), pool.run("return 5", host))
        .await
        .unwrap();
    assert_eq!(out.result, Some(json!(5)));
    drop(pool);
}

#[test]
fn pool_is_send_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SandboxPool>();
}

#[tokio::test]
async fn deeply_nested_code_does_not_crash_the_process() {
    // Near the size cap: the parser recurses once per level.
    let depth = 120_000;
    let code = format!("return {}1{};", "[".repeat(depth), "]".repeat(depth));
    let e = err(&code).await;
    assert!(
        e.contains("Maximum call stack size exceeded") || e.contains("stack"),
        "{}",
        &e[..e.len().min(200)]
    );
    let code = format!("return {}1;", "!".repeat(250_000));
    let e = err(&code).await;
    assert!(
        e.contains("Maximum call stack size exceeded"),
        "{}",
        &e[..e.len().min(200)]
    );
    let e = err(&"!".repeat(300_000)).await;
    assert!(e.starts_with("Code is too large"), "{e}");
}

/// A host whose clock replays fixed values, then counts up from 5000.
struct ClockHost {
    values: std::sync::Mutex<std::collections::VecDeque<f64>>,
    next: std::sync::Mutex<f64>,
}

impl HostCalls for ClockHost {
    fn call(&self, _path: String, _args: Value) -> BoxFuture<'static, HostReply> {
        async { HostReply::Resolve(Value::Null) }.boxed()
    }

    fn clock(&self) -> f64 {
        if let Some(v) = self.values.lock().unwrap().pop_front() {
            return v;
        }
        let mut next = self.next.lock().unwrap();
        *next += 1.0;
        *next
    }
}

#[tokio::test]
async fn time_and_randomness_are_replay_stable() {
    let pool = SandboxPool::new(limits(), 1, 1);
    let code = r#"
        const a = Date.now();
        const d = new Date();
        const fixed = new Date(2020, 0, 2).getFullYear();
        const iso = new Date(0).toISOString();
        const r = [Math.random(), Math.random(), Math.random()];
        const p = typeof performance === "object" ? performance.now() : null;
        return { a, d: d.getTime(), isDate: d instanceof Date, fixed, iso, r,
                 str: typeof Date(), parse: Date.parse("1970-01-01T00:00:01Z"), p,
                 ctor: d.constructor === Date };
    "#;
    let run = |seed: u64| {
        let host = Arc::new(ClockHost {
            values: std::sync::Mutex::new([1000.0, 2000.0].into_iter().collect()),
            next: std::sync::Mutex::new(5000.0),
        });
        let options = executor_sandbox::RunOptions {
            seed,
            time_origin_ms: Some(1000.0),
        };
        let pool = &pool;
        async move { pool.run_with(code, host, options).await }
    };
    let first = run(42).await;
    assert_eq!(first.error, None, "{:?}", first.logs);
    let first = first.result.unwrap();
    assert_eq!(first["a"], 1000.0);
    assert_eq!(first["d"], 2000.0);
    assert_eq!(first["isDate"], true);
    assert_eq!(first["ctor"], true);
    assert_eq!(first["fixed"], 2020);
    assert_eq!(first["iso"], "1970-01-01T00:00:00.000Z");
    assert_eq!(first["str"], "string");
    assert_eq!(first["parse"], 1000);
    let r = first["r"].as_array().unwrap();
    assert!(r.iter().all(|v| (0.0..1.0).contains(&v.as_f64().unwrap())));
    assert_ne!(r[0], r[1]);
    // Same seed and clock → same values; another seed → other random numbers.
    let again = run(42).await.result.unwrap();
    assert_eq!(again, first);
    let other = run(43).await.result.unwrap();
    assert_ne!(other["r"], first["r"]);
    assert_eq!(other["a"], first["a"]);
}

/// A pool sharing a runtime ([`SandboxPool::sharing`], as the server runs it): a script that
/// spins there must not hold that runtime's other tasks (here a ticker on its only worker) for
/// longer than the hand-off threshold, and tool calls still work there.
#[test]
fn a_spinning_script_does_not_hold_a_shared_runtime() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_stack_size(executor_sandbox::JS_THREAD_STACK)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let pool = Arc::new(SandboxPool::sharing(
            limits(),
            1,
            4,
            tokio::runtime::Handle::current(),
            1,
        ));
        let host = Arc::new(TestHost::default());
        let placement = pool.place();
        assert!(placement.is_shared());
        let out = pool
            .run_placed(
                placement,
                "const r = await tools.a.echo({ n: 1 }); return r.echo.n;",
                host.clone(),
                Default::default(),
            )
            .await;
        assert_eq!(out.result, Some(json!(1)), "{:?}", out.error);

        // The ticker runs on the worker; the longest gap between its ticks is recorded.
        let longest_gap = Arc::new(std::sync::Mutex::new(Duration::ZERO));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let ticker = tokio::spawn({
            let (longest_gap, stop) = (longest_gap.clone(), stop.clone());
            async move {
                let mut last = Instant::now();
                while !stop.load(Ordering::Acquire) {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    let gap = last.elapsed();
                    last = Instant::now();
                    let mut longest = longest_gap.lock().unwrap();
                    *longest = (*longest).max(gap);
                }
            }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        let placement = pool.place();
        assert!(placement.is_shared());
        let spin = pool.clone();
        let spinning = tokio::spawn(async move {
            let host = Arc::new(TestHost::default());
            spin.run_placed(
                placement,
                "const end = Date.now() + 1500; let n = 0; while (Date.now() < end) { n++; } return n > 0;",
                host,
                Default::default(),
            )
            .await
        });
        let out = spinning.await.unwrap();
        stop.store(true, Ordering::Release);
        ticker.await.unwrap();
        assert_eq!(out.result, Some(json!(true)), "{:?}", out.error);
        let longest = *longest_gap.lock().unwrap();
        // Without the hand-off the ticker waits the whole 1.5 s spin.
        assert!(
            longest < Duration::from_millis(750),
            "the ticker was held for {longest:?}"
        );
    });
}

/// The shared runtime takes an execution while fewer than its slots are running at all; the
/// rest spill to the pool's own threads, and a slot is free again when its execution ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn executions_beyond_the_shared_slots_spill_to_the_pools_threads() {
    let pool = SandboxPool::sharing(limits(), 1, 4, tokio::runtime::Handle::current(), 1);
    let first = pool.place();
    let second = pool.place();
    assert!(first.is_shared());
    assert!(!second.is_shared(), "one slot: the second spills");
    let host = Arc::new(TestHost::default());
    let code = "await tools.a.echo({}); return 1;";
    let (a, b) = tokio::join!(
        pool.run_placed(first, code, host.clone(), Default::default()),
        pool.run_placed(second, code, host.clone(), Default::default()),
    );
    assert_eq!(a.result, Some(json!(1)), "{:?}", a.error);
    assert_eq!(b.result, Some(json!(1)), "{:?}", b.error);
    assert!(
        pool.place().is_shared(),
        "the slot is free once its execution ended"
    );
}

/// A lone execution leaves a sandbox made for the next one; the next one runs in it, and sees
/// nothing of the executions before it (each sandbox serves one execution).
#[tokio::test]
async fn the_next_execution_runs_in_a_fresh_spare_sandbox() {
    let pool = SandboxPool::new(limits(), 1, 4);
    assert!(
        !pool.has_spare().await,
        "nothing is made before the first execution"
    );
    let first = pool
        .run(
            "globalThis.leaked = 1; Object.prototype.polluted = 2; Math.random(); return 1;",
            Arc::new(TestHost::default()),
        )
        .await;
    assert_eq!(first.error, None);
    let mut waited = 0;
    while !pool.has_spare().await {
        waited += 1;
        assert!(waited < 500, "no spare sandbox after a lone execution");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let second = pool
        .run(
            "return [typeof leaked, typeof ({}).polluted, typeof tools.a.b, typeof Math.random()];",
            Arc::new(TestHost::default()),
        )
        .await;
    assert_eq!(second.error, None, "{:?}", second.logs);
    assert_eq!(
        second.result,
        Some(json!(["undefined", "undefined", "function", "number"]))
    );
}

/// When `run` returns, the sandbox holds nothing of the execution's host (the engine ends the
/// execution's MCP sessions only once their last holder is gone), whether the sandbox is freed
/// then or later, and also when a call the code never awaited is still in flight.
#[tokio::test]
async fn the_host_is_released_when_the_run_returns() {
    let pool = SandboxPool::new(limits(), 1, 4);
    for code in [
        "return await tools.a.echo({ n: 1 });",
        "console.log(Date.now(), performance.now()); emit(1); return 2;",
        "tools.a.sleep({ ms: 5000 }); return 3;",
    ] {
        for _ in 0..3 {
            let host = Arc::new(TestHost::default());
            let out = pool.run(code, host.clone()).await;
            assert_eq!(out.error, None, "{code}: {:?}", out.logs);
            assert_eq!(
                Arc::strong_count(&host),
                1,
                "{code}: the host is still held"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Bytes have no JSON form: a typed array, a DataView or an ArrayBuffer in tool arguments
/// reaches the host as `{_tag:"Bytes", encoding:"base64", data}` (before, a Uint8Array arrived
/// as `{"0":137,"1":80,…}`), wherever it sits in the arguments.
#[tokio::test]
async fn bytes_in_tool_arguments_arrive_tagged_as_base64() {
    let got = ok(r#"
        const png = new Uint8Array([137, 80, 78, 71]);
        const view = new Uint8Array([0, 1, 2, 3, 255]).subarray(1, 4);
        const r = await tools.a.b.c.echo({
            file: png,
            list: [view, new Uint16Array([258]).buffer],
            dv: new DataView(new Uint8Array([104, 105]).buffer),
            plain: { n: 1 },
        });
        return r.echo;
    "#)
    .await
    .unwrap();
    let bytes = |data: &str| json!({"_tag": "Bytes", "encoding": "base64", "data": data});
    assert_eq!(
        got,
        json!({
            "file": bytes("iVBORw=="),
            "list": [bytes("AQID"), bytes("AgE=")],
            "dv": bytes("aGk="),
            "plain": {"n": 1},
        })
    );
}
