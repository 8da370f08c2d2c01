//! HeMem (Raybuck et al., SOSP '21) as its public artifact implements it (`src/pebs.c` and
//! `src/pebs.h` of the HeMem repository), in the setup Colloid (SOSP '24) §2.1 and §4.1 use.
//!
//! - **Sampling.** PEBS-like samples of LLC-missing loads and stores at a fixed period
//!   (`SAMPLE_PERIOD` 19997). Each sample adds one to the page's read or write count; HeMem keeps
//!   them apart: a page is hot when its reads reach `HOT_READ_THRESHOLD` or its writes reach
//!   `HOT_WRITE_THRESHOLD` (4 each).
//! - **Cooling.** When a sampled page's count exceeds `PEBS_COOLING_THRESHOLD` (10), a global
//!   cooling clock advances. Counts are halved lazily, once per tick missed, the next time the page
//!   is sampled or looked at. After a tick the policy walks the hot lists, `COOLING_PAGES` (8192)
//!   per tier per quantum, and moves pages that have cooled below the thresholds to the cold lists
//!   (`partial_cool_peek_and_move`).
//! - **Lists.** Every resident page is on one of four FIFO lists: fast-hot, fast-cold, slow-hot,
//!   slow-cold. New pages start cold; a sample that makes a page hot (or cold) moves it.
//! - **Policy thread** every `quantum_ms` (`PEBS_KSWAPD_INTERVAL`, 10 ms): take pages off the
//!   slow-hot list in order; a page that has cooled goes to the slow-cold list; otherwise, if the
//!   fast tier has a free page, promote it, else first demote the page at the head of the fast-cold
//!   list (and stop when that list is empty: every fast page is hot). Promotions are capped per
//!   quantum (`PEBS_KSWAPD_MIGRATE_RATE`, 10 GiB, which the artifact calls a rate but applies per
//!   policy iteration: effectively unlimited). Migrations are asynchronous (a background thread).
//!
//! Where this differs from the artifact, and why:
//! - Pages are the backend's. HeMem manages 2 MiB pages; with 4 KiB pages a page collects 512x
//!   fewer samples at the same period, so pages rarely reach the thresholds. The thresholds keep
//!   HeMem's values: run with 2 MiB pages (as Colloid's setup does), or lower `sample_period`.
//! - The artifact shifts only the counter of the sampled event type when it applies missed ticks
//!   (so the other counter never cools) and tests hotness before applying them; here both counters
//!   are cooled before the new sample is counted.
//! - HeMem's sampler hands hot/cold changes to the policy thread through rings (1M hot and 128
//!   cold requests per iteration); here list moves happen as samples are read.
//! - The policy sees migration outcomes only later (at the next epoch, or when the machine's
//!   migration threads get to them), so a page is off every list while its migration is in
//!   flight, and migrations still in flight count against the next quantum's cap. Actions are
//!   emitted in order (each demotion before the promotion that uses its space): the backend is
//!   expected to carry them out in that order.
//! - Only the promotions count against the cap, as in the artifact.
//! - One instance manages every process's pages (HeMem manages the one application it is
//!   preloaded into).

use tierkit_core::action::{MigrateMode, SampleFilter};
use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::policy::{AccessTracker, Builder};
use tierkit_core::rng::scramble;
use tierkit_core::telemetry::MigrationOutcome;
use tierkit_core::{
    Action, Mechanism, PageId, PageSpace, Policy, PolicyInfo, Telemetry, TelemetryNeeds, TierId,
    FAST, SLOW,
};

use crate::common::{spec_name, Dense, Residency};
use crate::pagelist::PageLists;

const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "sample_period",
        kind: ParamKind::Int { min: 1, max: 1 << 30 },
        default: "19997",
        unit: "misses",
        doc: "PEBS period: one sample per this many LLC-missing loads and stores (pebs.h SAMPLE_PERIOD; Colloid's fork uses 5003).",
    },
    ParamDef {
        name: "hot_read_threshold",
        kind: ParamKind::Int { min: 1, max: 30000 },
        default: "4",
        unit: "samples",
        doc: "A page whose cooled read-sample count reaches this is hot (HOT_READ_THRESHOLD; Colloid's fork uses 8).",
    },
    ParamDef {
        name: "hot_write_threshold",
        kind: ParamKind::Int { min: 1, max: 30000 },
        default: "4",
        unit: "samples",
        doc: "A page whose cooled write-sample count reaches this is hot (HOT_WRITE_THRESHOLD).",
    },
    ParamDef {
        name: "cooling_threshold",
        kind: ParamKind::Int { min: 1, max: 30000 },
        default: "10",
        unit: "samples",
        doc: "When a page's read or write count exceeds this, the global cooling clock advances and all counts halve lazily (PEBS_COOLING_THRESHOLD; Colloid's fork uses 18).",
    },
    ParamDef {
        name: "cooling_pages",
        kind: ParamKind::Int { min: 1, max: 1 << 32 },
        default: "8192",
        unit: "pages",
        doc: "Hot-list pages per tier re-checked each quantum after a clock tick, moving cooled ones to the cold list (COOLING_PAGES).",
    },
    ParamDef {
        name: "quantum_ms",
        kind: ParamKind::Int { min: 1, max: 3_600_000 },
        default: "10",
        unit: "ms",
        doc: "Period of the policy (migration) thread (PEBS_KSWAPD_INTERVAL).",
    },
    ParamDef {
        name: "max_migrate_mb_per_quantum",
        kind: ParamKind::Int { min: 1, max: 1 << 40 },
        default: "10240",
        unit: "MiB",
        doc: "Promotions per quantum at most (PEBS_KSWAPD_MIGRATE_RATE, 10 GiB: effectively unlimited; Colloid's HeMem version uses 100 MB).",
    },
];

pub const INFO: PolicyInfo = PolicyInfo {
    name: "hemem",
    description: "HeMem: PEBS read/write counts, hot at 4 samples, lazy halving on a global cooling clock, per-tier hot/cold lists, promote hot pages every 10 ms swapping out cold fast pages",
    source: "HeMem SOSP'21 §3-4 and its artifact (src/pebs.c, pebs.h); Colloid SOSP'24 §2.1, §4.1",
    params: PARAMS,
    positional: None,
    build: Builder::Base(|p| Ok(build(p))),
};

const FAST_HOT: usize = 0;
const FAST_COLD: usize = 1;
const SLOW_HOT: usize = 2;
const SLOW_COLD: usize = 3;
/// Pages whose migration is in flight (HeMem takes them off the lists while it moves them).
const MIGRATING: usize = 4;
const N_LISTS: usize = 5;

/// How many samples ahead the sample loop asks for their pages' records.
const PREFETCH_AHEAD: usize = 16;

const HOT: u8 = 1;
const TO_FAST: u8 = 2;
const TO_SLOW: u8 = 4;

fn list_for(tier: TierId, hot: bool) -> usize {
    match (tier == FAST, hot) {
        (true, true) => FAST_HOT,
        (true, false) => FAST_COLD,
        (false, true) => SLOW_HOT,
        (false, false) => SLOW_COLD,
    }
}

/// A page's read or write count: `u8` where the counts cannot pass 255 (a count never exceeds
/// `cooling_threshold + 1`: the sample that takes it past the threshold ticks the clock, and the
/// page's next sample halves it first), `u16` otherwise. Both give the same counts bit for bit.
pub trait Count: Copy + Default + std::fmt::Debug + Into<u32> + Send + 'static {
    const BITS: u32;
    /// The largest `cooling_threshold` whose counts this type holds exactly.
    const MAX_COOLING_THRESHOLD: u64;
    fn inc(self) -> Self;
    /// `self >> n`, 0 when `n` is the width or more.
    fn halve(self, n: u32) -> Self;
}

macro_rules! count_impl {
    ($t:ty) => {
        impl Count for $t {
            const BITS: u32 = <$t>::BITS;
            const MAX_COOLING_THRESHOLD: u64 = <$t>::MAX as u64 - 1;
            #[inline]
            fn inc(self) -> Self {
                self.saturating_add(1)
            }
            #[inline]
            fn halve(self, n: u32) -> Self {
                self.checked_shr(n).unwrap_or(0)
            }
        }
    };
}
count_impl!(u8);
count_impl!(u16);

/// Bits of a page's clock in [`PageState::clock_flags`]; the other three hold its flags.
const CLOCK_BITS: u32 = 13;
const CLOCK_MASK: u16 = (1 << CLOCK_BITS) - 1;

/// HeMem's per-page record (`struct hemem_page`: accesses[], local_clock, hot): 4 bytes with
/// `u8` counts (the default thresholds), 6 with `u16` counts; packed (one per page of the page
/// space).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, packed)]
struct PageState<C: Count> {
    reads: C,
    writes: C,
    /// The low 13 bits: the low bits of the cooling clock when the counts were last brought up
    /// to date. No page lags the clock by 2^13 ticks or more: every [`CLOCK_SWEEP`] ticks HeMem
    /// brings every page up to date (`HeMem::tick`), so the wrapped difference is the true one.
    /// The high 3 bits: the flags (`HOT`, `TO_FAST`, `TO_SLOW`).
    clock_flags: u16,
}

/// HeMem brings every page's counts up to date every this many clock ticks (see
/// [`PageState::clock_flags`]).
const CLOCK_SWEEP: u32 = 1 << (CLOCK_BITS - 1);

impl<C: Count> PageState<C> {
    #[inline]
    fn clock(&self) -> u16 {
        self.clock_flags & CLOCK_MASK
    }

    #[inline]
    fn flags(&self) -> u8 {
        (self.clock_flags >> CLOCK_BITS) as u8
    }

    #[inline]
    fn has(&self, f: u8) -> bool {
        self.flags() & f != 0
    }

    #[inline]
    fn set_flags(&mut self, f: u8) {
        self.clock_flags = self.clock() | ((f as u16) << CLOCK_BITS);
    }

    #[inline]
    fn set(&mut self, f: u8) {
        self.set_flags(self.flags() | f);
    }

    #[inline]
    fn clear(&mut self, f: u8) {
        self.set_flags(self.flags() & !f);
    }

    /// A fresh record: no counts, no flags, at `clock`.
    fn fresh(clock: u32) -> Self {
        PageState {
            reads: C::default(),
            writes: C::default(),
            clock_flags: clock as u16 & CLOCK_MASK,
        }
    }

    /// Apply the cooling ticks missed since the counts were last touched (one halving each).
    #[inline]
    fn cool_to(&mut self, clock: u32) {
        let missed = ((clock as u16).wrapping_sub(self.clock()) & CLOCK_MASK) as u32;
        if missed > 0 {
            self.reads = self.reads.halve(missed);
            self.writes = self.writes.halve(missed);
            self.clock_flags = (self.clock_flags & !CLOCK_MASK) | (clock as u16 & CLOCK_MASK);
        }
    }
}

/// HeMem with the narrowest counts its `cooling_threshold` allows.
fn build(p: &Params) -> Box<dyn Policy> {
    if p.u64("cooling_threshold") <= u8::MAX_COOLING_THRESHOLD {
        Box::new(HeMem::<u8>::new(p))
    } else {
        Box::new(HeMem::<u16>::new(p))
    }
}

pub struct HeMem<C: Count = u8> {
    spec: String,
    sample_period: u64,
    hot_reads: u16,
    hot_writes: u16,
    cooling_threshold: u16,
    cooling_pages: u64,
    quantum_ns: u64,
    max_migrate_bytes: u64,

    residency: Residency,
    pages: Dense<PageState<C>>,
    lists: PageLists,
    /// HeMem's `global_clock`.
    clock: u32,
    /// Hot-list pages (fast, slow) still to re-check since the last clock tick.
    cool_remaining: [u64; 2],
    next_quantum_ns: u64,
    inflight_to_fast: u64,
    inflight_to_slow: u64,

    samples: u64,
    samples_untracked: u64,
    quanta: u64,
    promotions: u64,
    demotions: u64,
    migrations_done: u64,
    migrations_failed: u64,
    cap_hits: u64,

    /// A layer (Colloid) makes the placement decisions; HeMem keeps tracking.
    delegated: bool,
    /// The sum of all pages' counts, halved with each clock tick (for access probabilities).
    freq_total: f64,
}

impl<C: Count> HeMem<C> {
    pub fn new(p: &Params) -> Self {
        let quantum_ns = p.u64("quantum_ms") * 1_000_000;
        HeMem {
            spec: spec_name(INFO.name, PARAMS, p),
            sample_period: p.u64("sample_period"),
            hot_reads: p.u64("hot_read_threshold") as u16,
            hot_writes: p.u64("hot_write_threshold") as u16,
            cooling_threshold: p.u64("cooling_threshold") as u16,
            cooling_pages: p.u64("cooling_pages"),
            quantum_ns,
            max_migrate_bytes: p.u64("max_migrate_mb_per_quantum") << 20,
            residency: Residency::default(),
            pages: Dense::new(PageState::default()),
            lists: PageLists::new(N_LISTS),
            clock: 0,
            cool_remaining: [0; 2],
            next_quantum_ns: quantum_ns,
            inflight_to_fast: 0,
            inflight_to_slow: 0,
            samples: 0,
            samples_untracked: 0,
            quanta: 0,
            promotions: 0,
            demotions: 0,
            migrations_done: 0,
            migrations_failed: 0,
            cap_hits: 0,
            delegated: false,
            freq_total: 0.0,
        }
    }

    #[inline]
    fn is_hot(&self, st: &PageState<C>) -> bool {
        st.reads.into() >= self.hot_reads as u32 || st.writes.into() >= self.hot_writes as u32
    }

    /// Put a page on the list its tier and hotness call for (pages in flight stay put).
    fn sync(&mut self, p: PageId) {
        if self.lists.list_of(p) == Some(MIGRATING) {
            return;
        }
        match self.residency.tier(p) {
            None => {
                self.lists.remove(p);
            }
            Some(t) => {
                let want = list_for(t, self.pages.get(p).has(HOT));
                if self.lists.list_of(p) != Some(want) {
                    self.lists.push_back(want, p);
                }
            }
        }
    }

    /// Forget a page's in-flight migration (its result arrived, or the page went away).
    fn settle(&mut self, p: PageId) {
        let st = self.pages.get_mut(p);
        if st.has(TO_FAST) {
            self.inflight_to_fast -= 1;
        }
        if st.has(TO_SLOW) {
            self.inflight_to_slow -= 1;
        }
        st.clear(TO_FAST | TO_SLOW);
        if self.lists.list_of(p) == Some(MIGRATING) {
            self.lists.remove(p);
        }
    }

    fn observe_events(&mut self, tel: &Telemetry) {
        self.residency.observe(tel);
        for (first, count, _, _) in tel.allocated.runs_iter() {
            if first.0 >= self.pages.len() as u64 && !self.lists.reaches(first) {
                self.first_touch(first, count);
                continue;
            }
            for p in first.0..first.0 + count {
                self.forget(PageId(p));
            }
        }
        for e in &tel.freed {
            self.forget(e.page);
        }
        for m in &tel.migrations {
            if m.outcome == MigrationOutcome::Done {
                self.migrations_done += 1;
            } else {
                self.migrations_failed += 1;
            }
            self.settle(m.page);
            self.sync(m.page);
        }
    }

    /// The record of a page just allocated or freed: no counts, at the current clock.
    fn fresh_record(&self) -> PageState<C> {
        PageState::fresh(self.clock)
    }

    /// A page allocated or freed: a fresh record, on the list its tier calls for.
    fn forget(&mut self, p: PageId) {
        self.settle(p);
        self.freq_total = (self.freq_total - self.freq(p) as f64).max(0.0);
        *self.pages.get_mut(p) = self.fresh_record();
        self.sync(p);
    }

    /// [`HeMem::forget`] for pages `first..first + count` that the tables do not reach yet (a
    /// first touch), in one pass: they have no record, no count and no list, so each gets a
    /// fresh record and goes on the cold list of the tier it is in now, in page order.
    fn first_touch(&mut self, first: PageId, count: u64) {
        self.pages.set_run(first, count, self.fresh_record());
        let end = first.0 + count;
        let mut p = first.0;
        while p < end {
            let t = self.residency.tier(PageId(p));
            let mut q = p + 1;
            while q < end && self.residency.tier(PageId(q)) == t {
                q += 1;
            }
            if let Some(t) = t {
                self.lists
                    .push_back_run(list_for(t, false), PageId(p), q - p);
            }
            p = q;
        }
    }

    /// The PEBS scan thread: count each sample and move pages between hot and cold lists.
    fn observe_samples(&mut self, tel: &Telemetry) {
        // The samples' pages are scattered over large tables: ask for the records a few
        // samples ahead (a hint that changes nothing else).
        for a in tel.samples.iter().take(PREFETCH_AHEAD) {
            self.residency.prefetch(a.page);
            self.pages.prefetch(a.page);
        }
        for (i, s) in tel.samples.iter().enumerate() {
            if let Some(a) = tel.samples.get(i + PREFETCH_AHEAD) {
                self.residency.prefetch(a.page);
                self.pages.prefetch(a.page);
            }
            self.samples += 1;
            if self.residency.tier(s.page).is_none() {
                self.samples_untracked += 1;
                continue;
            }
            self.freq_total += 1.0;
            let clock = self.clock;
            let st = self.pages.get_mut(s.page);
            st.cool_to(clock);
            let c: u32 = if s.is_store {
                st.writes = st.writes.inc();
                st.writes.into()
            } else {
                st.reads = st.reads.inc();
                st.reads.into()
            };
            let tick = c > self.cooling_threshold as u32;
            let was_hot = st.has(HOT);
            let hot = st.reads.into() >= self.hot_reads as u32
                || st.writes.into() >= self.hot_writes as u32;
            if hot != was_hot {
                st.set_flags(st.flags() ^ HOT);
                self.sync(s.page);
            }
            if tick {
                self.tick();
                self.freq_total *= 0.5;
                self.cool_remaining = [self.lists.len(FAST_HOT), self.lists.len(SLOW_HOT)];
            }
        }
    }

    /// Advance the cooling clock; every [`CLOCK_SWEEP`] ticks, bring every page's counts up to
    /// date, so that no page lags the clock by 2^13 ticks (its 13-bit clock would wrap). Cooling
    /// twice is cooling once by the sum (shifts compose, and as many missed ticks as the count
    /// has bits, or more, give 0 either way), so the sweep changes no count any later read sees.
    fn tick(&mut self) {
        self.clock = self.clock.wrapping_add(1);
        if self.clock.is_multiple_of(CLOCK_SWEEP) {
            let clock = self.clock;
            self.pages.for_each_mut(|st| st.cool_to(clock));
        }
    }

    /// A page's read plus write count, cooled to the current clock.
    fn freq(&self, p: PageId) -> u32 {
        let mut st = *self.pages.get(p);
        st.cool_to(self.clock);
        st.reads.into() + st.writes.into()
    }

    fn issue(&mut self, p: PageId, to: TierId, out: &mut Vec<Action>) {
        out.push(Action::Migrate {
            page: p,
            to,
            mode: MigrateMode::Async,
            keep_shadow: false,
        });
        self.lists.push_back(MIGRATING, p);
        let st = self.pages.get_mut(p);
        if to == FAST {
            st.set(TO_FAST);
            self.inflight_to_fast += 1;
            self.promotions += 1;
        } else {
            st.set(TO_SLOW);
            self.inflight_to_slow += 1;
            self.demotions += 1;
        }
    }

    /// The policy thread's migration loop (`pebs_policy_thread`).
    fn migrate(&mut self, tel: &Telemetry, out: &mut Vec<Action>) {
        // The artifact's thread migrates synchronously, so a quantum starts with nothing in
        // flight; here earlier migrations may still be queued: they count against the cap, and
        // the free counts are what will be free once they are done (the queue runs in order).
        let cap_pages = (self.max_migrate_bytes / tel.page_bytes.max(1))
            .max(1)
            .saturating_sub(self.inflight_to_fast);
        let free = |t: TierId| tel.tier(t).map_or(0, |t| t.free_pages());
        let mut fast_free =
            (free(FAST) + self.inflight_to_slow).saturating_sub(self.inflight_to_fast);
        let mut slow_free =
            (free(SLOW) + self.inflight_to_fast).saturating_sub(self.inflight_to_slow);
        let mut promoted = 0;
        while promoted < cap_pages {
            let Some(p) = self.lists.pop_front(SLOW_HOT) else {
                break;
            };
            let clock = self.clock;
            let st = self.pages.get_mut(p);
            st.cool_to(clock);
            let st = *st;
            if !self.is_hot(&st) {
                // cooled since it was last sampled
                self.pages.get_mut(p).clear(HOT);
                self.lists.push_back(SLOW_COLD, p);
                continue;
            }
            if fast_free == 0 {
                let victim = if slow_free > 0 {
                    self.lists.pop_front(FAST_COLD)
                } else {
                    None
                };
                let Some(cp) = victim else {
                    // every fast page is hot (or the slow tier is full): try again next quantum
                    self.lists.push_back(SLOW_HOT, p);
                    return;
                };
                self.issue(cp, SLOW, out);
                slow_free -= 1;
                fast_free += 1;
            }
            self.issue(p, FAST, out);
            fast_free -= 1;
            slow_free += 1;
            promoted += 1;
        }
        if promoted >= cap_pages && !self.lists.is_empty(SLOW_HOT) {
            self.cap_hits += 1;
        }
    }

    /// `partial_cool_peek_and_move`: after a clock tick, re-check a slice of each hot list.
    fn partial_cool(&mut self) {
        for (i, (hot_list, cold_list)) in [(FAST_HOT, FAST_COLD), (SLOW_HOT, SLOW_COLD)]
            .into_iter()
            .enumerate()
        {
            let remaining = self.cool_remaining[i].min(self.lists.len(hot_list));
            let n = remaining.min(self.cooling_pages);
            for _ in 0..n {
                let Some(p) = self.lists.pop_front(hot_list) else {
                    break;
                };
                let clock = self.clock;
                let st = self.pages.get_mut(p);
                st.cool_to(clock);
                let st = *st;
                if self.is_hot(&st) {
                    self.lists.push_back(hot_list, p);
                } else {
                    self.pages.get_mut(p).clear(HOT);
                    self.lists.push_back(cold_list, p);
                }
            }
            self.cool_remaining[i] = remaining - n;
        }
    }
}

impl<C: Count> Policy for HeMem<C> {
    fn name(&self) -> String {
        self.spec.clone()
    }

    fn needs(&self) -> TelemetryNeeds {
        TelemetryNeeds {
            sampling: Some((self.sample_period, SampleFilter::AllMisses)),
            quantum_ns: self.quantum_ns,
            ..TelemetryNeeds::default()
        }
    }

    /// Per page: its tier (1 B), its counts, clock and flags ([`PageState`], 4 B with `u8` counts,
    /// 6 with `u16`) and its list links (8 B; 9 past 2^29 pages).
    fn memory_bytes(&self, space: &PageSpace) -> u64 {
        Residency::bytes_for(space.pages)
            + Dense::<PageState<C>>::bytes_for(space.pages)
            + PageLists::bytes_for(space.pages, N_LISTS)
    }

    fn reserve(&mut self, space: &PageSpace) -> tierkit_core::Result<()> {
        self.residency.reserve(space.pages)?;
        self.pages.reserve(space.pages, "HeMem's page table")?;
        self.lists.reserve(space.pages, "HeMem's page lists")
    }

    fn allocated_bytes(&self) -> u64 {
        self.residency.bytes() + (self.pages.bytes() + self.lists.bytes()) as u64
    }

    fn init(&mut self, _tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        out.push(Action::SetSampling {
            period: self.sample_period,
            filter: SampleFilter::AllMisses,
        });
    }

    fn step(&mut self, tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        self.observe_events(tel);
        self.observe_samples(tel);
        if tel.now_ns >= self.next_quantum_ns {
            self.quanta += 1;
            if !self.delegated {
                self.migrate(tel, out);
            }
            self.partial_cool();
            self.next_quantum_ns = (tel.now_ns / self.quantum_ns + 1) * self.quantum_ns;
        }
    }

    fn tracker(&self) -> Option<&dyn AccessTracker> {
        Some(self)
    }

    /// Colloid replaces HeMem's placement (Colloid §4.1): the migration loop stops; sampling,
    /// the lists and cooling go on.
    fn delegate_placement(&mut self) -> bool {
        self.delegated = true;
        true
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let table_bytes = self.allocated_bytes();
        [
            ("samples_processed", self.samples as f64),
            ("samples_untracked", self.samples_untracked as f64),
            ("pages_tracked", self.lists.total() as f64),
            ("hot_pages_fast", self.lists.len(FAST_HOT) as f64),
            ("hot_pages_slow", self.lists.len(SLOW_HOT) as f64),
            ("cooling_clock", self.clock as f64),
            ("quanta", self.quanta as f64),
            ("promotions_issued", self.promotions as f64),
            ("demotions_issued", self.demotions as f64),
            (
                "migrations_issued",
                (self.promotions + self.demotions) as f64,
            ),
            ("migrations_done", self.migrations_done as f64),
            ("migrations_failed", self.migrations_failed as f64),
            ("cap_hits", self.cap_hits as f64),
            ("table_bytes", table_bytes as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }
}

/// HeMem's counts as Colloid's HeMem version reads them (§4.1): a page's access probability is
/// its read plus write count over the sum of all counts. HeMem keeps no order inside a list, so
/// "hottest" takes the tier's hot list (then its cold list) up to `max` pages and sorts those.
impl<C: Count> AccessTracker for HeMem<C> {
    fn access_probability(&self, page: PageId) -> f64 {
        if self.freq_total <= 0.0 || self.residency.tier(page).is_none() {
            return 0.0;
        }
        (self.freq(page) as f64 / self.freq_total).min(1.0)
    }

    fn hottest(&self, tier: TierId, max: usize, out: &mut Vec<(PageId, f64)>) {
        out.clear();
        let (hot, cold) = (list_for(tier, true), list_for(tier, false));
        for p in self.lists.iter(hot).chain(self.lists.iter(cold)).take(max) {
            let pr = self.access_probability(p);
            if pr > 0.0 {
                out.push((p, pr));
            }
        }
        // Ties (equal counts are the rule) go in a scrambled page order, not by page id: ids
        // follow the order of the processes in the experiment file, and the first one's pages
        // would win every tie (docs/validation.md, section 1u).
        out.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then(scramble(a.0 .0).cmp(&scramble(b.0 .0)))
        });
    }

    fn coldest(&self, tier: TierId, max: usize, out: &mut Vec<PageId>) {
        out.clear();
        let (hot, cold) = (list_for(tier, true), list_for(tier, false));
        out.extend(self.lists.iter(cold).chain(self.lists.iter(hot)).take(max));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testbed::{read, write, Machine};
    use proptest::prelude::*;

    fn hemem(args: &[(&str, &str)]) -> HeMem {
        HeMem::new(&crate::testbed::params("hemem", PARAMS, args))
    }

    use crate::testbed::async_migrations as migrations;

    #[test]
    fn starts_sampling_and_names_itself() {
        let mut h = hemem(&[("sample_period", "5003")]);
        assert_eq!(h.name(), "hemem:sample_period=5003");
        let n = h.needs();
        assert_eq!(n.sampling, Some((5003, SampleFilter::AllMisses)));
        assert_eq!(n.quantum_ns, 10_000_000);
        let mut out = Vec::new();
        h.init(
            &Telemetry::default(),
            &mut tierkit_core::testing::FakeMech::default(),
            &mut out,
        );
        assert_eq!(
            out,
            vec![Action::SetSampling {
                period: 5003,
                filter: SampleFilter::AllMisses
            }]
        );
    }

    /// A first touch taken as runs leaves HeMem as taking it page by page does: the same
    /// records and the same lists in the same order, also where a run mixes tiers, pages of
    /// the run are freed in the same epoch, and later runs re-touch freed pages.
    #[test]
    fn a_first_touch_in_runs_is_a_first_touch_page_by_page() {
        use tierkit_core::telemetry::PageEvent;
        let mut tel = Telemetry::default();
        tel.allocated.push_run(PageId(0), 40, 1, FAST);
        tel.allocated.push_run(PageId(40), 30, 1, SLOW);
        tel.allocated.push_run(PageId(100), 10, 2, FAST);
        for p in [3, 41, 105] {
            tel.freed.push(PageEvent {
                page: PageId(p),
                pid: 1,
                tier: FAST,
            });
        }
        let mut a = hemem(&[]);
        let mut b = hemem(&[]);
        a.observe_events(&tel);
        b.residency.observe(&tel);
        for e in tel.allocated.iter().chain(&tel.freed) {
            b.forget(e.page);
        }
        // a second epoch re-touches freed pages and new ones
        let mut tel2 = Telemetry::default();
        tel2.allocated.push_run(PageId(3), 1, 1, SLOW);
        tel2.allocated.push_run(PageId(110), 5, 1, SLOW);
        a.observe_events(&tel2);
        b.residency.observe(&tel2);
        for e in tel2.allocated.iter() {
            b.forget(e.page);
        }
        for l in 0..N_LISTS {
            let (x, y): (Vec<_>, Vec<_>) = (a.lists.iter(l).collect(), b.lists.iter(l).collect());
            assert_eq!(x, y, "list {l}");
        }
        assert_eq!(a.lists.len(FAST_COLD), 39 + 9);
        for p in 0..120 {
            let (x, y) = (*a.pages.get(PageId(p)), *b.pages.get(PageId(p)));
            assert_eq!(
                (x.reads, x.writes, x.flags()),
                (y.reads, y.writes, y.flags()),
                "page {p}"
            );
            assert_eq!(
                a.residency.tier(PageId(p)),
                b.residency.tier(PageId(p)),
                "page {p}"
            );
        }
        assert_eq!(a.residency.count(FAST), b.residency.count(FAST));
    }

    /// A page's clock is 13 bits, HeMem's 32: the sweep every `CLOCK_SWEEP` ticks keeps every
    /// count what 32-bit clocks give, also for a page left alone across the 13-bit wrap (it
    /// would read its count halved once, not 0, without the sweep), with either count width.
    fn counts_cool_right_across_the_clock_wrap<C: Count>(big: u32) {
        let mut h = HeMem::<C>::new(&crate::testbed::params("hemem", PARAMS, &[]));
        let wrap = 1u32 << CLOCK_BITS;
        let count = |n: u32| -> C {
            let mut c = C::default();
            for _ in 0..n {
                c = c.inc();
            }
            c
        };
        let fresh = |reads: u32| PageState::<C> {
            reads: count(reads),
            writes: count(3),
            clock_flags: 0,
        };
        for p in 0..3 {
            *h.pages.get_mut(PageId(p)) = fresh(big);
        }
        let want = |count: u32, missed: u32| {
            if missed >= C::BITS {
                0
            } else {
                count >> missed
            }
        };
        for t in 1..=3u32 {
            h.tick();
            assert_eq!(h.freq(PageId(2)), want(big, t) + want(3, t));
        }
        let mut touched = 0;
        while h.clock < 3 * wrap + 40 {
            h.tick();
            if h.clock == wrap + 3 {
                let clock = h.clock;
                let st = h.pages.get_mut(PageId(1));
                st.cool_to(clock);
                st.reads = count(big);
                st.set(HOT | TO_SLOW);
                touched = clock;
            }
            if h.clock == wrap + 1 {
                assert_eq!(h.freq(PageId(0)), 0, "a page left alone across the wrap");
            }
            if touched > 0 && h.clock - touched < 20 {
                assert_eq!(h.freq(PageId(1)), want(big, h.clock - touched));
                // the flags ride along with the clock untouched
                assert_eq!(h.pages.get(PageId(1)).flags(), HOT | TO_SLOW);
            }
        }
        assert_eq!(h.freq(PageId(0)), 0);
    }

    #[test]
    fn counts_cool_right_across_the_13_bit_clock_wrap() {
        counts_cool_right_across_the_clock_wrap::<u8>(200);
        counts_cool_right_across_the_clock_wrap::<u16>(40000);
        assert_eq!(std::mem::size_of::<PageState<u8>>(), 4);
        assert_eq!(std::mem::size_of::<PageState<u16>>(), 6);
    }

    /// The builder takes `u8` counts up to a cooling threshold of 254 and `u16` above; each is
    /// named and sized as such.
    #[test]
    fn the_count_width_follows_the_cooling_threshold() {
        let space = PageSpace::new(1 << 20, vec![1 << 18, 1 << 20]);
        let narrow = crate::build("hemem").unwrap();
        let at_254 = crate::build("hemem:cooling_threshold=254").unwrap();
        let wide = crate::build("hemem:cooling_threshold=255").unwrap();
        assert_eq!(narrow.memory_bytes(&space), at_254.memory_bytes(&space));
        assert_eq!(
            wide.memory_bytes(&space) - narrow.memory_bytes(&space),
            2 << 20
        );
    }

    #[test]
    fn promotes_a_page_after_four_samples() {
        let mut m = Machine::new(&[100, 100]);
        for p in 0..8 {
            m.alloc(p, SLOW, 0);
        }
        let mut h = hemem(&[]);
        // three reads of page 3, two reads and two writes of page 5 (counted apart: not hot)
        let s = vec![
            read(3),
            read(3),
            read(3),
            read(5),
            read(5),
            write(5),
            write(5),
        ];
        let out = m.run_for(&mut h, s, 10);
        assert!(migrations(&out).is_empty(), "{out:?}");
        assert_eq!(h.lists.len(SLOW_HOT), 0);
        // the fourth read makes page 3 hot; four writes make page 6 hot
        let s = vec![read(3), write(6), write(6), write(6), write(6)];
        let out = m.run_for(&mut h, s, 10);
        assert_eq!(migrations(&out), vec![(3, FAST), (6, FAST)]);
        m.run_for(&mut h, vec![], 1);
        assert_eq!(m.tier[3], Some(FAST));
        assert_eq!(h.lists.list_of(PageId(3)), Some(FAST_HOT));
        assert_eq!((h.promotions, h.demotions, h.migrations_done), (2, 0, 2));
    }

    #[test]
    fn demotes_a_cold_fast_page_when_the_fast_tier_is_full() {
        let mut m = Machine::new(&[3, 100]);
        for p in 0..3 {
            m.alloc(p, FAST, 0);
        }
        m.alloc(10, SLOW, 0);
        m.alloc(11, SLOW, 0);
        let mut h = hemem(&[]);
        // page 1 is hot in the fast tier; pages 10 and 11 are hot in the slow tier
        let mut s = vec![read(1); 4];
        s.extend(vec![read(10); 4]);
        s.extend(vec![write(11); 4]);
        let out = m.run_for(&mut h, s, 10);
        // the head of the fast-cold list (page 0, then page 2) goes down before each promotion
        assert_eq!(
            migrations(&out),
            vec![(0, SLOW), (10, FAST), (2, SLOW), (11, FAST)]
        );
        m.run_for(&mut h, vec![], 1);
        assert_eq!(m.used(FAST), 3);
        assert_eq!(m.nospace, 0);
        // every fast page is hot now: a new hot slow page waits
        m.alloc(12, SLOW, 0);
        let out = m.run_for(&mut h, vec![read(12); 4], 10);
        assert!(migrations(&out).is_empty(), "{out:?}");
        assert_eq!(h.lists.list_of(PageId(12)), Some(SLOW_HOT));
    }

    #[test]
    fn cooling_halves_counts_lazily() {
        let mut m = Machine::new(&[100, 100]);
        for p in 0..4 {
            m.alloc(p, SLOW, 0);
        }
        m.alloc(50, FAST, 0);
        let mut h = hemem(&[]);
        // page 1: three reads; page 50 (fast): hot with four reads
        let mut s = vec![read(1); 3];
        s.extend(vec![read(50); 4]);
        m.run_for(&mut h, s, 1);
        assert_eq!(h.lists.list_of(PageId(50)), Some(FAST_HOT));
        // page 2 reaches 11 reads: the clock ticks once
        m.run_for(&mut h, vec![read(2); 11], 1);
        assert_eq!(h.clock, 1);
        // page 1's next read: 3 halves to 1, plus one is 2: still cold
        m.run_for(&mut h, vec![read(1)], 1);
        assert_eq!({ h.pages.get(PageId(1)).reads }, 2);
        assert_eq!(h.lists.list_of(PageId(1)), Some(SLOW_COLD));
        // page 2 itself cools on its next sample: 11 -> 5, + 1
        m.run_for(&mut h, vec![read(2)], 1);
        assert_eq!({ h.pages.get(PageId(2)).reads }, 6);
        // a second tick; page 50 is never sampled again, yet the partial cooling walk finds it
        // (4 >> 2 = 1 < 4) and moves it to the fast-cold list at the next quantum
        m.run_for(&mut h, vec![read(3); 11], 1);
        assert_eq!(h.clock, 2);
        assert_eq!(h.lists.list_of(PageId(50)), Some(FAST_HOT));
        m.run_for(&mut h, vec![], 10);
        assert_eq!(h.lists.list_of(PageId(50)), Some(FAST_COLD));
        assert_eq!({ h.pages.get(PageId(50)).reads }, 1);
    }

    #[test]
    fn failed_promotions_are_retried_and_freed_pages_forgotten() {
        let mut m = Machine::new(&[10, 100]);
        for p in 0..4 {
            m.alloc(p, SLOW, 0);
        }
        let mut h = hemem(&[]);
        m.refuse_next = 1;
        let out = m.run_for(&mut h, vec![read(2); 4], 10);
        assert_eq!(migrations(&out), vec![(2, FAST)]);
        // the refusal arrives: the page goes back on the slow-hot list and is promoted again
        let out = m.run_for(&mut h, vec![], 10);
        assert_eq!(migrations(&out), vec![(2, FAST)]);
        assert_eq!(h.migrations_failed, 1);
        m.free(2);
        m.run_for(&mut h, vec![read(2)], 1);
        assert_eq!(h.lists.list_of(PageId(2)), None);
        assert_eq!(h.samples_untracked, 1);
        assert_eq!((h.inflight_to_fast, h.inflight_to_slow), (0, 0));
    }

    #[test]
    fn the_cap_limits_promotions_per_quantum() {
        let mut m = Machine::new(&[100, 100]);
        for p in 0..4 {
            m.alloc(p, SLOW, 0);
        }
        // 1 MiB at 4 KiB pages: 256 pages; make it 2 pages with a tiny page size
        m.page_bytes = 512 << 10;
        let mut h = hemem(&[("max_migrate_mb_per_quantum", "1")]);
        let s: Vec<_> = (0..4).flat_map(|p| vec![read(p); 4]).collect();
        let out = m.run_for(&mut h, s, 10);
        assert_eq!(migrations(&out), vec![(0, FAST), (1, FAST)]);
        let out = m.run_for(&mut h, vec![], 10);
        assert_eq!(migrations(&out), vec![(2, FAST), (3, FAST)]);
        assert_eq!(h.cap_hits, 1);
    }

    #[test]
    fn offers_its_counts_to_a_layer_and_can_delegate_placement() {
        let mut m = Machine::new(&[100, 100]);
        for p in 0..6 {
            m.alloc(p, SLOW, 0);
        }
        let mut h = hemem(&[]);
        assert!(h.delegate_placement());
        // page 1: 6 reads (hot), page 2: 4 writes (hot), page 3: 2 reads (cold)
        let mut s = vec![read(1); 6];
        s.extend(vec![write(2); 4]);
        s.extend(vec![read(3); 2]);
        let out = m.run_for(&mut h, s, 10);
        // hot slow pages, but the layer decides: HeMem migrates nothing
        assert!(migrations(&out).is_empty());
        let tr = h.tracker().unwrap();
        assert!((tr.access_probability(PageId(1)) - 0.5).abs() < 1e-9);
        assert!((tr.access_probability(PageId(3)) - 2.0 / 12.0).abs() < 1e-9);
        assert_eq!(tr.access_probability(PageId(50)), 0.0);
        let mut hot = Vec::new();
        tr.hottest(SLOW, 10, &mut hot);
        let order: Vec<u64> = hot.iter().map(|(p, _)| p.0).collect();
        assert_eq!(order, vec![1, 2, 3]);
        tr.hottest(SLOW, 1, &mut hot);
        assert_eq!(hot.len(), 1);
        let mut cold = Vec::new();
        tr.coldest(SLOW, 3, &mut cold);
        assert_eq!(cold, vec![PageId(0), PageId(3), PageId(4)]);
        // the probabilities halve with the counts when the clock ticks
        m.run_for(&mut h, vec![read(5); 11], 1);
        let tr = h.tracker().unwrap();
        assert!((tr.access_probability(PageId(1)) - 3.0 / 11.5).abs() < 1e-9);
        assert!(crate::build("hemem+colloid").is_ok());
    }

    proptest! {
        /// With `u8` and `u16` counts HeMem takes the same actions and keeps the same lists
        /// and counts, whatever the samples, at any cooling threshold the narrow counts allow
        /// (small thresholds tick the clock often).
        #[test]
        fn narrow_counts_decide_as_wide_ones(
            threshold in prop_oneof![1u64..12, 240u64..=254],
            hot in 1u64..8,
            rounds in proptest::collection::vec(proptest::collection::vec((0u64..24, any::<bool>()), 0..300), 1..10),
        ) {
            let args = [
                ("cooling_threshold", threshold.to_string()),
                ("hot_read_threshold", hot.to_string()),
                ("quantum_ms", "2".to_string()),
            ];
            let args: Vec<(&str, &str)> = args.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let params = crate::testbed::params("hemem", PARAMS, &args);
            let mut a = HeMem::<u8>::new(&params);
            let mut b = HeMem::<u16>::new(&params);
            let mut ma = Machine::new(&[8, 40]);
            let mut mb = Machine::new(&[8, 40]);
            for p in 0..24 {
                ma.alloc(p, SLOW, 0);
                mb.alloc(p, SLOW, 0);
            }
            for r in rounds {
                let s: Vec<_> = r.into_iter().map(|(p, st)| if st { write(p) } else { read(p) }).collect();
                let oa = ma.run_for(&mut a, s.clone(), 2);
                let ob = mb.run_for(&mut b, s, 2);
                prop_assert_eq!(oa, ob);
                prop_assert_eq!(a.clock, b.clock);
                for p in 0..24 {
                    prop_assert_eq!(a.freq(PageId(p)), b.freq(PageId(p)));
                    prop_assert_eq!(a.pages.get(PageId(p)).flags(), b.pages.get(PageId(p)).flags());
                }
                for l in 0..N_LISTS {
                    let (x, y): (Vec<_>, Vec<_>) = (a.lists.iter(l).collect(), b.lists.iter(l).collect());
                    prop_assert_eq!(x, y);
                }
            }
        }

        /// Whatever the sample stream and the starting placement, carrying out HeMem's actions in
        /// order never needs more fast (or slow) pages than are free.
        #[test]
        fn never_overfills_a_tier(
            fast_cap in 1u64..24,
            placement in proptest::collection::vec(0u8..2, 1..48),
            rounds in proptest::collection::vec(proptest::collection::vec((0u64..48, any::<bool>()), 0..40), 1..12),
        ) {
            let n = placement.len() as u64;
            let mut m = Machine::new(&[fast_cap, n + 4]);
            for (p, &t) in placement.iter().enumerate() {
                let t = if t == 0 && m.used(FAST) < fast_cap { FAST } else { SLOW };
                m.alloc(p as u64, t, 0);
            }
            let mut h = hemem(&[("quantum_ms", "2")]);
            for r in rounds {
                let s = r.into_iter().map(|(p, st)| if st { write(p % n) } else { read(p % n) }).collect();
                m.run_for(&mut h, s, 2);
                prop_assert_eq!(m.nospace, 0);
                prop_assert!(m.used(FAST) <= fast_cap);
                // every resident page is on exactly one list
                prop_assert_eq!(h.lists.total(), n);
            }
        }
    }
}
