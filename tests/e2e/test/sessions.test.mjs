// Agent MCP sessions that stay idle (issue #39): with the official SDK client against the built
// binary started with a short `--mcp-session-idle-timeout`, a session idle past it is released
// from memory and restored from its record by its next call (before, an idle session was gone
// after rmcp's 5 minutes and the SDK failed every call with 404 "Session not found"), also after a
// restart of the server. A request with the session's id and another bearer is a 404.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startExecutor, show } from "../lib/executor.mjs";

const T = { timeout: 60_000 };
let ex;

before(async () => {
  ex = await startExecutor({ args: ["--mcp-session-idle-timeout", "2s"] });
});

after(async () => {
  await ex?.kill();
});

const execute = (client, code) => client.callTool({ name: "execute", arguments: { code } });

test("an idle SDK session answers after the idle limit, restored from its record, and after a restart", T, async () => {
  const client = new Client({ name: "e2e-idle", version: "0.0.1" }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(`${ex.baseUrl}/mcp`), ex.mcpTransportOptions());
  await client.connect(transport);
  try {
    const sessionId = transport.sessionId;
    assert.ok(sessionId, "a session");
    const first = await execute(client, "return 1 + 1");
    assert.ok(!first.isError, show(first));
    await sleep(4_000);
    const later = await execute(client, "return 'still here'");
    assert.ok(!later.isError, show(later));
    assert.match(JSON.stringify(later.content), /still here/);
    assert.equal(transport.sessionId, sessionId, "the same session");
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "execute"), show(tools));

    // Another bearer with this session's id: as if it did not exist.
    const headers = { accept: "application/json, text/event-stream", "content-type": "application/json", "mcp-session-id": sessionId, "mcp-protocol-version": "2025-11-25", authorization: "Bearer not-the-token" };
    const stranger = await fetch(`${ex.baseUrl}/mcp`, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }) });
    assert.ok([401, 404].includes(stranger.status), `${stranger.status}`);

    const stopped = await ex.stop();
    assert.equal(stopped.code, 0, ex.logs());
    const dataDir = ex.dataDir;
    ex = await startExecutor({ dataDir, args: ["--mcp-session-idle-timeout", "2s"] });
    // The session survives the restart: its id, with the token, is served from its record.
    const answer = await fetch(`${ex.baseUrl}/mcp`, { method: "POST", headers: { ...headers, ...ex.authHeaders() }, body: JSON.stringify({ jsonrpc: "2.0", id: 10, method: "tools/list" }) });
    assert.equal(answer.status, 200, `${answer.status} ${await answer.text()}\n${ex.logs()}`);
  } finally {
    await client.close().catch(() => {});
  }
});
