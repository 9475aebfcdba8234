//! Micro-benchmarks of the sandbox: TypeScript stripping, a whole `return 1` execution (a fresh
//! QuickJS runtime and context each time), and host round trips (JS → host → JS).
//!
//! `cargo bench -p executor-sandbox`

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use executor_sandbox::{HostCalls, HostReply, SandboxLimits, SandboxPool, prepare};
use futures::future::BoxFuture;

/// Answers every call at once with `{ok: true}`.
struct Echo;

impl HostCalls for Echo {
    fn call(&self, _path: String, _args: serde_json::Value) -> BoxFuture<'static, HostReply> {
        Box::pin(async { HostReply::Resolve(serde_json::json!({ "ok": true })) })
    }
}

const TYPESCRIPT: &str = r#"
interface Issue { id: number; title: string; labels?: string[] }
const issues: Issue[] = await tools.github.org.main.issues.list({ state: "open" } as const);
const titles = issues.map((i: Issue): string => i.title);
return { count: titles.length, first: titles[0] ?? null };
"#;

fn benches(c: &mut Criterion) {
    c.bench_function("prepare: strip a TypeScript snippet", |b| {
        b.iter(|| prepare(std::hint::black_box(TYPESCRIPT)).unwrap())
    });

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let pool = rt.block_on(async { SandboxPool::new(SandboxLimits::default(), 1, 8) });
    let host: Arc<dyn HostCalls> = Arc::new(Echo);

    c.bench_function("execution: return 1 (fresh runtime + context)", |b| {
        b.iter(|| rt.block_on(pool.run("return 1", host.clone())))
    });
    c.bench_function("execution: 100 host round trips", |b| {
        b.iter(|| {
            rt.block_on(pool.run(
                "for (let i = 0; i < 100; i++) await tools.x.y({ i }); return 1",
                host.clone(),
            ))
        })
    });
}

criterion_group!(sandbox, benches);
criterion_main!(sandbox);
