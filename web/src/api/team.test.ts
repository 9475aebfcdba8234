// The team server's pure pieces: where a sign-in may return to (no open redirect), how the console
// tells the team server from the local one, and the small readings of its answers.

import { afterEach, describe, expect, it } from "vitest";
import { detectMode, isPublicPath, isTeam, loginPath, needsSetup, safeReturnTo, setModeForTest } from "./auth";
import { ApiError } from "./http";
import {
  inviteState,
  joinLink,
  normalizeInviteCode,
  normalizeUserCode,
  retryAfterOf,
  scopeSentence,
  waitSentence,
  type Invite,
} from "./team";

const ORIGIN = "http://127.0.0.1:4788";

describe("safeReturnTo", () => {
  it("keeps a path on this origin, with its query and hash", () => {
    expect(safeReturnTo("/admin", ORIGIN)).toBe("/admin");
    expect(safeReturnTo("/oauth/consent?request=abc", ORIGIN)).toBe("/oauth/consent?request=abc");
    expect(safeReturnTo("/integrations/x?tab=tools#t", ORIGIN)).toBe("/integrations/x?tab=tools#t");
  });

  it("refuses anything that could leave the origin", () => {
    for (const bad of [
      "//evil.example/",
      "///evil.example",
      "/\\evil.example",
      "/\\/evil.example",
      "https://evil.example/",
      "http:evil.example",
      "javascript:alert(1)",
      "evil.example",
      "/\tevil",
      "/%0a",
      " /admin",
      "",
      null,
      undefined,
    ]) {
      const got = safeReturnTo(bad as string | null | undefined, ORIGIN);
      expect(got === "/" || (got.startsWith("/") && !got.startsWith("//")), `${String(bad)} → ${got}`).toBe(true);
      expect(new URL(got, ORIGIN).origin).toBe(ORIGIN);
    }
    expect(safeReturnTo("//evil.example/", ORIGIN)).toBe("/");
    expect(safeReturnTo("/\\evil.example", ORIGIN)).toBe("/");
    expect(safeReturnTo("https://evil.example/", ORIGIN)).toBe("/");
  });

  it("never returns to a sign-in page (no loop)", () => {
    expect(safeReturnTo("/login?returnTo=/admin", ORIGIN)).toBe("/");
    expect(safeReturnTo("/setup", ORIGIN)).toBe("/");
    expect(safeReturnTo("/join/ABCD-EFGH-JKMN", ORIGIN)).toBe("/");
  });

  it("builds the sign-in link", () => {
    expect(loginPath("/")).toBe("/login");
    expect(loginPath("/admin")).toBe("/login?returnTo=%2Fadmin");
    expect(loginPath("/oauth/consent?request=r1")).toBe("/login?returnTo=%2Foauth%2Fconsent%3Frequest%3Dr1");
    expect(loginPath("//evil.example")).toBe("/login");
  });

  it("knows which pages a signed-out browser may show", () => {
    expect(isPublicPath("/login")).toBe(true);
    expect(isPublicPath("/setup")).toBe(true);
    expect(isPublicPath("/join/X")).toBe(true);
    expect(isPublicPath("/oauth/consent")).toBe(false);
    expect(isPublicPath("/device")).toBe(false);
    expect(isPublicPath("/")).toBe(false);
  });
});

describe("detectMode", () => {
  afterEach(() => setModeForTest({ mode: "local", needsSetup: false }));
  const answer = (status: number, body: unknown, type = "application/json") =>
    (async () =>
      new Response(typeof body === "string" ? body : JSON.stringify(body), {
        status,
        headers: { "content-type": type },
      })) as unknown as typeof fetch;

  it("is the team server when setup-status answers JSON", async () => {
    expect(await detectMode(answer(200, { needsSetup: true }))).toEqual({ mode: "team", needsSetup: true });
    expect(isTeam()).toBe(true);
    expect(needsSetup()).toBe(true);
  });

  it("is the local server otherwise", async () => {
    for (const f of [
      answer(401, { _tag: "Unauthorized" }),
      answer(404, { _tag: "NotFound" }),
      answer(200, "<!doctype html>", "text/html"),
      answer(200, { something: "else" }),
      (async () => {
        throw new TypeError("offline");
      }) as unknown as typeof fetch,
    ]) {
      setModeForTest({ mode: "local", needsSetup: false });
      expect((await detectMode(f)).mode).toBe("local");
      expect(isTeam()).toBe(false);
    }
  });
});

describe("team readings", () => {
  const invite = (over: Partial<Invite>): Invite => ({
    id: "inv_1",
    code: "ABCD-EFGH-JKMN",
    role: "member",
    label: null,
    createdAt: 0,
    expiresAt: 10_000,
    usedByEmail: null,
    usedAt: null,
    ...over,
  });

  it("reads an invite's state", () => {
    expect(inviteState(invite({}), 5_000)).toBe("open");
    expect(inviteState(invite({}), 10_000)).toBe("expired");
    expect(inviteState(invite({ usedAt: 4_000, usedByEmail: "a@b.c" }), 20_000)).toBe("used");
  });

  it("normalises codes as people type them", () => {
    expect(normalizeInviteCode(" abcd efgh jkmn ")).toBe("ABCD-EFGH-JKMN");
    expect(normalizeInviteCode("ABCD-EFGH-JKMN")).toBe("ABCD-EFGH-JKMN");
    expect(normalizeInviteCode("")).toBe("");
    expect(normalizeUserCode("abcdefgh")).toBe("ABCD-EFGH");
    expect(normalizeUserCode("abcd-efgh")).toBe("ABCD-EFGH");
  });

  it("builds the share link", () => {
    expect(joinLink("ABCD-EFGH-JKMN", ORIGIN)).toBe(`${ORIGIN}/join/ABCD-EFGH-JKMN`);
  });

  it("reads the wait of too many attempts", () => {
    const e = new ApiError(429, "TooManyAttemptsError", "Too many", { _tag: "TooManyAttemptsError", retryAfterSeconds: 61.2 });
    expect(retryAfterOf(e)).toBe(62);
    expect(retryAfterOf(new ApiError(401, "InvalidCredentialsError", "Wrong", {}))).toBeNull();
    expect(waitSentence(1)).toBe("1 second");
    expect(waitSentence(30)).toBe("30 seconds");
    expect(waitSentence(61)).toBe("2 minutes");
  });

  it("says a scope in words", () => {
    expect(scopeSentence({ scope: "mcp", description: "Use your tools" })).toBe("Use your tools");
    expect(scopeSentence({ scope: "mcp" })).toMatch(/tools/);
    expect(scopeSentence({ scope: "x" })).toContain("x");
  });
});
