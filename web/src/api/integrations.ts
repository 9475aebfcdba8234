// Integrations, connections and tools: typed calls onto the HTTP API and the query hooks the
// pages share, so every page reads and invalidates the same keys.

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api } from "./http";
import type * as T from "./types";

export type Owner = T.Connection["owner"];

export type Placement = T.Placement;

export type AuthMethodView = T.AuthMethod;

export type Integration = T.Integration;

export type HealthResult = T.HealthResult;

export type Connection = T.Connection;

export type Tool = T.Tool;

export type ToolSchema = T.ToolSchema;

// ---- integrations -----------------------------------------------------------------------

export const listIntegrations = () => api<Integration[]>("/integrations");
export const getIntegration = (slug: string) => api<Integration>(`/integrations/${encodeURIComponent(slug)}`);
export const patchIntegration = (slug: string, body: { name?: string; description?: string }) =>
  api<Integration>(`/integrations/${encodeURIComponent(slug)}`, { method: "PATCH", body });
export const removeIntegration = (slug: string) =>
  api<{ removed: boolean }>(`/integrations/${encodeURIComponent(slug)}`, { method: "DELETE" });

export function useIntegrations() {
  return useQuery({ queryKey: ["integrations"], queryFn: listIntegrations });
}

export function useIntegration(slug: string) {
  return useQuery({ queryKey: ["integration", slug], queryFn: () => getIntegration(slug) });
}

// ---- connections ------------------------------------------------------------------------

export const listConnections = (integration?: string) =>
  api<Connection[]>("/connections", { query: { integration } });

export function useConnections(integration?: string) {
  return useQuery({
    queryKey: integration ? ["connections", integration] : ["connections"],
    queryFn: () => listConnections(integration),
  });
}

const connectionPath = (c: { owner: Owner; integration: string; name: string }) =>
  `/connections/${c.owner}/${encodeURIComponent(c.integration)}/${encodeURIComponent(c.name)}`;

export type CredentialOrigin =
  | { value: string }
  | { values: Record<string, string> }
  | { from: { provider: string; id: string } };

export interface CreateConnectionInput {
  owner: Owner;
  name: string;
  integration: string;
  template: string;
  identityLabel?: string;
  description?: string;
  replace?: boolean;
}

export const createConnection = (input: CreateConnectionInput & Partial<CredentialOrigin>) =>
  api<Connection>("/connections", { body: input });

export const patchConnection = (
  c: Connection,
  body: { description?: string | null; identityLabel?: string | null },
) => api<Connection>(connectionPath(c), { method: "PATCH", body });

export const removeConnection = (c: Connection) =>
  api<{ removed: boolean }>(connectionPath(c), { method: "DELETE" });

export const refreshConnection = (c: Connection) =>
  api<Tool[]>(`${connectionPath(c)}/refresh`, { method: "POST", body: {} });

export const checkConnectionHealth = (c: Connection) =>
  api<HealthResult | null>(`${connectionPath(c)}/health`, { method: "POST", body: {} });

export const validateConnection = (
  input: { owner: Owner; integration: string; template: string } & CredentialOrigin,
) => api<HealthResult | null>("/connections/validate", { body: input });

// ---- tools ------------------------------------------------------------------------------

export const listTools = (integration?: string) =>
  api<Tool[]>("/tools", { query: { integration, includeAnnotations: integration ? undefined : false } });

export function useTools(integration?: string) {
  return useQuery({
    queryKey: integration ? ["tools", integration] : ["tools"],
    queryFn: () => listTools(integration),
  });
}

export function useToolSchema(address: string | null) {
  return useQuery({
    queryKey: ["tools", "schema", address],
    queryFn: () => api<ToolSchema>("/tools/schema", { query: { address: address! } }),
    enabled: !!address,
    staleTime: 60_000,
  });
}

/** The path policies match: the address without its `tools.` root. */
export const toolPath = (t: Tool) => (t.address.startsWith("tools.") ? t.address.slice(6) : t.address);

// ---- add flows --------------------------------------------------------------------------

export interface McpProbe {
  connected: boolean;
  requiresAuthentication: boolean;
  requiresOAuth: boolean;
  supportsDynamicRegistration: boolean;
  name: string;
  slug: string;
  toolCount: number | null;
  serverName?: string;
  instructions?: string;
}

export const probeMcp = (endpoint: string, signal?: AbortSignal) =>
  api<McpProbe>("/mcp/probe", { body: { endpoint }, signal });

export interface AddMcpRemote {
  transport: "remote";
  name: string;
  description?: string;
  endpoint: string;
  slug?: string;
  headers?: Record<string, string>;
  auth?: { kind: "none" } | { kind: "header"; headerName: string; prefix?: string } | { kind: "oauth2" };
}

export interface AddMcpStdio {
  transport: "stdio";
  name: string;
  description?: string;
  slug?: string;
  command: string;
  args: string[];
  envVars: string[];
}

export const addMcpServer = (body: AddMcpRemote | AddMcpStdio) => api<{ slug: string }>("/mcp/servers", { body });

export interface OpenApiPreview {
  title?: string;
  description?: string;
  version?: string;
  servers: { url: string; description?: string }[];
  operationCount: number;
  tags: string[];
  securitySchemes: { name: string; kind: string; location?: string; paramName?: string; scheme?: string }[];
  authStrategies: { kind: string; slug: string; label?: string; placements?: Placement[] }[];
  headerPresets: unknown[];
  oauth2Presets: { slug: string; flow: string; scopes: string[] }[];
  skipped: { operation: string; message: string }[];
  healthCheckCandidates: {
    operation: string;
    method: string;
    requiredArgCount: number;
    destructive: boolean;
    summary?: string;
  }[];
}

export const previewOpenApi = (spec: string, signal?: AbortSignal) =>
  api<OpenApiPreview>("/openapi/preview", { body: { spec }, signal });

export interface AddOpenApi {
  spec: { kind: "url"; url: string } | { kind: "blob"; value: string };
  slug?: string;
  name?: string;
  description?: string;
  baseUrl?: string;
  healthCheck?: { operation: string };
}

export const addOpenApi = (body: AddOpenApi) =>
  api<{ slug: string; toolCount: number; skipped: { operation: string; message: string }[] }>("/openapi/specs", {
    body,
  });

export interface AddGraphql {
  endpoint: string;
  slug?: string;
  name?: string;
  description?: string;
  authenticationTemplate?: unknown[];
}

export const addGraphql = (body: AddGraphql) => api<{ slug: string; name: string }>("/graphql/integrations", { body });

// ---- OAuth ------------------------------------------------------------------------------

export interface OAuthProbe {
  authorizationUrl: string;
  tokenUrl: string;
  issuer?: string;
  resource?: string;
  scopesSupported?: string[];
  registrationEndpoint?: string;
  tokenEndpointAuthMethodsSupported?: string[];
}

export const probeOAuth = (url: string) => api<OAuthProbe>("/oauth/probe", { body: { url } });

export const registerDynamicClient = (body: {
  owner: Owner;
  registrationEndpoint: string;
  authorizationUrl: string;
  tokenUrl: string;
  issuer?: string;
  resource?: string;
  scopes?: string[];
  tokenEndpointAuthMethodsSupported?: string[];
  clientName?: string;
  originIntegration?: string;
}) => api<{ client: string }>("/oauth/clients/register-dynamic", { body });

export type OAuthStartResult =
  | { status: "connected"; connection: Connection }
  | { status: "redirect"; authorizationUrl: string; state: string };

export const startOAuth = (body: {
  client: string;
  clientOwner: Owner;
  owner: Owner;
  name: string;
  integration: string;
  template: string;
  identityLabel?: string;
}) => api<OAuthStartResult>("/oauth/start", { body });

export const cancelOAuth = (state: string) => api<unknown>("/oauth/cancel", { body: { state } });

export interface OAuthClient {
  owner: Owner;
  slug: string;
  grant: string;
  authorizationUrl: string;
  tokenUrl: string;
  clientId: string;
  origin: { kind: string; integration?: string };
}

export function useOAuthClients() {
  return useQuery({ queryKey: ["oauth-clients"], queryFn: () => api<OAuthClient[]>("/oauth/clients") });
}

// ---- executions -------------------------------------------------------------------------

export type ExecutionOutcome =
  | { status: "completed"; text: string; structured: unknown; isError: boolean }
  | { status: "paused"; text: string; structured: unknown };

export const execute = (code: string) =>
  api<ExecutionOutcome>("/executions", { body: { code, autoApprove: true } });

/** Invalidates what a change to one integration can touch. */
export function useInvalidateIntegration() {
  const client = useQueryClient();
  return (slug?: string) => {
    void client.invalidateQueries({ queryKey: ["integrations"] });
    if (slug) void client.invalidateQueries({ queryKey: ["integration", slug] });
    void client.invalidateQueries({ queryKey: ["connections"] });
    void client.invalidateQueries({ queryKey: ["tools"] });
    void client.invalidateQueries({ queryKey: ["policies"] });
  };
}
