#!/usr/bin/env node
// PostgreSQL and replicas (issue #23, BENCHMARKS.md). On one run, side by side:
//   sqlite  one `executor web` on its data directory's SQLite file;
//   pg-1    one replica on PostgreSQL;
//   pg-2    two replicas on the same database, the load generator alternating between them.
// Figures: `return 1` p50 (POST /api/executions, one at a time), the seed (an execution that
// selects a workspace in a downstream MCP session and reads it back) p50 over the direct-client
// floor (the same two calls from the official SDK client), throughput of `return 1` at 8 and 64
// in flight, cross-replica propagation of a policy change (made on A; the first execution on B
// that it blocks), and what one execution costs PostgreSQL (statements from
// pg_stat_statements, per execution).
//
//   eval "$(scripts/postgres.sh start --bench)"   # a throwaway cluster with pg_stat_statements
//   EXECUTOR_BIN=target/release/executor node bench/replicas.mjs [--rounds 300] [--seconds 3]
//
// Rounds of the three arms alternate so machine noise hits each alike. Needs `npm ci` in
// tests/e2e (the SDK client and the MCP fixture come from there).
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const require = createRequire(path.join(repo, "tests", "e2e", "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { startExecutor, EXECUTOR_BIN } = await import(path.join(repo, "tests", "e2e", "lib", "executor.mjs"));
const { serveMcpServer } = await import(path.join(repo, "tests", "e2e", "lib", "fixture.mjs"));

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const ROUNDS = Number(arg("--rounds", "300"));
const SECONDS = Number(arg("--seconds", "3"));
const PROPAGATIONS = Number(arg("--propagations", "40"));
const ADMIN = process.env.EXECUTOR_TEST_POSTGRES_URL;
if (!ADMIN) {
  console.error('needs a cluster: eval "$(scripts/postgres.sh start --bench)"');
  process.exit(2);
}

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) * q;
  return s[Math.floor(i)] + (s[Math.ceil(i)] - s[Math.floor(i)]) * (i - Math.floor(i));
};
const now = () => Number(process.hrtime.bigint()) / 1e6;
const f1 = (x) => x.toFixed(2);
const psql = (url, sql) => execFileSync("psql", [url, "-qAtc", sql], { encoding: "utf8" }).trim();

const KEY = randomBytes(32).toString("hex");
const TOKEN = `bench-${randomBytes(12).toString("hex")}`;
const dbName = `executor_bench_${process.pid}`;
psql(ADMIN, `CREATE DATABASE ${dbName}`);
const DB = ADMIN.replace(/\/[^/]*$/, `/${dbName}`);
const stats = (() => {
  try {
    psql(DB, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    psql(DB, "SELECT pg_stat_statements_reset()");
    return true;
  } catch {
    return false;
  }
})();

const fixture = await serveMcpServer();
const pgEnv = { EXECUTOR_DATABASE_URL: DB, EXECUTOR_SECRET_KEY: KEY, EXECUTOR_AUTH_TOKEN: TOKEN };
const sqlite = await startExecutor();
const [pgA, pgB] = await Promise.all([startExecutor({ authToken: TOKEN, env: pgEnv }), startExecutor({ authToken: TOKEN, env: pgEnv })]);

async function addSeed(server, slug) {
  const add = await server.api("POST", "/api/mcp/servers", { transport: "remote", name: "Seed", endpoint: fixture.url, slug, remoteTransport: "streamable-http" });
  if (add.status !== 200) throw new Error(JSON.stringify(add.body));
  const conn = await server.api("POST", "/api/connections", { owner: "org", name: "main", integration: slug, template: "none", value: "" });
  if (conn.status !== 200) throw new Error(JSON.stringify(conn.body));
}
await addSeed(sqlite, "seed");
await addSeed(pgA, "seed");

const RETURN1 = "return 1";
const SEED = `await tools.seed.org.main.select_workspace({ workspace: "w-" + Math.random() }); return (await tools.seed.org.main.get_workspace({})).data`;

const exec = async (server, code) => {
  const r = await server.api("POST", "/api/executions", { code, autoApprove: true });
  if (r.status !== 200 || r.body.status !== "completed") throw new Error(JSON.stringify(r.body));
  return r.body;
};

// The arms: which server serves request number i.
const arms = {
  sqlite: () => sqlite,
  "pg-1": () => pgA,
  "pg-2": (i) => (i % 2 ? pgB : pgA),
};

// Warm every path (catalog caches, downstream sessions, prepared statements).
for (const [, pick] of Object.entries(arms)) for (let i = 0; i < 20; i++) await exec(pick(i), i % 2 ? RETURN1 : SEED);

const samples = (name) => Object.fromEntries(Object.keys(arms).map((a) => [a, []]));
const r1 = samples();
const seed = samples();
for (let round = 0; round < ROUNDS; round++) {
  for (const [arm, pick] of Object.entries(arms)) {
    let t = now();
    await exec(pick(round), RETURN1);
    r1[arm].push(now() - t);
    t = now();
    await exec(pick(round), SEED);
    seed[arm].push(now() - t);
  }
}

// The floor: the same two calls from the SDK client, straight to the fixture.
const floorClient = new Client({ name: "floor", version: "1" });
await floorClient.connect(new StreamableHTTPClientTransport(new URL(fixture.url)));
const floor = [];
for (let i = 0; i < ROUNDS; i++) {
  const t = now();
  await floorClient.callTool({ name: "select_workspace", arguments: { workspace: `w-${i}` } });
  await floorClient.callTool({ name: "get_workspace", arguments: {} });
  floor.push(now() - t);
}
await floorClient.close();

async function throughput(pick, inFlight) {
  let done = 0;
  let i = 0;
  const deadline = now() + SECONDS * 1000;
  const worker = async () => {
    while (now() < deadline) {
      await exec(pick(i++), RETURN1);
      done++;
    }
  };
  const t = now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  return done / ((now() - t) / 1000);
}
const tput = {};
for (const n of [8, 64]) for (const [arm, pick] of Object.entries(arms)) (tput[arm] ??= {})[n] = await throughput(pick, n);

// Propagation: a block policy made on A; the first execution on B that it stops.
const propagation = [];
for (let i = 0; i < PROPAGATIONS; i++) {
  const before = await exec(pgB, `return (await tools.seed.org.main.get_workspace({})).ok`);
  const t = now();
  const made = await pgA.api("POST", "/api/policies", { owner: "org", pattern: "seed.*.*.get_workspace", action: "block" });
  if (made.status !== 200) throw new Error(JSON.stringify(made.body));
  for (;;) {
    const r = await pgB.api("POST", "/api/executions", { code: `return (await tools.seed.org.main.get_workspace({})).ok`, autoApprove: true });
    if (r.body.structured?.result === false) break;
    if (now() - t > 5000) throw new Error("the policy did not reach B within 5 s");
  }
  propagation.push(now() - t);
  await pgA.api("DELETE", `/api/policies/${made.body.id}`);
  void before;
}

// What one execution costs PostgreSQL: statements per execution, by kind.
let cost = null;
if (stats) {
  const count = () => Number(psql(DB, "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"));
  const N = 200;
  cost = {};
  for (const [label, code] of [["return 1", RETURN1], ["seed", SEED]]) {
    await new Promise((r) => setTimeout(r, 1500)); // history writer and sweeps settle
    const before = count();
    for (let i = 0; i < N; i++) await exec(pgA, code);
    await new Promise((r) => setTimeout(r, 1500));
    cost[label] = (count() - before - 1) / N;
  }
}

const row = (label, xs) => `${label}: p50 ${f1(quantile(xs, 0.5))} ms, p99 ${f1(quantile(xs, 0.99))} ms`;
console.log(`# replicas benchmark: ${ROUNDS} rounds, ${EXECUTOR_BIN}`);
for (const arm of Object.keys(arms)) {
  console.log(`${arm.padEnd(6)} ${row("return 1", r1[arm])} | ${row("seed", seed[arm])} | over floor ${f1(quantile(seed[arm], 0.5) - quantile(floor, 0.5))} ms | ${Math.round(tput[arm][8])}/s at 8, ${Math.round(tput[arm][64])}/s at 64`);
}
console.log(`floor  ${row("seed via the SDK client", floor)}`);
console.log(`propagation of a policy (A → B): p50 ${f1(quantile(propagation, 0.5))} ms, p99 ${f1(quantile(propagation, 0.99))} ms (${PROPAGATIONS} changes)`);
if (cost) console.log(`statements per execution on PostgreSQL: return 1 ${cost["return 1"].toFixed(2)}, seed ${cost.seed.toFixed(2)}`);
else console.log("statements: pg_stat_statements is not loaded (scripts/postgres.sh start --bench)");

await Promise.all([sqlite.kill(), pgA.kill(), pgB.kill()]);
await fixture.close();
