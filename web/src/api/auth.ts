// How this browser is signed in. On the local server (`executor web`): a bearer token, taken once
// from the `?_token=` link the server prints, kept in this browser and sent with every API call.
// On the team server (`executor serve`): an HttpOnly session cookie the browser sends by itself, so
// no token is kept or sent; a 401 there means "sign in", not "paste the token".

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
  // The team server's cookie is the credential; a token left over from a local server is not.
  if (isTeam()) return {};
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

// ---- which server this is -----------------------------------------------------------------

export type AuthMode = "local" | "team";

export interface ServerMode {
  mode: AuthMode;
  /** The team server's organisation has no member yet: the first sign-up becomes its owner. */
  needsSetup: boolean;
}

let current: ServerMode = { mode: "local", needsSetup: false };

/**
 * Asks `GET /api/setup-status`: the team server answers it with JSON (it is public there); the
 * local server has no such route (401 without the token, 404 with it). Anything but a 200 with a
 * boolean `needsSetup` is the local server, so a local console behaves exactly as before. Sent
 * without the token: the local server is not told anything it does not need. Runs once, before
 * the router mounts.
 */
export async function detectMode(fetcher: typeof fetch = fetch): Promise<ServerMode> {
  try {
    const response = await fetcher("/api/setup-status", { headers: { accept: "application/json" }, credentials: "same-origin" });
    const type = response.headers.get("content-type") ?? "";
    if (response.status === 200 && type.includes("json")) {
      const body: unknown = await response.json();
      const needs = (body as { needsSetup?: unknown } | null)?.needsSetup;
      if (typeof needs === "boolean") current = { mode: "team", needsSetup: needs };
    }
  } catch {
    // unreachable or not JSON: the local console, whose own requests will say what is wrong
  }
  return current;
}

export const isTeam = (): boolean => current.mode === "team";
export const needsSetup = (): boolean => current.needsSetup;

/** For tests: set the mode without a server. */
export function setModeForTest(mode: ServerMode): void {
  current = mode;
}

/** The team server's pages a signed-out browser may show; a 401 on them is an answer, not a cue. */
export function isPublicPath(pathname: string): boolean {
  return pathname === "/login" || pathname === "/setup" || pathname.startsWith("/join/");
}

/**
 * Where to go after signing in: only a path on this origin (`/…`, never `//host` or `/\host`,
 * which browsers read as another host), never the sign-in page itself; else the console's home.
 */
export function safeReturnTo(raw: string | null | undefined, origin = "http://console.invalid"): string {
  if (!raw || !raw.startsWith("/") || raw.startsWith("//") || raw.startsWith("/\\")) return "/";
  // Control characters and backslashes can turn a path into a host once the browser normalises it.
  if (/[\u0000-\u001f\u007f\\]/.test(raw)) return "/";
  let url: URL;
  try {
    url = new URL(raw, origin);
  } catch {
    return "/";
  }
  if (url.origin !== new URL(origin).origin) return "/";
  if (isPublicPath(url.pathname)) return "/";
  return url.pathname + url.search + url.hash;
}

/** The sign-in page, coming back to `returnTo` (a path on this origin) afterwards. */
export function loginPath(returnTo: string): string {
  const back = safeReturnTo(returnTo);
  return back === "/" ? "/login" : `/login?returnTo=${encodeURIComponent(back)}`;
}
