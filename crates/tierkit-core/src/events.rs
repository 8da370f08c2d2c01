//! Page events (pages that became resident, or were freed) in the order they happened, kept as
//! runs: consecutive page ids of one process in one tier are one entry of 16 bytes, so the first
//! touch of a whole object costs one entry, not one per page (issue 18: at 1 TiB of 4 KiB pages
//! one event per page was 4 GiB). Iterating yields the same [`PageEvent`]s in the same order as
//! pushing them one by one did; the runs are only how they are stored.

use crate::error::Result;
use crate::telemetry::PageEvent;
use crate::{memory, PageId, Pid, TierId};

/// The longest run one entry holds (its count shares a word with the tier).
const RUN_MAX: u32 = (1 << 24) - 1;

/// Pages `first..first + count` of process `pid`, each in tier `tier`: count in the high 24
/// bits of `count_tier`, the tier in the low 8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Run {
    first: u64,
    pid: Pid,
    count_tier: u32,
}

impl Run {
    fn count(self) -> u32 {
        self.count_tier >> 8
    }

    fn tier(self) -> TierId {
        (self.count_tier & 0xff) as TierId
    }

    /// Whether page `page` of `pid` in `tier` continues this run, and how many more it takes.
    fn room_for(self, page: u64, pid: Pid, tier: TierId) -> u32 {
        if self.pid == pid
            && self.tier() == tier
            && self.first.checked_add(self.count() as u64) == Some(page)
        {
            RUN_MAX - self.count()
        } else {
            0
        }
    }
}

/// Page events as runs (see the module's doc). Two lists are equal when they hold the same
/// events in the same order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageEvents {
    runs: Vec<Run>,
    len: usize,
}

impl PageEvents {
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of events (pages), not of runs.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of runs the events are stored in.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    pub fn clear(&mut self) {
        self.runs.clear();
        self.len = 0;
    }

    pub fn push(&mut self, e: PageEvent) {
        self.push_run(e.page, 1, e.pid, e.tier);
    }

    /// The events of pages `first..first + count` of `pid`, each in `tier`, in page order.
    pub fn push_run(&mut self, first: PageId, count: u64, pid: Pid, tier: TierId) {
        let (mut page, mut left) = (first.0, count);
        if left == 0 {
            return;
        }
        if let Some(r) = self.runs.last_mut() {
            let add = (r.room_for(page, pid, tier) as u64).min(left);
            r.count_tier += (add as u32) << 8;
            page += add;
            left -= add;
        }
        while left > 0 {
            let c = left.min(RUN_MAX as u64);
            self.runs.push(Run {
                first: page,
                pid,
                count_tier: ((c as u32) << 8) | tier as u32,
            });
            page += c;
            left -= c;
        }
        self.len += count as usize;
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter {
            runs: self.runs.iter(),
            cur: None,
            done: 0,
            left: self.len,
        }
    }

    /// The events from the `n`-th on (none when `n` is past the end), in order: what a consumer
    /// that has taken the first `n` has not seen yet (the list only grows until it is cleared).
    pub fn iter_from(&self, n: usize) -> Iter<'_> {
        let n = n.min(self.len);
        let mut runs = self.runs.iter();
        let (mut cur, mut done, mut skip) = (None, 0u32, n);
        while skip > 0 {
            let Some(&r) = runs.next() else { break };
            let c = r.count() as usize;
            if c <= skip {
                skip -= c;
            } else {
                cur = Some(r);
                done = skip as u32;
                skip = 0;
            }
        }
        Iter {
            runs,
            cur,
            done,
            left: self.len - n,
        }
    }

    /// The events as runs, in order: (first page, pages, process, tier). The runs' pages,
    /// taken in order, are exactly the events [`PageEvents::iter`] yields; where a run starts
    /// and ends is the storage's choice, so a consumer must not read meaning into it.
    pub fn runs_iter(&self) -> impl Iterator<Item = (PageId, u64, Pid, TierId)> + '_ {
        self.runs
            .iter()
            .map(|r| (PageId(r.first), r.count() as u64, r.pid, r.tier()))
    }

    /// Make room for `additional` more runs without aborting when memory is short.
    pub fn try_reserve(&mut self, additional: u64, what: &str) -> Result<()> {
        memory::reserve(&mut self.runs, additional, what)
    }

    /// The bytes the list holds now (its capacity).
    pub fn capacity_bytes(&self) -> u64 {
        memory::bytes_of::<Run>(self.runs.capacity() as u64)
    }

    /// The bytes of one stored run.
    pub const RUN_BYTES: u64 = std::mem::size_of::<Run>() as u64;
    /// The most pages one stored run holds.
    pub const RUN_MAX_PAGES: u64 = RUN_MAX as u64;

    /// At most how many runs `pages` consecutive pages of one process in one tier take.
    pub const fn runs_for(pages: u64) -> u64 {
        pages.div_ceil(RUN_MAX as u64)
    }
}

/// The events of a [`PageEvents`], in order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    runs: std::slice::Iter<'a, Run>,
    cur: Option<Run>,
    done: u32,
    left: usize,
}

impl Iterator for Iter<'_> {
    type Item = PageEvent;

    fn next(&mut self) -> Option<PageEvent> {
        loop {
            if let Some(r) = self.cur {
                if self.done < r.count() {
                    let e = PageEvent {
                        page: PageId(r.first + self.done as u64),
                        pid: r.pid,
                        tier: r.tier(),
                    };
                    self.done += 1;
                    self.left -= 1;
                    return Some(e);
                }
            }
            self.cur = Some(*self.runs.next()?);
            self.done = 0;
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a PageEvents {
    type Item = PageEvent;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl Extend<PageEvent> for PageEvents {
    fn extend<I: IntoIterator<Item = PageEvent>>(&mut self, iter: I) {
        for e in iter {
            self.push(e);
        }
    }
}

impl FromIterator<PageEvent> for PageEvents {
    fn from_iter<I: IntoIterator<Item = PageEvent>>(iter: I) -> Self {
        let mut v = PageEvents::new();
        v.extend(iter);
        v
    }
}

impl From<Vec<PageEvent>> for PageEvents {
    fn from(v: Vec<PageEvent>) -> Self {
        v.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ev(page: u64, pid: Pid, tier: TierId) -> PageEvent {
        PageEvent {
            page: PageId(page),
            pid,
            tier,
        }
    }

    #[test]
    fn a_first_touch_in_order_is_one_run() {
        let mut v = PageEvents::new();
        v.push_run(PageId(10), 1000, 3, 0);
        v.push(ev(1010, 3, 0));
        v.push_run(PageId(1011), 5, 3, 0);
        assert_eq!((v.len(), v.runs()), (1006, 1));
        v.push(ev(1016, 3, 1)); // another tier
        v.push(ev(1017, 4, 1)); // another process
        v.push(ev(5, 4, 1)); // not consecutive
        assert_eq!((v.len(), v.runs()), (1009, 4));
        let got: Vec<PageEvent> = v.iter().collect();
        assert_eq!(got[0], ev(10, 3, 0));
        assert_eq!(got[1005], ev(1015, 3, 0));
        assert_eq!(&got[1006..], &[ev(1016, 3, 1), ev(1017, 4, 1), ev(5, 4, 1)]);
        assert_eq!(v.iter().len(), 1009);
        v.clear();
        assert!(v.is_empty() && v.iter().next().is_none());
    }

    proptest! {
        /// Taking the events from any point on yields the rest of what iterating from the start
        /// does, also when a run grew after the point was taken.
        #[test]
        fn iterating_from_n_is_skipping_n(
            evs in proptest::collection::vec((0u64..40, 0u32..3, 0u8..2), 0..60),
            cut in 0usize..70,
        ) {
            let mut v = PageEvents::new();
            for &(p, pid, t) in &evs {
                v.push(ev(p, pid, t));
            }
            let all: Vec<PageEvent> = v.iter().collect();
            let rest: Vec<PageEvent> = v.iter_from(cut).collect();
            prop_assert_eq!(&rest[..], &all[cut.min(all.len())..]);
            prop_assert_eq!(v.iter_from(cut).len(), rest.len());
            // the last run grows after the cut was taken
            if let Some(last) = all.last() {
                let n = v.len();
                v.push(ev(last.page.0 + 1, last.pid, last.tier));
                let grown: Vec<PageEvent> = v.iter_from(n).collect();
                prop_assert_eq!(grown, vec![ev(last.page.0 + 1, last.pid, last.tier)]);
            }
        }
    }

    #[test]
    fn a_run_is_16_bytes() {
        assert_eq!(PageEvents::RUN_BYTES, 16);
        assert_eq!(PageEvents::runs_for(0), 0);
        assert_eq!(PageEvents::runs_for(RUN_MAX as u64 + 1), 2);
    }

    #[test]
    fn runs_longer_than_an_entry_holds_split() {
        let mut v = PageEvents::new();
        let n = RUN_MAX as u64 * 2 + 7;
        v.push_run(PageId(1 << 40), n, 1, 2);
        assert_eq!((v.len(), v.runs()), (n as usize, 3));
        let mut it = v.iter();
        assert_eq!(
            it.nth(RUN_MAX as usize),
            Some(ev((1 << 40) + RUN_MAX as u64, 1, 2))
        );
        assert_eq!(v.iter().last(), Some(ev((1 << 40) + n - 1, 1, 2)));
    }

    proptest! {
        /// Whatever is pushed, one by one or in runs, comes back the same, in the same order.
        #[test]
        fn events_come_back_as_pushed(
            ops in prop::collection::vec((0u64..40, 1u64..6, 0u32..3, 0u8..3, any::<bool>()), 0..60)
        ) {
            let mut v = PageEvents::new();
            let mut want = Vec::new();
            for (first, count, pid, tier, as_run) in ops {
                if as_run {
                    v.push_run(PageId(first), count, pid, tier);
                } else {
                    for p in first..first + count {
                        v.push(ev(p, pid, tier));
                    }
                }
                want.extend((first..first + count).map(|p| ev(p, pid, tier)));
            }
            let got: Vec<PageEvent> = v.iter().collect();
            prop_assert_eq!(v.len(), want.len());
            prop_assert_eq!(&got, &want);
            // the runs, expanded, are the same events
            let expanded: Vec<PageEvent> = v
                .runs_iter()
                .flat_map(|(first, n, pid, tier)| (0..n).map(move |i| ev(first.0 + i, pid, tier)))
                .collect();
            prop_assert_eq!(&expanded, &want);
            prop_assert!(v.runs() <= want.len());
            // the same events pushed one by one store the same runs
            prop_assert_eq!(PageEvents::from(want), v);
        }
    }
}
