// The tool tree: dotted tool names (or ids) become folders, filtered as you type, virtualised so
// an integration with thousands of tools renders only the rows on screen. Each row has a decision
// dot and a policy menu writing through the page's `RuleWriter`: an integration's page writes
// connection-agnostic global rules, a toolkit's page its own rules with the exact id.

import { useVirtualizer } from "@tanstack/react-virtual";
import { Fragment, useEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from "react";
import type { RuleWriter } from "../api/policies";
import { DecisionDot, PolicyMenu, type Decision } from "./policy-menu";

export interface TreeTool {
  /** What a leaf is selected by and named for (a dotted tool name, or a toolkit's tool id). */
  id: string;
  /** The folders down to the leaf, then its label; `id` split at its dots when absent. */
  segments?: string[];
  description: string | null;
}

/** The rules a tree's menus write, and the pattern a leaf's (`folder` false) or folder's menu sets. */
export interface TreeRules {
  writer: RuleWriter;
  patternOf: (path: string, folder: boolean) => string;
}

type Row<T> =
  | { kind: "folder"; path: string; /** its segment */ label: string; depth: number; count: number }
  | { kind: "leaf"; path: string; label: string; depth: number; tool: T };

interface Folder<T> {
  /** The dotted path this folder stands for. */
  path: string;
  folders: Map<string, Folder<T>>;
  leaves: { label: string; tool: T }[];
  count: number;
}

const ROW_HEIGHT = 30;

function build<T extends TreeTool>(tools: T[]): Folder<T> {
  const root: Folder<T> = { path: "", folders: new Map(), leaves: [], count: 0 };
  for (const t of tools) {
    const parts = t.segments ?? t.id.split(".");
    let node = root;
    node.count++;
    for (const part of parts.slice(0, -1)) {
      let next = node.folders.get(part);
      if (!next) {
        next = { path: node.path ? `${node.path}.${part}` : part, folders: new Map(), leaves: [], count: 0 };
        node.folders.set(part, next);
      }
      next.count++;
      node = next;
    }
    node.leaves.push({ label: parts[parts.length - 1]!, tool: t });
  }
  return root;
}

function flatten<T extends TreeTool>(root: Folder<T>, collapsed: Set<string>, forceOpen: boolean): Row<T>[] {
  const rows: Row<T>[] = [];
  const walk = (node: Folder<T>, depth: number) => {
    const folders = [...node.folders.entries()].sort(([a], [b]) => a.localeCompare(b));
    for (const [segment, child] of folders) {
      rows.push({ kind: "folder", path: child.path, label: segment, depth, count: child.count });
      if (forceOpen || !collapsed.has(child.path)) walk(child, depth + 1);
    }
    const leaves = [...node.leaves].sort((a, b) => a.tool.id.localeCompare(b.tool.id));
    for (const { label, tool } of leaves) rows.push({ kind: "leaf", path: tool.id, label, depth, tool });
  };
  walk(root, 0);
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

export function ToolTree<T extends TreeTool>({
  tools,
  decide,
  rules,
  selected,
  onSelect,
  label = "Tools",
  testId = "tool-tree",
  filterId = "tool-filter",
  filterLabel = `Filter ${tools.length} tools`,
  folderLabel = (segment) => segment,
  folderName = (row) => `${row.path} (${row.count})`,
  highlightMatches = true,
}: {
  tools: T[];
  /** A tool's effective decision, for its dot (none when not known yet); asked of the rows shown. */
  decide: (tool: T) => Decision | undefined;
  /** The rules the menus write and the folder dots show; no menus without. */
  rules: TreeRules | undefined;
  selected: string | null;
  onSelect: (id: string) => void;
  /** The tree's accessible name, its test id, the filter's id and label. */
  label?: string;
  testId?: string;
  filterId?: string;
  filterLabel?: string;
  /** What a folder shows for its segment (`path` is its dotted path). */
  folderLabel?: (segment: string, depth: number, path: string) => string;
  /** A folder row's accessible name. */
  folderName?: (row: { path: string; label: string; count: number }) => string;
  /** Marks the filter's words in the labels. */
  highlightMatches?: boolean;
}) {
  const [filter, setFilter] = useState("");
  const [collapsed, setCollapsed] = useState<Set<string>>(() => new Set());
  const [menuError, setMenuError] = useState<string | null>(null);
  const scrollRef = useRef<HTMLDivElement>(null);

  const tokens = useMemo(() => filter.toLowerCase().split(/\s+/).filter(Boolean), [filter]);
  const matching = useMemo(() => {
    if (tokens.length === 0) return tools;
    return tools.filter((t) => {
      const hay = `${t.id} ${t.description ?? ""}`.toLowerCase();
      return tokens.every((tok) => hay.includes(tok));
    });
  }, [tools, tokens]);
  const tree = useMemo(() => build(matching), [matching]);
  const rows = useMemo(() => flatten(tree, collapsed, tokens.length > 0), [tree, collapsed, tokens.length]);
  const marked = highlightMatches ? tokens : [];

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

  const folderRule = (path: string): Decision | undefined => {
    const rule = rules?.writer.exact(rules.patternOf(path, true));
    return rule ? { action: rule.action, rule } : undefined;
  };

  return (
    <div className="stack">
      <div className="field">
        <label htmlFor={filterId}>{filterLabel}</label>
        <input
          id={filterId}
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
        aria-label={label}
        tabIndex={0}
        onKeyDown={onKeyDown}
        data-testid={testId}
      >
        {rows.length === 0 && <p className="muted" style={{ padding: "0.5rem" }}>{tools.length ? "No tool matches." : "No tools."}</p>}
        <div style={{ height: virtualizer.getTotalSize(), position: "relative" }}>
          {virtualizer.getVirtualItems().map((v) => {
            const row = rows[v.index]!;
            const style = { transform: `translateY(${v.start}px)`, paddingLeft: `${0.4 + row.depth * 1.1}rem` };
            if (row.kind === "folder") {
              const open = tokens.length > 0 || !collapsed.has(row.path);
              const shown = folderLabel(row.label, row.depth, row.path);
              return (
                <div
                  key={`f:${row.path}`}
                  className="tree-row"
                  style={style}
                  role="treeitem"
                  aria-expanded={open}
                  aria-level={row.depth + 1}
                  aria-label={folderName({ path: row.path, label: shown, count: row.count })}
                  onClick={() => toggle(row.path)}
                >
                  <span className="twist" aria-hidden>
                    {open ? "▾" : "▸"}
                  </span>
                  <DecisionDot decision={folderRule(row.path)} />
                  <span className="label">
                    {highlight(shown, marked)} <span className="muted">{row.count}</span>
                  </span>
                  {rules && (
                    <PolicyMenu
                      pattern={rules.patternOf(row.path, true)}
                      rules={rules.writer}
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
                <span className="label mono">{highlight(row.label, marked)}</span>
                {rules && (
                  <PolicyMenu
                    pattern={rules.patternOf(row.path, false)}
                    rules={rules.writer}
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
