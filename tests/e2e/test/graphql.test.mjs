// GraphQL integrations end to end: a small GraphQL server (the `graphql` reference
// implementation over node:http, behind a bearer token) registered through the HTTP API of the
// built binary, then driven from executions over HTTP and over MCP with the official SDK client.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { buildSchema, graphql } from "graphql";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { closedPort } from "../lib/fixture.mjs";
import { startExecutor, freshSlug, show } from "../lib/executor.mjs";

const TOKEN = "e2e-token";

const schema = buildSchema(`
  "Kinds of books."
  enum Genre { FICTION SCIENCE }
  type Author { id: ID! name: String! }
  type Book { id: ID! title: String! genre: Genre! tags: [String!]! author: Author! }
  "A new book."
  input BookInput { title: String! authorId: ID! genre: Genre! tags: [String!] }
  type Query {
    "One book by id."
    book(id: ID!): Book
    "Books, optionally of one genre."
    books(genre: Genre): [Book!]!
    broken: String
  }
  type Mutation {
    "Adds a book to the library."
    addBook(input: BookInput!): Book!
  }
`);

/** A GraphQL server with its own library; counts requests (401s included). */
async function serveGraphql() {
  const authors = { a1: { id: "a1", name: "Ursula K. Le Guin" }, a2: { id: "a2", name: "Carl Sagan" } };
  const book = (id, title, genre, tags, authorId) => ({ id, title, genre, tags, author: () => authors[authorId] });
  const books = [book("1", "The Dispossessed", "FICTION", ["utopia"], "a1"), book("2", "Cosmos", "SCIENCE", [], "a2")];
  const rootValue = {
    book: ({ id }) => books.find((b) => b.id === id) ?? null,
    books: ({ genre }) => books.filter((b) => !genre || b.genre === genre),
    broken: () => {
      throw new Error("the broken field always fails");
    },
    addBook: ({ input }) => {
      const added = book(String(books.length + 1), input.title, input.genre, input.tags ?? [], input.authorId);
      books.push(added);
      return added;
    },
  };
  const state = { requests: 0, queries: [] };
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    if (req.url === "/html") {
      res.writeHead(200, { "content-type": "text/html" }).end("<!DOCTYPE html><html><body>Welcome</body></html>");
      return;
    }
    state.requests += 1;
    if (req.method !== "POST" || req.url !== "/graphql") {
      res.writeHead(404).end();
      return;
    }
    if (req.headers.authorization !== `Bearer ${TOKEN}`) {
      res.writeHead(401, { "content-type": "text/plain" }).end("missing or wrong bearer token");
      return;
    }
    const { query, variables, operationName } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    state.queries.push(query);
    const result = await graphql({ schema, source: query, rootValue, variableValues: variables, operationName });
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(result));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    url: `${base}/graphql`,
    htmlUrl: `${base}/html`,
    state,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

let ex;
let gql;
let slug;

before(async () => {
  gql = await serveGraphql();
  ex = await startExecutor();
  slug = freshSlug("library");
  const added = await ex.api("POST", "/api/graphql/integrations", {
    endpoint: gql.url,
    slug,
    name: "Library",
    authenticationTemplate: [{ type: "apiKey", headers: { Authorization: ["Bearer ", { type: "variable", name: "token" }] } }],
  });
  assert.equal(added.status, 200, `${show(added.body)}\n${ex.logs()}`);
  assert.deepEqual(added.body, { slug, name: "Library" });
  const conn = await ex.api("POST", "/api/connections", { owner: "org", name: "main", integration: slug, template: "header", value: TOKEN });
  assert.equal(conn.status, 200, `${show(conn.body)}\n${ex.logs()}`);
});
after(async () => {
  await ex?.kill();
  await gql?.close();
});

const T = { timeout: 60_000 };
const resultOf = (r) => {
  assert.equal(r.status, 200, show(r.body));
  assert.equal(r.body.status, "completed", show(r.body));
  return r.body.structured.result;
};

test("HTTP · register, introspect with the token, call fields", T, async () => {
  const tools = await ex.api("GET", `/api/tools?integration=${slug}`);
  assert.deepEqual(
    tools.body.map((t) => t.name).sort(),
    ["mutation.addBook", "query.book", "query.books", "query.broken"],
    show(tools.body),
  );
  assert.equal(tools.body.find((t) => t.name === "mutation.addBook").requiresApproval, true);
  const config = await ex.api("GET", `/api/graphql/integrations/${slug}/config`);
  assert.deepEqual(config.body, {
    endpoint: gql.url,
    name: "Library",
    authenticationTemplate: [{ kind: "apikey", slug: "header", placements: [{ carrier: "header", name: "Authorization", prefix: "Bearer " }] }],
  });

  // The default selection descends into the author; `select` replaces it; enums as arguments.
  const out = resultOf(
    await ex.execute(`
      const lib = tools.${slug}.org.main;
      const one = await lib.query.book({ id: "1" });
      const picked = await lib.query.book({ id: "2", select: "title author { name }" });
      const science = await lib.query.books({ genre: "SCIENCE" });
      return { one, picked, science: science.data.map((b) => b.title) };
    `),
  );
  assert.deepEqual(out.one, {
    ok: true,
    data: { id: "1", title: "The Dispossessed", genre: "FICTION", tags: ["utopia"], author: { id: "a1", name: "Ursula K. Le Guin" } },
  });
  assert.deepEqual(out.picked, { ok: true, data: { title: "Cosmos", author: { name: "Carl Sagan" } } });
  assert.deepEqual(out.science, ["Cosmos"]);

  // A `select` that does not fit the type: invalid_tool_arguments, nothing sent.
  const before = gql.state.requests;
  const bad = resultOf(await ex.execute(`return await tools.${slug}.org.main.query.book({ id: "1", select: "title publisher" })`));
  assert.equal(bad.ok, false, show(bad));
  assert.equal(bad.error.code, "invalid_tool_arguments", show(bad));
  assert.equal(gql.state.requests, before);

  // GraphQL errors come back as values with their messages and paths.
  const broken = resultOf(await ex.execute(`return await tools.${slug}.org.main.query.broken({})`));
  assert.equal(broken.ok, false, show(broken));
  assert.equal(broken.error.code, "graphql_errors");
  assert.equal(broken.error.message, "the broken field always fails");
  assert.deepEqual(broken.error.details.errors[0].path, ["broken"]);
});

test("HTTP · a mutation pauses for approval, then runs", T, async () => {
  const code = `return await tools.${slug}.org.main.mutation.addBook({ input: { title: "Dune", authorId: "a1", genre: "FICTION", tags: ["sand"] } })`;
  const before = gql.state.requests;
  const paused = await ex.execute(code, { autoApprove: false });
  assert.equal(paused.body.status, "paused", show(paused.body));
  assert.equal(gql.state.requests, before, "nothing sent before approval");
  const id = paused.body.structured.executionId;
  const done = await ex.api("POST", `/api/executions/${id}/resume`, { action: "accept" });
  const added = resultOf(done);
  assert.equal(added.ok, true, show(added));
  assert.equal(added.data.title, "Dune");
  assert.deepEqual(added.data.author, { id: "a1", name: "Ursula K. Le Guin" });
  assert.ok(gql.state.queries.at(-1).startsWith("mutation"), gql.state.queries.at(-1));
});

test("HTTP · endpoints that are not GraphQL are refused and nothing is stored; duplicates conflict", T, async () => {
  const before = (await ex.api("GET", "/api/integrations")).body.map((i) => i.slug);
  const closed = `http://127.0.0.1:${await closedPort()}/graphql`;
  for (const [endpoint, says] of [
    [gql.htmlUrl, "does not look like a GraphQL endpoint"],
    [closed, "Could not run the GraphQL introspection query"],
  ]) {
    const r = await ex.api("POST", "/api/graphql/integrations", { endpoint, slug: "not_graphql" });
    assert.equal(r.status, 400, show(r.body));
    assert.equal(r.body._tag, "GraphqlIntrospectionError", show(r.body));
    assert.ok(r.body.message.includes(says), show(r.body));
  }
  const afterwards = (await ex.api("GET", "/api/integrations")).body.map((i) => i.slug);
  assert.deepEqual(afterwards, before);
  assert.equal((await ex.api("GET", "/api/graphql/integrations/not_graphql")).body, null);

  const dup = await ex.api("POST", "/api/graphql/integrations", { endpoint: gql.url, slug });
  assert.equal(dup.status, 409, show(dup.body));
  assert.deepEqual({ ...dup.body, message: undefined }, { _tag: "IntegrationAlreadyExistsError", slug, message: undefined });
});

test("MCP · an agent calls GraphQL tools through execute, and approves a mutation with resume", T, async () => {
  const client = new Client({ name: "e2e-graphql", version: "0.0.1" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${ex.baseUrl}/mcp`), ex.mcpTransportOptions()));
  try {
    const found = await client.callTool({
      name: "execute",
      arguments: { code: `return (await tools.search({ query: "books of one genre", namespace: "${slug}" })).items.map((i) => i.path)` },
    });
    assert.equal(found.structuredContent?.result?.[0], `${slug}.org.main.query.books`, show(found));

    const read = await client.callTool({
      name: "execute",
      arguments: { code: `const r = await tools.${slug}.org.main.query.book({ id: "2" }); return r.data.author.name;` },
    });
    assert.equal(read.structuredContent?.result, "Carl Sagan", show(read));

    const paused = await client.callTool({
      name: "execute",
      arguments: {
        code: `return (await tools.${slug}.org.main.mutation.addBook({ input: { title: "Contact", authorId: "a2", genre: "FICTION" }, select: "title" })).data.title`,
      },
    });
    const executionId = paused.structuredContent?.executionId;
    assert.ok(executionId, show(paused));
    const done = await client.callTool({ name: "resume", arguments: { executionId, action: "accept" } });
    assert.equal(done.structuredContent?.result, "Contact", show(done));
  } finally {
    await client.close();
  }
});
