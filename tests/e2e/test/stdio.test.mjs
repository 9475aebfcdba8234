// stdio MCP upstreams against the real binary: a server built with the official SDK's
// `StdioServerTransport` added with `POST /api/mcp/servers {transport:"stdio"}`, its env from the
// connection, its session state kept within an execution, and its process gone after removal
// and after SIGTERM.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startExecutor, freshSlug, show, pollUntil } from "../lib/executor.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const SERVER = path.resolve(here, "..", "lib", "stdio-server.mjs");

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

/** Whether a process with this pid exists (the executor reaps its children, so no zombies). */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

const sessionCode = (slug) => `
const selected = await tools.${slug}.org.default.select_workspace({ workspace: "w1" });
const read = await tools.${slug}.org.default.get_workspace({});
const token = await tools.${slug}.org.default.env({ name: "E2E_TOKEN" });
const pid = await tools.${slug}.org.default.pid({});
return JSON.stringify({
  selected: selected.data.content[0].text,
  read: read.data.content[0].text,
  token: token.data.content[0].text,
  pid: Number(pid.data.content[0].text),
});
`;

async function addStdio(ex, slug) {
  const add = await ex.api("POST", "/api/mcp/servers", {
    transport: "stdio",
    name: "E2E stdio",
    command: process.execPath,
    args: [SERVER],
    envVars: ["E2E_TOKEN"],
    env: { E2E_TOKEN: "t0ken" },
    slug,
  });
  assert.equal(add.status, 200, `${show(add.body)}\n${ex.logs()}`);
  assert.equal(add.body.slug, slug);
}

test("a stdio server: session state within an execution, env from the connection, process gone on removal", { timeout: 60_000 }, async () => {
  const ex = await startExecutor();
  cleanups.push(() => ex.kill());
  const slug = freshSlug("stdio");
  await addStdio(ex, slug);

  const integration = await ex.api("GET", `/api/integrations/${slug}`);
  assert.deepEqual(integration.body.authMethods, [
    {
      id: "env",
      label: "Environment variables",
      kind: "apikey",
      template: "env",
      placements: [{ carrier: "env", name: "E2E_TOKEN", prefix: "", variable: "E2E_TOKEN" }],
    },
  ]);
  const connections = await ex.api("GET", `/api/connections?integration=${slug}`);
  assert.deepEqual(
    connections.body.map((c) => [c.name, c.template]),
    [["default", "env"]],
  );

  const r = await ex.execute(sessionCode(slug));
  assert.equal(r.body?.status, "completed", show(r.body));
  const out = JSON.parse(r.body.text);
  assert.equal(out.selected, "selected:w1");
  assert.equal(out.read, "workspace:w1", "both calls rode one process");
  assert.equal(out.token, "t0ken", "the connection's value reached the process's environment");
  assert.ok(alive(out.pid), "the idle session's process is kept for the next execution");

  const again = await ex.execute(`return (await tools.${slug}.org.default.pid({})).data.content[0].text`);
  assert.equal(again.body?.text, String(out.pid), show(again.body));

  const removed = await ex.api("DELETE", `/api/mcp/servers/${slug}`);
  assert.equal(removed.status, 200, show(removed.body));
  assert.ok(await pollUntil(() => !alive(out.pid), { timeoutMs: 10_000 }), `process ${out.pid} outlived its integration`);
});

test("SIGTERM ends the stdio servers' processes; a bad command is a 400", { timeout: 60_000 }, async () => {
  const ex = await startExecutor();
  cleanups.push(() => ex.kill());

  const bad = await ex.api("POST", "/api/mcp/servers", { transport: "stdio", name: "bad", command: "/nonexistent/no-such-server" });
  assert.equal(bad.status, 400, show(bad.body));
  assert.equal(bad.body._tag, "McpConnectionError", show(bad.body));
  assert.equal(bad.body.transport, "stdio");
  const listed = await ex.api("GET", "/api/integrations");
  assert.ok(!listed.body.some((i) => i.slug === "bad"), show(listed.body));

  const slug = freshSlug("stdio");
  await addStdio(ex, slug);
  const r = await ex.execute(sessionCode(slug));
  assert.equal(r.body?.status, "completed", show(r.body));
  const { pid } = JSON.parse(r.body.text);
  assert.ok(alive(pid));

  const res = await ex.stop({ signal: "SIGTERM", timeoutMs: 15_000 });
  assert.equal(res.timedOut, false, ex.logs());
  assert.equal(res.code, 0, ex.logs());
  assert.ok(await pollUntil(() => !alive(pid), { timeoutMs: 5_000 }), `process ${pid} outlived the executor`);
});
