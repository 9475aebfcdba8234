// The console checks patterns and places rules as the server does (crates/executor-core/src/policy.rs);
// a drift here would let the form accept what the server refuses, or put a rule where it loses.
import { describe, expect, it } from "vitest";
import type { Policy } from "./policies";
import { keyBetween, matchesPattern, parsePattern, positionForMove, positionForNewPattern, specificity } from "./policies";

const rule = (id: string, pattern: string, position: string): Policy => ({
  id,
  owner: "org",
  pattern,
  action: "block",
  position,
  createdAt: 0,
  updatedAt: 0,
  matches: 0,
  author: "person",
});

describe("pattern grammar", () => {
  it("accepts what the server accepts", () => {
    for (const ok of ["*", "github.*", "github.*.*.create_issue", "github.org.main.issues.list", "a.*.b.*"]) {
      expect(parsePattern(ok).ok, ok).toBe(true);
    }
  });

  it("refuses with the server's sentences", () => {
    const error = (p: string) => {
      const r = parsePattern(p);
      return r.ok ? "" : r.error;
    };
    expect(error("")).toMatch(/empty/);
    expect(error(".github")).toMatch(/starts with '\.'/);
    expect(error("github.")).toMatch(/ends with '\.'/);
    expect(error("a..b")).toMatch(/segment 2 is empty/);
    expect(error("*.github")).toMatch(/starts with "\*"/);
    expect(error("git*")).toMatch(/mixes letters with '\*'/);
    expect(error("a.**")).toMatch(/single "\*"/);
    expect(error("a.b c")).toMatch(/whitespace/);
    expect(error("a".repeat(1025))).toMatch(/at most 1024/);
  });

  it("matches policy ids, with or without the tools. root", () => {
    expect(matchesPattern("github.*", "tools.github.org.main.list")).toBe(true);
    expect(matchesPattern("github.*.*.list", "github.user.me.list")).toBe(true);
    expect(matchesPattern("github.*.*.list", "github.user.me.list.more")).toBe(false);
    expect(matchesPattern("github.org.main.list", "github.org.main.list")).toBe(true);
    expect(matchesPattern("gitlab.*", "github.org.main.list")).toBe(false);
    expect(matchesPattern("a..b", "a.x.b")).toBe(false);
  });

  it("ranks exact above prefix above everything", () => {
    expect(specificity("*")).toBe(0);
    expect(specificity("github.*")).toBeLessThan(specificity("github.*.*.list"));
    expect(specificity("github.org.*")).toBeLessThan(specificity("github.org.main.list"));
  });
});

describe("positions", () => {
  it("always fall strictly between their neighbours", () => {
    const keys = ["a0"];
    for (let i = 0; i < 200; i++) {
      const at = (i * 7919) % (keys.length + 1);
      const key = keyBetween(keys[at - 1] ?? null, keys[at] ?? null);
      if (at > 0) expect(key > keys[at - 1]!, `${keys[at - 1]} < ${key}`).toBe(true);
      if (at < keys.length) expect(key < keys[at]!, `${key} < ${keys[at]}`).toBe(true);
      keys.splice(at, 0, key);
    }
  });

  it("put a new rule below the more specific ones", () => {
    const rules = [rule("1", "github.*.*.list", "a0"), rule("2", "*", "a1")];
    const broad = positionForNewPattern(rules, "github.*");
    expect(broad > "a0" && broad < "a1").toBe(true);
    expect(positionForNewPattern(rules, "github.org.main.list") < "a0").toBe(true);
  });

  it("move a rule one place, and not past an end", () => {
    const rules = [rule("1", "a.*", "a0"), rule("2", "b.*", "a1"), rule("3", "c.*", "a2")];
    const up = positionForMove(rules, rules[2]!, -1)!;
    expect(up > "a0" && up < "a1").toBe(true);
    expect(positionForMove(rules, rules[0]!, -1)).toBeNull();
    expect(positionForMove(rules, rules[2]!, 1)).toBeNull();
  });
});
