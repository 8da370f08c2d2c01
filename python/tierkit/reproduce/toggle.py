"""Migration toggling: per-process migration stop and restart (Figs. 7, 8, 9, 10, 11)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from tierkit.reproduce.common import Context, RunSpec, tpp_pre_5_18

TITLE = "Reproduction: dynamic per-process migration toggling for tiered memory"
DESCRIPTION = (
    "TPP with the toggle layer (stop migration when the demote_promoted slope stabilizes, restart "
    "on access-bit-scan variation) on the paper's testbed (spr-cmmd: Sapphire Rapids with a Samsung "
    "CMM-D CXL expander, Table 2): the three-phase "
    "microbenchmark (toggle-phases), single tenants that are migration-friendly (liblinear) or "
    "-unfriendly (silo single-threaded, gups with 24 threads and with one), and the FF, UF, UU pairs of "
    "Table 4, against "
    "notier, tpp, memtis and nomad. TPP, alone and under the layer, accounts its hint faults as the "
    "paper's Linux 5.15 TPP-mod does (tpp:slow_fault_stats=true). Sizes are the paper's scaled down "
    "with their ratios kept."
)

# The single tenants and how each is run. Fig. 8 has the multi-threaded ones, Fig. 9 the
# single-threaded ones: silo has one thread in both the paper's Fig. 9 and Table 4, GUPS 24
# threads in the UU pair and one in Fig. 9 ("the single-threaded GUPS benchmark", §5.3).
SINGLE = {
    "liblinear": ("mix=liblinear",),
    "ft": ("mix=ft",),
    "silo": ("mix=silo",),
    "gups": ("mix=gups",),
    "gups, 1 thread": ("mix=gups", "threads=1"),
}
PAIRS = ("ff", "uf", "uu")
SINGLE_POLICIES = ("notier", "tpp", "memtis", "nomad", "tpp+toggle", "memtis+toggle")
PAIR_POLICIES = ("notier", "tpp", "nomad", "tpp+toggle")
MICRO_POLICIES = ("tpp", "tpp+toggle", "memtis", "memtis+toggle")


def run(ctx: Context) -> None:
    # The microbenchmark is the same in both modes, and it is toggle-phases at its defaults (so
    # `tierkit run toggle-phases --policy tpp:slow_fault_stats=true+toggle` is this run; on its one
    # thread the result is the same bit for bit without the option): the paper's 80 GB / 16 GB /
    # 5 min scaled to 2 GiB / 0.4 GiB / 60 s per phase.
    # One thread, as the paper's §3 microbenchmark: scaling the RSS down 40x keeps the per-page
    # access rates the LRU ages against 40x higher than the paper's (every page of the hot set
    # then reads referenced at each kswapd pass and TPP cannot ping-pong at all); one thread
    # instead of eight brings them 8x closer (docs/validation.md, section 1b).
    # The paper's testbed (Table 2: SPR, DDR5 269 cycles ~256 GB/s, Samsung CMM-D 615 cycles
    # 17.8 GB/s read), not spr-cxl (Soar/Alto's expander, 26 GB/s), for every run here.
    platform = "platform=spr-cmmd"
    micro = ("report_interval_ms=1000",)
    phase_s = 60.0  # toggle-phases' default, for the report and the plot
    scale = 1 / 16 if not ctx.quick else 1 / 64
    full_s = 90.0
    dur = ctx.dur(full_s, 20.0)
    # Quick mode runs 20 s where the full mode runs 90 s. Algorithm 1 needs at least six of its
    # 2 s evaluations before it can stop (a first count, three deltas, then Stabilizing and
    # Stabilized), so at its defaults the layer can barely stop before a quick run ends and the
    # pair claims would compare TPP with Nomad. Quick mode therefore compresses the layer's two
    # periods (interval_ms, scan_period_ms) by the same factor as the run; the full mode runs the
    # paper's 2 s and 5 s.
    compress = dur / full_s
    toggle = _toggle_spec(compress)
    offsets = (0.0, 10.0, 20.0) if not ctx.quick else (5.0,)
    base = (f"scale={scale}", f"fast_tier_gb={32 * scale}", f"duration_s={dur}", platform)

    # The paper reports execution times (§5.3-5.4, Figs. 8-11). Each tenant, alone or in a
    # pair, is given the work it does without migration in `dur` seconds (from its own start:
    # `work_mops`, `second_work_mops`) and timed until it has done it, which may take up to
    # WORK_CAP times as long.
    # The paper's +54% for liblinear is at 48 GB of DRAM (§5.3); the table is at 32 GB.
    big = (f"scale={scale}", f"fast_tier_gb={48 * scale}", f"duration_s={dur}", platform)
    firsts = [
        RunSpec(f"work|{mix}", "mig-friendliness", "notier", (*base, *how)) for mix, how in SINGLE.items()
    ]
    firsts.append(RunSpec("work48|liblinear", "mig-friendliness", "notier", (*big, "mix=liblinear")))
    for mix in PAIRS:
        for off in offsets:
            firsts.append(
                RunSpec(
                    f"work|{mix}|{off}",
                    "mig-friendliness",
                    "notier",
                    (*base, f"mix={mix}", f"offset_s={off}"),
                )
            )
    alone = ctx.grid(firsts).set_index("label")

    def timed(fixed: tuple[str, ...], label: str) -> tuple[str, ...]:
        procs = alone.loc[label, "summary"]["processes"]
        capped = tuple(f"duration_s={WORK_CAP * dur}" if k.startswith("duration_s=") else k for k in fixed)
        keys = ("work_mops", "second_work_mops")
        return (*capped, *(f"{k}={float(q['ops']) / 1e6!r}" for k, q in zip(keys, procs, strict=False)))

    paper = _toggle_spec(1.0)
    specs = [RunSpec(f"micro|{p}", "toggle-phases", paper(p), micro, timeseries=True) for p in MICRO_POLICIES]
    for mix, how in SINGLE.items():
        for p in SINGLE_POLICIES:
            specs.append(
                RunSpec(
                    f"single|{mix}|{p}",
                    "mig-friendliness",
                    toggle(p),
                    timed((*base, *how), f"work|{mix}"),
                )
            )
    for p in ("notier", "tpp+toggle"):
        specs.append(
            RunSpec(
                f"single48|liblinear|{p}",
                "mig-friendliness",
                toggle(p),
                timed((*big, "mix=liblinear"), "work48|liblinear"),
            )
        )
    for mix in PAIRS:
        for off in offsets:
            for p in PAIR_POLICIES:
                specs.append(
                    RunSpec(
                        f"pair|{mix}|{off}|{p}",
                        "mig-friendliness",
                        toggle(p),
                        timed((*base, f"mix={mix}", f"offset_s={off}"), f"work|{mix}|{off}"),
                    )
                )
    df = ctx.grid(specs).set_index("label")
    _micro(ctx, df, phase_s)
    _single(ctx, df, compress, dur)
    _pairs(ctx, df, offsets)


# A tenant given the work it does without migration in a run's time may take this many times
# as long to do it (Nomad on silo takes about twice).
WORK_CAP = 8.0

# The toggle layer's two periods at the paper's values (ms): interval_ms and scan_period_ms.
TOGGLE_PERIODS_MS = (2000.0, 5000.0)


def _toggle_spec(compress: float) -> Callable[[str], str]:
    """Maps a policy name to the spec that runs it: TPP (alone or under the layer) gets the paper's
    5.15 fault accounting (TPP-mod: `tpp_pre_5_18`), and a toggle layer its two periods (the
    paper's 2 s and 5 s) times `compress` (left as they are at compress 1); any other policy is
    left as it is."""
    interval, scan = (v * compress for v in TOGGLE_PERIODS_MS)

    def spec(policy: str) -> str:
        layers = tpp_pre_5_18(policy).split("+")
        if compress < 1.0 and layers[-1] == "toggle":
            layers[-1] = f"toggle:interval_ms={interval:.6g},scan_period_ms={scan:.6g}"
        return "+".join(layers)

    return spec


def _micro(ctx: Context, df: pd.DataFrame, phase_s: float) -> None:
    ctx.section(
        "The three-phase microbenchmark (Fig. 7)",
        f"An RSS five times the fast tier; phase 1 (0-{phase_s:g} s) hammers a random 3/8 of it, phase 2 "
        "widens the range to 3/4 with another pattern, phase 3 returns to the first region. The "
        "layer stops migration when the demote_promoted slope settles and restarts it when the "
        "access-bit scans (every 5 s, 2 MiB stride) change. The paper's stack is TPP-mod; we run "
        "the layer over TPP and over MEMTIS.",
    )
    rows = []
    for pol in MICRO_POLICIES:
        s = df.loc[f"micro|{pol}", "summary"]
        p = s["processes"][0]
        rows.append(
            {
                "policy": pol,
                "stops": p["migration_stops"],
                "restarts": p["migration_restarts"],
                "promotions": s["promotions"],
                "demote_promoted": p["demote_promoted"],
                "throughput (Mops/s)": s["throughput_ops_per_s"] / 1e6,
            }
        )
    tab = pd.DataFrame(rows).set_index("policy")
    ctx.table(tab.reset_index())
    m, t = tab.loc["memtis+toggle"], tab.loc["tpp+toggle"]
    ctx.claim(
        "Three migration stops and two restarts over the three phases",
        "3 stops, 2 restarts (the best option; TPP-mod)",
        f"memtis+toggle {int(m['stops'])} stops, {int(m['restarts'])} restarts; "
        f"tpp+toggle {int(t['stops'])} stops, {int(t['restarts'])} restarts",
        m["stops"] == 3 and m["restarts"] == 2 and t["stops"] == 3 and t["restarts"] == 2,
    )
    ctx.claim(
        "Stopping migration cuts promotions",
        "promotions stop in each phase once the WSS mismatch is seen",
        f"memtis+toggle {int(m['promotions'])} vs memtis {int(tab.loc['memtis', 'promotions'])}",
        m["promotions"] < tab.loc["memtis", "promotions"],
    )
    dp = int(tab.loc["tpp", "demote_promoted"])
    dem = int(df.loc["micro|tpp", "summary"]["demotions"])
    if dp < 0.01 * max(1, dem):
        ctx.text(
            f"Where ours differs: under our TPP only {dp} of {dem} demotions hit a page that had "
            "been promoted. TPP's kswapd demotes unreferenced pages from the inactive list with a "
            "second chance for referenced ones; the promoted pages of a uniformly hammered region "
            "are referenced, so kswapd demotes the never-promoted pages first touch put in the fast "
            "tier, and within the scaled run the ping-pong that drives demote_promoted (and with it "
            "Algorithm 1's slope) does not start: the layer has no signal and does not stop. MEMTIS "
            "demotes by its cooled histogram, promoted pages ping-pong, and the layer behaves as the "
            "paper's Fig. 7 shows."
        )
    _plot_micro(ctx, df, phase_s)


def _speed(df: pd.DataFrame, label: str, ref: str, unfinished: list[str], name: str | None = None) -> float:
    """How much sooner tenant `name` (the first if None) of run `label` did its work than under
    `ref`: ref's execution time over label's (1/execution time growth). A run that did not
    finish within its cap counts at the cap (a lower bound on its time) and is listed in
    `unfinished`."""

    def runtime(lbl: str) -> float:
        procs = df.loc[lbl, "summary"]["processes"]
        p = procs[0] if name is None else next(q for q in procs if q["name"] == name)
        if not p["finished"]:
            unfinished.append(f"{lbl} ({p['name']})")
        return float(p["runtime_s"])

    return runtime(ref) / runtime(label)


def _note_unfinished(ctx: Context, unfinished: list[str]) -> None:
    """Name the runs `_speed` counted at their cap, if any."""
    if unfinished:
        ctx.text(
            f"Did not finish within {WORK_CAP:g} times the work's time without migration (counted "
            f"at that cap, so their figures are upper bounds): {', '.join(sorted(set(unfinished)))}."
        )


def _single(ctx: Context, df: pd.DataFrame, compress: float, dur: float) -> None:
    rows = []
    unfinished: list[str] = []
    for mix in SINGLE:
        row: dict[str, Any] = {"benchmark": mix}
        for p in SINGLE_POLICIES:
            row[p] = _speed(df, f"single|{mix}|{p}", f"single|{mix}|notier", unfinished)
        rows.append(row)
    tab = pd.DataFrame(rows).set_index("benchmark")
    ctx.section(
        "Single tenants (Figs. 8, 9)",
        f"Execution time, as the paper reports it: each tenant does the work it does without "
        f"migration in {dur:g} s and exits; the table gives no migration's (notier's) execution "
        "time over each system's, so higher is better and 1/x is the paper's execution time "
        "growth. liblinear and ft are migration-friendly in the paper, silo (one thread) and gups "
        "unfriendly. gups runs with 24 threads, as in the UU pair, and with one, as in Fig. 9.",
    )
    ctx.table(tab.reset_index())
    if compress < 1.0:
        interval, scan = TOGGLE_PERIODS_MS
        ctx.text(
            f"Quick mode: these runs and the pairs' last {compress:.2f} times as long as in the full "
            "mode, and the toggle layer's two periods are shortened by the same factor "
            f"(interval_ms {interval * compress:.0f} and scan_period_ms {scan * compress:.0f} "
            f"instead of the paper's {interval:.0f} and {scan:.0f}), so that Algorithm 1 gets as "
            "many evaluations as in a full run; at the paper's periods the layer cannot stop "
            "before a quick run ends."
        )
    ft = tab.loc["ft"]
    ctx.text(
        "Where ours differs on FT (not a claim): the paper has FT gain 13% from migration with "
        "toggling alone, TPP-mod and Nomad not beating no migration and MEMTIS losing about 20% "
        f"(§5.3, Fig. 8a). Ours at 32 GB: tpp+toggle {ft['tpp+toggle']:.2f}, tpp {ft['tpp']:.2f}, "
        f"nomad {ft['nomad']:.2f}, memtis {ft['memtis']:.2f} of no migration's speed. FT's "
        "access pattern is not described; ours streams over a stable 30% of its data starting "
        "at a tenth of it, which first touch already puts in the fast tier when FT runs alone, so "
        "migration has nothing to gain and costs its hint faults. In the pairs below FT starts "
        "second and its stable region lands in the slow tier, where migration can bring it in."
    )
    ctx.text(
        "The paper's stack is TPP-mod plus toggling. liblinear streams over its whole data (10% of "
        "its misses, one touch per page per sweep) and reads a quarter of it at random (90%): the "
        "streamed pages read idle to kswapd between sweeps, TPP finds room for the random-access "
        "set and migration pays; the sweeps also promote streamed pages that are demoted again "
        "(demote_promoted), which is the slope the toggle layer watches."
    )
    gain48 = _speed(df, "single48|liblinear|tpp+toggle", "single48|liblinear|notier", unfinished)
    _note_unfinished(ctx, unfinished)
    ctx.claim(
        "A friendly workload gains from migration with toggling",
        "liblinear +54% over no migration (48 GB DRAM)",
        f"liblinear tpp+toggle {gain48:.2f}x notier at 48 GB "
        f"({tab.loc['liblinear', 'tpp+toggle']:.2f}x at 32 GB)",
        gain48 > 1.0 and tab.loc["liblinear", "tpp+toggle"] > 1.0,
        paper_value=1.54,
        ours_value=float(gain48),
        tolerance=0.25,
    )
    worst_other = min(tab.loc["silo", p] for p in ("tpp", "memtis", "nomad"))
    ctx.claim(
        "On single-threaded silo toggling limits the loss that other schemes suffer",
        "others 1.32-2.54x slower, ours at most 1.17x",
        f"tpp+toggle {1 / tab.loc['silo', 'tpp+toggle']:.2f}x slower, worst other {1 / worst_other:.2f}x",
        tab.loc["silo", "tpp+toggle"] >= worst_other and tab.loc["silo", "tpp+toggle"] > 1 / 1.17,
        "the loss is what migration costs before the layer stops it, so it shrinks as the work "
        "grows, and the paper does not give silo's: ours is the work no migration does in the "
        "run's time (docs/validation.md, section 4)",
        paper_value=1.17,
        ours_value=float(1 / tab.loc["silo", "tpp+toggle"]),
        tolerance=0.25,
        bound="upper",
    )
    one = tab.loc["gups, 1 thread"]
    others = ("tpp", "nomad", "tpp+toggle")
    best_other = max(others, key=lambda p: one[p])
    one_runs = {p: df.loc[f"single|gups, 1 thread|{p}", "summary"] for p in ("memtis", *others)}
    ctx.claim(
        "On single-threaded GUPS MEMTIS does better than the other migration schemes",
        "MEMTIS exhibits better performance than other schemes (§5.3, Fig. 9)",
        f"memtis {one['memtis']:.3f} of no migration's speed, best other {best_other} {one[best_other]:.3f}",
        all(one["memtis"] > one[p] for p in others),
    )
    fewer = all(one_runs["memtis"]["promotions"] < one_runs[p]["promotions"] for p in others)
    ctx.text(
        "The paper's reason for MEMTIS on single-threaded GUPS is that it migrates less (\"the "
        'histogram is not fully utilized in a single-threaded environment"). '
        + ("Ours migrates less too" if fewer else "Ours does not migrate less than all the others")
        + ": promotions "
        + ", ".join(f"{p} {int(r['promotions'])}" for p, r in one_runs.items())
        + ". It also loses less because MEMTIS migrates in its background threads, while "
        "TPP's and Nomad's promotions start at a hint fault that stops the one thread (hint faults: "
        + ", ".join(f"{p} {int(r['hint_faults'])}" for p, r in one_runs.items())
        + "). Where "
        'ours differs on liblinear (not a claim): the paper has "every scheme excluding MEMTIS" '
        "gain over no migration (§5.3, Fig. 8); ours has memtis "
        f"{tab.loc['liblinear', 'memtis']:.2f} of no migration's speed, with tpp "
        f"{tab.loc['liblinear', 'tpp']:.2f}. The paper runs MEMTIS's sampling and migration threads "
        "on the application's cores and notes that MEMTIS is highly sensitive to where they run "
        "(§5.1); the model gives them CPUs of their own: the application pays their copies' "
        "traffic and TLB shootdowns, not their CPU time (docs/validation.md, section 4)."
    )
    ctx.claim(
        "Toggling is at least as good as TPP on unfriendly workloads",
        "36% better than Nomad on average on unfriendly ones",
        "; ".join(
            f"{m}: {tab.loc[m, 'tpp+toggle']:.2f} vs tpp {tab.loc[m, 'tpp']:.2f}" for m in ("silo", "gups")
        ),
        all(tab.loc[m, "tpp+toggle"] >= 0.99 * tab.loc[m, "tpp"] for m in ("silo", "gups")),
        # the paper's number is against Nomad: ours against Nomad, averaged over the two
        paper_value=1.36,
        ours_value=float(sum(tab.loc[m, "tpp+toggle"] / tab.loc[m, "nomad"] for m in ("silo", "gups")) / 2),
        tolerance=0.25,
    )


def _pairs(ctx: Context, df: pd.DataFrame, offsets: tuple[float, ...]) -> None:
    names = {"ff": ("liblinear", "ft"), "uf": ("silo", "ft"), "uu": ("silo", "gups")}
    rows = []
    unfinished: list[str] = []
    for mix, procs in names.items():
        for n in procs:
            row: dict[str, Any] = {"pair": mix.upper(), "tenant": n}
            for p in PAIR_POLICIES:
                vals = [
                    _speed(df, f"pair|{mix}|{o}|{p}", f"pair|{mix}|{o}|notier", unfinished, n)
                    for o in offsets
                ]
                row[p] = sum(vals) / len(vals)
            stops = [
                next(
                    q for q in df.loc[f"pair|{mix}|{o}|tpp+toggle", "summary"]["processes"] if q["name"] == n
                )["migration_stops"]
                for o in offsets
            ]
            row["toggle stops"] = sum(stops) / len(stops)
            rows.append(row)
    tab = pd.DataFrame(rows)
    ctx.section(
        "Two tenants (Figs. 10, 11)",
        "Per tenant, no migration's execution time over each system's (higher is better), "
        "averaged over start offsets "
        f"({', '.join(f'{o:g}' for o in offsets)} s); the second tenant starts at the offset. Each "
        "tenant does the work it does without migration from its start to the end of the run's "
        "time, and exits. Toggle stops are per tenant: one tenant's stop never stops the other.",
    )
    ctx.table(tab)
    _note_unfinished(ctx, unfinished)
    ff = tab[tab["pair"] == "FF"]
    ctx.claim(
        "FF: migration with toggling beats no migration for both tenants",
        "SP +35%, Liblinear +38% over no migration (Table 4's Liblinear + SP pair; ours is its "
        "Liblinear + FT pair, SP's access pattern not being described)",
        ", ".join(f"{r.tenant} {r['tpp+toggle']:.2f}" for _, r in ff.iterrows()),
        bool((ff["tpp+toggle"] > 1.0).all()),
        # the two tenants' gains averaged: the paper's (1.35 + 1.38) / 2
        paper_value=1.365,
        ours_value=float(ff["tpp+toggle"].mean()),
        tolerance=0.25,
    )
    mixed = tab[tab["pair"] != "FF"]
    mean_toggle = float(mixed["tpp+toggle"].mean())
    mean_nomad = float(mixed["nomad"].mean())
    # "up to 72% better": the largest gain over Nomad of one tenant of the UF and UU pairs
    best_vs_nomad = float((mixed["tpp+toggle"] / mixed["nomad"]).max())
    ctx.claim(
        "UF/UU: toggling per process does better than Nomad",
        "up to 72% better than Nomad",
        f"mean speed over no migration {mean_toggle:.2f} vs Nomad {mean_nomad:.2f}; at most "
        f"{best_vs_nomad:.2f}x Nomad's for one tenant",
        mean_toggle >= mean_nomad,
        paper_value=1.72,
        ours_value=best_vs_nomad,
        tolerance=0.25,
    )
    _plot_pairs(ctx, tab)


def _plot_micro(ctx: Context, df: pd.DataFrame, phase_s: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, figsize=(10, 5), sharex=True)
    for pol in MICRO_POLICIES:
        s = df.loc[f"micro|{pol}", "series"]
        axes[0].plot(s["t_s"], s["promotions.micro"], label=pol, linewidth=0.9)
    s = df.loc["micro|memtis+toggle", "series"]
    on = s["migration_enabled.micro"]
    axes[0].fill_between(
        s["t_s"],
        0,
        [max(s["promotions.micro"]) * (1 - v) for v in on],
        color="grey",
        alpha=0.2,
        step="post",
        label="toggle: migration stopped",
    )
    # The layer's restart scans, from the policy's time-series channel (Policy::series).
    s = df.loc["micro|tpp+toggle", "series"]
    scans = s.get("policy.toggle.accessed_ptes.p0", [])
    pts = [(t, v) for t, v in zip(s["t_s"], scans, strict=False) if v == v]
    if pts:
        axes[1].plot([t for t, _ in pts], [v for _, v in pts], "o-", label="accessed PTEs (2 MiB stride)")
    for ax in axes:
        for k in (1, 2):
            ax.axvline(k * phase_s, color="black", linestyle=":")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    axes[0].set_ylabel("promotions / s")
    axes[1].set_ylabel("accessed PTEs")
    axes[1].set_xlabel("time (s)")
    ctx.figure(fig, "fig7_microbenchmark", "Promotions and accessed-PTE scans over the three phases (Fig. 7)")


def _plot_pairs(ctx: Context, tab: pd.DataFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 3.6))
    labels = [f"{r.pair}:{r.tenant}" for _, r in tab.iterrows()]
    width = 0.8 / len(PAIR_POLICIES)
    for k, p in enumerate(PAIR_POLICIES):
        ax.bar([i + k * width for i in range(len(tab))], tab[p], width, label=p)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(tab))], labels, fontsize=8)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_ylabel("speed / no migration")
    ax.legend(fontsize=8, ncol=4)
    ctx.figure(fig, "fig11_pairs", "FF, UF and UU pairs, averaged over start offsets (Figs. 10, 11)")
