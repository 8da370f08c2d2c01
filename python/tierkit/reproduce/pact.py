"""PACT (ASPLOS'26): per-page access criticality, adaptive binning, eager demotion.

Figs. 1, 4, 8, 10, 11, 12, 13, Table 2 and §5.6 on the simulated Skylake CXL-emulation testbed
(skx-cxl-emu, the paper's 90 ns DRAM / 190 ns CXL setup).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from tierkit.reproduce.common import Context, RunSpec, tpp_pre_5_18

TITLE = "Reproduction: PACT — Per-page Access Criticality for Tiered Memory (ASPLOS'26)"
DESCRIPTION = (
    "graph-kron (GAPBS bc/sssp-like: power-law hub vertices reached by dependent walks, streamed "
    "edges, alternating phases) at fast:slow 8:1 to 1:8 on the simulated Skylake CXL-emulation "
    "machine (skx-cxl-emu), PACT against Colloid (on TPP, as the paper ran it, and on HeMem), NBT, "
    "TPP+Colloid+Alto, Nomad, TPP (its hint faults accounted as on the paper's Linux 5.15: "
    "tpp:slow_fault_stats=true), MEMTIS and no tiering; PAC against ground-truth per-page stall "
    "(Fig. 1, §5.6); bin width and "
    "promotions over time (Fig. 8); sensitivity (Fig. 10); bandwidth contention (Fig. 11); "
    "colocation (Fig. 12); the binning breakdown on zipf-kv (Fig. 13)."
)

RATIOS = ("8:1", "4:1", "2:1", "1:1", "1:2", "1:4", "1:8")
# Each system as the paper ran it (`tpp_pre_5_18`): its TPP baseline on Linux v5.15 with TPP's
# patch (MoatLab/PACT, baselines/tpp/compile.sh), its Colloid on TPP on Colloid's Linux 6.3.
# PACT's Colloid is Colloid's TPP version (its promotions "trigger frequent NUMA hint faults",
# PACT §5.2); the PEBS-based HeMem version is kept as a second Colloid baseline
BASELINES = ("tpp+colloid", "hemem+colloid", "nbt", "tpp+colloid+alto", "nomad", "tpp", "memtis", "notier")
SYSTEMS = ("pact", *BASELINES)
# Fig. 11: PACT against the second-best baselines of the paper's 4 KiB and THP setups, Colloid
# (its TPP version) and MEMTIS, under 1-8 MLC threads
MLC_THREADS = (1, 2, 4, 8)
CONTENTION = ("pact", "tpp+colloid", "memtis")
# the THP setup of Fig. 11: PACT against MEMTIS, the second-best THP baseline, on 2 MiB pages
CONTENTION_THP = ("pact", "memtis")


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra = pd.Series(a).rank().to_numpy()
    rb = pd.Series(b).rank().to_numpy()
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def _sizes(ctx: Context) -> tuple[str, ...]:
    # Full: 4.5 GiB footprint; quick: 0.55 GiB (the paper's graphs are tens of GB).
    v, e, f = (2.0, 2.0, 0.5) if not ctx.quick else (0.25, 0.25, 0.05)
    return (f"vertices_gb={v}", f"edges_gb={e}", f"frontier_gb={f}")


def run(ctx: Context) -> None:
    import tierkit._core as core

    dur = ctx.dur(20.0, 2.0)
    kron = (*_sizes(ctx), f"duration_s={dur}", "report_interval_ms=100")

    # ---------------------------------------------------------------- the grid of runs
    specs: list[RunSpec] = []
    for r in RATIOS:
        for pol in (*SYSTEMS, "pact:score=frequency"):
            specs.append(RunSpec(f"{pol}@{r}", "graph-kron", tpp_pre_5_18(pol), (*kron, f"fast_ratio={r}")))
    sens = [
        "pact:sample_period=1000",
        "pact:sample_period=4000",
        "pact:window_ms=10",
        "pact:window_ms=100",
        "pact:cooling=halve",
        "pact:cooling=reset",
        "pact:alpha=0.5",
    ]
    if not ctx.quick:
        sens.append("pact:window_ms=1000")
    for pol in sens:
        specs.append(RunSpec(f"{pol}@sens", "graph-kron", pol, (*kron, "fast_ratio=1:4")))
    colo_size = "size_gb=0.25" if ctx.quick else "size_gb=6"
    colo = (colo_size, f"duration_s={dur}")
    colo_pols = (
        "pact",
        "pact:score=latency",
        "pact:score=latency,latency=load",
        "pact:score=frequency",
        "hemem+colloid",
        "tpp+colloid",
        "nbt",
        "memtis",
        "tpp",
    )
    for pol in (*colo_pols, "notier"):
        specs.append(RunSpec(f"{pol}@colo", "masim-colocate", tpp_pre_5_18(pol), colo))
    # Fig. 11 (§5.8): bc-kron with Intel MLC threads reading the local node, 1-8 threads of
    # ~8 GB/s each; slowdowns against the fast-only run under the same contention
    for n in MLC_THREADS:
        for pol in CONTENTION:
            specs.append(
                RunSpec(
                    f"{pol}@mlc{n}",
                    "graph-kron",
                    pol,
                    (*kron, "fast_ratio=1:4", f"mlc_threads={n}"),
                )
            )
        for pol in CONTENTION_THP:
            specs.append(
                RunSpec(
                    f"{pol}@mlc{n}thp",
                    "graph-kron",
                    pol,
                    (*kron, "fast_ratio=1:4", f"mlc_threads={n}", "page_size=2MiB"),
                )
            )
    kv = ("values_gb=0.5", "index_gb=0.05") if ctx.quick else ("values_gb=8", "index_gb=1")
    for pol in ("pact:binning=static", "pact:binning=adaptive", "pact", "notier"):
        specs.append(
            RunSpec(
                f"{pol}@kv",
                "zipf-kv",
                pol,
                (*kv, "fast_ratio=1:1", f"duration_s={dur}", "platform=skx-cxl-emu"),
            )
        )
    df = ctx.grid(specs)
    df["where"] = [lbl.rsplit("@", 1)[1] for lbl in df["label"]]
    df["system"] = [lbl.rsplit("@", 1)[0] for lbl in df["label"]]

    def get(system: str, where: str, col: str = "slowdown_vs_fast_only") -> float:
        d = df[(df["system"] == system) & (df["where"] == where)]
        return float(d[col].iloc[0])

    _fig4(ctx, get)
    _fig1_and_56(ctx, core, kron, get)
    _fig8(ctx, core, kron)
    _fig10(ctx, get, sens)
    _fig11(ctx, get)
    _fig12(ctx, df, get, colo_pols)
    _fig13(ctx, get)
    _overhead(ctx, df)


# -------------------------------------------------------------------- Fig. 4 / Table 2


def _fig4(ctx: Context, get: Any) -> None:
    rows = []
    for r in RATIOS:
        row: dict[str, Any] = {"fast:slow": r}
        for s in SYSTEMS:
            row[s] = get(s, r)
        rows.append(row)
    sd = pd.DataFrame(rows)
    prom = pd.DataFrame(
        [
            {"fast:slow": r, **{s: int(get(s, r, "promotions")) for s in SYSTEMS if s != "notier"}}
            for r in RATIOS
        ]
    )
    ctx.section(
        "graph-kron slowdown across fast:slow ratios (Fig. 4)",
        "Slowdown = fast-tier-only throughput / throughput (1.0 = as fast as all-DRAM).",
    )
    ctx.table(sd)
    ctx.section("Promotions (Table 2)", "Pages promoted over the run.")
    ctx.table(prom)

    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
    x = np.arange(len(RATIOS))
    for s in SYSTEMS:
        axes[0].plot(x, sd[s], marker="o", label=s, lw=2.5 if s == "pact" else 1.2)
        if s != "notier":
            axes[1].plot(x, [max(v, 1) for v in prom[s]], marker="o", label=s, lw=2.5 if s == "pact" else 1.2)
    for ax in axes:
        ax.set_xticks(x, RATIOS)
        ax.set_xlabel("fast:slow")
    axes[0].set_ylabel("slowdown vs fast-only")
    axes[1].set_ylabel("promotions")
    axes[1].set_yscale("log")
    axes[0].legend(fontsize=7, ncol=2)
    ctx.figure(
        fig, "fig4_graph_kron", "graph-kron: slowdown (left) and promotions (right) per fast:slow ratio"
    )

    mean_sd = {s: float(sd[s].mean()) for s in SYSTEMS}
    tot = {s: float(prom[s].sum()) for s in SYSTEMS if s != "notier"}
    for other in ("tpp+colloid", "nbt"):
        fewer = tot[other] / max(tot["pact"], 1.0)
        ctx.claim(
            f"PACT promotes several times fewer pages than {other} at equal or lower slowdown (graph-kron)",
            "Colloid 8M vs PACT 180K migrations on sssp-kron at lower slowdown (§5.4); NBT similar",
            f"{other} promotes {fewer:.2g}x PACT's pages; mean slowdown PACT {mean_sd['pact']:.3f} vs "
            f"{mean_sd[other]:.3f}",
            fewer >= 2.0 and mean_sd["pact"] <= mean_sd[other] * 1.01,
            "the count depends on the run's length: Linux's scanner keeps promoting at its capped "
            "pace (a pass per scan_period_max once promotions doubled the period) while PACT's "
            "promotions settle after its first windows; these runs end first. Over 300 simulated "
            "seconds of graph-kron at 1:4 tpp+colloid promoted 3.5x PACT's pages at a higher "
            "slowdown, nbt 0.41x (docs/validation.md, section 2)",
            # the paper's range over its workloads, at its low end: 2.1-10.4x for Colloid,
            # 1.2-9.6x for NBT
            paper_value={"tpp+colloid": 2.1, "nbt": 1.2}[other],
            ours_value=fewer,
            tolerance=0.25,
            bound="lower",
        )
    best = sum(1 for _, row in sd.iterrows() if row["pact"] <= min(row[s] for s in SYSTEMS) * 1.02)
    ctx.claim(
        "PACT has the lowest slowdown (within 2%) at most fast:slow ratios",
        "lowest slowdown across ratios, up to 61% better than the best baseline",
        f"best or within 2% of best at {best} of {len(RATIOS)} ratios",
        best >= (len(RATIOS) + 1) // 2,
    )


# -------------------------------------------------------------------- Fig. 1 and §5.6


def _profile(core: Any, workload: str, sets: tuple[str, ...]) -> dict[str, Any]:
    d: dict[str, Any] = core.pact_eval(workload, "pact:max_promotions=0", list(sets))
    return d


def _fig1_and_56(ctx: Context, core: Any, kron: tuple[str, ...], get: Any) -> None:
    dur = f"duration_s={ctx.dur(10.0, 2.0)}"
    cases = {
        "seq-pc": ("buffer_gb=0.25" if ctx.quick else "buffer_gb=2", dur, "fast_tier_gb=0"),
        "gups-hotset": (
            ("working_set_gb=1.5", "hot_set_gb=0.5") if ctx.quick else ("working_set_gb=12", "hot_set_gb=4")
        )
        + (dur, "fast_tier_gb=0", "platform=skx-cxl-emu", "page_size=4KiB"),
        "graph-kron": (*[k for k in kron if not k.startswith("duration")], dur, "fast_tier_gb=0"),
    }
    rows = []
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(cases), figsize=(13, 3.6))
    for ax, (wl, sets) in zip(axes, cases.items(), strict=True):
        d = _profile(core, wl, sets)
        pac = np.asarray(d["pac"])
        freq = np.asarray(d["samples"], dtype=float)
        truth = np.asarray(d["true_stall_ns"])
        # pages of the most common sample count >= 2: how far apart is their PAC?
        counts = pd.Series(freq[freq >= 2]).value_counts()
        spread = float("nan")
        if len(counts):
            c = counts.index[0]
            same = pac[freq == c]
            lo, hi = np.percentile(same, [10, 90])
            spread = float(hi / lo) if lo > 0 else float("inf")
        # the paper's own statistic (§3, tc-twitter): max/min PAC of the pages sampled once
        single = pac[(freq == 1) & (pac > 0)]
        single_spread = float(single.max() / single.min()) if len(single) >= 2 else float("nan")
        rows.append(
            {
                "workload": wl,
                "tracked pages": len(pac),
                "rho(PAC, true stall)": _spearman(pac, truth),
                "rho(frequency, true stall)": _spearman(freq, truth),
                "PAC max/min, pages sampled once": single_spread,
                "PAC p90/p10 at equal frequency": spread,
                "PAC max/median": float(pac.max() / max(np.median(pac), 1e-12)),
            }
        )
        ax.scatter(freq, pac, s=2, alpha=0.3)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(wl)
        ax.set_xlabel("samples (access frequency)")
        ax.set_ylabel("PAC (cycles)")
    ctx.figure(
        fig, "fig1_pac_vs_frequency", "PAC against sampled access frequency, all pages in the slow tier"
    )
    t = pd.DataFrame(rows)
    ctx.section(
        "PAC vs access frequency, with ground truth (Fig. 1)",
        "Profile runs with every page in the slow tier and no migration. The true stall is the "
        "simulator's per-page misses x latency / MLP while the page was tracked; rho is Spearman's "
        "rank correlation over the tracked pages.",
    )
    ctx.table(t)
    g = t[t["workload"] == "graph-kron"].iloc[0]
    ctx.claim(
        "Pages with equal access frequency differ many-fold in PAC (graph-kron)",
        "pages with the same frequency differ by up to 65x in PAC: single-access pages of tc-twitter "
        "from 7 to over 460 cycles (§3, Fig. 1c)",
        f"max/min PAC of the pages sampled once: {g['PAC max/min, pages sampled once']:.3g}x "
        f"(p90/p10 among pages of the modal sample count: {g['PAC p90/p10 at equal frequency']:.3g}x)",
        g["PAC max/min, pages sampled once"] >= 10.0,
        "a window's samples share its stall equally (proportional attribution, as the paper's Fig. 1 "
        "attributes it), so a page sampled once has its window's per-sample cost, k x period / the "
        "window's slow-tier MLP: graph-kron's full walk levels read a socket MLP of ~9.6, its scans the "
        "clamp 16, and its small BFS levels, walked by one thread while the others wait at the barrier, "
        "~1.2; most pages are sampled in full levels, so the p90/p10 stays small; the paper's 65x is "
        "measured on tc-twitter, which tierkit does not model",
        paper_value=65.0,
        ours_value=g["PAC max/min, pages sampled once"],
    )
    ctx.claim(
        "PAC ranks pages by their true stall better than access frequency (graph-kron)",
        "frequency alone fails to capture performance impact (§3)",
        f"Spearman rho {g['rho(PAC, true stall)']:.3f} (PAC) vs "
        f"{g['rho(frequency, true stall)']:.3f} (frequency)",
        g["rho(PAC, true stall)"] > g["rho(frequency, true stall)"],
    )
    # §5.6: the same machinery ranking by sample counts
    rows = []
    for r in RATIOS:
        rows.append(
            {
                "fast:slow": r,
                "PAC slowdown": get("pact", r),
                "frequency slowdown": get("pact:score=frequency", r),
                "PAC promotions": int(get("pact", r, "promotions")),
                "frequency promotions": int(get("pact:score=frequency", r, "promotions")),
            }
        )
    f56 = pd.DataFrame(rows)
    ctx.section("PAC vs frequency in the same machinery (§5.6)")
    ctx.table(f56)
    per_prom_pac = (f56["PAC slowdown"].mean(), f56["PAC promotions"].sum())
    per_prom_frq = (f56["frequency slowdown"].mean(), f56["frequency promotions"].sum())
    ctx.claim(
        "Ranking by PAC gives lower slowdown than ranking by frequency with the same machinery",
        "PAC outperforms frequency-based selection at equal promotion counts (§5.6)",
        f"mean slowdown {per_prom_pac[0]:.3f} (PAC, {per_prom_pac[1]} promotions) vs "
        f"{per_prom_frq[0]:.3f} (frequency, {per_prom_frq[1]} promotions)",
        per_prom_pac[0] <= per_prom_frq[0],
        "promotion counts are not forced equal here; both are listed",
    )


# -------------------------------------------------------------------- Fig. 8


def _fig8(ctx: Context, core: Any, kron: tuple[str, ...]) -> None:
    # The claim compares the first second with what follows, so the quick run is 5 s, not
    # the other quick runs' 2 s: in 2 s "afterwards" is the spike's own tail, and the ratio
    # went from 6x to 3x with a change elsewhere in the machine (docs/validation.md, 1j).
    if ctx.quick:
        kron = (*(a for a in kron if not a.startswith("duration_s=")), "duration_s=5")
    d = core.pact_eval("graph-kron", "pact", [*kron, "fast_ratio=1:4"])
    tr = pd.DataFrame(d["trace"])
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 3.4))
    axes[0].plot(tr["t_s"], tr["promotions"])
    axes[0].set_ylabel("promotions per window")
    axes[1].plot(tr["t_s"], tr["width"])
    axes[1].set_yscale("log")
    axes[1].set_ylabel("bin width (cycles)")
    for ax in axes:
        ax.set_xlabel("time (s)")
    ctx.figure(fig, "fig8_promotions_bin_width", "graph-kron 1:4: promotions per 20 ms window and bin width")
    # The spike is the first simulated second (PACT's first windows, while the PAC spread is
    # high), a fixed time rather than a share of the run: the spike lasts about half a second at
    # both sizes, so a share of the run would make the claim depend on the run's length.
    early = tr["t_s"] <= 1.0
    first = float(tr["promotions"][early].mean())
    rest = float(tr["promotions"][~early].mean()) if (~early).any() else 0.0
    w = tr["width"][tr["width"] > 0]
    ctx.claim(
        "Promotions spike early and then settle to intermittent bursts",
        "initial spike, then stable with intermittent bursts (Fig. 8a)",
        f"mean promotions per window: {first:.3g} in the first second, {rest:.3g} afterwards",
        first > 4 * rest,
    )
    ctx.claim(
        "The bin width adapts to the PAC distribution over the run",
        "bin width grows as the PAC spread grows (Fig. 8b)",
        f"width from {w.min():.3g} to {w.max():.3g} cycles, last {w.iloc[-1]:.3g}",
        len(w) > 0 and w.max() > 2 * w.min(),
    )
    # §4.5: "The highest-priority bin is kept small, typically holding only the top 1-5% of
    # pages". The share of the tracked pages in the priority bin, per window after the first
    # second's spike; the median window is the typical one.
    share = (tr["in_top_bin"] / tr["tracked"].clip(lower=1))[~early]
    med = float(share.median()) if len(share) else float("nan")
    ctx.claim(
        "The priority bin holds a small share of the pages",
        "typically the top 1-5% of pages (§4.5)",
        f"median share of the tracked pages in the priority bin {100 * med:.2f}% "
        f"(windows after the first second; p10 {100 * float(share.quantile(0.1)):.2f}%, "
        f"p90 {100 * float(share.quantile(0.9)):.2f}%)",
        0.01 <= med <= 0.05,
        "the quick mode's graph (0.55 GiB over 5 s) puts a smaller share of its pages in the "
        "priority bin than the full size's (4.5 GiB over 20 s)"
        if not 0.01 <= med <= 0.05
        else "",
    )


# -------------------------------------------------------------------- Fig. 10


def _fig10(ctx: Context, get: Any, sens: list[str]) -> None:
    base = get("pact", "1:4")
    rows = [{"variant": "pact (period 400, 20 ms, no cooling)", "slowdown": base, "vs default": 1.0}]
    for s in sens:
        v = get(s, "sens")
        rows.append({"variant": s, "slowdown": v, "vs default": v / base})
    t = pd.DataFrame(rows)
    ctx.section("Sensitivity on graph-kron 1:4 (Fig. 10)")
    ctx.table(t)
    worst = float(t["vs default"].max())
    ctx.claim(
        "PACT is insensitive to PEBS period (400-4000), window (10-1000 ms) and cooling",
        "within 5% of the workload-specific optimum (§5.7)",
        f"every variant within {100 * (worst - 1):.1f}% of the default's slowdown",
        worst <= 1.05,
        paper_value=0.05,
        ours_value=max(worst - 1.0, 0.0),
        tolerance=0.25,
        bound="upper",
    )


# -------------------------------------------------------------------- Fig. 11


def _fig11(ctx: Context, get: Any) -> None:
    rows = []
    for n in MLC_THREADS:
        row: dict[str, Any] = {"MLC threads": n}
        for p in CONTENTION:
            row[p] = get(p, f"mlc{n}")
        for p in CONTENTION_THP:
            row[f"{p} THP"] = get(p, f"mlc{n}thp")
        for p in CONTENTION:
            row[f"{p} promotions"] = int(get(p, f"mlc{n}", "promotions"))
        for p in CONTENTION_THP:
            row[f"{p} THP promotions"] = int(get(p, f"mlc{n}thp", "promotions"))
        rows.append(row)
    t = pd.DataFrame(rows)
    ctx.section(
        "Bandwidth contention (Fig. 11, §5.8)",
        "graph-kron (bc-kron-like) at fast:slow 1:4 on skx-cxl-emu with 1-8 Intel-MLC-like "
        "threads reading the fast tier (`mlc_threads`, ~8 GB/s each on the idle tier); slowdown "
        "against the fast-only run under the same contention. As the paper ran it: PACT against "
        "Colloid (its TPP version, the second-best 4 KiB baseline) on 4 KiB pages, and against "
        "MEMTIS (the second-best THP baseline) on 2 MiB pages (THP columns; promotions counted "
        "in huge pages). On 2 MiB pages PACT samples and tracks each huge page, where the paper's "
        "tracks its 4 KiB pages and moves their huge page (`pact:huge_pages=true` on 4 KiB pages "
        "does that, but pays 512 base-page migrations and shootdowns per huge page, which a THP "
        "migration does not).",
    )
    ctx.table(t)
    worst = max(max(r["pact"] / r["tpp+colloid"], r["pact THP"] / r["memtis THP"]) for _, r in t.iterrows())
    ctx.claim(
        "Under bandwidth contention PACT stays at or below the baselines",
        "PACT comparable to or better than Colloid and MEMTIS at 1-8 MLC threads (Fig. 11)",
        f"PACT's slowdown at most {worst:.3f}x Colloid's (4 KiB) and MEMTIS's (THP) over "
        f"{len(MLC_THREADS)} levels (comparable: within 3%)",
        worst <= 1.03,
        paper_value=1.0,
        ours_value=worst,
        tolerance=0.03,
        bound="upper",
    )
    fewer_c = min(r["tpp+colloid promotions"] / max(r["pact promotions"], 1) for _, r in t.iterrows())
    fewer_m = min(r["memtis THP promotions"] / max(r["pact THP promotions"], 1) for _, r in t.iterrows())
    ctx.claim(
        "Under bandwidth contention PACT promotes several times fewer pages than Colloid",
        "3.5-4.7x fewer promotions than Colloid (§5.8)",
        f"Colloid promotes at least {fewer_c:.2f}x PACT's pages at every level",
        fewer_c >= 2.0,
        "as without contention (the §5.4 claim above): the hint-fault Colloid promotes at the "
        "NUMA scanner's pace, whose period doubles while it promotes (docs/validation.md 1c), and "
        "PACT from PEBS samples every 20 ms window",
        paper_value=3.5,
        ours_value=fewer_c,
        tolerance=0.5,
    )
    ctx.claim(
        "Under bandwidth contention with THP PACT promotes fewer huge pages than MEMTIS",
        "2.2x fewer promotions than MEMTIS (§5.8, THP)",
        f"MEMTIS promotes at least {fewer_m:.2f}x PACT's huge pages at every level",
        fewer_m >= 1.5,
        "on 2 MiB pages every huge page of graph-kron is sampled about once a 20 ms window, so "
        "PACs rise at similar rates; a page's PAC grows only while it is in the slow tier (only "
        "slow-tier loads are sampled, and alpha 1 never cools), so the pages longest there reach "
        "the top bin and the fast tier rotates: most of PACT's promotions are demoted again, while "
        "MEMTIS moves pages only across its hot threshold. The paper's PACT ranks 4 KiB pages "
        "inside each huge page, which the 2 MiB machine cannot sample; ranked so on 4 KiB pages "
        "(`pact:huge_pages=true`, 4 MLC threads, seed 1) it still moves up to 1.3K huge pages "
        "against MEMTIS's 320 (docs/validation.md, section 4). (On 4 KiB pages MEMTIS "
        "promotes several times PACT's pages here, where the paper's Table 2 has MEMTIS at "
        "1.3K-15K promotions against PACT's 550K-907K: not reproduced either.)",
        paper_value=2.2,
        ours_value=fewer_m,
        tolerance=0.5,
    )


# -------------------------------------------------------------------- Fig. 12


def _fig12(ctx: Context, df: pd.DataFrame, get: Any, pols: tuple[str, ...]) -> None:
    rows = []
    for p in pols:
        d = df[(df["system"] == p) & (df["where"] == "colo")].iloc[0]
        procs = {q["name"]: q for q in d["summary"]["processes"]}
        seq = float(procs["seq"]["slowdown_vs_fast_only"])
        rand = float(procs["rand"]["slowdown_vs_fast_only"])
        rows.append(
            {
                "policy": p,
                "slowdown": float(d["slowdown_vs_fast_only"]),
                "seq slowdown": seq,
                "rand slowdown": rand,
                "mean tenant slowdown": (seq + rand) / 2,
                "promotions": int(d["promotions"]),
            }
        )
    t = pd.DataFrame(rows)
    ctx.section(
        "Colocation: a sequential and a random tenant (Fig. 12, §4.3.7)",
        "masim-colocate: fast tier holds half the footprint. `pact:score=latency` weights each "
        "sample by its exposed latency (the paper's §4.3.7 proposal, with the per-load exposed "
        "latency of timed PEBS: all of a dependent miss's latency, about 1/m of a miss among m "
        "overlapping ones); `latency=load` by its load latency instead. `slowdown` is the "
        "run's (the tenants' operations together, so the streaming tenant, with several times the "
        "other's operations a second, weighs most); the claim compares the mean of the two "
        "tenants' slowdowns, each program counting once as in the paper's aggregate.",
    )
    ctx.table(t)
    base = t.set_index("policy")["mean tenant slowdown"]
    others = [p for p in pols if not p.startswith("pact")]
    if "tpp+colloid" in base:
        hf = base["tpp+colloid"]
        why = (
            " Colloid here is far worse than the paper's: its kernel marks both tiers at a fixed "
            "scan period (docs/validation.md, section 1s), the random tenant, with one miss in "
            "flight, touches nearly every marked page, and each fault costs the platform's "
            "hint_fault_us (docs/validation.md, section 4)."
            if hf > 2.0 * base["pact"]
            else ""
        )
        ctx.text(
            "The paper's Colloid is the hint-fault one (tpp+colloid here; hemem+colloid is its "
            "PEBS version). The paper has PACT's aggregate slowdown 61% below Colloid's; ours, "
            f"the mean of the tenants' slowdowns, {base['pact']:.2f} against {hf:.2f} "
            f"({100 * (1 - base['pact'] / hf):.0f}% below).{why}"
        )
    ctx.claim(
        "Under colocation PACT still outperforms the baselines",
        "PACT outperforms existing policies under colocation microbenchmarks (Fig. 12): 61% lower "
        "aggregate slowdown than Colloid, 112% for the sequential and 28% for the random tenant",
        f"mean of the tenants' slowdowns: PACT {base['pact']:.3f} vs best baseline "
        f"{min(base[o] for o in others):.3f}",
        base["pact"] <= min(base[o] for o in others) * 1.01,
    )
    lat = t.set_index("policy")
    ctx.claim(
        "Latency-weighted attribution helps the latency-bound tenant (beyond the paper)",
        "proposed in §4.3.7, not evaluated",
        f"rand tenant slowdown {lat.loc['pact:score=latency', 'rand slowdown']:.3f} (latency) vs "
        f"{lat.loc['pact', 'rand slowdown']:.3f} (PAC); weighted by the load latency "
        f"{lat.loc['pact:score=latency,latency=load', 'rand slowdown']:.3f}; promotions "
        f"{int(lat.loc['pact:score=latency', 'promotions'])} vs {int(lat.loc['pact', 'promotions'])}",
        lat.loc["pact:score=latency", "rand slowdown"] < lat.loc["pact", "rand slowdown"] * 0.99,
        "the exposed latency does rank the random tenant's pages first (its samples weigh about "
        "8x the stream's, as the MLPs differ), but the PAC values then split into two clusters "
        "far apart, Freedman-Diaconis widens the bins, and the priority bin keeps under 1% of the "
        "tracked pages: PACT promotes a few pages a window and the random tenant stays mostly in "
        "the slow tier. Plain PAC already favours it through the samples (a prefetched load is "
        "not sampled), with a priority bin of half the tracked pages and a promotion per sample "
        "(docs/validation.md, section 4)",
    )


# -------------------------------------------------------------------- Fig. 13


def _fig13(ctx: Context, get: Any) -> None:
    names = {"pact:binning=static": "+Static", "pact:binning=adaptive": "+Adaptive", "pact": "+Both"}
    rows = [
        {"variant": v, "policy": k, "slowdown": get(k, "kv"), "promotions": int(get(k, "kv", "promotions"))}
        for k, v in names.items()
    ]
    rows.append(
        {"variant": "no tiering", "policy": "notier", "slowdown": get("notier", "kv"), "promotions": 0}
    )
    t = pd.DataFrame(rows)
    ctx.section("Breakdown on zipf-kv (Fig. 13)", "Redis/YCSB-C-like zipf-kv at 1:1 on skx-cxl-emu.")
    ctx.table(t)
    s = t.set_index("variant")["slowdown"]
    ctx.claim(
        "Adaptive binning improves on static binning, and scaling on adaptive",
        "+Static < +Adaptive < +Both in performance (Fig. 13)",
        f"slowdown static {s['+Static']:.3f}, adaptive {s['+Adaptive']:.3f}, both {s['+Both']:.3f} "
        "(differences under 0.5% count as equal)",
        s["+Both"] <= s["+Adaptive"] * 1.005 and s["+Adaptive"] <= s["+Static"] * 1.005,
    )


# -------------------------------------------------------------------- overhead


def _overhead(ctx: Context, df: pd.DataFrame) -> None:
    d = df[(df["system"] == "pact") & (df["where"] == "1:4")].iloc[0]
    st = d["summary"].get("policy_stats", {})
    keys = (
        "samples",
        "samples_per_window",
        "tracked_pages",
        "bytes_per_tracked_page",
        "entries_visited_per_window",
        "windows",
        "k_slow_cycles",
    )
    t = pd.DataFrame([{"stat": k, "value": st.get(k, float("nan"))} for k in keys])
    ctx.section(
        "PACT's own overhead (graph-kron 1:4)",
        "The paper reports 25 bytes per tracked page; ours holds the PAC (f64), the sample counter "
        "at last capture (u64), the sample count, this window's weight and flags, the page id, its "
        "place in the PAC buckets (8 B) and a dense page-to-slot index. Time per window at 1M "
        "samples/s is in BENCHMARKS.md.",
    )
    ctx.table(t)
    ctx.section(
        "Where ours differs from the paper, and why",
        "- Promotion counts: the paper's several-fold gap to Colloid and NBT (8M vs 180K migrations "
        "on sssp-kron) is not reproduced (Table 2 above). We have not established why; candidates are "
        "that the simulated graph's hub set is small next to the fast tier, so the baselines' hotness "
        "thresholds leave them few pages to move, while PACT's top bin keeps refilling as slow-tier "
        "pages accumulate PAC under alpha = 1.\n"
        "- PAC spread at equal frequency (Fig. 1) comes here only from the slow-tier MLP of the 20 ms "
        "windows the samples fall in (graph-kron: ~1.2 in its small BFS levels, one walker while the "
        "others wait; ~9.6 in full walk levels; the clamp 16 in scans) and from sampling noise; real "
        "programs add latency variation, prefetching and bursts the model does not have.\n"
        "- Latency-weighted attribution sees a modelled latency: a dependent or random miss reports the "
        "tier's whole loaded latency, a prefetched stream's miss about L/m; real PEBS load latencies "
        "vary more (queueing, DRAM page hits).",
    )
    ctx.text(
        "Deviations: k is calibrated on the simulated platform (skx-cxl-emu: "
        f"{st.get('k_slow_cycles', float('nan')):.0f} cycles for the slow tier) rather than the artifact's "
        "771; Freedman-Diaconis' n is the reservoir's size; the scaling test is the priority bin's share "
        "of pages (see crates/tierkit-policies/src/pact.rs). Workloads are synthetic stand-ins for GAPBS, "
        "Redis and masim, scaled down."
    )
