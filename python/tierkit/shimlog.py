"""Reader of the allocation shim's profile log (``shim/``, LD_PRELOAD, ``TKSHIM01``).

The shim records every allocation and free of a profiled program; grouped by call-chain site this is
Soar's object flow (Soar/Alto §4.1.1: sizes and lifetimes per allocation site). The format is
documented in shim/README.md: a 16-byte header (``TKSHIM01``, u32 version 1, u32 record size 40)
and 40-byte little-endian records (kind, thread, site, size, address, CLOCK_MONOTONIC ns).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tierkit import TierkitError

if TYPE_CHECKING:
    import pandas as pd

MAGIC = b"TKSHIM01"
VERSION = 1
RECORD = struct.Struct("<B3xIQQQQ")  # kind, thread, site, size, address, time
KINDS = {1: "alloc", 2: "free", 3: "mmap", 4: "munmap"}


@dataclass(frozen=True)
class ShimObject:
    """One allocation: its site, size, address, thread and lifetime (free_ns None: never freed)."""

    site: int
    size: int
    address: int
    thread: int
    alloc_ns: int
    free_ns: int | None


def read_objects(path: str | os.PathLike[str]) -> list[ShimObject]:
    """Parse a profile log into allocations with lifetimes: an alloc (or mmap) lives until the next
    free (or munmap) of the same address. Raises :class:`TierkitError` naming the byte offset of any
    malformed part."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as err:
        raise TierkitError(f"{p}: cannot read the shim log: {err.strerror or err}") from None
    if len(data) < 16:
        raise TierkitError(f"{p}: byte 0: not a shim log (shorter than its 16-byte header)")
    if data[:8] != MAGIC:
        raise TierkitError(f"{p}: byte 0: not a shim log (expected magic TKSHIM01, got {data[:8]!r})")
    version, size = struct.unpack_from("<II", data, 8)
    if version != VERSION:
        raise TierkitError(f"{p}: byte 8: shim log version {version}; this tierkit reads version {VERSION}")
    if size != RECORD.size:
        raise TierkitError(f"{p}: byte 12: record size {size}; expected {RECORD.size}")
    body = len(data) - 16
    if body % RECORD.size:
        at = 16 + body - body % RECORD.size
        raise TierkitError(f"{p}: byte {at}: truncated record ({body % RECORD.size} of {RECORD.size} bytes)")
    live: dict[int, ShimObject] = {}
    done: list[ShimObject] = []
    for off in range(16, len(data), RECORD.size):
        kind, thread, site, nbytes, address, t = RECORD.unpack_from(data, off)
        if kind not in KINDS:
            raise TierkitError(f"{p}: byte {off}: unknown record kind {kind} (expected 1-4)")
        if kind in (1, 3):
            old = live.pop(address, None)
            if old is not None:  # reused without a recorded free: close the old one here
                done.append(ShimObject(old.site, old.size, old.address, old.thread, old.alloc_ns, t))
            live[address] = ShimObject(site, nbytes, address, thread, t, None)
        else:
            old = live.pop(address, None)
            if old is not None:
                done.append(ShimObject(old.site, old.size, old.address, old.thread, old.alloc_ns, t))
    done.extend(live.values())
    done.sort(key=lambda o: (o.alloc_ns, o.address))
    return done


def sites(objects: list[ShimObject]) -> pd.DataFrame:
    """Soar's object flow per allocation site: allocations, total and peak live bytes, first
    allocation (seconds after the log's first) and mean lifetime (still-live objects end at the last
    record's time), in first-touch order."""
    import pandas as pd

    if not objects:
        return pd.DataFrame(
            columns=["site", "count", "bytes", "peak_live_bytes", "first_alloc_s", "mean_lifetime_s", "freed"]
        )
    end = max(max(o.alloc_ns, o.free_ns or 0) for o in objects)
    start = min(o.alloc_ns for o in objects)
    rows = []
    for site in dict.fromkeys(o.site for o in objects):
        mine = [o for o in objects if o.site == site]
        events = sorted(
            [(o.alloc_ns, o.size) for o in mine] + [(o.free_ns, -o.size) for o in mine if o.free_ns]
        )
        live = peak = 0
        for _, delta in events:
            live += delta
            peak = max(peak, live)
        rows.append(
            {
                "site": f"{site:016x}",
                "count": len(mine),
                "bytes": sum(o.size for o in mine),
                "peak_live_bytes": peak,
                "first_alloc_s": (min(o.alloc_ns for o in mine) - start) / 1e9,
                "mean_lifetime_s": sum(((o.free_ns or end) - o.alloc_ns) for o in mine) / len(mine) / 1e9,
                "freed": sum(o.free_ns is not None for o in mine),
            }
        )
    return pd.DataFrame(rows)
