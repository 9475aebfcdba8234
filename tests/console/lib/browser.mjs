// Shared by the console tests: start the executor binary (the one that serves the console),
// optionally a vite dev server in front of it, and a headless Chromium; save screenshots.
//
// Environment:
//   EXECUTOR_BIN   the binary (default <repo>/target/debug/executor)
//   CONSOLE_VITE=1 serve the pages from `vite dev` (web/) proxying to the binary, for a binary
//                  that does not embed the console yet
//   CHROMIUM       the browser (default /usr/bin/chromium)
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(here, "..", "..", "..");
export const SHOTS = path.join(REPO, "docs", "console");

const { startExecutor, freePort } = await import("../../e2e/lib/executor.mjs");
const { chromium } = await import("playwright-core");

async function startVite(target) {
  const port = await freePort();
  const child = spawn(
    path.join(REPO, "web", "node_modules", ".bin", "vite"),
    ["--port", String(port), "--strictPort", "--host", "127.0.0.1", "--bypass-lock"],
    { cwd: path.join(REPO, "web"), env: { ...process.env, EXECUTOR_URL: target }, stdio: "ignore" },
  );
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(origin)).ok) break;
    } catch {}
    await sleep(100);
  }
  return { origin, close: () => child.kill("SIGTERM") };
}

/**
 * Starts everything; `open(path)` gives a signed-in page. `ex` is the e2e harness instance (its
 * `api(method, path, body)` talks to the binary directly).
 */
export async function startConsole({ colorScheme = "light" } = {}) {
  const ex = await startExecutor();
  const binaryOrigin = `http://127.0.0.1:${ex.port}`;
  const vite = process.env.CONSOLE_VITE === "1" ? await startVite(binaryOrigin) : null;
  const origin = vite?.origin ?? binaryOrigin;
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium" });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme });
  const errors = [];
  const open = async (p) => {
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${origin}${p}${p.includes("?") ? "&" : "?"}_token=${encodeURIComponent(ex.token)}`);
    return page;
  };
  const shot = async (page, name) => {
    fs.mkdirSync(SHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  };
  const close = async () => {
    await browser.close().catch(() => {});
    vite?.close();
    await ex.kill();
  };
  return { ex, origin, browser, context, open, shot, close, errors };
}
