//! The resolved, validated description of an experiment: what the machine simulates.
//! `config.rs` builds it from TOML; built-in workloads build it from their parameters.

use tierkit_core::telemetry::QosClass;

use crate::platform::Platform;

/// How big the fast tier is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FastSize {
    /// Absolute size in GiB.
    Gb(f64),
    /// fast:slow as F:S of the workload's footprint (the papers' way of sizing tiers).
    Ratio(f64, f64),
}

/// How a thread picks pages within an access region.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Every page equally likely (random access, GUPS).
    Uniform,
    /// A stream over the region: at epoch granularity every page is touched at the same rate.
    Sequential,
    /// Dependent pointer walk over the region (uniform pages; the MLP is what differs).
    PointerChase,
    /// Zipfian popularity with exponent s over a seeded permutation of the pages. The
    /// permutation (which page has which rank) belongs to the data: every phase and thread group
    /// of a process that reads the same range of an object with `Zipf` finds the same pages
    /// popular, unless the region gives its own `zipf_seed`.
    Zipf { s: f64 },
}

/// One weighted region of a thread's access distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct AccessSpec {
    /// Object name, or "*" for the whole footprint of the process.
    pub object: String,
    pub weight: f64,
    pub pattern: Pattern,
    /// Sub-range of the object as fractions of its pages.
    pub start_frac: f64,
    pub len_frac: f64,
    /// If set, the region is a random subset of `len_frac` of the object's pages (seeded),
    /// not a contiguous range.
    pub scatter_seed: Option<u64>,
    /// For a `Zipf` region: another ranking of the range's pages (a hot set of its own). None:
    /// the range's own ranking, shared by every region over the same range.
    pub zipf_seed: Option<u64>,
    /// The region is swept: its pages are touched one after the next in address order, a pass
    /// at a time, at the pattern's rate (a range region only). A page marked for a NUMA hint
    /// fault faults when the pass next reaches it, so faults, and the promotions they bring,
    /// come in address order as a real sweep's do; false: each page's next touch is a Poisson
    /// arrival at its rate, in no order.
    pub in_order: bool,
}

/// A phase of a thread: an access distribution with its memory-level parallelism.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSpec {
    /// None: lasts until the thread ends.
    pub duration_s: Option<f64>,
    /// Outstanding LLC misses the thread sustains (1 = pointer chase, ~7-12 streams).
    pub mlp: f64,
    /// Compute time per miss, ns.
    pub compute_ns: f64,
    /// Share of memory operations that are loads; written lines are written back.
    pub read_frac: f64,
    /// LLC misses per unit of work ("operation").
    pub misses_per_op: f64,
    /// The phase ends after this many operations of the thread (or at `duration_s`, whichever
    /// comes first): a level of a graph traversal is a fixed amount of work, so it takes longer
    /// when its pages are slow.
    pub work_ops: Option<f64>,
    /// At its end the thread waits, issuing no misses, until every live thread of its process
    /// has ended its phase of the same index (a level-synchronous barrier, as OpenMP's at the end
    /// of a parallel loop); then they all enter their next phase together.
    pub barrier: bool,
    pub access: Vec<AccessSpec>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ThreadSpec {
    pub count: u32,
    /// Stop after this many operations (per thread); None: run until the experiment ends.
    pub work_ops: Option<f64>,
    pub phases: Vec<PhaseSpec>,
}

/// A named allocation (an allocation site).
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectSpec {
    pub name: String,
    pub bytes: u64,
    /// Allocation time relative to the process start, s.
    pub alloc_s: f64,
    /// Free time relative to the process start, s (None: lives until the process exits).
    pub free_s: Option<f64>,
    /// The tier its pages are first touched on (an `mbind` before the first touch, then the
    /// default policy, as `numactl --membind` at allocation: the pages stay movable). None: first
    /// touch, fast tier first.
    pub first_touch_tier: Option<u8>,
    /// Bound to `first_touch_tier` (MPOL_BIND without MPOL_F_MOF) and mlocked, as a program pins a
    /// buffer: its pages never move (the machine refuses their migrations), Linux's NUMA scanner
    /// skips the VMA as unsuitable (`vma_policy_mof` is false), reclaim leaves them on the
    /// unevictable list (policies never see them: no allocation events), but they take the
    /// tier's capacity and count in the process's RSS (so in `task_nr_scan_windows`).
    pub pinned: bool,
    /// mlocked on `first_touch_tier` with the default memory policy, as a program mlocks a
    /// buffer without binding it: reclaim leaves its pages on the unevictable list (policies
    /// never see them) and they never move, but Linux's NUMA scanner walks its VMA as any other
    /// (`vma_policy_mof` is true): a VMA the process never faults in costs the scanner a forced
    /// window a pass (`vma_is_accessed`). Its pages are never marked (Linux would mark those on
    /// a slow node and could migrate them on the fault; the simulator keeps them where first
    /// touch put them). A VMA of its own, as `pinned` (mlock sets VM_LOCKED).
    pub mlocked: bool,
    /// A VMA of its own. By default an object continues the previous object's VMA, as the kernel
    /// merges adjacent anonymous mappings of the same flags and policy (vma_merge: a program's
    /// large allocations, and even two regions first touched on different nodes by an mbind that
    /// was reset, end up in one VMA); it starts a new one when this is set (a mapping of other
    /// flags or backing: a data segment, the heap, the stack), when it or the previous object is
    /// pinned (another memory policy) or mlocked (VM_LOCKED), or when it is allocated or freed
    /// at another time (mapped or unmapped on its own). Linux's NUMA scanner keeps its per-VMA
    /// state once per VMA.
    pub separate_vma: bool,
}

impl ObjectSpec {
    /// mlocked, bound or not (`pinned`, `mlocked`): its pages are unevictable and never move,
    /// and its VMA is its own (VM_LOCKED).
    pub fn locked(&self) -> bool {
        self.pinned || self.mlocked
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ProcessSpec {
    pub name: String,
    pub class: QosClass,
    pub start_s: f64,
    /// The share of a CPU each of its threads gets (1: a core each). Below 1 its threads are
    /// time-shared with work the simulator does not model: they run that share of the time, and
    /// Linux's NUMA scanner, which paces its windows by the task's CPU time (task_tick_numa:
    /// `sum_exec_runtime` against `node_stamp`), windows every period / share of wall time.
    pub cpu_share: f64,
    pub objects: Vec<ObjectSpec>,
    pub threads: Vec<ThreadSpec>,
}

/// A memory antagonist: closed-loop streaming cores pinned to a tier (Colloid §2.1: sequential
/// 1:1 read/write traffic to a small buffer pinned to the default tier).
#[derive(Clone, Debug, PartialEq)]
pub struct AntagonistSpec {
    pub tier: usize,
    pub cores: u32,
    pub mlp: f64,
    pub read_frac: f64,
    pub start_s: f64,
    pub stop_s: Option<f64>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Experiment {
    /// Where it came from (built-in name or file path), for messages and reports.
    pub source: String,
    pub workload: String,
    /// The policy spec the experiment names (`policy = "hemem"`); `--policy` overrides it.
    pub policy: Option<String>,
    pub platform: Platform,
    pub duration_s: f64,
    pub epoch_ms: f64,
    pub report_interval_ms: f64,
    pub seed: u64,
    /// Relative standard deviation of seeded noise on the TOR counters (multiplexing), 0 = none.
    pub counter_noise: f64,
    /// kswapd runs on the one CPU the processes run on (the QEMU guest's one vCPU) and takes
    /// turns with their threads (`kswapd_cpu_share`, `kswapd_slice_ms`): in its turns they make
    /// no access, so an accessed bit it clears stays clear until they run again. false: it runs
    /// beside them.
    pub kswapd_shares_cpu: bool,
    /// With `kswapd_shares_cpu`: the share of kswapd's running time in which it holds the CPU
    /// (the threads run in the rest). Two runnable tasks of one weight share a CPU evenly under
    /// CFS/EEVDF (kernel/sched/fair.c), so 0.5 beside one thread; 1 stops the threads for the
    /// whole of kswapd's span.
    pub kswapd_cpu_share: f64,
    /// With `kswapd_shares_cpu`: the length (ms) of each of kswapd's turns on the CPU. A task
    /// that runs on is preempted at a tick once its slice is used (`update_curr` ->
    /// `resched_curr` in fair.c), so a turn lasts a tick, 4 ms at the guest's HZ=250; a sleeper
    /// waking every millisecond makes the turns a millisecond (EEVDF picks the other task when
    /// it returns). 0: the CPU is shared continuously (each instant of the span counts
    /// `kswapd_cpu_share` of the threads' accesses as not made).
    pub kswapd_slice_ms: f64,
    pub page_bytes: u64,
    pub fast: FastSize,
    pub slow_tier_gb: Option<f64>,
    pub processes: Vec<ProcessSpec>,
    pub antagonists: Vec<AntagonistSpec>,
    /// Thread groups that replay a trace: their phases are the trace's windows (trace/replay.rs).
    pub replays: Vec<crate::trace::replay::ReplaySpec>,
    /// Wall time spent building the replays when the experiment was loaded (counted in the
    /// run's `wall_seconds`, and reported as `replay_seconds`).
    pub replay_seconds: f64,
    /// Things the user should know about the experiment (printed once by the CLI, and in the
    /// run's JSON as `warnings`).
    pub warnings: Vec<String>,
}

impl Experiment {
    /// Pages an object of `bytes` takes.
    pub fn pages_of(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.page_bytes).max(1)
    }

    /// Total pages of every object of every process.
    pub fn footprint_pages(&self) -> u64 {
        self.processes
            .iter()
            .flat_map(|p| &p.objects)
            .map(|o| self.pages_of(o.bytes))
            .sum()
    }

    /// Fast and slow tier capacities in pages.
    pub fn capacities(&self) -> (u64, u64) {
        let fp = self.footprint_pages();
        let gb = |g: f64| ((g * (1u64 << 30) as f64) / self.page_bytes as f64).floor() as u64;
        let fast = match self.fast {
            FastSize::Gb(g) => gb(g),
            FastSize::Ratio(f, s) => ((fp as f64) * f / (f + s)).round() as u64,
        };
        let slow = match self.slow_tier_gb {
            Some(g) => gb(g),
            None => fp + fp / 4 + 16,
        };
        (fast, slow)
    }
}
