//! Intrusive doubly-linked page lists kept in dense vectors.
//!
//! A [`PageLists`] holds a fixed number of lists (HeMem's per-tier hot and cold lists, MEMTIS's
//! per-tier histogram bins) over dense page ids. Every page is on at most one list; push, pop,
//! remove and move are O(1) and allocate nothing once the per-page table has grown to the
//! largest page id. Iteration order is insertion order, so decisions built on it are
//! deterministic. A page's links take 8 bytes while page ids fit 29 bits (2 TiB of 4 KiB pages)
//! and there are at most 62 lists, 9 otherwise.

use tierkit_core::memory;
use tierkit_core::PageId;

const NIL: u32 = u32::MAX;
/// Bytes of one list's head, tail and length.
const PER_LIST: u64 = 16;
const NO_LIST: u8 = u8::MAX;

/// A page's place: the pages before and after it (`NIL`: none) and its list (`NO_LIST`: none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// 9 bytes, not 12: packed (the form for more pages or lists than [`Links::Compact`] holds).
#[derive(Clone, Copy, Debug)]
#[repr(C, packed)]
struct FullLink {
    prev: u32,
    next: u32,
    list: u8,
}

impl From<Link> for FullLink {
    #[inline]
    fn from(Link { prev, next, list }: Link) -> Self {
        FullLink { prev, next, list }
    }
}

impl From<FullLink> for Link {
    #[inline]
    fn from(FullLink { prev, next, list }: FullLink) -> Self {
        Link { prev, next, list }
    }
}

/// Bits of a page id in a compact link word; the all-ones value is `NIL`.
const ID_BITS: u32 = 29;
const ID_MASK: u64 = (1 << ID_BITS) - 1;
/// Bits of the list in a compact link word; the all-ones value is `NO_LIST`.
const LIST_MASK: u64 = (1 << (64 - 2 * ID_BITS)) - 1;
/// Pages a compact table can index (ids below its `NIL`) and lists it can name.
const COMPACT_PAGES: u64 = ID_MASK;
const COMPACT_LISTS: usize = LIST_MASK as usize;

/// The per-page links, in 8 bytes a page while the page ids fit 29 bits and there are at most
/// 63 lists (the previous and next pages in 29 bits each, the list in 6), in 9 otherwise. A
/// compact table that meets a page id past its range widens itself first; either form reads
/// back every link as it was set.
#[derive(Clone, Debug)]
enum Links {
    Compact(Vec<u64>),
    Full(Vec<FullLink>),
}

#[inline]
fn enc_id(v: u32) -> u64 {
    if v == NIL {
        ID_MASK
    } else {
        debug_assert!((v as u64) < ID_MASK);
        v as u64
    }
}

#[inline]
fn dec_id(w: u64) -> u32 {
    let v = w & ID_MASK;
    if v == ID_MASK {
        NIL
    } else {
        v as u32
    }
}

#[inline]
fn enc(l: Link) -> u64 {
    let list = if l.list == NO_LIST {
        LIST_MASK
    } else {
        l.list as u64
    };
    enc_id(l.prev) | enc_id(l.next) << ID_BITS | list << (2 * ID_BITS)
}

#[inline]
fn dec(w: u64) -> Link {
    let list = (w >> (2 * ID_BITS)) & LIST_MASK;
    Link {
        prev: dec_id(w),
        next: dec_id(w >> ID_BITS),
        list: if list == LIST_MASK {
            NO_LIST
        } else {
            list as u8
        },
    }
}

impl Links {
    fn for_lists(lists: usize) -> Self {
        if lists < COMPACT_LISTS {
            Links::Compact(Vec::new())
        } else {
            Links::Full(Vec::new())
        }
    }

    /// Bytes a page of the form `pages` pages on `lists` lists take.
    const fn width(pages: u64, lists: usize) -> u64 {
        if lists < COMPACT_LISTS && pages <= COMPACT_PAGES {
            std::mem::size_of::<u64>() as u64
        } else {
            std::mem::size_of::<FullLink>() as u64
        }
    }

    #[inline]
    fn len(&self) -> usize {
        match self {
            Links::Compact(v) => v.len(),
            Links::Full(v) => v.len(),
        }
    }

    fn capacity_bytes(&self) -> usize {
        match self {
            Links::Compact(v) => v.capacity() * std::mem::size_of::<u64>(),
            Links::Full(v) => v.capacity() * std::mem::size_of::<FullLink>(),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> Link {
        match self {
            Links::Compact(v) => dec(v[i]),
            Links::Full(v) => v[i].into(),
        }
    }

    #[inline]
    fn set(&mut self, i: usize, l: Link) {
        match self {
            Links::Compact(v) => v[i] = enc(l),
            Links::Full(v) => v[i] = l.into(),
        }
    }

    #[inline]
    fn set_prev(&mut self, i: usize, p: u32) {
        match self {
            Links::Compact(v) => v[i] = (v[i] & !ID_MASK) | enc_id(p),
            Links::Full(v) => v[i].prev = p,
        }
    }

    #[inline]
    fn set_next(&mut self, i: usize, n: u32) {
        match self {
            Links::Compact(v) => v[i] = (v[i] & !(ID_MASK << ID_BITS)) | enc_id(n) << ID_BITS,
            Links::Full(v) => v[i].next = n,
        }
    }

    /// Make room for page ids up to `last` in the present form: a compact table widens first
    /// when `last` is past its range.
    fn cover(&mut self, last: u32) {
        if last as u64 >= COMPACT_PAGES {
            self.widen();
        }
    }

    /// To 9 bytes a page, keeping every link.
    fn widen(&mut self) {
        if let Links::Compact(v) = self {
            let full = v.iter().map(|&w| dec(w).into()).collect();
            *self = Links::Full(full);
        }
    }

    /// Grow to `n` pages, the new ones unlinked.
    fn resize(&mut self, n: usize) {
        match self {
            Links::Compact(v) => v.resize(n, enc(UNLINKED)),
            Links::Full(v) => v.resize(n, UNLINKED.into()),
        }
    }

    fn extend(&mut self, it: impl Iterator<Item = Link>) {
        match self {
            Links::Compact(v) => v.extend(it.map(enc)),
            Links::Full(v) => v.extend(it.map(FullLink::from)),
        }
    }

    fn reserve(&mut self, pages: u64, what: &str) -> tierkit_core::Result<()> {
        match self {
            Links::Compact(v) => memory::reserve_exact(v, pages, what),
            Links::Full(v) => memory::reserve_exact(v, pages, what),
        }
    }
}

/// A fixed set of FIFO lists over dense page ids.
#[derive(Clone, Debug)]
pub struct PageLists {
    link: Links,
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
            link: Links::for_lists(lists),
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

    /// Page `p`'s links, if the per-page table reaches it.
    #[inline]
    fn link_of(&self, p: PageId) -> Option<Link> {
        let i = p.0 as usize;
        (i < self.link.len()).then(|| self.link.get(i))
    }

    /// The list a page is on.
    #[inline]
    pub fn list_of(&self, p: PageId) -> Option<usize> {
        let l = self.link_of(p)?.list;
        (l != NO_LIST).then_some(l as usize)
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
        // an unlisted page's `next` may hold its aux value
        let l = self.link_of(p)?;
        (l.list != NO_LIST && l.next != NIL).then_some(PageId(l.next as u64))
    }

    fn ensure(&mut self, i: u32) {
        self.link.cover(i);
        let i = i as usize;
        if i >= self.link.len() {
            self.link.resize(i + 1);
        }
    }

    /// Append `p` to list `l`, taking it off any list it is on.
    pub fn push_back(&mut self, l: usize, p: PageId) {
        let i = idx(p);
        self.remove(p);
        self.ensure(i);
        self.link.set(
            i as usize,
            Link {
                prev: self.tail[l],
                next: NIL,
                list: l as u8,
            },
        );
        self.attach_at_tail(l, i, i, 1);
    }

    /// Make `first..=last` (`n` pages, already linked to each other, `first`'s `prev` the
    /// list's tail) the end of list `l`.
    fn attach_at_tail(&mut self, l: usize, first: u32, last: u32, n: u64) {
        let t = self.tail[l];
        if t == NIL {
            self.head[l] = first;
        } else {
            self.link.set_next(t as usize, first);
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
        self.link.cover(last);
        self.link.resize(a as usize);
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
        self.link.set(
            i as usize,
            Link {
                prev: NIL,
                next: h,
                list: l as u8,
            },
        );
        if h == NIL {
            self.tail[l] = i;
        } else {
            self.link.set_prev(h as usize, i);
        }
        self.head[l] = i;
        self.len[l] += 1;
    }

    /// Take `p` off its list; returns the list it was on.
    pub fn remove(&mut self, p: PageId) -> Option<usize> {
        let i = p.0 as usize;
        let Link { prev, next, list } = self.link_of(p)?;
        if list == NO_LIST {
            return None;
        }
        let l = list as usize;
        if prev == NIL {
            self.head[l] = next;
        } else {
            self.link.set_next(prev as usize, next);
        }
        if next == NIL {
            self.tail[l] = prev;
        } else {
            self.link.set_prev(next as usize, prev);
        }
        // off the list, the page keeps it as its home (see [`PageLists::home_of`])
        self.link.set(
            i,
            Link {
                prev: list as u32,
                next: NIL,
                list: NO_LIST,
            },
        );
        self.len[l] -= 1;
        Some(l)
    }

    /// The list `p` is on, or for a page on none, the one it was last taken off (or that
    /// [`PageLists::set_home`] gave it); `None` for a page never listed or sent nowhere. A
    /// page's home lets a user derive what the list stands for (the LRU: a page's tier) without
    /// keeping it again beside the links: an unlisted page's links are free to hold it.
    #[inline]
    pub fn home_of(&self, p: PageId) -> Option<usize> {
        let Link { prev, list, .. } = self.link_of(p)?;
        if list != NO_LIST {
            Some(list as usize)
        } else {
            (prev != NIL).then_some(prev as usize)
        }
    }

    /// Set the home of `p`, which is on no list (`None`: no home).
    pub fn set_home(&mut self, p: PageId, home: Option<usize>) {
        let lists = self.head.len();
        self.update_unlisted(p, |l| {
            l.prev = home.map_or(NIL, |h| {
                assert!(h < lists, "home {h} is not a list");
                h as u32
            })
        });
    }

    /// Change the links of `p`, which is on no list (its home and aux value live there).
    fn update_unlisted(&mut self, p: PageId, f: impl FnOnce(&mut Link)) {
        let i = idx(p);
        self.ensure(i);
        let mut l = self.link.get(i as usize);
        assert!(l.list == NO_LIST, "page {} is on list {}", p.0, l.list);
        f(&mut l);
        self.link.set(i as usize, l);
    }

    /// A value kept with `p` while it is on no list (`None`: none; cleared when it is listed).
    #[inline]
    pub fn aux(&self, p: PageId) -> Option<u32> {
        let l = self.link_of(p)?;
        (l.list == NO_LIST && l.next != NIL).then_some(l.next)
    }

    /// Keep `v` with `p`, which is on no list: below 2^29 - 1 (the compact links' range).
    pub fn set_aux(&mut self, p: PageId, v: Option<u32>) {
        self.update_unlisted(p, |l| {
            l.next = v.map_or(NIL, |v| {
                assert!((v as u64) < COMPACT_PAGES, "aux value {v} out of range");
                v
            })
        });
    }

    /// Make the per-page table reach `p` (unlisted, no home).
    pub fn cover(&mut self, p: PageId) {
        self.ensure(idx(p));
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
            cur = self.link.get(cur as usize).next;
            Some(p)
        })
    }

    /// Memory held by the per-page links and the lists' heads, for overhead reports.
    pub fn bytes(&self) -> usize {
        self.link.capacity_bytes() + self.head.len() * PER_LIST as usize
    }

    /// Bytes `lists` lists over `pages` pages take: what [`PageLists::reserve`] allocates.
    pub const fn bytes_for(pages: u64, lists: usize) -> u64 {
        pages.saturating_mul(Links::width(pages, lists)) + lists as u64 * PER_LIST
    }

    /// Allocate the links of `pages` pages up front, fallibly.
    pub fn reserve(&mut self, pages: u64, what: &str) -> tierkit_core::Result<()> {
        // ids below NIL: NIL marks the end of a list
        memory::check_page_ids(pages, NIL as u64, what)?;
        if let Some(last) = pages.checked_sub(1) {
            self.link.cover(last as u32);
        }
        self.link.reserve(pages, what)
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
    fn links_take_8_bytes_a_page_up_to_2_pow_29_pages_and_62_lists_and_9_beyond() {
        assert_eq!(PageLists::bytes_for(1000, 5), 8 * 1000 + 5 * PER_LIST);
        assert_eq!(
            PageLists::bytes_for(COMPACT_PAGES, 62),
            8 * COMPACT_PAGES + 62 * PER_LIST
        );
        assert_eq!(
            PageLists::bytes_for(COMPACT_PAGES + 1, 5),
            9 * (COMPACT_PAGES + 1) + 5 * PER_LIST
        );
        assert_eq!(PageLists::bytes_for(10, 63), 9 * 10 + 63 * PER_LIST);
        let mut l = PageLists::new(5);
        l.reserve(1000, "the test's lists").unwrap();
        assert!(matches!(l.link, Links::Compact(_)));
        assert!(matches!(PageLists::new(63).link, Links::Full(_)));
        // every field's extremes survive the compact word
        for link in [
            UNLINKED,
            Link {
                prev: 0,
                next: (COMPACT_PAGES - 1) as u32,
                list: 61,
            },
            Link {
                prev: (COMPACT_PAGES - 1) as u32,
                next: NIL,
                list: 0,
            },
        ] {
            assert_eq!(dec(enc(link)), link);
        }
    }

    #[test]
    fn an_unlisted_page_keeps_its_home_and_an_aux_value_until_it_is_listed() {
        for wide in [false, true] {
            let mut l = PageLists::new(4);
            if wide {
                l.link.widen();
            }
            assert_eq!((l.home_of(PageId(7)), l.aux(PageId(7))), (None, None));
            l.push_back(2, PageId(7));
            l.push_back(2, PageId(8));
            assert_eq!(l.home_of(PageId(7)), Some(2));
            assert_eq!(l.remove(PageId(7)), Some(2));
            assert_eq!(
                (l.list_of(PageId(7)), l.home_of(PageId(7))),
                (None, Some(2))
            );
            l.set_aux(PageId(7), Some(3));
            l.set_home(PageId(7), Some(1));
            assert_eq!((l.home_of(PageId(7)), l.aux(PageId(7))), (Some(1), Some(3)));
            assert_eq!(l.next(PageId(7)), None);
            // the list it was on is intact
            assert_eq!(pages(&l, 2), vec![8]);
            l.push_front(0, PageId(7));
            assert_eq!((l.home_of(PageId(7)), l.aux(PageId(7))), (Some(0), None));
            l.remove(PageId(7));
            l.set_home(PageId(7), None);
            assert_eq!((l.home_of(PageId(7)), l.aux(PageId(7))), (None, None));
            l.cover(PageId(20));
            assert_eq!(l.home_of(PageId(20)), None);
        }
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
        fn matches_a_vec_model(ops in proptest::collection::vec((0u8..6, 0u64..24, 0usize..3, 1u64..6), 0..200)) {
            let mut l = PageLists::new(3);
            let mut model: Vec<Vec<u64>> = vec![Vec::new(); 3];
            // the list each unlisted page was last taken off
            let mut home: rustc_hash::FxHashMap<u64, usize> = Default::default();
            for (op, p, list, n) in ops {
                let span = if op == 4 { p..p + n } else { p..p + 1 };
                for m in model.iter_mut() {
                    if op != 3 && op != 5 {
                        m.retain(|x| !span.contains(x));
                    }
                }
                match op {
                    0 => { l.push_back(list, PageId(p)); model[list].push(p); }
                    1 => { l.push_front(list, PageId(p)); model[list].insert(0, p); }
                    2 => {
                        let was = l.list_of(PageId(p));
                        l.remove(PageId(p));
                        if let Some(w) = was {
                            home.insert(p, w);
                        }
                    }
                    4 => { l.push_back_run(list, PageId(p), n); model[list].extend(span); }
                    // the 9-byte form from here on, as a page id past 2^29 - 2 would make it
                    5 => { l.link.widen(); }
                    _ => {
                        let got = l.pop_front(list).map(|x| x.0);
                        let want = if model[list].is_empty() { None } else { Some(model[list].remove(0)) };
                        prop_assert_eq!(got, want);
                        if let Some(w) = want {
                            home.insert(w, list);
                        }
                    }
                }
                for (i, m) in model.iter().enumerate() {
                    prop_assert_eq!(&pages(&l, i), m);
                    prop_assert_eq!(l.len(i), m.len() as u64);
                }
                for q in 0..32u64 {
                    let on = model.iter().position(|m| m.contains(&q));
                    prop_assert_eq!(l.list_of(PageId(q)), on);
                    prop_assert_eq!(l.home_of(PageId(q)), on.or(home.get(&q).copied()));
                }
            }
        }
    }
}
