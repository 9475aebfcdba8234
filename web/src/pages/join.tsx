// /join/<code> — an invite link. The code is checked first (`GET /api/invite-status/:code`), so a
// used or expired one says so before anyone types a password; a valid one shows the sign-up form,
// which sends the code along.

import { useQuery } from "@tanstack/react-query";
import { Link, useParams } from "wouter";
import { describeError } from "../api/http";
import { inviteStatus, normalizeInviteCode } from "../api/team";
import { AuthCard, SignUpForm } from "../components/account-form";
import "./team.css";

export default function JoinPage() {
  const { code: raw = "" } = useParams<{ code: string }>();
  const code = normalizeInviteCode(raw);
  const status = useQuery({
    queryKey: ["team", "invite-status", code],
    queryFn: () => inviteStatus(code),
    enabled: !!code,
    retry: false,
    refetchOnWindowFocus: false,
  });
  if (status.isPending) {
    return (
      <AuthCard title="Join Executor">
        <p className="muted" role="status">
          Checking the invite…
        </p>
      </AuthCard>
    );
  }
  if (status.isError) {
    return (
      <AuthCard title="Join Executor">
        <p className="form-top-error" role="alert">
          {describeError(status.error)}
        </p>
      </AuthCard>
    );
  }
  if (!status.data.valid) {
    return (
      <AuthCard
        title="Invite not valid"
        lede="This invite code is unknown, already used, or expired. Ask whoever invited you for a new link."
      >
        <p>
          <code>{code}</code>
        </p>
        <p>
          Already have an account? <Link href="/login">Sign in</Link>.
        </p>
      </AuthCard>
    );
  }
  return (
    <AuthCard title="Join Executor" lede="You were invited to this workspace. Create your account to join it.">
      <p className="field-hint">
        Invite code <code data-testid="invite-code">{code}</code>
      </p>
      <SignUpForm inviteCode={code} submitLabel="Create account and join" />
      <p className="field-hint">
        Already have an account? <Link href="/login">Sign in</Link>.
      </p>
    </AuthCard>
  );
}
