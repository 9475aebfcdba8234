// `/toolkits/:slug`: one toolkit — its MCP endpoint to copy, the connections it grants (managed in
// a dialog), the tree of the tools it exposes with per-tool menus writing the toolkit's own rules
// (the exact displayed id; no `*.*` rewriting as on an integration's page), its rules in order,
// rename and delete. The selected tool lives in the URL.

import * as Dialog from "@radix-ui/react-dialog";
import * as DropdownMenu from "@radix-ui/react-dropdown-menu";
import { useMutation } from "@tanstack/react-query";
import { useVirtualizer } from "@tanstack/react-virtual";
import { useEffect, useMemo, useRef, useState, type FormEvent, type KeyboardEvent, type ReactNode } from "react";
import { Link, useLocation, useParams, useSearch } from "wouter";
import { ApiError, describeError } from "../api/http";
import { useConnections, useIntegrations, type Connection } from "../api/integrations";
import { ACTION_LABELS, parsePattern } from "../api/policies";
import {
  addToolkitConnection,
  connectionPattern,
  CORE_TOOLS_PATTERN,
  createToolkitPolicy,
  patternCoverage,
  removeToolkit,
  removeToolkitConnection,
  removeToolkitPolicy,
  rulePositionForMove,
  sortRules,
  toolkitMcpUrl,
  toolkitStdioCommand,
  toolkitToolId,
  updateToolkit,
  updateToolkitPolicy,
  useInvalidateToolkit,
  useRememberToolkit,
  useToolkitConnections,
  useToolkitPolicies,
  useToolkits,
  useToolkitTools,
  type Toolkit,
  type ToolkitAction,
  type ToolkitConnection,
  type ToolkitPolicy,
  type ToolkitTool,
} from "../api/toolkits";
import { CopyButton } from "../components/connect-agent";
import { ToolDetail } from "../components/tool-detail";
import "./integrations.css";
import "./policies.css";
import "./toolkits.css";

const ACTIONS: ToolkitAction[] = ["approve", "require_approval", "block"];
const BUILTIN_LABEL = "Built-in tools";
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
const tone = (a: ToolkitAction) => (a === "approve" ? "ok" : a === "require_approval" ? "warn" : "danger");

// ---- dialogs ------------------------------------------------------------------------------

function ConfirmDialog(props: {
  open: boolean;
  onOpenChange: (o: boolean) => void;
  title: string;
  children: ReactNode;
  confirm: string;
  onConfirm: () => Promise<unknown>;
}) {
  const run = useMutation({ mutationFn: props.onConfirm, onSuccess: () => props.onOpenChange(false) });
  return (
    <Dialog.Root
      open={props.open}
      onOpenChange={(o) => {
        if (!o) run.reset();
        props.onOpenChange(o);
      }}
    >
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content className="dialog-content stack" aria-describedby={undefined}>
          <Dialog.Title>{props.title}</Dialog.Title>
          {props.children}
          {run.isError && (
            <p className="form-top-error" role="alert">
              {describeError(run.error)}
            </p>
          )}
          <div className="actions">
            <Dialog.Close asChild>
              <button type="button">Cancel</button>
            </Dialog.Close>
            <button type="button" className="primary danger-fill" disabled={run.isPending} onClick={() => run.mutate()}>
              {run.isPending ? "Working…" : props.confirm}
            </button>
          </div>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

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
    <Dialog.Root
      open={open}
      onOpenChange={(o) => {
        if (o) {
          setName(toolkit.name);
          setSlug(toolkit.slug);
          save.reset();
        }
        onOpenChange(o);
      }}
    >
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content className="dialog-content" aria-describedby={undefined}>
          <Dialog.Title>Rename {toolkit.name}</Dialog.Title>
          <form className="stack" onSubmit={submit} noValidate>
            {formError && (
              <p className="form-top-error" role="alert">
                {formError}
              </p>
            )}
            <div className="field">
              <label htmlFor="rename-name">Name</label>
              <input
                id="rename-name"
                value={name}
                aria-invalid={!name.trim() ? true : undefined}
                onChange={(e) => setName(e.target.value)}
              />
              {!name.trim() && <span className="field-error">A toolkit needs a name.</span>}
            </div>
            <div className="field">
              <label htmlFor="rename-slug">Slug</label>
              <input
                id="rename-slug"
                className="mono"
                value={slug}
                spellCheck={false}
                autoComplete="off"
                aria-invalid={slugError ? true : undefined}
                aria-describedby="rename-slug-hint"
                onChange={(e) => {
                  setSlug(e.target.value);
                  save.reset();
                }}
              />
              <span className="field-hint" id="rename-slug-hint">
                {slugError ? (
                  <span className="field-error">{slugError}</span>
                ) : (
                  "Changing it changes the MCP URL: agents configured with the old one lose access."
                )}
              </span>
            </div>
            <div className="actions">
              <Dialog.Close asChild>
                <button type="button">Cancel</button>
              </Dialog.Close>
              <button type="submit" className="primary" disabled={save.isPending || !name.trim()}>
                {save.isPending ? "Saving…" : "Save"}
              </button>
            </div>
          </form>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
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
            subtitle: c.owner === "org" ? "Local connection" : "Personal connection",
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
    <Dialog.Root
      open={open}
      onOpenChange={(o) => {
        if (o) {
          setQuery("");
          setFailure(null);
        }
        onOpenChange(o);
      }}
    >
      <Dialog.Portal>
        <Dialog.Overlay className="dialog-overlay" />
        <Dialog.Content className="dialog-content stack" aria-describedby="manage-desc">
          <Dialog.Title>Manage connections</Dialog.Title>
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
          {failure && (
            <p className="form-top-error" role="alert">
              {failure}
            </p>
          )}
          {error && (
            <p className="form-top-error" role="alert">
              {describeError(error)}
            </p>
          )}
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
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

// ---- policy menu and decision dot --------------------------------------------------------

function ToolDot({ tool }: { tool: ToolkitTool }) {
  const byRule = tool.decidedBy.kind === "policy";
  const text = `${ACTION_LABELS[tool.action]}${tool.decidedBy.kind === "policy" ? ` (rule ${tool.decidedBy.pattern})` : " (default)"}`;
  const cls = byRule ? tool.action : tool.action === "require_approval" ? "default-approval" : "none";
  return <span className={`pdot ${cls}`} title={text} role="img" aria-label={text} />;
}

function RuleDot({ rule }: { rule?: ToolkitPolicy }) {
  if (!rule) return <span className="pdot none" aria-hidden />;
  const text = `${ACTION_LABELS[rule.action]} (rule ${rule.pattern})`;
  return <span className={`pdot ${rule.action}`} title={text} role="img" aria-label={text} />;
}

/** Sets (or clears) the toolkit rule whose pattern is exactly `pattern`. */
function ToolkitPolicyMenu({
  toolkitId,
  pattern,
  rules,
  triggerLabel,
  trigger,
  onError,
}: {
  toolkitId: string;
  pattern: string;
  rules: ToolkitPolicy[];
  triggerLabel: string;
  trigger?: ReactNode;
  onError: (message: string | null) => void;
}) {
  const invalidate = useInvalidateToolkit();
  const exact = rules.find((r) => r.pattern === pattern);
  const change = useMutation({
    mutationFn: async (action: ToolkitAction | "clear") => {
      if (action === "clear") return exact ? removeToolkitPolicy(toolkitId, exact.id) : undefined;
      if (exact) return updateToolkitPolicy(toolkitId, exact.id, { action });
      // No position: the server puts a new toolkit rule at the top, so the latest choice wins.
      return createToolkitPolicy(toolkitId, { pattern, action });
    },
    onSuccess: () => onError(null),
    onError: (e) => onError(describeError(e)),
    onSettled: () => invalidate(toolkitId),
  });
  return (
    <DropdownMenu.Root>
      <DropdownMenu.Trigger asChild>
        {trigger ?? (
          <button type="button" className="menu-trigger" aria-label={triggerLabel} onClick={(e) => e.stopPropagation()}>
            ⋯
          </button>
        )}
      </DropdownMenu.Trigger>
      <DropdownMenu.Portal>
        <DropdownMenu.Content className="menu-content" align="end" sideOffset={4} onClick={(e) => e.stopPropagation()}>
          <div className="menu-label mono">{pattern}</div>
          {ACTIONS.map((a) => (
            <DropdownMenu.Item key={a} className="menu-item" onSelect={() => change.mutate(a)}>
              {exact?.action === a ? "✓ " : ""}
              {ACTION_LABELS[a]}
            </DropdownMenu.Item>
          ))}
          {exact && (
            <>
              <DropdownMenu.Separator className="menu-sep" />
              <DropdownMenu.Item className="menu-item" onSelect={() => change.mutate("clear")}>
                Clear rule
              </DropdownMenu.Item>
            </>
          )}
        </DropdownMenu.Content>
      </DropdownMenu.Portal>
    </DropdownMenu.Root>
  );
}

// ---- the tool tree ------------------------------------------------------------------------

interface TreeEntry {
  id: string;
  /** Display segments: integration, connection, then the tool name's dotted parts. */
  segments: string[];
  tool: ToolkitTool;
}

type Row =
  | { kind: "folder"; path: string; pattern: string; label: string; depth: number; count: number }
  | { kind: "leaf"; path: string; label: string; depth: number; entry: TreeEntry };

interface Folder {
  /** The id prefix this folder stands for (its pattern is `<prefix>.*`). */
  prefix: string;
  folders: Map<string, Folder>;
  leaves: { label: string; entry: TreeEntry }[];
  count: number;
}

const ROW_HEIGHT = 30;

function entryOf(t: ToolkitTool): TreeEntry {
  const id = toolkitToolId(t);
  if (t.static) {
    // `executor.coreTools.<group>.<tool>`: the built-in integration, its one "connection", the rest.
    const [integration, connection, ...rest] = id.split(".");
    return { id, tool: t, segments: [integration!, connection!, ...rest] };
  }
  return { id, tool: t, segments: [t.integration, `${t.owner}.${t.connection}`, ...t.name.split(".")] };
}

function buildTree(entries: TreeEntry[]): Folder {
  const root: Folder = { prefix: "", folders: new Map(), leaves: [], count: 0 };
  for (const e of entries) {
    let node = root;
    node.count++;
    for (const seg of e.segments.slice(0, -1)) {
      let next = node.folders.get(seg);
      if (!next) {
        next = { prefix: node.prefix ? `${node.prefix}.${seg}` : seg, folders: new Map(), leaves: [], count: 0 };
        node.folders.set(seg, next);
      }
      next.count++;
      node = next;
    }
    node.leaves.push({ label: e.segments[e.segments.length - 1]!, entry: e });
  }
  return root;
}

function flattenTree(root: Folder, collapsed: Set<string>, forceOpen: boolean, labelOf: (f: Folder, seg: string, depth: number) => string): Row[] {
  const rows: Row[] = [];
  const walk = (node: Folder, depth: number) => {
    for (const [seg, child] of [...node.folders.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      rows.push({ kind: "folder", path: child.prefix, pattern: `${child.prefix}.*`, label: labelOf(child, seg, depth), depth, count: child.count });
      if (forceOpen || !collapsed.has(child.prefix)) walk(child, depth + 1);
    }
    for (const leaf of [...node.leaves].sort((a, b) => a.label.localeCompare(b.label)))
      rows.push({ kind: "leaf", path: leaf.entry.id, label: leaf.label, depth, entry: leaf.entry });
  };
  walk(root, 0);
  return rows;
}

function ToolkitTree({
  toolkitId,
  entries,
  rules,
  integrationNames,
  selected,
  onSelect,
}: {
  toolkitId: string;
  entries: TreeEntry[];
  rules: ToolkitPolicy[];
  integrationNames: Map<string, string>;
  selected: string | null;
  onSelect: (id: string) => void;
}) {
  const [filter, setFilter] = useState("");
  const [collapsed, setCollapsed] = useState<Set<string>>(() => new Set());
  const [menuError, setMenuError] = useState<string | null>(null);
  const scrollRef = useRef<HTMLDivElement>(null);
  const tokens = useMemo(() => filter.toLowerCase().split(/\s+/).filter(Boolean), [filter]);
  const matching = useMemo(
    () =>
      tokens.length === 0
        ? entries
        : entries.filter((e) => {
            const hay = `${e.id} ${e.tool.description ?? ""}`.toLowerCase();
            return tokens.every((t) => hay.includes(t));
          }),
    [entries, tokens],
  );
  const rows = useMemo(
    () =>
      flattenTree(buildTree(matching), collapsed, tokens.length > 0, (folder, seg, depth) => {
        if (depth === 0) return seg === "executor" ? BUILTIN_LABEL : (integrationNames.get(seg) ?? seg);
        if (depth === 1 && folder.prefix.split(".").length === 3) {
          // `<owner>.<connection>`: name the connection, mark a personal one.
          const [owner, connection] = seg.split(".");
          return owner === "user" ? `${connection} (personal)` : connection!;
        }
        return seg;
      }),
    [matching, collapsed, tokens.length, integrationNames],
  );
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });
  useEffect(() => {
    if (scrollRef.current) scrollRef.current.scrollTop = 0;
  }, [tokens]);

  const toggle = (path: string) =>
    setCollapsed((prev) => {
      const next = new Set(prev);
      if (next.has(path)) next.delete(path);
      else next.add(path);
      return next;
    });
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
    e.preventDefault();
    const leaves = rows.map((r, i) => [r, i] as const).filter(([r]) => r.kind === "leaf");
    if (leaves.length === 0) return;
    const at = leaves.findIndex(([r]) => r.path === selected);
    const next = e.key === "ArrowDown" ? Math.min(leaves.length - 1, at + 1) : Math.max(0, at - 1);
    const [row, index] = leaves[at < 0 ? 0 : next]!;
    onSelect(row.path);
    virtualizer.scrollToIndex(index, { align: "auto" });
  };
  const ruleFor = (pattern: string) => rules.find((r) => r.pattern === pattern);

  return (
    <div className="stack">
      <div className="field">
        <label htmlFor="toolkit-tool-filter">Filter {plural(entries.length, "tool")}</label>
        <input
          id="toolkit-tool-filter"
          type="search"
          value={filter}
          placeholder="Name or description"
          onChange={(e) => setFilter(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === "ArrowDown") {
              e.preventDefault();
              scrollRef.current?.focus();
            }
          }}
        />
      </div>
      {menuError && (
        <p className="field-error" role="alert">
          {menuError}
        </p>
      )}
      <div
        ref={scrollRef}
        className="tree-scroll"
        role="tree"
        aria-label="Tools in this toolkit"
        tabIndex={0}
        onKeyDown={onKeyDown}
        data-testid="toolkit-tool-tree"
      >
        {rows.length === 0 && <p className="muted" style={{ padding: "0.5rem" }}>No tool matches.</p>}
        <div style={{ height: virtualizer.getTotalSize(), position: "relative" }}>
          {virtualizer.getVirtualItems().map((v) => {
            const row = rows[v.index]!;
            const style = { transform: `translateY(${v.start}px)`, paddingLeft: `${0.4 + row.depth * 1.1}rem` };
            if (row.kind === "folder") {
              const open = tokens.length > 0 || !collapsed.has(row.path);
              return (
                <div
                  key={`f:${row.path}`}
                  className="tree-row"
                  style={style}
                  role="treeitem"
                  aria-expanded={open}
                  aria-level={row.depth + 1}
                  aria-label={`${row.label} ${row.count} (${row.pattern})`}
                  onClick={() => toggle(row.path)}
                >
                  <span className="twist" aria-hidden>
                    {open ? "▾" : "▸"}
                  </span>
                  <RuleDot rule={ruleFor(row.pattern)} />
                  <span className="label">
                    {row.label} <span className="muted">{row.count}</span>
                  </span>
                  <ToolkitPolicyMenu
                    toolkitId={toolkitId}
                    pattern={row.pattern}
                    rules={rules}
                    triggerLabel={`Policy for ${row.pattern}`}
                    onError={setMenuError}
                  />
                </div>
              );
            }
            return (
              <div
                key={`l:${row.path}`}
                className="tree-row"
                style={style}
                role="treeitem"
                aria-selected={row.path === selected}
                aria-level={row.depth + 1}
                aria-label={row.path}
                onClick={() => onSelect(row.path)}
                title={row.entry.tool.description ?? undefined}
              >
                <span className="twist" aria-hidden />
                <ToolDot tool={row.entry.tool} />
                <span className="label mono">{row.label}</span>
                <ToolkitPolicyMenu
                  toolkitId={toolkitId}
                  pattern={row.path}
                  rules={rules}
                  triggerLabel={`Policy for ${row.path}`}
                  onError={setMenuError}
                />
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}

function ToolDecision({ toolkitId, entry, rules }: { toolkitId: string; entry: TreeEntry; rules: ToolkitPolicy[] }) {
  const [error, setError] = useState<string | null>(null);
  const t = entry.tool;
  return (
    <div className="card stack" data-testid="toolkit-decision">
      <div className="toolkit-decision">
        <span className="row">
          <span>In this toolkit:</span>
          <span className={`badge ${tone(t.action)}`}>
            {ACTION_LABELS[t.action]}
            {t.decidedBy.kind === "default" ? " · default" : ""}
          </span>
          {t.decidedBy.kind === "policy" && (
            <span className="field-hint">
              by rule <code>{t.decidedBy.pattern}</code>
            </span>
          )}
        </span>
        <ToolkitPolicyMenu
          toolkitId={toolkitId}
          pattern={entry.id}
          rules={rules}
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

function AddRuleForm({ toolkitId }: { toolkitId: string }) {
  const invalidate = useInvalidateToolkit();
  const [pattern, setPattern] = useState("");
  const [action, setAction] = useState<ToolkitAction>("require_approval");
  const check = pattern ? parsePattern(pattern) : null;
  const create = useMutation({
    mutationFn: () => createToolkitPolicy(toolkitId, { pattern, action }),
    onSuccess: () => setPattern(""),
    onSettled: () => invalidate(toolkitId),
  });
  const localError = check && !check.ok ? `Not a valid pattern: ${check.error}.` : null;
  const error = localError ?? (create.error ? describeError(create.error) : null);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (!pattern || !check?.ok) return;
    create.mutate();
  };
  return (
    <form className="toolkit-rule-add" onSubmit={submit} noValidate aria-label="Add a rule">
      <div className="field">
        <label htmlFor="tk-rule-pattern">Pattern</label>
        <input
          id="tk-rule-pattern"
          className="mono"
          value={pattern}
          placeholder="github.org.main.issues.*"
          autoComplete="off"
          spellCheck={false}
          aria-invalid={error ? true : undefined}
          aria-describedby="tk-rule-pattern-hint"
          onChange={(e) => {
            setPattern(e.target.value);
            create.reset();
          }}
        />
        <span className="field-hint" id="tk-rule-pattern-hint">
          {error ? (
            <span className="field-error">{error}</span>
          ) : (
            <>
              <code>integration.owner.connection.tool</code>; a new rule goes to the top.
            </>
          )}
        </span>
      </div>
      <div className="field">
        <label htmlFor="tk-rule-action">Action</label>
        <select id="tk-rule-action" value={action} onChange={(e) => setAction(e.target.value as ToolkitAction)}>
          {ACTIONS.map((a) => (
            <option key={a} value={a}>
              {ACTION_LABELS[a]}
            </option>
          ))}
        </select>
      </div>
      <div className="submit">
        <button type="submit" className="primary" disabled={create.isPending || !pattern || !!localError}>
          {create.isPending ? "Adding…" : "Add rule"}
        </button>
      </div>
    </form>
  );
}

function RuleRow({ toolkitId, rule, index, rules }: { toolkitId: string; rule: ToolkitPolicy; index: number; rules: ToolkitPolicy[] }) {
  const invalidate = useInvalidateToolkit();
  const update = useMutation({
    mutationFn: (patch: { action?: ToolkitAction; position?: string }) => updateToolkitPolicy(toolkitId, rule.id, patch),
    onSettled: () => invalidate(toolkitId),
  });
  const remove = useMutation({ mutationFn: () => removeToolkitPolicy(toolkitId, rule.id), onSettled: () => invalidate(toolkitId) });
  const busy = update.isPending || remove.isPending;
  const move = (d: -1 | 1) => {
    const position = rulePositionForMove(rules, rule, d);
    if (position) update.mutate({ position });
  };
  const error = update.error ?? remove.error;
  const selectId = `tk-rule-action-${rule.id}`;
  return (
    <tr data-testid={`rule-${rule.pattern}`}>
      <td className="muted">{index + 1}</td>
      <td>
        <code className="policy-pattern">{rule.pattern}</code>
        {error && (
          <p className="field-error" role="alert">
            {describeError(error)}
          </p>
        )}
      </td>
      <td>
        <label htmlFor={selectId} className="visually-hidden">
          Action for {rule.pattern}
        </label>
        <select
          id={selectId}
          className={`rule-action-select policy-action-select ${tone(rule.action)}`}
          value={rule.action}
          disabled={busy}
          onChange={(e) => update.mutate({ action: e.target.value as ToolkitAction })}
        >
          {ACTIONS.map((a) => (
            <option key={a} value={a}>
              {ACTION_LABELS[a]}
            </option>
          ))}
        </select>
      </td>
      <td>
        <div className="row policy-buttons">
          <button type="button" disabled={busy || index === 0} onClick={() => move(-1)}>
            Move up<span className="visually-hidden"> {rule.pattern}</span>
          </button>
          <button type="button" disabled={busy || index === rules.length - 1} onClick={() => move(1)}>
            Move down<span className="visually-hidden"> {rule.pattern}</span>
          </button>
          <button type="button" className="danger" disabled={busy} onClick={() => remove.mutate()}>
            Delete<span className="visually-hidden"> rule {rule.pattern}</span>
          </button>
        </div>
      </td>
    </tr>
  );
}

function RulesSection({ toolkitId, rules, state }: { toolkitId: string; rules: ToolkitPolicy[]; state: ReactNode }) {
  const sorted = sortRules(rules);
  return (
    <section className="card stack toolkit-rules" aria-labelledby="toolkit-rules-title">
      <h2 id="toolkit-rules-title">Rules</h2>
      <p className="muted" style={{ margin: 0 }}>
        Only these rules apply through this toolkit (the global policies do not). For each tool the first matching rule
        decides; with none, the tool's default applies. A blocked tool disappears from the toolkit.
      </p>
      {state}
      {sorted.length === 0 ? (
        <p className="muted">No rules: every added tool follows its default.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Order</th>
              <th scope="col">Pattern</th>
              <th scope="col">Action</th>
              <th scope="col">
                <span className="visually-hidden">Change</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sorted.map((r, i) => (
              <RuleRow key={r.id} toolkitId={toolkitId} rule={r} index={i} rules={sorted} />
            ))}
          </tbody>
        </table>
      )}
      <AddRuleForm toolkitId={toolkitId} />
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
        <span className="endpoint-label" id="toolkit-url-label">
          URL
        </span>
        <code data-testid="toolkit-mcp-url" aria-labelledby="toolkit-url-label">
          {url}
        </code>
        <CopyButton text={url} label="Copy URL" />
        <span className="endpoint-label" id="toolkit-stdio-label">
          stdio
        </span>
        <code data-testid="toolkit-stdio" aria-labelledby="toolkit-stdio-label">
          {stdio}
        </code>
        <CopyButton text={stdio} label="Copy command" />
      </div>
      <p className="field-hint" style={{ margin: 0 }}>
        Same bearer token as <code>/mcp</code>. An agent connected here sees only this toolkit's tools.
      </p>
    </section>
  );
}

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
  const entries = useMemo(() => (tools.data ?? []).map(entryOf), [tools.data]);
  const selectedEntry = selected ? entries.find((e) => e.id === selected) : undefined;
  const rules = policies.data ?? [];
  const granted = connections.data ?? [];

  const select = (toolId: string | null) => {
    const p = new URLSearchParams(search);
    if (toolId === null) p.delete("tool");
    else p.set("tool", toolId);
    const qs = p.toString();
    navigate(`${location}${qs ? `?${qs}` : ""}`, { replace: true });
  };

  if (toolkits.isError)
    return (
      <section className="page">
        <p>
          <Link href="/toolkits">← Toolkits</Link>
        </p>
        <h1>Toolkit</h1>
        <p className="form-top-error" role="alert">
          {describeError(toolkits.error)}
        </p>
      </section>
    );
  if (toolkits.isPending)
    return (
      <p className="page muted" role="status">
        Loading…
      </p>
    );
  if (!toolkit)
    return (
      <section className="page">
        <p>
          <Link href="/toolkits">← Toolkits</Link>
        </p>
        <h1>No such toolkit</h1>
        <p className="muted" role="alert">
          No toolkit has the slug “{slug}”.
        </p>
      </section>
    );

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
    toolsBody = (
      <p className="form-top-error" role="alert">
        {describeError(tools.error)}
      </p>
    );
  } else if (tools.isPending) {
    toolsBody = (
      <p className="muted" role="status">
        Loading tools…
      </p>
    );
  } else if (entries.length === 0) {
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
        <ToolkitTree
          toolkitId={toolkit.id}
          entries={entries}
          rules={rules}
          integrationNames={integrationNames}
          selected={selected}
          onSelect={select}
        />
        {selectedEntry ? (
          <div className="stack">
            <ToolDecision toolkitId={toolkit.id} entry={selectedEntry} rules={rules} />
            <ToolDetail integration={selectedEntry.tool.integration} instances={[selectedEntry.tool]} policies={undefined} />
          </div>
        ) : (
          <div className="card muted">Select a tool to see its schema and set its policy in this toolkit.</div>
        )}
      </div>
    );
  }

  return (
    <section className="page toolkit-page">
      <p>
        <Link href="/toolkits">← Toolkits</Link>
      </p>
      <div className="page-header">
        <div className="stack" style={{ gap: "0.3rem" }}>
          <h1>{toolkit.name}</h1>
          <div className="detail-meta">
            <code>{toolkit.slug}</code>
            <span className="badge">{toolkit.owner === "org" ? "Local" : "Personal"}</span>
            <span>{plural(connections.data ? granted.length : toolkit.connectionCount, "connection")}</span>
            {tools.isSuccess && <span>{plural(entries.length, "tool")}</span>}
          </div>
        </div>
        <div className="row">
          <button type="button" onClick={() => setRenaming(true)}>
            Rename
          </button>
          <button type="button" className="danger" onClick={() => setDeleting(true)}>
            Delete
          </button>
        </div>
      </div>

      <Endpoint slug={toolkit.slug} />

      <section className="card stack" aria-labelledby="toolkit-conns-title">
        <div className="page-header">
          <h2 id="toolkit-conns-title">Connections</h2>
          <button type="button" className="primary" onClick={() => setManaging(true)}>
            Manage connections
          </button>
        </div>
        {connections.isError && (
          <p className="form-top-error" role="alert">
            {describeError(connections.error)}
          </p>
        )}
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
        toolkitId={toolkit.id}
        rules={rules}
        state={
          policies.isError ? (
            <p className="form-top-error" role="alert">
              {describeError(policies.error)}
            </p>
          ) : null
        }
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
