"""docs/outputs.md lists every key of the JSON summary and every column of the time series that real runs
produce, and nothing that they do not: the list is checked against the code, so it cannot drift."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import tierkit

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "outputs.md"
# Runs that between them have every kind of key: one tenant and no migrations, three tenants (an LC
# one, with latency percentiles) under a policy with layers, and a trace replay.
RUNS: list[tuple[str, str, dict[str, Any]]] = [
    ("gups-hotset", "notier", {"duration_s": 0.2}),
    ("multi-tenant", "hemem+toggle", {"duration_s": 0.3}),
    (f"trace:{ROOT / 'examples' / 'traces' / 'pchase.tkt'}", "tpp", {"duration_s": 0.2, "llc_mb": 0.25}),
]


def documented(section: str) -> set[str]:
    """The names in the first column (`key` cells) of the tables under the doc's ``## section``."""
    text = DOC.read_text()
    assert f"## {section}\n" in text
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    names = set()
    for line in body.splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|", line)
        if m:
            names.add(m.group(1))
    return names


def summary_keys(summary: dict[str, Any]) -> set[str]:
    keys = set(summary)
    keys |= {f"fairness.{k}" for k in summary["fairness"]}
    keys |= {f"memory_bytes_per_page.{k}" for k in summary["memory_bytes_per_page"]}
    for section in ("tiers", "processes"):
        for entry in summary[section]:
            keys |= {f"{section}[].{k}" for k in entry}
    return keys


def generic_column(column: str, tiers: list[str], procs: list[str]) -> str:
    """`latency_ns.dram` -> `latency_ns.TIER`, `fast_pages.kv` -> `fast_pages.PROCESS`, `....p0` -> `.PID`,
    `object_fast_pages.gups.hot` -> `object_fast_pages.PROCESS.OBJECT`."""
    head, dot, tail = column.rpartition(".")
    if not dot:
        return column
    for proc in procs:
        if column.startswith(f"object_fast_pages.{proc}."):
            return "object_fast_pages.PROCESS.OBJECT"
    if head.startswith("policy.") and re.fullmatch(r"p\d+", tail):
        return f"{head}.PID"
    if tail in tiers:
        return f"{head}.TIER"
    if tail in procs:
        return f"{head}.PROCESS"
    return column


@pytest.fixture(scope="module")
def results() -> list[tierkit.RunResult]:
    return [tierkit.run(exp, policy=pol, overrides=over, seed=1) for exp, pol, over in RUNS]


def test_every_summary_key_is_documented_and_every_documented_key_exists(
    results: list[tierkit.RunResult],
) -> None:
    doc = documented("The JSON summary")
    seen: set[str] = set()
    for res in results:
        keys = summary_keys(res.summary)
        assert not keys - doc, f"summary keys missing from docs/outputs.md: {sorted(keys - doc)}"
        seen |= keys
    assert not doc - seen, f"docs/outputs.md lists summary keys no run has: {sorted(doc - seen)}"


def test_every_time_series_column_is_documented_and_every_documented_column_exists(
    results: list[tierkit.RunResult],
) -> None:
    doc = documented("The time series")
    seen = set()
    for res in results:
        tiers = [t["name"] for t in res.summary["tiers"]]
        procs = [p["name"] for p in res.summary["processes"]]
        assert res.timeseries.columns[0] == "t_s"
        generic = {generic_column(c, tiers, procs) for c in res.timeseries.columns}
        assert not generic - doc, f"time-series columns missing from docs/outputs.md: {sorted(generic - doc)}"
        seen |= generic
    # The policies' own channel (`policy.*`) appears only when a policy writes it.
    stale = {d for d in doc - seen if not d.startswith("policy.")}
    assert not stale, f"docs/outputs.md lists columns no run has: {sorted(stale)}"


def test_model_md_points_to_the_list() -> None:
    model = (ROOT / "docs" / "model.md").read_text()
    assert "outputs.md" in model
    assert "See the README for the JSON" not in model
    assert "outputs.md" in (ROOT / "README.md").read_text()
