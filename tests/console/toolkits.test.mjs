// The toolkits pages in headless Chromium against the real binary: the empty list, creating a
// toolkit from the dialog, its MCP URL (copied), adding a connection and the built-in tools in
// the Manage connections dialog, the tool tree of what it exposes, a Block set from a tree menu
// (the tool leaves the tree; the rule is the exact id), a rule changed and deleted from the rules
// list, a configured pattern that matches no connection, rename, and delete with a confirmation
// that leaves the connection alone.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { SHOTS, startConsole } from "./lib/browser.mjs";
import { serveMcp } from "./lib/fixtures.mjs";

const T = { timeout: 90_000 };
let c;
let mcp;

before(async () => {
  mcp = await serveMcp();
  c = await startConsole();
  const add = await c.ex.api("POST", "/api/mcp/servers", { transport: "remote", name: "Fixture", endpoint: mcp.url, slug: "fixture" });
  assert.equal(add.status, 200, JSON.stringify(add.body));
  const conn = await c.ex.api("POST", "/api/connections", { owner: "org", name: "main", integration: "fixture", template: "none" });
  assert.equal(conn.status, 200, JSON.stringify(conn.body));
  await c.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: c.origin });
});
after(async () => {
  await c?.close();
  await mcp?.close();
});

const toolkits = async () => (await c.ex.api("GET", "/api/toolkits")).body.toolkits;

test("toolkits: create, add a connection, block a tool from the tree, rules, rename, delete", T, async () => {
  const page = await c.open("/toolkits");
  await page.getByRole("heading", { name: /^Toolkits/ }).waitFor();
  await page.getByText("No toolkits yet").waitFor();
  await page.getByText(/named allow-list of tools with its own MCP endpoint/).waitFor();
  assert.equal(await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Toolkits" }).getAttribute("aria-current"), "page");

  // Create from the dialog; the slug comes from the name.
  await page.getByRole("button", { name: "New toolkit" }).click();
  const create = page.getByRole("dialog", { name: "New toolkit" });
  await create.getByRole("button", { name: "Create toolkit" }).click();
  await create.getByText("Give the toolkit a name.").waitFor();
  await create.getByLabel("Name").fill("Support tools");
  await create.getByLabel("Slug (optional)").fill("Bad Slug");
  await create.getByRole("button", { name: "Create toolkit" }).click();
  await create.getByText(/Toolkit slug must be/).waitFor();
  assert.equal((await toolkits()).length, 0);
  await create.getByLabel("Slug (optional)").fill("");
  await create.getByRole("button", { name: "Create toolkit" }).click();
  await page.waitForURL(/\/toolkits\/support-tools$/);
  const [made] = await toolkits();
  assert.equal(made.owner, "org");
  assert.equal(made.slug, "support-tools");
  assert.equal(made.name, "Support tools");

  // The endpoint, copied; no connections yet.
  await page.getByRole("heading", { name: "Support tools", level: 1 }).waitFor();
  await page.getByRole("link", { name: /Toolkits/ }).first().waitFor();
  const url = `${c.origin}/mcp/toolkits/support-tools`;
  assert.equal(await page.getByTestId("toolkit-mcp-url").textContent(), url);
  assert.equal(await page.getByTestId("toolkit-stdio").textContent(), "executor mcp --toolkit support-tools");
  await page.getByRole("button", { name: "Copy URL" }).click();
  await page.getByRole("button", { name: "Copied" }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), url);
  await page.getByRole("heading", { name: "No connections added" }).waitFor();

  // Manage connections: search, add the fixture's connection and the built-in tools.
  await page.getByRole("button", { name: "Manage connections" }).click();
  const manage = page.getByRole("dialog", { name: "Manage connections" });
  await manage.getByTestId("grant-executor.coreTools.*").waitFor();
  await manage.getByLabel("Search connections").fill("fixture");
  await manage.getByTestId("grant-executor.coreTools.*").waitFor({ state: "detached" });
  await manage.getByRole("button", { name: "Add Fixture · main" }).click();
  await manage.getByRole("button", { name: "Remove Fixture · main" }).waitFor();
  await manage.getByLabel("Search connections").fill("");
  await manage.getByRole("button", { name: "Add Built-in tools" }).click();
  await manage.getByRole("button", { name: "Remove Built-in tools" }).waitFor();
  await page.screenshot({ path: path.join(SHOTS, "toolkit-connections.png") });
  const granted = (await c.ex.api("GET", `/api/toolkits/${made.id}/connections`)).body.connections.map((g) => g.pattern).sort();
  assert.deepEqual(granted, ["executor.coreTools.*", "fixture.org.main.*"]);
  // The built-in tools again: Remove deletes the pattern.
  await manage.getByRole("button", { name: "Remove Built-in tools" }).click();
  await manage.getByRole("button", { name: "Add Built-in tools" }).waitFor();
  await manage.getByRole("button", { name: "Done" }).click();
  await manage.waitFor({ state: "detached" });
  await page.getByTestId("toolkit-connections").getByText("Fixture · main").waitFor();

  // The tree lists what the toolkit exposes; pick a tool.
  const tree = page.getByTestId("toolkit-tool-tree");
  await tree.getByRole("treeitem", { name: "fixture.org.main.echo", exact: true }).click();
  await page.waitForURL(/tool=fixture\.org\.main\.echo/);
  await page.getByTestId("tool-detail").getByRole("heading", { name: "echo" }).waitFor();
  await page.getByTestId("toolkit-decision").getByText("Always run · default").waitFor();

  // Block from the tree's menu: a toolkit rule with the exact id, and the tool leaves the tree.
  await tree.getByRole("button", { name: "Policy for fixture.org.main.echo", exact: true }).click();
  await page.getByRole("menuitem", { name: "Block" }).click();
  await tree.getByRole("treeitem", { name: "fixture.org.main.echo", exact: true }).waitFor({ state: "detached" });
  let rules = (await c.ex.api("GET", `/api/toolkits/${made.id}/policies`)).body.policies;
  assert.deepEqual(rules.map((r) => [r.pattern, r.action]), [["fixture.org.main.echo", "block"]]);
  const exposed = (await c.ex.api("GET", `/api/toolkits/${made.id}/tools`)).body.tools;
  assert.ok(!exposed.some((t) => t.name === "echo"), JSON.stringify(exposed.map((t) => t.name)));
  // The global policies are untouched.
  assert.equal((await c.ex.api("GET", "/api/policies")).body.length, 0);

  // Require approval on a tool: its dot names the rule.
  await tree.getByRole("button", { name: "Policy for fixture.org.main.slow", exact: true }).click();
  await page.getByRole("menuitem", { name: "Require approval" }).click();
  await tree.getByRole("img", { name: "Require approval (rule fixture.org.main.slow)" }).waitFor();
  await page.getByRole("button", { name: "Copy URL" }).waitFor();
  await c.shot(page, "toolkits");

  // The rules list: newest on top; change an action, delete the block (the tool comes back).
  const rulesCard = page.getByRole("region", { name: "Rules" });
  await rulesCard.getByTestId("rule-fixture.org.main.slow").waitFor();
  const order = await rulesCard.locator("tbody tr code").allTextContents();
  assert.deepEqual(order, ["fixture.org.main.slow", "fixture.org.main.echo"]);
  await rulesCard.getByLabel("Action for fixture.org.main.slow").selectOption("approve");
  await tree.getByRole("img", { name: "Always run (rule fixture.org.main.slow)" }).waitFor();
  await rulesCard.getByRole("button", { name: "Delete rule fixture.org.main.echo" }).click();
  await tree.getByRole("treeitem", { name: "fixture.org.main.echo", exact: true }).waitFor();
  rules = (await c.ex.api("GET", `/api/toolkits/${made.id}/policies`)).body.policies;
  assert.deepEqual(rules.map((r) => [r.pattern, r.action]), [["fixture.org.main.slow", "approve"]]);

  // A pattern that matches no current connection is shown raw, and can be removed.
  const stale = await c.ex.api("POST", `/api/toolkits/${made.id}/connections`, { pattern: "gone.org.old.*" });
  assert.equal(stale.status, 200, JSON.stringify(stale.body));
  await page.reload();
  await page.getByRole("button", { name: "Manage connections" }).click();
  const stalePattern = manage.getByTestId("grant-gone.org.old.*");
  await stalePattern.getByText("Configured pattern").waitFor();
  await stalePattern.getByText("Matches no current connection.").waitFor();
  await stalePattern.getByRole("button", { name: "Remove gone.org.old.*" }).click();
  await stalePattern.waitFor({ state: "detached" });
  await manage.getByRole("button", { name: "Done" }).click();

  // Rename (name and slug): the page follows the new slug.
  await page.getByRole("button", { name: "Rename", exact: true }).click();
  const rename = page.getByRole("dialog");
  await rename.getByLabel("Name").fill("Support agent");
  await rename.getByLabel("Slug").fill("support");
  await rename.getByRole("button", { name: "Save" }).click();
  await page.waitForURL(/\/toolkits\/support$/);
  await page.getByRole("heading", { name: "Support agent", level: 1 }).waitFor();
  assert.equal(await page.getByTestId("toolkit-mcp-url").textContent(), `${c.origin}/mcp/toolkits/support`);

  // The list shows the tile with its count.
  await page.getByRole("link", { name: "← Toolkits" }).click();
  await page.waitForURL((u) => new URL(u).pathname === "/toolkits");
  const tile = page.getByRole("listitem").filter({ hasText: "Support agent" });
  await tile.getByText("1 connection").waitFor();
  await c.shot(page, "toolkits-list");
  await tile.getByRole("link", { name: "Support agent" }).click();
  await page.waitForURL(/\/toolkits\/support$/);

  // Delete, confirmed; the connection and the integration stay.
  await page.getByRole("button", { name: "Delete", exact: true }).click();
  const confirm = page.getByRole("dialog", { name: "Delete Support agent?" });
  assert.match(await confirm.textContent(), /connections and integrations are not deleted/);
  await confirm.getByRole("button", { name: "Delete toolkit" }).click();
  await page.waitForURL((u) => new URL(u).pathname === "/toolkits");
  await page.getByText("No toolkits yet").waitFor();
  assert.equal((await toolkits()).length, 0);
  assert.equal((await c.ex.api("GET", "/api/connections?integration=fixture")).body.length, 1);
  assert.equal((await c.ex.api("GET", "/api/integrations/fixture")).status, 200);
  assert.deepEqual(c.errors, []);
  await page.close();
});

test("an unknown toolkit slug says so", T, async () => {
  const page = await c.open("/toolkits/nope");
  await page.getByRole("heading", { name: "No such toolkit" }).waitFor();
  await page.close();
});
