// Issue #39, item 7: members made the server fetch any URL through the MCP probe, the OAuth
// probe and the OpenAPI preview. On the team server those are for admins (a member may still
// probe the OAuth metadata of an MCP server already in the catalog, which connecting needs), and
// every upstream connection refuses link-local and metadata addresses always, and private and
// loopback ones unless the operator starts the server with --allow-private-network
// (EXECUTOR_ALLOW_PRIVATE_NETWORK=1). The local `web` server allows private networks. Nothing
// here leaves the host: refused addresses are refused before they are dialled, and the one
// server that answers listens on loopback.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { freshSlug, show, startExecutor } from "../lib/executor.mjs";
import { serveMcpServer } from "../lib/fixture.mjs";
import { startTeamServer, signUp, invitePerson, uniqueEmail } from "../lib/team.mjs";

const T = { timeout: 120_000 };

let hits = 0;
function serveApi() {
  const server = http.createServer((req, res) => {
    hits++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ pong: true }));
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ base: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) })),
  );
}

const spec = (base) => ({
  openapi: "3.1.0",
  info: { title: "Ping", version: "1" },
  servers: [{ url: base }],
  paths: { "/ping": { get: { operationId: "ping", tags: ["net"], responses: { 200: { description: "ok" } } } } },
});


/** Adds the spec as text and an `org` connection `main` to it (the spec needs no credential). */
async function addApi(who, slug, base) {
  const added = await who.api("POST", "/api/openapi/specs", { spec: { kind: "blob", value: JSON.stringify(spec(base)) }, slug });
  assert.equal(added.status, 200, added.text.slice(0, 800));
  const template = (await who.api("GET", `/api/integrations/${slug}`)).body?.authMethods?.[0]?.slug ?? "none";
  const conn = await who.api("POST", "/api/connections", { owner: "org", name: "main", integration: slug, template });
  assert.equal(conn.status, 200, `connection: ${conn.text.slice(0, 800)}`);
}

const METADATA = "http://169.254.169.254/latest/meta-data/";

let api;
let team;
let local;
before(async () => {
  api = await serveApi();
  team = await startTeamServer({ env: { EXECUTOR_ALLOW_PRIVATE_NETWORK: "0" } });
  local = await startExecutor();
});
after(async () => {
  await team?.kill({ removeDataDir: true });
  await local?.kill();
  await api?.close();
});

function assertTag(res, status, tag, what) {
  assert.equal(res.status, status, `${what}: expected ${status} ${tag}, got ${res.status}: ${res.text.slice(0, 1500)}`);
  assert.equal(res.body?._tag, tag, `${what}: ${show(res.body)}`);
}

test("a member cannot make the team server look at a URL; an admin can, within what the network rules allow", T, async () => {
  const owner = await signUp(team, { name: "Owner", email: uniqueEmail("owner") });
  const member = await invitePerson(team, owner, { name: "Mia" });
  const before = hits;
  const target = `${api.base}/openapi.json`;

  assertTag(await member.api("POST", "/api/mcp/probe", { endpoint: `${api.base}/mcp` }), 403, "OrgWriteDeniedError", "member MCP probe");
  assertTag(await member.api("POST", "/api/openapi/preview", { spec: target }), 403, "OrgWriteDeniedError", "member OpenAPI preview");
  assertTag(await member.api("POST", "/api/oauth/probe", { url: `${api.base}/mcp` }), 403, "OrgWriteDeniedError", "member OAuth probe");
  // A spec given as text is not fetched: members may still preview one.
  const text = await member.api("POST", "/api/openapi/preview", { spec: JSON.stringify(spec(api.base)) });
  assert.equal(text.status, 200, `member text preview: ${text.text.slice(0, 500)}`);

  // The owner may probe, but not into the server's own network by default…
  const probe = await owner.api("POST", "/api/mcp/probe", { endpoint: `${api.base}/mcp` });
  assert.equal(probe.status, 400, `owner probe of loopback: ${probe.text.slice(0, 800)}`);
  assert.match(probe.body?.message ?? "", /loopback address.*--allow-private-network/, show(probe.body));
  const preview = await owner.api("POST", "/api/openapi/preview", { spec: target });
  assert.equal(preview.status, 400, `owner preview of loopback: ${preview.text.slice(0, 800)}`);
  assert.match(JSON.stringify(preview.body), /--allow-private-network/, show(preview.body));
  // …and never the metadata service, whatever the operator says.
  const metadata = await owner.api("POST", "/api/openapi/preview", { spec: METADATA });
  assert.equal(metadata.status, 400, metadata.text.slice(0, 800));
  assert.match(JSON.stringify(metadata.body), /cloud metadata address\); no setting allows it/, show(metadata.body));
  assert.equal(hits, before, "the loopback server was never reached");

  // An API added as text whose server is on loopback: its calls are values with a code.
  const slug = freshSlug("net");
  await addApi(owner, slug, api.base);
  const ran = await owner.execute(`return await tools.${slug}.org.main.net.ping({})`);
  assert.equal(ran.status, 200, ran.text.slice(0, 800));
  const result = ran.body.structured?.result;
  assert.equal(result?.ok, false, show(ran.body));
  assert.equal(result?.error?.code, "address_not_allowed", show(result));
  assert.equal(result?.error?.details?.operatorMayAllow, true, show(result));
  assert.equal(hits, before, "the call never reached the loopback server");
});

test("a member may probe the OAuth metadata of an MCP server in the catalog (connecting needs it)", T, async () => {
  // A team server that allows private networks, as its operator may, so an admin can add the
  // loopback fixture: what is asked is whether the member may ask at all.
  const open = await startTeamServer();
  const mcp = await serveMcpServer();
  try {
    const owner = await signUp(open, { name: "Owner", email: uniqueEmail("owner") });
    const member = await invitePerson(open, owner, { name: "Max" });
    const slug = freshSlug("remote");
    const added = await owner.api("POST", "/api/mcp/servers", { transport: "remote", name: "Remote", endpoint: mcp.url, slug });
    assert.equal(added.status, 200, added.text.slice(0, 800));
    const allowed = await member.api("POST", "/api/oauth/probe", { url: mcp.url });
    assert.notEqual(allowed.body?._tag, "OrgWriteDeniedError", show(allowed.body));
    assertTag(await member.api("POST", "/api/oauth/probe", { url: `${mcp.url}/other` }), 403, "OrgWriteDeniedError", "another URL");
  } finally {
    await mcp.close();
    await open.kill({ removeDataDir: true });
  }
});

test("the local server reaches loopback, and never the metadata service", T, async () => {
  const before = hits;
  const slug = freshSlug("net");
  await addApi(local, slug, api.base);
  const ran = await local.execute(`return await tools.${slug}.org.main.net.ping({})`);
  assert.equal(ran.body.structured?.result?.data?.pong, true, show(ran.body));
  assert.equal(hits, before + 1);

  const meta = freshSlug("meta");
  await addApi(local, meta, "http://169.254.169.254");
  const refused = await local.execute(`return await tools.${meta}.org.main.net.ping({})`);
  const result = refused.body.structured?.result;
  assert.equal(result?.error?.code, "address_not_allowed", show(refused.body));
  assert.equal(result?.error?.details?.operatorMayAllow, false, show(result));
  const probe = await local.api("POST", "/api/mcp/probe", { endpoint: "http://[::ffff:169.254.169.254]/mcp" });
  assert.equal(probe.status, 400, probe.text.slice(0, 800));
  assert.match(probe.body?.message ?? "", /cloud metadata address/, show(probe.body));
});
