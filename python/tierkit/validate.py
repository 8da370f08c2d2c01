"""``tierkit validate kernel``: the simulator's Linux NUMA-balancing tiering (``nbt``) side by side
with upstream Linux's own, recorded in the real-kernel tests' QEMU guest.

The recording (``tests/kernel/guest/tests.sh``, scenario ``nbtrec``) runs the real-kernel tests'
workload with ``numa_balancing=2`` and demotion enabled: a hot region swept continuously and a
cold region touched once, both first placed on the slow node (mbind before the first touch), and
samples ``/proc/vmstat`` (``numa_hint_faults``, ``numa_pte_updates``, ``pgpromote_candidate``,
``pgpromote_success``, ``pgdemote_kswapd``) and the hot region's placement every 100 ms. The
simulator runs the same process (same sizes, the same first placement, the same setup time
before the sweep starts, 4 KiB pages) under ``nbt`` with the knobs the guest's kernel reported,
and both timelines are compared: hint faults, and the time to promote 50% and 90% of the hot
region, counted from the process's start.

A recording ships with the package (``data/kernel_nbt_612.json``), so the comparison runs
anywhere; ``--record`` makes a new one on a machine that boots the guest (``tests/kernel``).
``--scenario press`` compares the ``nbtpress`` recording instead (the fast node nearly full):
:mod:`tierkit.validate_press`. ``--scenario thp`` compares a recording of the same program on
transparent huge pages (``tkthp=1``: both regions 2 MiB aligned and ``MADV_HUGEPAGE``), which
the simulator runs with 2 MiB pages: the scanner's huge-PMD path (change_huge_pmd, one hint
fault and one promotion per huge page).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: the recording shipped with the package
DEFAULT_RECORDING = Path(__file__).parent / "data" / "kernel_nbt_612.json"
#: the shipped recording of the same program on transparent huge pages (``--scenario thp``)
THP_RECORDING = Path(__file__).parent / "data" / "kernel_nbt_thp_612.json"
#: relative tolerance of the comparison (issue: within 25% of the kernel's)
TOLERANCE = 0.25
PAGE = 4096
VM_KEYS = (
    "numa_hint_faults",
    "numa_pte_updates",
    "pgpromote_candidate",
    "pgpromote_success",
    "pgdemote_kswapd",
    "pgdemote_direct",
)
#: the huge pages' own /proc/vmstat counters, kept where the guest printed them (``--scenario thp``)
THP_VM_KEYS = ("numa_huge_pte_updates", "thp_migration_success", "thp_migration_fail", "thp_migration_split")
#: the guest kernel's knobs (debugfs names) -> the nbt policy's parameters of the same meaning
KNOBS = {
    "scan_delay_ms": "scan_delay_ms",
    "scan_period_min_ms": "scan_period_min_ms",
    "scan_period_max_ms": "scan_period_max_ms",
    "scan_size_mb": "scan_size_mb",
    "hot_threshold_ms": "hot_threshold_ms",
    "promote_rate_limit_MBps": "promote_rate_limit_mbps",
}


class ValidationError(Exception):
    """A recording that cannot be read or made; the message names the file and what is wrong."""


#: reclaim's /proc/vmstat counters the press recording keeps when the guest printed them
#: The sample keys beside ``VM_KEYS`` a recording keeps where the guest gives them.
SAMPLE_EXTRA_KEYS = ("node0_free_kb", "wl_ticks", "kswapd_ticks", "scan_seq")

RECLAIM_KEYS = (
    "pgscan_kswapd",
    "pgsteal_kswapd",
    "pgrefill",
    "pgactivate",
    "pgdeactivate",
    "pageoutrun",
    "n0_inactive_anon",
    "n0_active_anon",
    "n0_inactive_file",
    "n0_active_file",
    "n0_unevictable",
    # node 0's two zones' free pages and watermark boosts (/proc/zoneinfo)
    "n0_free_DMA",
    "n0_free_DMA32",
    "n0_boost_DMA",
    "n0_boost_DMA32",
    # and the pages on their per-CPU lists (free, but not counted free)
    "n0_pcp_DMA",
    "n0_pcp_DMA32",
)


_PRINTK = re.compile(r"\[\s*\d+\.\d+\] .*$")


def _kv(line: str) -> dict[str, str]:
    return dict(m.groups() for m in re.finditer(r"(\w+)=(\S+)", line))


#: lru_gen_full's mm_stats (MM_LEAF_TOTAL, MM_LEAF_YOUNG, MM_NONLEAF_FOUND, MM_NONLEAF_ADDED),
#: flagged T Y F A on the youngest generation's line
LRU_GEN_MM_STATS = ("leaf_total", "leaf_young", "nonleaf_found", "nonleaf_added")


def _lrugen_full_line(line: str, mm: dict[str, dict[int, list[int]]], node: dict[str, int]) -> None:
    """One ``TKREC_LRUGEN_FULL <when> ...`` line: a ``node N`` header, or the mm_stats line
    (four numbers suffixed T, Y, F and A), added to that node's sums for the dump."""
    parts = line.split()
    when, body = parts[1], parts[2:]
    if len(body) == 2 and body[0] == "node":
        node[when] = int(body[1])
    elif len(body) == 4 and [b[-1] for b in body] == list("TYFA"):
        sums = mm.setdefault(when, {}).setdefault(node.get(when, 0), [0, 0, 0, 0])
        for i, b in enumerate(body):
            sums[i] += int(b[:-1])


def parse_guest_log(text: str, source: str) -> dict[str, Any]:
    """The ``TKREC_*`` lines of a guest log (``nbtrec``) as a recording (a JSON-able dict)."""
    meta: dict[str, str] = {}
    vm: list[dict[str, float]] = []
    hot: list[list[float]] = []
    cold: list[list[float]] = []
    small: list[list[float]] = []
    fill: dict[str, str] = {}
    start: dict[str, str] = {}
    result: dict[str, str] = {}
    start_ticks = None
    runs: list[list[float]] = []
    trace: dict[str, int] = {}
    batches: list[list[float]] = []
    zones: dict[str, dict[str, dict[str, Any]]] = {}
    kprobe_calls: dict[str, int] = {}
    kprobe_times: dict[str, list[float]] = {}
    ctxt: dict[str, float] = {}
    # lru_gen_full's mm_stats line per dump ("start", "end") and node, summed over memcgs
    lrugen_mm: dict[str, dict[int, list[int]]] = {}
    lrugen_node: dict[str, int] = {}
    # tkgens=1: node 0's multi-gen generations every sample (LRU_GEN_TRACE_COLUMNS)
    gens: list[list[float]] = []
    # tklaaddr=1: every page multi-gen eviction tested (LOOK_AROUND_COLUMNS)
    look_around: list[list[float]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        # the serial console can break into a line with a kernel message ("[  231.93] random:
        # crng init done"): the message is not part of the recording
        line = _PRINTK.sub("", raw).strip()
        try:
            if line.startswith("TKREC_META "):
                meta = _kv(line)
            elif line.startswith("TKREC_PROC "):
                start_ticks = int(_kv(line)["start_ticks"])
            elif line.startswith("TKREC_VM "):
                kv = _kv(line)
                sample = {"t": float(kv["t"]), **{k: float(kv.get(k, "nan")) for k in VM_KEYS}}
                # nbtpress: node 0's free memory, the workload's and kswapd's CPU time (ticks),
                # the workload's NUMA scan passes (mm->numa_scan_seq) too, and reclaim's own
                # counters (kswapd's scans, reclaims and runs, LRU activations and deactivations)
                for extra in (*SAMPLE_EXTRA_KEYS, *RECLAIM_KEYS, *THP_VM_KEYS):
                    if extra in kv:
                        sample[extra] = float(kv[extra])
                vm.append(sample)
                # the generations' own read time where the guest gives it (n0_gens_t)
                gens_t = float(kv.get("n0_gens_t", sample["t"]))
                for key, val in kv.items():
                    if key.startswith("n0_gens_") and key != "n0_gens_t":
                        gens.extend(_gens_token(gens_t, key, val))
            elif line.startswith("TKREC_W WORKLOAD_FILL"):
                fill = _kv(line)
            elif line.startswith("TKREC_W WORKLOAD_START"):
                start = _kv(line)
            elif line.startswith("TKREC_W WORKLOAD_REPORT"):
                kv = _kv(line)
                hot.append([float(kv["mono"]), int(kv["hot_node0"])])
                cold.append([float(kv["mono"]), int(kv["cold_node0"])])
                if "data_node" in kv:
                    small.append(
                        [float(kv["mono"]), int(kv["data_node"]), int(kv["heap_node"]), int(kv["stack_node"])]
                    )
            elif line.startswith("TKREC_W WORKLOAD_RESULT"):
                result = _kv(line)
            elif line.startswith("TKREC_VMSCAN "):
                _vmscan_event(line, runs, trace, batches)
            elif line.startswith("TKREC_ZONE "):
                _zone_line(line, zones)
            elif line.startswith("TKREC_KPROBE_T "):
                # when a probed function ran: the trace clock (s, the guest's uptime)
                _, fn, *times = line.split()
                kprobe_times[fn] = [float(t) for t in times]
            elif line.startswith("TKREC_KPROBE ") and "calls=" in line:
                fn = line.split()[1]
                kprobe_calls[fn] = int(_kv(line)["calls"])
            elif line.startswith("TKREC_LA "):
                # trace clock (s), the tested page's address (hex), whether it was young
                _, t, addr, young = line.split()
                look_around.append([float(t), int(addr, 16), int(young)])
            elif line.startswith("TKREC_LRUGEN_FULL "):
                _lrugen_full_line(line, lrugen_mm, lrugen_node)
            elif line.startswith("TKREC_CTXT "):
                # the workload's context switches (/proc/PID/status) when the sweeps stop
                kv = _kv(line.replace(":", "="))
                ctxt = {
                    k: float(kv[k]) for k in ("t", "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")
                }
        except (KeyError, ValueError) as err:
            raise ValidationError(
                f"{source}: line {n}: malformed recording line ({err}): {line[:120]}"
            ) from None
    missing = [
        what
        for what, ok in (
            ("TKREC_META", bool(meta)),
            ("TKREC_PROC", start_ticks is not None),
            ("WORKLOAD_START", bool(start)),
            ("TKREC_VM samples", len(vm) >= 2),
            ("WORKLOAD_REPORT samples", len(hot) >= 2),
            ("WORKLOAD_RESULT", bool(result)),
        )
        if not ok
    ]
    if missing:
        raise ValidationError(f"{source}: not an nbtrec guest log: no {', '.join(missing)}")
    hz = float(meta.get("hz", "100"))
    end = hot[-1][0]
    rec: dict[str, Any] = {
        "format": "tierkit-kernel-recording/1",
        "source": "tests/kernel/guest/tests.sh t_nbtrec",
        "meta": meta,
        "process_start_s": (start_ticks or 0) / hz,
        "sweep_start_s": float(start["mono"]),
        "hot_pages": int(start["hot_pages"]),
        "cold_pages": int(start["cold_pages"]),
        "sweeps": int(result["sweeps"]),
        "sweeps_per_s": int(result["sweeps"]) / max(end - float(start["mono"]), 1e-9),
        "corrupt": int(result.get("corrupt", "0")),
        "vmstat": vm,
        "hot_node0": hot,
    }
    if meta.get("scenario") == "thp":
        # the program's memory the kernel gave huge pages when the sweeps began (KiB)
        rec["scenario"] = "thp"
        rec["anon_huge_kb"] = int(start.get("anon_huge_kb", "-1"))
    if meta.get("scenario") == "press" and meta.get("thp") == "1":
        # tkthp=1: the regions on transparent huge pages (KiB of the program's memory on huge
        # pages when its sweeps began)
        rec["anon_huge_kb"] = int(start.get("anon_huge_kb", "-1"))
    if meta.get("scenario") == "press":
        if not fill:
            raise ValidationError(f"{source}: an nbtpress guest log without its WORKLOAD_FILL line")
        span = max(end - float(start["mono"]), 1e-9)
        rec["source"] = "tests/kernel/guest/tests.sh t_nbtpress"
        rec["scenario"] = "press"
        rec["fill"] = {k: float(v) for k, v in fill.items()}
        rec["cold_touches"] = int(result.get("cold_touches", "0"))
        rec["cold_touch_per_s"] = rec["cold_touches"] / span
        rec["cold_node0"] = cold
        if small:
            # the node of one page each of the workload's data, heap and stack, per report
            rec["small_nodes"] = small
    if trace:
        # tkvmscan=1: every kswapd run (balance_pgdat) with what its shrinks did
        rec["kswapd_trace"] = {"events": trace, "columns": list(KSWAPD_RUN_COLUMNS), "runs": runs}
        if batches:
            # every inactive-list shrink (evict_folios batch), KSWAPD_BATCH_COLUMNS
            rec["kswapd_trace"]["batch_columns"] = list(KSWAPD_BATCH_COLUMNS)
            rec["kswapd_trace"]["batches"] = batches
    if zones:
        rec["node0_zones"] = zones
    if gens:
        # tkgens=1: node 0's multi-gen LRU generations per sample, oldest first per sample
        rec["lru_gen_trace"] = {"columns": list(LRU_GEN_TRACE_COLUMNS), "rows": gens}
    if look_around:
        # tklaaddr=1: every page multi-gen eviction tested (folio_referenced's
        # lru_gen_look_around), with where the workload's regions are
        rec["look_around"] = {"columns": list(LOOK_AROUND_COLUMNS), "rows": look_around}
    for key in ("hot_addr", "cold_addr"):
        if key in start:
            rec[key] = int(start[key], 16)
    if kprobe_calls:
        # calls of reclaim's functions the kernel did not inline, over the traced run
        rec["kprobe_calls"] = kprobe_calls
    if kprobe_times:
        # when kswapd ran (balance_pgdat), aged (try_to_inc_max_seq) and its walks entered page
        # tables (walk_pud_range) and VMAs (should_skip_vma), trace clock in s
        rec["kprobe_times"] = kprobe_times
    if ctxt:
        rec["workload_ctxt_switches"] = ctxt
    if "start" in lrugen_mm and "end" in lrugen_mm:
        # the aging walks' counts over the run (mm_stats, running totals), per node
        rec["lru_gen_walks"] = {
            str(node): dict(
                zip(
                    LRU_GEN_MM_STATS,
                    (e - b for b, e in zip(lrugen_mm["start"].get(node, [0] * 4), end, strict=True)),
                    strict=True,
                )
            )
            for node, end in sorted(lrugen_mm["end"].items())
        }
    return rec


#: One traced kswapd run (balance_pgdat, from its mm_vmscan_kswapd_wake): the trace clock (s,
#: the guest's uptime), the inactive-list shrinks' pages scanned, reclaimed (demoted here),
#: activated and kept (referenced once: PG_referenced and another trip), the active-list shrinks,
#: and the lowest (most urgent) scan priority it reached.
KSWAPD_RUN_COLUMNS = (
    "t",
    "scanned",
    "reclaimed",
    "activated",
    "kept",
    "active_shrinks",
    "deactivated",
    "min_priority",
)

#: One traced inactive-list shrink (mm_vmscan_lru_shrink_inactive; with the multi-gen LRU one
#: evict_folios batch): the trace clock (s), the pages its scan met (nr_scanned: isolated and
#: sorted), reclaimed, and kept because folio_referenced found them young (nr_ref_keep).
KSWAPD_BATCH_COLUMNS = ("t", "scanned", "reclaimed", "ref_keep")

#: One generation of node 0's multi-gen LRU in one sample (``tkgens=1``, from
#: /sys/kernel/debug/lru_gen): the sample's time (s, the guest's uptime), the memory cgroup's id,
#: the generation's sequence number, its age (ms since it was made the youngest) and its anon
#: and file pages (base pages, every zone of node 0).
LRU_GEN_TRACE_COLUMNS = ("t", "memcg", "seq", "age_ms", "anon", "file")


#: One page multi-gen eviction tested (``tklaaddr=1``: lru_gen_look_around, called by
#: folio_referenced_one for every mapping it tests): the trace clock (s), the page's virtual
#: address and whether its PTE was young (1) or not (0).
LOOK_AROUND_COLUMNS = ("t", "addr", "young")


def _gens_token(t: float, key: str, val: str) -> list[list[float]]:
    """The generations of one ``n0_gens_MEMCG=seq:age:anon:file,...`` token."""
    memcg = int(key.removeprefix("n0_gens_"))
    rows: list[list[float]] = []
    for g in val.split(","):
        parts = g.split(":")
        if len(parts) != 4:
            raise ValueError(f"{key}: expected seq:age_ms:anon:file per generation, got {g!r}")
        seq, age, anon, file = (int(x) for x in parts)
        rows.append([t, memcg, seq, age, anon, file])
    return rows


_TRACE = re.compile(r"(\d+\.\d+): (mm_vmscan_\w+): (.*)")


def _vmscan_event(
    line: str, runs: list[list[float]], trace: dict[str, int], batches: list[list[float]]
) -> None:
    """Fold one traced reclaim event (``TKREC_VMSCAN``, a line of the trace buffer) into the runs."""
    m = _TRACE.search(line)
    if m is None:
        raise ValueError("not a vmscan trace event")
    name = m.group(2).removeprefix("mm_vmscan_")
    trace[name] = trace.get(name, 0) + 1
    kv = _kv(m.group(3))
    if name == "kswapd_wake":
        runs.append([float(m.group(1)), 0, 0, 0, 0, 0, 0, 12])
    elif runs and name == "lru_shrink_inactive":
        # with the multi-gen LRU one event per evict_folios batch: its time (trace clock, s),
        # the pages its scan met (isolated and sorted), reclaimed and kept as tested young
        batches.append(
            [float(m.group(1)), int(kv["nr_scanned"]), int(kv["nr_reclaimed"]), int(kv["nr_ref_keep"])]
        )
        r = runs[-1]
        r[1] += int(kv["nr_scanned"])
        r[2] += int(kv["nr_reclaimed"])
        r[3] += int(kv["nr_activate_anon"]) + int(kv["nr_activate_file"])
        r[4] += int(kv["nr_ref_keep"])
        r[7] = min(r[7], int(kv["priority"]))
    elif runs and name == "lru_shrink_active":
        r = runs[-1]
        r[5] += 1
        r[6] += int(kv["nr_deactivated"])
        r[7] = min(r[7], int(kv["priority"]))


def _zone_line(line: str, zones: dict[str, dict[str, dict[str, Any]]]) -> None:
    """One ``TKREC_ZONE`` line (a field of node 0's /proc/zoneinfo, at the start or the end)."""
    parts = line.split()
    if len(parts) < 5 or (parts[3] == "pages" and len(parts) < 6):
        raise ValueError("expected TKREC_ZONE WHEN zone=NAME FIELD VALUE")
    when, zone = parts[1], parts[2].removeprefix("zone=")
    fields = zones.setdefault(when, {}).setdefault(zone, {})
    key, vals = (parts[3], parts[4:]) if parts[3] != "pages" else (parts[4], parts[5:])
    if key == "protection:":
        fields["protection"] = [int(v.strip("(),")) for v in vals if v.strip("(),")]
    else:
        fields[key] = int(vals[0])


def compact_json(rec: Mapping[str, Any]) -> str:
    """A recording as compact JSON: whole numbers without ``.0``, one vmstat sample a line."""

    def tidy(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: tidy(x) for k, x in v.items()}
        if isinstance(v, list):
            return [tidy(x) for x in v]
        return v

    t = tidy(dict(rec))
    vm = t.pop("vmstat")
    head = json.dumps(t, separators=(",", ":"))[:-1]
    rows = ",\n".join(json.dumps(s, separators=(",", ":")) for s in vm)
    return f'{head},"vmstat":[\n{rows}]}}'


def load_recording(path: Path) -> dict[str, Any]:
    """Read a recording made by :func:`parse_guest_log` (JSON, or JSON compressed with gzip, as the
    long recordings shipped in ``tierkit/data`` are), checking what the comparison uses."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        rec = json.loads(raw.decode())
    except FileNotFoundError:
        raise ValidationError(f"recording `{path}` does not exist") from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValidationError(f"{path}: not a JSON recording: {err}") from None
    if not isinstance(rec, dict) or rec.get("format") != "tierkit-kernel-recording/1":
        raise ValidationError(f'{path}: format: expected "tierkit-kernel-recording/1"')
    for key, kind in (
        ("meta", dict),
        ("process_start_s", (int, float)),
        ("sweep_start_s", (int, float)),
        ("hot_pages", int),
        ("cold_pages", int),
        ("sweeps_per_s", (int, float)),
        ("vmstat", list),
        ("hot_node0", list),
    ):
        if not isinstance(rec.get(key), kind):
            raise ValidationError(f"{path}: {key}: missing or of the wrong type")
    if rec["hot_pages"] <= 0 or len(rec["vmstat"]) < 2 or len(rec["hot_node0"]) < 2:
        raise ValidationError(f"{path}: hot_pages, vmstat or hot_node0: too few data to compare")
    return rec


def _press_sizes(least_mib: int, seconds: int) -> tuple[tuple[str, int, int, int], ...]:
    """The nbtpress scenario's sizes: hot and cold MiB (at least ``least_mib``), seconds (default
    ``seconds``), the MiB left free above node 0's high watermark and the cold touches a second."""
    return (
        ("hot", 32, least_mib, 256),
        ("cold", 64, least_mib, 768),
        ("seconds", seconds, 2, 600),
        ("free", 16, 0, 2048),
        ("cold-rate", 8192, 0, 1_000_000),
    )


#: the scenarios of ``--scenario``: the guest test, its kernel argument and sizes (name, default,
#: lo, hi); ``empty`` is the original recording (node 0 nearly empty), ``press`` node 0 nearly full
SCENARIOS: dict[str, tuple[str, str, tuple[tuple[str, int, int, int], ...]]] = {
    "empty": ("nbtrec", "tkrec", (("hot", 32, 1, 256), ("cold", 480, 0, 768), ("seconds", 20, 2, 600))),
    # the same program on transparent huge pages (tkthp=1; sizes in whole 2 MiB pages)
    "thp": ("nbtrec", "tkrec", (("hot", 64, 2, 256), ("cold", 256, 0, 768), ("seconds", 20, 2, 600))),
    "press": ("nbtpress", "tkpress", _press_sizes(1, 400)),
    # press on transparent huge pages (tkthp=1; hot and cold in whole 2 MiB pages), with the
    # workload's 1 ms TLB ticker (tktlbtick=1000: accessed bits set again as a real CPU's TLB
    # misses set them; docs/validation.md, section 1za)
    "press-thp": ("nbtpress", "tkpress", _press_sizes(2, 100)),
}

#: the scenarios whose guest fills node 0 (nbtpress), compared by :mod:`tierkit.validate_press`
PRESS_SCENARIOS = ("press", "press-thp")


def record(
    repo: Path,
    out: Path,
    hot_mib: int = 32,
    cold_mib: int = 480,
    seconds: int = 20,
    *extra: int,
    scenario: str = "empty",
    lru_gen: bool | None = None,
    trace_reclaim: bool = False,
    sample_generations: bool = False,
) -> Path:
    """Boot the real-kernel tests' guest with the scenario's test (``nbtrec``; ``nbtpress`` for
    ``press``, whose ``extra`` are the MiB left free above node 0's high watermark and the cold
    touches per second) and write its recording. ``lru_gen`` switches the guest kernel's
    multi-gen LRU on or off first (``None``: as the kernel boots); ``trace_reclaim`` records
    reclaim's tracepoints too (``tkvmscan=1``: every kswapd run, ``kswapd_trace`` in the
    recording); ``sample_generations`` node 0's multi-gen generations every sample (``tkgens=1``,
    ``lru_gen_trace``)."""
    runner = repo / "tests" / "kernel" / "run.sh"
    if not runner.is_file():
        raise ValidationError(
            f"`{runner}` does not exist: --record needs a tierkit source checkout (give it with --repo)"
        )
    test, arg, sizes = SCENARIOS[scenario]
    values = (hot_mib, cold_mib, seconds, *extra)
    if len(values) != len(sizes):
        raise ValidationError(f"--record-size: {scenario} takes {len(sizes)} values, got {len(values)}")
    for (name, _, lo, hi), v in zip(sizes, values, strict=True):
        if not lo <= v <= hi:
            raise ValidationError(f"--record-{name}: expected {lo}..{hi}, got {v}")
        if scenario in ("thp", "press-thp") and name in ("hot", "cold") and v % 2:
            raise ValidationError(
                f"--record-{name}: the {scenario} scenario takes whole 2 MiB pages: an even MiB, got {v}"
            )
    with tempfile.TemporaryDirectory(prefix="tierkit-rec-") as tmp:
        append = f"{arg}={','.join(str(v) for v in values)}"
        if scenario == "thp":
            append += " tkthp=1"
        if scenario == "press-thp":
            append += " tkthp=1 tktlbtick=1000"
        if lru_gen is not None:
            append += f" tklrugen={7 if lru_gen else 0}"
        if trace_reclaim:
            append += " tkvmscan=1"
        if sample_generations:
            append += " tkgens=1"
        env = dict(os.environ, TK_APPEND=append)
        proc = subprocess.run(
            [str(runner), "-k", "612", "-t", test, "-n", "1", "-o", tmp],
            env=env,
            cwd=repo,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        log = Path(tmp) / "guest-612-1.log"
        if not log.is_file():
            tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
            raise ValidationError(
                f"the guest did not run (tests/kernel/run.sh exited {proc.returncode}):\n{tail}"
            )
        rec = parse_guest_log(log.read_text(errors="replace"), str(log))
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(out.name + ".part")
    # the press recording is written compact (hundreds of samples of both regions)
    part.write_text((compact_json(rec) if scenario in PRESS_SCENARIOS else json.dumps(rec, indent=1)) + "\n")
    part.replace(out)
    return out


def kernel_timeline(rec: Mapping[str, Any]) -> pd.DataFrame:
    """The kernel's run: ``t_s`` since the process started, cumulative hint faults, promotions and
    kswapd demotions, and the hot region's pages on the fast node."""
    t0 = float(rec["process_start_s"])
    vm = pd.DataFrame(rec["vmstat"]).sort_values("t")
    base = vm.iloc[0]
    frame = pd.DataFrame(
        {
            "t_s": vm["t"] - t0,
            "hint_faults": vm["numa_hint_faults"] - base["numa_hint_faults"],
            "promotions": vm["pgpromote_success"] - base["pgpromote_success"],
            "demotions": vm["pgdemote_kswapd"] - base["pgdemote_kswapd"],
            "pte_updates": vm["numa_pte_updates"] - base["numa_pte_updates"],
        }
    )
    hot = pd.DataFrame(rec["hot_node0"], columns=["t", "hot_fast_pages"]).sort_values("t")
    hot["t_s"] = hot["t"] - t0
    merged = pd.merge_asof(frame, hot[["t_s", "hot_fast_pages"]], on="t_s", direction="backward")
    merged["hot_fast_pages"] = merged["hot_fast_pages"].fillna(0.0)
    return merged.reset_index(drop=True)


def run_span(rec: Mapping[str, Any]) -> tuple[float, float]:
    """A recording's setup (s from the process's start to its first sweep, at least 1 ms) and its
    end (s from the process's start to the last sample)."""
    t0 = float(rec["process_start_s"])
    setup_s = max(float(rec["sweep_start_s"]) - t0, 0.001)
    end_s = max(float(rec["vmstat"][-1]["t"]), float(rec["hot_node0"][-1][0])) - t0
    return setup_s, end_s


def nbt_spec(meta: Mapping[str, Any], policy_params: set[str], *extra: str) -> str:
    """The ``nbt`` policy spec with the guest kernel's knobs (only those the policy has), then
    ``extra`` parameters."""
    params = [
        f"{param}={meta[knob]}"
        for knob, param in KNOBS.items()
        if param in policy_params and meta.get(knob) not in (None, "na")
    ]
    params += extra
    return "nbt" + (":" + ",".join(params) if params else "")


def guest_wake_delay(meta: Mapping[str, Any], policy_params: set[str]) -> list[str]:
    """``kswapd_wake_delay_us`` for a guest with one vCPU: half a tick of the recording's ``hz``.
    A promotion that finds the fast node short wakes kswapd, but the faulting thread keeps the
    only CPU until its slice ends, which the scheduler sees at a tick (EEVDF's RUN_TO_PARITY, no
    hrtick); on average half a tick later. The recordings' ``hz`` is 100, the unit of
    /proc/stat's ticks (USER_HZ), which gives 5 ms; the guest kernel's own tick is 4 ms
    (CONFIG_HZ=250), and half of that, 2 ms, agrees worse with the press recordings, so the 5 ms
    stays (docs/validation.md, sections 1t and 1z). With a second vCPU (``cpus``) kswapd runs on
    the idle one at once."""
    if "kswapd_wake_delay_us" not in policy_params or "hz" not in meta:
        return []
    try:
        cpus = int(meta.get("cpus", 1))
        hz = float(meta["hz"])
    except (TypeError, ValueError) as e:
        raise ValidationError(
            f"recording meta: cpus={meta.get('cpus')!r}, hz={meta['hz']!r}: expected a whole number "
            f"of CPUs and a tick rate in Hz ({e})"
        ) from e
    if cpus != 1:
        return []
    if hz <= 0:
        raise ValidationError(f"recording meta: hz={meta['hz']!r}: expected a tick rate above 0 Hz")
    return [f"kswapd_wake_delay_us={0.5e6 / hz:g}"]


def spec_params(spec: str) -> tuple[str, dict[str, str]]:
    """A policy spec of one policy (``nbt:k=v,...``) as its name and its parameters."""
    name, _, rest = spec.partition(":")
    return name, dict(kv.split("=", 1) for kv in rest.split(",") if kv)


def key_value(option: str, item: str, known: Collection[str], not_a: str, listed: str) -> tuple[str, str]:
    """One ``KEY=VALUE`` of ``option`` (``--nbt-param``, ``--set``): its key and value, stripped;
    an item without both, or a key not in ``known``, is an error naming it: "`KEY` is not
    {not_a} ({listed}: the known keys)"."""
    key, eq, value = item.partition("=")
    key, value = key.strip(), value.strip()
    if not eq or not key or not value:
        raise ValidationError(f"{option}: expected KEY=VALUE, got `{item}`")
    if key not in known:
        raise ValidationError(f"{option}: `{key}` is not {not_a} ({listed}: {', '.join(sorted(known))})")
    return key, value


def with_params(spec: str, extra: Sequence[str], policy_params: set[str]) -> str:
    """``spec`` (``nbt:k=v,...``) with each ``KEY=VALUE`` of ``extra`` set, replacing the same key;
    a key the policy does not have, or an item without ``=``, is an error naming it."""
    name, params = spec_params(spec)
    for item in extra:
        key, value = key_value("--nbt-param", item, policy_params, f"a parameter of {name}", "its parameters")
        params[key] = value
    return name + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")


#: the experiment keys `validate kernel --set` takes: the model's own settings; the recording
#: decides the rest (sizes, duration, platform, processes; --seed the seed, and --kswapd-own-cpu or
#: --kswapd-shares-cpu whether kswapd shares the CPU)
MODEL_KEYS = frozenset(
    {"epoch_ms", "counter_noise", "report_interval_ms", "kswapd_cpu_share", "kswapd_slice_ms"}
)


def with_sets(text: str, sets: Sequence[str]) -> str:
    """The generated experiment ``text`` with each ``KEY=VALUE`` of ``sets`` (``validate kernel
    --set``) as a top-level key, replacing the line the generator wrote for it: a model setting
    (:data:`MODEL_KEYS`), not one the recording decides. A malformed item, another key, or a value
    that is not TOML is an error naming it."""
    head, sep, tail = text.partition("\n[")
    lines = head.split("\n")
    for item in sets:
        key, value = key_value(
            "--set",
            item,
            MODEL_KEYS,
            "a model setting of the simulated run",
            "the recording decides the rest; settable",
        )
        try:
            tomllib.loads(f"{key} = {value}")
        except tomllib.TOMLDecodeError as e:
            raise ValidationError(f"--set {key}: `{value}` is not a TOML value ({e})") from None
        lines = [x for x in lines if not re.match(rf"{re.escape(key)}\s*=", x)]
        lines.append(f"{key} = {value}  # --set")
    return "\n".join(lines) + sep + tail


def setup_phase(setup_s: float) -> str:
    """The simulated workload's first phase: idle on its stack-like object (the `stack` object of
    the experiment) for the guest program's setup, until its first sweep."""
    return f"""[[process.thread.phase]]
duration_s = {setup_s:.3f}
mlp = 1
compute_ns = 100000
[[process.thread.phase.access]]
object = "stack"
pattern = "uniform"
"""


def page_bytes(rec: Mapping[str, Any]) -> int:
    """The recorded program's page size in bytes: 4096, or 2 MiB on transparent huge pages."""
    raw = rec["meta"].get("page_size", PAGE)
    try:
        size = int(raw)
    except (TypeError, ValueError):
        size = -1
    if size not in (PAGE, 2 << 20):
        raise ValidationError(f"recording meta: page_size={raw!r}: expected 4096 or 2097152 (bytes)")
    return size


def sim_experiment(rec: Mapping[str, Any], policy_params: set[str], seed: int = 1) -> tuple[str, str]:
    """The recorded run as a simulator experiment (TOML) and the ``nbt`` policy spec with the
    guest kernel's knobs (only those the policy has). A recording on transparent huge pages runs
    with 2 MiB pages."""
    from tierkit.validate_press import cpu_share

    meta = rec["meta"]
    page = "2MiB" if page_bytes(rec) != PAGE else "4KiB"
    # the share of the guest's one vCPU the workload had (its CPU ticks, where the recording has
    # them): Linux paces the scanner by the task's CPU time (docs/validation.md, section 1w)
    has_ticks = any("wl_ticks" in v for v in rec["vmstat"])
    share = f"cpu_share = {cpu_share(rec):.3f}\n" if has_ticks else ""
    setup_s, end_s = run_span(rec)
    hot_mb = rec["hot_pages"] * PAGE / 2**20
    cold_mb = rec["cold_pages"] * PAGE / 2**20
    # node 0 of the guest: the free memory the kernel reported; node 1: 1 GiB
    fast_gb = float(meta.get("node0_free_kb", 2908144)) / 2**20
    spec = nbt_spec(meta, policy_params, *guest_wake_delay(meta, policy_params))
    cold = (
        f"""
[[process.object]]
name = "cold"
size_mb = {cold_mb:g}
tier = "slow"
"""
        if cold_mb > 0
        else ""
    )
    # The setup (the guest's first touch of every page, from exec to the first sweep: here the pages
    # are placed at once, and the thread works on a small stack-like object on the fast tier that
    # long), then the sweep of the hot region: its pages are accessed thousands of times a second,
    # so a hint fault follows the scan that marks a page within a fraction of a millisecond in the
    # guest and here alike. The cold pages are never accessed again, as in the guest.
    text = f"""# generated by `tierkit validate kernel` from {rec.get("source", "a recording")}
workload = "custom"
name = "validate-kernel-nbt"
platform = "icx-numa"
duration_s = {end_s:.3f}
fast_tier_gb = {fast_gb:.4f}
slow_tier_gb = 1
page_size = "{page}"
report_interval_ms = 100
seed = {seed}

[[process]]
name = "workload"
{share}[[process.object]]
name = "stack"
size_mb = 0.0625
tier = "fast"
{cold}
[[process.object]]
name = "hot"
size_mb = {hot_mb:g}
tier = "slow"

[[process.thread]]
count = 1
{setup_phase(setup_s)}[[process.thread.phase]]
mlp = 8
compute_ns = 0
[[process.thread.phase.access]]
object = "hot"
pattern = "uniform"
"""
    return text, spec


def sim_timeline(ts: pd.DataFrame, base_pages: int = 1) -> pd.DataFrame:
    """The simulated run in the kernel timeline's columns (cumulative counts). ``base_pages``: 4 KiB
    pages to one simulated page (512 on 2 MiB pages): promotions, demotions and the hot region's
    pages count 4 KiB pages, as the kernel's pgpromote_success and move_pages do; hint faults
    count faults (one per huge page in both)."""
    return pd.DataFrame(
        {
            "t_s": ts["t_s"],
            "hint_faults": ts["hint_faults"].cumsum() if "hint_faults" in ts else math.nan,
            "promotions": ts["promotions"].cumsum() * base_pages,
            "demotions": ts["demotions"].cumsum() * base_pages,
            # the process's fast pages less those it started with (its stack-like object)
            "hot_fast_pages": (ts["fast_pages.workload"] - ts["fast_pages.workload"].iloc[0]) * base_pages,
        }
    )


def _time_to(frame: pd.DataFrame, pages: float) -> float:
    hit = frame[frame["hot_fast_pages"] >= pages]
    return float(hit["t_s"].iloc[0]) if len(hit) else math.nan


def metrics(frame: pd.DataFrame, hot_pages: int) -> dict[str, float]:
    """The compared figures of one timeline."""
    span = float(frame["t_s"].iloc[-1] - frame["t_s"].iloc[0])
    faults = float(frame["hint_faults"].iloc[-1])
    return {
        "hint_faults": faults,
        "hint_faults_per_s": faults / span if span > 0 else math.nan,
        "promotions": float(frame["promotions"].iloc[-1]),
        "t50_s": _time_to(frame, 0.5 * hot_pages),
        "t90_s": _time_to(frame, 0.9 * hot_pages),
        "hot_fast_at_end": float(frame["hot_fast_pages"].iloc[-1]) / hot_pages,
    }


@dataclass
class Row:
    metric: str
    kernel: float
    sim: float

    @property
    def ratio(self) -> float:
        return self.sim / self.kernel if self.kernel and not math.isnan(self.kernel) else math.nan

    @property
    def within(self) -> bool:
        # both worlds at 0 (a kernel that stopped promoting, and the simulator with it) agree
        # exactly, though the ratio is undefined
        if self.kernel == 0 and self.sim == 0:
            return True
        return not math.isnan(self.ratio) and abs(self.ratio - 1.0) <= TOLERANCE


COMPARED = ("hint_faults_per_s", "t50_s", "t90_s")
LABELS = {
    "hint_faults": "hint faults (total)",
    "hint_faults_per_s": "hint faults per second (mean over the run)",
    "promotions": "promotions (total)",
    "t50_s": "time to 50% of the hot region on the fast tier (s from process start)",
    "t90_s": "time to 90% of the hot region on the fast tier (s)",
    "hot_fast_at_end": "share of the hot region on the fast tier at the end",
}


def _fmt(v: float) -> str:
    if math.isnan(v):
        return "n/a"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def rows_json(rows: Sequence[Row], compared: Collection[str]) -> list[dict[str, Any]]:
    """comparison.json's rows: each figure, the kernel's and ours, their ratio, and whether it is
    one of the compared figures and within the tolerance."""
    return [
        {
            "metric": r.metric,
            "kernel": r.kernel,
            "sim": r.sim,
            "ratio": r.ratio,
            "compared": r.metric in compared,
            "within_tolerance": r.within,
        }
        for r in rows
    ]


def rows_table(rows: Sequence[Row], labels: Mapping[str, str], compared: Collection[str]) -> list[str]:
    """The report's table of the rows (Markdown lines, header included)."""
    lines = [
        f"| figure | Linux | tierkit | tierkit / Linux | within {TOLERANCE:.0%} |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        mark = ("yes" if r.within else "**no**") if r.metric in compared else "(shown)"
        lines.append(f"| {labels[r.metric]} | {_fmt(r.kernel)} | {_fmt(r.sim)} | {_fmt(r.ratio)} | {mark} |")
    return lines


def validate_kernel(
    out: Path,
    recording: Path | None = None,
    seed: int = 1,
    progress: bool = False,
    scenario: str = "empty",
    nbt_params: Sequence[str] = (),
    rec: dict[str, Any] | None = None,
    sweep_in_order: bool = False,
    kswapd_shares_cpu: bool | None = None,
    sim_sets: Sequence[str] = (),
) -> dict[str, Any]:
    """Compare the recording with the simulator's ``nbt``; write report.md, timeline.png,
    kernel.csv, sim.csv, experiment.toml and comparison.json into ``out``; return the comparison.
    ``scenario="press"`` compares an ``nbtpress`` recording (the fast node nearly full) instead:
    :mod:`tierkit.validate_press`. ``nbt_params`` (``KEY=VALUE``) are set on the simulated ``nbt``
    after the recording's knobs. ``rec``: the recording as :func:`load_recording` already read it
    from ``recording`` (read here when not given). ``sweep_in_order`` and ``kswapd_shares_cpu``
    (press only) model the guest's sweeps in address order and its one vCPU
    (:func:`tierkit.validate_press.sim_experiment`). ``sim_sets`` (``KEY=VALUE``) set model
    keys of the simulated experiment (:func:`with_sets`)."""
    import tierkit
    from tierkit.output import new_axes, save_figure

    path = recording or shipped_recordings(scenario)[0]
    rec = rec or load_recording(path)
    recorded = recorded_scenario(rec)
    if recorded != scenario:
        # (a press recording compared as the empty scenario used to run: its sweeps, cold touches
        # and fill were left out, and the figures came out as a wrong comparison)
        not_press = scenario in PRESS_SCENARIOS and recorded not in PRESS_SCENARIOS
        raise ValidationError(
            f"{path}: a recording of the {recorded} scenario"
            f"{' (not an nbtpress recording)' if not_press else ''}, compared as {scenario}:"
            f" give --scenario as it was recorded ({recorded})"
        )
    if scenario in PRESS_SCENARIOS:
        from tierkit.validate_press import validate_press

        return validate_press(
            out,
            rec,
            path,
            seed=seed,
            progress=progress,
            nbt_params=nbt_params,
            sweep_in_order=sweep_in_order,
            kswapd_shares_cpu=kswapd_shares_cpu,
            sim_sets=sim_sets,
        )
    if sweep_in_order or kswapd_shares_cpu is not None:
        raise ValidationError(
            "--sweep-in-order, --kswapd-shares-cpu and --kswapd-own-cpu model the press scenario's"
            " guest (--scenario press or press-thp)"
        )
    params = {p["name"] for p in tierkit.describe_policy("nbt")}
    text, spec = sim_experiment(rec, params, seed)
    spec = with_params(spec, nbt_params, params)
    text = with_sets(text, sim_sets)
    out.mkdir(parents=True, exist_ok=True)
    exp_path = out / "experiment.toml"
    exp_path.write_text(text)
    result = tierkit.run(exp_path, policy=spec, seed=seed, progress=progress)
    k = kernel_timeline(rec)
    s = sim_timeline(result.timeseries, page_bytes(rec) // PAGE)
    k.to_csv(out / "kernel.csv", index=False)
    s.to_csv(out / "sim.csv", index=False)
    hot = int(rec["hot_pages"])
    km, sm = metrics(k, hot), metrics(s, hot)
    rows = [Row(m, km[m], sm[m]) for m in LABELS]

    fig, axes = new_axes("hot region on the fast tier", "pages", "seconds since the process started")
    axes.plot(k["t_s"], k["hot_fast_pages"], label="Linux (guest)", linewidth=1.4)
    axes.plot(s["t_s"], s["hot_fast_pages"], label="tierkit nbt", linewidth=1.4, linestyle="--")
    axes.legend(fontsize=8)
    save_figure(fig, out / "timeline.png")
    fig, axes = new_axes("NUMA hint faults (cumulative)", "faults", "seconds since the process started")
    axes.plot(k["t_s"], k["hint_faults"], label="Linux (guest)", linewidth=1.4)
    axes.plot(s["t_s"], s["hint_faults"], label="tierkit nbt", linewidth=1.4, linestyle="--")
    axes.legend(fontsize=8)
    save_figure(fig, out / "hint_faults.png")

    meta = rec["meta"]
    comparison = {
        "recording": str(path),
        "kernel": meta.get("kernel"),
        "policy": spec,
        "tolerance": TOLERANCE,
        "rows": rows_json(rows, COMPARED),
        "within_tolerance": all(r.within for r in rows if r.metric in COMPARED),
    }
    (out / "comparison.json").write_text(json.dumps(comparison, indent=1, default=str) + "\n")
    thp = ""
    if page_bytes(rec) != PAGE:
        huge = rec.get("anon_huge_kb", -1)
        thp = (
            f" On transparent huge pages (MADV_HUGEPAGE; {huge / 1024:.0f} MiB of the program on huge"
            " pages when its sweeps began), simulated with 2 MiB pages; page counts are 4 KiB pages,"
            " 512 to a huge page, and a huge page takes one hint fault."
        )
    lines = [
        "# tierkit validate kernel: `nbt` against Linux's NUMA-balancing tiering",
        "",
        f"Recording: `{path.name}` (kernel {meta.get('kernel')}, QEMU guest of tests/kernel: node 0 fast, "
        f"node 1 a slow memory tier; {hot} hot pages swept about {rec['sweeps_per_s']:.0f} times a second, "
        f"{rec['cold_pages']} cold pages touched once, both first placed on node 1; setup "
        f"{float(rec['sweep_start_s']) - float(rec['process_start_s']):.2f} s from exec to the first sweep)."
        + thp,
        f"Kernel knobs: {', '.join(f'{k}={meta.get(k)}' for k in KNOBS)}.",
        f"Simulated: `tierkit run experiment.toml --policy {spec}` (this directory).",
        "",
        *rows_table(rows, LABELS, COMPARED),
    ]
    lines += [
        "",
        "![hot region on the fast tier](timeline.png)",
        "",
        "![hint faults](hint_faults.png)",
        "",
        "Times count from the process's start (exec) in both. In the guest the workload shares one",
        "emulated vCPU with the 100 ms sampling loop, and Linux paces the scanner by the task's CPU time",
        "(`task_tick_numa`: `sum_exec_runtime` against `node_stamp`) as well as by wall time",
        "(`task_numa_work`: `mm->numa_next_scan`); the simulated thread runs all the time.",
    ]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return comparison


def recorded_scenario(rec: Mapping[str, Any]) -> str:
    """The ``--scenario`` a recording was made in: ``empty`` (no ``scenario`` key), ``thp``,
    ``press``, or ``press-thp`` (a press recording on transparent huge pages)."""
    scenario = str(rec.get("scenario", "empty"))
    if scenario == "press" and page_bytes(rec) != PAGE:
        return "press-thp"
    return scenario


def shipped_recordings(scenario: str) -> list[Path]:
    """Every recording of `scenario` that ships with tierkit, the default first."""
    if scenario == "press":
        import tierkit.validate_press as vp

        return [
            vp.PRESS_RECORDING,
            vp.PRESS_RECORDING_400S,
            vp.PRESS_RECORDING_400S_TRACED,
            vp.PRESS_RECORDING_400S_3,
            vp.PRESS_RECORDING_400S_4,
            vp.PRESS_RECORDING_400S_5,
            vp.PRESS_RECORDING_400S_6,
            vp.PRESS_RECORDING_TRACED_ZONES,
            vp.PRESS_RECORDING_TRACED_AGINGS,
            vp.PRESS_RECORDING_TRACED_WALKS,
            vp.PRESS_RECORDING_TRACED_TLBTICK,
            *vp.PRESS_RECORDING_TRACED_2CPU,
            vp.PRESS_RECORDING_TRACED_2CPU_PCP,
            *vp.PRESS_RECORDING_TRACED_GENS,
            vp.PRESS_RECORDING_TRACED_LOOKAROUND,
            vp.PRESS_RECORDING_CLASSIC_LRU,
        ]
    if scenario == "press-thp":
        import tierkit.validate_press as vp

        return [vp.PRESS_THP_RECORDING, vp.PRESS_THP_RECORDING_TLBTICK_2, vp.PRESS_THP_RECORDING_NO_TICKER]
    if scenario == "thp":
        return [THP_RECORDING]
    return [DEFAULT_RECORDING]


def _recording_name(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".json"):
        name = name.removesuffix(suffix)
    return name or "recording"


def validate_many(
    out: Path,
    recordings: Sequence[Path],
    seed: int = 1,
    progress: bool = False,
    scenario: str = "empty",
    nbt_params: Sequence[str] = (),
    records: Sequence[dict[str, Any]] | None = None,
    sweep_in_order: bool = False,
    kswapd_shares_cpu: bool | None = None,
    sim_sets: Sequence[str] = (),
) -> dict[str, Any]:
    """:func:`validate_kernel` for each recording, each into its own subdirectory of ``out`` (named
    after the recording), then ``summary.md`` and ``summary.json``: per recording the kernel, the
    LRUs, whether every compared figure is within tolerance and each figure's ratio to the
    kernel's, so that boots of one scenario can be set side by side (the guest's own spread).
    Every recording is read and checked before anything is written (``records``: the recordings
    as :func:`load_recording` already read them, in the same order)."""
    loaded = list(records) if records is not None else [load_recording(p) for p in recordings]
    out.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    entries: list[dict[str, Any]] = []
    metrics: list[str] = []
    for path, rec in zip(recordings, loaded, strict=True):
        base = _recording_name(path)
        name, k = base, 2
        while name in used:
            name, k = f"{base}-{k}", k + 1
        used.add(name)
        c = validate_kernel(
            out / name,
            path,
            seed=seed,
            progress=progress,
            scenario=scenario,
            nbt_params=nbt_params,
            rec=rec,
            sweep_in_order=sweep_in_order,
            kswapd_shares_cpu=kswapd_shares_cpu,
            sim_sets=sim_sets,
        )
        for r in c["rows"]:
            if r["metric"] not in metrics:
                metrics.append(r["metric"])
        entries.append(
            {
                "recording": str(path),
                "dir": name,
                "kernel": c.get("kernel"),
                "kernel_lru": c.get("kernel_lru"),
                "sim_lru": c.get("sim_lru"),
                "policy": c.get("policy"),
                "within_tolerance": c["within_tolerance"],
                "ratios": {r["metric"]: r["ratio"] for r in c["rows"]},
                "compared": [r["metric"] for r in c["rows"] if r["compared"]],
                "outside": [r["metric"] for r in c["rows"] if r["compared"] and not r["within_tolerance"]],
            }
        )
    compared = sum(len(e["compared"]) for e in entries)
    outside = sum(len(e["outside"]) for e in entries)
    summary = {
        "scenario": scenario,
        "tolerance": TOLERANCE,
        "compared_figures": compared,
        "outside_figures": outside,
        "recordings": entries,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")

    def cell(e: dict[str, Any], m: str) -> str:
        v = e["ratios"].get(m)
        mark = " (out)" if m in e["outside"] else ""
        if v is None:
            return ""
        if isinstance(v, float) and math.isnan(v):
            return f"n/a{mark}"
        return f"{v:.2f}{mark}"

    lines = [
        f"# tierkit validate kernel: {len(entries)} recordings of the {scenario} scenario side by side",
        "",
        "Each figure as tierkit's over the kernel's (1.00: equal); `(out)` marks a compared figure",
        f"outside ±{TOLERANCE:.0%}, `n/a` a ratio without a value (a kernel that stopped). Each",
        "recording's own report is in its directory.",
        "",
        f"{outside} of the {compared} compared figures are outside ±{TOLERANCE:.0%}; "
        f"{sum(1 for e in entries if e['within_tolerance'])} of the {len(entries)} recordings have every "
        "compared figure within it.",
        "",
        "| recording | kernel LRU | within tolerance | " + " | ".join(metrics) + " |",
        "|---|---|---|" + "---|" * len(metrics),
    ]
    for e in entries:
        lines.append(
            f"| [{e['dir']}]({e['dir']}/report.md) | {e['kernel_lru'] or ''} | "
            f"{'yes' if e['within_tolerance'] else 'no'} | " + " | ".join(cell(e, m) for m in metrics) + " |"
        )
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    return summary
