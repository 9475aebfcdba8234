// /account — who this browser is signed in as, signing out, and the person's own API keys: listed
// by their obfuscated value and last use, created by name (the value is shown once, here, with a
// copy button), deleted after a confirmation.

import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { describeError } from "../api/http";
import {
  apiKeysKey,
  createApiKey,
  deleteApiKey,
  formatTime,
  ROLE_LABELS,
  signOut,
  useApiKeys,
  useInvalidateTeam,
  useMe,
  type ApiKey,
  type NewApiKey,
} from "../api/team";
import { CopyButton } from "../components/connect-agent";
import { ConfirmDialog } from "../components/dialogs";
import { ErrorNote, TextField } from "../components/fields";
import "./integrations.css";
import "./settings.css";
import "./team.css";

export default function AccountPage() {
  const me = useMe();
  const out = useMutation({ mutationFn: signOut, onSuccess: () => window.location.assign("/login") });
  return (
    <section className="page team-page">
      <h1>Account</h1>
      <section className="card" aria-labelledby="me-title">
        <h2 id="me-title" className="settings-h2">
          Signed in
        </h2>
        <ErrorNote error={me.error} />
        {me.isPending ? (
          <p className="muted" role="status">
            Loading…
          </p>
        ) : me.data ? (
          <dl className="team-facts">
            <dt>Name</dt>
            <dd>{me.data.user.name}</dd>
            <dt>Email</dt>
            <dd data-testid="account-email">{me.data.user.email}</dd>
            <dt>Role</dt>
            <dd>
              <span className="badge">{ROLE_LABELS[me.data.role]}</span>
            </dd>
            <dt>Workspace</dt>
            <dd>{me.data.organization.name}</dd>
          </dl>
        ) : null}
        <ErrorNote error={out.error} />
        <div>
          <button type="button" className="danger" disabled={out.isPending} onClick={() => out.mutate()}>
            {out.isPending ? "Signing out…" : "Sign out"}
          </button>
        </div>
      </section>
      <ApiKeys />
    </section>
  );
}

function ApiKeys() {
  const keys = useApiKeys();
  const invalidate = useInvalidateTeam();
  const [name, setName] = useState("");
  const [nameError, setNameError] = useState<string | null>(null);
  const [made, setMade] = useState<NewApiKey | null>(null);
  const [deleting, setDeleting] = useState<ApiKey | null>(null);
  const create = useMutation({
    mutationFn: () => createApiKey(name.trim()),
    onSuccess: (key) => {
      setMade(key);
      setName("");
      invalidate(apiKeysKey);
    },
    onError: (e) => setNameError(describeError(e)),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (name.trim().length > 100) return setNameError("Use at most 100 characters.");
    create.mutate();
  };
  const list = keys.data ?? [];
  return (
    <section className="card stack" aria-labelledby="keys-title">
      <div>
        <h2 id="keys-title" className="settings-h2">
          API keys
        </h2>
        <p className="muted settings-p">
          For agents and scripts that act as you: send a key as <code>Authorization: Bearer exk_…</code> to{" "}
          <code>{window.location.origin}/mcp</code> or the API. Delete a key and it stops working at once.
        </p>
      </div>
      <form className="team-inline-form" onSubmit={submit} noValidate aria-label="Create an API key">
        <TextField
          id="key-name"
          label="Name"
          value={name}
          placeholder="CI agent"
          onChange={(v) => {
            setName(v);
            setNameError(null);
          }}
          error={nameError}
          hint="What uses it, so you know which to delete later. Optional."
        />
        <div className="team-inline-submit">
          <button type="submit" className="primary" disabled={create.isPending}>
            {create.isPending ? "Creating…" : "Create key"}
          </button>
        </div>
      </form>
      {made && <NewKey made={made} onDone={() => setMade(null)} />}
      <ErrorNote error={keys.error} />
      {keys.isPending ? (
        <p className="muted" role="status">
          Loading keys…
        </p>
      ) : list.length === 0 ? (
        <p className="muted">You have no API keys.</p>
      ) : (
        <table aria-label="API keys">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key</th>
              <th scope="col">Created</th>
              <th scope="col">Last used</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.map((k) => (
              <tr key={k.id}>
                <td>{k.name}</td>
                <td>
                  <code>{k.obfuscatedValue}</code>
                </td>
                <td>{formatTime(k.createdAt)}</td>
                <td>{k.lastUsedAt ? formatTime(k.lastUsedAt) : <span className="muted">never</span>}</td>
                <td className="team-row-actions">
                  <button type="button" className="danger" aria-label={`Delete ${k.name}`} onClick={() => setDeleting(k)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ConfirmDialog
        open={!!deleting}
        onOpenChange={(o) => !o && setDeleting(null)}
        title={`Delete the key “${deleting?.name ?? ""}”?`}
        confirm="Delete key"
        onConfirm={async () => {
          await deleteApiKey(deleting!.id);
          invalidate(apiKeysKey);
        }}
      >
        <p>
          Anything that still sends <code>{deleting?.obfuscatedValue}</code> is refused from now on. This cannot be undone.
        </p>
      </ConfirmDialog>
    </section>
  );
}

/** The one time a key's value is on screen. */
function NewKey({ made, onDone }: { made: NewApiKey; onDone: () => void }) {
  return (
    <div className="result-box stack new-secret" role="region" aria-labelledby="new-key-title">
      <h3 id="new-key-title" className="settings-h2">
        New key “{made.name}”
      </h3>
      <p className="warn-note" role="alert">
        Copy it now: it won't be shown again.
      </p>
      <div className="field">
        <label htmlFor="new-key-value">Key</label>
        <div className="copy-row">
          <input id="new-key-value" readOnly value={made.value} onFocus={(e) => e.currentTarget.select()} />
          <CopyButton text={made.value} label="Copy key" />
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
