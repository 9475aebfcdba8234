// Remote transports (§6): legacy HTTP+SSE and "auto" (streamable HTTP, falling back to SSE).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serveMcpServer, serveSseMcpServer, SEED_TOOLS, EXTRA_TOOLS } from "../lib/fixture.mjs";
import { startExecutor, addMcpIntegration, freshSlug, show } from "../lib/executor.mjs";

const ALL_TOOLS = [...SEED_TOOLS, ...EXTRA_TOOLS].sort();
let ex;
let sse;
let streamable;

before(async () => {
  sse = await serveSseMcpServer({ extras: true });
  streamable = await serveMcpServer({ extras: true });
  ex = await startExecutor();
});
after(async () => {
  await ex?.kill();
  await sse?.close();
  await streamable?.close();
});

const selectThenRead = (slug) => `
const selected = await tools.${slug}.org.main.select_workspace({});
const read = await tools.${slug}.org.main.get_workspace({});
return [selected.data.content[0].text, read.data.content[0].text];
`;

for (const remoteTransport of ["sse", "auto"]) {
  test(`remoteTransport "${remoteTransport}" against a legacy HTTP+SSE server: discovery and stateful calls`, { timeout: 60_000 }, async () => {
    const { slug } = await addMcpIntegration(ex, sse.url, { slug: freshSlug(`mcp_${remoteTransport}`), remoteTransport });
    const tools = await ex.api("GET", `/api/tools?integration=${slug}`);
    assert.deepEqual(tools.body.map((t) => t.name).sort(), ALL_TOOLS, show(tools.body));
    sse.clearRequests();
    const r = await ex.execute(selectThenRead(slug));
    const diag = `${show(r.body)}\nledger: ${show(sse.requests())}\n${ex.logs(1500)}`;
    assert.equal(r.body?.status, "completed", diag);
    assert.equal(r.body.isError, false, diag);
    assert.deepEqual(r.body.structured.result, ["selected:ws-e2e", "workspace:ws-e2e"], diag);
    const calls = sse.requests().filter((q) => q.rpcMethods.includes("tools/call"));
    assert.equal(calls.length, 2, diag);
    assert.equal(new Set(calls.map((q) => q.sessionId)).size, 1, `both calls rode one SSE session\n${diag}`);
    const cfg = await ex.api("GET", `/api/mcp/servers/${slug}`);
    assert.equal(cfg.body?.config?.remoteTransport, remoteTransport, show(cfg.body));
  });
}

test('remoteTransport "auto" against a streamable HTTP server uses streamable HTTP', { timeout: 60_000 }, async () => {
  const { slug } = await addMcpIntegration(ex, streamable.url, { slug: freshSlug("mcp_auto_stream"), remoteTransport: "auto" });
  streamable.clearRequests();
  const r = await ex.execute(selectThenRead(slug));
  const diag = `${show(r.body)}\nledger: ${show(streamable.requests())}`;
  assert.deepEqual(r.body?.structured?.result, ["selected:ws-e2e", "workspace:ws-e2e"], diag);
  assert.equal(streamable.sessionIdsInLedger().length, 1, diag);
});

test("remoteTransport defaults to \"auto\" when omitted", { timeout: 60_000 }, async () => {
  const slug = freshSlug("mcp_default");
  const add = await ex.api("POST", "/api/mcp/servers", { name: "Default transport", endpoint: streamable.url, slug });
  assert.equal(add.status, 200, show(add.body));
  const cfg = await ex.api("GET", `/api/mcp/servers/${slug}`);
  assert.equal(cfg.body?.config?.transport, "remote", show(cfg.body));
  assert.equal(cfg.body?.config?.remoteTransport, "auto", show(cfg.body));
});
