// Two `executor web` replicas on one PostgreSQL database (issue #23), each with its own data
// directory, the same EXECUTOR_SECRET_KEY and the same --auth-token: the catalog, secrets and
// policies one writes govern the other; a pause made on one is resumed on the other (also after
// a kill -9 of the first, and when both resume it at once); writes from both at once; both
// restarted. Needs a cluster: EXECUTOR_TEST_POSTGRES_URL (scripts/postgres.sh start); skipped
// without one unless EXECUTOR_TEST_REQUIRE_POSTGRES=1.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { randomBytes } from "node:crypto";
import { serveMcpServer } from "../lib/fixture.mjs";
import { startExecutor, makeDataDir, freshSlug, show, pollUntil, freePort, REPO_ROOT } from "../lib/executor.mjs";

const ADMIN_URL = process.env.EXECUTOR_TEST_POSTGRES_URL;
if (!ADMIN_URL && process.env.EXECUTOR_TEST_REQUIRE_POSTGRES === "1") {
  throw new Error("EXECUTOR_TEST_POSTGRES_URL is not set but EXECUTOR_TEST_REQUIRE_POSTGRES=1");
}
const skip = ADMIN_URL ? false : "EXECUTOR_TEST_POSTGRES_URL is not set (scripts/postgres.sh start)";
const T = { timeout: 60_000, skip };

const KEY = randomBytes(32).toString("hex");
const TOKEN = `replica-token-${randomBytes(12).toString("hex")}`;
const API_KEY = "k3y-replicas";

let databaseUrl;
let fixture;
let api;
let a;
let b;

/** A fresh database in the test cluster. */
function freshDatabase() {
  const name = `executor_e2e_${process.pid}_${randomBytes(4).toString("hex")}`;
  execFileSync("psql", [ADMIN_URL, "-qc", `CREATE DATABASE ${name}`]);
  return ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
}

async function replica(dataDir) {
  return startExecutor({
    dataDir: dataDir ?? (await makeDataDir("executor-replica-")),
    authToken: TOKEN,
    env: { EXECUTOR_DATABASE_URL: databaseUrl, EXECUTOR_SECRET_KEY: KEY, EXECUTOR_AUTH_TOKEN: TOKEN },
  });
}

/** An HTTP API that wants `X-Api-Key`, with its OpenAPI document. */
function serveApi() {
  const requests = [];
  const spec = {
    openapi: "3.1.0",
    info: { title: "Notes", version: "1.0.0" },
    servers: [{ url: "/v1" }],
    security: [{ key: [] }],
    components: { securitySchemes: { key: { type: "apiKey", in: "header", name: "X-Api-Key" } } },
    paths: {
      "/notes/{id}": {
        get: {
          operationId: "getNote",
          parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
          responses: { 200: { description: "ok", content: { "application/json": { schema: { type: "object" } } } } },
        },
      },
    },
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    const send = (status, value) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };
    if (url.pathname === "/openapi.json") return send(200, spec);
    requests.push({ path: url.pathname, key: req.headers["x-api-key"] });
    if (req.headers["x-api-key"] !== API_KEY) return send(401, { message: "bad key" });
    const m = /^\/v1\/notes\/([^/]+)$/.exec(url.pathname);
    if (m) return send(200, { id: m[1], text: "a note" });
    send(404, { message: "no route" });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ base: `http://127.0.0.1:${server.address().port}`, requests, close: () => new Promise((r) => server.close(r)) }),
    ),
  );
}

const calls = () => fixture.requests().filter((r) => r.httpMethod === "POST" && r.rpcMethods.includes("tools/call")).length;
const echo = (slug, message) => `return (await tools.${slug}.org.main.echo({ message: ${JSON.stringify(message)} })).data.content[0].text`;

async function mcpIntegration(server) {
  const slug = freshSlug("rep");
  const add = await server.api("POST", "/api/mcp/servers", { transport: "remote", name: "Replicated MCP", endpoint: fixture.url, slug, remoteTransport: "streamable-http" });
  assert.equal(add.status, 200, show(add.body));
  const conn = await server.api("POST", "/api/connections", { owner: "org", name: "main", integration: slug, template: "none", value: "" });
  assert.equal(conn.status, 200, show(conn.body));
  return slug;
}

async function gate(server, slug) {
  const r = await server.api("POST", "/api/policies", { owner: "org", pattern: `${slug}.*.*.echo`, action: "require_approval" });
  assert.equal(r.status, 200, show(r.body));
  return r.body;
}

async function pauseOn(server, slug, message) {
  const r = await server.api("POST", "/api/executions", { code: echo(slug, message) });
  assert.equal(r.status, 200, show(r.body));
  assert.equal(r.body.status, "paused", show(r.body));
  return r.body.structured.executionId;
}

before(async () => {
  if (skip) return;
  databaseUrl = freshDatabase();
  fixture = await serveMcpServer();
  api = await serveApi();
  [a, b] = await Promise.all([replica(), replica()]);
});
after(async () => {
  await a?.kill();
  await b?.kill();
  await fixture?.close();
  await api?.close();
});

test("a replica refuses to start without EXECUTOR_SECRET_KEY, or with another key", T, async () => {
  const missing = await startExecutor({ authToken: TOKEN, env: { EXECUTOR_DATABASE_URL: databaseUrl, EXECUTOR_SECRET_KEY: "" }, readyTimeoutMs: 5_000 }).catch((e) => e);
  assert.ok(missing instanceof Error, "started without a key");
  assert.match(missing.message, /EXECUTOR_SECRET_KEY is required with a PostgreSQL database/);
  // A secret exists once a connection with a value is made.
  const slug = freshSlug("notes");
  const added = await a.api("POST", "/api/openapi/specs", { spec: { kind: "url", url: `${api.base}/openapi.json` }, slug });
  assert.equal(added.status, 200, show(added.body));
  const conn = await a.api("POST", "/api/connections", { owner: "org", name: "main", integration: slug, template: "apikey-0", value: API_KEY });
  assert.equal(conn.status, 200, show(conn.body));
  const wrong = await startExecutor({
    authToken: TOKEN,
    env: { EXECUTOR_DATABASE_URL: databaseUrl, EXECUTOR_SECRET_KEY: randomBytes(32).toString("hex") },
    readyTimeoutMs: 5_000,
  }).catch((e) => e);
  assert.ok(wrong instanceof Error, "started with another key");
  assert.match(wrong.message, /does not open the secrets already in this database/);
});

test("the catalog and a secret made on one replica are used on the other", T, async () => {
  const slug = freshSlug("notes");
  const added = await a.api("POST", "/api/openapi/specs", { spec: { kind: "url", url: `${api.base}/openapi.json` }, slug });
  assert.equal(added.status, 200, show(added.body));
  const conn = await a.api("POST", "/api/connections", { owner: "org", name: "main", integration: slug, template: "apikey-0", value: API_KEY });
  assert.equal(conn.status, 200, show(conn.body));
  const listed = await b.api("GET", "/api/integrations");
  assert.ok(listed.body.some((i) => i.slug === slug), show(listed.body));
  const got = await b.execute(`return await tools.${slug}.org.main.notes.getNote({ id: "7" })`);
  assert.equal(got.status, 200, show(got.body));
  assert.deepEqual(got.body.structured.result.data, { id: "7", text: "a note" }, `${show(got.body)}\n${b.logs()}`);
  assert.equal(api.requests.at(-1).key, API_KEY, "the other replica opened the secret");
});

test("a policy made on one replica governs the other within a second", T, async () => {
  const slug = await mcpIntegration(a);
  // B resolves (and caches) the tool ungated first.
  const before = await b.execute(echo(slug, "before"));
  assert.equal(before.body.structured.result, "echo:before", show(before.body));
  const made = Date.now();
  await gate(a, slug);
  const paused = await pollUntil(
    async () => {
      const r = await b.api("POST", "/api/executions", { code: echo(slug, "after") });
      if (r.body.status === "paused") return r.body;
      return null;
    },
    { timeoutMs: 1_000, intervalMs: 10 },
  );
  assert.ok(paused, `the policy reached the other replica within 1 s\n${b.logs()}`);
  const took = Date.now() - made;
  console.log(`# policy propagation (made on A, enforced on B): ${took} ms`);
  const removed = await b.api("POST", `/api/executions/${paused.structured.executionId}/resume`, { action: "decline" });
  assert.equal(removed.status, 200, show(removed.body));
});

test("a pause made on one replica is resumed on the other", T, async () => {
  const slug = await mcpIntegration(a);
  await gate(a, slug);
  const id = await pauseOn(a, slug, "across");
  const pending = await b.api("GET", `/api/executions/${id}`);
  assert.equal(pending.status, 200, show(pending.body));
  const before = calls();
  const done = await b.api("POST", `/api/executions/${id}/resume`, { action: "accept" });
  assert.equal(done.status, 200, show(done.body));
  assert.equal(done.body.structured?.result, "echo:across", `${show(done.body)}\n${b.logs()}`);
  assert.equal(calls() - before, 1, "the call ran once");
  // The first replica still held the pause live: it answers the same outcome, and runs nothing.
  const again = await a.api("POST", `/api/executions/${id}/resume`, { action: "accept" });
  assert.equal(again.status, 200, show(again.body));
  assert.equal(again.body.structured?.result, "echo:across", show(again.body));
  assert.equal(calls() - before, 1, "resuming on the first replica ran nothing more");
});

test("resumed on both replicas at once: one run, the same outcome for both callers", T, async () => {
  const slug = await mcpIntegration(a);
  await gate(a, slug);
  for (let round = 0; round < 3; round++) {
    const id = await pauseOn(a, slug, `both-${round}`);
    const before = calls();
    const [x, y] = await Promise.all([
      a.api("POST", `/api/executions/${id}/resume`, { action: "accept" }),
      b.api("POST", `/api/executions/${id}/resume`, { action: "accept" }),
    ]);
    assert.equal(x.status, 200, show(x.body));
    assert.equal(y.status, 200, show(y.body));
    assert.equal(x.body.structured?.result, `echo:both-${round}`, `${show(x.body)}\n${a.logs()}`);
    assert.deepEqual(y.body.structured?.result, x.body.structured?.result, show(y.body));
    assert.equal(calls() - before, 1, `round ${round}: the call ran once`);
  }
});

test("concurrent writes from both replicas all land, and both see all of them", T, async () => {
  const slug = await mcpIntegration(a);
  const writes = [];
  for (let i = 0; i < 10; i++) {
    writes.push(a.api("POST", "/api/policies", { owner: "org", pattern: `${slug}.*.*.tool_a${i}`, action: "block" }));
    writes.push(b.api("POST", "/api/policies", { owner: "org", pattern: `${slug}.*.*.tool_b${i}`, action: "block" }));
  }
  const done = await Promise.all(writes);
  for (const r of done) assert.equal(r.status, 200, show(r.body));
  for (const server of [a, b]) {
    const listed = await server.api("GET", "/api/policies");
    const mine = listed.body.filter((p) => p.pattern.startsWith(`${slug}.`));
    assert.equal(mine.length, 20, show(mine));
    assert.equal(new Set(mine.map((p) => p.position)).size, 20, "every rule has its own position");
  }
});

/** An SDK client of `url` (a new session, or `sessionId`'s) with the replicas' token. */
async function agent(url, { sessionId, token = TOKEN } = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    sessionId,
    requestInit: { headers: { authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "replica-agent", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

const run = async (client, code) => {
  const r = await client.callTool({ name: "execute", arguments: { code } });
  return r.structuredContent?.result ?? r.content?.[0]?.text;
};

test("an agent's MCP session opened on one replica keeps working on the other", T, async () => {
  const slug = await mcpIntegration(a);
  const first = await agent(`${a.baseUrl}/mcp`);
  const id = first.transport.sessionId;
  assert.ok(id, "a session id");
  assert.equal(await run(first.client, echo(slug, "on A")), "echo:on A");
  // The load balancer sends the next requests to B: same session id, no new initialize.
  const moved = await agent(`${b.baseUrl}/mcp`, { sessionId: id });
  const listed = await moved.client.listTools();
  assert.ok(listed.tools.some((t) => t.name === "execute"), show(listed));
  assert.equal(await run(moved.client, echo(slug, "on B")), "echo:on B");
  assert.equal(moved.transport.sessionId, id);
  // Another token cannot bring the session anywhere; another endpoint refuses it.
  const stranger = await fetch(`${b.baseUrl}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": id, authorization: "Bearer someone-else-entirely" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
  });
  assert.ok([401, 404].includes(stranger.status), `status ${stranger.status}`);
  // Ended on B, it is gone for A too once A lets go of it.
  await moved.transport.terminateSession();
  const gone = await fetch(`${b.baseUrl}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": id, authorization: `Bearer ${TOKEN}` },
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
  });
  assert.equal(gone.status, 404);
  await first.client.close().catch(() => {});
});

/** nginx with docs/deploy/nginx.conf, its two upstreams pointed at `a` and `b`. */
async function startNginx() {
  const prefix = await fs.mkdtemp(path.join(os.tmpdir(), "executor-nginx-"));
  await fs.mkdir(path.join(prefix, "logs"));
  const port = await freePort();
  const conf = (await fs.readFile(path.join(REPO_ROOT, "docs/deploy/nginx.conf"), "utf8"))
    .replace("server 127.0.0.1:4788", `server 127.0.0.1:${a.port}`)
    .replace("server 127.0.0.1:4789", `server 127.0.0.1:${b.port}`)
    .replace("listen 127.0.0.1:8080", `listen 127.0.0.1:${port}`);
  await fs.writeFile(path.join(prefix, "nginx.conf"), conf);
  const child = spawn("nginx", ["-p", prefix, "-c", "nginx.conf", "-g", `daemon off; pid ${prefix}/nginx.pid;`], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr.on("data", (d) => (err += d));
  const up = await pollUntil(
    async () => {
      try {
        return (await fetch(`http://127.0.0.1:${port}/api/health`)).status === 200;
      } catch {
        return false;
      }
    },
    { timeoutMs: 10_000, intervalMs: 50 },
  );
  assert.ok(up, `nginx did not answer: ${err}`);
  return {
    url: `http://127.0.0.1:${port}`,
    upstreams: async () => (await fs.readFile(path.join(prefix, "logs/access.log"), "utf8")).split("\n").filter(Boolean).map((l) => l.split("upstream=")[1]),
    stop: async () => {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
      await fs.rm(prefix, { recursive: true, force: true });
    },
  };
}

const hasNginx = (() => {
  try {
    execFileSync("nginx", ["-v"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
if (!skip && !hasNginx && process.env.EXECUTOR_TEST_REQUIRE_POSTGRES === "1") throw new Error("nginx is not installed (apt-get install nginx)");

test("behind nginx (docs/deploy/nginx.conf): an agent's session and a pause alternate between replicas", { ...T, skip: skip || (!hasNginx && "nginx is not installed") }, async () => {
  const lb = await startNginx();
  try {
    const slug = await mcpIntegration(a);
    const { client, transport } = await agent(`${lb.url}/mcp`);
    for (let i = 0; i < 6; i++) assert.equal(await run(client, echo(slug, `lb-${i}`)), `echo:lb-${i}`);
    await gate(a, slug);
    const paused = await client.callTool({ name: "execute", arguments: { code: echo(slug, "lb-gated") } });
    const executionId = paused.structuredContent?.executionId;
    assert.ok(executionId, show(paused));
    const resumed = await client.callTool({ name: "resume", arguments: { executionId, action: "accept", content: "{}" } });
    assert.equal(resumed.structuredContent?.result ?? resumed.content?.[0]?.text, "echo:lb-gated", show(resumed));
    const mcpUpstreams = new Set((await lb.upstreams()).filter(Boolean));
    assert.equal(mcpUpstreams.size, 2, `requests reached both replicas: ${[...mcpUpstreams]}`);
    await transport.terminateSession();
    await client.close();
  } finally {
    await lb.stop();
  }
});

test("kill -9 of a replica with a pause pending: the other resumes it; both restart", T, async () => {
  const slug = await mcpIntegration(a);
  await gate(a, slug);
  const id = await pauseOn(a, slug, "survivor");
  const dirA = a.dataDir;
  await a.kill({ removeDataDir: false });
  const done = await b.api("POST", `/api/executions/${id}/resume`, { action: "accept" });
  assert.equal(done.status, 200, show(done.body));
  assert.equal(done.body.structured?.result, "echo:survivor", `${show(done.body)}\n${b.logs()}`);

  const later = await pauseOn(b, slug, "after-restart");
  const dirB = b.dataDir;
  await b.stop();
  [a, b] = await Promise.all([replica(dirA), replica(dirB)]);
  const listed = await a.api("GET", "/api/integrations");
  assert.ok(listed.body.some((i) => i.slug === slug), show(listed.body));
  const resumed = await a.api("POST", `/api/executions/${later}/resume`, { action: "accept" });
  assert.equal(resumed.status, 200, show(resumed.body));
  assert.equal(resumed.body.structured?.result, "echo:after-restart", `${show(resumed.body)}\n${a.logs()}`);
});
