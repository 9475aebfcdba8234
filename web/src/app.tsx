// The shell: sidebar, the token prompt on a 401, and the route table. Every page has a stable,
// linkable path; pages are lazy chunks so the first load of `/` carries only what `/` needs.

import { lazy, Suspense, useEffect, useState } from "react";
import { Link, Route, Switch, useLocation } from "wouter";
import { onUnauthorized } from "./api/auth";
import { TokenGate } from "./components/token-gate";

const IntegrationsPage = lazy(() => import("./pages/integrations"));
const AddIntegrationPage = lazy(() => import("./pages/add-integration"));
const IntegrationPage = lazy(() => import("./pages/integration"));
const PoliciesPage = lazy(() => import("./pages/policies"));
const ToolkitsPage = lazy(() => import("./pages/toolkits"));
const ToolkitPage = lazy(() => import("./pages/toolkit"));
const ExecutionsPage = lazy(() => import("./pages/executions"));
const ExecutionPage = lazy(() => import("./pages/execution"));
const PlaygroundPage = lazy(() => import("./pages/playground"));
const ResumePage = lazy(() => import("./pages/resume"));
const ProvidersPage = lazy(() => import("./pages/providers"));
const OAuthAppsPage = lazy(() => import("./pages/oauth-apps"));
const SettingsPage = lazy(() => import("./pages/settings"));

const NAV: { href: string; label: string }[] = [
  { href: "/", label: "Integrations" },
  { href: "/toolkits", label: "Toolkits" },
  { href: "/policies", label: "Policies" },
  { href: "/executions", label: "Executions" },
  { href: "/playground", label: "Playground" },
  { href: "/providers", label: "Providers" },
  { href: "/oauth-apps", label: "OAuth apps" },
  { href: "/settings", label: "Settings" },
];

function isActive(location: string, href: string): boolean {
  if (href === "/") return location === "/" || location.startsWith("/integrations");
  return location === href || location.startsWith(`${href}/`);
}

function Sidebar() {
  const [location] = useLocation();
  return (
    <nav className="sidebar" aria-label="Main">
      <Link href="/" className="wordmark">
        Executor
      </Link>
      <ul>
        {NAV.map((item) => (
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

export function App() {
  const [unauthorized, setUnauthorized] = useState(false);
  useEffect(() => onUnauthorized(() => setUnauthorized(true)), []);
  if (unauthorized) return <TokenGate />;
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
            <Route path="/playground" component={PlaygroundPage} />
            <Route path="/resume/:id" component={ResumePage} />
            <Route path="/providers" component={ProvidersPage} />
            <Route path="/oauth-apps" component={OAuthAppsPage} />
            <Route path="/settings" component={SettingsPage} />
            <Route component={NotFound} />
          </Switch>
        </Suspense>
      </main>
    </div>
  );
}
