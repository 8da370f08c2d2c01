"""``tierkit report DIR...``: side-by-side tables and plots of one or more sweep directories, as
Markdown with PNGs (``report.md``) and one self-contained HTML page (``report.html``, images inline).

Tables: slowdown vs fast-only per policy per setting (the ``fast_ratio`` axis when the sweep has one,
otherwise the experiment), promotions and throughput the same way (means over seeds), and failed
points with their errors. Plots: slowdown per policy per setting, promotions per policy, and each
policy's tier latencies over time (the first seed's run of each policy and setting).
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
        self.html.append(df.to_html(float_format=lambda x: f"{x:.4g}", border=0, classes="t"))

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
        cells = [f"{v:.4g}" if isinstance(v, float) else str(v) for v in row]
        lines.append("| " + " | ".join([label, *cells]) + " |")
    return "\n".join(lines)


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
    doc = _Doc()
    doc.heading("tierkit sweep report", 1)
    ok = table[table["status"] == "ok"]
    doc.para(
        f"Sweeps: {', '.join(sorted(table['sweep'].unique()))}. Points: {len(table)}, "
        f"{len(ok)} ok, {len(table) - len(ok)} failed. Values are means over seeds."
    )
    setting = _setting_column(table)
    index = [c for c in ("sweep", "experiment") if c != setting and table[c].nunique() > 1] + ["policy"]

    def pivot(metric: str) -> Any:
        if metric not in ok.columns or ok.empty:
            return None
        return ok.pivot_table(index=index, columns=setting, values=metric, aggfunc="mean")

    for metric, title in (
        ("slowdown_vs_fast_only", "Slowdown vs everything in the fast tier"),
        ("throughput_ops_per_s", "Throughput (ops/s)"),
        ("promotions", "Promotions"),
    ):
        pv = pivot(metric)
        if pv is None:
            continue
        doc.heading(f"{title}, per policy per {setting}")
        doc.table(pv)
        if metric != "throughput_ops_per_s":
            fig, ax = plt.subplots(figsize=(7, 3.5))
            pv.plot.bar(ax=ax, rot=0)
            ax.set_ylabel(title)
            if metric == "slowdown_vs_fast_only":
                ax.axhline(1.0, color="grey", lw=0.8)
            ax.legend(title=setting, fontsize=8)
            fig.tight_layout()
            png = out_dir / f"{metric}.png"
            fig.savefig(png, dpi=110)
            plt.close(fig)
            doc.image(png, f"{title} per policy and {setting}")

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
                        label = " ".join(str(row[k]) for k in [*index, setting])
                        ax.plot(s["t_s"], s[col], label=label, lw=1)
                ax.set_title(col.removeprefix("latency_ns."))
                ax.set_xlabel("simulated s")
                ax.set_ylabel("latency (ns)")
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
