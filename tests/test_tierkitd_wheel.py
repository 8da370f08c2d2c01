"""tierkitd without a Rust toolchain (issue 17): the wheel of crates/tierkitd (maturin, `bindings =
"bin"`) holds the daemon's binary; pip installs it into a fresh venv, offline, and `tierkitd
--version` runs from the venv's bin/.

Building needs maturin (the dev extras install it) and cargo; the build shares the workspace's
target directory, so with a warm release build of tierkitd it takes seconds. The wheel comes from
$TIERKITD_WHEEL instead when that is set."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CRATE = ROOT / "crates" / "tierkitd"


def version() -> str:
    return tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]


def build_wheel(out: Path) -> Path:
    given = os.environ.get("TIERKITD_WHEEL")
    if given:
        return Path(given)
    maturin = shutil.which("maturin", path=str(Path(sys.executable).parent)) or shutil.which("maturin")
    if maturin is None:
        pytest.skip("maturin is not installed (pip install -e '.[dev]' installs it)")
    if shutil.which("cargo") is None:
        pytest.skip("no cargo to build the wheel with")
    proc = subprocess.run(
        [maturin, "build", "--release", "--quiet", "-o", str(out)],
        cwd=CRATE,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = out.glob("tierkitd-*.whl")
    return wheel


def test_the_wheel_installs_a_working_tierkitd_in_a_fresh_venv(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "wheels")
    v = version()
    assert wheel.name.startswith(f"tierkitd-{v}-py3-none-"), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert f"tierkitd-{v}.data/scripts/tierkitd" in names, names
    assert not any(n.endswith(".py") for n in names), "the binary alone, no Python code"
    meta = zipfile.ZipFile(wheel).read(f"tierkitd-{v}.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in meta
    assert any(n.endswith("licenses/LICENSE") for n in names), names

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    py = env_dir / "bin" / "python"
    # offline: the wheel has no dependencies, and nothing else is fetched
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check", wheel],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    exe = env_dir / "bin" / "tierkitd"
    assert exe.is_file(), exe
    assert os.access(exe, os.X_OK), exe
    run = subprocess.run(
        [str(exe), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin"},  # nothing of the build's environment
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == f"tierkitd {v}"
    helped = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert helped.returncode == 0, helped.stderr
    assert re.search(r"--log-level", helped.stdout), helped.stdout
