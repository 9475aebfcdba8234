// One tool: description, schemas, TypeScript, its policy with a menu, and Run (the console
// user is the approver, so runs auto-approve).

import * as Tabs from "@radix-ui/react-tabs";
import { useMutation } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link } from "wouter";
import { describeError } from "../api/http";
import { execute, toolPath, useToolSchema, type ExecutionOutcome, type Tool } from "../api/integrations";
import { useGlobalRules, type Policy } from "../api/policies";
import { ownerLabel } from "../api/team";
import { SchemaForm, validateAgainst, type JsonSchema } from "./schema-form";
import { CopyButton } from "./connect-agent";
import { agnosticPattern, effectiveDecision, PolicyBadge, PolicyMenu } from "./policy-menu";

function typeScriptOf(schema: {
  inputTypeScript?: string;
  outputTypeScript?: string;
  typeScriptDefinitions?: string | Record<string, string>;
}): string {
  const parts = [`type Input = ${schema.inputTypeScript ?? "{}"};`, `type Output = ${schema.outputTypeScript ?? "unknown"};`];
  const defs = schema.typeScriptDefinitions;
  if (typeof defs === "string" && defs.trim()) parts.push(defs);
  else if (defs && typeof defs === "object") parts.push(...Object.values(defs));
  return parts.join("\n\n");
}

function RunResult({ outcome }: { outcome: ExecutionOutcome }) {
  if (outcome.status === "paused") {
    return (
      <div className="result-box warn" role="status">
        <strong>Waiting for an answer</strong>
        <pre>{outcome.text}</pre>
        <Link href="/executions">Open executions</Link>
      </div>
    );
  }
  // Tool calls answer `{ok, data}` or `{ok:false, error}` inside the execution's result.
  const structured = outcome.structured as { result?: unknown } | null;
  const result = structured && typeof structured === "object" && "result" in structured ? structured.result : structured;
  const toolFailed = !!result && typeof result === "object" && (result as { ok?: unknown }).ok === false;
  const failed = outcome.isError || toolFailed;
  const error = toolFailed ? (result as { error?: { message?: string; code?: string } }).error : undefined;
  return (
    <div className={`result-box stack ${failed ? "danger" : "ok"}`} role="status" data-testid="run-result">
      <strong>{failed ? "Error" : "Success"}</strong>
      {error?.message && (
        <p className="error">
          {error.code ? <code>{error.code}</code> : null} {error.message}
        </p>
      )}
      {result !== undefined ? <pre>{JSON.stringify(result, null, 2)}</pre> : <pre>{outcome.text}</pre>}
    </div>
  );
}

export function ToolDetail({
  integration,
  instances,
  policies,
}: {
  integration: string;
  /** The same tool under each connection. */
  instances: Tool[];
  policies: Policy[] | undefined;
}) {
  const [connection, setConnection] = useState(0);
  const tool = instances[Math.min(connection, instances.length - 1)]!;
  const schema = useToolSchema(tool.address);
  const [args, setArgs] = useState<unknown>({});
  const [showAll, setShowAll] = useState(false);
  useEffect(() => {
    setArgs({});
    setConnection(0);
    run.reset();
    // a different tool starts from empty arguments
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [tool.name]);

  const run = useMutation({
    mutationFn: () => execute(`return await tools[${JSON.stringify(toolPath(tool))}](${JSON.stringify(args ?? {})});`),
  });

  const inputSchema = schema.data?.inputSchema as JsonSchema | undefined;
  const problems = inputSchema ? validateAgainst(inputSchema, args) : [];
  const decision = policies ? effectiveDecision(policies, toolPath(tool), !!tool.requiresApproval) : undefined;
  const pattern = agnosticPattern(integration, tool.name, false);
  const rules = useGlobalRules(policies ?? []);
  const description = schema.data?.description ?? tool.description ?? "";
  const long = description.length > 280;

  return (
    <article className="card stack tool-detail" aria-labelledby="tool-title" data-testid="tool-detail">
      <div className="page-header">
        <h2 id="tool-title" className="mono">
          {tool.name}
        </h2>
        <div className="row">
          {decision && <PolicyBadge decision={decision} />}
          {policies && (
            <PolicyMenu
              pattern={pattern}
              rules={rules}
              triggerLabel="Change policy"
              trigger={<button type="button">Policy ▾</button>}
            />
          )}
        </div>
      </div>
      <div className="row">
        <code className="muted">{tool.address}</code>
        <CopyButton text={tool.address} label="Copy id" />
      </div>
      {description && (
        <p>
          {long && !showAll ? `${description.slice(0, 280)}…` : description}{" "}
          {long && (
            <button type="button" className="linkish" onClick={() => setShowAll(!showAll)}>
              {showAll ? "Show less" : "Show more"}
            </button>
          )}
        </p>
      )}
      {tool.requiresApproval && <p className="field-hint">The integration marks this tool as needing approval by default.</p>}
      {schema.isError && (
        <p className="field-error" role="alert">
          {describeError(schema.error)}
        </p>
      )}
      <Tabs.Root defaultValue="run">
        <Tabs.List aria-label="Tool views">
          <Tabs.Trigger value="run">Run</Tabs.Trigger>
          <Tabs.Trigger value="schema">Schema</Tabs.Trigger>
          <Tabs.Trigger value="typescript">TypeScript</Tabs.Trigger>
        </Tabs.List>
        <Tabs.Content value="schema" className="stack">
          <h3>Input</h3>
          <pre>{schema.data ? JSON.stringify(schema.data.inputSchema ?? {}, null, 2) : "…"}</pre>
          <h3>Output</h3>
          <pre>{schema.data ? JSON.stringify(schema.data.outputSchema ?? "not declared", null, 2) : "…"}</pre>
        </Tabs.Content>
        <Tabs.Content value="typescript">
          <pre data-testid="tool-typescript">{schema.data ? typeScriptOf(schema.data) : "…"}</pre>
        </Tabs.Content>
        <Tabs.Content value="run" className="stack">
          {instances.length > 1 && (
            <div className="field">
              <label htmlFor="run-connection">Connection</label>
              <select id="run-connection" value={connection} onChange={(e) => setConnection(Number(e.target.value))}>
                {instances.map((t, i) => (
                  <option key={t.address} value={i}>
                    {ownerLabel(t.owner)} · {t.connection}
                  </option>
                ))}
              </select>
            </div>
          )}
          {schema.data ? (
            <SchemaForm schema={inputSchema} value={args} onChange={setArgs} idPrefix={`run-${tool.name}`} />
          ) : (
            <p className="muted">Loading the schema…</p>
          )}
          {problems.length > 0 && <p className="field-hint">{problems.join(" · ")}</p>}
          <div className="row">
            <button
              type="button"
              className="primary"
              disabled={run.isPending || !schema.data || problems.length > 0}
              onClick={() => run.mutate()}
            >
              {run.isPending ? "Running…" : "Run"}
            </button>
            <span className="field-hint">Runs now, as you: no approval is asked.</span>
          </div>
          {run.isError && (
            <p className="form-top-error" role="alert">
              {describeError(run.error)}
            </p>
          )}
          {run.data && <RunResult outcome={run.data} />}
        </Tabs.Content>
      </Tabs.Root>
    </article>
  );
}
