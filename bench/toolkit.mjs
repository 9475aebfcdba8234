#!/usr/bin/env node
// Toolkit figures (issue #22, BENCHMARKS.md): the cost of a fresh MCP session on a toolkit
// endpoint — connect (initialize + initialized) + `tools/list` + `execute("return 1")` — with an
// empty catalog and with a 3,000-operation synthetic OpenAPI spec granted to the toolkit, and the
// time of `execute` running `return await tools.search({ query })` inside the toolkit against the
// same on `/mcp`. The issue's aims: ≤ 50 ms above the empty catalog, and search inside a toolkit
// no slower than on `/mcp`.
//
// Run (after `npm ci` in tests/e2e; the official SDK client comes from tests/e2e/node_modules):
//
//   node bench/toolkit.mjs                                   # target/debug/executor
//   EXECUTOR_BIN=target/release/executor node bench/toolkit.mjs [--sessions 30] [--searches 40] [--ops 3000]
//
// Two servers run side by side, each `executor web` on its own temporary data dir on 127.0.0.1:
// E keeps an empty catalog, F gets the synthetic spec (inline, base URL on loopback: nothing is
// ever called, no network). Each has an org toolkit `bench` granting `big.org.main.*`. Rounds
// alternate E-toolkit / F-toolkit / F-`/mcp` sessions (and toolkit / `/mcp` searches) so machine
// noise hits every arm alike. Medians (and p90) in ms; the first F-toolkit session after the
// import is reported apart (cold caches). Exits non-zero if any setup step fails.
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const require = createRequire(path.join(repo, "tests", "e2e", "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { startExecutor, EXECUTOR_BIN } = await import(path.join(repo, "tests", "e2e", "lib", "executor.mjs"));

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const SESSIONS = Number(arg("--sessions", "30"));
const SEARCHES = Number(arg("--searches", "40"));
const OPS = Number(arg("--ops", "3000"));
const WARMUP = 3;
const SLUG = "big";
const KIT = "bench";

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  const i = (s.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return s[lo] + (s[hi] - s[lo]) * (i - lo);
};
const median = (xs) => quantile(xs, 0.5);
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

class SetupError extends Error {}
const need = (cond, what, detail) => {
  if (!cond) throw new SetupError(`${what}${detail === undefined ? "" : `: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`}`);
};

// ---- the synthetic spec ---------------------------------------------------------------------------

const RESOURCES = [
  "account", "address", "alert", "article", "asset", "audit", "backup", "badge", "booking", "branch",
  "budget", "campaign", "cart", "catalog", "certificate", "channel", "charge", "checkout", "cluster", "comment",
  "contact", "contract", "coupon", "customer", "dashboard", "dataset", "deployment", "device", "discount", "document",
  "domain", "event", "export", "feature", "file", "folder", "invoice", "issue", "job", "key",
  "label", "license", "log", "member", "message", "metric", "note", "order", "payment", "pipeline",
];
const VERBS = [
  ["get", "get", "Get one"],
  ["list", "get", "List the"],
  ["create", "post", "Create a"],
  ["update", "patch", "Update a"],
  ["delete", "delete", "Delete a"],
  ["search", "get", "Search the"],
];

/** `n` operations over RESOURCES × VERBS × variants, in 50 tags; every path distinct. */
function bigSpec(n) {
  const paths = {};
  for (let i = 0; i < n; i++) {
    const resource = RESOURCES[i % RESOURCES.length];
    const [verb, method, phrase] = VERBS[Math.floor(i / RESOURCES.length) % VERBS.length];
    const variant = Math.floor(i / (RESOURCES.length * VERBS.length));
    const p = `/v${variant}/${resource}s/${verb}/{id}`;
    paths[p] = {
      [method]: {
        operationId: `${verb}_${resource}_v${variant}`,
        summary: `${phrase} ${resource} (variant ${variant})`,
        description: `${phrase} ${resource} record of the workspace, API generation ${variant}.`,
        tags: [resource],
        parameters: [
          { name: "id", in: "path", required: true, schema: { type: "string" } },
          { name: "q", in: "query", schema: { type: "string" } },
        ],
        ...(method === "post" || method === "patch"
          ? { requestBody: { content: { "application/json": { schema: { type: "object", properties: { name: { type: "string" }, size: { type: "integer" } } } } } } }
          : {}),
        responses: { 200: { description: "ok", content: { "application/json": { schema: { type: "object", properties: { id: { type: "string" } } } } } } },
      },
    };
  }
  return { openapi: "3.0.3", info: { title: "Big synthetic API", version: "1" }, servers: [{ url: "http://127.0.0.1:9" }], paths };
}

const QUERIES = ["list invoices", "delete customer", "update payment", "create order", "search documents", "get device", "list jobs", "get pipeline"];

// ---- MCP helpers ----------------------------------------------------------------------------------

async function connect(server, mcpPath) {
  const client = new Client({ name: "bench-toolkit", version: "0.0.1" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.baseUrl}${mcpPath}`), server.mcpTransportOptions()));
  return client;
}

/** One fresh session: connect + tools/list + execute("return 1"), timed; closed after. */
async function freshSession(server, mcpPath) {
  const t0 = process.hrtime.bigint();
  const client = await connect(server, mcpPath);
  const { tools } = await client.listTools();
  const one = await client.callTool({ name: "execute", arguments: { code: "return 1" } });
  const t = ms(t0);
  need(tools.some((x) => x.name === "execute"), `tools/list on ${mcpPath}`, tools.map((x) => x.name));
  need(one.content?.[0]?.text === "1" && !one.isError, `execute("return 1") on ${mcpPath}`, one);
  await client.close();
  return t;
}

const searchCode = (query) => `return await tools.search({ query: ${JSON.stringify(query)} })`;

async function timedSearch(client, query) {
  const t0 = process.hrtime.bigint();
  const r = await client.callTool({ name: "execute", arguments: { code: searchCode(query) } });
  const t = ms(t0);
  need(r.structuredContent?.status === "completed", `search "${query}"`, r);
  return { t, page: r.structuredContent.result };
}

// ---- setup ----------------------------------------------------------------------------------------

async function api(server, method, p, body, what) {
  const r = await server.api(method, p, body, { timeoutMs: 600_000 });
  need(r.status >= 200 && r.status < 300, `${what ?? `${method} ${p}`} → ${r.status}`, r.text.slice(0, 2000));
  return r.body;
}

async function toolkitOn(server) {
  const kit = await api(server, "POST", "/api/toolkits", { owner: "org", name: "Bench", slug: KIT }, "create the toolkit");
  need(kit.slug === KIT, "toolkit slug", kit);
  await api(server, "POST", `/api/toolkits/${kit.id}/connections`, { pattern: `${SLUG}.org.main.*` }, "grant the connection");
  return kit;
}

const servers = [];
async function main() {
  console.log(`binary: ${EXECUTOR_BIN}`);
  const empty = await startExecutor();
  servers.push(empty);
  const full = await startExecutor();
  servers.push(full);
  await toolkitOn(empty);
  const kit = await toolkitOn(full);

  const spec = JSON.stringify(bigSpec(OPS));
  const t0 = process.hrtime.bigint();
  const added = await api(
    full,
    "POST",
    "/api/openapi/specs",
    { spec: { kind: "blob", value: spec }, slug: SLUG, name: "Big", baseUrl: "http://127.0.0.1:9" },
    `add the ${OPS}-operation spec`,
  );
  need(added.toolCount === OPS, "tool count of the spec", added);
  await api(full, "POST", "/api/connections", { owner: "org", name: "main", integration: SLUG, template: "none", value: "" }, "connect the spec");
  const importMs = ms(t0);
  const exposed = await api(full, "GET", `/api/toolkits/${kit.id}/tools`, undefined, "GET …/tools");
  need(exposed.tools?.length === OPS, `the toolkit exposes ${OPS} tools`, { count: exposed.tools?.length });

  const kitPath = `/mcp/toolkits/${KIT}`;
  // The first session after the import (cold caches), apart.
  const cold = await freshSession(full, kitPath);

  // Sanity: the toolkit's search finds the spec's tools, and only them.
  const probe = await connect(full, kitPath);
  const { page } = await timedSearch(probe, "list invoices");
  need(page.items?.length > 0 && page.items.every((i) => i.path.startsWith(`${SLUG}.org.main.`)), "search inside the toolkit", page);
  await probe.close();

  // Fresh sessions, alternating arms.
  const arms = { emptyKit: [], fullKit: [], fullMcp: [] };
  for (let r = 0; r < WARMUP + SESSIONS; r++) {
    const order = [
      ["emptyKit", () => freshSession(empty, kitPath)],
      ["fullKit", () => freshSession(full, kitPath)],
      ["fullMcp", () => freshSession(full, "/mcp")],
    ];
    if (r % 2) order.reverse();
    for (const [name, f] of order) {
      const t = await f();
      if (r >= WARMUP) arms[name].push(t);
    }
  }

  // tools.search inside execute: one session each, alternating, rotating queries.
  const inKit = await connect(full, kitPath);
  const onMcp = await connect(full, "/mcp");
  const search = { kit: [], mcp: [] };
  for (let i = 0; i < WARMUP + SEARCHES; i++) {
    const q = QUERIES[i % QUERIES.length];
    const pair = [
      ["kit", inKit],
      ["mcp", onMcp],
    ];
    if (i % 2) pair.reverse();
    for (const [name, client] of pair) {
      const { t, page: p } = await timedSearch(client, q);
      need(Array.isArray(p.items) && p.items.length > 0, `search "${q}" (${name})`, p);
      if (i >= WARMUP) search[name].push(t);
    }
  }
  await inKit.close();
  await onMcp.close();

  // ---- report ----
  const row = (what, xs, n = xs.length) => `| ${what} | ${median(xs).toFixed(1)} | ${quantile(xs, 0.9).toFixed(1)} | ${n} |`;
  const over = median(arms.fullKit) - median(arms.emptyKit);
  const ratio = median(search.kit) / median(search.mcp);
  console.log(`\nspec: ${OPS} operations, import + connection ${(importMs / 1000).toFixed(2)} s; toolkit \`${KIT}\` exposes ${exposed.tools.length} tools`);
  console.log("\n| measure | median ms | p90 ms | n |");
  console.log("|---|---|---|---|");
  console.log(row("fresh session (connect + tools/list + execute `return 1`), toolkit, empty catalog", arms.emptyKit));
  console.log(row(`fresh session, toolkit, ${OPS}-tool catalog`, arms.fullKit));
  console.log(row(`fresh session, \`/mcp\`, ${OPS}-tool catalog`, arms.fullMcp));
  console.log(`| first toolkit session after the import (cold) | ${cold.toFixed(1)} | | 1 |`);
  console.log(row(`\`execute\` of \`tools.search({query})\`, toolkit, ${OPS} tools`, search.kit));
  console.log(row(`\`execute\` of \`tools.search({query})\`, \`/mcp\`, ${OPS} tools`, search.mcp));
  console.log(`\ntoolkit session, ${OPS} tools vs empty: ${over >= 0 ? "+" : ""}${over.toFixed(1)} ms (aim ≤ 50 ms) ${over <= 50 ? "OK" : "OVER"}`);
  console.log(`tools.search, toolkit / /mcp: ${ratio.toFixed(2)}× (aim ≤ 1, within noise) ${ratio <= 1.1 ? "OK" : "SLOWER"}`);
}

let code = 0;
try {
  await main();
} catch (e) {
  code = 1;
  console.error(e instanceof SetupError ? `setup failed: ${e.message}` : e);
  for (const s of servers) console.error(s.logs(2000));
} finally {
  for (const s of servers) await s.kill().catch(() => {});
}
process.exit(code);
