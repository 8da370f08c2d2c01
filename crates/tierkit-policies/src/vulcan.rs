//! Vulcan: workload-aware tiered memory for multi-tenant machines (seeds/003 §3.3-3.5).
//!
//! - **QoS targets** (§3.3): GFMC = fast-tier capacity / n (n live tenants); GPT_i = GFMC / RSS_i,
//!   1 when GFMC >= RSS_i. FTHR_i (eq. 1-2) from the PEBS-like samples of the tenant: H_i,t = fast
//!   samples / all samples in the quantum, FTHR_i = alpha H_i,t + (1 - alpha) FTHR_i (alpha 0.8).
//!   demand_i = alloc_i + (GPT_i - FTHR_i) RSS_i ln^2(RSS_i) (eq. 3) with RSS_i in GiB and the
//!   result in GiB (the paper gives no units; natural log), clamped to [0, RSS_i], then counted
//!   in units of `unit_mb` of fast memory.
//! - **Credit-based fair resource partitioning** (Algorithm 1, Karma-style): equal initial shares
//!   (GFMC) and credits (`init_credits`); every quantum alloc_i = min(demand_i, GFMC); a tenant
//!   whose demand is below GFMC is a donor of its surplus GFMC - alloc_i; borrowers (alloc_i <
//!   demand_i) are served LC first (within a class the one with the most credits, Karma's order);
//!   each unit comes from the donor with the fewest credits (the donor earns a credit, the
//!   borrower pays one); with no donor left an LC borrower takes a unit from a randomly chosen BE
//!   tenant above GFMC. A donor keeps what it did not lend (work conservation; the paper leaves
//!   unlent surplus open). The allocation becomes each tenant's fast-tier limit (`SetPartition`).
//! - **Per-tenant migration** (§3.2): each tenant has its own promotion queues and its own budget
//!   (`budget_mb` per `migrate_ms`), working within its partition; there is no global hot list.
//! - **Biased migration** (§3.5, Table 1): sampled pages are private (samples from one thread) or
//!   shared, read- or write-intensive (store share above `write_frac`); four queues with
//!   priorities private-read 4, shared-read 3, private-write 2, shared-write 1; read-intensive
//!   pages are copied asynchronously, write-intensive ones synchronously in the sampling thread.
//!   Multi-level feedback: a page rises one level for every doubling of its heat over
//!   `hot_threshold`. Promotions keep a shadow copy so a clean demotion is a remap (`shadow`);
//!   over its partition, or to make room for a hotter page, a tenant demotes its coldest pages.
//! - **Per-thread page tables** (§3.4, `replicate=true`): `SetTlbScope` so a migration shoots
//!   down only the threads that map the page instead of the whole process.
//!
//! Heat is the page's sample count, halved every `cooling_quanta` quanta (cooling, as in MEMTIS
//! which Vulcan's sampling follows).

use std::collections::BinaryHeap;

use rustc_hash::FxHashMap;

use tierkit_core::memory::{bytes_of, hash_map_bytes, hash_map_capacity_bytes};
use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::policy::Builder;
use tierkit_core::rng::Rng;
use tierkit_core::telemetry::QosClass;
use tierkit_core::{
    Action, Mechanism, MigrateMode, PageId, PageSpace, Pid, Policy, PolicyInfo, SampleFilter,
    Telemetry, TelemetryNeeds, FAST, SLOW,
};

use crate::common::{spec_name, Dense, Residency};

const P: &[ParamDef] = &[
    ParamDef {
        name: "quantum_ms",
        kind: ParamKind::Float {
            min: 10.0,
            max: 1e6,
        },
        default: "1000",
        unit: "ms",
        doc: "FTHR, demand and partition update interval (not given in the paper)",
    },
    ParamDef {
        name: "alpha",
        kind: ParamKind::Float { min: 0.0, max: 1.0 },
        default: "0.8",
        unit: "",
        doc: "EMA weight of the newest hit ratio (§3.3 eq. 2: 0.8)",
    },
    ParamDef {
        name: "unit_mb",
        kind: ParamKind::Float {
            min: 0.004,
            max: 1e6,
        },
        default: "16",
        unit: "MiB",
        doc:
            "the unit Algorithm 1 transfers (smaller when an equal share holds fewer than 64 units)",
    },
    ParamDef {
        name: "init_credits",
        kind: ParamKind::Int {
            min: 0,
            max: 1 << 40,
        },
        default: "1000",
        unit: "units",
        doc: "initial credits of every tenant (Karma)",
    },
    ParamDef {
        name: "sample_period",
        kind: ParamKind::Int {
            min: 1,
            max: 1 << 30,
        },
        default: "997",
        unit: "misses",
        doc: "PEBS period over LLC misses",
    },
    ParamDef {
        name: "migrate_ms",
        kind: ParamKind::Float { min: 1.0, max: 1e6 },
        default: "100",
        unit: "ms",
        doc: "how often each tenant's migration work runs",
    },
    ParamDef {
        name: "budget_mb",
        kind: ParamKind::Float { min: 0.0, max: 1e6 },
        default: "32",
        unit: "MiB",
        doc: "pages each tenant may migrate per migrate_ms",
    },
    ParamDef {
        name: "hot_threshold",
        kind: ParamKind::Float { min: 0.0, max: 1e9 },
        default: "2",
        unit: "samples",
        doc: "heat at which a slow page enters a promotion queue",
    },
    ParamDef {
        name: "cooling_quanta",
        kind: ParamKind::Int {
            min: 1,
            max: 1 << 20,
        },
        default: "4",
        unit: "quanta",
        doc: "halve every page's heat this often (cooling)",
    },
    ParamDef {
        name: "write_frac",
        kind: ParamKind::Float { min: 0.0, max: 1.0 },
        default: "0.25",
        unit: "",
        doc: "store share of a page's samples above which it is write-intensive",
    },
    ParamDef {
        name: "replicate",
        kind: ParamKind::Bool,
        default: "true",
        unit: "",
        doc: "per-thread page tables: owner-only TLB shootdowns for private pages (§3.4)",
    },
    ParamDef {
        name: "shadow",
        kind: ParamKind::Bool,
        default: "true",
        unit: "",
        doc: "keep shadow copies of promoted pages so clean demotions are remaps (§3.5)",
    },
    ParamDef {
        name: "partition",
        kind: ParamKind::Bool,
        default: "true",
        unit: "",
        doc: "enforce the CBFRP allocation as each tenant's fast-tier limit",
    },
];

pub const INFO: PolicyInfo = PolicyInfo {
    name: "vulcan",
    description: "Vulcan: per-tenant FTHR/GPT demand, credit-based fair partitioning, biased per-tenant migration, per-thread TLB shootdowns",
    source: "Vulcan (seeds/003) §3.3-3.5, Algorithm 1, Table 1",
    params: P,
    positional: None,
    build: Builder::Base(|p| Ok(Box::new(Vulcan::new(p)))),
};

/// One tenant as Algorithm 1 sees it (allocations and demands in units).
#[derive(Clone, Debug, PartialEq)]
pub struct Tenant {
    pub lc: bool,
    pub demand: u64,
    pub alloc: u64,
    pub credits: i64,
}

/// Algorithm 1 (credit-based fair resource partitioning). `gfmc` is the equal share in units;
/// each tenant's `alloc` is its previous allocation on entry (0 for a new tenant) and its new one
/// on return; credits are updated per transfer. Returns the number of units transferred.
///
/// Line 2 caps every allocation at min(demand, GFMC); we let a tenant keep units it borrowed in
/// earlier quanta while it still demands them (otherwise lines 11-13, an LC borrower taking from
/// a BE tenant above GFMC, could never apply), and when the shares no longer fit (a tenant
/// arrived, a donor wants its share back) those above GFMC give back first, BE before LC.
pub fn cbfrp(tenants: &mut [Tenant], gfmc: u64, rng: &mut Rng) -> u64 {
    let n = tenants.len();
    for t in tenants.iter_mut() {
        t.alloc = t.demand.min(t.alloc.max(gfmc));
    }
    // Shares must fit in n x GFMC: trim the largest holdings above GFMC, BE first.
    let mut total: u64 = tenants.iter().map(|t| t.alloc).sum();
    while total > gfmc * n as u64 {
        let Some(i) = (0..n)
            .filter(|&i| tenants[i].alloc > gfmc)
            .max_by_key(|&i| (!tenants[i].lc, tenants[i].alloc, std::cmp::Reverse(i)))
        else {
            break;
        };
        tenants[i].alloc -= 1;
        total -= 1;
    }
    // Donors' surplus: GFMC - alloc, less what earlier borrowers still hold (taken from the
    // donors with the most credits, who have lent the most).
    let mut surplus: Vec<u64> = tenants
        .iter()
        .map(|t| gfmc.saturating_sub(t.alloc))
        .collect();
    let mut held: u64 = tenants.iter().map(|t| t.alloc.saturating_sub(gfmc)).sum();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(tenants[i].credits), i));
    for i in order {
        let k = held.min(surplus[i]);
        surplus[i] -= k;
        held -= k;
    }
    let mut transfers = 0;
    let borrowing = |t: &Tenant| t.alloc < t.demand;
    loop {
        // line 7: an LC borrower if any, else a BE borrower; the most credits first (Karma)
        let pick = |lc: bool| {
            (0..n)
                .filter(|&i| tenants[i].lc == lc && borrowing(&tenants[i]))
                .max_by_key(|&i| (tenants[i].credits, std::cmp::Reverse(i)))
        };
        let Some(b) = pick(true).or_else(|| pick(false)) else {
            break;
        };
        // line 9: the donor with the fewest credits
        let donor = (0..n)
            .filter(|&i| i != b && surplus[i] > 0)
            .min_by_key(|&i| (tenants[i].credits, i));
        if let Some(d) = donor {
            surplus[d] -= 1;
            tenants[d].credits += 1;
        } else if tenants[b].lc {
            // line 11-13: take from a random BE tenant above GFMC
            let be: Vec<usize> = (0..n)
                .filter(|&i| !tenants[i].lc && tenants[i].alloc > gfmc)
                .collect();
            if be.is_empty() {
                break;
            }
            let d = be[rng.below(be.len() as u64) as usize];
            tenants[d].alloc -= 1;
            tenants[d].credits += 1;
        } else {
            break; // line 15
        }
        tenants[b].alloc += 1;
        tenants[b].credits -= 1;
        transfers += 1;
    }
    // A donor keeps the surplus it did not lend.
    for (t, s) in tenants.iter_mut().zip(surplus) {
        t.alloc += s;
    }
    transfers
}

/// GPT_i = GFMC / RSS_i, 1 when the share covers the RSS (§3.3).
/// Units an equal share must hold at least: below that Algorithm 1 works in smaller units.
pub const MIN_UNITS_PER_SHARE: f64 = 64.0;

/// The unit Algorithm 1 transfers, in pages: `unit_mb`, or smaller when the equal share (GFMC)
/// holds fewer than [`MIN_UNITS_PER_SHARE`] of them (never below a page). The paper's 16 MiB unit
/// is small against its testbed's fast tier; on a fast tier smaller than a unit per tenant the
/// unmodified rule would give every tenant GFMC = 0 units and demote every page.
pub fn effective_unit(unit_mb: f64, page_bytes: u64, gfmc_pages: f64) -> u64 {
    let unit = ((unit_mb * 1048576.0 / page_bytes.max(1) as f64).round() as u64).max(1);
    let cap = (gfmc_pages / MIN_UNITS_PER_SHARE).floor().max(1.0) as u64;
    unit.min(cap)
}

pub fn gpt(gfmc_pages: f64, rss_pages: f64) -> f64 {
    if rss_pages <= gfmc_pages || rss_pages <= 0.0 {
        1.0
    } else {
        gfmc_pages / rss_pages
    }
}

/// Eq. 3: demand = alloc + (GPT - FTHR) RSS ln^2(RSS), RSS and the result in GiB, clamped to
/// [0, RSS].
pub fn demand_gib(alloc_gib: f64, gpt: f64, fthr: f64, rss_gib: f64) -> f64 {
    let l = rss_gib.max(1e-9).ln();
    (alloc_gib + (gpt - fthr) * rss_gib * l * l).clamp(0.0, rss_gib)
}

/// Eq. 2 as an EMA over the quanta's hit ratios (eq. 1).
pub fn fthr_update(prev: Option<f64>, hits_fast: f64, hits_slow: f64, alpha: f64) -> Option<f64> {
    let n = hits_fast + hits_slow;
    if n <= 0.0 {
        return prev;
    }
    let h = hits_fast / n;
    Some(match prev {
        Some(f) => alpha * h + (1.0 - alpha) * f,
        None => h,
    })
}

/// A queue entry: level (Table 1 stars, raised by feedback), heat x 4 when queued, page, packed
/// in one `u64` that orders as the tuple (level, heat x 4, Reverse(page)) does: the level in
/// the top 3 bits, heat x 4 in the next 29 (saturating: entries above 2^29 - 1 tie on it and
/// fall back to page order), and u32::MAX - page in the low 32 (pages are below 2^32,
/// [`Vulcan::reserve`] refuses a larger page space). 8 bytes an entry, not 16.
type QEntry = u64;

const KEY_MAX: u32 = (1 << 29) - 1;

fn qentry(level: u32, key: u32, page: u64) -> QEntry {
    debug_assert!(level < 8 && page <= u32::MAX as u64);
    ((level as u64) << 61) | ((key.min(KEY_MAX) as u64) << 32) | (u32::MAX as u64 - page)
}

/// The level and page of a queue entry.
fn qentry_parts(e: QEntry) -> (u32, u64) {
    ((e >> 61) as u32, u32::MAX as u64 - (e & u32::MAX as u64))
}

/// Vulcan's per-page record: 13 bytes (one per page of the page space), packed. Whose tenant a
/// promotion in flight counts against is kept beside it (`Vulcan::promoting`), for the few
/// pages in flight.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, packed)]
struct PageRec {
    heat: f32,
    /// The thread of the page's first sample.
    tid: u32,
    /// Sampled loads and stores. Only their ratio is read (Table 1's write-intensive test) and
    /// whether any was sampled. They are exact up to 65,535 samples of a page; when either would
    /// pass `u16::MAX` both halve, so a page sampled that often has its older samples weigh
    /// half in the ratio.
    loads: u16,
    stores: u16,
    /// The queue level the page is queued at (0: not queued, bits 0-2), shared (bit 3), in
    /// flight (bit 4).
    bits: u8,
}

const _: () = assert!(std::mem::size_of::<PageRec>() == 13);

const QLEVEL: u8 = 0b111;
const SHARED: u8 = 1 << 3;
const INFLIGHT: u8 = 1 << 4;

impl PageRec {
    fn qlevel(&self) -> u32 {
        (self.bits & QLEVEL) as u32
    }
    fn set_qlevel(&mut self, l: u32) {
        debug_assert!(l <= QLEVEL as u32);
        self.bits = (self.bits & !QLEVEL) | l as u8;
    }
    fn shared(&self) -> bool {
        self.bits & SHARED != 0
    }
    fn inflight(&self) -> bool {
        self.bits & INFLIGHT != 0
    }
    fn set_inflight(&mut self, on: bool) {
        if on {
            self.bits |= INFLIGHT;
        } else {
            self.bits &= !INFLIGHT;
        }
    }
    fn sampled(&self) -> bool {
        self.loads as u32 + self.stores as u32 > 0
    }
    /// Count a sampled load or store.
    fn count(&mut self, store: bool) {
        let (l, s) = (self.loads, self.stores);
        if l == u16::MAX || s == u16::MAX {
            self.loads = l / 2;
            self.stores = s / 2;
        }
        if store {
            self.stores += 1;
        } else {
            self.loads += 1;
        }
    }
    fn write_ratio(&self) -> f64 {
        let (l, s) = (self.loads as f64, self.stores as f64);
        s / (l + s).max(1.0)
    }
    /// Table 1 priority (4 best) of the page's queue before feedback.
    fn base_level(&self, write_frac: f64) -> u32 {
        match (self.shared(), self.write_intensive(write_frac)) {
            (false, false) => 4,
            (true, false) => 3,
            (false, true) => 2,
            (true, true) => 1,
        }
    }
    fn write_intensive(&self, write_frac: f64) -> bool {
        self.write_ratio() > write_frac
    }
}

#[derive(Clone, Debug, Default)]
struct TenantState {
    seen: bool,
    fthr: Option<f64>,
    fast: f64,
    slow: f64,
    alloc_pages: u64,
    credits: i64,
    gpt: f64,
    demand_pages: u64,
    inflight_up: u64,
}

pub struct Vulcan {
    name: String,
    quantum_ns: f64,
    alpha: f64,
    unit_mb: f64,
    init_credits: i64,
    sample_period: u64,
    migrate_ns: f64,
    budget_mb: f64,
    hot_threshold: f64,
    write_frac: f64,
    replicate: bool,
    shadow: bool,
    partition: bool,
    rng: Rng,
    res: Residency,
    pages: Dense<PageRec>,
    /// Per tenant: its promotion queues as one heap by (level, heat x 4, page).
    queues: Vec<BinaryHeap<QEntry>>,
    cooling_quanta: u64,
    /// Per tenant: cached demotion victims (coldest last) and whether they were refreshed in
    /// this migration round.
    colds: Vec<Vec<(f32, u64)>>,
    /// The promotions in flight: page -> the slot of the tenant whose fast-tier share
    /// (`TenantState::inflight_up`) it counts against until its result arrives or it is freed.
    promoting: FxHashMap<u32, u32>,
    cold_fresh: Vec<bool>,
    tenants: Vec<TenantState>,
    /// Each tenant's pid at its slot in the per-tenant tables, in the order tenants were first
    /// seen (the simulator's pids are 0, 1, ... in that order; a real host's are any numbers).
    /// Looked up by a linear scan: tenants are few, and it is on the per-sample path.
    slots: Vec<Pid>,
    /// A tenant's pages from the backend (`Mechanism::stride_pages`) when no object names them.
    scratch: Vec<PageId>,
    next_quantum: f64,
    next_migrate: f64,
    stats: Stats,
}

#[derive(Clone, Debug, Default)]
struct Stats {
    quanta: u64,
    /// The unit Algorithm 1 worked in at the last quantum (see [`effective_unit`]).
    unit_pages: u64,
    transfers: u64,
    promotions: [u64; 5],
    demotions: u64,
    sync: u64,
}

impl Vulcan {
    pub fn new(p: &Params) -> Self {
        Vulcan {
            name: spec_name(INFO.name, P, p),
            quantum_ns: p.float("quantum_ms") * 1e6,
            alpha: p.float("alpha"),
            unit_mb: p.float("unit_mb"),
            init_credits: p.int("init_credits"),
            sample_period: p.u64("sample_period"),
            migrate_ns: p.float("migrate_ms") * 1e6,
            budget_mb: p.float("budget_mb"),
            hot_threshold: p.float("hot_threshold"),
            write_frac: p.float("write_frac"),
            replicate: p.bool("replicate"),
            shadow: p.bool("shadow"),
            partition: p.bool("partition"),
            rng: Rng::derive(0x7c1ca, 3),
            res: Residency::default(),
            pages: Dense::new(PageRec::default()),
            queues: Vec::new(),
            cooling_quanta: p.u64("cooling_quanta"),
            colds: Vec::new(),
            promoting: FxHashMap::default(),
            cold_fresh: Vec::new(),
            tenants: Vec::new(),
            slots: Vec::new(),
            scratch: Vec::new(),
            next_quantum: 0.0,
            next_migrate: 0.0,
            stats: Stats::default(),
        }
    }

    /// The tenant's slot in the per-tenant tables, made when its pid is first seen.
    fn slot(&mut self, pid: Pid) -> usize {
        if let Some(i) = self.slots.iter().position(|&p| p == pid) {
            return i;
        }
        let i = self.slots.len();
        self.slots.push(pid);
        self.tenants.push(TenantState::default());
        self.queues.push(BinaryHeap::new());
        self.colds.push(Vec::new());
        self.cold_fresh.push(false);
        i
    }

    /// FTHR, GPT, demand, then Algorithm 1 over the live tenants.
    fn repartition(&mut self, tel: &Telemetry) {
        self.stats.quanta += 1;
        let cap = tel.tier(FAST).map_or(0, |t| t.capacity_pages);
        let gib = (1u64 << 30) as f64 / tel.page_bytes.max(1) as f64; // pages per GiB
        let live: Vec<(usize, &tierkit_core::telemetry::ProcInfo)> = tel
            .processes
            .iter()
            .filter(|p| p.alive)
            .map(|p| (self.slot(p.pid), p))
            .collect();
        if live.is_empty() {
            return;
        }
        let gfmc_pages = cap as f64 / live.len() as f64;
        let unit = effective_unit(self.unit_mb, tel.page_bytes, gfmc_pages);
        self.stats.unit_pages = unit;
        let gfmc = (gfmc_pages as u64) / unit;
        let mut ts = Vec::with_capacity(live.len());
        for &(i, p) in &live {
            let init_credits = self.init_credits;
            let st = &mut self.tenants[i];
            if !st.seen {
                st.seen = true;
                st.credits = init_credits;
                st.alloc_pages = gfmc_pages as u64;
            }
            st.fthr = fthr_update(st.fthr, st.fast, st.slow, self.alpha);
            st.fast = 0.0;
            st.slow = 0.0;
            let rss = p.rss_pages.iter().sum::<u64>() as f64;
            st.gpt = gpt(gfmc_pages, rss);
            let fthr = st.fthr.unwrap_or(st.gpt);
            let d = demand_gib(st.alloc_pages as f64 / gib, st.gpt, fthr, rss / gib);
            st.demand_pages = (d * gib) as u64;
            ts.push(Tenant {
                lc: p.class == QosClass::LatencyCritical,
                demand: st.demand_pages.div_ceil(unit),
                alloc: st.alloc_pages / unit,
                credits: st.credits,
            });
        }
        self.stats.transfers += cbfrp(&mut ts, gfmc, &mut self.rng);
        for (k, &(i, _)) in live.iter().enumerate() {
            let st = &mut self.tenants[i];
            st.credits = ts[k].credits;
            st.alloc_pages = (ts[k].alloc * unit).min(cap);
        }
    }

    /// Up to `max` of this tenant's fast-tier pages that are not in flight, coldest first: its
    /// objects' pages (the simulator), else every present page the backend names for it
    /// (tierkitd: `Mechanism::stride_pages` at a one-page stride).
    fn coldest(
        &mut self,
        tel: &Telemetry,
        mech: &dyn Mechanism,
        pid: u32,
        max: usize,
    ) -> Vec<(f32, u64)> {
        let mut colds = Vec::new();
        let by = |a: &(f32, u64), b: &(f32, u64)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        // The `max` coldest by a total order (heat, then page), so the set is the same however
        // the pages are cut: at most 2 x max entries are held, cut to the max coldest when full,
        // rather than one entry per fast-tier page of the tenant.
        let cut = |colds: &mut Vec<(f32, u64)>| {
            if colds.len() > max {
                colds.select_nth_unstable_by(max, by);
                colds.truncate(max);
            }
        };
        let keep = |pg: u64, colds: &mut Vec<(f32, u64)>| {
            let r = self.pages.get(PageId(pg));
            if !r.inflight() && self.res.tier(PageId(pg)) == Some(FAST) {
                if colds.len() >= 2 * max.max(1) {
                    cut(colds);
                }
                colds.push((r.heat, pg));
            }
        };
        let mut named = false;
        for o in tel.objects.iter().filter(|o| o.pid == pid && o.live) {
            named = true;
            for pg in o.first_page.0..o.first_page.0 + o.pages {
                keep(pg, &mut colds);
            }
        }
        if !named && mech.stride_pages(pid, tel.page_bytes.max(1), &mut self.scratch) {
            for &pg in &self.scratch {
                keep(pg.0, &mut colds);
            }
        }
        cut(&mut colds);
        colds.sort_unstable_by(by);
        colds
    }

    /// The tenant's next demotion victim: from a coldest-first list built at most once per
    /// quantum (heats change at quantum boundaries), when first needed.
    fn next_cold(
        &mut self,
        tel: &Telemetry,
        mech: &dyn Mechanism,
        pid: u32,
        budget: u64,
    ) -> Option<(f32, u64)> {
        let i = self.slot(pid);
        loop {
            if self.colds[i].is_empty() {
                if self.cold_fresh[i] {
                    return None;
                }
                let mut v = self.coldest(tel, mech, pid, 20 * budget.max(1) as usize);
                v.reverse();
                self.colds[i] = v;
                self.cold_fresh[i] = true;
            }
            let (_, pg) = self.colds[i].pop()?;
            let r = self.pages.get(PageId(pg));
            if !r.inflight() && self.res.tier(PageId(pg)) == Some(FAST) {
                return Some((r.heat, pg));
            }
        }
    }

    /// Each tenant's own migration work within its partition and budget: its own promotion
    /// queues, no global hot list.
    fn migrate(&mut self, tel: &Telemetry, mech: &dyn Mechanism, out: &mut Vec<Action>) {
        let budget = (self.budget_mb * 1048576.0 / tel.page_bytes.max(1) as f64) as u64;
        let cap = tel.tier(FAST).map_or(0, |t| t.capacity_pages);
        let mut fast_free = cap.saturating_sub(self.res.count(FAST));
        let thr = self.hot_threshold.max(1e-9);
        for p in tel.processes.iter().filter(|p| p.alive) {
            let pid = p.pid;
            let i = self.slot(pid);
            let limit = if self.partition && self.tenants[i].seen {
                self.tenants[i].alloc_pages
            } else {
                cap
            };
            let mut fast_now =
                p.rss_pages.first().copied().unwrap_or(0) + self.tenants[i].inflight_up;
            let mut left = budget;
            // Over the partition (it shrank): demote the coldest.
            while fast_now > limit && left > 0 {
                let Some((_, pg)) = self.next_cold(tel, mech, pid, budget) else {
                    break;
                };
                self.demote(pg, out);
                fast_now -= 1;
                fast_free += 1;
                left -= 1;
            }
            // The tenant's queues, highest level first, then heat; entries whose page left the
            // slow tier, is in flight, cooled below the threshold or was re-queued at a higher
            // level (multi-level feedback) are dropped as they surface.
            while left > 0 {
                let Some(&top) = self.queues[i].peek() else {
                    break;
                };
                let (lvl, pg) = qentry_parts(top);
                let r = *self.pages.get(PageId(pg));
                let slow = matches!(self.res.tier(PageId(pg)), Some(t) if t != FAST);
                if r.qlevel() != lvl || r.inflight() || !slow || (r.heat as f64) < thr {
                    self.queues[i].pop();
                    if r.qlevel() == lvl {
                        self.pages.get_mut(PageId(pg)).set_qlevel(0);
                    }
                    continue;
                }
                let heat = r.heat;
                if fast_now >= limit || fast_free == 0 {
                    // Make room with a clearly colder page of this tenant (below the threshold
                    // and under half the candidate's heat), else stop.
                    match self.next_cold(tel, mech, pid, budget) {
                        Some((h, victim))
                            if (h as f64) < thr && 2.0 * (h as f64) < heat as f64 && left >= 2 =>
                        {
                            self.demote(victim, out);
                            left -= 1;
                            fast_now -= 1;
                            fast_free += 1;
                        }
                        _ => break,
                    }
                }
                self.queues[i].pop();
                let mode = if r.write_intensive(self.write_frac) {
                    self.stats.sync += 1;
                    MigrateMode::Sync { pid, tid: r.tid }
                } else {
                    MigrateMode::Async
                };
                out.push(Action::Migrate {
                    page: PageId(pg),
                    to: FAST,
                    mode,
                    keep_shadow: self.shadow,
                });
                let rec = self.pages.get_mut(PageId(pg));
                rec.set_inflight(true);
                rec.set_qlevel(0);
                self.tenants[i].inflight_up += 1;
                self.promoting.insert(pg as u32, i as u32);
                self.stats.promotions[lvl as usize] += 1;
                fast_now += 1;
                fast_free = fast_free.saturating_sub(1);
                left -= 1;
            }
        }
    }

    /// Page `p`'s promotion, if one is in flight, no longer counts against its tenant's share
    /// (its result came, or the page was freed).
    fn promotion_ended(&mut self, p: PageId) {
        if let Some(i) = self.promoting.remove(&(p.0 as u32)) {
            let st = &mut self.tenants[i as usize];
            st.inflight_up = st.inflight_up.saturating_sub(1);
        }
    }

    fn demote(&mut self, pg: u64, out: &mut Vec<Action>) {
        out.push(Action::Migrate {
            page: PageId(pg),
            to: SLOW,
            mode: MigrateMode::Async,
            keep_shadow: false,
        });
        self.pages.get_mut(PageId(pg)).set_inflight(true);
        self.stats.demotions += 1;
    }
}

impl Policy for Vulcan {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn needs(&self) -> TelemetryNeeds {
        TelemetryNeeds {
            sampling: Some((self.sample_period, SampleFilter::AllMisses)),
            quantum_ns: self.quantum_ns as u64,
            ..Default::default()
        }
    }

    /// Per page: its tier (1 B) and its record ([`PageRec`], 13 B); the promotion queues at
    /// one 8 B entry a page (twice, for the heaps' growth; a page is queued again only when
    /// its level rises); the demotion candidates at one 16 B entry per fast-tier page (twice);
    /// the promotions in flight, at most one per fast-tier page (they count against it).
    fn memory_bytes(&self, space: &PageSpace) -> u64 {
        Residency::bytes_for(space.pages)
            + Dense::<PageRec>::bytes_for(space.pages)
            + 2 * bytes_of::<QEntry>(space.pages)
            + 2 * bytes_of::<(f32, u64)>(space.fast_pages())
            + hash_map_bytes::<u32, u32>(space.fast_pages())
    }

    fn reserve(&mut self, space: &PageSpace) -> tierkit_core::Result<()> {
        // a queue entry holds its page in 32 bits
        tierkit_core::memory::check_page_ids(
            space.pages,
            u32::MAX as u64 + 1,
            "Vulcan's promotion queues",
        )?;
        self.res.reserve(space.pages)?;
        self.pages.reserve(space.pages, "Vulcan's page records")
    }

    fn allocated_bytes(&self) -> u64 {
        self.res.bytes()
            + self.pages.bytes() as u64
            + hash_map_capacity_bytes::<u32, u32>(self.promoting.capacity() as u64)
            + self
                .queues
                .iter()
                .map(|q| bytes_of::<QEntry>(q.capacity() as u64))
                .sum::<u64>()
            + self
                .colds
                .iter()
                .map(|c| bytes_of::<(f32, u64)>(c.capacity() as u64))
                .sum::<u64>()
    }

    fn init(&mut self, tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        out.push(Action::SetSampling {
            period: self.sample_period,
            filter: SampleFilter::AllMisses,
        });
        for p in &tel.processes {
            self.slot(p.pid);
        }
        for p in &tel.processes {
            out.push(Action::SetTlbScope {
                pid: p.pid,
                per_thread: self.replicate,
            });
        }
        self.next_quantum = tel.now_ns as f64 + self.quantum_ns;
        self.next_migrate = tel.now_ns as f64 + self.migrate_ns;
    }

    fn step(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        self.res.observe(tel);
        for p in &tel.processes {
            self.slot(p.pid);
        }
        for m in &tel.migrations {
            let r = self.pages.get_mut(m.page);
            if r.inflight() {
                r.set_inflight(false);
                if m.to == FAST {
                    self.promotion_ended(m.page);
                }
            }
        }
        for e in &tel.freed {
            self.pages.set(e.page, PageRec::default());
            // a promotion in flight ends with the page: its tenant has the room back
            self.promotion_ended(e.page);
        }
        let thr = self.hot_threshold.max(1e-9);
        for s in &tel.samples {
            let i = self.slot(s.pid);
            let st = &mut self.tenants[i];
            if s.tier == FAST {
                st.fast += 1.0;
            } else {
                st.slow += 1.0;
            }
            let r = self.pages.get_mut(s.page);
            if !r.sampled() {
                r.tid = s.tid;
            }
            r.heat += 1.0;
            r.count(s.is_store);
            if { r.tid } != s.tid {
                r.bits |= SHARED;
            }
            if s.tier != FAST && !r.inflight() && r.heat as f64 >= thr {
                // Table 1 level, raised one per doubling of heat (multi-level feedback)
                let rise = (r.heat as f64 / thr).log2().floor().max(0.0) as u32;
                let lvl = (r.base_level(self.write_frac) + rise).min(4);
                if lvl > r.qlevel() {
                    r.set_qlevel(lvl);
                    let key = (r.heat * 4.0) as u32;
                    self.queues[i].push(qentry(lvl, key, s.page.0));
                }
            }
        }
        let now = tel.now_ns as f64;
        if now + 1e-6 >= self.next_quantum {
            self.next_quantum += self.quantum_ns;
            self.repartition(tel);
            self.colds.iter_mut().for_each(|c| c.clear());
            self.cold_fresh.iter_mut().for_each(|f| *f = false);
            for p in tel.processes.iter().filter(|p| p.alive) {
                let i = self.slot(p.pid);
                let st = &self.tenants[i];
                if self.partition && st.seen {
                    out.push(Action::SetPartition {
                        pid: p.pid,
                        fast_pages: Some(st.alloc_pages),
                    });
                }
            }
            // Cooling: halve every page's heat every `cooling_quanta` quanta.
            if self.stats.quanta.is_multiple_of(self.cooling_quanta) {
                for i in 0..self.pages.len() as u64 {
                    let r = self.pages.get_mut(PageId(i));
                    r.heat *= 0.5;
                    if r.heat < 0.25 {
                        r.heat = 0.0;
                    }
                }
            }
        }
        if now + 1e-6 >= self.next_migrate {
            self.next_migrate += self.migrate_ns;
            self.migrate(tel, &*mech, out);
        }
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let s = &self.stats;
        let mut v = vec![
            ("quanta".to_string(), s.quanta as f64),
            ("cbfrp_transfers".into(), s.transfers as f64),
            ("unit_pages".into(), s.unit_pages as f64),
            ("demotions_issued".into(), s.demotions as f64),
            ("sync_promotions".into(), s.sync as f64),
            ("table_bytes".into(), self.pages.bytes() as f64),
        ];
        for lvl in 1..=4 {
            v.push((format!("promotions_queue{lvl}"), s.promotions[lvl] as f64));
        }
        // per tenant in pid order (the simulator's pids are its process indices)
        let mut by_pid: Vec<(Pid, usize)> = self.slots.iter().copied().zip(0..).collect();
        by_pid.sort_unstable();
        for (pid, i) in by_pid {
            let t = &self.tenants[i];
            v.push((format!("p{pid}.alloc_pages"), t.alloc_pages as f64));
            v.push((format!("p{pid}.credits"), t.credits as f64));
            v.push((format!("p{pid}.fthr"), t.fthr.unwrap_or(f64::NAN)));
            v.push((format!("p{pid}.gpt"), t.gpt));
            v.push((format!("p{pid}.demand_pages"), t.demand_pages as f64));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real host's backend as tierkitd is one: pids are any numbers, no objects, and a
    /// tenant's pages come from `stride_pages`.
    struct RealHost<'a> {
        m: &'a crate::testbed::Machine,
    }

    impl Mechanism for RealHost<'_> {
        fn tier_of(&self, page: PageId) -> Option<tierkit_core::TierId> {
            self.m.tier.get(page.0 as usize).copied().flatten()
        }
        fn test_and_clear_accessed(&mut self, pages: &[PageId], out: &mut Vec<bool>) {
            out.clear();
            out.resize(pages.len(), false);
        }
        fn stride_pages(&self, pid: Pid, _stride: u64, out: &mut Vec<PageId>) -> bool {
            out.clear();
            for (i, (&t, &o)) in self.m.tier.iter().zip(&self.m.owner).enumerate() {
                if t.is_some() && o == pid {
                    out.push(PageId(i as u64));
                }
            }
            true
        }
    }

    #[test]
    fn a_page_space_past_32_bit_ids_is_refused() {
        let mut v = Vulcan::new(&crate::testbed::params("vulcan", P, &[]));
        let space = PageSpace::new(1 << 33, vec![1 << 20, 1 << 33]);
        let e = v.reserve(&space).unwrap_err();
        assert!(
            e.to_string()
                .contains("Vulcan's promotion queues index pages in 32 bits"),
            "{e}"
        );
    }

    /// Vulcan at 10 ms quanta and migration rounds, sampling every access, with a 4 KiB unit:
    /// decisions within a few test epochs.
    fn quick_vulcan() -> Vulcan {
        Vulcan::new(&crate::testbed::params(
            "vulcan",
            P,
            &[
                ("quantum_ms", "10"),
                ("migrate_ms", "10"),
                ("sample_period", "1"),
                ("unit_mb", "0.004"),
            ],
        ))
    }

    /// Vulcan on a real host (tierkitd): pids 4242 (LC, 60 pages, all on the slow tier) and 77
    /// (BE, 140 pages, 100 of them filling the fast tier), both sampled on every page every
    /// epoch. A hotness ranking would leave the fast tier to the BE tenant; Vulcan's partition
    /// gives each its equal share (50 pages), the LC tenant first, finding the BE tenant's
    /// demotion victims through the backend's page list since no object names them.
    #[test]
    fn on_a_real_host_the_lc_tenant_gets_its_share_without_objects_or_small_pids() {
        use crate::testbed::Machine;
        use tierkit_core::telemetry::{ProcInfo, Sample};
        let (lc, be) = (4242u32, 77u32);
        let mut m = Machine::new(&[100, 1000]);
        for p in 0..60 {
            m.alloc(p, SLOW, lc);
        }
        for p in 60..160 {
            m.alloc(p, FAST, be);
        }
        for p in 160..200 {
            m.alloc(p, SLOW, be);
        }
        let mut pol = quick_vulcan();
        let procs = |m: &Machine| {
            [(lc, QosClass::LatencyCritical), (be, QosClass::BestEffort)]
                .iter()
                .map(|&(pid, class)| {
                    let mut rss = vec![0u64; 2];
                    for (t, o) in m.tier.iter().zip(&m.owner) {
                        if let (Some(t), true) = (t, *o == pid) {
                            rss[*t as usize] += 1;
                        }
                    }
                    ProcInfo {
                        pid,
                        name: format!("p{pid}"),
                        class,
                        alive: true,
                        threads: 1,
                        rss_pages: rss,
                        demote_promoted: 0,
                        promotions: 0,
                        demotions: 0,
                        migration_enabled: true,
                    }
                })
                .collect::<Vec<_>>()
        };
        m.init(&mut pol);
        let mut out = Vec::new();
        for _ in 0..400 {
            let samples = (0..200u64)
                .map(|p| Sample {
                    pid: m.owner[p as usize],
                    tid: m.owner[p as usize],
                    ..crate::testbed::read(p)
                })
                .collect();
            let mut tel = m.telemetry(samples);
            tel.processes = procs(&m);
            out.clear();
            pol.step(&tel, &mut RealHost { m: &m }, &mut out);
            m.apply(&out);
        }
        let fast = |pid| procs(&m).iter().find(|p| p.pid == pid).unwrap().rss_pages[0];
        let s: std::collections::BTreeMap<_, _> = pol.stats().into_iter().collect();
        assert!(fast(lc) >= 45, "LC {} of 60 pages fast {s:?}", fast(lc));
        assert!(fast(be) <= 55, "BE {} pages fast", fast(be));
        assert!(s.contains_key("p4242.alloc_pages") && s.contains_key("p77.alloc_pages"));
        assert!(s["demotions_issued"] >= 40.0, "{s:?}");
    }

    /// A page freed while its promotion is in flight no longer counts against its tenant's
    /// share of the fast tier: its result (if one comes) arrives after the free, when the page's
    /// record no longer says it is in flight.
    #[test]
    fn a_promotion_freed_in_flight_gives_its_tenant_the_room_back() {
        use crate::testbed::Machine;
        use tierkit_core::telemetry::ProcInfo;
        let pid = 7u32;
        let mut m = Machine::new(&[100, 1000]);
        for p in 0..20 {
            m.alloc(p, SLOW, pid);
        }
        let mut pol = quick_vulcan();
        let proc_info = |m: &Machine| ProcInfo {
            pid,
            name: "p".into(),
            class: QosClass::BestEffort,
            alive: true,
            threads: 1,
            rss_pages: vec![m.used(FAST), m.used(SLOW)],
            demote_promoted: 0,
            promotions: 0,
            demotions: 0,
            migration_enabled: true,
        };
        m.init(&mut pol);
        let mut out = Vec::new();
        for _ in 0..50 {
            if !pol.promoting.is_empty() {
                break;
            }
            let samples = (0..20u64)
                .map(|p| tierkit_core::telemetry::Sample {
                    pid,
                    tid: 1,
                    ..crate::testbed::read(p)
                })
                .collect();
            let mut tel = m.telemetry(samples);
            tel.processes = vec![proc_info(&m)];
            out.clear();
            pol.step(&tel, &mut m.mech(), &mut out);
            m.apply(&out);
        }
        let flying: Vec<u32> = pol.promoting.keys().copied().collect();
        assert!(!flying.is_empty(), "Vulcan promoted nothing");
        let i = pol.slot(pid);
        assert_eq!(pol.tenants[i].inflight_up, flying.len() as u64);
        // the pages are freed, and the epoch's telemetry carries the frees before the results
        for &p in &flying {
            m.free(p as u64);
        }
        let mut tel = m.telemetry(Vec::new());
        let results = std::mem::take(&mut tel.migrations);
        tel.processes = vec![proc_info(&m)];
        out.clear();
        pol.step(&tel, &mut m.mech(), &mut out);
        assert_eq!(pol.tenants[i].inflight_up, 0);
        assert!(pol.promoting.is_empty());
        let mut tel = m.telemetry(Vec::new());
        tel.migrations = results;
        tel.processes = vec![proc_info(&m)];
        out.clear();
        pol.step(&tel, &mut m.mech(), &mut out);
        assert_eq!(pol.tenants[i].inflight_up, 0);
    }

    fn t(lc: bool, demand: u64) -> Tenant {
        Tenant {
            lc,
            demand,
            alloc: 0,
            credits: 100,
        }
    }

    #[test]
    fn lc_borrowers_are_served_first() {
        // GFMC 10 each; one donor with 4 spare units; an LC and a BE borrower want 5 more each.
        let mut ts = vec![t(false, 15), t(true, 15), t(false, 6)];
        let n = cbfrp(&mut ts, 10, &mut Rng::new(1));
        assert_eq!(n, 4);
        assert_eq!(ts[1].alloc, 14, "the LC borrower gets every spare unit");
        assert_eq!(ts[0].alloc, 10);
        assert_eq!(ts[2].alloc, 6);
        assert_eq!(ts[1].credits, 96);
        assert_eq!(ts[2].credits, 104);
    }

    #[test]
    fn the_donor_with_fewest_credits_gives() {
        let mut ts = vec![t(false, 12), t(false, 5), t(false, 5)];
        ts[1].credits = 50;
        ts[2].credits = 52;
        cbfrp(&mut ts, 10, &mut Rng::new(1));
        // Two units: both from donor 1 (50 -> 51 credits, still below 52), then ties go by
        // fewest credits: 51 < 52, so donor 1 gives the second too.
        assert_eq!(ts[1].credits, 52);
        assert_eq!(ts[2].credits, 52);
        assert_eq!(ts[0].alloc, 12);
        assert_eq!(ts[1].alloc, 8, "donor 1 keeps 5 + its 3 unlent units");
        assert_eq!(ts[2].alloc, 10);
    }

    #[test]
    fn lc_takes_from_be_above_gfmc_when_no_donor_is_left() {
        // A BE tenant holds 15 units from earlier quanta (the donor's 5), the LC tenant wants 15:
        // no surplus is left, so the LC borrower takes units from the BE tenant above GFMC
        // (Algorithm 1 lines 11-13) until it is back at GFMC.
        let mut ts = vec![t(true, 15), t(false, 15), t(false, 5)];
        ts[0].alloc = 10;
        ts[1].alloc = 15;
        let n = cbfrp(&mut ts, 10, &mut Rng::new(1));
        assert_eq!(n, 5);
        assert_eq!((ts[0].alloc, ts[1].alloc, ts[2].alloc), (15, 10, 5));
        assert_eq!((ts[0].credits, ts[1].credits), (95, 105));
    }

    #[test]
    fn a_donor_gets_its_share_back_first_from_be_holdings() {
        // The former donor now wants its whole share: the BE tenant above GFMC gives back.
        let mut ts = vec![t(false, 20), t(false, 10)];
        ts[0].alloc = 15;
        ts[1].alloc = 5;
        cbfrp(&mut ts, 10, &mut Rng::new(1));
        assert_eq!((ts[0].alloc, ts[1].alloc), (10, 10));
    }

    #[test]
    fn be_borrower_does_not_take_from_lc() {
        let mut ts = vec![t(true, 10), t(false, 30)];
        cbfrp(&mut ts, 10, &mut Rng::new(1));
        assert_eq!((ts[0].alloc, ts[1].alloc), (10, 10));
    }

    #[test]
    fn the_unit_shrinks_when_an_equal_share_holds_fewer_than_64_units() {
        // 16 MiB of 4 KiB pages = 4096 pages while a share holds 64 of them or more
        assert_eq!(effective_unit(16.0, 4096, 1e6), 4096);
        assert_eq!(effective_unit(16.0, 4096, 64.0 * 4096.0), 4096);
        // a 1 MiB fast tier shared by three tenants: 85 pages each, one page per unit
        assert_eq!(effective_unit(16.0, 4096, 256.0 / 3.0), 1);
        assert_eq!(effective_unit(16.0, 4096, 6400.0), 100);
        // never below a page, even with no share at all
        assert_eq!(effective_unit(16.0, 4096, 0.0), 1);
    }

    #[test]
    fn fthr_is_an_ema_with_alpha_point_eight() {
        let f = fthr_update(None, 50.0, 50.0, 0.8).unwrap();
        assert!((f - 0.5).abs() < 1e-12);
        let f = fthr_update(Some(f), 100.0, 0.0, 0.8).unwrap();
        assert!((f - 0.9).abs() < 1e-12, "0.8 * 1 + 0.2 * 0.5");
        assert_eq!(
            fthr_update(Some(0.3), 0.0, 0.0, 0.8),
            Some(0.3),
            "no samples: unchanged"
        );
    }

    #[test]
    fn demand_grows_when_under_target_and_shrinks_when_over() {
        let (gfmc, rss) = (2.0, 4.0);
        let g = gpt(gfmc, rss);
        assert_eq!(g, 0.5);
        assert_eq!(gpt(4.0, 3.0), 1.0, "share covers the RSS");
        let up = demand_gib(2.0, g, 0.4, rss);
        let down = demand_gib(2.0, g, 0.6, rss);
        let l = 4f64.ln();
        assert!((up - (2.0 + 0.1 * 4.0 * l * l)).abs() < 1e-9);
        assert!((down - (2.0 - 0.1 * 4.0 * l * l)).abs() < 1e-9);
        assert_eq!(demand_gib(2.0, 1.0, 0.0, rss), rss, "clamped to the RSS");
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            /// A packed queue entry orders as the tuple (level, heat x 4, Reverse(page)) it
            /// replaced, and gives its level and page back.
            #[test]
            fn packed_queue_entries_order_as_the_tuples(
                a in (1u32..5, 0u32..KEY_MAX, 0u64..=u32::MAX as u64),
                b in (1u32..5, 0u32..KEY_MAX, 0u64..=u32::MAX as u64),
                near in any::<bool>(),
            ) {
                // half the cases share the level and key, so the page decides
                let b = if near { (a.0, a.1, b.2) } else { b };
                let tuple = |t: (u32, u32, u64)| (t.0, t.1, std::cmp::Reverse(t.2));
                prop_assert_eq!(
                    qentry(a.0, a.1, a.2).cmp(&qentry(b.0, b.1, b.2)),
                    tuple(a).cmp(&tuple(b))
                );
                prop_assert_eq!(qentry_parts(qentry(a.0, a.1, a.2)), (a.0, a.2));
            }

            /// Narrow load and store counts give the write-intensive test of exact counts
            /// below 2^16 samples; beyond, a steady mix keeps its ratio to within one
            /// pattern's share of the halved counts (the samples since the last halving weigh
            /// twice the older ones).
            #[test]
            fn narrow_counts_keep_the_write_ratio(
                stores in proptest::collection::vec(any::<bool>(), 1..400),
                repeat in 1u32..400,
                write_frac in 0.0f64..1.0,
            ) {
                let mut r = PageRec::default();
                let (mut l, mut s) = (0u64, 0u64);
                for _ in 0..repeat {
                    for &st in &stores {
                        r.count(st);
                        if st { s += 1 } else { l += 1 }
                    }
                }
                let exact = s as f64 / (l + s) as f64;
                prop_assert!(r.sampled());
                if l + s < u16::MAX as u64 {
                    prop_assert_eq!(r.write_ratio(), exact);
                    prop_assert_eq!(r.write_intensive(write_frac), exact > write_frac);
                } else {
                    let tol = (stores.len() + 2) as f64 / 32767.0;
                    prop_assert!((r.write_ratio() - exact).abs() <= tol, "{} vs {}", r.write_ratio(), exact);
                }
            }
            /// Fast-tier units are conserved: no tenant ends above its demand unless it kept its
            /// own unlent share, the total never exceeds n x GFMC, and credits sum is unchanged.
            #[test]
            fn cbfrp_conserves_units_and_credits(
                demands in proptest::collection::vec((any::<bool>(), 0u64..60, 0u64..60), 1..6),
                gfmc in 1u64..30,
                seed in 0u64..1000,
            ) {
                let mut ts: Vec<Tenant> = demands.iter().map(|&(lc, d, prev)| Tenant { lc, demand: d, alloc: prev, credits: 10 }).collect();
                let c0: i64 = ts.iter().map(|t| t.credits).sum();
                let n = cbfrp(&mut ts, gfmc, &mut tierkit_core::rng::Rng::new(seed));
                let total: u64 = ts.iter().map(|t| t.alloc).sum();
                prop_assert!(total <= gfmc * ts.len() as u64);
                prop_assert_eq!(ts.iter().map(|t| t.credits).sum::<i64>(), c0);
                // every borrower got at most its demand; every tenant at least min(demand, GFMC)
                for (t, &(_, d, _)) in ts.iter().zip(&demands) {
                    prop_assert!(t.alloc >= d.min(gfmc));
                    if d > gfmc { prop_assert!(t.alloc <= d); }
                }
                // if all demand fits in the total, everyone is satisfied
                let want: u64 = demands.iter().map(|&(_, d, _)| d).sum();
                if want <= gfmc * ts.len() as u64 {
                    for (t, &(_, d, _)) in ts.iter().zip(&demands) { prop_assert!(t.alloc >= d); }
                } else {
                    let _ = n;
                }
            }
        }
    }
}
