// Tool changes: what a listing of a connection's tools saw differ from the stored definitions
// (added, removed, changed), and accepting a changed definition so its calls stop pausing for it.
// Shapes are those crates/executor-server/src/wire.rs answers (`ToolChange`, `RefreshDiff`).

import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiError } from "./http";
import type * as T from "./types";

export type ToolChange = T.ToolChange;
export type ToolDiff = T.ToolDiff;
export type ChangedTool = T.ChangedTool;
export type RefreshDiff = T.RefreshDiff;
export type ToolChangeListQuery = T.ToolChangeListQuery;

export type ToolChangeKind = "added" | "removed" | "changed";

export const KIND_LABEL: Record<string, string> = { added: "Added", removed: "Removed", changed: "Changed" };

/** The fields a definition has, in the order a person reads them. */
export const DEFINITION_FIELDS = ["description", "inputSchema", "outputSchema", "annotations"] as const;

export const FIELD_LABEL: Record<string, string> = {
  name: "Name",
  description: "Description",
  inputSchema: "Input schema",
  outputSchema: "Output schema",
  annotations: "Annotations",
};

/** A change whose tool pauses every call for a person until someone accepts it. */
export const isWaiting = (c: Pick<ToolChange, "requiresAcceptance" | "acceptedAt">): boolean =>
  c.requiresAcceptance && c.acceptedAt === null;

/** True when a refresh saw nothing added, removed or changed. */
export const isEmptyDiff = (d: ToolDiff): boolean => d.added.length === 0 && d.removed.length === 0 && d.changed.length === 0;

/** One field of a definition before and after (`undefined`: the definition had no such field). */
export interface FieldChange {
  field: string;
  before: unknown;
  after: unknown;
}

const fieldOf = (definition: unknown, field: string): unknown =>
  definition && typeof definition === "object" ? (definition as Record<string, unknown>)[field] : undefined;

/**
 * The changed fields of a change, each with its value before and after. The server names them
 * (`fields`); a change that names none (an older record) compares every field of the definition.
 */
export function fieldChanges(c: Pick<ToolChange, "fields" | "before" | "after">): FieldChange[] {
  const named = c.fields.length > 0 ? c.fields : DEFINITION_FIELDS.filter((f) => JSON.stringify(fieldOf(c.before, f)) !== JSON.stringify(fieldOf(c.after, f)));
  return named.map((field) => ({ field, before: fieldOf(c.before, field), after: fieldOf(c.after, field) }));
}

/** A value as a person reads it in a `<pre>`: strings as they are, the rest as indented JSON. */
export function showValue(v: unknown): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  return JSON.stringify(v, null, 2);
}

// ---- calls --------------------------------------------------------------------------------

export const listToolChanges = (q: ToolChangeListQuery = {}) => api<ToolChange[]>("/tool-changes", { query: { ...q } });

export const acceptToolChange = (id: string) =>
  api<ToolChange>(`/tool-changes/${encodeURIComponent(id)}/accept`, { method: "POST", body: {} });

const connectionPath = (c: { owner: string; integration: string; name: string }) =>
  `/connections/${c.owner}/${encodeURIComponent(c.integration)}/${encodeURIComponent(c.name)}`;

/**
 * Re-lists a connection's tools and answers how they changed. A server without the diff route
 * (an older binary: plain 404) is refreshed the old way and answers no diff.
 */
export async function refreshConnectionDiff(c: { owner: string; integration: string; name: string }): Promise<RefreshDiff & { diffKnown: boolean }> {
  try {
    return { ...(await api<RefreshDiff>(`${connectionPath(c)}/refresh/diff`, { method: "POST", body: {} })), diffKnown: true };
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404 && e.tag === "Http404")) throw e;
    const tools = await api<T.Tool[]>(`${connectionPath(c)}/refresh`, { method: "POST", body: {} });
    return { tools, diff: { added: [], removed: [], changed: [] }, diffKnown: false };
  }
}

// ---- hooks --------------------------------------------------------------------------------

export function useToolChanges(q: ToolChangeListQuery = {}) {
  return useQuery({ queryKey: ["tool-changes", q], queryFn: () => listToolChanges(q) });
}

/** Accepts a change, then refetches every list of changes (and the tools, whose approval changed). */
export function useAcceptToolChange() {
  const client = useQueryClient();
  return useMutation({
    mutationFn: acceptToolChange,
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: ["tool-changes"] });
      void client.invalidateQueries({ queryKey: ["tools"] });
    },
  });
}

/** Refetches the lists of changes (after a refresh recorded new ones). */
export function useInvalidateToolChanges() {
  const client = useQueryClient();
  return () => void client.invalidateQueries({ queryKey: ["tool-changes"] });
}
