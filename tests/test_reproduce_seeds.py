"""`tierkit reproduce --seeds`: every run repeated under each seed, claims judged by the majority."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from tierkit.reproduce import common
from tierkit.reproduce.common import Claim, Context, RunSpec, merge_seeds


def _claim(text: str, holds: bool, value: float | None, seed: int, note: str = "") -> Claim:
    return Claim(
        claim=text,
        paper="p",
        ours=f"ours {value}",
        holds=holds,
        note=note,
        paper_value=2.0,
        ours_value=value,
        tolerance=0.25,
        seeds=[seed],
    )


def test_a_claim_holds_when_most_seeds_hold_it_and_ours_is_their_mean() -> None:
    per_seed = [
        [_claim("a", True, 2.0, 1), _claim("b", True, 1.0, 1)],
        [_claim("a", False, 1.0, 2, note="why a"), _claim("b", False, 1.0, 2, note="why b")],
        [_claim("a", True, 3.0, 3), _claim("b", False, 1.0, 3)],
    ]
    a, b = merge_seeds(per_seed, [1, 2, 3])
    assert (a.holds, a.holds_per_seed, a.seeds) == (True, [True, False, True], [1, 2, 3])
    assert a.ours_value == pytest.approx(2.0)
    assert a.ours_values == [2.0, 1.0, 3.0]
    assert a.ratio == pytest.approx(1.0)
    assert "seeds 1-3: 2 / 1 / 3, mean 2; holds with 2 of 3" in a.ours
    # the majority does not hold it: the note is a failing seed's
    assert (b.holds, b.note) == (False, "why b")
    assert b.to_json()["holds_per_seed"] == [True, False, False]


def test_two_seeds_must_both_hold_and_missing_numbers_are_left_out() -> None:
    (c,) = merge_seeds([[_claim("c", True, None, 4)], [_claim("c", False, 5.0, 9)]], [4, 9])
    assert not c.holds
    assert c.ours_value == 5.0
    assert c.ours_values == [None, 5.0]
    assert "seeds 4, 9: - / 5, mean 5; holds with 1 of 2" in c.ours


def test_a_pass_runs_each_spec_at_its_seed_offset() -> None:
    ctx = Context(paper="x", out=Path("/tmp/tierkit-test-seeds-unused"), seed=7)
    assert ctx._seeded(RunSpec("a", "e", "p")).seed == 7
    assert ctx._seeded(RunSpec("a", "e", "p", seed=3)).seed == 9
    assert (
        Context(paper="x", out=Path("/tmp/tierkit-test-seeds-unused"))
        ._seeded(RunSpec("a", "e", "p", seed=3))
        .seed
        == 3
    )


def test_reproduce_repeats_every_run_under_each_seed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    rp = importlib.import_module(
        "tierkit.reproduce"
    )  # the package (`tierkit.reproduce` is also the API function)

    def run(ctx: Context) -> None:
        df = ctx.grid([RunSpec("r", "gups-hotset", "notier", ("duration_s=0.05",))]).set_index("label")
        seed = int(df.loc["r", "seed"])
        ctx.section("the run", f"seed {seed}")
        ctx.claim("the seed is odd", "odd", f"seed {seed}", seed % 2 == 1, ours_value=float(seed))

    fake = types.SimpleNamespace(TITLE="Reproduction: fake", DESCRIPTION="a fake reproduction", run=run)
    monkeypatch.setattr(rp, "_module", lambda name: fake)
    claims = rp.reproduce("fake", out=tmp_path / "o", quick=True, workers=1, seeds=[3, 4, 5])
    (c,) = claims
    assert c.holds
    assert c.holds_per_seed == [True, False, True]
    assert c.ours_value == pytest.approx(4.0)
    assert json.loads((tmp_path / "o" / "claims.json").read_text())[0]["seeds"] == [3, 4, 5]
    for s in (4, 5):
        (one,) = json.loads((tmp_path / "o" / f"seed-{s}" / "claims.json").read_text())
        assert one["ours_value"] == s
        assert one["seeds"] == [s]
    report = (tmp_path / "o" / "report.md").read_text()
    assert "Seeds 3-5: each claim holds when it holds with most of them" in report
    assert "seed 3" in report  # the first seed's sections


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("0", "names no seed"),
        ("3-1", "the range ends before it starts"),
        ("1,1", "repeats a seed"),
        ("x", "is not a non-negative integer"),
        ("5000", "at most 1000"),
    ],
)
def test_bad_seeds_are_one_line_errors_before_any_run(arg: str, message: str, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tierkit", "reproduce", "pact", "--seeds", arg, "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()


def test_seeds_text_names_ranges_and_lists() -> None:
    assert common.seeds_text([1, 2, 3]) == "1-3"
    assert common.seeds_text([1, 7]) == "1, 7"
    assert common.seeds_text([2, 3]) == "2, 3"


def test_all_with_reuse_takes_finished_runs_and_reruns_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reproduce all --reuse`: a paper whose directory holds a finished run of the same mode and
    seeds (claims.json and run.json) is not run again; one without is; one run in another mode is
    refused before anything runs, naming its run.json."""
    import importlib

    rp = importlib.import_module("tierkit.reproduce")
    ran: list[str] = []

    def fake(name: str) -> types.SimpleNamespace:
        def run(ctx: Context) -> None:
            ran.append(name)
            ctx.section("the run", name)
            ctx.claim(f"{name} holds", "yes", "yes", True, paper_value=2.0, ours_value=2.0, tolerance=0.25)

        return types.SimpleNamespace(TITLE=f"Reproduction: {name}", DESCRIPTION="fake", run=run)

    monkeypatch.setattr(rp, "REPRODUCTIONS", {"a": "a", "b": "b"})
    monkeypatch.setattr(rp, "_module", fake)
    out = tmp_path / "all"
    first = rp.reproduce_all(out=out, quick=True, workers=1)
    assert ran == ["a", "b"]
    record = json.loads((out / "a" / "run.json").read_text())
    assert (record["paper"], record["quick"], record["seeds"]) == ("a", True, [1])
    again = rp.reproduce_all(out=out, quick=True, workers=1, reuse=True)
    assert ran == ["a", "b"], "nothing ran again"
    assert {k: [c.to_json() for c in v] for k, v in again.items()} == {
        k: [c.to_json() for c in v] for k, v in first.items()
    }
    (out / "b" / "claims.json").unlink()
    rp.reproduce_all(out=out, quick=True, workers=1, reuse=True)
    assert ran == ["a", "b", "b"]
    # a full run's directory does not stand for a quick one
    with pytest.raises(rp.ReuseError, match=r"run\.json"):
        rp.reproduce_all(out=out, quick=False, workers=1, reuse=True)
    assert ran == ["a", "b", "b"]


def test_reuse_is_for_all_only(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tierkit", "reproduce", "pact", "--reuse", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "--reuse needs `reproduce all`" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_the_run_record_names_the_commit_the_run_started_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    rp = importlib.import_module("tierkit.reproduce")
    head = ["aaaaaaa"]
    monkeypatch.setattr(rp, "_commit", lambda: head[0])

    def run(ctx: Context) -> None:
        ctx.claim("a claim", "p", "ours", True)
        # the checkout moves on while the run goes (a commit made meanwhile)
        head[0] = "bbbbbbb"

    fake = types.SimpleNamespace(TITLE="Reproduction: fake", DESCRIPTION="a fake reproduction", run=run)
    monkeypatch.setattr(rp, "_module", lambda name: fake)
    rp.reproduce("fake", out=tmp_path / "o", quick=True, workers=1)
    assert json.loads((tmp_path / "o" / "run.json").read_text())["commit"] == "aaaaaaa"
