//! Benchmark driver. Starts the release `executor` binary on a fresh data dir, a real
//! session-stateful rmcp fixture in this process, and measures what BENCHMARKS.md reports:
//! cold start, idle RSS, `return 1` over HTTP, the seed execution, and the floor (the same two
//! calls made directly by an MCP client on one session).
//!
//! Usage: `cargo build --release -p executor -p executor-bench && target/release/executor-bench`
//! (`bench/run.sh` does both). `EXECUTOR_BIN` overrides the binary under test.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use serde_json::{Value, json};

const COLD_STARTS: usize = 15;
const RETURN_ONE_RUNS: usize = 500;
const SEED_RUNS: usize = 300;
const SEQUENTIAL_CALLS: usize = 100;
const SEQUENTIAL_RUNS: usize = 20;

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

fn binary() -> PathBuf {
    std::env::var_os("EXECUTOR_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/executor")
        })
}

struct Server {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Server {
    fn stop(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(47_880)
}

/// Spawns the binary and returns when `/api/health` first answers 200, with the time it took.
async fn start(http: &reqwest::Client) -> anyhow::Result<(Server, Duration)> {
    let dir = tempfile::tempdir()?;
    let port = free_port();
    let started = Instant::now();
    let child = Command::new(binary())
        .args([
            "web",
            "--port",
            &port.to_string(),
            "--hostname",
            "127.0.0.1",
        ])
        .env("EXECUTOR_DATA_DIR", dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", binary().display()))?;
    let base = format!("http://127.0.0.1:{port}");
    let deadline = started + Duration::from_secs(20);
    loop {
        if let Ok(r) = http.get(format!("{base}/api/health")).send().await
            && r.status().is_success()
        {
            return Ok((
                Server {
                    child,
                    base,
                    _dir: dir,
                },
                started.elapsed(),
            ));
        }
        if Instant::now() > deadline {
            bail!("the server did not become ready");
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
}

fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .context("no VmRSS")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("bad VmRSS")?
        .parse()?)
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort();
    let idx = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[idx]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

async fn post(http: &reqwest::Client, url: String, body: Value) -> anyhow::Result<Value> {
    let r = http.post(url).json(&body).send().await?;
    let status = r.status();
    let v: Value = r.json().await?;
    if !status.is_success() {
        bail!("HTTP {status}: {v}");
    }
    Ok(v)
}

async fn execute(http: &reqwest::Client, base: &str, code: &str) -> anyhow::Result<Value> {
    let v = post(
        http,
        format!("{base}/api/executions"),
        json!({"code": code, "autoApprove": true}),
    )
    .await?;
    if v["isError"] != json!(false) {
        bail!("execution failed: {v}");
    }
    Ok(v)
}

#[derive(Clone)]
struct DirectHandler;

impl rmcp::ClientHandler for DirectHandler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("bench-direct", "0.1.0"),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
    }
}

async fn run() -> anyhow::Result<()> {
    let http = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let fixture = executor_mcp::testing::serve_stateful().await;
    println!("binary: {}", binary().display());

    // Cold start: spawn to first 200, median of several.
    let mut cold = Vec::new();
    for _ in 0..COLD_STARTS {
        let (server, took) = start(&http).await?;
        cold.push(took);
        server.stop();
    }

    let (server, _) = start(&http).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let idle_rss = rss_kib(server.child.id())?;
    let base = server.base.clone();

    // `return 1` over HTTP, keep-alive.
    for _ in 0..50 {
        execute(&http, &base, "return 1").await?;
    }
    let mut ret1 = Vec::new();
    for _ in 0..RETURN_ONE_RUNS {
        let t = Instant::now();
        execute(&http, &base, "return 1").await?;
        ret1.push(t.elapsed());
    }

    // The seed: add the fixture, a connection, then select + get in one execution.
    post(&http, format!("{base}/api/mcp/servers"), json!({"name":"bench","endpoint":fixture.url,"slug":"bench","remoteTransport":"streamable-http"})).await?;
    post(
        &http,
        format!("{base}/api/connections"),
        json!({"owner":"org","name":"main","integration":"bench","template":"none","value":""}),
    )
    .await?;
    let seed = "const s = await tools.bench.org.main.select_workspace({});\nconst r = await tools.bench.org.main.get_workspace({});\nreturn JSON.stringify({ s, r });";
    for _ in 0..30 {
        execute(&http, &base, seed).await?;
    }
    let mut seed_runs = Vec::new();
    for _ in 0..SEED_RUNS {
        let t = Instant::now();
        let v = execute(&http, &base, seed).await?;
        seed_runs.push(t.elapsed());
        if !v["text"]
            .as_str()
            .unwrap_or("")
            .contains("workspace:ws-e2e")
        {
            bail!("seed lost its session state: {v}");
        }
    }
    let sequential_code = format!(
        "for (let i = 0; i < {SEQUENTIAL_CALLS}; i++) {{ const r = await tools.bench.org.main.get_workspace({{}}); if (!r.ok) throw new Error('call failed'); }} return {SEQUENTIAL_CALLS};"
    );
    let mut sequential = Vec::new();
    for _ in 0..SEQUENTIAL_RUNS {
        let t = Instant::now();
        execute(&http, &base, &sequential_code).await?;
        sequential.push(t.elapsed());
    }
    let rss_after = rss_kib(server.child.id())?;
    server.stop();

    // The floor: the same calls made directly on one rmcp client session.
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(fixture.url.as_str());
    let client = DirectHandler.serve(transport).await?;
    let call = |name: &'static str| {
        CallToolRequestParams::new(name).with_arguments(serde_json::Map::new())
    };
    for _ in 0..30 {
        client.peer().call_tool(call("select_workspace")).await?;
        client.peer().call_tool(call("get_workspace")).await?;
    }
    let mut floor = Vec::new();
    for _ in 0..SEED_RUNS {
        let t = Instant::now();
        client.peer().call_tool(call("select_workspace")).await?;
        client.peer().call_tool(call("get_workspace")).await?;
        floor.push(t.elapsed());
    }
    let mut floor_seq = Vec::new();
    for _ in 0..SEQUENTIAL_RUNS {
        let t = Instant::now();
        for _ in 0..SEQUENTIAL_CALLS {
            client.peer().call_tool(call("get_workspace")).await?;
        }
        floor_seq.push(t.elapsed());
    }
    let _ = client.cancel().await;

    let seed_p50 = percentile(&mut seed_runs, 0.5);
    let floor_p50 = percentile(&mut floor, 0.5);
    let seq_p50 = percentile(&mut sequential, 0.5);
    let floor_seq_p50 = percentile(&mut floor_seq, 0.5);
    println!();
    println!("| measurement | median | notes |");
    println!("|---|---|---|");
    println!(
        "| cold start to first `GET /api/health` 200 | {} | {COLD_STARTS} starts, fresh data dir each |",
        ms(percentile(&mut cold, 0.5))
    );
    println!(
        "| idle RSS 3 s after ready | {:.1} MiB | |",
        idle_rss as f64 / 1024.0
    );
    println!(
        "| `return 1` over HTTP (keep-alive) | {} | p99 {} over {RETURN_ONE_RUNS} |",
        ms(percentile(&mut ret1, 0.5)),
        ms(percentile(&mut ret1, 0.99))
    );
    println!(
        "| seed execution (select + get, one session) | {} | p99 {} over {SEED_RUNS} |",
        ms(seed_p50),
        ms(percentile(&mut seed_runs, 0.99))
    );
    println!(
        "| floor: the same two calls, direct rmcp client, one session | {} | p99 {} |",
        ms(floor_p50),
        ms(percentile(&mut floor, 0.99))
    );
    println!(
        "| seed overhead over the floor | {} | |",
        ms(seed_p50.saturating_sub(floor_p50))
    );
    println!(
        "| {SEQUENTIAL_CALLS} sequential calls in one execution | {} | {SEQUENTIAL_RUNS} runs |",
        ms(seq_p50)
    );
    println!(
        "| {SEQUENTIAL_CALLS} direct calls on one session | {} | ratio {:.2} |",
        ms(floor_seq_p50),
        seq_p50.as_secs_f64() / floor_seq_p50.as_secs_f64()
    );
    println!(
        "| RSS after the runs above | {:.1} MiB | |",
        rss_after as f64 / 1024.0
    );
    Ok(())
}
