#!/bin/sh
# Rebuild the shipped real-program traces: the sqlite3 shell (`apt-get install sqlite3 valgrind
# zstd`) answering point lookups through an index (sqlite-lookup: B-tree descents, each page
# found from the one before, low MLP) and scanning the same table without an index
# (sqlite-scan: the table's leaf pages in order, high MLP). The database is built untraced; only
# the query run is traced, under valgrind lackey, and the shell's start-up is cut from the trace
# (below). The lackey text is kept zstd-compressed (sqlite-*.lackey.zst) and imported into
# sqlite-*.tkt next to this script. sqlite's own version
# and valgrind's start-up differ between machines, so a rebuilt trace differs from the shipped one
# (shipped: sqlite 3.40.1, valgrind 3.19.0, Debian 12).
#
# The table: 12000 rows (k, a, pad, b) of about 100 bytes (1.3 MiB, 330 pages of 4 KiB) with an
# index on k; k is a permutation of the row ids (k = 7919 i mod 12000), so consecutive keys lie
# on unrelated table pages. q holds 2000 keys in a scattered order (k = 104729 i + 12345 mod
# 12000). The lookup is one statement, `q CROSS JOIN t ON t.k = q.k`: for each key of q, a
# descent of the index B-tree, then of the table B-tree by rowid. The scan is one pass over t
# without its index. Both run with a page cache larger than the database (cache_size), so every
# table page stays in the process's memory once read; reading the file is the kernel's copy and
# is not traced.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tk=${TIERKIT:-tierkit}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db="$tmp/t.db"
sqlite3 "$db" <<'SQL'
PRAGMA page_size = 4096;
CREATE TABLE t(k INTEGER, a INTEGER, pad BLOB, b INTEGER);
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 11999)
INSERT INTO t SELECT (i * 7919) % 12000, i, zeroblob(80), i % 7 FROM s;
CREATE INDEX t_k ON t(k);
CREATE TABLE q(k INTEGER);
WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < 1999)
INSERT INTO q SELECT (i * 104729 + 12345) % 12000 FROM s;
SQL
printf 'PRAGMA cache_size = -16384;\nSELECT sum(t.b) FROM q CROSS JOIN t ON t.k = q.k;\n' >"$tmp/sqlite-lookup.sql"
printf 'PRAGMA cache_size = -16384;\nSELECT sum(b) FROM t NOT INDEXED;\n' >"$tmp/sqlite-scan.sql"
printf 'PRAGMA cache_size = -16384;\n' >"$tmp/start.sql"
# The shell's start-up (the dynamic loader, sqlite's initialisation, reading the schema: about
# 3.2M lackey lines, 10600 LLC misses at MLP 1.1-1.3) is the same in both runs and is not the
# workload: a replay repeats the trace, and the start-up would come back every pass, a
# low-MLP phase with 60% as many misses as the scan itself. Its length is measured by tracing
# the shell with no query, and that many lines are cut from the start of each trace (that run's
# exit is counted too, so as many lines of the query's beginning go with it).
run() { valgrind --tool=lackey --trace-mem=yes --log-file="$2" sqlite3 -batch -readonly "$db" <"$1"; }
run "$tmp/start.sql" "$tmp/start.lackey"
skip=$(wc -l <"$tmp/start.lackey")
for prog in sqlite-lookup sqlite-scan; do
    run "$tmp/$prog.sql" "$tmp/$prog.full.lackey"
    tail -n +"$((skip + 1))" "$tmp/$prog.full.lackey" >"$tmp/$prog.lackey"
    zstd -q -f -19 --long=27 "$tmp/$prog.lackey" -o "$here/$prog.lackey.zst"
    chmod 644 "$here/$prog.lackey.zst"
    "$tk" trace import lackey "$here/$prog.lackey.zst" -o "$here/$prog.tkt"
    "$tk" trace info "$here/$prog.tkt" --set llc_mb=0.25
done
