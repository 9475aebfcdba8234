//! Benchmark driver: ours next to the original, in one run.
//!
//! Starts the release `executor` binary and — when `EXECUTOR_ORIGINAL_BIN` points at it — the
//! original TypeScript Executor (npm `executor@1.5.9`), each on a fresh data dir (`HOME` and
//! `EXECUTOR_DATA_DIR` in a temp dir), against real rmcp fixtures served by this process: the
//! session-stateful seed fixture (`executor_mcp::testing::serve_stateful`) and a 2,000-tool server
//! (`serve_many_tools`). It prints the table of BENCHMARKS.md:
//!
//! * cold start to the first 200 of the health probe (median of several; starts interleaved);
//! * idle RSS 3 s after ready, summed over the whole process tree;
//! * `return 1` over HTTP with keep-alive (p50, p99);
//! * the seed execution (select + get on the stateful fixture) against the floor: the same two
//!   calls made directly by an rmcp client on one session, in a process of its own (this binary
//!   with `--direct-client`), sampled right after each of ours; and, as a lower bound, the same
//!   client on the fixture's own thread;
//! * one execution with 100 sequential tool calls against 100 direct calls;
//! * throughput of `return 1` at 8 and 64 in flight (keep-alive clients, bounded count and time);
//! * RSS after 3,000 executions and after the 2,000-tool catalog is added and listed.
//!
//! Usage: `bench/run.sh` (builds, installs the original into a cache folder, runs this).
//! `EXECUTOR_BIN` overrides our binary; `EXECUTOR_ORIGINAL_BIN` is the original's platform binary;
//! `EXECUTOR_ORIGINAL_WRAPPER` (optional) its npm `bin/executor` node wrapper, measured for cold
//! start and idle RSS only.
//!
//! Bearer tokens: when a server answers 401, or writes `server-control/auth.json` in its data dir,
//! or prints a `?_token=` URL, the token found is sent as `Authorization: Bearer <token>`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use serde_json::{Value, json};

const COLD_STARTS: usize = 5;
const WRAPPER_COLD_STARTS: usize = 5;
const RETURN_ONE_RUNS: usize = 500;
const SEED_RUNS: usize = 300;
const SEQUENTIAL_CALLS: usize = 100;
const SEQUENTIAL_RUNS: usize = 20;
const RSS_AFTER_EXECUTIONS: usize = 3_000;
const THROUGHPUT_REQUESTS: usize = 5_000;
const THROUGHPUT_CAP: Duration = Duration::from_secs(10);
const CATALOG_TOOLS: usize = 2_000;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

const SEED: &str = "const s = await tools.bench.org.main.select_workspace({});\nconst r = await tools.bench.org.main.get_workspace({});\nreturn JSON.stringify({ s, r });";

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some(DIRECT_CLIENT_ARG) {
        let url = args
            .next()
            .context("usage: executor-bench --direct-client <url>")?;
        return direct_client_process(&url);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(run())
}

/// One product under test.
#[derive(Clone)]
struct Product {
    label: &'static str,
    bin: PathBuf,
    /// Readiness probe: the first 200 here ends the cold start.
    probe: &'static str,
}

fn ours() -> Product {
    Product {
        label: "ours",
        bin: std::env::var_os("EXECUTOR_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/release/executor")
            }),
        probe: "/api/health",
    }
}

/// The original, when `EXECUTOR_ORIGINAL_BIN` names an existing file. 1.5.9 has no
/// `/api/health` (404), so its probe is the cheapest API read, `GET /api/integrations`.
fn original(var: &str, label: &'static str) -> Option<Product> {
    let bin = PathBuf::from(std::env::var_os(var)?);
    bin.is_file().then_some(Product {
        label,
        bin,
        probe: "/api/integrations",
    })
}

struct Server {
    child: Child,
    base: String,
    http: reqwest::Client,
    token: Option<String>,
    executions: Arc<AtomicUsize>,
    _dir: tempfile::TempDir,
}

impl Server {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, then SIGKILL if it has not exited within 5 s.
    fn stop(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(47_880)
}

/// A bearer token the server left for local clients: `server-control/auth.json` in the data dir
/// (any string field named like a token), or a `_token=` in what it printed.
fn find_token(dir: &Path) -> Option<String> {
    let data = dir.join(".executor");
    if let Ok(text) = std::fs::read_to_string(data.join("server-control/auth.json"))
        && let Ok(v) = serde_json::from_str::<Value>(&text)
    {
        for key in ["token", "authToken", "bearer", "accessToken"] {
            if let Some(t) = v.get(key).and_then(Value::as_str) {
                return Some(t.to_owned());
            }
        }
    }
    let printed = std::fs::read_to_string(dir.join("stdout.log")).unwrap_or_default()
        + &std::fs::read_to_string(dir.join("stderr.log")).unwrap_or_default();
    let at = printed.find("_token=")? + "_token=".len();
    let token: String = printed[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || "-._~%".contains(*c))
        .collect();
    (!token.is_empty()).then_some(token)
}

fn client(token: Option<&str>) -> anyhow::Result<reqwest::Client> {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(t) = token {
        headers.insert(
            reqwest::header::AUTHORIZATION,
            format!("Bearer {t}").parse()?,
        );
    }
    Ok(reqwest::Client::builder()
        .tcp_nodelay(true)
        .timeout(REQUEST_TIMEOUT)
        .default_headers(headers)
        .build()?)
}

/// Spawns the product on a fresh data dir and returns when its probe first answers 200, with
/// the time it took.
async fn start(product: &Product) -> anyhow::Result<(Server, Duration)> {
    let dir = tempfile::tempdir()?;
    let data = dir.path().join(".executor");
    let port = free_port();
    let stdout = std::fs::File::create(dir.path().join("stdout.log"))?;
    let stderr = std::fs::File::create(dir.path().join("stderr.log"))?;
    let probe_client = client(None)?;
    let started = Instant::now();
    let mut child = Command::new(&product.bin)
        .args([
            "web",
            "--port",
            &port.to_string(),
            "--hostname",
            "127.0.0.1",
        ])
        .env("HOME", dir.path())
        .env("EXECUTOR_DATA_DIR", &data)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .with_context(|| format!("starting {}", product.bin.display()))?;
    let base = format!("http://127.0.0.1:{port}");
    let deadline = started + Duration::from_secs(30);
    let mut token: Option<String> = None;
    loop {
        let mut request = probe_client.get(format!("{base}{}", product.probe));
        if let Some(t) = &token {
            request = request.bearer_auth(t);
        }
        match request.send().await.map(|r| r.status().as_u16()) {
            Ok(200) => break,
            Ok(401) if token.is_none() => token = find_token(dir.path()),
            _ => {}
        }
        if let Ok(Some(status)) = child.try_wait() {
            bail!("{} exited during start-up: {status}", product.label);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            bail!("{} did not become ready", product.label);
        }
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
    let took = started.elapsed();
    let token = token.or_else(|| find_token(dir.path()));
    Ok((
        Server {
            child,
            base,
            http: client(token.as_deref())?,
            token,
            executions: Arc::new(AtomicUsize::new(0)),
            _dir: dir,
        },
        took,
    ))
}

/// VmRSS summed over `root` and all its descendants (the original's npm wrapper is node
/// spawning the Bun binary; either may spawn workers).
fn tree_rss_kib(root: u32) -> anyhow::Result<u64> {
    let total = tree_pids(root)?
        .into_iter()
        .map(|pid| rss_kib(pid).unwrap_or(0))
        .sum();
    if total == 0 {
        bail!("no RSS for {root}");
    }
    Ok(total)
}

/// `root` and all its descendants.
fn tree_pids(root: u32) -> anyhow::Result<Vec<u32>> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command (which may contain spaces) start after the last ')'.
        let Some(ppid) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        children.entry(ppid).or_default().push(pid);
    }
    let mut pids = Vec::new();
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        pids.push(pid);
        stack.extend(children.get(&pid).into_iter().flatten());
    }
    Ok(pids)
}

/// CPU time (user + system, all threads) used so far by `root` and its descendants.
fn tree_cpu(root: u32) -> anyhow::Result<Duration> {
    // Clock ticks per second: 100 on every Linux this runs on (`getconf CLK_TCK`).
    const TICKS_PER_SEC: u64 = 100;
    let mut ticks = 0;
    for pid in tree_pids(root)? {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        // utime and stime are fields 14 and 15 of stat(5), 12 and 13 after the command.
        for field in fields.get(11..13).into_iter().flatten() {
            ticks += field.parse::<u64>().unwrap_or(0);
        }
    }
    Ok(Duration::from_millis(ticks * 1000 / TICKS_PER_SEC))
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

async fn post(http: &reqwest::Client, url: String, body: Value) -> anyhow::Result<Value> {
    let r = http.post(url).json(&body).send().await?;
    let status = r.status();
    let v: Value = r.json().await?;
    if !status.is_success() {
        bail!("HTTP {status}: {v}");
    }
    Ok(v)
}

async fn execute_with(
    http: &reqwest::Client,
    base: &str,
    executions: &AtomicUsize,
    code: &str,
) -> anyhow::Result<Value> {
    let v = post(
        http,
        format!("{base}/api/executions"),
        json!({"code": code, "autoApprove": true}),
    )
    .await;
    executions.fetch_add(1, Ordering::Relaxed);
    let v = v?;
    if v["isError"] != json!(false) {
        bail!("execution failed: {v}");
    }
    Ok(v)
}

async fn execute(server: &Server, code: &str) -> anyhow::Result<Value> {
    execute_with(&server.http, &server.base, &server.executions, code).await
}

/// `return 1` with `in_flight` concurrent keep-alive clients until `total` requests are done or
/// `cap` has passed. Returns (executions completed, elapsed).
async fn throughput(
    server: &Server,
    in_flight: usize,
    total: usize,
    cap: Duration,
) -> anyhow::Result<(usize, Duration)> {
    let issued = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + cap;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..in_flight {
        let (http, base, issued, done, executions) = (
            server.http.clone(),
            server.base.clone(),
            issued.clone(),
            done.clone(),
            server.executions.clone(),
        );
        tasks.spawn(async move {
            while issued.fetch_add(1, Ordering::Relaxed) < total && Instant::now() < deadline {
                execute_with(&http, &base, &executions, "return 1").await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok((done.load(Ordering::Relaxed), started.elapsed()))
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

/// Everything measured for one product.
#[derive(Default)]
struct Figures {
    cold: Vec<Duration>,
    token: bool,
    idle_rss: u64,
    ret1: Vec<Duration>,
    seed: Vec<Duration>,
    seed_kept: usize,
    /// MCP `initialize` requests the fixture saw per seed execution.
    seed_sessions: f64,
    sequential: Vec<Duration>,
    /// The floor's samples, each taken right after one of ours (only while ours is measured).
    floor_pair: Vec<Duration>,
    floor_sequential: Vec<Duration>,
    rss_after_executions: u64,
    rss_after_throughput: u64,
    tput8: f64,
    tput64: f64,
    /// Server CPU time per execution during the throughput runs: with the rate, tells more work
    /// from more waiting.
    cpu8: Duration,
    cpu64: Duration,
    catalog_load: Duration,
    catalog_tools: usize,
    catalog_last_call: bool,
    rss_catalog: u64,
    wrapper_cold: Vec<Duration>,
    wrapper_idle_rss: u64,
}

struct Fixtures {
    stateful: executor_mcp::testing::StatefulMcpServer,
    many: executor_mcp::testing::StatefulMcpServer,
}

async fn add_integration(server: &Server, slug: &str, name: &str, url: &str) -> anyhow::Result<()> {
    let base = &server.base;
    post(
        &server.http,
        format!("{base}/api/mcp/servers"),
        json!({"transport": "remote", "name": name, "endpoint": url, "slug": slug, "remoteTransport": "streamable-http"}),
    )
    .await
    .with_context(|| format!("adding MCP server {slug}"))?;
    post(
        &server.http,
        format!("{base}/api/connections"),
        json!({"owner": "org", "name": "main", "integration": slug, "template": "none", "value": ""}),
    )
    .await
    .with_context(|| format!("adding the connection to {slug}"))?;
    Ok(())
}

/// The measurements after the cold starts, on one long-lived server.
async fn measure(product: &Product, fx: &Fixtures, f: &mut Figures) -> anyhow::Result<()> {
    let mut direct = match product.label {
        "ours" => Some(DirectClient::start(&fx.stateful.url).await?),
        _ => None,
    };
    let (server, _) = start(product).await?;
    f.token = server.token.is_some();
    tokio::time::sleep(Duration::from_secs(3)).await;
    f.idle_rss = tree_rss_kib(server.pid())?;

    // `return 1` over HTTP, keep-alive.
    for _ in 0..50 {
        execute(&server, "return 1").await?;
    }
    for _ in 0..RETURN_ONE_RUNS {
        let t = Instant::now();
        execute(&server, "return 1").await?;
        f.ret1.push(t.elapsed());
    }

    // The seed: select + get in one execution, on the stateful fixture.
    add_integration(&server, "bench", "bench", &fx.stateful.url).await?;
    for _ in 0..30 {
        execute(&server, SEED).await?;
    }
    let dialled = fx.stateful.ledger.initialize_count();
    for _ in 0..SEED_RUNS {
        let t = Instant::now();
        let v = execute(&server, SEED).await?;
        f.seed.push(t.elapsed());
        if let Some(direct) = direct.as_mut() {
            f.floor_pair.push(direct.sample("pair").await?);
        }
        if v["text"]
            .as_str()
            .unwrap_or("")
            .contains("workspace:ws-e2e")
        {
            f.seed_kept += 1;
        }
    }
    f.seed_sessions = (fx.stateful.ledger.initialize_count() - dialled) as f64 / SEED_RUNS as f64;
    if product.label == "ours" && f.seed_kept != SEED_RUNS {
        bail!("ours lost the seed's session state");
    }

    // One execution, 100 sequential calls.
    let sequential_code = format!(
        "for (let i = 0; i < {SEQUENTIAL_CALLS}; i++) {{ const r = await tools.bench.org.main.get_workspace({{}}); if (!r.ok) throw new Error('call failed'); }} return {SEQUENTIAL_CALLS};"
    );
    for _ in 0..3 {
        execute(&server, &sequential_code).await?;
    }
    for _ in 0..SEQUENTIAL_RUNS {
        let t = Instant::now();
        execute(&server, &sequential_code).await?;
        f.sequential.push(t.elapsed());
        if let Some(direct) = direct.as_mut() {
            f.floor_sequential.push(direct.sample("sequential").await?);
        }
    }
    if let Some(direct) = direct.take() {
        direct.stop().await;
    }

    // Top up with `return 1` (8 in flight) to 3,000 executions, then RSS.
    let so_far = server.executions.load(Ordering::Relaxed);
    if so_far < RSS_AFTER_EXECUTIONS {
        throughput(
            &server,
            8,
            RSS_AFTER_EXECUTIONS - so_far,
            Duration::from_secs(120),
        )
        .await?;
    }
    f.rss_after_executions = tree_rss_kib(server.pid())?;

    // Throughput at 8 and 64 in flight (short warm-up at each level first).
    throughput(&server, 8, 200, THROUGHPUT_CAP).await?;
    let cpu = tree_cpu(server.pid())?;
    let (n, took) = throughput(&server, 8, THROUGHPUT_REQUESTS, THROUGHPUT_CAP).await?;
    f.tput8 = n as f64 / took.as_secs_f64();
    f.cpu8 = tree_cpu(server.pid())?.saturating_sub(cpu) / n.max(1) as u32;
    throughput(&server, 64, 200, THROUGHPUT_CAP).await?;
    let cpu = tree_cpu(server.pid())?;
    let (n, took) = throughput(&server, 64, THROUGHPUT_REQUESTS, THROUGHPUT_CAP).await?;
    f.tput64 = n as f64 / took.as_secs_f64();
    f.cpu64 = tree_cpu(server.pid())?.saturating_sub(cpu) / n.max(1) as u32;
    f.rss_after_throughput = tree_rss_kib(server.pid())?;

    // The 2,000-tool catalog: add the server and a connection, list its tools, then RSS.
    let t = Instant::now();
    add_integration(&server, "many", "many tools", &fx.many.url).await?;
    let listed: Value = server
        .http
        .get(format!("{}/api/tools?integration=many", server.base))
        .send()
        .await?
        .json()
        .await?;
    f.catalog_load = t.elapsed();
    f.catalog_tools = listed.as_array().map_or(0, Vec::len);
    f.rss_catalog = tree_rss_kib(server.pid())?;
    // A call into the big catalog still works.
    let v = execute(
        &server,
        "return await tools.many.org.main.op_1999({ id: 'x' })",
    )
    .await?;
    f.catalog_last_call = v["text"].as_str().unwrap_or("").contains("ok:op_1999");
    if product.label == "ours" && !f.catalog_last_call {
        bail!("ours: call into the 2,000-tool catalog failed: {v}");
    }
    server.stop();
    Ok(())
}

/// Argument that makes this binary the direct client of the floor ([`DirectClient`]).
const DIRECT_CLIENT_ARG: &str = "--direct-client";

/// The floor: the same calls made directly by an rmcp client on one session, from a process of
/// its own, as an agent calling the upstream itself would be (ours, too, is a process apart from
/// the fixture, so every call of both crosses between processes). The driver asks it for one
/// sample at a time, right after each of ours, so that both are measured in the same moments:
/// this shared machine drifts by tens of percent within a minute.
struct DirectClient {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    replies: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl DirectClient {
    async fn start(url: &str) -> anyhow::Result<Self> {
        let mut child = tokio::process::Command::new(std::env::current_exe()?)
            .arg(DIRECT_CLIENT_ARG)
            .arg(url)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().context("direct client stdin")?;
        let stdout = child.stdout.take().context("direct client stdout")?;
        let replies = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
        Ok(Self {
            child,
            stdin,
            replies,
        })
    }

    /// One sample: `pair` (select + get) or `sequential` (100 calls).
    async fn sample(&mut self, what: &str) -> anyhow::Result<Duration> {
        use tokio::io::AsyncWriteExt;
        self.stdin.write_all(format!("{what}\n").as_bytes()).await?;
        self.stdin.flush().await?;
        let line = self
            .replies
            .next_line()
            .await?
            .context("the direct client stopped")?;
        Ok(Duration::from_nanos(line.trim().parse()?))
    }

    async fn stop(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

/// The child behind [`DirectClient`]: one rmcp client on a current-thread runtime; for each
/// line on stdin (`pair` or `sequential`) it makes those calls and prints the nanoseconds taken.
fn direct_client_process(url: &str) -> anyhow::Result<()> {
    use std::io::{BufRead, Write};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
        let client = DirectHandler.serve(transport).await?;
        let peer = client.peer().clone();
        for _ in 0..30 {
            direct_pair(&peer).await?;
        }
        let mut stdout = std::io::stdout().lock();
        for line in std::io::stdin().lock().lines() {
            let t = Instant::now();
            match line?.trim() {
                "pair" => direct_pair(&peer).await?,
                "sequential" => direct_sequential(&peer).await?,
                other => bail!("unknown request {other:?}"),
            }
            writeln!(stdout, "{}", t.elapsed().as_nanos())?;
            stdout.flush()?;
        }
        let _ = client.cancel().await;
        anyhow::Ok(())
    })
}

fn direct_call(name: &'static str) -> CallToolRequestParams {
    CallToolRequestParams::new(name).with_arguments(serde_json::Map::new())
}

async fn direct_pair(peer: &rmcp::Peer<rmcp::RoleClient>) -> anyhow::Result<()> {
    peer.call_tool(direct_call("select_workspace")).await?;
    peer.call_tool(direct_call("get_workspace")).await?;
    Ok(())
}

async fn direct_sequential(peer: &rmcp::Peer<rmcp::RoleClient>) -> anyhow::Result<()> {
    for _ in 0..SEQUENTIAL_CALLS {
        peer.call_tool(direct_call("get_workspace")).await?;
    }
    Ok(())
}

/// A lower bound, not the floor: the same calls made in this process, where the client shares
/// its thread with the fixture, so no thread is ever woken — no real client is placed so.
async fn same_thread_calls(url: &str) -> anyhow::Result<(Vec<Duration>, Vec<Duration>)> {
    let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url);
    let client = DirectHandler.serve(transport).await?;
    let peer = client.peer().clone();
    for _ in 0..30 {
        direct_pair(&peer).await?;
    }
    let mut pair = Vec::new();
    for _ in 0..SEED_RUNS {
        let t = Instant::now();
        direct_pair(&peer).await?;
        pair.push(t.elapsed());
    }
    let mut seq = Vec::new();
    for _ in 0..SEQUENTIAL_RUNS {
        let t = Instant::now();
        direct_sequential(&peer).await?;
        seq.push(t.elapsed());
    }
    let _ = client.cancel().await;
    Ok((pair, seq))
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 100.0 {
        format!("{ms:.0} ms")
    } else if ms >= 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// `original ÷ ours` for costs (time, memory), `ours ÷ original` for rates: above 1 = ours better.
fn ratio(ours: f64, original: f64, higher_is_better: bool) -> String {
    let r = if higher_is_better {
        ours / original
    } else {
        original / ours
    };
    format!("{r:.1}×")
}

fn median<T: PartialOrd + Copy + Default>(mut v: Vec<T>) -> T {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v.get(v.len() / 2).copied().unwrap_or_default()
}

/// Several runs' figures as one: latency samples pooled, per-run scalars as their median.
fn combine(runs: Vec<Figures>) -> Figures {
    let n = runs.len().max(1) as f64;
    let scalar = |pick: fn(&Figures) -> u64| median(runs.iter().map(pick).collect());
    let rate = |pick: fn(&Figures) -> f64| median(runs.iter().map(pick).collect());
    let mut out = Figures {
        token: runs.iter().any(|f| f.token),
        idle_rss: scalar(|f| f.idle_rss),
        seed_kept: runs.iter().map(|f| f.seed_kept).sum(),
        seed_sessions: runs.iter().map(|f| f.seed_sessions).sum::<f64>() / n,
        rss_after_executions: scalar(|f| f.rss_after_executions),
        rss_after_throughput: scalar(|f| f.rss_after_throughput),
        tput8: rate(|f| f.tput8),
        tput64: rate(|f| f.tput64),
        cpu8: median(runs.iter().map(|f| f.cpu8).collect()),
        cpu64: median(runs.iter().map(|f| f.cpu64).collect()),
        catalog_load: median(runs.iter().map(|f| f.catalog_load).collect()),
        catalog_tools: runs.iter().map(|f| f.catalog_tools).min().unwrap_or(0),
        catalog_last_call: runs.iter().all(|f| f.catalog_last_call),
        rss_catalog: scalar(|f| f.rss_catalog),
        ..Figures::default()
    };
    for f in runs {
        out.cold.extend(f.cold);
        out.ret1.extend(f.ret1);
        out.seed.extend(f.seed);
        out.sequential.extend(f.sequential);
        out.floor_pair.extend(f.floor_pair);
        out.floor_sequential.extend(f.floor_sequential);
    }
    out
}

/// `BENCH_PROFILE_SECS=N`: runs only ours, repeating the 100-call execution for N seconds
/// after printing the server's pid, so a profiler can attach (`perf record -g -p <pid>`); each
/// execution is followed by one 100-call sample of the direct client process, and the median of
/// the paired ratios is printed with both p50s.
async fn profile_sequential(secs: u64) -> anyhow::Result<()> {
    let stateful = executor_mcp::testing::serve_stateful().await;
    let (server, _) = start(&ours()).await?;
    add_integration(&server, "bench", "bench", &stateful.url).await?;
    let code = format!(
        "for (let i = 0; i < {SEQUENTIAL_CALLS}; i++) {{ const r = await tools.bench.org.main.get_workspace({{}}); if (!r.ok) throw new Error('call failed'); }} return {SEQUENTIAL_CALLS};"
    );
    for _ in 0..5 {
        execute(&server, &code).await?;
    }
    let mut direct = DirectClient::start(&stateful.url).await?;
    println!("pid {}", server.pid());
    let until = Instant::now() + Duration::from_secs(secs);
    let (mut took, mut floor, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    while Instant::now() < until {
        let t = Instant::now();
        execute(&server, &code).await?;
        let ours = t.elapsed();
        let direct = direct.sample("sequential").await?;
        took.push(ours);
        floor.push(direct);
        ratios.push(ours.as_secs_f64() / direct.as_secs_f64());
    }
    direct.stop().await;
    server.stop();
    let p50 = percentile(&mut took, 0.5);
    let direct_p50 = percentile(&mut floor, 0.5);
    let (_, mut same_thread) = same_thread_calls(&stateful.url).await?;
    let same_thread_p50 = percentile(&mut same_thread, 0.5);
    println!(
        "{} executions of {SEQUENTIAL_CALLS} calls, each followed by {SEQUENTIAL_CALLS} direct calls: \
         p50 {} ({:.0} µs per call); direct {} ({:.2}×; median of the paired ratios {:.2}×); \
         direct on the fixture's thread {} ({:.2}×)",
        took.len(),
        ms(p50),
        p50.as_secs_f64() * 1e6 / SEQUENTIAL_CALLS as f64,
        ms(direct_p50),
        p50.as_secs_f64() / direct_p50.as_secs_f64(),
        median(ratios),
        ms(same_thread_p50),
        p50.as_secs_f64() / same_thread_p50.as_secs_f64()
    );
    Ok(())
}

async fn run() -> anyhow::Result<()> {
    if let Some(secs) = std::env::var("BENCH_PROFILE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        return profile_sequential(secs).await;
    }
    let ours = ours();
    let original_product = original("EXECUTOR_ORIGINAL_BIN", "original");
    let wrapper = original("EXECUTOR_ORIGINAL_WRAPPER", "original (npm wrapper)");
    let fx = Fixtures {
        stateful: executor_mcp::testing::serve_stateful().await,
        many: executor_mcp::testing::serve_many_tools(CATALOG_TOOLS).await,
    };
    println!("ours:     {}", ours.bin.display());
    match &original_product {
        Some(p) => println!("original: {}", p.bin.display()),
        None => println!(
            "original: not available (EXECUTOR_ORIGINAL_BIN unset or missing); measuring ours only"
        ),
    }

    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3)
        .clamp(1, 20);
    let (mut mine_runs, mut theirs_runs) = (Vec::new(), Vec::new());
    let (mut local_pair, mut local_seq) = (Vec::new(), Vec::new());
    for run in 1..=runs {
        let mut mine = Figures::default();
        let mut theirs = Figures::default();
        // Cold starts, interleaved so drift on the machine hits both alike.
        eprintln!("run {run}/{runs}: cold starts…");
        for _ in 0..COLD_STARTS {
            let (server, took) = start(&ours).await?;
            mine.cold.push(took);
            server.stop();
            if let Some(p) = &original_product {
                let (server, took) = start(p).await?;
                theirs.cold.push(took);
                server.stop();
            }
        }
        eprintln!("run {run}/{runs}: ours…");
        measure(&ours, &fx, &mut mine).await?;
        mine_runs.push(mine);
        if let Some(p) = &original_product {
            eprintln!("run {run}/{runs}: the original…");
            measure(p, &fx, &mut theirs).await?;
            theirs_runs.push(theirs);
        }
        let (pair, seq) = same_thread_calls(&fx.stateful.url).await?;
        local_pair.extend(pair);
        local_seq.extend(seq);
    }
    let mut mine = combine(mine_runs);
    let mut theirs = combine(theirs_runs);
    if let Some(w) = &wrapper {
        eprintln!("the original's npm wrapper…");
        for _ in 0..WRAPPER_COLD_STARTS {
            let (server, took) = start(w).await?;
            theirs.wrapper_cold.push(took);
            server.stop();
        }
        let (server, _) = start(w).await?;
        tokio::time::sleep(Duration::from_secs(3)).await;
        theirs.wrapper_idle_rss = tree_rss_kib(server.pid())?;
        server.stop();
    }

    // ---- the table -------------------------------------------------------------------------
    let have = original_product.is_some();
    let mut floor_pair = std::mem::take(&mut mine.floor_pair);
    let floor_p50 = percentile(&mut floor_pair, 0.5);
    let floor_seq_p50 = percentile(&mut mine.floor_sequential, 0.5);
    let local_p50 = percentile(&mut local_pair, 0.5);
    let local_seq_p50 = percentile(&mut local_seq, 0.5);
    let mut rows: Vec<[String; 5]> = Vec::new();
    let mut row = |what: String, o: String, t: Option<String>, r: Option<String>, n: String| {
        rows.push([
            what,
            o,
            t.unwrap_or_else(|| "—".into()),
            r.unwrap_or_else(|| "—".into()),
            n,
        ]);
    };
    let dur_row =
        |what: &str,
         a: Duration,
         b: Option<Duration>,
         notes: String,
         row: &mut dyn FnMut(String, String, Option<String>, Option<String>, String)| {
            row(
                what.into(),
                ms(a),
                b.map(ms),
                b.map(|b| ratio(a.as_secs_f64(), b.as_secs_f64(), false)),
                notes,
            );
        };
    let t = |f: &mut Figures, which: fn(&mut Figures) -> &mut Vec<Duration>, p: f64| {
        percentile(which(f), p)
    };
    let other = |f: &mut Figures, which: fn(&mut Figures) -> &mut Vec<Duration>, p: f64| {
        have.then(|| percentile(which(f), p))
    };

    dur_row(
        "cold start to first 200 (median)",
        t(&mut mine, |f| &mut f.cold, 0.5),
        other(&mut theirs, |f| &mut f.cold, 0.5),
        format!(
            "{} starts each ({COLD_STARTS} per run, interleaved), fresh data dir; probe: ours `GET /api/health`, original `GET /api/integrations` (1.5.9 has no health route)",
            COLD_STARTS * runs
        ),
        &mut row,
    );
    row(
        "idle RSS 3 s after ready".into(),
        mib(mine.idle_rss),
        have.then(|| mib(theirs.idle_rss)),
        have.then(|| ratio(mine.idle_rss as f64, theirs.idle_rss as f64, false)),
        "process tree".into(),
    );
    dur_row(
        "`return 1` over HTTP, p50",
        t(&mut mine, |f| &mut f.ret1, 0.5),
        other(&mut theirs, |f| &mut f.ret1, 0.5),
        format!("{} sequential requests, keep-alive", RETURN_ONE_RUNS * runs),
        &mut row,
    );
    dur_row(
        "`return 1` over HTTP, p99",
        t(&mut mine, |f| &mut f.ret1, 0.99),
        other(&mut theirs, |f| &mut f.ret1, 0.99),
        String::new(),
        &mut row,
    );
    let seed_ours = t(&mut mine, |f| &mut f.seed, 0.5);
    let seed_theirs = other(&mut theirs, |f| &mut f.seed, 0.5);
    dur_row(
        "seed execution (select + get), p50",
        seed_ours,
        seed_theirs,
        format!("{} executions", SEED_RUNS * runs),
        &mut row,
    );
    dur_row(
        "seed execution, p99",
        t(&mut mine, |f| &mut f.seed, 0.99),
        other(&mut theirs, |f| &mut f.seed, 0.99),
        String::new(),
        &mut row,
    );
    row(
        "seed: `get` sees the workspace `select` chose".into(),
        format!("{}/{}", mine.seed_kept, SEED_RUNS * runs),
        have.then(|| format!("{}/{}", theirs.seed_kept, SEED_RUNS * runs)),
        None,
        "same MCP session for both calls of one execution".into(),
    );
    row(
        "seed: MCP sessions opened per execution".into(),
        format!("{:.2}", mine.seed_sessions),
        have.then(|| format!("{:.2}", theirs.seed_sessions)),
        None,
        "`initialize` requests seen by the fixture ÷ runs".into(),
    );
    row(
        "floor: the same two calls, direct rmcp client, one session, p50".into(),
        ms(floor_p50),
        have.then(|| ms(floor_p50)),
        None,
        format!(
            "p99 {}; the client is a process of its own; no server under test",
            ms(percentile(&mut floor_pair, 0.99))
        ),
    );
    row(
        "lower bound: the same two calls, client on the fixture's own thread, p50".into(),
        ms(local_p50),
        have.then(|| ms(local_p50)),
        None,
        format!(
            "no thread is woken per call; seed over it: ours {}",
            ms(seed_ours.saturating_sub(local_p50))
        ),
    );
    row(
        "seed over the floor (p50 − floor)".into(),
        ms(seed_ours.saturating_sub(floor_p50)),
        seed_theirs.map(|s| ms(s.saturating_sub(floor_p50))),
        seed_theirs.map(|s| {
            ratio(
                seed_ours.saturating_sub(floor_p50).as_secs_f64(),
                s.saturating_sub(floor_p50).as_secs_f64(),
                false,
            )
        }),
        String::new(),
    );
    let seq_ours = t(&mut mine, |f| &mut f.sequential, 0.5);
    let seq_theirs = other(&mut theirs, |f| &mut f.sequential, 0.5);
    dur_row(
        &format!("{SEQUENTIAL_CALLS} sequential calls in one execution, p50"),
        seq_ours,
        seq_theirs,
        format!("{} executions", SEQUENTIAL_RUNS * runs),
        &mut row,
    );
    row(
        format!("{SEQUENTIAL_CALLS} direct calls on one session (floor), p50"),
        ms(floor_seq_p50),
        have.then(|| ms(floor_seq_p50)),
        None,
        format!(
            "execution ÷ direct: ours {:.2}{}",
            seq_ours.as_secs_f64() / floor_seq_p50.as_secs_f64(),
            seq_theirs
                .map(|s| format!(
                    ", original {:.2}",
                    s.as_secs_f64() / floor_seq_p50.as_secs_f64()
                ))
                .unwrap_or_default()
        ),
    );
    row(
        format!(
            "lower bound: {SEQUENTIAL_CALLS} direct calls, client on the fixture's own thread, p50"
        ),
        ms(local_seq_p50),
        have.then(|| ms(local_seq_p50)),
        None,
        format!(
            "execution ÷ this: ours {:.2}",
            seq_ours.as_secs_f64() / local_seq_p50.as_secs_f64()
        ),
    );
    for (level, a, b, cpu_a, cpu_b) in [
        (8, mine.tput8, theirs.tput8, mine.cpu8, theirs.cpu8),
        (64, mine.tput64, theirs.tput64, mine.cpu64, theirs.cpu64),
    ] {
        row(
            format!("throughput of `return 1`, {level} in flight"),
            format!("{a:.0}/s"),
            have.then(|| format!("{b:.0}/s")),
            have.then(|| ratio(a, b, true)),
            format!(
                "up to {THROUGHPUT_REQUESTS} executions or {} s, {level} keep-alive connections",
                THROUGHPUT_CAP.as_secs()
            ),
        );
        row(
            format!("server CPU per execution, {level} in flight"),
            ms(cpu_a),
            have.then(|| ms(cpu_b)),
            have.then(|| ratio(cpu_a.as_secs_f64(), cpu_b.as_secs_f64(), false)),
            "user + system time of the server's process tree over the run above ÷ executions"
                .into(),
        );
    }
    row(
        format!("RSS after {RSS_AFTER_EXECUTIONS} executions"),
        mib(mine.rss_after_executions),
        have.then(|| mib(theirs.rss_after_executions)),
        have.then(|| {
            ratio(
                mine.rss_after_executions as f64,
                theirs.rss_after_executions as f64,
                false,
            )
        }),
        "all the executions above, before the throughput runs".into(),
    );
    row(
        "RSS after the throughput runs".into(),
        mib(mine.rss_after_throughput),
        have.then(|| mib(theirs.rss_after_throughput)),
        have.then(|| {
            ratio(
                mine.rss_after_throughput as f64,
                theirs.rss_after_throughput as f64,
                false,
            )
        }),
        format!(
            "the executions above and up to 2 × {} more",
            THROUGHPUT_REQUESTS + 200
        ),
    );
    row(
        format!("add + list the {CATALOG_TOOLS}-tool server"),
        ms(mine.catalog_load),
        have.then(|| ms(theirs.catalog_load)),
        have.then(|| {
            ratio(
                mine.catalog_load.as_secs_f64(),
                theirs.catalog_load.as_secs_f64(),
                false,
            )
        }),
        format!(
            "POST server + connection, GET /api/tools (listed: ours {}{})",
            mine.catalog_tools,
            if have {
                format!(", original {}", theirs.catalog_tools)
            } else {
                String::new()
            }
        ),
    );
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_owned();
    row(
        format!("the last of the {CATALOG_TOOLS} tools (`op_1999`) is callable"),
        yes_no(mine.catalog_last_call),
        have.then(|| yes_no(theirs.catalog_last_call)),
        None,
        "one `tools/list` page of 2,000".into(),
    );
    row(
        format!("RSS after the {CATALOG_TOOLS}-tool catalog is loaded"),
        mib(mine.rss_catalog),
        have.then(|| mib(theirs.rss_catalog)),
        have.then(|| ratio(mine.rss_catalog as f64, theirs.rss_catalog as f64, false)),
        "after the throughput runs; listed with `GET /api/tools?integration=many`".into(),
    );
    if wrapper.is_some() {
        let w = percentile(&mut theirs.wrapper_cold, 0.5);
        row(
            "original via its npm `bin/executor` (node wrapper): cold start".into(),
            "—".into(),
            Some(ms(w)),
            Some(ratio(
                percentile(&mut mine.cold, 0.5).as_secs_f64(),
                w.as_secs_f64(),
                false,
            )),
            format!("{WRAPPER_COLD_STARTS} starts"),
        );
        row(
            "original via its npm wrapper: idle RSS".into(),
            "—".into(),
            Some(mib(theirs.wrapper_idle_rss)),
            Some(ratio(
                mine.idle_rss as f64,
                theirs.wrapper_idle_rss as f64,
                false,
            )),
            "node + the Bun binary".into(),
        );
    }

    println!();
    println!(
        "bearer token sent: ours {}, original {}",
        if mine.token {
            "yes"
        } else {
            "no (none required)"
        },
        if !have {
            "n/a"
        } else if theirs.token {
            "yes"
        } else {
            "no (none required)"
        }
    );
    println!();
    println!(
        "{runs} runs of the whole sequence; latency percentiles pool every run's samples, the other figures are the median of the runs' values."
    );
    println!();
    println!("| measurement | ours | original 1.5.9 | ours better by | notes |");
    println!("|---|---|---|---|---|");
    for r in rows {
        println!("| {} | {} | {} | {} | {} |", r[0], r[1], r[2], r[3], r[4]);
    }
    Ok(())
}
