"""Scaling of the simulator with the footprint (issue 18 item 7): wall time per simulated second and
peak RSS against footprint, 4 KiB pages, for notier, hemem, tpp and pact, side by side in one run.

Each point is a fresh ``tierkit run gups-hotset`` process (8 threads, the hot set a third of the
buffer, a fast tier of a third of the footprint), so its peak RSS is its own (``os.wait4``); the
points of one footprint run one after another, policy by policy, so that the machine's load is
shared alike. Prints a Markdown table (and writes it with ``--out``); BENCHMARKS.md keeps the
latest one.

    .venv/bin/python benchmarks/scaling.py [--sizes 1,4,16,64] [--duration 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

POLICIES = ("notier", "hemem", "tpp", "pact")


def one_run(gib: float, policy: str, duration: float, tierkit: str) -> dict[str, float]:
    """One run in its own process: its wall time, peak RSS and the run's own --json figures."""
    with tempfile.TemporaryDirectory(prefix="tk-scaling-") as tmp:
        out = Path(tmp) / "run.json"
        args = [
            tierkit,
            "run",
            "gups-hotset",
            "--policy",
            policy,
            "--set",
            f"working_set_gb={gib}",
            "--set",
            f"hot_set_gb={gib / 3}",
            "--set",
            "threads=8",
            "--set",
            "page_size=4KiB",
            "--set",
            f"fast_tier_gb={gib / 3}",
            "--set",
            f"duration_s={duration}",
            "--json",
        ]
        t0 = time.perf_counter()
        with open(out, "w") as fh:
            proc = subprocess.Popen(args, stdout=fh, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            code = os.waitstatus_to_exitcode(status)
            raise SystemExit(f"{policy} at {gib} GiB: tierkit run exited {code}")
        d = json.loads(out.read_text())
    s = d.get("summary", d)
    per_page = s.get("memory_bytes_per_page") or {}
    return {
        "wall_s": wall,
        "wall_per_sim_s": wall / duration,
        "peak_rss_mib": usage.ru_maxrss / 1024,
        "estimate_bytes_per_page": float(per_page.get("total", float("nan"))),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,4,16,64", help="footprints in GiB, comma-separated")
    ap.add_argument("--duration", type=float, default=5.0, help="simulated seconds per run")
    ap.add_argument("--policies", default=",".join(POLICIES))
    ap.add_argument("--out", type=Path, help="also write the table here")
    a = ap.parse_args()
    tierkit = str(Path(sys.executable).with_name("tierkit"))
    sizes = [float(x) for x in a.sizes.split(",")]
    policies = a.policies.split(",")
    # the interpreter and libraries alone: a tiny run's peak RSS, taken off every point's
    base_mib = one_run(0.004, "notier", 0.01, tierkit)["peak_rss_mib"]
    lines = [
        f"#### Scaling with the footprint: gups-hotset, 8 threads, 4 KiB pages, {a.duration:g} s "
        f"simulated (RSS above a tiny run's {base_mib:.0f} MiB)",
        "| footprint | pages | policy | wall s | wall s / simulated s | peak RSS MiB | "
        "marginal B / page | estimate B / page |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for gib in sizes:
        pages = gib * 2**18
        for pol in policies:
            r = one_run(gib, pol, a.duration, tierkit)
            marginal = (r["peak_rss_mib"] - base_mib) * 2**20 / pages
            lines.append(
                f"| {gib:g} GiB | {int(pages):,} | {pol} | {r['wall_s']:.1f} | "
                f"{r['wall_per_sim_s']:.3f} | {r['peak_rss_mib']:.0f} | {marginal:.1f} | "
                f"{r['estimate_bytes_per_page']:.1f} |"
            )
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if a.out:
        a.out.write_text(text)
    else:
        print()
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
