//! Core counters on recorded reads (tests/data/core_counters): the CPU model from /proc/cpuinfo,
//! the raw encodings chosen for it, and the deltas through AOL = A1/A3 and the predicted
//! slowdown, for Skylake-X, Ice Lake-X and Sapphire Rapids; and the refusals. No PMU needed.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tierkit_core::{Calibration, CoreCounters, Telemetry};
use tierkitd::source::core_counters::{
    self, aol_cycles, attrs, predicted_slowdown, probe_with, stall_share, CoreMetrics, CoreSampler,
    Recorded, Uarch, SHORT_NAMES,
};

fn data(model: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/core_counters")
        .join(model)
}

fn pmu_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pmu")
}

fn kv(words: &[&str]) -> BTreeMap<String, String> {
    words
        .iter()
        .filter_map(|w| w.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn close(got: Option<f64>, want: &str, what: &str) {
    match (got, want) {
        (None, "none") => {}
        (Some(g), w) if w != "none" => {
            let w: f64 = w.parse().unwrap();
            assert!(
                (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                "{what}: got {g}, want {w}"
            );
        }
        (g, w) => panic!("{what}: got {g:?}, want {w}"),
    }
}

/// Run one model's recording; returns how many expectations were checked.
fn replay(model: &str, want: Uarch) -> usize {
    let dir = data(model);
    let cpuinfo = std::fs::read_to_string(dir.join("cpuinfo")).unwrap();
    let text = std::fs::read_to_string(dir.join("reads.txt")).unwrap();
    // the model, through the same start-up check the daemon runs (the opening is stubbed)
    let u = probe_with(&pmu_fixture(), &cpuinfo, |_| Ok(())).unwrap();
    assert_eq!(u, want, "{model}");
    // the encodings chosen
    let a = attrs(u);
    let mut encodings = 0;
    let mut cal = None;
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        match w.first() {
            Some(&"encoding") => {
                let i = SHORT_NAMES.iter().position(|s| *s == w[1]).unwrap();
                let ty: u32 = w[2].parse().unwrap();
                let cfg = u64::from_str_radix(w[3].trim_start_matches("0x"), 16).unwrap();
                assert_eq!(a[i], (ty, cfg), "{model}: {}", w[1]);
                encodings += 1;
            }
            Some(&"calibration") => {
                let m = kv(&w);
                cal = Some(Calibration {
                    aol_low_cycles: 40.0,
                    aol_high_cycles: 100.0,
                    k_a: m["k_a"].parse().unwrap(),
                    k_b: m["k_b"].parse().unwrap(),
                    stall_k_cycles: Vec::new(),
                });
            }
            _ => {}
        }
    }
    assert_eq!(encodings, 5, "{model}: every counter's encoding is checked");
    // the deltas
    let rec = Recorded::parse(&text).unwrap();
    let n = rec.intervals();
    let mut s = CoreSampler::new(u, Box::new(rec));
    let samples: Vec<Vec<CoreCounters>> = (0..n).map(|_| s.sample().unwrap()).collect();
    assert!(s.sample().is_err(), "the recording is exhausted");
    assert!(samples[0].is_empty(), "the first read is a baseline");
    let mut checked = 0;
    for l in text.lines() {
        let w: Vec<&str> = l.split_whitespace().collect();
        let Some(&kind) = w.first() else { continue };
        if kind != "expect" && kind != "expect_sum" {
            continue;
        }
        let i: usize = w[1].parse().unwrap();
        let pids: Vec<u32> = w[2].split(',').map(|p| p.parse().unwrap()).collect();
        let cs: Vec<&CoreCounters> = samples[i]
            .iter()
            .filter(|c| pids.contains(&c.pid))
            .collect();
        assert_eq!(cs.len(), pids.len(), "{model}: {l}");
        let c = core_counters::sum(cs.iter().copied());
        let m = kv(&w);
        let what = format!("{model}: {l}");
        close(aol_cycles(&c), &m["aol"], &what);
        if kind == "expect" {
            close(stall_share(&c), &m["stall"], &what);
            close(predicted_slowdown(&c, None), &m["slowdown"], &what);
            close(
                predicted_slowdown(&c, cal.as_ref()),
                &m["slowdown_cal"],
                &what,
            );
            // exactly what the policies see: the Telemetry's AOL over the process
            let tel = Telemetry {
                cores: samples[i].clone(),
                ..Telemetry::default()
            };
            close(tel.aol_cycles(Some(pids[0])), &m["aol"], &what);
        }
        checked += 1;
    }
    checked
}

#[test]
fn skylake_x_recording() {
    assert_eq!(replay("skylakex", Uarch::SkylakeX), 4);
}

#[test]
fn ice_lake_x_recording() {
    assert_eq!(replay("icelakex", Uarch::IceLakeX), 2);
}

#[test]
fn sapphire_rapids_recording() {
    assert_eq!(replay("sapphirerapids", Uarch::SapphireRapids), 2);
}

#[test]
fn gauges_per_target() {
    let text = std::fs::read_to_string(data("skylakex").join("reads.txt")).unwrap();
    let mut s = CoreSampler::new(Uarch::SkylakeX, Box::new(Recorded::parse(&text).unwrap()));
    let reg = prometheus::Registry::new_custom(Some("tierkitd".into()), None).unwrap();
    let mut m = CoreMetrics::register(&reg);
    let label = |c: &CoreCounters| c.pid.to_string();
    let mut render = |cs: Vec<CoreCounters>| {
        let mut by: BTreeMap<String, Vec<CoreCounters>> = BTreeMap::new();
        for c in cs {
            by.entry(label(&c)).or_default().push(c);
        }
        let by = by
            .into_iter()
            .map(|(l, v)| (l, core_counters::sum(&v)))
            .collect();
        m.update(&by, None);
        let mut out = Vec::new();
        prometheus::Encoder::encode(&prometheus::TextEncoder::new(), &reg.gather(), &mut out)
            .unwrap();
        String::from_utf8(out).unwrap()
    };
    render(s.sample().unwrap());
    let t = render(s.sample().unwrap());
    for line in [
        "# TYPE tierkitd_amortized_offcore_latency_cycles gauge\n",
        "tierkitd_amortized_offcore_latency_cycles{target=\"4242\"} 60\n",
        "tierkitd_l3_miss_stall_ratio{target=\"4242\"} 0.3\n",
        "tierkitd_predicted_slowdown_ratio{target=\"4242\"} 0.3\n",
    ] {
        assert!(t.contains(line), "{line} in\n{t}");
    }
    let t = render(s.sample().unwrap());
    assert!(
        t.contains("tierkitd_amortized_offcore_latency_cycles{target=\"4243\"} 20\n"),
        "{t}"
    );
    // a target without counters loses its series
    let t = render(Vec::new());
    assert!(!t.contains("target=\"4242\""), "{t}");
}

#[test]
fn refusals_are_one_line_and_name_what_is_missing() {
    let intel_skx = std::fs::read_to_string(data("skylakex").join("cpuinfo")).unwrap();
    let one_line = |e: &str| assert!(!e.contains('\n'), "one line: {e}");
    // no PMU: the sysfs directory is absent (a VM without a virtual PMU)
    let e = probe_with(Path::new("/nonexistent"), &intel_skx, |_| Ok(())).unwrap_err();
    one_line(&e);
    assert!(
        e.starts_with("it needs per-core PMU counters (cycles, CYCLE_ACTIVITY.STALLS_L3_MISS")
            && e.contains("no core PMU (/nonexistent/cpu is absent"),
        "{e}"
    );
    // the PMU is there but does not count the events (perf_event_open: ENOENT, EOPNOTSUPP)
    for errno in [libc::ENOENT, libc::EOPNOTSUPP] {
        let e = probe_with(&pmu_fixture(), &intel_skx, |_| {
            Err(std::io::Error::from_raw_os_error(errno))
        })
        .unwrap_err();
        one_line(&e);
        assert!(e.contains("the PMU does not count these events"), "{e}");
    }
    let e = probe_with(&pmu_fixture(), &intel_skx, |_| {
        Err(std::io::Error::from_raw_os_error(libc::EACCES))
    })
    .unwrap_err();
    assert!(e.contains("perf_event_paranoid"), "{e}");
    // AMD (this machine's CPU kind): its events are named, with the models that have them
    let amd = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\nstepping\t: 1\n";
    let e = probe_with(&pmu_fixture(), amd, |_| Ok(())).unwrap_err();
    one_line(&e);
    assert!(
        e.contains("AuthenticAMD family 25 model 0x11 (AMD)")
            && e.contains(
                "OFFCORE_REQUESTS_OUTSTANDING.{CYCLES_WITH_DEMAND_DATA_RD,DEMAND_DATA_RD}"
            )
            && e.contains("Sapphire Rapids"),
        "{e}"
    );
    // an Intel model without encodings (Haswell-X)
    let hsx = intel_skx.replace("model\t\t: 85", "model\t\t: 63");
    let e = probe_with(&pmu_fixture(), &hsx, |_| Ok(())).unwrap_err();
    one_line(&e);
    assert!(
        e.contains("GenuineIntel family 6 model 0x3f, a model for which tierkitd has no encodings"),
        "{e}"
    );
}

#[test]
fn cascade_lake_and_client_models() {
    let skx = std::fs::read_to_string(data("skylakex").join("cpuinfo")).unwrap();
    let clx = skx.replace("stepping\t: 4", "stepping\t: 7");
    assert_eq!(
        probe_with(&pmu_fixture(), &clx, |_| Ok(())),
        Ok(Uarch::CascadeLakeX)
    );
    let icl = skx.replace("model\t\t: 85", "model\t\t: 126");
    assert_eq!(
        probe_with(&pmu_fixture(), &icl, |_| Ok(())),
        Ok(Uarch::IceLake)
    );
    let emr = skx.replace("model\t\t: 85", "model\t\t: 207");
    let u = probe_with(&pmu_fixture(), &emr, |_| Ok(())).unwrap();
    assert_eq!(
        (u, attrs(u)),
        (Uarch::EmeraldRapids, attrs(Uarch::SapphireRapids))
    );
    let skl = skx.replace("model\t\t: 85", "model\t\t: 94");
    assert_eq!(
        probe_with(&pmu_fixture(), &skl, |_| Ok(())),
        Ok(Uarch::Skylake)
    );
}

/// `hemem+alto` through the daemon's loop (the Linux backend, `tierkit_core::backend`) on a
/// live process whose counters are replayed: Alto sees the recorded AOL and stops promotion.
#[test]
fn alto_runs_on_the_linux_backend_with_recorded_counters() {
    use tierkit_core::backend;
    use tierkitd::metrics::Metrics;

    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let pid = child.id();
    // 12 intervals of AOL 3e8 / 1e7 = 30 cycles (below AOL_low = 40: no promotion), P 0.25
    let reads: String = (0..12u64)
        .map(|i| {
            format!(
                "read {i} {pid} cycles={} stalls_l3_miss={} a1={} a2={} a3={}\n",
                i * 2_000_000_000,
                i * 500_000_000,
                i * 300_000_000,
                i * 600_000_000,
                i * 10_000_000
            )
        })
        .collect();
    let mut lx = common::dry_run_backend(pid, std::time::Duration::from_millis(40), Metrics::new());
    lx.set_core_counters(CoreSampler::new(
        Uarch::SkylakeX,
        Box::new(Recorded::parse(&reads).unwrap()),
    ));
    let mut policy = tierkit_policies::build("hemem+alto:interval_ms=100").unwrap();
    assert!(policy.needs().core_counters);
    let mut actions = Vec::new();
    backend::init(policy.as_mut(), &mut lx, &mut actions);
    let mut seen = Vec::new();
    for _ in 0..11 {
        tierkit_core::Backend::observe(&mut lx).unwrap();
        let tel = tierkit_core::Backend::take_telemetry(&mut lx);
        seen.extend(
            tel.cores
                .iter()
                .map(|c| (c.pid, tel.aol_cycles(Some(c.pid)))),
        );
        tierkit_core::Backend::restore_telemetry(&mut lx, tel);
        backend::decide(policy.as_mut(), &mut lx, &mut actions);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // every interval after the baseline hands the policy the target's counters
    assert_eq!(seen.len(), 10, "{seen:?}");
    assert!(
        seen.iter().all(|&(p, aol)| p == pid && aol == Some(30.0)),
        "{seen:?}"
    );
    let stats: BTreeMap<String, f64> = policy.stats().into_iter().collect();
    assert!(stats["alto.intervals"] >= 1.0, "{stats:?}");
    assert_eq!(stats["alto.last_aol_cycles"], 30.0, "{stats:?}");
    assert_eq!(stats["alto.allowed_per_denominator"], 0.0, "{stats:?}");
}
