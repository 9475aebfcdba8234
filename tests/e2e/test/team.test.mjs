// The team server (`executor serve`) as a person, an agent and an operator use it, against the
// contract in docs/team/API.md: first-run setup and the owner, invites, sign-in (bearer, cookie,
// Origin check, sign-out, the rate limit), roles gating workspace writes (HTTP and sandbox, read
// live), personal connections and pauses that belong to their user (also across a restart), API
// keys (on /api and /mcp with the official SDK), MCP OAuth 2.1 (discovery, DCR, PKCE, consent,
// rotation and reuse detection; by hand and with the SDK's own provider), the CLI's device
// login, the audit log, no plaintext secret on disk, and the bootstrap admin.
//
// Every server here is `EXECUTOR_BIN serve --port P --hostname 127.0.0.1` on a fresh data dir
// (lib/team.mjs). Tests that need a pristine or restarted server start their own; the others
// share one whose owner signed up first.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { serveMcpServer } from "../lib/fixture.mjs";
import { addMcpIntegration, freshSlug, show, makeDataDir, EXECUTOR_BIN, pollUntil } from "../lib/executor.mjs";
import {
  ORG,
  startTeamServer,
  uniqueEmail,
  newPassword,
  sessionCookie,
  signUpRaw,
  signInRaw,
  signUp,
  signIn,
  personOf,
  createInvite,
  invitePerson,
  mcpClient,
  mcpInitialize,
  pkce,
  registerOAuthClient,
  authorizeRaw,
  consentRequestId,
  tokenRequest,
  oauthGrant,
  HeadlessOAuthProvider,
  scanForPlaintext,
} from "../lib/team.mjs";

const T = { timeout: 120_000 };
const INVITE_CODE = /^[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}$/;
const DAY = 24 * 60 * 60 * 1000;
const REDIRECT = "http://127.0.0.1:9/callback";

// ---- servers --------------------------------------------------------------------------------------

const servers = [];
const cleanups = [];
let fixture;
let team; // the shared server
let owner; // its owner

async function server(opts) {
  const s = await startTeamServer(opts);
  servers.push(s);
  return s;
}

/** The shared server and its owner (started on first use). */
async function shared() {
  if (!team) {
    const s = await server();
    owner = await signUp(s, { name: "Olivia Owner", email: uniqueEmail("owner") });
    team = s;
  }
  return { team, owner };
}

before(async () => {
  fixture = await serveMcpServer();
});
after(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  for (const s of servers) await s.kill({ removeDataDir: true }).catch(() => {});
  await fixture?.close();
});

// ---- helpers --------------------------------------------------------------------------------------

/** `res` is `status` with a JSON body whose `_tag` is `tag`. */
function assertTag(res, status, tag, what = "") {
  assert.equal(res.status, status, `${what}: expected ${status} ${tag}, got ${res.status}: ${res.text.slice(0, 1500)}`);
  assert.equal(typeof res.body, "object", `${what}: a JSON error body, got ${res.text.slice(0, 500)}`);
  assert.equal(res.body?._tag, tag, `${what}: ${show(res.body)}`);
}

function assertOk(res, what = "") {
  assert.equal(res.status, 200, `${what}: expected 200, got ${res.status}: ${res.text.slice(0, 1500)}`);
  return res.body;
}

const echoCode = (slug, message, owner = "org", conn = "main") =>
  `return (await tools.${slug}.${owner}.${conn}.echo({ message: ${JSON.stringify(message)} })).data.content[0].text`;

/** Run `code` as `p` (autoApprove), accepting any pause (`needs_person` core tools); the completed body. */
async function runToEnd(p, code, { maxPauses = 4 } = {}) {
  let r = await p.execute(code, { autoApprove: true });
  let pauses = 0;
  while (r.status === 200 && r.body?.status === "paused" && pauses < maxPauses) {
    pauses++;
    r = await p.api("POST", `/api/executions/${r.body.structured.executionId}/resume`, { action: "accept" });
  }
  assertOk(r, `execute ${code.slice(0, 80)}`);
  assert.equal(r.body.status, "completed", show(r.body));
  return { result: r.body.structured?.result, pauses, body: r.body };
}

/** POST /api/executions without autoApprove; asserts a pause and returns its id. */
async function pauseOf(p, code) {
  const r = await p.execute(code, { autoApprove: false });
  assertOk(r, "execute");
  assert.equal(r.body.status, "paused", show(r.body));
  const id = r.body.structured?.executionId;
  assert.match(id ?? "", /^exec_/, show(r.body));
  return id;
}

/** `id` is not `p`'s: 404 ExecutionNotFoundError on read and on every resume action. */
async function assertNotTheirs(p, id, who) {
  const read = await p.api("GET", `/api/executions/${id}`);
  assertTag(read, 404, "ExecutionNotFoundError", `${who} GET /api/executions/${id}`);
  for (const action of ["accept", "decline", "cancel"]) {
    const r = await p.api("POST", `/api/executions/${id}/resume`, { action });
    assertTag(r, 404, "ExecutionNotFoundError", `${who} resume ${action}`);
  }
}

const textOf = (result) => result.content?.find((c) => c.type === "text")?.text ?? "";

// ---- 1. setup ------------------------------------------------------------------------------------

test("setup: public routes, 401 without credentials, the first sign-up (one of a race) is the owner, then invites are required", T, async () => {
  const s = await server();
  assert.ok(s.readyLine, `prints "Executor is running at …" when ready\n${s.logs()}`);
  assert.ok(s.readyLine.includes(`:${s.port}`), s.readyLine);

  assert.equal((await s.request("GET", "/api/health")).status, 200);
  assert.deepEqual(assertOk(await s.request("GET", "/api/setup-status"), "setup-status"), { needsSetup: true });

  for (const [what, opts] of [
    ["no credentials", {}],
    ["a bogus bearer", { token: "not-a-token" }],
    ["a bogus API key", { token: `exk_${randomBytes(16).toString("hex")}` }],
    ["a bogus cookie", { cookie: randomBytes(16).toString("hex") }],
  ]) {
    assertTag(await s.request("GET", "/api/integrations", opts), 401, "AccountUnauthorized", `/api/integrations with ${what}`);
  }
  assertTag(await s.request("GET", "/api/account/me"), 401, "AccountUnauthorized", "/api/account/me");
  assert.equal((await mcpInitialize(s)).status, 401, "/mcp without credentials");
  assert.equal((await s.request("GET", "/api/openapi.json")).status, 200, "/api/openapi.json is public");
  assert.notEqual((await s.request("GET", "/")).status, 401, "the console's files are public");
  assert.notEqual((await s.request("GET", "/login")).status, 401, "the console's files are public");

  // Bad input is refused before anyone exists, and does not end the setup.
  for (const [what, body] of [
    ["email without @", { name: "X", email: "no-at-sign.example.com", password: newPassword() }],
    ["password of 7", { name: "X", email: uniqueEmail(), password: "short7!" }],
    ["password of 257", { name: "X", email: uniqueEmail(), password: "p".repeat(257) }],
    ["empty name", { name: "", email: uniqueEmail(), password: newPassword() }],
    ["name of 101", { name: "n".repeat(101), email: uniqueEmail(), password: newPassword() }],
  ]) {
    const r = await signUpRaw(s, body);
    assertTag(r, 400, "InvalidAccountInputError", what);
    assert.equal(typeof r.body.message, "string", show(r.body));
  }
  assert.deepEqual((await s.request("GET", "/api/setup-status")).body, { needsSetup: true });

  // Three first sign-ups at once: exactly one becomes the owner.
  const racers = [0, 1, 2].map((i) => ({ name: `Racer ${i}`, email: uniqueEmail(`racer${i}`), password: newPassword() }));
  const answers = await Promise.all(racers.map((b) => signUpRaw(s, b)));
  const winners = answers.map((r, i) => [r, racers[i]]).filter(([r]) => r.status === 200);
  assert.equal(winners.length, 1, `exactly one first account: ${show(answers.map((a) => [a.status, a.body]))}`);
  for (const r of answers.filter((a) => a.status !== 200)) assertTag(r, 403, "InviteRequiredError", "a losing racer");
  const [[won, who]] = winners;
  assert.equal(typeof won.body.token, "string", show(won.body));
  assert.match(won.body.user?.id ?? "", /^usr_/, show(won.body));
  assert.equal(won.body.user.email.toLowerCase(), who.email.toLowerCase());
  assert.equal(won.body.user.name, who.name);
  assert.ok(sessionCookie(won), `the sign-up sets the executor_session cookie: ${show(won.headers)}`);
  const first = personOf(s, won, who);

  const me = assertOk(await first.api("GET", "/api/account/me"), "me");
  assert.equal(me.role, "owner", show(me));
  assert.equal(me.user.id, first.id, show(me));
  assert.equal(me.organization?.name, ORG.name, show(me));
  assert.equal(me.organization?.slug, ORG.slug, show(me));
  assert.equal(typeof me.organization?.id, "string", show(me));
  assert.deepEqual(assertOk(await s.request("GET", "/api/setup-status")), { needsSetup: false });

  // The losers do not exist.
  for (const b of racers.filter((r) => r !== who)) {
    assertTag(await signInRaw(s, b.email, b.password), 401, "InvalidCredentialsError", `sign-in of a losing racer ${b.email}`);
  }

  const second = await signUpRaw(s, { name: "Second", email: uniqueEmail(), password: newPassword() });
  assertTag(second, 403, "InviteRequiredError", "second sign-up without a code");
  assert.equal(second.body.message, "An invite code is required to join this workspace.");
  const bogus = await signUpRaw(s, { name: "Second", email: uniqueEmail(), password: newPassword(), inviteCode: "ABCD-EFGH-JKLM" });
  assertTag(bogus, 403, "InvalidInviteError", "a bogus invite");
  assert.equal(bogus.body.message, "This invite code is invalid, already used, or expired.");

  // The owner's email, in another case, with a good invite: taken.
  const invite = await createInvite(first);
  const taken = await signUpRaw(s, { name: "Dup", email: who.email.toUpperCase(), password: newPassword(), inviteCode: invite.code });
  assertTag(taken, 409, "EmailTakenError", "a registered email in upper case");

  const members = assertOk(await first.api("GET", "/api/account/members")).members;
  assert.equal(members.length, 1, show(members));
  assert.equal(members[0].role, "owner", show(members));
  assert.equal(members[0].isCurrentUser, true, show(members));
});

// ---- 2. invites ----------------------------------------------------------------------------------

test("invites: codes, status, single use, roles, revoke; members and roles; non-admins refused", T, async () => {
  const { team, owner } = await shared();
  const t0 = Date.now();
  const created = await owner.api("POST", "/api/admin/invites", { role: "member", label: "for Bob" });
  const inv = assertOk(created, "create invite");
  assert.match(inv.code, INVITE_CODE, show(inv));
  assert.equal(inv.role, "member", show(inv));
  assert.equal(inv.label, "for Bob", show(inv));
  assert.equal(typeof inv.id, "string", show(inv));
  assert.equal(typeof inv.createdAt, "number", show(inv));
  assert.ok(inv.createdAt >= t0 - 60_000 && inv.createdAt <= Date.now() + 60_000, show(inv));
  assert.ok(Math.abs(inv.expiresAt - inv.createdAt - 7 * DAY) < 60_000, `default 7 days: ${show(inv)}`);
  assert.equal(inv.usedByEmail, null, show(inv));
  assert.equal(inv.usedAt, null, show(inv));

  const list = assertOk(await owner.api("GET", "/api/admin/invites")).invites;
  assert.equal(list[0]?.id, inv.id, `newest first: ${show(list)}`);
  assert.equal(list[0].code, inv.code);

  assert.deepEqual(assertOk(await team.request("GET", `/api/invite-status/${inv.code}`), "invite-status (public)"), { valid: true });
  assert.deepEqual(assertOk(await team.request("GET", "/api/invite-status/ZZZZ-ZZZZ-ZZZZ")), { valid: false });

  const bobEmail = uniqueEmail("bob");
  const bob = await signUp(team, { name: "Bob", email: bobEmail, inviteCode: inv.code });
  assert.equal(assertOk(await bob.api("GET", "/api/account/me")).role, "member");

  assert.deepEqual((await team.request("GET", `/api/invite-status/${inv.code}`)).body, { valid: false }, "used");
  const usedRow = assertOk(await owner.api("GET", "/api/admin/invites")).invites.find((i) => i.id === inv.id);
  assert.equal(usedRow?.usedByEmail?.toLowerCase(), bobEmail.toLowerCase(), show(usedRow));
  assert.equal(typeof usedRow.usedAt, "number", show(usedRow));
  const again = await signUpRaw(team, { name: "Bob2", email: uniqueEmail(), password: newPassword(), inviteCode: inv.code });
  assertTag(again, 403, "InvalidInviteError", "a used code");

  // Members are refused the admin routes; nobody signed in is unauthorised.
  assertTag(await bob.api("GET", "/api/admin/invites"), 403, "AdminForbidden", "member lists invites");
  assertTag(await bob.api("POST", "/api/admin/invites", { role: "member" }), 403, "AdminForbidden", "member creates an invite");
  assertTag(await bob.api("POST", "/api/admin/invites", { role: "admin" }), 403, "AdminForbidden", "member creates an admin invite");
  assertTag(await bob.api("DELETE", `/api/admin/invites/${inv.id}`), 403, "AdminForbidden", "member revokes");
  assertTag(await team.request("GET", "/api/admin/invites"), 401, "AdminUnauthorized", "no sign-in");

  // Revoking an unused invite.
  const spare = await createInvite(owner, { label: "spare" });
  assert.deepEqual(assertOk(await owner.api("DELETE", `/api/admin/invites/${spare.id}`), "revoke"), { success: true });
  assert.deepEqual((await team.request("GET", `/api/invite-status/${spare.code}`)).body, { valid: false });
  assert.ok(!assertOk(await owner.api("GET", "/api/admin/invites")).invites.some((i) => i.id === spare.id), "revoked invite is gone");
  assertTag(await signUpRaw(team, { name: "Late", email: uniqueEmail(), password: newPassword(), inviteCode: spare.code }), 403, "InvalidInviteError", "revoked code");
  // A used one is kept.
  await owner.api("DELETE", `/api/admin/invites/${inv.id}`);
  assert.ok(assertOk(await owner.api("GET", "/api/admin/invites")).invites.some((i) => i.id === inv.id), "a used invite is kept");

  // An admin invite, one day.
  const adminInv = await createInvite(owner, { role: "admin", expiresInDays: 1 });
  assert.equal(adminInv.role, "admin");
  assert.ok(Math.abs(adminInv.expiresAt - adminInv.createdAt - DAY) < 60_000, show(adminInv));
  const ada = await signUp(team, { name: "Ada Admin", email: uniqueEmail("ada"), inviteCode: adminInv.code });
  assert.equal(assertOk(await ada.api("GET", "/api/account/me")).role, "admin");
  assertOk(await ada.api("GET", "/api/admin/invites"), "an admin lists invites");

  for (const body of [{ expiresInDays: 0 }, { expiresInDays: 91 }, { role: "owner" }]) {
    const r = await owner.api("POST", "/api/admin/invites", body);
    assert.equal(r.status, 400, `${show(body)} → ${r.status} ${r.text.slice(0, 500)}`);
  }

  // Members and roles: any signed-in user.
  const members = assertOk(await bob.api("GET", "/api/account/members"), "members as a member").members;
  const byId = Object.fromEntries(members.map((m) => [m.id, m]));
  for (const [p, role] of [
    [owner, "owner"],
    [bob, "member"],
    [ada, "admin"],
  ]) {
    const m = byId[p.id];
    assert.ok(m, `${p.email} listed: ${show(members)}`);
    assert.equal(m.userId, p.id, show(m));
    assert.equal(m.email.toLowerCase(), p.email.toLowerCase(), show(m));
    assert.equal(m.role, role, show(m));
    assert.equal(m.status, "active", show(m));
    assert.equal(typeof m.createdAt, "number", show(m));
    assert.equal(m.isCurrentUser, p === bob, show(m));
  }
  // An admin may remove themselves (only the last owner may not).
  assert.deepEqual(assertOk(await ada.api("DELETE", `/api/account/members/${ada.id}`), "an admin leaves"), { success: true });
  assertTag(await ada.api("GET", "/api/account/me"), 401, "AccountUnauthorized", "after leaving");

  assert.deepEqual(assertOk(await bob.api("GET", "/api/account/roles")), {
    roles: [
      { slug: "owner", name: "Owner" },
      { slug: "admin", name: "Admin" },
      { slug: "member", name: "Member" },
    ],
  });
});

// ---- 3. sign-in ----------------------------------------------------------------------------------

test("sign-in: wrong password, bearer and cookie, the Origin check, sign-out, and the rate limit", T, async () => {
  const s = await server();
  const sam = await signUp(s, { name: "Sam", email: `Sam.${randomBytes(3).toString("hex")}@Example.COM` });

  const wrong = await signInRaw(s, sam.email, "definitely-not-it");
  assertTag(wrong, 401, "InvalidCredentialsError", "wrong password");
  assert.equal(wrong.body.message, "Wrong email or password.");
  assertTag(await signInRaw(s, uniqueEmail("nobody"), "whatever-password"), 401, "InvalidCredentialsError", "unknown email");

  // Emails compare case-insensitively.
  const res = await signInRaw(s, sam.email.toLowerCase(), sam.password);
  assertOk(res, "sign-in");
  assert.equal(res.body.user?.id, sam.id, show(res.body));
  const session = personOf(s, res, sam);
  assert.equal(assertOk(await session.api("GET", "/api/account/me"), "bearer").user.id, sam.id);

  const c = sessionCookie(res);
  assert.ok(c, `set-cookie executor_session: ${show(res.headers["set-cookie"])}`);
  assert.equal(c.attributes.httponly, true, c.line);
  assert.equal(String(c.attributes.samesite).toLowerCase(), "lax", c.line);
  assert.equal(c.attributes.path, "/", c.line);
  assert.equal(c.attributes.secure, undefined, `no Secure on an http BASE: ${c.line}`);
  assert.equal(assertOk(await s.request("GET", "/api/account/me", { cookie: c.value }), "cookie").user.id, sam.id);

  // State-changing requests with the cookie must come from BASE.
  const keysBefore = assertOk(await session.api("GET", "/api/account/api-keys")).apiKeys.length;
  for (const [what, headers] of [
    ["a foreign Origin", { origin: "http://evil.example" }],
    ["a foreign Referer", { referer: "http://evil.example/page" }],
    ["neither Origin nor Referer", {}],
    ["Origin null", { origin: "null" }],
  ]) {
    const r = await s.request("POST", "/api/account/api-keys", { cookie: c.value, headers, body: { name: "evil" } });
    assertTag(r, 403, "InvalidOriginError", `cookie POST with ${what}`);
  }
  const keysAfter = assertOk(await session.api("GET", "/api/account/api-keys")).apiKeys;
  assert.equal(keysAfter.length, keysBefore, `nothing was created: ${show(keysAfter)}`);
  assert.ok(!keysAfter.some((k) => k.name === "evil"), show(keysAfter));
  assertOk(await s.request("POST", "/api/account/api-keys", { cookie: c.value, headers: { origin: s.baseUrl }, body: { name: "from the console" } }), "cookie POST from BASE");
  assertOk(await s.request("POST", "/api/account/api-keys", { cookie: c.value, headers: { referer: `${s.baseUrl}/settings` }, body: { name: "referer" } }), "cookie POST with BASE's Referer");
  // A GET with the cookie needs no Origin.
  assertOk(await s.request("GET", "/api/account/api-keys", { cookie: c.value, headers: { origin: "http://evil.example" } }), "cookie GET");

  // A cookie sign-out from elsewhere is refused and ends nothing.
  assertTag(await s.request("POST", "/api/auth/sign-out", { cookie: c.value, headers: { origin: "http://evil.example" } }), 403, "InvalidOriginError", "cookie sign-out from a foreign Origin");
  assertOk(await s.request("GET", "/api/account/me", { cookie: c.value }), "the session survives a refused sign-out");
  // The bearer is read first (it is what a script chose to send); the cookie only without one.
  const other = await signUp(s, { name: "Noise", email: uniqueEmail("noise"), inviteCode: (await createInvite(session)).code });
  const bothAnswer = assertOk(await s.request("GET", "/api/account/me", { cookie: c.value, token: other.token })).user.id; // asserted at the end
  // Sign-out (cookie, from BASE): that session ends, the cookie is cleared.
  const out = await s.request("POST", "/api/auth/sign-out", { cookie: c.value, headers: { origin: s.baseUrl } });
  assert.deepEqual(assertOk(out, "sign-out (cookie)"), { success: true });
  const cleared = sessionCookie(out);
  assert.ok(cleared, `sign-out clears the cookie: ${show(out.headers["set-cookie"])}`);
  const expiredAt = cleared.attributes.expires ? Date.parse(cleared.attributes.expires) : NaN;
  assert.ok(cleared.value === "" || cleared.attributes["max-age"] === "0" || expiredAt < Date.now(), cleared.line);
  assertTag(await s.request("GET", "/api/account/me", { cookie: c.value }), 401, "AccountUnauthorized", "signed-out cookie");
  // The sign-up session is another one and still works; sign out by bearer.
  assertOk(await sam.api("GET", "/api/account/me"), "the other session");
  assert.deepEqual(assertOk(await sam.api("POST", "/api/auth/sign-out"), "sign-out (bearer)"), { success: true });
  assertTag(await sam.api("GET", "/api/account/me"), 401, "AccountUnauthorized", "signed-out bearer");
  assert.equal((await mcpInitialize(s, sam.token)).status, 401, "a signed-out session on /mcp");
  assertTag(await session.api("GET", "/api/account/me"), 401, "AccountUnauthorized", "the session the cookie carried is the one that ended");

  // The rate limit: 5 failures per account in 15 minutes, then 429 (even the right password).
  const admin = await signIn(s, sam);
  const invite = await createInvite(admin);
  const rita = await signUp(s, { name: "Rita", email: uniqueEmail("rita"), inviteCode: invite.code });
  const statuses = [];
  let limited;
  for (let i = 0; i < 6; i++) {
    const r = await signInRaw(s, rita.email, `wrong-${i}-password`);
    statuses.push(r.status);
    if (r.status === 429) limited = r;
  }
  assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429], `five failures, then 429: ${statuses}`);
  assertTag(limited, 429, "TooManyAttemptsError", "6th attempt");
  const retry = Number(limited.headers["retry-after"]);
  assert.ok(Number.isInteger(retry) && retry > 0, `Retry-After: ${show(limited.headers)}`);
  assert.equal(typeof limited.body.retryAfterSeconds, "number", show(limited.body));
  assert.ok(limited.body.retryAfterSeconds > 0, show(limited.body));
  assert.ok(Math.abs(limited.body.retryAfterSeconds - retry) <= 1, `header ${retry} vs body ${limited.body.retryAfterSeconds}`);
  const right = await signInRaw(s, rita.email, rita.password);
  assertTag(right, 429, "TooManyAttemptsError", "the right password while locked");
  assert.ok(right.headers["retry-after"], show(right.headers));
  // Per account: someone else still signs in (well under 20 failures from this address).
  assertOk(await signInRaw(s, sam.email, sam.password), "another account is not locked");
  // The lock is on signing in; Rita's existing session still works.
  assertOk(await rita.api("GET", "/api/account/me"), "an existing session is unaffected");

  // "A request is signed in by, in this order: 1. the session cookie … 2. Authorization: Bearer".
  assert.equal(bothAnswer, other.user.id, "with a cookie and a bearer of another person, the bearer's person answers");
});

// ---- 4. roles ------------------------------------------------------------------------------------

test("roles: members use the workspace but cannot change it (HTTP and sandbox); admins can; roles are read live", T, async (t) => {
  const { team, owner } = await shared();
  const mia = await invitePerson(team, owner, { role: "member", name: "Mia Member" });
  const { slug } = await addMcpIntegration(owner.ex, fixture.url, { name: "Team MCP" });

  // Read and use.
  assert.ok(assertOk(await mia.api("GET", "/api/integrations"), "integrations").some((i) => i.slug === slug), "member lists the integration");
  assert.ok(assertOk(await mia.api("GET", `/api/tools?integration=${slug}`), "tools").some((t) => t.name === "echo"), "member lists its tools");
  const conns = assertOk(await mia.api("GET", `/api/connections?integration=${slug}`), "connections");
  assert.ok(conns.some((c) => c.owner === "org" && c.name === "main"), show(conns));
  const used = assertOk(await mia.execute(echoCode(slug, "from member")), "member executes");
  assert.equal(used.status, "completed", show(used));
  assert.equal(used.text, "echo:from member", show(used));

  // Workspace writes: 403 OrgWriteDeniedError, and nothing changes.
  const never = `${freshSlug("never")}.*`;
  for (const [method, p, body] of [
    ["POST", "/api/policies", { owner: "org", pattern: never, action: "block" }],
    ["POST", "/api/connections", { owner: "org", name: "second", integration: slug, template: "none", value: "" }],
    ["DELETE", `/api/connections/org/${slug}/main`, undefined],
    ["DELETE", `/api/integrations/${slug}`, undefined],
    ["DELETE", `/api/mcp/servers/${slug}`, undefined],
    ["PATCH", `/api/integrations/${slug}`, { name: "Renamed by a member" }],
    ["POST", "/api/mcp/servers", { transport: "remote", name: "Member MCP", endpoint: fixture.url, slug: freshSlug("member"), remoteTransport: "streamable-http" }],
    ["POST", "/api/toolkits", { owner: "org", name: "Member kit", slug: `member-${randomBytes(3).toString("hex")}` }],
  ]) {
    const r = await mia.api(method, p, body);
    assertTag(r, 403, "OrgWriteDeniedError", `member ${method} ${p}`);
    assert.equal(typeof r.body.message, "string", show(r.body));
  }
  const still = assertOk(await owner.api("GET", `/api/integrations/${slug}`), "integration still there");
  assert.equal(still.name, "Team MCP", show(still));
  assert.ok(assertOk(await owner.api("GET", `/api/connections?integration=${slug}`)).some((c) => c.owner === "org" && c.name === "main"), "org connection kept");
  assert.ok(!assertOk(await owner.api("GET", "/api/policies")).some((p) => p.pattern === never), "no org policy was made");
  assert.equal(assertOk(await mia.execute(echoCode(slug, "still"))).text, "echo:still");

  // Personal objects are the member's to control.
  const mine = await mia.api("POST", "/api/policies", { owner: "user", pattern: `${slug}.*.*.slow`, action: "require_approval" });
  assertOk(mine, "member's user policy");
  assert.equal(mine.body.owner, "user", show(mine.body));
  assert.deepEqual(assertOk(await mia.api("DELETE", `/api/policies/${mine.body.id}`, { owner: "user" })), { removed: true });
  const conn = await mia.api("POST", "/api/connections", { owner: "user", name: "mine", integration: slug, template: "none", value: "" });
  assertOk(conn, "member's user connection");
  const kit = await mia.api("POST", "/api/toolkits", { owner: "user", name: "My kit", slug: `mine-${randomBytes(3).toString("hex")}` });
  assertOk(kit, "member's user toolkit");

  // Role changes are admin-only.
  assertTag(await mia.api("PATCH", `/api/account/members/${mia.id}/role`, { roleSlug: "admin" }), 403, "AdminForbidden", "member promotes self");

  // Inside the sandbox: the core tool answers org_write_denied.
  const orgPolicy = (pattern) => `return await tools.executor.coreTools.policies.create({ owner: "org", pattern: ${JSON.stringify(pattern)}, action: "block" })`;
  const denied = await runToEnd(mia, orgPolicy(never));
  assert.equal(denied.result?.ok, false, show(denied.body));
  assert.equal(denied.result?.error?.code, "org_write_denied", show(denied.body));
  assert.equal(typeof denied.result.error.message, "string", show(denied.body));
  assert.ok(!assertOk(await owner.api("GET", "/api/policies")).some((p) => p.pattern === never), "still no org policy");

  // …and over MCP (the same core tool; model mode: the person's approval is a resume).
  const miaMcp = await mcpClient(team, mia.token);
  try {
    let r = await miaMcp.callTool({ name: "execute", arguments: { code: orgPolicy(never) } });
    for (let i = 0; i < 3 && r.structuredContent?.status === "waiting_for_interaction"; i++) {
      r = await miaMcp.callTool({ name: "resume", arguments: { executionId: r.structuredContent.executionId, action: "accept" } });
    }
    assert.equal(r.structuredContent?.status, "completed", show(r));
    assert.equal(r.structuredContent.result?.error?.code, "org_write_denied", show(r));
  } finally {
    await miaMcp.close();
  }

  // Roles are read live: a pause made as a member, resumed after the promotion, succeeds.
  const pattern2 = `${freshSlug("live")}.*`;
  const first = await mia.execute(orgPolicy(pattern2), { autoApprove: true });
  assertOk(first, "execute as member");
  const promote = await owner.api("PATCH", `/api/account/members/${mia.id}/role`, { roleSlug: "admin" });
  const promoted = assertOk(promote, "promote to admin");
  assert.equal(promoted.role, "admin", show(promoted));
  assert.equal(promoted.id, mia.id, show(promoted));
  assert.equal(assertOk(await mia.api("GET", "/api/account/me")).role, "admin", "the same session sees the new role");
  let live;
  t.diagnostic(`a member's sandbox policies.create ${first.body.status === "paused" ? "paused (role read at resume)" : "was decided before any pause"}`);
  if (first.body.status === "paused") {
    let r = await mia.api("POST", `/api/executions/${first.body.structured.executionId}/resume`, { action: "accept" });
    for (let i = 0; i < 3 && r.body?.status === "paused"; i++) r = await mia.api("POST", `/api/executions/${r.body.structured.executionId}/resume`, { action: "accept" });
    assertOk(r, "resume after promotion");
    live = r.body.structured?.result;
  } else {
    // The role was decided before any pause (denied as a member); run it again as an admin.
    assert.equal(first.body.structured?.result?.error?.code, "org_write_denied", show(first.body));
    live = (await runToEnd(mia, orgPolicy(pattern2))).result;
  }
  assert.equal(live?.ok, true, `an admin creates the org policy: ${show(live)}`);
  assert.equal(live.data?.owner, "org", show(live));
  assert.equal(live.data?.pattern, pattern2, show(live));

  // …and the other way: paused as an admin, demoted, then resumed → denied.
  const pattern3 = `${freshSlug("demoted")}.*`;
  const asAdmin = await mia.execute(orgPolicy(pattern3), { autoApprove: true });
  assertOk(asAdmin, "execute as admin");
  if (asAdmin.body.status === "paused") {
    assert.equal(assertOk(await owner.api("PATCH", `/api/account/members/${mia.id}/role`, { roleSlug: "member" })).role, "member");
    const r = await mia.api("POST", `/api/executions/${asAdmin.body.structured.executionId}/resume`, { action: "accept" });
    assertOk(r, "resume after demotion");
    assert.equal(r.body.status, "completed", show(r.body));
    assert.equal(r.body.structured?.result?.error?.code, "org_write_denied", `the role is read at resume: ${show(r.body)}`);
    assert.ok(!assertOk(await owner.api("GET", "/api/policies")).some((p) => p.pattern === pattern3), "no policy from a demoted admin's resume");
    assert.equal(assertOk(await owner.api("PATCH", `/api/account/members/${mia.id}/role`, { roleSlug: "admin" })).role, "admin");
  } else {
    assert.equal(asAdmin.body.structured?.result?.ok, true, show(asAdmin.body));
    const made = (await owner.api("GET", "/api/policies")).body.find((p) => p.pattern === pattern3);
    if (made) await owner.api("DELETE", `/api/policies/${made.id}`, { owner: "org" });
  }

  // HTTP as admin, then demoted again.
  const http = await mia.api("POST", "/api/policies", { owner: "org", pattern: never, action: "block" });
  assertOk(http, "admin creates an org policy");
  assert.deepEqual(assertOk(await mia.api("DELETE", `/api/policies/${http.body.id}`, { owner: "org" })), { removed: true });
  const viaSandbox = (await owner.api("GET", "/api/policies")).body.find((p) => p.pattern === pattern2);
  if (viaSandbox) await owner.api("DELETE", `/api/policies/${viaSandbox.id}`, { owner: "org" });

  // Only an owner makes or unmakes owners; the last owner stays.
  const other = await invitePerson(team, owner, { role: "member", name: "Otto" });
  assert.equal((await mia.api("PATCH", `/api/account/members/${other.id}/role`, { roleSlug: "owner" })).status, 403, "an admin cannot make an owner");
  assert.equal((await mia.api("PATCH", `/api/account/members/${owner.id}/role`, { roleSlug: "member" })).status, 403, "an admin cannot unmake an owner");
  assertTag(await owner.api("PATCH", `/api/account/members/${owner.id}/role`, { roleSlug: "member" }), 409, "LastOwnerError", "the last owner demotes self");
  assertTag(await owner.api("DELETE", `/api/account/members/${owner.id}`), 409, "LastOwnerError", "the last owner removes self");
  assert.equal(assertOk(await owner.api("GET", "/api/account/me")).role, "owner");

  const demoted = assertOk(await owner.api("PATCH", `/api/account/members/${mia.id}/role`, { roleSlug: "member" }), "demote");
  assert.equal(demoted.role, "member", show(demoted));
  assertTag(await mia.api("POST", "/api/policies", { owner: "org", pattern: never, action: "block" }), 403, "OrgWriteDeniedError", "demoted again");

  // Non-admins cannot remove people; a bad role is refused.
  assertTag(await mia.api("DELETE", `/api/account/members/${other.id}`), 403, "AdminForbidden", "a member removes someone");
  assert.equal((await owner.api("PATCH", `/api/account/members/${other.id}/role`, { roleSlug: "superuser" })).status, 400, "an unknown role");

  // Removing a member ends their sessions, API keys and OAuth tokens at once.
  const otherKey = assertOk(await other.api("POST", "/api/account/api-keys", { name: "doomed" }), "the member's key");
  const otherGrant = await oauthGrant(team, other.token);
  assert.equal((await mcpInitialize(team, otherGrant.tokens.access_token)).status, 200, "the member's OAuth token works before");
  assert.deepEqual(assertOk(await owner.api("DELETE", `/api/account/members/${other.id}`), "remove member"), { success: true });
  assertTag(await other.api("GET", "/api/account/me"), 401, "AccountUnauthorized", "a removed member's session");
  assertTag(await team.request("GET", "/api/account/me", { token: otherKey.value }), 401, "AccountUnauthorized", "a removed member's API key");
  assert.equal((await mcpInitialize(team, otherKey.value)).status, 401, "a removed member's API key on /mcp");
  assert.equal((await mcpInitialize(team, otherGrant.tokens.access_token)).status, 401, "a removed member's OAuth token on /mcp");
  const refreshGone = await tokenRequest(team, { grant_type: "refresh_token", refresh_token: otherGrant.tokens.refresh_token, client_id: otherGrant.client.client_id });
  assert.equal(refreshGone.status, 400, `a removed member's refresh token: ${refreshGone.text}`);
  assert.equal(refreshGone.body?.error, "invalid_grant", show(refreshGone.body));
  assertTag(await signInRaw(team, other.email, other.password), 401, "InvalidCredentialsError", "a removed member signs in");
  assert.ok(!assertOk(await owner.api("GET", "/api/account/members")).members.some((m) => m.id === other.id), "no longer a member");
});

// ---- 5. personal isolation ---------------------------------------------------------------------

test("personal rows: another member's connection is invisible and uncallable; a pause is its user's (also after a restart)", T, async () => {
  let s = await server();
  const o = await signUp(s, { name: "Owner Five", email: uniqueEmail("owner5") });
  let a = await invitePerson(s, o, { name: "Alice" });
  let b = await invitePerson(s, o, { name: "Bruno" });
  const { slug } = await addMcpIntegration(o.ex, fixture.url, { name: "Personal MCP" });

  const made = await a.api("POST", "/api/connections", { owner: "user", name: "mine", integration: slug, template: "none", value: "" });
  assertOk(made, "A's personal connection");
  assert.equal(made.body.owner, "user", show(made.body));
  assert.equal(made.body.address, `tools.${slug}.user.mine`, show(made.body));
  assert.ok(assertOk(await a.api("GET", "/api/connections")).some((c) => c.owner === "user" && c.integration === slug && c.name === "mine"), "A sees it");

  const invisible = async (p, who) => {
    const list = assertOk(await p.api("GET", "/api/connections"), `${who} lists connections`);
    assert.ok(!list.some((c) => c.owner === "user" && c.integration === slug), `${who} sees no personal connection of A: ${show(list)}`);
    assert.ok(!assertOk(await p.api("GET", `/api/connections?integration=${slug}&owner=user`)).length, `${who}: filtered`);
    assertTag(await p.api("GET", `/api/connections/user/${slug}/mine`), 404, "ConnectionNotFoundError", `${who} reads A's connection`);
    const tools = assertOk(await p.api("GET", `/api/tools?integration=${slug}`));
    assert.ok(!JSON.stringify(tools).includes(`${slug}.user.mine`) && !tools.some((t) => t.owner === "user" && t.connection === "mine"), `${who}'s tools: ${show(tools)}`);
    const r = await runToEnd(p, `
      const call = await tools.${slug}.user.mine.echo({ message: "stolen" });
      const found = await tools.search({ query: "", namespace: "${slug}" });
      return { call, paths: found.items.map((i) => i.path) };`);
    assert.equal(r.result?.call?.ok, false, `${who} cannot call A's tool: ${show(r.body)}`);
    assert.match(r.result.call.error?.code ?? "", /not_found$/, show(r.body));
    assert.ok(!r.result.paths.some((x) => x.includes(".user.mine.")), `${who}'s search: ${show(r.result.paths)}`);
  };
  await invisible(b, "B");
  await invisible(o, "the owner");
  assertTag(await b.api("DELETE", `/api/connections/user/${slug}/mine`), 404, "ConnectionNotFoundError", "B removes A's connection");
  assert.equal(assertOk(await a.execute(echoCode(slug, "mine", "user", "mine"))).text, "echo:mine", "A calls it");

  // A's personal policy gates only A.
  assertOk(await a.api("POST", "/api/policies", { owner: "user", pattern: `${slug}.*.*.echo`, action: "require_approval" }), "A's policy");
  const bRun = assertOk(await b.execute(echoCode(slug, "b is free"), { autoApprove: false }));
  assert.equal(bRun.status, "completed", `A's personal rule does not gate B: ${show(bRun)}`);

  const p1 = await pauseOf(a, echoCode(slug, "paused-a", "user", "mine"));
  await assertNotTheirs(b, p1, "B");
  await assertNotTheirs(o, p1, "the owner");
  // Over MCP, B's resume does not find it either.
  const bMcp = await mcpClient(s, b.token);
  try {
    const r = await bMcp.callTool({ name: "resume", arguments: { executionId: p1, action: "accept" } });
    assert.equal(r.isError, true, show(r));
    assert.equal(r.structuredContent?.status, "execution_not_found", show(r));
  } finally {
    await bMcp.close();
  }
  assertOk(await a.api("GET", `/api/executions/${p1}`), "A reads the pause");
  const done = assertOk(await a.api("POST", `/api/executions/${p1}/resume`, { action: "accept" }), "A resumes");
  assert.equal(done.status, "completed", show(done));
  assert.equal(done.text, "echo:paused-a", show(done));

  // A pause made over MCP is A's too: B's MCP resume and HTTP read do not find it.
  const aMcp = await mcpClient(s, a.token);
  const bMcp2 = await mcpClient(s, b.token);
  try {
    const paused = await aMcp.callTool({ name: "execute", arguments: { code: echoCode(slug, "mcp-a", "user", "mine") } });
    assert.equal(paused.structuredContent?.status, "waiting_for_interaction", show(paused));
    const mid = paused.structuredContent.executionId;
    const stolen = await bMcp2.callTool({ name: "resume", arguments: { executionId: mid, action: "accept" } });
    assert.equal(stolen.isError, true, show(stolen));
    assert.equal(stolen.structuredContent?.status, "execution_not_found", show(stolen));
    assertTag(await b.api("GET", `/api/executions/${mid}`), 404, "ExecutionNotFoundError", "B reads A's MCP pause");
    const mine = await aMcp.callTool({ name: "resume", arguments: { executionId: mid, action: "accept" } });
    assert.equal(mine.structuredContent?.status, "completed", show(mine));
    assert.equal(mine.structuredContent.result, "echo:mcp-a", show(mine));
  } finally {
    await aMcp.close();
    await bMcp2.close();
  }

  // A pause left open across a restart is still A's only; so is a new one.
  const p2 = await pauseOf(a, echoCode(slug, "across", "user", "mine"));
  s = await s.restart();
  servers.push(s);
  a = await signIn(s, a);
  b = await signIn(s, b);
  await assertNotTheirs(b, p2, "B after the restart");
  assertOk(await a.api("GET", `/api/executions/${p2}`), "A reads the pause after the restart");
  const done2 = assertOk(await a.api("POST", `/api/executions/${p2}/resume`, { action: "accept" }));
  assert.equal(done2.text, "echo:across", show(done2));
  const p3 = await pauseOf(a, echoCode(slug, "after", "user", "mine"));
  await assertNotTheirs(b, p3, "B, new pause after the restart");
  const done3 = assertOk(await a.api("POST", `/api/executions/${p3}/resume`, { action: "accept" }));
  assert.equal(done3.text, "echo:after", show(done3));
  await invisible(b, "B after the restart");
});

// ---- 6. API keys ---------------------------------------------------------------------------------

test("API keys: shown once, listed obfuscated, act as their user on /api and /mcp, lastUsedAt, refused once deleted", T, async () => {
  const { team, owner } = await shared();
  const created = await owner.api("POST", "/api/account/api-keys", { name: "ci agent" });
  const key = assertOk(created, "create key");
  assert.match(key.value ?? "", /^exk_[A-Za-z0-9_-]{20,}$/, show(key));
  assert.equal(key.name, "ci agent");
  assert.equal(typeof key.id, "string");
  assert.equal(typeof key.createdAt, "number");
  assert.equal(typeof key.updatedAt, "number");
  assert.equal(key.lastUsedAt, null, show(key));
  assert.ok(key.obfuscatedValue?.startsWith("exk_"), show(key));
  assert.ok(!key.obfuscatedValue.includes(key.value) && key.obfuscatedValue.length < key.value.length, show(key));

  const dflt = assertOk(await owner.api("POST", "/api/account/api-keys", {}), "default name");
  assert.equal(dflt.name, "API key", show(dflt));
  assert.deepEqual(assertOk(await owner.api("DELETE", `/api/account/api-keys/${dflt.id}`)), { success: true });
  assert.equal((await owner.api("POST", "/api/account/api-keys", { name: "k".repeat(101) })).status, 400, "a name over 100 characters");

  const listed = await owner.api("GET", "/api/account/api-keys");
  const row = assertOk(listed).apiKeys.find((k) => k.id === key.id);
  assert.ok(row, show(listed.body));
  assert.equal(row.value, undefined, `the list never shows the value: ${show(row)}`);
  assert.equal(row.obfuscatedValue, key.obfuscatedValue);
  assert.ok(!listed.text.includes(key.value), "the value is nowhere in the list");

  const me = assertOk(await team.request("GET", "/api/account/me", { token: key.value }), "me with the key");
  assert.equal(me.user.id, owner.id);
  assert.equal(me.role, "owner");

  const client = await mcpClient(team, key.value);
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "execute"), show(tools));
    const r = await client.callTool({ name: "execute", arguments: { code: "return 1 + 1" } });
    assert.notEqual(r.isError, true, show(r));
    assert.equal(r.structuredContent?.result, 2, show(r));
  } finally {
    await client.close();
  }
  const usedRow = await pollUntil(async () => assertOk(await owner.api("GET", "/api/account/api-keys")).apiKeys.find((k) => k.id === key.id && typeof k.lastUsedAt === "number"), { timeoutMs: 5000, intervalMs: 250 });
  assert.ok(usedRow, "lastUsedAt is set after use");
  assert.ok(usedRow.lastUsedAt >= key.createdAt, show(usedRow));

  // Someone else's keys: not listed, not deletable.
  const mo = await invitePerson(team, owner, { name: "Moe" });
  const moKeys = assertOk(await mo.api("GET", "/api/account/api-keys")).apiKeys;
  assert.ok(!moKeys.some((k) => k.id === key.id), show(moKeys));
  const steal = await mo.api("DELETE", `/api/account/api-keys/${key.id}`);
  assert.notEqual(steal.status, 200, `a member deletes the owner's key: ${steal.text}`);
  assertOk(await team.request("GET", "/api/account/me", { token: key.value }), "the key survives another's delete");

  assert.deepEqual(assertOk(await owner.api("DELETE", `/api/account/api-keys/${key.id}`), "delete"), { success: true });
  assertTag(await team.request("GET", "/api/account/me", { token: key.value }), 401, "AccountUnauthorized", "a deleted key on /api");
  const raw = await mcpInitialize(team, key.value);
  assert.equal(raw.status, 401, `a deleted key on /mcp: ${raw.text}`);
  assert.equal(raw.body?.error?.code, -32001, show(raw.body));
  await assert.rejects(mcpClient(team, key.value), (e) => /401/.test(String(e?.message)) || e?.code === 401, "the SDK cannot connect with a deleted key");
  assert.ok(!assertOk(await owner.api("GET", "/api/account/api-keys")).apiKeys.some((k) => k.id === key.id));
});

// ---- 7. MCP OAuth --------------------------------------------------------------------------------

test("MCP OAuth 2.1: challenge, metadata, registration, PKCE, consent, tokens, refresh rotation and reuse, refusals", T, async () => {
  const { team, owner } = await shared();
  const B = team.baseUrl;

  const un = await mcpInitialize(team);
  assert.equal(un.status, 401, un.text);
  const challenge = un.headers["www-authenticate"] ?? "";
  assert.match(challenge, /^Bearer\b/, challenge);
  assert.ok(challenge.includes(`resource_metadata="${B}/.well-known/oauth-protected-resource/mcp"`), challenge);
  assert.equal(un.body?.error?.code, -32001, show(un.body));
  assert.equal((await mcpInitialize(team, `exo_${randomBytes(16).toString("hex")}`)).status, 401, "a bogus exo_ token");

  const prm = assertOk(await team.request("GET", "/.well-known/oauth-protected-resource/mcp"), "protected resource metadata");
  assert.equal(prm.resource, `${B}/mcp`, show(prm));
  assert.deepEqual(prm.authorization_servers, [B], show(prm));
  assert.deepEqual(prm.scopes_supported, ["mcp"], show(prm));
  assert.deepEqual(prm.bearer_methods_supported, ["header"], show(prm));
  assert.equal(prm.resource_name, "Executor", show(prm));
  const bare = assertOk(await team.request("GET", "/.well-known/oauth-protected-resource"), "bare protected resource metadata");
  assert.deepEqual(bare.authorization_servers, [B], show(bare));

  const as = assertOk(await team.request("GET", "/.well-known/oauth-authorization-server"), "authorization server metadata");
  assert.equal(as.issuer, B, show(as));
  assert.equal(as.authorization_endpoint, `${B}/api/auth/mcp/authorize`);
  assert.equal(as.token_endpoint, `${B}/api/auth/mcp/token`);
  assert.equal(as.registration_endpoint, `${B}/api/auth/mcp/register`);
  assert.equal(as.revocation_endpoint, `${B}/api/auth/mcp/revoke`);
  assert.deepEqual(as.response_types_supported, ["code"]);
  assert.deepEqual(as.grant_types_supported, ["authorization_code", "refresh_token"]);
  assert.deepEqual(as.code_challenge_methods_supported, ["S256"]);
  assert.deepEqual(as.token_endpoint_auth_methods_supported, ["none"]);
  assert.deepEqual(as.scopes_supported, ["mcp"]);

  const reg = await registerOAuthClient(team, { clientName: "e2e agent", redirectUris: [REDIRECT] });
  assert.equal(reg.status, 201, reg.text);
  const client = reg.body;
  assert.equal(typeof client.client_id, "string", show(client));
  assert.equal(typeof client.client_id_issued_at, "number", show(client));
  assert.equal(client.token_endpoint_auth_method, "none", show(client));
  assert.equal(client.client_name, "e2e agent", show(client));
  assert.deepEqual(client.redirect_uris, [REDIRECT], show(client));
  assert.equal((await team.request("POST", "/api/auth/mcp/register", { body: { client_name: "no uris" } })).status, 400, "registration without redirect_uris");

  // Authorize → consent → code.
  const { verifier, challenge: pkceChallenge } = pkce();
  const state = randomBytes(6).toString("hex");
  const params = { response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: pkceChallenge, code_challenge_method: "S256", state, scope: "mcp", resource: `${B}/mcp` };
  const auth = await authorizeRaw(team, params);
  assert.equal(auth.status, 302, `${auth.status} ${auth.text.slice(0, 500)}`);
  const loc = new URL(auth.headers.location, B);
  assert.equal(`${loc.origin}${loc.pathname}`, `${B}/oauth/consent`, auth.headers.location);
  const requestId = consentRequestId(team, auth);
  assert.ok(requestId, auth.headers.location);

  assertTag(await team.request("GET", `/api/auth/mcp/requests/${requestId}`), 401, "AccountUnauthorized", "consent request without sign-in");
  const view = assertOk(await owner.api("GET", `/api/auth/mcp/requests/${requestId}`), "consent request");
  assert.equal(view.clientName, "e2e agent", show(view));
  assert.equal(view.redirectOrigin, "http://127.0.0.1:9", show(view));
  assert.deepEqual(view.scopes.map((x) => x.scope), ["mcp"], show(view));
  assert.equal(typeof view.scopes[0].description, "string", show(view));
  assert.equal(view.resource, `${B}/mcp`, show(view));

  const approved = assertOk(await owner.api("POST", `/api/auth/mcp/requests/${requestId}`, { approve: true }), "approve");
  const back = new URL(approved.redirectTo);
  assert.equal(`${back.origin}${back.pathname}`, REDIRECT, approved.redirectTo);
  assert.equal(back.searchParams.get("state"), state, approved.redirectTo);
  const code = back.searchParams.get("code");
  assert.ok(code, approved.redirectTo);

  const exchange = { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: REDIRECT, client_id: client.client_id, resource: `${B}/mcp` };
  const t1 = assertOk(await tokenRequest(team, exchange), "code exchange");
  assert.match(t1.access_token ?? "", /^exo_/, show(t1));
  assert.match(t1.refresh_token ?? "", /^exr_/, show(t1));
  assert.equal(t1.token_type, "Bearer", show(t1));
  assert.equal(t1.expires_in, 3600, show(t1));
  assert.equal(t1.scope, "mcp", show(t1));

  const mcp = await mcpClient(team, t1.access_token);
  try {
    const { tools } = await mcp.listTools();
    assert.ok(tools.some((t) => t.name === "execute"), show(tools));
    const r = await mcp.callTool({ name: "execute", arguments: { code: "return 1" } });
    assert.notEqual(r.isError, true, show(r));
    assert.equal(r.structuredContent?.result, 1, show(r));
    assert.equal(textOf(r), "1", show(r));
  } finally {
    await mcp.close();
  }
  assertTag(await team.request("GET", "/api/account/me", { token: t1.access_token }), 401, "AccountUnauthorized", "an OAuth token on /api");

  // Refresh rotates; presenting a used refresh token revokes the whole grant.
  const t2 = assertOk(await tokenRequest(team, { grant_type: "refresh_token", refresh_token: t1.refresh_token, client_id: client.client_id }), "refresh");
  assert.match(t2.access_token ?? "", /^exo_/, show(t2));
  assert.match(t2.refresh_token ?? "", /^exr_/, show(t2));
  assert.notEqual(t2.access_token, t1.access_token);
  assert.notEqual(t2.refresh_token, t1.refresh_token);
  assert.equal((await mcpInitialize(team, t2.access_token)).status, 200, "the new access token works");
  const reuse = await tokenRequest(team, { grant_type: "refresh_token", refresh_token: t1.refresh_token, client_id: client.client_id });
  assert.equal(reuse.status, 400, reuse.text);
  assert.equal(reuse.body?.error, "invalid_grant", show(reuse.body));
  assert.equal((await mcpInitialize(team, t2.access_token)).status, 401, "the grant is revoked: the new access token is refused");
  const after = await tokenRequest(team, { grant_type: "refresh_token", refresh_token: t2.refresh_token, client_id: client.client_id });
  assert.equal(after.status, 400, after.text);
  assert.equal(after.body?.error, "invalid_grant", show(after.body));

  // PKCE is required, S256 only.
  for (const [what, extra] of [
    ["code_challenge_method=plain", { code_challenge: verifier, code_challenge_method: "plain" }],
    ["no code_challenge", { code_challenge: undefined, code_challenge_method: undefined }],
  ]) {
    const r = await authorizeRaw(team, { ...params, ...extra });
    assert.equal(consentRequestId(team, r), null, `${what} must not reach consent: ${r.status} ${r.headers.location}`);
    if (r.status === 302 || r.status === 303) {
      const u = new URL(r.headers.location, B);
      assert.equal(`${u.origin}${u.pathname}`, REDIRECT, `${what}: errors go back to the redirect URI: ${r.headers.location}`);
      assert.ok(u.searchParams.get("error"), `${what}: ${r.headers.location}`);
      assert.equal(u.searchParams.get("state"), state, `${what}: ${r.headers.location}`);
    } else {
      assert.equal(r.status, 400, `${what}: ${r.status} ${r.text.slice(0, 300)}`);
    }
  }
  // A bad client or redirect URI: an HTML error page, never a redirect.
  for (const [what, extra] of [
    ["an unknown client", { client_id: "no-such-client" }],
    ["an unregistered redirect URI", { redirect_uri: "http://127.0.0.1:9/elsewhere" }],
  ]) {
    const r = await authorizeRaw(team, { ...params, ...extra });
    assert.ok(r.status >= 400 && r.status < 500, `${what}: ${r.status} ${show(r.headers)}`);
    assert.equal(r.headers.location, undefined, `${what}: no redirect`);
    assert.match(r.headers["content-type"] ?? "", /text\/html/, `${what}: ${show(r.headers)}`);
  }

  // A wrong code_verifier.
  {
    const p = pkce();
    const a2 = await authorizeRaw(team, { ...params, code_challenge: p.challenge });
    const id2 = consentRequestId(team, a2);
    assert.ok(id2, `${a2.status} ${a2.headers.location}`);
    const ok2 = assertOk(await owner.api("POST", `/api/auth/mcp/requests/${id2}`, { approve: true }));
    const code2 = new URL(ok2.redirectTo).searchParams.get("code");
    const bad = await tokenRequest(team, { ...exchange, code: code2, code_verifier: pkce().verifier });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.body?.error, "invalid_grant", show(bad.body));
  }
  // Denied consent.
  {
    const a3 = await authorizeRaw(team, params);
    const id3 = consentRequestId(team, a3);
    assert.ok(id3, `${a3.status} ${a3.headers.location}`);
    const no = assertOk(await owner.api("POST", `/api/auth/mcp/requests/${id3}`, { approve: false }), "deny");
    const u = new URL(no.redirectTo);
    assert.equal(`${u.origin}${u.pathname}`, REDIRECT, no.redirectTo);
    assert.equal(u.searchParams.get("error"), "access_denied", no.redirectTo);
    assert.equal(u.searchParams.get("state"), state, no.redirectTo);
    assert.equal(u.searchParams.get("code"), null, no.redirectTo);
  }
  // The code is bound to its client and redirect URI.
  {
    const reg2 = await registerOAuthClient(team, { clientName: "other agent", redirectUris: [REDIRECT] });
    assert.equal(reg2.status, 201, reg2.text);
    const other = reg2.body.client_id;
    for (const [what, change] of [
      ["another client_id", { client_id: other }],
      ["another redirect_uri", { redirect_uri: "http://127.0.0.1:9/elsewhere" }],
    ]) {
      const p = pkce();
      const a5 = await authorizeRaw(team, { ...params, code_challenge: p.challenge });
      const id5 = consentRequestId(team, a5);
      assert.ok(id5, `${a5.status} ${a5.headers.location}`);
      const ok5 = assertOk(await owner.api("POST", `/api/auth/mcp/requests/${id5}`, { approve: true }));
      const r = await tokenRequest(team, { ...exchange, code: new URL(ok5.redirectTo).searchParams.get("code"), code_verifier: p.verifier, ...change });
      assert.ok(r.status === 400 || r.status === 401, `${what}: ${r.status} ${r.text}`);
      assert.ok(["invalid_grant", "invalid_client"].includes(r.body?.error), `${what}: ${show(r.body)}`);
    }
    const unsupported = await tokenRequest(team, { grant_type: "password", username: owner.email, password: owner.password, client_id: client.client_id });
    assert.equal(unsupported.status, 400, unsupported.text);
    assert.equal(unsupported.body?.error, "unsupported_grant_type", show(unsupported.body));
  }
  // A code is used once (a replay may also revoke what the code gave, RFC 6749 §4.1.2: checked on
  // a grant of its own).
  {
    const p = pkce();
    const a4 = await authorizeRaw(team, { ...params, code_challenge: p.challenge });
    const id4 = consentRequestId(team, a4);
    assert.ok(id4, `${a4.status} ${a4.headers.location}`);
    const ok4 = assertOk(await owner.api("POST", `/api/auth/mcp/requests/${id4}`, { approve: true }));
    const ex4 = { ...exchange, code: new URL(ok4.redirectTo).searchParams.get("code"), code_verifier: p.verifier };
    assertOk(await tokenRequest(team, ex4), "first exchange");
    const replay = await tokenRequest(team, ex4);
    assert.equal(replay.status, 400, `a code is used once: ${replay.text}`);
    assert.equal(replay.body?.error, "invalid_grant", show(replay.body));
  }
  // Revocation (RFC 7009).
  {
    const g = await oauthGrant(team, owner.token, { client });
    assert.equal((await mcpInitialize(team, g.tokens.access_token)).status, 200);
    const rv = await team.request("POST", "/api/auth/mcp/revoke", { form: { token: g.tokens.access_token } });
    assert.equal(rv.status, 200, rv.text);
    assert.equal((await mcpInitialize(team, g.tokens.access_token)).status, 401, "a revoked access token");
  }
});

test("MCP OAuth: a token is bound to the resource it was issued for (/mcp vs /mcp/toolkits/<slug>)", T, async () => {
  const { team, owner } = await shared();
  const B = team.baseUrl;
  const kitSlug = `kit-${randomBytes(3).toString("hex")}`;
  assertOk(await owner.api("POST", "/api/toolkits", { owner: "org", name: "OAuth kit", slug: kitSlug }), "toolkit");
  const kitPath = `/mcp/toolkits/${kitSlug}`;

  const un = await mcpInitialize(team, undefined, kitPath);
  assert.equal(un.status, 401, un.text);
  assert.ok((un.headers["www-authenticate"] ?? "").includes(`resource_metadata="${B}/.well-known/oauth-protected-resource${kitPath}"`), un.headers["www-authenticate"]);
  const prm = assertOk(await team.request("GET", `/.well-known/oauth-protected-resource${kitPath}`), "toolkit metadata");
  assert.equal(prm.resource, `${B}${kitPath}`, show(prm));

  const forMcp = await oauthGrant(team, owner.token);
  const forKit = await oauthGrant(team, owner.token, { resource: `${B}${kitPath}` });
  assert.equal((await mcpInitialize(team, forMcp.tokens.access_token)).status, 200, "the /mcp token on /mcp");
  assert.equal((await mcpInitialize(team, forKit.tokens.access_token, kitPath)).status, 200, "the toolkit token on the toolkit");
  assert.equal((await mcpInitialize(team, forKit.tokens.access_token)).status, 401, "the toolkit token on /mcp");
  assert.equal((await mcpInitialize(team, forMcp.tokens.access_token, kitPath)).status, 401, "the /mcp token on the toolkit");
});

test("MCP OAuth with the SDK's own OAuthClientProvider (auth(), finishAuth), no browser", T, async () => {
  const { team, owner } = await shared();
  const url = new URL(`${team.baseUrl}/mcp`);
  const provider = new HeadlessOAuthProvider(team, owner.token);
  const first = new Client({ name: "e2e-sdk-oauth", version: "0.0.1" }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
  // The SDK discovers, registers, sends the "user" to authorize (our headless consent) and stops.
  await assert.rejects(first.connect(transport), (e) => e instanceof UnauthorizedError, "the first connect ends in the redirect");
  assert.equal(provider.redirects.length, 1, show(provider.redirects));
  const authUrl = new URL(provider.redirects[0]);
  assert.equal(`${authUrl.origin}${authUrl.pathname}`, `${team.baseUrl}/api/auth/mcp/authorize`);
  assert.equal(authUrl.searchParams.get("code_challenge_method"), "S256");
  assert.equal(provider.consentRequests[0]?.clientName, "e2e SDK agent", show(provider.consentRequests));
  assert.ok(provider.code, "the consent redirect carried a code");
  assert.equal(provider.returnedState, provider._state, "the state came back");
  assert.equal(typeof provider.clientInformation()?.client_id, "string", "registered dynamically");

  await transport.finishAuth(provider.code);
  const tokens = provider.tokens();
  assert.match(tokens?.access_token ?? "", /^exo_/, show(tokens));
  assert.match(tokens?.refresh_token ?? "", /^exr_/, show(tokens));
  await first.close().catch(() => {});

  const client = new Client({ name: "e2e-sdk-oauth", version: "0.0.1" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "execute"), show(tools));
    const r = await client.callTool({ name: "execute", arguments: { code: "return 1" } });
    assert.equal(r.structuredContent?.result, 1, show(r));
  } finally {
    await client.close();
  }
});

// ---- 8. device login from the CLI ---------------------------------------------------------------

/** The CLI's environment: nothing from ours chooses a server or a token. */
function cliEnv(dataDir, extra = {}) {
  const base = { ...process.env };
  for (const k of ["EXECUTOR_API_KEY", "EXECUTOR_AUTH_TOKEN", "EXECUTOR_BASE_URL", "EXECUTOR_SERVER", "PORT", "EXECUTOR_WEB_BASE_URL"]) delete base[k];
  // BROWSER=true: anything that tries to open a browser runs `true` and moves on.
  return { ...base, NO_COLOR: "1", RUST_BACKTRACE: "1", BROWSER: "true", DISPLAY: "", EXECUTOR_DATA_DIR: dataDir, EXECUTOR_SCOPE_DIR: dataDir, ...extra };
}

/** Start the CLI; {child, out(), err(), done: Promise<{code, signal, stdout, stderr}>}. */
function startCli(args, { dataDir, timeoutMs = 60_000 } = {}) {
  const child = spawn(EXECUTOR_BIN, args, { cwd: dataDir, env: cliEnv(dataDir), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const timer = setTimeout(() => {
    stderr += `\n[test] killed after ${timeoutMs} ms`;
    child.kill("SIGKILL");
  }, timeoutMs);
  const done = new Promise((resolve) => {
    child.once("error", (e) => (stderr += `\n[spawn error] ${e}`));
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, args });
    });
  });
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { child, out: () => stdout, err: () => stderr, done };
}
const cli = (args, opts) => startCli(args, opts).done;
const said = (r) => `\n$ executor ${r.args.join(" ")}\n--- exit: ${r.code} ${r.signal ?? ""}\n--- stdout:\n${r.stdout.slice(-3000)}\n--- stderr:\n${r.stderr.slice(-3000)}`;

/** Every string in a JSON value. */
const stringsIn = (v, out = []) => {
  if (typeof v === "string") out.push(v);
  else if (Array.isArray(v)) v.forEach((x) => stringsIn(x, out));
  else if (v && typeof v === "object") Object.values(v).forEach((x) => stringsIn(x, out));
  return out;
};

test("device login: the protocol, then `executor login` approved by the owner; whoami, call, tools search, logout", T, async (t) => {
  const { team, owner } = await shared();
  const B = team.baseUrl;
  const discovery = assertOk(await team.request("GET", "/api/auth/cli-login"), "cli-login (public)");
  assert.equal(discovery.provider, "executor", show(discovery));
  assert.equal(discovery.deviceAuthorizationEndpoint, `${B}/api/auth/device/code`, show(discovery));
  assert.equal(discovery.tokenEndpoint, `${B}/api/auth/device/token`, show(discovery));
  assert.equal(discovery.clientId, "executor-cli", show(discovery));
  assert.equal(discovery.requestFormat, "json", show(discovery));

  // The protocol by hand: pending, denied, approved.
  const grantType = "urn:ietf:params:oauth:grant-type:device_code";
  const newCode = async () => {
    const dc = assertOk(await team.request("POST", "/api/auth/device/code", { body: { client_id: "executor-cli" } }), "device code");
    assert.match(dc.user_code ?? "", /^[A-Z0-9]{4}-[A-Z0-9]{4}$/, show(dc));
    assert.equal(typeof dc.device_code, "string", show(dc));
    assert.equal(dc.verification_uri, `${B}/device`, show(dc));
    assert.equal(dc.verification_uri_complete, `${B}/device?user_code=${dc.user_code}`, show(dc));
    assert.equal(dc.expires_in, 600, show(dc));
    assert.equal(dc.interval, 5, show(dc));
    return dc;
  };
  const poll = (dc) => team.request("POST", "/api/auth/device/token", { body: { grant_type: grantType, device_code: dc.device_code, client_id: "executor-cli" } });
  assert.ok((await team.request("POST", "/api/auth/device/code", { body: { client_id: "someone-else" } })).status >= 400, "an unknown client_id");

  const pending = await newCode();
  const p = await poll(pending);
  assert.equal(p.status, 400, p.text);
  assert.equal(p.body?.error, "authorization_pending", show(p.body));
  assertTag(await team.request("GET", `/api/auth/device/${pending.user_code}`), 401, "AccountUnauthorized", "device status without sign-in");
  const st = assertOk(await owner.api("GET", `/api/auth/device/${pending.user_code}`), "device status");
  assert.deepEqual({ userCode: st.userCode, clientId: st.clientId, status: st.status }, { userCode: pending.user_code, clientId: "executor-cli", status: "pending" });

  const denied = await newCode();
  assert.equal(assertOk(await owner.api("POST", "/api/auth/device/approve", { userCode: denied.user_code, approve: false })).status, "denied");
  const d = await poll(denied);
  assert.equal(d.status, 400, d.text);
  assert.equal(d.body?.error, "access_denied", show(d.body));

  const approved = await newCode();
  assert.equal(assertOk(await owner.api("POST", "/api/auth/device/approve", { userCode: approved.user_code, approve: true })).status, "approved");
  const a = assertOk(await poll(approved), "token after approval");
  assert.equal(a.token_type, "Bearer", show(a));
  assert.equal(assertOk(await team.request("GET", "/api/account/me", { token: a.access_token }), "device session").user.id, owner.id);
  const used = await poll(approved);
  assert.equal(used.status, 400, `a device code gives one token: ${used.text}`);

  // The CLI.
  const { slug } = await addMcpIntegration(owner.ex, fixture.url, { name: "CLI over team" });
  const cliDir = await makeDataDir("executor-team-cli-");
  cleanups.push(async () => {
    // Should a command have fallen back to auto-starting a local daemon, stop it.
    try {
      const m = JSON.parse(fs.readFileSync(path.join(cliDir, "server-control", "server.json"), "utf8"));
      if (m?.pid) process.kill(m.pid, "SIGKILL");
    } catch {}
    await fsp.rm(cliDir, { recursive: true, force: true });
  });
  const login = startCli(["login", "--base-url", B], { dataDir: cliDir });
  const userCode = await pollUntil(
    () => {
      const text = login.out() + login.err();
      return /user_code=([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(text)?.[1] ?? /\b([A-Z0-9]{4}-[A-Z0-9]{4})\b/.exec(text)?.[1];
    },
    { timeoutMs: 20_000, intervalMs: 100 },
  );
  assert.ok(userCode, `the CLI prints a user code\n--- stdout:\n${login.out()}\n--- stderr:\n${login.err()}`);
  assert.ok((login.out() + login.err()).includes(`${B}/device`), `the CLI prints the verification URL\n${login.out()}${login.err()}`);
  assert.equal(assertOk(await owner.api("GET", `/api/auth/device/${userCode}`), "CLI's code").status, "pending");
  assert.equal(assertOk(await owner.api("POST", "/api/auth/device/approve", { userCode, approve: true })).status, "approved");
  const loggedIn = await login.done;
  assert.equal(loggedIn.code, 0, `login exits 0${said(loggedIn)}`);

  // The profile it saved is the default, so later commands need no flags.
  const profilesFile = path.join(cliDir, "server-connections.json");
  assert.ok(fs.existsSync(profilesFile), `login saved a profile in ${profilesFile}${said(loggedIn)}`);
  const profiles = JSON.parse(fs.readFileSync(profilesFile, "utf8"));
  assert.ok(profiles.defaultProfile, `a default profile: ${Object.keys(profiles)}`);
  let savedToken;
  for (const candidate of stringsIn(profiles).filter((x) => x.length >= 20 && !x.startsWith("http"))) {
    if ((await team.request("GET", "/api/account/me", { token: candidate })).status === 200) savedToken = candidate;
  }

  const who = await cli(["whoami"], { dataDir: cliDir });
  assert.equal(who.code, 0, said(who));
  assert.ok(who.stdout.toLowerCase().includes(owner.email.toLowerCase()), `whoami prints the owner's email${said(who)}`);

  const call = await cli(["call", slug, "org", "main", "echo", '{"message":"via cli"}'], { dataDir: cliDir });
  assert.equal(call.code, 0, said(call));
  assert.deepEqual(JSON.parse(call.stdout), { content: [{ type: "text", text: "echo:via cli" }] }, said(call));
  const search = await cli(["tools", "search", "echo", "--namespace", slug], { dataDir: cliDir });
  assert.equal(search.code, 0, said(search));
  assert.match(search.stdout, new RegExp(`^${slug}\\.org\\.main\\.echo\\s`, "m"), said(search));

  const out = await cli(["logout"], { dataDir: cliDir });
  assert.equal(out.code, 0, said(out));
  if (savedToken) {
    assertTag(await team.request("GET", "/api/account/me", { token: savedToken }), 401, "AccountUnauthorized", "logout revokes the CLI's session");
  }
  const gone = await cli(["whoami"], { dataDir: cliDir });
  assert.notEqual(gone.code, 0, `whoami after logout fails${said(gone)}`);
  assert.equal(gone.signal, null, said(gone));
  assert.ok(!fs.existsSync(path.join(cliDir, "server-control", "server.json")), "no local daemon was started by the CLI");
  if (!savedToken) t.diagnostic("no token that signs in was found in server-connections.json: could not check that logout revokes the session");
});

// ---- 9. audit --------------------------------------------------------------------------------------

test("audit: changes and tool calls with actor, via and outcome; filters and paging; admin-only; no secrets", T, async (t) => {
  const { team, owner } = await shared();
  const mo = await invitePerson(team, owner, { name: "Audited Member" });
  const { slug } = await addMcpIntegration(owner.ex, fixture.url, { name: "Audited MCP" });
  const pattern = `${slug}.*.*.structured_tool`;
  const policy = assertOk(await owner.api("POST", "/api/policies", { owner: "org", pattern, action: "block" }), "org policy");
  const key = assertOk(await owner.api("POST", "/api/account/api-keys", { name: "audited key" }), "api key");
  const pasted = `pasted-secret-${randomBytes(12).toString("hex")}`;
  const hdr = freshSlug("hdr");
  assertOk(await owner.api("POST", "/api/mcp/servers", { transport: "remote", name: "Keyed MCP", endpoint: fixture.url, slug: hdr, remoteTransport: "streamable-http", auth: { kind: "header", headerName: "X-Api-Key" } }), "keyed MCP");
  assertOk(await mo.api("POST", "/api/connections", { owner: "user", name: "keyed", integration: hdr, template: "header", value: pasted }), "a connection with a pasted secret");

  assertTag(await mo.api("POST", "/api/policies", { owner: "org", pattern: `${slug}.*`, action: "approve" }), 403, "OrgWriteDeniedError", "a member's org policy");
  assert.equal(assertOk(await mo.execute(echoCode(slug, "audited"))).text, "echo:audited");
  assertOk(await mo.execute(`return await tools.${slug}.org.main.fail_tool({})`));
  assertOk(await mo.execute(`return await tools.${slug}.org.main.structured_tool({ n: 1 })`));
  assertOk(await team.request("POST", "/api/executions", { token: key.value, body: { code: echoCode(slug, "by key"), autoApprove: true } }), "execute with the key");
  const grant = await oauthGrant(team, mo.token);
  const agent = await mcpClient(team, grant.tokens.access_token);
  try {
    const r = await agent.callTool({ name: "execute", arguments: { code: `return await tools.${slug}.org.main.get_workspace({})` } });
    assert.equal(r.structuredContent?.status, "completed", show(r));
  } finally {
    await agent.close();
  }
  assert.equal(assertOk(await owner.api("PATCH", `/api/account/members/${mo.id}/role`, { roleSlug: "admin" })).role, "admin");
  assert.equal(assertOk(await owner.api("PATCH", `/api/account/members/${mo.id}/role`, { roleSlug: "member" })).role, "member");

  const events = async (q = "") => {
    const r = await owner.api("GET", `/api/admin/audit-events${q}`);
    const body = assertOk(r, `audit ${q}`);
    assert.ok(Array.isArray(body.events), show(body));
    return { ...body, text: r.text };
  };
  // The log may be written just after the answer: wait (bounded) until every event above is in.
  const expected = (E) => {
    const has = (f) => E.some(f);
    const toolCall = (tool, actor) => (e) => e.kind === "tool_call" && e.action.endsWith(`${slug}.org.main.${tool}`) && e.actor?.userId === actor;
    return (
      has((e) => e.action === "policy.create" && JSON.stringify(e).includes(pattern)) &&
      has((e) => e.action === "apiKey.create" && e.actor?.userId === owner.id) &&
      has((e) => e.kind === "change" && e.actor?.userId === mo.id && e.outcome === "denied") &&
      ["echo", "fail_tool", "structured_tool", "get_workspace"].every((tool) => has(toolCall(tool, mo.id))) &&
      has(toolCall("echo", owner.id)) &&
      E.filter((e) => e.action === "member.role" && [mo.id, mo.email.toLowerCase()].includes(String(e.target).toLowerCase())).length >= 2
    );
  };
  const waitFrom = Date.now();
  let all = await events("?limit=200");
  while (!expected(all.events) && Date.now() - waitFrom < 5000) {
    await new Promise((r) => setTimeout(r, 100));
    all = await events("?limit=200");
  }
  t.diagnostic(`the audit log had every event ${Date.now() - waitFrom} ms after the last change`);
  const E = all.events;
  for (let i = 1; i < E.length; i++) assert.ok(E[i - 1].at >= E[i].at, `newest first: ${show([E[i - 1], E[i]])}`);

  const change = E.find((e) => e.kind === "change" && e.action.includes("policy") && JSON.stringify(e).includes(pattern));
  assert.ok(change, `a policy change event: ${show(E.filter((e) => e.kind === "change"))}`);
  assert.equal(change.action, "policy.create", show(change));
  assert.equal(change.actor?.userId, owner.id, show(change));
  assert.equal(change.actor?.email?.toLowerCase(), owner.email.toLowerCase(), show(change));
  assert.equal(change.via, "session", show(change));
  assert.equal(change.outcome, "ok", show(change));
  assert.ok(Math.abs(change.at - policy.createdAt) < 60_000, show(change));
  assert.ok(E.some((e) => e.kind === "change" && e.action === "apiKey.create" && e.actor?.userId === owner.id), `an apiKey.create event: ${show(E.filter((e) => e.kind === "change"))}`);

  // The contract: `action` is "the tool's address for a call", and an address is
  // `tools.<integration>.<owner>.<connection>.<tool>` (spec §1.5). Found by either spelling here
  // (the policy-id form has no `tools.` root), the spelling asserted at the end.
  const call = (tool, actor) =>
    E.find((e) => e.kind === "tool_call" && [`tools.${slug}.org.main.${tool}`, `${slug}.org.main.${tool}`].includes(e.action) && e.actor?.userId === actor);
  const calls = E.filter((e) => e.kind === "tool_call");
  for (const [tool, outcome] of [
    ["echo", "ok"],
    ["fail_tool", "error"],
    ["structured_tool", "denied"],
  ]) {
    const e = call(tool, mo.id);
    assert.ok(e, `a tool_call event for ${tool}: ${show(calls)}`);
    assert.equal(e.outcome, outcome, show(e));
    assert.equal(e.via, "session", show(e));
    assert.equal(e.actor.email.toLowerCase(), mo.email.toLowerCase(), show(e));
  }
  const byKey = call("echo", owner.id);
  assert.ok(byKey, `the key's call: ${show(calls)}`);
  assert.equal(byKey.via, "api_key", show(byKey));

  const refused = E.find((e) => e.kind === "change" && e.actor?.userId === mo.id && e.outcome === "denied");
  assert.ok(refused, `the member's refused write is recorded as denied: ${show(E.filter((e) => e.actor?.userId === mo.id))}`);
  const viaOAuth = call("get_workspace", mo.id);
  assert.ok(viaOAuth, `the OAuth agent's call: ${show(calls)}`);
  assert.equal(viaOAuth.via, "oauth", show(viaOAuth));
  assert.equal(viaOAuth.outcome, "ok", show(viaOAuth));
  const roleChanges = E.filter((e) => e.kind === "change" && e.action === "member.role" && e.actor?.userId === owner.id && [mo.id, mo.email.toLowerCase()].includes(String(e.target).toLowerCase()));
  assert.equal(roleChanges.length, 2, `two member.role events: ${show(E.filter((e) => e.kind === "change"))}`);
  assert.ok(JSON.stringify(roleChanges[1].after ?? "").includes("admin") && JSON.stringify(roleChanges[0].after ?? "").includes("member"), show(roleChanges));

  const onlyCalls = await events("?kind=tool_call&limit=200");
  assert.ok(onlyCalls.events.length >= 4 && onlyCalls.events.every((e) => e.kind === "tool_call"), show(onlyCalls.events.map((e) => e.kind)));
  const byActor = await events(`?actor=${encodeURIComponent(mo.id)}&limit=200`);
  assert.ok(byActor.events.length >= 3 && byActor.events.every((e) => e.actor?.userId === mo.id), show(byActor.events));
  const byAction = await events("?action=policy&limit=200");
  assert.ok(byAction.events.length >= 1 && byAction.events.every((e) => e.action.includes("policy")), show(byAction.events));

  const page1 = await events("?limit=1");
  assert.equal(page1.events.length, 1, show(page1));
  assert.notEqual(page1.nextBefore, null, show(page1));
  const page2 = await events(`?limit=1&before=${encodeURIComponent(page1.nextBefore)}`);
  assert.equal(page2.events.length, 1, show(page2));
  assert.notEqual(page2.events[0].id, page1.events[0].id);
  const two = await events("?limit=2");
  assert.deepEqual([two.events[0].id, two.events[1].id], [page1.events[0].id, page2.events[0].id], "paging walks the same order");
  // The end of the log: nextBefore null.
  let cursor = null;
  let pages = 0;
  let dump = "";
  do {
    const pg = await events(`?limit=100${cursor === null ? "" : `&before=${encodeURIComponent(cursor)}`}`);
    dump += pg.text;
    cursor = pg.nextBefore;
    pages++;
  } while (cursor !== null && pages < 50);
  assert.equal(cursor, null, "paging ends");

  assertTag(await mo.api("GET", "/api/admin/audit-events"), 403, "AdminForbidden", "a member reads the audit");
  assertTag(await team.request("GET", "/api/admin/audit-events"), 401, "AdminUnauthorized", "no sign-in");

  for (const [what, secret] of [
    ["the owner's password", owner.password],
    ["the member's password", mo.password],
    ["the API key", key.value],
    ["the owner's session token", owner.token],
    ["the member's session token", mo.token],
    ["the OAuth access token", grant.tokens.access_token],
    ["the OAuth refresh token", grant.tokens.refresh_token],
    ["a pasted connection secret", pasted],
  ]) {
    assert.ok(!dump.includes(secret), `the audit log holds ${what}`);
  }

  const e = call("echo", mo.id);
  assert.equal(e.action, `${slug}.org.main.echo`, `a tool call's action is the tool's policy id: ${show(e)}`);
});

// ---- 10. restart and plaintext scan -------------------------------------------------------------

test("restart: no plaintext password or token on disk; sessions and keys survive, revoked ones stay revoked", T, async () => {
  const s = await server();
  const o = await signUp(s, { name: "Persistent Owner", email: uniqueEmail("persist") });
  const m = await invitePerson(s, o, { name: "Persistent Member" });
  const kept = assertOk(await o.api("POST", "/api/account/api-keys", { name: "kept" }));
  const deleted = assertOk(await o.api("POST", "/api/account/api-keys", { name: "deleted" }));
  assertOk(await o.api("DELETE", `/api/account/api-keys/${deleted.id}`));
  const ended = await signIn(s, o);
  assertOk(await ended.api("POST", "/api/auth/sign-out"));
  const pasted = `pasted-secret-${randomBytes(12).toString("hex")}`;
  const hdr = freshSlug("hdr");
  assertOk(await o.api("POST", "/api/mcp/servers", { transport: "remote", name: "Keyed MCP", endpoint: fixture.url, slug: hdr, remoteTransport: "streamable-http", auth: { kind: "header", headerName: "X-Api-Key" } }), "keyed MCP");
  assertOk(await m.api("POST", "/api/connections", { owner: "user", name: "keyed", integration: hdr, template: "header", value: pasted }), "a connection with a pasted secret");
  const g1 = await oauthGrant(s, o.token);
  const g2 = await oauthGrant(s, o.token);
  assert.equal((await s.request("POST", "/api/auth/mcp/revoke", { form: { token: g2.tokens.access_token } })).status, 200);
  // Use what is kept, so last-used times and the like are written.
  assertOk(await s.request("GET", "/api/account/me", { token: kept.value }));
  assert.equal((await mcpInitialize(s, g1.tokens.access_token)).status, 200);
  assert.equal((await mcpInitialize(s, g2.tokens.access_token)).status, 401);

  const stopped = await s.stop();
  assert.equal(stopped.code, 0, `SIGTERM → exit 0\n${s.logs()}`);
  const { found, files } = scanForPlaintext(s.dataDir, {
    "owner password": o.password,
    "member password": m.password,
    "session token": o.token,
    "member session token": m.token,
    "signed-out session token": ended.token,
    "API key": kept.value,
    "deleted API key": deleted.value,
    "OAuth access token": g1.tokens.access_token,
    "OAuth refresh token": g1.tokens.refresh_token,
    "revoked OAuth access token": g2.tokens.access_token,
    "a pasted connection secret": pasted,
  });
  assert.ok(files.length > 0, "the data dir has files");
  assert.deepEqual(found, [], `plaintext secrets on disk: ${show(found)}`);

  const s2 = await s.restart();
  servers.push(s2);
  assert.deepEqual((await s2.request("GET", "/api/setup-status")).body, { needsSetup: false });
  assert.equal(assertOk(await s2.request("GET", "/api/account/me", { token: o.token }), "session after restart").user.id, o.id);
  assert.equal(assertOk(await s2.request("GET", "/api/account/me", { token: m.token }), "member session after restart").role, "member");
  assert.equal(assertOk(await s2.request("GET", "/api/account/me", { token: kept.value }), "API key after restart").user.id, o.id);
  assertTag(await s2.request("GET", "/api/account/me", { token: deleted.value }), 401, "AccountUnauthorized", "deleted key after restart");
  assertTag(await s2.request("GET", "/api/account/me", { token: ended.token }), 401, "AccountUnauthorized", "signed-out session after restart");
  assert.equal((await mcpInitialize(s2, g1.tokens.access_token)).status, 200, "OAuth access token after restart");
  assert.equal((await mcpInitialize(s2, g2.tokens.access_token)).status, 401, "revoked OAuth token after restart");
  assertOk(await signInRaw(s2, o.email, o.password), "the password after restart");
});

// ---- 11. bootstrap ---------------------------------------------------------------------------------

test("bootstrap: EXECUTOR_BOOTSTRAP_ADMIN_EMAIL/PASSWORD create the owner at start, once", T, async () => {
  const email = uniqueEmail("boot");
  const password = newPassword();
  const s = await server({ env: { EXECUTOR_BOOTSTRAP_ADMIN_EMAIL: email, EXECUTOR_BOOTSTRAP_ADMIN_PASSWORD: password } });
  assert.deepEqual(assertOk(await s.request("GET", "/api/setup-status")), { needsSetup: false });
  assertTag(await signUpRaw(s, { name: "Squatter", email: uniqueEmail(), password: newPassword() }), 403, "InviteRequiredError", "no first-come owner");
  const res = await signInRaw(s, email, password);
  assertOk(res, "bootstrap sign-in");
  const boss = personOf(s, res, { email, password });
  const me = assertOk(await boss.api("GET", "/api/account/me"));
  assert.equal(me.role, "owner", show(me));
  assert.equal(me.user.name, "Admin", `default name: ${show(me)}`);
  assert.equal(me.user.email.toLowerCase(), email.toLowerCase());
  assert.equal(me.organization?.slug, ORG.slug, show(me));

  // Restarted with other bootstrap values: the organisation has a member, nothing is created.
  const other = uniqueEmail("boot2");
  const s2 = await s.restart({ env: { EXECUTOR_BOOTSTRAP_ADMIN_EMAIL: other, EXECUTOR_BOOTSTRAP_ADMIN_PASSWORD: password } });
  servers.push(s2);
  assertTag(await signInRaw(s2, other, password), 401, "InvalidCredentialsError", "a second bootstrap admin");
  const again = await signIn(s2, { email, password });
  assert.equal(assertOk(await again.api("GET", "/api/account/members")).members.length, 1);
});

// ---- more: per-address rate limit, https cookie ------------------------------------------------

test("sign-in rate limit per client address: 20 failures from one address, then 429 for every account", T, async () => {
  const s = await server();
  const o = await signUp(s, { name: "Addr Owner", email: uniqueEmail("addr") });
  const statuses = [];
  // 20 failures spread over 10 unknown emails (2 each: no account reaches its own limit of 5).
  for (let i = 0; i < 20; i++) statuses.push((await signInRaw(s, `ghost-${i % 10}-${o.email}`, "wrong-password-x")).status);
  assert.ok(statuses.every((x) => x === 401), `20 plain failures first: ${statuses}`);
  const next = await signInRaw(s, o.email, o.password);
  assertTag(next, 429, "TooManyAttemptsError", "the 21st attempt from this address (right password)");
  assert.ok(Number(next.headers["retry-after"]) > 0, show(next.headers));
  assertOk(await o.api("GET", "/api/account/me"), "signed-in sessions are unaffected");
});

test("an https BASE makes the session cookie Secure", T, async () => {
  const s = await server({ env: { EXECUTOR_WEB_BASE_URL: "https://executor.example" } });
  const res = await signUpRaw(s, { name: "Tls", email: uniqueEmail("tls"), password: newPassword() });
  assertOk(res, "sign-up");
  const c = sessionCookie(res);
  assert.ok(c, show(res.headers["set-cookie"]));
  assert.equal(c.attributes.secure, true, c.line);
  assert.equal(c.attributes.httponly, true, c.line);
  // The Origin must be that BASE's origin.
  assertTag(await s.request("POST", "/api/account/api-keys", { cookie: c.value, headers: { origin: s.baseUrl }, body: { name: "x" } }), 403, "InvalidOriginError", "http origin against an https BASE");
  assertOk(await s.request("POST", "/api/account/api-keys", { cookie: c.value, headers: { origin: "https://executor.example" }, body: { name: "x" } }), "BASE's origin");
});

// ---- more: races ---------------------------------------------------------------------------------

test("races: one invite, two sign-ups; one refresh token, two refreshes; two owners demoting each other", T, async () => {
  const { team, owner } = await shared();

  const invite = await createInvite(owner);
  const signups = await Promise.all([0, 1, 2].map((i) => signUpRaw(team, { name: `Twin ${i}`, email: uniqueEmail(`twin${i}`), password: newPassword(), inviteCode: invite.code })));
  assert.equal(signups.filter((r) => r.status === 200).length, 1, `a code is used once: ${show(signups.map((r) => [r.status, r.body]))}`);
  for (const r of signups.filter((x) => x.status !== 200)) assertTag(r, 403, "InvalidInviteError", "a losing twin");

  const g = await oauthGrant(team, owner.token);
  const refreshes = await Promise.all([0, 1, 2].map(() => tokenRequest(team, { grant_type: "refresh_token", refresh_token: g.tokens.refresh_token, client_id: g.client.client_id })));
  const won = refreshes.filter((r) => r.status === 200);
  assert.ok(won.length <= 1, `a refresh token is used once: ${show(refreshes.map((r) => [r.status, r.body]))}`);
  for (const r of refreshes.filter((x) => x.status !== 200)) assert.equal(r.body?.error, "invalid_grant", show(r.body));
  // Presented more than once: the grant is revoked, whoever won.
  for (const r of won) assert.equal((await mcpInitialize(team, r.body.access_token)).status, 401, "the reused grant is revoked");

  // A second owner; both demote the other at once: one owner is always left.
  const co = await invitePerson(team, owner, { role: "admin", name: "Co Owner" });
  assert.equal(assertOk(await owner.api("PATCH", `/api/account/members/${co.id}/role`, { roleSlug: "owner" })).role, "owner");
  const [x, y] = await Promise.all([
    owner.api("PATCH", `/api/account/members/${co.id}/role`, { roleSlug: "member" }),
    co.api("PATCH", `/api/account/members/${owner.id}/role`, { roleSlug: "member" }),
  ]);
  const owners = assertOk(await owner.api("GET", "/api/account/members")).members.filter((m) => m.role === "owner");
  assert.equal(owners.length, 1, `exactly one owner left: ${show(owners)} after ${show([x.status, x.body, y.status, y.body])}`);
  assert.equal([x, y].filter((r) => r.status === 200).length, 1, `one demotion wins: ${show([x.status, x.body, y.status, y.body])}`);
  for (const r of [x, y].filter((q) => q.status !== 200)) assert.ok([403, 409].includes(r.status), `${r.status} ${r.text}`);
  // Put the shared server back: the original owner is the owner.
  if (owners[0].id !== owner.id) {
    assertOk(await co.api("PATCH", `/api/account/members/${owner.id}/role`, { roleSlug: "owner" }));
    assertOk(await owner.api("PATCH", `/api/account/members/${co.id}/role`, { roleSlug: "member" }));
  }
  assert.equal(assertOk(await owner.api("GET", "/api/account/me")).role, "owner");
});
