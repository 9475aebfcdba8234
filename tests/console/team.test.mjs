// The team server's console (`executor serve`) in headless Chromium: the first run sets up the
// owner, the owner invites a member who joins through the share link in a second browser, the
// member sees no admin pages and cannot choose Workspace, the owner makes an API key (shown once,
// then usable and deletable), changes the member's role, reads the activity (filters, paging,
// a row opened), signs out and meets a wrong password and a return to where they were. Then an
// MCP client's OAuth consent (PKCE, approved signed in; denied after a sign-in it was sent to),
// and the CLI's device login. axe-core checks every new page; screenshots go to docs/console/.
//
// The binary is EXECUTOR_BIN (as for the other console tests); the console it serves is the one it
// embeds, or the built `web/dist` when EXECUTOR_CONSOLE_DIR points there (passed through).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import fsp from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { createRequire } from "node:module";
import { setTimeout as sleep } from "node:timers/promises";
import { SHOTS } from "./lib/browser.mjs";
import { serveMcp } from "./lib/fixtures.mjs";
import { freePort, makeDataDir, rawRequest, spawnBinary } from "../e2e/lib/executor.mjs";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const axeSource = fs.readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

const T = { timeout: 180_000 };
const OWNER = { name: "Olive Owner", email: "owner@example.com", password: "correct horse battery" };
const MEMBER = { name: "Mia Member", email: "mia@example.com", password: "member password 1" };

let server;
let mcp;
let browser;
let owner; // the owner's browser context
let member; // the member's
const errors = [];
const found = []; // accessibility violations, all pages

async function startTeamServer() {
  const dataDir = await makeDataDir("executor-console-team-");
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const proc = spawnBinary(["serve", "--port", String(port), "--hostname", "127.0.0.1"], {
      // Its upstream fixtures listen on loopback, which the team server refuses by default.
      env: { EXECUTOR_DATA_DIR: dataDir, EXECUTOR_SCOPE_DIR: dataDir, EXECUTOR_WEB_BASE_URL: base, EXECUTOR_ALLOW_PRIVATE_NETWORK: "1" },
      cwd: dataDir,
    });
    let exit = null;
    proc.exited.then((x) => (exit = x));
    const logs = () => `--- stdout:\n${proc.out().slice(-3000)}\n--- stderr:\n${proc.err().slice(-3000)}`;
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !exit) {
      const r = await rawRequest(port, "GET", "/api/health", { timeoutMs: 2000 }).catch(() => null);
      if (r?.status === 200) {
        return {
          base,
          port,
          dataDir,
          logs,
          kill: async () => {
            if (!exit) proc.child.kill("SIGKILL");
            await proc.exited;
            await fsp.rm(dataDir, { recursive: true, force: true }).catch(() => {});
          },
        };
      }
      await sleep(100);
    }
    if (!exit) proc.child.kill("SIGKILL");
    await proc.exited;
    lastError = new Error(`executor serve did not answer /api/health (exit ${JSON.stringify(exit)})\n${logs()}`);
    if (!/address already in use|AddrInUse/i.test(logs())) break;
  }
  throw lastError;
}

/** A JSON request to the server from Node (a bearer, never the browser's cookie). */
async function call(method, urlPath, body, { bearer, form } = {}) {
  const headers = {};
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  let payload;
  if (form) {
    payload = new URLSearchParams(form).toString();
    headers["content-type"] = "application/x-www-form-urlencoded";
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers["content-type"] = "application/json";
  }
  if (payload !== undefined) headers["content-length"] = Buffer.byteLength(payload);
  return rawRequest(server.port, method, urlPath, { body: payload, headers });
}

const show = (r) => `${r.status} ${typeof r.body === "string" ? r.body.slice(0, 500) : JSON.stringify(r.body)}`;

async function newPage(context) {
  const page = await context.newPage();
  page.on("pageerror", (e) => errors.push(e.message));
  return page;
}

async function shot(page, name, { fullPage = true } = {}) {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `team-${name}.png`), fullPage });
}

async function axe(page, label) {
  // Through the debugger, which the console's script-src policy does not govern.
  await page.waitForTimeout(300);
  await page.evaluate(axeSource);
  const v = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const result = await axe.run(document, { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } });
    return result.violations
      .filter((x) => x.impact === "serious" || x.impact === "critical")
      .map((x) => `${x.id} (${x.impact}): ${x.help} — ${x.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(" | ")}`);
  });
  for (const x of v) found.push(`${label}: ${x}`);
}

const nav = (page) => page.getByRole("navigation", { name: "Main" });

async function signIn(page, who) {
  await page.getByLabel("Email").fill(who.email);
  await page.getByLabel("Password").fill(who.password);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

before(async () => {
  mcp = await serveMcp();
  server = await startTeamServer();
  browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium" });
  owner = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  member = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await owner.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.base });
});

after(async () => {
  await browser?.close().catch(() => {});
  await server?.kill();
  await mcp?.close();
});

test("team: setup, invite, join, roles, API keys, activity, sign out and in", T, async () => {
  const { base } = server;
  assert.deepEqual((await call("GET", "/api/setup-status")).body, { needsSetup: true });

  // First run: any page leads to setup.
  const page = await newPage(owner);
  await page.goto(`${base}/policies`);
  await page.waitForURL(`${base}/setup`);
  await page.getByRole("heading", { name: "Set up Executor", level: 1 }).waitFor();
  assert.equal(await page.getByRole("navigation", { name: "Main" }).count(), 0, "setup stands outside the shell");
  await page.getByRole("button", { name: "Create owner account" }).click();
  await page.getByText("Enter your name.").waitFor();
  await page.getByText("Enter your email.").waitFor();
  assert.equal(await page.evaluate(() => document.activeElement?.id), "signup-name", "the first wrong field takes the focus");
  await page.getByLabel("Name").fill(OWNER.name);
  await page.getByLabel("Email").fill(OWNER.email);
  await page.getByLabel("Password").fill("short");
  await page.getByRole("button", { name: "Create owner account" }).click();
  await page.getByText("Use at least 8 characters.").waitFor();
  await page.getByLabel("Password").fill(OWNER.password);
  await shot(page, "setup");
  await axe(page, "/setup");
  await page.getByRole("button", { name: "Create owner account" }).click();
  await page.waitForURL(`${base}/`);
  const signedIn = page.getByTestId("signed-in-as");
  await signedIn.getByText(OWNER.email).waitFor();
  await signedIn.getByText("Owner", { exact: true }).waitFor();
  assert.deepEqual((await call("GET", "/api/setup-status")).body, { needsSetup: false });
  assert.equal(await page.evaluate(() => localStorage.getItem("executor.authToken")), null, "no token in storage");
  for (const label of ["Account", "Admin", "Activity"]) await nav(page).getByRole("link", { name: label }).waitFor();

  // Admin: the owner is "you"; an invite for a member, with its share link.
  await nav(page).getByRole("link", { name: "Admin" }).click();
  await page.getByRole("heading", { name: "Admin", level: 1 }).waitFor();
  const members = page.getByRole("table", { name: "Members" });
  await members.getByText(OWNER.email, { exact: true }).waitFor();
  await members.getByTestId("you-badge").waitFor();
  await page.getByLabel("Role", { exact: true }).selectOption("member");
  await page.getByLabel("Label (optional)").fill("For Mia");
  await page.getByLabel("Expires in (days)").fill("0");
  await page.getByRole("button", { name: "Create invite" }).click();
  await page.getByText("Between 1 and 90 days.").waitFor();
  await page.getByLabel("Expires in (days)").fill("3");
  await page.getByRole("button", { name: "Create invite" }).click();
  const link = await page.getByTestId("invite-link").inputValue();
  assert.match(link, new RegExp(`^${base.replace(/[.]/g, "\\.")}/join/[A-Z0-9]{4}-[A-Z0-9]{4}-[A-Z0-9]{4}$`), link);
  const code = link.split("/").pop();
  await page.getByRole("button", { name: "Copy link" }).click();
  await page.getByRole("button", { name: "Copied" }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), link);
  const invites = page.getByRole("table", { name: "Invites" });
  await invites.getByText(code).waitFor();
  await invites.getByText("open", { exact: true }).waitFor();
  await shot(page, "admin");
  await axe(page, "/admin");

  // A second browser joins with the link; a bad code says so first.
  const bad = await newPage(member);
  await bad.goto(`${base}/join/AAAA-BBBB-CCCC`);
  await bad.getByRole("heading", { name: "Invite not valid" }).waitFor();
  await axe(bad, "/join (invalid)");
  await bad.close();
  const join = await newPage(member);
  await join.goto(link);
  await join.getByRole("heading", { name: "Join Executor", level: 1 }).waitFor();
  assert.equal(await join.getByTestId("invite-code").textContent(), code);
  await join.getByLabel("Name").fill(MEMBER.name);
  await join.getByLabel("Email").fill(OWNER.email.toUpperCase());
  await join.getByLabel("Password").fill(MEMBER.password);
  await join.getByRole("button", { name: "Create account and join" }).click();
  // a taken email (compared without case) is an error beside the email field
  await join.locator("#signup-email-error").waitFor();
  assert.equal(await join.getByLabel("Email").getAttribute("aria-invalid"), "true");
  await join.getByLabel("Email").fill(MEMBER.email);
  await shot(join, "join");
  await axe(join, "/join");
  await join.getByRole("button", { name: "Create account and join" }).click();
  await join.waitForURL(`${base}/`);
  await join.getByTestId("signed-in-as").getByText(MEMBER.email).waitFor();
  await join.getByTestId("signed-in-as").getByText("Member", { exact: true }).waitFor();
  await nav(join).getByRole("link", { name: "Account" }).waitFor();
  assert.equal(await nav(join).getByRole("link", { name: "Admin" }).count(), 0, "a member has no Admin link");
  assert.equal(await nav(join).getByRole("link", { name: "Activity" }).count(), 0, "a member has no Activity link");
  const used = await newPage(member);
  await used.goto(link);
  await used.getByRole("heading", { name: "Invite not valid" }).waitFor();
  await used.close();

  // The member: admin pages say who may see them; Workspace cannot be chosen.
  await join.goto(`${base}/admin`);
  await join.getByText("Only workspace owners and admins can see this page.").waitFor();
  await shot(join, "admin-member");
  await axe(join, "/admin (member)");
  await join.goto(`${base}/activity`);
  await join.getByText("Only workspace owners and admins can see this page.").waitFor();
  await join.goto(`${base}/toolkits`);
  await join.getByRole("heading", { name: /^Toolkits/ }).waitFor();
  await join.getByRole("button", { name: "New toolkit" }).first().click();
  const dialog = join.getByRole("dialog", { name: "New toolkit" });
  assert.equal(await dialog.getByRole("radio", { name: /Personal/ }).isChecked(), true, "Personal is the default");
  assert.equal(await dialog.getByRole("radio", { name: /Workspace/ }).isDisabled(), true, "a member cannot pick Workspace");
  await dialog.getByText("Only workspace admins can add workspace toolkits.").waitFor();
  await dialog.getByLabel("Name").fill("Mia's tools");
  await dialog.getByRole("button", { name: "Create toolkit" }).click();
  await join.waitForURL(/\/toolkits\/[a-z0-9-]+$/);
  await join.getByText("Personal", { exact: true }).first().waitFor();
  await join.goto(`${base}/policies`);
  await join.getByRole("heading", { name: "Policies", level: 1 }).waitFor();
  assert.equal(await join.getByRole("radio", { name: /Workspace/ }).isDisabled(), true);
  assert.equal(await join.getByRole("radio", { name: /Personal/ }).isChecked(), true);

  // The owner sees the invite used, and makes the member an admin (then a member again).
  await page.reload();
  await invites.getByText(`used by ${MEMBER.email}`).waitFor();
  const roleOfMia = page.getByLabel(`Role of ${MEMBER.email}`);
  await roleOfMia.selectOption("admin");
  const ownerToken = (await call("POST", "/api/auth/sign-in/email", { email: OWNER.email, password: OWNER.password })).body.token;
  assert.ok(ownerToken, "sign-in answers a token");
  const roleIs = async (role) => {
    for (let i = 0; i < 50; i++) {
      const list = (await call("GET", "/api/account/members", undefined, { bearer: ownerToken })).body.members ?? [];
      if (list.find((m) => m.email === MEMBER.email)?.role === role) return true;
      await sleep(100);
    }
    return false;
  };
  assert.ok(await roleIs("admin"), "the role select changed the role");
  await join.reload();
  await nav(join).getByRole("link", { name: "Admin" }).waitFor();
  await roleOfMia.selectOption("member");
  assert.ok(await roleIs("member"));
  // The last owner cannot be made anything else: the refusal stands beside the select.
  await page.getByLabel(`Role of ${OWNER.email}`).selectOption("admin");
  await page.locator("td .field-error").first().waitFor();

  // An open invite revoked; a third person (joined through the API) removed after a confirmation.
  await page.getByLabel("Label (optional)").fill("Not needed");
  await page.getByRole("button", { name: "Create invite" }).click();
  const spare = await page.getByTestId("invite-code").inputValue();
  await page.getByRole("button", { name: "Done" }).click();
  await invites.getByText(spare).waitFor();
  await page.getByRole("button", { name: `Revoke ${spare}` }).click();
  await invites.getByText(spare).waitFor({ state: "detached" });
  const third = await call("POST", "/api/admin/invites", {}, { bearer: ownerToken });
  const joined = await call("POST", "/api/auth/sign-up/email", { name: "Theo", email: "theo@example.com", password: "theo walks the amber canal", inviteCode: third.body.code });
  assert.equal(joined.status, 200, show(joined));
  await page.reload();
  await page.getByRole("button", { name: "Remove theo@example.com" }).click();
  const removeDialog = page.getByRole("dialog", { name: "Remove theo@example.com?" });
  await removeDialog.getByText(/signed out everywhere at once/).waitFor();
  await axe(page, "/admin (remove dialog)");
  await removeDialog.getByRole("button", { name: "Remove member" }).click();
  await removeDialog.waitFor({ state: "detached" });
  await members.getByText("theo@example.com", { exact: true }).waitFor({ state: "detached" });
  assert.equal((await call("GET", "/api/account/me", undefined, { bearer: joined.body.token })).status, 401, "a removed member's session ends");

  // A workspace integration: the member's connection to it is a personal one.
  const add = await call("POST", "/api/mcp/servers", { transport: "remote", name: "Fixture", endpoint: mcp.url, slug: "fixture" }, { bearer: ownerToken });
  assert.equal(add.status, 200, show(add));
  await join.goto(`${base}/integrations/fixture`);
  await join.getByRole("button", { name: "Add connection" }).click();
  const connect = join.getByRole("dialog");
  assert.equal(await connect.getByRole("radio", { name: /Personal/ }).isChecked(), true);
  assert.equal(await connect.getByRole("radio", { name: /Workspace/ }).isDisabled(), true);
  await connect.getByText("Only workspace admins can add workspace connections.").waitFor();
  await axe(join, "/integrations/fixture (member's connection dialog)");
  await connect.getByRole("button", { name: "Add connection" }).click();
  await connect.waitFor({ state: "detached" });
  await join.getByText("Personal", { exact: true }).first().waitFor();
  const memberToken = (await call("POST", "/api/auth/sign-in/email", { email: MEMBER.email, password: MEMBER.password })).body.token;
  const conns = await call("GET", "/api/connections", undefined, { bearer: memberToken });
  assert.deepEqual(
    conns.body.filter((c) => c.integration === "fixture").map((c) => c.owner),
    ["user"],
    show(conns),
  );

  // The member's OAuth app form offers Personal only as well.
  await join.goto(`${base}/oauth-apps`);
  await join.getByRole("heading", { name: "Register an app" }).waitFor();
  assert.equal(await join.getByRole("radio", { name: /Workspace/ }).isDisabled(), true);

  // API keys: the value once, usable as a bearer; deleted after a confirmation, then refused.
  await nav(page).getByRole("link", { name: "Account" }).click();
  await page.getByRole("heading", { name: "Account", level: 1 }).waitFor();
  assert.equal(await page.getByTestId("account-email").textContent(), OWNER.email);
  await page.getByLabel("Name").fill("CI agent");
  await page.getByRole("button", { name: "Create key" }).click();
  const value = await page.locator("#new-key-value").inputValue();
  assert.match(value, /^exk_/);
  await page.getByText("Copy it now: it won't be shown again.").waitFor();
  await page.getByRole("button", { name: "Copy key" }).click();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), value);
  const keys = page.getByRole("table", { name: "API keys" });
  await keys.getByText("CI agent").waitFor();
  await shot(page, "account");
  await axe(page, "/account (new key)");
  const me = await call("GET", "/api/account/me", undefined, { bearer: value });
  assert.equal(me.status, 200, show(me));
  assert.equal(me.body.user.email, OWNER.email);
  await page.getByRole("button", { name: "Done" }).click();
  await page.reload();
  await keys.getByText("CI agent").waitFor();
  assert.ok(!(await page.content()).includes(value), "the value is not shown again");
  await keys.getByRole("row", { name: /CI agent/ }).getByText(/never|\d/).first().waitFor();
  await page.getByRole("button", { name: "Delete CI agent" }).click();
  const confirm = page.getByRole("dialog");
  await confirm.getByText(/refused from now on/).waitFor();
  await axe(page, "/account (delete dialog)");
  await confirm.getByRole("button", { name: "Delete key" }).click();
  await confirm.waitFor({ state: "detached" });
  await page.getByText("You have no API keys.").waitFor();
  assert.equal((await call("GET", "/api/account/me", undefined, { bearer: value })).status, 401, "a deleted key is refused");

  // Activity: enough events for a second page, a row opened, the filters.
  for (let i = 0; i < 26; i++) {
    const made = await call("POST", "/api/account/api-keys", { name: `bulk ${i}` }, { bearer: ownerToken });
    assert.equal(made.status, 200, show(made));
    assert.equal((await call("DELETE", `/api/account/api-keys/${made.body.id}`, undefined, { bearer: ownerToken })).status, 200);
  }
  await nav(page).getByRole("link", { name: "Activity" }).click();
  await page.getByRole("heading", { name: "Activity", level: 1 }).waitFor();
  const log = page.getByRole("table", { name: "Activity" });
  await log.getByText("apiKey.create").first().waitFor();
  const rows = () => log.locator("tbody > tr");
  assert.equal(await rows().count(), 50, "the first page holds 50 events");
  // the newest event, opened: what it replaced and what it wrote
  await rows().first().getByRole("button", { name: /Details of/ }).click();
  await log.getByRole("heading", { name: "Before" }).waitFor();
  await shot(page, "activity", { fullPage: false });
  await rows().first().getByRole("button", { name: /Details of/ }).click();
  await log.getByRole("heading", { name: "Before" }).waitFor({ state: "detached" });
  await page.getByRole("button", { name: "Load more" }).click();
  for (let i = 0; i < 50 && (await rows().count()) <= 50; i++) await sleep(100);
  assert.ok((await rows().count()) > 50, "Load more appends older events");
  await log.getByText("member.role").first().waitFor();
  await log.getByText(OWNER.email).first().waitFor();
  const roleRow = log.locator("tbody > tr", { hasText: "member.role" }).first();
  await roleRow.getByRole("button", { name: /Details of/ }).click();
  await log.getByRole("heading", { name: "Before" }).waitFor();
  await log.getByRole("heading", { name: "After" }).waitFor();
  await axe(page, "/activity");
  await page.getByLabel("Kind").selectOption("tool_call");
  // no code ran in this test, so there is no tool call
  await page.getByText("Nothing recorded that matches these filters.").waitFor();
  await page.getByLabel("Kind").selectOption("");
  await page.getByLabel("Person").selectOption({ label: MEMBER.email });
  await log.getByText(MEMBER.email).first().waitFor();
  assert.equal(await log.getByText(OWNER.email).count(), 0, "filtered to one person");

  // Sign out; a wrong password says so; signing in again returns where the browser was going.
  await nav(page).getByRole("link", { name: "Account" }).click();
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.waitForURL(`${base}/login`);
  await page.goto(`${base}/activity`);
  await page.waitForURL(`${base}/login?returnTo=%2Factivity`);
  await signIn(page, { email: OWNER.email, password: "not the password" });
  await page.getByText("Wrong email or password.").waitFor();
  assert.equal(await page.getByLabel("Password").getAttribute("aria-invalid"), "true");
  await shot(page, "login");
  await axe(page, "/login (wrong password)");
  await signIn(page, OWNER);
  await page.waitForURL(`${base}/activity`);
  await page.getByRole("heading", { name: "Activity", level: 1 }).waitFor();

  // returnTo never leaves the origin.
  const fresh = await browser.newContext();
  try {
    const away = await newPage(fresh);
    await away.goto(`${base}/login?returnTo=${encodeURIComponent("//evil.example/")}`);
    await away.getByRole("heading", { name: "Sign in to Executor" }).waitFor();
    await signIn(away, MEMBER);
    await away.waitForURL(`${base}/`);
    await away.getByTestId("signed-in-as").getByText(MEMBER.email).waitFor();

    // Too many failures: the wait is said, and the button waits too.
    const locked = await newPage(await browser.newContext());
    await locked.goto(`${base}/login`);
    for (let i = 0; i < 5; i++) {
      const r = await call("POST", "/api/auth/sign-in/email", { email: MEMBER.email, password: `wrong ${i}` });
      assert.ok([401, 429].includes(r.status), show(r));
    }
    await signIn(locked, { email: MEMBER.email, password: MEMBER.password });
    await locked.getByText(/^Too many attempts\. Try again in \d+ (second|minute)s?\.$/).waitFor();
    assert.equal(await locked.getByRole("button", { name: "Sign in", exact: true }).isDisabled(), true);
    await locked.context().close();
  } finally {
    await fresh.close();
  }
  assert.deepEqual(errors, []);
});

/** A tiny OAuth client's redirect URI: records what the browser brings back. */
async function serveCallback() {
  const hits = [];
  const srv = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    hits.push(Object.fromEntries(url.searchParams));
    res.writeHead(200, { "content-type": "text/html" });
    res.end("<!doctype html><title>callback</title><h1>Back at the client</h1>");
  });
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const origin = `http://127.0.0.1:${srv.address().port}`;
  return { origin, url: `${origin}/cb`, hits, close: () => new Promise((r) => srv.close(r)) };
}

const b64url = (buf) => buf.toString("base64").replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

test("team: an MCP client's OAuth consent, approved and denied", T, async () => {
  const { base } = server;
  const cb = await serveCallback();
  try {
    const reg = await call("POST", "/api/auth/mcp/register", { client_name: "Test Agent", redirect_uris: [cb.url] });
    assert.equal(reg.status, 201, show(reg));
    const clientId = reg.body.client_id;
    const verifier = b64url(crypto.randomBytes(32));
    const challenge = b64url(crypto.createHash("sha256").update(verifier).digest());
    const authorize = (state) =>
      `${base}/api/auth/mcp/authorize?${new URLSearchParams({
        response_type: "code",
        client_id: clientId,
        redirect_uri: cb.url,
        code_challenge: challenge,
        code_challenge_method: "S256",
        state,
        scope: "mcp",
        resource: `${base}/mcp`,
      })}`;

    // Signed in (the owner, from the first test): straight to the consent page.
    const page = await newPage(owner);
    await page.goto(authorize("state-approve"));
    await page.waitForURL((u) => u.pathname === "/oauth/consent");
    await page.getByRole("heading", { name: "Connect Test Agent?", level: 1 }).waitFor();
    assert.equal(await page.getByTestId("redirect-origin").textContent(), cb.origin);
    await page.getByRole("list").getByText(/mcp/).first().waitFor();
    assert.equal(await page.getByRole("navigation", { name: "Main" }).count(), 0, "consent stands outside the shell");
    await shot(page, "consent");
    await axe(page, "/oauth/consent");
    await page.getByRole("button", { name: "Approve" }).click();
    await page.waitForURL((u) => u.href.startsWith(cb.url));
    const back = new URL(page.url());
    assert.equal(back.searchParams.get("state"), "state-approve");
    const code = back.searchParams.get("code");
    assert.ok(code, page.url());
    const token = await call("POST", "/api/auth/mcp/token", undefined, {
      form: { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: cb.url, client_id: clientId, resource: `${base}/mcp` },
    });
    assert.equal(token.status, 200, show(token));
    assert.match(token.body.access_token, /^exo_/);
    await page.close();

    // Signed out: sign in first, come back to the same request, deny it.
    const fresh = await browser.newContext();
    try {
      const p = await newPage(fresh);
      await p.goto(authorize("state-deny"));
      await p.waitForURL((u) => u.pathname === "/login" && (u.searchParams.get("returnTo") ?? "").startsWith("/oauth/consent?request="));
      await signIn(p, OWNER);
      await p.waitForURL((u) => u.pathname === "/oauth/consent");
      await p.getByRole("heading", { name: "Connect Test Agent?" }).waitFor();
      await p.getByRole("button", { name: "Deny" }).click();
      await p.waitForURL((u) => u.href.startsWith(cb.url));
      const denied = new URL(p.url());
      assert.equal(denied.searchParams.get("error"), "access_denied");
      assert.equal(denied.searchParams.get("state"), "state-deny");
    } finally {
      await fresh.close();
    }
  } finally {
    await cb.close();
  }
  assert.deepEqual(errors, []);
});

test("team: the CLI's device login, approved in the console", T, async () => {
  const start = await call("POST", "/api/auth/device/code", { client_id: "executor-cli" });
  assert.equal(start.status, 200, show(start));
  const { device_code, user_code, verification_uri_complete, interval = 5 } = start.body;
  assert.equal(verification_uri_complete, `${server.base}/device?user_code=${user_code}`);
  const poll = () =>
    call("POST", "/api/auth/device/token", { grant_type: "urn:ietf:params:oauth:grant-type:device_code", device_code, client_id: "executor-cli" });
  const pending = await poll();
  assert.equal(pending.status, 400, show(pending));
  assert.equal(pending.body.error, "authorization_pending");

  const page = await newPage(owner);
  await page.goto(verification_uri_complete);
  await page.getByRole("heading", { name: "Sign in a device", level: 1 }).waitFor();
  assert.equal(await page.getByLabel("Code shown in your terminal").inputValue(), user_code);
  await page.getByTestId("device-user-code").getByText(user_code).waitFor();
  await shot(page, "device");
  await axe(page, "/device");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByText("You can return to your terminal.").waitFor();
  await axe(page, "/device (approved)");

  let answer;
  for (let i = 0; i < 6; i++) {
    await sleep(interval * 1000);
    answer = await poll();
    if (answer.status === 200) break;
    assert.ok(["authorization_pending", "slow_down"].includes(answer.body?.error), show(answer));
  }
  assert.equal(answer.status, 200, show(answer));
  assert.ok(answer.body.access_token);
  const me = await call("GET", "/api/account/me", undefined, { bearer: answer.body.access_token });
  assert.equal(me.status, 200, show(me));
  assert.equal(me.body.user.email, OWNER.email);

  // A code nobody is waiting with says so.
  await page.goto(`${server.base}/device?user_code=ZZZZ-ZZZZ`);
  await page.getByText(/No sign-in is waiting with this code/).waitFor();
  assert.deepEqual(errors, []);
});

test("team: no serious accessibility violations on the new pages (light, and dark)", T, async () => {
  const dark = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: "dark" });
  try {
    const p = await newPage(dark);
    await p.goto(`${server.base}/login`);
    await p.getByRole("heading", { name: "Sign in to Executor" }).waitFor();
    await axe(p, "/login (dark)");
    await signIn(p, OWNER);
    await p.waitForURL(`${server.base}/`);
    for (const where of ["/account", "/admin", "/activity"]) {
      await p.goto(`${server.base}${where}`);
      await p.locator("main h1").first().waitFor();
      await p.waitForLoadState("load");
      await axe(p, `${where} (dark)`);
    }
  } finally {
    await dark.close();
  }
  assert.deepEqual(found, [], found.join("\n"));
});
