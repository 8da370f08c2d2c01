"""Paper reproductions: ``tierkit reproduce PAPER [--quick] [--out DIR]``.

Each reproduction is one module in this package with a ``DESCRIPTION`` string and a
``run(ctx: Context) -> None`` function; adding one is that module plus one line in
:data:`REPRODUCTIONS`. A reproduction runs experiments through ``ctx.grid``/``ctx.run``, adds
tables and figures to ``ctx.report`` and states claims with ``ctx.claim``; the framework writes
``report.md``, the PNG figures and ``claims.json`` (a list of objects with ``claim``, ``paper``,
``ours``, ``holds``).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from tierkit.reproduce.common import Claim, Context, merge_seeds, seeds_text

__all__ = [
    "DOC_BEGIN",
    "DOC_END",
    "REPRODUCTIONS",
    "Claim",
    "Context",
    "ReuseError",
    "check",
    "check_doc",
    "check_seeds",
    "list_reproductions",
    "reproduce",
    "reproduce_all",
    "splice_doc",
]

#: The lines between which `reproduce all --update-doc FILE` writes its report into FILE.
DOC_BEGIN = "<!-- tierkit reproduce all: begin (generated; edit outside these markers) -->"
DOC_END = "<!-- tierkit reproduce all: end -->"

#: name -> module (under tierkit.reproduce)
REPRODUCTIONS: dict[str, str] = {
    "colloid": "colloid",
    "soar-alto": "soar_alto",
    "pact": "pact",
    "vulcan": "vulcan",
    "toggle": "toggle",
}


def _module(name: str) -> ModuleType:
    from tierkit import TierkitError

    if name not in REPRODUCTIONS:
        import difflib

        names = [*REPRODUCTIONS, "all"]
        near = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean `{near[0]}`?)" if near else ""
        raise TierkitError(f"unknown reproduction `{name}`{hint}; available: {', '.join(names)}")
    return importlib.import_module(f"tierkit.reproduce.{REPRODUCTIONS[name]}")


def check(name: str) -> None:
    """Raise :class:`tierkit.TierkitError` if there is no reproduction called ``name`` (``all``
    names every one)."""
    if name != "all":
        _module(name)


def list_reproductions() -> list[tuple[str, str]]:
    """``(name, description)`` of every reproduction."""
    return [(name, str(_module(name).DESCRIPTION)) for name in REPRODUCTIONS]


def reproduce(
    paper: str,
    out: str | Path | None = None,
    quick: bool = False,
    workers: int | None = None,
    progress: bool = False,
    max_memory: int | str | None = None,
    seeds: Sequence[int] = (1,),
) -> list[Claim]:
    """Run a reproduction; write report.md, figures and claims.json into ``out``; return the claims.
    ``max_memory`` (bytes or a size such as ``"6G"``) refuses each run estimated above it. With
    several ``seeds`` every run is repeated under each (a run's seed j becomes seed + j - 1), each
    seed's own report goes to ``out/seed-S`` (the first seed's to ``out``), and each claim holds
    when it holds with most of the seeds (:func:`merge_seeds`)."""
    import tierkit

    mod = _module(paper)
    seeds = check_seeds(seeds)
    root = Path(out or f"reproduce-{paper}")
    limit = None if max_memory is None else tierkit.parse_size(max_memory)
    # the source the run is made from: read now, since the checkout may move while it runs
    commit = _commit()
    passes = []
    for k, seed in enumerate(seeds):
        ctx = Context(
            paper=paper,
            out=root if k == 0 else root / f"seed-{seed}",
            quick=quick,
            workers=workers,
            progress=progress,
            max_memory=limit,
            seed=seed,
        )
        mod.run(ctx)
        passes.append(ctx)
    first = passes[0]
    if len(seeds) > 1:
        for ctx in passes[1:]:
            ctx.finish(title=str(mod.TITLE), intro=str(mod.DESCRIPTION))
        first.claims = merge_seeds([ctx.claims for ctx in passes], seeds)
    first.finish(title=str(mod.TITLE), intro=str(mod.DESCRIPTION), seeds=seeds)
    _write_run_record(root, paper, quick, seeds, commit)
    return first.claims


#: what a reproduction's ``run.json`` records of the run that made its ``claims.json``
RUN_RECORD = "run.json"


def _write_run_record(root: Path, paper: str, quick: bool, seeds: Sequence[int], commit: str) -> None:
    import datetime
    import json

    import tierkit

    record = {
        "paper": paper,
        "commit": commit,
        "tierkit_version": tierkit.__version__,
        "date": datetime.date.today().isoformat(),
        "quick": quick,
        "seeds": list(seeds),
    }
    (root / RUN_RECORD).write_text(json.dumps(record, indent=1) + "\n")


class ReuseError(ValueError):
    """A reproduction's directory cannot stand for its run under ``reuse``."""


def _reused(root: Path, paper: str, quick: bool, seeds: Sequence[int]) -> tuple[list[Claim], str] | None:
    """The claims a finished run left in ``root`` (``claims.json`` beside its ``run.json``) and
    the commit it ran at, when that run was of this paper, mode and seeds; None when ``root`` has
    no finished run. A run of another mode or seeds, or files that do not read, are errors."""
    import dataclasses
    import json

    claims_file, record_file = root / "claims.json", root / RUN_RECORD
    if not claims_file.exists() or not record_file.exists():
        return None
    try:
        record = json.loads(record_file.read_text())
        raw = json.loads(claims_file.read_text())
        names = {f.name for f in dataclasses.fields(Claim)}
        claims = [Claim(**{k: v for k, v in c.items() if k in names}) for c in raw]
    except (OSError, ValueError, TypeError, AttributeError) as err:
        raise ReuseError(f"{root}: cannot reuse the run there: {err}") from None
    want = {"paper": paper, "quick": quick, "seeds": list(seeds)}
    got = {k: record.get(k) for k in want}
    if got != want:
        raise ReuseError(
            f"{record_file}: the run there was {got}, not {want}: run it again (without --reuse) "
            "or choose another directory"
        )
    return claims, str(record.get("commit") or "")


def check_seeds(seeds: Sequence[int]) -> list[int]:
    """The seeds as a list, or a clear error (none, repeated, or out of 0..2^63-1)."""
    from tierkit import TierkitError

    out = [int(s) for s in seeds]
    if not out:
        raise TierkitError("seeds: the list names no seed")
    bad = [s for s in out if not 0 <= s < 2**63]
    if bad:
        raise TierkitError(f"seeds: {bad[0]} is out of range (0 to 2^63-1)")
    if len(set(out)) != len(out):
        raise TierkitError(f"seeds: {seeds_text(out)} repeats a seed")
    return out


def _block(text: str, doc: Path) -> tuple[int, int]:
    """The positions of the markers' lines in ``text`` (of ``doc``), or a clear error."""
    from tierkit import TierkitError

    lines = text.split("\n")
    begins = [i for i, line in enumerate(lines) if line.strip() == DOC_BEGIN]
    ends = [i for i, line in enumerate(lines) if line.strip() == DOC_END]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise TierkitError(
            f"{doc}: expected one line `{DOC_BEGIN}` followed later by one line `{DOC_END}` "
            f"(found {len(begins)} and {len(ends)}); the report goes between them"
        )
    return begins[0], ends[0]


def check_doc(doc: str | Path) -> None:
    """Raise :class:`tierkit.TierkitError` unless ``doc`` exists and has the report's markers
    (checked before hours of runs, not after)."""
    from tierkit import TierkitError

    path = Path(doc)
    try:
        text = path.read_text()
    except OSError as e:
        raise TierkitError(f"{path}: cannot read it ({e.strerror or e})") from None
    _block(text, path)


def splice_doc(doc: str | Path, report: str) -> None:
    """Replace what is between the markers of ``doc`` with ``report`` (its headings two levels
    deeper, under the page's section, its links into the output directory dropped),
    atomically."""
    import re

    path = Path(doc)
    text = path.read_text()
    b, e = _block(text, path)
    body = []
    for line in report.rstrip("\n").split("\n"):
        if line.startswith("#"):
            line = "##" + line
        body.append(re.sub(r"\[([^\]]+)\]\([^)]*report\.md\)", r"\1", line))
    lines = text.split("\n")
    new = "\n".join([*lines[: b + 1], *body, *lines[e:]])
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(new)
    tmp.replace(path)


def _commit() -> str:
    """The source's short commit, with ``-dirty`` when tracked files differ from it; "" outside a
    checkout."""
    import subprocess

    here = Path(__file__).parent

    def git(*a: str) -> str:
        try:
            r = subprocess.run(["git", *a], cwd=here, capture_output=True, text=True, check=False)
        except OSError:
            return ""
        return r.stdout.strip() if r.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if commit and git("status", "--porcelain", "--untracked-files=no"):
        commit += "-dirty"
    return commit


def reproduce_all(
    out: str | Path | None = None,
    quick: bool = False,
    workers: int | None = None,
    progress: bool = False,
    max_memory: int | str | None = None,
    update_doc: str | Path | None = None,
    seeds: Sequence[int] = (1,),
    reuse: bool = False,
) -> dict[str, list[Claim]]:
    """Run every reproduction into ``out/PAPER`` and write one validation report over all of them:
    ``out/report.md``, ``out/report.html`` and ``out/claims.json`` (every claim, with its
    ``reproduction``). With ``update_doc``, the report also replaces what is between the markers
    :data:`DOC_BEGIN` and :data:`DOC_END` of that file (docs/validation.md). With ``reuse``, a
    reproduction whose ``out/PAPER`` holds a finished run of the same mode and seeds (its
    ``claims.json`` and ``run.json``) is taken from there instead of run again, so that an
    interrupted ``all`` goes on where it stopped; the report names each part's commit when they
    differ. Returns the claims by reproduction."""
    import datetime
    import html
    import json

    import tierkit

    if update_doc is not None:
        check_doc(update_doc)
    seeds = check_seeds(seeds)
    root = Path(out or "reproduce-all")
    root.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[Claim]] = {}
    here = _commit()
    commits: dict[str, str] = {}
    # every reused directory is checked before anything runs
    reused = {name: _reused(root / name, name, quick, seeds) if reuse else None for name in REPRODUCTIONS}
    for name in REPRODUCTIONS:
        found = reused[name]
        if found is not None:
            results[name], commits[name] = found
            continue
        results[name] = reproduce(
            name,
            root / name,
            quick=quick,
            workers=workers,
            progress=progress,
            max_memory=max_memory,
            seeds=seeds,
        )
        commits[name] = here
    # one commit, or each part's where reused runs came from others ("" outside a checkout)
    distinct = set(commits.values())
    commit = (
        distinct.pop()
        if len(distinct) == 1
        else ", ".join(f"{n} {c or 'unknown'}" for n, c in commits.items())
    )
    held = sum(c.holds for cs in results.values() for c in cs)
    total = sum(len(cs) for cs in results.values())
    with_number = [c for cs in results.values() for c in cs if c.ratio is not None]
    close = [c for c in with_number if c.within_tolerance]
    head = [
        "# Validation report: the papers' claims, reproduced",
        "",
        f"tierkit {tierkit.__version__}{f' (commit {commit})' if commit else ''}, "
        f"{datetime.date.today().isoformat()}, {'quick (CI-sized) runs' if quick else 'full runs'}"
        + (
            f", seeds {seeds_text(seeds)}: a claim holds when it holds with most of them, and ours "
            "is the mean of the seeds' values (each seed's value in brackets)."
            if len(seeds) > 1
            else "."
        ),
        "",
        f"**{held} of {total} claims hold.** {len(with_number)} claims compare a number with the paper's; "
        f"{len(close)} of them are within their tolerance.",
        "",
        "| reproduction | claims | hold |",
        "|---|---|---|",
    ]
    head += [
        f"| [{n}]({n}/report.md) | {len(cs)} | {sum(c.holds for c in cs)} |" for n, cs in results.items()
    ]
    body: list[str] = []
    rows_html: list[str] = []
    for name, cs in results.items():
        body += [
            "",
            f"## {name}",
            "",
            "| claim | paper | ours | ours / paper | holds | why not |",
            "|---|---|---|---|---|---|",
        ]
        for c in cs:
            ratio = c.ratio_text()
            why = "" if c.holds else (c.note or "see the reproduction's report")
            cells = [c.claim, c.paper, c.ours, ratio, "yes" if c.holds else "**no**", why]
            body.append("| " + " | ".join(x.replace("|", "/") for x in cells) + " |")
            rows_html.append(
                "<tr>"
                + "".join(f"<td>{html.escape(x.replace('**', ''))}</td>" for x in [name, *cells])
                + "</tr>"
            )
    (root / "report.md").write_text("\n".join(head + body) + "\n")
    if update_doc is not None:
        splice_doc(update_doc, "\n".join(head + body))
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>tierkit validation report</title>"
        "<style>body{font-family:sans-serif;max-width:80em;margin:auto}td,th{border-bottom:1px solid #ddd;"
        "padding:.2em .5em;vertical-align:top}</style></head><body>"
        f"<h1>Validation report</h1><p>{html.escape(head[2])}</p><p>{held} of {total} claims hold.</p>"
        "<table><tr><th>reproduction</th><th>claim</th><th>paper</th><th>ours</th><th>ours / paper</th>"
        "<th>holds</th><th>why not</th></tr>" + "".join(rows_html) + "</table></body></html>\n"
    )
    (root / "report.html").write_text(page)
    (root / "claims.json").write_text(
        json.dumps([{"reproduction": n, **c.to_json()} for n, cs in results.items() for c in cs], indent=2)
        + "\n"
    )
    return results
