// `/toolkits`: every toolkit as a tile (name, slug, connection count), the create dialog and the
// empty state. One request: the list carries each toolkit's counts. The local server is
// org-only, so there is one unlabelled shelf; on the team server each tile says whose it is.

import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { Link, useLocation } from "wouter";
import { ApiError, describeError } from "../api/http";
import { ownerLabel, useOwnerRights, type Owner } from "../api/team";
import { createToolkit, useRememberToolkit, useToolkits, type Toolkit } from "../api/toolkits";
import { Modal, DialogActions } from "../components/dialogs";
import { ErrorNote, TextField } from "../components/fields";
import { OwnerChoice } from "../components/owner-choice";
import "./integrations.css";
import "./toolkits.css";

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** What a slug derived from `name` looks like (the server derives the real one). */
export function slugPreview(name: string): string {
  return name
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 63)
    .replace(/-+$/, "");
}

export function CreateToolkitDialog({ open, onOpenChange }: { open: boolean; onOpenChange: (o: boolean) => void }) {
  const [, navigate] = useLocation();
  const remember = useRememberToolkit();
  const [name, setName] = useState("");
  const [slug, setSlug] = useState("");
  const [touched, setTouched] = useState(false);
  const rights = useOwnerRights();
  const [owner, setOwner] = useState<Owner>(rights.defaultOwner);
  const create = useMutation({
    mutationFn: () => createToolkit({ name: name.trim(), slug: slug.trim() || undefined, owner }),
    onSuccess: (toolkit) => {
      remember(toolkit);
      onOpenChange(false);
      navigate(`/toolkits/${toolkit.slug}`);
    },
  });
  const error = create.error;
  const message = error ? describeError(error) : null;
  const slugError = error instanceof ApiError && /slug/i.test(error.message) ? message : null;
  const nameServerError = error instanceof ApiError && /name/i.test(error.message) && !slugError ? message : null;
  const nameError = touched && !name.trim() ? "Give the toolkit a name." : nameServerError;
  const formError = message && !slugError && !nameServerError ? message : null;

  const submit = (e: FormEvent) => {
    e.preventDefault();
    setTouched(true);
    if (!name.trim()) return;
    create.mutate();
  };

  return (
    <Modal
      open={open}
      onOpenChange={(o) => {
        if (o) {
          setName("");
          setSlug("");
          setTouched(false);
          setOwner(rights.defaultOwner);
          create.reset();
        }
        onOpenChange(o);
      }}
      title="New toolkit"
      describedBy="create-toolkit-desc"
    >
      <p id="create-toolkit-desc" className="muted">
        Start empty, then add the connections whose tools this toolkit's agents may use.
      </p>
      <form className="stack" onSubmit={submit} noValidate>
        <ErrorNote error={formError} />
        <TextField
          id="toolkit-name"
          label="Name"
          value={name}
          placeholder="Support tools"
          onChange={(v) => {
            setName(v);
            create.reset();
          }}
          error={nameError}
        />
        <TextField
          code
          id="toolkit-slug"
          label="Slug (optional)"
          value={slug}
          placeholder={slugPreview(name) || "support-tools"}
          onChange={(v) => {
            setSlug(v);
            create.reset();
          }}
          error={slugError}
          hint={
            <>
              Part of the MCP URL <code>/mcp/toolkits/&lt;slug&gt;</code>: lowercase letters, digits and hyphens. Left
              empty, it is made from the name.
            </>
          }
        />
        <OwnerChoice value={owner} onChange={setOwner} what="toolkits" />
        <DialogActions label="Create toolkit" busyLabel="Creating…" busy={create.isPending} />
      </form>
    </Modal>
  );
}

function ToolkitTile({ toolkit }: { toolkit: Toolkit }) {
  const { team } = useOwnerRights();
  return (
    <li className="card toolkit-tile">
      <Link href={`/toolkits/${toolkit.slug}`} className="toolkit-tile-link">
        <span className="toolkit-tile-name">{toolkit.name}</span>
      </Link>
      <code className="muted">{toolkit.slug}</code>
      <span className="row toolkit-tile-meta">
        <span>{plural(toolkit.connectionCount, "connection")}</span>
        {toolkit.policyCount > 0 && <span className="muted">· {plural(toolkit.policyCount, "rule")}</span>}
        {team && <span className="badge">{ownerLabel(toolkit.owner)}</span>}
      </span>
    </li>
  );
}

export default function ToolkitsPage() {
  const toolkits = useToolkits();
  const [creating, setCreating] = useState(false);
  const list = toolkits.data ?? [];
  return (
    <section className="page toolkits-page">
      <div className="page-header">
        <h1>
          Toolkits{" "}
          {toolkits.isSuccess && (
            <span className="muted toolkit-count">
              {list.length}
            </span>
          )}
        </h1>
        {list.length > 0 && (
          <button type="button" className="primary" onClick={() => setCreating(true)}>
            New toolkit
          </button>
        )}
      </div>
      <p className="muted toolkits-lede">
        A toolkit is a named allow-list of tools with its own MCP endpoint, so each agent sees only the tools it needs.
      </p>
      <ErrorNote error={toolkits.error} />
      {toolkits.isPending && (
        <p className="muted" role="status">
          Loading toolkits…
        </p>
      )}
      {toolkits.isSuccess && list.length === 0 && (
        <div className="card empty">
          <h2>No toolkits yet</h2>
          <p className="muted">
            Make one for each agent: pick the connections whose tools it may call, and point the agent at the toolkit's
            MCP URL instead of <code>/mcp</code>.
          </p>
          <div className="row" style={{ justifyContent: "center" }}>
            <button type="button" className="primary" onClick={() => setCreating(true)}>
              New toolkit
            </button>
          </div>
        </div>
      )}
      {list.length > 0 && (
        <ul className="toolkit-grid" aria-label="Toolkits">
          {list.map((t) => (
            <ToolkitTile key={t.id} toolkit={t} />
          ))}
        </ul>
      )}
      <CreateToolkitDialog open={creating} onOpenChange={setCreating} />
    </section>
  );
}
