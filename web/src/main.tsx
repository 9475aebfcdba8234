import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { bootstrapToken, detectMode } from "./api/auth";
import { ApiError } from "./api/http";
import { App } from "./app";
import "./styles.css";

bootstrapToken();

const queries = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 5_000,
      refetchOnWindowFocus: true,
      // 4xx answers will not change on a retry
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
    },
  },
});

// Which server this is decides the shell (token gate or sign-in), so it is asked before the first
// render; it is one small request, and a local server answers it at once.
void detectMode().then(() =>
  createRoot(document.getElementById("root")!).render(
    <StrictMode>
      <QueryClientProvider client={queries}>
        <App />
      </QueryClientProvider>
    </StrictMode>,
  ),
);
