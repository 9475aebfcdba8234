// Executions: run code, read the history and one run's journal, answer a paused call, and follow
// the live event stream. Shapes are those crates/executor-server/src/{routes,wire}.rs answer.

import { useEffect, useRef } from "react";
import { api, ApiError } from "./http";
import type * as T from "./types";
import { authHeader, reportUnauthorized } from "./auth";

export type ExecutionStatus = T.ExecutionSummary["status"];
export const EXECUTION_STATUSES: ExecutionStatus[] = ["running", "paused", "completed", "failed", "expired"];

/** One history item (`GET /api/executions`, and each live `execution` event). */
export type ExecutionSummary = T.ExecutionSummary;

/** What a paused call asks a person. `kind` is `form` (approval or a server's form) or `url`. */
export interface Interaction {
  kind: "form" | "url" | string;
  message?: string;
  instructions?: string;
  address?: string;
  args?: unknown;
  requestedSchema?: Record<string, unknown>;
  url?: string;
}

export interface PausedStructured {
  status: "waiting_for_interaction" | string;
  executionId: string;
  expiresAt?: number;
  ttlMs?: number;
  interaction?: Interaction;
}

/** `GET /api/executions/:id`: the pause, as text and structured. */
export interface PausedExecution {
  text: string;
  structured: PausedStructured;
}

export interface CompletedStructured {
  /** `completed`, or `failed` when the code threw (the outcome's `isError` says so too). */
  status: string;
  result?: unknown;
  error?: unknown;
  logs?: string[];
  [key: string]: unknown;
}

/** `POST /api/executions` and `POST …/resume`: either finished or paused again. */
export type ExecutionOutcome =
  | { status: "completed"; executionId?: string; text: string; structured: CompletedStructured; isError?: boolean; content?: unknown[] }
  | { status: "paused"; executionId?: string; text: string; structured: PausedStructured; isError?: boolean };

export type ResumeAction = "accept" | "decline" | "cancel";

export type JournalCall = Omit<T.ExecutionCall, "outcome" | "approval"> & {
  outcome?: { resolve: unknown } | { reject: string } | { omitted: unknown };
  approval?: { message?: string | null; kind?: string | null; decision?: string | null };
};

/** `GET /api/executions/:id/journal`. */
export type ExecutionJournal = Omit<T.ExecutionRecord, "outcome" | "pending" | "calls"> & {
  outcome?: { status?: string; text?: string; structured?: CompletedStructured; isError?: boolean };
  pending?: Interaction & { seq?: number };
  calls: JournalCall[];
};

export function execute(code: string, autoApprove = false): Promise<ExecutionOutcome> {
  return api<ExecutionOutcome>("/executions", { method: "POST", body: { code, autoApprove } });
}

export interface ListQuery {
  limit?: number;
  offset?: number;
  status?: ExecutionStatus | "";
  integration?: string;
}

export function listExecutions(q: ListQuery = {}): Promise<ExecutionSummary[]> {
  return api<ExecutionSummary[]>("/executions", { query: { ...q } });
}

export function getJournal(id: string): Promise<ExecutionJournal> {
  return api<ExecutionJournal>(`/executions/${encodeURIComponent(id)}/journal`);
}

/**
 * The pending request of a paused execution. With an MCP session id (browser elicitation links)
 * the session-scoped route is asked first; this server has none yet, so a 404 there falls back
 * to the plain route.
 */
export async function getPaused(id: string, mcpSessionId?: string | null): Promise<PausedExecution> {
  if (mcpSessionId) {
    try {
      return await api<PausedExecution>(
        `/mcp-sessions/${encodeURIComponent(mcpSessionId)}/executions/${encodeURIComponent(id)}`,
      );
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404 && e.tag === "Http404")) throw e;
    }
  }
  return api<PausedExecution>(`/executions/${encodeURIComponent(id)}`);
}

export async function resumeExecution(
  id: string,
  action: ResumeAction,
  content?: unknown,
  mcpSessionId?: string | null,
): Promise<ExecutionOutcome> {
  const body = content === undefined ? { action } : { action, content };
  if (mcpSessionId) {
    try {
      return await api<ExecutionOutcome>(
        `/mcp-sessions/${encodeURIComponent(mcpSessionId)}/executions/${encodeURIComponent(id)}/resume`,
        { method: "POST", body },
      );
    } catch (e) {
      // only "no such route" falls back; a real answer (e.g. already resumed) stands
      if (!(e instanceof ApiError && e.status === 404 && e.tag === "Http404")) throw e;
    }
  }
  return api<ExecutionOutcome>(`/executions/${encodeURIComponent(id)}/resume`, { method: "POST", body });
}

/** An error that means "this execution is not (or no longer) waiting". */
export function isGone(e: unknown): boolean {
  return e instanceof ApiError && (e.tag === "ExecutionNotFoundError" || e.status === 404 || e.status === 410);
}

/** An error that means "this server has no such route" (an older binary). */
export function isMissingRoute(e: unknown): boolean {
  return e instanceof ApiError && e.status === 404 && (e.tag === "Http404" || e.tag === "NotFound");
}

/** The logs an outcome carries (`structured.logs`, else the `Logs:` tail of the text). */
export function logsOf(outcome: { text?: string; structured?: unknown } | undefined): string[] {
  if (!outcome) return [];
  const s = outcome.structured as { logs?: unknown } | undefined;
  if (s && Array.isArray(s.logs)) return s.logs.map(String);
  const text = outcome.text ?? "";
  const at = text.lastIndexOf("\nLogs:\n");
  return at >= 0 ? text.slice(at + 7).split("\n").filter(Boolean) : [];
}

// ---- live events --------------------------------------------------------------------------

export type StreamState = "connecting" | "live" | "polling";

/**
 * Follows `GET /api/executions/events`. EventSource cannot send the bearer header, so this reads
 * the stream with fetch and parses the SSE frames itself. If the stream cannot be opened or
 * breaks, `onFallback` is told and the caller polls; it retries the stream every 30 s.
 */
export function useExecutionEvents(handlers: {
  onExecution: (summary: ExecutionSummary) => void;
  onResync: () => void;
  onState: (state: StreamState) => void;
}) {
  const ref = useRef(handlers);
  ref.current = handlers;
  useEffect(() => {
    const abort = new AbortController();
    let retry: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      ref.current.onState("connecting");
      try {
        const response = await fetch(new URL("/api/executions/events", window.location.origin), {
          headers: { accept: "text/event-stream", ...authHeader() },
          signal: abort.signal,
        });
        if (response.status === 401) reportUnauthorized();
        const type = response.headers.get("content-type") ?? "";
        if (!response.ok || !response.body || !type.includes("text/event-stream")) throw new Error("no stream");
        ref.current.onState("live");
        // After a gap, what happened meanwhile is read from the history.
        ref.current.onResync();
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end: number;
          while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
            const frame = buffer.slice(0, end);
            buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, "");
            dispatch(frame);
          }
        }
        throw new Error("stream ended");
      } catch {
        if (abort.signal.aborted) return;
        ref.current.onState("polling");
        retry = setTimeout(run, 30_000);
      }
    };
    const dispatch = (frame: string) => {
      let event = "message";
      const data: string[] = [];
      for (const line of frame.split(/\r?\n/)) {
        if (line.startsWith(":")) continue; // keep-alive comment
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") event = val;
        else if (field === "data") data.push(val);
      }
      if (event === "resync") return ref.current.onResync();
      if (event !== "execution" || data.length === 0) return;
      try {
        const summary = JSON.parse(data.join("\n")) as ExecutionSummary;
        if (summary && typeof summary.id === "string") ref.current.onExecution(summary);
      } catch {
        // a malformed frame is skipped; the next resync corrects the list
      }
    };
    void run();
    return () => {
      abort.abort();
      if (retry) clearTimeout(retry);
    };
  }, []);
}
