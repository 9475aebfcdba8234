// A pause outlives the server: the call is paused, the server stops (SIGTERM) and starts again on
// the same data directory, and /resume/<id> still shows the request and approves it; the
// execution then completes with the tool's real answer.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { makeDataDir } from "../e2e/lib/executor.mjs";
import { serveMcp } from "./lib/fixtures.mjs";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const { startExecutor } = await import("../e2e/lib/executor.mjs");

const cleanup = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

test("an approval page works after a restart of the server", { timeout: 90_000 }, async () => {
  const mcp = await serveMcp();
  cleanup.push(() => mcp.close());
  const dataDir = await makeDataDir("executor-console-restart-");
  const first = await startExecutor({ dataDir });
  cleanup.push(() => first.kill());
  assert.equal((await first.api("POST", "/api/mcp/servers", { transport: "remote", name: "Fixture", endpoint: mcp.url, slug: "fixture" })).status, 200);
  assert.equal((await first.api("POST", "/api/connections", { owner: "org", name: "main", integration: "fixture", template: "none" })).status, 200);
  assert.equal((await first.api("POST", "/api/policies", { owner: "org", pattern: "fixture.*.*.echo", action: "require_approval" })).status, 200);
  const paused = await first.api("POST", "/api/executions", {
    code: "const r = await tools.fixture.org.main.echo({ message: 'after the restart' }); return r.data.content[0].text",
  });
  assert.equal(paused.body.status, "paused", JSON.stringify(paused.body));
  const id = paused.body.structured.executionId;
  await first.stop();

  const second = await startExecutor({ dataDir });
  cleanup.push(() => second.kill());
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium" });
  cleanup.push(() => browser.close());
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${second.port}/resume/${id}?_token=${encodeURIComponent(second.token)}`);
  await page.getByText("fixture.org.main.echo").first().waitFor();
  await page.getByRole("button", { name: "Approve" }).click();
  // The result the page shows once the replayed execution settled.
  await page.getByText("echo:after the restart").first().waitFor();
  const journal = await second.api("GET", `/api/executions/${id}/journal`);
  assert.equal(journal.body.status, "completed", JSON.stringify(journal.body));
  assert.equal(journal.body.outcome.text, "echo:after the restart");
});
