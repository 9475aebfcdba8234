// The policy menu of the tool trees and tool panels, and the decision dot and badge: the menu
// writes one exact rule through a `RuleWriter`, so an integration's page writes connection-agnostic
// org rules (`integration.*.*.group.tool`, one choice for every connection) and a toolkit's page
// writes the toolkit's own rules with the exact displayed id.

import * as DropdownMenu from "@radix-ui/react-dropdown-menu";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { describeError } from "../api/http";
import { ACTION_LABELS, matchesPattern, rulesOf, type Policy, type PolicyAction, type RuleWriter } from "../api/policies";

const RANK: Record<PolicyAction, number> = { approve: 0, require_approval: 1, block: 2 };

/** The actions in the order menus and selects offer them. */
export const ACTIONS: PolicyAction[] = ["approve", "require_approval", "block"];

/** The badge tone of an action. */
export const actionTone = (a: PolicyAction) => (a === "approve" ? "ok" : a === "require_approval" ? "warn" : "danger");

export interface Decision {
  action: PolicyAction;
  /** The rule that decided, absent for the plugin default. */
  rule?: { pattern: string };
}

/**
 * The server's resolution (crates/executor-core/src/policy.rs `resolve`): each owner's first
 * matching rule, the most restrictive wins; no match → the tool's default.
 */
export function effectiveDecision(policies: Policy[], toolId: string, requiresApproval: boolean): Decision {
  let best: Decision | undefined;
  for (const owner of ["user", "org"] as const) {
    const rule = rulesOf(policies, owner).find((r) => matchesPattern(r.pattern, toolId));
    if (rule && (!best || RANK[rule.action] > RANK[best.action])) best = { action: rule.action, rule };
  }
  return best ?? { action: requiresApproval ? "require_approval" : "approve" };
}

/** The agnostic pattern of a leaf (`name` = dotted tool name) or folder (`name` + `.*`). */
export function agnosticPattern(integration: string, name: string | null, folder: boolean): string {
  if (name === null) return `${integration}.*`;
  return folder ? `${integration}.*.*.${name}.*` : `${integration}.*.*.${name}`;
}

export function DecisionDot({ decision, label }: { decision?: Decision; label?: string }) {
  if (!decision) return <span className="pdot none" aria-hidden />;
  const byRule = !!decision.rule;
  const text = `${ACTION_LABELS[decision.action]}${byRule ? ` (rule ${decision.rule!.pattern})` : " (default)"}`;
  const cls = byRule ? decision.action : decision.action === "require_approval" ? "default-approval" : "none";
  return <span className={`pdot ${cls}`} title={label ?? text} role="img" aria-label={text} />;
}

export function PolicyBadge({ decision }: { decision: Decision }) {
  return (
    <span className={`badge ${actionTone(decision.action)}`} title={decision.rule ? `Rule ${decision.rule.pattern}` : "No rule matches: the default"}>
      {ACTION_LABELS[decision.action]}
      {decision.rule ? "" : " · default"}
    </span>
  );
}

/**
 * A menu that sets (or clears) the rule of `rules` whose pattern is exactly `pattern`: an org
 * policy on an integration's page, a toolkit rule on a toolkit's.
 */
export function PolicyMenu({
  pattern,
  rules,
  triggerLabel,
  trigger,
  onError,
}: {
  pattern: string;
  rules: RuleWriter;
  triggerLabel: string;
  trigger?: React.ReactNode;
  /** Where a failed write is reported; without it the menu shows the error after itself. */
  onError?: (message: string | null) => void;
}) {
  const [error, setError] = useState<string | null>(null);
  const exact = rules.exact(pattern);
  const change = useMutation({
    mutationFn: async (action: PolicyAction | "clear") => {
      if (action === "clear") return exact ? rules.remove(exact) : undefined;
      if (exact) return rules.update(exact, { action });
      return rules.create(pattern, action);
    },
    onSuccess: () => (onError ? onError(null) : setError(null)),
    onError: (e) => (onError ? onError(describeError(e)) : setError(describeError(e))),
  });
  return (
    <>
      <DropdownMenu.Root>
        <DropdownMenu.Trigger asChild>
          {trigger ?? (
            <button type="button" className="menu-trigger" aria-label={triggerLabel} onClick={(e) => e.stopPropagation()}>
              ⋯
            </button>
          )}
        </DropdownMenu.Trigger>
        <DropdownMenu.Portal>
          <DropdownMenu.Content className="menu-content" align="end" sideOffset={4} onClick={(e) => e.stopPropagation()}>
            <div className="menu-label mono">{pattern}</div>
            {ACTIONS.map((a) => (
              <DropdownMenu.Item key={a} className="menu-item" onSelect={() => change.mutate(a)}>
                {exact?.action === a ? "✓ " : ""}
                {ACTION_LABELS[a]}
              </DropdownMenu.Item>
            ))}
            {exact && (
              <>
                <DropdownMenu.Separator className="menu-sep" />
                <DropdownMenu.Item className="menu-item" onSelect={() => change.mutate("clear")}>
                  Clear rule
                </DropdownMenu.Item>
              </>
            )}
          </DropdownMenu.Content>
        </DropdownMenu.Portal>
      </DropdownMenu.Root>
      {error && (
        <span className="field-error" role="alert">
          {error}
        </span>
      )}
    </>
  );
}
