// A form generated from a JSON Schema, with a JSON mode over the same value. Covers what tool
// inputs and elicitation `requestedSchema`s use in practice: strings (enum, oneOf-of-consts,
// email/uri), numbers, booleans, arrays of primitives and nested objects. Anything else is edited
// as JSON in place, so no schema leaves the user stuck.

import { useEffect, useId, useState } from "react";
import "./schema-form.css";

export type JsonSchema = {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  format?: string;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  [key: string]: unknown;
};

type Json = unknown;
type Obj = Record<string, Json>;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The schema's main type; `["string","null"]` counts as string. */
function typeOf(s: JsonSchema | undefined): string | undefined {
  if (!s) return undefined;
  if (Array.isArray(s.type)) return s.type.find((t) => t !== "null");
  if (typeof s.type === "string") return s.type;
  if (s.properties) return "object";
  if (Array.isArray(s.enum)) return "string";
  if (constOptions(s)) return typeof constOptions(s)![0]?.value === "number" ? "number" : "string";
  return undefined;
}

/** `oneOf`/`anyOf` whose every branch is a `const`: a closed choice with titles. */
function constOptions(s: JsonSchema): { value: Json; label: string }[] | null {
  const branches = s.oneOf ?? s.anyOf;
  if (!Array.isArray(branches) || branches.length === 0) return null;
  if (!branches.every((b) => isObj(b) && "const" in b)) return null;
  return branches.map((b) => ({ value: b.const, label: typeof b.title === "string" ? b.title : String(b.const) }));
}

function choices(s: JsonSchema): { value: Json; label: string }[] | null {
  if (Array.isArray(s.enum)) return s.enum.map((v) => ({ value: v, label: String(v) }));
  return constOptions(s);
}

function labelOf(name: string, s: JsonSchema): string {
  return typeof s.title === "string" && s.title ? s.title : name;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function isUri(v: string): boolean {
  try {
    new URL(v);
    return true;
  } catch {
    return false;
  }
}

/** Problems with one present value (format, numbers, lengths); empty when fine. */
function valueProblem(s: JsonSchema, v: Json): string | null {
  const t = typeOf(s);
  if (typeof v === "string") {
    if (s.format === "email" && v && !EMAIL.test(v)) return "Enter an email address, like name@example.com.";
    if ((s.format === "uri" || s.format === "url") && v && !isUri(v)) return "Enter a full address, like https://example.com.";
    if (typeof s.minLength === "number" && v.length < s.minLength) return `At least ${s.minLength} characters.`;
    if (typeof s.maxLength === "number" && v.length > s.maxLength) return `At most ${s.maxLength} characters.`;
  }
  if (typeof v === "number") {
    if (t === "integer" && !Number.isInteger(v)) return "Enter a whole number.";
    if (typeof s.minimum === "number" && v < s.minimum) return `At least ${s.minimum}.`;
    if (typeof s.maximum === "number" && v > s.maximum) return `At most ${s.maximum}.`;
  }
  return null;
}

function isEmpty(v: Json): boolean {
  return v === undefined || v === null || v === "" || (Array.isArray(v) && v.length === 0);
}

/**
 * What stops this value from being sent: missing required fields (nested objects included, with
 * a path like "Address › City") and malformed values. Empty when the value may be sent.
 */
export function validateAgainst(schema: JsonSchema | undefined, value: Json): string[] {
  const out: string[] = [];
  const walk = (s: JsonSchema, v: Json, trail: string[]) => {
    const t = typeOf(s);
    if (t === "object" && s.properties) {
      const o = isObj(v) ? v : {};
      const required = new Set(Array.isArray(s.required) ? s.required : []);
      for (const [name, sub] of Object.entries(s.properties)) {
        const path = [...trail, labelOf(name, sub)];
        const child = o[name];
        if (isEmpty(child)) {
          // An optional nested object is still checked when the user started filling it.
          if (required.has(name)) out.push(`${path.join(" › ")} is required.`);
          continue;
        }
        walk(sub, child, path);
      }
      return;
    }
    if (t === "array" && Array.isArray(v) && s.items) {
      v.forEach((item, i) => {
        const p = valueProblem(s.items!, item);
        if (p) out.push(`${[...trail].join(" › ")} item ${i + 1}: ${p}`);
      });
      return;
    }
    const p = valueProblem(s, v);
    if (p) out.push(trail.length ? `${trail.join(" › ")}: ${p}` : p);
  };
  if (schema) walk(schema, value, []);
  return out;
}

/**
 * A starting value for a form: each property's `default`, and `false` for required booleans (an
 * unticked box is an answer). Nested objects are filled the same way.
 */
export function initialValue(schema: JsonSchema | undefined): Json {
  if (!schema || typeOf(schema) !== "object" || !isObj(schema.properties)) return schema?.default ?? {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const out: Obj = isObj(schema.default) ? { ...schema.default } : {};
  for (const [name, raw] of Object.entries(schema.properties)) {
    const sub = (isObj(raw) ? raw : {}) as JsonSchema;
    if (name in out) continue;
    if (sub.default !== undefined) out[name] = sub.default;
    else if (typeOf(sub) === "boolean" && required.has(name)) out[name] = false;
    else if (typeOf(sub) === "object" && isObj(sub.properties) && required.has(name)) {
      const nested = initialValue(sub);
      if (isObj(nested) && Object.keys(nested).length) out[name] = nested;
    }
  }
  return out;
}

/** Whether the form mode can show this schema (an object with properties, or no fields at all). */
function formable(schema: JsonSchema | undefined): boolean {
  return !!schema && typeOf(schema) === "object" && (isObj(schema.properties) || schema.properties === undefined);
}

export interface SchemaFormProps {
  schema: JsonSchema | undefined;
  value: Json;
  onChange: (value: Json) => void;
  /** Prefix for element ids, unique on the page. */
  idPrefix: string;
  disabled?: boolean;
}

export function SchemaForm({ schema, value, onChange, idPrefix, disabled }: SchemaFormProps) {
  const canForm = formable(schema);
  const [mode, setMode] = useState<"form" | "json">(canForm ? "form" : "json");
  useEffect(() => {
    if (!canForm) setMode("json");
  }, [canForm]);
  const hasFields = !!schema && isObj(schema.properties) && Object.keys(schema.properties).length > 0;
  return (
    <div className="schema-form">
      {canForm && hasFields && (
        <div className="schema-form-mode" role="group" aria-label="Editor mode">
          <button type="button" aria-pressed={mode === "form"} onClick={() => setMode("form")} disabled={disabled}>
            Form
          </button>
          <button type="button" aria-pressed={mode === "json"} onClick={() => setMode("json")} disabled={disabled}>
            JSON
          </button>
        </div>
      )}
      {mode === "form" && canForm ? (
        hasFields ? (
          <ObjectFields schema={schema!} value={value} onChange={onChange} idPrefix={idPrefix} disabled={disabled} />
        ) : (
          <p className="muted">No details are asked for.</p>
        )
      ) : (
        <JsonEditor value={value} onChange={onChange} id={`${idPrefix}-json`} label="Value (JSON)" disabled={disabled} />
      )}
    </div>
  );
}

function ObjectFields({
  schema,
  value,
  onChange,
  idPrefix,
  disabled,
}: {
  schema: JsonSchema;
  value: Json;
  onChange: (v: Json) => void;
  idPrefix: string;
  disabled?: boolean;
}) {
  const obj = isObj(value) ? value : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const set = (name: string, v: Json) => {
    const next = { ...obj };
    // Leaving a field blank removes it, so optional fields are not sent as "".
    if (v === undefined) delete next[name];
    else next[name] = v;
    onChange(next);
  };
  return (
    <div className="stack">
      {Object.entries(schema.properties ?? {}).map(([name, sub]) => (
        <Field
          key={name}
          name={name}
          schema={isObj(sub) ? (sub as JsonSchema) : {}}
          value={obj[name]}
          required={required.has(name)}
          onChange={(v) => set(name, v)}
          id={`${idPrefix}-${name.replace(/[^A-Za-z0-9_-]/g, "_")}`}
          disabled={disabled}
        />
      ))}
    </div>
  );
}

function Field({
  name,
  schema,
  value,
  required,
  onChange,
  id,
  disabled,
}: {
  name: string;
  schema: JsonSchema;
  value: Json;
  required: boolean;
  onChange: (v: Json) => void;
  id: string;
  disabled?: boolean;
}) {
  const [touched, setTouched] = useState(false);
  const t = typeOf(schema);
  const label = labelOf(name, schema);
  const hint = typeof schema.description === "string" && schema.description !== label ? schema.description : null;
  const problem = !isEmpty(value) ? valueProblem(schema, value) : null;
  const missing = touched && required && isEmpty(value);
  const error = touched && problem ? problem : missing ? `${label} is required.` : null;
  const describedBy = [hint ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(" ") || undefined;
  const mark = required ? (
    <span className="required" aria-hidden="true">
      {" "}
      *
    </span>
  ) : null;
  const common = {
    id,
    disabled,
    "aria-required": required || undefined,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": describedBy,
    onBlur: () => setTouched(true),
  };
  const footer = (
    <>
      {hint && (
        <span className="field-hint" id={`${id}-hint`}>
          {hint}
        </span>
      )}
      {error && (
        <span className="field-error" id={`${id}-error`}>
          {error}
        </span>
      )}
    </>
  );

  if (t === "object" && isObj(schema.properties)) {
    return (
      <fieldset className="schema-fieldset">
        <legend>
          {label}
          {mark}
        </legend>
        {hint && <p className="field-hint">{hint}</p>}
        <ObjectFields
          schema={schema}
          value={value}
          onChange={(v) => onChange(isObj(v) && Object.keys(v).length === 0 ? undefined : v)}
          idPrefix={id}
          disabled={disabled}
        />
      </fieldset>
    );
  }

  if (t === "boolean") {
    return (
      <div className="field field-check">
        <label htmlFor={id}>
          <input
            type="checkbox"
            {...common}
            checked={value === true}
            onChange={(e) => onChange(e.target.checked)}
          />
          {label}
          {mark}
        </label>
        {footer}
      </div>
    );
  }

  const opts = choices(schema);
  if (opts) {
    const index = opts.findIndex((o) => o.value === value);
    return (
      <div className="field">
        <label htmlFor={id}>
          {label}
          {mark}
        </label>
        <select
          {...common}
          value={index < 0 ? "" : String(index)}
          onChange={(e) => onChange(e.target.value === "" ? undefined : opts[Number(e.target.value)]?.value)}
        >
          <option value="">{required ? "Choose…" : "(none)"}</option>
          {opts.map((o, i) => (
            <option key={i} value={String(i)}>
              {o.label}
            </option>
          ))}
        </select>
        {footer}
      </div>
    );
  }

  if (t === "array") {
    const items = isObj(schema.items) ? (schema.items as JsonSchema) : {};
    const itemType = typeOf(items);
    const itemChoices = choices(items);
    const list = Array.isArray(value) ? value : [];
    if (itemChoices) {
      // A multi-select: one checkbox per choice.
      return (
        <fieldset className="schema-fieldset" aria-describedby={describedBy}>
          <legend>
            {label}
            {mark}
          </legend>
          {itemChoices.map((o, i) => (
            <label key={i} className="field-check" htmlFor={`${id}-${i}`}>
              <input
                type="checkbox"
                id={`${id}-${i}`}
                disabled={disabled}
                checked={list.includes(o.value)}
                onChange={(e) => {
                  const next = e.target.checked ? [...list, o.value] : list.filter((x) => x !== o.value);
                  onChange(next.length ? next : undefined);
                }}
              />
              {o.label}
            </label>
          ))}
          {footer}
        </fieldset>
      );
    }
    if (itemType === "string" || itemType === "number" || itemType === "integer" || itemType === "boolean") {
      return (
        <fieldset className="schema-fieldset">
          <legend>
            {label}
            {mark}
          </legend>
          {hint && <p className="field-hint">{hint}</p>}
          {list.map((item, i) => (
            <div className="row schema-array-row" key={i}>
              <div className="field schema-grow">
                <label htmlFor={`${id}-${i}`} className="sr-only-ish">
                  {label} item {i + 1}
                </label>
                <Scalar
                  schema={items}
                  value={item}
                  id={`${id}-${i}`}
                  disabled={disabled}
                  onChange={(v) => {
                    const next = [...list];
                    next[i] = v ?? (itemType === "string" ? "" : null);
                    onChange(next);
                  }}
                />
              </div>
              <button
                type="button"
                disabled={disabled}
                aria-label={`Remove ${label} item ${i + 1}`}
                onClick={() => {
                  const next = list.filter((_, j) => j !== i);
                  onChange(next.length ? next : undefined);
                }}
              >
                Remove
              </button>
            </div>
          ))}
          <div>
            <button
              type="button"
              disabled={disabled}
              onClick={() => onChange([...list, itemType === "boolean" ? false : itemType === "string" ? "" : 0])}
            >
              Add {itemType === "string" ? "item" : "value"}
            </button>
          </div>
          {error && <span className="field-error">{error}</span>}
        </fieldset>
      );
    }
    // Arrays of objects and the like: JSON for this one field.
    return <JsonEditor value={value} onChange={onChange} id={id} label={label} required={required} hint={hint} disabled={disabled} />;
  }

  if (t === "string" || t === "number" || t === "integer") {
    return (
      <div className="field">
        <label htmlFor={id}>
          {label}
          {mark}
        </label>
        <Scalar schema={schema} value={value} onChange={onChange} {...common} />
        {footer}
      </div>
    );
  }

  return <JsonEditor value={value} onChange={onChange} id={id} label={label} required={required} hint={hint} disabled={disabled} />;
}

/** One string or number input. Numbers keep the typed text while it is not yet a number ("-", "1."). */
function Scalar({
  schema,
  value,
  onChange,
  ...rest
}: {
  schema: JsonSchema;
  value: Json;
  onChange: (v: Json) => void;
  id: string;
  disabled?: boolean;
  onBlur?: () => void;
  "aria-required"?: boolean;
  "aria-invalid"?: boolean;
  "aria-describedby"?: string;
}) {
  const t = typeOf(schema);
  const numeric = t === "number" || t === "integer";
  const [draft, setDraft] = useState<string>(value === undefined || value === null ? "" : String(value));
  useEffect(() => {
    const shown = value === undefined || value === null ? "" : String(value);
    if (numeric ? Number(draft) !== value || draft === "" : draft !== shown) setDraft(shown);
    // only outside changes (JSON mode, reset) should overwrite the draft
  }, [value]);
  if (numeric) {
    return (
      <input
        type="number"
        inputMode={t === "integer" ? "numeric" : "decimal"}
        step={t === "integer" ? 1 : "any"}
        {...rest}
        value={draft}
        onChange={(e) => {
          setDraft(e.target.value);
          const n = e.target.value === "" ? undefined : Number(e.target.value);
          if (n === undefined || Number.isFinite(n)) onChange(n);
        }}
      />
    );
  }
  const type = schema.format === "email" ? "email" : schema.format === "uri" || schema.format === "url" ? "url" : "text";
  const long = typeof schema.maxLength !== "number" || schema.maxLength > 200;
  if (schema.format === "textarea" || (long && typeof value === "string" && value.includes("\n"))) {
    return <textarea {...rest} value={draft} onChange={(e) => (setDraft(e.target.value), onChange(e.target.value || undefined))} />;
  }
  return (
    <input
      type={type}
      {...rest}
      value={draft}
      onChange={(e) => {
        setDraft(e.target.value);
        onChange(e.target.value === "" ? undefined : e.target.value);
      }}
    />
  );
}

/** A JSON textarea; only a value that parses reaches `onChange`. */
export function JsonEditor({
  value,
  onChange,
  id,
  label,
  required,
  hint,
  disabled,
}: {
  value: Json;
  onChange: (v: Json) => void;
  id: string;
  label: string;
  required?: boolean;
  hint?: string | null;
  disabled?: boolean;
}) {
  const show = (v: Json) => (v === undefined ? "" : JSON.stringify(v, null, 2));
  const [text, setText] = useState(() => show(value));
  const [error, setError] = useState<string | null>(null);
  const autoId = useId();
  useEffect(() => {
    // Follow outside changes unless the text already means this value.
    try {
      if (JSON.stringify(text.trim() ? JSON.parse(text) : undefined) === JSON.stringify(value)) return;
    } catch {
      // the user is mid-edit; fall through and show the outside value
    }
    setText(show(value));
    setError(null);
  }, [value]);
  const errorId = `${id}-error-${autoId}`;
  return (
    <div className="field">
      <label htmlFor={id}>
        {label}
        {required && (
          <span className="required" aria-hidden="true">
            {" "}
            *
          </span>
        )}
      </label>
      <textarea
        id={id}
        spellCheck={false}
        disabled={disabled}
        value={text}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? errorId : undefined}
        onChange={(e) => {
          setText(e.target.value);
          if (!e.target.value.trim()) {
            setError(null);
            onChange(undefined);
            return;
          }
          try {
            onChange(JSON.parse(e.target.value));
            setError(null);
          } catch (err) {
            setError(`Not valid JSON yet: ${err instanceof Error ? err.message : "parse error"}`);
          }
        }}
      />
      {hint && <span className="field-hint">{hint}</span>}
      {error && (
        <span className="field-error" id={errorId}>
          {error}
        </span>
      )}
    </div>
  );
}
