//! The simulated machine: page table, processes and threads, the per-epoch fixed point between
//! thread rates and tier latencies, counters with real semantics, exact sampling, hint faults,
//! access bits, and migrations with their costs (design.md section 2).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::{FxHashMap, FxHashSet};
use tierkit_core::action::{Action, MigrateMode, NumaScan, SampleFilter, ScanTiers};
use tierkit_core::memory;
use tierkit_core::rng::Rng;
use tierkit_core::telemetry::*;
use tierkit_core::{Backend, Mechanism, PageEvents, PageId, Policy, TelemetryNeeds, TierId};

use crate::clear_times::ClearTimes;
use crate::dist::{between, Dist, Region};
use crate::error::{Result, SimError};
use crate::minqueue::MinQueue;
use crate::numa_scan::{self, ScanState};
use crate::spec::{AccessSpec, Experiment, Pattern};

pub const NONE: u8 = u8::MAX;
/// A page's entry in the machine's page table, one byte: its tier in the low nibble
/// ([`PTE_NONE`]: not allocated; an experiment has two tiers) and its flags in the high one.
const PTE_TIER: u8 = 0x0F;
const PTE_NONE: u8 = 0x0F;
const F_PROMOTED: u8 = 0x10;
const F_MARKED: u8 = 0x20;
/// A page of a pinned or mlocked object (`ObjectSpec::pinned`, `ObjectSpec::mlocked`).
const F_PINNED: u8 = 0x40;
/// The accessed bit the first touch left set: the access that faulted the page in is retried
/// once its PTE is installed, so the page reads referenced at its first test whatever happened
/// after ("All mapped folios start out with page table references from the instantiating
/// fault", mm/vmscan.c folio_check_references; x86's do_anonymous_page leaves the bit to the
/// hardware, which sets it on that retried access).
const F_YOUNG: u8 = 0x80;

/// The tier a page-table entry holds ([`NONE`]: not allocated).
#[inline]
fn pte_tier(e: u8) -> u8 {
    match e & PTE_TIER {
        PTE_NONE => NONE,
        t => t,
    }
}

/// Whether a page-table entry holds an allocated page.
#[inline]
fn pte_present(e: u8) -> bool {
    e & PTE_TIER != PTE_NONE
}

/// Whether a page-table entry holds an allocated page still marked for a hint fault.
#[inline]
fn pte_marked(e: u8) -> bool {
    e & F_MARKED != 0 && pte_present(e)
}

/// `e` with its tier set to `t` ([`NONE`]: not allocated), its flags kept.
#[inline]
fn pte_with_tier(e: u8, t: u8) -> u8 {
    debug_assert!(t == NONE || t < PTE_NONE);
    (e & !PTE_TIER) | if t == NONE { PTE_NONE } else { t }
}
/// Marked pages waiting for their fault, earliest first: (key: the check time in ns, or a
/// phase's cumulative misses as f64 bits, page, mark time in ns, f32 bits of the accesses the
/// fault waits for). Millions at a time, a few hundred pushed and popped an epoch: a
/// [`MinQueue`], which sifts only its nearest entries.
type FaultQueue = MinQueue<(u64, u32, u64, u32)>;
const LINE: f64 = 64.0;
/// Async migrations waiting beyond this are refused (a policy flooding the queue).
pub(crate) const MAX_QUEUE: usize = 1 << 20;

/// The fault queue's tag for a thread coming out of its fault (its `page` field holds the
/// thread): a NaN pattern no page's awaited count takes.
const RESUME: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct ObjState {
    pub name: String,
    pub first: u32,
    pub pages: u32,
    pub live: bool,
    pub bind: Option<TierId>,
    /// Bound and mlocked (`ObjectSpec::pinned`): its pages never move and policies never see them.
    pub pinned: bool,
    /// mlocked with the default policy (`ObjectSpec::mlocked`): its pages never move and policies
    /// never see them, but Linux's scanner walks its VMA.
    pub mlocked: bool,
    /// Its pages per tier.
    pub resident: Vec<u64>,
    /// The first object of its VMA (`ObjectSpec::separate_vma`).
    pub vma_head: usize,
    pub alloc_ns: f64,
    pub free_ns: Option<f64>,
}

impl ObjState {
    /// Pinned or mlocked (`ObjectSpec::locked`): its pages are unevictable and never move.
    fn locked(&self) -> bool {
        self.pinned || self.mlocked
    }
}

#[derive(Clone, Debug)]
pub struct ProcState {
    pub name: String,
    pub class: QosClass,
    pub base: u32,
    pub pages: u32,
    pub start_ns: f64,
    pub objects: Vec<ObjState>,
    pub threads: Vec<usize>,
    pub started: bool,
    pub exited: bool,
    pub finish_ns: Option<f64>,
    /// `ProcessSpec::cpu_share`.
    pub cpu_share: f64,
    pub migration_enabled: bool,
    pub partition: Option<u64>,
    pub resident: Vec<u64>,
    pub promotions: u64,
    pub demotions: u64,
    pub demote_promoted: u64,
    pub ops: f64,
    pub misses: Vec<f64>,
    /// Trace replay: misses run in a window past that window's own misses (an epoch runs in one
    /// window, so when windows are shorter than an epoch the next windows' misses take this one's
    /// pages, and windows that fit inside the overrun are skipped). Not counted for a trace of
    /// one window, whose next window is itself.
    pub replay_overrun: f64,
    /// Dist cache: (thread group, phase) -> dist index, keyed by the phase's `canon` entry.
    pub dist_of: FxHashMap<(usize, usize), usize>,
    /// For each thread group and phase, the first (group, phase) of the process that reads the
    /// same regions with the same read share: such phases share one distribution (see
    /// [`canonical_phases`]).
    pub canon: Vec<Vec<(usize, usize)>>,
    pub scan_cursor: u32,
    pub scan_credit: f64,
    /// Linux's NUMA-balancing scanner state of this process (`SetNumaScan`).
    pub numa: ScanState,
    /// Shoot down only the threads that map a migrated page (Vulcan §3.4), not the whole mm.
    pub tlb_per_thread: bool,
    /// SetMigration transitions enabled -> disabled and back (migration toggling §4.2-4.3).
    pub migration_stops: u64,
    pub migration_restarts: u64,
    /// Faults (page, scan mark) that came while every thread touching the page was in another
    /// fault: the first of those threads out of its fault takes the oldest one it touches
    /// (`Machine::resume_faults`), as on hardware, where the next access to the marked page
    /// faults, whichever thread makes it.
    pub pending: std::collections::VecDeque<(u32, u64)>,
}

#[derive(Clone, Debug)]
pub struct ThreadState {
    pub proc_: Option<usize>,
    pub tid: u32,
    pub group: usize,
    pub phase: usize,
    pub phase_end_ns: f64,
    pub dist: Option<usize>,
    pub pinned: Option<usize>,
    pub m: f64,
    pub z: f64,
    pub read_frac: f64,
    pub misses_per_op: f64,
    pub work_left: Option<f64>,
    pub active: bool,
    pub done: bool,
    pub start_ns: f64,
    pub stop_ns: Option<f64>,
    pub stall_ns: f64,
    pub x: f64,
    pub avail: f64,
    pub finish_ns: Option<f64>,
    /// Trace replay: misses left in the current window (the phase ends when it runs out).
    pub phase_work_left: Option<f64>,
    /// A phase with `work_ops`: operations left (the phase ends when they run out, the thread
    /// idling for the rest of that epoch).
    pub phase_ops_left: Option<f64>,
    /// Waiting at its phase's barrier for the other threads of its process (no misses).
    pub waiting: bool,
    /// Pages this thread is copying in its own faults (synchronous migrations), in order: it
    /// copies before it runs again, at a rate that falls with the source tier's loaded latency
    /// (`Machine::solve`).
    pub copies: std::collections::VecDeque<InlineCopy>,
    /// With the policy on the fault path (`Machine::fault_path`): until when the thread is in
    /// a fault (its hint fault, then the migration it made there and the copy), taking no
    /// other (ns).
    pub busy_until: f64,
    /// A `RESUME` entry of the fault queue waits for this thread: when it is out of its fault
    /// it takes the next of its process's pending faults (`ProcState::pending`).
    pub resume_queued: bool,
    /// On the fault path: the thread's busy spans (hint faults, the migrations made in them and
    /// their copies) not yet placed in its phase's history (`Machine::place_fault_spans`), in
    /// order.
    pub fault_spans: std::collections::VecDeque<(f64, f64)>,
    /// The time of those spans not yet paid as a stall or a copy, and what the current epoch
    /// paid of it (ns).
    pub fault_owed_ns: f64,
    pub fault_paid_ns: f64,
    /// The share of this epoch the thread runs at when out of its faults: its availability with
    /// what it paid for its fault-path spans given back (they are placed at their instants); 0
    /// when it does not run this epoch.
    pub level: f64,
}

/// A synchronous migration's copy, made by the faulting thread itself (migrate_pages called
/// from do_numa_page copies the folio in the fault, folio_copy): the bytes left to copy from
/// one tier to another.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InlineCopy {
    pub from: TierId,
    pub to: TierId,
    pub bytes: f64,
}

impl ProcState {
    /// The index of the object that holds `page` (a page of this process).
    fn object_of(&self, page: u32) -> usize {
        self.objects.partition_point(|o| o.first + o.pages <= page)
    }
}

impl ThreadState {
    /// A thread that has not started yet, with the defaults the machine fills in when it enters
    /// its first phase; the caller sets what differs (process, group, pinned tier, work).
    fn idle(start_ns: f64) -> Self {
        ThreadState {
            proc_: None,
            tid: 0,
            group: 0,
            phase: 0,
            phase_end_ns: f64::INFINITY,
            dist: None,
            pinned: None,
            m: 1.0,
            z: 0.0,
            read_frac: 1.0,
            misses_per_op: 1.0,
            work_left: None,
            active: false,
            done: false,
            start_ns,
            stop_ns: None,
            stall_ns: 0.0,
            x: 0.0,
            avail: 0.0,
            finish_ns: None,
            phase_work_left: None,
            phase_ops_left: None,
            waiting: false,
            copies: std::collections::VecDeque::new(),
            busy_until: 0.0,
            resume_queued: false,
            fault_spans: std::collections::VecDeque::new(),
            fault_owed_ns: 0.0,
            fault_paid_ns: 0.0,
            level: 0.0,
        }
    }

    fn writebacks_per_miss(&self) -> f64 {
        ((1.0 - self.read_frac) / self.read_frac).min(1.0)
    }
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    page: u32,
    to: TierId,
    transactional: bool,
    keep_shadow: bool,
    /// When it was asked for (ns): a fault's instant on the fault path, else the step's end.
    at: f64,
}

/// A scanner setting: the fixed-rate marker of `SetHintScan` (every `period_ms`, the next
/// `pages` pages), or Linux's NUMA-balancing scanner of `SetNumaScan`.
#[derive(Clone, Copy, Debug)]
enum ScanCfg {
    Fixed {
        period_ms: f64,
        pages: u64,
        tiers: ScanTiers,
    },
    Numa(NumaScan),
}

/// Per-epoch measurements the engine aggregates (ground truth, not telemetry).
#[derive(Clone, Debug, Default)]
pub struct EpochStats {
    pub latency_ns: Vec<f64>,
    pub app_misses: Vec<f64>,
    pub bytes: Vec<f64>,
    pub promotions: u64,
    pub demotions: u64,
    pub remaps: u64,
    pub shootdowns: u64,
    pub hint_faults: u64,
    pub samples: u64,
    /// TLB-shootdown IPIs sent to other threads, and the CPU time of migrations (copy and
    /// shootdown, ns) this epoch (Vulcan Figs. 2, 3, 7).
    pub shootdown_ipis: u64,
    pub migration_cpu_ns: f64,
}

/// Accessed-bit tests over the whole run (ground truth about the mechanism, for tests): how
/// many, and how many found the bit last cleared at the same instant or later (dt <= 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccessTests {
    pub tests: u64,
    pub at_dt0: u64,
}

/// On the fault path, within an epoch's fault delivery: each phase's misses at the rate its
/// threads make them while out of their faults (`Machine::deliver_faults`), so the faults of a
/// storm come slower as its threads enter faults, as they do on hardware, and not at the rate
/// the epoch began with.
#[derive(Clone, Debug, Default)]
struct LiveRates {
    /// Per phase: the instant its count was brought to, the count (on `Dist::cum_at`'s scale),
    /// and its rate now (misses per ns).
    t: Vec<f64>,
    c: Vec<f64>,
    r: Vec<f64>,
    /// Per thread: counted as in a fault (its misses taken out of its phase's rate).
    busy: Vec<bool>,
    /// When counted threads come out of their faults: (ns, thread).
    ends: BinaryHeap<Reverse<(u64, usize)>>,
    /// Per phase: the live count's breakpoints since the epoch's start, times (ns) and counts,
    /// one at each change of its rate (the last is `t`, `c`), so that an accessed-bit test inside
    /// the epoch reads the misses its threads made while out of their faults
    /// (`Machine::cum_running`), as the faults' arrival does; the epoch's end places the same
    /// spans in the history (`place_fault_spans`).
    pts_t: Vec<Vec<f64>>,
    pts_c: Vec<Vec<f64>>,
    /// Within `deliver_faults` on the fault path: the live counts stand for the epoch so far.
    on: bool,
}

/// The spans in which kswapd had the processes' one CPU (`kswapd_shares_cpu`): sorted,
/// disjoint, and per access distribution the misses its phase would have made in them, summed
/// over the spans before (a prefix sum, so the misses in any interval take two binary searches).
/// kswapd's running time is cut into turns (`kswapd_slice_ms`) that alternate with the threads'
/// so that it holds `kswapd_cpu_share` of it, as the scheduler shares one CPU between kswapd and
/// a running thread; with turns of 0 ms each instant of its running time counts that share of
/// the threads' misses as not made.
#[derive(Clone, Debug, Default)]
struct BusySpans {
    spans: Vec<(f64, f64)>,
    /// Per distribution: the misses in spans[..k] at k (length spans.len() + 1 once the
    /// distribution has been seen; a distribution made later has none before it ran).
    removed: Vec<Vec<f64>>,
    /// The share of the threads' misses a span takes: `kswapd_cpu_share` when the CPU is shared
    /// continuously, 1 with turns.
    weight: f64,
    /// kswapd's turn and the period of its turns (ns); 0: shared continuously.
    slice_ns: f64,
    period_ns: f64,
    /// Where kswapd's current stretch of running time began (its turns count from there) and
    /// ended so far: a span that starts after the end begins a new stretch.
    anchor: f64,
    stretch_end: f64,
}

impl BusySpans {
    fn new(exp: &Experiment) -> Self {
        Self::with_turns(exp.kswapd_cpu_share, exp.kswapd_slice_ms)
    }

    /// kswapd holding `share` of its running time in turns of `slice_ms`.
    fn with_turns(share: f64, slice_ms: f64) -> Self {
        let share = share.clamp(1e-3, 1.0);
        let slice_ns = if share >= 1.0 { 0.0 } else { slice_ms * 1e6 };
        BusySpans {
            weight: if slice_ns > 0.0 { 1.0 } else { share },
            slice_ns,
            period_ns: slice_ns / share,
            anchor: f64::NEG_INFINITY,
            stretch_end: f64::NEG_INFINITY,
            ..Default::default()
        }
    }

    /// Record that kswapd ran in [a, b]: in its turns there when it takes turns, the whole of
    /// it otherwise.
    fn add(&mut self, a: f64, b: f64, dists: &mut [Dist]) {
        if b <= a {
            return;
        }
        if self.slice_ns <= 0.0 {
            self.add_span(a, b, dists);
            return;
        }
        if a > self.stretch_end {
            // kswapd was asleep (or between runs): its first turn starts when it wakes
            self.anchor = a;
        }
        self.stretch_end = self.stretch_end.max(b);
        let mut k = ((a - self.anchor) / self.period_ns).floor();
        loop {
            let start = self.anchor + k * self.period_ns;
            if start >= b {
                break;
            }
            self.add_span(start.max(a), (start + self.slice_ns).min(b), dists);
            k += 1.0;
        }
    }

    /// The misses distribution `dd` takes out of [a, b] of kswapd's spans (its history now).
    fn misses(&self, dd: &Dist, a: f64, b: f64) -> f64 {
        self.weight * (dd.cum_at(b) - dd.cum_at(a))
    }

    /// Record that kswapd had the CPU in [a, b], merged with the last span when they touch.
    fn add_span(&mut self, a: f64, b: f64, dists: &mut [Dist]) {
        if b <= a {
            return;
        }
        for dd in dists.iter_mut() {
            dd.pin_to(b);
        }
        let n = self.spans.len();
        match self.spans.last_mut() {
            Some(last) if a <= last.1 => {
                if b <= last.1 {
                    return;
                }
                // the last span grows: its misses by those in (its old end, b]
                let from = last.1;
                last.1 = b;
                for (d, dd) in dists.iter().enumerate() {
                    let m = self.misses(dd, from, b);
                    self.prefix(d, n + 1)[n] += m;
                }
            }
            last => {
                let a = last.map_or(a, |l| a.max(l.1));
                self.spans.push((a, b));
                for (d, dd) in dists.iter().enumerate() {
                    let m = self.misses(dd, a, b);
                    let r = self.prefix(d, n + 1);
                    let before = r[n];
                    r.push(before + m);
                }
            }
        }
    }

    /// Distribution `d`'s prefix sums, at least `len` long (a distribution first seen now made
    /// no misses in the spans before: its cumulative misses are 0 until it first ran).
    fn prefix(&mut self, d: usize, len: usize) -> &mut Vec<f64> {
        if self.removed.len() <= d {
            self.removed.resize_with(d + 1, Vec::new);
        }
        let r = &mut self.removed[d];
        let last = r.last().copied().unwrap_or(0.0);
        r.resize(r.len().max(len), last);
        r
    }

    /// Recount the misses of the spans that end after `from`, where a distribution's cumulative
    /// count changed since they were recorded (an epoch that replaced the extension past the
    /// history's end, or the fault path's correction): a span's misses are then those the count
    /// gives now, whatever the step that recorded it.
    fn settle(&mut self, from: f64, dists: &[Dist]) {
        let k = self.spans.partition_point(|s| s.1 <= from);
        let n = self.spans.len();
        if k == n {
            return;
        }
        for (d, dd) in dists.iter().enumerate() {
            self.prefix(d, n + 1);
            for j in k..n {
                let (a, b) = self.spans[j];
                let m = self.misses(dd, a, b);
                let r = &mut self.removed[d];
                r[j + 1] = r[j] + m;
            }
        }
    }

    /// Misses distribution `d` would have made in the spans before time `t`.
    fn removed_at(&self, d: usize, dd: &Dist, t: f64) -> f64 {
        // spans that ended by t count whole, one running at t up to t
        let k = self.spans.partition_point(|s| s.1 <= t);
        let r = self.removed.get(d).map_or(&[][..], Vec::as_slice);
        let mut m = r.get(k).or(r.last()).copied().unwrap_or(0.0);
        if let Some(&(a, _)) = self.spans.get(k) {
            if a < t {
                m += self.misses(dd, a, t);
            }
        }
        m
    }
}

pub struct Machine {
    pub exp: Experiment,
    pub ntiers: usize,
    pub cap: Vec<u64>,
    pub used: Vec<u64>,
    /// One byte a page: its tier and flags (`pte_tier`, `F_*`).
    pte: Vec<u8>,
    /// Per-page mbind target (NONE: none), consulted at first touch.
    page_bind: Vec<u8>,
    /// When each page's accessed bit was last cleared (ns): by a test, or its allocation (after
    /// which the bit is set all the same: `F_YOUNG`).
    last_clear: ClearTimes,
    /// An error the accessed-bit table met inside a test (growing from 5 or 6 bytes a page to 8, see
    /// [`ClearTimes`]), reported by the next step.
    clear_times_error: Option<SimError>,
    /// Tests only: the plain forms of the fast paths, to check them against.
    #[cfg(test)]
    modes: TestModes,
    /// A policy tested accessed bits without declaring `TelemetryNeeds::accessed_bits`.
    undeclared_accessed_bits: bool,
    /// With `kswapd_shares_cpu`: the spans kswapd worked in, when no thread ran.
    busy: BusySpans,
    /// The phases' rates within an epoch's faults, on the fault path.
    live: LiveRates,
    /// Whether some access region is swept in order (`in_order`): only then does a marked page
    /// look for the pass that reaches it.
    swept: bool,
    /// The thread that last hint-faulted on each page (tid + 1; 0: none), for the private /
    /// shared split of task_numa_fault (last_cpupid).
    last_fault_tid: FaultOwners,
    /// Shadow copies: the tier each is in and when it was made.
    shadow: FxHashMap<u32, (TierId, f64)>,
    /// Per tier, the pages whose shadow was made there, oldest first: a tier that needs room
    /// drops its newest shadows first. An entry whose shadow has gone since (dropped, or the
    /// page demoted onto it) is skipped, and the list is compacted when such entries make up
    /// most of it.
    shadow_lists: Vec<Vec<u32>>,
    pub procs: Vec<ProcState>,
    pub threads: Vec<ThreadState>,
    pub dists: Vec<Dist>,
    pub lat: Vec<f64>,
    /// The background migration threads' copy traffic (bytes per ns read from, written to each
    /// tier) of this epoch, then of the epochs after it: a copy's bytes are spread over the
    /// time it takes (`spread_traffic`).
    mig_traffic: std::collections::VecDeque<Vec<(f64, f64)>>,
    /// When the epoch of `mig_traffic`'s first entry begins, ns.
    mig_traffic_from: f64,
    queue: std::collections::VecDeque<Pending>,
    /// Asynchronous migrations refused because `queue` held [`MAX_QUEUE`] requests.
    pub queue_refused: u64,
    sync_results: Vec<MigrationResult>,
    /// The policy takes hint faults one at a time at their instants (`Policy::fault_path`,
    /// asked by the engine): `step_with` hands each to `Policy::on_fault` and carries out its
    /// actions there, and a thread busy in a fault takes no other.
    pub fault_path: bool,
    /// While the actions of a fault are carried out: the fault's instant (ns). Synchronous
    /// migrations start there, and their results join this epoch's telemetry.
    fault_at: Option<f64>,
    /// Wall time spent in `Policy::on_fault` (s), which the engine counts as the policy's:
    /// every `TIMED_EVERY`th fault-path call is timed and counts for that many (two clock reads
    /// a fault were 4-5% of a hint-fault-heavy run).
    pub wall_fault_policy_s: f64,
    /// Fault-path calls so far (which of them to time).
    fault_calls: u64,
    /// The instant of the policy's last timer call ([`Policy::on_timer`]).
    last_timer_ns: Option<u64>,
    /// CPU time the migration threads spent past their last epoch's budget (a migration
    /// longer than what was left of it), owed by the next epochs.
    mig_debt_ns: f64,
    /// The instant in this epoch from which the migration threads are idle (infinite when the
    /// queue took the whole epoch): a migration asked for on the fault path starts then, or at
    /// its fault's instant if later, inside the epoch ([`Machine::run_queue_until`]).
    mig_idle_from: f64,
    /// This epoch's migration traffic has been solved and counted: copies spread from now on
    /// (migrations started inside the epoch, on the fault path) put their bytes in this epoch
    /// into the next one's, as the faulting threads' own copies do.
    mig_traffic_settled: bool,
    /// Hint faults to come: (check time, page, mark time, accesses the fault waits for as f32
    /// bits). A marked page faults at the access that brings its accesses since the mark to an
    /// Exp(1) draw, counted on the phases' cumulative misses, so stalls and idle spells delay
    /// the fault by exactly as long as they stop the accesses, whatever the epoch length.
    faults: FaultQueue,
    /// Marked pages that only one running phase accesses, per phase (index of `dists`): (the
    /// phase's cumulative misses at which the page faults as f64 bits, page, mark time, f32
    /// bits of the accesses the fault waits for). A page with probability p in the phase faults
    /// when the phase's misses since the mark reach need / p, so the fault time follows from
    /// the phase's cumulative misses alone: exact whatever the threads' stalls, and checked
    /// once (`deliver_faults`). Entries move when the phases that cover their page change.
    count_faults: Vec<FaultQueue>,
    /// Phases that gained their first thread, and phases that lost their last, since the last
    /// epoch: the pages they cover are placed again (`replace_marked`).
    dists_started: Vec<usize>,
    dists_stopped: Vec<usize>,
    /// Marked pages that no running phase accesses: (page, mark time, accesses the fault waits
    /// for). They are placed again when a phase starts.
    idle_marked: Vec<(u32, u64, f32)>,
    /// Marked pages whose fault came while every thread that accesses them had stalled the
    /// whole epoch, among pages several phases cover (a single phase's pages wait in
    /// `count_faults`): placed again whenever `dist_gen` moves.
    stalled_marked: Vec<(u32, u64, f32)>,
    /// Bumped whenever a thread enters a phase or finishes, or a phase whose threads had all
    /// stalled runs again (the pages' access rates change).
    dist_gen: u64,
    stalled_checked_gen: u64,
    scan: Option<ScanCfg>,
    scan_pid: FxHashMap<usize, ScanCfg>,
    sampling: Option<(u64, SampleFilter)>,
    pub tel: Telemetry,
    pub now_ns: f64,
    pub epoch_ns: f64,
    pub stats: EpochStats,
    rng_sample: Rng,
    /// Per-epoch buffers of `step`, kept to reuse their allocations.
    scratch: StepScratch,
    /// `sample`'s per-thread plan, kept to reuse its allocation.
    sample_plan: Vec<SamplePlan>,
    /// `sample`'s draws made ahead and its sample counts, kept to reuse their allocations.
    sample_ahead: Vec<DrawnAhead>,
    sample_counts: Vec<u64>,
    rng_fault: Rng,
    rng_bits: Rng,
    rng_mig: Rng,
    rng_noise: Rng,
    pub counter_noise: f64,
    /// Wall-clock seconds spent in the fixed-point solve, in sampling (PEBS samples, hint faults,
    /// access-bit draws) and in the rest of `step` (benchmarks only; never in results), estimated
    /// from every `TIMED_EVERY`-th epoch.
    pub wall_solve_s: f64,
    pub wall_sample_s: f64,
    timed_epoch: u64,
    pub cpu_ghz: f64,
    page_bytes: f64,
    pub access_tests: AccessTests,
    /// Hint faults that came while every thread touching their page was in another fault and
    /// waited in their process's queue, over the whole run (ground truth, for tests).
    pub faults_deferred: u64,
    /// Latest accessed-bit test time (ns): an untimed test comes after it.
    test_clock: f64,
}

/// Where an access region lies in its object (or process) of `pages` pages from `first`:
/// (first page, pages).
fn region_extent(first: u32, pages: u32, a: &AccessSpec) -> (u32, u32) {
    // The region starts on a page of the object (start_frac < 1 is validated; the clamp keeps a
    // rounding at the end inside it).
    let start = first + ((a.start_frac * pages as f64).floor() as u32).min(pages.saturating_sub(1));
    let len = ((a.len_frac * pages as f64).round() as u32).clamp(1, first + pages - start);
    (start, len)
}

/// The memory the machine allocates, by part, in bytes: estimated from an experiment before
/// anything is built ([`Machine::memory_bytes`]) or measured from a machine's tables
/// ([`Machine::allocated_bytes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MachineMemory {
    /// Per-page arrays: tier and flags (1 B each), when the accessed bit was last cleared
    /// (8 B), and as the policy needs them, the bind table (1 B) and the last faulting thread
    /// (2 B; 4 where a process has 65,535 threads or more).
    pub page_table: u64,
    /// The page events of one epoch (allocations and frees, stored as runs of consecutive
    /// pages, 16 B a run) at their largest: every page allocated at once (a run per object and
    /// tier, or per page where first touches interleave), every page that can be freed freed at
    /// once (a run per page at worst).
    pub events: u64,
    /// The phases' access distributions: the regions' tables (a Zipf region's permutation, a
    /// scattered region's offsets, a trace window's pages and alias table) and each phase's
    /// history of cumulative misses.
    pub dists: u64,
    /// Marked pages waiting for their hint fault, for policies that take hint faults: every
    /// page marked at once, a 24 B queue entry each and a third more for the queues' growth
    /// and the entries left behind by pages that moved or faulted.
    pub fault_queues: u64,
}

impl MachineMemory {
    pub fn total(&self) -> u64 {
        self.page_table + self.events + self.dists + self.fault_queues
    }
}

/// The thread that last hint-faulted on each page, as tid + 1 (0: none): 1 byte a page when
/// every process has fewer than 255 threads, 2 when fewer than 65,535, 4 otherwise. Only
/// equality is ever asked of it, so every width gives the same answers.
#[derive(Clone, Debug)]
enum FaultOwners {
    Tiny(Vec<u8>),
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl FaultOwners {
    /// Bytes a page the owners of `exp` need: the most threads of one process, plus one for
    /// "none", must fit.
    fn width_for(exp: &Experiment) -> u64 {
        let most = exp
            .processes
            .iter()
            .map(|p| p.threads.iter().map(|t| t.count as u64).sum::<u64>())
            .max()
            .unwrap_or(0);
        if most < u8::MAX as u64 {
            1
        } else if most < u16::MAX as u64 {
            2
        } else {
            4
        }
    }

    fn new(pages: u64, width: u64) -> Result<Self> {
        const WHAT: &str = "the hint-fault table";
        Ok(match width {
            1 => FaultOwners::Tiny(memory::filled(pages, 0, WHAT)?),
            2 => FaultOwners::Narrow(memory::filled(pages, 0, WHAT)?),
            _ => FaultOwners::Wide(memory::filled(pages, 0, WHAT)?),
        })
    }

    fn len(&self) -> usize {
        match self {
            FaultOwners::Tiny(v) => v.len(),
            FaultOwners::Narrow(v) => v.len(),
            FaultOwners::Wide(v) => v.len(),
        }
    }

    fn resize(&mut self, n: usize) {
        match self {
            FaultOwners::Tiny(v) => v.resize(n, 0),
            FaultOwners::Narrow(v) => v.resize(n, 0),
            FaultOwners::Wide(v) => v.resize(n, 0),
        }
    }

    /// Set page `i`'s owner (tid + 1, or 0), returning the one before.
    #[inline]
    fn replace(&mut self, i: usize, owner: u32) -> u32 {
        match self {
            FaultOwners::Tiny(v) => {
                debug_assert!(owner <= u8::MAX as u32);
                std::mem::replace(&mut v[i], owner as u8) as u32
            }
            FaultOwners::Narrow(v) => {
                debug_assert!(owner <= u16::MAX as u32);
                std::mem::replace(&mut v[i], owner as u16) as u32
            }
            FaultOwners::Wide(v) => std::mem::replace(&mut v[i], owner),
        }
    }

    /// Page `i`'s owner (tid + 1, or 0).
    #[inline]
    fn get(&self, i: usize) -> u32 {
        match self {
            FaultOwners::Tiny(v) => v[i] as u32,
            FaultOwners::Narrow(v) => v[i] as u32,
            FaultOwners::Wide(v) => v[i],
        }
    }

    fn capacity_bytes(&self) -> u64 {
        match self {
            FaultOwners::Tiny(v) => v.capacity() as u64,
            FaultOwners::Narrow(v) => (v.capacity() * 2) as u64,
            FaultOwners::Wide(v) => (v.capacity() * 4) as u64,
        }
    }
}

/// Bytes per page of the arrays every machine allocates: the page-table entry, tier and flags
/// in one byte (the last accessed-bit clear, 5, 6 or 8 B more, see [`ClearTimes`], only for
/// policies that test accessed bits).
const PAGE_TABLE_BYTES: u64 = std::mem::size_of::<u8>() as u64;
/// Bytes per page of the hint-fault queues when every page is marked (see
/// [`MachineMemory::fault_queues`]).
const FAULT_QUEUE_BYTES: u64 = std::mem::size_of::<Reverse<(u64, u32, u64, u32)>>() as u64 * 4 / 3;

impl Machine {
    /// Each tier's capacity in pages; `fast_only` gives the fast tier room for the whole
    /// footprint.
    pub fn capacities(exp: &Experiment, fast_only: bool) -> Vec<u64> {
        let (mut fast, slow) = exp.capacities();
        if fast_only {
            fast = exp.footprint_pages() + 1;
        }
        let mut cap = vec![slow; exp.platform.tiers.len().max(1)];
        cap[0] = fast;
        cap
    }

    /// At most how many runs of allocation events one epoch holds ([`PageEvents`]). An object's
    /// first touch fills its preferred tier and then the next ones, so its events are a run per
    /// tier it lands in (and one more where a full tier's shadows are dropped page by page).
    /// Pages go one by one, a run each at worst, where processes start together (their first
    /// touches interleave, `allocate_interleaved`) and where a policy binds ranges of pages.
    fn allocation_runs(exp: &Experiment, needs: &TelemetryNeeds) -> u64 {
        let tiers = exp.platform.tiers.len().max(1) as u64;
        let epoch_s = exp.epoch_ms * 1e-3;
        exp.processes
            .iter()
            .enumerate()
            .map(|(pi, p)| {
                let costart = exp
                    .processes
                    .iter()
                    .enumerate()
                    .any(|(pj, q)| pj != pi && (q.start_s - p.start_s).abs() <= epoch_s);
                p.objects
                    .iter()
                    .map(|o| {
                        let n = exp.pages_of(o.bytes);
                        Self::first_touch_runs(tiers, n, costart || needs.bind_ranges)
                    })
                    .sum::<u64>()
            })
            .sum()
    }

    /// At most how many runs of events the first touch of `pages` pages of one object takes: a
    /// run per tier it lands in and one more (see [`Machine::allocation_runs`]), or a run per page
    /// when they may go one by one to alternating tiers (`per_page`).
    fn first_touch_runs(tiers: u64, pages: u64, per_page: bool) -> u64 {
        if per_page {
            pages
        } else {
            (tiers + 1) * PageEvents::runs_for(pages).max(1)
        }
    }

    /// Pages whose frees can come in one epoch: every object with a free time, and every
    /// object of a process that can exit (all its threads have work bounds, or phases that all
    /// end, or replay a trace).
    fn freeable_pages(exp: &Experiment) -> u64 {
        exp.processes
            .iter()
            .enumerate()
            .map(|(pi, p)| {
                let exits = !p.threads.is_empty()
                    && p.threads.iter().enumerate().all(|(g, t)| {
                        t.work_ops.is_some()
                            || t.phases.iter().all(|ph| ph.duration_s.is_some())
                            || exp.replays.iter().any(|r| r.process == pi && r.group == g)
                    });
                p.objects
                    .iter()
                    .filter(|o| exits || o.free_s.is_some())
                    .map(|o| exp.pages_of(o.bytes))
                    .sum::<u64>()
            })
            .sum()
    }

    /// The memory a machine for `exp` allocates, estimated before building it, for a policy
    /// with these needs: what [`Machine::with_needs`] and the run allocate, part by part.
    pub fn memory_bytes(exp: &Experiment, needs: &TelemetryNeeds) -> MachineMemory {
        let pages = exp.footprint_pages();
        let mut per_page = PAGE_TABLE_BYTES;
        if needs.accessed_bits {
            per_page += Self::clear_time_bytes(exp);
        }
        if needs.bind_ranges {
            per_page += std::mem::size_of::<u8>() as u64;
        }
        if needs.hint_faults {
            per_page += FaultOwners::width_for(exp);
        }
        let events = (Self::allocation_runs(exp, needs) + Self::freeable_pages(exp))
            .saturating_mul(PageEvents::RUN_BYTES);
        // One distribution per phase of every thread group, each with its history (and for a
        // policy that takes hint faults, which may take them on the fault path, the history's
        // correction for its threads' busy spans).
        let epochs = (exp.duration_s / exp.epoch_ms * 1e3).ceil().max(1.0) as u64;
        let hist_bytes = Dist::hist_bytes_for(epochs)
            + if needs.hint_faults {
                Dist::fix_bytes_max()
            } else {
                0
            };
        let mut dists = 0u64;
        let mut base = 0u64;
        for (pi, p) in exp.processes.iter().enumerate() {
            let ppages: u64 = p.objects.iter().map(|o| exp.pages_of(o.bytes)).sum();
            let canon = canonical_phases(p);
            for (g, t) in p.threads.iter().enumerate() {
                if let Some(r) = exp.replays.iter().find(|r| r.process == pi && r.group == g) {
                    for w in &r.replay.windows {
                        dists += Region::empirical_bytes(w.pages.len() as u64, w.touches.is_some())
                            + hist_bytes;
                    }
                    continue;
                }
                for (k, ph) in t.phases.iter().enumerate() {
                    if canon[g][k] != (g, k) {
                        continue; // shares an earlier phase's distribution
                    }
                    dists += hist_bytes;
                    for a in &ph.access {
                        let (first, n) = if a.object == "*" {
                            (base, ppages)
                        } else {
                            let mut first = base;
                            let mut n = 0;
                            for o in &p.objects {
                                if o.name == a.object {
                                    n = exp.pages_of(o.bytes);
                                    break;
                                }
                                first += exp.pages_of(o.bytes);
                            }
                            (first, n)
                        };
                        let (first, n) = (first as u32, n as u32);
                        dists += match (a.scatter_seed, a.pattern) {
                            (Some(_), _) => Region::subset_bytes(n),
                            (None, Pattern::Zipf { .. }) => {
                                Region::zipf_bytes(region_extent(first, n, a).1)
                            }
                            (None, _) => 0,
                        };
                    }
                }
            }
            base += ppages;
        }
        MachineMemory {
            page_table: pages.saturating_mul(per_page),
            events,
            dists,
            fault_queues: if needs.hint_faults {
                pages.saturating_mul(FAULT_QUEUE_BYTES)
            } else {
                0
            },
        }
    }

    /// Bytes a page a run of `exp` keeps each accessed-bit clear time in: 5 or 6 (whole ns, a
    /// run shorter than 2^39 or 2^47 ns), or 8.
    fn clear_time_bytes(exp: &Experiment) -> u64 {
        ClearTimes::width(exp.epoch_ms * 1e6, exp.duration_s * 1e9)
    }

    /// The memory this machine's tables hold now (their capacities), part by part.
    pub fn allocated_bytes(&self) -> MachineMemory {
        let cap = |n: usize, each: usize| (n * each) as u64;
        let fault = std::mem::size_of::<Reverse<(u64, u32, u64, u32)>>();
        let marked = std::mem::size_of::<(u32, u64, f32)>();
        MachineMemory {
            page_table: cap(self.pte.capacity(), 1)
                + cap(self.page_bind.capacity(), 1)
                + self.last_clear.capacity_bytes()
                + self.last_fault_tid.capacity_bytes(),
            events: self.tel.allocated.capacity_bytes() + self.tel.freed.capacity_bytes(),
            dists: self.dists.iter().map(Dist::bytes).sum(),
            fault_queues: cap(self.faults.capacity(), fault)
                + self
                    .count_faults
                    .iter()
                    .map(|h| cap(h.capacity(), fault))
                    .sum::<u64>()
                + cap(
                    self.idle_marked.capacity() + self.stalled_marked.capacity(),
                    marked,
                ),
        }
    }

    /// Build the machine for an experiment; `fast_only` gives the fast tier room for the whole
    /// footprint (the reference run that slowdowns are measured against). Tables a policy may
    /// need are allocated when first used; [`Machine::with_needs`] allocates them up front.
    pub fn new(exp: &Experiment, fast_only: bool) -> Result<Machine> {
        Self::build(exp, fast_only, &TelemetryNeeds::default(), true)
    }

    /// Build the machine for an experiment and a policy with these needs, allocating every
    /// per-page table up front and fallibly ([`Machine::memory_bytes`] says how much).
    pub fn with_needs(
        exp: &Experiment,
        fast_only: bool,
        needs: &TelemetryNeeds,
    ) -> Result<Machine> {
        Self::build(exp, fast_only, needs, needs.accessed_bits)
    }

    /// [`Machine::with_needs`]; `keep_clear_times`: keep each page's last accessed-bit clear
    /// (a policy that tests accessed bits without saying so in its needs then fails the run
    /// with a clear error, see `test_accessed`). [`Machine::new`] keeps them, since it does
    /// not know its policy.
    fn build(
        exp: &Experiment,
        fast_only: bool,
        needs: &TelemetryNeeds,
        keep_clear_times: bool,
    ) -> Result<Machine> {
        let ntiers = exp.platform.tiers.len();
        let fp = exp.footprint_pages();
        let cap = Self::capacities(exp, fast_only);
        if fp > u32::MAX as u64 / 2 {
            return Err(SimError::Capacity(format!(
                "{}: footprint of {fp} pages is too large for the simulator (max 2^31)",
                exp.source
            )));
        }
        let mut procs = Vec::new();
        let mut threads = Vec::new();
        let mut base = 0u32;
        for (pi, p) in exp.processes.iter().enumerate() {
            let mut objects: Vec<ObjState> = Vec::new();
            let mut off = 0u32;
            for o in &p.objects {
                let n = exp.pages_of(o.bytes) as u32;
                objects.push(ObjState {
                    name: o.name.clone(),
                    first: base + off,
                    pages: n,
                    live: false,
                    bind: o
                        .first_touch_tier
                        .map(|t| t.min(exp.platform.tiers.len() as u8 - 1)),
                    pinned: o.pinned,
                    mlocked: o.mlocked,
                    resident: vec![0; ntiers],
                    vma_head: match (objects.last(), p.objects.get(objects.len().wrapping_sub(1))) {
                        (Some(prev), Some(prev_spec))
                            if !o.separate_vma
                                && !o.locked()
                                && !prev_spec.locked()
                                && (prev_spec.alloc_s, prev_spec.free_s)
                                    == (o.alloc_s, o.free_s) =>
                        {
                            prev.vma_head
                        }
                        _ => objects.len(),
                    },
                    alloc_ns: (p.start_s + o.alloc_s) * 1e9,
                    free_ns: o.free_s.map(|f| (p.start_s + f) * 1e9),
                });
                off += n;
            }
            let mut tids = Vec::new();
            for (g, t) in p.threads.iter().enumerate() {
                for _ in 0..t.count {
                    tids.push(threads.len());
                    threads.push(ThreadState {
                        proc_: Some(pi),
                        tid: tids.len() as u32 - 1,
                        group: g,
                        work_left: t.work_ops,
                        ..ThreadState::idle(p.start_s * 1e9)
                    });
                }
            }
            procs.push(ProcState {
                name: p.name.clone(),
                class: p.class,
                base,
                pages: off,
                start_ns: p.start_s * 1e9,
                objects,
                threads: tids,
                started: false,
                exited: false,
                finish_ns: None,
                cpu_share: p.cpu_share,
                migration_enabled: true,
                partition: None,
                resident: vec![0; ntiers],
                promotions: 0,
                demotions: 0,
                demote_promoted: 0,
                ops: 0.0,
                misses: vec![0.0; ntiers],
                replay_overrun: 0.0,
                dist_of: FxHashMap::default(),
                canon: canonical_phases(p),
                scan_cursor: 0,
                scan_credit: 0.0,
                numa: ScanState::default(),
                tlb_per_thread: false,
                migration_stops: 0,
                migration_restarts: 0,
                pending: std::collections::VecDeque::new(),
            });
            base += off;
        }
        for a in &exp.antagonists {
            for _ in 0..a.cores {
                threads.push(ThreadState {
                    pinned: Some(a.tier.min(ntiers - 1)),
                    m: a.mlp,
                    read_frac: a.read_frac,
                    stop_ns: a.stop_s.map(|s| s * 1e9),
                    ..ThreadState::idle(a.start_s * 1e9)
                });
            }
        }
        let total = base as u64;
        let mut tel = Telemetry::default();
        tel.allocated
            .try_reserve(Self::allocation_runs(exp, needs), "the page events")?;
        tel.freed
            .try_reserve(Self::freeable_pages(exp), "the page events")?;
        let lat = exp
            .platform
            .tiers
            .iter()
            .map(|t| t.curve.unloaded_ns())
            .collect();
        let seed = exp.seed;
        let mut m = Machine {
            ntiers,
            cap,
            used: vec![0; ntiers],
            pte: memory::filled(total, PTE_NONE, "the page table")?,
            page_bind: if needs.bind_ranges {
                memory::filled(total, NONE, "the page bind table")?
            } else {
                Vec::new()
            },
            last_clear: if keep_clear_times {
                ClearTimes::zeroed(total, Self::clear_time_bytes(exp))?
            } else {
                ClearTimes::none()
            },
            clear_times_error: None,
            last_fault_tid: FaultOwners::new(
                if needs.hint_faults { total } else { 0 },
                FaultOwners::width_for(exp),
            )?,
            shadow: FxHashMap::default(),
            shadow_lists: vec![Vec::new(); ntiers],
            #[cfg(test)]
            modes: TestModes::default(),
            undeclared_accessed_bits: false,
            busy: BusySpans::new(exp),
            live: LiveRates::default(),
            swept: false,
            procs,
            threads,
            dists: Vec::new(),
            lat,
            mig_traffic: std::collections::VecDeque::from([vec![(0.0, 0.0); ntiers]]),
            mig_traffic_from: 0.0,
            queue: Default::default(),
            queue_refused: 0,
            sync_results: Vec::new(),
            fault_path: false,
            fault_at: None,
            wall_fault_policy_s: 0.0,
            fault_calls: 0,
            last_timer_ns: None,
            mig_debt_ns: 0.0,
            mig_idle_from: f64::INFINITY,
            mig_traffic_settled: false,
            faults: MinQueue::new(),
            count_faults: Vec::new(),
            dists_started: Vec::new(),
            dists_stopped: Vec::new(),
            idle_marked: Vec::new(),
            stalled_marked: Vec::new(),
            dist_gen: 0,
            stalled_checked_gen: 0,
            scan: None,
            scan_pid: FxHashMap::default(),
            sampling: None,
            tel,
            now_ns: 0.0,
            epoch_ns: exp.epoch_ms * 1e6,
            stats: EpochStats::default(),
            rng_sample: Rng::derive(seed, 1),
            scratch: StepScratch::default(),
            sample_plan: Vec::new(),
            sample_ahead: Vec::new(),
            sample_counts: Vec::new(),
            rng_fault: Rng::derive(seed, 2),
            rng_bits: Rng::derive(seed, 3),
            rng_mig: Rng::derive(seed, 4),
            rng_noise: Rng::derive(seed, 5),
            counter_noise: exp.counter_noise,
            wall_solve_s: 0.0,
            wall_sample_s: 0.0,
            timed_epoch: 0,
            cpu_ghz: exp.platform.cpu_ghz,
            page_bytes: exp.page_bytes as f64,
            access_tests: AccessTests::default(),
            faults_deferred: 0,
            test_clock: 0.0,
            exp: exp.clone(),
        };
        m.init_telemetry();
        Ok(m)
    }

    fn init_telemetry(&mut self) {
        let t = &mut self.tel;
        t.epoch_ns = self.epoch_ns as u64;
        t.page_bytes = self.exp.page_bytes;
        t.cpu_ghz = self.cpu_ghz;
        t.calibration = self.exp.platform.calibration.clone();
        t.tiers = self
            .exp
            .platform
            .tiers
            .iter()
            .enumerate()
            .map(|(i, tm)| TierInfo {
                id: i as TierId,
                name: tm.name.clone(),
                capacity_pages: self.cap[i],
                used_pages: 0,
            })
            .collect();
        t.tier_counters = vec![TierCounters::default(); self.ntiers];
        t.processes = self
            .procs
            .iter()
            .enumerate()
            .map(|(i, p)| ProcInfo {
                pid: i as u32,
                name: p.name.clone(),
                class: p.class,
                alive: false,
                threads: p.threads.len() as u32,
                rss_pages: vec![0; self.ntiers],
                demote_promoted: 0,
                promotions: 0,
                demotions: 0,
                migration_enabled: true,
            })
            .collect();
        t.objects = self
            .procs
            .iter()
            .enumerate()
            .flat_map(|(i, p)| {
                p.objects.iter().map(move |o| ObjectInfo {
                    pid: i as u32,
                    name: o.name.clone(),
                    first_page: PageId(o.first as u64),
                    pages: o.pages as u64,
                    live: false,
                })
            })
            .collect();
    }

    pub fn total_pages(&self) -> usize {
        self.pte.len()
    }

    /// The tier page `page` is in ([`NONE`]: not allocated, or beyond the page space).
    #[inline]
    pub fn page_tier(&self, page: usize) -> u8 {
        self.pte.get(page).map_or(NONE, |&e| pte_tier(e))
    }

    #[inline]
    fn proc_of(&self, page: u32) -> usize {
        self.procs.partition_point(|p| p.base + p.pages <= page)
    }

    /// Access rate of a page (LLC misses per ns) from the threads whose phase covers it.
    fn page_rate(&self, page: u32) -> (f64, f64) {
        let pi = self.proc_of(page);
        let mut r = 0.0;
        let mut w = 0.0;
        for &d in self.procs[pi].dist_of.values() {
            let dd = &self.dists[d];
            if dd.users > 0 && dd.rate > 0.0 {
                let x = dd.rate * dd.pmf(page);
                r += x;
                w += x * ((1.0 - dd.read_frac) / dd.read_frac).min(1.0);
            }
        }
        (r, w)
    }

    /// A page's expected touches between `t0` and `t1` (ns), from the cumulative misses of every
    /// phase of its process: its LLC misses, but a stream's sweep over the page counts once
    /// (`Region::burst`), as the page's accessed bit and a pending hint fault see it.
    fn page_accesses_between(&self, page: u32, t0: f64, t1: f64) -> f64 {
        self.page_touches(page, t0, t1, |_, dd, t| dd.cum_at(t))
    }

    /// The touches a page had in (t0, t1] while its threads ran: without kswapd's spans
    /// (`kswapd_shares_cpu`), in which no thread ran.
    fn page_accesses_running(&self, page: u32, t0: f64, t1: f64) -> f64 {
        if self.busy.spans.is_empty() && !self.live_at(t1) {
            return self.page_accesses_between(page, t0, t1);
        }
        self.page_touches(page, t0, t1, |d, dd, t| self.cum_running(d, dd, t))
    }

    /// Phase `d`'s cumulative misses at time `t` while its threads ran: less what kswapd's
    /// spans took (`kswapd_shares_cpu`; none without it). Inside an epoch's fault delivery on
    /// the fault path, an instant past the epoch's start reads the live count (`live_cum`).
    fn cum_running(&self, d: usize, dd: &Dist, t: f64) -> f64 {
        let c = if self.live_at(t) && d < self.live.t.len() {
            self.live_cum(d, t)
        } else {
            dd.cum_at(t)
        };
        if self.busy.spans.is_empty() {
            c
        } else {
            c - self.busy.removed_at(d, dd, t)
        }
    }

    /// Phase `d`'s live count at `t` inside the epoch being delivered (after its start): the
    /// misses its threads made while out of their faults so far, as `LiveRates` counts them
    /// for the faults' arrival, and past the last change at the rate now. An accessed-bit test
    /// within the epoch (kswapd runs up to each fault on the fault path) then sees a storm's
    /// threads stop where they do, not at the epoch's end when `place_fault_spans` puts the
    /// same spans in the history.
    fn live_cum(&self, d: usize, t: f64) -> f64 {
        let lv = &self.live;
        if t >= lv.t[d] {
            return lv.c[d] + lv.r[d].max(0.0) * (t - lv.t[d]);
        }
        // strictly between the epoch's start (the first breakpoint, before t) and the last
        between(&lv.pts_t[d], &lv.pts_c[d], t)
    }

    /// Whether a count at `t` is read live: inside an epoch's fault delivery on the fault path,
    /// past the epoch's start ([`Machine::live_cum`]).
    fn live_at(&self, t: f64) -> bool {
        self.live.on && t > self.now_ns
    }

    /// What an accessed-bit test at `t1` of a page cleared at `t0` weighs: the touches its
    /// process's phases made while they ran ([`Machine::page_accesses_running`]), and for a
    /// page of a swept region (`in_order`) whether a pass of a phase that sweeps it reached it
    /// (Some), the touches then being the other phases' only. None when no phase sweeps it (or
    /// no region is swept).
    fn touches_for_test(&self, page: u32, t0: f64, t1: f64) -> (Option<bool>, f64) {
        if !self.swept || t1 <= t0 {
            return (None, self.page_accesses_running(page, t0, t1));
        }
        let pi = self.proc_of(page);
        let mut swept: Option<bool> = None;
        let mut other = 0.0;
        for &d in self.procs[pi].dist_of.values() {
            let dd = &self.dists[d];
            if page < dd.lo || page >= dd.hi {
                continue;
            }
            let (c0, c1) = (self.cum_running(d, dd, t0), self.cum_running(d, dd, t1));
            // the same sum, in the same order, as page_touches makes
            match dd.sweep_crossed(page, c0, c1) {
                Some(hit) => swept = Some(swept.unwrap_or(false) || hit),
                None if c1 > c0 => other += (c1 - c0) * dd.touch_pmf(page),
                None => {}
            }
        }
        (swept, other)
    }

    /// A page's touches between `t0` and `t1` by every phase of its process, from `cum(d, dist,
    /// t)`, the cumulative misses of phase `d` at time t.
    fn page_touches(
        &self,
        page: u32,
        t0: f64,
        t1: f64,
        cum: impl Fn(usize, &Dist, f64) -> f64,
    ) -> f64 {
        if t1 <= t0 {
            return 0.0;
        }
        let pi = self.proc_of(page);
        let mut n = 0.0;
        for &d in self.procs[pi].dist_of.values() {
            let dd = &self.dists[d];
            if page < dd.lo || page >= dd.hi {
                continue;
            }
            let dc = cum(d, dd, t1) - cum(d, dd, t0);
            if dc > 0.0 {
                n += dc * dd.touch_pmf(page);
            }
        }
        n
    }

    /// Pages marked for a hint fault that has not come yet (O(pages): tests and reports).
    pub fn marked_pages(&self) -> u64 {
        self.pte.iter().filter(|&&f| f & F_MARKED != 0).count() as u64
    }

    /// Ground truth: a page's access rate (LLC misses per ns) in the current epoch.
    pub fn page_access_rate(&self, page: u32) -> f64 {
        self.page_rate(page).0
    }

    /// Ground truth: the stall a page causes per ns (misses x latency / MLP over its threads).
    /// While threads of the process wait at a barrier for the running ones, the running threads'
    /// stalls hold them up too: the stall counts once per live thread over the running ones (a
    /// small level of a BFS walked by one of eight threads costs the program eight times the
    /// walker's stall).
    pub fn true_page_stall_rate(&self, page: u32) -> f64 {
        let t = pte_tier(self.pte[page as usize]);
        if t == NONE {
            return 0.0;
        }
        let pi = self.proc_of(page);
        let l = self.lat[t as usize];
        let (mut live, mut running, mut stall) = (0u32, 0u32, 0.0);
        for &ti in &self.procs[pi].threads {
            let th = &self.threads[ti];
            if !th.active {
                continue;
            }
            live += u32::from(!th.done);
            if th.waiting {
                continue;
            }
            running += 1;
            if let Some(d) = th.dist {
                stall += th.x * self.dists[d].pmf(page) * l / th.m;
            }
        }
        if running == 0 {
            return 0.0;
        }
        stall * (live as f64 / running as f64)
    }

    // ---------------------------------------------------------------- page table changes

    fn mass_move(&mut self, page: u32, from: Option<u8>, to: Option<u8>) {
        let pi = self.proc_of(page);
        let Machine { procs, dists, .. } = self;
        for &d in procs[pi].dist_of.values() {
            let dd = &mut dists[d];
            if dd.users == 0 {
                continue;
            }
            let pr = dd.pmf(page);
            if pr == 0.0 {
                continue;
            }
            if let Some(f) = from {
                dd.mass[f as usize] -= pr;
            }
            if let Some(t) = to {
                dd.mass[t as usize] += pr;
            }
        }
    }

    fn set_tier(&mut self, page: u32, to: Option<u8>) {
        let old = pte_tier(self.pte[page as usize]);
        let from = (old != NONE).then_some(old);
        let pi = self.proc_of(page);
        let p = &mut self.procs[pi];
        let oi = p.object_of(page);
        if let Some(f) = from {
            self.used[f as usize] -= 1;
            p.resident[f as usize] -= 1;
            if let Some(o) = p.objects.get_mut(oi) {
                o.resident[f as usize] -= 1;
            }
        }
        if let Some(t) = to {
            self.used[t as usize] += 1;
            p.resident[t as usize] += 1;
            if let Some(o) = p.objects.get_mut(oi) {
                o.resident[t as usize] += 1;
            }
        }
        let e = &mut self.pte[page as usize];
        *e = pte_with_tier(*e, to.unwrap_or(NONE));
        self.mass_move(page, from, to);
    }

    fn drop_shadow(&mut self, page: u32) {
        if let Some((t, _)) = self.shadow.remove(&page) {
            self.used[t as usize] -= 1;
        }
    }

    /// Make room in a tier by dropping its shadow copies, newest first (Nomad frees shadows
    /// under pressure). Only the tier's own list is taken from: a full tier that holds no
    /// shadows (the fast one, shadows being the slow copies of promoted pages) leaves the other
    /// tiers' shadows reclaimable.
    fn reclaim_shadows(&mut self, tier: usize) -> bool {
        while self.used[tier] >= self.cap[tier] {
            let Some(p) = self.shadow_lists[tier].pop() else {
                return false;
            };
            if matches!(self.shadow.get(&p), Some((t, _)) if *t as usize == tier) {
                self.drop_shadow(p);
            }
        }
        true
    }

    /// Record page `page`'s new shadow in `tier`, compacting the tier's list first when its
    /// entries outnumber the shadows twice over: an entry whose shadow has gone, or that a
    /// later entry of the same page follows, is never acted on (the later one is taken first
    /// and drops the shadow), so only each live shadow's last entry is kept, in order.
    fn push_shadow(&mut self, tier: usize, page: u32) {
        if self.shadow_lists[tier].len() > 2 * self.shadow.len() + 1024 {
            let shadow = &self.shadow;
            let mut seen = FxHashSet::default();
            let list = &mut self.shadow_lists[tier];
            let mut kept: Vec<u32> = list
                .iter()
                .rev()
                .copied()
                .filter(|p| {
                    matches!(shadow.get(p), Some((t, _)) if *t as usize == tier) && seen.insert(*p)
                })
                .collect();
            kept.reverse();
            *list = kept;
        }
        self.shadow_lists[tier].push(page);
    }

    /// Pages process `pi` may still place in `tier` under its fast-tier partition (None: no
    /// partition applies).
    fn partition_left(&self, tier: usize, pi: usize) -> Option<u64> {
        let p = &self.procs[pi];
        (tier == 0)
            .then_some(p.partition)
            .flatten()
            .map(|limit| limit.saturating_sub(p.resident[0]))
    }

    fn has_room(&mut self, tier: usize, pi: usize) -> bool {
        if self.partition_left(tier, pi) == Some(0) {
            return false;
        }
        self.used[tier] < self.cap[tier] || self.reclaim_shadows(tier)
    }

    fn allocate_object(&mut self, pi: usize, oi: usize) -> Result<()> {
        let (first, n) = {
            let o = &mut self.procs[pi].objects[oi];
            o.live = true;
            (o.first, o.pages)
        };
        // Room for the events was reserved up front (Machine::memory_bytes); this only grows
        // the list, fallibly, if more comes in one epoch: a run per tier, a run per page with
        // per-page binds.
        let runs = Self::first_touch_runs(self.ntiers as u64, n as u64, !self.page_bind.is_empty());
        self.tel.allocated.try_reserve(runs, "the page events")?;
        let mut page = first;
        while page < first + n {
            page += self.allocate_run(pi, oi, page, first + n - page)?;
        }
        Ok(())
    }

    #[cfg(test)]
    fn modes(&self) -> TestModes {
        self.modes
    }

    /// Outside tests the fast paths always run.
    #[cfg(not(test))]
    fn modes(&self) -> TestModes {
        TestModes::default()
    }

    /// Allocate up to `count` pages of object `oi` from `page` on, as `allocate_page` would one
    /// after the other, and say how many were allocated (at least one). Pages that all go to the
    /// object's preferred tier while it has room are placed together (the counters, the tables
    /// and each phase's tier mass updated once per run of pages, page by page in the same order,
    /// so the result is the same bit for bit); anything else (a pinned object, per-page binds,
    /// a full tier, whose shadows may have to go) goes through `allocate_page`.
    fn allocate_run(&mut self, pi: usize, oi: usize, page: u32, count: u32) -> Result<u32> {
        let o = &self.procs[pi].objects[oi];
        let preferred = o.bind.unwrap_or(0) as usize;
        let room = |t: usize| {
            let free = self.cap[t].saturating_sub(self.used[t]);
            self.partition_left(t, pi)
                .map_or(free, |left| free.min(left))
        };
        // the tier allocate_page would choose, unless a full tier's shadows could make room
        let mut t = preferred;
        let mut k = 0;
        for c in std::iter::once(preferred).chain((0..self.ntiers).filter(|&c| c != preferred)) {
            let r = room(c);
            if r > 0 {
                (t, k) = (c, (count as u64).min(r) as u32);
                break;
            }
            if !self.shadow_lists[c].is_empty() {
                break;
            }
        }
        let (lo, hi) = (page as usize, (page + k) as usize);
        if o.locked()
            || k == 0
            || self.modes().per_page_alloc
            || !self.page_bind.is_empty()
            || self.pte[lo..hi].iter().any(|&x| pte_present(x))
        {
            self.allocate_page(pi, oi, page)?;
            return Ok(1);
        }
        let (kk, tt) = (k as u64, t as u8);
        self.used[t] += kk;
        let p = &mut self.procs[pi];
        p.resident[t] += kk;
        p.objects[oi].resident[t] += kk;
        self.pte[lo..hi].fill(tt | F_YOUNG);
        if !self.last_clear.is_empty() {
            self.last_clear.fill(lo..hi, self.now_ns)?;
        }
        let Machine { procs, dists, .. } = self;
        for &d in procs[pi].dist_of.values() {
            let dd = &mut dists[d];
            if dd.users == 0 || hi as u32 <= dd.lo || lo as u32 >= dd.hi {
                continue;
            }
            for pg in page..page + k {
                let pr = dd.pmf(pg);
                if pr != 0.0 {
                    dd.mass[t] += pr;
                }
            }
        }
        self.tel
            .allocated
            .push_run(PageId(page as u64), kk, pi as u32, tt);
        Ok(k)
    }

    /// Processes that start at the same instant run their first touches at the same time, so
    /// their pages are allocated interleaved, at a pace in proportion to each one's footprint:
    /// which process the experiment lists first does not decide which one the fast tier holds.
    /// Only the objects allocated at the start take part; bound objects are placed first (each
    /// in its own tier, as `lifecycle` does for one process).
    /// A synthetic process touches its objects in its own listing order (a program allocates and
    /// initialises them one after another); a trace process touches its objects side by side
    /// (pages of one pass of the trace, in address order, stand in for the order of first touch).
    ///
    /// The order is merged from one stream per object (its pages in address order, each at its
    /// position in its process's first touch), so it takes memory per object, not per page.
    fn allocate_interleaved(&mut self, procs: &[usize]) -> Result<()> {
        for &pi in procs {
            for oi in 0..self.procs[pi].objects.len() {
                let o = &self.procs[pi].objects[oi];
                if o.bind.is_some() && o.alloc_ns <= self.now_ns && !o.live {
                    self.allocate_object(pi, oi)?;
                }
            }
        }
        // One stream per object: (offset, n) places its page k at (offset + k + 0.5) / n, which
        // grows with k; the heap holds each stream's next page, keyed by (position, process,
        // object) as a stable sort of all pages by position, then process, would order them.
        let mut streams: Vec<(usize, usize, f64, f64)> = Vec::new();
        let mut n_pages = 0u64;
        for &pi in procs {
            let trace = self.exp.replays.iter().any(|r| r.process == pi);
            let unbound: Vec<usize> = (0..self.procs[pi].objects.len())
                .filter(|&oi| {
                    let o = &self.procs[pi].objects[oi];
                    o.bind.is_none() && o.alloc_ns <= self.now_ns && !o.live
                })
                .collect();
            let total: u64 = unbound
                .iter()
                .map(|&oi| self.procs[pi].objects[oi].pages as u64)
                .sum();
            let mut before = 0u64;
            for oi in unbound {
                let o = &mut self.procs[pi].objects[oi];
                o.live = true;
                let (offset, n) = if trace {
                    (0.0, o.pages.max(1) as f64)
                } else {
                    (before as f64, total.max(1) as f64)
                };
                before += o.pages as u64;
                n_pages += o.pages as u64;
                if o.pages > 0 {
                    streams.push((pi, oi, offset, n));
                }
            }
        }
        self.tel.allocated.try_reserve(n_pages, "the page events")?;
        // Positions are positive and finite: their bit patterns order as the numbers do.
        let key = |offset: f64, n: f64, k: u32| ((offset + k as f64 + 0.5) / n).to_bits();
        let mut heap: BinaryHeap<Reverse<(u64, usize, usize, u32)>> = streams
            .iter()
            .enumerate()
            .map(|(i, &(pi, oi, offset, n))| Reverse((key(offset, n, 0), pi, oi, i as u32)))
            .collect();
        let mut next = vec![0u32; streams.len()];
        while let Some(Reverse((_, pi, oi, i))) = heap.pop() {
            let k = next[i as usize];
            let (first, pages) = {
                let o = &self.procs[pi].objects[oi];
                (o.first, o.pages)
            };
            // this stream's pages that come before the next stream's page, as a run
            let (_, _, offset, n) = streams[i as usize];
            let mut end = k + 1;
            match heap.peek() {
                None => end = pages,
                Some(Reverse(top)) => {
                    while end < pages && (key(offset, n, end), pi, oi, i) < *top {
                        end += 1;
                    }
                }
            }
            let mut j = k;
            while j < end {
                j += self.allocate_run(pi, oi, first + j, end - j)?;
            }
            next[i as usize] = end;
            if end < pages {
                heap.push(Reverse((key(offset, n, end), pi, oi, i)));
            }
        }
        Ok(())
    }

    fn allocate_page(&mut self, pi: usize, oi: usize, page: u32) -> Result<()> {
        let bind = self.procs[pi].objects[oi].bind;
        let now = self.now_ns;
        let o = &self.procs[pi].objects[oi];
        if o.locked() {
            // MPOL_BIND: the bound tier or nothing (the kernel would OOM-kill the process); an
            // mlocked object is kept where it was placed, so it must fit there too
            let (a, what) = if o.pinned {
                ("a", "pinned")
            } else {
                ("an", "mlocked")
            };
            let t = bind.unwrap_or(0);
            if !self.has_room(t as usize, pi) {
                return Err(SimError::Capacity(format!(
                    "{}: at t={:.3}s process `{}` allocating {what} object `{}`: its tier {} is full ({} of {} pages); {a} {what} object must fit its tier",
                    self.exp.source,
                    self.now_ns * 1e-9,
                    self.procs[pi].name,
                    self.procs[pi].objects[oi].name,
                    t,
                    self.used[t as usize],
                    self.cap[t as usize]
                )));
            }
            self.set_tier(page, Some(t));
            let e = &mut self.pte[page as usize];
            *e = (*e & PTE_TIER) | F_PINNED | F_YOUNG;
            if (page as usize) < self.last_clear.len() {
                self.last_clear.set(page as usize, now)?;
            }
            return Ok(());
        }
        {
            let page_bind = self
                .page_bind
                .get(page as usize)
                .copied()
                .filter(|&b| b != NONE);
            let preferred = page_bind.or(bind).map_or(0, |b| b as usize);
            let chosen = std::iter::once(preferred)
                .chain((0..self.ntiers).filter(|&t| t != preferred))
                .find(|&t| self.has_room(t, pi))
                .map(|t| t as u8);
            let Some(t) = chosen else {
                return Err(SimError::Capacity(format!(
                    "{}: at t={:.3}s process `{}` allocating object `{}`: every tier is full ({:?} of {:?} pages); raise slow_tier_gb",
                    self.exp.source,
                    self.now_ns * 1e-9,
                    self.procs[pi].name,
                    self.procs[pi].objects[oi].name,
                    self.used,
                    self.cap
                )));
            };
            self.set_tier(page, Some(t));
            let e = &mut self.pte[page as usize];
            *e = (*e & PTE_TIER) | F_YOUNG;
            if (page as usize) < self.last_clear.len() {
                self.last_clear.set(page as usize, now)?;
            }
            self.tel.allocated.push(PageEvent {
                page: PageId(page as u64),
                pid: pi as u32,
                tier: t,
            });
        }
        Ok(())
    }

    fn free_object(&mut self, pi: usize, oi: usize) -> Result<()> {
        let (first, n) = {
            let o = &mut self.procs[pi].objects[oi];
            if !o.live {
                return Ok(());
            }
            o.live = false;
            (o.first, o.pages)
        };
        self.tel.freed.try_reserve(n as u64, "the page events")?;
        for page in first..first + n {
            let t = pte_tier(self.pte[page as usize]);
            if t == NONE {
                continue;
            }
            self.drop_shadow(page);
            self.set_tier(page, None);
            let pinned = self.pte[page as usize] & F_PINNED != 0;
            self.pte[page as usize] &= PTE_TIER;
            if pinned {
                continue;
            }
            self.tel.freed.push(PageEvent {
                page: PageId(page as u64),
                pid: pi as u32,
                tier: t,
            });
        }
        Ok(())
    }

    // ---------------------------------------------------------------- lifecycle

    /// The trace a thread group replays, if any.
    fn replay_of(&self, pi: usize, group: usize) -> Option<&crate::trace::replay::ReplaySpec> {
        self.exp
            .replays
            .iter()
            .find(|r| r.process == pi && r.group == group)
    }

    fn make_dist(&mut self, pi: usize, group: usize, phase: usize) -> Result<usize> {
        let replayed = self.replay_of(pi, group).is_some();
        let key = if replayed {
            (group, phase)
        } else {
            self.procs[pi].canon[group][phase]
        };
        if let Some(&d) = self.procs[pi].dist_of.get(&key) {
            return Ok(d);
        }
        if let Some(rs) = self.replay_of(pi, group) {
            // A trace window: its measured page frequencies over the trace's object.
            let w = &rs.replay.windows[phase];
            let first = self.procs[pi].objects[0].first;
            let mut r =
                Region::empirical(first, w.pages.clone(), &w.counts, w.touches.as_deref(), 1.0);
            // The window's MLP estimate comes from stride continuation (docs/traces.md): read it
            // back as the share of misses a prefetcher covers.
            r.prefetched = (1.0 - 1.0 / w.mlp.max(1.0)).clamp(0.0, 1.0);
            let d = Dist::new(pi, vec![r], self.ntiers, w.read_frac);
            self.dists.push(d);
            let id = self.dists.len() - 1;
            self.procs[pi].dist_of.insert((group, phase), id);
            return Ok(id);
        }
        let spec = &self.exp.processes[pi].threads[group].phases[phase];
        let p = &self.procs[pi];
        let mut regions = Vec::new();
        for a in &spec.access {
            let (first, pages) = if a.object == "*" {
                (p.base, p.pages)
            } else {
                let o = p
                    .objects
                    .iter()
                    .find(|o| o.name == a.object)
                    .expect("validated object name");
                (o.first, o.pages)
            };
            let (start, len) = region_extent(first, pages, a);
            // A Zipf ranking is a property of the data (which vertices are hubs, which keys are
            // popular): derived from the process and the range alone, so every phase and thread
            // group reading the range finds the same pages hot, unless the region asks for its
            // own ranking with `zipf_seed`.
            // by the process's name, not its place in the file (names are unique)
            let name = self.exp.processes[pi]
                .name
                .bytes()
                .fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                    (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
                });
            let seed = Rng::derive(
                self.exp.seed ^ name,
                (((start - p.base) as u64) << 32) | len as u64,
            )
            .next_u64()
                ^ a.zipf_seed.map_or(0, |z| Rng::derive(z, 0x7a1f).next_u64());
            let mut r = match (a.scatter_seed, a.pattern) {
                (Some(s), _) => Region::subset(first, pages, len, a.weight, s)?,
                (None, Pattern::Zipf { s }) => Region::zipf(start, len, s, a.weight, seed)?,
                (None, _) => Region::range(start, len, a.weight),
            };
            r.ordered = a.in_order;
            self.swept |= a.in_order;
            if a.pattern == Pattern::Sequential {
                r.prefetched = 1.0;
                // a sweep reads a page's lines one after the other: one touch per page
                r.burst = (self.page_bytes / LINE).max(1.0);
            }
            regions.push(r);
        }
        let d = Dist::new(pi, regions, self.ntiers, spec.read_frac);
        self.dists.push(d);
        let id = self.dists.len() - 1;
        self.procs[pi].dist_of.insert(key, id);
        Ok(id)
    }

    fn enter_phase(&mut self, ti: usize, phase: usize) -> Result<()> {
        self.dist_gen += 1;
        let pi = self.threads[ti].proc_.expect("app thread");
        let group = self.threads[ti].group;
        if let Some(old) = self.threads[ti].dist.take() {
            self.dists[old].users -= 1;
            if self.dists[old].users == 0 {
                self.dists_stopped.push(old);
            }
        }
        let nph = self.exp.processes[pi].threads[group].phases.len();
        let mut phase = phase;
        let mut carry = None;
        if let Some(rs) = self.replay_of(pi, group) {
            if phase >= nph && rs.looped {
                phase = 0;
            }
            if phase < nph {
                // Overshoot of the last window counts against this one. It distorts the replay
                // only where the windows differ: a trace that is one window (merged, looping)
                // runs on in the same pages.
                let left = self.threads[ti].phase_work_left.unwrap_or(0.0).min(0.0);
                carry = Some(rs.window_work(phase) + left);
                if nph > 1 {
                    self.procs[pi].replay_overrun -= left;
                }
            }
        }
        if phase >= nph {
            self.finish_thread(ti);
            return Ok(());
        }
        let d = self.make_dist(pi, group, phase)?;
        if self.dists[d].users == 0 {
            self.dists[d].recompute_mass_from(&self.pte, PTE_TIER, PTE_NONE);
        }
        if self.dists[d].users == 0 {
            self.dists_started.push(d);
        }
        self.dists[d].users += 1;
        let spec = &self.exp.processes[pi].threads[group].phases[phase];
        let th = &mut self.threads[ti];
        th.phase = phase;
        th.dist = Some(d);
        th.m = spec.mlp;
        th.z = spec.compute_ns;
        th.read_frac = spec.read_frac;
        th.misses_per_op = spec.misses_per_op;
        th.phase_work_left = carry;
        th.phase_ops_left = spec.work_ops;
        th.waiting = false;
        th.phase_end_ns = spec
            .duration_s
            .map_or(f64::INFINITY, |s| self.now_ns + s * 1e9);
        Ok(())
    }

    fn finish_thread(&mut self, ti: usize) {
        self.dist_gen += 1;
        let th = &mut self.threads[ti];
        if let Some(d) = th.dist.take() {
            self.dists[d].users -= 1;
            if self.dists[d].users == 0 {
                self.dists_stopped.push(d);
            }
        }
        th.active = false;
        th.done = true;
        th.finish_ns = Some(self.now_ns);
    }

    /// Start processes and threads, allocate and free objects, move threads between phases.
    fn lifecycle(&mut self) -> Result<()> {
        let now = self.now_ns;
        // Processes starting now, together: their first touches are interleaved.
        let costart: Vec<usize> = (0..self.procs.len())
            .filter(|&pi| {
                let p = &self.procs[pi];
                !p.exited && !p.started && p.start_ns <= now
            })
            .collect();
        if costart.len() > 1 {
            self.allocate_interleaved(&costart)?;
        }
        for pi in 0..self.procs.len() {
            if self.procs[pi].exited {
                continue;
            }
            if !self.procs[pi].started {
                if self.procs[pi].start_ns > now {
                    continue;
                }
                self.procs[pi].started = true;
                // bound objects first, then the rest in order (first touch)
                let mut order: Vec<usize> = (0..self.procs[pi].objects.len()).collect();
                order.sort_by_key(|&o| self.procs[pi].objects[o].bind.is_none());
                for oi in order {
                    let o = &self.procs[pi].objects[oi];
                    if o.alloc_ns <= now && !o.live {
                        self.allocate_object(pi, oi)?;
                    }
                }
                for ti in self.procs[pi].threads.clone() {
                    self.threads[ti].active = true;
                    self.enter_phase(ti, 0)?;
                }
                self.tel.processes[pi].alive = true;
            } else {
                for oi in 0..self.procs[pi].objects.len() {
                    let o = &self.procs[pi].objects[oi];
                    if !o.live
                        && o.alloc_ns <= now
                        && o.free_ns.is_none_or(|f| f > now)
                        && !self.procs[pi].exited
                    {
                        self.allocate_object(pi, oi)?;
                    } else if o.live && o.free_ns.is_some_and(|f| f <= now) {
                        self.free_object(pi, oi)?;
                    }
                }
            }
            for ti in self.procs[pi].threads.clone() {
                let th = &self.threads[ti];
                if th.active
                    && !th.waiting
                    && (th.phase_end_ns <= now || th.phase_ops_left.is_some_and(|w| w <= 0.0))
                {
                    let group = th.group;
                    let next = th.phase + 1;
                    if self.exp.processes[pi].threads[group].phases[th.phase].barrier {
                        let th = &mut self.threads[ti];
                        th.waiting = true;
                        th.x = 0.0;
                    } else {
                        self.enter_phase(ti, next)?;
                    }
                }
                // Trace windows end by work; skip windows shorter than what ran past them.
                while self.threads[ti].active
                    && self.threads[ti].phase_work_left.is_some_and(|w| w <= 0.0)
                {
                    let next = self.threads[ti].phase + 1;
                    self.enter_phase(ti, next)?;
                }
            }
            self.release_barrier(pi)?;
            if self.procs[pi].threads.iter().all(|&t| self.threads[t].done) {
                self.exit_process(pi)?;
            }
        }
        for th in self.threads.iter_mut().filter(|t| t.proc_.is_none()) {
            th.active = th.start_ns <= now && th.stop_ns.is_none_or(|s| s > now);
        }
        Ok(())
    }

    /// A level-synchronous barrier: once every live thread of the process waits at the end of
    /// a `barrier` phase, they all enter their next phase (at this epoch's start: a phase that
    /// ends by work is rounded up to whole epochs, as time-bound phases are).
    fn release_barrier(&mut self, pi: usize) -> Result<()> {
        let threads = &self.procs[pi].threads;
        let live = || {
            threads
                .iter()
                .map(|&t| &self.threads[t])
                .filter(|t| !t.done)
        };
        if !live().any(|t| t.waiting) || !live().all(|t| t.waiting) {
            return Ok(());
        }
        for ti in self.procs[pi].threads.clone() {
            if self.threads[ti].waiting {
                let next = self.threads[ti].phase + 1;
                self.enter_phase(ti, next)?;
            }
        }
        Ok(())
    }

    fn exit_process(&mut self, pi: usize) -> Result<()> {
        self.procs[pi].exited = true;
        self.procs[pi].finish_ns = Some(self.now_ns);
        for oi in 0..self.procs[pi].objects.len() {
            self.free_object(pi, oi)?;
        }
        self.tel.processes[pi].alive = false;
        Ok(())
    }

    /// Whether any process is still to start or running (threads with no work bound run until
    /// the experiment's end).
    pub fn all_exited(&self) -> bool {
        self.procs.iter().all(|p| p.exited)
    }

    // ---------------------------------------------------------------- the epoch fixed point

    /// Per-thread share of misses per tier (mass-normalized), or None if the thread is idle.
    fn share(&self, th: &ThreadState, out: &mut [f64]) -> bool {
        out.iter_mut().for_each(|x| *x = 0.0);
        if let Some(t) = th.pinned {
            out[t] = 1.0;
            return true;
        }
        let Some(d) = th.dist else { return false };
        let mass = &self.dists[d].mass;
        let total: f64 = mass.iter().map(|m| m.max(0.0)).sum();
        if total <= 1e-12 {
            return false;
        }
        for (o, m) in out.iter_mut().zip(mass) {
            *o = m.max(0.0) / total;
        }
        true
    }

    /// Solve L_t = curve_t(B_t(L)) for all tiers: Gauss-Seidel over tiers, a bracketed
    /// Illinois (regula falsi) search per tier started from last epoch's latency. Threads with
    /// identical parameters are solved as one group (the antagonist's cores, a workload's
    /// identical workers).
    ///
    /// `flows`: the threads copying pages in their own faults (their [`InlineCopy`] queues) and
    /// the CPU time each has for copying and running this epoch. A copy's traffic loads its
    /// tiers like the threads' misses do, and the time it takes (which grows with the source's
    /// loaded latency) is taken from the time its thread runs.
    fn solve(&mut self, shares: &[f64], idx: &[usize], flows: &[CopyFlow]) {
        let nt = self.ntiers;
        let e = self.epoch_ns;
        // (count, m, z, avail, writebacks per miss, shares, the thread's copy flow)
        type Group<'a> = (f64, f64, f64, f64, f64, &'a [f64], Option<usize>);
        let mut groups: Vec<Group> = Vec::new();
        // threads copying the same pages' worth in the same time copy alike
        let same_copies = |a: Option<usize>, b: Option<usize>| match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                let (fa, fb) = (&flows[a], &flows[b]);
                fa.cpu_ns == fb.cpu_ns
                    && self.threads[fa.thread].copies == self.threads[fb.thread].copies
            }
            _ => false,
        };
        for (k, &ti) in idx.iter().enumerate() {
            let th = &self.threads[ti];
            let s = &shares[k * nt..(k + 1) * nt];
            let wb = th.writebacks_per_miss();
            let flow = flows.iter().position(|f| f.thread == ti);
            match groups.iter_mut().find(|g| {
                same_copies(flow, g.6)
                    && g.1 == th.m
                    && g.2 == th.z
                    && g.3 == th.avail
                    && g.4 == wb
                    && g.5 == s
            }) {
                Some(g) => g.0 += 1.0,
                None => groups.push((1.0, th.m, th.z, th.avail, wb, s, flow)),
            }
        }
        let mut lat = std::mem::take(&mut self.lat);
        let mig = &self.mig_traffic[0];
        let tiers = &self.exp.platform.tiers;
        let gbps = self.exp.platform.costs.copy_gbps;
        let threads = &self.threads;
        // each flow's copying time at the latencies being tried, for its thread's run time
        let used = std::cell::RefCell::new(std::mem::take(&mut self.scratch.copy_used));
        used.borrow_mut().clear();
        used.borrow_mut().resize(flows.len(), 0.0);
        let eval = |lat: &[f64], t: usize| -> f64 {
            let (mut read, w) = mig[t];
            let mut bytes = read + w;
            let mut used = used.borrow_mut();
            for (f, u) in flows.iter().zip(used.iter_mut()) {
                *u = copy_progress(
                    &threads[f.thread].copies,
                    f.cpu_ns,
                    lat,
                    tiers,
                    gbps,
                    |c, b| {
                        if c.from as usize == t {
                            read += b / e;
                            bytes += b / e;
                        }
                        if c.to as usize == t {
                            bytes += b / e;
                        }
                    },
                );
            }
            for &(n, m, z, avail, wb, s, flow) in &groups {
                let avail = match flow {
                    Some(k) => (flows[k].cpu_ns - used[k]).max(0.0) / e,
                    None => avail,
                };
                let l: f64 = s.iter().zip(lat).map(|(a, b)| a * b).sum();
                let r = n * m / (l + m * z) * avail * s[t] * LINE;
                read += r;
                bytes += r * (1.0 + wb);
            }
            let rf = if bytes > 0.0 { read / bytes } else { 1.0 };
            tiers[t].curve.latency_ns(bytes, rf)
        };
        const TOL: f64 = 1e-10;
        for _round in 0..50 {
            let mut change: f64 = 0.0;
            for t in 0..nt {
                let old = lat[t];
                let l0 = tiers[t].curve.unloaded_ns();
                let mut g = |x: f64| {
                    lat[t] = x;
                    eval(&lat, t) - x
                };
                let g0 = g(old);
                let root = if g0.abs() <= TOL * old {
                    old
                } else {
                    // Bracket [a, b] with g(a) > 0 > g(b); g is decreasing in x.
                    let (mut a, mut fa, mut b, mut fb);
                    let mut exact = None;
                    if g0 > 0.0 {
                        (a, fa) = (old, g0);
                        let mut step = g0.max(1e-3 * old);
                        loop {
                            let x = old + step;
                            let fx = g(x);
                            if fx <= 0.0 {
                                (b, fb) = (x, fx);
                                break;
                            }
                            (a, fa) = (x, fx);
                            step *= 2.0;
                        }
                    } else {
                        (b, fb) = (old, g0);
                        let mut x = (old + g0).max(l0);
                        loop {
                            let fx = g(x);
                            if fx >= 0.0 {
                                (a, fa) = (x, fx);
                                break;
                            }
                            (b, fb) = (x, fx);
                            if x <= l0 {
                                exact = Some(l0);
                                (a, fa) = (x, fx);
                                break;
                            }
                            x = l0 + (x - l0) * 0.5;
                        }
                    }
                    match exact {
                        Some(x) => x,
                        None => {
                            let mut side = 0;
                            let mut c = a;
                            for _ in 0..200 {
                                c = (a * fb - b * fa) / (fb - fa);
                                let fc = g(c);
                                if fc.abs() <= TOL * c || (b - a) <= TOL * c {
                                    break;
                                }
                                if fc > 0.0 {
                                    (a, fa) = (c, fc);
                                    if side == 1 {
                                        fb *= 0.5;
                                    }
                                    side = 1;
                                } else {
                                    (b, fb) = (c, fc);
                                    if side == -1 {
                                        fa *= 0.5;
                                    }
                                    side = -1;
                                }
                            }
                            c
                        }
                    }
                };
                lat[t] = root;
                change = change.max((root - old).abs() / old);
            }
            if change < 1e-9 {
                break;
            }
        }
        self.lat = lat;
        self.scratch.copy_used = used.into_inner();
    }

    // ---------------------------------------------------------------- one epoch

    /// Advance one epoch: lifecycle, pending migrations, the fixed point, counters, sampling,
    /// hint faults. Fills `self.tel` for the policy.
    pub fn step(&mut self) -> Result<()> {
        self.step_with(None)
    }

    /// [`Machine::step`], handing each hint fault to `policy` at its instant when it takes them
    /// so ([`Machine::fault_path`]).
    pub fn step_with<'p>(&mut self, policy: Option<&mut (dyn Policy + 'p)>) -> Result<()> {
        if let Some(e) = self.clear_times_error.take() {
            return Err(e);
        }
        if self.undeclared_accessed_bits {
            return Err(SimError::Config {
                at: "policy".into(),
                msg: "it tests accessed bits (Mechanism::test_and_clear_accessed) without declaring TelemetryNeeds::accessed_bits, so the simulated machine kept no clear times; declare it in the policy's needs()".into(),
            });
        }
        let nt = self.ntiers;
        let e = self.epoch_ns;
        self.tel.samples.clear();
        self.tel.hint_faults.clear();
        self.stats.promotions = 0;
        self.stats.demotions = 0;
        self.stats.remaps = 0;
        self.stats.shootdowns = 0;
        self.stats.shootdown_ipis = 0;
        self.stats.migration_cpu_ns = 0.0;
        self.stats.hint_faults = 0;
        self.stats.samples = 0;
        self.lifecycle()?;
        // the last epoch's traffic is spent; this one's is what copies spread into it
        let mut spent = self.mig_traffic.pop_front().unwrap_or_default();
        if self.mig_traffic.is_empty() {
            spent.clear();
            spent.resize(nt, (0.0, 0.0));
            self.mig_traffic.push_back(spent);
        }
        self.mig_traffic_from = self.now_ns;
        self.mig_traffic_settled = false;
        self.run_queue();

        // Threads that run this epoch, their time available after stalls, their tier shares
        // (the buffers are kept from epoch to epoch: an epoch allocates nothing it can reuse).
        let mut idx = std::mem::take(&mut self.scratch.idx);
        let mut shares = std::mem::take(&mut self.scratch.shares);
        let mut s = std::mem::take(&mut self.scratch.share);
        idx.clear();
        shares.clear();
        s.clear();
        s.resize(nt, 0.0);
        // Threads copying pages in their own faults (synchronous migrations) copy before they
        // run, in the time their other stalls leave; a thread that does not run this epoch (its
        // phase over, at a barrier) finishes its copies all the same.
        let mut flows = std::mem::take(&mut self.scratch.flows);
        flows.clear();
        for ti in 0..self.threads.len() {
            self.threads[ti].fault_paid_ns = 0.0;
            self.threads[ti].level = 0.0;
            let th = &self.threads[ti];
            // waiting at a barrier, or its phase's work done (it waits from the next epoch)
            let runs = th.active
                && !th.done
                && !th.waiting
                && !th.phase_ops_left.is_some_and(|w| w <= 0.0)
                && self.share(th, &mut s);
            if !runs && th.copies.is_empty() {
                continue;
            }
            // A time-shared thread (cpu_share < 1) runs that share of the epoch; its stalls
            // (migrations, faults, IPIs) take its CPU time.
            let cpu = e * th.proc_.map_or(1.0, |pi| self.procs[pi].cpu_share);
            let stall = th.stall_ns.min(cpu);
            let th = &mut self.threads[ti];
            th.stall_ns -= stall;
            // the part of the stall its fault-path spans already placed (the spans first)
            let paid = stall.min(th.fault_owed_ns);
            th.fault_owed_ns -= paid;
            if runs {
                th.fault_paid_ns = paid;
                th.avail = (cpu - stall) / e;
                idx.push(ti);
                shares.extend_from_slice(&s);
            }
            if !th.copies.is_empty() {
                let cpu_ns = if runs { th.avail * e } else { cpu - stall };
                flows.push(CopyFlow {
                    thread: ti,
                    cpu_ns,
                    runs,
                });
            }
        }
        // The solve and the sampling are timed every TIMED_EVERY-th epoch and the times scaled
        // up (a clock read costs ~25 ns under a hypervisor: four an epoch were 2% of a run).
        self.timed_epoch = self.timed_epoch.wrapping_add(1);
        let timed = self.timed_epoch.is_multiple_of(TIMED_EVERY);
        let t_solve = timed.then(std::time::Instant::now);
        self.solve(&shares, &idx, &flows);
        if let Some(t) = t_solve {
            self.wall_solve_s += t.elapsed().as_secs_f64() * TIMED_EVERY as f64;
        }
        // The copies' progress at the solved latencies: their bytes, the time they took.
        let mut copied = std::mem::take(&mut self.scratch.copied);
        copied.clear();
        copied.resize(nt, (0.0, 0.0));
        let gbps = self.exp.platform.costs.copy_gbps;
        for f in &flows {
            let th = &mut self.threads[f.thread];
            let (mut done, mut partial) = (0, 0.0);
            let used = copy_progress(
                &th.copies,
                f.cpu_ns,
                &self.lat,
                &self.exp.platform.tiers,
                gbps,
                |c, b| {
                    copied[c.from as usize].0 += b;
                    copied[c.to as usize].1 += b;
                    if b >= c.bytes {
                        done += 1;
                    } else {
                        partial = b;
                    }
                },
            );
            th.copies.drain(..done);
            if let Some(c) = th.copies.front_mut() {
                c.bytes -= partial;
            }
            if f.runs {
                th.avail = ((f.cpu_ns - used) / e).max(0.0);
            }
            let paid = used.min(th.fault_owed_ns);
            th.fault_owed_ns -= paid;
            if f.runs {
                th.fault_paid_ns += paid;
            }
            self.stats.migration_cpu_ns += used;
        }
        for &ti in &idx {
            let th = &mut self.threads[ti];
            th.level = th.avail + th.fault_paid_ns / e;
        }

        // Rates, misses, counters.
        let cyc = self.cpu_ghz;
        let mut tc = std::mem::take(&mut self.tel.tier_counters);
        tc.clear();
        tc.resize(nt, TierCounters::default());
        let mut not_empty_prod = std::mem::take(&mut self.scratch.not_empty_prod);
        not_empty_prod.clear();
        not_empty_prod.resize(nt, 1.0);
        self.tel.cores.clear();
        self.stats.latency_ns.clone_from(&self.lat);
        self.stats.app_misses.clear();
        self.stats.app_misses.resize(nt, 0.0);
        for d in &mut self.dists {
            d.rate = 0.0;
            d.rate_full = 0.0;
        }
        let mut lat = std::mem::take(&mut self.scratch.lat);
        lat.clone_from(&self.lat);
        for (k, &ti) in idx.iter().enumerate() {
            let sh = &shares[k * nt..(k + 1) * nt];
            let th = &mut self.threads[ti];
            let l: f64 = sh.iter().zip(&lat).map(|(a, b)| a * b).sum();
            let x = th.m / (l + th.m * th.z);
            let mut run_ns = th.avail * e;
            for w in [th.work_left, th.phase_ops_left].into_iter().flatten() {
                let need = w.max(0.0) * th.misses_per_op / x;
                if need < run_ns {
                    run_ns = need;
                }
            }
            th.x = x;
            let misses = x * run_ns;
            let ops = misses / th.misses_per_op;
            if let Some(w) = th.work_left.as_mut() {
                *w -= ops;
            }
            if let Some(w) = th.phase_work_left.as_mut() {
                *w -= misses;
            }
            if let Some(w) = th.phase_ops_left.as_mut() {
                *w -= ops;
            }
            if let Some(d) = th.dist {
                self.dists[d].rate += x * run_ns / e;
                self.dists[d].rate_full += x;
            }
            let wb = th.writebacks_per_miss();
            let busy = (x * l / th.m).min(1.0); // b = q / m
            let frac = run_ns / e;
            // The share of its misses whose loads a prefetcher covered (the samplers drop them
            // the same way: `sample`), taken over its regions as if each tier held the same mix.
            let covered = th.dist.map_or(0.0, |d| {
                let cap = 1.0 - 1.0 / th.m.max(1.0);
                self.dists[d]
                    .regions
                    .iter()
                    .map(|r| r.w * r.prefetched.min(cap))
                    .sum::<f64>()
            });
            for t in 0..nt {
                let mt = misses * sh[t];
                let q = x * sh[t] * lat[t];
                tc[t].llc_misses += mt;
                tc[t].l3_miss_loads += mt * (1.0 - covered);
                tc[t].tor_inserts += mt;
                tc[t].tor_occupancy += q * run_ns * cyc;
                tc[t].bytes_read += mt * LINE;
                tc[t].bytes_written += mt * wb * LINE;
                not_empty_prod[t] *= 1.0 - (q / th.m).min(1.0) * frac;
            }
            if let Some(pi) = th.proc_ {
                let p = &mut self.procs[pi];
                p.ops += ops;
                for ((pm, am), share) in p
                    .misses
                    .iter_mut()
                    .zip(self.stats.app_misses.iter_mut())
                    .zip(sh)
                {
                    *pm += misses * share;
                    *am += misses * share;
                }
                self.tel.cores.push(CoreCounters {
                    pid: pi as u32,
                    tid: th.tid,
                    cycles: e * cyc,
                    stalls_l3_miss: busy * run_ns * cyc,
                    oro_cycles_with_demand_rd: busy * run_ns * cyc,
                    oro_demand_rd: x * l * run_ns * cyc,
                    offcore_demand_rd: misses,
                    llc_misses: misses,
                    ops,
                });
            }
            if th.work_left.is_some_and(|w| w <= 1e-9) {
                // the finish time inside the epoch; the clock is then restored as it was
                // (adding and subtracting `run_ns` could leave it off by an ulp, off whole ns)
                let now = self.now_ns;
                self.now_ns += run_ns;
                self.finish_thread(ti);
                self.now_ns = now;
            }
        }
        for t in 0..nt {
            tc[t].tor_not_empty_cycles = (1.0 - not_empty_prod[t]) * e * cyc;
            let (r, w) = self.mig_traffic[0][t];
            tc[t].bytes_read += r * e + copied[t].0;
            tc[t].bytes_written += w * e + copied[t].1;
        }
        self.mig_traffic_settled = true;
        if self.counter_noise > 0.0 {
            let sd = self.counter_noise;
            for c in &mut tc {
                let n = 1.0 + sd * self.rng_noise.normal();
                c.tor_occupancy *= n.max(0.0);
                c.tor_not_empty_cycles = (c.tor_not_empty_cycles
                    * (1.0 + sd * self.rng_noise.normal()).max(0.0))
                .min(e * cyc);
            }
        }
        self.stats.bytes.clear();
        self.stats
            .bytes
            .extend(tc.iter().map(|c| c.bytes_read + c.bytes_written));
        self.tel.tier_counters = tc;
        self.scratch.not_empty_prod = not_empty_prod;
        self.scratch.lat = lat;

        let t_sample = timed.then(std::time::Instant::now);
        self.sample(&idx, &shares);
        self.hint_scan_and_faults(policy);
        if let Some(t) = t_sample {
            self.wall_sample_s += t.elapsed().as_secs_f64() * TIMED_EVERY as f64;
        }

        let t_end = self.now_ns + e;
        if self.fault_path {
            self.place_fault_spans(self.now_ns, t_end);
        }
        let mut resumed = false;
        for d in &mut self.dists {
            // A phase whose threads all stalled last epoch runs again: pages marked while it
            // stood still fault at their next access now (replace_marked).
            resumed |= d.users > 0 && d.rate > 0.0 && d.stalled;
            d.stalled = d.users > 0 && d.rate <= 0.0;
            d.record(t_end, e, d.rate);
        }
        if resumed {
            self.dist_gen += 1;
        }
        self.settle_busy();
        self.now_ns += e;
        self.tel.now_ns = self.now_ns as u64;
        for (i, ti) in self.tel.tiers.iter_mut().enumerate() {
            ti.used_pages = self.used[i];
            ti.capacity_pages = self.cap[i];
        }
        for (pi, p) in self.procs.iter().enumerate() {
            let info = &mut self.tel.processes[pi];
            info.rss_pages.clone_from(&p.resident);
            info.promotions = p.promotions;
            info.demotions = p.demotions;
            info.demote_promoted = p.demote_promoted;
            info.migration_enabled = p.migration_enabled;
        }
        for (o, info) in self
            .procs
            .iter()
            .flat_map(|p| &p.objects)
            .zip(self.tel.objects.iter_mut())
        {
            info.live = o.live;
        }
        self.scratch.idx = idx;
        self.scratch.shares = shares;
        self.scratch.share = s;
        self.scratch.flows = flows;
        self.scratch.copied = copied;
        Ok(())
    }

    fn sample(&mut self, idx: &[usize], shares: &[f64]) {
        let Some((period, filter)) = self.sampling else {
            return;
        };
        let nt = self.ntiers;
        let e = self.epoch_ns;
        let cost = self.exp.platform.costs.sample_ns;
        let t0 = self.now_ns;
        // What each running thread samples this epoch: (thread, process, phase distribution,
        // the generator's next draws per kind: (expected samples, restrict to slow tiers,
        // is_store)).
        let mut plan = std::mem::take(&mut self.sample_plan);
        plan.clear();
        for (k, &ti) in idx.iter().enumerate() {
            let th = &self.threads[ti];
            let (Some(pi), Some(d)) = (th.proc_, th.dist) else {
                continue;
            };
            let sh = &shares[k * nt..(k + 1) * nt];
            let misses = th.x * th.avail * e;
            let stores_per_miss = (1.0 - th.read_frac) / th.read_frac;
            let kinds: [(f64, bool, bool); 2] = match filter {
                SampleFilter::AllMisses => [
                    (misses / period as f64, false, false),
                    (misses * stores_per_miss / period as f64, false, true),
                ],
                SampleFilter::Loads => [(misses / period as f64, false, false), (0.0, false, true)],
                SampleFilter::SlowLoads => [
                    (misses * (1.0 - sh[0]) / period as f64, true, false),
                    (0.0, true, true),
                ],
            };
            plan.push(SamplePlan {
                thread: ti,
                pid: pi as u32,
                dist: d,
                tid: th.tid,
                m: th.m.max(1.0),
                kinds,
            });
        }
        // Draw ahead: a copy of the generator makes the epoch's draws as the pass below would
        // make them if no page draw were retried (a retry happens when the page drawn has no
        // tier, or is fast where only slow loads are sampled: that depends on the page table),
        // and asks for each drawn page's tier entry (a cache miss in a large page table), so
        // that the entries are in cache when the pass reads them. The pass then takes these
        // draws as its own up to the first retry; there it makes the same draws again from the
        // epoch's first state up to that page (`draw_ahead` with a stop), and draws on from
        // there as before. Either way every draw is what drawing one by one gives. (Keeping the
        // generator's state after every draw instead cost more than the replay: a 32-byte copy
        // a sample, read back just after the draw had stored it.)
        let mut ahead = std::mem::take(&mut self.sample_ahead);
        ahead.clear();
        let mut counts = std::mem::take(&mut self.sample_counts);
        counts.clear();
        let mut look = self.rng_sample.clone();
        let one_by_one = self.modes().sample_one_by_one;
        if !one_by_one {
            let pte = &self.pte;
            draw_ahead(
                &plan,
                &self.dists,
                &mut look,
                None,
                |n| counts.push(n),
                |p, r, tail| {
                    memory::prefetch(&pte[p as usize]);
                    ahead.push(DrawnAhead {
                        page: p,
                        region: r as u32,
                        tail,
                    });
                },
            );
        }
        // Whether the pass still follows the draws made ahead (no retry so far).
        let mut follows = !one_by_one;
        let (mut next_draw, mut next_count) = (0usize, 0usize);
        for sp in &plan {
            let th_m = sp.m;
            let mut n_total = 0u64;
            for (lambda, slow_only, is_store) in sp.kinds {
                let n = if follows {
                    counts[next_count]
                } else {
                    self.rng_sample.poisson(lambda)
                };
                next_count += 1;
                for _ in 0..n {
                    let dist = &self.dists[sp.dist];
                    let usable = |t: u8| t != NONE && (!slow_only || t != 0);
                    let mut page = None;
                    let mut tries = 0;
                    if follows {
                        let a = &ahead[next_draw];
                        let t = pte_tier(self.pte[a.page as usize]);
                        tries = 1;
                        if usable(t) {
                            page = Some((a.page, t, dist.regions[a.region as usize].prefetched));
                        } else {
                            // on from the generator's state right after this page's draw
                            let mut r = self.rng_sample.clone();
                            let stop = Some(next_draw);
                            draw_ahead(&plan, &self.dists, &mut r, stop, |_| {}, |_, _, _| {});
                            self.rng_sample = r;
                            follows = false;
                        }
                    }
                    while page.is_none() && tries < 64 {
                        let (p, r) = dist.sample_region(&mut self.rng_sample);
                        let t = pte_tier(self.pte[p as usize]);
                        if usable(t) {
                            page = Some((p, t, dist.regions[r].prefetched));
                        }
                        tries += 1;
                    }
                    let Some((p, t, prefetched)) = page else {
                        continue;
                    };
                    let tail = if follows {
                        next_draw += 1;
                        ahead[next_draw - 1].tail
                    } else {
                        SampleTail::draw(
                            &mut self.rng_sample,
                            prefetched,
                            is_store,
                            slow_only,
                            th_m,
                        )
                    };
                    let Some(tail) = tail else {
                        continue;
                    };
                    let full = self.lat[t as usize];
                    let lat = if tail.covered {
                        full / th_m * (0.5 + tail.lat_u)
                    } else {
                        full * (0.75 + 0.5 * tail.lat_u)
                    };
                    let time = t0 + tail.time_u * e;
                    self.tel.samples.push(Sample {
                        page: PageId(p as u64),
                        tier: t,
                        is_store,
                        pid: sp.pid,
                        tid: sp.tid,
                        latency_ns: lat as f32,
                        // the stall the thread's other misses in flight did not hide: the
                        // model's own stall per miss, l / m
                        exposed_ns: (lat / th_m) as f32,
                        time_ns: time as u64,
                    });
                    n_total += 1;
                }
            }
            self.threads[sp.thread].stall_ns += n_total as f64 * cost;
            self.stats.samples += n_total;
        }
        if follows {
            self.rng_sample = look;
        }
        self.sample_ahead = ahead;
        self.sample_counts = counts;
        self.sample_plan = plan;
        // Keep samples in time order, as a PEBS buffer delivers them.
        let sc = &mut self.scratch;
        sort_samples(&mut self.tel.samples, &mut sc.sort_keys, &mut sc.sorted);
    }

    /// Mark pages for hint faults (the fixed-rate marker, or Linux's scanner per process), then
    /// deliver this epoch's faults in time order.
    fn hint_scan_and_faults<'p>(&mut self, policy: Option<&mut (dyn Policy + 'p)>) {
        let e = self.epoch_ns;
        let end = self.now_ns + e;
        for pi in 0..self.procs.len() {
            let p = &self.procs[pi];
            if !p.started || p.exited {
                continue;
            }
            let Some(cfg) = self.scan_pid.get(&pi).copied().or(self.scan) else {
                continue;
            };
            match cfg {
                ScanCfg::Fixed {
                    period_ms,
                    pages,
                    tiers,
                } => {
                    if !p.migration_enabled || pages == 0 || period_ms <= 0.0 {
                        continue;
                    }
                    let credit = p.scan_credit + pages as f64 * (e / (period_ms * 1e6));
                    let n = credit.floor() as u64;
                    let (base, len, mut cursor) = (p.base, p.pages, p.scan_cursor);
                    self.procs[pi].scan_credit = credit - n as f64;
                    for _ in 0..n.min(len as u64) {
                        let page = base + cursor;
                        cursor = (cursor + 1) % len;
                        let mark = self.now_ns + self.rng_fault.f64() * e;
                        self.mark(page, tiers, mark, false);
                    }
                    self.procs[pi].scan_cursor = cursor;
                }
                ScanCfg::Numa(s) => self.numa_scan(pi, &s, end),
            }
        }
        self.replace_marked();
        self.deliver_faults(end, policy.filter(|_| self.fault_path));
    }

    /// change_pte_range for one page under prot_numa: a present page not already PROT_NONE
    /// (pte_protnone), and in tiering-only mode not on the top tier, gets marked at `at` and
    /// faults at its first access after it. Returns whether the PTE was updated.
    ///
    /// `cpu_node_skip`: the page table belongs to a single-threaded process (mm_users == 1), so
    /// change_pte_range's `target_node` is the scanning CPU's node, and a page already on it is
    /// left alone ("Don't mess with PTEs if page is already on the node a single-threaded
    /// process is running on", mm/mprotect.c). The simulated CPUs are all on the top tier's
    /// node, so that is tier 0; it matters only where the top tier is scanned at all (Colloid's
    /// COLLOID bit, `ScanTiers::All`).
    fn mark(&mut self, page: u32, tiers: ScanTiers, at: f64, cpu_node_skip: bool) -> bool {
        let t = pte_tier(self.pte[page as usize]);
        if t == NONE || (t == 0 && (tiers == ScanTiers::SlowOnly || cpu_node_skip)) {
            return false;
        }
        let f = &mut self.pte[page as usize];
        // a pinned or mlocked page never moves: it is left unmarked (`ObjectSpec::mlocked`)
        if *f & (F_MARKED | F_PINNED) != 0 {
            return false;
        }
        *f |= F_MARKED;
        // a swept page faults when the pass next reaches it; any other at a Poisson arrival
        let need = match self.sweep_need(page, at) {
            Some(n) => n as f32,
            None => self.rng_fault.exp(1.0) as f32,
        };
        self.place_marked(page, at as u64, 0.0, at, need);
        true
    }

    /// The touches a page of a swept region (`in_order`) has to see after `at` before the pass
    /// of the one running phase that sweeps it reaches it (None: no such phase).
    fn sweep_need(&self, page: u32, at: f64) -> Option<f64> {
        if !self.swept {
            return None;
        }
        let pi = self.proc_of(page);
        self.procs[pi]
            .dist_of
            .values()
            .map(|&d| &self.dists[d])
            .filter(|dd| dd.users > 0)
            .find_map(|dd| dd.sweep_need(page, at))
    }

    /// Schedule the fault of a marked page (marked at `mark`) that has seen `seen` of the `need`
    /// accesses its fault waits for by time `from`: on the cumulative misses of the one running
    /// phase that accesses it, in the time heap when several do, or among the idle marked pages
    /// when none does (PROT_NONE until its next access, however late that comes: do_numa_page).
    fn place_marked(&mut self, page: u32, mark: u64, seen: f64, from: f64, need: f32) {
        let pi = self.proc_of(page);
        let mut one = None;
        let mut n = 0;
        for &d in self.procs[pi].dist_of.values() {
            let dd = &self.dists[d];
            if dd.users > 0 {
                let pmf = dd.touch_pmf(page);
                if pmf > 0.0 {
                    n += 1;
                    one = Some((d, pmf));
                }
            }
        }
        match (n, one) {
            (1, Some((d, pmf))) => {
                let thr = self.dists[d].cum_at(from) + (need as f64 - seen).max(0.0) / pmf;
                if self.count_faults.len() < self.dists.len() {
                    self.count_faults
                        .resize_with(self.dists.len(), MinQueue::new);
                }
                self.count_faults[d].push((thr.to_bits(), page, mark, need.to_bits()));
            }
            _ => match self.next_fault_at(page, from, seen, need) {
                Some(at) => self
                    .faults
                    .push((at.ceil() as u64, page, mark, need.to_bits())),
                None => self.idle_marked.push((page, mark, need)),
            },
        }
    }

    /// When to check whether a marked page that has seen `seen` of the `need` accesses its
    /// fault waits for has had them. Within the current epoch the phases' rates are known, so a
    /// fault that falls in it is placed exactly (one check). One that does not is checked again
    /// as soon as it could have come at the rate its threads access the page while they run
    /// (never late), but not before the epoch's end: at most one check per epoch for a page
    /// whose threads stall, instead of a geometric series of early checks. None while no
    /// thread's phase touches the page.
    fn next_fault_at(&self, page: u32, from: f64, seen: f64, need: f32) -> Option<f64> {
        let pi = self.proc_of(page);
        let (mut full, mut now) = (0.0, 0.0);
        for &d in self.procs[pi].dist_of.values() {
            let dd = &self.dists[d];
            if dd.users > 0 && dd.rate_full > 0.0 {
                let pmf = dd.touch_pmf(page);
                full += dd.rate_full * pmf;
                now += dd.rate * pmf;
            }
        }
        if full <= 0.0 {
            return None;
        }
        let rem = (need as f64 - seen).max(0.0);
        let end = self.now_ns + self.epoch_ns;
        if now > 0.0 {
            let exact = from + rem / now;
            if exact < end {
                return Some(exact.max(from + 1.0));
            }
        }
        Some((from + rem / full).max(end).max(from + 1.0))
    }

    /// Place marked pages again where the phases that access them changed since the last
    /// epoch: those waiting on a phase that lost its threads, those waiting on a phase of the
    /// same process beside one that started, and the idle ones once a phase started; and the
    /// stalled ones whenever the access distributions moved (`dist_gen`).
    fn replace_marked(&mut self) {
        let started = std::mem::take(&mut self.dists_started);
        let stopped = std::mem::take(&mut self.dists_stopped);
        let mut moved: Vec<(u32, u64, f32)> = Vec::new();
        let mut drain = |queue: &mut FaultQueue| {
            moved.extend(
                queue
                    .drain()
                    .map(|(_, page, mark, need)| (page, mark, f32::from_bits(need))),
            );
        };
        for &d in &stopped {
            if self.dists[d].users == 0 && d < self.count_faults.len() {
                drain(&mut self.count_faults[d]);
            }
        }
        for &s in &started {
            let (pi, lo, hi) = (self.dists[s].proc_, self.dists[s].lo, self.dists[s].hi);
            for &d in self.procs[pi].dist_of.values() {
                let dd = &self.dists[d];
                if d != s && d < self.count_faults.len() && dd.lo < hi && lo < dd.hi {
                    drain(&mut self.count_faults[d]);
                }
            }
        }
        if !started.is_empty() {
            moved.append(&mut self.idle_marked);
        }
        if self.stalled_checked_gen != self.dist_gen {
            self.stalled_checked_gen = self.dist_gen;
            moved.append(&mut self.stalled_marked);
        }
        let now = self.now_ns;
        for (page, mark, need) in moved {
            if !pte_marked(self.pte[page as usize]) {
                continue;
            }
            let seen = self.page_accesses_between(page, mark as f64, now);
            self.place_marked(page, mark, seen, now, need);
        }
    }

    /// The windows of Linux's scanner (task_numa_work) for process `pi` that fall before `end`,
    /// each at its own instant: the first `scan_delay_ms` after the process started, then one
    /// every numa_scan_period of CPU time (task_tick_numa counts `sum_exec_runtime`; a process
    /// has `cpu_share` of a CPU). With `arm_on_exec`, as Linux starts an exec'd program:
    ///
    /// - after `scan_delay_ms` of CPU time (p->numa_scan_period starts at the delay) the first
    ///   tick sets numa_scan_period = task_scan_start and queues the work; on a new address
    ///   space (exec: mm->numa_next_scan is 0) that work only sets mm->numa_next_scan
    ///   `scan_delay_ms` of wall time ahead and returns;
    /// - the ticks after it queue the work every numa_scan_period of CPU time, but only once the
    ///   wall clock has passed mm->numa_next_scan: the first window is at the first such tick
    ///   (2 x scan_delay_ms after the start with a whole CPU; measured in the guest,
    ///   docs/validation.md section 1w), then one every numa_scan_period.
    fn numa_scan(&mut self, pi: usize, s: &NumaScan, end: f64) {
        let page_bytes = self.page_bytes as u64;
        let (budget, virt) = numa_scan::window_budgets(s);
        loop {
            let p = &mut self.procs[pi];
            let next = *p.numa.next_ns.get_or_insert_with(|| {
                // with arm_on_exec, the first tick comes after scan_delay_ms of CPU time
                let share = if s.arm_on_exec { p.cpu_share } else { 1.0 };
                p.start_ns + s.scan_delay_ms * 1e6 / share
            });
            if next >= end {
                return;
            }
            let rss = p.resident.iter().sum::<u64>() * page_bytes;
            if p.numa.period_ms == 0 {
                // task_tick_numa's first tick: numa_scan_period = task_scan_start.
                p.numa.period_ms = numa_scan::scan_start_ms(s, rss);
            }
            // numa_scan_period of CPU time, in wall time
            let step = p.numa.period_ms as f64 * 1e6 / p.cpu_share;
            if s.arm_on_exec && !p.numa.armed {
                // task_numa_work on a new mm: `if (!mm->numa_next_scan) mm->numa_next_scan = now
                // + scan_delay`, then `time_before(now, migrate)`: return. The ticks every
                // period of CPU time after it queue no work until the wall clock passes it.
                p.numa.armed = true;
                // ticks to wait: ceil(scan_delay of wall time / step), at least one (the
                // epsilon keeps an exact multiple from rounding up a tick)
                let ticks = ((s.scan_delay_ms * 1e6 / step) - 1e-9).ceil().max(1.0);
                p.numa.next_ns = Some(next + ticks * step);
                continue;
            }
            // task_tick_numa queues the work once the task ran numa_scan_period of CPU time
            // since the last (node_stamp), and task_numa_work runs it once the wall clock
            // passed mm->numa_next_scan (the period again): the later of the two.
            p.numa.next_ns = Some(next + step);
            p.numa.windows += 1;
            if !p.migration_enabled || p.pages == 0 {
                continue;
            }
            self.numa_window(pi, s, next, budget, virt);
        }
    }

    /// The thread that runs the process's next scanner window, and the process's live threads
    /// (get_nr_threads): the live threads take turns.
    fn numa_current(&mut self, pi: usize, now: f64) -> (u32, u64) {
        let p = &self.procs[pi];
        let live: Vec<u32> = p
            .threads
            .iter()
            .map(|&ti| &self.threads[ti])
            .filter(|t| !t.done && t.start_ns <= now)
            .map(|t| t.tid)
            .collect();
        let p = &mut self.procs[pi];
        let k = p.numa.next_thread;
        p.numa.next_thread = k.wrapping_add(1);
        if live.is_empty() {
            return (1, 1);
        }
        // a task's pid: never 0
        (live[k % live.len()] + 1, live.len() as u64)
    }

    /// One window of task_numa_work (6.x) over the process's VMAs (its objects, in order): from
    /// the offset where the last one stopped, VMA by VMA, skipping the unsuitable (pinned), the
    /// new (for scan_delay), the ones this pass already scanned and the ones the running thread
    /// has not faulted in lately; each scanned in ranges of the remaining budget aligned up to
    /// 2 MiB, a range costing the `pages` budget only if it updated a PTE and always `virtpages`.
    /// Reaching the end with VMAs skipped for their pids, it starts over and force-scans the
    /// first of them, then stops; reaching the end otherwise ends the pass.
    fn numa_window(&mut self, pi: usize, s: &NumaScan, now: f64, budget: u64, virt: u64) {
        let page_bytes = self.page_bytes as u64;
        let huge = (2u64 << 20).max(page_bytes);
        if budget == 0 {
            return; // task_numa_work: `if (!pages) return;`
        }
        let (pid, nr_threads) = self.numa_current(pi, now);
        // change_pte_range's target_node, for a single-threaded process's PTEs: a huge page goes
        // through change_huge_pmd, which has no such check (mm/huge_memory.c)
        let cpu_node_skip = nr_threads == 1 && page_bytes < huge;
        let nobj = self.procs[pi].objects.len();
        if self.procs[pi].numa.vmas.len() < nobj {
            self.procs[pi].numa.vmas.resize(nobj, Default::default());
        }
        let base = self.procs[pi].base as u64;
        let (mut pages, mut virtpages) = (budget as i64, virt as i64);
        let (mut skipped, mut forced) = (false, false);
        // mm->numa_scan_offset, in pages from the process's first page
        let mut offset = self.procs[pi].numa.cursor as u64;
        loop {
            // retry_pids:
            let mut start = offset;
            let vma_from = |p: &ProcState, at: u64| {
                p.objects
                    .iter()
                    .position(|o| o.live && (o.first + o.pages) as u64 > base + at)
                    .map(|oi| p.objects[oi].vma_head)
            };
            let first = match vma_from(&self.procs[pi], start) {
                Some(oi) => Some(oi),
                None => {
                    // reset_ptenuma_scan: the pass is over; start again at the first VMA
                    let p = &mut self.procs[pi];
                    p.numa.seq += 1;
                    offset = 0;
                    start = 0;
                    vma_from(p, 0)
                }
            };
            let Some(first) = first else {
                self.procs[pi].numa.cursor = 0;
                return;
            };
            // Some(oi): the loop stopped in or after VMA oi (the kernel's vma is not NULL)
            let mut stopped = None;
            for oi in first..nobj {
                let (live, pinned, vs, ve) = {
                    let objs = &self.procs[pi].objects;
                    if objs[oi].vma_head != oi {
                        continue; // inside the VMA of an object before it
                    }
                    // the VMA: this object and the ones after it that continue it
                    let n = objs[oi..].iter().take_while(|x| x.vma_head == oi).count();
                    let vma = &objs[oi..oi + n];
                    let end = vma[n - 1].first + vma[n - 1].pages;
                    (
                        vma.iter().any(|x| x.live),
                        vma[0].pinned,
                        vma[0].first as u64 - base,
                        end as u64 - base,
                    )
                };
                if !live || pinned || ve == vs {
                    continue;
                }
                let seq = self.procs[pi].numa.seq;
                let v = &mut self.procs[pi].numa.vmas[oi];
                v.meet(s, seq, now);
                if seq > 0 && now < v.next_scan_ns {
                    continue;
                }
                if seq > 0 {
                    v.age_pids(s, now);
                }
                if v.prev_scan_seq == seq as i64 {
                    offset = ve;
                    continue;
                }
                if !forced && !v.is_accessed(seq, pid, offset, vs, nr_threads) {
                    skipped = true;
                    continue;
                }
                let mut out = false;
                loop {
                    start = start.max(vs);
                    let end_b = (start * page_bytes + pages as u64).div_ceil(huge) * huge;
                    let end = end_b.div_ceil(page_bytes).clamp(start + 1, ve);
                    let mut updated = 0u64;
                    for k in start..end {
                        updated += self.mark((base + k) as u32, s.tiers, now, cpu_node_skip) as u64;
                    }
                    let bytes = ((end - start) * page_bytes) as i64;
                    virtpages -= bytes;
                    if updated > 0 {
                        pages -= bytes;
                    }
                    start = end;
                    if pages <= 0 || virtpages <= 0 {
                        out = true;
                        break;
                    }
                    if end == ve {
                        break;
                    }
                }
                if out {
                    stopped = Some(oi);
                    break;
                }
                self.procs[pi].numa.vmas[oi].prev_scan_seq = self.procs[pi].numa.seq as i64;
                if forced {
                    stopped = Some(oi);
                    break;
                }
            }
            if stopped.is_none() && !forced && skipped {
                forced = true;
                self.procs[pi].numa.forced += 1;
                continue;
            }
            // out:
            let p = &mut self.procs[pi];
            if stopped.is_some() {
                p.numa.cursor = start as u32;
            } else {
                p.numa.seq += 1;
                p.numa.cursor = 0;
            }
            return;
        }
    }

    /// Deliver the hint faults due before `end`: the faulting thread is drawn by its share of
    /// the page's accesses (its miss rate times the share of the epoch it ran), stalls for the
    /// fault, and Linux's scanner accounts the fault where
    /// task_numa_fault would (a top-tier page; a slow-tier page in tiering mode returns early).
    ///
    /// With `policy` (on the fault path) each fault goes to `Policy::on_fault` at its instant
    /// and its actions are carried out there; the thread is busy for the fault and for what it
    /// migrated in it, and a fault that only busy threads could take waits for the first of
    /// them (do_numa_page runs in the faulting thread, which touches nothing else meanwhile).
    fn deliver_faults<'p>(&mut self, end: f64, mut policy: Option<&mut (dyn Policy + 'p)>) {
        let cost = self.exp.platform.costs.hint_fault_us * 1e3;
        // On the fault path a phase's rate falls while its threads are in faults (`LiveRates`):
        // its pages' faults are placed one at a time, in order with the others.
        let live = policy.is_some();
        if live {
            self.live_start();
        }
        // Off it, pages whose phase's cumulative misses reach their fault's count this epoch
        // fault at the instant they do (the phase's rate is steady within the epoch).
        let now = self.now_ns;
        if !live {
            for d in 0..self.count_faults.len() {
                let dd = &self.dists[d];
                if self.count_faults[d].is_empty() || dd.rate <= 0.0 {
                    continue;
                }
                let (rate, c_now) = (dd.rate, dd.cum_at(now));
                let c_end = c_now + rate * (end - now);
                while let Some(&(thr, page, mark, _)) = self.count_faults[d].peek() {
                    let thr = f64::from_bits(thr);
                    if thr > c_end {
                        break;
                    }
                    self.count_faults[d].pop();
                    let at = (now + (thr - c_now).max(0.0) / rate).max(mark as f64);
                    // need 0: the accesses are already counted, the fault comes at `at`
                    self.faults
                        .push((at.ceil() as u64, page, mark, 0f32.to_bits()));
                }
            }
        }
        loop {
            if live && self.live_next(end) {
                continue;
            }
            // the policy's timer, when it comes before the next fault (`Policy::next_timer_ns`)
            if let Some(p) = policy.as_deref_mut() {
                let next_fault = self.faults.peek().map_or(u64::MAX, |r| r.0);
                let after = self.last_timer_ns.map_or(0, |l| l + 1);
                if let Some(t) = p.next_timer_ns().map(|t| t.max(now as u64).max(after)) {
                    if (t as f64) < end && t <= next_fault {
                        self.timer_call(p, t);
                        continue;
                    }
                }
            }
            let Some(&(at, page, mark, need_bits)) = self.faults.peek() else {
                break;
            };
            if at as f64 >= end {
                break;
            }
            self.faults.pop();
            if need_bits == RESUME {
                // `page` is a thread out of its fault: its next deferred fault
                self.resume_faults(page as usize, at, cost, policy.as_deref_mut());
                continue;
            }
            let pi = self.proc_of(page);
            if !pte_marked(self.pte[page as usize]) {
                continue;
            }
            // Has the page had the accesses its fault waits for? Not if its threads stalled or
            // slowed since the check was scheduled: check again when it will have.
            let need = f32::from_bits(need_bits);
            let seen = self.page_accesses_between(page, mark as f64, at as f64);
            if seen < need as f64 * (1.0 - 1e-6) {
                match self.next_fault_at(page, at as f64, seen, need) {
                    Some(next) => self
                        .faults
                        .push((next.ceil() as u64, page, mark, need_bits)),
                    None => self.idle_marked.push((page, mark, need)),
                }
                continue;
            }
            self.pte[page as usize] &= !F_MARKED;
            let mut best = None;
            let mut total = 0.0;
            let on_path = policy.is_some();
            let mut any_busy = false;
            let mut memo = None;
            for &ti in &self.procs[pi].threads {
                // A thread stalled for the whole epoch (in a synchronous migration, say) makes
                // no access, so it cannot take the fault: the page stays marked until its
                // threads run again.
                let w = self.touch_weight_memo(ti, page, &mut memo);
                if w > 0.0 {
                    if on_path && self.threads[ti].busy_until > at as f64 {
                        any_busy = true;
                        continue;
                    }
                    total += w;
                    if self.rng_fault.f64() * total < w {
                        best = Some(ti);
                    }
                }
            }
            if best.is_none() && any_busy {
                // every thread that touches the page is in a fault: the first one out takes it,
                // after the faults that already wait for one of them
                self.pte[page as usize] |= F_MARKED;
                self.defer_fault(pi, page, mark, at);
                continue;
            }
            let Some(ti) = best else {
                // Its threads all stalled this epoch: the page stays marked and faults at their
                // next access (one phase counts it at once; several wait for dist_gen).
                self.pte[page as usize] |= F_MARKED;
                self.stalled_marked.push((page, mark, 0.0));
                continue;
            };
            self.take_fault(ti, page, mark, at, cost, policy.as_deref_mut());
        }
        self.live.on = false;
    }

    /// The epoch's live rates at its start: each phase's rate with what its threads paid here
    /// for spans placed before given back, less the threads still in a fault.
    fn live_start(&mut self) {
        let (now, e) = (self.now_ns, self.epoch_ns);
        let lv = &mut self.live;
        lv.t.clear();
        lv.t.resize(self.dists.len(), now);
        lv.c.clear();
        lv.c.extend(self.dists.iter().map(|d| d.cum_at(now)));
        lv.r.clear();
        lv.r.extend(self.dists.iter().map(|d| d.rate));
        lv.busy.clear();
        lv.busy.resize(self.threads.len(), false);
        lv.ends.clear();
        lv.pts_t.resize_with(self.dists.len(), Vec::new);
        lv.pts_c.resize_with(self.dists.len(), Vec::new);
        for k in 0..self.dists.len() {
            lv.pts_t[k].clear();
            lv.pts_t[k].push(now);
            lv.pts_c[k].clear();
            lv.pts_c[k].push(lv.c[k]);
        }
        lv.on = true;
        for (ti, th) in self.threads.iter().enumerate() {
            let Some(d) = th.dist.filter(|_| th.level > 0.0) else {
                continue;
            };
            lv.r[d] += th.x * th.fault_paid_ns / e;
            if th.busy_until > now {
                lv.r[d] -= th.x * th.level;
                lv.busy[ti] = true;
                lv.ends.push(Reverse((th.busy_until.ceil() as u64, ti)));
            }
        }
    }

    /// Bring phase `d`'s live count to `t`.
    fn live_advance(&mut self, d: usize, t: f64) {
        let lv = &mut self.live;
        if t > lv.t[d] {
            lv.c[d] += lv.r[d].max(0.0) * (t - lv.t[d]);
            lv.t[d] = t;
            // the rate changes here (the callers change it next)
            lv.pts_t[d].push(t);
            lv.pts_c[d].push(lv.c[d]);
        }
    }

    /// The next live event before `end`, if it comes no later than the fault queue's next: a
    /// page whose phase's count reaches its fault's (queued as a fault at that instant), or a
    /// thread out of its fault (its misses back in its phase's rate). False when there is none.
    fn live_next(&mut self, end: f64) -> bool {
        let tf = self.faults.peek().map_or(f64::INFINITY, |r| r.0 as f64);
        let mut best: Option<(f64, usize)> = None;
        for d in 0..self.count_faults.len() {
            let r = self.live.r[d];
            if r <= 0.0 {
                continue;
            }
            if let Some(&(thr, ..)) = self.count_faults[d].peek() {
                let t = self.live.t[d] + (f64::from_bits(thr) - self.live.c[d]).max(0.0) / r;
                if best.is_none_or(|b| t < b.0) {
                    best = Some((t, d));
                }
            }
        }
        let te = self
            .live
            .ends
            .peek()
            .map_or(f64::INFINITY, |r| r.0 .0 as f64);
        if let Some((t, d)) = best {
            if t < end && t <= tf && t <= te {
                let Some((_, page, mark, _)) = self.count_faults[d].pop() else {
                    return false;
                };
                let at = t.max(mark as f64);
                // need 0: the accesses are already counted, the fault comes at `at`
                self.faults
                    .push((at.ceil() as u64, page, mark, 0f32.to_bits()));
                return true;
            }
        }
        if te < end && te <= tf {
            let Some(Reverse((x, ti))) = self.live.ends.pop() else {
                return false;
            };
            let th = &self.threads[ti];
            if th.busy_until.ceil() as u64 > x {
                // busy longer: a migration it made in the fault
                self.live
                    .ends
                    .push(Reverse((th.busy_until.ceil() as u64, ti)));
                return true;
            }
            let (until, dr) = (th.busy_until, th.x * th.level);
            if let Some(d) = th.dist {
                self.live_advance(d, until);
                self.live.r[d] += dr;
            }
            self.live.busy[ti] = false;
            return true;
        }
        false
    }

    /// Thread `ti` enters a fault at `at` (on the fault path, within `deliver_faults`, whose
    /// `live_start` set the live rates up): its misses leave its phase's live rate until it is
    /// out.
    fn live_enter(&mut self, ti: usize, at: f64) {
        if self.live.busy[ti] {
            return;
        }
        let th = &self.threads[ti];
        let Some(d) = th.dist.filter(|_| th.level > 0.0) else {
            return;
        };
        let (dr, until) = (th.x * th.level, th.busy_until);
        self.live_advance(d, at);
        self.live.r[d] -= dr;
        self.live.busy[ti] = true;
        self.live.ends.push(Reverse((until.ceil() as u64, ti)));
    }

    /// Thread `ti` is busy on the fault path for `len` ns from `from` (a hint fault, or a
    /// migration made in one and its copy): a span of its busy time, joined to the last one it
    /// continues, to place in its phase's history at its instant.
    fn busy_span(&mut self, ti: usize, from: f64, len: f64) {
        let th = &mut self.threads[ti];
        th.fault_owed_ns += len;
        match th.fault_spans.back_mut() {
            Some(last) if from <= last.1 => last.1 = last.1.max(from + len),
            _ => th.fault_spans.push_back((from, from + len)),
        }
    }

    /// Place the threads' fault-path busy spans that fall in the epoch [t0, t1] in each phase's
    /// correction of its cumulative misses (`Dist::fix_at`, which `Dist::cum_at` adds, so the
    /// faults' counts and the accessed-bit tests read it; `LiveRates` made the epoch's faults
    /// arrive at the same rates): a thread's misses come back over the
    /// epoch for the stall it paid here for earlier spans (its availability fell by that much),
    /// and stop within the spans themselves. A thread that does not run this epoch makes no
    /// misses either way. Its spans' time equals the stalls and copies they are paid by, so over
    /// a run the correction only moves misses in time, by less than the thread's backlog.
    fn place_fault_spans(&mut self, t0: f64, t1: f64) {
        let e = t1 - t0;
        let mut ev = std::mem::take(&mut self.scratch.span_events);
        ev.clear();
        for ti in 0..self.threads.len() {
            let th = &mut self.threads[ti];
            if th.fault_spans.is_empty() && th.fault_paid_ns <= 0.0 {
                continue;
            }
            // a thread that runs this epoch (level 0 otherwise), as `live_start` counts it
            let d = th.dist.filter(|_| th.level > 0.0);
            if let Some(d) = d {
                if th.fault_paid_ns > 0.0 {
                    let back = th.x * th.fault_paid_ns / e;
                    ev.push((t0, d, back));
                    ev.push((t1, d, -back));
                }
            }
            while let Some(&(a, b)) = th.fault_spans.front() {
                if a >= t1 {
                    break;
                }
                let (a2, b2) = (a.max(t0), b.min(t1));
                if let Some(d) = d {
                    if b2 > a2 {
                        ev.push((a2, d, -th.x * th.level));
                        ev.push((b2, d, th.x * th.level));
                    }
                }
                if b > t1 {
                    break;
                }
                th.fault_spans.pop_front();
            }
        }
        ev.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.total_cmp(&b.0)));
        let mut i = 0;
        while i < ev.len() {
            let d = ev[i].1;
            let dd = &mut self.dists[d];
            let (last, mut c) = dd.fix_last();
            if last < t0 {
                dd.fix_push(t0, c);
            }
            let (mut t, mut slope) = (t0, 0.0);
            while i < ev.len() && ev[i].1 == d {
                let (te, _, ds) = ev[i];
                c += slope * (te - t);
                t = te;
                dd.fix_push(t, c);
                slope += ds;
                i += 1;
            }
        }
        self.scratch.span_events = ev;
    }

    /// A fault on `page` (of process `pi`) that came at `at` while every thread touching the page
    /// was in another fault: it waits in the process's queue, and each of those threads is
    /// called when it is out (a `RESUME` entry each), the first out taking it.
    fn defer_fault(&mut self, pi: usize, page: u32, mark: u64, at: u64) {
        self.faults_deferred += 1;
        self.procs[pi].pending.push_back((page, mark));
        for k in 0..self.procs[pi].threads.len() {
            let ti = self.procs[pi].threads[k];
            let th = &self.threads[ti];
            if !th.resume_queued && th.busy_until > at as f64 && self.touch_weight(ti, page) > 0.0 {
                self.queue_resume(ti, at);
            }
        }
    }

    /// How much thread `ti` touches `page` this epoch (its misses' rate on the page): 0 for a
    /// thread that is not active, has no phase, or makes no access this epoch. A fault goes to
    /// the page's threads by this weight.
    fn touch_weight(&self, ti: usize, page: u32) -> f64 {
        self.touch_weight_memo(ti, page, &mut None)
    }

    /// [`Machine::touch_weight`] for one page over several threads: `memo` keeps the last
    /// phase's probability of the page (the threads of a process mostly share their phases).
    #[inline]
    fn touch_weight_memo(&self, ti: usize, page: u32, memo: &mut Option<(usize, f64)>) -> f64 {
        let th = &self.threads[ti];
        match (th.active, th.dist) {
            (true, Some(d)) => {
                let pmf = match *memo {
                    Some((md, p)) if md == d => p,
                    _ => {
                        let p = self.dists[d].pmf(page);
                        *memo = Some((d, p));
                        p
                    }
                };
                th.x * (th.avail + th.fault_paid_ns / self.epoch_ns) * pmf
            }
            _ => 0.0,
        }
    }

    /// Thread `ti` comes out of its fault when it is no longer busy, after `at` at the soonest:
    /// a `RESUME` entry of the fault queue then (one at a time per thread).
    fn queue_resume(&mut self, ti: usize, at: u64) {
        let th = &mut self.threads[ti];
        th.resume_queued = true;
        let next = (th.busy_until.ceil() as u64).max(at + 1);
        self.faults.push((next, ti as u32, 0, RESUME));
    }

    /// Thread `ti` is out of its fault at `at` (unless something it did there keeps it longer):
    /// it takes the oldest of its process's pending faults on a page it touches, and is called
    /// again when out of that one while faults wait. It takes one even in a step its earlier
    /// faults' stalls fill (they are paid in the steps after them, a step late, and the thread
    /// is running again in real time); requiring it to run in that step first made a thread at
    /// fine steps run a step between two faults of a storm (docs/validation.md, section 1n).
    /// A thread that no longer runs hands the pending faults back to the queue, to be given to
    /// the pages' threads again.
    fn resume_faults<'p>(
        &mut self,
        ti: usize,
        at: u64,
        cost: f64,
        policy: Option<&mut (dyn Policy + 'p)>,
    ) {
        let th = &mut self.threads[ti];
        th.resume_queued = false;
        if th.busy_until > at as f64 {
            self.queue_resume(ti, at);
            return;
        }
        let Some(pi) = th.proc_ else { return };
        let dist = match (th.active, th.dist) {
            (true, Some(d)) => d,
            _ => {
                for (page, mark) in std::mem::take(&mut self.procs[pi].pending) {
                    self.faults.push((at, page, mark, 0f32.to_bits()));
                }
                return;
            }
        };
        let mut k = 0;
        let mut taken = None;
        while k < self.procs[pi].pending.len() {
            let (page, mark) = self.procs[pi].pending[k];
            if !pte_marked(self.pte[page as usize]) {
                self.procs[pi].pending.remove(k);
                continue;
            }
            if self.dists[dist].pmf(page) > 0.0 {
                self.procs[pi].pending.remove(k);
                taken = Some((page, mark));
                break;
            }
            k += 1;
        }
        if let Some((page, mark)) = taken {
            self.pte[page as usize] &= !F_MARKED;
            self.take_fault(ti, page, mark, at, cost, policy);
            if !self.procs[pi].pending.is_empty() {
                self.queue_resume(ti, at);
            }
        }
    }

    /// Thread `ti` takes the hint fault of `page` (marked at `mark`) at `at`: the fault path's
    /// accounting, its stall, the telemetry's record, and on the fault path the policy's
    /// decision, carried out at once.
    fn take_fault<'p>(
        &mut self,
        ti: usize,
        page: u32,
        mark: u64,
        at: u64,
        cost: f64,
        policy: Option<&mut (dyn Policy + 'p)>,
    ) {
        let pi = self.proc_of(page);
        let tier = pte_tier(self.pte[page as usize]);
        let tid = self.threads[ti].tid;
        // vma_set_access_pid_bit (the fault path's numa_migrate_check)
        {
            let p = &mut self.procs[pi];
            let oi = p.object_of(page);
            let head = p.objects.get(oi).map_or(oi, |o| o.vma_head);
            if let Some(v) = p.numa.vmas.get_mut(head) {
                v.fault_by(tid + 1);
            }
        }
        if let Some(s) = self.numa_cfg(pi) {
            // a slow-tier fault counts here only in a kernel without 5.18's tiering check
            // (`slow_fault_stats`), as remote; 6.x accounts it only if it promoted its page
            if tier == 0 || s.slow_fault_stats {
                // TPP's first fault keeps the page's cpupid: the policy sets it where its
                // fault reaches numa_migrate_prep (`cpupid_at_prep`)
                let set_cpupid = tier == 0 || !s.cpupid_at_prep;
                self.account_numa_fault(pi, page, tid, &s, at as f64, false, set_cpupid);
            }
        }
        self.threads[ti].stall_ns += cost;
        self.stats.hint_faults += 1;
        let fault = HintFault {
            page: PageId(page as u64),
            tier,
            pid: pi as u32,
            tid,
            time_to_fault_ns: at - mark,
            time_ns: at,
        };
        self.tel.hint_faults.push(fault);
        if let Some(p) = policy {
            self.threads[ti].busy_until = at as f64 + cost;
            self.busy_span(ti, at as f64, cost);
            self.live_enter(ti, at as f64);
            self.fault_path_call(p, &fault);
        }
    }

    /// The policy's fault path for one fault: `Policy::on_fault` sees the telemetry at the
    /// fault's instant, and its actions are carried out there.
    fn fault_path_call(&mut self, p: &mut dyn Policy, f: &HintFault) {
        self.path_call(f.time_ns, |tel, mech, out| p.on_fault(f, tel, mech, out));
    }

    /// The policy's timer ([`Policy::on_timer`]) at `t` inside the epoch, on the fault path as
    /// a fault's call is, without a fault.
    fn timer_call(&mut self, p: &mut dyn Policy, t: u64) {
        self.last_timer_ns = Some(t);
        self.path_call(t, |tel, mech, out| p.on_timer(t, tel, mech, out));
    }

    /// A policy call at instant `t` inside the epoch (a fault's or a timer's): the telemetry as
    /// it is then, and the actions carried out then.
    fn path_call(
        &mut self,
        t: u64,
        call: impl FnOnce(&Telemetry, &mut dyn Mechanism, &mut Vec<Action>),
    ) {
        let timed = self.fault_calls.is_multiple_of(TIMED_EVERY);
        self.fault_calls += 1;
        let t0 = timed.then(std::time::Instant::now);
        // the migrations the threads could start since the last call
        self.run_queue_until(t as f64);
        let mut tel = std::mem::take(&mut self.tel);
        let now = tel.now_ns;
        tel.now_ns = t;
        // the tiers as they are now: with this epoch's migrations so far, whose results the
        // policy takes from the telemetry's list (the step's end sets them again)
        for (ti, &used) in tel.tiers.iter_mut().zip(&self.used) {
            ti.used_pages = used;
        }
        let mut out = std::mem::take(&mut self.scratch.fault_actions);
        call(&tel, self, &mut out);
        tel.now_ns = now;
        self.tel = tel;
        self.fault_at = Some(t as f64);
        self.apply(&mut out);
        self.run_queue_until(t as f64);
        self.fault_at = None;
        self.scratch.fault_actions = out;
        if let Some(t0) = t0 {
            self.wall_fault_policy_s += t0.elapsed().as_secs_f64() * TIMED_EVERY as f64;
        }
    }

    /// task_numa_fault for a fault on a top-tier page: private when the same thread faulted on
    /// the page last (or nobody did: first accesses count as private), local since threads run
    /// on the top tier's node (TNF_FAULT_LOCAL). The page does not move (it is already on the
    /// faulting CPU's node).
    ///
    /// `promoted`: a slow-tier page the faulting thread moved up (do_numa_page, TNF_MIGRATED),
    /// accounted on the top-tier node it moved to. In tiering mode the slow page's cpupid field
    /// held its scan time (folio_use_access_time), so last_cpupid is -1 and the fault counts as
    /// a first access, private; TNF_FAULT_LOCAL is unset (the page was on another node than the
    /// CPU's when it faulted), so it is not local. Mostly such faults leave local + shared at 0,
    /// and update_task_scan_period doubles the period: the kernel's scans of a process that keeps
    /// promoting come further and further apart (tierkit validate kernel --scenario press).
    ///
    /// Not `promoted`, on a slow-tier page: a fault that a kernel without 5.18's tiering check
    /// accounts (`NumaScan::slow_fault_stats`): remote, private when the same thread (or nobody)
    /// faulted on the page last. `set_cpupid`: the fault sets the page's cpupid to its thread
    /// (false for a fault that ends before numa_migrate_prep, `NumaScan::cpupid_at_prep`).
    #[allow(clippy::too_many_arguments)]
    fn account_numa_fault(
        &mut self,
        pi: usize,
        page: u32,
        tid: u32,
        s: &NumaScan,
        now: f64,
        promoted: bool,
        set_cpupid: bool,
    ) {
        let i = page as usize;
        let owners = self.fault_owners(i);
        // The moved folio's cpupid is reset (folio_migrate_flags on a top-tier target).
        let last = if promoted || set_cpupid {
            owners.replace(i, if promoted { 0 } else { tid + 1 })
        } else {
            owners.get(i)
        };
        let private = promoted || last == 0 || last == tid + 1;
        let base_pages = (self.page_bytes as u64 / 4096).max(1);
        let p = &mut self.procs[pi];
        let rss = p.resident.iter().sum::<u64>() * self.page_bytes as u64;
        let f = numa_scan::Fault {
            pages: base_pages,
            private,
            // the page is on the CPUs' node, the top tier, and was there when it faulted
            local: !promoted && pte_tier(self.pte[i]) == 0,
            failed: false,
        };
        // Colloid's kernel keeps the page's cpupid but accounts nothing (`fault_stats`)
        if s.fault_stats {
            p.numa.account_fault(s, rss, f, now);
        }
    }

    /// task_numa_fault's TNF_MIGRATE_FAIL for a promotion that failed at its fault, in a kernel
    /// that accounts slow-tier faults (the fault itself was counted when it was taken):
    /// numa_faults_locality[2], so the next update_task_scan_period doubles the period.
    fn numa_fault_failed(&mut self, pi: usize, s: &NumaScan) {
        if s.fault_stats && s.slow_fault_stats {
            let base_pages = (self.page_bytes as u64 / 4096).max(1);
            if let Some(p) = self.procs.get_mut(pi) {
                p.numa.locality[2] += base_pages;
            }
        }
    }

    /// Process `pi`'s NUMA-balancing scanner, if it runs one (its own, else the machine's).
    fn numa_cfg(&self, pi: usize) -> Option<NumaScan> {
        match self.scan_pid.get(&pi).copied().or(self.scan) {
            Some(ScanCfg::Numa(s)) => Some(s),
            _ => None,
        }
    }

    /// The process that owns `page` and its NUMA-balancing scanner, if it runs one.
    fn numa_scan_of(&self, page: u32) -> Option<(usize, NumaScan)> {
        if page as usize >= self.pte.len() {
            return None;
        }
        let pi = self.proc_of(page);
        self.numa_cfg(pi).map(|s| (pi, s))
    }

    /// The last-faulting-thread table, grown to cover page `i` (it grows with the page table).
    fn fault_owners(&mut self, i: usize) -> &mut FaultOwners {
        if self.last_fault_tid.len() <= i {
            self.last_fault_tid.resize(self.pte.len());
        }
        &mut self.last_fault_tid
    }

    // ---------------------------------------------------------------- actions

    /// The time one page's copy out of tier `from` takes: `copy_gbps` on an idle machine,
    /// slower as the tier's loaded latency grows (a copy keeps a fixed number of lines in
    /// flight; the latency is the last epoch's), ns.
    fn copy_ns(&self, from: TierId) -> f64 {
        let gbps = self.exp.platform.costs.copy_gbps;
        self.page_bytes / copy_rate(&self.exp.platform.tiers, &self.lat, gbps, from)
    }

    /// Spread a background copy's traffic, `bytes` read from tier `from` and written to tier
    /// `to`, evenly over the time it takes, [t0, t1] (ns), into the epochs that span overlaps.
    fn spread_traffic(&mut self, from: TierId, to: TierId, bytes: f64, t0: f64, t1: f64) {
        let e = self.epoch_ns;
        let nt = self.ntiers;
        let from_ns = self.mig_traffic_from;
        let mut k = ((t0 - from_ns) / e).floor().max(0.0) as usize;
        // started after this epoch's traffic was solved: its bytes here count in the next
        let late = usize::from(self.mig_traffic_settled);
        loop {
            let (a, b) = (from_ns + k as f64 * e, from_ns + (k + 1) as f64 * e);
            let share = if t1 > t0 {
                (t1.min(b) - t0.max(a)).max(0.0) / (t1 - t0)
            } else {
                1.0
            };
            let kk = k.max(late);
            while self.mig_traffic.len() <= kk {
                self.mig_traffic.push_back(vec![(0.0, 0.0); nt]);
            }
            let rate = bytes * share / e;
            self.mig_traffic[kk][from as usize].0 += rate;
            self.mig_traffic[kk][to as usize].1 += rate;
            if b >= t1 {
                break;
            }
            k += 1;
        }
    }

    /// Shootdown for `page` of process `pi`: the initiator's cost, and an IPI stall for every
    /// other running thread that maps it. Threads of one process share the mm, so by default
    /// every running thread is a target; with per-thread page tables (Vulcan §3.4) only the
    /// threads whose access distribution covers the page (its sharers; the owner alone for a
    /// private page) are.
    fn shootdown(&mut self, pi: usize, page: u32, initiator: Option<usize>) -> f64 {
        let c = &self.exp.platform.costs;
        let ipi = c.shootdown_ipi_us * 1e3;
        let per_thread = self.procs[pi].tlb_per_thread;
        let mut targets = 0;
        for &ti in &self.procs[pi].threads {
            let th = &self.threads[ti];
            // A thread waiting at its phase's barrier has left its CPU idle, in lazy TLB mode,
            // which the flush skips (native_flush_tlb_multi sends no IPI where should_flush_tlb
            // finds the CPU lazy, arch/x86/mm/tlb.c; it flushes at its next context switch):
            // no stall for it, and one target fewer for the initiator.
            if Some(ti) == initiator || !th.active || th.waiting {
                continue;
            }
            if per_thread && !th.dist.is_some_and(|d| self.dists[d].pmf(page) > 0.0) {
                continue;
            }
            self.threads[ti].stall_ns += ipi;
            targets += 1;
        }
        self.stats.shootdowns += 1;
        self.stats.shootdown_ipis += targets;
        (c.shootdown_base_us + c.shootdown_per_target_us * targets as f64) * 1e3
    }

    /// Move one page now. Returns the outcome and the CPU time it took (ns). `initiator`: the
    /// thread that migrates the page in its own fault (a synchronous migration), which copies it
    /// itself: the copy joins the thread's [`InlineCopy`] queue, and the time returned is the
    /// rest (fixed cost, shootdown). None: the background migration threads, which begin it at
    /// `start_ns`: their time includes the copy ([`Machine::copy_ns`]), whose traffic is spread
    /// over the span it takes (the threads' time shared out among `migration_threads`).
    fn do_migrate(
        &mut self,
        page: u32,
        to: TierId,
        transactional: bool,
        keep_shadow: bool,
        initiator: Option<usize>,
        start_ns: f64,
    ) -> (MigrationResult, f64) {
        let pid = PageId(page as u64);
        let from = self.page_tier(page as usize);
        let res = |outcome, remap| MigrationResult {
            page: pid,
            from: if from == NONE { to } else { from },
            to,
            outcome,
            remap,
        };
        if from == NONE {
            return (res(MigrationOutcome::NoPage, false), 0.0);
        }
        if from == to {
            return (res(MigrationOutcome::AlreadyThere, false), 0.0);
        }
        let pi = self.proc_of(page);
        if !self.procs[pi].migration_enabled || self.pte[page as usize] & F_PINNED != 0 {
            return (res(MigrationOutcome::Refused, false), 0.0);
        }
        let now = self.now_ns;
        // Demotion onto a clean shadow copy is a remap.
        if let Some(&(st, since)) = self.shadow.get(&page) {
            if st == to {
                let (_, wrate) = self.page_rate(page);
                let clean = self.rng_mig.chance((-wrate * (now - since)).exp());
                self.shadow.remove(&page);
                self.used[st as usize] -= 1; // the shadow slot becomes the page
                if clean {
                    self.set_tier(page, Some(to));
                    self.after_move(page, pi, from, to);
                    self.stats.remaps += 1;
                    let cost = self.shootdown(pi, page, initiator);
                    self.stats.migration_cpu_ns += cost;
                    return (res(MigrationOutcome::Done, true), cost);
                }
            }
        }
        if !self.has_room(to as usize, pi) {
            return (res(MigrationOutcome::NoSpace, false), 0.0);
        }
        let fixed = self.exp.platform.costs.migrate_fixed_us * 1e3;
        let copy_ns = self.copy_ns(from);
        let threads = (self.exp.platform.costs.migration_threads as f64).max(1.0);
        let (c0, c1) = (
            start_ns + fixed / threads,
            start_ns + (fixed + copy_ns) / threads,
        );
        if transactional {
            let (_, wrate) = self.page_rate(page);
            if self
                .rng_mig
                .chance(1.0 - (-wrate * (fixed + copy_ns)).exp())
            {
                // the copy was made, then dropped: half its bytes read and written again
                self.spread_traffic(from, from, 0.5 * self.page_bytes, c0, c1);
                return (res(MigrationOutcome::Aborted, false), fixed + copy_ns);
            }
        }
        if keep_shadow && to < from {
            self.shadow.insert(page, (from, now));
            self.push_shadow(from as usize, page);
            self.used[from as usize] += 1;
        } else {
            self.drop_shadow(page);
        }
        self.set_tier(page, Some(to));
        self.after_move(page, pi, from, to);
        let copy = match initiator {
            Some(ti) => {
                self.threads[ti].copies.push_back(InlineCopy {
                    from,
                    to,
                    bytes: self.page_bytes,
                });
                fixed
            }
            None => {
                self.spread_traffic(from, to, self.page_bytes, c0, c1);
                fixed + copy_ns
            }
        };
        let cost = copy + self.shootdown(pi, page, initiator);
        self.stats.migration_cpu_ns += cost;
        (res(MigrationOutcome::Done, false), cost)
    }

    fn after_move(&mut self, page: u32, pi: usize, from: TierId, to: TierId) {
        let f = &mut self.pte[page as usize];
        let p = &mut self.procs[pi];
        if to < from {
            p.promotions += 1;
            self.stats.promotions += 1;
            *f |= F_PROMOTED;
        } else {
            p.demotions += 1;
            self.stats.demotions += 1;
            if *f & F_PROMOTED != 0 {
                p.demote_promoted += 1;
                *f &= !F_PROMOTED;
            }
        }
    }

    /// Background migration threads work through the queue within their CPU budget.
    fn run_queue(&mut self) {
        self.tel.migrations.retain(|_| false);
        let threads = self.exp.platform.costs.migration_threads as f64;
        let mut budget = threads * self.epoch_ns - self.mig_debt_ns;
        while budget > 0.0 {
            let Some(p) = self.queue.pop_front() else {
                break;
            };
            // it begins where the threads' time so far (the debt first) takes them
            let start = self.now_ns + self.epoch_ns - budget / threads.max(1.0);
            let (r, cost) =
                self.do_migrate(p.page, p.to, p.transactional, p.keep_shadow, None, start);
            budget -= cost.max(1.0);
            self.tel.migrations.push(r);
        }
        // a migration that ran past the budget is paid for by the next epochs (without the
        // debt, one migration an epoch would always start, and an epoch shorter than a
        // migration would let the threads migrate faster than their CPU allows); idle
        // threads bank nothing, but what is left of the epoch is theirs for the migrations
        // asked for inside it, on the fault path
        self.mig_debt_ns = (-budget).max(0.0);
        self.mig_idle_from = if budget > 0.0 {
            self.now_ns + self.epoch_ns - budget / threads.max(1.0)
        } else {
            f64::INFINITY
        };
        self.tel.migrations.append(&mut self.sync_results);
    }

    /// On the fault path, at instant `t` inside the epoch: the migration threads, idle from
    /// `mig_idle_from`, start the queued migrations they can start by `t` (each at the later of
    /// that and when it was asked for), in the queue's order, as kswapd demotes as it goes and
    /// Nomad's worker copies as soon as a fault queues a page. Without this a migration asked
    /// for in a fault waited for the next epoch's start, so how soon kswapd's demotions made
    /// room for promotions followed the epoch (`nbt:fault_path=true` on seq-pc promoted 86K
    /// pages at 1 ms and 103K at 0.0625 ms). What runs past the epoch is a debt, as in
    /// [`Machine::run_queue`]; results land in this epoch's telemetry, beside the faults.
    fn run_queue_until(&mut self, t: f64) {
        let end = self.now_ns + self.epoch_ns;
        let threads = (self.exp.platform.costs.migration_threads as f64).max(1.0);
        while self.mig_idle_from < end {
            let Some(p) = self.queue.front() else {
                break;
            };
            let start = self.mig_idle_from.max(p.at);
            if start > t || start >= end {
                break;
            }
            let p = self.queue.pop_front().expect("front was Some");
            let (r, cost) =
                self.do_migrate(p.page, p.to, p.transactional, p.keep_shadow, None, start);
            self.mig_idle_from = start + cost.max(1.0) / threads;
            self.tel.migrations.push(r);
        }
        if self.mig_idle_from > end && self.mig_idle_from.is_finite() {
            self.mig_debt_ns = (self.mig_idle_from - end) * threads;
            self.mig_idle_from = f64::INFINITY;
        }
    }

    /// The result of a migration made (or refused) at once: in the next epoch's telemetry, or,
    /// carried out in a fault on the fault path, in this epoch's, beside the fault that made it.
    fn sync_result(&mut self, r: MigrationResult) {
        if self.fault_at.is_some() {
            self.tel.migrations.push(r);
        } else {
            self.sync_results.push(r);
        }
    }

    /// Apply a policy's actions (at the end of an epoch).
    pub fn apply(&mut self, actions: &mut Vec<Action>) {
        for a in actions.drain(..) {
            match a {
                Action::Migrate {
                    page,
                    to,
                    mode,
                    keep_shadow,
                } => {
                    let pg = page.0 as u32;
                    if page.0 >= self.pte.len() as u64 || to as usize >= self.ntiers {
                        self.sync_results.push(MigrationResult {
                            page,
                            from: to,
                            to,
                            outcome: MigrationOutcome::NoPage,
                            remap: false,
                        });
                        continue;
                    }
                    match mode {
                        MigrateMode::Sync { pid, tid } => {
                            let thread = self
                                .procs
                                .get(pid as usize)
                                .and_then(|p| p.threads.get(tid as usize).copied());
                            // in a fault on the fault path: at its instant
                            let now = self.fault_at.unwrap_or(self.now_ns);
                            let (r, cost) =
                                self.do_migrate(pg, to, false, keep_shadow, thread, now);
                            if let Some(ti) = thread {
                                self.threads[ti].stall_ns += cost;
                                if self.fault_at.is_some() && r.outcome == MigrationOutcome::Done {
                                    // busy until the copy is done too (at the last epoch's
                                    // latency; the solve takes its time in the next epoch)
                                    let copy = if r.remap { 0.0 } else { self.copy_ns(r.from) };
                                    let from = self.threads[ti].busy_until.max(now);
                                    self.threads[ti].busy_until = from + cost + copy;
                                    self.busy_span(ti, from, cost + copy);
                                }
                            }
                            // do_numa_page: a hint fault whose page the faulting thread moved
                            // up (TNF_MIGRATED) is accounted on the node it moved to, the top
                            // tier, so task_numa_fault counts it (private, not local) and the
                            // scan period adapts to it; a failed or slow-tier one returns early
                            // there.
                            let pi = pid as usize;
                            if to == 0 && r.from > 0 {
                                if let Some(s) = self.numa_cfg(pi) {
                                    // (with slow_fault_stats the fault already counted, and
                                    // a failed move adds TNF_MIGRATE_FAIL to it)
                                    if !s.slow_fault_stats {
                                        if r.outcome == MigrationOutcome::Done {
                                            self.account_numa_fault(
                                                pi, pg, tid, &s, now, true, true,
                                            );
                                        }
                                    } else if r.outcome == MigrationOutcome::NoSpace {
                                        self.numa_fault_failed(pi, &s);
                                    }
                                }
                            }
                            self.sync_result(r);
                        }
                        MigrateMode::Async | MigrateMode::Transactional => {
                            if self.queue.len() >= MAX_QUEUE {
                                self.queue_refused += 1;
                                let from = pte_tier(self.pte[pg as usize]);
                                self.sync_results.push(MigrationResult {
                                    page,
                                    from,
                                    to,
                                    outcome: MigrationOutcome::Refused,
                                    remap: false,
                                });
                            } else {
                                let at = self.fault_at.unwrap_or(self.now_ns);
                                self.queue.push_back(Pending {
                                    page: pg,
                                    to,
                                    transactional: mode == MigrateMode::Transactional,
                                    keep_shadow,
                                    at,
                                });
                            }
                        }
                    }
                }
                Action::SetSampling { period, filter } => {
                    self.sampling = (period > 0).then_some((period, filter));
                }
                Action::SetHintScan {
                    pid,
                    period_ms,
                    pages,
                    tiers,
                } => {
                    let cfg = ScanCfg::Fixed {
                        period_ms,
                        pages,
                        tiers,
                    };
                    match pid {
                        None => self.scan = Some(cfg),
                        Some(p) => {
                            self.scan_pid.insert(p as usize, cfg);
                        }
                    }
                }
                Action::SetNumaScan { pid, scan } => {
                    let cfg = ScanCfg::Numa(scan);
                    match pid {
                        None => self.scan = Some(cfg),
                        Some(p) => {
                            self.scan_pid.insert(p as usize, cfg);
                        }
                    }
                }
                Action::SetMigration { pid, enabled } => {
                    if let Some(p) = self.procs.get_mut(pid as usize) {
                        match (p.migration_enabled, enabled) {
                            (true, false) => p.migration_stops += 1,
                            (false, true) => p.migration_restarts += 1,
                            _ => {}
                        }
                        p.migration_enabled = enabled;
                    }
                }
                Action::SetTlbScope { pid, per_thread } => {
                    if let Some(p) = self.procs.get_mut(pid as usize) {
                        p.tlb_per_thread = per_thread;
                    }
                }
                Action::SetPartition { pid, fast_pages } => {
                    if let Some(p) = self.procs.get_mut(pid as usize) {
                        p.partition = fast_pages;
                    }
                }
                Action::Refuse { page, to } => {
                    let from = Some(self.page_tier(page.0 as usize))
                        .filter(|&t| t != NONE)
                        .unwrap_or(to);
                    self.sync_result(MigrationResult {
                        page,
                        from,
                        to,
                        outcome: MigrationOutcome::Refused,
                        remap: false,
                    });
                }
                Action::BindRange { first, pages, tier } => {
                    let n = self.pte.len();
                    if self.page_bind.len() < n {
                        self.page_bind.resize(n, NONE);
                    }
                    let lo = (first.0 as usize).min(n);
                    let hi = (first.0.saturating_add(pages) as usize).min(n);
                    let t = tier.min(self.ntiers as u8 - 1);
                    self.page_bind[lo..hi].iter_mut().for_each(|b| *b = t);
                }
                Action::BindObject { pid, object, tier } => {
                    if let Some(p) = self.procs.get_mut(pid as usize) {
                        if let Some(o) = p.objects.iter_mut().find(|o| o.name == object) {
                            o.bind = Some(tier.min(self.ntiers as u8 - 1));
                        }
                    }
                }
            }
        }
    }

    /// Clear the per-epoch page events after the policy has seen them.
    pub fn clear_events(&mut self) {
        self.tel.allocated.clear();
        self.tel.freed.clear();
    }

    /// Check the page-table invariants (used by tests): every page in at most one tier, used
    /// counts equal the pages (plus shadows) in each tier, no tier over capacity.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let mut count = vec![0u64; self.ntiers];
        for t in self.pte.iter().map(|&e| pte_tier(e)) {
            if t != NONE {
                count[t as usize] += 1;
            }
        }
        for (&_, &(t, _)) in &self.shadow {
            count[t as usize] += 1;
        }
        if count != self.used {
            return Err(format!(
                "used {:?} but page table holds {:?}",
                self.used, count
            ));
        }
        for t in 0..self.ntiers {
            if self.used[t] > self.cap[t] {
                return Err(format!(
                    "tier {t}: {} pages used > capacity {}",
                    self.used[t], self.cap[t]
                ));
            }
        }
        for p in &self.procs {
            let n: u64 = p.resident.iter().sum();
            let live: u64 = (p.base..p.base + p.pages)
                .filter(|&pg| pte_present(self.pte[pg as usize]))
                .count() as u64;
            if n != live {
                return Err(format!(
                    "process {}: resident {n} != live pages {live}",
                    p.name
                ));
            }
        }
        Ok(())
    }
}

impl Mechanism for Machine {
    fn tier_of(&self, page: PageId) -> Option<TierId> {
        let t = pte_tier(*self.pte.get(page.0 as usize)?);
        (t != NONE).then_some(t)
    }

    /// An untimed test (a policy's own access-bit scan) happens just after every earlier test.
    fn test_and_clear_accessed(&mut self, pages: &[PageId], out: &mut Vec<bool>) {
        let at = self.now_ns.max(self.test_clock + 1.0);
        self.test_accessed(pages, at, out);
    }

    fn test_and_clear_accessed_at(&mut self, pages: &[PageId], at_ns: u64, out: &mut Vec<bool>) {
        self.test_accessed(pages, at_ns as f64, out);
    }

    fn kernel_ran(&mut self, from_ns: u64, to_ns: u64) {
        if self.exp.kswapd_shares_cpu {
            self.busy.add(from_ns as f64, to_ns as f64, &mut self.dists);
        }
    }

    /// should_numa_migrate_memory's page_cpupid_xchg_last, where the scanner's kernel sets a
    /// slow-tier page's cpupid only there (`NumaScan::cpupid_at_prep`, with slow-tier faults
    /// accounted); the migration keeps it (5.13's migrate_page_states copies it).
    fn numa_migrate_prep(&mut self, fault: &HintFault) {
        let page = fault.page.0 as u32;
        if let Some((_, s)) = self.numa_scan_of(page) {
            if s.slow_fault_stats && s.cpupid_at_prep {
                let i = page as usize;
                self.fault_owners(i).replace(i, fault.tid + 1);
            }
        }
    }

    fn numa_migrate_failed(&mut self, fault: &HintFault) {
        if let Some((pi, s)) = self.numa_scan_of(fault.page.0 as u32) {
            self.numa_fault_failed(pi, &s);
        }
    }
}

impl Machine {
    /// kswapd's spans (`kswapd_shares_cpu`) recount their misses where the distributions'
    /// counts changed since they were recorded.
    fn settle_busy(&mut self) {
        let mut from = f64::INFINITY;
        for d in &mut self.dists {
            from = from.min(d.take_changed_from());
        }
        if !self.busy.spans.is_empty() && from < f64::INFINITY {
            self.busy.settle(from, &self.dists);
        }
    }

    /// Test and clear accessed bits at time `at`: a page whose bit was cleared at t0 reads
    /// referenced with probability 1 - exp(-n), n its expected accesses in [t0, at] (r dt at a
    /// steady rate r; the integral of its rate otherwise, so an epoch in which the threads all
    /// stalled does not make every page read idle).
    fn test_accessed(&mut self, pages: &[PageId], at: f64, out: &mut Vec<bool>) {
        out.clear();
        if self.last_clear.is_empty() && !pages.is_empty() {
            // The policy did not declare `accessed_bits`: no clear times were kept. Its next
            // step fails the run (`Machine::step`); until then every page reads idle.
            self.undeclared_accessed_bits = true;
            out.resize(pages.len(), false);
            return;
        }
        self.test_clock = self.test_clock.max(at);
        for p in pages {
            let i = p.0 as usize;
            if i >= self.pte.len() || !pte_present(self.pte[i]) {
                out.push(false);
                continue;
            }
            let t0 = self.last_clear.get(i);
            self.access_tests.tests += 1;
            if at - t0 <= 0.0 {
                self.access_tests.at_dt0 += 1;
            }
            if self.pte[i] & F_YOUNG != 0 {
                // the first test after the first touch: the fault's own access
                self.pte[i] &= !F_YOUNG;
                out.push(true);
            } else {
                let (swept, seen) = self.touches_for_test(i as u32, t0, at);
                out.push(match swept {
                    // a swept page (`in_order`) reads referenced when a pass reached it since
                    // the clear: the pages a sweep passed over between two tests are a run of
                    // neighbours, as on hardware; other phases' touches stay Poisson
                    Some(hit) => hit || (seen > 0.0 && self.rng_bits.chance(1.0 - (-seen).exp())),
                    None => self.rng_bits.chance(1.0 - (-seen).exp()),
                });
            }
            if let Err(e) = self.last_clear.set(i, t0.max(at)) {
                self.clear_times_error.get_or_insert(e);
            }
        }
    }
}

impl Backend for Machine {
    type Error = SimError;
    fn observe(&mut self) -> Result<()> {
        self.step()
    }
    fn take_telemetry(&mut self) -> Telemetry {
        std::mem::take(&mut self.tel)
    }
    fn restore_telemetry(&mut self, tel: Telemetry) {
        self.tel = tel;
    }
    fn apply(&mut self, actions: &mut Vec<Action>) {
        Machine::apply(self, actions)
    }
}

/// The phases of a process that read the same regions with the same read share draw from one
/// access distribution, whatever their MLP, compute or length: for each (thread group, phase)
/// the first (group, phase) in order with that access. A program that repeats its phases (a
/// graph traversal's levels, iteration after iteration) then keeps one table per distinct
/// access pattern, and a page's accesses form one stream across the repetitions.
fn canonical_phases(p: &crate::spec::ProcessSpec) -> Vec<Vec<(usize, usize)>> {
    let mut distinct: Vec<(usize, usize)> = Vec::new();
    let mut out = Vec::with_capacity(p.threads.len());
    for (g, t) in p.threads.iter().enumerate() {
        let mut row = Vec::with_capacity(t.phases.len());
        for (k, spec) in t.phases.iter().enumerate() {
            let same = distinct.iter().copied().find(|&(g2, k2)| {
                let o = &p.threads[g2].phases[k2];
                o.access == spec.access && o.read_frac == spec.read_frac
            });
            row.push(same.unwrap_or_else(|| {
                distinct.push((g, k));
                (g, k)
            }));
        }
        out.push(row);
    }
    out
}

/// The plain forms of the machine's fast paths, which tests check the fast paths against.
#[derive(Clone, Copy, Debug, Default)]
struct TestModes {
    /// Allocate page by page (`allocate_page`), never in runs (`allocate_run`).
    per_page_alloc: bool,
    /// Draw samples one by one, never ahead (`sample`).
    sample_one_by_one: bool,
}

/// `Machine::step` times its solve and its sampling every this many epochs, and the fault path
/// every this many calls.
const TIMED_EVERY: u64 = 8;

/// Sort an epoch's samples by (time, page), samples equal in both kept in their order, as the
/// stable `sort_by_key` does, but without its buffer and without moving the 40-byte samples
/// about: each sample's key and position go in one integer (time in the high 64 bits, then the
/// page and the position), those integers are sorted, and the samples are gathered once in that
/// order. `keys` and `out` are kept between epochs. Pages beyond 48 bits or more than 2^16
/// samples (never in this simulator) take `sort_by_key`.
fn sort_samples(v: &mut Vec<Sample>, keys: &mut Vec<u128>, out: &mut Vec<Sample>) {
    const POS_BITS: u32 = 16;
    if v.len() < 2 {
        return;
    }
    if v.len() > 1 << POS_BITS || v.iter().any(|s| s.page.0 >> (64 - POS_BITS) != 0) {
        v.sort_by_key(|s| (s.time_ns, s.page.0));
        return;
    }
    keys.clear();
    keys.extend(v.iter().enumerate().map(|(i, s)| {
        (u128::from(s.time_ns) << 64) | (u128::from(s.page.0) << POS_BITS) | i as u128
    }));
    if keys.windows(2).all(|w| w[0] < w[1]) {
        return;
    }
    keys.sort_unstable();
    out.clear();
    out.extend(
        keys.iter()
            .map(|&k| v[(k as usize) & ((1 << POS_BITS) - 1)]),
    );
    std::mem::swap(v, out);
}

/// `Machine::step`'s per-epoch buffers: the running threads, their tier shares, one thread's
/// shares, the tiers' busy products and latencies.
#[derive(Clone, Debug, Default)]
struct StepScratch {
    sort_keys: Vec<u128>,
    sorted: Vec<Sample>,
    idx: Vec<usize>,
    shares: Vec<f64>,
    share: Vec<f64>,
    not_empty_prod: Vec<f64>,
    lat: Vec<f64>,
    flows: Vec<CopyFlow>,
    copy_used: Vec<f64>,
    /// Per tier, the bytes the threads' inline copies read from it and wrote to it this epoch.
    copied: Vec<(f64, f64)>,
    /// The actions of one fault on the fault path.
    fault_actions: Vec<Action>,
    /// `place_fault_spans`' changes of slope: (time, phase, change, misses per ns).
    span_events: Vec<(f64, usize, f64)>,
}

/// A thread that copies pages in its own faults this epoch, and the CPU time it has for its
/// copies and its work (after its other stalls), ns.
#[derive(Clone, Copy, Debug)]
struct CopyFlow {
    thread: usize,
    cpu_ns: f64,
    /// It runs this epoch (in `step`'s running threads) once its copies are done.
    runs: bool,
}

/// The rate a copy reads tier `src` at the tiers' latencies `lat`, bytes per ns: a copy keeps a
/// fixed number of lines in flight (memcpy's stream), so it runs at `gbps` scaled by the tier's
/// unloaded over loaded latency (writes are posted).
fn copy_rate(tiers: &[crate::platform::TierModel], lat: &[f64], gbps: f64, src: TierId) -> f64 {
    let t = src as usize;
    gbps * tiers[t].curve.unloaded_ns() / lat[t]
}

/// The progress of a thread's inline copies in `cpu_ns` of its time, at the tiers' latencies
/// `lat` ([`copy_rate`]). `moved(copy, bytes)` for what each copy moves; returns the time used,
/// ns.
fn copy_progress(
    copies: &std::collections::VecDeque<InlineCopy>,
    cpu_ns: f64,
    lat: &[f64],
    tiers: &[crate::platform::TierModel],
    gbps: f64,
    mut moved: impl FnMut(&InlineCopy, f64),
) -> f64 {
    let mut left = cpu_ns;
    for c in copies {
        if left <= 0.0 {
            break;
        }
        let rate = copy_rate(tiers, lat, gbps, c.from);
        let need = c.bytes / rate;
        if need <= left {
            moved(c, c.bytes);
            left -= need;
        } else {
            moved(c, rate * left);
            left = 0.0;
        }
    }
    cpu_ns - left
}

/// One running thread's sampling in an epoch (`Machine::sample`).
#[derive(Clone, Copy, Debug)]
struct SamplePlan {
    thread: usize,
    pid: u32,
    dist: usize,
    tid: u32,
    /// The thread's MLP, at least 1.
    m: f64,
    /// (expected samples, restrict to slow tiers, is_store) of its loads, then its stores.
    kinds: [(f64, bool, bool); 2],
}

/// A sample drawn ahead (`Machine::sample`): its page and region, and what it drew after the
/// page.
#[derive(Clone, Copy, Debug)]
struct DrawnAhead {
    page: u32,
    region: u32,
    tail: Option<SampleTail>,
}

/// The epoch's draws as `Machine::sample` makes them when no page draw is retried, from `rng`:
/// per plan entry and kind a Poisson count (`count`), then per sample its page and region and
/// its tail (`drawn`). With `stop = Some(k)` it stops right after the page draw of the k-th
/// sample (0-based, over the whole epoch), leaving `rng` where a retry of that draw goes on.
fn draw_ahead(
    plan: &[SamplePlan],
    dists: &[Dist],
    rng: &mut Rng,
    stop: Option<usize>,
    mut count: impl FnMut(u64),
    mut drawn: impl FnMut(u32, usize, Option<SampleTail>),
) {
    let mut k = 0usize;
    for sp in plan {
        let dist = &dists[sp.dist];
        for (lambda, slow_only, is_store) in sp.kinds {
            let n = rng.poisson(lambda);
            count(n);
            for _ in 0..n {
                let (p, r) = dist.sample_region(rng);
                if stop == Some(k) {
                    return;
                }
                k += 1;
                let prefetched = dist.regions[r].prefetched;
                let tail = SampleTail::draw(rng, prefetched, is_store, slow_only, sp.m);
                drawn(p, r, tail);
            }
        }
    }
    debug_assert!(stop.is_none(), "a retried draw the look-ahead did not make");
}

/// What a sample draws after its page: whether a prefetcher covered the load (then it is not
/// sampled, or it reports part of the latency), and the uniform draws placing its latency and
/// its time in the epoch. One function for the sampler and its look-ahead, so that both advance
/// the generator alike.
#[derive(Clone, Copy, Debug)]
struct SampleTail {
    covered: bool,
    lat_u: f64,
    time_u: f64,
}

impl SampleTail {
    #[inline]
    fn draw(
        rng: &mut Rng,
        prefetched: f64,
        is_store: bool,
        slow_only: bool,
        th_m: f64,
    ) -> Option<Self> {
        // The load events PEBS samplers use (MEM_LOAD_L3_MISS_RETIRED.LOCAL_DRAM and
        // .REMOTE_DRAM: HeMem, MEMTIS, Soar, Vulcan, PACT's slow-loads) count retired loads whose
        // data came from memory. A load whose line a prefetcher fetched finds it in L2/LLC or in
        // flight there: the prefetch carried the miss, and the load retires with a cache data
        // source, so it is not an event and is not sampled (docs/model.md, "Sampling"). At most
        // 1 - 1/m of a thread's misses are covered: a stream still misses where a prefetcher
        // (re)starts, about one line in m. Stores (MEM_INST_RETIRED.ALL_STORES) are all events.
        let drop = if is_store {
            0.0
        } else {
            prefetched.min(1.0 - 1.0 / th_m)
        };
        if drop > 0.0 && rng.chance(drop) {
            return None;
        }
        // Of the loads left, those whose line was still in flight report part of the latency
        // (load-latency records): a dependent or random miss waits the tier's whole loaded
        // latency; a load whose line a prefetcher already has in flight (a stream running m lines
        // ahead) waits for the rest, ~L/m.
        let rest = if is_store {
            prefetched
        } else if drop < 1.0 {
            ((prefetched - drop) / (1.0 - drop)).max(0.0)
        } else {
            0.0
        };
        let covered = !slow_only && rest > 0.0 && rng.chance(rest);
        let lat_u = rng.f64();
        let time_u = rng.f64();
        Some(SampleTail {
            covered,
            lat_u,
            time_u,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 128-page fast tier and a 256-page object that is only read, after one step.
    fn small_read_only_machine() -> Machine {
        let exp = crate::load_str(
            "small.toml",
            "workload = \"custom\"\nfast_tier_gb = 0.00048828125\nduration_s = 1\n\
             [[process]]\nname = \"r\"\n[[process.object]]\nname = \"a\"\nsize_mb = 1\n\
             [[process.thread]]\n[[process.thread.phase]]\nread_frac = 1.0\n\
             [[process.thread.phase.access]]\nobject = \"a\"\n",
            &[],
            None,
        )
        .unwrap();
        let mut m = Machine::new(&exp, false).unwrap();
        m.step().unwrap();
        m
    }

    /// Promoting the same pages with their shadows again and again, each demotion a remap onto
    /// the shadow, leaves the shadow list's stale entries behind; it is compacted, so it stays
    /// within twice the live shadows (plus its slack).
    #[test]
    fn the_shadow_list_stays_bounded_over_many_promotions_and_remaps() {
        let mut m = small_read_only_machine();
        let (fast, slow): (Vec<u32>, Vec<u32>) =
            (0..256u32).partition(|&p| m.page_tier(p as usize) == 0);
        let moves = |m: &mut Machine, pages: &[u32], to: u8, keep_shadow: bool| {
            let mut acts = pages
                .iter()
                .map(|&p| Action::Migrate {
                    page: PageId(p as u64),
                    to,
                    mode: tierkit_core::action::MigrateMode::Async,
                    keep_shadow,
                })
                .collect();
            m.apply(&mut acts);
            (0..20).for_each(|_| m.step().unwrap());
        };
        // room for 32 promotions, then 60 rounds of 32 up (with shadows) and down (remaps)
        moves(&mut m, &fast[..32], 1, false);
        let mut longest = 0;
        for round in 0..60 {
            let pages = &slow[(round % 4) * 32..(round % 4) * 32 + 32];
            moves(&mut m, pages, 0, true);
            assert_eq!(m.shadow.len(), 32, "round {round}");
            moves(&mut m, pages, 1, false);
            assert!(
                m.shadow.is_empty(),
                "round {round}: every demotion was a remap"
            );
            longest = longest.max(m.shadow_lists[1].len());
            m.check_invariants().unwrap();
        }
        assert!(longest <= 2 * 32 + 1024 + 1, "{longest}");
        assert!(longest > 1024, "the list was compacted: {longest}");
        assert!(
            m.shadow_lists[0].is_empty(),
            "shadows are made in the slow tier only"
        );
    }

    /// Asynchronous migrations beyond the queue's capacity are refused, reported as refused,
    /// and counted (the run's warnings name the count).
    #[test]
    fn migrations_beyond_the_queue_are_refused_and_counted() {
        let mut m = small_read_only_machine();
        let slow: Vec<u64> = (0..256u64)
            .filter(|&p| m.page_tier(p as usize) == 1)
            .collect();
        let extra = 3;
        let mut acts: Vec<Action> = (0..MAX_QUEUE + extra)
            .map(|i| Action::Migrate {
                page: PageId(slow[i % slow.len()]),
                to: 0,
                mode: tierkit_core::action::MigrateMode::Async,
                keep_shadow: false,
            })
            .collect();
        m.apply(&mut acts);
        assert_eq!(m.queue.len(), MAX_QUEUE);
        assert_eq!(m.queue_refused, extra as u64);
        let refused = m
            .sync_results
            .iter()
            .filter(|r| r.outcome == MigrationOutcome::Refused)
            .count();
        assert_eq!(refused, extra);
    }

    proptest::proptest! {
        /// The epoch's samples are sorted as the stable `sort_by_key` on (time, page) sorts
        /// them: samples equal in both keep their order (they differ in their other fields).
        #[test]
        fn samples_sort_as_the_stable_sort_by_time_and_page(
            v in proptest::collection::vec((0u64..6, 0u64..4, 0u32..1000), 0..80),
            big_page in proptest::bool::ANY,
        ) {
            let mut a: Vec<Sample> = v
                .iter()
                .map(|&(t, p, tid)| Sample {
                    page: PageId(if big_page && tid == 0 { p | 1 << 60 } else { p }),
                    tier: 0,
                    is_store: false,
                    pid: 0,
                    tid,
                    latency_ns: 0.0,
                    exposed_ns: 0.0,
                    time_ns: t,
                })
                .collect();
            let mut b = a.clone();
            let (mut keys, mut out) = (Vec::new(), Vec::new());
            sort_samples(&mut a, &mut keys, &mut out);
            b.sort_by_key(|s| (s.time_ns, s.page.0));
            proptest::prop_assert_eq!(a, b);
        }
    }

    /// The last accessed-bit clear of every page (8 B a page) is kept only for a policy that
    /// says it tests accessed bits; one that tests them without saying so fails the run with an
    /// error naming the need, at its next step, never a panic or a silent answer.
    /// The last faulting thread takes 1 byte a page unless a process has 255 threads or more,
    /// 2 unless it has 65,535 or more, and every form answers alike; the estimate follows the
    /// form.
    #[test]
    fn fault_owners_are_narrow_unless_a_process_has_too_many_threads() {
        let sets = vec![
            "working_set_gb=0.1".to_string(),
            "hot_set_gb=0.05".to_string(),
        ];
        let mut exp = crate::load("gups-hotset", &sets, Some(3)).unwrap();
        assert_eq!(FaultOwners::width_for(&exp), 1);
        let hint = TelemetryNeeds {
            hint_faults: true,
            ..TelemetryNeeds::default()
        };
        let est = |e: &Experiment| Machine::memory_bytes(e, &hint).page_table;
        let tiny = est(&exp);
        let m = Machine::with_needs(&exp, false, &hint).unwrap();
        assert!(matches!(m.last_fault_tid, FaultOwners::Tiny(_)));
        assert_eq!(m.last_fault_tid.len() as u64, exp.footprint_pages());
        let pages = exp.footprint_pages();
        for (count, width) in [
            (u8::MAX as u32 - 1, 1),
            (u8::MAX as u32, 2),
            (u16::MAX as u32 - 1, 2),
            (u16::MAX as u32, 4),
        ] {
            exp.processes[0].threads[0].count = count;
            assert_eq!(FaultOwners::width_for(&exp), width, "{count} threads");
            assert_eq!(est(&exp), tiny + (width - 1) * pages, "{count} threads");
        }
        let mut forms = [1, 2, 4].map(|w| FaultOwners::new(8, w).unwrap());
        for (i, owner) in [(3, 7), (3, 7), (3, 254), (0, 1), (3, 0), (0, 1)] {
            let got = forms.each_mut().map(|f| f.replace(i, owner));
            assert!(got.iter().all(|&g| g == got[0]), "{got:?}");
        }
        let mut b = FaultOwners::new(8, 2).unwrap();
        for (i, owner) in [(3, 7), (3, 65534), (3, 65534), (3, 0)] {
            assert_eq!(b.replace(i, owner), forms[2].replace(i, owner));
        }
        let a = &mut forms[0];
        a.resize(12);
        assert_eq!((a.len(), a.capacity_bytes() >= 12), (12, true));
    }

    proptest::proptest! {
        /// Whatever kswapd's runs, its turns are sorted and disjoint, lie inside its runs, and
        /// hold its share of each stretch of running time to within one turn (a stretch: runs
        /// that follow each other without a gap).
        #[test]
        fn kswapds_turns_hold_its_share_of_its_running_time(
            share in 0.05f64..1.0,
            slice_ms in 0.1f64..8.0,
            runs in proptest::collection::vec((0u32..20_000, 1u32..30_000), 1..40),
        ) {
            let mut b = BusySpans::with_turns(share, slice_ms);
            let mut t = 0.0f64;
            let mut stretches: Vec<(f64, f64)> = Vec::new();
            for &(gap_us, len_us) in &runs {
                let a = t + gap_us as f64 * 1e3;
                let e = a + len_us as f64 * 1e3;
                b.add(a, e, &mut []);
                match stretches.last_mut() {
                    Some(s) if a <= s.1 => s.1 = e,
                    _ => stretches.push((a, e)),
                }
                t = e;
            }
            for w in b.spans.windows(2) {
                proptest::prop_assert!(w[0].1 < w[1].0, "{:?}", w);
            }
            let slice = slice_ms * 1e6;
            for &(a, e) in &stretches {
                let held: f64 = b
                    .spans
                    .iter()
                    .map(|s| (s.1.min(e) - s.0.max(a)).max(0.0))
                    .sum();
                let want = if share >= 1.0 { e - a } else { share * (e - a) };
                proptest::prop_assert!(
                    (held - want).abs() <= slice + 1e-6 * (e - a),
                    "stretch ({a}, {e}): held {held}, share {want}"
                );
            }
            let outside: f64 = b
                .spans
                .iter()
                .map(|s| {
                    let inside: f64 = stretches
                        .iter()
                        .map(|&(a, e)| (s.1.min(e) - s.0.max(a)).max(0.0))
                        .sum();
                    s.1 - s.0 - inside
                })
                .sum();
            proptest::prop_assert!(outside.abs() < 1e-3, "{outside} ns of turns outside the runs");
        }
    }

    /// With kswapd on the threads' CPU, its running time is cut into turns of
    /// `kswapd_slice_ms` that hold `kswapd_cpu_share` of it, counted from when it woke (a span
    /// that continues the last one keeps the turns' phase); with a share of 1 the whole span
    /// is kswapd's, and with turns of 0 every instant counts the share.
    #[test]
    fn kswapd_takes_turns_with_the_threads_from_when_it_woke() {
        let spans = |sets: &[&str], runs: &[(u64, u64)]| {
            let mut sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            sets.extend(
                [
                    "working_set_gb=0.1",
                    "hot_set_gb=0.05",
                    "kswapd_shares_cpu=true",
                ]
                .map(String::from),
            );
            let exp = crate::load("gups-hotset", &sets, Some(3)).unwrap();
            let mut m = Machine::new(&exp, false).unwrap();
            m.step().unwrap();
            for &(a, b) in runs {
                m.kernel_ran(a, b);
            }
            (m.busy.spans.clone(), m.busy.weight)
        };
        let ms = 1_000_000u64;
        let f = 1e6;
        // 4 ms turns at half the CPU: kswapd, the threads, kswapd ... from the wake at 1 ms; the
        // second run continues the first (same phase), the third starts after a sleep
        let (s, w) = spans(&[], &[(ms, 7 * ms), (7 * ms, 12 * ms), (20 * ms, 23 * ms)]);
        assert_eq!(w, 1.0);
        assert_eq!(
            s,
            vec![(f, 5.0 * f), (9.0 * f, 12.0 * f), (20.0 * f, 23.0 * f)]
        );
        let (s, _) = spans(
            &["kswapd_slice_ms=1", "kswapd_cpu_share=0.25"],
            &[(0, 9 * ms)],
        );
        assert_eq!(s, vec![(0.0, f), (4.0 * f, 5.0 * f), (8.0 * f, 9.0 * f)]);
        let (s, w) = spans(&["kswapd_cpu_share=1"], &[(ms, 7 * ms), (7 * ms, 12 * ms)]);
        assert_eq!((s, w), (vec![(f, 12.0 * f)], 1.0));
        let (s, w) = spans(&["kswapd_slice_ms=0"], &[(ms, 7 * ms)]);
        assert_eq!((s, w), (vec![(f, 7.0 * f)], 0.5));
    }

    /// A span of kswapd's counts the misses the phases' history gives for it now, whatever the
    /// step that recorded it: a span that reached past the history's end is recounted when the
    /// epochs after it are recorded (the thread's phases change its rate every 0.7-1.3 ms), and
    /// the history keeps the breakpoints a span read.
    #[test]
    fn kswapds_spans_count_the_misses_the_history_gives_now() {
        for turns in [
            "kswapd_slice_ms = 0.3",
            "kswapd_cpu_share = 1",
            "kswapd_slice_ms = 0",
        ] {
            let text = format!(
                "workload = \"custom\"\nduration_s = 1\nepoch_ms = 0.25\nkswapd_shares_cpu = true\n{turns}\n\
                 [[process]]\nname = \"p\"\n[[process.object]]\nname = \"o\"\nsize_mb = 64\n\
                 [[process.thread]]\ncount = 1\n\
                 [[process.thread.phase]]\nmlp = 4\ncompute_ns = 100\nduration_s = 0.0013\n\
                 [[process.thread.phase.access]]\nobject = \"o\"\n\
                 [[process.thread.phase]]\nmlp = 1\ncompute_ns = 3000\nduration_s = 0.0007\n\
                 [[process.thread.phase.access]]\nobject = \"o\"\n"
            );
            let exp = crate::load_str("spans.toml", &text, &[], None).unwrap();
            let mut m = Machine::new(&exp, false).unwrap();
            for k in 0..400u64 {
                m.step().unwrap();
                if k % 3 == 0 {
                    // kswapd's clock runs ahead of the machine's, as after a long step
                    let now = m.now_ns as u64;
                    m.kernel_ran(now.saturating_sub(100_000), now + 700_000);
                }
                for (d, dd) in m.dists.iter().enumerate() {
                    let r = &m.busy.removed[d];
                    for (j, &(a, b)) in m.busy.spans.iter().enumerate() {
                        let now = m.busy.weight * (dd.cum_at(b) - dd.cum_at(a));
                        let kept = r[j + 1] - r[j];
                        assert!(
                            (now - kept).abs() <= 1e-9 * now.abs().max(1.0),
                            "{turns}, step {k}: span {j} ({a}, {b}) counted {kept}, the history gives {now}"
                        );
                    }
                }
            }
            assert!(!m.busy.spans.is_empty());
        }
    }

    /// A shootdown sends no IPI to a thread waiting at its phase's barrier (its CPU idles in
    /// lazy TLB mode, which native_flush_tlb_multi skips): it owes no stall for it, and the
    /// initiator pays for one target fewer. A running thread is a target.
    #[test]
    fn a_thread_waiting_at_a_barrier_takes_no_shootdown_ipi() {
        let sets = vec![
            "working_set_gb=0.1".to_string(),
            "hot_set_gb=0.05".to_string(),
            "threads=3".to_string(),
        ];
        let exp = crate::load("gups-hotset", &sets, Some(3)).unwrap();
        let mut m = Machine::new(&exp, false).unwrap();
        let ts = m.procs[0].threads.clone();
        assert_eq!(ts.len(), 3);
        for &ti in &ts {
            m.threads[ti].active = true;
        }
        m.threads[ts[2]].waiting = true;
        let c = exp.platform.costs.clone();
        let cost = m.shootdown(0, 0, Some(ts[0]));
        let one_target = (c.shootdown_base_us + c.shootdown_per_target_us) * 1e3;
        assert!((cost - one_target).abs() < 1e-9, "{cost} vs {one_target}");
        assert_eq!(m.threads[ts[0]].stall_ns, 0.0);
        assert_eq!(m.threads[ts[1]].stall_ns, c.shootdown_ipi_us * 1e3);
        assert_eq!(m.threads[ts[2]].stall_ns, 0.0);
        assert_eq!(m.stats.shootdown_ipis, 1);
        // once it runs again it is a target like the others
        m.threads[ts[2]].waiting = false;
        m.shootdown(0, 0, Some(ts[0]));
        assert_eq!(m.threads[ts[2]].stall_ns, c.shootdown_ipi_us * 1e3);
        assert_eq!(m.stats.shootdown_ipis, 3);
    }

    #[test]
    fn accessed_bit_clear_times_are_kept_only_for_policies_that_declare_them() {
        let sets = vec![
            "working_set_gb=0.1".to_string(),
            "hot_set_gb=0.05".to_string(),
        ];
        let exp = crate::load("gups-hotset", &sets, Some(3)).unwrap();
        let declared = TelemetryNeeds {
            accessed_bits: true,
            ..TelemetryNeeds::default()
        };
        let mut yes = Machine::with_needs(&exp, false, &declared).unwrap();
        let mut no = Machine::with_needs(&exp, false, &TelemetryNeeds::default()).unwrap();
        assert_eq!(yes.last_clear.len() as u64, exp.footprint_pages());
        assert!(no.last_clear.is_empty());
        let per_page = |m: &Machine| m.allocated_bytes().page_table / exp.footprint_pages();
        // whole-ns instants in a run shorter than 2^39 ns: 5 bytes a page; an epoch that is not
        // a whole number of ns keeps f64s
        assert_eq!(per_page(&yes), per_page(&no) + 5);
        assert_eq!(yes.last_clear.page_bytes(), 5);
        // the same experiment with one more setting, its machine keeping clear times
        let with = |set: &str| {
            let e = crate::load(
                "gups-hotset",
                &[sets.clone(), vec![set.to_string()]].concat(),
                Some(3),
            )
            .unwrap();
            Machine::with_needs(&e, false, &declared).unwrap()
        };
        let wide = with("epoch_ms=0.0123456");
        assert!(!wide.last_clear.is_empty() && wide.last_clear.page_bytes() == 8);
        // a run of 600 s passes 2^39 ns (550 s): 6 bytes a page
        assert_eq!(with("duration_s=600").last_clear.page_bytes(), 6);
        let est = |n: &TelemetryNeeds| Machine::memory_bytes(&exp, n).page_table;
        assert_eq!(
            est(&declared),
            est(&TelemetryNeeds::default()) + 5 * exp.footprint_pages()
        );
        for m in [&mut yes, &mut no] {
            m.step().unwrap();
        }
        let pages: Vec<PageId> = (0..64).map(PageId).collect();
        let mut bits = Vec::new();
        yes.test_and_clear_accessed(&pages, &mut bits);
        assert_eq!(bits.len(), 64);
        yes.step().unwrap();
        no.test_and_clear_accessed(&pages, &mut bits);
        assert_eq!(bits, vec![false; 64]);
        let err = no.step().unwrap_err().to_string();
        assert!(err.contains("TelemetryNeeds::accessed_bits"), "{err}");
    }

    /// Samples drawn ahead (to prefetch their pages) are the samples drawn one by one, bit for
    /// bit, also where many draws are retried (slow loads only, most pages fast; pages not yet
    /// allocated) and whatever the sampling period.
    #[test]
    fn samples_drawn_ahead_are_the_samples_drawn_one_by_one() {
        let cases: [(&str, &[&str], SampleFilter, u64); 4] = [
            (
                "gups-hotset",
                &["working_set_gb=0.5", "hot_set_gb=0.2", "page_size=4KiB"],
                SampleFilter::AllMisses,
                997,
            ),
            (
                "gups-hotset",
                &[
                    "working_set_gb=0.5",
                    "hot_set_gb=0.2",
                    "page_size=4KiB",
                    "fast_ratio=4:5",
                ],
                SampleFilter::SlowLoads,
                401,
            ),
            (
                "graph-kron",
                &["vertices_gb=0.1", "edges_gb=0.1", "frontier_gb=0.02"],
                SampleFilter::SlowLoads,
                199,
            ),
            (
                "mig-friendliness",
                &[
                    "mix=uu",
                    "scale=0.004",
                    "fast_tier_gb=0.1",
                    "offset_s=0.002",
                ],
                SampleFilter::Loads,
                53,
            ),
        ];
        for (name, sets, filter, period) in cases {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let exp = crate::load(name, &sets, Some(11)).unwrap();
            let mut a = Machine::new(&exp, false).unwrap();
            let mut b = Machine::new(&exp, false).unwrap();
            b.modes.sample_one_by_one = true;
            a.sampling = Some((period, filter));
            b.sampling = Some((period, filter));
            let mut n = 0;
            for _ in 0..20 {
                a.step().unwrap();
                b.step().unwrap();
                assert_eq!(a.tel.samples, b.tel.samples, "{name}");
                n += a.tel.samples.len();
            }
            assert!(n > 100, "{name}: {n} samples");
        }
    }

    /// A sampled load's exposed latency is the part of its latency the thread's other misses in
    /// flight did not hide: all of it for the random tenant's dependent misses (MLP 1), an eighth
    /// for the streaming tenant's (MLP 8), while both report the same loaded latency of the slow
    /// tier (PACT §4.3.7's timed-PEBS latency, which `pact:score=latency` weighs by).
    #[test]
    fn a_sample_exposes_its_latency_over_its_threads_mlp() {
        let sets: Vec<String> = ["size_gb=0.05", "fast_ratio=1:4"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let exp = crate::load("masim-colocate", &sets, Some(5)).unwrap();
        let mut m = Machine::new(&exp, false).unwrap();
        m.sampling = Some((97, SampleFilter::AllMisses));
        // (load latency, exposed latency, samples) per process
        let mut sum = [(0.0f64, 0.0f64, 0u32); 2];
        for _ in 0..50 {
            m.step().unwrap();
            for s in &m.tel.samples {
                let e = &mut sum[s.pid as usize];
                e.0 += f64::from(s.latency_ns);
                e.1 += f64::from(s.exposed_ns);
                e.2 += 1;
            }
        }
        let mean = |e: (f64, f64, u32)| (e.0 / f64::from(e.2), e.1 / f64::from(e.2));
        let (seq, rand) = (mean(sum[0]), mean(sum[1]));
        assert!(sum[0].2 > 100 && sum[1].2 > 100, "{sum:?}");
        assert_eq!(exp.processes[0].name, "seq");
        assert!((rand.1 / rand.0 - 1.0).abs() < 1e-6, "rand {rand:?}");
        assert!((seq.1 / seq.0 - 1.0 / 8.0).abs() < 1e-6, "seq {seq:?}");
        // both read the same tiers: their load latencies differ only by the mix of tiers and by
        // the stream's prefetched lines, which report less
        assert!(rand.1 > 4.0 * seq.1, "exposed: rand {rand:?} seq {seq:?}");
    }

    /// Allocating runs of pages together leaves the machine exactly as allocating them one by
    /// one does: tiers, counters, page events and every phase's tier mass, bit for bit, whether
    /// processes start alone or together (interleaved first touch) and whether the fast tier
    /// fills.
    #[test]
    fn allocating_in_runs_is_allocating_page_by_page() {
        let cases: [(&str, &[&str]); 4] = [
            (
                "gups-hotset",
                &["working_set_gb=0.5", "hot_set_gb=0.2", "page_size=4KiB"],
            ),
            (
                "mig-friendliness",
                &["mix=ff", "scale=0.004", "fast_tier_gb=0.1", "offset_s=0"],
            ),
            (
                "mig-friendliness",
                &[
                    "mix=uu",
                    "scale=0.004",
                    "fast_tier_gb=0.1",
                    "offset_s=0.002",
                ],
            ),
            (
                "lc-be-mix",
                &[
                    "scale=0.004",
                    "fast_tier_gb=0.05",
                    "pagerank_start_s=0",
                    "liblinear_start_s=0.003",
                ],
            ),
        ];
        for (name, sets) in cases {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let exp = crate::load(name, &sets, Some(3)).unwrap();
            let mut a = Machine::new(&exp, false).unwrap();
            let mut b = Machine::new(&exp, false).unwrap();
            b.modes.per_page_alloc = true;
            for _ in 0..5 {
                a.step().unwrap();
                b.step().unwrap();
                assert_eq!(a.pte, b.pte, "{name}");
                assert_eq!(a.used, b.used, "{name}");
                let ev = |m: &Machine| -> Vec<(u64, u32, u8)> {
                    m.tel
                        .allocated
                        .iter()
                        .map(|e| (e.page.0, e.pid, e.tier))
                        .collect()
                };
                assert_eq!(ev(&a), ev(&b), "{name}");
                for (x, y) in a.procs.iter().zip(&b.procs) {
                    assert_eq!(x.resident, y.resident, "{name}");
                    for (ox, oy) in x.objects.iter().zip(&y.objects) {
                        assert_eq!(ox.resident, oy.resident, "{name}");
                    }
                }
                let bits = |m: &Machine| -> Vec<u64> {
                    m.dists
                        .iter()
                        .flat_map(|d| d.mass.iter().map(|x| x.to_bits()))
                        .collect()
                };
                assert_eq!(bits(&a), bits(&b), "{name}");
                assert_eq!(a.last_clear.bits(), b.last_clear.bits(), "{name}");
            }
            assert!(a.used[0] == a.cap[0], "{name}: the fast tier fills");
        }
    }
}
