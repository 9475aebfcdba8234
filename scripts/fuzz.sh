#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets) for a fixed time: FUZZ_SECONDS each (default 20).
# A crash, a stack overflow or an input slower than 10 s fails the run; libFuzzer leaves the
# input under fuzz/artifacts/<target>/. cargo-fuzz drives libFuzzer with coverage
# instrumentation, which rustc enables only on nightly features: RUSTC_BOOTSTRAP=1 allows them
# on the machine's stable toolchain (no sanitizer, so no std rebuild is needed).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs="${FUZZ_SECONDS:-20}"
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1

# Seeds: the inputs that broke the server (issue #17), so every run starts from them.
seeds="$(mktemp -d)"
trap 'rm -rf "$seeds"' EXIT
mkdir -p "$seeds"/{prepare,prepare_nesting,openapi_spec,graphql_select,schema_ts}
python3 - "$seeds" <<'PY'
import json, sys
root = sys.argv[1]
def put(target, name, text):
    with open(f"{root}/{target}/{name}", "w") as f:
        f.write(text)
put("prepare", "open-brackets", "return " + "[" * 178_000)
put("prepare", "open-parens", "return " + "(" * 255_000)
put("prepare", "closed-brackets", "return " + "[" * 60_000 + "1" + "]" * 60_000)
put("prepare", "nested-blocks", "{" * 120_000 + "}" * 120_000)
put("prepare", "if-chain", "if (1) " * 36_000 + ";")
# prepare_nesting: byte pairs (shape, repeat/64): every shape 16,000 levels deep, then a mix.
def put_bytes(target, name, data):
    with open(f"{root}/{target}/{name}", "wb") as f:
        f.write(data)
for shape in range(38):
    put_bytes("prepare_nesting", f"shape-{shape}", bytes([shape, 250]))
put_bytes("prepare_nesting", "mix", b"".join(bytes([s, 20]) for s in range(38)))
put("prepare", "typescript", "interface A { x: number }\nconst a = {x: 1} as A;\nreturn a.x;")
put("openapi_spec", "flow-bomb", "openapi: 3.0.0\npaths: " + "[" * 140_000)
put("openapi_spec", "json-bomb", '{"openapi": ' + "[" * 140_000)
put("openapi_spec", "petstore", json.dumps({"openapi": "3.0.0", "info": {"title": "t", "version": "1"},
    "paths": {"/pets/{id}": {"get": {"operationId": "getPet", "parameters": [{"name": "id", "in": "path",
    "required": True, "schema": {"type": "string"}}], "responses": {"200": {"description": "ok"}}}}}}))
put("graphql_select", "deep", "a { " * 50_000)
put("graphql_select", "fields", "id name friends { id name }")
put("schema_ts", "refs", json.dumps({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
    "$defs": {"A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/A"}}}}}))
PY

cargo fuzz build -s none
for target in prepare prepare_nesting openapi_spec graphql_select schema_ts; do
  corpus="corpus/$target"
  mkdir -p "$corpus"
  echo "== fuzz $target (${secs}s)"
  cargo fuzz run -s none "$target" "$corpus" "$seeds/$target" -- \
    -max_total_time="$secs" -max_len=300000 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1
done
