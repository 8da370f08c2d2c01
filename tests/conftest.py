"""Shared helpers: run the real `tierkit` command (``python -m tierkit``) in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

# Short simulated runs keep the suite fast; every CLI test uses these.
SHORT = ("--set", "duration_s=0.2")
EXPERIMENT = "gups-hotset"


def tierkit_cmd(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("TIERKIT_DEBUG", None)
    env["COLUMNS"] = "100"
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


def run_json(*args: str) -> dict[str, Any]:
    proc = tierkit_cmd("run", EXPERIMENT, *SHORT, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    value = json.loads(proc.stdout)
    assert isinstance(value, dict)
    return value
