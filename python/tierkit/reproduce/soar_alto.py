"""Soar and Alto (OSDI'25): the seq-pc microbenchmark, Soar on graph objects across slow-tier
ratios, Soar's ranking table, Alto's promotion regulation, and the AOL slowdown predictor."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from tierkit.reproduce.common import Context, RunSpec, tpp_pre_5_18

TITLE = "Reproduction: Soar and Alto — Tiered Memory Management Beyond Hotness (OSDI'25)"
DESCRIPTION = (
    "The sequential + pointer-chase microbenchmark (Fig. 1c), Soar against NoTier, NBT, Colloid, Nomad "
    "and TPP on bc-urand-shaped graph objects across slow-tier ratios (Fig. 4, Tables 2-4), Alto on "
    "TPP, NBT, Nomad and Colloid (Fig. 7, Table 5), and the AOL-based slowdown predictor "
    "(Figs. 2d, 2e), on the simulated Skylake CXL-emulation machine (skx-cxl-emu). TPP (alone and "
    "under Alto) accounts its hint faults as on the artifact's Linux 5.15 with TPP's patch "
    "(tpp:slow_fault_stats=true); Colloid on TPP keeps Colloid's Linux 6.3."
)

BASELINES = ("notier", "nbt", "tpp+colloid", "nomad", "tpp", "soar")
# Each run as the paper's artifact (MoatLab/SoarAlto, src/alto) builds it: TPP and TPP+Alto on
# Linux v5.15 with TPP's patch (`tpp_pre_5_18`), NBT on v5.18, Nomad on 5.13, Colloid on 6.3.


def _pearson(x: list[float], y: list[float]) -> float:
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


# bc-urand's run in the paper: Table 2's lifetimes are given in its 223 s. Full mode runs the
# graph objects at the paper's sizes for that long; quick mode at 1/16 of the sizes for 20 s.
GRAPH_RUN_S = 223.0


def _graph_size(ctx: Context) -> tuple[str, float]:
    """graph-objects' `scale` and run length: bc-urand's sizes (1) for its 223 s in full mode,
    1/16 of them for 20 s in quick mode."""
    return ("0.0625" if ctx.quick else "1"), ctx.dur(GRAPH_RUN_S, 20.0)


def run(ctx: Context) -> None:
    _seq_pc(ctx)
    _graph(ctx)
    _ranking(ctx)
    _alto(ctx)
    _predictor(ctx)
    ctx.text(
        "Where ours differs: the simulator is an epoch-level model (docs/model.md); sizes and "
        "times are scaled in quick mode only (graph objects at 1/16 of bc-urand's sizes for 20 s); "
        "full mode runs them at the paper's sizes (a 17 GB graph) for the paper's 223 s. In this "
        "model the stall accounting is exact, so K = S / P hardly varies with "
        "AOL (the fitted b is near 0): the paper's K(AOL) curve comes from latency hiding in real cores "
        "that the model does not have. AOL thresholds and L0 come from `tierkit calibrate` on the "
        "simulated platform (the stream's and the pointer chase's AOL), not the paper's 40/100 cycles. "
        "No number was tuned to make a claim hold."
    )


def _seq_pc(ctx: Context) -> None:
    sets = ("buffer_gb=0.5", "fast_runtime_s=2") if ctx.quick else ("buffer_gb=2", "fast_runtime_s=5")
    cases = {
        "Hot-on-DRAM (seq in fast)": ("place:seq", ()),
        "Cold-on-DRAM (pc in fast)": ("place:pc", ()),
        "all slow": ("notier", ("fast_tier_gb=0",)),
        "NoTier": ("notier", ()),
        "TPP": ("tpp", ()),
        "NBT": ("nbt", ()),
        "Soar": ("soar", ()),
    }
    df = ctx.grid(
        [RunSpec(k, "seq-pc", tpp_pre_5_18(pol), (*sets, *extra)) for k, (pol, extra) in cases.items()]
    )
    tab = pd.DataFrame(
        {"placement": df["label"], "runtime (s)": df["sim_seconds"], "slowdown": df["slowdown_vs_fast_only"]}
    )
    ctx.section(
        "seq-pc microbenchmark (Fig. 1c)", "One stream (MLP 7) and one pointer chase (MLP 1), 2 buffers."
    )
    ctx.table(tab)
    rt = dict(zip(df["label"], df["sim_seconds"], strict=True))
    sd = dict(zip(df["label"], df["slowdown_vs_fast_only"], strict=True))
    hot, cold = rt["Hot-on-DRAM (seq in fast)"], rt["Cold-on-DRAM (pc in fast)"]
    ctx.claim(
        "Placing the cold, low-MLP pointer-chase buffer in DRAM beats placing the hot stream there",
        "Cold-on-DRAM 34% faster than Hot-on-DRAM (Fig. 1c)",
        f"{hot / cold:.2f}x faster",
        cold < hot,
        paper_value=1.34,
        ours_value=hot / cold,
        tolerance=0.25,
    )
    # Fig. 1c's bars, performance relative to All-on-DRAM: Hot-on-DRAM 52.4%, all on CXL 47.4%
    for label, case, paper in (
        ("Hot-on-DRAM", "Hot-on-DRAM (seq in fast)", 0.524),
        ("All on the slow tier", "all slow", 0.474),
    ):
        ours = 1.0 / float(sd[case])
        ctx.claim(
            f"{label} runs at the paper's share of All-on-DRAM's performance",
            f"{100 * paper:.1f}% of All-on-DRAM (Fig. 1c)",
            f"{100 * ours:.1f}%",
            abs(ours / paper - 1) <= 0.25,
            paper_value=paper,
            ours_value=ours,
            tolerance=0.25,
        )
    ctx.claim(
        "Soar places the pointer-chase buffer in the fast tier (its runtime matches Cold-on-DRAM)",
        "Soar ranks by performance impact, not hotness (§2.1, §4)",
        f"Soar {rt['Soar']:.2f} s vs Cold-on-DRAM {cold:.2f} s",
        abs(rt["Soar"] / cold - 1) < 0.05,
    )


def _graph(ctx: Context) -> None:
    scale, dur = _graph_size(ctx)
    ratios = (0.1, 0.5, 0.9) if ctx.quick else (0.1, 0.3, 0.5, 0.7, 0.9)  # slow-tier share of the RSS
    specs = []
    for r in ratios:
        fast, slow = round(100 * (1 - r)), round(100 * r)
        sets = (f"scale={scale}", f"duration_s={dur}", f"fast_ratio={fast}:{slow}")
        specs += [RunSpec(f"{pol}@{r:.1f}", "graph-objects", tpp_pre_5_18(pol), sets) for pol in BASELINES]
    df = ctx.grid(specs)
    df["ratio"] = [float(lbl.split("@")[1]) for lbl in df["label"]]
    df["system"] = [lbl.split("@")[0] for lbl in df["label"]]
    pivot = df.pivot(index="ratio", columns="system", values="slowdown_vs_fast_only")[list(BASELINES)]
    ctx.section(
        "Soar on graph objects across slow-tier ratios (Fig. 4, Table 4)",
        "Slowdown against the fast-tier-only run (1.0 = no slowdown); "
        "rows are the slow tier's share of the RSS.",
    )
    ctx.table(pivot.reset_index().rename(columns={"ratio": "slow-tier ratio"}))
    _plot_lines(
        ctx, pivot, "fig4_graph_slowdown", "slow-tier ratio", "slowdown vs fast-only", "Fig. 4: slowdown"
    )
    wins = sum(pivot.loc[r, "soar"] <= pivot.loc[r].min() * 1.05 for r in pivot.index)
    ctx.claim(
        "Soar has the lowest slowdown (within 5%) at every slow-tier ratio",
        "Soar outperforms all baselines across ratios (Fig. 4)",
        f"best at {wins} of {len(pivot)} ratios",
        wins == len(pivot),
    )
    beats = sum(pivot.loc[r, "soar"] < pivot.loc[r, "notier"] for r in pivot.index)
    ctx.claim(
        "Soar beats NoTier at every slow-tier ratio",
        "the only system that outperforms NoTier consistently (§6.2)",
        f"{beats} of {len(pivot)} ratios",
        beats == len(pivot),
    )


def _ranking(ctx: Context) -> None:
    import tierkit

    scale, dur = _graph_size(ctx)
    table = tierkit.soar_profile("graph-objects", [f"scale={scale}", f"duration_s={dur}"], seed=ctx.seed)
    (ctx.out / "soar_ranking.csv").write_text(table.to_csv(index=False))
    ctx.section(
        "Soar's object ranking (Table 2)",
        "Unit score = score / size; ranks by first touch (FT), by sampled access frequency and by Soar.",
    )
    ctx.table(
        table[
            [
                "object",
                "bytes",
                "lifetime_s",
                "accesses",
                "unit_score",
                "rank_first_touch",
                "rank_frequency",
                "rank_soar",
            ]
        ]
    )
    g = table[table["object"] == "graph"].iloc[0]
    ctx.claim(
        "The huge graph object is frequently accessed but ranks low by Soar (low unit score)",
        "O8: Freq rank 5, Soar rank 8 of 10 (Table 2)",
        f"Freq rank {g['rank_frequency']}, Soar rank {g['rank_soar']} of {len(table)}",
        g["rank_soar"] > g["rank_frequency"],
    )
    differ = (table["rank_soar"] != table["rank_frequency"]).sum()
    ctx.claim(
        "Soar's ranking differs from the frequency ranking",
        "different placements (Table 3)",
        f"{differ} of {len(table)} objects ranked differently",
        differ >= 2,
    )


def _alto(ctx: Context) -> None:
    scale, dur = _graph_size(ctx)
    sets = (f"scale={scale}", f"duration_s={dur}", "fast_ratio=1:1")
    bases = ("tpp", "nbt", "nomad", "tpp+colloid")
    specs = [
        RunSpec(f"{b}{suffix}", "graph-objects", tpp_pre_5_18(f"{b}{suffix}"), sets)
        for b in bases
        for suffix in ("", "+alto")
    ]
    # Alto under bandwidth contention (§6.10): a contended fast tier inflates AOL; auto mode
    # scales the thresholds by the fast tier's latency inflation.
    gdur = ctx.dur(60.0, 40.0)
    for i in (0, 3):
        gsets = ("working_set_gb=4", "hot_set_gb=1.3", f"duration_s={gdur}", f"antagonist_intensity={i}")
        specs += [
            RunSpec(f"tpp{s}|{i}x", "gups-hotset", tpp_pre_5_18(f"tpp{s}"), gsets)
            for s in ("", "+alto", "+alto:auto=true")
        ]
    df = ctx.grid(specs)
    res = {
        lbl: (s, p)
        for lbl, s, p in zip(df["label"], df["slowdown_vs_fast_only"], df["promotions"], strict=True)
    }
    rows = []
    for b in bases:
        s0, p0 = res[b]
        s1, p1 = res[f"{b}+alto"]
        rows.append(
            {
                "base": b,
                "slowdown": s0,
                "slowdown +alto": s1,
                "promotions": p0,
                "promotions +alto": p1,
                "promotion reduction": 1 - p1 / p0 if p0 else float("nan"),
            }
        )
    tab = pd.DataFrame(rows)
    ctx.section("Alto on graph objects, 50% slow tier (Fig. 7, Table 5)")
    ctx.table(tab)
    cut = [r for r in rows if r["promotions"] > 0 and r["promotions +alto"] < 0.8 * r["promotions"]]
    ctx.claim(
        "Alto cuts promotions of its base",
        "up to ~100x fewer promotions (Table 5)",
        ", ".join(f"{r['base']}: {100 * r['promotion reduction']:.0f}%" for r in rows),
        len(cut) >= 2,
        note="the paper's 100x needs a base that promotes far more than it must; ours promote as fast as "
        "kswapd frees fast-tier pages, and a candidate Alto vetoes faults again and passes later. NBT "
        "is cut least (or not at all) because its promotions are bounded by the room kswapd frees, "
        "not by its candidates: "
        "many of them fail for want of a free fast-tier page (promote_fail_nomem, as Linux's "
        "migrate_balanced_pgdat refuses and wakes kswapd) and its promotions equal its demotions, so "
        "the candidates Alto's marking of N of 16 pages removes are mostly ones that would have failed "
        "(docs/validation.md, section 2, has a run's figures); the paper's 9.4x for NBT needs a base "
        "whose candidates, not its free pages, set the pace",
    )
    worse = [r["base"] for r in rows if r["slowdown +alto"] > 1.03 * r["slowdown"]]
    ctx.claim(
        "Alto does not lose performance (slowdown within 3% of the base or better)",
        "underperforms in a few cases by no more than 3% (abstract)",
        "worse by >3%: " + (", ".join(worse) if worse else "none"),
        not worse,
        # the worst loss against the base, in the paper at most 3%
        paper_value=0.03,
        ours_value=max(0.0, max(r["slowdown +alto"] / r["slowdown"] - 1.0 for r in rows)),
        tolerance=0.25,
        bound="upper",
    )
    ctx.section(
        "Alto under bandwidth contention (beyond the paper: alto:auto=true, §6.10)",
        "gups-hotset with no antagonist and with a 3x antagonist on the fast tier: slowdown and promotions.",
    )
    ctx.table(
        pd.DataFrame(
            [
                {
                    "policy": k.split("|")[0],
                    "antagonist": k.split("|")[1],
                    "slowdown": v[0],
                    "promotions": v[1],
                }
                for k, v in res.items()
                if "|" in k
            ]
        ),
    )
    (s_fixed, p_fixed), (s_auto, p_auto) = res["tpp+alto|3x"], res["tpp+alto:auto=true|3x"]
    ctx.claim(
        "Under fast-tier contention, auto thresholds hold back promotions into the contended tier without "
        "losing throughput",
        "future work in the paper (§6.10)",
        f"promotions {p_auto} vs {p_fixed}, slowdown {s_auto:.3f} vs {s_fixed:.3f}",
        p_auto < p_fixed and s_auto <= s_fixed,
    )
    (s0_fixed, _), (s0_auto, _) = res["tpp+alto|0x"], res["tpp+alto:auto=true|0x"]
    ctx.claim(
        "Without contention auto thresholds behave like the calibrated ones",
        "-",
        f"slowdown {s0_auto:.3f} vs {s0_fixed:.3f}",
        abs(s0_auto / s0_fixed - 1) <= 0.02,
    )


def _predictor(ctx: Context) -> None:
    import tierkit

    cal: dict[str, Any] = dict(tierkit._core_module().calibrate("skx-cxl-emu"))
    pts = pd.DataFrame(cal["points"])
    ctx.section(
        "The AOL slowdown predictor (Figs. 2d, 2e)",
        f"Calibrated on skx-cxl-emu: AOL_low {cal['aol_low_cycles']:.1f}, "
        f"AOL_high {cal['aol_high_cycles']:.1f} "
        f"cycles; K = 1 / ({cal['k_a']:.4f} + {cal['k_b']:.4f} / AOL).",
    )
    ctx.table(pts)
    shapes = [
        (1, 1, 2, "pointer-chase"),
        (1, 7, 8, "sequential"),
        (4, 3, 5, "uniform"),
        (8, 8, 3, "sequential"),
        (2, 2, 20, "zipf"),
        (6, 1, 60, "pointer-chase"),
        (4, 12, 2, "uniform"),
        (2, 4, 10, "zipf"),
    ]
    # Fig. 2e plots 56 workloads; issue 16 asks for at least 20. Each run is a 0.3 s notier run
    # of a 1 GiB buffer, so quick mode runs them all as well.
    shapes += [
        (16, 4, 2, "uniform"),
        (1, 2, 40, "uniform"),
        (3, 6, 5, "sequential"),
        (12, 1, 10, "pointer-chase"),
        (2, 1, 5, "pointer-chase"),
        (8, 2, 2, "zipf"),
        (1, 10, 1, "sequential"),
        (4, 6, 30, "uniform"),
        (16, 1, 2, "pointer-chase"),
        (2, 8, 15, "zipf"),
        (6, 4, 4, "sequential"),
        (10, 3, 8, "uniform"),
        (1, 4, 100, "zipf"),
        (3, 12, 1, "uniform"),
        (12, 6, 3, "zipf"),
        (5, 2, 25, "sequential"),
    ]
    specs = []
    for i, (n, m, z, pat) in enumerate(shapes):
        base = (
            "workload=custom",
            "duration_s=0.3",
            "page_size=2MiB",
            "platform=skx-cxl-emu",
        )
        proc = (
            "process.0.name=w",
            'process.0.object.0.name="buf"',
            "process.0.object.0.size_gb=1",
            f"process.0.thread.0.count={n}",
            f"process.0.thread.0.phase.0.mlp={m}",
            f"process.0.thread.0.phase.0.compute_ns={z}",
            'process.0.thread.0.phase.0.access.0.object="buf"',
            f'process.0.thread.0.phase.0.access.0.pattern="{pat}"',
        )
        specs.append(
            RunSpec(
                f"w{i}|fast", str(_template(ctx)), "notier", (*base, *proc, "fast_tier_gb=2"), timeseries=True
            )
        )
        specs.append(RunSpec(f"w{i}|slow", str(_template(ctx)), "notier", (*base, *proc, "fast_tier_gb=0")))
    df = ctx.grid(specs)
    pred, meas = [], []
    for i in range(len(shapes)):
        fast = df[df["label"] == f"w{i}|fast"].iloc[0]
        slow = df[df["label"] == f"w{i}|slow"].iloc[0]
        series = fast["series"]["predicted_slowdown"]
        vals = [v for v in series if v == v]
        pred.append(sum(vals) / len(vals))
        meas.append(float(slow["slowdown_vs_fast_only"]) - 1)
    r = _pearson(pred, meas)
    _plot_scatter(ctx, pred, meas)
    ctx.claim(
        "The AOL predictor tracks the measured slowdown across workloads",
        "Pearson 0.951 over 56 workloads (Fig. 2e)",
        f"Pearson {r:.3f} over {len(shapes)} workloads",
        r > 0.9,
        paper_value=0.951,
        ours_value=float(r),
        tolerance=0.25,
        bound="lower",
    )


def _template(ctx: Context) -> object:
    """A minimal custom-experiment file the predictor runs fill in with --set."""
    path = ctx.out / "predictor-workload.toml"
    if not path.exists():
        path.write_text(
            'workload = "custom"\n[[process]]\nname = "w"\n[[process.object]]\nname = "buf"\nsize_gb = 1\n'
            '[[process.thread]]\n[[process.thread.phase]]\n[[process.thread.phase.access]]\nobject = "buf"\n'
        )
    return path


def _plot_lines(ctx: Context, pivot: pd.DataFrame, name: str, xlabel: str, ylabel: str, caption: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for col in pivot.columns:
        ax.plot(pivot.index, pivot[col], marker="o", label=col)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=8)
    ctx.figure(fig, name, caption)


def _plot_scatter(ctx: Context, pred: list[float], meas: list[float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.scatter(meas, pred)
    hi = max(*pred, *meas) * 1.05
    ax.plot([0, hi], [0, hi], color="grey", linestyle=":")
    ax.set_xlabel("measured slowdown (all slow vs all fast) - 1")
    ax.set_ylabel("predicted S = P K(AOL)")
    ctx.figure(fig, "fig2e_predictor", "Predicted vs measured slowdown (Fig. 2e)")
