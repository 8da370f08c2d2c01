//! The Linux page-reclaim machinery the hint-fault policies share (TPP, NBT, Nomad): per-tier
//! active and inactive LRU lists with the PG_active / PG_referenced flags, the zone watermarks of
//! `__setup_per_zone_wmarks` (mm/page_alloc.c), and kswapd's reclaim loop of mm/vmscan.c
//! (`shrink_active_list`, `shrink_page_list` with `page_check_references`, demotion to the next
//! tier instead of swap).
//!
//! Sources: Linux v5.13 mm/vmscan.c and mm/swap.c (the base of the TPP and Nomad artifacts,
//! github.com/lingfenghsiang/Nomad), Linux v6.x mm/vmscan.c and mm/page_alloc.c (NBT). The lists
//! are [`PageLists`] over dense page ids, so every list operation is O(1); kswapd's work per step
//! is bounded by its scan budget, never by the number of pages.

use tierkit_core::action::ScanTiers;
use tierkit_core::params::{ParamDef, ParamKind};
use tierkit_core::telemetry::{MigrationOutcome, MigrationResult};
use tierkit_core::{Action, Mechanism, MigrateMode, NumaScan, PageId, Params, Telemetry, TierId};

use crate::pagelist::PageLists;

/// Pages kswapd takes off a list at a time (SWAP_CLUSTER_MAX).
pub const SWAP_CLUSTER_MAX: usize = 32;

/// The share of the fast tier above which the free pages kswapd keeps make the run's warning
/// ([`Tiering::small_fast_tier_warning`]): 5%. TPP's own demotion watermark is 2% of the node.
pub const SMALL_TIER_SHARE: f64 = 0.05;
/// Tiers the lists are laid out for.
pub const MAX_TIERS: usize = 8;
/// Lists per tier: inactive and active (classic), or the multi-gen LRU's generations.
const LISTS_PER_TIER: usize = MAX_NR_GENS as usize;
/// The multi-gen LRU's generations per node (include/linux/mmzone.h MAX_NR_GENS).
pub const MAX_NR_GENS: u64 = 4;
/// The fewest generations it keeps: eviction stops at two (MIN_NR_GENS).
pub const MIN_NR_GENS: u64 = 2;
/// Folios one eviction isolates at most (MIN_LRU_BATCH = BITS_PER_LONG).
pub const MIN_LRU_BATCH: u64 = 64;
/// Folios one eviction scans at most (MAX_LRU_BATCH = MIN_LRU_BATCH x 64).
pub const MAX_LRU_BATCH: u64 = MIN_LRU_BATCH * 64;
/// balance_pgdat's first priority (DEF_PRIORITY): a pass scans about size >> priority.
pub const DEF_PRIORITY: u8 = 12;
/// Page size assumed when the telemetry does not give one.
const DEFAULT_PAGE_BYTES: u64 = 4096;

const NO_TIER: u8 = u8::MAX;
/// PG_active: the page is (or, while isolated, was) on its tier's active list.
const F_ACTIVE: u8 = 1;
/// PG_referenced: the software "seen once" mark of mark_page_accessed and page_check_references.
const F_REFERENCED: u8 = 2;
/// Off the LRU for a migration requested by the policy.
const F_ISOLATED: u8 = 4;
/// A policy-private mark (Nomad: the page is in the promotion queue, PG_prom_queued).
const F_MARK: u8 = 8;
/// Multi-gen LRU: the page's generation (in its flags) is younger than the list it sits on,
/// set by folio_update_gen from a page-table walk or look-around, which do not move the folio;
/// eviction's scan moves it when it meets it (sort_folio). The generation is kept in the
/// flags' `GEN_BITS`.
const F_LAZY: u8 = 16;
/// The younger generation of a page with F_LAZY (its index, seq % MAX_NR_GENS), bits 5 and 6.
const GEN_SHIFT: u8 = 5;
const GEN_BITS: u8 = 0b11 << GEN_SHIFT;

/// The page size of a telemetry snapshot (4 KiB when not given).
pub fn page_bytes(tel: &Telemetry) -> u64 {
    if tel.page_bytes == 0 {
        DEFAULT_PAGE_BYTES
    } else {
        tel.page_bytes
    }
}

/// The NUMA-balancing scanner of the hint-fault policies from their parameters: Linux's
/// scanner (kernel/sched/fair.c task_numa_work, run per process by the machine) with the
/// sysctls below, slow-tier pages only (numa_balancing=2: change_pte_range skips top-tier pages
/// unless NUMA_BALANCING_NORMAL is set too). `scan_period_ms` is the older name of
/// `scan_period_min_ms`; the newer name wins when both are set.
pub fn numa_scan(p: &Params) -> NumaScan {
    let min = if p.float("scan_period_min_ms") != 1000.0 {
        p.float("scan_period_min_ms")
    } else {
        p.float("scan_period_ms")
    };
    NumaScan {
        scan_period_min_ms: min,
        scan_period_max_ms: p.float("scan_period_max_ms"),
        scan_size_mb: p.u64("scan_size_mb"),
        scan_delay_ms: p.float("scan_delay_ms"),
        tiers: ScanTiers::SlowOnly,
        budget_share: 1.0,
        fault_stats: p.bool("scan_stats"),
        slow_fault_stats: false,
        cpupid_at_prep: false,
        arm_on_exec: p.str("first_window") == "exec",
    }
}

/// The action that starts [`numa_scan`]'s scanner for every process.
pub fn hint_scan(scan: &NumaScan) -> Action {
    Action::SetNumaScan {
        pid: None,
        scan: *scan,
    }
}

/// numa_balancing_scan_period_min_ms, by its older tierkit name.
pub const P_SCAN_PERIOD: ParamDef = ParamDef {
    name: "scan_period_ms",
    kind: ParamKind::Float { min: 1.0, max: 600_000.0 },
    default: "1000",
    unit: "ms",
    doc: "older name of scan_period_min_ms (still accepted; scan_period_min_ms wins when both are set)",
};
/// numa_balancing_scan_period_min_ms.
pub const P_SCAN_PERIOD_MIN: ParamDef = ParamDef {
    name: "scan_period_min_ms",
    kind: ParamKind::Float { min: 1.0, max: 600_000.0 },
    default: "1000",
    unit: "ms",
    doc: "the scanner covers a process's whole RSS once per this period, in windows of scan_size_mb no closer than 100 ms x scan_size_mb / 256 (numa_balancing_scan_period_min_ms; task_scan_min)",
};
/// numa_balancing_scan_period_max_ms.
pub const P_SCAN_PERIOD_MAX: ParamDef = ParamDef {
    name: "scan_period_max_ms",
    kind: ParamKind::Int { min: 1, max: 1 << 30 },
    default: "60000",
    unit: "ms",
    doc: "slowest full pass of the scanner (task_scan_max; numa_balancing_scan_period_max_ms); NBT also adjusts its hot threshold once per this period",
};
/// numa_balancing_scan_delay_ms.
pub const P_SCAN_DELAY: ParamDef = ParamDef {
    name: "scan_delay_ms",
    kind: ParamKind::Float {
        min: 0.0,
        max: 600_000.0,
    },
    default: "1000",
    unit: "ms",
    doc: "the scanner starts this long after a process starts (numa_balancing_scan_delay_ms)",
};
/// Whether task_numa_fault accounts the hint faults (so update_task_scan_period adapts the
/// period), as upstream Linux does; Colloid's artifact kernel does not.
pub const P_SCAN_STATS: ParamDef = ParamDef {
    name: "scan_stats",
    kind: ParamKind::Bool,
    default: "true",
    unit: "",
    doc: "let task_numa_fault account the hint faults so that the scanner's period adapts (update_task_scan_period: a process that keeps promoting is scanned further and further apart), as upstream Linux does; false is the kernel of Colloid's artifact (linux-6.3 kernel/sched/fair.c), on which the Colloid paper ran its TPP baseline with numa_balancing=2: its task_numa_fault returns before any accounting unless NUMA_BALANCING_NORMAL is set, so the period stays at task_scan_start. Under the colloid layer the layer's own scan_stats decides",
};
/// Where the scanner's first window comes: `scan_delay_ms` after the start, or as Linux places
/// it for an exec'd program.
pub const P_FIRST_WINDOW: ParamDef = ParamDef {
    name: "first_window",
    kind: ParamKind::Choice(&["exec", "delay"]),
    default: "exec",
    unit: "",
    doc: "exec (the default): as Linux runs an exec'd program (kernel/sched/fair.c): the first tick, after scan_delay_ms of the process's CPU time, queues a task_numa_work that only sets the new mm's numa_next_scan scan_delay_ms of wall time ahead, and the first window is the first tick past it (2 x scan_delay_ms with a whole CPU), as measured in the guest (docs/validation.md, sections 1w and 1x); delay: the first window scan_delay_ms of wall time after the process starts (tierkit's rule before 2026-12-02)",
};
/// numa_balancing_scan_size_mb.
pub const P_SCAN_SIZE: ParamDef = ParamDef {
    name: "scan_size_mb",
    kind: ParamKind::Int {
        min: 1,
        max: 1 << 24,
    },
    default: "256",
    unit: "MB",
    doc: "memory with PTEs changed per scan window (numa_balancing_scan_size_mb); a window also stops after walking 8x this much",
};
/// vm.watermark_scale_factor.
pub const P_WSF: ParamDef = ParamDef {
    name: "watermark_scale_factor",
    kind: ParamKind::Int { min: 1, max: 3000 },
    default: "10",
    unit: "1/10000 of the tier",
    doc: "distance between the min, low, high and promo watermarks (vm.watermark_scale_factor)",
};
/// vm.min_free_kbytes (0: the kernel's own, from the machine's memory).
pub const P_MIN_FREE_KBYTES: ParamDef = ParamDef {
    name: "min_free_kbytes",
    kind: ParamKind::Int { min: 0, max: 1 << 30 },
    default: "0",
    unit: "KiB",
    doc: "free memory the kernel keeps over all nodes (vm.min_free_kbytes, used as written; min_free_kbytes_sysctl_handler), shared out by node size into each node's min watermark (__setup_per_zone_wmarks), so the fast tier's watermarks fall as the slow tier grows; 0: the kernel's boot-time value, sqrt(16 x the machine's memory in KiB) clamped to [128, 262144] (calculate_min_free_kbytes)",
};
/// A simulation bound, not a kernel knob: how much LRU kswapd examines per ms.
pub const P_KSWAPD_SCAN: ParamDef = ParamDef {
    name: "kswapd_scan_per_ms",
    kind: ParamKind::Int { min: SWAP_CLUSTER_MAX as i64, max: 1 << 30 },
    default: "1024",
    unit: "pages/ms",
    doc: "most LRU pages kswapd examines per ms (one kswapd thread at ~1 us per page: rmap walk, accessed-bit test and clear); not a kernel knob",
};
/// How stale the LRU sizes are that kswapd's aging decision reads (`inactive_is_low`).
pub const P_LRU_STATS_FLUSH: ParamDef = ParamDef {
    name: "lru_stats_flush_ms",
    kind: ParamKind::Float { min: 0.0, max: 60_000.0 },
    default: "0",
    unit: "ms",
    doc: "the LRU sizes kswapd's aging decision (inactive_is_low) reads are refreshed at multiples of this period; 0: exact, as Linux before 5.15 (within 32 pages per CPU); Linux >= 5.15 with memory cgroups reads rstat-flushed statistics, refreshed every 2000 ms (FLUSH_TIME), so a burst of reclaim can age by sizes from before it (docs/validation.md, section 1d)",
};
/// MAX_RECLAIM_RETRIES (mm/internal.h): balance_pgdat runs that reclaim nothing before kswapd
/// gives the node up as hopeless.
pub const MAX_RECLAIM_RETRIES: u32 = 16;
/// Whether (and after how many failing runs) kswapd gives a node up.
pub const P_MAX_RECLAIM_RETRIES: ParamDef = ParamDef {
    name: "max_reclaim_retries",
    kind: ParamKind::Int { min: 0, max: 1 << 20 },
    default: "0",
    unit: "runs",
    doc: "kswapd gives the fast node up after this many balance_pgdat runs in a row that reclaim nothing, and ignores wakeups from then on (pgdat->kswapd_failures; Linux: MAX_RECLAIM_RETRIES = 16, revived only by a successful direct reclaim, which is not modelled); 0: never gives up, the default, because the scaled reproductions' per-page rates are 16-64x the papers' and every fast-tier page would read referenced (docs/validation.md, section 1d)",
};
/// How long a kswapd that a promotion woke waits for a CPU.
pub const P_KSWAPD_WAKE_DELAY: ParamDef = ParamDef {
    name: "kswapd_wake_delay_us",
    kind: ParamKind::Float { min: 0.0, max: 1e7 },
    default: "0",
    unit: "us",
    doc: "how long kswapd, woken by a promotion that found the fast node short of free pages (wakeup_kswapd), waits for a CPU before it reclaims: 0 where it has an idle CPU of its own; on a CPU the faulting threads keep busy the scheduler runs it only when the running thread's slice ends (EEVDF's RUN_TO_PARITY, checked at the tick), up to a tick later. `tierkit validate kernel` sets it for the one-vCPU guest's recordings (docs/validation.md, section 1t); not a kernel knob",
};
/// How often a kswapd that is awake runs between the faults (the policy's timer).
pub const P_KSWAPD_TICK: ParamDef = ParamDef {
    name: "kswapd_tick_us",
    kind: ParamKind::Float { min: 0.0, max: 1e6 },
    default: "100",
    unit: "us",
    doc: "on the fault path, an awake kswapd also runs this long after its last run (or after its wake instant), between the faults, and the demotions it asks for start then, as the kernel's kswapd demotes as it goes; a time step of the model, not a kernel knob: 100 us converges (press-thp, 16 seeds: 46.6 huge pages promoted at 1 ms steps with 100 or 200 us, 46.1 with 50 us, 46.8 at 0.25 ms steps); 0: it runs only at the actionable faults and at the step's end, so the demotions of an interval without faults start at the step's end and how soon they make room followed the step (53.0 at 1 ms, 46.9 at 0.25 ms; docs/validation.md, section 1ze)",
};
/// kswapd's own time for the pages it demotes.
pub const P_KSWAPD_DEMOTE: ParamDef = ParamDef {
    name: "kswapd_demote_us",
    kind: ParamKind::Float { min: 0.0, max: 1e6 },
    default: "0",
    unit: "us per 4 KiB",
    doc: "kswapd's own time per 4 KiB it demotes: shrink_folio_list migrates its demotions itself (demote_folio_list, migrate_pages), so a run that reclaims lasts as long as its copies, and the workload runs meanwhile; 0: the copies take none of kswapd's time (the migration's cost stays the machine's either way). The QEMU guest's kswapd takes about 50 us (docs/validation.md, section 1y, with kswapd_scan_per_ms=307); not a kernel knob",
};
/// Whether hint faults are decided one at a time at their instants (the fault path).
pub const P_FAULT_PATH: ParamDef = ParamDef {
    name: "fault_path",
    kind: ParamKind::Bool,
    default: "true",
    unit: "",
    doc: "decide each hint fault at its instant inside the epoch, as do_numa_page does in the faulting thread, with kswapd run up to it: a promotion is made there and the thread is busy for the fault, the migration's fixed cost and its copy, taking no other fault meanwhile, and the demotions kswapd asks for start then on idle migration threads (on the simulated machine, Policy::on_fault); false: every fault of an epoch at its end, each thread taking faults while its earlier ones' migrations wait for the next epoch (the model before 2026-11-30, and what tierkitd does): fault storms of 2 MiB pages depend on the epoch then, and so does how soon kswapd's demotions make room for promotions (docs/validation.md, sections 1l and 1t)",
};
/// Which LRU kswapd ages and evicts: the classic active/inactive lists or the multi-gen LRU.
pub const P_LRU_GEN: ParamDef = ParamDef {
    name: "lru_gen",
    kind: ParamKind::Bool,
    default: "false",
    unit: "",
    doc: "the fast tier's reclaim runs the multi-gen LRU (Linux >= 6.1 with CONFIG_LRU_GEN_ENABLED, on in Debian's kernels, the guest's of tierkit validate kernel: generations aged by page-table walks with a Bloom filter, eviction from the oldest with look-around) instead of the classic active/inactive lists (docs/validation.md, section 1e); off by default, as upstream Linux builds it (CONFIG_LRU_GEN_ENABLED has no default in mm/Kconfig) and as every reproduction was measured",
};
/// Whether the fast node has x86's DMA zone below its main one (every x86 machine does).
pub const P_DMA_ZONE: ParamDef = ParamDef {
    name: "dma_zone",
    kind: ParamKind::Bool,
    default: "true",
    unit: "",
    doc: "the fast node has x86's 16 MiB DMA zone below its main zone, as every x86 node 0 has; its lowmem_reserve for allocations above it (the zones above / 256: 2899 pages in the guest, more than the zone on any node above ~1 GiB) keeps it below its watermark check, so with lru_gen=true the multi-gen LRU's should_abort_scan, which ends a kswapd shrink once every eligible zone is above its promo (tiering) or high watermark, never ends one: a shrink runs to nr_to_reclaim (the zones' high watermarks) or its nr_to_scan (docs/validation.md, section 1f); false: one zone that passes the check; no effect on the classic LRU, whose shrink_lruvec has no such check",
};
/// The multi-gen walk's page tables per process (mm/vmscan.c keys them by the mm's PMDs).
pub const P_LRU_GEN_MM_TABLES: ParamDef = ParamDef {
    name: "lru_gen_mm_tables",
    kind: ParamKind::Bool,
    default: "false",
    unit: "",
    doc: "with lru_gen=true, the aging walk's and look-around's page-table blocks (2 MiB of address space) belong to one process, counted from its first page and cut at its last, as a mm's page tables are; suitable_to_scan's total counts every PTE of the block (walk_pte_range counts each before get_pte_pfn drops those on the other node), look-around's every PTE of its window, and a walk costs every PTE it reads; false: blocks of global page ids, totals and cost of the fast tier's pages only, the model every recording was compared with (docs/validation.md, section 1f)",
};
/// should_skip_mm: an aging walk passes over a process not switched in since its last walk.
pub const P_LRU_GEN_MM_SWITCH: ParamDef = ParamDef {
    name: "lru_gen_mm_switch_ms",
    kind: ParamKind::Float {
        min: 0.0,
        max: 600_000.0,
    },
    default: "0",
    unit: "ms",
    doc: "with lru_gen=true, each process is switched in once every this many ms (periodically, at a phase of its own: lru_gen_use_mm in context_switch sets its bit) and an aging walk passes over a process not switched in since its last walk (get_next_mm); the walk resets the next walk's Bloom filter only when it walks a process (iterate_mm_list), and a process is walked the first time whatever its bit; the guest's workload was switched in every 11.7 ms (docs/validation.md, section 1f); 0: every walk walks every process",
};
/// TPP's vm.demote_scale_factor (also used by Nomad, which runs on TPP's kernel).
pub const P_DEMOTE_SCALE: ParamDef = ParamDef {
    name: "demote_scale_factor",
    kind: ParamKind::Int { min: 1, max: 10000 },
    default: "200",
    unit: "1/10000 of the fast tier",
    doc: "kswapd demotes while fast-tier free pages are below this share of the tier (TPP's vm.demote_scale_factor)",
};

/// mm/vmscan.c inactive_is_low on list sizes (pages of `page_bytes`).
fn inactive_is_low(inactive: u64, active: u64, page_bytes: u64) -> bool {
    let gb = (inactive + active).saturating_mul(page_bytes) >> 30;
    let ratio = if gb > 0 { isqrt(10 * gb) } else { 1 };
    inactive * ratio < active
}

fn isqrt(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let mut x = (n as f64).sqrt() as u64;
    while x * x > n {
        x -= 1;
    }
    while (x + 1) * (x + 1) <= n {
        x += 1;
    }
    x
}

/// A tier's zone watermarks, as `__setup_per_zone_wmarks` sets them. The kernel computes and
/// compares them in base (4 KiB) pages; `base` keeps those values, and `min`..`promo` are the
/// same marks in the experiment's pages, rounded up (a tier with huge pages is below a mark while
/// it has fewer whole free pages than the mark covers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
    /// WMARK_PROMO (v6.x): kswapd's target in NUMA-balancing tiering mode.
    pub promo: u64,
    /// min, low, high, promo in base pages.
    pub base: [u64; 4],
    /// Base pages per page.
    pub per_page: u64,
}

impl Watermarks {
    /// Watermarks of a node of `node_pages` in a machine of `total_pages`: min_free_kbytes
    /// (`min_free_kbytes` as an administrator set it, or with 0 the kernel's boot-time value,
    /// sqrt(16 x lowmem KiB) clamped to [128 KiB, 256 MiB], mm/page_alloc.c
    /// calculate_min_free_kbytes) shared out by node size (`__setup_per_zone_wmarks`); the
    /// step between min, low, high and promo is max(min/4, node x watermark_scale_factor /
    /// 10000).
    pub fn linux(
        node_pages: u64,
        total_pages: u64,
        page_bytes: u64,
        watermark_scale_factor: u64,
        min_free_kbytes: u64,
    ) -> Self {
        let per_page = (page_bytes / DEFAULT_PAGE_BYTES).max(1);
        let (node, total) = (node_pages * per_page, total_pages * per_page);
        let total_kb = total.saturating_mul(DEFAULT_PAGE_BYTES) / 1024;
        let min_free_kb = if min_free_kbytes > 0 {
            // min_free_kbytes_sysctl_handler: the written value, unclamped
            min_free_kbytes
        } else {
            isqrt(total_kb.saturating_mul(16)).clamp(128, 262_144)
        };
        let min_pages_total = min_free_kb * 1024 / DEFAULT_PAGE_BYTES;
        let min = ((min_pages_total as u128 * node as u128) / total.max(1) as u128) as u64;
        let step = (min / 4).max(node.saturating_mul(watermark_scale_factor) / 10_000);
        let base = [min, min + step, min + 2 * step, min + 3 * step];
        let up = |b: u64| b.div_ceil(per_page);
        Watermarks {
            min: up(base[0]),
            low: up(base[1]),
            high: up(base[2]),
            promo: up(base[3]),
            base,
            per_page,
        }
    }

    /// zone_watermark_ok for an allocation of `nr` pages with `free` pages free: more free base
    /// pages than the mark (in base pages) plus the allocation (migrate_balanced_pgdat asks this
    /// of the high watermark).
    pub fn ok(&self, free: u64, mark_base: u64, nr: u64) -> bool {
        free.saturating_mul(self.per_page.max(1)) > mark_base + nr * self.per_page.max(1)
    }

    /// TPP's WMARK_DEMOTE in pages: node x demote_scale_factor / 10000, at least twice the high
    /// watermark, at most the node (computed in base pages, rounded up).
    pub fn tpp_demote(&self, node_pages: u64, demote_scale_factor: u64) -> u64 {
        let pp = self.per_page.max(1);
        let node = node_pages * pp;
        (node.saturating_mul(demote_scale_factor) / 10_000)
            .max(2 * self.base[2])
            .min(node)
            .div_ceil(pp)
    }
}

/// The per-tier LRU lists of every resident page, with the kernel's page flags, kept from the
/// telemetry's allocation, free and migration events.
#[derive(Clone, Debug)]
pub struct Lru {
    /// The lists. A page's tier is the one of the list it is on or, off the lists (isolated),
    /// was last on or was migrated to (its home, `PageLists::home_of`); an isolated page's
    /// destination is kept in its unused links too (`PageLists::aux`). So the LRU keeps only
    /// its links and a flags byte a page. The flags (the kernel's page flags, and the younger
    /// generation of a page with F_LAZY) are the lists' tags: in the links' 8 bytes up to 2^25
    /// pages (`PageLists::with_tags`).
    lists: PageLists,
    resident: Vec<u64>,
    inflight_in: Vec<u64>,
    inflight_out: Vec<u64>,
    isolated: u64,
    marked: u64,
    /// The multi-gen LRU (`lru_gen`) instead of the active and inactive lists.
    gens: bool,
    /// Per tier, the youngest and oldest generation numbers (lrugen->max_seq, min_seq[anon]).
    max_seq: [u64; MAX_TIERS],
    min_seq: [u64; MAX_TIERS],
    /// Per tier and generation list, the pages carrying a younger generation than the list
    /// they sit on (F_LAZY), counted on the list they sit on and on the one they belong to:
    /// generation sizes count pages by their flags, as lru_gen_update_size does.
    lazy_on: [[u64; MAX_NR_GENS as usize]; MAX_TIERS],
    lazy_of: [[u64; MAX_NR_GENS as usize]; MAX_TIERS],
}

impl Default for Lru {
    fn default() -> Self {
        Lru::new()
    }
}

/// What became of a migration result, for the policy's own bookkeeping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// A migration this LRU isolated the page for; `mark` tells whether the page carried the
    /// policy mark (which is cleared now).
    Ours { mark: bool },
    /// A migration someone else requested (another layer); the page followed it.
    Foreign,
    /// The page is not known (freed meanwhile): nothing to do.
    Unknown,
}

#[inline]
fn list(t: TierId, active: bool) -> usize {
    t as usize * LISTS_PER_TIER + active as usize
}

/// The list of generation `seq` of tier `t` (lru_gen_from_seq: seq % MAX_NR_GENS).
#[inline]
fn gen_list(t: TierId, seq: u64) -> usize {
    t as usize * LISTS_PER_TIER + (seq % MAX_NR_GENS) as usize
}

impl Lru {
    pub fn new() -> Self {
        Lru {
            lists: PageLists::with_tags(MAX_TIERS * LISTS_PER_TIER),
            resident: vec![0; MAX_TIERS],
            inflight_in: vec![0; MAX_TIERS],
            inflight_out: vec![0; MAX_TIERS],
            isolated: 0,
            marked: 0,
            gens: false,
            // lru_gen_init_lruvec: max_seq = MIN_NR_GENS + 1, min_seq = 0
            max_seq: [MIN_NR_GENS + 1; MAX_TIERS],
            min_seq: [0; MAX_TIERS],
            lazy_on: [[0; MAX_NR_GENS as usize]; MAX_TIERS],
            lazy_of: [[0; MAX_NR_GENS as usize]; MAX_TIERS],
        }
    }

    /// The multi-gen LRU (Linux >= 6.1 with CONFIG_LRU_GEN_ENABLED, mm/vmscan.c `lru_gen_*`):
    /// each tier's pages sit in up to MAX_NR_GENS generations, aged by page-table walks and
    /// evicted from the oldest. Set before any page is added.
    pub fn with_gens(mut self, on: bool) -> Self {
        assert!(
            self.lists.total() == 0,
            "the LRU's kind is set before pages are added"
        );
        self.gens = on;
        self
    }

    /// Whether this is the multi-gen LRU.
    pub fn gens(&self) -> bool {
        self.gens
    }

    /// A tier's oldest and youngest generation numbers (min_seq, max_seq).
    pub fn seqs(&self, t: TierId) -> (u64, u64) {
        (self.min_seq[t as usize], self.max_seq[t as usize])
    }

    /// Pages in generation `seq` of tier `t` (by their flags: a page a walk found young counts
    /// in the youngest generation before eviction's scan moves it there).
    pub fn gen_len(&self, t: TierId, seq: u64) -> u64 {
        let (min, max) = self.seqs(t);
        if seq < min || seq > max {
            return 0;
        }
        let g = (seq % MAX_NR_GENS) as usize;
        self.lists.len(gen_list(t, seq)) - self.lazy_on[t as usize][g] + self.lazy_of[t as usize][g]
    }

    /// The generation a listed page is in (its seq, by its flags), in the multi-gen LRU.
    pub fn seq_of(&self, p: PageId) -> Option<u64> {
        let t = self.tier(p)?;
        let l = self.lists.list_of(p)?;
        let g = if self.flag(p, F_LAZY) {
            self.lazy_gen(p.0 as usize) as u64
        } else {
            (l % LISTS_PER_TIER) as u64
        };
        let max = self.max_seq[t as usize];
        // the live generations are max - MAX_NR_GENS + 1 ..= max: the one with this index
        Some(max - ((max + MAX_NR_GENS - g) % MAX_NR_GENS))
    }

    /// lru_gen_is_active: a page in one of the two youngest generations counts as active (the
    /// Active(anon) of /proc/meminfo under the multi-gen LRU).
    fn gen_active(&self, t: TierId, seq: u64) -> bool {
        seq + 1 >= self.max_seq[t as usize]
    }

    fn ensure(&mut self, p: PageId) -> usize {
        let i = p.0 as usize;
        if !self.lists.reaches(p) {
            self.lists.cover(p);
        }
        i
    }

    /// The tier a page is resident in (its source tier while a migration is in flight).
    #[inline]
    pub fn tier(&self, p: PageId) -> Option<TierId> {
        self.lists
            .home_of(p)
            .map(|l| (l / LISTS_PER_TIER) as TierId)
    }

    /// Page `i`'s tier, `NO_TIER` for none.
    #[inline]
    fn tier_at(&self, i: usize) -> TierId {
        self.tier(PageId(i as u64)).unwrap_or(NO_TIER)
    }

    /// Make page `i` (on no list) resident in tier `t` (`NO_TIER`: none).
    #[inline]
    fn set_tier(&mut self, i: usize, t: TierId) {
        let home = (t != NO_TIER).then(|| t as usize * LISTS_PER_TIER);
        self.lists.set_home(PageId(i as u64), home);
    }

    /// An isolated page's destination, `NO_TIER` for none.
    #[inline]
    fn dest(&self, i: usize) -> TierId {
        self.lists
            .aux(PageId(i as u64))
            .map_or(NO_TIER, |d| d as TierId)
    }

    #[inline]
    fn set_dest(&mut self, i: usize, d: TierId) {
        let v = (d != NO_TIER).then_some(d as u32);
        self.lists.set_aux(PageId(i as u64), v);
    }

    /// A page's flags (it must be in the table).
    #[inline]
    fn flags(&self, i: usize) -> u8 {
        self.lists.tag_at(i)
    }

    #[inline]
    fn or_flags(&mut self, i: usize, f: u8) {
        self.lists.set_tag_at(i, self.flags(i) | f);
    }

    #[inline]
    fn clear_flags(&mut self, i: usize, f: u8) {
        self.lists.set_tag_at(i, self.flags(i) & !f);
    }

    /// The younger generation (index) of a page with F_LAZY.
    #[inline]
    fn lazy_gen(&self, i: usize) -> u8 {
        (self.flags(i) & GEN_BITS) >> GEN_SHIFT
    }

    #[inline]
    fn set_lazy_gen(&mut self, i: usize, g: u8) {
        debug_assert!((g as u64) < MAX_NR_GENS);
        self.lists
            .set_tag_at(i, (self.flags(i) & !GEN_BITS) | (g << GEN_SHIFT));
    }

    #[inline]
    fn flag(&self, p: PageId, f: u8) -> bool {
        self.lists.tag(p).is_some_and(|x| x & f != 0)
    }

    /// Whether the page is on (or was isolated from) an active list. In the multi-gen LRU,
    /// where no listed folio carries PG_active, whether it is in its tier's youngest generation
    /// (where `activate` puts it, as folio_activate does): TPP's and Nomad's candidate check
    /// (PageActive, written before the multi-gen LRU) reads this; an isolated page, whether it
    /// will arrive active.
    pub fn is_active(&self, p: PageId) -> bool {
        let Some(t) = self.tier(p) else { return false };
        if self.gens && !self.flag(p, F_ISOLATED) {
            return self.seq_of(p) == Some(self.max_seq[t as usize]);
        }
        self.flag(p, F_ACTIVE)
    }

    pub fn is_referenced(&self, p: PageId) -> bool {
        self.tier(p).is_some() && self.flag(p, F_REFERENCED)
    }

    /// Whether a migration this LRU isolated the page for is in flight.
    pub fn is_isolated(&self, p: PageId) -> bool {
        self.tier(p).is_some() && self.flag(p, F_ISOLATED)
    }

    /// Whether the page carries the policy's private mark.
    pub fn is_marked(&self, p: PageId) -> bool {
        self.tier(p).is_some() && self.flag(p, F_MARK)
    }

    /// Set or clear the policy's private mark of a resident page.
    pub fn set_mark(&mut self, p: PageId, on: bool) {
        if self.tier(p).is_some() && self.flag(p, F_MARK) != on {
            let i = p.0 as usize;
            if on {
                self.or_flags(i, F_MARK);
                self.marked += 1;
            } else {
                self.clear_flags(i, F_MARK);
                self.marked -= 1;
            }
        }
    }

    /// Resident pages carrying the policy's mark.
    pub fn marked(&self) -> u64 {
        self.marked
    }

    /// Pages on a tier's active or inactive list; in the multi-gen LRU, in its two youngest
    /// generations or in the older ones (lru_gen_update_size's accounting).
    pub fn len(&self, t: TierId, active: bool) -> u64 {
        if t as usize >= MAX_TIERS {
            return 0;
        }
        if self.gens {
            let (min, max) = self.seqs(t);
            return (min..=max)
                .filter(|&s| self.gen_active(t, s) == active)
                .map(|s| self.gen_len(t, s))
                .sum();
        }
        self.lists.len(list(t, active))
    }

    /// Pages resident in a tier, isolated ones included.
    pub fn resident(&self, t: TierId) -> u64 {
        self.resident.get(t as usize).copied().unwrap_or(0)
    }

    /// Migrations into a tier requested and not yet completed.
    pub fn inflight_in(&self, t: TierId) -> u64 {
        self.inflight_in.get(t as usize).copied().unwrap_or(0)
    }

    /// Migrations out of a tier requested and not yet completed.
    pub fn inflight_out(&self, t: TierId) -> u64 {
        self.inflight_out.get(t as usize).copied().unwrap_or(0)
    }

    /// Pages isolated for a migration.
    pub fn isolated(&self) -> u64 {
        self.isolated
    }

    /// Memory held by the per-page tables, for overhead reports.
    pub fn bytes(&self) -> usize {
        self.lists.bytes()
    }

    /// Bytes the per-page tables take for `pages` pages: the list links with the flags byte
    /// among them (a byte beside them past 2^25 pages): what [`Lru::reserve`] allocates.
    pub const fn bytes_for(pages: u64) -> u64 {
        PageLists::bytes_for_tagged(pages, MAX_TIERS * LISTS_PER_TIER)
    }

    /// Allocate the per-page tables for `pages` pages up front, fallibly.
    pub fn reserve(&mut self, pages: u64) -> tierkit_core::Result<()> {
        self.lists.reserve(pages, "the LRU lists")?;
        Ok(())
    }

    /// A page became resident in tier `t`: it starts at the head of the inactive list (anon
    /// pages since v5.9, lru_cache_add_inactive_or_unevictable); in the multi-gen LRU, in the
    /// youngest generation (folio_add_lru sets PG_active on a folio added in a fault,
    /// `lru_gen_in_fault`, and lru_gen_add_folio puts an active folio at max_seq).
    pub fn add(&mut self, p: PageId, t: TierId) {
        assert!(
            (t as usize) < MAX_TIERS,
            "tier {t} beyond the {MAX_TIERS} tiers the LRU supports"
        );
        self.remove(p);
        let i = self.ensure(p);
        self.set_tier(i, t);
        self.lists.set_tag_at(i, 0);
        self.resident[t as usize] += 1;
        let l = if self.gens {
            gen_list(t, self.max_seq[t as usize])
        } else {
            list(t, false)
        };
        self.lists.push_back(l, p);
    }

    /// A page was freed (or vanished): forget it, and any migration in flight for it.
    pub fn remove(&mut self, p: PageId) {
        let Some(t) = self.tier(p) else { return };
        let i = p.0 as usize;
        if self.flags(i) & F_ISOLATED != 0 {
            self.end_flight(i, t);
        } else {
            self.settle_flag(p);
            self.lists.remove(p);
        }
        if self.flags(i) & F_MARK != 0 {
            self.marked -= 1;
        }
        self.resident[t as usize] -= 1;
        self.set_tier(i, NO_TIER);
        self.lists.set_tag_at(i, 0);
    }

    fn end_flight(&mut self, i: usize, from: TierId) {
        let to = self.dest(i);
        self.inflight_out[from as usize] -= 1;
        if to != NO_TIER {
            self.inflight_in[to as usize] -= 1;
        }
        self.set_dest(i, NO_TIER);
        self.clear_flags(i, F_ISOLATED);
        self.isolated -= 1;
    }

    /// Apply the epoch's allocations and frees from the `allocated`-th allocation and the
    /// `freed`-th free on (0 and 0 for the whole epoch; on the fault path, the ones an earlier
    /// fault of the epoch has not taken yet). Call before [`Lru::complete`] on the epoch's
    /// migration results.
    pub fn observe_from(&mut self, tel: &Telemetry, allocated: usize, freed: usize) {
        for e in tel.allocated.iter_from(allocated) {
            self.add(e.page, e.tier);
        }
        for e in tel.freed.iter_from(freed) {
            self.remove(e.page);
        }
    }

    /// Take a page off its list for a migration to `to` (isolate_lru_page). Returns false when
    /// the page is not on a list (absent or already isolated). In the multi-gen LRU the page
    /// arrives in the youngest generation: a promotion is made in the hint fault, and
    /// folio_add_lru sets PG_active on a folio added in a fault (`lru_gen_in_fault`).
    pub fn isolate(&mut self, p: PageId, to: TierId) -> bool {
        self.isolate_as(p, to, false)
    }

    /// isolate for reclaim: in the multi-gen LRU, lru_gen_del_folio(reclaiming) leaves
    /// PG_active clear, and kswapd's migration adds the page outside a fault, so it arrives in
    /// the generation before the youngest (max_seq - 1, anon not in the swap cache).
    fn isolate_as(&mut self, p: PageId, to: TierId, reclaiming: bool) -> bool {
        let Some(t) = self.tier(p) else { return false };
        let i = p.0 as usize;
        if self.flags(i) & F_ISOLATED != 0 || to as usize >= MAX_TIERS {
            return false;
        }
        if self.gens {
            self.settle_flag(p);
            self.set_active_flag(i, !reclaiming);
        }
        self.lists.remove(p);
        self.or_flags(i, F_ISOLATED);
        self.set_dest(i, to);
        self.inflight_out[t as usize] += 1;
        self.inflight_in[to as usize] += 1;
        self.isolated += 1;
        true
    }

    fn set_active_flag(&mut self, i: usize, on: bool) {
        if on {
            self.or_flags(i, F_ACTIVE);
        } else {
            self.clear_flags(i, F_ACTIVE);
        }
    }

    /// Put a page back at the head of the list its flags say (putback_lru_page). In the
    /// multi-gen LRU, lru_gen_add_folio: an active page goes to the youngest generation, an
    /// anonymous one not in the swap cache to the one before (max_seq - 1), and PG_active is
    /// cleared.
    fn putback(&mut self, p: PageId) {
        let i = p.0 as usize;
        let t = self.tier_at(i);
        if self.gens {
            let max = self.max_seq[t as usize];
            let seq = if self.flags(i) & F_ACTIVE != 0 {
                max
            } else {
                max - 1
            };
            self.clear_flags(i, F_ACTIVE);
            self.lists.push_back(gen_list(t, seq), p);
            return;
        }
        self.lists
            .push_back(list(t, self.flags(i) & F_ACTIVE != 0), p);
    }

    /// Move a listed page to the youngest generation of its tier (folio_update_gen by the
    /// page-table walk or look-around, or folio_activate). Returns whether it moved.
    fn move_to_youngest(&mut self, p: PageId) -> bool {
        let Some(t) = self.tier(p) else { return false };
        let max = self.max_seq[t as usize];
        if self.flag(p, F_ISOLATED) || self.lists.list_of(p) == Some(gen_list(t, max)) {
            return false;
        }
        self.settle_flag(p);
        self.lists.remove(p);
        self.lists.push_back(gen_list(t, max), p);
        true
    }

    /// folio_update_gen from a page-table walk or look-around: the page now belongs to the
    /// youngest generation, but stays where it sits on its list until eviction's scan meets
    /// it (sort_folio). Returns whether its generation changed.
    fn update_gen(&mut self, p: PageId) -> bool {
        let Some(t) = self.tier(p) else { return false };
        if self.flag(p, F_ISOLATED) {
            return false;
        }
        let (ti, max) = (t as usize, self.max_seq[t as usize]);
        // a page not flagged sits on its generation's list, so one already in the youngest
        // generation, by flags or by list, is left as it is
        if self.seq_of(p) == Some(max) {
            return false;
        }
        self.settle_flag(p);
        let Some(l) = self.lists.list_of(p) else {
            return false;
        };
        let g = (max % MAX_NR_GENS) as usize;
        let i = p.0 as usize;
        self.or_flags(i, F_LAZY);
        self.set_lazy_gen(i, g as u8);
        self.lazy_on[ti][l % LISTS_PER_TIER] += 1;
        self.lazy_of[ti][g] += 1;
        true
    }

    /// Forget a page's younger generation (it is moved, isolated or freed).
    fn settle_flag(&mut self, p: PageId) {
        let i = p.0 as usize;
        if self
            .lists
            .tag(PageId(i as u64))
            .is_none_or(|f| f & F_LAZY == 0)
        {
            return;
        }
        let (Some(t), Some(l)) = (self.tier(p), self.lists.list_of(p)) else {
            return;
        };
        let ti = t as usize;
        self.lazy_on[ti][l % LISTS_PER_TIER] -= 1;
        self.lazy_of[ti][self.lazy_gen(i) as usize] -= 1;
        self.clear_flags(i, F_LAZY | GEN_BITS);
    }

    /// The list of the generation a page's flags give it, if they give it one younger than
    /// the list it sits on (F_LAZY).
    fn flagged_list(&self, p: PageId) -> Option<usize> {
        let t = self.tier(p)?;
        self.flag(p, F_LAZY)
            .then(|| gen_list(t, self.lazy_gen(p.0 as usize) as u64))
    }

    /// sort_folio's "promoted" case: a page met on the oldest list whose flags say a younger
    /// generation moves to the young end of that generation's list. Returns whether it moved.
    fn sort_page(&mut self, p: PageId) -> bool {
        let Some(l) = self.flagged_list(p) else {
            return false;
        };
        self.settle_flag(p);
        self.lists.remove(p);
        self.lists.push_back(l, p);
        true
    }

    fn move_tier(&mut self, i: usize, to: TierId) {
        let from = self.tier_at(i);
        if from != to {
            self.resident[from as usize] -= 1;
            self.resident[to as usize] += 1;
            self.set_tier(i, to);
        }
    }

    /// Apply one migration result. A migrated page keeps its PG_active and PG_referenced flags
    /// (migrate_page_states) and lands at the head of the matching list of its new tier; a page
    /// whose migration failed goes back where it was.
    pub fn complete(&mut self, m: &MigrationResult) -> Completion {
        let p = m.page;
        let Some(t) = self.tier(p) else {
            return Completion::Unknown;
        };
        let i = p.0 as usize;
        if m.outcome == MigrationOutcome::NoPage {
            let mark = self.flags(i) & F_MARK != 0;
            let ours = self.flags(i) & F_ISOLATED != 0;
            self.remove(p);
            return if ours {
                Completion::Ours { mark }
            } else {
                Completion::Foreign
            };
        }
        if (m.to as usize) >= MAX_TIERS {
            return Completion::Unknown;
        }
        if self.flags(i) & F_ISOLATED != 0 {
            self.end_flight(i, t);
            let mark = self.flags(i) & F_MARK != 0;
            self.set_mark(p, false);
            if matches!(
                m.outcome,
                MigrationOutcome::Done | MigrationOutcome::AlreadyThere
            ) {
                self.move_tier(i, m.to);
            }
            self.putback(p);
            Completion::Ours { mark }
        } else {
            if matches!(
                m.outcome,
                MigrationOutcome::Done | MigrationOutcome::AlreadyThere
            ) && t != m.to
            {
                if self.gens {
                    // lru_gen_del_folio: a page isolated from one of the two youngest
                    // generations carries PG_active
                    let active = self.seq_of(p).is_some_and(|s| self.gen_active(t, s));
                    self.settle_flag(p);
                    self.set_active_flag(i, active);
                }
                self.lists.remove(p);
                self.move_tier(i, m.to);
                self.putback(p);
            }
            Completion::Foreign
        }
    }

    /// mark_page_accessed as the TPP paper describes its hint-fault path (and as TPP-mod of the
    /// migration-toggling paper, §4.5, implements it): an inactive page moves to the head of the
    /// active list at once, without the kernel's two-call PG_referenced step and per-CPU pagevec
    /// delay. Returns whether the page was activated.
    /// In the multi-gen LRU the page moves to its tier's youngest generation (folio_activate).
    pub fn activate(&mut self, p: PageId) -> bool {
        if self.tier(p).is_none() {
            return false;
        }
        if self.gens {
            return self.move_to_youngest(p);
        }
        let i = p.0 as usize;
        if self.flags(i) & (F_ISOLATED | F_ACTIVE) != 0 {
            return false;
        }
        self.lists
            .set_tag_at(i, (self.flags(i) | F_ACTIVE) & !F_REFERENCED);
        self.putback(p);
        true
    }

    /// inactive_is_low: the inactive list is short of its target ratio to the active list
    /// (inactive x sqrt(10 x GiB) < active; ratio 1 below 1 GiB).
    pub fn inactive_is_low(&self, t: TierId, page_bytes: u64) -> bool {
        inactive_is_low(self.len(t, false), self.len(t, true), page_bytes)
    }

    fn pop_oldest(&mut self, t: TierId, active: bool) -> Option<PageId> {
        self.lists.pop_front(list(t, active))
    }

    /// try_to_inc_min_seq: the oldest generation moves past empty generations, keeping at
    /// least MIN_NR_GENS.
    fn try_inc_min_seq(&mut self, t: TierId) {
        let ti = t as usize;
        while self.min_seq[ti] + MIN_NR_GENS <= self.max_seq[ti]
            && self.lists.len(gen_list(t, self.min_seq[ti])) == 0
        {
            self.min_seq[ti] += 1;
        }
    }

    /// inc_max_seq: a new, empty youngest generation. With MAX_NR_GENS generations already,
    /// the oldest is first folded into the next (inc_min_seq: its pages move to min_seq + 1,
    /// folio_inc_gen, at the old end). kswapd's aging never gets here (should_run_aging ages
    /// only with two or three generations); a forced aging (debugfs) would.
    fn inc_max_seq(&mut self, t: TierId) {
        let ti = t as usize;
        self.try_inc_min_seq(t);
        if self.max_seq[ti] - self.min_seq[ti] + 1 >= MAX_NR_GENS {
            let (from, to) = (
                gen_list(t, self.min_seq[ti]),
                gen_list(t, self.min_seq[ti] + 1),
            );
            // inc_min_seq takes each folio from the old end (lru_to_folio) and puts it at the
            // old end of its new generation (list_move_tail), so the folded pages arrive in
            // reverse order; a page whose flags say a younger generation goes to that one
            // (folio_inc_gen returns the generation folio_update_gen gave it)
            while let Some(p) = self.lists.front(from) {
                let l = match self.flagged_list(p) {
                    Some(l) => {
                        self.settle_flag(p);
                        l
                    }
                    None => to,
                };
                self.lists.remove(p);
                self.lists.push_front(l, p);
            }
            self.min_seq[ti] += 1;
        }
        self.max_seq[ti] += 1;
    }

    /// Check the invariants (every resident page not isolated is on exactly the list its tier
    /// and PG_active say, or in one of its tier's live generations, nothing else is on a list,
    /// the counters add up). O(pages): tests only.
    pub fn check(&self) -> Result<(), String> {
        let mut listed = 0u64;
        for t in 0..MAX_TIERS as u8 {
            if self.gens {
                let (min, max) = self.seqs(t);
                if max < min + MIN_NR_GENS - 1 || max - min + 1 > MAX_NR_GENS {
                    return Err(format!("tier {t} has generations {min}..={max}"));
                }
                for g in 0..MAX_NR_GENS {
                    let live = (min..=max).any(|s| s % MAX_NR_GENS == g);
                    let l = t as usize * LISTS_PER_TIER + g as usize;
                    if !live && self.lists.len(l) > 0 {
                        return Err(format!("tier {t}'s dead generation list {g} holds pages"));
                    }
                    for p in self.lists.iter(l) {
                        listed += 1;
                        if self.tier(p) != Some(t) || self.is_isolated(p) {
                            return Err(format!("page {} on tier {t}'s generation {g}", p.0));
                        }
                        if self.flags(p.0 as usize) & (F_ACTIVE | F_REFERENCED) != 0 {
                            return Err(format!("listed page {} carries a classic flag", p.0));
                        }
                    }
                }
                continue;
            }
            for g in 2..LISTS_PER_TIER {
                if self.lists.len(t as usize * LISTS_PER_TIER + g) > 0 {
                    return Err(format!("tier {t}'s unused list {g} holds pages"));
                }
            }
            for active in [false, true] {
                for p in self.lists.iter(list(t, active)) {
                    listed += 1;
                    if self.tier(p) != Some(t) {
                        return Err(format!(
                            "page {} on tier {t}'s list but resident in {:?}",
                            p.0,
                            self.tier(p)
                        ));
                    }
                    if self.is_isolated(p) || self.is_active(p) != active {
                        return Err(format!("page {} on the wrong list (active {active})", p.0));
                    }
                }
            }
        }
        let (mut lazy_on, mut lazy_of) = (self.lazy_on, self.lazy_of);
        let tiers: Vec<TierId> = (0..self.lists.reach()).map(|i| self.tier_at(i)).collect();
        for (i, &t) in tiers.iter().enumerate() {
            if t != NO_TIER && self.flags(i) & F_LAZY != 0 {
                let Some(l) = self.lists.list_of(PageId(i as u64)) else {
                    return Err(format!("page {i} with a younger generation is not listed"));
                };
                lazy_on[t as usize][l % LISTS_PER_TIER] =
                    lazy_on[t as usize][l % LISTS_PER_TIER].wrapping_sub(1);
                let g = self.lazy_gen(i) as usize;
                lazy_of[t as usize][g] = lazy_of[t as usize][g].wrapping_sub(1);
            }
        }
        if lazy_on.iter().chain(&lazy_of).flatten().any(|&n| n != 0) {
            return Err("the younger-generation counters disagree".into());
        }
        let mut resident = vec![0u64; MAX_TIERS];
        let marked = tiers
            .iter()
            .enumerate()
            .filter(|&(i, &t)| t != NO_TIER && self.flags(i) & F_MARK != 0)
            .count() as u64;
        if marked != self.marked {
            return Err(format!(
                "{marked} marked pages, counter says {}",
                self.marked
            ));
        }
        let (mut isolated, mut inflight_in, mut inflight_out) =
            (0, vec![0u64; MAX_TIERS], vec![0u64; MAX_TIERS]);
        for (i, &t) in tiers.iter().enumerate() {
            let p = PageId(i as u64);
            if t == NO_TIER {
                if self.lists.list_of(p).is_some() {
                    return Err(format!("absent page {i} is on a list"));
                }
                continue;
            }
            resident[t as usize] += 1;
            if self.flags(i) & F_ISOLATED != 0 {
                isolated += 1;
                inflight_out[t as usize] += 1;
                inflight_in[self.dest(i) as usize] += 1;
                if self.lists.list_of(p).is_some() {
                    return Err(format!("isolated page {i} is on a list"));
                }
            } else if self.gens {
                if self
                    .lists
                    .list_of(p)
                    .is_none_or(|l| l / LISTS_PER_TIER != t as usize)
                {
                    return Err(format!(
                        "resident page {i} is not in its tier's generations"
                    ));
                }
            } else if self.lists.list_of(p) != Some(list(t, self.flags(i) & F_ACTIVE != 0)) {
                return Err(format!("resident page {i} is not on its list"));
            }
        }
        if resident != self.resident || isolated != self.isolated {
            return Err(format!(
                "counts {:?}/{} != {:?}/{}",
                self.resident, self.isolated, resident, isolated
            ));
        }
        if inflight_in != self.inflight_in || inflight_out != self.inflight_out {
            return Err("in-flight counters disagree".into());
        }
        if listed + isolated != resident.iter().sum::<u64>() {
            return Err("a resident page is on two lists or none".into());
        }
        Ok(())
    }
}

/// One kswapd pass's setting: reclaim from `tier` into `target` while the tier's free pages are
/// below `balanced_at`, waking when they drop below `wake_below`.
#[derive(Clone, Copy, Debug)]
pub struct Reclaim {
    pub tier: TierId,
    pub target: TierId,
    /// Free pages of the tier, counting requested migrations as done.
    pub free: u64,
    pub wake_below: u64,
    pub balanced_at: u64,
    /// Most pages to examine in this pass.
    pub max_scan: u64,
    /// What one kswapd_shrink_node pass reclaims before balance_pgdat checks the watermark
    /// again: the high watermark, at least SWAP_CLUSTER_MAX base pages (sc->nr_to_reclaim).
    pub nr_to_reclaim: u64,
    pub page_bytes: u64,
    /// When this pass starts (ns) and how long examining one page takes: kswapd tests the
    /// accessed bits of its k-th batch at start_ns + (pages examined before + 1/2) x
    /// ns_per_page, so a page it meets twice in one pass is tested at two instants.
    pub start_ns: u64,
    pub ns_per_page: f64,
    /// Whether every zone kswapd may reclaim for can pass its watermark check (false with the
    /// DMA zone, whose lowmem_reserve keeps it below): the multi-gen LRU's should_abort_scan
    /// ends a shrink early only when they all pass.
    pub zones_can_pass: bool,
}

impl Reclaim {
    /// When kswapd tests the page it meets after `cost` examinations of this pass: halfway
    /// through the next one.
    fn test_at(&self, cost: f64) -> u64 {
        self.start_ns + ((cost + 0.5) * self.ns_per_page) as u64
    }

    /// Base pages per page (the kernel counts its batches in base pages).
    fn per_page(&self) -> u64 {
        (self.page_bytes / DEFAULT_PAGE_BYTES).max(1)
    }
}

/// kswapd of one tier: sleeps until woken, then ages and shrinks the LRU, demoting unreferenced
/// inactive pages (asynchronously, by its own thread) until the tier is balanced.
#[derive(Clone, Debug, Default)]
pub struct Kswapd {
    pub awake: bool,
    pub wakeups: u64,
    pub scanned: u64,
    pub deactivated: u64,
    /// Inactive pages referenced once: kept on the inactive list with PG_referenced set.
    pub kept: u64,
    /// Inactive pages referenced again: back to the active list (second chance).
    pub activated: u64,
    pub demotions: u64,
    /// pgdat->kswapd_failures: balance_pgdat runs in a row that reclaimed nothing. At
    /// `max_retries` (Linux: MAX_RECLAIM_RETRIES) the node is hopeless: kswapd sleeps and wakeup_kswapd ignores it
    /// (there is no direct reclaim here to succeed on it and reset the count).
    pub failures: u32,
    /// Times kswapd gave the node up (failures reached `max_retries`).
    pub gave_up: u64,
    /// `max_reclaim_retries`: failures that give the node up (0: never).
    pub max_retries: u32,
    /// Wakeups ignored because the node was hopeless.
    pub wakeups_ignored: u64,
    /// Pages the current kswapd_shrink_node pass still has to reclaim.
    pass_left: u64,
    /// The current balance_pgdat run (its priority loop, DEF_PRIORITY down to 1, scans each
    /// list's size >> priority, about the LRU once in all): the pages it covers, has examined
    /// and has reclaimed. 0 pages covered: no run under way.
    run_len: u64,
    run_scanned: u64,
    run_reclaimed: u64,
    /// `lru_stats_flush_ms` in ns (0: exact sizes) and the sizes (inactive, active) the aging
    /// decision reads, with the flush period they were taken in.
    pub stats_flush_ns: u64,
    seen: Option<(u64, u64, u64)>,
    batch: Vec<PageId>,
    bits: Vec<bool>,
    /// Multi-gen LRU: generations aged (max_seq increments by try_to_inc_max_seq).
    pub agings: u64,
    /// Multi-gen LRU: accessed bits the aging walks and look-arounds tested, and the pages
    /// they found young and moved to the youngest generation.
    pub walk_tested: u64,
    pub walk_young: u64,
    /// The current balance_pgdat run's priority (DEF_PRIORITY down to 1); 0: no run.
    prio: u8,
    /// The current kswapd_shrink_node pass: under way, pages isolated (sc->nr_scanned),
    /// reclaimed, and what try_to_shrink_lruvec scanned towards its nr_to_scan.
    in_pass: bool,
    pass_scanned: u64,
    pass_reclaimed: u64,
    lruvec_scanned: u64,
    /// An aging walk under way: the pages it visits and how far it got.
    walk: Vec<PageId>,
    walk_pos: usize,
    walking: bool,
    /// The walks' two Bloom filters (mm_state->filters, indexed by seq % 2): the page-table
    /// pages (2 MiB blocks) a walk of that seq visits. The walk of seq tests filters[seq] and
    /// fills filters[seq + 1], which it resets when it walks its first process
    /// (iterate_mm_list), with the blocks where at least an eighth of the PTEs were young
    /// (`suitable_to_scan`); look-around adds to filters[max_seq]. None until first reset: the
    /// walk visits every block.
    filters: [Option<rustc_hash::FxHashSet<u64>>; 2],
    /// The walk's seq (max_seq when it began) and whether it has reset filters[seq + 1].
    walk_seq: u64,
    walk_reset: bool,
    /// The block the walk is in: its key, young and tested pages, and its PTEs (the total
    /// suitable_to_scan reads).
    walk_block: Option<(u64, u64, u64, u64)>,
    /// Pages a walk passed over because the Bloom filter left their block out.
    pub walk_skipped: u64,
    /// `lru_gen_mm_tables`: blocks belong to one process and count all their PTEs.
    pub mm_tables: bool,
    /// `lru_gen_mm_switch_ms` in ns (0: every walk walks every process).
    pub mm_switch_ns: u64,
    /// kswapd's own time per 4 KiB it demotes (`kswapd_demote_us`), ns.
    pub demote_ns: u64,
    /// A zone below the main one (x86's DMA zone) stays above its watermark + lowmem_reserve
    /// at order 0, so pgdat_balanced accepts the node on its account whenever it is checked
    /// at order 0 (it accepts the node when any eligible zone passes): kswapd is not woken for
    /// an order-0 demand (wakeup_kswapd), and a run woken for a huge page (order 9) ends once
    /// it has reclaimed compact_gap, two huge pages, when kswapd_shrink_node drops its order to
    /// 0 (nbt's `dma_zone_balanced`; docs/validation.md, section 1zd).
    pub order0_balanced: bool,
    /// The processes' address spaces (page-id ranges, by start), the telemetry's objects
    /// grouped by pid; empty: one address space.
    mms: Vec<MmSpan>,
    mms_key: usize,
    /// The process the walk is in (index into `mms`) and whether it walks it.
    walk_mm: Option<(usize, bool)>,
    /// should_skip_mm: processes the walks walked and passed over, and the fast-tier pages
    /// they passed over with them.
    pub mm_walked: u64,
    pub mm_skipped: u64,
    pub walk_mm_skipped: u64,
    /// Pages eviction's scan moved to the younger generation their flags say (sort_folio).
    pub sorted: u64,
    /// Multi-gen eviction: pages whose accessed bit folio_referenced tested (each an rmap
    /// walk ending in lru_gen_look_around, whose calls the guest counts), and pages kept
    /// untested because a look-around before them in their batch found them young.
    pub rmap_tested: u64,
    pub kept_referenced: u64,
    /// Multi-gen eviction's batches (evict_folios calls that isolated pages, one
    /// mm_vmscan_lru_shrink_inactive event each in the kernel), those that reclaimed fewer than
    /// 8 of their pages and those that reclaimed at least 56: the kernel's are bimodal, runs of
    /// neighbouring young pages kept whole beside cold runs reclaimed whole (docs/validation.md,
    /// section 1g).
    pub evict_batches: u64,
    pub evict_batches_few: u64,
    pub evict_batches_most: u64,
    /// Multi-gen: balance_pgdat runs begun (one mm_vmscan_kswapd_wake each in the kernel; a
    /// wakeup holds one or more: kswapd runs again at once while the node is not balanced).
    pub runs: u64,
    /// The aging walks' own counts, as the kernel's mm_stats keeps them (lru_gen_full's T Y F
    /// A): leaf PTEs read (MM_LEAF_TOTAL; with `mm_tables` every PTE of a block, otherwise the
    /// fast tier's pages) and found young, page-table pages entered (MM_NONLEAF_FOUND) and
    /// added to the next walk's filter (MM_NONLEAF_ADDED).
    pub walk_leaf_total: u64,
    pub walk_leaf_young: u64,
    pub walk_nonleaf_found: u64,
    pub walk_nonleaf_added: u64,
    /// Look-around's neighbours of the page at hand (a buffer kept between calls), and the
    /// bit of the page eviction tests.
    near: Vec<PageId>,
    near_bits: Vec<bool>,
    /// kswapd's clock: when the work it has done so far ends, or when it was last woken (ns).
    /// A step whose interval begins before it starts there, so no page is tested at an instant
    /// already passed and a batch past one interval's budget counts against the next.
    clock_ns: u64,
}

/// One process's address space for the multi-gen walk: its pages [start, end), the phase of its
/// switch-ins and when a walk last walked it.
#[derive(Clone, Debug)]
struct MmSpan {
    start: u64,
    end: u64,
    phase_ns: u64,
    last_walk_ns: Option<u64>,
}

/// Whether a process switched in every `period` ns (at `phase` + k x period) was switched in
/// within (a, b].
fn switched_in(phase: u64, period: u64, a: u64, b: u64) -> bool {
    let n = |x: u64| (x + period - phase % period) / period;
    n(b) > n(a)
}

/// What get_nr_to_scan decided for the multi-gen LRU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NrToScan {
    /// Evict up to this many pages (size >> priority).
    Scan(u64),
    /// Nothing to evict at this priority (the pass ends).
    Skip,
    /// Age first (try_to_inc_max_seq), then the pass ends (-1: rotate).
    Age,
}

/// The cost of one accessed-bit test by the aging walk or look-around, in rmap examinations
/// (`kswapd_scan_per_ms` counts those): the walk reads the PTEs of a page-table page in order,
/// eight to a cache line, where an rmap examination walks the anon_vma and the page table for
/// one folio. An assumption of the model, not a kernel figure.
const PTE_TEST_COST: f64 = 0.125;

impl Kswapd {
    /// wakeup_kswapd from an allocation or promotion that hit the watermark. A hopeless node
    /// (kswapd_failures at MAX_RECLAIM_RETRIES) is left alone.
    pub fn wake(&mut self) {
        if self.hopeless() {
            self.wakeups_ignored += 1;
            return;
        }
        if !self.awake {
            self.awake = true;
            self.wakeups += 1;
        }
    }

    /// [`Kswapd::wake`] at `t_ns` (the instant of the fault whose promotion woke it): a kswapd
    /// asleep until then does no work before it. The step that runs it stands for an interval
    /// that may begin earlier (the epoch); without the wake's instant its budget and its
    /// accessed-bit tests would start with the interval, before anything woke it, and how much
    /// it did before the promotions that follow the wake would grow with the epoch.
    pub fn wake_at(&mut self, t_ns: u64) {
        let asleep = !self.awake;
        self.wake();
        if asleep && self.awake {
            self.clock_ns = self.clock_ns.max(t_ns);
        }
    }

    /// pgdat_balanced for the demand at hand: the tier's free pages (with the demotions this
    /// step asked for) at `balanced_at`, or, with [`Kswapd::order0_balanced`], a check at
    /// order 0: a run on base pages always is one, and a run on huge pages (order 9) drops to
    /// order 0 once it has reclaimed compact_gap(9) = 1024 base pages, two huge pages
    /// (kswapd_shrink_node: `sc->nr_reclaimed >= compact_gap(sc->order)`), counting the
    /// passes done (`run_reclaimed`: the pages the run has reclaimed).
    fn balanced(&self, r: &Reclaim, demoted: u64, run_reclaimed: u64) -> bool {
        self.balanced_at_wake(r.free + demoted, r.balanced_at, r.page_bytes)
            || (self.order0_balanced && run_reclaimed >= 2)
    }

    /// wakeup_kswapd's pgdat_balanced check at the demand's order (balance_pgdat's at a run's
    /// start): whether a wakeup for a page of `page_bytes` (a failed promotion's) with `free`
    /// of `balanced_at` free is left alone.
    pub fn balanced_at_wake(&self, free: u64, balanced_at: u64, page_bytes: u64) -> bool {
        free >= balanced_at || (self.order0_balanced && page_bytes <= DEFAULT_PAGE_BYTES)
    }

    /// The processes' address spaces from the telemetry's objects (each process's objects
    /// are laid out one after another in page ids), for `lru_gen_mm_tables` and
    /// `lru_gen_mm_switch_ms`; kept while the objects are the same.
    pub fn set_address_spaces(&mut self, objects: &[tierkit_core::ObjectInfo]) {
        if !self.mms.is_empty() && self.mms_key == objects.len() {
            return;
        }
        let mut by_pid: std::collections::BTreeMap<u32, (u64, u64)> = Default::default();
        for o in objects.iter().filter(|o| o.pages > 0) {
            let e = by_pid
                .entry(o.pid)
                .or_insert((o.first_page.0, o.first_page.0 + o.pages));
            e.0 = e.0.min(o.first_page.0);
            e.1 = e.1.max(o.first_page.0 + o.pages);
        }
        let period = self.mm_switch_ns.max(1);
        self.mms = by_pid
            .into_iter()
            .map(|(pid, (start, end))| MmSpan {
                start,
                end,
                phase_ns: tierkit_core::Rng::derive(0x6d6d_5f73, pid as u64).next_u64() % period,
                last_walk_ns: None,
            })
            .collect();
        self.mms.sort_by_key(|m| m.start);
        self.mms_key = objects.len();
        self.walk_mm = None;
    }

    /// The process whose address space holds page `p`.
    fn mm_of(&self, p: u64) -> Option<usize> {
        let i = self.mms.partition_point(|m| m.start <= p);
        (i > 0 && p < self.mms[i - 1].end).then(|| i - 1)
    }

    /// The page-table block of page `p`: its key and its pages [first, end) (their number is
    /// the total suitable_to_scan reads). With `mm_tables`, the block of the process's own
    /// address space, cut at its end (look-around's min(addr | ~PMD_MASK, vm_end)); otherwise
    /// the block of global page ids.
    fn block_of(&self, p: PageId, per_pmd: u64) -> (u64, u64, u64) {
        if self.mm_tables {
            if let Some(i) = self.mm_of(p.0) {
                let m = &self.mms[i];
                let b = (p.0 - m.start) / per_pmd;
                let first = m.start + b * per_pmd;
                return (
                    ((i as u64 + 1) << 40) | b,
                    first,
                    (first + per_pmd).min(m.end),
                );
            }
        }
        let first = p.0 / per_pmd * per_pmd;
        (p.0 / per_pmd, first, first + per_pmd)
    }

    /// test_bloom_filter: whether the walk of `seq` visits `block` (always, before a reset).
    fn filter_has(&self, seq: u64, block: u64) -> bool {
        self.filters[(seq % 2) as usize]
            .as_ref()
            .is_none_or(|f| f.contains(&block))
    }

    /// update_bloom_filter: add `block` to the filter of `seq`, if it has one.
    fn filter_add(&mut self, seq: u64, block: u64) {
        if let Some(f) = self.filters[(seq % 2) as usize].as_mut() {
            f.insert(block);
        }
    }

    /// reset_bloom_filter: empty (or create) the filter of `seq`.
    fn filter_reset(&mut self, seq: u64) {
        self.filters[(seq % 2) as usize]
            .get_or_insert_with(Default::default)
            .clear();
    }

    /// The walk reaches process `i` at `now`: get_next_mm walks it if it was switched in since
    /// its last walk (or was never walked), and the first process a walk walks resets the
    /// next walk's filter (iterate_mm_list). Returns whether it is walked.
    fn enter_mm(&mut self, i: usize, now: u64) -> bool {
        let period = self.mm_switch_ns;
        let m = &mut self.mms[i];
        let on = match m.last_walk_ns {
            None => true,
            Some(last) => switched_in(m.phase_ns, period, last, now),
        };
        if on {
            m.last_walk_ns = Some(now);
            self.mm_walked += 1;
            if !self.walk_reset {
                self.filter_reset(self.walk_seq + 1);
                self.walk_reset = true;
            }
        } else {
            self.mm_skipped += 1;
        }
        on
    }

    /// pgdat->kswapd_failures >= MAX_RECLAIM_RETRIES (`max_retries`; never with 0).
    pub fn hopeless(&self) -> bool {
        self.max_retries > 0 && self.failures >= self.max_retries
    }

    /// With `stats_flush_ns`: the statistics flush (rstat's periodic flush_memcg_stats_dwork,
    /// at the multiples of the period) takes the list sizes when a period has begun since the
    /// last one, whether kswapd is awake or not. Called at the start of every step, so a flush
    /// is taken at most one step late.
    fn flush_stats(&mut self, lru: &Lru, t: TierId, now_ns: u64) {
        if self.stats_flush_ns == 0 {
            return;
        }
        let period = now_ns / self.stats_flush_ns;
        if self.seen.is_none_or(|(p, _, _)| p != period) {
            self.seen = Some((period, lru.len(t, false), lru.len(t, true)));
        }
    }

    /// inactive_is_low as kswapd_age_node and shrink_lruvec read it: from the exact list sizes,
    /// or, with `stats_flush_ns`, from those of the last flush.
    fn inactive_low(&self, lru: &Lru, t: TierId, page_bytes: u64) -> bool {
        match self.seen {
            Some((_, inactive, active)) if self.stats_flush_ns > 0 => {
                inactive_is_low(inactive, active, page_bytes)
            }
            _ => lru.inactive_is_low(t, page_bytes),
        }
    }

    /// One pass of balance_pgdat. Returns the demotions requested.
    pub fn run(
        &mut self,
        lru: &mut Lru,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
        r: &Reclaim,
    ) -> u64 {
        if !lru.gens() {
            self.flush_stats(lru, r.tier, r.start_ns);
        }
        // the wake of an allocation below the low watermark: an order-0 demand (a huge page's
        // allocation at a fault does not wake kswapd: GFP_TRANSHUGE_LIGHT), which a zone
        // above its order-0 bar (`order0_balanced`) answers without waking it
        if !self.awake && r.free < r.wake_below && !self.order0_balanced {
            self.wake();
        }
        if !self.awake {
            return 0;
        }
        if lru.gens() {
            return self.run_gens(lru, mech, out, r);
        }
        // kswapd's clock: the run starts where its work so far ended (a batch past the last
        // interval's budget) or where it was woken (`wake_at`), with what is left of the budget
        let late;
        let r = if self.clock_ns > r.start_ns {
            let skip = ((self.clock_ns - r.start_ns) as f64 / r.ns_per_page) as u64;
            late = Reclaim {
                start_ns: self.clock_ns,
                max_scan: r.max_scan.saturating_sub(skip),
                ..*r
            };
            &late
        } else {
            r
        };
        let (mut scanned, mut demoted) = (0u64, 0u64);
        loop {
            if self.pass_left == 0 {
                // balance_pgdat: balanced, sleep (the run ends without counting); otherwise
                // another kswapd_shrink_node pass.
                // (a run under way counts what it reclaimed; none: the next starts at the
                // demand's order)
                let reclaimed = if self.run_len > 0 {
                    self.run_reclaimed
                } else {
                    0
                };
                if self.balanced(r, demoted, reclaimed) {
                    self.awake = false;
                    self.run_len = 0;
                    break;
                }
                self.pass_left = r.nr_to_reclaim.max(1);
            }
            let on_lru = lru.len(r.tier, false) + lru.len(r.tier, true);
            // the pages examined and the demotions' copies (`kswapd_demote_us`), in pages' time
            let work = scanned as f64 + self.demote_cost(r, demoted);
            if work >= r.max_scan as f64 || on_lru == 0 {
                break;
            }
            if self.run_len == 0 {
                self.run_len = on_lru;
                self.run_scanned = 0;
                self.run_reclaimed = 0;
            }
            let mut n = 0;
            if self.inactive_low(lru, r.tier, r.page_bytes) {
                n += self.shrink_active(lru, mech, r.tier, r.test_at(work));
            }
            let (ni, d) =
                self.shrink_inactive(lru, mech, out, r.tier, r.target, r.test_at(work + n as f64));
            n += ni;
            scanned += n;
            demoted += d;
            self.pass_left = self.pass_left.saturating_sub(d);
            self.run_scanned += n;
            self.run_reclaimed += d;
            if d > 0 {
                // shrink_node: reclaim progress resets the failure count
                self.failures = 0;
            }
            // the run's priority loop is done when it has covered the LRU, or at once when
            // there is nothing left to scan (an empty inactive list the aging did not refill)
            if ni == 0 || self.run_scanned >= self.run_len {
                self.run_len = 0;
                if self.run_reclaimed == 0 {
                    self.failures = self.failures.saturating_add(1);
                    if self.hopeless() {
                        // prepare_kswapd_sleep: a hopeless node, kswapd sleeps
                        self.awake = false;
                        self.gave_up += 1;
                        break;
                    }
                }
            }
        }
        self.scanned += scanned;
        self.demotions += demoted;
        if scanned > 0 {
            let work = scanned as f64 + self.demote_cost(r, demoted);
            let end = r.start_ns + (work * r.ns_per_page) as u64;
            mech.kernel_ran(r.start_ns, end);
            self.clock_ns = self.clock_ns.max(end);
        }
        demoted
    }

    /// balance_pgdat with the multi-gen LRU (Linux 6.12 mm/vmscan.c): `kswapd_age_node` does
    /// nothing (`lru_gen_age_node` returns at once while `lru_gen_min_ttl` is 0, the default),
    /// and each `kswapd_shrink_node` pass runs `lru_gen_shrink_node`, whose
    /// `try_to_shrink_lruvec` asks `get_nr_to_scan` and either evicts batches from the oldest
    /// generation (`evict_folios`) until it has scanned size >> priority pages or
    /// `should_abort_scan`, or ages (`try_to_inc_max_seq`) and ends the pass. The run lowers its
    /// priority after a pass that scanned less than it should reclaim or reclaimed nothing,
    /// and ends when the node is balanced or the priority reaches 0. A run that reclaims nothing
    /// counts a failure (balance_pgdat) and any progress resets them (lru_gen_shrink_node), as
    /// with the classic LRU.
    /// Work is bounded per step by `max_scan` rmap examinations; an aging walk is carried over
    /// steps. Called by [`Kswapd::run`] once kswapd is awake.
    fn run_gens(
        &mut self,
        lru: &mut Lru,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
        r: &Reclaim,
    ) -> u64 {
        // kswapd's own clock: work that ran past the last step's interval is done first
        let debt = self.clock_ns.saturating_sub(r.start_ns) as f64 / r.ns_per_page;
        let (mut cost, mut demoted) = (debt, 0u64);
        let budget = r.max_scan as f64;
        let t = r.tier;
        // where the current balance_pgdat run began in this step (a run carried over from the
        // last step began before it)
        let mut run_began = f64::NEG_INFINITY;
        loop {
            if self.walking {
                cost += self.walk_step(lru, mech, t, cost, budget - cost, r);
                if self.walking {
                    break;
                }
                // try_to_inc_max_seq done: get_nr_to_scan returns -1, the pass ends
                if self.end_pass(r, demoted, cost, run_began) {
                    break;
                }
                continue;
            }
            if self.prio == 0 {
                // a run that ended balanced put kswapd to sleep (end_pass); a new run begins
                // at the demand's order
                self.run_reclaimed = 0;
                if !self.awake || self.balanced(r, demoted, 0) {
                    self.awake = false;
                    break;
                }
                self.prio = DEF_PRIORITY;
                // a balance_pgdat run begins (the kernel's mm_vmscan_kswapd_wake)
                self.runs += 1;
                run_began = cost;
            }
            if !self.in_pass {
                self.in_pass = true;
                self.pass_scanned = 0;
                self.pass_reclaimed = 0;
                self.lruvec_scanned = 0;
                if self.prio == DEF_PRIORITY {
                    self.prio = initial_priority(lru, t, r.nr_to_reclaim, r.per_page());
                }
            }
            if cost >= budget {
                break;
            }
            match get_nr_to_scan(lru, t, self.prio, r.per_page()) {
                NrToScan::Age => self.begin_walk(lru, t),
                NrToScan::Skip => {
                    // a pass costs at least its bookkeeping
                    cost += 1.0;
                    if self.end_pass(r, demoted, cost, run_began) {
                        break;
                    }
                }
                NrToScan::Scan(nr) => {
                    let (delta, isolated, d, c) = self.evict(lru, mech, out, r, cost);
                    // the demotions' copies, which shrink_folio_list makes itself
                    cost += c + self.demote_cost(r, d);
                    // pgscan_kswapd counts the isolated pages (scan_folios)
                    self.scanned += isolated;
                    demoted += d;
                    self.pass_scanned += isolated;
                    self.pass_reclaimed += d;
                    self.lruvec_scanned += delta;
                    // should_abort_scan: enough reclaimed, or every eligible zone is safe
                    // again (never, with the DMA zone below its lowmem_reserve). "Enough" is
                    // sc->nr_reclaimed, which counts the whole balance_pgdat run (its priority
                    // loop keeps one scan_control), against kswapd_shrink_node's nr_to_reclaim
                    let abort = self.run_reclaimed + self.pass_reclaimed >= r.nr_to_reclaim.max(1)
                        || (r.zones_can_pass
                            && r.free + demoted
                                >= r.balanced_at + MIN_LRU_BATCH.div_ceil(r.per_page()));
                    if (delta == 0 || self.lruvec_scanned >= nr || abort)
                        && self.end_pass(r, demoted, cost, run_began)
                    {
                        break;
                    }
                }
            }
        }
        self.demotions += demoted;
        let from = self.clock_ns.max(r.start_ns);
        self.clock_ns = self
            .clock_ns
            .max(r.start_ns + (cost * r.ns_per_page) as u64);
        // kswapd had the CPU for this step's work (a backend whose processes share it with
        // kswapd makes no access then)
        if self.clock_ns > from {
            mech.kernel_ran(from, self.clock_ns);
        }
        demoted
    }

    /// kswapd's time for `demoted` demotions' copies, in units of its time per examined page.
    fn demote_cost(&self, r: &Reclaim, demoted: u64) -> f64 {
        if self.demote_ns == 0 {
            return 0.0;
        }
        (demoted * r.per_page()) as f64 * self.demote_ns as f64 / r.ns_per_page
    }

    /// The end of a kswapd_shrink_node pass: balance_pgdat's priority step, its balanced check
    /// and the end of the run. Returns true when this step's work ends after a run that
    /// reclaimed nothing (`cost`: the step's cost so far; `run_began`: where the run began in
    /// it). kswapd() calls balance_pgdat again at once while the node is not balanced
    /// (kswapd_try_to_sleep does not sleep: prepare_kswapd_sleep is false), so the next run
    /// starts in the same step, where the run's cost left it, and its tests fall that much
    /// later: waiting for the next step instead made the pause between two runs, and so what
    /// the pages read, depend on the step (press-thp promoted 0.94x as much at 1 ms as at
    /// 0.25 ms; docs/validation.md, section 1zc). The step's work ends only when kswapd now
    /// sleeps (a hopeless node) or the run cost nothing in this step (the next would find the
    /// same).
    fn end_pass(&mut self, r: &Reclaim, demoted: u64, cost: f64, run_began: f64) -> bool {
        self.in_pass = false;
        self.run_reclaimed += self.pass_reclaimed;
        if self.pass_reclaimed > 0 {
            // lru_gen_shrink_node: progress resets kswapd_failures
            self.failures = 0;
        }
        let raise = self.pass_scanned < r.nr_to_reclaim.max(1);
        if raise || self.pass_reclaimed == 0 {
            self.prio = self.prio.saturating_sub(1);
        }
        if self.balanced(r, demoted, self.run_reclaimed) {
            self.prio = 0;
            self.awake = false;
        } else if self.prio == 0 && self.run_reclaimed == 0 {
            // the priority loop ran out without reclaiming: balance_pgdat counts a failure;
            // kswapd starts another run unless the node is now hopeless
            self.failures = self.failures.saturating_add(1);
            if self.hopeless() {
                self.awake = false;
                self.gave_up += 1;
            }
            return !self.awake || cost <= run_began;
        }
        false
    }

    /// try_to_inc_max_seq: an aging walk of tier `t`'s pages begins, in address order, with
    /// max_seq as its seq.
    fn begin_walk(&mut self, lru: &Lru, t: TierId) {
        self.walk.clear();
        let (min, max) = lru.seqs(t);
        for seq in min..=max {
            self.walk.extend(lru.lists.iter(gen_list(t, seq)));
        }
        // the walk visits the address space in order
        self.walk.sort_unstable();
        self.walk_pos = 0;
        self.walking = true;
        self.walk_seq = max;
        self.walk_mm = None;
        self.walk_reset = false;
        if self.mm_switch_ns == 0 || self.mms.is_empty() {
            // every process is walked: the first resets the next walk's filter
            self.filter_reset(max + 1);
            self.walk_reset = true;
        }
    }

    /// One stretch of an aging walk (walk_mm over the fast tier's pages, in address order):
    /// each page's accessed bit is tested and cleared, and a young page moves to the youngest
    /// generation (folio_update_gen); at the end, inc_max_seq. Returns its cost.
    fn walk_step(
        &mut self,
        lru: &mut Lru,
        mech: &mut dyn Mechanism,
        t: TierId,
        base: f64,
        budget: f64,
        r: &Reclaim,
    ) -> f64 {
        let per_pmd = pages_per_pmd(r.page_bytes);
        let skip_mms = self.mm_switch_ns > 0 && !self.mms.is_empty();
        let mut cost = 0.0;
        while self.walk_pos < self.walk.len() && cost < budget {
            let at = r.test_at(base + cost);
            self.batch.clear();
            while self.batch.len() < MIN_LRU_BATCH as usize && self.walk_pos < self.walk.len() {
                let p = self.walk[self.walk_pos];
                self.walk_pos += 1;
                if lru.tier(p) != Some(t) || lru.is_isolated(p) {
                    continue;
                }
                // iterate_mm_list: a process not switched in since its last walk is passed over
                if skip_mms {
                    if let Some(i) = self.mm_of(p.0) {
                        let on = match self.walk_mm {
                            Some((j, on)) if j == i => on,
                            _ => {
                                let on = self.enter_mm(i, at);
                                self.walk_mm = Some((i, on));
                                on
                            }
                        };
                        if !on {
                            self.walk_mm_skipped += 1;
                            continue;
                        }
                    }
                }
                // walk_pmd_range: a page-table page the filter leaves out is not walked
                if per_pmd > 1 && !self.filter_has(self.walk_seq, self.block_of(p, per_pmd).0) {
                    self.walk_skipped += 1;
                    continue;
                }
                self.batch.push(p);
            }
            mech.test_and_clear_accessed_at(&self.batch, at, &mut self.bits);
            let batch = std::mem::take(&mut self.batch);
            // the walk reads the PTEs it tests and, with per-process tables, the rest of every
            // block it enters (charged when it leaves the block)
            let mut read = batch.len() as u64;
            for (k, &p) in batch.iter().enumerate() {
                let young = self.bits.get(k).copied().unwrap_or(false);
                if young {
                    self.walk_young += 1;
                    self.walk_leaf_young += 1;
                    lru.update_gen(p);
                }
                if per_pmd > 1 {
                    let (block, first, end) = self.block_of(p, per_pmd);
                    let ptes = end - first;
                    match &mut self.walk_block {
                        Some((b, y, n, _)) if *b == block => {
                            *y += young as u64;
                            *n += 1;
                        }
                        _ => {
                            read += self.close_block();
                            self.walk_nonleaf_found += 1;
                            self.walk_block = Some((block, young as u64, 1, ptes));
                        }
                    }
                }
            }
            self.walk_tested += batch.len() as u64;
            self.walk_leaf_total += read;
            cost += read as f64 * PTE_TEST_COST;
            self.batch = batch;
        }
        if self.walk_pos >= self.walk.len() {
            let rest = self.close_block();
            self.walk_leaf_total += rest;
            cost += rest as f64 * PTE_TEST_COST;
            self.walking = false;
            self.walk.clear();
            // filters[seq + 1], filled by this walk, is the next walk's; inc_max_seq
            lru.inc_max_seq(t);
            self.agings += 1;
        }
        cost
    }

    /// The walk leaves a page-table page: suitable_to_scan (young x 8 >= total, eight PTEs to
    /// a cache line) puts it in the next walk's filter. The total is every PTE of the block
    /// with `mm_tables`, the pages tested otherwise. Returns the PTEs it read besides those
    /// it tested (with `mm_tables`: the block's others).
    fn close_block(&mut self) -> u64 {
        let Some((block, young, tested, ptes)) = self.walk_block.take() else {
            return 0;
        };
        let total = if self.mm_tables { ptes } else { tested };
        if young * 8 >= total {
            self.walk_nonleaf_added += 1;
            self.filter_add(self.walk_seq + 1, block);
        }
        if self.mm_tables {
            ptes.saturating_sub(tested)
        } else {
            0
        }
    }

    /// evict_folios: isolate up to MIN_LRU_BATCH pages of the oldest generation (scan_folios),
    /// move past emptied generations (try_to_inc_min_seq), then shrink_folio_list: a page
    /// whose accessed bit is set is kept (folio_check_references: one referencing PTE and no
    /// PG_referenced, FOLIOREF_KEEP; counted in `kept`, not in pgactivate) and goes back to the
    /// youngest generation, after lru_gen_look_around has tested its neighbours; the others
    /// are demoted. Returns (the
    /// scan's count for try_to_shrink_lruvec, 0 once only MIN_NR_GENS generations are left;
    /// pages isolated; demotions requested; cost). Its tests come one after another from
    /// `base` (the cost of kswapd's work before it in this step).
    fn evict(
        &mut self,
        lru: &mut Lru,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
        r: &Reclaim,
        base: f64,
    ) -> (u64, u64, u64, f64) {
        let t = r.tier;
        let (min, _) = lru.seqs(t);
        self.batch.clear();
        // scan_folios: a page whose flags say a younger generation (a walk or look-around
        // found it young) is moved there, not isolated (sort_folio)
        let mut sorted = 0u64;
        let mut cur = lru.lists.front(gen_list(t, min));
        while let Some(p) = cur {
            if self.batch.len() as u64 >= MIN_LRU_BATCH.div_ceil(r.per_page())
                || sorted >= MAX_LRU_BATCH
            {
                break;
            }
            cur = lru.lists.next(p);
            if lru.sort_page(p) {
                sorted += 1;
                continue;
            }
            self.batch.push(p);
        }
        let batch = std::mem::take(&mut self.batch);
        let mut young = std::mem::take(&mut self.near_bits);
        let mut cost = 0.0;
        let mut demoted = 0;
        for &p in batch.iter() {
            // shrink_folio_list takes the batch one folio after another. A folio whose young
            // PTE the look-around of one before it found (and cleared) carries PG_referenced
            // (folio_update_gen on an isolated folio) and is kept untested ("folio_update_gen()
            // tried to promote this page?"); isolate_folio cleared the flag, so only this
            // batch's look-arounds set it
            if lru.flag(p, F_LAZY) {
                lru.move_to_youngest(p);
                self.kept += 1;
                self.kept_referenced += 1;
                cost += PTE_TEST_COST;
                continue;
            }
            self.rmap_tested += 1;
            // the others are tested by folio_referenced, after the look-arounds before them
            let at = r.test_at(base + cost);
            mech.test_and_clear_accessed_at(std::slice::from_ref(&p), at, &mut young);
            cost += 1.0;
            if young.first().copied().unwrap_or(false) {
                // one young PTE and PG_referenced cleared at isolation: FOLIOREF_KEEP, and
                // evict_folios puts a rejected mapped folio back in the youngest generation
                lru.move_to_youngest(p);
                self.kept += 1;
                let at = r.test_at(base + cost);
                cost += self.look_around(lru, mech, t, p, r.page_bytes, at);
            } else if lru.isolate_as(p, r.target, true) {
                out.push(Action::Migrate {
                    page: p,
                    to: r.target,
                    mode: MigrateMode::Async,
                    keep_shadow: false,
                });
                demoted += 1;
            }
        }
        let isolated = batch.len() as u64;
        if isolated > 0 {
            self.evict_batches += 1;
            let reclaimed = demoted * r.per_page();
            self.evict_batches_few += u64::from(reclaimed < EVICT_BATCH_FEW);
            self.evict_batches_most += u64::from(reclaimed >= EVICT_BATCH_MOST);
        }
        self.batch = batch;
        self.near_bits = young;
        self.sorted += sorted;
        lru.try_inc_min_seq(t);
        let (min, max) = lru.seqs(t);
        // scan_folios returns every page it met, the sorted ones too
        let delta = if min + MIN_NR_GENS > max {
            0
        } else {
            (isolated + sorted) * r.per_page()
        };
        (
            delta,
            isolated,
            demoted,
            cost + sorted as f64 * PTE_TEST_COST,
        )
    }

    /// lru_gen_look_around: a young page found by reclaim's rmap walk has the PTEs around it
    /// tested too, up to MIN_LRU_BATCH pages within its page-table page (2 MiB of address
    /// space), and those young on this tier move to the youngest generation. Page ids stand
    /// for addresses (a process's objects are laid out in order). Returns its cost.
    fn look_around(
        &mut self,
        lru: &mut Lru,
        mech: &mut dyn Mechanism,
        t: TierId,
        p: PageId,
        page_bytes: u64,
        at: u64,
    ) -> f64 {
        let per_pmd = pages_per_pmd(page_bytes);
        if per_pmd <= 1 {
            return 0.0;
        }
        // the page-table page's range, within the process's address space with mm_tables
        // (start = max(addr & PMD_MASK, vm_start), end = min(addr | ~PMD_MASK, vm_end))
        let (key, block, end_block) = self.block_of(p, per_pmd);
        if self.mm_tables && end_block - block <= 1 {
            return 0.0;
        }
        let (start, end) = if end_block - block <= MIN_LRU_BATCH {
            (block, end_block)
        } else if p.0 - block < MIN_LRU_BATCH / 2 {
            (block, block + MIN_LRU_BATCH)
        } else if end_block - p.0 < MIN_LRU_BATCH / 2 {
            (end_block - MIN_LRU_BATCH, end_block)
        } else {
            (p.0 - MIN_LRU_BATCH / 2, p.0 + MIN_LRU_BATCH / 2)
        };
        let mut near = std::mem::take(&mut self.near);
        near.clear();
        near.extend(
            (start..end)
                .map(PageId)
                .filter(|&q| q != p && lru.tier(q) == Some(t) && !lru.is_isolated(q)),
        );
        if near.is_empty() && !self.mm_tables {
            self.near = near;
            return 0.0;
        }
        mech.test_and_clear_accessed_at(&near, at, &mut self.bits);
        let mut young = 1; // p itself
        for (k, &q) in near.iter().enumerate() {
            if self.bits.get(k).copied().unwrap_or(false) {
                self.walk_young += 1;
                young += 1;
                lru.update_gen(q);
            }
        }
        // update_bloom_filter(max_seq): the next walk visits a page-table page look-around found
        // suitable: young x 8 >= the PTEs looked at (every PTE of the window with mm_tables, the
        // neighbours on this tier and p otherwise)
        let suitable = if self.mm_tables {
            young * 8 >= end - start
        } else {
            young * 8 > near.len() as u64
        };
        if suitable {
            let (_, max_seq) = lru.seqs(t);
            self.filter_add(max_seq, key);
        }
        self.walk_tested += near.len() as u64;
        let read = if self.mm_tables {
            end - start
        } else {
            near.len() as u64
        };
        let cost = read as f64 * PTE_TEST_COST;
        self.near = near;
        cost
    }

    /// shrink_active_list: the oldest active pages go to the inactive list. Their accessed bits
    /// are tested and cleared (page_referenced), but referenced anon pages are deactivated all
    /// the same; only executable file pages get another trip, and there are none here.
    fn shrink_active(
        &mut self,
        lru: &mut Lru,
        mech: &mut dyn Mechanism,
        t: TierId,
        at_ns: u64,
    ) -> u64 {
        self.batch.clear();
        while self.batch.len() < SWAP_CLUSTER_MAX {
            let Some(p) = lru.pop_oldest(t, true) else {
                break;
            };
            self.batch.push(p);
        }
        mech.test_and_clear_accessed_at(&self.batch, at_ns, &mut self.bits);
        for &p in &self.batch {
            lru.clear_flags(p.0 as usize, F_ACTIVE);
            lru.putback(p);
        }
        self.deactivated += self.batch.len() as u64;
        self.batch.len() as u64
    }

    /// shrink_page_list over the oldest inactive pages, with page_check_references: a page
    /// referenced since the last look and already PG_referenced is activated; referenced for
    /// the first time, it gets PG_referenced and another trip around the inactive list; not
    /// referenced, it is demoted. Returns (scanned, demotions requested).
    fn shrink_inactive(
        &mut self,
        lru: &mut Lru,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
        t: TierId,
        target: TierId,
        at_ns: u64,
    ) -> (u64, u64) {
        self.batch.clear();
        while self.batch.len() < SWAP_CLUSTER_MAX {
            let Some(p) = lru.pop_oldest(t, false) else {
                break;
            };
            self.batch.push(p);
        }
        mech.test_and_clear_accessed_at(&self.batch, at_ns, &mut self.bits);
        let mut demoted = 0;
        for (k, &p) in self.batch.iter().enumerate() {
            let i = p.0 as usize;
            let referenced = self.bits.get(k).copied().unwrap_or(false);
            let was_referenced = lru.flags(i) & F_REFERENCED != 0;
            if referenced {
                lru.or_flags(i, F_REFERENCED);
                if was_referenced {
                    lru.or_flags(i, F_ACTIVE);
                    self.activated += 1;
                } else {
                    self.kept += 1;
                }
                lru.putback(p);
            } else {
                lru.clear_flags(i, F_REFERENCED);
                lru.isolate(p, target);
                out.push(Action::Migrate {
                    page: p,
                    to: target,
                    mode: MigrateMode::Async,
                    keep_shadow: false,
                });
                demoted += 1;
            }
        }
        (self.batch.len() as u64, demoted)
    }
}

/// Eviction batches that reclaimed fewer than this many base pages (kept nearly whole), and at
/// least this many (reclaimed nearly whole) of MIN_LRU_BATCH: the two modes of the kernel's.
const EVICT_BATCH_FEW: u64 = 8;
const EVICT_BATCH_MOST: u64 = 56;

/// Pages one page-table page maps (2 MiB of address space; 1 with 2 MiB pages, whose PMD entries
/// the walk reads directly).
fn pages_per_pmd(page_bytes: u64) -> u64 {
    ((2u64 << 20) / page_bytes.max(1)).max(1)
}

/// get_nr_to_scan with should_run_aging (Linux 6.12): with fewer than MIN_NR_GENS + 1
/// generations eviction is impossible and the tier must age; with exactly that many it ages
/// when the youngest generation holds more than half the pages or the oldest less than a
/// quarter; with MAX_NR_GENS it does not. At DEF_PRIORITY (or when aging is not called for)
/// it evicts size >> priority pages; otherwise it ages (and the pass ends).
/// Sizes are in base pages, as the kernel counts them.
fn get_nr_to_scan(lru: &Lru, t: TierId, prio: u8, per_page: u64) -> NrToScan {
    let (min, max) = lru.seqs(t);
    let (success, size) = if min + MIN_NR_GENS > max {
        (true, 0)
    } else {
        let total: u64 = (min..=max).map(|s| lru.gen_len(t, s)).sum::<u64>() * per_page;
        let young = lru.gen_len(t, max) * per_page;
        let old = lru.gen_len(t, max - MIN_NR_GENS) * per_page;
        // with MIN_NR_GENS + 1 generations, age when the youngest holds more than half or the
        // oldest less than a quarter of the pages (the ideal is MIN_NR_GENS + 1 generations)
        let aging = min + MIN_NR_GENS == max
            && (young * MIN_NR_GENS > total || old * (MIN_NR_GENS + 2) < total);
        (aging, total)
    };
    if !success || prio == DEF_PRIORITY {
        match size >> prio {
            0 => NrToScan::Skip,
            n => NrToScan::Scan(n),
        }
    } else {
        NrToScan::Age
    }
}

/// set_initial_priority (mm/vmscan.c, lru_gen_shrink_node): at DEF_PRIORITY the pass starts
/// at the priority at which (inactive >> priority) is about what it must reclaim:
/// fls(inactive) - 1 - fls(nr_to_reclaim - 1), clamped to [DEF_PRIORITY / 2, DEF_PRIORITY].
fn initial_priority(lru: &Lru, t: TierId, nr_to_reclaim: u64, per_page: u64) -> u8 {
    let nr_to_reclaim = nr_to_reclaim * per_page;
    if nr_to_reclaim < MIN_LRU_BATCH {
        return DEF_PRIORITY;
    }
    let fls = |x: u64| 64 - x.leading_zeros() as i64;
    let reclaimable = lru.len(t, false) * per_page;
    let prio = fls(reclaimable) - 1 - fls(nr_to_reclaim - 1);
    prio.clamp(DEF_PRIORITY as i64 / 2, DEF_PRIORITY as i64) as u8
}

/// Migration and hint-fault counts every hint-fault policy reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub hint_faults: u64,
    /// Faults the policy could not act on (fast-tier page, unknown page, page in flight).
    pub faults_skipped: u64,
    /// Slow-tier pages moved to the active list by a hint fault.
    pub activations: u64,
    pub promotions_requested: u64,
    /// Promotions not attempted because the fast tier was at its watermark.
    pub promote_fail_nomem: u64,
    pub promotions_done: u64,
    pub promotions_failed: u64,
    pub demotions_done: u64,
    pub demotions_failed: u64,
    /// Demotions that only remapped a clean shadow copy.
    pub remaps: u64,
    /// Transactional migrations aborted by a write during the copy.
    pub aborted: u64,
}

/// The per-epoch skeleton the hint-fault policies share: the LRU kept from the telemetry, the
/// fast tier's watermarks, migration accounting and the fast tier's kswapd.
#[derive(Clone, Debug)]
pub struct Tiering {
    pub lru: Lru,
    pub kswapd: Kswapd,
    /// Watermarks of the fast tier.
    pub wm: Watermarks,
    pub counts: Counters,
    /// Fast-tier capacity in pages.
    pub fast_pages: u64,
    pub page_bytes: u64,
    wm_key: (u64, u64, u64),
    watermark_scale_factor: u64,
    /// vm.min_free_kbytes as set (0: the kernel's own from the machine's memory).
    pub min_free_kbytes: u64,
    kswapd_scan_per_ms: u64,
    /// How long a kswapd woken by a promotion waits for a CPU before it runs (ns).
    pub wake_delay_ns: u64,
    /// `kswapd_tick_us` in ns (0: no timer).
    pub tick_ns: u64,
    last_ns: Option<u64>,
    /// The fast node has the DMA zone (`dma_zone`).
    pub dma_zone: bool,
    /// The DMA zone has settled above its bar in migrate_balanced_pgdat (nbt's
    /// `dma_zone_above_bar`): see [`Tiering::migrate_balanced`].
    pub dma_above_bar: bool,
    /// The epoch's events (allocations, frees, migration results) already taken by
    /// [`Tiering::catch_up`] on the fault path: `begin` takes the rest.
    taken: (usize, usize, usize),
}

impl Tiering {
    /// TPP's demotion watermark of the fast tier in pages (WMARK_DEMOTE, `Watermarks::tpp_demote`
    /// over the fast tier's size), for TPP and the stacks that demote as it does (Nomad).
    pub fn tpp_demote_wmark(&self, demote_scale_factor: u64) -> u64 {
        self.wm.tpp_demote(self.fast_pages, demote_scale_factor)
    }

    pub fn new(watermark_scale_factor: u64, kswapd_scan_per_ms: u64) -> Self {
        Tiering {
            lru: Lru::new(),
            kswapd: Kswapd::default(),
            wm: Watermarks::default(),
            counts: Counters::default(),
            fast_pages: 0,
            page_bytes: DEFAULT_PAGE_BYTES,
            wm_key: (0, 0, 0),
            watermark_scale_factor,
            min_free_kbytes: 0,
            kswapd_scan_per_ms,
            wake_delay_ns: 0,
            tick_ns: 0,
            last_ns: None,
            dma_zone: true,
            dma_above_bar: false,
            taken: (0, 0, 0),
        }
    }

    /// From a hint-fault policy's parameters: `watermark_scale_factor`, `min_free_kbytes`,
    /// `kswapd_scan_per_ms`, `lru_stats_flush_ms`, `max_reclaim_retries`, `lru_gen`, `dma_zone`,
    /// `lru_gen_mm_tables` and `lru_gen_mm_switch_ms`.
    pub fn from_params(p: &Params) -> Self {
        let mut t = Tiering::new(p.u64("watermark_scale_factor"), p.u64("kswapd_scan_per_ms"));
        t.min_free_kbytes = p.u64("min_free_kbytes");
        t.kswapd.stats_flush_ns = (p.float("lru_stats_flush_ms") * 1e6).round() as u64;
        t.kswapd.max_retries = p.u64("max_reclaim_retries").min(u32::MAX as u64) as u32;
        t.lru = Lru::new().with_gens(p.bool("lru_gen"));
        t.dma_zone = p.bool("dma_zone");
        t.kswapd.mm_tables = p.bool("lru_gen_mm_tables");
        t.kswapd.mm_switch_ns = (p.float("lru_gen_mm_switch_ms") * 1e6).round() as u64;
        t.wake_delay_ns = (p.float("kswapd_wake_delay_us") * 1e3).round() as u64;
        t.tick_ns = (p.float("kswapd_tick_us") * 1e3).round() as u64;
        t.kswapd.demote_ns = (p.float("kswapd_demote_us") * 1e3).round() as u64;
        t
    }

    /// Bytes the per-page tables take for `pages` pages (the LRU's; kswapd's batch is fixed).
    pub const fn bytes_for(pages: u64) -> u64 {
        Lru::bytes_for(pages)
    }

    /// Allocate the per-page tables for `pages` pages up front, fallibly.
    pub fn reserve(&mut self, pages: u64) -> tierkit_core::Result<()> {
        self.lru.reserve(pages)
    }

    /// Bytes the per-page tables hold now.
    pub fn bytes(&self) -> u64 {
        self.lru.bytes() as u64
    }

    /// Start an epoch: apply allocations, frees and migration results (each result is also
    /// passed to `on_result` with what the LRU made of it) and refresh the watermarks.
    /// With the fault path (`Policy::on_fault`), the events a fault's telemetry showed earlier
    /// in the epoch were taken then, and `begin` takes the rest.
    pub fn begin(&mut self, tel: &Telemetry, on_result: impl FnMut(&MigrationResult, Completion)) {
        self.take_events(tel, on_result);
        // the backend clears the events after the step: the next epoch's start at 0
        self.taken = (0, 0, 0);
    }

    /// On the fault path, inside the epoch: take the events of the epoch so far that are not
    /// taken yet (the allocations, frees and migration results since the last fault), so the
    /// fault is decided on the pages' state at its instant.
    pub fn catch_up(
        &mut self,
        tel: &Telemetry,
        on_result: impl FnMut(&MigrationResult, Completion),
    ) {
        self.take_events(tel, on_result);
        self.taken = (tel.allocated.len(), tel.freed.len(), tel.migrations.len());
    }

    fn take_events(
        &mut self,
        tel: &Telemetry,
        mut on_result: impl FnMut(&MigrationResult, Completion),
    ) {
        let (a, f, m) = self.taken;
        self.lru.observe_from(tel, a, f);
        for m in tel.migrations.iter().skip(m) {
            let c = self.lru.complete(m);
            let promotion = m.to < m.from;
            match (m.outcome, promotion) {
                (MigrationOutcome::Done, true) => self.counts.promotions_done += 1,
                (MigrationOutcome::Done, false) => self.counts.demotions_done += 1,
                (MigrationOutcome::AlreadyThere, _) => {}
                (MigrationOutcome::Aborted, _) => {
                    self.counts.aborted += 1;
                    self.counts.promotions_failed += promotion as u64;
                }
                (_, true) => self.counts.promotions_failed += 1,
                (_, false) => self.counts.demotions_failed += 1,
            }
            if m.remap && m.outcome == MigrationOutcome::Done {
                self.counts.remaps += 1;
            }
            on_result(m, c);
        }
        self.page_bytes = page_bytes(tel);
        let fast = tel.tier(tierkit_core::FAST).map_or(0, |t| t.capacity_pages);
        let total: u64 = tel.tiers.iter().map(|t| t.capacity_pages).sum();
        if (fast, total, self.page_bytes) != self.wm_key {
            self.wm_key = (fast, total, self.page_bytes);
            self.fast_pages = fast;
            self.wm = Watermarks::linux(
                fast,
                total,
                self.page_bytes,
                self.watermark_scale_factor,
                self.min_free_kbytes,
            );
        }
    }

    /// Fast-tier free pages for an allocation decision, counting requested promotions as done.
    /// kswapd's requested demotions are not counted (its balance check counts them): counting
    /// them made TPP's gain on liblinear depend on the step (docs/validation.md, section 1i).
    pub fn fast_free(&self, tel: &Telemetry) -> u64 {
        let free = tel.tier(tierkit_core::FAST).map_or(0, |t| t.free_pages());
        free.saturating_sub(self.lru.inflight_in(tierkit_core::FAST))
    }

    /// Fast-tier free pages as kswapd's balance check counts them: requested demotions as done
    /// (the kernel's kswapd demotes as it goes, the machine's migration threads later), and
    /// requested promotions too. A wakeup checks the node with this count, as
    /// `wakeup_kswapd` checks `pgdat_balanced`: counting the demotions not, every promotion of
    /// a step after kswapd went back to sleep woke it again.
    pub fn kswapd_free(&self, tel: &Telemetry) -> u64 {
        let fast = tierkit_core::FAST;
        let free = tel.tier(fast).map_or(0, |t| t.free_pages());
        (free + self.lru.inflight_out(fast)).saturating_sub(self.lru.inflight_in(fast))
    }

    /// wakeup_kswapd (mm/vmscan.c) from the promotion of the fault at `t_ns`: a kswapd already
    /// running is left alone (`waitqueue_active`), and so is a node balanced at `balanced_at`
    /// (`pgdat_balanced`), counted as kswapd counts it ([`Tiering::kswapd_free`]).
    pub fn wakeup_kswapd(&mut self, tel: &Telemetry, balanced_at: u64, t_ns: u64) {
        if !self.kswapd.awake
            && !self
                .kswapd
                .balanced_at_wake(self.kswapd_free(tel), balanced_at, self.page_bytes)
        {
            self.kswapd.wake_at(t_ns + self.wake_delay_ns);
        }
    }

    /// migrate_balanced_pgdat (mm/migrate.c), the promotion path's check of the fast node with
    /// `free` pages free: one zone above its high watermark + the page. With the DMA zone above
    /// its bar (`dma_above_bar`) the check passes through DMA until the main zone's promotions
    /// take it to its low watermark, where they spill into DMA and pull it below the bar.
    pub fn migrate_balanced(&self, free: u64) -> bool {
        let mark = self.wm.base[if self.dma_above_bar { 1 } else { 2 }];
        self.wm.ok(free, mark, 1)
    }

    /// Isolate a slow-tier page and ask for its promotion to the fast tier.
    pub fn promote(
        &mut self,
        p: PageId,
        mode: MigrateMode,
        keep_shadow: bool,
        out: &mut Vec<Action>,
    ) -> bool {
        if !self.lru.isolate(p, tierkit_core::FAST) {
            return false;
        }
        out.push(Action::Migrate {
            page: p,
            to: tierkit_core::FAST,
            mode,
            keep_shadow,
        });
        self.counts.promotions_requested += 1;
        true
    }

    /// Whether a hint fault is on a slow-tier page the policy can act on; counts the fault.
    pub fn fault_actionable(&mut self, f: &tierkit_core::HintFault) -> bool {
        self.counts.hint_faults += 1;
        let ok = f.tier != tierkit_core::FAST
            && self.lru.tier(f.page) == Some(f.tier)
            && !self.lru.is_isolated(f.page);
        if !ok {
            self.counts.faults_skipped += 1;
        }
        ok
    }

    /// Run the fast tier's kswapd for this epoch: it wakes below `wake_below` free pages and
    /// demotes to the next tier until `balanced_at` are free (requested demotions counted as
    /// done), examining at most kswapd_scan_per_ms pages per ms since the last epoch.
    pub fn run_kswapd(
        &mut self,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
        wake_below: u64,
        balanced_at: u64,
    ) -> u64 {
        self.run_kswapd_to(tel, mech, out, wake_below, balanced_at, tel.now_ns)
    }

    /// kswapd's work inside the step up to `t_ns`, the instant of the fault about to be
    /// handled, when it is awake: the faults and kswapd take turns in time order, as the fault
    /// path and the kswapd thread do, instead of every fault of the step first.
    pub fn run_kswapd_until(
        &mut self,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
        wake_below: u64,
        balanced_at: u64,
        t_ns: u64,
    ) {
        let behind = self.last_ns.is_some_and(|l| l < t_ns);
        if !(self.kswapd.awake && behind) {
            return;
        }
        self.run_kswapd_to(
            tel,
            mech,
            out,
            wake_below,
            balanced_at,
            t_ns.min(tel.now_ns),
        );
    }

    /// The policy's timer for kswapd (`kswapd_tick_us`, [`tierkit_core::Policy::next_timer_ns`]):
    /// while it is awake, a tick after its last run or after where its work so far ends (its
    /// wake instant, a batch past the budget), whichever is later.
    pub fn kswapd_timer_ns(&self) -> Option<u64> {
        if self.tick_ns == 0 || !self.kswapd.awake {
            return None;
        }
        let from = self.last_ns?.max(self.kswapd.clock_ns);
        Some(from + self.tick_ns)
    }

    /// kswapd's run at its timer's instant `t_ns`, with the epoch's events so far taken first.
    pub fn on_kswapd_timer(
        &mut self,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
        wake_below: u64,
        balanced_at: u64,
        t_ns: u64,
    ) {
        self.catch_up(tel, |_, _| {});
        self.run_kswapd_until(tel, mech, out, wake_below, balanced_at, t_ns);
    }

    fn run_kswapd_to(
        &mut self,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
        wake_below: u64,
        balanced_at: u64,
        end_ns: u64,
    ) -> u64 {
        let elapsed = match self.last_ns {
            Some(t) if end_ns > t => end_ns - t,
            _ => tel.epoch_ns,
        };
        self.last_ns = Some(end_ns);
        if tel.tiers.len() < 2 {
            return 0;
        }
        let fast = tierkit_core::FAST;
        if self.lru.gens() && (self.kswapd.mm_tables || self.kswapd.mm_switch_ns > 0) {
            self.kswapd.set_address_spaces(&tel.objects);
        }
        let free = self.kswapd_free(tel);
        let max_scan = (self.kswapd_scan_per_ms as u128 * elapsed as u128 / 1_000_000) as u64;
        let r = Reclaim {
            tier: fast,
            target: fast + 1,
            free,
            wake_below,
            balanced_at,
            max_scan: max_scan.max(SWAP_CLUSTER_MAX as u64),
            nr_to_reclaim: self.wm.base[2]
                .max(SWAP_CLUSTER_MAX as u64)
                .div_ceil(self.wm.per_page.max(1)),
            page_bytes: self.page_bytes,
            // kswapd's work is spread over the interval it stands for, the one the telemetry
            // just covered: its accessed-bit tests then fall where the machine knows what the
            // threads did (ran or stalled), not in the coming epoch whose accesses are unknown.
            start_ns: end_ns.saturating_sub(elapsed),
            ns_per_page: 1e6 / self.kswapd_scan_per_ms as f64,
            zones_can_pass: !self.dma_zone,
        };
        self.kswapd.run(&mut self.lru, mech, out, &r)
    }

    /// The time series every hint-fault policy publishes (the policy channel): the fast tier's
    /// LRU sizes and kswapd's running counts, beside the kernel's `/proc/vmstat` and node LRU
    /// sizes that `tierkit validate kernel` records.
    pub fn series(&self, out: &mut Vec<(String, f64)>) {
        let k = &self.kswapd;
        for (name, v) in [
            ("lru_fast_active", self.lru.len(tierkit_core::FAST, true)),
            ("lru_fast_inactive", self.lru.len(tierkit_core::FAST, false)),
            ("kswapd_scanned", k.scanned),
            ("kswapd_deactivated", k.deactivated),
            ("kswapd_kept", k.kept),
            ("kswapd_activated", k.activated),
            ("kswapd_demotions", k.demotions),
            ("kswapd_failures", k.failures as u64),
            ("kswapd_agings", k.agings),
            ("kswapd_runs", k.runs),
        ] {
            out.push((name.to_string(), v as f64));
        }
        if self.lru.gens() {
            // the aging walks' and look-arounds' accessed-bit tests, the young pages they found
            // and the pages the walks passed over (Bloom filter), cumulative
            for (name, v) in [
                ("mglru_walk_tested", k.walk_tested),
                ("mglru_walk_young", k.walk_young),
                ("mglru_walk_skipped", k.walk_skipped),
            ] {
                out.push((name.to_string(), v as f64));
            }
            // the multi-gen LRU's generations, youngest first (as /sys/kernel/debug/lru_gen
            // lists them): lru_fast_gen0 is max_seq, lru_fast_gen3 max_seq - 3
            let (min, max) = self.lru.seqs(tierkit_core::FAST);
            // how many generations there are (max_seq - min_seq + 1; one may be empty)
            out.push(("lru_fast_gens".to_string(), (max - min + 1) as f64));
            for k in 0..MAX_NR_GENS {
                let n = if max >= min + k {
                    self.lru.gen_len(tierkit_core::FAST, max - k)
                } else {
                    0
                };
                out.push((format!("lru_fast_gen{k}"), n as f64));
            }
        }
    }

    /// The warning of a fast tier so small that the watermark kswapd balances it to (`mark`
    /// pages, named `mark_name`) keeps more than [`SMALL_TIER_SHARE`] of it free: Linux sizes
    /// its watermarks (min_free_kbytes, at least 128 KiB; TPP's demotion watermark, at least
    /// twice the high one) and kswapd's batches (SWAP_CLUSTER_MAX) for whole machines, and a
    /// fast tier of a few hundred pages, as a small trace's, then spends a large share of itself
    /// on them whatever the policy decides. None for a tier of gigabytes.
    pub fn small_fast_tier_warning(
        &self,
        policy: &str,
        mark: u64,
        mark_name: &str,
    ) -> Option<String> {
        let fast = self.fast_pages;
        (fast > 0 && mark as f64 > SMALL_TIER_SHARE * fast as f64).then(|| {
            format!(
                "{policy}: the fast tier holds {fast} pages and kswapd keeps {mark} of them ({:.0}%) \
                 free ({mark_name}), taking pages off its lists {SWAP_CLUSTER_MAX} at a time: \
                 Linux sizes these constants for whole machines, so at this size they weigh on \
                 the placement as much as the policy does (a real server's fast tier is \
                 gigabytes; try a larger footprint before comparing this policy with others)",
                100.0 * mark as f64 / fast as f64
            )
        })
    }

    /// [`Tiering::small_fast_tier_warning`] of a stack that balances the fast tier to TPP's
    /// demotion watermark (TPP, Nomad).
    pub fn tpp_warnings(&self, policy: &str, demote_scale_factor: u64) -> Vec<String> {
        let mark = self.tpp_demote_wmark(demote_scale_factor);
        let name = "TPP's demotion watermark, vm.demote_scale_factor";
        self.small_fast_tier_warning(policy, mark, name)
            .into_iter()
            .collect()
    }

    /// The figures every hint-fault policy reports.
    pub fn stats(&self, v: &mut Vec<(String, f64)>) {
        let c = &self.counts;
        for (k, x) in [
            ("hint_faults", c.hint_faults),
            ("faults_skipped", c.faults_skipped),
            ("activations", c.activations),
            ("promotions_requested", c.promotions_requested),
            ("promote_fail_nomem", c.promote_fail_nomem),
            ("promotions_done", c.promotions_done),
            ("promotions_failed", c.promotions_failed),
            ("demotions_done", c.demotions_done),
            ("demotions_failed", c.demotions_failed),
            ("remaps", c.remaps),
            ("aborted", c.aborted),
        ] {
            v.push((k.to_string(), x as f64));
        }
        lru_stats(&self.lru, &self.kswapd, v);
        v.push(("wmark_high_pages".into(), self.wm.high as f64));
    }
}

/// The LRU and kswapd figures every hint-fault policy reports.
pub fn lru_stats(lru: &Lru, k: &Kswapd, v: &mut Vec<(String, f64)>) {
    for (t, name) in [(0u8, "fast"), (1u8, "slow")] {
        v.push((format!("lru_{name}_active"), lru.len(t, true) as f64));
        v.push((format!("lru_{name}_inactive"), lru.len(t, false) as f64));
    }
    v.push(("lru_isolated".into(), lru.isolated() as f64));
    v.push(("lru_bytes".into(), lru.bytes() as f64));
    v.push(("kswapd_wakeups".into(), k.wakeups as f64));
    v.push(("kswapd_scanned".into(), k.scanned as f64));
    v.push(("kswapd_deactivated".into(), k.deactivated as f64));
    v.push(("kswapd_kept".into(), k.kept as f64));
    v.push(("kswapd_activated".into(), k.activated as f64));
    v.push(("kswapd_failures".into(), k.failures as f64));
    v.push(("kswapd_gave_up".into(), k.gave_up as f64));
    v.push(("kswapd_wakeups_ignored".into(), k.wakeups_ignored as f64));
    if lru.gens() {
        for (name, x) in [
            ("kswapd_agings", k.agings),
            ("kswapd_walk_tested", k.walk_tested),
            ("kswapd_walk_young", k.walk_young),
            ("kswapd_walk_skipped", k.walk_skipped),
            ("kswapd_sorted", k.sorted),
            ("kswapd_rmap_tested", k.rmap_tested),
            ("kswapd_kept_referenced", k.kept_referenced),
            ("kswapd_runs", k.runs),
            ("kswapd_evict_batches", k.evict_batches),
            ("kswapd_evict_batches_few", k.evict_batches_few),
            ("kswapd_evict_batches_most", k.evict_batches_most),
            ("kswapd_walk_leaf_total", k.walk_leaf_total),
            ("kswapd_walk_leaf_young", k.walk_leaf_young),
            ("kswapd_walk_nonleaf_found", k.walk_nonleaf_found),
            ("kswapd_walk_nonleaf_added", k.walk_nonleaf_added),
        ] {
            v.push((name.into(), x as f64));
        }
        if k.mm_switch_ns > 0 {
            v.push(("kswapd_mm_walked".into(), k.mm_walked as f64));
            v.push(("kswapd_mm_skipped".into(), k.mm_skipped as f64));
            v.push(("kswapd_walk_mm_skipped".into(), k.walk_mm_skipped as f64));
        }
    }
    v.push(("demotions_requested".into(), k.demotions as f64));
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use tierkit_core::testing::FakeMech;
    use tierkit_core::{FAST, SLOW};

    pub(crate) fn done(
        p: u64,
        from: TierId,
        to: TierId,
        outcome: MigrationOutcome,
    ) -> MigrationResult {
        MigrationResult {
            page: PageId(p),
            from,
            to,
            outcome,
            remap: false,
        }
    }

    #[test]
    fn linux_watermarks_for_a_16_gib_node() {
        // 16 GiB fast + 16 GiB slow: min_free_kbytes = sqrt(16 x 32 GiB in KiB) = 23170.
        let (node, total) = (4u64 << 20, 8u64 << 20);
        let w = Watermarks::linux(node, total, 4096, 10, 0);
        assert_eq!(w.min, 23170 / 4 / 2);
        let step = node * 10 / 10_000;
        assert_eq!(
            (w.low, w.high, w.promo),
            (w.min + step, w.min + 2 * step, w.min + 3 * step)
        );
        // TPP: 2% of the node, above twice the high watermark.
        assert_eq!(w.tpp_demote(node, 200), node * 200 / 10_000);
        assert_eq!(w.tpp_demote(node, 1), 2 * w.high);
        // Tiny machines clamp min_free_kbytes at 128 KiB.
        assert_eq!(Watermarks::linux(64, 64, 4096, 10, 0).min, 32);
    }

    /// The kernel's min_free_kbytes grows with the square root of the whole machine's memory
    /// and each node gets its share by size, so a larger slow tier lowers the fast node's
    /// watermarks, also when an administrator wrote the value (it is used as given).
    #[test]
    fn min_free_kbytes_from_the_machine_or_as_written_shared_out_by_node_size() {
        let node = 4u64 << 20; // 16 GiB of 4 KiB pages
        let small = Watermarks::linux(node, 2 * node, 4096, 10, 0);
        let large = Watermarks::linux(node, 8 * node, 4096, 10, 0);
        // sqrt(16 x 32 GiB in KiB) = 23170 KiB over 2 nodes' worth; 46340 over 8
        assert_eq!((small.min, large.min), (23170 / 4 / 2, 46340 / 4 / 8));
        let set = |total: u64| Watermarks::linux(node, total, 4096, 10, 65_536);
        assert_eq!(
            (set(2 * node).min, set(8 * node).min),
            (65_536 / 4 / 2, 65_536 / 4 / 8)
        );
        // a written value is not clamped to 256 MiB (the handler stores it as given)
        assert_eq!(
            Watermarks::linux(node, node, 4096, 10, 1 << 20).min,
            1 << 18
        );
        // huge pages: the same base pages, rounded up to whole huge pages
        let huge = Watermarks::linux(node / 512, 2 * node / 512, 2 << 20, 10, 65_536);
        assert_eq!(huge.base, set(2 * node).base);
        assert_eq!(huge.min, (65_536u64 / 4 / 2).div_ceil(512));
    }

    /// A fast tier of a few hundred pages (a small trace's) gives its watermarks a large share
    /// of itself, and the run says so; a node of gigabytes does not, nor does an unsized one.
    #[test]
    fn a_fast_tier_whose_watermarks_take_a_large_share_of_it_gets_a_warning() {
        let sized = |fast: u64, total: u64| {
            let mut t = Tiering::new(10, 4096);
            t.fast_pages = fast;
            t.wm = Watermarks::linux(fast, total, 4096, 10, 0);
            t
        };
        // sqlite-lookup's 410 pages, a third fast: the demotion watermark is twice the high.
        let t = sized(137, 410);
        let demote = t.tpp_demote_wmark(200);
        assert!(demote > 2 * t.wm.high - 1 && demote * 20 > 137, "{demote}");
        let w = t
            .small_fast_tier_warning("tpp", demote, "TPP's demotion watermark")
            .unwrap();
        assert!(w.starts_with("tpp: the fast tier holds 137 pages"), "{w}");
        assert!(w.contains(&format!("keeps {demote} of them")), "{w}");
        // 4 GiB fast of 12 GiB: TPP's 2% of the node, NBT's promo watermark far below 5%.
        let t = sized(1 << 20, 3 << 20);
        let demote = t.tpp_demote_wmark(200);
        assert_eq!(demote, (1u64 << 20) * 200 / 10_000);
        assert_eq!(t.small_fast_tier_warning("tpp", demote, "demote"), None);
        assert_eq!(t.small_fast_tier_warning("nbt", t.wm.promo, "promo"), None);
        // The boundary: more than 5% of the tier.
        assert!(t
            .small_fast_tier_warning("x", (1 << 20) / 20, "m")
            .is_none());
        assert!(t
            .small_fast_tier_warning("x", (1 << 20) / 20 + 1, "m")
            .is_some());
        assert_eq!(
            Tiering::new(10, 4096).small_fast_tier_warning("x", 5, "m"),
            None
        );
    }

    #[test]
    fn kswapd_second_chance_then_activation() {
        let mut lru = Lru::new();
        for p in 0..4 {
            lru.add(PageId(p), FAST);
        }
        let mut mech = FakeMech::new(vec![Some(FAST); 4]);
        mech.accessed = vec![true, false, true, false];
        let mut k = Kswapd::default();
        let mut out = Vec::new();
        let r = Reclaim {
            tier: FAST,
            target: SLOW,
            free: 0,
            wake_below: 10,
            balanced_at: 2,
            max_scan: 4,
            nr_to_reclaim: 1,
            page_bytes: 4096,
            start_ns: 0,
            ns_per_page: 1000.0,
            zones_can_pass: true,
        };
        assert_eq!(k.run(&mut lru, &mut mech, &mut out, &r), 2);
        // Pages 1 and 3 were not referenced: demoted. 0 and 2 kept with PG_referenced.
        let demoted: Vec<u64> = out
            .iter()
            .map(|a| match a {
                Action::Migrate {
                    page,
                    to,
                    mode,
                    keep_shadow,
                } => {
                    assert_eq!(
                        (*to, *mode, *keep_shadow),
                        (SLOW, MigrateMode::Async, false)
                    );
                    page.0
                }
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(demoted, vec![1, 3]);
        assert!(lru.is_referenced(PageId(0)) && !lru.is_active(PageId(0)));
        assert_eq!(k.kept, 2);
        // Referenced again: activated, not demoted.
        mech.accessed = vec![true, false, true, false];
        out.clear();
        let r = Reclaim {
            balanced_at: 1,
            max_scan: 2,
            start_ns: 10_000,
            ..r
        };
        assert_eq!(k.run(&mut lru, &mut mech, &mut out, &r), 0);
        assert!(lru.is_active(PageId(0)) && lru.is_active(PageId(2)));
        assert_eq!(k.activated, 2);
        lru.check().unwrap();
    }

    #[test]
    fn kswapd_sleeps_until_woken_and_stops_when_balanced() {
        let mut lru = Lru::new();
        for p in 0..100 {
            lru.add(PageId(p), FAST);
        }
        let mut mech = FakeMech::new(vec![Some(FAST); 100]);
        let mut k = Kswapd::default();
        let mut out = Vec::new();
        let r = Reclaim {
            tier: FAST,
            target: SLOW,
            free: 5,
            wake_below: 4,
            balanced_at: 8,
            max_scan: 1000,
            nr_to_reclaim: 1,
            page_bytes: 4096,
            start_ns: 0,
            ns_per_page: 1000.0,
            zones_can_pass: true,
        };
        assert_eq!(
            k.run(&mut lru, &mut mech, &mut out, &r),
            0,
            "free above the wake mark: asleep"
        );
        let r = Reclaim { free: 3, ..r };
        // Woken; reclaims in SWAP_CLUSTER_MAX batches until the deficit of 5 is met.
        assert_eq!(
            k.run(&mut lru, &mut mech, &mut out, &r),
            SWAP_CLUSTER_MAX as u64
        );
        // The pass is done and the requested demotions cover the deficit: balanced.
        assert!(!k.awake);
        let r = Reclaim { free: 8, ..r };
        assert_eq!(k.run(&mut lru, &mut mech, &mut out, &r), 0);
        assert!(!k.awake);
        assert_eq!(lru.inflight_out(FAST), 32);
        lru.check().unwrap();
    }

    /// Accessed bits as a fixed function of the page id: set at every test where it says so,
    /// never elsewhere.
    struct HotWhere(fn(u64) -> bool);
    impl Mechanism for HotWhere {
        fn tier_of(&self, _: PageId) -> Option<TierId> {
            Some(FAST)
        }
        fn test_and_clear_accessed(&mut self, pages: &[PageId], out: &mut Vec<bool>) {
            out.clear();
            out.extend(pages.iter().map(|p| (self.0)(p.0)));
        }
    }

    /// Every page reads referenced at every test: nothing is ever reclaimable.
    fn all_hot() -> HotWhere {
        HotWhere(|_| true)
    }

    fn all_hot_fast_tier(stats_flush_ns: u64) -> (Lru, Kswapd, Reclaim) {
        let mut lru = Lru::new();
        for p in 0..64 {
            lru.add(PageId(p), FAST);
        }
        let k = Kswapd {
            stats_flush_ns,
            max_retries: MAX_RECLAIM_RETRIES,
            ..Kswapd::default()
        };
        let r = Reclaim {
            tier: FAST,
            target: SLOW,
            free: 0,
            wake_below: 4,
            balanced_at: 8,
            max_scan: 100_000,
            nr_to_reclaim: 8,
            page_bytes: 4096,
            start_ns: 1_000_000_000,
            ns_per_page: 1000.0,
            zones_can_pass: true,
        };
        (lru, k, r)
    }

    #[test]
    fn kswapd_gives_the_node_up_after_max_reclaim_retries_runs_that_reclaim_nothing() {
        // balance_pgdat counts a run that reclaimed nothing (pgdat->kswapd_failures); at
        // MAX_RECLAIM_RETRIES kswapd sleeps and wakeup_kswapd leaves the hopeless node alone.
        let (mut lru, mut k, r) = all_hot_fast_tier(0);
        let mut out = Vec::new();
        assert_eq!(k.run(&mut lru, &mut all_hot(), &mut out, &r), 0);
        assert!(out.is_empty());
        assert_eq!(k.failures, MAX_RECLAIM_RETRIES);
        assert_eq!(k.gave_up, 1);
        assert!(!k.awake);
        // it aged the active list on the way (exact sizes): pages went back and forth
        assert!(k.deactivated > 0 && k.activated > 0);
        // each run covered the LRU once: 16 runs of 64 pages, with the aging's tests
        assert!(k.scanned >= 16 * 64, "{}", k.scanned);
        k.wake();
        assert!(!k.awake);
        assert_eq!(k.run(&mut lru, &mut all_hot(), &mut out, &r), 0);
        assert!(!k.awake, "a hopeless node stays asleep below its wake mark");
        assert_eq!(k.wakeups_ignored, 2);
        lru.check().unwrap();
    }

    #[test]
    fn by_default_kswapd_never_gives_up() {
        let (mut lru, mut k, r) = all_hot_fast_tier(0);
        k.max_retries = 0;
        let mut out = Vec::new();
        k.run(
            &mut lru,
            &mut all_hot(),
            &mut out,
            &Reclaim {
                max_scan: 40 * 64,
                ..r
            },
        );
        assert!(k.failures >= MAX_RECLAIM_RETRIES);
        assert_eq!(k.gave_up, 0);
        assert!(k.awake);
    }

    #[test]
    fn a_run_that_reclaims_resets_the_failures() {
        let (mut lru, mut k, r) = all_hot_fast_tier(0);
        let mut out = Vec::new();
        // three runs' worth of examining, all referenced: three failures, still awake
        let short = Reclaim {
            max_scan: 3 * 64 + 32,
            ..r
        };
        k.run(&mut lru, &mut all_hot(), &mut out, &short);
        assert!(k.awake);
        assert!(
            (1..MAX_RECLAIM_RETRIES).contains(&k.failures),
            "{}",
            k.failures
        );
        // now nothing was touched: the next batch is demoted and the count starts again
        let mut idle = FakeMech::new(vec![Some(FAST); 64]);
        let d = k.run(&mut lru, &mut idle, &mut out, &r);
        assert!(d > 0);
        assert_eq!(k.failures, 0);
        assert_eq!(k.gave_up, 0);
    }

    #[test]
    fn with_stale_lru_sizes_kswapd_does_not_age_a_list_drained_since_the_flush() {
        // lru_stats_flush_ms: the aging decision reads the sizes of the last flush. The whole
        // inactive list is activated within the flush period, the sizes still say it is not
        // low, the active list is never aged, and the runs that find nothing to scan fail at
        // once: the node is given up without a page deactivated (the traced boot of
        // docs/validation.md, section 1d). With exact sizes the list is aged.
        let (mut lru, mut k, r) = all_hot_fast_tier(2_000_000_000);
        let mut out = Vec::new();
        k.run(&mut lru, &mut all_hot(), &mut out, &r);
        assert_eq!(k.gave_up, 1);
        assert_eq!(k.deactivated, 0);
        assert_eq!(k.activated, 64);
        assert_eq!((lru.len(FAST, false), lru.len(FAST, true)), (0, 64));
        let (mut lru, mut k, r) = all_hot_fast_tier(0);
        k.run(&mut lru, &mut all_hot(), &mut out, &r);
        assert!(k.deactivated > 0);
    }

    #[test]
    fn kswapd_ages_the_active_list_when_inactive_is_low() {
        let mut lru = Lru::new();
        for p in 0..64 {
            lru.add(PageId(p), FAST);
            lru.activate(PageId(p));
        }
        let mut mech = FakeMech::new(vec![Some(FAST); 64]);
        mech.accessed = vec![true; 64];
        let mut k = Kswapd::default();
        let mut out = Vec::new();
        let r = Reclaim {
            tier: FAST,
            target: SLOW,
            free: 0,
            wake_below: 1,
            balanced_at: 1,
            max_scan: 64,
            nr_to_reclaim: 1,
            page_bytes: 4096,
            start_ns: 0,
            ns_per_page: 1000.0,
            zones_can_pass: true,
        };
        // Deactivation clears the accessed bits, so the deactivated pages are reclaimable.
        assert_eq!(k.run(&mut lru, &mut mech, &mut out, &r), 32);
        assert_eq!(k.deactivated, 32);
        assert_eq!(lru.len(FAST, true), 32);
        lru.check().unwrap();
    }

    #[test]
    fn migrations_move_pages_between_tier_lists() {
        let mut lru = Lru::new();
        lru.add(PageId(0), SLOW);
        lru.activate(PageId(0));
        assert!(lru.isolate(PageId(0), FAST));
        assert!(!lru.isolate(PageId(0), FAST), "already isolated");
        assert_eq!((lru.inflight_in(FAST), lru.inflight_out(SLOW)), (1, 1));
        assert_eq!(
            lru.complete(&done(0, SLOW, FAST, MigrationOutcome::Done)),
            Completion::Ours { mark: false }
        );
        // Promoted pages keep PG_active (migrate_page_states).
        assert_eq!(
            (lru.tier(PageId(0)), lru.is_active(PageId(0))),
            (Some(FAST), true)
        );
        assert_eq!((lru.resident(FAST), lru.resident(SLOW)), (1, 0));
        // A failed migration puts the page back.
        lru.isolate(PageId(0), SLOW);
        lru.complete(&done(0, FAST, SLOW, MigrationOutcome::NoSpace));
        assert_eq!(lru.tier(PageId(0)), Some(FAST));
        // Someone else's migration is followed.
        assert_eq!(
            lru.complete(&done(0, FAST, SLOW, MigrationOutcome::Done)),
            Completion::Foreign
        );
        assert_eq!(lru.tier(PageId(0)), Some(SLOW));
        // Freed while in flight: the flight ends, the late result is ignored.
        lru.isolate(PageId(0), FAST);
        lru.remove(PageId(0));
        assert_eq!(
            lru.complete(&done(0, SLOW, FAST, MigrationOutcome::Done)),
            Completion::Unknown
        );
        assert_eq!((lru.inflight_in(FAST), lru.isolated()), (0, 0));
        lru.check().unwrap();
    }

    /// One hint-fault policy on the in-order test machine: a fast tier of 200 pages, nearly
    /// full, a slow tier of 1000; random hint faults (with random latencies) and accessed bits.
    /// One epoch of the drive: hint faults (page, latency in ms) and the accessed bits.
    type Epoch = (Vec<(u64, u64)>, Vec<bool>);

    fn drive(spec: &str, epochs: Vec<Epoch>) -> Result<(), TestCaseError> {
        use crate::testbed::Machine;
        use tierkit_core::HintFault;
        let mut m = Machine::new(&[200, 1000]);
        let mut pol = crate::build(spec).unwrap();
        m.init(pol.as_mut());
        for p in 0..400 {
            m.alloc(p, if p < 190 { FAST } else { SLOW }, 0);
        }
        for (faults, bits) in epochs {
            let mut tel = m.telemetry(Vec::new());
            let faults: std::collections::BTreeMap<u64, u64> = faults.into_iter().collect();
            tel.hint_faults = faults
                .iter()
                .map(|(&p, &ttf_ms)| HintFault {
                    page: PageId(p),
                    tier: m.tier[p as usize].unwrap(),
                    pid: 0,
                    tid: 1,
                    time_to_fault_ns: ttf_ms * 1_000_000,
                    time_ns: tel.now_ns,
                })
                .collect();
            let mut mech = m.mech();
            mech.accessed = bits;
            let mut out = Vec::new();
            pol.step(&tel, &mut mech, &mut out);
            let mut seen = std::collections::BTreeSet::new();
            for a in &out {
                if let Action::Migrate { page, .. } = a {
                    prop_assert!(
                        seen.insert(page.0),
                        "{}: page {} migrated twice in one epoch",
                        spec,
                        page.0
                    );
                }
            }
            m.apply(&out);
            prop_assert_eq!(m.nospace, 0, "{} over-filled a tier", spec);
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn hint_fault_policies_never_overfill_a_tier(
            spec in prop_oneof![Just("tpp"), Just("nbt"), Just("nomad"), Just("tpp:lru_gen=true"), Just("nbt:lru_gen=true"), Just("nomad:lru_gen=true")],
            epochs in proptest::collection::vec(
                (proptest::collection::vec((0u64..400, 0u64..3000), 0..60), proptest::collection::vec(any::<bool>(), 400)),
                1..40),
        ) {
            drive(spec, epochs)?;
        }
    }

    /// Benchmark scale: 4M pages of 4 KiB (1M fast, 3M slow), 60 s in 1 ms epochs, ~65 hint
    /// faults per epoch (256 MB/s of scanning), migrations completing one epoch later, 1% of
    /// the accessed bits set. Run with `cargo test --release -p tierkit-policies perf_ --
    /// --ignored --nocapture`; prints the policy's own time per simulated second.
    #[test]
    #[ignore]
    fn perf_4m_pages_60s() {
        use tierkit_core::telemetry::TierInfo;
        use tierkit_core::HintFault;
        const FAST_PAGES: u64 = 1 << 20;
        const PAGES: u64 = 4 << 20;
        for spec in ["notier", "tpp", "nbt", "nomad"] {
            let mut pol = crate::build(spec).unwrap();
            let mut tier: Vec<Option<TierId>> = (0..PAGES)
                .map(|p| Some(if p < FAST_PAGES { FAST } else { SLOW }))
                .collect();
            let mut used = [FAST_PAGES, PAGES - FAST_PAGES];
            let mut rng = tierkit_core::Rng::new(7);
            let mut pending: Vec<MigrationResult> = Vec::new();
            let mut mech = FakeMech::new(tier.clone());
            let start = std::time::Instant::now();
            for e in 0..60_000u64 {
                let mut tel = Telemetry {
                    now_ns: (e + 1) * 1_000_000,
                    epoch_ns: 1_000_000,
                    page_bytes: 4096,
                    tiers: vec![
                        TierInfo {
                            id: FAST,
                            name: "fast".into(),
                            capacity_pages: FAST_PAGES,
                            used_pages: used[0],
                        },
                        TierInfo {
                            id: SLOW,
                            name: "slow".into(),
                            capacity_pages: PAGES,
                            used_pages: used[1],
                        },
                    ],
                    migrations: std::mem::take(&mut pending),
                    ..Telemetry::default()
                };
                if e == 0 {
                    tel.allocated = (0..PAGES)
                        .map(|p| tierkit_core::telemetry::PageEvent {
                            page: PageId(p),
                            pid: 0,
                            tier: tier[p as usize].unwrap(),
                        })
                        .collect();
                    let mut out = Vec::new();
                    pol.init(&tel, &mut mech, &mut out);
                }
                for _ in 0..65 {
                    // Skewed toward low slow-tier ids: a hot set that keeps faulting.
                    let p = FAST_PAGES + (rng.below(PAGES - FAST_PAGES) >> rng.below(8));
                    if let Some(t) = tier[p as usize] {
                        tel.hint_faults.push(HintFault {
                            page: PageId(p),
                            tier: t,
                            pid: 0,
                            tid: 0,
                            time_to_fault_ns: rng.below(2_000_000_000),
                            time_ns: tel.now_ns,
                        });
                    }
                }
                for _ in 0..10_000 {
                    let p = rng.below(FAST_PAGES) as usize;
                    mech.accessed[p] = true;
                }
                let mut out = Vec::new();
                pol.step(&tel, &mut mech, &mut out);
                for a in out {
                    if let Action::Migrate { page, to, .. } = a {
                        let i = page.0 as usize;
                        let from = tier[i].unwrap();
                        let outcome = if used[to as usize] >= [FAST_PAGES, PAGES][to as usize] {
                            MigrationOutcome::NoSpace
                        } else {
                            used[from as usize] -= 1;
                            used[to as usize] += 1;
                            tier[i] = Some(to);
                            mech.tiers[i] = Some(to);
                            MigrationOutcome::Done
                        };
                        pending.push(MigrationResult {
                            page,
                            from,
                            to,
                            outcome,
                            remap: false,
                        });
                    }
                }
            }
            let s = pol.stats();
            let get = |k: &str| s.iter().find(|(n, _)| n == k).map_or(0.0, |x| x.1);
            println!(
                "{spec}: {:.3} s for 60 s simulated; promotions {} demotions {} kswapd scanned {}",
                start.elapsed().as_secs_f64(),
                get("promotions_done"),
                get("demotions_done"),
                get("kswapd_scanned")
            );
        }
    }

    fn gen_reclaim(free: u64, balanced_at: u64, max_scan: u64) -> Reclaim {
        Reclaim {
            tier: FAST,
            target: SLOW,
            free,
            wake_below: free + 1,
            balanced_at,
            max_scan,
            nr_to_reclaim: 32,
            page_bytes: 4096,
            start_ns: 0,
            ns_per_page: 1000.0,
            zones_can_pass: true,
        }
    }

    fn demoted(out: &[Action]) -> Vec<u64> {
        out.iter()
            .filter_map(|a| match a {
                Action::Migrate { page, to, .. } if *to == SLOW => Some(page.0),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_faulted_or_promoted_page_joins_the_youngest_generation_and_a_demoted_one_the_next() {
        let mut lru = Lru::new().with_gens(true);
        assert_eq!(lru.seqs(FAST), (0, 3));
        lru.add(PageId(0), FAST);
        lru.add(PageId(1), SLOW);
        assert_eq!(lru.seq_of(PageId(0)), Some(3));
        assert!(lru.is_active(PageId(0)) && lru.len(FAST, true) == 1);
        assert!(!lru.activate(PageId(0)));
        // a promotion (made in the hint fault) arrives in the youngest generation
        assert!(lru.isolate(PageId(1), FAST));
        lru.complete(&done(1, SLOW, FAST, MigrationOutcome::Done));
        assert_eq!(lru.seq_of(PageId(1)), Some(3));
        // reclaim's isolation clears PG_active: the demoted page lands at max_seq - 1
        assert!(lru.isolate_as(PageId(0), SLOW, true));
        lru.complete(&done(0, FAST, SLOW, MigrationOutcome::Done));
        assert_eq!(
            (lru.tier(PageId(0)), lru.seq_of(PageId(0))),
            (Some(SLOW), Some(2))
        );
        // counted active (one of the two youngest) but not in the youngest generation
        assert!(!lru.is_active(PageId(0)) && lru.len(SLOW, true) == 1);
        assert!(lru.activate(PageId(0)) && lru.is_active(PageId(0)));
        lru.check().unwrap();
    }

    #[test]
    fn folding_the_oldest_generation_reverses_its_order_as_inc_min_seq_does() {
        // inc_min_seq moves each folio from the old end to the old end of the next generation
        // (lru_to_folio, list_move_tail): the folded pages arrive oldest-last. A page a walk
        // found young goes to its own generation instead.
        let mut lru = Lru::new().with_gens(true);
        for p in 0..4 {
            lru.add(PageId(p), FAST);
        }
        let order = |lru: &Lru, seq: u64| -> Vec<u64> {
            let mut v = Vec::new();
            let mut cur = lru.lists.front(gen_list(FAST, seq));
            while let Some(p) = cur {
                v.push(p.0);
                cur = lru.lists.next(p);
            }
            v
        };
        // three agings: the empty generations before the pages' one are passed over, and the
        // pages' generation becomes the oldest of four
        for _ in 0..3 {
            lru.inc_max_seq(FAST);
        }
        let (min, max) = lru.seqs(FAST);
        assert_eq!((min, max), (3, 6));
        assert_eq!(order(&lru, min), vec![0, 1, 2, 3]);
        assert!(lru.update_gen(PageId(2)));
        lru.inc_max_seq(FAST);
        assert_eq!(lru.seqs(FAST), (min + 1, max + 1));
        assert_eq!(order(&lru, min + 1), vec![3, 1, 0]);
        assert_eq!(lru.seq_of(PageId(2)), Some(max));
        assert_eq!(lru.seq_of(PageId(3)), Some(min + 1));
        lru.check().unwrap();
    }

    #[test]
    fn with_the_dma_zone_a_multi_gen_shrink_runs_to_nr_to_reclaim_past_the_watermark() {
        // 64K idle fast pages (a shrink scans at most 1/64 of them, nr_to_scan at priority 6);
        // kswapd must free 64, a shrink may reclaim 512 (nr_to_reclaim). One zone that passes
        // its watermark ends the shrink once free pages reach the promo watermark +
        // MIN_LRU_BATCH (should_abort_scan); the DMA zone never passes its check (its
        // lowmem_reserve), so the shrink goes on to nr_to_reclaim.
        let run = |zones_can_pass: bool| {
            let n = 1u64 << 16;
            let mut lru = Lru::new().with_gens(true);
            for p in 0..n {
                lru.add(PageId(p), FAST);
            }
            let mut mech = HotWhere(|_| false);
            let mut k = Kswapd::default();
            let mut out = Vec::new();
            let r = Reclaim {
                nr_to_reclaim: 512,
                zones_can_pass,
                ..gen_reclaim(0, 64, 1 << 20)
            };
            k.run(&mut lru, &mut mech, &mut out, &r);
            lru.check().unwrap();
            demoted(&out).len() as u64
        };
        let (one_zone, dma) = (run(true), run(false));
        assert!(
            (64 + MIN_LRU_BATCH..64 + 2 * MIN_LRU_BATCH).contains(&one_zone),
            "one zone: {one_zone}"
        );
        assert!(dma >= 512, "with the DMA zone: {dma}");
    }

    #[test]
    fn kswapds_own_demotion_time_spreads_a_reclaim_over_more_steps() {
        // kswapd_demote_us: each 4 KiB it demotes costs kswapd that much of its time, so with a
        // step's budget of 1 ms (1000 pages at 1 us) a run that must free 512 idle pages takes
        // one step at 0 us and about six at 10 us (512 copies of 10 us), on either LRU; the
        // pages it demotes are the same ones, in the same order
        for gens in [false, true] {
            let run = |demote_ns: u64| {
                let n = 4096u64;
                let mut lru = Lru::new().with_gens(gens);
                for p in 0..n {
                    lru.add(PageId(p), FAST);
                }
                let mut mech = HotWhere(|_| false);
                let mut k = Kswapd {
                    demote_ns,
                    ..Kswapd::default()
                };
                let mut out = Vec::new();
                let mut steps = 0u64;
                let mut free = 0u64;
                while steps < 100 {
                    let r = Reclaim {
                        free,
                        wake_below: 1,
                        start_ns: steps * 1_000_000,
                        nr_to_reclaim: 512,
                        zones_can_pass: true,
                        ..gen_reclaim(free, 512, 1000)
                    };
                    free += k.run(&mut lru, &mut mech, &mut out, &r);
                    steps += 1;
                    if !k.awake {
                        break;
                    }
                }
                lru.check().unwrap();
                (steps, demoted(&out), k.clock_ns)
            };
            let (fast, slow) = (run(0), run(10_000));
            assert!(fast.1.len() >= 512 && slow.1.len() >= 512, "gens {gens}");
            assert_eq!(fast.1[..512], slow.1[..512], "gens {gens}: the same pages");
            assert!(fast.0 <= 2, "gens {gens}: {} steps at 0 us", fast.0);
            assert!(
                (5..=8).contains(&slow.0),
                "gens {gens}: {} steps at 10 us",
                slow.0
            );
            assert!(
                slow.2 >= 5_000_000,
                "gens {gens}: kswapd's clock {}",
                slow.2
            );
        }
    }

    #[test]
    fn the_multi_gen_kswapd_ages_by_a_walk_then_evicts_the_oldest_generation() {
        // 256 fast pages, all faulted in (youngest generation); the even ones are accessed
        let n = 256u64;
        let mut lru = Lru::new().with_gens(true);
        for p in 0..n {
            lru.add(PageId(p), FAST);
        }
        // even pages are accessed all the time, odd ones never
        let mut mech = HotWhere(|p| p % 2 == 0);
        let mut k = Kswapd::default();
        let mut out = Vec::new();
        // one generation of pages at max_seq 3, min_seq 0: four generations, but the three
        // older are empty; eviction moves min_seq to 2 and there is nothing to evict, so the
        // run lowers its priority and ages: the first walk finds every page in the youngest
        // generation, the second leaves the odd ones behind
        let r = gen_reclaim(0, 64, 1 << 20);
        k.run(&mut lru, &mut mech, &mut out, &r);
        lru.check().unwrap();
        assert!(k.agings >= 1, "kswapd aged {} times", k.agings);
        // the walk found the even pages young and cleared their bits; after the aging they
        // are one generation younger than the odd ones, which are evicted first
        let d = demoted(&out);
        assert!(!d.is_empty());
        assert!(d.iter().all(|p| p % 2 == 1), "demoted {d:?}");
        assert!(d.iter().all(|&p| lru.is_isolated(PageId(p))));
        // the young pages sit in a younger generation than any page not demoted
        let (min, max) = lru.seqs(FAST);
        assert!(max - min < MAX_NR_GENS && max - min + 1 >= MIN_NR_GENS);
        assert_eq!(k.failures, 0);
        // one balance_pgdat run did it all, and kswapd sleeps: the next wake starts another
        assert_eq!((k.runs, k.awake), (1, false));
        k.wake();
        let short = gen_reclaim(0, 1 << 20, 64);
        k.run(&mut lru, &mut mech, &mut out, &short);
        assert_eq!(k.runs, 2);
    }

    #[test]
    fn a_young_page_at_eviction_goes_to_the_youngest_generation_with_its_young_neighbours() {
        // 4 generations: page 0 alone in the oldest, young; pages 1..64 in the youngest are
        // young too; eviction finds 0 young, moves it up, and look-around clears 1..64's bits
        let mut lru = Lru::new().with_gens(true);
        lru.add(PageId(0), FAST);
        lru.max_seq[FAST as usize] = 3;
        // put page 0 in generation 0 by hand
        lru.lists.remove(PageId(0));
        lru.lists.push_back(gen_list(FAST, 0), PageId(0));
        for p in 1..64 {
            lru.add(PageId(p), FAST);
        }
        lru.add(PageId(100), FAST);
        lru.lists.remove(PageId(100));
        lru.lists.push_back(gen_list(FAST, 1), PageId(100));
        lru.check().unwrap();
        let mut mech = FakeMech::new(vec![Some(FAST); 128]);
        mech.accessed = vec![true; 128];
        mech.accessed[100] = false;
        let mut k = Kswapd::default();
        let mut out = Vec::new();
        let r = Reclaim {
            nr_to_reclaim: 1,
            ..gen_reclaim(0, 1, 1 << 20)
        };
        k.in_pass = true;
        k.prio = DEF_PRIORITY;
        k.awake = true;
        let (_, isolated, d, _) = k.evict(&mut lru, &mut mech, &mut out, &r, 0.0);
        assert_eq!((isolated, d), (1, 0));
        assert_eq!(lru.seq_of(PageId(0)), Some(3));
        assert_eq!((k.kept, k.activated), (1, 0));
        // the neighbours' bits were tested and cleared by look-around
        assert!(mech.accessed[1..64].iter().all(|&a| !a));
        assert!(k.walk_tested >= 63);
        // the oldest generation is empty now: min_seq moved on, and the next eviction takes
        // page 100, unreferenced, and demotes it
        assert_eq!(lru.seqs(FAST).0, 1);
        let (_, _, d, _) = k.evict(&mut lru, &mut mech, &mut out, &r, 0.0);
        assert_eq!((d, demoted(&out)), (1, vec![100]));
        lru.check().unwrap();
    }

    /// A mechanism whose pages are touched at a fixed rate each (1 / `every_ns` per page,
    /// those `hot` says), recording every test: a page tested at `at` reads young when a touch
    /// fell after its last test. It also keeps the earliest test and the time kswapd says it
    /// ran.
    struct Timed {
        every_ns: u64,
        hot: fn(u64) -> bool,
        last: rustc_hash::FxHashMap<u64, u64>,
        tests: u64,
        not_after_last: u64,
        first: Option<u64>,
        ran_ns: u64,
    }

    impl Timed {
        fn new(every_ns: u64, hot: fn(u64) -> bool) -> Self {
            Timed {
                every_ns,
                hot,
                last: Default::default(),
                tests: 0,
                not_after_last: 0,
                first: None,
                ran_ns: 0,
            }
        }
    }

    impl Mechanism for Timed {
        fn tier_of(&self, _: PageId) -> Option<TierId> {
            Some(FAST)
        }
        fn test_and_clear_accessed(&mut self, _: &[PageId], _: &mut Vec<bool>) {
            unreachable!("kswapd tests with a time")
        }
        fn test_and_clear_accessed_at(&mut self, pages: &[PageId], at: u64, out: &mut Vec<bool>) {
            out.clear();
            self.first = Some(self.first.map_or(at, |f| f.min(at)));
            for p in pages {
                self.tests += 1;
                let last = self.last.insert(p.0, at);
                if last.is_some_and(|l| at <= l) {
                    self.not_after_last += 1;
                }
                // touched at phase + k x every: one in (last, at]?
                let every = self.every_ns * (1 + p.0 % 7);
                let phase = p.0 * 7919 % every;
                let n = |x: u64| (x + every - phase) / every;
                out.push((self.hot)(p.0) && last.is_none_or(|l| n(at) > n(l)));
            }
        }
        fn kernel_ran(&mut self, from_ns: u64, to_ns: u64) {
            self.ran_ns += to_ns - from_ns;
        }
    }

    /// A kswapd woken by a promotion 0.6 ms into a 1 ms step works from then on, with what is
    /// left of the step's budget; one awake already works from the step's start. Both LRUs.
    #[test]
    fn kswapd_woken_inside_a_step_does_no_work_before_the_wake() {
        for gens in [false, true] {
            let run = |wake_at: Option<u64>| {
                let mut lru = Lru::new().with_gens(gens);
                for p in 0..4096 {
                    lru.add(PageId(p), FAST);
                }
                let mut k = Kswapd::default();
                match wake_at {
                    Some(t) => k.wake_at(t),
                    None => k.wake(),
                }
                let r = Reclaim {
                    tier: FAST,
                    target: SLOW,
                    free: 0,
                    wake_below: 0,
                    balanced_at: 1 << 20,
                    max_scan: 1000,
                    nr_to_reclaim: 32,
                    page_bytes: 4096,
                    start_ns: 1_000_000,
                    ns_per_page: 1000.0,
                    zones_can_pass: true,
                };
                // every page idle
                let mut mech = Timed::new(1_000_000, |_| false);
                let mut out = Vec::new();
                let demoted = k.run(&mut lru, &mut mech, &mut out, &r);
                (mech.first.unwrap(), mech.ran_ns, demoted)
            };
            let (first, ran, demoted) = run(Some(1_600_000));
            let (first0, ran0, demoted0) = run(None);
            assert!(first >= 1_600_000, "gens {gens}: first test at {first}");
            assert!(first0 < 1_100_000, "gens {gens}: first test at {first0}");
            // the step's 1 ms of budget, or the 0.4 ms left after the wake (and a batch)
            assert!(ran0 >= 900_000, "gens {gens}: ran {ran0} ns");
            assert!(ran <= 450_000, "gens {gens}: ran {ran} ns after the wake");
            assert!(demoted <= demoted0 && demoted0 > 0, "gens {gens}");
        }
    }

    /// kswapd() calls balance_pgdat again at once after a run that reclaimed nothing while
    /// the node is not balanced: the multi-gen kswapd's runs over every page young (each run
    /// ages, finds nothing to evict and fails) are as many in one 1 ms step as in four of
    /// 0.25 ms, where each failed run used to wait for the next step (1 run against 4).
    #[test]
    fn a_multi_gen_run_that_reclaims_nothing_is_followed_at_once_whatever_the_step() {
        let run = |steps: u64| {
            let mut lru = Lru::new().with_gens(true);
            for p in 0..64 {
                lru.add(PageId(p), FAST);
            }
            let mut k = Kswapd::default();
            k.wake();
            // touched every nanosecond: every test reads young
            let mut mech = Timed::new(1, |_| true);
            let mut out = Vec::new();
            for i in 0..steps {
                let r = Reclaim {
                    start_ns: 1_000_000 + i * 1_000_000 / steps,
                    max_scan: 1000 / steps,
                    ..gen_reclaim(0, 1, 1 << 20)
                };
                k.run(&mut lru, &mut mech, &mut out, &r);
            }
            assert_eq!(mech.not_after_last, 0);
            (k.runs, k.failures, k.demotions, mech.ran_ns)
        };
        let (one, four) = (run(1), run(4));
        assert_eq!(one.2 + four.2, 0, "nothing to demote");
        assert!(one.0 > 2, "{one:?}");
        assert!(one.0.abs_diff(four.0) <= 1, "{one:?} {four:?}");
        assert!(one.1.abs_diff(four.1) <= 1, "{one:?} {four:?}");
        // both work through the millisecond
        assert!(one.3 >= 900_000 && four.3 >= 900_000, "{one:?} {four:?}");
    }

    #[test]
    fn a_walk_leaves_young_pages_where_they_sit_until_evictions_scan_sorts_them() {
        // eight pages in the oldest generation in the order the promotions brought them, not
        // in address order; a walk finds them all young: they count in the youngest
        // generation at once (lru_gen_update_size) but stay on the oldest list, and the next
        // eviction moves them in the order it meets them (sort_folio), isolating none, so the
        // youngest generation keeps their old order rather than the walk's address order
        let order = [7u64, 3, 5, 1, 6, 2, 4, 0];
        let mut lru = Lru::new().with_gens(true);
        lru.max_seq[FAST as usize] = 2;
        for &p in &order {
            lru.add(PageId(p), FAST);
            lru.lists.remove(PageId(p));
            lru.lists.push_back(gen_list(FAST, 0), PageId(p));
        }
        lru.add(PageId(100), FAST);
        let mut k = Kswapd::default();
        let r = gen_reclaim(0, 1, 1 << 20);
        let mut mech = HotWhere(|p| p < 8);
        k.begin_walk(&lru, FAST);
        k.walk_step(&mut lru, &mut mech, FAST, 0.0, 1e12, &r);
        assert_eq!(k.agings, 1);
        // the walk aged: max_seq 3, the pages belong to generation 2 (now the second youngest)
        assert_eq!(lru.gen_len(FAST, 2), 9);
        assert_eq!(lru.gen_len(FAST, 0), 0);
        assert_eq!(lru.seq_of(PageId(7)), Some(2));
        assert_eq!(lru.lists.len(gen_list(FAST, 0)), 8);
        lru.check().unwrap();
        // eviction's scan sorts them and isolates nothing; the oldest list empties
        let mut out = Vec::new();
        let (_, isolated, d, _) = k.evict(&mut lru, &mut mech, &mut out, &r, 0.0);
        assert_eq!((isolated, d, k.sorted), (0, 0, 8));
        assert_eq!(lru.lists.len(gen_list(FAST, 0)), 0);
        let young: Vec<u64> = lru.lists.iter(gen_list(FAST, 2)).map(|p| p.0).collect();
        assert_eq!(young, [100, 7, 3, 5, 1, 6, 2, 4, 0]);
        lru.check().unwrap();
    }

    #[test]
    fn eviction_tests_its_batch_one_page_after_another_and_keeps_those_look_around_found_young() {
        // pages 0, 1 and 2 in the oldest generation, 0 and 1 young: page 0 is kept and its
        // look-around finds page 1 young (clearing its bit) and page 2 not; shrink_folio_list
        // then keeps page 1 untested (PG_referenced, set by folio_update_gen on an isolated
        // folio) and reclaims page 2
        let mut lru = Lru::new().with_gens(true);
        lru.max_seq[FAST as usize] = 3;
        for p in 0..3 {
            lru.add(PageId(p), FAST);
            lru.lists.remove(PageId(p));
            lru.lists.push_back(gen_list(FAST, 0), PageId(p));
        }
        for p in 3..64 {
            lru.add(PageId(p), FAST);
        }
        lru.check().unwrap();
        let mut mech = FakeMech::new(vec![Some(FAST); 64]);
        mech.accessed = vec![true; 64];
        mech.accessed[2] = false;
        let mut k = Kswapd::default();
        let mut out = Vec::new();
        let r = gen_reclaim(0, 1, 1 << 20);
        let (_, isolated, d, cost) = k.evict(&mut lru, &mut mech, &mut out, &r, 0.0);
        assert_eq!((isolated, d, k.kept), (3, 1, 2));
        assert_eq!(demoted(&out), vec![2]);
        assert_eq!(lru.seq_of(PageId(1)), Some(3));
        // two rmap examinations, one look-around over 63 neighbours, one page kept untested
        assert!((cost - (2.0 + 64.0 * PTE_TEST_COST)).abs() < 1e-9, "{cost}");
        // one batch, which reclaimed 1 of its 3 pages: kept nearly whole
        assert_eq!(
            (k.evict_batches, k.evict_batches_few, k.evict_batches_most),
            (1, 1, 0)
        );
        lru.check().unwrap();
    }

    #[test]
    fn the_multi_gen_kswapd_never_tests_a_page_at_an_instant_already_passed() {
        // 4096 pages, the even ones touched every 5-35 ms, kswapd kept awake over 200 steps of
        // 1 ms with a budget of 64 pages a step: walks, evictions and look-arounds, some
        // running past their step, test each page at a later instant every time
        for mm_tables in [false, true] {
            let n = 4096u64;
            let mut lru = Lru::new().with_gens(true);
            for p in 0..n {
                lru.add(PageId(p), FAST);
            }
            let mut k = Kswapd {
                mm_tables,
                ..Kswapd::default()
            };
            k.set_address_spaces(&objects(&[(0, 0, 1000), (1, 1000, n - 1000)]));
            let mut mech = Timed::new(5_000_000, |p| p % 2 == 0);
            let mut out = Vec::new();
            for step in 0..200u64 {
                let r = Reclaim {
                    start_ns: step * 1_000_000,
                    max_scan: 64,
                    ..gen_reclaim(0, n, 64)
                };
                k.wake();
                k.run(&mut lru, &mut mech, &mut out, &r);
                // demotions complete at once
                for a in out.drain(..) {
                    if let Action::Migrate { page, .. } = a {
                        lru.remove(page);
                    }
                }
            }
            assert!(
                k.agings >= 2 && k.demotions > 0 && k.kept > 0,
                "agings {} demotions {} kept {}",
                k.agings,
                k.demotions,
                k.kept
            );
            assert!(mech.tests > 4 * n);
            assert_eq!(mech.not_after_last, 0, "of {} tests", mech.tests);
        }
    }

    #[test]
    fn the_multi_gen_kswapd_keeps_every_young_page_and_gives_up_only_with_max_reclaim_retries() {
        // every page always referenced: each walk moves every page to the youngest
        // generation, so the older ones empty, eviction finds nothing and kswapd can only age
        // again (should_run_aging); no run reclaims anything
        for retries in [0, MAX_RECLAIM_RETRIES] {
            let n = 512u64;
            let mut lru = Lru::new().with_gens(true);
            for p in 0..n {
                lru.add(PageId(p), FAST);
            }
            let mut mech = all_hot();
            let mut k = Kswapd {
                max_retries: retries,
                ..Kswapd::default()
            };
            let mut out = Vec::new();
            for step in 0..400 {
                let r = Reclaim {
                    start_ns: step * 1_000_000,
                    ..gen_reclaim(0, 64, 1024)
                };
                k.run(&mut lru, &mut mech, &mut out, &r);
            }
            assert!(out.is_empty());
            assert!(k.agings > 2 && k.demotions == 0 && k.activated == 0);
            // every page counts in the two youngest generations (by its flags)
            assert_eq!(lru.len(FAST, true), n);
            if retries == 0 {
                assert!(k.awake && k.gave_up == 0 && k.failures > MAX_RECLAIM_RETRIES);
            } else {
                assert!(!k.awake && k.hopeless() && k.gave_up == 1);
            }
            lru.check().unwrap();
        }
    }

    #[test]
    fn a_walk_skips_the_page_tables_the_last_one_found_too_cold() {
        // two 2 MiB blocks of 4 KiB pages: in the first every even page is accessed (half
        // young: suitable_to_scan), in the second none; the first walk visits both, the second
        // only the first block (the Bloom filter), so the cold block's bits are left alone
        let mut lru = Lru::new().with_gens(true);
        for p in 0..1024 {
            lru.add(PageId(p), FAST);
        }
        let mut k = Kswapd::default();
        let mut mech = HotWhere(|p| p < 512 && p % 2 == 0);
        let r = gen_reclaim(0, 1, 1 << 20);
        for walk in 0..2 {
            k.begin_walk(&lru, FAST);
            while k.walking {
                k.walk_step(&mut lru, &mut mech, FAST, 0.0, 1e9, &r);
            }
            assert_eq!(k.agings, walk + 1);
        }
        assert_eq!((k.walk_tested, k.walk_skipped), (1024 + 512, 512));
        let seq = lru.seqs(FAST).1;
        assert!(k.filter_has(seq, 0) && !k.filter_has(seq, 1));
        // with 2 MiB pages there are no page-table pages to skip
        let mut lru = Lru::new().with_gens(true);
        let mut k = Kswapd::default();
        for p in 0..4 {
            lru.add(PageId(p), FAST);
        }
        let r = Reclaim {
            page_bytes: 2 << 20,
            ..r
        };
        for _ in 0..2 {
            k.walk = (0..4).map(PageId).collect();
            k.walk_pos = 0;
            k.walking = true;
            k.walk_step(&mut lru, &mut all_hot(), FAST, 0.0, 1e9, &r);
        }
        assert_eq!((k.walk_tested, k.walk_skipped), (8, 0));
    }

    fn objects(spans: &[(u32, u64, u64)]) -> Vec<tierkit_core::ObjectInfo> {
        spans
            .iter()
            .map(|&(pid, first, pages)| tierkit_core::ObjectInfo {
                pid,
                name: format!("o{pid}-{first}"),
                first_page: PageId(first),
                pages,
                live: true,
            })
            .collect()
    }

    fn walk_once(k: &mut Kswapd, lru: &mut Lru, mech: &mut dyn Mechanism, r: &Reclaim) {
        k.begin_walk(lru, FAST);
        while k.walking {
            k.walk_step(lru, mech, FAST, 0.0, 1e12, r);
        }
    }

    #[test]
    fn with_per_process_tables_a_block_mostly_on_the_slow_node_is_not_walked_again() {
        // one process of 1024 pages (two blocks); of its first block only 64 pages are on the
        // fast tier, 16 of them young: 16 x 8 >= 64 tested pages, but < the 512 PTEs
        // walk_pte_range counts, so only the global-id model walks that block again
        for mm_tables in [false, true] {
            let mut lru = Lru::new().with_gens(true);
            for p in (0..64).chain(512..1024) {
                lru.add(PageId(p), FAST);
            }
            let mut k = Kswapd {
                mm_tables,
                ..Kswapd::default()
            };
            k.set_address_spaces(&objects(&[(0, 0, 1024)]));
            let mut mech = HotWhere(|p| !(16..512).contains(&p));
            let r = gen_reclaim(0, 1, 1 << 20);
            walk_once(&mut k, &mut lru, &mut mech, &r);
            let first = k.walk_tested;
            // the walk's mm_stats (lru_gen_full's T Y F A): PTEs read, young, page-table
            // pages entered and added to the next filter
            let read = if mm_tables { 1024 } else { 576 };
            let added = if mm_tables { 1 } else { 2 };
            assert_eq!(
                (
                    k.walk_leaf_total,
                    k.walk_leaf_young,
                    k.walk_nonleaf_found,
                    k.walk_nonleaf_added
                ),
                (read, 16 + 512, 2, added)
            );
            walk_once(&mut k, &mut lru, &mut mech, &r);
            assert_eq!(first, 576);
            let again = k.walk_tested - first;
            if mm_tables {
                assert_eq!((again, k.walk_skipped), (512, 64));
            } else {
                assert_eq!((again, k.walk_skipped), (576, 0));
            }
        }
    }

    #[test]
    fn per_process_tables_split_a_block_at_the_process_boundary_and_cost_every_pte() {
        // two processes share global block 0 (pages 0..300 and 300..1024): with mm_tables
        // process 1's pages 300..812 are its own first block, so a cold process 0 does not
        // take process 1's hot pages out of the filter; the walk reads every PTE of a block
        let mut lru = Lru::new().with_gens(true);
        for p in 0..1024 {
            lru.add(PageId(p), FAST);
        }
        let mut k = Kswapd {
            mm_tables: true,
            ..Kswapd::default()
        };
        k.set_address_spaces(&objects(&[(0, 0, 300), (1, 300, 724)]));
        // (key, first page, end): 300, 512 and 212 PTEs
        assert_eq!(k.block_of(PageId(299), 512), (1 << 40, 0, 300));
        assert_eq!(k.block_of(PageId(300), 512), (2 << 40, 300, 812));
        assert_eq!(k.block_of(PageId(812), 512), ((2 << 40) | 1, 812, 1024));
        let mut mech = HotWhere(|p| p >= 300);
        let r = gen_reclaim(0, 1, 1 << 20);
        k.begin_walk(&lru, FAST);
        let cost = k.walk_step(&mut lru, &mut mech, FAST, 0.0, 1e12, &r);
        assert!(!k.walking);
        assert!((cost - 1024.0 * PTE_TEST_COST).abs() < 1e-9);
        let seq = lru.seqs(FAST).1;
        assert!(!k.filter_has(seq, 1 << 40));
        assert!(k.filter_has(seq, 2 << 40) && k.filter_has(seq, (2 << 40) | 1));
    }

    #[test]
    fn should_skip_mm_walks_a_process_once_per_switch_in() {
        // two processes switched in every 10 ms; walks 2.5 ms apart over 100 ms walk each one
        // the first time and then once per switch-in (every fourth walk), and a walk that
        // walks no process leaves the next walk's filter as it was
        assert!(
            switched_in(3, 10, 0, 3) && !switched_in(3, 10, 3, 12) && switched_in(3, 10, 3, 13)
        );
        let mut lru = Lru::new().with_gens(true);
        for p in 0..1024 {
            lru.add(PageId(p), FAST);
        }
        let mut k = Kswapd {
            mm_switch_ns: 10_000_000,
            ..Kswapd::default()
        };
        k.set_address_spaces(&objects(&[(0, 0, 512), (1, 512, 512)]));
        let mut mech = HotWhere(|p| p % 2 == 0);
        let mut walked = vec![];
        for w in 0..40u64 {
            let r = Reclaim {
                start_ns: w * 2_500_000,
                ..gen_reclaim(0, 1, 1 << 20)
            };
            let before = (k.mm_walked, k.filters.clone());
            walk_once(&mut k, &mut lru, &mut mech, &r);
            walked.push(k.mm_walked - before.0);
            if k.mm_walked == before.0 {
                // no reset: filters[seq + 1] (this walk's seq was max_seq - 1) is unchanged
                let s = lru.seqs(FAST).1;
                assert_eq!(k.filters[(s % 2) as usize], before.1[(s % 2) as usize]);
            }
        }
        let total: u64 = walked.iter().sum();
        // 2 first walks + 2 processes x 10 switch-ins in 97.5 ms (9 or 10 each)
        assert!((20..=22).contains(&total), "{walked:?}");
        assert_eq!(k.mm_walked + k.mm_skipped, 80);
        assert_eq!(k.agings, 40);
        assert!(k.walk_mm_skipped > 0);
    }

    /// With a DMA zone above its order-0 bar (`order0_balanced`), a kswapd run woken for huge
    /// pages ends once it has reclaimed compact_gap(9), two huge pages: kswapd_shrink_node drops
    /// its order to 0 and pgdat_balanced accepts the node on the DMA zone's account, however
    /// far the main zone is from its watermark. Without it the run goes on to the watermark.
    /// A kswapd for base pages is then not woken at all (wakeup_kswapd's pgdat_balanced at
    /// order 0). Both LRUs.
    #[test]
    fn a_dma_zone_above_its_bar_ends_a_huge_page_run_at_compact_gap() {
        for gens in [false, true] {
            let run = |order0_balanced: bool, page_bytes: u64| {
                let mut lru = Lru::new().with_gens(gens);
                for p in 0..256 {
                    lru.add(PageId(p), FAST);
                }
                let mut k = Kswapd {
                    order0_balanced,
                    ..Kswapd::default()
                };
                // every page idle: each one tested can be demoted
                let mut mech = Timed::new(1 << 40, |_| false);
                let mut out = Vec::new();
                // a failed promotion of such a page wakes kswapd (Tiering::wakeup_kswapd)
                if !k.balanced_at_wake(0, 40, page_bytes) {
                    k.wake();
                }
                for step in 0..50u64 {
                    let r = Reclaim {
                        start_ns: step * 1_000_000,
                        page_bytes,
                        // a pass reclaims at most 8 before balance_pgdat checks again
                        nr_to_reclaim: 8,
                        // 40 pages short of the watermark, and below the wake mark
                        ..gen_reclaim(0, 40, 512)
                    };
                    k.run(&mut lru, &mut mech, &mut out, &r);
                    if !k.awake {
                        break;
                    }
                }
                (demoted(&out).len(), k.awake, k.wakeups)
            };
            let huge = 2 << 20;
            let (with, awake, _) = run(true, huge);
            assert!(!awake, "gens {gens}: the run ended balanced");
            // (the classic LRU's batch is SWAP_CLUSTER_MAX pages, so its first pass demotes 32)
            let most = if gens { 8 } else { 32 };
            assert!((2..=most).contains(&with), "gens {gens}: {with} demoted");
            let (without, _, _) = run(false, huge);
            assert!(
                without >= 40,
                "gens {gens}: {without} demoted without the DMA zone"
            );
            // base pages: order 0 from the start, the node is balanced and kswapd stays asleep,
            // woken neither by the failed promotion nor by the free pages below the wake mark
            assert_eq!(run(true, 4096), (0, false, 0), "gens {gens}");
            assert!(run(false, 4096).0 >= 40, "gens {gens}");
        }
    }

    /// kswapd's first run of a run works within its step, however short the step: a 0.25 ms
    /// step gives 0.25 ms of budget and no accessed-bit test after the step's end (it took a
    /// whole millisecond, three quarters of it past the telemetry). Both LRUs.
    #[test]
    fn kswapds_first_run_stays_inside_a_short_first_step() {
        use tierkit_core::telemetry::TierInfo;
        for gens in [false, true] {
            let (pages, step_ns) = (4096u64, 250_000u64);
            let mut t = Tiering::new(10, 1024);
            t.lru = Lru::new().with_gens(gens);
            for p in 0..pages {
                t.lru.add(PageId(p), FAST);
            }
            t.kswapd.wake();
            let tel = Telemetry {
                now_ns: step_ns,
                epoch_ns: step_ns,
                page_bytes: 4096,
                tiers: vec![
                    TierInfo {
                        id: FAST,
                        name: "fast".into(),
                        capacity_pages: pages,
                        used_pages: pages,
                    },
                    TierInfo {
                        id: SLOW,
                        name: "slow".into(),
                        capacity_pages: 4 * pages,
                        used_pages: 0,
                    },
                ],
                ..Telemetry::default()
            };
            // every page idle: each one tested can be demoted, so only the budget stops kswapd
            let mut mech = Timed::new(1 << 40, |_| false);
            let mut out = Vec::new();
            t.run_kswapd(&tel, &mut mech, &mut out, 2048, 2048);
            let demoted = out
                .iter()
                .filter(|a| matches!(a, Action::Migrate { .. }))
                .count() as u64;
            let latest = mech.last.values().copied().max().unwrap_or(0);
            // (the multi-gen one spends a short first step aging before it can evict)
            assert!(mech.tests > 0 && (gens || demoted > 0), "gens {gens}");
            assert!(latest <= step_ns, "gens {gens}: a test at {latest} ns");
            assert!(
                mech.ran_ns <= step_ns,
                "gens {gens}: ran {} ns",
                mech.ran_ns
            );
            assert!(
                demoted <= 256 + SWAP_CLUSTER_MAX as u64,
                "gens {gens}: {demoted}"
            );
        }
    }

    /// The multi-gen walk's observers reach the time series (policy.mglru_walk_*) with the
    /// walk's own counts, and only with lru_gen on.
    #[test]
    fn the_series_carries_the_walks_tests_young_pages_and_skips_with_the_multi_gen_lru() {
        let named = |t: &Tiering| {
            let mut out = Vec::new();
            t.series(&mut out);
            out.into_iter()
                .filter(|(n, _)| n.starts_with("mglru_walk_"))
                .collect::<Vec<_>>()
        };
        let mut t = Tiering::new(10, 1024);
        assert!(named(&t).is_empty());
        t.lru = Lru::new().with_gens(true);
        (
            t.kswapd.walk_tested,
            t.kswapd.walk_young,
            t.kswapd.walk_skipped,
        ) = (7, 3, 2);
        assert_eq!(
            named(&t),
            vec![
                ("mglru_walk_tested".to_string(), 7.0),
                ("mglru_walk_young".to_string(), 3.0),
                ("mglru_walk_skipped".to_string(), 2.0),
            ]
        );
        // and the generations' count (lru_gen_init_lruvec: min_seq 0, max_seq MIN_NR_GENS + 1)
        // beside kswapd's runs, which every hint-fault policy publishes
        t.kswapd.runs = 5;
        let mut out = Vec::new();
        t.series(&mut out);
        let get = |name: &str| out.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        assert_eq!(get("lru_fast_gens"), Some((MIN_NR_GENS + 2) as f64));
        assert_eq!(get("kswapd_runs"), Some(5.0));
        t.lru = Lru::new();
        out.clear();
        t.series(&mut out);
        assert!(out.iter().all(|(n, _)| n != "lru_fast_gens"));
    }

    #[test]
    fn set_initial_priority_starts_where_size_over_priority_is_what_must_be_reclaimed() {
        let mut lru = Lru::new().with_gens(true);
        // 8192 pages in generation 0 (inactive), 1024 to reclaim: fls(8192) - 1 - fls(1023)
        // = 14 - 1 - 10 = 3, clamped up to DEF_PRIORITY / 2
        for p in 0..8192 {
            lru.add(PageId(p), FAST);
            lru.lists.remove(PageId(p));
            lru.lists.push_back(gen_list(FAST, 0), PageId(p));
        }
        assert_eq!(initial_priority(&lru, FAST, 1024, 1), DEF_PRIORITY / 2);
        // 8 to reclaim: below MIN_LRU_BATCH, DEF_PRIORITY
        assert_eq!(initial_priority(&lru, FAST, 8, 1), DEF_PRIORITY);
        // 64 to reclaim: 14 - 1 - fls(63) = 7
        assert_eq!(initial_priority(&lru, FAST, 64, 1), 7);
        assert_eq!(
            get_nr_to_scan(&lru, FAST, DEF_PRIORITY, 1),
            NrToScan::Scan(2)
        );
        // four generations and a lower priority: no aging needed, size >> priority
        assert_eq!(get_nr_to_scan(&lru, FAST, 6, 1), NrToScan::Scan(128));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Add(u64, u8),
        Free(u64),
        Activate(u64),
        Isolate(u64, u8),
        Result(u64, u8, u8),
        Kswapd(Vec<bool>, u64),
        Mark(u64, bool),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u64..40, 0u8..2).prop_map(|(p, t)| Op::Add(p, t)),
            (0u64..40).prop_map(Op::Free),
            (0u64..40).prop_map(Op::Activate),
            (0u64..40, 0u8..2).prop_map(|(p, t)| Op::Isolate(p, t)),
            (0u64..40, 0u8..2, 0u8..5).prop_map(|(p, t, o)| Op::Result(p, t, o)),
            (proptest::collection::vec(any::<bool>(), 40), 0u64..80)
                .prop_map(|(a, n)| Op::Kswapd(a, n)),
            (0u64..40, any::<bool>()).prop_map(|(p, on)| Op::Mark(p, on)),
        ]
    }

    proptest! {
        /// Whatever happens, every resident page is on exactly one list (or isolated), and the
        /// counters agree with the pages.
        #[test]
        fn each_resident_page_is_listed_once(
            ops in proptest::collection::vec(op(), 0..120),
            gens in any::<bool>(),
        ) {
            let mut lru = Lru::new().with_gens(gens);
            let mut mech = FakeMech::new(vec![Some(FAST); 40]);
            let mut k = Kswapd::default();
            let mut out = Vec::new();
            for op in ops {
                match op {
                    Op::Add(p, t) => lru.add(PageId(p), t),
                    Op::Free(p) => lru.remove(PageId(p)),
                    Op::Activate(p) => { lru.activate(PageId(p)); }
                    Op::Isolate(p, t) => { lru.isolate(PageId(p), t); }
                    Op::Result(p, t, o) => {
                        let outcome = [MigrationOutcome::Done, MigrationOutcome::NoSpace, MigrationOutcome::NoPage,
                            MigrationOutcome::Aborted, MigrationOutcome::AlreadyThere][o as usize];
                        let from = lru.tier(PageId(p)).unwrap_or(0);
                        lru.complete(&done(p, from, t, outcome));
                    }
                    Op::Mark(p, on) => lru.set_mark(PageId(p), on),
                    Op::Kswapd(bits, need) => {
                        mech.accessed = bits;
                        let r = Reclaim { tier: FAST, target: SLOW, free: 0, wake_below: 1, balanced_at: need,
                            max_scan: 64, nr_to_reclaim: 1, page_bytes: 4096, start_ns: 0, ns_per_page: 1000.0, zones_can_pass: true };
                        k.run(&mut lru, &mut mech, &mut out, &r);
                    }
                }
                if let Err(e) = lru.check() {
                    prop_assert!(false, "{}", e);
                }
            }
        }
    }
}
