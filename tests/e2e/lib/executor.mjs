// Harness: run the real `executor` binary (`executor web`) on 127.0.0.1 with a
// throwaway data dir and talk to it over plain HTTP.
//
// Environment:
//   EXECUTOR_BIN              path to the binary (default <repo>/target/debug/executor)
//   EXECUTOR_E2E_EXTRA_ARGS   extra args appended after `web …` (whitespace separated)
//   EXECUTOR_E2E_AUTH_TOKEN   bearer token to send if the server's cannot be discovered
//   EXECUTOR_E2E_VERBOSE=1    echo the binary's stdout/stderr live
import { spawn } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, "..", "..", "..");
export const EXECUTOR_BIN = process.env.EXECUTOR_BIN
  ? path.resolve(process.env.EXECUTOR_BIN)
  : path.join(REPO_ROOT, "target", "debug", "executor");
const VERBOSE = process.env.EXECUTOR_E2E_VERBOSE === "1";
const EXTRA_ARGS = (process.env.EXECUTOR_E2E_EXTRA_ARGS ?? "").split(/\s+/).filter(Boolean);

/** Every child we spawned, so nothing outlives the test process. */
const children = new Set();
const killAll = () => {
  for (const c of children) {
    try {
      c.kill("SIGKILL");
    } catch {}
  }
};
process.on("exit", killAll);
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.once(sig, () => {
    killAll();
    process.exit(130);
  });
}

export const freshSlug = (prefix) => `${prefix}_${randomBytes(4).toString("hex")}`;

/** Pretty JSON for assertion messages. */
export const show = (v) => {
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
};

/** Ask the OS for a free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export async function makeDataDir(prefix = "executor-e2e-") {
  return fsp.mkdtemp(path.join(os.tmpdir(), prefix));
}

const URL_RE = /(https?):\/\/(127\.0\.0\.1|localhost|\[::1\]|0\.0\.0\.0)(?::(\d+))?(\/[^\s"'<>]*)?/;

/** Parse the first local URL printed by the binary: {port, token?}. */
export function parsePrintedUrl(text) {
  const m = URL_RE.exec(text);
  if (!m) return null;
  const out = { url: m[0], port: m[3] ? Number(m[3]) : m[1] === "https" ? 443 : 80 };
  const t = /[?&]_token=([^&#\s]+)/.exec(m[0]);
  if (t) out.token = decodeURIComponent(t[1]);
  return out;
}

function readTokenFile(dataDir) {
  const file = path.join(dataDir, "server-control", "auth.json");
  let raw;
  try {
    raw = fs.readFileSync(file, "utf8").trim();
  } catch {
    return undefined;
  }
  try {
    const j = JSON.parse(raw);
    if (typeof j === "string") return j;
    for (const k of ["token", "authToken", "auth_token", "bearer", "bearerToken", "bearer_token", "value"]) {
      if (typeof j?.[k] === "string") return j[k];
    }
    const firstString = Object.values(j ?? {}).find((v) => typeof v === "string" && v.length >= 16);
    return firstString;
  } catch {
    return raw || undefined;
  }
}

/**
 * Low-level HTTP request (node:http) so we can send huge/malformed bodies and
 * still read the status when the server stops reading early.
 * @returns {Promise<{status:number, headers:object, text:string, body:any}>}
 */
export function rawRequest(port, method, urlPath, { body, headers = {}, timeoutMs = 120_000, expectContinue = false } = {}) {
  return new Promise((resolve, reject) => {
    let settled = false;
    let gotResponse = false;
    const h = { connection: "close", ...headers };
    if (expectContinue && body !== undefined) h.expect = "100-continue";
    const req = http.request({ host: "127.0.0.1", port, method, path: urlPath, headers: h }, (res) => {
      gotResponse = true;
      const chunks = [];
      const finish = (error) => {
        if (settled) return;
        settled = true;
        const text = Buffer.concat(chunks).toString("utf8");
        let parsed = text;
        try {
          parsed = text.length ? JSON.parse(text) : null;
        } catch {}
        resolve({ status: res.statusCode, headers: res.headers, text, body: parsed, ...(error ? { error: String(error) } : {}) });
      };
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => finish());
      res.on("error", (e) => finish(e));
      res.on("aborted", () => finish(new Error("response aborted")));
      res.on("close", () => finish());
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`request timed out after ${timeoutMs} ms: ${method} ${urlPath}`)));
    req.on("error", (e) => {
      // Errors after the response head arrived (e.g. EPIPE while the server refuses a huge body) are fine.
      if (!settled && !gotResponse) {
        settled = true;
        reject(e);
      }
    });
    if (body === undefined) {
      req.end();
    } else if (expectContinue) {
      // Like curl: send the body on "100 Continue", or after 1 s without an answer.
      let sent = false;
      const send = () => {
        if (sent || gotResponse) return;
        sent = true;
        req.end(body);
      };
      req.on("continue", send);
      setTimeout(send, 1000).unref();
    } else {
      req.end(body);
    }
  });
}

/**
 * Spawn the binary with arbitrary args (no readiness wait).
 * @returns the ChildProcess plus captured `out()` / `err()` accessors and an `exited` promise.
 */
export function spawnBinary(args, { env = {}, cwd } = {}) {
  if (!fs.existsSync(EXECUTOR_BIN)) {
    throw new Error(`executor binary not found at ${EXECUTOR_BIN} (set EXECUTOR_BIN or run cargo build)`);
  }
  const child = spawn(EXECUTOR_BIN, args, {
    cwd,
    env: { ...process.env, RUST_BACKTRACE: "1", NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => {
    out += d;
    if (VERBOSE) process.stderr.write(`[executor:${child.pid} out] ${d}`);
  });
  child.stderr.on("data", (d) => {
    err += d;
    if (VERBOSE) process.stderr.write(`[executor:${child.pid} err] ${d}`);
  });
  const exited = new Promise((resolve) => {
    child.once("error", (e) => {
      err += `\n[spawn error] ${e}`;
      children.delete(child);
      resolve({ code: null, signal: null, error: e });
    });
    child.once("exit", (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
  return { child, exited, out: () => out, err: () => err };
}

/**
 * Start `executor web --port P --hostname 127.0.0.1` and wait for GET /api/health 200.
 * @param {{dataDir?: string, args?: string[], env?: object, executionTimeout?: string, readyTimeoutMs?: number}} opts
 */
export async function startExecutor(opts = {}) {
  const ownsDataDir = !opts.dataDir;
  const dataDir = opts.dataDir ?? (await makeDataDir());
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    try {
      return await startOnce({ ...opts, dataDir, port, ownsDataDir });
    } catch (e) {
      lastError = e;
      // Retry only on a port race.
      if (!/address already in use|EADDRINUSE|AddrInUse/i.test(String(e?.message))) break;
    }
  }
  if (ownsDataDir) await fsp.rm(dataDir, { recursive: true, force: true }).catch(() => {});
  throw lastError;
}

async function startOnce({ dataDir, port, ownsDataDir, args = [], env = {}, executionTimeout, readyTimeoutMs = 20_000, authToken }) {
  const fullArgs = ["web", "--port", String(port), "--hostname", "127.0.0.1", ...EXTRA_ARGS];
  const fullEnv = { EXECUTOR_DATA_DIR: dataDir, EXECUTOR_SCOPE_DIR: dataDir, ...env };
  if (executionTimeout !== undefined) {
    fullArgs.push("--execution-timeout", String(executionTimeout));
    fullEnv.EXECUTOR_EXECUTION_TIMEOUT = String(executionTimeout);
  }
  fullArgs.push(...args);
  const proc = spawnBinary(fullArgs, { env: fullEnv, cwd: dataDir });
  const describe = () =>
    `\n--- command: ${EXECUTOR_BIN} ${fullArgs.join(" ")}\n--- stdout:\n${proc.out().slice(-4000)}\n--- stderr:\n${proc.err().slice(-4000)}`;

  let exitInfo = null;
  proc.exited.then((x) => (exitInfo = x));

  const deadline = Date.now() + readyTimeoutMs;
  let apiPort = port;
  let ready = false;
  while (Date.now() < deadline) {
    if (exitInfo) throw new Error(`executor exited before becoming ready (code=${exitInfo.code}, signal=${exitInfo.signal})${describe()}`);
    const printed = parsePrintedUrl(proc.out());
    if (printed?.port && printed.port !== 80) apiPort = printed.port;
    try {
      const r = await rawRequest(apiPort, "GET", "/api/health", { timeoutMs: 2000 });
      if (r.status === 200) {
        ready = true;
        break;
      }
    } catch {}
    await sleep(100);
  }
  if (!ready) {
    proc.child.kill("SIGKILL");
    await proc.exited;
    throw new Error(`executor did not answer GET /api/health 200 within ${readyTimeoutMs} ms${describe()}`);
  }

  // Give the URL line a moment to be flushed if health came up first.
  for (let i = 0; i < 10 && !parsePrintedUrl(proc.out()); i++) await sleep(50);
  const printed = parsePrintedUrl(proc.out());
  let token = authToken ?? printed?.token ?? readTokenFile(dataDir) ?? process.env.EXECUTOR_E2E_AUTH_TOKEN;

  const authHeaders = () => (token ? { authorization: `Bearer ${token}` } : {});

  const inst = {
    port: apiPort,
    baseUrl: `http://127.0.0.1:${apiPort}`,
    dataDir,
    printedUrl: printed?.url,
    get token() {
      return token;
    },
    child: proc.child,
    stdout: proc.out,
    stderr: proc.err,
    exited: proc.exited,
    /** Server output tail, for assertion messages. */
    logs: (n = 3000) => `--- executor stdout (tail):\n${proc.out().slice(-n)}\n--- executor stderr (tail):\n${proc.err().slice(-n)}`,
    /**
     * JSON API call. `body` is JSON-encoded unless `raw` is given (a string/Buffer sent verbatim).
     * @returns {Promise<{status:number, body:any, text:string, headers:object}>}
     */
    api: async (method, urlPath, body, { raw, headers = {}, timeoutMs, expectContinue } = {}) => {
      const payload = raw !== undefined ? raw : body === undefined ? undefined : JSON.stringify(body);
      const h = { ...authHeaders(), ...headers };
      if (payload !== undefined) {
        h["content-type"] ??= "application/json";
        h["content-length"] = Buffer.byteLength(payload);
      }
      if (!token) token = readTokenFile(dataDir) ?? token;
      return rawRequest(apiPort, method, urlPath, { body: payload, headers: h, timeoutMs, expectContinue });
    },
    /** Headers that authenticate to this server (the bearer token, once known). */
    authHeaders: () => {
      if (!token) token = readTokenFile(dataDir) ?? token;
      return authHeaders();
    },
    /** `{requestInit}` for an MCP SDK client transport to this server's `/mcp`. */
    mcpTransportOptions: () => ({ requestInit: { headers: inst.authHeaders() } }),
    /** POST /api/executions {code, autoApprove:true}; returns {status, body, ...}. */
    execute: (code, { autoApprove = true, timeoutMs } = {}) =>
      inst.api("POST", "/api/executions", { code, autoApprove }, { timeoutMs }),
    /** SIGTERM (or `signal`) and wait for exit; SIGKILL after `timeoutMs`. */
    stop: async ({ signal = "SIGTERM", timeoutMs = 15_000 } = {}) => {
      if (exitInfo) return { ...exitInfo, timedOut: false };
      proc.child.kill(signal);
      // Cancel the timer once the race is decided, so it does not hold the event loop open.
      const timer = new AbortController();
      const t = sleep(timeoutMs, "timeout", { signal: timer.signal }).catch(() => "aborted");
      const r = await Promise.race([proc.exited, t]);
      timer.abort();
      if (r === "timeout") {
        proc.child.kill("SIGKILL");
        const k = await proc.exited;
        return { ...k, timedOut: true };
      }
      return { ...r, timedOut: false };
    },
    /** Kill hard (teardown); safe to call repeatedly. Removes the data dir if we created it. */
    kill: async ({ removeDataDir = ownsDataDir } = {}) => {
      if (!exitInfo) {
        try {
          proc.child.kill("SIGKILL");
        } catch {}
        await proc.exited;
      }
      if (removeDataDir) await fsp.rm(dataDir, { recursive: true, force: true }).catch(() => {});
    },
  };
  return inst;
}

/** Poll `fn` until it returns truthy or `timeoutMs` passes; returns the last value. */
export async function pollUntil(fn, { timeoutMs = 2000, intervalMs = 50 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let v = await fn();
  while (!v && Date.now() < deadline) {
    await sleep(intervalMs);
    v = await fn();
  }
  return v;
}

/**
 * Register an MCP fixture as an integration plus an org connection `main`
 * (template "none"), exactly like the seed. Returns {slug, connection}.
 */
export async function addMcpIntegration(ex, fixtureUrl, { slug = freshSlug("mcp_state"), name = "Session-stateful MCP", remoteTransport = "streamable-http", connectionName = "main" } = {}) {
  const add = await ex.api("POST", "/api/mcp/servers", { transport: "remote", name, endpoint: fixtureUrl, slug, remoteTransport });
  if (add.status < 200 || add.status > 299 || add.body?.slug !== slug) {
    throw new Error(`POST /api/mcp/servers failed: ${add.status} ${show(add.body)}\n${ex.logs()}`);
  }
  const conn = await ex.api("POST", "/api/connections", { owner: "org", name: connectionName, integration: slug, template: "none", value: "" });
  if (conn.status < 200 || conn.status > 299) {
    throw new Error(`POST /api/connections failed: ${conn.status} ${show(conn.body)}\n${ex.logs()}`);
  }
  return { slug, connection: conn.body };
}
