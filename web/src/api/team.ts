// The team server (`executor serve`): accounts, members, invites, API keys, the audit log, and the
// two approvals a signed-in person gives from the console (an MCP client's OAuth consent, a CLI's
// device login). Its routes are not in the generated `schema.d.ts` (that document is the local
// server's), so the types here follow docs/team/API.md by hand; keep the two in step.

import { useInfiniteQuery, useQuery, useQueryClient } from "@tanstack/react-query";
import { isTeam } from "./auth";
import { api, ApiError } from "./http";

// ---- shapes ------------------------------------------------------------------------------

export type Role = "owner" | "admin" | "member";

export interface User {
  id: string;
  email: string;
  name: string;
}

export interface Organization {
  id: string;
  name: string;
  slug: string;
}

export interface Me {
  user: User;
  organization: Organization;
  role: Role;
}

export interface SignedIn {
  user: User;
  token: string;
}

export interface Member {
  id: string;
  userId: string;
  email: string;
  name: string;
  role: Role;
  status: "active";
  createdAt: number;
  isCurrentUser: boolean;
}

export interface RoleInfo {
  slug: Role;
  name: string;
}

/** Times are epoch milliseconds; `null` where unset. */
export interface Invite {
  id: string;
  code: string;
  role: Exclude<Role, "owner">;
  label: string | null;
  createdAt: number;
  expiresAt: number | null;
  usedByEmail: string | null;
  usedAt: number | null;
}

export interface ApiKey {
  id: string;
  name: string;
  obfuscatedValue: string;
  createdAt: number;
  updatedAt: number;
  lastUsedAt: number | null;
}

/** A key as created: the only time its `value` is ever answered. */
export interface NewApiKey extends ApiKey {
  value: string;
}

export type AuditKind = "change" | "tool_call";
export type AuditOutcome = "ok" | "error" | "denied" | "paused";

/** Event ids are opaque to the console: it only hands them back as `before`. */
export type AuditId = string | number;

export interface AuditEvent {
  id: AuditId;
  at: number;
  kind: AuditKind;
  actor: { userId: string; email: string } | null;
  via: "session" | "api_key" | "oauth" | "system";
  action: string;
  target: string | null;
  before: unknown;
  after: unknown;
  outcome: AuditOutcome;
  detail: unknown;
}

export interface AuditPage {
  events: AuditEvent[];
  nextBefore: AuditId | null;
}

export interface AuditFilter {
  kind?: AuditKind | "";
  actor?: string;
  action?: string;
}

export interface ConsentRequest {
  clientName: string;
  redirectOrigin: string;
  scopes: { scope: string; description: string }[];
  resource: string | null;
}

export type DeviceStatus = "pending" | "approved" | "denied" | "expired";

export interface DeviceRequest {
  userCode: string;
  clientId: string;
  status: DeviceStatus;
}

// ---- sign-in, sign-up, sign-out ------------------------------------------------------------

export interface SignUpInput {
  name: string;
  email: string;
  password: string;
  inviteCode?: string;
}

/** The cookie the answer sets is the browser's session; the token in the body is for the CLI. */
export const signUp = (input: SignUpInput) =>
  api<SignedIn>("/auth/sign-up/email", { method: "POST", body: input, anonymous: true });

export const signIn = (input: { email: string; password: string }) =>
  api<SignedIn>("/auth/sign-in/email", { method: "POST", body: input, anonymous: true });

export const signOut = () => api<{ success: boolean }>("/auth/sign-out", { method: "POST", body: {} });

export const inviteStatus = (code: string) =>
  api<{ valid: boolean }>(`/invite-status/${encodeURIComponent(code)}`, { anonymous: true });

// ---- who I am --------------------------------------------------------------------------------

export const meKey = ["team", "me"] as const;

/** The signed-in person; never asked on the local server (it has no accounts). */
export function useMe() {
  return useQuery({
    queryKey: meKey,
    queryFn: () => api<Me>("/account/me"),
    enabled: isTeam(),
    staleTime: 30_000,
  });
}

export const isAdminRole = (role: Role | undefined): boolean => role === "owner" || role === "admin";

export const ROLE_LABELS: Record<Role, string> = { owner: "Owner", admin: "Admin", member: "Member" };

// ---- members and roles ----------------------------------------------------------------------

export const membersKey = ["team", "members"] as const;

export function useMembers() {
  return useQuery({
    queryKey: membersKey,
    queryFn: () => api<{ members: Member[] }>("/account/members").then((r) => r.members),
  });
}

export function useRoles() {
  return useQuery({
    queryKey: ["team", "roles"],
    queryFn: () => api<{ roles: RoleInfo[] }>("/account/roles").then((r) => r.roles),
    staleTime: Infinity,
  });
}

export const setMemberRole = (id: string, roleSlug: Role) =>
  api<Member>(`/account/members/${encodeURIComponent(id)}/role`, { method: "PATCH", body: { roleSlug } });

export const removeMember = (id: string) =>
  api<{ success: boolean }>(`/account/members/${encodeURIComponent(id)}`, { method: "DELETE" });

// ---- invites ----------------------------------------------------------------------------------

export const invitesKey = ["team", "invites"] as const;

export function useInvites() {
  return useQuery({
    queryKey: invitesKey,
    queryFn: () => api<{ invites: Invite[] }>("/admin/invites").then((r) => r.invites),
  });
}

export interface InviteInput {
  role?: Invite["role"];
  label?: string;
  expiresInDays?: number;
}

export const createInvite = (input: InviteInput) => api<Invite>("/admin/invites", { method: "POST", body: input });

export const revokeInvite = (id: string) =>
  api<{ success: boolean }>(`/admin/invites/${encodeURIComponent(id)}`, { method: "DELETE" });

/** The page that redeems `code` on this server. */
export const joinLink = (code: string, origin = window.location.origin) => `${origin}/join/${encodeURIComponent(code)}`;

/** What a person types: `abcd efgh jkmn` reads as `ABCD-EFGH-JKMN`; "" for nothing. */
export function normalizeInviteCode(raw: string): string {
  const compact = raw.toUpperCase().replace(/[^A-Z0-9]/g, "");
  if (compact.length === 12) return `${compact.slice(0, 4)}-${compact.slice(4, 8)}-${compact.slice(8)}`;
  return raw.trim().toUpperCase();
}

export type InviteState = "open" | "used" | "expired";

export function inviteState(invite: Invite, now = Date.now()): InviteState {
  if (invite.usedAt !== null || invite.usedByEmail) return "used";
  if (invite.expiresAt !== null && invite.expiresAt <= now) return "expired";
  return "open";
}

// ---- API keys ---------------------------------------------------------------------------------

export const apiKeysKey = ["team", "api-keys"] as const;

export function useApiKeys() {
  return useQuery({
    queryKey: apiKeysKey,
    queryFn: () => api<{ apiKeys: ApiKey[] }>("/account/api-keys").then((r) => r.apiKeys),
  });
}

export const createApiKey = (name: string) =>
  api<NewApiKey>("/account/api-keys", { method: "POST", body: name ? { name } : {} });

export const deleteApiKey = (id: string) =>
  api<{ success: boolean }>(`/account/api-keys/${encodeURIComponent(id)}`, { method: "DELETE" });

// ---- audit --------------------------------------------------------------------------------------

export const AUDIT_PAGE = 50;

export const auditKey = (filter: AuditFilter) => ["team", "audit", filter.kind ?? "", filter.actor ?? "", filter.action ?? ""] as const;

/** Newest first; each further page starts before the last one's oldest event (`nextBefore`). */
export function useAuditEvents(filter: AuditFilter) {
  return useInfiniteQuery({
    queryKey: auditKey(filter),
    initialPageParam: null as AuditId | null,
    queryFn: ({ pageParam }) =>
      api<AuditPage>("/admin/audit-events", {
        query: {
          limit: AUDIT_PAGE,
          before: pageParam === null ? undefined : String(pageParam),
          kind: filter.kind || undefined,
          actor: filter.actor || undefined,
          action: filter.action || undefined,
        },
      }),
    getNextPageParam: (last) => last.nextBefore ?? undefined,
  });
}

// ---- MCP OAuth consent --------------------------------------------------------------------------

export function useConsentRequest(id: string) {
  return useQuery({
    queryKey: ["team", "consent", id],
    queryFn: () => api<ConsentRequest>(`/auth/mcp/requests/${encodeURIComponent(id)}`),
    enabled: !!id,
    // a consent request is answered once; a refetch after that would only say it is gone
    refetchOnWindowFocus: false,
  });
}

export const answerConsent = (id: string, approve: boolean) =>
  api<{ redirectTo: string }>(`/auth/mcp/requests/${encodeURIComponent(id)}`, { method: "POST", body: { approve } });

/** The words shown for a scope the server did not describe. */
export function scopeSentence(s: { scope: string; description?: string | null }): string {
  if (s.description) return s.description;
  if (s.scope === "mcp") return "Use Executor's tools on your behalf, as you.";
  return `Access “${s.scope}”.`;
}

// ---- device login ------------------------------------------------------------------------------

/** What a person types: `abcd efgh` or `ABCDEFGH` reads as `ABCD-EFGH`. */
export function normalizeUserCode(raw: string): string {
  const compact = raw.toUpperCase().replace(/[^A-Z0-9]/g, "");
  return compact.length === 8 ? `${compact.slice(0, 4)}-${compact.slice(4)}` : raw.trim().toUpperCase();
}

export const getDeviceRequest = (userCode: string) =>
  api<DeviceRequest>(`/auth/device/${encodeURIComponent(userCode)}`);

export const answerDevice = (userCode: string, approve: boolean) =>
  api<{ status: DeviceStatus }>("/auth/device/approve", { method: "POST", body: { userCode, approve } });

// ---- owners: who may write what --------------------------------------------------------------

export type Owner = "org" | "user";

export interface OwnerRights {
  team: boolean;
  /** Whether workspace (org) rows are this person's to create or change. */
  canWriteOrg: boolean;
  /** The owner a create form starts with. */
  defaultOwner: Owner;
  /**
   * The owner of the rules the tool-tree menus write (no choice is offered there): the workspace
   * for whoever may write it, else the person's own.
   */
  ruleOwner: Owner;
  /** Still asking who this person is (team mode only). */
  pending: boolean;
}

/**
 * The local server has one owner, `org`, shown as "Local". On the team server a create form starts
 * on Personal, and only owners and admins may pick Workspace (a member's attempt is refused with
 * `OrgWriteDeniedError`, so the console does not offer it).
 */
export function useOwnerRights(): OwnerRights {
  const me = useMe();
  if (!isTeam()) return { team: false, canWriteOrg: true, defaultOwner: "org", ruleOwner: "org", pending: false };
  const canWriteOrg = isAdminRole(me.data?.role);
  return { team: true, canWriteOrg, defaultOwner: "user", ruleOwner: canWriteOrg ? "org" : "user", pending: me.isPending };
}

/** How an owner is named: `org` is "Local" on the local server, "Workspace" on the team server. */
export function ownerLabel(owner: string): string {
  if (owner === "user") return "Personal";
  return isTeam() ? "Workspace" : "Local";
}

// ---- small shared pieces -----------------------------------------------------------------------

/** Refetches every team list after a change (members, invites, keys, and the audit log). */
export function useInvalidateTeam() {
  const client = useQueryClient();
  return (key: readonly unknown[]) => {
    void client.invalidateQueries({ queryKey: key });
    void client.invalidateQueries({ queryKey: ["team", "audit"] });
  };
}

/** A date and time in the reader's locale; "—" for none. */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  return new Date(ms).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** "in 3 seconds", "in 2 minutes": how long a refusal of too many attempts lasts. */
export function waitSentence(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? "" : "s"}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}

/** The wait a `TooManyAttemptsError` names (its body's `retryAfterSeconds`), if it names one. */
export function retryAfterOf(error: unknown): number | null {
  if (!(error instanceof ApiError) || error.tag !== "TooManyAttemptsError") return null;
  const n = error.body.retryAfterSeconds;
  return typeof n === "number" && Number.isFinite(n) && n >= 0 ? Math.ceil(n) : null;
}
