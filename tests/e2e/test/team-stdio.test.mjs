// stdio MCP servers on the team server (`executor serve`, issue #39): a stdio server is a command
// on the host, so they are off unless the operator starts the server with --allow-stdio-mcp
// (EXECUTOR_ALLOW_STDIO_MCP=1). Off: adding or configuring one is a 403 StdioMcpDisabledError for
// everyone and nothing runs. On: only admins and owners add them, the command is in the audit
// log even when the add fails, and the child gets none of the server's own environment.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { freshSlug, show, makeDataDir } from "../lib/executor.mjs";
import { startTeamServer, signUp, signIn, invitePerson, uniqueEmail, newPassword } from "../lib/team.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const SERVER = path.resolve(here, "..", "lib", "stdio-server.mjs");
const T = { timeout: 120_000 };

const cleanups = [];
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
});

function assertTag(res, status, tag, what = "") {
  assert.equal(res.status, status, `${what}: expected ${status} ${tag}, got ${res.status}: ${res.text.slice(0, 1500)}`);
  assert.equal(res.body?._tag, tag, `${what}: ${show(res.body)}`);
}

function assertOk(res, what = "") {
  assert.equal(res.status, 200, `${what}: expected 200, got ${res.status}: ${res.text.slice(0, 1500)}`);
  return res.body;
}

async function server(opts) {
  const s = await startTeamServer(opts);
  cleanups.push(() => s.kill());
  return s;
}

/** A command that leaves `marker` behind if it ever runs. */
const toucher = (marker) => ({ transport: "stdio", name: "Toucher", command: "sh", args: ["-c", `touch ${marker}`] });

test("stdio MCP servers are off on the team server by default: a 403 for everyone, and nothing runs", T, async () => {
  const team = await server();
  const owner = await signUp(team, { name: "Olivia Owner", email: uniqueEmail("owner") });
  const member = await invitePerson(team, owner);
  const scratch = await makeDataDir("executor-stdio-marker-");
  cleanups.push(() => fs.promises.rm(scratch, { recursive: true, force: true }));
  const marker = path.join(scratch, "ran");

  for (const [who, person] of [["the owner", owner], ["a member", member]]) {
    const refused = await person.api("POST", "/api/mcp/servers", { ...toucher(marker), slug: freshSlug("touch") });
    assertTag(refused, 403, "StdioMcpDisabledError", `${who} adds a stdio server`);
    assert.match(refused.body.message, /--allow-stdio-mcp/);
  }
  // An existing (remote) integration cannot be turned into one either.
  const config = await owner.api("POST", "/api/mcp/servers/anything/config", { config: { transport: "stdio", command: "sh", args: ["-c", `touch ${marker}`] } });
  assertTag(config, 403, "StdioMcpDisabledError", "a stdio config");
  await sleep(500);
  assert.equal(fs.existsSync(marker), false, "the command ran on the host");
  const integrations = assertOk(await owner.api("GET", "/api/integrations"), "integrations");
  assert.ok(!JSON.stringify(integrations).includes("Toucher"), show(integrations));
});

test("with --allow-stdio-mcp: admins only, audited before it runs, and the child gets none of the server's environment", T, async () => {
  const email = uniqueEmail("boot");
  const password = `${newPassword()}-${randomBytes(6).toString("hex")}`;
  const team = await server({
    env: { EXECUTOR_ALLOW_STDIO_MCP: "1", EXECUTOR_BOOTSTRAP_ADMIN_EMAIL: email, EXECUTOR_BOOTSTRAP_ADMIN_PASSWORD: password },
  });
  const owner = await signIn(team, { email, password, name: "Admin" });
  const member = await invitePerson(team, owner);
  const scratch = await makeDataDir("executor-stdio-marker-");
  cleanups.push(() => fs.promises.rm(scratch, { recursive: true, force: true }));
  const marker = path.join(scratch, "ran");

  // A member may not run commands on the host.
  assertTag(await member.api("POST", "/api/mcp/servers", { ...toucher(marker), slug: freshSlug("touch") }), 403, "OrgWriteDeniedError", "a member adds a stdio server");
  await sleep(300);
  assert.equal(fs.existsSync(marker), false, "a member's command ran");

  // An add that fails (the command is no MCP server) still ran it, and the log says so.
  const failedSlug = freshSlug("notmcp");
  const failed = await owner.api("POST", "/api/mcp/servers", { ...toucher(marker), slug: failedSlug });
  assert.equal(failed.status, 400, show(failed.body));
  assert.equal(fs.existsSync(marker), true, "the owner's command ran");

  const slug = freshSlug("stdio");
  assertOk(await owner.api("POST", "/api/mcp/servers", { transport: "stdio", name: "E2E stdio", command: process.execPath, args: [SERVER], slug }), "add");

  const audit = assertOk(await owner.api("GET", "/api/admin/audit-events?limit=100&action=mcp.stdio"), "audit");
  const line = (target) => audit.events.find((e) => e.action === "mcp.stdio.add" && e.target === target);
  const failedLine = line(failedSlug);
  assert.ok(failedLine, `the failed add's command is on record: ${show(audit.events)}`);
  assert.equal(failedLine.actor?.userId, owner.id);
  assert.equal(failedLine.after?.command, "sh", show(failedLine));
  assert.deepEqual(failedLine.after?.args, ["-c", `touch ${marker}`], show(failedLine));
  assert.equal(line(slug)?.after?.command, process.execPath, show(audit.events));

  // The child's environment: the basics, none of the server's settings and secrets.
  const envOf = async (name) => {
    const done = assertOk(await owner.execute(`return (await tools.${slug}.org.default.env({ name: ${JSON.stringify(name)} })).data.content[0].text`), `env ${name}`);
    return done.text;
  };
  for (const name of ["EXECUTOR_BOOTSTRAP_ADMIN_PASSWORD", "EXECUTOR_BOOTSTRAP_ADMIN_EMAIL", "EXECUTOR_DATA_DIR", "EXECUTOR_WEB_BASE_URL", "EXECUTOR_ALLOW_STDIO_MCP", "EXECUTOR_ORG_SLUG"]) {
    assert.equal(await envOf(name), `<unset ${name}>`, `${name} reached the stdio child`);
  }
  assert.equal(await envOf("PATH"), process.env.PATH);
});
