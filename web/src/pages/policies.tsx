// Policies: add a rule (pattern checked as typed, with its match count), change a rule's action
// inline, reorder within an owner, remove. The order shown is the order the server applies.

import { useMemo, useState, type FormEvent } from "react";
import { useMutation, useQuery } from "@tanstack/react-query";
import { api, ApiError, describeError } from "../api/http";
import {
  matchesPattern,
  parsePattern,
  policyIdOf,
  rulesOf,
  useGlobalRules,
  usePolicies,
  type GlobalRuleWriter,
  type Policy,
  type PolicyAction,
  type RuleWriter,
  type ToolIdentity,
} from "../api/policies";
import { ownerLabel, useOwnerRights, type Owner } from "../api/team";
import { OwnerChoice } from "../components/owner-choice";
import { ActionSelect, RulesTable } from "../components/rules-table";
import "./exec-common.css";
import "./policies.css";

const EXAMPLES = ["*", "github.*", "github.*.*.create_issue", "vercel.*.*.dns.*"];

interface ToolRow extends ToolIdentity {
  address: string;
}

function useToolIds() {
  return useQuery({
    queryKey: ["tools", "policy-ids"],
    queryFn: () => api<ToolRow[]>("/tools", { query: { includeAnnotations: false } }),
    select: (tools) => tools.map(policyIdOf),
  });
}

export default function PoliciesPage() {
  const policies = usePolicies();
  const toolIds = useToolIds();
  const list = policies.data ?? [];
  const org = rulesOf(list, "org");
  const user = rulesOf(list, "user");
  const writer = useGlobalRules(list, { tools: true });
  return (
    <section className="page policies-page">
      <h1>Policies</h1>
      <p className="muted policies-lede">
        A policy decides what happens when code calls a tool: run it, ask a person first, or refuse. For each tool, the
        first rule in the order below whose pattern matches decides; later rules are not consulted. When no rule
        matches, the tool's own default applies (it runs, unless its integration marks it as needing approval). New
        rules are placed below the more specific ones, so an exact rule keeps precedence over a wildcard.
      </p>
      <AddPolicyForm writer={writer} toolIds={toolIds.data} />
      <section className="card policies-list" aria-labelledby="active-policies">
        <h2 id="active-policies">Active policies</h2>
        {policies.isPending ? (
          <p className="muted" role="status">
            Loading policies…
          </p>
        ) : policies.isError ? (
          <p className="error" role="alert">
            {describeError(policies.error)}
          </p>
        ) : list.length === 0 ? (
          <p className="muted">No rules yet: every tool follows its default. Add one above.</p>
        ) : (
          <>
            {user.length > 0 && (
              <p className="field-hint">
                Personal and {ownerLabel("org").toLowerCase()} rules are applied side by side: each contributes its
                first match, and the more restrictive of the two wins. A rule an agent wrote never loosens a block a
                person wrote.
              </p>
            )}
            <RuleTable title={user.length > 0 ? ownerLabel("org") : null} rules={org} writer={writer} />
            {user.length > 0 && <RuleTable title="Personal" rules={user} writer={writer} />}
          </>
        )}
      </section>
    </section>
  );
}

function AddPolicyForm({ writer, toolIds }: { writer: GlobalRuleWriter; toolIds: string[] | undefined }) {
  const rights = useOwnerRights();
  const [owner, setOwner] = useState<Owner>(rights.defaultOwner);
  const [pattern, setPattern] = useState("");
  const [action, setAction] = useState<PolicyAction>("require_approval");
  const [touched, setTouched] = useState(false);
  const check = pattern ? parsePattern(pattern) : null;
  const matching = useMemo(
    () => (check?.ok && toolIds ? toolIds.filter((id) => matchesPattern(pattern, id)) : []),
    [check?.ok, pattern, toolIds],
  );
  const create = useMutation({
    mutationFn: () => writer.createAs(owner, pattern, action),
    onSuccess: () => {
      setPattern("");
      setTouched(false);
    },
  });
  const serverError = create.error;
  // The server's pattern errors are sentences about the pattern: show them under the field.
  const patternServerError =
    serverError instanceof ApiError && /pattern/i.test(serverError.message) ? describeError(serverError) : null;
  const formError = serverError && !patternServerError ? describeError(serverError) : null;
  const localError = touched && check && !check.ok ? `Not a valid pattern: ${check.error}.` : null;
  const patternError = localError ?? patternServerError;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (!pattern || !check?.ok) return;
    create.mutate();
  };

  return (
    <form className="card policies-add" onSubmit={submit} noValidate aria-labelledby="add-policy">
      <h2 id="add-policy">Add a policy</h2>
      {formError && (
        <p className="error" role="alert">
          {formError}
        </p>
      )}
      <div className={rights.team ? "policies-add-grid with-owner" : "policies-add-grid"}>
        <div className="field">
          <label htmlFor="policy-pattern">Pattern</label>
          <input
            id="policy-pattern"
            className="mono"
            value={pattern}
            placeholder="github.*.*.create_issue"
            autoComplete="off"
            spellCheck={false}
            aria-invalid={patternError ? true : undefined}
            aria-describedby="policy-pattern-hint policy-pattern-status"
            onChange={(e) => {
              setPattern(e.target.value);
              setTouched(true);
              create.reset();
            }}
          />
          <span className="field-hint" id="policy-pattern-hint">
            <code>integration.owner.connection.tool</code>; a <code>*</code> is one whole segment, and a trailing{" "}
            <code>*</code> matches everything below. Examples:{" "}
            {EXAMPLES.map((ex, i) => (
              <span key={ex}>
                {i > 0 && ", "}
                <button type="button" className="linkish mono" onClick={() => (setPattern(ex), setTouched(true))}>
                  {ex}
                </button>
              </span>
            ))}
            .
          </span>
          <span id="policy-pattern-status" aria-live="polite">
            {patternError ? (
              <span className="field-error">{patternError}</span>
            ) : check?.ok ? (
              toolIds ? (
                <span className={matching.length ? "field-hint" : "field-hint warn-text"}>
                  {matching.length === 0
                    ? "Matches none of the current tools (did you leave out the owner or connection segment?)."
                    : `Matches ${matching.length} of ${toolIds.length} current tools`}
                  {matching.length > 0 && matching.length <= 3 ? `: ${matching.join(", ")}.` : matching.length ? "." : ""}
                </span>
              ) : (
                <span className="field-hint">Valid pattern.</span>
              )
            ) : null}
          </span>
        </div>
        <div className="field">
          <label htmlFor="policy-action">Action</label>
          <ActionSelect id="policy-action" value={action} onChange={setAction} />
        </div>
        {rights.team && <OwnerChoice legend="Applies to" value={owner} onChange={setOwner} what="policies" />}
        <div className="policies-add-submit">
          <button type="submit" className="primary" disabled={create.isPending || !pattern || (check !== null && !check.ok)}>
            {create.isPending ? "Adding…" : "Add policy"}
          </button>
        </div>
      </div>
    </form>
  );
}

function RuleTable({ title, rules, writer }: { title: string | null; rules: Policy[]; writer: RuleWriter<Policy> }) {
  if (rules.length === 0) return null;
  return (
    <div className="policies-group">
      {title && <h3>{title}</h3>}
      <RulesTable rules={rules} writer={writer} details={(rule) => <RuleMeta rule={rule} />} removeLabel="Remove" />
    </div>
  );
}

function RuleMeta({ rule }: { rule: Policy }) {
  return (
    <div className="row policy-meta">
      <span className={rule.matches ? "badge" : "badge warn"} title="Current tools this pattern matches">
        {rule.matches === 0 ? "matches no tools" : `${rule.matches} tool${rule.matches === 1 ? "" : "s"}`}
      </span>
      {rule.author === "agent" && (
        <span className="badge" title="Written by agent code through the policies tools">
          by an agent
        </span>
      )}
    </div>
  );
}
