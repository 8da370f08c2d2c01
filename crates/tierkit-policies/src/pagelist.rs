//! Intrusive doubly-linked page lists kept in dense vectors.
//!
//! A [`PageLists`] holds a fixed number of lists (HeMem's per-tier hot and cold lists, MEMTIS's
//! per-tier histogram bins) over dense page ids. Every page is on at most one list; push, pop,
//! remove and move are O(1) and allocate nothing once the per-page table has grown to the
//! largest page id. Iteration order is insertion order, so decisions built on it are
//! deterministic. A page's links take 8 bytes while page ids fit 29 bits (2 TiB of 4 KiB pages)
//! and there are at most 62 lists, 9 otherwise. Lists made [`PageLists::with_tags`] also keep a
//! byte of the user's with each page (the LRU's page flags): in the same 8 bytes while page ids
//! fit 25 bits (128 GiB of 4 KiB pages), in a byte of its own beyond.

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
/// Bits of a page id in a tagged link word, whose top byte is the page's tag.
const TAGGED_ID_BITS: u32 = 25;
/// Bits of the list in a link word; the all-ones value is `NO_LIST`.
const LIST_BITS: u32 = 6;
const LIST_MASK: u64 = (1 << LIST_BITS) - 1;
const TAG_SHIFT: u32 = 2 * TAGGED_ID_BITS + LIST_BITS;
const TAG_MASK: u64 = 0xff << TAG_SHIFT;
const _: () = assert!(2 * ID_BITS + LIST_BITS == 64 && TAG_SHIFT == 56);
/// Pages a compact (tagged) table can index (ids below its `NIL`) and lists it can name.
const COMPACT_PAGES: u64 = id_mask(ID_BITS);
const TAGGED_PAGES: u64 = id_mask(TAGGED_ID_BITS);
const COMPACT_LISTS: usize = LIST_MASK as usize;

const fn id_mask(bits: u32) -> u64 {
    (1 << bits) - 1
}

/// The per-page links, in 8 bytes a page while the page ids fit 29 bits and there are at most
/// 62 lists (the previous and next pages in 29 bits each, the list in 6), in 9 otherwise; with
/// tags, 8 bytes with the tag while the ids fit 25 bits (25, 25, 6 and the tag's 8), the
/// untagged forms and a byte beside them otherwise. A table that meets a page id past its range
/// widens itself first; every form reads back every link (and tag) as it was set.
#[derive(Clone, Debug)]
enum Links {
    Tagged(Vec<u64>),
    Compact(Vec<u64>),
    Full(Vec<FullLink>),
}

#[inline]
fn enc_id<const B: u32>(v: u32) -> u64 {
    if v == NIL {
        id_mask(B)
    } else {
        debug_assert!((v as u64) < id_mask(B));
        v as u64
    }
}

#[inline]
fn dec_id<const B: u32>(w: u64) -> u32 {
    let v = w & id_mask(B);
    if v == id_mask(B) {
        NIL
    } else {
        v as u32
    }
}

/// A link as the low `2B + 6` bits of a word: previous page, next page, list.
#[inline]
fn enc<const B: u32>(l: Link) -> u64 {
    let list = if l.list == NO_LIST {
        LIST_MASK
    } else {
        l.list as u64
    };
    enc_id::<B>(l.prev) | enc_id::<B>(l.next) << B | list << (2 * B)
}

#[inline]
fn dec<const B: u32>(w: u64) -> Link {
    let list = (w >> (2 * B)) & LIST_MASK;
    Link {
        prev: dec_id::<B>(w),
        next: dec_id::<B>(w >> B),
        list: if list == LIST_MASK {
            NO_LIST
        } else {
            list as u8
        },
    }
}

impl Links {
    fn for_lists(lists: usize, tags: bool) -> Self {
        if lists >= COMPACT_LISTS {
            Links::Full(Vec::new())
        } else if tags {
            Links::Tagged(Vec::new())
        } else {
            Links::Compact(Vec::new())
        }
    }

    /// Bytes a page of the form `pages` pages on `lists` lists take, its tag included.
    const fn width(pages: u64, lists: usize, tags: bool) -> u64 {
        if tags && lists < COMPACT_LISTS && pages <= TAGGED_PAGES {
            std::mem::size_of::<u64>() as u64
        } else if lists < COMPACT_LISTS && pages <= COMPACT_PAGES {
            std::mem::size_of::<u64>() as u64 + tags as u64
        } else {
            std::mem::size_of::<FullLink>() as u64 + tags as u64
        }
    }

    #[inline]
    fn len(&self) -> usize {
        match self {
            Links::Tagged(v) | Links::Compact(v) => v.len(),
            Links::Full(v) => v.len(),
        }
    }

    fn capacity_bytes(&self) -> usize {
        match self {
            Links::Tagged(v) | Links::Compact(v) => v.capacity() * std::mem::size_of::<u64>(),
            Links::Full(v) => v.capacity() * std::mem::size_of::<FullLink>(),
        }
    }

    #[inline]
    fn get(&self, i: usize) -> Link {
        match self {
            Links::Tagged(v) => dec::<TAGGED_ID_BITS>(v[i]),
            Links::Compact(v) => dec::<ID_BITS>(v[i]),
            Links::Full(v) => v[i].into(),
        }
    }

    /// Set a page's links; a tagged word keeps its tag.
    #[inline]
    fn set(&mut self, i: usize, l: Link) {
        match self {
            Links::Tagged(v) => v[i] = (v[i] & TAG_MASK) | enc::<TAGGED_ID_BITS>(l),
            Links::Compact(v) => v[i] = enc::<ID_BITS>(l),
            Links::Full(v) => v[i] = l.into(),
        }
    }

    #[inline]
    fn set_prev(&mut self, i: usize, p: u32) {
        match self {
            Links::Tagged(v) => {
                v[i] = (v[i] & !TAGGED_PAGES) | enc_id::<TAGGED_ID_BITS>(p);
            }
            Links::Compact(v) => v[i] = (v[i] & !COMPACT_PAGES) | enc_id::<ID_BITS>(p),
            Links::Full(v) => v[i].prev = p,
        }
    }

    #[inline]
    fn set_next(&mut self, i: usize, n: u32) {
        match self {
            Links::Tagged(v) => {
                v[i] = (v[i] & !(TAGGED_PAGES << TAGGED_ID_BITS))
                    | enc_id::<TAGGED_ID_BITS>(n) << TAGGED_ID_BITS;
            }
            Links::Compact(v) => {
                v[i] = (v[i] & !(COMPACT_PAGES << ID_BITS)) | enc_id::<ID_BITS>(n) << ID_BITS
            }
            Links::Full(v) => v[i].next = n,
        }
    }

    /// Whether a page id (or a value kept in the links) of `last` is past the present form's
    /// range.
    #[inline]
    fn exceeded_by(&self, last: u32) -> bool {
        match self {
            Links::Tagged(_) => last as u64 >= TAGGED_PAGES,
            Links::Compact(_) => last as u64 >= COMPACT_PAGES,
            Links::Full(_) => false,
        }
    }

    /// To the next wider form, keeping every link; the tags of a tagged table are returned,
    /// for the caller to keep beside the links.
    #[must_use]
    fn widen(&mut self) -> Option<Vec<u8>> {
        match self {
            Links::Tagged(v) => {
                let tags = v.iter().map(|&w| (w >> TAG_SHIFT) as u8).collect();
                let c = v
                    .iter()
                    .map(|&w| enc::<ID_BITS>(dec::<TAGGED_ID_BITS>(w)))
                    .collect();
                *self = Links::Compact(c);
                Some(tags)
            }
            Links::Compact(v) => {
                let full = v.iter().map(|&w| dec::<ID_BITS>(w).into()).collect();
                *self = Links::Full(full);
                None
            }
            Links::Full(_) => None,
        }
    }

    /// Grow to `n` pages, the new ones unlinked (and with a tag of 0).
    fn resize(&mut self, n: usize) {
        match self {
            Links::Tagged(v) => v.resize(n, enc::<TAGGED_ID_BITS>(UNLINKED)),
            Links::Compact(v) => v.resize(n, enc::<ID_BITS>(UNLINKED)),
            Links::Full(v) => v.resize(n, UNLINKED.into()),
        }
    }

    fn extend(&mut self, it: impl Iterator<Item = Link>) {
        match self {
            Links::Tagged(v) => v.extend(it.map(enc::<TAGGED_ID_BITS>)),
            Links::Compact(v) => v.extend(it.map(enc::<ID_BITS>)),
            Links::Full(v) => v.extend(it.map(FullLink::from)),
        }
    }

    fn reserve(&mut self, pages: u64, what: &str) -> tierkit_core::Result<()> {
        match self {
            Links::Tagged(v) | Links::Compact(v) => memory::reserve_exact(v, pages, what),
            Links::Full(v) => memory::reserve_exact(v, pages, what),
        }
    }
}

/// A fixed set of FIFO lists over dense page ids.
#[derive(Clone, Debug)]
pub struct PageLists {
    link: Links,
    /// Whether each page keeps a tag byte ([`PageLists::with_tags`]).
    tagged: bool,
    /// The tags, beside the links, once a tagged table has widened past [`Links::Tagged`].
    tags: Vec<u8>,
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
        Self::make(lists, false)
    }

    /// `lists` empty lists whose pages each keep a byte of the user's, its tag
    /// ([`PageLists::tag`]): 0 for a page the table has just reached, and left alone by every
    /// list operation.
    pub fn with_tags(lists: usize) -> Self {
        Self::make(lists, true)
    }

    fn make(lists: usize, tagged: bool) -> Self {
        assert!(lists < NO_LIST as usize);
        PageLists {
            link: Links::for_lists(lists, tagged),
            tagged,
            tags: Vec::new(),
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

    /// How many pages the per-page table reaches (ids below it).
    pub fn reach(&self) -> usize {
        self.link.len()
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

    #[inline]
    fn ensure(&mut self, i: u32) {
        if i as usize >= self.link.len() {
            self.cover_links(i);
            self.link.resize(i as usize + 1);
            self.sync_tags();
        }
    }

    /// Make room for page ids (and values kept in the links) up to `last`: the links widen
    /// first when `last` is past their form's range, a tagged table's tags moving beside them.
    fn cover_links(&mut self, last: u32) {
        while self.link.exceeded_by(last) {
            if let Some(tags) = self.link.widen() {
                self.tags = tags;
            }
        }
    }

    /// One step wider (the tests' way to the forms large page ids make).
    #[cfg(test)]
    fn widen_once(&mut self) {
        if let Some(tags) = self.link.widen() {
            self.tags = tags;
        }
    }

    /// The tags beside the links reach as far as the links.
    fn sync_tags(&mut self) {
        if self.tagged && !matches!(self.link, Links::Tagged(_)) {
            self.tags.resize(self.link.len(), 0);
        }
    }

    /// The tag of a page the table reaches.
    #[inline]
    pub fn tag_at(&self, i: usize) -> u8 {
        debug_assert!(self.tagged);
        match &self.link {
            Links::Tagged(v) => (v[i] >> TAG_SHIFT) as u8,
            _ => self.tags[i],
        }
    }

    /// The tag of `p`, if the table reaches it.
    #[inline]
    pub fn tag(&self, p: PageId) -> Option<u8> {
        let i = p.0 as usize;
        (i < self.link.len()).then(|| self.tag_at(i))
    }

    /// Set the tag of a page the table reaches.
    #[inline]
    pub fn set_tag_at(&mut self, i: usize, t: u8) {
        debug_assert!(self.tagged);
        match &mut self.link {
            Links::Tagged(v) => v[i] = (v[i] & !TAG_MASK) | (t as u64) << TAG_SHIFT,
            _ => self.tags[i] = t,
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
        self.cover_links(last);
        self.link.resize(a as usize);
        let t = self.tail[l];
        self.link.extend((a..=last).map(|i| Link {
            prev: if i == a { t } else { i - 1 },
            next: if i == last { NIL } else { i + 1 },
            list: l as u8,
        }));
        self.sync_tags();
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

    /// Keep `v` with `p`, which is on no list: below 2^29 - 1 (the compact links' range; a
    /// value past a tagged table's 2^25 - 2 widens it first).
    pub fn set_aux(&mut self, p: PageId, v: Option<u32>) {
        if let Some(v) = v {
            assert!((v as u64) < COMPACT_PAGES, "aux value {v} out of range");
            self.cover_links(v);
        }
        self.update_unlisted(p, |l| l.next = v.unwrap_or(NIL));
    }

    /// Make the per-page table reach `p` (unlisted, no home, tag 0).
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
        self.link.capacity_bytes() + self.tags.capacity() + self.head.len() * PER_LIST as usize
    }

    /// Bytes `lists` lists over `pages` pages take: what [`PageLists::reserve`] allocates.
    pub const fn bytes_for(pages: u64, lists: usize) -> u64 {
        pages.saturating_mul(Links::width(pages, lists, false)) + lists as u64 * PER_LIST
    }

    /// Bytes `lists` lists with tags over `pages` pages take ([`PageLists::with_tags`]).
    pub const fn bytes_for_tagged(pages: u64, lists: usize) -> u64 {
        pages.saturating_mul(Links::width(pages, lists, true)) + lists as u64 * PER_LIST
    }

    /// Allocate the links of `pages` pages up front, fallibly.
    pub fn reserve(&mut self, pages: u64, what: &str) -> tierkit_core::Result<()> {
        // ids below NIL: NIL marks the end of a list
        memory::check_page_ids(pages, NIL as u64, what)?;
        if let Some(last) = pages.checked_sub(1) {
            self.cover_links(last as u32);
        }
        self.link.reserve(pages, what)?;
        if self.tagged && !matches!(self.link, Links::Tagged(_)) {
            memory::reserve_exact(&mut self.tags, pages, what)?;
        }
        Ok(())
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
            assert_eq!(dec::<ID_BITS>(enc::<ID_BITS>(link)), link);
        }
    }

    #[test]
    fn tagged_links_take_8_bytes_a_page_up_to_2_pow_25_pages_then_a_tag_byte_beside_them() {
        // bytes a page with the tag, by the page count
        for (pages, width) in [
            (1000, 8),
            (TAGGED_PAGES, 8),
            (TAGGED_PAGES + 1, 9),
            (COMPACT_PAGES + 1, 10),
        ] {
            let want = width * pages + 32 * PER_LIST;
            assert_eq!(
                PageLists::bytes_for_tagged(pages, 32),
                want,
                "{pages} pages"
            );
        }
        let mut l = PageLists::with_tags(32);
        l.reserve(1000, "the test's lists").unwrap();
        assert!(matches!(l.link, Links::Tagged(_)));
        assert_eq!(l.bytes(), 8 * 1000 + 32 * PER_LIST as usize);
        // every field's extremes, and the tag's, survive the tagged word
        for (link, tag) in [
            (UNLINKED, 0xff),
            (
                Link {
                    prev: 0,
                    next: (TAGGED_PAGES - 1) as u32,
                    list: 61,
                },
                0x80,
            ),
            (
                Link {
                    prev: (TAGGED_PAGES - 1) as u32,
                    next: NIL,
                    list: 0,
                },
                1,
            ),
        ] {
            let mut t = PageLists::with_tags(62);
            t.cover(PageId(0));
            t.set_tag_at(0, tag);
            t.link.set(0, link);
            assert_eq!((t.link.get(0), t.tag_at(0)), (link, tag));
            t.link.set_prev(0, 3);
            t.link.set_next(0, 4);
            assert_eq!(t.tag_at(0), tag);
        }
    }

    #[test]
    fn a_page_id_past_the_tagged_range_moves_the_tags_beside_the_links() {
        let mut l = PageLists::with_tags(3);
        for i in [5, 1, 9] {
            l.push_back(0, PageId(i));
            l.set_tag_at(i as usize, i as u8 + 100);
        }
        l.push_back(1, PageId(2));
        l.remove(PageId(2));
        l.set_aux(PageId(2), Some(7));
        assert!(matches!(l.link, Links::Tagged(_)));
        let big = PageId(TAGGED_PAGES);
        l.push_back(0, big);
        l.set_tag_at(big.0 as usize, 42);
        assert!(matches!(l.link, Links::Compact(_)));
        assert_eq!(pages(&l, 0), vec![5, 1, 9, TAGGED_PAGES]);
        assert_eq!((l.home_of(PageId(2)), l.aux(PageId(2))), (Some(1), Some(7)));
        let tags: Vec<_> = [5, 1, 9, 2, TAGGED_PAGES].map(|i| l.tag(PageId(i))).into();
        assert_eq!(tags, [Some(105), Some(101), Some(109), Some(0), Some(42)]);
        assert_eq!(
            l.bytes(),
            l.link.capacity_bytes() + l.tags.capacity() + 3 * PER_LIST as usize
        );
        // an aux value past the tagged range widens too
        let mut l = PageLists::with_tags(3);
        l.push_back(0, PageId(4));
        l.set_tag_at(4, 9);
        l.remove(PageId(4));
        l.set_aux(PageId(4), Some(TAGGED_PAGES as u32));
        assert!(matches!(l.link, Links::Compact(_)));
        assert_eq!(l.aux(PageId(4)), Some(TAGGED_PAGES as u32));
        assert_eq!((l.home_of(PageId(4)), l.tag(PageId(4))), (Some(0), Some(9)));
        // and on to the 9-byte links (as a page id past 2^29 - 2 would), the tags still beside
        l.widen_once();
        assert!(matches!(l.link, Links::Full(_)));
        l.push_back(1, PageId(5000));
        assert_eq!((l.tag(PageId(4)), l.tag(PageId(5000))), (Some(9), Some(0)));
        assert_eq!(l.tags.len(), 5001);
    }

    #[test]
    fn an_unlisted_page_keeps_its_home_and_an_aux_value_until_it_is_listed() {
        for wide in [false, true] {
            let mut l = PageLists::new(4);
            if wide {
                l.widen_once();
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
        fn matches_a_vec_model(
            tagged in any::<bool>(),
            ops in proptest::collection::vec((0u8..7, 0u64..24, 0usize..3, 1u64..6), 0..200),
        ) {
            let mut l = if tagged { PageLists::with_tags(3) } else { PageLists::new(3) };
            let mut tags: rustc_hash::FxHashMap<u64, u8> = Default::default();
            let mut model: Vec<Vec<u64>> = vec![Vec::new(); 3];
            // the list each unlisted page was last taken off
            let mut home: rustc_hash::FxHashMap<u64, usize> = Default::default();
            for (op, p, list, n) in ops {
                let span = if op == 4 { p..p + n } else { p..p + 1 };
                for m in model.iter_mut() {
                    if op != 3 && op < 5 {
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
                    // the next wider form from here on, as a page id past its range would make it
                    5 => { l.widen_once(); }
                    6 if tagged => {
                        let t = (p * 37 + n) as u8;
                        l.cover(PageId(p));
                        l.set_tag_at(p as usize, t);
                        tags.insert(p, t);
                    }
                    6 => {}
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
                    if tagged {
                        // no list operation touches a tag
                        prop_assert_eq!(l.tag(PageId(q)).unwrap_or(0), tags.get(&q).copied().unwrap_or(0));
                    }
                }
            }
        }
    }
}
