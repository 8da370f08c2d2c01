"""The multi-gen LRU's cost (`lru_gen=true`, docs/policies.md): the user CPU time of the same runs
with the classic lists and with the multi-gen LRU, interleaved (classic, multi-gen, classic, ...)
in one invocation, each run in its own process; the median of each, their ratio, and the kswapd
work behind it.

    .venv/bin/python benchmarks/lru_gen.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: (label, experiment, policy, --set overrides): the press scenario as `tierkit validate kernel`
#: simulates it (written to a file first), the kswapd-heaviest reproduction case, and GUPS on
#: 2 MiB pages, where every fast-tier page is hot and the multi-gen kswapd keeps ageing
CASES = (
    ("press (validate kernel)", "PRESS", "nbt", ()),
    ("toggle-phases", "toggle-phases", "tpp", ("threads=1", "rss_gb=2", "phase_s=20", "duration_s=60")),
    ("gups-hotset", "gups-hotset", "tpp", ("duration_s=60",)),
)


def press_experiment(tmp: Path) -> tuple[str, str]:
    """The shipped press recording as an experiment file and its nbt spec (without lru_gen)."""
    import tierkit
    from tierkit.validate import load_recording
    from tierkit.validate_press import PRESS_RECORDING, sim_experiment

    params = {p["name"] for p in tierkit.describe_policy("nbt")} - {"lru_gen"}
    text, spec = sim_experiment(load_recording(PRESS_RECORDING), params)
    path = tmp / "press.toml"
    path.write_text(text)
    return str(path), spec


def user_seconds(args: list[str]) -> tuple[float, dict[str, float]]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    used = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
    stats = json.loads(out)["policy_stats"]
    return used, stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    head = ("case", "classic s", "multi-gen s", "ratio", "kswapd examined/isolated", "walk tests")
    print(f"{head[0]:26} {head[1]:>10} {head[2]:>12} {head[3]:>6} {head[4]:>26} {head[5]:>12}")
    with tempfile.TemporaryDirectory() as tmp:
        press, press_spec = press_experiment(Path(tmp))
        for label, exp, policy, sets in CASES:
            if exp == "PRESS":
                exp, policy = press, press_spec
            times: dict[bool, list[float]] = {False: [], True: []}
            stats: dict[bool, dict[str, float]] = {}
            for _ in range(args.repeat):
                for gen in (False, True):
                    spec = policy + ("," if ":" in policy else ":") + f"lru_gen={str(gen).lower()}"
                    cmd = [sys.executable, "-m", "tierkit", "run", exp, "--policy", spec]
                    cmd += ["--json", "--no-cache"]
                    for s in sets:
                        cmd += ["--set", s]
                    t, stats[gen] = user_seconds(cmd)
                    times[gen].append(t)
            c, g = statistics.median(times[False]), statistics.median(times[True])
            work = f"{stats[False]['kswapd_scanned']:.3g} / {stats[True]['kswapd_scanned']:.3g}"
            walk = stats[True].get("kswapd_walk_tested", 0)
            print(f"{label:26} {c:10.2f} {g:12.2f} {g / c:6.2f} {work:>26} {walk:12.3g}")


if __name__ == "__main__":
    main()
