// /playground — write TypeScript against `tools`, run it (Ctrl/Cmd+Enter), see the result, the
// logs and the calls it made; a call that needs approval is answered inline.

import { useMemo, useState } from "react";
import { Link } from "wouter";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, describeError } from "../api/http";
import { execute, getJournal, isMissingRoute, type ExecutionOutcome, type PausedStructured } from "../api/executions";
import { CodeEditor, type EditorTool } from "../components/code-editor";
import { ExecPending } from "../components/exec-pending";
import { ExecResult } from "../components/exec-result";
import { JournalTable } from "./execution";
import "./exec-common.css";
import "./executions.css";

const STARTER = `// \`tools\` holds every connected tool: tools.<integration>.<owner>.<connection>.<tool>(args).
// Type "tools." for completion; hover a tool for its declaration. Ctrl/Cmd+Enter runs.
const integrations = await tools.executor.coreTools.integrations.list({});
console.log("integrations:", integrations);
return integrations;
`;

const DRAFT_KEY = "executor.playground.code";

interface ToolRow {
  address: string;
  description?: string;
}

/** How code reaches a tool: dynamic addresses already start `tools.`; static ones do not. */
function codePath(address: string): string {
  return address.startsWith("tools.") ? address : `tools.${address}`;
}

export default function PlaygroundPage() {
  const client = useQueryClient();
  const [code, setCode] = useState(() => localStorage.getItem(DRAFT_KEY) ?? STARTER);
  const [runs, setRuns] = useState<{ id: string | null; outcome: ExecutionOutcome }[]>([]);
  const catalog = useQuery({
    queryKey: ["tools", "playground"],
    queryFn: () => api<ToolRow[]>("/tools", { query: { includeAnnotations: false, includeBlocked: false } }),
  });
  const tools: EditorTool[] = useMemo(
    () => (catalog.data ?? []).map((t) => ({ path: codePath(t.address), description: t.description })),
    [catalog.data],
  );
  const byPath = useMemo(() => new Map((catalog.data ?? []).map((t) => [codePath(t.address), t.address])), [catalog.data]);

  const declaration = async (path: string): Promise<string | null> => {
    const address = byPath.get(path);
    if (!address) return null;
    const s = await client.fetchQuery({
      queryKey: ["tools", "schema", address],
      queryFn: () =>
        api<{ description?: string; inputTypeScript?: string; outputTypeScript?: string }>("/tools/schema", {
          query: { address },
        }),
      staleTime: 60_000,
    });
    const doc = s.description ? `/** ${s.description} */\n` : "";
    return `${doc}${path}(args: ${s.inputTypeScript ?? "{}"}): Promise<${s.outputTypeScript ?? "unknown"}>`;
  };

  const run = useMutation({
    mutationFn: () => execute(code),
    onMutate: () => {
      localStorage.setItem(DRAFT_KEY, code);
      setRuns([]);
    },
    onSuccess: (outcome) => {
      // The answer names its execution, settled or paused, so its journal can be shown.
      const id = outcome.executionId ?? (outcome.structured as { executionId?: string } | undefined)?.executionId ?? null;
      setRuns([{ id, outcome }]);
      void client.invalidateQueries({ queryKey: ["executions"] });
    },
  });

  const last = runs[runs.length - 1];
  const paused = last?.outcome.status === "paused" ? (last.outcome.structured as PausedStructured) : undefined;
  const executionId = runs.find((r) => r.id)?.id ?? null;

  return (
    <section className="page playground-page">
      <div className="page-header">
        <h1>Playground</h1>
        <span className="muted">
          {catalog.isError ? describeError(catalog.error) : catalog.data ? `${catalog.data.length} tools available` : "Loading tools…"}
        </span>
      </div>
      <div className="stack">
        <div className="field">
          <span className="exec-label" id="playground-code-label">
            Code
          </span>
          <CodeEditor
            value={code}
            onChange={setCode}
            onRun={() => !run.isPending && run.mutate()}
            tools={tools}
            declaration={declaration}
            label="Code (TypeScript)"
          />
          <span className="field-hint">
            Runs like an agent's code: policies apply, so a call that needs approval pauses below.
          </span>
        </div>
        <div className="row">
          <button type="button" className="primary" disabled={run.isPending} onClick={() => run.mutate()}>
            {run.isPending ? "Running…" : "Run"}
          </button>
          <span className="muted">Ctrl/Cmd+Enter</span>
          {executionId && (
            <Link href={`/executions/${encodeURIComponent(executionId)}`}>Open this run's record</Link>
          )}
        </div>
        {run.isError && (
          <p className="error" role="alert">
            {describeError(run.error)}
          </p>
        )}
        {paused ? (
          <ExecPending
            key={runs.length}
            executionId={paused.executionId}
            interaction={paused.interaction}
            expiresAt={paused.expiresAt}
            idPrefix={`pg-pending-${runs.length}`}
            onOutcome={(outcome) => setRuns((list) => [...list, { id: paused.executionId, outcome }])}
          />
        ) : last ? (
          <ExecResult outcome={last.outcome} />
        ) : null}
        {executionId && !paused && last && <RunCalls id={executionId} />}
      </div>
    </section>
  );
}

/** The calls of a finished run, from its journal. */
function RunCalls({ id }: { id: string }) {
  const journal = useQuery({ queryKey: ["executions", id], queryFn: () => getJournal(id), retry: false });
  return (
    <section className="card" aria-labelledby="pg-calls">
      <h2 id="pg-calls" className="pg-h2">
        Tool calls
      </h2>
      {journal.isPending ? (
        <p className="muted">Loading…</p>
      ) : journal.isError ? (
        <p className="muted">
          {isMissingRoute(journal.error)
            ? "This server does not record execution journals, so the calls cannot be shown."
            : describeError(journal.error)}
        </p>
      ) : (
        <JournalTable calls={journal.data.calls} />
      )}
    </section>
  );
}
