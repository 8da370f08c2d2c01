"""tierkit: tiered-memory placement policies on a simulated machine.

The library API is small::

    import tierkit

    result = tierkit.run("gups-hotset", policy="hemem", overrides={"duration_s": 2}, seed=1)
    result.summary["throughput_ops_per_s"]      # the JSON summary, as a dict
    result.timeseries                           # a pandas DataFrame, one row per sample

Many runs, papers and traces::

    res = tierkit.sweep("sweep.toml", out="sweep-out", workers=2)   # or dask="tcp://scheduler:8786"
    res.table                                   # one row per point (also sweep-out/results.parquet)
    tierkit.report(["sweep-out"])               # report.md, PNGs and a self-contained report.html
    claims = tierkit.reproduce("colloid", out="repro", quick=True)
    tierkit.run("trace:examples/traces/pchase.tkt", policy="tpp")  # replay a memory trace
    tierkit.trace.import_trace("lackey", "prog.lackey", "prog.tkt")

``tierkit.list_policies()``, ``list_workloads()`` and ``list_platforms()`` return ``(name, description)``
pairs. Every bad input raises :class:`TierkitError`, whose message is complete and meant for users; a run
that does not fit in memory raises its subclass :class:`MemoryLimitError` before anything is allocated.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

ProgressCallback = Callable[[float, float], None]

try:
    from tierkit import _core
    from tierkit._core import MemoryLimitError, TierkitError

    __version__: str = _core.__version__
    _CORE_IMPORT_ERROR = ""
except ImportError as _err:  # the Rust extension is not built: fail on use, with a clear message
    _core = None  # type: ignore[assignment]
    _CORE_IMPORT_ERROR = str(_err)
    __version__ = "0+unknown"

    class TierkitError(Exception):  # type: ignore[no-redef]
        """Raised for every bad input; the message is complete and user-facing."""

    class MemoryLimitError(TierkitError):  # type: ignore[no-redef]
        """A run that does not fit in memory (refused before it started, or an allocation failed)."""


__all__ = [
    "MemoryLimitError",
    "RunResult",
    "TierkitError",
    "__version__",
    "common_keys",
    "describe_policy",
    "describe_workload",
    "list_platforms",
    "list_policies",
    "list_workloads",
    "parse_size",
    "report",
    "reproduce",
    "run",
    "soar_profile",
    "sweep",
    "trace",
]

# The core keeps seeds as TOML integers (i64): a larger one would wrap.
_MAX_SEED = 2**63 - 1


def _core_module() -> Any:
    if _core is None:
        raise TierkitError(
            "the compiled extension tierkit._core is not available "
            f"({_CORE_IMPORT_ERROR}); build it with `pip install -e .` or `make demo`"
        )
    return _core


@dataclass(frozen=True)
class RunResult:
    """The outcome of one simulated run."""

    summary: dict[str, Any]
    """The JSON summary: policy, workload, platform, seed, throughput, slowdown, tiers, processes, ..."""
    timeseries: pd.DataFrame
    """One row per sample; ``t_s`` first, the other columns sorted by name."""

    def write(self, out_dir: str | os.PathLike[str]) -> list[Path]:
        """Write summary.json, timeseries.parquet and the PNG plots into ``out_dir``; return the paths."""
        from tierkit.output import write_run

        return write_run(self, Path(out_dir))


def _format_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def normalize_overrides(overrides: Mapping[str, object] | Iterable[str] | None) -> list[str]:
    """Turn ``{"duration_s": 2}`` or ``["duration_s=2"]`` into checked ``KEY=VALUE`` strings."""
    if overrides is None:
        return []
    if isinstance(overrides, str):
        raise TierkitError(
            f"overrides must be a list of KEY=VALUE strings or a mapping, not the string `{overrides}`"
        )
    items: list[str]
    if isinstance(overrides, Mapping):
        items = [f"{key}={_format_value(value)}" for key, value in overrides.items()]
    else:
        items = [str(item) for item in overrides]
    for item in items:
        check_override(item)
    return items


def check_override(item: str) -> tuple[str, str]:
    """Split one ``KEY=VALUE`` override; raise :class:`TierkitError` when it is malformed."""
    key, sep, value = item.partition("=")
    key, value = key.strip(), value.strip()
    if not sep:
        raise TierkitError(f"override `{item}` has no `=`; expected KEY=VALUE, e.g. duration_s=2")
    if not key:
        raise TierkitError(f"override `{item}` has no key before `=`; expected KEY=VALUE, e.g. duration_s=2")
    if not value:
        raise TierkitError(f"override `{item}` has no value after `=`; expected KEY=VALUE, e.g. duration_s=2")
    return key, value


def _check_experiment(experiment: str | os.PathLike[str]) -> str:
    if isinstance(experiment, (bytes, bytearray)):
        raise TierkitError(
            f"experiment must be a str or a path, not bytes ({bytes(experiment)!r}); "
            "decode it first (e.g. `.decode()`)"
        )
    try:
        text = os.fspath(experiment)
    except TypeError:
        raise TierkitError(
            "experiment must be a built-in name or a TOML file (str or os.PathLike), "
            f"not {type(experiment).__name__}"
        ) from None
    if not isinstance(text, str):
        raise TierkitError(f"experiment must be a str path, not a bytes path ({text!r}); decode it first")
    if not text.strip():
        raise TierkitError("no experiment given; name a built-in (`tierkit list workloads`) or a TOML file")
    if text.startswith("trace:"):  # a trace replayed as the workload; the core names a bad file
        if not Path(text[6:]).is_file():
            raise TierkitError(
                f"trace file `{text[6:]}` does not exist (make one with `tierkit trace import`)"
            )
        return text
    looks_like_path = isinstance(experiment, os.PathLike) or text.endswith(".toml") or os.sep in text
    if looks_like_path:
        path = Path(text)
        if path.is_dir():
            raise TierkitError(f"experiment `{text}` is a directory, not a TOML file")
        if not path.exists():
            raise TierkitError(
                f"experiment file `{text}` does not exist "
                "(built-in experiments are named without a path; see `tierkit list workloads`)"
            )
    return text


def _check_seed(seed: int | None) -> int | None:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TierkitError(f"seed must be an integer, not {seed!r}")
    if not 0 <= seed <= _MAX_SEED:
        raise TierkitError(f"seed must be between 0 and {_MAX_SEED}, got {seed}")
    return seed


def _timeseries_frame(columns: Mapping[str, list[Any]]) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    names = sorted(columns, key=lambda name: (name != "t_s", name))
    lengths = {len(columns[name]) for name in names}
    if len(lengths) > 1:
        raise RuntimeError(
            f"tierkit._core returned time-series columns of different lengths: {sorted(lengths)}"
        )
    return pd.DataFrame({name: np.asarray(columns[name]) for name in names})


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str | int) -> int:
    """A size in bytes: an integer, or a number with K, M, G or T, binary (``6G``, ``6GiB``, ``512M``,
    ``1.5T``); raises :class:`TierkitError` otherwise."""
    if isinstance(text, bool):
        raise TierkitError(f"a size must be a number of bytes or a string such as 6G, not {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise TierkitError(f"a size cannot be negative, got {text}")
        return text
    if not isinstance(text, str):
        raise TierkitError(f"a size must be a number of bytes or a string such as 6G, not {text!r}")
    t = text.strip().upper().removesuffix("IB").removesuffix("B").strip()
    unit = t[-1:] if t[-1:] in _SIZE_UNITS and t[-1:] != "" else ""
    number = t[: len(t) - len(unit)].strip().replace("_", "")
    try:
        value = float(number) if "." in number else int(number, 10)
    except ValueError:
        raise TierkitError(
            f"`{text}` is not a size (bytes, or a number with K, M, G or T, e.g. 6G)"
        ) from None
    if value < 0 or value != value or value == float("inf"):
        raise TierkitError(f"`{text}` is not a size (it must be a non-negative number)")
    return int(value * _SIZE_UNITS[unit])


def cache_dir() -> Path | None:
    """Where fast-only reference runs are kept across processes: ``$TIERKIT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/tierkit``, else ``~/.cache/tierkit``; None when ``$TIERKIT_NO_CACHE`` is set
    (to anything but ``0`` or the empty string), as ``--no-cache`` does."""
    if os.environ.get("TIERKIT_NO_CACHE", "") not in ("", "0"):
        return None
    return _default_cache_dir()


def _default_cache_dir() -> Path:
    if os.environ.get("TIERKIT_CACHE_DIR"):
        return Path(os.environ["TIERKIT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tierkit"


def run(
    experiment: str | os.PathLike[str],
    policy: str | None = None,
    overrides: Mapping[str, object] | Iterable[str] | None = None,
    seed: int | None = None,
    progress: bool | ProgressCallback = False,
    max_memory: int | str | None = None,
    cache: bool | str | os.PathLike[str] | None = None,
) -> RunResult:
    """Run one experiment on the simulated machine.

    ``experiment`` is a built-in name (``tierkit list workloads``) or a TOML file. ``policy`` is a spec
    ``name[:key=value,...][+layer[:key=value,...]]...``; ``None`` uses the experiment's own. ``overrides``
    sets experiment keys (dotted keys reach into tables), as ``{"duration_s": 2}`` or ``["duration_s=2"]``.
    ``progress`` is ``True`` for a progress bar on stderr, or a callable ``(sim_s_done, sim_s_total)``.

    The run's memory is estimated before anything is allocated (``summary["memory_estimate_bytes"]``); a
    run estimated above the machine's available memory, or above ``max_memory`` (bytes, or a size such as
    ``"6G"``), raises :class:`MemoryLimitError` at once.

    Every run also runs the experiment with every page in the fast tier (the reference its slowdown is
    measured against). That reference depends on the experiment and the model only, so it is kept on
    disk by their fingerprints and reused by later runs, in any process (sweeps and reproductions
    compute it once per experiment). ``cache``: ``None`` uses :func:`cache_dir` (off under
    ``$TIERKIT_NO_CACHE``), ``False`` keeps nothing, ``True`` forces the default directory, a path
    uses that directory. A cached reference gives exactly the numbers a fresh one would.

    The simulation runs without the GIL: runs in several threads (``concurrent.futures``'s
    ``ThreadPoolExecutor``, Dask's threaded scheduler) use several cores, and give the same
    results bit for bit as one after another.
    """
    core = _core_module()
    text = _check_experiment(experiment)
    items = normalize_overrides(overrides)
    checked_seed = _check_seed(seed)
    if policy is not None and not isinstance(policy, str):
        raise TierkitError(f"policy must be a spec string such as `hemem`, not {policy!r}")
    limit = None if max_memory is None else parse_size(max_memory)
    if limit is not None and limit > 2**64 - 1:
        raise TierkitError(f"max_memory {max_memory!r} is out of range")
    if cache is None:
        where = cache_dir()
    elif cache is True:
        where = _default_cache_dir()
    elif cache is False:
        where = None
    elif isinstance(cache, (str, os.PathLike)):
        where = Path(cache)
    else:
        raise TierkitError(f"cache must be True, False, None or a directory, not {cache!r}")
    cache_arg = None if where is None else str(where)

    if progress is True:
        from tierkit.progress import RunProgress

        with RunProgress(f"{text} ({policy or 'default policy'})") as bar:
            summary_json, columns = core.run(text, policy, items, checked_seed, bar, limit, cache_arg)
    else:
        callback = progress if callable(progress) else None
        summary_json, columns = core.run(text, policy, items, checked_seed, callback, limit, cache_arg)
    return _make_result(summary_json, columns)


def _make_result(summary_json: str, columns: Mapping[str, list[Any]]) -> RunResult:
    import json

    summary = json.loads(summary_json)
    if not isinstance(summary, dict):
        raise RuntimeError("tierkit._core returned a summary that is not a JSON object")
    return RunResult(summary=summary, timeseries=_timeseries_frame(columns))


def soar_profile(
    experiment: str | os.PathLike[str],
    overrides: Mapping[str, object] | Iterable[str] | None = None,
    seed: int | None = None,
) -> pd.DataFrame:
    """Soar's profiling run (every page in the fast tier): the object ranking table, one row per
    object in Soar rank order, with size, lifetime, accesses, score, unit score and the ranks by
    first touch, by frequency and by Soar (Soar/Alto Table 2)."""
    import io

    import pandas as pd

    text = _core_module().soar_profile(
        _check_experiment(experiment), normalize_overrides(overrides), _check_seed(seed)
    )
    return pd.read_csv(io.StringIO(text), sep="\t")


def list_policies() -> list[tuple[str, str]]:
    """Every policy and layer: ``(name, description)``, in the core's registry order."""
    return [(str(n), str(d)) for n, d in _core_module().list_policies()]


def list_workloads() -> list[tuple[str, str]]:
    """The built-in experiments: ``(name, description)``."""
    return [(str(n), str(d)) for n, d in _core_module().list_workloads()]


def list_platforms() -> list[tuple[str, str]]:
    """The platform presets: ``(name, description)``."""
    return [(str(n), str(d)) for n, d in _core_module().list_platforms()]


def describe_policy(name: str) -> list[dict[str, Any]]:
    """A policy's parameters: dicts with ``name``, ``kind``, ``default``, ``unit``, ``doc``."""
    return [dict(p) for p in _core_module().describe_policy(name)]


def describe_workload(name: str) -> list[dict[str, Any]]:
    """A built-in experiment's own keys (``--set KEY=VALUE``): dicts like :func:`describe_policy`'s."""
    core = _core_module()
    if not hasattr(core, "describe_workload"):
        raise TierkitError("this build of tierkit._core cannot describe workloads")
    return [dict(p) for p in core.describe_workload(name)]


def common_keys() -> list[tuple[str, str]]:
    """The keys every experiment accepts, besides a built-in's own: ``(key, description)``."""
    core = _core_module()
    if not hasattr(core, "common_keys"):
        raise TierkitError("this build of tierkit._core does not list the common keys")
    return [(str(k), str(d)) for k, d in core.common_keys()]


def sweep(
    spec: str | os.PathLike[str] | Mapping[str, Any],
    out: str | os.PathLike[str] = "sweep-out",
    workers: int | None = None,
    dask: str | Any | None = None,
    progress: bool = False,
    max_memory: int | str | None = None,
) -> Any:
    """Run a grid of experiments (a sweep file or a parsed sweep table; see :mod:`tierkit.sweeps`) in
    ``workers`` local processes, or on a Dask cluster (``dask``: scheduler address or Client). Points done
    in ``out`` are skipped; a failed point is recorded with its error (a point estimated above ``max_memory``
    or its machine's available memory is refused so). Returns a :class:`tierkit.sweeps.SweepResult` whose
    ``table`` is the results DataFrame."""
    from tierkit import sweeps as _sweep

    return _sweep.sweep(spec, out=out, workers=workers, dask=dask, progress=progress, max_memory=max_memory)


def report(dirs: Iterable[str | os.PathLike[str]], out: str | os.PathLike[str] | None = None) -> Path:
    """Tables and plots of sweep directories side by side: report.md with PNGs and a self-contained
    report.html (in ``out``, default ``DIR/report``); returns the HTML path."""
    from tierkit.reports import report as _report

    return _report(list(dirs), out)


def _lazy_module(name: str) -> Any:
    """Register ``name`` in sys.modules without running it yet (it runs on first attribute access)."""
    import importlib.util
    import sys

    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


# Register the subpackage tierkit.reproduce now (lazily: pandas loads only when it is used), so that
# the function below, not the package, is `tierkit.reproduce`: later imports of the subpackage find it
# in sys.modules and leave the name alone.
_reproduce_pkg = _lazy_module("tierkit.reproduce")
from tierkit import trace  # noqa: E402  (tierkit.trace.import_trace / info / record)


def reproduce(
    paper: str,
    out: str | os.PathLike[str] | None = None,
    quick: bool = False,
    workers: int | None = None,
    progress: bool = False,
    max_memory: int | str | None = None,
    seeds: Sequence[int] = (1,),
) -> list[Any]:
    """Reproduce a paper (``tierkit.reproduce.list_reproductions()``): writes report.md, the figures
    and claims.json into ``out``; returns the claims (``claim``, ``paper``, ``ours``, ``holds``).
    ``max_memory`` refuses each run estimated above it, as for :func:`run`. With several
    ``seeds`` every run is repeated under each and a claim holds when it holds with most of them
    (each seed's report in ``out/seed-S``)."""
    return _reproduce_pkg.reproduce(
        paper,
        out=None if out is None else Path(out),
        quick=quick,
        workers=workers,
        progress=progress,
        max_memory=max_memory,
        seeds=seeds,
    )
