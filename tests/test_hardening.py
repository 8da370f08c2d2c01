"""Issue 19's reproducers through the `tierkit` command: crashes and nonsense are one error line
naming the file and key (exit 2), never a panic or a traceback; meaningful inputs run."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import EXPERIMENT, SHORT

Tk = Callable[..., subprocess.CompletedProcess[str]]
ROOT = Path(__file__).resolve().parent.parent
CUSTOM = ROOT / "examples" / "custom.toml"
TRACE = ROOT / "examples" / "traces" / "pchase.tkt"
ACCESS = "process.0.thread.0.phase.0.access.0"


def one_error_line(proc: subprocess.CompletedProcess[str], *wanted: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "panicked" not in proc.stderr, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tierkit: error: "), lines[0]
    for w in wanted:
        assert w in lines[0], (w, lines[0])
    assert "internal error" not in lines[0]
    return lines[0]


def test_hot_set_below_one_page(tk: Tk) -> None:
    for v in ("0", "0.001"):
        one_error_line(tk("run", EXPERIMENT, *SHORT, "--set", f"hot_set_gb={v}"), "hot_set_gb", "one page")


def test_start_frac_one(tk: Tk) -> None:
    proc = tk("run", str(CUSTOM), "--set", "duration_s=0.1", "--set", f"{ACCESS}.start_frac=1.0")
    one_error_line(proc, str(CUSTOM), f"{ACCESS}.start_frac", "[0, 1)")


def test_duplicate_process_names_name_both(tk: Tk, tmp_path: Path) -> None:
    text = CUSTOM.read_text()
    block = text[text.index("[[process]]") : text.index("[[process]]", text.index("[[process]]") + 1)]
    exp = tmp_path / "dup.toml"
    exp.write_text(text + "\n" + block)
    one_error_line(tk("run", str(exp), *SHORT), str(exp), "`process.2.name`", "process.0", "unique")


def test_the_same_trace_many_times_runs_with_unique_names(tk: Tk, tmp_path: Path) -> None:
    exp = tmp_path / "traces.toml"
    exp.write_text(f'workload = "trace"\ntrace = {json.dumps([str(TRACE)] * 3)}\nfast_tier_gb = 1\n')
    proc = tk("run", str(exp), "--set", "duration_s=0.05", "--policy", "notier", "--json")
    assert proc.returncode == 0, proc.stderr
    names = [p["name"] for p in json.loads(proc.stdout)["processes"]]
    assert names == ["pchase", "pchase#2", "pchase#3"]


NONSENSE: list[tuple[str, list[str], list[str]]] = [
    ("weight 0", [f"{ACCESS}.weight=0"], [f"{ACCESS}.weight", "weight 0"]),
    ("zipf_s nan", [f"{ACCESS}.zipf_s=nan"], [f"{ACCESS}.zipf_s", "[0.01, 5]"]),
    ("zipf_s negative", [f"{ACCESS}.zipf_s=-1"], [f"{ACCESS}.zipf_s"]),
    ("empty name", ['process.0.name=""'], ["`process.0.name`", "non-empty"]),
    ("NUL in name", ['process.0.name="a\\u0000b"'], ["`process.0.name`", "control"]),
]


def test_a_200_kb_process_name_is_refused(tk: Tk, tmp_path: Path) -> None:
    exp = tmp_path / "long.toml"
    exp.write_text(CUSTOM.read_text().replace('name = "stream"', f'name = "{"x" * 200_000}"'))
    line = one_error_line(tk("run", str(exp), *SHORT), str(exp), "`process.0.name`", "at most 128")
    assert len(line) < 400


@pytest.mark.parametrize(
    ("sets", "wanted"), [(s, w) for _, s, w in NONSENSE], ids=[n for n, _, _ in NONSENSE]
)
def test_nonsense_in_an_experiment_is_named(tk: Tk, sets: list[str], wanted: list[str]) -> None:
    args = [a for s in sets for a in ("--set", s)]
    one_error_line(tk("run", str(CUSTOM), *SHORT, *args), str(CUSTOM), *wanted)


ANTAGONIST = '\n[[antagonist]]\ntier = "fast"\ncores = 2\nstart_s = 1\n'
TIERS = "\n[[tier]]\nl0_ns = 80\npeak_gbps = 50\n[[tier]]\nl0_ns = 200\npeak_gbps = 30\n"


@pytest.mark.parametrize(
    ("extra", "wanted"),
    [
        (ANTAGONIST + "stop_s = 0.5\n", ["`antagonist.0.stop_s`", "after start_s"]),
        (ANTAGONIST.replace("cores = 2", "cores = 0"), ["`antagonist.0.cores`", "[1, 4096]"]),
        (ANTAGONIST.replace('tier = "fast"\n', ""), ["`antagonist.0.tier`", "missing"]),
        (
            TIERS.replace("peak_gbps = 50", "peak_gbps = 50\nbsat_read_gbps = 60"),
            ["`tier.0.bsat_read_gbps`", "peak_gbps"],
        ),
        (
            TIERS.replace("l0_ns = 200", 'curve = "table"\npoints = [[0, 300], [10, 250]]'),
            ["`tier.1.points`", "must not fall"],
        ),
    ],
    ids=["stop before start", "zero cores", "no tier", "bsat above peak", "falling latency"],
)
def test_nonsense_tables_are_named(tk: Tk, tmp_path: Path, extra: str, wanted: list[str]) -> None:
    exp = tmp_path / "exp.toml"
    exp.write_text(CUSTOM.read_text() + extra)
    one_error_line(tk("run", str(exp), *SHORT), str(exp), *wanted)


@pytest.mark.parametrize(
    ("policy", "wanted"),
    [
        ("soar:r_min=0.9,r_max=0.1", ["`r_max`", "r_min (0.9)"]),
        ("place:objects=hto", ["`objects` names object `hto`", "did you mean `hot`"]),
        ("static:hot_object=nope", ["`hot_object` names object `nope`"]),
    ],
)
def test_policy_parameters_that_cannot_apply(tk: Tk, policy: str, wanted: list[str]) -> None:
    one_error_line(tk("run", EXPERIMENT, *SHORT, "--policy", policy), *wanted)


def test_seed_above_i64(tk: Tk) -> None:
    proc = tk("run", EXPERIMENT, *SHORT, "--seed", str(2**63))
    assert proc.returncode == 2
    assert "2^63-1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_workload_parameter_errors_say_workload(tk: Tk) -> None:
    line = one_error_line(tk("run", EXPERIMENT, "--set", "threads=0"), "`threads`", "workload `gups-hotset`")
    assert "policy" not in line
