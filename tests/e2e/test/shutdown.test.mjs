// Process lifecycle: graceful SIGTERM closes pooled upstream sessions and exits 0;
// a second server on the same data dir is refused; state survives a restart.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fsp from "node:fs/promises";
import { serveMcpServer, SEED_TOOLS } from "../lib/fixture.mjs";
import { startExecutor, spawnBinary, makeDataDir, addMcpIntegration, freePort, show, pollUntil } from "../lib/executor.mjs";

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

const selectThenRead = (slug) => `
const selected = await tools.${slug}.org.main.select_workspace({});
const read = await tools.${slug}.org.main.get_workspace({});
return JSON.stringify({ selected, read });
`;

test("SIGTERM: exit status 0 and every pooled upstream session is closed with HTTP DELETE", { timeout: 60_000 }, async () => {
  const server = await serveMcpServer({ extras: false });
  cleanups.push(() => server.close());
  const ex = await startExecutor();
  cleanups.push(() => ex.kill());
  const { slug } = await addMcpIntegration(ex, server.url);
  for (let i = 0; i < 3; i++) {
    const r = await ex.execute(selectThenRead(slug));
    assert.equal(r.body?.status, "completed", show(r.body));
    assert.ok(r.body.text.includes("workspace:ws-e2e"), show(r.body));
  }
  const liveBefore = server.liveSessions();
  assert.ok(liveBefore.length >= 1, `a pooled session is live before shutdown: ${show(liveBefore)}`);

  const started = Date.now();
  const res = await ex.stop({ signal: "SIGTERM", timeoutMs: 10_000 });
  const elapsed = Date.now() - started;
  assert.equal(res.timedOut, false, `executor did not exit within 10 s of SIGTERM\n${ex.logs()}`);
  assert.equal(res.signal, null, `exited by signal ${res.signal}\n${ex.logs()}`);
  assert.equal(res.code, 0, `graceful shutdown exits 0 (took ${elapsed} ms)\n${ex.logs()}`);
  assert.deepEqual(server.liveSessions(), [], `no upstream session left open; deleted=${show(server.deletedSessions())}\nledger: ${show(server.requests().slice(-10))}`);
  for (const id of liveBefore) {
    assert.ok(server.deletedSessions().includes(id), `pooled session ${id} was DELETEd at shutdown`);
  }
});

test("SIGINT also shuts down gracefully with exit status 0", { timeout: 30_000 }, async () => {
  const ex = await startExecutor();
  cleanups.push(() => ex.kill());
  const res = await ex.stop({ signal: "SIGINT", timeoutMs: 10_000 });
  assert.equal(res.timedOut, false, ex.logs());
  assert.equal(res.code, 0, `SIGINT exit code ${res.code} signal ${res.signal}\n${ex.logs()}`);
});

test("a second server on the same data dir exits at once, non-zero, with a clear message", { timeout: 30_000 }, async () => {
  const first = await startExecutor();
  cleanups.push(() => first.kill());
  const port = await freePort();
  const started = Date.now();
  const second = spawnBinary(["web", "--port", String(port), "--hostname", "127.0.0.1"], {
    env: { EXECUTOR_DATA_DIR: first.dataDir, EXECUTOR_SCOPE_DIR: first.dataDir },
    cwd: first.dataDir,
  });
  cleanups.push(async () => {
    second.child.kill("SIGKILL");
    await second.exited;
  });
  const res = await Promise.race([second.exited, new Promise((r) => setTimeout(() => r("timeout"), 5000))]);
  const diag = `second stdout:\n${second.out()}\nsecond stderr:\n${second.err()}`;
  assert.notEqual(res, "timeout", `the second server must exit promptly (still running after 5 s)\n${diag}`);
  const elapsed = Date.now() - started;
  assert.ok(res.code !== 0 && res.code !== null, `non-zero exit status expected, got code=${res.code} signal=${res.signal}\n${diag}`);
  assert.match(second.err(), /lock|data[ _-]?dir|already|in use|another/i, `stderr explains the data dir is locked\n${diag}`);
  assert.ok(
    second.err().includes(first.dataDir) || /lock/i.test(second.err()),
    `stderr names the data dir or the lock\n${diag}`,
  );
  // The first server is unaffected.
  const h = await first.api("GET", "/api/health");
  assert.equal(h.status, 200, `first server still healthy after the refused second start (${elapsed} ms)`);
});

test("integrations, connections and tools survive a restart", { timeout: 90_000 }, async () => {
  const server = await serveMcpServer({ extras: false });
  cleanups.push(() => server.close());
  const dataDir = await makeDataDir();
  cleanups.push(() => fsp.rm(dataDir, { recursive: true, force: true }));

  const a = await startExecutor({ dataDir });
  cleanups.push(() => a.kill());
  const { slug } = await addMcpIntegration(a, server.url);
  const patched = await a.api("PATCH", `/api/integrations/${slug}`, { name: "Renamed before restart", description: "kept across restarts" });
  assert.equal(patched.status, 200, show(patched.body));
  const toolsBefore = await a.api("GET", `/api/tools?integration=${slug}`);
  assert.equal(toolsBefore.status, 200, show(toolsBefore.body));
  const stopped = await a.stop();
  assert.equal(stopped.code, 0, `first instance exit: ${show(stopped)}\n${a.logs()}`);

  const b = await startExecutor({ dataDir });
  cleanups.push(() => b.kill());
  const list = await b.api("GET", "/api/integrations");
  assert.equal(list.status, 200, show(list.body));
  const integ = list.body.find((i) => i.slug === slug);
  assert.ok(integ, `GET /api/integrations lists ${slug} after restart: ${show(list.body)}`);
  assert.equal(integ.name, "Renamed before restart", show(integ));
  assert.equal(integ.description, "kept across restarts", show(integ));
  assert.equal(integ.kind, "mcp", show(integ));

  const conns = await b.api("GET", `/api/connections?integration=${slug}`);
  assert.equal(conns.status, 200, show(conns.body));
  assert.deepEqual(conns.body.map((c) => [c.owner, c.name, c.address]), [["org", "main", `tools.${slug}.org.main`]], show(conns.body));

  const tools = await b.api("GET", `/api/tools?integration=${slug}`);
  assert.equal(tools.status, 200, show(tools.body));
  assert.deepEqual(tools.body.map((t) => t.name).sort(), [...SEED_TOOLS].sort(), `both tools after restart: ${show(tools.body)}`);
  assert.deepEqual(
    tools.body.map((t) => t.address).sort(),
    SEED_TOOLS.map((n) => `tools.${slug}.org.main.${n}`).sort(),
    show(tools.body),
  );

  // And the restarted server can still call them, statefully.
  const r = await b.execute(selectThenRead(slug));
  assert.equal(r.body?.status, "completed", show(r.body));
  assert.ok(r.body.text.includes("workspace:ws-e2e"), show(r.body));
  const s2 = await b.stop();
  assert.equal(s2.code, 0, b.logs());
});
