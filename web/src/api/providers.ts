// Secret providers: where credentials' values live (`GET /api/providers` lists their keys).

import { useQuery } from "@tanstack/react-query";
import { api } from "./http";
import type * as T from "./types";

export type ProviderItem = T.ProviderItem;

export function useProviders() {
  return useQuery({ queryKey: ["providers"], queryFn: () => api<string[]>("/providers") });
}

export function useProviderItems(key: string | null) {
  return useQuery({
    queryKey: ["providers", key, "items"],
    queryFn: () => api<ProviderItem[]>(`/providers/${encodeURIComponent(key!)}/items`),
    enabled: !!key,
    retry: false,
  });
}
