#!/usr/bin/env bash
# soak.sh - reliability runs of the real-kernel suite: boots the whole suite N times and, with -a,
# each test alone N times, then prints how often each test passed. Not part of `make test`
# (`make test-kernel-soak` runs it).
#
# Usage: tests/kernel/soak.sh [-k 612|61] [-n RUNS] [-s SUITE_RUNS] [-t "tests"] [-a] [-l] [-o OUTDIR]
#   -k  kernel (default 612)
#   -n  boots per configuration (default 5)
#   -s  boots of the whole suite (default: RUNS)
#   -t  the tests (default: all of the kernel's tests, as run.sh chooses them)
#   -a  also run each test alone, RUNS boots each (`run.sh -t NAME -n RUNS`)
#   -l  loaded: a parallel `cargo build` of the workspace runs as noise for the whole soak, in a
#       scratch target directory (rebuilt from scratch, again and again, until the soak ends)
#   -o  output directory (default target/kernel-soak); each configuration has a subdirectory
# Exit status: 0 when every boot passed. The table at the end has one line per test:
#   TEST  SUITE_PASSES/SUITE_RUNS  ALONE_PASSES/RUNS
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
KERNEL=612 RUNS=5 SUITE_RUNS="" TESTS="" ALONE=0 LOAD=0 OUT="$REPO/target/kernel-soak"
while getopts "k:n:s:t:alo:h" o; do
  case $o in
    k) KERNEL=$OPTARG ;; n) RUNS=$OPTARG ;; s) SUITE_RUNS=$OPTARG ;; t) TESTS=$OPTARG ;; a) ALONE=1 ;; l) LOAD=1 ;; o) OUT=$OPTARG ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
SUITE_RUNS=${SUITE_RUNS:-$RUNS}
# the default list is run.sh's own (it had drifted when it was a copy here)
[ -n "$TESTS" ] || TESTS=$("$HERE/run.sh" -k "$KERNEL" -L)
log() { printf '[kernel-soak %s] %s\n' "$(date +%T)" "$*" >&2; }
rm -rf "$OUT"; mkdir -p "$OUT"

NOISE=""
stop_noise() { [ -z "$NOISE" ] || { kill -- -"$NOISE" 2>/dev/null || kill "$NOISE" 2>/dev/null || true; wait "$NOISE" 2>/dev/null || true; NOISE=""; }; }
trap stop_noise EXIT
if [ $LOAD = 1 ]; then
  # build run.sh's binaries first, so that the noise is not the build the boots wait for
  "$HERE/run.sh" -k "$KERNEL" -t cli -n 1 -o "$OUT/warmup" > "$OUT/warmup.log" 2>&1 || true
  set -m
  (while :; do rm -rf "$OUT/noise-target"; cargo build -q --manifest-path "$REPO/Cargo.toml" --workspace --target-dir "$OUT/noise-target" > /dev/null 2>&1 || sleep 1; done) &
  NOISE=$!
  set +m
  log "load: a parallel cargo build (pid $NOISE) runs until the soak ends"
fi

fails=0
log "suite x$SUITE_RUNS (kernel $KERNEL): $TESTS"
"$HERE/run.sh" -k "$KERNEL" -t "$TESTS" -n "$SUITE_RUNS" -o "$OUT/suite" > "$OUT/suite.log" 2>&1 || fails=$((fails + 1))
if [ $ALONE = 1 ]; then
  for t in $TESTS; do
    log "$t alone x$RUNS"
    "$HERE/run.sh" -k "$KERNEL" -t "$t" -n "$RUNS" -o "$OUT/alone-$t" > "$OUT/alone-$t.log" 2>&1 || fails=$((fails + 1))
  done
fi
stop_noise

count() { awk -v t="$2" '$1 == t {print $2 "/" $3}' "$1" 2>/dev/null; }
printf '%-10s %-8s %-8s\n' test suite alone
for t in $TESTS; do
  a="-"; [ $ALONE = 1 ] && a=$(count "$OUT/alone-$t/summary.txt" "$t")
  printf '%-10s %-8s %-8s\n' "$t" "$(count "$OUT/suite/summary.txt" "$t")" "${a:-0/$RUNS}"
done
log "kernel $KERNEL, the suite $SUITE_RUNS times$([ $ALONE = 1 ] && echo ", each test alone $RUNS times" || true)$([ $LOAD = 1 ] && echo ', loaded' || true): $([ $fails = 0 ] && echo 'every boot passed' || echo "$fails configuration(s) had failures") (logs in $OUT)"
exit $((fails > 0))
