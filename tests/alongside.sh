#!/usr/bin/env bash
# alongside.sh LOG "BACKGROUND COMMAND" -- FOREGROUND COMMAND...
#
# Runs the background command (a shell command line, in its own session) with its output in LOG
# while the foreground command runs here; then waits for the background one, prints LOG, and exits
# non-zero when either failed (each failure named). Ctrl-C or a TERM stops both.
#
# `make test` runs the real-kernel tests this way, beside fuzzing and pytest: the QEMU guest has
# one vCPU under TCG (tests/kernel/run.sh says why), so it keeps one host core busy for its ~9
# minutes and the other core would otherwise sit idle.
set -uo pipefail
if [ $# -lt 4 ] || [ "$3" != -- ]; then
    echo "usage: tests/alongside.sh LOG \"BACKGROUND COMMAND\" -- FOREGROUND COMMAND..." >&2
    exit 2
fi
log=$1 bg=$2
shift 3
mkdir -p "$(dirname "$log")"
echo "alongside: started in the background: $bg (output: $log, printed when it ends)"
setsid bash -c "$bg" >"$log" 2>&1 </dev/null &
bgpid=$!
stop() {
    kill -TERM -- "-$bgpid" 2>/dev/null
    wait "$bgpid" 2>/dev/null
    exit 130
}
trap stop INT TERM

"$@"
fgrc=$?
if kill -0 "$bgpid" 2>/dev/null; then
    echo "alongside: the foreground command is done (exit $fgrc); waiting for: $bg"
fi
wait "$bgpid"
bgrc=$?
echo "alongside: output of: $bg"
cat "$log"
rc=0
if [ "$fgrc" -ne 0 ]; then
    echo "alongside: FAILED (exit $fgrc): $*"
    rc=1
fi
if [ "$bgrc" -ne 0 ]; then
    echo "alongside: FAILED (exit $bgrc): $bg (output above, and in $log)"
    rc=1
fi
exit "$rc"
