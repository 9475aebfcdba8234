// OpenAPI integrations against the real binary: a small node:http API with an API-key header,
// its spec added over HTTP (by URL and inline), a connection with the key, and its operations
// called from executions over the HTTP API and over `/mcp` with the official SDK client
// (spec §3.10, §7).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startExecutor, freshSlug, show } from "../lib/executor.mjs";

const KEY = "k3y-e2e";
const T = { timeout: 30_000 };

const specFor = ({ servers = "/v1", v2 = false } = {}) => ({
  openapi: "3.1.0",
  info: { title: "Notes API", version: "1.0.0", description: "Notes for the e2e tests." },
  servers: [{ url: servers }],
  security: [{ key: [] }],
  components: {
    securitySchemes: { key: { type: "apiKey", in: "header", name: "X-Api-Key" } },
    schemas: {
      Note: { type: "object", required: ["id", "text"], properties: { id: { type: "string" }, text: { type: "string" } } },
    },
  },
  paths: {
    "/notes": {
      get: {
        operationId: "listNotes",
        tags: ["notes"],
        parameters: [{ name: "q", in: "query", schema: { type: "string" } }],
        responses: { 200: { description: "ok", content: { "application/json": { schema: { type: "array", items: { $ref: "#/components/schemas/Note" } } } } } },
      },
      post: {
        operationId: "createNote",
        tags: ["notes"],
        requestBody: {
          required: true,
          content: { "application/json": { schema: { type: "object", required: ["text"], properties: { text: { type: "string" } } } } },
        },
        responses: { 201: { description: "created", content: { "application/json": { schema: { $ref: "#/components/schemas/Note" } } } } },
      },
    },
    "/notes/{id}": {
      get: {
        operationId: "getNote",
        tags: ["notes"],
        parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
        responses: { 200: { description: "ok", content: { "application/json": { schema: { $ref: "#/components/schemas/Note" } } } } },
      },
      ...(v2
        ? {
            delete: {
              operationId: "deleteNote",
              tags: ["notes"],
              parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }],
              responses: { 204: { description: "gone" } },
            },
          }
        : {}),
    },
  },
});

/** The API: records every request; serves its spec at /openapi.json. */
function serveApi() {
  const state = { requests: [], v2: false };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const send = (status, value, type = "application/json") => {
        res.writeHead(status, { "content-type": type });
        res.end(value === undefined ? undefined : typeof value === "string" ? value : JSON.stringify(value));
      };
      if (url.pathname === "/openapi.json") return send(200, specFor({ v2: state.v2 }));
      state.requests.push({ method: req.method, path: url.pathname, query: url.search, key: req.headers["x-api-key"], body });
      if (req.headers["x-api-key"] !== KEY) return send(401, { message: "bad key" });
      if (req.method === "GET" && url.pathname === "/v1/notes") return send(200, [{ id: "1", text: `hello ${url.searchParams.get("q") ?? ""}`.trim() }]);
      if (req.method === "POST" && url.pathname === "/v1/notes") return send(201, { id: "2", text: JSON.parse(body).text });
      const m = /^\/v1\/notes\/([^/]+)$/.exec(url.pathname);
      if (m && req.method === "GET") return m[1] === "missing" ? send(404, { message: "note not found" }) : send(200, { id: m[1], text: "a note" });
      if (m && req.method === "DELETE") return send(204);
      send(404, { message: "no route" });
    });
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const base = `http://127.0.0.1:${server.address().port}`;
      resolve({ base, state, close: () => new Promise((r) => server.close(r)) });
    }),
  );
}

let ex;
let api;

before(async () => {
  api = await serveApi();
  ex = await startExecutor();
});
after(async () => {
  await ex?.kill();
  await api?.close();
});

async function addByUrl(slug) {
  const added = await ex.api("POST", "/api/openapi/specs", { spec: { kind: "url", url: `${api.base}/openapi.json` }, slug });
  assert.equal(added.status, 200, `${show(added.body)}\n${ex.logs()}`);
  const conn = await ex.api("POST", "/api/connections", { owner: "org", name: "main", integration: slug, template: "apikey-0", value: KEY });
  assert.equal(conn.status, 200, show(conn.body));
  return added.body;
}

test("HTTP · add by URL, connect with a key, call, update, delete", T, async () => {
  const slug = freshSlug("notes");
  const preview = await ex.api("POST", "/api/openapi/preview", { spec: `${api.base}/openapi.json` });
  assert.equal(preview.status, 200, show(preview.body));
  assert.equal(preview.body.title, "Notes API");
  assert.equal(preview.body.operationCount, 3);

  const added = await addByUrl(slug);
  assert.deepEqual(added, { slug, toolCount: 3, skipped: [] });
  const tools = await ex.api("GET", `/api/tools?integration=${slug}`);
  assert.deepEqual(tools.body.map((t) => t.name).sort(), ["notes.createNote", "notes.getNote", "notes.listNotes"]);

  api.state.requests.length = 0;
  const listed = await ex.execute(`return await tools.${slug}.org.main.notes.listNotes({ q: "world" })`);
  assert.equal(listed.status, 200, show(listed.body));
  const result = listed.body.structured.result;
  assert.deepEqual(result.data, [{ id: "1", text: "hello world" }], show(listed.body));
  assert.equal(result.http.status, 200);
  assert.deepEqual(api.state.requests.map((r) => [r.method, r.path, r.query, r.key]), [["GET", "/v1/notes", "?q=world", KEY]]);

  // Bad arguments: nothing sent, and no approval asked for a write that must fail.
  api.state.requests.length = 0;
  const bad = await ex.api("POST", "/api/executions", { code: `return await tools.${slug}.org.main.notes.createNote({ nope: 1 })` });
  assert.equal(bad.body.status, "completed", show(bad.body));
  assert.equal(bad.body.structured.result.error.code, "invalid_tool_arguments", show(bad.body));
  assert.equal(api.state.requests.length, 0);

  const missing = await ex.execute(`return await tools.${slug}.org.main.notes.getNote({ id: "missing" })`);
  const error = missing.body.structured.result.error;
  assert.equal(error.code, "upstream_http_error", show(missing.body));
  assert.equal(error.status, 404);
  assert.match(error.message, /note not found/);

  // Writes pause for approval.
  const paused = await ex.api("POST", "/api/executions", { code: `return (await tools.${slug}.org.main.notes.createNote({ body: { text: "hi" } })).data` });
  assert.equal(paused.body.status, "paused", show(paused.body));
  const done = await ex.api("POST", `/api/executions/${paused.body.structured.executionId}/resume`, { action: "accept" });
  assert.deepEqual(done.body.structured.result, { id: "2", text: "hi" }, show(done.body));

  // Update from the stored URL.
  api.state.v2 = true;
  try {
    const updated = await ex.api("POST", `/api/openapi/integrations/${slug}/spec`, {});
    assert.equal(updated.status, 200, show(updated.body));
    assert.deepEqual([updated.body.addedTools, updated.body.removedTools], [["notes.deleteNote"], []]);
  } finally {
    api.state.v2 = false;
  }

  const removed = await ex.api("DELETE", `/api/openapi/integrations/${slug}`);
  assert.equal(removed.status, 204);
  assert.equal((await ex.api("GET", `/api/openapi/integrations/${slug}`)).body, null);
  assert.equal((await ex.api("GET", `/api/integrations/${slug}`)).status, 404);
});

test("HTTP · inline spec with baseUrl and the auth dialect; bad input", T, async () => {
  const slug = freshSlug("inline");
  const added = await ex.api("POST", "/api/openapi/specs", {
    spec: { kind: "blob", value: JSON.stringify(specFor({ servers: "https://nowhere.invalid" })) },
    slug,
    baseUrl: `${api.base}/v1`,
    authenticationTemplate: [{ slug: "key", type: "apiKey", headers: { "X-Api-Key": [{ type: "variable", name: "token" }] } }],
  });
  assert.equal(added.status, 200, show(added.body));
  const conn = await ex.api("POST", "/api/connections", { owner: "org", name: "main", integration: slug, template: "key", value: KEY });
  assert.equal(conn.status, 200, show(conn.body));
  const got = await ex.execute(`return await tools.${slug}.org.main.notes.getNote({ id: "7" })`);
  assert.deepEqual(got.body.structured.result.data, { id: "7", text: "a note" }, show(got.body));

  const dup = await ex.api("POST", "/api/openapi/specs", { spec: { kind: "blob", value: JSON.stringify(specFor()) }, slug });
  assert.deepEqual([dup.status, { ...dup.body, message: undefined }], [409, { _tag: "IntegrationAlreadyExistsError", slug, message: undefined }]);
  const unreachable = await ex.api("POST", "/api/openapi/specs", { spec: { kind: "url", url: "http://127.0.0.1:9/openapi.json" }, slug: "never" });
  assert.equal(unreachable.status, 400, show(unreachable.body));
  assert.equal(unreachable.body._tag, "OpenApiParseError");
  const notOpenApi = await ex.api("POST", "/api/openapi/specs", { spec: { kind: "url", url: `${api.base}/v1/notes` }, slug: "never" });
  assert.equal(notOpenApi.status, 400, show(notOpenApi.body));
  assert.equal(notOpenApi.body._tag, "OpenApiParseError");
  assert.equal((await ex.api("GET", "/api/integrations/never")).status, 404);
});

test("MCP · an OpenAPI tool from the official SDK client", T, async () => {
  const slug = freshSlug("notes_mcp");
  await addByUrl(slug);
  const client = new Client({ name: "e2e-openapi", version: "0.0.1" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${ex.baseUrl}/mcp`), ex.mcpTransportOptions()));
  try {
    const { tools } = await client.listTools();
    assert.ok(tools[0].description.includes(`\`${slug}\``), tools[0].description);
    const found = await client.callTool({
      name: "execute",
      arguments: { code: `return await tools.search({ query: "list notes", namespace: "${slug}" })` },
    });
    assert.equal(found.structuredContent?.result?.items?.[0]?.path, `${slug}.org.main.notes.listNotes`, show(found));

    api.state.requests.length = 0;
    const listed = await client.callTool({
      name: "execute",
      arguments: { code: `const r = await tools.${slug}.org.main.notes.listNotes({}); return r.data[0].text` },
    });
    assert.notEqual(listed.isError, true, show(listed));
    assert.equal(listed.structuredContent?.result, "hello", show(listed));
    assert.equal(api.state.requests[0]?.key, KEY);

    // A write pauses; the agent resumes it.
    const paused = await client.callTool({
      name: "execute",
      arguments: { code: `return (await tools.${slug}.org.main.notes.createNote({ body: { text: "via mcp" } })).data.text` },
    });
    assert.equal(paused.structuredContent?.status, "waiting_for_interaction", show(paused));
    const done = await client.callTool({
      name: "resume",
      arguments: { executionId: paused.structuredContent.executionId, action: "accept" },
    });
    assert.equal(done.structuredContent?.result, "via mcp", show(done));
  } finally {
    await client.close();
  }
});
