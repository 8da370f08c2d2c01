"""The fast-only reference run kept on disk (docs/outputs.md, "The reference run"): the wall time of
the same set of runs, each in its own process as a sweep's workers run them, without the cache and
with it (the first run of the experiment fills it), side by side in one invocation.

    .venv/bin/python benchmarks/reference_cache.py [--experiment gups-hotset] [--duration 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

POLICIES = ("hemem", "tpp", "nbt", "memtis", "hemem+colloid", "pact")


def runs(experiment: str, duration: float, env: dict[str, str], extra: list[str]) -> float:
    start = time.perf_counter()
    for policy in POLICIES:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "tierkit",
                "run",
                experiment,
                "--policy",
                policy,
                "--set",
                f"duration_s={duration}",
                "--json",
                *extra,
            ],
            env=env,
            check=True,
            capture_output=True,
        )
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", default="gups-hotset")
    ap.add_argument("--duration", type=float, default=5.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TIERKIT_CACHE_DIR=cache)
        off = runs(args.experiment, args.duration, env, ["--no-cache"])
        on = runs(args.experiment, args.duration, env, [])
    print(f"{len(POLICIES)} runs of {args.experiment}, {args.duration:g} simulated s each, one process each")
    print(f"{'reference':>12} {'wall s':>8} {'ratio':>6}")
    print(f"{'--no-cache':>12} {off:8.2f} {1.0:6.2f}")
    print(f"{'cached':>12} {on:8.2f} {on / off:6.2f}")


if __name__ == "__main__":
    main()
