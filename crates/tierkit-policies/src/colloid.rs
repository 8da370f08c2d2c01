//! Colloid (SOSP'24): place pages so that the tiers' loaded access latencies balance, instead of
//! packing the hottest pages into the default tier.
//!
//! A layer over a base policy's access tracking (§4): `hemem+colloid` and `memtis+colloid`
//! choose pages from the base's tracker (HeMem's frequency bins, MEMTIS's hot lists) every
//! quantum, and replace the base's placement decisions; the base keeps tracking accesses and
//! keeps making room when a tier is full.
//!
//! `tpp+colloid` (and `nbt+colloid`) works in the hint-fault path (§4.3): the base's hint-fault
//! handler still decides which faulting alternate-tier pages are hot enough to promote (TPP's
//! active list, NBT's hint-fault latency), and Colloid lets such a promotion through only while
//! the default tier's loaded latency is below the alternate tier's and the page's access
//! probability from its time to fault, p = 1 / (dt * r), fits in what is left of Δp; any other
//! promotion is refused. The artifact's TPP fork does the same in should_numa_migrate_memory:
//! the kernel's promotion test, then no promotion while colloid_local_lat_gt_remote. Hint faults
//! are enabled on the default tier so that hot pages can be demoted when the default tier is the
//! slower one (Colloid's own decision, p <= Δp). On the simulated machine it decides each fault
//! at its instant on its base's fault path, as the artifact's handler does (`fault_path`, on by
//! default; off, the step's faults are decided at its end).
//!
//! Per-tier latency comes from CHA/TOR counters by Little's law, L = O / R, with an EWMA on
//! occupancy and rate (§3.1); p = R_D / (R_D + R_A). Algorithm 1 chooses the mode, Algorithm 2
//! the shift Δp with the p_lo / p_hi watermarks and their reset rule; the migration limit is
//! min(Δp (R_D + R_A), M) (§3.2).

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::policy::{AccessTracker, Builder};
use tierkit_core::{
    Action, Error, HintFault, Mechanism, MigrateMode, PageId, Policy, PolicyInfo, ScanTiers,
    Telemetry, TelemetryNeeds, FAST, SLOW,
};

const P: &[ParamDef] = &[
    ParamDef { name: "delta", kind: ParamKind::Float { min: 0.0, max: 1.0 }, default: "0.05", unit: "", doc: "δ: latencies within δ·L_D count as balanced (Algorithm 2, line 2)" },
    ParamDef { name: "epsilon", kind: ParamKind::Float { min: 1e-6, max: 1.0 }, default: "0.01", unit: "", doc: "ε: watermark gap below which the watermarks reset (Algorithm 2, line 5)" },
    ParamDef { name: "ewma", kind: ParamKind::Float { min: 1e-4, max: 1.0 }, default: "0.0625", unit: "", doc: "weight of a new occupancy/rate sample (1/16 in the HeMem and MEMTIS forks)" },
    ParamDef { name: "sample_ms", kind: ParamKind::Float { min: 0.1, max: 10000.0 }, default: "10", unit: "ms", doc: "how often the CHA counters are sampled into the EWMA" },
    ParamDef { name: "quantum_ms", kind: ParamKind::Float { min: 0.0, max: 100000.0 }, default: "0", unit: "ms", doc: "placement quantum; 0 = the base's (HeMem 10 ms, MEMTIS 500 ms; TPP: every sample, in the fault path)" },
    ParamDef { name: "max_migrate_mb", kind: ParamKind::Float { min: 0.0, max: 1e9 }, default: "0", unit: "MB", doc: "static migration limit M per quantum; 0 = the artifact's (HeMem 100 MB, MEMTIS 5 GB, TPP 100 MB)" },
    ParamDef { name: "bins", kind: ParamKind::Int { min: 1, max: 64 }, default: "5", unit: "", doc: "frequency bins the page-finding procedure walks, hottest first (HeMem version, §4.1)" },
    ParamDef { name: "candidates", kind: ParamKind::Int { min: 1, max: 1 << 24 }, default: "65536", unit: "pages", doc: "how many of the tracker's hottest pages are considered per quantum" },
    ParamDef { name: "fault_path", kind: ParamKind::Bool, default: "true", unit: "", doc: "hint-fault version: take the base's fault path when the base does (tpp, nbt and nomad by default), gating each promotion and demoting each default-tier page in its fault at its instant, as the artifact's fault handler does (§4.3); false: decide the epoch's faults at its end, where the room kswapd frees reaches the decisions one step late and promotions follow the step (seq-pc, tpp+colloid: 24.6K at 1 ms, 31.0K at 0.25 ms; docs/validation.md, section 1u)" },
    ParamDef { name: "gate", kind: ParamKind::Choice(&["paper", "artifact"]), default: "paper", unit: "", doc: "hint-fault version: how a fault's migration is decided. paper: §4.3, a promotion only while L_D < L_A and a default-tier page demoted only while L_D > L_A, each when its access probability 1/(dt r) fits in what is left of Δp and of the migration limit; artifact: the artifact's TPP kernel (host-architecture/colloid, linux-6.3), a switch with no Δp and no limit: the base's promotion refused while L_D > L_A (should_numa_migrate_memory) and, while L_D > L_A, a default-tier page whose time to fault is below `hot_threshold_ms` demoted in its fault (numa_migrate_memory_away_target)" },
    ParamDef { name: "hot_threshold_ms", kind: ParamKind::Float { min: 0.0, max: 1e7 }, default: "1000", unit: "ms", doc: "gate=artifact: a default-tier page that faults sooner than this after its mark is hot and is demoted while the default tier is the slower (sysctl numa_balancing_hot_threshold_ms, whose default the artifact's numa_balancing=6 reads)" },
    ParamDef { name: "scan_stats", kind: ParamKind::Bool, default: "false", unit: "", doc: "hint-fault version: let task_numa_fault account the faults so that the scanner's period adapts (upstream Linux: a process that keeps promoting is scanned further and further apart); off by default, as in Colloid's artifact kernel (linux-6.3 kernel/sched/fair.c, run with numa_balancing=6), whose task_numa_fault returns before any accounting unless NUMA_BALANCING_NORMAL is set, so the period stays at task_scan_start" },
];

pub const INFO: PolicyInfo = PolicyInfo {
    name: "colloid",
    description:
        "layer: balance the tiers' loaded latencies (hemem+colloid, memtis+colloid, tpp+colloid)",
    source: "Colloid (SOSP'24) §3-4, Algorithms 1-2",
    params: P,
    positional: None,
    build: Builder::Layer(build),
};

fn build(mut base: Box<dyn Policy>, p: &Params) -> tierkit_core::Result<Box<dyn Policy>> {
    let base_name = base.name();
    let needs = base.needs();
    let hints = base.tracker().is_none();
    if hints && !needs.hint_faults {
        return Err(Error::BadStack {
            name: "colloid".into(),
            why: format!(
                "`{base_name}` has neither a page tracker nor hint faults to find pages with"
            ),
        });
    }
    // The fault-path version keeps the base's own promotion test and gates it (§4.3); the
    // tracker version replaces the base's placement.
    if !hints && !base.delegate_placement() {
        return Err(Error::BadStack {
            name: "colloid".into(),
            why: format!("`{base_name}` cannot hand its placement decisions to a layer"),
        });
    }
    let artifact_gate = p.str("gate") == "artifact";
    if !hints && artifact_gate {
        return Err(Error::BadStack {
            name: "colloid".into(),
            why: format!(
                "gate=artifact is the TPP kernel's hint-fault switch; `{base_name}` finds pages with its tracker (its artifacts gate by Δp)"
            ),
        });
    }
    let root = base_name.split(['+', ':']).next().unwrap_or("").to_string();
    let quantum_ms = match p.float("quantum_ms") {
        q if q > 0.0 => q,
        _ if hints => p.float("sample_ms"),
        _ => needs.quantum_ns as f64 / 1e6,
    }
    .max(p.float("sample_ms").min(1.0));
    let max_mb = match p.float("max_migrate_mb") {
        m if m > 0.0 => m,
        _ if root == "memtis" => 5.0 * 1024.0,
        _ => 100.0,
    };
    Ok(Box::new(Colloid {
        base,
        hints,
        take_path: p.bool("fault_path"),
        on_path: false,
        scan_stats: p.bool("scan_stats"),
        artifact_gate,
        hot_threshold_ns: p.float("hot_threshold_ms") * 1e6,
        delta: p.float("delta"),
        epsilon: p.float("epsilon"),
        ewma: p.float("ewma"),
        sample_ns: p.float("sample_ms") * 1e6,
        quantum_ns: quantum_ms * 1e6,
        max_bytes: max_mb * 1e6,
        bins: p.int("bins") as usize,
        candidates: p.int("candidates") as usize,
        spec: crate::common::spec_name("colloid", P, p),
        w: Watermarks::default(),
        o: [None; 2],
        r: [None; 2],
        win: Window::default(),
        next_quantum: 0.0,
        budget: Budget::default(),
        in_flight: Default::default(),
        scratch: Vec::new(),
        victims: Vec::new(),
        stats: Stats::default(),
    }))
}

/// Algorithm 2's state: p_lo and p_hi.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Watermarks {
    pub p_lo: f64,
    pub p_hi: f64,
}

impl Default for Watermarks {
    fn default() -> Self {
        Watermarks {
            p_lo: 0.0,
            p_hi: 1.0,
        }
    }
}

/// What Algorithm 2 did in one call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shift {
    pub dp: f64,
    pub reset: bool,
}

impl Watermarks {
    /// COMPUTESHIFT(p, L_D, L_A) (Algorithm 2): update the watermarks and return |Δp|.
    pub fn compute_shift(&mut self, p: f64, l_d: f64, l_a: f64, delta: f64, epsilon: f64) -> Shift {
        if (l_d - l_a).abs() < delta * l_d {
            return Shift {
                dp: 0.0,
                reset: false,
            };
        }
        if l_d < l_a {
            self.p_lo = p;
        } else {
            self.p_hi = p;
        }
        let mut reset = false;
        if self.p_hi < self.p_lo + epsilon {
            reset = true;
            if l_d < l_a {
                self.p_hi = 1.0;
            } else {
                self.p_lo = 0.0;
            }
        }
        Shift {
            dp: ((self.p_lo + self.p_hi) / 2.0 - p).abs(),
            reset,
        }
    }
}

/// Counter accumulation over one sampling window.
#[derive(Clone, Copy, Debug, Default)]
struct Window {
    occ: [f64; 2],
    ins: [f64; 2],
    ns: f64,
    cycles: f64,
}

/// What is left of this quantum's shift (fault path) or limit.
#[derive(Clone, Copy, Debug, Default)]
struct Budget {
    promote: bool,
    dp: f64,
    bytes: f64,
    active: bool,
}

#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    quanta: u64,
    promotions: u64,
    demotions: u64,
    resets: u64,
    promotions_refused: u64,
    balanced_quanta: u64,
    room_demotions: u64,
    last_l_d: f64,
    last_l_a: f64,
    last_p: f64,
}

pub struct Colloid {
    base: Box<dyn Policy>,
    /// The hint-fault version (§4.3: over TPP or NBT), not the tracker one.
    hints: bool,
    /// `fault_path`: take the base's fault path, and whether the backend took it up (each hint
    /// fault handed over at its instant, `Policy::on_fault`).
    take_path: bool,
    on_path: bool,
    /// `scan_stats`: let the scanner's period adapt to the faults (upstream), not the
    /// artifact's fixed period.
    scan_stats: bool,
    /// `gate=artifact`: the artifact kernel's switch instead of §4.3's Δp gating.
    artifact_gate: bool,
    hot_threshold_ns: f64,
    delta: f64,
    epsilon: f64,
    ewma: f64,
    sample_ns: f64,
    quantum_ns: f64,
    max_bytes: f64,
    bins: usize,
    candidates: usize,
    spec: String,
    w: Watermarks,
    /// EWMA of per-tier average occupancy (requests) and arrival rate (requests per ns).
    o: [Option<f64>; 2],
    r: [Option<f64>; 2],
    win: Window,
    /// When the next quantum starts (ns): quanta start at multiples of the quantum from time 0,
    /// like the artifact's timer, whatever the simulation's step.
    next_quantum: f64,
    budget: Budget,
    in_flight: std::collections::BTreeSet<u64>,
    scratch: Vec<(PageId, f64)>,
    victims: Vec<PageId>,
    stats: Stats,
}

fn smooth(old: Option<f64>, new: f64, w: f64) -> f64 {
    match old {
        None => new,
        Some(o) => o + w * (new - o),
    }
}

impl Colloid {
    /// L_D, L_A (ns) and p from the smoothed counters, once both tiers have been seen.
    fn latencies(&self) -> Option<(f64, f64, f64)> {
        let (od, oa, rd, ra) = (self.o[0]?, self.o[1]?, self.r[0]?, self.r[1]?);
        if rd + ra <= 0.0 {
            return None;
        }
        // With no requests to a tier, its latency is unknown: treat it as unloaded-equal to the
        // other (no evidence of imbalance) by using the other tier's value.
        let l_d = if rd > 0.0 { od / rd } else { f64::NAN };
        let l_a = if ra > 0.0 { oa / ra } else { f64::NAN };
        let (l_d, l_a) = match (l_d.is_nan(), l_a.is_nan()) {
            (false, false) => (l_d, l_a),
            (true, false) => (0.0, l_a), // nothing in the default tier yet: promote
            (false, true) => (l_d, f64::INFINITY),
            (true, true) => return None,
        };
        Some((l_d, l_a, rd / (rd + ra)))
    }

    fn sample_counters(&mut self, tel: &Telemetry) {
        for t in 0..2 {
            if let Some(c) = tel.tier_counters.get(t) {
                self.win.occ[t] += c.tor_occupancy;
                self.win.ins[t] += c.tor_inserts;
            }
        }
        self.win.ns += tel.epoch_ns as f64;
        self.win.cycles += tel.epoch_ns as f64 * tel.cpu_ghz;
        if self.win.ns + 1e-6 < self.sample_ns {
            return;
        }
        for t in 0..2 {
            // average occupancy over the window (requests), and arrival rate (requests / ns);
            // O / R is then a latency in ns.
            let occ = self.win.occ[t] / self.win.cycles.max(1.0);
            let rate = self.win.ins[t] / self.win.ns;
            self.o[t] = Some(smooth(self.o[t], occ, self.ewma));
            self.r[t] = Some(smooth(self.r[t], rate, self.ewma));
        }
        self.win = Window::default();
    }

    /// Algorithm 1, lines 1-10: mode, Δp and the migration limit for the next quantum.
    fn plan_quantum(&mut self, quantum_ns: f64) -> Option<Budget> {
        let (l_d, l_a, p) = self.latencies()?;
        self.stats.quanta += 1;
        self.stats.last_l_d = l_d;
        self.stats.last_l_a = l_a;
        self.stats.last_p = p;
        let promote = l_d < l_a;
        let shift = self.w.compute_shift(p, l_d, l_a, self.delta, self.epsilon);
        self.stats.resets += shift.reset as u64;
        if shift.dp <= 0.0 {
            self.stats.balanced_quanta += 1;
            return None;
        }
        let rate = self.r[0].unwrap_or(0.0) + self.r[1].unwrap_or(0.0); // requests / ns
                                                                        // dynamic limit: migration traffic no larger than the desired perturbation of the
                                                                        // request rates, Δp (R_D + R_A) lines per ns, over the quantum
        let dynamic = shift.dp * rate * 64.0 * quantum_ns;
        Some(Budget {
            promote,
            dp: shift.dp,
            bytes: dynamic.min(self.max_bytes),
            active: true,
        })
    }

    /// The latest quantum's comparison of the tiers' loaded latencies, L_D > L_A, whatever the
    /// δ band (the artifact's colloid_local_lat_gt_remote); false before the first quantum, as
    /// the kernel's flag starts at 0.
    fn local_slower(&self) -> bool {
        self.stats.quanta > 0 && self.stats.last_l_d > self.stats.last_l_a
    }

    fn issue(&mut self, page: PageId, to: u8, mode: MigrateMode, out: &mut Vec<Action>) {
        self.in_flight.insert(page.0);
        out.push(Action::Migrate {
            page,
            to,
            mode,
            keep_shadow: false,
        });
        if to == FAST {
            self.stats.promotions += 1;
        } else {
            self.stats.demotions += 1;
        }
    }

    /// FINDPAGES over the base's tracker (HeMem bins / MEMTIS hot lists): walk the source
    /// tier's pages hottest first in `bins` equal-width probability bins and take each page
    /// whose probability still fits in Δp, within the byte limit and the destination's room.
    fn find_from_tracker(
        &mut self,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        b: Budget,
        out: &mut Vec<Action>,
    ) {
        let Some(tr) = self.base.tracker() else {
            return;
        };
        let (src, dst) = if b.promote {
            (SLOW, FAST)
        } else {
            (FAST, SLOW)
        };
        let page_bytes = tel.page_bytes as f64;
        let mut scratch = std::mem::take(&mut self.scratch);
        tr.hottest(src, self.candidates, &mut scratch);
        let max_p = scratch.iter().map(|x| x.1).fold(0.0, f64::max);
        let mut chosen = Vec::new();
        let (mut dp, mut bytes) = (b.dp, b.bytes);
        if max_p > 0.0 {
            let width = max_p / self.bins as f64;
            for bin in (0..self.bins).rev() {
                let lo = width * bin as f64;
                for &(page, pr) in scratch
                    .iter()
                    .filter(|x| x.1 >= lo && (bin + 1 == self.bins || x.1 < lo + width))
                {
                    if bytes < page_bytes || dp <= 0.0 {
                        break;
                    }
                    if pr > dp
                        || pr <= 0.0
                        || self.in_flight.contains(&page.0)
                        || mech.tier_of(page) != Some(src)
                    {
                        continue;
                    }
                    chosen.push(page);
                    dp -= pr;
                    bytes -= page_bytes;
                }
            }
        }
        // Room in the destination: make it by demoting the coldest default-tier pages, but only
        // to let in a page that is clearly hotter than the one it replaces (swapping cold for
        // cold would move no access probability and only churn).
        let free = tel.tier(dst).map_or(0, |t| t.free_pages()) as usize;
        if chosen.len() > free {
            if dst == FAST {
                let mut victims = std::mem::take(&mut self.victims);
                tr.coldest(FAST, (chosen.len() - free) * 2, &mut victims);
                let chosen_set: rustc_hash::FxHashSet<u64> = chosen.iter().map(|p| p.0).collect();
                let mut victims_iter = victims.iter().copied().filter(|v| {
                    !self.in_flight.contains(&v.0)
                        && !chosen_set.contains(&v.0)
                        && mech.tier_of(*v) == Some(FAST)
                });
                let mut kept = chosen[..free].to_vec();
                let mut swaps = Vec::new();
                for &page in &chosen[free..] {
                    let Some(v) = victims_iter.next() else { break };
                    let (pp, pv) = (tr.access_probability(page), tr.access_probability(v));
                    if pp > 2.0 * pv && pp > 0.0 {
                        swaps.push(v);
                        kept.push(page);
                    }
                }
                for v in swaps {
                    self.issue(v, SLOW, MigrateMode::Async, out);
                    self.stats.room_demotions += 1;
                    self.stats.demotions -= 1;
                }
                chosen = kept;
                self.victims = victims;
            } else {
                chosen.truncate(free);
            }
        }
        for page in chosen {
            self.issue(page, dst, MigrateMode::Async, out);
        }
        self.scratch = scratch;
    }

    /// Starts the quantum that `now` (ns) has reached, if it has reached a new one: its mode, Δp
    /// and migration limit from the latest sampled latencies (Algorithm 1, lines 1-10). Quanta
    /// start at multiples of the quantum, so where they fall does not depend on the step: with
    /// one anchored at the first step's end instead, a quantum's budget met a NUMA scanner
    /// window's fault storm (windows start at round times) at an offset of one step, and a
    /// storm's promotions split differently between two quanta at each step.
    fn start_quantum(&mut self, now: f64) -> bool {
        if now + 1e-6 < self.next_quantum {
            return false;
        }
        self.next_quantum = crate::common::next_boundary(self.next_quantum, now, self.quantum_ns);
        self.budget = self.plan_quantum(self.quantum_ns).unwrap_or_default();
        true
    }

    /// The TPP version's promotions (§4.3): the base promoted the pages its own hint-fault test
    /// deems hot (from `start` on in `out`); each goes through only while this quantum's mode is
    /// promotion (L_D < L_A) and its access probability, 1 / (dt * r) from its latest fault,
    /// fits in what is left of Δp and of the migration limit. The others are refused (the base
    /// sees a refused migration, as after a failed one). `fault` is the fault being decided on
    /// the fault path (None at the step's end, where each page's latest fault of the epoch
    /// counts).
    fn gate_promotions(
        &mut self,
        tel: &Telemetry,
        mech: &dyn Mechanism,
        fault: Option<&HintFault>,
        start: usize,
        out: &mut [Action],
    ) {
        let rate = self.r[0].unwrap_or(0.0) + self.r[1].unwrap_or(0.0);
        let page_bytes = tel.page_bytes as f64;
        for a in &mut out[start..] {
            let Action::Migrate { page, to, .. } = *a else {
                continue;
            };
            if to != FAST || mech.tier_of(page) != Some(SLOW) {
                continue;
            }
            if self.artifact_gate {
                // should_numa_migrate_memory: the kernel's own test passed (the base's
                // promotion), then `if (... && READ_ONCE(colloid_local_lat_gt_remote)) return
                // false;` and nothing else; before the first comparison the flag is 0
                if self.local_slower() {
                    self.stats.promotions_refused += 1;
                    *a = Action::Refuse { page, to };
                } else {
                    self.stats.promotions += 1;
                }
                continue;
            }
            let open = self.budget.active && self.budget.promote && rate > 0.0;
            let pr = fault
                .filter(|f| f.page == page)
                .or_else(|| tel.hint_faults.iter().rev().find(|f| f.page == page))
                .map_or(0.0, |f| 1.0 / ((f.time_to_fault_ns as f64).max(1.0) * rate));
            if open && pr <= self.budget.dp && self.budget.bytes >= page_bytes {
                self.budget.dp -= pr;
                self.budget.bytes -= page_bytes;
                self.stats.promotions += 1;
            } else {
                self.stats.promotions_refused += 1;
                *a = Action::Refuse { page, to };
            }
        }
    }

    /// The TPP version's demotions (§4.3): on a hint fault of a default-tier page, demote it
    /// while this quantum's mode is demotion (L_D > L_A) and its access probability,
    /// 1 / (dt * r), fits in what is left of Δp. `free` counts the alternate tier's free pages
    /// left for these demotions.
    fn demote_on_fault(
        &mut self,
        f: &HintFault,
        free: &mut u64,
        page_bytes: f64,
        out: &mut Vec<Action>,
    ) {
        if self.artifact_gate {
            // numa_migrate_memory_away_target: a default-tier page faulting while the local
            // latency is the higher, hot by its hint-fault latency (no NUMA_BALANCING_NORMAL,
            // so the access time in its flags), goes to next_demotion_node; do_numa_page
            // migrates it there in the fault (migrate_misplaced_page), when the node has room
            if f.tier != FAST
                || !self.local_slower()
                || (f.time_to_fault_ns as f64) >= self.hot_threshold_ns
                || *free == 0
                || self.in_flight.contains(&f.page.0)
            {
                return;
            }
            let mode = MigrateMode::Sync {
                pid: f.pid,
                tid: f.tid,
            };
            self.issue(f.page, SLOW, mode, out);
            *free -= 1;
            return;
        }
        if !self.budget.active || self.budget.promote {
            return;
        }
        let rate = self.r[0].unwrap_or(0.0) + self.r[1].unwrap_or(0.0);
        if rate <= 0.0
            || f.tier != FAST
            || self.budget.dp <= 0.0
            || self.budget.bytes < page_bytes
            || *free == 0
            || self.in_flight.contains(&f.page.0)
        {
            return;
        }
        let dt = (f.time_to_fault_ns as f64).max(1.0);
        let pr = 1.0 / (dt * rate);
        if pr > self.budget.dp {
            return;
        }
        self.issue(f.page, SLOW, MigrateMode::Async, out);
        self.budget.dp -= pr;
        self.budget.bytes -= page_bytes;
        *free -= 1;
    }
}

impl Policy for Colloid {
    fn name(&self) -> String {
        format!("{}+{}", self.base.name(), self.spec)
    }

    fn needs(&self) -> TelemetryNeeds {
        let mut n = self.base.needs();
        n.tier_counters = true;
        n.quantum_ns = self.quantum_ns as u64;
        n
    }

    memory_of_base!();

    fn init(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        let start = out.len();
        self.base.init(tel, mech, out);
        self.rewrite(start, out);
    }

    fn step(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        for m in &tel.migrations {
            self.in_flight.remove(&m.page.0);
        }
        let start = out.len();
        self.base.step(tel, mech, out);
        self.rewrite(start, out);
        if self.hints && !self.on_path {
            self.gate_promotions(tel, mech, None, start, out);
        }
        self.sample_counters(tel);
        // (start_quantum runs first, at every step)
        if self.start_quantum(tel.now_ns as f64) && !self.hints && self.budget.active {
            let b = self.budget;
            self.find_from_tracker(tel, mech, b, out);
            self.budget.active = false;
        }
        if self.hints && !self.on_path {
            let mut free = tel.tier(SLOW).map_or(0, |t| t.free_pages());
            for f in &tel.hint_faults {
                self.demote_on_fault(f, &mut free, tel.page_bytes as f64, out);
            }
        }
    }

    /// With `fault_path`, the hint-fault version takes its base's fault path when the base
    /// does: each fault is decided at its instant, the base's promotion gated and a default-tier
    /// page demoted with the quantum's mode and what is left of its Δp and limit then, as in the
    /// artifact's fault handler (the default). With `fault_path=false` neither it nor its base
    /// takes faults one at a time. The tracker version has no fault path.
    fn fault_path(&mut self) -> bool {
        self.on_path = self.hints && self.take_path && self.base.fault_path();
        self.on_path
    }

    fn on_fault(
        &mut self,
        f: &HintFault,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
    ) {
        // a quantum that starts inside the step starts at its instant, before the faults after it
        self.start_quantum(f.time_ns as f64);
        let start = out.len();
        self.base.on_fault(f, tel, mech, out);
        self.rewrite(start, out);
        self.gate_promotions(tel, mech, Some(f), start, out);
        // the alternate tier's room at the fault's instant
        let mut free = tel.tier(SLOW).map_or(0, |t| t.free_pages());
        self.demote_on_fault(f, &mut free, tel.page_bytes as f64, out);
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
        self.rewrite(start, out);
        self.gate_promotions(tel, mech, None, start, out);
    }

    fn series(&mut self, out: &mut Vec<(String, f64)>) {
        self.base.series(out);
    }

    fn warnings(&self) -> Vec<String> {
        self.base.warnings()
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut s = self.base.stats();
        let c = &self.stats;
        for (k, v) in [
            ("colloid.quanta", c.quanta as f64),
            ("colloid.promotions", c.promotions as f64),
            ("colloid.demotions", c.demotions as f64),
            ("colloid.room_demotions", c.room_demotions as f64),
            ("colloid.promotions_refused", c.promotions_refused as f64),
            ("colloid.watermark_resets", c.resets as f64),
            ("colloid.balanced_quanta", c.balanced_quanta as f64),
            ("colloid.last_l_d_ns", c.last_l_d),
            ("colloid.last_l_a_ns", c.last_l_a),
            ("colloid.last_p", c.last_p),
            ("colloid.p_lo", self.w.p_lo),
            ("colloid.p_hi", self.w.p_hi),
        ] {
            s.push((k.to_string(), v));
        }
        s
    }

    fn tracker(&self) -> Option<&dyn AccessTracker> {
        self.base.tracker()
    }
}

impl Colloid {
    /// In the hint-fault version, hint faults must also fire on default-tier pages.
    fn rewrite(&self, start: usize, out: &mut [Action]) {
        if !self.hints {
            return;
        }
        for a in &mut out[start..] {
            match a {
                Action::SetHintScan { tiers, .. } => *tiers = ScanTiers::All,
                // The artifact's numa_balancing=6: NUMA_BALANCING_COLLOID marks top-tier pages
                // too (its mm/mprotect.c change_pte_range), and without NUMA_BALANCING_NORMAL
                // its task_numa_fault accounts nothing (`scan_stats`). It is Linux 6.3, with
                // 5.18's memory-tiering check there: the base's own kernel's accounting of
                // slow-tier faults (TPP's 5.13 patch, `slow_fault_stats`) does not apply.
                Action::SetNumaScan { scan, .. } => {
                    scan.tiers = ScanTiers::All;
                    scan.fault_stats = self.scan_stats;
                    scan.slow_fault_stats = false;
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A static "workload": the default tier is faster exactly while p < p_star; each quantum
    /// p moves by the returned shift in the mode's direction.
    fn converge(w: &mut Watermarks, mut p: f64, p_star: f64, steps: usize) -> f64 {
        for _ in 0..steps {
            let (l_d, l_a) = if p < p_star {
                (100.0, 100.0 + 200.0 * (p_star - p))
            } else {
                (100.0 + 200.0 * (p - p_star), 100.0)
            };
            let s = w.compute_shift(p, l_d, l_a, 0.01, 0.01);
            p += if l_d < l_a { s.dp } else { -s.dp };
        }
        p
    }

    #[test]
    fn watermarks_converge_on_a_static_workload() {
        for &(p0, p_star) in &[(1.0, 0.3), (0.0, 0.72), (0.5, 0.5), (0.9, 0.05)] {
            let mut w = Watermarks::default();
            let p = converge(&mut w, p0, p_star, 40);
            assert!(
                (p - p_star).abs() < 0.03,
                "from {p0} to {p_star}: ended at {p}"
            );
            assert!(w.p_lo <= p_star + 0.03 && p_star <= w.p_hi + 0.03, "{w:?}");
        }
    }

    #[test]
    fn watermarks_reset_when_the_equilibrium_moves() {
        let mut w = Watermarks::default();
        let p = converge(&mut w, 1.0, 0.3, 40);
        assert!(w.p_hi - w.p_lo < 0.05);
        // Contention drops: p* jumps to 0.8, above p_hi. Without the reset p could never pass
        // p_hi; with it p reaches the new equilibrium.
        let mut resets = 0;
        let mut q = p;
        for _ in 0..60 {
            let (l_d, l_a) = if q < 0.8 {
                (100.0, 100.0 + 200.0 * (0.8 - q))
            } else {
                (100.0 + 200.0 * (q - 0.8), 100.0)
            };
            let s = w.compute_shift(q, l_d, l_a, 0.01, 0.01);
            resets += s.reset as u32;
            q += if l_d < l_a { s.dp } else { -s.dp };
        }
        assert!(resets >= 1, "the watermarks reset");
        assert!(
            (q - 0.8).abs() < 0.03,
            "converged to the new equilibrium: {q}"
        );
    }

    #[test]
    fn balanced_latencies_ask_for_no_shift() {
        let mut w = Watermarks::default();
        let s = w.compute_shift(0.4, 100.0, 103.0, 0.05, 0.01);
        assert_eq!(s.dp, 0.0);
        assert_eq!(w, Watermarks::default());
    }

    #[test]
    fn takes_the_base_fault_path_unless_told_not_to() {
        let path = |spec: &str| crate::build(spec).unwrap().fault_path();
        assert!(path("tpp+colloid"));
        assert!(path("nbt+colloid"));
        assert!(!path("tpp+colloid:fault_path=false"));
        assert!(!path("tpp:fault_path=false+colloid"));
        assert!(!path("nbt:fault_path=false+colloid"));
        assert!(!path("hemem+colloid"));
    }

    /// On the fault path a promotion TPP makes in a fault is gated there: before any quantum has
    /// been planned (no counters yet) Colloid refuses it at once.
    #[test]
    fn on_the_fault_path_each_promotion_is_gated_in_its_fault() {
        use crate::tpp::tests::{alloc, fault, tel};
        use tierkit_core::testing::FakeMech;
        let mut p = crate::build("tpp+colloid:fault_path=true").unwrap();
        assert!(p.fault_path());
        let mut mech = FakeMech::new(vec![Some(SLOW); 8]);
        let mut out = Vec::new();
        p.init(&tel(0, 100_000, 0), &mut mech, &mut out);
        out.clear();
        let mut t = tel(1, 100_000, 0);
        t.allocated = alloc(0..8, SLOW);
        for i in 0..2 {
            let f = HintFault {
                time_ns: 1_000_000 + 1_000 * (i + 1),
                ..fault(3, SLOW, 5)
            };
            t.hint_faults.push(f);
            t.now_ns = f.time_ns;
            p.on_fault(&f, &t, &mut mech, &mut out);
        }
        let refused =
            |a: &Action| matches!(a, Action::Refuse { page, to } if page.0 == 3 && *to == FAST);
        assert_eq!(out.iter().filter(|a| refused(a)).count(), 1, "{out:?}");
        assert!(!out
            .iter()
            .any(|a| matches!(a, Action::Migrate { to, .. } if *to == FAST)));
        let stats: rustc_hash::FxHashMap<_, _> = p.stats().into_iter().collect();
        assert_eq!(stats["colloid.promotions_refused"], 1.0);
    }

    /// Quanta start at multiples of the quantum (10 ms), whatever the step: a quantum whose start
    /// falls inside a step starts at the first fault after it, and stepping by 1 ms or by 3 ms
    /// plans as many quanta over the same time.
    #[test]
    fn quanta_start_at_multiples_of_the_quantum_whatever_the_step() {
        use crate::tpp::tests::{fault, tel};
        use tierkit_core::testing::FakeMech;
        use tierkit_core::TierCounters;
        // the default tier at 100 ns, the alternate at 200 ns: every quantum is a promotion one
        let counters = |epoch_ns: u64| {
            let n = epoch_ns as f64 / 1e3;
            [100.0, 200.0].map(|lat| TierCounters {
                tor_inserts: n,
                tor_occupancy: n * lat,
                ..TierCounters::default()
            })
        };
        let quanta = |p: &dyn Policy| -> f64 {
            p.stats()
                .into_iter()
                .find(|(k, _)| k == "colloid.quanta")
                .unwrap()
                .1
        };
        let stepped = |step_us: u64, until_us: u64, fault_at_us: Option<u64>| {
            let mut p = crate::build("tpp+colloid:fault_path=true").unwrap();
            assert!(p.fault_path());
            let mut mech = FakeMech::new(vec![Some(SLOW); 8]);
            let mut out = Vec::new();
            p.init(&tel(0, 100_000, 0), &mut mech, &mut out);
            let mut at = Vec::new();
            let mut now = 0;
            while now < until_us {
                let end = now + step_us;
                let mut t = tel(0, 100_000, 0);
                t.now_ns = end * 1000;
                t.epoch_ns = step_us * 1000;
                t.cpu_ghz = 1.0;
                t.tier_counters = counters(t.epoch_ns).to_vec();
                if let Some(f_us) = fault_at_us.filter(|&f| now < f && f <= end) {
                    let f = HintFault {
                        time_ns: f_us * 1000,
                        ..fault(3, SLOW, 5)
                    };
                    let before = quanta(p.as_ref());
                    p.on_fault(&f, &t, &mut mech, &mut out);
                    if quanta(p.as_ref()) > before {
                        at.push(f_us);
                    }
                }
                let before = quanta(p.as_ref());
                p.step(&t, &mut mech, &mut out);
                if quanta(p.as_ref()) > before {
                    at.push(end);
                }
                now = end;
            }
            (quanta(p.as_ref()), at)
        };
        // by 1 ms: one quantum at each multiple of 10 ms once the first sample (at 10 ms) is in
        let (n1, at1) = stepped(1000, 100_000, None);
        assert_eq!(at1, (1..=10).map(|k| k * 10_000).collect::<Vec<_>>());
        // by 3 ms: the step ends at 12, 21, 30, ... ms reach the quanta of 10, 20, 30, ... ms
        let (n3, at3) = stepped(3000, 99_000, None);
        assert_eq!(n3, n1 - 1.0, "{at3:?}"); // the run stops at 99 ms, before the quantum of 100
        assert_eq!(
            at3,
            vec![12_000, 21_000, 30_000, 42_000, 51_000, 60_000, 72_000, 81_000, 90_000]
        );
        // a fault at 20.5 ms, inside the step from 18 to 21 ms, starts the quantum of 20 ms
        let (_, atf) = stepped(3000, 99_000, Some(20_500));
        assert_eq!(atf[..3], [12_000, 20_500, 30_000], "{atf:?}");
    }

    /// `gate=artifact` is the artifact kernel's switch, not §4.3's Δp: TPP's promotion goes
    /// through before any latency is known and while the default tier is the faster, whatever
    /// Δp; it is refused while the default tier is the slower, and then a default-tier page
    /// that faults within `hot_threshold_ms` of its mark is demoted in its fault (a colder one
    /// is not).
    #[test]
    fn the_artifact_gate_is_a_switch_on_the_latencies() {
        use crate::tpp::tests::{fault, tel};
        use tierkit_core::testing::FakeMech;
        use tierkit_core::TierCounters;
        let mut p = crate::build("tpp+colloid:gate=artifact").unwrap();
        assert!(p.fault_path());
        let tiers = (0..8)
            .map(|i| Some(if i < 4 { SLOW } else { FAST }))
            .collect();
        let mut mech = FakeMech::new(tiers);
        let mut out = Vec::new();
        p.init(&tel(0, 100_000, 0), &mut mech, &mut out);
        out.clear();
        let twice =
            |p: &mut Box<dyn Policy>, mech: &mut FakeMech, out: &mut Vec<Action>, f: HintFault| {
                let mut t = tel(0, 100_000, 0);
                if f.time_ns < 2_000_000 {
                    // the first telemetry reports the pages' allocation, as the machine's does
                    t.allocated = (0..8u64)
                        .map(|pg| tierkit_core::telemetry::PageEvent {
                            page: tierkit_core::PageId(pg),
                            pid: 3,
                            tier: if pg < 4 { SLOW } else { FAST },
                        })
                        .collect();
                }
                for i in 0..2 {
                    let f = HintFault {
                        time_ns: f.time_ns + 1_000 * i,
                        ..f
                    };
                    t.hint_faults.push(f);
                    t.now_ns = f.time_ns;
                    p.on_fault(&f, &t, mech, out);
                }
            };
        let migrations = |out: &[Action], pg: u64| -> Vec<(u8, MigrateMode)> {
            out.iter()
                .filter_map(|a| match a {
                    Action::Migrate { page, to, mode, .. } if page.0 == pg => Some((*to, *mode)),
                    _ => None,
                })
                .collect()
        };
        let refused = |out: &[Action], pg: u64| {
            out.iter()
                .any(|a| matches!(a, Action::Refuse { page, .. } if page.0 == pg))
        };
        // no latency known yet: the kernel's flag is 0 and TPP's promotion goes through (the
        // paper's gate refuses it: `on_the_fault_path_each_promotion_is_gated_in_its_fault`)
        let f3 = HintFault {
            time_ns: 1_000_000,
            ..fault(3, SLOW, 5)
        };
        twice(&mut p, &mut mech, &mut out, f3);
        assert_eq!(migrations(&out, 3).len(), 1, "{out:?}");
        assert!(!refused(&out, 3));
        // 20 ms with the default tier at 300 ns and the alternate at 100 ns
        for ms in 2..=22u64 {
            let mut t = tel(ms, 100_000, 0);
            t.cpu_ghz = 1.0;
            t.tier_counters = [300.0, 100.0]
                .map(|lat| TierCounters {
                    tor_inserts: 1000.0,
                    tor_occupancy: 1000.0 * lat,
                    ..TierCounters::default()
                })
                .to_vec();
            p.step(&t, &mut mech, &mut out);
        }
        out.clear();
        let at = 22_500_000;
        twice(
            &mut p,
            &mut mech,
            &mut out,
            HintFault {
                time_ns: at,
                ..fault(2, SLOW, 5)
            },
        );
        assert!(refused(&out, 2), "{out:?}");
        assert!(migrations(&out, 2).is_empty());
        let mut t = tel(0, 100_000, 0);
        t.now_ns = at + 10_000;
        t.tiers[1].used_pages = 4;
        for (pg, ttf_ms) in [(5, 5), (6, 2000)] {
            let f = HintFault {
                time_ns: at + 10_000,
                ..fault(pg, FAST, ttf_ms)
            };
            t.hint_faults.push(f);
            p.on_fault(&f, &t, &mut mech, &mut out);
        }
        assert_eq!(
            migrations(&out, 5),
            vec![(SLOW, MigrateMode::Sync { pid: 3, tid: 7 })],
            "{out:?}"
        );
        assert!(migrations(&out, 6).is_empty(), "{out:?}");
        let stats: rustc_hash::FxHashMap<_, _> = p.stats().into_iter().collect();
        assert!(stats["colloid.last_l_d_ns"] > stats["colloid.last_l_a_ns"]);
    }

    #[test]
    fn refuses_bases_it_cannot_use() {
        assert!(crate::build("hemem+colloid:gate=artifact").is_err());
        assert!(crate::build("nbt+colloid:gate=artifact").is_ok());
        assert!(crate::build("notier+colloid").is_err());
        assert!(crate::build("colloid").is_err());
    }
}
