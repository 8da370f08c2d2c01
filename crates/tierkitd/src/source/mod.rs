//! Telemetry sources, best first: PEBS load/store samples through perf_event_open
//! ([`pebs`]), DAMON's access frequencies through sysfs ([`damon`]), and a portable fallback
//! that needs neither, soft-dirty bits through `/proc/PID/pagemap` ([`softdirty`]). Uncore CHA
//! TOR counters ([`uncore`]) add per-tier counters when the kernel exposes the PMUs, and core
//! counters ([`core_counters`]) the per-target AOL and predicted slowdown of Alto and Soar.
//!
//! A sampling source turns what it observes into [`Sample`]s for the pages of the dense page
//! table. PEBS gives real samples. DAMON and soft-dirty give *pseudo-samples*: each observed page
//! earns credit in proportion to how often it was seen accessed, and one sample is emitted per
//! whole credit (see [`Credit`]), so hotness policies written for PEBS (HeMem, MEMTIS) run
//! unchanged on them.

pub mod core_counters;
pub mod damon;
pub mod pebs;
pub mod softdirty;
pub mod uncore;

use tierkit_core::{PageId, Pid, Sample, SampleFilter, FAST};

use crate::error::Result;
use crate::pages::PageTable;

/// The present, managed pages of one target after this interval's scan, sorted by virtual page.
#[derive(Clone, Debug, Default)]
pub struct ProcPages {
    pub pid: Pid,
    pub vpns: Vec<u64>,
    pub ids: Vec<PageId>,
    /// pagemap's soft-dirty bit per page (written since the last clear).
    pub soft_dirty: Vec<bool>,
}

impl ProcPages {
    /// Index range of the pages in [start_vpn, end_vpn).
    pub fn range(&self, start_vpn: u64, end_vpn: u64) -> std::ops::Range<usize> {
        let a = self.vpns.partition_point(|&v| v < start_vpn);
        let b = self.vpns.partition_point(|&v| v < end_vpn);
        a..b.max(a)
    }

    pub fn find(&self, vpn: u64) -> Option<PageId> {
        self.vpns.binary_search(&vpn).ok().map(|i| self.ids[i])
    }
}

/// Virtual pages `[start_vpn, end_vpn)` of target `pid` where a source's observations of this
/// interval fall ([`Source::poll`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Named {
    pub pid: Pid,
    pub start_vpn: u64,
    pub end_vpn: u64,
}

/// The 2 MiB-aligned stretch of virtual pages around `addr` of `pid`: what a source names for
/// one sampled address (one pagemap read of 4 KiB covers it).
pub fn named_around(pid: Pid, addr: u64) -> Named {
    const SPAN: u64 = 512;
    let vpn = addr / crate::mech::PAGE_SIZE;
    let start_vpn = vpn / SPAN * SPAN;
    Named {
        pid,
        start_vpn,
        end_vpn: start_vpn + SPAN,
    }
}

/// What a source works with each interval.
pub struct Ctx<'a> {
    pub table: &'a mut PageTable,
    pub procs: &'a [ProcPages],
    pub now_ns: u64,
    pub cpu_ghz: f64,
    pub samples: &'a mut Vec<Sample>,
}

/// Per-interval source statistics (for the log and the metrics).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stats {
    /// Raw observations (PEBS records, DAMON regions, dirty pages).
    pub observed: u64,
    /// Samples handed to the policy.
    pub samples: u64,
    /// Observations that fell outside the managed pages (other processes, file mappings).
    pub unmatched: u64,
    /// Records the kernel dropped (PERF_RECORD_LOST).
    pub lost: u64,
}

pub trait Source: Send {
    /// Short name for logs and metrics (`pebs`, `damon`, `softdirty`, `none`).
    fn name(&self) -> &'static str;
    /// The targets changed (start, a cgroup gained or lost a process, a process exited).
    fn set_targets(&mut self, pids: &[Pid]) -> Result<Vec<String>>;
    /// Read this interval's observations ahead of the page scan and name the virtual page
    /// ranges they fall in (appended to `out`; any order, overlaps allowed). Between the paced
    /// full scans (`scan-budget-pct`) the backend scans these ranges, so a page mapped or moved
    /// since the last full scan is seen where the telemetry points; `collect` then turns the
    /// same observations into samples. A source that names nothing (the default) reads in
    /// `collect` and is served by the full scans alone.
    fn poll(&mut self, _out: &mut Vec<Named>) -> Result<()> {
        Ok(())
    }
    /// Turn this interval's observations into samples.
    fn collect(&mut self, ctx: &mut Ctx) -> Result<Stats>;
    /// The policy retuned sampling. Returns a note for the log when the source cannot follow.
    fn set_sampling(&mut self, _period: u64, _filter: SampleFilter) -> Option<String> {
        None
    }
    /// Per-tier counters this source can estimate (PEBS: from sample weights), fast tier first.
    fn tier_counters(&self) -> Option<Vec<tierkit_core::TierCounters>> {
        None
    }
    /// Whether the backend must clear soft-dirty bits after each scan.
    fn wants_soft_dirty(&self) -> bool {
        false
    }
    /// Release kernel resources (DAMON kdamonds, perf events).
    fn stop(&mut self) {}
}

/// A source for policies that sample nothing.
pub struct NoSource;

impl Source for NoSource {
    fn name(&self) -> &'static str {
        "none"
    }
    fn set_targets(&mut self, _pids: &[Pid]) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    fn collect(&mut self, _ctx: &mut Ctx) -> Result<Stats> {
        Ok(Stats::default())
    }
}

/// Pseudo-sample accounting: a page observed with access intensity `amount` (in samples) earns
/// that much credit; each whole unit of credit is one sample, the rest carries over to the next
/// interval. Deterministic, and proportional on average. At most `cap` samples per page per call.
pub struct Credit {
    pub cap: u32,
}

impl Credit {
    #[allow(clippy::too_many_arguments)]
    pub fn give(
        &self,
        table: &mut PageTable,
        id: PageId,
        pid: Pid,
        amount: f64,
        is_store: bool,
        now_ns: u64,
        filter: SampleFilter,
        out: &mut Vec<Sample>,
    ) -> u64 {
        let Some(slot) = table.slot_mut(id) else {
            return 0;
        };
        if amount <= 0.0 {
            return 0;
        }
        slot.accessed = true;
        if filter == SampleFilter::SlowLoads && slot.tier == FAST {
            return 0;
        }
        let total = slot.credit as f64 + amount;
        let n = (total.floor() as u64).min(self.cap as u64);
        slot.credit = (total - total.floor()).min(1.0) as f32;
        for _ in 0..n {
            out.push(Sample {
                page: id,
                tier: slot.tier,
                is_store,
                pid,
                tid: pid,
                latency_ns: 0.0,
                exposed_ns: 0.0,
                time_ns: now_ns,
            });
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credit_is_proportional_and_carries_over() {
        let mut t = PageTable::default();
        let (a, _) = t.intern(1, 10);
        let (b, _) = t.intern(1, 11);
        t.slot_mut(a).unwrap().tier = 1;
        t.slot_mut(b).unwrap().tier = 0;
        let c = Credit { cap: 8 };
        let mut out = Vec::new();
        let mut na = 0;
        for _ in 0..10 {
            na += c.give(
                &mut t,
                a,
                1,
                0.25,
                false,
                5,
                SampleFilter::AllMisses,
                &mut out,
            );
        }
        assert_eq!(na, 2); // 10 x 0.25 = 2.5: two samples, half a credit left
        assert!((t.slot(a).unwrap().credit - 0.5).abs() < 1e-6);
        assert_eq!(
            c.give(
                &mut t,
                a,
                1,
                100.0,
                true,
                5,
                SampleFilter::AllMisses,
                &mut out
            ),
            8
        );
        // fast pages give no samples under SlowLoads but are still marked accessed
        assert_eq!(
            c.give(
                &mut t,
                b,
                1,
                3.0,
                false,
                5,
                SampleFilter::SlowLoads,
                &mut out
            ),
            0
        );
        assert!(t.slot(b).unwrap().accessed);
        assert_eq!(out.len(), 10);
        assert!(out[..2]
            .iter()
            .all(|s| s.page == a && s.tier == 1 && !s.is_store));
        // nothing for an unknown page or zero intensity
        assert_eq!(
            c.give(
                &mut t,
                PageId(99),
                1,
                5.0,
                false,
                5,
                SampleFilter::AllMisses,
                &mut out
            ),
            0
        );
        assert_eq!(
            c.give(
                &mut t,
                b,
                1,
                0.0,
                false,
                5,
                SampleFilter::AllMisses,
                &mut out
            ),
            0
        );
    }

    #[test]
    fn a_sampled_address_names_its_aligned_2mib_stretch() {
        let n = named_around(7, (1024 + 700) * 4096 + 123);
        assert_eq!(
            n,
            Named {
                pid: 7,
                start_vpn: 1536,
                end_vpn: 2048
            }
        );
        assert_eq!(named_around(7, 0).start_vpn, 0);
        assert_eq!(named_around(7, 512 * 4096).start_vpn, 512);
    }

    #[test]
    fn page_ranges() {
        let p = ProcPages {
            pid: 1,
            vpns: vec![2, 3, 7, 9],
            ids: (0..4).map(PageId).collect(),
            soft_dirty: vec![false; 4],
        };
        assert_eq!(p.range(3, 9), 1..3);
        assert_eq!(p.range(10, 20), 4..4);
        assert_eq!(p.find(7), Some(PageId(2)));
        assert_eq!(p.find(8), None);
    }
}
