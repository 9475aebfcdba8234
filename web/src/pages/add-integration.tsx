// `/integrations/add/:kind`: the MCP, OpenAPI and GraphQL add flows. Each previews what it can
// before saving (MCP probe, OpenAPI preview) and saves in one request, so nothing is half-added.

import { useMutation } from "@tanstack/react-query";
import { useEffect, useRef, useState, type FormEvent, type ReactNode } from "react";
import { Link, useLocation, useParams } from "wouter";
import { ApiError, describeError } from "../api/http";
import {
  addGraphql,
  addMcpServer,
  addOpenApi,
  previewOpenApi,
  probeMcp,
  useIntegrations,
  useInvalidateIntegration,
  type AddMcpRemote,
  type McpProbe,
  type OpenApiPreview,
} from "../api/integrations";
import { NotFound } from "../app";
import "./integrations.css";

// ---- shared bits ------------------------------------------------------------------------

type FieldErrors = Record<string, string>;

/** Places a failed save beside the field it concerns, else at the form's top (`_form`). */
function errorsFrom(e: unknown, fields: string[]): FieldErrors {
  const message = describeError(e);
  if (e instanceof ApiError) {
    const named = e.field?.split(/[.[]/)[0];
    if (named && fields.includes(named)) return { [named]: message };
    if (e.tag.includes("Slug") || /\bslug\b|namespace|already exists/i.test(message)) return { slug: message };
    const lower = message.toLowerCase();
    const hit = fields.find((f) => f !== "name" && lower.includes(f.toLowerCase()));
    if (hit) return { [hit]: message };
  }
  return { _form: message };
}

export function Field(props: {
  id: string;
  label: string;
  hint?: ReactNode;
  error?: string;
  children: (aria: { id: string; "aria-invalid"?: true; "aria-describedby"?: string }) => ReactNode;
}) {
  const describedBy = [props.hint ? `${props.id}-hint` : "", props.error ? `${props.id}-error` : ""]
    .filter(Boolean)
    .join(" ");
  return (
    <div className="field">
      <label htmlFor={props.id}>{props.label}</label>
      {props.children({
        id: props.id,
        "aria-invalid": props.error ? true : undefined,
        "aria-describedby": describedBy || undefined,
      })}
      {props.hint && (
        <span id={`${props.id}-hint`} className="field-hint">
          {props.hint}
        </span>
      )}
      {props.error && (
        <span id={`${props.id}-error`} className="field-error" role="alert">
          {props.error}
        </span>
      )}
    </div>
  );
}

const slugify = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 48);

/** Name / slug / description, with the slug checked against the integrations already there. */
function IdentityFields(props: {
  name: string;
  setName: (v: string) => void;
  slug: string;
  setSlug: (v: string) => void;
  description: string;
  setDescription: (v: string) => void;
  namePlaceholder?: string;
  slugPlaceholder?: string;
  descriptionPlaceholder?: string;
  errors: FieldErrors;
}) {
  const integrations = useIntegrations();
  const effectiveSlug = props.slug.trim() || props.slugPlaceholder || "";
  const taken = !!effectiveSlug && (integrations.data ?? []).some((i) => i.slug === effectiveSlug);
  return (
    <>
      <div className="grid-2">
        <Field id="add-name" label="Name" error={props.errors.name}>
          {(a) => (
            <input {...a} value={props.name} placeholder={props.namePlaceholder} onChange={(e) => props.setName(e.target.value)} />
          )}
        </Field>
        <Field
          id="add-slug"
          label="Slug"
          hint="Agents call tools.<slug>.… — letters, digits and underscores."
          error={props.errors.slug ?? (taken ? `An integration with the slug “${effectiveSlug}” already exists.` : undefined)}
        >
          {(a) => (
            <input
              {...a}
              className="mono"
              value={props.slug}
              placeholder={props.slugPlaceholder}
              onChange={(e) => props.setSlug(e.target.value)}
            />
          )}
        </Field>
      </div>
      <Field id="add-description" label="Description" error={props.errors.description}>
        {(a) => (
          <input
            {...a}
            value={props.description}
            placeholder={props.descriptionPlaceholder}
            onChange={(e) => props.setDescription(e.target.value)}
          />
        )}
      </Field>
    </>
  );
}

/** Runs `fn` 400 ms after `input` stops changing; the previous run is aborted. */
function useDebouncedProbe<T>(input: string, fn: (v: string, signal: AbortSignal) => Promise<T>) {
  const [state, setState] = useState<{ status: "idle" | "busy" | "done" | "error"; data?: T; error?: unknown }>({
    status: "idle",
  });
  const fnRef = useRef(fn);
  fnRef.current = fn;
  useEffect(() => {
    const v = input.trim();
    if (!v) {
      setState({ status: "idle" });
      return;
    }
    const ctrl = new AbortController();
    const timer = window.setTimeout(() => {
      setState((s) => ({ ...s, status: "busy" }));
      fnRef.current(v, ctrl.signal).then(
        (data) => !ctrl.signal.aborted && setState({ status: "done", data }),
        (error) => !ctrl.signal.aborted && setState({ status: "error", error }),
      );
    }, 400);
    return () => {
      window.clearTimeout(timer);
      ctrl.abort();
    };
  }, [input]);
  return state;
}

function hostOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
}

/** Splits an argument line on whitespace; double quotes group. */
function splitArgs(line: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|(\S+)/g;
  for (let m = re.exec(line); m; m = re.exec(line)) out.push(m[1] ?? m[2] ?? "");
  return out;
}

function useSaved() {
  const [, navigate] = useLocation();
  const invalidate = useInvalidateIntegration();
  return (slug: string) => {
    invalidate(slug);
    navigate(`/integrations/${encodeURIComponent(slug)}`);
  };
}

// ---- MCP --------------------------------------------------------------------------------

type McpAuth = "none" | "header" | "oauth2";

function AddMcp() {
  const [transport, setTransport] = useState<"remote" | "stdio">("remote");
  const [endpoint, setEndpoint] = useState("");
  const [command, setCommand] = useState("");
  const [args, setArgs] = useState("");
  const [envVars, setEnvVars] = useState("");
  const [name, setName] = useState("");
  const [slug, setSlug] = useState("");
  const [description, setDescription] = useState("");
  const [auth, setAuth] = useState<McpAuth | null>(null);
  const [headerName, setHeaderName] = useState("Authorization");
  const [prefix, setPrefix] = useState("Bearer ");
  const [errors, setErrors] = useState<FieldErrors>({});
  const saved = useSaved();

  const probe = useDebouncedProbe<McpProbe>(transport === "remote" ? endpoint : "", (v, signal) => probeMcp(v, signal));
  const probed = probe.status === "done" ? probe.data : undefined;
  const detected: McpAuth = probed?.requiresOAuth ? "oauth2" : probed?.requiresAuthentication ? "header" : "none";
  const chosenAuth = auth ?? detected;

  const defaultName =
    transport === "remote" ? probed?.serverName || probed?.name || hostOf(endpoint) : command.trim().split(/[\\/]/).pop() ?? "";
  const defaultSlug = slugify(slug || (transport === "remote" ? probed?.slug || defaultName : defaultName));

  const save = useMutation({
    mutationFn: () => {
      if (transport === "stdio") {
        return addMcpServer({
          transport: "stdio",
          name: name.trim() || defaultName,
          description: description.trim() || undefined,
          slug: slug.trim() || undefined,
          command: command.trim(),
          args: splitArgs(args),
          envVars: envVars.split(/[\s,]+/).filter(Boolean),
        });
      }
      const body: AddMcpRemote = {
        transport: "remote",
        name: name.trim() || defaultName,
        description: description.trim() || probed?.instructions?.slice(0, 300) || undefined,
        endpoint: endpoint.trim(),
        slug: slug.trim() || undefined,
        auth:
          chosenAuth === "header"
            ? { kind: "header", headerName: headerName.trim(), prefix: prefix || undefined }
            : { kind: chosenAuth },
      };
      return addMcpServer(body);
    },
    onSuccess: (r) => saved(r.slug),
    onError: (e) => setErrors(errorsFrom(e, ["endpoint", "command", "slug", "name", "description", "headerName"])),
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const next: FieldErrors = {};
    if (transport === "remote" && !endpoint.trim()) next.endpoint = "Enter the server's URL.";
    if (transport === "stdio" && !command.trim()) next.command = "Enter the command that starts the server.";
    if (!(name.trim() || defaultName)) next.name = "Give the integration a name.";
    if (transport === "remote" && chosenAuth === "header" && !headerName.trim()) next.headerName = "Name the header.";
    setErrors(next);
    if (Object.keys(next).length === 0) save.mutate();
  };

  return (
    <form className="stack form-narrow" onSubmit={submit} noValidate>
      {errors._form && (
        <p className="form-top-error" role="alert">
          {errors._form}
        </p>
      )}
      <div className="field">
        <span id="transport-label" className="label-like">
          <strong>Transport</strong>
        </span>
        <div className="segmented" role="group" aria-labelledby="transport-label">
          <button type="button" aria-pressed={transport === "remote"} onClick={() => setTransport("remote")}>
            Remote (HTTP)
          </button>
          <button type="button" aria-pressed={transport === "stdio"} onClick={() => setTransport("stdio")}>
            Local command (stdio)
          </button>
        </div>
      </div>
      {transport === "remote" ? (
        <>
          <Field
            id="mcp-endpoint"
            label="Server URL"
            error={errors.endpoint ?? (probe.status === "error" ? describeError(probe.error) : undefined)}
            hint={probe.status === "busy" ? "Checking the server…" : "Executor connects to it as soon as you stop typing."}
          >
            {(a) => (
              <input
                {...a}
                type="url"
                className="mono"
                placeholder="https://example.com/mcp"
                value={endpoint}
                onChange={(e) => setEndpoint(e.target.value)}
                autoFocus
              />
            )}
          </Field>
          {probed && (
            <div className="card preview-card stack" aria-live="polite" data-testid="mcp-probe">
              <h3>{probed.serverName || probed.name}</h3>
              <dl className="kv">
                <dt>Status</dt>
                <dd>
                  {probed.connected ? (
                    <span className="badge ok">Reachable</span>
                  ) : probed.requiresOAuth ? (
                    <span className="badge warn">Needs OAuth sign-in</span>
                  ) : probed.requiresAuthentication ? (
                    <span className="badge warn">Needs a credential</span>
                  ) : (
                    <span className="badge danger">Not connected</span>
                  )}
                </dd>
                <dt>Tools</dt>
                <dd>{probed.toolCount ?? "known after connecting"}</dd>
                {probed.instructions && (
                  <>
                    <dt>Instructions</dt>
                    <dd className="muted">{probed.instructions.slice(0, 240)}</dd>
                  </>
                )}
              </dl>
            </div>
          )}
          <fieldset className="stack plain-fieldset">
            <legend>
              <strong>How does this server authenticate?</strong>
            </legend>
            {(
              [
                ["none", "No authentication"],
                ["header", "API key in a header"],
                ["oauth2", "OAuth (sign in with the provider)"],
              ] as const
            ).map(([id, label]) => (
              <label key={id} className="row inline-check">
                <input type="radio" name="mcp-auth" checked={chosenAuth === id} onChange={() => setAuth(id)} />
                {label}
                {probed && detected === id && <span className="badge">Detected</span>}
              </label>
            ))}
            {chosenAuth === "header" && (
              <div className="grid-2">
                <Field id="mcp-header" label="Header name" error={errors.headerName}>
                  {(a) => <input {...a} className="mono" value={headerName} onChange={(e) => setHeaderName(e.target.value)} />}
                </Field>
                <Field id="mcp-prefix" label="Value prefix" hint="Put before the key, e.g. “Bearer ”.">
                  {(a) => <input {...a} className="mono" value={prefix} onChange={(e) => setPrefix(e.target.value)} />}
                </Field>
              </div>
            )}
            <span className="field-hint">Credentials are entered per connection, after the integration is added.</span>
          </fieldset>
        </>
      ) : (
        <>
          <Field id="mcp-command" label="Command" error={errors.command}>
            {(a) => (
              <input {...a} className="mono" placeholder="npx" value={command} onChange={(e) => setCommand(e.target.value)} autoFocus />
            )}
          </Field>
          <Field id="mcp-args" label="Arguments" hint="Separated by spaces; use double quotes to group.">
            {(a) => (
              <input
                {...a}
                className="mono"
                placeholder="-y @modelcontextprotocol/server-everything"
                value={args}
                onChange={(e) => setArgs(e.target.value)}
              />
            )}
          </Field>
          <Field
            id="mcp-env"
            label="Environment variable names"
            hint="Names only, comma separated; their values are entered per connection."
          >
            {(a) => (
              <input {...a} className="mono" placeholder="GITHUB_TOKEN" value={envVars} onChange={(e) => setEnvVars(e.target.value)} />
            )}
          </Field>
        </>
      )}
      <IdentityFields
        name={name}
        setName={setName}
        slug={slug}
        setSlug={setSlug}
        description={description}
        setDescription={setDescription}
        namePlaceholder={defaultName}
        slugPlaceholder={defaultSlug}
        descriptionPlaceholder={probed?.instructions?.slice(0, 120)}
        errors={errors}
      />
      <div className="actions">
        <Link href="/" className="button">
          Cancel
        </Link>
        <button type="submit" className="primary" disabled={save.isPending}>
          {save.isPending ? "Adding…" : "Add integration"}
        </button>
      </div>
    </form>
  );
}

// ---- OpenAPI ----------------------------------------------------------------------------

const looksLikeUrl = (s: string) => /^https?:\/\/\S+$/i.test(s.trim());

function AddOpenApiForm() {
  const [spec, setSpec] = useState("");
  const [name, setName] = useState("");
  const [slug, setSlug] = useState("");
  const [description, setDescription] = useState("");
  const [baseUrl, setBaseUrl] = useState("");
  const [healthCheck, setHealthCheck] = useState("");
  const [errors, setErrors] = useState<FieldErrors>({});
  const saved = useSaved();

  const preview = useDebouncedProbe<OpenApiPreview>(spec, (v, signal) => previewOpenApi(v, signal));
  const p = preview.status === "done" ? preview.data : undefined;
  const defaultName = p?.title || (looksLikeUrl(spec) ? hostOf(spec) : "");
  const defaultSlug = slugify(slug || defaultName);
  const needsBase = !!p && p.servers.length === 0;

  // A new spec brings new servers and candidates: drop choices made for the old one.
  useEffect(() => {
    setBaseUrl("");
    setHealthCheck("");
  }, [p]);

  const save = useMutation({
    mutationFn: () =>
      addOpenApi({
        spec: looksLikeUrl(spec) ? { kind: "url", url: spec.trim() } : { kind: "blob", value: spec },
        name: name.trim() || undefined,
        slug: slug.trim() || undefined,
        description: description.trim() || undefined,
        baseUrl: baseUrl.trim() || undefined,
        healthCheck: healthCheck ? { operation: healthCheck } : undefined,
      }),
    onSuccess: (r) => saved(r.slug),
    onError: (e) => setErrors(errorsFrom(e, ["spec", "slug", "name", "description", "baseUrl"])),
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const next: FieldErrors = {};
    if (!spec.trim()) next.spec = "Paste the spec's URL or its text.";
    else if (preview.status === "error") next.spec = describeError(preview.error);
    if (needsBase && !baseUrl.trim()) next.baseUrl = "This spec declares no servers: enter the API's base URL.";
    setErrors(next);
    if (Object.keys(next).length === 0) save.mutate();
  };

  return (
    <form className="stack form-narrow" onSubmit={submit} noValidate>
      {errors._form && (
        <p className="form-top-error" role="alert">
          {errors._form}
        </p>
      )}
      <Field
        id="openapi-spec"
        label="OpenAPI spec"
        hint={preview.status === "busy" ? "Checking the spec…" : "A URL, or the JSON / YAML text of an OpenAPI 3 or Swagger 2 document."}
        error={errors.spec ?? (preview.status === "error" ? describeError(preview.error) : undefined)}
      >
        {(a) => (
          <textarea
            {...a}
            rows={looksLikeUrl(spec) || !spec ? 2 : 10}
            style={{ minHeight: looksLikeUrl(spec) || !spec ? "3.2rem" : undefined }}
            placeholder="https://api.example.com/openapi.json"
            value={spec}
            onChange={(e) => setSpec(e.target.value)}
            autoFocus
          />
        )}
      </Field>
      {p && (
        <div className="card preview-card stack" aria-live="polite" data-testid="openapi-preview">
          <h3>
            {p.title ?? "Untitled API"} {p.version && <span className="muted">v{p.version}</span>}
          </h3>
          <dl className="kv">
            <dt>Operations</dt>
            <dd>
              {p.operationCount}
              {p.skipped.length > 0 && <span className="muted"> ({p.skipped.length} cannot become tools)</span>}
            </dd>
            {p.tags.length > 0 && (
              <>
                <dt>Tags</dt>
                <dd className="tags">
                  {p.tags.slice(0, 24).map((t) => (
                    <span key={t} className="badge">
                      {t}
                    </span>
                  ))}
                  {p.tags.length > 24 && <span className="muted">+{p.tags.length - 24}</span>}
                </dd>
              </>
            )}
            <dt>Authentication</dt>
            <dd>
              {p.authStrategies.filter((s) => s.kind !== "none").length === 0
                ? "None declared"
                : p.authStrategies
                    .filter((s) => s.kind !== "none")
                    .map((s) => s.label ?? describeStrategy(s))
                    .join(" · ")}
            </dd>
          </dl>
        </div>
      )}
      {p && (
        <>
          <Field
            id="openapi-base"
            label={needsBase ? "Base URL" : "Base URL (optional)"}
            error={errors.baseUrl}
            hint={needsBase ? "This spec declares no servers." : "Leave empty to use the spec's first server."}
          >
            {(a) =>
              p.servers.length > 1 ? (
                <select {...a} value={baseUrl} onChange={(e) => setBaseUrl(e.target.value)}>
                  <option value="">Spec default ({p.servers[0]?.url})</option>
                  {p.servers.map((s) => (
                    <option key={s.url} value={s.url}>
                      {s.url}
                      {s.description ? ` — ${s.description}` : ""}
                    </option>
                  ))}
                </select>
              ) : (
                <input
                  {...a}
                  type="url"
                  className="mono"
                  placeholder={p.servers[0]?.url ?? "https://api.example.com"}
                  value={baseUrl}
                  onChange={(e) => setBaseUrl(e.target.value)}
                />
              )
            }
          </Field>
          {p.healthCheckCandidates.length > 0 && (
            <Field
              id="openapi-health"
              label="Health check (optional)"
              hint="A read-only call Executor makes to check that a connection's credential still works."
            >
              {(a) => (
                <select {...a} value={healthCheck} onChange={(e) => setHealthCheck(e.target.value)}>
                  <option value="">None</option>
                  {p.healthCheckCandidates.map((c) => (
                    <option key={c.operation} value={c.operation}>
                      {c.method.toUpperCase()} {c.operation}
                      {c.summary ? ` — ${c.summary}` : ""}
                    </option>
                  ))}
                </select>
              )}
            </Field>
          )}
        </>
      )}
      <IdentityFields
        name={name}
        setName={setName}
        slug={slug}
        setSlug={setSlug}
        description={description}
        setDescription={setDescription}
        namePlaceholder={defaultName}
        slugPlaceholder={defaultSlug}
        descriptionPlaceholder={p?.description?.slice(0, 120)}
        errors={errors}
      />
      <div className="actions">
        <Link href="/" className="button">
          Cancel
        </Link>
        <button type="submit" className="primary" disabled={save.isPending || preview.status === "busy"}>
          {save.isPending ? "Adding…" : "Add integration"}
        </button>
      </div>
    </form>
  );
}

function describeStrategy(s: OpenApiPreview["authStrategies"][number]): string {
  if (s.kind === "oauth2") return "OAuth 2";
  const p = s.placements?.[0];
  return p ? `API key (${p.carrier} ${p.name})` : "API key";
}

// ---- GraphQL ----------------------------------------------------------------------------

function AddGraphqlForm() {
  const [endpoint, setEndpoint] = useState("");
  const [name, setName] = useState("");
  const [slug, setSlug] = useState("");
  const [description, setDescription] = useState("");
  const [auth, setAuth] = useState<"none" | "header">("none");
  const [headerName, setHeaderName] = useState("Authorization");
  const [prefix, setPrefix] = useState("Bearer ");
  const [errors, setErrors] = useState<FieldErrors>({});
  const saved = useSaved();
  const defaultName = hostOf(endpoint);
  const defaultSlug = slugify(slug || defaultName);

  const save = useMutation({
    mutationFn: () =>
      addGraphql({
        endpoint: endpoint.trim(),
        name: name.trim() || undefined,
        slug: slug.trim() || undefined,
        description: description.trim() || undefined,
        authenticationTemplate:
          auth === "header"
            ? [
                {
                  kind: "apikey",
                  slug: "header",
                  label: "API key",
                  placements: [{ carrier: "header", name: headerName.trim(), prefix: prefix || undefined }],
                },
              ]
            : [],
      }),
    onSuccess: (r) => saved(r.slug),
    onError: (e) => setErrors(errorsFrom(e, ["endpoint", "slug", "name", "description", "headerName"])),
  });

  const submit = (e: FormEvent) => {
    e.preventDefault();
    const next: FieldErrors = {};
    if (!endpoint.trim()) next.endpoint = "Enter the GraphQL endpoint's URL.";
    if (auth === "header" && !headerName.trim()) next.headerName = "Name the header.";
    setErrors(next);
    if (Object.keys(next).length === 0) save.mutate();
  };

  return (
    <form className="stack form-narrow" onSubmit={submit} noValidate>
      {errors._form && (
        <p className="form-top-error" role="alert">
          {errors._form}
        </p>
      )}
      <Field
        id="graphql-endpoint"
        label="Endpoint"
        error={errors.endpoint}
        hint="Executor reads the schema by introspection when you add it."
      >
        {(a) => (
          <input
            {...a}
            type="url"
            className="mono"
            placeholder="https://api.example.com/graphql"
            value={endpoint}
            onChange={(e) => setEndpoint(e.target.value)}
            autoFocus
          />
        )}
      </Field>
      <fieldset className="stack plain-fieldset">
        <legend>
          <strong>Authentication</strong>
        </legend>
        <label className="row inline-check">
          <input type="radio" name="gql-auth" checked={auth === "none"} onChange={() => setAuth("none")} />
          No authentication
        </label>
        <label className="row inline-check">
          <input type="radio" name="gql-auth" checked={auth === "header"} onChange={() => setAuth("header")} />
          API key in a header
        </label>
        {auth === "header" && (
          <div className="grid-2">
            <Field id="gql-header" label="Header name" error={errors.headerName}>
              {(a) => <input {...a} className="mono" value={headerName} onChange={(e) => setHeaderName(e.target.value)} />}
            </Field>
            <Field id="gql-prefix" label="Value prefix" hint="Put before the key, e.g. “Bearer ”.">
              {(a) => <input {...a} className="mono" value={prefix} onChange={(e) => setPrefix(e.target.value)} />}
            </Field>
          </div>
        )}
      </fieldset>
      <IdentityFields
        name={name}
        setName={setName}
        slug={slug}
        setSlug={setSlug}
        description={description}
        setDescription={setDescription}
        namePlaceholder={defaultName}
        slugPlaceholder={defaultSlug}
        errors={errors}
      />
      <div className="actions">
        <Link href="/" className="button">
          Cancel
        </Link>
        <button type="submit" className="primary" disabled={save.isPending}>
          {save.isPending ? "Adding… (introspecting)" : "Add integration"}
        </button>
      </div>
    </form>
  );
}

// ---- page -------------------------------------------------------------------------------

const TITLES: Record<string, string> = {
  mcp: "Add an MCP server",
  openapi: "Add an OpenAPI spec",
  graphql: "Add a GraphQL endpoint",
};

export default function AddIntegrationPage() {
  const { kind = "" } = useParams<{ kind: string }>();
  if (!TITLES[kind]) return <NotFound />;
  return (
    <section className="page">
      <p>
        <Link href="/">← Integrations</Link>
      </p>
      <h1>{TITLES[kind]}</h1>
      {kind === "mcp" && <AddMcp />}
      {kind === "openapi" && <AddOpenApiForm />}
      {kind === "graphql" && <AddGraphqlForm />}
    </section>
  );
}
