"""Three audits of every built-in workload at its defaults, beside benchmarks/epoch_audit.py's.

*The seed* (the default): each (workload, policy) pair under `--seeds N` seeds; per pair, the
coefficient of variation of the throughput over the seeds, its range as a share of the mean and
the range of the promotions, widest spread first. A pair whose outcome has two states (PACT's
stalled promotions on graph-objects, docs/validation.md section 4) stands out here before any
epoch is halved.

*A parameter the run should not read* (`--vary KEY=VALUE`, repeatable): each pair at seed 1 with
and without the settings; per pair, "same" when the whole summary is the same bit for bit (but
its wall-clock times and table sizes), else the throughput's change and both promotion counts.
The slow tier's size (`--vary slow_tier_gb=512`) leaves every policy without kernel watermarks
the same and moves Linux's own (tpp, nbt, nomad and their layers) by up to 1.6%, because the
kernel shares min_free_kbytes out by node size (docs/validation.md, section 4, "Parameters a run
has no use for").

*The run's length* (`--causal`): each pair at seed 1 for `--duration` and for half of it; per
pair, "same" when the shorter run's time series (every 500 ms) is the longer one's first half
bit for bit, else the first sample and column that differ. Only graph-objects, whose timeline is
by definition a share of `duration_s`, differs (tested in
crates/tierkit-sim/tests/unrelated_parameters.rs).

    .venv/bin/python benchmarks/seed_audit.py [--seeds 6] [--duration 10] [--vary KEY=VALUE ...]
        [--causal] [--only WORKLOAD] [--policies P,P,...] [--workers N] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import tierkit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from epoch_audit import DEFAULT_POLICIES

#: what a run measures of itself, not of the simulated machine
OWN = (
    "wall_seconds",
    "replay_seconds",
    "memory_bytes_per_page",
    "memory_estimate_bytes",
    "memory_allocated_bytes_per_page",
)


def run(workload: str, policy: str, overrides: list[str], seed: int) -> dict[str, Any]:
    s = dict(tierkit.run(workload, policy=policy, overrides=overrides, seed=seed).summary)
    return {k: v for k, v in s.items() if k not in OWN}


def seed_table(
    pairs: list[tuple[str, str]], duration: float, seeds: int, workers: int
) -> list[tuple[float, str]]:
    jobs = [(w, p, s) for w, p in pairs for s in range(1, seeds + 1)]

    def one(job: tuple[str, str, int]) -> tuple[float, int]:
        w, p, s = job
        r = run(w, p, [f"duration_s={duration:g}"], s)
        return float(r["throughput_ops_per_s"]), int(r["promotions"])

    with ThreadPoolExecutor(max_workers=workers) as pool:
        got = dict(zip(jobs, pool.map(one, jobs), strict=True))
    rows = []
    for w, p in pairs:
        t = [got[(w, p, s)][0] for s in range(1, seeds + 1)]
        pr = [got[(w, p, s)][1] for s in range(1, seeds + 1)]
        mean = statistics.mean(t)
        cv = statistics.pstdev(t) / mean if mean > 0 else 0.0
        rows.append(
            (
                cv,
                f"| {w} | {p} | {100 * cv:.2f}% | {min(t) / mean:.3f}-{max(t) / mean:.3f} "
                f"| {min(pr)}-{max(pr)} |",
            )
        )
    rows.sort(key=lambda r: -r[0])
    return rows


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary with the tiers' capacities left out (the slow tier's may be what was varied)."""
    tiers = [{**t, "capacity_pages": None} for t in summary["tiers"]]
    return {**summary, "tiers": tiers}


def vary_table(pairs: list[tuple[str, str]], duration: float, vary: list[str], workers: int) -> list[str]:
    base = [f"duration_s={duration:g}"]
    jobs = [(w, p, v) for w, p in pairs for v in (False, True)]

    def one(job: tuple[str, str, bool]) -> dict[str, Any]:
        w, p, v = job
        return run(w, p, base + (vary if v else []), 1)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        got = dict(zip(jobs, pool.map(one, jobs), strict=True))
    rows = []
    for w, p in pairs:
        a, b = got[(w, p, False)], got[(w, p, True)]
        same = comparable(a) == comparable(b)
        ta, tb = float(a["throughput_ops_per_s"]), float(b["throughput_ops_per_s"])
        change = "same" if same else f"{100 * (tb / ta - 1):+.3f}%" if ta > 0 else "differs"
        rows.append(f"| {w} | {p} | {change} | {a['promotions']} | {b['promotions']} |")
    return rows


def causal_table(pairs: list[tuple[str, str]], duration: float, workers: int) -> list[str]:
    import numpy as np

    def series(w: str, p: str, d: float) -> Any:
        over = [f"duration_s={d:g}", "report_interval_ms=500"]
        return tierkit.run(w, policy=p, overrides=over, seed=1).timeseries

    def one(pair: tuple[str, str]) -> str:
        w, p = pair
        short, long = series(w, p, duration / 2), series(w, p, duration)
        long = long.iloc[: len(short)]
        first: tuple[float, str] | None = None
        for c in short.columns:
            if c not in long.columns or short[c].dtype == object:
                continue
            a, b = short[c].to_numpy(), long[c].to_numpy()
            bad = np.nonzero(~((a == b) | (np.isnan(a) & np.isnan(b))))[0]
            if len(bad) and (first is None or short["t_s"].iloc[bad[0]] < first[0]):
                first = (float(short["t_s"].iloc[bad[0]]), c)
        what = "same" if first is None else f"differs from t = {first[0]:g} s ({first[1]})"
        return f"| {w} | {p} | {what} |"

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, pairs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=6, help="seeds 1..N per pair (default 6)")
    ap.add_argument("--duration", type=float, default=10.0, help="simulated seconds a run (default 10)")
    ap.add_argument(
        "--vary",
        action="append",
        metavar="KEY=VALUE",
        default=[],
        help="audit these settings against the defaults at seed 1 instead of the seeds",
    )
    ap.add_argument(
        "--causal",
        action="store_true",
        help="audit the run's length instead: half the duration against the whole, seed 1",
    )
    ap.add_argument("--only", metavar="WORKLOAD", help="run only this built-in workload")
    ap.add_argument("--policies", help=f"comma-separated policies (default: {','.join(DEFAULT_POLICIES)})")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="runs at once (threads)")
    ap.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    args = ap.parse_args()
    if args.seeds < 1 or args.duration <= 0 or args.workers < 1:
        ap.error("--seeds and --workers must be at least 1 and --duration positive")
    workloads = [w for w, _ in tierkit.list_workloads()]
    if args.only:
        if args.only not in workloads:
            ap.error(f"--only {args.only}: not a built-in workload (one of {', '.join(workloads)})")
        workloads = [args.only]
    policies = args.policies.split(",") if args.policies else list(DEFAULT_POLICIES)
    pairs = [(w, p) for w in workloads for p in policies]
    try:
        if args.causal:
            head = [
                f"The first {args.duration / 2:g} s of a {args.duration:g} s run against a "
                f"{args.duration / 2:g} s run, seed 1",
                "",
                "| workload | policy | time series |",
                "|---|---|---|",
            ]
            lines = head + causal_table(pairs, args.duration, args.workers)
        elif args.vary:
            head = [
                f"Settings `{' '.join(args.vary)}` against the defaults, {args.duration:g} s, seed 1",
                "",
                "| workload | policy | throughput | promotions (defaults) | promotions (varied) |",
                "|---|---|---|---|---|",
            ]
            lines = head + vary_table(pairs, args.duration, args.vary, args.workers)
        else:
            head = [
                f"Throughput over seeds 1-{args.seeds}, {args.duration:g} s, widest spread first",
                "",
                "| workload | policy | CV | range / mean | promotions |",
                "|---|---|---|---|---|",
            ]
            lines = head + [r for _, r in seed_table(pairs, args.duration, args.seeds, args.workers)]
    except (tierkit.TierkitError, ValueError) as e:
        print(f"seed_audit: {e}", file=sys.stderr)
        return 2
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
