"""Dask workers without tierkit (issue 19): a built wheel shipped to them with
:func:`tierkit.sweeps.ship_wheel` (docs/sweeps.md, "A Dask cluster").

The wheel comes from $TIERKIT_WHEEL, else from target/wheels (the version of this tierkit), else it is
built with maturin (about 20 s with a warm cargo cache); the test is skipped without dask.distributed
or without a way to get a wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import tierkit
from tierkit.sweeps import ship_wheel

ROOT = Path(__file__).resolve().parents[1]


def find_or_build_wheel(tmp: Path) -> Path:
    given = os.environ.get("TIERKIT_WHEEL")
    if given:
        return Path(given)
    built = [  # not the editable wheels of `pip install -e`, which hold a .pth file only
        w
        for w in sorted((ROOT / "target" / "wheels").glob(f"tierkit-{tierkit.__version__}-*.whl"))
        if "tierkit/__init__.py" in zipfile.ZipFile(w).namelist()
    ]
    if built:
        return built[-1]
    maturin = shutil.which("maturin") or shutil.which("maturin", path=str(Path(sys.executable).parent))
    if maturin is None or not (ROOT / "pyproject.toml").exists():
        pytest.skip("no wheel: set TIERKIT_WHEEL or install maturin")
    proc = subprocess.run(
        [maturin, "build", "--release", "--quiet", "-o", str(tmp)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return next(tmp.glob("tierkit-*.whl"))


def test_a_shipped_wheel_runs_a_sweep_on_workers_without_a_shared_install(tmp_path: Path) -> None:
    distributed = pytest.importorskip("dask.distributed")
    wheel = find_or_build_wheel(tmp_path / "wheels")

    def where() -> str:  # defined here: pickled by value, so the worker need not import this module
        import tierkit as tk

        return str(tk.__file__)

    with (
        distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,  # a separate worker process, which imports tierkit only from the wheel
            protocol="tcp://",
            host="127.0.0.1",
            dashboard_address=None,
            local_directory=str(tmp_path / "scratch"),
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        name = ship_wheel(client, wheel)
        assert name.startswith("tierkit-wheel-")
        (loaded,) = client.run(where).values()
        assert Path(loaded).is_relative_to(tmp_path / "scratch"), loaded
        assert "tierkit-wheel" in loaded
        res = tierkit.sweep(
            {"experiments": ["gups-hotset"], "policies": ["notier", "hemem"], "set": {"duration_s": 0.2}},
            out=tmp_path / "out",
            dask=client,
        )
        # Another wheel on a worker that has imported tierkit already: an error that says what to do.
        other = tmp_path / "other" / wheel.name
        other.parent.mkdir()
        shutil.copy(wheel, other)
        with zipfile.ZipFile(other, "a") as z:
            z.writestr("tierkit/other.txt", "another build")
        with pytest.raises(RuntimeError, match=r"imported tierkit before .*client.restart\(\)"):
            ship_wheel(client, other)
    assert (res.ran, res.failed) == (2, 0), res.table
    local = tierkit.run("gups-hotset", policy="hemem", overrides={"duration_s": 0.2}, seed=1)
    row = res.table.set_index("policy").loc["hemem"]
    assert row["throughput_ops_per_s"] == local.summary["throughput_ops_per_s"]


def test_ship_wheel_rejects_what_is_not_a_wheel(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("no")
    with pytest.raises(tierkit.TierkitError, match="not a wheel"):
        ship_wheel(object(), tmp_path / "x.txt")
    with pytest.raises(tierkit.TierkitError, match="not a wheel"):
        ship_wheel(object(), tmp_path / "missing.whl")
    editable = tmp_path / "tierkit-0.1.0-cp310-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(editable, "w") as z:
        z.writestr("tierkit.pth", "/src/python\n")
    with pytest.raises(tierkit.TierkitError, match="editable wheel"):
        ship_wheel(object(), editable)
