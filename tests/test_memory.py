"""Know before allocating: a run's memory is estimated before anything is built, a run that cannot fit
is refused in one line, and `--json` states the bytes per page (docs/outputs.md, "Memory")."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import tierkit
from tests.conftest import EXPERIMENT, SHORT, run_json

ROOT = Path(__file__).resolve().parents[1]
CUSTOM = ROOT / "examples" / "custom.toml"
# A cap on the address space of the refused runs: were the refusal to fail, the run would stop at
# its first large allocation (a clean error, since allocations are fallible) instead of taking the
# machine's memory.
AS_CAP = 6 << 30

Tk = Callable[..., subprocess.CompletedProcess[str]]


def big_custom(tmp_path: Path, size_gb: int = 2000) -> Path:
    """examples/custom.toml with its streaming array at `size_gb` GiB."""
    text = CUSTOM.read_text()
    assert "size_gb = 2\n" in text
    path = tmp_path / "custom-big.toml"
    path.write_text(text.replace("size_gb = 2\n", f"size_gb = {size_gb}\n", 1))
    return path


def capped_tierkit(*args: str, cap_bytes: int = AS_CAP) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    env = {k: v for k, v in os.environ.items() if k != "TIERKIT_DEBUG"}
    return subprocess.run(
        [sys.executable, "-m", "tierkit", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
        preexec_fn=cap,
    )


def mem_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def assert_one_line_refusal(proc: subprocess.CompletedProcess[str], out: Path, size_gb: int = 2000) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("tierkit: error: "), line
    assert "Traceback" not in proc.stderr
    assert "memory allocation of" not in proc.stderr
    # the streaming array and the 1 GiB list of the second process
    gib = size_gb + 1
    footprint = f"a footprint of {gib / 1024:.2f} TiB ({gib * 262144} pages of 4 KiB)"
    assert f"custom-big.toml: {footprint}" in line, line
    assert "needs an estimated" in line, line
    assert "under `hemem`" in line, line
    assert not out.exists(), "no output: the directory made for it is removed again"
    return line


def test_a_6000_gib_footprint_is_refused_in_one_line_by_the_available_memory(tmp_path: Path) -> None:
    available = mem_available()
    # hemem: about 15 bytes a page (the machine's 1, HeMem's 14), 23.6 GB for 6001 GiB of 4 KiB
    # pages
    if available is None or available * 0.9 > 23e9:
        pytest.skip("this machine could hold the 4000 GiB run: refusal by MemAvailable not testable")
    out = tmp_path / "out"
    t = time.monotonic()
    proc = capped_tierkit("run", str(big_custom(tmp_path, 6000)), "--json", "--out", str(out))
    line = assert_one_line_refusal(proc, out, 6000)
    assert "of available memory, MemAvailable" in line, line
    assert time.monotonic() - t < 60, "refused before allocating"


def test_a_2000_gib_footprint_is_refused_in_one_line_by_max_memory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    t = time.monotonic()
    proc = capped_tierkit("run", str(big_custom(tmp_path)), "--max-memory", "6G", "--out", str(out))
    line = assert_one_line_refusal(proc, out)
    assert "the --max-memory limit of 6 GiB" in line or "MemAvailable" in line, line
    assert time.monotonic() - t < 60, "refused before allocating"


def test_a_failed_allocation_is_an_error_not_an_abort(tmp_path: Path) -> None:
    """A run that passes the check but cannot get its memory (here: a 1 GiB address-space cap, below
    the 2 GiB a 400 GiB footprint needs under hemem) ends with one line, not an abort."""
    out = tmp_path / "out"
    proc = capped_tierkit(
        "run", str(big_custom(tmp_path, 400)), "--json", "--out", str(out), cap_bytes=1 << 30
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("tierkit: error: could not allocate"), proc.stderr
    assert "not enough memory" in proc.stderr
    assert not out.exists(), "no output: the directory made for it is removed again"


@pytest.mark.parametrize("size", ["16K", "16KiB", "0.01M", "1000"])
def test_max_memory_refuses_a_small_experiment(tk: Tk, size: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = tk("run", EXPERIMENT, *SHORT, "--max-memory", size, "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "a footprint of" in proc.stderr, proc.stderr
    assert "--max-memory limit of" in proc.stderr, proc.stderr
    assert not out.exists(), "no output: the directory made for it is removed again"


def test_max_memory_above_the_estimate_runs(tk: Tk) -> None:
    proc = tk("run", EXPERIMENT, *SHORT, "--max-memory", "6GiB", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["memory_estimate_bytes"] < 6 << 30


@pytest.mark.parametrize("bad", ["0", "abc", "-1G", "6X", ""])
def test_bad_max_memory_is_a_usage_error(tk: Tk, bad: str) -> None:
    proc = tk("run", EXPERIMENT, *SHORT, f"--max-memory={bad}")
    assert proc.returncode == 2
    assert proc.stderr.startswith("tierkit: error: argument --max-memory:"), proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_json_states_the_bytes_per_page() -> None:
    summary = run_json("--policy", "hemem")
    per_page = summary["memory_bytes_per_page"]
    assert set(per_page) == {"machine", "policy", "total"}
    assert per_page["total"] == pytest.approx(per_page["machine"] + per_page["policy"])
    # HeMem's tables: a tier byte, 4 bytes of counts, clock and flags (u8 counts at the default
    # cooling threshold), 8 bytes of list links per page
    assert per_page["policy"] == pytest.approx(13.0, abs=0.1)
    wide = run_json("--policy", "hemem:cooling_threshold=255")["memory_bytes_per_page"]
    assert wide["policy"] == pytest.approx(15.0, abs=0.1)
    # the machine: its page table (1 byte, a page's tier and flags: no accessed-bit clear times,
    # HeMem tests no accessed bits), the allocation events as runs (a few per object, not 16 bytes
    # a page) and the phases' tables
    assert 1 <= per_page["machine"] < 2
    # a policy that tests accessed bits (PACT's CLOCK) has the machine keep 5 bytes a page more
    # (each page's last clear in whole ns, a run shorter than 2^39 ns), 8 where the epoch is not
    # a whole number of ns
    pact = run_json("--policy", "pact")["memory_bytes_per_page"]
    assert pact["machine"] == pytest.approx(per_page["machine"] + 5)
    odd = ("--set", "epoch_ms=0.0123456")
    odd_pact = run_json("--policy", "pact", *odd)["memory_bytes_per_page"]
    odd_hemem = run_json("--policy", "hemem", *odd)["memory_bytes_per_page"]
    assert odd_pact["machine"] == pytest.approx(odd_hemem["machine"] + 8)
    assert summary["memory_estimate_bytes"] > 0
    notier = run_json("--policy", "notier")["memory_bytes_per_page"]
    assert notier["policy"] == 0
    assert notier["machine"] == pytest.approx(per_page["machine"])


def test_json_states_the_bytes_per_page_measured_at_the_end() -> None:
    # the tables' capacities after the run, beside the estimate that bounds them
    got = {}
    for policy in ("hemem", "tpp"):
        summary = run_json("--policy", policy)
        est = summary["memory_bytes_per_page"]
        got[policy] = summary["memory_allocated_bytes_per_page"]
        assert set(got[policy]) == {"machine", "policy", "total"}
        assert got[policy]["total"] == pytest.approx(got[policy]["machine"] + got[policy]["policy"])
        assert 1 <= got[policy]["machine"] <= est["machine"]
        assert 0 < got[policy]["policy"] <= est["policy"] + 1e-9
    # HeMem allocates its tables up front, as estimated; TPP's machine keeps accessed-bit clear
    # times and hint-fault queues that HeMem's does not
    assert got["hemem"]["policy"] == pytest.approx(13.0, abs=0.1)
    assert got["tpp"]["machine"] > got["hemem"]["machine"] + 4


def test_the_python_api_raises_a_typed_error() -> None:
    with pytest.raises(tierkit.MemoryLimitError) as info:
        tierkit.run(EXPERIMENT, policy="pact", overrides={"duration_s": 0.1}, max_memory="64K")
    err = info.value
    assert isinstance(err, tierkit.TierkitError)
    assert err.limit_bytes == 64 << 10
    assert err.estimate_bytes > err.limit_bytes
    assert err.footprint_bytes > 0
    assert "\n" not in str(err)
    with pytest.raises(tierkit.TierkitError, match="not a size"):
        tierkit.run(EXPERIMENT, max_memory="lots")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("6G", 6 << 30),
        ("6GiB", 6 << 30),
        ("6gb", 6 << 30),
        ("512M", 512 << 20),
        ("1.5T", 3 << 39),
        ("42", 42),
        (7, 7),
    ],
)
def test_sizes(text: str | int, value: int) -> None:
    assert tierkit.parse_size(text) == value


def test_a_sweep_records_a_refused_point_as_failed(tmp_path: Path) -> None:
    spec = {"experiments": [EXPERIMENT], "policies": ["notier"], "grid": {"duration_s": [0.1]}}
    res = tierkit.sweep(spec, out=tmp_path / "sw", workers=1, max_memory="4K")
    assert res.failed == 1
    row = res.table.iloc[0]
    assert row["status"] == "error"
    assert "--max-memory limit of 4 KiB" in row["error"]
