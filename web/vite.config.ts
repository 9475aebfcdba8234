import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The binary embeds `dist/`; `EXECUTOR_URL` points the dev server's proxy at a running executor.
const target = process.env.EXECUTOR_URL ?? "http://127.0.0.1:4788";

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: "dist",
    assetsDir: "assets",
    sourcemap: false,
    // Every file but index.html is content-hashed, so the server can mark it immutable.
    rollupOptions: { output: { manualChunks: undefined } },
  },
  server: { proxy: { "/api": target, "/mcp": target } },
  test: { environment: "node" },
} as never);
