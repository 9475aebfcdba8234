// One door to the HTTP API: adds the bearer, turns the server's `_tag`ged errors into `ApiError`
// values the pages can show beside the field they concern, and never lets a raw body reach the UI.

import { authHeader, reportUnauthorized } from "./auth";

export class ApiError extends Error {
  readonly tag: string;
  readonly status: number;
  readonly body: Record<string, unknown>;

  constructor(status: number, tag: string, message: string, body: Record<string, unknown>) {
    super(message);
    this.status = status;
    this.tag = tag;
    this.body = body;
  }

  /** The field a validation error names, when it names one (`field`, `path` or `param`). */
  get field(): string | undefined {
    const f = this.body.field ?? this.body.path ?? this.body.param;
    return typeof f === "string" ? f : undefined;
  }
}

/** A sentence for a person, whatever failed. */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof TypeError) return "The server could not be reached. Is executor still running?";
  if (error instanceof Error && error.message) return error.message;
  return "Something went wrong.";
}

const TAG_SENTENCES: Record<string, string> = {
  HttpApiSchemaError: "The request was not accepted.",
  InternalError: "The server hit an internal error.",
  PayloadTooLarge: "That is too large to send.",
  // the team server's
  AccountUnauthorized: "You are not signed in.",
  AdminUnauthorized: "You are not signed in.",
  AdminForbidden: "Only workspace owners and admins can do this.",
  InvalidOriginError: "The server refused a request from this address (is EXECUTOR_WEB_BASE_URL this console's address?).",
  InvalidCredentialsError: "Wrong email or password.",
  TooManyAttemptsError: "Too many attempts. Wait a moment and try again.",
  EmailTakenError: "An account with this email already exists.",
  InviteRequiredError: "An invite code is required to join this workspace.",
  InvalidInviteError: "This invite code is invalid, already used, or expired.",
  LastOwnerError: "The workspace needs at least one owner.",
  OrgWriteDeniedError: "Only workspace admins can change this.",
};

async function toError(response: Response): Promise<ApiError> {
  let body: Record<string, unknown> = {};
  try {
    const text = await response.text();
    const parsed: unknown = text ? JSON.parse(text) : {};
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    // a non-JSON error body (a proxy's page, plain text): keep only the status
  }
  const tag = typeof body._tag === "string" ? body._tag : `Http${response.status}`;
  let message = typeof body.message === "string" && body.message ? body.message : TAG_SENTENCES[tag];
  if (!message) {
    message =
      response.status === 401
        ? "This browser is not signed in to the server."
        : response.status === 404
          ? "Not found."
          : `The server answered ${response.status}.`;
  }
  if (typeof body.traceId === "string") message += ` (trace ${body.traceId})`;
  return new ApiError(response.status, tag, message, body);
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined | null>;
  signal?: AbortSignal;
  /**
   * The route needs no sign-in (sign-in itself, sign-up, an invite's status): its 401 is an
   * answer to show (a wrong password), not a sign that this browser lost its session.
   */
  anonymous?: boolean;
}

export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const url = new URL(`/api${path}`, window.location.origin);
  for (const [k, v] of Object.entries(options.query ?? {})) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  }
  const headers: Record<string, string> = { accept: "application/json", ...authHeader() };
  let body: string | undefined;
  if (options.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(options.body);
  }
  const response = await fetch(url, {
    method: options.method ?? (body === undefined ? "GET" : "POST"),
    headers,
    body,
    signal: options.signal,
  });
  if (response.status === 401 && !options.anonymous) reportUnauthorized();
  if (!response.ok) throw await toError(response);
  const text = await response.text();
  const type = response.headers.get("content-type") ?? "";
  return (type.includes("json") && text ? JSON.parse(text) : text) as T;
}
