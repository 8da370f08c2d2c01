//! Nomad: non-exclusive memory tiering via transactional page migration (Xiang et al., OSDI '24),
//! as its artifact implements it on the TPP kernel (github.com/lingfenghsiang/Nomad:
//! src/nomad_module/async_promote_main.c, src/implementation_patches/nomad.patch), and as Soar/Alto
//! (OSDI '25 §6) and the migration-toggling paper run it as a baseline.
//!
//! - **Candidates** from NUMA hint faults on slow-tier pages, TPP's way: a fault on a page not on
//!   the active LRU list activates it; a fault on an active page makes it a promotion candidate.
//! - **Promotion is asynchronous**: the faulting thread only enqueues the candidate in a bounded
//!   promotion queue (PROMOTE_QUEUE_LEN = 512; a full queue drops the candidate, a queued page is
//!   not queued twice) and returns. A background worker drains the queue with transactional
//!   migrations (copy while mapped, abort if the page is written meanwhile), so no application
//!   thread stalls: at the fault's instant on the fault path (`fault_path`, default true: the
//!   enqueue queues the worker's work item), at the epoch's end otherwise. A slot stays taken
//!   until its migration finishes, so at most 512 promotions are ever in flight. The worker
//!   allocates without reclaim: a promotion is attempted only while the fast tier keeps more
//!   free pages than its min watermark.
//! - **Retries**: the worker's migration loop (nomad_transit_pages, a copy of migrate_pages)
//!   makes up to 10 passes over its batch, and a transactional copy that aborted (-EAGAIN: the
//!   page was written during the copy) is tried again in the next pass. Here a pass is an epoch:
//!   an aborted promotion keeps its queue slot and is retried until it has been tried
//!   `NOMAD_PASSES` times; then it fails, and the page waits for its next hint fault. A page
//!   written throughout every copy (a hot, write-heavy 2 MiB page: 420 us per copy) never moves,
//!   which is what transactional migration means; Nomad's artifact does not shadow THPs at all
//!   (demote_shadow_page_breakup BUG()s on one).
//! - **Page shadowing**: a promoted page keeps its slow-tier copy (`keep_shadow`), so demoting it
//!   while still clean is a remap; a write drops the shadow (the machine does that).
//! - **Demotion** as TPP: kswapd below TPP's demotion watermark, from the tail of the fast tier's
//!   inactive list, with the kernel's second chance.
//! - **The scanner's period** as TPP's 5.13 kernel under the artifact adapts it
//!   (`slow_fault_stats`, default true): that kernel's task_numa_fault has no memory-tiering
//!   check, and do_numa_page hands it every fault, also one it only queues for the worker
//!   (nomad.patch: `queue_page_fault`, then `goto out_map`, which ends at `out:`). The faults
//!   are remote (the slow node has no CPUs) and mostly private, so update_task_scan_period
//!   doubles the period at each placement, up to task_scan_max. Under upstream 6.x accounting
//!   (`slow_fault_stats=false`, tierkit's rule before 2026-12-04) no queued fault counts, and a
//!   process Nomad keeps faulting was scanned at its first period for good (one thread of
//!   uniform GUPS: 13.6M hint faults in 90 s against 3.1M).

use std::collections::VecDeque;

use tierkit_core::memory;
use tierkit_core::params::ParamKind;
use tierkit_core::policy::Builder;
use tierkit_core::{
    Action, Mechanism, MigrateMode, PageId, Params, Policy, PolicyInfo, Telemetry, TelemetryNeeds,
};

use crate::common::spec_name;
use crate::lru::{
    hint_scan, numa_scan, Completion, Tiering, P_DEMOTE_SCALE, P_DMA_ZONE, P_FAULT_PATH,
    P_FIRST_WINDOW, P_KSWAPD_DEMOTE, P_KSWAPD_SCAN, P_KSWAPD_TICK, P_KSWAPD_WAKE_DELAY, P_LRU_GEN,
    P_LRU_GEN_MM_SWITCH, P_LRU_GEN_MM_TABLES, P_LRU_STATS_FLUSH, P_MAX_RECLAIM_RETRIES,
    P_MIN_FREE_KBYTES, P_SCAN_DELAY, P_SCAN_PERIOD, P_SCAN_PERIOD_MAX, P_SCAN_PERIOD_MIN,
    P_SCAN_SIZE, P_SCAN_STATS, P_WSF,
};

const PARAMS: &[tierkit_core::ParamDef] = &[
    P_SCAN_PERIOD,
    P_SCAN_SIZE,
    P_SCAN_PERIOD_MIN,
    P_SCAN_PERIOD_MAX,
    P_SCAN_DELAY,
    P_SCAN_STATS,
    tierkit_core::ParamDef {
        name: "slow_fault_stats",
        kind: ParamKind::Bool,
        default: "true",
        unit: "",
        doc: "task_numa_fault accounts every hint fault, slow-tier ones as remote, as TPP's 5.13 kernel under Nomad's artifact does (no memory-tiering check there; do_numa_page ends a fault Nomad queues at task_numa_fault on the page's node), so the scan period doubles while the faults stay remote; false: upstream 6.x, where a slow-tier fault counts only if its page was promoted on it (a queued one never is, so the period stays at its start)",
    },
    P_FIRST_WINDOW,
    tierkit_core::ParamDef {
        name: "queue_len",
        kind: ParamKind::Int {
            min: 1,
            max: 1 << 24,
        },
        default: "512",
        unit: "pages",
        doc: "promotion queue entries, queued or in flight (Nomad's PROMOTE_QUEUE_LEN)",
    },
    P_DEMOTE_SCALE,
    P_WSF,
    P_MIN_FREE_KBYTES,
    P_KSWAPD_SCAN,
    P_KSWAPD_WAKE_DELAY,
    P_KSWAPD_TICK,
    P_KSWAPD_DEMOTE,
    P_LRU_STATS_FLUSH,
    P_MAX_RECLAIM_RETRIES,
    P_LRU_GEN,
    P_DMA_ZONE,
    P_LRU_GEN_MM_TABLES,
    P_LRU_GEN_MM_SWITCH,
    tierkit_core::ParamDef {
        doc: "take each hint fault at its instant inside the epoch, with kswapd run up to it: a page the fault queues goes to the worker then, which starts its transactional copy in the background (the artifact's enqueue queues the worker's work item, queue_work in async_promote_main.c); aborted copies are retried at the epoch's end, the worker's next pass (on the simulated machine, Policy::on_fault); false: every fault of an epoch at its end, and the worker drains the queue then (the model before 2026-11-30, and what tierkitd does)",
        ..P_FAULT_PATH
    },
];

pub const INFO: PolicyInfo = PolicyInfo {
    name: "nomad",
    description: "Nomad: asynchronous transactional promotion through a 512-entry queue, shadow copies, TPP demotion",
    source: "Nomad (OSDI '24) §3-4; artifact github.com/lingfenghsiang/Nomad (async_promote_main.c)",
    params: PARAMS,
    positional: None,
    build: Builder::Base(|p| Ok(Box::new(Nomad::new(p)))),
};

pub struct Nomad {
    name: String,
    scan: tierkit_core::NumaScan,
    queue_len: u64,
    demote_scale_factor: u64,
    t: Tiering,
    /// Queued candidates not yet handed to a migration (oldest first). Each carries the LRU
    /// mark (PG_prom_queued) until its migration completes; the mark count is the queue's
    /// occupancy.
    pending: VecDeque<PageId>,
    queued: u64,
    queue_full: u64,
    transactional_done: u64,
    queue_peak: u64,
    /// Attempts so far of each promotion in flight that has aborted at least once.
    attempts: rustc_hash::FxHashMap<PageId, u8>,
    retries: u64,
    /// Promotions abandoned after `NOMAD_PASSES` aborted attempts.
    gave_up: u64,
    /// Aborted promotions reported by the results being taken.
    aborted: Vec<PageId>,
    /// Aborted promotions of this epoch so far, holding their slots, retried at its end (the
    /// worker's next pass).
    retry: Vec<PageId>,
    /// `fault_path`: take faults one at a time when the backend offers it, and whether it did.
    fault_path: bool,
    on_path: bool,
}

/// Passes of nomad_transit_pages over a batch (`pass < 10`): a transactional promotion is
/// attempted at most this many times.
pub const NOMAD_PASSES: u8 = 10;

impl Nomad {
    pub fn new(p: &Params) -> Self {
        Nomad {
            name: spec_name(INFO.name, PARAMS, p),
            scan: tierkit_core::NumaScan {
                slow_fault_stats: p.bool("slow_fault_stats"),
                ..numa_scan(p)
            },
            queue_len: p.u64("queue_len"),
            demote_scale_factor: p.u64("demote_scale_factor"),
            t: Tiering::from_params(p),
            pending: VecDeque::new(),
            queued: 0,
            queue_full: 0,
            transactional_done: 0,
            queue_peak: 0,
            attempts: Default::default(),
            aborted: Vec::new(),
            retry: Vec::new(),
            fault_path: p.bool("fault_path"),
            on_path: false,
            retries: 0,
            gave_up: 0,
        }
    }

    /// Entries taken in the promotion queue (waiting or in flight).
    pub fn queue_occupancy(&self) -> u64 {
        self.t.lru.marked()
    }

    /// The epoch's migration results not taken yet: completed promotions free their slots; an
    /// aborted one keeps its slot for the worker's next pass (`retry`, at the step's end) until
    /// it has been tried `NOMAD_PASSES` times. `end`: the step's end (the rest of the epoch),
    /// else a fault's instant (the results so far).
    fn take_results(&mut self, tel: &Telemetry, end: bool) {
        let Nomad {
            t,
            transactional_done: done,
            attempts,
            aborted,
            ..
        } = self;
        let on_result = |m: &tierkit_core::MigrationResult, c: Completion| {
            if c != (Completion::Ours { mark: true }) {
                return;
            }
            match m.outcome {
                tierkit_core::MigrationOutcome::Done => {
                    *done += 1;
                    attempts.remove(&m.page);
                }
                tierkit_core::MigrationOutcome::Aborted => aborted.push(m.page),
                _ => {
                    attempts.remove(&m.page);
                }
            }
        };
        if end {
            t.begin(tel, on_result);
        } else {
            t.catch_up(tel, on_result);
        }
        for p in self.aborted.drain(..) {
            let n = self.attempts.entry(p).or_insert(1);
            if *n < NOMAD_PASSES && self.t.lru.tier(p).is_some() {
                *n += 1;
                self.retries += 1;
                self.t.lru.set_mark(p, true);
                self.retry.push(p);
            } else {
                self.attempts.remove(&p);
                self.gave_up += 1;
            }
        }
    }

    /// The hint fault's part (do_numa_page in the artifact's TPP kernel): a first fault
    /// activates the page; a fault on an active page enqueues it for the worker, unless it is
    /// queued already or the queue is full.
    fn fault(&mut self, f: &tierkit_core::HintFault) {
        if !self.t.fault_actionable(f) || self.t.lru.is_marked(f.page) {
            return;
        }
        if !self.t.lru.is_active(f.page) {
            self.t.lru.activate(f.page);
            self.t.counts.activations += 1;
            return;
        }
        if self.queue_occupancy() >= self.queue_len {
            self.queue_full += 1;
            return;
        }
        self.t.lru.set_mark(f.page, true);
        self.pending.push_back(f.page);
        self.queued += 1;
    }

    fn demote_wmark(&self) -> u64 {
        self.t.tpp_demote_wmark(self.demote_scale_factor)
    }

    /// kswapd's wake and balance marks: both TPP's demotion watermark, as in [`crate::tpp`].
    fn kswapd_marks(&self) -> (u64, u64) {
        let demote = self.demote_wmark();
        (demote, demote)
    }

    /// The promotion worker: hand every waiting entry to a transactional migration, keeping the
    /// slow-tier copy as a shadow.
    fn drain_queue(&mut self, tel: &Telemetry, out: &mut Vec<Action>) {
        while let Some(p) = self.pending.pop_front() {
            let lru = &self.t.lru;
            if !lru.is_marked(p) || lru.is_isolated(p) {
                continue;
            }
            if lru.tier(p) == Some(tierkit_core::FAST) {
                // Moved up meanwhile by someone else: the slot is free again.
                self.t.lru.set_mark(p, false);
                continue;
            }
            if self.t.wm.ok(self.t.fast_free(tel), self.t.wm.base[0], 1) {
                self.t.promote(p, MigrateMode::Transactional, true, out);
            } else {
                self.t.lru.set_mark(p, false);
                self.t.counts.promote_fail_nomem += 1;
            }
        }
    }
}

impl Policy for Nomad {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn needs(&self) -> TelemetryNeeds {
        TelemetryNeeds {
            hint_faults: true,
            quantum_ns: 0,
            accessed_bits: true,
            ..TelemetryNeeds::default()
        }
    }

    /// Per page: the LRU (list links 8 B and a flags byte; see `Lru::bytes_for`); and the promotion
    /// queue and its retry counts, at most `queue_len` entries each.
    fn memory_bytes(&self, space: &tierkit_core::PageSpace) -> u64 {
        Tiering::bytes_for(space.pages)
            + memory::bytes_of::<PageId>(self.queue_len)
            + memory::hash_map_bytes::<PageId, u8>(self.queue_len)
    }

    fn reserve(&mut self, space: &tierkit_core::PageSpace) -> tierkit_core::Result<()> {
        self.t.reserve(space.pages)?;
        let oom = |_| tierkit_core::Error::OutOfMemory {
            what: "Nomad's promotion queue".into(),
            bytes: self.queue_len * 8,
        };
        self.pending
            .try_reserve_exact(self.queue_len as usize)
            .map_err(oom)?;
        self.attempts
            .try_reserve(self.queue_len as usize)
            .map_err(oom)
    }

    fn allocated_bytes(&self) -> u64 {
        self.t.bytes()
            + memory::bytes_of::<PageId>(self.pending.capacity() as u64)
            + memory::hash_map_capacity_bytes::<PageId, u8>(self.attempts.capacity() as u64)
    }

    fn init(&mut self, _tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        out.push(hint_scan(&self.scan));
    }

    fn step(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        self.take_results(tel, true);
        // The next pass of nomad_transit_pages: an aborted copy is tried again, in its slot.
        for p in std::mem::take(&mut self.retry) {
            self.pending.push_front(p);
        }
        if !self.on_path {
            for f in &tel.hint_faults {
                self.fault(f);
            }
        }
        self.queue_peak = self.queue_peak.max(self.queue_occupancy());
        self.drain_queue(tel, out);
        let (wake_below, balanced_at) = self.kswapd_marks();
        self.t.run_kswapd(tel, mech, out, wake_below, balanced_at);
    }

    /// On the fault path each fault is taken at its instant, with kswapd run up to it, and a
    /// page it queues goes to the worker then: the artifact's enqueue queues the worker's work
    /// item whenever it is not pending (queue_work in async_promote_main.c), and the worker
    /// copies in the background. Aborted copies still wait for the worker's next pass, at the
    /// step's end.
    fn fault_path(&mut self) -> bool {
        self.on_path = self.fault_path;
        self.on_path
    }

    fn on_fault(
        &mut self,
        f: &tierkit_core::HintFault,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
    ) {
        self.take_results(tel, false);
        if !self.t.fault_actionable(f) {
            return;
        }
        let (wake_below, balanced_at) = self.kswapd_marks();
        self.t
            .run_kswapd_until(tel, mech, out, wake_below, balanced_at, f.time_ns);
        self.fault(f);
        self.queue_peak = self.queue_peak.max(self.queue_occupancy());
        self.drain_queue(tel, out);
    }

    /// kswapd's timer (`kswapd_tick_us`) between the faults, with TPP's demotion watermark.
    fn next_timer_ns(&self) -> Option<u64> {
        self.t.kswapd_timer_ns().filter(|_| self.on_path)
    }

    fn on_timer(
        &mut self,
        t_ns: u64,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
    ) {
        self.take_results(tel, false);
        let (wake_below, balanced_at) = self.kswapd_marks();
        self.t
            .on_kswapd_timer(tel, mech, out, wake_below, balanced_at, t_ns);
    }

    fn series(&mut self, out: &mut Vec<(String, f64)>) {
        self.t.series(out);
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut v = Vec::new();
        self.t.stats(&mut v);
        v.push(("queued".into(), self.queued as f64));
        v.push(("queue_full".into(), self.queue_full as f64));
        v.push(("queue_occupancy".into(), self.queue_occupancy() as f64));
        v.push(("queue_peak".into(), self.queue_peak as f64));
        v.push(("transactional_done".into(), self.transactional_done as f64));
        v.push(("retries".into(), self.retries as f64));
        v.push(("gave_up".into(), self.gave_up as f64));
        v
    }

    fn warnings(&self) -> Vec<String> {
        self.t.tpp_warnings(&self.name, self.demote_scale_factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lru::tests::done;
    use crate::tpp::tests::{alloc, fault, migrations, tel};
    use tierkit_core::telemetry::{MigrationOutcome, MigrationResult};
    use tierkit_core::testing::FakeMech;
    use tierkit_core::{FAST, SLOW};

    fn nomad() -> Nomad {
        Nomad::new(&Params::resolve("nomad", PARAMS, &[]).unwrap())
    }

    /// Nomad with `n` slow-tier pages, all of them faulted once (active).
    fn warm(n: u64) -> (Nomad, FakeMech) {
        let mut p = nomad();
        let mut mech = FakeMech::new(vec![Some(SLOW); n as usize]);
        let mut t = tel(0, 100_000, 0);
        t.allocated = alloc(0..n, SLOW);
        t.hint_faults = (0..n).map(|q| fault(q, SLOW, 10)).collect();
        let mut out = Vec::new();
        p.step(&t, &mut mech, &mut out);
        assert!(out.is_empty());
        (p, mech)
    }

    #[test]
    fn promotes_active_pages_transactionally_with_a_shadow() {
        let (mut p, mut mech) = warm(4);
        let mut out = Vec::new();
        let mut t = tel(1, 100_000, 0);
        t.hint_faults = vec![fault(1, SLOW, 10), fault(1, SLOW, 10)];
        p.step(&t, &mut mech, &mut out);
        // Never synchronous: the faulting thread does not stall.
        assert_eq!(
            migrations(&out),
            vec![(1, FAST, MigrateMode::Transactional, true)]
        );
        assert_eq!(p.queue_occupancy(), 1);
        let mut t = tel(2, 100_000, 1);
        t.migrations = vec![done(1, SLOW, FAST, MigrationOutcome::Done)];
        out.clear();
        p.step(&t, &mut mech, &mut out);
        assert_eq!((p.queue_occupancy(), p.transactional_done), (0, 1));
        assert_eq!(p.t.lru.tier(PageId(1)), Some(FAST));
        p.t.lru.check().unwrap();
    }

    /// On the fault path the worker takes each candidate at its fault (the enqueue queues its
    /// work), the step does not take the faults again, and an abort reported inside the epoch
    /// is retried at the epoch's end, the worker's next pass, as off the path.
    #[test]
    fn on_the_fault_path_the_worker_starts_each_promotion_at_its_fault() {
        let (mut p, mut mech) = warm(4);
        assert!(p.fault_path(), "Nomad takes the fault path by default");
        let mut out = Vec::new();
        let mut part = tel(1, 100_000, 0);
        for (i, pg) in [1, 2, 1].into_iter().enumerate() {
            let f = tierkit_core::HintFault {
                time_ns: 1_000_000 + 100_000 * (i as u64 + 1),
                ..fault(pg, SLOW, 10)
            };
            part.hint_faults.push(f);
            part.now_ns = f.time_ns;
            let before = out.len();
            p.on_fault(&f, &part, &mut mech, &mut out);
            // the first two faults each start their page's copy at once; the third finds
            // page 1 queued already
            let want = if i < 2 {
                vec![(pg, FAST, MigrateMode::Transactional, true)]
            } else {
                vec![]
            };
            assert_eq!(migrations(&out[before..]), want, "fault {i}");
            if i == 1 {
                // page 1's copy aborted meanwhile: its slot waits for the next pass
                part.migrations = vec![done(1, SLOW, FAST, MigrationOutcome::Aborted)];
            }
        }
        assert_eq!(p.queue_occupancy(), 2);
        let mut t = part.clone();
        t.now_ns = 1_000_000;
        let before = out.len();
        p.step(&t, &mut mech, &mut out);
        assert_eq!(
            migrations(&out[before..]),
            vec![(1, FAST, MigrateMode::Transactional, true)],
            "only the retry of the aborted copy, at the step's end"
        );
        assert_eq!((p.queued, p.retries, p.queue_occupancy()), (2, 1, 2));
        p.t.lru.check().unwrap();
    }

    #[test]
    fn queue_holds_at_most_512() {
        let (mut p, mut mech) = warm(600);
        let mut out = Vec::new();
        let mut t = tel(1, 100_000, 0);
        t.hint_faults = (0..600).map(|q| fault(q, SLOW, 10)).collect();
        p.step(&t, &mut mech, &mut out);
        assert_eq!(migrations(&out).len(), 512);
        assert_eq!((p.queue_occupancy(), p.queue_full), (512, 88));
        // The slots stay taken while the migrations are in flight.
        out.clear();
        let mut t = tel(2, 100_000, 0);
        t.hint_faults = (512..600).map(|q| fault(q, SLOW, 10)).collect();
        p.step(&t, &mut mech, &mut out);
        assert!(migrations(&out).is_empty());
        assert_eq!(p.queue_full, 176);
        // Ten finish (one aborted): ten slots free up.
        let mut t = tel(3, 100_000, 9);
        t.migrations = (0..10)
            .map(|q| {
                let o = if q == 0 {
                    MigrationOutcome::Aborted
                } else {
                    MigrationOutcome::Done
                };
                done(q, SLOW, FAST, o)
            })
            .collect();
        t.hint_faults = (512..600).map(|q| fault(q, SLOW, 10)).collect();
        out.clear();
        p.step(&t, &mut mech, &mut out);
        // Nine slots free up (the aborted page is retried in its slot, first).
        assert_eq!(migrations(&out).len(), 10);
        assert_eq!(migrations(&out)[0].0, 0);
        assert_eq!(p.queue_occupancy(), 512);
        assert_eq!((p.t.counts.aborted, p.retries), (1, 1));
        // Aborted on every pass: after ten attempts it gives up, and the page stays on the
        // slow tier, active, to be queued again at its next hint fault.
        for k in 2..=NOMAD_PASSES as u64 {
            let mut t = tel(2 + k, 100_000, 9);
            t.migrations = vec![done(0, SLOW, FAST, MigrationOutcome::Aborted)];
            out.clear();
            p.step(&t, &mut mech, &mut out);
            let retried = migrations(&out).iter().any(|m| m.0 == 0);
            assert_eq!(retried, k < NOMAD_PASSES as u64, "attempt {k}");
        }
        assert_eq!((p.retries, p.gave_up), (NOMAD_PASSES as u64 - 1, 1));
        assert_eq!(
            (
                p.t.lru.tier(PageId(0)),
                p.t.lru.is_active(PageId(0)),
                p.t.lru.is_marked(PageId(0))
            ),
            (Some(SLOW), true, false)
        );
        p.t.lru.check().unwrap();
    }

    #[test]
    fn clean_demotions_of_promoted_pages_count_as_remaps() {
        let (mut p, mut mech) = warm(2);
        let mut out = Vec::new();
        let mut t = tel(1, 100_000, 0);
        t.migrations = vec![MigrationResult {
            page: PageId(0),
            from: FAST,
            to: SLOW,
            outcome: MigrationOutcome::Done,
            remap: true,
        }];
        p.step(&t, &mut mech, &mut out);
        assert_eq!(p.t.counts.remaps, 1);
        let s = p.stats();
        assert!(s.iter().any(|(k, v)| k == "remaps" && *v == 1.0));
        assert!(s.iter().any(|(k, _)| k == "aborted"));
    }

    #[test]
    fn no_promotion_below_the_min_watermark() {
        let (mut p, mut mech) = warm(2);
        let mut out = Vec::new();
        let min = p.t.wm.min;
        let mut t = tel(1, 100_000, 100_000 - min);
        t.hint_faults = vec![fault(0, SLOW, 10)];
        p.step(&t, &mut mech, &mut out);
        assert!(migrations(&out).iter().all(|m| m.1 != FAST));
        assert_eq!((p.t.counts.promote_fail_nomem, p.queue_occupancy()), (1, 0));
    }

    #[test]
    fn freed_pages_leave_the_queue() {
        let (mut p, mut mech) = warm(3);
        let mut out = Vec::new();
        let mut t = tel(1, 100_000, 0);
        t.hint_faults = vec![fault(2, SLOW, 10)];
        p.step(&t, &mut mech, &mut out);
        assert_eq!(p.queue_occupancy(), 1);
        let mut t = tel(2, 100_000, 0);
        t.freed = alloc(2..3, SLOW);
        p.step(&t, &mut mech, &mut out);
        assert_eq!((p.queue_occupancy(), p.t.lru.isolated()), (0, 0));
        p.t.lru.check().unwrap();
    }
}
