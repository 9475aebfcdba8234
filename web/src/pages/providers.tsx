// /providers — where credential values are kept. Each provider can list the entries it holds.

import { useState } from "react";
import { describeError } from "../api/http";
import { useProviderItems, useProviders } from "../api/providers";
import "./exec-common.css";
import "./settings.css";

const ABOUT: Record<string, string> = {
  vault: "Encrypted in this server's own database (the default place new credentials are written).",
  file: "A JSON file in the data directory (auth.json), for values you manage by hand.",
  keychain: "The operating system's keychain.",
};

export default function ProvidersPage() {
  const providers = useProviders();
  const [open, setOpen] = useState<string | null>(null);
  return (
    <section className="page">
      <h1>Providers</h1>
      <p className="muted">
        Connections never store a secret in plain text: they point at an entry in one of these providers.
      </p>
      {providers.isPending ? (
        <p className="muted" role="status">Loading…</p>
      ) : providers.isError ? (
        <p className="error" role="alert">{describeError(providers.error)}</p>
      ) : providers.data.length === 0 ? (
        <p className="muted">No providers are registered on this server.</p>
      ) : (
        <ul className="plain-list stack">
          {providers.data.map((key) => (
            <li key={key} className="card">
              <div className="page-header">
                <div>
                  <h2 className="settings-h2"><code>{key}</code></h2>
                  <p className="muted settings-p">{ABOUT[key] ?? "A secret provider."}</p>
                </div>
                <button type="button" aria-expanded={open === key} onClick={() => setOpen(open === key ? null : key)}>
                  {open === key ? "Hide entries" : "Show entries"}
                </button>
              </div>
              {open === key && <Items providerKey={key} />}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Items({ providerKey }: { providerKey: string }) {
  const items = useProviderItems(providerKey);
  if (items.isPending) return <p className="muted" role="status">Loading entries…</p>;
  if (items.isError) return <p className="error" role="alert">{describeError(items.error)}</p>;
  if (items.data.length === 0) return <p className="muted">No entries.</p>;
  return (
    <table>
      <thead><tr><th scope="col">Name</th><th scope="col">Id</th></tr></thead>
      <tbody>
        {items.data.map((i) => (
          <tr key={i.id}><td>{i.name}</td><td><code>{i.id}</code></td></tr>
        ))}
      </tbody>
    </table>
  );
}
