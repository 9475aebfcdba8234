// "Connect an agent": copyable setup for the common MCP clients, pointing at this server. On the
// team server there is no token to paste: the client signs in with OAuth (it finds the server's
// sign-in from `/mcp`'s 401), or sends one of the person's API keys.

import * as Tabs from "@radix-ui/react-tabs";
import { useId, useState } from "react";
import { Link } from "wouter";
import { isTeam, token } from "../api/auth";

type Mode = "model" | "browser" | "native";

const MODES: { id: Mode; label: string; hint: string }[] = [
  { id: "model", label: "Model resume tool", hint: "The agent asks you and calls resume (works with every client)." },
  { id: "browser", label: "Browser approval", hint: "The agent gets a link; you approve in this console." },
  { id: "native", label: "Native elicitation", hint: "The client shows the question itself (needs MCP elicitation support)." },
];

export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      // insecure origins have no async clipboard: fall back to a hidden textarea
      const area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    setCopied(true);
    window.setTimeout(() => setCopied(false), 1500);
  };
  return (
    <button type="button" onClick={copy} aria-live="polite">
      {copied ? "Copied" : label}
    </button>
  );
}

function Snippet({ text, shown }: { text: string; shown: string }) {
  return (
    <div className="snippet">
      <pre>
        <code>{shown}</code>
      </pre>
      <CopyButton text={text} />
    </div>
  );
}

export function ConnectAgent() {
  const [mode, setMode] = useState<Mode>("model");
  const [reveal, setReveal] = useState(false);
  const name = useId();
  const team = isTeam();
  const secret = token() ?? "<token>";
  const masked = reveal ? secret : "••••••••";
  const url = `${window.location.origin}/mcp${mode === "model" ? "" : `?elicitation_mode=${mode}`}`;
  const header = (t: string) => `Authorization: Bearer ${t}`;

  const claude = (t: string) =>
    `claude mcp add --transport http executor ${url}${team ? "" : ` --header "${header(t)}"`}`;
  const cursor = (t: string) =>
    JSON.stringify({ mcpServers: { executor: team ? { url } : { url, headers: { Authorization: `Bearer ${t}` } } } }, null, 2);
  const addMcp = (t: string) => `npx add-mcp ${url} --transport http --name executor${team ? "" : ` --header "${header(t)}"`}`;
  const stdio = `executor mcp${mode === "model" ? "" : ` --elicitation-mode ${mode}`}`;

  return (
    <section className="card stack connect-agent" aria-labelledby={`${name}-title`}>
      <div className="page-header">
        <h2 id={`${name}-title`}>Connect an agent</h2>
        {!team && (
          <label className="row inline-check">
            <input type="checkbox" checked={reveal} onChange={(e) => setReveal(e.target.checked)} />
            Show token
          </label>
        )}
      </div>
      {team && (
        <p className="field-hint">
          The agent signs in through your browser (OAuth) the first time it connects. For an agent that cannot open a
          browser, create an API key on your <Link href="/account">account</Link> page and send it as{" "}
          <code>Authorization: Bearer exk_…</code>.
        </p>
      )}
      <fieldset className="modes">
        <legend>When a tool needs approval</legend>
        {MODES.map((m) => (
          <label key={m.id} className="row inline-check">
            <input type="radio" name={`${name}-mode`} checked={mode === m.id} onChange={() => setMode(m.id)} />
            <span>
              {m.label}
              {m.id === "model" ? " (default)" : ""} <span className="field-hint">{m.hint}</span>
            </span>
          </label>
        ))}
      </fieldset>
      <Tabs.Root defaultValue="claude">
        <Tabs.List aria-label="MCP client">
          <Tabs.Trigger value="claude">Claude Code</Tabs.Trigger>
          <Tabs.Trigger value="cursor">Cursor</Tabs.Trigger>
          <Tabs.Trigger value="add-mcp">add-mcp</Tabs.Trigger>
          <Tabs.Trigger value="stdio">stdio</Tabs.Trigger>
        </Tabs.List>
        <Tabs.Content value="claude">
          <Snippet text={claude(secret)} shown={claude(masked)} />
        </Tabs.Content>
        <Tabs.Content value="cursor">
          <p className="field-hint">
            Add to <code>~/.cursor/mcp.json</code>:
          </p>
          <Snippet text={cursor(secret)} shown={cursor(masked)} />
        </Tabs.Content>
        <Tabs.Content value="add-mcp">
          <p className="field-hint">Installs into any client add-mcp knows about.</p>
          <Snippet text={addMcp(secret)} shown={addMcp(masked)} />
        </Tabs.Content>
        <Tabs.Content value="stdio">
          <p className="field-hint">For clients that launch a local command (it talks to this server).</p>
          <Snippet text={stdio} shown={stdio} />
        </Tabs.Content>
      </Tabs.Root>
    </section>
  );
}
