"""`tierkit validate kernel`: the shipped guest recording, its parser, and the side-by-side report."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import slowdowns, summaries
from tierkit.validate import (
    DEFAULT_RECORDING,
    ValidationError,
    kernel_timeline,
    load_recording,
    metrics,
    parse_guest_log,
    sim_experiment,
)

GUEST_LOG = """\
TKTEST_BEGIN nbtrec uptime=3.1
TKREC_META kernel=6.12.0 hot_mib=1 cold_mib=1 seconds=2 page_size=4096 hz=100 scan_delay_ms=1000 \
scan_period_min_ms=1000 scan_period_max_ms=60000 scan_size_mb=256 hot_threshold_ms=1000 \
promote_rate_limit_MBps=65536 node0_free_kb=2908144
TKREC_VM t=3.00 pgpromote_success=10 pgpromote_candidate=0 pgdemote_kswapd=0 pgdemote_direct=0 \
numa_pte_updates=0 numa_hint_faults=5
TKREC_PROC start_ticks=300
TKREC_VM t=4.00 pgpromote_success=110 pgpromote_candidate=0 pgdemote_kswapd=0 pgdemote_direct=0 \
numa_pte_updates=256 numa_hint_faults=105
TKREC_VM t=5.00 pgpromote_success=266 pgpromote_candidate=0 pgdemote_kswapd=0 pgdemote_direct=0 \
numa_pte_updates=512 numa_hint_faults=261
TKREC_W WORKLOAD_START child=0 pid=9 hot_pages=256 cold_pages=256 hot_node=1 cold_node=1 mono=3.5
TKREC_W WORKLOAD_REPORT pid=9 hot_node0=0 hot_node1=256 cold_node0=0 cold_node1=0 other=0 sweeps=5 mono=3.9
TKREC_W WORKLOAD_REPORT pid=9 hot_node0=100 hot_node1=156 cold_node0=0 cold_node1=0 other=0 sweeps=9 mono=4.1
TKREC_W WORKLOAD_REPORT pid=9 hot_node0=256 hot_node1=0 cold_node0=0 cold_node1=0 other=0 sweeps=20 mono=4.9
TKREC_W WORKLOAD_RESULT pid=9 hot_node0=256 hot_node1=0 cold_node0=0 cold_node1=256 other=0 \
sweeps=21 corrupt=0
"""


def test_a_guest_log_parses_into_a_recording_and_its_timeline() -> None:
    rec = parse_guest_log(GUEST_LOG, "guest.log")
    assert rec["process_start_s"] == 3.0
    assert rec["sweep_start_s"] == 3.5
    assert rec["hot_pages"] == 256
    assert rec["meta"]["scan_size_mb"] == "256"
    k = kernel_timeline(rec)
    # counts from the first sample, times from the process's start
    assert list(k["t_s"]) == [0.0, 1.0, 2.0]
    assert list(k["hint_faults"]) == [0.0, 100.0, 256.0]
    assert list(k["hot_fast_pages"]) == [0.0, 0.0, 256.0]  # the last report at or before each sample
    m = metrics(k, 256)
    assert m["t50_s"] == 2.0
    assert m["t90_s"] == 2.0
    assert m["hint_faults_per_s"] == 128.0
    # the press samples' CPU ticks (the workload's, kswapd's) are kept where the guest gives them
    assert "kswapd_ticks" not in rec["vmstat"][1]
    ticked = GUEST_LOG.replace("numa_hint_faults=105", "numa_hint_faults=105 wl_ticks=90 kswapd_ticks=7")
    rec = parse_guest_log(ticked, "guest.log")
    assert (rec["vmstat"][1]["wl_ticks"], rec["vmstat"][1]["kswapd_ticks"]) == (90.0, 7.0)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nothing here\n", "not an nbtrec guest log: no TKREC_META"),
        (GUEST_LOG.replace("mono=4.1", "mono=soon"), "guest.log: line 9: malformed recording line"),
    ],
)
def test_bad_guest_logs_name_the_file_and_what_is_missing(text: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_guest_log(text, "guest.log")


def test_a_kernel_message_inside_a_recording_line_is_dropped() -> None:
    lines = GUEST_LOG.splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("TKREC_W WORKLOAD_REPORT"))
    plain = parse_guest_log("\n".join(lines), "log")
    lines[i] += "[  231.931039] random: crng init done"
    broken = parse_guest_log("\n".join(lines), "log")
    assert broken == plain


def test_bad_recordings_are_refused_with_the_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="does not exist"):
        load_recording(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ValidationError, match=r"bad\.json: not a JSON recording"):
        load_recording(bad)
    rec = parse_guest_log(GUEST_LOG, "guest.log")
    del rec["hot_node0"]
    bad.write_text(json.dumps(rec))
    with pytest.raises(ValidationError, match=r"bad\.json: hot_node0: missing"):
        load_recording(bad)
    # gzip-compressed recordings load as they are; a truncated or corrupt one is refused
    import gzip

    good = parse_guest_log(GUEST_LOG, "guest.log")
    packed = gzip.compress(json.dumps(good).encode())
    gz = tmp_path / "rec.json.gz"
    gz.write_bytes(packed)
    assert load_recording(gz) == load_recording_plain(tmp_path, good)
    for broken in (packed[: len(packed) // 2], packed[:10] + bytes(len(packed) - 10)):
        gz.write_bytes(broken)
        with pytest.raises(ValidationError, match=r"rec\.json\.gz: not a JSON recording"):
            load_recording(gz)


def load_recording_plain(tmp_path: Path, rec: dict[str, object]) -> dict[str, object]:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(rec))
    return load_recording(plain)


def test_the_shipped_recording_shows_linux_promoting_the_whole_hot_region() -> None:
    rec = load_recording(DEFAULT_RECORDING)
    k = kernel_timeline(rec)
    m = metrics(k, rec["hot_pages"])
    # numa_balancing=2 promoted every hot page once (one hint fault each) within a few seconds,
    # and never a cold one: the cold pages are not accessed after their first touch
    assert m["hot_fast_at_end"] == 1.0
    assert m["hint_faults"] == rec["hot_pages"]
    assert 0.5 < m["t50_s"] <= m["t90_s"] < 10.0
    assert rec["corrupt"] == 0


def test_the_simulated_experiment_carries_the_recorded_run_and_the_kernels_knobs() -> None:
    rec = parse_guest_log(GUEST_LOG, "guest.log")
    text, spec = sim_experiment(rec, {"scan_size_mb", "hot_threshold_ms"})
    assert 'tier = "slow"' in text
    assert "size_mb = 1" in text
    assert "duration_s = 2.000" in text
    assert spec == "nbt:scan_size_mb=256,hot_threshold_ms=1000"  # only the policy's own parameters


def test_validate_kernel_writes_the_side_by_side(tk: Callable[..., object], tmp_path: Path) -> None:
    out = tmp_path / "vk"
    proc = tk("validate", "kernel", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    comparison = json.loads(proc.stdout)  # type: ignore[attr-defined]
    for name in ("report.md", "timeline.png", "hint_faults.png", "kernel.csv", "sim.csv", "experiment.toml"):
        assert (out / name).is_file(), name
    rows = {r["metric"]: r for r in comparison["rows"]}
    assert {"hint_faults_per_s", "t50_s", "t90_s"} <= {m for m, r in rows.items() if r["compared"]}
    assert rows["hint_faults"]["kernel"] == load_recording(DEFAULT_RECORDING)["hot_pages"]
    assert comparison["within_tolerance"] == all(
        r["within_tolerance"] for r in rows.values() if r["compared"]
    )
    for r in rows.values():
        if not math.isnan(r["ratio"]):
            assert r["ratio"] == pytest.approx(r["sim"] / r["kernel"])
    assert "| figure | Linux | tierkit |" in (out / "report.md").read_text()


def test_validate_kernel_refuses_a_bad_recording(tk: Callable[..., object], tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    bad.write_text('{"format": "something else"}')
    proc = tk("validate", "kernel", "--recording", str(bad), "--out", str(tmp_path / "o"))
    assert proc.returncode != 0  # type: ignore[attr-defined]
    assert "r.json: format: expected" in proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]


def test_an_nbtpress_log_carries_the_fill_and_the_cold_region() -> None:
    text = GUEST_LOG.replace("hot_mib=1 ", "scenario=press hot_mib=1 ").replace(
        "TKREC_W WORKLOAD_START",
        "TKREC_W WORKLOAD_FILL fill_mib=2.0 node0_free_kb_before=10240 node0_free_kb=8192\n"
        "TKREC_W WORKLOAD_START",
    )
    rec = parse_guest_log(text, "guest.log")
    assert rec["scenario"] == "press"
    assert rec["fill"]["node0_free_kb"] == 8192
    assert rec["cold_node0"][-1] == [4.9, 0]
    assert "small_nodes" not in rec  # a workload before its reports named them
    # the nodes of the workload's own data, heap and stack pages, where its reports give them
    with_small = text.replace("sweeps=20 mono=4.9", "sweeps=20 data_node=0 heap_node=1 stack_node=0 mono=4.9")
    assert parse_guest_log(with_small, "guest.log")["small_nodes"] == [[4.9, 0, 1, 0]]
    with pytest.raises(ValidationError, match="without its WORKLOAD_FILL"):
        parse_guest_log(text.replace("TKREC_W WORKLOAD_FILL", "TKREC_X"), "guest.log")


@pytest.mark.parametrize(
    "which",
    [
        "PRESS_RECORDING",
        "PRESS_RECORDING_400S",
        "PRESS_RECORDING_400S_TRACED",
        "PRESS_RECORDING_400S_3",
        "PRESS_RECORDING_400S_4",
        "PRESS_RECORDING_400S_5",
        "PRESS_RECORDING_400S_6",
        "PRESS_RECORDING_TRACED_ZONES",
    ],
)
def test_the_press_recording_shows_linux_promoting_cold_pages_that_kswapd_demotes_again(which: str) -> None:
    """Every shipped multi-gen press recording: the traced 100 s default, the 400 s one of
    docs/validation.md section 1c and the four later 400 s boots (sections 1e, 1f)."""
    import tierkit.validate_press as vp
    from tierkit.validate_press import fast_tier, scan_intervals
    from tierkit.validate_press import kernel_timeline as press_timeline
    from tierkit.validate_press import metrics as press_metrics

    rec = load_recording(getattr(vp, which))
    assert rec["scenario"] == "press"
    assert rec["corrupt"] == 0
    # the fill left node 0 some free pages above its high watermark, fewer than the hot region
    _, _, free_above_high = fast_tier(rec)
    assert 0 < free_above_high < rec["hot_pages"]
    m = press_metrics(press_timeline(rec), rec)
    # the hot region ends on node 0; in the steady state the kernel keeps promoting cold pages
    # and demoting as many: churn, and part of the cold region on each node
    assert m["hot_fast_share"] > 0.95
    assert m["promotions_per_s"] > 50
    assert m["demotions_per_s"] > 50
    assert m["churn_share"] > 0.5
    assert 0.1 < m["cold_fast_share"] < 0.9
    # the kernel's scan period grew far past scan_period_min_ms (1 s): ~20 s between scans
    intervals = scan_intervals(rec)
    assert len(intervals) >= 5
    assert sorted(intervals)[len(intervals) // 2] > 10


def test_with_the_classic_lru_linux_stops_reclaiming_and_promoting() -> None:
    """The press scenario with the multi-gen LRU off (docs/validation.md, section 1d): kswapd
    runs a few dozen times while the hot region comes in, then never again (its scans, reclaims
    and runs stay flat, the active list is never aged), and the kernel's promotions stop while
    its candidates keep rising: no churn. The shipped recording (multi-gen LRU on) churns."""
    from tierkit.validate_press import PRESS_RECORDING_CLASSIC_LRU, scan_intervals
    from tierkit.validate_press import kernel_timeline as press_timeline
    from tierkit.validate_press import metrics as press_metrics

    rec = load_recording(PRESS_RECORDING_CLASSIC_LRU)
    assert rec["meta"]["lru_gen"] == "0x0000"
    assert rec["corrupt"] == 0
    vm = rec["vmstat"]
    half = vm[len(vm) // 2]
    last = vm[-1]
    for key in ("pgscan_kswapd", "pgsteal_kswapd", "pageoutrun", "pgpromote_success", "pgdemote_kswapd"):
        assert last[key] == half[key] > 0, key
    assert last["pgrefill"] == 0
    assert last["pgdeactivate"] == 0
    assert last["pgpromote_candidate"] > 1.5 * half["pgpromote_candidate"] > 0
    m = press_metrics(press_timeline(rec), rec)
    assert m["hot_fast_share"] > 0.95
    assert m["promotions_per_s"] == 0
    assert m["demotions_per_s"] == 0
    assert len(scan_intervals(rec)) >= 5


def test_the_classic_lru_trace_shows_kswapd_giving_up_after_16_runs_that_reclaim_nothing() -> None:
    """The shipped classic-LRU recording was made with reclaim's tracepoints on (tkvmscan=1):
    every kswapd run (balance_pgdat) is in it with what its shrinks did. The runs agree with
    /proc/vmstat, the last 16 of them reclaimed nothing (kswapd_failures reaches
    MAX_RECLAIM_RETRIES: the node is hopeless), after which kswapd never runs again, and no run
    shrank the active list (docs/validation.md, section 1d)."""
    from tierkit.validate_press import (
        MAX_RECLAIM_RETRIES,
        PRESS_RECORDING_CLASSIC_LRU,
        kswapd_trace_summary,
        reclaim_side_by_side,
    )

    rec = load_recording(PRESS_RECORDING_CLASSIC_LRU)
    t = kswapd_trace_summary(rec)
    _, k, _ = reclaim_side_by_side(rec, {})
    assert t["runs"] == k["pageoutrun"] == 242
    assert t["scanned"] == k["pgscan_kswapd"]
    assert t["reclaimed"] == k["pgsteal_kswapd"] == 8325
    assert t["trailing_runs_reclaiming_nothing"] == MAX_RECLAIM_RETRIES
    assert t["gave_up"] == 1
    assert t["active_shrinks"] == 0
    assert k["pgrefill"] == 0
    # the last traced run is the last run /proc/vmstat saw (its 0.2 s sampling later)
    assert 0 <= k["kswapd_last_ran_s"] - t["last_run_s"] < 0.5
    assert t["last_run_s"] < 0.2 * k["run_end_s"]
    zones = rec["node0_zones"]["start"]
    assert zones["DMA32"]["managed"] > 0
    assert zones["DMA32"]["promo"] > zones["DMA32"]["high"]


def test_traced_kswapd_runs_are_folded_and_a_bad_trace_line_names_its_line() -> None:
    ev = "TKREC_VMSCAN kswapd0-45 [000] ..... {t}: mm_vmscan_{e}: nid=0 {kv}\n"
    shrink = (
        "nr_scanned=32 nr_reclaimed={r} nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 "
        "nr_activate_anon={a} nr_activate_file=0 nr_ref_keep={k} nr_unmap_fail=0 priority={p} "
        "flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC"
    )
    trace = (
        ev.format(t="5.000001", e="kswapd_wake", kv="order=0")
        + ev.format(t="5.000002", e="lru_shrink_inactive", kv=shrink.format(r=2, a=20, k=10, p=12))
        + ev.format(
            t="5.000003",
            e="lru_shrink_active",
            kv="nr_taken=32 nr_active=0 nr_deactivated=32 nr_referenced=3 priority=11 "
            "flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC",
        )
        + ev.format(t="6.5", e="kswapd_wake", kv="order=0")
        + ev.format(t="6.5000001", e="lru_shrink_inactive", kv=shrink.format(r=0, a=0, k=32, p=1))
        + "TKREC_ZONE start zone=DMA32   pages free     723731\n"
        + "TKREC_ZONE start zone=DMA32         protection: (0, 0, 0, 0, 0)\n"
    )
    rec = parse_guest_log(GUEST_LOG + trace, "guest.log")
    kt = rec["kswapd_trace"]
    assert kt["events"] == {"kswapd_wake": 2, "lru_shrink_inactive": 2, "lru_shrink_active": 1}
    assert kt["runs"] == [[5.000001, 32, 2, 20, 10, 1, 32, 11], [6.5, 32, 0, 0, 32, 0, 0, 1]]
    assert rec["node0_zones"]["start"]["DMA32"] == {"free": 723731, "protection": [0, 0, 0, 0, 0]}
    bad = GUEST_LOG + "TKREC_VMSCAN kswapd0-45 [000] ..... not an event\n"
    with pytest.raises(ValidationError, match=r"guest\.log: line \d+: malformed recording line"):
        parse_guest_log(bad, "guest.log")


def test_the_press_report_shows_the_kernels_lru_and_both_kswapds(
    tk: Callable[..., object], tmp_path: Path
) -> None:
    from tierkit.validate_press import PRESS_RECORDING_CLASSIC_LRU

    out = tmp_path / "vc"
    proc = tk(
        "validate",
        "kernel",
        "--scenario",
        "press",
        "--recording",
        str(PRESS_RECORDING_CLASSIC_LRU),
        "--out",
        str(out),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    comparison = json.loads(proc.stdout)  # type: ignore[attr-defined]
    assert comparison["kernel_lru"] == "classic"
    k, s = comparison["kernel_reclaim"], comparison["sim_reclaim"]
    assert k["pageoutrun"] == 242
    assert k["pgsteal_kswapd"] == 8325
    # the kernel's kswapd stopped early in the run; the simulated one kept demoting
    assert k["kswapd_last_ran_s"] < 0.2 * k["run_end_s"]
    assert s["demotions"] > k["pgsteal_kswapd"]
    report = (out / "report.md").read_text()
    assert "classic active/inactive LRU" in report
    assert "kswapd ran 242 times" in report
    assert (out / "reclaim.png").is_file()
    assert "![reclaim](reclaim.png)" in report
    traced = comparison["kernel_kswapd_trace"]
    assert traced["gave_up"] == 1
    assert traced["active_shrinks"] == 0
    assert "kswapd_failures reached MAX_RECLAIM_RETRIES (16) and kswapd gave up" in report


def test_validate_kernel_press_writes_the_side_by_side(tk: Callable[..., object], tmp_path: Path) -> None:
    out = tmp_path / "vp"
    proc = tk("validate", "kernel", "--scenario", "press", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    comparison = json.loads(proc.stdout)  # type: ignore[attr-defined]
    assert comparison["scenario"] == "press"
    for name in ("report.md", "timeline.png", "moves.png", "kernel.csv", "sim.csv", "experiment.toml"):
        assert (out / name).is_file(), name
    rows = {r["metric"]: r for r in comparison["rows"]}
    compared = {m for m, r in rows.items() if r["compared"]}
    assert {
        "promotions_per_s",
        "demotions_per_s",
        "churn_per_s",
        "hot_fast_share",
        "cold_fast_share",
    } == compared
    # the simulated fast tier holds the hot region: it ends there as in the kernel
    assert rows["hot_fast_share"]["sim"] > 0.9
    # with the process's VMAs (the pid filter's forced windows), the pinned fill in its RSS and
    # the guest's CPU share, the scanner passes as often as the kernel's and the simulated nbt
    # churns at the kernel's pace (promotions and demotions; before: 0.25x and none)
    assert abs(rows["pass_interval_s"]["sim"] / rows["pass_interval_s"]["kernel"] - 1) < 0.25
    # the shipped recording ran the multi-gen LRU, and so does the simulated kswapd
    # (docs/validation.md, section 1e)
    assert (comparison["kernel_lru"], comparison["sim_lru"]) == ("multi-gen", "multi-gen")
    assert "lru_gen=true" in comparison["policy"]
    for m in ("promotions_per_s", "demotions_per_s", "churn_per_s", "cold_fast_share"):
        assert rows[m]["within_tolerance"], rows[m]
    assert comparison["within_tolerance"] == all(rows[m]["within_tolerance"] for m in compared)
    assert "churn" in (out / "report.md").read_text()


@pytest.mark.parametrize("flag", [["--lru-gen", "off"], ["--trace-reclaim"], ["--sample-generations"]])
def test_reclaim_options_of_a_recording_need_the_press_scenario(
    tk: Callable[..., object], tmp_path: Path, flag: list[str]
) -> None:
    proc = tk("validate", "kernel", "--record", *flag, "--out", str(tmp_path / "o"))
    assert proc.returncode != 0  # type: ignore[attr-defined]
    assert f"{flag[0]}: only --scenario press reclaims" in proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]


def test_the_simulated_kswapd_gives_up_as_the_traced_kernel_did_when_it_ages_by_stale_sizes(
    tmp_path: Path,
) -> None:
    """Boot D's experiment (docs/validation.md, section 1d), with Linux's MAX_RECLAIM_RETRIES
    (max_reclaim_retries=16): with exact LRU sizes (the default) the simulated kswapd ages the
    active list and churns, as boot E's kernel did; reading sizes
    flushed every 2 s (lru_stats_flush_ms=2000, Linux >= 5.15's rstat) it activates the whole
    inactive list within a flush period, never ages the active one, gives the node up after 16
    runs that reclaim nothing and promotion stops, as boot D's kernel did."""
    import tierkit
    from tierkit.validate_press import (
        MAX_RECLAIM_RETRIES,
        PRESS_RECORDING_CLASSIC_LRU,
        kernel_timeline,
        metrics,
        sim_experiment,
        sim_timeline,
    )

    rec = load_recording(PRESS_RECORDING_CLASSIC_LRU)
    params = {p["name"] for p in tierkit.describe_policy("nbt")}
    text, spec = sim_experiment(rec, params)
    exp = tmp_path / "boot_d.toml"
    exp.write_text(text)
    km = metrics(kernel_timeline(rec), rec)
    assert km["promotions_per_s"] == 0
    got = {}
    for flush in (0, 2000):
        r = tierkit.run(exp, policy=f"{spec},max_reclaim_retries=16,lru_stats_flush_ms={flush}", seed=1)
        got[flush] = (metrics(sim_timeline(r.timeseries), rec), r.summary["policy_stats"])
    churn, stats = got[0]
    assert churn["promotions_per_s"] > 50
    assert stats["kswapd_gave_up"] == 0
    assert stats["kswapd_deactivated"] > 0
    stop, stats = got[2000]
    assert stop["promotions_per_s"] == 0
    assert stop["demotions_per_s"] == 0
    assert stats["kswapd_gave_up"] == 1
    assert stats["kswapd_failures"] == MAX_RECLAIM_RETRIES
    assert stats["kswapd_deactivated"] == 0
    assert stats["kswapd_wakeups_ignored"] > 0
    # over the whole run within 2x of the kernel's promotions and demotions
    assert 0.5 < stop["promotions"] / km["promotions"] < 2.0
    assert 0.5 < stop["demotions"] / km["demotions"] < 2.0
    # not an artifact of the step: halved, the flushes (taken at most a step late) give the same
    half = tierkit.run(
        exp,
        policy=f"{spec},max_reclaim_retries=16,lru_stats_flush_ms=2000",
        seed=1,
        overrides={"epoch_ms": "0.5"},
    )
    assert half.summary["policy_stats"]["kswapd_gave_up"] == 1
    assert half.summary["promotions"] == pytest.approx(stop["promotions"], rel=0.01)
    assert half.summary["demotions"] == pytest.approx(stop["demotions"], rel=0.01)


def test_validate_kernel_sets_nbt_parameters_and_refuses_unknown_ones(
    tk: Callable[..., object], tmp_path: Path
) -> None:
    from tierkit.validate_press import PRESS_RECORDING_CLASSIC_LRU

    out = tmp_path / "vc"
    args = ("validate", "kernel", "--scenario", "press", "--recording", str(PRESS_RECORDING_CLASSIC_LRU))
    proc = tk(
        *args,
        "--nbt-param",
        "max_reclaim_retries=16",
        "--nbt-param",
        "lru_stats_flush_ms=2000",
        "--out",
        str(out),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    comparison = json.loads(proc.stdout)  # type: ignore[attr-defined]
    assert comparison["policy"].endswith(",max_reclaim_retries=16,lru_stats_flush_ms=2000")
    rows = {r["metric"]: r for r in comparison["rows"]}
    # the traced kernel's give-up, reproduced: promotion stops in both worlds
    assert rows["promotions_per_s"]["kernel"] == rows["promotions_per_s"]["sim"] == 0
    # 0 against 0 agrees, though the ratio is undefined
    assert rows["promotions_per_s"]["within_tolerance"]
    assert math.isnan(rows["promotions_per_s"]["ratio"])
    assert comparison["sim_reclaim"]["kswapd_gave_up"] == 1
    bad = tk(*args, "--nbt-param", "no_such=1", "--out", str(tmp_path / "bad"))
    assert bad.returncode != 0  # type: ignore[attr-defined]
    assert "--nbt-param: `no_such` is not a parameter of nbt" in bad.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in bad.stderr  # type: ignore[attr-defined]
    assert not (tmp_path / "bad").exists()


def _press(job: tuple[str, str, tuple[str, ...], int]) -> dict[str, Any]:
    """One press comparison (in a worker process): the recording's name in
    tierkit.validate_press, the output directory, nbt's parameters and the seed."""
    import tierkit.validate_press as vp

    which, out, params, seed = job
    path = getattr(vp, which)
    return vp.validate_press(Path(out), load_recording(path), path, nbt_params=list(params), seed=seed)


def test_six_long_multi_gen_boots_agree_over_the_run(tmp_path: Path) -> None:
    """The six 400 s multi-gen boots of the press scenario (docs/validation.md, sections 1e, 1f,
    1w and 1x), each compared at seeds 1-4 and its whole run taken over seeds 1-8: a run settles
    in one of a few steady states by seed (boot 6 promotes about 168K or 210K pages over the
    run, the kernel 193K; section 1x shows what tells them apart), so a figure of one seed says
    which state it drew, not how the model agrees. Over each whole run the model promotes and
    demotes within 25% of each kernel on the mean of the eight seeds (the two boots with node
    0's zones within 20%; 0.85-1.09 at the change that made the exec'd program's first window
    the default, 0.89-1.10 with the old rule), except the one boot that traced the kernel's
    reclaim (tkvmscan=1), within 30%: 1.23x its promotions and 1.26x its demotions (1.25 and 1.28
    with the old rule), where that kernel promoted 124K pages against 175-194K on the five
    boots without the trace (a known disagreement, section 1x). Every compared figure is within
    tolerance in at least 18 of the 24 compared runs (18 by default: boot 5 is outside at seeds
    2-4, boot 6 at 1, 3 and 4; 19 with the old rule) and in at
    least one seed of every boot. Its kswapd reclaims within 25% of the kernel's pages on the
    mean of the eight seeds (zones 20%; traced 30%) and isolates 0.5-1.1x as many in every run. The
    DMA zone is what brings them in: with a node of one zone (`dma_zone=false`, whose watermark
    check ends a multi-gen shrink early) the model promotes about 0.7x the pages of boots 1, 5
    and 6 (seed 1)."""
    boots = (
        "PRESS_RECORDING_400S",
        "PRESS_RECORDING_400S_TRACED",
        "PRESS_RECORDING_400S_3",
        "PRESS_RECORDING_400S_4",
        "PRESS_RECORDING_400S_5",
        "PRESS_RECORDING_400S_6",
    )
    seeds = (1, 2, 3, 4)
    one_zone = ("PRESS_RECORDING_400S", "PRESS_RECORDING_400S_5", "PRESS_RECORDING_400S_6")
    # the comparisons in processes of their own (each writes its figures with matplotlib, which
    # is not thread-safe), as many at once as there are cores
    jobs = [(w, str(tmp_path / f"{w}-{seed}"), (), seed) for w in boots for seed in seeds]
    jobs += [(w, str(tmp_path / f"{w}-one-zone"), ("dma_zone=false",), 1) for w in one_zone]
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=spawn) as pool:
        results = list(pool.map(_press, jobs))
    # the whole run's figures of seeds 5-8 too, from the experiments the comparisons wrote (a
    # run alone: no kernel figures, no plots)
    more = (5, 6, 7, 8)
    extra = summaries(
        [
            (tmp_path / f"{w}-1" / "experiment.toml", results[k * len(seeds)]["policy"], [], seed)
            for k, w in enumerate(boots)
            for seed in more
        ]
    )
    within = 0
    for k, which in enumerate(boots):
        runs = results[k * len(seeds) : (k + 1) * len(seeds)]
        more_runs = extra[k * len(more) : (k + 1) * len(more)]
        zones = runs[0]["node0_zones"] is not None
        bound = 0.3 if which == "PRESS_RECORDING_400S_TRACED" else 0.2 if zones else 0.25
        for m in ("promotions", "demotions"):
            row = next(r for r in runs[0]["rows"] if r["metric"] == m)
            ratios = [next(r["ratio"] for r in c["rows"] if r["metric"] == m) for c in runs]
            ratios += [x[m] / row["kernel"] for x in more_runs]
            assert abs(sum(ratios) / len(ratios) - 1) < bound, (which, m, ratios)
        ok = [c["within_tolerance"] for c in runs]
        assert any(ok), (which, "no seed within tolerance")
        within += sum(ok)
        steals = []
        for c in runs:
            assert c["sim_lru"] == "multi-gen"
            kernel, sim = c["kernel_reclaim"], c["sim_reclaim"]
            if "pgsteal_kswapd" in kernel:
                steals.append(sim["demotions"] / kernel["pgsteal_kswapd"])
                assert 0.5 < sim["kswapd_scanned"] / kernel["pgscan_kswapd"] < 1.1, which
        if steals:
            pgsteal = runs[0]["kernel_reclaim"]["pgsteal_kswapd"]
            steals += [x["demotions"] / pgsteal for x in more_runs]
            assert abs(sum(steals) / len(steals) - 1) < bound, (which, steals)
    assert within >= 18, f"{within} of {len(boots) * len(seeds)} runs within tolerance"
    for which, c in zip(one_zone, results[len(boots) * len(seeds) :], strict=True):
        rows = {r["metric"]: r for r in c["rows"]}
        assert rows["promotions"]["ratio"] < 0.8, which


def test_kswapd_agings_and_the_workloads_switches_are_parsed_and_compared(tmp_path: Path) -> None:
    """The guest times kswapd's runs, agings and walks (kprobes on balance_pgdat,
    try_to_inc_max_seq, walk_pud_range) and counts the workload's context switches; the report
    sets the kernel's agings and their bursts beside the model's (docs/validation.md, 1f)."""
    from tierkit import validate_press as vp

    rec = load_recording(vp.PRESS_RECORDING_TRACED_AGINGS)
    agings = rec["kprobe_times"]["try_to_inc_max_seq"]
    assert rec["kprobe_calls"]["try_to_inc_max_seq"] == len(agings) == 17
    assert rec["workload_ctxt_switches"]["nonvoluntary_ctxt_switches"] == 17473
    # agings come in bursts, tens of milliseconds apart within one
    assert vp.aging_bursts(agings) == 7
    # a walk within 50 ms of the one before mostly enters one process's page tables (3 PUD
    # ranges), a burst's first walk several processes' (7 or more): should_skip_mm passes over
    # the processes not switched in since
    puds = rec["kprobe_times"]["walk_pud_range"]
    ends = [min(b, a + 1.0) for a, b in zip(agings, [*agings[1:], agings[-1] + 1], strict=True)]
    entered = [sum(1 for x in puds if a <= x < b) for a, b in zip(agings, ends, strict=True)]
    quick = [n for n in range(1, len(agings)) if agings[n] - agings[n - 1] < 0.05]
    assert len(quick) == 6
    assert sum(entered[n] == 3 for n in quick) == 5
    firsts = [n for n in range(len(agings)) if n == 0 or agings[n] - agings[n - 1] > 1]
    assert all(entered[n] >= 7 for n in firsts)
    assert vp.aging_bursts([1.0, 1.02, 1.5, 3.0, 3.01]) == 2
    assert vp.aging_bursts([]) == 0
    # the lines as the guest writes them
    log = "\n".join(
        [
            "TKREC_KPROBE try_to_inc_max_seq calls=2",
            "TKREC_KPROBE_T try_to_inc_max_seq 31.5 31.52 ",
            "TKREC_CTXT t=40.0 voluntary_ctxt_switches:5 nonvoluntary_ctxt_switches:100 ",
        ]
    )
    parsed = parse_guest_log(GUEST_LOG + log, "x.log")
    assert parsed["kprobe_times"] == {"try_to_inc_max_seq": [31.5, 31.52]}
    assert parsed["kprobe_calls"] == {"try_to_inc_max_seq": 2}
    assert parsed["workload_ctxt_switches"] == {
        "t": 40.0,
        "voluntary_ctxt_switches": 5.0,
        "nonvoluntary_ctxt_switches": 100.0,
    }
    c = vp.validate_press(tmp_path / "v", rec, vp.PRESS_RECORDING_TRACED_AGINGS, seed=1)
    k, s = c["kernel_reclaim"], c["sim_reclaim"]
    assert (k["kswapd_agings"], k["kswapd_aging_bursts"]) == (17, 7)
    assert 10 < k["workload_switch_in_ms"] < 13
    # the model ages in bursts too, about as many (17 agings in 7 here)
    assert 0.5 < s["kswapd_agings"] / k["kswapd_agings"] < 1.5
    assert abs(s["kswapd_aging_bursts"] - k["kswapd_aging_bursts"]) <= 2
    assert s["kswapd_agings"] > s["kswapd_aging_bursts"]
    # eviction, decomposed: the kernel tested 38,783 of the 85,847 pages it isolated (one
    # lru_gen_look_around call each) and kept the other 47,064 untested, found young by a
    # look-around earlier in their batch; the model tests about as many (1.05x) but keeps far
    # fewer untested (0.13x): its batches are scattered over the address space, the kernel's
    # clustered (docs/validation.md, section 1g)
    assert k["rmap_tested"] == 38783
    assert k["kept_referenced"] == 85847 - 38783
    assert abs(s["kswapd_rmap_tested"] / k["rmap_tested"] - 1) < 0.25
    assert s["kswapd_kept_referenced"] < 0.5 * k["kept_referenced"]
    report = (tmp_path / "v" / "report.md").read_text()
    assert "Kernel's agings (try_to_inc_max_seq, kprobe): 17 in 7 bursts" in report
    assert "it tested 38783 isolated pages and kept 47064 untested" in report


def test_the_aging_walks_mm_stats_are_parsed_and_compared(tmp_path: Path) -> None:
    """lru_gen_full's mm_stats line (T Y F A, running totals with one history generation) at the
    start and the end of a run gives what node 0's aging walks read, found young and let
    through the Bloom filter (docs/validation.md, section 1g). With per-process page tables
    (`lru_gen_mm_tables=true`, whose walks count every PTE they read, as the kernel's) the model
    reads as many PTEs and enters as many page tables as the kernel, and finds more of them
    young (1.55x)."""
    from tierkit import validate_press as vp

    log = "\n".join(
        f"TKREC_LRUGEN_FULL {when} {line}"
        for when, lines in (
            ("start", ["memcg     1 /", " node     0", "  3  100  5  0", "   0x 0x 0x 0x", "   7T 2Y 1F 0A"]),
            ("end", ["memcg     1 /", " node     0", "   107T 52Y 9F 4A", " node     1", "   5T 0Y 1F 0A"]),
        )
        for line in lines
    )
    parsed = parse_guest_log(GUEST_LOG + log, "x.log")
    assert parsed["lru_gen_walks"]["0"] == {
        "leaf_total": 100,
        "leaf_young": 50,
        "nonleaf_found": 8,
        "nonleaf_added": 4,
    }
    assert parsed["lru_gen_walks"]["1"]["leaf_total"] == 5
    rec = load_recording(vp.PRESS_RECORDING_TRACED_WALKS)
    assert rec["lru_gen_walks"]["0"] == {
        "leaf_total": 318621,
        "leaf_young": 122158,
        "nonleaf_found": 676,
        "nonleaf_added": 320,
    }
    c = vp.validate_press(
        tmp_path / "v", rec, vp.PRESS_RECORDING_TRACED_WALKS, seed=1, nbt_params=["lru_gen_mm_tables=true"]
    )
    k, s = c["kernel_reclaim"], c["sim_reclaim"]
    for key in ("leaf_total", "nonleaf_found"):
        assert abs(s[f"kswapd_walk_{key}"] / k[f"walk_{key}"] - 1) < 0.25, key
    assert s["kswapd_walk_leaf_young"] > k["walk_leaf_young"]
    report = (tmp_path / "v" / "report.md").read_text()
    assert "they read 318621 PTEs and found 122158 young" in report


def test_with_the_tlb_ticking_the_kernel_still_keeps_runs_of_young_pages_whole(tmp_path: Path) -> None:
    """A boot with the workload's TLB ticker (tktlbtick=1000: each wake flushes TCG's TLB, so
    swept pages' accessed bits are set again after a clear, docs/validation.md section 1g) keeps
    about as many isolated pages untested as the boots without it: TCG's TLB is not why the
    kernel's eviction keeps three times the model's. The kernel's batches are bimodal, with a run
    of 163 consecutive batches that reclaimed nothing (about 10K neighbouring young pages in the
    oldest generation); the model's less so (about half the kernel's share kept nearly whole; a
    third before kswapd's demotions started inside the step on the fault path, section 1t)."""
    from tierkit import validate_press as vp

    rec = load_recording(vp.PRESS_RECORDING_TRACED_TLBTICK)
    assert rec["meta"]["tlb_tick_us"] == "1000"
    c = vp.validate_press(tmp_path / "v", rec, vp.PRESS_RECORDING_TRACED_TLBTICK, seed=1)
    k, s = c["kernel_reclaim"], c["sim_reclaim"]
    assert (k["kept_referenced"], k["pgscan_kswapd"]) == (37714, 73572)
    assert k["kept_referenced"] > 0.45 * k["pgscan_kswapd"]
    assert (k["evict_batches"], k["evict_batches_few"], k["evict_batches_most"]) == (1164, 489, 420)
    assert k["evict_kept_run_longest"] == 163
    assert k["evict_kept_run_longest_at_s"] == pytest.approx(67.87, abs=0.01)
    kernel_few = k["evict_batches_few"] / k["evict_batches"]
    assert s["kswapd_evict_batches"] > 0
    assert s["kswapd_evict_batches_few"] / s["kswapd_evict_batches"] < kernel_few / 1.5
    assert s["kswapd_kept_referenced"] < 0.5 * k["kept_referenced"]
    # the default models the guest's one vCPU (kswapd takes turns with the workload, section
    # 1z); with its sweeps in address order as well, the model keeps runs of neighbouring young
    # pages too: several times the pages kept untested, and kept batches at about the kernel's
    # share
    assert c["kswapd_shares_cpu"] is True
    assert c["kswapd_slice_ms"] == 1.0
    both = vp.validate_press(
        tmp_path / "b",
        rec,
        vp.PRESS_RECORDING_TRACED_TLBTICK,
        seed=1,
        sweep_in_order=True,
    )["sim_reclaim"]
    assert both["kswapd_kept_referenced"] > 2.5 * s["kswapd_kept_referenced"]
    assert both["kswapd_evict_batches_few"] / both["kswapd_evict_batches"] > 0.6 * kernel_few
    text = (tmp_path / "b" / "experiment.toml").read_text()
    assert "kswapd_shares_cpu = true" in text
    assert "kswapd_slice_ms = 1\n" in text
    assert "in_order = true" in text
    report = (tmp_path / "v" / "report.md").read_text()
    assert "1164, of which 489 reclaimed fewer than 8 pages and 420 at least 56" in report
    # the lines as the guest writes them: one shrink event per batch
    ev = (
        "TKREC_VMSCAN kswapd0-43 [000] ..... {t}: mm_vmscan_lru_shrink_inactive: nid=0 "
        "nr_scanned={n} nr_reclaimed={r} nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 "
        "nr_activate_anon=0 nr_activate_file=0 nr_ref_keep={k} nr_unmap_fail=0 priority=3 "
        "flags=RECLAIM_WB_ANON\n"
    )
    log = (
        "TKREC_VMSCAN kswapd0-43 [000] ..... 38.6: mm_vmscan_kswapd_wake: nid=0 order=0\n"
        + ev.format(t="38.7", n=64, r=64, k=0)
        + ev.format(t="38.8", n=64, r=0, k=2)
        + ev.format(t="38.9", n=70, r=0, k=3)
        + ev.format(t="39.0", n=64, r=30, k=1)
    )
    parsed = parse_guest_log(GUEST_LOG + log, "x.log")
    batches = parsed["kswapd_trace"]["batches"]
    assert batches == [[38.7, 64, 64, 0], [38.8, 64, 0, 2], [38.9, 70, 0, 3], [39.0, 64, 30, 1]]
    assert vp.eviction_batches(batches) == {
        "evict_batches": 4.0,
        "evict_batches_few": 2.0,
        "evict_batches_most": 1.0,
        "evict_kept_run_longest": 2.0,
        "evict_kept_run_longest_at_s": 38.8,
    }


def test_with_kswapd_beside_the_workload_the_kernel_keeps_more_untested(tmp_path: Path) -> None:
    """Two boots with two vCPUs, the workload pinned to CPU 0 (docs/validation.md, section 1g):
    kswapd runs beside it, and the kernel keeps two thirds of the pages it isolates untested, more
    than with one vCPU, so the one vCPU is not why it keeps so many. Per burst of agings the
    model's kswapd reclaims what the kernel's does (agings and ticker boots, within 25%: 1.24x on
    the ticker boot, whose burst now includes the other processes' idle pages; 1.17x before
    kswapd took turns with the workload on the one vCPU, section 1z). On the first
    two-vCPU boot, whose DMA zone settled above its promotion bar (section 1h), the model with
    that bar promotes and demotes about as much over the run, but its steady state has no kswapd
    burst where the kernel's was woken by other allocations (the gap this test pins: it fails
    when the gap closes)."""
    from tierkit import validate_press as vp

    for path in vp.PRESS_RECORDING_TRACED_2CPU:
        rec = load_recording(path)
        assert (rec["meta"]["cpus"], rec["meta"]["workload_cpu"]) == ("2", "0")
        vm = rec["vmstat"]
        isolated = vm[-1]["pgscan_kswapd"] - vm[0]["pgscan_kswapd"]
        tested = rec["kprobe_calls"]["lru_gen_look_around"]
        assert (isolated - tested) / isolated > 0.6, path

    def per_burst(path: Path) -> tuple[dict[str, Any], float, float]:
        c = vp.validate_press(tmp_path / path.name, load_recording(path), path, seed=1)
        k, s = c["kernel_reclaim"], c["sim_reclaim"]
        kernel = c["kernel_kswapd_trace"]["reclaimed"] / k["kswapd_aging_bursts"]
        return c, kernel, s["demotions"] / s["kswapd_aging_bursts"]

    for path in (vp.PRESS_RECORDING_TRACED_AGINGS, vp.PRESS_RECORDING_TRACED_TLBTICK):
        c, kernel, model = per_burst(path)
        assert model == pytest.approx(kernel, rel=0.25), (path, kernel, model)
        traced, runs = c["kernel_kswapd_trace"], c["sim_reclaim"]["kswapd_runs"]
        report = (tmp_path / path.name / "report.md").read_text()
        assert f"Per run it reclaimed {traced['reclaimed'] / traced['runs']:.0f} pages" in report
        assert f"per run ({runs:.0f} runs)" in report
    c, _, _ = per_burst(vp.PRESS_RECORDING_TRACED_2CPU[0])
    assert c["node0_zones"]["dma_above_bar"]
    assert "dma_zone_above_bar=true" in c["policy"]
    rows = {r["metric"]: r for r in c["rows"]}
    assert rows["promotions"]["ratio"] == pytest.approx(1.0, abs=0.1)
    assert rows["demotions"]["ratio"] == pytest.approx(1.0, abs=0.15)
    assert rows["demotions_per_s"]["kernel"] > 50
    assert rows["demotions_per_s"]["sim"] < 0.1 * rows["demotions_per_s"]["kernel"]


def test_the_order_of_the_processes_in_the_file_does_not_decide_the_multi_gen_result(
    tmp_path: Path,
) -> None:
    """Boot 5's experiment with its two processes in either order (docs/validation.md, sections
    1g and 1x): over seeds 1-16 the multi-gen model promotes within 5% (164.8K and 168.9K at
    the change that made the exec'd program's first window the default). A single run settles
    in one of several steady states (134-211K pages over the run), so means over 4 seeds
    differed by 12% (144.7K and 162.1K) where those over 16 differ by 2.5%. Before eviction
    tested its batch page by page, the other processes first gave 6% fewer promotions and a
    second steady state (section 1f)."""
    import tierkit.validate_press as vp

    path = vp.PRESS_RECORDING_400S_5
    c = vp.validate_press(tmp_path / "v", load_recording(path), path, seed=1)
    text = (tmp_path / "v" / "experiment.toml").read_text()
    head, rest = text.split("[[process]]", 1)
    first, second = rest.split("[[process]]")
    swapped = tmp_path / "swapped.toml"
    swapped.write_text(head + "[[process]]" + second.rstrip() + "\n\n[[process]]" + first)

    # the 32 runs in threads (a run releases the GIL)
    seeds = range(1, 17)
    runs = [
        (experiment, c["policy"], [], seed)
        for experiment in (tmp_path / "v" / "experiment.toml", swapped)
        for seed in seeds
    ]
    promotions = slowdowns(runs, key="promotions")
    n = len(seeds)
    listed, other_first = sum(promotions[:n]) / n, sum(promotions[n:]) / n
    assert other_first == pytest.approx(listed, rel=0.05), (listed, other_first)


def test_node_0_is_judged_zone_by_zone_with_the_other_processes_pages() -> None:
    """The fifth and sixth boots record node 0's zones (docs/validation.md, section 1f): the DMA
    zone settles at its low watermark + lowmem_reserve (2981 and 2991 free pages at the median),
    so promotions have what DMA32 gives before its high watermark: 1293 and 1299 pages, not the
    3315 and 544 the node's free pages after the fill and its summed watermarks give (750 and
    3600 pages come back to node 0 at the first reclaim, most likely from the per-CPU lists). Other
    processes' pages (the guest's tmpfs root and shells) sit on node 0 when the sweeps start,
    2377 and 2386, 203 and 53 of them still there at the run's median; the experiment carries
    them as an idle process of their own."""
    import tierkit.validate_press as vp

    rec = load_recording(vp.PRESS_RECORDING_400S_5)
    assert rec["node0_zones"]["start"]["DMA"]["protection"][3] == 2899
    assert vp.zone_room(rec) == (1293, 3109, 2981)
    meta = rec["meta"]
    assert int(rec["fill"]["node0_free_kb"]) // 4 - int(meta["node0_wmark_high"]) == 3315
    assert vp.foreign_pages(rec) == (2377, 203)
    assert vp.fast_tier(rec)[2] == 1293
    six = load_recording(vp.PRESS_RECORDING_400S_6)
    assert vp.zone_room(six) == (1299, 3109, 2991)
    assert vp.foreign_pages(six) == (2386, 53)
    text, _ = vp.sim_experiment(rec, {"lru_gen", "watermark_scale_factor"})
    assert 'name = "others"' in text
    assert f"size_bytes = {(2377 - 203) * 4096}" in text
    # recordings without the zones keep the node's figures and no other processes
    old = load_recording(vp.PRESS_RECORDING_400S_4)
    assert vp.zone_room(old) is None
    assert 'name = "others"' not in vp.sim_experiment(old, {"lru_gen"})[0]


def test_the_zones_per_cpu_lists_are_parsed_with_their_free_pages() -> None:
    """The guest samples node 0's zones' free pages and the pages on their per-CPU lists (free but
    not counted free: a second CPU's list can take 2,000 pages at once, docs/validation.md section
    1h); the recording keeps both in each sample."""
    line = "numa_pte_updates=256 numa_hint_faults=105"
    log = GUEST_LOG.replace(
        line, f"{line} n0_free_DMA=3040 n0_free_DMA32=16537 n0_pcp_DMA=12 n0_pcp_DMA32=2031", 1
    )
    rec = parse_guest_log(log, "x.log")
    sample = next(v for v in rec["vmstat"] if v["t"] == 4.0)
    assert (sample["n0_free_DMA32"], sample["n0_pcp_DMA32"], sample["n0_pcp_DMA"]) == (16537, 2031, 12)
    assert "n0_pcp_DMA32" not in next(v for v in rec["vmstat"] if v["t"] == 5.0)


def test_a_two_vcpu_boot_with_the_dma_zone_above_the_promotion_bar_stops_churning(
    tmp_path: Path,
) -> None:
    """The third two-vCPU boot (docs/validation.md, section 1h) sampled node 0's per-CPU lists:
    after the fill 9.6K free pages sat on them, not counted free, until kswapd's first run drained
    them; and its DMA zone settled at 3040 free pages, above the promotion path's bar (high 96 + 1
    + lowmem_reserve 2899), so migrate_balanced_pgdat passed through DMA, kswapd ran once and the
    whole workload came to node 0. The model does so too when told the DMA zone passes
    (dma_zone_above_bar, which `validate kernel` sets from the recording); it misses only the
    first run's demotions, made while the DMA zone was still below the bar. Without it the model
    keeps churning."""
    from tierkit import validate_press as vp

    path = vp.PRESS_RECORDING_TRACED_2CPU_PCP
    rec = load_recording(path)
    assert (rec["meta"]["cpus"], rec["meta"]["workload_cpu"]) == ("2", "0")
    start = float(rec["sweep_start_s"])
    before = [v["n0_pcp_DMA32"] for v in rec["vmstat"] if "n0_pcp_DMA32" in v and v["t"] < start]
    after = [v["n0_pcp_DMA32"] for v in rec["vmstat"] if "n0_pcp_DMA32" in v and v["t"] > start + 1]
    assert max(before) > 9000
    assert max(after) < 1500
    dma = rec["node0_zones"]["start"]["DMA"]
    bar = int(dma["high"]) + 1 + int(dma["protection"][3])
    assert bar == 2996
    assert vp.dma_promotion_bar(rec) == bar
    c = vp.validate_press(tmp_path / "v", rec, path, seed=1)
    assert c["node0_zones"]["dma_settled"] == 3040 > bar
    assert (c["node0_zones"]["dma_promotion_bar"], c["node0_zones"]["dma_above_bar"]) == (bar, True)
    assert len(rec["kswapd_trace"]["runs"]) == 1
    # the per-CPU lists: summarised in comparison.json and the report
    pcp = c["kernel_pcp"]
    assert pcp["before_first_reclaim_max"] == 9638
    assert pcp["after_median"] < 1000
    assert pcp["after_max"] < 1500
    report = (tmp_path / "v" / "report.md").read_text()
    assert "The DMA zone settled above its bar in the promotion path (2996" in report
    assert "Node 0's DMA32 pages on the per-CPU lists" in report
    # a boot whose DMA zone stayed below the bar, and one without the lists, say neither
    below = vp.validate_press(
        tmp_path / "b", load_recording(vp.PRESS_RECORDING_400S_5), vp.PRESS_RECORDING_400S_5, seed=1
    )
    assert below["node0_zones"]["dma_above_bar"] is False
    assert below["kernel_pcp"] is None
    assert "settled above its bar" not in (tmp_path / "b" / "report.md").read_text()
    rows = {r["metric"]: r for r in c["rows"]}
    assert rows["demotions_per_s"]["kernel"] == rows["demotions_per_s"]["sim"] == 0
    assert rows["cold_fast_share"]["kernel"] > 0.999
    assert rows["cold_fast_share"]["sim"] > 0.999
    assert rows["promotions"]["ratio"] == pytest.approx(1.0, abs=0.05)
    assert rows["demotions"]["kernel"] == 1922
    assert rows["demotions"]["sim"] == 0
    # without the bar the model churns: 7.6x the kernel's demotions over the run
    churn = vp.validate_press(tmp_path / "n", rec, path, seed=1, nbt_params=["dma_zone_above_bar=false"])
    rows = {r["metric"]: r for r in churn["rows"]}
    assert rows["demotions"]["sim"] > 5 * rows["demotions"]["kernel"]
    assert rows["demotions_per_s"]["sim"] > 50
    assert "the simulated nbt is told so" in report
    assert (
        "the simulated nbt is not (`dma_zone_above_bar=false`)" in (tmp_path / "n" / "report.md").read_text()
    )


def test_other_processes_pages_are_counted_on_boots_whose_first_report_follows_promotions(
    tmp_path: Path,
) -> None:
    """On the boots with the workload's TLB ticker (one and two vCPUs) the workload's first report
    comes after the sweeps' first promotions: 3.5-5K hot pages are already on node 0. The other
    processes' pages on node 0 at the fill are its anonymous LRU less the workload's pages then
    (the cold region less what was demoted by the fill sample, the hot pages promoted by it:
    none), not less the first report's, which left them out of the simulated node (0 pages, where
    every other boot has 2.4K) and the ticker boots outside 25% on their steady demotions and
    churn (docs/validation.md, section 1f)."""
    from tierkit import validate_press as vp

    expected = {
        vp.PRESS_RECORDING_TRACED_TLBTICK: (2381, 272),
        vp.PRESS_RECORDING_TRACED_GENS[2]: (2382, 323),
        vp.PRESS_RECORDING_TRACED_2CPU[0]: (2342, 406),
        vp.PRESS_RECORDING_TRACED_2CPU[1]: (2344, 327),
    }
    for path, pages in expected.items():
        rec = load_recording(path)
        assert rec["hot_node0"][0][1] > 3000, path  # promotions came before the first report
        fill = vp._before_sweep(rec)
        assert fill is not None
        assert fill["pgpromote_success"] == rec["vmstat"][0]["pgpromote_success"]
        assert vp.foreign_pages(rec) == pages, path
        text, _ = vp.sim_experiment(rec, {"lru_gen", "watermark_scale_factor"})
        assert f"size_bytes = {(pages[0] - pages[1]) * 4096}" in text, path
    # a boot whose first report came before them counts as it did
    assert vp.foreign_pages(load_recording(vp.PRESS_RECORDING_400S_5)) == (2377, 203)
    c = vp.validate_press(
        tmp_path / "t",
        load_recording(vp.PRESS_RECORDING_TRACED_TLBTICK),
        vp.PRESS_RECORDING_TRACED_TLBTICK,
        seed=1,
    )
    rows = {r["metric"]: r for r in c["rows"]}
    for m in ("promotions", "demotions"):
        assert abs(rows[m]["ratio"] - 1) < 0.25, rows[m]
    assert c["node0_zones"]["foreign"] == 2381


def test_the_multi_gen_model_agrees_with_the_traced_multi_gen_kernel(tmp_path: Path) -> None:
    """The traced multi-gen recording (docs/validation.md, section 1e) against both simulated
    LRUs: the multi-gen model is within 25% on every compared figure and on the whole run's
    promotions and demotions; the classic one promotes and demotes ~1.4x the kernel's pages over
    the run and keeps too few cold pages on the fast tier. The kernel's kswapd kept what it
    found young without activating it (pgactivate ~0), as the model does."""
    from tierkit.validate_press import PRESS_RECORDING, validate_press

    rec = load_recording(PRESS_RECORDING)
    got = {}
    for lru in ("true", "false"):
        c = validate_press(tmp_path / lru, rec, PRESS_RECORDING, nbt_params=[f"lru_gen={lru}"])
        got[lru] = ({r["metric"]: r for r in c["rows"]}, c)
    gen, c = got["true"]
    assert c["sim_lru"] == "multi-gen"
    assert c["within_tolerance"]
    for m in ("promotions", "demotions"):
        assert abs(gen[m]["ratio"] - 1) < 0.25, gen[m]
    classic, cc = got["false"]
    assert cc["sim_lru"] == "classic"
    for m in ("promotions", "demotions", "cold_fast_share"):
        assert abs(gen[m]["ratio"] - 1) < abs(classic[m]["ratio"] - 1), (m, gen[m], classic[m])
    assert c["kernel_reclaim"]["pgactivate"] < 100
    # kswapd reclaims what the kernel's did (1.16x); it isolates 0.65x and keeps (finds young)
    # 0.30x the kernel's pages (docs/validation.md, section 1f)
    kernel, sim = c["kernel_reclaim"], c["sim_reclaim"]
    assert abs(sim["demotions"] / kernel["pgsteal_kswapd"] - 1) < 0.25
    assert 0.5 < sim["kswapd_scanned"] / kernel["pgscan_kswapd"] < 0.9
    kept = kernel["pgscan_kswapd"] - kernel["pgsteal_kswapd"]
    assert 0.15 < sim["kswapd_kept"] / kept < 0.6
    # the same scenario recorded with node 0's zones: the experiment built zone by zone agrees
    # over the run (its steady-state rates are 0.72-0.79x the kernel's over seeds 1-4, outside),
    # and its kswapd keeps as few: not the zones' doing
    from tierkit.validate_press import PRESS_RECORDING_TRACED_ZONES

    z = validate_press(
        tmp_path / "zones", load_recording(PRESS_RECORDING_TRACED_ZONES), PRESS_RECORDING_TRACED_ZONES
    )
    assert z["node0_zones"] is not None
    zrows = {r["metric"]: r for r in z["rows"]}
    for m in ("promotions", "demotions"):
        assert abs(zrows[m]["ratio"] - 1) < 0.15, zrows[m]
    zk, zs = z["kernel_reclaim"], z["sim_reclaim"]
    assert abs(zs["demotions"] / zk["pgsteal_kswapd"] - 1) < 0.15
    assert 0.05 < zs["kswapd_kept"] / (zk["pgscan_kswapd"] - zk["pgsteal_kswapd"]) < 0.5
    assert c["sim_reclaim"]["kswapd_activated"] == 0
    assert c["sim_reclaim"]["kswapd_kept"] > 0
    assert c["sim_reclaim"]["kswapd_agings"] > 0
    # not an artifact of the step: halved, the same promotions and kswapd work within 3%

    def mean_of(exp: Path, policy: str, epoch_ms: str, seeds: tuple[int, ...]) -> tuple[float, float]:
        """Promotions and kswapd's isolated pages, means over the seeds (runs in threads)."""
        runs = summaries([(exp, policy, [f"epoch_ms={epoch_ms}"], seed) for seed in seeds])
        return (
            sum(r["promotions"] for r in runs) / len(seeds),
            sum(r["policy_stats"]["kswapd_scanned"] for r in runs) / len(seeds),
        )

    # (over seeds 1-16: one seed's kswapd ages 25-31 times, which moves its isolated pages by
    # +-5% whatever the step, and a seed's promotions spread 40.6-45.6K; with the exec'd
    # program's first window, section 1x, the means of seeds 1-3 differed by 6% and 9%, those
    # of 1-8 by 1% and 3.3%, those of 1-16 by 0.4% and 1.3%)
    exp, seeds = tmp_path / "true" / "experiment.toml", tuple(range(1, 17))
    whole, half = mean_of(exp, c["policy"], "1", seeds), mean_of(exp, c["policy"], "0.5", seeds)
    assert half[0] == pytest.approx(whole[0], rel=0.03)
    assert half[1] == pytest.approx(whole[1], rel=0.03)
    # and with the sweep's faults in address order (--sweep-in-order), on the zones boot, where
    # the faults of a scanner window come in one burst: kswapd woken by the burst's failed
    # promotions works from the fault that woke it, not from the step's start (at 1 ms it
    # isolated 1.12x the pages and promoted 1.06x of 0.5 ms over these seeds while it did)
    zin = validate_press(
        tmp_path / "zones_in_order",
        load_recording(PRESS_RECORDING_TRACED_ZONES),
        PRESS_RECORDING_TRACED_ZONES,
        sweep_in_order=True,
    )

    exp, seeds = tmp_path / "zones_in_order" / "experiment.toml", (1, 2, 3, 4)
    whole, half = mean_of(exp, zin["policy"], "1", seeds), mean_of(exp, zin["policy"], "0.5", seeds)
    assert half[0] == pytest.approx(whole[0], rel=0.05)
    assert half[1] == pytest.approx(whole[1], rel=0.05)
    # the traced kernel kept reclaiming to the end, and so did the model
    assert c["kernel_kswapd_trace"]["gave_up"] == 0
    assert c["sim_reclaim"]["kswapd_gave_up"] == 0


def test_validate_kernel_sets_several_recordings_side_by_side(
    tk: Callable[..., object], tmp_path: Path
) -> None:
    """Repeated --recording: each recording into its own subdirectory (named after it, a repeated
    name numbered), and summary.md / summary.json with every figure's ratio per recording."""
    out = tmp_path / "many"
    proc = tk(
        "validate",
        "kernel",
        "--recording",
        str(DEFAULT_RECORDING),
        "--recording",
        str(DEFAULT_RECORDING),
        "--out",
        str(out),
        "--json",
    )
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    summary = json.loads(proc.stdout)  # type: ignore[attr-defined]
    assert summary == json.loads((out / "summary.json").read_text())
    dirs = [e["dir"] for e in summary["recordings"]]
    assert dirs == ["kernel_nbt_612", "kernel_nbt_612-2"]
    for d in dirs:
        single = json.loads((out / d / "comparison.json").read_text())
        e = next(x for x in summary["recordings"] if x["dir"] == d)
        assert e["within_tolerance"] == single["within_tolerance"]
        assert e["ratios"] == {r["metric"]: r["ratio"] for r in single["rows"]}
    # the same recording and seed: the same figures
    assert summary["recordings"][0]["ratios"] == summary["recordings"][1]["ratios"]
    table = (out / "summary.md").read_text()
    assert "| [kernel_nbt_612-2](kernel_nbt_612-2/report.md) |" in table
    # the totals over the recordings
    assert summary["compared_figures"] == sum(len(e["compared"]) for e in summary["recordings"]) > 0
    assert summary["outside_figures"] == sum(len(e["outside"]) for e in summary["recordings"])
    within = sum(e["within_tolerance"] for e in summary["recordings"])
    assert (
        f"{summary['outside_figures']} of the {summary['compared_figures']} compared figures are outside"
        f" ±25%; {within} of the 2 recordings have every compared figure within it." in table
    )


def test_validate_kernel_refuses_bad_recording_lists_before_writing(
    tk: Callable[..., object], tmp_path: Path
) -> None:
    cases = [
        (["--all-recordings", "--recording", str(DEFAULT_RECORDING)], "--all-recordings: not with"),
        (["--kswapd-shares-cpu"], "model the press scenario's guest"),
        (["--kswapd-own-cpu"], "model the press scenario's guest"),
        (["--set", "duration_s=3"], "--set: `duration_s` is not a model setting"),
        (["--set", "kswapd_shares_cpu=true"], "is not a model setting"),
        (["--set", "epoch_ms"], "--set: expected KEY=VALUE, got `epoch_ms`"),
        (["--set", "epoch_ms=fast"], "--set epoch_ms: `fast` is not a TOML value"),
        (["--scenario", "press", "--kswapd-own-cpu", "--kswapd-shares-cpu"], "not allowed with argument"),
        (
            ["--recording", str(DEFAULT_RECORDING), "--recording", "x.json", "--record"],
            "--record: records one",
        ),
        (["--recording", str(DEFAULT_RECORDING), "--recording", str(tmp_path / "no.json")], "does not exist"),
        # found only once the comparison starts: the directory it made is removed again
        (["--scenario", "press", "--recording", str(DEFAULT_RECORDING)], "not an nbtpress recording"),
        (["--seed", "-3"], "argument --seed: `-3` is out of range"),
    ]
    for k, (extra, message) in enumerate(cases):
        out = tmp_path / f"o{k}"
        proc = tk("validate", "kernel", *extra, "--out", str(out))
        assert proc.returncode != 0  # type: ignore[attr-defined]
        assert message in proc.stderr  # type: ignore[attr-defined]
        assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]
        assert not out.exists()


def test_every_shipped_recording_loads_and_the_default_comes_first() -> None:
    from tierkit.validate import shipped_recordings
    from tierkit.validate_press import PRESS_RECORDING

    press = shipped_recordings("press")
    assert press[0] == PRESS_RECORDING
    assert len(set(press)) == len(press) == 19
    for path in press:
        assert load_recording(path)["scenario"] == "press", path
    assert shipped_recordings("empty") == [DEFAULT_RECORDING]


def test_node0s_generations_are_parsed_and_judged_as_should_run_aging_judges_them() -> None:
    """tkgens=1 puts node 0's multi-gen generations (/sys/kernel/debug/lru_gen, one token per
    memory cgroup, oldest first) on every sample; the recording keeps them, and the state
    kswapd found at a wake after a quiet spell is judged by should_run_aging's rule
    (docs/validation.md, section 1g)."""
    from tierkit import validate_press as vp

    log = GUEST_LOG.replace(
        "numa_pte_updates=256 numa_hint_faults=105",
        "numa_pte_updates=256 numa_hint_faults=105 n0_gens_t=4.25 "
        "n0_gens_1=5:900:40:0,6:300:30:2,7:10:28:0 n0_gens_2=3:50:1:0",
    )
    rec = parse_guest_log(log, "x.log")
    tr = rec["lru_gen_trace"]
    assert tr["columns"] == ["t", "memcg", "seq", "age_ms", "anon", "file"]
    assert tr["rows"] == [
        [4.25, 1, 5, 900, 40, 0],
        [4.25, 1, 6, 300, 30, 2],
        [4.25, 1, 7, 10, 28, 0],
        [4.25, 2, 3, 50, 1, 0],
    ]
    # at the time they were read (n0_gens_t; the sample's t is earlier), of the memory cgroup
    # with the most pages, youngest first, anon and file summed
    assert vp.kernel_generations(rec) == [(1.25, [28, 32, 40])]
    bad = GUEST_LOG.replace("numa_hint_faults=105", "numa_hint_faults=105 n0_gens_1=5:900:40")
    with pytest.raises(ValidationError, match=r"x\.log: line \d+: .*seq:age_ms:anon:file"):
        parse_guest_log(bad, "x.log")
    # should_run_aging: two generations must age; four never; three when the youngest holds
    # more than half or the oldest less than a quarter
    assert vp.must_age_first([10, 10])
    assert not vp.must_age_first([90, 1, 1, 1])
    assert not vp.must_age_first([40, 30, 30])
    assert vp.must_age_first([51, 25, 24])
    assert vp.must_age_first([40, 40, 20])
    # at each wake a second or more after the one before: the last sample at or before it
    gens = [(0.0, [10, 10]), (1.0, [40, 30, 30]), (2.0, [40, 40, 20, 5]), (3.0, [5, 5, 90])]
    w = vp.wake_generations(gens, [0.5, 0.6, 2.5, 3.6])
    assert w["quiet_wakes"] == 3  # 0.6 follows 0.5 too closely
    assert (w["quiet_wakes_2_gens"], w["quiet_wakes_3_gens"], w["quiet_wakes_4_gens"]) == (1, 1, 1)
    assert w["quiet_wakes_aging_first"] == 1  # the two generations at 0.5
    assert w["quiet_wakes_oldest_share"] == pytest.approx((0.5 + 5 / 105 + 0.9) / 3)
    assert w["samples_4_gens_share"] == 0.25
    assert vp.wake_generations([], [1.0]) == {} == vp.wake_generations(gens, [])


def test_what_kswapd_finds_when_it_wakes_is_set_beside_the_models(tmp_path: Path) -> None:
    """Three boots sampled node 0's generations (tkgens=1; docs/validation.md, section 1g). At a
    wake after a quiet spell the kernel does not always evict first: on the first two boots it
    ages first at 4 of its 16 such wakes, so the model's ageing first is not why it keeps fewer
    pages untested. The model spends at least as much of the run with four generations as the
    kernel, and on the second boot more (the gap this test pins: it fails when it closes; on the
    first boot it closed when kswapd's demotions started inside the step, section 1t; on the
    second it went from more than 0.15 of the run to 0.08 when kswapd took turns with the
    workload on the one vCPU, section 1z)."""
    from tierkit import validate_press as vp

    first, second, _ = vp.PRESS_RECORDING_TRACED_GENS
    aged_first = 0
    for path in (first, second):
        rec = load_recording(path)
        gens = vp.kernel_generations(rec)
        assert len(gens) > 900, path  # a sample every ~100 ms over the process's life
        assert all(1 <= len(g) <= 4 for _, g in gens)
        c = vp.validate_press(tmp_path / path.name, rec, path, seed=1)
        k, s = c["kernel_wake_generations"], c["sim_wake_generations"]
        aged_first += int(k["quiet_wakes_aging_first"])
        assert k["quiet_wakes"] >= 7
        assert s["quiet_wakes"] >= 6
        assert s["samples_4_gens_share"] > k["samples_4_gens_share"] - 0.05, (k, s)
        if path == second:
            assert s["samples_4_gens_share"] > k["samples_4_gens_share"] + 0.04, (k, s)
        assert (tmp_path / path.name / "generations.png").stat().st_size > 10_000
        report = (tmp_path / path.name / "report.md").read_text()
        assert "![generations](generations.png)" in report
        assert f"kernel {k['quiet_wakes']:.0f} wakes after a quiet spell" in report
    assert aged_first == 4
    # the ticker boot: the whole run's promotions and demotions within 15% by default (they were
    # not while the other processes' pages were left out of its node, section 1f) and with the
    # sweep modelled in address order (its accessed bits set where the pass went); with kswapd
    # taking turns with the workload on the one vCPU (section 1z) the two keep about as many
    # pages untested (0.93x on the mean of seeds 1-12), both well under half the kernel's; with
    # kswapd on a CPU of its own the sweep in order kept more (1.22x with the exec'd program's
    # first window, section 1x; twice as many before kswapd's demotions started inside the step,
    # section 1t); the steady state's demotions a second, which spread 0.6-1.0x over seeds, are
    # not pinned
    tick = vp.PRESS_RECORDING_TRACED_GENS[2]
    rec = load_recording(tick)
    default = vp.validate_press(tmp_path / "d", rec, tick, seed=1)
    swept = vp.validate_press(tmp_path / "s", rec, tick, seed=1, sweep_in_order=True)
    for c in (default, swept):
        rows = {r["metric"]: r for r in c["rows"]}
        for m in ("promotions", "demotions", "promotions_per_s"):
            assert abs(rows[m]["ratio"] - 1) < 0.15, (m, rows[m])
    assert (swept["sweep_in_order"], default["sweep_in_order"]) == (True, False)
    seeds = range(1, 13)
    n = len(seeds)
    runs = summaries(
        [(tmp_path / d / "experiment.toml", default["policy"], [], seed) for d in "ds" for seed in seeds]
    )
    kept = [
        sum(r["policy_stats"]["kswapd_kept_referenced"] for r in runs[k * n : (k + 1) * n]) / n
        for k in (0, 1)
    ]
    assert 0.8 < kept[1] / kept[0] < 1.2, kept
    assert max(kept) < 0.5 * swept["kernel_reclaim"]["kept_referenced"], kept
    # a recording without the samples has neither the figures nor the picture
    c = vp.validate_press(
        tmp_path / "agings",
        load_recording(vp.PRESS_RECORDING_TRACED_AGINGS),
        vp.PRESS_RECORDING_TRACED_AGINGS,
        seed=1,
    )
    assert c["kernel_wake_generations"] is None
    assert c["sim_wake_generations"] is None
    assert not (tmp_path / "agings" / "generations.png").exists()


def test_the_pages_eviction_tested_are_parsed_and_placed_in_the_regions() -> None:
    """tklaaddr=1 records the address of every page multi-gen eviction tested (lru_gen_look_around)
    and whether it was young; the workload says where its regions are; the summary places the
    tests in the regions, over the run and in the batches that led a quiet wake."""
    from tierkit import validate_press as vp

    hot, cold = 0x7F0000000000, 0x7E0000000000
    log = GUEST_LOG.replace(
        "hot_node=1 cold_node=1 mono=3.5",
        f"hot_node=1 cold_node=1 hot_addr=0x{hot:x} cold_addr=0x{cold:x} mono=3.5",
    )
    ev = (
        "TKREC_VMSCAN kswapd0-43 [000] ..... {t}: mm_vmscan_lru_shrink_inactive: nid=0 "
        "nr_scanned=64 nr_reclaimed={r} nr_dirty=0 nr_writeback=0 nr_congested=0 nr_immediate=0 "
        "nr_activate_anon=0 nr_activate_file=0 nr_ref_keep=1 nr_unmap_fail=0 priority=3 "
        "flags=RECLAIM_WB_ANON\n"
    )
    la = "TKREC_LA {t} {a:x} {y}\n"
    log += (
        "TKREC_VMSCAN kswapd0-43 [000] ..... 10.0: mm_vmscan_kswapd_wake: nid=0 order=0\n"
        + la.format(t=10.01, a=hot + 0 * 4096, y=1)
        + la.format(t=10.02, a=hot + 20 * 4096, y=1)
        + la.format(t=10.03, a=hot + 50 * 4096, y=1)
        + ev.format(t="10.04", r=0)
        + la.format(t=10.05, a=cold + 7 * 4096, y=0)
        + ev.format(t="10.06", r=60)
        + la.format(t=10.07, a=cold + 3 * 4096, y=0)
    )
    rec = parse_guest_log(log, "x.log")
    assert (rec["hot_addr"], rec["cold_addr"]) == (hot, cold)
    assert rec["look_around"]["columns"] == ["t", "addr", "young"]
    assert rec["look_around"]["rows"][0] == [10.01, hot, 1]
    s = vp.look_around_summary(rec)
    assert s["tested"] == 5
    assert (s["hot_share"], s["cold_share"], s["young_share"]) == (0.6, 0.4, 0.6)
    assert s["in_order_share"] == 2 / 4  # hot +20, hot +30: in order; to cold and back: not
    # the wake's leading batches end at the first that reclaimed (10.06)
    assert s["quiet_lead_tested"] == 4
    assert s["quiet_lead_hot_share"] == 0.75
    assert vp.look_around_summary({"look_around": {"rows": []}}) == {}
    # the shipped boot: eviction tests the cold region's pages; at a wake after a quiet spell its
    # leading batches test young cold pages in ascending address order (docs/validation.md, 1g)
    path = vp.PRESS_RECORDING_TRACED_LOOKAROUND
    shipped = load_recording(path)
    s = vp.look_around_summary(shipped)
    assert s["tested"] == shipped["kprobe_calls"]["lru_gen_look_around"] == 36444
    assert s["cold_share"] > 0.9
    assert s["quiet_lead_tested"] > 1000
    assert s["quiet_lead_cold_share"] > 0.8
    assert s["quiet_lead_young_share"] > 0.9
    assert s["quiet_lead_in_order_share"] > 0.5


def test_the_guests_kswapd_waits_half_a_tick_on_one_vcpu() -> None:
    """`kswapd_wake_delay_us` from a recording's meta (docs/validation.md, section 1t): half a
    tick with one vCPU, none with a second vCPU or without `hz`; a malformed value is an error
    naming it, not a silent default."""
    from tierkit.validate import ValidationError, guest_wake_delay

    params = {"kswapd_wake_delay_us"}
    assert guest_wake_delay({"hz": "100"}, params) == ["kswapd_wake_delay_us=5000"]
    assert guest_wake_delay({"hz": "250", "cpus": "1"}, params) == ["kswapd_wake_delay_us=2000"]
    assert guest_wake_delay({"hz": "100", "cpus": "2"}, params) == []
    assert guest_wake_delay({}, params) == []
    assert guest_wake_delay({"hz": "100"}, set()) == []
    for meta in ({"hz": "fast"}, {"hz": "100", "cpus": "one"}, {"hz": "0"}):
        with pytest.raises(ValidationError, match="recording meta"):
            guest_wake_delay(meta, params)
    # the shipped one-vCPU recording gets it in its spec, the two-vCPU one does not
    from tierkit import validate_press as vp

    one = load_recording(vp.PRESS_RECORDING)
    _, spec = vp.sim_experiment(one, {"kswapd_wake_delay_us", "lru_gen"})
    assert "kswapd_wake_delay_us=5000" in spec
    two = load_recording(vp.PRESS_RECORDING_TRACED_2CPU[0])
    _, spec = vp.sim_experiment(two, {"kswapd_wake_delay_us", "lru_gen"})
    assert "kswapd_wake_delay_us" not in spec


def test_validate_kernel_sets_model_keys_of_the_simulated_run(
    tk: Callable[..., object], tmp_path: Path
) -> None:
    """--set KEY=VALUE sets a model key of the generated experiment (replacing the generator's
    line), the run uses it and comparison.json lists it; the press report names kswapd's turn as
    set."""
    import tierkit
    from tierkit.validate import MODEL_KEYS, with_sets

    # the settable keys are the core's own
    assert {k for k, _ in tierkit.common_keys()} >= MODEL_KEYS
    text = "workload = 1\nepoch_ms = 1\n\n[[process]]\nname = 1\n"
    got = with_sets(text, ["epoch_ms=0.5", "counter_noise = 0.1"])
    assert (
        got
        == "workload = 1\n\nepoch_ms = 0.5  # --set\ncounter_noise = 0.1  # --set\n[[process]]\nname = 1\n"
    )
    out = tmp_path / "v"
    proc = tk("validate", "kernel", "--set", "epoch_ms=0.5", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    assert "epoch_ms = 0.5  # --set" in (out / "experiment.toml").read_text()
    from tierkit import validate_press as vp

    rec = load_recording(vp.PRESS_RECORDING)
    c = vp.validate_press(tmp_path / "p", rec, vp.PRESS_RECORDING, sim_sets=["kswapd_slice_ms=2"])
    assert (c["kswapd_slice_ms"], c["sim_sets"]) == (2.0, ["kswapd_slice_ms=2"])
    assert "kswapd takes turns of 2 ms" in (tmp_path / "p" / "report.md").read_text()
    assert "kswapd_slice_ms = 2  # --set" in (tmp_path / "p" / "experiment.toml").read_text()


def test_kswapd_shares_the_cpu_as_the_recorded_guest_did() -> None:
    """By default kswapd takes turns with the simulated workload where the guest had one vCPU
    (turns of a 4 ms tick, or of the TLB ticker's 1 ms), and runs beside it where it had two;
    either can be forced (docs/validation.md, section 1z). A bad meta value is named."""
    from tierkit import validate_press as vp

    one = load_recording(vp.PRESS_RECORDING)
    two = load_recording(vp.PRESS_RECORDING_TRACED_2CPU[0])
    tick = load_recording(vp.PRESS_RECORDING_TRACED_TLBTICK)
    params = {"lru_gen"}

    def cpu_lines(rec: dict[str, object], **kw: object) -> list[str]:
        text, _ = vp.sim_experiment(rec, params, **kw)  # type: ignore[arg-type]
        return [x for x in text.splitlines() if x.startswith("kswapd_")]

    assert cpu_lines(one) == ["kswapd_shares_cpu = true"]
    assert cpu_lines(tick) == ["kswapd_shares_cpu = true", "kswapd_slice_ms = 1"]
    assert cpu_lines(two) == ["kswapd_shares_cpu = false"]
    assert cpu_lines(two, kswapd_shares_cpu=True) == ["kswapd_shares_cpu = true", "kswapd_slice_ms = 1"]
    assert cpu_lines(tick, kswapd_shares_cpu=False) == ["kswapd_shares_cpu = false"]
    assert vp.kswapd_slice_ms({"tlb_tick_us": "4000"}) is None
    assert vp.kswapd_slice_ms({"tlb_tick_us": "500"}) == 0.5
    bad = {**one, "meta": {**one["meta"], "cpus": "one"}}
    with pytest.raises(ValidationError, match="cpus='one'"):
        vp.sim_experiment(bad, params)
    with pytest.raises(ValidationError, match="tlb_tick_us"):
        vp.kswapd_slice_ms({"tlb_tick_us": "fast"})


def test_the_thp_recording_shows_one_hint_fault_and_one_promotion_per_huge_page() -> None:
    from tierkit.validate import THP_RECORDING, shipped_recordings

    rec = load_recording(THP_RECORDING)
    assert rec["scenario"] == "thp"
    assert rec["meta"]["page_size"] == "2097152"
    assert shipped_recordings("thp") == [THP_RECORDING]
    # the kernel gave both regions huge pages (64 + 256 MiB)
    assert rec["anon_huge_kb"] >= (rec["hot_pages"] + rec["cold_pages"]) * 4
    k = kernel_timeline(rec)
    m = metrics(k, rec["hot_pages"])
    huge = rec["hot_pages"] // 512
    # change_huge_pmd marks a huge page as one: one hint fault and one THP migration each, and
    # pgpromote_success counts its 512 base pages
    assert m["hint_faults"] == huge
    assert rec["vmstat"][-1]["thp_migration_success"] - rec["vmstat"][0]["thp_migration_success"] == huge
    assert m["promotions"] == rec["hot_pages"]
    assert m["hot_fast_at_end"] == 1.0
    # the workload's share of the one vCPU, which paces the scanner (task_tick_numa)
    assert all("wl_ticks" in v for v in rec["vmstat"][1:])


def test_validate_kernel_thp_runs_the_program_on_2mib_pages(
    tk: Callable[..., object], tmp_path: Path
) -> None:
    out = tmp_path / "vk"
    proc = tk("validate", "kernel", "--scenario", "thp", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    comparison = json.loads(proc.stdout)  # type: ignore[attr-defined]
    text = (out / "experiment.toml").read_text()
    assert 'page_size = "2MiB"' in text
    assert "cpu_share = 0.76" in text
    rows = {r["metric"]: r for r in comparison["rows"]}
    # one hint fault and one promotion (512 base pages) per huge page, as in the kernel
    assert rows["hint_faults"]["sim"] == rows["hint_faults"]["kernel"] == 32
    assert rows["promotions"]["sim"] == rows["promotions"]["kernel"] == 16384
    assert rows["hint_faults_per_s"]["within_tolerance"]
    # The kernel's first window comes 2 x scan_delay_ms after exec (the first task_numa_work of
    # a new mm only sets mm->numa_next_scan a scan_delay ahead; docs/validation.md, section 1w),
    # and so does the model's by default (first_window=exec, section 1x): the hot region reaches
    # the fast tier at 3.3 s against the kernel's 3.6 s, and every compared figure is within 25%
    assert 0.85 < rows["t50_s"]["ratio"] < 1.0, rows["t50_s"]
    assert comparison["within_tolerance"], comparison["rows"]
    assert "transparent huge pages" in (out / "report.md").read_text()
    # tierkit's rule before it (first_window=delay: the first window scan_delay_ms after the
    # start) brought the hot region in at 1.7 s, outside the tolerance
    delay_out = tmp_path / "delay"
    proc = tk(
        "validate", "kernel", "--scenario", "thp", "--nbt-param", "first_window=delay",
        "--out", str(delay_out), "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    comparison = json.loads(proc.stdout)  # type: ignore[attr-defined]
    assert "first_window=delay" in comparison["policy"]
    rows = {r["metric"]: r for r in comparison["rows"]}
    assert 0.4 < rows["t50_s"]["ratio"] < 0.6, rows["t50_s"]
    assert not comparison["within_tolerance"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "thp", "--record", "--record-size", "3,256,20"], "even MiB, got 3"),
        (["--scenario", "thp", "--recording", str(DEFAULT_RECORDING)], "give --scenario as it was recorded"),
        (
            ["--recording", str(DEFAULT_RECORDING.with_name("kernel_nbt_press_612_traced.json"))],
            "the press scenario, compared as empty: give --scenario as it was recorded (press)",
        ),
        (
            ["--recording", str(DEFAULT_RECORDING.with_name("kernel_nbt_press_thp_612.json.gz"))],
            "give --scenario as it was recorded (press-thp)",
        ),
    ],
)
def test_the_thp_scenario_refuses_odd_sizes_and_other_scenarios_recordings(
    tk: Callable[..., object], tmp_path: Path, args: list[str], message: str
) -> None:
    proc = tk("validate", "kernel", *args, "--out", str(tmp_path / "o"))
    assert proc.returncode != 0  # type: ignore[attr-defined]
    assert message in proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("scenario", "size", "message"),
    [
        ("press", "32,64,400", "expected HOT,COLD,SECONDS,FREE,RATE (five integers)"),
        ("empty", "32,480,20,16,8192", "expected HOT,COLD,SECONDS (three integers)"),
        ("thp", "64,x,20", "expected HOT,COLD,SECONDS (three integers)"),
    ],
)
def test_record_sizes_take_as_many_integers_as_the_scenario_has_sizes(
    tk: Callable[..., object], tmp_path: Path, scenario: str, size: str, message: str
) -> None:
    proc = tk(
        "validate", "kernel", "--scenario", scenario, "--record", "--record-size", size,
        "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert proc.returncode != 0  # type: ignore[attr-defined]
    assert message in proc.stderr  # type: ignore[attr-defined]
    assert not (tmp_path / "o" / "recording.json").exists()


def test_the_press_thp_recordings_show_linux_keeping_referenced_huge_pages() -> None:
    """The press scenario on transparent huge pages (docs/validation.md, section 1za): the kernel
    moves huge pages a few at a time and never brings the whole hot region to node 0, because its
    eviction finds almost every huge page it tests referenced (a cold 2 MiB page is touched 256
    times a second, as often as a hot one is, to the accessed bit)."""
    from tierkit.validate import shipped_recordings
    from tierkit.validate_press import PRESS_THP_RECORDING
    from tierkit.validate_press import kernel_timeline as press_timeline
    from tierkit.validate_press import metrics as press_metrics

    paths = shipped_recordings("press-thp")
    assert paths[0] == PRESS_THP_RECORDING
    assert len(set(paths)) == len(paths) == 3
    for path in paths:
        rec = load_recording(path)
        assert rec["scenario"] == "press", path
        assert rec["meta"]["page_size"] == "2097152", path
        # both regions on huge pages (32 + 64 MiB)
        assert rec["anon_huge_kb"] >= (rec["hot_pages"] + rec["cold_pages"]) * 4, path
        vm = rec["vmstat"]
        assert vm[-1]["thp_migration_success"] - vm[0]["thp_migration_success"] >= 40, path
        m = press_metrics(press_timeline(rec), rec)
        # in the steady state 55-80% of the hot region is on node 0, and 80-90% of the cold
        assert 0.5 < m["hot_fast_share"] < 0.8, (path, m)
        assert 0.8 < m["cold_fast_share"] < 0.92, (path, m)
        # most of the steady state's promotions are demoted again
        assert m["churn_share"] > 0.85, (path, m)
    # the traced boot: of the batches that tested one huge page, 96% kept it as referenced
    batches = load_recording(PRESS_THP_RECORDING)["kswapd_trace"]["batches"]
    one = [b for b in batches if b[1] == 512]
    kept = sum(1 for b in one if b[2] == 0 and b[3] == 512)
    assert len(one) > 250, len(one)
    assert kept / len(one) > 0.9, (len(one), kept)


def test_validate_kernel_press_thp_runs_the_press_program_on_2mib_pages(
    tk: Callable[..., object], tmp_path: Path
) -> None:
    out = tmp_path / "vk"
    proc = tk("validate", "kernel", "--scenario", "press-thp", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr  # type: ignore[attr-defined]
    comparison = json.loads(proc.stdout)  # type: ignore[attr-defined]
    assert comparison["scenario"] == "press-thp"
    text = (out / "experiment.toml").read_text()
    assert 'page_size = "2MiB"' in text
    sizes = [int(line.split("=")[1]) for line in text.splitlines() if line.startswith("size_bytes")]
    assert sizes, text
    assert all(s % (2 << 20) == 0 for s in sizes), sizes
    # the workload's small VMAs are a huge page each, VMAs of their own (Linux's scanner spends a
    # forced window a pass on each, as the guest's did) and mlocked (off reclaim's lists)
    for name in ("data", "heap", "vdso", "stack"):
        block = text.split(f'name = "{name}"\n', 1)[1].split("[[", 1)[0]
        assert f"size_bytes = {2 << 20}" in block, block
        assert "mlocked = true" in block, block
    assert text.count("mlocked = true") == 4
    # a huge page needs 512 pages above the DMA zone's high watermark, which this boot's DMA
    # zone never had: the simulated nbt is not told the DMA zone is above its bar
    assert "dma_zone_above_bar" not in comparison["policy"]
    assert comparison["node0_zones"]["dma_above_bar"] is False
    rows = {r["metric"]: r for r in comparison["rows"]}
    # page counts are 4 KiB pages: whole huge pages on both sides
    assert rows["promotions"]["sim"] % 512 == 0
    assert rows["promotions"]["sim"] > 0
    # the guest's DMA zone stayed above its bar in kswapd's pgdat_balanced at order 0 (3197-3200
    # free pages against its promo watermark + lowmem_reserve, 3011): the simulated nbt is told
    # so, and its kswapd runs end once they have reclaimed two huge pages (section 1zd)
    zones = comparison["node0_zones"]
    assert zones["dma_balanced"] is True
    assert zones["dma_free_min"] > zones["dma_balance_bar"] == 3011
    assert "dma_zone_balanced=true" in comparison["policy"]
    # The known disagreement (docs/validation.md, sections 1za-1zd), pinned so that this fails
    # when it closes: the model keeps the whole hot region on the fast tier, where the kernel
    # keeps 75% of it. Its churn is now below the kernel's on this boot (0.49x at seed 1; 2.5x
    # before its kswapd runs ended at compact_gap), and its kswapd finds most of the huge pages
    # it tests referenced (the kernel 96%)
    assert rows["hot_fast_share"]["sim"] > 0.95
    assert rows["hot_fast_share"]["kernel"] < 0.8
    assert 0.3 < rows["promotions_per_s"]["ratio"] < 1.0
    reclaim = comparison["sim_reclaim"]
    assert reclaim["kswapd_kept"] > 0.75 * reclaim["kswapd_rmap_tested"], reclaim
    assert not comparison["within_tolerance"]
    # with the small VMAs' forced windows the scanner's passes are as long as the guest's or
    # longer (1.47x at seed 1; 0.49x while the small VMAs were one)
    assert 0.8 < rows["pass_interval_s"]["ratio"] < 1.6
    # the default 1 ms step and a quarter of it promote within 3% over seeds 1-8 (46.1 and 46.0
    # huge pages), with kswapd's timer running it between the faults (`kswapd_tick_us`, section
    # 1ze); without it 1 ms gave 55.6 (one seed entered a churning state at 1 ms) and 0.25 ms 46.0
    exp, seeds = out / "experiment.toml", tuple(range(1, 9))

    def promotions(epoch_ms: str) -> float:
        runs = summaries([(exp, comparison["policy"], [f"epoch_ms={epoch_ms}"], s) for s in seeds])
        return sum(r["promotions"] for r in runs) / len(seeds)

    assert promotions("1") == pytest.approx(promotions("0.25"), rel=0.03)
    report = (out / "report.md").read_text()
    assert "--scenario press-thp" in report
    assert "transparent huge pages" in report


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "press-thp", "--record", "--record-size", "31,64,100,16,8192"], "even MiB, got 31"),
        (["--scenario", "press-thp", "--record", "--record-size", "32,64,100"], "(five integers)"),
        (
            ["--scenario", "press", "--recording", "python/tierkit/data/kernel_nbt_press_thp_612.json.gz"],
            "give --scenario as it was recorded (press-thp)",
        ),
        (
            ["--scenario", "press-thp", "--recording", "python/tierkit/data/kernel_nbt_press_612.json"],
            "give --scenario as it was recorded (press)",
        ),
    ],
)
def test_the_press_thp_scenario_refuses_odd_sizes_and_4k_recordings(
    tk: Callable[..., object], tmp_path: Path, args: list[str], message: str
) -> None:
    root = Path(__file__).resolve().parents[1]
    args = [str(root / a) if a.startswith("python/") else a for a in args]
    proc = tk("validate", "kernel", *args, "--out", str(tmp_path / "o"))
    assert proc.returncode != 0  # type: ignore[attr-defined]
    assert message in proc.stderr, proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in proc.stderr  # type: ignore[attr-defined]
    assert not (tmp_path / "o").exists()


def test_a_huge_page_promotion_needs_512_pages_above_the_dma_zones_high_watermark() -> None:
    from tierkit.validate_press import PRESS_RECORDING_TRACED_ZONES, PRESS_THP_RECORDING, dma_promotion_bar

    for path, pages in ((PRESS_RECORDING_TRACED_ZONES, 1), (PRESS_THP_RECORDING, 512)):
        rec = load_recording(path)
        dma = rec["node0_zones"]["start"]["DMA"]
        assert dma_promotion_bar(rec) == int(dma["high"]) + pages + int(dma["protection"][3]), path
