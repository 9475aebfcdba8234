// `/`: every integration with its tool count and connection health, a filter, the Add menu and
// the agent setup card. Three requests in all: integrations, connections, tools (no N+1).

import * as DropdownMenu from "@radix-ui/react-dropdown-menu";
import { useMemo, useState } from "react";
import { Link, useLocation } from "wouter";
import { describeError } from "../api/http";
import { useIntegrations } from "../api/integrations";
import type { Integration } from "../api/types";

type ConnectionCounts = NonNullable<Integration["connections"]>;
import { ConnectAgent } from "../components/connect-agent";
import "./integrations.css";

export const KIND_LABEL: Record<string, string> = { mcp: "MCP", openapi: "OpenAPI", graphql: "GraphQL" };

export function AddMenu() {
  const [, navigate] = useLocation();
  return (
    <DropdownMenu.Root>
      <DropdownMenu.Trigger asChild>
        <button type="button" className="primary">
          Add integration ▾
        </button>
      </DropdownMenu.Trigger>
      <DropdownMenu.Portal>
        <DropdownMenu.Content className="menu-content" align="end" sideOffset={4}>
          <DropdownMenu.Item className="menu-item" onSelect={() => navigate("/integrations/add/mcp")}>
            MCP server
          </DropdownMenu.Item>
          <DropdownMenu.Item className="menu-item" onSelect={() => navigate("/integrations/add/openapi")}>
            OpenAPI spec
          </DropdownMenu.Item>
          <DropdownMenu.Item className="menu-item" onSelect={() => navigate("/integrations/add/graphql")}>
            GraphQL endpoint
          </DropdownMenu.Item>
        </DropdownMenu.Content>
      </DropdownMenu.Portal>
    </DropdownMenu.Root>
  );
}

/** healthy / expired+degraded / never checked, as a row of dots (the list's own counts). */
export function HealthSummary({ counts }: { counts: ConnectionCounts | undefined }) {
  const ok = counts?.healthy ?? 0;
  const bad = counts?.failing ?? 0;
  const unknown = counts?.unchecked ?? 0;
  const total = ok + bad + unknown;
  if (total === 0) return <span className="muted">No connections</span>;
  const parts: string[] = [];
  if (ok) parts.push(`${ok} healthy`);
  if (bad) parts.push(`${bad} failing`);
  if (unknown) parts.push(`${unknown} not checked`);
  return (
    <span className="health-summary" aria-label={parts.join(", ")}>
      {ok > 0 && (
        <span>
          <span className="dot ok" aria-hidden /> {ok}
        </span>
      )}
      {bad > 0 && (
        <span>
          <span className="dot danger" aria-hidden /> {bad}
        </span>
      )}
      {unknown > 0 && (
        <span>
          <span className="dot" aria-hidden /> {unknown}
        </span>
      )}
      <span className="muted">
        {total} connection{total === 1 ? "" : "s"}
      </span>
    </span>
  );
}

export default function IntegrationsPage() {
  // One request: the list carries each integration's tool count and connection health.
  const integrations = useIntegrations();
  const [filter, setFilter] = useState("");

  const shown = useMemo(() => {
    const q = filter.trim().toLowerCase();
    const list = integrations.data ?? [];
    if (!q) return list;
    return list.filter((i) =>
      [i.name, i.slug, i.kind, i.description ?? "", i.displayUrl ?? ""].some((s) => s.toLowerCase().includes(q)),
    );
  }, [integrations.data, filter]);

  const total = integrations.data?.length ?? 0;

  return (
    <section className="page">
      <div className="page-header">
        <h1>Integrations</h1>
        <AddMenu />
      </div>
      <div className="int-layout">
        <div className="stack">
          {integrations.isError && (
            <p className="form-top-error" role="alert">
              {describeError(integrations.error)}
            </p>
          )}
          {integrations.isPending && <p className="muted" role="status">Loading integrations…</p>}
          {integrations.isSuccess && total === 0 && (
            <div className="card empty">
              <h2>No integrations yet</h2>
              <p className="muted">
                Add an MCP server, an OpenAPI spec or a GraphQL endpoint once; every agent connected to Executor can
                then call its tools.
              </p>
              <div className="row" style={{ justifyContent: "center" }}>
                <Link href="/integrations/add/mcp" className="button">
                  Add MCP server
                </Link>
                <Link href="/integrations/add/openapi" className="button">
                  Add OpenAPI spec
                </Link>
                <Link href="/integrations/add/graphql" className="button">
                  Add GraphQL endpoint
                </Link>
              </div>
            </div>
          )}
          {total > 0 && (
            <>
              <div className="field int-search">
                <label htmlFor="integration-filter">Filter integrations</label>
                <input
                  id="integration-filter"
                  type="search"
                  placeholder="Name, slug or kind"
                  value={filter}
                  onChange={(e) => setFilter(e.target.value)}
                />
              </div>
              <table className="int-table">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Tools</th>
                    <th scope="col">Connections</th>
                  </tr>
                </thead>
                <tbody>
                  {shown.map((i) => (
                    <tr key={i.slug}>
                      <td>
                        <Link href={`/integrations/${encodeURIComponent(i.slug)}`}>{i.name}</Link>{" "}
                        <code className="muted">{i.slug}</code>
                        {i.description && i.description !== i.name && <span className="int-desc">{i.description}</span>}
                      </td>
                      <td>
                        <span className="badge">{KIND_LABEL[i.kind] ?? i.kind}</span>
                      </td>
                      <td>
                        {i.toolCount ? (
                          i.toolCount
                        ) : (
                          // Tools are listed through a connection.
                          <span className="muted" title="Tools are listed once the integration has a connection">
                            —
                          </span>
                        )}
                      </td>
                      <td>
                        <HealthSummary counts={i.connections} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {shown.length === 0 && <p className="muted">No integration matches “{filter}”.</p>}
            </>
          )}
        </div>
        <ConnectAgent />
      </div>
    </section>
  );
}
