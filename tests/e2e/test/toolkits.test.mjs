// Toolkits (issue #22, spec §1.9, §3.12, §5) against the real binary: named allow-lists of tools,
// each its own MCP endpoint `/mcp/toolkits/<slug>`, driven with the official SDK client against the
// real fixture MCP server (`lib/fixture.mjs`). Covered:
//
// - the `/api/toolkits` routes: shapes, new rules on top, a duplicate connection pattern answering
//   the existing row, `GET …/tools`, `ToolkitError` refusals, delete cascading its rules only;
// - visibility: inside a toolkit only the granted connection's tools are searchable, describable,
//   listed by `integrations.list` and named in the `execute` description; `/mcp` sees everything;
// - blocking: a toolkit `block` rule and an ungranted tool answer `tool_blocked`, nothing is sent
//   downstream;
// - independence from the global policies (a global block does not reach in, a global approve
//   does not loosen a toolkit's require_approval, a global require_approval does not gate it);
// - the tool's default, rule order, org toolkits against personal (`user`) connections;
// - approval and resume in a toolkit (MCP `resume`, also after a SIGTERM restart on the same data
//   dir), replayed under the toolkit's rules; the global HTTP API and `/mcp` cannot see or answer a
//   toolkit's pause (issue #39: a pause answers only the endpoint it was made on); native mode
//   (`?elicitation_mode=native`, answered by the SDK client);
// - live edits seen by one open session at its next call;
// - an unknown slug (the session works, exposes nothing), unknown MCP paths (404, -32001) and a
//   session id used on another resource (403, -32003);
// - stdio: `executor mcp --toolkit <slug>` bridged to the running server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { serveMcpServer, SEED_TOOLS, EXTRA_TOOLS } from "../lib/fixture.mjs";
import { startExecutor, addMcpIntegration, EXECUTOR_BIN, show } from "../lib/executor.mjs";

const T = { timeout: 30_000 };
const EXEC_ID = /^exec_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Every tool of one fixture connection. */
const FIXTURE_TOOLS = [...SEED_TOOLS, ...EXTRA_TOOLS].sort();

let ex;
let fixture;

before(async () => {
  fixture = await serveMcpServer();
  ex = await startExecutor();
});
after(async () => {
  await ex?.kill();
  await fixture?.close();
});

// ---- helpers ------------------------------------------------------------------------------------

const hex = () => randomBytes(3).toString("hex");
/** A fresh toolkit slug (a-z, 0-9, '-'). */
const kitSlug = (prefix = "kit") => `${prefix}-${hex()}`;

/** `tools/call` requests the fixture received (any tool) since the last clear. */
const downstreamCalls = () => fixture.requests().filter((r) => r.httpMethod === "POST" && r.rpcMethods.includes("tools/call")).length;

async function createToolkit(server, { owner = "org", name, slug } = {}) {
  if (slug === undefined) slug = kitSlug();
  const body = { owner, name: name ?? `Toolkit ${slug}`, ...(slug === null ? {} : { slug }) };
  const r = await server.api("POST", "/api/toolkits", body);
  assert.equal(r.status, 200, `POST /api/toolkits ${show(body)} → ${show(r.body)}\n${server.logs()}`);
  assert.match(r.body.id ?? "", /^tk_/, show(r.body));
  return r.body;
}

/** POST /api/toolkits/{id}/connections {pattern}; returns the row. */
async function grant(server, kit, pattern) {
  const r = await server.api("POST", `/api/toolkits/${kit.id}/connections`, { pattern });
  assert.equal(r.status, 200, `grant ${pattern}: ${show(r.body)}`);
  assert.match(r.body.id ?? "", /^tkconn_/, show(r.body));
  return r.body;
}

/** POST /api/toolkits/{id}/policies {pattern, action}; returns the row. */
async function rule(server, kit, pattern, action) {
  const r = await server.api("POST", `/api/toolkits/${kit.id}/policies`, { pattern, action });
  assert.equal(r.status, 200, `rule ${pattern} → ${action}: ${show(r.body)}`);
  assert.match(r.body.id ?? "", /^tkpol_/, show(r.body));
  return r.body;
}

async function removed(server, path) {
  const r = await server.api("DELETE", path);
  assert.deepEqual([r.status, r.body], [200, { removed: true }], `DELETE ${path}`);
}

/** A global policy (POST /api/policies). */
async function globalPolicy(server, pattern, action) {
  const r = await server.api("POST", "/api/policies", { owner: "org", pattern, action });
  assert.equal(r.status, 200, show(r.body));
  return r.body;
}

/**
 * Two fixture integrations: `a` with org connections `main` and `other`, `b` with `main`.
 */
async function twoIntegrations(server) {
  const { slug: a } = await addMcpIntegration(server, fixture.url);
  const other = await server.api("POST", "/api/connections", { owner: "org", name: "other", integration: a, template: "none", value: "" });
  assert.equal(other.status, 200, show(other.body));
  const { slug: b } = await addMcpIntegration(server, fixture.url);
  return { a, b };
}

/** An SDK client on `path` (`/mcp`, `/mcp/toolkits/<slug>`, …) of `server`. */
async function mcpOn(server, path) {
  const client = new Client({ name: "e2e-toolkits", version: "0.0.1" }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(`${server.baseUrl}${path}`), server.mcpTransportOptions());
  await client.connect(transport);
  return { client, transport };
}
const onToolkit = (server, slug) => mcpOn(server, `/mcp/toolkits/${slug}`);

/** Run `code` with the MCP `execute` tool; the raw CallToolResult. */
const execTool = (client, code) => client.callTool({ name: "execute", arguments: { code } });
const resumeTool = (client, executionId, action) => client.callTool({ name: "resume", arguments: { executionId, action } });
const textOf = (result) => result.content?.find((c) => c.type === "text")?.text ?? "";

/** Run `code` and return the completed result (asserting it completed). */
async function run(client, code) {
  const r = await execTool(client, code);
  assert.equal(r.structuredContent?.status, "completed", `${code}\n→ ${show(r)}`);
  assert.notEqual(r.isError, true, `${code}\n→ ${show(r)}`);
  return r.structuredContent.result;
}

/** The `execute` tool's description as `tools/list` answers it. */
async function executeDescription(client) {
  const { tools } = await client.listTools();
  const execute = tools.find((t) => t.name === "execute");
  assert.ok(execute, show(tools));
  return execute.description;
}
/** The integrations the execute description names (its "- `slug`" lines). */
const listedIntegrations = (description) => [...description.matchAll(/^- `([^`]+)`$/gm)].map((m) => m[1]).sort();

/** A call's code returning its `{ok, …}` union. */
const callCode = (address, args = {}) => `return await tools.${address}(${JSON.stringify(args)})`;

function assertBlocked(result, what) {
  assert.equal(result?.ok, false, `${what}: ${show(result)}`);
  assert.equal(result?.error?.code, "tool_blocked", `${what}: ${show(result)}`);
}

/** The tools `tools.search` enumerates (empty query) in one integration's namespace. */
const enumerateCode = (namespace) => `return await tools.search({ query: "", namespace: ${JSON.stringify(namespace)}, limit: 200 })`;
/**
 * A sandbox expression: the enumerations of several namespaces (integration slugs, or `executor`
 * for the built-in tools) as one page {items, total}. An empty query without a namespace answers
 * nothing by design, so "everything visible" is the union over the integrations that exist.
 */
const visibleJs = (namespaces) =>
  `(await Promise.all(${JSON.stringify(namespaces)}.map((namespace) => tools.search({ query: "", namespace, limit: 200 }))))` +
  `.reduce((acc, p) => ({ items: [...acc.items, ...p.items], total: acc.total + p.total }), { items: [], total: 0 })`;

const paths = (page) => page.items.map((i) => i.path).sort();
const under = (prefix, names = FIXTURE_TOOLS) => names.map((n) => `${prefix}.${n}`).sort();

/** The JSON-RPC message of an MCP HTTP answer (plain JSON, or the last `data:` of an SSE body). */
function rpcMessage(text) {
  try {
    return JSON.parse(text);
  } catch {}
  const data = text
    .split(/\r?\n/)
    .filter((l) => l.startsWith("data:"))
    .map((l) => l.slice(5).trim())
    .filter(Boolean);
  for (const d of data.reverse()) {
    try {
      return JSON.parse(d);
    } catch {}
  }
  return text;
}

const PROTOCOL = "2025-06-18";
const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "e2e-raw", version: "0.0.1" } },
};
const TOOLS_LIST = { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} };

/** One raw JSON-RPC POST to an MCP path: {status, message, headers}. */
async function rawRpc(server, path, message, sessionId) {
  const headers = { accept: "application/json, text/event-stream", "mcp-protocol-version": PROTOCOL };
  if (sessionId) headers["mcp-session-id"] = sessionId;
  const r = await server.api("POST", path, message, { headers, timeoutMs: 10_000 });
  return { status: r.status, message: rpcMessage(r.text), headers: r.headers, text: r.text };
}

/** The approval pause of an MCP `execute` result; returns its executionId. */
function assertPausedOn(result, address) {
  const s = result.structuredContent;
  assert.equal(s?.status, "waiting_for_interaction", show(result));
  assert.match(s.executionId ?? "", EXEC_ID, show(result));
  assert.equal(s.interaction?.address, `tools.${address}`, show(result));
  assert.ok(s.interaction.message.startsWith(`Approve tools.${address}?`), show(result));
  return s.executionId;
}

// ---- HTTP API -----------------------------------------------------------------------------------

test("HTTP · toolkits, their policies and connection patterns: shapes, order, counts, GET …/tools", T, async () => {
  const { a } = await twoIntegrations(ex);
  const suffix = hex();

  // The slug is derived from the name when absent.
  const kit = await createToolkit(ex, { name: `Support Desk ${suffix}`, slug: null });
  assert.equal(kit.slug, `support-desk-${suffix}`, show(kit));
  assert.equal(kit.owner, "org", show(kit));
  assert.equal(kit.name, `Support Desk ${suffix}`, show(kit));
  assert.equal(kit.connectionCount, 0, show(kit));
  assert.equal(kit.policyCount, 0, show(kit));
  assert.ok(kit.createdAt !== undefined && kit.updatedAt !== undefined, show(kit));

  const listed = await ex.api("GET", "/api/toolkits");
  assert.equal(listed.status, 200, show(listed.body));
  assert.ok(Array.isArray(listed.body.toolkits), show(listed.body));
  assert.deepEqual(listed.body.toolkits.find((t) => t.id === kit.id), kit, show(listed.body));

  // PATCH: the name, then the slug.
  const renamed = await ex.api("PATCH", `/api/toolkits/${kit.id}`, { name: "Support desk (renamed)" });
  assert.equal(renamed.status, 200, show(renamed.body));
  assert.equal(renamed.body.name, "Support desk (renamed)");
  assert.equal(renamed.body.slug, kit.slug, "renaming keeps the slug");
  const newSlug = kitSlug("desk");
  const reslugged = await ex.api("PATCH", `/api/toolkits/${kit.id}`, { slug: newSlug });
  assert.equal(reslugged.status, 200, show(reslugged.body));
  assert.equal(reslugged.body.slug, newSlug, show(reslugged.body));
  assert.equal(reslugged.body.id, kit.id);

  // Connection patterns; a duplicate answers the existing row.
  const pattern = `${a}.org.main.*`;
  const conn = await grant(ex, kit, pattern);
  assert.equal(conn.toolkitId, kit.id, show(conn));
  assert.equal(conn.pattern, pattern, show(conn));
  assert.ok(conn.position !== undefined && conn.createdAt !== undefined && conn.updatedAt !== undefined, show(conn));
  const again = await grant(ex, kit, pattern);
  assert.deepEqual(again, conn, "a duplicate pattern answers the existing row");
  const conns = await ex.api("GET", `/api/toolkits/${kit.id}/connections`);
  assert.equal(conns.status, 200, show(conns.body));
  assert.deepEqual(conns.body, { connections: [conn] });

  // No rules: every granted tool, by its default (the fixture's tools are not annotated).
  const exposed = await ex.api("GET", `/api/toolkits/${kit.id}/tools`);
  assert.equal(exposed.status, 200, show(exposed.body));
  assert.deepEqual(exposed.body.tools.map((t) => t.address).sort(), under(`tools.${a}.org.main`), show(exposed.body));
  for (const t of exposed.body.tools) {
    assert.equal(t.action, "approve", show(t));
    assert.deepEqual(t.decidedBy, { kind: "default" }, show(t));
    assert.equal(typeof t.name, "string", show(t));
    assert.equal(typeof t.description, "string", show(t));
  }

  // Policies: new rules go to the top.
  const gate = await rule(ex, kit, `${a}.org.main.echo`, "require_approval");
  assert.equal(gate.toolkitId, kit.id, show(gate));
  assert.equal(gate.pattern, `${a}.org.main.echo`);
  assert.equal(gate.action, "require_approval");
  assert.ok(gate.position !== undefined && gate.createdAt !== undefined && gate.updatedAt !== undefined, show(gate));
  const block = await rule(ex, kit, `${a}.*.*.fail_tool`, "block");
  const policies = await ex.api("GET", `/api/toolkits/${kit.id}/policies`);
  assert.equal(policies.status, 200, show(policies.body));
  assert.deepEqual(policies.body.policies.map((p) => p.id), [block.id, gate.id], `the newer rule first: ${show(policies.body)}`);

  const withRules = await ex.api("GET", `/api/toolkits/${kit.id}/tools`);
  const byName = Object.fromEntries(withRules.body.tools.map((t) => [t.name, t]));
  assert.ok(!("fail_tool" in byName), `a blocked tool is not listed: ${show(withRules.body)}`);
  assert.equal(byName.echo?.action, "require_approval", show(byName.echo));
  assert.deepEqual(byName.echo.decidedBy, { kind: "policy", id: gate.id, pattern: gate.pattern }, show(byName.echo));
  assert.deepEqual(byName.get_workspace?.decidedBy, { kind: "default" }, show(byName.get_workspace));

  // PATCH a policy's action.
  const loosened = await ex.api("PATCH", `/api/toolkits/${kit.id}/policies/${gate.id}`, { action: "approve" });
  assert.equal(loosened.status, 200, show(loosened.body));
  assert.equal(loosened.body.id, gate.id);
  assert.equal(loosened.body.action, "approve");
  assert.equal(loosened.body.pattern, gate.pattern);
  const after = await ex.api("GET", `/api/toolkits/${kit.id}/tools`);
  assert.equal(after.body.tools.find((t) => t.name === "echo")?.action, "approve", show(after.body));

  // The counts follow.
  const counted = (await ex.api("GET", "/api/toolkits")).body.toolkits.find((t) => t.id === kit.id);
  assert.equal(counted.connectionCount, 1, show(counted));
  assert.equal(counted.policyCount, 2, show(counted));

  // Removing a policy and a connection pattern.
  await removed(ex, `/api/toolkits/${kit.id}/policies/${block.id}`);
  await removed(ex, `/api/toolkits/${kit.id}/connections/${conn.id}`);
  assert.deepEqual((await ex.api("GET", `/api/toolkits/${kit.id}/connections`)).body, { connections: [] });
  assert.deepEqual((await ex.api("GET", `/api/toolkits/${kit.id}/tools`)).body, { tools: [] });
  await removed(ex, `/api/toolkits/${kit.id}`);
});

test("HTTP · refusals are 400 ToolkitError with a sentence, and change nothing", T, async () => {
  const kit = await createToolkit(ex);
  const refusals = [
    ["POST", "/api/toolkits", { owner: "org", name: "x", slug: "Bad_Slug" }, /^Toolkit slug must be/],
    ["POST", "/api/toolkits", { owner: "org", name: "x", slug: "-lead" }, /^Toolkit slug must be/],
    ["POST", "/api/toolkits", { owner: "org", name: "x", slug: "trail-" }, /^Toolkit slug must be/],
    ["POST", "/api/toolkits", { owner: "org", name: "x", slug: "a".repeat(64) }, /^Toolkit slug must be/],
    ["POST", "/api/toolkits", { owner: "org", name: "  " }, /^Toolkit name is required\.$/],
    ["POST", "/api/toolkits", { owner: "org", name: "Other", slug: kit.slug }, new RegExp(`^Toolkit slug "${kit.slug}" is already in use\\.$`)],
    ["PATCH", `/api/toolkits/${kit.id}`, { slug: "No Spaces" }, /^Toolkit slug must be/],
    ["POST", `/api/toolkits/${kit.id}/policies`, { pattern: "fx.*x", action: "block" }, /^Invalid toolkit policy pattern/],
    ["POST", `/api/toolkits/${kit.id}/policies`, { pattern: "", action: "block" }, /^Invalid toolkit policy pattern/],
    ["POST", `/api/toolkits/${kit.id}/policies`, { pattern: "fx.*", action: "deny" }, /deny/],
    ["POST", `/api/toolkits/${kit.id}/connections`, { pattern: "" }, /^Invalid toolkit (connection |policy )?pattern/],
    ["POST", `/api/toolkits/${kit.id}/connections`, { pattern: "fx..*" }, /^Invalid toolkit (connection |policy )?pattern/],
    ["POST", `/api/toolkits/${kit.id}/connections`, { pattern: "fx.*x" }, /^Invalid toolkit (connection |policy )?pattern/],
    ["PATCH", `/api/toolkits/${kit.id}/policies/tkpol_nope`, { action: "block" }, /^Toolkit policy not found\.$/],
    ["DELETE", `/api/toolkits/${kit.id}/policies/tkpol_nope`, undefined, /^Toolkit policy not found\.$/],
    ["DELETE", `/api/toolkits/${kit.id}/connections/tkconn_nope`, undefined, /^Toolkit connection not found\.$/],
  ];
  for (const id of ["tk_nope", "nope"]) {
    for (const [method, path, body] of [
      ["PATCH", `/api/toolkits/${id}`, { name: "x" }],
      ["DELETE", `/api/toolkits/${id}`],
      ["GET", `/api/toolkits/${id}/policies`],
      ["POST", `/api/toolkits/${id}/policies`, { pattern: "fx.*", action: "block" }],
      ["GET", `/api/toolkits/${id}/connections`],
      ["POST", `/api/toolkits/${id}/connections`, { pattern: "fx.*" }],
      ["GET", `/api/toolkits/${id}/tools`],
    ]) {
      refusals.push([method, path, body, /^Toolkit not found\.$/]);
    }
  }
  // The other toolkit exists so that a taken slug on PATCH can be tried too.
  const other = await createToolkit(ex);
  refusals.push(["PATCH", `/api/toolkits/${other.id}`, { slug: kit.slug }, new RegExp(`^Toolkit slug "${kit.slug}" is already in use\\.$`)]);

  const failures = [];
  for (const [method, path, body, says] of refusals) {
    const r = await ex.api(method, path, body);
    const ok = r.status === 400 && r.body?._tag === "ToolkitError" && typeof r.body?.message === "string" && says.test(r.body.message);
    if (!ok) failures.push(`${method} ${path} ${show(body)}\n  expected 400 ToolkitError ${says}\n  got ${r.status} ${r.text}`);
  }
  assert.deepEqual(failures, [], failures.join("\n"));

  // Nothing changed.
  const list = (await ex.api("GET", "/api/toolkits")).body.toolkits;
  assert.deepEqual(list.find((t) => t.id === kit.id), kit, show(list));
  assert.equal(list.filter((t) => t.name === "x" || t.name === "Other").length, 0, show(list));
  assert.deepEqual((await ex.api("GET", `/api/toolkits/${kit.id}/policies`)).body, { policies: [] });
  assert.deepEqual((await ex.api("GET", `/api/toolkits/${kit.id}/connections`)).body, { connections: [] });
  await removed(ex, `/api/toolkits/${kit.id}`);
  await removed(ex, `/api/toolkits/${other.id}`);
});

test("HTTP · delete takes the toolkit's rules; the integration's connections stay; an open session sees nothing", T, async () => {
  const { a } = await twoIntegrations(ex);
  const kit = await createToolkit(ex);
  await grant(ex, kit, `${a}.org.main.*`);
  await rule(ex, kit, `${a}.org.main.echo`, "block");
  const { client } = await onToolkit(ex, kit.slug);
  try {
    assert.equal((await run(client, callCode(`${a}.org.main.get_workspace`))).ok, true);

    await removed(ex, `/api/toolkits/${kit.id}`);
    assert.ok(!(await ex.api("GET", "/api/toolkits")).body.toolkits.some((t) => t.id === kit.id));
    for (const sub of ["policies", "connections", "tools"]) {
      const r = await ex.api("GET", `/api/toolkits/${kit.id}/${sub}`);
      assert.deepEqual([r.status, r.body], [400, { _tag: "ToolkitError", message: "Toolkit not found." }], `GET …/${sub} after delete`);
    }
    // The connections and the integration are untouched, and still callable on /mcp.
    const connections = await ex.api("GET", `/api/connections?integration=${a}`);
    assert.deepEqual(connections.body.map((c) => c.name).sort(), ["main", "other"], show(connections.body));
    assert.equal((await ex.api("GET", `/api/integrations/${a}`)).status, 200);
    const direct = await ex.execute(callCode(`${a}.org.main.echo`, { message: "still" }));
    assert.equal(direct.body?.structured?.result?.ok, true, show(direct.body));

    // The open session now has no toolkit: nothing is exposed.
    assertBlocked(await run(client, callCode(`${a}.org.main.get_workspace`)), "after the toolkit is deleted");
    assert.equal((await run(client, `return ${visibleJs([a, "executor"])}`)).total, 0);

    // A new toolkit with the same slug starts empty: the rules went with the old one.
    const reborn = await createToolkit(ex, { slug: kit.slug });
    assert.notEqual(reborn.id, kit.id);
    assert.deepEqual([reborn.connectionCount, reborn.policyCount], [0, 0], show(reborn));
    assert.deepEqual((await ex.api("GET", `/api/toolkits/${reborn.id}/policies`)).body, { policies: [] });
    assert.deepEqual((await ex.api("GET", `/api/toolkits/${reborn.id}/connections`)).body, { connections: [] });
    await removed(ex, `/api/toolkits/${reborn.id}`);
  } finally {
    await client.close();
  }
});

// ---- MCP: visibility and blocking -----------------------------------------------------------------

test("MCP · visibility: a toolkit shows only the granted connection's tools; /mcp sees everything", T, async () => {
  const { a, b } = await twoIntegrations(ex);
  const kit = await createToolkit(ex);
  await grant(ex, kit, `${a}.org.main.*`);

  const discovery = `return {
    all: ${visibleJs([a, b, "executor"])},
    inA: await tools.search({ query: "", namespace: ${JSON.stringify(a)}, limit: 200 }),
    inB: await tools.search({ query: "", namespace: ${JSON.stringify(b)}, limit: 200 }),
    ranked: await tools.search({ query: "echo message", limit: 50 }),
    mainEcho: await tools.describe.tool({ path: "${a}.org.main.echo" }),
    otherEcho: await tools.describe.tool({ path: "${a}.org.other.echo" }),
    bEcho: await tools.describe.tool({ path: "${b}.org.main.echo" }),
    integrations: await tools.executor.integrations.list({ limit: 200 }),
  }`;

  const { client } = await onToolkit(ex, kit.slug);
  try {
    const description = await executeDescription(client);
    assert.deepEqual(listedIntegrations(description), [a], `the execute description names only ${a}:\n${description}`);

    const r = await run(client, discovery);
    assert.deepEqual(paths(r.all), under(`${a}.org.main`), `search over everything finds only ${a}.org.main: ${show(r.all)}`);
    assert.equal(r.all.total, FIXTURE_TOOLS.length, show(r.all));
    assert.deepEqual(paths(r.inA), under(`${a}.org.main`), show(r.inA));
    assert.deepEqual([r.inB.total, r.inB.items], [0, []], show(r.inB));
    assert.ok(r.ranked.items.length > 0, show(r.ranked));
    assert.ok(r.ranked.items.every((i) => i.path.startsWith(`${a}.org.main.`)), show(r.ranked));
    assert.equal(r.ranked.items[0].path, `${a}.org.main.echo`, show(r.ranked));
    assert.equal(r.mainEcho.name, "echo", show(r.mainEcho));
    assert.equal(r.otherEcho.error?.code, "tool_not_found", show(r.otherEcho));
    assert.equal(r.bEcho.error?.code, "tool_not_found", show(r.bEcho));
    assert.deepEqual(r.integrations.items.map((i) => i.id), [a], `integrations.list hides ${b}: ${show(r.integrations)}`);
    assert.equal(r.integrations.total, 1, show(r.integrations));
    assert.equal(r.integrations.items[0].toolCount, FIXTURE_TOOLS.length, "only the granted connection's tools are counted");

    // The built-in tools are granted like any other (by a pattern): blocked until then.
    assertBlocked(await run(client, callCode("executor.coreTools.integrations.list")), "core tools are not granted");
    await grant(ex, kit, "executor.coreTools.*");
    const core = await run(client, callCode("executor.coreTools.integrations.list", { limit: 200 }));
    assert.equal(core.ok, true, show(core));
    // Now the built-in integration has granted tools too, so it is listed beside `a`.
    assert.deepEqual(core.data.items.map((i) => i.id).sort(), ["executor", a].sort(), `coreTools.integrations.list hides ${b}: ${show(core)}`);
    assert.equal(core.data.items.find((i) => i.id === a).toolCount, FIXTURE_TOOLS.length, show(core));
    const conns = await run(client, callCode("executor.coreTools.connections.list"));
    assert.equal(conns.ok, true, show(conns));
    assert.deepEqual(
      conns.data.items.filter((c) => c.integration === a || c.integration === b).map((c) => `${c.integration}.${c.name}`),
      [`${a}.main`],
      `only the granted connection is listed: ${show(conns)}`,
    );
    const withCore = await run(client, `return ${visibleJs([a, b, "executor"])}`);
    assert.ok(withCore.items.some((i) => i.path === "executor.coreTools.integrations.list"), show(withCore));
    assert.ok(withCore.items.every((i) => i.path.startsWith(`${a}.org.main.`) || i.path.startsWith("executor.coreTools.")), show(withCore));
  } finally {
    await client.close();
  }

  // The same code on /mcp sees everything.
  const { client: open } = await mcpOn(ex, "/mcp");
  try {
    const description = await executeDescription(open);
    const named = listedIntegrations(description);
    assert.ok(named.includes(a) && named.includes(b), description);
    const r = await run(open, discovery);
    const all = paths(r.all);
    for (const p of [...under(`${a}.org.main`), ...under(`${a}.org.other`), ...under(`${b}.org.main`), "executor.coreTools.integrations.list"]) {
      assert.ok(all.includes(p), `/mcp search lists ${p}`);
    }
    assert.deepEqual(paths(r.inA), [...under(`${a}.org.main`), ...under(`${a}.org.other`)].sort(), show(r.inA));
    assert.deepEqual(paths(r.inB), under(`${b}.org.main`), show(r.inB));
    assert.equal(r.otherEcho.name, "echo", show(r.otherEcho));
    assert.equal(r.bEcho.name, "echo", show(r.bEcho));
    const ids = r.integrations.items.map((i) => i.id);
    assert.ok(ids.includes(a) && ids.includes(b), show(r.integrations));
  } finally {
    await open.close();
  }
});

test("MCP · blocking: a toolkit block rule and ungranted tools answer tool_blocked; nothing goes downstream", T, async () => {
  const { a, b } = await twoIntegrations(ex);
  const kit = await createToolkit(ex);
  await grant(ex, kit, `${a}.org.main.*`);
  await rule(ex, kit, `${a}.org.main.echo`, "block");

  const { client } = await onToolkit(ex, kit.slug);
  try {
    fixture.clearRequests();
    assertBlocked(await run(client, callCode(`${a}.org.main.echo`, { message: "no" })), "toolkit block rule");
    assertBlocked(await run(client, callCode(`${a}.org.other.echo`, { message: "no" })), "ungranted connection");
    assertBlocked(await run(client, callCode(`${b}.org.main.echo`, { message: "no" })), "ungranted integration");
    assertBlocked(await run(client, callCode(`${b}.org.main.select_workspace`)), "ungranted integration");
    assert.equal(downstreamCalls(), 0, `blocked calls never reach the server: ${show(fixture.requests())}`);

    // Catchable too: blocked is a value, not a throw.
    const seen = await run(client, `const r = await tools.${a}.org.main.echo({ message: "x" }); return r.ok ? "ran" : r.error.code`);
    assert.equal(seen, "tool_blocked");

    // The rest of the granted connection runs.
    const ok = await run(client, `return (await tools.${a}.org.main.structured_tool({ n: 21 })).data.structuredContent.doubled`);
    assert.equal(ok, 42);
    assert.equal(downstreamCalls(), 1);

    // The blocked tool is gone from search and describe.
    const hidden = await run(
      client,
      `return { all: await tools.search({ query: "", namespace: "${a}", limit: 200 }), d: await tools.describe.tool({ path: "${a}.org.main.echo" }) }`,
    );
    assert.deepEqual(paths(hidden.all), under(`${a}.org.main`, FIXTURE_TOOLS.filter((n) => n !== "echo")), show(hidden.all));
    assert.equal(hidden.d.error?.code, "tool_not_found", show(hidden.d));
  } finally {
    await client.close();
  }

  // Outside the toolkit nothing is blocked.
  const { client: open } = await mcpOn(ex, "/mcp");
  try {
    assert.equal((await run(open, callCode(`${a}.org.main.echo`, { message: "yes" }))).ok, true);
    assert.equal((await run(open, callCode(`${b}.org.main.echo`, { message: "yes" }))).ok, true);
  } finally {
    await open.close();
  }
});

test("MCP · global policies are not consulted inside a toolkit", T, async () => {
  const { a } = await twoIntegrations(ex);
  const kit = await createToolkit(ex);
  await grant(ex, kit, `${a}.org.main.*`);
  const gate = await rule(ex, kit, `${a}.org.main.echo`, "require_approval");

  await globalPolicy(ex, `${a}.*.*.get_workspace`, "block");
  await globalPolicy(ex, `${a}.*.*.echo`, "approve");
  await globalPolicy(ex, `${a}.*.*.select_workspace`, "require_approval");

  const { client: open } = await mcpOn(ex, "/mcp");
  const { client } = await onToolkit(ex, kit.slug);
  try {
    // /mcp follows the global policies.
    assertBlocked(await run(open, callCode(`${a}.org.main.get_workspace`)), "global block on /mcp");
    assert.equal((await run(open, callCode(`${a}.org.main.echo`, { message: "free" }))).ok, true, "global approve on /mcp");
    const gated = await execTool(open, callCode(`${a}.org.main.select_workspace`));
    const gatedId = assertPausedOn(gated, `${a}.org.main.select_workspace`);
    await resumeTool(open, gatedId, "cancel");

    // The toolkit does not: the global block does not reach in …
    const got = await run(client, callCode(`${a}.org.main.get_workspace`));
    assert.equal(got.ok, true, `a global block must not block a tool the toolkit grants: ${show(got)}`);
    // … the global require_approval does not gate …
    const sel = await execTool(client, callCode(`${a}.org.main.select_workspace`));
    assert.equal(sel.structuredContent?.status, "completed", `a global require_approval must not pause inside the toolkit: ${show(sel)}`);
    assert.equal(sel.structuredContent.result?.ok, true, show(sel));
    // … and the global approve does not loosen the toolkit's require_approval.
    const paused = await execTool(client, callCode(`${a}.org.main.echo`, { message: "gated" }));
    const id = assertPausedOn(paused, `${a}.org.main.echo`);
    assert.ok(!paused.structuredContent.interaction.message.includes(`${a}.*.*.echo`), `the pause does not cite the global rule: ${show(paused)}`);
    const done = await resumeTool(client, id, "accept");
    assert.equal(done.structuredContent?.status, "completed", show(done));
    assert.equal(done.structuredContent.result?.data?.content?.[0]?.text, "echo:gated", show(done));

    // The toolkit's rule shows in its tool listing; the global ones do not.
    const exposed = (await ex.api("GET", `/api/toolkits/${kit.id}/tools`)).body.tools;
    const byName = Object.fromEntries(exposed.map((t) => [t.name, t]));
    assert.equal(byName.get_workspace?.action, "approve", show(exposed));
    assert.equal(byName.select_workspace?.action, "approve", show(exposed));
    assert.deepEqual(byName.echo?.decidedBy, { kind: "policy", id: gate.id, pattern: gate.pattern }, show(exposed));
  } finally {
    await client.close();
    await open.close();
  }
});

test("MCP · a tool's default, first matching rule by position, org toolkits and personal connections", T, async () => {
  const { a } = await twoIntegrations(ex);
  const mine = await ex.api("POST", "/api/connections", { owner: "user", name: "mine", integration: a, template: "none", value: "" });
  assert.equal(mine.status, 200, show(mine.body));

  // Defaults: core tools annotated requiresApproval pause, the others run.
  const kit = await createToolkit(ex);
  await grant(ex, kit, "executor.coreTools.*");
  await grant(ex, kit, `${a}.*.*.*`);
  const { client } = await onToolkit(ex, kit.slug);
  try {
    assert.equal((await run(client, callCode("executor.coreTools.policies.list"))).ok, true);
    const refresh = callCode("executor.coreTools.connections.refresh", { owner: "org", integration: a, name: "main" });
    const paused = await execTool(client, refresh);
    assert.equal(paused.structuredContent?.status, "waiting_for_interaction", `connections.refresh (annotated requiresApproval) pauses by default: ${show(paused)}`);
    assert.ok(paused.structuredContent.interaction?.address?.endsWith("executor.coreTools.connections.refresh"), show(paused));
    const id = paused.structuredContent.executionId;
    await resumeTool(client, id, "cancel");
    // A toolkit approve rule lifts the default.
    await rule(ex, kit, "executor.coreTools.connections.refresh", "approve");
    const ran = await execTool(client, refresh);
    assert.equal(ran.structuredContent?.status, "completed", `the toolkit's approve decides: ${show(ran)}`);
    assert.equal(ran.structuredContent.result?.ok, true, show(ran));

    // The first matching rule by position decides; new rules go to the top.
    await rule(ex, kit, `${a}.org.main.*`, "block");
    await rule(ex, kit, `${a}.org.main.echo`, "approve"); // above the block
    assert.equal((await run(client, callCode(`${a}.org.main.echo`, { message: "top" }))).ok, true, "the newer approve is above the block");
    assertBlocked(await run(client, callCode(`${a}.org.main.get_workspace`)), "the block matches the rest");
    await rule(ex, kit, `${a}.org.main.echo`.replace(/echo$/, "*"), "require_approval"); // now on top of both
    assertPausedOn(await execTool(client, callCode(`${a}.org.main.echo`, { message: "x" })), `${a}.org.main.echo`);

    // An org toolkit blocks every personal (user-owned) tool, even when a pattern matches it.
    assert.equal((await run(client, callCode(`${a}.org.other.echo`, { message: "org" }))).ok, true);
    await grant(ex, kit, `${a}.user.mine.*`);
    assertBlocked(await run(client, callCode(`${a}.user.mine.echo`, { message: "personal" })), "a user tool in an org toolkit");
    const found = await run(client, enumerateCode(a));
    assert.ok(!found.items.some((i) => i.path.startsWith(`${a}.user.`)), show(found));
  } finally {
    await client.close();
  }

  // A personal toolkit can expose personal connections.
  const own = await createToolkit(ex, { owner: "user" });
  assert.equal(own.owner, "user", show(own));
  await grant(ex, own, `${a}.user.mine.*`);
  const { client: personal } = await onToolkit(ex, own.slug);
  try {
    const r = await run(personal, callCode(`${a}.user.mine.echo`, { message: "mine" }));
    assert.equal(r.ok, true, show(r));
    assertBlocked(await run(personal, callCode(`${a}.org.main.echo`, { message: "not granted" })), "not granted in the personal toolkit");
  } finally {
    await personal.close();
  }
});

// ---- MCP: approvals -----------------------------------------------------------------------------

/** A toolkit granting `a.org.main.*` with echo gated and select_workspace blocked (globally free). */
async function gatedToolkit(server, a) {
  const kit = await createToolkit(server);
  await grant(server, kit, `${a}.org.main.*`);
  await rule(server, kit, `${a}.org.main.echo`, "require_approval");
  await rule(server, kit, `${a}.org.main.select_workspace`, "block");
  return kit;
}

/** Gated echo, then a call the toolkit blocks (but /mcp would run): the replay must keep the block. */
const gatedCode = (a, message) => `
const e = await tools.${a}.org.main.echo({ message: ${JSON.stringify(message)} });
const s = await tools.${a}.org.main.select_workspace({});
return { echo: e.ok ? e.data.content[0].text : e.error.code, select: s.ok ? "ran" : s.error.code };`;

test("MCP · a toolkit require_approval pauses; resume by the toolkit's MCP tool runs under its rules; HTTP and /mcp cannot answer it", T, async () => {
  const { a } = await twoIntegrations(ex);
  const kit = await gatedToolkit(ex, a);
  const { client } = await onToolkit(ex, kit.slug);
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["execute", "skills", "resume"], show(tools));

    fixture.clearRequests();
    const paused = await execTool(client, gatedCode(a, "via-mcp"));
    const id = assertPausedOn(paused, `${a}.org.main.echo`);
    assert.deepEqual(paused.structuredContent.interaction.args, { message: "via-mcp" }, show(paused));
    assert.equal(downstreamCalls(), 0, "nothing runs before the approval");
    const done = await resumeTool(client, id, "accept");
    assert.equal(done.structuredContent?.status, "completed", show(done));
    assert.deepEqual(done.structuredContent.result, { echo: "echo:via-mcp", select: "tool_blocked" }, show(done));
    assert.equal(downstreamCalls(), 1, `only echo went downstream: ${show(fixture.requests())}`);

    // Not over HTTP (global policies): neither seen nor answered, as if unknown.
    const paused2 = await execTool(client, gatedCode(a, "via-http"));
    const id2 = assertPausedOn(paused2, `${a}.org.main.echo`);
    const view = await ex.api("GET", `/api/executions/${id2}`);
    assert.equal(view.status, 404, show(view.body));
    const refused = await ex.api("POST", `/api/executions/${id2}/resume`, { action: "accept" });
    assert.equal(refused.status, 404, show(refused.body));
    assert.equal(refused.body?._tag, "ExecutionNotFoundError", show(refused.body));
    assert.equal(downstreamCalls(), 1, show(fixture.requests()));
    const resumed = await resumeTool(client, id2, "accept");
    assert.deepEqual(resumed.structuredContent?.result, { echo: "echo:via-http", select: "tool_blocked" }, show(resumed));
    assert.equal(downstreamCalls(), 2, show(fixture.requests()));

    // Decline rejects the call inside the code, as on /mcp.
    const paused3 = await execTool(client, `try { await tools.${a}.org.main.echo({ message: "n" }); return "ran"; } catch (e) { return "caught"; }`);
    const declined = await resumeTool(client, assertPausedOn(paused3, `${a}.org.main.echo`), "decline");
    assert.equal(declined.structuredContent?.result, "caught", show(declined));
    assert.equal(downstreamCalls(), 2);
  } finally {
    await client.close();
  }

  // The same code over HTTP (global policies, none here) runs echo and select_workspace.
  const free = await ex.api("POST", "/api/executions", { code: gatedCode(a, "global") });
  assert.deepEqual(free.body?.structured?.result, { echo: "echo:global", select: "ran" }, show(free.body));
});

test("MCP · ?elicitation_mode=native on a toolkit endpoint: the approval is asked with elicitation/create", T, async () => {
  const { a } = await twoIntegrations(ex);
  const kit = await gatedToolkit(ex, a);
  const client = new Client({ name: "e2e-toolkits-native", version: "0.0.1" }, { capabilities: { elicitation: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: "accept" };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${ex.baseUrl}/mcp/toolkits/${kit.slug}?elicitation_mode=native`), ex.mcpTransportOptions()));
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["execute", "skills"], "native mode has no resume tool");
    const done = await execTool(client, gatedCode(a, "native"));
    assert.equal(done.structuredContent?.status, "completed", show(done));
    assert.deepEqual(done.structuredContent.result, { echo: "echo:native", select: "tool_blocked" }, show(done));
    assert.equal(asked.length, 1, show(asked));
    assert.ok(asked[0].message.startsWith(`Approve tools.${a}.org.main.echo?`), show(asked));
  } finally {
    await client.close();
  }
});

test("restart (SIGTERM, same data dir): toolkit pauses resume under the toolkit's rules by its MCP tool, not over HTTP", { timeout: 60_000 }, async () => {
  const first = await startExecutor();
  let second;
  try {
    const { a } = await twoIntegrations(first);
    const kit = await gatedToolkit(first, a);
    const { client } = await onToolkit(first, kit.slug);
    let httpId;
    let mcpId;
    try {
      httpId = assertPausedOn(await execTool(client, gatedCode(a, "http-after-restart")), `${a}.org.main.echo`);
      mcpId = assertPausedOn(await execTool(client, gatedCode(a, "mcp-after-restart")), `${a}.org.main.echo`);
    } finally {
      await client.close();
    }
    const stopped = await first.stop();
    assert.equal(stopped.code, 0, `SIGTERM → exit 0\n${first.logs()}`);

    second = await startExecutor({ dataDir: first.dataDir });
    const kits = (await second.api("GET", "/api/toolkits")).body.toolkits;
    assert.ok(kits.some((k) => k.id === kit.id && k.slug === kit.slug), `the toolkit survives the restart: ${show(kits)}`);

    const refused = await second.api("POST", `/api/executions/${httpId}/resume`, { action: "accept" });
    assert.equal(refused.status, 404, `${show(refused.body)}\n${second.logs()}`);

    const { client: again } = await onToolkit(second, kit.slug);
    try {
      const resumed = await resumeTool(again, httpId, "accept");
      assert.equal(resumed.structuredContent?.status, "completed", show(resumed));
      assert.deepEqual(resumed.structuredContent.result, { echo: "echo:http-after-restart", select: "tool_blocked" }, show(resumed));
      const done = await resumeTool(again, mcpId, "accept");
      assert.equal(done.structuredContent?.status, "completed", show(done));
      assert.deepEqual(done.structuredContent.result, { echo: "echo:mcp-after-restart", select: "tool_blocked" }, show(done));
    } finally {
      await again.close();
    }
  } finally {
    await second?.kill({ removeDataDir: false });
    await first.kill({ removeDataDir: true });
  }
});

// ---- MCP: live edits, unknown slugs, resources ----------------------------------------------------

test("MCP · one open session follows toolkit edits at its next call (no reconnect)", T, async () => {
  const { a, b } = await twoIntegrations(ex);
  const kit = await createToolkit(ex);
  const { client } = await onToolkit(ex, kit.slug);
  const probe = `return {
    found: ${visibleJs([a, b, "executor"])}.items.map((i) => i.path),
    echo: await tools.${a}.org.main.echo({ message: "live" }),
  }`;
  try {
    let r = await run(client, probe);
    assert.deepEqual(r.found, [], "nothing granted yet");
    assertBlocked(r.echo, "before the grant");
    assert.deepEqual(listedIntegrations(await executeDescription(client)), []);

    const conn = await grant(ex, kit, `${a}.org.main.*`);
    r = await run(client, probe);
    assert.deepEqual(r.found.sort(), under(`${a}.org.main`), "the grant is seen at the next call");
    assert.equal(r.echo.ok, true, show(r.echo));
    assert.deepEqual(listedIntegrations(await executeDescription(client)), [a]);

    const block = await rule(ex, kit, `${a}.org.main.echo`, "block");
    r = await run(client, probe);
    assertBlocked(r.echo, "after a block rule");
    assert.ok(!r.found.includes(`${a}.org.main.echo`), show(r.found));
    await removed(ex, `/api/toolkits/${kit.id}/policies/${block.id}`);
    assert.equal((await run(client, probe)).echo.ok, true, "the rule's removal is seen");

    const second = await grant(ex, kit, `${b}.org.main.*`);
    assert.deepEqual(listedIntegrations(await executeDescription(client)), [a, b].sort());
    await removed(ex, `/api/toolkits/${kit.id}/connections/${conn.id}`);
    r = await run(client, probe);
    assertBlocked(r.echo, "after the pattern is removed");
    assert.deepEqual(r.found.sort(), under(`${b}.org.main`), show(r.found));
    assert.deepEqual(listedIntegrations(await executeDescription(client)), [b]);
    await removed(ex, `/api/toolkits/${kit.id}/connections/${second.id}`);
    assert.deepEqual((await run(client, probe)).found, []);
  } finally {
    await client.close();
  }
});

test("MCP · an unknown slug: the session works but exposes no tool", T, async () => {
  const { a } = await twoIntegrations(ex);
  for (const path of [`/mcp/toolkits/${kitSlug("nobody")}`, `/mcp/toolkits/${kitSlug("nobody")}/`]) {
    const { client } = await mcpOn(ex, path);
    try {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name), ["execute", "skills", "resume"], show(tools));
      const description = tools[0].description;
      assert.ok(description.startsWith("Execute TypeScript in a sandboxed runtime.\n\n"), description);
      assert.deepEqual(listedIntegrations(description), [], description);
      assert.ok(!description.includes(a), description);

      const one = await execTool(client, "return 1");
      assert.equal(textOf(one), "1", show(one));
      const r = await run(
        client,
        `return {
          all: ${visibleJs([a, "executor"])},
          ranked: await tools.search({ query: "echo" }),
          integrations: await tools.executor.integrations.list({}),
          described: await tools.describe.tool({ path: "${a}.org.main.echo" }),
          echo: await tools.${a}.org.main.echo({ message: "x" }),
          core: await tools.executor.coreTools.integrations.list({}),
        }`,
      );
      assert.deepEqual([r.all.total, r.all.items], [0, []], show(r.all));
      assert.deepEqual(r.ranked.items, [], show(r.ranked));
      assert.deepEqual([r.integrations.total, r.integrations.items], [0, []], show(r.integrations));
      assert.equal(r.described.error?.code, "tool_not_found", show(r.described));
      assert.equal(r.echo.ok, false, show(r.echo));
      assert.ok(["tool_blocked", "tool_not_found"].includes(r.echo.error?.code), show(r.echo));
      assertBlocked(r.core, "a core tool in an unknown toolkit");
    } finally {
      await client.close();
    }
  }
});

test("MCP · unknown MCP paths are 404 -32001; a session id used on another resource is 403 -32003", T, async () => {
  const kit = await createToolkit(ex);
  const other = await createToolkit(ex);
  for (const path of ["/mcp/nope", "/mcp/toolkits", "/mcp/toolkits/", "/mcp/toolkits/a/b", "/mcp/toolkit/a"]) {
    const r = await rawRpc(ex, path, INITIALIZE);
    assert.equal(r.status, 404, `${path}: ${r.text}`);
    assert.equal(r.message?.error?.code, -32001, `${path}: ${r.text}`);
    assert.equal(r.message?.jsonrpc, "2.0", `${path}: ${r.text}`);
  }

  const { client: open, transport: openTransport } = await mcpOn(ex, "/mcp");
  const { client: inKit, transport: kitTransport } = await onToolkit(ex, kit.slug);
  try {
    const openId = openTransport.sessionId;
    const kitId = kitTransport.sessionId;
    assert.ok(openId && kitId && openId !== kitId, `${openId} ${kitId}`);
    for (const [path, id] of [
      [`/mcp/toolkits/${kit.slug}`, openId],
      [`/mcp/toolkits/${kitSlug("nobody")}`, openId],
      ["/mcp", kitId],
      ["/mcp/", kitId],
      [`/mcp/toolkits/${other.slug}`, kitId],
    ]) {
      const r = await rawRpc(ex, path, TOOLS_LIST, id);
      assert.equal(r.status, 403, `session ${id} on ${path}: ${r.text}`);
      assert.equal(r.message?.error?.code, -32003, `session ${id} on ${path}: ${r.text}`);
    }
    // A trailing slash is the same resource.
    const same = await rawRpc(ex, `/mcp/toolkits/${kit.slug}/`, TOOLS_LIST, kitId);
    assert.equal(same.status, 200, same.text);
    assert.ok(Array.isArray(same.message?.result?.tools), same.text);
    // Both sessions still work where they were made.
    assert.equal(textOf(await execTool(open, "return 2")), "2");
    assert.equal(textOf(await execTool(inKit, "return 3")), "3");
  } finally {
    await open.close();
    await inKit.close();
  }
});

// ---- stdio ----------------------------------------------------------------------------------------

test("stdio · `executor mcp --toolkit <slug>` sees only the toolkit's tools", { timeout: 60_000 }, async () => {
  const { a, b } = await twoIntegrations(ex);
  const kit = await createToolkit(ex);
  await grant(ex, kit, `${a}.org.main.*`);
  await rule(ex, kit, `${a}.org.main.fail_tool`, "block");

  const stdio = (args) => {
    const transport = new StdioClientTransport({
      command: EXECUTOR_BIN,
      args,
      env: { ...process.env, EXECUTOR_DATA_DIR: ex.dataDir, EXECUTOR_SCOPE_DIR: ex.dataDir, EXECUTOR_LOG: "warn" },
      cwd: ex.dataDir,
      stderr: "pipe",
    });
    const state = { stderr: "" };
    transport.stderr?.on("data", (d) => (state.stderr += d));
    return { transport, state };
  };

  const { transport, state } = stdio(["mcp", "--toolkit", kit.slug]);
  const client = new Client({ name: "e2e-toolkits-stdio", version: "0.0.1" }, { capabilities: {} });
  await client.connect(transport);
  try {
    assert.deepEqual(listedIntegrations(await executeDescription(client)), [a], state.stderr);
    const r = await run(
      client,
      `return {
        all: ${visibleJs([a, b, "executor"])},
        echo: await tools.${a}.org.main.echo({ message: "stdio" }),
        fail: await tools.${a}.org.main.fail_tool({}),
        other: await tools.${a}.org.other.echo({ message: "no" }),
        b: await tools.${b}.org.main.echo({ message: "no" }),
      }`,
    );
    assert.deepEqual(paths(r.all), under(`${a}.org.main`, FIXTURE_TOOLS.filter((n) => n !== "fail_tool")), show(r.all));
    assert.equal(r.echo.data?.content?.[0]?.text, "echo:stdio", show(r.echo));
    assertBlocked(r.fail, "toolkit block over stdio");
    assertBlocked(r.other, "ungranted connection over stdio");
    assertBlocked(r.b, "ungranted integration over stdio");

    // A gated call pauses and resumes through the bridge.
    await rule(ex, kit, `${a}.org.main.echo`, "require_approval");
    const paused = await execTool(client, `return (await tools.${a}.org.main.echo({ message: "gated" })).data.content[0].text`);
    const id = assertPausedOn(paused, `${a}.org.main.echo`);
    const done = await resumeTool(client, id, "accept");
    assert.equal(done.structuredContent?.result, "echo:gated", show(done));
  } catch (e) {
    e.message += `\n--- executor mcp --toolkit stderr:\n${state.stderr}`;
    throw e;
  } finally {
    await client.close();
  }

  // Without --toolkit the same bridge sees everything.
  const plain = stdio(["mcp"]);
  const open = new Client({ name: "e2e-toolkits-stdio", version: "0.0.1" }, { capabilities: {} });
  await open.connect(plain.transport);
  try {
    const named = listedIntegrations(await executeDescription(open));
    assert.ok(named.includes(a) && named.includes(b), show(named));
    assert.equal((await run(open, callCode(`${b}.org.main.echo`, { message: "yes" }))).ok, true);
  } finally {
    await open.close();
  }
});
