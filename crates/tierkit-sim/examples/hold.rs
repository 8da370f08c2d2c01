//! Hot-set share in the fast tier of gups-hotset over time (issue 14's hold target):
//! `cargo run --release -p tierkit-sim --example hold -- POLICY [KEY=VALUE...] seed=N`
use tierkit_sim::{load, run};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: hold POLICY [KEY=VALUE...] [seed=N]");
        std::process::exit(2);
    }
    let policy = args.remove(0);
    let mut seed = 5;
    args.retain(|a| match a.strip_prefix("seed=") {
        Some(s) => {
            seed = s.parse().unwrap_or_else(|_| {
                eprintln!("error: seed={s}: expected a whole number");
                std::process::exit(2)
            });
            false
        }
        None => true,
    });
    let fail = |e: tierkit_sim::SimError| -> ! {
        eprintln!("error: {e}");
        std::process::exit(2)
    };
    let e = load("gups-hotset", &args, Some(seed)).unwrap_or_else(|e| fail(e));
    let out = run(&e, &policy, &mut |_, _| true).unwrap_or_else(|e| fail(e));
    let s = &out.series;
    let col = |n: &str| {
        s.get(n).unwrap_or_else(|| {
            eprintln!("error: the run's time series has no column {n}");
            std::process::exit(2)
        })
    };
    let (t, hits) = (col("t_s"), col("fast_hit_ratio.gups"));
    let (fast, rss) = (col("fast_pages.gups"), col("rss_pages.gups"));
    let mean = |v: &[f64], a: f64, b: f64| {
        let xs: Vec<f64> = t
            .iter()
            .zip(v)
            .filter(|(&x, _)| x > a && x <= b)
            .map(|(_, &x)| x)
            .collect();
        xs.iter().sum::<f64>() / xs.len().max(1) as f64
    };
    let share =
        |a: f64, b: f64| (mean(hits, a, b) - 0.1 * mean(fast, a, b) / mean(rss, a, b)) / 0.9;
    let end = t[t.len() - 1];
    println!(
        "{policy} seed={seed} at60={:.3} by300={:.3} end={:.3} slowdown={:.4} promotions={} demotions={}",
        share(59.0, 60.0),
        share(300.0, 330.0),
        share(end - 40.0, end),
        out.summary.slowdown_vs_fast_only,
        out.summary.promotions,
        out.summary.demotions
    );
}
