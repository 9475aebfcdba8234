// Issue #39, item 6: an MCP session on the team server is bound to the OAuth grant (or key, or
// sign-in) that opened it. A token refreshed from the same grant keeps using the session — an
// agent refreshes its token every hour and must not lose its session state — while another
// person's token, even one of the same OAuth client, gets 404 for it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { show } from "../lib/executor.mjs";
import { startTeamServer, signUp, invitePerson, uniqueEmail, oauthGrant, mcpInitialize, tokenRequest } from "../lib/team.mjs";

const T = { timeout: 120_000 };

let team;
before(async () => {
  team = await startTeamServer();
});
after(async () => {
  await team?.kill({ removeDataDir: true });
});

/** A JSON-RPC request on session `sid` with `token`: the HTTP status and the answer. */
async function onSession(sid, token, body) {
  const r = await team.request("POST", "/mcp", {
    token,
    headers: { accept: "application/json, text/event-stream", "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
    body,
  });
  // An SSE answer may open with an empty priming event: the first data line with JSON is it.
  const data = r.text.split("\n").find((l) => l.startsWith("data:") && l.slice(5).trim());
  return { status: r.status, body: data ? JSON.parse(data.slice(5)) : r.body, text: r.text };
}

test("a refreshed OAuth token keeps its grant's MCP session; another person's token does not reach it", T, async () => {
  const owner = await signUp(team, { name: "Owner", email: uniqueEmail("owner") });
  const member = await invitePerson(team, owner, { name: "Mo" });
  const grant = await oauthGrant(team, owner.token);
  const opened = await mcpInitialize(team, grant.tokens.access_token);
  assert.equal(opened.status, 200, opened.text.slice(0, 500));
  const sid = opened.headers["mcp-session-id"];
  assert.ok(sid, show(opened.headers));
  const initialized = await onSession(sid, grant.tokens.access_token, { jsonrpc: "2.0", method: "notifications/initialized" });
  assert.equal(initialized.status, 202, initialized.text);
  const list = { jsonrpc: "2.0", id: 2, method: "tools/list" };
  assert.equal((await onSession(sid, grant.tokens.access_token, list)).status, 200);

  // The hourly refresh: a new access token of the same grant.
  const refreshed = await tokenRequest(team, { grant_type: "refresh_token", refresh_token: grant.tokens.refresh_token, client_id: grant.client.client_id });
  assert.equal(refreshed.status, 200, refreshed.text);
  assert.notEqual(refreshed.body.access_token, grant.tokens.access_token);
  const again = await onSession(sid, refreshed.body.access_token, { ...list, id: 3 });
  assert.equal(again.status, 200, again.text.slice(0, 500));
  assert.ok(Array.isArray(again.body?.result?.tools), show(again.body));

  // The member's own grant of the same client is another credential: the session is not theirs.
  const theirs = await oauthGrant(team, member.token, { client: grant.client });
  const stolen = await onSession(sid, theirs.tokens.access_token, { ...list, id: 4 });
  assert.equal(stolen.status, 404, stolen.text.slice(0, 500));
  const deleted = await team.request("DELETE", "/mcp", { token: theirs.tokens.access_token, headers: { "mcp-session-id": sid } });
  assert.equal(deleted.status, 404, deleted.text);
  // Still the owner's after those attempts.
  assert.equal((await onSession(sid, refreshed.body.access_token, { ...list, id: 5 })).status, 200);
});
