// /executions — run history, newest first, filtered by status and integration, kept live by the
// server's event stream (or by polling every 2 s where the stream is unavailable).

import { useState } from "react";
import { Link, useLocation, useSearch } from "wouter";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { api, describeError } from "../api/http";
import {
  EXECUTION_STATUSES,
  listExecutions,
  useExecutionEvents,
  type ExecutionStatus,
  type ExecutionSummary,
  type StreamState,
} from "../api/executions";
import "./exec-common.css";
import "./executions.css";

const PAGE = 50;

export function statusBadge(e: Pick<ExecutionSummary, "status" | "isError">): { cls: string; label: string } {
  if (e.status === "completed") return e.isError ? { cls: "danger", label: "error" } : { cls: "ok", label: "completed" };
  if (e.status === "failed" || e.status === "expired") return { cls: "danger", label: e.status };
  if (e.status === "paused") return { cls: "warn", label: "waiting for approval" };
  return { cls: "", label: e.status };
}

export function formatDuration(ms: number | undefined): string {
  if (ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

function matchesFilter(e: ExecutionSummary, status: string): boolean {
  return !status || e.status === status;
}

export default function ExecutionsPage() {
  const client = useQueryClient();
  const [, navigate] = useLocation();
  const search = new URLSearchParams(useSearch());
  const status = (search.get("status") ?? "") as ExecutionStatus | "";
  const integration = search.get("integration") ?? "";
  const [page, setPage] = useState(0);
  const [stream, setStream] = useState<StreamState>("connecting");
  const key = ["executions", "list", { status, integration, page }] as const;
  const list = useQuery({
    queryKey: key,
    queryFn: () => listExecutions({ limit: PAGE, offset: page * PAGE, status, integration }),
    refetchInterval: stream === "polling" ? 2000 : false,
  });
  const integrations = useQuery({
    queryKey: ["integrations"],
    queryFn: () => api<unknown>("/integrations"),
    select: (v): string[] => {
      const items = Array.isArray(v) ? v : ((v as { items?: unknown[] })?.items ?? []);
      return items
        .map((i) => (i as { slug?: string; id?: string }).slug ?? (i as { id?: string }).id ?? "")
        .filter(Boolean);
    },
  });

  useExecutionEvents({
    onState: setStream,
    onResync: () => void client.invalidateQueries({ queryKey: ["executions", "list"] }),
    onExecution: (summary) => {
      // Merge by id into the first page (new runs appear on top); an integration filter cannot be
      // judged from a summary, so that view is refetched instead.
      client.setQueryData<ExecutionSummary[]>(key, (old) => {
        if (!old) return old;
        const i = old.findIndex((e) => e.id === summary.id);
        if (i >= 0) {
          const next = [...old];
          if (matchesFilter(summary, status)) next[i] = { ...old[i], ...summary };
          else next.splice(i, 1);
          return next;
        }
        if (page !== 0 || integration || !matchesFilter(summary, status)) return old;
        return [summary, ...old].slice(0, PAGE);
      });
      if (integration) void client.invalidateQueries({ queryKey: ["executions", "list"] });
      void client.invalidateQueries({ queryKey: ["executions", summary.id] });
    },
  });

  const setFilter = (name: string, value: string) => {
    const next = new URLSearchParams(search);
    if (value) next.set(name, value);
    else next.delete(name);
    setPage(0);
    const qs = next.toString();
    navigate(`/executions${qs ? `?${qs}` : ""}`, { replace: true });
  };

  const rows = list.data ?? [];
  return (
    <section className="page executions-page">
      <div className="page-header">
        <h1>Executions</h1>
        <span className="muted live-state" role="status">
          <span className={`dot ${stream === "live" ? "ok" : stream === "polling" ? "warn" : ""}`} aria-hidden="true" />{" "}
          {stream === "live" ? "Live" : stream === "polling" ? "Refreshing every 2 s" : "Connecting…"}
        </span>
      </div>
      <div className="row executions-filters">
        <div className="field">
          <label htmlFor="filter-status">Status</label>
          <select id="filter-status" value={status} onChange={(e) => setFilter("status", e.target.value)}>
            <option value="">All</option>
            {EXECUTION_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s === "paused" ? "waiting for approval" : s}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="filter-integration">Integration</label>
          <select id="filter-integration" value={integration} onChange={(e) => setFilter("integration", e.target.value)}>
            <option value="">All</option>
            {(integrations.data ?? []).map((slug) => (
              <option key={slug} value={slug}>
                {slug}
              </option>
            ))}
            {integration && !(integrations.data ?? []).includes(integration) && <option value={integration}>{integration}</option>}
          </select>
        </div>
      </div>
      {list.isPending ? (
        <p className="muted" role="status">
          Loading executions…
        </p>
      ) : list.isError ? (
        <p className="error" role="alert">
          {describeError(list.error)}
        </p>
      ) : rows.length === 0 ? (
        <p className="muted">
          {status || integration
            ? "No executions match these filters."
            : "No executions yet. Agents' runs show here as they happen; try one in the "}
          {!status && !integration && <Link href="/playground">playground</Link>}
          {!status && !integration && "."}
        </p>
      ) : (
        <table className="executions-table">
          <thead>
            <tr>
              <th scope="col">Execution</th>
              <th scope="col">Status</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
              <th scope="col">Tool calls</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((e) => {
              const b = statusBadge(e);
              return (
                <tr key={e.id} data-execution-id={e.id}>
                  <td>
                    <Link href={`/executions/${encodeURIComponent(e.id)}`} className="mono">
                      {e.id}
                    </Link>
                    {e.status === "paused" && (
                      <>
                        {" · "}
                        <Link href={`/resume/${encodeURIComponent(e.id)}`}>Review</Link>
                      </>
                    )}
                  </td>
                  <td>
                    <span className={`badge ${b.cls}`}>{b.label}</span>
                  </td>
                  <td>
                    <time dateTime={new Date(e.startedAt).toISOString()}>{new Date(e.startedAt).toLocaleString()}</time>
                  </td>
                  <td>{formatDuration(e.durationMs)}</td>
                  <td>{e.toolCalls}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <div className="row executions-pager">
        <button type="button" disabled={page === 0} onClick={() => setPage((p) => p - 1)}>
          Newer
        </button>
        <button type="button" disabled={rows.length < PAGE} onClick={() => setPage((p) => p + 1)}>
          Older
        </button>
      </div>
    </section>
  );
}
