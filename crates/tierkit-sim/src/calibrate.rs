//! `tierkit calibrate`: measure a platform's constants with microbenchmarks, as the papers do.
//!
//! * Alto's AOL_low / AOL_high are the AOLs of a sequential stream (MLP 7) and a pointer chase
//!   (MLP 1) on the fast tier (Soar/Alto §5.2: "derived ... based on two microbenchmarks
//!   representing extreme MLP cases").
//! * The slowdown predictor's K(AOL) = 1 / (a + b / AOL) is fitted by least squares of 1/K on
//!   1/AOL over microbenchmarks from MLP 1 to 12, where K = S / P, S the measured slowdown of the
//!   all-slow-tier run against the all-fast-tier run and P = s_LLC / c on the fast tier (§3.2).
//! * PACT's per-tier stall coefficient k of S = k * LLC-misses / MLP (PACT §4.2, Eq. 1) is
//!   fitted through the origin, per tier, on microbenchmarks from MLP 1 to 12 whose pages all
//!   lie in that tier: x = the tier's LLC misses / its TOR MLP (clamped to [1, 16]) per epoch,
//!   y = the epoch's CYCLE_ACTIVITY.STALLS_L3_MISS (PACT fits k against measured LLC stalls over
//!   96 workloads, Fig. 2; its Skylake values are 238 cycles for DRAM and 771 for CXL).

use tierkit_core::telemetry::Calibration;

use crate::error::Result;
use crate::machine::Machine;
use crate::{load_str, Experiment};

/// One microbenchmark's measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub mlp: f64,
    pub compute_ns: f64,
    pub aol_cycles: f64,
    /// P = s_LLC / c on the fast tier.
    pub p: f64,
    /// Measured slowdown, all-slow vs all-fast: T_slow / T_fast - 1.
    pub slowdown: f64,
}

impl Point {
    pub fn k(&self) -> f64 {
        self.slowdown / self.p
    }
}

fn micro(
    platform: &str,
    mlp: f64,
    compute_ns: f64,
    pattern: &str,
    fast_gb: f64,
) -> Result<Experiment> {
    let text = format!(
        "workload = \"custom\"\nplatform = \"{platform}\"\nduration_s = 1\npage_size = \"2MiB\"\nfast_tier_gb = {fast_gb}\n\
         [[process]]\nname = \"micro\"\n[[process.object]]\nname = \"buf\"\nsize_gb = 1\n\
         [[process.thread]]\n[[process.thread.phase]]\nmlp = {mlp}\ncompute_ns = {compute_ns}\n\
         [[process.thread.phase.access]]\nobject = \"buf\"\npattern = \"{pattern}\"\n"
    );
    load_str(
        &format!("calibration microbenchmark on {platform}"),
        &text,
        &[],
        Some(1),
    )
}

/// Run `epochs` epochs and return (ops, A1, A3, stalls, cycles) summed over the app thread.
fn measure(exp: &Experiment, fast_only: bool, epochs: usize) -> Result<(f64, f64, f64, f64, f64)> {
    let mut m = Machine::new(exp, fast_only)?;
    let mut acc = (0.0, 0.0, 0.0, 0.0, 0.0);
    for i in 0..epochs {
        m.step()?;
        m.clear_events();
        if i < 2 {
            continue; // allocation epochs
        }
        for c in &m.tel.cores {
            acc.0 += c.ops;
            acc.1 += c.oro_cycles_with_demand_rd;
            acc.2 += c.offcore_demand_rd;
            acc.3 += c.stalls_l3_miss;
            acc.4 += c.cycles;
        }
    }
    Ok(acc)
}

/// Measure one microbenchmark on the fast tier and on the slow tier.
pub fn point(platform: &str, mlp: f64, compute_ns: f64, pattern: &str) -> Result<Point> {
    let fast = micro(platform, mlp, compute_ns, pattern, 2.0)?;
    let slow = micro(platform, mlp, compute_ns, pattern, 0.0)?;
    let (ops_f, a1, a3, stalls, cycles) = measure(&fast, true, 40)?;
    let (ops_s, ..) = measure(&slow, false, 40)?;
    Ok(Point {
        mlp,
        compute_ns,
        aol_cycles: a1 / a3,
        p: stalls / cycles,
        slowdown: ops_f / ops_s - 1.0,
    })
}

/// PACT's MLP clamp (§4.2: [1, 16] on Skylake).
pub const PACT_MLP_RANGE: (f64, f64) = (1.0, 16.0);

/// PACT's k for tier `tier` (0 fast, 1 slow): least squares through the origin of the L3-miss
/// stall cycles on LLC-misses / MLP over microbenchmarks whose pages all lie in that tier, the
/// LLC-misses being PACT's Table 1 counter (`TierCounters::l3_miss_loads`).
pub fn stall_k(platform: &str, tier: usize) -> Result<f64> {
    let (mut sxy, mut sxx) = (0.0, 0.0);
    let cases = [
        (1.0, 2.0, "pointer-chase"),
        (7.0, 8.0, "sequential"),
        (2.0, 5.0, "uniform"),
        (4.0, 5.0, "uniform"),
        (8.0, 5.0, "uniform"),
        (12.0, 5.0, "uniform"),
    ];
    for (mlp, z, pattern) in cases {
        let exp = micro(platform, mlp, z, pattern, if tier == 0 { 2.0 } else { 0.0 })?;
        let mut m = Machine::new(&exp, tier == 0)?;
        for i in 0..20 {
            m.step()?;
            m.clear_events();
            if i < 2 {
                continue; // allocation epochs
            }
            let Some(c) = m.tel.tier_counters.get(tier) else {
                continue;
            };
            let Some(q) = m.tel.tier_mlp(tier as u8) else {
                continue;
            };
            // Table 1's counter: retired loads that missed L3 (prefetch-covered ones retire as hits)
            let x = c.l3_miss_loads / q.clamp(PACT_MLP_RANGE.0, PACT_MLP_RANGE.1);
            let y: f64 = m.tel.cores.iter().map(|c| c.stalls_l3_miss).sum();
            sxy += x * y;
            sxx += x * x;
        }
    }
    Ok(if sxx > 0.0 { sxy / sxx } else { 0.0 })
}

/// The full calibration of a platform, with the points it was fitted on.
pub fn calibrate(platform: &str) -> Result<(Calibration, Vec<Point>)> {
    let seq = point(platform, 7.0, 8.0, "sequential")?;
    let pc = point(platform, 1.0, 2.0, "pointer-chase")?;
    let mut pts = vec![pc.clone(), seq.clone()];
    for m in [2.0, 3.0, 4.0, 6.0, 8.0, 10.0, 12.0] {
        pts.push(point(platform, m, 5.0, "uniform")?);
    }
    // least squares of y = 1/K on x = 1/AOL
    let n = pts.len() as f64;
    let (xs, ys): (Vec<f64>, Vec<f64>) = pts
        .iter()
        .map(|p| (1.0 / p.aol_cycles, 1.0 / p.k()))
        .unzip();
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let b = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let a = my - b * mx;
    Ok((
        Calibration {
            aol_low_cycles: seq.aol_cycles,
            aol_high_cycles: pc.aol_cycles,
            k_a: a,
            k_b: b,
            stall_k_cycles: vec![stall_k(platform, 0)?, stall_k(platform, 1)?],
        },
        pts,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_calibrations_match_a_fresh_one() {
        for (name, _, f) in crate::platform::PRESETS {
            let recorded = f()
                .calibration
                .expect("every preset carries its calibration");
            let (fresh, pts) = calibrate(name).unwrap();
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * a.abs().max(b.abs()).max(1e-3);
            assert!(
                close(recorded.aol_low_cycles, fresh.aol_low_cycles),
                "{name}: {recorded:?} vs {fresh:?}"
            );
            assert!(
                close(recorded.aol_high_cycles, fresh.aol_high_cycles),
                "{name}: {recorded:?} vs {fresh:?}"
            );
            assert!(
                close(recorded.k_a, fresh.k_a) && close(recorded.k_b, fresh.k_b),
                "{name}: {recorded:?} vs {fresh:?}"
            );
            assert_eq!(recorded.stall_k_cycles.len(), fresh.stall_k_cycles.len());
            for (r, f) in recorded.stall_k_cycles.iter().zip(&fresh.stall_k_cycles) {
                assert!(close(*r, *f), "{name}: stall k {r} vs {f}");
            }
            // PACT's k: the slow tier costs more stall cycles per MLP-amortized miss
            assert!(
                fresh.stall_k_cycles[1] > fresh.stall_k_cycles[0],
                "{name}: {:?}",
                fresh.stall_k_cycles
            );
            // the stream has the lower AOL, the pointer chase the higher
            assert!(fresh.aol_low_cycles < fresh.aol_high_cycles);
            // the fit reproduces its own points' K within 20%
            for p in &pts {
                let k = fresh.k(p.aol_cycles);
                assert!(
                    (k - p.k()).abs() < 0.2 * p.k(),
                    "{name} m={}: fitted {k} vs measured {}",
                    p.mlp,
                    p.k()
                );
            }
        }
    }
}
