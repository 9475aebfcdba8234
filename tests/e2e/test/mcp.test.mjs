// The agent-facing MCP surface of the real binary, driven with the official SDK client:
// `/mcp` over Streamable HTTP, and `executor mcp` over stdio — bridged to a running server, and
// serving from the data directory itself when no server runs.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { serveMcpServer } from "../lib/fixture.mjs";
import { startExecutor, addMcpIntegration, EXECUTOR_BIN, show, pollUntil } from "../lib/executor.mjs";

const seedCode = (slug) => `
const selected = await tools.${slug}.org.main.select_workspace({});
const read = await tools.${slug}.org.main.get_workspace({});
return JSON.stringify({ selected, read });
`;

const textOf = (result) => result.content?.find((c) => c.type === "text")?.text ?? "";

/** An SDK client that counts tools/list_changed notifications. */
function newClient() {
  const client = new Client({ name: "e2e-mcp-client", version: "0.0.1" }, { capabilities: {} });
  const state = { listChanged: 0 };
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    state.listChanged += 1;
  });
  return { client, state };
}

function stdioTransport(dataDir) {
  return new StdioClientTransport({
    command: EXECUTOR_BIN,
    args: ["mcp"],
    env: { ...process.env, EXECUTOR_DATA_DIR: dataDir, EXECUTOR_SCOPE_DIR: dataDir, EXECUTOR_LOG: "warn" },
    cwd: dataDir,
    stderr: "pipe",
  });
}

async function checkToolsAndExecute(client, { slug } = {}) {
  const { tools } = await client.listTools();
  assert.deepEqual(
    tools.map((t) => t.name),
    ["execute", "skills", "resume"],
    show(tools),
  );
  const description = tools[0].description;
  assert.ok(description.startsWith("Execute TypeScript in a sandboxed runtime.\n\n"), description);
  if (slug) assert.ok(description.includes(`- \`${slug}\``), description);

  const one = await client.callTool({ name: "execute", arguments: { code: "return 1" } });
  assert.equal(textOf(one), "1", show(one));
  assert.notEqual(one.isError, true, show(one));
  assert.equal(one.structuredContent?.status, "completed", show(one));

  if (slug) {
    const seed = await client.callTool({ name: "execute", arguments: { code: seedCode(slug) } });
    assert.ok(textOf(seed).includes("workspace:ws-e2e"), show(seed));
    assert.ok(textOf(seed).includes("selected:ws-e2e"), show(seed));

    // Discovery from inside the sandbox: ranked search within the namespace, then describe.
    const found = await client.callTool({
      name: "execute",
      arguments: { code: `return await tools.search({ query: "get workspace", namespace: "${slug}" })` },
    });
    const page = found.structuredContent?.result;
    assert.equal(page?.items?.[0]?.path, `${slug}.org.main.get_workspace`, show(found));
    const described = await client.callTool({
      name: "execute",
      arguments: { code: `return await tools.describe.tool({ path: "${slug}.org.main.select_workspace" })` },
    });
    const info = described.structuredContent?.result;
    assert.equal(info?.name, "select_workspace", show(described));
    assert.match(info?.outputTypeScript ?? "", /ok: true/, show(described));
    assert.ok(info?.typeScriptDefinitions?.ToolError, show(described));
  }
}

let ex;
let fixture;

before(async () => {
  fixture = await serveMcpServer({ extras: false });
  ex = await startExecutor();
});
after(async () => {
  await ex?.kill();
  await fixture?.close();
});

test("MCP over HTTP · tools, execute, the seed journey, list_changed", { timeout: 60_000 }, async () => {
  const { client, state } = newClient();
  await client.connect(new StreamableHTTPClientTransport(new URL(`${ex.baseUrl}/mcp`), ex.mcpTransportOptions()));
  try {
    assert.deepEqual(client.getServerVersion(), { name: "executor", version: "1.0.0" });
    assert.equal(client.getServerCapabilities()?.tools?.listChanged, true);
    await checkToolsAndExecute(client);

    const empty = await client.callTool({ name: "execute", arguments: { code: "  " } });
    assert.equal(empty.isError, true, show(empty));

    // Let the standalone SSE stream open before the change.
    await new Promise((r) => setTimeout(r, 300));
    const { slug } = await addMcpIntegration(ex, fixture.url);
    const changed = await pollUntil(() => state.listChanged > 0, { timeoutMs: 5000 });
    assert.ok(changed, `no tools/list_changed after adding ${slug}\n${ex.logs()}`);
    await checkToolsAndExecute(client, { slug });
  } finally {
    await client.close();
  }
});

test("MCP over stdio · bridged to the running server", { timeout: 60_000 }, async () => {
  const { slug } = await addMcpIntegration(ex, fixture.url);
  const { client, state } = newClient();
  const transport = stdioTransport(ex.dataDir);
  let stderr = "";
  transport.stderr?.on("data", (d) => (stderr += d));
  await client.connect(transport);
  try {
    assert.deepEqual(client.getServerVersion(), { name: "executor", version: "1.0.0" });
    await checkToolsAndExecute(client, { slug });
    // list_changed is forwarded through the bridge.
    await new Promise((r) => setTimeout(r, 300));
    const second = await addMcpIntegration(ex, fixture.url);
    const changed = await pollUntil(() => state.listChanged > 0, { timeoutMs: 5000 });
    assert.ok(changed, `no tools/list_changed over the bridge after adding ${second.slug}\n${stderr}`);
    const { tools } = await client.listTools();
    assert.ok(tools[0].description.includes(`- \`${second.slug}\``), tools[0].description);
  } finally {
    await client.close();
  }
});

test("MCP over stdio · no server running: serves from the data directory", { timeout: 90_000 }, async () => {
  // A data dir with an integration, whose server then stops cleanly.
  const own = await startExecutor();
  let slug;
  try {
    ({ slug } = await addMcpIntegration(own, fixture.url));
    const stopped = await own.stop();
    assert.equal(stopped.code, 0, own.logs());

    const { client } = newClient();
    const transport = stdioTransport(own.dataDir);
    let stderr = "";
    transport.stderr?.on("data", (d) => (stderr += d));
    await client.connect(transport);
    try {
      await checkToolsAndExecute(client, { slug });
    } catch (e) {
      e.message += `\n--- executor mcp stderr:\n${stderr}`;
      throw e;
    } finally {
      await client.close();
    }
  } finally {
    await own.kill({ removeDataDir: true });
  }
});
