"""Colloid (SOSP'24): GUPS with a hot set under memory-interconnect contention (Figs. 1, 2, 5, 9)."""

from __future__ import annotations

import itertools
from typing import Any

import pandas as pd

from tierkit.reproduce.common import Context, RunSpec

TITLE = "Reproduction: Colloid — Tiered Memory Management: Access Latency is the Key! (SOSP'24)"
DESCRIPTION = (
    "GUPS (15 threads, 90% of updates to a hot set that fits in the default tier) with a memory "
    "antagonist on the default tier at 0x-3x intensity, on the simulated Ice Lake 2-socket machine "
    "(icx-numa). HeMem, TPP and MEMTIS with and without Colloid, against the best manual placement "
    "(0-100% of the hot set in the default tier, steps of 10%). TPP runs as on the paper's "
    "patched kernel: its NUMA scan period does not adapt (`tpp:scan_stats=false`)."
)

BASES = ("hemem", "tpp", "memtis")
# The paper ran TPP on Colloid's own patched linux-6.3 with numa_balancing=2 (its artifact's
# grub/tpp.grub); that kernel's task_numa_fault accounts no fault unless NUMA_BALANCING_NORMAL is
# set, so TPP's scan period stays at task_scan_start there too (upstream doubles it while a
# process promotes). The tpp+colloid runs get the same from the colloid layer's default.
BASE_POLICY = {"hemem": "hemem", "tpp": "tpp:scan_stats=false", "memtis": "memtis"}
INTENSITIES = (0, 1, 2, 3)


def _steady(series: dict[str, list[float]] | None, summary: dict[str, Any], tail: float = 0.25) -> float:
    """Mean throughput over the last `tail` of the run (steady state)."""
    if not series:
        return float(summary["throughput_ops_per_s"])
    t = series["t_s"]
    y = series["throughput_ops_per_s"]
    start = t[-1] * (1 - tail)
    vals = [v for ti, v in zip(t, y, strict=False) if ti >= start]
    return sum(vals) / len(vals)


def run(ctx: Context) -> None:
    # Full: the paper's proportions scaled by 1/3 (24 GB working set, 8 GB hot set); quick: 1/12.
    ws, hot = (6.0, 2.0) if ctx.quick else (24.0, 8.0)
    duration = ctx.dur(400.0, 80.0)  # TPP needs whole page-table scans (256 MB/s) to converge
    common = (
        f"working_set_gb={ws}",
        f"hot_set_gb={hot}",
        f"duration_s={duration}",
        "report_interval_ms=1000",
    )

    specs: list[RunSpec] = []
    for i in INTENSITIES:
        sets = (*common, f"antagonist_intensity={i}")
        for base in BASES:
            for pol, spec in ((base, BASE_POLICY[base]), (f"{base}+colloid", f"{base}+colloid")):
                specs.append(RunSpec(f"{pol}@{i}x", "gups-hotset", spec, sets, timeseries=True))
        for k in range(11):
            f = k / 10
            specs.append(
                RunSpec(f"static:{f}@{i}x", "gups-hotset", f"static:hot_fraction={f}", sets, timeseries=True)
            )
    df = ctx.grid(specs)
    df["steady"] = [_steady(s, m) for s, m in zip(df["series"], df["summary"], strict=False)]
    df["intensity"] = [int(lbl.rsplit("@", 1)[1][:-1]) for lbl in df["label"]]
    df["system"] = [lbl.rsplit("@", 1)[0] for lbl in df["label"]]

    # ---------------------------------------------------------------- Figs. 1 and 5
    rows = []
    best_frac = {}
    for i in INTENSITIES:
        d = df[df["intensity"] == i]
        st = d[d["system"].str.startswith("static:")]
        best = st.loc[st["steady"].idxmax()]
        best_frac[i] = float(best["system"].split(":")[1])
        row: dict[str, Any] = {
            "intensity": f"{i}x",
            "best case": best["steady"] / 1e6,
            "best hot fraction": best_frac[i],
        }
        for pol in [p for b in BASES for p in (b, f"{b}+colloid")]:
            row[pol] = float(d[d["system"] == pol]["steady"].iloc[0]) / 1e6
        rows.append(row)
    fig5 = pd.DataFrame(rows)
    ctx.section(
        "Steady-state GUPS throughput (Figs. 1 and 5)",
        "Million operations per second over the last quarter of each run; the best case is the best "
        "static placement of 0-100% of the hot set in the default tier.",
    )
    ctx.table(fig5)
    _plot_fig5(ctx, fig5)

    def val(pol: str, i: int) -> float:
        return float(fig5.loc[fig5["intensity"] == f"{i}x", pol].iloc[0])

    for base in BASES:
        b3, c3, best3 = val(base, 3), val(f"{base}+colloid", 3), val("best case", 3)
        ctx.claim(
            f"At 3x contention {base} is well below the best case",
            {"hemem": "2.3x below", "tpp": "2.36x below", "memtis": "2.46x below"}[base] + " (Fig. 1)",
            f"{best3 / b3:.2f}x below",
            best3 / b3 > 1.3,
            paper_value={"hemem": 2.3, "tpp": 2.36, "memtis": 2.46}[base],
            ours_value=best3 / b3,
            tolerance=0.25,
        )
        ctx.claim(
            f"At 3x contention {base}+colloid is within ~15% of the best case",
            "within 3-13% (Fig. 5)",
            f"{100 * (1 - c3 / best3):.1f}% below",
            c3 >= 0.85 * best3,
            # the gap to the best case, in the paper at most 13%
            paper_value=0.13,
            ours_value=max(0.0, 1 - c3 / best3),
            tolerance=0.25,
            bound="upper",
        )
        b0, c0 = val(base, 0), val(f"{base}+colloid", 0)
        ctx.claim(
            f"At 0x {base}+colloid matches {base} within 5%",
            "matches (Fig. 5)",
            f"{100 * (c0 / b0 - 1):+.1f}%",
            abs(c0 / b0 - 1) <= 0.05,
        )
    fracs = [best_frac[i] for i in INTENSITIES]
    ctx.claim(
        "The best placement keeps a smaller share of the hot set in the default tier as contention grows",
        "Fig. 2b",
        ", ".join(f"{i}x: {best_frac[i]:.1f}" for i in INTENSITIES),
        all(a >= b for a, b in itertools.pairwise(fracs)) and fracs[-1] < fracs[0],
    )

    # ---------------------------------------------------------------- Fig. 2a: per-tier latency
    lat_rows = []
    systems = [p for b in BASES for p in (b, f"{b}+colloid")]
    for _, r in df[df["system"].isin(systems)].iterrows():
        tiers = r["summary"]["tiers"]
        lat_rows.append(
            {
                "system": r["system"],
                "intensity": f"{r['intensity']}x",
                "default tier (ns)": tiers[0]["mean_loaded_latency_ns"],
                "alternate tier (ns)": tiers[1]["mean_loaded_latency_ns"],
            }
        )
    lat = pd.DataFrame(lat_rows)
    ctx.section(
        "Per-tier loaded latency without and with Colloid (Figs. 2a, 6b)", "Miss-weighted mean over the run."
    )
    ctx.table(lat)
    h = lat[lat["system"] == "hemem"]
    d0 = float(h[h["intensity"] == "0x"]["default tier (ns)"].iloc[0])
    d3 = float(h[h["intensity"] == "3x"]["default tier (ns)"].iloc[0])
    a3 = float(h[h["intensity"] == "3x"]["alternate tier (ns)"].iloc[0])
    ctx.claim(
        "Under 3x contention the default tier's latency exceeds the alternate tier's (HeMem)",
        "up to 2.4x higher (§2.2)",
        f"{d3 / a3:.2f}x",
        d3 > a3,
        paper_value=2.4,
        ours_value=d3 / a3,
        tolerance=0.25,
    )
    for base in BASES:
        at3 = lat[lat["intensity"] == "3x"]
        b = at3[at3["system"] == base].iloc[0]
        c = at3[at3["system"] == f"{base}+colloid"].iloc[0]
        gap_b = b["default tier (ns)"] / b["alternate tier (ns)"]
        gap_c = c["default tier (ns)"] / c["alternate tier (ns)"]
        ctx.claim(
            f"At 3x, {base}+colloid brings the tiers' latencies closer than {base}",
            "latencies balanced or the gap much smaller (Fig. 6b)",
            f"L_D/L_A {gap_c:.2f} vs {gap_b:.2f}",
            abs(gap_c - 1) < abs(gap_b - 1),
        )
    ctx.claim(
        "Default-tier latency inflates several-fold from 0x to 3x (HeMem)",
        "~3.5x (§2.2)",
        f"{d3 / d0:.2f}x",
        d3 / d0 > 2.0,
        paper_value=3.5,
        ours_value=d3 / d0,
        tolerance=0.25,
    )

    # ---------------------------------------------------------------- Fig. 9: time-varying cases
    t_change = ctx.dur(150.0, 40.0)
    t_total = 2 * t_change
    dyn_common = (
        f"working_set_gb={ws}",
        f"hot_set_gb={hot}",
        f"duration_s={t_total}",
        "report_interval_ms=500",
    )
    cases = {
        "hot set moves (0x)": (*dyn_common, f"hot_change_s={t_change}"),
        "hot set moves (3x)": (*dyn_common, f"hot_change_s={t_change}", "antagonist_intensity=3"),
        "contention 0x -> 3x": (*dyn_common, "antagonist_intensity=3", f"antagonist_start_s={t_change}"),
    }
    dyn_specs = [
        RunSpec(f"{pol}|{case}", "gups-hotset", pol, sets, timeseries=True)
        for case, sets in cases.items()
        for pol in ("hemem", "hemem+colloid")
    ]
    dyn = ctx.grid(dyn_specs)
    _plot_fig9(ctx, dyn, t_change)

    def window(label: str, lo: float, hi: float) -> float:
        s = dyn[dyn["label"] == label]["series"].iloc[0]
        vals = [v for t, v in zip(s["t_s"], s["throughput_ops_per_s"], strict=False) if lo <= t <= hi]
        return sum(vals) / len(vals)

    tail = (t_total - 0.2 * t_change, t_total)
    before = (0.6 * t_change, t_change)
    for case in ("hot set moves (0x)", "hot set moves (3x)"):
        b = window(f"hemem+colloid|{case}", *before)
        a = window(f"hemem+colloid|{case}", *tail)
        ctx.claim(
            f"HeMem+Colloid converges back after the hot set moves ({case.split('(')[1][:-1]})",
            "converges within ~10 s (Fig. 9)",
            f"after/before = {a / b:.2f}",
            a >= 0.9 * b,
        )
    case = "contention 0x -> 3x"
    hc = window(f"hemem+colloid|{case}", *tail)
    hm = window(f"hemem|{case}", *tail)
    ctx.claim(
        "After contention rises, HeMem+Colloid converges to a higher throughput than HeMem",
        "HeMem does not react; Colloid converges near the best case (Fig. 9)",
        f"{hc / hm:.2f}x HeMem",
        hc > 1.1 * hm,
    )
    ctx.text(
        "Where ours differs: the simulator is an epoch-level model (docs/model.md). Sizes are scaled "
        f"({ws:g} GB working set, {hot:g} GB hot set; the paper: 72 and 24 GB) and TPP's page-table "
        "scan still takes tens of simulated seconds per pass, so runs are long and throughputs are "
        "steady-state means over the last quarter. TPP promotes a page only on its second hint fault, so "
        "in --quick mode (80 simulated seconds) it has not yet pulled the hot set into the default tier: "
        "its claims are meaningful in the full mode. Claims are directions and rough sizes; no number "
        "was tuned to make one hold."
    )


def _plot_fig5(ctx: Context, fig5: pd.DataFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = ["best case"] + [p for b in BASES for p in (b, f"{b}+colloid")]
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(cols)
    for k, c in enumerate(cols):
        ax.bar([i + k * width for i in range(len(fig5))], fig5[c], width, label=c)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(fig5))], fig5["intensity"])
    ax.set_xlabel("memory antagonist intensity")
    ax.set_ylabel("GUPS throughput (Mops/s)")
    ax.legend(ncol=4, fontsize=8)
    ctx.figure(
        fig, "fig5_throughput", "GUPS throughput with and without Colloid, and the best case (Figs. 1, 5)"
    )


def _plot_fig9(ctx: Context, dyn: pd.DataFrame, t_change: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = sorted({lbl.split("|")[1] for lbl in dyn["label"]})
    fig, axes = plt.subplots(1, len(cases), figsize=(12, 3.2), sharey=False)
    for ax, case in zip(axes, cases, strict=False):
        for pol in ("hemem", "hemem+colloid"):
            s = dyn[dyn["label"] == f"{pol}|{case}"]["series"].iloc[0]
            ax.plot(s["t_s"], [v / 1e6 for v in s["throughput_ops_per_s"]], label=pol)
        ax.axvline(t_change, color="grey", linestyle=":")
        ax.set_title(case, fontsize=9)
        ax.set_xlabel("time (s)")
    axes[0].set_ylabel("Mops/s")
    axes[0].legend(fontsize=8)
    ctx.figure(
        fig, "fig9_dynamic", "Throughput over time when the hot set or the contention changes (Fig. 9)"
    )
