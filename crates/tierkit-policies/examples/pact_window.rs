//! PACT's cost per 20 ms window at 1M samples/s (BENCHMARKS.md): the policy's `step` fed 1 ms
//! epochs of 1000 slow-tier load samples (Zipf-popular pages), with slow-tier TOR counters, for
//! several tracked-table sizes and binning variants, each with the window's binning by a pass
//! over the table (as before the PAC buckets) and by the buckets, side by side in one run so
//! their ratios are comparable. Wall time is measured here only; the policy itself reports no
//! wall clock.
//!
//! `cargo run --release -p tierkit-policies --example pact_window [windows]`

use std::time::Instant;

use tierkit_core::params::Params;
use tierkit_core::telemetry::{Calibration, TierCounters, TierInfo};
use tierkit_core::testing::FakeMech;
use tierkit_core::{Action, PageId, Policy, Rng, Sample, Telemetry, FAST, SLOW};
use tierkit_policies::pact::{Pact, INFO};

const SAMPLES_PER_EPOCH: usize = 1000; // 1M samples/s at 1 ms epochs
const EPOCHS_PER_WINDOW: u64 = 20;

fn bench(pages: u64, spec: &[(&str, &str)], full_pass: bool, windows: u64) -> (f64, f64, f64, f64) {
    let raw: Vec<(String, String)> = spec
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut pol = Pact::new(&Params::resolve(INFO.name, INFO.params, &raw).unwrap());
    pol.select_by_full_pass(full_pass);
    // every page resident in the slow tier; the fast tier holds 1/8 of them
    let fast_cap = pages / 8;
    let mut tiers: Vec<Option<u8>> = vec![Some(SLOW); pages as usize];
    let mut mech = FakeMech::new(tiers.clone());
    let zipf = tierkit_core::rng::Zipf::new(pages, 0.9);
    let mut rng = Rng::new(7);
    let tier_info = |used_fast: u64| {
        vec![
            TierInfo {
                id: FAST,
                name: "dram".into(),
                capacity_pages: fast_cap,
                used_pages: used_fast,
            },
            TierInfo {
                id: SLOW,
                name: "cxl".into(),
                capacity_pages: pages,
                used_pages: pages,
            },
        ]
    };
    let mut tel = Telemetry {
        epoch_ns: 1_000_000,
        page_bytes: 4096,
        cpu_ghz: 2.1,
        tiers: tier_info(0),
        calibration: Some(Calibration {
            aol_low_cycles: 27.0,
            aol_high_cycles: 190.0,
            k_a: 0.9,
            k_b: -0.29,
            stall_k_cycles: vec![191.0, 406.0],
        }),
        ..Telemetry::default()
    };
    let mut out: Vec<Action> = Vec::new();
    pol.init(&tel, &mut mech, &mut out);
    // first epoch: the pages' allocation events
    tel.allocated = (0..pages)
        .map(|p| tierkit_core::PageEvent {
            page: PageId(p),
            pid: 0,
            tier: SLOW,
        })
        .collect();
    let mut used_fast = 0u64;
    let mut step_s = 0.0;
    let mut close_s = 0.0;
    let warm = 5;
    // the table entries the binning looked at over the measured windows (the policy's stat is
    // a mean over every window, warm-up included)
    let visited = |pol: &Pact| {
        let stats = pol.stats();
        let stat = |name: &str| {
            stats
                .iter()
                .find(|(k, _)| k == name)
                .map_or(0.0, |(_, v)| *v)
        };
        stat("entries_visited_per_window") * stat("windows")
    };
    let mut visited_warm = 0.0;
    for e in 0..(windows + warm) * EPOCHS_PER_WINDOW {
        tel.now_ns += tel.epoch_ns;
        tel.samples = (0..SAMPLES_PER_EPOCH)
            .map(|_| Sample {
                page: PageId(zipf.sample(&mut rng) - 1),
                tier: SLOW,
                is_store: false,
                pid: 0,
                tid: 0,
                latency_ns: 190.0,
                exposed_ns: 190.0,
                time_ns: tel.now_ns,
            })
            .collect();
        tel.tier_counters = vec![
            TierCounters::default(),
            TierCounters {
                llc_misses: 400_000.0,
                tor_inserts: 400_000.0,
                tor_occupancy: 4e6,
                tor_not_empty_cycles: 1e6,
                ..TierCounters::default()
            },
        ];
        tel.tiers = tier_info(used_fast);
        out.clear();
        let t0 = Instant::now();
        pol.step(&tel, &mut mech, &mut out);
        let dt = t0.elapsed().as_secs_f64();
        if e == warm * EPOCHS_PER_WINDOW {
            visited_warm = visited(&pol);
        }
        if e >= warm * EPOCHS_PER_WINDOW {
            step_s += dt;
            if (e + 1) % EPOCHS_PER_WINDOW == 0 {
                close_s += dt;
            }
        }
        // carry out the migrations at once; their results arrive with the next epoch
        tel.allocated.clear();
        tel.migrations.clear();
        for a in &out {
            if let Action::Migrate { page, to, .. } = a {
                let i = page.0 as usize;
                let from = tiers[i].unwrap_or(SLOW);
                tiers[i] = Some(*to);
                if *to == FAST {
                    used_fast += 1;
                } else {
                    used_fast -= 1;
                }
                tel.migrations.push(tierkit_core::MigrationResult {
                    page: *page,
                    from,
                    to: *to,
                    outcome: tierkit_core::MigrationOutcome::Done,
                    remap: false,
                });
            }
        }
        mech.tiers.clone_from(&tiers);
    }
    let tracked = pol
        .stats()
        .into_iter()
        .find(|(k, _)| k == "tracked_pages")
        .map_or(0.0, |(_, v)| v);
    (
        step_s / windows as f64,
        close_s / windows as f64,
        tracked,
        (visited(&pol) - visited_warm) / windows as f64,
    )
}

fn main() {
    let windows: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(50);
    println!(
        "PACT per 20 ms window at 1M samples/s ({} samples/window), {windows} windows each",
        SAMPLES_PER_EPOCH as u64 * EPOCHS_PER_WINDOW
    );
    println!(
        "{:>10} {:>9} {:>8} {:>10} {:>11} {:>10} {:>10} {:>10} {:>8}",
        "pages",
        "binning",
        "select",
        "tracked",
        "visited/w",
        "ms/window",
        "close ms",
        "ns/sample",
        "ratio"
    );
    let mut first = None;
    for pages in [65_536u64, 524_288, 2_097_152] {
        for binning in ["scaled", "static"] {
            // the pass over the table (before the PAC buckets) and the buckets, one after the other
            for (select, full_pass) in [("pass", true), ("buckets", false)] {
                let (w, c, tracked, visited) =
                    bench(pages, &[("binning", binning)], full_pass, windows);
                let base = *first.get_or_insert(w);
                println!(
                    "{:>10} {:>9} {:>8} {:>10} {:>11.0} {:>10.3} {:>10.3} {:>10.1} {:>8.2}",
                    pages,
                    binning,
                    select,
                    tracked,
                    visited,
                    w * 1e3,
                    c * 1e3,
                    w * 1e9 / (SAMPLES_PER_EPOCH as f64 * EPOCHS_PER_WINDOW as f64),
                    w / base
                );
            }
        }
    }
}
