// Upstreams for the console tests, all on loopback: the e2e suite's MCP fixture, a small
// OpenAPI "Notes" API behind an API-key header, and a GraphQL endpoint behind a bearer token.
import http from "node:http";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const e2e = path.resolve(here, "..", "..", "e2e");
// The e2e package owns the MCP SDK and graphql; resolve them from there (one install).
const e2eRequire = createRequire(path.join(e2e, "package.json"));

export const NOTES_KEY = "notes-key-123";
export const GRAPHQL_TOKEN = "gql-token-123";

export async function serveMcp() {
  const { serveMcpServer } = await import(pathToFileURL(path.join(e2e, "lib", "fixture.mjs")).href);
  return serveMcpServer({ extras: true });
}

const notesSpec = {
  openapi: "3.1.0",
  info: { title: "Notes API", version: "1.2.0", description: "Notes for the console tests." },
  servers: [{ url: "/v1" }],
  security: [{ key: [] }],
  components: { securitySchemes: { key: { type: "apiKey", in: "header", name: "X-Api-Key" } } },
  paths: {
    "/notes": {
      get: {
        operationId: "listNotes",
        summary: "List notes",
        tags: ["notes"],
        parameters: [{ name: "q", in: "query", schema: { type: "string" } }],
        responses: { 200: { description: "ok", content: { "application/json": { schema: { type: "array", items: { type: "object", properties: { id: { type: "string" }, text: { type: "string" } } } } } } } },
      },
      post: {
        operationId: "createNote",
        tags: ["notes"],
        requestBody: { required: true, content: { "application/json": { schema: { type: "object", required: ["text"], properties: { text: { type: "string" } } } } } },
        responses: { 201: { description: "created" } },
      },
    },
    "/me": {
      get: { operationId: "whoami", summary: "The caller", tags: ["account"], responses: { 200: { description: "ok", content: { "application/json": { schema: { type: "object", properties: { login: { type: "string" } } } } } } } },
    },
  },
};

export function serveNotes() {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const send = (status, value) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(value));
      };
      if (url.pathname === "/openapi.json") return send(200, notesSpec);
      if (req.headers["x-api-key"] !== NOTES_KEY) return send(401, { message: "bad key" });
      if (url.pathname === "/v1/me") return send(200, { login: "ada" });
      if (req.method === "GET" && url.pathname === "/v1/notes") return send(200, [{ id: "1", text: `hello ${url.searchParams.get("q") ?? ""}`.trim() }]);
      if (req.method === "POST" && url.pathname === "/v1/notes") return send(201, { id: "2", text: JSON.parse(body || "{}").text });
      send(404, { message: "no route" });
    });
  });
  return listen(server, (base) => ({ base, specUrl: `${base}/openapi.json` }));
}

export async function serveGraphql() {
  const { buildSchema, graphql } = await import(pathToFileURL(e2eRequire.resolve("graphql")).href);
  const schema = buildSchema(`
    type Book { id: ID! title: String! }
    type Query { "Books in the library." books: [Book!]! }
  `);
  const rootValue = { books: () => [{ id: "1", title: "The Dispossessed" }] };
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const { query, variables } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    // The schema is public (Executor introspects when the integration is added); data needs the token.
    if (!String(query).includes("__schema") && req.headers.authorization !== `Bearer ${GRAPHQL_TOKEN}`) return res.writeHead(401).end("bad token");
    const result = await graphql({ schema, source: query, rootValue, variableValues: variables });
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result));
  });
  return listen(server, (base) => ({ base, url: `${base}/graphql` }));
}

function listen(server, describe) {
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const base = `http://127.0.0.1:${server.address().port}`;
      resolve({ ...describe(base), close: () => new Promise((r) => server.close(r)) });
    }),
  );
}

export const OAUTH_ACCESS_TOKEN = "oauth-access-1";

/**
 * An MCP server behind OAuth: `/mcp` needs the bearer this fixture's authorization server hands
 * out (metadata, dynamic registration, an authorize step that approves at once, a token
 * endpoint); authorised requests are forwarded to `upstreamUrl` (the plain MCP fixture).
 */
export function serveOAuthMcp(upstreamUrl) {
  const upstream = new URL(upstreamUrl);
  const state = { registered: 0, tokens: 0 };
  let base = "";
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    const json = (status, v) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(v));
    const body = () => new Promise((r) => { let b = ""; req.on("data", (c) => (b += c)); req.on("end", () => r(b)); });
    if (url.pathname.startsWith("/.well-known/oauth-protected-resource"))
      return json(200, { resource: `${base}/mcp`, authorization_servers: [base] });
    if (url.pathname.startsWith("/.well-known/oauth-authorization-server"))
      return json(200, {
        issuer: base,
        authorization_endpoint: `${base}/authorize`,
        token_endpoint: `${base}/token`,
        registration_endpoint: `${base}/register`,
        response_types_supported: ["code"],
        grant_types_supported: ["authorization_code", "refresh_token"],
        code_challenge_methods_supported: ["S256"],
        token_endpoint_auth_methods_supported: ["none"],
      });
    if (url.pathname === "/register") {
      return body().then((b) => {
        state.registered++;
        json(201, { ...JSON.parse(b || "{}"), client_id: `client-${state.registered}`, token_endpoint_auth_method: "none" });
      });
    }
    if (url.pathname === "/authorize") {
      const back = new URL(url.searchParams.get("redirect_uri"));
      back.searchParams.set("code", "code-1");
      back.searchParams.set("state", url.searchParams.get("state") ?? "");
      return res.writeHead(302, { location: back.toString() }).end();
    }
    if (url.pathname === "/token") {
      return body().then(() => {
        state.tokens++;
        json(200, { access_token: OAUTH_ACCESS_TOKEN, token_type: "Bearer", expires_in: 3600, refresh_token: "refresh-1" });
      });
    }
    if (url.pathname === "/mcp") {
      if (req.headers.authorization !== `Bearer ${OAUTH_ACCESS_TOKEN}`) {
        res.writeHead(401, { "www-authenticate": `Bearer resource_metadata="${base}/.well-known/oauth-protected-resource"`, "content-type": "application/json" });
        return res.end(JSON.stringify({ error: "invalid_token" }));
      }
      const headers = { ...req.headers, host: upstream.host };
      delete headers.authorization;
      const fwd = http.request({ host: upstream.hostname, port: upstream.port, path: upstream.pathname, method: req.method, headers }, (up) => {
        res.writeHead(up.statusCode, up.headers);
        up.pipe(res);
      });
      fwd.on("error", () => res.writeHead(502).end());
      return req.pipe(fwd);
    }
    res.writeHead(404).end();
  });
  return listen(server, (b) => {
    base = b;
    return { base, url: `${b}/mcp`, state };
  });
}
