"""Soar on a real host (``tierkit soar place``): from one profiled run to the shim's placement file.

Soar/Alto (OSDI'25) §4.1 gathers three flows in one profiling run; here they come from:

* the **object flow**: the allocation shim's profile log (``TIERKIT_SHIM_MODE=profile``, TKSHIM01,
  read by :mod:`tierkit.shimlog`);
* the **memory-access flow**: LLC-miss samples, ``perf mem record -k mono`` printed with
  ``perf script -F time,event,addr,data_src,weight`` (only samples served past the LLC count;
  ``-k mono`` puts perf's times on CLOCK_MONOTONIC, the shim's clock);
* the **performance flow** (optional): ``perf stat -I 1000 -x, -e cycles,
  cycle_activity.stalls_l3_miss, offcore_requests.demand_data_rd,
  offcore_requests_outstanding.demand_data_rd``: per interval AOL = A1/A3 and P = stalls/cycles.

Scoring (Algorithm 1), ranking by unit score and the fast-tier selection by peak concurrent size run
in Rust (``tierkit_policies::soar_flows``), the same Algorithm 1 as the simulator's Soar.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tierkit import TierkitError
from tierkit.shimlog import ShimObject, read_objects

# perf stat event name -> the counter it gives (A1, A3: Soar/Alto §3.1; P = stalls / cycles §3.2)
EVENTS = {
    "offcore_requests_outstanding.demand_data_rd": "a1",
    "offcore_requests.demand_data_rd": "a3",
    "cycle_activity.stalls_l3_miss": "stalls",
    "cycles": "cycles",
    "cpu-cycles": "cycles",
}
NEEDED = ("a1", "a3", "stalls", "cycles")


@dataclass(frozen=True)
class CounterInterval:
    """One ``perf stat -I`` interval: its end in seconds after perf stat started, and the four
    counters (None when one of them was not counted in it)."""

    end_s: float
    counters: tuple[float, float, float, float] | None


def _event_key(name: str) -> str | None:
    """The counter an event name gives: ``cpu/cycles/``, ``cpu_core/cycles/``, ``cycles:u`` and
    ``offcore_requests.demand_data_rd`` all map; anything else is None."""
    n = name.strip().lower()
    if n.endswith("/"):
        n = n[:-1]
    n = n.rsplit("/", 1)[-1]
    n = n.split(":", 1)[0]
    return EVENTS.get(n)


def read_counters(path: str | os.PathLike[str]) -> list[CounterInterval]:
    """Parse ``perf stat -I MS -x,`` output (CSV: time, value, unit, event, ...). Raises
    :class:`TierkitError` naming the line of anything malformed, and when an event Soar needs is
    never counted."""
    p = Path(path)
    try:
        text = p.read_text(errors="replace")
    except OSError as err:
        raise TierkitError(f"{p}: cannot read the counters: {err.strerror or err}") from None
    rows: dict[float, dict[str, float | None]] = {}
    seen: set[str] = set()
    for no, line in enumerate(text.splitlines(), 1):
        t = line.strip()
        if not t or t.startswith("#"):
            continue
        f = [x.strip() for x in t.split(",")]
        if len(f) < 4:
            raise TierkitError(
                f"{p}: line {no}: expected `perf stat -I MS -x,` CSV (time,value,unit,event,...), "
                f"got `{t[:80]}`"
            )
        try:
            when = float(f[0])
        except ValueError:
            raise TierkitError(f"{p}: line {no}: bad interval time `{f[0]}` (expected seconds)") from None
        key = _event_key(f[3])
        if key is None:
            continue
        seen.add(key)
        value: float | None
        if f[1].startswith("<"):  # <not counted>, <not supported>
            value = None
        else:
            try:
                value = float(f[1])
            except ValueError:
                raise TierkitError(f"{p}: line {no}: bad counter value `{f[1]}` for {f[3]}") from None
        rows.setdefault(when, {})[key] = value
    missing = [k for k in NEEDED if k not in seen]
    if not rows or missing:
        names = {v: k for k, v in EVENTS.items() if k != "cpu-cycles"}
        raise TierkitError(
            f"{p}: no {', '.join(names[k] for k in missing) or 'counters'} in the file; record with "
            f"`perf stat -I 1000 -x, -e {','.join(names[k] for k in NEEDED)}`"
        )
    out = []
    for when in sorted(rows):
        r = rows[when]
        vals = [r.get(k) for k in NEEDED]
        counters = None if any(v is None for v in vals) else tuple(float(v or 0.0) for v in vals)
        out.append(CounterInterval(when, counters))  # type: ignore[arg-type]
    return out


def _intervals(
    objects: list[ShimObject],
    counters: list[CounterInterval] | None,
    interval_ms: float,
    start_ns: int | None,
    end_ns: int,
) -> tuple[list[tuple[int, tuple[float, float, float, float] | None]], int]:
    """Interval ends in ns on the shim's clock. perf stat's times count from its own start, taken
    to be the profiled program's first shim record unless ``start_ns`` says otherwise."""
    t0 = start_ns if start_ns is not None else min(o.alloc_ns for o in objects)
    if counters is not None:
        return [(t0 + round(c.end_s * 1e9), c.counters) for c in counters], t0
    step = max(1, round(interval_ms * 1e6))
    ivs = []
    t = t0 + step
    while True:
        ivs.append((t, None))
        if t > end_ns:
            break
        t += step
    return ivs, t0


def place(
    log: str | os.PathLike[str],
    samples: str | os.PathLike[str],
    fast_bytes: int,
    counters: str | os.PathLike[str] | None = None,
    calibration: str | os.PathLike[str] | None = None,
    interval_ms: float = 1000.0,
    start_ns: int | None = None,
    r_min: float = 0.03,
    r_max: float = 0.7,
    hot_factor: float = 8.0,
    l0: float = 0.0,
) -> dict[str, Any]:
    """Score the shim log's allocation sites with Soar's Algorithm 1 and choose those for the fast
    tier. Returns the Rust side's result (``sites``: rows in rank order with ``fast``; sample
    accounting) plus ``notes``. Raises :class:`TierkitError` on bad input."""
    from tierkit import _core_module

    if fast_bytes < 0:
        raise TierkitError(f"--fast-bytes must be at least 0, got {fast_bytes}")
    objs = read_objects(log)
    if not objs:
        raise TierkitError(f"{log}: the shim log holds no allocations (was TIERKIT_SHIM_MODE=profile set?)")
    notes: list[str] = []
    cal = None
    if calibration is not None:
        try:
            c = json.loads(Path(calibration).read_text())
            cal = (
                float(c["aol_low_cycles"]),
                float(c["aol_high_cycles"]),
                float(c["k_a"]),
                float(c["k_b"]),
            )
        except OSError as err:
            raise TierkitError(f"{calibration}: cannot read: {err.strerror or err}") from None
        except (ValueError, KeyError, TypeError) as err:
            raise TierkitError(
                f"{calibration}: expected the JSON `tierkit calibrate` writes "
                f"(aol_low_cycles, aol_high_cycles, k_a, k_b): {err}"
            ) from None
    ctr = read_counters(counters) if counters is not None else None
    if ctr is None:
        notes.append(
            "no --counters: each interval's score is the site's share of its samples (p = 1, no "
            "AOL-based MLP adjustment of Algorithm 1)"
        )
    elif any(c.counters is None for c in ctr):
        n = sum(c.counters is None for c in ctr)
        notes.append(f"{n} of {len(ctr)} counter intervals lack an event (<not counted>): they score nothing")
    end = max(max(o.alloc_ns, o.free_ns or 0) for o in objs)
    ivs, _ = _intervals(objs, ctr, interval_ms, start_ns, end)
    core = _core_module()
    res: dict[str, Any] = dict(
        core.soar_place(
            [(o.site, o.address, o.size, o.alloc_ns, o.free_ns) for o in objs],
            str(samples),
            ivs,
            int(fast_bytes),
            r_min,
            r_max,
            hot_factor,
            l0,
            cal,
        )
    )
    matched = res["llc_miss_samples"] - res["unmatched_samples"]
    if matched == 0:
        raise TierkitError(
            f"{samples}: none of its {res['llc_miss_samples']} LLC-miss samples falls in an allocation of "
            f"{log} while it was live; record with `perf mem record -k mono` (the shim's clock is "
            "CLOCK_MONOTONIC) on the same run as the shim's profile"
        )
    if res["late_samples"]:
        notes.append(f"{res['late_samples']} samples after the last counter interval were scored with it")
    res["matched_samples"] = matched
    res["notes"] = notes
    res["counters"] = "perf stat" if ctr is not None else None
    res["fast_bytes"] = int(fast_bytes)
    return res


def write_placement(
    path: str | os.PathLike[str],
    result: dict[str, Any],
    fast_node: int | None = None,
    slow_node: int | None = None,
) -> None:
    """Write the shim's placement file (shim/README.md): one ``SITE TARGET`` line per site, in rank
    order; the target is ``fast``/``slow`` (the shim maps them with TIERKIT_SHIM_FAST_NODE and
    TIERKIT_SHIM_SLOW_NODE) or ``node:N`` when the nodes are given."""
    fast = f"node:{fast_node}" if fast_node is not None else "fast"
    slow = f"node:{slow_node}" if slow_node is not None else "slow"
    lines = [
        "# tierkit soar place: Soar/Alto Algorithm 1 unit-score ranking, fast tier "
        f"{result['fast_bytes']} bytes by peak concurrent size",
        "# site id (hex)      target      rank unit_score samples",
    ]
    for s in result["sites"]:
        target = fast if s["fast"] else slow
        lines.append(f"{s['site']}     {target:<10}  # {s['rank']} {s['unit_score']:.3e} {s['samples']}")
    try:
        Path(path).write_text("\n".join(lines) + "\n")
    except OSError as err:
        raise TierkitError(f"{path}: cannot write the placement file: {err.strerror or err}") from None
