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

POLICIES = ("notier", "hemem", "tpp", "nbt", "nomad", "memtis", "pact", "vulcan", "soar")


@pytest.fixture(scope="module")
def throughputs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, float]]:
    """Per (order, policy): each tenant's throughput, the runs in threads."""
    import tierkit

    d: Path = tmp_path_factory.mktemp("order")
    files = {"ab": d / "ab.toml", "ba": d / "ba.toml"}
    files["ab"].write_text(HEAD + BIG + SMALL)
    files["ba"].write_text(HEAD + SMALL + BIG)
    runs = [(order, pol) for order in files for pol in POLICIES]

    def one(run: tuple[str, str]) -> dict[str, float]:
        order, pol = run
        s = tierkit.run(str(files[order]), policy=pol).summary
        return {p["name"]: float(p["throughput_ops_per_s"]) for p in s["processes"]}

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
