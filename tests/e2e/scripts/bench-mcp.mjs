// Per-call latency of `execute` with `return 1` through the official MCP TypeScript client,
// over streamable HTTP and over stdio (`executor mcp`, with no server running: it serves the data
// dir itself). Usage: EXECUTOR_BIN=target/release/executor node tests/e2e/scripts/bench-mcp.mjs
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const BIN = process.env.EXECUTOR_BIN ?? "target/release/executor";
const RUNS = Number(process.env.RUNS ?? 300);

async function measure(client) {
  for (let i = 0; i < 30; i++) await client.callTool({ name: "execute", arguments: { code: "return 1" } });
  const samples = [];
  for (let i = 0; i < RUNS; i++) {
    const t = process.hrtime.bigint();
    const r = await client.callTool({ name: "execute", arguments: { code: "return 1" } });
    samples.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (r.isError || r.content[0].text !== "1") throw new Error(JSON.stringify(r));
  }
  samples.sort((a, b) => a - b);
  return { p50: samples[Math.floor(samples.length / 2)], p99: samples[Math.floor(samples.length * 0.99)] };
}

const fmt = (r) => `${r.p50.toFixed(3)} ms (p99 ${r.p99.toFixed(3)} ms)`;

// HTTP
const httpDir = mkdtempSync(join(tmpdir(), "bench-mcp-http-"));
const server = spawn(BIN, ["web", "--port", "0"], { env: { ...process.env, EXECUTOR_DATA_DIR: httpDir } });
const url = await new Promise((resolve, reject) => {
  server.stdout.on("data", (d) => {
    const m = /http:\/\/127\.0\.0\.1:\d+/.exec(String(d));
    if (m) resolve(m[0]);
  });
  server.on("exit", (c) => reject(new Error(`server exited ${c}`)));
});
const http = new Client({ name: "bench", version: "0.0.0" });
// The server mints its API token into the data dir on start.
const { token } = JSON.parse(readFileSync(join(httpDir, "server-control", "auth.json"), "utf8"));
await http.connect(
  new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
);
const overHttp = await measure(http);
await http.close();
server.kill("SIGTERM");
rmSync(httpDir, { recursive: true, force: true });

// stdio, serving the data dir itself
const stdioDir = mkdtempSync(join(tmpdir(), "bench-mcp-stdio-"));
const stdio = new Client({ name: "bench", version: "0.0.0" });
await stdio.connect(new StdioClientTransport({ command: BIN, args: ["mcp"], env: { ...process.env, EXECUTOR_DATA_DIR: stdioDir }, stderr: "ignore" }));
const overStdio = await measure(stdio);
await stdio.close();
rmSync(stdioDir, { recursive: true, force: true });

console.log(`| \`execute\` \`return 1\`, official client, streamable HTTP | ${fmt(overHttp)} | ${RUNS} calls |`);
console.log(`| \`execute\` \`return 1\`, official client, stdio (\`executor mcp\`) | ${fmt(overStdio)} | ${RUNS} calls |`);
