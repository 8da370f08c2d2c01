"""Files a run leaves behind (summary.json, timeseries.parquet, PNG plots) and the human summary table."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from rich.console import Console

    from tierkit import RunResult

SUMMARY_FILE = "summary.json"
TIMESERIES_FILE = "timeseries.parquet"
THROUGHPUT_PNG = "throughput.png"
LATENCY_PNG = "latency.png"
MIGRATIONS_PNG = "migrations.png"
ALTO_PNG = "alto.png"
PLOT_FILES = (THROUGHPUT_PNG, LATENCY_PNG, MIGRATIONS_PNG)

_DPI = 110
_FIGSIZE = (8.0, 4.0)


# ----------------------------------------------------------------------------------------------- files


def summary_text(summary: Mapping[str, Any]) -> str:
    """The summary as deterministic, indented JSON (keys sorted), with a trailing newline."""
    return json.dumps(summary, indent=2, sort_keys=True, allow_nan=True) + "\n"


def write_summary(summary: Mapping[str, Any], path: Path) -> Path:
    path.write_text(summary_text(summary), encoding="utf-8")
    return path


def write_timeseries(frame: pd.DataFrame, path: Path) -> Path:
    frame.to_parquet(path, index=False, engine="pyarrow")
    return path


def write_run(result: RunResult, out_dir: Path) -> list[Path]:
    """Write summary.json, timeseries.parquet, throughput.png, latency.png and migrations.png, and
    alto.png for a policy with Alto."""
    out_dir.mkdir(parents=True, exist_ok=True)
    title = run_title(result.summary)
    ts = result.timeseries
    extra = [plot_alto(ts, out_dir / ALTO_PNG, f"Alto: {title}")] if ALTO_AOL in ts.columns else []
    return [
        write_summary(result.summary, out_dir / SUMMARY_FILE),
        write_timeseries(ts, out_dir / TIMESERIES_FILE),
        plot_lines(ts, _throughput_series(ts), out_dir / THROUGHPUT_PNG, f"Throughput: {title}", "ops/s"),
        plot_lines(ts, prefixed(ts, "latency_ns."), out_dir / LATENCY_PNG, f"Loaded latency: {title}", "ns"),
        plot_lines(
            migration_rates(ts),
            {name: name for name in ("promotions", "demotions") if name in ts.columns},
            out_dir / MIGRATIONS_PNG,
            f"Migrations: {title}",
            "pages/s",
        ),
        *extra,
    ]


#: the AOL Alto profiled over its last interval (a policy series, docs/outputs.md)
ALTO_AOL = "policy.alto.aol_cycles"


def plot_alto(frame: pd.DataFrame, path: Path, title: str) -> Path:
    """Soar/Alto Fig. 9's view: promotions a second, and the AOL Alto profiled with the share of
    candidates it let through, over time."""
    fig, ax = new_axes(title, "promotions (pages/s)")
    x = frame["t_s"]
    if "promotions" in frame.columns:
        ax.plot(x, per_second(frame, "promotions"), label="promotions", linewidth=1.0, color="tab:red")
    ax.set_ylim(bottom=0)
    right = ax.twinx()
    right.set_ylabel("AOL (cycles)")
    right.plot(x, frame[ALTO_AOL], label="AOL", linewidth=1.4, color="tab:blue")
    right.set_ylim(bottom=0)
    if "policy.alto.allowed_share" in frame.columns:
        share = frame["policy.alto.allowed_share"] * float(frame[ALTO_AOL].max() or 1.0)
        right.plot(x, share, label="share let through (x max AOL)", linewidth=1.0, linestyle="--", c="g")
    (h1, l1), (h2, l2) = ax.get_legend_handles_labels(), right.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper right")
    return save_figure(fig, path)


def per_second(frame: pd.DataFrame, column: str) -> pd.Series:
    """A per-sample count (``promotions``: pages moved during the interval ending at ``t_s``) as a rate."""
    dt = frame["t_s"].diff()
    if len(dt):
        dt.iloc[0] = frame["t_s"].iloc[0]
    return frame[column] / dt.where(dt > 0)


def migration_rates(frame: pd.DataFrame) -> pd.DataFrame:
    """``t_s`` with ``promotions`` and ``demotions`` in pages per simulated second."""
    import pandas as pd

    rates = pd.DataFrame({"t_s": frame["t_s"]}) if "t_s" in frame.columns else pd.DataFrame(index=frame.index)
    for name in ("promotions", "demotions"):
        if name in frame.columns and "t_s" in frame.columns:
            rates[name] = per_second(frame, name)
    return rates


# ----------------------------------------------------------------------------------------------- plots


def prefixed(frame: pd.DataFrame, prefix: str) -> dict[str, str]:
    """``{label: column}`` for the columns named ``prefix<label>``, sorted by label."""
    return {col[len(prefix) :]: col for col in sorted(frame.columns) if col.startswith(prefix)}


def _throughput_series(frame: pd.DataFrame) -> dict[str, str]:
    series: dict[str, str] = {}
    if "throughput_ops_per_s" in frame.columns:
        series["total"] = "throughput_ops_per_s"
    per_process = prefixed(frame, "throughput_ops_per_s.")
    if len(per_process) > 1 or not series:
        series.update(per_process)
    return series


def run_title(summary: Mapping[str, Any]) -> str:
    parts = [
        str(summary.get(key)) for key in ("workload", "policy", "platform") if summary.get(key) is not None
    ]
    return ", ".join(parts) if parts else "tierkit run"


def new_axes(title: str, ylabel: str, xlabel: str = "simulated time (s)") -> tuple[Any, Axes]:
    """A figure with one axes, without pyplot (no global state, Agg canvas)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=_FIGSIZE, layout="constrained")
    ax = fig.subplots()
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    return fig, ax


def save_figure(fig: Any, path: Path) -> Path:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=_DPI, format="png")
    return path


def plot_lines(frame: pd.DataFrame, series: Mapping[str, str], path: Path, title: str, ylabel: str) -> Path:
    """One line per ``{label: column}`` against ``t_s``; an empty plot says there was no data."""
    fig, ax = new_axes(title, ylabel)
    x = frame["t_s"] if "t_s" in frame.columns else frame.index
    drawn = 0
    for label, column in series.items():
        ax.plot(x, frame[column], label=label, linewidth=1.2)
        drawn += 1
    if drawn:
        if drawn > 1:
            ax.legend(fontsize=8)
        ax.set_ylim(bottom=0)
    else:
        ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
    return save_figure(fig, path)


# ----------------------------------------------------------------------------------------------- text


def si(value: float | None, unit: str = "", digits: int = 3) -> str:
    """``12_300_000`` -> ``12.3 M``; ``None`` and NaN print as ``-``."""
    if value is None or value != value:
        return "-"
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.{digits}g} {prefix}{unit}".rstrip()
    return f"{value:.{digits}g} {unit}".rstrip()


def fmt_float(value: Any, spec: str) -> str:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return "-"
    return format(value, spec)


def print_summary(summary: Mapping[str, Any], console: Console) -> None:
    """The short human report of ``tierkit run``: headline numbers, tiers, processes."""
    from rich.table import Table

    head = Table(show_header=False, box=None, pad_edge=False)
    head.add_column(style="bold")
    head.add_column()
    rows: Sequence[tuple[str, str]] = (
        ("policy", str(summary.get("policy", "-"))),
        ("workload", str(summary.get("workload", "-"))),
        ("platform", str(summary.get("platform", "-"))),
        ("seed", str(summary.get("seed", "-"))),
        ("simulated", f"{fmt_float(summary.get('sim_seconds'), '.3g')} s"),
        (
            "wall time",
            f"{fmt_float(summary.get('wall_seconds'), '.3g')} s"
            + (
                f" (trace replay {fmt_float(summary.get('replay_seconds'), '.3g')} s)"
                if summary.get("replay_seconds")
                else ""
            ),
        ),
        ("throughput", si(summary.get("throughput_ops_per_s"), "ops/s")),
        ("slowdown vs fast-only", f"{fmt_float(summary.get('slowdown_vs_fast_only'), '.3f')}x"),
        ("promotions", str(summary.get("promotions", "-"))),
        ("demotions", str(summary.get("demotions", "-"))),
    )
    for key, value in rows:
        head.add_row(key, value)
    console.print(head)

    tiers = summary.get("tiers") or []
    if tiers:
        table = Table(title="tiers", title_justify="left")
        for name in ("tier", "capacity (pages)", "used (pages)", "loaded latency (ns)", "accesses"):
            table.add_column(name, justify="left" if name == "tier" else "right")
        for tier in tiers:
            table.add_row(
                str(tier.get("name", "-")),
                str(tier.get("capacity_pages", "-")),
                str(tier.get("used_pages", "-")),
                fmt_float(tier.get("mean_loaded_latency_ns"), ".1f"),
                si(tier.get("accesses")),
            )
        console.print(table)

    processes = summary.get("processes") or []
    if processes:
        table = Table(title="processes", title_justify="left")
        with_mlp = any(proc.get("mlp_estimate") is not None for proc in processes)
        names = ("process", "runtime (s)", "throughput", "slowdown", "fast-tier hits")
        for name in (*names, "MLP (trace)") if with_mlp else names:
            table.add_column(name, justify="left" if name == "process" else "right")
        for proc in processes:
            hit = proc.get("fast_tier_hit_ratio")
            cells = [
                str(proc.get("name", "-")),
                fmt_float(proc.get("runtime_s"), ".3g"),
                si(proc.get("throughput_ops_per_s"), "ops/s"),
                f"{fmt_float(proc.get('slowdown_vs_fast_only'), '.3f')}x",
                f"{fmt_float(hit * 100 if isinstance(hit, int | float) else None, '.1f')}%",
            ]
            if with_mlp:
                cells.append(fmt_float(proc.get("mlp_estimate"), ".2f"))
            table.add_row(*cells)
        console.print(table)
