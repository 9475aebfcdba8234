// The local server's bearer token: taken once from the `?_token=` link the server prints, kept in
// this browser, and sent with every API call. The team server (a later issue) swaps this module's
// `authHeader` for its own sign-in; nothing else in the console reads the token.

const KEY = "executor.authToken";
const LEGACY_KEY = "executor:token"; // the pre-console pages stored it here

/** Moves a `?_token=` from the address bar into storage. Runs before the router mounts. */
export function bootstrapToken(): void {
  const url = new URL(window.location.href);
  const fromLink = url.searchParams.get("_token");
  if (fromLink) {
    storeToken(fromLink);
    url.searchParams.delete("_token");
    window.history.replaceState(window.history.state, "", url.pathname + url.search + url.hash);
  } else if (!localStorage.getItem(KEY)) {
    const legacy = localStorage.getItem(LEGACY_KEY);
    if (legacy) storeToken(legacy);
  }
}

export function token(): string | null {
  return localStorage.getItem(KEY);
}

export function storeToken(value: string): void {
  localStorage.setItem(KEY, value.trim());
  localStorage.setItem(LEGACY_KEY, value.trim());
}

export function forgetToken(): void {
  localStorage.removeItem(KEY);
  localStorage.removeItem(LEGACY_KEY);
}

export function authHeader(): Record<string, string> {
  const t = token();
  return t ? { authorization: `Bearer ${t}` } : {};
}

type Listener = () => void;
const listeners = new Set<Listener>();

/** Called by the HTTP layer on a 401: the shell shows the token prompt. */
export function reportUnauthorized(): void {
  for (const l of listeners) l();
}

export function onUnauthorized(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}
