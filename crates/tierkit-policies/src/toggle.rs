//! Migration toggling (per-process dynamic migration stop and restart; seeds/004 §4), a layer
//! over a hint-fault base: `tpp+toggle`, `nbt+toggle`, `memtis+toggle`.
//!
//! - **Stop** (§4.2, Algorithm 1): every `interval_ms` (2 s, `kevaluated`) the layer reads each
//!   process's cumulative `demote_promoted` (pages demoted that had been promoted, the machine's
//!   PagePromoted flag), takes delta(t) = dp(t) - dp(t - p) and the central-difference slope
//!   slope(t) = (delta(t) - delta(t - 2p)) / 2, and runs the Varying / Stabilizing / Stabilized
//!   state machine with threshold = MaxSlope >> 2. When Stabilizing persists (the next slope is
//!   not above the threshold either: Stabilized) migration and hint-fault marking stop for that
//!   process (`SetMigration`).
//! - **Restart** (§4.3, Algorithm 2): while a process is stopped, every `scan_period_ms` (5 s,
//!   `krestartd`) an access-bit scan of its memory with a `stride_kb` (2 MiB) stride counts
//!   accessed PTEs; a sliding window of `window` counts gives a mean; Varying until a count is
//!   within mean >> 4 of the mean, then Stabilized, where each count deviating by more than
//!   mean >> 4 raises the variation counter (others lower it and enter the window); past
//!   `restart_threshold` migration restarts.
//! - **Per process** (§4.4): every process has its own detectors; one tenant's stop never stops
//!   another's migration.
//! - **Refault distance** (§4.5, `refault=true`): a per-slow-node LRU age advanced by demotions
//!   and allocations onto the slow tier, hint faults on slow pages and promotions; each hint fault
//!   on a page records its distance since the previous event; a promotion the base asks for goes
//!   through only when the second distance is shorter than the first, otherwise it is refused.
//!
//! Choices the paper leaves open, stated here: slopes are compared by absolute value (§4.2: "the
//! point where the absolute value of the slope stabilizes near zero"); the machine leaves Varying
//! only once some movement was seen (MaxSlope > 0, "a slight period of sustained Varying"); the
//! restart window (5), the variation threshold (2) and the floor of the variation counter at 0
//! are ours; after a restart the stop detector starts afresh (MaxSlope 0).

use std::collections::{BTreeMap, VecDeque};

use rustc_hash::FxHashMap;
use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::policy::{AccessTracker, Builder};
use tierkit_core::telemetry::MigrationOutcome;
use tierkit_core::{memory, Error, FAST};
use tierkit_core::{Action, Mechanism, PageId, Pid, Policy, PolicyInfo, Telemetry, TelemetryNeeds};

const P: &[ParamDef] = &[
    ParamDef { name: "interval_ms", kind: ParamKind::Float { min: 10.0, max: 1e6 }, default: "2000", unit: "ms", doc: "p: interval of the demote_promoted delta and of Algorithm 1 (§4.2: 2 s, kevaluated)" },
    ParamDef { name: "scan_period_ms", kind: ParamKind::Float { min: 10.0, max: 1e6 }, default: "5000", unit: "ms", doc: "access-bit scan period while stopped (§4.3: 5 s, krestartd)" },
    ParamDef { name: "stride_kb", kind: ParamKind::Int { min: 4, max: 1 << 30 }, default: "2048", unit: "KiB", doc: "stride of the access-bit scan (§4.3: 2 MiB)" },
    ParamDef { name: "window", kind: ParamKind::Int { min: 1, max: 1000 }, default: "5", unit: "scans", doc: "sliding window of accessed-PTE counts (Algorithm 2; size not given in the paper)" },
    ParamDef { name: "restart_threshold", kind: ParamKind::Int { min: 0, max: 1000 }, default: "2", unit: "scans", doc: "restart when the variation counter exceeds it (Algorithm 2; value not given in the paper)" },
    ParamDef { name: "refault", kind: ParamKind::Bool, default: "false", unit: "", doc: "refault-distance promotion: promote only when the second distance is shorter than the first (§4.5)" },
];

pub const INFO: PolicyInfo = PolicyInfo {
    name: "toggle",
    description:
        "layer: per-process migration stop (demote_promoted slope) and restart (access-bit scans)",
    source: "migration toggling (seeds/004) §4.2-4.5, Algorithms 1-2",
    params: P,
    positional: None,
    build: Builder::Layer(build),
};

fn build(base: Box<dyn Policy>, p: &Params) -> tierkit_core::Result<Box<dyn Policy>> {
    if p.bool("refault") && !base.needs().hint_faults {
        return Err(Error::BadStack {
            name: "toggle".into(),
            why: format!(
                "refault=true needs hint faults and `{}` does not scan for them; use tpp or nbt",
                base.name()
            ),
        });
    }
    Ok(Box::new(Toggle {
        spec: crate::common::spec_name("toggle", P, p),
        base,
        interval_ns: p.float("interval_ms") * 1e6,
        scan_ns: p.float("scan_period_ms") * 1e6,
        stride_bytes: p.u64("stride_kb") * 1024,
        window: p.u64("window") as usize,
        restart_threshold: p.int("restart_threshold"),
        refault: p.bool("refault").then(Refault::default),
        procs: BTreeMap::new(),
        next_eval: 0.0,
        next_scan: 0.0,
        scans: Vec::new(),
        scans_reported: 0,
        vetoed: 0,
        passed: 0,
    }))
}

/// Algorithm 1's slope state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlopeState {
    Varying,
    Stabilizing,
    Stabilized,
}

/// Algorithm 1 (earliest stop of migration) for one process.
#[derive(Clone, Debug)]
pub struct StopDetector {
    last_dp: Option<u64>,
    /// delta(t - p), delta(t - 2p), newest first.
    deltas: VecDeque<f64>,
    slope_prev: Option<f64>,
    pub max_slope: f64,
    pub threshold: f64,
    pub state: SlopeState,
}

impl Default for StopDetector {
    fn default() -> Self {
        StopDetector {
            last_dp: None,
            deltas: VecDeque::new(),
            slope_prev: None,
            max_slope: 0.0,
            threshold: 0.0,
            state: SlopeState::Varying,
        }
    }
}

impl StopDetector {
    /// One evaluation with the cumulative demote_promoted count; true when migration should stop.
    pub fn observe(&mut self, demote_promoted: u64) -> bool {
        let Some(last) = self.last_dp.replace(demote_promoted) else {
            return false;
        };
        // delta(t) = demote_promoted(t) - demote_promoted(t - p)
        let delta = demote_promoted.saturating_sub(last) as f64;
        self.deltas.push_front(delta);
        if self.deltas.len() < 3 {
            return false;
        }
        self.deltas.truncate(3);
        // slope(t) = (delta(t) - delta(t - 2p)) / 2, by absolute value (§4.2)
        let curr = ((self.deltas[0] - self.deltas[2]) / 2.0).abs();
        let prev = self.slope_prev.replace(curr);
        // Algorithm 1 lines 1-3: threshold = MaxSlope >> 2
        if self.max_slope < curr {
            self.max_slope = curr;
            self.threshold = self.max_slope / 4.0;
        }
        let Some(prev) = prev else { return false };
        if self.max_slope <= 0.0 {
            return false; // no page movement seen yet
        }
        let thr = self.threshold;
        match self.state {
            SlopeState::Varying => {
                // prev >= thr and curr <= thr: "hot set movement maybe done or continuous
                // useless migration started"; prev < thr is allocation or movement starting.
                if prev >= thr && curr <= thr {
                    self.state = SlopeState::Stabilizing;
                }
            }
            SlopeState::Stabilizing => {
                self.state = if curr > thr {
                    SlopeState::Varying // "hot set should be moved more"
                } else {
                    SlopeState::Stabilized
                };
            }
            SlopeState::Stabilized => {}
        }
        self.state == SlopeState::Stabilized
    }
}

/// Algorithm 2's variation state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariationState {
    Varying,
    Stabilized,
}

/// Algorithm 2 (restart of migration) for one stopped process.
#[derive(Clone, Debug)]
pub struct RestartDetector {
    window: VecDeque<f64>,
    cap: usize,
    threshold: i64,
    pub state: VariationState,
    pub count_variation: i64,
}

impl RestartDetector {
    pub fn new(window: usize, threshold: i64) -> Self {
        RestartDetector {
            window: VecDeque::new(),
            cap: window.max(1),
            threshold,
            state: VariationState::Varying,
            count_variation: 0,
        }
    }

    fn push(&mut self, c: f64) {
        self.window.push_back(c);
        while self.window.len() > self.cap {
            self.window.pop_front();
        }
    }

    /// One scan's accessed-PTE count; true when migration should restart.
    pub fn observe(&mut self, count: u64) -> bool {
        let c = count as f64;
        if self.window.is_empty() {
            self.push(c);
            return false;
        }
        // Mean over the window, excluding the new count; the band is Mean >> 4.
        let mean = self.window.iter().sum::<f64>() / self.window.len() as f64;
        let band = (mean as u64 >> 4) as f64;
        let dev = (c - mean).abs();
        match self.state {
            VariationState::Varying => {
                if dev < band {
                    self.state = VariationState::Stabilized;
                }
                self.push(c);
            }
            VariationState::Stabilized => {
                if dev > band {
                    self.count_variation += 1; // the mean is kept for continued tracking
                } else {
                    self.count_variation = (self.count_variation - 1).max(0);
                    self.push(c);
                }
            }
        }
        self.count_variation > self.threshold
    }
}

/// Per-process toggling state.
#[derive(Clone, Debug)]
struct ProcToggle {
    stop: StopDetector,
    restart: Option<RestartDetector>,
    enabled: bool,
    stops: u64,
    restarts: u64,
}

/// Refault distances (§4.5): the slow node's LRU age and per page (age at the last event,
/// first distance, second distance).
#[derive(Clone, Debug, Default)]
struct Refault {
    age: u64,
    pages: FxHashMap<u64, (u64, Option<u64>, Option<u64>)>,
}

impl Refault {
    /// Bytes of the map with room for every one of `pages` pages.
    fn bytes_for(pages: u64) -> u64 {
        memory::hash_map_bytes::<u64, (u64, Option<u64>, Option<u64>)>(pages)
    }
    fn reserve(&mut self, pages: u64) -> tierkit_core::Result<()> {
        self.pages
            .try_reserve(pages as usize)
            .map_err(|_| Error::OutOfMemory {
                what: "the refault distances".into(),
                bytes: Self::bytes_for(pages),
            })
    }
    fn bytes(&self) -> u64 {
        memory::hash_map_capacity_bytes::<u64, (u64, Option<u64>, Option<u64>)>(
            self.pages.capacity() as u64,
        )
    }

    /// A page placed on the slow tier (allocation or demotion): age advances, distances reset.
    fn placed(&mut self, page: PageId) {
        self.age += 1;
        self.pages.insert(page.0, (self.age, None, None));
    }
    /// A hint fault on a slow-tier page: PageHinted set (an LRU movement, the age advances),
    /// the distance since the last event becomes the newest distance.
    fn fault(&mut self, page: PageId) {
        self.age += 1;
        let age = self.age;
        let e = self.pages.entry(page.0).or_insert((age, None, None));
        let d = age - e.0;
        e.0 = age;
        match (e.1, e.2) {
            (None, _) => e.1 = Some(d),
            (Some(_), None) => e.2 = Some(d),
            (Some(_), Some(d2)) => {
                e.1 = Some(d2);
                e.2 = Some(d);
            }
        }
    }
    /// Promote only when the second distance is shorter than the first.
    fn allows(&self, page: PageId) -> bool {
        matches!(self.pages.get(&page.0), Some((_, Some(d1), Some(d2))) if d2 < d1)
    }
}

pub struct Toggle {
    spec: String,
    base: Box<dyn Policy>,
    interval_ns: f64,
    scan_ns: f64,
    stride_bytes: u64,
    window: usize,
    restart_threshold: i64,
    refault: Option<Refault>,
    /// By pid: the simulator's are process indices, tierkitd's the targets' real pids.
    procs: BTreeMap<Pid, ProcToggle>,
    next_eval: f64,
    next_scan: f64,
    /// (time s, pid, accessed PTEs) of every scan, reported in the stats (Fig. 7).
    scans: Vec<(f64, u32, u64)>,
    /// Scans already handed to the time series.
    scans_reported: usize,
    vetoed: u64,
    passed: u64,
}

impl Toggle {
    fn ensure(&mut self, tel: &Telemetry) {
        for p in &tel.processes {
            self.procs.entry(p.pid).or_insert(ProcToggle {
                stop: StopDetector::default(),
                restart: None,
                enabled: true,
                stops: 0,
                restarts: 0,
            });
        }
    }

    /// Pages an access-bit scan of `pid` reads: one per stride of its address space, as the
    /// backend walks it ([`Mechanism::stride_pages`]: tierkitd, over the target's present
    /// pages), else one per stride over its live objects (the simulator's address space).
    fn scan_pages(&self, tel: &Telemetry, mech: &dyn Mechanism, pid: u32, out: &mut Vec<PageId>) {
        if mech.stride_pages(pid, self.stride_bytes, out) {
            return;
        }
        out.clear();
        let stride = (self.stride_bytes / tel.page_bytes.max(1)).max(1);
        for o in tel.objects.iter().filter(|o| o.pid == pid && o.live) {
            let mut k = 0;
            while k < o.pages {
                out.push(PageId(o.first_page.0 + k));
                k += stride;
            }
        }
    }

    fn refault_observe(&mut self, tel: &Telemetry) {
        let Some(r) = self.refault.as_mut() else {
            return;
        };
        for e in &tel.allocated {
            if e.tier != FAST {
                r.placed(e.page);
            }
        }
        for m in &tel.migrations {
            if m.outcome == MigrationOutcome::Done {
                if m.to == FAST {
                    r.age += 1; // promotion of an active page ages the LRU
                    r.pages.remove(&m.page.0);
                } else {
                    r.placed(m.page);
                }
            }
        }
        for f in &tel.hint_faults {
            if f.tier != FAST {
                r.fault(f.page);
            }
        }
        for e in &tel.freed {
            r.pages.remove(&e.page.0);
        }
    }

    /// Replace the base's promotions that refault distance does not support by refusals.
    fn refault_filter(&mut self, start: usize, out: &mut [Action]) {
        let Some(r) = self.refault.as_ref() else {
            return;
        };
        for a in &mut out[start..] {
            if let Action::Migrate { page, to, .. } = *a {
                if to == FAST {
                    if r.allows(page) {
                        self.passed += 1;
                    } else {
                        self.vetoed += 1;
                        *a = Action::Refuse { page, to };
                    }
                }
            }
        }
    }
}

impl Policy for Toggle {
    fn name(&self) -> String {
        format!("{}+{}", self.base.name(), self.spec)
    }

    fn needs(&self) -> TelemetryNeeds {
        // The restart detector scans a stopped process's pages' accessed bits.
        TelemetryNeeds {
            accessed_bits: true,
            ..self.base.needs()
        }
    }

    /// The base's tables, and with `refault=true` the refault distances of every page placed
    /// on the slow tier (a hash map entry a page).
    fn memory_bytes(&self, space: &tierkit_core::PageSpace) -> u64 {
        self.base.memory_bytes(space)
            + if self.refault.is_some() {
                Refault::bytes_for(space.pages)
            } else {
                0
            }
    }

    fn reserve(&mut self, space: &tierkit_core::PageSpace) -> tierkit_core::Result<()> {
        self.base.reserve(space)?;
        if let Some(r) = self.refault.as_mut() {
            r.reserve(space.pages)?;
        }
        Ok(())
    }

    fn allocated_bytes(&self) -> u64 {
        self.base.allocated_bytes() + self.refault.as_ref().map_or(0, Refault::bytes)
    }

    fn init(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        self.ensure(tel);
        self.next_eval = tel.now_ns as f64 + self.interval_ns;
        self.next_scan = tel.now_ns as f64 + self.scan_ns;
        self.base.init(tel, mech, out);
    }

    fn step(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        self.ensure(tel);
        self.refault_observe(tel);
        let now = tel.now_ns as f64;
        if now + 1e-6 >= self.next_eval {
            self.next_eval += self.interval_ns;
            for p in &tel.processes {
                let st = self.procs.get_mut(&p.pid).expect("ensured above");
                if !p.alive || !st.enabled {
                    continue;
                }
                if st.stop.observe(p.demote_promoted) {
                    st.enabled = false;
                    st.stops += 1;
                    st.restart = Some(RestartDetector::new(self.window, self.restart_threshold));
                    out.push(Action::SetMigration {
                        pid: p.pid,
                        enabled: false,
                    });
                }
            }
        }
        if now + 1e-6 >= self.next_scan {
            self.next_scan += self.scan_ns;
            let mut pages = Vec::new();
            let mut bits = Vec::new();
            for p in &tel.processes {
                if !p.alive || self.procs.get(&p.pid).is_none_or(|st| st.enabled) {
                    continue;
                }
                self.scan_pages(tel, &*mech, p.pid, &mut pages);
                mech.test_and_clear_accessed(&pages, &mut bits);
                let count = bits.iter().filter(|&&b| b).count() as u64;
                self.scans.push((now * 1e-9, p.pid, count));
                let st = self.procs.get_mut(&p.pid).expect("ensured above");
                if st.restart.as_mut().is_some_and(|r| r.observe(count)) {
                    st.enabled = true;
                    st.restarts += 1;
                    st.restart = None;
                    st.stop = StopDetector::default();
                    st.stop.observe(p.demote_promoted);
                    out.push(Action::SetMigration {
                        pid: p.pid,
                        enabled: true,
                    });
                }
            }
        }
        let start = out.len();
        self.base.step(tel, mech, out);
        self.refault_filter(start, out);
    }

    /// The base's fault path, fault by fault, its promotions filtered as in `step` (a stopped
    /// process's migrations the machine refuses, as in `step`).
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
        self.refault_filter(start, out);
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
        self.refault_filter(start, out);
    }

    /// Per process, the accessed-PTE count of the latest restart scan in the interval
    /// (Algorithm 2's input; the toggling paper's Fig. 7 plots it).
    fn series(&mut self, out: &mut Vec<(String, f64)>) {
        self.base.series(out);
        let mut last: std::collections::BTreeMap<u32, u64> = Default::default();
        for &(_, pid, c) in &self.scans[self.scans_reported..] {
            last.insert(pid, c);
        }
        self.scans_reported = self.scans.len();
        for (pid, c) in last {
            out.push((format!("toggle.accessed_ptes.p{pid}"), c as f64));
        }
    }

    fn warnings(&self) -> Vec<String> {
        self.base.warnings()
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut s = self.base.stats();
        for (i, p) in &self.procs {
            s.push((format!("toggle.stops.p{i}"), p.stops as f64));
            s.push((format!("toggle.restarts.p{i}"), p.restarts as f64));
        }
        if self.refault.is_some() {
            s.push(("toggle.refault_passed".into(), self.passed as f64));
            s.push(("toggle.refault_vetoed".into(), self.vetoed as f64));
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
    use tierkit_core::telemetry::{ProcInfo, QosClass};
    use tierkit_core::testing::FakeMech;

    fn run_stop(cum: &[u64]) -> (Vec<bool>, StopDetector) {
        let mut d = StopDetector::default();
        let v = cum.iter().map(|&c| d.observe(c)).collect();
        (v, d)
    }

    #[test]
    fn sustained_ping_pong_stops_migration() {
        // delta rises to a sustained high level (unfriendly, Silo-like): slopes 100, 100, 50, 0,
        // 0: Stabilizing at the first 0, Stabilized (stop) when it persists
        let (v, d) = run_stop(&[0, 0, 100, 300, 600, 900, 1200, 1500]);
        assert_eq!(d.max_slope, 100.0);
        assert_eq!(d.threshold, 25.0, "MaxSlope >> 2");
        assert_eq!(v, [false, false, false, false, false, false, false, true]);
    }

    #[test]
    fn settled_hot_set_stops_migration() {
        // delta rises then falls back to zero (friendly, Liblinear-like)
        let (v, _) = run_stop(&[0, 0, 200, 600, 900, 1000, 1000, 1000, 1000]);
        assert!(v.iter().any(|&x| x), "{v:?}");
        assert!(
            !v[..6].iter().any(|&x| x),
            "not while the hot set still moves: {v:?}"
        );
    }

    #[test]
    fn renewed_movement_returns_to_varying() {
        let mut d = StopDetector::default();
        for c in [0, 0, 100, 300, 600, 900, 1200] {
            assert!(!d.observe(c));
        }
        assert_eq!(d.state, SlopeState::Stabilizing);
        // delta jumps from 300 to 700: slope (700 - 300) / 2 = 200 > threshold
        assert!(!d.observe(1900));
        assert_eq!(d.state, SlopeState::Varying);
    }

    #[test]
    fn no_movement_never_stops() {
        let (v, d) = run_stop(&[0; 20]);
        assert!(v.iter().all(|&x| !x));
        assert_eq!(d.state, SlopeState::Varying);
    }

    #[test]
    fn restart_after_a_lasting_change_of_accessed_ptes() {
        let mut r = RestartDetector::new(5, 2);
        assert!(!r.observe(100));
        assert!(!r.observe(101));
        assert_eq!(
            r.state,
            VariationState::Stabilized,
            "|101 - 100| < 100 >> 4"
        );
        for _ in 0..5 {
            assert!(!r.observe(100));
        }
        assert_eq!(r.count_variation, 0);
        // the hot set changes: counts drop to 50
        assert!(!r.observe(50));
        assert!(!r.observe(50));
        assert!(
            r.observe(50),
            "third deviating scan exceeds the threshold 2"
        );
    }

    #[test]
    fn a_single_outlier_does_not_restart() {
        let mut r = RestartDetector::new(5, 2);
        for c in [100, 100, 100, 160, 100, 100, 100, 100] {
            assert!(!r.observe(c));
        }
        assert_eq!(r.count_variation, 0);
    }

    #[test]
    fn refault_promotes_only_on_a_shrinking_distance() {
        let mut r = Refault::default();
        r.placed(PageId(1)); // age 1
        r.placed(PageId(2)); // age 2
        r.age += 5;
        r.fault(PageId(1)); // age 8: first distance 7
        assert!(!r.allows(PageId(1)));
        r.fault(PageId(1)); // age 9: second distance 1 < 7
        assert!(r.allows(PageId(1)));
        r.fault(PageId(2)); // age 10: first distance 8
        r.age += 20;
        r.fault(PageId(2)); // age 31: second distance 21 > 8
        assert!(!r.allows(PageId(2)));
    }

    fn proc_(pid: u32, dp: u64, enabled: bool) -> ProcInfo {
        ProcInfo {
            pid,
            name: format!("p{pid}"),
            class: QosClass::BestEffort,
            alive: true,
            threads: 1,
            rss_pages: vec![10, 10],
            demote_promoted: dp,
            promotions: 0,
            demotions: 0,
            migration_enabled: enabled,
        }
    }

    #[test]
    fn one_tenants_stop_does_not_stop_another() {
        let mut pol = crate::build("notier+toggle").unwrap();
        let mut mech = FakeMech::new(vec![]);
        let mut out = Vec::new();
        let mut tel = Telemetry {
            page_bytes: 4096,
            processes: vec![proc_(0, 0, true), proc_(1, 0, true)],
            ..Default::default()
        };
        pol.init(&tel, &mut mech, &mut out);
        let p0 = [0, 0, 100, 300, 600, 900, 1200, 1500, 1800];
        let p1 = [0, 0, 10, 20, 40, 80, 160, 320, 640]; // still accelerating: Varying
        let mut stops = Vec::new();
        for (k, (&a, &b)) in p0.iter().zip(&p1).enumerate() {
            tel.now_ns = (k as u64 + 1) * 2_000_000_000;
            tel.processes = vec![proc_(0, a, true), proc_(1, b, true)];
            out.clear();
            pol.step(&tel, &mut mech, &mut out);
            for a in &out {
                if let Action::SetMigration { pid, enabled } = a {
                    stops.push((*pid, *enabled));
                }
            }
        }
        assert_eq!(stops, [(0, false)]);
        let s: std::collections::BTreeMap<_, _> = pol.stats().into_iter().collect();
        assert_eq!(s["toggle.stops.p0"], 1.0);
        assert_eq!(s["toggle.stops.p1"], 0.0);
        // While p0 is stopped its restart scans run every scan_period_ms; each report interval
        // carries the latest count through the time-series channel, once.
        let mut ch = Vec::new();
        pol.series(&mut ch);
        ch.clear();
        tel.now_ns += 6_000_000_000;
        pol.step(&tel, &mut mech, &mut out);
        pol.series(&mut ch);
        assert_eq!(ch, vec![("toggle.accessed_ptes.p0".to_string(), 0.0)]);
        ch.clear();
        pol.series(&mut ch);
        assert!(ch.is_empty(), "nothing new since the last report");
    }

    /// A backend whose processes are real pids (tierkitd's targets) and which walks their
    /// address spaces itself ([`Mechanism::stride_pages`]): 64 pages of pid 4242 at the
    /// stride, of which `hot` read accessed at each scan.
    struct RealPids {
        hot: usize,
        scans: u32,
    }

    impl Mechanism for RealPids {
        fn tier_of(&self, _: PageId) -> Option<tierkit_core::TierId> {
            Some(tierkit_core::SLOW)
        }
        fn test_and_clear_accessed(&mut self, pages: &[PageId], out: &mut Vec<bool>) {
            self.scans += 1;
            out.clear();
            out.extend((0..pages.len()).map(|i| i < self.hot));
        }
        fn stride_pages(&self, pid: Pid, _: u64, out: &mut Vec<PageId>) -> bool {
            out.clear();
            if pid == 4242 {
                out.extend((0..64).map(|i| PageId(1000 + 512 * i)));
            }
            true
        }
    }

    /// On tierkitd a process is its real pid, not an index (it used to panic indexing a table
    /// by pid), and the restart scan reads the pages the backend's stride walk gives (tierkitd
    /// has no objects): migration stops for the ping-ponging target only and restarts when its
    /// accessed-PTE count changes for good.
    #[test]
    fn real_pids_stop_and_restart_through_the_backends_stride_walk() {
        let mut pol = crate::build("notier+toggle").unwrap();
        let mut mech = RealPids { hot: 48, scans: 0 };
        let mut out = Vec::new();
        let mut tel = Telemetry {
            page_bytes: 4096,
            processes: vec![proc_(4242, 0, true), proc_(77, 0, true)],
            ..Default::default()
        };
        pol.init(&tel, &mut mech, &mut out);
        let dp = [0, 0, 100, 300, 600, 900, 1200, 1500, 1800];
        let mut moves: Vec<(Pid, bool)> = Vec::new();
        let mut t = 0u64;
        let mut step =
            |tel: &mut Telemetry, mech: &mut RealPids, d: u64, moves: &mut Vec<(Pid, bool)>| {
                t += 1_000_000_000;
                tel.now_ns = t;
                tel.processes = vec![proc_(4242, d, true), proc_(77, 0, true)];
                out.clear();
                pol.step(tel, mech, &mut out);
                for a in &out {
                    if let Action::SetMigration { pid, enabled } = a {
                        moves.push((*pid, *enabled));
                    }
                }
            };
        for &d in &dp {
            // interval_ms 2000: every other step evaluates
            step(&mut tel, &mut mech, d, &mut moves);
            step(&mut tel, &mut mech, d, &mut moves);
        }
        assert_eq!(moves, [(4242, false)]);
        // stopped: scans every 5 s read 48 of 64 pages accessed, then the pattern shrinks
        for _ in 0..30 {
            step(&mut tel, &mut mech, 1800, &mut moves);
        }
        assert!(mech.scans >= 5, "{} scans", mech.scans);
        assert_eq!(moves, [(4242, false)], "a steady count does not restart");
        mech.hot = 12;
        for _ in 0..30 {
            step(&mut tel, &mut mech, 1800, &mut moves);
        }
        assert_eq!(moves, [(4242, false), (4242, true)]);
        let s: std::collections::BTreeMap<_, _> = pol.stats().into_iter().collect();
        assert_eq!(
            (s["toggle.stops.p4242"], s["toggle.restarts.p4242"]),
            (1.0, 1.0)
        );
        assert_eq!(s["toggle.stops.p77"], 0.0);
    }
}
