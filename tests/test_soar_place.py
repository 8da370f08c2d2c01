"""`tierkit soar place`: Soar's Algorithm 1 on a real run's flows (shim log, perf samples, perf stat)
and the placement file the shim's place mode reads."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tierkit import TierkitError
from tierkit.shimlog import read_objects
from tierkit.soarplace import P_ONE, P_STALLS, place, read_aol, write_placement

REC = struct.Struct("<B3xIQQQQ")
REPO = Path(__file__).resolve().parent.parent
CHASE, STREAM = 0xC4A5E, 0x57EA4
S = 1_000_000_000  # ns
PLACE = [sys.executable, "-m", "tierkit", "soar", "place"]


def shim_log(path: Path, records: list[tuple[int, int, int, int, int, int]]) -> Path:
    path.write_bytes(b"TKSHIM01" + struct.pack("<II", 1, 40) + b"".join(REC.pack(*r) for r in records))
    return path


def perf_line(t_ns: int, addr: int, level: str = "Local RAM or RAM hit") -> str:
    secs, frac = divmod(t_ns, S)
    return (
        f"  prog  4242 [001] {secs}.{frac // 1000:06d}:      cpu/mem-loads,ldlat=30/P:  "
        f"{addr:x}  6880144 |OP LOAD|LVL {level}|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A   312"
    )


def stat_csv(rows: list[tuple[float, float, float, float, float]]) -> str:
    """perf stat -I -x, lines: per interval (end_s, A1, A3, stalls, cycles)."""
    out = ["# started on Tue Nov 24 10:00:00 2026", ""]
    for end_s, a1, a3, stalls, cycles in rows:
        out += [
            f"{end_s:14.9f},{cycles:.0f},,cycles,1000000000,100.00,,",
            f"{end_s:14.9f},{stalls:.0f},,cycle_activity.stalls_l3_miss,1000000000,100.00,,",
            f"{end_s:14.9f},{a3:.0f},,offcore_requests.demand_data_rd,1000000000,100.00,,",
            f"{end_s:14.9f},{a1:.0f},,offcore_requests_outstanding.cycles_with_demand_data_rd,1000000000,100.00,,",
        ]
    return "\n".join(out) + "\n"


@pytest.fixture
def run(tmp_path: Path) -> dict[str, Path]:
    """A 2-second run: a 64 KiB pointer-chased list (few samples) and an 8 MiB streamed array (most
    samples), both live throughout; a 1 MiB scratch buffer of the stream's site allocated and freed
    twice, never coexisting; and one sample outside every allocation (the stack)."""
    t0 = 100 * S
    recs = [
        (1, 1, CHASE, 64 << 10, 0x10_0000, t0),
        (3, 1, STREAM, 8 << 20, 0x4000_0000, t0 + 1000),
        (1, 1, STREAM, 1 << 20, 0x8000_0000, t0 + 2000),
        (2, 1, 0, 0, 0x8000_0000, t0 + S // 2),
        (1, 1, STREAM, 1 << 20, 0x8000_0000, t0 + S),
        (2, 1, 0, 0, 0x8000_0000, t0 + S + S // 2),
    ]
    lines = ["# ========", "# captured on: Tue Nov 24 10:00:00 2026", "# ========"]
    for sec in range(2):
        base = t0 + sec * S + 10_000
        for i in range(4):  # chase: 4 samples per second
            lines.append(perf_line(base + i * 1000, 0x10_0000 + i * 4096 + 64))
        for i in range(196):  # stream: 196 samples per second
            lines.append(perf_line(base + 10_000 + i * 1000, 0x4000_0000 + i * 40_000))
        lines.append(perf_line(base + 500_000, 0x8000_0000 + 4096, "L1 hit"))  # not an LLC miss
        lines.append(perf_line(base + 600_000, 0x7FFF_0000_0000))  # the stack
    samples = tmp_path / "samples.txt"
    samples.write_text("\n".join(lines) + "\n")
    # low AOL (30 cycles: high MLP, a stream dominates), P = 0.4
    counters = tmp_path / "stat.csv"
    counters.write_text(stat_csv([(1.0, 30e6, 1e6, 4e8, 1e9), (2.0, 30e6, 1e6, 4e8, 1e9)]))
    return {"log": shim_log(tmp_path / "prof.bin", recs), "samples": samples, "counters": counters}


def site(res: dict, h: int) -> dict:
    return next(s for s in res["sites"] if s["site"] == f"{h:016x}")


def test_the_chased_site_ranks_first_and_takes_the_fast_tier(run: dict[str, Path]) -> None:
    res = place(run["log"], run["samples"], 1 << 20, aol=run["counters"])
    chase, stream = site(res, CHASE), site(res, STREAM)
    assert (chase["samples"], stream["samples"]) == (8, 392)
    assert res["unmatched_samples"] == 2
    assert res["matched_samples"] == 400
    # Algorithm 1 at AOL 30 < L0 = 100: R = 0.02 < R_min -> x F(30) = 2; R = 0.98 > R_max -> / 8
    assert chase["score"] == pytest.approx(2 * 0.02 * 0.4 * 2)
    assert stream["score"] == pytest.approx(2 * 0.98 * 0.4 / 8)
    assert chase["unit_score"] > stream["unit_score"]
    assert (chase["rank"], chase["fast"]) == (1, True)
    assert stream["fast"] is False, "8 MiB + scratch does not fit in 1 MiB"
    # the stream's two scratch buffers never coexist: its peak is 8 + 1 MiB, not 8 + 2
    assert stream["peak_bytes"] == (8 << 20) + (1 << 20)
    assert stream["bytes"] == (8 << 20) + (2 << 20)


def test_without_counters_the_score_is_the_share_of_samples(run: dict[str, Path]) -> None:
    res = place(run["log"], run["samples"], 64 << 20)
    assert any("no --aol" in n for n in res["notes"])
    assert res["p_model"] == P_ONE
    assert res["aol"] is None
    assert site(res, CHASE)["score"] == pytest.approx(2 * 0.02)
    assert site(res, STREAM)["score"] == pytest.approx(2 * 0.98)
    # both fit now: both fast
    assert all(s["fast"] for s in res["sites"])


def test_high_aol_removes_the_mlp_adjustment(run: dict[str, Path], tmp_path: Path) -> None:
    slow = tmp_path / "slow.csv"
    slow.write_text(stat_csv([(1.0, 150e6, 1e6, 4e8, 1e9), (2.0, 150e6, 1e6, 4e8, 1e9)]))
    res = place(run["log"], run["samples"], 1 << 20, aol=slow)
    # AOL 150 >= L0: R p for both (Algorithm 1's last branch)
    assert site(res, CHASE)["score"] == pytest.approx(2 * 0.02 * 0.4)
    assert site(res, STREAM)["score"] == pytest.approx(2 * 0.98 * 0.4)


PLACEMENT_LINE = re.compile(r"^[0-9a-f]{16} node:[0-9]+$")  # the shim's `SITE node:N` (shim/README.md)


def placement_body(path: Path) -> list[str]:
    """The non-comment lines of a placement file; each must be exactly `SITEHEX node:N`."""
    body = [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]
    assert all(PLACEMENT_LINE.match(ln) for ln in body), body
    return body


def test_the_cli_writes_a_placement_file(run: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "place.txt"
    args = [str(run["log"]), "--samples", str(run["samples"]), "--aol", str(run["counters"])]
    proc = subprocess.run(
        [*PLACE, *args, "--fast-bytes", "1M", "-o", str(out), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["placement"] == str(out)
    assert res["p_model"] == P_STALLS
    assert res["aol"]["format"] == "perf stat"
    assert [(s["site"], s["rank"], s["node"]) for s in res["sites"]] == [
        (f"{CHASE:016x}", 1, 0),
        (f"{STREAM:016x}", 2, 1),
    ]
    text = out.read_text()
    assert text.startswith("# tierkit soar place: Soar/Alto (OSDI'25) Algorithm 1")
    assert placement_body(out) == [f"{CHASE:016x} node:0", f"{STREAM:016x} node:1"]
    # the table, other nodes, and the old flag name
    proc = subprocess.run(
        [
            *PLACE,
            *args[:3],
            "--counters",
            args[4],
            "--fast-bytes",
            "1M",
            "-o",
            str(out),
            "--fast-node",
            "2",
            "--slow-node",
            "3",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    header, first, second = proc.stdout.splitlines()[:3]
    assert header.split() == [
        "site",
        "objects",
        "bytes",
        "peak_bytes",
        "samples",
        "score",
        "unit_score",
        "rank",
        "node",
    ]
    assert first.split()[0] == f"{CHASE:016x}"
    assert first.split()[-2:] == ["1", "node:2"]
    assert second.split()[-2:] == ["2", "node:3"]
    assert "1 of 2 sites to the fast tier (node 2)" in proc.stdout
    assert placement_body(out) == [f"{CHASE:016x} node:2", f"{STREAM:016x} node:3"]


def test_the_peak_concurrent_size_counts_objects_that_never_coexist_once(run: dict[str, Path]) -> None:
    # chase 64 KiB + stream 8 MiB + one scratch MiB at a time: fits, although the stream site
    # allocates 10 MiB in all
    room = (64 << 10) + (8 << 20) + (1 << 20)
    res = place(run["log"], run["samples"], room, aol=run["counters"])
    assert [s["fast"] for s in res["sites"]] == [True, True]
    assert site(res, STREAM)["bytes"] == (10 << 20)
    res = place(run["log"], run["samples"], room - 1, aol=run["counters"])
    assert [s["fast"] for s in res["sites"]] == [True, False]


def aol_only_stat(rows: list[tuple[float, float, float]]) -> str:
    """perf stat -I -x, with only A1 and A3 (a host without cycle_activity.stalls_l3_miss)."""
    out = []
    for end_s, a1, a3 in rows:
        out += [
            f"{end_s:14.9f},{a3:.0f},,cpu/offcore_requests.demand_data_rd/,1000000000,100.00,,",
            f"{end_s:14.9f},{a1:.0f},,cpu/offcore_requests_outstanding.cycles_with_demand_data_rd/,1000000000,100.00,,",
            f"{end_s:14.9f},<not supported>,,cycle_activity.stalls_l3_miss,0,100.00,,",
        ]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("perf stat", aol_only_stat([(1.0, 30e6, 1e6), (2.0, 30e6, 1e6)])),
        ("aol csv", "time_s,aol_cycles\n1.0,30\n2.0,30\n"),
        ("aol csv", "# no header\n1.0,30.0\n2.0,30.0\n"),
    ],
)
def test_an_aol_without_stall_counts_keeps_algorithm_1s_branches_with_p_1(
    run: dict[str, Path], tmp_path: Path, fmt: str, text: str
) -> None:
    f = tmp_path / "aol.csv"
    f.write_text(text)
    af = read_aol(f)
    assert (af.format, af.has_p, len(af.intervals)) == (fmt, False, 2)
    res = place(run["log"], run["samples"], 1 << 20, aol=f)
    assert res["p_model"] == P_ONE
    assert any("p = 1" in n for n in res["notes"])
    # AOL 30 < L0: x F(30) = 2 for the rare chase, / 8 for the dominant stream, p = 1
    assert site(res, CHASE)["score"] == pytest.approx(2 * 0.02 * 2)
    assert site(res, STREAM)["score"] == pytest.approx(2 * 0.98 / 8)
    assert site(res, CHASE)["fast"]
    assert not site(res, STREAM)["fast"]


def test_the_aol_bands_and_l0_come_from_flags(run: dict[str, Path], tmp_path: Path) -> None:
    f = tmp_path / "aol.csv"
    f.write_text("time_s,aol_cycles\n1.0,60\n2.0,60\n")
    # Skylake bands 40-100: F(60) = 4
    assert site(place(run["log"], run["samples"], 1 << 20, aol=f), CHASE)["score"] == pytest.approx(
        2 * 0.02 * 4
    )
    # bands 20-65: AOL 60 is in the top band, F = 8 (L0 follows AOL_high: 65 > 60)
    res = place(run["log"], run["samples"], 1 << 20, aol=f, aol_low=20, aol_high=65)
    assert site(res, CHASE)["score"] == pytest.approx(2 * 0.02 * 8)
    # bands 58-100: the bottom band, F = 2
    res2 = place(run["log"], run["samples"], 1 << 20, aol=f, aol_low=58)
    assert site(res2, CHASE)["score"] == pytest.approx(2 * 0.02 * 2)
    assert res["l0_cycles"] == 65
    # L0 = 50 <= AOL: no MLP adjustment, R p
    res = place(run["log"], run["samples"], 1 << 20, aol=f, l0=50)
    assert site(res, CHASE)["score"] == pytest.approx(2 * 0.02)
    assert site(res, STREAM)["score"] == pytest.approx(2 * 0.98)


def place_cli(paths: dict[str, Path], out: Path) -> subprocess.CompletedProcess[str]:
    """`tierkit soar place` on the log, samples and counters in `paths`, 1 MiB fast, to `out`."""
    args = [str(paths["log"]), "--samples", str(paths["samples"]), "--aol", str(paths["counters"])]
    return subprocess.run(
        [*PLACE, *args, "--fast-bytes", "1M", "-o", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (
            {"samples": "  prog 1 [0] 1.5: ev: zz 1 |OP LOAD|LVL RAM hit|\n"},
            r"samples\.txt: line 1: bad hex data address",
        ),
        ({"samples": "# only comments\n"}, "no LLC-miss samples"),
        (
            {"samples": perf_line(5 * S, 0x10_0000) + "\n"},
            "none of its 1 LLC-miss samples falls in an allocation",
        ),
        ({"counters": "1.0,5,,cycles\nnot,a,row,here\n"}, r"stat\.csv: line 2: bad interval time `not`"),
        (
            {"counters": "1.0,5,,cycles,1,100,,\n"},
            "offcore_requests_outstanding.cycles_with_demand_data_rd and "
            "offcore_requests.demand_data_rd never counted",
        ),
        ({"log": b"TKSHIM01" + struct.pack("<II", 1, 40)}, "holds no allocations"),
        (
            {"counters": "time_s,aol_cycles\n1.0,30\n2.0,lots\n"},
            r"stat\.csv: line 3: expected `time_s,aol_cycles`",
        ),
        ({"counters": "1.0,30\n0.5,30\n"}, r"stat\.csv: line 2: times must increase"),
        ({"counters": ""}, r"stat\.csv: no intervals in the file"),
    ],
)
def test_bad_inputs_name_the_file_and_line(
    run: dict[str, Path], tmp_path: Path, change: dict, fragment: str
) -> None:
    paths = dict(run)
    for key, text in change.items():
        p = tmp_path / f"bad-{paths[key].name}"
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)
        paths[key] = p
    with pytest.raises(TierkitError, match=fragment):
        place(paths["log"], paths["samples"], 1 << 20, aol=paths["counters"])
    proc = place_cli(paths, tmp_path / "p.txt")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert re.search(fragment, proc.stderr), proc.stderr


@pytest.mark.parametrize("key", ["log", "samples", "counters"])
def test_a_missing_input_is_named(run: dict[str, Path], tmp_path: Path, key: str) -> None:
    paths = {**run, key: tmp_path / "nowhere" / f"missing-{key}"}
    proc = place_cli(paths, tmp_path / "p.txt")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert f"missing-{key}" in proc.stderr
    assert not (tmp_path / "p.txt").exists()


def test_sizes_and_counter_names(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tierkit", "soar", "place", "x", "--samples", "y", "--fast-bytes", "lots"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "`lots` is not a size" in proc.stderr
    p = tmp_path / "s.csv"
    p.write_text(
        "1.000,10,,cpu_core/cycles/,1,100,,\n1.000,4,,cpu/cycle_activity.stalls_l3_miss/,1,100,,\n"
        "1.000,2,,offcore_requests.demand_data_rd:u,1,100,,\n"
        "1.000,<not counted>,,offcore_requests_outstanding.cycles_with_demand_data_rd,0,0,,\n"
        "2.000,10,,cpu_core/cycles/,1,100,,\n2.000,4,,cpu/cycle_activity.stalls_l3_miss/,1,100,,\n"
        "2.000,2,,offcore_requests.demand_data_rd:u,1,100,,\n"
        "2.000,70,,cpu_core/offcore_requests_outstanding.cycles_with_demand_data_rd/,1,100,,\n"
    )
    af = read_aol(p)
    assert (af.format, af.has_p) == ("perf stat", True)
    first, second = af.intervals
    assert first.end_s == 1.0
    assert first.counters is None, "an event <not counted> in it"
    assert second.counters == (70.0, 2.0, 4.0, 10.0)
    # A1 never counted: no AOL at all
    p.write_text(
        "1.000,<not counted>,,offcore_requests_outstanding.cycles_with_demand_data_rd,0,0,,\n"
        + "1.000,2,,offcore_requests.demand_data_rd,1,100,,\n"
    )
    with pytest.raises(
        TierkitError, match=r"offcore_requests_outstanding\.cycles_with_demand_data_rd never counted"
    ):
        read_aol(p)
    # the occupancy event (A2) in A1's place: refused, naming the difference
    p.write_text(
        "1.000,40,,offcore_requests_outstanding.demand_data_rd,1,100,,\n"
        + "1.000,2,,offcore_requests.demand_data_rd,1,100,,\n"
    )
    with pytest.raises(TierkitError, match=r"occupancy, A2 of Soar/Alto Table 1.*cmask=1"):
        read_aol(p)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
def test_the_shim_reads_the_placement_file_and_binds_the_fast_site(tmp_path: Path) -> None:
    """End to end with the real shim: profile `shim_test sites` (a 3 MiB site A and a 5 MiB site
    B), make samples that hit A more per byte, place with room for A only, and run place mode with
    the file: the shim binds A (MPOL_PREFERRED to the fast node) and leaves B to the real
    allocator. Then the full file the CLI writes for this host's one node (--slow-node 0 too):
    the shim's parser takes every line and binds both sites."""
    build = tmp_path / "shim"
    subprocess.run(["make", "-s", "-C", str(REPO / "shim"), f"BUILD={build}", "all"], check=True)
    so = build / "libtierkit_shim.so"
    env = dict(
        os.environ, TIERKIT_SHIM_MODE="profile", TIERKIT_SHIM_LOG=str(tmp_path / "p.bin"), LD_PRELOAD=str(so)
    )
    subprocess.run([str(build / "shim_test"), "sites"], env=env, check=True, capture_output=True)
    objs = read_objects(tmp_path / "p.bin")
    a = next(o for o in objs if o.size == 3 << 20)
    b = next(o for o in objs if o.size == 5 << 20)
    lines = [perf_line(a.alloc_ns + 1000 * (i + 2), a.address + i * 4096) for i in range(20)]
    lines += [perf_line(b.alloc_ns + 1000 * (i + 2), b.address + i * 4096) for i in range(10)]
    (tmp_path / "s.txt").write_text("\n".join(lines) + "\n")
    out = tmp_path / "place.txt"
    args = [str(tmp_path / "p.bin"), "--samples", str(tmp_path / "s.txt"), "--fast-bytes", "4M"]
    proc = subprocess.run(
        [*PLACE, *args, "-o", str(out), "--json"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "no --aol" in proc.stderr  # the note
    body = placement_body(out)
    assert f"{a.site:016x} node:0" in body
    assert f"{b.site:016x} node:1" in body
    res = json.loads(proc.stdout)
    assert any("no --aol" in n for n in res["notes"])

    def sites_run(placement: Path) -> dict[str, str]:
        env = dict(
            os.environ, TIERKIT_SHIM_MODE="place", TIERKIT_SHIM_PLACEMENT=str(placement), LD_PRELOAD=str(so)
        )
        r = subprocess.run(
            [str(build / "shim_test"), "sites"], env=env, check=False, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        return dict(x.split("=", 1) for x in r.stdout.split() if "=" in x)

    fast_only = tmp_path / "fast-only.txt"
    write_placement(fast_only, {**res, "sites": [s for s in res["sites"] if s["fast"]]})
    kv = sites_run(fast_only)
    assert kv["a_mode"] == "1", kv  # MPOL_PREFERRED: the shim bound site A
    assert kv["b_mode"] == "0", kv  # site B left to the real allocator
    proc = subprocess.run(
        [*PLACE, *args, "-o", str(out), "--slow-node", "0"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    kv = sites_run(out)
    assert (kv["a_mode"], kv["b_mode"]) == ("1", "1"), kv
    assert kv["a_node0"] == kv["a_pages"], kv
    assert kv["b_node0"] == kv["b_pages"], kv
