import { useState, type FormEvent } from "react";
import { storeToken } from "../api/auth";

/** Shown when the API answers 401: the token this browser holds is missing or stale. */
export function TokenGate() {
  const [value, setValue] = useState("");
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!value.trim()) return;
    storeToken(value);
    window.location.reload();
  };
  return (
    <main className="gate">
      <form className="card" onSubmit={submit}>
        <h1>Authentication required</h1>
        <p>
          Open the link <code>executor web</code> printed (it ends in <code>?_token=…</code>), or paste the token
          from <code>~/.executor/server-control/auth.json</code>.
        </p>
        <label htmlFor="token-input">API token</label>
        <input
          id="token-input"
          type="password"
          autoComplete="off"
          value={value}
          onChange={(e) => setValue(e.target.value)}
          required
        />
        <button type="submit" className="primary">
          Connect
        </button>
      </form>
    </main>
  );
}
