// /admin — the workspace's people, for its owners and admins: members (role, removal; "you" marked)
// and invites (made with a role, a label and an expiry; the code and its share link shown with a
// copy button; listed as open, used or expired; an unused one revoked). Members see a notice.

import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { describeError } from "../api/http";
import {
  createInvite,
  formatTime,
  inviteState,
  invitesKey,
  isAdminRole,
  joinLink,
  membersKey,
  removeMember,
  revokeInvite,
  ROLE_LABELS,
  setMemberRole,
  useInvalidateTeam,
  useInvites,
  useMe,
  useMembers,
  useRoles,
  type Invite,
  type Member,
  type Role,
} from "../api/team";
import { CopyButton } from "../components/connect-agent";
import { ConfirmDialog } from "../components/dialogs";
import { ErrorNote, TextField } from "../components/fields";
import "./integrations.css";
import "./settings.css";
import "./team.css";

/** Shown instead of an admin page to a member. */
export function AdminOnly({ title }: { title: string }) {
  return (
    <section className="page team-page">
      <h1>{title}</h1>
      <p className="card muted" role="status">
        Only workspace owners and admins can see this page. Ask one of them if you need access.
      </p>
    </section>
  );
}

export default function AdminPage() {
  const me = useMe();
  if (me.isPending) return <p className="page muted" role="status">Loading…</p>;
  if (me.isError) {
    return (
      <section className="page team-page">
        <h1>Admin</h1>
        <ErrorNote error={me.error} />
      </section>
    );
  }
  if (!isAdminRole(me.data.role)) return <AdminOnly title="Admin" />;
  return (
    <section className="page team-page">
      <h1>Admin</h1>
      <p className="muted team-lede">Who is in the workspace {me.data.organization.name}, and who may join it.</p>
      <Members myRole={me.data.role} />
      <Invites />
    </section>
  );
}

// ---- members ---------------------------------------------------------------------------------

function Members({ myRole }: { myRole: Role }) {
  const members = useMembers();
  const roles = useRoles();
  const [removing, setRemoving] = useState<Member | null>(null);
  const invalidate = useInvalidateTeam();
  const list = members.data ?? [];
  const roleOptions = roles.data ?? (Object.keys(ROLE_LABELS) as Role[]).map((slug) => ({ slug, name: ROLE_LABELS[slug] }));
  return (
    <section className="card stack" aria-labelledby="members-title">
      <h2 id="members-title" className="settings-h2">
        Members {members.isSuccess && <span className="muted team-count">{list.length}</span>}
      </h2>
      <ErrorNote error={members.error} />
      {members.isPending ? (
        <p className="muted" role="status">
          Loading members…
        </p>
      ) : (
        list.length > 0 && (
          <table aria-label="Members">
            <thead>
              <tr>
                <th scope="col">Person</th>
                <th scope="col">Role</th>
                <th scope="col">Joined</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((m) => (
                <MemberRow
                  key={m.id}
                  member={m}
                  myRole={myRole}
                  roleOptions={roleOptions}
                  onRemove={() => setRemoving(m)}
                  onChanged={() => invalidate(membersKey)}
                />
              ))}
            </tbody>
          </table>
        )
      )}
      <ConfirmDialog
        open={!!removing}
        onOpenChange={(o) => !o && setRemoving(null)}
        title={removing?.isCurrentUser ? "Leave the workspace?" : `Remove ${removing?.email ?? ""}?`}
        confirm={removing?.isCurrentUser ? "Leave" : "Remove member"}
        onConfirm={async () => {
          await removeMember(removing!.id);
          if (removing!.isCurrentUser) window.location.assign("/login");
          else invalidate(membersKey);
        }}
      >
        <p>
          {removing?.isCurrentUser ? "You" : "They"} are signed out everywhere at once: sessions, API keys and agents'
          OAuth tokens stop working. {removing?.isCurrentUser ? "You" : "They"} can only come back with a new invite.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function MemberRow({
  member,
  myRole,
  roleOptions,
  onRemove,
  onChanged,
}: {
  member: Member;
  myRole: Role;
  roleOptions: { slug: Role; name: string }[];
  onRemove: () => void;
  onChanged: () => void;
}) {
  const change = useMutation({
    mutationFn: (role: Role) => setMemberRole(member.id, role),
    onSettled: onChanged,
  });
  // Only an owner makes or unmakes owners (the server says so too).
  const locked = myRole !== "owner" && member.role === "owner";
  const selectId = `role-${member.id}`;
  return (
    <tr>
      <td>
        <div className="who">
          <span>
            {member.name || member.email}{" "}
            {member.isCurrentUser && (
              <span className="badge" data-testid="you-badge">
                you
              </span>
            )}
          </span>
          <span className="muted">{member.email}</span>
        </div>
      </td>
      <td>
        <label htmlFor={selectId} className="visually-hidden">
          Role of {member.email}
        </label>
        <select
          id={selectId}
          value={change.isPending ? change.variables : member.role}
          disabled={locked || change.isPending}
          aria-describedby={change.isError ? `${selectId}-error` : undefined}
          onChange={(e) => change.mutate(e.target.value as Role)}
        >
          {roleOptions.map((r) => (
            <option key={r.slug} value={r.slug} disabled={r.slug === "owner" && myRole !== "owner"}>
              {r.name}
            </option>
          ))}
        </select>
        {change.isError && (
          <span className="field-error" id={`${selectId}-error`} role="alert">
            {describeError(change.error)}
          </span>
        )}
      </td>
      <td>{formatTime(member.createdAt)}</td>
      <td className="team-row-actions">
        <button
          type="button"
          className="danger"
          disabled={locked}
          aria-label={member.isCurrentUser ? "Leave the workspace" : `Remove ${member.email}`}
          onClick={onRemove}
        >
          {member.isCurrentUser ? "Leave" : "Remove"}
        </button>
      </td>
    </tr>
  );
}

// ---- invites ---------------------------------------------------------------------------------

const STATE_BADGE = { open: "ok", used: "", expired: "warn" } as const;

function Invites() {
  const invites = useInvites();
  const invalidate = useInvalidateTeam();
  const [role, setRole] = useState<Invite["role"]>("member");
  const [label, setLabel] = useState("");
  const [days, setDays] = useState("7");
  const [daysError, setDaysError] = useState<string | null>(null);
  const [made, setMade] = useState<Invite | null>(null);
  const create = useMutation({
    mutationFn: () => createInvite({ role, label: label.trim() || undefined, expiresInDays: Number(days) }),
    onSuccess: (invite) => {
      setMade(invite);
      setLabel("");
      invalidate(invitesKey);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const n = Number(days);
    if (!Number.isInteger(n) || n < 1 || n > 90) {
      setDaysError("Between 1 and 90 days.");
      document.getElementById("invite-days")?.focus();
      return;
    }
    create.mutate();
  };
  const list = invites.data ?? [];
  return (
    <section className="card stack" aria-labelledby="invites-title">
      <div>
        <h2 id="invites-title" className="settings-h2">
          Invites
        </h2>
        <p className="muted settings-p">
          An invite is a code for one person: they open its link, create an account and join with the role you chose.
          No email is sent; share the link yourself.
        </p>
      </div>
      <form className="team-invite-form" onSubmit={submit} noValidate aria-label="Create an invite">
        <ErrorNote error={create.error} />
        <div className="field">
          <label htmlFor="invite-role">Role</label>
          <select id="invite-role" value={role} onChange={(e) => setRole(e.target.value as Invite["role"])}>
            <option value="member">Member</option>
            <option value="admin">Admin</option>
          </select>
        </div>
        <TextField id="invite-label" label="Label (optional)" value={label} placeholder="For Ada" onChange={setLabel} error={null} />
        <div className="field">
          <label htmlFor="invite-days">Expires in (days)</label>
          <input
            id="invite-days"
            type="number"
            min={1}
            max={90}
            value={days}
            aria-invalid={daysError ? true : undefined}
            aria-describedby={daysError ? "invite-days-error" : undefined}
            onChange={(e) => {
              setDays(e.target.value);
              setDaysError(null);
            }}
          />
          {daysError && (
            <span className="field-error" id="invite-days-error">
              {daysError}
            </span>
          )}
        </div>
        <div className="team-inline-submit">
          <button type="submit" className="primary" disabled={create.isPending}>
            {create.isPending ? "Creating…" : "Create invite"}
          </button>
        </div>
      </form>
      {made && <NewInvite invite={made} onDone={() => setMade(null)} />}
      <ErrorNote error={invites.error} />
      {invites.isPending ? (
        <p className="muted" role="status">
          Loading invites…
        </p>
      ) : list.length === 0 ? (
        <p className="muted">No invites yet.</p>
      ) : (
        <table aria-label="Invites">
          <thead>
            <tr>
              <th scope="col">Code</th>
              <th scope="col">Role</th>
              <th scope="col">Label</th>
              <th scope="col">Status</th>
              <th scope="col">Expires</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((i) => (
              <InviteRow key={i.id} invite={i} onChanged={() => invalidate(invitesKey)} />
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function NewInvite({ invite, onDone }: { invite: Invite; onDone: () => void }) {
  const link = joinLink(invite.code);
  return (
    <div className="result-box ok stack" role="region" aria-labelledby="new-invite-title">
      <h3 id="new-invite-title" className="settings-h2">
        Invite created
      </h3>
      <p className="settings-p">
        Send this link to the person you invite ({ROLE_LABELS[invite.role].toLowerCase()}, until{" "}
        {formatTime(invite.expiresAt)}). It works once.
      </p>
      <div className="field">
        <label htmlFor="new-invite-link">Share link</label>
        <div className="copy-row">
          <input id="new-invite-link" readOnly value={link} data-testid="invite-link" onFocus={(e) => e.currentTarget.select()} />
          <CopyButton text={link} label="Copy link" />
        </div>
      </div>
      <div className="field">
        <label htmlFor="new-invite-code">Code</label>
        <div className="copy-row">
          <input id="new-invite-code" readOnly value={invite.code} data-testid="invite-code" />
          <CopyButton text={invite.code} label="Copy code" />
        </div>
      </div>
      <div>
        <button type="button" onClick={onDone}>
          Done
        </button>
      </div>
    </div>
  );
}

function InviteRow({ invite, onChanged }: { invite: Invite; onChanged: () => void }) {
  const revoke = useMutation({ mutationFn: () => revokeInvite(invite.id), onSettled: onChanged });
  const state = inviteState(invite);
  return (
    <tr>
      <td>
        <code>{invite.code}</code>
      </td>
      <td>{ROLE_LABELS[invite.role]}</td>
      <td>{invite.label || <span className="muted">—</span>}</td>
      <td>
        <span className={`badge ${STATE_BADGE[state]}`}>
          {state === "used" ? `used${invite.usedByEmail ? ` by ${invite.usedByEmail}` : ""}` : state}
        </span>
        {invite.usedAt && <span className="field-hint"> {formatTime(invite.usedAt)}</span>}
      </td>
      <td>{state === "used" ? "—" : formatTime(invite.expiresAt)}</td>
      <td className="team-row-actions">
        {state !== "used" && (
          <button
            type="button"
            className="danger"
            disabled={revoke.isPending}
            aria-label={`Revoke ${invite.code}`}
            onClick={() => revoke.mutate()}
          >
            Revoke
          </button>
        )}
        {revoke.isError && (
          <span className="field-error" role="alert">
            {describeError(revoke.error)}
          </span>
        )}
      </td>
    </tr>
  );
}
