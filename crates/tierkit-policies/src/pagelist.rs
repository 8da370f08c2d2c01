//! Intrusive doubly-linked page lists kept in dense vectors.
//!
//! A [`PageLists`] holds a fixed number of lists (HeMem's per-tier hot and cold lists, MEMTIS's
//! per-tier histogram bins) over dense page ids. Every page is on at most one list; push, pop,
//! remove and move are O(1) and allocate nothing once the per-page table has grown to the
//! largest page id. Iteration order is insertion order, so decisions built on it are
//! deterministic.

use tierkit_core::memory::{self, bytes_of};
use tierkit_core::PageId;

const NIL: u32 = u32::MAX;
/// Bytes of one list's head, tail and length.
const PER_LIST: u64 = 16;
const NO_LIST: u8 = u8::MAX;

/// 9 bytes, not 12: packed (one per page of the page space; at most 254 lists).
#[derive(Clone, Copy, Debug)]
#[repr(C, packed)]
struct Link {
    prev: u32,
    next: u32,
    list: u8,
}

const UNLINKED: Link = Link {
    prev: NIL,
    next: NIL,
    list: NO_LIST,
};

/// A fixed set of FIFO lists over dense page ids.
#[derive(Clone, Debug)]
pub struct PageLists {
    link: Vec<Link>,
    head: Vec<u32>,
    tail: Vec<u32>,
    len: Vec<u64>,
}

#[inline]
fn idx(p: PageId) -> u32 {
    assert!(
        p.0 < NIL as u64,
        "page id {} does not fit a 32-bit list index",
        p.0
    );
    p.0 as u32
}

impl PageLists {
    /// `lists` empty lists (at most 254).
    pub fn new(lists: usize) -> Self {
        assert!(lists < NO_LIST as usize);
        PageLists {
            link: Vec::new(),
            head: vec![NIL; lists],
            tail: vec![NIL; lists],
            len: vec![0; lists],
        }
    }

    pub fn lists(&self) -> usize {
        self.head.len()
    }

    #[inline]
    pub fn len(&self, l: usize) -> u64 {
        self.len[l]
    }

    #[inline]
    pub fn is_empty(&self, l: usize) -> bool {
        self.len[l] == 0
    }

    /// Pages on any list.
    pub fn total(&self) -> u64 {
        self.len.iter().sum()
    }

    /// The list a page is on.
    #[inline]
    pub fn list_of(&self, p: PageId) -> Option<usize> {
        match self.link.get(p.0 as usize) {
            Some(l) if l.list != NO_LIST => Some(l.list as usize),
            _ => None,
        }
    }

    /// Whether the per-page table reaches `p` (it may have been linked).
    #[inline]
    pub fn reaches(&self, p: PageId) -> bool {
        p.0 < self.link.len() as u64
    }

    #[inline]
    pub fn front(&self, l: usize) -> Option<PageId> {
        let h = self.head[l];
        (h != NIL).then_some(PageId(h as u64))
    }

    /// The page after `p` on its list.
    #[inline]
    pub fn next(&self, p: PageId) -> Option<PageId> {
        let n = self.link.get(p.0 as usize)?.next;
        (n != NIL).then_some(PageId(n as u64))
    }

    fn ensure(&mut self, i: u32) {
        let i = i as usize;
        if i >= self.link.len() {
            self.link.resize(i + 1, UNLINKED);
        }
    }

    /// Append `p` to list `l`, taking it off any list it is on.
    pub fn push_back(&mut self, l: usize, p: PageId) {
        let i = idx(p);
        self.remove(p);
        self.ensure(i);
        self.link[i as usize] = Link {
            prev: self.tail[l],
            next: NIL,
            list: l as u8,
        };
        self.attach_at_tail(l, i, i, 1);
    }

    /// Make `first..=last` (`n` pages, already linked to each other, `first`'s `prev` the
    /// list's tail) the end of list `l`.
    fn attach_at_tail(&mut self, l: usize, first: u32, last: u32, n: u64) {
        let t = self.tail[l];
        if t == NIL {
            self.head[l] = first;
        } else {
            self.link[t as usize].next = first;
        }
        self.tail[l] = last;
        self.len[l] += n;
    }

    /// Append pages `first..first + count` to list `l` in page order, taking each off any list
    /// it is on: the same as pushing them one by one, in one pass when none of them has been
    /// linked before (a first touch).
    pub fn push_back_run(&mut self, l: usize, first: PageId, count: u64) {
        if count == 0 {
            return;
        }
        let end = first.0 + count;
        if first.0 < self.link.len() as u64 {
            for p in first.0..end {
                self.push_back(l, PageId(p));
            }
            return;
        }
        let (a, last) = (idx(first), idx(PageId(end - 1)));
        self.link.resize(a as usize, UNLINKED);
        let t = self.tail[l];
        self.link.extend((a..=last).map(|i| Link {
            prev: if i == a { t } else { i - 1 },
            next: if i == last { NIL } else { i + 1 },
            list: l as u8,
        }));
        self.attach_at_tail(l, a, last, count);
    }

    /// Put `p` first on list `l`, taking it off any list it is on.
    pub fn push_front(&mut self, l: usize, p: PageId) {
        let i = idx(p);
        self.remove(p);
        self.ensure(i);
        let h = self.head[l];
        self.link[i as usize] = Link {
            prev: NIL,
            next: h,
            list: l as u8,
        };
        if h == NIL {
            self.tail[l] = i;
        } else {
            self.link[h as usize].prev = i;
        }
        self.head[l] = i;
        self.len[l] += 1;
    }

    /// Take `p` off its list; returns the list it was on.
    pub fn remove(&mut self, p: PageId) -> Option<usize> {
        let i = p.0 as usize;
        let Link { prev, next, list } = *self.link.get(i)?;
        if list == NO_LIST {
            return None;
        }
        let l = list as usize;
        if prev == NIL {
            self.head[l] = next;
        } else {
            self.link[prev as usize].next = next;
        }
        if next == NIL {
            self.tail[l] = prev;
        } else {
            self.link[next as usize].prev = prev;
        }
        self.link[i] = UNLINKED;
        self.len[l] -= 1;
        Some(l)
    }

    pub fn pop_front(&mut self, l: usize) -> Option<PageId> {
        let p = self.front(l)?;
        self.remove(p);
        Some(p)
    }

    /// The pages of list `l`, first to last.
    pub fn iter(&self, l: usize) -> impl Iterator<Item = PageId> + '_ {
        let mut cur = self.head[l];
        std::iter::from_fn(move || {
            if cur == NIL {
                return None;
            }
            let p = PageId(cur as u64);
            cur = self.link[cur as usize].next;
            Some(p)
        })
    }

    /// Memory held by the per-page links and the lists' heads, for overhead reports.
    pub fn bytes(&self) -> usize {
        self.link.capacity() * std::mem::size_of::<Link>() + self.head.len() * PER_LIST as usize
    }

    /// Bytes `lists` lists over `pages` pages take: what [`PageLists::reserve`] allocates.
    pub const fn bytes_for(pages: u64, lists: usize) -> u64 {
        bytes_of::<Link>(pages) + lists as u64 * PER_LIST
    }

    /// Allocate the links of `pages` pages up front, fallibly.
    pub fn reserve(&mut self, pages: u64, what: &str) -> tierkit_core::Result<()> {
        // ids below NIL: NIL marks the end of a list
        memory::check_page_ids(pages, NIL as u64, what)?;
        memory::reserve_exact(&mut self.link, pages, what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pages(l: &PageLists, list: usize) -> Vec<u64> {
        l.iter(list).map(|p| p.0).collect()
    }

    #[test]
    fn a_page_space_past_32_bit_ids_is_refused_not_a_panic() {
        let mut l = PageLists::new(2);
        let e = l.reserve(1 << 32, "the test's lists").unwrap_err();
        assert!(
            e.to_string()
                .contains("the test's lists index pages in 32 bits"),
            "{e}"
        );
        assert!(l.reserve(1000, "the test's lists").is_ok());
    }

    #[test]
    fn fifo_order_and_moves() {
        let mut l = PageLists::new(2);
        for i in [5, 1, 9] {
            l.push_back(0, PageId(i));
        }
        assert_eq!(pages(&l, 0), vec![5, 1, 9]);
        l.push_back(1, PageId(1));
        assert_eq!(pages(&l, 0), vec![5, 9]);
        assert_eq!(l.list_of(PageId(1)), Some(1));
        l.push_front(0, PageId(1));
        assert_eq!(pages(&l, 0), vec![1, 5, 9]);
        assert_eq!(l.pop_front(0), Some(PageId(1)));
        assert_eq!(l.remove(PageId(9)), Some(0));
        assert_eq!(l.remove(PageId(9)), None);
        assert_eq!(pages(&l, 0), vec![5]);
        assert_eq!((l.len(0), l.len(1), l.total()), (1, 0, 1));
        assert_eq!(l.list_of(PageId(100)), None);
    }

    proptest! {
        /// The lists agree with a plain model under any sequence of operations.
        #[test]
        fn matches_a_vec_model(ops in proptest::collection::vec((0u8..5, 0u64..24, 0usize..3, 1u64..6), 0..200)) {
            let mut l = PageLists::new(3);
            let mut model: Vec<Vec<u64>> = vec![Vec::new(); 3];
            for (op, p, list, n) in ops {
                let span = if op == 4 { p..p + n } else { p..p + 1 };
                for m in model.iter_mut() {
                    if op != 3 {
                        m.retain(|x| !span.contains(x));
                    }
                }
                match op {
                    0 => { l.push_back(list, PageId(p)); model[list].push(p); }
                    1 => { l.push_front(list, PageId(p)); model[list].insert(0, p); }
                    2 => { l.remove(PageId(p)); }
                    4 => { l.push_back_run(list, PageId(p), n); model[list].extend(span); }
                    _ => {
                        let got = l.pop_front(list).map(|x| x.0);
                        let want = if model[list].is_empty() { None } else { Some(model[list].remove(0)) };
                        prop_assert_eq!(got, want);
                    }
                }
                for (i, m) in model.iter().enumerate() {
                    prop_assert_eq!(&pages(&l, i), m);
                    prop_assert_eq!(l.len(i), m.len() as u64);
                }
            }
        }
    }
}
