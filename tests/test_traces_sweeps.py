"""Traces (import, info, record, replay), sweeps (local processes and a local Dask cluster,
resumable, failures recorded), reports, and the Python API around them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import tierkit
from tierkit import sweeps

ROOT = Path(__file__).resolve().parent.parent
TRACES = ROOT / "examples" / "traces"
Tk = Callable[..., subprocess.CompletedProcess[str]]


def small_sweep(**extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "experiments": ["gups-hotset"],
        "policies": ["notier", "hemem"],
        "seeds": 2,
        "set": {"duration_s": 0.2},
        "grid": {"fast_ratio": ["1:2", "1:4"]},
    }
    spec.update(extra)
    return spec


# ------------------------------------------------------------------------------------------ traces


def test_trace_import_and_info_from_the_cli(tk: Tk, tmp_path: Path) -> None:
    text = "==1== Lackey\nI  0400,3\n L 1000,8\n L 1008,8\nI  0403,2\n S 2000,8\n"
    src = tmp_path / "t.lackey"
    src.write_text(text)
    out = tmp_path / "t.tkt"
    proc = tk("trace", "import", "lackey", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "3 accesses in 2 records" in proc.stdout
    info = tierkit.trace.info(out)
    assert (info["accesses"], info["stores"], info["pages"], info["source"]) == (3, 1, 2, "lackey")
    proc = tk("trace", "info", str(out), "--json")
    assert json.loads(proc.stdout)["records"] == 2


def test_bad_traces_name_the_line_or_byte(tk: Tk, tmp_path: Path) -> None:
    bad = tmp_path / "bad.lackey"
    bad.write_text("I  0400,3\n L 10,8\nnot a lackey line\n")
    proc = tk("trace", "import", "lackey", str(bad), "-o", str(tmp_path / "x.tkt"))
    assert proc.returncode == 2
    assert "bad.lackey: line 3:" in proc.stderr
    assert "Traceback" not in proc.stderr
    cut = tmp_path / "cut.tkt"
    cut.write_bytes((TRACES / "stream.tkt").read_bytes()[:5000])
    proc = tk("trace", "info", str(cut))
    assert proc.returncode == 2, proc.stderr
    assert "byte " in proc.stderr
    assert "truncated" in proc.stderr
    wrong = tmp_path / "v9.tkt"
    data = bytearray((TRACES / "stream.tkt").read_bytes())
    data[8] = 9
    wrong.write_bytes(bytes(data))
    proc = tk("run", f"trace:{wrong}")
    assert proc.returncode == 2, proc.stderr
    assert "byte 8" in proc.stderr
    assert "version 9" in proc.stderr


def damo_records(end_time: str = "200.5 ms") -> list[dict[str, Any]]:
    """One target's monitoring results as `damo record --output_type json` writes them."""
    region = {"nr_accesses": {"samples": 4, "percent": 20}, "age": {"usec": None, "aggr_intervals": "2"}}
    return [
        {
            "kdamond_idx": 0,
            "target_id": 0,
            "intervals": {"sample_us": "5 ms", "aggr_us": "100 ms"},
            "snapshots": [
                {
                    "start_time": "0",
                    "end_time": "100000000",
                    "total_bytes": "8192",
                    "regions": [{"start": "4,096", "end": "12,288", **region}],
                },
                {
                    "start_time": "100000000",
                    "end_time": end_time,
                    "regions": [{"start": 4096, "end": 8192, **region}],
                },
            ],
        }
    ]


def test_damo_record_files_import_as_damo_writes_them(tk: Tk, tmp_path: Path) -> None:
    # damon.data in damo's default encoding (json_compressed: zlib over the JSON text)
    data = tmp_path / "damon.data"
    data.write_bytes(zlib.compress(json.dumps(damo_records(), indent=4).encode()))
    out = tmp_path / "d.tkt"
    proc = tk("trace", "import", "damon", str(data), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    info = tierkit.trace.info(out)
    assert (info["accesses"], info["pages"], info["source"]) == (12, 2, "damon")
    plain = tmp_path / "damon.json"
    plain.write_text(json.dumps(damo_records()))
    proc = tk("trace", "import", "damon", str(plain), "-o", str(tmp_path / "p.tkt"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "p.tkt").read_bytes() == out.read_bytes()
    bad = tmp_path / "bad.data"
    bad.write_bytes(zlib.compress(json.dumps(damo_records("later")).encode()))
    proc = tk("trace", "import", "damon", str(bad), "-o", str(tmp_path / "b.tkt"))
    assert proc.returncode == 2
    assert "bad.data" in proc.stderr
    assert "record 0, snapshot 1" in proc.stderr
    assert "end_time" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_trace_record_runs_a_program_under_lackey(tk: Tk, tmp_path: Path) -> None:
    out = tmp_path / "true.tkt"
    proc = tk("trace", "record", "-o", str(out), "--", "true")
    assert proc.returncode == 0, proc.stderr
    assert "thousands of times slower" in proc.stderr
    assert tierkit.trace.info(out)["accesses"] > 1000


def test_shipped_traces_replay_with_their_estimated_mlp() -> None:
    over = {"duration_s": 0.3, "llc_mb": 0.25, "fast_tier_gb": 1}
    chase = tierkit.run(f"trace:{TRACES / 'pchase.tkt'}", "notier", over)
    stream = tierkit.run(f"trace:{TRACES / 'stream.tkt'}", "notier", over)
    assert chase.summary["processes"][0]["name"] == "pchase"
    # Same trace length class, but the stream overlaps its misses: many more misses per second.
    assert stream.summary["throughput_ops_per_s"] > 3 * chase.summary["throughput_ops_per_s"]


def test_gzip_zstd_and_stdin_import_to_the_same_trace_as_plain_text(tk: Tk, tmp_path: Path) -> None:
    import gzip

    text = ("==1== Lackey\nI  0400,3\n L 1000,8\n L 1008,8\nI  0403,2\n S 2000,8\n" * 200).encode()
    (tmp_path / "plain.txt").write_bytes(text)
    # Names that do not say (or lie about) the compression: the content decides.
    (tmp_path / "a.lackey").write_bytes(gzip.compress(text))
    zst = subprocess.run(["zstd", "-q", "-c"], input=text, capture_output=True, check=False)
    inputs = ["plain.txt", "a.lackey"]
    if zst.returncode == 0:
        (tmp_path / "b.gz").write_bytes(zst.stdout)
        inputs.append("b.gz")
    outs = []
    for name in inputs:
        out = tmp_path / f"{name}.tkt"
        proc = tk("trace", "import", "lackey", str(tmp_path / name), "-o", str(out))
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_bytes())
    proc = tk("trace", "import", "lackey", str(tmp_path / "a.lackey"), "-o", str(tmp_path / "x.tkt"))
    assert "gzip" in proc.stdout
    assert all(o == outs[0] for o in outs)
    # stdin, compressed
    proc = subprocess.run(
        [sys.executable, "-m", "tierkit", "trace", "import", "lackey", "-", "-o", str(tmp_path / "in.tkt")],
        input=gzip.compress(text),
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "in.tkt").read_bytes() == outs[0]


def test_a_failed_import_leaves_no_output(tk: Tk, tmp_path: Path) -> None:
    import gzip

    d = tmp_path / "out"
    d.mkdir()
    text = "I  0400,3\n L 1000,8\n S 2000,8\n" * 50_000 + "not lackey\n"
    src = tmp_path / "t.lackey.gz"
    src.write_bytes(gzip.compress(text.encode()))
    proc = tk("trace", "import", "lackey", str(src), "-o", str(d / "t.tkt"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("tierkit: error: ")
    assert "line 150001:" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert list(d.iterdir()) == []
    # A truncated gzip stream: one line, nothing left.
    src.write_bytes(gzip.compress(text.encode())[:-200])
    proc = tk("trace", "import", "lackey", str(src), "-o", str(d / "t.tkt"))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert list(d.iterdir()) == []


def test_describe_trace_lists_its_keys(tk: Tk) -> None:
    proc = tk("describe", "trace")
    assert proc.returncode == 0, proc.stderr
    for key in (
        "trace",
        "mlp",
        "base_cpi",
        "instructions_per_access",
        "run_time_s",
        "window_ms",
        "window_epochs",
        "loops",
    ):
        assert f"  {key} " in proc.stdout


def test_trace_info_shows_the_per_window_mlp(tk: Tk) -> None:
    got = {}
    for name in ("pchase", "stream"):
        proc = tk("trace", "info", str(TRACES / f"{name}.tkt"), "--json", "--set", "llc_mb=0.25")
        assert proc.returncode == 0, proc.stderr
        info = json.loads(proc.stdout)
        mlp = info["mlp"]
        assert mlp["windows"] == len(mlp["per_window"]) > 1
        assert mlp["min"] <= mlp["p10"] <= mlp["p50"] <= mlp["p90"] <= mlp["max"]
        got[name] = mlp["estimate"]
        text = tk("trace", "info", str(TRACES / f"{name}.tkt"), "--set", "llc_mb=0.25").stdout
        assert f"MLP estimate {mlp['estimate']:.2f} over {mlp['windows']} windows" in text
    assert got["pchase"] < 1.5, got
    assert got["stream"] > 5, got


def test_the_run_json_and_time_series_carry_each_trace_process_mlp(tk: Tk, tmp_path: Path) -> None:
    exp = tmp_path / "two.toml"
    exp.write_text(
        f'workload = "trace"\ntrace = ["{TRACES / "pchase.tkt"}", "{TRACES / "stream.tkt"}"]\n'
        'llc_mb = 0.25\nduration_s = 0.05\nfast_ratio = "1:1"\n'
    )
    res = tierkit.run(str(exp), "notier")
    procs = {p["name"]: p for p in res.summary["processes"]}
    assert procs["pchase"]["mlp_estimate"] < 1.5 < 5 < procs["stream"]["mlp_estimate"]
    # The whole run, its replay passes included.
    assert 0 < res.summary["replay_seconds"] <= res.summary["wall_seconds"]
    for name in ("pchase", "stream"):
        col = res.timeseries[f"mlp.{name}"]
        assert len(col) > 0
    assert res.timeseries["mlp.pchase"].max() < 1.5 < 5 < res.timeseries["mlp.stream"].min()


def test_a_trace_without_instruction_lines_warns_and_gets_compute_time(tk: Tk, tmp_path: Path) -> None:
    rng_lines = [f" L {0x10000000 + (i * 7919 % 40000) * 64:x},8\n" for i in range(60_000)]
    src = tmp_path / "noi.lackey"
    src.write_text("".join(rng_lines))
    out = tmp_path / "noi.tkt"
    proc = tk("trace", "import", "lackey", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "no instruction stamps" in proc.stderr
    info = tk("trace", "info", str(out)).stdout
    assert "stamps none" in info
    slow = []
    for cpi in ("0.5", "20"):
        proc = tk(
            "run",
            f"trace:{out}",
            "--policy",
            "notier",
            "--set",
            "llc_mb=0.25",
            "--set",
            "duration_s=0.05",
            "--set",
            f"base_cpi={cpi}",
            "--json",
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.count("no instruction stamps") == 1, proc.stderr
        summary = json.loads(proc.stdout)
        assert any("no instruction stamps" in w for w in summary["warnings"])
        slow.append(summary["throughput_ops_per_s"])
    # More cycles per instruction: more compute per access, fewer misses per second.
    assert slow[1] < 0.8 * slow[0], slow


# ------------------------------------------------------------------------------------------ sweeps


def test_sweep_expands_the_grid_with_policy_parameters() -> None:
    pts = sweeps.expand(small_sweep(params={"hemem": {"hot_read_threshold": [4, 8]}}))
    assert len(pts) == 2 * 2 + 2 * 2 * 2  # notier: ratios x seeds; hemem: thresholds x ratios x seeds
    specs = sorted({p.policy for p in pts})
    assert specs == ["hemem:hot_read_threshold=4", "hemem:hot_read_threshold=8", "notier"]
    assert len({p.id for p in pts}) == len(pts)
    with pytest.raises(tierkit.TierkitError, match="unknown key `polices`"):
        sweeps.expand({"experiments": ["gups-hotset"], "polices": ["x"]})
    with pytest.raises(tierkit.TierkitError, match=r"params\.tpp"):
        sweeps.expand(small_sweep(params={"tpp": {"x": [1]}}))


def test_sweep_nested_tables_are_dotted_overrides(tmp_path: Path) -> None:
    # TOML's `costs.hint_fault_us = [...]` in [grid] is a table `costs`: the same axis as the
    # quoted key, and the same point ids
    f = tmp_path / "s.toml"
    f.write_text(
        'experiments = ["gups-hotset"]\npolicies = ["tpp"]\n[set]\ncosts.copy_gbps = 4\n'
        "[grid]\ncosts.hint_fault_us = [1.0, 4.5]\n"
    )
    nested = sweeps.load_sweep(f)
    quoted = sweeps.expand(
        {
            "experiments": ["gups-hotset"],
            "policies": ["tpp"],
            "set": {"costs.copy_gbps": 4},
            "grid": {"costs.hint_fault_us": [1.0, 4.5]},
        }
    )
    assert [p.id for p in nested] == [p.id for p in quoted]
    assert nested[0].overrides == (("costs.copy_gbps", "4"), ("costs.hint_fault_us", "1.0"))


def test_local_sweep_records_a_failure_and_resumes(tmp_path: Path) -> None:
    spec = small_sweep(policies=["notier", "hemem", "nosuchpolicy"], seeds=1)
    res = tierkit.sweep(spec, out=tmp_path, workers=2)
    t = res.table
    assert len(t) == 6
    assert res.failed == 2
    bad = t[t["policy"] == "nosuchpolicy"]
    assert (bad["status"] == "error").all()
    assert bad["error"].str.contains("nosuchpolicy").all()
    good = t[t["status"] == "ok"]
    assert len(good) == 4
    assert (good["slowdown_vs_fast_only"] >= 1.0).all()
    assert set(good["fast_ratio"]) == {"1:2", "1:4"}
    again = tierkit.sweep(spec, out=tmp_path, workers=2)
    assert (again.skipped, again.ran, again.failed) == (4, 2, 2)  # done points skipped, failed retried
    on_disk = pd.read_parquet(tmp_path / "results.parquet")
    assert len(on_disk) == 6
    # Deterministic: the same point gives the same numbers in a fresh directory.
    fresh = tierkit.sweep(spec, out=tmp_path / "fresh", workers=1).table
    cols = ["point_id", "throughput_ops_per_s", "promotions"]
    merged = good[cols].merge(fresh[cols], on="point_id")
    assert len(merged) == 4
    assert (merged["throughput_ops_per_s_x"] == merged["throughput_ops_per_s_y"]).all()


def test_sweep_points_follow_the_experiment_files_content_not_their_path(tmp_path: Path) -> None:
    exp = 'workload = "gups-hotset"\nduration_s = 0.2\nthreads = 2\nworking_set_gb = 1\nhot_set_gb = 0.25\n'
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "exp.toml").write_text(exp)
        (tmp_path / d / "sweep.toml").write_text(
            'experiments = ["exp.toml"]\npolicies = ["notier"]\nseeds = 1\n'
        )
    out = tmp_path / "out"
    first = tierkit.sweep(tmp_path / "a" / "sweep.toml", out=out, workers=1)
    assert (first.ran, first.failed) == (1, 0), first.table
    # The same files elsewhere: the point is already done.
    moved = tierkit.sweep(tmp_path / "b" / "sweep.toml", out=out, workers=1)
    assert (moved.skipped, moved.ran) == (1, 0)
    # An edited experiment file is a new point.
    (tmp_path / "b" / "exp.toml").write_text(exp.replace("threads = 2", "threads = 3"))
    edited = tierkit.sweep(tmp_path / "b" / "sweep.toml", out=out, workers=1)
    assert (edited.skipped, edited.ran) == (0, 1)


def test_sweep_on_a_local_dask_cluster(tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=2,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        res = tierkit.sweep(small_sweep(seeds=1), out=tmp_path / "a", dask=cluster.scheduler_address)
        assert res.ran == 4
        assert res.failed == 0
        with distributed.Client(cluster) as client:
            res2 = tierkit.sweep(small_sweep(seeds=1), out=tmp_path / "b", dask=client)
    a, b = res.table.set_index("point_id"), res2.table.set_index("point_id")
    assert (a.loc[b.index, "throughput_ops_per_s"] == b["throughput_ops_per_s"]).all()


def test_sweep_and_report_from_the_cli(tk: Tk, tmp_path: Path) -> None:
    sw = tmp_path / "s.toml"
    sw.write_text(
        'experiments = ["gups-hotset", "trace:trace.tkt"]\npolicies = ["notier", "hemem"]\nseeds = 1\n'
        '[set]\nduration_s = 0.2\n[grid]\nfast_ratio = ["1:2", "1:4"]\n'
    )
    shutil.copy(TRACES / "stream.tkt", tmp_path / "trace.tkt")
    out = tmp_path / "out"
    proc = tk("sweep", str(sw), "--workers", "2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "8 points (8 run, 0 already done, 0 failed)" in proc.stdout
    proc = tk("sweep", str(sw), "--workers", "2", "--out", str(out))
    assert "(0 run, 8 already done" in proc.stdout
    proc = tk("report", str(out), "--out", str(tmp_path / "rep"))
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Slowdown" in md
    assert "Promotions" in md
    assert "gups-hotset / hemem" in md
    for png in ("slowdown_vs_fast_only.png", "promotions.png", "latency_over_time.png"):
        assert (tmp_path / "rep" / png).read_bytes()[:4] == b"\x89PNG"
    page = (tmp_path / "rep" / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 3
    assert 'src="slowdown' not in page
    proc = tk("sweep", str(tmp_path / "missing.toml"))
    assert proc.returncode == 2
    assert "missing.toml" in proc.stderr
    proc = tk("report", str(tmp_path))
    assert proc.returncode == 2
    assert "results.parquet" in proc.stderr


def test_api_exposes_run_sweep_reproduce_and_list_policies() -> None:
    names = [n for n, _ in tierkit.list_policies()]
    assert "hemem" in names
    assert "notier" in names
    assert callable(tierkit.sweep)
    assert callable(tierkit.reproduce)
    assert callable(tierkit.report)
    from tierkit.reproduce import list_reproductions  # the subpackage stays importable

    assert "colloid" in [name for name, _ in list_reproductions()]
    assert callable(tierkit.reproduce)  # and the name is still the function
    # `import tierkit` stays light: the reproduce package (and pandas) load on first use.
    code = "import sys, tierkit; print('pandas' in sys.modules, callable(tierkit.reproduce))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
    with pytest.raises(tierkit.TierkitError, match="unknown reproduction"):
        tierkit.reproduce("no-such-paper")


def test_a_sweep_with_failed_points_names_them_and_exits_3(tk: Tk, tmp_path: Path) -> None:
    sw = tmp_path / "s.toml"
    sw.write_text(
        'experiments = ["gups-hotset"]\npolicies = ["notier", "tpp:bogus=1"]\nseeds = 1\n'
        "[set]\nduration_s = 0.1\n"
    )
    out = tmp_path / "out"
    proc = tk("sweep", str(sw), "--workers", "1", "--out", str(out))
    assert proc.returncode == 3, proc.stderr
    assert "2 points (2 run, 0 already done, 1 failed)" in proc.stdout
    assert "(gups-hotset, tpp:bogus=1, seed 1) failed: policy `tpp`: unknown parameter `bogus`" in proc.stderr
    assert "1 point(s) failed" in proc.stderr
    # the good point is kept, and --no-fail reports without failing
    assert (out / "results.parquet").exists()
    proc = tk("sweep", str(sw), "--workers", "1", "--out", str(out), "--no-fail")
    assert proc.returncode == 0, proc.stderr
    assert "(1 run, 1 already done, 1 failed)" in proc.stdout
    assert "unknown parameter `bogus`" in proc.stderr
