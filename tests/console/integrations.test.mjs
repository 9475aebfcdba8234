// The integrations pages in headless Chromium against the real binary: the list (and its request
// budget), adding an MCP server, an OpenAPI spec and a GraphQL endpoint by hand, a connection
// with an API key (checked before saving), a policy set from the tool tree, and a Run.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { REPO, startConsole } from "./lib/browser.mjs";
import { serveGraphql, serveMcp, serveNotes, serveOAuthMcp, NOTES_KEY } from "./lib/fixtures.mjs";

const T = { timeout: 60_000 };
let c;
let mcp;
let notes;
let gql;
let oauth;

before(async () => {
  [mcp, notes, gql] = await Promise.all([serveMcp(), serveNotes(), serveGraphql()]);
  oauth = await serveOAuthMcp(mcp.url);
  c = await startConsole();
});
after(async () => {
  await c?.close();
  await Promise.all([oauth?.close(), mcp?.close(), notes?.close(), gql?.close()]);
});

test("the list: empty state, agent setup, at most 3 API requests", T, async () => {
  const page = await c.open("/");
  const requests = [];
  page.on("request", (r) => {
    if (new URL(r.url()).pathname.startsWith("/api/")) requests.push(r.url());
  });
  await page.reload();
  await page.getByRole("heading", { name: "Integrations" }).waitFor();
  await page.getByRole("heading", { name: "Connect an agent" }).waitFor();
  await page.waitForLoadState("networkidle");
  assert.ok(requests.length <= 3, `API requests on /: ${requests.join(", ")}`);
  const claude = await page.locator(".snippet pre").first().textContent();
  assert.match(claude, /claude mcp add --transport http executor http:\/\/127\.0\.0\.1:\d+\/mcp --header "Authorization: Bearer/);
  await page.getByLabel(/Browser approval/).check();
  assert.match(await page.locator(".snippet pre").first().textContent(), /\/mcp\?elicitation_mode=browser/);
  await c.shot(page, "integrations");
  await page.close();
});

test("MCP: add by URL with a live probe, connect, run a tool", T, async () => {
  const page = await c.open("/integrations/add/mcp");
  await page.getByLabel("Server URL").fill(mcp.url);
  const probe = page.getByTestId("mcp-probe");
  await probe.getByText("Reachable").waitFor();
  assert.match(await probe.textContent(), /Tools6/);
  await page.getByLabel("Slug").fill("fixture");
  await page.getByRole("button", { name: "Add integration" }).click();
  await page.waitForURL(/\/integrations\/fixture$/);

  await page.getByRole("button", { name: "Add connection" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByRole("button", { name: "Add connection" }).click();
  await dialog.waitFor({ state: "detached" });
  await page.getByTestId("connection-main").waitFor();

  await page.getByRole("tab", { name: /Tools/ }).click();
  await page.waitForURL(/tab=tools/);
  await page.getByRole("treeitem", { name: "echo", exact: true }).click();
  const detail = page.getByTestId("tool-detail");
  await detail.getByLabel(/message/i).fill("hi there");
  await detail.getByRole("button", { name: "Run", exact: true }).click();
  const result = detail.getByTestId("run-result");
  await result.waitFor();
  assert.match(await result.textContent(), /Success[\s\S]*echo:hi there/);
  await c.shot(page, "integration-tools");
  await page.emulateMedia({ colorScheme: "dark" });
  await c.shot(page, "integration-tools-dark");
  await page.close();
});

test("OpenAPI: preview, add, connect with a checked API key, set a policy from the tree", T, async () => {
  const page = await c.open("/integrations/add/openapi");
  await page.getByLabel("OpenAPI spec").fill(notes.specUrl);
  const preview = page.getByTestId("openapi-preview");
  await preview.getByText("Notes API").waitFor();
  assert.match(await preview.textContent(), /Operations3/);
  await page.getByLabel("Health check (optional)").selectOption("account.whoami");
  await c.shot(page, "add-openapi");
  await page.getByRole("button", { name: "Add integration" }).click();
  await page.waitForURL(/\/integrations\/notes_api$/);

  await page.getByRole("button", { name: "Add connection" }).click();
  const dialog = page.getByRole("dialog");
  const key = dialog.getByLabel("API key");
  assert.equal(await key.getAttribute("type"), "password");
  await key.fill("wrong");
  await dialog.getByRole("button", { name: "Check the key works" }).click();
  await dialog.getByText("The server rejected the credential.").waitFor();
  await key.fill(NOTES_KEY);
  await dialog.getByRole("button", { name: "Check the key works" }).click();
  await dialog.getByText("The key works.").waitFor();
  await c.shot(page, "connection-modal");
  await dialog.getByRole("button", { name: "Add connection" }).click();
  await dialog.waitFor({ state: "detached" });
  await page.getByTestId("connection-main").waitFor();
  const conns = await c.ex.api("GET", "/api/connections?integration=notes_api");
  assert.equal(conns.body.length, 1);

  await page.getByRole("tab", { name: /Tools/ }).click();
  await page.getByRole("button", { name: "Policy for notes.createNote" }).click();
  await page.getByRole("menuitem", { name: "Block" }).click();
  await page.getByRole("img", { name: /Block \(rule notes_api\.\*\.\*\.notes\.createNote\)/ }).waitFor();
  const policies = await c.ex.api("GET", "/api/policies");
  assert.ok(
    policies.body.some((p) => p.pattern === "notes_api.*.*.notes.createNote" && p.action === "block"),
    JSON.stringify(policies.body),
  );
  // Clear removes the exact rule again.
  await page.getByRole("button", { name: "Policy for notes.createNote" }).click();
  await page.getByRole("menuitem", { name: "Clear rule" }).click();
  await page.getByRole("img", { name: "Always run (default)" }).first().waitFor();
  assert.equal((await c.ex.api("GET", "/api/policies")).body.filter((p) => p.pattern.startsWith("notes_api.")).length, 0);

  await page.getByRole("button", { name: "Refresh", exact: true }).click();
  await page.getByText(/Spec re-read: 3 tools/).waitFor();
  await page.close();
});

test("MCP stdio: command, arguments and env names; the env value is asked per connection", T, async () => {
  const page = await c.open("/integrations/add/mcp");
  await page.getByRole("button", { name: "Local command (stdio)" }).click();
  await page.getByLabel("Command").fill(process.execPath);
  await page.getByLabel("Arguments").fill(`"${path.join(REPO, "tests", "e2e", "lib", "stdio-server.mjs")}"`);
  await page.getByLabel("Environment variable names").fill("STDIO_SECRET");
  await page.getByLabel("Slug").fill("local_stdio");
  await page.getByLabel("Name", { exact: true }).fill("Local stdio");
  await page.getByRole("button", { name: "Add integration" }).click();
  await page.waitForURL(/\/integrations\/local_stdio$/);
  await page.getByRole("button", { name: "Add connection" }).click();
  const dialog = page.getByRole("dialog");
  await dialog.getByLabel("STDIO_SECRET").fill("s3cret");
  await dialog.getByRole("button", { name: "Add connection" }).click();
  await dialog.waitFor({ state: "detached" });
  await page.getByRole("tab", { name: /Tools/ }).click();
  await page.getByRole("treeitem", { name: "env", exact: true }).click();
  const detail = page.getByTestId("tool-detail");
  await detail.getByLabel(/name/i).first().fill("STDIO_SECRET");
  await detail.getByRole("button", { name: "Run", exact: true }).click();
  await detail.getByTestId("run-result").waitFor();
  assert.match(await detail.getByTestId("run-result").textContent(), /s3cret/);

  await page.getByRole("tab", { name: /Connections/ }).click();
  await page.getByRole("button", { name: "Actions for main" }).click();
  await page.getByRole("menuitem", { name: "Remove" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Remove connection" }).click();
  await page.getByText("No connections yet.", { exact: false }).waitFor();
  assert.equal((await c.ex.api("GET", "/api/connections?integration=local_stdio")).body.length, 0);
  await page.close();
});

test("MCP OAuth: detected by the probe, connected through the popup with dynamic registration", T, async () => {
  const page = await c.open("/integrations/add/mcp");
  await page.getByLabel("Server URL").fill(oauth.url);
  await page.getByTestId("mcp-probe").getByText("Needs OAuth sign-in").waitFor();
  assert.ok(await page.getByLabel(/OAuth \(sign in/).isChecked());
  await page.getByLabel("Slug").fill("secured");
  await page.getByLabel("Name", { exact: true }).fill("Secured MCP");
  await page.getByRole("button", { name: "Add integration" }).click();
  await page.waitForURL(/\/integrations\/secured$/);
  await page.getByRole("button", { name: "Add connection" }).click();
  const dialog = page.getByRole("dialog");
  const popup = page.waitForEvent("popup");
  await dialog.getByRole("button", { name: "Connect with OAuth" }).click();
  await (await popup).waitForLoadState();
  await dialog.waitFor({ state: "detached", timeout: 20_000 });
  await page.getByTestId("connection-main").waitFor();
  assert.equal(oauth.state.registered, 1);
  assert.equal(oauth.state.tokens, 1);
  await page.getByRole("tab", { name: /Tools/ }).click();
  await page.getByRole("treeitem", { name: "echo", exact: true }).waitFor();
  await page.close();
});

test("GraphQL: add an endpoint with a header credential", T, async () => {
  const page = await c.open("/integrations/add/graphql");
  await page.getByLabel("Endpoint").fill(gql.url);
  await page.getByLabel("API key in a header").check();
  await page.getByLabel("Slug").fill("library");
  await page.getByRole("button", { name: "Add integration" }).click();
  await page.waitForURL(/\/integrations\/library$/);
  const got = await c.ex.api("GET", "/api/integrations/library");
  assert.equal(got.body.kind, "graphql");
  assert.equal(got.body.authMethods[0].kind, "apikey");

  // Edit the name, then delete with a confirmation.
  await page.getByRole("button", { name: "Edit", exact: true }).click();
  await page.getByRole("dialog").getByLabel("Name").fill("The library");
  await page.getByRole("dialog").getByRole("button", { name: "Save" }).click();
  await page.getByRole("heading", { name: "The library" }).waitFor();
  await page.getByRole("button", { name: "Delete", exact: true }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Delete integration" }).click();
  await page.waitForURL((u) => new URL(u).pathname === "/");
  assert.equal((await c.ex.api("GET", "/api/integrations/library")).status, 404);
  await page.close();
});

test("the list shows counts, then a bad URL error sits beside its field", T, async () => {
  const page = await c.open("/");
  await page.getByRole("link", { name: "Notes API" }).waitFor();
  await page.getByRole("link", { name: "Local stdio" }).waitFor();
  await page.getByLabel("Filter integrations").fill("fixt");
  assert.equal(await page.locator(".int-table tbody tr").count(), 1);
  await page.getByLabel("Filter integrations").fill("");
  await c.shot(page, "integrations-list");
  await page.emulateMedia({ colorScheme: "dark" });
  await c.shot(page, "integrations-list-dark");
  await page.emulateMedia({ colorScheme: "light" });
  await page.goto(page.url().replace(/\/$/, "") + "/integrations/add/mcp");
  await page.getByLabel("Server URL").fill("http://127.0.0.1:1/mcp");
  await page.locator("#mcp-endpoint-error").waitFor({ timeout: 20_000 });
  await page.close();
  assert.deepEqual(c.errors, []);
});
