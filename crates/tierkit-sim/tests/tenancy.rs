//! Multi-tenant behaviours on the simulated machine: per-thread TLB-shootdown scope (Vulcan
//! §3.4), per-process migration toggling (seeds/004 §4.2-4.4), and the per-process results.

mod common;

use tierkit_sim::{load, run, Summary};

fn go(exp: &str, policy: &str, sets: &[&str]) -> Summary {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let e = load(exp, &sets, Some(1)).unwrap();
    run(&e, policy, &mut |_, _| true).unwrap().summary
}

const MIX: [&str; 5] = [
    "scale=0.015625",
    "fast_tier_gb=0.5",
    "duration_s=20",
    "pagerank_start_s=4",
    "liblinear_start_s=8",
];

#[test]
fn per_thread_page_tables_send_fewer_ipis_per_migration() {
    let pt = go("lc-be-mix", "vulcan", &MIX);
    let pw = go("lc-be-mix", "vulcan:replicate=false", &MIX);
    let per = |s: &Summary| s.shootdown_ipis as f64 / (s.promotions + s.demotions).max(1) as f64;
    assert!(pt.promotions > 1000 && pw.promotions > 1000);
    assert!(
        per(&pt) < 0.8 * per(&pw),
        "owner/sharer-only shootdowns: {} vs process-wide {} IPIs per migration",
        per(&pt),
        per(&pw)
    );
}

#[test]
fn summary_carries_classes_fairness_and_lc_latency() {
    let s = go("lc-be-mix", "vulcan", &MIX);
    let classes: Vec<&str> = s.processes.iter().map(|p| p.class).collect();
    assert_eq!(classes, ["LC", "BE", "BE"]);
    let lc = &s.processes[0];
    let (p50, p99) = (lc.latency_p50_ns.unwrap(), lc.latency_p99_ns.unwrap());
    assert!(p50 > 0.0 && p99 >= p50, "p50 {p50} p99 {p99}");
    assert!(
        s.processes[1].latency_p50_ns.is_none(),
        "BE has no latency percentiles"
    );
    for x in [s.fairness.jain, s.fairness.cfi] {
        assert!(x > 1.0 / 3.0 - 1e-9 && x <= 1.0 + 1e-9, "{x}");
    }
}

#[test]
fn toggling_stops_one_tenant_without_stopping_the_other() {
    // UU pair under MEMTIS: both ping-pong; stops are counted per process and each stop is the
    // layer's own decision for that process (a tenant that started later is evaluated later).
    let sets = [
        "mix=uu",
        "scale=0.015625",
        "fast_tier_gb=0.5",
        "duration_s=40",
        "offset_s=10",
    ];
    let s = go("mig-friendliness", "memtis+toggle", &sets);
    let stats: std::collections::BTreeMap<_, _> = s.policy_stats.iter().collect();
    for (i, p) in s.processes.iter().enumerate() {
        // the machine's transition counts equal the layer's decisions, process by process
        assert_eq!(
            p.migration_stops as f64,
            *stats[&format!("toggle.stops.p{i}")],
            "{}",
            p.name
        );
        assert_eq!(
            p.migration_restarts as f64,
            *stats[&format!("toggle.restarts.p{i}")]
        );
    }
    let base = go("mig-friendliness", "memtis", &sets);
    assert!(base.processes.iter().all(|p| p.migration_stops == 0));
}

/// `work_mops` (and a pair's `second_work_mops`): a tenant does a fixed amount of work, shared
/// by its threads, and exits, so its runtime is an execution time. Given the work it does
/// without migration in 4 s, it finishes at 4 s without migration (15 threads or one), later
/// when migration costs it more than it gains (silo under tpp, as the paper's Fig. 9, the same
/// at half the epoch), and the run ends with it. In a pair each tenant is timed from its own
/// start.
#[test]
fn a_tenant_given_its_work_exits_when_done_and_its_runtime_is_the_execution_time() {
    for mix in ["liblinear", "silo"] {
        let base = [
            format!("mix={mix}"),
            "scale=0.015625".into(),
            "fast_tier_gb=0.5".into(),
            "platform=spr-cmmd".into(),
        ];
        let with =
            |extra: &[String]| -> Vec<String> { base.iter().chain(extra).cloned().collect() };
        let sets = with(&["duration_s=4".into()]);
        let timed = go(
            "mig-friendliness",
            "notier",
            &sets.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        );
        let p = &timed.processes[0];
        assert!(!p.finished && p.runtime_s == 4.0, "{mix}: {p:?}");
        let work = with(&["duration_s=40".into(), format!("work_mops={}", p.ops / 1e6)]);
        let work: Vec<&str> = work.iter().map(|s| s.as_str()).collect();
        let done = go("mig-friendliness", "notier", &work);
        let q = &done.processes[0];
        assert!(q.finished, "{mix}: {q:?}");
        assert!((q.runtime_s - 4.0).abs() < 0.01, "{mix}: {}", q.runtime_s);
        assert!(
            (q.ops / p.ops - 1.0).abs() < 1e-6,
            "{mix}: {} vs {}",
            q.ops,
            p.ops
        );
        assert!(
            done.sim_seconds < 4.1,
            "{mix}: the run went on to {}",
            done.sim_seconds
        );
        if mix == "silo" {
            let t = go("mig-friendliness", "tpp", &work);
            assert!(
                t.processes[0].finished && t.processes[0].runtime_s > 4.4,
                "{:?}",
                t.processes[0]
            );
            // the execution time is the model's, not the step's: half the epoch keeps it
            let half: Vec<&str> = work.iter().copied().chain(["epoch_ms=0.5"]).collect();
            let h = go("mig-friendliness", "tpp", &half);
            let (a, b) = (t.processes[0].runtime_s, h.processes[0].runtime_s);
            assert!((b / a - 1.0).abs() < 0.01, "{a} s at 1 ms, {b} s at 0.5 ms");
        }
    }
    // A pair: each tenant its own work, timed from its own start; a single tenant has no second.
    let pair = [
        "mix=uf",
        "offset_s=2",
        "scale=0.015625",
        "fast_tier_gb=0.5",
        "platform=spr-cmmd",
    ];
    let timed: Vec<&str> = pair.iter().copied().chain(["duration_s=4"]).collect();
    let t = go("mig-friendliness", "notier", &timed);
    let works = [
        format!("work_mops={}", t.processes[0].ops / 1e6),
        format!("second_work_mops={}", t.processes[1].ops / 1e6),
    ];
    let sets: Vec<&str> = pair
        .iter()
        .copied()
        .chain(["duration_s=40"])
        .chain(works.iter().map(|s| s.as_str()))
        .collect();
    let done = go("mig-friendliness", "notier", &sets);
    for (p, want) in done.processes.iter().zip([4.0, 2.0]) {
        assert!(p.finished && (p.runtime_s - want).abs() < 0.01, "{p:?}");
    }
    let e = tierkit_sim::load(
        "mig-friendliness",
        &["mix=silo".to_string(), "second_work_mops=5".to_string()],
        Some(1),
    );
    let err = e.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        err.contains("second_work_mops") && err.contains("single tenant"),
        "{err}"
    );
}

/// The toggling paper's single-threaded GUPS (§5.3, Fig. 9): MEMTIS does better than the other
/// migration schemes. With one thread every hint fault stops the whole program, and MEMTIS,
/// which samples and migrates in its own threads, takes none. `threads` makes a single tenant
/// single-threaded; a pair keeps Table 4's counts and refuses it.
#[test]
fn single_threaded_gups_loses_least_under_memtis() {
    let sets = [
        "mix=gups",
        "threads=1",
        "scale=0.015625",
        "fast_tier_gb=0.5",
        "duration_s=10",
        "platform=spr-cmmd",
    ];
    let (none, memtis) = (
        go("mig-friendliness", "notier", &sets),
        go("mig-friendliness", "memtis", &sets),
    );
    assert!(
        memtis.promotions > 10_000 && memtis.hint_faults == 0,
        "{memtis:?}"
    );
    assert!(memtis.throughput_ops_per_s < none.throughput_ops_per_s);
    for other in ["tpp", "nomad", "tpp+toggle"] {
        let o = go("mig-friendliness", other, &sets);
        assert!(
            o.hint_faults > 100_000,
            "{other}: {} hint faults",
            o.hint_faults
        );
        assert!(
            memtis.throughput_ops_per_s > 1.1 * o.throughput_ops_per_s,
            "memtis {} vs {other} {}",
            memtis.throughput_ops_per_s,
            o.throughput_ops_per_s
        );
    }
    // 24 threads (the UU pair's, and the default) fault in parallel: TPP then loses far less
    let default_threads: Vec<&str> = sets.iter().copied().filter(|s| *s != "threads=1").collect();
    let speed =
        |policy: &str, sets: &[&str]| go("mig-friendliness", policy, sets).throughput_ops_per_s;
    let many = speed("tpp", &default_threads) / speed("notier", &default_threads);
    let one = speed("tpp", &sets) / none.throughput_ops_per_s;
    assert!(many > one + 0.1, "tpp at 24 threads {many}, at one {one}");
    let e = tierkit_sim::load(
        "mig-friendliness",
        &["mix=uu".to_string(), "threads=1".to_string()],
        Some(1),
    );
    let err = e.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("`threads`") && err.contains("pair"), "{err}");
}

/// The toggling paper's friendly single tenant (§5.3, Fig. 8a): TPP's migration pays for
/// liblinear. Its streamed data reads idle to kswapd between sweeps, so TPP makes room for the
/// random-access set; the pages the sweeps promote come back down (demote_promoted > 0), the
/// signal the toggle layer watches.
#[test]
fn liblinear_gains_from_tpp_migration() {
    let sets = [
        "mix=liblinear",
        "scale=0.015625",
        "fast_tier_gb=0.5",
        "duration_s=20",
        "platform=spr-cmmd",
    ];
    let n = go("mig-friendliness", "notier", &sets);
    let t = go("mig-friendliness", "tpp", &sets);
    assert!(
        t.throughput_ops_per_s > 1.15 * n.throughput_ops_per_s,
        "tpp {} vs notier {} ops/s",
        t.throughput_ops_per_s,
        n.throughput_ops_per_s
    );
    assert!(t.processes[0].fast_tier_hit_ratio > n.processes[0].fast_tier_hit_ratio + 0.1);
    assert!(t.processes[0].demote_promoted > 0);
    // the gain is the workload's, not the epoch's: halving the epoch keeps it within 2%
    let half: Vec<&str> = sets.iter().copied().chain(["epoch_ms=0.5"]).collect();
    let (n2, t2) = (
        go("mig-friendliness", "notier", &half),
        go("mig-friendliness", "tpp", &half),
    );
    let (g1, g2) = (
        t.throughput_ops_per_s / n.throughput_ops_per_s,
        t2.throughput_ops_per_s / n2.throughput_ops_per_s,
    );
    assert!(
        (g2 / g1 - 1.0).abs() < 0.02,
        "gain {g1} at 1 ms, {g2} at 0.5 ms"
    );
}

/// A fast tier smaller than Vulcan's 16 MiB unit per tenant: Algorithm 1 works in smaller units
/// (effective_unit) instead of giving every tenant zero units and demoting every page, so Vulcan
/// keeps the fast tier in use and does no worse than first touch (`notier`).
#[test]
fn vulcan_with_a_fast_tier_smaller_than_its_unit_never_does_worse_than_notier() {
    let tiny = [
        "scale=0.015625",
        "fast_tier_gb=0.0009765625", // 1 MiB
        "duration_s=8",
        "pagerank_start_s=1",
        "liblinear_start_s=2",
    ];
    let v = go("lc-be-mix", "vulcan", &tiny);
    let n = go("lc-be-mix", "notier", &tiny);
    let fast_used = v.tiers[0].used_pages;
    assert!(
        fast_used > v.tiers[0].capacity_pages / 2,
        "the fast tier is kept in use: {fast_used} of {} pages",
        v.tiers[0].capacity_pages
    );
    assert!(
        v.throughput_ops_per_s >= 0.98 * n.throughput_ops_per_s,
        "vulcan {} vs notier {} ops/s",
        v.throughput_ops_per_s,
        n.throughput_ops_per_s
    );
    assert!(v.policy_stats["unit_pages"] >= 1.0 && v.policy_stats["unit_pages"] < 4096.0);
}

/// Two synthetic processes that start together, written in either order: the listing order is
/// not the order of first touch, so without migration (`notier`) each gets the same pages and
/// result in both orders, and each holds fast-tier pages in proportion to its footprint.
#[test]
fn listing_order_of_synthetic_processes_does_not_decide_the_first_touch() {
    let proc_block = |name: &str, gb: f64, mlp: u32| {
        format!(
            "[[process]]\nname = \"{name}\"\n[[process.object]]\nname = \"a\"\nsize_gb = {gb}\n\
             [[process.object]]\nname = \"b\"\nsize_gb = {gb}\n\
             [[process.thread]]\ncount = 1\n[[process.thread.phase]]\nmlp = {mlp}\ncompute_ns = 5\n\
             [[process.thread.phase.access]]\nobject = \"a\"\npattern = \"uniform\"\n\
             [[process.thread.phase.access]]\nobject = \"b\"\npattern = \"uniform\"\n"
        )
    };
    let head = "workload = \"custom\"\nplatform = \"icx-numa\"\nduration_s = 0.2\n\
                fast_ratio = \"1:3\"\nseed = 1\n";
    let (big, small) = (proc_block("big", 0.375, 4), proc_block("small", 0.125, 1));
    let summary = |text: String| {
        let e = tierkit_sim::config::load_str("t.toml", &text, &[], None).unwrap();
        let out = run(&e, "notier", &mut |_, _| true).unwrap();
        common::per_process(&out)
    };
    let a = summary(format!("{head}{big}{small}"));
    let b = summary(format!("{head}{small}{big}"));
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.0, y.0);
        assert!((x.1 - y.1).abs() <= 1.0, "{x:?} vs {y:?}");
        assert!(
            (x.2 / y.2 - 1.0).abs() < 2e-3 && (x.3 - y.3).abs() < 2e-3,
            "{x:?} vs {y:?}"
        );
    }
    // big holds 3/4 of the fast tier; both hit it as often as a quarter of their pages allow
    let (fb, fs) = (a[0].1, a[1].1);
    assert!((fb / (fb + fs) - 0.75).abs() < 0.01, "big {fb}, small {fs}");
    for x in &a {
        assert!((x.3 - 0.25).abs() < 0.01, "{x:?}");
    }
}
