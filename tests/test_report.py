"""`tierkit report` (issue 19): mean and spread over seeds with a CI column and error bars, the tierkit
version, commit and date on the page, short experiment names, engineering units, and promotions beside
demotions."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

import tierkit
from tierkit.reports import engineering_unit, seed_stats, short_names, t95

TRACES = Path(__file__).resolve().parents[1] / "examples" / "traces"


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    shutil.copy(TRACES / "stream.tkt", tmp / "stream.tkt")
    (tmp / "s.toml").write_text(
        'experiments = ["gups-hotset", "trace:stream.tkt"]\npolicies = ["notier", "hemem"]\nseeds = 3\n'
        "[set]\nduration_s = 0.2\n"
    )
    res = tierkit.sweep(tmp / "s.toml", out=tmp / "out", workers=2)
    assert res.failed == 0, res.table
    return tmp / "out"


def test_report_has_mean_std_ci_and_seeds_per_policy(sweep_dir: Path, tmp_path: Path) -> None:
    html = tierkit.report([sweep_dir], tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "| mean | std | CI95 ± | seeds |" in md
    table = pd.read_parquet(sweep_dir / "results.parquet")
    hemem = table[(table["policy"] == "hemem") & (table["experiment"] == "gups-hotset")]
    values = hemem["slowdown_vs_fast_only"]
    ci = t95(2) * values.std() / math.sqrt(3)
    row = next(line for line in md.splitlines() if line.startswith("| hemem / gups-hotset |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1]) == pytest.approx(values.mean(), rel=1e-3)
    assert float(cells[2]) == pytest.approx(values.std(), rel=1e-3)
    assert float(cells[3]) == pytest.approx(ci, rel=1e-3)
    assert cells[4] == "3"
    assert "CI95" in html.read_text()


def test_report_names_the_tierkit_that_made_it(sweep_dir: Path, tmp_path: Path) -> None:
    tierkit.report([sweep_dir], tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    line = next(line for line in md.splitlines() if line.startswith("Report made"))
    assert f"tierkit {tierkit.__version__}" in line
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", line)
    if shutil.which("git") and (Path(tierkit.__file__).resolve().parents[2] / ".git").exists():
        assert re.search(r"commit [0-9a-f]{7,} \(\d{4}-\d\d-\d\d", line), line
    assert f"Runs made by tierkit {tierkit.__version__}" in md
    assert "Report made" in (tmp_path / "rep" / "report.html").read_text()


def test_report_uses_short_experiment_names_and_engineering_units(sweep_dir: Path, tmp_path: Path) -> None:
    tierkit.report([sweep_dir], tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    page = (tmp_path / "rep" / "report.html").read_text()
    assert "| hemem / trace:stream.tkt |" in md
    assert str(sweep_dir.parent) not in md  # no absolute paths
    assert str(sweep_dir.parent) not in page
    assert "## Throughput (Mops/s)" in md
    assert not re.search(r"\d\.\d+e\+\d", md)  # no 1.2e+08


def test_report_shows_promotions_and_demotions(sweep_dir: Path, tmp_path: Path) -> None:
    tierkit.report([sweep_dir], tmp_path / "rep")
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "## Promotions (pages)" in md
    assert "## Demotions (pages)" in md
    assert "Promotions and demotions per policy" in md
    assert (tmp_path / "rep" / "promotions.png").read_bytes()[:4] == b"\x89PNG"


def test_short_names_are_unique_and_keep_built_ins() -> None:
    names = short_names(["gups-hotset", "trace:/a/x/t.tkt", "trace:/a/y/t.tkt", "/home/u/exp.toml"])
    assert names == {
        "gups-hotset": "gups-hotset",
        "trace:/a/x/t.tkt": "trace:x/t.tkt",
        "trace:/a/y/t.tkt": "trace:y/t.tkt",
        "/home/u/exp.toml": "exp.toml",
    }


def test_engineering_units_and_t_quantiles() -> None:
    assert engineering_unit([3.4e8, 1.2e8], "ops/s") == (1e6, "Mops/s")
    assert engineering_unit([12000.0], "pages") == (1e3, "k pages")
    assert engineering_unit([12.0, float("nan")], "pages") == (1.0, "pages")
    assert t95(1) == pytest.approx(12.706)
    assert t95(1000) == pytest.approx(1.96)
    assert math.isnan(t95(0))
    frame = pd.DataFrame({"policy": ["a", "a", "b"], "x": [1.0, 3.0, 5.0]})
    stats = seed_stats(frame, ["policy"], "x")
    assert stats.loc["a", "mean"] == 2.0
    assert stats.loc["a", "ci95"] == pytest.approx(12.706 * math.sqrt(2) / math.sqrt(2))
    assert math.isnan(stats.loc["b", "ci95"])
    assert stats.loc["b", "seeds"] == 1
