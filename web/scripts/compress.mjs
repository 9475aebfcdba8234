// Writes `<file>.br` and `<file>.gz` beside every compressible file of the build, so the binary
// serves precompressed bytes without compressing at request time.
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { brotliCompressSync, constants, gzipSync } from "node:zlib";

const root = process.argv[2] ?? "dist";
const compressible = /\.(js|mjs|css|html|svg|json|txt|map|wasm)$/;

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (compressible.test(name)) compress(path);
  }
}

function compress(path) {
  const raw = readFileSync(path);
  if (raw.length < 512) return; // not worth a second request path
  const br = brotliCompressSync(raw, {
    params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: raw.length },
  });
  const gz = gzipSync(raw, { level: 9 });
  if (br.length < raw.length) writeFileSync(`${path}.br`, br);
  if (gz.length < raw.length) writeFileSync(`${path}.gz`, gz);
}

walk(root);
