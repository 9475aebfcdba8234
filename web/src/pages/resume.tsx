// /resume/:id — the approval page an agent's link opens: the paused call, a decision, then the
// result; when the run pauses again the next request takes its place.

import { useState } from "react";
import { Link, useParams, useSearch } from "wouter";
import { useQuery } from "@tanstack/react-query";
import { describeError } from "../api/http";
import { getPaused, isGone, type ExecutionOutcome, type PausedStructured, type ResumeAction } from "../api/executions";
import { ACTION_SENT, ExecPending } from "../components/exec-pending";
import { ExecResult } from "../components/exec-result";
import "./exec-common.css";

const GONE =
  "This approval is no longer waiting: it was answered already, it expired, or the server restarted and lost it.";

export default function ResumePage() {
  const { id = "" } = useParams<{ id: string }>();
  const search = new URLSearchParams(useSearch());
  const mcpSessionId = search.get("mcp_session_id");
  const paused = useQuery({
    queryKey: ["executions", id, "paused", mcpSessionId],
    queryFn: () => getPaused(id, mcpSessionId),
    retry: false,
    // a decision elsewhere (another tab, the agent) should show here rather than linger
    refetchOnWindowFocus: false,
  });
  // After a decision: what was sent, and either the final outcome or the next pause.
  const [answered, setAnswered] = useState<{ action: ResumeAction; outcome: ExecutionOutcome }[]>([]);
  const last = answered[answered.length - 1];
  const nextPause: PausedStructured | undefined =
    last?.outcome.status === "paused" ? (last.outcome.structured as PausedStructured) : undefined;
  const current: PausedStructured | undefined = last ? nextPause : paused.data?.structured;

  return (
    <section className="page resume-page">
      <h1>Approval</h1>
      <p className="muted">
        Execution <code>{id}</code> · <Link href={`/executions/${encodeURIComponent(id)}`}>open its record</Link>
      </p>
      {paused.isPending && !last ? (
        <p className="muted" role="status">
          Loading the pending request…
        </p>
      ) : paused.isError && !last ? (
        <p className="card error" role="alert">
          {isGone(paused.error) ? GONE : describeError(paused.error)}
        </p>
      ) : (
        <div className="stack">
          {answered.map((a, i) => (
            <p key={i} className="badge-line" role={i === answered.length - 1 ? "status" : undefined}>
              <span className={`badge ${a.action === "accept" ? "ok" : "warn"}`}>{ACTION_SENT[a.action]}</span>
              {a.outcome.status === "paused" ? " The run paused again: the next request is below." : ""}
            </p>
          ))}
          {current ? (
            <ExecPending
              key={`${answered.length}`}
              executionId={current.executionId || id}
              interaction={current.interaction}
              expiresAt={current.expiresAt}
              mcpSessionId={mcpSessionId}
              idPrefix={`pending-${answered.length}`}
              onOutcome={(outcome, action) => setAnswered((list) => [...list, { action, outcome }])}
            />
          ) : last && last.outcome.status !== "paused" ? (
            <ExecResult outcome={last.outcome} />
          ) : null}
        </div>
      )}
    </section>
  );
}
