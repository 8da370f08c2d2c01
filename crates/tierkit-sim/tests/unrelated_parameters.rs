//! A result must not move when only a parameter it has no reason to read changes (the brief's
//! "results must not be artifacts"; the step and the order of the processes have their own
//! tests, `test_epoch_convergence.py` and `test_process_order.py`). Each case here runs one
//! experiment twice, changing only a parameter the run has no use for, and asks for the same
//! summary bit for bit (the wall-clock fields aside). A cost read where it should not be, a
//! random stream shared between a mechanism and one it does not drive, a component built and
//! drawing from the seed although it never runs: each makes one of these fail.

use serde_json::Value;
use tierkit_sim::curve::Curve;
use tierkit_sim::{load, run, Experiment, RunOutput, Summary};

fn experiment(workload: &str, sets: &[&str]) -> Experiment {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    load(workload, &sets, Some(1)).unwrap()
}

/// The run's summary (its wall-clock time zeroed) and time series.
fn output(exp: &Experiment, policy: &str) -> RunOutput {
    let mut out = run(exp, policy, &mut |_, _| true).unwrap();
    out.summary.wall_seconds = 0.0;
    out
}

fn summary(exp: &Experiment, policy: &str) -> Summary {
    output(exp, policy).summary
}

/// The summary's fields that differ, with both values, for the failure message.
fn differences(a: &Summary, b: &Summary) -> Vec<String> {
    fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (k, v) in x {
                    walk(
                        &format!("{path}.{k}"),
                        v,
                        y.get(k).unwrap_or(&Value::Null),
                        out,
                    );
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (u, v)) in x.iter().zip(y).enumerate() {
                    walk(&format!("{path}[{i}]"), u, v, out);
                }
            }
            _ if a != b => out.push(format!("{path}: {a} vs {b}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(
        "",
        &serde_json::to_value(a).unwrap(),
        &serde_json::to_value(b).unwrap(),
        &mut out,
    );
    out
}

fn assert_same(what: &str, a: &Summary, b: &Summary) {
    let d = differences(a, b);
    assert!(
        d.is_empty(),
        "{what}: the summary changed\n  {}",
        d.join("\n  ")
    );
}

const GUPS: &[&str] = &["duration_s=6"];
const KRON: &[&str] = &[
    "vertices_gb=0.25",
    "edges_gb=0.25",
    "frontier_gb=0.05",
    "duration_s=3",
    "fast_ratio=1:4",
];

/// A policy that samples (PEBS) takes no hint faults, and one that takes hint faults takes no
/// samples: the price of the mechanism it does not use changes nothing. First touch migrates
/// nothing, so no cost of a migration (copy, fixed part, shootdowns, the migration threads)
/// reaches it.
#[test]
fn the_cost_of_a_mechanism_the_policy_does_not_use_changes_nothing() {
    let cases: &[(&str, &[&str], &str, &[&str])] = &[
        ("gups-hotset", GUPS, "hemem", &["costs.hint_fault_us=20"]),
        ("gups-hotset", GUPS, "memtis", &["costs.hint_fault_us=20"]),
        (
            "gups-hotset",
            GUPS,
            "hemem+colloid",
            &["costs.hint_fault_us=20"],
        ),
        ("graph-kron", KRON, "pact", &["costs.hint_fault_us=20"]),
        ("gups-hotset", GUPS, "tpp", &["costs.sample_ns=400"]),
        ("graph-kron", KRON, "nbt", &["costs.sample_ns=400"]),
        ("graph-kron", KRON, "tpp+colloid", &["costs.sample_ns=400"]),
        ("graph-kron", KRON, "nomad", &["costs.sample_ns=400"]),
        (
            "gups-hotset",
            GUPS,
            "notier",
            &[
                "costs.copy_gbps=1",
                "costs.migrate_fixed_us=30",
                "costs.shootdown_base_us=5",
                "costs.shootdown_per_target_us=3",
                "costs.shootdown_ipi_us=4",
                "costs.migration_threads=4",
                "costs.hint_fault_us=20",
                "costs.sample_ns=400",
            ],
        ),
    ];
    for (workload, sets, policy, changed) in cases {
        let base = summary(&experiment(workload, sets), policy);
        let more: Vec<&str> = sets.iter().chain(changed.iter()).copied().collect();
        let other = summary(&experiment(workload, &more), policy);
        assert_same(&format!("{workload}, {policy}, {changed:?}"), &base, &other);
    }
}

/// An antagonist that would start after the run's end is no antagonist: the run is the one
/// without it, for policies of every kind (sampling, hint faults, the latency balancer).
#[test]
fn an_antagonist_that_starts_after_the_run_changes_nothing() {
    let absent: Vec<&str> = GUPS
        .iter()
        .copied()
        .chain(["antagonist_intensity=0"])
        .collect();
    let late: Vec<&str> = GUPS
        .iter()
        .copied()
        .chain(["antagonist_intensity=3", "antagonist_start_s=50"])
        .collect();
    for policy in ["hemem", "tpp", "nbt", "hemem+colloid", "tpp+colloid"] {
        let a = summary(&experiment("gups-hotset", &absent), policy);
        let b = summary(&experiment("gups-hotset", &late), policy);
        assert_same(&format!("{policy}, an antagonist at 50 s of 6"), &a, &b);
    }
}

/// The fast-only reference keeps every page in the fast tier: the slow tier's latency curve and
/// its size do not reach it. The policy's own run does read the curve, which shows the change
/// took effect.
#[test]
fn the_fast_only_reference_does_not_read_the_slow_tier() {
    let base = experiment("gups-hotset", GUPS);
    let mut slower = base.clone();
    match &mut slower.platform.tiers[1].curve {
        Curve::Queueing { l0_ns, .. } => *l0_ns *= 1.5,
        Curve::Measured { .. } => panic!("icx-numa's slow tier is expected to be a queueing fit"),
    }
    let bigger = experiment("gups-hotset", &["duration_s=6", "slow_tier_gb=256"]);
    let a = summary(&base, "notier");
    let b = summary(&slower, "notier");
    let c = summary(&bigger, "notier");
    assert_eq!(
        a.fast_only_throughput_ops_per_s.to_bits(),
        b.fast_only_throughput_ops_per_s.to_bits()
    );
    assert_eq!(
        a.fast_only_throughput_ops_per_s.to_bits(),
        c.fast_only_throughput_ops_per_s.to_bits()
    );
    assert!(
        b.throughput_ops_per_s < 0.95 * a.throughput_ops_per_s,
        "a slow tier 1.5x slower: {} against {} ops/s",
        b.throughput_ops_per_s,
        a.throughput_ops_per_s
    );
}

/// A bigger slow tier with room to spare changes nothing for the policies that do not read
/// the nodes' sizes (first touch, the sampling ones, PACT, Vulcan, Soar, Colloid over HeMem and
/// MEMTIS). Linux's own tiering does read them: min_free_kbytes = sqrt(16 x all nodes' lowmem
/// KiB), or the value an administrator wrote (`min_free_kbytes`), is shared out by node size
/// (`__setup_per_zone_wmarks`, mm/page_alloc.c), so the fast node's watermarks, and with them
/// kswapd's reclaim target and TPP's demotion watermark, follow the slow node's size, as on a
/// real machine (crates/tierkit-policies/src/lru.rs, `Watermarks`). The audit of 2026-12-05
/// (the 12 built-in workloads at their defaults, 10 s, slow tier 512 GiB) found every other
/// policy the same bit for bit and the Linux ones within 1.6%.
#[test]
fn a_bigger_slow_tier_changes_nothing_for_policies_that_do_not_read_node_sizes() {
    let a_sets = ["duration_s=6", "slow_tier_gb=64"];
    let b_sets = ["duration_s=6", "slow_tier_gb=256"];
    for policy in [
        "notier",
        "hemem",
        "memtis",
        "pact",
        "vulcan",
        "soar",
        "hemem+colloid",
        "memtis+colloid",
    ] {
        let a = summary(&experiment("gups-hotset", &a_sets), policy);
        let mut b = summary(&experiment("gups-hotset", &b_sets), policy);
        // the slow tier's capacity is reported, and only that may differ
        assert_ne!(a.tiers[1].capacity_pages, b.tiers[1].capacity_pages);
        b.tiers[1].capacity_pages = a.tiers[1].capacity_pages;
        b.memory_bytes_per_page = a.memory_bytes_per_page;
        b.memory_estimate_bytes = a.memory_estimate_bytes;
        b.memory_allocated_bytes_per_page = a.memory_allocated_bytes_per_page;
        assert_same(&format!("{policy}, slow tier 64 vs 256 GiB"), &a, &b);
    }
}

/// The time series is an observer: how often it samples the run (`report_interval_ms`) changes
/// nothing in the run, under policies of every kind, those that publish their own series
/// (the hint-fault policies' LRU and kswapd counts, the toggle layer's decisions) included.
/// Audited on 2026-12-05 at 7 and 1000 ms against the default on gups-hotset, graph-objects and
/// toggle-phases under eleven policies: the same bit for bit.
#[test]
fn how_often_the_time_series_samples_changes_nothing() {
    let go = |policy: &str, every: Option<&str>| {
        let mut sets = vec!["duration_s=2"];
        sets.extend(every);
        let out = output(&experiment("graph-objects", &sets), policy);
        let rows = out.series.columns.first().map_or(0, |c| c.1.len());
        (out.summary, rows)
    };
    for policy in [
        "hemem",
        "memtis",
        "tpp",
        "nbt",
        "nomad",
        "pact",
        "vulcan",
        "tpp+colloid",
        "nbt+alto",
        "tpp+toggle",
    ] {
        let (a, _) = go(policy, None);
        let (b, fine) = go(policy, Some("report_interval_ms=7"));
        let (c, coarse) = go(policy, Some("report_interval_ms=1000"));
        // the series did sample at both intervals
        assert_eq!(
            (fine, coarse),
            (286, 2),
            "{policy}: rows of the time series"
        );
        assert_same(&format!("{policy}, every 7 ms"), &a, &b);
        assert_same(&format!("{policy}, every 1000 ms"), &a, &c);
    }
}

/// A run's first seconds do not depend on how long it will run: the time series of a 2 s run is
/// the first 2 s of a 4 s run's, bit for bit (nothing sized, scheduled or drawn from the run's
/// end). graph-objects is the one built-in workload whose timeline is, by its definition, a
/// share of `duration_s` (the paper's 223 s run scaled to the run). Audited on 2026-12-05
/// (`benchmarks/seed_audit.py --causal`, 5 s against 10 s): the other eleven under the twelve
/// policies of the epoch audit, 132 pairs, every one the same bit for bit.
#[test]
fn a_runs_first_seconds_do_not_depend_on_its_length() {
    let series = |workload: &str, policy: &str, duration: &str| {
        let sets = [duration, "report_interval_ms=250"];
        output(&experiment(workload, &sets), policy).series
    };
    for (workload, policy) in [
        ("gups-hotset", "tpp"),
        ("gups-hotset", "hemem+colloid"),
        ("masim-phases", "pact"),
        ("masim-phases", "nbt"),
        ("toggle-phases", "tpp+toggle"),
        ("lc-be-mix", "vulcan"),
        ("zipf-kv", "memtis"),
        ("seq-pc", "nbt+alto"),
    ] {
        let short = series(workload, policy, "duration_s=2");
        let long = series(workload, policy, "duration_s=4");
        let rows = short.columns[0].1.len();
        assert_eq!(rows, 8, "{workload}, {policy}: rows of the 2 s run");
        for (name, v) in &short.columns {
            let w = long
                .columns
                .iter()
                .find(|c| &c.0 == name)
                .unwrap_or_else(|| panic!("{workload}, {policy}: no column {name} in the 4 s run"));
            // bit for bit, NaN included
            let (a, b): (Vec<u64>, Vec<u64>) = (
                v.iter().map(|x| x.to_bits()).collect(),
                w.1[..rows].iter().map(|x| x.to_bits()).collect(),
            );
            assert_eq!(a, b, "{workload}, {policy}: {name} over the first 2 s");
        }
    }
}
