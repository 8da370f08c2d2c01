#!/usr/bin/env python3
"""Write the seed corpus (corpus/<target>/): small valid inputs of each format and the issue 19
reproducers. Run from anywhere; rerunning rewrites the same files. The committed files are what
the fuzzers start from; new inputs a run finds go to fuzz/work/ (not committed)."""

import gzip
import subprocess
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
C = HERE / "corpus"


def put(target: str, name: str, data: "str | bytes") -> None:
    d = C / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data.encode() if isinstance(data, str) else data)


# --- experiment TOML (the text, then `--set` overrides after NUL bytes) ---
custom = (ROOT / "examples" / "custom.toml").read_text()
put("experiment_toml", "custom.toml", custom)
put("experiment_toml", "custom-with-sets.toml", custom + "\0duration_s=2\0process.0.class=\"LC\"")
put("experiment_toml", "gups-hotset.toml", 'workload = "gups-hotset"\nduration_s = 2\n')
put("experiment_toml", "gups-hotset-ratio.toml",
    'workload = "gups-hotset"\nfast_ratio = "1:3"\nplatform = "spr-cxl"\nseed = 7\n')
put("experiment_toml", "tiers.toml", custom + """
[[tier]]
name = "fast"
[[tier]]
name = "slow"
""")
put("experiment_toml", "trace.toml", 'workload = "trace"\ntrace = "missing.tkt"\nmlp = 4\n')
put("experiment_toml", "antagonist.toml", custom + """
[[antagonist]]
tier = "fast"
cores = 2
""")
# issue 19 reproducers (fixed; errors naming file and key)
put("experiment_toml", "repro-hot-set-gb-0.toml", 'workload = "gups-hotset"\nhot_set_gb = 0\n')
put("experiment_toml", "repro-start-frac-1.toml",
    custom.replace('pattern = "sequential"', 'pattern = "sequential"\nstart_frac = 1.0'))
put("experiment_toml", "repro-same-process-name.toml", custom.replace('name = "chase"', 'name = "stream"'))
put("experiment_toml", "repro-seed-too-large.toml", 'workload = "gups-hotset"\nseed = 9223372036854775807\n')

# --- policy specs ---
specs = {
    "notier": "notier", "hemem": "hemem:sample_period=5003", "memtis": "memtis",
    "tpp": "tpp", "nbt": "nbt", "nomad": "nomad", "place": "place:pc",
    "static": "static:hot_object=array", "stack-colloid-alto": "tpp+colloid+alto",
    "stack-hemem-colloid": "hemem:sample_period=5003+colloid:delta=0.1",
    "pact": "memtis+pact", "toggle": "hemem+toggle", "vulcan": "nbt+vulcan", "soar": "soar",
    "bad-layer-first": "colloid", "bad-twice": "hemem:sample_period=1,sample_period=2",
}
for name, s in specs.items():
    put("policy_spec", name, s)

# --- lackey ---
lackey = "==1== Lackey\nI  04016e0,3\n L 1000,8\n L 1008,8\nI  04016e3,4\n S 103c,8\n M 2000,4\n"
put("import_lackey", "small.txt", lackey)
put("import_lackey", "no-instructions.txt", " L 1000,8\n S 1040,4\n")
put("import_lackey", "small.txt.gz", gzip.compress(lackey.encode(), mtime=0))
put("import_lackey", "top-of-address-space.txt", " L ffffffffffffffff,8\n")
put("import_lackey", "repro-multibyte-first-char.txt", "\u00e9\n")
put("import_lackey", "repro-4gib-access.txt", " L 1000,4294967296\n")
# a zstd frame of a newline and 2 MiB of "7": one line past the 1 MiB limit
put("import_lackey", "repro-long-line.txt.zst",
    subprocess.run(["zstd", "-q", "-c"], input=b"\n" + b"7" * (2 << 20),
                   capture_output=True, check=True).stdout)

# --- perf script of perf mem record ---
perf = """\
  stream  1234 [003]  100.000001:      cpu/mem-loads,ldlat=30/P:     7f0000001040         5080144 |OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A       4
  stream  1234 [003]  100.000002:      cpu/mem-loads,ldlat=30/P:     7f0000002040         6880144 |OP LOAD|LVL Local RAM or RAM hit|SNP Hit|TLB L1 or L2 hit|LCK No|BLK  N/A     312
  stream  1234 [003]  100.000003:      cpu/mem-stores/P:     7f0000003080         6880144 |OP STORE|LVL Remote RAM (1 hop) hit|SNP Hit|TLB L1 or L2 hit|LCK No|BLK  N/A   410
"""
put("import_perf_script", "small.txt", perf)
put("import_perf_script", "comment.txt", "# perf script header\n\n" + perf)
put("import_perf_script", "small.txt.gz", gzip.compress(perf.encode(), mtime=0))
put("import_perf_script", "repro-time-past-2-64-ns.txt",
    "  s 1 [0] 99999999999.5: ev: 7f0000002040 1 |OP LOAD|LVL RAM hit|\n")

# --- DAMON: damo report raw, perf script of damon_aggregated, damo JSON, zlib JSON ---
raw = """\
base_time_absolute: 8 m 59.809 s

monitoring_start:                0 ns
monitoring_end:            104.599 ms
monitoring_duration:       104.599 ms
target_id: 0
nr_regions: 2
563ebaa00000-563ebaa03000(  12.000 KiB):        5
7f938d7e1000-7f938d7e2000(   4.000 KiB):        0
"""
agg = """\
 kdamond.0  4452 [000] 82877.315633: damon:damon_aggregated: target_id=18446623435582458880 nr_regions=2 94819803136-94819815424: 5 3
 kdamond.0  4452 [000] 82877.315633: damon:damon_aggregated: target_id=18446623435582458880 nr_regions=2 140282712608768-140282712612864: 0 9
 kdamond.0  4452 [000] 82877.415633: damon:damos_before_apply: ctx_idx=0 scheme_idx=0 target_idx=0 nr_regions=1 1-2: 0 1
 kdamond.0  4452 [000] 82877.415700: damon:damon_aggregated: target_id=18446623435582458880 nr_regions=1 94819803136-94819807232: 2
"""
js = """[
 {"kdamond_idx": 0, "context_idx": 0,
  "intervals": {"sample_us": "5 ms", "aggr_us": "100 ms", "ops_update_us": "1 s"},
  "scheme_idx": null, "target_id": 0, "scheme_filters": [],
  "snapshots": [
   {"start_time": "0", "end_time": "100000000",
    "regions": [
     {"start": "94,819,803,136", "end": "94,819,815,424",
      "nr_accesses": {"samples": 5, "percent": 25}, "age": {"usec": null, "aggr_intervals": "3"}},
     {"start": "140282712608768", "end": "140282712612864",
      "nr_accesses": {"samples": 0, "percent": 0}, "age": {"usec": null, "aggr_intervals": "9"}}
    ], "total_bytes": "16384"},
   {"start_time": "100000000", "end_time": "200.5 ms",
    "regions": [{"start": 94819803136, "end": 94819807232, "nr_accesses": {"samples": 2}}]}
  ]},
 {"target_id": 1, "snapshots": []}
]"""
put("import_damon", "report-raw.txt", raw)
put("import_damon", "aggregated.perf.txt", agg)
put("import_damon", "record.json", js)
put("import_damon", "record.json.zlib", zlib.compress(js.encode()))
put("import_damon", "report-raw.txt.gz", gzip.compress(raw.encode(), mtime=0))
put("import_damon", "repro-count-overflow.txt",
    "monitoring_end: 1 ms\n0-1000(4 KiB): 18446744073709551615\n0-1000(4 KiB): 5\n")

# --- binary traces (docs/traces.md's format): version 1, and version 2 (zstd CLI) ---
def varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v: int) -> int:
    return ((v << 1) ^ (v >> 63)) & (2**64 - 1)


def trace(version: int, recs, unit_shift=6, stamp=0, source=0) -> bytes:
    body = bytearray()
    ps = pu = 0
    accesses = 0
    for s, u, c, op in recs:
        body.append(op | (4 if c > 1 else 0))
        body += varint(s - ps) + varint(zigzag(u - pu))
        if c > 1:
            body += varint(c)
        ps, pu = s, u
        accesses += c
    h = bytearray(64)
    h[:8] = b"TKTRACE\0"
    h[8:10] = version.to_bytes(2, "little")
    h[10], h[11], h[12], h[13] = unit_shift, stamp, source, 1
    h[16:24] = len(recs).to_bytes(8, "little")
    h[24:32] = accesses.to_bytes(8, "little")
    h[32:40] = (recs[-1][0] if recs else 0).to_bytes(8, "little")
    if version == 2:
        body = subprocess.run(["zstd", "-q", "-c", "--check"], input=bytes(body),
                              capture_output=True, check=True).stdout
    return bytes(h) + bytes(body)


recs = [(1, 0x40, 2, 0), (2, 0x40, 1, 1), (2, 0x41, 1, 1), (5, 0x80, 1, 2), (9, 0x3F, 7, 0)]
put("trace_reader", "v1.tkt", trace(1, recs))
put("trace_reader", "v2.tkt", trace(2, recs))
put("trace_reader", "v2-ns-damon.tkt", trace(2, recs, unit_shift=12, stamp=1, source=2))
put("trace_reader", "v2-no-stamps.tkt", trace(2, [(0, u, 1, 0) for u in range(20)], stamp=2))
put("trace_reader", "v1-empty.tkt", trace(1, []))
# The replay target reads the same traces, and a lackey-sourced one whose lines miss the LLC model.
for name in ("v1.tkt", "v2.tkt", "v2-ns-damon.tkt", "v2-no-stamps.tkt", "v1-empty.tkt"):
    put("trace_replay", name, (C / "trace_reader" / name).read_bytes())
put("trace_replay", "v2-lackey-many-lines.tkt",
    trace(2, [(i, (i * 4099) % 50000, 1, i % 3) for i in range(3000)], source=0))
