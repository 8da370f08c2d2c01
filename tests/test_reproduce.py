"""The paper reproductions run end to end in --quick form and write their contract files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

#: claims that held in quick mode when this file was last updated: CI fails when one stops holding
#: (a regression); a claim that starts to hold is added by regenerating the file (see its "how")
HELD = Path(__file__).parent / "data" / "quick_claims_held.json"


@pytest.mark.parametrize("paper", ["colloid", "soar-alto", "pact", "vulcan", "toggle"])
def test_quick_reproduction_writes_report_figures_and_claims(paper: str, tmp_path: Path) -> None:
    out = tmp_path / paper
    # PACT's run also stands for --no-fail (so that no second quick PACT run is needed): quick
    # mode has claims of PACT's that do not hold, asserted below
    no_fail = ["--no-fail"] if paper == "pact" else []
    proc = subprocess.run(
        [sys.executable, "-m", "tierkit", "reproduce", paper, "--quick", *no_fail, "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    claims = json.loads((out / "claims.json").read_text())
    # exit status 3 when a claim does not hold, 0 when all do, 0 with --no-fail either way
    expected = 0 if all(c["holds"] for c in claims) or no_fail else 3
    assert proc.returncode == expected, proc.stderr
    if no_fail:
        assert not all(c["holds"] for c in claims), "--no-fail is tested on a run with failing claims"
        assert "do not hold" not in proc.stderr
    report = (out / "report.md").read_text()
    assert report.startswith("# Reproduction")
    pngs = sorted(out.glob("*.png"))
    assert pngs, "figures are written as PNG"
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.name in report, f"{png.name} is shown in the report"
    assert isinstance(claims, list)
    assert len(claims) >= 5
    for c in claims:
        assert {"claim", "paper", "ours", "holds"} <= set(c)
        assert isinstance(c["holds"], bool)
        assert c["claim"]
        assert c["paper"]
        assert c["ours"]
        assert {"paper_value", "ours_value", "tolerance", "ratio", "within_tolerance"} <= set(c)
        if c["ratio"] is not None:
            assert c["ratio"] == pytest.approx(c["ours_value"] / c["paper_value"])
    held = sum(c["holds"] for c in claims)
    assert f"{held} of {len(claims)} claims hold" in proc.stdout
    held_before = json.loads(HELD.read_text())["held"].get(paper, [])
    now = {c["claim"]: c["holds"] for c in claims}
    regressed = [c for c in held_before if not now.get(c, False)]
    assert not regressed, f"claims that held before and do not now (or were renamed): {regressed}"


def test_all_names_every_reproduction_and_a_wrong_name_is_refused(tmp_path: Path) -> None:
    # --no-fail is tested by the quick PACT run above
    bad = subprocess.run(
        [sys.executable, "-m", "tierkit", "reproduce", "alll", "--out", str(tmp_path / "x")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode != 0
    assert "unknown reproduction `alll`" in bad.stderr
    assert (
        "all"
        in subprocess.run(
            [sys.executable, "-m", "tierkit", "reproduce", "--help"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
    )


def test_a_claim_is_within_its_tolerance_two_sided_or_past_a_bound_the_paper_states() -> None:
    from tierkit.reproduce.common import Claim

    def within(ours: float, bound: str | None) -> bool | None:
        c = Claim("c", "p", "o", True, paper_value=2.0, ours_value=ours, tolerance=0.25, bound=bound)
        return c.within_tolerance

    # two-sided: within 25% either way
    for ours, want in [(2.4, True), (1.6, True), (1.4, False), (2.6, False)]:
        assert within(ours, None) is want, ours
    # "at most 2": anything below counts, above only within the tolerance
    for ours, want in [(0.1, True), (2.5, True), (2.6, False)]:
        assert within(ours, "upper") is want, ours
    # "at least 2": anything above counts, below only within the tolerance
    for ours, want in [(50.0, True), (1.5, True), (1.4, False)]:
        assert within(ours, "lower") is want, ours
    assert Claim("c", "p", "o", True).within_tolerance is None
    assert Claim("c", "p", "o", True).ratio_text() == ""
    with pytest.raises(ValueError, match="bound must be"):
        Claim("c", "p", "o", True, paper_value=2.0, ours_value=1.0, bound="Upper")
    c = Claim("c", "p", "o", True, paper_value=2.0, ours_value=2.6, tolerance=0.25, bound="upper")
    assert c.ratio_text() == "1.30, outside ≤+25%"
    c = Claim("c", "p", "o", True, paper_value=2.0, ours_value=2.2, tolerance=0.25)
    assert c.ratio_text() == "1.10, within ±25%"
    assert (
        Claim("c", "p", "o", True, paper_value=2.0, ours_value=1.0, bound="upper").to_json()["bound"]
        == "upper"
    )


def test_the_report_goes_between_the_docs_markers_and_a_doc_without_them_is_refused_first(
    tmp_path: Path,
) -> None:
    from tierkit.reproduce import DOC_BEGIN, DOC_END, splice_doc

    doc = tmp_path / "validation.md"
    doc.write_text(f"# Validation\n\nby hand before\n\n{DOC_BEGIN}\nold report\n{DOC_END}\n\nby hand after\n")
    report = "# Validation report\n\n| [pact](pact/report.md) | 15 | 14 |\n\n## pact\n\n| claim |"
    splice_doc(doc, report)
    text = doc.read_text()
    assert "old report" not in text
    assert "by hand before" in text
    assert text.endswith("by hand after\n")
    # headings two levels deeper (under the page's section); links into the run's directory dropped
    assert "\n### Validation report\n" in text
    assert "\n#### pact\n" in text
    assert "| pact | 15 | 14 |" in text
    assert text.index(DOC_BEGIN) < text.index("### Validation report") < text.index(DOC_END)
    # again: the block is replaced, not appended to
    splice_doc(doc, "# Again")
    assert "### Again" in doc.read_text()
    assert "Validation report" not in doc.read_text()

    # the shipped page has the markers
    from tierkit.reproduce import check_doc

    check_doc(Path(__file__).parent.parent / "docs" / "validation.md")

    # a file without them is refused before any run starts, naming the file and the markers;
    # so is --update-doc with a single paper
    plain = tmp_path / "plain.md"
    plain.write_text("# no markers\n")
    for args, expect in (
        (["all", "--update-doc", str(plain)], [str(plain), DOC_BEGIN]),
        (["pact", "--update-doc", str(doc)], ["--update-doc needs `reproduce all`"]),
        (["all", "--update-doc", str(tmp_path / "missing.md")], ["missing.md", "cannot read"]),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "tierkit", "reproduce", *args, "--quick", "--out", str(tmp_path / "o")],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert proc.returncode != 0
        assert all(e in proc.stderr for e in expect), proc.stderr
        assert proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "o" / "colloid").exists()


def test_the_toggle_reproduction_runs_tpp_as_the_papers_5_15_kernel_and_compresses_only_the_layer() -> None:
    from tierkit.reproduce.common import TPP_PRE_5_18
    from tierkit.reproduce.toggle import _toggle_spec

    quick = _toggle_spec(0.25)
    assert quick("tpp") == TPP_PRE_5_18 == "tpp:slow_fault_stats=true"
    assert quick("tpp+toggle") == f"{TPP_PRE_5_18}+toggle:interval_ms=500,scan_period_ms=1250"
    assert quick("memtis+toggle") == "memtis+toggle:interval_ms=500,scan_period_ms=1250"
    assert quick("nomad") == "nomad"
    assert quick("notier") == "notier"
    paper = _toggle_spec(1.0)
    assert paper("tpp+toggle") == f"{TPP_PRE_5_18}+toggle"
    assert paper("memtis+toggle") == "memtis+toggle"


def test_tpp_runs_as_the_papers_5_13_and_5_15_kernels_and_colloid_keeps_its_own() -> None:
    from tierkit.reproduce.common import TPP_PRE_5_18, tpp_pre_5_18

    assert tpp_pre_5_18("tpp") == TPP_PRE_5_18
    assert tpp_pre_5_18("tpp+alto:auto=true") == f"{TPP_PRE_5_18}+alto:auto=true"
    assert tpp_pre_5_18("tpp:lru=pagevec") == "tpp:lru=pagevec"
    assert tpp_pre_5_18("memtis") == "memtis"
    assert tpp_pre_5_18("nomad") == "nomad"
    # Colloid's TPP stacks run on Colloid's Linux 6.3
    assert tpp_pre_5_18("tpp+colloid") == "tpp+colloid"
    assert tpp_pre_5_18("tpp+colloid:gate=artifact+alto") == "tpp+colloid:gate=artifact+alto"
