// /login — email and password. A wrong pair says so; too many failures say how long to wait and
// hold the button until then. Afterwards the browser goes back to `returnTo`, but only to a path
// on this origin (never another host: no open redirect).

import { useMutation } from "@tanstack/react-query";
import { useEffect, useState, type FormEvent } from "react";
import { useLocation, useSearch } from "wouter";
import { safeReturnTo } from "../api/auth";
import { ApiError, describeError } from "../api/http";
import { normalizeInviteCode, retryAfterOf, signIn, waitSentence } from "../api/team";
import { AuthCard, checkAccountInput, focusFirst, type AccountField } from "../components/account-form";
import { ErrorNote, TextField } from "../components/fields";
import "./team.css";

/** Seconds left until `until` (epoch ms), ticking once a second; 0 once it has passed. */
function useCountdown(until: number | null): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (until === null) return;
    const timer = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(timer);
  }, [until]);
  return until === null ? 0 : Math.max(0, Math.ceil((until - now) / 1000));
}

export default function LoginPage() {
  const search = new URLSearchParams(useSearch());
  const returnTo = safeReturnTo(search.get("returnTo"), window.location.origin);
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [local, setLocal] = useState<Partial<Record<AccountField, string>>>({});
  const [blockedUntil, setBlockedUntil] = useState<number | null>(null);
  const waiting = useCountdown(blockedUntil);

  const login = useMutation({
    mutationFn: () => signIn({ email: email.trim(), password }),
    // a full load: the console starts again with the new cookie and nothing cached from before
    onSuccess: () => window.location.assign(returnTo),
    onError: (error) => {
      const wait = retryAfterOf(error);
      setBlockedUntil(wait !== null ? Date.now() + wait * 1000 : null);
      if (error instanceof ApiError && error.tag === "InvalidCredentialsError") {
        setPassword("");
        document.getElementById("login-password")?.focus();
      }
    },
  });

  const error = login.error;
  const tag = error instanceof ApiError ? error.tag : null;
  // A wrong pair concerns both fields: it stands beside the password, which takes the focus.
  const credentialsError = tag === "InvalidCredentialsError" ? describeError(error) : null;
  let formError: string | null = null;
  if (tag === "TooManyAttemptsError")
    formError =
      waiting > 0
        ? `Too many attempts. Try again in ${waitSentence(waiting)}.`
        : retryAfterOf(error) === null
          ? describeError(error)
          : "Too many attempts. You can try again now.";
  else if (error && !credentialsError) formError = describeError(error);

  const submit = (e: FormEvent) => {
    e.preventDefault();
    // No length check on the password: that is the server's business at sign-in.
    const found: Partial<Record<AccountField, string>> = {};
    const problem = checkAccountInput({ email, password: "x".repeat(8) }, false).email;
    if (problem) found.email = problem;
    if (!password) found.password = "Enter your password.";
    setLocal(found);
    if (Object.keys(found).length) return focusFirst("login", found);
    login.mutate();
  };

  return (
    <AuthCard title="Sign in to Executor">
      <form className="stack" onSubmit={submit} noValidate aria-label="Sign in">
        <ErrorNote error={formError} />
        <TextField
          id="login-email"
          label="Email"
          type="email"
          value={email}
          onChange={(v) => {
            setEmail(v);
            setLocal((x) => ({ ...x, email: undefined }));
          }}
          error={local.email ?? null}
          autoComplete="username"
          required
          autoFocus
        />
        <TextField
          id="login-password"
          label="Password"
          type="password"
          value={password}
          onChange={(v) => {
            setPassword(v);
            setLocal((x) => ({ ...x, password: undefined }));
          }}
          error={local.password ?? credentialsError}
          autoComplete="current-password"
          required
        />
        <button type="submit" className="primary auth-submit" disabled={login.isPending || waiting > 0}>
          {login.isPending ? "Signing in…" : "Sign in"}
        </button>
      </form>
      <JoinWithCode />
    </AuthCard>
  );
}

/** For someone who was given a code rather than a link: it opens the join page. */
function JoinWithCode() {
  const [, navigate] = useLocation();
  const [code, setCode] = useState("");
  const [error, setError] = useState<string | null>(null);
  return (
    <details className="auth-more">
      <summary>Have an invite code?</summary>
      <form
        className="stack"
        noValidate
        aria-label="Join with an invite code"
        onSubmit={(e) => {
          e.preventDefault();
          const normal = normalizeInviteCode(code);
          if (!normal) return setError("Enter the code, like ABCD-EFGH-JKLM.");
          navigate(`/join/${encodeURIComponent(normal)}`);
        }}
      >
        <TextField
          id="login-invite"
          label="Invite code"
          code
          value={code}
          placeholder="XXXX-XXXX-XXXX"
          onChange={(v) => {
            setCode(v);
            setError(null);
          }}
          error={error}
        />
        <button type="submit">Continue</button>
      </form>
    </details>
  );
}
