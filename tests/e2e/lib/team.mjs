// Harness for the team server (`executor serve`, docs/team/API.md): start / stop / restart the
// binary on a data dir, sign people up and in, call the API as one of them (session bearer,
// cookie, API key), OAuth 2.1 for MCP clients (PKCE, consent through the API, token exchange),
// an SDK `OAuthClientProvider` that needs no browser, and a plaintext scan of a directory.
//
// The server is started as
//   EXECUTOR_BIN serve --port P --hostname 127.0.0.1
// with EXECUTOR_DATA_DIR, EXECUTOR_WEB_BASE_URL=http://127.0.0.1:P, EXECUTOR_ORG_NAME=Acme and
// EXECUTOR_ORG_SLUG=acme, and is ready once it printed `Executor is running at http://…` and
// answers GET /api/health.
import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import { createHash, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawnBinary, freePort, makeDataDir, rawRequest, show, EXECUTOR_BIN } from "./executor.mjs";

export const ORG = { name: "Acme", slug: "acme" };
const READY_RE = /Executor is running at (https?:\/\/[^\s"'<>]+)/;

/**
 * Start `executor serve` on `port` (a free one unless given) and `dataDir` (a fresh one unless
 * given). Returns the instance: {port, baseUrl, dataDir, request, as, stop, kill, restart, logs}.
 * @param {{dataDir?: string, port?: number, env?: object, readyTimeoutMs?: number, ownsDataDir?: boolean}} opts
 */
export async function startTeamServer(opts = {}) {
  const ownsDataDir = opts.ownsDataDir ?? !opts.dataDir;
  const dataDir = opts.dataDir ?? (await makeDataDir("executor-team-"));
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = opts.port ?? (await freePort());
    try {
      return await startOnce({ ...opts, dataDir, port, ownsDataDir });
    } catch (e) {
      lastError = e;
      if (opts.port !== undefined || !/address already in use|EADDRINUSE|AddrInUse/i.test(String(e?.message))) break;
    }
  }
  if (ownsDataDir) await fsp.rm(dataDir, { recursive: true, force: true }).catch(() => {});
  throw lastError;
}

async function startOnce({ dataDir, port, ownsDataDir, env = {}, readyTimeoutMs = 30_000 }) {
  const baseUrl = `http://127.0.0.1:${port}`;
  const args = ["serve", "--port", String(port), "--hostname", "127.0.0.1"];
  const fullEnv = {
    EXECUTOR_DATA_DIR: dataDir,
    EXECUTOR_WEB_BASE_URL: baseUrl,
    EXECUTOR_ORG_NAME: ORG.name,
    EXECUTOR_ORG_SLUG: ORG.slug,
    // The tests' upstream servers listen on loopback, which the team server refuses by default
    // (team-network.test.mjs starts one with "0" to see the refusal).
    EXECUTOR_ALLOW_PRIVATE_NETWORK: "1",
    ...env,
  };
  // Nothing from the test runner's environment may choose another server, key or admin.
  for (const k of ["EXECUTOR_API_KEY", "EXECUTOR_AUTH_TOKEN", "EXECUTOR_DATABASE_URL", "EXECUTOR_BOOTSTRAP_ADMIN_EMAIL", "EXECUTOR_BOOTSTRAP_ADMIN_PASSWORD"]) {
    if (!(k in env) && process.env[k] !== undefined) fullEnv[k] = "";
  }
  const proc = spawnBinary(args, { env: fullEnv, cwd: dataDir });
  const describe = () =>
    `\n--- command: ${EXECUTOR_BIN} ${args.join(" ")}\n--- stdout:\n${proc.out().slice(-4000)}\n--- stderr:\n${proc.err().slice(-4000)}`;
  let exitInfo = null;
  proc.exited.then((x) => (exitInfo = x));

  const deadline = Date.now() + readyTimeoutMs;
  let healthySince = null;
  let ready = false;
  while (Date.now() < deadline) {
    if (exitInfo) throw new Error(`executor serve exited before becoming ready (code=${exitInfo.code}, signal=${exitInfo.signal})${describe()}`);
    const printed = READY_RE.test(proc.out());
    let healthy = false;
    try {
      healthy = (await rawRequest(port, "GET", "/api/health", { timeoutMs: 2000 })).status === 200;
    } catch {}
    if (healthy && printed) {
      ready = true;
      break;
    }
    if (healthy) {
      healthySince ??= Date.now();
      // Serving but the ready line never came: accept after 3 s (reported in `readyLine`).
      if (Date.now() - healthySince > 3000) {
        ready = true;
        break;
      }
    }
    await sleep(100);
  }
  if (!ready) {
    proc.child.kill("SIGKILL");
    await proc.exited;
    throw new Error(`executor serve was not ready within ${readyTimeoutMs} ms${describe()}`);
  }

  const inst = {
    port,
    baseUrl,
    dataDir,
    env,
    child: proc.child,
    stdout: proc.out,
    stderr: proc.err,
    exited: proc.exited,
    /** The URL of the `Executor is running at …` line, or null if it was not printed. */
    readyLine: READY_RE.exec(proc.out())?.[1] ?? null,
    logs: (n = 3000) => `--- executor stdout (tail):\n${proc.out().slice(-n)}\n--- executor stderr (tail):\n${proc.err().slice(-n)}`,
    /**
     * One HTTP request. `body` is JSON-encoded, `form` URL-encoded; `token` is sent as the
     * bearer, `cookie` as `executor_session=<cookie>` (a full `k=v` string is sent verbatim).
     * @returns {Promise<{status:number, headers:object, text:string, body:any}>}
     */
    request: (method, urlPath, { body, form, raw, token, cookie, headers = {}, timeoutMs = 60_000 } = {}) => {
      const h = { ...headers };
      let payload;
      if (form !== undefined) {
        payload = new URLSearchParams(form).toString();
        h["content-type"] ??= "application/x-www-form-urlencoded";
      } else if (raw !== undefined) {
        payload = raw;
      } else if (body !== undefined) {
        payload = JSON.stringify(body);
        h["content-type"] ??= "application/json";
      }
      if (payload !== undefined) h["content-length"] = Buffer.byteLength(payload);
      if (token) h.authorization = `Bearer ${token}`;
      if (cookie) h.cookie = cookie.includes("=") ? cookie : `executor_session=${cookie}`;
      return rawRequest(port, method, urlPath, { body: payload, headers: h, timeoutMs });
    },
    /** `{api(method, path, body, opts), logs}` signed in by `token` (the shape `addMcpIntegration` takes). */
    as: (token) => ({
      api: (method, urlPath, body, o = {}) => inst.request(method, urlPath, { ...o, body, token }),
      logs: inst.logs,
    }),
    /** SIGTERM and wait (SIGKILL after `timeoutMs`). */
    stop: async ({ signal = "SIGTERM", timeoutMs = 15_000 } = {}) => {
      if (exitInfo) return { ...exitInfo, timedOut: false };
      proc.child.kill(signal);
      const timer = new AbortController();
      const t = sleep(timeoutMs, "timeout", { signal: timer.signal }).catch(() => "aborted");
      const r = await Promise.race([proc.exited, t]);
      timer.abort();
      if (r === "timeout") {
        proc.child.kill("SIGKILL");
        return { ...(await proc.exited), timedOut: true };
      }
      return { ...r, timedOut: false };
    },
    /** Kill hard; removes the data dir if this call created it (or `removeDataDir`). */
    kill: async ({ removeDataDir = ownsDataDir } = {}) => {
      if (!exitInfo) {
        try {
          proc.child.kill("SIGKILL");
        } catch {}
        await proc.exited;
      }
      if (removeDataDir) await fsp.rm(dataDir, { recursive: true, force: true }).catch(() => {});
    },
    /** Stop (SIGTERM) and start again on the same data dir and port (so BASE is unchanged). */
    restart: async (more = {}) => {
      await inst.stop();
      // The port was just released; retry a moment in case the OS has not let go of it.
      let lastError;
      for (let i = 0; i < 10; i++) {
        try {
          return await startTeamServer({ dataDir, port, env: { ...env, ...(more.env ?? {}) }, ownsDataDir });
        } catch (e) {
          lastError = e;
          if (!/address already in use|EADDRINUSE|AddrInUse/i.test(String(e?.message))) throw e;
          await sleep(300);
        }
      }
      throw lastError;
    },
  };
  return inst;
}

// ---- people ---------------------------------------------------------------------------------------

export const uniqueEmail = (prefix = "user") => `${prefix}-${randomBytes(4).toString("hex")}@example.com`;
export const newPassword = () => `pw-${randomBytes(9).toString("base64url")}!`;

/** The `executor_session` cookie value of a response's `set-cookie`, and its attributes. */
export function sessionCookie(res) {
  const raw = res.headers?.["set-cookie"];
  const all = Array.isArray(raw) ? raw : raw ? [raw] : [];
  const line = all.find((c) => /^\s*executor_session=/i.test(c));
  if (!line) return null;
  const [pair, ...attrs] = line.split(";").map((s) => s.trim());
  const value = pair.slice(pair.indexOf("=") + 1);
  const attributes = {};
  for (const a of attrs) {
    const i = a.indexOf("=");
    const k = (i < 0 ? a : a.slice(0, i)).toLowerCase();
    attributes[k] = i < 0 ? true : a.slice(i + 1);
  }
  return { line, value, attributes };
}

export const signUpRaw = (server, body, opts = {}) => server.request("POST", "/api/auth/sign-up/email", { body, ...opts });
export const signInRaw = (server, email, password, opts = {}) => server.request("POST", "/api/auth/sign-in/email", { body: { email, password }, ...opts });

/**
 * A signed-in person: {user, token, email, password, name, cookie, api, execute}.
 * `api(method, path, body, opts)` sends the session bearer (or `opts.token`).
 */
export function personOf(server, res, { email, password, name }) {
  const token = res.body?.token;
  const p = {
    server,
    user: res.body?.user,
    id: res.body?.user?.id,
    token,
    email,
    password,
    name,
    cookie: sessionCookie(res)?.value,
    api: (method, urlPath, body, o = {}) => server.request(method, urlPath, { ...o, body, token: o.token ?? p.token }),
    /** POST /api/executions {code, autoApprove}. */
    execute: (code, { autoApprove = true, token: t } = {}) => server.request("POST", "/api/executions", { body: { code, autoApprove }, token: t ?? p.token }),
    /** `{api, logs}` for `addMcpIntegration`. */
    get ex() {
      return { api: p.api, logs: server.logs };
    },
  };
  return p;
}

/** Sign up and return the person; throws with the answer unless 200. */
export async function signUp(server, { name = "Someone", email = uniqueEmail(), password = newPassword(), inviteCode } = {}) {
  const res = await signUpRaw(server, { name, email, password, ...(inviteCode === undefined ? {} : { inviteCode }) });
  if (res.status !== 200 || typeof res.body?.token !== "string") {
    throw new Error(`sign-up ${email} failed: ${res.status} ${res.text.slice(0, 1000)}\n${server.logs()}`);
  }
  return personOf(server, res, { email, password, name });
}

/** Sign in (a new session) and return the person. */
export async function signIn(server, { email, password, name }) {
  const res = await signInRaw(server, email, password);
  if (res.status !== 200 || typeof res.body?.token !== "string") {
    throw new Error(`sign-in ${email} failed: ${res.status} ${res.text.slice(0, 1000)}\n${server.logs()}`);
  }
  return personOf(server, res, { email, password, name });
}

/** The owner creates an invite of `role`; returns the Invite. */
export async function createInvite(owner, { role = "member", label, expiresInDays } = {}) {
  const body = { role, ...(label === undefined ? {} : { label }), ...(expiresInDays === undefined ? {} : { expiresInDays }) };
  const res = await owner.api("POST", "/api/admin/invites", body);
  if (res.status !== 200 || typeof res.body?.code !== "string") throw new Error(`POST /api/admin/invites failed: ${res.status} ${res.text.slice(0, 1000)}`);
  return res.body;
}

/** A new person who joined with an invite of `role` made by `admin`. */
export async function invitePerson(server, admin, { role = "member", name = `A ${role}`, email = uniqueEmail(role) } = {}) {
  const invite = await createInvite(admin, { role });
  return signUp(server, { name, email, inviteCode: invite.code });
}

// ---- MCP -----------------------------------------------------------------------------------------

/** An SDK client connected to `BASE<pathname>` with `Authorization: Bearer <token>`. */
export async function mcpClient(server, token, { pathname = "/mcp", name = "e2e-team" } = {}) {
  const client = new Client({ name, version: "0.0.1" }, { capabilities: {} });
  const headers = token ? { authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.baseUrl}${pathname}`), { requestInit: { headers } }));
  return client;
}

/** A raw `initialize` POST to `/mcp…` with `token` (no SDK): {status, headers, body}. */
export function mcpInitialize(server, token, pathname = "/mcp") {
  return server.request("POST", pathname, {
    token,
    headers: { accept: "application/json, text/event-stream" },
    body: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } } },
  });
}

// ---- OAuth 2.1 for MCP clients --------------------------------------------------------------------

const b64url = (buf) => Buffer.from(buf).toString("base64url");

/** A PKCE pair (S256). */
export function pkce() {
  const verifier = b64url(randomBytes(32));
  const challenge = b64url(createHash("sha256").update(verifier).digest());
  return { verifier, challenge };
}

/** POST /api/auth/mcp/register. */
export function registerOAuthClient(server, { clientName = "e2e agent", redirectUris = ["http://127.0.0.1:9/callback"] } = {}) {
  return server.request("POST", "/api/auth/mcp/register", { body: { client_name: clientName, redirect_uris: redirectUris } });
}

/** GET /api/auth/mcp/authorize?<params> without following the redirect. */
export function authorizeRaw(server, params) {
  const q = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined)).toString();
  return server.request("GET", `/api/auth/mcp/authorize?${q}`, { headers: { accept: "text/html" } });
}

/** The consent request id of an authorize answer (302 to `/oauth/consent?request=<id>`), or null. */
export function consentRequestId(server, res) {
  if (res.status !== 302 && res.status !== 303) return null;
  const loc = res.headers.location;
  if (!loc) return null;
  const u = new URL(loc, server.baseUrl);
  if (u.pathname !== "/oauth/consent") return null;
  return u.searchParams.get("request");
}

/** POST /api/auth/mcp/token (form-encoded). */
export const tokenRequest = (server, form) => server.request("POST", "/api/auth/mcp/token", { form });

/**
 * A whole authorization-code grant for `/mcp` (or `resource`), approved by the person whose
 * session token is `sessionToken`. Returns {client, tokens, redirectUri, verifier}.
 */
export async function oauthGrant(server, sessionToken, { resource = `${server.baseUrl}/mcp`, clientName = "e2e agent", client } = {}) {
  const redirectUri = "http://127.0.0.1:9/callback";
  if (!client) {
    const reg = await registerOAuthClient(server, { clientName, redirectUris: [redirectUri] });
    if (reg.status !== 201) throw new Error(`register: ${reg.status} ${reg.text.slice(0, 500)}`);
    client = reg.body;
  }
  const { verifier, challenge } = pkce();
  const state = b64url(randomBytes(8));
  const auth = await authorizeRaw(server, {
    response_type: "code",
    client_id: client.client_id,
    redirect_uri: redirectUri,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state,
    scope: "mcp",
    resource,
  });
  const id = consentRequestId(server, auth);
  if (!id) throw new Error(`authorize: ${auth.status} ${show(auth.headers)} ${auth.text.slice(0, 500)}`);
  const ok = await server.request("POST", `/api/auth/mcp/requests/${encodeURIComponent(id)}`, { body: { approve: true }, token: sessionToken, headers: { origin: server.baseUrl } });
  if (ok.status !== 200 || typeof ok.body?.redirectTo !== "string") throw new Error(`consent: ${ok.status} ${ok.text.slice(0, 500)}`);
  const code = new URL(ok.body.redirectTo).searchParams.get("code");
  const tok = await tokenRequest(server, { grant_type: "authorization_code", code, code_verifier: verifier, redirect_uri: redirectUri, client_id: client.client_id, resource });
  if (tok.status !== 200) throw new Error(`token: ${tok.status} ${tok.text.slice(0, 500)}`);
  return { client, tokens: tok.body, redirectUri, verifier };
}

/**
 * An SDK `OAuthClientProvider` that needs no browser: `redirectToAuthorization(url)` follows the
 * authorization URL with fetch (no redirects followed), answers the consent request through the
 * API with `sessionToken` (the signed-in person in the browser would), and keeps the code the
 * redirect carries in `provider.code` for `transport.finishAuth(code)`.
 */
export class HeadlessOAuthProvider {
  constructor(server, sessionToken, { redirectUrl = "http://127.0.0.1:9/sdk-callback", clientName = "e2e SDK agent" } = {}) {
    this.server = server;
    this.sessionToken = sessionToken;
    this._redirectUrl = redirectUrl;
    this._clientName = clientName;
    this._client = undefined;
    this._tokens = undefined;
    this._verifier = undefined;
    this.code = undefined;
    this.redirects = [];
    this.consentRequests = [];
  }
  get redirectUrl() {
    return this._redirectUrl;
  }
  state() {
    this._state = b64url(randomBytes(8));
    return this._state;
  }
  get clientMetadata() {
    return { client_name: this._clientName, redirect_uris: [this._redirectUrl], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() {
    return this._client;
  }
  saveClientInformation(info) {
    this._client = info;
  }
  tokens() {
    return this._tokens;
  }
  saveTokens(tokens) {
    this._tokens = tokens;
  }
  saveCodeVerifier(v) {
    this._verifier = v;
  }
  codeVerifier() {
    if (!this._verifier) throw new Error("no code verifier saved");
    return this._verifier;
  }
  async redirectToAuthorization(url) {
    this.redirects.push(String(url));
    const res = await fetch(url, { redirect: "manual" });
    const loc = res.headers.get("location");
    if (!loc) throw new Error(`authorize did not redirect: ${res.status} ${(await res.text()).slice(0, 500)}`);
    const consent = new URL(loc, this.server.baseUrl);
    const id = consent.searchParams.get("request");
    if (consent.pathname !== "/oauth/consent" || !id) throw new Error(`authorize redirected elsewhere: ${loc}`);
    const view = await this.server.request("GET", `/api/auth/mcp/requests/${encodeURIComponent(id)}`, { token: this.sessionToken });
    this.consentRequests.push(view.body);
    const ok = await this.server.request("POST", `/api/auth/mcp/requests/${encodeURIComponent(id)}`, { body: { approve: true }, token: this.sessionToken, headers: { origin: this.server.baseUrl } });
    if (ok.status !== 200 || typeof ok.body?.redirectTo !== "string") throw new Error(`consent: ${ok.status} ${ok.text.slice(0, 500)}`);
    const back = new URL(ok.body.redirectTo);
    this.code = back.searchParams.get("code");
    this.returnedState = back.searchParams.get("state");
  }
}

// ---- files ----------------------------------------------------------------------------------------

/** Every regular file under `dir` (recursively). */
export function filesUnder(dir) {
  const out = [];
  const walk = (d) => {
    let ents;
    try {
      ents = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of ents) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) out.push(p);
    }
  };
  walk(dir);
  return out;
}

/**
 * Which of `needles` ({label: string}) occur in any file under `dir`, read as bytes (also as
 * UTF-16LE and base64, in case something stores them so). Returns [{label, file, form}].
 */
export function scanForPlaintext(dir, needles) {
  const found = [];
  const files = filesUnder(dir);
  for (const file of files) {
    let buf;
    try {
      buf = fs.readFileSync(file);
    } catch {
      continue;
    }
    for (const [label, value] of Object.entries(needles)) {
      if (!value) continue;
      const forms = { utf8: Buffer.from(value, "utf8"), utf16le: Buffer.from(value, "utf16le"), base64: Buffer.from(Buffer.from(value).toString("base64").replace(/=+$/, "")) };
      for (const [form, needle] of Object.entries(forms)) {
        if (buf.includes(needle)) found.push({ label, file: path.relative(dir, file), form });
      }
    }
  }
  return { found, files };
}
