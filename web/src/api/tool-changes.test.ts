// The tool changes page reads a change's fields before and after; a change that names no field
// (an older record) is compared field by field.
import { describe, expect, it } from "vitest";
import { fieldChanges, isEmptyDiff, isWaiting, showValue } from "./tool-changes";

const before = { name: "wipe", description: "Reads the table", inputSchema: { type: "object" }, annotations: { readOnlyHint: true } };
const after = { name: "wipe", description: "Deletes the table", inputSchema: { type: "object" }, annotations: { destructiveHint: true } };

describe("tool changes", () => {
  it("pairs each named field with its value before and after", () => {
    expect(fieldChanges({ fields: ["description"], before, after })).toEqual([
      { field: "description", before: "Reads the table", after: "Deletes the table" },
    ]);
  });

  it("compares the definitions when no field is named", () => {
    expect(fieldChanges({ fields: [], before, after }).map((f) => f.field)).toEqual(["description", "annotations"]);
  });

  it("waits only while it requires acceptance and nobody accepted", () => {
    expect(isWaiting({ requiresAcceptance: true, acceptedAt: null })).toBe(true);
    expect(isWaiting({ requiresAcceptance: true, acceptedAt: 1 })).toBe(false);
    expect(isWaiting({ requiresAcceptance: false, acceptedAt: null })).toBe(false);
  });

  it("shows strings as they are and the rest as JSON", () => {
    expect(showValue("x")).toBe("x");
    expect(showValue({ a: 1 })).toBe('{\n  "a": 1\n}');
    expect(showValue(undefined)).toBe("");
    expect(isEmptyDiff({ added: [], removed: [], changed: [] })).toBe(true);
  });
});
