//! A trace as a workload. One streamed pass turns a trace into *windows*: consecutive stretches
//! of the trace with their LLC misses counted by page (an empirical page distribution), their
//! store share, their compute per miss and their memory-level parallelism. The machine then
//! runs each window as a phase whose length is its misses (work), at the speed the model gives:
//! the trace says which pages, the model says how long.
//!
//! - Cache: lackey traces hold every load and store, so a set-associative LRU LLC of the
//!   platform's size and associativity (`llc_mb`, `llc_ways`) filters them; only its misses
//!   reach memory. perf-mem and DAMON traces are memory accesses already and skip it.
//! - MLP: given (`mlp`), or estimated from the miss stream: a miss whose line continues the
//!   stride of the two misses before it (or is within 2 lines of the previous one) could be
//!   issued without waiting (a prefetcher or out-of-order core overlaps it); any other miss is
//!   taken as dependent. With a share f of overlappable misses, each dependent miss costs a
//!   full latency and each overlappable one 1/max_mlp of it, so the effective
//!   MLP = 1 / ((1 - f) + f / max_mlp) (max_mlp: the platform's line fill buffers). A pointer
//!   chase through shuffled nodes comes out near 1, a stream near max_mlp.
//! - Compute per miss: instruction-stamped traces give instructions per window; at `base_cpi`
//!   cycles per instruction (default 0.5, a 4-wide core at IPC 2 when it hits in cache) that is
//!   instructions x base_cpi / GHz / misses. Time-stamped traces take `compute_ns` (default 10).

use std::path::Path;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use tierkit_core::memory::prefetch;

use super::{Op, Reader, Result, Source, StampKind};

/// Records decoded ahead of the LLC lookups (see [`build`]).
const BATCH: usize = 32;

/// A set-associative LRU cache over line addresses. Lines are hashed to sets as LLC slice
/// hashing does (no power-of-two stride aliasing); a way holds a 32-bit fingerprint of its
/// line (a false hit needs two lines of one set to share it: about ways / 2^32 per access).
///
/// Each set is one 64-byte-aligned [`Line`] of 16 lanes, so a lookup reads one cache line of
/// the model and compares all its tags at once:
/// - up to 14 ways: tags in fixed ways (lanes 0..14, EMPTY = none) and the LRU order in lanes
///   14 and 15, a u64 of 4-bit way numbers, most recent first. A hit moves its way to the
///   front of the order; a miss writes its tag into the last way of the order (the LRU line,
///   or an EMPTY way while the set is not full: those stay at the back, as nothing hits them)
///   and moves it to the front. A few scalar operations, no branch.
/// - 15 or 16 ways: the tags themselves most recent first; the update is a branch-free shift.
/// - more: a set spans several lines, most recent first, and takes a plain loop.
///
/// The replay looks lines up without a branch on hit or miss while the trace misses the
/// model's most recent lines, and with an early return on a hit of a set's most recent line
/// (which changes nothing) while most lookups are such hits, as in real traces.
///
/// Each keeps, set by set, the same lines in the same LRU order as a list kept most recent
/// first, so every hit and miss is the same (tested against such a list).
pub struct Llc {
    sets: u64,
    ways: usize,
    /// Lines per set.
    span: usize,
    lines: Vec<Line>,
    /// Up to ORDERED_WAYS ways: lane j's way number + 1 for the ways (0 for the order lanes).
    way_ids: [u32; LANES],
    /// 4 x (ways - 1): the LRU way's place in the order.
    lru_shift: u32,
}

const EMPTY: u32 = u32::MAX;
const LANES: usize = 16;
/// Sets of up to this many ways keep their LRU order in the last two lanes.
const ORDERED_WAYS: usize = 14;
/// Ways 0..16 in order, most recent first (the places past the associativity hold way
/// numbers no tag is at, so they never move).
const FIRST_ORDER: u64 = 0xFEDC_BA98_7654_3210;
const NIBBLES: u64 = 0x1111_1111_1111_1111;

/// Tags of (part of) one set, one cache line; EMPTY = no line.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u32; LANES]);

impl Llc {
    pub fn new(mb: f64, ways: u32) -> Llc {
        let ways = ways.max(1) as usize;
        let lines = ((mb * 1024.0 * 1024.0) / 64.0).max(ways as f64) as u64;
        let sets = (lines / ways as u64).max(1);
        let span = ways.div_ceil(LANES);
        let mut first = Line([EMPTY; LANES]);
        if ways <= ORDERED_WAYS {
            first.0[14] = FIRST_ORDER as u32;
            first.0[15] = (FIRST_ORDER >> 32) as u32;
        }
        // the sets are read at random, one per access: on huge pages where Linux allows it
        let n = sets as usize * span;
        let mut lines = Vec::with_capacity(n);
        tierkit_core::memory::advise_huge(&lines);
        lines.resize(n, first);
        Llc {
            sets,
            ways,
            span,
            lines,
            way_ids: std::array::from_fn(|j| {
                if j < ways.min(ORDERED_WAYS) {
                    j as u32 + 1
                } else {
                    0
                }
            }),
            lru_shift: 4 * (ways as u32 - 1).min(15),
        }
    }

    /// A line's set and fingerprint.
    #[inline]
    fn locate(&self, line: u64) -> (usize, u32) {
        let h = line.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let set = ((h as u128 * self.sets as u128) >> 64) as usize;
        let fp = ((line.wrapping_mul(0xC2B2_AE3D_27D4_EB4F) >> 32) as u32).min(EMPTY - 1);
        (set, fp)
    }

    /// Start loading a set's tags into the CPU cache.
    #[inline]
    fn prefetch(&self, set: usize) {
        if let Some(l) = self.lines.get(set * self.span) {
            prefetch(l);
        }
    }

    /// Access a line; true on a miss (the line is then inserted, evicting the LRU way).
    #[inline]
    pub fn access(&mut self, line: u64) -> bool {
        let (set, fp) = self.locate(line);
        self.lookup::<false>(set, fp).0
    }

    /// [`Llc::access`] given the line's set and fingerprint from [`Llc::locate`]: whether it
    /// missed, and whether it hit the set's most recent line. SKIP_MRU: such a
    /// hit, which changes nothing, returns early (a branch: cheap when most lookups are such
    /// hits, as in real traces, and a misprediction each time otherwise) instead of storing
    /// the set unchanged.
    #[inline]
    fn lookup<const SKIP_MRU: bool>(&mut self, set: usize, fp: u32) -> (bool, bool) {
        if self.ways <= ORDERED_WAYS {
            return self.access_ordered::<SKIP_MRU>(set, fp);
        }
        if self.span != 1 {
            return (self.access_wide(set, fp), false);
        }
        let last = self.ways - 1;
        let t = &mut self.lines[set].0;
        if SKIP_MRU && t[0] == fp {
            return (false, true);
        }
        // Fingerprints are unique in a set and never EMPTY: at most one bit, below `ways`.
        let mut m = 0u32;
        for (j, &x) in t.iter().enumerate() {
            m |= u32::from(x == fp) << j;
        }
        // A hit at way i moves it to the front (ways 0..i shift back one); a miss shifts every
        // way back, dropping the last (the LRU line, or EMPTY while the set is not full), and
        // puts the line in front: both rotate ways[..=i] right by one and write fp to way 0.
        let i = if m != 0 {
            m.trailing_zeros() as usize
        } else {
            last
        };
        let old = *t;
        *t = std::array::from_fn(|j| {
            let prev = if j == 0 { fp } else { old[j - 1] };
            // all ones where way j keeps its tag (j > i), branch-free
            let keep = ((i as i32 - j as i32) >> 31) as u32;
            (prev & !keep) | (old[j] & keep)
        });
        (m == 0, m == 1)
    }

    /// A set of up to 14 ways with its LRU order in lanes 14 and 15 (see [`Llc`]).
    #[inline]
    fn access_ordered<const SKIP_MRU: bool>(&mut self, set: usize, fp: u32) -> (bool, bool) {
        let t = &mut self.lines[set].0;
        if SKIP_MRU && t[(t[14] & 15) as usize] == fp {
            // the most recent way (first in the order; always one of the set's ways)
            return (false, true);
        }
        // Fingerprints are unique in a set and never EMPTY: the hit way's number + 1, or 0.
        let mut w1 = 0u32;
        for (&x, &id) in t.iter().zip(&self.way_ids) {
            w1 |= u32::from(x == fp).wrapping_neg() & id;
        }
        let hit = w1 != 0;
        let order = u64::from(t[14]) | (u64::from(t[15]) << 32);
        // The hit way's place in the order: its lowest nibble equal to the way number (the
        // zero-nibble test has no false positive below the first true one). On a miss the
        // search is for way 15, which is only at place 15, so the LRU place's bit, set then,
        // is the lowest: the place is found without a branch either way.
        let x = order ^ (u64::from(w1.wrapping_sub(1) & 15) * NIBBLES);
        let z = x.wrapping_sub(NIBBLES) & !x & (NIBBLES << 3);
        let z = z | (u64::from(!hit) << (self.lru_shift + 3));
        let p4 = z.trailing_zeros() - 3;
        let mru = hit & (p4 == 0);
        let way = (order >> p4) & 15;
        // Move the place p4 / 4 to the front.
        let below = (1u64 << p4) - 1;
        let upto = (below << 4) | 15;
        let order = (order & !upto) | ((order & below) << 4) | way;
        t[way as usize] = fp;
        t[14] = order as u32;
        t[15] = (order >> 32) as u32;
        (!hit, mru)
    }

    /// A set of more than 16 ways: ways[k] is lane k % 16 of the set's line k / 16.
    #[cold]
    fn access_wide(&mut self, set: usize, fp: u32) -> bool {
        let s = &mut self.lines[set * self.span..(set + 1) * self.span];
        let pos = (0..self.ways).find(|&k| s[k / LANES].0[k % LANES] == fp);
        let i = pos.unwrap_or(self.ways - 1);
        for k in (1..=i).rev() {
            s[k / LANES].0[k % LANES] = s[(k - 1) / LANES].0[(k - 1) % LANES];
        }
        s[0].0[0] = fp;
        pos.is_none()
    }
}

/// The stride test of the MLP estimate (see the module doc).
#[derive(Default)]
struct StrideMlp {
    prev: u64,
    delta: i64,
    overlappable: u64,
    total: u64,
}

impl StrideMlp {
    #[inline]
    fn miss(&mut self, line: u64) {
        let d = line.wrapping_sub(self.prev) as i64;
        if self.total > 0 && (d == self.delta || d.abs() <= 2) {
            self.overlappable += 1;
        }
        self.delta = d;
        self.prev = line;
        self.total += 1;
    }

    fn take(&mut self, max_mlp: f64) -> f64 {
        let f = if self.total == 0 {
            0.0
        } else {
            self.overlappable as f64 / self.total as f64
        };
        self.overlappable = 0;
        self.total = 0;
        1.0 / ((1.0 - f) + f / max_mlp.max(1.0))
    }
}

/// Replay settings (experiment keys of a trace workload).
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayOpts {
    /// MLP for every window (None: estimated).
    pub mlp: Option<f64>,
    pub max_mlp: f64,
    /// LLC model for lackey traces (MiB, ways); None skips it.
    pub llc: Option<(f64, u32)>,
    pub base_cpi: f64,
    pub cpu_ghz: f64,
    /// Instructions per trace access for traces without stamps (a lackey trace without its
    /// `I` lines): compute per window = accesses x this x base_cpi / GHz.
    pub instructions_per_access: f64,
    /// Compute per miss for time-stamped traces, ns.
    pub compute_ns: Option<f64>,
    /// Trace accesses per window (None: the trace's accesses / 32).
    pub window_accesses: Option<u64>,
    /// A window closes only once it has this many misses (short windows are merged).
    pub min_window_misses: u64,
    /// Page size the pages are counted in (the experiment's page size).
    pub page_bytes: u64,
}

/// One window: misses by page (dense page indices), and how the thread runs through it.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    pub pages: Vec<u32>,
    pub counts: Vec<f64>,
    /// Touches by page, beside `counts` (misses), for a trace of every access (lackey): a miss
    /// that comes more than 32 misses (`TOUCH_GAP`) after the page's last one starts a touch, so a
    /// stream's run of misses through one page's lines is one visit, as the page's accessed bit and a pending hint
    /// fault see it (docs/model.md, "Access bits"). None when every miss is its own touch (and
    /// for sampled sources: perf-mem samples, DAMON regions).
    pub touches: Option<Vec<f64>>,
    pub misses: f64,
    pub mlp: f64,
    pub compute_ns: f64,
    pub read_frac: f64,
    /// Trace accesses in the window (hits included).
    pub accesses: u64,
}

/// A trace turned into windows over its distinct pages (in address order).
#[derive(Clone, Debug, PartialEq)]
pub struct Replay {
    pub path: String,
    pub source: Source,
    /// Distinct pages touched by misses, by page number (address / page_bytes).
    pub page_numbers: Vec<u64>,
    pub windows: Vec<Window>,
    pub accesses: u64,
    pub misses: u64,
    /// Whether the trace carries time (instructions or ns); if not, compute is modelled per
    /// access (`instructions_per_access`).
    pub stamped: bool,
}

/// The per-window MLP of a replay: its distribution over the windows and the process's
/// estimate, the miss-weighted harmonic mean (a window's misses each cost latency / MLP, so
/// this is the MLP that gives the trace's total memory stall).
#[derive(Clone, Debug, PartialEq)]
pub struct MlpStats {
    pub windows: usize,
    pub estimate: f64,
    pub min: f64,
    pub p10: f64,
    pub p50: f64,
    pub p90: f64,
    pub max: f64,
}

impl Replay {
    /// Merge consecutive windows until each lasts at least `min_ns` of simulated time at the
    /// fastest a thread could run them (every miss at `fast_ns` latency), each miss standing for
    /// `time_scale`: the machine runs an epoch in one window, so windows shorter than an epoch
    /// would hand their misses to the window before them. A merged window's page mix is its
    /// windows' misses together, its MLP their miss-weighted harmonic mean and its compute per
    /// miss their miss-weighted mean, so its time at any one latency L is exactly theirs:
    /// M (L / m + z) = sum_w M_w (L / m_w + z_w). A short last window joins the one before it.
    /// Returns the number of windows after merging.
    pub fn merge_short_windows(&mut self, min_ns: f64, fast_ns: f64, time_scale: f64) -> usize {
        if min_ns <= 0.0 || self.windows.len() < 2 {
            return self.windows.len();
        }
        let ns = |w: &Window| w.misses * time_scale * (fast_ns / w.mlp + w.compute_ns);
        let mut groups: Vec<Vec<Window>> = Vec::new();
        let mut cur: Vec<Window> = Vec::new();
        let mut cur_ns = 0.0;
        for w in std::mem::take(&mut self.windows) {
            cur_ns += ns(&w);
            cur.push(w);
            if cur_ns >= min_ns {
                groups.push(std::mem::take(&mut cur));
                cur_ns = 0.0;
            }
        }
        if !cur.is_empty() {
            match groups.last_mut() {
                Some(g) => g.extend(cur),
                None => groups.push(cur),
            }
        }
        let mut dense = vec![0.0f64; self.page_numbers.len()];
        let mut dense_t: Vec<f64> = Vec::new();
        self.windows = groups
            .into_iter()
            .map(|g| {
                if g.len() == 1 {
                    return g.into_iter().next().expect("one window");
                }
                let misses: f64 = g.iter().map(|w| w.misses).sum();
                let inv: f64 = g.iter().map(|w| w.misses / w.mlp).sum();
                let compute: f64 = g.iter().map(|w| w.misses * w.compute_ns).sum();
                let reads: f64 = g.iter().map(|w| w.misses * w.read_frac).sum();
                let mut pages: Vec<u32> = Vec::new();
                let bursty = g.iter().any(|w| w.touches.is_some());
                if bursty && dense_t.is_empty() {
                    dense_t = vec![0.0f64; self.page_numbers.len()];
                }
                for w in &g {
                    for (k, (&p, &c)) in w.pages.iter().zip(&w.counts).enumerate() {
                        if dense[p as usize] == 0.0 {
                            pages.push(p);
                        }
                        dense[p as usize] += c;
                        if bursty {
                            dense_t[p as usize] += w.touches.as_ref().map_or(c, |t| t[k]);
                        }
                    }
                }
                pages.sort_unstable();
                let counts = pages
                    .iter()
                    .map(|&p| std::mem::take(&mut dense[p as usize]))
                    .collect();
                let touches = bursty.then(|| {
                    pages
                        .iter()
                        .map(|&p| std::mem::take(&mut dense_t[p as usize]))
                        .collect()
                });
                Window {
                    pages,
                    counts,
                    touches,
                    misses,
                    mlp: (misses / inv).max(1.0),
                    compute_ns: compute / misses,
                    read_frac: reads / misses,
                    accesses: g.iter().map(|w| w.accesses).sum(),
                }
            })
            .collect();
        self.windows.len()
    }

    /// Derive compute time from the program's measured run time: the run time less the memory
    /// time the trace's misses take on an unloaded `fast_latency_ns` tier at each window's MLP,
    /// spread evenly over the trace accesses (at least 0). Sets every window's compute per miss;
    /// returns the compute per access, ns.
    pub fn compute_from_run_time(&mut self, run_time_s: f64, fast_latency_ns: f64) -> f64 {
        let memory_ns: f64 = self
            .windows
            .iter()
            .map(|w| w.misses * fast_latency_ns / w.mlp)
            .sum();
        let per_access = ((run_time_s * 1e9 - memory_ns) / self.accesses.max(1) as f64).max(0.0);
        for w in &mut self.windows {
            w.compute_ns = w.accesses as f64 * per_access / w.misses.max(1.0);
        }
        per_access
    }

    pub fn mlp_stats(&self) -> MlpStats {
        let mut v: Vec<f64> = self.windows.iter().map(|w| w.mlp).collect();
        v.sort_by(f64::total_cmp);
        let q = |f: f64| -> f64 {
            if v.is_empty() {
                return f64::NAN;
            }
            v[((v.len() - 1) as f64 * f).round() as usize]
        };
        let misses: f64 = self.windows.iter().map(|w| w.misses).sum();
        let inv: f64 = self.windows.iter().map(|w| w.misses / w.mlp).sum();
        MlpStats {
            windows: v.len(),
            estimate: if inv > 0.0 { misses / inv } else { f64::NAN },
            min: q(0.0),
            p10: q(0.1),
            p50: q(0.5),
            p90: q(0.9),
            max: q(1.0),
        }
    }
}

/// Dense ids for page numbers in first-touch order: a two-level table (a hash map of
/// 512-page chunks, then an array), so a lookup is one small-map probe and one array read.
struct PageIds {
    chunks: FxHashMap<u64, u32>,
    tables: Vec<[u32; 512]>,
    pages: Vec<u64>,
    last_key: u64,
    last_table: u32,
}

impl PageIds {
    fn new() -> Self {
        PageIds {
            chunks: FxHashMap::default(),
            tables: Vec::new(),
            pages: Vec::new(),
            last_key: u64::MAX,
            last_table: 0,
        }
    }

    /// The table of `page`'s chunk (created on first use); its slot for `page` is prefetched.
    #[inline]
    fn table(&mut self, page: u64) -> u32 {
        let key = page >> 9;
        if key != self.last_key {
            let n = self.tables.len() as u32;
            let t = *self.chunks.entry(key).or_insert(n);
            if t == n {
                self.tables.push([u32::MAX; 512]);
            }
            self.last_key = key;
            self.last_table = t;
        }
        let t = self.last_table;
        if let Some(tab) = self.tables.get(t as usize) {
            prefetch(&tab[(page & 511) as usize]);
        }
        t
    }

    /// `page`'s id, given its chunk's table from [`PageIds::table`].
    #[inline]
    fn id(&mut self, table: u32, page: u64) -> u32 {
        let slot = &mut self.tables[table as usize][(page & 511) as usize];
        if *slot == u32::MAX {
            *slot = self.pages.len() as u32;
            self.pages.push(page);
        }
        *slot
    }
}

/// A miss starts a new touch of its page when more than this many misses came since the
/// page's last one: a sweep reads a page's lines one after the other (every miss, or with up to
/// this many streams interleaved, every few misses), which sets its accessed bit once; a random
/// or dependent miss comes back to a page only after many others. 32 misses are a few
/// microseconds, far below any scanner's period.
const TOUCH_GAP: u32 = 32;

/// A page's misses and touches (see [`Window::touches`]) in the open window, and the miss
/// clock at its last miss.
#[derive(Clone, Copy)]
struct Slot {
    count: u32,
    touches: u32,
    last_at: u32,
}

/// The window being filled: misses by dense page id. `touched` lists the ids with a count
/// (appended without a branch: the slot is always written, the length grows only on a first
/// touch), so the loop keeps many independent cache misses in flight.
struct Open {
    /// By page id, in one slot so that a miss reads one cache line.
    counts: Vec<Slot>,
    count_touches: bool,
    /// Misses so far (wrapping): a slot's `last_at` is its value at the page's last miss.
    clock: u32,
    touched: Vec<u32>,
    ntouched: usize,
    misses: u64,
    stores: u64,
    accesses: u64,
    first_stamp: Option<u64>,
}

impl Open {
    /// `n` misses to page `id`, by a store or not.
    #[inline]
    fn miss(&mut self, id: u32, n: u64, store: bool) {
        // A record's count may be anything up to u64::MAX (the format saturates its sums).
        self.misses = self.misses.saturating_add(n);
        if store {
            self.stores = self.stores.saturating_add(n);
        }
        self.add(id, n);
    }

    #[inline]
    fn add(&mut self, id: u32, n: u64) {
        let i = id as usize;
        if i >= self.counts.len() {
            let len = (i + 1).next_power_of_two();
            // a page never missed before is as far back as a new touch needs
            let fresh = Slot {
                count: 0,
                touches: 0,
                last_at: self.clock.wrapping_sub(TOUCH_GAP + 1),
            };
            self.counts.resize(len, fresh);
            self.touched.resize(len + 1, 0);
        }
        let c = &mut self.counts[i];
        self.touched[self.ntouched] = id;
        self.ntouched += (c.count == 0) as usize;
        c.count = c.count.saturating_add(n.min(u32::MAX as u64) as u32);
        if self.count_touches {
            let gap = self.clock.wrapping_sub(c.last_at);
            c.touches = c.touches.saturating_add(u32::from(gap > TOUCH_GAP));
            c.last_at = self.clock;
            self.clock = self.clock.wrapping_add(1);
        }
    }

    /// Start loading `id`'s count into the CPU cache.
    #[inline]
    fn prefetch(&self, id: u32) {
        if let Some(c) = self.counts.get(id as usize) {
            prefetch(c);
        }
    }

    fn reset(&mut self) {
        self.misses = 0;
        self.stores = 0;
        self.accesses = 0;
        self.first_stamp = None;
    }
}

/// The LLC lookups of a batch in trace order (see [`build`]): each record's misses (0 or 1)
/// in `missed`, the misses' indices at the front of `miss_at`; returns their number and the
/// number of hits on the most recent line of a set.
#[inline]
fn lookups<const SKIP_MRU: bool>(
    c: &mut Llc,
    at: &[(usize, u32)],
    missed: &mut [u64; BATCH],
    miss_at: &mut [usize; BATCH],
) -> (usize, usize) {
    let (mut nmiss, mut mru) = (0, 0);
    for (k, &(set, fp)) in at.iter().enumerate() {
        let (m, r) = c.lookup::<SKIP_MRU>(set, fp);
        missed[k] = u64::from(m);
        miss_at[nmiss] = k;
        nmiss += usize::from(m);
        mru += usize::from(r);
    }
    (nmiss, mru)
}

/// Read `path` once and build its windows.
pub fn build(path: &Path, o: &ReplayOpts) -> Result<Replay> {
    let mut r = Reader::open(path)?;
    let h = r.header;
    let shift = h.unit_shift as u32;
    let page_shift = o.page_bytes.trailing_zeros();
    let line_shift = 6u32;
    let mut llc = match (h.source, o.llc) {
        (Source::Lackey, Some((mb, ways))) => Some(Llc::new(mb, ways)),
        _ => None,
    };
    let window_acc = o.window_accesses.unwrap_or((h.accesses / 32).max(1)).max(1);
    let stamped = h.has_stamps();
    let mut mlp = StrideMlp::default();
    // (page ids with counts, touches if counted, misses, mlp, compute_ns, read_frac, accesses)
    // per window
    type RawWindow = (Vec<(u32, f64)>, Option<Vec<f64>>, f64, f64, f64, f64, u64);
    let mut raw: Vec<RawWindow> = Vec::new();
    let mut ids = PageIds::new();
    let mut cur = Open {
        counts: Vec::new(),
        // a trace of every access in order: runs of misses through one page are one touch
        count_touches: h.source == Source::Lackey,
        clock: 0,
        touched: vec![0],
        ntouched: 0,
        misses: 0,
        stores: 0,
        accesses: 0,
        first_stamp: None,
    };
    let (mut total_acc, mut total_miss) = (0u64, 0u64);
    let mut last_stamp = 0;
    let mut close = |cur: &mut Open, end_stamp: u64, mlp: &mut StrideMlp| {
        let misses = cur.misses as f64;
        let m = o.mlp.unwrap_or_else(|| mlp.take(o.max_mlp));
        let span = end_stamp.saturating_sub(cur.first_stamp.unwrap_or(end_stamp)) as f64;
        let z = match (h.stamp, o.compute_ns) {
            (_, Some(z)) => z,
            // No stamps: instructions_per_access per trace access.
            _ if !stamped => {
                cur.accesses as f64 * o.instructions_per_access * o.base_cpi / o.cpu_ghz / misses
            }
            (StampKind::Instructions, None) => span * o.base_cpi / o.cpu_ghz / misses,
            (StampKind::Nanoseconds | StampKind::None, None) => 10.0,
        };
        let rf = (1.0 - cur.stores as f64 / misses).clamp(0.05, 1.0);
        let touched = &cur.touched[..cur.ntouched];
        let slot = |id: &u32| cur.counts[*id as usize];
        let touches: Option<Vec<f64>> = (cur.count_touches
            && touched.iter().map(slot).any(|c| c.touches < c.count))
        .then(|| touched.iter().map(|id| slot(id).touches as f64).collect());
        let counts: Vec<(u32, f64)> = touched
            .iter()
            .map(|&id| {
                let c = &mut cur.counts[id as usize];
                let n = c.count as f64;
                (c.count, c.touches) = (0, 0);
                (id, n)
            })
            .collect();
        cur.ntouched = 0;
        raw.push((counts, touches, misses, m, z, rf, cur.accesses));
        cur.reset();
    };
    // Records are decoded BATCH at a time and go through the batch in passes, each of which
    // prefetches what a later one reads, so that the batch's cache misses (LLC model sets,
    // page-id slots, window counts: all random for a random trace) are waited for together
    // instead of one after another: (1) each record's LLC set is prefetched; (2) the LLC
    // lookups, in trace order, list the misses; (3) each miss's page-id table is found and
    // its slot prefetched; (4) the misses' page ids, in trace order (ids are given in
    // first-miss order), and their counts prefetched; (5) the window bookkeeping, in trace
    // order. Every pass keeps the trace's order, so hits, misses, ids and windows are those of
    // one record at a time.
    // The batch, field by field (stores: op is not a load).
    let mut stamp = [0u64; BATCH];
    let mut unit = [0u64; BATCH];
    let mut count = [0u64; BATCH];
    let mut store = [false; BATCH];
    let mut at = [(0usize, 0u32); BATCH];
    // per record: misses (0 or 1 with the LLC model, else its count) and page id if any
    let mut missed = [0u64; BATCH];
    let mut id = [0u32; BATCH];
    // the misses of the batch: record index and its page-id table
    let mut miss_at = [0usize; BATCH];
    let mut miss_table = [0u32; BATCH];
    let mut skip_mru = false;
    loop {
        let mut n = 0;
        while n < BATCH {
            match r.next_record()? {
                Some(rec) => {
                    stamp[n] = rec.stamp;
                    unit[n] = rec.unit;
                    count[n] = rec.count;
                    store[n] = rec.op != Op::Load;
                    n += 1;
                }
                None => break,
            }
        }
        if let Some(c) = &llc {
            for (&u, a) in unit[..n].iter().zip(&mut at) {
                *a = c.locate((u << shift) >> line_shift);
                c.prefetch(a.0);
            }
        }
        // A run of accesses to one line misses at most once (the rest hit the filled line).
        // No branch on hit or miss (it would mispredict as often as the model misses): the
        // miss list is always written and grows by one on a miss.
        let mut nmiss = 0;
        match &mut llc {
            Some(c) => {
                let mru;
                (nmiss, mru) = if skip_mru {
                    lookups::<true>(c, &at[..n], &mut missed, &mut miss_at)
                } else {
                    lookups::<false>(c, &at[..n], &mut missed, &mut miss_at)
                };
                // Most lookups hit the most recent line of their set (a real trace's
                // locality): the next batch skips their stores, with a branch that is then
                // well predicted (and stays without it otherwise).
                skip_mru = 2 * mru > n;
            }
            None => {
                for k in 0..n {
                    missed[k] = count[k];
                    miss_at[nmiss] = k;
                    nmiss += usize::from(count[k] > 0);
                }
            }
        }
        for (&k, t) in miss_at[..nmiss].iter().zip(&mut miss_table) {
            *t = ids.table((unit[k] << shift) >> page_shift);
        }
        for (&k, &t) in miss_at[..nmiss].iter().zip(&miss_table) {
            id[k] = ids.id(t, (unit[k] << shift) >> page_shift);
            cur.prefetch(id[k]);
        }
        let batch_acc: u64 = count[..n].iter().fold(0u64, |a, &c| a.saturating_add(c));
        if n > 0 && cur.accesses.saturating_add(batch_acc) < window_acc {
            // No window closes in this batch: its accesses in one sum, then its misses.
            cur.first_stamp.get_or_insert(stamp[0]);
            cur.accesses += batch_acc;
            total_acc = total_acc.saturating_add(batch_acc);
            last_stamp = stamp[n - 1];
            for &k in &miss_at[..nmiss] {
                let missed = missed[k];
                total_miss = total_miss.saturating_add(missed);
                cur.miss(id[k], missed, store[k]);
                if o.mlp.is_none() {
                    mlp.miss((unit[k] << shift) >> line_shift);
                }
            }
        } else {
            for k in 0..n {
                cur.first_stamp.get_or_insert(stamp[k]);
                cur.accesses = cur.accesses.saturating_add(count[k]);
                total_acc = total_acc.saturating_add(count[k]);
                last_stamp = stamp[k];
                let missed = missed[k];
                if missed > 0 {
                    total_miss = total_miss.saturating_add(missed);
                    cur.miss(id[k], missed, store[k]);
                    if o.mlp.is_none() {
                        mlp.miss((unit[k] << shift) >> line_shift);
                    }
                }
                if cur.accesses >= window_acc && cur.misses >= o.min_window_misses {
                    close(&mut cur, stamp[k], &mut mlp);
                }
            }
        }
        if n < BATCH {
            break;
        }
    }
    if cur.misses > 0 {
        close(&mut cur, last_stamp.max(h.last_stamp), &mut mlp);
    }
    if raw.is_empty() {
        return Err(super::TraceError::Format {
            path: path.display().to_string(),
            offset: 0,
            msg: format!(
                "no access of its {total_acc} reaches memory (all hit the {} MiB LLC model); nothing to replay",
                o.llc.map_or(0.0, |l| l.0)
            ),
        });
    }
    // Dense ids in address order.
    let mut order: Vec<u32> = (0..ids.pages.len() as u32).collect();
    order.sort_unstable_by_key(|&i| ids.pages[i as usize]);
    let mut rank = vec![0u32; order.len()];
    for (r, &i) in order.iter().enumerate() {
        rank[i as usize] = r as u32;
    }
    let page_numbers: Vec<u64> = order.iter().map(|&i| ids.pages[i as usize]).collect();
    let windows = raw
        .into_iter()
        .map(
            |(counts, touches, misses, mlp, compute_ns, read_frac, accesses)| {
                // (page, misses, touches) in address order
                let mut rows: Vec<(u32, f64, f64)> = counts
                    .iter()
                    .enumerate()
                    .map(|(k, c)| {
                        (
                            rank[c.0 as usize],
                            c.1,
                            touches.as_ref().map_or(c.1, |t| t[k]),
                        )
                    })
                    .collect();
                rows.sort_unstable_by_key(|c| c.0);
                Window {
                    pages: rows.iter().map(|c| c.0).collect(),
                    counts: rows.iter().map(|c| c.1).collect(),
                    touches: touches
                        .is_some()
                        .then(|| rows.iter().map(|c| c.2).collect()),
                    misses,
                    mlp: mlp.max(1.0),
                    compute_ns: compute_ns.max(0.0),
                    read_frac,
                    accesses,
                }
            },
        )
        .collect();
    Ok(Replay {
        path: path.display().to_string(),
        source: h.source,
        page_numbers,
        windows,
        accesses: total_acc,
        misses: total_miss,
        stamped,
    })
}

/// How a process replays a trace (attached to the experiment; the machine reads it).
#[derive(Clone, Debug, PartialEq)]
pub struct ReplaySpec {
    pub process: usize,
    /// Thread group within the process (its phases are the windows).
    pub group: usize,
    pub replay: Arc<Replay>,
    /// Each traced miss stands for this many (stretches the replay in simulated time).
    pub time_scale: f64,
    /// Start again at the first window after the last (until the experiment ends or the
    /// thread's work is done).
    pub looped: bool,
}

impl ReplaySpec {
    pub fn window_work(&self, phase: usize) -> f64 {
        self.replay.windows[phase].misses * self.time_scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Header, Writer};
    use std::path::PathBuf;

    fn opts() -> ReplayOpts {
        ReplayOpts {
            mlp: None,
            max_mlp: 10.0,
            llc: Some((1.0, 16)),
            base_cpi: 0.5,
            cpu_ghz: 2.0,
            instructions_per_access: 3.0,
            compute_ns: None,
            window_accesses: None,
            min_window_misses: 1,
            page_bytes: 4096,
        }
    }

    fn write(
        name: &str,
        src: Source,
        units: impl Iterator<Item = (u64, u64)>,
    ) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tk-replay-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join(name);
        let mut w = Writer::create(&p, Header::new(6, StampKind::Instructions, src)).unwrap();
        let mut last = 0;
        for (s, u) in units {
            w.push(s, u, 1, Op::Load).unwrap();
            last = s;
        }
        w.finish(last).unwrap();
        p
    }

    /// Runs whose counts sum past u64 (the format allows any count; found by the `trace_replay`
    /// fuzz target) replay with saturated sums instead of an overflow panic, with and without
    /// the LLC model.
    #[test]
    fn huge_run_counts_saturate() {
        let d = std::env::temp_dir().join(format!("tk-replay-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        for (name, src) in [
            ("huge-l.tkt", Source::Lackey),
            ("huge-o.tkt", Source::Other),
        ] {
            let p = d.join(name);
            let mut w = Writer::create(&p, Header::new(6, StampKind::Instructions, src)).unwrap();
            w.push(1, 0x40, u64::MAX - 3, Op::Load).unwrap();
            w.push(2, 0x4000, u64::MAX / 2, Op::Store).unwrap();
            w.push(3, 0x80, 7, Op::Load).unwrap();
            w.finish(3).unwrap();
            let r = build(&p, &opts()).unwrap();
            assert!(r.misses >= 3, "{name}: {} misses", r.misses);
            assert!(r
                .windows
                .iter()
                .all(|w| w.misses.is_finite() && w.misses > 0.0));
        }
    }

    /// The LLC model as it was before its sets were laid out one cache line each and the
    /// replay loop was batched (commit 664310c): a plain per-set LRU, most recent way first.
    /// `Llc` must give the same hit or miss as this on every access.
    struct RefLlc {
        sets: u64,
        ways: usize,
        tags: Vec<u32>,
    }

    impl RefLlc {
        fn new(mb: f64, ways: u32) -> RefLlc {
            let ways = ways.max(1) as usize;
            let lines = ((mb * 1024.0 * 1024.0) / 64.0).max(ways as f64) as u64;
            let sets = (lines / ways as u64).max(1);
            RefLlc {
                sets,
                ways,
                tags: vec![EMPTY; (sets as usize) * ways],
            }
        }

        fn set_of(&self, line: u64) -> usize {
            let h = line.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            ((h as u128 * self.sets as u128) >> 64) as usize
        }

        fn access(&mut self, line: u64) -> bool {
            let set = self.set_of(line);
            let fp = ((line.wrapping_mul(0xC2B2_AE3D_27D4_EB4F) >> 32) as u32).min(EMPTY - 1);
            let s = &mut self.tags[set * self.ways..(set + 1) * self.ways];
            if s[0] == fp {
                return false;
            }
            match s.iter().position(|&t| t == fp) {
                Some(i) => {
                    s[..=i].rotate_right(1);
                    false
                }
                None => {
                    s.rotate_right(1);
                    s[0] = fp;
                    true
                }
            }
        }
    }

    fn splitmix(x: &mut u64) -> u64 {
        *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Feeds `lines` to the reference and to `Llc` (with and without the early return on a hit
    /// of the most recent line); the index of the first access where they differ.
    fn first_difference(mb: f64, ways: u32, lines: &[u64]) -> Option<usize> {
        let (mut a, mut b) = (Llc::new(mb, ways), RefLlc::new(mb, ways));
        let mut c = Llc::new(mb, ways);
        assert_eq!(a.sets, b.sets);
        lines.iter().position(|&l| {
            let (set, fp) = c.locate(l);
            let want = b.access(l);
            a.access(l) != want || c.lookup::<true>(set, fp).0 != want
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

        /// Small caches (1-64 sets of 1-40 ways), lines drawn from a pool of up to a few
        /// thousand (so lines are reused, sets overflow and evict) mixed with arbitrary lines.
        #[test]
        fn llc_gives_the_reference_lru_hits_and_misses(
            ways in 1u32..=40,
            sets in 1u64..=64,
            pool in 1u64..3000,
            stream in proptest::collection::vec((proptest::prelude::any::<u64>(), 0u8..8), 1..4000),
        ) {
            let mb = (sets * ways as u64 * 64) as f64 / (1024.0 * 1024.0);
            let lines: Vec<u64> = stream
                .iter()
                .map(|&(x, k)| if k == 0 { x } else { x % pool })
                .collect();
            proptest::prop_assert_eq!(first_difference(mb, ways, &lines), None);
        }

        /// A platform-sized cache (odd sizes, 65K+ sets) hammered in 1-3 of its sets: every
        /// line of the stream maps to those sets, so they see long runs of hits, evictions
        /// and re-references at every LRU depth.
        #[test]
        fn llc_gives_the_reference_lru_in_few_sets_of_a_large_cache(
            cfg in 0usize..5,
            nsets in 1usize..=3,
            seed in proptest::prelude::any::<u64>(),
            distinct in 1usize..60,
            picks in proptest::collection::vec(proptest::prelude::any::<u16>(), 1..3000),
        ) {
            let (mb, ways) = [(48.0, 12), (22.0, 11), (105.0, 15), (33.0, 16), (40.0, 20)][cfg];
            let r = RefLlc::new(mb, ways);
            let mut x = seed;
            let target: Vec<usize> = (0..nsets)
                .map(|_| (splitmix(&mut x) % r.sets) as usize)
                .collect();
            let mut pool = Vec::new();
            while pool.len() < distinct {
                let l = splitmix(&mut x) >> 20;
                if target.contains(&r.set_of(l)) {
                    pool.push(l);
                }
            }
            let lines: Vec<u64> = picks.iter().map(|&p| pool[p as usize % pool.len()]).collect();
            proptest::prop_assert_eq!(first_difference(mb, ways, &lines), None);
        }
    }

    /// FNV-1a over everything a replay gives the machine (floats by their bits).
    fn digest(r: &Replay) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut eat = |v: u64| {
            for b in v.to_le_bytes() {
                h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
        };
        eat(r.accesses);
        eat(r.misses);
        eat(r.page_numbers.len() as u64);
        r.page_numbers.iter().for_each(|&p| eat(p));
        eat(r.windows.len() as u64);
        for w in &r.windows {
            eat(w.pages.len() as u64);
            w.pages.iter().for_each(|&p| eat(p as u64));
            w.counts.iter().for_each(|c| eat(c.to_bits()));
            for v in [w.misses, w.mlp, w.compute_ns, w.read_frac] {
                eat(v.to_bits());
            }
        }
        h
    }

    /// A synthetic lackey trace mixing random lines over 8 MiB, a stream, a hot set, runs of
    /// one line (counts > 1) and all three ops.
    fn mixed_trace() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tk-replay-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("mixed.tkt");
        let mut w =
            Writer::create(&p, Header::new(6, StampKind::Instructions, Source::Lackey)).unwrap();
        let mut rng = tierkit_core::rng::Rng::new(11);
        let (mut stamp, mut seq) = (0u64, 1u64 << 30);
        for _ in 0..400_000 {
            stamp += 1 + rng.below(8);
            let unit = match rng.below(10) {
                0..=5 => rng.below(1 << 17),
                6 | 7 => {
                    seq += 1;
                    seq
                }
                _ => (1 << 25) + rng.below(64),
            };
            let op = [Op::Load, Op::Load, Op::Store, Op::Modify][rng.below(4) as usize];
            w.push(stamp, unit, 1 + rng.below(3), op).unwrap();
        }
        w.finish(stamp + 5).unwrap();
        p
    }

    /// The shipped traces (and a synthetic one) replay exactly as they did before the LLC
    /// model and the replay loop were optimized: the digests were taken at commit 664310c.
    #[test]
    fn replays_are_unchanged_since_the_reference_llc() {
        let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces");
        let files = [
            shipped.join("pchase.tkt"),
            shipped.join("stream.tkt"),
            mixed_trace(),
        ];
        let mut variants: Vec<ReplayOpts> = Vec::new();
        for llc in [
            None,
            Some((0.25, 16)),
            Some((0.25, 12)),
            Some((1.0, 11)),
            Some((2.0, 20)),
            Some((48.0, 12)),
        ] {
            variants.push(ReplayOpts { llc, ..opts() });
        }
        variants.push(ReplayOpts {
            llc: Some((0.5, 15)),
            window_accesses: Some(1000),
            min_window_misses: 50,
            ..opts()
        });
        variants.push(ReplayOpts {
            llc: Some((0.125, 12)),
            mlp: Some(2.5),
            page_bytes: 2 << 20,
            min_window_misses: 1000,
            ..opts()
        });
        let got: Vec<Vec<u64>> = files
            .iter()
            .map(|f| {
                variants
                    .iter()
                    .map(|o| digest(&build(f, o).unwrap()))
                    .collect()
            })
            .collect();
        let want: [[u64; 8]; 3] = GOLDEN;
        if got != want {
            panic!("replay digests changed:\n{got:#x?}");
        }
    }

    const GOLDEN: [[u64; 8]; 3] = [
        [
            0xf405ac03ca636806,
            0xee01bf80c2ec4ac3,
            0xab10cbfa414add93,
            0xe2494be7c68e020b,
            0xe2494be7c68e020b,
            0xe2494be7c68e020b,
            0xe082726b1a4df4f2,
            0x5f75e9ecf96f389a,
        ],
        [
            0xe4b14e2dbda1c03f,
            0xfe5c31cefb67e508,
            0xfe5c31cefb67e508,
            0xfe5c31cefb67e508,
            0x91955f978205fc90,
            0x718f7320e91e1665,
            0x971509d14a6eac8f,
            0xca14d9ee4785a3c0,
        ],
        [
            0x165561210031f772,
            0xab78f1ea14299c7,
            0x93a1f6711cdadc3b,
            0xd387c3145116ac22,
            0x4fe9f42ec4cfb189,
            0x12424c84e7f85ead,
            0x117fc10871f8a457,
            0x4e63ad8733da4bf1,
        ],
    ];

    #[test]
    fn llc_hits_reused_lines_and_evicts_lru() {
        let mut c = Llc::new(64.0 * 4.0 / (1024.0 * 1024.0), 4); // 4 lines, one set
        assert_eq!(c.sets, 1);
        assert!(c.access(1) && c.access(2) && c.access(3) && c.access(4));
        assert!(!c.access(1)); // hit; now 1 is most recent
        assert!(c.access(5)); // evicts 2 (LRU)
        assert!(!c.access(1) && c.access(2));
    }

    #[test]
    fn mlp_estimate_pointer_chase_near_one_stream_high() {
        // 8 MiB of lines: a stream over it and a chase through a shuffled permutation.
        let n = 1u64 << 17;
        let stream = write("s.tkt", Source::Lackey, (0..n).map(|i| (i * 4, i)));
        let mut perm: Vec<u64> = (0..n).collect();
        tierkit_core::rng::Rng::new(7).shuffle(&mut perm);
        let chase = write(
            "c.tkt",
            Source::Lackey,
            perm.into_iter().enumerate().map(|(i, l)| (i as u64 * 4, l)),
        );
        let s = build(&stream, &opts()).unwrap();
        let c = build(&chase, &opts()).unwrap();
        let avg =
            |r: &Replay| r.windows.iter().map(|w| w.mlp * w.misses).sum::<f64>() / r.misses as f64;
        assert!(avg(&s) > 9.0, "stream MLP {}", avg(&s));
        assert!(avg(&c) < 1.1, "chase MLP {}", avg(&c));
        // Every line misses once in the 1 MiB model (8 MiB touched once).
        assert_eq!(s.misses, n);
        assert_eq!(s.page_numbers.len(), (n / 64) as usize);
        // Compute per miss: 4 instructions per miss at CPI 0.5 and 2 GHz = 1 ns.
        assert!(
            (s.windows[1].compute_ns - 1.0).abs() < 0.01,
            "{}",
            s.windows[1].compute_ns
        );
        let given = build(
            &chase,
            &ReplayOpts {
                mlp: Some(3.0),
                ..opts()
            },
        )
        .unwrap();
        assert!(given.windows.iter().all(|w| w.mlp == 3.0));
    }

    #[test]
    fn traces_without_stamps_get_compute_per_access() {
        let d = std::env::temp_dir().join(format!("tk-replay-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        // The same accesses without stamps (format 2's kind `none`), and as a version 1 file of
        // an old import (instruction stamps, all 0).
        let mut files = Vec::new();
        for (name, version, kind) in [
            ("nostamp.tkt", 2, StampKind::None),
            ("nostamp-v1.tkt", 1, StampKind::Instructions),
        ] {
            let p = d.join(name);
            let mut h = Header::new(6, kind, Source::Lackey);
            h.version = version;
            let mut w = Writer::create(&p, h).unwrap();
            for i in 0..20_000u64 {
                w.push(0, (i * 7919) % (1 << 17), 1, Op::Load).unwrap();
            }
            w.finish(0).unwrap();
            files.push(p);
        }
        for p in &files {
            let r = build(p, &opts()).unwrap();
            assert!(!r.stamped);
            // Every access misses (a fresh line each time in 20K < 128K lines): 3 instructions
            // per access at CPI 0.5 and 2 GHz is 0.75 ns per miss.
            assert!(r.windows.iter().all(|w| (w.compute_ns - 0.75).abs() < 1e-9));
            let r2 = build(
                p,
                &ReplayOpts {
                    base_cpi: 2.0,
                    ..opts()
                },
            )
            .unwrap();
            assert!(r2.windows.iter().all(|w| (w.compute_ns - 3.0).abs() < 1e-9));
        }
        // A stamped trace is not affected by instructions_per_access.
        let p = write("st.tkt", Source::Lackey, (0..20_000u64).map(|i| (i * 4, i)));
        let a = build(&p, &opts()).unwrap();
        let b = build(
            &p,
            &ReplayOpts {
                instructions_per_access: 30.0,
                ..opts()
            },
        )
        .unwrap();
        assert!(a.stamped);
        assert_eq!(a, b);
    }

    #[test]
    fn merged_windows_keep_their_misses_pages_and_time() {
        let p = write(
            "mg.tkt",
            Source::Other,
            (0..8000u64).map(|i| (i, (i * 37) % 3000)),
        );
        let mut r = build(
            &p,
            &ReplayOpts {
                window_accesses: Some(1000),
                ..opts()
            },
        )
        .unwrap();
        for (k, w) in r.windows.iter_mut().enumerate() {
            w.mlp = [1.0, 8.0, 2.0, 4.0][k % 4];
            w.compute_ns = k as f64;
        }
        let before = r.clone();
        let time = |r: &Replay, l: f64| -> f64 {
            r.windows
                .iter()
                .map(|w| w.misses * (l / w.mlp + w.compute_ns))
                .sum()
        };
        // Each window takes 1000 x (100 / mlp + z) ns at 100 ns: merged to at least 400 us.
        let n = r.merge_short_windows(400e3, 100.0, 1.0);
        assert!(n < before.windows.len() && n > 0, "{n}");
        assert!(r
            .windows
            .iter()
            .all(|w| w.pages.windows(2).all(|x| x[0] < x[1])));
        let pages = |r: &Replay| {
            let mut v = vec![0.0; r.page_numbers.len()];
            for w in &r.windows {
                for (&p, &c) in w.pages.iter().zip(&w.counts) {
                    v[p as usize] += c;
                }
            }
            v
        };
        assert_eq!(pages(&r), pages(&before));
        for l in [70.0, 100.0, 300.0] {
            assert!((time(&r, l) - time(&before, l)).abs() < 1e-6 * time(&before, l));
        }
        // Nothing to merge when every window is long enough, or with min_ns = 0.
        let mut again = before.clone();
        assert_eq!(
            again.merge_short_windows(0.0, 100.0, 1.0),
            before.windows.len()
        );
        assert_eq!(again, before);
    }

    /// Touches per page of a full trace: three sweeps over 1024 pages (4 MiB, past the 1 MiB
    /// LLC model, so every line misses) touch each page three times in 192 misses, also when
    /// two streams are interleaved; random lines over as many pages touch a page at nearly
    /// every miss; a sampled source counts no touches; merged windows keep the sums.
    #[test]
    fn a_full_trace_counts_a_sweep_through_a_page_as_one_touch() {
        let lines = 1024 * 64u64;
        let totals = |r: &Replay| {
            let mut c = vec![0.0; r.page_numbers.len()];
            let mut t = vec![0.0; r.page_numbers.len()];
            for w in &r.windows {
                for (k, &p) in w.pages.iter().enumerate() {
                    c[p as usize] += w.counts[k];
                    t[p as usize] += w.touches.as_ref().map_or(w.counts[k], |x| x[k]);
                }
            }
            (c, t)
        };
        let p = write(
            "sw.tkt",
            Source::Lackey,
            (0..3 * lines).map(|i| (i, i % lines)),
        );
        let mut r = build(&p, &opts()).unwrap();
        assert!(r.windows.iter().all(|w| w.touches.is_some()));
        let (c, t) = totals(&r);
        assert_eq!(c.len(), 1024);
        assert!(c.iter().all(|&x| x == 192.0) && t.iter().all(|&x| x == 3.0));
        // two interleaved streams over disjoint halves
        let half = lines / 2;
        let two = (0..3 * lines).map(|i| (i, (i / 2) % half + (i % 2) * half));
        let (_, t2) = totals(&build(&write("sw2.tkt", Source::Lackey, two), &opts()).unwrap());
        assert!(t2.iter().all(|&x| x == 3.0), "{:?}", &t2[..8]);
        // merging keeps every page's misses and touches
        r.merge_short_windows(1e12, 100.0, 1.0);
        assert_eq!(r.windows.len(), 1);
        assert_eq!(totals(&r), (c, t));
        // random lines: a page comes back within 32 misses about 32 / 1024 of the time
        let mut x = 1u64;
        let rnd = (0..3 * lines).map(|i| (i, splitmix(&mut x) % lines));
        let (c, t) = totals(&build(&write("rl.tkt", Source::Lackey, rnd), &opts()).unwrap());
        let share = t.iter().sum::<f64>() / c.iter().sum::<f64>();
        assert!(share > 0.95 && share < 0.99, "{share}");
        // a sampled source: every record is its own touch
        let p = write(
            "sw-perf.tkt",
            Source::PerfMem,
            (0..3 * lines).map(|i| (i, i % lines)),
        );
        assert!(build(&p, &opts())
            .unwrap()
            .windows
            .iter()
            .all(|w| w.touches.is_none()));
    }

    #[test]
    fn mlp_stats_give_the_distribution_and_the_harmonic_estimate() {
        let p = write("ms.tkt", Source::Other, (0..4000u64).map(|i| (i, i)));
        let mut r = build(
            &p,
            &ReplayOpts {
                window_accesses: Some(1000),
                ..opts()
            },
        )
        .unwrap();
        for (w, m) in r.windows.iter_mut().zip([1.0, 1.0, 4.0, 10.0]) {
            w.mlp = m;
        }
        let s = r.mlp_stats();
        assert_eq!((s.windows, s.min, s.max), (4, 1.0, 10.0));
        // Equal misses per window: 4 / (1 + 1 + 1/4 + 1/10).
        assert!((s.estimate - 4.0 / 2.35).abs() < 1e-12, "{}", s.estimate);
    }

    #[test]
    fn windows_partition_the_misses() {
        let n = 10_000u64;
        let p = write(
            "w.tkt",
            Source::Other,
            (0..n).map(|i| (i, (i * 7919) % 5000)),
        );
        let r = build(
            &p,
            &ReplayOpts {
                window_accesses: Some(1000),
                ..opts()
            },
        )
        .unwrap();
        assert_eq!(r.windows.len(), 10);
        let total: f64 = r.windows.iter().flat_map(|w| &w.counts).sum();
        assert_eq!(total, n as f64); // no cache model for non-lackey traces
        assert!(r
            .windows
            .iter()
            .all(|w| w.pages.windows(2).all(|x| x[0] < x[1])));
    }

    #[test]
    fn short_windows_merge_until_they_have_enough_misses() {
        let p = write("h.tkt", Source::Lackey, (0..1000).map(|i| (i, i % 4)));
        let mut o = opts();
        o.min_window_misses = 100;
        // 4 lines miss once each then hit: 4 misses, one window.
        let r = build(&p, &o).unwrap();
        assert_eq!(r.misses, 4);
        assert_eq!(r.windows.len(), 1);
    }
}
