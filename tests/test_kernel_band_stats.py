"""The real-kernel `nbtband` scenario's window cutting (band_stats in tests/kernel/guest/tests.sh),
run on the host on a recorded guest boot's samples: what the guest checks rests on it."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS_SH = ROOT / "tests" / "kernel" / "guest" / "tests.sh"
#: a 6.12 guest boot's sampler lines (uptime in centiseconds, pgpromote_success, the limit in MB/s)
SAMPLES = Path(__file__).parent / "data" / "nbtband_samples.txt"


def band_stats(samples: Path, limit_mbps: int) -> list[int]:
    if shutil.which("awk") is None:
        pytest.skip("no awk")
    script = f'eval "$(sed -n \'/^band_stats()/,/^}}/p\' {TESTS_SH})"; band_stats "$1" "$2"'
    out = subprocess.run(
        ["bash", "-c", script, "band_stats", str(samples), str(limit_mbps)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return [int(x) for x in out.split()]


def test_each_band_s_windows_on_a_recorded_boot_hold_its_limit() -> None:
    # seconds x100, promoted, per wall second, windows, median and most per window
    assert band_stats(SAMPLES, 1) == [2930, 1813, 61, 6, 259, 259]
    assert band_stats(SAMPLES, 2) == [2981, 3106, 104, 5, 519, 523]
    assert band_stats(SAMPLES, 4) == [3194, 7103, 222, 7, 1020, 1026]


def test_a_window_holds_one_second_and_never_the_next_window_or_a_band_change(tmp_path: Path) -> None:
    rows = [
        (100, 0, 1),
        (120, 0, 1),
        (140, 0, 1),
        (160, 250, 1),  # a window opens: 250, then its last 6 at 0.6 s
        (180, 250, 1),
        (220, 256, 1),
        (240, 256, 1),
        (260, 500, 1),  # more than a second after: the same burst's second window, not counted
        (280, 500, 1),
        (300, 500, 1),
        (420, 500, 1),
        (440, 756, 1),  # a third burst's first window, cut by the band change: dropped
        (460, 756, 2),
        (480, 756, 2),
    ]
    f = tmp_path / "s.txt"
    f.write_text("".join(f"{t} {s} {lim}\n" for t, s, lim in rows))
    assert band_stats(f, 1) == [340, 756, 222, 1, 256, 256]
    assert band_stats(f, 2) == [20, 0, 0, 0, -1, -1]
