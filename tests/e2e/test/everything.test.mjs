// The reference `@modelcontextprotocol/server-everything` as a stdio upstream (issue #18): it
// registers some tools only for clients that declare the capability they use (elicitation,
// sampling, roots). Our client declares them when it lists tools, so they are in the catalog;
// `roots/list` is answered with an empty list.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startExecutor, show, pollUntil } from "../lib/executor.mjs";

const require = createRequire(import.meta.url);
const SERVER = require.resolve("@modelcontextprotocol/server-everything/dist/index.js");

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

test("server-everything lists its capability-gated tools to us", { timeout: 60_000 }, async () => {
  const ex = await startExecutor();
  cleanups.push(() => ex.kill());
  const add = await ex.api("POST", "/api/mcp/servers", {
    transport: "stdio",
    name: "Everything",
    command: process.execPath,
    args: [SERVER, "stdio"],
    slug: "everything",
  });
  assert.equal(add.status, 200, `${show(add.body)}\n${ex.logs()}`);

  const names = async () => {
    const listed = await ex.api("GET", "/api/tools?integration=everything");
    assert.equal(listed.status, 200, show(listed.body));
    return listed.body.map((t) => t.address.split(".").pop());
  };
  // The server registers them once initialised and says so (tools/list_changed).
  const found = await pollUntil(async () => {
    const n = await names();
    return n.includes("trigger_elicitation_request") ? n : null;
  }, { timeoutMs: 10_000, intervalMs: 200 });
  assert.ok(found, `not listed: ${show(await names())}\n${ex.logs()}`);
  for (const tool of ["trigger_elicitation_request", "trigger_sampling_request", "get_roots_list"]) {
    assert.ok(found.includes(tool), `${tool} missing from ${show(found)}`);
  }

  const run = await ex.api("POST", "/api/executions", {
    code: "return (await tools.everything.org.default.get_roots_list({})).data.content[0].text",
    autoApprove: true,
  });
  assert.equal(run.status, 200, show(run.body));
  assert.equal(run.body.status, "completed", show(run.body));
  assert.match(run.body.text, /supports roots but no roots are currently configured/, show(run.body));
});

// Issue #18: the progress server-everything reports on its long-running operation (with the
// token our tools/call carried) reaches the agent's official SDK client through `onprogress`,
// under the agent's own token, increasing.
test("server-everything's progress reaches the agent calling execute", { timeout: 60_000 }, async () => {
  const ex = await startExecutor();
  cleanups.push(() => ex.kill());
  const add = await ex.api("POST", "/api/mcp/servers", {
    transport: "stdio",
    name: "Everything",
    command: process.execPath,
    args: [SERVER, "stdio"],
    slug: "everything",
  });
  assert.equal(add.status, 200, `${show(add.body)}\n${ex.logs()}`);

  const client = new Client({ name: "e2e-progress", version: "0.0.1" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${ex.baseUrl}/mcp`), ex.mcpTransportOptions()));
  cleanups.push(() => client.close());
  const heard = [];
  const result = await client.callTool(
    {
      name: "execute",
      arguments: {
        code: "const r = await tools.everything.org.default.trigger_long_running_operation({duration: 0.6, steps: 3}); " +
          "return r.ok ? r.data.content[0].text : r.error.message",
      },
    },
    undefined,
    { onprogress: (p) => heard.push(p) },
  );
  const text = result.content?.find((c) => c.type === "text")?.text ?? "";
  assert.match(text, /Long running operation completed/, `${text}\n${ex.logs()}`);
  assert.ok(heard.length >= 1, `no progress heard: ${text}`);
  const values = heard.map((p) => p.progress);
  assert.deepEqual(values, [...values].sort((a, b) => a - b), show(heard));
  assert.equal(heard.at(-1).progress, 3, show(heard));
  assert.equal(heard.at(-1).total, 3, show(heard));
});

// The same reference server over streamable HTTP (its `streamableHttp` mode on a free loopback
// port): the capability-gated tools are listed and a stateful call sequence works on one session.
test("server-everything over streamable HTTP", { timeout: 60_000 }, async () => {
  const { spawn } = await import("node:child_process");
  const { freePort, addMcpIntegration } = await import("../lib/executor.mjs");
  const port = await freePort();
  const child = spawn(process.execPath, [SERVER, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanups.push(async () => child.kill());
  let out = "";
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server-everything did not start:\n${out}`)), 30_000);
    const seen = (c) => {
      out += c;
      if (/running on port|listening/i.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on("data", seen);
    child.stderr.on("data", seen);
  });
  const ex = await startExecutor();
  cleanups.push(() => ex.kill());
  const { slug } = await addMcpIntegration(ex, `http://127.0.0.1:${port}/mcp`, { slug: "everything_http", name: "Everything (HTTP)" });
  const names = async () => {
    const listed = await ex.api("GET", `/api/tools?integration=${slug}`);
    return listed.status === 200 ? listed.body.map((t) => t.address.split(".").pop()) : [];
  };
  const found = await pollUntil(async () => {
    const n = await names();
    return n.includes("trigger_elicitation_request") ? n : null;
  }, { timeoutMs: 10_000, intervalMs: 200 });
  assert.ok(found, `not listed: ${show(await names())}\n${ex.logs()}`);
  const run = await ex.api("POST", "/api/executions", {
    code: `const a = await tools.${slug}.org.main.echo({ message: "hi" });
const b = await tools.${slug}.org.main.get_sum({ a: 2, b: 3 });
return [a.data.content[0].text, b.data.content[0].text];`,
    autoApprove: true,
  });
  assert.equal(run.body.status, "completed", show(run.body));
  const [echoed, summed] = run.body.structured.result;
  assert.match(echoed, /hi/, show(run.body));
  assert.match(summed, /5/, show(run.body));
});
