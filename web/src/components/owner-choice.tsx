// Where a new connection, rule, toolkit or OAuth app is saved. The local server has one owner (the
// org, shown as "Local"), so there is nothing to choose. On the team server it is Personal (only
// you; the default) or Workspace (everyone), and Workspace is offered only to owners and admins:
// the server refuses a member's workspace write anyway (`OrgWriteDeniedError`).

import { useId } from "react";
import { useOwnerRights, type Owner } from "../api/team";

export function OwnerChoice({
  value,
  onChange,
  legend = "Saved to",
  what,
  locked,
}: {
  value: Owner;
  onChange: (owner: Owner) => void;
  legend?: string;
  /** What is being saved, plural ("connections"): the hint names it. */
  what: string;
  /** Fixed (a reconnect keeps its owner): shown, not chosen. */
  locked?: boolean;
}) {
  const rights = useOwnerRights();
  const name = useId();
  if (!rights.team) return null;
  const hintId = `${name}-hint`;
  return (
    <fieldset className="owner-choice" aria-describedby={!rights.canWriteOrg ? hintId : undefined}>
      <legend>{legend}</legend>
      <label>
        <input
          type="radio"
          name={name}
          value="user"
          checked={value === "user"}
          disabled={locked}
          onChange={() => onChange("user")}
        />
        <span>
          Personal <span className="field-hint">only you</span>
        </span>
      </label>
      <label>
        <input
          type="radio"
          name={name}
          value="org"
          checked={value === "org"}
          disabled={locked || !rights.canWriteOrg}
          onChange={() => onChange("org")}
        />
        <span>
          Workspace <span className="field-hint">everyone in the workspace</span>
        </span>
      </label>
      {!rights.canWriteOrg && !rights.pending && (
        <span className="field-hint" id={hintId}>
          Only workspace admins can add workspace {what}.
        </span>
      )}
    </fieldset>
  );
}
