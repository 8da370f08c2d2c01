//! What a policy may ask the machine to do.

use crate::{PageId, Pid, Tid, TierId};

/// How a migration is carried out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrateMode {
    /// In the faulting thread's context (TPP/NBT promotion on a hint fault): the thread stalls
    /// for the copy and the shootdown.
    Sync { pid: Pid, tid: Tid },
    /// By a background migration thread (HeMem, MEMTIS, kswapd demotion).
    Async,
    /// Nomad's transactional copy: copy while mapped, abort if the page is written meanwhile.
    Transactional,
}

/// Which tiers the NUMA-balancing scanner marks with hint faults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanTiers {
    /// Slow-tier pages only (promotion candidates; TPP, NBT).
    SlowOnly,
    /// Every tier (TPP+Colloid needs fast-tier faults to find demotion candidates).
    All,
}

/// Linux's NUMA-balancing scanner (kernel/sched/fair.c `task_numa_work`), run per process by
/// the machine, with the sysctls' names and defaults (`kernel.numa_balancing_scan_*`):
///
/// - it starts `scan_delay_ms` after the process starts; with `arm_on_exec`, as Linux runs an
///   exec'd program, after `scan_delay_ms` of the process's CPU time (p->numa_scan_period starts
///   at the delay; task_tick_numa counts runtime) its first work finds the new address space's
///   mm->numa_next_scan at 0, sets it `scan_delay_ms` of wall time ahead and returns, and the
///   first window is the first tick after that (2 x `scan_delay_ms` with a whole CPU);
/// - then one window every `numa_scan_period`, set at the first window to `task_scan_start` =
///   `task_scan_min` = max(1000 ms / (MAX_SCAN_WINDOW 2560 MB / scan_size_mb),
///   scan_period_min_ms / task_nr_scan_windows) with task_nr_scan_windows = ceil(RSS /
///   scan_size_mb), and adapted by `update_task_scan_period` (clamped to task_scan_min /
///   task_scan_max = scan_period_max_ms / windows) only where Linux calls it: never for a
///   slow-node fault in tiering mode (task_numa_fault returns early);
/// - a window changes PTEs until `scan_size_mb` of ranges with PTE updates are done, or until
///   8 x scan_size_mb of address space is walked (the `virtpages` budget) whatever happened.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NumaScan {
    /// numa_balancing_scan_period_min_ms (1000).
    pub scan_period_min_ms: f64,
    /// numa_balancing_scan_period_max_ms (60000).
    pub scan_period_max_ms: f64,
    /// numa_balancing_scan_size_mb (256).
    pub scan_size_mb: u64,
    /// numa_balancing_scan_delay_ms (1000).
    pub scan_delay_ms: f64,
    /// SlowOnly: numa_balancing=2 (tiering; change_pte_range skips top-tier pages). All:
    /// numa_balancing=3 (normal NUMA balancing as well: top-tier pages are marked too).
    pub tiers: ScanTiers,
    /// Share of each window's `scan_size_mb` budget a layer lets through (Alto regulating NBT's
    /// scanning); 1 in Linux. The virtpages budget is unchanged.
    pub budget_share: f64,
    /// task_numa_fault accounts the hint faults it may (a top-tier page's, a promoted one's), so
    /// that update_task_scan_period adapts the period (upstream Linux). False models Colloid's
    /// artifact kernel (host-architecture/colloid, linux-6.3 kernel/sched/fair.c), whose
    /// task_numa_fault returns before any accounting unless NUMA_BALANCING_NORMAL is set: with
    /// numa_balancing=2 or 6 the period stays at task_scan_start.
    pub fault_stats: bool,
    /// task_numa_fault accounts the hint faults on slow-tier pages too, as remote faults: the
    /// kernels before 5.18's memory-tiering check there (`!node_is_toptier(mem_node)` returns
    /// early in tiering mode). TPP's patch (5.13, 5.15), on which Nomad's artifact runs too, has
    /// no such check, and its do_numa_page ends every fault at task_numa_fault on the page's
    /// node: TPP's first fault, which only activates the page, and a fault Nomad only queues
    /// for its worker (github.com/lingfenghsiang/Nomad, nomad.patch: `queue_page_fault`, then
    /// `goto out_map`, which ends at `out:`). All of them remote: private on one thread, so
    /// update_task_scan_period doubles the period at each placement; among threads, private
    /// or shared by the page's cpupid (see `cpupid_at_prep`), and shared faults shorten it. A
    /// promotion that fails at its fault adds TNF_MIGRATE_FAIL, which doubles it. False
    /// (upstream 6.x): a slow-tier fault counts only when its page was promoted on it.
    pub slow_fault_stats: bool,
    /// A slow-tier hint fault sets its page's cpupid (the last faulting thread, for the
    /// private / shared split) only when the policy reports that it reached numa_migrate_prep
    /// ([`crate::policy::Mechanism::numa_migrate_prep`]): TPP's patch ends a first fault, which
    /// only activates the page, before it (do_numa_page's `goto out`), and 5.13's migration
    /// copies the cpupid to the new page (migrate_page_states). False: every accounted fault
    /// sets it (Nomad's patch calls mpol_misplaced at every fault). Top-tier faults always set
    /// it. It matters where slow-tier faults are accounted (`slow_fault_stats`).
    pub cpupid_at_prep: bool,
    /// The first window as Linux places it for an exec'd program (a new mm whose
    /// numa_next_scan is 0: the first task_numa_work only arms it): 2 x `scan_delay_ms` after
    /// the start with a whole CPU, paced by CPU time (docs/validation.md, section 1w). False:
    /// `scan_delay_ms` of wall time after the start.
    pub arm_on_exec: bool,
}

impl Default for NumaScan {
    fn default() -> Self {
        NumaScan {
            scan_period_min_ms: 1000.0,
            scan_period_max_ms: 60_000.0,
            scan_size_mb: 256,
            scan_delay_ms: 1000.0,
            tiers: ScanTiers::SlowOnly,
            budget_share: 1.0,
            fault_stats: true,
            slow_fault_stats: false,
            cpupid_at_prep: false,
            arm_on_exec: false,
        }
    }
}

/// Which accesses PEBS-like sampling records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleFilter {
    /// Every LLC-missing load and store (HeMem, MEMTIS).
    AllMisses,
    /// LLC-missing loads served by a slow tier (PACT: MEM_LOAD_L3_MISS_RETIRED.REMOTE_DRAM).
    SlowLoads,
    /// LLC-missing loads of every tier.
    Loads,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Move a page to a tier. `keep_shadow` keeps the source copy so a later clean demotion
    /// is a remap (Nomad, Vulcan).
    Migrate {
        page: PageId,
        to: TierId,
        mode: MigrateMode,
        keep_shadow: bool,
    },
    /// Start, retune or stop (period 0) PEBS-like sampling.
    SetSampling { period: u64, filter: SampleFilter },
    /// NUMA-balancing scanner: every `period_ms`, mark the next `pages` pages of each process
    /// (or of `pid`) for a hint fault. `pages == 0` stops scanning.
    SetHintScan {
        pid: Option<Pid>,
        period_ms: f64,
        pages: u64,
        tiers: ScanTiers,
    },
    /// Linux's NUMA-balancing scanner for every process (or `pid`); see [`NumaScan`]. Replaces
    /// any `SetHintScan` setting of the same processes.
    SetNumaScan { pid: Option<Pid>, scan: NumaScan },
    /// Enable or disable migration (and hint-fault marking) for one process.
    SetMigration { pid: Pid, enabled: bool },
    /// Limit a process's fast-tier pages (Vulcan partitions). `None` removes the limit.
    SetPartition { pid: Pid, fast_pages: Option<u64> },
    /// TLB-shootdown scope of a process's migrations (Vulcan §3.4 per-thread page-table
    /// replication): `per_thread` shoots down only the threads that map the page (its owner for
    /// a private page), otherwise every running thread of the process (a shared mm).
    SetTlbScope { pid: Pid, per_thread: bool },
    /// A layer vetoes a migration its base asked for (Alto regulating promotions): nothing moves,
    /// and the base sees the migration's result as `Refused` in the next telemetry.
    Refuse { page: PageId, to: TierId },
    /// mbind(2) a range of not-yet-allocated pages to a tier: when they are first touched they
    /// go there (spilling if it is full). Takes precedence over an object binding. Manual
    /// placements (Colloid's best case) use it before the workload starts.
    BindRange {
        first: PageId,
        pages: u64,
        tier: TierId,
    },
    /// Allocate a named object's pages in a tier first (first touch spills when it is full).
    BindObject {
        pid: Pid,
        object: String,
        tier: TierId,
    },
}
