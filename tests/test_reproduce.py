"""The paper reproductions run end to end in --quick form and write their contract files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("paper", ["colloid", "soar-alto", "pact", "vulcan", "toggle"])
def test_quick_reproduction_writes_report_figures_and_claims(paper: str, tmp_path: Path) -> None:
    out = tmp_path / paper
    proc = subprocess.run(
        [sys.executable, "-m", "tierkit", "reproduce", paper, "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = (out / "report.md").read_text()
    assert report.startswith("# Reproduction")
    pngs = sorted(out.glob("*.png"))
    assert pngs, "figures are written as PNG"
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.name in report, f"{png.name} is shown in the report"
    claims = json.loads((out / "claims.json").read_text())
    assert isinstance(claims, list)
    assert len(claims) >= 5
    for c in claims:
        assert {"claim", "paper", "ours", "holds"} <= set(c)
        assert isinstance(c["holds"], bool)
        assert c["claim"]
        assert c["paper"]
        assert c["ours"]
    held = sum(c["holds"] for c in claims)
    assert f"{held} of {len(claims)} claims hold" in proc.stdout
