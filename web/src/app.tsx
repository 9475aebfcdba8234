// The shell: sidebar, the token prompt on a 401, and the route table. Every page has a stable,
// linkable path; pages are lazy chunks so the first load of `/` carries only what `/` needs.
// On the team server a 401 sends the browser to sign in (and back), a workspace with no member yet
// to setup, and the sign-in, setup, join, consent and device pages stand alone, outside the shell.

import { lazy, Suspense, useEffect, useState } from "react";
import { Link, Redirect, Route, Switch, useLocation } from "wouter";
import { navigate } from "wouter/use-browser-location";
import { isPublicPath, isTeam, loginPath, needsSetup, onUnauthorized } from "./api/auth";
import { isAdminRole, ROLE_LABELS, useMe } from "./api/team";
import { TokenGate } from "./components/token-gate";

const IntegrationsPage = lazy(() => import("./pages/integrations"));
const AddIntegrationPage = lazy(() => import("./pages/add-integration"));
const IntegrationPage = lazy(() => import("./pages/integration"));
const PoliciesPage = lazy(() => import("./pages/policies"));
const ToolkitsPage = lazy(() => import("./pages/toolkits"));
const ToolkitPage = lazy(() => import("./pages/toolkit"));
const ExecutionsPage = lazy(() => import("./pages/executions"));
const ExecutionPage = lazy(() => import("./pages/execution"));
const ToolChangesPage = lazy(() => import("./pages/tool-changes"));
const PlaygroundPage = lazy(() => import("./pages/playground"));
const ResumePage = lazy(() => import("./pages/resume"));
const ProvidersPage = lazy(() => import("./pages/providers"));
const OAuthAppsPage = lazy(() => import("./pages/oauth-apps"));
const SettingsPage = lazy(() => import("./pages/settings"));
// the team server's
const SetupPage = lazy(() => import("./pages/setup"));
const LoginPage = lazy(() => import("./pages/login"));
const JoinPage = lazy(() => import("./pages/join"));
const OAuthConsentPage = lazy(() => import("./pages/oauth-consent"));
const DevicePage = lazy(() => import("./pages/device"));
const AccountPage = lazy(() => import("./pages/account"));
const AdminPage = lazy(() => import("./pages/admin"));
const ActivityPage = lazy(() => import("./pages/activity"));

const NAV: { href: string; label: string }[] = [
  { href: "/", label: "Integrations" },
  { href: "/toolkits", label: "Toolkits" },
  { href: "/policies", label: "Policies" },
  { href: "/executions", label: "Executions" },
  { href: "/tool-changes", label: "Tool changes" },
  { href: "/playground", label: "Playground" },
  { href: "/providers", label: "Providers" },
  { href: "/oauth-apps", label: "OAuth apps" },
  { href: "/settings", label: "Settings" },
];

/** The team server's own links: Admin and Activity only for owners and admins. */
function teamNav(admin: boolean): { href: string; label: string }[] {
  const items = [{ href: "/account", label: "Account" }];
  if (admin) items.push({ href: "/admin", label: "Admin" }, { href: "/activity", label: "Activity" });
  return items;
}

/** The team server's pages outside the shell (a card in the middle of the window). */
function isChromeless(pathname: string): boolean {
  return isPublicPath(pathname) || pathname === "/oauth/consent" || pathname === "/device";
}

function isActive(location: string, href: string): boolean {
  if (href === "/") return location === "/" || location.startsWith("/integrations");
  return location === href || location.startsWith(`${href}/`);
}

function Sidebar() {
  const [location] = useLocation();
  const me = useMe();
  const team = isTeam();
  const nav = team ? [...NAV, ...teamNav(isAdminRole(me.data?.role))] : NAV;
  return (
    <nav className="sidebar" aria-label="Main">
      <Link href="/" className="wordmark">
        Executor
      </Link>
      <ul>
        {nav.map((item) => (
          <li key={item.href}>
            <Link href={item.href} aria-current={isActive(location, item.href) ? "page" : undefined}>
              {item.label}
            </Link>
          </li>
        ))}
      </ul>
      <div className="sidebar-footer">
        <a href="/api/docs">API reference</a>
      </div>
      {team && me.data && (
        <div className="sidebar-account" data-testid="signed-in-as">
          <span className="visually-hidden">Signed in as</span>
          <span className="email" title={me.data.user.email}>
            {me.data.user.email}
          </span>
          <span>
            <span className="badge">{ROLE_LABELS[me.data.role]}</span>
          </span>
        </div>
      )}
    </nav>
  );
}

export function NotFound() {
  return (
    <section className="page">
      <h1>Page not found</h1>
      <p>
        Nothing lives at this address. <Link href="/">Go to the integrations</Link>.
      </p>
    </section>
  );
}

/** A 401 on the team server: sign in, then come back here (unless this is a sign-in page itself). */
function signInAgain() {
  const { pathname, search, hash } = window.location;
  if (!isPublicPath(pathname)) navigate(loginPath(pathname + search + hash), { replace: true });
}

function StandalonePages() {
  return (
    <main id="main" className="gate" tabIndex={-1}>
      <Suspense fallback={<p className="muted" role="status">Loading…</p>}>
        <Switch>
          <Route path="/setup" component={SetupPage} />
          <Route path="/login" component={LoginPage} />
          <Route path="/join/:code" component={JoinPage} />
          <Route path="/oauth/consent" component={OAuthConsentPage} />
          <Route path="/device" component={DevicePage} />
        </Switch>
      </Suspense>
    </main>
  );
}

export function App() {
  const [unauthorized, setUnauthorized] = useState(false);
  const [location] = useLocation();
  const team = isTeam();
  useEffect(() => onUnauthorized(() => (isTeam() ? signInAgain() : setUnauthorized(true))), []);
  if (unauthorized) return <TokenGate />;
  if (team && needsSetup() && location !== "/setup") return <Redirect to="/setup" replace />;
  if (team && isChromeless(location)) return <StandalonePages />;
  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <Sidebar />
      <main id="main" tabIndex={-1}>
        <Suspense fallback={<p className="page muted" role="status">Loading…</p>}>
          <Switch>
            <Route path="/" component={IntegrationsPage} />
            <Route path="/integrations/add/:kind" component={AddIntegrationPage} />
            <Route path="/integrations/:slug" component={IntegrationPage} />
            <Route path="/toolkits" component={ToolkitsPage} />
            <Route path="/toolkits/:slug" component={ToolkitPage} />
            <Route path="/policies" component={PoliciesPage} />
            <Route path="/executions" component={ExecutionsPage} />
            <Route path="/executions/:id" component={ExecutionPage} />
            <Route path="/tool-changes" component={ToolChangesPage} />
            <Route path="/playground" component={PlaygroundPage} />
            <Route path="/resume/:id" component={ResumePage} />
            <Route path="/providers" component={ProvidersPage} />
            <Route path="/oauth-apps" component={OAuthAppsPage} />
            <Route path="/settings" component={SettingsPage} />
            {team && (
              <>
                <Route path="/account" component={AccountPage} />
                <Route path="/admin" component={AdminPage} />
                <Route path="/activity" component={ActivityPage} />
              </>
            )}
            <Route component={NotFound} />
          </Switch>
        </Suspense>
      </main>
    </div>
  );
}
