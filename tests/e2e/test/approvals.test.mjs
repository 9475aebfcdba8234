// Approval journeys against the real binary, over the HTTP API and over `/mcp` with the official
// SDK client: policies (`require_approval`, `block`), pauses and their wire shapes (spec §3.1,
// §3.5, §4.6, §4.7), resume accept / decline / cancel, idempotent resume, unknown ids, pauses that
// survive a restart, and the two MCP approval modes (spec §5): `model` (the agent calls `resume`)
// and `native` (the server asks the client with `elicitation/create`).
//
// Every test registers its own integration (fresh slug) so policies never leak between tests.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { serveMcpServer } from "../lib/fixture.mjs";
import { startExecutor, addMcpIntegration, show, pollUntil } from "../lib/executor.mjs";

/** A not-found body without its sentence (which says the same in words). */
const notFound = ({ message, ...rest }) => {
  assert.equal(typeof message, "string");
  return rest;
};

const EXEC_ID = /^exec_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const EMPTY_SCHEMA = { type: "object", properties: {} };
const T = { timeout: 10_000 };

let ex;
let fixture;

before(async () => {
  fixture = await serveMcpServer();
  ex = await startExecutor();
});
after(async () => {
  await ex?.kill();
  await fixture?.close();
});

// ---- helpers ------------------------------------------------------------------------------------

/** `tools/call` requests the fixture received (any tool), since the last clear. */
const downstreamCalls = () => fixture.requests().filter((r) => r.httpMethod === "POST" && r.rpcMethods.includes("tools/call")).length;

/** A fresh integration on `server` with an org policy `<slug>.*.*.<tool>` → `action`. */
async function gatedIntegration(server, { action = "require_approval", tool = "echo" } = {}) {
  const { slug } = await addMcpIntegration(server, fixture.url);
  const pattern = `${slug}.*.*.${tool}`;
  const policy = await server.api("POST", "/api/policies", { owner: "org", pattern, action });
  assert.equal(policy.status, 200, show(policy.body));
  assert.match(policy.body.id, /^pol_/, show(policy.body));
  assert.equal(policy.body.owner, "org");
  assert.equal(policy.body.pattern, pattern);
  assert.equal(policy.body.action, action);
  assert.equal(policy.body.matches, 1, `the rule matches the one ${tool} tool: ${show(policy.body)}`);
  return { slug, pattern, policy: policy.body };
}

/** POST /api/executions without autoApprove (the caller is not the approver). */
async function executeGated(server, code) {
  const r = await server.api("POST", "/api/executions", { code });
  assert.equal(r.status, 200, `${show(r.body)}\n${server.logs()}`);
  return r.body;
}

async function resumeHttp(server, id, action, extra = {}) {
  const r = await server.api("POST", `/api/executions/${id}/resume`, { action, ...extra });
  assert.equal(r.status, 200, `resume ${action}: ${show(r.body)}\n${server.logs()}`);
  return r.body;
}

/** Asserts the HTTP Paused shape and returns its executionId. */
function pausedId(paused) {
  assert.equal(paused.status, "paused", show(paused));
  const id = paused.structured?.executionId;
  assert.match(id ?? "", EXEC_ID, show(paused));
  return id;
}

const echoCode = (slug, message) => `return (await tools.${slug}.org.main.echo({ message: ${JSON.stringify(message)} })).data.content[0].text`;

/** The executed code catches the rejection of a declined/cancelled approval and returns a marker. */
const catchingCode = (slug) => `
try {
  await tools.${slug}.org.main.echo({ message: "never" });
  return "ran";
} catch (e) {
  return "caught: " + e.message;
}`;

const refusal = (slug, how) => `caught: Tool "${slug}.org.main.echo" requires approval but the request was ${how} by the user.`;

/** Spec §4.6/§4.7: the Paused text and structured for an approval of `echo({message})`. */
function assertApprovalPause({ text, structured }, { slug, pattern, message }) {
  const address = `tools.${slug}.org.main.echo`;
  const approval = `Approve ${address}? (matched policy: ${pattern})\n\nArguments:\n${JSON.stringify({ message }, null, 2)}`;
  assert.equal(structured.status, "waiting_for_interaction", show(structured));
  const id = structured.executionId;
  assert.match(id, EXEC_ID);
  const i = structured.interaction;
  assert.equal(i.kind, "form", show(structured));
  assert.equal(i.message, approval, show(structured));
  assert.equal(i.address, address, show(structured));
  assert.deepEqual(i.args, { message }, show(structured));
  assert.deepEqual(i.requestedSchema, EMPTY_SCHEMA, show(structured));
  assert.equal(typeof i.instructions, "string");
  assert.ok(i.instructions.length > 0, show(structured));
  // Local pauses carry a deadline (expiresAt / ttlMs), consistent with each other.
  if (structured.expiresAt !== undefined) {
    assert.equal(typeof structured.ttlMs, "number", show(structured));
    assert.ok(structured.expiresAt > Date.now() - 60_000, show(structured));
  }

  assert.ok(text.startsWith(`Execution paused: ${approval}\n`), text);
  // A form with a (non-empty) requestedSchema: the schema is shown.
  assert.ok(text.includes(`\nRequested schema:\n${JSON.stringify(EMPTY_SCHEMA, null, 2)}\n`), text);
  assert.ok(text.includes(`\nexecutionId: ${id}\n`), text);
  assert.ok(text.endsWith(`\ninstructions: ${i.instructions}`), text);
  return id;
}

/** An SDK client on `/mcp<query>`; `onElicit` (when given) declares elicitation and answers it. */
async function mcpClient(server, { query = "", onElicit } = {}) {
  const capabilities = onElicit ? { elicitation: {} } : {};
  const client = new Client({ name: "e2e-approvals", version: "0.0.1" }, { capabilities });
  const elicited = [];
  if (onElicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicited.push(request.params);
      return onElicit(request.params);
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.baseUrl}/mcp${query}`), server.mcpTransportOptions()));
  return { client, elicited };
}

const textOf = (result) => result.content?.find((c) => c.type === "text")?.text ?? "";
const execTool = (client, code) => client.callTool({ name: "execute", arguments: { code } });
const resumeTool = (client, executionId, action, content) =>
  client.callTool({ name: "resume", arguments: { executionId, action, ...(content === undefined ? {} : { content }) } });

// ---- HTTP API -----------------------------------------------------------------------------------

test("HTTP · require_approval pauses; accept runs the tool; resume is idempotent", T, async () => {
  const { slug, pattern } = await gatedIntegration(ex);
  fixture.clearRequests();

  const paused = await executeGated(ex, echoCode(slug, "hi"));
  const id = pausedId(paused);
  assert.deepEqual(Object.keys(paused).sort(), ["status", "structured", "text"], show(paused));
  assertApprovalPause(paused, { slug, pattern, message: "hi" });
  assert.equal(downstreamCalls(), 0, "nothing reaches the tool before the approval");

  // The pause can be read back, as it was returned.
  const view = await ex.api("GET", `/api/executions/${id}`);
  assert.equal(view.status, 200, show(view.body));
  assert.equal(view.body.text, paused.text);
  assert.deepEqual(view.body.structured, paused.structured);

  const done = await resumeHttp(ex, id, "accept");
  assert.deepEqual(
    done,
    { status: "completed", text: "echo:hi", structured: { status: "completed", result: "echo:hi", logs: [] }, isError: false },
    show(done),
  );
  assert.equal(downstreamCalls(), 1, show(fixture.requests()));

  // Settled: the same outcome on every later resume, whatever the action; the pause is gone.
  for (const action of ["accept", "decline", "cancel"]) {
    assert.deepEqual(await resumeHttp(ex, id, action), done, `resume ${action} after settlement`);
  }
  const gone = await ex.api("GET", `/api/executions/${id}`);
  assert.equal(gone.status, 404, show(gone.body));
  assert.deepEqual(notFound(gone.body), { _tag: "ExecutionNotFoundError", executionId: id });
  assert.equal(downstreamCalls(), 1, "replayed resumes never call the tool again");

  // autoApprove: the caller is the approver, the gated call runs inline.
  const inline = await ex.execute(echoCode(slug, "inline"));
  assert.equal(inline.status, 200, show(inline.body));
  assert.equal(inline.body.status, "completed", show(inline.body));
  assert.equal(inline.body.text, "echo:inline", show(inline.body));

  // Ungated tools of the same integration never pause.
  const free = await executeGated(ex, `return (await tools.${slug}.org.main.structured_tool({ n: 2 })).data.structuredContent.doubled`);
  assert.equal(free.status, "completed", show(free));
  assert.equal(free.text, "4", show(free));
});

test("HTTP · decline and cancel reject the call inside the code (catchable)", T, async () => {
  const { slug } = await gatedIntegration(ex);
  fixture.clearRequests();

  for (const [action, how] of [
    ["decline", "declined"],
    ["cancel", "cancelled"],
  ]) {
    const id = pausedId(await executeGated(ex, catchingCode(slug)));
    const done = await resumeHttp(ex, id, action);
    assert.equal(done.status, "completed", show(done));
    assert.equal(done.isError, false, show(done));
    assert.equal(done.structured.result, refusal(slug, how), show(done));
    assert.equal(done.text, refusal(slug, how), show(done));
    // Idempotent: a later accept does not run the tool.
    assert.deepEqual(await resumeHttp(ex, id, "accept"), done);
  }

  // Uncaught, the rejection fails the execution with the same message.
  const id = pausedId(await executeGated(ex, echoCode(slug, "x")));
  const failed = await resumeHttp(ex, id, "decline");
  assert.equal(failed.status, "completed", show(failed));
  assert.equal(failed.isError, true, show(failed));
  assert.equal(failed.structured.status, "error", show(failed));
  assert.ok(failed.text.startsWith("Error: "), show(failed));
  assert.ok(failed.text.includes(`Tool "${slug}.org.main.echo" requires approval but the request was declined by the user.`), show(failed));

  assert.equal(downstreamCalls(), 0, `a refused call never reaches the tool: ${show(fixture.requests())}`);
});

test("HTTP · unknown execution ids are 404 ExecutionNotFoundError; a bad action is a 400", T, async () => {
  for (const id of ["exec_00000000-0000-4000-8000-000000000000", "exec_nope", "nope"]) {
    const read = await ex.api("GET", `/api/executions/${id}`);
    assert.equal(read.status, 404, show(read.body));
    assert.deepEqual(notFound(read.body), { _tag: "ExecutionNotFoundError", executionId: id });
    for (const action of ["accept", "decline", "cancel"]) {
      const r = await ex.api("POST", `/api/executions/${id}/resume`, { action });
      assert.equal(r.status, 404, show(r.body));
      assert.deepEqual(notFound(r.body), { _tag: "ExecutionNotFoundError", executionId: id });
    }
  }

  const { slug } = await gatedIntegration(ex);
  const id = pausedId(await executeGated(ex, echoCode(slug, "still")));
  for (const body of [{ action: "approve" }, {}, { action: 1 }]) {
    const r = await ex.api("POST", `/api/executions/${id}/resume`, body);
    assert.equal(r.status, 400, `${show(body)} → ${show(r.body)}`);
    assert.equal(r.body._tag, "HttpApiSchemaError", show(r.body));
  }
  // A refused resume request leaves the pause as it was.
  const view = await ex.api("GET", `/api/executions/${id}`);
  assert.equal(view.status, 200, show(view.body));
  const done = await resumeHttp(ex, id, "accept");
  assert.equal(done.text, "echo:still", show(done));
});

test("HTTP · concurrent gated calls pause one after another", T, async () => {
  const { slug, pattern } = await gatedIntegration(ex);
  const code = `
const [a, b] = await Promise.all([
  tools.${slug}.org.main.echo({ message: "a" }),
  tools.${slug}.org.main.echo({ message: "b" }),
]);
return [a.data.content[0].text, b.data.content[0].text];`;
  const first = await executeGated(ex, code);
  const id = pausedId(first);
  const m1 = first.structured.interaction.args.message;
  assertApprovalPause(first, { slug, pattern, message: m1 });

  const second = await resumeHttp(ex, id, "accept");
  assert.equal(second.status, "paused", show(second));
  assert.equal(second.structured.executionId, id, "the next pause of the same execution");
  const m2 = second.structured.interaction.args.message;
  assertApprovalPause(second, { slug, pattern, message: m2 });
  assert.deepEqual([m1, m2].sort(), ["a", "b"], "each call is asked for once");

  const done = await resumeHttp(ex, id, "accept");
  assert.equal(done.status, "completed", show(done));
  assert.deepEqual(done.structured.result, ["echo:a", "echo:b"], show(done));
});

test("policies · a user approve cannot loosen an org require_approval; removing the rule lifts the gate", T, async () => {
  const { slug, policy } = await gatedIntegration(ex);
  const loosen = await ex.api("POST", "/api/policies", { owner: "user", pattern: `${slug}.org.main.echo`, action: "approve" });
  assert.equal(loosen.status, 200, show(loosen.body));
  const id = pausedId(await executeGated(ex, echoCode(slug, "strict")));
  assert.equal((await resumeHttp(ex, id, "accept")).text, "echo:strict");

  for (const p of [policy, loosen.body]) {
    const removed = await ex.api("DELETE", `/api/policies/${p.id}`, { owner: p.owner });
    assert.deepEqual([removed.status, removed.body], [200, { removed: true }]);
  }
  const free = await executeGated(ex, echoCode(slug, "free"));
  assert.equal(free.status, "completed", show(free));
  assert.equal(free.text, "echo:free", show(free));
});

test("block · tool_blocked on both surfaces, hidden from search and describe, nothing sent downstream", T, async () => {
  const { slug } = await gatedIntegration(ex, { action: "block" });
  fixture.clearRequests();
  const code = `return await tools.${slug}.org.main.echo({ message: "no" })`;
  const blockedOutcome = {
    ok: false,
    error: { code: "tool_blocked", message: `Tool blocked by policy: ${slug}.org.main.echo` },
  };

  // HTTP, with and without autoApprove: block still applies, and never pauses.
  for (const autoApprove of [true, false]) {
    const r = await ex.api("POST", "/api/executions", { code, autoApprove });
    assert.equal(r.status, 200, show(r.body));
    assert.equal(r.body.status, "completed", show(r.body));
    assert.equal(r.body.isError, false, show(r.body));
    const result = r.body.structured.result;
    assert.equal(result.ok, false, show(r.body));
    assert.equal(result.error.code, blockedOutcome.error.code, show(r.body));
    assert.equal(result.error.message, blockedOutcome.error.message, show(r.body));
  }

  // MCP: the same gate.
  const { client } = await mcpClient(ex);
  try {
    const r = await execTool(client, code);
    assert.notEqual(r.isError, true, show(r));
    assert.equal(r.structuredContent?.status, "completed", show(r));
    assert.equal(r.structuredContent.result?.error?.code, "tool_blocked", show(r));

    // Hidden from the agent: search (ranked and enumeration) and describe.
    const found = await execTool(
      client,
      `return {
        ranked: await tools.search({ query: "echo", namespace: "${slug}" }),
        all: await tools.search({ query: "", namespace: "${slug}" }),
        described: await tools.describe.tool({ path: "${slug}.org.main.echo" }),
      }`,
    );
    const { ranked, all, described } = found.structuredContent?.result ?? {};
    assert.ok(ranked && all && described, show(found));
    assert.ok(!ranked.items.some((i) => i.name === "echo"), show(ranked));
    const names = all.items.map((i) => i.name);
    assert.ok(!names.includes("echo"), show(all));
    assert.ok(names.includes("select_workspace") && names.includes("structured_tool"), show(all));
    assert.equal(all.total, names.length, show(all));
    assert.equal(described.error?.code, "tool_not_found", show(described));
  } finally {
    await client.close();
  }

  // The HTTP listing keeps blocked tools unless asked not to.
  const listed = await ex.api("GET", `/api/tools?integration=${slug}`);
  assert.ok(listed.body.some((t) => t.name === "echo"), show(listed.body));
  const visible = await ex.api("GET", `/api/tools?integration=${slug}&includeBlocked=false`);
  assert.equal(visible.status, 200, show(visible.body));
  assert.ok(!visible.body.some((t) => t.name === "echo"), show(visible.body));
  assert.ok(visible.body.some((t) => t.name === "get_workspace"), show(visible.body));

  assert.equal(downstreamCalls(), 0, `a blocked call must not reach the server: ${show(fixture.requests())}`);
});

// ---- restart --------------------------------------------------------------------------------------

test("restart while paused (SIGTERM, same data dir): HTTP and MCP pauses resume and complete", { timeout: 30_000 }, async () => {
  const first = await startExecutor();
  let second;
  try {
    const { slug, pattern } = await gatedIntegration(first);
    // Values computed before the pause must be the same after the restart, and the call made
    // before the pause must be answered from the journal, not sent again.
    const code = `
const r = Math.random();
const t = Date.now();
const sel = await tools.${slug}.org.main.select_workspace({});
const e = await tools.${slug}.org.main.echo({ message: String(r) });
return { r, t, sel: sel.data.content[0].text, echo: e.data.content[0].text };`;

    fixture.clearRequests();
    const paused = await executeGated(first, code);
    const id = pausedId(paused);
    const r = paused.structured.interaction.args.message;
    assertApprovalPause(paused, { slug, pattern, message: r });
    const viewBefore = await first.api("GET", `/api/executions/${id}`);
    assert.equal(viewBefore.status, 200, show(viewBefore.body));

    // A pause made over MCP (model mode) in the same process.
    const { client } = await mcpClient(first);
    let mcpId;
    try {
      const mp = await execTool(client, echoCode(slug, "via-mcp"));
      assert.equal(mp.structuredContent?.status, "waiting_for_interaction", show(mp));
      mcpId = mp.structuredContent.executionId;
      assert.match(mcpId, EXEC_ID);
    } finally {
      await client.close();
    }
    assert.equal(downstreamCalls(), 1, "only select_workspace ran before the pauses");

    const stopped = await first.stop();
    assert.equal(stopped.code, 0, `SIGTERM → exit 0\n${first.logs()}`);
    assert.equal(stopped.timedOut, false);

    second = await startExecutor({ dataDir: first.dataDir });
    fixture.clearRequests();
    const view = await second.api("GET", `/api/executions/${id}`);
    assert.equal(view.status, 200, `the new process knows the pause: ${show(view.body)}\n${second.logs()}`);
    assert.deepEqual(view.body, viewBefore.body);

    const done = await resumeHttp(second, id, "accept");
    assert.equal(done.status, "completed", show(done));
    assert.equal(done.isError, false, show(done));
    const result = done.structured.result;
    assert.equal(String(result.r), r, `Math.random() replayed: ${show(done)}`);
    assert.equal(typeof result.t, "number", show(done));
    assert.equal(result.sel, "selected:ws-e2e", show(done));
    assert.equal(result.echo, `echo:${r}`, show(done));
    assert.equal(downstreamCalls(), 1, `only the approved call went downstream: ${show(fixture.requests())}`);
    assert.deepEqual(await resumeHttp(second, id, "decline"), done, "idempotent after the restart");

    // The MCP pause, resumed with the resume tool from a new MCP session.
    const { client: again } = await mcpClient(second);
    try {
      const res = await resumeTool(again, mcpId, "accept");
      assert.equal(res.structuredContent?.status, "completed", show(res));
      assert.equal(res.structuredContent.result, "echo:via-mcp", show(res));
      assert.equal(textOf(res), "echo:via-mcp", show(res));
    } finally {
      await again.close();
    }
    assert.equal(downstreamCalls(), 2, show(fixture.requests()));
  } finally {
    await second?.kill({ removeDataDir: false });
    await first.kill({ removeDataDir: true });
  }
});

/**
 * An execution with two concurrent gated calls, `slow` accepted and running downstream while the
 * execution waits on the approval of `echo`. Returns its id.
 */
async function acceptedCallInFlight(server) {
  const { slug } = await addMcpIntegration(server, fixture.url);
  for (const tool of ["slow", "echo"]) {
    const p = await server.api("POST", "/api/policies", { owner: "org", pattern: `${slug}.*.*.${tool}`, action: "require_approval" });
    assert.equal(p.status, 200, show(p.body));
  }
  const code = `
const [s, e] = await Promise.all([
  tools.${slug}.org.main.slow({ ms: 700 }),
  tools.${slug}.org.main.echo({ message: "e" }),
]);
return [s.data.content[0].text, e.data.content[0].text];`;
  // Concurrent pauses come in no fixed order: take an execution whose first pause is `slow`.
  let id;
  for (let i = 0; i < 30 && !id; i++) {
    const p = await executeGated(server, code);
    if (p.structured.interaction.address.endsWith(".slow")) id = pausedId(p);
    else await resumeHttp(server, pausedId(p), "cancel");
  }
  assert.ok(id, "no execution paused on `slow` first");
  fixture.clearRequests();
  const next = await resumeHttp(server, id, "accept");
  assert.equal(next.status, "paused", show(next));
  assert.equal(next.structured.executionId, id);
  assert.ok(next.structured.interaction.address.endsWith(".echo"), show(next));
  return id;
}

const SLOW_AND_ECHO = ["slept:700:no workspace selected", "echo:e"];

test("restart while paused with an accepted call in flight: the approval is kept", { timeout: 30_000 }, async () => {
  const first = await startExecutor();
  let second;
  try {
    const id = await acceptedCallInFlight(first);
    const stopped = await first.stop();
    assert.equal(stopped.code, 0, first.logs());

    second = await startExecutor({ dataDir: first.dataDir });
    const done = await resumeHttp(second, id, "accept");
    assert.equal(done.status, "completed", `the accepted slow call was asked for again: ${show(done)}`);
    assert.deepEqual(done.structured.result, SLOW_AND_ECHO, show(done));
  } finally {
    await second?.kill({ removeDataDir: false });
    await first.kill({ removeDataDir: true });
  }
});

// On SIGTERM the engine lets the running calls of paused executions finish and be journaled
// (bounded) before it abandons them, so a call that already reached the tool is answered from the
// journal after the restart instead of being sent downstream again.
test(
  "restart while paused with an accepted call in flight: the call is sent downstream once",
  { timeout: 30_000 },
  async () => {
    const first = await startExecutor();
    let second;
    try {
      const id = await acceptedCallInFlight(first);
      const reached = await pollUntil(() => downstreamCalls() === 1, { timeoutMs: 5000 });
      assert.ok(reached, "the accepted slow call reached the tool before the restart");
      const stopped = await first.stop();
      assert.equal(stopped.code, 0, first.logs());

      second = await startExecutor({ dataDir: first.dataDir });
      const done = await resumeHttp(second, id, "accept");
      assert.equal(done.status, "completed", show(done));
      assert.deepEqual(done.structured.result, SLOW_AND_ECHO, show(done));
      assert.equal(downstreamCalls(), 2, `slow once, echo once: ${show(fixture.requests())}`);
    } finally {
      await second?.kill({ removeDataDir: false });
      await first.kill({ removeDataDir: true });
    }
  },
);

// ---- MCP: model mode ------------------------------------------------------------------------------

test("MCP model mode · execute pauses, the resume tool accepts, declines, cancels; idempotent; unknown id", T, async () => {
  const { slug, pattern } = await gatedIntegration(ex);
  const { client, elicited } = await mcpClient(ex);
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["execute", "skills", "resume"], show(tools));
    const resume = tools.find((t) => t.name === "resume");
    assert.deepEqual(resume.inputSchema.required, ["executionId", "action"], show(resume));
    assert.deepEqual(resume.inputSchema.properties.action.enum, ["accept", "decline", "cancel"], show(resume));

    fixture.clearRequests();
    const paused = await execTool(client, echoCode(slug, "model"));
    assert.notEqual(paused.isError, true, show(paused));
    assert.equal(paused.content.length, 1, show(paused));
    const id = assertApprovalPause({ text: textOf(paused), structured: paused.structuredContent }, { slug, pattern, message: "model" });
    assert.equal(downstreamCalls(), 0);

    const done = await resumeTool(client, id, "accept", "{}");
    assert.notEqual(done.isError, true, show(done));
    assert.equal(textOf(done), "echo:model", show(done));
    assert.deepEqual(done.structuredContent, { status: "completed", result: "echo:model", logs: [] }, show(done));
    assert.equal(downstreamCalls(), 1);

    // Resume twice → the same outcome, nothing runs again.
    const twice = await resumeTool(client, id, "decline");
    assert.deepEqual(twice, done);
    assert.equal(downstreamCalls(), 1);

    // Decline and cancel: the call rejects inside the code, which catches it.
    for (const [action, how] of [
      ["decline", "declined"],
      ["cancel", "cancelled"],
    ]) {
      const p = await execTool(client, catchingCode(slug));
      assert.equal(p.structuredContent?.status, "waiting_for_interaction", show(p));
      const r = await resumeTool(client, p.structuredContent.executionId, action);
      assert.notEqual(r.isError, true, show(r));
      assert.equal(r.structuredContent?.status, "completed", show(r));
      assert.equal(r.structuredContent.result, refusal(slug, how), show(r));
      assert.equal(textOf(r), refusal(slug, how), show(r));
    }
    assert.equal(downstreamCalls(), 1, "refused calls never reach the tool");

    // Unknown id: an isError result with the recovery hint (not a protocol error).
    const unknown = await resumeTool(client, "exec_00000000-0000-4000-8000-000000000000", "accept");
    assert.equal(unknown.isError, true, show(unknown));
    assert.equal(unknown.structuredContent?.status, "execution_not_found", show(unknown));
    assert.equal(unknown.structuredContent.executionId, "exec_00000000-0000-4000-8000-000000000000");
    assert.equal(unknown.structuredContent.recovery, "re_execute", show(unknown));
    assert.ok(textOf(unknown).includes("run the execute tool again"), textOf(unknown));

    // A bad action is an isError result and leaves the pause untouched.
    const p = await execTool(client, echoCode(slug, "later"));
    const pid = p.structuredContent.executionId;
    const bad = await resumeTool(client, pid, "approve");
    assert.equal(bad.isError, true, show(bad));
    const ok = await resumeTool(client, pid, "accept");
    assert.equal(textOf(ok), "echo:later", show(ok));

    assert.deepEqual(elicited, [], "model mode never sends elicitation/create");
  } finally {
    await client.close();
  }
});

test("MCP native mode without the elicitation capability falls back to model-mode pauses", T, async () => {
  const { slug } = await gatedIntegration(ex);
  const { client } = await mcpClient(ex, { query: "?elicitation_mode=native" });
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["execute", "skills", "resume"], show(tools));
    const p = await execTool(client, echoCode(slug, "fallback"));
    assert.equal(p.structuredContent?.status, "waiting_for_interaction", show(p));
    const done = await resumeTool(client, p.structuredContent.executionId, "accept");
    assert.equal(textOf(done), "echo:fallback", show(done));
  } finally {
    await client.close();
  }
});

// ---- MCP: native mode ----------------------------------------------------------------------------

test("MCP native mode · the client is asked with elicitation/create; accept runs the tool", T, async () => {
  const { slug, pattern } = await gatedIntegration(ex);
  const { client, elicited } = await mcpClient(ex, { query: "?elicitation_mode=native", onElicit: () => ({ action: "accept" }) });
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["execute", "skills"], "native mode has no resume tool");

    fixture.clearRequests();
    const done = await execTool(client, echoCode(slug, "native"));
    assert.notEqual(done.isError, true, show(done));
    assert.equal(textOf(done), "echo:native", show(done));
    assert.deepEqual(done.structuredContent, { status: "completed", result: "echo:native", logs: [] }, show(done));
    assert.equal(downstreamCalls(), 1);

    assert.equal(elicited.length, 1, show(elicited));
    const asked = elicited[0];
    assert.equal(asked.mode ?? "form", "form", show(asked));
    assert.equal(
      asked.message,
      `Approve tools.${slug}.org.main.echo? (matched policy: ${pattern})\n\nArguments:\n${JSON.stringify({ message: "native" }, null, 2)}`,
      show(asked),
    );
    assert.deepEqual(asked.requestedSchema, EMPTY_SCHEMA, show(asked));

    // Two gated calls in one execution: asked twice, in turn.
    const both = await execTool(
      client,
      `const [a, b] = await Promise.all([tools.${slug}.org.main.echo({ message: "a" }), tools.${slug}.org.main.echo({ message: "b" })]);
       return [a.data.content[0].text, b.data.content[0].text];`,
    );
    assert.deepEqual(both.structuredContent?.result, ["echo:a", "echo:b"], show(both));
    assert.equal(elicited.length, 3, show(elicited));

    // There is no resume tool to call.
    await assert.rejects(resumeTool(client, "exec_00000000-0000-4000-8000-000000000000", "accept"), /resume/);
  } finally {
    await client.close();
  }
});

test("MCP native mode · decline, cancel and a failing client reject the call inside the code", T, async () => {
  const { slug } = await gatedIntegration(ex);
  fixture.clearRequests();
  for (const [answer, how] of [
    [() => ({ action: "decline" }), "declined"],
    [() => ({ action: "cancel" }), "cancelled"],
    [
      () => {
        throw new Error("the user closed the dialog");
      },
      "cancelled",
    ],
  ]) {
    const { client, elicited } = await mcpClient(ex, { query: "?elicitation_mode=native", onElicit: answer });
    try {
      const r = await execTool(client, catchingCode(slug));
      assert.notEqual(r.isError, true, show(r));
      assert.equal(r.structuredContent?.status, "completed", show(r));
      assert.equal(r.structuredContent.result, refusal(slug, how), show(r));
      assert.equal(elicited.length, 1, show(elicited));
    } finally {
      await client.close();
    }
  }
  assert.equal(downstreamCalls(), 0, `refused calls never reach the tool: ${show(fixture.requests())}`);
});
