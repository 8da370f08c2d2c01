"""Shared helpers: run the real `tierkit` command (``python -m tierkit``) in a subprocess."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

# The fast-only reference runs are kept in a cache of the session's own (never the user's
# ~/.cache), which the session's runs share, and which goes with it.
if "TIERKIT_CACHE_DIR" not in os.environ:
    _CACHE = tempfile.mkdtemp(prefix="tierkit-test-cache-")
    os.environ["TIERKIT_CACHE_DIR"] = _CACHE
    atexit.register(shutil.rmtree, _CACHE, True)
os.environ.pop("TIERKIT_NO_CACHE", None)

# Short simulated runs keep the suite fast; every CLI test uses these.
SHORT = ("--set", "duration_s=0.2")
EXPERIMENT = "gups-hotset"


def tierkit_cmd(
    *args: str, timeout: float = 300, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("TIERKIT_DEBUG", None)
    env["COLUMNS"] = "100"
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, "-m", "tierkit", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


@pytest.fixture
def tk() -> Callable[..., subprocess.CompletedProcess[str]]:
    return tierkit_cmd


Run = tuple[str | os.PathLike[str], str, list[str], int]


def summaries(runs: list[Run]) -> list[dict[str, Any]]:
    """The summary of each (experiment name or file, policy, overrides, seed) run through the
    API, the runs spread over threads: a run releases the GIL, so they take every core."""
    import tierkit

    def one(run: Run) -> dict[str, Any]:
        experiment, policy, overrides, seed = run
        return dict(tierkit.run(experiment, policy=policy, overrides=overrides, seed=seed).summary)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(one, runs))


def slowdowns(runs: list[Run], key: str = "slowdown_vs_fast_only") -> list[float]:
    """``summary[key]`` of each run of :func:`summaries`."""
    return [float(s[key]) for s in summaries(runs)]


def run_json(*args: str) -> dict[str, Any]:
    proc = tierkit_cmd("run", EXPERIMENT, *SHORT, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    value = json.loads(proc.stdout)
    assert isinstance(value, dict)
    return value
