// /settings — this browser's API token (masked; reveal and copy), how to rotate it, and what the
// server says about itself. The team server has no such token (a browser signs in, agents use API
// keys): there the first card points at the account page instead.

import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { Link } from "wouter";
import { forgetToken, isTeam, token } from "../api/auth";
import { api, describeError } from "../api/http";
import type { ServerInfo } from "../api/types";
import "./exec-common.css";
import "./settings.css";
import "./executions.css";

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<"idle" | "copied" | "failed">("idle");
  return (
    <>
      <button
        type="button"
        aria-label={label}
        onClick={() =>
          navigator.clipboard
            ? navigator.clipboard.writeText(text).then(
                () => setState("copied"),
                () => setState("failed"),
              )
            : setState("failed")
        }
      >
        Copy
      </button>
      <span role="status" className="field-hint">
        {state === "copied" ? "Copied." : state === "failed" ? "Copying is blocked here; select the text and copy it." : ""}
      </span>
    </>
  );
}

export default function SettingsPage() {
  const value = token() ?? "";
  const [shown, setShown] = useState(false);
  const server = useQuery({ queryKey: ["server"], queryFn: () => api<ServerInfo>("/server"), retry: false });
  return (
    <section className="page">
      <h1>Settings</h1>
      {isTeam() ? (
        <section className="card" aria-labelledby="token-title">
          <h2 id="token-title" className="settings-h2">Signing in</h2>
          <p className="muted settings-p">
            This browser is signed in with your account. Agents and scripts use an API key of yours, made on the{" "}
            <Link href="/account">Account</Link> page, as <code>Authorization: Bearer exk_…</code>.
          </p>
        </section>
      ) : (
        <section className="card" aria-labelledby="token-title">
          <h2 id="token-title" className="settings-h2">API token</h2>
          <p className="muted">
            This browser sends it with every request. Agents and scripts use the same token as{" "}
            <code>Authorization: Bearer …</code>.
          </p>
          {value ? (
            <div className="field">
              <label htmlFor="settings-token">Token</label>
              <div className="copy-row">
                <input id="settings-token" readOnly type={shown ? "text" : "password"} value={value} />
                <button type="button" onClick={() => setShown((s) => !s)} aria-pressed={shown}>
                  {shown ? "Hide" : "Reveal"}
                </button>
                <CopyButton text={value} label="Copy the token" />
              </div>
            </div>
          ) : (
            <p>This browser holds no token.</p>
          )}
          <h3 className="settings-h2">Rotating it</h3>
          <p>
            Run <code>executor server rotate-token</code> on the machine the server runs on. It writes a new token to{" "}
            <code>server-control/auth.json</code> in the data directory (<code>~/.executor</code> unless{" "}
            <code>EXECUTOR_DATA_DIR</code> says otherwise); a running server keeps accepting the old one until it
            restarts (<code>executor daemon restart</code>). Then open the new link the server prints, or sign this
            browser out and paste the new token.
          </p>
          <button
            type="button"
            className="danger"
            onClick={() => {
              forgetToken();
              window.location.assign("/");
            }}
          >
            Sign this browser out
          </button>
        </section>
      )}
      <section className="card" aria-labelledby="server-title">
        <h2 id="server-title" className="settings-h2">Server</h2>
        <dl className="execution-facts">
          <dt>Address</dt>
          <dd><code>{window.location.origin}</code></dd>
          <dt>MCP endpoint</dt>
          <dd><code>{window.location.origin}/mcp</code></dd>
          <dt>Status</dt>
          <dd>{server.isPending ? "checking…" : server.isSuccess ? <span className="badge ok">running</span> : <span className="badge danger">not answering</span>}</dd>
          <dt>Version</dt>
          <dd>{server.data ? <code>{server.data.version}</code> : "—"}</dd>
          <dt>Data directory</dt>
          <dd>{server.data?.dataDir ? <code>{server.data.dataDir}</code> : "—"}</dd>
        </dl>
        {server.isError && <p className="field-error">{describeError(server.error)}</p>}
      </section>
    </section>
  );
}
