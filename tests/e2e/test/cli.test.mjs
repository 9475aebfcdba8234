// The `executor` command line against the real binary: `call` (real MCP tools from the fixture,
// unknown tools with suggestions, `--help` tree and leaf), paused calls and `resume`, `tools
// search | describe | integrations`, bad command lines that never reach a server (exit 2), an
// unreachable server (exit 3), the cold-start election of one daemon, `daemon status | stop |
// restart`, server profiles, `service install --print` quoting and `completions`.
//
// Every test runs the CLI with its own throwaway EXECUTOR_DATA_DIR and a free port; every daemon
// started here is stopped with `executor daemon stop` and, as a fallback, killed by the pid in
// its manifest (server-control/server.json), so nothing outlives the test.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, execFileSync } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import path from "node:path";
import { serveMcpServer, closedPort } from "../lib/fixture.mjs";
import { EXECUTOR_BIN, makeDataDir, freePort, freshSlug, rawRequest, pollUntil, show } from "../lib/executor.mjs";

const EXEC_ID = /exec_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
const T = { timeout: 60_000 };

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

// ---- helpers ------------------------------------------------------------------------------------

/** Every CLI child still running, so a hung one is killed at the end. */
const running = new Set();
process.on("exit", () => {
  for (const c of running) {
    try {
      c.kill("SIGKILL");
    } catch {}
  }
});

/**
 * Run the CLI once: `{code, signal, stdout, stderr}`. The environment is scrubbed of anything that
 * would choose another server or token; EXECUTOR_DATA_DIR / EXECUTOR_SCOPE_DIR are `dataDir`.
 */
function cli(args, { dataDir, env = {}, input, timeoutMs = 45_000 } = {}) {
  if (!fs.existsSync(EXECUTOR_BIN)) throw new Error(`executor binary not found at ${EXECUTOR_BIN}`);
  const base = { ...process.env };
  for (const k of ["EXECUTOR_API_KEY", "EXECUTOR_BASE_URL", "EXECUTOR_SERVER", "PORT", "EXECUTOR_EXECUTION_TIMEOUT"]) delete base[k];
  const fullEnv = { ...base, NO_COLOR: "1", RUST_BACKTRACE: "1", ...(dataDir ? { EXECUTOR_DATA_DIR: dataDir, EXECUTOR_SCOPE_DIR: dataDir } : {}), ...env };
  return new Promise((resolve) => {
    const child = spawn(EXECUTOR_BIN, args, { cwd: dataDir, env: fullEnv, stdio: ["pipe", "pipe", "pipe"] });
    running.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      stderr += `\n[test] killed after ${timeoutMs} ms`;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.once("error", (e) => {
      stderr += `\n[spawn error] ${e}`;
    });
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      running.delete(child);
      resolve({ code, signal, stdout, stderr, args });
    });
    child.stdin.on("error", () => {});
    if (input !== undefined) child.stdin.end(input);
    else child.stdin.end();
  });
}

/** Assertion message: the command and what it printed. */
const said = (r) => `\n$ executor ${r.args.map((a) => (/[\s'"{}]/.test(a) ? `'${a}'` : a)).join(" ")}\n--- exit: ${r.code} ${r.signal ?? ""}\n--- stdout:\n${r.stdout.slice(-3000)}\n--- stderr:\n${r.stderr.slice(-3000)}`;

/** No crash: no Rust panic, no backtrace, no signal death. */
function noCrash(r) {
  assert.equal(r.signal, null, `killed by a signal${said(r)}`);
  assert.doesNotMatch(r.stderr, /panicked|stack backtrace|RUST_BACKTRACE/i, `crash output${said(r)}`);
}

/** Exit `code`, no crash. */
function exits(r, code) {
  noCrash(r);
  assert.equal(r.code, code, `expected exit ${code}${said(r)}`);
}

const manifestPath = (dataDir) => path.join(dataDir, "server-control", "server.json");
/**
 * The manifest, at once: a server writes it before it serves, so once `daemon run` / `daemon
 * restart` has seen it answer, server.json is there.
 */
const awaitManifest = (dataDir) => readManifest(dataDir);
function readManifest(dataDir) {
  try {
    return JSON.parse(fs.readFileSync(manifestPath(dataDir), "utf8"));
  } catch {
    return null;
  }
}
function readToken(dataDir) {
  return JSON.parse(fs.readFileSync(path.join(dataDir, "server-control", "auth.json"), "utf8")).token;
}
/** Whether `pid` is a live process (an exited one awaiting its reaper, state Z, counts as gone). */
function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return e.code === "EPERM";
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return process.platform !== "linux";
  }
}

/** Pids of `executor daemon run --foreground --port <port>` processes (a /proc scan). */
function daemonPids(port) {
  const pids = [];
  for (const ent of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(ent)) continue;
    let argv;
    try {
      argv = fs.readFileSync(`/proc/${ent}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    if (!alive(Number(ent))) continue;
    const i = argv.indexOf("daemon");
    if (i < 0 || argv[i + 1] !== "run" || !argv.includes("--foreground")) continue;
    const p = argv.indexOf("--port");
    if (p >= 0 && argv[p + 1] === String(port)) pids.push(Number(ent));
  }
  return pids;
}

/** Stop whatever daemon this data dir / port has: `daemon stop`, then SIGKILL by manifest pid / port. */
async function stopDaemon(dataDir, port) {
  const pid = readManifest(dataDir)?.pid;
  await cli(["daemon", "stop", "--base-url", `http://127.0.0.1:${port}`], { dataDir, timeoutMs: 20_000 }).catch(() => {});
  for (const p of [pid, ...daemonPids(port)]) {
    if (p && alive(p)) {
      try {
        process.kill(p, "SIGKILL");
      } catch {}
    }
  }
}

/** A fresh data dir + port, its daemon stopped and the dir removed at the end of the file. */
async function fresh(prefix = "executor-cli-") {
  const dataDir = await makeDataDir(prefix);
  const port = await freePort();
  cleanups.push(async () => {
    await stopDaemon(dataDir, port);
    await fsp.rm(dataDir, { recursive: true, force: true });
  });
  const origin = `http://127.0.0.1:${port}`;
  return { dataDir, port, origin, run: (args, opts = {}) => cli(args, { dataDir, ...opts }) };
}

/** `fresh()` plus a background daemon (`executor daemon run --port P`). */
async function daemon() {
  const d = await fresh();
  const r = await d.run(["daemon", "run", "--port", String(d.port)]);
  exits(r, 0);
  assert.match(r.stdout, new RegExp(`running at http://127\\.0\\.0\\.1:${d.port}`), said(r));
  const m = await awaitManifest(d.dataDir);
  assert.ok(m, "the daemon never wrote its manifest");
  assert.match(r.stdout, new RegExp(`\\(pid ${m.pid}\\)`), said(r));
  return d;
}

/** Register the MCP fixture as integration `slug` with an org connection `main`, over the HTTP API. */
async function registerFixture(d, fixtureUrl, slug) {
  const headers = { authorization: `Bearer ${readToken(d.dataDir)}`, "content-type": "application/json" };
  const post = (p, body) => rawRequest(d.port, "POST", p, { body: JSON.stringify(body), headers });
  const add = await post("/api/mcp/servers", { transport: "remote", name: "CLI fixture", endpoint: fixtureUrl, slug, remoteTransport: "streamable-http" });
  assert.equal(add.status, 200, show(add.body));
  const conn = await post("/api/connections", { owner: "org", name: "main", integration: slug, template: "none", value: "" });
  assert.ok(conn.status >= 200 && conn.status < 300, show(conn.body));
}

/** A TCP server that records (and immediately closes) every connection. */
async function recordingServer() {
  const conns = [];
  const server = net.createServer((s) => {
    conns.push(Date.now());
    s.destroy();
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise((r) => server.close(() => r())));
  return { port: server.address().port, connections: () => conns.length };
}

// ---- shared daemon with the fixture registered ----------------------------------------------------

let fixture;
let shared; // {dataDir, port, origin, run}
let slug;
const U = () => ["--base-url", shared.origin];

before(async () => {
  fixture = await serveMcpServer();
  cleanups.push(() => fixture.close());
  shared = await daemon();
  slug = freshSlug("fx");
  await registerFixture(shared, fixture.url, slug);
});

// ---- call ------------------------------------------------------------------------------------------

test("call: a real MCP tool by space-separated, dotted and mixed paths, args inline or @file, --json", T, async () => {
  const expected = { content: [{ type: "text", text: "echo:hi" }] };
  for (const pathArgs of [[slug, "org", "main", "echo"], [`${slug}.org.main.echo`], [slug, "org.main", "echo"]]) {
    const r = await shared.run(["call", ...pathArgs, '{"message":"hi"}', ...U()]);
    exits(r, 0);
    assert.deepEqual(JSON.parse(r.stdout), expected, said(r));
    // Pretty JSON of the unwrapped data, not the {ok,data} envelope.
    assert.ok(r.stdout.startsWith("{\n  "), said(r));
    assert.doesNotMatch(r.stdout, /"ok"/, said(r));
  }

  const file = path.join(shared.dataDir, "args.json");
  await fsp.writeFile(file, JSON.stringify({ message: "from file" }));
  const f = await shared.run(["call", slug, "org", "main", "echo", `@${file}`, ...U()]);
  exits(f, 0);
  assert.equal(JSON.parse(f.stdout).content[0].text, "echo:from file", said(f));

  const s = await shared.run(["call", slug, "org", "main", "structured_tool", '{"n":3}', ...U()]);
  exits(s, 0);
  assert.deepEqual(JSON.parse(s.stdout).structuredContent, { doubled: 6, label: "n=3" }, said(s));

  const j = await shared.run(["call", slug, "org", "main", "echo", '{"message":"hi"}', "--json", ...U()]);
  exits(j, 0);
  const outcome = JSON.parse(j.stdout);
  assert.equal(outcome.status, "completed", said(j));
  assert.equal(outcome.isError, false, said(j));
  assert.equal(typeof outcome.text, "string", said(j));
  assert.deepEqual(outcome.structured.result.data, expected, said(j));
  assert.equal(outcome.structured.result.ok, true, said(j));
});

test("call: a tool error is its message on stderr and exit 1", T, async () => {
  const r = await shared.run(["call", slug, "org", "main", "fail_tool", ...U()]);
  exits(r, 1);
  assert.equal(r.stdout, "", said(r));
  assert.match(r.stderr, /fixture failure: something broke/, said(r));
});

test("a long wait draws a spinner on stderr at a terminal, and nothing when stderr is not one", T, async (t) => {
  const args = ["call", slug, "org", "main", "slow", '{"ms":1500}', ...U()];
  const plain = await shared.run(args);
  exits(plain, 0);
  assert.equal(plain.stderr, "", `no terminal, no spinner${said(plain)}`);
  if (spawnSync("script", ["--version"]).status !== 0) return t.skip("util-linux `script` (a pty for the command) is not installed");
  // `script` runs the command on a pseudo-terminal and copies what it draws to our stdout.
  const quote = (a) => `'${a.replace(/'/g, `'\\''`)}'`;
  const command = [EXECUTOR_BIN, ...args].map(quote).join(" ");
  const env = { ...process.env, EXECUTOR_DATA_DIR: shared.dataDir, EXECUTOR_SCOPE_DIR: shared.dataDir, TERM: "xterm" };
  delete env.EXECUTOR_API_KEY;
  // Not spawnSync: the fixture answering the call lives in this process's event loop.
  const tty = await new Promise((resolve) => {
    const child = spawn("script", ["-qec", command, "/dev/null"], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stdout += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    child.once("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout });
    });
  });
  assert.equal(tty.status, 0, tty.stdout);
  assert.match(tty.stdout, /Waiting for http:\/\/127\.0\.0\.1:\d+/, `the spinner's message at a terminal:\n${tty.stdout}`);
  assert.match(tty.stdout, /workspace/i, `and the tool's answer after it:\n${tty.stdout}`);
});

test("call: an unknown tool is exit 1 with 'Did you mean:' suggestions", T, async () => {
  const r = await shared.run(["call", slug, "org", "main", "ecko", '{"message":"hi"}', ...U()]);
  exits(r, 1);
  assert.match(r.stderr, new RegExp(`Tool not found: ${slug}\\.org\\.main\\.ecko`), said(r));
  assert.match(r.stderr, /Did you mean:/, said(r));
  assert.match(r.stderr, new RegExp(`^\\s+${slug}\\.org\\.main\\.echo$`, "m"), said(r));
});

test("call --help: the tool tree, --match / --limit, a leaf, an unknown prefix", T, async () => {
  const top = await shared.run(["call", "--help", ...U()]);
  exits(top, 0);
  assert.match(top.stdout, /Subcommands:/, said(top));
  assert.match(top.stdout, new RegExp(`^\\s+${slug}\\s+group, 6 tools$`, "m"), said(top));
  assert.match(top.stdout, /^\s+executor\s+group, \d+ tools$/m, said(top));

  const group = await shared.run(["call", slug, "org", "main", "--help", ...U()]);
  exits(group, 0);
  assert.match(group.stdout, /Showing 6 of 6 subcommands/, said(group));
  for (const t of ["echo", "fail_tool", "get_workspace", "select_workspace", "slow", "structured_tool"]) {
    assert.match(group.stdout, new RegExp(`^\\s+${t}\\s+tool$`, "m"), `${t}${said(group)}`);
  }

  const filtered = await shared.run(["call", slug, "org", "main", "--help", "--match", "work", "--limit", "1", ...U()]);
  exits(filtered, 0);
  assert.match(filtered.stdout, /Filtered by: "work"/, said(filtered));
  assert.match(filtered.stdout, /Showing 1 of 2 subcommands \(limit 1\)/, said(filtered));
  assert.match(filtered.stdout, /^\s+get_workspace\s+tool$/m, said(filtered));
  assert.doesNotMatch(filtered.stdout, /select_workspace|echo/, said(filtered));

  const leaf = await shared.run(["call", slug, "org", "main", "echo", "--help", ...U()]);
  exits(leaf, 0);
  assert.match(leaf.stdout, new RegExp(`^Tool: ${slug}\\.org\\.main\\.echo$`, "m"), said(leaf));
  assert.match(leaf.stdout, /Echoes its `message` argument/, said(leaf));
  assert.match(leaf.stdout, /^Input:$/m, said(leaf));
  assert.match(leaf.stdout, /message: string;/, said(leaf));
  assert.match(leaf.stdout, /^Output:$/m, said(leaf));

  const unknown = await shared.run(["call", "nope_nothing", "--help", ...U()]);
  exits(unknown, 1);
  assert.match(unknown.stderr, /No tool path starts with "nope_nothing"/, said(unknown));
});

// ---- paused calls and resume ---------------------------------------------------------------------

/** `executor coreTools policies create` pauses for approval; returns the execution id. */
async function pausedPolicyCreate(pattern) {
  const r = await shared.run(["call", "executor", "coreTools", "policies", "create", JSON.stringify({ owner: "org", pattern, action: "block" }), ...U()]);
  exits(r, 0);
  const id = EXEC_ID.exec(r.stdout)?.[0];
  assert.ok(id, `no execution id${said(r)}`);
  assert.match(r.stdout, new RegExp(`Approve in browser: ${shared.origin.replace(/\./g, "\\.")}/resume/${id}`), said(r));
  for (const action of ["accept", "decline", "cancel"]) {
    assert.match(r.stdout, new RegExp(`executor resume --execution-id ${id} .*--action ${action}`), `${action}${said(r)}`);
  }
  return id;
}

test("a paused call: resume accept completes it, decline and cancel fail it, an unknown id is exit 1", T, async () => {
  const pattern = `${freshSlug("cli")}.*`;
  const id = await pausedPolicyCreate(pattern);
  const accepted = await shared.run(["resume", "--execution-id", id, "--action", "accept", ...U()]);
  exits(accepted, 0);
  const policy = JSON.parse(accepted.stdout);
  assert.equal(policy.pattern, pattern, said(accepted));
  assert.equal(policy.action, "block", said(accepted));
  const list = await shared.run(["call", "executor", "coreTools", "policies", "list", ...U()]);
  exits(list, 0);
  assert.ok(JSON.parse(list.stdout).items.some((p) => p.pattern === pattern), said(list));

  const declinedPattern = `${freshSlug("cli")}.*`;
  const id2 = await pausedPolicyCreate(declinedPattern);
  const declined = await shared.run(["resume", "--execution-id", id2, "--action", "decline", ...U()]);
  exits(declined, 1);
  assert.match(declined.stderr, /declined/, said(declined));

  const id3 = await pausedPolicyCreate(`${freshSlug("cli")}.*`);
  const cancelled = await shared.run(["resume", "--execution-id", id3, "--action", "cancel", "--json", ...U()]);
  exits(cancelled, 1);
  const outcome = JSON.parse(cancelled.stdout);
  assert.equal(outcome.isError, true, said(cancelled));
  assert.match(outcome.text, /cancelled/, said(cancelled));

  const after = await shared.run(["call", "executor", "coreTools", "policies", "list", ...U()]);
  exits(after, 0);
  assert.ok(!JSON.parse(after.stdout).items.some((p) => p.pattern === declinedPattern), `declined policy was created${said(after)}`);

  const unknown = await shared.run(["resume", "--execution-id", "exec_00000000-0000-0000-0000-000000000000", ...U()]);
  exits(unknown, 1);
  assert.match(unknown.stderr, /no paused execution/i, said(unknown));
});

test("a paused call with --json: the whole outcome {status:'paused', text, structured}, exit 0", T, async () => {
  const args = JSON.stringify({ owner: "org", pattern: `${freshSlug("cli")}.*`, action: "block" });
  const r = await shared.run(["call", "executor", "coreTools", "policies", "create", args, "--json", ...U()]);
  exits(r, 0);
  const outcome = JSON.parse(r.stdout);
  const id = outcome.structured?.executionId;
  try {
    assert.equal(outcome.status, "paused", said(r));
    assert.match(id ?? "", EXEC_ID, said(r));
    assert.equal(outcome.structured.status, "waiting_for_interaction", said(r));
    assert.match(outcome.text, new RegExp(id), said(r));
    // The spec's `Paused = {status:"paused", text, structured}` (no `isError`: it did not end).
    assert.deepEqual(Object.keys(outcome).sort(), ["status", "structured", "text"], said(r));
  } finally {
    if (id) await shared.run(["resume", "--execution-id", id, "--action", "cancel", ...U()]);
  }
});

// ---- tools -----------------------------------------------------------------------------------------

test("tools search / describe / integrations: tables and --json", T, async () => {
  const search = await shared.run(["tools", "search", "echo", "--namespace", slug, ...U()]);
  exits(search, 0);
  assert.match(search.stdout, /^PATH\s+DESCRIPTION$/m, said(search));
  assert.match(search.stdout, new RegExp(`^${slug}\\.org\\.main\\.echo\\s+Echoes its \`message\` argument$`, "m"), said(search));

  const limited = await shared.run(["tools", "search", "workspace", "--namespace", slug, "--limit", "1", "--json", ...U()]);
  exits(limited, 0);
  const sj = JSON.parse(limited.stdout);
  assert.equal(sj.items.length, 1, said(limited));
  assert.match(sj.items[0].path, new RegExp(`^${slug}\\.org\\.main\\.(select|get)_workspace$`), said(limited));
  assert.equal(sj.items[0].integration, slug, said(limited));
  assert.equal(sj.hasMore, true, said(limited));

  const describe = await shared.run(["tools", "describe", `${slug}.org.main.echo`, ...U()]);
  exits(describe, 0);
  assert.match(describe.stdout, new RegExp(`^Tool: ${slug}\\.org\\.main\\.echo$`, "m"), said(describe));
  assert.match(describe.stdout, /^Input:$/m, said(describe));
  assert.match(describe.stdout, /message: string;/, said(describe));
  assert.match(describe.stdout, /^Output:$/m, said(describe));

  const dj = await shared.run(["tools", "describe", `${slug}.org.main.echo`, "--json", ...U()]);
  exits(dj, 0);
  const d = JSON.parse(dj.stdout);
  assert.equal(d.path, `${slug}.org.main.echo`, said(dj));
  assert.equal(d.description, "Echoes its `message` argument", said(dj));
  assert.match(d.inputTypeScript, /message: string;/, said(dj));

  const missing = await shared.run(["tools", "describe", `${slug}.org.main.nope`, ...U()]);
  exits(missing, 1);
  assert.match(missing.stderr, /Tool not found/, said(missing));

  const ints = await shared.run(["tools", "integrations", ...U()]);
  exits(ints, 0);
  assert.match(ints.stdout, /^ID\s+KIND\s+TOOLS\s+DESCRIPTION$/m, said(ints));
  assert.match(ints.stdout, new RegExp(`^${slug}\\s+mcp\\s+6\\s+CLI fixture$`, "m"), said(ints));
  assert.match(ints.stdout, /^executor\s+built-in\s+\d+\s+/m, said(ints));

  const q = await shared.run(["tools", "integrations", "--query", slug, "--limit", "1", "--json", ...U()]);
  exits(q, 0);
  const ij = JSON.parse(q.stdout);
  assert.equal(ij.items.length, 1, said(q));
  assert.equal(ij.items[0].id, slug, said(q));
  assert.equal(ij.items[0].kind, "mcp", said(q));
  assert.equal(ij.items[0].toolCount, 6, said(q));
});

// ---- bad command lines -------------------------------------------------------------------------------

const BAD = (dir) => [
  { name: "malformed JSON", args: ["call", "some", "tool", "{bad"], err: /invalid JSON/ },
  { name: "@missing file", args: ["call", "some", "tool", `@${path.join(dir, "missing.json")}`], err: /missing\.json/ },
  { name: "@file with an array", args: ["call", "some", "tool", `@${path.join(dir, "array.json")}`], err: /JSON object/ },
  { name: "a non-object inline", args: ["call", "some", "tool", "[1]"], err: /.+/ },
  { name: "unknown flag", args: ["call", "some", "tool", "--frob"], err: /--frob/ },
  { name: "two argument objects", args: ["call", "some", "tool", '{"a":1}', '{"b":2}'], err: /.+/ },
  { name: "bad resume action", args: ["resume", "--execution-id", "exec_x", "--action", "frob"], err: /frob/ },
];

test("bad command lines: one line on stderr, exit 2, and no request reaches the server", T, async () => {
  const d = await fresh();
  await fsp.writeFile(path.join(d.dataDir, "array.json"), "[1,2]");
  const rec = await recordingServer();
  for (const bad of BAD(d.dataDir)) {
    const r = await d.run([...bad.args, "--base-url", `http://127.0.0.1:${rec.port}`]);
    exits(r, 2);
    assert.match(r.stderr, bad.err, `${bad.name}${said(r)}`);
    assert.equal(r.stderr.trim().split("\n").length, 1, `${bad.name}: one line${said(r)}`);
    assert.equal(r.stdout, "", `${bad.name}${said(r)}`);
    assert.equal(rec.connections(), 0, `${bad.name}: a connection reached the server${said(r)}`);
  }
  // Control: a well-formed call does reach the recorder (which hangs up on it).
  const ok = await d.run(["call", "some", "tool", "--base-url", `http://127.0.0.1:${rec.port}`]);
  noCrash(ok);
  assert.notEqual(ok.code, 0, said(ok));
  assert.ok(rec.connections() > 0, `the control call never connected${said(ok)}`);
});

test("bad command lines against a local port where nothing listens: exit 2, no daemon started", T, async () => {
  const d = await fresh();
  await fsp.writeFile(path.join(d.dataDir, "array.json"), "[1,2]");
  for (const bad of BAD(d.dataDir)) {
    const r = await d.run([...bad.args, "--base-url", `http://localhost:${d.port}`]);
    exits(r, 2);
    assert.match(r.stderr, bad.err, `${bad.name}${said(r)}`);
    assert.equal(fs.existsSync(manifestPath(d.dataDir)), false, `${bad.name}: a daemon was started${said(r)}`);
  }
  const both = await d.run(["call", "some", "tool", "--server", "x", "--base-url", d.origin]);
  exits(both, 2);
  assert.match(both.stderr, /cannot be used with/, said(both));
  assert.equal(daemonPids(d.port).length, 0);
  assert.equal(fs.existsSync(manifestPath(d.dataDir)), false);
});

test("an unreachable non-local server (https, closed port) is exit 3 naming the origin", T, async () => {
  const d = await fresh();
  const port = await closedPort();
  const origin = `https://127.0.0.1:${port}`;
  for (const args of [
    ["call", "executor", "coreTools", "providers", "list", "--base-url", origin],
    ["tools", "search", "x", "--base-url", origin],
    ["resume", "--execution-id", "exec_x", "--base-url", origin],
  ]) {
    const r = await d.run(args);
    exits(r, 3);
    assert.ok(r.stderr.includes(origin), `the message names ${origin}${said(r)}`);
  }
  assert.equal(fs.existsSync(manifestPath(d.dataDir)), false, "https is never auto-started");
  assert.equal(daemonPids(port).length, 0);
});

// ---- auto-start and election ------------------------------------------------------------------------

test("6 concurrent cold calls on localhost elect exactly one daemon, and all get answers", T, async () => {
  const d = await fresh();
  const runs = await Promise.all(
    Array.from({ length: 6 }, () => d.run(["call", "executor", "coreTools", "providers", "list", "--base-url", `http://localhost:${d.port}`])),
  );
  for (const r of runs) {
    exits(r, 0);
    assert.ok(Array.isArray(JSON.parse(r.stdout)), said(r));
  }
  const m = await awaitManifest(d.dataDir);
  assert.ok(m, "no manifest after the cold start");
  assert.equal(m.kind, "daemon", show(m));
  assert.equal(m.url, d.origin, show(m));
  assert.ok(alive(m.pid), show(m));
  assert.deepEqual(daemonPids(d.port), [m.pid], `exactly one daemon process, the manifest's (${show(m)})`);

  // The same host by any loopback name: [::1] reaches that daemon and starts no other.
  const v6 = await d.run(["call", "executor", "coreTools", "providers", "list", "--base-url", `http://[::1]:${d.port}`]);
  exits(v6, 0);
  assert.deepEqual(daemonPids(d.port), [m.pid]);
  // No --base-url: the data dir's running server is chosen.
  const implicit = await d.run(["call", "executor", "coreTools", "providers", "list"]);
  exits(implicit, 0);
  assert.deepEqual(daemonPids(d.port), [m.pid]);
});

// ---- daemon lifecycle -----------------------------------------------------------------------------

test("daemon status / stop / restart: exit 0 running, 3 stopped; stop removes the manifest", T, async () => {
  const d = await daemon();
  const st = await d.run(["daemon", "status", "--base-url", d.origin]);
  exits(st, 0);
  const m1 = await awaitManifest(d.dataDir);
  assert.ok(m1 && alive(m1.pid), show(m1));
  assert.match(st.stdout, new RegExp(`pid ${m1.pid}`), said(st));
  assert.ok(st.stdout.includes(d.origin), said(st));
  assert.ok(st.stdout.includes(`Data directory: ${d.dataDir}`), said(st));
  // Without --base-url: the data dir's running server.
  exits(await d.run(["daemon", "status"]), 0);

  const rs = await d.run(["daemon", "restart", "--base-url", d.origin]);
  exits(rs, 0);
  const m2 = await awaitManifest(d.dataDir);
  assert.ok(m2 && alive(m2.pid), show(m2));
  assert.notEqual(m2.pid, m1.pid, "restart runs a new process");
  assert.equal(alive(m1.pid), false, "the old process is gone");
  assert.equal(m2.url, d.origin);
  assert.match(rs.stdout, new RegExp(`pid ${m2.pid}`), said(rs));
  exits(await d.run(["daemon", "status", "--base-url", d.origin]), 0);

  const stop = await d.run(["daemon", "stop", "--base-url", d.origin]);
  exits(stop, 0);
  assert.equal(alive(m2.pid), false, "stop waits for the exit");
  assert.equal(fs.existsSync(manifestPath(d.dataDir)), false, "stop removes the manifest");
  assert.deepEqual(daemonPids(d.port), []);

  const st2 = await d.run(["daemon", "status", "--base-url", d.origin]);
  exits(st2, 3);
  assert.match(st2.stdout + st2.stderr, /not running/, said(st2));
  // Status never starts one.
  assert.deepEqual(daemonPids(d.port), []);
  assert.equal(fs.existsSync(manifestPath(d.dataDir)), false);
});

// ---- profiles ------------------------------------------------------------------------------------

test("server profiles: add / list / use / remove, --server reaches the server, --server with --base-url is exit 2", T, async () => {
  const d = await daemon();
  const file = path.join(d.dataDir, "server-connections.json");
  const dead = `https://127.0.0.1:${await closedPort()}`;

  const empty = await d.run(["server", "list"]);
  exits(empty, 0);

  exits(await d.run(["server", "add", "local", `http://localhost:${d.port}`, "--display-name", "Local one"]), 0);
  const team = await d.run(["server", "add", "team", dead, "--token-stdin", "--default"], { input: "secret-token\n" });
  exits(team, 0);
  assert.equal(fs.statSync(file).mode & 0o777, 0o600, "server-connections.json is 0600");

  const list = await d.run(["server", "list"]);
  exits(list, 0);
  assert.match(list.stdout, new RegExp(`^\\s+local\\s+http://localhost:${d.port}\\s+Local one\\s+env-auth$`, "m"), said(list));
  assert.match(list.stdout, new RegExp(`^\\*\\s+team\\s+${dead.replace(/\./g, "\\.")}\\s+stored-auth$`, "m"), said(list));
  assert.doesNotMatch(list.stdout, /secret-token/, "the token is not printed");

  // The default profile (team, dead) is chosen → exit 3 naming it.
  const viaDefault = await d.run(["call", "executor", "coreTools", "providers", "list"]);
  exits(viaDefault, 3);
  assert.ok(viaDefault.stderr.includes(dead), said(viaDefault));

  const viaLocal = await d.run(["call", "executor", "coreTools", "providers", "list", "--server", "local"]);
  exits(viaLocal, 0);
  assert.ok(Array.isArray(JSON.parse(viaLocal.stdout)), said(viaLocal));

  const both = await d.run(["call", "executor", "coreTools", "providers", "list", "--server", "local", "--base-url", d.origin]);
  exits(both, 2);
  const noSuch = await d.run(["call", "executor", "coreTools", "providers", "list", "--server", "nope"]);
  exits(noSuch, 2);
  assert.match(noSuch.stderr, /nope/, said(noSuch));

  exits(await d.run(["server", "use", "local"]), 0);
  const list2 = await d.run(["server", "list"]);
  assert.match(list2.stdout, /^\*\s+local\s/m, said(list2));
  assert.match(list2.stdout, /^\s+team\s/m, said(list2));
  exits(await d.run(["call", "executor", "coreTools", "providers", "list"]), 0);
  exits(await d.run(["daemon", "status"]), 0);

  exits(await d.run(["server", "remove", "team"]), 0);
  exits(await d.run(["server", "remove", "team"]), 1);
  exits(await d.run(["server", "use", "nope"]), 1);
  const list3 = await d.run(["server", "list"]);
  exits(list3, 0);
  assert.doesNotMatch(list3.stdout, /team/, said(list3));
  const saved = JSON.parse(fs.readFileSync(file, "utf8"));
  assert.equal(saved.defaultProfile, "local", show(saved));
  assert.deepEqual(saved.profiles.map((p) => p.name), ["local"], show(saved));
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);

  // rotate-token: the running server keeps the old token until it restarts.
  const old = readToken(d.dataDir);
  const rot = await d.run(["server", "rotate-token"]);
  exits(rot, 0);
  assert.notEqual(readToken(d.dataDir), old);
  exits(await d.run(["daemon", "restart", "--base-url", d.origin]), 0);
  exits(await d.run(["call", "executor", "coreTools", "providers", "list", "--server", "local"]), 0);
});

test("a profile's --token-stdin token is sent as the bearer; a 401 is exit 1 naming the origin", T, async () => {
  const d = await fresh();
  const seen = [];
  const srv = http.createServer((req, res) => {
    seen.push({ method: req.method, url: req.url, authorization: req.headers.authorization });
    res.writeHead(401, { "content-type": "application/json" });
    res.end('{"error":"unauthorized"}');
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  cleanups.push(() => new Promise((r) => srv.close(() => r())));
  const origin = `http://127.0.0.1:${srv.address().port}`;
  exits(await d.run(["server", "add", "stored", origin, "--token-stdin"], { input: "tok-123" }), 0);
  const r = await d.run(["call", "executor", "coreTools", "providers", "list", "--server", "stored"]);
  exits(r, 1);
  assert.ok(r.stderr.includes(origin), said(r));
  assert.match(r.stderr, /401/, said(r));
  assert.ok(seen.length > 0, "no request reached the profile's server");
  assert.ok(seen.every((q) => q.authorization === "Bearer tok-123"), show(seen));
  assert.equal(fs.existsSync(manifestPath(d.dataDir)), false, "a reachable server is never replaced by an auto-started one");
});

// ---- service and completions -----------------------------------------------------------------------

test("service install --print: a systemd unit quoting a data dir with a space and %", { ...T, skip: process.platform !== "linux" && "systemd units are Linux only" }, async () => {
  const parent = await makeDataDir("executor-cli-svc-");
  cleanups.push(() => fsp.rm(parent, { recursive: true, force: true }));
  const dataDir = path.join(parent, "my data 100%");
  await fsp.mkdir(dataDir);
  const r = await cli(["service", "install", "--print", "--port", "4999"], { dataDir });
  exits(r, 0);
  const unit = r.stdout;
  assert.match(unit, /^\[Service\]$/m, said(r));
  const exec = /^ExecStart=(.*)$/m.exec(unit)?.[1];
  assert.ok(exec, said(r));
  assert.ok(exec.startsWith(`"${EXECUTOR_BIN}"`), said(r));
  assert.match(exec, /"daemon" "run" "--foreground" "--port" "4999"/, said(r));
  const escaped = dataDir.replace(/%/g, "%%");
  assert.ok(unit.includes(`Environment="EXECUTOR_DATA_DIR=${escaped}"`), said(r));
  // Every % is doubled: no single % remains in any line naming the data dir.
  for (const line of unit.split("\n").filter((l) => l.includes("my data"))) {
    assert.doesNotMatch(line.replace(/%%/g, ""), /%/, `unescaped % in ${line}`);
  }
  assert.match(unit, /^\[Install\]$/m, said(r));
  assert.equal(fs.readdirSync(dataDir).length, 0, "--print writes nothing");
});

function userSystemdWorks() {
  try {
    execFileSync("systemctl", ["--user", "show-environment"], { stdio: "ignore", timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

test("service install / status / uninstall round trip (systemd --user)", T, async (t) => {
  if (process.platform !== "linux" || !userSystemdWorks()) {
    t.skip("`systemctl --user show-environment` fails here: no user systemd manager to install into");
    return;
  }
  const d = await fresh();
  cleanups.push(() => d.run(["service", "uninstall"]));
  exits(await d.run(["service", "install", "--port", String(d.port)]), 0);
  const up = await pollUntil(async () => (await d.run(["service", "status"])).code === 0, { timeoutMs: 15_000, intervalMs: 250 });
  assert.ok(up, "service status never reported serving");
  exits(await d.run(["call", "executor", "coreTools", "providers", "list", "--base-url", d.origin]), 0);
  exits(await d.run(["service", "uninstall"]), 0);
  const st = await d.run(["service", "status"]);
  exits(st, 3);
});

test("completions bash | zsh | fish print a script; an unknown shell is exit 2", T, async () => {
  const d = await fresh();
  const marks = { bash: /_executor\(\)|complete -F/, zsh: /^#compdef executor/m, fish: /complete -c executor/ };
  for (const [shell, re] of Object.entries(marks)) {
    const r = await d.run(["completions", shell]);
    exits(r, 0);
    assert.match(r.stdout, re, `${shell}${said(r)}`);
    assert.match(r.stdout, /daemon/, `${shell} knows the subcommands`);
  }
  exits(await d.run(["completions", "tcsh-nope"]), 2);
  assert.equal(fs.existsSync(manifestPath(d.dataDir)), false);
});
