// /setup — the team server's first run: the first account made here owns the workspace (no invite
// needed). Once anyone is a member, the page says so and points at sign-in instead.

import { Link } from "wouter";
import { needsSetup } from "../api/auth";
import { AuthCard, SignUpForm } from "../components/account-form";
import "./team.css";

export default function SetupPage() {
  if (!needsSetup()) {
    return (
      <AuthCard title="Executor is already set up" lede="This workspace has an owner. Sign in, or ask an admin for an invite link.">
        <p>
          <Link href="/login">Sign in</Link>
        </p>
      </AuthCard>
    );
  }
  return (
    <AuthCard
      title="Set up Executor"
      lede="Create the first account. It owns this workspace: it can invite people, choose who administers it, and see its activity."
    >
      <SignUpForm submitLabel="Create owner account" />
    </AuthCard>
  );
}
