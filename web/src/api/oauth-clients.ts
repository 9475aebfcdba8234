// OAuth client registrations ("OAuth apps"): `GET/POST /api/oauth/clients`, `DELETE …/:slug`.

import { useQuery } from "@tanstack/react-query";
import { api } from "./http";

export type Grant = "authorization_code" | "client_credentials";

export interface OAuthClient {
  owner: "org" | "user";
  slug: string;
  grant: Grant | string;
  authorizationUrl: string;
  tokenUrl: string;
  clientId: string;
  origin: { kind: string; integration?: string };
  resource?: string;
  tokenEndpointAuthMethod?: string;
}

export interface OAuthClientInput {
  owner: "org" | "user";
  slug: string;
  grant: Grant;
  authorizationUrl: string;
  tokenUrl: string;
  clientId: string;
  clientSecret?: string;
  resource?: string;
  tokenEndpointAuthMethod?: string;
}

export function useOAuthClients() {
  return useQuery({ queryKey: ["oauth-clients"], queryFn: () => api<OAuthClient[]>("/oauth/clients") });
}

/** Creates or replaces the registration of that slug. */
export function putOAuthClient(input: OAuthClientInput): Promise<{ client: string }> {
  return api<{ client: string }>("/oauth/clients", { method: "POST", body: input });
}

export function removeOAuthClient(slug: string, owner: "org" | "user"): Promise<{ removed: boolean }> {
  return api<{ removed: boolean }>(`/oauth/clients/${encodeURIComponent(slug)}`, { method: "DELETE", body: { owner } });
}

/** Where providers send the browser back; register it with the OAuth app. */
export function callbackUrl(): string {
  return `${window.location.origin}/api/oauth/callback`;
}
