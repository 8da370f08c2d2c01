"""Halve the step, the answer stays: every policy's throughput at epochs of 1, 0.5 and 0.25 ms.

A result that moves when only the epoch length changes is a bug in the model (a time constant
the step resolves, or work done per step instead of per unit of time). This runs each
(workload, policy) case below at three epochs and two seeds and prints, per case, the change of
the mean throughput from 1 to 0.5 ms and from 0.5 to 0.25 ms beside the seeds' own spread; cases
beyond `--tolerance` are flagged. docs/validation.md (section 1j) has the latest table;
tests/test_epoch_convergence.py checks a subset at 1 and 0.5 ms in CI.

    .venv/bin/python benchmarks/epoch_audit.py [--out FILE.md] [--tolerance 0.02]
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
    ("graph-objects", ("scale=0.0625", "duration_s=10"), ("soar", "tpp+alto", "nbt+alto", "nomad+alto")),
]

EPOCHS = (1.0, 0.5, 0.25)
SEEDS = (1, 2)


def throughput(workload: str, overrides: tuple[str, ...], policy: str, epoch_ms: float, seed: int) -> float:
    r = tierkit.run(workload, policy=policy, overrides=[*overrides, f"epoch_ms={epoch_ms}"], seed=seed)
    return float(r.summary["throughput_ops_per_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, help="also write the table to this Markdown file")
    ap.add_argument(
        "--tolerance", type=float, default=0.02, help="flag a change beyond this share (default 0.02)"
    )
    args = ap.parse_args()
    rows = []
    n = sum(len(p) for _, _, p in CASES)
    k = 0
    for workload, overrides, policies in CASES:
        for policy in policies:
            k += 1
            print(f"[{k}/{n}] {workload} {policy}", file=sys.stderr, flush=True)
            by_epoch = {e: [throughput(workload, overrides, policy, e, s) for s in SEEDS] for e in EPOCHS}
            mean = {e: statistics.mean(v) for e, v in by_epoch.items()}
            spread = max((max(v) - min(v)) / statistics.mean(v) for v in by_epoch.values())
            d1 = mean[0.5] / mean[1.0] - 1
            d2 = mean[0.25] / mean[0.5] - 1
            flag = "**beyond**" if max(abs(d1), abs(d2)) > args.tolerance else ""
            rows.append(
                f"| {workload} | {' '.join(overrides)} | {policy} | {100 * d1:+.2f}% | {100 * d2:+.2f}% "
                f"| {100 * spread:.2f}% | {flag} |"
            )
    head = [
        "| workload | overrides | policy | 1 -> 0.5 ms | 0.5 -> 0.25 ms | seeds' spread | |",
        "|---|---|---|---|---|---|---|",
    ]
    table = "\n".join(head + rows)
    print(table)
    if args.out:
        args.out.write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
