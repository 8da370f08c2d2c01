"""The machinery every reproduction shares: parallel runs, claims, and the report."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

#: TPP as the papers that ran TPP's own patch ran it, on Linux 5.13 or 5.15 (Nomad's artifact:
#: 5.13-rc6 + tpp.patch; PACT's and Soar/Alto's artifacts: v5.15 + tpp.patch; the toggling
#: paper's TPP-mod and Vulcan: 5.15): before 5.18 gave task_numa_fault its memory-tiering check,
#: every slow-tier hint fault is accounted, as remote, and adapts the scan period (`tpp`'s
#: `slow_fault_stats`, its default since 2026-12-04; spelled out so that the reproductions keep
#: the papers' kernel whatever the default)
TPP_PRE_5_18 = "tpp:slow_fault_stats=true"


def tpp_pre_5_18(policy: str) -> str:
    """`policy` with a bare `tpp` base given the pre-5.18 fault accounting (its other layers kept),
    unless the stack has the colloid layer: Colloid's TPP runs on Colloid's own Linux 6.3."""
    layers = policy.split("+")
    if layers[0] == "tpp" and all(layer.split(":")[0] != "colloid" for layer in layers[1:]):
        layers[0] = TPP_PRE_5_18
    return "+".join(layers)


@dataclass(frozen=True)
class RunSpec:
    """One simulated run: experiment, policy spec, overrides, seed, and a label for tables."""

    label: str
    experiment: str
    policy: str
    overrides: tuple[str, ...] = ()
    seed: int = 1
    timeseries: bool = False


@dataclass
class Claim:
    """A claim of the paper checked against our run: ``holds`` is computed, never typed in."""

    claim: str
    paper: str
    ours: str
    holds: bool
    note: str = ""
    #: the paper's number and ours for the claim's headline figure, where the claim has one
    paper_value: float | None = None
    ours_value: float | None = None
    #: relative distance from the paper's number within which ours counts as matching it
    tolerance: float | None = None
    #: where the paper states a bound ("at most 1.17x", "comparable or better"): "upper" counts
    #: every value up to paper x (1 + tolerance) as matching, "lower" every value from
    #: paper x (1 - tolerance) up; None (the default) is two-sided
    bound: str | None = None
    #: the seeds the claim was judged over, whether it held with each, and ours with each
    #: (``holds`` is the majority's verdict and ``ours_value`` the mean where there are several:
    #: :func:`merge_seeds`)
    seeds: list[int] = field(default_factory=lambda: [1])
    holds_per_seed: list[bool] = field(default_factory=list)
    ours_values: list[float | None] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.bound not in (None, "upper", "lower"):
            raise ValueError(f"bound must be None, 'upper' or 'lower', not {self.bound!r}")
        if not self.holds_per_seed:
            self.holds_per_seed = [self.holds]
        if not self.ours_values:
            self.ours_values = [self.ours_value]

    @property
    def ratio(self) -> float | None:
        """Ours over the paper's, where both are numbers."""
        if self.paper_value in (None, 0) or self.ours_value is None:
            return None
        return self.ours_value / self.paper_value  # type: ignore[operator]

    @property
    def within_tolerance(self) -> bool | None:
        """Whether ours is within ``tolerance`` of the paper's number (None without one)."""
        r = self.ratio
        if r is None or self.tolerance is None:
            return None
        if self.bound == "upper":
            return r <= 1.0 + self.tolerance
        if self.bound == "lower":
            return r >= 1.0 - self.tolerance
        return abs(r - 1.0) <= self.tolerance

    def ratio_text(self) -> str:
        """The report's "ours / paper" cell: the ratio and, with a tolerance, whether it is
        within it ("1.08, within ±25%"; "0.62, outside ≥-25%" for a lower bound)."""
        r = self.ratio
        if r is None:
            return ""
        if self.tolerance is None:
            return f"{r:.2f}"
        side = {"upper": "≤+", "lower": "≥-"}.get(self.bound or "", "±")
        verdict = "within" if self.within_tolerance else "outside"
        return f"{r:.2f}, {verdict} {side}{100 * self.tolerance:.0f}%"

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["ratio"] = self.ratio
        d["within_tolerance"] = self.within_tolerance
        return d


def _run_one(
    spec: RunSpec, max_memory: int | None = None
) -> tuple[dict[str, Any], dict[str, list[float]] | None]:
    import tierkit

    r = tierkit.run(
        spec.experiment,
        policy=spec.policy,
        overrides=list(spec.overrides),
        seed=spec.seed,
        max_memory=max_memory,
    )
    series = r.timeseries.to_dict(orient="list") if spec.timeseries else None
    return r.summary, series


@dataclass
class Context:
    paper: str
    out: Path
    quick: bool = False
    workers: int | None = None
    progress: bool = False
    max_memory: int | None = None
    #: the seed of this pass: a spec's seed j runs as seed + j - 1 (specs say 1 unless they
    #: need a second stream), so `reproduce --seeds` repeats every run under other seeds
    seed: int = 1
    claims: list[Claim] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    figures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)

    # ------------------------------------------------------------------ running

    def grid(self, specs: Sequence[RunSpec]) -> pd.DataFrame:
        """Run every spec (in parallel processes) and return one row per run: the label, the
        spec, and the summary's main fields; ``summary`` holds the whole summary dict and
        ``series`` the time series when asked for."""
        specs = [self._seeded(s) for s in specs]
        workers = self.workers or min(len(specs), os.cpu_count() or 1)
        results: list[tuple[dict[str, Any], dict[str, list[float]] | None]]
        run_one = functools.partial(_run_one, max_memory=self.max_memory)
        if workers <= 1 or len(specs) <= 1:
            results = [run_one(s) for s in self._tracked(specs)]
        else:
            with ProcessPoolExecutor(max_workers=workers) as pool:
                results = list(self._tracked(specs, pool.map(run_one, specs)))
        rows = []
        for spec, (summary, series) in zip(specs, results, strict=False):
            rows.append(
                {
                    "label": spec.label,
                    "experiment": spec.experiment,
                    "policy": spec.policy,
                    "overrides": " ".join(spec.overrides),
                    "seed": spec.seed,
                    "throughput_ops_per_s": summary["throughput_ops_per_s"],
                    "slowdown_vs_fast_only": summary["slowdown_vs_fast_only"],
                    "sim_seconds": summary["sim_seconds"],
                    "promotions": summary["promotions"],
                    "demotions": summary["demotions"],
                    "summary": summary,
                    "series": series,
                }
            )
        return pd.DataFrame(rows)

    def _seeded(self, spec: RunSpec) -> RunSpec:
        """The spec under this pass's seed."""
        if self.seed == 1:
            return spec
        seed = spec.seed + self.seed - 1
        if not 0 <= seed < 2**63:
            from tierkit import TierkitError

            raise TierkitError(
                f"seed {self.seed}: run `{spec.label}` would get seed {seed}, out of 0..2^63-1"
            )
        return dataclasses.replace(spec, seed=seed)

    def _tracked(self, specs: Sequence[RunSpec], it: Any = None) -> Any:
        source = it if it is not None else specs
        if not self.progress:
            yield from source
            return
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task(f"reproduce {self.paper}", total=len(specs))
            for item in source:
                yield item
                bar.advance(task)

    def dur(self, full: float, quick: float) -> float:
        """A duration for the mode."""
        return quick if self.quick else full

    # ------------------------------------------------------------------ claims and report

    def claim(
        self,
        claim: str,
        paper: str,
        ours: str,
        holds: bool,
        note: str = "",
        *,
        paper_value: float | None = None,
        ours_value: float | None = None,
        tolerance: float | None = None,
        bound: str | None = None,
    ) -> None:
        """State a claim; ``holds`` is computed by the caller from the runs. ``paper_value`` and
        ``ours_value`` are the claim's headline number in the paper and here (a ratio, a
        percentage), with the relative ``tolerance`` within which they count as matching, on
        both sides or, with ``bound`` "upper" or "lower", where the paper states a bound."""
        self.claims.append(
            Claim(
                claim=claim,
                paper=paper,
                ours=ours,
                holds=bool(holds),
                note=note,
                paper_value=None if paper_value is None else float(paper_value),
                ours_value=None if ours_value is None else float(ours_value),
                tolerance=tolerance,
                bound=bound,
                seeds=[self.seed],
            )
        )

    def section(self, title: str, text: str = "") -> None:
        self.sections.append(f"## {title}\n\n{text.strip()}\n" if text else f"## {title}\n")

    def table(self, df: pd.DataFrame, floatfmt: str = ".3g") -> None:
        self.sections.append(_markdown_table(df, floatfmt) + "\n")

    def text(self, text: str) -> None:
        self.sections.append(text.strip() + "\n")

    def figure(self, fig: Any, name: str, caption: str) -> None:
        path = self.out / f"{name}.png"
        fig.savefig(path, dpi=110, bbox_inches="tight")
        import matplotlib.pyplot as plt

        plt.close(fig)
        self.figures.append(path.name)
        self.sections.append(f"![{caption}]({path.name})\n\n*{caption}*\n")

    def finish(self, title: str, intro: str, seeds: Sequence[int] = ()) -> None:
        """Write report.md and claims.json; `seeds`: every seed the claims were judged over,
        where there are several (this pass being the first's)."""
        held = sum(c.holds for c in self.claims)
        lines = [
            f"# {title}",
            "",
            intro.strip(),
            "",
            f"Mode: {'quick (CI-sized)' if self.quick else 'full'}. "
            + (
                f"Seeds {seeds_text(seeds)}: each claim holds when it holds with most of them "
                f"(each seed's own report: seed-S/report.md; this one's tables and figures are seed "
                f"{self.seed}'s). "
                if len(seeds) > 1
                else ""
            )
            + f"Claims holding: {held} of {len(self.claims)}.",
            "",
            "## Claims",
            "",
            "| claim | paper | ours | ours / paper | holds |",
            "|---|---|---|---|---|",
        ]
        for c in self.claims:
            ours = c.ours + (f" ({c.note})" if c.note else "")
            ratio = c.ratio_text()
            lines.append(f"| {c.claim} | {c.paper} | {ours} | {ratio} | {'yes' if c.holds else '**no**'} |")
        lines.append("")
        lines.extend(self.sections)
        (self.out / "report.md").write_text("\n".join(lines) + "\n")
        (self.out / "claims.json").write_text(json.dumps([c.to_json() for c in self.claims], indent=2) + "\n")


def seeds_text(seeds: Sequence[int]) -> str:
    """``1-3`` for consecutive seeds, else ``1, 7, 42``."""
    s = list(seeds)
    if len(s) > 2 and s == list(range(s[0], s[0] + len(s))):
        return f"{s[0]}-{s[-1]}"
    return ", ".join(str(x) for x in s)


def merge_seeds(per_seed: Sequence[Sequence[Claim]], seeds: Sequence[int]) -> list[Claim]:
    """One claim per claim text from the passes of several seeds (``per_seed[k]`` ran with
    ``seeds[k]``): it holds when it held with more than half of the seeds that stated it, its
    ``ours_value`` is the mean of the seeds' values, and ``ours`` is the first seed's text with
    every seed's value and the count of seeds with which it held. A claim on a discrete
    threshold (a count, a band edge) that one seed's 1% drift flips is judged by the majority,
    not by which side seed 1 fell."""
    order: list[str] = []
    by_text: dict[str, list[tuple[int, Claim]]] = {}
    for seed, claims in zip(seeds, per_seed, strict=True):
        for c in claims:
            if c.claim not in by_text:
                order.append(c.claim)
                by_text[c.claim] = []
            by_text[c.claim].append((seed, c))
    merged = []
    for text in order:
        got = by_text[text]
        first = got[0][1]
        held = [c.holds for _, c in got]
        values = [c.ours_value for _, c in got]
        numbers = [v for v in values if v is not None]
        n_held = sum(held)
        holds = 2 * n_held > len(got)
        per = " / ".join("-" if v is None else format(v, ".3g") for v in values)
        used = [s for s, _ in got]
        ours = f"{first.ours} [seeds {seeds_text(used)}: " + (
            f"{per}, mean {format(sum(numbers) / len(numbers), '.3g')}; " if numbers else ""
        )
        ours += f"holds with {n_held} of {len(got)}]"
        note = first.note
        if not holds:
            note = next((c.note for _, c in got if not c.holds and c.note), first.note)
        merged.append(
            dataclasses.replace(
                first,
                ours=ours,
                holds=holds,
                note=note,
                ours_value=sum(numbers) / len(numbers) if numbers else None,
                seeds=used,
                holds_per_seed=held,
                ours_values=values,
            )
        )
    return merged


def _markdown_table(df: pd.DataFrame, floatfmt: str) -> str:
    cols = list(df.columns)
    out = ["| " + " | ".join(str(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for _, row in df.iterrows():
        cells = []
        for c in cols:
            v = row[c]
            cells.append(format(v, floatfmt) if isinstance(v, float) else str(v))
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)
