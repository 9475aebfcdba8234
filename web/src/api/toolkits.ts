// Toolkits: named allow-lists of tools, each served as its own MCP endpoint
// (`/mcp/toolkits/<slug>`). The `/toolkits` routes, their query hooks, and the small pieces of
// pattern logic the toolkit pages need (which connection a pattern grants).

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api } from "./http";
import { keyBetween, parsePattern, thenRefetch, type RuleWriter } from "./policies";
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

/** What a toolkit lists under its path: its rules, the patterns it grants, the tools it exposes. */
type Part = "policies" | "connections" | "tools";

/** The path of a toolkit's `part`, or of one item of it. */
const partPath = (id: string, part: Part, itemId?: string) =>
  `${tk(id)}/${part}${itemId === undefined ? "" : `/${encodeURIComponent(itemId)}`}`;

export const toolkitPartKey = (id: string, part: Part) => ["toolkits", id, part] as const;

/** One of a toolkit's lists (`GET /toolkits/<id>/<part>` answers `{ <part>: [...] }`). */
function useToolkitPart<T>(id: string | undefined, part: Part) {
  return useQuery({
    queryKey: toolkitPartKey(id ?? "", part),
    queryFn: () => api<Record<Part, T[]>>(partPath(id!, part)).then((r) => r[part]),
    enabled: !!id,
  });
}

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

export const useToolkitPolicies = (id: string | undefined) => useToolkitPart<ToolkitPolicy>(id, "policies");

/** Without `position` the server puts the new rule at the top. */
export const createToolkitPolicy = (id: string, body: T.CreateToolkitPolicyBody & { action: ToolkitAction }) =>
  api<ToolkitPolicy>(partPath(id, "policies"), { method: "POST", body });

export const updateToolkitPolicy = (
  id: string,
  policyId: string,
  patch: T.UpdateToolkitPolicyBody & { action?: ToolkitAction },
) => api<ToolkitPolicy>(partPath(id, "policies", policyId), { method: "PATCH", body: patch });

export const removeToolkitPolicy = (id: string, policyId: string) =>
  api<{ removed: boolean }>(partPath(id, "policies", policyId), { method: "DELETE" });

// ---- connections --------------------------------------------------------------------------

export const useToolkitConnections = (id: string | undefined) => useToolkitPart<ToolkitConnection>(id, "connections");

/** A duplicate pattern answers the existing row. */
export const addToolkitConnection = (id: string, pattern: string) =>
  api<ToolkitConnection>(partPath(id, "connections"), { method: "POST", body: { pattern } satisfies T.CreateToolkitConnectionBody });

export const removeToolkitConnection = (id: string, connectionId: string) =>
  api<{ removed: boolean }>(partPath(id, "connections", connectionId), { method: "DELETE" });

// ---- tools --------------------------------------------------------------------------------

/** The tools the toolkit exposes (blocked ones are not listed). */
export const useToolkitTools = (id: string | undefined) => useToolkitPart<ToolkitTool>(id, "tools");

/** Invalidates everything a change to toolkit `id` can touch (its counts are on the list). */
export function useInvalidateToolkit() {
  const client = useQueryClient();
  return (id?: string) => {
    void client.invalidateQueries({ queryKey: toolkitsKey, exact: true });
    if (id) void client.invalidateQueries({ queryKey: ["toolkits", id] });
  };
}

/**
 * The writer of toolkit `id`'s rules (`rules` as listed): a new rule goes to the top (the server's
 * place for one without a position), so the latest choice wins. A write refetches the toolkit.
 */
export function useToolkitRules(id: string, rules: ToolkitPolicy[]): RuleWriter<ToolkitPolicy> {
  const invalidate = useInvalidateToolkit();
  const refetch = () => invalidate(id);
  return {
    exact: (pattern) => rules.find((r) => r.pattern === pattern),
    create: (pattern, action) => thenRefetch(createToolkitPolicy(id, { pattern, action }), refetch),
    update: (rule, patch) => thenRefetch(updateToolkitPolicy(id, rule.id, patch), refetch),
    remove: (rule) => thenRefetch(removeToolkitPolicy(id, rule.id), refetch),
    positionForMove: (rule, direction) => rulePositionForMove(rules, rule, direction),
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
