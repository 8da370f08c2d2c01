//! Simulator speed and policy cost, measured side by side in one run (these machines are noisy;
//! compare the ratios, not the absolute times).
//!
//! `cargo bench -p tierkit-sim --bench sim_speed [-- --quick]`
//!
//! 1. The case: `gups-hotset`, 8 threads over 16 GiB (4M pages of 4 KiB), hemem, 60 s
//!    simulated, one core; goal >= 50x real time (long-term 200x). The epoch solve and the
//!    sampling are timed separately.
//! 2. Each policy's own cost per epoch on the same machine (10 s simulated), against the
//!    machine's cost per epoch in the same run.
//! 3. Hint-fault-heavy runs: `toggle-phases` (one thread over 2 GiB of 4 KiB pages, a fast tier
//!    of a fifth) under tpp and nbt, whose thread spends most epochs stalled on its own faults
//!    and synchronous promotions, and `gups-hotset` (2 MiB pages) under tpp and nbt.
use tierkit_sim::{load, run};

const CASE: [&str; 5] = [
    "threads=8",
    "working_set_gb=16",
    "hot_set_gb=5.3",
    "fast_ratio=1:2",
    "page_size=4KiB",
];

fn exp(extra: &[&str], dur: &str) -> tierkit_sim::Experiment {
    let mut s: Vec<String> = CASE.iter().chain(extra).map(|x| x.to_string()).collect();
    s.push(format!("duration_s={dur}"));
    load("gups-hotset", &s, Some(1)).expect("experiment")
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    println!("### Simulator speed: gups-hotset, 8 threads, 16 GiB of 4 KiB pages, one core\n");
    println!("| policy | antagonist | sim s | sim s / wall s (with the fast-only reference) | sim s / wall s (policy run alone) | setup | solve | sampling + faults | policy | reference |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (policy, extra) in [
        ("hemem", &[][..]),
        ("notier", &[][..]),
        ("hemem", &["antagonist_intensity=3"][..]),
    ] {
        let e = exp(extra, if quick { "6" } else { "60" });
        let t = std::time::Instant::now();
        let out = run(&e, policy, &mut |_, _| true).expect("run");
        let wall = t.elapsed().as_secs_f64();
        let tm = &out.timing;
        let pct = |x: f64| format!("{:.0}%", 100.0 * x / wall);
        println!(
            "| {policy} | {} | {:.0} | {:.1}x | {:.1}x | {} | {} | {} | {} | {} |",
            if extra.is_empty() { "0x" } else { "3x" },
            out.summary.sim_seconds,
            out.summary.sim_seconds / wall,
            out.summary.sim_seconds / (wall - tm.reference_s),
            pct(tm.setup_s),
            pct(tm.solve_s),
            pct(tm.sample_s),
            pct(tm.policy_s),
            if tm.reference_s < 1e-3 {
                "cached".to_string()
            } else {
                pct(tm.reference_s)
            },
        );
    }
    println!(
        "\n### Policy cost per epoch (1 ms), same machine, {} s simulated\n",
        if quick { 2 } else { 10 }
    );
    println!("| policy | policy us / epoch | machine us / epoch | policy / machine |");
    println!("|---|---|---|---|");
    let policies = [
        "notier",
        "hemem",
        "hemem+colloid",
        "memtis",
        "memtis+colloid",
        "tpp",
        "tpp+colloid",
        "tpp+alto",
        "tpp+colloid+alto",
        "nbt",
        "nbt+alto",
        "nomad",
        "nomad+alto",
        "soar",
    ];
    let registered: Vec<&str> = tierkit_policies::REGISTRY.iter().map(|p| p.name).collect();
    for policy in policies {
        if policy.split('+').any(|p| !registered.contains(&p)) {
            continue;
        }
        let e = exp(&["antagonist_intensity=1"], if quick { "2" } else { "10" });
        let out = run(&e, policy, &mut |_, _| true).expect("run");
        let epochs = out.summary.sim_seconds / e.epoch_ms * 1e3;
        let (p, m) = (
            out.timing.policy_s / epochs * 1e6,
            out.timing.machine_s / epochs * 1e6,
        );
        println!("| {policy} | {p:.2} | {m:.2} | {:.2} |", p / m);
    }
    let dur = if quick { "5" } else { "20" };
    println!("\n### Hint-fault-heavy runs, {dur} s simulated\n");
    println!("| experiment | policy | hint faults | promotions | sim s / wall s |");
    println!("|---|---|---|---|---|");
    let fault_cases: [(&str, &[&str]); 2] = [
        ("toggle-phases", &["threads=1", "rss_gb=2", "phase_s=60"]),
        ("gups-hotset", &[]),
    ];
    for (name, extra) in fault_cases {
        for policy in ["tpp", "nbt"] {
            let mut s: Vec<String> = extra.iter().map(|x| x.to_string()).collect();
            s.push(format!("duration_s={dur}"));
            let e = load(name, &s, Some(1)).expect("experiment");
            let t = std::time::Instant::now();
            let out = run(&e, policy, &mut |_, _| true).expect("run");
            let wall = t.elapsed().as_secs_f64() - out.timing.reference_s;
            println!(
                "| {name} {} | {policy} | {} | {} | {:.1}x |",
                extra.join(" "),
                out.summary.hint_faults,
                out.summary.promotions,
                out.summary.sim_seconds / wall
            );
        }
    }
}
