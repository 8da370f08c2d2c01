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

__all__ = ["REPRODUCTIONS", "Claim", "Context", "check", "list_reproductions", "reproduce"]

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

        near = difflib.get_close_matches(name, REPRODUCTIONS, n=1)
        hint = f" (did you mean `{near[0]}`?)" if near else ""
        raise TierkitError(f"unknown reproduction `{name}`{hint}; available: {', '.join(REPRODUCTIONS)}")
    return importlib.import_module(f"tierkit.reproduce.{REPRODUCTIONS[name]}")


def check(name: str) -> None:
    """Raise :class:`tierkit.TierkitError` if there is no reproduction called ``name``."""
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
) -> list[Claim]:
    """Run a reproduction; write report.md, figures and claims.json into ``out``; return the claims."""
    mod = _module(paper)
    ctx = Context(
        paper=paper, out=Path(out or f"reproduce-{paper}"), quick=quick, workers=workers, progress=progress
    )
    mod.run(ctx)
    ctx.finish(title=str(mod.TITLE), intro=str(mod.DESCRIPTION))
    return ctx.claims
