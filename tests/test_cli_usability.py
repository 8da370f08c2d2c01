"""Issue 19's command-line items: --json for list and describe, describe output that survives a pipe,
one output-flag convention (-o/--out, old spellings kept), help on every positional argument, and the
demo's help naming its policies."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import tierkit
from tierkit import cli, demo, sweeps
from tierkit.validate import DEFAULT_RECORDING

Tk = Callable[..., subprocess.CompletedProcess[str]]
TRACES = Path(__file__).resolve().parents[1] / "examples" / "traces"


@pytest.mark.parametrize(
    ("what", "lister"),
    [
        ("policies", tierkit.list_policies),
        ("workloads", tierkit.list_workloads),
        ("platforms", tierkit.list_platforms),
    ],
)
def test_list_json_is_the_listing_as_objects(tk: Tk, what: str, lister: Callable[[], list]) -> None:
    proc = tk("list", what, "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["name"] for r in rows] == [name for name, _ in lister()]
    assert all(set(r) == {"name", "description"} and r["description"] for r in rows)
    # The text listing is unchanged: one `name  description` line each.
    text = tk("list", what).stdout.splitlines()
    assert [line.split("  ")[0] for line in text] == [r["name"] for r in rows]


def test_describe_json_for_a_policy_a_workload_and_trace(tk: Tk) -> None:
    proc = tk("describe", "tpp", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["name"], out["type"]) == ("tpp", "policy")
    assert [p["name"] for p in out["parameters"]] == [p["name"] for p in tierkit.describe_policy("tpp")]
    assert all(set(p) == {"name", "kind", "default", "unit", "doc"} for p in out["parameters"])
    out = json.loads(tk("describe", "gups-hotset", "--json").stdout)
    assert out["type"] == "workload"
    assert "hot_set_gb" in [p["name"] for p in out["parameters"]]
    out = json.loads(tk("describe", "trace", "--json").stdout)
    assert out["type"] == "trace"
    assert "llc_mb" in [p["name"] for p in out["parameters"]]
    proc = tk("describe", "tppp", "--json")
    assert proc.returncode == 2
    assert "did you mean `tpp`" in proc.stderr


def test_piped_describe_keeps_every_name_on_one_line(tk: Tk) -> None:
    proc = tk("describe", "tpp")  # stdout is a pipe, COLUMNS=100
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "parameters of policy tpp"
    assert lines[1].split() == ["name", "kind", "default", "unit", "doc"]
    names = [p["name"] for p in tierkit.describe_policy("tpp")]
    assert len(lines) == 2 + len(names)  # one line per parameter: nothing wrapped
    assert [line.split()[0] for line in lines[2:]] == names
    assert "scan_period_min_ms" in names


@pytest.mark.parametrize("width", [60, 200])
def test_describe_on_a_terminal_does_not_split_names(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], width: int
) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: treat the captured stdout as a terminal
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert cli.main(["describe", "tpp"]) == 0
    text = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)  # no colours
    for param in tierkit.describe_policy("tpp"):
        assert param["name"] in text  # the whole name on one line, at any width
    lines = text.splitlines()
    if width == 200:  # a table, within the terminal's width
        assert "┏" in text
        assert max(len(line) for line in lines) <= width
    else:  # too narrow for a table: one parameter per line
        assert lines[1].split() == ["name", "kind", "default", "unit", "doc"]


def _parsers(
    parser: argparse.ArgumentParser, path: str = "tierkit"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_positional_argument_and_subcommand_has_help() -> None:
    for path, parser in _parsers(cli.build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice in action._choices_actions:
                    assert choice.help, f"{path} {choice.dest}: no help"
            elif not action.option_strings:
                assert action.help, f"{path}: positional {action.metavar or action.dest} has no help"


def test_every_output_flag_is_dash_o_and_dash_dash_out() -> None:
    found = []
    for path, parser in _parsers(cli.build_parser()):
        for action in parser._actions:
            if {"--out", "--output", "-o"} & set(action.option_strings):
                found.append(path)
                assert action.option_strings[:2] == ["-o", "--out"], (path, action.option_strings)
    for command in ("run", "demo", "calibrate", "sweep", "report", "reproduce", "validate"):
        assert f"tierkit {command}" in found
    for command in ("import", "record"):
        assert f"tierkit trace {command}" in found


def test_trace_import_takes_out_and_the_old_output(tk: Tk, tmp_path: Path) -> None:
    src = TRACES / "pchase.tkt"
    if not src.exists():
        pytest.skip("no example trace")
    lackey = tmp_path / "t.lackey"
    lackey.write_text("I  0400d7d4,8\n L 7ff000000,8\n S 7ff000040,8\n")
    for flag, name in (("-o", "a.tkt"), ("--out", "b.tkt"), ("--output", "c.tkt")):
        proc = tk("trace", "import", "lackey", str(lackey), flag, str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / name).exists()


def test_run_takes_dash_o(tk: Tk, tmp_path: Path) -> None:
    proc = tk("run", "gups-hotset", "--set", "duration_s=0.1", "-o", str(tmp_path / "r"), "--json")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "r" / "summary.json").exists()


def test_trace_info_help_lists_the_set_keys_and_checks_them(tk: Tk) -> None:
    text = tk("trace", "info", "--help").stdout
    for key, _ in tierkit.trace.workload_keys():
        assert key in text
    proc = tk("trace", "info", str(TRACES / "pchase.tkt"), "--set", "llc_mb")
    assert proc.returncode == 2
    assert "=" in proc.stderr


def test_demo_help_names_every_policy_the_demo_runs(tk: Tk) -> None:
    text = " ".join(tk("demo", "--help").stdout.split())
    for spec in demo.BASE_POLICIES:
        assert spec in text.replace(",", " ").split(), spec
    assert demo.STATIC_POLICY in text
    assert demo.EXPERIMENT in text


def test_sweep_file_keys_get_a_did_you_mean(tk: Tk, tmp_path: Path) -> None:
    sw = tmp_path / "s.toml"
    sw.write_text('experiments = ["gups-hotset"]\npolicies = ["notier"]\nseed = 2\n')
    proc = tk("sweep", str(sw), "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert "unknown key `seed`; did you mean `seeds`?" in proc.stderr
    with pytest.raises(tierkit.TierkitError, match=r"`hemme` is not in `policies`.*did you mean `hemem`\?"):
        sweeps.expand({"experiments": ["gups-hotset"], "policies": ["hemem"], "params": {"hemme": {}}})
    with pytest.raises(tierkit.TierkitError, match=r"unknown key `colour`; expected") as err:
        sweeps.expand({"experiments": ["gups-hotset"], "colour": 1})
    assert "did you mean" not in str(err.value)


def test_a_failed_command_leaves_no_output_directory_it_made(tk: Tk, tmp_path: Path) -> None:
    # made for the run, then the run is refused: the directories it made go again
    proc = tk("run", "gups-hotset", "--policy", "nosuch", "--out", str(tmp_path / "new" / "a" / "b"))
    assert proc.returncode == 2, proc.stderr
    assert not (tmp_path / "new").exists()
    proc = tk(
        "validate",
        "kernel",
        "--scenario",
        "press",
        "--recording",
        str(DEFAULT_RECORDING),
        "-o",
        str(tmp_path / "v"),
    )
    assert proc.returncode == 2, proc.stderr
    assert not (tmp_path / "v").exists()
    # a directory that was there before stays, and so does a successful run's
    (tmp_path / "old").mkdir()
    proc = tk("run", "gups-hotset", "--set", "threads=0", "--out", str(tmp_path / "old"))
    assert proc.returncode == 2
    assert (tmp_path / "old").is_dir()
    proc = tk("run", "gups-hotset", "--set", "duration_s=0.1", "--out", str(tmp_path / "ok"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ok" / "summary.json").exists()
