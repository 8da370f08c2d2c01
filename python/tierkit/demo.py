"""``tierkit demo``: compare placement policies on gups-hotset with and without a memory antagonist.

The demo runs every policy stack of :data:`BASE_POLICIES` (and ``static`` at the hot fractions of
:data:`STATIC_HOT_FRACTIONS`) on the built-in ``gups-hotset`` experiment at each antagonist intensity of
:data:`INTENSITIES`, then writes into the output directory:

- ``report.md``: the comparison table and the plots,
- ``results.json``: every run's summary,
- ``timeseries.parquet``: every run's time series, with ``policy`` and ``antagonist_intensity`` columns,
- ``slowdown.png``, ``throughput.png``, ``latency.png``, ``migrations.png``.

Policies that this build of the core does not have are skipped with a printed note, so the demo keeps
working while policies are being added.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tierkit
from tierkit.output import fmt_float, new_axes, per_second, save_figure, si
from tierkit.progress import stderr_is_terminal

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

EXPERIMENT = "gups-hotset"
INTENSITIES: tuple[int, ...] = (0, 3)
BASE_POLICIES: tuple[str, ...] = (
    "notier",
    "hemem",
    "hemem+colloid",
    "memtis",
    "memtis+colloid",
    "tpp",
    "tpp+colloid",
    "tpp+alto",
    "nbt",
    "nbt+alto",
    "nomad",
    "soar",
)
STATIC_POLICY = "static"
STATIC_HOT_FRACTIONS: tuple[float, ...] = (0.5, 1.0)
SEED = 42
FULL_DURATION_S = 30.0
QUICK_DURATION_S = 1.0

REPORT_FILE = "report.md"
RESULTS_FILE = "results.json"
TIMESERIES_FILE = "timeseries.parquet"
SLOWDOWN_PNG = "slowdown.png"
THROUGHPUT_PNG = "throughput.png"
LATENCY_PNG = "latency.png"
MIGRATIONS_PNG = "migrations.png"


@dataclass(frozen=True)
class Case:
    """One policy configuration of the comparison."""

    label: str
    spec: str


@dataclass
class Outcome:
    case: Case
    intensity: int
    summary: dict[str, Any] | None = None
    timeseries: pd.DataFrame | None = None
    error: str | None = None


@dataclass
class Plan:
    cases: list[Case] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def plan_cases(available: Sequence[str], describe: Callable[[str], list[dict[str, Any]]]) -> Plan:
    """The policies to compare, given the names the core knows; notes say what was skipped and why."""
    plan = Plan()
    for name in BASE_POLICIES:
        missing = [part for part in name.split("+") if part.split(":")[0] not in available]
        if missing:
            plan.notes.append(
                f"policy `{', '.join(missing)}` is not built into this version of tierkit; skipped"
            )
        else:
            plan.cases.append(Case(name, name))
    if STATIC_POLICY not in available:
        plan.notes.append(f"policy `{STATIC_POLICY}` is not built into this version of tierkit; skipped")
        return plan
    param = _hot_fraction_param(describe(STATIC_POLICY))
    if param is None:
        plan.cases.append(Case(STATIC_POLICY, STATIC_POLICY))
        plan.notes.append(
            f"policy `{STATIC_POLICY}` has no hot-fraction parameter; ran once with its defaults"
        )
    else:
        for fraction in STATIC_HOT_FRACTIONS:
            plan.cases.append(Case(f"static {fraction:g}", f"{STATIC_POLICY}:{param}={fraction:g}"))
    return plan


def _hot_fraction_param(params: list[dict[str, Any]]) -> str | None:
    names = [str(p.get("name", "")) for p in params]
    for preferred in ("hot_fraction", "fraction"):
        if preferred in names:
            return preferred
    return next((n for n in names if "frac" in n), None)


# ------------------------------------------------------------------------------------------ running


class _DemoProgress:
    """Rich bars on stderr (runs done, simulated time of the current run) when it is a terminal."""

    def __init__(self, total_runs: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._runs = self._progress.add_task("runs", total=total_runs)
        self._sim = self._progress.add_task("", total=1)
        self._last = 0.0
        self._progress.start()

    def start_run(self, label: str) -> None:
        self._progress.reset(self._sim, description=label, total=1)

    def __call__(self, done: float, total: float) -> None:
        now = time.monotonic()
        if now - self._last >= 0.1:
            self._last = now
            self._progress.update(self._sim, completed=min(done, total), total=max(total, 1e-12))

    def end_run(self) -> None:
        self._progress.advance(self._runs)

    def close(self) -> None:
        self._progress.stop()


def _ignore_progress(done: float, total: float) -> None:
    """Passed when no bar is drawn, so that Ctrl-C is noticed during a long run."""


def run_demo(out_dir: Path, quick: bool = False, log: Callable[[str], None] | None = None) -> list[Outcome]:
    """Run the comparison and write the report; returns every run's outcome."""
    say = log or _print
    workloads = [name for name, _ in tierkit.list_workloads()]
    if EXPERIMENT not in workloads:
        raise tierkit.TierkitError(
            f"the demo needs the built-in experiment `{EXPERIMENT}`, which this version of tierkit lacks"
        )
    available = [name for name, _ in tierkit.list_policies()]
    plan = plan_cases(available, tierkit.describe_policy)
    for note in plan.notes:
        say(f"note: {note}")
    if not plan.cases:
        raise tierkit.TierkitError("none of the demo's policies is built into this version of tierkit")

    duration_s = QUICK_DURATION_S if quick else FULL_DURATION_S
    jobs = [(case, intensity) for intensity in INTENSITIES for case in plan.cases]
    say(
        f"tierkit demo: {len(plan.cases)} policies x {len(INTENSITIES)} antagonist intensities on "
        f"{EXPERIMENT}, {duration_s:g} simulated s each, seed {SEED}"
    )
    bar = _DemoProgress(len(jobs)) if stderr_is_terminal() else None
    outcomes: list[Outcome] = []
    try:
        for number, (case, intensity) in enumerate(jobs, start=1):
            outcome = Outcome(case, intensity)
            label = f"{case.label}, antagonist {intensity}"
            if bar is not None:
                bar.start_run(label)
            started = time.monotonic()
            try:
                result = tierkit.run(
                    EXPERIMENT,
                    case.spec,
                    {"duration_s": duration_s, "antagonist_intensity": intensity},
                    seed=SEED,
                    progress=bar if bar is not None else _ignore_progress,
                )
            except tierkit.TierkitError as err:
                outcome.error = str(err)
                say(f"[{number}/{len(jobs)}] {label}: failed: {err}")
            else:
                outcome.summary, outcome.timeseries = result.summary, result.timeseries
                say(
                    f"[{number}/{len(jobs)}] {label}: "
                    f"{si(result.summary.get('throughput_ops_per_s'), 'ops/s')}, slowdown "
                    f"{fmt_float(result.summary.get('slowdown_vs_fast_only'), '.3f')}x "
                    f"({time.monotonic() - started:.1f} s)"
                )
            outcomes.append(outcome)
            if bar is not None:
                bar.end_run()
    finally:
        if bar is not None:
            bar.close()

    done = [o for o in outcomes if o.summary is not None]
    if not done:
        first = next((o.error for o in outcomes if o.error), "no run finished")
        raise tierkit.TierkitError(f"every demo run failed; the first error: {first}")

    out_dir.mkdir(parents=True, exist_ok=True)
    written = [
        write_results(outcomes, plan, quick, duration_s, out_dir / RESULTS_FILE),
        write_timeseries(done, out_dir / TIMESERIES_FILE),
        plot_slowdown(done, plan.cases, out_dir / SLOWDOWN_PNG),
        plot_over_time(done, plan.cases, _throughput, "throughput (ops/s)", out_dir / THROUGHPUT_PNG),
        plot_latency(done, plan.cases, out_dir / LATENCY_PNG),
        plot_over_time(done, plan.cases, _promotion_rate, "promotions (pages/s)", out_dir / MIGRATIONS_PNG),
        write_report(outcomes, plan, quick, duration_s, out_dir / REPORT_FILE),
    ]
    for path in written:
        say(f"wrote {path}")
    return outcomes


def _print(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


# ------------------------------------------------------------------------------------------ files


def write_results(
    outcomes: Sequence[Outcome], plan: Plan, quick: bool, duration_s: float, path: Path
) -> Path:
    data = {
        "tierkit_version": tierkit.__version__,
        "experiment": EXPERIMENT,
        "quick": quick,
        "duration_s": duration_s,
        "seed": SEED,
        "antagonist_intensities": list(INTENSITIES),
        "notes": plan.notes,
        "runs": [
            {
                "label": o.case.label,
                "policy_spec": o.case.spec,
                "antagonist_intensity": o.intensity,
                "summary": o.summary,
                "error": o.error,
            }
            for o in outcomes
        ],
    }
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def write_timeseries(done: Sequence[Outcome], path: Path) -> Path:
    import pandas as pd

    frames = []
    for o in done:
        assert o.timeseries is not None
        frame = o.timeseries.copy()
        frame.insert(0, "antagonist_intensity", o.intensity)
        frame.insert(0, "policy", o.case.label)
        frames.append(frame)
    combined = pd.concat(frames, ignore_index=True, sort=False)
    fixed = ["policy", "antagonist_intensity", "t_s"]
    rest = sorted(c for c in combined.columns if c not in fixed)
    combined[[c for c in fixed if c in combined.columns] + rest].to_parquet(path, index=False)
    return path


def _tier_names(done: Sequence[Outcome]) -> list[str]:
    names: list[str] = []
    for o in done:
        assert o.summary is not None
        for tier in o.summary.get("tiers") or []:
            name = str(tier.get("name"))
            if name not in names:
                names.append(name)
    return names


def _main_process(summary: dict[str, Any]) -> dict[str, Any]:
    processes = summary.get("processes") or []
    return processes[0] if processes else {}


def markdown_table(outcomes: Sequence[Outcome]) -> str:
    done = [o for o in outcomes if o.summary is not None]
    tiers = _tier_names(done)
    header = [
        "policy",
        "antagonist",
        "throughput (ops/s)",
        "slowdown vs fast-only",
        "fast-tier hits",
        "promotions",
        "demotions",
    ] + [f"{t} latency (ns)" for t in tiers]
    align = [":--", "--:"] + ["--:"] * (len(header) - 2)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    for o in outcomes:
        if o.summary is None:
            cells = [o.case.label, str(o.intensity), "failed"] + [""] * (len(header) - 3)
            lines.append("| " + " | ".join(cells) + " |")
            continue
        s = o.summary
        hit = _main_process(s).get("fast_tier_hit_ratio")
        latency = {str(t.get("name")): t.get("mean_loaded_latency_ns") for t in s.get("tiers") or []}
        cells = [
            f"`{o.case.spec}`" if o.case.spec != o.case.label else o.case.label,
            str(o.intensity),
            si(s.get("throughput_ops_per_s")),
            f"{fmt_float(s.get('slowdown_vs_fast_only'), '.3f')}x",
            f"{fmt_float(hit * 100 if isinstance(hit, int | float) else None, '.1f')}%",
            str(s.get("promotions", "-")),
            str(s.get("demotions", "-")),
        ] + [fmt_float(latency.get(t), ".0f") for t in tiers]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_report(outcomes: Sequence[Outcome], plan: Plan, quick: bool, duration_s: float, path: Path) -> Path:
    done = [o for o in outcomes if o.summary is not None]
    first = done[0].summary or {}
    lines = [
        "# tierkit demo: placement policies on gups-hotset",
        "",
        f"tierkit {tierkit.__version__}; experiment `{EXPERIMENT}` on platform "
        f"`{first.get('platform', '?')}`; {duration_s:g} simulated seconds per run"
        f"{' (`--quick`)' if quick else ''}; seed {SEED}.",
        "",
        "GUPS threads update random objects of a buffer, most of them in a hot set; a memory antagonist "
        "streams to the fast tier (intensity 1, 2, 3 = 5, 10, 15 cores, as in Colloid) and raises its "
        "loaded latency. Each policy decides which pages live in the fast tier. *Slowdown* is the run's "
        "time relative to the same workload with all its memory in the fast tier (1.0 = no loss; below "
        "1.0 the tiered run beat fast-only, which happens when the fast tier is congested); *fast-tier "
        "hits* is the share of the GUPS process's memory accesses served by the fast tier; latencies are "
        "mean loaded latencies.",
        "",
    ]
    if plan.notes:
        lines += ["Notes:", ""] + [f"- {note}" for note in plan.notes] + [""]
    lines += [markdown_table(outcomes), ""]
    failed = [o for o in outcomes if o.error is not None]
    if failed:
        lines += ["Failed runs:", ""]
        lines += [f"- {o.case.label}, antagonist {o.intensity}: {o.error}" for o in failed]
        lines.append("")
    for intensity in INTENSITIES:
        at = [o for o in done if o.intensity == intensity and o.summary is not None]
        if at:
            best = max(at, key=lambda o: float((o.summary or {}).get("throughput_ops_per_s") or 0.0))
            lines.append(f"- Antagonist intensity {intensity}: highest throughput with {best.case.label}.")
    lines += [
        "",
        "## Plots",
        "",
        "![slowdown vs fast-only per policy](slowdown.png)",
        "",
        "![throughput over time](throughput.png)",
        "",
        "![loaded latency per tier over time](latency.png)",
        "",
        "![promotions over time](migrations.png)",
        "",
        "`results.json` holds every run's full summary and `timeseries.parquet` every run's time series "
        "(columns `policy` and `antagonist_intensity` tell the runs apart).",
        "",
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------ plots


def _colors(cases: Sequence[Case]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {case.label: cmap(i % 10) for i, case in enumerate(cases)}


def plot_slowdown(done: Sequence[Outcome], cases: Sequence[Case], path: Path) -> Path:
    fig, ax = new_axes("Slowdown vs fast-only on gups-hotset (lower is better)", "slowdown (x)", "")
    labels = [c.label for c in cases]
    width = 0.8 / len(INTENSITIES)
    for k, intensity in enumerate(INTENSITIES):
        values = []
        for label in labels:
            match = [o for o in done if o.case.label == label and o.intensity == intensity]
            summary = match[0].summary if match else None
            value = summary.get("slowdown_vs_fast_only") if summary else None
            values.append(float(value) if isinstance(value, int | float) else float("nan"))
        xs = [i + (k - (len(INTENSITIES) - 1) / 2) * width for i in range(len(labels))]
        ax.bar(xs, values, width=width, label=f"antagonist {intensity}")
    ax.set_xticks(range(len(labels)), labels, rotation=40, ha="right", rotation_mode="anchor")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    ax.grid(False, axis="x")
    return save_figure(fig, path)


def _throughput(frame: pd.DataFrame) -> pd.Series | None:
    return frame["throughput_ops_per_s"] if "throughput_ops_per_s" in frame.columns else None


def _column(name: str) -> Callable[[pd.DataFrame], pd.Series | None]:
    def values(frame: pd.DataFrame) -> pd.Series | None:
        return frame[name] if name in frame.columns else None

    return values


def _promotion_rate(frame: pd.DataFrame) -> pd.Series | None:
    return per_second(frame, "promotions") if "promotions" in frame.columns else None


def _grid(rows: int, title: str) -> tuple[Any, list[list[Axes]]]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.0 * len(INTENSITIES), 3.3 * rows), layout="constrained")
    axes = fig.subplots(rows, len(INTENSITIES), squeeze=False, sharex=True)
    fig.suptitle(title, fontsize=11)
    return fig, [list(row) for row in axes]


def _draw(
    ax: Axes,
    done: Sequence[Outcome],
    intensity: int,
    colors: dict[str, Any],
    values_of: Callable[[pd.DataFrame], pd.Series | None],
) -> None:
    for o in done:
        if o.intensity != intensity or o.timeseries is None:
            continue
        values = values_of(o.timeseries)
        if values is not None:
            ax.plot(
                o.timeseries["t_s"],
                values,
                label=o.case.label,
                color=colors[o.case.label],
                linewidth=1.1,
            )
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0)


def plot_over_time(
    done: Sequence[Outcome],
    cases: Sequence[Case],
    values_of: Callable[[pd.DataFrame], pd.Series | None],
    ylabel: str,
    path: Path,
) -> Path:
    colors = _colors(cases)
    fig, axes = _grid(1, f"{ylabel.split(' (')[0].capitalize()} over time on {EXPERIMENT}")
    for k, intensity in enumerate(INTENSITIES):
        ax = axes[0][k]
        _draw(ax, done, intensity, colors, values_of)
        ax.set_title(f"antagonist {intensity}", fontsize=9)
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel(ylabel)
    _legend(fig, axes)
    return save_figure(fig, path)


def plot_latency(done: Sequence[Outcome], cases: Sequence[Case], path: Path) -> Path:
    colors = _colors(cases)
    tiers = _tier_names(done) or ["?"]
    fig, axes = _grid(len(tiers), f"Loaded latency per tier over time on {EXPERIMENT}")
    for row, tier in enumerate(tiers):
        for k, intensity in enumerate(INTENSITIES):
            ax = axes[row][k]
            _draw(ax, done, intensity, colors, _column(f"latency_ns.{tier}"))
            ax.set_title(f"{tier} tier, antagonist {intensity}", fontsize=9)
            ax.set_ylabel("latency (ns)")
            if row == len(tiers) - 1:
                ax.set_xlabel("simulated time (s)")
    _legend(fig, axes)
    return save_figure(fig, path)


def _legend(fig: Any, axes: list[list[Axes]]) -> None:
    handles, labels = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", fontsize=8)
