//! NBT: Linux NUMA-balancing memory tiering (`kernel.numa_balancing=2`, v6.1+), the successor
//! of AutoNUMA with TPP's pieces upstreamed, as Soar/Alto (OSDI '25 §6) run it as a baseline.
//! Source: kernel/sched/fair.c (should_numa_migrate_memory, numa_hint_fault_latency,
//! numa_promotion_rate_limit, numa_promotion_adjust_threshold, pgdat_free_space_enough),
//! mm/migrate.c (migrate_balanced_pgdat) and mm/vmscan.c (kswapd with WMARK_PROMO).
//!
//! - **Scanning**: hint faults on slow-tier pages only, 256 MB per process every 1000 ms.
//! - **Promotion** on a hint fault of a slow-tier page, in the faulting thread:
//!   - if the fast tier has plenty of free space (more than WMARK_PROMO + max(1 GiB, 1/16 of
//!     the tier)), promote and reset the threshold;
//!   - otherwise the page is hot when its hint-fault latency (time from the scan to the fault)
//!     is under the threshold (numa_balancing_hot_threshold_ms, 1000 ms); hot pages are counted
//!     as promotion candidates, and promoted unless the candidates of the current 1 s window
//!     exceed numa_balancing_promote_rate_limit_MBps;
//!   - every numa_balancing_scan_period_max_ms (60 s) the threshold moves by 1/8 of the
//!     default so that candidates match the rate limit: down if there were more than 110% of
//!     the limit's worth, up (at most twice the default) if fewer than 90%.
//!
//!   The page moves only if the fast tier keeps more free pages than its high watermark plus
//!   the page (migrate_balanced_pgdat); if not, kswapd is woken.
//! - **Demotion**: kswapd wakes when fast-tier free pages drop below the low watermark (or a
//!   promotion found the tier full) and reclaims cold pages, demoting them, until free pages
//!   reach WMARK_PROMO; LRU aging and second chance as in [`crate::lru`].

use tierkit_core::params::ParamKind;
use tierkit_core::policy::Builder;
use tierkit_core::{
    Action, Mechanism, MigrateMode, Params, Policy, PolicyInfo, Telemetry, TelemetryNeeds,
};

use crate::common::spec_name;
use crate::lru::{
    hint_scan, numa_scan, Tiering, P_DMA_ZONE, P_FAULT_PATH, P_FIRST_WINDOW, P_KSWAPD_DEMOTE,
    P_KSWAPD_SCAN, P_KSWAPD_TICK, P_KSWAPD_WAKE_DELAY, P_LRU_GEN, P_LRU_GEN_MM_SWITCH,
    P_LRU_GEN_MM_TABLES, P_LRU_STATS_FLUSH, P_MAX_RECLAIM_RETRIES, P_MIN_FREE_KBYTES, P_SCAN_DELAY,
    P_SCAN_PERIOD, P_SCAN_PERIOD_MAX, P_SCAN_PERIOD_MIN, P_SCAN_SIZE, P_SCAN_STATS, P_WSF,
};

/// NUMA_MIGRATION_ADJUST_STEPS: the threshold moves by 2 x default / 16 per adjustment.
const ADJUST_STEPS: u64 = 16;

const PARAMS: &[tierkit_core::ParamDef] = &[
    P_SCAN_PERIOD,
    P_SCAN_SIZE,
    P_SCAN_PERIOD_MIN,
    P_SCAN_PERIOD_MAX,
    P_SCAN_DELAY,
    P_SCAN_STATS,
    P_FIRST_WINDOW,
    tierkit_core::ParamDef {
        name: "hot_threshold_ms",
        kind: ParamKind::Int { min: 1, max: 1 << 30 },
        default: "1000",
        unit: "ms",
        doc: "a slow-tier page whose hint fault came sooner than this after the scan is hot (numa_balancing_hot_threshold_ms)",
    },
    tierkit_core::ParamDef {
        name: "promote_rate_limit_mbps",
        kind: ParamKind::Int { min: 1, max: 1 << 30 },
        default: "65536",
        unit: "MB/s",
        doc: "most promotion candidates per second (numa_balancing_promote_rate_limit_MBps)",
    },
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
        name: "dma_zone_above_bar",
        kind: ParamKind::Bool,
        default: "false",
        unit: "",
        doc: "the fast node's DMA zone has settled above its bar in migrate_balanced_pgdat (its high watermark + the page + its lowmem_reserve for ZONE_MOVABLE; mm/migrate.c), so the check passes through DMA and a promotion is refused (waking kswapd) only once promotions have taken the main zone below its low watermark and their allocations spill into DMA, pulling it below the bar: the gate is the low watermark, not the high (docs/validation.md, section 1h; `tierkit validate kernel` sets it for a recording whose DMA zone settled there)",
    },
    tierkit_core::ParamDef {
        name: "dma_zone_balanced",
        kind: ParamKind::Bool,
        default: "false",
        unit: "",
        doc: "with dma_zone=true, the fast node's DMA zone has settled above its bar in pgdat_balanced at order 0 (its promo watermark, or high without tiering, + its lowmem_reserve for ZONE_MOVABLE; mm/vmscan.c), which accepts the node when any eligible zone passes: kswapd is not woken for base pages, and a kswapd run woken by a huge page's failed promotion (order 9) ends once it has reclaimed two huge pages (compact_gap), when kswapd_shrink_node drops its order to 0, however few pages the main zone has free (docs/validation.md, section 1zd; `tierkit validate kernel` sets it for a recording whose DMA zone settled there)",
    },
];

pub const INFO: PolicyInfo = PolicyInfo {
    name: "nbt",
    description: "Linux NUMA-balancing tiering: promote pages with short hint-fault latency, rate-limited, kswapd demotion",
    source: "Linux v6.x kernel/sched/fair.c (numa_balancing=2), mm/vmscan.c; Soar/Alto §6",
    params: PARAMS,
    positional: None,
    build: Builder::Base(|p| Ok(Box::new(Nbt::new(p)))),
};

pub struct Nbt {
    name: String,
    scan: tierkit_core::NumaScan,
    /// The default threshold (ref_th), ms.
    hot_threshold_ms: u64,
    rate_limit_mbps: u64,
    th_period_ms: u64,
    t: Tiering,
    /// pgdat->nbp_threshold: 0 means "use the default".
    threshold_ms: u64,
    /// PGPROMOTE_CANDIDATE: pages that passed the latency test, ever.
    nr_cand: u64,
    rl_start_ms: u64,
    rl_nr_cand: u64,
    th_start_ms: u64,
    th_nr_cand: u64,
    cold_faults: u64,
    rate_limited: u64,
    free_space_promotions: u64,
    threshold_adjustments: u64,
    /// `fault_path`: take faults one at a time when the backend offers it, and whether it did.
    fault_path: bool,
    on_path: bool,
}

impl Nbt {
    pub fn new(p: &Params) -> Self {
        let mut t = Tiering::from_params(p);
        t.dma_above_bar = p.bool("dma_zone_above_bar");
        t.kswapd.order0_balanced = t.dma_zone && p.bool("dma_zone_balanced");
        Nbt {
            name: spec_name(INFO.name, PARAMS, p),
            scan: numa_scan(p),
            hot_threshold_ms: p.u64("hot_threshold_ms"),
            rate_limit_mbps: p.u64("promote_rate_limit_mbps"),
            th_period_ms: p.u64("scan_period_max_ms"),
            t,
            threshold_ms: 0,
            nr_cand: 0,
            rl_start_ms: 0,
            rl_nr_cand: 0,
            th_start_ms: 0,
            th_nr_cand: 0,
            cold_faults: 0,
            rate_limited: 0,
            free_space_promotions: 0,
            threshold_adjustments: 0,
            fault_path: p.bool("fault_path"),
            on_path: false,
        }
    }

    /// kswapd's marks in tiering mode: woken below the low watermark, balanced at the promo
    /// watermark (WMARK_PROMO, balance_pgdat with NUMA_BALANCING_MEMORY_TIERING).
    fn kswapd_marks(&self) -> (u64, u64) {
        (self.t.wm.low, self.t.wm.promo)
    }

    /// do_numa_page in tiering mode for one hint fault at its instant: kswapd first runs up to
    /// it; with the fast node short of free space the page must have faulted within the
    /// (adjusted) hot threshold of its scan and pass the rate limit
    /// (should_numa_migrate_memory, numa_promotion_rate_limit); then it is promoted in the
    /// fault if migrate_balanced_pgdat allows, else kswapd is woken.
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
        let (low, promo) = self.kswapd_marks();
        self.t
            .run_kswapd_until(tel, mech, out, low, promo, f.time_ns);
        let free = self.t.fast_free(tel);
        if self.free_space_enough(free) {
            self.threshold_ms = 0;
            self.free_space_promotions += 1;
        } else {
            // jiffies at the fault (on the fault path its instant; otherwise the epoch's
            // end, as fine as a 1 ms tick)
            let now_ms = tel.now_ns / 1_000_000;
            self.adjust_threshold(now_ms);
            let latency_ms = f.time_to_fault_ns / 1_000_000;
            if latency_ms >= self.threshold_ms() {
                self.cold_faults += 1;
                return;
            }
            if self.rate_limit(now_ms) {
                self.rate_limited += 1;
                return;
            }
        }
        if self.t.migrate_balanced(free) {
            self.t.promote(
                f.page,
                MigrateMode::Sync {
                    pid: f.pid,
                    tid: f.tid,
                },
                false,
                out,
            );
        } else {
            self.t.counts.promote_fail_nomem += 1;
            self.t.wakeup_kswapd(tel, promo, f.time_ns);
        }
    }

    /// The rate limit in pages per second.
    fn rate_limit_pages(&self) -> u64 {
        (self.rate_limit_mbps << 20) / self.t.page_bytes
    }

    /// The hot threshold in force, ms.
    pub fn threshold_ms(&self) -> u64 {
        if self.threshold_ms == 0 {
            self.hot_threshold_ms
        } else {
            self.threshold_ms
        }
    }

    /// pgdat_free_space_enough: more free fast-tier pages than WMARK_PROMO plus the larger of
    /// 1 GiB and 1/16 of the tier.
    fn free_space_enough(&self, free: u64) -> bool {
        let pp = self.t.wm.per_page.max(1);
        let enough = ((1u64 << 30) / 4096).max((self.t.fast_pages * pp) >> 4);
        self.t.wm.ok(free, self.t.wm.base[3] + enough, 0)
    }

    /// numa_promotion_adjust_threshold.
    fn adjust_threshold(&mut self, now_ms: u64) {
        if now_ms.saturating_sub(self.th_start_ms) <= self.th_period_ms {
            return;
        }
        self.th_start_ms = now_ms;
        let ref_th = self.hot_threshold_ms;
        let ref_cand = self.rate_limit_pages().saturating_mul(self.th_period_ms) / 1000;
        let diff_cand = self.nr_cand - self.th_nr_cand;
        let unit_th = (ref_th * 2 / ADJUST_STEPS).max(1);
        let mut th = self.threshold_ms();
        if diff_cand > ref_cand.saturating_mul(11) / 10 {
            th = th.saturating_sub(unit_th).max(unit_th);
        } else if diff_cand < ref_cand.saturating_mul(9) / 10 {
            th = (th + unit_th).min(ref_th * 2);
        }
        self.th_nr_cand = self.nr_cand;
        self.threshold_ms = th;
        self.threshold_adjustments += 1;
    }

    /// numa_promotion_rate_limit: count a candidate; true when this 1 s window already has
    /// the limit's worth.
    fn rate_limit(&mut self, now_ms: u64) -> bool {
        self.nr_cand += 1;
        if now_ms.saturating_sub(self.rl_start_ms) > 1000 {
            self.rl_start_ms = now_ms;
            self.rl_nr_cand = self.nr_cand;
        }
        self.nr_cand - self.rl_nr_cand >= self.rate_limit_pages()
    }
}

impl Policy for Nbt {
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

    memory_of_lru!();

    fn init(&mut self, tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        // reset_memory_tiering: both windows start when tiering mode is switched on.
        let now_ms = tel.now_ns / 1_000_000;
        self.rl_start_ms = now_ms;
        self.th_start_ms = now_ms;
        out.push(hint_scan(&self.scan));
    }

    fault_path_of_tiering!();

    fn step(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        fault_path_step!(self, tel, mech, out);
        let (low, promo) = self.kswapd_marks();
        self.t.run_kswapd(tel, mech, out, low, promo);
    }

    fn series(&mut self, out: &mut Vec<(String, f64)>) {
        self.t.series(out);
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let mut v = Vec::new();
        self.t.stats(&mut v);
        v.push(("hot_threshold_ms".into(), self.threshold_ms() as f64));
        v.push((
            "threshold_adjustments".into(),
            self.threshold_adjustments as f64,
        ));
        v.push(("promote_candidates".into(), self.nr_cand as f64));
        v.push(("cold_faults".into(), self.cold_faults as f64));
        v.push(("rate_limited".into(), self.rate_limited as f64));
        v.push((
            "free_space_promotions".into(),
            self.free_space_promotions as f64,
        ));
        v
    }

    fn warnings(&self) -> Vec<String> {
        let (_, promo) = self.kswapd_marks();
        self.t
            .small_fast_tier_warning(&self.name, promo, "the promo watermark, WMARK_PROMO")
            .into_iter()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpp::tests::{alloc, fault, migrations, tel};
    use tierkit_core::telemetry::MigrationOutcome;
    use tierkit_core::testing::FakeMech;
    use tierkit_core::{PageId, FAST, SLOW};

    fn nbt(args: &[(&str, &str)]) -> Nbt {
        let raw: Vec<(String, String)> = args
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Nbt::new(&Params::resolve("nbt", PARAMS, &raw).unwrap())
    }

    /// A fast tier of 1M pages (4 GiB) with `free` pages free: under the free-space-enough mark
    /// (1 GiB + promo) unless `free` is large.
    fn busy(now_ms: u64, free: u64) -> Telemetry {
        tel(now_ms, 1 << 20, (1 << 20) - free)
    }

    fn start(p: &mut Nbt, slow_pages: u64) -> FakeMech {
        let mut mech = FakeMech::new(vec![Some(SLOW); slow_pages as usize]);
        let mut out = Vec::new();
        p.init(&busy(0, 50_000), &mut mech, &mut out);
        let mut t = busy(0, 50_000);
        t.allocated = alloc(0..slow_pages, SLOW);
        p.step(&t, &mut mech, &mut out);
        mech
    }

    #[test]
    fn promotes_fast_faulting_pages_not_slow_ones() {
        let mut p = nbt(&[]);
        let mut mech = start(&mut p, 10);
        let mut out = Vec::new();
        let mut t = busy(1, 50_000);
        t.hint_faults = vec![
            fault(1, SLOW, 20),
            fault(2, SLOW, 999),
            fault(3, SLOW, 1000),
            fault(4, SLOW, 5000),
        ];
        p.step(&t, &mut mech, &mut out);
        let m = migrations(&out);
        assert_eq!(m.iter().map(|x| x.0).collect::<Vec<_>>(), vec![1, 2]);
        assert!(m
            .iter()
            .all(|x| x.1 == FAST && x.2 == MigrateMode::Sync { pid: 3, tid: 7 } && !x.3));
        assert_eq!(p.cold_faults, 2);
        // No second fault needed, unlike TPP.
        assert_eq!(p.t.counts.activations, 0);
    }

    #[test]
    fn plenty_of_free_space_promotes_everything() {
        let mut p = nbt(&[]);
        let mut mech = start(&mut p, 10);
        let mut out = Vec::new();
        let mut t = busy(1, 600_000);
        t.hint_faults = vec![fault(4, SLOW, 50_000)];
        p.step(&t, &mut mech, &mut out);
        assert_eq!(migrations(&out).len(), 1);
        assert_eq!(p.free_space_promotions, 1);
    }

    #[test]
    fn respects_the_rate_limit() {
        // 1 MB/s = 256 pages of 4 KiB per second.
        let mut p = nbt(&[("promote_rate_limit_mbps", "1")]);
        let mut mech = start(&mut p, 1000);
        let mut out = Vec::new();
        let mut t = busy(1, 50_000);
        t.hint_faults = (0..300).map(|q| fault(q, SLOW, 10)).collect();
        p.step(&t, &mut mech, &mut out);
        assert_eq!(
            migrations(&out).len(),
            255,
            "the 256th candidate of the window hits the limit"
        );
        assert_eq!(p.rate_limited, 45);
        // A new window opens more than 1 s later.
        out.clear();
        let mut t = busy(1500, 50_000);
        t.hint_faults = (300..400).map(|q| fault_at(q, 1500)).collect();
        p.step(&t, &mut mech, &mut out);
        assert_eq!(migrations(&out).len(), 100);
    }

    fn fault_at(p: u64, now_ms: u64) -> tierkit_core::HintFault {
        tierkit_core::HintFault {
            time_ns: now_ms * 1_000_000,
            ..fault(p, SLOW, 10)
        }
    }

    #[test]
    fn adjusts_the_threshold_to_the_rate_limit() {
        // 1 MB/s over a 2 s period: 512 candidates is the reference.
        let mut p = nbt(&[
            ("promote_rate_limit_mbps", "1"),
            ("scan_period_max_ms", "2000"),
        ]);
        let mut mech = start(&mut p, 4000);
        let mut out = Vec::new();
        // Few candidates in the first period: the threshold rises by 1000 x 2 / 16 = 125 ms.
        let mut t = busy(2001, 50_000);
        t.hint_faults = vec![fault_at(0, 2001)];
        p.step(&t, &mut mech, &mut out);
        assert_eq!(p.threshold_ms(), 1125);
        // A fault at 1100 ms latency is hot now.
        let mut t = busy(2002, 50_000);
        t.hint_faults = vec![tierkit_core::HintFault {
            time_to_fault_ns: 1_100_000_000,
            ..fault_at(1, 2002)
        }];
        out.clear();
        p.step(&t, &mut mech, &mut out);
        assert_eq!(migrations(&out).len(), 1);
        // Many candidates (far over 110% of 512) in the next period: the threshold falls.
        for s in 0..3 {
            let now = 2100 + s * 700;
            let mut t = busy(now, 50_000);
            t.hint_faults = (0..300).map(|q| fault_at(2 + s * 300 + q, now)).collect();
            p.step(&t, &mut mech, &mut out);
        }
        let mut t = busy(4100, 50_000);
        t.hint_faults = vec![fault_at(3900, 4100)];
        p.step(&t, &mut mech, &mut out);
        assert_eq!(p.threshold_ms(), 1000);
        assert_eq!(p.threshold_adjustments, 2);
        // It never goes below one step nor above twice the default.
        for k in 0..40 {
            p.th_start_ms = 0;
            p.nr_cand += 10_000;
            p.adjust_threshold(10_000 + k);
        }
        assert_eq!(p.threshold_ms(), 125);
        for k in 0..40 {
            p.th_start_ms = 0;
            p.adjust_threshold(10_000 + k);
        }
        assert_eq!(p.threshold_ms(), 2000);
    }

    #[test]
    fn with_the_dma_zone_above_its_bar_promotions_go_on_down_to_the_low_watermark() {
        // free pages at the high watermark: refused by default (migrate_balanced_pgdat wants
        // one zone above high + the page), let through when the DMA zone passes; at the low
        // watermark refused either way, and kswapd woken
        let cap = 100_000u64;
        for above in [false, true] {
            let mut p = nbt(&[("dma_zone_above_bar", if above { "true" } else { "false" })]);
            let mut mech = FakeMech::new(vec![Some(FAST); cap as usize]);
            mech.tiers.extend(vec![Some(SLOW); 10]);
            let mut out = Vec::new();
            let mut t = tel(0, cap, 0);
            t.allocated = alloc(cap..cap + 10, SLOW);
            p.init(&t, &mut mech, &mut out);
            p.step(&t, &mut mech, &mut out);
            out.clear();
            let (low, high) = (p.t.wm.low, p.t.wm.high);
            let mut t = tel(1, cap, cap - high);
            t.hint_faults = vec![fault(cap + 3, SLOW, 3)];
            p.step(&t, &mut mech, &mut out);
            let promoted = migrations(&out)
                .iter()
                .any(|m| m.0 == cap + 3 && m.1 == FAST);
            assert_eq!(promoted, above, "above the bar: {above}");
            assert_eq!(p.t.counts.promote_fail_nomem, u64::from(!above));
            out.clear();
            let mut t = tel(2, cap, cap - low);
            t.hint_faults = vec![fault(cap + 4, SLOW, 3)];
            p.step(&t, &mut mech, &mut out);
            assert!(!migrations(&out)
                .iter()
                .any(|m| m.0 == cap + 4 && m.1 == FAST));
            assert_eq!(p.t.counts.promote_fail_nomem, 1 + u64::from(!above));
            assert!(p.t.kswapd.wakeups >= 1);
        }
    }

    #[test]
    fn a_full_fast_tier_wakes_kswapd_instead_of_promoting() {
        let mut p = nbt(&[]);
        let cap = 100_000u64;
        let mut mech = FakeMech::new(vec![Some(FAST); cap as usize]);
        mech.tiers.extend(vec![Some(SLOW); 10]);
        mech.accessed = vec![false; cap as usize + 10];
        let mut out = Vec::new();
        let mut t = tel(0, cap, cap);
        t.allocated = alloc(0..cap, FAST);
        t.allocated.extend(&alloc(cap..cap + 10, SLOW));
        p.init(&t, &mut mech, &mut out);
        out.clear();
        p.step(&t, &mut mech, &mut out);
        // Below the low watermark: kswapd demotes until WMARK_PROMO pages are free.
        // kswapd_shrink_node passes of nr_to_reclaim = the high watermark each.
        let (promo, high) = (p.t.wm.promo, p.t.wm.high);
        let m = migrations(&out);
        assert!(
            m.len() as u64 >= promo && m.len() as u64 <= promo + high + 31,
            "{} demotions, promo {promo}",
            m.len()
        );
        assert!(m.iter().all(|x| x.1 == SLOW && x.2 == MigrateMode::Async));
        assert_eq!(p.t.kswapd.wakeups, 1);
        // Demotions done: balanced, kswapd goes back to sleep.
        let mut t = tel(1, cap, cap - m.len() as u64);
        t.migrations = m
            .iter()
            .map(|&(pg, ..)| crate::lru::tests::done(pg, FAST, SLOW, MigrationOutcome::Done))
            .collect();
        out.clear();
        p.step(&t, &mut mech, &mut out);
        assert!(!p.t.kswapd.awake && out.is_empty());
        // Free pages at the high watermark: above low (kswapd stays asleep by itself), but a hot
        // fault cannot promote; the failed promotion wakes kswapd.
        let high = p.t.wm.high;
        let mut t = tel(2, cap, cap - high);
        t.hint_faults = vec![fault(cap + 3, SLOW, 3)];
        p.step(&t, &mut mech, &mut out);
        assert_eq!(p.t.counts.promote_fail_nomem, 1);
        assert_eq!(p.t.kswapd.wakeups, 2);
        let m = migrations(&out);
        assert!(!m.is_empty() && m.iter().all(|x| x.1 == SLOW));
        assert_eq!(p.t.lru.tier(PageId(cap + 3)), Some(SLOW));
    }
}
