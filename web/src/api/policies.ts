// Tool policies: the `/policies` routes, and the server's pattern grammar and default placement
// mirrored here so the console can check a pattern and count its matches as the user types.
// The grammar is crates/executor-core/src/policy.rs; keep the two in step.

import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api } from "./http";
import { useOwnerRights } from "./team";
import type * as T from "./types";

export type PolicyAction = T.Policy["action"];
export type PolicyOwner = T.Policy["owner"];

export type Policy = T.Policy;

export const ACTION_LABELS: Record<PolicyAction, string> = {
  approve: "Always run",
  require_approval: "Require approval",
  block: "Block",
};

/**
 * The local server keeps every rule org-owned ("Local"); the console writes org rules there. On the
 * team server the owner comes from `useOwnerRights` (a member's rules are their own).
 */
export const DEFAULT_OWNER: PolicyOwner = "org";

export const policiesKey = ["policies"] as const;

/** Every rule, in the server's order (user rules first, then org, each by position). */
export function usePolicies() {
  return useQuery({ queryKey: policiesKey, queryFn: () => api<Policy[]>("/policies") });
}

/** A rule as the menus and the rules table see it: global policies and toolkit rules alike. */
export interface RuleLike {
  id: string;
  pattern: string;
  action: PolicyAction;
}

/**
 * One set of rules and how to write it, so a menu or a table serves the global policies and a
 * toolkit's rules alike. Each write refetches what it changed, failed or not.
 */
export interface RuleWriter<R extends RuleLike = RuleLike> {
  /** The rule whose pattern is exactly `pattern` (the one a menu sets or clears). */
  exact(pattern: string): R | undefined;
  create(pattern: string, action: PolicyAction): Promise<unknown>;
  update(rule: R, patch: { action?: PolicyAction; position?: string }): Promise<unknown>;
  remove(rule: R): Promise<unknown>;
  /** The position that moves `rule` one place up (-1) or down (+1) in its list; null at an end. */
  positionForMove(rule: R, direction: -1 | 1): string | null;
}

/** Runs `write`, then `refetch` whether it worked or not. */
export async function thenRefetch<T>(write: Promise<T>, refetch: () => void): Promise<T> {
  try {
    return await write;
  } finally {
    refetch();
  }
}

/** The global rules' writer, which can also add a rule for a chosen owner (the add form's). */
export interface GlobalRuleWriter extends RuleWriter<Policy> {
  createAs(owner: PolicyOwner, pattern: string, action: PolicyAction): Promise<unknown>;
}

/**
 * The writer of the global rules: a new rule goes below the more specific ones of its owner. The
 * menus write the org's rules, except a team member's, which are their own (the server refuses a
 * member's org rule). A write refetches the policies, and with `tools` the tool lists too.
 */
export function useGlobalRules(policies: Policy[], options: { tools?: boolean } = {}): GlobalRuleWriter {
  const client = useQueryClient();
  const owner = useOwnerRights().ruleOwner;
  const refetch = () => {
    void client.invalidateQueries({ queryKey: policiesKey });
    if (options.tools) void client.invalidateQueries({ queryKey: ["tools"] });
  };
  const createAs = (as: PolicyOwner, pattern: string, action: PolicyAction) =>
    thenRefetch(createPolicy({ pattern, action, owner: as, position: positionForNewPattern(policies, pattern, as) }), refetch);
  return {
    exact: (pattern) => policies.find((p) => p.owner === owner && p.pattern === pattern),
    create: (pattern, action) => createAs(owner, pattern, action),
    createAs,
    update: (rule, patch) => thenRefetch(updatePolicy(rule.id, { owner: rule.owner, ...patch }), refetch),
    remove: (rule) => thenRefetch(removePolicy(rule.id, rule.owner), refetch),
    positionForMove: (rule, direction) => positionForMove(policies, rule, direction),
  };
}

export function createPolicy(input: {
  pattern: string;
  action: PolicyAction;
  owner?: PolicyOwner;
  position?: string;
}): Promise<Policy> {
  return api<Policy>("/policies", {
    method: "POST",
    body: { owner: input.owner ?? DEFAULT_OWNER, pattern: input.pattern, action: input.action, position: input.position },
  });
}

/** `owner` names the rule's current owner (the server looks the rule up by id and owner). */
export function updatePolicy(
  id: string,
  patch: { owner: PolicyOwner; pattern?: string; action?: PolicyAction; position?: string },
): Promise<Policy> {
  return api<Policy>(`/policies/${encodeURIComponent(id)}`, { method: "PATCH", body: patch });
}

export function removePolicy(id: string, owner: PolicyOwner = DEFAULT_OWNER): Promise<{ removed: boolean }> {
  return api<{ removed: boolean }>(`/policies/${encodeURIComponent(id)}`, { method: "DELETE", body: { owner } });
}

// ---- the pattern grammar ------------------------------------------------------------------

export const MAX_PATTERN_LEN = 1024;

interface ParsedPattern {
  /** Segments before the trailing `*`; `null` stands for a non-trailing `*` (exactly one segment). */
  segments: (string | null)[];
  trailing: boolean;
}

export type PatternCheck = { ok: true; pattern: ParsedPattern } | { ok: false; error: string };

/** Checks a pattern with the server's rules; the error sentences are the server's. */
export function parsePattern(raw: string): PatternCheck {
  const fail = (error: string): PatternCheck => ({ ok: false, error });
  if (raw === "") return fail('the pattern is empty; use "*" to match every tool');
  const bytes = new TextEncoder().encode(raw).length;
  if (bytes > MAX_PATTERN_LEN) return fail(`the pattern is ${bytes} bytes long; at most ${MAX_PATTERN_LEN} are allowed`);
  if (raw === "*") return { ok: true, pattern: { segments: [], trailing: true } };
  const parts = raw.split(".");
  const last = parts.length - 1;
  const segments: (string | null)[] = [];
  let trailing = false;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    const position = i + 1;
    if (part === "") {
      if (i === 0)
        return fail(`the pattern starts with '.'; start with the integration, e.g. "github.*" or "github.*.*.create_issue"`);
      if (i === last)
        return fail(`the pattern ends with '.'; end with a segment name, or with ".*" to match everything below the prefix`);
      return fail(`segment ${position} is empty (".."); segments are separated by a single '.'`);
    }
    // Rust's char::is_whitespace / is_control, near enough: Unicode White_Space and Cc.
    const bad = [...part].find((c) => /[\s\p{Cc}]/u.test(c));
    if (bad !== undefined)
      return fail(
        `segment ${position} (${JSON.stringify(part)}) contains ${JSON.stringify(bad)}; tool ids never contain whitespace or control characters`,
      );
    if (part === "*") {
      if (i === 0)
        return fail(`the pattern starts with "*"; only "*" on its own may (it matches every tool); start with the integration, e.g. "github.*"`);
      if (i === last) trailing = true;
      else segments.push(null);
    } else if (part.includes("*")) {
      if (/^\*+$/.test(part))
        return fail(`segment ${position} is ${JSON.stringify(part)}; write a single "*" (a trailing "*" already matches everything deeper)`);
      return fail(`segment ${position} (${JSON.stringify(part)}) mixes letters with '*'; a wildcard must be a whole segment ("*")`);
    } else {
      segments.push(part);
    }
  }
  return { ok: true, pattern: { segments, trailing } };
}

function matchesParsed(p: ParsedPattern, toolId: string): boolean {
  const parts = toolId.split(".");
  if (parts.length < p.segments.length) return false;
  for (let i = 0; i < p.segments.length; i++) {
    const s = p.segments[i];
    if (s !== null && s !== parts[i]) return false;
  }
  return p.trailing || parts.length === p.segments.length;
}

/**
 * Whether `pattern` matches a tool's policy id (`<integration>.<owner>.<connection>.<tool>`, no
 * `tools.` root; for static tools the fqid `executor.<name>`, where the name starts `coreTools.`). An invalid pattern
 * matches nothing.
 */
export function matchesPattern(pattern: string, toolPath: string): boolean {
  const parsed = parsePattern(pattern);
  const id = toolPath.startsWith("tools.") ? toolPath.slice("tools.".length) : toolPath;
  return parsed.ok && matchesParsed(parsed.pattern, id);
}

/** Higher = more specific: `*` 0; trailing-`*` 2×literals; exact 2×literals+1. */
export function specificity(pattern: string): number {
  const parsed = parsePattern(pattern);
  if (!parsed.ok) return 0;
  const literals = parsed.pattern.segments.filter((s) => s !== null).length;
  return parsed.pattern.trailing ? 2 * literals : 2 * literals + 1;
}

/** A tool as `GET /api/tools` lists it, reduced to what its policy id needs. */
export interface ToolIdentity {
  integration: string;
  owner: string;
  connection: string;
  name: string;
  static?: boolean;
}

/** The id patterns match against (mirrors the engine's `policy_tool_ids`). */
export function policyIdOf(t: ToolIdentity): string {
  return t.static ? `${t.integration}.${t.name}` : `${t.integration}.${t.owner}.${t.connection}.${t.name}`;
}

// ---- positions ----------------------------------------------------------------------------

const DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/**
 * A key strictly between `a` ("" = start) and `b` (null = end), byte-wise, never ending in '0'
 * (so there is always room below it). The server accepts any `[0-9A-Za-z]` key.
 */
function midpoint(a: string, b: string | null): string {
  if (b !== null) {
    // Keep the shared prefix (reading a missing digit of `a` as '0').
    let n = 0;
    while (n < b.length && (a[n] ?? "0") === b[n]) n++;
    if (n > 0) return b.slice(0, n) + midpoint(a.slice(n), b.slice(n));
  }
  const da = a ? DIGITS.indexOf(a[0]!) : 0;
  const db = b !== null ? DIGITS.indexOf(b[0]!) : DIGITS.length;
  if (db - da > 1) return DIGITS[Math.round((da + db) / 2)]!;
  // Adjacent digits: `b`'s first digit alone sorts between when `b` is longer; else go deeper after `a`.
  if (b !== null && b.length > 1) return b.slice(0, 1);
  return DIGITS[da]! + midpoint(a.slice(1), null);
}

/** A position strictly between two neighbours (either may be absent). */
export function keyBetween(before: string | null | undefined, after: string | null | undefined): string {
  const a = before ?? "";
  const b = after ?? null;
  if (b !== null && a >= b) return a + "V"; // corrupt neighbours: anything after `a` keeps `a` first
  return midpoint(a, b);
}

function byPosition(a: Policy, b: Policy): number {
  return a.position < b.position ? -1 : a.position > b.position ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/** One owner's rules in precedence order. */
export function rulesOf(policies: Policy[], owner: PolicyOwner): Policy[] {
  return policies.filter((p) => p.owner === owner).sort(byPosition);
}

/**
 * Where a new rule goes so that more specific rules keep precedence: just below the last rule of
 * that owner that is more specific than `pattern` (mirrors the server's `default_position`).
 */
export function positionForNewPattern(policies: Policy[], pattern: string, owner: PolicyOwner = DEFAULT_OWNER): string {
  const mine = rulesOf(policies, owner);
  const spec = specificity(pattern);
  let idx = 0;
  for (let i = mine.length - 1; i >= 0; i--) {
    if (specificity(mine[i]!.pattern) > spec) {
      idx = i + 1;
      break;
    }
  }
  const before = idx > 0 ? mine[idx - 1]!.position : null;
  const after = mine.slice(idx).find((r) => before === null || r.position > before)?.position ?? null;
  return keyBetween(before, after);
}

/** The position that moves `policy` one place up (-1) or down (+1) among its owner's rules; null at an end. */
export function positionForMove(policies: Policy[], policy: Policy, direction: -1 | 1): string | null {
  const mine = rulesOf(policies, policy.owner);
  const i = mine.findIndex((p) => p.id === policy.id);
  const j = i + direction;
  if (i < 0 || j < 0 || j >= mine.length) return null;
  // Moving up lands between the rule two above and the one above; down between the next two.
  const [lo, hi] = direction < 0 ? [mine[j - 1], mine[j]] : [mine[j], mine[j + 1]];
  return keyBetween(lo?.position ?? null, hi?.position ?? null);
}
