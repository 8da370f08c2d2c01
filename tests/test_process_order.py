"""The order of the processes in an experiment file does not decide the result.

Two tenants (a larger Zipf tenant with an object freed and another allocated mid-run, and a
smaller uniform one that starts late), written in both orders. Swapping them changes their page
ids, the order their threads are stepped and which random streams they draw from; each tenant's
throughput may move by seed noise only (1%; every policy below was within 0.3% at 8 s when this
test was written, 2026-12-01), and first touch with no migration not at all. A 40-seed
comparison of PACT's per-tenant promotions in the two orders found no significant difference
(Mann-Whitney z 1.75 and 1.14, docs/validation.md section 4).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

BIG = """
[[process]]
name = "a"
[[process.object]]
name = "big"
size_gb = 0.25
[[process.object]]
name = "tmp"
size_gb = 0.0625
alloc_s = 1.0
free_s = 3.0
[[process.object]]
name = "tmp2"
size_gb = 0.0625
alloc_s = 3.5
[[process.thread]]
count = 4
[[process.thread.phase]]
mlp = 8
compute_ns = 4
[[process.thread.phase.access]]
object = "big"
pattern = "zipf"
[[process.thread.phase.access]]
object = "tmp"
pattern = "uniform"
weight = 0.5
[[process.thread.phase.access]]
object = "tmp2"
pattern = "uniform"
weight = 0.5
"""

SMALL = """
[[process]]
name = "b"
start_s = 1.5
[[process.object]]
name = "x"
size_gb = 0.0625
free_s = 6.0
[[process.thread]]
count = 2
[[process.thread.phase]]
mlp = 4
compute_ns = 4
[[process.thread.phase.access]]
object = "x"
pattern = "uniform"
"""

HEAD = """
workload = "custom"
name = "two-tenants"
platform = "icx-numa"
duration_s = 8
fast_ratio = "1:2"
seed = 3
"""

POLICIES = (
    "notier",
    "hemem",
    "tpp",
    "nbt",
    "nomad",
    "memtis",
    "pact",
    "vulcan",
    "soar",
    "hemem+colloid",
    "memtis+colloid",
    "tpp+colloid",
    "tpp+toggle",
    "tpp+alto",
)


def write_order(path: Path, order: str, head: str = HEAD) -> Path:
    """The two tenants' file in `order`: "ab" (the large one first) or "ba"."""
    path.write_text(head + (BIG + SMALL if order == "ab" else SMALL + BIG))
    return path


def per_tenant(path: Path, policy: str) -> dict[str, float]:
    """Each tenant's throughput in one run of the file."""
    import tierkit

    s = tierkit.run(str(path), policy=policy).summary
    return {p["name"]: float(p["throughput_ops_per_s"]) for p in s["processes"]}


@pytest.fixture(scope="module")
def throughputs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, float]]:
    """Per (order, policy): each tenant's throughput, the runs in threads."""
    d: Path = tmp_path_factory.mktemp("order")
    files = {order: write_order(d / f"{order}.toml", order) for order in ("ab", "ba")}
    runs = [(order, pol) for order in files for pol in POLICIES]

    def one(run: tuple[str, str]) -> dict[str, float]:
        order, pol = run
        return per_tenant(files[order], pol)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(runs, pool.map(one, runs), strict=True))


@pytest.mark.parametrize("policy", POLICIES)
def test_swapping_the_processes_moves_no_tenant(
    throughputs: dict[tuple[str, str], dict[str, float]], policy: str
) -> None:
    ab, ba = throughputs[("ab", policy)], throughputs[("ba", policy)]
    assert set(ab) == set(ba) == {"a", "b"}
    for name in ab:
        if policy == "notier":
            assert ab[name] == ba[name], (name, ab[name], ba[name])
        else:
            assert ba[name] == pytest.approx(ab[name], rel=0.01), (name, ab[name], ba[name])


def test_hemem_colloid_favours_neither_order_over_seeds(tmp_path: Path) -> None:
    """A bias too small for one seed's 1% but the same in every seed: HeMem+Colloid walked
    HeMem's pages of equal count by page id, and page ids follow the file's order, so the
    tenant written first won every tie. Over seeds 1-8 the small tenant ran 1.01% faster on
    average written first (0.45% to 1.67%, every seed the same sign) and the large one 0.21%
    slower. Ties now go in a scrambled page order (`tierkit_core::rng::scramble`): over seeds
    1-20 the means are -0.01% for both tenants (seeds 1-8: -0.23% and -0.05%, both signs).
    The mean over seeds 1-8 must stay within 0.5% (docs/validation.md, section 1u)."""
    import statistics

    def one(run: tuple[int, str]) -> dict[str, float]:
        seed, order = run
        head = HEAD.replace("seed = 3", f"seed = {seed}")
        return per_tenant(write_order(tmp_path / f"{order}-{seed}.toml", order, head), "hemem+colloid")

    runs = [(seed, order) for seed in range(1, 9) for order in ("ab", "ba")]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        got = dict(zip(runs, pool.map(one, runs), strict=True))
    for name in ("a", "b"):
        shifts = [got[(seed, "ba")][name] / got[(seed, "ab")][name] - 1 for seed in range(1, 9)]
        assert abs(statistics.mean(shifts)) < 0.005, (name, shifts)
