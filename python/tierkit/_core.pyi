"""Type stubs of the Rust extension module (crates/tierkit-py)."""

from collections.abc import Callable
from typing import Any

__version__: str

class TierkitError(Exception):
    """A bad experiment, spec or input; the message says what and where."""

def run(
    experiment: str,
    policy: str | None = None,
    overrides: list[str] = ...,
    seed: int | None = None,
    progress: Callable[[float, float], None] | None = None,
) -> tuple[str, dict[str, list[Any]]]: ...
def check(experiment: str, policy: str | None = None, overrides: list[str] = ...) -> str: ...
def list_policies() -> list[tuple[str, str]]: ...
def list_workloads() -> list[tuple[str, str]]: ...
def list_platforms() -> list[tuple[str, str]]: ...
def describe_policy(name: str) -> list[dict[str, str]]: ...
def describe_workload(name: str) -> list[dict[str, str]]: ...
def common_keys() -> list[tuple[str, str]]: ...
def calibrate(platform: str) -> dict[str, Any]: ...
def pact_eval(
    experiment: str,
    policy: str = ...,
    overrides: list[str] = ...,
    seed: int | None = ...,
    truth_ms: float = ...,
) -> dict[str, Any]: ...
def soar_profile(
    experiment: str, overrides: list[str] = ..., seed: int | None = ..., params: list[tuple[str, str]] = ...
) -> str: ...
def soar_place(
    objects: list[tuple[int, int, int, int, int | None]],
    samples_path: str,
    intervals: list[tuple[int, tuple[float, float, float, float] | None]],
    fast_bytes: int,
    r_min: float = ...,
    r_max: float = ...,
    hot_factor: float = ...,
    l0: float = ...,
    calibration: tuple[float, float, float, float] | None = ...,
    aol_low: float | None = ...,
    aol_high: float | None = ...,
) -> dict[str, Any]: ...
def trace_import(format: str, input: str, output: str) -> dict[str, int]: ...
def trace_info(path: str) -> dict[str, Any]: ...
