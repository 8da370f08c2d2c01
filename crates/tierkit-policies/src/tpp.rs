//! TPP: Transparent Page Placement for CXL-enabled tiered memory (Maruf et al., ASPLOS '23,
//! §5), as its Linux v5.13 patch implements it (the TPP kernel in github.com/lingfenghsiang/Nomad,
//! src/implementation_patches/tpp.patch) and as Colloid (SOSP '24 §4.3) and Soar/Alto (OSDI '25
//! §6) run it as a baseline.
//!
//! - **Scanning**: NUMA-balancing hint faults on slow-tier pages only (change_pte_range skips
//!   top-tier pages), 256 MB per process every 1000 ms by default.
//! - **Promotion** (do_numa_page): a hint fault on a slow-tier page that is not on the active LRU
//!   list only activates it; a fault on an active page promotes it in the faulting thread
//!   (migrate_misplaced_page, synchronous), if the fast tier has more free pages than its high
//!   (allocation) watermark plus the page (migrate_balanced_pgdat). So a page moves up on its
//!   second hint fault.
//! - **Demotion**, decoupled from allocation: kswapd wakes when fast-tier free pages fall below
//!   WMARK_DEMOTE = demote_scale_factor (2%) of the tier, at least twice the high watermark
//!   (check_toptier_balanced, every tick), and demotes unreferenced pages from the tail of the
//!   fast tier's inactive list until free pages are back at that mark (pgdat_toptier_balanced);
//!   referenced pages get the kernel's second chance (see [`crate::lru`]).
//! - **The scanner's period**: as TPP's own kernel accounts the hint faults (`slow_fault_stats`,
//!   default true): TPP's patch on 5.13 (tpp.patch in Nomad's artifact) or v5.15 (PACT's and
//!   Soar/Alto's artifacts; the toggling paper's TPP-mod; Vulcan) has no memory-tiering check
//!   in task_numa_fault (5.18 added it), and do_numa_page ends a first fault, which only
//!   activates the page (`goto out`), at task_numa_fault on the slow node. Every paper that
//!   ran TPP ran that kernel, except Colloid (its own Linux 6.3: the colloid layer turns it
//!   off). `slow_fault_stats=false` is upstream 6.x's rule (a slow-tier fault counts only when
//!   its page was promoted on it), which none of the papers' TPP kernels has. The faults are
//!   remote. The first fault ends before numa_migrate_prep, so it leaves the page's cpupid as
//!   it was (`NumaScan::cpupid_at_prep`): only a promotion attempt sets it
//!   (should_numa_migrate_memory), and the migration copies it. A page no attempt has touched
//!   keeps cpupid -1, so both its faults count as private whichever threads take them; a
//!   promoted page that was demoted carries its promoter, and other threads' faults on it are
//!   shared. A promotion that fails for room (migrate_balanced_pgdat) is counted as
//!   TNF_MIGRATE_FAIL and doubles the period. On one thread the two rules differ little (every
//!   counted fault is remote and private, as 6.x's promoted faults are); on liblinear's 15
//!   threads TPP's takes 1.00x 6.x's hint faults (docs/validation.md, section 2, "eighth run").

use tierkit_core::policy::Builder;
use tierkit_core::{
    Action, Mechanism, MigrateMode, Params, Policy, PolicyInfo, Telemetry, TelemetryNeeds,
};

use crate::common::spec_name;
use crate::lru::{
    hint_scan, numa_scan, Tiering, P_DEMOTE_SCALE, P_DMA_ZONE, P_FAULT_PATH, P_FIRST_WINDOW,
    P_KSWAPD_DEMOTE, P_KSWAPD_SCAN, P_KSWAPD_TICK, P_KSWAPD_WAKE_DELAY, P_LRU_GEN,
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
    P_FIRST_WINDOW,
    P_DEMOTE_SCALE,
    P_WSF,
    P_MIN_FREE_KBYTES,
    P_KSWAPD_SCAN,
    P_KSWAPD_WAKE_DELAY,
    P_KSWAPD_TICK,
    P_KSWAPD_DEMOTE,
    P_LRU_STATS_FLUSH,
    P_MAX_RECLAIM_RETRIES, P_LRU_GEN, P_DMA_ZONE,
    P_LRU_GEN_MM_TABLES,
    P_LRU_GEN_MM_SWITCH,
    P_FAULT_PATH,
    tierkit_core::ParamDef {
        name: "slow_fault_stats",
        kind: tierkit_core::ParamKind::Bool,
        default: "true",
        unit: "",
        doc: "task_numa_fault accounts every hint fault, slow-tier ones as remote, as TPP's 5.13 patch and the toggling paper's 5.15 TPP-mod do (no memory-tiering check there; a first fault, which only activates the page, ends at task_numa_fault on the slow node, leaving the page's cpupid as it was; a promotion that fails for room counts as failed), and update_task_scan_period adapts to them (the period grows while they are private or failed, shrinks while many are shared among threads); false: upstream 6.x's rule (5.18's check), where a slow-tier fault counts only if its page was promoted on it. Under the colloid layer (Colloid's Linux 6.3) it is false",
    },
    tierkit_core::ParamDef {
        name: "lru",
        kind: tierkit_core::ParamKind::Choice(&["hinted", "pagevec"]),
        default: "hinted",
        unit: "",
        doc: "how a hint fault on an inactive page makes it a candidate: `hinted` at once (the migration-toggling paper's modified second-chance LRU, PageHinted, §4.5: TPP-mod), `pagevec` after the faulting CPU's pagevec of 15 pages fills (upstream mark_page_accessed)",
    },
];

/// Pages a per-CPU pagevec batches before moving them to the active list (toggling §4.5).
const PAGEVEC: usize = 15;

pub const INFO: PolicyInfo = PolicyInfo {
    name: "tpp",
    description: "TPP: hint-fault promotion of pages on the active LRU list, watermark-driven kswapd demotion",
    source: "TPP (ASPLOS '23) §5; Linux v5.13 TPP patch (vm.demote_scale_factor); Colloid §4.3",
    params: PARAMS,
    positional: None,
    build: Builder::Base(|p| Ok(Box::new(Tpp::new(p)))),
};

pub struct Tpp {
    name: String,
    scan: tierkit_core::NumaScan,
    demote_scale_factor: u64,
    t: Tiering,
    /// `lru=pagevec`: per faulting thread, pages waiting to be activated.
    pagevec: Option<std::collections::BTreeMap<(u32, u32), Vec<tierkit_core::PageId>>>,
    /// Hint faults on pages still waiting in a pagevec (the excessive fault handling §4.5 removes).
    wasted_faults: u64,
    /// `fault_path`: take faults one at a time when the backend offers it, and whether it did.
    fault_path: bool,
    on_path: bool,
}

impl Tpp {
    pub fn new(p: &Params) -> Self {
        Tpp {
            name: spec_name(INFO.name, PARAMS, p),
            scan: tierkit_core::NumaScan {
                slow_fault_stats: p.bool("slow_fault_stats"),
                // do_numa_page's first fault ends before numa_migrate_prep (`goto out`)
                cpupid_at_prep: true,
                ..numa_scan(p)
            },
            demote_scale_factor: p.u64("demote_scale_factor"),
            t: Tiering::from_params(p),
            pagevec: (p.str("lru") == "pagevec").then(Default::default),
            wasted_faults: 0,
            fault_path: p.bool("fault_path"),
            on_path: false,
        }
    }

    /// do_numa_page for one hint fault at its instant: kswapd first runs up to it, then the
    /// fault activates the page (first fault) or promotes it (second), waking kswapd when the
    /// promotion took the node below the demotion watermark.
    fn fault(
        &mut self,
        f: &tierkit_core::HintFault,
        tel: &Telemetry,
        mech: &mut dyn Mechanism,
        out: &mut Vec<Action>,
    ) {
        if !self.t.fault_actionable(f) {
            return;
        }
        let (wake_below, balanced_at) = self.kswapd_marks();
        self.t
            .run_kswapd_until(tel, mech, out, wake_below, balanced_at, f.time_ns);
        if !self.t.lru.is_active(f.page) {
            // First fault: mark_page_accessed, no migration.
            match &mut self.pagevec {
                // PageHinted: the page is a candidate at once (TPP-mod).
                None => {
                    self.t.lru.activate(f.page);
                    self.t.counts.activations += 1;
                }
                // Upstream: it waits in the faulting CPU's pagevec until 15 pages gather.
                Some(vecs) => {
                    let pv = vecs.entry((f.pid, f.tid)).or_default();
                    if pv.contains(&f.page) {
                        self.wasted_faults += 1;
                    } else {
                        pv.push(f.page);
                    }
                    if pv.len() >= PAGEVEC {
                        for p in pv.drain(..) {
                            if self.t.lru.activate(p) {
                                self.t.counts.activations += 1;
                            }
                        }
                    }
                }
            }
            return;
        }
        // numa_migrate_prep: should_numa_migrate_memory sets the page's cpupid, then
        // migrate_misplaced_page tries the move
        mech.numa_migrate_prep(f);
        if self.t.migrate_balanced(self.t.fast_free(tel)) {
            self.t.promote(
                f.page,
                MigrateMode::Sync {
                    pid: f.pid,
                    tid: f.tid,
                },
                false,
                out,
            );
            // a promotion whose allocation took the node below the demotion watermark
            // wakes kswapd then, not at the step's end
            self.t.wakeup_kswapd(tel, balanced_at, f.time_ns);
        } else {
            // numamigrate_isolate_page: the node is nearly full (TNF_MIGRATE_FAIL)
            self.t.counts.promote_fail_nomem += 1;
            mech.numa_migrate_failed(f);
        }
    }

    /// TPP's demotion watermark of the fast tier, in pages.
    pub fn demote_wmark(&self) -> u64 {
        self.t.tpp_demote_wmark(self.demote_scale_factor)
    }

    /// kswapd's wake and balance marks: both TPP's demotion watermark.
    fn kswapd_marks(&self) -> (u64, u64) {
        let demote = self.demote_wmark();
        (demote, demote)
    }
}

impl Policy for Tpp {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn needs(&self) -> TelemetryNeeds {
        // Faults are handled in the epoch they arrive (the faulting thread migrates), and kswapd
        // checks the watermark every tick.
        TelemetryNeeds {
            hint_faults: true,
            quantum_ns: 0,
            accessed_bits: true,
            ..TelemetryNeeds::default()
        }
    }

    memory_of_lru!();

    fn init(&mut self, _tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        out.push(hint_scan(&self.scan));
    }

    fault_path_of_tiering!();

    fn step(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        fault_path_step!(self, tel, mech, out);
        let (wake_below, balanced_at) = self.kswapd_marks();
        self.t.run_kswapd(tel, mech, out, wake_below, balanced_at);
    }

    fn series(&mut self, out: &mut Vec<(String, f64)>) {
        self.t.series(out);
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut v = Vec::new();
        self.t.stats(&mut v);
        v.push(("wmark_demote_pages".into(), self.demote_wmark() as f64));
        v.push(("wasted_hint_faults".into(), self.wasted_faults as f64));
        v
    }

    fn warnings(&self) -> Vec<String> {
        self.t.tpp_warnings(&self.name, self.demote_scale_factor)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::lru::tests::done;
    use proptest::prelude::*;
    use tierkit_core::action::ScanTiers;
    use tierkit_core::telemetry::{HintFault, MigrationOutcome, PageEvent, TierInfo};
    use tierkit_core::testing::FakeMech;
    use tierkit_core::{PageId, FAST, SLOW};

    pub(crate) fn tel(now_ms: u64, fast_cap: u64, fast_used: u64) -> Telemetry {
        Telemetry {
            now_ns: now_ms * 1_000_000,
            epoch_ns: 1_000_000,
            page_bytes: 4096,
            tiers: vec![
                TierInfo {
                    id: FAST,
                    name: "fast".into(),
                    capacity_pages: fast_cap,
                    used_pages: fast_used,
                },
                TierInfo {
                    id: SLOW,
                    name: "slow".into(),
                    capacity_pages: 1 << 20,
                    used_pages: 0,
                },
            ],
            ..Telemetry::default()
        }
    }

    pub(crate) fn fault(p: u64, tier: u8, ttf_ms: u64) -> HintFault {
        HintFault {
            page: PageId(p),
            tier,
            pid: 3,
            tid: 7,
            time_to_fault_ns: ttf_ms * 1_000_000,
            time_ns: 0,
        }
    }

    pub(crate) fn alloc(pages: std::ops::Range<u64>, tier: u8) -> tierkit_core::PageEvents {
        pages
            .map(|p| PageEvent {
                page: PageId(p),
                pid: 3,
                tier,
            })
            .collect()
    }

    pub(crate) fn migrations(out: &[Action]) -> Vec<(u64, u8, MigrateMode, bool)> {
        out.iter()
            .filter_map(|a| match a {
                Action::Migrate {
                    page,
                    to,
                    mode,
                    keep_shadow,
                } => Some((page.0, *to, *mode, *keep_shadow)),
                _ => None,
            })
            .collect()
    }

    fn tpp() -> Tpp {
        Tpp::new(&Params::resolve("tpp", PARAMS, &[]).unwrap())
    }

    #[test]
    fn scans_slow_pages_with_linux_defaults() {
        let mut p = tpp();
        let mut out = Vec::new();
        p.init(&tel(0, 1000, 0), &mut FakeMech::default(), &mut out);
        assert_eq!(
            out,
            vec![Action::SetNumaScan {
                pid: None,
                scan: tierkit_core::NumaScan {
                    scan_period_min_ms: 1000.0,
                    scan_period_max_ms: 60_000.0,
                    scan_size_mb: 256,
                    scan_delay_ms: 1000.0,
                    tiers: ScanTiers::SlowOnly,
                    budget_share: 1.0,
                    fault_stats: true,
                    slow_fault_stats: true,
                    cpupid_at_prep: true,
                    arm_on_exec: true,
                }
            }]
        );
        // The older name of scan_period_min_ms still works; the newer one wins.
        let old = |kv: &[(&str, &str)]| {
            let kv: Vec<(String, String)> = kv
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            Tpp::new(&Params::resolve("tpp", PARAMS, &kv).unwrap()).scan
        };
        assert_eq!(old(&[("scan_period_ms", "500")]).scan_period_min_ms, 500.0);
        assert_eq!(
            old(&[("scan_period_ms", "500"), ("scan_period_min_ms", "2000")]).scan_period_min_ms,
            2000.0
        );
        assert!(p.needs().hint_faults);
        assert_eq!(p.name(), "tpp");
    }

    /// On the fault path each fault comes with the epoch so far, and the step then sees the
    /// whole epoch: every event is taken once, and the decisions are the step's own (the same
    /// faults, taken at the step's end by a TPP off the path).
    #[test]
    fn the_fault_path_takes_each_event_once_and_decides_as_the_step_does() {
        let run = |on_path: bool| {
            let mut p = tpp();
            if on_path {
                assert!(p.fault_path(), "TPP takes the fault path by default");
            }
            let mut mech = FakeMech::new(vec![Some(SLOW); 40]);
            let mut out = Vec::new();
            p.init(&tel(0, 100_000, 0), &mut mech, &mut out);
            out.clear();
            // epoch 1: 32 pages arrive; the first faults come with only some of them seen
            let mut t = tel(1, 100_000, 0);
            t.allocated = alloc(0..32, SLOW);
            let faults: Vec<_> = [3, 5, 3, 9, 5, 3]
                .iter()
                .enumerate()
                .map(|(i, &pg)| HintFault {
                    time_ns: 100_000 * (i as u64 + 1),
                    ..fault(pg, SLOW, 5)
                })
                .collect();
            if on_path {
                let mut part = tel(1, 100_000, 0);
                part.allocated = alloc(0..16, SLOW);
                for (i, f) in faults.iter().enumerate() {
                    if i == 3 {
                        part.allocated = alloc(0..32, SLOW);
                    }
                    part.hint_faults.push(*f);
                    part.now_ns = f.time_ns;
                    p.on_fault(f, &part, &mut mech, &mut out);
                }
            }
            t.hint_faults = faults;
            p.step(&t, &mut mech, &mut out);
            (
                migrations(&out),
                p.t.lru.len(SLOW, false) + p.t.lru.len(SLOW, true),
                p.t.counts.activations,
                p.t.counts.hint_faults,
            )
        };
        let (batch, path) = (run(false), run(true));
        assert_eq!(batch, path);
        // pages 3 and 5 promote on their second fault; 3's third finds it in flight
        assert_eq!(batch.0.iter().map(|m| m.0).collect::<Vec<_>>(), vec![3, 5]);
        assert_eq!((batch.1, batch.2, batch.3), (30, 3, 6));
    }

    #[test]
    fn pagevec_mode_delays_candidates_until_15_pages_gather_and_hinted_does_not() {
        // lru=pagevec (upstream): a hint fault queues the page in the faulting CPU's pagevec;
        // a second fault before 15 pages gather is wasted; then all 15 become candidates.
        let mut p =
            Tpp::new(&Params::resolve("tpp", PARAMS, &[("lru".into(), "pagevec".into())]).unwrap());
        let mut mech = FakeMech::new(vec![Some(SLOW); 32]);
        let mut out = Vec::new();
        let mut t = tel(1, 100_000, 0);
        t.allocated = alloc(0..32, SLOW);
        t.hint_faults = (0..14).map(|i| fault(i, SLOW, 5)).collect();
        p.step(&t, &mut mech, &mut out);
        assert!(
            (0..14).all(|i| !p.t.lru.is_active(PageId(i))),
            "still waiting in the pagevec"
        );
        let mut t = tel(2, 100_000, 0);
        t.hint_faults = vec![fault(3, SLOW, 5)];
        p.step(&t, &mut mech, &mut out);
        assert!(
            migrations(&out).is_empty(),
            "a fault on a page in the pagevec does not promote"
        );
        assert_eq!(
            p.stats()
                .iter()
                .find(|s| s.0 == "wasted_hint_faults")
                .map(|s| s.1),
            Some(1.0)
        );
        let mut t = tel(3, 100_000, 0);
        t.hint_faults = vec![fault(14, SLOW, 5)];
        p.step(&t, &mut mech, &mut out);
        assert!(
            (0..15).all(|i| p.t.lru.is_active(PageId(i))),
            "the full pagevec is activated"
        );
        let mut t = tel(4, 100_000, 0);
        t.hint_faults = vec![fault(3, SLOW, 5)];
        p.step(&t, &mut mech, &mut out);
        assert_eq!(migrations(&out).len(), 1, "now the next fault promotes");
        // lru=hinted (PageHinted, the default): the first fault makes the page a candidate.
        let mut h = tpp();
        let mut t = tel(1, 100_000, 0);
        t.allocated = alloc(0..32, SLOW);
        t.hint_faults = vec![fault(3, SLOW, 5)];
        let mut out = Vec::new();
        h.step(&t, &mut mech, &mut out);
        assert!(h.t.lru.is_active(PageId(3)));
    }

    /// The faults of a step and kswapd take turns in time order: a promotion that takes the
    /// node below the demotion watermark wakes kswapd at its fault, and kswapd's demotions up to
    /// a later fault of the same step come before that fault's promotion.
    #[test]
    fn kswapd_woken_by_a_promotion_works_before_the_steps_later_faults() {
        let mut p = tpp();
        let cap = 100_000u64;
        let mut mech = FakeMech::new(
            (0..cap + 8)
                .map(|i| Some(if i < cap - 4000 { FAST } else { SLOW }))
                .collect(),
        );
        let mut out = Vec::new();
        // the fast tier's first pages idle (FakeMech reads them unreferenced); two slow pages
        // made candidates by a first fault each
        let mut t = tel(1, cap, 0);
        t.allocated = alloc(0..cap - 4000, FAST);
        t.allocated.extend(alloc(cap..cap + 2, SLOW).iter());
        t.hint_faults = vec![fault(cap, SLOW, 5), fault(cap + 1, SLOW, 5)];
        p.step(&t, &mut mech, &mut out);
        assert!(migrations(&out).is_empty());
        // free exactly at the demotion watermark: the first promotion (at 2.1 ms) takes the node
        // below it and wakes kswapd, which demotes before the second fault (2.9 ms) promotes
        let demote = p.demote_wmark();
        let mut t = tel(3, cap, cap - demote);
        let mut f1 = fault(cap, SLOW, 5);
        f1.time_ns = 2_100_000;
        let mut f2 = fault(cap + 1, SLOW, 5);
        f2.time_ns = 2_900_000;
        t.hint_faults = vec![f1, f2];
        out.clear();
        p.step(&t, &mut mech, &mut out);
        let m = migrations(&out);
        let at = |page: u64| m.iter().position(|x| x.0 == page && x.1 == FAST);
        let (first, second) = (at(cap).unwrap(), at(cap + 1).unwrap());
        let demotions_between = m[first..second].iter().filter(|x| x.1 == SLOW).count();
        assert_eq!(first, 0, "{m:?}");
        assert!(demotions_between > 0, "{m:?}");
        assert!(p.t.kswapd.awake || p.t.kswapd.demotions > 0);
        // kswapd slept once its requested demotions balanced the node: the second promotion,
        // counting them as kswapd does, finds the node above the watermark and wakes nobody
        // (counting them not, every promotion after the first would wake it again, and the
        // wakeups grew with the number of steps)
        assert!(demotions_between >= 2, "{m:?}");
        assert_eq!(p.t.kswapd.wakeups, 1);
    }

    #[test]
    fn promotes_only_on_the_second_fault() {
        let mut p = tpp();
        let mut mech = FakeMech::new(vec![Some(SLOW); 4]);
        let mut out = Vec::new();
        let mut t = tel(1, 100_000, 0);
        t.allocated = alloc(0..4, SLOW);
        t.hint_faults = vec![fault(2, SLOW, 5)];
        p.step(&t, &mut mech, &mut out);
        assert!(migrations(&out).is_empty(), "first fault only activates");
        assert!(p.t.lru.is_active(PageId(2)));
        // ... and ends before numa_migrate_prep: the page's cpupid stays as it was
        assert!(mech.prepped.is_empty());
        let mut t = tel(2, 100_000, 0);
        t.hint_faults = vec![fault(2, SLOW, 900), fault(1, SLOW, 1)];
        p.step(&t, &mut mech, &mut out);
        // Page 2 is active now: promoted synchronously in the faulting thread. Page 1 (first
        // fault, however quick) is not.
        assert_eq!(
            migrations(&out),
            vec![(2, FAST, MigrateMode::Sync { pid: 3, tid: 7 }, false)]
        );
        assert_eq!(p.t.counts.activations, 2);
        // the second fault reached numa_migrate_prep (should_numa_migrate_memory sets the
        // cpupid); nothing failed
        assert_eq!(
            (&mech.prepped[..], mech.failed.len()),
            (&[PageId(2)][..], 0)
        );
        // A fault while the promotion is in flight does nothing more.
        out.clear();
        let mut t = tel(3, 100_000, 0);
        t.hint_faults = vec![fault(2, SLOW, 1)];
        p.step(&t, &mut mech, &mut out);
        assert!(migrations(&out).is_empty());
        assert_eq!(mech.prepped.len(), 1);
        // The promoted page arrives on the fast tier's active list.
        let mut t = tel(4, 100_000, 1);
        t.migrations = vec![done(2, SLOW, FAST, MigrationOutcome::Done)];
        p.step(&t, &mut mech, &mut out);
        assert_eq!(
            (p.t.lru.tier(PageId(2)), p.t.lru.is_active(PageId(2))),
            (Some(FAST), true)
        );
        assert_eq!(p.t.counts.promotions_done, 1);
        p.t.lru.check().unwrap();
    }

    #[test]
    fn no_promotion_at_the_allocation_watermark() {
        let mut p = tpp();
        let mut mech = FakeMech::new(vec![Some(SLOW); 2]);
        let mut out = Vec::new();
        let mut t = tel(1, 100_000, 0);
        t.allocated = alloc(0..2, SLOW);
        t.hint_faults = vec![fault(0, SLOW, 5)];
        p.step(&t, &mut mech, &mut out);
        let high = p.t.wm.high;
        // Fast tier free = high + 1: not above high + the page.
        let mut t = tel(2, 100_000, 100_000 - high - 1);
        t.hint_faults = vec![fault(0, SLOW, 5)];
        out.clear();
        p.step(&t, &mut mech, &mut out);
        assert!(migrations(&out).iter().all(|m| m.1 != FAST));
        assert_eq!(p.t.counts.promote_fail_nomem, 1);
        // the attempt reached numa_migrate_prep and failed (TNF_MIGRATE_FAIL)
        assert_eq!(
            (&mech.prepped[..], &mech.failed[..]),
            (&[PageId(0)][..], &[PageId(0)][..])
        );
        assert!(
            p.t.lru.is_active(PageId(0)),
            "the page stays active on the slow tier"
        );
    }

    #[test]
    fn kswapd_demotes_inactive_pages_below_the_demote_watermark() {
        let mut p = tpp();
        let cap = 100_000u64;
        let mut mech = FakeMech::new(vec![Some(FAST); cap as usize]);
        let mut out = Vec::new();
        // The fast tier fills up: demote watermark is 2% of 100000 = 2000 pages.
        let mut t = tel(1, cap, cap - 500);
        t.allocated = alloc(0..cap - 500, FAST);
        // The oldest pages 0..10 were accessed since allocation: second chance.
        for a in mech.accessed.iter_mut().take(10) {
            *a = true;
        }
        p.step(&t, &mut mech, &mut out);
        assert_eq!(p.demote_wmark(), 2000);
        // kswapd examines at most 1024 pages in a 1 ms epoch, and goes on in the next one.
        assert!(p.t.kswapd.scanned <= 1024 && p.t.kswapd.awake);
        p.step(&tel(2, cap, cap - 500), &mut mech, &mut out);
        // Passes of nr_to_reclaim (the high watermark) each: up to one pass beyond the deficit.
        let m = migrations(&out);
        let high = p.t.wm.high as usize;
        assert!(
            m.len() as u64 >= 1500 && m.len() < 1500 + high + 32,
            "{} demotions",
            m.len()
        );
        assert!(m.iter().all(|&(pg, to, mode, shadow)| pg >= 10
            && to == SLOW
            && mode == MigrateMode::Async
            && !shadow));
        // Demoted in LRU order, oldest first, skipping the referenced ones.
        assert_eq!(m[0].0, 10);
        assert!(p.t.lru.is_referenced(PageId(3)) && !p.t.lru.is_active(PageId(3)));
        // Nothing more while the demotions are in flight.
        out.clear();
        p.step(&tel(3, cap, cap - 500), &mut mech, &mut out);
        assert!(migrations(&out).is_empty());
        // Done: balanced, kswapd sleeps.
        let mut t = tel(4, cap, cap - 500 - m.len() as u64);
        t.migrations = m
            .iter()
            .map(|&(pg, ..)| done(pg, FAST, SLOW, MigrationOutcome::Done))
            .collect();
        p.step(&t, &mut mech, &mut out);
        assert!(!p.t.kswapd.awake);
        assert_eq!(p.t.counts.demotions_done, m.len() as u64);
        assert_eq!(p.t.lru.len(SLOW, false), m.len() as u64);
        p.t.lru.check().unwrap();
    }

    #[test]
    fn kswapd_sleeps_above_the_demote_watermark() {
        let mut p = tpp();
        let mut mech = FakeMech::new(vec![Some(FAST); 1000]);
        let mut out = Vec::new();
        let mut t = tel(1, 100_000, 1000);
        t.allocated = alloc(0..1000, FAST);
        p.step(&t, &mut mech, &mut out);
        assert!(out.is_empty());
        assert_eq!(p.t.kswapd.wakeups, 0);
    }

    proptest! {
        /// Under random faults, allocations and migration results, TPP never asks to migrate a
        /// page that is already in flight, only promotes active slow-tier pages, and its LRU
        /// always holds each resident page exactly once.
        #[test]
        fn never_migrates_a_page_twice(
            epochs in proptest::collection::vec(
                (proptest::collection::vec((0u64..64, 1u64..2000), 0..8), proptest::collection::vec((0u64..64, 0u8..3), 0..6), 0u64..2000),
                1..40)
        ) {
            let mut p = tpp();
            let mut mech = FakeMech::new(vec![None; 64]);
            let mut inflight = std::collections::BTreeSet::new();
            let mut t0 = tel(0, 2000, 0);
            t0.allocated = alloc(0..32, SLOW);
            t0.allocated.extend(&alloc(32..64, FAST));
            for q in 0..64 { mech.tiers[q] = Some(if q < 32 { SLOW } else { FAST }); }
            let mut out = Vec::new();
            p.step(&t0, &mut mech, &mut out);
            for (pg, ..) in migrations(&out) { inflight.insert(pg); }
            for (i, (faults, results, used)) in epochs.into_iter().enumerate() {
                let mut t = tel(i as u64 + 1, 2000, used);
                for (pg, o) in results {
                    if inflight.remove(&pg) {
                        let from = p.t.lru.tier(PageId(pg)).unwrap();
                        let to = if from == FAST { SLOW } else { FAST };
                        let outcome = [MigrationOutcome::Done, MigrationOutcome::NoSpace, MigrationOutcome::Refused][o as usize];
                        if outcome == MigrationOutcome::Done { mech.tiers[pg as usize] = Some(to); }
                        t.migrations.push(done(pg, from, to, outcome));
                    }
                }
                // A marked page faults once: at most one fault per page and epoch.
                let faults: std::collections::BTreeMap<u64, u64> = faults.into_iter().collect();
                t.hint_faults = faults.iter().map(|(&pg, &ttf)| {
                    let tier = mech.tiers[pg as usize].unwrap();
                    fault(pg, tier, ttf)
                }).collect();
                let active_before: Vec<bool> = (0..64).map(|q| p.t.lru.is_active(PageId(q))).collect();
                out.clear();
                p.step(&t, &mut mech, &mut out);
                for (pg, to, ..) in migrations(&out) {
                    prop_assert!(inflight.insert(pg), "page {} migrated twice", pg);
                    if to == FAST {
                        prop_assert!(active_before[pg as usize], "promoted page {} was not active", pg);
                    }
                }
                if let Err(e) = p.t.lru.check() { prop_assert!(false, "{}", e); }
            }
        }
    }
}
