//! Helpers shared by the integration tests.

use tierkit_sim::RunOutput;

/// Per process, sorted by name: (name, fast-tier pages at the end, slowdown against the
/// fast-only run, fast-tier hit ratio).
pub fn per_process(out: &RunOutput) -> Vec<(String, f64, f64, f64)> {
    let mut v: Vec<(String, f64, f64, f64)> = out
        .summary
        .processes
        .iter()
        .map(|p| {
            let fast = *out
                .series
                .get(&format!("fast_pages.{}", p.name))
                .unwrap()
                .last()
                .unwrap();
            (
                p.name.clone(),
                fast,
                p.slowdown_vs_fast_only,
                p.fast_tier_hit_ratio,
            )
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}
