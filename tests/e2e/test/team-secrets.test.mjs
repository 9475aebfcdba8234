// Issue #39: on the team server (`executor serve`), a member's personal credential is theirs
// alone. Member B cannot list A's vault item, use it through `from`, overwrite it with a
// same-named personal connection or delete it by removing that connection, and A's credential
// still reaches A's API after every attempt. The API is a small node:http OpenAPI service that
// answers with the `X-Api-Key` each call carried.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { freshSlug, show } from "../lib/executor.mjs";
import { startTeamServer, signUp, invitePerson, uniqueEmail } from "../lib/team.mjs";

const T = { timeout: 120_000 };

function serveKeyEcho() {
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ key: req.headers["x-api-key"] ?? null }));
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => resolve({ base: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) })),
  );
}

const spec = (base) => ({
  openapi: "3.1.0",
  info: { title: "Keys", version: "1" },
  servers: [{ url: base }],
  security: [{ key: [] }],
  components: { securitySchemes: { key: { type: "apiKey", in: "header", name: "X-Api-Key" } } },
  paths: { "/whoami": { get: { operationId: "whoami", tags: ["keys"], responses: { 200: { description: "ok" } } } } },
});

let api;
let team;
before(async () => {
  api = await serveKeyEcho();
  team = await startTeamServer();
});
after(async () => {
  await team?.kill({ removeDataDir: true });
  await api?.close();
});

function ok(res, what) {
  assert.equal(res.status, 200, `${what}: ${res.status} ${res.text.slice(0, 1500)}\n${team.logs()}`);
  return res.body;
}

test("a member's personal secret cannot be listed, used, overwritten or deleted by another member", T, async () => {
  const owner = await signUp(team, { name: "Owner", email: uniqueEmail("owner") });
  const a = await invitePerson(team, owner, { name: "Alice" });
  const b = await invitePerson(team, owner, { name: "Bruno" });
  const slug = freshSlug("keys");
  ok(await owner.api("POST", "/api/openapi/specs", { spec: { kind: "blob", value: JSON.stringify(spec(api.base)) }, slug }), "add the API");
  const template = ok(await owner.api("GET", `/api/integrations/${slug}`), "integration").authMethods?.[0]?.slug ?? "apikey-0";
  const secret = `alice-${Math.random().toString(36).slice(2)}`;
  ok(await a.api("POST", "/api/connections", { owner: "user", name: "main", integration: slug, template, value: secret }), "A's personal connection");
  const item = `connection:user:${slug}:main:token`;
  const whoami = `return (await tools.${slug}.user.main.keys.whoami({})).data.key`;
  const aKey = async (what) => {
    const r = ok(await a.execute(whoami), `A calls (${what})`);
    assert.equal(r.structured?.result, secret, `${what}: ${show(r)}`);
  };
  await aKey("at first");
  assert.ok(ok(await a.api("GET", "/api/providers/vault/items"), "A lists").some((i) => i.id === item), "A sees their own item");

  // B lists nothing of A's, over HTTP and from the sandbox.
  const listed = ok(await b.api("GET", "/api/providers/vault/items"), "B lists");
  assert.ok(!JSON.stringify(listed).includes(item), show(listed));
  const core = ok(await b.execute(`return await tools.executor.coreTools.providers.items({ provider: "vault" })`), "B's core tool");
  assert.ok(!JSON.stringify(core).includes(item), show(core));

  // B cannot use it through `from`.
  const from = await b.api("POST", "/api/connections", { owner: "user", name: "stolen", integration: slug, template, from: { provider: "vault", id: item } });
  assert.equal(from.status, 400, `from: ${from.status} ${from.text}`);
  assert.equal(from.body?._tag, "InvalidConnectionInputError", show(from.body));
  assert.ok(!ok(await b.api("GET", `/api/connections?integration=${slug}`), "B's connections").some((c) => c.name === "stolen"), "nothing was written");
  await aKey("after B's from");

  // B's same-named personal connection holds B's own value; removing it leaves A's.
  ok(await b.api("POST", "/api/connections", { owner: "user", name: "main", integration: slug, template, value: "bruno-key" }), "B's same-named connection");
  assert.equal(ok(await b.execute(whoami), "B calls").structured?.result, "bruno-key");
  await aKey("after B's overwrite");
  const removed = await b.api("DELETE", `/api/connections/user/${slug}/main`);
  assert.ok(removed.status === 200 || removed.status === 204, `B removes his: ${removed.status} ${removed.text}`);
  await aKey("after B's delete");
  // And after a restart.
  team = await team.restart();
  await aKey("after a restart");
});
