//! What tierkit's fuzz targets share: a counting allocator, so each target can check that one
//! input's peak heap stays within a bound proportional to the input, and in-memory sinks for
//! the importers. libFuzzer itself checks for panics (an abort) and, with `-rss_limit_mb`, the
//! memory that C code (zstd, libFuzzer) allocates.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The system allocator, counting the bytes live and their peak.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let live = LIVE.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(live, Relaxed);
}

// SAFETY: every call is forwarded to `System` with the same arguments; the counters are only
// bookkeeping.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        LIVE.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            if new >= l.size() {
                grew(new - l.size());
            } else {
                LIVE.fetch_sub(l.size() - new, Relaxed);
            }
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Run `f`; its result and the peak of the Rust heap while it ran, above what was live before.
pub fn peak_heap<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let base = LIVE.load(Relaxed);
    PEAK.store(base, Relaxed);
    let out = f();
    (out, PEAK.load(Relaxed).saturating_sub(base))
}

/// The allocation property: one input of `len` bytes may use at most `fixed + per_byte * len`
/// bytes of heap at once.
pub fn check_heap(target: &str, len: usize, peak: usize, fixed: usize, per_byte: usize) {
    let bound = fixed + per_byte * len;
    assert!(
        peak <= bound,
        "{target}: an input of {len} bytes used {peak} bytes of heap at its peak, above the \
         bound {fixed} + {per_byte} per input byte = {bound}"
    );
}

/// An in-memory output with a budget: writes past `budget` bytes fail, so an input that names
/// a huge address range (a DAMON region, which imports as one record per page) ends in a write
/// error instead of running for hours.
pub struct Budgeted {
    pub buf: std::io::Cursor<Vec<u8>>,
    pub budget: u64,
}

/// The message of a [`Budgeted`] output's error.
pub const OVER_BUDGET: &str = "fuzz output budget exhausted";

impl Budgeted {
    pub fn new(budget: u64) -> Budgeted {
        Budgeted {
            buf: std::io::Cursor::new(Vec::new()),
            budget,
        }
    }
}

impl Write for Budgeted {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.buf.position() + b.len() as u64 > self.budget {
            return Err(std::io::Error::other(OVER_BUDGET));
        }
        self.buf.write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for Budgeted {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.buf.seek(to)
    }
}

/// The importers' property: import `data` as `format`; no panic, heap within the bound, and an
/// error names the input (or, for the budget, the output), with its line for a parse error.
/// A successful import reads back as a valid trace with the records it reported.
pub fn import(target: &str, format: tierkit_sim::trace::import::Format, data: &[u8]) {
    use tierkit_sim::trace::{import, Reader, TraceError};
    const INPUT: &str = "fuzz-input";
    const OUTPUT: &str = "fuzz-output.tkt";
    // Records are written uncompressed (format version 1), so the budget bounds their number.
    const BUDGET: u64 = 4 << 20;
    let (res, peak) = peak_heap(|| {
        let raw: Box<dyn std::io::Read + Send> = Box::new(std::io::Cursor::new(data.to_vec()));
        let (inp, _) = import::wrap_input(INPUT, raw)?;
        import::import_into(format, INPUT, inp, Budgeted::new(BUDGET), 1, OUTPUT)
    });
    // Fixed: the input's buffers (1 MiB each for the raw and the decompressed stream), the
    // longest line (1 MiB), the output budget; damo JSON holds one snapshot's regions.
    check_heap(target, data.len(), peak, 16 << 20, 64);
    match res {
        Ok((st, out)) => {
            let bytes = out.buf.into_inner();
            let mut r = Reader::new(OUTPUT.into(), bytes.as_slice())
                .unwrap_or_else(|e| panic!("{target}: the imported trace does not read: {e}"));
            let mut n = 0u64;
            while let Some(_rec) = r
                .next_record()
                .unwrap_or_else(|e| panic!("{target}: the imported trace is corrupt: {e}"))
            {
                n += 1;
            }
            assert_eq!(
                n, st.records,
                "{target}: records read back != records imported"
            );
        }
        Err(TraceError::Io { path, msg }) if path == OUTPUT => {
            assert!(msg.contains(OVER_BUDGET), "{target}: write error: {msg}");
        }
        Err(e) => {
            let m = e.to_string();
            assert!(
                m.starts_with(&format!("{INPUT}: ")),
                "{target}: the error does not name its input: {m}"
            );
            if let TraceError::Parse { line, .. } = e {
                let lines = data.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
                // a compressed input has other lines; only a plain one is checked
                if import::Compression::sniff(data) == Ok(import::Compression::None)
                    && !data.starts_with(b"x")
                {
                    assert!(
                        line <= lines,
                        "{target}: error at line {line} of a {lines}-line input: {m}"
                    );
                }
            }
        }
    }
}
