// A stdio MCP server built with the official SDK (`StdioServerTransport`), for the stdio-upstream
// e2e tests: one process = one MCP session. `select_workspace` / `get_workspace` keep state in
// the process, `env {name}` answers an environment variable (to see a connection's `stdio_env`
// values arrive), `pid` answers the process id (to check the process is gone after close).
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "e2e-stdio-server", version: "1.0.0" }, { capabilities: {} });
let selected = null;
const text = (t) => ({ content: [{ type: "text", text: t }] });

server.registerTool(
  "select_workspace",
  { description: "Selects the workspace for this MCP session", inputSchema: { workspace: z.string().optional() } },
  async ({ workspace }) => {
    selected = workspace ?? "ws-stdio";
    return text(`selected:${selected}`);
  },
);
server.registerTool(
  "get_workspace",
  { description: "Returns the workspace selected earlier in this MCP session", inputSchema: {} },
  async () => text(selected === null ? "no workspace selected" : `workspace:${selected}`),
);
server.registerTool(
  "env",
  { description: "Returns the value of an environment variable", inputSchema: { name: z.string() } },
  async ({ name }) => text(process.env[name] ?? `<unset ${name}>`),
);
server.registerTool("pid", { description: "Returns the server's process id", inputSchema: {} }, async () =>
  text(String(process.pid)),
);

process.stderr.write("e2e-stdio-server: ready\n");
await server.connect(new StdioServerTransport());
