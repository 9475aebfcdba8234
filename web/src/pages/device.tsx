// /device?user_code=… — the CLI's sign-in (`executor login`, RFC 8628). The terminal shows a code
// and opens this page; the person checks it is the same code, then approves or denies. The page
// needs a signed-in browser (the shell sends a signed-out one to sign in and back).

import { useMutation, useQuery } from "@tanstack/react-query";
import { useState, type FormEvent } from "react";
import { useSearch } from "wouter";
import { ApiError, describeError } from "../api/http";
import { answerDevice, getDeviceRequest, normalizeUserCode, useMe, type DeviceStatus } from "../api/team";
import { AuthCard } from "../components/account-form";
import { ErrorNote, TextField } from "../components/fields";
import "./team.css";

const SETTLED: Record<Exclude<DeviceStatus, "pending">, { title: string; text: string }> = {
  approved: { title: "Device signed in", text: "You can return to your terminal." },
  denied: { title: "Sign-in denied", text: "The terminal was refused. You can close this page." },
  expired: { title: "This code expired", text: "Run the sign-in command again to get a new code." },
};

export default function DevicePage() {
  const fromLink = new URLSearchParams(useSearch()).get("user_code") ?? "";
  const [typed, setTyped] = useState(fromLink);
  // the code being looked up: the link's at once, a typed one once submitted
  const [code, setCode] = useState(fromLink ? normalizeUserCode(fromLink) : "");
  const [typedError, setTypedError] = useState<string | null>(null);
  const me = useMe();
  const request = useQuery({
    queryKey: ["team", "device", code],
    queryFn: () => getDeviceRequest(code),
    enabled: !!code,
    retry: false,
    refetchOnWindowFocus: false,
  });
  const answer = useMutation({ mutationFn: (approve: boolean) => answerDevice(code, approve) });

  const lookUp = (e: FormEvent) => {
    e.preventDefault();
    const normal = normalizeUserCode(typed);
    if (!normal) return setTypedError("Enter the code your terminal shows.");
    setTypedError(null);
    answer.reset();
    setCode(normal);
  };

  const settled = answer.data?.status ?? (request.data && request.data.status !== "pending" ? request.data.status : null);
  if (settled && settled !== "pending") {
    const s = SETTLED[settled];
    return (
      <AuthCard title={s.title}>
        <p role="status" className="device-result">
          {s.text}
        </p>
      </AuthCard>
    );
  }

  const notFound = request.error instanceof ApiError && request.error.status === 404;
  const codeError = typedError ?? (notFound ? "No sign-in is waiting with this code. Check it against your terminal." : null);
  // an edited code must be looked up again before it can be approved
  const confirming = !!code && request.isSuccess && normalizeUserCode(typed) === code;

  return (
    <AuthCard
      title="Sign in a device"
      lede={
        <>
          A terminal asks to sign in to Executor as{" "}
          {me.data ? <strong>{me.data.user.email}</strong> : "you"}. Check that the code matches the one it shows.
        </>
      }
    >
      <form className="stack" onSubmit={lookUp} noValidate aria-label="Device code">
        <TextField
          id="device-code"
          label="Code shown in your terminal"
          code
          value={typed}
          placeholder="ABCD-EFGH"
          onChange={(v) => {
            setTyped(v);
            setTypedError(null);
          }}
          error={codeError}
          autoFocus={!fromLink}
        />
        {!confirming && (
          <button type="submit" className="primary" disabled={request.isFetching}>
            {request.isFetching ? "Checking…" : "Continue"}
          </button>
        )}
      </form>
      {request.isError && !notFound && <ErrorNote error={request.error} />}
      {confirming && (
        <>
          <p className="muted">
            Client <code>{request.data.clientId}</code> · code <code data-testid="device-user-code">{request.data.userCode}</code>
          </p>
          <ErrorNote error={answer.error ? describeError(answer.error) : null} />
          <div className="actions auth-actions">
            <button type="button" disabled={answer.isPending} onClick={() => answer.mutate(false)}>
              Deny
            </button>
            <button type="button" className="primary" disabled={answer.isPending} onClick={() => answer.mutate(true)}>
              {answer.isPending && answer.variables ? "Approving…" : "Approve"}
            </button>
          </div>
        </>
      )}
    </AuthCard>
  );
}
