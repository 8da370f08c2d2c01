//! Alto (OSDI'25 §5): regulate a base policy's promotions by the amortized offcore latency.
//!
//! Every interval (1 s by default) Alto reads AOL = A1 / A3 (OFFCORE_REQUESTS_OUTSTANDING.
//! CYCLES_WITH_DEMAND_DATA_RD / OFFCORE_REQUESTS.DEMAND_DATA_RD) over all cores. At or below
//! AOL_low (40 cycles) it stops promotion, at or above AOL_high (100) it lets every promotion
//! through, in between it applies the artifact's stepwise F(l) (Algorithm 2):
//!
//! | AOL band (cycles) | TPP: promote k of 10 candidates | NBT, Nomad, Colloid: N of 16 |
//! |---|---|---|
//! | 40-50 | 1 | 1 |
//! | 50-60 | 1 | 2 |
//! | 60-80 | 3 | 4 |
//! | 80-100 | 5 | 8 |
//!
//! With other thresholds the band edges keep their proportions. On TPP Alto lets the first k of
//! every 10 promotion candidates through; on NBT and Nomad it marks only N of every 16 pages the
//! scanner would mark (fewer hint faults, so fewer candidates); on a Colloid stack it regulates
//! only slow-to-fast moves, N of every 16. A vetoed promotion is reported to the base as refused.
//!
//! Beyond the paper (§6.10 names it future work): `auto=true` tunes the thresholds online. AOL =
//! latency / MLP, and under bandwidth contention on the fast tier the latency inflates AOL
//! although the MLP, the part that says whether promotions pay, has not changed (and promotions
//! into a contended tier pay least, Colloid §2). Auto mode measures the fast tier's loaded latency
//! by Little's law on its TOR counters and scales AOL_low and AOL_high by its inflation over the
//! unloaded latency (the calibrated pointer chase's AOL, i.e. its latency at MLP 1; without a
//! calibration, the lowest latency seen).

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::policy::{AccessTracker, Builder};
use tierkit_core::{
    Action, Error, Mechanism, Policy, PolicyInfo, ScanTiers, Telemetry, TelemetryNeeds,
};

const P: &[ParamDef] = &[
    ParamDef { name: "interval_ms", kind: ParamKind::Float { min: 100.0, max: 1000.0 }, default: "1000", unit: "ms", doc: "how often AOL is profiled and the promotion ratio reset (§5.3: 1 s)" },
    ParamDef { name: "aol_low", kind: ParamKind::Float { min: 0.0, max: 1e6 }, default: "0", unit: "cycles", doc: "AOL_low: at or below it promotion stops (Algorithm 2); 0 = the machine's calibration (the stream microbenchmark's AOL), 40 without one (the paper's Skylake)" },
    ParamDef { name: "aol_high", kind: ParamKind::Float { min: 0.0, max: 1e6 }, default: "0", unit: "cycles", doc: "AOL_high: at or above it every promotion goes through; 0 = the machine's calibration (the pointer chase's AOL), 100 without one" },
    ParamDef { name: "regulate", kind: ParamKind::Choice(&["auto", "filter10", "scan16", "filter16"]), default: "auto", unit: "", doc: "how: TPP filters k of 10 candidates, NBT/Nomad scan N of 16 pages, Colloid filters N of 16; auto picks by base" },
    ParamDef { name: "auto", kind: ParamKind::Bool, default: "false", unit: "", doc: "tune AOL_low/AOL_high online by the loaded-latency inflation (beyond the paper)" },
];

pub const INFO: PolicyInfo = PolicyInfo {
    name: "alto",
    description:
        "layer: AOL-regulated promotion (tpp+alto, nbt+alto, nomad+alto, tpp+colloid+alto)",
    source: "Soar/Alto (OSDI'25) §5, Algorithm 2",
    params: P,
    positional: None,
    build: Builder::Layer(build),
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Regulate {
    /// Let the first k of every 10 promotion candidates through (TPP).
    Filter10,
    /// Mark N of every 16 pages the scanner would mark (NBT, Nomad).
    Scan16,
    /// Let N of every 16 promotions through (a Colloid stack: slow-to-fast only).
    Filter16,
}

impl Regulate {
    fn denominator(self) -> u32 {
        match self {
            Regulate::Filter10 => 10,
            Regulate::Scan16 | Regulate::Filter16 => 16,
        }
    }
}

/// F(l): how many of every `denominator` promotions pass at AOL `l` (Algorithm 2 and the
/// artifact's steps), with band edges at the same proportions between `low` and `high`.
pub fn allowed(l: f64, low: f64, high: f64, how: Regulate) -> u32 {
    if l <= low {
        return 0;
    }
    if l >= high {
        return how.denominator();
    }
    let x = (l - low) / (high - low); // 40-50-60-80-100 -> 0, 1/6, 1/3, 2/3, 1
    let band = if x < 1.0 / 6.0 {
        0
    } else if x < 1.0 / 3.0 {
        1
    } else if x < 2.0 / 3.0 {
        2
    } else {
        3
    };
    match how {
        Regulate::Filter10 => [1, 1, 3, 5][band],
        Regulate::Scan16 | Regulate::Filter16 => [1, 2, 4, 8][band],
    }
}

fn build(base: Box<dyn Policy>, p: &Params) -> tierkit_core::Result<Box<dyn Policy>> {
    let name = base.name();
    let root = name.split(['+', ':']).next().unwrap_or("").to_string();
    let colloid = name.contains("+colloid");
    let how = match p.str("regulate") {
        "filter10" => Regulate::Filter10,
        "scan16" => Regulate::Scan16,
        "filter16" => Regulate::Filter16,
        _ if colloid => Regulate::Filter16,
        _ if root == "tpp" => Regulate::Filter10,
        _ if root == "nbt" || root == "nomad" => Regulate::Scan16,
        _ => Regulate::Filter10,
    };
    if how == Regulate::Scan16 && !base.needs().hint_faults {
        return Err(Error::BadStack {
            name: "alto".into(),
            why: format!(
                "`{name}` does not scan for hint faults; use regulate=filter10 or filter16"
            ),
        });
    }
    let (low, high) = (p.float("aol_low"), p.float("aol_high"));
    if low > 0.0 && high > 0.0 && high <= low {
        return Err(Error::BadParam {
            policy: "alto".into(),
            param: "aol_high".into(),
            expected: format!("a value above aol_low ({low})"),
            got: high.to_string(),
        });
    }
    Ok(Box::new(Alto {
        spec: crate::common::spec_name("alto", P, p),
        base,
        how,
        interval_ns: p.float("interval_ms") * 1e6,
        low,
        high,
        auto: p.bool("auto"),
        a1: 0.0,
        a3: 0.0,
        tor: (0.0, 0.0),
        lat_ref: None,
        next: 0.0,
        k: how.denominator(),
        counter: 0,
        scan: None,
        lat_min: f64::INFINITY,
        eff: (low, high),
        stats: Stats::default(),
        reported: (0, 0),
    }))
}

#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    intervals: u64,
    allowed: u64,
    vetoed: u64,
    zero_intervals: u64,
    last_aol: f64,
    last_latency: f64,
}

/// The scanner setting the base asked for, which Alto rescales (Scan16).
#[derive(Clone, Copy, Debug)]
enum BaseScan {
    Fixed(Option<u32>, f64, u64, ScanTiers),
    Numa(Option<u32>, tierkit_core::NumaScan),
}

pub struct Alto {
    spec: String,
    base: Box<dyn Policy>,
    how: Regulate,
    interval_ns: f64,
    low: f64,
    high: f64,
    auto: bool,
    a1: f64,
    a3: f64,
    /// The fast tier's TOR occupancy and inserts over the interval (auto mode).
    tor: (f64, f64),
    /// The fast tier's unloaded latency in cycles, from the calibration (auto mode).
    lat_ref: Option<f64>,
    next: f64,
    /// Promotions (or marked pages) allowed per `denominator`.
    k: u32,
    counter: u32,
    /// The base's own scanner request (Scan16), rescaled by Alto.
    scan: Option<BaseScan>,
    lat_min: f64,
    eff: (f64, f64),
    stats: Stats,
    /// `stats.allowed` and `stats.vetoed` when the time series last read them.
    reported: (u64, u64),
}

impl Alto {
    fn end_interval(&mut self) -> bool {
        if self.a3 <= 0.0 {
            return false;
        }
        let aol = self.a1 / self.a3;
        self.stats.intervals += 1;
        self.stats.last_aol = aol;
        // the fast tier's loaded latency over the interval (cycles), Little's law on the TOR
        let lat = if self.tor.1 > 0.0 {
            self.tor.0 / self.tor.1
        } else {
            0.0
        };
        self.stats.last_latency = lat;
        if lat > 0.0 {
            self.lat_min = self.lat_min.min(lat);
        }
        let reference = self.lat_ref.unwrap_or(self.lat_min);
        self.eff = if self.auto && lat > 0.0 && reference.is_finite() && reference > 0.0 {
            let f = (lat / reference).max(1.0);
            (self.low * f, self.high * f)
        } else {
            (self.low, self.high)
        };
        self.tor = (0.0, 0.0);
        let k = allowed(aol, self.eff.0, self.eff.1, self.how);
        self.stats.zero_intervals += (k == 0) as u64;
        let changed = k != self.k;
        self.k = k;
        self.a1 = 0.0;
        self.a3 = 0.0;
        changed
    }

    fn scaled_scan(&self) -> Option<Action> {
        let d = self.how.denominator() as u64;
        Some(match self.scan? {
            BaseScan::Fixed(pid, period_ms, pages, tiers) => Action::SetHintScan {
                pid,
                period_ms,
                pages: pages * self.k as u64 / d,
                tiers,
            },
            // Linux's scanner: each window changes PTEs on k/16 of its scan_size budget.
            BaseScan::Numa(pid, scan) => Action::SetNumaScan {
                pid,
                scan: tierkit_core::NumaScan {
                    budget_share: scan.budget_share * self.k as f64 / d as f64,
                    ..scan
                },
            },
        })
    }

    /// Apply the regulation to what the base asked for in this step (from `start` on).
    fn regulate(&mut self, start: usize, mech: &dyn Mechanism, out: &mut [Action]) {
        let d = self.how.denominator();
        for a in &mut out[start..] {
            match *a {
                Action::SetHintScan {
                    pid,
                    period_ms,
                    pages,
                    tiers,
                } if self.how == Regulate::Scan16 => {
                    self.scan = Some(BaseScan::Fixed(pid, period_ms, pages, tiers));
                    *a = self.scaled_scan().expect("just set");
                }
                Action::SetNumaScan { pid, scan } if self.how == Regulate::Scan16 => {
                    self.scan = Some(BaseScan::Numa(pid, scan));
                    *a = self.scaled_scan().expect("just set");
                }
                Action::Migrate { page, to, .. } if self.how != Regulate::Scan16 => {
                    let promotion = mech.tier_of(page).is_some_and(|t| to < t);
                    if !promotion {
                        continue;
                    }
                    let pass = self.counter % d < self.k;
                    self.counter = self.counter.wrapping_add(1);
                    if pass {
                        self.stats.allowed += 1;
                    } else {
                        self.stats.vetoed += 1;
                        *a = Action::Refuse { page, to };
                    }
                }
                _ => {}
            }
        }
    }
}

impl Policy for Alto {
    fn name(&self) -> String {
        format!("{}+{}", self.base.name(), self.spec)
    }

    fn needs(&self) -> TelemetryNeeds {
        let mut n = self.base.needs();
        n.core_counters = true;
        n.tier_counters |= self.auto;
        n
    }

    memory_of_base!();

    fn init(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        // Thresholds left at 0 come from the machine's calibration (Soar/Alto §5.2 derives them
        // from the two microbenchmarks), else the paper's Skylake values.
        let cal = tel.calibration.as_ref();
        if self.low <= 0.0 {
            self.low = cal.map_or(40.0, |c| c.aol_low_cycles);
        }
        if self.high <= 0.0 {
            self.high = cal.map_or(100.0, |c| c.aol_high_cycles);
        }
        if self.high <= self.low {
            self.high = self.low * 2.5;
        }
        // the pointer chase's AOL is its latency (MLP 1) on the unloaded fast tier
        self.lat_ref = cal.map(|c| c.aol_high_cycles);
        self.eff = (self.low, self.high);
        let start = out.len();
        self.base.init(tel, mech, out);
        self.regulate(start, mech, out);
        self.next = tel.now_ns as f64 + self.interval_ns;
    }

    fn step(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        for c in &tel.cores {
            self.a1 += c.oro_cycles_with_demand_rd;
            self.a3 += c.offcore_demand_rd;
        }
        if let Some(t) = tel.tier_counters.first() {
            self.tor.0 += t.tor_occupancy;
            self.tor.1 += t.tor_inserts;
        }
        let now = tel.now_ns as f64;
        if now + 1e-6 >= self.next {
            self.next = crate::common::next_boundary(self.next, now, self.interval_ns);
            if self.end_interval() && self.how == Regulate::Scan16 {
                if let Some(a) = self.scaled_scan() {
                    out.push(a);
                }
            }
        }
        let start = out.len();
        self.base.step(tel, mech, out);
        self.regulate(start, mech, out);
    }

    /// The base's fault path, fault by fault, with its promotions regulated as in `step` (the
    /// AOL of the last closed interval decides).
    fn fault_path(&mut self) -> bool {
        self.base.fault_path()
    }

    fn on_fault(
        &mut self,
        f: &tierkit_core::HintFault,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
    ) {
        let start = out.len();
        self.base.on_fault(f, tel, mech, out);
        self.regulate(start, mech, out);
    }

    fn next_timer_ns(&self) -> Option<u64> {
        self.base.next_timer_ns()
    }

    fn on_timer(
        &mut self,
        t_ns: u64,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
    ) {
        let start = out.len();
        self.base.on_timer(t_ns, tel, mech, out);
        self.regulate(start, mech, out);
    }

    /// Fig. 9's view over time: the AOL of the last closed interval (absent before the first),
    /// the share of candidates it lets through, and the promotions allowed and vetoed since the
    /// last report (Scan16 regulates marking, not promotions: those two stay 0 there).
    fn series(&mut self, out: &mut Vec<(String, f64)>) {
        self.base.series(out);
        if self.stats.intervals > 0 {
            out.push(("alto.aol_cycles".into(), self.stats.last_aol));
        }
        out.push((
            "alto.allowed_share".into(),
            self.k as f64 / self.how.denominator() as f64,
        ));
        let (a, v) = (self.stats.allowed, self.stats.vetoed);
        out.push((
            "alto.promotions_allowed".into(),
            (a - self.reported.0) as f64,
        ));
        out.push((
            "alto.promotions_vetoed".into(),
            (v - self.reported.1) as f64,
        ));
        self.reported = (a, v);
    }

    fn warnings(&self) -> Vec<String> {
        self.base.warnings()
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut s = self.base.stats();
        let c = &self.stats;
        for (k, v) in [
            ("alto.intervals", c.intervals as f64),
            ("alto.promotions_allowed", c.allowed as f64),
            ("alto.promotions_vetoed", c.vetoed as f64),
            ("alto.intervals_without_promotion", c.zero_intervals as f64),
            ("alto.last_aol_cycles", c.last_aol),
            ("alto.last_fast_tier_latency_cycles", c.last_latency),
            ("alto.allowed_per_denominator", self.k as f64),
            ("alto.aol_low_effective", self.eff.0),
            ("alto.aol_high_effective", self.eff.1),
        ] {
            s.push((k.to_string(), v));
        }
        s
    }

    fn tracker(&self) -> Option<&dyn AccessTracker> {
        self.base.tracker()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkit_core::telemetry::{CoreCounters, HintFault, TierInfo};
    use tierkit_core::testing::FakeMech;
    use tierkit_core::{MigrateMode, PageId, FAST, SLOW};

    #[test]
    fn stepwise_f_matches_the_artifact() {
        let t = |l| allowed(l, 40.0, 100.0, Regulate::Filter10);
        let s = |l| allowed(l, 40.0, 100.0, Regulate::Scan16);
        assert_eq!(
            [
                t(30.0),
                t(40.0),
                t(45.0),
                t(55.0),
                t(70.0),
                t(90.0),
                t(100.0),
                t(300.0)
            ],
            [0, 0, 1, 1, 3, 5, 10, 10]
        );
        assert_eq!(
            [s(45.0), s(55.0), s(70.0), s(90.0), s(150.0)],
            [1, 2, 4, 8, 16]
        );
    }

    /// A base that scans the slow tier and promotes every page that hint-faults, synchronously;
    /// its name picks Alto's regulation (tpp: filter, nbt: scan).
    struct Promoter(&'static str);
    impl Policy for Promoter {
        fn name(&self) -> String {
            self.0.into()
        }
        fn needs(&self) -> TelemetryNeeds {
            TelemetryNeeds {
                hint_faults: true,
                ..Default::default()
            }
        }
        fn init(&mut self, _: &Telemetry, _: &mut dyn Mechanism, out: &mut Vec<Action>) {
            out.push(Action::SetHintScan {
                pid: None,
                period_ms: 1000.0,
                pages: 1600,
                tiers: ScanTiers::SlowOnly,
            });
        }
        fn step(&mut self, tel: &Telemetry, _: &mut dyn Mechanism, out: &mut Vec<Action>) {
            for f in &tel.hint_faults {
                out.push(Action::Migrate {
                    page: f.page,
                    to: FAST,
                    mode: MigrateMode::Sync {
                        pid: f.pid,
                        tid: f.tid,
                    },
                    keep_shadow: false,
                });
            }
        }
    }

    /// An epoch where every core runs with the given AOL (A1/A3) and 100 faults on slow pages.
    fn tel(now_ms: u64, aol: f64) -> Telemetry {
        Telemetry {
            now_ns: now_ms * 1_000_000,
            epoch_ns: 1_000_000,
            page_bytes: 4096,
            cpu_ghz: 2.0,
            tiers: vec![
                TierInfo {
                    id: FAST,
                    name: "f".into(),
                    capacity_pages: 1000,
                    used_pages: 0,
                },
                TierInfo {
                    id: SLOW,
                    name: "s".into(),
                    capacity_pages: 1000,
                    used_pages: 200,
                },
            ],
            cores: vec![CoreCounters {
                oro_cycles_with_demand_rd: aol * 1e5,
                oro_demand_rd: aol * 2e5,
                offcore_demand_rd: 1e5,
                ..Default::default()
            }],
            hint_faults: (0..100)
                .map(|i| HintFault {
                    page: PageId(i),
                    tier: SLOW,
                    pid: 0,
                    tid: 0,
                    time_to_fault_ns: 1000,
                    time_ns: 0,
                })
                .collect(),
            ..Default::default()
        }
    }

    fn promotions(out: &[Action]) -> usize {
        out.iter()
            .filter(|a| matches!(a, Action::Migrate { to: FAST, .. }))
            .count()
    }

    /// Alto over a TPP-like promoter with 100 ms intervals, and 200 slow pages.
    fn tpp_alto_100ms() -> (FakeMech, Box<dyn Policy>) {
        let mech = FakeMech::new(vec![Some(SLOW); 200]);
        let a = build(
            Box::new(Promoter("tpp")),
            &Params::resolve("alto", P, &[("interval_ms".into(), "100".into())]).unwrap(),
        )
        .unwrap();
        (mech, a)
    }

    #[test]
    fn the_time_series_follows_the_aol_and_counts_each_report_interval_once() {
        let (mut mech, mut a) = tpp_alto_100ms();
        let mut out = Vec::new();
        let read = |a: &mut Box<dyn Policy>| {
            let mut s = Vec::new();
            a.series(&mut s);
            s.into_iter().collect::<std::collections::BTreeMap<_, _>>()
        };
        a.init(&tel(0, 70.0), &mut mech, &mut out);
        // before the first interval closes: no AOL yet, everything passes
        let s = read(&mut a);
        assert!(!s.contains_key("alto.aol_cycles"));
        assert_eq!(s["alto.allowed_share"], 1.0);
        for ms in 1..=150 {
            out.clear();
            a.step(&tel(ms, 70.0), &mut mech, &mut out);
        }
        // 99 steps of 100 candidates pass whole; the interval closes at 100 ms, before that
        // step's candidates, and from there 51 steps pass 3 of 10 (AOL 70)
        let s = read(&mut a);
        assert!((s["alto.aol_cycles"] - 70.0).abs() < 1e-9);
        assert_eq!(s["alto.allowed_share"], 0.3);
        assert_eq!(s["alto.promotions_allowed"], 99.0 * 100.0 + 51.0 * 30.0);
        assert_eq!(s["alto.promotions_vetoed"], 51.0 * 70.0);
        // the next report counts only what came after the last one
        out.clear();
        a.step(&tel(151, 70.0), &mut mech, &mut out);
        let s = read(&mut a);
        assert_eq!(s["alto.promotions_allowed"], 30.0);
        assert_eq!(s["alto.promotions_vetoed"], 70.0);
    }

    /// Intervals end a whole number of intervals after the first began: stepping by 3 ms, the
    /// 100 ms intervals close at the first step ends past 100, 200, ... ms (102, 201, 300, ...,
    /// the tenth at 1002 ms); with `now + interval` they drifted by each overshoot (102, 204,
    /// 306, ..., the tenth at 1020 ms).
    #[test]
    fn intervals_do_not_drift_with_a_step_that_does_not_divide_them() {
        let (mut mech, mut a) = tpp_alto_100ms();
        let mut out = Vec::new();
        a.init(&tel(0, 70.0), &mut mech, &mut out);
        let intervals = |a: &dyn Policy| {
            a.stats()
                .into_iter()
                .find(|(k, _)| k == "alto.intervals")
                .unwrap()
                .1
        };
        let mut closed_at = Vec::new();
        for ms in (3..=999).step_by(3) {
            let before = intervals(a.as_ref());
            let mut t = tel(ms, 70.0);
            t.epoch_ns = 3_000_000;
            a.step(&t, &mut mech, &mut out);
            if intervals(a.as_ref()) > before {
                closed_at.push(ms);
            }
        }
        assert_eq!(closed_at, vec![102, 201, 300, 402, 501, 600, 702, 801, 900]);
        out.clear();
        let mut t = tel(1002, 70.0);
        t.epoch_ns = 3_000_000;
        a.step(&t, &mut mech, &mut out);
        assert_eq!(intervals(a.as_ref()), 10.0);
    }

    #[test]
    fn below_aol_low_nothing_is_promoted_and_above_aol_high_everything_is() {
        let (mut mech, mut a) = tpp_alto_100ms();
        let mut out = Vec::new();
        a.init(&tel(0, 30.0), &mut mech, &mut out);
        // first interval at AOL 30 (< 40): after it ends, every candidate is refused
        for ms in 1..=100 {
            out.clear();
            a.step(&tel(ms, 30.0), &mut mech, &mut out);
        }
        out.clear();
        a.step(&tel(101, 30.0), &mut mech, &mut out);
        assert_eq!(promotions(&out), 0);
        assert_eq!(
            out.iter()
                .filter(|x| matches!(x, Action::Refuse { .. }))
                .count(),
            100
        );
        // an interval at AOL 150 (> 100): everything passes
        for ms in 102..=201 {
            out.clear();
            a.step(&tel(ms, 150.0), &mut mech, &mut out);
        }
        out.clear();
        a.step(&tel(202, 150.0), &mut mech, &mut out);
        assert_eq!(promotions(&out), 100);
        // an interval at AOL 70 (60-80): 3 of every 10
        for ms in 203..=302 {
            out.clear();
            a.step(&tel(ms, 70.0), &mut mech, &mut out);
        }
        out.clear();
        a.step(&tel(303, 70.0), &mut mech, &mut out);
        assert_eq!(promotions(&out), 30);
    }

    #[test]
    fn nbt_is_regulated_by_scanning_fewer_pages() {
        let mut mech = FakeMech::new(vec![Some(SLOW); 10]);
        let mut a = build(
            Box::new(Promoter("nbt")),
            &Params::resolve("alto", P, &[("interval_ms".into(), "100".into())]).unwrap(),
        )
        .unwrap();
        let mut out = Vec::new();
        a.init(&tel(0, 70.0), &mut mech, &mut out);
        assert!(
            matches!(out[0], Action::SetHintScan { pages: 1600, .. }),
            "full speed before the first AOL reading"
        );
        let mut last = None;
        for ms in 1..=101 {
            out.clear();
            a.step(&tel(ms, 70.0), &mut mech, &mut out);
            if let Some(Action::SetHintScan { pages, .. }) = out.first() {
                last = Some(*pages);
            }
        }
        assert_eq!(
            last,
            Some(1600 * 4 / 16),
            "AOL 70: 4 of every 16 pages marked"
        );
    }

    #[test]
    fn auto_mode_discounts_latency_inflation() {
        use tierkit_core::telemetry::{Calibration, TierCounters};
        let mut mech = FakeMech::new(vec![Some(SLOW); 200]);
        let p = Params::resolve(
            "alto",
            P,
            &[
                ("interval_ms".into(), "100".into()),
                ("auto".into(), "true".into()),
            ],
        )
        .unwrap();
        let mut a = build(Box::new(Promoter("tpp")), &p).unwrap();
        // calibrated: AOL_low 40, AOL_high 100 (so the unloaded fast-tier latency is 100 cycles)
        let cal = Calibration {
            aol_low_cycles: 40.0,
            aol_high_cycles: 100.0,
            k_a: 1.0,
            k_b: 0.0,
            stall_k_cycles: vec![],
        };
        let epoch = |ms: u64, aol: f64, fast_latency: f64| {
            let mut t = tel(ms, aol);
            t.calibration = Some(cal.clone());
            t.tier_counters = vec![TierCounters {
                tor_occupancy: fast_latency * 1e5,
                tor_inserts: 1e5,
                ..Default::default()
            }];
            t
        };
        let mut out = Vec::new();
        a.init(&epoch(0, 70.0, 100.0), &mut mech, &mut out);
        // Contention triples the fast tier's latency; AOL 70 would allow 3 of 10 with fixed
        // thresholds, but at the same MLP auto mode sees an AOL far below its scaled AOL_low.
        for ms in 1..=100 {
            out.clear();
            a.step(&epoch(ms, 70.0, 300.0), &mut mech, &mut out);
        }
        out.clear();
        a.step(&epoch(101, 70.0, 300.0), &mut mech, &mut out);
        assert_eq!(promotions(&out), 0);
        let s: rustc_hash::FxHashMap<_, _> = a.stats().into_iter().collect();
        assert!(
            (s["alto.aol_low_effective"] - 120.0).abs() < 1e-6,
            "{}",
            s["alto.aol_low_effective"]
        );
        // Unloaded again: the thresholds return to the calibration and 3 of 10 pass.
        for ms in 102..=201 {
            out.clear();
            a.step(&epoch(ms, 70.0, 100.0), &mut mech, &mut out);
        }
        out.clear();
        a.step(&epoch(202, 70.0, 100.0), &mut mech, &mut out);
        assert_eq!(promotions(&out), 30);
    }
}
