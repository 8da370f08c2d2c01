"""The command-line contract, checked against the real `tierkit` command."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import tierkit
from tests.conftest import EXPERIMENT, SHORT, run_json

Tk = Callable[..., subprocess.CompletedProcess[str]]

NUMBER = (int, float)
SUMMARY_TYPES: dict[str, tuple[type, ...]] = {
    "policy": (str,),
    "workload": (str,),
    "platform": (str,),
    "seed": (int,),
    "sim_seconds": NUMBER,
    "wall_seconds": NUMBER,
    "throughput_ops_per_s": NUMBER,
    "slowdown_vs_fast_only": NUMBER,
    "promotions": (int,),
    "demotions": (int,),
    "tiers": (list,),
    "processes": (list,),
}
TIER_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "capacity_pages": (int,),
    "used_pages": (int,),
    "mean_loaded_latency_ns": NUMBER,
    "accesses": NUMBER,
}
PROCESS_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "runtime_s": NUMBER,
    "throughput_ops_per_s": NUMBER,
    "slowdown_vs_fast_only": NUMBER,
    "fast_tier_hit_ratio": NUMBER,
}


def check_types(obj: dict[str, Any], types: dict[str, tuple[type, ...]], where: str) -> None:
    for key, allowed in types.items():
        assert key in obj, f"{where}: missing `{key}` in {sorted(obj)}"
        value = obj[key]
        assert isinstance(value, allowed), f"{where}.{key} = {value!r}"
        assert not isinstance(value, bool), f"{where}.{key} = {value!r}"


def test_json_summary_has_every_key_with_the_right_type(tk: Tk) -> None:
    proc = tk("run", EXPERIMENT, *SHORT, "--policy", "notier", "--seed", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)  # the whole of stdout is exactly one JSON object
    assert isinstance(summary, dict)
    check_types(summary, SUMMARY_TYPES, "summary")
    assert summary["policy"].startswith("notier")
    assert summary["workload"] == EXPERIMENT
    assert summary["seed"] == 3
    assert summary["sim_seconds"] == pytest.approx(0.2, rel=0.1)
    assert summary["throughput_ops_per_s"] > 0
    assert summary["slowdown_vs_fast_only"] > 0
    assert len(summary["tiers"]) >= 2
    for i, tier in enumerate(summary["tiers"]):
        check_types(tier, TIER_TYPES, f"tiers[{i}]")
        assert 0 <= tier["used_pages"] <= tier["capacity_pages"]
    assert summary["processes"]
    for i, proc_summary in enumerate(summary["processes"]):
        check_types(proc_summary, PROCESS_TYPES, f"processes[{i}]")
        assert 0.0 <= proc_summary["fast_tier_hit_ratio"] <= 1.0
    # notier never migrates
    assert summary["promotions"] == 0


def test_piped_run_prints_no_progress(tk: Tk) -> None:
    proc = tk("run", EXPERIMENT, *SHORT, "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""


def test_human_output_is_a_short_table(tk: Tk) -> None:
    proc = tk("run", EXPERIMENT, *SHORT, "--policy", "notier")
    assert proc.returncode == 0, proc.stderr
    for word in ("policy", "notier", "throughput", "slowdown", "tiers", "processes"):
        assert word in proc.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(proc.stdout)


def test_out_writes_summary_timeseries_and_plots(tk: Tk, tmp_path: Path) -> None:
    out = tmp_path / "nested" / "out"
    proc = tk("run", EXPERIMENT, *SHORT, "--seed", "5", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    written = json.loads((out / "summary.json").read_text())
    assert written == printed

    frame = pd.read_parquet(out / "timeseries.parquet")
    assert len(frame) > 0
    assert frame.columns[0] == "t_s"
    for column in ("t_s", "throughput_ops_per_s", "promotions", "demotions"):
        assert column in frame.columns
    for prefix in ("latency_ns.", "bandwidth_gbps.", "used_pages.", "throughput_ops_per_s."):
        assert any(c.startswith(prefix) for c in frame.columns), prefix
    tiers = [t["name"] for t in written["tiers"]]
    assert sorted(
        c.removeprefix("latency_ns.") for c in frame.columns if c.startswith("latency_ns.")
    ) == sorted(tiers)
    assert frame["t_s"].is_monotonic_increasing
    assert frame["t_s"].iloc[-1] <= written["sim_seconds"] * 1.001

    for name in ("throughput.png", "latency.png", "migrations.png"):
        data = (out / name).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n"), name
        assert len(data) > 1000, name


def test_out_with_alto_writes_its_aol_plot_and_series(tk: Tk, tmp_path: Path) -> None:
    """Alto publishes its profiled AOL (once a second) and the share it lets through (policy
    series), and --out draws them beside the promotions (alto.png, Soar/Alto Fig. 9's view);
    other runs do not."""
    out = tmp_path / "alto"
    run = ("run", EXPERIMENT, "--set", "duration_s=2.5", "--json", "--out")
    proc = tk(*run, str(out), "--policy", "tpp+alto")
    assert proc.returncode == 0, proc.stderr
    frame = pd.read_parquet(out / "timeseries.parquet")
    aol = frame["policy.alto.aol_cycles"].dropna()
    assert len(aol) > 0
    assert (aol > 0).all()
    assert frame["policy.alto.allowed_share"].between(0, 1).all()
    data = (out / "alto.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    plain = tmp_path / "plain"
    assert tk(*run, str(plain), "--policy", "tpp").returncode == 0
    assert not (plain / "alto.png").exists()


def test_same_seed_same_summary(tk: Tk) -> None:
    first = run_json("--policy", "hemem", "--seed", "11")
    second = run_json("--policy", "hemem", "--seed", "11")
    first.pop("wall_seconds")
    second.pop("wall_seconds")
    assert first == second


def _float(bits: int) -> float:
    value: float = struct.unpack("<d", struct.pack("<Q", bits))[0]
    return value


def _bits(x: float) -> int:
    value: int = struct.unpack("<Q", struct.pack("<d", x))[0]
    return value


def test_the_reference_run_is_kept_on_disk_and_reused_and_no_cache_skips_it(tk: Tk, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {"TIERKIT_CACHE_DIR": str(cache)}
    args = ("run", EXPERIMENT, *SHORT, "--policy", "hemem", "--seed", "12", "--json")
    first = tk(*args, env_extra=env)
    assert first.returncode == 0, first.stderr
    kept = list((cache / "reference").glob("*.json"))
    assert len(kept) == 1, kept
    # A later process reuses it: the same summary, bit for bit...
    second = tk(*args, env_extra=env)
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    a.pop("wall_seconds")
    b.pop("wall_seconds")
    assert a == b
    # ... and it is really read: a tampered file changes the reference (never do this at home).
    entry = json.loads(kept[0].read_text())
    true_ops = a["fast_only_throughput_ops_per_s"]
    entry["ops"] = _bits(2 * _float(entry["ops"]))
    kept[0].write_text(json.dumps(entry))
    tampered = json.loads(tk(*args, env_extra=env).stdout)
    assert tampered["fast_only_throughput_ops_per_s"] == pytest.approx(2 * true_ops)
    # --no-cache neither reads nor writes it (another experiment: nothing new is kept)
    fresh = json.loads(tk(*args, "--no-cache", env_extra=env).stdout)
    assert fresh["fast_only_throughput_ops_per_s"] == true_ops
    other = tk("run", EXPERIMENT, *SHORT, "--seed", "13", "--no-cache", env_extra=env)
    assert other.returncode == 0, other.stderr
    assert len(list((cache / "reference").glob("*.json"))) == 1
    # A file that is not a cached run is run again and replaced.
    kept[0].write_text("{not json")
    again = json.loads(tk(*args, env_extra=env).stdout)
    assert again["fast_only_throughput_ops_per_s"] == true_ops
    assert isinstance(json.loads(kept[0].read_text())["ops"], int)


def _listed(stdout: str) -> list[tuple[str, str]]:
    rows = []
    for line in stdout.splitlines():
        name, sep, description = line.partition("  ")
        assert sep, f"no two-space separator in {line!r}"
        assert name, f"no name in {line!r}"
        assert " " not in name, f"bad name in {line!r}"
        assert description.strip(), f"no description in {line!r}"
        rows.append((name, description))
    return rows


@pytest.mark.parametrize(
    ("what", "expected"),
    [("policies", "notier"), ("workloads", EXPERIMENT), ("platforms", None)],
)
def test_list_prints_the_builtins(tk: Tk, what: str, expected: str | None) -> None:
    proc = tk("list", what)
    assert proc.returncode == 0, proc.stderr
    rows = _listed(proc.stdout)
    api = {
        "policies": tierkit.list_policies,
        "workloads": tierkit.list_workloads,
        "platforms": tierkit.list_platforms,
    }[what]()
    assert [name for name, _ in rows] == [name for name, _ in api]
    assert rows
    if expected is not None:
        assert expected in [name for name, _ in rows]


BAD_INPUTS: list[tuple[str, list[str]]] = [
    ("unknown command", ["frobnicate"]),
    ("no command", []),
    ("unknown policy", ["run", EXPERIMENT, *SHORT, "--policy", "no-such-policy"]),
    ("malformed spec", ["run", EXPERIMENT, *SHORT, "--policy", "notier:"]),
    ("unknown policy parameter", ["run", EXPERIMENT, *SHORT, "--policy", "notier:bogus=1"]),
    ("missing experiment file", ["run", "no/such/experiment.toml"]),
    ("unknown built-in experiment", ["run", "no-such-experiment"]),
    ("--set without =", ["run", EXPERIMENT, "--set", "duration_s"]),
    ("--set without key", ["run", EXPERIMENT, "--set", "=1"]),
    ("unknown --set key", ["run", EXPERIMENT, *SHORT, "--set", "no_such_key=1"]),
    ("bad --set value", ["run", EXPERIMENT, "--set", "duration_s=soon"]),
    ("unknown platform", ["run", EXPERIMENT, *SHORT, "--set", "platform=no-such-platform"]),
    ("bad seed", ["run", EXPERIMENT, *SHORT, "--seed", "x"]),
    ("negative seed", ["run", EXPERIMENT, *SHORT, "--seed", "-1"]),
    ("missing experiment argument", ["run"]),
    ("unknown option", ["run", EXPERIMENT, "--frobnicate"]),
    ("unknown list", ["list", "gadgets"]),
    ("unknown describe", ["describe", "no-such-policy"]),
]


@pytest.mark.parametrize("args", [args for _, args in BAD_INPUTS], ids=[name for name, _ in BAD_INPUTS])
def test_bad_input_is_one_error_line(tk: Tk, args: list[str]) -> None:
    proc = tk(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("tierkit: error: ")
    assert len(lines[0]) > len("tierkit: error: ") + 10
    assert proc.stdout == ""


def test_bad_out_dir_is_one_error_line(tk: Tk, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = tk("run", EXPERIMENT, *SHORT, "--out", str(blocker / "sub"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("tierkit: error: ")
    assert len(proc.stderr.splitlines()) == 1


HELP_WORDS = {
    "": ["run", "list", "demo"],
    "run": [
        "name[:k=v,...][+layer...]",
        "--policy",
        "--set",
        "--seed",
        "--out",
        "--json",
        "duration_s",
        "platform",
        "fast_tier_gb",
        "fast_ratio",
        "F:S",
        "seed",
        "antagonist_intensity",
        "threads",
        "working_set_gb",
        "hot_set_gb",
        "object_bytes",
    ],
    "list": ["policies", "workloads", "platforms"],
    "describe": ["POLICY"],
    "demo": ["--out", "--quick", "demo-out", "gups-hotset"],
}


@pytest.mark.parametrize("command", sorted(HELP_WORDS))
def test_help_is_complete(tk: Tk, command: str) -> None:
    proc = tk(*([command] if command else []), "--help")
    assert proc.returncode == 0, proc.stderr
    for word in HELP_WORDS[command]:
        assert word in proc.stdout, f"`tierkit {command} --help` does not mention {word}"


def test_version(tk: Tk) -> None:
    proc = tk("--version")
    assert proc.returncode == 0
    assert proc.stdout.strip() == f"tierkit {tierkit.__version__}"


def test_describe_lists_parameters(tk: Tk) -> None:
    proc = tk("describe", "notier")
    assert proc.returncode == 0, proc.stderr
    assert "notier" in proc.stdout
    proc = tk("describe", EXPERIMENT)
    assert proc.returncode == 0, proc.stderr
    assert "antagonist_intensity" in proc.stdout


def test_ctrl_c_is_one_error_line() -> None:
    # SIGINT arrives while the core is simulating: the progress callback is where Python sees it.
    code = (
        "import os, signal, tierkit.cli as cli\n"
        # a shell's background job inherits SIGINT ignored, and Python then leaves it ignored
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "cli._quiet_progress = lambda done, total: os.kill(os.getpid(), signal.SIGINT)\n"
        f"raise SystemExit(cli.main(['run', '{EXPERIMENT}', '--set', 'duration_s=5', '--json']))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == ["tierkit: error: interrupted"]
    assert proc.stdout == ""


def test_calibrate_prints_and_saves_the_constants(tmp_path: Path) -> None:
    out = tmp_path / "cal.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tierkit",
            "calibrate",
            "--platform",
            "skx-cxl-emu",
            "--out",
            str(out),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    printed = json.loads(proc.stdout)
    saved = json.loads(out.read_text())
    assert printed == saved
    assert 0 < saved["aol_low_cycles"] < saved["aol_high_cycles"]
    assert len(saved["points"]) >= 9


def test_reproduce_rejects_unknown_papers_before_writing(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tierkit", "reproduce", "colloidd", "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("tierkit: error:") == 1
    assert "did you mean `colloid`" in proc.stderr
    assert not (tmp_path / "r").exists()
