// /activity — the workspace's audit log, for owners and admins: every change and tool call, newest
// first, filtered by kind and person, fifty at a time ("Load more" asks for the events before the
// oldest shown). A row opens to show what the change replaced and what it wrote.

import { Fragment, useState } from "react";
import {
  formatTime,
  isAdminRole,
  useAuditEvents,
  useMe,
  useMembers,
  type AuditEvent,
  type AuditFilter,
  type AuditKind,
} from "../api/team";
import { ErrorNote } from "../components/fields";
import { AdminOnly } from "./admin";
import "./exec-common.css";
import "./team.css";

const KIND_LABELS: Record<AuditKind, string> = { change: "Change", tool_call: "Tool call" };
const OUTCOME_TONE = { ok: "ok", error: "danger", denied: "danger", paused: "warn" } as const;
const VIA_LABELS: Record<AuditEvent["via"], string> = {
  session: "the console or CLI",
  api_key: "an API key",
  oauth: "an agent (OAuth)",
  system: "the server",
};

export default function ActivityPage() {
  const me = useMe();
  if (me.isPending) return <p className="page muted" role="status">Loading…</p>;
  if (me.isError) {
    return (
      <section className="page team-page">
        <h1>Activity</h1>
        <ErrorNote error={me.error} />
      </section>
    );
  }
  if (!isAdminRole(me.data.role)) return <AdminOnly title="Activity" />;
  return <AuditLog />;
}

function AuditLog() {
  const [filter, setFilter] = useState<AuditFilter>({ kind: "", actor: "" });
  const members = useMembers();
  const events = useAuditEvents(filter);
  const list = events.data?.pages.flatMap((p) => p.events) ?? [];
  return (
    <section className="page team-page">
      <h1>Activity</h1>
      <p className="muted team-lede">
        Who changed what in the workspace, and which tools were called, newest first. Secrets are never recorded.
      </p>
      <form className="row team-filters" aria-label="Filter the activity" onSubmit={(e) => e.preventDefault()}>
        <div className="field">
          <label htmlFor="audit-kind">Kind</label>
          <select
            id="audit-kind"
            value={filter.kind}
            onChange={(e) => setFilter((f) => ({ ...f, kind: e.target.value as AuditFilter["kind"] }))}
          >
            <option value="">All</option>
            <option value="change">Changes</option>
            <option value="tool_call">Tool calls</option>
          </select>
        </div>
        <div className="field">
          <label htmlFor="audit-actor">Person</label>
          <select id="audit-actor" value={filter.actor} onChange={(e) => setFilter((f) => ({ ...f, actor: e.target.value }))}>
            <option value="">Everyone</option>
            {(members.data ?? []).map((m) => (
              <option key={m.userId} value={m.userId}>
                {m.email}
              </option>
            ))}
          </select>
        </div>
      </form>
      <ErrorNote error={events.error} />
      {events.isPending ? (
        <p className="muted" role="status">
          Loading activity…
        </p>
      ) : list.length === 0 ? (
        <p className="card muted">Nothing recorded{filter.kind || filter.actor ? " that matches these filters" : " yet"}.</p>
      ) : (
        <table className="audit-table" aria-label="Activity">
          <thead>
            <tr>
              <th scope="col">
                <span className="visually-hidden">Details</span>
              </th>
              <th scope="col">Time</th>
              <th scope="col">Who</th>
              <th scope="col">Kind</th>
              <th scope="col">Action</th>
              <th scope="col">Target</th>
              <th scope="col">Outcome</th>
            </tr>
          </thead>
          <tbody>
            {list.map((e) => (
              <EventRow key={String(e.id)} event={e} />
            ))}
          </tbody>
        </table>
      )}
      {events.hasNextPage && (
        <div className="team-more">
          <button type="button" disabled={events.isFetchingNextPage} onClick={() => void events.fetchNextPage()}>
            {events.isFetchingNextPage ? "Loading…" : "Load more"}
          </button>
        </div>
      )}
    </section>
  );
}

const pretty = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v, null, 2));

function EventRow({ event: e }: { event: AuditEvent }) {
  const [open, setOpen] = useState(false);
  const detailsId = `audit-${String(e.id)}`;
  const before = pretty(e.before);
  const after = pretty(e.after);
  const detail = pretty(e.detail);
  return (
    <Fragment>
      <tr className={open ? "audit-open" : undefined}>
        <td>
          <button
            type="button"
            className="audit-toggle"
            aria-expanded={open}
            aria-controls={open ? detailsId : undefined}
            aria-label={`Details of ${e.action}`}
            onClick={() => setOpen((o) => !o)}
          >
            {open ? "▾" : "▸"}
          </button>
        </td>
        <td className="nowrap">{formatTime(e.at)}</td>
        <td>{e.actor ? e.actor.email : <span className="muted">system</span>}</td>
        <td>{KIND_LABELS[e.kind] ?? e.kind}</td>
        <td>
          <code>{e.action}</code>
        </td>
        <td>{e.target ? <code className="audit-target">{e.target}</code> : <span className="muted">—</span>}</td>
        <td>
          <span className={`badge ${OUTCOME_TONE[e.outcome] ?? ""}`}>{e.outcome}</span>
        </td>
      </tr>
      {open && (
        <tr id={detailsId} className="audit-details">
          <td />
          <td colSpan={6}>
            <p className="field-hint">Through {VIA_LABELS[e.via] ?? e.via}.</p>
            <div className="audit-diff">
              <div>
                <h3 className="audit-h3">Before</h3>
                {before ? <pre>{before}</pre> : <p className="muted">nothing</p>}
              </div>
              <div>
                <h3 className="audit-h3">After</h3>
                {after ? <pre>{after}</pre> : <p className="muted">nothing</p>}
              </div>
            </div>
            {detail && (
              <>
                <h3 className="audit-h3">Detail</h3>
                <pre>{detail}</pre>
              </>
            )}
          </td>
        </tr>
      )}
    </Fragment>
  );
}
