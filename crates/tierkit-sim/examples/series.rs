//! Run one experiment and print its time series every `every_s` simulated seconds, with the
//! summary's headline figures (development and measurements):
//! `cargo run --release -p tierkit-sim --example series -- EXPERIMENT POLICY EVERY_S [KEY=VALUE...]`
use tierkit_sim::{load, run};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: series EXPERIMENT POLICY EVERY_S [KEY=VALUE...]");
        std::process::exit(2);
    }
    let every: f64 = args[2].parse().expect("EVERY_S is a number");
    let exp = load(&args[0], &args[3..], None).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let out = run(&exp, &args[1], &mut |_, _| true).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2)
    });
    let cols = &out.series.columns;
    let col = |name: &str| cols.iter().find(|c| c.0 == name).map(|c| &c.1);
    let t = col("t_s").expect("t_s column");
    // SERIES_COLS=prefix,prefix...: more columns (e.g. policy.kswapd for kswapd's counts)
    let extra: Vec<String> = std::env::var("SERIES_COLS")
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let names: Vec<&String> = cols
        .iter()
        .map(|c| &c.0)
        .filter(|n| {
            extra
                .iter()
                .any(|x| !x.is_empty() && n.starts_with(x.as_str()))
                || n.as_str() == "throughput_ops_per_s"
                || n.starts_with("fast_hit_ratio.")
                || n.starts_with("fast_pages.")
                || n.as_str() == "promotions"
                || n.as_str() == "demotions"
        })
        .collect();
    println!(
        "t_s\t{}\tcum_promotions\tcum_demotions",
        names
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\t")
    );
    let (mut next, mut cp, mut cd) = (every, 0.0, 0.0);
    for i in 0..t.len() {
        cp += col("promotions").map_or(0.0, |c| c[i]);
        cd += col("demotions").map_or(0.0, |c| c[i]);
        if t[i] + 1e-9 >= next || i + 1 == t.len() {
            next += every;
            let vals: Vec<String> = names
                .iter()
                .map(|n| format!("{:.4}", col(n).unwrap()[i]))
                .collect();
            println!("{:.1}\t{}\t{cp}\t{cd}", t[i], vals.join("\t"));
        }
    }
    // Mean throughput over the last third of the run (steady state).
    let thr = col("throughput_ops_per_s").unwrap();
    let tail: Vec<f64> = (0..t.len())
        .filter(|&i| t[i] > t[t.len() - 1] * 2.0 / 3.0)
        .map(|i| thr[i])
        .collect();
    let s = &out.summary;
    println!(
        "summary: throughput {:.4e} tail-third mean {:.4e} promotions {} demotions {} hint_faults {} accessed tests {} at dt0 {}",
        s.throughput_ops_per_s,
        tail.iter().sum::<f64>() / tail.len().max(1) as f64,
        s.promotions,
        s.demotions,
        s.hint_faults,
        s.accessed_bit_tests,
        s.accessed_bit_tests_at_dt0
    );
    println!(
        "policy_stats: {}",
        serde_json::to_string(&s.policy_stats).expect("serializable")
    );
}
