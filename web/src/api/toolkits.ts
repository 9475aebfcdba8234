// Toolkits: named allow-lists of tools, each served as its own MCP endpoint
// (`/mcp/toolkits/<slug>`). The `/toolkits` routes, their query hooks, and the small pieces of
// pattern logic the toolkit pages need (which connection a pattern grants).

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api } from "./http";
import { parsePattern, keyBetween } from "./policies";
import type * as T from "./types";

export type Toolkit = T.Toolkit;
export type ToolkitPolicy = T.ToolkitPolicy;
export type ToolkitConnection = T.ToolkitConnection;
export type ToolkitTool = T.ToolkitTool;
export type ToolkitOwner = Toolkit["owner"];
export type ToolkitAction = ToolkitPolicy["action"];

/** The local server is org-only: the console creates org toolkits. */
export const DEFAULT_TOOLKIT_OWNER: ToolkitOwner = "org";

/** The pattern of the built-in tools (`executor.coreTools.*`). */
export const CORE_TOOLS_PATTERN = "executor.coreTools.*";

export const toolkitsKey = ["toolkits"] as const;
const tk = (id: string) => `/toolkits/${encodeURIComponent(id)}`;

// ---- toolkits -----------------------------------------------------------------------------

export const listToolkits = () => api<{ toolkits: Toolkit[] }>("/toolkits").then((r) => r.toolkits);

export function useToolkits() {
  return useQuery({ queryKey: toolkitsKey, queryFn: listToolkits });
}

export const createToolkit = (input: { name: string; slug?: string; owner?: ToolkitOwner }) => {
  const body: T.CreateToolkitBody = { owner: input.owner ?? DEFAULT_TOOLKIT_OWNER, name: input.name };
  if (input.slug) body.slug = input.slug;
  return api<Toolkit>("/toolkits", { method: "POST", body });
};

export const updateToolkit = (id: string, patch: T.UpdateToolkitBody) =>
  api<Toolkit>(tk(id), { method: "PATCH", body: patch });

export const removeToolkit = (id: string) => api<{ removed: boolean }>(tk(id), { method: "DELETE" });

// ---- policies -----------------------------------------------------------------------------

export const toolkitPoliciesKey = (id: string) => ["toolkits", id, "policies"] as const;

export function useToolkitPolicies(id: string | undefined) {
  return useQuery({
    queryKey: toolkitPoliciesKey(id ?? ""),
    queryFn: () => api<{ policies: ToolkitPolicy[] }>(`${tk(id!)}/policies`).then((r) => r.policies),
    enabled: !!id,
  });
}

/** Without `position` the server puts the new rule at the top. */
export const createToolkitPolicy = (id: string, body: T.CreateToolkitPolicyBody & { action: ToolkitAction }) =>
  api<ToolkitPolicy>(`${tk(id)}/policies`, { method: "POST", body });

export const updateToolkitPolicy = (
  id: string,
  policyId: string,
  patch: T.UpdateToolkitPolicyBody & { action?: ToolkitAction },
) => api<ToolkitPolicy>(`${tk(id)}/policies/${encodeURIComponent(policyId)}`, { method: "PATCH", body: patch });

export const removeToolkitPolicy = (id: string, policyId: string) =>
  api<{ removed: boolean }>(`${tk(id)}/policies/${encodeURIComponent(policyId)}`, { method: "DELETE" });

// ---- connections --------------------------------------------------------------------------

export const toolkitConnectionsKey = (id: string) => ["toolkits", id, "connections"] as const;

export function useToolkitConnections(id: string | undefined) {
  return useQuery({
    queryKey: toolkitConnectionsKey(id ?? ""),
    queryFn: () => api<{ connections: ToolkitConnection[] }>(`${tk(id!)}/connections`).then((r) => r.connections),
    enabled: !!id,
  });
}

/** A duplicate pattern answers the existing row. */
export const addToolkitConnection = (id: string, pattern: string) =>
  api<ToolkitConnection>(`${tk(id)}/connections`, { method: "POST", body: { pattern } satisfies T.CreateToolkitConnectionBody });

export const removeToolkitConnection = (id: string, connectionId: string) =>
  api<{ removed: boolean }>(`${tk(id)}/connections/${encodeURIComponent(connectionId)}`, { method: "DELETE" });

// ---- tools --------------------------------------------------------------------------------

export const toolkitToolsKey = (id: string) => ["toolkits", id, "tools"] as const;

/** The tools the toolkit exposes (blocked ones are not listed). */
export function useToolkitTools(id: string | undefined) {
  return useQuery({
    queryKey: toolkitToolsKey(id ?? ""),
    queryFn: () => api<{ tools: ToolkitTool[] }>(`${tk(id!)}/tools`).then((r) => r.tools),
    enabled: !!id,
  });
}

/** Invalidates everything a change to toolkit `id` can touch (its counts are on the list). */
export function useInvalidateToolkit() {
  const client = useQueryClient();
  return (id?: string) => {
    void client.invalidateQueries({ queryKey: toolkitsKey, exact: true });
    if (id) void client.invalidateQueries({ queryKey: ["toolkits", id] });
  };
}

/**
 * Puts a just-created or renamed toolkit into the cached list, so a page that looks it up by slug
 * finds it at once (the refetch that follows confirms it).
 */
export function useRememberToolkit() {
  const client = useQueryClient();
  return (toolkit: Toolkit) => {
    client.setQueryData<Toolkit[]>(toolkitsKey, (old) =>
      old ? [...old.filter((t) => t.id !== toolkit.id), toolkit] : [toolkit],
    );
    void client.invalidateQueries({ queryKey: toolkitsKey, exact: true });
  };
}

// ---- helpers ------------------------------------------------------------------------------

/** The pattern that grants one connection: `<integration>.<owner>.<connection>.*`. */
export const connectionPattern = (c: { integration: string; owner: string; name: string }) =>
  `${c.integration}.${c.owner}.${c.name}.*`;

/** The id toolkit patterns match: `<integration>.<owner>.<connection>.<tool>`, or a static tool's fqid. */
export function toolkitToolId(t: { address: string; integration: string; owner: string; connection: string; name: string; static?: boolean }): string {
  if (t.static) return t.address.startsWith("tools.") ? t.address.slice(6) : t.address;
  return `${t.integration}.${t.owner}.${t.connection}.${t.name}`;
}

/**
 * How `pattern` relates to the tools under the id prefix `prefix` (e.g. `["github","org","main"]`):
 * "all" when it matches every tool there, "some" when it may match some of them, "none" otherwise.
 */
export function patternCoverage(pattern: string, prefix: string[]): "all" | "some" | "none" {
  const parsed = parsePattern(pattern);
  if (!parsed.ok) return "none";
  const { segments, trailing } = parsed.pattern;
  const n = Math.min(segments.length, prefix.length);
  for (let i = 0; i < n; i++) {
    const s = segments[i];
    if (s !== null && s !== prefix[i]) return "none";
  }
  if (segments.length <= prefix.length) {
    // Every segment is consumed by the prefix: a trailing `*` covers all below it; an exact
    // pattern of that length names no tool (tools lie deeper than the prefix).
    return trailing ? "all" : "none";
  }
  return "some";
}

/** The first matching toolkit rule decides: the rules in the server's order (position, then id). */
export function sortRules(rules: ToolkitPolicy[]): ToolkitPolicy[] {
  return [...rules].sort((a, b) =>
    a.position < b.position ? -1 : a.position > b.position ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
  );
}

/** The position that moves `rule` one place up (-1) or down (+1); null at an end. */
export function rulePositionForMove(rules: ToolkitPolicy[], rule: ToolkitPolicy, direction: -1 | 1): string | null {
  const sorted = sortRules(rules);
  const i = sorted.findIndex((r) => r.id === rule.id);
  const j = i + direction;
  if (i < 0 || j < 0 || j >= sorted.length) return null;
  const [lo, hi] = direction < 0 ? [sorted[j - 1], sorted[j]] : [sorted[j], sorted[j + 1]];
  return keyBetween(lo?.position ?? null, hi?.position ?? null);
}

/** The toolkit's MCP endpoint on this origin. */
export const toolkitMcpUrl = (slug: string) => `${window.location.origin}/mcp/toolkits/${slug}`;

/** The stdio relay command for clients that launch a local process. */
export const toolkitStdioCommand = (slug: string) => `executor mcp --toolkit ${slug}`;
