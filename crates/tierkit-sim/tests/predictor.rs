//! The AOL slowdown predictor (Soar/Alto §3.2) across varied workloads: the slowdown predicted
//! from fast-tier counters, S = P K(AOL) with the platform's calibration, tracks the measured
//! slowdown of running everything in the slow tier (the paper reports Pearson 0.951 over 56).

use tierkit_sim::load_str;
use tierkit_sim::machine::Machine;

fn workload(
    platform: &str,
    threads: u32,
    mlp: f64,
    z: f64,
    pattern: &str,
    read_frac: f64,
    fast_gb: f64,
) -> tierkit_sim::Experiment {
    let text = format!(
        "workload = \"custom\"\nplatform = \"{platform}\"\nduration_s = 1\npage_size = \"2MiB\"\nfast_tier_gb = {fast_gb}\n\
         [[process]]\nname = \"w\"\n[[process.object]]\nname = \"a\"\nsize_gb = 2\n[[process.object]]\nname = \"b\"\nsize_gb = 1\n\
         [[process.thread]]\ncount = {threads}\n[[process.thread.phase]]\nmlp = {mlp}\ncompute_ns = {z}\nread_frac = {read_frac}\n\
         [[process.thread.phase.access]]\nobject = \"a\"\nweight = 0.7\npattern = \"{pattern}\"\n\
         [[process.thread.phase.access]]\nobject = \"b\"\nweight = 0.3\n"
    );
    load_str("predictor workload", &text, &[], Some(3)).unwrap()
}

/// (ops, A1, A3, s_LLC, cycles, slow-tier utilisation) over 30 epochs after allocation.
fn measure(e: &tierkit_sim::Experiment, fast_only: bool) -> (f64, f64, f64, f64, f64, f64) {
    let mut m = Machine::new(e, fast_only).unwrap();
    let mut acc: (f64, f64, f64, f64, f64, f64) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for i in 0..32 {
        m.step().unwrap();
        m.clear_events();
        if i < 2 {
            continue;
        }
        for c in &m.tel.cores {
            acc = (
                acc.0 + c.ops,
                acc.1 + c.oro_cycles_with_demand_rd,
                acc.2 + c.offcore_demand_rd,
                acc.3 + c.stalls_l3_miss,
                acc.4 + c.cycles,
                acc.5,
            );
        }
        let t = m.tel.tier_counters[1];
        let gbps = (t.bytes_read + t.bytes_written) / m.tel.epoch_ns as f64;
        let rf = if gbps > 0.0 {
            t.bytes_read / (t.bytes_read + t.bytes_written)
        } else {
            1.0
        };
        acc.5 = acc
            .5
            .max(gbps / e.platform.tiers[1].curve.saturation_gbps(rf));
    }
    acc
}

fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let syy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    sxy / (sxx * syy).sqrt()
}

#[test]
fn predicted_slowdown_tracks_measured_across_24_workloads() {
    let mut pred = Vec::new();
    let mut meas = Vec::new();
    let mut saturating = Vec::new();
    let shapes = [
        (1, 1.0, 2.0, "pointer-chase", 1.0),
        (1, 2.0, 10.0, "uniform", 1.0),
        (1, 7.0, 8.0, "sequential", 1.0),
        (1, 12.0, 4.0, "sequential", 1.0),
        (2, 1.0, 40.0, "pointer-chase", 0.9),
        (4, 3.0, 5.0, "uniform", 0.5),
        (4, 6.0, 20.0, "zipf", 0.8),
        (8, 8.0, 3.0, "sequential", 1.0),
        (8, 2.0, 2.0, "zipf", 0.7),
        (12, 10.0, 1.0, "uniform", 0.5),
        (16, 4.0, 2.0, "uniform", 0.5),
        (6, 1.0, 100.0, "pointer-chase", 1.0),
    ];
    for platform in ["skx-cxl-emu", "spr-cxl"] {
        for &(threads, mlp, z, pattern, rf) in &shapes {
            let fast = measure(&workload(platform, threads, mlp, z, pattern, rf, 4.0), true);
            let slow = measure(
                &workload(platform, threads, mlp, z, pattern, rf, 0.0),
                false,
            );
            let measured = fast.0 / slow.0 - 1.0;
            let cal = tierkit_sim::platform::preset(platform)
                .unwrap()
                .calibration
                .unwrap();
            let predicted = cal.predict_slowdown(fast.3, fast.4, fast.1 / fast.2);
            pred.push(predicted);
            meas.push(measured);
            saturating.push(slow.5 > 0.8);
        }
    }
    assert_eq!(pred.len(), 24);
    // Fast-tier counters cannot see slow-tier bandwidth saturation: those workloads slow down
    // more than predicted (the paper's Fig. 2e has such an outlier). On the rest the predictor
    // must track closely; with them, still clearly.
    let keep: Vec<usize> = (0..pred.len()).filter(|&i| !saturating[i]).collect();
    assert!(
        keep.len() >= 20,
        "only {} non-saturating workloads",
        keep.len()
    );
    let (p, m): (Vec<f64>, Vec<f64>) = keep.iter().map(|&i| (pred[i], meas[i])).unzip();
    let r = pearson(&p, &m);
    assert!(
        r > 0.95,
        "Pearson without saturation {r}: predicted {p:?} measured {m:?}"
    );
    let r_all = pearson(&pred, &meas);
    assert!(r_all > 0.75, "Pearson over all 24: {r_all}");
}
