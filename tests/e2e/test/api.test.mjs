// HTTP API contract and bad input (spec §1.2, §1.4, §1.5, §3.0–3.4, §3.9).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { serveMcpServer, closedPort, SEED_TOOLS, EXTRA_TOOLS } from "../lib/fixture.mjs";
import { startExecutor, addMcpIntegration, freshSlug, show, rawRequest } from "../lib/executor.mjs";

const ALL_TOOLS = [...SEED_TOOLS, ...EXTRA_TOOLS].sort();

let ex;
let server;
let slug;

before(async () => {
  server = await serveMcpServer({ extras: true });
  ex = await startExecutor();
  ({ slug } = await addMcpIntegration(ex, server.url, { name: "Contract MCP" }));
});
after(async () => {
  await ex?.kill();
  await server?.close();
});

const slugs = async () => {
  const r = await ex.api("GET", "/api/integrations");
  assert.equal(r.status, 200, show(r.body));
  return r.body.map((i) => i.slug);
};

const assertTag = (res, status, tag, what) => {
  assert.equal(res.status, status, `${what}: expected ${status}, got ${res.status}: ${res.text.slice(0, 2000)}`);
  assert.equal(typeof res.body, "object", `${what}: JSON error body expected, got ${res.text.slice(0, 500)}`);
  assert.equal(res.body?._tag, tag, `${what}: ${show(res.body)}`);
};

test("GET /api/health answers 200 without credentials", async () => {
  const r = await rawRequest(ex.port, "GET", "/api/health");
  assert.equal(r.status, 200, r.text);
});

test("requests without the bearer token are rejected; health stays open", async () => {
  assert.ok(ex.token, "the server minted a token into server-control/auth.json");
  const mode = fs.statSync(path.join(ex.dataDir, "server-control", "auth.json")).mode & 0o777;
  assert.equal(mode, 0o600, `auth.json mode ${mode.toString(8)}`);
  assert.ok(!ex.stdout().includes(ex.token), "the token is not printed when stdout is not a terminal");
  for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: ex.token }]) {
    const r = await rawRequest(ex.port, "GET", "/api/integrations", { headers });
    assert.equal(r.status, 401, r.text);
    assert.equal(r.headers["www-authenticate"], 'Bearer realm="executor"');
    assert.equal(r.text, "Unauthorized");
  }
  const mcp = await rawRequest(ex.port, "POST", "/mcp", { body: "{}", headers: { "content-type": "application/json" } });
  assert.equal(mcp.status, 401, mcp.text);
  const health = await rawRequest(ex.port, "GET", "/api/health");
  assert.equal(health.status, 200);
  const ok = await ex.api("GET", "/api/integrations");
  assert.equal(ok.status, 200);
});

test("client ID metadata documents are public and name themselves", async () => {
  for (const [file, name, type] of [
    ["/api/oauth/client-id-metadata.json", "Executor", "web"],
    ["/api/oauth/client-id-metadata/local.json", "Executor Local", "native"],
  ]) {
    const r = await rawRequest(ex.port, "GET", file);
    assert.equal(r.status, 200, r.text);
    const doc = JSON.parse(r.text);
    assert.equal(doc.client_id, `http://127.0.0.1:${ex.port}${file}`);
    assert.equal(doc.client_name, name);
    assert.equal(doc.application_type, type);
    assert.equal(doc.token_endpoint_auth_method, "none");
    assert.ok(doc.redirect_uris.includes(`http://127.0.0.1:${ex.port}/api/oauth/callback`), r.text);
  }
  const unknown = await rawRequest(ex.port, "GET", "/api/oauth/client-id-metadata/other.json");
  assert.equal(unknown.status, 404);
});

test("GET /api/integrations lists the built-in `executor` first, then the MCP integration", async () => {
  const r = await ex.api("GET", "/api/integrations");
  assert.equal(r.status, 200, show(r.body));
  assert.ok(Array.isArray(r.body) && r.body.length >= 2, show(r.body));
  const [first] = r.body;
  assert.equal(first.slug, "executor", show(first));
  assert.equal(first.kind, "built-in", show(first));
  assert.equal(first.canRemove, false, show(first));
  assert.equal(first.canRefresh, false, show(first));
  assert.equal(first.name, "Executor", show(first));
  assert.deepEqual(first.authMethods, [], show(first));
  const mine = r.body.find((i) => i.slug === slug);
  assert.ok(mine, `lists ${slug}: ${show(r.body)}`);
  assert.equal(mine.kind, "mcp", show(mine));
  assert.equal(mine.name, "Contract MCP", show(mine));
  assert.equal(mine.description, "Contract MCP", `description defaults to the name: ${show(mine)}`);
  assert.equal(mine.canRemove, true, show(mine));
  assert.equal(mine.canRefresh, true, show(mine));
  assert.ok(Array.isArray(mine.authMethods), show(mine));
  assert.equal(r.body.filter((i) => i.slug === "executor").length, 1, "executor listed once");
});

test("GET/PATCH /api/integrations/:slug edits name and description, and they persist", async () => {
  const g = await ex.api("GET", `/api/integrations/${slug}`);
  assert.equal(g.status, 200, show(g.body));
  assert.equal(g.body.slug, slug);
  const p = await ex.api("PATCH", `/api/integrations/${slug}`, { name: "Renamed MCP", description: "A better description" });
  assert.equal(p.status, 200, show(p.body));
  assert.equal(p.body.name, "Renamed MCP", show(p.body));
  assert.equal(p.body.description, "A better description", show(p.body));
  const p2 = await ex.api("PATCH", `/api/integrations/${slug}`, { description: "Only the description" });
  assert.equal(p2.status, 200, show(p2.body));
  assert.equal(p2.body.name, "Renamed MCP", `absent name is unchanged: ${show(p2.body)}`);
  const g2 = await ex.api("GET", `/api/integrations/${slug}`);
  assert.equal(g2.body.name, "Renamed MCP", show(g2.body));
  assert.equal(g2.body.description, "Only the description", show(g2.body));
  const inList = (await ex.api("GET", "/api/integrations")).body.find((i) => i.slug === slug);
  assert.equal(inList.name, "Renamed MCP", show(inList));
});

test("unknown integration → 404 IntegrationNotFoundError {slug}", async () => {
  const g = await ex.api("GET", "/api/integrations/no_such_integration");
  assertTag(g, 404, "IntegrationNotFoundError", "GET unknown integration");
  assert.equal(g.body.slug, "no_such_integration", show(g.body));
  const p = await ex.api("PATCH", "/api/integrations/no_such_integration", { name: "x" });
  assertTag(p, 404, "IntegrationNotFoundError", "PATCH unknown integration");
  const c = await ex.api("POST", "/api/connections", { owner: "org", name: "main", integration: "no_such_integration", template: "none", value: "" });
  assertTag(c, 404, "IntegrationNotFoundError", "connection on an unknown integration");
});

test("duplicate slug on POST /api/mcp/servers → 409 IntegrationAlreadyExistsError", async () => {
  const r = await ex.api("POST", "/api/mcp/servers", { transport: "remote", name: "Dup", endpoint: server.url, slug, remoteTransport: "streamable-http" });
  assertTag(r, 409, "IntegrationAlreadyExistsError", "duplicate slug");
  assert.equal(r.body.slug, slug, show(r.body));
  const g = await ex.api("GET", `/api/integrations/${slug}`);
  assert.notEqual(g.body.name, "Dup", "the existing integration was not overwritten");
});

test("connection with owner \"team\" → 400 HttpApiSchemaError", async () => {
  const r = await ex.api("POST", "/api/connections", { owner: "team", name: "x", integration: slug, template: "none", value: "" });
  assertTag(r, 400, "HttpApiSchemaError", "owner team");
  assert.equal(typeof r.body.message, "string", show(r.body));
  const g = await ex.api("GET", `/api/connections/team/${slug}/x`);
  assert.equal(g.status, 400, `owner path param is validated too: ${g.text}`);
  const list = await ex.api("GET", `/api/connections?integration=${slug}`);
  assert.ok(!list.body.some((c) => c.name === "x"), show(list.body));
});

test("malformed JSON → 400 HttpApiSchemaError and nothing is written", async () => {
  const before = await slugs();
  const badSlug = freshSlug("malformed");
  const r = await ex.api("POST", "/api/mcp/servers", undefined, {
    raw: `{"transport":"remote","name":"Bad","endpoint":"${server.url}","slug":"${badSlug}",`,
  });
  assertTag(r, 400, "HttpApiSchemaError", "malformed JSON");
  assert.deepEqual(await slugs(), before, "no integration was written");
  const missing = await ex.api("POST", "/api/mcp/servers", { transport: "remote", slug: freshSlug("nofields") });
  assertTag(missing, 400, "HttpApiSchemaError", "missing endpoint/name");
  assert.deepEqual(await slugs(), before, "no integration was written");
  const exe = await ex.api("POST", "/api/executions", { nocode: true });
  assertTag(exe, 400, "HttpApiSchemaError", "execution without code");
});

test("unreachable MCP endpoint → 400 McpConnectionError with a human message; nothing stored", { timeout: 60_000 }, async () => {
  const port = await closedPort();
  const badSlug = freshSlug("unreachable");
  const r = await ex.api("POST", "/api/mcp/servers", {
    transport: "remote",
    name: "Unreachable",
    endpoint: `http://127.0.0.1:${port}/mcp`,
    slug: badSlug,
    remoteTransport: "streamable-http",
  });
  assertTag(r, 400, "McpConnectionError", "unreachable endpoint");
  assert.equal(typeof r.body.message, "string", show(r.body));
  assert.ok(r.body.message.trim().length >= 10, `a human-readable message: ${show(r.body)}`);
  assert.doesNotMatch(r.body.message, /panic|unwrap|RUST_BACKTRACE/i, show(r.body));
  assert.ok(!(await slugs()).includes(badSlug), "the integration was not stored");
  const g = await ex.api("GET", `/api/integrations/${badSlug}`);
  assert.equal(g.status, 404, show(g.body));
});

test("request body over 10 MiB → 413", { timeout: 60_000 }, async () => {
  const big = JSON.stringify({ code: `return 1; // ${"x".repeat(11 * 1024 * 1024)}` });
  for (const expectContinue of [true, false]) {
    let r;
    try {
      r = await ex.api("POST", "/api/executions", undefined, { raw: big, expectContinue });
    } catch (e) {
      assert.fail(`the server must answer 413, not drop the connection (expect-continue=${expectContinue}): ${e}`);
    }
    assert.equal(r.status, 413, `expect-continue=${expectContinue}: status ${r.status}: ${r.text.slice(0, 500)}`);
  }
  const h = await ex.api("GET", "/api/health");
  assert.equal(h.status, 200, "server still healthy");
});

test("connections: name normalisation, address, GET/PATCH/DELETE", { timeout: 60_000 }, async () => {
  const c = await ex.api("POST", "/api/connections", { owner: "org", name: "My Work Key", integration: slug, template: "none", value: "" });
  assert.equal(c.status, 200, show(c.body));
  assert.equal(c.body.name, "myWorkKey", show(c.body));
  assert.equal(c.body.address, `tools.${slug}.org.myWorkKey`, show(c.body));
  assert.equal(c.body.owner, "org", show(c.body));
  assert.equal(c.body.integration, slug, show(c.body));
  assert.equal(c.body.template, "none", show(c.body));

  const n = await ex.api("POST", "/api/connections", { owner: "org", name: "123", integration: slug, template: "none", value: "" });
  assert.equal(n.status, 200, show(n.body));
  assert.equal(n.body.name, "connection123", show(n.body));

  const g = await ex.api("GET", `/api/connections/org/${slug}/myWorkKey`);
  assert.equal(g.status, 200, show(g.body));
  assert.equal(g.body.address, `tools.${slug}.org.myWorkKey`);

  const list = await ex.api("GET", `/api/connections?integration=${slug}`);
  assert.equal(list.status, 200, show(list.body));
  assert.deepEqual(list.body.map((x) => x.name).sort(), ["connection123", "main", "myWorkKey"], show(list.body));

  const p = await ex.api("PATCH", `/api/connections/org/${slug}/myWorkKey`, { description: "work account" });
  assert.equal(p.status, 200, show(p.body));
  assert.equal(p.body.description, "work account", show(p.body));
  const g2 = await ex.api("GET", `/api/connections/org/${slug}/myWorkKey`);
  assert.equal(g2.body.description, "work account", show(g2.body));
  const p2 = await ex.api("PATCH", `/api/connections/org/${slug}/myWorkKey`, { description: null });
  assert.equal(p2.status, 200, show(p2.body));
  assert.equal(p2.body.description, null, show(p2.body));

  // Its tools are produced per connection.
  const tools = await ex.api("GET", `/api/tools?integration=${slug}&connection=myWorkKey`);
  assert.deepEqual(tools.body.map((t) => t.name).sort(), ALL_TOOLS, show(tools.body));

  for (const name of ["myWorkKey", "connection123"]) {
    const d = await ex.api("DELETE", `/api/connections/org/${slug}/${name}`);
    assert.equal(d.status, 200, show(d.body));
    assert.deepEqual(d.body, { removed: true });
  }
  const gone = await ex.api("GET", `/api/connections/org/${slug}/myWorkKey`);
  assertTag(gone, 404, "ConnectionNotFoundError", "deleted connection");
  assert.deepEqual({ owner: gone.body.owner, integration: gone.body.integration, name: gone.body.name }, { owner: "org", integration: slug, name: "myWorkKey" });
  const again = await ex.api("DELETE", `/api/connections/org/${slug}/myWorkKey`);
  assertTag(again, 404, "ConnectionNotFoundError", "DELETE twice");
  const toolsGone = await ex.api("GET", `/api/tools?integration=${slug}&connection=myWorkKey`);
  assert.deepEqual(toolsGone.body, [], `tools of a removed connection are gone: ${show(toolsGone.body)}`);
});

test("POST …/refresh returns the tool list", { timeout: 60_000 }, async () => {
  const r = await ex.api("POST", `/api/connections/org/${slug}/main/refresh`);
  assert.equal(r.status, 200, show(r.body));
  assert.deepEqual(r.body.map((t) => t.name).sort(), ALL_TOOLS, show(r.body));
  for (const t of r.body) {
    assert.equal(t.address, `tools.${slug}.org.main.${t.name}`, show(t));
    assert.equal(t.pluginId, "mcp", show(t));
    assert.equal(t.integration, slug, show(t));
    assert.equal(t.connection, "main", show(t));
    assert.equal(t.owner, "org", show(t));
  }
  const unknown = await ex.api("POST", `/api/connections/org/${slug}/nobody/refresh`);
  assertTag(unknown, 404, "ConnectionNotFoundError", "refresh unknown connection");
});

test("GET /api/tools?integration= lists tools with address, name, pluginId, description", async () => {
  const r = await ex.api("GET", `/api/tools?integration=${slug}`);
  assert.equal(r.status, 200, show(r.body));
  assert.deepEqual(r.body.map((t) => t.name).sort(), ALL_TOOLS, show(r.body));
  const sel = r.body.find((t) => t.name === "select_workspace");
  assert.equal(sel.address, `tools.${slug}.org.main.select_workspace`, show(sel));
  assert.equal(sel.pluginId, "mcp", show(sel));
  assert.equal(sel.description, "Selects the workspace for this MCP session", show(sel));
  const q = await ex.api("GET", `/api/tools?integration=${slug}&query=SLEEPS`);
  assert.deepEqual(q.body.map((t) => t.name), ["slow"], `query is a case-insensitive substring over name+description: ${show(q.body)}`);
  const all = await ex.api("GET", "/api/tools");
  assert.ok(all.body.some((t) => t.address === sel.address), "unfiltered listing includes it");
  assert.ok(all.body.every((t) => typeof t.address === "string" && t.address && t.name && typeof t.description === "string"), "every tool has address/name/description");
});

test("GET /api/tools/schema returns the input schema; unknown address → 404 ToolNotFoundError", async () => {
  const addr = `tools.${slug}.org.main.slow`;
  const r = await ex.api("GET", `/api/tools/schema?address=${encodeURIComponent(addr)}`);
  assert.equal(r.status, 200, show(r.body));
  assert.equal(r.body.address, addr, show(r.body));
  assert.equal(r.body.inputSchema?.type, "object", show(r.body));
  assert.ok(["integer", "number"].includes(r.body.inputSchema?.properties?.ms?.type), show(r.body));
  assert.deepEqual(r.body.inputSchema.required, ["ms"], show(r.body));
  const s = await ex.api("GET", `/api/tools/schema?address=${encodeURIComponent(`tools.${slug}.org.main.structured_tool`)}`);
  assert.equal(s.status, 200, show(s.body));
  assert.ok(s.body.outputSchema && typeof s.body.outputSchema === "object", `outputSchema present: ${show(s.body)}`);
  assert.match(JSON.stringify(s.body.outputSchema), /doubled/, show(s.body));

  const missing = `tools.${slug}.org.main.does_not_exist`;
  const u = await ex.api("GET", `/api/tools/schema?address=${encodeURIComponent(missing)}`);
  assertTag(u, 404, "ToolNotFoundError", "unknown tool address");
  assert.equal(u.body.address, missing, show(u.body));
});

test("POST /api/mcp/probe against the fixture → connected, toolCount", { timeout: 30_000 }, async () => {
  const r = await ex.api("POST", "/api/mcp/probe", { endpoint: server.url });
  assert.equal(r.status, 200, show(r.body));
  assert.equal(r.body.connected, true, show(r.body));
  assert.equal(r.body.toolCount, ALL_TOOLS.length, show(r.body));
  assert.equal(r.body.requiresAuthentication, false, show(r.body));
  assert.equal(r.body.requiresOAuth, false, show(r.body));
  assert.equal(typeof r.body.name, "string", show(r.body));
  assert.equal(typeof r.body.slug, "string", show(r.body));
});

test("GET /api/mcp/servers/:slug returns the stored config", async () => {
  const r = await ex.api("GET", `/api/mcp/servers/${slug}`);
  assert.equal(r.status, 200, show(r.body));
  assert.equal(r.body.slug, slug, show(r.body));
  assert.equal(r.body.kind, "mcp", show(r.body));
  assert.equal(r.body.canRemove, true, show(r.body));
  assert.equal(r.body.config?.transport, "remote", show(r.body));
  assert.equal(r.body.config?.endpoint, server.url, show(r.body));
  assert.equal(r.body.config?.remoteTransport, "streamable-http", show(r.body));
  assert.deepEqual(r.body.config?.authenticationTemplate, [{ slug: "none", kind: "none" }], show(r.body));
  const u = await ex.api("GET", "/api/mcp/servers/no_such_server");
  assert.equal(u.status, 200, `unknown server answers null: ${u.text}`);
  assert.equal(u.body, null, u.text);
});

test("POST /api/mcp/servers/:slug/auth merges and replaces; /config refuses bad input", async () => {
  const { slug: own } = await addMcpIntegration(ex, server.url, { slug: freshSlug("mcp_auth"), name: "Auth MCP" });
  const bearer = { type: "apiKey", headers: { Authorization: ["Bearer ", { type: "variable", name: "token" }] } };
  const merged = await ex.api("POST", `/api/mcp/servers/${own}/auth`, { authenticationTemplate: [{ slug: "bearer", ...bearer }] });
  assert.equal(merged.status, 200, show(merged.body));
  assert.deepEqual(merged.body.authenticationTemplate, [
    { slug: "none", kind: "none" },
    { slug: "bearer", kind: "apikey", placements: [{ carrier: "header", name: "Authorization", prefix: "Bearer " }] },
  ]);
  const replaced = await ex.api("POST", `/api/mcp/servers/${own}/auth`, { authenticationTemplate: [{ kind: "oauth2" }], mode: "replace" });
  assert.equal(replaced.status, 200, show(replaced.body));
  assert.deepEqual(replaced.body.authenticationTemplate, [{ slug: "oauth2", kind: "oauth2" }]);
  const stored = await ex.api("GET", `/api/mcp/servers/${own}`);
  assert.deepEqual(stored.body.config.authenticationTemplate, [{ slug: "oauth2", kind: "oauth2" }], show(stored.body));

  const bad = await ex.api("POST", `/api/mcp/servers/${own}/config`, { config: { transport: "remote", endpoint: server.url, remoteTransport: "websocket" } });
  assertTag(bad, 400, "HttpApiSchemaError", "bad remoteTransport");
  const after = await ex.api("GET", `/api/mcp/servers/${own}`);
  assert.deepEqual(after.body.config, stored.body.config, "a refused config changes nothing");
  const unknown = await ex.api("POST", "/api/mcp/servers/no_such_server/config", { config: { transport: "remote", endpoint: server.url } });
  assertTag(unknown, 404, "IntegrationNotFoundError", "config of an unknown server");
});

test("GET /api/executions/<unknown> → 404 ExecutionNotFoundError", async () => {
  const id = "exec_00000000-0000-4000-8000-000000000000";
  const r = await ex.api("GET", `/api/executions/${id}`);
  assertTag(r, 404, "ExecutionNotFoundError", "unknown execution");
  assert.equal(r.body.executionId, id, show(r.body));
  const res = await ex.api("POST", `/api/executions/${id}/resume`, { action: "accept" });
  assertTag(res, 404, "ExecutionNotFoundError", "resume unknown execution");
});

test("DELETE /api/integrations/executor is refused or a no-op; the built-in stays", async () => {
  const r = await ex.api("DELETE", "/api/integrations/executor");
  assert.ok([200, 409].includes(r.status), show(r.body));
  assert.equal((await slugs())[0], "executor");
});
