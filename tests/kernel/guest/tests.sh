# tests.sh - the real-kernel scenarios, run inside the guest by /init (busybox sh).
# Each prints "TKTEST <name> PASS|FAIL <details>"; benchmarks print "TKBENCH <key>=<value> ...".
# Args: the tests to run (default: all).
FAILS=0
PORT=9464
pass() { echo "TKTEST $1 PASS $2"; }
fail() { echo "TKTEST $1 FAIL $2"; FAILS=$((FAILS + 1)); }
kv() { echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }
# count_at_least FILE PATTERN N SECONDS: wait until FILE has N lines matching PATTERN; 1 on
# timeout (a missing FILE counts as none: grep -c then prints nothing)
count_at_least() { i=0; while n=$(grep -c "$2" "$1" 2>/dev/null); [ "${n:-0}" -lt "$3" ]; do i=$((i + 1)); [ $i -gt $(($4 * 10)) ] && return 1; sleep 0.1; done; return 0; }
# wait_for FILE PATTERN SECONDS: wait until FILE has a line matching PATTERN; 1 on timeout
wait_for() { count_at_least "$1" "$2" 1 "$3"; }
# wait_log FILE PATTERN SECONDS: until PATTERN is in FILE, polled every second, for at most
# SECONDS of the guest's uptime; 1 when they pass first
wait_log() {
  end=$(($(cut -d. -f1 /proc/uptime) + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    [ "$(cut -d. -f1 /proc/uptime)" -ge $end ] && return 1
    sleep 1
  done
}
show() { echo "--- $1"; sed 's/^/    /' "$1" | tail -n "${2:-40}"; echo "--- dmesg"; dmesg | grep -iE 'segfault|bug|warn|oops|killed' | tail -n 10; }
# scrape NAME FILE: print a metrics scrape for the host, which checks it with `promtool check
# metrics` (run.sh): every line prefixed, then the line count (a line cut by console output shows)
scrape() { sed "s/^/TKSCRAPE $1 /" "$2"; echo "TKSCRAPE_END $1 lines=$(wc -l < "$2")"; }
# ticks of CPU (utime + stime) of a pid
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# the process's NUMA scan passes (mm->numa_scan_seq in /proc/PID/sched; -1 without SCHED_DEBUG)
scanseq() { awk '/numa_scan_seq/{print $NF; f=1} END{if(!f) print -1}' "/proc/$1/sched" 2>/dev/null || echo -1; }
conf() { # conf FILE key=value... -> TOML
  : > "$1"; f=$1; shift
  for kvp in "$@"; do echo "$kvp" >> "$f"; done
}
has() { echo "$1" | tr ' ' '\n' | grep -qx "$2"; }   # has "k=v k=v" k=v  => the list holds that item
pct_ge() { [ $(($1 * 100)) -ge $(($2 * $3)) ]; }   # pct_ge part whole pct  => part >= pct% of whole
# Tests wait for the event they check, each with a bounded timeout, instead of for a fixed time:
# the emulated guest's speed varies several-fold with the host's load.
# until_report OUT PID SECONDS KEY>=N...: ask the workload PID for a report (SIGUSR1) every second
# until its latest WORKLOAD_REPORT in OUT meets every condition; 1 when SECONDS pass first
until_report() {
  out=$1 pid=$2 t=$3; shift 3; i=0
  while [ $i -lt "$t" ]; do
    kill -USR1 "$pid" 2>/dev/null || return 1
    sleep 1; i=$((i + 1))
    r=$(grep WORKLOAD_REPORT "$out" | tail -1); ok=1
    for c in "$@"; do v=$(kv "${c%%>=*}" "$r"); [ "${v:-0}" -ge "${c#*>=}" ] || ok=0; done
    [ $ok = 1 ] && return 0
  done
  return 1
}
# stop_workload PID OUT: SIGTERM, wait, and its WORKLOAD_RESULT line in $R (in this shell: a
# command substitution could not wait for the workload)
stop_workload() { kill -TERM "$1" 2>/dev/null; wait "$1"; R=$(grep WORKLOAD_RESULT "$2"); }
# Accessed bits under emulation: x86 Linux clears a PTE's accessed bit without a TLB flush
# (ptep_clear_flush_young), so the CPU sets it again only when the page's TLB entry is refilled.
# A real CPU's TLB holds a few MiB and refills constantly under an 8-64 MiB sweep; QEMU's TCG TLB
# grows to hold the whole hot region, so with nothing else running DAMON reads the swept pages
# idle (measured: `dryrun` with the workload alone failed 7 of 10 boots, samples/s 0 in most
# intervals). WORKLOAD_TLB_TICK_US makes the workload fork a sleeper that wakes every 1 ms: each
# wake switches address spaces, which flushes the TLB (no PCID here), as TLB misses would.
TICK=1000

# DAMON monitoring a pid the way tierkitd's DAMON source sets it up (crates/tierkitd/src/source/
# damon.rs: one kdamond, one vaddr context, a stat scheme matching every region), at DAMON's and
# tierkitd's defaults (sample 5 ms, aggregation 100 ms, update 1 s, 10-500 regions), but read by
# nobody: the kernel's monitoring cost alone
DAMON_ADMIN=/sys/kernel/mm/damon/admin
damon_on() {
  a=$DAMON_ADMIN; echo 1 > $a/kdamonds/nr_kdamonds; k=$a/kdamonds/0
  echo 1 > $k/contexts/nr_contexts; c=$k/contexts/0; m=$c/monitoring_attrs
  echo vaddr > $c/operations
  echo 5000 > $m/intervals/sample_us; echo 100000 > $m/intervals/aggr_us; echo 1000000 > $m/intervals/update_us
  echo 10 > $m/nr_regions/min; echo 500 > $m/nr_regions/max
  echo 1 > $c/targets/nr_targets; echo "$1" > $c/targets/0/pid_target
  echo 1 > $c/schemes/nr_schemes; echo stat > $c/schemes/0/action
  echo on > $k/state
}
damon_off() { # the kdamond stops by itself once its target is gone; then it can be removed
  echo off > $DAMON_ADMIN/kdamonds/0/state 2>/dev/null
  i=0; while ! echo 0 > $DAMON_ADMIN/kdamonds/nr_kdamonds 2>/dev/null; do i=$((i + 1)); [ $i -gt 50 ] && break; sleep 0.1; done
}

# 1. hemem over DAMON: the hot region moves to node 0, the cold one stays on node 1
t_damon() {
  conf /tmp/damon.toml 'source = "damon"' 'interval-ms = 300' 'status-every-s = 5'
  WORKLOAD_TLB_TICK_US=$TICK /bin/workload 16 48 0 1 1 > /tmp/w1.out &
  W=$!
  wait_for /tmp/w1.out WORKLOAD_START 20 || { fail damon "workload did not start"; return; }
  /bin/tierkitd --pid $W --policy hemem --config /tmp/damon.toml --metrics-addr 127.0.0.1:$PORT 2> /tmp/d1.log &
  D=$!
  # until 90% of the hot region is on node 0 (at most 120 s), then three more intervals
  until_report /tmp/w1.out $W 120 'hot_node0>=3687'; waited=$?
  sleep 1
  stop_workload $W /tmp/w1.out; r=$R
  sleep 0.5
  wget -q -O /tmp/m1.txt http://127.0.0.1:$PORT/metrics || echo "metrics fetch failed" > /tmp/m1.txt
  kill -TERM $D; wait $D; drc=$?
  h0=$(kv hot_node0 "$r"); c1=$(kv cold_node1 "$r"); bad=$(kv corrupt "$r")
  promos=$(sed -n "s/^tierkitd_promotions_total{target=\"$W\"} //p" /tmp/m1.txt)
  info=$(grep -c '^tierkitd_info{policy="hemem",source="damon",version="[0-9.]*"} 1$' /tmp/m1.txt)
  scrape damon /tmp/m1.txt
  d="hot_on_node0=$h0/4096 cold_on_node1=$c1/12288 corrupt=$bad daemon_rc=$drc metrics_promotions=${promos:-none} metrics_info=$info timed_out=$waited"
  if [ $waited = 0 ] && pct_ge "${h0:-0}" 4096 90 && pct_ge "${c1:-0}" 12288 90 && [ "$bad" = 0 ] && [ $drc = 0 ] && [ "$info" = 1 ] &&
     grep -q 'falling back to DAMON' /tmp/d1.log && grep -q 'stopped by signal' /tmp/d1.log && [ "${promos:-0}" -gt 0 ]; then
    pass damon "$d"
    echo "--- session (daemon log and metrics, for docs/operator-guide.md)"; sed 's/^/    /' /tmp/d1.log; sed 's/^/    /' /tmp/m1.txt
  else
    fail damon "$d"; show /tmp/d1.log; show /tmp/m1.txt 20
  fi
}

# 2. --fast-limit below the footprint: promoting the hot region demotes cold pages
# targeted: the damon test's workload with a scan budget so small that full scans come seconds
# apart: between them tierkitd scans only the regions DAMON saw accessed (issue 18 item 6), and
# HeMem still brings 90% of the hot region to node 0.
t_targeted() {
  conf /tmp/tg.toml 'source = "damon"' 'interval-ms = 300' 'status-every-s = 5' 'scan-budget-pct = 1'
  WORKLOAD_TLB_TICK_US=$TICK /bin/workload 16 48 0 1 1 > /tmp/wt.out &
  W=$!
  wait_for /tmp/wt.out WORKLOAD_START 20 || { fail targeted "workload did not start"; return; }
  /bin/tierkitd --pid $W --policy hemem --config /tmp/tg.toml --metrics-addr 127.0.0.1:$PORT 2> /tmp/dt.log &
  D=$!
  until_report /tmp/wt.out $W 120 'hot_node0>=3687'; waited=$?
  sleep 1
  stop_workload $W /tmp/wt.out; r=$R
  sleep 0.5
  wget -q -O /tmp/mt.txt http://127.0.0.1:$PORT/metrics || echo "metrics fetch failed" > /tmp/mt.txt
  kill -TERM $D; wait $D; drc=$?
  h0=$(kv hot_node0 "$r"); bad=$(kv corrupt "$r")
  tg_metric() { sed -n "s/^tierkitd_$1 //p" /tmp/mt.txt; }
  tn=$(tg_metric targeted_scans_total); tp=$(tg_metric targeted_scan_pages_total); fs=$(tg_metric page_scans_total); iv=$(tg_metric intervals_total)
  scrape targeted /tmp/mt.txt
  d="hot_on_node0=$h0/4096 corrupt=$bad daemon_rc=$drc targeted_scans=${tn:-none} targeted_pages=${tp:-none} full_scans=${fs:-none} intervals=${iv:-none} timed_out=$waited"
  if [ $waited = 0 ] && pct_ge "${h0:-0}" 4096 90 && [ "$bad" = 0 ] && [ $drc = 0 ] &&
     [ "${tn:-0}" -gt 0 ] && [ "${tp:-0}" -gt 0 ] && [ "${fs:-0}" -lt "${iv:-0}" ]; then
    pass targeted "$d"
  else
    fail targeted "$d"; show /tmp/dt.log; show /tmp/mt.txt 20
  fi
}

t_limit() {
  conf /tmp/limit.toml 'source = "damon"' 'interval-ms = 300' 'status-every-s = 5'
  WORKLOAD_TLB_TICK_US=$TICK /bin/workload 16 48 0 1 0 > /tmp/w2.out &
  W=$!
  wait_for /tmp/w2.out WORKLOAD_START 20 || { fail limit "workload did not start"; return; }
  /bin/tierkitd --pid $W --policy hemem --config /tmp/limit.toml --fast-limit 40M 2> /tmp/d2.log &
  D=$!
  until_report /tmp/w2.out $W 120 'hot_node0>=3687' 'cold_node1>=3687'; waited=$?
  sleep 1
  stop_workload $W /tmp/w2.out; r=$R
  kill -TERM $D; wait $D; drc=$?
  h0=$(kv hot_node0 "$r"); c0=$(kv cold_node0 "$r"); c1=$(kv cold_node1 "$r"); bad=$(kv corrupt "$r")
  fast=$((h0 + c0))
  demoted=$(sed -n 's/.*stopped by signal.*demoted \([0-9]*\),.*/\1/p' /tmp/d2.log)
  promoted=$(sed -n 's/.*stopped by signal.*promoted \([0-9]*\),.*/\1/p' /tmp/d2.log)
  # HeMem demotes one cold page per promotion once the tier is at its budget (the target starts
  # above it): as many demotions as promotions (within 16), and the regions' fast pages grow by
  # no more than the demoted pages that were not theirs (the process's idle heap, stack and data,
  # which HeMem's cold list holds first)
  others=$((${demoted:-0} - ${c1:-0}))
  d="hot_on_node0=$h0/4096 cold_demoted=$c1 promoted=$promoted demoted=$demoted other_demoted=$others fast_pages=$fast (limit 10240, started at 12288) corrupt=$bad daemon_rc=$drc timed_out=$waited"
  if [ $waited = 0 ] && pct_ge "$h0" 4096 90 && pct_ge "$c1" 4096 90 && pct_ge "${demoted:-0}" 4096 90 &&
     [ "${demoted:-0}" -ge $((${promoted:-0} - 16)) ] && [ "${demoted:-0}" -le $((${promoted:-0} + 16)) ] &&
     [ $others -le 128 ] && [ $fast -le $((12288 + others + 16)) ] && [ "$bad" = 0 ] && [ $drc = 0 ] && grep -q 'demoted [1-9]' /tmp/d2.log; then
    pass limit "$d"
  else
    fail limit "$d"; show /tmp/d2.log
  fi
}

# 3. cgroup targets: a member killed mid-run, a member joining; the daemon keeps running and logging
t_kill() {
  conf /tmp/kill.toml 'source = "damon"' 'interval-ms = 300' 'status-every-s = 2'
  mkdir -p /sys/fs/cgroup/tk
  export WORKLOAD_TLB_TICK_US=$TICK
  sh -c 'echo $$ > /sys/fs/cgroup/tk/cgroup.procs; exec /bin/workload 8 8 0 1 1' > /tmp/wa.out &
  A=$!
  sh -c 'echo $$ > /sys/fs/cgroup/tk/cgroup.procs; exec /bin/workload 8 8 0 1 1' > /tmp/wb.out &
  B=$!
  wait_for /tmp/wa.out WORKLOAD_START 20 && wait_for /tmp/wb.out WORKLOAD_START 20 || { fail kill "workloads did not start"; return; }
  # debug output of one module switched on by TIERKITD_LOG (the daemon's per-interval line)
  TIERKITD_LOG=info,tierkitd::daemon=debug /bin/tierkitd --cgroup /sys/fs/cgroup/tk --policy hemem --config /tmp/kill.toml \
    --log-format json --metrics-addr 127.0.0.1:$((PORT + 2)) 2> /tmp/d3.log &
  D=$!
  wait_for /tmp/d3.log '"message":"interval [0-9]*: promoted' 30
  kill -KILL $A; wait $A 2>/dev/null
  wait_for /tmp/d3.log "pid $A .*exited" 10; ex=$?
  sh -c 'echo $$ > /sys/fs/cgroup/tk/cgroup.procs; exec /bin/workload 4 4 0 1 1' > /tmp/wc.out &
  C=$!
  unset WORKLOAD_TLB_TICK_US
  wait_for /tmp/d3.log "pid $C .*joined" 10; jo=$?
  # B keeps running until half its hot region is on node 0 (at most 120 s)
  until_report /tmp/wb.out $B 120 'hot_node0>=1024'; waited=$?
  kill -TERM $B $C; wait $B; wait $C
  wait_for /tmp/d3.log 'no live targets' 10; idle=$?
  n1=$(wc -l < /tmp/d3.log); sleep 3; n2=$(wc -l < /tmp/d3.log)
  alive=0; kill -0 $D 2>/dev/null && alive=1
  wget -q -O /tmp/m3.txt http://127.0.0.1:$((PORT + 2))/metrics || : > /tmp/m3.txt
  kill -TERM $D; wait $D; drc=$?
  rb=$(grep WORKLOAD_RESULT /tmp/wb.out); bh0=$(kv hot_node0 "$rb")
  # the cgroup's members add up under one target label, its path below /sys/fs/cgroup
  promos=$(sed -n 's/^tierkitd_promotions_total{target="\/tk"} //p' /tmp/m3.txt)
  grep -q '^tierkitd_resident_bytes{target="/tk",tier="fast"} ' /tmp/m3.txt && res=1 || res=0
  grep -q 'pid="' /tmp/m3.txt && pidlabel=1 || pidlabel=0
  scrape kill /tmp/m3.txt
  dbg=$(grep -c '"level":"DEBUG","message":"interval [0-9]*: .*"target":"tierkitd::daemon"' /tmp/d3.log)
  dbg_other=$(grep '"level":"DEBUG"' /tmp/d3.log | grep -vc '"target":"tierkitd::daemon"')
  # every line one JSON object in tracing-subscriber's shape (crates/tierkitd/src/log.rs)
  json_ok=1; grep -vE '^\{"timestamp":"[0-9T:.-]+Z","level":"(ERROR|WARN|INFO|DEBUG|TRACE)","message":".*","target":"tierkitd(::[a-z_]+)*"\}$' /tmp/d3.log | grep -q . && json_ok=0
  d="exit_logged=$((1 - ex)) join_logged=$((1 - jo)) idle_logged=$((1 - idle)) alive_after=$alive log_lines=$n1->$n2 B_hot_on_node0=$bh0/2048 json=$json_ok debug_lines=$dbg debug_other=$dbg_other metrics_promotions=${promos:-none} resident=$res pid_label=$pidlabel daemon_rc=$drc timed_out=$waited"
  if [ $waited = 0 ] && [ $ex = 0 ] && [ $jo = 0 ] && [ $idle = 0 ] && [ $alive = 1 ] && [ $n2 -gt $n1 ] && [ $drc = 0 ] && [ $json_ok = 1 ] && pct_ge "${bh0:-0}" 2048 50 &&
     [ "$dbg" -gt 0 ] && [ "$dbg_other" = 0 ] && [ "${promos:-0}" -gt 0 ] && [ $res = 1 ] && [ $pidlabel = 0 ]; then
    pass kill "$d"
  else
    fail kill "$d"; show /tmp/d3.log
  fi
  rmdir /sys/fs/cgroup/tk 2>/dev/null
}

# 3b. a target that forks: its pages are shared with the child (copy-on-write), so
#     move_pages refuses them (EACCES without MPOL_MF_MOVE_ALL); logged, counted and survived
t_fork() {
  conf /tmp/fork.toml 'source = "damon"' 'interval-ms = 300' 'status-every-s = 3'
  WORKLOAD_TLB_TICK_US=$TICK WORKLOAD_FORK=1 WORKLOAD_READONLY=1 /bin/workload 8 24 0 1 1 > /tmp/w11.out &
  W=$!
  wait_for /tmp/w11.out WORKLOAD_START 20 || { fail fork "workload did not start"; return; }
  /bin/tierkitd --pid $W --policy hemem --config /tmp/fork.toml --metrics-addr 127.0.0.1:$((PORT + 1)) 2> /tmp/d11.log &
  D=$!
  # until tierkitd has tried to promote the shared hot pages and been refused (at most 120 s)
  wait_for /tmp/d11.log EACCES 120; waited=$?
  sleep 1
  stop_workload $W /tmp/w11.out; r=$R
  wget -q -O /tmp/m11.txt http://127.0.0.1:$((PORT + 1))/metrics || : > /tmp/m11.txt
  alive=0; kill -0 $D 2>/dev/null && alive=1
  kill -TERM $D; wait $D; drc=$?
  h1=$(kv hot_node1 "$r"); bad=$(kv corrupt "$r")
  eacces=$(sed -n 's/^tierkitd_errors_total{kind="EACCES"} //p' /tmp/m11.txt)
  d="hot_still_on_node1=$h1/2048 eacces=${eacces:-0} alive=$alive corrupt=$bad daemon_rc=$drc timed_out=$waited"
  if [ $waited = 0 ] && [ "${eacces:-0}" -gt 0 ] && grep -q 'EACCES' /tmp/d11.log && [ "$h1" = 2048 ] && [ $alive = 1 ] && [ "$bad" = 0 ] && [ $drc = 0 ]; then
    pass fork "$d"
  else
    fail fork "$d"; show /tmp/d11.log
  fi
}

# 4. --dry-run moves nothing and says what it would do
t_dryrun() {
  conf /tmp/dry.toml 'source = "damon"' 'interval-ms = 300'
  WORKLOAD_TLB_TICK_US=$TICK /bin/workload 8 8 0 1 1 > /tmp/w4.out &
  W=$!
  wait_for /tmp/w4.out WORKLOAD_START 20 || { fail dryrun "workload did not start"; return; }
  /bin/tierkitd --pid $W --policy hemem --config /tmp/dry.toml --dry-run 2> /tmp/d4.log &
  D=$!
  # until the daemon has decided to promote (at most 120 s), then while it decides so in three
  # more intervals: nothing may move
  wait_for /tmp/d4.log 'dry-run: would promote' 120; waited=$?
  [ $waited = 0 ] && { count_at_least /tmp/d4.log 'dry-run: would promote' 4 30 || waited=2; }
  stop_workload $W /tmp/w4.out; r=$R
  kill -TERM $D; wait $D; drc=$?
  h1=$(kv hot_node1 "$r"); c1=$(kv cold_node1 "$r")
  d="hot_on_node1=$h1/2048 cold_on_node1=$c1/2048 daemon_rc=$drc decisions=$(grep -c 'dry-run: would promote' /tmp/d4.log) timed_out=$waited"
  if [ $waited = 0 ] && [ "$h1" = 2048 ] && [ "$c1" = 2048 ] && [ $drc = 0 ] && grep -q 'dry-run: would promote' /tmp/d4.log && grep -q 'pages migrated 0 ' /tmp/d4.log; then
    pass dryrun "$d"
  else
    fail dryrun "$d"; show /tmp/d4.log
  fi
}

# 5. the portable fallback: soft-dirty bits (forced here; chosen automatically where DAMON is absent)
t_softdirty() {
  if [ -d /sys/kernel/mm/damon/admin ]; then conf /tmp/sd.toml 'source = "softdirty"' 'interval-ms = 300'; else conf /tmp/sd.toml 'interval-ms = 300'; fi
  /bin/workload 8 24 0 1 1 > /tmp/w5.out &
  W=$!
  wait_for /tmp/w5.out WORKLOAD_START 20 || { fail softdirty "workload did not start"; return; }
  /bin/tierkitd --pid $W --policy hemem --config /tmp/sd.toml 2> /tmp/d5.log &
  D=$!
  until_report /tmp/w5.out $W 120 'hot_node0>=1844'; waited=$?
  sleep 1
  stop_workload $W /tmp/w5.out; r=$R
  kill -TERM $D; wait $D; drc=$?
  h0=$(kv hot_node0 "$r"); c1=$(kv cold_node1 "$r"); bad=$(kv corrupt "$r")
  d="hot_on_node0=$h0/2048 cold_on_node1=$c1/6144 corrupt=$bad daemon_rc=$drc timed_out=$waited"
  if [ $waited = 0 ] && pct_ge "$h0" 2048 90 && pct_ge "$c1" 6144 90 && [ "$bad" = 0 ] && [ $drc = 0 ] && grep -q 'falling back to soft-dirty' /tmp/d5.log; then
    pass softdirty "$d"
  else
    fail softdirty "$d"; show /tmp/d5.log
  fi
}

# 6. refusals and bad input: clear messages, non-zero exits, no panics
t_cli() {
  /bin/workload 1 1 5 1 1 > /tmp/w6.out &
  W=$!
  wait_for /tmp/w6.out WORKLOAD_START 20
  ok=1; msg=""
  /bin/tierkitd --pid $W --policy tpp 2> /tmp/c1.log; rc=$?
  { [ $rc = 1 ] && grep -q 'needs per-page NUMA hint faults' /tmp/c1.log; } || { ok=0; msg="$msg tpp(rc=$rc)"; }
  /bin/tierkitd --pid 999999 --policy hemem 2> /tmp/c2.log; rc=$?
  { [ $rc = 1 ] && grep -q 'no such process' /tmp/c2.log; } || { ok=0; msg="$msg nopid(rc=$rc)"; }
  echo 'interval_msec = 5' > /tmp/bad.toml
  /bin/tierkitd --pid $W --policy hemem --config /tmp/bad.toml 2> /tmp/c3.log; rc=$?
  { [ $rc = 2 ] && grep -q 'interval_msec: unknown key' /tmp/c3.log; } || { ok=0; msg="$msg badkey(rc=$rc)"; }
  /bin/tierkitd --pid $W --policy hemem:sample_period=0 2> /tmp/c4.log; rc=$?
  { [ $rc = 2 ] && grep -q 'sample_period' /tmp/c4.log; } || { ok=0; msg="$msg badparam(rc=$rc)"; }
  /bin/tierkitd --pid $W --policy hemem --fast-nodes 1 --slow-nodes 1 2> /tmp/c5.log; rc=$?
  { [ $rc = 2 ] && grep -q 'node 1 is in both' /tmp/c5.log; } || { ok=0; msg="$msg nodes(rc=$rc)"; }
  grep -l panicked /tmp/c?.log && { ok=0; msg="$msg panic"; }
  wait $W
  if [ $ok = 1 ]; then pass cli "tpp refused, missing pid, unknown key, bad parameter, overlapping nodes"; else fail cli "$msg"; for f in /tmp/c?.log; do show $f 5; done; fi
}

# 7. the allocation shim's place mode: site A on node 1, site B on node 0
t_shim() {
  [ -x /shim/shim_test ] || { fail shim "shim not in the image"; return; }
  export LD_LIBRARY_PATH=/shim/lib
  TIERKIT_SHIM_MODE=profile TIERKIT_SHIM_LOG=/tmp/prof.bin LD_PRELOAD=/shim/libtierkit_shim.so /shim/shim_test sites > /tmp/s1.out 2>&1
  /shim/tkshim-dump /tmp/prof.bin > /tmp/s1.dump
  ha=$(awk '$1=="site" && $4=="size=3145728" {print $2}' /tmp/s1.dump | head -1)
  hb=$(awk '$1=="site" && $4=="size=5242880" {print $2}' /tmp/s1.dump | head -1)
  if [ -z "$ha" ] || [ -z "$hb" ] || [ "$ha" = "$hb" ]; then fail shim "profile did not give two sites: a=$ha b=$hb"; show /tmp/s1.dump; show /tmp/s1.out; return; fi
  printf '# site -> node\n%s node:1\n%s node:0\n' "$ha" "$hb" > /tmp/place.txt
  TIERKIT_SHIM_MODE=place TIERKIT_SHIM_PLACEMENT=/tmp/place.txt LD_PRELOAD=/shim/libtierkit_shim.so /shim/shim_test sites > /tmp/s2.out 2>&1
  r=$(grep SHIM_SITES /tmp/s2.out)
  a1=$(kv a_node1 "$r"); b0=$(kv b_node0 "$r"); an=$(kv a_pages "$r"); bn=$(kv b_pages "$r")
  unset LD_LIBRARY_PATH
  d="site_a=$ha on_node1=$a1/$an site_b=$hb on_node0=$b0/$bn"
  if [ -n "$an" ] && [ "$an" -gt 0 ] && [ "$a1" = "$an" ] && [ "$b0" = "$bn" ]; then pass shim "$d"; else fail shim "$d"; show /tmp/s2.out; fi
}

# 8. baseline: the kernel's own NUMA-balancing tiering (numa_balancing=2) on the same workload
t_nb2() {
  [ -e /proc/sys/kernel/numa_balancing ] || { fail nb2 "no numa_balancing"; return; }
  p0=$(awk '/^pgpromote_success/{print $2}' /proc/vmstat)
  echo 2 > /proc/sys/kernel/numa_balancing
  t0=$(cut -d' ' -f1 /proc/uptime)
  /bin/workload 16 48 0 1 1 > /tmp/w8.out &
  W=$!
  wait_for /tmp/w8.out WORKLOAD_START 20 || { echo 0 > /proc/sys/kernel/numa_balancing; fail nb2 "workload did not start"; return; }
  # until the kernel has promoted 90% of the hot region (at most 120 s)
  until_report /tmp/w8.out $W 120 'hot_node0>=3687'; waited=$?
  t1=$(cut -d' ' -f1 /proc/uptime)
  stop_workload $W /tmp/w8.out > /dev/null
  echo 0 > /proc/sys/kernel/numa_balancing
  p1=$(awk '/^pgpromote_success/{print $2}' /proc/vmstat)
  r=$(grep WORKLOAD_RESULT /tmp/w8.out); h0=$(kv hot_node0 "$r"); c1=$(kv cold_node1 "$r"); bad=$(kv corrupt "$r")
  d="hot_on_node0=$h0/4096 cold_on_node1=$c1/12288 pgpromote_success=+$((p1 - p0)) corrupt=$bad"
  echo "TKBENCH baseline=numa_balancing2 hot_on_node0=$h0 cold_on_node1=$c1 seconds=$t0..$t1"
  if [ $waited = 0 ] && [ "$bad" = 0 ] && [ $((p1 - p0)) -gt 0 ] && pct_ge "${h0:-0}" 4096 90; then pass nb2 "$d"; else fail nb2 "$d"; fi
}

# 8b. kernel-tiering mode: `tierkitd --policy nbt` sets the kernel's own tiering knobs
#     (numa_balancing=2, demotion_enabled, the spec's parameters by their Linux names,
#     vm.min_free_kbytes among them), the kernel promotes the hot region, and every knob is back
#     after SIGTERM; after SIGKILL the state file stays and the next start restores from it;
#     numa_balancing=2 set by someone else is refused
KNOBS_NBT="/proc/sys/kernel/numa_balancing /sys/kernel/mm/numa/demotion_enabled /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps /sys/kernel/debug/sched/numa_balancing/hot_threshold_ms /sys/kernel/debug/sched/numa_balancing/scan_period_min_ms /sys/kernel/debug/sched/numa_balancing/scan_size_mb /proc/sys/vm/min_free_kbytes"
knobs_now() { for k in $KNOBS_NBT; do printf '%s=%s ' "${k##*/}" "$(cat "$k" 2>/dev/null || echo na)"; done; }
t_nbt() {
  [ -e /proc/sys/kernel/numa_balancing ] || { fail nbt "no numa_balancing"; return; }
  mount -t debugfs none /sys/kernel/debug 2>/dev/null
  # originals that differ from what the run sets, so a missed restore shows
  echo 0 > /proc/sys/kernel/numa_balancing; echo false > /sys/kernel/mm/numa/demotion_enabled
  before=$(knobs_now)
  # vm.min_free_kbytes too (TPP's watermarks build on it): 2 MiB above the kernel's own value
  MFK=$(( $(cat /proc/sys/vm/min_free_kbytes) + 2048 ))
  SPEC="nbt:hot_threshold_ms=2000,scan_period_min_ms=500,promote_rate_limit_mbps=4096,min_free_kbytes=$MFK"
  ST=/tmp/tkstate
  conf /tmp/nbt.toml 'interval-ms = 300' 'status-every-s = 2' "state-dir = \"$ST\""
  /bin/workload 16 48 0 1 1 > /tmp/w12.out &
  W=$!
  wait_for /tmp/w12.out WORKLOAD_START 20 || { fail nbt "workload did not start"; return; }
  /bin/tierkitd --pid $W --policy $SPEC --config /tmp/nbt.toml --metrics-addr 127.0.0.1:$((PORT + 3)) 2> /tmp/d12.log &
  D=$!
  wait_for /tmp/d12.log 'set kernel.numa_balancing to 2' 30
  during=$(knobs_now)
  [ -f $ST/kernel-tiering.json ] && st_during=1 || st_during=0
  # until the kernel has promoted 90% of the hot region (at most 120 s)
  until_report /tmp/w12.out $W 120 'hot_node0>=3687'; waited=$?
  sleep 2.5   # one more status line
  wget -q -O /tmp/m12.txt http://127.0.0.1:$((PORT + 3))/metrics || : > /tmp/m12.txt
  stop_workload $W /tmp/w12.out; r=$R
  kill -TERM $D; wait $D; drc=$?
  after_term=$(knobs_now)
  [ -f $ST/kernel-tiering.json ] && st_after=1 || st_after=0
  h0=$(kv hot_node0 "$r"); bad=$(kv corrupt "$r")
  prom=$(sed -n 's/^tierkitd_kernel_pgpromote_success_total{node="0"} //p' /tmp/m12.txt)
  scrape nbt /tmp/m12.txt
  # SIGKILL: the knobs stay set and the state file stays; the next start restores them
  sleep 1000 &
  S=$!
  /bin/tierkitd --pid $S --policy $SPEC --config /tmp/nbt.toml 2> /tmp/d13.log &
  D=$!
  wait_for /tmp/d13.log 'set kernel.numa_balancing to 2' 30
  kill -KILL $D; wait $D 2>/dev/null
  after_kill=$(knobs_now)
  [ -f $ST/kernel-tiering.json ] && st_kill=1 || st_kill=0
  /bin/tierkitd --pid $S --policy $SPEC --config /tmp/nbt.toml 2> /tmp/d14.log &
  D=$!
  wait_for /tmp/d14.log 'set kernel.numa_balancing to 2' 30
  grep -q 'did not exit cleanly' /tmp/d14.log && grep -q 'restored kernel.numa_balancing to 0' /tmp/d14.log && recovered=1 || recovered=0
  kill -TERM $D; wait $D; drc2=$?
  after_restart=$(knobs_now)
  [ -f $ST/kernel-tiering.json ] && st_restart=1 || st_restart=0
  # another manager's numa_balancing=2: refused, nothing changed
  echo 2 > /proc/sys/kernel/numa_balancing
  own_before=$(knobs_now)
  /bin/tierkitd --pid $S --policy nbt --config /tmp/nbt.toml 2> /tmp/d15.log; rrc=$?
  own_after=$(knobs_now)
  grep -q 'another manager owns' /tmp/d15.log && [ $rrc = 1 ] && [ "$own_before" = "$own_after" ] && refused=1 || refused=0
  echo 0 > /proc/sys/kernel/numa_balancing
  kill $S; wait $S 2>/dev/null
  echo "TKBENCH nbt before=\"$before\" during=\"$during\" after_term=\"$after_term\" after_kill=\"$after_kill\" after_restart=\"$after_restart\""
  nb_during=$(echo "$during" | tr ' ' '\n' | sed -n 's/^numa_balancing=//p')
  nb_kill=$(echo "$after_kill" | tr ' ' '\n' | sed -n 's/^numa_balancing=//p')
  d="hot_on_node0=$h0/4096 corrupt=$bad metrics_promoted_node0=${prom:-none} numa_balancing_during=$nb_during state_during=$st_during daemon_rc=$drc restored_after_term=$([ "$before" = "$after_term" ] && echo 1 || echo 0) state_after_term=$st_after numa_balancing_after_kill=$nb_kill state_after_kill=$st_kill recovered=$recovered restored_after_restart=$([ "$before" = "$after_restart" ] && echo 1 || echo 0) state_after_restart=$st_restart daemon2_rc=$drc2 refused_other_manager=$refused timed_out=$waited"
  if [ $waited = 0 ] && pct_ge "${h0:-0}" 4096 90 && [ "$bad" = 0 ] && [ "${prom:-0}" -gt 0 ] && [ "$nb_during" = 2 ] && [ $st_during = 1 ] &&
     [ "$(echo "$during" | tr ' ' '\n' | grep -cE "^(hot_threshold_ms=2000|scan_period_min_ms=500|numa_balancing_promote_rate_limit_MBps=4096|demotion_enabled=true|min_free_kbytes=$MFK)\$")" = 5 ] &&
     [ $drc = 0 ] && [ "$before" = "$after_term" ] && [ $st_after = 0 ] && [ "$nb_kill" = 2 ] && [ $st_kill = 1 ] && [ $recovered = 1 ] &&
     [ "$before" = "$after_restart" ] && [ $st_restart = 0 ] && [ $drc2 = 0 ] && [ $refused = 1 ] &&
     grep -q 'status: .*kernel tiering: hint faults' /tmp/d12.log && grep -q 'stopped by signal' /tmp/d12.log; then
    pass nbt "$d"
    echo "--- session (daemon log, for docs/operator-guide.md)"; sed 's/^/    /' /tmp/d12.log; grep '^tierkitd_kernel' /tmp/m12.txt | sed 's/^/    /'
  else
    fail nbt "$d"; show /tmp/d12.log; show /tmp/d13.log 10; show /tmp/d14.log 20; show /tmp/d15.log 5
  fi
  echo true > /sys/kernel/mm/numa/demotion_enabled
}

# 8c. `nbt+alto` and `nbt+colloid` over the kernel's tiering: the guest
#     has no PMU, so both are refused in one line naming what is missing, before any knob changes;
#     then `nbt+alto` on replayed core counters (TIERKITD_CORE_COUNTERS_REPLAY, a test aid): AOL 30
#     (<= AOL_low: N = 0 of 16) clears the tiering bit and sets the promotion rate limit to 0, and
#     the kernel promotes nothing of a hot region on the slow node; AOL 150 (>= AOL_high: 16 of 16)
#     sets them back and the kernel promotes it. Every knob is back after SIGTERM, and after
#     SIGKILL at N = 0 plus a restart (the rate limit Alto set comes back from the state file).
aol_steps() { # aol_steps AOL:READS... -> cumulative reads of a cgroup aggregate (pid 0)
  echo "$@" | tr ' ' '\n' | awk -F: 'BEGIN { c = 0; a1 = 0; a3 = 0; i = 0
      printf "read 0 0 cycles=0 stalls_l3_miss=0 a1=0 a2=0 a3=0\n" }
    { for (k = 0; k < $2; k++) { i++; c += 1e9; a3 += 1e6; a1 += $1 * 1e6
        printf "read %d 0 cycles=%.0f stalls_l3_miss=%.0f a1=%.0f a2=%.0f a3=%.0f\n", i, c, c / 4, a1, 2 * a1, a3 } }'
}
t_nbtalto() {
  [ -e /proc/sys/kernel/numa_balancing ] || { fail nbtalto "no numa_balancing"; return; }
  mount -t debugfs none /sys/kernel/debug 2>/dev/null
  echo 0 > /proc/sys/kernel/numa_balancing; echo false > /sys/kernel/mm/numa/demotion_enabled
  before=$(knobs_now)
  ST=/tmp/tkstate-alto
  conf /tmp/alto.toml 'interval-ms = 300' 'status-every-s = 2' "state-dir = \"$ST\""
  sleep 1000 &
  S=$!
  # no PMU, no uncore counters: refused, the last line the error, nothing changed
  /bin/tierkitd --pid $S --policy nbt+alto --config /tmp/alto.toml 2> /tmp/a1.log; rc1=$?
  /bin/tierkitd --pid $S --policy nbt+colloid --config /tmp/alto.toml 2> /tmp/a2.log; rc2=$?
  after_refusals=$(knobs_now)
  ref_alto=$(tail -1 /tmp/a1.log | grep -c 'error: policy `nbt+alto` cannot run on this host: it needs per-core PMU counters (cycles, .*no core PMU')
  ref_colloid=$(tail -1 /tmp/a2.log | grep -c 'error: policy `nbt+colloid` cannot run on this host: it needs per-tier uncore counters')
  [ -f $ST/kernel-tiering.json ] && st_ref=1 || st_ref=0
  # replayed counters: 150 intervals (45 s) at AOL 30, then AOL 150
  aol_steps 30:150 150:1000 > /tmp/aol.txt
  TIERKITD_CORE_COUNTERS_REPLAY=/tmp/aol.txt /bin/tierkitd --pid $S --policy nbt+alto --config /tmp/alto.toml --metrics-addr 127.0.0.1:$((PORT + 4)) 2> /tmp/a3.log &
  D=$!
  wait_for /tmp/a3.log '0 of 16' 30; w0=$?
  n0=$(knobs_now)
  /bin/workload 16 48 0 1 1 > /tmp/wa.out &
  W=$!
  wait_for /tmp/wa.out WORKLOAD_START 20 || { kill $D $W $S; wait; fail nbtalto "workload did not start"; show /tmp/a3.log; return; }
  p0=$(awk '/^pgpromote_success /{print $2}' /proc/vmstat)
  sleep 8
  kill -USR1 $W; sleep 1
  h_n0=$(kv hot_node0 "$(grep WORKLOAD_REPORT /tmp/wa.out | tail -1)")
  p1=$(awk '/^pgpromote_success /{print $2}' /proc/vmstat)
  nb_n0=$(cat /proc/sys/kernel/numa_balancing)
  grep -q '16 of 16' /tmp/a3.log && early=1 || early=0
  wait_for /tmp/a3.log '16 of 16' 90; w16=$?
  n16=$(knobs_now)
  until_report /tmp/wa.out $W 120 'hot_node0>=3687'; waited=$?
  p2=$(awk '/^pgpromote_success /{print $2}' /proc/vmstat)
  wget -q -O /tmp/ma.txt http://127.0.0.1:$((PORT + 4))/metrics || : > /tmp/ma.txt
  scrape nbtalto /tmp/ma.txt
  stop_workload $W /tmp/wa.out; r=$R
  kill -TERM $D; wait $D; drc=$?
  after_term=$(knobs_now)
  [ -f $ST/kernel-tiering.json ] && st_term=1 || st_term=0
  h0=$(kv hot_node0 "$r"); bad=$(kv corrupt "$r")
  # SIGKILL at N = 0, then a restart restores what Alto set
  aol_steps 30:150 > /tmp/aol0.txt
  TIERKITD_CORE_COUNTERS_REPLAY=/tmp/aol0.txt /bin/tierkitd --pid $S --policy nbt+alto --config /tmp/alto.toml 2> /tmp/a4.log &
  D=$!
  wait_for /tmp/a4.log '0 of 16' 30
  kill -KILL $D; wait $D 2>/dev/null
  after_kill=$(knobs_now)
  [ -f $ST/kernel-tiering.json ] && st_kill=1 || st_kill=0
  /bin/tierkitd --pid $S --policy nbt --config /tmp/alto.toml 2> /tmp/a5.log &
  D=$!
  wait_for /tmp/a5.log 'set kernel.numa_balancing to 2' 30
  grep -q 'did not exit cleanly' /tmp/a5.log && grep -q 'restored kernel.numa_balancing_promote_rate_limit_MBps to 65536 (was 0)' /tmp/a5.log && recovered=1 || recovered=0
  kill -TERM $D; wait $D; drc2=$?
  after_restart=$(knobs_now)
  kill $S; wait $S 2>/dev/null
  echo "TKBENCH nbtalto before=\"$before\" n0=\"$n0\" n16=\"$n16\" after_term=\"$after_term\" after_kill=\"$after_kill\" after_restart=\"$after_restart\""
  d="refused_alto=$ref_alto/$rc1 refused_colloid=$ref_colloid/$rc2 unchanged_by_refusals=$([ "$before" = "$after_refusals" ] && echo 1 || echo 0) state_after_refusals=$st_ref numa_balancing_at_n0=$nb_n0 promoted_at_n0=$((p1 - p0)) hot_on_node0_at_n0=$h_n0 n16_too_early=$early promoted_at_n16=$((p2 - p1)) hot_on_node0=$h0/4096 corrupt=$bad daemon_rc=$drc restored_after_term=$([ "$before" = "$after_term" ] && echo 1 || echo 0) state_after_term=$st_term state_after_kill=$st_kill recovered=$recovered restored_after_restart=$([ "$before" = "$after_restart" ] && echo 1 || echo 0) daemon2_rc=$drc2 timed_out=$w0$w16$waited"
  if [ $rc1 = 1 ] && [ $rc2 = 1 ] && [ "$ref_alto" = 1 ] && [ "$ref_colloid" = 1 ] && [ "$before" = "$after_refusals" ] && [ $st_ref = 0 ] &&
     [ $w0 = 0 ] && has "$n0" numa_balancing=0 && has "$n0" numa_balancing_promote_rate_limit_MBps=0 && [ "$nb_n0" = 0 ] && [ $early = 0 ] &&
     [ $((p1 - p0)) = 0 ] && [ "${h_n0:-9999}" -lt 205 ] &&
     [ $w16 = 0 ] && has "$n16" numa_balancing=2 && has "$n16" numa_balancing_promote_rate_limit_MBps=65536 &&
     [ $waited = 0 ] && [ $((p2 - p1)) -gt 0 ] && pct_ge "${h0:-0}" 4096 90 && [ "$bad" = 0 ] &&
     grep -q '^tierkitd_alto_promotion_ratio 1$' /tmp/ma.txt &&
     [ $drc = 0 ] && [ "$before" = "$after_term" ] && [ $st_term = 0 ] && [ $st_kill = 1 ] && has "$after_kill" numa_balancing_promote_rate_limit_MBps=0 &&
     [ $recovered = 1 ] && [ "$before" = "$after_restart" ] && [ $drc2 = 0 ]; then
    pass nbtalto "$d"
    echo "--- session (daemon log)"; sed 's/^/    /' /tmp/a3.log | head -60; echo "--- refusals"; tail -1 /tmp/a1.log; tail -1 /tmp/a2.log
  else
    fail nbtalto "$d"; show /tmp/a1.log 3; show /tmp/a2.log 3; show /tmp/a3.log 60; show /tmp/a4.log 10; show /tmp/a5.log 20
  fi
  echo true > /sys/kernel/mm/numa/demotion_enabled
}

# 8c'. `nbt+alto`'s middle bands: the kernel's promotion follows F(AOL). Node 0 is shrunk to
#     256 MiB free by reserving huge pages on it (below pgdat_free_space_enough's 1 GiB, so the
#     kernel applies its promotion rate limit) and a 48 MiB hot region starts on node 1. Replayed
#     core counters put AOL at 70 (N = 4 of 16), then 90 (8), then 150 (16); with a base limit of
#     4 MB/s tierkitd sets kernel.numa_balancing_promote_rate_limit_MBps to 1, 2 and 4 (256, 512
#     and 1024 pages/s) and scan_size_mb to 64, 128 and 256 (each more than the region, so one
#     scan window per pass). What the kernel does with a limit (numa_promotion_rate_limit,
#     kernel/sched/fair.c): a window opens at the first candidate more than a second after the
#     last one opened, and lets `limit` candidates through; a scan pass's hint faults come in a
#     burst, so a window promotes `limit` pages when the burst brings that many candidates within
#     its second, and fewer when the guest is too slow to (a loaded host: 351 and 585 against
#     1024 at N = 16), and a burst longer than a second opens a second window. A sampler reads
#     pgpromote_success and the limit itself every 200 ms, so every interval belongs to the limit
#     in force at both its ends (band_stats). Checked per band: at least two bursts' first
#     windows, the most any of them promoted within 0.75-1.25x the limit (the limit binds, and is
#     never exceeded; measured L-10 to L+10: a window's last dozen promotions often come up to a
#     second after the rest), rising at least 1.5x from band to band (F doubles the limit): the
#     kernel's peak pgpromote_success per second follows the band (the issue's words). Averaged
#     over the band's wall time it is the limit times the windows the passes open per second,
#     which the scanner sets, not Alto: it must be higher at N = 16 than at 8 and at 4 (measured
#     1.8-3.6x and 2.0-5.6x), and is only reported between 4 and 8 (1.08-1.84x over 20 boots:
#     passes came less often in the second band in most boots). The bands last 30, 45 and 20 s:
#     at N = 16 the kernel promotes the rest of the region within about 30 s.
#     Why not per scan pass (mm->numa_scan_seq), as this test did until 2026-11-30: under
#     emulation the bursts came 1.5-10 s apart, and numa_scan_seq sometimes advanced without one
#     (3 passes over 2 bursts in one band: a pass that marked nothing, which vma_is_accessed's
#     skips would explain; not checked), so a band of 3-4 passes counted one window more or less
#     by where the marks fell: 346 per pass at N = 8 (limit 512) failed a fresh-clone CI boot
#     and 1 of 4 local boots.
band_sampler() { # band_sampler: every 200 ms, uptime (centiseconds), pgpromote_success, the limit (MB/s)
  while :; do
    awk 'FILENAME == "/proc/uptime" { t = $1 * 100 } /^pgpromote_success / { s = $2 }
         FILENAME ~ /rate_limit/ { l = $1 } END { printf "%d %d %d\n", t, s, l }' \
      /proc/uptime /proc/vmstat /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps
    sleep 0.2
  done
}
# band_stats SAMPLES LIMIT_MBPS -> "centiseconds promoted per_s windows median max": the time
# and the promotions of the intervals the limit held at both ends, and the first rate-limit
# window of each burst: a promoting interval after at least 1.2 s without promotions opens one
# (the kernel's window opened inside it), and it holds what the samples up to a second after
# that interval's start promoted (the next window opens more than a second after this one did).
band_stats() {
  awk -v L="$2" '
    NR > 1 {
      t = $1; d = $2 - ps; inb = (pl == L && $3 == L)
      if (inb) { dt += t - pt; prom += d }
      if (ep) {
        if (t > ep_end) { size[n++] = sum; ep = 0 }
        else if (!inb) ep = 0
        else sum += d
      } else if (d > 0 && inb && pt - lastprom >= 120) { ep = 1; ep_end = pt + 100; sum = d }
      if (d > 0) lastprom = t
    }
    NR == 1 { lastprom = -1000 }
    { pt = $1; ps = $2; pl = $3 }
    END {
      for (i = 1; i < n; i++) { v = size[i]; for (j = i - 1; j >= 0 && size[j] > v; j--) size[j + 1] = size[j]; size[j + 1] = v }
      printf "%d %d %d %d %d %d", dt, prom, (dt > 0 ? prom * 100 / dt : -1), n, (n ? size[int((n - 1) / 2)] : -1), (n ? size[n - 1] : -1)
    }' "$1"
}
t_nbtband() {
  [ -e /proc/sys/kernel/numa_balancing ] || { fail nbtband "no numa_balancing"; return; }
  mount -t debugfs none /sys/kernel/debug 2>/dev/null
  hp=/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
  [ -w $hp ] || { fail nbtband "no per-node huge pages ($hp)"; return; }
  echo 0 > /proc/sys/kernel/numa_balancing
  before=$(knobs_now)
  free0() { awk '/MemFree/{print $4}' /sys/devices/system/node/node0/meminfo; }
  echo $(( ($(free0) / 1024 - 256) / 2 )) > $hp
  f0=$(free0)
  [ "$f0" -lt $((1024 * 1024)) ] || { echo 0 > $hp; fail nbtband "node 0 still has $f0 kB free after reserving huge pages"; return; }
  ST=/tmp/tkstate-band
  conf /tmp/band.toml 'interval-ms = 500' 'status-every-s = 5' "state-dir = \"$ST\""
  /bin/workload 48 0 0 1 1 > /tmp/wb.out &
  W=$!
  wait_for /tmp/wb.out WORKLOAD_START 60 || { kill $W; wait; echo 0 > $hp; fail nbtband "workload did not start"; return; }
  band_sampler > /tmp/bs.txt &
  BS=$!
  # one read per 500 ms interval: 60 at AOL 70 (30 s), 90 at 90 (45 s), then 150 (20 s measured)
  aol_steps 70:60 90:90 150:400 > /tmp/aolb.txt
  SPEC="nbt:promote_rate_limit_mbps=4,scan_size_mb=256,scan_period_min_ms=1000,scan_period_max_ms=1000+alto"
  TIERKITD_CORE_COUNTERS_REPLAY=/tmp/aolb.txt /bin/tierkitd --pid $W --policy "$SPEC" --config /tmp/band.toml 2> /tmp/b1.log &
  D=$!
  waited=1
  if wait_for /tmp/b1.log ' 4 of 16' 90 && k4=$(knobs_now) && wait_for /tmp/b1.log ' 8 of 16' 90 && k8=$(knobs_now) &&
     wait_for /tmp/b1.log '16 of 16' 90 && k16=$(knobs_now); then
    sleep 20
    waited=0
  fi
  kill $BS; wait $BS 2>/dev/null
  kill -USR1 $W; sleep 1
  stop_workload $W /tmp/wb.out; r=$R
  kill -TERM $D; wait $D; drc=$?
  after=$(knobs_now)
  echo 0 > $hp
  [ -f $ST/kernel-tiering.json ] && st=1 || st=0
  b4=$(band_stats /tmp/bs.txt 1); b8=$(band_stats /tmp/bs.txt 2); b16=$(band_stats /tmp/bs.txt 4)
  bf() { echo "$1" | cut -d' ' -f"$2"; }
  lim() { echo $(($1 * 256)); }   # MB/s -> 4 KiB pages (per second, so per one-second window)
  c4=$(bf "$b4" 6); c8=$(bf "$b8" 6); c16=$(bf "$b16" 6)
  ok_windows() { [ "$(bf "$1" 4)" -ge 2 ] && [ $(($(bf "$1" 6) * 4)) -ge $(($2 * 3)) ] && [ $(($(bf "$1" 6) * 4)) -le $(($2 * 5)) ]; }
  d="node0_free_kb=$f0 window_max_at_n4=$c4/$(lim 1) at_n8=$c8/$(lim 2) at_n16=$c16/$(lim 4) windows=$(bf "$b4" 4),$(bf "$b8" 4),$(bf "$b16" 4) window_median=$(bf "$b4" 5),$(bf "$b8" 5),$(bf "$b16" 5) per_s_at_n4=$(bf "$b4" 3) at_n8=$(bf "$b8" 3) at_n16=$(bf "$b16" 3) band_s=$(($(bf "$b4" 1) / 100)),$(($(bf "$b8" 1) / 100)),$(($(bf "$b16" 1) / 100)) hot_on_node0=$(kv hot_node0 "$r")/12288 corrupt=$(kv corrupt "$r") daemon_rc=$drc restored=$([ "$before" = "$after" ] && echo 1 || echo 0) state_after=$st timed_out=$waited"
  echo "TKBENCH nbtband n4=\"$k4\" n8=\"$k8\" n16=\"$k16\" (bands: centiseconds promoted per_s windows median max) b4=\"$b4\" b8=\"$b8\" b16=\"$b16\""
  if [ "$waited" = 0 ] && has "$k4" numa_balancing_promote_rate_limit_MBps=1 && has "$k4" scan_size_mb=64 &&
     has "$k8" numa_balancing_promote_rate_limit_MBps=2 && has "$k8" scan_size_mb=128 &&
     has "$k16" numa_balancing_promote_rate_limit_MBps=4 && has "$k16" scan_size_mb=256 &&
     ok_windows "$b4" "$(lim 1)" && ok_windows "$b8" "$(lim 2)" && ok_windows "$b16" "$(lim 4)" &&
     [ $((c8 * 10)) -ge $((c4 * 15)) ] && [ $((c16 * 10)) -ge $((c8 * 15)) ] &&
     [ "$(bf "$b16" 3)" -gt "$(bf "$b8" 3)" ] && [ "$(bf "$b16" 3)" -gt "$(bf "$b4" 3)" ] &&
     [ "$(kv corrupt "$r")" = 0 ] && [ $drc = 0 ] && [ "$before" = "$after" ] && [ $st = 0 ]; then
    pass nbtband "$d"
  else
    fail nbtband "$d"; show /tmp/b1.log 40; echo "TKBENCH nbtband samples=\"$(tr '\n' ';' < /tmp/bs.txt)\""
  fi
}

# 8d. `nbt+colloid` on injected tier latencies (TIERKITD_TIER_LATENCY_REPLAY,
#     a test aid: the guest has no uncore counters) with DAMON samples of the workload, both its
#     regions first on node 0: while the fast tier is the faster (100 vs 250 ns) the kernel's
#     tiering runs; when it is the slower (400 vs 250 ns) its promotion stops (numa_balancing 0,
#     pgpromote_success unchanged) and tierkitd demotes the sampled hot pages by move_pages (a
#     quarter of the hot region on node 1 at least); when it is faster again the kernel promotes
#     them back (90% of the hot region on node 0). Every knob is back after SIGTERM.
t_nbtcolloid() {
  [ -e /proc/sys/kernel/numa_balancing ] || { fail nbtcolloid "no numa_balancing"; return; }
  mount -t debugfs none /sys/kernel/debug 2>/dev/null
  echo 0 > /proc/sys/kernel/numa_balancing; echo false > /sys/kernel/mm/numa/demotion_enabled
  before=$(knobs_now)
  ST=/tmp/tkstate-colloid
  conf /tmp/colloid.toml 'source = "damon"' 'interval-ms = 300' 'status-every-s = 5' "state-dir = \"$ST\""
  WORKLOAD_TLB_TICK_US=$TICK /bin/workload 16 48 0 0 0 > /tmp/wc.out &
  W=$!
  wait_for /tmp/wc.out WORKLOAD_START 20 || { fail nbtcolloid "workload did not start"; return; }
  # 10 intervals (3 s) balanced the right way, 300 (90 s) with the fast tier loaded, then faster again
  awk 'BEGIN { for (i = 0; i < 10; i++) print "100 250"; for (i = 0; i < 300; i++) print "400 250"; print "100 250" }' > /tmp/lat.txt
  TIERKITD_TIER_LATENCY_REPLAY=/tmp/lat.txt /bin/tierkitd --pid $W --policy nbt+colloid --config /tmp/colloid.toml --metrics-addr 127.0.0.1:$((PORT + 5)) 2> /tmp/c1.log &
  D=$!
  wait_for /tmp/c1.log 'colloid: fast tier .* promotion stops' 30; ws=$?
  nb_stop=$(cat /proc/sys/kernel/numa_balancing)
  p0=$(awk '/^pgpromote_success /{print $2}' /proc/vmstat)
  # until a quarter of the hot region is demoted (the phase lasts 90 s)
  until_report /tmp/wc.out $W 80 'hot_node1>=1024'; wd=$?
  h1=$(kv hot_node1 "$(grep WORKLOAD_REPORT /tmp/wc.out | tail -1)")
  p1=$(awk '/^pgpromote_success /{print $2}' /proc/vmstat)
  grep -q 'colloid: fast tier .* promotes again' /tmp/c1.log && early=1 || early=0
  wget -q -O /tmp/mc.txt http://127.0.0.1:$((PORT + 5))/metrics || : > /tmp/mc.txt
  scrape nbtcolloid /tmp/mc.txt
  wait_for /tmp/c1.log 'colloid: fast tier .* promotes again' 100; wa=$?
  nb_again=$(cat /proc/sys/kernel/numa_balancing)
  until_report /tmp/wc.out $W 120 'hot_node0>=3687'; wb=$?
  stop_workload $W /tmp/wc.out; r=$R
  kill -TERM $D; wait $D; drc=$?
  after_term=$(knobs_now)
  [ -f $ST/kernel-tiering.json ] && st_term=1 || st_term=0
  h0=$(kv hot_node0 "$r"); bad=$(kv corrupt "$r")
  dem=$(sed -n 's/^tierkitd_demotions_total{target="[0-9]*"} //p' /tmp/mc.txt)
  echo "TKBENCH nbtcolloid before=\"$before\" after_term=\"$after_term\""
  d="numa_balancing_stopped=$nb_stop promoted_while_stopped=$((p1 - p0)) hot_on_node1_demoted=$h1/4096 metrics_demotions=${dem:-none} resumed_too_early=$early numa_balancing_again=$nb_again hot_on_node0=$h0/4096 corrupt=$bad daemon_rc=$drc restored_after_term=$([ "$before" = "$after_term" ] && echo 1 || echo 0) state_after_term=$st_term timed_out=$ws$wd$wa$wb"
  if [ $ws = 0 ] && [ "$nb_stop" = 0 ] && [ $wd = 0 ] && [ $((p1 - p0)) = 0 ] && [ $early = 0 ] && [ "${dem:-0}" -gt 0 ] &&
     grep -q '^tierkitd_colloid_promotion_stops_total 1$' /tmp/mc.txt &&
     [ $wa = 0 ] && [ "$nb_again" = 2 ] && [ $wb = 0 ] && pct_ge "${h0:-0}" 4096 90 && [ "$bad" = 0 ] &&
     [ $drc = 0 ] && [ "$before" = "$after_term" ] && [ $st_term = 0 ]; then
    pass nbtcolloid "$d"
    echo "--- session (daemon log)"; grep -v 'status:' /tmp/c1.log | sed 's/^/    /' | head -60
  else
    fail nbtcolloid "$d"; show /tmp/c1.log 60
  fi
  echo true > /sys/kernel/mm/numa/demotion_enabled
}

# 9. benchmark: migration rate of tierkitd vs raw batched move_pages on the same kind of target
#    (64 MiB on node 1 that its process keeps writing at nice 19), side by side in one boot;
#    then tierkitd's and kdamond's CPU time per second of monitoring at the defaults.
#    Two baselines: raw move_pages with nothing watching its target, and raw move_pages while
#    DAMON monitors its target exactly as tierkitd's DAMON source does (damon_on): the second
#    has the same kernel-side monitoring cost as tierkitd's run, so their ratio is tierkitd's own
#    cost; the first includes what DAMON's kdamond takes from the one vCPU.
raw_under() { # raw_under none|damon -> pages/s of mpbench moving 64 MiB in 4096-page calls
  /bin/mpbench 64 4096 1 0 active wait > /tmp/mpw.out &
  M=$!
  if ! wait_for /tmp/mpw.out MPBENCH_READY 20; then kill $M 2>/dev/null; wait $M; echo 0; return; fi
  c=$(sed -n 's/^MPBENCH_READY child=//p' /tmp/mpw.out)
  [ "$1" = damon ] && damon_on "$c"
  sleep 1   # DAMON has split its regions and is sampling when the moves start
  kill -USR1 $M; wait $M
  [ "$1" = damon ] && damon_off
  r=$(grep '^MPBENCH ' /tmp/mpw.out); echo "TKBENCH raw mode=$1 $r" >&2
  kv pages_per_s "$r"
}
t_bench() {
  # each baseline three times before and three times after the daemon's run, interleaved: the
  # emulated guest's speed drifts with the host's load, so each baseline is the median of six
  rawrun() { for i in 1 2 3; do echo "none=$(raw_under none) damon=$(raw_under damon)"; done; }
  /bin/mpbench 64 4096 1 0 active > /dev/null   # warm-up: the first moves of a boot are slower
  before=$(rawrun)
  # 4 pseudo-samples per page per interval at the maximum: every page of the uniformly hot 64 MiB
  # becomes hot for HeMem within an interval or two, so the whole region moves during the run
  conf /tmp/bench.toml 'source = "damon"' 'interval-ms = 300' 'migrate-mib-s = 0' 'samples-per-page = 4'
  WORKLOAD_NICE=19 /bin/workload 64 0 25 1 1 > /tmp/w9.out &
  W=$!
  wait_for /tmp/w9.out WORKLOAD_START 20
  /bin/tierkitd --pid $W --policy hemem --config /tmp/bench.toml 2> /tmp/d9.log &
  D=$!
  wait $W; kill -TERM $D; wait $D
  after=$(rawrun)
  med6() { printf '%s\n' $before $after | sed -n "s/^$1=//p" | sort -n | sed -n '3p;4p' | awk '{s+=$1} END{printf "%d", s/2}'; }
  med=$(med6 none); medd=$(med6 damon)
  line=$(grep 'stopped by signal' /tmp/d9.log)
  echo "TKBENCH daemon_line=\"$line\""
  grep -E 'interval [0-9]*: promoted' /tmp/d9.log | sed 's/^/TKBENCH pass /'
  rate=$(echo "$line" | sed -n 's/.*s of migration passes (\([0-9]*\) pages\/s.*/\1/p')
  passes=$(grep -c 'interval [0-9]*: promoted' /tmp/d9.log)
  echo "TKBENCH raw_before=\"$(echo $before)\" raw_after=\"$(echo $after)\" raw_median=$med raw_damon_median=$medd tierkitd_pages_per_s=${rate:-0} passes=$passes"
  # CPU per second of monitoring at the defaults (interval 500 ms, DAMON defaults)
  /bin/workload 16 48 0 1 1 > /tmp/w10.out &
  W=$!
  wait_for /tmp/w10.out WORKLOAD_START 20
  /bin/tierkitd --pid $W --policy hemem 2> /tmp/d10.log &
  D=$!
  sleep 5
  k=$(cat /sys/kernel/mm/damon/admin/kdamonds/0/pid 2>/dev/null || echo 0)
  a=$(cputicks $D); ka=$(cputicks $k); t0=$(cut -d' ' -f1 /proc/uptime)
  sleep 15
  b=$(cputicks $D); kb=$(cputicks $k); t1=$(cut -d' ' -f1 /proc/uptime)
  kill -TERM $D; wait $D; kill -TERM $W; wait $W
  echo "TKBENCH cpu_ticks_daemon=$((b - a)) cpu_ticks_kdamond=$((kb - ka)) wall=$t0..$t1 hz=100"
  promoted=$(echo "$line" | sed -n 's/.*promoted \([0-9]*\),.*/\1/p')
  if [ "${rate:-0}" -gt 0 ] && [ "${med:-0}" -gt 0 ] && [ "${medd:-0}" -gt 0 ] && pct_ge "${promoted:-0}" 16384 90; then
    pass bench "raw=$med raw_under_damon=$medd tierkitd=$rate pages/s ($((rate * 100 / medd))% of raw under DAMON, $((rate * 100 / med))% of raw) promoted=$promoted"
  else fail bench "rate=$rate raw_median=$med raw_damon_median=$medd promoted=$promoted"; show /tmp/d9.log; fi
}

# 10. the recording behind `tierkit validate kernel` (not in the default list; `tierkit validate
#     kernel --record` boots the guest with tktests=nbtrec): the kernel's own tiering
#     (numa_balancing=2, demotion enabled) on a hot region that first touch put on the slow node,
#     with /proc/vmstat and the hot region's placement every 100 ms. Sizes and duration come from
#     the kernel command line (tkrec=HOT_MIB,COLD_MIB,SECONDS; default 32,480,20); tkthp=1 puts the
#     regions on transparent huge pages (`--scenario thp`).
t_nbtrec() {
  [ -e /proc/sys/kernel/numa_balancing ] || { fail nbtrec "no numa_balancing"; return; }
  set -- $(sed -n 's/.*tkrec=\([0-9]*\),\([0-9]*\),\([0-9]*\).*/\1 \2 \3/p' /proc/cmdline) 32 480 20
  rh=$1 rc=$2 rs=$3
  mount -t debugfs none /sys/kernel/debug 2>/dev/null
  nbd=/sys/kernel/debug/sched/numa_balancing
  # tkthp=1 on the kernel command line: both regions on transparent huge pages (WORKLOAD_THP;
  # `tierkit validate kernel --scenario thp`), THP switched to madvise if the kernel booted with
  # it off
  thp=$(sed -n 's/.*tkthp=\([0-9]*\).*/\1/p' /proc/cmdline) ps=4096
  tpe=/sys/kernel/mm/transparent_hugepage/enabled
  if [ "${thp:-0}" = 1 ]; then
    ps=2097152; export WORKLOAD_THP=1
    grep -q '\[never\]' $tpe 2>/dev/null && echo madvise > $tpe
  fi
  meta="kernel=$(uname -r) hot_mib=$rh cold_mib=$rc seconds=$rs page_size=$ps hz=100"
  [ "${thp:-0}" = 1 ] && meta="$meta scenario=thp thp_enabled=$(sed 's/.*\[\(.*\)\].*/\1/' $tpe) thp_defrag=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/defrag)"
  for k in scan_delay_ms scan_period_min_ms scan_period_max_ms scan_size_mb hot_threshold_ms; do meta="$meta $k=$(cat $nbd/$k 2>/dev/null || echo na)"; done
  meta="$meta promote_rate_limit_MBps=$(cat /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps 2>/dev/null || echo na)"
  meta="$meta node0_free_kb=$(awk '/MemFree/{print $4}' /sys/devices/system/node/node0/meminfo)"
  echo 1 > /sys/kernel/mm/numa/demotion_enabled 2>/dev/null
  echo 2 > /proc/sys/kernel/numa_balancing
  vm() { awk '/^(numa_hint_faults|numa_pte_updates|numa_huge_pte_updates|pgpromote_candidate|pgpromote_success|pgdemote_kswapd|pgdemote_direct|thp_migration_success|thp_migration_fail|thp_migration_split) /{printf " %s=%s", $1, $2}' /proc/vmstat; }
  echo "TKREC_META $meta"
  WORKLOAD_REPORT_HOT=1 /bin/workload "$rh" "$rc" 0 1 1 > /tmp/wr.out &
  W=$!
  echo "TKREC_VM t=$(cut -d' ' -f1 /proc/uptime)$(vm)"
  echo "TKREC_PROC start_ticks=$(awk '{print $22}' /proc/$W/stat)"
  # vmstat from the exec on (the scanner's delay runs during the workload's setup); reports once
  # the sweep has started (SIGUSR1 before the workload's handler is installed would kill it)
  i=0 j=0
  while [ $i -lt $((rs * 10)) ]; do
    if grep -q WORKLOAD_START /tmp/wr.out; then kill -USR1 $W; i=$((i + 1)); else j=$((j + 1)); fi
    [ $j -gt 600 ] && { kill $W; echo 0 > /proc/sys/kernel/numa_balancing; fail nbtrec "workload did not start"; return; }
    sleep 0.1
    # the workload's CPU ticks and scan passes too: Linux paces the scanner by the task's CPU
    # time (task_tick_numa), and the one vCPU is shared with this loop
    echo "TKREC_VM t=$(cut -d' ' -f1 /proc/uptime)$(vm) wl_ticks=$(cputicks $W) scan_seq=$(scanseq $W)"
  done
  stop_workload $W /tmp/wr.out
  echo 0 > /proc/sys/kernel/numa_balancing
  grep -E '^WORKLOAD_(START|REPORT|RESULT)' /tmp/wr.out | sed 's/^/TKREC_W /'
  h0=$(grep WORKLOAD_REPORT /tmp/wr.out | tail -1); h0=$(kv hot_node0 "$h0")
  bad=$(kv corrupt "$R"); n=$((rh * 256))
  d="hot_on_node0=$h0/$n reports=$(grep -c WORKLOAD_REPORT /tmp/wr.out) corrupt=$bad"
  if [ "$bad" = 0 ] && pct_ge "${h0:-0}" $n 90; then pass nbtrec "$d"; else fail nbtrec "$d"; fi
}

# nbtpress: like nbtrec, with the fast node nearly full (`tierkit validate kernel --scenario press
#     --record`). The cold region is first placed on node 0, the hot one on node 1; the workload then
#     fills node 0 with mlocked pages (WORKLOAD_NODE0_FREE_MIB) so that FREE_MIB stay free above its high watermark: node 0 holds the hot region
#     but not hot + cold, and keeps touching random cold pages at a set rate
#     (WORKLOAD_COLD_TOUCH_PER_S) so cold pages on node 1 take hint faults too. numa_balancing=2
#     with demotion enabled; /proc/vmstat, node 0's MemFree, the workload's CPU ticks (wl_ticks) and
#     both regions' placement every 100 ms (0.15-0.2 s in practice: the loop's own work). Parameters from
#     the kernel command line: tkpress=HOT_MIB,COLD_MIB,SECONDS,FREE_MIB,COLD_PER_S (default
#     32,64,100,16,8192). Passes when the data is intact and the kernel promoted at least the hot
#     region's size; it checks no rate (the recording is what matters).
t_nbtpress() {
  [ -e /proc/sys/kernel/numa_balancing ] || { fail nbtpress "no numa_balancing"; return; }
  set -- $(sed -n 's/.*tkpress=\([0-9]*\),\([0-9]*\),\([0-9]*\),\([0-9]*\),\([0-9]*\).*/\1 \2 \3 \4 \5/p' /proc/cmdline) 32 64 40 16 8192
  rh=$1 rc=$2 rs=$3 rf=$4 rr=$5
  mount -t debugfs none /sys/kernel/debug 2>/dev/null
  nbd=/sys/kernel/debug/sched/numa_balancing
  # tkthp=1 on the kernel command line: both regions on transparent huge pages, as nbtrec's
  # (WORKLOAD_THP; the fill stays on base pages), THP switched to madvise if it booted off
  thp=$(sed -n 's/.*tkthp=\([0-9]*\).*/\1/p' /proc/cmdline) ps=4096
  tpe=/sys/kernel/mm/transparent_hugepage/enabled
  if [ "${thp:-0}" = 1 ]; then
    ps=2097152
    grep -q '\[never\]' $tpe 2>/dev/null && echo madvise > $tpe
  fi
  meta="kernel=$(uname -r) scenario=press hot_mib=$rh cold_mib=$rc seconds=$rs free_above_high_mib=$rf cold_touch_per_s=$rr page_size=$ps hz=100"
  [ "${thp:-0}" = 1 ] && meta="$meta thp=1 thp_enabled=$(sed 's/.*\[\(.*\)\].*/\1/' $tpe) thp_defrag=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/defrag)"
  for k in scan_delay_ms scan_period_min_ms scan_period_max_ms scan_size_mb hot_threshold_ms; do meta="$meta $k=$(cat $nbd/$k 2>/dev/null || echo na)"; done
  meta="$meta promote_rate_limit_MBps=$(cat /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps 2>/dev/null || echo na)"
  # reclaim's LRU: Debian's 6.12 has the multi-gen LRU on by default (CONFIG_LRU_GEN_ENABLED);
  # tklrugen=N on the kernel command line writes N to its switch first (0: the classic
  # active/inactive lists of mm/vmscan.c, which the simulator models)
  lg=/sys/kernel/mm/lru_gen/enabled
  want=$(sed -n 's/.*tklrugen=\([0-9a-fx]*\).*/\1/p' /proc/cmdline)
  [ -n "$want" ] && [ -e $lg ] && echo "$want" > $lg
  meta="$meta lru_gen=$(cat $lg 2>/dev/null || echo na)"
  meta="$meta tlb_tick_us=$(sed -n 's/.*tktlbtick=\([0-9]*\).*/\1/p' /proc/cmdline | grep . || echo 0)"
  meta="$meta cpus=$(grep -c ^processor /proc/cpuinfo) workload_cpu=$(sed -n 's/.*tkcpu=\([0-9]*\).*/\1/p' /proc/cmdline | grep . || echo any)"
  # node 0's watermarks (pages, summed over its zones) and its free memory before the workload
  meta="$meta $(awk '/^Node 0, zone/{z=1} /^Node 1/{z=0} z&&$1=="min"{m+=$2} z&&$1=="low"{l+=$2} z&&$1=="high"{h+=$2} z&&$1=="promo"{p+=$2} END{printf "node0_wmark_min=%d node0_wmark_low=%d node0_wmark_high=%d node0_wmark_promo=%d", m, l, h, p}' /proc/zoneinfo)"
  meta="$meta node0_free_kb_start=$(awk '/MemFree/{print $4}' /sys/devices/system/node/node0/meminfo)"
  echo 1 > /sys/kernel/mm/numa/demotion_enabled 2>/dev/null
  echo 2 > /proc/sys/kernel/numa_balancing
  vm() { awk '/^(numa_hint_faults|numa_pte_updates|numa_huge_pte_updates|pgpromote_candidate|pgpromote_success|pgdemote_kswapd|pgdemote_direct|pgscan_kswapd|pgsteal_kswapd|pgrefill|pgactivate|pgdeactivate|pageoutrun|thp_migration_success|thp_migration_fail|thp_migration_split|thp_split_page) /{printf " %s=%s", $1, $2}' /proc/vmstat; }
  # node 0's LRU sizes (pages): what inactive_is_low weighs
  n0lru() { awk '/^nr_(inactive_anon|active_anon|inactive_file|active_file|unevictable) /{printf " n0_%s=%s", substr($1, 4), $2}' /sys/devices/system/node/node0/vmstat; }
  # tkgens=1 on the kernel command line: node 0's multi-gen LRU generations every sample too
  # (/sys/kernel/debug/lru_gen: per generation its seq, age in ms, anon and file pages), one
  # n0_gens_MEMCG=seq:age:anon:file,... token per memory cgroup, oldest generation first, and
  # n0_gens_t, the uptime when they were read (the sample's t comes some 100 ms earlier)
  gs=$(sed -n 's/.*tkgens=\([0-9]*\).*/\1/p' /proc/cmdline)
  n0gens() {
    [ "${gs:-0}" = 1 ] && [ -r /sys/kernel/debug/lru_gen ] || return 0
    awk 'BEGIN{getline u < "/proc/uptime"; split(u, up, " "); printf " n0_gens_t=%s", up[1]} $1=="memcg"{m=$2; n=-1; next} $1=="node"{n=$2; next} n=="0"&&NF>=4{g[m]=g[m] (g[m]==""?"":",") $1 ":" $2 ":" $3 ":" $4} END{for (k in g) printf " n0_gens_%s=%s", k, g[k]}' /sys/kernel/debug/lru_gen
  }
  # node 0's zones' free pages and watermark boosts: kswapd's pgdat_balanced and the promotion
  # path's migrate_balanced_pgdat accept the node when any one zone passes, the small DMA zone
  # with its lowmem_reserve included; and the pages on the zones' per-CPU lists (the pagesets'
  # count: lines, summed over the CPUs), which are free but not counted as free
  n0zones() { awk '/^Node/{z=($2=="0,"&&($4=="DMA"||$4=="DMA32"))?$4:""} z!=""&&$1=="pages"&&$2=="free"{printf " n0_free_%s=%s", z, $3} z!=""&&$1=="boost"{printf " n0_boost_%s=%s", z, $2} z!=""&&$1=="count:"{pcp[z]+=$2; seen[z]=1} END{for (k in seen) printf " n0_pcp_%s=%d", k, pcp[k]}' /proc/zoneinfo; }
  echo "TKREC_META $meta"
  # FREE_MIB counts above node 0's high watermark: promotions need free pages above it
  fm=$(( ($(kv node0_wmark_high "$meta") * 4 + 1023) / 1024 + rf ))
  # the scanner's per-VMA skips (6.7+ tracepoint sched_skip_vma_numa), dumped at the end
  tr=/sys/kernel/tracing; mount -t tracefs none $tr 2>/dev/null
  skip=$tr/events/sched/sched_skip_vma_numa/enable
  [ -e $skip ] && { echo > $tr/trace; echo 4096 > $tr/buffer_size_kb; echo 1 > $skip; }
  # tkvmscan=1 on the kernel command line: reclaim's own tracepoints too (every kswapd wake and
  # sleep, every shrink of an LRU list with what it scanned, reclaimed, activated and kept),
  # dumped as TKREC_VMSCAN lines
  vs=$(sed -n 's/.*tkvmscan=\([0-9]*\).*/\1/p' /proc/cmdline)
  vse="mm_vmscan_kswapd_wake mm_vmscan_kswapd_sleep mm_vmscan_wakeup_kswapd mm_vmscan_lru_shrink_inactive mm_vmscan_lru_shrink_active"
  zones() { awk -v tag="$1" '/^Node/{z=($2=="0,")?$4:""} z!=""&&($1~/^(pages|min|low|high|promo|managed|present|nr_free_pages|nr_zone_inactive_anon|nr_zone_active_anon|nr_zone_inactive_file|nr_zone_active_file|nr_zone_unevictable|nr_mlock)$/||$1=="protection:"){printf "TKREC_ZONE %s zone=%s %s\n", tag, z, $0}' /proc/zoneinfo; }
  if [ "${vs:-0}" = 1 ] && [ -d $tr/events/vmscan ]; then
    echo 16384 > $tr/buffer_size_kb
    for e in $vse; do echo 1 > $tr/events/vmscan/$e/enable; done
    # and entry probes on reclaim's aging functions the kernel did not inline (counted at the end)
    kps=""
    for f in kswapd_age_node lru_gen_age_node shrink_lruvec shrink_active_list lru_gen_shrink_node balance_pgdat try_to_inc_max_seq inc_max_seq walk_mm iterate_mm_list walk_pud_range should_skip_vma lru_gen_look_around evict_folios; do
      grep -q " [tT] $f\$" /proc/kallsyms && echo "p:tk/$f $f" >> $tr/kprobe_events 2>/dev/null && kps="$kps $f"
    done
    grep -q " [tT] can_demote\$" /proc/kallsyms && echo "r:tk/can_demote can_demote ret=\$retval" >> $tr/kprobe_events 2>/dev/null && kps="$kps can_demote"
    # tklaaddr=1: the address of every page multi-gen eviction tests (lru_gen_look_around's
    # pvmw->address, 32 bytes into struct page_vma_mapped_walk) and whether it was young
    la=$(sed -n 's/.*tklaaddr=\([0-9]*\).*/\1/p' /proc/cmdline)
    if [ "${la:-0}" = 1 ] && grep -q " [tT] lru_gen_look_around\$" /proc/kallsyms; then
      echo 32768 > $tr/buffer_size_kb
      echo "p:tk/laaddr lru_gen_look_around addr=+32(%di):x64" >> $tr/kprobe_events 2>/dev/null
      echo "r:tk/laret lru_gen_look_around ret=\$retval:u8" >> $tr/kprobe_events 2>/dev/null
    fi
    [ -d $tr/events/tk ] && echo 1 > $tr/events/tk/enable
    echo "TKREC_KPROBES available=${kps# }"
  fi
  # node 0's zones (watermarks, lowmem_reserve, free pages) at the start and the end, always:
  # the promotion path and kswapd judge each zone by its own watermarks
  zones start
  # the multi-gen LRU's generations (max_seq, their ages and sizes), at the start and the end
  # and lru_gen_full: with one history generation (NR_HIST_GENS 1, no CONFIG_LRU_GEN_STATS) its
  # mm_stats line (T Y F A: leaf PTEs the aging walks read and found young, page tables they
  # found in the Bloom filter and added to it) is a running total over every walk since boot
  lrugen() {
    [ -r /sys/kernel/debug/lru_gen ] && sed "s/^/TKREC_LRUGEN $1 /" /sys/kernel/debug/lru_gen | head -n 200
    [ -r /sys/kernel/debug/lru_gen_full ] && sed "s/^/TKREC_LRUGEN_FULL $1 /" /sys/kernel/debug/lru_gen_full | head -n 400
  }
  lrugen start
  # tktlbtick=US on the kernel command line: the workload's sleeper wakes every US us, each wake
  # a switch of address spaces that flushes the TLB (see TICK above), so the swept pages'
  # accessed bits are set again after a clear as a real CPU's TLB misses would set them; without
  # it (the default) TCG's TLB holds the hot region and a cleared bit stays clear until a flush
  tick=$(sed -n 's/.*tktlbtick=\([0-9]*\).*/\1/p' /proc/cmdline)
  if [ -n "$tick" ]; then export WORKLOAD_TLB_TICK_US=$tick; fi
  # tkcpu=N: the workload (and its ticker) pinned to CPU N, on a guest booted with more vCPUs
  # (TK_SMP=2 tests/kernel/run.sh): kswapd then runs beside it
  pin=$(sed -n 's/.*tkcpu=\([0-9]*\).*/\1/p' /proc/cmdline)
  if [ -n "$pin" ]; then export WORKLOAD_CPU=$pin; fi
  [ "${thp:-0}" = 1 ] && export WORKLOAD_THP=1
  WORKLOAD_NODE0_FREE_MIB=$fm WORKLOAD_COLD_TOUCH_PER_S=$rr /bin/workload "$rh" "$rc" 0 1 0 > /tmp/wp.out &
  unset WORKLOAD_TLB_TICK_US WORKLOAD_CPU WORKLOAD_THP
  W=$!
  # node 0's kswapd: its CPU ticks in every sample (kswapd_ticks), its own cost per page scanned
  # and reclaimed without tracing (the traced boots' run durations include the probes)
  K=$(for d in /proc/[0-9]*; do [ "$(cat $d/comm 2>/dev/null)" = kswapd0 ] && echo ${d#/proc/}; done | head -n 1)
  echo "TKREC_VM t=$(cut -d' ' -f1 /proc/uptime)$(vm)"
  echo "TKREC_PROC start_ticks=$(awk '{print $22}' /proc/$W/stat)"
  i=0 j=0
  while [ $i -lt $((rs * 10)) ]; do
    if grep -q WORKLOAD_START /tmp/wp.out; then kill -USR1 $W; i=$((i + 1)); else j=$((j + 1)); fi
    [ $j -gt 600 ] && { kill $W; echo 0 > /proc/sys/kernel/numa_balancing; cat /tmp/wp.out; fail nbtpress "workload did not start"; return; }
    sleep 0.1
    echo "TKREC_VM t=$(cut -d' ' -f1 /proc/uptime)$(vm) node0_free_kb=$(awk '/MemFree/{print $4}' /sys/devices/system/node/node0/meminfo) wl_ticks=$(cputicks $W) kswapd_ticks=$(cputicks ${K:-0}) scan_seq=$(scanseq $W)$(n0lru)$(n0zones)$(n0gens)"
  done
  maps=$(awk '{printf "%s:%s ", $1, $6}' /proc/$W/maps 2>/dev/null | head -c 2000)
  # how often the workload was switched in (each switch marks its mm for the multi-gen walk:
  # lru_gen_use_mm in context_switch)
  echo "TKREC_CTXT t=$(cut -d' ' -f1 /proc/uptime) $(awk '/ctxt_switches/{printf "%s%s ", $1, $2}' /proc/$W/status 2>/dev/null)"
  stop_workload $W /tmp/wp.out
  echo 0 > /proc/sys/kernel/numa_balancing
  grep -E '^WORKLOAD_(FILL|START|REPORT|RESULT)' /tmp/wp.out | sed 's/^/TKREC_W /'
  echo "TKREC_VMAS $maps"
  if [ -e $skip ]; then
    echo 0 > $skip
    grep 'sched_skip_vma_numa:' $tr/trace | sed 's/^ */TKREC_SKIP /' | head -n 5000
  fi
  zones end
  lrugen end
  if [ "${vs:-0}" = 1 ] && [ -d $tr/events/vmscan ]; then
    for e in $vse; do echo 0 > $tr/events/vmscan/$e/enable; done
    grep 'mm_vmscan_' $tr/trace | sed 's/^ */TKREC_VMSCAN /' | head -n 100000
    if [ -d $tr/events/tk ]; then
      echo 0 > $tr/events/tk/enable
      for f in $kps; do echo "TKREC_KPROBE $f calls=$(grep -c " $f: " $tr/trace)"; done
      # when kswapd ran and aged, and when an aging walk entered a process's page tables
      # (walk_pud_range, mm_walk_ops' p4d_entry) or tested a VMA (should_skip_vma, its
      # test_walk): uptime seconds, the first 5000 of each
      for f in balance_pgdat try_to_inc_max_seq walk_pud_range should_skip_vma; do
        case " $kps " in *" $f "*) echo "TKREC_KPROBE_T $f $(grep " $f: " $tr/trace | head -n 5000 | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) {sub(":", "", $i); printf "%s ", $i; break}}')";; esac
      done
      grep ' can_demote: ' $tr/trace | awk '{print $NF}' | sort | uniq -c | sed 's/^ */TKREC_KPROBE can_demote_returned /'
      # tklaaddr=1: one TKREC_LA line per tested page: trace clock (s), address, young (0/1)
      if [ "${la:-0}" = 1 ]; then
        grep -E ' (laaddr|laret): ' $tr/trace | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) {t = $i; sub(":", "", t)} for (i = 1; i <= NF; i++) {if ($i ~ /^addr=/) a = substr($i, 6); if ($i ~ /^ret=/ && a != "") {printf "TKREC_LA %s %s %s\n", t, a, substr($i, 5); a = ""}}}' | head -n 200000
      fi
      echo > $tr/kprobe_events 2>/dev/null
    fi
  fi
  last=$(grep WORKLOAD_REPORT /tmp/wp.out | tail -1)
  bad=$(kv corrupt "$R"); n=$((rh * 256))
  prom=$(awk '/^pgpromote_success /{print $2}' /proc/vmstat)
  d="hot_on_node0=$(kv hot_node0 "$last")/$n cold_on_node0=$(kv cold_node0 "$last")/$((rc * 256)) pgpromote_success=$prom pgdemote_kswapd=$(awk '/^pgdemote_kswapd /{print $2}' /proc/vmstat) fill=\"$(grep WORKLOAD_FILL /tmp/wp.out)\" corrupt=$bad"
  if [ "$bad" = 0 ] && [ "${prom:-0}" -ge "$n" ]; then pass nbtpress "$d"; else fail nbtpress "$d"; fi
}

# 11. `memtis+toggle` (migration toggling over a sampling base, issue 17): per-process stop and
#     restart of tierkitd's own migrations, as the toggling paper's microbenchmark (Fig. 7)
#     drives them. The workload sweeps the first half of its 24 MiB hot region, and MEMTIS
#     promotes it (the fast budget, --fast-limit 16M, holds one half, not both). Then it sweeps
#     only the second half: MEMTIS demotes the first half's pages, which it had promoted, to
#     promote the second's, so the layer's demote_promoted count rises and then levels off, and
#     migration stops for the target (logged). Then it sweeps the whole region: the restart
#     scans' accessed-page counts (a page per 256 KiB of the target, read from the DAMON source)
#     double (after the layer's restart detector has settled on the stopped pattern's count) and
#     migration restarts. The layer's intervals are shortened from the paper's 2 s
#     and 5 s so that the test waits seconds, not minutes. Per process: a second target, a 4 MiB
#     region swept steadily (its pages promoted once), keeps its migration on unless its own
#     count moved (each stop is logged with the target's demote_promoted at that moment, and a
#     stop of the second target with 0 there fails the test: the layer would have stopped it on
#     the first target's count) and ends in the fast tier (>= 90%, counting as placed the pages
#     demoted before a founded stop, which a stopped target keeps on node 1); the fast budget (--fast-limit 20M)
#     holds it and one half of the first target's region. MEMTIS may demote a few of its pages
#     among the first half's (which fast-tier pages sit in its coldest bins depends on how
#     DAMON's regions split the targets in a boot): then Algorithm 1 sees that count rise and
#     level off and stops it too, as the paper's algorithm does (one 2026-12-01 boot: 8 pages).
t_toggle() {
  conf /tmp/tog.toml 'source = "damon"' 'interval-ms = 300' 'status-every-s = 5'
  WORKLOAD_PHASED=1 WORKLOAD_TLB_TICK_US=$TICK /bin/workload 24 0 0 1 > /tmp/wt.out &
  W=$!
  WORKLOAD_TLB_TICK_US=$TICK /bin/workload 4 0 0 1 > /tmp/wt2.out &
  W2=$!
  wait_for /tmp/wt.out WORKLOAD_START 20 && wait_for /tmp/wt2.out WORKLOAD_START 20 ||
    { kill $W $W2; wait; fail toggle "workload did not start"; return; }
  /bin/tierkitd --pid $W $W2 --policy 'memtis+toggle:interval_ms=600,scan_period_ms=900,window=3,stride_kb=256' \
    --config /tmp/tog.toml --fast-limit 20M 2> /tmp/dt.log &
  D=$!
  # the first half (3072 pages) mostly in the fast tier, then the second half is swept
  until_report /tmp/wt.out $W 120 'hot_node0>=2700'; w_first=$?
  kill -USR2 $W
  # bounded by the guest's clock (a poll every second), so that a slow guest cannot stretch them
  wait_log /tmp/dt.log "migration stopped for target pid $W by" 150; w_stop=$?
  t_stop=$(cut -d' ' -f1 /proc/uptime)
  # the restart detector first settles on the stopped pattern's count (window 3, a scan every
  # 0.9 s), then the pattern changes
  sleep 8
  kill -USR2 $W
  wait_log /tmp/dt.log "migration restarted for target pid $W by" 150; w_restart=$?
  t_restart=$(cut -d' ' -f1 /proc/uptime)
  kill -USR1 $W; sleep 1
  r1=$(grep WORKLOAD_REPORT /tmp/wt.out | tail -1)
  stop_workload $W /tmp/wt.out; r=$R
  stop_workload $W2 /tmp/wt2.out; r2=$R
  kill -TERM $D; wait $D; drc=$?
  bad=$(kv corrupt "$r")
  stops=$(grep -c "migration stopped for target pid $W by" /tmp/dt.log)
  restarts=$(grep -c "migration restarted for target pid $W by" /tmp/dt.log)
  other_stops=$(grep -c "migration stopped for target pid $W2 by" /tmp/dt.log)
  # stops of the second target with none of its own promoted pages demoted (the logged count)
  other_unfounded=$(grep -c "migration stopped for target pid $W2 by the policy (demote_promoted 0)" /tmp/dt.log)
  # a founded stop leaves the pages MEMTIS had demoted on node 1 (a stopped target's pages are
  # not moved, and nothing restarts a steady pattern): those count as placed
  other_dp=$(awk -v p="migration stopped for target pid $W2 by the policy (demote_promoted " 'index($0, p) {s = substr($0, index($0, p) + length(p)); sub(/\).*/, "", s); print s; exit}' /tmp/dt.log)
  other_dp=${other_dp:-0}
  phases=$(grep -c WORKLOAD_PHASE /tmp/wt.out)
  d="first_half_promoted=$([ $w_first = 0 ] && echo 1 || echo 0) stopped=$([ $w_stop = 0 ] && echo 1 || echo 0) restarted=$([ $w_restart = 0 ] && echo 1 || echo 0) stop_at=$t_stop restart_at=$t_restart stops=$stops restarts=$restarts phases=$phases hot_node0_at_restart=$(kv hot_node0 "$r1") other_stops=$other_stops other_stops_unfounded=$other_unfounded other_demote_promoted_at_stop=$other_dp other_hot_node0=$(kv hot_node0 "$r2")/1024 corrupt=$bad/$(kv corrupt "$r2") daemon_rc=$drc"
  if [ $w_first = 0 ] && [ $w_stop = 0 ] && [ $w_restart = 0 ] && [ "$stops" -ge 1 ] && [ "$restarts" -ge 1 ] && [ "$phases" = 2 ] &&
     [ "$other_unfounded" = 0 ] && pct_ge $(($(kv hot_node0 "$r2") + other_dp)) 1024 90 && [ "$(kv corrupt "$r2")" = 0 ] &&
     [ "$bad" = 0 ] && [ $drc = 0 ]; then
    pass toggle "$d"
  else
    fail toggle "$d"; show /tmp/dt.log 80; show /tmp/wt.out 8
  fi
}

# 12. `vulcan` (issue 17: the last policy tierkitd refused for a reason other than hardware):
#     two targets as tenants over DAMON, a best-effort one whose 24 MiB region starts on node 0
#     (over the 16 MiB fast budget) and a latency-critical one (`--latency-critical`) whose 6 MiB
#     region starts on node 1. Algorithm 1 gives each an equal share (8 MiB) and lends the LC
#     tenant what it needs first; the BE tenant, over its partition, demotes its coldest present
#     pages (found through tierkitd's scan: no objects on a real host), and the LC tenant's pages
#     are promoted into the room: >= 90% of them on node 0, the BE tenant's node-0 pages down
#     within the budget, data intact, exit 0.
t_vulcan() {
  conf /tmp/vul.toml 'source = "damon"' 'interval-ms = 300' 'status-every-s = 5'
  WORKLOAD_TLB_TICK_US=$TICK /bin/workload 24 0 0 0 > /tmp/wv1.out &
  B=$!
  WORKLOAD_TLB_TICK_US=$TICK /bin/workload 6 0 0 1 > /tmp/wv2.out &
  L=$!
  wait_for /tmp/wv1.out WORKLOAD_START 20 && wait_for /tmp/wv2.out WORKLOAD_START 20 ||
    { kill $B $L; wait; fail vulcan "workload did not start"; return; }
  /bin/tierkitd --pid $B $L --latency-critical $L --policy 'vulcan:quantum_ms=500' \
    --config /tmp/vul.toml --fast-limit 16M 2> /tmp/dv.log &
  D=$!
  until_report /tmp/wv2.out $L 120 'hot_node0>=1383'; waited=$?
  kill -USR1 $B; sleep 1
  stop_workload $L /tmp/wv2.out; rl=$R
  stop_workload $B /tmp/wv1.out; rb=$R
  kill -TERM $D; wait $D; drc=$?
  d="lc_hot_node0=$(kv hot_node0 "$rl")/1536 be_hot_node0=$(kv hot_node0 "$rb")/6144 corrupt=$(kv corrupt "$rl")/$(kv corrupt "$rb") daemon_rc=$drc timed_out=$waited"
  if [ $waited = 0 ] && pct_ge "$(kv hot_node0 "$rl")" 1536 90 && [ "$(kv hot_node0 "$rb")" -le 4096 ] &&
     [ "$(kv corrupt "$rl")" = 0 ] && [ "$(kv corrupt "$rb")" = 0 ] && [ $drc = 0 ] &&
     ! grep -q 'panicked' /tmp/dv.log; then
    pass vulcan "$d"
  else
    fail vulcan "$d"; show /tmp/dv.log 60
  fi
}

ALL="cli damon targeted limit kill fork dryrun softdirty shim nb2 nbt nbtalto nbtcolloid nbtband toggle vulcan bench"
[ $# -gt 0 ] || set -- $ALL
for t in "$@"; do
  echo "TKTEST_BEGIN $t uptime=$(cut -d' ' -f1 /proc/uptime)"
  "t_$t"
done
exit $((FAILS > 0))
