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
from pathlib import Path
from types import ModuleType

from tierkit.reproduce.common import Claim, Context

__all__ = ["REPRODUCTIONS", "Claim", "Context", "check", "list_reproductions", "reproduce", "reproduce_all"]

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
) -> list[Claim]:
    """Run a reproduction; write report.md, figures and claims.json into ``out``; return the claims.
    ``max_memory`` (bytes or a size such as ``"6G"``) refuses each run estimated above it."""
    import tierkit

    mod = _module(paper)
    ctx = Context(
        paper=paper,
        out=Path(out or f"reproduce-{paper}"),
        quick=quick,
        workers=workers,
        progress=progress,
        max_memory=None if max_memory is None else tierkit.parse_size(max_memory),
    )
    mod.run(ctx)
    ctx.finish(title=str(mod.TITLE), intro=str(mod.DESCRIPTION))
    return ctx.claims


def reproduce_all(
    out: str | Path | None = None,
    quick: bool = False,
    workers: int | None = None,
    progress: bool = False,
    max_memory: int | str | None = None,
) -> dict[str, list[Claim]]:
    """Run every reproduction into ``out/PAPER`` and write one validation report over all of them:
    ``out/report.md``, ``out/report.html`` and ``out/claims.json`` (every claim, with its
    ``reproduction``). Returns the claims by reproduction."""
    import datetime
    import html
    import json
    import subprocess

    import tierkit

    root = Path(out or "reproduce-all")
    root.mkdir(parents=True, exist_ok=True)
    results: dict[str, list[Claim]] = {}
    for name in REPRODUCTIONS:
        results[name] = reproduce(
            name, root / name, quick=quick, workers=workers, progress=progress, max_memory=max_memory
        )
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = ""
    held = sum(c.holds for cs in results.values() for c in cs)
    total = sum(len(cs) for cs in results.values())
    with_number = [c for cs in results.values() for c in cs if c.ratio is not None]
    close = [c for c in with_number if c.within_tolerance]
    head = [
        "# Validation report: the papers' claims, reproduced",
        "",
        f"tierkit {tierkit.__version__}{f' (commit {commit})' if commit else ''}, "
        f"{datetime.date.today().isoformat()}, {'quick (CI-sized) runs' if quick else 'full runs'}.",
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
