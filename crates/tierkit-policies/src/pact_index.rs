//! PACT's tracked pages kept in order of PAC (PACT ASPLOS'26 §4.5, Algorithm 3's per-bin
//! queues), so that a window's binning costs what changed, not the whole table.
//!
//! Algorithm 3 keeps pages in bins of width W and moves a page when its PAC changes. Here W
//! changes nearly every window (Freedman-Diaconis recomputes it from the reservoir, the scaling
//! rule doubles or halves it), so bins of width W would need a rebuild over every tracked page
//! each window. Instead the pages sit in fixed buckets of a quantized PAC key that does not
//! depend on W: the sign, exponent and top [`SUB_BITS`] mantissa bits of the value (64 buckets
//! per power of two, the values of one bucket within 1.6 % of each other; positive values below
//! 2^-24 share one bucket, values at or above 2^64 another, values at or below 0 a third).
//! Each bucket holds two intrusive lists, the promotion candidates (sampled in the slow tier
//! since they arrived there, resident there and not moving) and the other pages, with their
//! lengths. A page moves between lists in O(1) when its PAC or candidacy changes.
//!
//! Because `bin_of(., W)` is monotone in the value, every bucket lies in one bin, except at most
//! one bucket per bin boundary, and [`PacIndex::select`] finds the top bin, counts its pages and
//! candidates, and collects its highest candidates by walking the bucket counts (a fixed
//! [`BUCKETS`]) and only the member lists of the buckets it must look into: the one holding the
//! largest PAC if it straddles a bin boundary, the one straddling the top bin's lower edge, and
//! the candidates' buckets from the top until `keep` are collected. The result is exactly what a
//! pass over every tracked page gives (the test module checks it against that pass).

use crate::pact_bins::bin_of;

/// No slot (list end).
pub const NONE: u32 = u32::MAX;
/// Mantissa bits kept in a bucket's key.
pub const SUB_BITS: u32 = 6;
/// Positive values below 2^LO_EXP share bucket 1.
const LO_EXP: i64 = -24;
/// Values at or above 2^HI_EXP (and +inf) share the last bucket.
const HI_EXP: i64 = 64;
const LO_BITS: u64 = ((LO_EXP + 1023) as u64) << 52;
const HI_BITS: u64 = ((HI_EXP + 1023) as u64) << 52;
const SHIFT: u32 = 52 - SUB_BITS;
/// Buckets between 2^LO_EXP and 2^HI_EXP.
const MID: usize = ((HI_EXP - LO_EXP) as usize) << SUB_BITS;
/// Buckets in all: values <= 0, tiny positives, the middle ones, huge values.
pub const BUCKETS: usize = MID + 3;

/// The bucket of a value: monotone non-decreasing over the non-NaN values; NaN goes to 0.
#[inline]
pub fn bucket_of(v: f64) -> usize {
    if v.is_nan() || v <= 0.0 {
        return 0;
    }
    let bits = v.to_bits();
    if bits < LO_BITS {
        1
    } else if bits >= HI_BITS {
        BUCKETS - 1
    } else {
        2 + ((bits - LO_BITS) >> SHIFT) as usize
    }
}

/// The smallest and largest value a bucket holds (NaN aside).
pub fn bucket_bounds(b: usize) -> (f64, f64) {
    match b {
        0 => (f64::NEG_INFINITY, 0.0),
        1 => (f64::from_bits(1), f64::from_bits(LO_BITS - 1)),
        b if b >= BUCKETS - 1 => (f64::from_bits(HI_BITS), f64::INFINITY),
        b => {
            let i = (b - 2) as u64;
            let lo = LO_BITS + (i << SHIFT);
            (f64::from_bits(lo), f64::from_bits(lo + (1 << SHIFT) - 1))
        }
    }
}

/// A slot's list: bucket * 2 + 1 for a candidate, + `NAN_BIT` for a NaN value. The caller
/// keeps it beside its own entry (where it costs no room) and passes it in.
pub type ListId = u16;
/// The list id's bit marking a NaN value (kept in bucket 0's lists).
const NAN_BIT: ListId = 1 << 15;
const _: () = assert!(2 * BUCKETS <= NAN_BIT as usize);

/// The list a value and candidacy belong to.
#[inline]
pub fn list_of(pac: f64, cand: bool) -> ListId {
    let l = (bucket_of(pac) * 2 + cand as usize) as ListId;
    if pac.is_nan() {
        l | NAN_BIT
    } else {
        l
    }
}

/// Whether a list holds candidates.
#[inline]
pub fn is_candidate_list(list: ListId) -> bool {
    list & 1 != 0
}

/// A tracked page's neighbours in its list.
#[derive(Clone, Copy, Debug)]
struct Node {
    prev: u32,
    next: u32,
}

/// What one binning found (see [`PacIndex::select`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// The top non-empty bin (bin of the largest PAC, at least the bin of 0).
    pub top: usize,
    /// Tracked pages in it, and the candidates among them.
    pub in_top: u64,
    pub candidates: u64,
    /// List members looked at.
    pub visited: u64,
}

/// The tracked pages in buckets by PAC, slot for slot beside the policy's table (which keeps
/// each slot's [`ListId`]).
#[derive(Clone, Debug)]
pub struct PacIndex {
    nodes: Vec<Node>,
    head: Vec<u32>,
    len: Vec<u32>,
    nan: usize,
}

impl Default for PacIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl PacIndex {
    pub fn new() -> Self {
        PacIndex {
            nodes: Vec::new(),
            head: vec![NONE; 2 * BUCKETS],
            len: vec![0; 2 * BUCKETS],
            nan: 0,
        }
    }

    /// Bytes of the bucket heads and lengths, whatever the number of pages.
    pub const FIXED_BYTES: u64 = (2 * BUCKETS * 2 * std::mem::size_of::<u32>()) as u64;
    /// Bytes per slot (its neighbours; the list id is the caller's).
    pub const SLOT_BYTES: u64 = std::mem::size_of::<Node>() as u64;

    /// Bytes for `n` slots: what [`PacIndex::new`] and [`PacIndex::reserve`] allocate.
    pub const fn bytes_for(n: u64) -> u64 {
        Self::FIXED_BYTES.saturating_add(tierkit_core::memory::bytes_of::<Node>(n))
    }

    /// Bytes held now.
    pub fn bytes(&self) -> u64 {
        (self.nodes.capacity() * std::mem::size_of::<Node>()
            + (self.head.capacity() + self.len.capacity()) * std::mem::size_of::<u32>())
            as u64
    }

    /// Room for `n` slots up front, fallibly.
    pub fn reserve(&mut self, n: u64, what: &str) -> tierkit_core::Result<()> {
        tierkit_core::memory::reserve_exact(&mut self.nodes, n, what)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Tracked pages whose PAC is NaN (their binning falls back to a pass over the table).
    pub fn nan_count(&self) -> usize {
        self.nan
    }

    fn link(&mut self, slot: u32, list: ListId) {
        let l = (list & !NAN_BIT) as usize;
        let h = self.head[l];
        self.nodes[slot as usize] = Node {
            prev: NONE,
            next: h,
        };
        if h != NONE {
            self.nodes[h as usize].prev = slot;
        }
        self.head[l] = slot;
        self.len[l] += 1;
        if list & NAN_BIT != 0 {
            self.nan += 1;
        }
    }

    fn unlink(&mut self, slot: u32, list: ListId) {
        let Node { prev, next } = self.nodes[slot as usize];
        let l = (list & !NAN_BIT) as usize;
        if prev != NONE {
            self.nodes[prev as usize].next = next;
        } else {
            self.head[l] = next;
        }
        if next != NONE {
            self.nodes[next as usize].prev = prev;
        }
        self.len[l] -= 1;
        if list & NAN_BIT != 0 {
            self.nan -= 1;
        }
    }

    /// Add the next slot (the table's new last entry) to `list`.
    pub fn push(&mut self, list: ListId) {
        let slot = self.nodes.len() as u32;
        self.nodes.push(Node {
            prev: NONE,
            next: NONE,
        });
        self.link(slot, list);
    }

    /// Move a slot from list `from` (where it is) to list `to`.
    #[inline]
    pub fn relist(&mut self, slot: usize, from: ListId, to: ListId) {
        if from != to {
            self.unlink(slot as u32, from);
            self.link(slot as u32, to);
        }
    }

    /// Remove a slot (in list `list`) as `Vec::swap_remove` does: the last slot, in list
    /// `last_list`, takes its place.
    pub fn swap_remove(&mut self, slot: usize, list: ListId, last_list: ListId) {
        self.unlink(slot as u32, list);
        let last = self.nodes.len() - 1;
        self.nodes.swap_remove(slot);
        if slot < last {
            let Node { prev, next } = self.nodes[slot];
            if prev != NONE {
                self.nodes[prev as usize].next = slot as u32;
            } else {
                self.head[(last_list & !NAN_BIT) as usize] = slot as u32;
            }
            if next != NONE {
                self.nodes[next as usize].prev = slot as u32;
            }
        }
    }

    /// The members of a list.
    fn members(&self, list: usize) -> impl Iterator<Item = u32> + '_ {
        let mut s = self.head[list];
        std::iter::from_fn(move || {
            (s != NONE).then(|| {
                let cur = s;
                s = self.nodes[s as usize].next;
                cur
            })
        })
    }

    /// Bin the tracked pages with width `w` into `bins` bins counted from `origin` (bin_of(PAC -
    /// origin); every value below `origin` falls in the first bin): the top non-empty bin, its
    /// pages and candidates (counted), and into `out` (cleared first) at least the `keep`
    /// highest candidates of the top bin, or all of them if fewer, in no particular order
    /// (every candidate not in `out` ranks below every one in it). `pac(slot)` is the slot's
    /// PAC. None when a tracked PAC is NaN (NaN sorts above everything but bins at 0).
    pub fn select(
        &self,
        w: f64,
        origin: f64,
        bins: usize,
        keep: usize,
        pac: impl Fn(u32) -> f64,
        out: &mut Vec<u32>,
    ) -> Option<Selection> {
        out.clear();
        if self.nan > 0 {
            return None;
        }
        let bin = |v: f64| bin_of(v - origin, w, bins);
        let mut sel = Selection {
            top: bin(0.0),
            ..Selection::default()
        };
        let used = |b: usize| self.len[2 * b] + self.len[2 * b + 1] > 0;
        let Some(hb) = (0..BUCKETS).rev().find(|&b| used(b)) else {
            return Some(sel);
        };
        // the top bin: the bin of the largest PAC (bin_of is monotone)
        let (lo, hi) = bucket_bounds(hb);
        if bin(lo) == bin(hi) {
            sel.top = sel.top.max(bin(hi));
        } else {
            for s in self.members(2 * hb).chain(self.members(2 * hb + 1)) {
                sel.visited += 1;
                sel.top = sel.top.max(bin(pac(s)));
            }
        }
        let top = sel.top;
        for b in (0..=hb).rev() {
            if !used(b) {
                continue;
            }
            let (lo, hi) = bucket_bounds(b);
            if bin(hi) < top {
                break; // this bucket and every one below lie under the top bin
            }
            let collect = out.len() < keep;
            let (others, cands) = (2 * b, 2 * b + 1);
            if bin(lo) >= top {
                // the whole bucket is in the top bin
                sel.in_top += (self.len[others] + self.len[cands]) as u64;
                sel.candidates += self.len[cands] as u64;
                if collect {
                    let n = out.len();
                    out.extend(self.members(cands));
                    sel.visited += (out.len() - n) as u64;
                }
            } else {
                // the bucket straddles the top bin's lower edge
                for s in self.members(others) {
                    sel.visited += 1;
                    sel.in_top += (bin(pac(s)) >= top) as u64;
                }
                for s in self.members(cands) {
                    sel.visited += 1;
                    if bin(pac(s)) >= top {
                        sel.in_top += 1;
                        sel.candidates += 1;
                        if collect {
                            out.push(s);
                        }
                    }
                }
            }
        }
        Some(sel)
    }

    /// Check the lists against the slots' values, candidacy and list ids (tests).
    #[cfg(test)]
    pub fn check(
        &self,
        pac: impl Fn(u32) -> f64,
        cand: impl Fn(u32) -> bool,
        list: impl Fn(u32) -> ListId,
    ) {
        let mut seen = vec![false; self.nodes.len()];
        let mut nan = 0;
        for l in 0..2 * BUCKETS {
            let mut n = 0;
            let mut prev = NONE;
            for s in self.members(l) {
                assert!(!seen[s as usize], "slot {s} twice");
                seen[s as usize] = true;
                assert_eq!(self.nodes[s as usize].prev, prev);
                assert_eq!(list(s), list_of(pac(s), cand(s)), "slot {s}");
                assert_eq!((list(s) & !NAN_BIT) as usize, l);
                nan += (list(s) & NAN_BIT != 0) as usize;
                prev = s;
                n += 1;
            }
            assert_eq!(self.len[l], n);
        }
        assert!(seen.iter().all(|&x| x), "every slot listed");
        assert_eq!(self.nan, nan);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn buckets_are_monotone_and_their_bounds_hold_their_values() {
        let vals = [
            f64::NEG_INFINITY,
            -1e300,
            -1.0,
            -0.0,
            0.0,
            f64::from_bits(1),
            1e-300,
            5e-8,
            5.960464477539063e-8, // 2^-24
            0.1,
            1.0,
            1.0 + 1.0 / 64.0,
            1000.0,
            1.8e19,
            1.8446744073709552e19, // 2^64
            1e300,
            f64::MAX,
            f64::INFINITY,
        ];
        for w in vals.windows(2) {
            assert!(bucket_of(w[0]) <= bucket_of(w[1]), "{} {}", w[0], w[1]);
        }
        for &v in &vals {
            let b = bucket_of(v);
            let (lo, hi) = bucket_bounds(b);
            assert!(lo <= v && v <= hi, "{v}: bucket {b} [{lo}, {hi}]");
        }
        for b in 0..BUCKETS {
            let (lo, hi) = bucket_bounds(b);
            assert_eq!(bucket_of(hi), b);
            if b > 0 {
                assert_eq!(bucket_of(lo), b);
                assert!(bucket_bounds(b - 1).1 < lo);
            }
        }
        assert_eq!(bucket_of(f64::NAN), 0);
        assert_eq!(bucket_of(1.0), bucket_of(1.0 + 1.0 / 65.0));
        assert!(bucket_of(1.0) < bucket_of(1.0 + 1.0 / 64.0));
    }

    /// The pass over every value that [`PacIndex::select`] must agree with: the top bin (from
    /// the maximum, folded from 0 as f64::max does), its pages, its candidates by PAC then slot.
    fn by_scan(
        vals: &[(f64, bool)],
        w: f64,
        origin: f64,
        bins: usize,
        keep: usize,
    ) -> (usize, u64, u64, Vec<u32>) {
        let max = vals.iter().map(|v| v.0).fold(0.0, f64::max);
        let top = bin_of(max - origin, w, bins);
        let mut in_top = 0;
        let mut c: Vec<u32> = Vec::new();
        for (i, &(v, cand)) in vals.iter().enumerate() {
            if bin_of(v - origin, w, bins) == top {
                in_top += 1;
                if cand {
                    c.push(i as u32);
                }
            }
        }
        let n = c.len() as u64;
        c.sort_by(|&a, &b| {
            vals[b as usize]
                .0
                .total_cmp(&vals[a as usize].0)
                .then(a.cmp(&b))
        });
        c.truncate(keep);
        (top, in_top, n, c)
    }

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            3 => 0.0f64..1e6,
            2 => (0u32..50).prop_map(|i| i as f64 * 1000.0),
            1 => (-60i32..80).prop_map(|e| 2f64.powi(e)),
            1 => prop::sample::select(vec![
                0.0, -0.0, -5.0, f64::INFINITY, f64::MAX, 1e-310, 19000.0, 18999.999999999996
            ]),
        ]
    }

    /// Values with their candidacy and list ids, and the index over them, edited together as
    /// the policy edits its table.
    #[derive(Default)]
    struct Table {
        vals: Vec<(f64, bool)>,
        lists: Vec<ListId>,
        ix: PacIndex,
    }

    impl Table {
        fn push(&mut self, v: f64, c: bool) {
            self.vals.push((v, c));
            self.lists.push(list_of(v, c));
            self.ix.push(list_of(v, c));
        }
        fn set(&mut self, s: usize, v: f64, c: bool) {
            self.vals[s] = (v, c);
            self.ix.relist(s, self.lists[s], list_of(v, c));
            self.lists[s] = list_of(v, c);
        }
        fn swap_remove(&mut self, s: usize) {
            let last = *self.lists.last().unwrap();
            self.ix.swap_remove(s, self.lists[s], last);
            self.vals.swap_remove(s);
            self.lists.swap_remove(s);
        }
        fn check(&self) {
            self.ix.check(
                |s| self.vals[s as usize].0,
                |s| self.vals[s as usize].1,
                |s| self.lists[s as usize],
            );
        }
        fn select(
            &self,
            w: f64,
            origin: f64,
            bins: usize,
            keep: usize,
            out: &mut Vec<u32>,
        ) -> Option<Selection> {
            self.ix
                .select(w, origin, bins, keep, |s| self.vals[s as usize].0, out)
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn select_agrees_with_a_pass_over_every_value(
            init in proptest::collection::vec((value(), any::<bool>()), 0..300),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), value(), any::<bool>(), 0u8..4), 0..200),
            w in prop_oneof![4 => 1e-3f64..1e5, 1 => prop::sample::select(vec![1000.0, 0.0, -1.0, f64::INFINITY, 1e-300, 5e-324])],
            bins in 2usize..40,
            keep in 1usize..50,
            origin in prop_oneof![3 => Just(0.0), 2 => 0.0f64..1e6, 1 => value()],
        ) {
            let mut t = Table::default();
            for &(v, c) in &init {
                t.push(v, c);
            }
            for (i, v, c, op) in edits {
                if t.vals.is_empty() || op == 3 {
                    t.push(v, c);
                    continue;
                }
                let s = i.index(t.vals.len());
                if op == 2 {
                    t.swap_remove(s);
                } else {
                    t.set(s, v, c);
                }
            }
            t.check();
            let mut out = Vec::new();
            let sel = t.select(w, origin, bins, keep, &mut out).unwrap();
            let vals = &t.vals;
            let (top, in_top, n, want) = by_scan(vals, w, origin, bins, keep);
            prop_assert_eq!((sel.top, sel.in_top, sel.candidates), (top, in_top, n));
            prop_assert!(out.len() >= want.len());
            let mut got = out.clone();
            got.sort_by(|&a, &b| vals[b as usize].0.total_cmp(&vals[a as usize].0).then(a.cmp(&b)));
            got.truncate(keep);
            prop_assert_eq!(got, want);
            prop_assert!(sel.visited <= vals.len() as u64 * 2);
        }
    }

    #[test]
    fn nan_values_make_select_decline() {
        let mut t = Table::default();
        t.push(1.0, true);
        t.push(f64::NAN, true);
        let mut out = Vec::new();
        assert_eq!(t.select(1.0, 0.0, 20, 10, &mut out), None);
        t.set(1, 2.0, false);
        assert_eq!(t.ix.nan_count(), 0);
        t.check();
        let sel = t.select(1.0, 0.0, 20, 10, &mut out).unwrap();
        assert_eq!((sel.top, sel.in_top, sel.candidates), (2, 1, 0));
        assert!(out.is_empty());
    }

    #[test]
    fn a_window_looks_only_at_what_it_needs() {
        // 100K pages spread over six decades, 10 candidates at the top: the binning visits
        // a bucket or two of members, not the table
        let mut t = Table::default();
        for i in 0..100_000u32 {
            t.push(10f64.powf(i as f64 / 100_000.0 * 6.0), i >= 99_990);
        }
        let mut out = Vec::new();
        let sel = t.select(1e6 / 19.5, 0.0, 20, 4096, &mut out).unwrap();
        assert_eq!(sel.top, 19);
        assert_eq!(sel.candidates, 10);
        assert!(sel.visited < 3000, "{sel:?}");
    }
}
