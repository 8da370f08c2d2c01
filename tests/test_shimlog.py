"""The allocation shim's profile log (TKSHIM01) read into Soar's object flow."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tierkit import TierkitError
from tierkit.shimlog import read_objects, sites

REC = struct.Struct("<B3xIQQQQ")


def log(path: Path, records: list[tuple[int, int, int, int, int, int]], header: bytes | None = None) -> Path:
    head = header if header is not None else b"TKSHIM01" + struct.pack("<II", 1, 40)
    path.write_bytes(head + b"".join(REC.pack(*r) for r in records))
    return path


def test_lifetimes_and_sites(tmp_path: Path) -> None:
    a, b = 0xA11, 0xB22
    recs = [
        (1, 7, a, 4096, 0x1000, 1_000_000_000),
        (3, 7, b, 1 << 20, 0x9000, 1_500_000_000),
        (1, 8, a, 4096, 0x2000, 2_000_000_000),
        (2, 7, 0, 0, 0x1000, 3_000_000_000),
        (4, 7, 0, 0, 0x9000, 4_000_000_000),
    ]
    objs = read_objects(log(tmp_path / "p.log", recs))
    assert [(o.site, o.alloc_ns, o.free_ns) for o in objs] == [
        (a, 1_000_000_000, 3_000_000_000),
        (b, 1_500_000_000, 4_000_000_000),
        (a, 2_000_000_000, None),
    ]
    t = sites(objs).set_index("site")
    assert t.loc[f"{a:016x}", "count"] == 2
    assert t.loc[f"{a:016x}", "peak_live_bytes"] == 8192  # both alive between 2 s and 3 s
    assert t.loc[f"{a:016x}", "freed"] == 1
    assert t.loc[f"{b:016x}", "mean_lifetime_s"] == pytest.approx(2.5)
    assert list(t.index) == [f"{a:016x}", f"{b:016x}"], "first-touch order"


@pytest.mark.parametrize(
    ("header", "records", "fragment"),
    [
        (b"NOTSHIM0" + struct.pack("<II", 1, 40), [], "byte 0: not a shim log"),
        (b"TKSHIM01" + struct.pack("<II", 2, 40), [], "byte 8: shim log version 2"),
        (b"TKSHIM01" + struct.pack("<II", 1, 32), [], "byte 12: record size 32"),
        (None, [(9, 0, 0, 0, 0, 0)], "byte 16: unknown record kind 9"),
    ],
)
def test_bad_logs_name_the_byte(tmp_path: Path, header: bytes | None, records: list, fragment: str) -> None:
    with pytest.raises(TierkitError, match=fragment):
        read_objects(log(tmp_path / "bad.log", records, header))


def test_truncated_record_and_cli(tmp_path: Path) -> None:
    path = log(tmp_path / "t.log", [(1, 1, 5, 64, 0x10, 1)])
    path.write_bytes(path.read_bytes() + b"\x01\x02")
    with pytest.raises(TierkitError, match="byte 56: truncated record"):
        read_objects(path)
    good = log(tmp_path / "g.log", [(1, 1, 5, 64, 0x10, 1), (2, 1, 0, 0, 0x10, 5)])
    proc = subprocess.run(
        [sys.executable, "-m", "tierkit", "soar", "objects", str(good), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert rows[0]["count"] == 1
    assert rows[0]["bytes"] == 64
    bad = subprocess.run(
        [sys.executable, "-m", "tierkit", "soar", "objects", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.count("tierkit: error:") == 1
    assert "Traceback" not in bad.stderr
