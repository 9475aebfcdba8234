// /tool-changes — every recorded change of a tool's definition, newest first: what changed, its
// definition before and after, and for a change that pauses its tool's calls, accepting it.
// `?integration=<slug>` shows one integration's only.

import { useEffect, useState } from "react";
import { Link, useSearch } from "wouter";
import { formatTime, ownerLabel, useOwnerRights } from "../api/team";
import {
  FIELD_LABEL,
  KIND_LABEL,
  fieldChanges,
  isWaiting,
  showValue,
  useAcceptToolChange,
  useToolChanges,
  type ToolChange,
} from "../api/tool-changes";
import { ConfirmDialog } from "../components/dialogs";
import { ErrorNote } from "../components/fields";
import "./integrations.css";
import "./settings.css";
import "./tool-changes.css";

const LIMIT = 200;

const KIND_TONE: Record<string, string> = { added: "ok", removed: "danger", changed: "" };

export default function ToolChangesPage() {
  const search = new URLSearchParams(useSearch());
  const integration = search.get("integration") ?? undefined;
  const rights = useOwnerRights();
  const all = useToolChanges({ integration, limit: LIMIT });
  const waiting = useToolChanges({ integration, pending: true, limit: LIMIT });
  // On when the page opens with anything waiting; then as the person sets it (accepting the last
  // change does not flip the view under them).
  const [onlyWaiting, setOnlyWaiting] = useState<boolean | null>(null);
  const [accepted, setAccepted] = useState<string | null>(null);
  const waitingCount = waiting.data?.length ?? 0;
  useEffect(() => {
    if (onlyWaiting === null && waiting.isSuccess) setOnlyWaiting(waiting.data.length > 0);
  }, [onlyWaiting, waiting.isSuccess, waiting.data]);
  const only = onlyWaiting ?? waitingCount > 0;
  const list = only ? waiting : all;
  const rows = list.data ?? [];

  return (
    <section className="page tool-changes-page">
      <h1>Tool changes</h1>
      <p className="muted">
        Each time a connection's tools are listed, their definitions are compared with the stored ones. A tool whose
        definition changed in a riskier way (it became destructive, say), or that a person had approved before, pauses
        every call for a person — even with auto-approve — until someone accepts its new definition here.
      </p>
      {integration && (
        <p className="row">
          <span>
            Showing <code>{integration}</code> only.
          </span>
          <Link href="/tool-changes">Show every integration</Link>
        </p>
      )}
      <div className="row tool-changes-filters">
        <label className="row tool-changes-check">
          <input
            type="checkbox"
            checked={only}
            onChange={(e) => setOnlyWaiting(e.target.checked)}
            disabled={waiting.isPending}
          />
          Waiting for acceptance only
        </label>
        {waiting.isSuccess && (
          <span className={waitingCount > 0 ? "badge warn" : "badge"} data-testid="waiting-count">
            {waitingCount} waiting
          </span>
        )}
      </div>
      {accepted && (
        <p className="result-box ok" role="status">
          Accepted the new definition of <code>{accepted}</code>: its calls no longer pause for this change.
        </p>
      )}
      <ErrorNote error={list.error} />
      {list.isPending ? (
        <p className="muted" role="status">
          Loading…
        </p>
      ) : list.isSuccess && rows.length === 0 ? (
        <div className="card empty">
          <p>
            {only
              ? "Nothing waits for acceptance: every tool runs by its policies."
              : "No tool has changed yet. Changes are recorded when a connection's tools are listed again (a refresh, or a stale catalog re-read)."}
          </p>
        </div>
      ) : (
        <ul className="plain-list stack" aria-label={only ? "Changes waiting for acceptance" : "Recorded changes"}>
          {rows.map((c) => (
            <ChangeItem
              key={c.id}
              change={c}
              canAccept={c.owner === "user" || rights.canWriteOrg}
              onAccepted={() => setAccepted(c.tool)}
            />
          ))}
        </ul>
      )}
      {rows.length === LIMIT && <p className="muted">Showing the newest {LIMIT}.</p>}
    </section>
  );
}

function ChangeItem({ change: c, canAccept, onAccepted }: { change: ToolChange; canAccept: boolean; onAccepted: () => void }) {
  const [confirming, setConfirming] = useState(false);
  const accept = useAcceptToolChange();
  const waiting = isWaiting(c);
  const headingId = `change-${c.id}`;
  const hintId = `change-${c.id}-hint`;
  return (
    <li className={`card stack tool-change${waiting ? " waiting" : ""}`} aria-labelledby={headingId} data-testid={`tool-change-${c.tool}`}>
      <div className="page-header">
        <div className="stack" style={{ gap: "0.3rem" }}>
          <h2 className="tool-change-h2" id={headingId}>
            <code>{c.tool}</code>
            <span className="visually-hidden">, {KIND_LABEL[c.kind]?.toLowerCase() ?? c.kind}</span>
          </h2>
          <div className="row">
            <span className={`badge ${KIND_TONE[c.kind] ?? ""}`}>{KIND_LABEL[c.kind] ?? c.kind}</span>
            {c.escalated && <span className="badge danger">Riskier</span>}
            {waiting && <span className="badge warn">Waiting for acceptance</span>}
            {c.acceptedAt !== null && <span className="badge ok">Accepted</span>}
          </div>
        </div>
        {waiting && (
          <button
            type="button"
            className="primary"
            onClick={() => setConfirming(true)}
            disabled={!canAccept}
            aria-describedby={canAccept ? undefined : hintId}
          >
            Accept new definition
          </button>
        )}
      </div>
      <dl className="tool-change-facts">
        <dt>Connection</dt>
        <dd>
          <Link href={`/integrations/${encodeURIComponent(c.integration)}`}>{c.integration}</Link> · {ownerLabel(c.owner)} ·{" "}
          <code>{c.connection}</code>
        </dd>
        <dt>Seen</dt>
        <dd>
          <time dateTime={new Date(c.detectedAt).toISOString()}>{formatTime(c.detectedAt)}</time>
        </dd>
        {c.kind === "changed" && (
          <>
            <dt>Changed</dt>
            <dd>{c.fields.length ? c.fields.map((f) => FIELD_LABEL[f] ?? f).join(", ") : "—"}</dd>
          </>
        )}
        {c.acceptedAt !== null && (
          <>
            <dt>Accepted by</dt>
            <dd data-testid="accepted-by">
              {c.acceptedBy ?? "someone"} on <time dateTime={new Date(c.acceptedAt).toISOString()}>{formatTime(c.acceptedAt)}</time>
            </dd>
          </>
        )}
      </dl>
      {waiting && (
        <p className="field-hint" id={hintId}>
          Every call of <code>{c.address}</code> pauses for a person until this definition is accepted
          {canAccept ? "." : ": only workspace admins can accept a workspace connection's change."}
        </p>
      )}
      <Definitions change={c} />
      <ConfirmDialog
        open={confirming}
        onOpenChange={setConfirming}
        title={`Accept the new definition of ${c.tool}?`}
        confirm="Accept new definition"
        onConfirm={async () => {
          await accept.mutateAsync(c.id);
          onAccepted();
        }}
      >
        <p>
          Calls of <code>{c.address}</code> stop pausing for this change and run by their policies again (a destructive
          tool still asks, unless auto-approve). A later change of its definition waits again.
        </p>
      </ConfirmDialog>
    </li>
  );
}

/** A changed tool: each changed field before and after; an added or removed one: its definition. */
function Definitions({ change: c }: { change: ToolChange }) {
  if (c.kind !== "changed") {
    const definition = c.kind === "removed" ? c.before : c.after;
    if (definition === null || definition === undefined) return null;
    return (
      <details>
        <summary>{c.kind === "removed" ? "Definition before it was removed" : "Definition"}</summary>
        <pre className="tool-change-pre">{showValue(definition)}</pre>
      </details>
    );
  }
  return (
    <div className="stack" style={{ gap: "0.5rem" }}>
      {fieldChanges(c).map((f) => (
        <div key={f.field} className="tool-change-field">
          <h3 className="tool-change-h3">{FIELD_LABEL[f.field] ?? f.field}</h3>
          <div className="tool-change-diff">
            <div>
              <h4 className="tool-change-h4">Before</h4>
              {f.before === undefined || f.before === null ? <p className="muted">none</p> : <pre className="tool-change-pre">{showValue(f.before)}</pre>}
            </div>
            <div>
              <h4 className="tool-change-h4">After</h4>
              {f.after === undefined || f.after === null ? <p className="muted">none</p> : <pre className="tool-change-pre">{showValue(f.after)}</pre>}
            </div>
          </div>
        </div>
      ))}
      <details>
        <summary>Whole definition before and after</summary>
        <div className="tool-change-diff">
          <div>
            <h4 className="tool-change-h4">Before</h4>
            <pre className="tool-change-pre">{showValue(c.before)}</pre>
          </div>
          <div>
            <h4 className="tool-change-h4">After</h4>
            <pre className="tool-change-pre">{showValue(c.after)}</pre>
          </div>
        </div>
      </details>
    </div>
  );
}
