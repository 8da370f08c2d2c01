"""Vulcan: fair and efficient tiering for co-located tenants (Figs. 1, 2/3/7, 9, 10)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from tierkit.reproduce.common import Context, RunSpec, tpp_pre_5_18

TITLE = "Reproduction: Vulcan — workload-aware tiered memory for multi-tenant machines"
DESCRIPTION = (
    "The lc-be-mix co-location (a Memcached-like LC tenant from 0 s, PageRank-like and "
    "Liblinear-like BE tenants started later, 8 threads each) on the simulated Ice Lake machine, "
    "sizes scaled from the paper's 51/42/69 GB with 32 GB of DRAM. TPP, MEMTIS, Nomad and Vulcan; "
    "Vulcan with and without per-thread page tables for the migration-cost comparison. TPP accounts "
    "its hint faults as on the paper's Linux 5.15 (tpp:slow_fault_stats=true)."
)

POLICIES = ("tpp", "memtis", "nomad", "vulcan")


def _proc(summary: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in summary["processes"] if p["name"] == name)


def _hot_page_ratio(series: dict[str, list[float]], name: str, after_s: float) -> float:
    """Mean over the report intervals after `after_s` of the process's pages MEMTIS counts hot
    (its policy series `hot_pages.<name>`) over its resident pages."""
    hot = series.get(f"policy.hot_pages.{name}")
    if hot is None:
        raise ValueError(f"the run's time series has no policy.hot_pages.{name} column")
    vals = [
        h / r
        for t, h, r in zip(series["t_s"], hot, series[f"rss_pages.{name}"], strict=True)
        if t > after_s and r > 0 and h == h
    ]
    return sum(vals) / len(vals) if vals else float("nan")


def run(ctx: Context) -> None:
    scale = 1 / 32 if ctx.quick else 1 / 16
    dur = ctx.dur(170.0, 50.0)
    pr, ll = (50.0, 110.0) if not ctx.quick else (12.0, 25.0)
    common = (
        f"scale={scale}",
        f"fast_tier_gb={32 * scale}",
        f"duration_s={dur}",
        f"pagerank_start_s={pr}",
        f"liblinear_start_s={ll}",
        "report_interval_ms=1000",
    )
    specs = [
        RunSpec("solo", "lc-be-mix", "memtis", (*common, "tenants=memcached"), timeseries=True),
        RunSpec(
            "colocated", "lc-be-mix", "memtis", (*common, "tenants=memcached+liblinear"), timeseries=True
        ),
    ]
    # TPP as on Vulcan's Linux 5.15 (TPP's patches, before 5.18's memory-tiering check in
    # task_numa_fault: every slow-tier hint fault is accounted)
    specs += [RunSpec(p, "lc-be-mix", tpp_pre_5_18(p), common, timeseries=(p == "vulcan")) for p in POLICIES]
    specs.append(RunSpec("vulcan-process-wide", "lc-be-mix", "vulcan:replicate=false", common))
    df = ctx.grid(specs).set_index("label")

    # ------------------------------------------------------------ Fig. 1: the cold-page dilemma
    solo = _proc(df.loc["solo", "summary"], "memcached")
    colo = _proc(df.loc["colocated", "summary"], "memcached")
    rel = colo["throughput_ops_per_s"] / solo["throughput_ops_per_s"]
    # Fig. 1(d)'s hot-page ratio: the share of Memcached's pages MEMTIS counts hot, averaged over
    # the interval in which Liblinear runs beside it (the same interval of the solo run)
    hot_solo = _hot_page_ratio(df.loc["solo", "series"], "memcached", pr)
    hot_colo = _hot_page_ratio(df.loc["colocated", "series"], "memcached", pr)
    ctx.section(
        "The cold-page dilemma under MEMTIS (Fig. 1)",
        "Memcached alone and co-located with Liblinear (started with a delay) under MEMTIS: the share "
        "of its pages MEMTIS counts hot (Fig. 1(d)'s hot-page ratio, averaged while Liblinear runs), "
        "its fast-tier hit ratio (the share of its misses served by the fast tier) and its "
        "throughput relative to solo.",
    )
    ctx.table(
        pd.DataFrame(
            [
                {
                    "run": "solo",
                    "hot-page ratio": hot_solo,
                    "fast-tier hit ratio": solo["fast_tier_hit_ratio"],
                    "throughput": 1.0,
                },
                {
                    "run": "co-located",
                    "hot-page ratio": hot_colo,
                    "fast-tier hit ratio": colo["fast_tier_hit_ratio"],
                    "throughput": rel,
                },
            ]
        )
    )
    ctx.claim(
        "Co-location with a BE tenant lowers the LC tenant's hot-page ratio under MEMTIS",
        "hot-page ratio ~75% solo -> <28% co-located",
        f"hot-page ratio {hot_solo:.2f} -> {hot_colo:.2f} (fast-tier hit ratio "
        f"{solo['fast_tier_hit_ratio']:.2f} -> {colo['fast_tier_hit_ratio']:.2f})",
        hot_colo < hot_solo - 0.05,
        # the paper's drop, 75% to under 28%: co-located over solo at most 0.37
        paper_value=0.28 / 0.75,
        ours_value=float(hot_colo / max(hot_solo, 1e-9)),
        tolerance=0.25,
        bound="upper",
    )
    ctx.claim(
        "... and its performance",
        "normalized performance ~0.8",
        f"{rel:.2f} of solo throughput",
        rel < 0.97,
        paper_value=0.8,
        ours_value=float(rel),
        tolerance=0.25,
    )

    # ------------------------------------------------------------ Fig. 10: performance, CFI
    names = ("memcached", "pagerank", "liblinear")
    rows = []
    for p in POLICIES:
        s = df.loc[p, "summary"]
        row: dict[str, Any] = {"policy": p}
        for n in names:
            row[n] = _proc(s, n)["throughput_ops_per_s"]
        row["memcached p99 (ns)"] = _proc(s, "memcached")["latency_p99_ns"]
        row["CFI"] = s["fairness"]["cfi"]
        row["Jain"] = s["fairness"]["jain"]
        rows.append(row)
    perf = pd.DataFrame(rows)
    for n in names:
        perf[n] = perf[n] / perf[n].min()
    ctx.section(
        "Performance and fairness (Fig. 10)",
        "Per-tenant throughput normalized to the lowest policy, the LC tenant's p99 operation "
        "latency, and the FTHR-weighted cumulative Jain index (CFI, eq. 4) over the fast-tier "
        "allocations.",
    )
    ctx.table(perf)
    by = perf.set_index("policy")
    others = [p for p in POLICIES if p != "vulcan"]
    best_other = max(by.loc[p, "memcached"] for p in others)
    ctx.claim(
        "Vulcan gives the LC tenant the best performance",
        "+35% vs TPP, +25% vs MEMTIS",
        f"{by.loc['vulcan', 'memcached']:.3f} vs best other {best_other:.3f} (normalized)",
        by.loc["vulcan", "memcached"] >= best_other,
        # against MEMTIS, the paper's second number (+25%)
        paper_value=1.25,
        ours_value=float(by.loc["vulcan", "memcached"] / by.loc["memtis", "memcached"]),
        tolerance=0.25,
    )
    ctx.claim(
        "Vulcan is fairer than MEMTIS and Nomad (CFI)",
        "+52% vs MEMTIS, +86% vs Nomad",
        f"CFI {by.loc['vulcan', 'CFI']:.3f} vs MEMTIS {by.loc['memtis', 'CFI']:.3f}, "
        f"Nomad {by.loc['nomad', 'CFI']:.3f}",
        by.loc["vulcan", "CFI"] > max(by.loc["memtis", "CFI"], by.loc["nomad", "CFI"]),
        paper_value=1.52,
        ours_value=float(by.loc["vulcan", "CFI"] / by.loc["memtis", "CFI"]),
        tolerance=0.25,
    )
    if by.loc["vulcan", "CFI"] <= max(by.loc["memtis", "CFI"], by.loc["nomad", "CFI"]):
        ctx.text(
            "Where ours differs (CFI): X_i = sum_t x_i(t) FTHR_i(t) accumulates over each tenant's "
            "lifetime, so tenants started at different times have different X_i whatever the "
            "policy; in our runs the tenants' demands stay near their equal shares (every FTHR is "
            "above its GPT, so eq. 3 lowers demand and Algorithm 1 has little to move), and Vulcan's "
            "partitions stay close to what MEMTIS's hotness ranking gives. The paper's larger "
            "tenants (51-69 GB against 32 GB of DRAM, with log^2 of tens of GB in eq. 3) make the "
            "demands, and the partitioning, far more active than our scaled ones."
        )
    # The paper's average is over the existing solutions it compares with ("an average performance
    # increase of 12.4% ... over existing solutions", §6; its fairness figure, 75.3%, is likewise
    # an average over them), so: Vulcan's throughput over each other system's, per tenant, averaged
    # over tenants and systems. The stricter ratio to the best other system per tenant is shown too.
    ratios = [by.loc["vulcan", n] / by.loc[p, n] for n in names for p in others]
    mean_gain = sum(ratios) / len(ratios)
    best_gain = sum(by.loc["vulcan", n] / max(by.loc[p, n] for p in others) for n in names) / 3
    ctx.claim(
        "Vulcan improves performance on average across tenants",
        "+12.4% on average over the existing solutions (§6)",
        f"mean ratio to the other systems over tenants and systems {mean_gain:.3f} "
        f"(to the best other per tenant {best_gain:.3f})",
        mean_gain >= 1.0,
        paper_value=1.124,
        ours_value=float(mean_gain),
        tolerance=0.25,
    )

    # ------------------------------------------------------------ Figs. 2, 3, 7: migration cost
    pt = df.loc["vulcan", "summary"]
    pw = df.loc["vulcan-process-wide", "summary"]

    def per_mig(s: dict[str, Any]) -> tuple[float, float]:
        m = max(1, s["promotions"] + s["demotions"])
        return s["shootdown_ipis"] / m, s["migration_cpu_s"] / m * 1e6

    ipi_pt, us_pt = per_mig(pt)
    ipi_pw, us_pw = per_mig(pw)
    ctx.section(
        "Migration cost with per-thread page tables (Figs. 2, 3, 7)",
        "Vulcan with per-thread page-table replication (a private page's migration shoots down "
        "only its owner's TLB, a shared page's only its sharers') against process-wide shootdowns "
        "(every running thread of the tenant). Only the TLB part is modelled: the paper's other "
        "optimization (migration preparation, lru_add_drain_all) has no counterpart in the "
        "simulator.",
    )
    ctx.table(
        pd.DataFrame(
            [
                {
                    "shootdowns": "per-thread",
                    "IPIs per migration": ipi_pt,
                    "CPU us per migration": us_pt,
                    "slowdown vs fast-only": pt["slowdown_vs_fast_only"],
                },
                {
                    "shootdowns": "process-wide",
                    "IPIs per migration": ipi_pw,
                    "CPU us per migration": us_pw,
                    "slowdown vs fast-only": pw["slowdown_vs_fast_only"],
                },
            ]
        )
    )
    ctx.claim(
        "Per-thread page tables cut the cost of a migration",
        "2-page migrations up to 3.44x faster with optimized preparation alone, up to 4.06x with "
        "the TLB shootdown optimization too (Fig. 7): the shootdowns' own share 4.06 / 3.44 = 1.18x",
        f"{us_pw / max(us_pt, 1e-9):.2f}x less CPU per migration, "
        f"{ipi_pw / max(ipi_pt, 1e-9):.1f}x fewer IPIs",
        us_pt < us_pw and ipi_pt < ipi_pw,
        # Only the shootdown part is modelled (the section's text), so ours is compared with the
        # paper's speedup of that part over optimized preparation: T_prep / T_both = 4.06 / 3.44.
        paper_value=4.06 / 3.44,
        ours_value=float(us_pw / max(us_pt, 1e-9)),
        tolerance=0.25,
    )

    _thread_sweep(ctx)
    _plot(ctx, df, perf, scale)


def _thread_sweep(ctx: Context) -> None:
    """Fig. 3: a migration's shootdown cost as more threads share the mapping. Each of N threads
    works on its own private buffer; Vulcan migrates with per-thread or process-wide scope."""
    threads = (1, 2, 4, 8) if ctx.quick else (1, 2, 4, 8, 16)
    specs = []
    for n in threads:
        lines = [
            'workload = "custom"',
            'platform = "icx-numa"',
            f"duration_s = {ctx.dur(20.0, 8.0)}",
            'fast_ratio = "1:2"',
            "[[process]]",
            'name = "app"',
        ]
        for i in range(n):
            lines += ["[[process.object]]", f'name = "t{i}"', "size_mb = 128"]
        for i in range(n):
            lines += [
                "[[process.thread]]",
                "[[process.thread.phase]]",
                "mlp = 4",
                "compute_ns = 5",
                "[[process.thread.phase.access]]",
                f'object = "t{i}"',
                'pattern = "zipf"',
            ]
        path = ctx.out / f"threads-{n}.toml"
        path.write_text("\n".join(lines) + "\n")
        for scope, spec in (("per-thread", "vulcan"), ("process-wide", "vulcan:replicate=false")):
            specs.append(RunSpec(f"{scope}|{n}", str(path), spec))
    res = ctx.grid(specs)
    rows = []
    for n in threads:
        row: dict[str, Any] = {"threads": n}
        for scope in ("per-thread", "process-wide"):
            s = res[res["label"] == f"{scope}|{n}"].iloc[0]["summary"]
            m = max(1, s["promotions"] + s["demotions"])
            row[f"IPIs/migration ({scope})"] = s["shootdown_ipis"] / m
            row[f"CPU us/migration ({scope})"] = s["migration_cpu_s"] / m * 1e6
        rows.append(row)
    tab = pd.DataFrame(rows)
    ctx.section(
        "Shootdown cost against the threads sharing the mapping (Fig. 3)",
        "N threads, each on a private buffer; Vulcan with per-thread page tables against process-wide "
        "shootdowns.",
    )
    ctx.table(tab)
    first, last = tab.iloc[0], tab.iloc[-1]
    grow_pw = last["CPU us/migration (process-wide)"] / first["CPU us/migration (process-wide)"]
    grow_pt = last["CPU us/migration (per-thread)"] / first["CPU us/migration (per-thread)"]
    ctx.claim(
        "Process-wide shootdowns cost more per migration as threads are added; per-thread ones do not",
        "shootdown cost grows with the threads sharing the page (Figs. 2, 3)",
        f"{threads[0]} -> {threads[-1]} threads: process-wide x{grow_pw:.2f}, per-thread x{grow_pt:.2f}",
        grow_pw > 1.2 and grow_pt < grow_pw,
    )


def _plot(ctx: Context, df: pd.DataFrame, perf: pd.DataFrame, scale: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Fig. 9: allocation, FTHR and GPT over time under Vulcan.
    s = df.loc["vulcan", "series"]
    summary = df.loc["vulcan", "summary"]
    cap = summary["tiers"][0]["capacity_pages"]
    names = [p["name"] for p in summary["processes"]]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    t = s["t_s"]
    alive = [sum(1 for n in names if s[f"rss_pages.{n}"][k] > 0) for k in range(len(t))]
    for n in names:
        axes[0].plot(t, [v / cap for v in s[f"fast_pages.{n}"]], label=n)
        axes[1].plot(t, s[f"fast_hit_ratio.{n}"], label=n)
        gpt = [
            min(1.0, cap / max(a, 1) / r) if r > 0 else float("nan")
            for a, r in zip(alive, s[f"rss_pages.{n}"], strict=False)
        ]
        axes[2].plot(t, gpt, label=n)
    for ax, title in zip(axes, ("fast-tier share", "FTHR (fast-tier hit ratio)", "GPT"), strict=False):
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("time (s)")
    axes[0].legend(fontsize=8)
    ctx.figure(
        fig, "fig9_allocation", "Vulcan: fast-tier allocation, FTHR and GPT per tenant over time (Fig. 9)"
    )

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
    cols = ["memcached", "pagerank", "liblinear"]
    width = 0.8 / len(perf)
    for k, (_, row) in enumerate(perf.iterrows()):
        axes[0].bar([i + k * width for i in range(3)], [row[c] for c in cols], width, label=row["policy"])
    axes[0].set_xticks([i + 0.4 - width / 2 for i in range(3)], cols)
    axes[0].set_ylabel("throughput (normalized to lowest)")
    axes[0].legend(fontsize=8)
    axes[1].bar(perf["policy"], perf["CFI"])
    axes[1].set_ylabel("CFI (eq. 4)")
    ctx.figure(fig, "fig10_perf_fairness", "Per-tenant performance and fairness (Fig. 10)")
