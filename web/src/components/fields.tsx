// Form pieces the pages share: a form's or section's error, and a text field with its hint and error.

import type { ReactNode } from "react";
import { describeError } from "../api/http";

/** An error (a message, or what was thrown) announced at the top of a form or section; none, nothing. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p className="form-top-error" role="alert">
      {typeof error === "string" ? error : describeError(error)}
    </p>
  );
}

/**
 * A one-line text field. With a `hint`, the hint describes it and gives way to its error; without,
 * its error (when it has one) stands below it and describes it. `code` is for machine text (a slug,
 * a pattern): monospace, no spell check. `type` and `autoComplete` are for sign-in forms (an email,
 * a password the browser may offer to fill).
 */
export function TextField({
  id,
  label,
  value,
  onChange,
  error,
  hint,
  placeholder,
  code,
  type = "text",
  autoComplete = "off",
  required,
  autoFocus,
}: {
  id: string;
  label: string;
  value: string;
  onChange: (value: string) => void;
  error: string | null;
  hint?: ReactNode;
  placeholder?: string;
  code?: boolean;
  type?: string;
  autoComplete?: string;
  required?: boolean;
  autoFocus?: boolean;
}) {
  const hinted = hint !== undefined;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <input
        id={id}
        className={code ? "mono" : undefined}
        type={type}
        value={value}
        placeholder={placeholder}
        autoComplete={autoComplete}
        required={required}
        aria-required={required || undefined}
        autoFocus={autoFocus}
        spellCheck={code ? false : undefined}
        aria-invalid={error ? true : undefined}
        aria-describedby={hinted ? `${id}-hint` : error ? `${id}-error` : undefined}
        onChange={(e) => onChange(e.target.value)}
      />
      {hinted ? (
        <span className="field-hint" id={`${id}-hint`}>
          {error ? <span className="field-error">{error}</span> : hint}
        </span>
      ) : (
        error && (
          <span className="field-error" id={`${id}-error`}>
            {error}
          </span>
        )
      )}
    </div>
  );
}
