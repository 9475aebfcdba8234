// Self-check of lib/executor.mjs against scripts/fake-executor.mjs (no real binary needed).
// Run: EXECUTOR_BIN=scripts/fake-executor.mjs node scripts/validate-harness.mjs
import assert from "node:assert/strict";
import { startExecutor, spawnBinary, freePort, rawRequest } from "../lib/executor.mjs";

const ex = await startExecutor();
try {
  assert.ok(ex.token, "token discovered");
  assert.equal((await rawRequest(ex.port, "GET", "/api/integrations")).status, 401);
  const r = await ex.api("GET", "/api/integrations");
  assert.equal(r.status, 200);
  assert.equal(r.body[0].slug, "executor");
  const second = spawnBinary(["web", "--port", String(await freePort()), "--hostname", "127.0.0.1"], { env: { EXECUTOR_DATA_DIR: ex.dataDir } });
  const res = await second.exited;
  assert.equal(res.code, 1);
  assert.match(second.err(), /lock/);
  const stopped = await ex.stop();
  assert.deepEqual(stopped, { code: 0, signal: null, timedOut: false });
  const again = await startExecutor({ dataDir: ex.dataDir });
  assert.equal((await again.api("GET", "/api/integrations")).status, 200);
  assert.equal((await again.stop({ signal: "SIGINT" })).code, 0);
  console.log("harness OK (url parsed:", ex.printedUrl, ")");
} finally {
  await ex.kill({ removeDataDir: true });
}
