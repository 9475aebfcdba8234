// Downstream MCP elicitations against the real binary (spec §4.6, §6 "Elicitation bridge"): an
// MCP server built with the official SDK calls `elicitInput` while it runs one of our tool calls;
// the execution pauses like an approval (form with the server's requestedSchema, or a URL), and
// the resume answer — accept with content, decline, cancel — is what `elicitInput` returns. Over
// HTTP, over `/mcp` in model mode (`resume` tool) and native mode (the SDK client is asked), and
// across a SIGTERM restart.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { serveMcpServer, CONFIRM_SCHEMA } from "../lib/fixture.mjs";
import { startExecutor, addMcpIntegration, show } from "../lib/executor.mjs";

const EXEC_ID = /^exec_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const T = { timeout: 15_000 };

let ex;
let fixture;
let slug;

before(async () => {
  fixture = await serveMcpServer({ extras: false, elicitation: true });
  ex = await startExecutor();
  ({ slug } = await addMcpIntegration(ex, fixture.url));
});
after(async () => {
  await ex?.kill();
  await fixture?.close();
});

const downstreamCalls = () => fixture.requests().filter((r) => r.httpMethod === "POST" && r.rpcMethods.includes("tools/call")).length;

const code = (tool, args = {}) => `return (await tools.${slug}.org.main.${tool}(${JSON.stringify(args)})).data.content[0].text`;

async function execute(server, source, { autoApprove = false } = {}) {
  const r = await server.api("POST", "/api/executions", { code: source, autoApprove });
  assert.equal(r.status, 200, `${show(r.body)}\n${server.logs()}`);
  return r.body;
}

async function resume(server, id, action, content) {
  const r = await server.api("POST", `/api/executions/${id}/resume`, { action, ...(content === undefined ? {} : { content }) });
  assert.equal(r.status, 200, `resume ${action}: ${show(r.body)}\n${server.logs()}`);
  return r.body;
}

/** Spec §4.6: the paused text and structured of `confirm_delete({item})`'s form. */
function assertFormPause({ text, structured }, { item, tool = "confirm_delete" }) {
  assert.equal(structured?.status, "waiting_for_interaction", show(structured));
  const id = structured.executionId;
  assert.match(id, EXEC_ID);
  const i = structured.interaction;
  const message = `Delete ${item}? Confirm and give a reason.`;
  assert.equal(i.kind, "form", show(structured));
  assert.equal(i.message, message, show(structured));
  assert.equal(i.address, `tools.${slug}.org.main.${tool}`, show(structured));
  assert.deepEqual(i.args, { item }, show(structured));
  assert.deepEqual(i.requestedSchema, CONFIRM_SCHEMA, show(structured));
  assert.ok(i.instructions.includes("content"), show(structured));
  assert.ok(text.startsWith(`Execution paused: ${message}\n`), text);
  assert.ok(text.includes(`\nRequested schema:\n${JSON.stringify(CONFIRM_SCHEMA, null, 2)}\nexecutionId: ${id}\n`), text);
  assert.ok(text.endsWith(`\ninstructions: ${i.instructions}`), text);
  return id;
}

const accepted = (content) => JSON.stringify({ action: "accept", content });

// ---- HTTP -----------------------------------------------------------------------------------------

test("HTTP · the server's form pauses the execution; accept with content answers elicitInput", T, async () => {
  fixture.clearRequests();
  fixture.clearElicitations();
  const paused = await execute(ex, code("confirm_delete", { item: "report" }));
  assert.equal(paused.status, "paused", show(paused));
  const id = assertFormPause(paused, { item: "report" });
  const view = await ex.api("GET", `/api/executions/${id}`);
  assert.equal(view.status, 200, show(view.body));
  assert.deepEqual(view.body.structured, paused.structured);

  const content = { confirm: true, reason: "outdated" };
  const done = await resume(ex, id, "accept", content);
  assert.equal(done.status, "completed", show(done));
  assert.equal(done.text, accepted(content), show(done));
  assert.deepEqual(fixture.elicitations(), [{ tool: "confirm_delete", action: "accept", content }]);
  assert.deepEqual(await resume(ex, id, "cancel"), done, "idempotent");
  assert.equal(downstreamCalls(), 1);
});

test("HTTP · decline and cancel reach the server, which finishes the call its way", T, async () => {
  fixture.clearElicitations();
  for (const [action, text] of [
    ["decline", "declined"],
    ["cancel", "cancelled"],
  ]) {
    const paused = await execute(ex, code("confirm_delete", { item: action }));
    const id = assertFormPause(paused, { item: action });
    const done = await resume(ex, id, action);
    assert.equal(done.status, "completed", show(done));
    assert.equal(done.text, text, show(done));
  }
  assert.deepEqual(fixture.elicitations(), [
    { tool: "confirm_delete", action: "decline" },
    { tool: "confirm_delete", action: "cancel" },
  ]);
});

test("HTTP · an elicitation sent on the standalone stream reaches the call too", T, async () => {
  const paused = await execute(ex, code("confirm_unrelated", { item: "loose" }));
  const id = assertFormPause(paused, { item: "loose", tool: "confirm_unrelated" });
  const done = await resume(ex, id, "accept", { confirm: false, reason: "r" });
  assert.equal(done.text, accepted({ confirm: false, reason: "r" }), show(done));
});

test("HTTP · a URL elicitation pauses with kind url, even under autoApprove; so does a form with fields", T, async () => {
  const paused = await execute(ex, code("open_link"), { autoApprove: true });
  assert.equal(paused.status, "paused", show(paused));
  const i = paused.structured.interaction;
  assert.equal(i.kind, "url", show(paused));
  assert.match(i.url, /^https:\/\/auth\.example\/link\/\d+$/, show(paused));
  assert.equal(i.message, "Sign in to continue.");
  assert.ok(paused.text.startsWith(`Execution paused: Sign in to continue.\nOpen this URL in a browser:\n${i.url}\n`), paused.text);
  const done = await resume(ex, paused.structured.executionId, "accept");
  assert.equal(done.text, "link:accept", show(done));

  const form = await execute(ex, code("confirm_delete", { item: "auto" }), { autoApprove: true });
  const id = assertFormPause(form, { item: "auto" });
  assert.equal((await resume(ex, id, "decline")).text, "declined");
});

// ---- MCP ------------------------------------------------------------------------------------------

async function mcpClient(server, { query = "", onElicit } = {}) {
  const capabilities = onElicit ? { elicitation: { form: {}, url: {} } } : {};
  const client = new Client({ name: "e2e-elicitation", version: "0.0.1" }, { capabilities });
  const asked = [];
  if (onElicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      return onElicit(request.params);
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp${query}`), server.mcpTransportOptions()));
  return { client, asked };
}

const textOf = (result) => result.content?.find((c) => c.type === "text")?.text ?? "";

test("MCP model mode · execute pauses on the form; the resume tool answers with content", T, async () => {
  const { client } = await mcpClient(ex);
  try {
    const paused = await client.callTool({ name: "execute", arguments: { code: code("confirm_delete", { item: "model" }) } });
    const id = assertFormPause({ text: textOf(paused), structured: paused.structuredContent }, { item: "model" });
    const content = { confirm: true, reason: "via resume" };
    const done = await client.callTool({ name: "resume", arguments: { executionId: id, action: "accept", content: JSON.stringify(content) } });
    assert.notEqual(done.isError, true, show(done));
    assert.equal(textOf(done), accepted(content), show(done));
  } finally {
    await client.close();
  }
});

test("MCP native mode · the server's form and URL are forwarded to the client, its answer goes back", T, async () => {
  const content = { confirm: true, reason: "native" };
  const { client, asked } = await mcpClient(ex, {
    query: "?elicitation_mode=native",
    onElicit: (params) => (params.mode === "url" ? { action: "accept" } : { action: "accept", content }),
  });
  try {
    const done = await client.callTool({ name: "execute", arguments: { code: code("confirm_delete", { item: "native" }) } });
    assert.notEqual(done.isError, true, show(done));
    assert.equal(textOf(done), accepted(content), show(done));
    assert.equal(asked.length, 1, show(asked));
    assert.equal(asked[0].message, "Delete native? Confirm and give a reason.");
    assert.deepEqual(asked[0].requestedSchema, CONFIRM_SCHEMA);

    const link = await client.callTool({ name: "execute", arguments: { code: code("open_link") } });
    assert.equal(textOf(link), "link:accept", show(link));
    assert.equal(asked[1].mode, "url", show(asked));
    assert.match(asked[1].url, /^https:\/\/auth\.example\/link\/\d+$/);
  } finally {
    await client.close();
  }
});

// ---- restart --------------------------------------------------------------------------------------

test("restart while an elicitation is paused (SIGTERM): resume re-runs the call and answers the server", { timeout: 40_000 }, async () => {
  const first = await startExecutor();
  let second;
  try {
    const { slug: s } = await addMcpIntegration(first, fixture.url);
    const source = `return (await tools.${s}.org.main.confirm_delete({ item: "durable" })).data.content[0].text`;
    fixture.clearRequests();
    fixture.clearElicitations();
    const paused = await execute(first, source);
    const id = paused.structured?.executionId;
    assert.match(id ?? "", EXEC_ID, show(paused));
    assert.equal(paused.structured.interaction.kind, "form", show(paused));
    const stopped = await first.stop();
    assert.equal(stopped.code, 0, `SIGTERM → exit 0\n${first.logs()}`);

    second = await startExecutor({ dataDir: first.dataDir });
    const view = await second.api("GET", `/api/executions/${id}`);
    assert.equal(view.status, 200, show(view.body));
    assert.deepEqual(view.body.structured, paused.structured, "the pause reads back the same");

    const content = { confirm: true, reason: "after restart" };
    const done = await resume(second, id, "accept", content);
    assert.equal(done.status, "completed", show(done));
    assert.equal(done.text, accepted(content), show(done));
    const answers = fixture.elicitations();
    assert.deepEqual(answers.at(-1), { tool: "confirm_delete", action: "accept", content }, show(answers));
    assert.equal(downstreamCalls(), 2, `once before the restart, once on the replay: ${show(fixture.requests())}`);
    assert.deepEqual(await resume(second, id, "decline"), done, "idempotent after the restart");
  } finally {
    await second?.kill({ removeDataDir: false });
    await first.kill({ removeDataDir: true });
  }
});
