#!/bin/sh
# Rebuild the shipped traces: compile the two programs, trace them under valgrind lackey
# (`apt-get install valgrind zstd`), keep the lackey text zstd-compressed (pchase.lackey.zst,
# stream.lackey.zst: the import and size tests read them) and import it into pchase.tkt and
# stream.tkt next to this script. Valgrind's own start-up differs a little between machines, so a
# rebuilt trace may differ from the shipped one by a few accesses.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tk=${TIERKIT:-tierkit}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/pchase" "$here/pchase.c"
cc -O2 -fno-tree-vectorize -o "$tmp/stream" "$here/stream.c"
for prog in pchase stream; do
    valgrind --tool=lackey --trace-mem=yes --log-file="$tmp/$prog.lackey" "$tmp/$prog"
    zstd -q -f --ultra -22 --long=27 "$tmp/$prog.lackey" -o "$here/$prog.lackey.zst"
    "$tk" trace import lackey "$here/$prog.lackey.zst" -o "$here/$prog.tkt"
    "$tk" trace info "$here/$prog.tkt" --set llc_mb=0.25
done
