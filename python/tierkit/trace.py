"""Memory-access traces: import lackey / perf-script / damon input into tierkit's binary format
(docs/traces.md), summarise a trace, and record a program under valgrind lackey.

Replay a trace with ``tierkit.run("trace:FILE")`` or ``workload = "trace"`` in an experiment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["FORMATS", "import_trace", "info", "record", "workload_keys"]

FORMATS = ("lackey", "perf-script", "damon")


def _core() -> Any:
    from tierkit import _core_module

    return _core_module()


def import_trace(
    format: str, input: str | os.PathLike[str], output: str | os.PathLike[str]
) -> dict[str, Any]:
    """Convert a text trace (``"-"``: stdin; plain, gzip or zstd, told by its first bytes) into a
    binary trace; returns the import's counts (``lines``, ``skipped``, ``records``, ``accesses``,
    ``instructions``: lackey ``I`` lines, 0 when the trace has none) and ``compression``. Streams:
    the input is never held whole. The output appears only once complete: a failed import leaves
    none (nor a partial file)."""
    from tierkit import TierkitError

    if format not in FORMATS:
        raise TierkitError(f"unknown trace format `{format}`; expected one of: {', '.join(FORMATS)}")
    src = os.fspath(input)
    if src != "-" and not os.path.exists(src):
        raise TierkitError(f"`{src}`: no such file")
    out = _core().trace_import(format, src, os.fspath(output))
    return {str(k): (v if isinstance(v, str) else int(v)) for k, v in out.items()}


def info(path: str | os.PathLike[str], overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Summarise a binary trace: accesses, stores, distinct pages and lines, stamps, address span,
    and ``mlp``: the per-window MLP of its replay (``estimate``, ``windows``, ``min``, ``p10``,
    ``p50``, ``p90``, ``max``, ``per_window``) as a run with ``overrides`` (``KEY=VALUE`` as for
    ``--set``: platform, llc_mb, mlp, ...) would replay it (``mlp_error`` instead when it cannot
    be replayed: every access hits the LLC model, ...)."""
    from tierkit import TierkitError

    p = os.fspath(path)
    if not os.path.exists(p):
        raise TierkitError(f"`{p}`: no such file")
    return dict(_core().trace_info(p, list(overrides)))


def workload_keys() -> list[tuple[str, str]]:
    """The keys of ``workload = "trace"``: (key, description)."""
    return [(str(k), str(d)) for k, d in _core().trace_keys()]


def record(
    command: Sequence[str],
    output: str | os.PathLike[str],
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run ``command`` under ``valgrind --tool=lackey --trace-mem=yes`` and convert its trace on the fly
    (through a pipe; the text trace is never written). Lackey runs programs thousands of times slower."""
    from tierkit import TierkitError

    if not command:
        raise TierkitError("no command given; usage: tierkit trace record -o OUT -- CMD ARGS")
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise TierkitError(
            "valgrind is not installed; install it first (Debian/Ubuntu: `apt-get install valgrind`; "
            "see the README's Traces section)"
        )
    if warn is not None:
        warn(
            "recording under valgrind lackey: the program runs thousands of times slower than natively "
            "(keep its input small)"
        )
    rfd, wfd = os.pipe()
    try:
        proc = subprocess.Popen(
            [valgrind, "--tool=lackey", "--trace-mem=yes", f"--log-fd={wfd}", "--", *command],
            pass_fds=(wfd,),
        )
    except OSError as err:
        os.close(rfd)
        os.close(wfd)
        raise TierkitError(f"cannot start valgrind: {err.strerror or err}") from None
    os.close(wfd)
    try:
        stats = import_trace("lackey", f"/dev/fd/{rfd}", output)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        os.close(rfd)
    rc = proc.wait()
    if rc != 0:
        raise TierkitError(
            f"`{' '.join(command)}` exited with status {rc} under valgrind; "
            f"the trace in `{os.fspath(output)}` covers the run up to there"
        )
    return stats
