#!/bin/sh
# Rebuild the shipped traces: compile the two programs and trace them under valgrind lackey
# (`apt-get install valgrind`). Run from anywhere; writes pchase.tkt and stream.tkt next to this
# script. Valgrind's own start-up differs a little between machines, so a rebuilt trace may differ
# from the shipped one by a few accesses.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tk=${TIERKIT:-tierkit}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/pchase" "$here/pchase.c"
cc -O2 -fno-tree-vectorize -o "$tmp/stream" "$here/stream.c"
"$tk" trace record -o "$here/pchase.tkt" -- "$tmp/pchase"
"$tk" trace record -o "$here/stream.tkt" -- "$tmp/stream"
"$tk" trace info "$here/pchase.tkt"
"$tk" trace info "$here/stream.tkt"
