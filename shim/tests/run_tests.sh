#!/bin/sh
# run_tests.sh BUILD_DIR - the shim's tests on this host (one NUMA node is enough: the place
# test checks the memory policy the shim set; the real-kernel tests check the nodes).
set -u
B=${1:-build}
SO=$(cd "$B" && pwd)/libtierkit_shim.so
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fails=0
ok() { echo "ok   $1"; }
no() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
kv() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }

# 1. profile: two sites with their sizes, each freed once; the hashes are stable across runs (ASLR)
for i in 1 2; do
  TIERKIT_SHIM_MODE=profile TIERKIT_SHIM_LOG=$T/p$i.bin LD_PRELOAD=$SO "$B/shim_test" sites > $T/o$i.txt || no profile "exit $?"
  "$B/tkshim-dump" $T/p$i.bin > $T/d$i.txt || no profile "dump failed"
done
a=$(awk '$1=="site" && $4=="size=3145728" && $6=="freed=1" {print $2}' $T/d1.txt)
b=$(awk '$1=="site" && $4=="size=5242880" && $6=="freed=1" {print $2}' $T/d1.txt)
a2=$(awk '$1=="site" && $4=="size=3145728" {print $2}' $T/d2.txt)
if [ -n "$a" ] && [ -n "$b" ] && [ "$a" != "$b" ] && [ "$a" = "$a2" ]; then ok "profile: sites $a (3 MiB) and $b (5 MiB), stable across runs"; else no profile "a=$a b=$b a2=$a2"; cat $T/d1.txt; fi

# 2. place: site A bound to node 0 (MPOL_PREFERRED = 1), site B untouched (MPOL_DEFAULT = 0)
printf '# test placement\n%s node:0\n' "$a" > $T/place.txt
r=$(TIERKIT_SHIM_MODE=place TIERKIT_SHIM_PLACEMENT=$T/place.txt LD_PRELOAD=$SO "$B/shim_test" sites)
if [ "$(kv a_mode "$r")" = 1 ] && [ "$(kv b_mode "$r")" = 0 ] && [ "$(kv a_node0 "$r")" = 768 ]; then ok "place: $r"; else no place "$r"; fi

# 3. threads, every interposed call, a fork after threads: exact record counts for the marker size
TIERKIT_SHIM_MODE=profile TIERKIT_SHIM_MIN_BYTES=0 TIERKIT_SHIM_LOG=$T/t.bin LD_PRELOAD=$SO "$B/shim_test" threads > $T/t.txt || no threads "exit $? $(cat $T/t.txt)"
"$B/tkshim-dump" --records $T/t.bin > $T/t.dump || no threads "dump failed"
n=$(grep -c '^A .* size=12345 ' $T/t.dump)
m=$(grep -c '^M .* size=8192 ' $T/t.dump); u=$(grep -c '^U .* size=8192 ' $T/t.dump)
# the child's marker allocation is the 20001st (its own record)
if grep -q 'ok=1' $T/t.txt && [ "$n" = 20001 ] && [ "$m" = 20000 ] && [ "$u" = 20000 ]; then ok "threads: 20000+1 marker mallocs, 20000 mmap/munmap logged, contents intact"; else no threads "marker=$n mmap=$m munmap=$u $(cat $T/t.txt)"; fi

# 4. bootstrap and recursion: real programs run unchanged in every mode
for m in off profile place; do
  TIERKIT_SHIM_MODE=$m TIERKIT_SHIM_LOG=$T/ls.bin TIERKIT_SHIM_PLACEMENT=$T/place.txt LD_PRELOAD=$SO sh -c 'ls / | sort | head -3 > /dev/null && python3 -c "import json; json.dumps(list(range(100000)))"' || no "bootstrap-$m" "exit $?"
done
ok "bootstrap: sh, ls, sort, python3 under off/profile/place"

# 5. bad configuration: a clear message and exit 127, never a crash
out=$(TIERKIT_SHIM_MODE=bogus LD_PRELOAD=$SO /bin/true 2>&1); rc=$?
[ $rc = 127 ] && echo "$out" | grep -q 'TIERKIT_SHIM_MODE must be' && ok "bad mode refused" || no badmode "rc=$rc $out"
printf 'zz node:0\n' > $T/bad.txt
out=$(TIERKIT_SHIM_MODE=place TIERKIT_SHIM_PLACEMENT=$T/bad.txt LD_PRELOAD=$SO /bin/true 2>&1); rc=$?
[ $rc = 127 ] && echo "$out" | grep -q 'bad site hash' && ok "bad placement refused" || no badplace "rc=$rc $out"
# 6. a corrupt log is reported, not misread
head -c 30 $T/p1.bin > $T/trunc.bin
"$B/tkshim-dump" $T/trunc.bin > /dev/null 2>$T/e.txt; rc=$?
[ $rc = 1 ] && grep -q 'truncated record at offset 16' $T/e.txt && ok "truncated log reported" || no trunc "rc=$rc $(cat $T/e.txt)"
[ $fails = 0 ] && echo "shim tests: all passed" || echo "shim tests: $fails failed"
exit $((fails > 0))
