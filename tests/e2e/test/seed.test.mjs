// The seed scenario (000_d3a55cb8074060ed), driven against the real binary:
// downstream MCP session continuity — state set by one tool call is visible to
// the next call in the same execution, and both calls ride ONE Mcp-Session-Id.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveMcpServer } from "../lib/fixture.mjs";
import { startExecutor, freshSlug, show, pollUntil } from "../lib/executor.mjs";

// One sandbox execution, two dependent tool calls (verbatim from the seed).
const selectThenReadCode = (slug) => `
const selected = await tools.${slug}.org.main.select_workspace({});
const read = await tools.${slug}.org.main.get_workspace({});
return JSON.stringify({ selected, read });
`;

let ex;
let server;
const slug = freshSlug("mcp_state");
const state = { executionSessionIds: [], cleanup: null, executed: null };

before(async () => {
  server = await serveMcpServer({ extras: false });
  ex = await startExecutor();
});
after(async () => {
  await ex?.kill();
  await server?.close();
});

test("MCP · session state set by one tool call is visible to the next call", { timeout: 60_000 }, async () => {
  const add = await ex.api("POST", "/api/mcp/servers", {
    transport: "remote",
    name: "Session-stateful MCP",
    endpoint: server.url,
    slug,
    remoteTransport: "streamable-http",
  });
  assert.equal(add.status, 200, `addServer: ${show(add.body)}\n${ex.logs()}`);
  assert.deepEqual(add.body, { slug }, `addServer body: ${show(add.body)}`);
  try {
    const conn = await ex.api("POST", "/api/connections", {
      owner: "org",
      name: "main",
      integration: slug,
      template: "none",
      value: "",
    });
    assert.equal(conn.status, 200, `connections.create: ${show(conn.body)}\n${ex.logs()}`);

    // Only observe the execution's own traffic, not discovery's.
    server.clearRequests();
    const executed = await ex.api("POST", "/api/executions", { code: selectThenReadCode(slug), autoApprove: true });
    state.executed = executed.body;
    assert.equal(executed.status, 200, `execute: ${show(executed.body)}\n${ex.logs()}`);
    const diag = `execution: ${show(executed.body)}\nledger: ${show(server.requests())}`;
    assert.equal(executed.body.status, "completed", `the two-call execution completed\n${diag}`);
    assert.equal(executed.body.isError, false, diag);
    assert.ok(executed.body.text.includes("selected:ws-e2e"), `the first call selected the workspace\n${diag}`);
    assert.ok(executed.body.text.includes("workspace:ws-e2e"), `the second call sees the same session's selection\n${diag}`);
    assert.ok(!executed.body.text.includes("no workspace selected"), diag);

    // Wire-level corroboration: every session-bound request of this execution carried ONE Mcp-Session-Id.
    const sessionIds = server.sessionIdsInLedger();
    state.executionSessionIds = sessionIds;
    assert.equal(sessionIds.length, 1, `both tool calls rode a single downstream MCP session\n${diag}`);
    const calls = server.requests().filter((r) => r.rpcMethods.includes("tools/call"));
    assert.equal(calls.length, 2, `exactly two tools/call requests reached the fixture\n${diag}`);
    assert.ok(calls.every((r) => r.sessionId === sessionIds[0]), diag);
  } finally {
    const rc = await ex.api("DELETE", `/api/connections/org/${slug}/main`);
    const rs = await ex.api("DELETE", `/api/mcp/servers/${slug}`);
    state.cleanup = { rc, rs };
  }
});

test("removing the connection and the integration closes the upstream session (HTTP DELETE)", { timeout: 30_000 }, async () => {
  assert.ok(state.cleanup, "seed test ran");
  const { rc, rs } = state.cleanup;
  assert.equal(rc.status, 200, `DELETE connection: ${show(rc.body)}`);
  assert.deepEqual(rc.body, { removed: true });
  assert.equal(rs.status, 200, `DELETE mcp server: ${show(rs.body)}`);
  assert.deepEqual(rs.body, { removed: true });
  assert.ok(server.initialisedSessions().length >= 1, "the fixture saw at least one MCP session");
  const empty = await pollUntil(() => server.liveSessions().length === 0, { timeoutMs: 2000 });
  assert.ok(
    empty,
    `no live upstream session may remain after removal; live=${show(server.liveSessions())} deleted=${show(server.deletedSessions())}\nledger: ${show(server.requests())}`,
  );
  for (const id of state.executionSessionIds) {
    assert.ok(server.deletedSessions().includes(id), `the execution's session ${id} was closed with HTTP DELETE; deleted=${show(server.deletedSessions())}`);
  }
  const gone = await ex.api("GET", `/api/integrations/${slug}`);
  assert.equal(gone.status, 404, `integration is gone: ${show(gone.body)}`);
  const list = await ex.api("GET", "/api/integrations");
  assert.ok(!list.body.some((i) => i.slug === slug), `GET /api/integrations no longer lists ${slug}`);
});
