"""Progress bars on stderr (rich), fed by the core's ``progress(sim_s_done, sim_s_total)`` callback."""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


def stderr_is_terminal() -> bool:
    """True when stderr is an interactive terminal (progress bars are drawn only then)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class RunProgress:
    """A throttled, lazily shown progress bar for one run.

    Use as a context manager and pass the object itself as the core's progress callback. The bar
    appears only after ``delay_s`` of wall time (short runs stay silent), is redrawn at most every
    ``interval_s`` and disappears when the run ends.
    """

    def __init__(self, label: str, delay_s: float = 0.5, interval_s: float = 0.1) -> None:
        self.label = label
        self.delay_s = delay_s
        self.interval_s = interval_s
        self._start = time.monotonic()
        self._last_draw = 0.0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> RunProgress:
        self._start = time.monotonic()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __call__(self, done: float, total: float) -> None:
        now = time.monotonic()
        if now - self._start < self.delay_s or now - self._last_draw < self.interval_s:
            return
        self._last_draw = now
        if self._progress is None:
            self._open(total)
        assert self._progress is not None
        assert self._task is not None
        self._progress.update(self._task, completed=min(done, total), total=max(total, 1e-12))

    def _open(self, total: float) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:.2f}/{task.total:.2f} sim s"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(file=sys.stderr),
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task(self.label, total=max(total, 1e-12))
