// /oauth/consent?request=<id> — an MCP client asks to act as the signed-in person. The server's
// authorize endpoint sends the browser here (a signed-out one is sent to sign in first, by the
// shell's 401 handling); the page names the client, the scopes in plain words and where the
// browser goes next, then posts the answer and follows the server's `redirectTo`.

import { useMutation } from "@tanstack/react-query";
import { useSearch } from "wouter";
import { ApiError, describeError } from "../api/http";
import { answerConsent, scopeSentence, useConsentRequest, useMe } from "../api/team";
import { AuthCard } from "../components/account-form";
import { ErrorNote } from "../components/fields";
import "./team.css";

export default function OAuthConsentPage() {
  const id = new URLSearchParams(useSearch()).get("request") ?? "";
  const request = useConsentRequest(id);
  const me = useMe();
  const answer = useMutation({
    mutationFn: (approve: boolean) => answerConsent(id, approve),
    onSuccess: (r) => window.location.assign(r.redirectTo),
  });

  if (!id) {
    return (
      <AuthCard
        title="No request to answer"
        lede="This page answers a sign-in request from an MCP client. Start the connection again from your agent."
      />
    );
  }
  if (request.isPending) {
    return (
      <AuthCard title="Connect an agent">
        <p className="muted" role="status">
          Loading the request…
        </p>
      </AuthCard>
    );
  }
  if (request.isError) {
    const gone = request.error instanceof ApiError && request.error.status === 404;
    return (
      <AuthCard title={gone ? "This request is no longer open" : "The request could not be loaded"}>
        <p className={gone ? "muted" : "form-top-error"} role="alert">
          {gone
            ? "It was answered already, or it expired. Start the connection again from your agent."
            : describeError(request.error)}
        </p>
      </AuthCard>
    );
  }
  const r = request.data;
  const done = answer.isSuccess;
  return (
    <AuthCard
      title={`Connect ${r.clientName}?`}
      lede={
        <>
          <strong>{r.clientName}</strong> asks to use Executor
          {me.data ? (
            <>
              {" "}
              as <strong>{me.data.user.email}</strong>
            </>
          ) : null}
          . Approve only if you started this from an agent you trust.
        </>
      }
    >
      <div className="stack consent-facts">
        <div>
          <h2 className="auth-h2">It will be able to</h2>
          <ul className="consent-scopes">
            {r.scopes.map((s) => (
              <li key={s.scope}>
                {scopeSentence(s)} <code className="muted">{s.scope}</code>
              </li>
            ))}
          </ul>
        </div>
        {r.resource && (
          <p className="field-hint">
            For <code>{r.resource}</code>
          </p>
        )}
        <p className="field-hint">
          Afterwards your browser goes back to
          <br />
          <code data-testid="redirect-origin">{r.redirectOrigin}</code>
        </p>
      </div>
      <ErrorNote error={answer.error} />
      {done ? (
        <p role="status" className="muted">
          Answer sent. Going back to {r.clientName}…
        </p>
      ) : (
        <div className="actions auth-actions">
          <button type="button" disabled={answer.isPending} onClick={() => answer.mutate(false)}>
            Deny
          </button>
          <button type="button" className="primary" disabled={answer.isPending} onClick={() => answer.mutate(true)}>
            {answer.isPending && answer.variables ? "Approving…" : "Approve"}
          </button>
        </div>
      )}
    </AuthCard>
  );
}
