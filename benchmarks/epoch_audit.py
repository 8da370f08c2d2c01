"""Halve the step, the answer stays: every policy's throughput at epochs of 1, 0.5 and 0.25 ms.

A result that moves when only the epoch length changes is a bug in the model (a time constant
the step resolves, or work done per step instead of per unit of time). This runs each
(workload, policy) case below at three epochs and two seeds and prints, per case, the change of
the mean throughput from 1 to 0.5 ms and from 0.5 to 0.25 ms beside the seeds' own spread; cases
beyond `--tolerance` are flagged. docs/validation.md (sections 1j and 1m) has the latest tables;
tests/test_epoch_convergence.py checks a subset at 1 and 0.5 ms in CI.

With `--counters`, a second table puts the mechanisms' own counts beside it, from the same runs:
promotions, demotions, hint faults and accessed-bit tests at 0.25 ms against 1 ms (means over the
seeds), flagged beyond `--counter-tolerance`. A throughput that holds while the mechanism under
it works differently by step (kswapd testing three times the pages, say) is a result that holds
by luck; section 1m of docs/validation.md has such a case.

With `--defaults`, the cases are instead every built-in workload at its defaults (so at the
sizes a user first runs, where the list below is scaled down), `duration_s` of `--duration`
(10 s), under the policies of DEFAULT_POLICIES: PACT's stalled promotions on graph-objects
(docs/validation.md, section 4, "An epoch audit of every built-in workload") showed only there.

    .venv/bin/python benchmarks/epoch_audit.py [--out FILE.md] [--tolerance 0.02]
        [--counters] [--counter-tolerance 0.10] [--only WORKLOAD] [--defaults [--duration S]]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import tierkit

#: (workload, overrides, policies): small footprints and short runs, so the whole audit takes a few
#: minutes on two cores; 2 MiB pages where the workload's default is (gups-hotset's fault storms)
CASES: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    (
        "gups-hotset",
        ("duration_s=30",),
        (
            "hemem",
            "memtis",
            "tpp",
            "nbt",
            "nomad",
            "hemem+colloid",
            "tpp+colloid",
            "memtis+colloid",
            "pact",
            "tpp+alto",
        ),
    ),
    (
        "gups-hotset",
        ("duration_s=20", "page_size=4KiB", "working_set_gb=3", "hot_set_gb=1"),
        ("hemem", "memtis", "tpp", "nbt", "nomad", "hemem+colloid", "tpp+colloid", "pact"),
    ),
    (
        "gups-hotset",
        ("duration_s=30", "antagonist_intensity=3"),
        ("hemem", "tpp", "hemem+colloid", "tpp+colloid"),
    ),
    (
        "graph-kron",
        ("vertices_gb=0.25", "edges_gb=0.25", "frontier_gb=0.05", "duration_s=10", "fast_ratio=1:4"),
        ("pact", "nbt", "tpp", "memtis", "hemem", "tpp+colloid"),
    ),
    (
        "zipf-kv",
        ("values_gb=0.5", "index_gb=0.05", "duration_s=10", "fast_ratio=1:1", "platform=skx-cxl-emu"),
        ("pact", "hemem", "tpp"),
    ),
    (
        "lc-be-mix",
        ("scale=0.015625", "fast_tier_gb=0.5", "duration_s=20", "pagerank_start_s=4", "liblinear_start_s=8"),
        ("vulcan", "memtis", "nomad"),
    ),
    (
        "mig-friendliness",
        ("mix=uu", "scale=0.015625", "fast_tier_gb=0.5", "duration_s=30", "offset_s=10"),
        ("memtis+toggle", "tpp+toggle"),
    ),
    (
        "graph-objects",
        ("scale=0.0625", "duration_s=10"),
        ("soar", "tpp+alto", "nbt+alto", "nomad+alto", "pact"),
    ),
    # promotions limited by the room kswapd makes (4 KiB, a small fast tier): at the step's end
    # NBT's failed promotions follow the step (docs/validation.md, section 1t)
    (
        "seq-pc",
        ("buffer_gb=0.25", "fast_runtime_s=2", "platform=skx-cxl-emu"),
        ("nbt", "nbt:fault_path=true", "tpp", "nomad"),
    ),
    ("toggle-phases", ("rss_gb=0.5", "phase_s=20", "threads=1"), ("tpp+toggle", "memtis+toggle")),
    ("masim-colocate", ("size_gb=0.5", "duration_s=10"), ("pact", "pact:score=latency", "tpp")),
    ("trace:examples/traces/sqlite-lookup.tkt", (), ("hemem", "tpp", "pact", "nbt")),
]

#: the policies `--defaults` runs on every built-in workload
DEFAULT_POLICIES = (
    "notier",
    "hemem",
    "memtis",
    "tpp",
    "nbt",
    "nomad",
    "pact",
    "vulcan",
    "hemem+colloid",
    "tpp+colloid",
    "memtis+colloid",
    "nbt+alto",
)

EPOCHS = (1.0, 0.5, 0.25)
SEEDS = (1, 2)
#: the mechanisms' counts of `--counters` (keys of a run's summary)
COUNTERS = ("promotions", "demotions", "hint_faults", "accessed_bit_tests")


def summary(workload: str, overrides: tuple[str, ...], policy: str, epoch_ms: float, seed: int) -> dict:
    r = tierkit.run(workload, policy=policy, overrides=[*overrides, f"epoch_ms={epoch_ms}"], seed=seed)
    return dict(r.summary)


def counter_means(runs: dict[float, list[dict]], key: str) -> tuple[float, float]:
    """The mean count over the seeds at the coarsest epoch and at the finest."""
    coarse, fine = (statistics.mean(float(s.get(key, 0)) for s in runs[e]) for e in (EPOCHS[0], EPOCHS[-1]))
    return coarse, fine


def counter_cell(coarse: float, fine: float) -> str:
    """The finest epoch's count against the coarsest's, as a signed change ("-" when both are 0)."""
    if coarse == 0 and fine == 0:
        return "-"
    if coarse == 0:
        return f"0 -> {fine:.0f}"
    return f"{100 * (fine / coarse - 1):+.1f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    ap.add_argument(
        "--tolerance", type=float, default=0.02, help="flag a change beyond this share (default 0.02)"
    )
    ap.add_argument(
        "--counters",
        action="store_true",
        help="also tabulate promotions, demotions, hint faults and accessed-bit tests, 0.25 ms against 1 ms",
    )
    ap.add_argument(
        "--counter-tolerance",
        type=float,
        default=0.10,
        help="flag a counter that changes beyond this share (default 0.10)",
    )
    ap.add_argument("--only", metavar="WORKLOAD", help="run only this workload's cases")
    ap.add_argument(
        "--defaults",
        action="store_true",
        help="every built-in workload at its defaults under DEFAULT_POLICIES instead of the scaled cases",
    )
    ap.add_argument(
        "--duration",
        type=float,
        default=10.0,
        metavar="S",
        help="simulated seconds of each --defaults run (default 10)",
    )
    args = ap.parse_args()
    if args.duration <= 0:
        ap.error(f"--duration {args.duration:g}: expected a positive number of seconds")
    pool = (
        [(w, (f"duration_s={args.duration:g}",), DEFAULT_POLICIES) for w, _ in tierkit.list_workloads()]
        if args.defaults
        else CASES
    )
    cases = [c for c in pool if args.only in (None, c[0])]
    if not cases:
        ap.error(f"--only {args.only}: no case of that workload (known: {sorted({c[0] for c in pool})})")
    rows = []
    counter_rows = []
    n = sum(len(p) for _, _, p in cases)
    k = 0
    for workload, overrides, policies in cases:
        for policy in policies:
            k += 1
            print(f"[{k}/{n}] {workload} {policy}", file=sys.stderr, flush=True)
            runs = {e: [summary(workload, overrides, policy, e, s) for s in SEEDS] for e in EPOCHS}
            by_epoch = {e: [float(s["throughput_ops_per_s"]) for s in v] for e, v in runs.items()}
            mean = {e: statistics.mean(v) for e, v in by_epoch.items()}
            spread = max((max(v) - min(v)) / statistics.mean(v) for v in by_epoch.values())
            d1 = mean[0.5] / mean[1.0] - 1
            d2 = mean[0.25] / mean[0.5] - 1
            flag = "**beyond**" if max(abs(d1), abs(d2)) > args.tolerance else ""
            rows.append(
                f"| {workload} | {' '.join(overrides)} | {policy} | {100 * d1:+.2f}% | {100 * d2:+.2f}% "
                f"| {100 * spread:.2f}% | {flag} |"
            )
            means = [counter_means(runs, c) for c in COUNTERS]
            beyond = any(c > 0 and abs(f / c - 1) > args.counter_tolerance for c, f in means)
            cells = " | ".join(counter_cell(c, f) for c, f in means)
            counter_rows.append(f"| {workload} | {policy} | {cells} | {'**beyond**' if beyond else ''} |")
    head = [
        "| workload | overrides | policy | 1 -> 0.5 ms | 0.5 -> 0.25 ms | seeds' spread | |",
        "|---|---|---|---|---|---|---|",
    ]
    table = "\n".join(head + rows)
    if args.counters:
        table += (
            f"\n\nThe mechanisms' counts, mean at {EPOCHS[-1]:g} ms against {EPOCHS[0]:g} ms:\n\n"
            + "\n".join(
                [
                    "| workload | policy | " + " | ".join(COUNTERS) + " | |",
                    "|---|---|" + "---|" * len(COUNTERS) + "---|",
                    *counter_rows,
                ]
            )
        )
    print(table)
    if args.out:
        args.out.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
