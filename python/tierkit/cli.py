"""The ``tierkit`` command: a thin layer over the library API in :mod:`tierkit`.

Every user error (bad input, missing file, unknown command) prints one line ``tierkit: error: ...`` on
stderr and exits with status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

PROG = "tierkit"
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_CLAIMS = 3  # `reproduce`: a claim does not hold; `sweep`: a point failed
EXIT_INTERRUPTED = 130

SPEC_HELP = """\
policy SPEC grammar:
  name[:k=v,...][+layer...], in full: name[:key=value,...][+layer[:key=value,...]]...
  A base policy, optionally with parameters, then layers stacked on it, in order. A policy
  with a main parameter also takes its value bare, as the first argument (place:hot).
  Examples: notier   hemem:sample_period=5003   place:objects=hot   tpp+LAYER
  `tierkit list policies` names the policies and layers; `tierkit describe POLICY` lists the
  parameters of one (type, default, unit)."""

STATIC_SET_HELP = """\
--set KEY=VALUE keys (a built-in's parameters are top-level keys; dotted keys reach into the
tables of a TOML experiment):
  common to the built-in experiments:
    duration_s=SECONDS        simulated time to run
    platform=NAME             platform preset (`tierkit list platforms`)
    fast_tier_gb=GB           fast-tier capacity in GiB
    fast_ratio=F:S            fast:slow split of the workload's footprint, e.g. 1:2
                              (instead of fast_tier_gb)
    seed=N                    random seed (the same as --seed)
  gups-hotset:
    antagonist_intensity=X    memory antagonist streaming on the fast tier: 0 = none,
                              1, 2, 3 = 5, 10, 15 cores
    threads=N                 GUPS threads
    working_set_gb=GB         size of the GUPS buffer in GiB
    hot_set_gb=GB             size of its hot set in GiB
    object_bytes=BYTES        object updated per operation (64 to 1048576)"""

SET_HELP_HEAD = """\
--set KEY=VALUE keys (a built-in's parameters are top-level keys; dotted keys reach into the
tables of a TOML experiment):"""
HELP_WORKLOAD = "gups-hotset"
# Keys that are not values to --set on a built-in: TOML tables and the workload's own name.
NOT_SETTABLE = frozenset({"tier", "process", "antagonist", "workload"})


def _key_lines(rows: Sequence[tuple[str, str]]) -> list[str]:
    lines = []
    for key, doc in rows:
        head = f"    {key}"
        lines += textwrap.wrap(
            " ".join(doc.split()),
            width=100,
            initial_indent=head.ljust(28) if len(head) < 27 else head + "  ",
            subsequent_indent=" " * 28,
        ) or [head]
    return lines


def set_help() -> str:
    """The --set section of `tierkit run --help`, from the core's own key tables when it has them."""
    try:
        import tierkit

        common = [(k, d) for k, d in tierkit.common_keys() if k not in NOT_SETTABLE]
        params = tierkit.describe_workload(HELP_WORKLOAD)
    except Exception:  # no extension module, or an older one: the static text
        return STATIC_SET_HELP
    own = []
    for p in params:
        default = f"default {p.get('default')}{' ' + p['unit'] if p.get('unit') else ''}"
        own.append((str(p["name"]), f"{p.get('doc', '')} ({p.get('kind', '')}, {default})"))
    lines = [SET_HELP_HEAD, "  common to every experiment:", *_key_lines(common)]
    lines += [f"  {HELP_WORKLOAD} (the other built-ins: `tierkit describe WORKLOAD`):", *_key_lines(own)]
    return "\n".join(lines)


def trace_set_help() -> str:
    """The --set section of `tierkit trace info --help`: the trace workload's keys, from the core."""
    head = "--set KEY=VALUE keys (the trace workload's; also `tierkit describe trace`):"
    try:
        from tierkit import trace

        keys = trace.workload_keys()
    except Exception:  # no extension module, or an older one
        return head + "\n  platform, llc_mb, mlp, ... (`tierkit describe trace` lists them)"
    return "\n".join([head, *(line[2:] for line in _key_lines(keys))])


def demo_help() -> str:
    """`tierkit demo --help`'s description, naming the policies from tierkit.demo's own lists."""
    from tierkit import demo

    fractions = " and ".join(f"{f:g}" for f in demo.STATIC_HOT_FRACTIONS)
    intensities = " and ".join(str(i) for i in demo.INTENSITIES)
    policies = ", ".join(demo.BASE_POLICIES)
    return "\n".join(
        [
            *textwrap.wrap(
                f"Compare placement policies on the built-in {demo.EXPERIMENT} experiment at memory "
                f"antagonist intensities {intensities} (seed {demo.SEED}; {demo.FULL_DURATION_S:g} "
                f"simulated seconds per run, {demo.QUICK_DURATION_S:g} with --quick).",
                width=95,
            ),
            "",
            "The policies (specs as for `tierkit run --policy`):",
            *textwrap.wrap(policies, width=93, initial_indent="  ", subsequent_indent="  "),
            f"  and {demo.STATIC_POLICY} placement with hot fractions {fractions}.",
            "",
            *textwrap.wrap(
                "Writes report.md (a Markdown table and plots), results.json, timeseries.parquet and "
                "PNG plots. Policies that are not built into this version are skipped with a note.",
                width=95,
            ),
        ]
    )


RUN_EXAMPLES = """\
examples:
  tierkit run gups-hotset --policy hemem --set duration_s=5
  tierkit run gups-hotset --policy tpp --set antagonist_intensity=3 --out out/tpp
  tierkit run my-experiment.toml --seed 7 --json > summary.json"""


class CliError(Exception):
    """A user error found by the CLI itself; printed as one ``tierkit: error:`` line."""


class Parser(argparse.ArgumentParser):
    """argparse with tierkit's error format: one line on stderr, exit status 2."""

    def error(self, message: str) -> NoReturn:
        bad_command = re.match(r"argument COMMAND: invalid choice: '(.*?)'", message)
        if bad_command:
            message = f"unknown command `{bad_command.group(1)}`; the commands are {', '.join(COMMANDS)}"
        fail(f"{message} (see `{self.prog} --help`)")


def fail(message: str, status: int = EXIT_USAGE) -> NoReturn:
    line = " ".join(str(message).split())
    sys.stderr.write(f"{PROG}: error: {line}\n")
    sys.stderr.flush()
    raise SystemExit(status)


def _override(text: str) -> str:
    from tierkit import TierkitError, check_override

    try:
        check_override(text)
    except TierkitError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("override ")) from None
    return text


def _seeds(text: str) -> list[int]:
    """`--seeds`: a count N (seeds 1..N), a range A-B, or a list A,B,C."""
    t = text.strip()
    try:
        if "," in t:
            seeds = [_seed(x.strip()) for x in t.split(",") if x.strip()]
        elif "-" in t.lstrip("-"):
            a, b = (_seed(x.strip()) for x in t.split("-", 1))
            if b < a:
                raise argparse.ArgumentTypeError(f"`{text}`: the range ends before it starts")
            seeds = list(range(a, b + 1))
        else:
            n = _seed(t)
            seeds = list(range(1, n + 1))
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"`{text}`: {err}") from None
    if len(seeds) > 1000:
        raise argparse.ArgumentTypeError(f"`{text}` names {len(seeds)} seeds; at most 1000")
    from tierkit import TierkitError
    from tierkit.reproduce import check_seeds

    try:
        return check_seeds(seeds)  # none, or one twice: the API's own check
    except TierkitError as err:
        raise argparse.ArgumentTypeError(
            f"`{text}`: {err} (a count N, a range A-B or a list A,B,C)"
        ) from None


def _seed(text: str) -> int:
    try:
        value = int(text.replace("_", ""), 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not a non-negative integer") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"`{text}` is out of range (0 to 2^63-1)")
    return value


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _bytes(text: str) -> int:
    """A size in bytes: an integer, optionally with K, M, G or T (binary: 1K = 1024), e.g. 64M."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in _UNITS and t[-1:] != "" else ""
    try:
        value = int(t[: len(t) - len(unit)].replace("_", ""), 10) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"`{text}` is not a size (bytes, or a number with K, M, G or T)"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"`{text}` is negative")
    return value


NO_CACHE_HELP = (
    "do not read or keep the fast-only reference runs on disk (by default they are kept by the "
    "experiment's and the model's fingerprints in $TIERKIT_CACHE_DIR, else $XDG_CACHE_HOME/tierkit, "
    "else ~/.cache/tierkit, and reused by later runs of the same experiment; as TIERKIT_NO_CACHE=1)"
)
MAX_MEMORY_HELP = (
    "refuse the run when its estimated memory is above SIZE (bytes, or with K, M, G or T: 6G, 6GiB, "
    "512M); a run is refused above 90%% of the machine's available memory (MemAvailable) in any case"
)


def _max_memory(text: str) -> int:
    from tierkit import TierkitError, parse_size

    try:
        value = parse_size(text)
    except TierkitError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"`{text}` is not a positive size")
    return value


def _node(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{text}` is not a NUMA node number") from None
    if not 0 <= value <= 1023:
        raise argparse.ArgumentTypeError(f"`{text}` is out of range (0 to 1023)")
    return value


def _experiment_args(p: argparse.ArgumentParser, set_help: str) -> None:
    """EXPERIMENT, --set KEY=VALUE... and --seed N, shared by the commands that run an experiment."""
    p.add_argument("experiment", metavar="EXPERIMENT", help="built-in experiment name or TOML file")
    p.add_argument(
        "--set",
        dest="overrides",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        type=_override,
        help=set_help,
    )
    p.add_argument("--seed", type=_seed, metavar="N", help="random seed (same seed, same result)")


def build_parser() -> Parser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = Parser(
        prog=PROG,
        description=(
            "tierkit: tiered-memory placement policies (HeMem, TPP, MEMTIS, NBT, Nomad, Colloid, Alto, "
            "Soar, PACT, ...) on a simulated tiered-memory machine."
        ),
        epilog="Run `tierkit COMMAND --help` for the options of a command.",
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="store_true", help="print the tierkit version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")

    run = sub.add_parser(
        "run",
        help="run one experiment on the simulated machine",
        description=textwrap.dedent(
            """\
            Run one experiment on the simulated machine and report its summary.

            EXPERIMENT is a built-in experiment (`tierkit list workloads`) or a TOML file. Without
            --json a short table is printed; --out also writes summary.json, timeseries.parquet and
            throughput.png, latency.png, migrations.png (and alto.png with Alto: its AOL and
            promotions over time). A progress bar is shown on stderr when it is a terminal."""
        ),
        epilog="\n\n".join((SPEC_HELP, set_help(), RUN_EXAMPLES)),
        formatter_class=formatter,
    )
    _experiment_args(run, "override an experiment key; may be repeated; see the keys below")
    run.add_argument(
        "--policy",
        metavar="SPEC",
        help="policy stack, `name[:k=v,...][+layer...]` (default: the experiment's own); see below",
    )
    run.add_argument(
        "-o", "--out", type=Path, metavar="DIR", help="write summary.json, timeseries.parquet, PNGs"
    )
    run.add_argument(
        "--json",
        action="store_true",
        help="print the summary as one JSON object on stdout, and nothing else",
    )
    run.add_argument("--max-memory", type=_max_memory, metavar="SIZE", help=MAX_MEMORY_HELP)
    run.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)

    lister = sub.add_parser(
        "list",
        help="list the built-in policies, workloads or platforms",
        description=(
            "Print one `name  description` line per built-in policy, workload or platform "
            "(--json: a JSON list)."
        ),
        formatter_class=formatter,
    )
    lister.add_argument(
        "what",
        metavar="WHAT",
        choices=("policies", "workloads", "platforms"),
        help="policies, workloads or platforms",
    )
    lister.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of {name, description} objects on stdout",
    )

    describe = sub.add_parser(
        "describe",
        help="show the parameters of a policy or a built-in workload",
        description=(
            "Print the parameters of a policy or layer (set in a SPEC, `name:key=value`) or of a built-in "
            "workload (set with `tierkit run --set key=value`): name, type, default, unit, doc."
        ),
        epilog=SPEC_HELP,
        formatter_class=formatter,
    )
    describe.add_argument(
        "name",
        metavar="NAME",
        help="a policy or layer (`tierkit list policies`) or a workload (`tierkit list workloads`)",
    )
    describe.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object on stdout: {name, type (policy, workload or trace), "
        "parameters: [{name, kind, default, unit, doc}]}",
    )

    demo = sub.add_parser(
        "demo",
        help="compare policies on gups-hotset, with and without a memory antagonist",
        description=demo_help(),
        formatter_class=formatter,
    )
    demo.add_argument(
        "-o",
        "--out",
        type=Path,
        metavar="DIR",
        default=Path("demo-out"),
        help="output directory (default: demo-out)",
    )
    demo.add_argument("--quick", action="store_true", help="short simulated durations (a smoke test)")

    cal = sub.add_parser(
        "calibrate",
        help="measure a platform's constants (AOL thresholds, the slowdown predictor's K(AOL))",
        description=textwrap.dedent(
            """\
            Run the two extreme microbenchmarks (a sequential stream with MLP 7 and a pointer chase
            with MLP 1) and an MLP sweep on the platform, first with everything in the fast tier and
            then in the slow tier. Prints and saves: AOL_low / AOL_high (Alto's thresholds: the
            stream's and the chase's AOL on the fast tier) and a, b of the slowdown predictor
            K = 1 / (a + b / AOL), fitted on K = S / P (Soar/Alto section 3.2), and PACT's per-tier
            stall k of S = k * LLC-misses / MLP (PACT section 4.2). The presets carry these values;
            alto's aol_low/aol_high and pact's k default to them."""
        ),
        formatter_class=formatter,
    )
    cal.add_argument(
        "--platform", default="skx-cxl-emu", metavar="NAME", help="platform preset (default: skx-cxl-emu)"
    )
    cal.add_argument(
        "-o",
        "--out",
        type=Path,
        metavar="FILE",
        help="where to save the constants as JSON (default: calibration-NAME.json)",
    )
    cal.add_argument("--json", action="store_true", help="print the constants as one JSON object on stdout")

    soar = sub.add_parser(
        "soar",
        help="Soar: `soar profile EXPERIMENT` (simulated), `soar objects|place LOG` (a real run, shim/)",
        description=textwrap.dedent(
            """\
            `tierkit soar profile EXPERIMENT` runs Soar's profiling pass (Soar/Alto section 4.1: every
            page in the fast tier, PEBS-like sampling at period 3001, the AOL predictor per second) and
            writes the object ranking table (Table 2's columns): object, size, lifetime, accesses, score,
            unit score, and the ranks by first touch, by frequency and by Soar. The `soar` policy runs
            the same pass by itself before placing objects.

            `tierkit soar objects LOG` reads the profile log the allocation shim (shim/, LD_PRELOAD)
            writes on a real host and prints the object flow per allocation site.

            `tierkit soar place LOG --samples PERF_SCRIPT --fast-bytes SIZE` is Soar on a real host:
            it joins the shim's profile log with the LLC-miss samples of the same run (and, with
            --aol, perf stat's per-interval AOL and stall counters), scores every allocation site
            with Algorithm 1, ranks them by unit score and writes the placement file the shim's
            place mode reads (TIERKIT_SHIM_MODE=place TIERKIT_SHIM_PLACEMENT=FILE)."""
        ),
        formatter_class=formatter,
    )
    soar_sub = soar.add_subparsers(dest="soar_command", metavar="ACTION", title="actions")
    prof = soar_sub.add_parser(
        "profile",
        help="profile an experiment and write the ranking table",
        description="Profile EXPERIMENT (a built-in or a TOML file) and write its object ranking.",
        formatter_class=formatter,
    )
    _experiment_args(prof, "override an experiment key; may be repeated")
    prof.add_argument(
        "-o",
        "--out",
        type=Path,
        metavar="FILE",
        help="where to write the table as CSV (default: soar-profile.csv)",
    )
    prof.add_argument("--json", action="store_true", help="print the table as a JSON list of rows on stdout")
    objs = soar_sub.add_parser(
        "objects",
        help="read the allocation shim's profile log (shim/, LD_PRELOAD) into Soar's object flow",
        description=(
            "Read a TKSHIM01 profile log written by the allocation shim (shim/README.md) and print Soar's "
            "object flow per allocation site: allocations, bytes, peak live bytes, first allocation and mean "
            "lifetime (Soar/Alto section 4.1.1)."
        ),
        formatter_class=formatter,
    )
    objs.add_argument("log", metavar="LOG", type=Path, help="the shim's profile log (TKSHIM01)")
    objs.add_argument("-o", "--out", type=Path, metavar="FILE", help="also write the table as CSV")
    objs.add_argument("--json", action="store_true", help="print the table as a JSON list of rows on stdout")
    pl = soar_sub.add_parser(
        "place",
        help="Soar on a real host: shim log + perf samples (+ AOL) -> the shim's placement file",
        description=textwrap.dedent(
            """\
            Score the allocation sites of one profiled run with Soar's Algorithm 1 (Soar/Alto OSDI'25
            section 4.2) and choose the fast tier's sites (section 4.3). The profiled run, all three
            flows at once (perf's `-k mono` puts its sample times on CLOCK_MONOTONIC, the shim's clock;
            without it the samples match nothing; the shim's variables go on the program alone):

              perf stat -I 1000 -x, -o stat.csv -e cycles,cycle_activity.stalls_l3_miss,\\
                  offcore_requests.demand_data_rd,offcore_requests_outstanding.cycles_with_demand_data_rd \\
                  -- \\
                perf mem record -k mono -o perf.data -- env TIERKIT_SHIM_MODE=profile \\
                  TIERKIT_SHIM_LOG=prof.bin LD_PRELOAD=/path/to/libtierkit_shim.so ./program
              perf script -i perf.data -F time,event,addr,data_src,weight > samples.txt
              tierkit soar place prof.bin --samples samples.txt --aol stat.csv --fast-bytes 8G
              TIERKIT_SHIM_MODE=place TIERKIT_SHIM_PLACEMENT=soar-placement.txt \\
                LD_PRELOAD=/path/to/libtierkit_shim.so ./program

            Each LLC-miss sample (perf's data source past the LLC) counts for the allocation live at
            its address at its time (address <= a < address + size, alloc <= t < free). Per interval
            (the --aol file's, or --interval-ms without one): R = an object's share of the interval's
            samples, l = the interval's AOL = A1/A3 (offcore_requests_outstanding.
            cycles_with_demand_data_rd / offcore_requests.demand_data_rd; Ice Lake lacks the first:
            count cpu/event=0x60,umask=0x1,cmask=1,name=offcore_requests_outstanding.
            cycles_with_demand_data_rd/), p = the predicted slowdown. Algorithm 1: score += R p
            F(l) for a rarely accessed object (R < --r-min), R p / --hot-factor for a dominant one
            (R > --r-max), R p otherwise; the first two only while l < L0. F(l) is 2, 4 or 8, growing
            with l over bands between --aol-low and --aol-high.

            p: P = cycle_activity.stalls_l3_miss / cycles of the interval; with --calibration,
            P K(AOL), K = 1 / (k_a + k_b / AOL) (section 3.2) with the calibration's k_a and k_b (no
            defaults: without --calibration K = 1). An --aol file without the two stall events, or of
            `time_s,aol_cycles` lines, gives p = 1 (the R and AOL branches still apply). Without --aol
            the AOL is unknown: score += R (p = 1, no MLP adjustment), said in a note (stderr, and
            `notes` in --json).

            --aol formats: `perf stat -I MS -x,` output as is (CSV: time,value,unit,event,...;
            `cpu/EVENT/`, `cpu_core/EVENT/` and `EVENT:u` names are understood; `<not counted>`
            intervals score nothing); or `time_s,aol_cycles` lines (an optional header line), each an
            interval's end in seconds after the run's start and its AOL in cycles. Their times count
            from the shim log's first allocation (perf stat's own start is not on the shared clock;
            --start-ns sets it).

            A site (the shim's call-chain hash) scores the sum of its objects' scores; its unit score
            is that over its bytes. Sites are taken in unit-score order while the peak concurrent size
            (the most bytes live at once, from alloc/free times) of the chosen sites' allocations fits
            in --fast-bytes; the first that does not fit, every site below it and every site never
            sampled go to --slow-node.

            Writes the placement file (a `#` header, then `SITEHEX node:N` per site in rank order, as
            shim/README.md describes) and prints the ranking (--json: one JSON object). Exit status
            2 on bad input, with the file and line."""
        ),
        formatter_class=formatter,
    )
    pl.add_argument("log", metavar="LOG", type=Path, help="the shim's profile log (TKSHIM01)")
    pl.add_argument(
        "--samples",
        required=True,
        type=Path,
        metavar="PERF_SCRIPT",
        help="`perf script -F time,event,addr,data_src,weight` of `perf mem record -k mono` of the same run",
    )
    pl.add_argument(
        "--fast-bytes",
        required=True,
        type=_bytes,
        metavar="SIZE",
        help="room in the fast tier: bytes, or with K, M, G, T (binary), e.g. 8G, 512M",
    )
    pl.add_argument(
        "--aol",
        "--counters",
        dest="aol",
        type=Path,
        metavar="CSV",
        help="per-interval AOL: `perf stat -I 1000 -x,` output with offcore_requests_outstanding."
        "demand_data_rd and offcore_requests.demand_data_rd (and cycles, cycle_activity.stalls_l3_miss "
        "for p), or `time_s,aol_cycles` lines (default: none, p = 1 and no MLP adjustment)",
    )
    pl.add_argument(
        "--calibration",
        type=Path,
        metavar="JSON",
        help="the host's AOL_low/AOL_high and predictor constants k_a, k_b (the JSON `tierkit "
        "calibrate` writes); default: the Skylake bands below and p = P",
    )
    pl.add_argument(
        "--aol-low",
        type=float,
        metavar="CYCLES",
        help="AOL_low of F's bands (default: --calibration's, else 40, the paper's Skylake)",
    )
    pl.add_argument(
        "--aol-high",
        type=float,
        metavar="CYCLES",
        help="AOL_high of F's bands (default: --calibration's, else 100, the paper's Skylake)",
    )
    pl.add_argument(
        "--l0",
        type=float,
        metavar="CYCLES",
        help="L0: the AOL below which Algorithm 1 adjusts for MLP (default: AOL_high, 100)",
    )
    pl.add_argument(
        "--interval-ms",
        type=float,
        default=1000.0,
        metavar="MS",
        help="scoring interval without --aol (default 1000; with --aol its intervals are used)",
    )
    pl.add_argument(
        "--start-ns",
        type=int,
        metavar="NS",
        help="CLOCK_MONOTONIC time the --aol file's times count from (default: the log's first allocation)",
    )
    pl.add_argument(
        "--r-min", type=float, default=0.03, metavar="R", help="R_min of Algorithm 1 (default 0.03)"
    )
    pl.add_argument(
        "--r-max", type=float, default=0.7, metavar="R", help="R_max of Algorithm 1 (default 0.7)"
    )
    pl.add_argument(
        "--hot-factor",
        type=float,
        default=8.0,
        metavar="F",
        help="divisor of a dominant object's score below L0 (default 8)",
    )
    pl.add_argument(
        "--fast-node", type=_node, default=0, metavar="N", help="NUMA node of the fast tier (default 0)"
    )
    pl.add_argument(
        "--slow-node", type=_node, default=1, metavar="N", help="NUMA node of the slow tier (default 1)"
    )
    pl.add_argument(
        "-o", "--out", type=Path, metavar="FILE", help="the placement file (default: soar-placement.txt)"
    )
    pl.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")

    repro = sub.add_parser(
        "reproduce",
        help="reproduce a paper's results: report.md, figures (PNG) and claims.json",
        description=textwrap.dedent(
            """\
            Re-run a paper's experiments on the simulated machine and check its claims. Writes
            report.md (tables, figures, and where ours differs and why), the figures as PNG, and
            claims.json: a list of {claim, paper, ours, holds, note, paper_value, ours_value,
            tolerance, ratio, within_tolerance} objects (the numbers are null where a claim has no
            single headline number). `holds` is computed from the runs.

            Reproductions: colloid (Colloid, SOSP'24), soar-alto (Soar and Alto, OSDI'25),
            pact (PACT, ASPLOS'26), vulcan (Vulcan), toggle (migration toggling). `all` runs every
            one into DIR/PAPER and writes one validation report over them: DIR/report.md,
            DIR/report.html and DIR/claims.json (default DIR: reproduce-all); with --update-doc
            FILE it also writes the report into FILE between its marker lines (how
            docs/validation.md is regenerated: `tierkit reproduce all --out DIR --update-doc
            docs/validation.md`). Each reproduction's directory also gets run.json (the commit,
            version, date, mode and seeds of the run), and `all --reuse` takes the papers whose
            directories hold a finished run of the same mode and seeds from there.

            With --seeds every run is repeated under each seed (a run's seed j becomes S + j - 1;
            the default is seed 1 alone). Each seed's own report goes to DIR/seed-S (the first
            seed's to DIR), and a claim holds when it holds with more than half of the seeds:
            claims.json then gives the mean of the seeds' values as ours_value, and per claim
            seeds, holds_per_seed and ours_values. A claim on a discrete threshold (a count, a
            band edge), which one seed's small drift can flip, is so judged by the majority.

            Exit status: 0 when every claim holds, 3 when one does not (0 with --no-fail)."""
        ),
        formatter_class=formatter,
    )
    repro.add_argument(
        "paper", metavar="PAPER", help="which paper: colloid, soar-alto, pact, vulcan, toggle, or all"
    )
    repro.add_argument(
        "-o", "--out", type=Path, metavar="DIR", help="output directory (default: reproduce-PAPER)"
    )
    repro.add_argument("--quick", action="store_true", help="CI-sized runs (smaller, shorter)")
    repro.add_argument(
        "--no-fail",
        action="store_true",
        help="exit 0 even when claims do not hold (by default the exit status is 3 then)",
    )
    repro.add_argument(
        "--workers", type=int, metavar="N", help="parallel simulation processes (default: one per core)"
    )
    repro.add_argument(
        "--max-memory",
        type=_max_memory,
        metavar="SIZE",
        help=(
            "refuse each run whose estimated memory is above SIZE (as for `tierkit run`). With "
            "--workers N, give each run a share of the memory"
        ),
    )
    repro.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    repro.add_argument(
        "--seeds",
        type=_seeds,
        default=[1],
        metavar="SEEDS",
        help=(
            "judge the claims over these seeds: a count N (1..N), a range A-B or a list A,B,C "
            "(default: seed 1). Takes as many times as long"
        ),
    )
    repro.add_argument(
        "--reuse",
        action="store_true",
        help=(
            "with `all`: take each paper whose DIR/PAPER holds a finished run of the same mode and "
            "seeds (its claims.json and run.json) from there instead of running it again, so that "
            "an interrupted `all` goes on where it stopped"
        ),
    )
    repro.add_argument(
        "--update-doc",
        type=Path,
        metavar="FILE",
        help=(
            "with `all`: also write the report into FILE between its two marker lines "
            "(docs/validation.md has them; checked before the runs start)"
        ),
    )
    val = sub.add_parser(
        "validate",
        help="check the simulator against a real system (kernel: Linux's own NUMA-balancing tiering)",
        description=textwrap.dedent(
            """\
            `validate kernel` puts the simulator's `nbt` (Linux NUMA-balancing tiering) beside the real
            kernel's, recorded in the real-kernel tests' QEMU guest (tests/kernel: numa_balancing=2,
            demotion enabled, a hot region first placed on the slow node, /proc/vmstat every 100 ms).
            It runs the same process in the simulator with the kernel's knobs and writes report.md,
            timeline.png, hint_faults.png, kernel.csv, sim.csv, experiment.toml and comparison.json:
            hint faults per second and the time to promote 50% and 90% of the hot region, each with
            the ratio to the kernel's and whether it is within 25%. For a guest with one vCPU the
            simulated kswapd, woken by a promotion, waits half the guest's tick for the CPU
            (nbt:kswapd_wake_delay_us; docs/validation.md, section 1t).

            --scenario thp compares the same program on transparent huge pages (tkthp=1 on the guest's
            command line: both regions 2 MiB aligned with MADV_HUGEPAGE), simulated with 2 MiB pages:
            one hint fault and one promotion per huge page (change_huge_pmd, do_huge_pmd_numa_page);
            its page counts are 4 KiB pages, 512 to a huge page.

            --scenario press compares the recording of the fast node nearly full instead (tests/kernel
            scenario nbtpress: cold region first on node 0, hot on node 1, node 0 filled with mlocked
            pages, cold pages touched at a set rate): promotions and demotions per second in the
            steady state, the hot and cold regions on the fast tier, and the churn (pages promoted
            and demoted again); it writes moves.png too, and reclaim.png (the fast node's LRU lists
            and kswapd's scans and activations in both worlds) when the recording has reclaim's
            counters, and generations.png (node 0's multi-gen generations through the run in both
            worlds, and what kswapd found when it woke after a quiet spell) when the guest sampled
            them (tkgens=1 on its kernel command line; --sample-generations), and says whether the
            kernel's kswapd gave up when it has their trace (--trace-reclaim). The simulated nbt
            reclaims with the LRU the recording's kernel ran: the multi-gen LRU (nbt:lru_gen=true)
            unless the recording switched it off (--nbt-param lru_gen=false overrides). The shipped
            press recording is 100 s of sweeps with the guest's default multi-gen LRU and reclaim's
            traced runs.

            --scenario press-thp compares the press scenario on transparent huge pages (tkthp=1:
            both regions 2 MiB aligned with MADV_HUGEPAGE), simulated with 2 MiB pages: one hint
            fault and one promotion per huge page, 512 pages above a zone's high watermark for a
            promotion to pass (migrate_balanced_pgdat). Its shipped recording has the workload's
            1 ms TLB ticker (tktlbtick=1000, which --record sets too) and reclaim's traced runs;
            --all-recordings adds a second boot with the ticker and one without it. The
            workload's small VMAs (data, heap, vdso, stack) are a huge page each, mlocked: VMAs
            the scanner walks, off reclaim's lists (docs/validation.md, sections 1za and 1zb).

            The recording that ships with tierkit is used unless --recording names another;
            several --recording (or --all-recordings, every shipped one of the scenario) are each
            compared into a subdirectory, with summary.md and summary.json side by side (how far the
            guest's own boots differ: docs/validation.md, section 1e); --record boots the guest to
            make a new one first (a tierkit source checkout, QEMU and the Debian kernel, which
            tests/kernel/run.sh installs; about a minute, and for --scenario press, whose default
            is 400 s of sweeps, about 16 minutes)."""
        ),
        formatter_class=formatter,
    )
    val.add_argument("target", metavar="TARGET", choices=["kernel"], help="what to validate against: kernel")
    val.add_argument(
        "-o", "--out", type=Path, metavar="DIR", help="output directory (default: validate-kernel)"
    )
    val.add_argument(
        "--recording",
        type=Path,
        action="append",
        metavar="FILE",
        help="a recording (JSON, or JSON compressed with gzip) instead of the shipped one; repeat it to"
        " compare several (boots of one scenario), each into its own subdirectory of DIR, with"
        " summary.md and summary.json side by side",
    )
    val.add_argument(
        "--all-recordings",
        action="store_true",
        help="compare every recording of the scenario that ships with tierkit (press: the 100 s"
        " default, six 400 s boots, eleven more traced 100 s boots (node 0's zones, the agings"
        " and walks timed, one with the workload's TLB ticker, three with two vCPUs, three with"
        " node 0's generations sampled, one with the addresses eviction tested) and the"
        " classic-LRU one; press-thp: the default, a second boot with the TLB ticker and one"
        " without it), as repeated --recording do",
    )
    val.add_argument(
        "--record",
        action="store_true",
        help="boot the guest and record first (written to --recording, or DIR/recording.json)",
    )
    val.add_argument(
        "--repo",
        type=Path,
        metavar="DIR",
        help="the tierkit source checkout for --record (default: the one this package runs from)",
    )
    val.add_argument(
        "--scenario",
        choices=["empty", "press", "thp", "press-thp"],
        default="empty",
        help="empty: node 0 nearly empty (the original recording; default); press: node 0 nearly full;"
        " thp: the empty scenario's program on transparent huge pages (simulated with 2 MiB pages);"
        " press-thp: the press scenario on transparent huge pages",
    )
    val.add_argument(
        "--record-size",
        metavar="HOT,COLD,SECONDS[,FREE,RATE]",
        help="the recorded workload: hot and cold MiB and seconds (default 32,480,20; thp: 64,256,20,"
        " even MiB); with --scenario"
        " press also the MiB left free above node 0's high watermark and the cold touches per second"
        " (default 32,64,400,16,8192, about 16 minutes; the shipped recording is 32,64,100,16,8192"
        " with --trace-reclaim; press-thp: 32,64,100,16,8192, even MiB)",
    )
    val.add_argument(
        "--lru-gen",
        choices=["kernel", "on", "off"],
        default="kernel",
        help="with --record --scenario press or press-thp: the guest kernel's multi-gen LRU as it"
        " boots (kernel: Debian's 6.12 has it on; the shipped recording), or switched on or off first"
        " (off: the classic active/inactive lists; docs/validation.md, sections 1d and 1e); the simulated nbt"
        " follows the recording's LRU",
    )
    val.add_argument(
        "--trace-reclaim",
        action="store_true",
        help="with --record --scenario press or press-thp: record reclaim's tracepoints too (every"
        " kswapd run with what its LRU shrinks scanned, reclaimed, activated and kept); the report"
        " then says whether kswapd gave up (16 runs that reclaim nothing) and whether it aged the"
        " active list",
    )
    val.add_argument(
        "--sample-generations",
        action="store_true",
        help="with --record --scenario press or press-thp: the guest samples node 0's multi-gen generations"
        " every 100 ms too (/sys/kernel/debug/lru_gen; tkgens=1); the report then sets them beside"
        " the model's (generations.png, and what kswapd found when it woke after a quiet spell)",
    )
    val.add_argument(
        "--nbt-param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a parameter of the simulated nbt after the recording's knobs (repeatable), e.g."
        " --nbt-param max_reclaim_retries=16 --nbt-param lru_stats_flush_ms=2000: Linux's kswapd"
        " give-up with its 2 s statistics, which reproduces the traced classic-LRU recording"
        " (docs/validation.md, section 1d); `tierkit describe nbt` lists the parameters",
    )
    val.add_argument(
        "--sweep-in-order",
        action="store_true",
        help="--scenario press or press-thp: the simulated hot region is swept in address order"
        " (in_order), so a marked page faults when the sweep reaches it, promotions come in address"
        " order and the pages an aging walk finds young are the run the sweep went over, as the guest's are"
        " (docs/validation.md, section 1g); default: Poisson touches at the same rate",
    )
    val.add_argument(
        "--set",
        action="append",
        default=[],
        dest="sim_set",
        metavar="KEY=VALUE",
        help="set a model key of the simulated experiment (repeatable), e.g. --set epoch_ms=0.5 or"
        " --set kswapd_slice_ms=1; the keys the recording decides (sizes, duration, platform,"
        " processes, seed: use --seed) are refused; `tierkit run --help` describes the keys",
    )
    cpu = val.add_mutually_exclusive_group()
    cpu.add_argument(
        "--kswapd-shares-cpu",
        dest="kswapd_shares_cpu",
        action="store_const",
        const=True,
        default=None,
        help="--scenario press or press-thp: kswapd takes turns with the simulated workload on one"
        " CPU, which makes no access in kswapd's turns (kswapd_shares_cpu; turns of a 4 ms tick, or of the"
        " recording's TLB ticker period, kswapd_slice_ms), as on the guest's one vCPU; default: as"
        " the recording's guest ran (shared with one vCPU, docs/validation.md section 1z)",
    )
    cpu.add_argument(
        "--kswapd-own-cpu",
        dest="kswapd_shares_cpu",
        action="store_const",
        const=False,
        help="--scenario press or press-thp: kswapd has a CPU of its own, beside the simulated"
        " workload, whatever the recording's guest had",
    )
    val.add_argument("--seed", type=_seed, default=1, metavar="N", help="the simulation's seed (default 1)")
    val.add_argument("--json", action="store_true", help="print the comparison as one JSON object on stdout")
    _add_trace_sweep_report(sub, formatter)
    return parser


def _add_trace_sweep_report(sub: Any, formatter: type[argparse.HelpFormatter]) -> None:
    trace = sub.add_parser(
        "trace",
        help="import, inspect and record memory-access traces (replay: `tierkit run trace:FILE`)",
        description=textwrap.dedent(
            """\
            Memory-access traces in tierkit's binary format (docs/traces.md). Replay one as a workload
            with `tierkit run trace:FILE` or `workload = "trace"` in an experiment file."""
        ),
        formatter_class=formatter,
    )
    tsub = trace.add_subparsers(
        dest="trace_command", metavar="SUBCOMMAND", required=True, title="subcommands"
    )
    imp = tsub.add_parser(
        "import",
        help="convert lackey / perf-script / damon input into a binary trace",
        description=textwrap.dedent(
            """\
            Convert a trace (streamed; INPUT `-` is stdin; plain text, gzip or zstd, told apart by
            the first bytes, not the name):
              lackey       valgrind --tool=lackey --trace-mem=yes --log-file=OUT PROG
              perf-script  perf mem record PROG; perf script -F time,event,addr,data_src,weight
              damon        damo record PROG, then its damon.data as it is (zlib-compressed or
                           plain JSON), or `damo report raw` of it, or `perf script` of
                           damon:damon_aggregated events (told apart by their first bytes)
            OUTPUT appears only once the import is complete: a failed import leaves none.
            A lackey trace without its `I` lines has no time in it: tierkit says so, and replays
            it with compute per access (`tierkit describe trace`: instructions_per_access)."""
        ),
        formatter_class=formatter,
    )
    imp.add_argument(
        "format",
        metavar="FORMAT",
        choices=["lackey", "perf-script", "damon"],
        help="the input's format: lackey, perf-script or damon (see above)",
    )
    imp.add_argument(
        "input", metavar="INPUT", help="the trace to convert (plain text, gzip or zstd); `-` reads stdin"
    )
    imp.add_argument(
        "-o",
        "--out",
        "--output",
        dest="output",
        required=True,
        metavar="OUTPUT",
        help="the binary trace to write (--output is the old spelling)",
    )
    info = tsub.add_parser(
        "info",
        help="summarise a binary trace (accesses, pages, span, stamps, per-window MLP)",
        description=textwrap.dedent(
            """            Summarise a binary trace, validating every record, and show the per-window MLP
            distribution of its replay as `tierkit run trace:FILE` with the same --set options
            would build it (the LLC model's size matters: --set llc_mb=0.25 for small programs),
            over the trace's own windows unless --set window_ms or window_epochs is given, and
            how many windows a run replays after merging the short ones.
            Prints: format version, source and stamps; accesses, stores and records; distinct 4 KiB
            pages and 64-byte lines; the address span; the first and last instruction stamps; and
            the MLP estimate with its per-window distribution."""
        ),
        epilog=trace_set_help(),
        formatter_class=formatter,
    )
    info.add_argument(
        "file", metavar="FILE", help="a binary trace (`tierkit trace import` or `trace record`)"
    )
    info.add_argument(
        "--json",
        action="store_true",
        help="print the summary as one JSON object (the fields above, and `mlp`: estimate, windows, "
        "min, p10, p50, p90, max, per_window; or `mlp_error`)",
    )
    info.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        type=_override,
        metavar="KEY=VALUE",
        help="a replay setting as for `tierkit run` (platform, llc_mb, mlp, ...); repeatable; "
        "the keys are listed below",
    )
    rec = tsub.add_parser(
        "record",
        help="run a program under valgrind lackey and convert its trace on the fly",
        description="Run CMD under valgrind lackey (thousands of times slower) and write a binary trace.",
    )
    rec.add_argument(
        "-o",
        "--out",
        "--output",
        dest="output",
        default="trace.tkt",
        metavar="OUTPUT",
        help="the binary trace to write (default: trace.tkt; --output is the old spelling)",
    )
    rec.add_argument(
        "cmd",
        nargs=argparse.REMAINDER,
        metavar="-- CMD ARGS",
        help="the program to record and its arguments, after `--`",
    )

    sw = sub.add_parser(
        "sweep",
        help="run a grid of experiments locally or on a Dask cluster into one Parquet table",
        description=textwrap.dedent(
            """\
            Run every point of SWEEP.toml (experiments x policies x [grid] x [params.POLICY] x seeds)
            in local processes, or on a Dask distributed cluster with --dask. Writes DIR/results.parquet
            (one row per point), DIR/points/ and DIR/series/. Re-running skips points already done; a
            failed point is recorded with its error, the others go on, and the sweep ends with the
            failed points' errors on stderr and exit status 3 (--no-fail: 0). See docs/sweeps.md
            for the file format."""
        ),
        formatter_class=formatter,
    )
    sw.add_argument(
        "sweep",
        metavar="SWEEP.toml",
        help="the sweep file: experiments, policies, seeds, [grid] (docs/sweeps.md)",
    )
    sw.add_argument("--workers", type=int, metavar="N", help="local processes (default: one per core)")
    sw.add_argument("--dask", metavar="ADDRESS", help="Dask scheduler address, e.g. tcp://host:8786")
    sw.add_argument("-o", "--out", type=Path, metavar="DIR", help="output directory (default: sweep-NAME)")
    sw.add_argument(
        "--max-memory",
        type=_max_memory,
        metavar="SIZE",
        help=(
            "refuse each point whose estimated memory is above SIZE (as for `tierkit run`); a refused "
            "point is recorded as failed. With --workers N, give each point a share of the memory"
        ),
    )
    sw.add_argument("--no-cache", action="store_true", help=NO_CACHE_HELP)
    sw.add_argument(
        "--no-fail",
        action="store_true",
        help="exit 0 even when points failed (they stay in results.parquet with status `error`)",
    )

    rep = sub.add_parser(
        "report",
        help="tables and plots of sweep directories: Markdown with PNGs and one HTML page",
        description="Side-by-side tables and plots of one or more `tierkit sweep` output directories.",
    )
    rep.add_argument(
        "dirs",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="`tierkit sweep` output directories (with results.parquet)",
    )
    rep.add_argument(
        "-o", "--out", type=Path, metavar="OUT", help="where to write (default: FIRST_DIR/report)"
    )


# ------------------------------------------------------------------------------------------ commands


def cmd_trace(args: argparse.Namespace) -> int:
    import json

    from tierkit import trace

    if args.trace_command == "import":
        st = trace.import_trace(args.format, args.input, args.output)
        how = "" if st["compression"] == "none" else f", {st['compression']}"
        sys.stdout.write(
            f"{args.output}: {st['accesses']} accesses in {st['records']} records "
            f"({st['lines']} input lines{how}, {st['skipped']} not accesses)\n"
        )
        if args.format == "lackey" and st["instructions"] == 0:
            sys.stderr.write(f"{PROG}: warning: {NO_STAMPS}\n")
    elif args.trace_command == "info":
        i = trace.info(args.file, args.overrides)
        if args.json:
            sys.stdout.write(json.dumps(i, sort_keys=True) + "\n")
        else:
            span = i["max_addr"] - i["min_addr"] + 1 if i["records"] else 0
            stamps = (
                f"  stamps {i['first_stamp']}-{i['last_stamp']}\n"
                if i["has_stamps"]
                else f"  stamps none: {NO_STAMPS}\n"
            )
            sys.stdout.write(
                f"{i['path']}: tierkit trace v{i['version']} from {i['source']} "
                f"({i['unit_bytes']}-byte units, "
                f"{'no' if i['stamp'] == 'none' else i['stamp']} stamps)\n"
                f"  accesses {i['accesses']} ({i['stores']} stores) in {i['records']} records\n"
                f"  pages {i['pages']} (4 KiB), lines {i['lines']}\n"
                f"  addresses {i['min_addr']:#x}-{i['max_addr']:#x} ({span / 2**20:.1f} MiB span)\n"
                + stamps
                + _mlp_text(i)
            )
    else:
        cmd = list(args.cmd)
        if cmd and cmd[0] == "--":
            cmd = cmd[1:]
        st = trace.record(cmd, args.output, warn=lambda m: sys.stderr.write(f"{PROG}: warning: {m}\n"))
        sys.stdout.write(f"{args.output}: {st['accesses']} accesses in {st['records']} records\n")
    return EXIT_OK


NO_STAMPS = (
    "the trace has no instruction stamps (a lackey trace without its `I` lines); a run models "
    "compute per access as instructions_per_access x base_cpi (`tierkit describe trace`)"
)


def _mlp_text(i: dict[str, Any]) -> str:
    """The per-window MLP lines of `trace info`."""
    m = i.get("mlp")
    if m is None:
        return f"  MLP: none ({i.get('mlp_error', 'no replay')})\n"
    return (
        f"  MLP estimate {m['estimate']:.2f} over {m['windows']} windows ({m['misses']} misses, "
        f"{m['platform']} LLC model): min {m['min']:.2f}, p10 {m['p10']:.2f}, median {m['p50']:.2f}, "
        f"p90 {m['p90']:.2f}, max {m['max']:.2f}\n"
        + (
            f"  a run replays them as {m['run_windows']} window{'s' if m['run_windows'] != 1 else ''}"
            " (window_ms merges short ones)\n"
            if m.get("run_windows", m["windows"]) != m["windows"]
            else ""
        )
    )


def cmd_sweep(args: argparse.Namespace) -> int:
    from tierkit import sweeps
    from tierkit.progress import stderr_is_terminal

    points = sweeps.load_sweep(args.sweep)
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers must be at least 1, got {args.workers}")
    out = args.out or Path(f"sweep-{Path(args.sweep).stem}")
    _check_out_dir(out)
    res = sweeps.sweep(
        points,
        out=out,
        workers=args.workers,
        dask=args.dask,
        progress=stderr_is_terminal(),
        max_memory=args.max_memory,
    )
    sys.stdout.write(
        f"{out / 'results.parquet'}: {len(res.table)} points ({res.ran} run, {res.skipped} already done, "
        f"{res.failed} failed)\n"
    )
    if res.failed:
        bad = res.table[res.table["status"] != "ok"]
        shown = 5
        for _, row in bad.head(shown).iterrows():
            sys.stderr.write(
                f"tierkit: point {row['point_id']} ({row['experiment']}, {row['policy']}, "
                f"seed {row['seed']}) failed: {row['error']}\n"
            )
        if len(bad) > shown:
            more = len(bad) - shown
            sys.stderr.write(f"tierkit: ... and {more} more (the `error` column of results.parquet)\n")
        if not args.no_fail:
            sys.stderr.write(
                f"tierkit: {res.failed} point(s) failed; the others are in results.parquet "
                "(--no-fail to exit 0 regardless)\n"
            )
            return EXIT_CLAIMS
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    from tierkit.reports import report

    for d in args.dirs:
        if not d.is_dir():
            raise CliError(f"`{d}` is not a directory (expected a `tierkit sweep` output directory)")
    path = report(args.dirs, args.out)
    sys.stdout.write(f"wrote {path.parent / 'report.md'} and {path}\n")
    return EXIT_OK


def cmd_run(args: argparse.Namespace) -> int:
    import tierkit
    from tierkit.output import print_summary, summary_text
    from tierkit.progress import RunProgress, stderr_is_terminal

    if args.out is not None:
        _check_out_dir(args.out)
    label = f"{args.experiment} ({args.policy or 'default policy'})"
    with RunProgress(label) as bar:
        progress: Callable[[float, float], None] = bar if stderr_is_terminal() else _quiet_progress
        result = tierkit.run(
            args.experiment,
            args.policy,
            args.overrides,
            args.seed,
            progress=progress,
            max_memory=args.max_memory,
        )
    for warning in result.summary.get("warnings", []):
        sys.stderr.write(f"{PROG}: warning: {warning}\n")

    written = result.write(args.out) if args.out is not None else []
    if args.json:
        sys.stdout.write(summary_text(result.summary))
        return EXIT_OK

    from rich.console import Console

    console = Console(highlight=False)
    print_summary(result.summary, console)
    for path in written:
        console.print(f"wrote {path}")
    return EXIT_OK


def _quiet_progress(done: float, total: float) -> None:
    """Passed when no bar is drawn, so that Ctrl-C is noticed during a long run."""


# Output directories this command created, each with the topmost directory it had to create:
# removed again, where still empty, when the command fails (no output left behind by an error).
_MADE_OUT_DIRS: list[tuple[Path, Path]] = []


def _check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise CliError(f"--out `{out}` exists and is not a directory")
    top = out
    while not top.parent.exists() and top.parent != top:
        top = top.parent
    made = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise CliError(f"cannot create --out directory `{out}`: {err.strerror or err}") from None
    if made:
        _MADE_OUT_DIRS.append((out, top))
    if not os.access(out, os.W_OK):
        raise CliError(f"--out directory `{out}` is not writable")


def _remove_empty_made_dirs() -> None:
    """After a failed command: the output directories it created and left empty go again."""
    while _MADE_OUT_DIRS:
        d, top = _MADE_OUT_DIRS.pop()
        while True:
            try:
                d.rmdir()  # only an empty directory
            except OSError:
                break
            if d == top:
                break
            d = d.parent


def cmd_list(args: argparse.Namespace) -> int:
    import tierkit

    listing = {
        "policies": tierkit.list_policies,
        "workloads": tierkit.list_workloads,
        "platforms": tierkit.list_platforms,
    }[args.what]()
    if args.json:
        import json

        rows = [{"name": name, "description": " ".join(description.split())} for name, description in listing]
        sys.stdout.write(json.dumps(rows) + "\n")
        return EXIT_OK
    lines = [f"{name}  {' '.join(description.split())}" for name, description in listing]
    sys.stdout.write("".join(line + "\n" for line in lines))
    return EXIT_OK


PARAM_FIELDS = ("name", "kind", "default", "unit", "doc")


def cmd_describe(args: argparse.Namespace) -> int:
    import difflib
    import json

    import tierkit

    name = args.name
    policies = [n for n, _ in tierkit.list_policies()]
    workloads = [n for n, _ in tierkit.list_workloads()]
    if name == "trace":
        from tierkit import trace

        keys = trace.workload_keys()
        if args.json:
            params = [{"name": key, "doc": " ".join(doc.split())} for key, doc in keys]
            sys.stdout.write(json.dumps({"name": "trace", "type": "trace", "parameters": params}) + "\n")
            return EXIT_OK
        sys.stdout.write(
            'workload trace: replays trace files (workload = "trace" in an experiment, or '
            "`tierkit run trace:FILE --set KEY=VALUE`; docs/traces.md). Its keys, besides the common "
            "ones (platform, fast_ratio, duration_s, seed, ...):\n"
        )
        for key, doc in keys:
            sys.stdout.write(f"  {key:<24} {' '.join(doc.split())}\n")
        return EXIT_OK
    if name in policies:
        params, kind, what = tierkit.describe_policy(name), "policy", f"policy {name}"
    elif name in workloads:
        params, kind = tierkit.describe_workload(name), "workload"
        what = f"workload {name} (set with --set KEY=VALUE)"
    else:
        close = difflib.get_close_matches(name, [*policies, *workloads, "trace"], n=1)
        hint = f"; did you mean `{close[0]}`?" if close else ""
        raise CliError(
            f"no policy or workload named `{name}`{hint} "
            "(`tierkit list policies` and `tierkit list workloads` show them)"
        )
    if args.json:
        rows = [{key: param.get(key) for key in PARAM_FIELDS} for param in params]
        sys.stdout.write(json.dumps({"name": name, "type": kind, "parameters": rows}, default=str) + "\n")
        return EXIT_OK
    if not params:
        sys.stdout.write(f"{what} takes no parameters\n")
        return EXIT_OK
    rows = [[_cell(param.get(key)) for key in PARAM_FIELDS] for param in params]
    if not sys.stdout.isatty():
        # Piped or redirected: plain aligned columns, one parameter per line, nothing wrapped or split.
        sys.stdout.write(f"parameters of {what}\n" + _plain_table(PARAM_FIELDS, rows))
        return EXIT_OK
    from rich.console import Console
    from rich.table import Table

    console = Console(highlight=False)
    widths = [max(len(r[i]) for r in [PARAM_FIELDS, *rows]) for i in range(len(PARAM_FIELDS))]
    if sum(widths[:-1]) + 3 * len(widths) + 20 > console.width:
        # Too narrow for the names and a readable doc column: plain lines, which the terminal wraps.
        sys.stdout.write(f"parameters of {what}\n" + _plain_table(PARAM_FIELDS, rows))
        return EXIT_OK
    table = Table(title=f"parameters of {what}", title_justify="left")
    for column, width in zip(PARAM_FIELDS, widths, strict=True):
        # Names, types and defaults never wrap (they are copied into specs); the doc column does.
        if column == "doc":
            table.add_column(column, overflow="fold")
        else:
            table.add_column(column, no_wrap=True, min_width=width)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    return EXIT_OK


def _cell(value: object) -> str:
    return "" if value is None else " ".join(str(value).split())


def _plain_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns separated by two spaces, padded to the widest cell; the last column is not padded."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for r in [header, *rows]:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(r[:-1])] + [r[-1]]
        lines.append("  ".join(cells).rstrip())
    return "".join(line + "\n" for line in lines)


def cmd_demo(args: argparse.Namespace) -> int:
    from tierkit.demo import run_demo

    _check_out_dir(args.out)
    run_demo(args.out, quick=args.quick)
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    import json

    import tierkit

    core = tierkit._core_module()
    result = dict(core.calibrate(args.platform))
    out = args.out or Path(f"calibration-{args.platform}.json")
    if out.parent and not out.parent.exists():
        raise CliError(f"--out `{out}`: directory `{out.parent}` does not exist")
    out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    if args.json:
        sys.stdout.write(json.dumps(result, sort_keys=True) + "\n")
        return EXIT_OK
    sys.stdout.write(
        f"{args.platform}: AOL_low {result['aol_low_cycles']:.1f} cycles, "
        f"AOL_high {result['aol_high_cycles']:.1f} cycles, "
        f"K = 1 / ({result['k_a']:.4f} + {result['k_b']:.4f} / AOL)\n"
    )
    if result.get("stall_k_cycles"):
        ks = ", ".join(f"{k:.1f}" for k in result["stall_k_cycles"])
        sys.stdout.write(f"  PACT stall k per tier (S = k * LLC-misses / MLP): {ks} cycles\n")
    sys.stdout.write("  mlp  compute_ns   AOL(cycles)      P   slowdown      K\n")
    for p in result["points"]:
        sys.stdout.write(
            f"  {p['mlp']:>3g}  {p['compute_ns']:>10g}  {p['aol_cycles']:>12.2f}  {p['p']:.3f}"
            f"  {p['slowdown']:>8.3f}  {p['k']:.3f}\n"
        )
    sys.stdout.write(f"saved to {out}\n")
    return EXIT_OK


def cmd_soar(args: argparse.Namespace) -> int:
    import json

    import tierkit

    if args.soar_command == "objects":
        from tierkit.shimlog import read_objects, sites

        table = sites(read_objects(args.log))
        if args.out is not None:
            table.to_csv(args.out, index=False)
        if args.json:
            sys.stdout.write(json.dumps(table.to_dict(orient="records")) + "\n")
        else:
            sys.stdout.write(table.to_string(index=False) + "\n")
        return EXIT_OK
    if args.soar_command == "place":
        from tierkit.soarplace import place, write_placement

        out = args.out or Path("soar-placement.txt")
        if out.parent and not out.parent.exists():
            raise CliError(f"--out `{out}`: directory `{out.parent}` does not exist")
        if not 0.0 <= args.r_min <= args.r_max <= 1.0:
            raise CliError(f"need 0 <= --r-min <= --r-max <= 1, got {args.r_min} and {args.r_max}")
        if args.interval_ms <= 0 or args.hot_factor < 1:
            raise CliError("--interval-ms must be > 0 and --hot-factor >= 1")
        for flag, v in (("--l0", args.l0), ("--aol-low", args.aol_low), ("--aol-high", args.aol_high)):
            if v is not None and not v > 0:
                raise CliError(f"{flag} must be above 0 cycles, got {v}")
        res = place(
            args.log,
            args.samples,
            args.fast_bytes,
            aol=args.aol,
            calibration=args.calibration,
            interval_ms=args.interval_ms,
            start_ns=args.start_ns,
            r_min=args.r_min,
            r_max=args.r_max,
            hot_factor=args.hot_factor,
            l0=args.l0,
            aol_low=args.aol_low,
            aol_high=args.aol_high,
            fast_node=args.fast_node,
            slow_node=args.slow_node,
        )
        write_placement(out, res)
        res["placement"] = str(out)
        for n in res["notes"]:
            sys.stderr.write(f"note: {n}\n")
        if args.json:
            sys.stdout.write(json.dumps(res, sort_keys=True) + "\n")
            return EXIT_OK
        import pandas as pd

        table = pd.DataFrame(res["sites"])
        table["node"] = [f"node:{n}" for n in table["node"]]
        cols = ["site", "objects", "bytes", "peak_bytes", "samples", "score", "unit_score", "rank", "node"]
        sys.stdout.write(table[cols].to_string(index=False) + "\n")
        sys.stdout.write(
            f"{res['matched_samples']} of {res['llc_miss_samples']} LLC-miss samples matched an allocation; "
            f"{sum(table['fast'])} of {len(table)} sites to the fast tier (node {res['fast_node']}); "
            f"p = {res['p_model']}; saved to {out}\n"
        )
        return EXIT_OK
    if args.soar_command != "profile":
        raise CliError(
            "choose an action: `tierkit soar profile EXPERIMENT`, `tierkit soar objects LOG` "
            "or `tierkit soar place LOG`"
        )
    table = tierkit.soar_profile(args.experiment, args.overrides, args.seed)
    out = args.out or Path("soar-profile.csv")
    if out.parent and not out.parent.exists():
        raise CliError(f"--out `{out}`: directory `{out.parent}` does not exist")
    table.to_csv(out, index=False)
    if args.json:
        sys.stdout.write(json.dumps(table.to_dict(orient="records")) + "\n")
        return EXIT_OK
    cols = [
        "object",
        "bytes",
        "lifetime_s",
        "accesses",
        "unit_score",
        "rank_first_touch",
        "rank_frequency",
        "rank_soar",
    ]
    sys.stdout.write(table[cols].to_string(index=False) + "\n")
    sys.stdout.write(f"saved to {out}\n")
    return EXIT_OK


def cmd_reproduce(args: argparse.Namespace) -> int:
    from tierkit.progress import stderr_is_terminal
    from tierkit.reproduce import ReuseError, check, reproduce, reproduce_all

    check(args.paper)
    out = args.out or Path(f"reproduce-{args.paper}")
    _check_out_dir(out)
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers must be at least 1, got {args.workers}")
    if args.update_doc is not None and args.paper != "all":
        raise CliError("--update-doc needs `reproduce all`: the report it writes covers every paper")
    if args.reuse and args.paper != "all":
        raise CliError("--reuse needs `reproduce all`: a single paper is run, or not run at all")
    common: dict[str, Any] = {
        "out": out,
        "quick": args.quick,
        "workers": args.workers,
        "progress": stderr_is_terminal(),
        "max_memory": args.max_memory,
        "seeds": args.seeds,
    }
    if args.paper == "all":
        try:
            by_paper = reproduce_all(**common, update_doc=args.update_doc, reuse=args.reuse)
        except ReuseError as err:
            raise CliError(str(err)) from None
    else:
        by_paper = {args.paper: reproduce(args.paper, **common)}
    failed = 0
    for name, claims in by_paper.items():
        held = sum(c.holds for c in claims)
        failed += len(claims) - held
        report = out / name / "report.md" if args.paper == "all" else out / "report.md"
        sys.stdout.write(f"{report}: {held} of {len(claims)} claims hold\n")
        for c in claims:
            sys.stdout.write(f"  [{'ok' if c.holds else 'NO'}] {c.claim}: paper {c.paper}; ours {c.ours}\n")
    if args.paper == "all":
        total = sum(len(c) for c in by_paper.values())
        sys.stdout.write(f"{out / 'report.md'}: {total - failed} of {total} claims hold\n")
        if args.update_doc is not None:
            sys.stdout.write(f"{args.update_doc}: the report written between its markers\n")
    if failed and not args.no_fail:
        sys.stderr.write(f"tierkit: {failed} claim(s) do not hold (--no-fail to exit 0 regardless)\n")
        return EXIT_CLAIMS
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    import tierkit
    from tierkit.validate import PRESS_SCENARIOS, ValidationError, with_params, with_sets

    out = args.out or Path("validate-kernel")
    try:
        # a bad --nbt-param or --set is refused before anything is made or written
        with_params("nbt", args.nbt_param, {p["name"] for p in tierkit.describe_policy("nbt")})
        with_sets("", args.sim_set)
    except ValidationError as err:
        raise CliError(str(err)) from None
    if (args.sweep_in_order or args.kswapd_shares_cpu is not None) and args.scenario not in PRESS_SCENARIOS:
        raise CliError(
            "--sweep-in-order, --kswapd-shares-cpu and --kswapd-own-cpu model the press scenario's"
            " guest (--scenario press or press-thp)"
        )
    recordings: list[Path] = list(args.recording or [])
    if args.all_recordings:
        if recordings or args.record:
            raise CliError("--all-recordings: not with --recording or --record")
        from tierkit.validate import shipped_recordings

        recordings = shipped_recordings(args.scenario)
    if len(recordings) > 1 and args.record:
        raise CliError("--record: records one recording; give --recording once with it")
    # every recording is read and checked (once) before the output directory is made
    from tierkit.validate import load_recording

    try:
        loaded = [] if args.record else [load_recording(path) for path in recordings]
    except ValidationError as err:
        raise CliError(str(err)) from None
    made = not out.exists()
    _check_out_dir(out)
    try:
        if len(recordings) > 1:
            return _validate_many(args, out, recordings, loaded)
        return _validate_one(args, out, recordings, loaded)
    except BaseException:
        # a directory this command made holds nothing of use after a failure (no partial output),
        # unless it holds a guest recording --record made, which is kept
        if made and not (out / "recording.json").exists():
            import shutil

            shutil.rmtree(out, ignore_errors=True)
        raise


def _validate_one(
    args: argparse.Namespace, out: Path, recordings: list[Path], loaded: list[dict[str, Any]]
) -> int:
    import json

    from tierkit.validate import PRESS_SCENARIOS, SCENARIOS, ValidationError, record, validate_kernel

    recording = recordings[0] if recordings else None
    try:
        if args.record:
            press = args.scenario in PRESS_SCENARIOS
            # the scenario's sizes and their defaults (validate.SCENARIOS)
            sizes = SCENARIOS[args.scenario][2]
            size = args.record_size or ",".join(str(default) for _, default, _, _ in sizes)
            parts = size.split(",")
            if len(parts) != len(sizes) or not all(p.strip().isdigit() for p in parts):
                want = "HOT,COLD,SECONDS,FREE,RATE (five" if press else "HOT,COLD,SECONDS (three"
                raise CliError(f"--record-size: expected {want} integers), got `{size}`")
            repo = args.repo or Path(__file__).resolve().parents[2]
            for flag, given in (
                ("--lru-gen", args.lru_gen != "kernel"),
                ("--trace-reclaim", args.trace_reclaim),
                ("--sample-generations", args.sample_generations),
            ):
                if given and not press:
                    raise CliError(
                        f"{flag}: only --scenario press reclaims (the empty scenario never fills node 0)"
                    )
            recording = record(
                repo,
                recording or out / "recording.json",
                *(int(p) for p in parts),
                scenario=args.scenario,
                lru_gen=None if args.lru_gen == "kernel" else args.lru_gen == "on",
                trace_reclaim=args.trace_reclaim,
                sample_generations=args.sample_generations,
            )
            sys.stderr.write(f"recorded {recording}\n")
        comparison = validate_kernel(
            out, recording, rec=loaded[0] if loaded else None, **_validation_options(args)
        )
    except ValidationError as err:
        raise CliError(str(err)) from None
    if args.json:
        sys.stdout.write(json.dumps(comparison, default=str) + "\n")
        return EXIT_OK
    sys.stdout.write(f"{out / 'report.md'}: kernel {comparison['kernel']}, {comparison['policy']}\n")
    for r in comparison["rows"]:
        mark = ("ok" if r["within_tolerance"] else "NO") if r["compared"] else "  "
        sys.stdout.write(
            f"  [{mark}] {r['metric']}: kernel {r['kernel']:.4g}, tierkit {r['sim']:.4g}"
            f" (ratio {r['ratio']:.3g})\n"
        )
    return EXIT_OK


def _validation_options(args: argparse.Namespace) -> dict[str, Any]:
    """What `validate kernel` passes on to each comparison besides the output and the recording."""
    from tierkit.progress import stderr_is_terminal

    return {
        "seed": args.seed,
        "progress": stderr_is_terminal(),
        "scenario": args.scenario,
        "nbt_params": args.nbt_param,
        "sim_sets": args.sim_set,
        "sweep_in_order": args.sweep_in_order,
        "kswapd_shares_cpu": args.kswapd_shares_cpu,
    }


def _validate_many(
    args: argparse.Namespace, out: Path, recordings: list[Path], loaded: list[dict[str, Any]]
) -> int:
    import json

    from tierkit.validate import ValidationError, validate_many

    try:
        summary = validate_many(out, recordings, records=loaded, **_validation_options(args))
    except ValidationError as err:
        raise CliError(str(err)) from None
    if args.json:
        sys.stdout.write(json.dumps(summary, default=str) + "\n")
        return EXIT_OK
    sys.stdout.write(f"{out / 'summary.md'}: {len(summary['recordings'])} recordings\n")
    for e in summary["recordings"]:
        verdict = "within tolerance" if e["within_tolerance"] else "outside: " + ", ".join(e["outside"])
        sys.stdout.write(f"  {e['dir']}: {verdict}\n")
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "validate": cmd_validate,
    "trace": cmd_trace,
    "sweep": cmd_sweep,
    "report": cmd_report,
    "calibrate": cmd_calibrate,
    "soar": cmd_soar,
    "reproduce": cmd_reproduce,
    "run": cmd_run,
    "list": cmd_list,
    "describe": cmd_describe,
    "demo": cmd_demo,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tierkit`` console script and of ``python -m tierkit``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.version:
        import tierkit

        sys.stdout.write(f"tierkit {tierkit.__version__}\n")
        return EXIT_OK
    if args.command is None:
        parser.error(f"no command given; choose one of: {', '.join(COMMANDS)}")

    from tierkit import TierkitError

    # --no-cache reaches every run of the command, its worker processes included, as the
    # environment variable tierkit.run reads (restored when the command returns).
    saved = os.environ.get("TIERKIT_NO_CACHE")
    if getattr(args, "no_cache", False):
        os.environ["TIERKIT_NO_CACHE"] = "1"
    succeeded = False
    _MADE_OUT_DIRS.clear()
    try:
        status = COMMANDS[args.command](args)
        succeeded = True
        return status
    except (TierkitError, CliError) as err:
        fail(str(err))
    except KeyboardInterrupt:
        fail("interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        # The reader went away (`tierkit list policies | head -1`): not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as err:
        where = f" `{err.filename}`" if err.filename else ""
        fail(f"{err.strerror or err}{where}")
    except Exception as err:  # a bug, not a user error: still one line unless TIERKIT_DEBUG is set
        if os.environ.get("TIERKIT_DEBUG"):
            raise
        fail(
            f"internal error: {type(err).__name__}: {err} (set TIERKIT_DEBUG=1 for a traceback)",
            EXIT_INTERNAL,
        )
    except BaseException as err:
        # A Rust panic surfaces as pyo3's PanicException, a BaseException: a bug, reported in one line.
        if type(err).__name__ != "PanicException" or os.environ.get("TIERKIT_DEBUG"):
            raise
        fail(
            f"internal error: the simulator panicked: {err} (set TIERKIT_DEBUG=1 for a traceback)",
            EXIT_INTERNAL,
        )
    finally:
        if not succeeded:
            _remove_empty_made_dirs()
        _MADE_OUT_DIRS.clear()
        if saved is None:
            os.environ.pop("TIERKIT_NO_CACHE", None)
        else:
            os.environ["TIERKIT_NO_CACHE"] = saved


if __name__ == "__main__":
    raise SystemExit(main())
