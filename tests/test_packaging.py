"""Shipped artifacts (issue 19): the extension module carries no debug info, and the package metadata
names its authors, license and classifiers."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

import tierkit

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def elf_sections(path: Path) -> list[str]:
    """The section names of a 64-bit little-endian ELF file."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF", "not an ELF file"
    assert data[4:6] == b"\x02\x01", "not a 64-bit little-endian ELF"
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize) for i in range(shnum)]
    strtab_off, strtab_size = headers[shstrndx][4], headers[shstrndx][5]
    strtab = data[strtab_off : strtab_off + strtab_size]
    return [strtab[h[0] : strtab.index(b"\0", h[0])].decode() for h in headers]


def test_the_extension_module_has_no_debug_info() -> None:
    if tierkit._core is None:
        pytest.skip("the extension is not built")
    so = Path(tierkit._core.__file__)
    if sys.platform != "linux":
        pytest.skip("ELF only")
    sections = elf_sections(so)
    assert ".text" in sections
    debug = [s for s in sections if s.startswith((".debug_", ".zdebug_"))]
    assert not debug, f"{so} carries debug info: {debug} (Cargo.toml [profile.release] strip)"
    assert ".symtab" in sections  # symbols stay: panics and perf name functions
    assert so.stat().st_size < 10 * 2**20, f"{so}: {so.stat().st_size} bytes"


def test_release_profile_strips_debug_info_and_profiling_keeps_it() -> None:
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
    release = cargo["profile"]["release"]
    assert release.get("debug", False) in (False, 0, "none")
    assert release["strip"] in ("debuginfo", "symbols", True)
    assert cargo["profile"]["profiling"]["inherits"] == "release"
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["maturin"]["profile"] == "release"


def test_package_metadata() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert project["authors"]
    assert project["description"]
    classifiers = project["classifiers"]
    for prefix in ("Development Status ::", "Intended Audience ::", "Operating System ::", "Topic ::"):
        assert any(c.startswith(prefix) for c in classifiers), prefix
    assert "Typing :: Typed" in classifiers
    assert (ROOT / "python" / "tierkit" / "py.typed").exists()
    # PEP 639: an SPDX `license` excludes the License :: classifiers.
    assert not any(c.startswith("License ::") for c in classifiers)
