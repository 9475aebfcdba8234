// A finished run's outcome: success or error, the returned value (or the error), and the logs.

import { logsOf } from "../api/executions";
import "./exec.css";

interface OutcomeLike {
  text?: string;
  structured?: unknown;
  isError?: boolean;
}

function pretty(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === undefined) return "undefined";
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

/** The text without its trailing `Logs:` block (logs are shown on their own). */
function textOnly(text: string | undefined): string {
  if (!text) return "";
  const at = text.lastIndexOf("\nLogs:\n");
  return at >= 0 ? text.slice(0, at) : text;
}

export function ExecResult({ outcome, title = "Result" }: { outcome: OutcomeLike; title?: string }) {
  const s = (outcome.structured ?? {}) as Record<string, unknown>;
  const isError = outcome.isError === true || s.status === "failed";
  const logs = logsOf(outcome);
  const hasResult = "result" in s;
  const error = s.error;
  const body = isError && error !== undefined ? pretty(error) : hasResult ? pretty(s.result) : textOnly(outcome.text);
  return (
    <section className={`card exec-result ${isError ? "is-error" : "is-ok"}`} aria-label={title}>
      <h2>
        {title}{" "}
        <span className={`badge ${isError ? "danger" : "ok"}`}>{isError ? "Error" : "Success"}</span>
      </h2>
      <pre className="exec-result-body" data-testid="exec-result-body">
        {body || "(no value)"}
      </pre>
      {logs.length > 0 && (
        <div className="exec-logs">
          <h3>Logs</h3>
          <ol>
            {logs.map((line, i) => (
              <li key={i} className={/^\[(error|warn)\]/.test(line) ? "warn-text" : undefined}>
                <code>{line}</code>
              </li>
            ))}
          </ol>
        </div>
      )}
    </section>
  );
}
