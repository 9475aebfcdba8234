// A paused call's request, as a person answers it: which tool, the message, the arguments, a
// form from `requestedSchema` (or a link for url-kind requests), and Approve / Decline / Cancel.
// Used by /resume/:id and inline by the playground.

import { useState } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { describeError } from "../api/http";
import {
  resumeExecution,
  isGone,
  type ExecutionOutcome,
  type Interaction,
  type ResumeAction,
} from "../api/executions";
import { initialValue, SchemaForm, validateAgainst, type JsonSchema } from "./schema-form";
import "./exec.css";

/** The message without the "Arguments:" block the server appends (they are shown apart). */
function messageOnly(message: string | undefined, hasArgs: boolean): string {
  if (!message) return "";
  const at = message.indexOf("\n\nArguments:\n");
  return hasArgs && at >= 0 ? message.slice(0, at) : message;
}

function hasFields(schema: JsonSchema | undefined): boolean {
  return !!schema && typeof schema.properties === "object" && Object.keys(schema.properties ?? {}).length > 0;
}

export const ACTION_SENT: Record<ResumeAction, string> = {
  accept: "Approval sent",
  decline: "Decline sent",
  cancel: "Cancel sent",
};

export function ExecPending({
  executionId,
  interaction,
  expiresAt,
  mcpSessionId,
  onOutcome,
  idPrefix = "pending",
}: {
  executionId: string;
  interaction: Interaction | undefined;
  expiresAt?: number;
  mcpSessionId?: string | null;
  onOutcome: (outcome: ExecutionOutcome, action: ResumeAction) => void;
  idPrefix?: string;
}) {
  const client = useQueryClient();
  const schema = interaction?.requestedSchema as JsonSchema | undefined;
  const [content, setContent] = useState<unknown>(() => initialValue(schema));
  const [problems, setProblems] = useState<string[]>([]);
  const resume = useMutation({
    mutationFn: ({ action, content }: { action: ResumeAction; content?: unknown }) =>
      resumeExecution(executionId, action, content, mcpSessionId),
    onSuccess: (outcome, { action }) => {
      void client.invalidateQueries({ queryKey: ["executions"] });
      onOutcome(outcome, action);
    },
  });
  const args = interaction?.args;
  const showArgs = args !== undefined && !(typeof args === "object" && args !== null && Object.keys(args).length === 0);
  const answer = (action: ResumeAction) => {
    if (action === "accept") {
      const found = validateAgainst(schema, content);
      setProblems(found);
      if (found.length) return;
      resume.mutate({ action, content: content ?? {} });
    } else {
      setProblems([]);
      resume.mutate({ action });
    }
  };
  const error = resume.error;
  return (
    <section className="card exec-pending" aria-labelledby={`${idPrefix}-title`}>
      <h2 id={`${idPrefix}-title`}>
        <span className="dot warn" aria-hidden="true" /> User approval required
      </h2>
      {error && (
        <p className="error" role="alert">
          {isGone(error)
            ? "This approval is no longer waiting: it was answered already, it expired, or the server restarted and lost it."
            : describeError(error)}
        </p>
      )}
      <dl className="exec-pending-facts">
        {interaction?.address && (
          <>
            <dt>Tool</dt>
            <dd>
              <code>{interaction.address}</code>
            </dd>
          </>
        )}
        {expiresAt !== undefined && (
          <>
            <dt>Waits until</dt>
            <dd>{new Date(expiresAt).toLocaleString()}</dd>
          </>
        )}
      </dl>
      {interaction?.message && <p className="exec-pending-message">{messageOnly(interaction.message, args !== undefined)}</p>}
      {showArgs && (
        <div className="field">
          <span className="exec-label" id={`${idPrefix}-args`}>
            Arguments
          </span>
          <pre aria-labelledby={`${idPrefix}-args`}>{JSON.stringify(args, null, 2)}</pre>
        </div>
      )}
      {interaction?.kind === "url" && interaction.url && (
        <p>
          Finish this step on the page it names, then approve here:{" "}
          <a href={interaction.url} target="_blank" rel="noopener noreferrer">
            {interaction.url}
          </a>
        </p>
      )}
      {hasFields(schema) && (
        <div className="exec-pending-form">
          <h3>Additional details</h3>
          <SchemaForm
            schema={schema}
            value={content}
            onChange={(v) => {
              setContent(v);
              // once problems are shown, keep them current as the person fixes them
              if (problems.length) setProblems(validateAgainst(schema, v));
            }}
            idPrefix={`${idPrefix}-form`}
            disabled={resume.isPending}
          />
        </div>
      )}
      {problems.length > 0 && (
        <ul className="field-error" role="alert">
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      <div className="row">
        <button type="button" className="primary" disabled={resume.isPending} onClick={() => answer("accept")}>
          Approve
        </button>
        <button type="button" disabled={resume.isPending} onClick={() => answer("decline")}>
          Decline
        </button>
        <button type="button" className="danger" disabled={resume.isPending} onClick={() => answer("cancel")}>
          Cancel run
        </button>
        {resume.isPending && (
          <span className="muted" role="status">
            Sending…
          </span>
        )}
      </div>
      <p className="field-hint">
        Approve runs the call; Decline refuses this call and lets the code carry on; Cancel run stops the whole
        execution.
      </p>
    </section>
  );
}
