// The OAuth popup: opened blank inside the click (so blockers allow it), pointed at the
// authorization URL once the server has started the flow, and settled by whichever report comes
// first — the callback page's postMessage, its BroadcastChannel, a storage event, or polling
// `GET /api/oauth/await/<state>` (for when COOP severs the opener).

import { api } from "./http";

const CHANNEL = "executor:oauth-result";

export interface OAuthResult {
  type: typeof CHANNEL;
  ok: boolean;
  sessionId: string;
  error?: string;
  errorDetails?: string;
  name?: string;
  [key: string]: unknown;
}

/** Must be called synchronously in the click handler. */
export function openBlankPopup(name = "executor-oauth"): Window | null {
  const w = 640;
  const h = 760;
  const left = Math.max(0, window.screenX + (window.outerWidth - w) / 2);
  const top = Math.max(0, window.screenY + (window.outerHeight - h) / 2);
  return window.open("about:blank", name, `popup,width=${w},height=${h},left=${left},top=${top}`);
}

function isResult(v: unknown, sessionId: string): v is OAuthResult {
  return !!v && typeof v === "object" && (v as OAuthResult).type === CHANNEL && (v as OAuthResult).sessionId === sessionId;
}

/**
 * Waits for the flow `sessionId` to finish. Resolves with the callback's payload; rejects only
 * when the person closes the popup first or the signal aborts.
 */
export function awaitOAuthResult(sessionId: string, popup: Window | null, signal?: AbortSignal): Promise<OAuthResult> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const cleanups: (() => void)[] = [];
    const settle = (fn: () => void) => {
      if (settled) return;
      settled = true;
      for (const c of cleanups) c();
      fn();
    };
    const accept = (v: unknown) => {
      if (isResult(v, sessionId)) settle(() => resolve(v));
    };

    const onMessage = (e: MessageEvent) => {
      if (e.origin === window.location.origin) accept(e.data);
    };
    window.addEventListener("message", onMessage);
    cleanups.push(() => window.removeEventListener("message", onMessage));

    if (typeof BroadcastChannel !== "undefined") {
      const channel = new BroadcastChannel(CHANNEL);
      channel.onmessage = (e) => accept(e.data);
      cleanups.push(() => channel.close());
    }

    const onStorage = (e: StorageEvent) => {
      if (e.key !== CHANNEL || !e.newValue) return;
      try {
        accept(JSON.parse(e.newValue));
      } catch {
        // another tab's unrelated write
      }
    };
    window.addEventListener("storage", onStorage);
    cleanups.push(() => window.removeEventListener("storage", onStorage));

    // The server keeps the result for one read; poll it in case no message reaches this tab.
    let polling = false;
    const poll = window.setInterval(async () => {
      if (polling || settled) return;
      polling = true;
      try {
        const r = await api<unknown>(`/oauth/await/${encodeURIComponent(sessionId)}`);
        if (r && typeof r === "object") accept({ type: CHANNEL, sessionId, ...(r as object) });
      } catch {
        // transient: try again on the next tick
      } finally {
        polling = false;
      }
    }, 1000);
    cleanups.push(() => window.clearInterval(poll));

    // A closed popup gets a grace period: the callback may have reported just before closing.
    let closedTicks = 0;
    const closedWatch = window.setInterval(() => {
      if (popup && popup.closed && ++closedTicks >= 4) {
        settle(() => reject(new Error("The sign-in window was closed before it finished.")));
      }
    }, 500);
    cleanups.push(() => window.clearInterval(closedWatch));

    if (signal) {
      const onAbort = () => settle(() => reject(new Error("Sign-in cancelled.")));
      signal.addEventListener("abort", onAbort);
      cleanups.push(() => signal.removeEventListener("abort", onAbort));
    }
  });
}
