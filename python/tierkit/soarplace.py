"""Soar on a real host (``tierkit soar place``): from one profiled run to the shim's placement file.

Soar/Alto (OSDI'25) §4.1 gathers three flows in one profiling run; here they come from:

* the **object flow**: the allocation shim's profile log (``TIERKIT_SHIM_MODE=profile``, TKSHIM01,
  read by :mod:`tierkit.shimlog`);
* the **memory-access flow**: LLC-miss samples, ``perf mem record -k mono`` printed with
  ``perf script -F time,event,addr,data_src,weight`` (only samples served past the LLC count;
  ``-k mono`` puts perf's times on CLOCK_MONOTONIC, the shim's clock);
* the **performance flow** (optional, ``--aol``): ``perf stat -I 1000 -x, -e cycles,
  cycle_activity.stalls_l3_miss, offcore_requests.demand_data_rd,
  offcore_requests_outstanding.cycles_with_demand_data_rd`` (on Ice Lake, which lacks it, the
  occupancy event with cmask=1 under that name: :data:`A1_ICELAKE`): per interval AOL = A1/A3 and
  P = stalls/cycles (without the stall events, or from a ``time_s,aol_cycles`` file: the AOL alone,
  p = 1).

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

# perf stat event name -> the counter it gives (Soar/Alto Table 1: A1 = cycles with demand reads
# pending, A2 = their occupancy, A3 = requests; AOL = A1/A3; P = stalls / cycles §3.2). Ice Lake has
# no CYCLES_WITH_DEMAND_DATA_RD event: A1 is the occupancy event with cmask=1 there (Intel's
# Ice Lake-X metrics count it so), counted under A1's name with perf's name= term (a comma-free
# event name, as perf stat -x, needs).
A1_ICELAKE = "cpu/event=0x60,umask=0x1,cmask=1,name=offcore_requests_outstanding.cycles_with_demand_data_rd/"
EVENTS = {
    "offcore_requests_outstanding.cycles_with_demand_data_rd": "a1",
    "offcore_requests_outstanding.demand_data_rd": "a2",
    "offcore_requests.demand_data_rd": "a3",
    "cycle_activity.stalls_l3_miss": "stalls",
    "cycles": "cycles",
    "cpu-cycles": "cycles",
}
NEEDED = ("a1", "a3", "stalls", "cycles")
# the counter -> its event name in perf stat's command line and messages
EVENT_NAMES = {key: name for name, key in EVENTS.items() if name != "cpu-cycles" and key != "a2"}
PERF_STAT = "perf stat -I 1000 -x, -e " + ",".join(EVENT_NAMES[k] for k in NEEDED)

# How an --aol file gives each interval's predicted slowdown p (Algorithm 1's p).
P_STALLS = "stalls/cycles"  # perf stat with all four events: p = P = s_LLC / c
P_STALLS_K = "stalls/cycles x K(AOL)"  # ... and --calibration: p = P K(AOL) (Soar/Alto §3.2)
P_ONE = "1"  # AOL only (A1/A3, or a time_s,aol_cycles file): p = 1, the R/AOL branches still apply


@dataclass(frozen=True)
class CounterInterval:
    """One interval of the performance flow: its end in seconds after perf stat started, and the
    counters (A1, A3, stalls, cycles), None when an event was not counted in it. When the file
    gives no stall counts (an AOL-only file), stalls = cycles = 1 (p = 1); a ``time_s,aol_cycles``
    file gives (AOL, 1, 1, 1): l = A1/A3 = AOL."""

    end_s: float
    counters: tuple[float, float, float, float] | None


@dataclass(frozen=True)
class AolFile:
    """An --aol file: its intervals, its format and whether it gives P (stall counts)."""

    intervals: list[CounterInterval]
    format: str  # "perf stat" or "aol csv"
    has_p: bool


def _event_key(name: str) -> str | None:
    """The counter an event name gives: ``cpu/cycles/``, ``cpu_core/cycles/``, ``cycles:u`` and
    ``offcore_requests.demand_data_rd`` all map; anything else is None."""
    n = name.strip().lower()
    if n.endswith("/"):
        n = n[:-1]
    n = n.rsplit("/", 1)[-1]
    n = n.split(":", 1)[0]
    return EVENTS.get(n)


def _data_lines(text: str) -> list[tuple[int, str]]:
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        t = line.strip()
        if t and not t.startswith("#"):
            out.append((no, t))
    return out


def read_aol(path: str | os.PathLike[str]) -> AolFile:
    """Read an --aol file, in either format (told apart by the first data line's field count):

    * ``perf stat -I MS -x,`` output (time,value,unit,event,...): A1 =
      offcore_requests_outstanding.cycles_with_demand_data_rd (on Ice Lake the occupancy event
      with cmask=1) and A3 = offcore_requests.demand_data_rd give
      AOL = A1/A3 per interval; cycles and cycle_activity.stalls_l3_miss, when counted, give P;
    * ``time_s,aol_cycles`` lines (an optional header line first): each interval's end in seconds
      since the profiled run started and its AOL in cycles.

    Raises :class:`TierkitError` naming the line of anything malformed, and when the file has no
    AOL (A1 or A3 never counted)."""
    p = Path(path)
    try:
        text = p.read_text(errors="replace")
    except OSError as err:
        raise TierkitError(f"{p}: cannot read the AOL file: {err.strerror or err}") from None
    lines = _data_lines(text)
    if not lines:
        raise TierkitError(
            f"{p}: no intervals in the file; expected `{PERF_STAT}` output or `time_s,aol_cycles` lines"
        )
    if len(lines[0][1].split(",")) == 2:
        return _read_aol_csv(p, lines)
    return _read_perf_stat(p, lines)


def _read_aol_csv(p: Path, lines: list[tuple[int, str]]) -> AolFile:
    out = []
    last = -1.0
    for k, (no, t) in enumerate(lines):
        f = [x.strip() for x in t.split(",")]
        if k == 0 and f[0].lower().startswith("time"):
            continue  # the header
        if len(f) != 2:
            raise TierkitError(f"{p}: line {no}: expected `time_s,aol_cycles` (two fields), got `{t[:80]}`")
        try:
            end_s, aol = float(f[0]), float(f[1])
        except ValueError:
            raise TierkitError(
                f"{p}: line {no}: expected `time_s,aol_cycles` (seconds, cycles), got `{t[:80]}`"
            ) from None
        if not end_s > last or not aol > 0:
            raise TierkitError(
                f"{p}: line {no}: times must increase and the AOL be above 0 cycles, got `{t[:80]}`"
            )
        last = end_s
        out.append(CounterInterval(end_s, (aol, 1.0, 1.0, 1.0)))
    if not out:
        raise TierkitError(f"{p}: no intervals after the header; expected `time_s,aol_cycles` lines")
    return AolFile(out, "aol csv", has_p=False)


def _read_perf_stat(p: Path, lines: list[tuple[int, str]]) -> AolFile:
    rows: dict[float, dict[str, float | None]] = {}
    counted: set[str] = set()
    for no, t in lines:
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
        value: float | None
        if f[1].startswith("<"):  # <not counted>, <not supported>
            value = None
        else:
            try:
                value = float(f[1])
            except ValueError:
                raise TierkitError(f"{p}: line {no}: bad counter value `{f[1]}` for {f[3]}") from None
            counted.add(key)
        rows.setdefault(when, {})[key] = value
    missing = [EVENT_NAMES[k] for k in ("a1", "a3") if k not in counted]
    if missing:
        hint = ""
        if "a1" not in counted and "a2" in counted:
            hint = (
                " (offcore_requests_outstanding.demand_data_rd is the requests' occupancy, A2 of "
                "Soar/Alto Table 1, not the cycles with requests pending, A1; on Ice Lake count A1 as "
                f"`{A1_ICELAKE}`)"
            )
        raise TierkitError(
            f"{p}: {' and '.join(missing)} never counted in the file, so it gives no AOL{hint}; record "
            f"with `{PERF_STAT}` (or give `time_s,aol_cycles` lines)"
        )
    has_p = "stalls" in counted and "cycles" in counted
    keys = NEEDED if has_p else ("a1", "a3")
    out = []
    for when in sorted(rows):
        r = rows[when]
        vals = [r.get(k) for k in keys]
        counters: tuple[float, float, float, float] | None = None
        if all(v is not None for v in vals):
            a1, a3, *rest = (float(v or 0.0) for v in vals)
            stalls, cycles = rest if has_p else (1.0, 1.0)
            counters = (a1, a3, stalls, cycles)
        out.append(CounterInterval(when, counters))
    return AolFile(out, "perf stat", has_p=has_p)


def _intervals(
    objects: list[ShimObject],
    counters: list[CounterInterval] | None,
    interval_ms: float,
    start_ns: int | None,
    end_ns: int,
) -> tuple[list[tuple[int, tuple[float, float, float, float] | None]], int]:
    """Interval ends in ns on the shim's clock, and the start. The --aol file's times count from
    perf stat's start, taken to be the profiled program's first allocation unless ``start_ns``
    says otherwise; without one, ``interval_ms`` steps from there to past the last record."""
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
    aol: str | os.PathLike[str] | None = None,
    calibration: str | os.PathLike[str] | None = None,
    interval_ms: float = 1000.0,
    start_ns: int | None = None,
    r_min: float = 0.03,
    r_max: float = 0.7,
    hot_factor: float = 8.0,
    l0: float | None = None,
    aol_low: float | None = None,
    aol_high: float | None = None,
    fast_node: int = 0,
    slow_node: int = 1,
) -> dict[str, Any]:
    """Score the shim log's allocation sites with Soar's Algorithm 1 and choose those for the fast
    tier. ``aol`` is the performance flow (:func:`read_aol`); the AOL bands of ``factor`` are
    ``aol_low``/``aol_high``, else the calibration's, else the paper's Skylake 40/100 cycles; L0
    is ``l0``, else AOL_high. Returns the Rust side's result (``sites``: rows in rank order with
    ``fast`` and ``node``; sample accounting; the resolved parameters) plus ``notes``. Raises
    :class:`TierkitError` on bad input."""
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
    lo = aol_low if aol_low is not None else (cal[0] if cal else None)
    hi = aol_high if aol_high is not None else (cal[1] if cal else None)
    af = read_aol(aol) if aol is not None else None
    ctr = af.intervals if af is not None else None
    if af is None:
        p_model = P_ONE
        notes.append(
            "no --aol: the AOL is unknown, so each interval's score is the site's share of its samples "
            "(R p with p = 1, no AOL-based MLP adjustment of Algorithm 1)"
        )
    elif not af.has_p:
        p_model = P_ONE
        what = (
            "cycles and cycle_activity.stalls_l3_miss were not counted"
            if af.format == "perf stat"
            else "a time_s,aol_cycles file gives no stall counts"
        )
        notes.append(
            f"--aol {aol}: {what}, so the predicted slowdown is p = 1 in every interval (Algorithm 1's "
            "R_min/R_max and AOL < L0 branches still apply)"
            + ("; --calibration gives only the AOL bands" if cal is not None else "")
        )
    else:
        p_model = P_STALLS_K if cal is not None else P_STALLS
    if ctr is not None and any(c.counters is None for c in ctr):
        n = sum(c.counters is None for c in ctr)
        notes.append(f"{n} of {len(ctr)} AOL intervals lack an event (<not counted>): they score nothing")
    end = max(max(o.alloc_ns, o.free_ns or 0) for o in objs)
    ivs, t0 = _intervals(objs, ctr, interval_ms, start_ns, end)
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
            float(l0 or 0.0),
            cal if p_model == P_STALLS_K else None,
            lo,
            hi,
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
        notes.append(f"{res['late_samples']} samples after the last AOL interval were scored with it")
    for s in res["sites"]:
        s["node"] = fast_node if s["fast"] else slow_node
    res["matched_samples"] = matched
    res["notes"] = notes
    res["aol"] = None if af is None else {"path": str(aol), "format": af.format, "intervals": len(ctr or [])}
    res["p_model"] = p_model
    res["start_ns"] = t0
    res["intervals"] = len(ivs)
    res["fast_bytes"] = int(fast_bytes)
    res["fast_node"] = fast_node
    res["slow_node"] = slow_node
    res["inputs"] = {"log": str(log), "samples": str(samples)}
    return res


def placement_text(result: dict[str, Any]) -> str:
    """The shim's placement file (shim/README.md): a ``#`` header, then one ``SITE node:N`` line per
    site in rank order (``SITE``: the site id, 16 hex digits)."""
    fast = sum(s["fast"] for s in result["sites"])
    inputs = result.get("inputs", {})
    lines = [
        "# tierkit soar place: Soar/Alto (OSDI'25) Algorithm 1, sites by unit score; the fast tier "
        f"(node {result['fast_node']}) takes {fast} of {len(result['sites'])} sites within "
        f"{result['fast_bytes']} bytes of peak concurrent size, the rest go to node {result['slow_node']}",
        f"# log {inputs.get('log', '?')}, samples {inputs.get('samples', '?')}, "
        f"aol {result['aol']['path'] if result.get('aol') else 'none'} (p = {result.get('p_model', '?')})",
        "# site id (hex)   target",
    ]
    lines += [f"{s['site']} node:{s['node']}" for s in result["sites"]]
    return "\n".join(lines) + "\n"


def write_placement(path: str | os.PathLike[str], result: dict[str, Any]) -> None:
    """Write :func:`placement_text` of a :func:`place` result to ``path``."""
    try:
        Path(path).write_text(placement_text(result))
    except OSError as err:
        raise TierkitError(f"{path}: cannot write the placement file: {err.strerror or err}") from None
