#!/usr/bin/env node
// A stand-in for `executor web` used only to self-check the harness (scripts/validate-harness.mjs).
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { randomBytes } from "node:crypto";

const args = process.argv.slice(2);
const opt = (name, d) => (args.includes(name) ? args[args.indexOf(name) + 1] : d);
if (args[0] !== "web") {
  console.error("fake-executor: only `web` is supported");
  process.exit(2);
}
const dataDir = process.env.EXECUTOR_DATA_DIR;
const lock = path.join(dataDir, "data.db.owner-lock");
let fd;
try {
  fd = fs.openSync(lock, "wx");
} catch {
  console.error(`error: data dir ${dataDir} is locked by another executor process (${lock})`);
  process.exit(1);
}
const token = randomBytes(32).toString("base64url");
fs.mkdirSync(path.join(dataDir, "server-control"), { recursive: true });
fs.writeFileSync(path.join(dataDir, "server-control", "auth.json"), JSON.stringify({ token }), { mode: 0o600 });
const srv = http.createServer((req, res) => {
  if (req.url === "/api/health") return res.writeHead(200, { "content-type": "text/plain" }).end("ok");
  if (req.headers.authorization !== `Bearer ${token}`) return res.writeHead(401).end("Unauthorized");
  if (req.url === "/api/integrations") return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify([{ slug: "executor", kind: "built-in" }]));
  res.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ _tag: "NotFound" }));
});
srv.listen(Number(opt("--port", "4788")), opt("--hostname", "127.0.0.1"), () => {
  setTimeout(() => console.log(`Executor is running at http://localhost:${srv.address().port}/?_token=${token}`), 300);
});
const shutdown = () => {
  srv.close(() => {
    fs.closeSync(fd);
    fs.rmSync(lock, { force: true });
    process.exit(0);
  });
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
