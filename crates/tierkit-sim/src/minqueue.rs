//! A min-priority queue for large, slowly draining sets: a heap of the nearest entries and an
//! unordered bag of the rest.
//!
//! The machine keeps the marked pages waiting for their hint fault in such queues (one entry per
//! marked page, millions when a large footprint is marked), while each epoch pushes and pops a
//! few hundred of them. In one binary heap every pop sifts down through all its levels, and the
//! lower levels of a heap of tens of megabytes miss the cache on every step (an eighth of a
//! hint-fault-heavy run went into one such sift, 16 GiB of 4 KiB pages under TPP). Here the heap holds only the entries below a
//! bound, refilled from the bag with its smallest eighth (at least [`MIN_BATCH`]) when it
//! runs dry, and an entry at or above the bound joins the bag without being ordered. When the
//! heap grows past a quarter of the queue (and [`MIN_BATCH`] a few times over), all but its
//! smallest eighth go to the bag and the bound comes down to meet them. Each costs time in
//! proportion to the entries it moves, after as many pops or pushes: O(1) a step, amortized.
//!
//! Memory: a vector that falls to under half its room gives back all but a quarter above its
//! entries (vectors of [`SLACK`] entries or fewer keep theirs), and `drain` frees both. The
//! machine keeps a queue per phase, and their peaks fall at different times: a queue holding on
//! to its largest size made the sum of those sizes the run's peak, not the largest sum.
//!
//! Invariant: every entry of the heap is at or below `bound`, every entry of the bag at or above
//! it, and the heap is empty only when the bag is. So the heap's top is the queue's least entry,
//! and entries leave in the order a single heap would give them (equal entries are
//! indistinguishable).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The fewest entries a refill moves from the bag into the heap (a handful in the tests, so
/// that they go through many splits and refills).
#[cfg(not(test))]
const MIN_BATCH: usize = 1024;
#[cfg(test)]
const MIN_BATCH: usize = 4;

/// Entries of room a vector keeps whatever its length: up to this a draining queue keeps its
/// allocation (a shrink can cost a copy, and small queues fill and drain every epoch).
const SLACK: usize = 4 * MIN_BATCH;

#[derive(Clone, Debug)]
pub(crate) struct MinQueue<T: Ord + Copy> {
    near: BinaryHeap<Reverse<T>>,
    far: Vec<T>,
    /// The least entry the bag may hold (None while the bag is empty).
    bound: Option<T>,
}

impl<T: Ord + Copy> Default for MinQueue<T> {
    fn default() -> Self {
        MinQueue {
            near: BinaryHeap::new(),
            far: Vec::new(),
            bound: None,
        }
    }
}

impl<T: Ord + Copy> MinQueue<T> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, x: T) {
        match self.bound {
            Some(b) if x >= b => self.far.push(x),
            _ => {
                self.near.push(Reverse(x));
                if self.near.len() > 4 * MIN_BATCH + self.len() / 4 {
                    self.split();
                }
            }
        }
    }

    /// The least entry.
    pub fn peek(&self) -> Option<&T> {
        self.near.peek().map(|r| &r.0)
    }

    /// Take the least entry.
    pub fn pop(&mut self) -> Option<T> {
        let x = self.near.pop()?.0;
        if self.near.is_empty() {
            self.refill();
        }
        self.give_back_room();
        Some(x)
    }

    /// A vector under half full (and holding more than [`SLACK`] entries of room) keeps a
    /// quarter above its entries and gives back the rest: the machine keeps a queue per phase,
    /// and their peaks fall at different times.
    fn give_back_room(&mut self) {
        if self.far.len() < self.far.capacity() / 2 && self.far.capacity() > SLACK {
            self.far.shrink_to(self.far.len() + self.far.len() / 4);
        }
        if self.near.len() < self.near.capacity() / 2 && self.near.capacity() > SLACK {
            self.near.shrink_to(self.near.len() + self.near.len() / 4);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.near.is_empty() && self.far.is_empty()
    }

    pub fn len(&self) -> usize {
        self.near.len() + self.far.len()
    }

    /// Entries the queue has room for without allocating.
    pub fn capacity(&self) -> usize {
        self.near.capacity() + self.far.capacity()
    }

    /// Take every entry out, in no particular order; the queue gives back its memory.
    pub fn drain(&mut self) -> impl Iterator<Item = T> {
        self.bound = None;
        let near = std::mem::take(&mut self.near);
        let far = std::mem::take(&mut self.far);
        near.into_vec().into_iter().map(|r| r.0).chain(far)
    }

    /// Keep the heap's smallest eighth of the queue (at least `MIN_BATCH`) and put the rest
    /// of it in the bag: the bound comes down to the least entry moved (the bag's entries were
    /// all at or above the old one, which was at or above every entry of the heap).
    fn split(&mut self) {
        let k = (self.len() / 8).max(MIN_BATCH);
        if k >= self.near.len() {
            return;
        }
        let mut v: Vec<T> = std::mem::take(&mut self.near)
            .into_vec()
            .into_iter()
            .map(|r| r.0)
            .collect();
        // [0, k) at or below v[k], (k, ..) at or above it
        v.select_nth_unstable(k);
        self.bound = Some(v[k]);
        self.far.extend(v.drain(k..));
        // the heap keeps the allocation of all it held before the split until it gives it back
        self.near = v.into_iter().map(Reverse).collect();
        self.give_back_room();
    }

    /// Move the bag's smallest eighth (at least `MIN_BATCH`, at most all of it) into the
    /// empty heap; the bound becomes the least entry left in the bag.
    fn refill(&mut self) {
        if self.far.is_empty() {
            self.bound = None;
            return;
        }
        let k = (self.far.len() / 8).max(MIN_BATCH);
        if k >= self.far.len() {
            self.near.extend(self.far.drain(..).map(Reverse));
            self.bound = None;
            return;
        }
        // [0, k) at or below far[k], (k, ..) at or above it
        self.far.select_nth_unstable(k);
        self.bound = Some(self.far[k]);
        self.near.extend(self.far.drain(..k).map(Reverse));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_large_queue_pops_in_order_through_its_refills() {
        let mut q = MinQueue::new();
        let n = 5000u64;
        // a permutation of 0..n, pushed while the queue holds a bound
        for i in 0..n {
            q.push((i * 7919) % n);
        }
        assert!(q.far.len() > q.near.len(), "the pushes went to the bag");
        for want in 0..n / 2 {
            assert_eq!(q.pop(), Some(want));
        }
        assert!(q.bound.is_some() || q.far.is_empty());
        for want in n / 2..n {
            assert_eq!(q.pop(), Some(want));
        }
        assert_eq!(q.pop(), None);
        assert!(q.is_empty());
    }

    #[test]
    fn a_queue_gives_back_its_memory_as_it_drains() {
        let mut q = MinQueue::new();
        let n = 64 * SLACK as u64;
        for i in 0..n {
            q.push((i * 7919) % n);
        }
        let full = q.capacity();
        assert!(full >= n as usize);
        // popped down to an eighth: each vector holds at most twice its entries, or SLACK
        for want in 0..n - n / 8 {
            assert_eq!(q.pop(), Some(want));
        }
        assert!(
            q.capacity() <= 2 * q.len() + 2 * SLACK,
            "{} entries in room for {} (full: {full})",
            q.len(),
            q.capacity()
        );
        // a drained queue holds nothing, and works on
        let rest: Vec<u64> = q.drain().collect();
        assert_eq!(rest.len() as u64, n / 8);
        assert_eq!(q.capacity(), 0);
        q.push(3);
        q.push(1);
        assert_eq!((q.pop(), q.pop(), q.pop()), (Some(1), Some(3), None));
    }

    proptest! {
        /// Any interleaving of pushes, pops and drains gives what one binary heap gives, with
        /// many equal entries (small keys) and past several refills (long runs).
        #[test]
        fn it_is_a_binary_heap(
            ops in proptest::collection::vec((0u8..10, 0u32..5000), 1..6000),
        ) {
            let mut q = MinQueue::new();
            let mut h: BinaryHeap<Reverse<(u32, u32)>> = BinaryHeap::new();
            for (i, (op, key)) in ops.into_iter().enumerate() {
                match op {
                    0..=5 => {
                        // a key and a tag: equal keys with different tags stay distinct
                        let x = (key, (i % 3) as u32);
                        q.push(x);
                        h.push(Reverse(x));
                    }
                    6..=8 => prop_assert_eq!(q.pop(), h.pop().map(|r| r.0)),
                    _ if key % 50 == 0 => {
                        let mut a: Vec<_> = q.drain().collect();
                        let mut b: Vec<_> = h.drain().map(|r| r.0).collect();
                        a.sort_unstable();
                        b.sort_unstable();
                        prop_assert_eq!(a, b);
                    }
                    _ => {}
                }
                prop_assert_eq!(q.peek(), h.peek().map(|r| &r.0));
                prop_assert_eq!(q.len(), h.len());
                prop_assert_eq!(q.is_empty(), h.is_empty());
            }
        }
    }
}
