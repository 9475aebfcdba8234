// The rules in order, as the Policies page and a toolkit's page list them: each rule's pattern, its
// action changed inline, move up and down, remove. The rules and how to write them come as a
// `RuleWriter`, so one table serves the global policies and a toolkit's rules. Styles: policies.css.

import { useMutation } from "@tanstack/react-query";
import type { ReactNode } from "react";
import { describeError } from "../api/http";
import { ACTION_LABELS, type PolicyAction, type RuleLike, type RuleWriter } from "../api/policies";
import { ACTIONS, actionTone } from "./policy-menu";

/** A select of the three actions. */
export function ActionSelect({
  id,
  value,
  onChange,
  className,
  disabled,
}: {
  id: string;
  value: PolicyAction;
  onChange: (action: PolicyAction) => void;
  className?: string;
  disabled?: boolean;
}) {
  return (
    <select id={id} className={className} value={value} disabled={disabled} onChange={(e) => onChange(e.target.value as PolicyAction)}>
      {ACTIONS.map((a) => (
        <option key={a} value={a}>
          {ACTION_LABELS[a]}
        </option>
      ))}
    </select>
  );
}

interface RowOptions<R extends RuleLike> {
  writer: RuleWriter<R>;
  /** What stands under a rule's pattern (counts, badges). */
  details?: (rule: R) => ReactNode;
  /** The remove button's word ("Remove", "Delete") and what its hidden text names before the pattern. */
  removeLabel: string;
  removeNoun?: string;
}

function RuleRow<R extends RuleLike>({
  rule,
  index,
  count,
  writer,
  details,
  removeLabel,
  removeNoun,
}: RowOptions<R> & { rule: R; index: number; count: number }) {
  const update = useMutation({ mutationFn: (patch: { action?: PolicyAction; position?: string }) => writer.update(rule, patch) });
  const remove = useMutation({ mutationFn: () => writer.remove(rule) });
  const busy = update.isPending || remove.isPending;
  const move = (direction: -1 | 1) => {
    const position = writer.positionForMove(rule, direction);
    if (position) update.mutate({ position });
  };
  const error = update.error ?? remove.error;
  const selectId = `rule-action-${rule.id}`;
  return (
    <tr data-testid={`rule-${rule.pattern}`}>
      <td className="muted">{index + 1}</td>
      <td>
        <code className="policy-pattern">{rule.pattern}</code>
        {details?.(rule)}
        {error && (
          <p className="field-error" role="alert">
            {describeError(error)}
          </p>
        )}
      </td>
      <td>
        <label htmlFor={selectId} className="visually-hidden">
          Action for {rule.pattern}
        </label>
        <ActionSelect
          id={selectId}
          className={`policy-action-select ${actionTone(rule.action)}`}
          value={rule.action}
          disabled={busy}
          onChange={(action) => update.mutate({ action })}
        />
      </td>
      <td>
        <div className="row policy-buttons">
          <button type="button" disabled={busy || index === 0} onClick={() => move(-1)}>
            Move up<span className="visually-hidden"> {rule.pattern}</span>
          </button>
          <button type="button" disabled={busy || index === count - 1} onClick={() => move(1)}>
            Move down<span className="visually-hidden"> {rule.pattern}</span>
          </button>
          <button type="button" className="danger" disabled={busy} onClick={() => remove.mutate()}>
            {removeLabel}
            <span className="visually-hidden">{` ${removeNoun ? `${removeNoun} ` : ""}${rule.pattern}`}</span>
          </button>
        </div>
      </td>
    </tr>
  );
}

/** `rules` in the order they apply (the first match decides). */
export function RulesTable<R extends RuleLike>({ rules, ...options }: RowOptions<R> & { rules: R[] }) {
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">Order</th>
          <th scope="col">Pattern</th>
          <th scope="col">Action</th>
          <th scope="col">
            <span className="visually-hidden">Change</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {rules.map((rule, i) => (
          <RuleRow key={rule.id} rule={rule} index={i} count={rules.length} {...options} />
        ))}
      </tbody>
    </table>
  );
}
