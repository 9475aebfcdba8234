// "Add connection": one tab per auth method of the integration. Credentials are masked, can be
// tried before saving (`POST /connections/validate`), and saved in one request; OAuth methods
// run the popup flow (MCP servers register a client dynamically first).

import * as Dialog from "@radix-ui/react-dialog";
import * as Tabs from "@radix-ui/react-tabs";
import { useMutation } from "@tanstack/react-query";
import { useRef, useState, type FormEvent } from "react";
import { Link } from "wouter";
import { ApiError, describeError } from "../api/http";
import {
  cancelOAuth,
  createConnection,
  probeOAuth,
  registerDynamicClient,
  startOAuth,
  useInvalidateIntegration,
  useOAuthClients,
  validateConnection,
  type AuthMethodView,
  type Connection,
  type HealthResult,
  type Integration,
} from "../api/integrations";
import { awaitOAuthResult, openBlankPopup } from "../api/oauth-popup";
import { useOwnerRights, type Owner } from "../api/team";
import { OwnerChoice } from "./owner-choice";

/** A free connection name: `main`, then `main_2`, … */
function freeName(existing: Connection[]): string {
  const taken = new Set(existing.map((c) => c.name));
  if (!taken.has("main")) return "main";
  for (let i = 2; ; i++) if (!taken.has(`main_${i}`)) return `main_${i}`;
}

function variablesOf(m: AuthMethodView): { variable: string; where: string }[] {
  const seen = new Map<string, string>();
  for (const p of m.placements ?? []) {
    if (p.literal !== undefined) continue;
    const v = p.variable ?? "token";
    const where =
      p.carrier === "header"
        ? `Header ${p.name}: ${p.prefix}<${v}>`
        : p.carrier === "query"
          ? `Query ?${p.name}=${p.prefix}<${v}>`
          : `Environment ${p.name}`;
    seen.set(v, seen.has(v) ? `${seen.get(v)} · ${where}` : where);
  }
  return [...seen.entries()].map(([variable, where]) => ({ variable, where }));
}

export function HealthVerdict({ result, onPick }: { result: HealthResult | null; onPick?: (value: string) => void }) {
  if (!result) return <div className="result-box" role="status">This integration has no health check: the key could not be tried.</div>;
  const tone = result.status === "healthy" ? "ok" : result.status === "unknown" ? "warn" : "danger";
  const text =
    result.status === "healthy"
      ? "The key works."
      : result.status === "expired"
        ? "The server rejected the credential."
        : result.status === "degraded"
          ? "The check did not succeed."
          : "The result is unclear.";
  return (
    <div className={`result-box stack ${tone}`} role="status" data-testid="health-verdict">
      <strong>
        {text}
        {result.httpStatus ? ` (HTTP ${result.httpStatus})` : ""}
        {result.identity ? ` Signed in as ${result.identity}.` : ""}
      </strong>
      {result.detail && <span className="muted">{result.detail}</span>}
      {result.responseSample && result.responseSample.length > 0 && (
        <dl className="kv">
          {result.responseSample.slice(0, 6).map((f) => (
            <div key={f.path} style={{ display: "contents" }}>
              <dt className="mono">{f.path}</dt>
              <dd className="mono">
                {onPick && (typeof f.value === "string" || typeof f.value === "number") ? (
                  <button type="button" className="linkish" title="Use as the account label" onClick={() => onPick(String(f.value))}>
                    {JSON.stringify(f.value)}
                  </button>
                ) : (
                  JSON.stringify(f.value)
                )}
              </dd>
            </div>
          ))}
        </dl>
      )}
    </div>
  );
}

function SecretInput({
  id,
  value,
  onChange,
  describedBy,
}: {
  id: string;
  value: string;
  onChange: (v: string) => void;
  describedBy?: string;
}) {
  const [shown, setShown] = useState(false);
  return (
    <div className="secret">
      <input
        id={id}
        type={shown ? "text" : "password"}
        className="mono"
        autoComplete="off"
        spellCheck={false}
        value={value}
        aria-describedby={describedBy}
        onChange={(e) => onChange(e.target.value)}
      />
      <button type="button" onClick={() => setShown(!shown)} aria-pressed={shown} aria-label={shown ? "Hide value" : "Show value"}>
        {shown ? "Hide" : "Show"}
      </button>
    </div>
  );
}

interface MethodProps {
  integration: Integration;
  method: AuthMethodView;
  existing: Connection[];
  reconnect?: Connection;
  onDone: () => void;
}

/** Name and account label, shared by every method. */
function NameFields(props: {
  name: string;
  setName: (v: string) => void;
  label: string;
  setLabel: (v: string) => void;
  nameError?: string;
  locked: boolean;
  idPrefix: string;
  owner: Owner;
}) {
  return (
    <div className="grid-2">
      <div className="field">
        <label htmlFor={`${props.idPrefix}-name`}>Connection name</label>
        <input
          id={`${props.idPrefix}-name`}
          className="mono"
          value={props.name}
          disabled={props.locked}
          aria-invalid={props.nameError ? true : undefined}
          onChange={(e) => props.setName(e.target.value)}
        />
        <span className="field-hint mono">
          …{props.owner}.{props.name || "name"}.&lt;tool&gt;
        </span>
        {props.nameError && (
          <span className="field-error" role="alert">
            {props.nameError}
          </span>
        )}
      </div>
      <div className="field">
        <label htmlFor={`${props.idPrefix}-label`}>Account label (optional)</label>
        <input id={`${props.idPrefix}-label`} value={props.label} onChange={(e) => props.setLabel(e.target.value)} />
        <span className="field-hint">Who this account is, e.g. an email.</span>
      </div>
    </div>
  );
}

/** The local server's one owner, shown; the team server's choice (Personal or Workspace). */
function OwnerField({ owner, setOwner, locked }: { owner: Owner; setOwner: (o: Owner) => void; locked: boolean }) {
  const rights = useOwnerRights();
  if (rights.team) return <OwnerChoice value={owner} onChange={setOwner} what="connections" locked={locked} />;
  return (
    <div className="field">
      <span className="label-like">
        <strong>Saved to</strong>
      </span>
      <span>
        <span className="badge">Local</span> <span className="field-hint">Everyone using this server.</span>
      </span>
    </div>
  );
}

function nameErrorOf(e: unknown): { name?: string; form?: string } {
  const msg = describeError(e);
  if (e instanceof ApiError && (e.status === 409 || /name/i.test(msg))) return { name: msg };
  return { form: msg };
}

function CredentialMethod({ integration, method, existing, reconnect, onDone }: MethodProps) {
  const vars = variablesOf(method);
  const [values, setValues] = useState<Record<string, string>>({});
  const [name, setName] = useState(reconnect?.name ?? freeName(existing));
  const [label, setLabel] = useState(reconnect?.identityLabel ?? "");
  const [errors, setErrors] = useState<{ name?: string; form?: string; values?: string }>({});
  const rights = useOwnerRights();
  const [owner, setOwner] = useState<Owner>(reconnect?.owner ?? rights.defaultOwner);
  const invalidate = useInvalidateIntegration();
  const idPrefix = `conn-${method.id}`;

  const filled = vars.every((v) => (values[v.variable] ?? "").length > 0);
  const credential = { values: Object.fromEntries(vars.map((v) => [v.variable, values[v.variable] ?? ""])) };

  const check = useMutation({
    mutationFn: () =>
      validateConnection({ owner, integration: integration.slug, template: method.template, ...credential }),
    onSuccess: (r) => {
      if (r?.identity && !label) setLabel(r.identity);
    },
  });
  const save = useMutation({
    mutationFn: () =>
      createConnection({
        owner,
        name: name.trim(),
        integration: integration.slug,
        template: method.template,
        identityLabel: label.trim() || undefined,
        replace: !!reconnect,
        ...(method.kind === "none" ? { values: {} } : credential),
      }),
    onSuccess: () => {
      invalidate(integration.slug);
      onDone();
    },
    onError: (e) => setErrors(nameErrorOf(e)),
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const next: typeof errors = {};
    if (!name.trim()) next.name = "Name the connection.";
    else if (!reconnect && existing.some((c) => c.owner === owner && c.name === name.trim()))
      next.name = `A connection named “${name.trim()}” already exists.`;
    if (method.kind !== "none" && !filled) next.values = "Fill in every value.";
    setErrors(next);
    if (Object.keys(next).length === 0) save.mutate();
  };

  return (
    <form className="stack" onSubmit={submit} noValidate>
      {errors.form && (
        <p className="form-top-error" role="alert">
          {errors.form}
        </p>
      )}
      {method.kind === "none" && <p className="muted">This method needs no credential.</p>}
      {vars.map((v) => (
        <div className="field" key={v.variable}>
          <label htmlFor={`${idPrefix}-${v.variable}`}>{vars.length === 1 && v.variable === "token" ? "API key" : v.variable}</label>
          <SecretInput
            id={`${idPrefix}-${v.variable}`}
            value={values[v.variable] ?? ""}
            describedBy={`${idPrefix}-${v.variable}-hint`}
            onChange={(val) => {
              setValues((prev) => ({ ...prev, [v.variable]: val }));
              check.reset();
            }}
          />
          <span id={`${idPrefix}-${v.variable}-hint`} className="field-hint mono">
            {v.where}
          </span>
        </div>
      ))}
      {errors.values && (
        <p className="field-error" role="alert">
          {errors.values}
        </p>
      )}
      {method.kind !== "none" && (
        <div className="stack">
          <div className="row">
            <button type="button" disabled={!filled || check.isPending} onClick={() => check.mutate()}>
              {check.isPending ? "Checking…" : "Check the key works"}
            </button>
            <span className="field-hint">Tries it against the integration's health check; nothing is saved.</span>
          </div>
          {check.isError && (
            <p className="field-error" role="alert">
              {describeError(check.error)}
            </p>
          )}
          {check.isSuccess && <HealthVerdict result={check.data} onPick={setLabel} />}
          {check.isSuccess && check.data?.responseSample?.length ? (
            <span className="field-hint">Click a value to use it as the account label.</span>
          ) : null}
        </div>
      )}
      <NameFields
        name={name}
        setName={setName}
        label={label}
        setLabel={setLabel}
        nameError={errors.name}
        locked={!!reconnect}
        idPrefix={idPrefix}
        owner={owner}
      />
      <OwnerField owner={owner} setOwner={setOwner} locked={!!reconnect} />
      <div className="actions">
        <Dialog.Close asChild>
          <button type="button">Cancel</button>
        </Dialog.Close>
        <button type="submit" className="primary" disabled={save.isPending}>
          {save.isPending ? "Saving…" : reconnect ? "Replace credential" : "Add connection"}
        </button>
      </div>
    </form>
  );
}

function OAuthMethod({ integration, method, existing, reconnect, onDone }: MethodProps) {
  const [name, setName] = useState(reconnect?.name ?? freeName(existing));
  const [label, setLabel] = useState(reconnect?.identityLabel ?? "");
  const [clientSlug, setClientSlug] = useState("");
  const [status, setStatus] = useState<string | null>(null);
  const [errors, setErrors] = useState<{ name?: string; form?: string }>({});
  const [busy, setBusy] = useState(false);
  const rights = useOwnerRights();
  const [owner, setOwner] = useState<Owner>(reconnect?.owner ?? rights.defaultOwner);
  const abort = useRef<AbortController | null>(null);
  const stateRef = useRef<string | null>(null);
  const clients = useOAuthClients();
  const invalidate = useInvalidateIntegration();
  const dcr = !!method.oauth?.supportsDynamicRegistration && !!method.oauth.discoveryUrl;
  // A workspace connection cannot rest on a personal app; a personal one may use either.
  const reusable = (clients.data ?? []).find(
    (c) =>
      c.origin.kind === "dcr" && c.origin.integration === integration.slug && (owner === "user" || c.owner === "org"),
  );
  const idPrefix = `conn-${method.id}`;

  const connect = async () => {
    const next: typeof errors = {};
    if (!name.trim()) next.name = "Name the connection.";
    const chosen = (clients.data ?? []).find((c) => c.slug === clientSlug && (owner === "user" || c.owner === "org"));
    if (!dcr && !chosen) next.form = "Choose the OAuth app to sign in with.";
    setErrors(next);
    if (Object.keys(next).length) return;
    // Opened now, inside the click, so the browser does not block it.
    const popup = openBlankPopup(`executor-oauth-${integration.slug}`);
    setBusy(true);
    abort.current = new AbortController();
    try {
      let client: { slug: string; owner: "org" | "user" };
      if (dcr) {
        if (reusable) client = { slug: reusable.slug, owner: reusable.owner };
        else {
          setStatus("Finding the server's sign-in endpoints…");
          const probe = await probeOAuth(method.oauth!.discoveryUrl);
          if (!probe.registrationEndpoint)
            throw new Error("The server does not let Executor register itself: register an OAuth app on the OAuth apps page.");
          setStatus("Registering Executor with the server…");
          const reg = await registerDynamicClient({
            owner,
            registrationEndpoint: probe.registrationEndpoint,
            authorizationUrl: probe.authorizationUrl,
            tokenUrl: probe.tokenUrl,
            issuer: probe.issuer,
            resource: probe.resource,
            scopes: probe.scopesSupported,
            tokenEndpointAuthMethodsSupported: probe.tokenEndpointAuthMethodsSupported,
            clientName: "Executor",
            originIntegration: integration.slug,
          });
          client = { slug: reg.client, owner };
        }
      } else {
        client = { slug: chosen!.slug, owner: chosen!.owner };
      }
      setStatus("Waiting for you to sign in in the popup…");
      const started = await startOAuth({
        client: client.slug,
        clientOwner: client.owner,
        owner,
        name: name.trim(),
        integration: integration.slug,
        template: method.template,
        identityLabel: label.trim() || undefined,
      });
      if (started.status === "connected") {
        popup?.close();
      } else {
        stateRef.current = started.state;
        if (popup) popup.location.href = started.authorizationUrl;
        else window.open(started.authorizationUrl, "_blank");
        const result = await awaitOAuthResult(started.state, popup, abort.current.signal);
        stateRef.current = null;
        if (!result.ok) throw new Error(result.errorDetails ? `${result.error} (${result.errorDetails})` : (result.error ?? "Sign-in failed."));
      }
      invalidate(integration.slug);
      onDone();
    } catch (e) {
      popup?.close();
      if (stateRef.current) void cancelOAuth(stateRef.current).catch(() => undefined);
      stateRef.current = null;
      setErrors(nameErrorOf(e));
      setStatus(null);
    } finally {
      setBusy(false);
    }
  };

  const cancel = () => abort.current?.abort();

  return (
    <div className="stack">
      {errors.form && (
        <p className="form-top-error" role="alert">
          {errors.form}
        </p>
      )}
      {dcr ? (
        <p className="muted">
          Executor registers itself with the server (dynamic client registration) and opens its sign-in page in a popup.
        </p>
      ) : (
        <div className="field">
          <label htmlFor={`${idPrefix}-client`}>OAuth app</label>
          <select id={`${idPrefix}-client`} value={clientSlug} onChange={(e) => setClientSlug(e.target.value)}>
            <option value="">Choose…</option>
            {(clients.data ?? []).filter((c) => owner === "user" || c.owner === "org").map((c) => (
              <option key={`${c.owner}:${c.slug}`} value={c.slug}>
                {c.slug} ({c.clientId})
              </option>
            ))}
          </select>
          <span className="field-hint">
            Register one on the <Link href="/oauth-apps">OAuth apps</Link> page if none fits.
          </span>
        </div>
      )}
      <NameFields
        name={name}
        setName={setName}
        label={label}
        setLabel={setLabel}
        nameError={errors.name}
        locked={!!reconnect}
        idPrefix={idPrefix}
        owner={owner}
      />
      <OwnerField owner={owner} setOwner={setOwner} locked={!!reconnect} />
      {status && (
        <p className="muted" role="status">
          {status}
        </p>
      )}
      <div className="actions">
        {busy ? (
          <button type="button" onClick={cancel}>
            Cancel sign-in
          </button>
        ) : (
          <Dialog.Close asChild>
            <button type="button">Cancel</button>
          </Dialog.Close>
        )}
        <button type="button" className="primary" disabled={busy} onClick={() => void connect()}>
          {busy ? "Signing in…" : reconnect ? "Reconnect with OAuth" : "Connect with OAuth"}
        </button>
      </div>
    </div>
  );
}

export function ConnectionModal({
  integration,
  existing,
  open,
  onOpenChange,
  reconnect,
}: {
  integration: Integration;
  existing: Connection[];
  open: boolean;
  onOpenChange: (open: boolean) => void;
  reconnect?: Connection;
}) {
  const methods = reconnect
    ? integration.authMethods.filter((m) => m.template === reconnect.template)
    : integration.authMethods;
  const done = () => onOpenChange(false);
  return (
    <Dialog.Root open={open} onOpenChange={onOpenChange}>
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content className="dialog-content" aria-describedby={undefined}>
          <Dialog.Title>
            {reconnect ? `Reconnect ${reconnect.name}` : "Add connection"} · {integration.name}
          </Dialog.Title>
          {methods.length === 0 ? (
            <p className="muted">This integration declares no way to authenticate.</p>
          ) : (
            <Tabs.Root defaultValue={methods[0]!.id}>
              {methods.length > 1 && (
                <Tabs.List aria-label="Authentication method">
                  {methods.map((m) => (
                    <Tabs.Trigger key={m.id} value={m.id}>
                      {m.label}
                    </Tabs.Trigger>
                  ))}
                </Tabs.List>
              )}
              {methods.map((m) => (
                <Tabs.Content key={m.id} value={m.id}>
                  {methods.length === 1 && <p className="field-hint">{m.label}</p>}
                  {m.kind === "oauth" ? (
                    <OAuthMethod integration={integration} method={m} existing={existing} reconnect={reconnect} onDone={done} />
                  ) : (
                    <CredentialMethod integration={integration} method={m} existing={existing} reconnect={reconnect} onDone={done} />
                  )}
                </Tabs.Content>
              ))}
            </Tabs.Root>
          )}
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}
