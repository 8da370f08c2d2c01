"""The Python API over the real extension module."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import tierkit
from tests.conftest import EXPERIMENT
from tierkit import demo


def test_run_returns_summary_and_dataframe() -> None:
    result = tierkit.run(EXPERIMENT, policy="notier", overrides={"duration_s": 0.2}, seed=1)
    assert isinstance(result, tierkit.RunResult)
    assert result.summary["workload"] == EXPERIMENT
    assert isinstance(result.timeseries, pd.DataFrame)
    assert result.timeseries.columns[0] == "t_s"
    assert list(result.timeseries.columns[1:]) == sorted(result.timeseries.columns[1:])
    assert len(result.timeseries) > 0


def test_overrides_as_list_equal_overrides_as_mapping() -> None:
    a = tierkit.run(EXPERIMENT, "hemem", ["duration_s=0.2"], seed=4).summary
    b = tierkit.run(EXPERIMENT, "hemem", {"duration_s": 0.2}, seed=4).summary
    a.pop("wall_seconds")
    b.pop("wall_seconds")
    assert a == b


def test_progress_callback_sees_simulated_time() -> None:
    calls: list[tuple[float, float]] = []
    tierkit.run(EXPERIMENT, "notier", {"duration_s": 0.3}, seed=1, progress=lambda d, t: calls.append((d, t)))
    for done, total in calls:
        assert 0.0 <= done <= total * 1.0001
        assert total == pytest.approx(0.3, rel=0.1)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_runs_in_threads_equal_runs_one_after_another(tmp_path: Path) -> None:
    """A run releases the GIL; runs in threads (each progress callback too) give the same
    summaries bit for bit, also when they all compute and store one reference run in a fresh
    cache together (each writer has its own temporary file)."""
    from concurrent.futures import ThreadPoolExecutor

    seen: list[int] = []

    def one(seed: int) -> dict[str, object]:
        summary = tierkit.run(
            EXPERIMENT,
            "tpp",
            {"duration_s": 2},
            seed=seed,
            cache=tmp_path / "cache",
            progress=lambda d, t: seen.append(seed),
        ).summary
        for key in ("wall_seconds", "reference_cached"):
            summary.pop(key, None)
        return summary

    seeds = [1, 2, 3, 4, 1, 2]
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(one, seeds))
    assert set(seen) == set(seeds)
    serial = [one(s) for s in seeds]
    assert threaded == serial
    assert threaded[0] == threaded[4]
    assert [p.name for p in (tmp_path / "cache").rglob("*.tmp")] == []


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"policy": "no-such-policy"}, "no-such-policy"),
        ({"overrides": ["duration_s"]}, "duration_s"),
        ({"overrides": ["no_such_key=1"]}, "no_such_key"),
        ({"seed": -1}, "seed"),
    ],
)
def test_bad_input_raises_tierkit_error(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(tierkit.TierkitError, match=fragment):
        tierkit.run(EXPERIMENT, **kwargs)  # type: ignore[arg-type]


def test_missing_file_raises_tierkit_error(tmp_path: Path) -> None:
    with pytest.raises(tierkit.TierkitError, match="does not exist"):
        tierkit.run(tmp_path / "missing.toml")


def test_listings_are_name_description_pairs() -> None:
    for listing in (tierkit.list_policies(), tierkit.list_workloads(), tierkit.list_platforms()):
        assert listing
        for name, description in listing:
            assert isinstance(name, str)
            assert name
            assert isinstance(description, str)
            assert description
    assert "notier" in dict(tierkit.list_policies())
    assert EXPERIMENT in dict(tierkit.list_workloads())


def test_describe_policy_rows() -> None:
    for name, _ in tierkit.list_policies():
        for param in tierkit.describe_policy(name):
            assert {"name", "kind", "default", "unit", "doc"} <= set(param)
    with pytest.raises(tierkit.TierkitError):
        tierkit.describe_policy("no-such-policy")


def test_demo_quick_writes_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "QUICK_DURATION_S", 0.2)
    monkeypatch.setattr(demo, "BASE_POLICIES", ("notier", "hemem", "no-such-policy"))
    monkeypatch.setattr(demo, "STATIC_HOT_FRACTIONS", (0.5,))
    lines: list[str] = []
    outcomes = demo.run_demo(tmp_path, quick=True, log=lines.append)
    assert any("no-such-policy" in line and "skipped" in line for line in lines)
    assert all(o.error is None for o in outcomes), [o.error for o in outcomes]
    assert {o.intensity for o in outcomes} == set(demo.INTENSITIES)
    report = (tmp_path / "report.md").read_text()
    assert "| policy |" in report
    assert "hemem" in report
    assert "no-such-policy" in report
    results = json.loads((tmp_path / "results.json").read_text())
    assert len(results["runs"]) == len(outcomes)
    frame = pd.read_parquet(tmp_path / "timeseries.parquet")
    assert set(frame["policy"]) == {o.case.label for o in outcomes}
    for png in ("slowdown.png", "throughput.png", "latency.png", "migrations.png"):
        assert (tmp_path / png).read_bytes().startswith(b"\x89PNG")


# Issue 19: nonsense given to the API is a one-line TierkitError, never a wrong message or a wrap.
@pytest.mark.parametrize(
    ("experiment", "want"),
    [(b"gups-hotset", "not bytes (b'gups-hotset')"), (42, "not int"), (None, "not NoneType")],
)
def test_experiment_of_the_wrong_type_is_named(experiment: object, want: str) -> None:
    with pytest.raises(tierkit.TierkitError, match="experiment must be") as err:
        tierkit.run(experiment, "notier")  # type: ignore[arg-type]
    assert want in str(err.value)
    assert "no experiment given" not in str(err.value)


@pytest.mark.parametrize("seed", [2**63, 2**64 - 1])
def test_seed_beyond_the_core_range_is_refused(seed: int) -> None:
    with pytest.raises(tierkit.TierkitError, match=r"seed must be between 0 and 9223372036854775807"):
        tierkit.run(EXPERIMENT, "notier", {"duration_s": 0.05}, seed=seed)
    result = tierkit.run(EXPERIMENT, "notier", {"duration_s": 0.05}, seed=2**63 - 1)
    assert result.summary["seed"] == 2**63 - 1
