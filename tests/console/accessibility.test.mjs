// axe-core over every page of the console, light and dark: no serious or critical violation
// of WCAG 2 A/AA. Pages are filled with real data first (an MCP fixture with a connection, a
// policy, a settled and a paused execution), so forms, tables and dialogs are checked as users
// see them.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import { createRequire } from "node:module";
import { startConsole } from "./lib/browser.mjs";
import { serveMcp } from "./lib/fixtures.mjs";

const require = createRequire(import.meta.url);
const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");
const T = { timeout: 120_000 };
let mcp;
let paused;

async function seed(ex) {
  const add = await ex.api("POST", "/api/mcp/servers", { transport: "remote", name: "Fixture", endpoint: mcp.url, slug: "fixture" });
  assert.equal(add.status, 200, JSON.stringify(add.body));
  const conn = await ex.api("POST", "/api/connections", { owner: "org", name: "main", integration: "fixture", template: "none" });
  assert.equal(conn.status, 200, JSON.stringify(conn.body));
  await ex.api("POST", "/api/policies", { owner: "org", pattern: "fixture.*.*.slow", action: "require_approval" });
  const kit = await ex.api("POST", "/api/toolkits", { owner: "org", name: "Support tools", slug: "support" });
  assert.equal(kit.status, 200, JSON.stringify(kit.body));
  await ex.api("POST", `/api/toolkits/${kit.body.id}/connections`, { pattern: "fixture.org.main.*" });
  await ex.api("POST", `/api/toolkits/${kit.body.id}/connections`, { pattern: "gone.org.old.*" });
  await ex.api("POST", `/api/toolkits/${kit.body.id}/policies`, { pattern: "fixture.org.main.slow", action: "require_approval" });
  await ex.api("POST", "/api/toolkits", { owner: "org", name: "Empty kit", slug: "empty" });
  await ex.execute("return 1");
  const r = await ex.api("POST", "/api/executions", { code: "return await tools.fixture.org.main.slow({ms: 1})" });
  paused = r.body.structured.executionId;
}

const PAGES = () => [
  "/",
  "/integrations/add/mcp",
  "/integrations/add/openapi",
  "/integrations/add/graphql",
  "/integrations/fixture",
  "/integrations/fixture?tab=tools&tool=echo",
  "/policies",
  "/toolkits",
  "/toolkits/support",
  "/toolkits/support?tool=fixture.org.main.echo",
  "/toolkits/empty",
  "/executions",
  "/tool-changes",
  `/resume/${paused}`,
  "/resume/exec_unknown",
  "/playground",
  "/providers",
  "/oauth-apps",
  "/settings",
  "/no-such-page",
];

async function violations(page) {
  // Through the debugger, which the console's script-src policy does not govern.
  await page.evaluate(axeSource);
  return page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const result = await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
    return result.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | ")}`);
  });
}

before(async () => {
  mcp = await serveMcp();
});
after(async () => {
  await mcp?.close();
});

for (const colorScheme of ["light", "dark"]) {
  test(`no serious accessibility violations on any page (${colorScheme})`, T, async () => {
    const c = await startConsole({ colorScheme });
    try {
      await seed(c.ex);
      const found = [];
      for (const path of PAGES()) {
        const page = await c.open(path);
        await page.locator("main h1").first().waitFor();
        // The executions page holds an event stream open, so "network idle" never comes.
        await page.waitForLoadState("load");
        await page.waitForTimeout(400);
        for (const v of await violations(page)) found.push(`${path}: ${v}`);
        await page.close();
      }
      // The toolkit dialogs, open.
      for (const [path, button] of [
        ["/toolkits", "New toolkit"],
        ["/toolkits/support", "Manage connections"],
        ["/toolkits/support", "Delete"],
      ]) {
        const page = await c.open(path);
        await page.getByRole("button", { name: button, exact: true }).click();
        await page.getByRole("dialog").waitFor();
        await page.waitForTimeout(300);
        for (const v of await violations(page)) found.push(`${path} (${button} dialog): ${v}`);
        await page.close();
      }
      // The token prompt, shown before any page.
      const gate = await c.context.newPage();
      await gate.goto(`${c.origin}/`);
      await gate.evaluate(() => localStorage.clear());
      await gate.reload();
      await gate.getByRole("heading", { name: "Authentication required" }).waitFor();
      for (const v of await violations(gate)) found.push(`token gate: ${v}`);
      assert.deepEqual(found, [], found.join("\n"));
    } finally {
      await c.close();
    }
  });
}
