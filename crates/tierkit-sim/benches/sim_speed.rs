//! Simulator speed: simulated seconds per wall second, and where the time goes, measured side by
//! side in one run (these machines are noisy; compare the ratios, not the absolute times).
//!
//! `cargo bench -p tierkit-sim --bench sim_speed [-- --quick]`
//!
//! The case: `gups-hotset`, 8 threads over 16 GiB (4M pages of 4 KiB), hemem, 60 s
//! simulated, one core. Goal >= 50x real time (long-term 200x).
use tierkit_sim::{load, run};

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let dur = if quick { "6" } else { "60" };
    let mut rows = Vec::new();
    let cases = [
        (
            "gups-hotset",
            "hemem",
            vec![
                "threads=8",
                "working_set_gb=16",
                "hot_set_gb=5.3",
                "fast_ratio=1:2",
            ],
        ),
        (
            "gups-hotset",
            "notier",
            vec![
                "threads=8",
                "working_set_gb=16",
                "hot_set_gb=5.3",
                "fast_ratio=1:2",
            ],
        ),
        (
            "gups-hotset",
            "hemem",
            vec![
                "threads=8",
                "working_set_gb=16",
                "hot_set_gb=5.3",
                "fast_ratio=1:2",
                "antagonist_intensity=3",
            ],
        ),
    ];
    let policies = tierkit_policies::REGISTRY
        .iter()
        .map(|p| p.name)
        .collect::<Vec<_>>();
    for (w, policy, sets) in cases.iter() {
        if !policies.contains(policy) {
            eprintln!("skipping {policy}: not registered");
            continue;
        }
        let mut s: Vec<String> = sets.iter().map(|x| x.to_string()).collect();
        s.push(format!("duration_s={dur}"));
        let exp = load(w, &s, Some(1)).expect("experiment");
        let t = std::time::Instant::now();
        let out = run(&exp, policy, &mut |_, _| true).expect("run");
        let wall = t.elapsed().as_secs_f64();
        let tm = &out.timing;
        let main = wall - tm.reference_s;
        rows.push(format!(
            "| {w} {} | {policy} | {:.0} | {:.1}x | {:.1}x | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {:.2} |",
            sets.join(" "),
            out.summary.sim_seconds,
            out.summary.sim_seconds / wall,
            out.summary.sim_seconds / main,
            100.0 * tm.setup_s / wall,
            100.0 * tm.solve_s / wall,
            100.0 * tm.sample_s / wall,
            100.0 * tm.policy_s / wall,
            100.0 * tm.reference_s / wall,
            1e6 * (tm.machine_s - tm.solve_s - tm.sample_s) / (out.summary.sim_seconds / exp.epoch_ms * 1e3),
        ));
    }
    println!("| experiment | policy | sim s | sim s / wall s (with fast-only reference) | sim s / wall s (policy run only) | setup | solve | sampling+faults | policy | fast-only reference | other us/epoch |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
}
