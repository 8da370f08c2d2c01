"""Runs in Python threads (``tierkit.run`` releases the GIL while it simulates): the wall time of N
runs one after another against the same N runs in a thread pool of W threads, taken in turns
(serial, threaded, serial, ...) so that the machine's load falls on both alike, and the results
compared bit for bit. Prints one Markdown table row per repetition and the medians; BENCHMARKS.md
keeps the latest figures.

    .venv/bin/python benchmarks/threads.py [--runs 8] [--workers 2] [--repeat 5]
        [--experiment gups-hotset] [--policy tpp] [--set duration_s=300 ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import tierkit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=8, help="runs per batch (seeds 1..N)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="threads (default: cores)")
    ap.add_argument("--repeat", type=int, default=5, help="batches of each kind, taken in turns")
    ap.add_argument("--experiment", default="gups-hotset")
    ap.add_argument("--policy", default="tpp")
    ap.add_argument("--set", action="append", default=None, metavar="KEY=VALUE", help="experiment overrides")
    args = ap.parse_args()
    overrides = args.set or ["duration_s=300"]
    # the fast-only reference is cached once, before timing, so both kinds time the policy runs
    cache = tempfile.mkdtemp(prefix="tk-threads-")

    def one(seed: int) -> dict[str, Any]:
        s = tierkit.run(
            args.experiment, policy=args.policy, overrides=overrides, seed=seed, cache=cache
        ).summary
        for key in ("wall_seconds", "reference_cached"):
            s.pop(key, None)
        return s

    seeds = list(range(1, args.runs + 1))
    expected = [one(s) for s in seeds]
    serial: list[float] = []
    threaded: list[float] = []
    what = f"`{args.experiment}` under `{args.policy}` ({' '.join(overrides)})"
    print(f"{args.runs} runs of {what}, {args.workers} threads")
    print("| batch | one after another (s) | in threads (s) | threads / serial |")
    print("|---|---|---|---|")
    for i in range(args.repeat):
        t = time.perf_counter()
        got = [one(s) for s in seeds]
        serial.append(time.perf_counter() - t)
        assert got == expected
        t = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            got = list(pool.map(one, seeds))
        threaded.append(time.perf_counter() - t)
        assert got == expected, "runs in threads gave other results"
        print(f"| {i + 1} | {serial[-1]:.3f} | {threaded[-1]:.3f} | {threaded[-1] / serial[-1]:.2f}x |")
    s, m = statistics.median(serial), statistics.median(threaded)
    print(f"| median | {s:.3f} | {m:.3f} | {m / s:.2f}x |")
    print("results: the same bit for bit in every batch")


if __name__ == "__main__":
    main()
