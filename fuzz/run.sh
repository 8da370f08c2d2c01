#!/usr/bin/env bash
# Run tierkit's fuzz targets one after another (docs/fuzzing.md).
#   fuzz/run.sh [-t SECONDS] [TARGET...]     default: every target, FUZZ_SECONDS (30) each
# Builds the targets with cargo on stable Rust, with the flags cargo-fuzz (0.13) gives a
# `--sanitizer none` build: libFuzzer's coverage instrumentation (sancov) needs no nightly, the
# address sanitizer would. No cargo-fuzz is needed (installing it took CI ~4 minutes); it still
# works on these targets for whoever has it. Then fuzzes each target from its seed corpus
# (fuzz/corpus/TARGET, committed) plus what earlier runs found (fuzz/work/TARGET, not committed).
# A crash, a failed property, a timeout (10 s for one input) or an RSS above 2 GiB stops that
# target's run, saves the input under fuzz/artifacts/TARGET/, and makes the script exit 1 once
# every target has run. Prints one line per target with
# its executions.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
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

# The build cargo-fuzz makes by default: release with line tables, debug assertions and overflow
# checks on (so an overflow is a crash), `--cfg fuzzing`, and an explicit --target so that the
# flags reach the targets' code but not build scripts or proc macros. Each crate is one codegen
# unit, as cargo-fuzz does (FUZZ_CGU sets another count: 16 was tried for CI and built no faster,
# 3.6 min against 2.6 beside the guest tests' own build).
triple=$(rustc -vV | sed -n 's/^host: //p')
flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table"
flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"
flags+=" -Cllvm-args=-simplifycfg-branch-fold-threshold=0"
case $triple in *-linux-*) flags+=" -Cllvm-args=-sanitizer-coverage-stack-depth" ;; esac
flags+=" -Cdebug-assertions -Ccodegen-units=${FUZZ_CGU:-1}"
bins=()
for t in "${TARGETS[@]}"; do bins+=(--bin "$t"); done
RUSTFLAGS="$flags${RUSTFLAGS:+ $RUSTFLAGS}" cargo build --manifest-path fuzz/Cargo.toml \
    --target "$triple" --target-dir fuzz/target --release --config 'profile.release.debug="line-tables-only"' \
    "${bins[@]}" >/dev/null 2>fuzz/build.log || { cat fuzz/build.log; exit 1; }
bindir=$ROOT/fuzz/target/$triple/release

failed=()
for t in "${TARGETS[@]}"; do
    mkdir -p "fuzz/work/$t" "fuzz/artifacts/$t"
    log=fuzz/work/$t.log
    start=$(date +%s)
    if ! nice -n 10 "$bindir/$t" "fuzz/work/$t" "fuzz/corpus/$t" \
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
