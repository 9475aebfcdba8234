// Self-check of the MCP fixtures with the official SDK client (no executor binary needed).
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { serveMcpServer, serveSseMcpServer, closedPort } from "../lib/fixture.mjs";

const text = (r) => r.content.map((c) => c.text).join("");

const fx = await serveMcpServer();
try {
  const transport = new StreamableHTTPClientTransport(new URL(fx.url));
  const client = new Client({ name: "validate", version: "0.0.0" });
  await client.connect(transport);
  const sid = transport.sessionId;
  assert.ok(sid, "session id issued");
  assert.deepEqual(fx.liveSessions(), [sid]);
  const tools = (await client.listTools()).tools.map((t) => t.name).sort();
  assert.deepEqual(tools, ["echo", "fail_tool", "get_workspace", "select_workspace", "slow", "structured_tool"]);
  fx.clearRequests();
  assert.equal(text(await client.callTool({ name: "get_workspace", arguments: {} })), "no workspace selected");
  assert.equal(text(await client.callTool({ name: "select_workspace", arguments: {} })), "selected:ws-e2e");
  const [a, b] = await Promise.all([
    client.callTool({ name: "get_workspace", arguments: {} }),
    client.callTool({ name: "slow", arguments: { ms: 50 } }),
  ]);
  assert.equal(text(a), "workspace:ws-e2e");
  assert.equal(text(b), "slept:50:workspace:ws-e2e");
  const failed = await client.callTool({ name: "fail_tool", arguments: {} });
  assert.equal(failed.isError, true);
  const st = await client.callTool({ name: "structured_tool", arguments: { n: 21 } });
  assert.deepEqual(st.structuredContent, { doubled: 42, label: "n=21" });
  assert.deepEqual(fx.sessionIdsInLedger(), [sid], "all calls rode one session id");
  assert.ok(fx.requests().every((r) => r.httpMethod === "POST" && r.rpcMethods[0] === "tools/call"), JSON.stringify(fx.requests()));

  // A second client gets its own session (own state).
  const t2 = new StreamableHTTPClientTransport(new URL(fx.url));
  const c2 = new Client({ name: "validate2", version: "0.0.0" });
  await c2.connect(t2);
  assert.notEqual(t2.sessionId, sid);
  assert.equal(text(await c2.callTool({ name: "get_workspace", arguments: {} })), "no workspace selected");
  assert.equal(fx.liveSessions().length, 2);

  // DELETE closes a session.
  await t2.terminateSession();
  assert.deepEqual(fx.deletedSessions(), [t2.sessionId ?? fx.deletedSessions()[0]]);
  assert.deepEqual(fx.liveSessions(), [sid]);
  await c2.close();

  // forgetAllSessions: the old id now gets HTTP 404.
  await fx.forgetAllSessions();
  assert.deepEqual(fx.liveSessions(), []);
  const r = await fetch(fx.url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 99, method: "tools/list", params: {} }),
  });
  assert.equal(r.status, 404, "forgotten session → 404");
  await assert.rejects(client.callTool({ name: "get_workspace", arguments: {} }), /404|Session not found/);
  await client.close().catch(() => {});
  console.log("streamable-http fixture OK; ledger sample:", JSON.stringify(fx.requests().slice(-1)));
} finally {
  await fx.close();
}

const sse = await serveSseMcpServer();
try {
  const transport = new SSEClientTransport(new URL(sse.url));
  const client = new Client({ name: "validate-sse", version: "0.0.0" });
  await client.connect(transport);
  assert.equal(sse.liveSessions().length, 1);
  assert.equal(text(await client.callTool({ name: "select_workspace", arguments: {} })), "selected:ws-e2e");
  assert.equal(text(await client.callTool({ name: "get_workspace", arguments: {} })), "workspace:ws-e2e");
  assert.equal(sse.sessionIdsInLedger().length, 1);
  // A streamable-HTTP client must fail against the legacy-only server (so "auto" has to fall back).
  const bad = new Client({ name: "x", version: "0" });
  await assert.rejects(bad.connect(new StreamableHTTPClientTransport(new URL(sse.url))));
  await client.close();
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(sse.liveSessions().length, 0, "closing the SSE stream ends the session");
  console.log("sse fixture OK");
} finally {
  await sse.close();
}

const p = await closedPort();
await assert.rejects(fetch(`http://127.0.0.1:${p}/mcp`));
console.log("closedPort OK; all fixture checks passed");
