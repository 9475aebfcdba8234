// Console tests for the policies, approvals, executions, playground and settings pages, in
// headless Chromium against the real binary (see lib/browser.mjs for the env switches:
// EXECUTOR_BIN, CONSOLE_VITE=1 to serve the pages from `vite dev`).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startConsole } from "./lib/browser.mjs";
import { serveMcpServer } from "../e2e/lib/fixture.mjs";
import { addMcpIntegration } from "../e2e/lib/executor.mjs";

let c;
before(async () => {
  c = await startConsole();
});
after(async () => {
  await c?.close();
});

const TOOL = "executor.coreTools.integrations.list";
const CODE = `console.log("asking"); const r = await tools.executor.coreTools.integrations.list({ limit: 3 }); return "done";`;

test("token bootstrap: no token shows the gate; ?_token= signs in and leaves the address bar", async () => {
  const fresh = await c.browser.newContext();
  const page = await fresh.newPage();
  await page.goto(`${c.origin}/policies`);
  await page.getByRole("heading", { name: "Authentication required" }).waitFor();
  await page.goto(`${c.origin}/policies?_token=${encodeURIComponent(c.ex.token)}`);
  await page.getByRole("heading", { name: "Active policies" }).waitFor();
  assert.ok(!page.url().includes("_token"), `token left in the URL: ${page.url()}`);
  await fresh.close();
});

test("policies: a pattern is checked as typed, added, and counts its matches", async () => {
  const page = await c.open("/policies");
  const pattern = page.getByLabel("Pattern");
  await pattern.fill("*github");
  await page.getByText("mixes letters with '*'").waitFor();
  await pattern.fill("executor.*");
  await page.getByText(/Matches \d+ of \d+ current tools/).waitFor();
  await pattern.fill(TOOL);
  await page.getByLabel("Action", { exact: true }).selectOption("require_approval");
  await page.getByRole("button", { name: "Add policy" }).click();
  const row = page.getByRole("row").filter({ hasText: TOOL });
  await row.waitFor();
  await row.getByText("1 tool").waitFor();
  // A wildcard goes below the exact rule; Move up / Move down reorder; the inline action changes.
  await pattern.fill("executor.*");
  await page.getByRole("button", { name: "Add policy" }).click();
  const order = () => page.locator(".policies-list tbody tr code.policy-pattern").allTextContents();
  await page.getByRole("button", { name: "Move up executor.*" }).waitFor();
  assert.deepEqual(await order(), [TOOL, "executor.*"]);
  await page.getByRole("button", { name: "Move up executor.*" }).click();
  await page.waitForFunction(() => document.querySelector(".policies-list tbody tr code")?.textContent === "executor.*");
  await page.getByLabel("Action for executor.*").selectOption("approve");
  await page.getByRole("button", { name: "Move down executor.*" }).click();
  await page.waitForFunction((t) => document.querySelector(".policies-list tbody tr code")?.textContent === t, TOOL);
  const rules = (await c.ex.api("GET", "/api/policies")).body;
  assert.equal(rules.find((p) => p.pattern === "executor.*").action, "approve");
  await page.getByRole("button", { name: "Remove executor.*" }).click();
  await page.getByRole("button", { name: "Remove executor.*" }).waitFor({ state: "detached" });
  await c.shot(page, "policies");
  await page.close();
});

test("a paused call shows live on /executions and is approved on /resume/<id>", async () => {
  const rules = (await c.ex.api("GET", "/api/policies")).body;
  if (!rules.some((p) => p.pattern === TOOL && p.action === "require_approval")) {
    await c.ex.api("POST", "/api/policies", { owner: "org", pattern: TOOL, action: "require_approval" });
  }
  const list = await c.open("/executions");
  await list.getByRole("heading", { name: "Executions" }).waitFor();
  // The run starts once the page follows the event stream: it must appear without a reload.
  await list.getByRole("status").filter({ hasText: "Live" }).waitFor({ timeout: 10_000 });
  const r = await c.ex.api("POST", "/api/executions", { code: CODE });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.status, "paused", r.text);
  const id = r.body.structured.executionId;
  const row = list.locator(`tr[data-execution-id="${id}"]`);
  await row.getByText("waiting for approval").waitFor({ timeout: 10_000 });
  await c.shot(list, "executions");

  const page = await c.open(`/resume/${id}`);
  await page.getByRole("heading", { name: "User approval required" }).waitFor();
  await page.getByText(TOOL).first().waitFor();
  await c.shot(page, "resume");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByText("Approval sent").waitFor();
  await page.getByTestId("exec-result-body").getByText('"done"').waitFor({ timeout: 10_000 }).catch(async () => {
    // a string result is shown as itself
    await page.getByTestId("exec-result-body").getByText("done").waitFor();
  });
  // Live again: the list moves the run on from "waiting".
  await row.getByText("completed").waitFor({ timeout: 10_000 });

  // The run's record: code, result, logs and the journal with the person's approval.
  const record = await c.open(`/executions/${id}`);
  if ((await c.ex.api("GET", `/api/executions/${id}/journal`)).status === 200) {
    await record.getByRole("heading", { name: "Tool calls" }).waitFor();
    await record.getByText("approved by a person").waitFor();
    await record.getByText("[log] asking").waitFor();
    await c.shot(record, "execution");
  } else {
    // an older binary: one sentence, not a crash
    await record.getByText("This server does not record execution journals").waitFor();
  }
  await record.close();

  // Answering twice: one sentence, no raw error.
  const again = await c.open(`/resume/${id}`);
  await again.getByText("This approval is no longer waiting").waitFor();
  await Promise.all([list.close(), page.close(), again.close()]);
});

test("a downstream server's form: required fields gate Approve, and the answer reaches the server", async () => {
  const fixture = await serveMcpServer({ elicitation: true });
  try {
    const { slug } = await addMcpIntegration(c.ex, fixture.url);
    const r = await c.ex.api("POST", "/api/executions", {
      code: `return await tools.${slug}.org.main.confirm_delete({ item: "report.pdf" });`,
    });
    assert.equal(r.body.status, "paused", r.text);
    const id = r.body.structured.executionId;
    const page = await c.open(`/resume/${id}`);
    await page.getByText("Delete report.pdf?").waitFor();
    await page.getByRole("button", { name: "Approve" }).click();
    await page.getByText("reason is required.").waitFor();
    await page.getByLabel("confirm").check();
    await page.getByLabel("reason").fill("obsolete");
    await page.getByText("reason is required.").waitFor({ state: "detached" });
    await c.shot(page, "resume-form");
    await page.getByRole("button", { name: "Approve" }).click();
    await page.getByText("Approval sent").waitFor();
    await page.getByTestId("exec-result-body").getByText("obsolete").waitFor({ timeout: 10_000 });
    await page.close();
  } finally {
    await fixture.close?.();
  }
});

test("playground runs code and shows the result and logs", async () => {
  const page = await c.open("/playground");
  await page.getByText(/\d+ tools available/).waitFor();
  const editor = page.locator(".cm-content");
  // Hovering a tool call shows its declaration.
  await page.getByText("tools.executor.coreTools.integrations.list").first().hover();
  await page.locator(".code-hover").getByText("Promise<").waitFor({ timeout: 10_000 });
  // Completion offers the next path segment.
  await editor.click();
  await page.keyboard.press("Control+End");
  await page.keyboard.type("\ntools.exe");
  await page.locator(".cm-tooltip-autocomplete").getByText("executor").waitFor();
  await c.shot(page, "playground-completion");
  await editor.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  await page.keyboard.type('console.log("hello from the playground");\nreturn 6 * 7;');
  await page.keyboard.press("Escape");
  await page.keyboard.press("Control+Enter");
  await page.getByTestId("exec-result-body").getByText("42").waitFor({ timeout: 10_000 });
  await page.getByText("[log] hello from the playground").waitFor();
  await c.shot(page, "playground");
  await page.close();
});

test("settings masks the token and reveals it on request", async () => {
  const page = await c.open("/settings");
  const input = page.getByLabel("Token", { exact: true });
  assert.equal(await input.getAttribute("type"), "password");
  await page.getByRole("button", { name: "Reveal" }).click();
  assert.equal(await input.inputValue(), c.ex.token);
  assert.equal(await input.getAttribute("type"), "text");
  await page.getByRole("button", { name: "Hide" }).click();
  await c.shot(page, "settings");
  await page.close();
});

test("no page threw", () => {
  assert.deepEqual(c.errors, []);
});
