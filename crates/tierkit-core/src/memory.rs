//! Memory known before it is allocated.
//!
//! Every table that grows with the number of pages says how many bytes it takes for a page
//! space (`bytes_for`), next to the code that allocates it, and allocates that much up front
//! with fallible allocation (`try_reserve_exact`). A backend can then add up a run's memory
//! before building anything, refuse a run that cannot fit, and report a failed allocation as an
//! error ([`Error::OutOfMemory`]) instead of aborting the process.

use crate::error::{Error, Result};

/// The pages a backend manages: page ids `0..pages`, and each tier's capacity in pages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageSpace {
    pub pages: u64,
    pub capacity: Vec<u64>,
}

impl PageSpace {
    pub fn new(pages: u64, capacity: Vec<u64>) -> Self {
        PageSpace { pages, capacity }
    }

    /// Pages the fast tier can hold (at most the whole page space).
    pub fn fast_pages(&self) -> u64 {
        self.capacity
            .first()
            .map_or(self.pages, |&c| c.min(self.pages))
    }
}

/// Bytes of `n` values of `T` (saturating).
pub const fn bytes_of<T>(n: u64) -> u64 {
    n.saturating_mul(std::mem::size_of::<T>() as u64)
}

/// Buckets of a hash map (`std`'s hashbrown) with room for `n` entries: 8/7 of them rounded up
/// to a power of two (4 or 8 for small maps).
pub const fn hash_buckets(n: u64) -> u64 {
    if n == 0 {
        0
    } else if n < 4 {
        4
    } else if n < 8 {
        8
    } else {
        (n.saturating_mul(8) / 7).next_power_of_two()
    }
}

/// Bytes of a hash map from `K` to `V` with room for `n` entries (what `try_reserve(n)` on an
/// empty map allocates): an entry and a control byte per bucket.
pub const fn hash_map_bytes<K, V>(n: u64) -> u64 {
    hash_buckets(n).saturating_mul(std::mem::size_of::<(K, V)>() as u64 + 1)
}

/// Bytes a hash map whose `capacity()` is `cap` holds (the inverse of hashbrown's bucket count).
pub const fn hash_map_capacity_bytes<K, V>(cap: u64) -> u64 {
    let buckets = if cap == 0 {
        0
    } else if cap < 8 {
        (cap + 1).next_power_of_two()
    } else {
        cap / 7 * 8
    };
    buckets.saturating_mul(std::mem::size_of::<(K, V)>() as u64 + 1)
}

fn to_usize(n: u64, bytes: u64, what: &str) -> Result<usize> {
    usize::try_from(n).map_err(|_| Error::OutOfMemory {
        what: what.to_string(),
        bytes,
    })
}

/// Refuse a page space of more than `max` pages for a table that indexes pages in 32 bits
/// ([`Error::TooManyPages`] naming `what`), before anything is allocated.
pub fn check_page_ids(pages: u64, max: u64, what: &str) -> Result<()> {
    if pages > max {
        return Err(Error::TooManyPages {
            what: what.into(),
            pages,
            max,
        });
    }
    Ok(())
}

/// Grow `v`'s capacity to exactly `n` values (if it is smaller), fallibly: a failed allocation
/// is [`Error::OutOfMemory`] naming `what`, not an abort.
pub fn reserve_exact<T>(v: &mut Vec<T>, n: u64, what: &str) -> Result<()> {
    let bytes = bytes_of::<T>(n);
    let n = to_usize(n, bytes, what)?;
    if n > v.capacity() {
        let fresh = v.capacity() == 0;
        v.try_reserve_exact(n - v.len())
            .map_err(|_| Error::OutOfMemory {
                what: what.to_string(),
                bytes,
            })?;
        if fresh {
            advise_huge(v);
        }
    }
    Ok(())
}

/// Tables at least this large are backed by transparent huge pages where the system allows it.
pub const HUGE_TABLE_BYTES: usize = 4 << 20;

/// Ask Linux to back the 2 MiB-aligned part of `v`'s allocation with transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`, which takes effect where THP is `always` or `madvise`), before
/// its pages are first touched. Per-page tables are read at random, one page id each: with 4
/// KiB pages nearly every such read also misses the TLB (a 4 MB table spans 1024 of them), with
/// 2 MiB pages two entries cover it. Only the memory's backing changes, never a value; a
/// failure (no THP in the kernel, a small or unaligned allocation) leaves the table as it was.
/// Measured in BENCHMARKS.md (simulator speed).
pub fn advise_huge<T>(v: &Vec<T>) {
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_TABLE_BYTES {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let lo = start.next_multiple_of(HUGE);
        let hi = (start + bytes) / HUGE * HUGE;
        if hi > lo {
            // SAFETY: [lo, hi) lies inside `v`'s own allocation, which stays mapped while `v`
            // lives; MADV_HUGEPAGE only changes how the kernel backs those pages, never their
            // contents, and an error is harmless (the advice is simply not taken).
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// Allocations at least this large are mapped from the kernel on their own (glibc's
/// `M_MMAP_THRESHOLD`), and given back to it when freed; see [`settle_allocator`].
pub const MMAP_THRESHOLD_BYTES: usize = 1 << 20;

/// Fix glibc's mmap threshold at [`MMAP_THRESHOLD_BYTES`] for the process, once.
///
/// glibc raises its threshold to the size of any mapped block that is freed (up to 32 MiB).
/// The reference run's per-page tables are such blocks, so after it every vector up to 32 MiB
/// (the hint-fault queues, which grow by doubling and drain again) came from the heap, where
/// each doubling left the old block behind as a hole: about a byte a simulated page of peak
/// RSS at 64 GiB (BENCHMARKS.md, "The allocator's threshold"). Setting the threshold turns the
/// adjustment off. Only where memory comes from changes, never a value; elsewhere than glibc it
/// does nothing.
pub fn settle_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only sets an allocator parameter; glibc serialises it with its
            // own arena locks, and a refusal (return 0) leaves the default, which is harmless.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES as libc::c_int);
            }
        });
    }
}

/// `vec![value; n]`, fallibly.
pub fn filled<T: Clone>(n: u64, value: T, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    reserve_exact(&mut v, n, what)?;
    v.resize(n as usize, value);
    Ok(v)
}

/// Room for `additional` more values in `v`, fallibly, growing as `Vec` does (amortized).
pub fn reserve<T>(v: &mut Vec<T>, additional: u64, what: &str) -> Result<()> {
    let bytes = bytes_of::<T>(v.len() as u64 + additional);
    let n = to_usize(additional, bytes, what)?;
    v.try_reserve(n).map_err(|_| Error::OutOfMemory {
        what: what.to_string(),
        bytes,
    })
}

/// A byte count for people: `512 B`, `3.0 KiB`, `12.4 GiB`, `1.95 TiB`.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v} {}", UNITS[u])
    } else if v < 10.0 {
        format!("{v:.2} {}", UNITS[u])
    } else if v < 100.0 {
        format!("{v:.1} {}", UNITS[u])
    } else {
        format!("{v:.0} {}", UNITS[u])
    }
}

/// Hints the CPU to bring `x`'s cache line in (nothing where there is no such instruction).
#[inline(always)]
pub fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is only a hint to the cache: it reads nothing the program sees, writes
    // nothing and cannot fault, and `x` is a live reference anyway. SSE, which has it, is part
    // of the x86_64 baseline. Measured in BENCHMARKS.md (trace replay, simulator speed).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((x as *const T).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_exact_sets_the_capacity_and_keeps_the_values() {
        let mut v = vec![1u32, 2];
        reserve_exact(&mut v, 100, "test").unwrap();
        assert_eq!(v.capacity(), 100);
        assert_eq!(v, [1, 2]);
        reserve_exact(&mut v, 10, "test").unwrap();
        assert_eq!(v.capacity(), 100, "never shrinks");
        let f = filled(7, 3u8, "test").unwrap();
        assert_eq!((f.len(), f.capacity()), (7, 7));
    }

    #[test]
    fn an_impossible_allocation_is_an_error_not_an_abort() {
        let mut v: Vec<u64> = Vec::new();
        let e = reserve_exact(&mut v, u64::MAX / 16, "the test table").unwrap_err();
        assert!(
            matches!(&e, Error::OutOfMemory { what, .. } if what == "the test table"),
            "{e}"
        );
        assert!(e.to_string().contains("the test table"), "{e}");
        assert!(filled(u64::MAX / 2, 0u32, "x").is_err());
        assert!(reserve(&mut v, u64::MAX / 16, "x").is_err());
    }

    #[test]
    fn hash_map_bytes_match_the_map_std_allocates() {
        for n in [1u64, 3, 5, 8, 100, 512, 1000, 70_000] {
            let mut m: rustc_hash::FxHashMap<u64, u8> = Default::default();
            m.try_reserve(n as usize).unwrap();
            assert_eq!(
                hash_map_capacity_bytes::<u64, u8>(m.capacity() as u64),
                hash_map_bytes::<u64, u8>(n),
                "{n} entries, capacity {}",
                m.capacity()
            );
            assert!(m.capacity() as u64 >= n);
        }
    }

    #[test]
    fn bytes_read_well() {
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(fmt_bytes(3 << 10), "3 KiB");
        assert_eq!(fmt_bytes(6 << 30), "6 GiB");
        assert_eq!(fmt_bytes((6 << 30) + (1 << 29)), "6.50 GiB");
        assert_eq!(fmt_bytes(2000 << 30), "1.95 TiB");
        assert_eq!(fmt_bytes(13_300_000_000), "12.4 GiB");
        assert_eq!(bytes_of::<u32>(10), 40);
        assert_eq!(bytes_of::<u64>(u64::MAX), u64::MAX);
    }
}
