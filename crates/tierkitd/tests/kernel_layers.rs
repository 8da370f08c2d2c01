//! `nbt+alto` and `nbt+colloid` over the kernel's tiering (issue 17 item 2), on a fake `/proc`
//! and `/sys` (a 6.12 kernel's knobs at their defaults, debugfs mounted) and recorded or
//! synthetic counters: the knob values follow Alto's bands and Colloid's latencies, every knob
//! changed is in the state file and restored at exit and at the next start after a crash, and a
//! host without the counters is refused with what is missing. No PMU, no second NUMA node and
//! no root needed.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use tierkit_core::{Backend, Mechanism, PageId, Sample, Telemetry, TierCounters, FAST};
use tierkitd::config::SourcePref;
use tierkitd::kernel::{wanted, Knobs, State, STATE_FILE};
use tierkitd::layers::{self, LayerMetrics, Regulator, NUMA_BALANCING, RATE_LIMIT, SCAN_SIZE};
use tierkitd::source::core_counters::{CoreSampler, Recorded, Uarch};
use tierkitd::source::damon::Attrs;

const DBG: &str = "sys/kernel/debug/sched/numa_balancing";
const NB: &str = "proc/sys/kernel/numa_balancing";
const RL: &str = "proc/sys/kernel/numa_balancing_promote_rate_limit_MBps";

/// A fake host: the tiering knobs at a 6.12 kernel's defaults (numa_balancing as given, plain
/// NUMA balancing by default), debugfs mounted.
fn fake_kernel(numa_balancing: &str) -> PathBuf {
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let root = std::env::temp_dir().join(format!("tierkitd-layers-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let w = |p: &str, v: &str| {
        let f = root.join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, format!("{v}\n")).unwrap();
    };
    w(NB, numa_balancing);
    w("sys/kernel/mm/numa/demotion_enabled", "false");
    w(RL, "65536");
    w("proc/sys/vm/watermark_scale_factor", "10");
    w("proc/sys/vm/min_free_kbytes", "45056");
    for (k, v) in [
        ("hot_threshold_ms", "1000"),
        ("scan_period_min_ms", "1000"),
        ("scan_period_max_ms", "60000"),
        ("scan_size_mb", "256"),
        ("scan_delay_ms", "1000"),
    ] {
        w(&format!("{DBG}/{k}"), v);
    }
    root
}

fn get(root: &Path, p: &str) -> String {
    std::fs::read_to_string(root.join(p))
        .unwrap()
        .trim()
        .to_string()
}

fn data(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name),
    )
    .unwrap()
}

fn layer_of(spec: &str) -> layers::LayerSpec {
    layers::parse(spec).unwrap().unwrap()
}

/// The recorded trace crosses every band of F: after each Alto interval the kernel's scanner
/// window and promotion rate limit are N/16 of their bases, N = 0 clears the tiering bit, the
/// gauges say N/16 and AOL, and the state file always records what to restore.
#[test]
fn alto_bands_set_the_kernel_knobs() {
    let root = fake_kernel("1");
    let st = root.join("run");
    let spec = "nbt:promote_rate_limit_mbps=1024+alto";
    let (mut knobs, _) = Knobs::take(&root, &st, &wanted(spec).unwrap(), false, false).unwrap();
    let layer = layer_of(spec);
    let mut reg = Regulator::new(&layer, &knobs);
    assert!(
        reg.describe().contains("numa_balancing/scan_size_mb 256")
            && reg
                .describe()
                .contains("kernel.numa_balancing_promote_rate_limit_MBps 1024"),
        "{}",
        reg.describe()
    );
    let registry = prometheus::Registry::new_custom(Some("tierkitd".into()), None).unwrap();
    let lm = LayerMetrics::register(&registry, &layer);
    let text = data("nbt_alto/reads.txt");
    let rec = Recorded::parse(&text).unwrap();
    let n = rec.intervals();
    let mut sampler = CoreSampler::new(Uarch::SapphireRapids, Box::new(rec));
    let mut expect = std::collections::BTreeMap::new();
    for l in text.lines().filter(|l| l.starts_with("expect ")) {
        let w: Vec<&str> = l.split_whitespace().collect();
        let i: usize = w[1].parse().unwrap();
        let aol: f64 = w[2].strip_prefix("aol=").unwrap().parse().unwrap();
        let nn: u32 = w[3].strip_prefix("n=").unwrap().parse().unwrap();
        expect.insert(i, (aol, nn));
    }
    assert_eq!(expect.len(), n - 1);
    let mut seen_bands = Vec::new();
    for i in 0..n {
        let tel = Telemetry {
            now_ns: i as u64 * 1_000_000_000,
            epoch_ns: 1_000_000_000,
            cores: sampler.sample().unwrap(),
            ..Telemetry::default()
        };
        let out = reg.step(&tel, &mut knobs, Some(&lm), |_| None).unwrap();
        assert!(out.demote.is_empty());
        let Some(&(aol, nn)) = expect.get(&i) else {
            continue;
        };
        seen_bands.push(nn);
        assert_eq!(lm.alto_aol.get(), aol, "interval {i}");
        assert_eq!(lm.alto_ratio.get(), nn as f64 / 16.0, "interval {i}");
        if nn == 0 {
            assert_eq!(get(&root, NB), "0", "interval {i}: promotion off");
            assert_eq!(get(&root, RL), "0", "interval {i}");
            assert!(
                out.lines.is_empty() || out.lines[0].contains("0 of 16"),
                "{:?}",
                out.lines
            );
        } else {
            assert_eq!(get(&root, NB), "2", "interval {i}");
            assert_eq!(
                get(&root, &format!("{DBG}/scan_size_mb")),
                (256 * nn / 16).to_string(),
                "interval {i}"
            );
            assert_eq!(get(&root, RL), (1024 * nn / 16).to_string(), "interval {i}");
        }
        // the state file: every knob changed, with its original
        let s: State = serde_json::from_str(&get(&st, STATE_FILE)).unwrap();
        let orig = |k: &str| {
            s.knobs
                .iter()
                .find(|c| c.name == k)
                .map(|c| c.original.clone())
        };
        assert_eq!(orig(NUMA_BALANCING).as_deref(), Some("1"));
        assert_eq!(orig(RATE_LIMIT).as_deref(), Some("65536"));
        if i > 1 {
            assert_eq!(orig(SCAN_SIZE).as_deref(), Some("256"), "interval {i}");
        }
    }
    assert_eq!(seen_bands, [16, 8, 4, 2, 1, 0, 0, 16]);
    // exit (SIGTERM): every knob back
    // (the trace ends above AOL_high: the scanner's window is at its original again, and left)
    let lines = knobs.restore();
    assert_eq!(
        lines,
        [
            "restored kernel.numa_balancing_promote_rate_limit_MBps to 65536 (was 1024)",
            "restored numa/demotion_enabled to false (was true)",
            "restored kernel.numa_balancing to 1 (was 2)"
        ]
    );
    assert_eq!(get(&root, NB), "1");
    assert_eq!(get(&root, RL), "65536");
    assert_eq!(get(&root, &format!("{DBG}/scan_size_mb")), "256");
    assert_eq!(get(&root, "sys/kernel/mm/numa/demotion_enabled"), "false");
    assert!(!st.join(STATE_FILE).exists());
    let _ = std::fs::remove_dir_all(&root);
}

/// SIGKILL while Alto regulates, even between the state file's update and the knob's write:
/// the next start restores every knob from the state file.
#[test]
fn a_crash_while_regulating_is_restored_at_the_next_start() {
    for torn in [false, true] {
        let root = fake_kernel("0");
        let st = root.join("run");
        let (mut knobs, _) =
            Knobs::take(&root, &st, &wanted("nbt+alto").unwrap(), false, false).unwrap();
        assert!(knobs.set(SCAN_SIZE, "64").unwrap().is_some());
        assert!(knobs.set(RATE_LIMIT, "16384").unwrap().is_some());
        assert_eq!(knobs.set(RATE_LIMIT, "16384").unwrap(), None, "no change");
        assert!(knobs.set(NUMA_BALANCING, "0").unwrap().is_some());
        assert!(knobs.set(SCAN_SIZE, "32").unwrap().is_some());
        if torn {
            // killed after the state file recorded 32 and before the knob was written
            std::fs::write(root.join(DBG).join("scan_size_mb"), "64\n").unwrap();
        }
        knobs.crash();
        assert_eq!(get(&root, NB), "0");
        let (mut again, rep) =
            Knobs::take(&root, &st, &wanted("nbt").unwrap(), false, false).unwrap();
        let r = rep.lines.join("\n");
        assert!(r.contains("did not exit cleanly"), "{r}");
        assert!(
            r.contains("restored numa_balancing/scan_size_mb to 256")
                && r.contains("restored kernel.numa_balancing_promote_rate_limit_MBps to 65536")
                && r.contains("restored numa/demotion_enabled to false")
                && !r.lines().any(|l| l.starts_with("left ")),
            "torn {torn}: {r}"
        );
        assert_eq!(get(&root, &format!("{DBG}/scan_size_mb")), "256");
        assert_eq!(get(&root, RL), "65536");
        // the crashed run left numa_balancing at 0 (its original): the new run sets 2 again
        assert_eq!(get(&root, NB), "2");
        again.restore();
        assert_eq!(get(&root, NB), "0");
        let _ = std::fs::remove_dir_all(&root);
    }
}

/// `--dry-run`: Alto's decisions are logged, nothing is written.
#[test]
fn alto_in_a_dry_run_writes_nothing() {
    let root = fake_kernel("0");
    let st = root.join("run");
    let (mut knobs, _) =
        Knobs::take(&root, &st, &wanted("nbt+alto").unwrap(), false, true).unwrap();
    assert_eq!(
        knobs.set(SCAN_SIZE, "64").unwrap().as_deref(),
        Some("DRY RUN: would set numa_balancing/scan_size_mb from 256 to 64")
    );
    assert_eq!(knobs.set(SCAN_SIZE, "64").unwrap(), None);
    assert_eq!(get(&root, &format!("{DBG}/scan_size_mb")), "256");
    assert!(!st.join(STATE_FILE).exists());
    let _ = std::fs::remove_dir_all(&root);
}

fn tiers(l_fast_ns: f64, l_slow_ns: f64) -> Vec<TierCounters> {
    // one second at 1 GHz, 3e8 fast and 1e8 slow requests: occupancy = rate x latency x 1 s
    [(l_fast_ns, 3e8), (l_slow_ns, 1e8)]
        .iter()
        .map(|&(l, r)| TierCounters {
            tor_inserts: r,
            tor_occupancy: r * l,
            ..Default::default()
        })
        .collect()
}

/// Colloid over the kernel on injected tier latencies, through the Linux backend (dry run) of
/// a live child: while the fast tier is the faster, the kernel promotes; when it is slower, its
/// promotion stops (the tiering bit cleared) and tierkitd demotes the child's sampled hot pages
/// by move_pages (skipped here: dry run); when it is faster again, the kernel promotes again.
#[test]
fn colloid_stops_the_kernels_promotion_and_demotes_hot_pages() {
    let root = fake_kernel("0");
    let st = root.join("run");
    let spec = "nbt+colloid:ewma=1";
    let (mut knobs, _) = Knobs::take(&root, &st, &wanted(spec).unwrap(), false, false).unwrap();
    let layer = layer_of(spec);
    let mut reg = Regulator::new(&layer, &knobs);
    let registry = prometheus::Registry::new_custom(Some("tierkitd".into()), None).unwrap();
    let lm = LayerMetrics::register(&registry, &layer);

    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id();
    let metrics = tierkitd::metrics::Metrics::new();
    let mut lx = common::dry_run_backend(pid, Duration::from_millis(20), metrics);
    lx.observe().unwrap();
    let tel = lx.take_telemetry();
    let pages: Vec<PageId> = tel.allocated.iter().map(|e| e.page).collect();
    lx.restore_telemetry(tel);
    assert!(pages.len() >= 4, "the child's pages: {}", pages.len());
    // samples: page 0 hottest, then 1, 2, 3 (every page here is on the fast tier)
    let samples: Vec<Sample> = [0, 0, 0, 0, 1, 1, 1, 2, 2, 3]
        .iter()
        .map(|&i| Sample {
            page: pages[i],
            tier: FAST,
            is_store: false,
            pid,
            tid: pid,
            latency_ns: 0.0,
            exposed_ns: 0.0,
            time_ns: 0,
        })
        .collect();
    let mut step = |l_fast: f64, l_slow: f64, lx: &mut tierkitd::linux::Linux| {
        let mut tel = lx.take_telemetry();
        tel.tier_counters = tiers(l_fast, l_slow);
        tel.samples = samples.clone();
        tel.epoch_ns = 1_000_000_000;
        tel.cpu_ghz = 1.0;
        let out = reg
            .step(&tel, &mut knobs, Some(&lm), |p| lx.tier_of(p))
            .unwrap();
        lx.restore_telemetry(tel);
        out
    };
    // the fast tier faster: the kernel promotes, nothing demoted
    let out = step(100.0, 250.0, &mut lx);
    assert!(out.demote.is_empty() && out.lines.is_empty(), "{out:?}");
    assert_eq!(get(&root, NB), "2");
    // loaded beyond the slow tier, at the same request split (p = 0.75): Algorithm 2 sets p_hi
    // = 0.75 next to p_lo = 0.75 from the last interval, resets p_lo to 0 (the ε rule), so
    // Δp = |(0 + 0.75) / 2 - 0.75| = 0.375
    let mut demoted = Vec::new();
    let mut stopped_at = None;
    for i in 0..3 {
        let out = step(400.0, 250.0, &mut lx);
        if out.lines.iter().any(|l| l.contains("promotion stops")) {
            stopped_at.get_or_insert(i);
        }
        demoted.extend(out.demote);
    }
    assert_eq!(stopped_at, Some(0));
    assert_eq!(get(&root, NB), "0", "the kernel's promotion is off");
    assert_eq!(lm.colloid_stops.get(), 1);
    assert_eq!(
        lm.colloid_latency.with_label_values(&["fast"]).get(),
        400e-9
    );
    assert!(!demoted.is_empty(), "hot pages demoted");
    // Colloid's choice, hottest first among the pages that fit Δp: page 0 (0.4 of the
    // samples) does not fit 0.375, page 1 (0.3) does, and then neither 2 (0.2) nor 3 (0.1)
    // fits the 0.075 left
    assert_eq!(demoted[0], pages[1], "{demoted:?}");
    assert!(demoted.iter().all(|p| *p == pages[1]), "{demoted:?}");
    demoted.dedup();
    let skipped_before = lx.metrics.dry_run_skipped.get();
    let mut acts = layers::demotions(&demoted);
    lx.apply(&mut acts);
    assert_eq!(
        lx.metrics.dry_run_skipped.get() - skipped_before,
        demoted.len() as u64,
        "each demotion reached the migration pass (dry run)"
    );
    // the state file records numa_balancing's original and Colloid's value
    let s: State = serde_json::from_str(&get(&st, STATE_FILE)).unwrap();
    let nb = s.knobs.iter().find(|c| c.name == NUMA_BALANCING).unwrap();
    assert_eq!(
        (nb.original.as_str(), nb.set.as_str(), nb.was_set.as_deref()),
        ("0", "0", Some("2"))
    );
    // the fast tier faster again: the kernel promotes again
    let out = step(100.0, 250.0, &mut lx);
    assert!(
        out.lines.iter().any(|l| l.contains("promotes again")),
        "{out:?}"
    );
    assert_eq!(get(&root, NB), "2");
    child.kill().unwrap();
    child.wait().unwrap();
    knobs.restore();
    assert_eq!(get(&root, NB), "0");
    assert_eq!(get(&root, "sys/kernel/mm/numa/demotion_enabled"), "false");
    let _ = std::fs::remove_dir_all(&root);
}

/// What the layers need, checked before any knob changes: on a host without a PMU (this one,
/// the QEMU guest) the refusal is one line naming what is missing, as for hemem+alto.
#[test]
fn without_the_counters_the_layers_are_refused_in_one_line() {
    let nothing = Path::new("/nonexistent");
    let refuse = |spec: &str| {
        tierkitd::select::choose_at(
            spec,
            &layers::needs(&layer_of(spec)),
            SourcePref::Auto,
            Attrs::default(),
            1.0,
            nothing,
            nothing,
        )
        .err()
        .unwrap()
        .to_string()
    };
    let e = refuse("nbt+alto");
    assert!(
        e.starts_with(
            "policy `nbt+alto` cannot run on this host: it needs per-core PMU counters (cycles, CYCLE_ACTIVITY.STALLS_L3_MISS"
        ) && e.contains("no core PMU (/nonexistent/cpu is absent")
            && !e.contains('\n'),
        "{e}"
    );
    let e = refuse("nbt+colloid");
    assert!(
        e.starts_with(
            "policy `nbt+colloid` cannot run on this host: it needs per-tier uncore counters"
        ) && e.contains("PEBS weights, needs PEBS")
            && !e.contains('\n'),
        "{e}"
    );
}
