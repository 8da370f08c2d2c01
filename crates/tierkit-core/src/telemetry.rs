//! What a policy may see: only what real hardware and kernels can give, with their semantics.
//! Counter values are deltas over the epoch that just ended.

use crate::{PageEvents, PageId, Pid, Tid, TierId};

/// Static description of a memory tier.
#[derive(Clone, Debug, PartialEq)]
pub struct TierInfo {
    pub id: TierId,
    pub name: String,
    pub capacity_pages: u64,
    pub used_pages: u64,
}

impl TierInfo {
    pub fn free_pages(&self) -> u64 {
        self.capacity_pages.saturating_sub(self.used_pages)
    }
}

/// Uncore counters of one tier for the epoch (CHA/TOR style, demand reads and writes that
/// missed the LLC and were served by this tier).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TierCounters {
    /// LLC misses served by this tier (reads + RFOs).
    pub llc_misses: f64,
    /// MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM / .REMOTE_DRAM read as a counter: retired loads whose
    /// data this tier's memory served. A load whose line a prefetcher brought in (or had in
    /// flight) retires as a cache hit and is not counted; stores are not loads. The event PEBS
    /// samples, so samples x period estimate it (PACT Table 1: the "LLC-misses" of Eq. 1).
    pub l3_miss_loads: f64,
    /// TOR inserts: requests entering the CHA queue for this tier (== llc_misses here).
    pub tor_inserts: f64,
    /// TOR occupancy summed over cycles (Little's law: occupancy = inserts x latency).
    pub tor_occupancy: f64,
    /// Cycles in which at least one request to this tier was outstanding.
    pub tor_not_empty_cycles: f64,
    /// Bytes read from and written to this tier (application + migration + other traffic).
    pub bytes_read: f64,
    pub bytes_written: f64,
}

/// Per-thread core counters for the epoch (names follow Intel's events; Soar/Alto Table 1).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CoreCounters {
    pub pid: Pid,
    pub tid: Tid,
    /// CPU_CLK_UNHALTED.THREAD (c)
    pub cycles: f64,
    /// CYCLE_ACTIVITY.STALLS_L3_MISS (s_LLC)
    pub stalls_l3_miss: f64,
    /// A1: OFFCORE_REQUESTS_OUTSTANDING.CYCLES_WITH_DEMAND_DATA_RD
    pub oro_cycles_with_demand_rd: f64,
    /// A2: OFFCORE_REQUESTS_OUTSTANDING.DEMAND_DATA_RD (occupancy summed over cycles)
    pub oro_demand_rd: f64,
    /// A3: OFFCORE_REQUESTS.DEMAND_DATA_RD (requests)
    pub offcore_demand_rd: f64,
    /// LLC misses of this thread (MEM_LOAD_RETIRED.L3_MISS + RFO misses)
    pub llc_misses: f64,
    /// Retired "operations" of the workload (a user-level progress counter, like retired
    /// instructions scaled to the workload's unit of work).
    pub ops: f64,
}

/// A PEBS-like sample of one LLC-missing access.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    pub page: PageId,
    pub tier: TierId,
    pub is_store: bool,
    pub pid: Pid,
    pub tid: Tid,
    /// Load latency in ns as the sampling hardware reports it (0 when unknown): from the
    /// load's dispatch to its data, the whole of it also where other misses overlap it.
    pub latency_ns: f32,
    /// Exposed latency in ns (0 when unknown): the part of the load's latency that held up
    /// retirement, which other misses in flight did not hide (Sapphire Rapids' timed PEBS
    /// records it per load; PACT §4.3.7). A miss among m overlapping ones exposes about 1/m
    /// of its latency, a dependent one all of it.
    pub exposed_ns: f32,
    /// Time of the sample, ns since start.
    pub time_ns: u64,
}

/// A NUMA hint fault on a page that was marked by the scanner.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HintFault {
    pub page: PageId,
    pub tier: TierId,
    pub pid: Pid,
    pub tid: Tid,
    /// Time from marking to the fault (NBT's hint-fault latency; Colloid's dt for TPP).
    pub time_to_fault_ns: u64,
    pub time_ns: u64,
}

/// Outcome of a migration requested earlier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationOutcome {
    Done,
    /// The destination tier was full.
    NoSpace,
    /// The page does not exist (freed, process exited).
    NoPage,
    /// The page was already in the destination tier.
    AlreadyThere,
    /// Migration is disabled for the page's process (or rate limit reached).
    Refused,
    /// An asynchronous (transactional) copy was aborted because the page was written.
    Aborted,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MigrationResult {
    pub page: PageId,
    pub from: TierId,
    pub to: TierId,
    pub outcome: MigrationOutcome,
    /// A demotion that only remapped a clean shadow copy (no copy, no traffic).
    pub remap: bool,
}

/// Pages that became resident (first touch or allocation) or were freed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageEvent {
    pub page: PageId,
    pub pid: Pid,
    pub tier: TierId,
}

/// A named allocation (object / allocation site) known to the backend: in the simulator from
/// the workload file, on Linux from the allocation shim.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectInfo {
    pub pid: Pid,
    pub name: String,
    pub first_page: PageId,
    pub pages: u64,
    pub live: bool,
}

/// Latency-critical or best-effort (Vulcan).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QosClass {
    LatencyCritical,
    BestEffort,
}

/// Per-process state a kernel exposes.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcInfo {
    pub pid: Pid,
    pub name: String,
    pub class: QosClass,
    pub alive: bool,
    pub threads: u32,
    /// Resident pages per tier.
    pub rss_pages: Vec<u64>,
    /// Cumulative pages demoted that had been promoted before (migration toggling paper).
    pub demote_promoted: u64,
    pub promotions: u64,
    pub demotions: u64,
    /// Whether migration is currently enabled for the process.
    pub migration_enabled: bool,
}

/// Machine constants measured once by calibration (`tierkit calibrate`): the simulator's
/// platform presets carry them, a real host loads them from a calibration file.
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// AOL of the sequential microbenchmark (high MLP) on the fast tier, cycles: Alto's AOL_low.
    pub aol_low_cycles: f64,
    /// AOL of the pointer-chase microbenchmark (MLP 1) on the fast tier, cycles: Alto's AOL_high.
    pub aol_high_cycles: f64,
    /// The slowdown predictor's K = 1 / (a + b / AOL) (Soar/Alto §3.2).
    pub k_a: f64,
    pub k_b: f64,
    /// PACT's per-tier stall coefficient k of S = k * LLC-misses / MLP (PACT §4.2, Eq. 1), in
    /// cycles, indexed by tier; empty when not calibrated.
    pub stall_k_cycles: Vec<f64>,
}

impl Calibration {
    /// K(AOL) of the predictor.
    pub fn k(&self, aol_cycles: f64) -> f64 {
        1.0 / (self.k_a + self.k_b / aol_cycles.max(1e-9))
    }
    /// Predicted slowdown S = P x K(AOL), P = s_LLC / c (Soar/Alto §3.2).
    pub fn predict_slowdown(&self, stalls_l3_miss: f64, cycles: f64, aol_cycles: f64) -> f64 {
        if cycles <= 0.0 {
            return 0.0;
        }
        stalls_l3_miss / cycles * self.k(aol_cycles)
    }
    /// PACT's per-tier stall estimate S = k * LLC-misses / MLP in cycles (PACT §4.2, Eq. 1), or
    /// None when tier `t` has no calibrated k.
    pub fn tier_stall_cycles(&self, t: TierId, llc_misses: f64, mlp: f64) -> Option<f64> {
        let k = *self.stall_k_cycles.get(t as usize)?;
        Some(k * llc_misses / mlp.max(1e-9))
    }
}

/// One epoch's observations.
#[derive(Clone, Debug, Default)]
pub struct Telemetry {
    /// End of the epoch, ns since start.
    pub now_ns: u64,
    pub epoch_ns: u64,
    pub page_bytes: u64,
    pub cpu_ghz: f64,
    pub tiers: Vec<TierInfo>,
    pub tier_counters: Vec<TierCounters>,
    pub cores: Vec<CoreCounters>,
    pub samples: Vec<Sample>,
    pub hint_faults: Vec<HintFault>,
    pub migrations: Vec<MigrationResult>,
    /// Pages that became resident this epoch, in order (stored as runs of consecutive pages).
    pub allocated: PageEvents,
    /// Pages freed this epoch, in order.
    pub freed: PageEvents,
    pub processes: Vec<ProcInfo>,
    pub objects: Vec<ObjectInfo>,
    /// The machine's calibration constants, when known.
    pub calibration: Option<Calibration>,
}

impl Telemetry {
    pub fn tier(&self, t: TierId) -> Option<&TierInfo> {
        self.tiers.get(t as usize)
    }

    /// Per-tier loaded latency in ns by Little's law on the TOR counters of this epoch.
    pub fn tier_latency_ns(&self, t: TierId) -> Option<f64> {
        let c = self.tier_counters.get(t as usize)?;
        if c.tor_inserts <= 0.0 {
            return None;
        }
        Some(c.tor_occupancy / c.tor_inserts / self.cpu_ghz)
    }

    /// Per-tier MLP = occupancy / not-empty cycles (PACT section 4.2).
    pub fn tier_mlp(&self, t: TierId) -> Option<f64> {
        let c = self.tier_counters.get(t as usize)?;
        if c.tor_not_empty_cycles <= 0.0 {
            return None;
        }
        Some(c.tor_occupancy / c.tor_not_empty_cycles)
    }

    /// Amortized offcore latency A1/A3 in cycles over the given threads (all if `pid` is None).
    pub fn aol_cycles(&self, pid: Option<Pid>) -> Option<f64> {
        let (a1, a3) = self
            .cores
            .iter()
            .filter(|c| pid.is_none_or(|p| c.pid == p))
            .fold((0.0, 0.0), |(a1, a3), c| {
                (a1 + c.oro_cycles_with_demand_rd, a3 + c.offcore_demand_rd)
            });
        (a3 > 0.0).then(|| a1 / a3)
    }
}
