// Session-stateful MCP fixture servers for the e2e suite.
//
// `serveMcpServer()` is a Streamable HTTP MCP server built with the official
// SDK, shaped exactly like the seed scenario: every MCP session gets its own
// `McpServer` instance (state keyed by Mcp-Session-Id), `select_workspace`
// stores "ws-e2e" in the session and `get_workspace` reads it back.
//
// `serveSseMcpServer()` is the same tool set behind the legacy HTTP+SSE
// transport (`SSEServerTransport`): GET /sse opens the stream, POST
// /messages?sessionId=… carries client → server messages.
//
// Both record a request ledger: one entry per HTTP request with
// { httpMethod, path, rpcMethods, sessionId, status, at }.
import http from "node:http";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { SSEServerTransport } from "@modelcontextprotocol/sdk/server/sse.js";

/** The seed's two tools. */
export const SEED_TOOLS = ["select_workspace", "get_workspace"];
/** Extra tools registered when `extras: true`. */
export const EXTRA_TOOLS = ["slow", "fail_tool", "structured_tool", "echo"];
/** Tools that ask the client with `elicitation/create` while they run (`elicitation: true`). */
export const ELICITATION_TOOLS = ["confirm_delete", "confirm_unrelated", "open_link"];
/** The form `confirm_delete` asks for. */
export const CONFIRM_SCHEMA = {
  type: "object",
  properties: {
    confirm: { type: "boolean", description: "Really delete it?" },
    reason: { type: "string", description: "Why" },
  },
  required: ["confirm", "reason"],
};

/**
 * Build one McpServer (= one MCP session's state).
 * @param {{extras?: boolean, name?: string, elicitation?: boolean, elicitLog?: object[]}} opts
 */
export function makeSessionStatefulMcpServer({ extras = true, name = "session-stateful-test-server", elicitation = false, elicitLog = [] } = {}) {
  const server = new McpServer({ name, version: "1.0.0" }, { capabilities: {} });
  // Per-session: lives in this server instance, created per MCP session.
  let selected = null;

  server.registerTool(
    "select_workspace",
    { description: "Selects the workspace for this MCP session", inputSchema: {} },
    async () => {
      selected = "ws-e2e";
      return { content: [{ type: "text", text: "selected:ws-e2e" }] };
    },
  );
  server.registerTool(
    "get_workspace",
    { description: "Returns the workspace selected earlier in this MCP session", inputSchema: {} },
    async () => ({
      content: [{ type: "text", text: selected === null ? "no workspace selected" : `workspace:${selected}` }],
    }),
  );

  if (extras) {
    server.registerTool(
      "slow",
      {
        description: "Sleeps for `ms` milliseconds, then reports the session's workspace",
        inputSchema: { ms: z.number().int().min(0).max(60000).describe("milliseconds to sleep") },
      },
      async ({ ms }) => {
        await sleep(ms);
        return {
          content: [{ type: "text", text: `slept:${ms}:${selected === null ? "no workspace selected" : `workspace:${selected}`}` }],
        };
      },
    );
    server.registerTool(
      "fail_tool",
      { description: "Always answers with an MCP isError result", inputSchema: {} },
      async () => ({ isError: true, content: [{ type: "text", text: "fixture failure: something broke" }] }),
    );
    server.registerTool(
      "structured_tool",
      {
        description: "Returns structuredContent conforming to its outputSchema",
        inputSchema: { n: z.number().describe("a number to double") },
        outputSchema: { doubled: z.number(), label: z.string() },
      },
      async ({ n }) => {
        const structuredContent = { doubled: n * 2, label: `n=${n}` };
        return { content: [{ type: "text", text: JSON.stringify(structuredContent) }], structuredContent };
      },
    );
    server.registerTool(
      "echo",
      { description: "Echoes its `message` argument", inputSchema: { message: z.string() } },
      async ({ message }) => ({ content: [{ type: "text", text: `echo:${message}` }] }),
    );
  }
  if (elicitation) registerElicitationTools(server, elicitLog);
  return server;
}

/**
 * `confirm_delete {item}` asks (form, on the tool call's own SSE stream) for CONFIRM_SCHEMA and
 * answers with the JSON of what it got (`{action, content}`), or `declined` / `cancelled`;
 * `confirm_unrelated` asks the same without naming the tool call (the standalone GET stream);
 * `open_link` asks in URL mode → `link:<action>`. Every result (or failure) is pushed on `log`.
 */
function registerElicitationTools(server, log) {
  const ask = async (tool, params, extra, related = true) => {
    try {
      const result = await server.server.elicitInput(params, related ? { relatedRequestId: extra.requestId } : undefined);
      log.push({ tool, action: result.action, ...(result.content === undefined ? {} : { content: result.content }) });
      return result;
    } catch (e) {
      log.push({ tool, error: String(e?.message ?? e) });
      throw e;
    }
  };
  const confirm = (tool, related) => async ({ item }, extra) => {
    const r = await ask(tool, { mode: "form", message: `Delete ${item ?? "it"}? Confirm and give a reason.`, requestedSchema: CONFIRM_SCHEMA }, extra, related);
    const text = r.action === "accept" ? JSON.stringify({ action: "accept", content: r.content }) : r.action === "decline" ? "declined" : "cancelled";
    return { content: [{ type: "text", text }] };
  };
  server.registerTool(
    "confirm_delete",
    { description: "Deletes an item after asking the user to confirm", inputSchema: { item: z.string().optional() } },
    confirm("confirm_delete", true),
  );
  server.registerTool(
    "confirm_unrelated",
    { description: "Like confirm_delete, asking on the standalone stream", inputSchema: { item: z.string().optional() } },
    confirm("confirm_unrelated", false),
  );
  let links = 0;
  server.registerTool("open_link", { description: "Sends the user to a URL", inputSchema: {} }, async (_args, extra) => {
    const n = links++;
    const r = await ask("open_link", { mode: "url", message: "Sign in to continue.", url: `https://auth.example/link/${n}`, elicitationId: `link-${n}` }, extra);
    return { content: [{ type: "text", text: `link:${r.action}` }] };
  });
}

const rpcMethodsOf = (body) => {
  if (body === undefined || body === null) return [];
  const msgs = Array.isArray(body) ? body : [body];
  return msgs.map((m) => (m && typeof m === "object" ? (m.method ?? (m.result !== undefined || m.error !== undefined ? "<response>" : "?")) : "?"));
};

const readBody = (req) =>
  new Promise((resolve, reject) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });

const jsonRpcError = (res, status, code, message) => {
  if (res.headersSent) return;
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
};

const listen = (server) =>
  new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(server.address().port));
  });

const closeServer = (server) =>
  new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections?.();
  });

/**
 * Start a Streamable HTTP MCP fixture on 127.0.0.1:<random>.
 * @param {{extras?: boolean, path?: string, jsonResponse?: boolean, elicitation?: boolean}} opts
 */
export async function serveMcpServer({ extras = true, path = "/mcp", jsonResponse = false, elicitation = false } = {}) {
  let elicitLog = [];
  /** @type {Map<string, {transport: StreamableHTTPServerTransport, server: McpServer}>} */
  const sessions = new Map();
  const initialised = new Set(); // every id ever initialised
  const deleted = new Set(); // ids that received an HTTP DELETE (while known)
  const forgotten = new Set(); // ids dropped by forgetAllSessions()
  let ledger = [];

  const httpServer = http.createServer(async (req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    const sessionId = req.headers["mcp-session-id"];
    const entry = { httpMethod: req.method, path: url.pathname, rpcMethods: [], sessionId: sessionId || undefined, status: 0, at: Date.now() };
    ledger.push(entry);
    res.on("finish", () => {
      entry.status = res.statusCode;
    });
    try {
      if (url.pathname !== path) return jsonRpcError(res, 404, -32001, "Not found");
      let parsed;
      if (req.method === "POST") {
        const raw = await readBody(req);
        try {
          parsed = JSON.parse(raw);
        } catch {
          return jsonRpcError(res, 400, -32700, "Parse error");
        }
        entry.rpcMethods = rpcMethodsOf(parsed);
      }
      if (sessionId) {
        const s = sessions.get(sessionId);
        if (!s) return jsonRpcError(res, 404, -32001, "Session not found");
        if (req.method === "DELETE") {
          deleted.add(sessionId);
          await s.transport.handleRequest(req, res, parsed);
          sessions.delete(sessionId);
          return;
        }
        return await s.transport.handleRequest(req, res, parsed);
      }
      // No session id: only an initialize POST may open a session.
      const isInit = req.method === "POST" && entry.rpcMethods.includes("initialize");
      if (!isInit) return jsonRpcError(res, 400, -32000, "Bad Request: No valid session ID provided");
      const server = makeSessionStatefulMcpServer({ extras, elicitation, elicitLog: { push: (e) => elicitLog.push(e) } });
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: jsonResponse,
        onsessioninitialized: (id) => {
          sessions.set(id, { transport, server });
          initialised.add(id);
        },
      });
      transport.onclose = () => {
        const id = transport.sessionId;
        if (id && sessions.get(id)?.transport === transport) sessions.delete(id);
      };
      await server.connect(transport);
      await transport.handleRequest(req, res, parsed);
    } catch (err) {
      entry.error = String(err?.stack ?? err);
      jsonRpcError(res, 500, -32603, `Internal error: ${err?.message ?? err}`);
    }
  });
  const port = await listen(httpServer);

  return {
    url: `http://127.0.0.1:${port}${path}`,
    port,
    /** Ledger entries; `sessionId` is undefined for requests without an mcp-session-id header. */
    requests: () => ledger.map((e) => ({ ...e })),
    clearRequests: () => {
      ledger = [];
    },
    /** Elicitation results the tools received (`elicitation: true`), since the last clear. */
    elicitations: () => elicitLog.map((e) => ({ ...e })),
    clearElicitations: () => {
      elicitLog = [];
    },
    /** Distinct mcp-session-id values seen in the ledger (since the last clear). */
    sessionIdsInLedger: () => [...new Set(ledger.map((e) => e.sessionId).filter((s) => s !== undefined))],
    /** Sessions initialised and not yet DELETEd or forgotten. */
    liveSessions: () => [...sessions.keys()],
    initialisedSessions: () => [...initialised],
    deletedSessions: () => [...deleted],
    forgottenSessions: () => [...forgotten],
    /**
     * Drop all server-side session state WITHOUT telling the client: the next
     * request carrying an old id gets HTTP 404 "Session not found".
     */
    forgetAllSessions: async () => {
      const all = [...sessions.entries()];
      sessions.clear();
      for (const [id, s] of all) {
        forgotten.add(id);
        await s.server.close().catch(() => {});
      }
    },
    close: async () => {
      const all = [...sessions.values()];
      sessions.clear();
      for (const s of all) await s.server.close().catch(() => {});
      await closeServer(httpServer);
    },
  };
}

/**
 * Start a legacy HTTP+SSE MCP fixture (SDK `SSEServerTransport`).
 * The endpoint to register is `url` (GET /sse); messages go to /messages?sessionId=….
 * The ledger's `sessionId` is taken from the `sessionId` query parameter (or
 * the server-issued id for the GET /sse stream itself).
 */
export async function serveSseMcpServer({ extras = true } = {}) {
  /** @type {Map<string, {transport: SSEServerTransport, server: McpServer}>} */
  const sessions = new Map();
  const initialised = new Set();
  const closed = new Set();
  let ledger = [];

  const httpServer = http.createServer(async (req, res) => {
    const url = new URL(req.url, "http://127.0.0.1");
    const entry = { httpMethod: req.method, path: url.pathname, rpcMethods: [], sessionId: url.searchParams.get("sessionId") ?? undefined, status: 0, at: Date.now() };
    ledger.push(entry);
    res.on("finish", () => {
      entry.status = res.statusCode;
    });
    try {
      if (req.method === "GET" && url.pathname === "/sse") {
        const transport = new SSEServerTransport("/messages", res);
        const server = makeSessionStatefulMcpServer({ extras });
        const id = transport.sessionId;
        entry.sessionId = id;
        sessions.set(id, { transport, server });
        initialised.add(id);
        res.on("close", () => {
          sessions.delete(id);
          closed.add(id);
        });
        await server.connect(transport);
        return;
      }
      if (req.method === "POST" && url.pathname === "/messages") {
        const id = url.searchParams.get("sessionId");
        const s = id ? sessions.get(id) : undefined;
        const raw = await readBody(req);
        let parsed;
        try {
          parsed = JSON.parse(raw);
        } catch {
          res.writeHead(400).end("Invalid JSON");
          return;
        }
        entry.rpcMethods = rpcMethodsOf(parsed);
        if (!s) {
          res.writeHead(404).end("Session not found");
          return;
        }
        await s.transport.handlePostMessage(req, res, parsed);
        return;
      }
      // Anything else (including streamable-HTTP POSTs to /sse during "auto"
      // fallback probing) is refused the way a legacy-only server would.
      res.writeHead(req.method === "POST" ? 405 : 404, { "content-type": "text/plain" }).end("Not supported");
    } catch (err) {
      entry.error = String(err?.stack ?? err);
      if (!res.headersSent) res.writeHead(500).end(String(err?.message ?? err));
    }
  });
  const port = await listen(httpServer);

  return {
    url: `http://127.0.0.1:${port}/sse`,
    port,
    requests: () => ledger.map((e) => ({ ...e })),
    clearRequests: () => {
      ledger = [];
    },
    sessionIdsInLedger: () => [...new Set(ledger.map((e) => e.sessionId).filter((s) => s !== undefined))],
    liveSessions: () => [...sessions.keys()],
    initialisedSessions: () => [...initialised],
    closedSessions: () => [...closed],
    close: async () => {
      const all = [...sessions.values()];
      sessions.clear();
      for (const s of all) await s.server.close().catch(() => {});
      await closeServer(httpServer);
    },
  };
}

/** A local port that refuses connections (bound then closed). */
export async function closedPort() {
  const s = http.createServer();
  const port = await listen(s);
  await closeServer(s);
  return port;
}
