// A CodeMirror 6 editor for the playground: TypeScript, completion of `tools.…` paths from the
// catalog, and a hover that shows a tool's declaration. Heavy: import it only from lazy pages.

import { useEffect, useRef } from "react";
import "./code-editor.css";
import { EditorView, basicSetup } from "codemirror";
import { keymap, hoverTooltip } from "@codemirror/view";
import { Prec } from "@codemirror/state";
import { javascript } from "@codemirror/lang-javascript";
import { HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import { tags as t } from "@lezer/highlight";
import { autocompletion, type CompletionContext, type CompletionResult } from "@codemirror/autocomplete";

// Token colours from CSS variables (code-editor.css), so light and dark both read well.
const highlight = HighlightStyle.define([
  { tag: [t.keyword, t.controlKeyword, t.moduleKeyword, t.operatorKeyword], color: "var(--cm-keyword)" },
  { tag: [t.string, t.special(t.string), t.regexp], color: "var(--cm-string)" },
  { tag: [t.number, t.bool, t.null], color: "var(--cm-number)" },
  { tag: [t.comment, t.lineComment, t.blockComment], color: "var(--cm-comment)", fontStyle: "italic" },
  { tag: [t.definition(t.variableName), t.function(t.variableName), t.function(t.propertyName)], color: "var(--cm-def)" },
  { tag: [t.typeName, t.className], color: "var(--cm-type)" },
]);

export interface EditorTool {
  /** As written in code: `tools.<integration>.<owner>.<connection>.<tool>`. */
  path: string;
  description?: string;
}

/** The `tools.a.b` chain ending at `pos` (or around it for hovers). */
const PATH_CHARS = /[A-Za-z0-9_$.\-]/;

function chainAround(text: string, pos: number, forward: boolean): { from: number; to: number; text: string } | null {
  let from = pos;
  while (from > 0 && PATH_CHARS.test(text[from - 1]!)) from--;
  let to = pos;
  if (forward) while (to < text.length && PATH_CHARS.test(text[to]!)) to++;
  const chain = text.slice(from, to);
  return chain.startsWith("tools.") || chain === "tools" ? { from, to, text: chain } : null;
}

export function CodeEditor({
  value,
  onChange,
  onRun,
  tools,
  declaration,
  label,
}: {
  value: string;
  onChange: (v: string) => void;
  onRun: () => void;
  tools: EditorTool[];
  /** The TypeScript declaration of a tool path, for hovers. */
  declaration: (path: string) => Promise<string | null>;
  label: string;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  // The editor is created once; these refs let its extensions see the latest props.
  const latest = useRef({ onChange, onRun, tools, declaration });
  latest.current = { onChange, onRun, tools, declaration };

  useEffect(() => {
    const complete = (ctx: CompletionContext): CompletionResult | null => {
      const line = ctx.state.doc.lineAt(ctx.pos);
      const chain = chainAround(line.text, ctx.pos - line.from, false);
      if (!chain) return null;
      const typed = chain.text;
      const lastDot = typed.lastIndexOf(".");
      const base = lastDot >= 0 ? typed.slice(0, lastDot + 1) : "tools.";
      const seen = new Map<string, EditorTool | null>();
      for (const t of latest.current.tools) {
        if (!t.path.startsWith(base)) continue;
        // Offer the next segment; the last one (the tool) may itself contain dots, so a full
        // remainder is offered too once only the tool is left.
        const rest = t.path.slice(base.length);
        const seg = rest.split(".")[0]!;
        if (rest === seg) seen.set(seg, t);
        else if (!seen.has(seg)) seen.set(seg, null);
        if (rest !== seg && rest.split(".").length <= 3) seen.set(rest, t);
      }
      if (seen.size === 0) return null;
      return {
        from: line.from + chain.from + base.length,
        options: [...seen].map(([label, tool]) => ({
          label,
          type: tool ? "function" : "namespace",
          detail: tool ? "tool" : undefined,
          info: tool?.description,
          apply: tool ? `${label}({})` : label,
        })),
        validFor: /^[A-Za-z0-9_$\-]*$/,
      };
    };
    const hover = hoverTooltip(async (v, pos) => {
      const line = v.state.doc.lineAt(pos);
      const chain = chainAround(line.text, pos - line.from, true);
      if (!chain) return null;
      // The longest known tool path the chain starts with.
      const tool = latest.current.tools
        .filter((t) => chain.text === t.path || chain.text.startsWith(`${t.path}.`))
        .sort((a, b) => b.path.length - a.path.length)[0];
      if (!tool) return null;
      const decl = await latest.current.declaration(tool.path);
      if (!decl) return null;
      return {
        pos: line.from + chain.from,
        end: line.from + chain.to,
        above: true,
        create: () => {
          const dom = document.createElement("pre");
          dom.className = "code-hover";
          dom.textContent = decl;
          return { dom };
        },
      };
    });
    const v = new EditorView({
      parent: host.current!,
      doc: value,
      extensions: [
        basicSetup,
        javascript({ typescript: true }),
        syntaxHighlighting(highlight),
        autocompletion({ override: [complete], activateOnTyping: true }),
        hover,
        Prec.highest(
          keymap.of([
            {
              key: "Mod-Enter",
              run: () => {
                latest.current.onRun();
                return true;
              },
            },
          ]),
        ),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) latest.current.onChange(u.state.doc.toString());
        }),
        EditorView.contentAttributes.of({ "aria-label": label }),
        EditorView.theme({
          "&": { fontSize: "0.9rem", border: "1px solid var(--border)", borderRadius: "var(--radius)", background: "var(--bg)", color: "var(--fg)" },
          "&.cm-focused": { outline: "2px solid var(--focus)", outlineOffset: "2px" },
          ".cm-scroller": { fontFamily: "var(--mono)", minHeight: "14rem", maxHeight: "28rem" },
          ".cm-gutters": { background: "var(--bg-soft)", color: "var(--fg-muted)", borderRight: "1px solid var(--border)" },
          ".cm-activeLine, .cm-activeLineGutter": { background: "color-mix(in srgb, var(--accent) 7%, transparent)" },
          ".cm-cursor": { borderLeftColor: "var(--fg)" },
          ".cm-tooltip": { background: "var(--bg)", color: "var(--fg)", border: "1px solid var(--border)" },
          ".cm-tooltip-autocomplete ul li[aria-selected]": { background: "var(--accent)", color: "var(--accent-fg)" },
          ".code-hover": { whiteSpace: "pre-wrap", margin: 0, padding: "0.5rem", maxWidth: "40rem", maxHeight: "20rem", overflow: "auto", fontSize: "0.8rem" },
        }),
      ],
    });
    view.current = v;
    return () => v.destroy();
    // created once; `value` changes from outside are applied below
  }, []);

  useEffect(() => {
    const v = view.current;
    if (v && v.state.doc.toString() !== value) v.dispatch({ changes: { from: 0, to: v.state.doc.length, insert: value } });
  }, [value]);

  return <div ref={host} className="code-editor" />;
}
