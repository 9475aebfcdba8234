// /executions/:id — one run as recorded: its code, result and logs, and the journal of its tool
// calls (redacted arguments, duration, outcome, the decision a person gave).

import { Link, useParams } from "wouter";
import { useQuery } from "@tanstack/react-query";
import { describeError } from "../api/http";
import { getJournal, isMissingRoute, isGone, type ExecutionJournal, type JournalCall } from "../api/executions";
import { ExecResult } from "../components/exec-result";
import { formatDuration, statusBadge } from "./executions";
import "./exec-common.css";
import "./executions.css";

function short(v: unknown, max = 160): string {
  let s: string;
  try {
    s = typeof v === "string" ? v : JSON.stringify(v);
  } catch {
    s = String(v);
  }
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

function CallOutcome({ call }: { call: JournalCall }) {
  const o = call.outcome;
  if (!o) return <span className="muted">running or never answered</span>;
  if ("reject" in o) return <span className="error">{short(o.reject)}</span>;
  if ("omitted" in o) return <span className="muted">answer too large to keep</span>;
  return <code className="journal-value">{short(o.resolve)}</code>;
}

export function JournalTable({ calls }: { calls: JournalCall[] }) {
  if (calls.length === 0) return <p className="muted">This run called no tools.</p>;
  return (
    <table className="journal-table">
      <thead>
        <tr>
          <th scope="col">#</th>
          <th scope="col">Tool</th>
          <th scope="col">Arguments</th>
          <th scope="col">Duration</th>
          <th scope="col">Outcome</th>
          <th scope="col">Approval</th>
        </tr>
      </thead>
      <tbody>
        {calls.map((c) => (
          <tr key={c.seq}>
            <td className="muted">{c.seq}</td>
            <td>
              <code>{c.path}</code>
            </td>
            <td>
              <code className="journal-value">{short(c.args)}</code>
            </td>
            <td>{formatDuration(c.durationMs)}</td>
            <td>
              <CallOutcome call={c} />
            </td>
            <td>
              {c.approval ? (
                <span className={`badge ${c.approval.decision === "accept" ? "ok" : c.approval.decision ? "warn" : ""}`}>
                  {c.approval.decision === "accept"
                    ? "approved by a person"
                    : c.approval.decision === "decline"
                      ? "declined by a person"
                      : c.approval.decision === "cancel"
                        ? "cancelled by a person"
                        : "waiting"}
                </span>
              ) : (
                <span className="muted">not asked</span>
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Facts({ j }: { j: ExecutionJournal }) {
  const b = statusBadge(j);
  return (
    <dl className="execution-facts">
      <dt>Status</dt>
      <dd>
        <span className={`badge ${b.cls}`}>{b.label}</span>
        {j.status === "paused" && (
          <>
            {" "}
            <Link href={`/resume/${encodeURIComponent(j.id)}`}>Review the pending request</Link>
          </>
        )}
      </dd>
      <dt>Started</dt>
      <dd>{new Date(j.startedAt).toLocaleString()}</dd>
      <dt>Duration</dt>
      <dd>{formatDuration(j.durationMs)}</dd>
      <dt>Tool calls</dt>
      <dd>{j.toolCalls}</dd>
      <dt>Approvals</dt>
      <dd>{j.autoApprove ? "approved automatically (run from the console)" : "asked of a person"}</dd>
    </dl>
  );
}

export default function ExecutionPage() {
  const { id = "" } = useParams<{ id: string }>();
  const journal = useQuery({
    queryKey: ["executions", id],
    queryFn: () => getJournal(id),
    retry: false,
    refetchInterval: (q) => (q.state.data && (q.state.data.status === "running" || q.state.data.status === "paused") ? 2000 : false),
  });
  return (
    <section className="page execution-page">
      <p>
        <Link href="/executions">← Executions</Link>
      </p>
      <h1>
        Execution <code className="execution-id">{id}</code>
      </h1>
      {journal.isPending ? (
        <p className="muted" role="status">
          Loading…
        </p>
      ) : journal.isError ? (
        <p className="card error" role="alert">
          {isMissingRoute(journal.error)
            ? "This server does not record execution journals (GET /api/executions/:id/journal is missing); update executor to see a run's code and calls."
            : isGone(journal.error)
              ? "No execution with this id is recorded: it may be older than the history keeps, or the id is wrong."
              : describeError(journal.error)}
        </p>
      ) : (
        <div className="stack">
          <Facts j={journal.data} />
          <section className="card" aria-labelledby="code-title">
            <h2 id="code-title">Code</h2>
            <pre className="execution-code">{journal.data.code}</pre>
          </section>
          {journal.data.outcome && <ExecResult outcome={journal.data.outcome} />}
          {journal.data.pending && (
            <section className="card exec-pending" aria-label="Pending request">
              <h2>Waiting for a decision</h2>
              <p className="exec-pending-message">{journal.data.pending.message}</p>
              <p>
                <Link href={`/resume/${encodeURIComponent(id)}`} className="button primary">
                  Review and decide
                </Link>
              </p>
            </section>
          )}
          <section className="card" aria-labelledby="journal-title">
            <h2 id="journal-title">Tool calls</h2>
            <p className="field-hint">Arguments are shown redacted: values of secret-looking keys are masked.</p>
            <JournalTable calls={journal.data.calls} />
          </section>
        </div>
      )}
    </section>
  );
}
