#!/usr/bin/env node
// The team server's costs (issue #24, BENCHMARKS.md). On one run, side by side:
//   local  `executor web` with its bearer token (no accounts);
//   team   `executor serve`, signed in with an API key of the owner.
// Figures: `return 1` p50 (POST /api/executions, one at a time; the team arm pays the token
// lookup), a loop of 20 core tool calls in one execution p50 (the team arm also writes an audit
// line per call, in batches), GET /api/account/me p50 (the cheapest signed-in request), and the
// sign-in p50 (argon2id, 19 MiB, 2 passes: the one deliberately slow request).
//
//   EXECUTOR_BIN=target/release/executor node bench/team.mjs [--rounds 300]
//
// Rounds of the two arms alternate so machine noise hits each alike. Needs `npm ci` in tests/e2e.
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..");
const { startExecutor } = await import(path.join(repo, "tests", "e2e", "lib", "executor.mjs"));
const { startTeamServer } = await import(path.join(repo, "tests", "e2e", "lib", "team.mjs"));

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
};
const ROUNDS = Number(arg("--rounds", "300"));
const SIGN_INS = Number(arg("--sign-ins", "30"));

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  const i = (s.length - 1) * q;
  return s[Math.floor(i)] + (s[Math.ceil(i)] - s[Math.floor(i)]) * (i - Math.floor(i));
};
const now = () => Number(process.hrtime.bigint()) / 1e6;
const f2 = (x) => x.toFixed(2);

async function call(base, token, method, url, body) {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return text;
}

const EMAIL = "owner@bench.example";
const PASSWORD = "bench-password-123";
const local = await startExecutor();
const team = await startTeamServer({
  env: { EXECUTOR_BOOTSTRAP_ADMIN_EMAIL: EMAIL, EXECUTOR_BOOTSTRAP_ADMIN_PASSWORD: PASSWORD },
});
try {
  const signIn = async () => {
    const res = await fetch(`${team.baseUrl}/api/auth/sign-in/email`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
    });
    if (!res.ok) throw new Error(`sign-in: ${res.status}`);
    return (await res.json()).token;
  };
  const session = await signIn();
  const key = JSON.parse(await call(team.baseUrl, session, "POST", "/api/account/api-keys", { name: "bench" })).value;
  const arms = {
    local: { base: local.baseUrl, token: local.token },
    team: { base: team.baseUrl, token: key },
  };
  const loop = "let n = 0; for (let i = 0; i < 20; i++) { const r = await tools.executor.coreTools.providers.list({}); if (r.ok) n++; } return n;";
  const figures = {};
  for (const name of Object.keys(arms)) figures[name] = { ret1: [], loop: [], me: [] };
  // Warm both (first executions compile the prelude, first calls open pools).
  for (const a of Object.values(arms)) {
    for (let i = 0; i < 20; i++) await call(a.base, a.token, "POST", "/api/executions", { code: loop });
  }
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 ? ["team", "local"] : ["local", "team"];
    for (const name of order) {
      const a = arms[name];
      let t = now();
      await call(a.base, a.token, "POST", "/api/executions", { code: "return 1" });
      figures[name].ret1.push(now() - t);
      if (r % 3 === 0) {
        t = now();
        await call(a.base, a.token, "POST", "/api/executions", { code: loop });
        figures[name].loop.push(now() - t);
      }
      if (name === "team") {
        t = now();
        await call(a.base, a.token, "GET", "/api/account/me");
        figures[name].me.push(now() - t);
      }
    }
  }
  const signIns = [];
  for (let i = 0; i < SIGN_INS; i++) {
    const t = now();
    await signIn();
    signIns.push(now() - t);
  }
  const audit = JSON.parse(await call(team.baseUrl, session, "GET", "/api/admin/audit-events?kind=tool_call&limit=1"));
  console.log(`rounds ${ROUNDS} (alternating), sign-ins ${SIGN_INS}`);
  console.log("| figure | local (token) | team (API key) | team / local |");
  console.log("|---|---|---|---|");
  for (const [label, k] of [["`return 1` p50", "ret1"], ["20 core tool calls in one execution p50", "loop"]]) {
    const l = quantile(figures.local[k], 0.5);
    const t = quantile(figures.team[k], 0.5);
    console.log(`| ${label} | ${f2(l)} ms | ${f2(t)} ms | ${(t / l).toFixed(2)}× |`);
  }
  console.log(`| GET /api/account/me p50 | — | ${f2(quantile(figures.team.me, 0.5))} ms | |`);
  console.log(`| sign-in (argon2id) p50 / p90 | — | ${f2(quantile(signIns, 0.5))} / ${f2(quantile(signIns, 0.9))} ms | |`);
  console.log(`audit: the last tool call logged is #${audit.events[0]?.id} (${audit.events[0]?.action})`);
} finally {
  await local.stop();
  await team.stop();
}
