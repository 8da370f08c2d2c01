"""Pure-Python pieces that need no simulation."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

import tierkit
from tierkit import cli, demo
from tierkit.output import si


def test_overrides_are_normalized() -> None:
    assert tierkit.normalize_overrides(None) == []
    assert tierkit.normalize_overrides({"a": 1, "b.c": True, "d": 0.5}) == ["a=1", "b.c=true", "d=0.5"]
    assert tierkit.normalize_overrides(["fast_ratio=1:4"]) == ["fast_ratio=1:4"]


@pytest.mark.parametrize("bad", ["x", "=1", "x=", " = "])
def test_malformed_overrides_are_rejected(bad: str) -> None:
    with pytest.raises(tierkit.TierkitError):
        tierkit.normalize_overrides([bad])


def test_a_string_is_not_a_list_of_overrides() -> None:
    with pytest.raises(tierkit.TierkitError):
        tierkit.normalize_overrides("duration_s=1")


def _describe(params: dict[str, list[dict[str, Any]]]) -> Any:
    return lambda name: params.get(name, [])


def test_demo_skips_missing_policies_with_a_note() -> None:
    plan = demo.plan_cases(["notier", "hemem"], _describe({}))
    # stacks run only when every layer exists
    assert [c.spec for c in plan.cases] == ["notier", "hemem"]
    assert any("`colloid`" in note for note in plan.notes)
    assert any("`static`" in note for note in plan.notes)
    assert not any("`hemem`" in note for note in plan.notes)
    plan = demo.plan_cases(["hemem", "colloid"], _describe({}))
    assert [c.spec for c in plan.cases] == ["hemem", "hemem+colloid"]


def test_demo_runs_static_at_each_hot_fraction() -> None:
    params = {"static": [{"name": "hot_fraction", "kind": "float", "default": "1", "unit": "", "doc": ""}]}
    plan = demo.plan_cases(["static"], _describe(params))
    assert [c.spec for c in plan.cases] == [f"static:hot_fraction={f:g}" for f in demo.STATIC_HOT_FRACTIONS]


def test_demo_runs_static_once_without_a_fraction_parameter() -> None:
    plan = demo.plan_cases(["static"], _describe({}))
    assert [c.spec for c in plan.cases] == ["static"]


def test_si_formatting() -> None:
    assert si(12_300_000, "ops/s") == "12.3 Mops/s"
    assert si(950.0) == "950"
    assert si(None) == "-"
    assert si(float("nan")) == "-"


def test_parser_knows_every_command() -> None:
    parser = cli.build_parser()
    args = parser.parse_args(["run", "x", "--set", "a=1", "--set", "b=2", "--seed", "3", "--json"])
    assert args.overrides == ["a=1", "b=2"]
    assert args.seed == 3
    assert args.json
    assert set(cli.COMMANDS) == {
        "run",
        "list",
        "describe",
        "demo",
        "calibrate",
        "reproduce",
        "soar",
        "trace",
        "sweep",
        "validate",
        "report",
    }


def test_missing_extension_is_one_error_line() -> None:
    code = (
        "import sys\n"
        "sys.modules['tierkit._core'] = None  # makes `from tierkit import _core` fail\n"
        "from tierkit.cli import main\n"
        "raise SystemExit(main(['list', 'policies']))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("tierkit: error: the compiled extension tierkit._core is not available")
    assert len(proc.stderr.splitlines()) == 1
    help_proc = subprocess.run(
        [sys.executable, "-c", code.replace("'list', 'policies'", "'run', '--help'")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert help_proc.returncode == 0
    assert "antagonist_intensity" in help_proc.stdout
