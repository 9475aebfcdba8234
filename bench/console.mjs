#!/usr/bin/env node
// The console's figures in headless Chromium (issue #21): JS+CSS bytes of a cold first load of
// `/` (compressed as sent, and decoded), DOMContentLoaded, the API requests `/` makes, and how
// long a 5,000-tool integration's Tools tab takes to show its tree. Medians of --rounds runs,
// each in a fresh browser context (empty cache).
//
//   node bench/console.mjs [--rounds 7] [--original path/to/executor-1.5.9]   (run after `npm ci` in tests/console)
//
// With --original, the original's first load of `/` is measured the same way, rounds alternating.
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import { setTimeout as sleep } from "node:timers/promises";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const require = createRequire(path.join(repo, "tests", "console", "package.json"));
const { chromium } = require("playwright-core");
const { startExecutor, freePort } = await import(path.join(repo, "tests", "e2e", "lib", "executor.mjs"));

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const rounds = Number(arg("--rounds", "7"));
const original = arg("--original", null);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** A spec with `n` GET operations in 50 tags, served on loopback. */
function serveBigSpec(n) {
  const paths = {};
  for (let i = 0; i < n; i++) {
    paths[`/g${i % 50}/op${i}`] = {
      get: {
        operationId: `group${i % 50}_op${i}`,
        summary: `Operation ${i}`,
        tags: [`group${i % 50}`],
        parameters: [{ name: "q", in: "query", schema: { type: "string" } }],
        responses: { 200: { description: "ok" } },
      },
    };
  }
  const spec = JSON.stringify({ openapi: "3.0.3", info: { title: "Big", version: "1" }, servers: [{ url: "http://127.0.0.1:9/" }], paths });
  const server = http.createServer((_, res) => res.writeHead(200, { "content-type": "application/json" }).end(spec));
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${server.address().port}/spec.json`, close: () => server.close() })));
}

/** One cold load of `origin/`: bytes of JS and CSS, DOMContentLoaded, API requests. */
async function firstLoad(browser, origin, token, ready) {
  const context = await browser.newContext();
  const page = await context.newPage();
  const api = [];
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith("/api/")) api.push(u.pathname);
  });
  await page.goto(`${origin}/${token ? `?_token=${token}` : ""}`);
  if (ready) await page.waitForSelector(ready);
  await page.waitForLoadState("networkidle");
  const m = await page.evaluate(() => {
    const nav = performance.getEntriesByType("navigation")[0];
    let encoded = 0;
    let decoded = 0;
    for (const e of performance.getEntriesByType("resource")) {
      if (!/\.(js|css|mjs)(\?|$)/.test(new URL(e.name).pathname)) continue;
      encoded += e.encodedBodySize;
      decoded += e.decodedBodySize;
    }
    return { encoded, decoded, dcl: nav.domContentLoadedEventEnd - nav.startTime };
  });
  await context.close();
  return { ...m, api: api.length };
}

async function startOriginal(bin) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "exec-orig-"));
  const port = await freePort();
  const child = spawn(bin, ["web", "--port", String(port), "--hostname", "127.0.0.1"], { env: { ...process.env, HOME: home }, stdio: "ignore" });
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(origin)).ok) break;
    } catch {}
    await sleep(100);
  }
  return { origin, close: () => child.kill("SIGTERM") };
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium" });
const ex = await startExecutor();
const origin = `http://127.0.0.1:${ex.port}`;
const orig = original ? await startOriginal(original) : null;

const ours = [];
const theirs = [];
for (let r = 0; r < rounds; r++) {
  ours.push(await firstLoad(browser, origin, ex.token, "h1"));
  if (orig) theirs.push(await firstLoad(browser, orig.origin, null, null));
}

// 5,000 tools behind one connection.
const big = await serveBigSpec(5000);
const add = await ex.api("POST", "/api/openapi/specs", { spec: { kind: "url", url: big.url }, slug: "big", name: "Big" });
if (add.status !== 200) throw new Error(`adding the big spec: ${JSON.stringify(add.body)}`);
const conn = await ex.api("POST", "/api/connections", { owner: "org", name: "main", integration: "big", template: add.body.authMethods?.[0]?.template ?? "none" });
if (conn.status !== 200) throw new Error(`connecting: ${JSON.stringify(conn.body)}`);
const tab = [];
for (let r = 0; r < rounds; r++) {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${origin}/integrations/big?_token=${ex.token}`);
  await page.getByRole("tab", { name: /tools/i }).waitFor();
  const t0 = Date.now();
  await page.getByRole("tab", { name: /tools/i }).click();
  await page.locator('[data-testid="tool-tree"] [role="treeitem"]').first().waitFor();
  tab.push(Date.now() - t0);
  await context.close();
}

const kb = (b) => (b / 1024).toFixed(1);
const line = (name, runs) =>
  `${name}: JS+CSS ${kb(median(runs.map((x) => x.encoded)))} KB sent (${kb(median(runs.map((x) => x.decoded)))} KB decoded), ` +
  `DOMContentLoaded ${median(runs.map((x) => x.dcl)).toFixed(0)} ms, ${median(runs.map((x) => x.api))} API requests`;
console.log(`rounds: ${rounds}`);
console.log(line("ours     /", ours));
if (orig) console.log(line("original /", theirs));
console.log(`ours: Tools tab of a 5,000-tool integration shows its tree in ${median(tab)} ms (click to first row; runs ${tab.join(", ")})`);

big.close();
orig?.close();
await ex.stop?.();
await browser.close();
process.exit(0);
