#!/usr/bin/env bash
# Coverage-guided fuzzing (libFuzzer + AddressSanitizer) of Sources/JSONRPC: framing, the
# strict JSON parser/serializer and the JSON-RPC codec. The harness (Tests/Fuzz/JSONRPCFuzz.swift)
# is compiled *together with* Sources/JSONRPC/*.swift with -sanitize=fuzzer,address, so the
# code under test is instrumented (real coverage) and checked by ASan.
#
#   scripts/fuzz.sh [SECONDS] [extra libFuzzer flags…]     default 60 s; docs/reliability.md uses 600
#   FUZZ_DIR=…  work directory (default .build-fuzz): binary, growing corpus, artifacts, log
#
# Seeds: Tests/Fuzz/corpus (read-only here); new inputs go to $FUZZ_DIR/corpus. A crash leaves
# $FUZZ_DIR/artifacts/crash-…; minimise it with
#   $FUZZ_DIR/fuzz-jsonrpc -minimize_crash=1 -runs=10000 $FUZZ_DIR/artifacts/crash-…
# and add it to Tests/JSONRPCTests/FailCases/ (named by its expected class, see
# FailCasesTests.swift) so the normal test suite replays it forever.
# Prints one summary line: runs, crashes, coverage, corpus size, exit status.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swiftc >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"

SECONDS_TO_RUN=${1:-60}
shift || true
DIR=${FUZZ_DIR:-.build-fuzz}
mkdir -p "$DIR/corpus" "$DIR/artifacts"
BIN=$DIR/fuzz-jsonrpc

# ld.gold prints thousands of harmless "Cannot export local symbol __asan_…" warnings; lld does not.
swiftc -sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld -module-name JSONRPCFuzz \
    Sources/JSONRPC/*.swift Tests/Fuzz/JSONRPCFuzz.swift -o "$BIN"

# Swift's crash backtracer would attach to the dying fuzzer and can hang; libFuzzer and ASan
# report crashes themselves.
export SWIFT_BACKTRACE=enable=no
LOG=$DIR/fuzz.log
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
before=$(find "$DIR/artifacts" -type f | wc -l)
set +e
# -max_len keeps every input below a pipe's 64 KiB (the harness writes it to a pipe);
# -timeout flags any single input taking 10 s as a hang; -rss_limit_mb flags runaway memory.
"$BIN" -max_total_time="$SECONDS_TO_RUN" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -dict=Tests/Fuzz/json.dict -artifact_prefix="$DIR/artifacts/" "$@" \
    "$DIR/corpus" Tests/Fuzz/corpus >"$LOG" 2>&1
status=$?
set -e
after=$(find "$DIR/artifacts" -type f | wc -l)
runs=$(awk '/stat::number_of_executed_units/ {print $2}' "$LOG" | tail -1)
rate=$(awk '/stat::average_exec_per_sec/ {print $2}' "$LOG" | tail -1)
cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$LOG" | tail -1)
corpus=$(find "$DIR/corpus" -type f | wc -l)
echo "fuzz: ${SECONDS_TO_RUN}s runs=${runs:-?} exec/s=${rate:-?} crashes=$((after - before)) ${cov:-cov: ?} corpus=$corpus exit=$status load-before=[$load_before] load-after=[$(cut -d' ' -f1-3 /proc/loadavg)] (log $LOG)"
if [ "$status" -ne 0 ] || [ "$after" -ne "$before" ]; then
    grep -E 'ERROR|fuzz invariant|Fatal error|SUMMARY' "$LOG" | head -20 >&2 || true
    exit 1
fi
