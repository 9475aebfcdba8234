// The tool tree: dotted tool names become folders, filtered as you type, virtualised so an
// integration with thousands of tools renders only the rows on screen.

import { useVirtualizer } from "@tanstack/react-virtual";
import { Fragment, useEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from "react";
import type { Policy } from "../api/policies";
import { agnosticPattern, DecisionDot, effectiveDecision, PolicyMenu } from "./policy-menu";

export interface TreeTool {
  /** The dotted tool name (the same across connections). */
  name: string;
  description: string | null;
  /** A policy id of one instance (`integration.owner.connection.name`), for the indicator. */
  policyId: string;
  requiresApproval: boolean;
}

type Row =
  | { kind: "folder"; path: string; label: string; depth: number; count: number }
  | { kind: "leaf"; path: string; label: string; depth: number; tool: TreeTool };

interface Folder {
  folders: Map<string, Folder>;
  leaves: TreeTool[];
  count: number;
}

const ROW_HEIGHT = 30;

function build(tools: TreeTool[]): Folder {
  const root: Folder = { folders: new Map(), leaves: [], count: 0 };
  for (const t of tools) {
    const parts = t.name.split(".");
    let node = root;
    node.count++;
    for (const part of parts.slice(0, -1)) {
      let next = node.folders.get(part);
      if (!next) {
        next = { folders: new Map(), leaves: [], count: 0 };
        node.folders.set(part, next);
      }
      next.count++;
      node = next;
    }
    node.leaves.push(t);
  }
  return root;
}

function flatten(root: Folder, collapsed: Set<string>, forceOpen: boolean): Row[] {
  const rows: Row[] = [];
  const walk = (node: Folder, prefix: string, depth: number) => {
    const folders = [...node.folders.entries()].sort(([a], [b]) => a.localeCompare(b));
    for (const [label, child] of folders) {
      const path = prefix ? `${prefix}.${label}` : label;
      rows.push({ kind: "folder", path, label, depth, count: child.count });
      if (forceOpen || !collapsed.has(path)) walk(child, path, depth + 1);
    }
    const leaves = [...node.leaves].sort((a, b) => a.name.localeCompare(b.name));
    for (const t of leaves) rows.push({ kind: "leaf", path: t.name, label: t.name.slice(prefix ? prefix.length + 1 : 0), depth, tool: t });
  };
  walk(root, "", 0);
  return rows;
}

/** Wraps each token found in `text` in <mark>. */
function highlight(text: string, tokens: string[]): ReactNode {
  if (tokens.length === 0) return text;
  const lower = text.toLowerCase();
  const marks: [number, number][] = [];
  for (const tok of tokens) {
    let i = lower.indexOf(tok);
    while (i >= 0) {
      marks.push([i, i + tok.length]);
      i = lower.indexOf(tok, i + tok.length);
    }
  }
  if (marks.length === 0) return text;
  marks.sort((a, b) => a[0] - b[0]);
  const out: ReactNode[] = [];
  let at = 0;
  for (const [s, e] of marks) {
    if (s < at) continue;
    out.push(<Fragment key={`t${s}`}>{text.slice(at, s)}</Fragment>, <mark key={`m${s}`}>{text.slice(s, e)}</mark>);
    at = e;
  }
  out.push(<Fragment key="rest">{text.slice(at)}</Fragment>);
  return out;
}

export function ToolTree({
  integration,
  tools,
  policies,
  selected,
  onSelect,
}: {
  integration: string;
  tools: TreeTool[];
  policies: Policy[] | undefined;
  selected: string | null;
  onSelect: (name: string) => void;
}) {
  const [filter, setFilter] = useState("");
  const [collapsed, setCollapsed] = useState<Set<string>>(() => new Set());
  const [menuError, setMenuError] = useState<string | null>(null);
  const scrollRef = useRef<HTMLDivElement>(null);

  const tokens = useMemo(() => filter.toLowerCase().split(/\s+/).filter(Boolean), [filter]);
  const matching = useMemo(() => {
    if (tokens.length === 0) return tools;
    return tools.filter((t) => {
      const hay = `${t.name} ${t.description ?? ""}`.toLowerCase();
      return tokens.every((tok) => hay.includes(tok));
    });
  }, [tools, tokens]);
  const tree = useMemo(() => build(matching), [matching]);
  const rows = useMemo(() => flatten(tree, collapsed, tokens.length > 0), [tree, collapsed, tokens.length]);

  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
  });

  // A new filter shows a new list: start it at the top (an old offset may be past its end).
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

  // Arrow keys move the selection through the visible leaves; Left/Right fold the current folder.
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

  const decide = (t: TreeTool) => (policies ? effectiveDecision(policies, t.policyId, t.requiresApproval) : undefined);
  const folderRule = (path: string) => {
    const pattern = agnosticPattern(integration, path, true);
    const rule = policies?.find((p) => p.owner === "org" && p.pattern === pattern);
    return rule ? { action: rule.action, rule } : undefined;
  };

  return (
    <div className="stack">
      <div className="field">
        <label htmlFor="tool-filter">Filter {tools.length} tools</label>
        <input
          id="tool-filter"
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
        aria-label="Tools"
        tabIndex={0}
        onKeyDown={onKeyDown}
        data-testid="tool-tree"
      >
        {rows.length === 0 && <p className="muted" style={{ padding: "0.5rem" }}>{tools.length ? "No tool matches." : "No tools."}</p>}
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
                  aria-label={`${row.path} (${row.count})`}
                  onClick={() => toggle(row.path)}
                >
                  <span className="twist" aria-hidden>
                    {open ? "▾" : "▸"}
                  </span>
                  <DecisionDot decision={folderRule(row.path)} />
                  <span className="label">
                    {highlight(row.label, tokens)} <span className="muted">{row.count}</span>
                  </span>
                  {policies && (
                    <PolicyMenu
                      pattern={agnosticPattern(integration, row.path, true)}
                      policies={policies}
                      triggerLabel={`Policy for ${row.path}.*`}
                      onError={setMenuError}
                    />
                  )}
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
                title={row.tool.description ?? undefined}
              >
                <span className="twist" aria-hidden />
                <DecisionDot decision={decide(row.tool)} />
                <span className="label mono">{highlight(row.label, tokens)}</span>
                {policies && (
                  <PolicyMenu
                    pattern={agnosticPattern(integration, row.path, false)}
                    policies={policies}
                    triggerLabel={`Policy for ${row.path}`}
                    onError={setMenuError}
                  />
                )}
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
