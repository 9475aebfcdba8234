// `/toolkits/:slug`: one toolkit — its MCP endpoint to copy, the connections it grants (managed in
// a dialog), the tree of the tools it exposes with per-tool menus writing the toolkit's own rules
// (the exact displayed id; no `*.*` rewriting as on an integration's page), its rules in order,
// rename and delete. The selected tool lives in the URL.

import * as Dialog from "@radix-ui/react-dialog";
import { useMutation } from "@tanstack/react-query";
import { Fragment, useMemo, useState, type FormEvent, type ReactNode } from "react";
import { useLocation, useParams, useSearch } from "wouter";
import { ApiError, describeError } from "../api/http";
import { useConnections, useIntegrations, type Connection } from "../api/integrations";
import { parsePattern, type RuleWriter } from "../api/policies";
import {
  addToolkitConnection,
  connectionPattern,
  CORE_TOOLS_PATTERN,
  patternCoverage,
  removeToolkit,
  removeToolkitConnection,
  sortRules,
  toolkitMcpUrl,
  toolkitStdioCommand,
  toolkitToolId,
  updateToolkit,
  useInvalidateToolkit,
  useRememberToolkit,
  useToolkitConnections,
  useToolkitPolicies,
  useToolkitRules,
  useToolkits,
  useToolkitTools,
  type Toolkit,
  type ToolkitAction,
  type ToolkitConnection,
  type ToolkitPolicy,
  type ToolkitTool,
} from "../api/toolkits";
import { ownerLabel } from "../api/team";
import { CopyButton } from "../components/connect-agent";
import { ConfirmDialog, DialogActions, Modal } from "../components/dialogs";
import { ErrorNote, TextField } from "../components/fields";
import { DetailHeader, DetailUnavailable, PageLoading } from "../components/page-header";
import { PolicyBadge, PolicyMenu, type Decision } from "../components/policy-menu";
import { ActionSelect, RulesTable } from "../components/rules-table";
import { ToolDetail } from "../components/tool-detail";
import { ToolTree, type TreeTool } from "../components/tool-tree";
import "./integrations.css";
import "./policies.css";
import "./toolkits.css";

const BUILTIN_LABEL = "Built-in tools";
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

// ---- dialogs ------------------------------------------------------------------------------

function RenameDialog({
  toolkit,
  open,
  onOpenChange,
  onSaved,
}: {
  toolkit: Toolkit;
  open: boolean;
  onOpenChange: (o: boolean) => void;
  onSaved: (t: Toolkit) => void;
}) {
  const [name, setName] = useState(toolkit.name);
  const [slug, setSlug] = useState(toolkit.slug);
  const save = useMutation({
    mutationFn: () => {
      const patch: { name?: string; slug?: string } = {};
      if (name.trim() !== toolkit.name) patch.name = name.trim();
      if (slug.trim() !== toolkit.slug) patch.slug = slug.trim();
      return Object.keys(patch).length ? updateToolkit(toolkit.id, patch) : Promise.resolve(toolkit);
    },
    onSuccess: (t) => {
      onOpenChange(false);
      onSaved(t);
    },
  });
  const error = save.error;
  const message = error ? describeError(error) : null;
  const slugError = error instanceof ApiError && /slug/i.test(error.message) ? message : null;
  const formError = message && !slugError ? message : null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!name.trim()) return;
    save.mutate();
  };
  return (
    <Modal
      open={open}
      onOpenChange={(o) => {
        if (o) {
          setName(toolkit.name);
          setSlug(toolkit.slug);
          save.reset();
        }
        onOpenChange(o);
      }}
      title={`Rename ${toolkit.name}`}
    >
      <form className="stack" onSubmit={submit} noValidate>
        <ErrorNote error={formError} />
        <TextField
          id="rename-name"
          label="Name"
          value={name}
          onChange={setName}
          error={name.trim() ? null : "A toolkit needs a name."}
        />
        <TextField
          code
          id="rename-slug"
          label="Slug"
          value={slug}
          onChange={(v) => {
            setSlug(v);
            save.reset();
          }}
          error={slugError}
          hint="Changing it changes the MCP URL: agents configured with the old one lose access."
        />
        <DialogActions label="Save" busyLabel="Saving…" busy={save.isPending} disabled={!name.trim()} />
      </form>
    </Modal>
  );
}

// ---- connections --------------------------------------------------------------------------

interface GrantRow {
  key: string;
  /** The id prefix of its tools (`[integration, owner, connection]` or `["executor","coreTools"]`). */
  prefix: string[];
  pattern: string;
  title: string;
  subtitle: string;
  search: string;
}

function useGrantRows(toolkit: Toolkit) {
  const connections = useConnections();
  const integrations = useIntegrations();
  const names = useMemo(() => new Map((integrations.data ?? []).map((i) => [i.slug, i.name])), [integrations.data]);
  return useMemo(() => {
    const all = connections.data ?? [];
    // An org toolkit never exposes a personal (`user`) tool, so personal connections are not offered.
    const shown = toolkit.owner === "org" ? all.filter((c) => c.owner === "org") : all;
    const hidden = all.length - shown.length;
    const rows: GrantRow[] = [
      {
        key: "builtin",
        prefix: ["executor", "coreTools"],
        pattern: CORE_TOOLS_PATTERN,
        title: BUILTIN_LABEL,
        subtitle: "Executor's own tools: connections, policies, providers…",
        search: `builtin built-in executor core tools`,
      },
      ...[...shown]
        .sort((a, b) =>
          a.integration.localeCompare(b.integration) || a.owner.localeCompare(b.owner) || a.name.localeCompare(b.name),
        )
        .map((c: Connection) => {
          const integration = names.get(c.integration) ?? c.integration;
          const who = c.identityLabel && c.identityLabel !== c.name ? ` (${c.identityLabel})` : "";
          return {
            key: `${c.integration}/${c.owner}/${c.name}`,
            prefix: [c.integration, c.owner, c.name],
            pattern: connectionPattern(c),
            title: `${integration} · ${c.name}${who}`,
            subtitle: `${ownerLabel(c.owner)} connection`,
            search: `${integration} ${c.integration} ${c.name} ${c.identityLabel ?? ""}`.toLowerCase(),
          };
        }),
    ];
    return { rows, hidden, isPending: connections.isPending, error: connections.error ?? integrations.error };
  }, [connections.data, connections.isPending, connections.error, integrations.error, names, toolkit.owner]);
}

function ManageConnectionsDialog({
  toolkit,
  granted,
  open,
  onOpenChange,
}: {
  toolkit: Toolkit;
  granted: ToolkitConnection[];
  open: boolean;
  onOpenChange: (o: boolean) => void;
}) {
  const invalidate = useInvalidateToolkit();
  const { rows, hidden, isPending, error } = useGrantRows(toolkit);
  const [query, setQuery] = useState("");
  const [failure, setFailure] = useState<string | null>(null);
  const change = useMutation({
    mutationFn: (op: { add: string } | { remove: ToolkitConnection }): Promise<unknown> =>
      "add" in op ? addToolkitConnection(toolkit.id, op.add) : removeToolkitConnection(toolkit.id, op.remove.id),
    onSuccess: () => setFailure(null),
    onError: (e) => setFailure(describeError(e)),
    onSettled: () => invalidate(toolkit.id),
  });
  const q = query.trim().toLowerCase();
  const shown = q ? rows.filter((r) => q.split(/\s+/).every((t) => r.search.includes(t) || r.pattern.includes(t))) : rows;
  const known = new Set(rows.map((r) => r.pattern));
  const others = granted.filter((g) => !known.has(g.pattern));
  const busy = change.isPending;

  return (
    <Modal
      open={open}
      onOpenChange={(o) => {
        if (o) {
          setQuery("");
          setFailure(null);
        }
        onOpenChange(o);
      }}
      title="Manage connections"
      describedBy="manage-desc"
      className="dialog-content stack"
    >
      <p id="manage-desc" className="muted" style={{ margin: 0 }}>
        The toolkit exposes the tools of the connections added here, and nothing else. Its rules then decide which of
        them run, ask first, or are blocked.
      </p>
      <div className="field manage-search">
        <label htmlFor="manage-search">Search connections</label>
        <input
          id="manage-search"
          type="search"
          value={query}
          placeholder="Integration or connection"
          onChange={(e) => setQuery(e.target.value)}
        />
      </div>
      <ErrorNote error={failure} />
      <ErrorNote error={error} />
      {isPending ? (
        <p className="muted" role="status">
          Loading connections…
        </p>
      ) : (
        <ul className="manage-list" aria-label="Connections">
          {shown.length === 0 && <li className="muted">No connection matches “{query}”.</li>}
          {shown.map((r) => {
            const exact = granted.find((g) => g.pattern === r.pattern);
            const cover = exact ? undefined : granted.find((g) => patternCoverage(g.pattern, r.prefix) === "all");
            return (
              <li key={r.key} data-testid={`grant-${r.pattern}`}>
                <span className="who">
                  <strong>{r.title}</strong>
                  <span className="field-hint">
                    {r.subtitle} · <code>{r.pattern}</code>
                  </span>
                  {cover && (
                    <span className="field-hint">
                      Included by <code>{cover.pattern}</code>
                    </span>
                  )}
                </span>
                {exact ? (
                  <button type="button" className="danger" disabled={busy} onClick={() => change.mutate({ remove: exact })}>
                    Remove<span className="visually-hidden"> {r.title}</span>
                  </button>
                ) : cover ? (
                  <span className="badge ok">Added</span>
                ) : (
                  <button type="button" disabled={busy} onClick={() => change.mutate({ add: r.pattern })}>
                    Add<span className="visually-hidden"> {r.title}</span>
                  </button>
                )}
              </li>
            );
          })}
        </ul>
      )}
      {hidden > 0 && (
        <p className="field-hint">
          {plural(hidden, "personal connection")} not shown: a shared (org) toolkit never exposes personal tools.
        </p>
      )}
      {others.length > 0 && (
        <>
          <h3 className="manage-section-title">Other patterns</h3>
          <ul className="manage-list" aria-label="Other patterns">
            {others.map((g) => {
              const matches = rows.some((r) => patternCoverage(g.pattern, r.prefix) !== "none");
              return (
                <li key={g.id} data-testid={`grant-${g.pattern}`}>
                  <span className="who">
                    <strong>Configured pattern</strong>
                    <code>{g.pattern}</code>
                    {!matches && <span className="field-hint">Matches no current connection.</span>}
                  </span>
                  <button type="button" className="danger" disabled={busy} onClick={() => change.mutate({ remove: g })}>
                    Remove<span className="visually-hidden"> {g.pattern}</span>
                  </button>
                </li>
              );
            })}
          </ul>
        </>
      )}
      <div className="actions">
        <Dialog.Close asChild>
          <button type="button" className="primary">
            Done
          </button>
        </Dialog.Close>
      </div>
    </Modal>
  );
}

// ---- the tool tree ------------------------------------------------------------------------

/** A tool's decision in the toolkit, as the dot and the badge show it. */
function decisionOf(t: ToolkitTool): Decision {
  return { action: t.action, rule: t.decidedBy.kind === "policy" ? { pattern: t.decidedBy.pattern ?? "" } : undefined };
}

type ToolkitTreeTool = TreeTool & { decision: Decision };

/** A tree leaf: the exact id; below the integration, one folder per connection (`<owner>.<connection>`). */
function treeToolOf(t: ToolkitTool): ToolkitTreeTool {
  const id = toolkitToolId(t);
  // A static tool's id, `executor.coreTools.<group>.<tool>`, already reads integration, "connection", the rest.
  const segments = t.static ? undefined : [t.integration, `${t.owner}.${t.connection}`, ...t.name.split(".")];
  return { id, segments, description: t.description, decision: decisionOf(t) };
}

/** Toolkit rules are written for the exact displayed id: a folder's menu sets `<path>.*`. */
const exactPattern = (path: string, folder: boolean) => (folder ? `${path}.*` : path);

function ToolkitTree({
  tools,
  writer,
  integrationNames,
  selected,
  onSelect,
}: {
  tools: ToolkitTreeTool[];
  writer: RuleWriter;
  integrationNames: Map<string, string>;
  selected: string | null;
  onSelect: (id: string) => void;
}) {
  return (
    <ToolTree
      tools={tools}
      decide={(t) => t.decision}
      rules={{ writer, patternOf: exactPattern }}
      selected={selected}
      onSelect={onSelect}
      label="Tools in this toolkit"
      testId="toolkit-tool-tree"
      filterId="toolkit-tool-filter"
      filterLabel={`Filter ${plural(tools.length, "tool")}`}
      highlightMatches={false}
      folderLabel={(segment, depth, path) => {
        if (depth === 0) return segment === "executor" ? BUILTIN_LABEL : (integrationNames.get(segment) ?? segment);
        if (depth === 1 && path.split(".").length === 3) {
          // `<owner>.<connection>`: name the connection, mark a personal one.
          const [owner, connection] = segment.split(".");
          return owner === "user" ? `${connection} (personal)` : connection!;
        }
        return segment;
      }}
      folderName={(f) => `${f.label} ${f.count} (${f.path}.*)`}
    />
  );
}

function ToolDecision({ tool, writer }: { tool: ToolkitTool; writer: RuleWriter }) {
  const [error, setError] = useState<string | null>(null);
  const decision = decisionOf(tool);
  return (
    <div className="card stack" data-testid="toolkit-decision">
      <div className="toolkit-decision">
        <span className="row">
          <span>In this toolkit:</span>
          <PolicyBadge decision={decision} />
          {decision.rule && (
            <span className="field-hint">
              by rule <code>{decision.rule.pattern}</code>
            </span>
          )}
        </span>
        <PolicyMenu
          pattern={toolkitToolId(tool)}
          rules={writer}
          triggerLabel="Change the toolkit policy"
          trigger={<button type="button">Toolkit policy ▾</button>}
          onError={setError}
        />
      </div>
      {error && (
        <p className="field-error" role="alert">
          {error}
        </p>
      )}
    </div>
  );
}

// ---- rules --------------------------------------------------------------------------------

function AddRuleForm({ writer }: { writer: RuleWriter }) {
  const [pattern, setPattern] = useState("");
  const [action, setAction] = useState<ToolkitAction>("require_approval");
  const check = pattern ? parsePattern(pattern) : null;
  const create = useMutation({ mutationFn: () => writer.create(pattern, action), onSuccess: () => setPattern("") });
  const localError = check && !check.ok ? `Not a valid pattern: ${check.error}.` : null;
  const error = localError ?? (create.error ? describeError(create.error) : null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!pattern || !check?.ok) return;
    create.mutate();
  };
  return (
    <form className="toolkit-rule-add" onSubmit={submit} noValidate aria-label="Add a rule">
      <TextField
        code
        id="tk-rule-pattern"
        label="Pattern"
        value={pattern}
        placeholder="github.org.main.issues.*"
        onChange={(v) => {
          setPattern(v);
          create.reset();
        }}
        error={error}
        hint={
          <>
            <code>integration.owner.connection.tool</code>; a new rule goes to the top.
          </>
        }
      />
      <div className="field">
        <label htmlFor="tk-rule-action">Action</label>
        <ActionSelect id="tk-rule-action" value={action} onChange={setAction} />
      </div>
      <div className="submit">
        <button type="submit" className="primary" disabled={create.isPending || !pattern || !!localError}>
          {create.isPending ? "Adding…" : "Add rule"}
        </button>
      </div>
    </form>
  );
}

function RulesSection({ rules, writer, error }: { rules: ToolkitPolicy[]; writer: RuleWriter<ToolkitPolicy>; error: unknown }) {
  const sorted = sortRules(rules);
  return (
    <section className="card stack toolkit-rules" aria-labelledby="toolkit-rules-title">
      <h2 id="toolkit-rules-title">Rules</h2>
      <p className="muted" style={{ margin: 0 }}>
        Only these rules apply through this toolkit (the global policies do not). For each tool the first matching rule
        decides; with none, the tool's default applies. A blocked tool disappears from the toolkit.
      </p>
      <ErrorNote error={error} />
      {sorted.length === 0 ? (
        <p className="muted">No rules: every added tool follows its default.</p>
      ) : (
        <RulesTable rules={sorted} writer={writer} removeLabel="Delete" removeNoun="rule" />
      )}
      <AddRuleForm writer={writer} />
    </section>
  );
}

// ---- page ---------------------------------------------------------------------------------

function Endpoint({ slug }: { slug: string }) {
  const url = toolkitMcpUrl(slug);
  const stdio = toolkitStdioCommand(slug);
  return (
    <section className="card stack" aria-labelledby="toolkit-mcp-title">
      <h2 id="toolkit-mcp-title">MCP</h2>
      <div className="toolkit-endpoint">
        {[
          { key: "url", label: "URL", testId: "toolkit-mcp-url", text: url, copy: "Copy URL" },
          { key: "stdio", label: "stdio", testId: "toolkit-stdio", text: stdio, copy: "Copy command" },
        ].map((e) => (
          <Fragment key={e.key}>
            <span className="endpoint-label" id={`toolkit-${e.key}-label`}>
              {e.label}
            </span>
            <code data-testid={e.testId} aria-labelledby={`toolkit-${e.key}-label`}>
              {e.text}
            </code>
            <CopyButton text={e.text} label={e.copy} />
          </Fragment>
        ))}
      </div>
      <p className="field-hint" style={{ margin: 0 }}>
        Same bearer token as <code>/mcp</code>. An agent connected here sees only this toolkit's tools.
      </p>
    </section>
  );
}

const BACK = { href: "/toolkits", label: "Toolkits" };

export default function ToolkitPage() {
  const { slug = "" } = useParams<{ slug: string }>();
  const search = useSearch();
  const [location, navigate] = useLocation();
  const selected = new URLSearchParams(search).get("tool");
  const toolkits = useToolkits();
  const toolkit = toolkits.data?.find((t) => t.slug === slug);
  const id = toolkit?.id;
  const connections = useToolkitConnections(id);
  const policies = useToolkitPolicies(id);
  const tools = useToolkitTools(id);
  const integrations = useIntegrations();
  const invalidate = useInvalidateToolkit();
  const remember = useRememberToolkit();
  const [managing, setManaging] = useState(false);
  const [renaming, setRenaming] = useState(false);
  const [deleting, setDeleting] = useState(false);

  const integrationNames = useMemo(() => new Map((integrations.data ?? []).map((i) => [i.slug, i.name])), [integrations.data]);
  const treeTools = useMemo(() => (tools.data ?? []).map(treeToolOf), [tools.data]);
  const selectedTool = selected ? tools.data?.find((t) => toolkitToolId(t) === selected) : undefined;
  const rules = policies.data ?? [];
  const writer = useToolkitRules(id ?? "", rules);
  const granted = connections.data ?? [];

  const select = (toolId: string | null) => {
    const p = new URLSearchParams(search);
    if (toolId === null) p.delete("tool");
    else p.set("tool", toolId);
    const qs = p.toString();
    navigate(`${location}${qs ? `?${qs}` : ""}`, { replace: true });
  };

  if (toolkits.isError) return <DetailUnavailable back={BACK} title="Toolkit" message={describeError(toolkits.error)} error />;
  if (toolkits.isPending) return <PageLoading />;
  if (!toolkit)
    return <DetailUnavailable back={BACK} title="No such toolkit" message={`No toolkit has the slug “${slug}”.`} error={false} />;

  /** What one configured pattern grants, in words (a connection's label), else the raw pattern. */
  const grantName = (pattern: string) => {
    if (pattern === CORE_TOOLS_PATTERN) return BUILTIN_LABEL;
    const parts = pattern.split(".");
    if (parts.length === 4 && parts[3] === "*" && !parts.slice(0, 3).includes("*")) {
      const [integration, owner, connection] = parts;
      return `${integrationNames.get(integration!) ?? integration} · ${connection}${owner === "user" ? " (personal)" : ""}`;
    }
    return pattern;
  };

  let toolsBody: ReactNode;
  if (connections.isSuccess && granted.length === 0) {
    toolsBody = (
      <div className="card empty">
        <h3 style={{ marginTop: 0 }}>No connections added</h3>
        <p className="muted">
          A toolkit exposes nothing until you add connections: an agent using its URL sees no tools.
        </p>
        <div className="row" style={{ justifyContent: "center" }}>
          <button type="button" className="primary" onClick={() => setManaging(true)}>
            Add connections
          </button>
        </div>
      </div>
    );
  } else if (tools.isError) {
    toolsBody = <ErrorNote error={tools.error} />;
  } else if (tools.isPending) {
    toolsBody = (
      <p className="muted" role="status">
        Loading tools…
      </p>
    );
  } else if (treeTools.length === 0) {
    toolsBody = (
      <div className="card empty">
        <p className="muted">
          No tool is exposed: the added connections have no tools, or the toolkit's rules block all of them.
        </p>
      </div>
    );
  } else {
    toolsBody = (
      <div className="tools-pane">
        <ToolkitTree tools={treeTools} writer={writer} integrationNames={integrationNames} selected={selected} onSelect={select} />
        {selectedTool ? (
          <div className="stack">
            <ToolDecision tool={selectedTool} writer={writer} />
            <ToolDetail integration={selectedTool.integration} instances={[selectedTool]} policies={undefined} />
          </div>
        ) : (
          <div className="card muted">Select a tool to see its schema and set its policy in this toolkit.</div>
        )}
      </div>
    );
  }

  return (
    <section className="page toolkit-page">
      <DetailHeader
        back={BACK}
        title={toolkit.name}
        slug={toolkit.slug}
        badge={ownerLabel(toolkit.owner)}
        meta={
          <>
            <span>{plural(connections.data ? granted.length : toolkit.connectionCount, "connection")}</span>
            {tools.isSuccess && <span>{plural(treeTools.length, "tool")}</span>}
          </>
        }
        actions={
          <>
            <button type="button" onClick={() => setRenaming(true)}>
              Rename
            </button>
            <button type="button" className="danger" onClick={() => setDeleting(true)}>
              Delete
            </button>
          </>
        }
      />

      <Endpoint slug={toolkit.slug} />

      <section className="card stack" aria-labelledby="toolkit-conns-title">
        <div className="page-header">
          <h2 id="toolkit-conns-title">Connections</h2>
          <button type="button" className="primary" onClick={() => setManaging(true)}>
            Manage connections
          </button>
        </div>
        <ErrorNote error={connections.error} />
        {connections.isSuccess &&
          (granted.length === 0 ? (
            <p className="muted" style={{ margin: 0 }}>
              No connections added.
            </p>
          ) : (
            <ul className="toolkit-conns" aria-label="Added connections" data-testid="toolkit-connections">
              {granted.map((g) => {
                const label = grantName(g.pattern);
                return (
                  <li key={g.id} title={g.pattern}>
                    {label === g.pattern ? <code>{g.pattern}</code> : label}
                  </li>
                );
              })}
            </ul>
          ))}
      </section>

      <section className="stack" aria-labelledby="toolkit-tools-title">
        <h2 id="toolkit-tools-title">Tools</h2>
        {toolsBody}
      </section>

      <RulesSection
        rules={rules}
        writer={writer}
        error={policies.error}
      />

      <ManageConnectionsDialog toolkit={toolkit} granted={granted} open={managing} onOpenChange={setManaging} />
      <RenameDialog
        toolkit={toolkit}
        open={renaming}
        onOpenChange={setRenaming}
        onSaved={(t) => {
          remember(t);
          if (t.slug !== toolkit.slug) navigate(`/toolkits/${t.slug}`, { replace: true });
        }}
      />
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete ${toolkit.name}?`}
        confirm="Delete toolkit"
        onConfirm={async () => {
          await removeToolkit(toolkit.id);
          invalidate();
          navigate("/toolkits");
        }}
      >
        <p>
          Agents using its MCP URL lose access, and its {plural(rules.length, "rule")} are deleted. Its connections and
          integrations are not deleted: they stay available on <code>/mcp</code> and to other toolkits.
        </p>
      </ConfirmDialog>
    </section>
  );
}
