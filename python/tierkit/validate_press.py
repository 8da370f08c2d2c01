"""``tierkit validate kernel --scenario press``: the simulator's ``nbt`` beside upstream Linux's
NUMA-balancing tiering with the fast node nearly full (issue 14: does the kernel keep promoting cold
pages that kswapd demotes again?).

The recording (``tests/kernel/guest/tests.sh``, scenario ``nbtpress``) places the workload's cold
region on node 0 and its hot region on node 1, fills node 0 with mlocked pages so that a set amount
stays free above node 0's high watermark (the fast tier then holds the hot region but not hot +
cold), and keeps touching random cold pages at a set rate while the hot region is swept. It samples
``/proc/vmstat`` and both regions' placement every 100 ms.

The simulated experiment is the guest's process: one process whose objects are the workload's
writable VMAs in address order (Linux's scanner walks them so): its data segment, its heap, the
fill (pinned: bound to the fast tier and mlocked, so the scanner skips it as unsuitable but it
counts in the RSS that sets the scan period), the cold and the hot region (one VMA: two adjacent
anonymous mappings the kernel merged), its vDSO and its stack. The fast tier is the fill + the process's
fast pages + the free pages the guest left above its high watermark + the simulator's own high
watermark, with the guest's watermark step (``watermark_scale_factor`` chosen so that the step
between the low, high and promo marks is the guest's). One thread, as in the guest, sweeps the
hot region and touches the cold one at the measured rate (its compute per access dominates its
memory latency, so its access rate hardly depends on where the hot region is; the cold region's
share of its accesses is the measured cold rate over that access rate), with the share of the
vCPU the workload had in the guest (``cpu_share``: the scanner paces its windows by CPU time).
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from tierkit.validate import (
    KNOBS,
    PAGE,
    TOLERANCE,
    Row,
    ValidationError,
    guest_wake_delay,
    nbt_spec,
    page_bytes,
    rows_json,
    rows_table,
    run_span,
    setup_phase,
    spec_params,
    tomllib,
    with_params,
    with_sets,
)

#: the nbtpress recording `validate kernel --scenario press` uses by default: 100 s of sweeps
#: with the guest kernel's default multi-gen LRU, reclaim's counters and kswapd's traced runs
#: (``tkvmscan=1``), compared with `nbt:lru_gen=true` (docs/validation.md, section 1e)
PRESS_RECORDING = Path(__file__).parent / "data" / "kernel_nbt_press_612_traced.json"
#: the 400 s recording of the same scenario (multi-gen LRU, before reclaim's counters were
#: recorded), the default until 2026-11-28
PRESS_RECORDING_400S = Path(__file__).parent / "data" / "kernel_nbt_press_612.json"
#: three more boots of the 400 s scenario with the multi-gen LRU (gzip-compressed JSON): one with
#: reclaim's counters and kswapd's traced runs (``tkvmscan=1``), two untraced with node 0's free
#: memory and LRU sizes per sample (the last also with the nodes of the workload's own data, heap
#: and stack pages); with the first, they show how far the guest's own long runs differ from
#: boot to boot (docs/validation.md, section 1e)
PRESS_RECORDING_400S_TRACED = Path(__file__).parent / "data" / "kernel_nbt_press_612_400s_traced.json.gz"
PRESS_RECORDING_400S_3 = Path(__file__).parent / "data" / "kernel_nbt_press_612_400s_3.json.gz"
PRESS_RECORDING_400S_4 = Path(__file__).parent / "data" / "kernel_nbt_press_612_400s_4.json.gz"
#: a fifth 400 s multi-gen boot with node 0's zones: their watermarks at the start
#: (``TKREC_ZONE``) and the DMA and DMA32 zones' free pages and boosts in every sample, which
#: :func:`zone_room` reads (docs/validation.md, section 1f)
PRESS_RECORDING_400S_5 = Path(__file__).parent / "data" / "kernel_nbt_press_612_400s_5.json.gz"
#: a sixth, the same way
PRESS_RECORDING_400S_6 = Path(__file__).parent / "data" / "kernel_nbt_press_612_400s_6.json.gz"
#: the default's scenario (100 s, traced) again, with node 0's zones in every sample
PRESS_RECORDING_TRACED_ZONES = Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_zones.json.gz"
#: the default's scenario once more, with when kswapd ran and aged and when its walks entered a
#: process's page tables (kprobes on balance_pgdat, try_to_inc_max_seq, walk_pud_range and
#: should_skip_vma, ``TKREC_KPROBE_T``) and the workload's context switches (``TKREC_CTXT``):
#: the multi-gen LRU's agings come in bursts (docs/validation.md, section 1f)
PRESS_RECORDING_TRACED_AGINGS = Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_agings.json.gz"
#: and once more with /sys/kernel/debug/lru_gen_full at the start and the end (``TKREC_LRUGEN_FULL``):
#: its mm_stats count what the aging walks read, found young and let through the Bloom filter
#: (docs/validation.md, section 1g)
PRESS_RECORDING_TRACED_WALKS = Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_walks.json.gz"
#: and once more with the workload's TLB ticker (tktlbtick=1000: a sleeper process wakes every
#: 1 ms, each wake a switch of address spaces that flushes TCG's TLB, so the swept pages'
#: accessed bits are set again after a clear as on real hardware): the kernel still keeps most
#: of the pages it isolates untested (docs/validation.md, section 1g)
PRESS_RECORDING_TRACED_TLBTICK = (
    Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_tlbtick.json.gz"
)
#: and twice with two vCPUs, the workload and its ticker pinned to CPU 0 (TK_SMP=2, tkcpu=0): kswapd
#: runs beside the workload, not in its place; the kernel keeps even more of its isolated pages
#: untested (docs/validation.md, section 1g)
PRESS_RECORDING_TRACED_2CPU = (
    Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_2cpu_1.json.gz",
    Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_2cpu_2.json.gz",
)
#: and a third time with two vCPUs, sampling node 0's zones' per-CPU lists too (n0_pcp_DMA32):
#: 9.6K free pages sat on them after the fill until kswapd's first run drained them, and the DMA
#: zone settled above the promotion path's bar, so kswapd ran once (docs/validation.md, 1h)
PRESS_RECORDING_TRACED_2CPU_PCP = (
    Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_2cpu_pcp.json.gz"
)
#: and three times sampling node 0's multi-gen generations every 100 ms (tkgens=1, the recording's
#: ``lru_gen_trace``), the third with the TLB ticker too: what kswapd finds when it wakes
#: (docs/validation.md, section 1g)
PRESS_RECORDING_TRACED_GENS = (
    Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_gens_1.json.gz",
    Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_gens_2.json.gz",
    Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_gens_tlbtick.json.gz",
)
#: and once recording the address of every page multi-gen eviction tested (tklaaddr=1, the
#: recording's ``look_around``, with the regions' addresses): which pages lead a quiet wake
PRESS_RECORDING_TRACED_LOOKAROUND = (
    Path(__file__).parent / "data" / "kernel_nbt_press_612_traced_lookaround.json.gz"
)
#: the same scenario with the guest kernel's multi-gen LRU switched off (tklrugen=0: the classic
#: active/inactive lists), 100 s of sweeps, with reclaim's own counters
PRESS_RECORDING_CLASSIC_LRU = Path(__file__).parent / "data" / "kernel_nbt_press_612_classic_lru.json"
#: the same scenario on transparent huge pages (tkthp=1: both regions 2 MiB aligned,
#: MADV_HUGEPAGE), 100 s of sweeps with the workload's 1 ms TLB ticker (tktlbtick=1000) and
#: reclaim's traced runs: `validate kernel --scenario press-thp`, compared with 2 MiB pages
#: (docs/validation.md, section 1za)
PRESS_THP_RECORDING = Path(__file__).parent / "data" / "kernel_nbt_press_thp_612_tlbtick.json.gz"
#: a second boot with the ticker, without reclaim's tracepoints
PRESS_THP_RECORDING_TLBTICK_2 = Path(__file__).parent / "data" / "kernel_nbt_press_thp_612_tlbtick_2.json.gz"
#: the same without the TLB ticker (a cleared accessed bit of a page in QEMU's TLB stays clear
#: until the next switch of address spaces)
PRESS_THP_RECORDING_NO_TICKER = Path(__file__).parent / "data" / "kernel_nbt_press_thp_612.json.gz"
#: the workload's small VMAs that Linux's scanner walks, in pages (its mappings in a 2026-11-26
#: nbtpress run, ``TKREC_VMAS`` and ``TKREC_SKIP``: a static binary's data segment
#: 4c9000-4cf000, [heap] 36ed1000-36f14000, [vdso] 7f653b28e000-7f653b290000, [stack]
#: 7ffd31b7b000-7ffd31b9c000; its text and [vvar] are skipped as unsuitable); on the fast node,
#: never faulting in tiering mode, so "pid_inactive" after their first two passes
DATA_PAGES, HEAP_PAGES, VDSO_PAGES, STACK_PAGES = 6, 67, 2, 33
#: the four together: the workload's pages on node 0 besides its regions and the fill
SMALL_VMA_PAGES = DATA_PAGES + HEAP_PAGES + VDSO_PAGES + STACK_PAGES
#: the simulated thread's MLP (its compute per access is fitted to the guest's sweep rate)
MLP = 64
#: the steady state: the last this share of the time since the first sweep
STEADY_SHARE = 0.5


def check_press(rec: dict[str, Any], path: Path) -> None:
    """The nbtpress fields the comparison uses."""
    for key, kind in (("fill", dict), ("cold_node0", list), ("cold_touch_per_s", (int, float))):
        if not isinstance(rec.get(key), kind):
            raise ValidationError(f"{path}: {key}: missing or of the wrong type (not an nbtpress recording)")
    for key in ("node0_wmark_low", "node0_wmark_high", "node0_wmark_promo"):
        if key not in rec["meta"]:
            raise ValidationError(f"{path}: meta.{key}: missing (not an nbtpress recording)")


def kernel_timeline(rec: dict[str, Any]) -> pd.DataFrame:
    """The kernel's run: ``t_s`` since the process started, cumulative hint faults, promotion
    candidates, promotions and demotions (kswapd + direct), and each region's pages on node 0."""
    t0 = float(rec["process_start_s"])
    vm = pd.DataFrame(rec["vmstat"]).sort_values("t")
    base = vm.iloc[0]
    frame = pd.DataFrame(
        {
            "t_s": vm["t"] - t0,
            "hint_faults": vm["numa_hint_faults"] - base["numa_hint_faults"],
            "candidates": vm["pgpromote_candidate"] - base["pgpromote_candidate"],
            "promotions": vm["pgpromote_success"] - base["pgpromote_success"],
            "demotions": (vm["pgdemote_kswapd"] - base["pgdemote_kswapd"])
            + (vm["pgdemote_direct"] - base["pgdemote_direct"]),
        }
    )
    for key, col in (("hot_node0", "hot_fast_pages"), ("cold_node0", "cold_fast_pages")):
        reg = pd.DataFrame(rec[key], columns=["t", col]).sort_values("t")
        reg["t_s"] = reg["t"] - t0
        frame = pd.merge_asof(frame, reg[["t_s", col]], on="t_s", direction="backward")
    frame["hot_fast_pages"] = frame["hot_fast_pages"].fillna(0.0)
    frame["cold_fast_pages"] = frame["cold_fast_pages"].fillna(float(rec["cold_pages"]))
    return frame.reset_index(drop=True)


def scan_times(rec: dict[str, Any]) -> list[float]:
    """Times (s from the process start) of the kernel's scans of the workload: the samples where
    ``numa_pte_updates`` grew after a quiet sample (a scan's PTE updates land within one or two
    samples). Each is the window of a pass that scanned the hot and cold regions."""
    t0 = float(rec["process_start_s"])
    times, prev, quiet = [], None, True
    for s in sorted(rec["vmstat"], key=lambda v: v["t"]):
        grew = prev is not None and s["numa_pte_updates"] > prev["numa_pte_updates"]
        if grew and quiet:
            times.append(float(s["t"]) - t0)
        quiet = not grew
        prev = s
    return times


def scan_intervals(rec: dict[str, Any]) -> list[float]:
    """Seconds between the kernel's scans of the workload (:func:`scan_times`)."""
    return [round(b - a, 2) for a, b in itertools.pairwise(scan_times(rec))]


def pass_interval(times: list[float], steady_from: float) -> float:
    """The median time between passes that end in the steady state."""
    gaps = [b - a for a, b in itertools.pairwise(times) if b >= steady_from]
    return float(pd.Series(gaps).median()) if gaps else math.nan


def sim_pass_times(ts: pd.DataFrame) -> list[float]:
    """Times the simulated process's scanner finished a pass (``numa_scan_seq`` grew)."""
    seq = ts["numa_scan_seq.workload"]
    grew = seq.diff() > 0
    return [float(t) for t in ts["t_s"][grew]]


def _linux_wmarks(node_pages: int, total_pages: int, wsf: int) -> tuple[int, int]:
    """min and step of the simulator's Watermarks::linux (tierkit-policies lru.rs) with the kernel's own
    min_free_kbytes (the policies' default, ``min_free_kbytes=0``), 4 KiB pages."""
    total_kb = total_pages * PAGE // 1024
    min_free_kb = min(max(math.isqrt(total_kb * 16), 128), 262_144)
    min_total = min_free_kb * 1024 // PAGE
    wmin = min_total * node_pages // max(total_pages, 1)
    return wmin, max(wmin // 4, node_pages * wsf // 10_000)


def _before_sweep(rec: dict[str, Any]) -> dict[str, float] | None:
    """The last sample before the first hint fault of the sweeps: the fill done (the samples are
    not in step with the workload's own start line, which can come a sample before the fill's
    last pages), nothing promoted yet."""
    t = float(rec["sweep_start_s"])
    vm = sorted(rec["vmstat"], key=lambda v: float(v["t"]))
    at = [v for v in vm if float(v["t"]) <= t]
    if not at:
        return None
    base = at[-1]["numa_hint_faults"]
    last = at[-1]
    for v in vm[len(at) :]:
        if v["numa_hint_faults"] > base:
            break
        last = v
    return last


def _anon_lru(sample: dict[str, float]) -> float:
    """Node 0's anonymous LRU pages in a sample (inactive + active)."""
    return float(sample["n0_inactive_anon"]) + float(sample["n0_active_anon"])


def _node_room(rec: dict[str, Any]) -> int:
    """Node 0's free pages after the fill above the node's summed high watermark."""
    return int(rec["fill"]["node0_free_kb"]) // 4 - int(rec["meta"]["node0_wmark_high"])


def zone_room(rec: dict[str, Any]) -> tuple[int, int, int] | None:
    """Node 0 judged zone by zone, as the kernel does, for recordings with its zones (``TKREC_ZONE``
    and the per-sample ``n0_free_DMA``/``n0_free_DMA32``) and LRU sizes: (the pages promotions can
    take when the sweeps start before the node refuses them, DMA32's watermark step, the DMA
    zone's free pages over the sweeps, their median).

    The promotion path (``migrate_balanced_pgdat``) and kswapd (``pgdat_balanced``) accept the node
    when one zone passes its own watermark plus its ``lowmem_reserve`` for the allocation's zone
    (ZONE_MOVABLE); the small DMA zone's reserve (2899 pages) keeps most of its free pages out of
    reach: allocations take it down to its low watermark + reserve (2979), and there it stays,
    held by the pages that landed in it (2969-3051 pages over the 2026-11-28 recordings'
    sweeps). So the room is what DMA32 can give before its high watermark, not node 0's free
    pages above the node's summed high watermark, which counts the DMA zone's ~2.9K unreachable
    pages as room.

    Node 0's free pages and anon LRU sum to one count through the sweeps (within ~100 pages;
    promotion and demotion move a page between the two), but that count is larger than when the
    sweeps start, by 750 pages in one boot and 3600 in another (most likely free pages the fill
    left on the per-CPU page lists, which are not counted free, drained when reclaim starts; the
    recordings do not show the lists). So the room is
    that count over the sweeps (its median) less the LRU when they start, the DMA zone's
    settled free pages and DMA32's high watermark. None without the zones or LRU sizes."""
    zones = (rec.get("node0_zones") or {}).get("start") or {}
    main = zones.get("DMA32")
    fill = _before_sweep(rec)
    t = float(rec["sweep_start_s"])
    after = [v for v in rec["vmstat"] if float(v["t"]) >= t]
    dma = _dma_free_samples(rec)
    total = sorted(
        float(v["node0_free_kb"]) / 4 + _anon_lru(v)
        for v in after
        if "node0_free_kb" in v and "n0_inactive_anon" in v
    )
    if not main or fill is None or "n0_inactive_anon" not in fill or not dma or not total:
        return None
    high, low = int(main["high"]), int(main["low"])
    settled = round(dma[len(dma) // 2])
    room = round(total[len(total) // 2] - _anon_lru(fill)) - settled - high
    return room, high - low, settled


def foreign_pages(rec: dict[str, Any]) -> tuple[int, int]:
    """Anonymous pages on node 0's LRU that are not the workload's (other processes' memory and the
    guest's tmpfs root, whose files are swap-backed), for recordings with node 0's LRU sizes and
    the workload's reports: (their number when the sweeps start, the median over the sweeps).
    The first is the LRU at the last sample before the sweeps' first hint fault less the
    workload's pages then (the cold region less what kswapd had demoted, the pages promoted by
    then, the small VMAs: from /proc/vmstat, since the workload's first report can come after
    the first promotions); each later one the LRU less the workload's pages on node 0 at its
    latest report (cold and hot regions, small VMAs). Most go at kswapd's first run (2377 at
    the start of the fifth boot, about 590 two seconds later); the rest are in use (the
    sampling loop's programs run from the tmpfs root every 100 ms) and stay, fewer as the run
    goes on (150 after 600 s). (0, 0) without the sizes or the reports."""
    import bisect

    fill = _before_sweep(rec)
    hot, cold = rec.get("hot_node0") or [], rec.get("cold_node0") or []
    if fill is None or "n0_inactive_anon" not in fill or not hot or len(hot) != len(cold):
        return 0, 0
    small = SMALL_VMA_PAGES
    times = [float(h[0]) for h in hot]

    def theirs(v: dict[str, float]) -> float | None:
        i = bisect.bisect_right(times, float(v["t"])) - 1
        if i < 0 or "n0_inactive_anon" not in v:
            return None
        return _anon_lru(v) - float(hot[i][1]) - float(cold[i][1]) - small

    # the workload's pages on node 0 at the fill sample: the cold region as placed less what
    # kswapd demoted by then, and the hot pages promoted by then (none: the sample comes before
    # the sweeps' first hint fault). Not the first report's counts: on the boots with the TLB
    # ticker that report comes after the first promotions (3.5-5K hot pages on node 0), which
    # counted them as other processes' pages gone and left those out of the node
    first = min(rec["vmstat"], key=lambda v: float(v["t"]))

    def moved(keys: tuple[str, ...]) -> float:
        return sum(float(fill.get(k, 0)) - float(first.get(k, 0)) for k in keys)

    at_fill = (
        _anon_lru(fill)
        - (int(rec["cold_pages"]) - moved(("pgdemote_kswapd", "pgdemote_direct")))
        - moved(("pgpromote_success",))
        - small
    )
    t = float(rec["sweep_start_s"])
    later = sorted(x for v in rec["vmstat"] if float(v["t"]) > t and (x := theirs(v)) is not None)
    resident = later[len(later) // 2] if later else 0.0
    at_fill = max(round(at_fill), 0)
    return at_fill, min(max(round(resident), 0), at_fill)


def node0_accounting(rec: dict[str, Any]) -> dict[str, int] | None:
    """Node 0 zone by zone with the other processes' pages (:func:`zone_room`,
    :func:`foreign_pages`), for recordings with the zones; older ones (without them) keep the
    node's figures and leave those pages out (None). The figures comparison.json carries as
    ``node0_zones``."""
    zr = zone_room(rec)
    if zr is None:
        return None
    foreign, in_use = foreign_pages(rec)
    bar = dma_promotion_bar(rec)
    balance_bar = dma_balance_bar(rec)
    low = dma_free_min(rec)
    return {
        "room": zr[0],
        "dma32_step": zr[1],
        "dma_settled": zr[2],
        "node_room": _node_room(rec),
        "foreign": foreign,
        "foreign_in_use": in_use,
        "dma_promotion_bar": bar,
        "dma_above_bar": bar is not None and zr[2] > bar,
        "dma_balance_bar": balance_bar,
        "dma_free_min": low,
        "dma_balanced": balance_bar is not None and low is not None and low > balance_bar,
    }


def dma_balance_bar(rec: dict[str, Any]) -> int | None:
    """The DMA zone's bar in kswapd's pgdat_balanced at order 0 (mm/vmscan.c): its promo
    watermark (tiering mode) + its ``lowmem_reserve`` for ZONE_MOVABLE, the zone promotion
    failures wake kswapd for; ``zone_watermark_ok`` passes when the zone's free pages exceed it,
    and pgdat_balanced accepts the node when any eligible zone passes. None without the zones."""
    dma = _dma_zone(rec, "promo")
    return None if dma is None else int(dma["promo"]) + int(dma["protection"][3])


def dma_free_min(rec: dict[str, Any]) -> int | None:
    """The DMA zone's fewest free pages in any sample from the sweeps' start (None without the
    per-sample ``n0_free_DMA``)."""
    dma = _dma_free_samples(rec)
    return round(dma[0]) if dma else None


def _dma_free_samples(rec: dict[str, Any]) -> list[float]:
    """The DMA zone's free pages in each sample from the sweeps' start, fewest first (the
    per-sample ``n0_free_DMA``; empty without it)."""
    t = float(rec["sweep_start_s"])
    return sorted(float(v["n0_free_DMA"]) for v in rec["vmstat"] if float(v["t"]) >= t and "n0_free_DMA" in v)


def dma_promotion_bar(rec: dict[str, Any]) -> int | None:
    """The DMA zone's bar in the promotion path (``migrate_balanced_pgdat``: the zone passes when
    its free pages exceed its high watermark + the page's base pages + its ``lowmem_reserve``
    for ZONE_MOVABLE, the allocation's zone; mm/migrate.c and ``zone_watermark_ok``), from the
    zones the recording dumped at its start: a transparent huge page needs 512 pages above it
    where a base page needs one. Settled above it, the DMA zone lets promotions through until the main
    zone reaches its low watermark, which the simulated nbt takes from ``dma_zone_above_bar``
    (docs/validation.md, section 1h). None without the zones."""
    dma = _dma_zone(rec, "high")
    return None if dma is None else int(dma["high"]) + page_bytes(rec) // PAGE + int(dma["protection"][3])


def _dma_zone(rec: dict[str, Any], mark: str) -> dict[str, Any] | None:
    """Node 0's DMA zone as the recording dumped it at its start, when it has the watermark
    ``mark`` and a ``lowmem_reserve`` for ZONE_MOVABLE (None otherwise)."""
    dma = ((rec.get("node0_zones") or {}).get("start") or {}).get("DMA")
    if not dma or mark not in dma or len(dma.get("protection", [])) < 4:
        return None
    return dma


def pcp_summary(rec: dict[str, Any]) -> dict[str, float]:
    """Node 0's DMA32 pages on the per-CPU lists (free, but not counted free), for recordings that
    sampled them (``n0_pcp_DMA32``): their most before kswapd's first demotion (the fill leaves
    them there) and their median and most after it. Empty without the samples."""
    vm = sorted((v for v in rec["vmstat"] if "n0_pcp_DMA32" in v), key=lambda v: float(v["t"]))
    if not vm:
        return {}
    first = float(vm[0].get("pgdemote_kswapd", 0))
    cut = next((i for i, v in enumerate(vm) if float(v.get("pgdemote_kswapd", 0)) > first), len(vm))
    # vm[0] is before the first demotion by definition, so `before` is never empty
    out = {"before_first_reclaim_max": max(float(v["n0_pcp_DMA32"]) for v in vm[:cut])}
    after = sorted(float(v["n0_pcp_DMA32"]) for v in vm[cut:])
    if after:
        out["after_median"] = after[len(after) // 2]
        out["after_max"] = after[-1]
    return out


def fast_tier(rec: dict[str, Any]) -> tuple[int, int, int]:
    """The simulated fast tier (pages), its watermark_scale_factor and the free pages above its high
    watermark at the start: the workload's pages there (cold region + stacks), other processes'
    pages (:func:`foreign_pages`) + the free pages the guest left above node 0's high watermark
    (zone by zone where the recording has the zones, :func:`zone_room`) + the simulator's high
    watermark, whose step is the guest's (low - min = high - low = promo - high)."""
    return _fast_tier(rec, node0_accounting(rec))


def _fast_tier(rec: dict[str, Any], zones: dict[str, int] | None) -> tuple[int, int, int]:
    """:func:`fast_tier` with ``zones`` as :func:`node0_accounting` gave them."""
    meta = rec["meta"]
    slow = 1 << 18  # node 1: 1 GiB
    used = int(rec["cold_pages"]) + SMALL_VMA_PAGES + fill_pages(rec)
    if zones is None:
        step_guest = int(meta["node0_wmark_high"]) - int(meta["node0_wmark_low"])
        free_above_high = _node_room(rec)
        room = max(free_above_high, 0)
    else:
        step_guest, free_above_high = zones["dma32_step"], zones["room"]
        # below the high watermark at the start (zone by zone it can be), kswapd reclaims first
        room = free_above_high
        used += zones["foreign"]
    node, wsf = used + free_above_high + 2 * step_guest, 10
    for _ in range(20):
        wsf = min(max(round(step_guest * 10_000 / node), 1), 3000)
        wmin, step = _linux_wmarks(node, node + slow, wsf)
        node = used + room + wmin + 2 * step
    return node, wsf, free_above_high


def cpu_share(rec: Mapping[str, Any]) -> float:
    """The share of the guest's one vCPU the workload had from its first sweep to the end (its CPU
    ticks, ``wl_ticks``, over the wall time; the sampling loop and the emulation take the rest):
    Linux's scanner paces its windows by the task's CPU time. 1 when the recording lacks them."""
    hz = float(rec["meta"].get("hz", 100))
    pts = [(float(v["t"]), float(v["wl_ticks"])) for v in rec["vmstat"] if "wl_ticks" in v]
    pts = [p for p in sorted(pts) if p[0] >= float(rec["sweep_start_s"])]
    if len(pts) < 2 or pts[-1][0] <= pts[0][0]:
        return 1.0
    share = (pts[-1][1] - pts[0][1]) / hz / (pts[-1][0] - pts[0][0])
    return min(max(share, 0.01), 1.0)


def fill_pages(rec: dict[str, Any]) -> int:
    """The guest's mlocked fill of node 0, in pages."""
    return round(float(rec["fill"]["fill_mib"]) * 2**20 / PAGE)


def thread_fit(rec: dict[str, Any], fast_latency_ns: float) -> tuple[float, float]:
    """The simulated thread's compute per access (ns) and the cold region's share of its accesses,
    so that with the hot region on the fast tier (loaded latency ``fast_latency_ns``) it touches
    each hot page as often as the guest's sweeps did and the cold region at the measured rate:
    it runs at ``share * m / (L + m z)`` accesses a ns (docs/model.md)."""
    share = cpu_share(rec)
    hot_rate = float(rec["sweeps_per_s"]) * int(rec["hot_pages"]) * 1e-9  # per ns
    cold_rate = float(rec["cold_touch_per_s"]) * 1e-9
    total = hot_rate + cold_rate
    z = max((share * MLP / total - fast_latency_ns) / MLP, 0.0)
    return z, min(max(cold_rate / total, 1e-9), 0.5)


#: the guest kernel's tick (CONFIG_HZ=250): a running task is preempted at a tick once its
#: slice is used, so kswapd and the workload take turns of a tick on the one vCPU
GUEST_TICK_MS = 4.0


def guest_shares_cpu(rec: dict[str, Any]) -> bool:
    """Whether kswapd shared the workload's CPU in the recorded guest: it had one vCPU (the
    ``cpus`` of the meta line; recordings made before it was recorded booted with one)."""
    cpus = rec["meta"].get("cpus", "1")
    try:
        return int(cpus) == 1
    except (TypeError, ValueError) as e:
        raise ValidationError(f"recording meta: cpus={cpus!r}: expected a whole number of CPUs") from e


def kswapd_slice_ms(meta: dict[str, Any]) -> float | None:
    """kswapd's turns on the guest's vCPU, when they are not a tick: the workload's TLB ticker
    (``tlb_tick_us``) wakes more often than the tick, and each time it sleeps again EEVDF picks
    whichever of kswapd and the workload has the earlier deadline, so they alternate at the
    ticker's period (None: no ticker, the simulator's default turn of a tick)."""
    try:
        tick_us = float(meta.get("tlb_tick_us", 0) or 0)
    except (TypeError, ValueError) as e:
        raise ValidationError(
            f"recording meta: tlb_tick_us={meta.get('tlb_tick_us')!r}: expected the ticker's period in us"
        ) from e
    if tick_us <= 0 or tick_us / 1000.0 >= GUEST_TICK_MS:
        return None
    return tick_us / 1000.0


def sim_experiment(
    rec: dict[str, Any],
    policy_params: set[str],
    seed: int = 1,
    fast_latency_ns: float = 0.0,
    sweep_in_order: bool = False,
    kswapd_shares_cpu: bool | None = None,
) -> tuple[str, str]:
    """The recorded nbtpress run as a simulator experiment (TOML) and the ``nbt`` policy spec.
    ``sweep_in_order``: the hot region is swept in address order (``in_order``: a marked page
    faults when the pass reaches it, so promotions come in address order, as the guest's sweeps
    make them, and its accessed bits are set where the pass went); ``kswapd_shares_cpu``:
    kswapd takes turns with the workload on the guest's one vCPU, which makes no access in
    kswapd's turns (turns of a tick, or of the TLB ticker's period: :func:`kswapd_slice_ms`;
    docs/validation.md, sections 1g and 1z); None: as the recording's guest ran, sharing when it
    had one vCPU (:func:`guest_shares_cpu`)."""
    if kswapd_shares_cpu is None:
        kswapd_shares_cpu = guest_shares_cpu(rec)
    setup_s, end_s = run_span(rec)
    zones = node0_accounting(rec)
    node, wsf, _ = _fast_tier(rec, zones)
    rate = float(rec["cold_touch_per_s"])
    extra = [f"watermark_scale_factor={wsf}"] if "watermark_scale_factor" in policy_params else []
    if kernel_lru(rec) != "classic" and "lru_gen" in policy_params:
        # the simulated reclaim runs the kernel's LRU: the multi-gen one unless it was off
        extra.append("lru_gen=true")
    if zones and zones["dma_above_bar"] and "dma_zone_above_bar" in policy_params:
        # the guest's DMA zone settled above its bar in migrate_balanced_pgdat: promotions went
        # on below DMA32's high watermark (docs/validation.md, section 1h)
        extra.append("dma_zone_above_bar=true")
    if zones and zones["dma_balanced"] and "dma_zone_balanced" in policy_params:
        # the guest's DMA zone stayed above its bar in pgdat_balanced at order 0 through the
        # sweeps (the huge-page boots: huge pages never come from it): kswapd's runs for a huge
        # page ended once their order dropped to 0 (docs/validation.md, section 1zd)
        extra.append("dma_zone_balanced=true")
    extra += guest_wake_delay(rec["meta"], policy_params)
    spec = nbt_spec(rec["meta"], policy_params, *extra)
    share = cpu_share(rec)
    compute_ns, cold_weight = thread_fit(rec, fast_latency_ns)
    foreign, resident = (zones["foreign"], zones["foreign_in_use"]) if zones else (0, 0)
    base = page_bytes(rec) // PAGE
    pages = _object_pages(rec, base, foreign, resident)
    node_sim = round(node / base)

    vma = "separate_vma = true\n"
    # on huge pages the small VMAs are a huge page each, mlocked so that reclaim does not find
    # 4 huge pages where the guest's kswapd found 108 small ones (see _object_pages)
    small_vma = vma + ("mlocked = true\n" if base > 1 else "")

    def obj(name: str, tier: str, more: str = vma) -> str:
        return f"""[[process.object]]
name = "{name}"
size_bytes = {pages[name] * base * PAGE}
tier = "{tier}"
{more}"""

    source = rec.get("source", "a recording")
    order = (
        ("data", "fast", small_vma),
        ("heap", "fast", small_vma),
        ("fill", "fast", "pinned = true\n"),
        ("cold", "fast", vma),
        ("hot", "slow", ""),
        ("vdso", "fast", small_vma),
        ("stack", "fast", small_vma),
    )
    objects = "".join(obj(name, tier, more) for name, tier, more in order if name in pages)
    # other processes' anonymous pages on node 0 (the guest's shells and tmpfs root) in a process
    # of their own, which Linux's scanner rarely walks (it walks a task's VMAs from its own
    # ticks): the ones in use touched about 10 times a second each, the rest never
    per_s = 10.0 * max(resident, 1)
    idle_obj = obj("idle", "fast") if "idle" in pages else ""
    in_use_obj = obj("in_use", "fast") if "in_use" in pages else ""
    others = (
        f"""
# other processes' anonymous pages on node 0 when the sweeps start ({foreign} pages; {resident}
# of them still there at the median of the run)
[[process]]
name = "others"
cpu_share = 0.01
{idle_obj}{in_use_obj}[[process.thread]]
count = 1
[[process.thread.phase]]
mlp = 1
compute_ns = {max(0.01 / per_s * 1e9 - 100.0, 0.0):.1f}
[[process.thread.phase.access]]
object = "{"in_use" if resident else "idle"}"
pattern = "uniform"
"""
        if foreign > 0
        else ""
    )
    slice_ms = kswapd_slice_ms(rec["meta"])
    turns = f"kswapd_slice_ms = {slice_ms:g}\n" if kswapd_shares_cpu and slice_ms is not None else ""
    text = f"""# generated by `tierkit validate kernel --scenario press` from {source}
workload = "custom"
name = "validate-kernel-nbt-press"
platform = "icx-numa"
duration_s = {end_s:.3f}
fast_tier_gb = {node_sim * base * PAGE / 2**30:.6f}
slow_tier_gb = 1
page_size = "{"2MiB" if base > 1 else "4KiB"}"
report_interval_ms = 100
seed = {seed}
# kswapd shares the guest's one vCPU with the workload (true), or runs on a vCPU of its own
kswapd_shares_cpu = {str(kswapd_shares_cpu).lower()}
{turns}
# the guest's workload: its writable VMAs in address order (the scanner's order)
[[process]]
name = "workload"
cpu_share = {share:.3f}
{objects}[[process.thread]]
count = 1
# the setup (first touch and the fill) until the guest's first sweep: on its stack
{setup_phase(setup_s)}# sweeps of the hot region, and the cold touches at the measured rate ({rate:.0f}/s)
[[process.thread.phase]]
mlp = {MLP}
compute_ns = {compute_ns:.4g}
[[process.thread.phase.access]]
object = "hot"
weight = {1 - cold_weight:.9g}
pattern = "uniform"
in_order = {str(sweep_in_order).lower()}
[[process.thread.phase.access]]
object = "cold"
weight = {cold_weight:.9g}
pattern = "uniform"
{others}"""
    return text, spec


def _object_pages(rec: dict[str, Any], base: int, foreign: int, resident: int) -> dict[str, int]:
    """The simulated objects' sizes in simulated pages of ``base`` 4 KiB pages: the workload's
    (data, heap, fill, cold, hot, vdso, stack) and the other processes' (idle, in_use; none when
    they have no pages). On transparent huge pages (``base`` 512: the simulator has one page size)
    each of the workload's small VMAs (data, heap, vdso, stack: 108 pages in all) is one huge
    page, mlocked by :func:`sim_experiment`: a VMA of its own, so that Linux's scanner spends a
    forced window on each as the guest's did (they never fault: ``vma_is_accessed``), and off
    reclaim's lists, whose 4 KiB pages the guest's kswapd could have demoted but which would be
    4 huge pages of room here; the other processes' pages are as many huge pages as they fill.
    The pinned fill gives up what these take beyond their 4 KiB pages, so node 0 holds as much
    as the guest's did, to the nearest huge page."""
    others = {"idle": foreign - resident, "in_use": resident}
    others = {k: v for k, v in others.items() if v > 0}
    cold, hot, fill = int(rec["cold_pages"]), int(rec["hot_pages"]), fill_pages(rec)
    small = {"data": DATA_PAGES, "heap": HEAP_PAGES, "vdso": VDSO_PAGES, "stack": STACK_PAGES, **others}
    if base == 1:
        return {**small, "fill": fill, "cold": cold, "hot": hot}
    sized = {k: max(1, round(v / base)) for k, v in small.items()}
    on_fast = sum(small.values()) + fill + cold
    sized["fill"] = round(on_fast / base) - sum(sized.values()) - cold // base
    if sized["fill"] < 1:
        raise ValidationError(
            f"{rec.get('source', 'the recording')}: node 0's fill is too small to hold the small objects"
            " on whole huge pages"
        )
    return {**sized, "cold": cold // base, "hot": hot // base}


def sim_timeline(ts: pd.DataFrame, base_pages: int = 1) -> pd.DataFrame:
    """The simulated run in the kernel timeline's columns (cumulative counts). ``base_pages``: 4 KiB
    pages to one simulated page (512 on transparent huge pages): promotions, demotions and the
    regions' pages count 4 KiB pages, as pgpromote_success, pgdemote_kswapd and move_pages do;
    hint faults count faults (one per huge page in both)."""
    return pd.DataFrame(
        {
            "t_s": ts["t_s"],
            "hint_faults": ts["hint_faults"].cumsum() if "hint_faults" in ts else math.nan,
            "candidates": math.nan,
            "promotions": ts["promotions"].cumsum() * base_pages,
            "demotions": ts["demotions"].cumsum() * base_pages,
            "hot_fast_pages": ts["object_fast_pages.workload.hot"] * base_pages,
            "cold_fast_pages": ts["object_fast_pages.workload.cold"] * base_pages,
        }
    )


def reclaim_figure(rec: dict[str, Any], ts: pd.DataFrame, path: Path) -> bool:
    """reclaim.png: node 0's anonymous LRU lists and kswapd's scans and activations in the kernel
    (recordings with reclaim's counters) beside the simulated fast tier's (the policy's
    ``policy.lru_fast_*`` and ``policy.kswapd_*`` series). False, and nothing written, when the
    recording or the run lacks them."""
    from matplotlib.figure import Figure

    from tierkit.output import save_figure

    vm = pd.DataFrame(rec["vmstat"]).sort_values("t")
    need_k = ("n0_inactive_anon", "n0_active_anon", "pgscan_kswapd", "pgactivate")
    need_s = ("policy.lru_fast_inactive", "policy.lru_fast_active", "policy.kswapd_scanned")
    if not all(k in vm for k in need_k) or not all(c in ts for c in need_s):
        return False
    kt = vm["t"] - float(rec["process_start_s"])
    fig = Figure(figsize=(8, 6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    top.set_title("reclaim: the fast node's LRU lists and kswapd", fontsize=10)
    top.set_ylabel("pages on the list")
    bottom.set_xlabel("seconds since the process started")
    for ax in (top, bottom):
        ax.grid(True, alpha=0.3)
    top.plot(kt, vm["n0_inactive_anon"], label="inactive: Linux (node 0 anon)", linewidth=1.2)
    top.plot(kt, vm["n0_active_anon"], label="active: Linux (node 0 anon)", linewidth=1.2)
    top.plot(ts["t_s"], ts["policy.lru_fast_inactive"], label="inactive: tierkit", linestyle="--")
    top.plot(ts["t_s"], ts["policy.lru_fast_active"], label="active: tierkit", linestyle="--")
    top.legend(fontsize=7)
    for col, key, what in (
        ("pgscan_kswapd", "policy.kswapd_scanned", "scanned"),
        ("pgactivate", "policy.kswapd_activated", "activated"),
    ):
        bottom.plot(kt, vm[col] - vm[col].iloc[0], label=f"{what}: Linux", linewidth=1.2)
        if key in ts:
            bottom.plot(ts["t_s"], ts[key], label=f"{what}: tierkit", linestyle="--")
    bottom.set_ylabel("pages (cumulative)")
    bottom.legend(fontsize=7)
    save_figure(fig, path)
    return True


def generations_figure(
    kernel: Sequence[tuple[float, list[int]]],
    sim: Sequence[tuple[float, list[int]]],
    kernel_wakes: Sequence[float],
    sim_wakes: Sequence[float],
    path: Path,
) -> bool:
    """generations.png: node 0's multi-gen generations through the run, the kernel's (a
    ``tkgens=1`` recording) above the model's, each stacked youngest first, with kswapd's wakes
    marked. False, and nothing written, without both."""
    from matplotlib.figure import Figure

    from tierkit.output import save_figure

    if not kernel or not sim:
        return False
    fig = Figure(figsize=(8, 6), layout="constrained")
    axes = fig.subplots(2, 1, sharex=True, sharey=True)
    names = ("youngest", "2nd youngest", "3rd youngest", "oldest of 4")
    for ax, (who, gens, wakes) in zip(
        axes, (("Linux (guest)", kernel, kernel_wakes), ("tierkit nbt", sim, sim_wakes)), strict=True
    ):
        t = [x for x, _ in gens]
        layers = [[g[k] if k < len(g) else 0 for _, g in gens] for k in range(4)]
        ax.stackplot(t, layers, labels=names, step="post", alpha=0.85)
        for w in wakes:
            ax.axvline(w, color="black", linewidth=0.4, alpha=0.4)
        ax.set_title(f"{who}: node 0's generations (kswapd's wakes as lines)", fontsize=10)
        ax.set_ylabel("pages")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper right")
    axes[1].set_xlabel("seconds since the process started")
    save_figure(fig, path)
    return True


def sim_scan_periods(ts: pd.DataFrame) -> dict[str, list[float]]:
    """Each simulated process's Linux scan period (ms) in turn: the distinct values of its
    ``numa_scan_period_ms.NAME`` column, in order."""
    out: dict[str, list[float]] = {}
    for col in ts.columns:
        if not col.startswith("numa_scan_period_ms."):
            continue
        vals: list[float] = []
        for v in ts[col].dropna():
            if not vals or float(v) != vals[-1]:
                vals.append(float(v))
        out[col.split(".", 1)[1]] = vals
    return out


def metrics(frame: pd.DataFrame, rec: dict[str, Any]) -> dict[str, float]:
    """The compared figures of one timeline. Steady state: the last half of the time since the
    first sweep. Churn: pages promoted and demoted again in the steady state, min(promotions,
    demotions) of the window (its net change of the regions' node-0 pages is the difference)."""
    hot, cold = int(rec["hot_pages"]), int(rec["cold_pages"])
    sweep = float(rec["sweep_start_s"]) - float(rec["process_start_s"])
    end = float(frame["t_s"].iloc[-1])
    a = sweep + (1 - STEADY_SHARE) * (end - sweep)
    win = frame[frame["t_s"] >= a]
    span = float(win["t_s"].iloc[-1] - win["t_s"].iloc[0]) if len(win) > 1 else math.nan

    def rate(col: str) -> float:
        return float(win[col].iloc[-1] - win[col].iloc[0]) / span if span and span > 0 else math.nan

    prom, dem = rate("promotions"), rate("demotions")
    churn = min(prom, dem)
    hit = frame[frame["hot_fast_pages"] >= 0.9 * hot]
    return {
        "promotions_per_s": prom,
        "demotions_per_s": dem,
        "hint_faults_per_s": rate("hint_faults"),
        "churn_per_s": churn,
        "churn_share": churn / prom if prom > 0 else math.nan,
        "hot_fast_share": float(win["hot_fast_pages"].mean()) / hot,
        "cold_fast_share": float(win["cold_fast_pages"].mean()) / cold,
        "t90_s": float(hit["t_s"].iloc[0]) if len(hit) else math.nan,
        "promotions": float(frame["promotions"].iloc[-1]),
        "demotions": float(frame["demotions"].iloc[-1]),
        "steady_from_s": a,
    }


COMPARED = ("promotions_per_s", "demotions_per_s", "churn_per_s", "hot_fast_share", "cold_fast_share")
LABELS = {
    "promotions_per_s": "promotions per second (steady state)",
    "demotions_per_s": "demotions per second (steady state, kswapd + direct)",
    "churn_per_s": "churn: pages promoted and demoted again per second (steady state)",
    "churn_share": "share of the steady state's promotions demoted again",
    "hint_faults_per_s": "hint faults per second (steady state)",
    "hot_fast_share": "share of the hot region on the fast tier (steady-state mean)",
    "cold_fast_share": "share of the cold region on the fast tier (steady-state mean)",
    "t90_s": "time to 90% of the hot region on the fast tier (s from process start)",
    "pass_interval_s": "time between the scanner's passes over the process (s, steady-state median)",
    "promotions": "promotions (total)",
    "demotions": "demotions (total)",
}


#: the simulated kswapd's figures (nbt's policy stats) shown beside the kernel's reclaim counters
SIM_RECLAIM = (
    "kswapd_wakeups",
    "kswapd_scanned",
    "kswapd_kept",
    "kswapd_activated",
    "kswapd_deactivated",
    "kswapd_gave_up",
    "kswapd_agings",
    "kswapd_sorted",
    "kswapd_rmap_tested",
    "kswapd_kept_referenced",
    "kswapd_runs",
    "kswapd_evict_batches",
    "kswapd_evict_batches_few",
    "kswapd_evict_batches_most",
    "kswapd_walk_leaf_total",
    "kswapd_walk_leaf_young",
    "kswapd_walk_nonleaf_found",
    "kswapd_walk_nonleaf_added",
)


def kernel_lru(rec: dict[str, Any]) -> str:
    """The guest kernel's LRU: ``multi-gen``, ``classic`` or ``not recorded`` (recordings made
    before it was recorded, on Debian's 6.12, ran the multi-gen LRU)."""
    raw = str(rec["meta"].get("lru_gen", ""))
    try:
        return "classic" if int(raw, 0) == 0 else "multi-gen"
    except ValueError:
        return "not recorded"


def _spec_flag(spec: str, name: str) -> bool:
    """Whether a policy spec sets boolean parameter ``name`` on."""
    _, params = spec_params(spec)
    return params.get(name, "false").lower() in ("true", "1", "yes", "on")


def sim_lru(spec: str) -> str:
    """The LRU the simulated ``nbt`` of a policy spec runs: ``multi-gen`` or ``classic``."""
    return "multi-gen" if _spec_flag(spec, "lru_gen") else "classic"


def reclaim_side_by_side(
    rec: dict[str, Any], summary: dict[str, Any]
) -> tuple[str, dict[str, float], dict[str, float]]:
    """The guest kernel's LRU (:func:`kernel_lru`), its reclaim counters over the run with the
    last time kswapd ran (when the recording has them), and the simulated kswapd's."""
    from tierkit.validate import RECLAIM_KEYS

    lru = kernel_lru(rec)
    vm = rec["vmstat"]
    kernel: dict[str, float] = {}
    if all(k in vm[0] and k in vm[-1] for k in ("pgscan_kswapd", "pageoutrun")):
        for key in RECLAIM_KEYS:
            if not key.startswith("n0_") and key in vm[0] and key in vm[-1]:
                kernel[key] = float(vm[-1][key] - vm[0][key])
        t0 = float(rec["process_start_s"])
        ran = [i for i in range(1, len(vm)) if vm[i]["pageoutrun"] > vm[i - 1]["pageoutrun"]]
        kernel["kswapd_last_ran_s"] = float(vm[ran[-1]]["t"]) - t0 if ran else float("nan")
        kernel["run_end_s"] = float(vm[-1]["t"]) - t0
    agings = rec.get("kprobe_times", {}).get("try_to_inc_max_seq")
    if agings is not None:
        # the multi-gen LRU's agings (try_to_inc_max_seq: one max_seq increment each, node 0's
        # and node 1's), and the bursts they come in (agings less than a second apart)
        kernel["kswapd_agings"] = float(len(agings))
        kernel["kswapd_aging_bursts"] = float(aging_bursts(agings))
    calls = rec.get("kprobe_calls", {})
    if calls.get("lru_gen_look_around") and "pgscan_kswapd" in kernel:
        # every folio multi-gen eviction tests goes through folio_referenced_one to
        # lru_gen_look_around (one call each, young or not); the isolated folios it does not
        # test were kept because a look-around earlier in their batch found them young
        # (PG_referenced, "folio_update_gen() tried to promote this page?")
        kernel["rmap_tested"] = float(calls["lru_gen_look_around"])
        kernel["kept_referenced"] = kernel["pgscan_kswapd"] - kernel["rmap_tested"]
    batches = rec.get("kswapd_trace", {}).get("batches")
    if batches and lru == "multi-gen":
        kernel.update(eviction_batches(batches))
    walks = rec.get("lru_gen_walks", {}).get("0")
    if walks:
        # node 0's aging walks over the run (lru_gen_full's mm_stats: PTEs read and found young,
        # page-table pages found in the Bloom filter and added to it)
        for key, value in walks.items():
            kernel[f"walk_{key}"] = float(value)
    ctxt = rec.get("workload_ctxt_switches")
    if ctxt:
        # how often the workload's task was switched in (each marks its mm for the next walk)
        n = ctxt["voluntary_ctxt_switches"] + ctxt["nonvoluntary_ctxt_switches"]
        life = ctxt["t"] - float(rec["process_start_s"])
        kernel["workload_switch_in_ms"] = 1e3 * life / n if n else float("nan")
    stats = summary.get("policy_stats", {})
    sim = {k: float(stats[k]) for k in SIM_RECLAIM if k in stats}
    sim["demotions"] = float(summary.get("demotions", 0))
    return lru, kernel, sim


def eviction_batches(batches: Sequence[Sequence[float]]) -> dict[str, float]:
    """The kernel's multi-gen eviction batches (the traced inactive-list shrinks, one per
    evict_folios; ``KSWAPD_BATCH_COLUMNS``): how many, how many reclaimed fewer than 8 pages
    (kept nearly whole) and at least 56 (reclaimed nearly whole), and the longest run of
    consecutive batches that reclaimed nothing with when it began (trace clock, s)."""
    few = sum(1 for b in batches if b[2] < 8)
    most = sum(1 for b in batches if b[2] >= 56)
    longest, start, run, run_start = 0, float("nan"), 0, 0.0
    for b in batches:
        if b[2] == 0:
            if run == 0:
                run_start = float(b[0])
            run += 1
            if run > longest:
                longest, start = run, run_start
        else:
            run = 0
    return {
        "evict_batches": float(len(batches)),
        "evict_batches_few": float(few),
        "evict_batches_most": float(most),
        "evict_kept_run_longest": float(longest),
        "evict_kept_run_longest_at_s": start,
    }


def burst_starts(times: Sequence[float], gap_s: float = 1.0) -> list[float]:
    """The first of each burst in a sorted list of event times (s): an event less than ``gap_s``
    after the one before belongs to its burst."""
    return [t for i, t in enumerate(times) if i == 0 or t - times[i - 1] >= gap_s]


def aging_bursts(times: Sequence[float], gap_s: float = 1.0) -> int:
    """How many bursts a sorted list of aging times (s) makes: agings less than ``gap_s`` after
    the one before belong to its burst (kswapd ages several times in one run)."""
    return len(burst_starts(times, gap_s))


def rows_grew(ts: pd.DataFrame, col: str) -> list[float]:
    """The report rows' times (``t_s``) at which the cumulative series ``col`` grew (the first
    row counts its own value)."""
    return [float(t) for t in ts["t_s"][ts[col].diff().fillna(ts[col]) > 0]]


def sim_aging_bursts(ts: pd.DataFrame, gap_s: float = 1.0) -> int | None:
    """The simulated kswapd's aging bursts, from its cumulative `policy.kswapd_agings` series
    (report rows where it grew, a burst per run of rows less than ``gap_s`` apart)."""
    col = "policy.kswapd_agings"
    if col not in ts.columns:
        return None
    return aging_bursts(rows_grew(ts, col), gap_s)


#: MIN_NR_GENS (include/linux/mmzone.h): the generations eviction needs before it can evict.
MIN_NR_GENS = 2


def kernel_generations(rec: dict[str, Any]) -> list[tuple[float, list[int]]]:
    """Node 0's multi-gen generations through the run (a ``tkgens=1`` recording): per sample its
    time (s since the process started) and the pages of each generation, youngest first (anon
    and file, as should_run_aging counts them), of the memory cgroup with the most pages there.
    Empty without the samples."""
    tr = rec.get("lru_gen_trace")
    if not tr or not tr.get("rows"):
        return []
    col = {c: i for i, c in enumerate(tr["columns"])}
    t0 = float(rec["process_start_s"])
    by_sample: dict[float, dict[int, list[tuple[int, int]]]] = {}
    for r in tr["rows"]:
        memcgs = by_sample.setdefault(float(r[col["t"]]), {})
        memcgs.setdefault(int(r[col["memcg"]]), []).append(
            (int(r[col["seq"]]), int(r[col["anon"]]) + int(r[col["file"]]))
        )
    out = []
    for t, memcgs in sorted(by_sample.items()):
        gens = max(memcgs.values(), key=lambda g: sum(n for _, n in g))
        out.append((t - t0, [n for _, n in sorted(gens, reverse=True)]))
    return out


def sim_generations(ts: pd.DataFrame) -> list[tuple[float, list[int]]]:
    """The simulated fast tier's generations per report row, youngest first (the
    ``policy.lru_fast_gens`` and ``policy.lru_fast_gen<k>`` series; empty without them)."""
    if "policy.lru_fast_gens" not in ts.columns:
        return []
    cols = [f"policy.lru_fast_gen{k}" for k in range(4)]
    out = []
    for row in ts[["t_s", "policy.lru_fast_gens", *cols]].itertuples(index=False):
        if math.isnan(row[1]):
            continue
        n = int(row[1])
        out.append((float(row[0]), [int(v) for v in row[2 : 2 + min(n, 4)]]))
    return out


def must_age_first(gens: Sequence[int]) -> bool:
    """should_run_aging (mm/vmscan.c, Linux 6.12) on generations given youngest first: with
    fewer than MIN_NR_GENS + 1 eviction is impossible; with exactly that many the tier ages when
    the youngest holds more than half the pages or the oldest less than a quarter."""
    if len(gens) < MIN_NR_GENS + 1:
        return True
    if len(gens) > MIN_NR_GENS + 1:
        return False
    total = sum(gens)
    return gens[0] * MIN_NR_GENS > total or gens[-1] * (MIN_NR_GENS + 2) < total


def wake_generations(
    gens: Sequence[tuple[float, list[int]]], wakes: Sequence[float], quiet_s: float = 1.0
) -> dict[str, float]:
    """The generations kswapd found when it woke after a quiet spell (no run in the ``quiet_s``
    before): at each such wake the last sample before it, and over those wakes how many had
    two, three and four generations, how many should_run_aging sends to aging before any
    eviction (:func:`must_age_first`), and the oldest and youngest generations' mean shares.
    Also the share of all samples with four generations. Empty without samples or wakes."""
    if not gens or not wakes:
        return {}
    times = [t for t, _ in gens]
    found = []
    for w in burst_starts(wakes, quiet_s):
        j = bisect.bisect_right(times, w + 1e-9) - 1
        if j >= 0 and sum(gens[j][1]) > 0:
            found.append(gens[j][1])
    if not found:
        return {}
    return {
        "quiet_wakes": float(len(found)),
        "quiet_wakes_2_gens": float(sum(1 for g in found if len(g) <= 2)),
        "quiet_wakes_3_gens": float(sum(1 for g in found if len(g) == 3)),
        "quiet_wakes_4_gens": float(sum(1 for g in found if len(g) >= 4)),
        "quiet_wakes_aging_first": float(sum(1 for g in found if must_age_first(g))),
        "quiet_wakes_oldest_share": sum(g[-1] / sum(g) for g in found) / len(found),
        "quiet_wakes_youngest_share": sum(g[0] / sum(g) for g in found) / len(found),
        "samples_4_gens_share": sum(1 for _, g in gens if len(g) >= 4) / len(gens),
    }


def generation_lines(kernel: dict[str, float], sim: dict[str, float]) -> list[str]:
    """The report's lines on the generations kswapd found at its wakes (:func:`wake_generations`;
    none without a ``tkgens=1`` recording)."""
    if not kernel:
        return []

    def one(g: dict[str, float]) -> str:
        if not g:
            return "no wake after a quiet spell"
        return (
            f"{g['quiet_wakes']:.0f} wakes after a quiet spell, finding 2/3/4 generations "
            f"{g['quiet_wakes_2_gens']:.0f}/{g['quiet_wakes_3_gens']:.0f}/"
            f"{g['quiet_wakes_4_gens']:.0f} times (the oldest {g['quiet_wakes_oldest_share']:.0%} "
            f"and the youngest {g['quiet_wakes_youngest_share']:.0%} of the pages on average), "
            f"{g['quiet_wakes_aging_first']:.0f} of them in a state should_run_aging ages before "
            f"it evicts; four generations in {g['samples_4_gens_share']:.0%} of the samples"
        )

    return [
        "",
        "Node 0's multi-gen generations when kswapd woke after a second or more without a run "
        "(tkgens=1: /sys/kernel/debug/lru_gen every sample; the model's `policy.lru_fast_gen*` "
        f"series): kernel {one(kernel)}; model {one(sim)}.",
    ]


def look_around_summary(rec: dict[str, Any], quiet_s: float = 1.0) -> dict[str, float]:
    """Where the pages multi-gen eviction tested lay (a ``tklaaddr=1`` recording): over the run
    and in the batches that led each wake after a quiet spell (from the wake to the first batch
    that reclaimed), how many were tested, the shares in the hot and the cold region and found
    young, and the share of tests whose page lies 1-64 pages above the one tested before it (a
    batch of address neighbours in order, tested once per look-around). Empty without them."""
    la = rec.get("look_around")
    if not la or not la.get("rows") or "hot_addr" not in rec or "cold_addr" not in rec:
        return {}
    rows = la["rows"]
    hot = (int(rec["hot_addr"]), int(rec["hot_addr"]) + int(rec["hot_pages"]) * PAGE)
    cold = (int(rec["cold_addr"]), int(rec["cold_addr"]) + int(rec["cold_pages"]) * PAGE)

    def shares(sel: Sequence[Sequence[float]], prefix: str) -> dict[str, float]:
        n = len(sel)
        if n == 0:
            return {f"{prefix}tested": 0.0}
        steps = sum(1 for a, b in itertools.pairwise(sel) if 0 < (int(b[1]) - int(a[1])) // PAGE <= 64)
        return {
            f"{prefix}tested": float(n),
            f"{prefix}hot_share": sum(1 for r in sel if hot[0] <= r[1] < hot[1]) / n,
            f"{prefix}cold_share": sum(1 for r in sel if cold[0] <= r[1] < cold[1]) / n,
            f"{prefix}young_share": sum(1 for r in sel if r[2]) / n,
            f"{prefix}in_order_share": steps / max(n - 1, 1),
        }

    out = shares(rows, "")
    tr = rec.get("kswapd_trace", {})
    runs = [float(r[0]) for r in tr.get("runs", [])]
    batches = tr.get("batches", [])
    lead: list[Sequence[float]] = []
    for w in burst_starts(runs, quiet_s):
        first = next((float(b[0]) for b in batches if b[0] >= w and b[2] > 0), math.inf)
        lead.extend(r for r in rows if w <= r[0] < first)
    out.update(shares(lead, "quiet_lead_"))
    return out


def pcp_lines(pcp: dict[str, float]) -> list[str]:
    """The report's line on node 0's per-CPU lists (:func:`pcp_summary`; none without them)."""
    if not pcp:
        return []
    after = (
        f"; after it {pcp['after_median']:.0f} at the median and {pcp['after_max']:.0f} at most"
        if "after_median" in pcp
        else "; kswapd never demoted"
    )
    return [
        "",
        "Node 0's DMA32 pages on the per-CPU lists (free, but not counted free; not modelled): "
        f"{pcp['before_first_reclaim_max']:.0f} at most before kswapd's first demotion{after}.",
    ]


def look_around_lines(la: dict[str, float]) -> list[str]:
    """The report's line on where the kernel's tested pages lay (:func:`look_around_summary`;
    none without a ``tklaaddr=1`` recording)."""
    if not la:
        return []
    lead = (
        f"; in the batches that led its wakes after a quiet spell, up to the first that "
        f"reclaimed, {la['quiet_lead_tested']:.0f} tests, {la['quiet_lead_hot_share']:.0%} of "
        f"them in the hot region, {la['quiet_lead_cold_share']:.0%} in the cold one, "
        f"{la['quiet_lead_young_share']:.0%} young and {la['quiet_lead_in_order_share']:.0%} "
        "1-64 pages above the page tested before"
        if la.get("quiet_lead_tested")
        else ""
    )
    return [
        "",
        f"Pages the kernel's multi-gen eviction tested (tklaaddr=1: lru_gen_look_around's address): "
        f"{la['tested']:.0f}, {la['hot_share']:.0%} in the hot region and {la['cold_share']:.0%} "
        f"in the cold one, {la['young_share']:.0%} young, {la['in_order_share']:.0%} 1-64 pages "
        f"above the page tested before{lead}.",
    ]


def kernel_wakes(rec: dict[str, Any]) -> list[float]:
    """When the kernel's kswapd woke (mm_vmscan_kswapd_wake, s since the process started)."""
    tr = rec.get("kswapd_trace")
    if not tr or not tr.get("runs"):
        return []
    i = tr["columns"].index("t")
    t0 = float(rec["process_start_s"])
    return [float(r[i]) - t0 for r in tr["runs"]]


def sim_wakes(ts: pd.DataFrame) -> list[float]:
    """When the simulated kswapd began runs: the report rows where ``policy.kswapd_runs`` grew
    (the row's time less one report interval: the run began within it)."""
    col = "policy.kswapd_runs"
    if col not in ts.columns or len(ts) < 2:
        return []
    step = float(ts["t_s"].iloc[1] - ts["t_s"].iloc[0])
    return [t - step for t in rows_grew(ts, col)]


#: MAX_RECLAIM_RETRIES (mm/internal.h): kswapd runs that reclaim nothing before the node is
#: "hopeless" (pgdat->kswapd_failures; wakeup_kswapd and prepare_kswapd_sleep then return early).
MAX_RECLAIM_RETRIES = 16


def kswapd_trace_summary(rec: dict[str, Any]) -> dict[str, float]:
    """What the traced kswapd runs of a recording (``tkvmscan=1``) show: how many ran and when
    (seconds since the process started), the failing runs at the end (balance_pgdat counts a run
    that reclaimed nothing in kswapd_failures; MAX_RECLAIM_RETRIES of them in a row stop kswapd),
    and whether it aged the active list at all (shrink_active_list). Empty without a trace."""
    tr = rec.get("kswapd_trace")
    if not tr or not tr.get("runs"):
        return {}
    col = {c: i for i, c in enumerate(tr["columns"])}
    runs = tr["runs"]
    t0 = float(rec["process_start_s"])
    longest = streak = 0
    for r in runs:
        streak = streak + 1 if r[col["reclaimed"]] == 0 else 0
        longest = max(longest, streak)
    trailing = streak  # the streak the last run ended
    total = {c: float(sum(r[col[c]] for r in runs)) for c in tr["columns"][1:7]}
    return {
        "runs": float(len(runs)),
        "first_run_s": float(runs[0][col["t"]]) - t0,
        "last_run_s": float(runs[-1][col["t"]]) - t0,
        "trailing_runs_reclaiming_nothing": float(trailing),
        "longest_streak_reclaiming_nothing": float(longest),
        "gave_up": float(trailing >= MAX_RECLAIM_RETRIES),
        **total,
        "wakeups": float(tr["events"].get("wakeup_kswapd", 0)),
    }


def reclaim_lines(
    lru: str,
    kernel: dict[str, float],
    sim: dict[str, float],
    traced: dict[str, float] | None = None,
    simulated: str = "classic",
) -> list[str]:
    """The report's paragraph on reclaim (docs/validation.md, sections 1d and 1e)."""
    what = {
        "multi-gen": "the multi-gen LRU (lru_gen on)",
        "classic": "the classic active/inactive LRU (lru_gen off)",
        "not recorded": "not recorded (Debian's 6.12 guest runs the multi-gen LRU unless switched off)",
    }[lru]
    model = (
        "the multi-gen LRU of Linux 6.12 (lru_gen=true: generations aged by walks, eviction from the "
        "oldest with look-around; docs/validation.md, section 1e)"
        if simulated == "multi-gen"
        else "the classic lists (mm/vmscan.c shrink_active_list, shrink_inactive_list, "
        "folio_check_references)"
    )
    out = [
        f"Reclaim: the guest kernel's LRU was {what}. The simulated kswapd follows {model}",
        "and by default never gives up; the kernel's kswapd stops after 16 runs that reclaim nothing",
        "(kswapd_failures) until a reclaim revives it; the simulated one gives up likewise with",
        "--nbt-param max_reclaim_retries=16, and is never revived (docs/validation.md, section 1d).",
    ]
    if kernel:
        out.append(
            f"Kernel over the run: kswapd ran {kernel.get('pageoutrun', 0):.0f} times, scanned "
            f"{kernel.get('pgscan_kswapd', 0):.0f} pages and reclaimed "
            f"{kernel.get('pgsteal_kswapd', 0):.0f}; {kernel.get('pgactivate', 0):.0f} activations, "
            f"{kernel.get('pgdeactivate', 0):.0f} deactivations; it last ran at "
            f"{kernel['kswapd_last_ran_s']:.1f} s of {kernel['run_end_s']:.1f} s."
        )
    if "kswapd_agings" in kernel:
        out.append(
            f"Kernel's agings (try_to_inc_max_seq, kprobe): {kernel['kswapd_agings']:.0f} in "
            f"{kernel['kswapd_aging_bursts']:.0f} bursts (agings less than a second apart)"
            + (
                f"; the workload was switched in every {kernel['workload_switch_in_ms']:.1f} ms "
                "on average (context switches: each marks its mm for the next aging walk)."
                if "workload_switch_in_ms" in kernel
                else "."
            )
        )
    if "rmap_tested" in kernel:
        out.append(
            f"Kernel's multi-gen eviction (lru_gen_look_around calls, kprobe): it tested "
            f"{kernel['rmap_tested']:.0f} isolated pages and kept "
            f"{kernel['kept_referenced']:.0f} untested because a look-around earlier in their "
            f"batch had found them young; it moved {kernel.get('pgrefill', 0):.0f} pages a walk "
            "or look-around had found young to their generation (pgrefill: sort_folio)."
        )
    if "evict_batches" in kernel:
        out.append(
            f"Kernel's eviction batches (tkvmscan=1, one shrink event each): "
            f"{kernel['evict_batches']:.0f}, of which {kernel['evict_batches_few']:.0f} reclaimed "
            f"fewer than 8 pages and {kernel['evict_batches_most']:.0f} at least 56; the longest "
            f"run of consecutive batches that reclaimed nothing was "
            f"{kernel['evict_kept_run_longest']:.0f} long (from "
            f"{kernel['evict_kept_run_longest_at_s']:.2f} s of the guest's clock)."
        )
    if "walk_leaf_total" in kernel:
        out.append(
            f"Kernel's aging walks on node 0 (lru_gen_full's mm_stats over the run): they read "
            f"{kernel['walk_leaf_total']:.0f} PTEs and found {kernel['walk_leaf_young']:.0f} "
            f"young, entered {kernel['walk_nonleaf_found']:.0f} page tables the Bloom filter "
            f"let through and added {kernel['walk_nonleaf_added']:.0f} to the next filter."
        )
    if traced:
        gave_up = (
            f"the last {traced['trailing_runs_reclaiming_nothing']:.0f} reclaimed nothing, so "
            f"kswapd_failures reached MAX_RECLAIM_RETRIES ({MAX_RECLAIM_RETRIES}) and kswapd gave up"
            if traced["gave_up"]
            else f"the last {traced['trailing_runs_reclaiming_nothing']:.0f} reclaimed nothing "
            f"(fewer than MAX_RECLAIM_RETRIES, {MAX_RECLAIM_RETRIES})"
        )
        out.append(
            f"Kernel's traced kswapd runs (tkvmscan=1): {traced['runs']:.0f} runs between "
            f"{traced['first_run_s']:.1f} s and {traced['last_run_s']:.1f} s; its inactive-list "
            f"shrinks scanned {traced['scanned']:.0f} pages, reclaimed {traced['reclaimed']:.0f}, "
            f"activated {traced['activated']:.0f} and kept {traced['kept']:.0f} (referenced once); "
            f"{traced['active_shrinks']:.0f} shrinks of the active list deactivated "
            f"{traced['deactivated']:.0f} pages; {gave_up}. Per run it reclaimed "
            f"{traced['reclaimed'] / max(traced['runs'], 1):.0f} pages"
            + (
                f"; the simulated kswapd demoted {sim['demotions'] / max(sim['kswapd_runs'], 1):.0f} "
                f"per run ({sim['kswapd_runs']:.0f} runs)."
                if sim.get("kswapd_runs")
                else "."
            )
        )
    out.append(
        f"Simulated kswapd over the run: {sim.get('kswapd_wakeups', 0):.0f} wakeups, "
        f"{sim.get('kswapd_scanned', 0):.0f} pages "
        + ("isolated (pgscan_kswapd)" if simulated == "multi-gen" else "examined")
        + f", {sim.get('kswapd_kept', 0):.0f} kept, "
        f"{sim.get('kswapd_activated', 0):.0f} activated, "
        f"{sim.get('kswapd_deactivated', 0):.0f} deactivated, {sim['demotions']:.0f} demoted"
        + (f"; {sim.get('kswapd_agings', 0):.0f} generations aged" if simulated == "multi-gen" else "")
        + (
            f" in {sim['kswapd_aging_bursts']:.0f} bursts"
            if simulated == "multi-gen" and "kswapd_aging_bursts" in sim
            else ""
        )
        + ("; it gave the node up (max_reclaim_retries)." if sim.get("kswapd_gave_up") else ".")
    )
    if simulated == "multi-gen" and "kswapd_rmap_tested" in sim:
        out.append(
            f"Simulated multi-gen eviction: it tested {sim['kswapd_rmap_tested']:.0f} isolated "
            f"pages, kept {sim.get('kswapd_kept_referenced', 0):.0f} untested (found young by a "
            f"look-around earlier in their batch) and sorted {sim.get('kswapd_sorted', 0):.0f} "
            "to the generation their flags say; its aging walks read "
            f"{sim.get('kswapd_walk_leaf_total', 0):.0f} PTEs, found "
            f"{sim.get('kswapd_walk_leaf_young', 0):.0f} young, entered "
            f"{sim.get('kswapd_walk_nonleaf_found', 0):.0f} page tables and added "
            f"{sim.get('kswapd_walk_nonleaf_added', 0):.0f} to the next filter; of its "
            f"{sim.get('kswapd_evict_batches', 0):.0f} eviction batches "
            f"{sim.get('kswapd_evict_batches_few', 0):.0f} reclaimed fewer than 8 pages and "
            f"{sim.get('kswapd_evict_batches_most', 0):.0f} at least 56."
        )
    return out


def validate_press(
    out: Path,
    rec: dict[str, Any],
    path: Path,
    seed: int = 1,
    progress: bool = False,
    nbt_params: Sequence[str] = (),
    sweep_in_order: bool = False,
    kswapd_shares_cpu: bool | None = None,
    sim_sets: Sequence[str] = (),
) -> dict[str, Any]:
    """Compare an nbtpress recording with the simulator's ``nbt``; write report.md, timeline.png,
    moves.png, kernel.csv, sim.csv, experiment.toml and comparison.json into ``out``
    (``sweep_in_order``, ``kswapd_shares_cpu``: :func:`sim_experiment`; ``sim_sets``: model keys
    of the simulated experiment, :func:`tierkit.validate.with_sets`)."""
    import tierkit
    from tierkit.output import new_axes, save_figure

    check_press(rec, path)
    # 4 KiB pages to a simulated page: 512 for a recording on transparent huge pages (tkthp=1)
    base = page_bytes(rec) // PAGE
    if kswapd_shares_cpu is None:
        kswapd_shares_cpu = guest_shares_cpu(rec)
    params = {p["name"] for p in tierkit.describe_policy("nbt")}
    with_params("nbt", nbt_params, params)  # a bad --nbt-param fails before anything is written
    with_sets("", sim_sets)  # and so does a bad --set
    out.mkdir(parents=True, exist_ok=True)
    # The thread's compute per access is fitted to the fast tier's loaded latency under the
    # sweeps: a first run (latency 0) measures it over the steady state, the second is the result.
    exp_path = out / "experiment.toml"
    fast_latency = 0.0
    for last in (False, True):
        text, spec = sim_experiment(
            rec,
            params,
            seed,
            fast_latency,
            sweep_in_order=sweep_in_order,
            kswapd_shares_cpu=kswapd_shares_cpu,
        )
        spec = with_params(spec, nbt_params, params)
        text = with_sets(text, sim_sets)
        exp_path.write_text(text)
        result = tierkit.run(exp_path, policy=spec, seed=seed, progress=progress and last)
        ts = result.timeseries
        col = f"latency_ns.{result.summary['tiers'][0]['name']}"
        steady = ts[ts["t_s"] >= metrics(sim_timeline(ts, base), rec)["steady_from_s"]]
        fast_latency = float(steady[col].mean())
    k = kernel_timeline(rec)
    s = sim_timeline(result.timeseries, base)
    k.to_csv(out / "kernel.csv", index=False)
    s.to_csv(out / "sim.csv", index=False)
    km, sm = metrics(k, rec), metrics(s, rec)
    km["pass_interval_s"] = pass_interval(scan_times(rec), km["steady_from_s"])
    sm["pass_interval_s"] = pass_interval(sim_pass_times(result.timeseries), sm["steady_from_s"])
    rows = [Row(m, km[m], sm[m]) for m in LABELS]

    fig, axes = new_axes("regions on the fast tier", "pages", "seconds since the process started")
    for col, what in (("hot_fast_pages", "hot"), ("cold_fast_pages", "cold")):
        axes.plot(k["t_s"], k[col], label=f"{what}: Linux (guest)", linewidth=1.4)
        axes.plot(s["t_s"], s[col], label=f"{what}: tierkit nbt", linewidth=1.4, linestyle="--")
    axes.legend(fontsize=8)
    save_figure(fig, out / "timeline.png")
    fig, axes = new_axes(
        "promotions and demotions (cumulative)", "pages", "seconds since the process started"
    )
    for col in ("promotions", "demotions"):
        axes.plot(k["t_s"], k[col], label=f"{col}: Linux (guest)", linewidth=1.4)
        axes.plot(s["t_s"], s[col], label=f"{col}: tierkit nbt", linewidth=1.4, linestyle="--")
    axes.legend(fontsize=8)
    save_figure(fig, out / "moves.png")

    has_reclaim_png = reclaim_figure(rec, result.timeseries, out / "reclaim.png")

    meta = rec["meta"]
    zone_info = node0_accounting(rec)
    node, wsf, free_above_high = _fast_tier(rec, zone_info)
    lru, kernel_reclaim, sim_reclaim = reclaim_side_by_side(rec, result.summary)
    bursts = sim_aging_bursts(result.timeseries)
    if bursts is not None and sim_lru(spec) == "multi-gen":
        sim_reclaim["kswapd_aging_bursts"] = float(bursts)
    traced = kswapd_trace_summary(rec)
    # the generations kswapd found at its wakes after a quiet spell (tkgens=1 recordings)
    k_gens, k_wakes = kernel_generations(rec), kernel_wakes(rec)
    kernel_gens = wake_generations(k_gens, k_wakes)
    sim_gens: dict[str, float] = {}
    has_gens_png = False
    if kernel_gens:
        s_gens, s_wakes = sim_generations(result.timeseries), sim_wakes(result.timeseries)
        sim_gens = wake_generations(s_gens, s_wakes)
        has_gens_png = generations_figure(k_gens, s_gens, k_wakes, s_wakes, out / "generations.png")
    kernel_la = look_around_summary(rec)
    pcp = pcp_summary(rec)
    # kswapd's turn as the simulated run had it: the experiment's (the TLB ticker's period, or a
    # --set), else the simulator's default of a tick
    turn_ms = float(tomllib.loads(text).get("kswapd_slice_ms", GUEST_TICK_MS))
    comparison = {
        "recording": str(path),
        "scenario": "press-thp" if base > 1 else "press",
        "kernel": meta.get("kernel"),
        "policy": spec,
        "tolerance": TOLERANCE,
        "steady_from_s": km["steady_from_s"],
        "kernel_scan_intervals_s": scan_intervals(rec),
        "sim_scan_periods_ms": sim_scan_periods(result.timeseries),
        "rows": rows_json(rows, COMPARED),
        "within_tolerance": all(r.within for r in rows if r.metric in COMPARED),
        "kernel_lru": lru,
        "sim_lru": sim_lru(spec),
        "kernel_reclaim": kernel_reclaim,
        "sim_reclaim": sim_reclaim,
        "kernel_kswapd_trace": traced,
        "sweep_in_order": sweep_in_order,
        "kswapd_shares_cpu": kswapd_shares_cpu,
        "kswapd_slice_ms": turn_ms if kswapd_shares_cpu else None,
        "sim_sets": list(sim_sets),
        "kernel_wake_generations": kernel_gens or None,
        "kernel_look_around": kernel_la or None,
        "sim_wake_generations": sim_gens or None,
        "node0_zones": zone_info,
        "kernel_pcp": pcp or None,
    }
    (out / "comparison.json").write_text(json.dumps(comparison, indent=1, default=str) + "\n")
    lines = [
        f"# tierkit validate kernel --scenario {comparison['scenario']}: `nbt` against Linux with the"
        " fast node nearly full",
        "",
        f"Recording: `{path.name}` (kernel {meta.get('kernel')}, QEMU guest of tests/kernel). "
        f"{rec['hot_pages']} hot pages first placed on node 1 (slow) and swept about "
        f"{rec['sweeps_per_s']:.0f} times a second; {rec['cold_pages']} cold pages first placed on node 0 "
        f"(fast), touched at random {rec['cold_touch_per_s']:.0f} times a second (each page about every "
        f"{rec['cold_pages'] / max(rec['cold_touch_per_s'], 1e-9):.2g} s). Node 0 filled with mlocked pages "
        + (
            f"so that {free_above_high} pages ({free_above_high * PAGE / 2**20:.1f} MiB) stayed free "
            f"above its high watermark (node 0 MemFree after the fill {rec['fill']['node0_free_kb']:.0f} kB; "
            f"watermarks low/high/promo {meta.get('node0_wmark_low')}/{meta.get('node0_wmark_high')}/"
            f"{meta.get('node0_wmark_promo')} pages)."
            if zone_info is None
            else f"so that promotions had {free_above_high} pages before node 0 refused them, judged zone "
            "by zone (docs/validation.md, section 1f): DMA32's free pages above its high watermark and "
            f"what the DMA zone gave up before it settled at {zone_info['dma_settled']} free pages (its "
            "low watermark + lowmem_reserve keep the rest out of reach); the node's summed watermarks "
            f"would give {zone_info['node_room']}. Other processes' anonymous pages on node 0 when the "
            f"sweeps started: {zone_info['foreign']}, {zone_info['foreign_in_use']} of them still there "
            "at the run's median (simulated as a process of their own, `others`)."
            + (
                " The DMA zone settled above its bar in the promotion path "
                f"({zone_info['dma_promotion_bar']} free pages: its high watermark + the page + its "
                "lowmem_reserve), so the kernel's "
                "migrate_balanced_pgdat let promotions through until the main zone reached its low "
                "watermark; "
                + (
                    "the simulated nbt is told so (`dma_zone_above_bar=true`), for the whole run"
                    if _spec_flag(spec, "dma_zone_above_bar")
                    else "the simulated nbt is not (`dma_zone_above_bar=false`)"
                )
                + " (docs/validation.md, section 1h)."
                if zone_info["dma_above_bar"]
                else ""
            )
            + (
                f" The DMA zone stayed above its bar in kswapd's pgdat_balanced at order 0 (at least "
                f"{zone_info['dma_free_min']} free pages against {zone_info['dma_balance_bar']}: its "
                "promo watermark + lowmem_reserve) through the sweeps, so the kernel counted node 0 "
                "balanced at order 0 on its account and a kswapd run woken by a huge page's failed "
                "promotion ended once it had reclaimed two huge pages (compact_gap); "
                + (
                    "the simulated nbt is told so (`dma_zone_balanced=true`)"
                    if _spec_flag(spec, "dma_zone_balanced")
                    else "the simulated nbt is not (`dma_zone_balanced=false`)"
                )
                + " (docs/validation.md, section 1zd)."
                if zone_info["dma_balanced"]
                else ""
            )
        ),
        f"Kernel knobs: {', '.join(f'{k}={meta.get(k)}' for k in KNOBS)}.",
        *(
            [
                f"On transparent huge pages (MADV_HUGEPAGE; {rec.get('anon_huge_kb', -1) / 1024:.0f} MiB "
                "of the program on huge pages when its sweeps began), simulated with 2 MiB pages: the "
                "workload's small VMAs (data, heap, vdso, stack) are a huge page each, mlocked (a VMA "
                "the scanner walks, off reclaim's lists: the guest's were 108 pages), the other "
                "processes' pages as many huge pages as they fill, and the pinned fill gives up what "
                "these take beyond their 4 KiB pages. "
                "Page counts are 4 KiB pages, 512 to a huge page; "
                "a huge page takes one hint fault, and a promotion needs 512 pages above the zone's "
                "high watermark (migrate_balanced_pgdat)."
            ]
            if base > 1
            else []
        ),
        f"Simulated: `tierkit run experiment.toml --policy {spec}` (this directory): a fast tier of "
        f"{node} pages (watermark_scale_factor {wsf}: the guest's watermark step); "
        + (
            f"kswapd takes turns of {comparison['kswapd_slice_ms']:g} ms with the workload on one CPU, "
            "as on the guest's one vCPU (docs/validation.md, section 1z)."
            if kswapd_shares_cpu
            else "kswapd has a CPU of its own, beside the workload."
        ),
        f"Steady state: from {km['steady_from_s']:.1f} s (the last {STEADY_SHARE:.0%} of the time since "
        "the first sweep) to the end. Churn: min(promotions, demotions) of the steady state.",
        "",
        *rows_table(rows, LABELS, COMPARED),
    ]
    iv = ", ".join(f"{v:g}" for v in scan_intervals(rec))
    periods = sim_scan_periods(result.timeseries)
    sim_iv = "; ".join(
        f"{name}: {', '.join(f'{v / 1000:g}' for v in vals)} s" for name, vals in periods.items()
    )
    lines += [
        "",
        f"The kernel's scans of the workload (numa_pte_updates jumps) came {iv} s",
        "apart: the scan period doubled from its start, because a hint fault whose page is",
        "promoted counts on the fast node it moved to (task_numa_fault) as private (a slow page's",
        "cpupid holds its scan time, so last_cpupid is -1) and not local (the page was not on the",
        "CPU's node when it faulted), and update_task_scan_period doubles the period while no",
        "fault is local or shared. The simulated nbt accounts such faults the same way; its",
        f"processes' scan periods over the run (each distinct value in turn): {sim_iv or 'none'}.",
        "",
        *reclaim_lines(lru, kernel_reclaim, sim_reclaim, traced, sim_lru(spec)),
        *generation_lines(kernel_gens, sim_gens),
        *look_around_lines(kernel_la),
        *pcp_lines(pcp),
        "",
        "![regions on the fast tier](timeline.png)",
        "",
        "![moves](moves.png)",
    ]
    if has_reclaim_png:
        lines += ["", "![reclaim](reclaim.png)"]
    if has_gens_png:
        lines += ["", "![generations](generations.png)"]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return comparison
