#!/usr/bin/env bash
# Run tierkit's fuzz targets one after another (docs/fuzzing.md).
#   fuzz/run.sh [-t SECONDS] [TARGET...]     default: every target, FUZZ_SECONDS (30) each
# Installs cargo-fuzz (crates.io, pinned) into .tools/ of the checkout if it is missing, builds
# the targets on stable Rust without a sanitizer (libFuzzer's coverage instrumentation needs no
# nightly; the address sanitizer would), then fuzzes each target from its seed corpus
# (fuzz/corpus/TARGET, committed) plus what earlier runs found (fuzz/work/TARGET, not committed).
# A crash, a failed property, a timeout (10 s for one input) or an RSS above 2 GiB stops that
# target's run, saves the input under fuzz/artifacts/TARGET/, and makes the script exit 1 once
# every target has run. Prints one line per target with
# its executions.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CARGO_FUZZ_VERSION=0.13.2
TARGETS=(experiment_toml policy_spec import_lackey import_perf_script import_damon trace_reader trace_replay)

seconds=${FUZZ_SECONDS:-30}
while getopts t: o; do
    case $o in
        t) seconds=$OPTARG ;;
        *) echo "usage: fuzz/run.sh [-t SECONDS] [TARGET...]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] && TARGETS=("$@")

tools=$ROOT/.tools
if ! "$tools/bin/cargo-fuzz" --version 2>/dev/null | grep -q " $CARGO_FUZZ_VERSION\$"; then
    echo "fuzz: installing cargo-fuzz $CARGO_FUZZ_VERSION into .tools/"
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "$tools" --quiet
fi
fuzz() { "$tools/bin/cargo-fuzz" fuzz "$@"; }

# Release with debug assertions and overflow checks (cargo-fuzz's default), no sanitizer.
fuzz build --sanitizer none >/dev/null 2>fuzz/build.log || { cat fuzz/build.log; exit 1; }

failed=()
for t in "${TARGETS[@]}"; do
    mkdir -p "fuzz/work/$t" "fuzz/artifacts/$t"
    log=fuzz/work/$t.log
    start=$(date +%s)
    if ! nice -n 10 "$tools/bin/cargo-fuzz" fuzz run --sanitizer none "$t" "fuzz/work/$t" "fuzz/corpus/$t" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        -artifact_prefix="fuzz/artifacts/$t/" -print_final_stats=1 >"$log" 2>&1; then
        tail -n 60 "$log"
        echo "fuzz: $t FAILED after $(($(date +%s) - start)) s; the input is in fuzz/artifacts/$t/ (full log: $log)"
        failed+=("$t")
        continue
    fi
    # the log may hold binary bytes (inputs libFuzzer echoes): read it as text
    execs=$(grep -a '^stat::number_of_executed_units:' "$log" | tail -n 1 | tr -dc 0-9)
    cov=$(grep -ao 'cov: [0-9]*' "$log" | tail -n 1)
    echo "fuzz: $t: ${execs:-?} executions in $(($(date +%s) - start)) s, $cov, $(ls "fuzz/work/$t" | wc -l) corpus inputs, no failure"
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: failed: ${failed[*]}"
    exit 1
fi
