// The team server's pages outside the shell (setup, sign-in, join, consent, device) share a centred
// card; setup and join share the sign-up form. A server error that concerns one field is shown
// beside it and takes the focus; any other stands at the top of the form.

import { useMutation } from "@tanstack/react-query";
import { useState, type FormEvent, type ReactNode } from "react";
import { ApiError, describeError } from "../api/http";
import { signUp } from "../api/team";
import { ErrorNote, TextField } from "./fields";
import "../pages/integrations.css";

/** The centred card: one heading, then the page's content. */
export function AuthCard({ title, lede, children }: { title: ReactNode; lede?: ReactNode; children?: ReactNode }) {
  return (
    <section className="card auth-card" aria-labelledby="auth-title">
      <p className="auth-wordmark" aria-hidden="true">
        Executor
      </p>
      <h1 id="auth-title">{title}</h1>
      {lede && <p className="muted auth-lede">{lede}</p>}
      {children}
    </section>
  );
}

export type AccountField = "name" | "email" | "password";

/** What the server's refusal of a sign-up or sign-in concerns: a field, or the form as a whole. */
export function fieldOfAccountError(error: unknown): AccountField | null {
  if (!(error instanceof ApiError)) return null;
  if (error.tag === "EmailTakenError") return "email";
  if (error.tag === "InvalidAccountInputError") {
    const named = error.field;
    if (named === "name" || named === "email" || named === "password") return named;
    if (/password/i.test(error.message)) return "password";
    if (/e-?mail/i.test(error.message)) return "email";
    if (/name/i.test(error.message)) return "name";
  }
  return null;
}

/** The checks the server makes (docs/team/API.md), made first so a slip needs no round trip. */
export function checkAccountInput(input: { name?: string; email: string; password: string }, withName: boolean) {
  const errors: Partial<Record<AccountField, string>> = {};
  if (withName) {
    const name = (input.name ?? "").trim();
    if (!name) errors.name = "Enter your name.";
    else if (name.length > 100) errors.name = "Use at most 100 characters.";
  }
  if (!input.email.trim()) errors.email = "Enter your email.";
  else if (!input.email.includes("@")) errors.email = "Enter an email address, like you@example.com.";
  if (!input.password) errors.password = "Enter a password.";
  else if (input.password.length < 8) errors.password = "Use at least 8 characters.";
  else if (input.password.length > 256) errors.password = "Use at most 256 characters.";
  return errors;
}

/** Moves the focus to the first field (`<prefix>-<field>`) with an error. */
export const focusFirst = (prefix: string, errors: Partial<Record<AccountField, string>>) => {
  const first = (["name", "email", "password"] as const).find((f) => errors[f]);
  if (first) document.getElementById(`${prefix}-${first}`)?.focus();
};

/**
 * Name, email, password → `POST /api/auth/sign-up/email` (with `inviteCode` when joining); on
 * success a full load of `/`, so the console starts again signed in (and no longer in setup).
 */
export function SignUpForm({ inviteCode, submitLabel }: { inviteCode?: string; submitLabel: string }) {
  const [name, setName] = useState("");
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [local, setLocal] = useState<Partial<Record<AccountField, string>>>({});
  const create = useMutation({
    mutationFn: () => signUp({ name: name.trim(), email: email.trim(), password, ...(inviteCode ? { inviteCode } : {}) }),
    onSuccess: () => window.location.assign("/"),
    onError: (error) => {
      const field = fieldOfAccountError(error);
      if (field) document.getElementById(`signup-${field}`)?.focus();
    },
  });
  const serverField = fieldOfAccountError(create.error);
  const errors = { ...local };
  if (serverField) errors[serverField] = describeError(create.error);
  const formError = create.error && !serverField ? create.error : null;

  const edit = (set: (v: string) => void, field: AccountField) => (v: string) => {
    set(v);
    setLocal((e) => ({ ...e, [field]: undefined }));
    create.reset();
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const found = checkAccountInput({ name, email, password }, true);
    setLocal(found);
    if (Object.keys(found).length) return focusFirst("signup", found);
    create.mutate();
  };

  return (
    <form className="stack" onSubmit={submit} noValidate aria-label="Create your account">
      <ErrorNote error={formError} />
      <TextField id="signup-name" label="Name" value={name} onChange={edit(setName, "name")} error={errors.name ?? null} autoComplete="name" required autoFocus />
      <TextField
        id="signup-email"
        label="Email"
        type="email"
        value={email}
        onChange={edit(setEmail, "email")}
        error={errors.email ?? null}
        autoComplete="email"
        required
      />
      <TextField
        id="signup-password"
        label="Password"
        type="password"
        value={password}
        onChange={edit(setPassword, "password")}
        error={errors.password ?? null}
        hint="At least 8 characters."
        autoComplete="new-password"
        required
      />
      <button type="submit" className="primary auth-submit" disabled={create.isPending}>
        {create.isPending ? "Creating your account…" : submitLabel}
      </button>
    </form>
  );
}
