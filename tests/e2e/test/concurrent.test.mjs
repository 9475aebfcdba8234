// Session reuse under concurrency: concurrent tool calls inside one execution
// ride one downstream session; sequential executions reuse the pooled session;
// the pool never keeps more than one idle session per connection identity.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveMcpServer } from "../lib/fixture.mjs";
import { startExecutor, addMcpIntegration, show, pollUntil } from "../lib/executor.mjs";

let ex;
let server;
let slug;

before(async () => {
  server = await serveMcpServer({ extras: true });
  ex = await startExecutor();
  ({ slug } = await addMcpIntegration(ex, server.url));
});
after(async () => {
  await ex?.kill();
  await server?.close();
});

const textOf = `(r) => r.ok ? r.data.content.map((c) => c.text).join("") : "ERR:" + JSON.stringify(r.error)`;

test("concurrent calls in one execution (Promise.all) all ride ONE session id and share its state", { timeout: 60_000 }, async () => {
  server.clearRequests();
  const t = `tools.${slug}.org.main`;
  const code = `
const textOf = ${textOf};
const sel = await ${t}.select_workspace({});
const results = await Promise.all([
  ${t}.get_workspace({}),
  ${t}.slow({ ms: 400 }),
  ${t}.get_workspace({}),
  ${t}.slow({ ms: 300 }),
  ${t}.get_workspace({}),
  ${t}.slow({ ms: 200 }),
]);
return { sel: textOf(sel), results: results.map(textOf) };
`;
  const started = Date.now();
  const r = await ex.execute(code);
  const elapsed = Date.now() - started;
  const diag = `execution (${elapsed} ms): ${show(r.body)}\nledger: ${show(server.requests())}\n${ex.logs(1500)}`;
  assert.equal(r.status, 200, diag);
  assert.equal(r.body.status, "completed", diag);
  assert.equal(r.body.isError, false, diag);
  assert.deepEqual(
    r.body.structured.result,
    {
      sel: "selected:ws-e2e",
      results: [
        "workspace:ws-e2e",
        "slept:400:workspace:ws-e2e",
        "workspace:ws-e2e",
        "slept:300:workspace:ws-e2e",
        "workspace:ws-e2e",
        "slept:200:workspace:ws-e2e",
      ],
    },
    diag,
  );
  const ids = server.sessionIdsInLedger();
  assert.equal(ids.length, 1, `all session-bound requests carried one Mcp-Session-Id, got ${ids.length}\n${diag}`);
  const calls = server.requests().filter((q) => q.rpcMethods.includes("tools/call"));
  assert.equal(calls.length, 7, diag);
  assert.ok(calls.every((q) => q.sessionId === ids[0]), diag);
});

test("two sequential executions reuse the same pooled session (state survives across executions)", { timeout: 60_000 }, async () => {
  server.clearRequests();
  const t = `tools.${slug}.org.main`;
  const first = await ex.execute(`const r = await ${t}.select_workspace({}); return r.data.content[0].text;`);
  assert.equal(first.body?.text, "selected:ws-e2e", `first execution: ${show(first.body)}`);
  const second = await ex.execute(`const r = await ${t}.get_workspace({}); return r.data.content[0].text;`);
  const diag = `second execution: ${show(second.body)}\nledger: ${show(server.requests())}`;
  assert.equal(second.body?.status, "completed", diag);
  assert.equal(second.body.text, "workspace:ws-e2e", `the 2nd execution sees the 1st execution's session state\n${diag}`);
  assert.equal(server.sessionIdsInLedger().length, 1, `both executions rode one session\n${diag}`);
  assert.equal(
    server.requests().filter((q) => q.rpcMethods.includes("initialize")).length,
    0,
    `no new MCP session was initialised for the 2nd execution (the pooled one was reused)\n${diag}`,
  );
});

test("after 20 sequential executions at most one upstream session is live", { timeout: 120_000 }, async () => {
  const t = `tools.${slug}.org.main`;
  const before = server.initialisedSessions().length;
  for (let i = 0; i < 20; i++) {
    const r = await ex.execute(`const r = await ${t}.echo({ message: "m${i}" }); return r.data.content[0].text;`);
    assert.equal(r.body?.text, `echo:m${i}`, `execution ${i}: ${show(r.body)}`);
  }
  const live = server.liveSessions();
  assert.ok(live.length <= 1, `live upstream sessions after 20 executions: ${live.length} ${show(live)}`);
  const opened = server.initialisedSessions().length - before;
  assert.ok(opened <= 1, `20 sequential executions should reuse the pooled session, but ${opened} new sessions were opened`);
});

test("8 concurrent executions all complete, and afterwards at most one upstream session stays live", { timeout: 120_000 }, async () => {
  const t = `tools.${slug}.org.main`;
  const results = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      ex.execute(`
const a = await ${t}.slow({ ms: 150 });
const b = await ${t}.echo({ message: "p${i}" });
return [a.ok, b.ok ? b.data.content[0].text : JSON.stringify(b.error)];
`),
    ),
  );
  results.forEach((r, i) => {
    assert.equal(r.status, 200, `execution ${i}: ${show(r.body)}`);
    assert.equal(r.body.status, "completed", `execution ${i}: ${show(r.body)}`);
    assert.equal(r.body.isError, false, `execution ${i}: ${show(r.body)}`);
    assert.deepEqual(r.body.structured.result, [true, `echo:p${i}`], `execution ${i}: ${show(r.body)}`);
  });
  const settled = await pollUntil(() => server.liveSessions().length <= 1, { timeoutMs: 2000 });
  assert.ok(
    settled,
    `at most one idle upstream session per identity may be kept; live=${server.liveSessions().length} initialised=${server.initialisedSessions().length} deleted=${server.deletedSessions().length}`,
  );
  // Extra sessions were closed, not leaked: every initialised-but-not-live session got a DELETE.
  const live = new Set(server.liveSessions());
  const leaked = server.initialisedSessions().filter((id) => !live.has(id) && !server.deletedSessions().includes(id));
  assert.deepEqual(leaked, [], `sessions dropped without an HTTP DELETE: ${show(leaked)}`);
  // The pool still works afterwards.
  const after = await ex.execute(`const r = await ${t}.echo({ message: "after" }); return r.data.content[0].text;`);
  assert.equal(after.body?.text, "echo:after", show(after.body));
});
