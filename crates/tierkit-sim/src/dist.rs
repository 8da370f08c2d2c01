//! Per-phase access distributions over pages: weighted regions (uniform, Zipf over a seeded
//! permutation, or a seeded random subset), O(1) sampling and O(regions) point probabilities.

use std::cell::Cell;

use tierkit_core::memory::{self, bytes_of};
use tierkit_core::rng::{AliasTable, Rng, Zipf};

use crate::error::Result;

#[derive(Clone, Debug)]
pub enum RegionKind {
    /// Every page of [first, first + len) equally likely.
    Range,
    /// A random subset of the range: `pages` lists them, `member` is a bitset over the range.
    Subset { pages: Vec<u32>, member: Vec<u64> },
    /// Zipf over ranks; `perm[rank]` is the page offset, `inv[offset]` its rank.
    Zipf {
        z: Zipf,
        perm: Vec<u32>,
        inv: Vec<u32>,
    },
    /// Measured frequencies (a trace window): `offs` sorted page offsets, `prob` their
    /// probabilities (summing to 1), drawn with an alias table.
    Empirical {
        offs: Vec<u32>,
        prob: Vec<f64>,
        alias: AliasTable,
        /// Touches per miss by page (beside `prob`), when the trace counted touches: a page's
        /// share of the window's touches is `prob x touch` (see [`Region::burst`]).
        touch: Option<Vec<f64>>,
    },
}

#[derive(Clone, Debug)]
pub struct Region {
    pub first: u32,
    pub len: u32,
    /// Normalized weight (the weights of a distribution sum to 1).
    pub w: f64,
    pub kind: RegionKind,
    /// Share of the region's misses that a hardware prefetcher already has in flight when the
    /// demand load arrives (1 for a sequential stream, 0 for random or dependent loads). Only
    /// the latency a sample reports depends on it: such a load waits for the rest of the prefetch.
    pub prefetched: f64,
    /// Misses per touch of a page: 1 for random or dependent loads (each miss is its own visit),
    /// the lines of a page for a stream, which reads a page's lines one after the other, once
    /// per sweep. What a page's accessed bit and a pending hint fault see are touches: a stream
    /// sets a page's accessed bit once per sweep, however many of its lines it reads.
    pub burst: f64,
    /// Swept in address order, a pass at a time (`in_order`): a marked page faults when the
    /// pass next reaches it ([`Dist::sweep_need`]).
    pub ordered: bool,
}

impl Region {
    pub fn range(first: u32, len: u32, w: f64) -> Self {
        Region {
            first,
            len,
            w,
            kind: RegionKind::Range,
            prefetched: 0.0,
            burst: 1.0,
            ordered: false,
        }
    }

    /// Bytes a subset of a range of `len` pages holds: the shuffled offsets (the whole range's,
    /// kept as the subset's capacity) and the membership bitset.
    pub const fn subset_bytes(len: u32) -> u64 {
        bytes_of::<u32>(len as u64) + bytes_of::<u64>((len as u64).div_ceil(64))
    }

    pub fn subset(first: u32, len: u32, count: u32, w: f64, seed: u64) -> Result<Self> {
        let mut rng = Rng::derive(seed, 0x5b5e7);
        let mut all: Vec<u32> = Vec::new();
        memory::reserve_exact(&mut all, len as u64, "a scattered access region")?;
        all.extend(0..len);
        // Partial Fisher-Yates: the first `count` entries are a uniform random subset.
        let count = count.clamp(1, len);
        for i in 0..count as usize {
            let j = i + rng.below((len as usize - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(count as usize);
        all.sort_unstable();
        let mut member =
            memory::filled((len as u64).div_ceil(64), 0u64, "a scattered access region")?;
        for &o in &all {
            member[o as usize / 64] |= 1 << (o % 64);
        }
        Ok(Region {
            first,
            len,
            w,
            kind: RegionKind::Subset { pages: all, member },
            prefetched: 0.0,
            burst: 1.0,
            ordered: false,
        })
    }

    /// Bytes a Zipf region of `len` pages holds: the rank permutation and its inverse.
    pub const fn zipf_bytes(len: u32) -> u64 {
        2 * bytes_of::<u32>(len as u64)
    }

    pub fn zipf(first: u32, len: u32, s: f64, w: f64, seed: u64) -> Result<Self> {
        let mut rng = Rng::derive(seed, 0x21ff);
        let mut perm: Vec<u32> = Vec::new();
        memory::reserve_exact(&mut perm, len as u64, "a Zipf access region")?;
        perm.extend(0..len);
        rng.shuffle(&mut perm);
        let mut inv = memory::filled(len as u64, 0u32, "a Zipf access region")?;
        for (rank, &off) in perm.iter().enumerate() {
            inv[off as usize] = rank as u32;
        }
        Ok(Region {
            first,
            len,
            w,
            kind: RegionKind::Zipf {
                z: Zipf::new(len as u64, s),
                perm,
                inv,
            },
            prefetched: 0.0,
            burst: 1.0,
            ordered: false,
        })
    }

    /// Bytes an empirical region over `n` pages holds: their offsets, probabilities and alias
    /// table (and touches per miss, when the trace counted touches).
    pub const fn empirical_bytes(n: u64, touches: bool) -> u64 {
        bytes_of::<u32>(n) + bytes_of::<f64>(n) * (1 + touches as u64) + AliasTable::bytes_for(n)
    }

    /// Bytes the region holds now.
    pub fn bytes(&self) -> u64 {
        let cap = |n: usize, each: u64| n as u64 * each;
        match &self.kind {
            RegionKind::Range => 0,
            RegionKind::Subset { pages, member } => {
                cap(pages.capacity(), 4) + cap(member.capacity(), 8)
            }
            RegionKind::Zipf { perm, inv, .. } => cap(perm.capacity(), 4) + cap(inv.capacity(), 4),
            RegionKind::Empirical {
                offs,
                prob,
                alias,
                touch,
            } => {
                cap(offs.capacity(), 4)
                    + cap(prob.capacity(), 8)
                    + touch.as_ref().map_or(0, |t| cap(t.capacity(), 8))
                    + alias.bytes()
            }
        }
    }

    /// A region over `counts[i]` accesses to page `first + offs[i]` (offsets sorted, distinct),
    /// of which `touches[i]` are touches (all of them when None).
    pub fn empirical(
        first: u32,
        offs: Vec<u32>,
        counts: &[f64],
        touches: Option<&[f64]>,
        w: f64,
    ) -> Self {
        let total: f64 = counts.iter().sum();
        let prob: Vec<f64> = counts.iter().map(|c| c / total).collect();
        let touch = touches.map(|t| {
            counts
                .iter()
                .zip(t)
                .map(|(&c, &t)| if c > 0.0 { (t / c).min(1.0) } else { 1.0 })
                .collect()
        });
        let len = offs.last().map_or(1, |&o| o + 1);
        Region {
            first,
            len,
            w,
            kind: RegionKind::Empirical {
                alias: AliasTable::new(&prob),
                offs,
                prob,
                touch,
            },
            prefetched: 0.0,
            burst: 1.0,
            ordered: false,
        }
    }

    /// Probability of `page` within this region (0 outside).
    #[inline]
    pub fn pmf(&self, page: u32) -> f64 {
        if page < self.first || page >= self.first + self.len {
            return 0.0;
        }
        let off = page - self.first;
        match &self.kind {
            RegionKind::Range => 1.0 / self.len as f64,
            RegionKind::Subset { pages, member } => {
                if member[off as usize / 64] >> (off % 64) & 1 == 1 {
                    1.0 / pages.len() as f64
                } else {
                    0.0
                }
            }
            RegionKind::Zipf { z, inv, .. } => z.pmf(inv[off as usize] as u64 + 1),
            RegionKind::Empirical { offs, prob, .. } => {
                offs.binary_search(&off).map_or(0.0, |i| prob[i])
            }
        }
    }

    /// The share of this region's misses that are touches of `page`: `pmf / burst`, or for a
    /// trace window that counted touches, the page's own measured share.
    #[inline]
    pub fn touch_pmf(&self, page: u32) -> f64 {
        match &self.kind {
            RegionKind::Empirical {
                offs,
                prob,
                touch: Some(t),
                ..
            } => {
                if page < self.first || page >= self.first + self.len {
                    return 0.0;
                }
                offs.binary_search(&(page - self.first))
                    .map_or(0.0, |i| prob[i] * t[i])
                    / self.burst
            }
            _ => self.pmf(page) / self.burst,
        }
    }

    /// Whether some page's misses are not each a touch (see [`Region::touch_pmf`]).
    pub fn bursty(&self) -> bool {
        self.burst != 1.0 || matches!(&self.kind, RegionKind::Empirical { touch: Some(_), .. })
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u32 {
        match &self.kind {
            RegionKind::Range => self.first + rng.below(self.len as u64) as u32,
            RegionKind::Subset { pages, .. } => {
                self.first + pages[rng.below(pages.len() as u64) as usize]
            }
            RegionKind::Zipf { z, perm, .. } => self.first + perm[(z.sample(rng) - 1) as usize],
            RegionKind::Empirical { offs, alias, .. } => self.first + offs[alias.sample(rng)],
        }
    }

    /// Every page with positive probability, with that probability (times the weight).
    pub fn for_each(&self, mut f: impl FnMut(u32, f64)) {
        match &self.kind {
            RegionKind::Range => {
                let p = self.w / self.len as f64;
                for o in 0..self.len {
                    f(self.first + o, p);
                }
            }
            RegionKind::Subset { pages, .. } => {
                let p = self.w / pages.len() as f64;
                for &o in pages {
                    f(self.first + o, p);
                }
            }
            RegionKind::Zipf { z, perm, .. } => {
                for (rank, &o) in perm.iter().enumerate() {
                    f(self.first + o, self.w * z.pmf(rank as u64 + 1));
                }
            }
            RegionKind::Empirical { offs, prob, .. } => {
                for (&o, &p) in offs.iter().zip(prob) {
                    f(self.first + o, self.w * p);
                }
            }
        }
    }
}

/// A thread phase's distribution over pages, with its probability mass per tier kept up to
/// date as pages are allocated, move and are freed.
#[derive(Clone, Debug)]
pub struct Dist {
    pub proc_: usize,
    pub regions: Vec<Region>,
    alias: AliasTable,
    /// Probability mass in each tier (unallocated pages hold none).
    pub mass: Vec<f64>,
    /// Threads currently in this phase.
    pub users: u32,
    /// Sum of the miss rates of the threads using it (misses per ns), for page rates.
    pub rate: f64,
    /// What `rate` would be if none of the threads had stalled this epoch.
    pub rate_full: f64,
    /// The phase has threads and all of them stalled for the whole last epoch.
    pub stalled: bool,
    /// Share of loads among memory operations (for write rates).
    pub read_frac: f64,
    pub lo: u32,
    pub hi: u32,
    /// Some region's misses come in bursts (a stream): `touch_pmf` differs from `pmf`.
    bursty: bool,
    /// Misses of this phase, cumulative since the simulation started, as breakpoints of a
    /// piecewise-linear function of time (ns): see [`Dist::record`] and [`Dist::cum_at`].
    hist_t: Vec<f64>,
    hist_c: Vec<f64>,
    /// The fault path's correction of the history for its threads' busy spans (`fix_at`):
    /// breakpoints of a cumulative count, linear in between, constant after the last.
    fix_t: Vec<f64>,
    fix_c: Vec<f64>,
    /// The earliest instant whose cumulative count (`cum_at`) a new epoch or correction changed
    /// since [`Dist::take_changed_from`] last read it (+inf: none): an epoch replaces the
    /// extension past the history's end, a correction the segment after its last breakpoint (or
    /// before it, when it rewrites that breakpoint), and thinning an older half moves its dropped
    /// points to their interpolation.
    changed_from: f64,
    /// A consumer has read the count up to this instant and keeps what it read (kswapd's spans,
    /// `kswapd_shares_cpu`): the history's breakpoints before it are not moved.
    pinned_to: f64,
    /// The segments of `hist_t` and `fix_t` the last reads fell in ([`between_hinted`]).
    hist_hint: Cell<u32>,
    fix_hint: Cell<u32>,
}

/// Two consecutive epochs whose miss rates differ by less than this share extend one segment of
/// a [`Dist`]'s cumulative history instead of adding a breakpoint.
const HIST_MERGE_REL: f64 = 0.005;
/// Breakpoints kept per distribution before the older half is thinned (every other point).
const HIST_MAX: usize = 1 << 20;
/// Breakpoints the fault path's correction (`Dist::fix_at`) keeps at most, the older half
/// thinned when it passes (a storm places two per fault of each thread): the recent storms stay
/// exact, and an accessed bit cleared further back is tested over an interval long enough for
/// the thinning not to matter.
const FIX_MAX: usize = 1 << 12;

/// A cumulative count's value at `t`, linear between its breakpoints `ts` (in order), `cs`: for
/// `t` strictly between the first and the last.
pub(crate) fn between(ts: &[f64], cs: &[f64], t: f64) -> f64 {
    interpolate(ts, cs, t, ts.partition_point(|&x| x <= t))
}

/// [`between`] starting from the segment the last read of these breakpoints fell in (`hint`,
/// updated): the reads between an epoch's end and the history's end are mostly of a few
/// instants (the scanner's marks and the accessed bits' clears, many pages each), so most fall
/// in the segment of the read before. The segment is checked, so the index is the bisection's
/// whatever the hint.
#[inline]
pub(crate) fn between_hinted(ts: &[f64], cs: &[f64], t: f64, hint: &Cell<u32>) -> f64 {
    let h = hint.get() as usize;
    let k = if h >= 1 && h < ts.len() && ts[h - 1] <= t && t < ts[h] {
        h
    } else {
        let k = ts.partition_point(|&x| x <= t);
        hint.set(k as u32);
        k
    };
    interpolate(ts, cs, t, k)
}

#[inline]
fn interpolate(ts: &[f64], cs: &[f64], t: f64, k: usize) -> f64 {
    let (t1, c1, t2, c2) = (ts[k - 1], cs[k - 1], ts[k], cs[k]);
    c1 + (c2 - c1) * (t - t1) / (t2 - t1)
}

/// Append breakpoint (t, c) to a count's breakpoints `ts`, `cs`: it moves the last one instead
/// when the segment it ends has the slope of the one before (`same(old, new)`), and past `max`
/// breakpoints the older half is thinned.
fn append(
    ts: &mut Vec<f64>,
    cs: &mut Vec<f64>,
    t: f64,
    c: f64,
    max: usize,
    same: impl Fn(f64, f64) -> bool,
) {
    let n = ts.len();
    if n >= 2 && t > ts[n - 1] {
        let (t1, c1, t2, c2) = (ts[n - 2], cs[n - 2], ts[n - 1], cs[n - 1]);
        let old = (c2 - c1) / (t2 - t1).max(1e-9);
        let new = (c - c2) / (t - t2);
        if same(old, new) {
            ts[n - 1] = t;
            cs[n - 1] = c;
            return;
        }
    }
    ts.push(t);
    cs.push(c);
    if ts.len() > max {
        thin_older_half(ts, cs);
    }
}

/// Thin a count's breakpoints past their bound: the older half keeps every other one (the kept
/// ones stay exact, the dropped ones are interpolated), the recent half all.
fn thin_older_half(ts: &mut Vec<f64>, cs: &mut Vec<f64>) {
    let half = ts.len().saturating_sub(1) / 2;
    let keep = |v: &mut Vec<f64>| {
        let mut k = 0;
        for i in 0..v.len() {
            if i >= half || i % 2 == 0 {
                v[k] = v[i];
                k += 1;
            }
        }
        v.truncate(k);
    };
    keep(ts);
    keep(cs);
}

impl Dist {
    pub fn new(proc_: usize, mut regions: Vec<Region>, ntiers: usize, read_frac: f64) -> Self {
        let total: f64 = regions.iter().map(|r| r.w).sum();
        for r in &mut regions {
            r.w /= total;
        }
        let alias = AliasTable::new(&regions.iter().map(|r| r.w).collect::<Vec<_>>());
        let lo = regions.iter().map(|r| r.first).min().unwrap_or(0);
        let hi = regions.iter().map(|r| r.first + r.len).max().unwrap_or(0);
        let bursty = regions.iter().any(Region::bursty);
        Dist {
            bursty,
            proc_,
            regions,
            alias,
            mass: vec![0.0; ntiers],
            users: 0,
            rate: 0.0,
            rate_full: 0.0,
            stalled: false,
            read_frac,
            lo,
            hi,
            hist_t: Vec::new(),
            hist_c: Vec::new(),
            fix_t: Vec::new(),
            hist_hint: Cell::new(0),
            fix_hint: Cell::new(0),
            fix_c: Vec::new(),
            changed_from: f64::INFINITY,
            pinned_to: f64::NEG_INFINITY,
        }
    }

    /// A consumer read the count up to `t` and keeps what it read: see `pinned_to`.
    pub fn pin_to(&mut self, t: f64) {
        self.pinned_to = self.pinned_to.max(t);
    }

    /// The earliest instant whose cumulative count changed since the last call (+inf: none).
    pub fn take_changed_from(&mut self) -> f64 {
        std::mem::replace(&mut self.changed_from, f64::INFINITY)
    }

    /// Record an epoch that ended at `t_end` (ns) with this phase's misses at `rate` (per ns)
    /// for `e` ns. The history is exact where the rate was steady (within 0.5%), linear in
    /// between: an accessed bit cleared at t0 and tested at t1 has seen pmf x (C(t1) - C(t0))
    /// accesses of the page in expectation, whatever the threads did in between (stalls,
    /// phases, idle epochs), not the instantaneous rate times the gap.
    pub fn record(&mut self, t_end: f64, e: f64, rate: f64) {
        let n = self.hist_t.len();
        // Past the last breakpoint the count was extended at the last rate (0 before the
        // first), and the epoch replaces that. An epoch of the same rate moves the last
        // breakpoint instead of adding one, which changes the count from the breakpoint before
        // it; none does while a consumer has read the count past that one (`pinned_to`), so
        // what it read stays.
        let before_last = if n >= 2 {
            self.hist_t[n - 2]
        } else {
            f64::NEG_INFINITY
        };
        let may_move = self.pinned_to <= before_last;
        let from = match self.hist_t.last() {
            None => t_end - e,
            Some(&last) if !may_move => last,
            Some(_) => before_last,
        };
        self.changed_from = self.changed_from.min(from);
        if n == 0 {
            self.hist_t.extend([t_end - e, t_end]);
            self.hist_c.extend([0.0, rate * e]);
            return;
        }
        let c = self.hist_c[n - 1] + rate * e;
        append(
            &mut self.hist_t,
            &mut self.hist_c,
            t_end,
            c,
            HIST_MAX,
            |old, new| may_move && (new - old).abs() <= HIST_MERGE_REL * old.max(new),
        );
        if self.hist_t.len() < n {
            // thinned: the older half's dropped points moved to their interpolation
            self.changed_from = self.changed_from.min(self.hist_t[0]);
        }
    }

    /// Cumulative misses of this phase at time `t` (ns): 0 before it first ran, linear between
    /// breakpoints, and past the last recorded epoch extended at the last epoch's rate; on the
    /// fault path with its threads' busy spans at their instants (`fix_at`).
    pub fn cum_at(&self, t: f64) -> f64 {
        if self.fix_t.is_empty() {
            self.hist_at(t)
        } else {
            self.hist_at(t) + self.fix_at(t)
        }
    }

    /// The recorded history alone (`cum_at` without the fault path's correction).
    fn hist_at(&self, t: f64) -> f64 {
        let n = self.hist_t.len();
        if n == 0 || t <= self.hist_t[0] {
            return 0.0;
        }
        let (tl, cl) = (self.hist_t[n - 1], self.hist_c[n - 1]);
        if t >= tl {
            return cl + self.rate * (t - tl);
        }
        between_hinted(&self.hist_t, &self.hist_c, t, &self.hist_hint)
    }

    /// The threads' fault-path busy spans placed at their instants (`Machine::place_fault_spans`):
    /// misses `cum_at` adds to the recorded history at `t`. A thread's time in its hint faults and their copies is
    /// paid as a stall in the epochs after the faults (its availability, so its operations, fall
    /// then), but it stops touching pages while in them: the correction adds back the misses the
    /// paying epochs lost and takes away those of the spans, so the faults' counts and the
    /// accessed-bit tests see the thread stop where it did. 0 before the first breakpoint,
    /// constant after the last.
    pub fn fix_at(&self, t: f64) -> f64 {
        let n = self.fix_t.len();
        if n == 0 || t <= self.fix_t[0] {
            return 0.0;
        }
        if t >= self.fix_t[n - 1] {
            return self.fix_c[n - 1];
        }
        between_hinted(&self.fix_t, &self.fix_c, t, &self.fix_hint)
    }

    /// The correction's value at its last breakpoint (0 when it has none).
    pub fn fix_last(&self) -> (f64, f64) {
        match (self.fix_t.last(), self.fix_c.last()) {
            (Some(&t), Some(&c)) => (t, c),
            _ => (f64::NEG_INFINITY, 0.0),
        }
    }

    /// Append a breakpoint of the correction (times in order), dropping one that extends a
    /// straight segment; past `FIX_MAX` breakpoints the older half keeps every other one.
    pub fn fix_push(&mut self, t: f64, c: f64) {
        let n = self.fix_t.len();
        if n > 0 && t <= self.fix_t[n - 1] {
            // the last breakpoint moves: so does the segment that leads to it
            let from = if n >= 2 {
                self.fix_t[n - 2]
            } else {
                f64::NEG_INFINITY
            };
            self.changed_from = self.changed_from.min(from);
            self.fix_c[n - 1] = c;
            return;
        }
        // the count was constant past the last breakpoint (0 before the first)
        self.changed_from = self
            .changed_from
            .min(self.fix_t.last().copied().unwrap_or(t));
        append(
            &mut self.fix_t,
            &mut self.fix_c,
            t,
            c,
            FIX_MAX,
            |old, new| (new - old).abs() <= 1e-12 * old.abs().max(new.abs()).max(1e-300),
        );
        if self.fix_t.len() < n {
            // thinned: the older half's dropped points moved to their interpolation
            self.changed_from = self.changed_from.min(self.fix_t[0]);
        }
    }

    /// Breakpoints held by the cumulative history (for memory reports and tests).
    pub fn hist_len(&self) -> usize {
        self.hist_t.len()
    }

    /// Bytes the cumulative history of a run of `epochs` epochs holds at most: a breakpoint
    /// (time and count) per epoch, at most `HIST_MAX` + 1, in vectors that grow by doubling.
    pub fn hist_bytes_for(epochs: u64) -> u64 {
        let n = epochs.saturating_add(2).min(HIST_MAX as u64 + 1);
        2 * bytes_of::<f64>(n.next_power_of_two().max(4))
    }

    /// Bytes the fault path's correction holds at most: `FIX_MAX` + 1 breakpoints (time and
    /// count) in vectors that grow by doubling.
    pub fn fix_bytes_max() -> u64 {
        2 * bytes_of::<f64>((FIX_MAX as u64 + 1).next_power_of_two())
    }

    /// Bytes the distribution holds now: its regions and its history.
    pub fn bytes(&self) -> u64 {
        self.regions.iter().map(Region::bytes).sum::<u64>()
            + bytes_of::<f64>((self.hist_t.capacity() + self.hist_c.capacity()) as u64)
            + bytes_of::<f64>((self.fix_t.capacity() + self.fix_c.capacity()) as u64)
    }

    #[inline]
    pub fn pmf(&self, page: u32) -> f64 {
        if page < self.lo || page >= self.hi {
            return 0.0;
        }
        self.regions.iter().map(|r| r.w * r.pmf(page)).sum()
    }

    /// The share of this phase's misses that are touches of `page` (see [`Region::burst`]): its
    /// misses' share (`pmf`) with each streamed region's divided by the misses a sweep makes in
    /// one page. Accessed bits and hint faults follow touches.
    #[inline]
    pub fn touch_pmf(&self, page: u32) -> f64 {
        if !self.bursty {
            return self.pmf(page);
        }
        if page < self.lo || page >= self.hi {
            return 0.0;
        }
        self.regions.iter().map(|r| r.w * r.touch_pmf(page)).sum()
    }

    /// For a page of a swept region (`ordered`), the touches it has to see after time `at`
    /// before the pass reaches it: the share of a pass from the pass's position at `at` (each
    /// page of the region is touched once a pass, so its touches so far, cum x touch_pmf, count
    /// passes) forward to the page, in (0, 1]. None for a page of no swept region.
    pub fn sweep_need(&self, page: u32, at: f64) -> Option<f64> {
        let k = self.sweep_place(page)?;
        let passes = self.cum_at(at) * self.touch_pmf(page);
        let pos = passes - passes.floor();
        let need = k - pos;
        Some(if need <= 0.0 { need + 1.0 } else { need })
    }

    /// For a page of a swept region (`ordered`), whether a pass reached it while this phase's
    /// cumulative misses went from `c0` to `c1` (the passes so far, cum x touch_pmf, crossed
    /// the page's place in the pass, as in [`Dist::sweep_need`]). None for a page of no swept
    /// region.
    pub fn sweep_crossed(&self, page: u32, c0: f64, c1: f64) -> Option<bool> {
        let k = self.sweep_place(page)?;
        let pmf = self.touch_pmf(page);
        Some((c1 * pmf - k).floor() > (c0 * pmf - k).floor())
    }

    /// A page's place in the pass of the swept region (`ordered`) that holds it, in [0, 1): its
    /// offset in the region over the region's length. None for a page of no swept region.
    fn sweep_place(&self, page: u32) -> Option<f64> {
        let r = self
            .regions
            .iter()
            .find(|r| r.ordered && page >= r.first && page - r.first < r.len)?;
        Some(f64::from(page - r.first) / f64::from(r.len))
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u32 {
        self.sample_region(rng).0
    }

    /// A page and the index of the region it was drawn from.
    #[inline]
    pub fn sample_region(&self, rng: &mut Rng) -> (u32, usize) {
        let r = if self.regions.len() == 1 {
            0
        } else {
            self.alias.sample(rng)
        };
        (self.regions[r].sample(rng), r)
    }

    /// [`Dist::recompute_mass`] from a page table whose entries hold a page's tier in the bits
    /// of `mask` (`none`: unallocated) beside other bits, with the same sums in the same order,
    /// bit for bit; a range region reads its slice of the table in one pass and keeps the
    /// running sums of tiers 0 and 1 in registers.
    pub fn recompute_mass_from(&mut self, page_tier: &[u8], mask: u8, none: u8) {
        let mut mass = vec![0.0; self.mass.len()];
        for r in &self.regions {
            match r.kind {
                RegionKind::Range if mass.len() >= 2 => {
                    let p = r.w / r.len as f64;
                    let (mut m0, mut m1) = (mass[0], mass[1]);
                    let tiers = &page_tier[r.first as usize..(r.first + r.len) as usize];
                    for &e in tiers {
                        match e & mask {
                            0 => m0 += p,
                            1 => m1 += p,
                            t if t == none => {}
                            t => mass[t as usize] += p,
                        }
                    }
                    (mass[0], mass[1]) = (m0, m1);
                }
                _ => r.for_each(|pg, pr| {
                    let t = page_tier[pg as usize] & mask;
                    if t != none {
                        mass[t as usize] += pr;
                    }
                }),
            }
        }
        self.mass = mass;
    }

    /// Recompute the per-tier mass from the page table (`tier_of` gives None if unallocated),
    /// page by page through `tier_of`: the plain form [`Dist::recompute_mass_from`] is checked
    /// against (tests only).
    #[cfg(test)]
    pub fn recompute_mass(&mut self, tier_of: impl Fn(u32) -> Option<u8>) {
        let mut mass = vec![0.0; self.mass.len()];
        for r in &self.regions {
            r.for_each(|p, pr| {
                if let Some(t) = tier_of(p) {
                    mass[t as usize] += pr;
                }
            });
        }
        self.mass = mass;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A read from the last read's segment gives what the bisection gives, whatever the
        /// hint held (ties and repeated breakpoints included), and leaves the hint at a segment
        /// that holds the instant.
        #[test]
        fn a_hinted_read_is_the_bisection(
            steps in proptest::collection::vec(0u8..4, 2..300),
            reads in proptest::collection::vec(0.0f64..1.0, 1..40),
            start in 0u32..400,
        ) {
            let mut ts = Vec::new();
            let mut x = 0.0;
            for s in steps {
                x += s as f64;
                ts.push(x);
            }
            let cs: Vec<f64> = ts.iter().map(|t| t * 3.0 + 1.0).collect();
            let (first, last) = (ts[0], *ts.last().unwrap());
            proptest::prop_assume!(last > first);
            let hint = Cell::new(start);
            // every breakpoint strictly between the first and the last, and the reads
            let at = reads.iter().map(|a| first + (last - first) * a);
            for t in ts.iter().copied().chain(at).filter(|&t| t > first && t < last) {
                let want = between(&ts, &cs, t);
                proptest::prop_assert_eq!(between_hinted(&ts, &cs, t, &hint).to_bits(), want.to_bits());
                let h = hint.get() as usize;
                proptest::prop_assert!(ts[h - 1] <= t && t < ts[h]);
            }
        }
    }

    fn one_region() -> Dist {
        Dist::new(0, vec![Region::range(0, 100, 1.0)], 2, 1.0)
    }

    #[test]
    fn cumulative_misses_integrate_the_rate_through_stalls_and_idle_epochs() {
        let mut d = one_region();
        assert_eq!(d.cum_at(5.0), 0.0, "nothing before the first epoch");
        // Four epochs of 1000 ns: rate 2, 2 (one segment), 0 (stalled), 1.
        for (k, r) in [2.0, 2.0, 0.0, 1.0].into_iter().enumerate() {
            d.rate = r;
            d.record(1000.0 * (k + 1) as f64, 1000.0, r);
        }
        assert_eq!(d.hist_len(), 4, "the two steady epochs share a segment");
        assert_eq!(d.cum_at(0.0), 0.0);
        assert!((d.cum_at(1500.0) - 3000.0).abs() < 1e-9);
        assert!(
            (d.cum_at(2500.0) - 4000.0).abs() < 1e-9,
            "flat while stalled"
        );
        assert!((d.cum_at(3500.0) - 4500.0).abs() < 1e-9);
        // Past the last epoch: extended at the current rate.
        assert!((d.cum_at(5000.0) - 6000.0).abs() < 1e-9);
    }

    #[test]
    fn cumulative_history_stays_bounded_and_close_when_thinned() {
        let mut d = one_region();
        let n = HIST_MAX + 10;
        for k in 0..n {
            // Alternating rates: no two epochs merge.
            let r = if k % 2 == 0 { 1.0 } else { 3.0 };
            d.record((k + 1) as f64, 1.0, r);
        }
        assert!(d.hist_len() <= HIST_MAX);
        // Exact at epoch ends that were kept, within one epoch's misses elsewhere.
        let t = (n / 4) as f64 + 0.5;
        let exact = 2.0 * (t - 0.5) + 0.5;
        assert!((d.cum_at(t) - exact).abs() <= 3.0);
    }

    /// A thread's fault span [1200, 1700] in an epoch [1000, 2000] whose stall (paid at the
    /// next epoch, [2000, 3000], at a thread rate of 0.5) the history already took out there: the
    /// correction moves those misses to the span, so the count stops rising in the span and runs
    /// on in the paying epoch, with the same total.
    #[test]
    fn the_fault_path_correction_moves_a_stall_to_its_span() {
        let mut d = one_region();
        // the thread alone, rate 0.5: epoch 1 full, epoch 2 with 500 ns paid (rate 0.25)
        d.rate = 0.5;
        d.record(1000.0, 1000.0, 0.5);
        d.record(2000.0, 1000.0, 0.5);
        d.rate = 0.25;
        d.record(3000.0, 1000.0, 0.25);
        assert_eq!(d.fix_at(2500.0), 0.0, "no correction yet");
        // epoch [1000, 2000]: the span takes 0.5 per ns over [1200, 1700]
        d.fix_push(1000.0, 0.0);
        d.fix_push(1200.0, 0.0);
        d.fix_push(1700.0, -250.0);
        d.fix_push(2000.0, -250.0);
        // epoch [2000, 3000]: the 500 ns paid come back, 0.25 per ns
        d.fix_push(3000.0, 0.0);
        let c = |t: f64| d.cum_at(t);
        assert!((c(1200.0) - 600.0).abs() < 1e-9);
        assert!(
            (c(1700.0) - c(1200.0)).abs() < 1e-9,
            "no misses in the span"
        );
        assert!((c(2000.0) - 750.0).abs() < 1e-9);
        assert!(
            (c(2500.0) - 1000.0).abs() < 1e-9,
            "the full rate while paying"
        );
        assert!((c(3000.0) - 1250.0).abs() < 1e-9, "the same total");
        assert_eq!(d.fix_at(5000.0), 0.0, "constant after the last breakpoint");
        // the flat stretch [1700, 2000] merged with nothing it is not collinear with
        assert_eq!(d.fix_t, vec![1000.0, 1200.0, 1700.0, 2000.0, 3000.0]);
    }

    #[test]
    fn the_fault_path_correction_stays_bounded_and_exact_where_kept() {
        let mut d = one_region();
        let n = FIX_MAX + 10;
        for k in 0..n {
            // a zigzag: no two segments merge
            d.fix_push(k as f64, if k % 2 == 0 { 0.0 } else { -1.0 });
        }
        assert!(d.fix_t.len() <= FIX_MAX);
        // the recent half kept whole
        for k in n - FIX_MAX / 4..n {
            let want = if k % 2 == 0 { 0.0 } else { -1.0 };
            assert_eq!(d.fix_at(k as f64), want, "at {k}");
        }
        // older points within the zigzag's range
        let v = d.fix_at((n / 8) as f64 + 0.5);
        assert!((-1.0..=0.0).contains(&v));
        assert!(d.bytes() <= Dist::fix_bytes_max() + 4096);
    }

    #[test]
    fn pmf_sums_to_one_and_matches_samples() {
        let regions = vec![
            Region::range(0, 100, 0.9),
            Region::range(0, 1000, 0.1),
            Region::zipf(1000, 50, 0.99, 0.5, 3).unwrap(),
            Region::subset(2000, 100, 10, 0.5, 4).unwrap(),
        ];
        let d = Dist::new(0, regions, 2, 1.0);
        let total: f64 = (0..3000).map(|p| d.pmf(p)).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        let mut rng = Rng::new(9);
        let mut hits = vec![0u32; 3000];
        let n = 400_000;
        for _ in 0..n {
            hits[d.sample(&mut rng) as usize] += 1;
        }
        for p in [0u32, 50, 500, 1000, 1001] {
            let expect = d.pmf(p) * n as f64;
            assert!(
                (hits[p as usize] as f64 - expect).abs() < 5.0 * expect.sqrt() + 5.0,
                "page {p}: {} vs {expect}",
                hits[p as usize]
            );
        }
        let in_subset = (2000..2100).filter(|&p| d.pmf(p) > 0.0).count();
        assert_eq!(in_subset, 10);
    }

    #[test]
    fn empirical_region_matches_its_counts() {
        let r = Region::empirical(100, vec![0, 5, 9], &[1.0, 3.0, 6.0], None, 1.0);
        let d = Dist::new(0, vec![r], 2, 1.0);
        assert!((d.pmf(105) - 0.3).abs() < 1e-12 && d.pmf(104) == 0.0 && d.pmf(99) == 0.0);
        let mut rng = Rng::new(3);
        let n = 100_000;
        let hits = (0..n).filter(|_| d.sample(&mut rng) == 109).count() as f64;
        assert!((hits / n as f64 - 0.6).abs() < 0.01, "{hits}");
    }

    #[test]
    fn recompute_mass_counts_allocated_pages() {
        let mut d = Dist::new(0, vec![Region::range(0, 10, 1.0)], 2, 1.0);
        d.recompute_mass(|p| {
            if p < 3 {
                Some(0)
            } else if p < 8 {
                Some(1)
            } else {
                None
            }
        });
        assert!((d.mass[0] - 0.3).abs() < 1e-12 && (d.mass[1] - 0.5).abs() < 1e-12);
    }

    /// The page-table pass gives the generic pass's sums bit for bit: ranges, subsets and Zipf
    /// regions, three tiers, unallocated pages.
    #[test]
    fn recompute_mass_from_a_table_is_the_generic_recompute() {
        let regions = vec![
            Region::range(0, 1000, 0.3),
            Region::zipf(1000, 700, 0.9, 0.3, 5).unwrap(),
            Region::range(1700, 333, 0.2),
            Region::subset(2033, 500, 37, 0.2, 4).unwrap(),
        ];
        let mut a = Dist::new(0, regions, 3, 1.0);
        let mut b = a.clone();
        let mut rng = Rng::new(3);
        // entries as the machine's page table holds them: the tier in the low nibble (0xF:
        // unallocated), flags above it
        let table: Vec<u8> = (0..2533)
            .map(|_| [0, 1, 2, 0xF][rng.below(4) as usize] | (rng.below(16) as u8) << 4)
            .collect();
        a.recompute_mass(|p| {
            let t = table[p as usize] & 0xF;
            (t != 0xF).then_some(t)
        });
        b.recompute_mass_from(&table, 0xF, 0xF);
        let bits = |d: &Dist| d.mass.iter().map(|m| m.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b));
        assert!(a.mass.iter().all(|&m| m > 0.0));
    }
}
