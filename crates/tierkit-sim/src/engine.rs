//! The run loop: observe, decide, act, once per epoch; the fast-only reference run; the
//! summary and the time series.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;
use tierkit_core::telemetry::QosClass;
use tierkit_core::{backend, Action, Policy, TelemetryNeeds};

use crate::error::{Result, SimError};
use crate::machine::Machine;
use crate::memory::{self, MemoryPerPage};
use crate::spec::Experiment;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TierSummary {
    pub name: String,
    pub capacity_pages: u64,
    pub used_pages: u64,
    /// Miss-weighted mean loaded latency over the run, ns.
    pub mean_loaded_latency_ns: f64,
    pub max_loaded_latency_ns: f64,
    /// LLC misses of the workload served by this tier.
    pub accesses: f64,
    pub mean_bandwidth_gbps: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ProcSummary {
    pub name: String,
    pub class: &'static str,
    pub runtime_s: f64,
    pub finished: bool,
    pub ops: f64,
    pub throughput_ops_per_s: f64,
    pub slowdown_vs_fast_only: f64,
    pub fast_tier_hit_ratio: f64,
    pub promotions: u64,
    pub demotions: u64,
    pub demote_promoted: u64,
    /// Times migration was stopped and restarted for the process (migration toggling §4.2-4.3).
    pub migration_stops: u64,
    pub migration_restarts: u64,
    /// LC processes: percentiles of operation latency, ns (see [`LatHist`]); null for BE.
    pub latency_p50_ns: Option<f64>,
    pub latency_p99_ns: Option<f64>,
    /// Trace processes: the replay's MLP estimate (the miss-weighted harmonic mean of its
    /// windows' MLP, given or estimated; docs/traces.md); null for other processes.
    pub mlp_estimate: Option<f64>,
}

/// Fairness of the fast-tier allocation over the run (Vulcan §5.3).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Fairness {
    /// Jain's index over the cumulative fast-tier allocations A_i = sum_t x_i(t).
    pub jain: f64,
    /// Vulcan eq. 4, the FTHR-weighted cumulative Jain index over X_i = sum_t x_i(t) FTHR_i(t),
    /// x_i(t) the process's fast-tier pages and FTHR_i(t) its fast-tier hit ratio in epoch t,
    /// over the epochs in which every process runs (the tenants share the fast tier only then;
    /// over each one's whole lifetime when they never all run together).
    pub cfi: f64,
}

/// Jain's fairness index (sum x)^2 / (n sum x^2); 1 when there is nothing to share.
pub fn jain(x: &[f64]) -> f64 {
    let s: f64 = x.iter().sum();
    let q: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || q <= 0.0 {
        1.0
    } else {
        s * s / (x.len() as f64 * q)
    }
}

/// Operation-latency histogram of an LC process: each epoch every thread contributes its mean
/// time per operation (epoch time / operations, stalls included) weighted by its operations, in
/// log bins 1% wide, so percentiles are exact to 1%.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatHist {
    bins: BTreeMap<i32, f64>,
}

impl LatHist {
    const STEP: f64 = 0.00995033; // ln(1.01)
    pub fn add(&mut self, lat_ns: f64, weight: f64) {
        if lat_ns > 0.0 && weight > 0.0 && lat_ns.is_finite() {
            let b = (lat_ns.ln() / Self::STEP).floor() as i32;
            *self.bins.entry(b).or_insert(0.0) += weight;
        }
    }
    /// The q-quantile (0..1) by weight: the geometric centre of the bin it falls in.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total: f64 = self.bins.values().sum();
        if total <= 0.0 {
            return None;
        }
        let mut acc = 0.0;
        for (&b, &w) in &self.bins {
            acc += w;
            if acc >= q * total {
                return Some(((b as f64 + 0.5) * Self::STEP).exp());
            }
        }
        self.bins
            .keys()
            .last()
            .map(|&b| ((b as f64 + 0.5) * Self::STEP).exp())
    }
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub tierkit_version: &'static str,
    pub policy: String,
    pub workload: String,
    pub experiment: String,
    pub platform: String,
    pub seed: u64,
    pub page_bytes: u64,
    pub epoch_ms: f64,
    pub sim_seconds: f64,
    /// The whole run: the trace replay passes done when the experiment was loaded
    /// (`replay_seconds`), the fast-tier-only reference run and the run itself.
    pub wall_seconds: f64,
    pub replay_seconds: f64,
    pub throughput_ops_per_s: f64,
    pub fast_only_throughput_ops_per_s: f64,
    pub slowdown_vs_fast_only: f64,
    pub promotions: u64,
    pub demotions: u64,
    pub remaps: u64,
    pub shootdowns: u64,
    pub hint_faults: u64,
    pub samples: u64,
    /// Accessed-bit tests (kswapd's page_referenced, a policy's scans), and how many of them
    /// found the bit cleared at the same instant or later: always 0 when aging is right.
    pub accessed_bit_tests: u64,
    pub accessed_bit_tests_at_dt0: u64,
    /// TLB-shootdown IPIs to other threads and CPU seconds spent migrating (copy + shootdown).
    pub shootdown_ipis: u64,
    pub migration_cpu_s: f64,
    pub fairness: Fairness,
    pub tiers: Vec<TierSummary>,
    pub processes: Vec<ProcSummary>,
    pub policy_stats: BTreeMap<String, f64>,
    /// What the user should know about the run (a trace without stamps, ...).
    pub warnings: Vec<String>,
    /// The run's memory per simulated page, estimated before it from the tables the machine
    /// and the policy allocate (crate::memory), and the whole estimate in bytes.
    pub memory_bytes_per_page: MemoryPerPage,
    pub memory_estimate_bytes: u64,
    /// The same tables measured at the end of the run: their capacities (what they ever grew
    /// to, as the tables rarely shrink), per simulated page. The estimate bounds it from above;
    /// the process's resident memory adds the allocator's slack and the program itself.
    pub memory_allocated_bytes_per_page: MemoryPerPage,
}

/// Columnar time series, one row per report interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    pub columns: Vec<(String, Vec<f64>)>,
}

impl Series {
    fn push(&mut self, name: &str, v: f64) {
        match self.columns.iter_mut().find(|c| c.0 == name) {
            Some(c) => c.1.push(v),
            None => self.columns.push((name.to_string(), vec![v])),
        }
    }
    /// Add one row's values of a sparse group of columns (the policy's channel): a new name
    /// gets NaN for the rows before it, and a known name absent from `values` gets NaN now.
    fn push_sparse(&mut self, prefix: &str, values: &[(String, f64)], row: usize) {
        for (name, v) in values {
            let name = format!("{prefix}{name}");
            match self.columns.iter_mut().find(|c| c.0 == name) {
                Some(c) if c.1.len() <= row => c.1.push(*v),
                Some(_) => {} // the same name twice in one row: the first value stands
                None => {
                    let mut col = vec![f64::NAN; row];
                    col.push(*v);
                    self.columns.push((name, col));
                }
            }
        }
        for c in &mut self.columns {
            if c.0.starts_with(prefix) && c.1.len() <= row {
                c.1.push(f64::NAN);
            }
        }
    }
    pub fn get(&self, name: &str) -> Option<&[f64]> {
        self.columns
            .iter()
            .find(|c| c.0 == name)
            .map(|c| c.1.as_slice())
    }
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.1.len())
    }
}

/// Wall-clock split of a run (for benchmarks; not part of the deterministic output).
#[derive(Clone, Debug, Default)]
pub struct Timing {
    /// Building the machine (page table, first allocations).
    pub setup_s: f64,
    /// Machine epochs in total, and of those the fixed-point solve and the sampling (these two
    /// estimated from every 8th epoch).
    pub machine_s: f64,
    pub solve_s: f64,
    pub sample_s: f64,
    pub policy_s: f64,
    pub reference_s: f64,
    /// The reference run came from the disk cache (`RunOptions::reference_cache`).
    pub reference_cached: bool,
}

pub struct RunOutput {
    pub summary: Summary,
    pub series: Series,
    pub timing: Timing,
}

#[derive(Default)]
struct Acc {
    ops: Vec<f64>,
    lat_w: Vec<f64>,
    misses: Vec<f64>,
    bytes: Vec<f64>,
    promotions: u64,
    demotions: u64,
    /// NUMA hint faults taken (the kernel's `numa_hint_faults` in /proc/vmstat).
    hint_faults: u64,
    epochs: u64,
    /// A1, A3, s_LLC and cycles of the application threads (the AOL predictor's inputs).
    a1: f64,
    a3: f64,
    stalls: f64,
    cycles: f64,
    /// Per process: misses, and misses / MLP of the threads that made them (the interval's
    /// effective MLP is their ratio).
    mlp_misses: Vec<f64>,
    mlp_inv: Vec<f64>,
}

struct Totals {
    lat_w: Vec<f64>,
    lat_max: Vec<f64>,
    misses: Vec<f64>,
    bytes: Vec<f64>,
    remaps: u64,
    shootdowns: u64,
    faults: u64,
    samples: u64,
    ipis: u64,
    migration_cpu_ns: f64,
    /// Per process: sum_t x_i(t), sum_t x_i(t) FTHR_i(t), and misses per tier at the last epoch.
    alloc: Vec<f64>,
    alloc_fthr: Vec<f64>,
    /// sum_t x_i(t) FTHR_i(t) over the epochs in which every process runs, and their count.
    corun_alloc_fthr: Vec<f64>,
    corun_epochs: u64,
    last_misses: Vec<Vec<f64>>,
    lat: Vec<LatHist>,
}

/// Results of one pass of the loop.
#[derive(Clone, Debug)]
struct Pass {
    sim_s: f64,
    ops: f64,
    proc_ops: Vec<f64>,
    proc_runtime: Vec<f64>,
    proc_finished: Vec<bool>,
}

fn run_pass(
    m: &mut Machine,
    policy: Option<&mut dyn Policy>,
    series: Option<&mut Series>,
    totals: Option<&mut Totals>,
    progress: &mut dyn FnMut(f64, f64) -> bool,
    timing: &mut Timing,
) -> Result<Pass> {
    let dur_ns = m.exp.duration_s * 1e9;
    let nt = m.ntiers;
    let np = m.procs.len();
    let report_every = ((m.exp.report_interval_ms / m.exp.epoch_ms).round() as u64).max(1);
    let mut actions: Vec<Action> = Vec::new();
    let mut channel: Vec<(String, f64)> = Vec::new();
    let mut policy = policy;
    let mut series = series;
    let mut totals = totals;
    if let Some(p) = policy.as_deref_mut() {
        // the fault path, fault by fault, for a policy that takes it (Policy::fault_path)
        m.fault_path = p.fault_path();
        backend::init(p, m, &mut actions);
    }
    let mut acc = Acc {
        ops: vec![0.0; np],
        lat_w: vec![0.0; nt],
        misses: vec![0.0; nt],
        bytes: vec![0.0; nt],
        mlp_misses: vec![0.0; np],
        mlp_inv: vec![0.0; np],
        ..Default::default()
    };
    let mut last_ops = vec![0.0; np];
    // Per process at the last report: promotions, fast-tier misses, all misses.
    let mut rep_last = vec![(0u64, 0.0f64, 0.0f64); np];
    let mut epoch = 0u64;
    let progress_every = (dur_ns / m.epoch_ns / 200.0).ceil().max(1.0) as u64;
    while m.now_ns < dur_ns - 1e-6 {
        let t0 = Instant::now();
        let in_faults = m.wall_fault_policy_s;
        m.step_with(policy.as_deref_mut())?;
        let t1 = Instant::now();
        // the policy's fault path ran inside the machine's step: it is the policy's time
        let faults_s = m.wall_fault_policy_s - in_faults;
        timing.machine_s += (t1 - t0).as_secs_f64() - faults_s;
        timing.policy_s += faults_s;
        if let Some(p) = policy.as_deref_mut() {
            backend::decide(p, m, &mut actions);
            timing.policy_s += t1.elapsed().as_secs_f64();
        }
        m.clear_events();
        epoch += 1;
        // accumulate
        for (i, p) in m.procs.iter().enumerate() {
            acc.ops[i] += p.ops - last_ops[i];
            last_ops[i] = p.ops;
        }
        let st = &m.stats;
        for t in 0..nt {
            acc.lat_w[t] += st.latency_ns[t] * st.app_misses[t];
            acc.misses[t] += st.app_misses[t];
            acc.bytes[t] += st.bytes[t];
        }
        acc.promotions += st.promotions;
        acc.demotions += st.demotions;
        acc.hint_faults += st.hint_faults;
        acc.epochs += 1;
        for c in &m.tel.cores {
            acc.a1 += c.oro_cycles_with_demand_rd;
            acc.a3 += c.offcore_demand_rd;
            acc.stalls += c.stalls_l3_miss;
            acc.cycles += c.cycles;
        }
        if let Some(tot) = totals.as_deref_mut() {
            for t in 0..nt {
                tot.lat_w[t] += st.latency_ns[t] * st.app_misses[t];
                tot.lat_max[t] = tot.lat_max[t].max(st.latency_ns[t]);
                tot.misses[t] += st.app_misses[t];
                tot.bytes[t] += st.bytes[t];
            }
            tot.remaps += st.remaps;
            tot.shootdowns += st.shootdowns;
            tot.faults += st.hint_faults;
            tot.samples += st.samples;
            tot.ipis += st.shootdown_ipis;
            tot.migration_cpu_ns += st.migration_cpu_ns;
            let corun = m.procs.iter().all(|p| p.started && !p.exited);
            tot.corun_epochs += u64::from(corun);
            for (i, p) in m.procs.iter().enumerate() {
                let d: Vec<f64> = (0..nt)
                    .map(|t| p.misses[t] - tot.last_misses[i][t])
                    .collect();
                tot.last_misses[i].clone_from(&p.misses);
                let all: f64 = d.iter().sum();
                if all > 0.0 {
                    // The process's threads' MLP, weighted by their miss rates.
                    let (mut x, mut xm) = (0.0, 0.0);
                    for th in m.threads.iter().filter(|t| t.proc_ == Some(i) && t.active) {
                        x += th.x;
                        xm += th.x / th.m.max(1e-9);
                    }
                    if x > 0.0 && xm > 0.0 {
                        acc.mlp_misses[i] += all;
                        acc.mlp_inv[i] += all * xm / x;
                    }
                }
                if p.started && !p.exited {
                    let all: f64 = d.iter().sum();
                    let fthr = if all > 0.0 { d[0] / all } else { 0.0 };
                    let x = p.resident[0] as f64;
                    tot.alloc[i] += x;
                    tot.alloc_fthr[i] += x * fthr;
                    if corun {
                        tot.corun_alloc_fthr[i] += x * fthr;
                    }
                }
            }
            for c in &m.tel.cores {
                let pi = c.pid as usize;
                if c.ops > 0.0 && m.procs[pi].class == QosClass::LatencyCritical {
                    tot.lat[pi].add(c.cycles / m.cpu_ghz / c.ops, c.ops);
                }
            }
        }
        let done = m.all_exited();
        if epoch.is_multiple_of(report_every) || done || m.now_ns >= dur_ns - 1e-6 {
            if let Some(s) = series.as_deref_mut() {
                let span_s = acc.epochs as f64 * m.epoch_ns * 1e-9;
                s.push("t_s", m.now_ns * 1e-9);
                s.push("throughput_ops_per_s", acc.ops.iter().sum::<f64>() / span_s);
                s.push("promotions", acc.promotions as f64);
                s.push("demotions", acc.demotions as f64);
                s.push("hint_faults", acc.hint_faults as f64);
                // Soar/Alto §3.2 per interval (Fig. 2f): AOL = A1/A3, P = s_LLC/c, S = P K(AOL)
                let aol = if acc.a3 > 0.0 { acc.a1 / acc.a3 } else { 0.0 };
                s.push("aol_cycles", aol);
                s.push(
                    "predicted_slowdown",
                    match &m.exp.platform.calibration {
                        Some(c) if acc.a3 > 0.0 => c.predict_slowdown(acc.stalls, acc.cycles, aol),
                        _ => f64::NAN,
                    },
                );
                for t in 0..nt {
                    let name = &m.exp.platform.tiers[t].name;
                    let lat = if acc.misses[t] > 0.0 {
                        acc.lat_w[t] / acc.misses[t]
                    } else {
                        st.latency_ns[t]
                    };
                    s.push(&format!("latency_ns.{name}"), lat);
                    s.push(
                        &format!("bandwidth_gbps.{name}"),
                        acc.bytes[t] / (span_s * 1e9),
                    );
                    s.push(&format!("used_pages.{name}"), m.used[t] as f64);
                }
                for (i, p) in m.procs.iter().enumerate() {
                    s.push(
                        &format!("throughput_ops_per_s.{}", p.name),
                        acc.ops[i] / span_s,
                    );
                    // Per tenant (Vulcan Fig. 9, toggling Fig. 7): fast-tier pages, RSS, the
                    // interval's fast-tier hit ratio and promotions, whether migration is on.
                    let all: f64 = p.misses.iter().sum();
                    let (lp, lf, la) = rep_last[i];
                    let hit = if all - la > 0.0 {
                        (p.misses[0] - lf) / (all - la)
                    } else {
                        f64::NAN
                    };
                    rep_last[i] = (p.promotions, p.misses[0], all);
                    s.push(&format!("fast_pages.{}", p.name), p.resident[0] as f64);
                    // Per object, for processes of several (a VMA each for Linux's scanner).
                    if p.objects.len() > 1 {
                        for o in &p.objects {
                            s.push(
                                &format!("object_fast_pages.{}.{}", p.name, o.name),
                                o.resident[0] as f64,
                            );
                        }
                    }
                    s.push(
                        &format!("rss_pages.{}", p.name),
                        p.resident.iter().sum::<u64>() as f64,
                    );
                    s.push(&format!("fast_hit_ratio.{}", p.name), hit);
                    s.push(
                        &format!("promotions.{}", p.name),
                        (p.promotions - lp) as f64,
                    );
                    s.push(
                        &format!("migration_enabled.{}", p.name),
                        if p.migration_enabled { 1.0 } else { 0.0 },
                    );
                    // Linux's scanner: the process's numa_scan_period (NaN without one, or
                    // before its first window).
                    s.push(
                        &format!("numa_scan_period_ms.{}", p.name),
                        if p.numa.period_ms > 0 {
                            p.numa.period_ms as f64
                        } else {
                            f64::NAN
                        },
                    );
                    // Its completed passes (mm->numa_scan_seq), NaN without Linux's scanner.
                    s.push(
                        &format!("numa_scan_seq.{}", p.name),
                        if p.numa.windows > 0 {
                            p.numa.seq as f64
                        } else {
                            f64::NAN
                        },
                    );
                    // The interval's MLP (miss-weighted harmonic mean over its epochs).
                    s.push(
                        &format!("mlp.{}", p.name),
                        if acc.mlp_inv[i] > 0.0 {
                            acc.mlp_misses[i] / acc.mlp_inv[i]
                        } else {
                            f64::NAN
                        },
                    );
                }
                // The policy's own channel (Policy::series).
                if let Some(p) = policy.as_deref_mut() {
                    channel.clear();
                    p.series(&mut channel);
                    let row = s.rows().saturating_sub(1);
                    s.push_sparse("policy.", &channel, row);
                }
            }
            acc = Acc {
                ops: vec![0.0; np],
                lat_w: vec![0.0; nt],
                misses: vec![0.0; nt],
                bytes: vec![0.0; nt],
                mlp_misses: vec![0.0; np],
                mlp_inv: vec![0.0; np],
                ..Default::default()
            };
        }
        if epoch.is_multiple_of(progress_every) && !progress(m.now_ns * 1e-9, m.exp.duration_s) {
            return Err(SimError::Interrupted);
        }
        if done {
            break;
        }
    }
    let sim_s = m.now_ns * 1e-9;
    let proc_ops: Vec<f64> = m.procs.iter().map(|p| p.ops).collect();
    let proc_runtime = m
        .procs
        .iter()
        .map(|p| {
            let end = p.finish_ns.unwrap_or(m.now_ns);
            ((end - p.start_ns) * 1e-9).max(0.0)
        })
        .collect();
    let proc_finished = m.procs.iter().map(|p| p.finish_ns.is_some()).collect();
    Ok(Pass {
        sim_s,
        ops: proc_ops.iter().sum(),
        proc_ops,
        proc_runtime,
        proc_finished,
    })
}

/// A 128-bit fingerprint of everything an experiment describes: its `Debug` output streamed
/// through two independently keyed hashers, so no string is built (a trace experiment carries
/// every replay window's pages).
fn fingerprint(exp: &Experiment) -> (u64, u64) {
    use std::fmt::Write;
    use std::hash::{DefaultHasher, Hasher};
    struct Sink(DefaultHasher, DefaultHasher);
    impl Write for Sink {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.write(s.as_bytes());
            self.1.write(s.as_bytes());
            Ok(())
        }
    }
    let mut second = DefaultHasher::new();
    second.write_u64(0x7469_6572_6b69_7431);
    let mut sink = Sink(DefaultHasher::new(), second);
    write!(sink, "{exp:?}").expect("hashing never fails");
    (sink.0.finish(), sink.1.finish())
}

/// The fast-only reference run of an experiment: from this process's memory, else from the disk
/// cache `dir` (when given), else run (and kept in both). Returns whether it came from disk.
fn reference(
    exp: &Experiment,
    dir: Option<&std::path::Path>,
    progress: &mut dyn FnMut(f64, f64) -> bool,
) -> Result<(Pass, bool)> {
    use rustc_hash::FxHashMap as HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<(u64, u64), Pass>>> = OnceLock::new();
    let key = fingerprint(exp);
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::default()));
    if let Some(p) = cache
        .lock()
        .map_err(|_| SimError::Io("reference cache poisoned".into()))?
        .get(&key)
    {
        return Ok((p.clone(), false));
    }
    let file = dir.map(|d| {
        d.join("reference")
            .join(format!("{MODEL_HASH}-{:016x}{:016x}.json", key.0, key.1))
    });
    let from_disk = file.as_deref().and_then(Pass::load);
    let cached = from_disk.is_some();
    let p = match from_disk {
        Some(p) => p,
        None => {
            // No policy: no per-page table a policy would need.
            let mut m = Machine::with_needs(exp, true, &TelemetryNeeds::default())?;
            let p = run_pass(&mut m, None, None, None, progress, &mut Timing::default())?;
            if let Some(f) = &file {
                // A cache that cannot be written only costs the next process a rerun.
                let _ = p.store(f);
            }
            p
        }
    };
    let mut c = cache
        .lock()
        .map_err(|_| SimError::Io("reference cache poisoned".into()))?;
    if c.len() >= 64 {
        c.clear();
    }
    c.insert(key, p.clone());
    Ok((p, cached))
}

impl Pass {
    /// The pass as JSON, every float as its bit pattern (the cache must give back exactly the
    /// run's numbers).
    fn to_json(&self) -> serde_json::Value {
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<u64>>();
        serde_json::json!({
            "sim_s": self.sim_s.to_bits(),
            "ops": self.ops.to_bits(),
            "proc_ops": bits(&self.proc_ops),
            "proc_runtime": bits(&self.proc_runtime),
            "proc_finished": self.proc_finished,
        })
    }

    fn from_json(v: &serde_json::Value) -> Option<Pass> {
        let f = |k: &str| v.get(k)?.as_u64().map(f64::from_bits);
        let fs = |k: &str| -> Option<Vec<f64>> {
            v.get(k)?
                .as_array()?
                .iter()
                .map(|x| x.as_u64().map(f64::from_bits))
                .collect()
        };
        let finished = v
            .get("proc_finished")?
            .as_array()?
            .iter()
            .map(|x| x.as_bool())
            .collect::<Option<Vec<bool>>>()?;
        let p = Pass {
            sim_s: f("sim_s")?,
            ops: f("ops")?,
            proc_ops: fs("proc_ops")?,
            proc_runtime: fs("proc_runtime")?,
            proc_finished: finished,
        };
        let n = p.proc_ops.len();
        (p.proc_runtime.len() == n && p.proc_finished.len() == n).then_some(p)
    }

    /// A cached pass, or None when the file is missing or not one (it is then run again).
    fn load(path: &std::path::Path) -> Option<Pass> {
        let text = std::fs::read_to_string(path).ok()?;
        Pass::from_json(&serde_json::from_str(&text).ok()?)
    }

    /// Write the pass atomically (a temporary file renamed over the name). The temporary file
    /// is the writer's own, by process and by a counter, so that runs in several threads of one
    /// process (the Python bindings release the GIL) never write one file together.
    fn store(&self, path: &std::path::Path) -> std::io::Result<()> {
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(
            ".{}.{}.{}.tmp",
            path.file_name()
                .map_or("ref".into(), |n| n.to_string_lossy()),
            std::process::id(),
            WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::write(&tmp, self.to_json().to_string())?;
        std::fs::rename(&tmp, path).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// Run a profiler policy on the experiment with every page in the fast tier and return its
/// profile text (`tierkit soar profile`).
pub fn profile(exp: &Experiment, profiler: &mut dyn Policy) -> Result<String> {
    let mut pm = Machine::with_needs(exp, true, &profiler.needs())?;
    run_pass(
        &mut pm,
        Some(profiler),
        None,
        None,
        &mut |_, _| true,
        &mut Timing::default(),
    )?;
    profiler
        .profile()
        .ok_or_else(|| SimError::Io(format!("policy `{}` produced no profile", profiler.name())))
}

/// The objects a policy spec names (`place:objects`, `static:hot_object`) must be objects of
/// the experiment: the simulator knows them all before the run, so a misspelt name is an error
/// instead of a placement that silently binds nothing.
pub fn check_named_objects(exp: &Experiment, policy_spec: &str) -> Result<()> {
    let mut known: Vec<&str> = exp
        .processes
        .iter()
        .flat_map(|p| p.objects.iter().map(|o| o.name.as_str()))
        .collect();
    known.sort_unstable();
    known.dedup();
    for (policy, param, names) in tierkit_policies::named_objects(policy_spec)? {
        if let Some(missing) = names.iter().find(|n| !known.contains(&n.as_str())) {
            const SHOWN: usize = 20;
            let list = if known.len() > SHOWN {
                format!(
                    "{}, ... ({} in all)",
                    known[..SHOWN].join(", "),
                    known.len()
                )
            } else {
                known.join(", ")
            };
            return Err(SimError::Policy(tierkit_core::Error::UnknownObject {
                policy: policy.into(),
                param: param.into(),
                object: missing.clone(),
                hint: tierkit_core::suggest::hint(missing, known.iter().copied()),
                known: list,
            }));
        }
    }
    Ok(())
}

/// How to run: the memory the run may take.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Refuse the run when its estimated memory is above this many bytes (it is refused above
    /// the machine's available memory in any case).
    pub max_memory: Option<u64>,
    /// A directory where fast-only reference runs are kept across processes, by the
    /// experiment's fingerprint and the model's ([`MODEL_HASH`]); None: no disk cache.
    pub reference_cache: Option<std::path::PathBuf>,
}

/// A hash of the simulator's and the core's sources (build.rs): a cached reference run is
/// reused only by a build of the same model.
pub const MODEL_HASH: &str = env!("TIERKIT_MODEL_HASH");

/// Run an experiment under a policy (spec string), with the fast-only reference run.
/// `progress(done_s, total_s)` is called now and then; returning false interrupts the run.
pub fn run(
    exp: &Experiment,
    policy_spec: &str,
    progress: &mut dyn FnMut(f64, f64) -> bool,
) -> Result<RunOutput> {
    run_with(exp, policy_spec, &RunOptions::default(), progress)
}

/// [`run`] with options. The run's memory is estimated first ([`memory::check`]): one that
/// cannot fit is refused with [`SimError::TooLarge`] before anything is allocated.
pub fn run_with(
    exp: &Experiment,
    policy_spec: &str,
    opts: &RunOptions,
    progress: &mut dyn FnMut(f64, f64) -> bool,
) -> Result<RunOutput> {
    let wall = Instant::now();
    tierkit_core::memory::settle_allocator();
    let mut policy = tierkit_policies::build(policy_spec)?;
    check_named_objects(exp, policy_spec)?;
    let estimate = memory::check(exp, policy.as_ref(), opts.max_memory)?;
    let mut timing = Timing::default();

    // Reference: the same workload with every page in the fast tier, no policy. It depends on
    // the experiment only, so it is computed once per process for each experiment.
    let t_ref = Instant::now();
    // Progress: the reference is the first half of the bar, the policy run the second.
    let (r, reference_cached) =
        reference(exp, opts.reference_cache.as_deref(), &mut |done, total| {
            progress(0.5 * done, total)
        })?;
    timing.reference_s = t_ref.elapsed().as_secs_f64();
    timing.reference_cached = reference_cached;

    // A policy that needs a profile (Soar) gets one from a run of its profiler with every page
    // in the fast tier.
    if let Some(mut profiler) = policy.profiler() {
        let text = profile(exp, profiler.as_mut())?;
        policy.accept_profile(&text)?;
    }
    let t_setup = Instant::now();
    let mut m = Machine::with_needs(exp, false, &policy.needs())?;
    policy.reserve(&memory::page_space(exp))?;
    timing.setup_s = t_setup.elapsed().as_secs_f64();
    let nt = m.ntiers;
    let mut series = Series::default();
    let mut tot = Totals {
        lat_w: vec![0.0; nt],
        lat_max: vec![0.0; nt],
        misses: vec![0.0; nt],
        bytes: vec![0.0; nt],
        remaps: 0,
        shootdowns: 0,
        faults: 0,
        samples: 0,
        ipis: 0,
        migration_cpu_ns: 0.0,
        alloc: vec![0.0; exp.processes.len()],
        alloc_fthr: vec![0.0; exp.processes.len()],
        corun_alloc_fthr: vec![0.0; exp.processes.len()],
        corun_epochs: 0,
        last_misses: vec![vec![0.0; nt]; exp.processes.len()],
        lat: vec![LatHist::default(); exp.processes.len()],
    };
    let half = 0.5 * exp.duration_s;
    let pass = run_pass(
        &mut m,
        Some(policy.as_mut()),
        Some(&mut series),
        Some(&mut tot),
        &mut |done, total| progress(half + 0.5 * done, total),
        &mut timing,
    )?;
    progress(pass.sim_s, exp.duration_s);
    let allocated = MemoryPerPage::of(
        m.allocated_bytes().total(),
        policy.allocated_bytes(),
        estimate.pages,
    );
    timing.solve_s = m.wall_solve_s;
    timing.sample_s = m.wall_sample_s;

    let throughput = ratio(pass.ops, pass.sim_s);
    let ref_throughput = ratio(r.ops, r.sim_s);
    let tiers = (0..nt)
        .map(|t| TierSummary {
            name: exp.platform.tiers[t].name.clone(),
            capacity_pages: m.cap[t],
            used_pages: m.used[t],
            mean_loaded_latency_ns: if tot.misses[t] > 0.0 {
                tot.lat_w[t] / tot.misses[t]
            } else {
                m.lat[t]
            },
            max_loaded_latency_ns: tot.lat_max[t],
            accesses: tot.misses[t],
            mean_bandwidth_gbps: tot.bytes[t] / (pass.sim_s * 1e9),
        })
        .collect();
    let processes = m
        .procs
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let tput = ratio(pass.proc_ops[i], pass.proc_runtime[i]);
            let ref_tput = ratio(r.proc_ops[i], r.proc_runtime[i]);
            let slowdown = if pass.proc_finished[i] && r.proc_finished[i] {
                ratio(pass.proc_runtime[i], r.proc_runtime[i])
            } else {
                ratio(ref_tput, tput)
            };
            let total: f64 = p.misses.iter().sum();
            ProcSummary {
                name: p.name.clone(),
                class: match p.class {
                    QosClass::LatencyCritical => "LC",
                    QosClass::BestEffort => "BE",
                },
                runtime_s: pass.proc_runtime[i],
                finished: pass.proc_finished[i],
                ops: pass.proc_ops[i],
                throughput_ops_per_s: tput,
                slowdown_vs_fast_only: slowdown,
                fast_tier_hit_ratio: ratio(p.misses[0], total),
                promotions: p.promotions,
                demotions: p.demotions,
                demote_promoted: p.demote_promoted,
                migration_stops: p.migration_stops,
                migration_restarts: p.migration_restarts,
                latency_p50_ns: tot.lat[i].quantile(0.5),
                latency_p99_ns: tot.lat[i].quantile(0.99),
                mlp_estimate: exp
                    .replays
                    .iter()
                    .find(|r| r.process == i)
                    .map(|r| r.replay.mlp_stats().estimate),
            }
        })
        .collect();
    let summary = Summary {
        tierkit_version: env!("CARGO_PKG_VERSION"),
        policy: policy.name(),
        workload: exp.workload.clone(),
        experiment: exp.source.clone(),
        platform: exp.platform.name.clone(),
        seed: exp.seed,
        page_bytes: exp.page_bytes,
        epoch_ms: exp.epoch_ms,
        sim_seconds: pass.sim_s,
        wall_seconds: wall.elapsed().as_secs_f64() + exp.replay_seconds,
        replay_seconds: exp.replay_seconds,
        throughput_ops_per_s: throughput,
        fast_only_throughput_ops_per_s: ref_throughput,
        slowdown_vs_fast_only: ratio(ref_throughput, throughput),
        promotions: m.procs.iter().map(|p| p.promotions).sum(),
        demotions: m.procs.iter().map(|p| p.demotions).sum(),
        remaps: tot.remaps,
        shootdowns: tot.shootdowns,
        hint_faults: tot.faults,
        accessed_bit_tests: m.access_tests.tests,
        accessed_bit_tests_at_dt0: m.access_tests.at_dt0,
        samples: tot.samples,
        shootdown_ipis: tot.ipis,
        migration_cpu_s: tot.migration_cpu_ns * 1e-9,
        fairness: {
            // Only processes that ran at some point share the fast tier.
            let ran: Vec<usize> = (0..m.procs.len()).filter(|&i| tot.alloc[i] > 0.0).collect();
            Fairness {
                jain: jain(&ran.iter().map(|&i| tot.alloc[i]).collect::<Vec<_>>()),
                cfi: if tot.corun_epochs > 0 {
                    jain(&tot.corun_alloc_fthr)
                } else {
                    jain(&ran.iter().map(|&i| tot.alloc_fthr[i]).collect::<Vec<_>>())
                },
            }
        },
        tiers,
        processes,
        policy_stats: policy.stats().into_iter().collect(),
        warnings: exp
            .warnings
            .iter()
            .cloned()
            .chain(exp.replays.iter().filter_map(|r| {
                let p = &m.procs[r.process];
                let total: f64 = p.misses.iter().sum();
                let share = p.replay_overrun / total;
                (total > 0.0 && share > 0.05).then(|| {
                    format!(
                        "trace process {}: {:.0}% of its misses ran in a window past that window's \
                         own misses (its windows are shorter than an epoch: the replay runs each \
                         epoch in one window), so its page mix and hit ratio depend on the platform's \
                         speed; raise window_epochs (default 20; it merges short windows with \
                         their timing kept, 0 keeps the trace's windows), or lower epoch_ms or raise \
                         time_scale until this warning goes (docs/traces.md)",
                        p.name,
                        100.0 * share
                    )
                })
            }))
            .chain((m.queue_refused > 0).then(|| {
                format!(
                    "{} asynchronous migrations were refused because the machine's migration queue \
                     already held {} requests (the policy asked for more at once than the queue \
                     holds); the policy saw them as refused",
                    m.queue_refused,
                    crate::machine::MAX_QUEUE
                )
            }))
            .chain(policy.warnings())
            .collect(),
        memory_bytes_per_page: estimate.per_page(),
        memory_estimate_bytes: estimate.total(),
        memory_allocated_bytes_per_page: allocated,
    };
    Ok(RunOutput {
        summary,
        series,
        timing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::MachineMemory;

    #[test]
    fn a_cached_reference_gives_back_exactly_its_numbers() {
        let p = Pass {
            sim_s: 2.5,
            ops: 1.0e9 / 3.0,
            proc_ops: vec![0.1 + 0.2, -0.0, f64::NAN],
            proc_runtime: vec![1.0, f64::MIN_POSITIVE, 7.0],
            proc_finished: vec![true, false, true],
        };
        let dir = std::env::temp_dir().join(format!("tierkit-refcache-{}", std::process::id()));
        let f = dir.join("reference").join("x.json");
        p.store(&f).unwrap();
        let q = Pass::load(&f).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            (q.sim_s.to_bits(), q.ops.to_bits()),
            (p.sim_s.to_bits(), p.ops.to_bits())
        );
        assert_eq!(bits(&q.proc_ops), bits(&p.proc_ops));
        assert_eq!(bits(&q.proc_runtime), bits(&p.proc_runtime));
        assert_eq!(q.proc_finished, p.proc_finished);
        // Not a pass (garbage, a truncated write, lists of different lengths): run again.
        std::fs::write(&f, "{\"sim_s\": 1").unwrap();
        assert!(Pass::load(&f).is_none());
        let mut v = p.to_json();
        v["proc_finished"] = serde_json::json!([true]);
        std::fs::write(&f, v.to_string()).unwrap();
        assert!(Pass::load(&f).is_none());
        assert!(Pass::load(&dir.join("missing.json")).is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A small experiment that exercises every table: a Zipf region, a scattered region, an
    /// object allocated and freed mid-run, a process that finishes.
    const MEM_EXP: &str = r#"
workload = "custom"
name = "memory"
platform = "spr-cxl"
duration_s = 0.3
fast_ratio = "1:2"
seed = 3
[[process]]
name = "a"
[[process.object]]
name = "big"
size_gb = 0.25
[[process.object]]
name = "tmp"
size_gb = 0.0625
alloc_s = 0.05
free_s = 0.2
[[process.thread]]
count = 2
[[process.thread.phase]]
mlp = 8
compute_ns = 4
[[process.thread.phase.access]]
object = "big"
pattern = "zipf"
len_frac = 0.5
[[process.thread.phase.access]]
object = "big"
scatter_seed = 5
len_frac = 0.1
weight = 0.5
[[process.thread.phase.access]]
object = "tmp"
weight = 0.2
[[process]]
name = "b"
[[process.object]]
name = "list"
size_gb = 0.0625
[[process.thread]]
count = 1
work_ops = 2e5
[[process.thread.phase]]
mlp = 1
[[process.thread.phase.access]]
object = "list"
pattern = "pointer-chase"
"#;

    /// The policy run of `run_with`, keeping the machine and the policy: (estimate, the
    /// machine's tables, the policy's tables) after the run.
    fn run_and_measure(exp: &Experiment, spec: &str) -> (memory::Estimate, MachineMemory, u64) {
        let mut policy = tierkit_policies::build(spec).unwrap();
        let est = memory::check_against(exp, policy.as_ref(), None).unwrap();
        if let Some(mut profiler) = policy.profiler() {
            let text = profile(exp, profiler.as_mut()).unwrap();
            policy.accept_profile(&text).unwrap();
        }
        let mut m = Machine::with_needs(exp, false, &policy.needs()).unwrap();
        policy.reserve(&memory::page_space(exp)).unwrap();
        run_pass(
            &mut m,
            Some(policy.as_mut()),
            None,
            None,
            &mut |_, _| true,
            &mut Timing::default(),
        )
        .unwrap();
        (est, m.allocated_bytes(), policy.allocated_bytes())
    }

    /// The estimate made before a run against the tables' capacities after it (4 simulated
    /// seconds, so that the hint-fault scanners mark pages). The page table, the page events
    /// and the policies' per-page tables are allocated up front as estimated: equal. The rest
    /// are bounds the run stays under: the distributions' histories (an entry per epoch at
    /// most), the hint-fault queues (every page marked), Vulcan's queues and the static
    /// placement's scratch. Where the tables are all per page, the estimate is at most 10%
    /// above what was allocated.
    #[test]
    fn memory_estimate_matches_the_allocated_tables() {
        let exp = crate::load_str("memory.toml", MEM_EXP, &["duration_s=4".into()], None).unwrap();
        for spec in [
            "notier",
            "hemem",
            "memtis",
            "tpp",
            "nbt",
            "nomad",
            "pact",
            "vulcan",
            "soar",
            "place:objects=big",
            "static:hot_object=big",
            "hemem+colloid",
            "tpp+toggle:refault=true",
            "tpp+colloid+alto",
        ] {
            let (est, m, p) = run_and_measure(&exp, spec);
            let what = format!(
                "{spec}: estimate {:?} + {}, allocated {m:?} + {p}",
                est.machine, est.policy
            );
            assert_eq!(m.page_table, est.machine.page_table, "{what}");
            assert_eq!(m.events, est.machine.events, "{what}");
            assert!(m.dists <= est.machine.dists, "{what}");
            assert!(m.fault_queues <= est.machine.fault_queues, "{what}");
            assert!(p <= est.policy, "{what}");
            let bounds = ["vulcan", "static"].iter().any(|b| spec.starts_with(b));
            if !bounds {
                assert_eq!(p, est.policy, "{what}");
            }
            if !bounds && est.machine.fault_queues == 0 {
                let got = m.total() + p;
                assert!(est.total() as f64 <= 1.1 * got as f64, "{what}");
            }
        }
    }

    /// A run above the limit is refused before anything is allocated, naming the footprint, the
    /// estimate and the limit; at the estimate it runs.
    #[test]
    fn a_run_above_the_memory_limit_is_refused() {
        let exp =
            crate::load_str("memory.toml", MEM_EXP, &["duration_s=0.05".into()], None).unwrap();
        let policy = tierkit_policies::build("hemem").unwrap();
        let est = memory::estimate(&exp, policy.as_ref()).total();
        let opts = RunOptions {
            max_memory: Some(est - 1),
            ..Default::default()
        };
        let e = run_with(&exp, "hemem", &opts, &mut |_, _| true)
            .err()
            .unwrap();
        let msg = e.to_string();
        assert!(
            matches!(e, SimError::TooLarge { estimate, .. } if estimate == est),
            "{msg}"
        );
        assert!(
            msg.contains("memory.toml")
                && msg.contains("a footprint of 384 MiB (98304 pages of 4 KiB)")
                && msg.contains(&tierkit_core::memory::fmt_bytes(est))
                && msg.contains("--max-memory limit of"),
            "{msg}"
        );
        assert!(!msg.contains('\n'), "one line: {msg}");
        let out = run_with(
            &exp,
            "hemem",
            &RunOptions {
                max_memory: Some(est),
                ..Default::default()
            },
            &mut |_, _| true,
        )
        .unwrap();
        assert_eq!(out.summary.memory_estimate_bytes, est);
        let pp = out.summary.memory_bytes_per_page;
        assert!((pp.total - est as f64 / 98304.0).abs() < 1e-9);
        assert!(
            (pp.policy - 13.0).abs() < 0.01,
            "HeMem: 1 + 4 + 8 B a page, {pp:?}"
        );
        // measured at the end: HeMem's tables as estimated (allocated up front), the machine's
        // within its bound and at least its page table
        let got = out.summary.memory_allocated_bytes_per_page;
        assert!((got.policy - pp.policy).abs() < 0.01, "{got:?} vs {pp:?}");
        assert!(
            got.machine >= 1.0 && got.machine <= pp.machine,
            "{got:?} vs {pp:?}"
        );
        assert!((got.total - got.machine - got.policy).abs() < 1e-9);
    }

    /// A 6000 GiB footprint (25 GB to simulate under pact) is refused at once, by a limit or by
    /// the available memory (given here, so that the test never builds the run on a machine
    /// that has the memory).
    #[test]
    fn a_six_terabyte_footprint_is_refused_without_allocating() {
        let exp = crate::load_str(
            "memory.toml",
            MEM_EXP,
            &["process.0.object.0.size_gb=6000".into()],
            None,
        )
        .unwrap();
        let t = Instant::now();
        let opts = RunOptions {
            max_memory: Some(16 << 30),
            ..Default::default()
        };
        let e = run_with(&exp, "pact", &opts, &mut |_, _| true)
            .err()
            .unwrap();
        assert!(matches!(e, SimError::TooLarge { .. }), "{e}");
        assert!(t.elapsed().as_secs_f64() < 1.0, "refused at once");
        let policy = tierkit_policies::build("pact").unwrap();
        let limit = crate::MemoryLimit::Available(22 << 30);
        let e = memory::check_against(&exp, policy.as_ref(), Some(limit)).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("a footprint of 5.86 TiB (1572896768 pages of 4 KiB)")
                && msg.contains("under `pact`")
                && msg.contains(
                    "the limit of 19.8 GiB (90% of the 22 GiB of available memory, MemAvailable"
                ),
            "{msg}"
        );
    }

    #[test]
    fn sparse_policy_columns_stay_aligned_with_the_rows() {
        let mut s = Series::default();
        for row in 0..3 {
            s.push("t_s", row as f64);
            let vals: Vec<(String, f64)> = match row {
                1 => vec![("a".into(), 1.0)],
                2 => vec![("b".into(), 2.0)],
                _ => vec![],
            };
            s.push_sparse("policy.", &vals, row);
        }
        let a = s.get("policy.a").unwrap();
        let b = s.get("policy.b").unwrap();
        assert_eq!(a.len(), 3);
        assert!(a[0].is_nan() && a[1] == 1.0 && a[2].is_nan());
        assert!(b[0].is_nan() && b[1].is_nan() && b[2] == 2.0);
    }
}
