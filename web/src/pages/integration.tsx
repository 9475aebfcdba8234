// `/integrations/:slug`: the header (edit, refresh, delete) and the Connections and Tools tabs;
// the tab and the selected tool live in the URL so both can be linked.

import * as DropdownMenu from "@radix-ui/react-dropdown-menu";
import * as Tabs from "@radix-ui/react-tabs";
import { useMutation } from "@tanstack/react-query";
import { useMemo, useState, type CSSProperties, type FormEvent } from "react";
import { useLocation, useParams, useSearch } from "wouter";
import { api, ApiError, describeError } from "../api/http";
import {
  checkConnectionHealth,
  patchConnection,
  patchIntegration,
  removeConnection,
  removeIntegration,
  toolPath,
  useConnections,
  useIntegration,
  useInvalidateIntegration,
  useTools,
  type Connection,
  type HealthResult,
  type Integration,
  type Tool,
} from "../api/integrations";
import { useGlobalRules, usePolicies } from "../api/policies";
import { ownerLabel } from "../api/team";
import { refreshConnectionDiff, useInvalidateToolChanges } from "../api/tool-changes";
import { ConnectionModal, HealthVerdict } from "../components/connection-modal";
import { ConfirmDialog, DialogActions, Modal } from "../components/dialogs";
import { ErrorNote } from "../components/fields";
import { anyWaiting, RefreshDiff, type ConnectionDiff } from "../components/refresh-diff";
import { DetailHeader, DetailUnavailable, PageLoading } from "../components/page-header";
import { agnosticPattern, effectiveDecision } from "../components/policy-menu";
import { ToolDetail } from "../components/tool-detail";
import { ToolTree } from "../components/tool-tree";
import { KIND_LABEL } from "./integrations";
import "./integrations.css";

// ---- small dialogs ----------------------------------------------------------------------

function EditDialog(props: {
  open: boolean;
  onOpenChange: (o: boolean) => void;
  title: string;
  fields: { id: string; label: string; value: string; hint?: string }[];
  onSave: (values: Record<string, string>) => Promise<unknown>;
}) {
  const [values, setValues] = useState<Record<string, string>>({});
  const save = useMutation({ mutationFn: props.onSave, onSuccess: () => props.onOpenChange(false) });
  const current = (id: string, fallback: string) => values[id] ?? fallback;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate(Object.fromEntries(props.fields.map((f) => [f.id, current(f.id, f.value)])));
  };
  return (
    <Modal
      open={props.open}
      onOpenChange={(o) => {
        if (o) {
          setValues({});
          save.reset();
        }
        props.onOpenChange(o);
      }}
      title={props.title}
    >
      <form className="stack" onSubmit={submit}>
        <ErrorNote error={save.error} />
        {props.fields.map((f) => (
          <div className="field" key={f.id}>
            <label htmlFor={`edit-${f.id}`}>{f.label}</label>
            <input
              id={`edit-${f.id}`}
              value={current(f.id, f.value)}
              onChange={(e) => setValues((v) => ({ ...v, [f.id]: e.target.value }))}
            />
            {f.hint && <span className="field-hint">{f.hint}</span>}
          </div>
        ))}
        <DialogActions label="Save" busyLabel="Saving…" busy={save.isPending} />
      </form>
    </Modal>
  );
}

// ---- connections ------------------------------------------------------------------------

/** A refresh's sentence, and what it saw change per connection (none: an OpenAPI spec re-read). */
interface RefreshNote {
  tone: string;
  text: string;
  diffs?: ConnectionDiff[];
}

function RefreshNoteBox({ integration, note, style }: { integration: string; note: RefreshNote; style?: CSSProperties }) {
  return (
    <div className={`result-box ${note.tone} stack`} role={note.tone === "danger" ? "alert" : "status"} style={{ gap: "0.35rem", ...style }}>
      <span>{note.text}</span>
      {note.diffs && <RefreshDiff integration={integration} diffs={note.diffs} />}
    </div>
  );
}

const toolsSentence = (n: number) => `Refreshed: ${n} tool${n === 1 ? "" : "s"}.`;

/** The note of a refresh that answered diffs; without a diff (an older server), only the count. */
function diffNote(count: number, diffs: (ConnectionDiff & { diffKnown: boolean })[]): RefreshNote {
  const known = diffs.filter((d) => d.diffKnown);
  return { tone: anyWaiting(known) ? "warn" : "ok", text: toolsSentence(count), diffs: known.length ? known : undefined };
}

function healthTone(h: HealthResult | null | undefined): string {
  if (!h) return "";
  return h.status === "healthy" ? "ok" : h.status === "unknown" ? "warn" : "danger";
}

function ConnectionRow({
  integration,
  connection,
  onReconnect,
}: {
  integration: Integration;
  connection: Connection;
  onReconnect: () => void;
}) {
  const invalidate = useInvalidateIntegration();
  const [editing, setEditing] = useState(false);
  const [removing, setRemoving] = useState(false);
  const [note, setNote] = useState<(RefreshNote & { result?: HealthResult | null }) | null>(null);
  const invalidateChanges = useInvalidateToolChanges();
  const oauth = integration.authMethods.find((m) => m.template === connection.template)?.kind === "oauth";
  const expired = connection.expiresAt !== null && connection.expiresAt < Date.now() && !connection.lastHealth;
  const h = connection.lastHealth;

  const check = useMutation({
    mutationFn: () => checkConnectionHealth(connection),
    onSuccess: (r) => {
      setNote({ tone: healthTone(r), text: "", result: r });
      invalidate();
    },
    onError: (e) => setNote({ tone: "danger", text: describeError(e) }),
  });
  const refresh = useMutation({
    mutationFn: () => refreshConnectionDiff(connection),
    onSuccess: (r) => {
      setNote(diffNote(r.tools.length, [{ connection: connection.name, diff: r.diff, diffKnown: r.diffKnown }]));
      invalidate(integration.slug);
      invalidateChanges();
    },
    onError: (e) => setNote({ tone: "danger", text: describeError(e) }),
  });

  const label = connection.identityLabel || h?.identity || connection.name;
  return (
    <li className="card stack" data-testid={`connection-${connection.name}`}>
      <div className="conn-row">
        <div className="who">
          <strong>
            <span
              className={`dot ${healthTone(h)}`}
              role="img"
              aria-label={h ? `Health: ${h.status}` : "Not checked yet"}
              title={h ? `${h.status}, checked ${new Date(h.checkedAt).toLocaleString()}` : "Not checked yet"}
            />
            {label}
            {label !== connection.name && <code className="muted">{connection.name}</code>}
          </strong>
          <span className="row">
            <span className="badge">{ownerLabel(connection.owner)}</span>
            <span className="badge">{integration.authMethods.find((m) => m.template === connection.template)?.label ?? connection.template}</span>
            {h?.status === "expired" || expired ? <span className="badge danger">Expired</span> : null}
            {h?.status === "degraded" && <span className="badge warn">Degraded</span>}
            {h?.status === "healthy" && <span className="badge ok">Healthy</span>}
            {connection.missingOAuthScopes.length > 0 && <span className="badge warn">Reconnect to grant access</span>}
          </span>
          {connection.missingOAuthScopes.length > 0 && (
            <span className="field-hint">Missing scopes: {connection.missingOAuthScopes.join(", ")}</span>
          )}
          {connection.description && <span className="muted">{connection.description}</span>}
        </div>
        <DropdownMenu.Root>
          <DropdownMenu.Trigger asChild>
            <button type="button" aria-label={`Actions for ${connection.name}`}>
              {check.isPending || refresh.isPending ? "Working…" : "Actions ▾"}
            </button>
          </DropdownMenu.Trigger>
          <DropdownMenu.Portal>
            <DropdownMenu.Content className="menu-content" align="end" sideOffset={4}>
              <DropdownMenu.Item className="menu-item" onSelect={() => check.mutate()}>
                Check now
              </DropdownMenu.Item>
              {integration.canRefresh && (
                <DropdownMenu.Item className="menu-item" onSelect={() => refresh.mutate()}>
                  Refresh tools
                </DropdownMenu.Item>
              )}
              <DropdownMenu.Item className="menu-item" onSelect={onReconnect}>
                {oauth ? "Reconnect" : "Replace credential"}
              </DropdownMenu.Item>
              <DropdownMenu.Item className="menu-item" onSelect={() => setEditing(true)}>
                Edit
              </DropdownMenu.Item>
              <DropdownMenu.Separator className="menu-sep" />
              <DropdownMenu.Item className="menu-item" onSelect={() => setRemoving(true)}>
                Remove
              </DropdownMenu.Item>
            </DropdownMenu.Content>
          </DropdownMenu.Portal>
        </DropdownMenu.Root>
      </div>
      {note &&
        (note.result !== undefined ? (
          <HealthVerdict result={note.result} />
        ) : (
          <RefreshNoteBox integration={integration.slug} note={note} />
        ))}
      <EditDialog
        open={editing}
        onOpenChange={setEditing}
        title={`Edit ${connection.name}`}
        fields={[
          { id: "identityLabel", label: "Account label", value: connection.identityLabel ?? "", hint: "Who this account is." },
          { id: "description", label: "Description", value: connection.description ?? "", hint: "Agents see it when they list connections." },
        ]}
        onSave={async (v) => {
          await patchConnection(connection, {
            identityLabel: v.identityLabel?.trim() || null,
            description: v.description?.trim() || null,
          });
          invalidate();
        }}
      />
      <ConfirmDialog
        open={removing}
        onOpenChange={setRemoving}
        title={`Remove ${connection.name}?`}
        confirm="Remove connection"
        onConfirm={async () => {
          await removeConnection(connection);
          invalidate(integration.slug);
        }}
      >
        <p>Its credential is deleted and agents can no longer call tools through it.</p>
      </ConfirmDialog>
    </li>
  );
}

function ConnectionsTab({ integration }: { integration: Integration }) {
  const connections = useConnections(integration.slug);
  const [adding, setAdding] = useState(false);
  const [reconnect, setReconnect] = useState<Connection | undefined>();
  const list = connections.data ?? [];
  return (
    <div className="stack">
      <div className="page-header">
        <h2>Connections</h2>
        <button
          type="button"
          className="primary"
          disabled={integration.authMethods.length === 0}
          onClick={() => {
            setReconnect(undefined);
            setAdding(true);
          }}
        >
          Add connection
        </button>
      </div>
      <ErrorNote error={connections.error} />
      {connections.isSuccess && list.length === 0 && (
        <div className="card empty">
          <p>No connections yet. Agents reach this integration's tools through a connection: add one with its credential.</p>
        </div>
      )}
      <ul className="conn-list">
        {list.map((c) => (
          <ConnectionRow
            key={`${c.owner}/${c.name}`}
            integration={integration}
            connection={c}
            onReconnect={() => {
              setReconnect(c);
              setAdding(true);
            }}
          />
        ))}
      </ul>
      {adding && (
        <ConnectionModal
          integration={integration}
          existing={list}
          open={adding}
          onOpenChange={setAdding}
          reconnect={reconnect}
        />
      )}
    </div>
  );
}

// ---- tools ------------------------------------------------------------------------------

function ToolsTab({
  integration,
  selected,
  onSelect,
}: {
  integration: Integration;
  selected: string | null;
  onSelect: (name: string) => void;
}) {
  const tools = useTools(integration.slug);
  const policies = usePolicies();
  const writer = useGlobalRules(policies.data ?? []);
  const byName = useMemo(() => {
    const m = new Map<string, Tool[]>();
    for (const t of tools.data ?? []) {
      const list = m.get(t.name) ?? [];
      list.push(t);
      m.set(t.name, list);
    }
    return m;
  }, [tools.data]);
  const treeTools = useMemo(
    () =>
      [...byName.values()].map(([t]) => ({
        id: t!.name,
        description: t!.description,
        // One instance stands for the tool's decision (the rules this page writes cover every connection).
        policyId: toolPath(t!),
        requiresApproval: !!t!.requiresApproval,
      })),
    [byName],
  );
  const instances = selected ? byName.get(selected) : undefined;

  if (tools.isError)
    return <ErrorNote error={tools.error} />;
  if (tools.isPending) return <p className="muted">Loading tools…</p>;
  if (treeTools.length === 0)
    return (
      <div className="card empty">
        <p>No tools yet. Tools are listed per connection: add a connection on the Connections tab and they appear here.</p>
      </div>
    );
  return (
    <div className="tools-pane">
      <ToolTree
        tools={treeTools}
        decide={(t) => (policies.data ? effectiveDecision(policies.data, t.policyId, t.requiresApproval) : undefined)}
        rules={
          policies.data
            ? { writer, patternOf: (path, folder) => agnosticPattern(integration.slug, path, folder) }
            : undefined
        }
        selected={selected}
        onSelect={onSelect}
      />
      {instances ? (
        <ToolDetail integration={integration.slug} instances={instances} policies={policies.data} />
      ) : (
        <div className="card muted">Select a tool to see its schema, its policy, and to run it.</div>
      )}
      {policies.isError && (
        <p className="field-error" role="alert">
          Policies could not be read: {describeError(policies.error)}
        </p>
      )}
    </div>
  );
}

// ---- page -------------------------------------------------------------------------------

function refreshIntegration(integration: Integration, connections: Connection[]): Promise<RefreshNote> {
  if (integration.kind === "openapi") {
    return api<{ toolCount: number; addedTools?: string[]; removedTools?: string[] }>(
      `/openapi/integrations/${encodeURIComponent(integration.slug)}/spec`,
      { method: "POST" },
    ).then((r) => ({
      tone: "ok",
      text: `Spec re-read: ${r.toolCount} tools (${r.addedTools?.length ?? 0} added, ${r.removedTools?.length ?? 0} removed).`,
    }));
  }
  // Other kinds list tools per connection: refresh each and say what changed; report every
  // failure, none is undone because a refresh only re-reads the upstream's tool list.
  return (async () => {
    if (connections.length === 0) return { tone: "ok", text: "Nothing to refresh: tools are read through a connection." };
    const failures: string[] = [];
    const diffs: (ConnectionDiff & { diffKnown: boolean })[] = [];
    let count = 0;
    for (const c of connections) {
      try {
        const r = await refreshConnectionDiff(c);
        count = Math.max(count, r.tools.length);
        diffs.push({ connection: c.name, diff: r.diff, diffKnown: r.diffKnown });
      } catch (e) {
        failures.push(`${c.name}: ${describeError(e)}`);
      }
    }
    if (failures.length) throw new Error(`Some connections could not be refreshed. ${failures.join(" · ")}`);
    return diffNote(count, diffs);
  })();
}

const BACK = { href: "/", label: "Integrations" };

export default function IntegrationPage() {
  const { slug = "" } = useParams<{ slug: string }>();
  const search = useSearch();
  const [location, navigate] = useLocation();
  const params = new URLSearchParams(search);
  const tab = params.get("tab") === "tools" ? "tools" : "connections";
  const selectedTool = params.get("tool");
  const integration = useIntegration(slug);
  const connections = useConnections(slug);
  const tools = useTools(slug);
  const invalidate = useInvalidateIntegration();
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [refreshNote, setRefreshNote] = useState<RefreshNote | null>(null);
  const invalidateChanges = useInvalidateToolChanges();

  const setParams = (next: Record<string, string | null>) => {
    const p = new URLSearchParams(search);
    for (const [k, v] of Object.entries(next)) {
      if (v === null) p.delete(k);
      else p.set(k, v);
    }
    const qs = p.toString();
    navigate(`${location}${qs ? `?${qs}` : ""}`, { replace: true });
  };

  const refresh = useMutation({
    mutationFn: () => refreshIntegration(integration.data!, connections.data ?? []),
    onSuccess: setRefreshNote,
    onError: (e) => setRefreshNote({ tone: "danger", text: describeError(e) }),
    onSettled: () => {
      invalidate(slug);
      invalidateChanges();
    },
  });

  if (integration.isError) {
    const missing = integration.error instanceof ApiError && integration.error.status === 404;
    return (
      <DetailUnavailable
        back={BACK}
        title={missing ? "No such integration" : "Integration"}
        message={missing ? `Nothing is registered under “${slug}”.` : describeError(integration.error)}
        error={!missing}
      />
    );
  }
  if (!integration.data) return <PageLoading />;
  const i = integration.data;
  const toolCount = new Set((tools.data ?? []).map((t) => t.name)).size;

  return (
    <section className="page">
      <DetailHeader
        back={BACK}
        title={i.name}
        slug={i.slug}
        badge={KIND_LABEL[i.kind] ?? i.kind}
        meta={
          <>
            <span>{tools.isSuccess ? `${toolCount} tool${toolCount === 1 ? "" : "s"}` : "…"}</span>
            {i.displayUrl && <code className="muted">{i.displayUrl}</code>}
          </>
        }
        lede={i.description && i.description !== i.name && <p className="muted" style={{ margin: 0 }}>{i.description}</p>}
        actions={
          <>
            <button type="button" onClick={() => setEditing(true)} disabled={!i.canRemove}>
              Edit
            </button>
            {i.canRefresh && (
              <button type="button" onClick={() => refresh.mutate()} disabled={refresh.isPending}>
                {refresh.isPending ? "Refreshing…" : "Refresh"}
              </button>
            )}
            {i.canRemove && (
              <button type="button" className="danger" onClick={() => setDeleting(true)}>
                Delete
              </button>
            )}
          </>
        }
      />
      {refreshNote && <RefreshNoteBox integration={slug} note={refreshNote} style={{ marginTop: "0.75rem" }} />}
      <Tabs.Root value={tab} onValueChange={(v) => setParams({ tab: v === "tools" ? "tools" : null })} style={{ marginTop: "1.25rem" }}>
        <Tabs.List aria-label="Integration sections">
          <Tabs.Trigger value="connections">Connections{connections.data ? ` (${connections.data.length})` : ""}</Tabs.Trigger>
          <Tabs.Trigger value="tools">Tools{tools.isSuccess ? ` (${toolCount})` : ""}</Tabs.Trigger>
        </Tabs.List>
        <Tabs.Content value="connections">
          <ConnectionsTab integration={i} />
        </Tabs.Content>
        <Tabs.Content value="tools">
          <ToolsTab integration={i} selected={selectedTool} onSelect={(name) => setParams({ tab: "tools", tool: name })} />
        </Tabs.Content>
      </Tabs.Root>
      <EditDialog
        open={editing}
        onOpenChange={setEditing}
        title={`Edit ${i.name}`}
        fields={[
          { id: "name", label: "Name", value: i.name },
          { id: "description", label: "Description", value: i.description ?? "" },
        ]}
        onSave={async (v) => {
          await patchIntegration(i.slug, { name: v.name?.trim() || i.name, description: v.description?.trim() ?? "" });
          invalidate(i.slug);
        }}
      />
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete ${i.name}?`}
        confirm="Delete integration"
        onConfirm={async () => {
          await removeIntegration(i.slug);
          invalidate(i.slug);
          navigate("/");
        }}
      >
        <p>
          Its {connections.data?.length ?? 0} connection(s) and their credentials are removed, and agents lose its tools. This
          cannot be undone.
        </p>
      </ConfirmDialog>
    </section>
  );
}
