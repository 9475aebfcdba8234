// A pooled session the upstream server forgot (HTTP 404) is redialled once, transparently.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveMcpServer } from "../lib/fixture.mjs";
import { startExecutor, addMcpIntegration, show } from "../lib/executor.mjs";

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

test("an execution after the upstream forgot the session redials once and completes", { timeout: 60_000 }, async () => {
  const t = `tools.${slug}.org.main`;
  const first = await ex.execute(`
const a = await ${t}.select_workspace({});
const b = await ${t}.get_workspace({});
return b.data.content[0].text;`);
  assert.equal(first.body?.text, "workspace:ws-e2e", `first execution: ${show(first.body)}`);
  const oldIds = server.liveSessions();
  assert.ok(oldIds.length >= 1, `a pooled session is kept between executions; live=${show(oldIds)}`);

  await server.forgetAllSessions();
  server.clearRequests();

  const second = await ex.execute(`const r = await ${t}.get_workspace({}); return r;`);
  const diag = `second execution: ${show(second.body)}\nledger: ${show(server.requests())}\n${ex.logs(1500)}`;
  assert.equal(second.status, 200, diag);
  assert.equal(second.body.status, "completed", diag);
  assert.equal(second.body.isError, false, diag);
  assert.equal(second.body.structured.result?.ok, true, `the tool call succeeded after a transparent redial\n${diag}`);
  // A fresh session has no selection: proves the call really reached a new session.
  assert.equal(second.body.structured.result.data.content[0].text, "no workspace selected", diag);

  const reqs = server.requests();
  const notFound = reqs.filter((q) => q.status === 404);
  const stalePosts = notFound.filter((q) => q.httpMethod === "POST");
  assert.ok(stalePosts.length >= 1, `the pooled (stale) session id was tried first and answered 404\n${diag}`);
  assert.ok(stalePosts.length <= 2, `no retry loop on the stale session (404 POSTs: ${stalePosts.length})\n${diag}`);
  assert.ok(notFound.every((q) => oldIds.includes(q.sessionId)), `only the forgotten session id got 404s\n${diag}`);
  assert.equal(reqs.filter((q) => q.rpcMethods.includes("initialize")).length, 1, `exactly one redial\n${diag}`);
  const newIds = server.liveSessions();
  assert.equal(newIds.length, 1, diag);
  assert.ok(!oldIds.includes(newIds[0]), diag);
  assert.equal(
    reqs.filter((q) => q.rpcMethods.includes("tools/call") && q.sessionId === newIds[0]).length,
    1,
    `the tool call was retried once on the fresh session\n${diag}`,
  );

  // The new session is pooled and stateful again.
  const third = await ex.execute(`
await ${t}.select_workspace({});
const b = await ${t}.get_workspace({});
return b.data.content[0].text;`);
  assert.equal(third.body?.text, "workspace:ws-e2e", show(third.body));
  assert.deepEqual(server.liveSessions(), newIds, `the redialled session is the pooled one; live=${show(server.liveSessions())}`);
});
