"""``tierkit report DIR...``: side-by-side tables and plots of one or more sweep directories, as
Markdown with PNGs (``report.md``) and one self-contained HTML page (``report.html``, images inline).

The page names the tierkit that made it (version, git commit and date) and the one that made the runs.
Tables: slowdown vs fast-only, throughput, promotions and demotions per policy per setting (the
``fast_ratio`` axis when the sweep has one, otherwise the experiment): mean over seeds, standard
deviation, the half-width of the mean's 95% confidence interval and the number of seeds, in engineering
units (Mops/s, k pages); failed points with their errors. Plots: slowdown, and promotions beside
demotions, as bars with 95% CI whiskers; each policy's tier latencies over time (the first seed's run of
each policy and setting). Experiments are labelled by short names (a file's name, not its path).
"""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["report"]


def _error(msg: str) -> Exception:
    from tierkit import TierkitError

    return TierkitError(msg)


@dataclass
class _Doc:
    md: list[str] = field(default_factory=list)
    html: list[str] = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self.md.append(f"{'#' * level} {text}\n")
        self.html.append(f"<h{level}>{html.escape(text)}</h{level}>")

    def para(self, text: str) -> None:
        self.md.append(text + "\n")
        self.html.append(f"<p>{html.escape(text)}</p>")

    def table(self, df: Any) -> None:
        self.md.append(_markdown(df) + "\n")
        self.html.append(df.to_html(float_format=lambda x: f"{x:.4g}", na_rep="-", border=0, classes="t"))

    def image(self, path: Path, caption: str) -> None:
        self.md.append(f"![{caption}]({path.name})\n\n*{caption}*\n")
        data = base64.b64encode(path.read_bytes()).decode()
        self.html.append(
            f'<figure><img src="data:image/png;base64,{data}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )


def _markdown(df: Any) -> str:
    cols = [str(c) for c in df.columns]
    index_name = " / ".join(str(n) for n in df.index.names if n is not None) or ""
    lines = [
        "| " + " | ".join([index_name, *cols]) + " |",
        "|" + "---|" * (len(cols) + 1),
    ]
    for idx, row in df.iterrows():
        label = " / ".join(map(str, idx)) if isinstance(idx, tuple) else str(idx)
        cells = [_cell(v) for v in row]
        lines.append("| " + " | ".join([label, *cells]) + " |")
    return "\n".join(lines)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return "-" if v != v else f"{v:.4g}"
    return str(v)


def _load(dirs: Sequence[Path]) -> Any:
    import pandas as pd

    frames = []
    for d in dirs:
        f = d / "results.parquet"
        if not f.exists():
            raise _error(f"`{d}`: no results.parquet; is this a `tierkit sweep` output directory?")
        t = pd.read_parquet(f)
        t.insert(0, "sweep", d.name or str(d))
        t["_dir"] = str(d)
        frames.append(t)
    return pd.concat(frames, ignore_index=True)


def _setting_column(table: Any) -> str:
    for col in ("fast_ratio", "fast_tier_gb"):
        if col in table.columns and table[col].nunique(dropna=True) > 0:
            return col
    return "experiment"


def short_names(experiments: Sequence[str]) -> dict[str, str]:
    """Readable labels for experiments: a file (or `trace:FILE`) by its name, with as many parent
    directories as it takes to tell it from the others; built-ins by their own name."""
    names = sorted(set(experiments))
    depth = dict.fromkeys(names, 1)

    def label(exp: str) -> str:
        prefix, path = ("trace:", exp[6:]) if exp.startswith("trace:") else ("", exp)
        if "/" not in path and os.sep not in path:
            return exp
        parts = Path(path).parts
        return prefix + "/".join(parts[-depth[exp] :])

    for _ in range(64):
        labels: dict[str, list[str]] = {}
        for exp in names:
            labels.setdefault(label(exp), []).append(exp)
        clashes = [e for group in labels.values() if len(group) > 1 for e in group]
        if not clashes:
            break
        for exp in clashes:
            depth[exp] += 1
    return {exp: label(exp) for exp in names}


# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom; 1.96 beyond.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)  # fmt: skip


def t95(df: int) -> float:
    """The two-sided 95% quantile of Student's t with ``df`` degrees of freedom (NaN for df < 1)."""
    if df < 1:
        return float("nan")
    return _T95[df - 1] if df <= len(_T95) else 1.96


def seed_stats(ok: Any, keys: Sequence[str], metric: str) -> Any:
    """Per group of ``keys``: mean, std (over seeds, ddof 1), ci95 (the half-width of the mean's 95%
    confidence interval, Student's t) and seeds (the number of runs)."""
    import math

    g = ok.groupby(list(keys), sort=True)[metric]
    stats = g.agg(mean="mean", std="std", seeds="count")
    stats["ci95"] = [
        t95(int(n) - 1) * sd / math.sqrt(n) if n > 1 else float("nan")
        for sd, n in zip(stats["std"], stats["seeds"], strict=True)
    ]
    return stats[["mean", "std", "ci95", "seeds"]]


_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def engineering_unit(values: Any, unit: str) -> tuple[float, str]:
    """(divisor, label) that puts the largest magnitude of ``values`` between 1 and 1000:
    ``(1e6, "Mops/s")`` for throughputs around 5e8 ops/s; ``(1e3, "k pages")`` for 12000 pages."""
    import math

    finite = [abs(float(v)) for v in values if v == v and not math.isinf(float(v))]
    top = max(finite, default=0.0)
    for factor, prefix in _PREFIXES:
        if top >= factor:
            return factor, (f"{prefix}{unit}" if unit.endswith("/s") else f"{prefix} {unit}")
    return 1.0, unit


# (column, title, unit): the unit is scaled to engineering prefixes; "" for ratios.
METRICS: tuple[tuple[str, str, str], ...] = (
    ("slowdown_vs_fast_only", "Slowdown vs everything in the fast tier", ""),
    ("throughput_ops_per_s", "Throughput", "ops/s"),
    ("promotions", "Promotions", "pages"),
    ("demotions", "Demotions", "pages"),
)


def _provenance(table: Any) -> str:
    """Which tierkit made the report (version, git commit and date when run from a checkout) and
    which made the runs (their `tierkit_version`)."""
    import datetime
    import subprocess

    import tierkit

    made = f"tierkit {tierkit.__version__}"
    here = Path(__file__).resolve().parent

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", "-C", str(here), *args], capture_output=True, text=True, timeout=10, check=False
        )

    try:
        commit = git("log", "-1", "--format=%h %cs")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        commit = dirty = None
    if commit is not None and commit.returncode == 0 and commit.stdout.strip():
        sha, _, date = commit.stdout.strip().partition(" ")
        mark = ", with local changes" if dirty is not None and dirty.stdout.strip() else ""
        made += f", commit {sha} ({date}{mark})"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = f"Report made {now} by {made}."
    if "tierkit_version" in table.columns:
        versions = sorted(str(v) for v in table["tierkit_version"].dropna().unique())
        if versions:
            text += f" Runs made by tierkit {', '.join(versions)}."
    return text


def _label(key: Any) -> str:
    return " / ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def report(dirs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str] | None = None) -> Path:
    """Write report.md, the PNGs and report.html for the sweep directories; return the HTML path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    paths = [Path(d) for d in dirs]
    if not paths:
        raise _error("no sweep directories given")
    table = _load(paths)
    out_dir = Path(out) if out is not None else paths[0] / "report"
    out_dir.mkdir(parents=True, exist_ok=True)
    # Experiments by short names (file names, not absolute paths) in every table, label and legend.
    table["experiment"] = table["experiment"].map(short_names(list(table["experiment"].astype(str))))
    doc = _Doc()
    doc.heading("tierkit sweep report", 1)
    doc.para(_provenance(table))
    ok = table[table["status"] == "ok"]
    seeds = ok["seed"].nunique() if "seed" in ok.columns else 0
    doc.para(
        f"Sweeps: {', '.join(sorted(table['sweep'].unique()))}. Points: {len(table)}, "
        f"{len(ok)} ok, {len(table) - len(ok)} failed. Values are means over {seeds} seed(s); std is "
        "their standard deviation and CI95 the half-width of the 95% confidence interval of the mean "
        "(Student's t; empty with one seed). Bars show the mean, whiskers the CI95."
    )
    setting = _setting_column(table)
    index = [c for c in ("sweep", "experiment") if c != setting and table[c].nunique() > 1] + ["policy"]

    charts: dict[str, tuple[Any, Any, str]] = {}
    for metric, title, unit in METRICS:
        if metric not in ok.columns or ok.empty:
            continue
        stats = seed_stats(ok, [*index, setting], metric)
        factor, shown = engineering_unit(stats["mean"], unit) if unit else (1.0, "")
        for col in ("mean", "std", "ci95"):
            stats[col] = stats[col] / factor
        heading = f"{title} ({shown})" if shown else title
        doc.heading(f"{heading}, per policy per {setting}")
        doc.table(stats.rename(columns={"ci95": "CI95 ±"}))
        charts[metric] = (
            stats["mean"].unstack(setting),
            stats["ci95"].unstack(setting),
            f"{title} ({shown})" if shown else title,
        )

    def bars(ax: Any, metric: str) -> None:
        mean, ci, ylabel = charts[metric]
        mean.index = [_label(k) for k in mean.index]
        ci.index = mean.index
        err = ci.fillna(0.0) if ci.notna().any().any() else None
        mean.plot.bar(ax=ax, yerr=err, capsize=3, rot=0)
        ax.set_ylabel(ylabel)
        ax.set_xlabel(" / ".join(index))
        if len(mean.index) > 4 or max(len(str(i)) for i in mean.index) > 12:
            ax.tick_params(axis="x", labelrotation=30)
            for tick in ax.get_xticklabels():
                tick.set_horizontalalignment("right")
        ax.legend(title=setting, fontsize=8)

    if "slowdown_vs_fast_only" in charts:
        fig, ax = plt.subplots(figsize=(8, 4))
        bars(ax, "slowdown_vs_fast_only")
        ax.axhline(1.0, color="grey", lw=0.8)
        fig.tight_layout()
        png = out_dir / "slowdown_vs_fast_only.png"
        fig.savefig(png, dpi=110)
        plt.close(fig)
        doc.image(png, f"Slowdown vs fast-only per policy and {setting} (mean, 95% CI)")
    moved = [m for m in ("promotions", "demotions") if m in charts]
    if moved:
        fig, axes = plt.subplots(1, len(moved), figsize=(6 * len(moved), 4), squeeze=False)
        for ax, metric in zip(axes[0], moved, strict=True):
            bars(ax, metric)
            ax.set_title(metric.capitalize())
        fig.tight_layout()
        png = out_dir / "promotions.png"
        fig.savefig(png, dpi=110)
        plt.close(fig)
        doc.image(png, f"{' and '.join(moved).capitalize()} per policy and {setting} (mean, 95% CI)")

    # Latencies over time: the first seed's run of each policy (and setting).
    first = ok.sort_values("seed", kind="stable").groupby([*index, setting], sort=True).head(1)
    series = []
    for _, row in first.iterrows():
        f = Path(row["_dir"]) / "series" / f"{row['point_id']}.parquet"
        if f.exists():
            series.append((row, pd.read_parquet(f)))
    if series:
        tiers = sorted({c for _, s in series for c in s.columns if c.startswith("latency_ns.")})
        if tiers:
            doc.heading("Tier latencies over time")
            fig, axes = plt.subplots(1, len(tiers), figsize=(5 * len(tiers), 3.5), squeeze=False)
            for ax, col in zip(axes[0], tiers, strict=True):
                for row, s in series:
                    if col in s.columns:
                        label = " / ".join(str(row[k]) for k in [*index, setting])
                        ax.plot(s["t_s"], s[col], label=label, lw=1)
                ax.set_title(col.removeprefix("latency_ns."))
                ax.set_xlabel("simulated time (s)")
                ax.set_ylabel("loaded latency (ns)")
            axes[0][0].legend(fontsize=7)
            fig.tight_layout()
            png = out_dir / "latency_over_time.png"
            fig.savefig(png, dpi=110)
            plt.close(fig)
            doc.image(png, "Loaded latency of each tier over time, per policy (first seed)")

    failed = table[table["status"] != "ok"]
    if not failed.empty:
        doc.heading("Failed points")
        doc.table(failed.set_index("point_id")[["sweep", "experiment", "policy", "seed", "error"]])

    (out_dir / "report.md").write_text("\n".join(doc.md))
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>tierkit sweep report</title><style>"
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "table.t{border-collapse:collapse}table.t td,table.t th{padding:2px 8px;border-bottom:1px solid #ddd}"
        "img{max-width:100%}</style></head><body>" + "\n".join(doc.html) + "</body></html>\n"
    )
    html_path = out_dir / "report.html"
    html_path.write_text(page)
    return html_path
