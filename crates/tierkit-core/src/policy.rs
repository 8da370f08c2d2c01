//! The policy interface and the registration record each policy file exports.

use crate::action::{Action, SampleFilter};
use crate::memory::PageSpace;
use crate::params::{ParamDef, Params};
use crate::telemetry::{HintFault, Telemetry};
use crate::{PageId, Pid, TierId};

/// Synchronous queries a policy may make of the machine during a step (the simulated machine
/// answers from its page table; Linux from move_pages(2) queries and idle-page tracking).
pub trait Mechanism {
    /// The tier a page is in now, or None when the page does not exist.
    fn tier_of(&self, page: PageId) -> Option<TierId>;
    /// Test and clear the accessed bit of each page (an access-bit scan of those PTEs).
    /// `out` receives one entry per page; pages that do not exist read as not accessed.
    fn test_and_clear_accessed(&mut self, pages: &[PageId], out: &mut Vec<bool>);
    /// The same test made at simulated time `at_ns` (kswapd spreading its work over the epoch,
    /// so a page tested twice in one step is tested at two instants). A backend without a
    /// clock of its own tests now.
    fn test_and_clear_accessed_at(&mut self, pages: &[PageId], at_ns: u64, out: &mut Vec<bool>) {
        let _ = at_ns;
        self.test_and_clear_accessed(pages, out)
    }
    /// kswapd worked on the CPU from `from_ns` to `to_ns` (simulated time). A backend whose
    /// processes share that one CPU with it (the QEMU guest's one vCPU) makes no access in the
    /// span, so an accessed bit kswapd cleared in it reads clear at its next test in it. The
    /// default ignores it (kswapd has a CPU of its own, or the backend is a real kernel).
    fn kernel_ran(&mut self, from_ns: u64, to_ns: u64) {
        let _ = (from_ns, to_ns);
    }
    /// The pages an access-bit scan of process `pid` with a `stride_bytes` stride reads: one
    /// page per stride-aligned stretch of its virtual address space that holds a present page,
    /// in address order (the toggling paper's restart scan walks PTEs at a 2 MiB stride). Fills
    /// `out` and returns true, or returns false when the backend leaves it to the policy (the
    /// simulator: its processes' address spaces are their objects, which `Telemetry` lists).
    fn stride_pages(&self, pid: Pid, stride_bytes: u64, out: &mut Vec<PageId>) -> bool {
        let _ = (pid, stride_bytes, out);
        false
    }
    /// The hint fault `fault` reached numa_migrate_prep (mm/memory.c): the policy tried to
    /// promote its page, so should_numa_migrate_memory set the page's cpupid to the faulting
    /// thread (page_cpupid_xchg_last), whatever came of the attempt. A kernel path that ends a
    /// fault before it (TPP's first fault, which only activates the page) leaves the cpupid as
    /// it was; a backend whose scanner says so ([`crate::NumaScan::cpupid_at_prep`]) then
    /// sets it only here. The default does nothing (a real kernel keeps its own cpupids).
    fn numa_migrate_prep(&mut self, fault: &HintFault) {
        let _ = fault;
    }
    /// The promotion `fault` tried failed before any copy (migrate_misplaced_page: the target
    /// node nearly full, migrate_balanced_pgdat): do_numa_page flags it TNF_MIGRATE_FAIL, which
    /// task_numa_fault counts where it accounts slow-tier faults
    /// ([`crate::NumaScan::slow_fault_stats`]), and update_task_scan_period then doubles the
    /// period. The default does nothing (a real kernel accounts its own faults).
    fn numa_migrate_failed(&mut self, fault: &HintFault) {
        let _ = fault;
    }
}

/// What telemetry a policy asks for at start (it can retune sampling with actions later).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TelemetryNeeds {
    /// PEBS-like sampling period and filter, if the policy samples.
    pub sampling: Option<(u64, SampleFilter)>,
    /// Whether the policy reads per-tier uncore counters (Colloid, PACT).
    pub tier_counters: bool,
    /// Whether the policy reads the per-core offcore counters (Alto, Soar).
    pub core_counters: bool,
    /// Whether the policy relies on NUMA hint faults (TPP, NBT, Nomad).
    pub hint_faults: bool,
    /// The policy's decision interval in ns (reported; `step` is called every epoch so no
    /// event is missed, and the policy acts at its own quantum). 0 means every epoch.
    pub quantum_ns: u64,
    /// Whether the policy binds page ranges to tiers (`Action::BindRange`): the simulated
    /// machine then keeps a per-page bind table from the start.
    pub bind_ranges: bool,
    /// Whether the policy tests and clears accessed bits
    /// ([`Mechanism::test_and_clear_accessed`]: LRU aging, CLOCK): the simulated machine then
    /// keeps each page's last clear time (8 B a page), which it does not for other policies.
    pub accessed_bits: bool,
}

/// A tiering policy. One file per policy; see `tierkit-policies`.
pub trait Policy: Send {
    /// The spec string this instance was built from (for reports).
    fn name(&self) -> String;
    /// What the policy needs from the machine.
    fn needs(&self) -> TelemetryNeeds;
    /// Bytes the policy's tables take for a page space, at most: its per-page tables (what
    /// [`Policy::reserve`] allocates) and the tables sized by what it tracks, at their bound.
    /// Layers add their base's. A backend adds this up before building anything, to refuse a
    /// run that cannot fit. Keep it next to the code that allocates.
    fn memory_bytes(&self, _space: &PageSpace) -> u64 {
        0
    }
    /// Allocate the tables [`Policy::memory_bytes`] counts, up front and fallibly (called once,
    /// before `init`, by backends that know their page space). Layers reserve their base's.
    fn reserve(&mut self, _space: &PageSpace) -> crate::Result<()> {
        Ok(())
    }
    /// Bytes the policy's tables hold now (their capacity): what [`Policy::memory_bytes`]
    /// estimates, measured (tests compare the two). Layers add their base's.
    fn allocated_bytes(&self) -> u64 {
        0
    }
    /// Called once before any process runs: objects are known, nothing is allocated yet.
    /// Bind objects, start sampling and scanning here.
    fn init(&mut self, _tel: &Telemetry, _mech: &mut dyn Mechanism, _out: &mut Vec<Action>) {}
    /// Called every epoch with that epoch's telemetry (page events, faults and migration
    /// results arrive every epoch; the policy may act only at its quantum).
    fn step(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>);
    /// The fault path, taken fault by fault: a backend that delivers hint faults one at a time
    /// at their instants inside the epoch (the simulated machine) asks once, before `init`,
    /// whether the policy takes them so. A policy that answers true gets each fault through
    /// [`Policy::on_fault`] and must not handle it again in `step` (where
    /// `Telemetry::hint_faults` still lists it, for the record). Linux decides in the fault
    /// (do_numa_page -> numa_migrate_check, migrate_misplaced_folio) and the faulting thread
    /// copies the page before it runs on: a thread busy in one fault takes no other, which a
    /// decision at the epoch's end cannot show. Layers answer for their base only when they
    /// forward `on_fault`; the default is false (faults arrive in `step`, all at once).
    fn fault_path(&mut self) -> bool {
        false
    }
    /// One hint fault at its instant (`f.time_ns`), for a policy whose [`Policy::fault_path`]
    /// said true. `tel` is the epoch so far: `now_ns` is the fault's instant, the tiers' sizes
    /// are the instant's, and the event lists (allocated, freed, migrations) hold the
    /// epoch's events up to now and grow between calls (the policy takes what is new). The
    /// backend carries out `out` at once, at the fault's instant; the results of the
    /// migrations it makes then join this epoch's `migrations`.
    fn on_fault(
        &mut self,
        _f: &crate::telemetry::HintFault,
        _tel: &Telemetry,
        _mech: &mut dyn Mechanism,
        _out: &mut Vec<Action>,
    ) {
    }
    /// On the fault path, the next instant (ns) at which the policy wants a call without a
    /// fault ([`Policy::on_timer`]): a kernel thread of its own that works between the faults,
    /// as kswapd does. The backend calls at the first such instant inside the epoch that is
    /// later than the last timer call, in time order with the faults; `None`: no call (the
    /// default), the policy's background work runs at the faults and the epoch's end.
    fn next_timer_ns(&self) -> Option<u64> {
        None
    }
    /// The call [`Policy::next_timer_ns`] asked for, at `t_ns`, with `tel` and `out` as in
    /// [`Policy::on_fault`].
    fn on_timer(
        &mut self,
        _t_ns: u64,
        _tel: &Telemetry,
        _mech: &mut dyn Mechanism,
        _out: &mut Vec<Action>,
    ) {
    }
    /// The policy's own statistics (overheads, table sizes), reported with the results.
    fn stats(&self) -> Vec<(String, f64)> {
        Vec::new()
    }
    /// Conditions the policy knows of that make this run's results doubtful (a fixed constant
    /// of its mechanism that weighs more than its algorithm at this size, say), one sentence
    /// each, reported with the results (the run's `warnings`). Asked at the end of the run.
    /// Layers forward their base's and add their own.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
    /// The policy's time-series channel, an observer hook: named values the engine samples at
    /// every report interval into the run's time series (column `policy.<name>`; NaN in rows
    /// where a name is absent). Values describe the interval since the last call. Layers
    /// forward their base's values and add their own.
    fn series(&mut self, _out: &mut Vec<(String, f64)>) {}
    /// The base's per-page access tracking, for layers that choose pages from it (Colloid's
    /// page-finding procedure over HeMem's bins or MEMTIS's hot lists). None if it has none.
    fn tracker(&self) -> Option<&dyn AccessTracker> {
        None
    }
    /// A profiling policy to run first on the same workload with every page in the fast tier
    /// (Soar's profiling run, §4.1). None for policies that need no profile.
    fn profiler(&self) -> Option<Box<dyn Policy>> {
        None
    }
    /// For profilers: what the profiling run gathered, as text the profiled policy accepts.
    fn profile(&self) -> Option<String> {
        None
    }
    /// Take the profile produced by [`Policy::profiler`]'s run (before `init`).
    fn accept_profile(&mut self, _profile: &str) -> crate::Result<()> {
        Ok(())
    }
    /// Hand the hotness-driven placement decisions to a layer (Colloid replaces the base's
    /// placement algorithm, §4). The base keeps tracking accesses and keeps making room when a
    /// tier runs out of capacity. Returns false if the policy cannot delegate.
    fn delegate_placement(&mut self) -> bool {
        false
    }
}

/// Per-page access information a base policy maintains, offered to layers.
pub trait AccessTracker {
    /// The page's estimated share of all memory accesses (its access probability, Colloid
    /// §3.1), 0 if unknown.
    fn access_probability(&self, page: PageId) -> f64;
    /// Up to `max` pages now in `tier`, hottest first, with their access probabilities.
    fn hottest(&self, tier: TierId, max: usize, out: &mut Vec<(PageId, f64)>);
    /// Up to `max` pages now in `tier`, coldest first (victims when room is needed).
    fn coldest(&self, tier: TierId, max: usize, out: &mut Vec<PageId>);
}

/// A layer that wraps a base policy (Colloid, Alto, migration toggling).
pub trait Layer: Policy {}

/// Builds a base policy from its parameters.
pub type BaseFn = fn(&Params) -> crate::Result<Box<dyn Policy>>;
/// Builds a layer over an already built policy.
pub type LayerFn = fn(Box<dyn Policy>, &Params) -> crate::Result<Box<dyn Policy>>;

/// How a registered policy is constructed.
pub enum Builder {
    /// A base policy built from its parameters.
    Base(BaseFn),
    /// A layer stacked over an already built policy (`base+layer`).
    Layer(LayerFn),
}

/// The registration record of a policy: one per policy file, listed once in the registry.
pub struct PolicyInfo {
    pub name: &'static str,
    /// One line for `tierkit list policies`.
    pub description: &'static str,
    /// The paper section or artifact it follows.
    pub source: &'static str,
    pub params: &'static [ParamDef],
    /// The parameter a bare value sets (`place:pc` sets `objects`).
    pub positional: Option<&'static str>,
    pub build: Builder,
}
