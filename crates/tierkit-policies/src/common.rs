//! Small pieces several policies share: dense per-page tables and a residency view kept from
//! telemetry events (allocations, frees, migration results).

use tierkit_core::memory::{self, bytes_of};
use tierkit_core::params::{ParamDef, Params};
use tierkit_core::telemetry::MigrationOutcome;
use tierkit_core::{PageId, Telemetry, TierId};

/// A per-page table indexed by the dense page id, growing on demand.
#[derive(Clone, Debug)]
pub struct Dense<T: Clone> {
    v: Vec<T>,
    default: T,
}

impl<T: Clone> Dense<T> {
    pub fn new(default: T) -> Self {
        Dense {
            v: Vec::new(),
            default,
        }
    }
    #[inline]
    pub fn get(&self, p: PageId) -> &T {
        self.v.get(p.0 as usize).unwrap_or(&self.default)
    }
    #[inline]
    pub fn get_mut(&mut self, p: PageId) -> &mut T {
        let i = p.0 as usize;
        if i >= self.v.len() {
            self.v.resize(i + 1, self.default.clone());
        }
        &mut self.v[i]
    }
    pub fn set(&mut self, p: PageId, x: T) {
        *self.get_mut(p) = x;
    }
    /// Set pages `first..first + count` to `x`: the same as setting them one by one, in one
    /// pass when the table does not reach them yet.
    pub fn set_run(&mut self, first: PageId, count: u64, x: T) {
        let (a, end) = (first.0 as usize, (first.0 + count) as usize);
        if a >= self.v.len() {
            self.v.resize(a, self.default.clone());
            self.v.resize(end, x);
        } else {
            for p in a..end {
                self.set(PageId(p as u64), x.clone());
            }
        }
    }
    /// Apply `f` to every entry the table holds (pages beyond it have the default).
    pub fn for_each_mut(&mut self, f: impl FnMut(&mut T)) {
        self.v.iter_mut().for_each(f);
    }
    /// Ask for `p`'s entry to be brought into cache (a hint; nothing if it has none).
    #[inline]
    pub fn prefetch(&self, p: PageId) {
        if let Some(x) = self.v.get(p.0 as usize) {
            memory::prefetch(x);
        }
    }
    pub fn len(&self) -> usize {
        self.v.len()
    }
    pub fn is_empty(&self) -> bool {
        self.v.is_empty()
    }
    /// Approximate memory held, for the policy's overhead report.
    pub fn bytes(&self) -> usize {
        self.v.capacity() * std::mem::size_of::<T>()
    }
    /// Bytes the table takes for `pages` pages: what [`Dense::reserve`] allocates.
    pub const fn bytes_for(pages: u64) -> u64 {
        bytes_of::<T>(pages)
    }
    /// Allocate room for `pages` pages up front, fallibly (ids below `pages` then never grow
    /// the table).
    pub fn reserve(&mut self, pages: u64, what: &str) -> tierkit_core::Result<()> {
        memory::reserve_exact(&mut self.v, pages, what)
    }
}

/// Each tracked page's slot in a table of at most `bound` tracked pages (PACT's tracking table):
/// a dense array of 4 bytes a page where the page space is small, a hash map sized by the bound
/// where the array would be larger (issue 18: tables sized by what they track, not by the page
/// space). Both give the same slots; which one is used changes only the memory.
#[derive(Clone, Debug)]
pub enum PageSlots {
    Dense(Dense<u32>),
    Sparse(rustc_hash::FxHashMap<u64, u32>),
}

impl Default for PageSlots {
    fn default() -> Self {
        PageSlots::Dense(Dense::new(PageSlots::NONE))
    }
}

impl PageSlots {
    /// No slot.
    pub const NONE: u32 = u32::MAX;

    #[inline]
    pub fn get(&self, p: PageId) -> u32 {
        match self {
            PageSlots::Dense(d) => *d.get(p),
            PageSlots::Sparse(m) => m.get(&p.0).copied().unwrap_or(Self::NONE),
        }
    }

    /// Give `p` slot `s` (`NONE`: forget it).
    #[inline]
    pub fn set(&mut self, p: PageId, s: u32) {
        match self {
            PageSlots::Dense(d) => d.set(p, s),
            PageSlots::Sparse(m) => {
                if s == Self::NONE {
                    m.remove(&p.0);
                } else {
                    m.insert(p.0, s);
                }
            }
        }
    }

    pub fn bytes(&self) -> usize {
        match self {
            PageSlots::Dense(d) => d.bytes(),
            PageSlots::Sparse(m) => {
                memory::hash_map_capacity_bytes::<u64, u32>(m.capacity() as u64) as usize
            }
        }
    }

    /// The map's room: twice the bound, so that a full table's churn (a page forgotten, another
    /// tracked) rehashes in place and never grows the map.
    const fn sparse_room(bound: u64) -> u64 {
        bound.saturating_mul(2).saturating_add(1)
    }

    /// The bytes of the dense and of the sparse form for `pages` pages and at most `bound`
    /// tracked; [`PageSlots::reserve`] takes the sparse one only when it is smaller.
    const fn form_bytes(pages: u64, bound: u64) -> (u64, u64) {
        (
            Dense::<u32>::bytes_for(pages),
            memory::hash_map_bytes::<u64, u32>(Self::sparse_room(bound)),
        )
    }

    /// Bytes for `pages` pages and at most `bound` tracked: the smaller form.
    pub const fn bytes_for(pages: u64, bound: u64) -> u64 {
        let (dense, sparse) = Self::form_bytes(pages, bound);
        if dense <= sparse {
            dense
        } else {
            sparse
        }
    }

    /// Choose the smaller form for `pages` pages and at most `bound` tracked, and allocate it
    /// up front, fallibly.
    pub fn reserve(&mut self, pages: u64, bound: u64, what: &str) -> tierkit_core::Result<()> {
        let (dense, sparse) = Self::form_bytes(pages, bound);
        if dense <= sparse {
            let mut d = Dense::new(Self::NONE);
            d.reserve(pages, what)?;
            *self = PageSlots::Dense(d);
        } else {
            let mut m = rustc_hash::FxHashMap::default();
            m.try_reserve(Self::sparse_room(bound) as usize)
                .map_err(|_| tierkit_core::Error::OutOfMemory {
                    what: what.into(),
                    bytes: sparse,
                })?;
            *self = PageSlots::Sparse(m);
        }
        Ok(())
    }
}

/// The first boundary after `now` (ns, within 1e-6) of a timer whose boundaries are `next` plus
/// whole `period`s: a timer that a step overshoots keeps its boundaries, whatever the step (one
/// restarted at `now + period` drifted by each overshoot).
pub(crate) fn next_boundary(next: f64, now: f64, period: f64) -> f64 {
    if next > now + 1e-6 {
        return next;
    }
    next + (((now + 1e-6 - next) / period).floor() + 1.0) * period
}

/// The spec string of a policy built from `params`: its name and, after a colon, the parameters
/// that differ from their defaults, in declaration order (`hemem:sample_period=5003`).
pub fn spec_name(name: &str, defs: &[ParamDef], params: &Params) -> String {
    let defaults = Params::resolve(name, defs, &[]).expect("declared defaults are valid");
    let value = |p: &Params, k: &str| p.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
    let changed: Vec<String> = defs
        .iter()
        .filter(|d| value(params, d.name) != value(&defaults, d.name))
        .filter_map(|d| value(params, d.name).map(|v| format!("{}={v}", d.name)))
        .collect();
    if changed.is_empty() {
        name.to_string()
    } else {
        format!("{name}:{}", changed.join(","))
    }
}

const NONE: u8 = u8::MAX;

/// Where a policy keeps each page's tier ([`Residency`]'s table, or bits of the policy's own
/// per-page record), so that [`apply_residency_events`] can keep it.
pub trait TierView {
    fn tier(&self, p: PageId) -> Option<TierId>;
    fn set(&mut self, p: PageId, t: Option<TierId>);
    /// A run of `count` pages from `first` became resident in tier `t`.
    fn set_run(&mut self, first: PageId, count: u64, t: TierId) {
        for p in first.0..first.0 + count {
            self.set(PageId(p), Some(t));
        }
    }
}

/// Apply an epoch's allocations, completed migrations and frees to `v`, in that order (a page
/// migrated and then freed within one epoch ends up gone). A migration result for a page that
/// is not resident (freed while its copy was in flight) changes nothing.
pub fn apply_residency_events(v: &mut impl TierView, tel: &Telemetry) {
    for (first, count, _, tier) in tel.allocated.runs_iter() {
        v.set_run(first, count, tier);
    }
    for m in &tel.migrations {
        if m.outcome == MigrationOutcome::Done && v.tier(m.page).is_some() {
            v.set(m.page, Some(m.to));
        }
    }
    for e in &tel.freed {
        v.set(e.page, None);
    }
}

/// Which tier each page is in, as the policy learns it from telemetry.
#[derive(Clone, Debug)]
pub struct Residency {
    tier: Dense<u8>,
    counts: Vec<u64>,
}

impl Default for Residency {
    fn default() -> Self {
        Residency {
            tier: Dense::new(NONE),
            counts: vec![0; 2],
        }
    }
}

impl Residency {
    /// Apply this epoch's events ([`apply_residency_events`]). Call once per epoch before
    /// deciding.
    pub fn observe(&mut self, tel: &Telemetry) {
        apply_residency_events(self, tel);
    }

    fn set_one(&mut self, p: PageId, t: Option<TierId>) {
        let old = *self.tier.get(p);
        if old != NONE {
            self.counts[old as usize] -= 1;
        }
        let new = t.unwrap_or(NONE);
        if new != NONE {
            if new as usize >= self.counts.len() {
                self.counts.resize(new as usize + 1, 0);
            }
            self.counts[new as usize] += 1;
        }
        self.tier.set(p, new);
    }

    /// Ask for `p`'s entry to be brought into cache (a hint).
    #[inline]
    pub fn prefetch(&self, p: PageId) {
        self.tier.prefetch(p);
    }

    pub fn tier(&self, p: PageId) -> Option<TierId> {
        let t = *self.tier.get(p);
        (t != NONE).then_some(t)
    }

    pub fn count(&self, t: TierId) -> u64 {
        self.counts.get(t as usize).copied().unwrap_or(0)
    }

    /// One past the largest page id seen.
    pub fn page_space(&self) -> u64 {
        self.tier.len() as u64
    }

    /// Bytes the residency view takes for `pages` pages (one tier byte each).
    pub const fn bytes_for(pages: u64) -> u64 {
        Dense::<u8>::bytes_for(pages)
    }
    /// Allocate the view for `pages` pages up front, fallibly.
    pub fn reserve(&mut self, pages: u64) -> tierkit_core::Result<()> {
        self.tier.reserve(pages, "the residency table")
    }
    /// Bytes held now (the table's capacity).
    pub fn bytes(&self) -> u64 {
        self.tier.bytes() as u64
    }
}

impl TierView for Residency {
    fn tier(&self, p: PageId) -> Option<TierId> {
        Residency::tier(self, p)
    }
    fn set(&mut self, p: PageId, t: Option<TierId>) {
        self.set_one(p, t);
    }
    fn set_run(&mut self, first: PageId, count: u64, t: TierId) {
        if count > 0 && first.0 >= self.tier.len() as u64 {
            // A first touch: no page of the run had a tier.
            if t as usize >= self.counts.len() {
                self.counts.resize(t as usize + 1, 0);
            }
            self.counts[t as usize] += count;
            self.tier.set_run(first, count, t);
        } else {
            for p in first.0..first.0 + count {
                self.set_one(PageId(p), Some(t));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkit_core::telemetry::{MigrationResult, PageEvent};

    #[test]
    fn residency_follows_events() {
        let mut r = Residency::default();
        let allocated = (0..4)
            .map(|i| PageEvent {
                page: PageId(i),
                pid: 0,
                tier: (i % 2) as u8,
            })
            .collect();
        let tel = Telemetry {
            allocated,
            ..Telemetry::default()
        };
        r.observe(&tel);
        assert_eq!((r.count(0), r.count(1)), (2, 2));
        let mut tel = Telemetry::default();
        tel.migrations.push(MigrationResult {
            page: PageId(1),
            from: 1,
            to: 0,
            outcome: MigrationOutcome::Done,
            remap: false,
        });
        tel.migrations.push(MigrationResult {
            page: PageId(3),
            from: 1,
            to: 0,
            outcome: MigrationOutcome::NoSpace,
            remap: false,
        });
        tel.freed.push(PageEvent {
            page: PageId(0),
            pid: 0,
            tier: 0,
        });
        r.observe(&tel);
        assert_eq!((r.count(0), r.count(1)), (2, 1));
        assert_eq!(r.tier(PageId(0)), None);
        assert_eq!(r.tier(PageId(1)), Some(0));
        // a result for a page freed meanwhile does not bring it back
        let mut tel = Telemetry::default();
        tel.migrations.push(MigrationResult {
            page: PageId(0),
            from: 0,
            to: 1,
            outcome: MigrationOutcome::Done,
            remap: false,
        });
        tel.migrations.push(MigrationResult {
            page: PageId(2),
            from: 0,
            to: 1,
            outcome: MigrationOutcome::Done,
            remap: false,
        });
        tel.freed.push(PageEvent {
            page: PageId(2),
            pid: 0,
            tier: 1,
        });
        r.observe(&tel);
        assert_eq!((r.count(0), r.count(1)), (1, 1));
        assert_eq!((r.tier(PageId(0)), r.tier(PageId(2))), (None, None));
    }

    /// The page-slot map gives the same slots in its dense and its sparse form, and takes the
    /// smaller one: dense for a small page space, sparse for a large one with a small bound,
    /// where a full table's churn never grows it.
    #[test]
    fn page_slots_are_the_same_dense_or_sparse_and_the_smaller_is_chosen() {
        let mut dense = PageSlots::default();
        dense.reserve(1000, 100, "test").unwrap();
        assert!(matches!(dense, PageSlots::Dense(_)));
        let mut sparse = PageSlots::default();
        sparse.reserve(1 << 30, 100, "test").unwrap();
        assert!(matches!(sparse, PageSlots::Sparse(_)));
        assert!(PageSlots::bytes_for(1 << 30, 100) < 1 << 20);
        assert_eq!(PageSlots::bytes_for(1000, 100), 4000);
        let cap = match &sparse {
            PageSlots::Sparse(m) => m.capacity(),
            _ => unreachable!(),
        };
        let mut rng = tierkit_core::rng::Rng::new(7);
        let mut live: Vec<u64> = Vec::new();
        for step in 0..20_000u32 {
            // at most 100 pages have a slot at once, as the tracking table allows
            if live.len() == 100 || (!live.is_empty() && rng.chance(0.5)) {
                let i = rng.below(live.len() as u64) as usize;
                let p = PageId(live.swap_remove(i));
                dense.set(p, PageSlots::NONE);
                sparse.set(p, PageSlots::NONE);
            } else {
                let p = rng.below(1000);
                if !live.contains(&p) {
                    live.push(p);
                }
                dense.set(PageId(p), step);
                sparse.set(PageId(p), step);
            }
            let q = PageId(rng.below(1000));
            assert_eq!(dense.get(q), sparse.get(q));
        }
        for p in 0..1000 {
            assert_eq!(dense.get(PageId(p)), sparse.get(PageId(p)));
        }
        match &sparse {
            PageSlots::Sparse(m) => assert_eq!(m.capacity(), cap, "the map never grew"),
            _ => unreachable!(),
        }
    }
}
