"""Sweeps: a grid of runs (experiments x policies x parameters x seeds), run in local processes or
on a Dask distributed cluster, collected into one Parquet table.

A sweep file (TOML)::

    name = "ratios"
    experiments = ["gups-hotset", "trace:examples/traces/stream.tkt"]   # built-ins, TOML files, traces
    policies = ["notier", "hemem", "tpp"]                                 # policy specs
    seeds = [1, 2]                                                        # or a count: seeds = 3 (1..3)

    [set]                       # overrides for every point (experiment keys)
    duration_s = 2

    [grid]                      # one axis per key: experiment keys (platform, fast_ratio, ...)
    fast_ratio = ["1:2", "1:8"]
    platform = ["icx-numa", "spr-cxl"]

    [params.hemem]              # one axis per key for that policy only: hemem:hot_threshold=4, ...
    hot_threshold = [4, 8]

Output directory: ``points/ID.json`` (one per finished point, so a sweep resumes where it stopped),
``series/ID.parquet`` (each point's time series) and ``results.parquet`` (one row per point: the axes,
``status`` "ok" or "error", ``error``, and the summary's scalar fields). A failed point is recorded with
its error; the others go on. Points already done are skipped on a re-run; failed ones are retried.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Point", "SweepResult", "expand", "load_sweep", "run_point", "ship_wheel", "sweep"]

_TOP_KEYS = {"name", "description", "experiments", "policies", "seeds", "set", "grid", "params"}


def _error(msg: str) -> Exception:
    from tierkit import TierkitError

    return TierkitError(msg)


@dataclass(frozen=True)
class Point:
    """One run of a sweep."""

    experiment: str
    policy: str
    seed: int
    overrides: tuple[tuple[str, str], ...] = ()
    axes: tuple[tuple[str, str], ...] = field(default=())
    """The grid values that vary (for the table's columns)."""
    content: str = ""
    """What the experiment is, for the id: a built-in's name, or a digest of the experiment or
    trace file's bytes (so a moved sweep still resumes, and an edited file is run again)."""

    @property
    def id(self) -> str:
        exp = self.content or self.experiment
        key = json.dumps([exp, self.policy, self.seed, sorted(self.overrides)])
        return hashlib.sha1(key.encode()).hexdigest()[:16]


def _file_digest(path: Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks; "" when it cannot be read (the run then
    reports the error)."""
    h = hashlib.sha256()
    try:
        with path.open("rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    except OSError:
        return ""
    return "sha256:" + h.hexdigest()


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``; did you mean `seeds`?`` for the closest of ``choices``, or "" when none is close."""
    import difflib

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


def _value_text(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, int | float):
        return repr(v)
    raise _error(f"unsupported value {v!r}: expected a string, number or boolean")


def _axis(where: str, key: str, values: object) -> list[str]:
    vals = values if isinstance(values, list) else [values]
    if not vals:
        raise _error(f"{where}: `{key}` is an empty list; give at least one value")
    try:
        return [_value_text(v) for v in vals]
    except Exception as err:
        raise _error(f"{where}: `{key}`: {err}") from None


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested tables as dotted keys: TOML's `costs.hint_fault_us = 1.5` (a table `costs`) is the
    override `costs.hint_fault_us=1.5`, as `--set` writes it."""
    out: dict[str, Any] = {}
    for k, v in table.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _grid(axes: Mapping[str, list[str]]) -> list[list[tuple[str, str]]]:
    combos: list[list[tuple[str, str]]] = [[]]
    for key in sorted(axes):
        combos = [[*c, (key, v)] for c in combos for v in axes[key]]
    return combos


def expand(spec: Mapping[str, Any], where: str = "sweep", base_dir: Path | None = None) -> list[Point]:
    """The points of a parsed sweep table, in a fixed order."""
    unknown = sorted(set(spec) - _TOP_KEYS)
    if unknown:
        raise _error(
            f"{where}: unknown key `{unknown[0]}`{_did_you_mean(unknown[0], _TOP_KEYS)}; "
            f"expected: {', '.join(sorted(_TOP_KEYS))}"
        )
    experiments = _axis(where, "experiments", spec.get("experiments", []))
    policies = _axis(where, "policies", spec.get("policies", ["notier"]))
    raw_seeds = spec.get("seeds", 1)
    if isinstance(raw_seeds, bool):
        raise _error(f"{where}: `seeds` must be a count or a list of integers")
    if isinstance(raw_seeds, int):
        if raw_seeds < 1:
            raise _error(f"{where}: `seeds` = {raw_seeds}; expected at least 1")
        seeds = list(range(1, raw_seeds + 1))
    elif (
        isinstance(raw_seeds, list)
        and raw_seeds
        and all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in raw_seeds)
    ):
        seeds = [int(s) for s in raw_seeds]
    else:
        raise _error(f"{where}: `seeds` must be a count or a non-empty list of non-negative integers")
    common = spec.get("set", {})
    grid = spec.get("grid", {})
    params = spec.get("params", {})
    for name, table in (("set", common), ("grid", grid), ("params", params)):
        if not isinstance(table, dict):
            raise _error(f"{where}: `{name}` must be a table")
    common, grid = _flatten(common), _flatten(grid)
    fixed = [(k, _value_text(v)) for k, v in sorted(common.items())]
    axes = {k: _axis(f"{where}: [grid]", k, v) for k, v in grid.items()}
    for pol, table in params.items():
        if not isinstance(table, dict):
            raise _error(f"{where}: `params.{pol}` must be a table of parameter lists")
        if pol not in policies:
            raise _error(
                f"{where}: `params.{pol}`: `{pol}` is not in `policies` ({', '.join(policies)})"
                + _did_you_mean(pol, policies)
            )

    digests: dict[str, str] = {}

    def resolve(exp: str) -> tuple[str, str]:
        """(what to run, what the point id is computed from)."""
        prefix, path = ("trace:", exp[6:]) if exp.startswith("trace:") else ("", exp)
        looks_like_file = prefix or path.endswith(".toml")
        if not looks_like_file:
            return exp, exp
        file = Path(path)
        if base_dir is not None and not file.is_absolute() and (base_dir / path).exists():
            # Absolute, so that Dask workers with another working directory find it too.
            file = (base_dir / path).resolve()
            exp = prefix + str(file)
        key = str(file)
        if key not in digests:
            digests[key] = _file_digest(file)
        return exp, prefix + (digests[key] or exp)

    points: list[Point] = []
    for exp in experiments:
        for pol in policies:
            pol_axes = {k: _axis(f"{where}: [params.{pol}]", k, v) for k, v in params.get(pol, {}).items()}
            specs: list[tuple[str, list[tuple[str, str]]]] = []
            for combo in _grid(pol_axes):
                sep = ":" if ":" not in pol.split("+")[0] else ","
                head, plus, rest = pol.partition("+")
                spec_text = head + (sep + ",".join(f"{k}={v}" for k, v in combo) if combo else "")
                specs.append((spec_text + plus + rest, [(f"param.{k}", v) for k, v in combo]))
            for pol_spec, pol_vary in specs:
                for combo in _grid(axes):
                    for seed in seeds:
                        overrides = tuple(fixed + combo)
                        vary = tuple(combo + pol_vary)
                        run_as, content = resolve(exp)
                        points.append(Point(run_as, pol_spec, seed, overrides, vary, content))
    if not points:
        raise _error(f"{where}: no points; give `experiments`")
    return points


def load_sweep(path: str | os.PathLike[str]) -> list[Point]:
    """Read and expand a sweep file; relative experiment/trace paths are relative to it."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as err:
        raise _error(f"{p}: cannot read: {err.strerror or err}") from None
    try:
        spec = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _error(f"{p}: invalid TOML: {err}") from None
    return expand(spec, where=str(p), base_dir=p.parent)


def run_point(point: Point, max_memory: int | None = None) -> tuple[dict[str, Any], Any]:
    """Run one point; never raises: a failure is a row with status "error" and its message (a point
    estimated above ``max_memory`` bytes or the machine's available memory is refused that way).

    Returns (row, time series DataFrame or None). Top level so that process pools and Dask can ship it.
    """
    import tierkit

    row: dict[str, Any] = {
        "point_id": point.id,
        "experiment": point.experiment,
        "policy": point.policy,
        "seed": point.seed,
    }
    row.update(dict(point.axes))
    try:
        res = tierkit.run(
            point.experiment,
            point.policy,
            [f"{k}={v}" for k, v in point.overrides],
            point.seed,
            max_memory=max_memory,
        )
    except Exception as err:  # recorded, so that one bad point does not stop the sweep
        row.update(status="error", error=f"{type(err).__name__}: {err}" if not _is_user(err) else str(err))
        return row, None
    row.update(status="ok", error="")
    for k, v in res.summary.items():
        if isinstance(v, bool | int | float | str) and k not in row:
            row[k] = v
    return row, res.timeseries


def _is_user(err: Exception) -> bool:
    from tierkit import TierkitError

    return isinstance(err, TierkitError)


@dataclass
class SweepResult:
    """What :func:`sweep` did: the table and counts."""

    out: Path
    table: Any
    ran: int
    skipped: int
    failed: int


def _write_point(out: Path, row: dict[str, Any], series: Any) -> None:
    (out / "points").mkdir(parents=True, exist_ok=True)
    if series is not None:
        (out / "series").mkdir(parents=True, exist_ok=True)
        series.to_parquet(out / "series" / f"{row['point_id']}.parquet", index=False)
    tmp = out / "points" / f"{row['point_id']}.json.tmp"
    tmp.write_text(json.dumps(row, sort_keys=True))
    tmp.replace(out / "points" / f"{row['point_id']}.json")


def _done(out: Path, point: Point) -> bool:
    f = out / "points" / f"{point.id}.json"
    if not f.exists():
        return False
    try:
        return json.loads(f.read_text()).get("status") == "ok"
    except (OSError, ValueError):
        return False


def collect(out: Path, points: Sequence[Point] | None = None) -> Any:
    """Build results.parquet from the point files (in the sweep's point order when given)."""
    import pandas as pd

    files = sorted((out / "points").glob("*.json"))
    rows = {json.loads(f.read_text())["point_id"]: json.loads(f.read_text()) for f in files}
    order = [p.id for p in points if p.id in rows] if points is not None else sorted(rows)
    order += sorted(set(rows) - set(order))
    table = pd.DataFrame([rows[i] for i in order])
    table.to_parquet(out / "results.parquet", index=False)
    return table


def sweep(
    spec: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Point],
    out: str | os.PathLike[str] = "sweep-out",
    workers: int | None = None,
    dask: str | Any | None = None,
    progress: bool = False,
    on_point: Callable[[dict[str, Any]], None] | None = None,
    max_memory: int | str | None = None,
) -> SweepResult:
    """Run a sweep: a sweep file, a parsed sweep table, or a list of :class:`Point`.

    ``workers`` local processes (default: one per core); or ``dask``: a scheduler address
    (``"tcp://host:8786"``) or a ``dask.distributed.Client``. Points already done in ``out`` are skipped.
    ``max_memory`` (bytes or a size such as ``"6G"``) refuses each point estimated above it (a point is
    also refused above the available memory of the machine it runs on); refused points are recorded as
    failed. Returns the table (also in ``out/results.parquet``).
    """
    import tierkit

    limit = None if max_memory is None else tierkit.parse_size(max_memory)
    if isinstance(spec, str | os.PathLike):
        points = load_sweep(spec)
    elif isinstance(spec, Mapping):
        points = expand(spec)
    else:
        points = list(spec)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    todo = [p for p in points if not _done(out_dir, p)]
    skipped = len(points) - len(todo)
    if workers is not None and workers < 1:
        raise _error(f"workers must be at least 1, got {workers}")
    failed = 0

    def record(row: dict[str, Any], series: Any) -> None:
        nonlocal failed
        failed += row["status"] != "ok"
        _write_point(out_dir, row, series)
        if on_point is not None:
            on_point(row)

    with _Progress(len(todo), enabled=progress) as bar:
        if dask is not None:
            _run_dask(todo, dask, record, bar, limit)
        elif (workers or os.cpu_count() or 1) == 1 or len(todo) <= 1:
            for p in todo:
                record(*run_point(p, limit))
                bar.advance()
        else:
            _run_local(todo, workers or os.cpu_count() or 1, record, bar, limit)
    table = collect(out_dir, points)
    return SweepResult(out=out_dir, table=table, ran=len(todo), skipped=skipped, failed=failed)


def _crashed(point: Point, err: BaseException) -> dict[str, Any]:
    row: dict[str, Any] = {
        "point_id": point.id,
        "experiment": point.experiment,
        "policy": point.policy,
        "seed": point.seed,
    }
    row.update(dict(point.axes))
    row.update(status="error", error=f"worker failed: {type(err).__name__}: {err}")
    return row


def _run_local(
    todo: Sequence[Point],
    workers: int,
    record: Callable[[dict[str, Any], Any], None],
    bar: _Progress,
    max_memory: int | None = None,
) -> None:
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=min(workers, len(todo))) as pool:
        futures = {pool.submit(run_point, p, max_memory): p for p in todo}
        for fut in as_completed(futures):
            try:
                row, series = fut.result()
            except Exception as err:  # the worker process died
                row, series = _crashed(futures[fut], err), None
            record(row, series)
            bar.advance()


def _run_dask(
    todo: Sequence[Point],
    dask: str | Any,
    record: Callable[[dict[str, Any], Any], None],
    bar: _Progress,
    max_memory: int | None = None,
) -> None:
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise _error("--dask needs dask.distributed: pip install 'dask[distributed]'") from None
    own = isinstance(dask, str)
    try:
        client = Client(dask, timeout="20s") if own else dask
    except OSError as err:
        raise _error(f"cannot connect to the Dask scheduler at `{dask}`: {err}") from None
    try:
        futures = client.map(run_point, list(todo), max_memory=max_memory, pure=False)
        by_key = {f.key: p for f, p in zip(futures, todo, strict=True)}
        for fut in as_completed(futures):
            try:
                row, series = fut.result()
            except Exception as err:
                row, series = _crashed(by_key[fut.key], err), None
            record(row, series)
            bar.advance()
    finally:
        if own:
            client.close()


def ship_wheel(
    client: Any, wheel: str | os.PathLike[str], pip_options: Sequence[str] = ("--no-deps",)
) -> str:
    """Install a built tierkit wheel on every worker of a Dask cluster, now and as workers join.

    For workers that do not have tierkit (no index serves it: build the wheel with
    ``maturin build --release`` or ``pip wheel . -w dist``). The wheel's bytes travel with a worker
    plugin (no shared file system needed); each worker pip-installs it into its own scratch
    directory (``--target``, its environment is left alone) and puts that first on ``sys.path``.
    ``pip_options`` go to ``pip install`` (default ``--no-deps``: the workers' environment must have
    numpy and pandas, and tomli on Python 3.10; installing the dependencies beside a running worker
    would shadow its own dask). Returns the plugin's name. Call it before the sweep,
    on workers that have not imported tierkit yet (a worker that has raises, naming the module's path:
    restart the workers with ``client.restart()``).
    """
    path = Path(wheel)
    if path.suffix != ".whl" or not path.is_file():
        raise _error(f"`{path}` is not a wheel file (build one with `maturin build --release`)")
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except zipfile.BadZipFile:
        raise _error(f"`{path}` is not a wheel file (not a zip archive)") from None
    if "tierkit/__init__.py" not in names or not any(n.startswith("tierkit/_core") for n in names):
        raise _error(
            f"`{path}` does not hold the tierkit package and its extension (an editable wheel of "
            "`pip install -e`?); build one with `maturin build --release`"
        )
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()[:16]
    name = f"tierkit-wheel-{digest}"
    plugin = _wheel_plugin(path.name, data, digest, tuple(pip_options))
    register = getattr(client, "register_plugin", None) or client.register_worker_plugin
    register(plugin, name=name)
    return name


def _wheel_plugin(filename: str, data: bytes, digest: str, pip_options: tuple[str, ...]) -> Any:
    """The worker plugin of :func:`ship_wheel`. Its class is made here, not at module level, so that
    Dask pickles it by value: workers unpickle it without having tierkit."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class TierkitWheel(WorkerPlugin):  # type: ignore[misc]
        def __init__(self) -> None:
            self.filename, self.data, self.digest, self.pip_options = filename, data, digest, pip_options

        def setup(self, worker: Any) -> None:
            import os
            import subprocess
            import sys

            target = os.path.join(worker.local_directory, "tierkit-wheel", self.digest)
            if not os.path.exists(os.path.join(target, ".installed")):
                os.makedirs(target, exist_ok=True)
                whl = os.path.join(os.path.dirname(target), self.filename)
                with open(whl, "wb") as f:
                    f.write(self.data)
                cmd = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
                proc = subprocess.run(
                    [*cmd, *self.pip_options, "--upgrade", "--target", target, whl],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if proc.returncode != 0:
                    raise RuntimeError(
                        f"pip install {self.filename} failed on the worker: {proc.stderr[-2000:]}"
                    )
                open(os.path.join(target, ".installed"), "w").close()
            if target not in sys.path:
                sys.path.insert(0, target)
            loaded = sys.modules.get("tierkit")
            if loaded is not None and not str(getattr(loaded, "__file__", "")).startswith(target):
                raise RuntimeError(
                    f"this worker imported tierkit before the wheel was installed ({loaded.__file__}); "
                    "restart the workers (client.restart()) and ship the wheel again"
                )

    return TierkitWheel()


class _Progress:
    """A rich progress bar over the points (or nothing)."""

    def __init__(self, total: int, enabled: bool) -> None:
        self.total = total
        self.enabled = enabled and total > 0
        self._bar: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

            self._bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task("sweep", total=self.total)
        return self

    def advance(self) -> None:
        if self._bar is not None:
            self._bar.advance(self._task)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
