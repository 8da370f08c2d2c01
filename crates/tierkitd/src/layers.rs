//! Layers over the kernel's own tiering: `nbt+alto` and `nbt+colloid` (kernel-tiering mode,
//! [`crate::kernel`]). The kernel promotes on its hint faults and demotes in reclaim; a layer
//! reads counters every interval and regulates the kernel through its knobs, each change
//! recorded in the state file and restored at exit, on SIGTERM and at the next start after a
//! crash ([`crate::kernel::Knobs::set`]).
//!
//! # `nbt+alto`: AOL regulates the kernel's promotion (Soar/Alto §5.2, §5.3)
//!
//! Every Alto interval (`interval_ms`, 1 s as in §5.3) tierkitd sums A1 and A3 of the targets'
//! core counters ([`crate::source::core_counters`]), AOL = A1 / A3, and takes Algorithm 2's
//! decision with the artifact's stepwise F for NBT: N of every 16 pages
//! ([`tierkit_policies::alto::allowed`] with `Scan16`; AOL <= AOL_low: 0, 40-50: 1, 50-60: 2,
//! 60-80: 4, 80-100: 8, >= AOL_high: 16). §5.3 regulates NBT by "limiting the number of pages set
//! to PAGE_NONE" by the scanner. Upstream Linux has no per-page filter, so N/16 maps to knobs:
//!
//! - `numa_balancing/scan_size_mb` = max(1, base x N / 16): the scanner's budget per window is
//!   the pages it sets to PAGE_NONE (task_numa_work counts a range against `scan_size_mb` when
//!   it changed PTEs in it), so this is the paper's own mechanism, and the one tierkit's
//!   simulator scales for `nbt+alto` (`NumaScan::budget_share` x N/16). Never 0: task_scan_min
//!   divides by it. Needs debugfs; without it only the rate limit regulates.
//! - `kernel.numa_balancing_promote_rate_limit_MBps` = max(1, base x N / 16): the kernel's promotion
//!   budget. Alone it is not enough: while the fast node has free space above its promotion
//!   watermark plus max(1 GiB, 1/16 of the node) (pgdat_free_space_enough), the kernel promotes
//!   every faulting slow page without the threshold or the rate limit (the simulator's `nbt`
//!   models the same rule) — the paper's Alto setting, a fast tier that holds the working set.
//!   Under pressure the kernel promotes min(candidates, limit); both scaled by N/16, the
//!   promotions are N/16 of NBT's in either case. (`hot_threshold_ms` is left alone: under a
//!   rate limit the kernel adjusts its effective threshold to the limit itself,
//!   numa_promotion_adjust_threshold.)
//! - N = 0 ("disable page promotions", Algorithm 2 line 3): `kernel.numa_balancing` = 0, the
//!   memory-tiering bit cleared, and the rate limit 0. Neither knob above stops promotion alone
//!   (free space bypasses the limit, scan size 0 would divide by zero); with the bit cleared the
//!   scanner marks nothing, so the kernel takes no hint faults and promotes nothing, and
//!   demotion in reclaim (`demotion_enabled`) goes on. N > 0 sets the bit (2) again.
//!
//! The bases are the spec's `nbt` parameters (`scan_size_mb`, `promote_rate_limit_mbps`) or the
//! kernel's values at start. Until the first interval with offcore reads the kernel runs at
//! N = 16 (plain NBT, as Alto before its first AOL reading).
//!
//! # `nbt+colloid`: stop promotion and demote when the fast tier is slower (Colloid §3, §4.3)
//!
//! Every interval the per-tier loaded latency L = O / R (Little's law on the CHA TOR occupancy
//! and inserts, or the PEBS-weight fallback; Colloid's EWMA on O and R, 1/16 per 10 ms sample,
//! applied over the interval with the same decay) gives the default
//! tier's L_D and the alternate tier's L_A, and p = R_D / (R_D + R_A). As Colloid's TPP version
//! (should_numa_migrate_memory refuses promotion while colloid_local_lat_gt_remote):
//!
//! - L_D > L_A (beyond δ L_D): the kernel's promotions stop (`kernel.numa_balancing` = 0, the
//!   tiering bit cleared, for the reason above: a fast tier slower than the slow one is loaded by
//!   bandwidth, not full, so the free-space rule would bypass a rate limit of 0), and tierkitd
//!   demotes sampled hot pages of the targets from the fast tier by `move_pages`: hottest first,
//!   each whose access probability fits in what is left of Algorithm 2's Δp, within the limit
//!   min(Δp (R_D + R_A) x 64 B x interval, M). Demotion moves access probability only if the
//!   pages are hot: `memory.reclaim` of a cgroup would demote the coldest pages of its LRU,
//!   which carry almost none, and serves cgroup targets only.
//! - otherwise the kernel promotes again (`kernel.numa_balancing` = 2).

use std::collections::BTreeMap;

use prometheus::{Gauge, GaugeVec, IntCounter, Opts, Registry};
use tierkit_core::params::{Params, PolicySpec};
use tierkit_core::{CoreCounters, PageId, Sample, TierCounters, TierId, FAST, SLOW};
use tierkit_policies::alto::{allowed, Regulate};
use tierkit_policies::colloid::Watermarks;

use crate::error::{Error, Result};

/// `kernel.numa_balancing`.
pub const NUMA_BALANCING: &str = "kernel.numa_balancing";
/// `numa_balancing/scan_size_mb` (debugfs, or the older sysctl).
pub const SCAN_SIZE: &str = "numa_balancing/scan_size_mb";
/// `kernel.numa_balancing_promote_rate_limit_MBps`.
pub const RATE_LIMIT: &str = "kernel.numa_balancing_promote_rate_limit_MBps";

/// The layer of a kernel-tiering spec, its parameters resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum LayerSpec {
    Alto {
        /// AOL_low and AOL_high in cycles (0: the defaults, 40 and 100).
        low: f64,
        high: f64,
        interval_ms: f64,
    },
    Colloid {
        delta: f64,
        epsilon: f64,
        ewma: f64,
        /// The sampling period `ewma` is the weight of (Colloid's 10 ms): over an interval of
        /// `interval-ms` the weight is 1 - (1 - ewma)^(interval / sample_ms).
        sample_ms: f64,
        /// M, the static migration limit per interval (bytes).
        max_bytes: f64,
    },
}

impl LayerSpec {
    pub fn name(&self) -> &'static str {
        match self {
            LayerSpec::Alto { .. } => "alto",
            LayerSpec::Colloid { .. } => "colloid",
        }
    }
}

fn unsupported(spec: &str, why: String) -> Error {
    Error::Unsupported {
        policy: spec.into(),
        why,
    }
}

/// The layer over `nbt` in a kernel-tiering spec: None for plain `nbt`; `+alto` and `+colloid`
/// (one of them) with their parameters; any other layer, or a parameter that has no meaning
/// over the kernel's tiering, is refused.
pub fn parse(spec: &str) -> Result<Option<LayerSpec>> {
    let parsed = PolicySpec::parse(spec)?;
    let layers = &parsed.layers[1..];
    let Some(l) = layers.first() else {
        return Ok(None);
    };
    let refuse = |why: String| Err(unsupported(spec, why));
    if layers.len() > 1 || !matches!(l.name.as_str(), "alto" | "colloid") {
        let names: Vec<&str> = layers.iter().map(|l| l.name.as_str()).collect();
        return refuse(format!(
            "tierkitd runs `nbt` as the kernel's own tiering, and layers over it other than one of +alto and +colloid are not supported (+{})",
            names.join(", +")
        ));
    }
    let given = |k: &str| l.args.iter().any(|(a, _)| a == k);
    if l.name == "alto" {
        let p = Params::resolve("alto", tierkit_policies::alto::INFO.params, &l.args)?;
        if !matches!(p.str("regulate"), "auto" | "scan16") {
            return refuse(format!(
                "alto: regulate={} filters single promotions, which the kernel's tiering does not let user space do; over nbt Alto scales the scanner and the promotion rate limit (regulate=scan16, the default)",
                p.str("regulate")
            ));
        }
        if p.bool("auto") {
            return refuse("alto: auto=true (thresholds tuned by the fast tier's TOR latency) is not supported over the kernel's tiering yet".into());
        }
        let (low, high) = (p.float("aol_low"), p.float("aol_high"));
        let (low, high) = (
            if low > 0.0 { low } else { 40.0 },
            if high > 0.0 { high } else { 100.0 },
        );
        if high <= low {
            return refuse(format!(
                "alto: aol_high ({high}) must be above aol_low ({low})"
            ));
        }
        return Ok(Some(LayerSpec::Alto {
            low,
            high,
            interval_ms: p.float("interval_ms"),
        }));
    }
    let p = Params::resolve("colloid", tierkit_policies::colloid::INFO.params, &l.args)?;
    for k in [
        "bins",
        "candidates",
        "quantum_ms",
        "gate",
        "hot_threshold_ms",
    ] {
        if given(k) {
            return refuse(format!(
                "colloid: {k} has no meaning over the kernel's tiering (tierkitd decides every interval, interval-ms, from the kernel's own promotions and the targets' samples)"
            ));
        }
    }
    let mb = p.float("max_migrate_mb");
    Ok(Some(LayerSpec::Colloid {
        delta: p.float("delta"),
        epsilon: p.float("epsilon"),
        ewma: p.float("ewma"),
        sample_ms: p.float("sample_ms"),
        // the artifact's TPP version: 100 MB per quantum
        max_bytes: if mb > 0.0 { mb } else { 100.0 } * 1e6,
    }))
}

/// The counters a layer needs, for the start-up check ([`crate::select::choose_at`]).
pub fn needs(l: &LayerSpec) -> tierkit_core::TelemetryNeeds {
    match l {
        LayerSpec::Alto { .. } => tierkit_core::TelemetryNeeds {
            core_counters: true,
            ..Default::default()
        },
        // per-tier latency, and access samples to find the fast tier's hot pages
        LayerSpec::Colloid { .. } => tierkit_core::TelemetryNeeds {
            tier_counters: true,
            sampling: Some((5003, tierkit_core::SampleFilter::AllMisses)),
            ..Default::default()
        },
    }
}

/// Alto over the kernel: Algorithm 2 every interval on the summed core counters, N of 16 as
/// knob values (module documentation).
#[derive(Clone, Debug)]
pub struct AltoCtl {
    pub low: f64,
    pub high: f64,
    interval_ns: u64,
    next_ns: Option<u64>,
    a1: f64,
    a3: f64,
    /// N: pages (and promotions) allowed per 16; 16 until the first AOL reading.
    pub n: u32,
    pub last_aol: Option<f64>,
    /// The bases N/16 scales: the scanner's window (MB; None without the knob) and the rate
    /// limit (MB/s).
    pub base_scan_mb: Option<u64>,
    pub base_rate_mbps: Option<u64>,
}

impl AltoCtl {
    pub fn new(
        low: f64,
        high: f64,
        interval_ms: f64,
        base_scan_mb: Option<u64>,
        base_rate_mbps: Option<u64>,
    ) -> AltoCtl {
        AltoCtl {
            low,
            high,
            interval_ns: (interval_ms * 1e6) as u64,
            next_ns: None,
            a1: 0.0,
            a3: 0.0,
            n: 16,
            last_aol: None,
            base_scan_mb,
            base_rate_mbps,
        }
    }

    /// Add one observation's counters (every target's); at the end of an Alto interval with
    /// offcore reads, returns (AOL, N). An interval without reads keeps N.
    pub fn observe(&mut self, now_ns: u64, cores: &[CoreCounters]) -> Option<(f64, u32)> {
        for c in cores {
            self.a1 += c.oro_cycles_with_demand_rd;
            self.a3 += c.offcore_demand_rd;
        }
        let next = *self.next_ns.get_or_insert(now_ns + self.interval_ns);
        if now_ns < next {
            return None;
        }
        self.next_ns = Some(now_ns + self.interval_ns);
        let (a1, a3) = (std::mem::take(&mut self.a1), std::mem::take(&mut self.a3));
        if a3 <= 0.0 {
            return None;
        }
        let aol = a1 / a3;
        self.last_aol = Some(aol);
        self.n = allowed(aol, self.low, self.high, Regulate::Scan16);
        Some((aol, self.n))
    }

    /// The knob values for N of 16, in the order to write them.
    pub fn knobs_for(&self, n: u32) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if n == 0 {
            v.push((NUMA_BALANCING, "0".to_string()));
            if self.base_rate_mbps.is_some() {
                v.push((RATE_LIMIT, "0".to_string()));
            }
            return v;
        }
        if let Some(b) = self.base_scan_mb {
            v.push((SCAN_SIZE, (b * n as u64 / 16).max(1).to_string()));
        }
        if let Some(b) = self.base_rate_mbps {
            // at least 1 MB/s, the knob's smallest promoting value: 0 would stop promotion,
            // which is N = 0's decision, not N > 0's
            v.push((RATE_LIMIT, (b * n as u64 / 16).max(1).to_string()));
        }
        v.push((NUMA_BALANCING, "2".to_string()));
        v
    }
}

/// What Colloid decided in one interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ColloidStep {
    /// No requests counted yet: nothing changes.
    NoData,
    /// L_D <= L_A (or within δ): the kernel promotes.
    Promote { l_d: f64, l_a: f64, p: f64 },
    /// L_D > L_A: the kernel's promotions stop; demote pages worth `dp` of the access
    /// probability, at most `bytes`.
    Demote {
        l_d: f64,
        l_a: f64,
        p: f64,
        dp: f64,
        bytes: f64,
    },
}

fn smooth(old: Option<f64>, new: f64, w: f64) -> f64 {
    match old {
        None => new,
        Some(o) => o + w * (new - o),
    }
}

/// Colloid over the kernel: the tiers' loaded latencies and Algorithm 2's shift.
#[derive(Clone, Debug)]
pub struct ColloidCtl {
    delta: f64,
    epsilon: f64,
    ewma: f64,
    sample_s: f64,
    max_bytes: f64,
    w: Watermarks,
    /// EWMA of the mean occupancy (requests) and arrival rate (requests/s) per tier.
    o: [Option<f64>; 2],
    r: [Option<f64>; 2],
}

impl ColloidCtl {
    /// `ewma` is the weight of a new sample every `sample_ms` (Colloid's 1/16 per 10 ms).
    pub fn new(delta: f64, epsilon: f64, ewma: f64, sample_ms: f64, max_bytes: f64) -> ColloidCtl {
        ColloidCtl {
            delta,
            epsilon,
            ewma,
            sample_s: sample_ms / 1e3,
            max_bytes,
            w: Watermarks::default(),
            o: [None; 2],
            r: [None; 2],
        }
    }

    /// One interval of `secs` seconds with the tiers' counters (fast tier first). Occupancy is
    /// summed over cycles at `cpu_ghz`, so L = O / R comes out in ns.
    pub fn step(&mut self, tc: &[TierCounters], secs: f64, cpu_ghz: f64) -> ColloidStep {
        if tc.len() < 2 || secs <= 0.0 {
            return ColloidStep::NoData;
        }
        let cycles = secs * 1e9 * cpu_ghz.max(1e-3);
        // the artifact's EWMA runs once per sample_ms; over `secs` the same decay
        let w = 1.0 - (1.0 - self.ewma).powf(secs / self.sample_s.max(1e-6));
        for (t, c) in tc.iter().take(2).enumerate() {
            self.o[t] = Some(smooth(self.o[t], c.tor_occupancy / cycles, w));
            self.r[t] = Some(smooth(self.r[t], c.tor_inserts / secs, w));
        }
        let (od, oa) = (self.o[0].unwrap_or(0.0), self.o[1].unwrap_or(0.0));
        let (rd, ra) = (self.r[0].unwrap_or(0.0), self.r[1].unwrap_or(0.0));
        if rd + ra <= 0.0 {
            return ColloidStep::NoData;
        }
        // latencies in ns (O requests / R requests per ns); a tier without requests is no
        // evidence of imbalance (as the simulator's Colloid)
        let l_d = if rd > 0.0 { od / (rd / 1e9) } else { 0.0 };
        let l_a = if ra > 0.0 {
            oa / (ra / 1e9)
        } else {
            f64::INFINITY
        };
        let p = rd / (rd + ra);
        let shift = self.w.compute_shift(p, l_d, l_a, self.delta, self.epsilon);
        if l_d <= l_a || shift.dp <= 0.0 {
            return ColloidStep::Promote { l_d, l_a, p };
        }
        let bytes = (shift.dp * (rd + ra) * 64.0 * secs).min(self.max_bytes);
        ColloidStep::Demote {
            l_d,
            l_a,
            p,
            dp: shift.dp,
            bytes,
        }
    }
}

/// The targets' sampled pages and their access probability: an EWMA of each page's share of
/// the samples per interval.
#[derive(Clone, Debug, Default)]
pub struct HotPages {
    p: BTreeMap<PageId, f64>,
    ewma: f64,
}

impl HotPages {
    pub fn new(ewma: f64) -> HotPages {
        HotPages {
            p: BTreeMap::new(),
            ewma,
        }
    }

    /// Fold one interval's samples in.
    pub fn observe(&mut self, samples: &[Sample]) {
        let n = samples.len() as f64;
        let mut now: BTreeMap<PageId, f64> = BTreeMap::new();
        for s in samples {
            *now.entry(s.page).or_default() += 1.0 / n;
        }
        let w = self.ewma;
        for v in self.p.values_mut() {
            *v *= 1.0 - w;
        }
        for (page, share) in now {
            let e = self.p.entry(page).or_insert(0.0);
            *e += w * share;
        }
        self.p.retain(|_, v| *v > 1e-9);
    }

    /// Colloid's page choice for a demotion: the fast tier's pages hottest first, each whose
    /// access probability fits in what is left of `dp`, until `bytes` are chosen. A page's
    /// probability is its EWMA over the sum of every page's (both tiers), so the estimates add
    /// up to 1 from the first interval on (the EWMA alone starts low, and would let far more
    /// than Δp of the accesses go).
    pub fn choose(
        &self,
        dp: f64,
        bytes: f64,
        page_bytes: f64,
        tier_of: impl Fn(PageId) -> Option<TierId>,
    ) -> Vec<PageId> {
        let total: f64 = self.p.values().sum();
        if total <= 0.0 {
            return Vec::new();
        }
        let mut hot: Vec<(PageId, f64)> = self
            .p
            .iter()
            .filter(|(pg, _)| tier_of(**pg) == Some(FAST))
            .map(|(pg, v)| (*pg, *v / total))
            .collect();
        hot.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let (mut left, mut room) = (dp, bytes);
        let mut out = Vec::new();
        for (pg, pr) in hot {
            if room < page_bytes || left <= 0.0 {
                break;
            }
            if pr > left {
                continue;
            }
            out.push(pg);
            left -= pr;
            room -= page_bytes;
        }
        out
    }

    /// Forget pages (demoted, or of a departed target).
    pub fn forget(&mut self, pages: &[PageId]) {
        for p in pages {
            self.p.remove(p);
        }
    }
}

/// The layer's gauges (names get the registry's `tierkitd_` prefix).
pub struct LayerMetrics {
    /// `tierkitd_alto_promotion_ratio`: N / 16.
    pub alto_ratio: Gauge,
    /// `tierkitd_alto_amortized_offcore_latency_cycles`: the AOL of Alto's last interval, over
    /// all targets.
    pub alto_aol: Gauge,
    /// `tierkitd_colloid_tier_latency_seconds{tier}`.
    pub colloid_latency: GaugeVec,
    /// `tierkitd_colloid_promotion_stops_total`: intervals that stopped the kernel's promotion.
    pub colloid_stops: IntCounter,
}

impl LayerMetrics {
    pub fn register(r: &Registry, layer: &LayerSpec) -> LayerMetrics {
        let m = LayerMetrics {
            alto_ratio: Gauge::with_opts(Opts::new(
                "alto_promotion_ratio",
                "nbt+alto: the share of NBT's promotions Alto lets the kernel make, N/16 of F(AOL) (Soar/Alto Algorithm 2).",
            ))
            .expect("a valid metric"),
            alto_aol: Gauge::with_opts(Opts::new(
                "alto_amortized_offcore_latency_cycles",
                "nbt+alto: AOL = A1/A3 over every target in Alto's last interval, in core cycles.",
            ))
            .expect("a valid metric"),
            colloid_latency: GaugeVec::new(
                Opts::new(
                    "colloid_tier_latency_seconds",
                    "nbt+colloid: the tier's loaded latency, Little's law on its TOR occupancy and inserts (EWMA).",
                ),
                &["tier"],
            )
            .expect("a valid metric"),
            colloid_stops: IntCounter::with_opts(Opts::new(
                "colloid_promotion_stops_total",
                "nbt+colloid: times the fast tier's latency exceeded the slow tier's and the kernel's promotion was stopped.",
            ))
            .expect("a valid metric"),
        };
        let reg = |c: Box<dyn prometheus::core::Collector>| {
            r.register(c).expect("metric names are unique")
        };
        match layer {
            LayerSpec::Alto { .. } => {
                reg(Box::new(m.alto_ratio.clone()));
                reg(Box::new(m.alto_aol.clone()));
                m.alto_ratio.set(1.0);
            }
            LayerSpec::Colloid { .. } => {
                reg(Box::new(m.colloid_latency.clone()));
                reg(Box::new(m.colloid_stops.clone()));
            }
        }
        m
    }
}

/// A layer's state over the run.
pub enum Regulator {
    Alto(AltoCtl),
    Colloid {
        ctl: ColloidCtl,
        hot: HotPages,
        /// Whether tierkitd has stopped the kernel's promotions.
        stopped: bool,
    },
}

/// What one interval of a layer did: log lines, and the pages to demote.
#[derive(Debug, Default)]
pub struct Outcome {
    pub lines: Vec<String>,
    pub demote: Vec<PageId>,
}

impl Regulator {
    /// The layer's state; the bases of Alto's scaling are the knobs' values at start (after
    /// the spec's `nbt` parameters were set).
    pub fn new(layer: &LayerSpec, knobs: &crate::kernel::Knobs) -> Regulator {
        let num = |k: &str| knobs.value(k).and_then(|v| v.trim().parse::<u64>().ok());
        match *layer {
            LayerSpec::Alto {
                low,
                high,
                interval_ms,
            } => Regulator::Alto(AltoCtl::new(
                low,
                high,
                interval_ms,
                num(SCAN_SIZE),
                num(RATE_LIMIT),
            )),
            LayerSpec::Colloid {
                delta,
                epsilon,
                ewma,
                sample_ms,
                max_bytes,
            } => Regulator::Colloid {
                ctl: ColloidCtl::new(delta, epsilon, ewma, sample_ms, max_bytes),
                hot: HotPages::new(ewma),
                stopped: false,
            },
        }
    }

    /// The start-up line: what regulates what.
    pub fn describe(&self) -> String {
        match self {
            Regulator::Alto(a) => format!(
                "nbt+alto: every {} ms, AOL = A1/A3 of the targets' core counters sets N of 16 (AOL_low {}, AOL_high {} cycles): {}, {}, N = 0: kernel.numa_balancing 0 (promotion off)",
                a.interval_ns / 1_000_000,
                a.low,
                a.high,
                a.base_scan_mb.map_or(format!("{SCAN_SIZE} not regulated (absent: debugfs not mounted)"), |b| format!("{SCAN_SIZE} {b} x N/16")),
                a.base_rate_mbps.map_or(format!("{RATE_LIMIT} not regulated (absent)"), |b| format!("{RATE_LIMIT} {b} x N/16")),
            ),
            Regulator::Colloid { .. } => "nbt+colloid: every interval, the tiers' loaded latencies (Little's law on TOR occupancy/inserts); fast slower than slow: the kernel's promotion stops (kernel.numa_balancing 0) and tierkitd demotes sampled hot pages of the targets (move_pages)".into(),
        }
    }

    /// One interval: the targets' core counters, tier counters and samples in `tel`; changes
    /// the knobs through `knobs` (state file first), returns what to log and to demote.
    pub fn step(
        &mut self,
        tel: &tierkit_core::Telemetry,
        knobs: &mut crate::kernel::Knobs,
        metrics: Option<&LayerMetrics>,
        tier_of: impl Fn(PageId) -> Option<TierId>,
    ) -> Result<Outcome> {
        let mut out = Outcome::default();
        match self {
            Regulator::Alto(a) => {
                if let Some((aol, n)) = a.observe(tel.now_ns, &tel.cores) {
                    if let Some(m) = metrics {
                        m.alto_aol.set(aol);
                        m.alto_ratio.set(n as f64 / 16.0);
                    }
                    let mut changed = Vec::new();
                    for (k, v) in a.knobs_for(n) {
                        if let Some(l) = knobs.set(k, &v)? {
                            changed.push(l);
                        }
                    }
                    if !changed.is_empty() {
                        out.lines.push(format!(
                            "alto: AOL {aol:.1} cycles: {n} of 16 ({})",
                            changed.join(", ")
                        ));
                    }
                }
            }
            Regulator::Colloid { ctl, hot, stopped } => {
                hot.observe(&tel.samples);
                let secs = tel.epoch_ns as f64 / 1e9;
                let step = ctl.step(&tel.tier_counters, secs, tel.cpu_ghz);
                let (l_d, l_a) = match step {
                    ColloidStep::NoData => return Ok(out),
                    ColloidStep::Promote { l_d, l_a, .. }
                    | ColloidStep::Demote { l_d, l_a, .. } => (l_d, l_a),
                };
                if let Some(m) = metrics {
                    m.colloid_latency
                        .with_label_values(&["fast"])
                        .set(l_d / 1e9);
                    if l_a.is_finite() {
                        m.colloid_latency
                            .with_label_values(&["slow"])
                            .set(l_a / 1e9);
                    }
                }
                match step {
                    ColloidStep::Demote { dp, bytes, .. } => {
                        if !*stopped {
                            *stopped = true;
                            if let Some(m) = metrics {
                                m.colloid_stops.inc();
                            }
                            if let Some(l) = knobs.set(NUMA_BALANCING, "0")? {
                                out.lines.push(format!(
                                    "colloid: fast tier {l_d:.0} ns > slow tier {l_a:.0} ns: the kernel's promotion stops ({l})"
                                ));
                            }
                        }
                        out.demote = hot.choose(dp, bytes, tel.page_bytes.max(1) as f64, &tier_of);
                        hot.forget(&out.demote);
                    }
                    _ => {
                        if *stopped {
                            *stopped = false;
                            if let Some(l) = knobs.set(NUMA_BALANCING, "2")? {
                                out.lines.push(format!(
                                    "colloid: fast tier {l_d:.0} ns, slow tier {l_a:.0} ns (no longer slower by more than δ): the kernel promotes again ({l})"
                                ));
                            }
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// `nbt+colloid` on a host without uncore counters, for the real-kernel tests: per-tier loaded
/// latencies injected from this file instead of read from the CHA counters.
pub const LATENCY_REPLAY_ENV: &str = "TIERKITD_TIER_LATENCY_REPLAY";

/// The injected latencies: one `FAST_NS SLOW_NS` line per tierkitd interval (`#` comments);
/// the last line holds after the end.
pub fn parse_latencies(text: &str) -> std::result::Result<Vec<(f64, f64)>, String> {
    let mut v = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let w: Vec<f64> = line
            .split_whitespace()
            .map(|x| x.parse::<f64>())
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| format!("line {}: not numbers: `{line}`", n + 1))?;
        match w[..] {
            [f, s] if f > 0.0 && s > 0.0 => v.push((f, s)),
            _ => return Err(format!("line {}: want FAST_NS SLOW_NS: `{line}`", n + 1)),
        }
    }
    if v.is_empty() {
        return Err("no latencies".into());
    }
    Ok(v)
}

/// Tier counters that give the loaded latencies `l_fast_ns` and `l_slow_ns` over an interval of
/// `secs` at `cpu_ghz` (Little's law: occupancy summed over cycles = inserts x latency in
/// cycles), with the fast tier serving 3 of every 4 requests (1e8 requests/s in all).
pub fn injected_tiers(
    l_fast_ns: f64,
    l_slow_ns: f64,
    secs: f64,
    cpu_ghz: f64,
) -> Vec<TierCounters> {
    [(l_fast_ns, 0.75e8), (l_slow_ns, 0.25e8)]
        .iter()
        .map(|&(l, rate)| {
            let ins = rate * secs;
            TierCounters {
                tor_inserts: ins,
                tor_occupancy: ins * l * cpu_ghz,
                ..Default::default()
            }
        })
        .collect()
}

/// The demotions as actions for the Linux backend.
pub fn demotions(pages: &[PageId]) -> Vec<tierkit_core::Action> {
    pages
        .iter()
        .map(|&page| tierkit_core::Action::Migrate {
            page,
            to: SLOW,
            mode: tierkit_core::MigrateMode::Async,
            keep_shadow: false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_over_the_kernel() {
        assert_eq!(parse("nbt").unwrap(), None);
        assert_eq!(
            parse("nbt+alto").unwrap(),
            Some(LayerSpec::Alto {
                low: 40.0,
                high: 100.0,
                interval_ms: 1000.0
            })
        );
        assert_eq!(
            parse("nbt:scan_size_mb=128+alto:aol_low=25,aol_high=95,interval_ms=500").unwrap(),
            Some(LayerSpec::Alto {
                low: 25.0,
                high: 95.0,
                interval_ms: 500.0
            })
        );
        let Some(LayerSpec::Colloid { max_bytes, .. }) = parse("nbt+colloid").unwrap() else {
            panic!("colloid")
        };
        assert_eq!(max_bytes, 100e6);
        for (spec, why) in [
            ("nbt+alto:regulate=filter10", "filters single promotions"),
            ("nbt+alto:auto=true", "auto=true"),
            ("nbt+alto:aol_low=90,aol_high=50", "must be above"),
            ("nbt+colloid:quantum_ms=10", "quantum_ms has no meaning"),
            ("nbt+colloid:gate=artifact", "gate has no meaning"),
            ("nbt+colloid+alto", "not supported (+colloid, +alto)"),
            ("nbt+toggle", "not supported (+toggle)"),
        ] {
            let e = parse(spec).unwrap_err().to_string();
            assert!(e.contains(why), "{spec}: {e}");
        }
        assert!(parse("nbt+alto:bogus=1").is_err());
    }

    #[test]
    fn n_of_16_becomes_knob_values() {
        let a = AltoCtl::new(40.0, 100.0, 1000.0, Some(256), Some(65536));
        let kv = |n| {
            a.knobs_for(n)
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            kv(16),
            "numa_balancing/scan_size_mb=256 kernel.numa_balancing_promote_rate_limit_MBps=65536 kernel.numa_balancing=2"
        );
        assert_eq!(
            kv(4),
            "numa_balancing/scan_size_mb=64 kernel.numa_balancing_promote_rate_limit_MBps=16384 kernel.numa_balancing=2"
        );
        assert_eq!(
            kv(0),
            "kernel.numa_balancing=0 kernel.numa_balancing_promote_rate_limit_MBps=0"
        );
        // the scanner's window never reaches 0 (task_scan_min divides by it)
        let small = AltoCtl::new(40.0, 100.0, 1000.0, Some(8), None);
        assert_eq!(
            small.knobs_for(1),
            vec![(SCAN_SIZE, "1".into()), (NUMA_BALANCING, "2".into())]
        );
        // nor does the promotion rate limit while N > 0: 4 MB/s x 1/16 rounds to 1, not to 0
        // (which would stop promotion as N = 0 does)
        let slow = AltoCtl::new(40.0, 100.0, 1000.0, None, Some(4));
        assert_eq!(
            slow.knobs_for(1),
            vec![(RATE_LIMIT, "1".into()), (NUMA_BALANCING, "2".into())]
        );
        assert_eq!(slow.knobs_for(8)[0], (RATE_LIMIT, "2".into()));
    }

    #[test]
    fn alto_decides_once_per_interval_on_the_summed_counters() {
        let mut a = AltoCtl::new(40.0, 100.0, 1000.0, None, Some(1024));
        let c = |a1: f64, a3: f64| CoreCounters {
            oro_cycles_with_demand_rd: a1,
            offcore_demand_rd: a3,
            ..Default::default()
        };
        assert_eq!(a.observe(0, &[]), None);
        // two targets: (600 + 100) / (10 + 0) = 70 cycles over the interval
        assert_eq!(a.observe(500_000_000, &[c(600.0, 5.0)]), None);
        assert_eq!(
            a.observe(1_000_000_000, &[c(0.0, 5.0), c(100.0, 0.0)]),
            Some((70.0, 4))
        );
        // an interval without offcore reads keeps N
        assert_eq!(a.observe(2_000_000_000, &[]), None);
        assert_eq!(a.n, 4);
        assert_eq!(a.observe(3_000_000_000, &[c(300.0, 10.0)]), Some((30.0, 0)));
    }

    fn tiers(l_fast_ns: f64, l_slow_ns: f64, rate_fast: f64, rate_slow: f64) -> Vec<TierCounters> {
        // one second at 1 GHz: occupancy summed over 1e9 cycles = mean occupancy x 1e9, and the
        // mean occupancy is rate x latency (Little's law)
        [(l_fast_ns, rate_fast), (l_slow_ns, rate_slow)]
            .iter()
            .map(|&(l, r)| TierCounters {
                tor_inserts: r,
                tor_occupancy: r * l,
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn injected_latencies_come_back_out_of_littles_law() {
        let l = parse_latencies("# fast slow\n100 250\n400 250 # loaded\n").unwrap();
        assert_eq!(l, vec![(100.0, 250.0), (400.0, 250.0)]);
        assert!(parse_latencies("100\n").is_err() && parse_latencies("").is_err());
        let mut c = ColloidCtl::new(0.05, 0.01, 1.0, 10.0, 100e6);
        let s = c.step(&injected_tiers(400.0, 250.0, 0.3, 2.5), 0.3, 2.5);
        let ColloidStep::Demote {
            l_d, l_a, p, dp, ..
        } = s
        else {
            panic!("{s:?}")
        };
        assert!(
            (l_d - 400.0).abs() < 1e-6 && (l_a - 250.0).abs() < 1e-6,
            "{s:?}"
        );
        // p_hi = 0.75 next to p_lo = 0: Δp = |0.375 - 0.75|
        assert!(
            (p - 0.75).abs() < 1e-9 && (dp - 0.375).abs() < 1e-9,
            "{s:?}"
        );
    }

    #[test]
    fn colloid_latencies_and_mode() {
        let mut c = ColloidCtl::new(0.05, 0.01, 1.0, 10.0, 100e6);
        assert_eq!(c.step(&[], 1.0, 1.0), ColloidStep::NoData);
        let s = c.step(&tiers(100.0, 250.0, 3e8, 1e8), 1.0, 1.0);
        let ColloidStep::Promote { l_d, l_a, p } = s else {
            panic!("{s:?}")
        };
        assert!(
            (l_d - 100.0).abs() < 1e-6 && (l_a - 250.0).abs() < 1e-6 && (p - 0.75).abs() < 1e-9
        );
        // the fast tier loaded beyond the slow one: demote, Δp from Algorithm 2 (p_lo 0.75 from
        // the last interval, p_hi = p now: (0.75 + 0.8) / 2 - 0.8 = 0.025)
        let s = c.step(&tiers(400.0, 250.0, 4e8, 1e8), 1.0, 1.0);
        let ColloidStep::Demote { dp, bytes, .. } = s else {
            panic!("{s:?}")
        };
        assert!((dp - 0.025).abs() < 1e-9, "{dp}");
        // min(Δp (R_D + R_A) 64 B x 1 s, M)
        assert_eq!(bytes, 100e6);
        // within δ: balanced, promotion allowed
        let s = c.step(&tiers(252.0, 250.0, 4e8, 1e8), 1.0, 1.0);
        assert!(matches!(s, ColloidStep::Promote { .. }), "{s:?}");
        // the artifact's EWMA, 1/16 per 10 ms sample, over a 300 ms interval: the weight is
        // 1 - (15/16)^30 = 0.856, not 1/16
        let mut c = ColloidCtl::new(0.05, 0.01, 1.0 / 16.0, 10.0, 100e6);
        c.step(&tiers(100.0, 250.0, 3e8, 1e8), 0.3, 1.0);
        let s = c.step(&tiers(400.0, 250.0, 3e8, 1e8), 0.3, 1.0);
        let w = 1.0 - (15.0f64 / 16.0).powi(30);
        let ColloidStep::Demote { l_d, .. } = s else {
            panic!("{s:?}")
        };
        assert!((l_d - (100.0 + w * 300.0)).abs() < 1e-6, "{l_d}");
    }

    #[test]
    fn hot_pages_are_chosen_hottest_first_within_the_shift() {
        let sample = |p: u64| Sample {
            page: PageId(p),
            tier: FAST,
            is_store: false,
            pid: 1,
            tid: 1,
            latency_ns: 0.0,
            exposed_ns: 0.0,
            time_ns: 0,
        };
        let mut h = HotPages::new(1.0);
        // 10 samples: page 1 4/10, page 2 3/10, page 3 2/10, page 9 (slow) 1/10
        let s: Vec<Sample> = [1, 1, 1, 1, 2, 2, 2, 3, 3, 9]
            .iter()
            .map(|&p| sample(p))
            .collect();
        h.observe(&s);
        let tier = |p: PageId| Some(if p.0 == 9 { SLOW } else { FAST });
        // Δp 0.55: page 1 (0.4) fits, page 2 (0.3) does not, page 3 (0.2)... does not (0.15 left)
        assert_eq!(h.choose(0.55, 1e9, 4096.0, tier), vec![PageId(1)]);
        assert_eq!(
            h.choose(0.65, 1e9, 4096.0, tier),
            vec![PageId(1), PageId(3)]
        );
        assert_eq!(
            h.choose(1.0, 1e9, 4096.0, tier),
            vec![PageId(1), PageId(2), PageId(3)]
        );
        // the byte limit
        assert_eq!(
            h.choose(1.0, 8192.0, 4096.0, tier),
            vec![PageId(1), PageId(2)]
        );
        // shares of what is left: 2 (0.3/0.6 = 0.5), 3 (0.2/0.6), 9 (slow, 0.1/0.6)
        h.forget(&[PageId(1)]);
        assert_eq!(h.choose(0.6, 1e9, 4096.0, tier), vec![PageId(2)]);
        // an EWMA of 1/16 after one interval: the same shares
        let mut h = HotPages::new(1.0 / 16.0);
        h.observe(&s);
        assert_eq!(h.choose(0.55, 1e9, 4096.0, tier), vec![PageId(1)]);
    }
}
