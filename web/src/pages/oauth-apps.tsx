// /oauth-apps — OAuth client registrations ("bring your own app") that connections sign in with.

import { useState, type FormEvent } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { ApiError, describeError } from "../api/http";
import {
  callbackUrl,
  putOAuthClient,
  removeOAuthClient,
  useOAuthClients,
  type Grant,
  type OAuthClient,
} from "../api/oauth-clients";
import { ownerLabel, useOwnerRights, type Owner } from "../api/team";
import { OwnerChoice } from "../components/owner-choice";
import { CopyButton } from "./settings";
import "./exec-common.css";
import "./settings.css";
import "./executions.css";

const EMPTY = { slug: "", grant: "authorization_code" as Grant, authorizationUrl: "", tokenUrl: "", clientId: "", clientSecret: "", resource: "" };
type Draft = typeof EMPTY;
type FieldName = keyof Draft;

const FIELD_WORDS: [FieldName, RegExp][] = [
  ["slug", /slug/i],
  ["authorizationUrl", /authori[sz]ation/i],
  ["tokenUrl", /token.?url|token endpoint/i],
  ["clientId", /client.?id/i],
  ["clientSecret", /secret/i],
  ["resource", /resource/i],
  ["grant", /grant/i],
];

/** The form field a server error concerns (its `field`, else words in the message). */
function fieldOf(e: unknown): FieldName | null {
  if (!(e instanceof ApiError)) return null;
  const f = e.field?.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  if (f && f in EMPTY) return f as FieldName;
  return FIELD_WORDS.find(([, re]) => re.test(e.message))?.[0] ?? null;
}

function isUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return u.protocol === "https:" || u.protocol === "http:";
  } catch {
    return false;
  }
}

export default function OAuthAppsPage() {
  const clients = useOAuthClients();
  return (
    <section className="page">
      <h1>OAuth apps</h1>
      <p className="muted">
        Register an app you created with a provider so connections can sign in through it. Providers that support
        dynamic registration need none: the server registers itself.
      </p>
      <section className="card" aria-labelledby="callback-title">
        <h2 id="callback-title" className="settings-h2">Callback URL</h2>
        <p className="muted settings-p">Allow-list this redirect URL in the provider's app settings.</p>
        <div className="copy-row">
          <label htmlFor="callback-url" className="visually-hidden">Callback URL</label>
          <input id="callback-url" readOnly value={callbackUrl()} />
          <CopyButton text={callbackUrl()} label="Copy the callback URL" />
        </div>
      </section>
      <RegisterForm />
      <section className="card" aria-labelledby="apps-title">
        <h2 id="apps-title" className="settings-h2">Registered apps</h2>
        {clients.isPending ? (
          <p className="muted" role="status">Loading…</p>
        ) : clients.isError ? (
          <p className="error" role="alert">{describeError(clients.error)}</p>
        ) : clients.data.length === 0 ? (
          <p className="muted">None yet.</p>
        ) : (
          <table>
            <thead>
              <tr><th scope="col">Slug</th><th scope="col">Grant</th><th scope="col">Client id</th><th scope="col">Token URL</th><th scope="col"><span className="visually-hidden">Remove</span></th></tr>
            </thead>
            <tbody>
              {clients.data.map((c) => <ClientRow key={`${c.owner}/${c.slug}`} client={c} />)}
            </tbody>
          </table>
        )}
      </section>
    </section>
  );
}

function ClientRow({ client: c }: { client: OAuthClient }) {
  const qc = useQueryClient();
  const { team } = useOwnerRights();
  const remove = useMutation({
    mutationFn: () => removeOAuthClient(c.slug, c.owner),
    onSuccess: () => void qc.invalidateQueries({ queryKey: ["oauth-clients"] }),
  });
  return (
    <tr>
      <td>
        <code>{c.slug}</code>
        {c.origin.kind !== "manual" && <> <span className="badge">registered automatically</span></>}
        {team && <> <span className="badge">{ownerLabel(c.owner)}</span></>}
        {remove.isError && <p className="field-error" role="alert">{describeError(remove.error)}</p>}
      </td>
      <td>{c.grant === "client_credentials" ? "client credentials" : "authorization code"}</td>
      <td><code>{c.clientId}</code></td>
      <td><code className="journal-value">{c.tokenUrl}</code></td>
      <td>
        <button type="button" className="danger" disabled={remove.isPending} onClick={() => remove.mutate()} aria-label={`Remove ${c.slug}`}>
          Remove
        </button>
      </td>
    </tr>
  );
}

function RegisterForm() {
  const qc = useQueryClient();
  const rights = useOwnerRights();
  const [owner, setOwner] = useState<Owner>(rights.defaultOwner);
  const [d, setD] = useState<Draft>(EMPTY);
  const [local, setLocal] = useState<Partial<Record<FieldName, string>>>({});
  const save = useMutation({
    mutationFn: () =>
      putOAuthClient({
        owner,
        slug: d.slug.trim(),
        grant: d.grant,
        authorizationUrl: d.grant === "authorization_code" ? d.authorizationUrl.trim() : "",
        tokenUrl: d.tokenUrl.trim(),
        clientId: d.clientId.trim(),
        clientSecret: d.clientSecret || undefined,
        resource: d.resource.trim() || undefined,
      }),
    onSuccess: () => {
      setD(EMPTY);
      void qc.invalidateQueries({ queryKey: ["oauth-clients"] });
    },
  });
  const serverField = fieldOf(save.error);
  const errors: Partial<Record<FieldName, string>> = { ...local };
  if (save.error && serverField) errors[serverField] = describeError(save.error);
  const set = (k: FieldName, v: string) => {
    setD((x) => ({ ...x, [k]: v }));
    setLocal((x) => ({ ...x, [k]: undefined }));
    save.reset();
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const found: Partial<Record<FieldName, string>> = {};
    if (!/^[a-z0-9][a-z0-9_-]*$/i.test(d.slug.trim())) found.slug = "Give it a short name: letters, digits, - and _.";
    if (d.grant === "authorization_code" && !isUrl(d.authorizationUrl.trim())) found.authorizationUrl = "Enter the full authorization URL.";
    if (!isUrl(d.tokenUrl.trim())) found.tokenUrl = "Enter the full token URL.";
    if (!d.clientId.trim()) found.clientId = "The client id is required.";
    setLocal(found);
    if (Object.keys(found).length === 0) save.mutate();
  };
  const field = (k: FieldName, label: string, opts: { type?: string; hint?: string; required?: boolean } = {}) => (
    <div className="field">
      <label htmlFor={`oauth-${k}`}>{label}{opts.required && <span aria-hidden="true"> *</span>}</label>
      <input
        id={`oauth-${k}`}
        type={opts.type ?? "text"}
        value={d[k]}
        autoComplete="off"
        aria-required={opts.required || undefined}
        aria-invalid={errors[k] ? true : undefined}
        aria-describedby={errors[k] ? `oauth-${k}-error` : opts.hint ? `oauth-${k}-hint` : undefined}
        onChange={(e) => set(k, e.target.value)}
      />
      {opts.hint && <span className="field-hint" id={`oauth-${k}-hint`}>{opts.hint}</span>}
      {errors[k] && <span className="field-error" id={`oauth-${k}-error`}>{errors[k]}</span>}
    </div>
  );
  return (
    <form className="card stack" onSubmit={submit} noValidate aria-labelledby="register-title">
      <h2 id="register-title" className="settings-h2">Register an app</h2>
      {save.error && !serverField && <p className="error" role="alert">{describeError(save.error)}</p>}
      {save.isSuccess && <p role="status" className="settings-p"><span className="badge ok">Saved.</span></p>}
      <div className="settings-grid">
        {field("slug", "Name (slug)", { required: true, hint: "How connections refer to this app, e.g. github-app." })}
        <div className="field">
          <label htmlFor="oauth-grant">Grant</label>
          <select id="oauth-grant" value={d.grant} onChange={(e) => set("grant", e.target.value)}>
            <option value="authorization_code">Authorization code (a person signs in)</option>
            <option value="client_credentials">Client credentials (machine to machine)</option>
          </select>
        </div>
        {d.grant === "authorization_code" && field("authorizationUrl", "Authorization URL", { type: "url", required: true })}
        {field("tokenUrl", "Token URL", { type: "url", required: true })}
        {field("clientId", "Client id", { required: true })}
        {field("clientSecret", "Client secret", { type: "password", hint: "Leave empty for public clients (PKCE)." })}
        {field("resource", "Resource (optional)", { hint: "RFC 8707 resource indicator, when the provider wants one." })}
      </div>
      <OwnerChoice value={owner} onChange={setOwner} what="OAuth apps" />
      <div>
        <button type="submit" className="primary" disabled={save.isPending}>{save.isPending ? "Saving…" : "Register app"}</button>
      </div>
    </form>
  );
}
