// What a refresh saw change, per connection: the tools added, removed and changed (with the fields
// that changed), and a way to the tool changes page when a changed tool now waits for acceptance.

import { Fragment } from "react";
import { Link } from "wouter";
import { FIELD_LABEL, isEmptyDiff, type ToolDiff } from "../api/tool-changes";

export interface ConnectionDiff {
  /** The connection's name. */
  connection: string;
  diff: ToolDiff;
}

const names = (list: string[]) =>
  list.map((n, i) => (
    <Fragment key={n}>
      {i > 0 && ", "}
      <code>{n}</code>
    </Fragment>
  ));

/** True when a changed tool of any of these diffs pauses its calls until someone accepts it. */
export const anyWaiting = (diffs: ConnectionDiff[]): boolean =>
  diffs.some((d) => d.diff.changed.some((c) => c.requiresAcceptance));

export function RefreshDiff({ integration, diffs }: { integration: string; diffs: ConnectionDiff[] }) {
  const changed = diffs.filter((d) => !isEmptyDiff(d.diff));
  if (changed.length === 0) return <span>No changes.</span>;
  const label = diffs.length > 1;
  return (
    <div className="stack refresh-diff" style={{ gap: "0.35rem" }} data-testid="refresh-diff">
      {changed.map(({ connection, diff }) => (
        <ul key={connection} className="refresh-diff-list stack" style={{ gap: "0.2rem" }} aria-label={`Changes of ${connection}`}>
          {label && (
            <li>
              <strong>{connection}</strong>
            </li>
          )}
          {diff.added.length > 0 && <li>Added: {names(diff.added)}</li>}
          {diff.removed.length > 0 && <li>Removed: {names(diff.removed)}</li>}
          {diff.changed.map((c) => (
            <li key={c.name}>
              Changed: <code>{c.name}</code> ({c.fields.map((f) => FIELD_LABEL[f]?.toLowerCase() ?? f).join(", ")})
              {c.requiresAcceptance && (
                <>
                  {" "}
                  <span className="badge warn">Waiting for acceptance</span>
                </>
              )}
            </li>
          ))}
        </ul>
      ))}
      {anyWaiting(diffs) && (
        <p style={{ margin: 0 }}>
          Calls of a tool waiting for acceptance pause for a person.{" "}
          <Link href={`/tool-changes?integration=${encodeURIComponent(integration)}`}>Review it in Tool changes</Link>
        </p>
      )}
    </div>
  );
}
