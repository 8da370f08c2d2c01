//! Finding a target's present pages and their nodes each interval: `/proc/PID/maps` for the
//! managed VMAs, `/proc/PID/pagemap` for which pages are present (bit 63) and soft-dirty
//! (bit 55), then `move_pages(2)` queries in batches for the node of each present page.
//!
//! The queries are the scan's main cost (the kernel walks each page's VMA and page table). When
//! pagemap shows page frame numbers (bits 0-54; the kernel shows them only to CAP_SYS_ADMIN) a
//! page whose frame is the one it had at the last scan is still on the node it was on then, so
//! only new pages and pages whose frame changed (migrated by anyone, or replaced) are queried.

use std::io;
use std::os::unix::fs::FileExt;

use crate::mech::{self, Vma, PAGE_SIZE};

pub const PM_PRESENT: u64 = 1 << 63;
pub const PM_SOFT_DIRTY: u64 = 1 << 55;
/// The page frame number (0 when the kernel hides it from us).
pub const PM_PFN: u64 = (1 << 55) - 1;
const CHUNK: u64 = 1 << 16;

/// A target's `/proc/PID/pagemap`, opened once for all the stretches one scan reads.
pub struct Pagemap {
    file: std::fs::File,
    buf: Vec<u8>,
}

impl Pagemap {
    /// The pagemap of `pid` (0: ourselves).
    pub fn open(pid: i32) -> io::Result<Pagemap> {
        let path = if pid == 0 {
            "/proc/self/pagemap".to_string()
        } else {
            format!("/proc/{pid}/pagemap")
        };
        Ok(Pagemap {
            file: std::fs::File::open(path)?,
            buf: Vec::new(),
        })
    }

    /// `count` entries from virtual page `vpn`, in place of `out`'s contents.
    pub fn read(&mut self, vpn: u64, count: u64, out: &mut Vec<u64>) -> io::Result<()> {
        out.clear();
        out.reserve(count as usize);
        self.buf.resize((CHUNK.min(count) * 8) as usize, 0);
        let mut done = 0;
        while done < count {
            let n = CHUNK.min(count - done);
            let b = &mut self.buf[..(n * 8) as usize];
            self.file.read_exact_at(b, (vpn + done) * 8)?;
            out.extend(
                b.chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap())),
            );
            done += n;
        }
        Ok(())
    }
}

/// Read `count` pagemap entries of `pid` (0: ourselves) from virtual page `vpn`.
pub fn pagemap_entries(pid: i32, vpn: u64, count: u64) -> io::Result<Vec<u64>> {
    let mut out = Vec::new();
    Pagemap::open(pid)?.read(vpn, count, &mut out)?;
    Ok(out)
}

/// One present page of a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Present {
    pub vpn: u64,
    pub node: i32,
    pub soft_dirty: bool,
    /// Its page frame number, 0 when pagemap hides it.
    pub pfn: u64,
}

/// What the last scan of a target found, sorted by virtual page: (vpn, frame, node) per page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Known {
    pub vpns: Vec<u64>,
    pub pfns: Vec<u64>,
    pub nodes: Vec<i32>,
}

impl Known {
    pub fn push(&mut self, p: &Present) {
        self.vpns.push(p.vpn);
        self.pfns.push(p.pfn);
        self.nodes.push(p.node);
    }

    pub fn from_present(present: &[Present]) -> Known {
        Known {
            vpns: present.iter().map(|p| p.vpn).collect(),
            pfns: present.iter().map(|p| p.pfn).collect(),
            nodes: present.iter().map(|p| p.node).collect(),
        }
    }
}

/// How a scan learned its pages' nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Pages whose node was asked of the kernel (`move_pages` query).
    pub queried: u64,
    /// Pages whose frame had not changed since the last scan: node known without asking.
    pub reused: u64,
    /// Present pages whose frame pagemap did not show (no CAP_SYS_ADMIN).
    pub hidden_pfn: u64,
    /// Queried pages the target unmapped between the pagemap read and the query (dropped).
    pub gone: u64,
}

/// Why a scan of one target failed.
#[derive(Debug)]
pub enum ScanError {
    /// The process is gone (ESRCH, or its /proc entry vanished).
    Gone,
    /// Anything else, with the errno name and what failed.
    Failed(String),
}

fn classify(what: &str, e: io::Error) -> ScanError {
    match e.raw_os_error() {
        Some(libc::ESRCH) | Some(libc::ENOENT) => ScanError::Gone,
        // a zombie's pagemap reads as empty (EOF) and its maps as empty
        _ if e.kind() == io::ErrorKind::UnexpectedEof => ScanError::Gone,
        Some(n) => ScanError::Failed(format!("{what}: {} ({e})", mech::errno_name(n))),
        None => ScanError::Failed(format!("{what}: {e}")),
    }
}

/// Scan one target: the present pages of its managed VMAs with their nodes, in address order.
/// `status` and `addrs` are scratch buffers kept by the caller between intervals. With `known`
/// (the last scan's pages, and `reuse`), a page whose visible frame number is unchanged keeps its
/// node without a query.
pub fn scan(
    pid: i32,
    batch: usize,
    addrs: &mut Vec<u64>,
    status: &mut Vec<i32>,
    known: &Known,
    reuse: bool,
    stats: &mut ScanStats,
) -> Result<Vec<Present>, ScanError> {
    scan_ranges(pid, None, batch, addrs, status, known, reuse, stats)
}

/// Merge virtual page ranges `[start, end)`: sorted, overlapping and adjacent ones joined, empty
/// ones dropped.
pub fn merge_ranges(ranges: &mut Vec<(u64, u64)>) {
    ranges.retain(|r| r.0 < r.1);
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for &(a, b) in ranges.iter() {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    *ranges = out;
}

/// [`scan`] restricted to virtual page ranges `only` (sorted, disjoint: [`merge_ranges`]) where
/// they meet the managed VMAs: the targeted scan of the pages a telemetry source names. `None`
/// scans every managed VMA whole.
#[allow(clippy::too_many_arguments)]
pub fn scan_ranges(
    pid: i32,
    only: Option<&[(u64, u64)]>,
    batch: usize,
    addrs: &mut Vec<u64>,
    status: &mut Vec<i32>,
    known: &Known,
    reuse: bool,
    stats: &mut ScanStats,
) -> Result<Vec<Present>, ScanError> {
    let maps =
        std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|e| classify("maps", e))?;
    let vmas: Vec<Vma> =
        mech::parse_maps(&maps).map_err(|e| ScanError::Failed(format!("/proc/{pid}/maps: {e}")))?;
    // the stretches to read, in address order: whole VMAs, or the ranges' parts inside them
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for v in vmas.iter().filter(|v| v.managed()) {
        let (first, end) = (v.start / PAGE_SIZE, v.start / PAGE_SIZE + v.pages());
        match only {
            None => spans.push((first, end)),
            Some(rs) => {
                let i = rs.partition_point(|r| r.1 <= first);
                for &(a, b) in rs[i..].iter().take_while(|r| r.0 < end) {
                    spans.push((a.max(first), b.min(end)));
                }
            }
        }
    }
    let mut present = Vec::new();
    // the spans come in address order, so one cursor walks the last scan's pages alongside
    let mut k = 0usize;
    let mut ask: Vec<usize> = Vec::new();
    if spans.is_empty() {
        return Ok(present);
    }
    // one open of the pagemap for every stretch (a targeted scan reads hundreds of them)
    let mut pagemap = Pagemap::open(pid).map_err(|e| classify("pagemap", e))?;
    let mut entries = Vec::new();
    for &(first, end) in &spans {
        pagemap
            .read(first, end - first, &mut entries)
            .map_err(|e| classify("pagemap", e))?;
        if reuse {
            k += known.vpns[k..].partition_point(|&v| v < first);
        }
        for (i, e) in entries.iter().enumerate() {
            if e & PM_PRESENT == 0 {
                continue;
            }
            let vpn = first + i as u64;
            let pfn = e & PM_PFN;
            let mut node = -1;
            if pfn == 0 {
                stats.hidden_pfn += 1;
            } else if reuse {
                while k < known.vpns.len() && known.vpns[k] < vpn {
                    k += 1;
                }
                if known.vpns.get(k) == Some(&vpn) && known.pfns[k] == pfn && known.nodes[k] >= 0 {
                    node = known.nodes[k];
                }
            }
            if node < 0 {
                ask.push(present.len());
            }
            present.push(Present {
                vpn,
                node,
                soft_dirty: e & PM_SOFT_DIRTY != 0,
                pfn,
            });
        }
    }
    stats.reused += (present.len() - ask.len()) as u64;
    stats.queried += ask.len() as u64;
    for chunk in ask.chunks(batch.max(1)) {
        addrs.clear();
        addrs.extend(chunk.iter().map(|&i| present[i].vpn * PAGE_SIZE));
        status.clear();
        status.resize(chunk.len(), 0);
        mech::move_pages(pid, addrs, None, status, 0)
            .map_err(|e| classify("move_pages query", e))?;
        for (&i, &s) in chunk.iter().zip(status.iter()) {
            present[i].node = s;
        }
    }
    // pages unmapped between the pagemap read and the query read -ENOENT/-EFAULT: drop them
    let before = present.len();
    present.retain(|p| p.node >= 0);
    stats.gone += (before - present.len()) as u64;
    Ok(present)
}

/// Clear the soft-dirty bits of a target (`echo 4 > /proc/PID/clear_refs`).
pub fn clear_soft_dirty(pid: i32) -> io::Result<()> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "4")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_our_own_heap_pages() {
        let pid = std::process::id() as i32;
        let n = 64usize;
        let mut v = vec![0u8; n * PAGE_SIZE as usize];
        for i in 0..n {
            v[i * PAGE_SIZE as usize] = 1;
        }
        let start = v.as_ptr() as u64 / PAGE_SIZE + 1;
        let mut a = Vec::new();
        let mut s = Vec::new();
        let mut st = ScanStats::default();
        let pages = scan(pid, 16, &mut a, &mut s, &Known::default(), true, &mut st).unwrap();
        // every page was asked; those the test binary's other threads unmapped meanwhile (their
        // buffers freed between the pagemap read and the query) were dropped
        assert_eq!(st.queried, pages.len() as u64 + st.gone, "{st:?}");
        let ours: Vec<_> = pages
            .iter()
            .filter(|p| p.vpn >= start && p.vpn < start + n as u64 - 1)
            .collect();
        assert_eq!(ours.len(), n - 1);
        assert!(ours.iter().all(|p| p.node >= 0));
        assert!(pages.windows(2).all(|w| w[0].vpn < w[1].vpn));
        std::hint::black_box(&v);
        assert!(matches!(
            scan(
                i32::MAX - 3,
                16,
                &mut a,
                &mut s,
                &Known::default(),
                true,
                &mut st
            ),
            Err(ScanError::Gone)
        ));
    }

    #[test]
    fn ranges_merge_sorted_and_joined() {
        let mut r = vec![(10, 20), (5, 5), (30, 40), (15, 25), (25, 26), (0, 3)];
        merge_ranges(&mut r);
        assert_eq!(r, vec![(0, 3), (10, 26), (30, 40)]);
        let mut e: Vec<(u64, u64)> = vec![(4, 2)];
        merge_ranges(&mut e);
        assert!(e.is_empty());
    }

    /// A scan of some ranges finds exactly the pages a full scan finds in them.
    #[test]
    fn a_scan_of_ranges_is_the_full_scan_cut_to_them() {
        let pid = std::process::id() as i32;
        let n = 300usize;
        let mut v = vec![0u8; n * PAGE_SIZE as usize];
        for i in (0..n).step_by(3) {
            v[i * PAGE_SIZE as usize] = 1;
        }
        let start = (v.as_ptr() as u64).div_ceil(PAGE_SIZE);
        let ranges = vec![
            (start + 10, start + 50),
            (start + 100, start + 101),
            (start + 200, start + 290),
        ];
        let (mut a, mut s) = (Vec::new(), Vec::new());
        let mut st = ScanStats::default();
        let full = scan(pid, 64, &mut a, &mut s, &Known::default(), true, &mut st).unwrap();
        let mut st2 = ScanStats::default();
        let known = Known::from_present(&full);
        let part = scan_ranges(
            pid,
            Some(&ranges),
            64,
            &mut a,
            &mut s,
            &known,
            true,
            &mut st2,
        )
        .unwrap();
        std::hint::black_box(&v);
        let inside = |vpn: u64| ranges.iter().any(|r| r.0 <= vpn && vpn < r.1);
        let want: Vec<(u64, i32)> = full
            .iter()
            .filter(|p| inside(p.vpn))
            .map(|p| (p.vpn, p.node))
            .collect();
        let got: Vec<(u64, i32)> = part.iter().map(|p| (p.vpn, p.node)).collect();
        assert_eq!(got, want);
        // every third page of the buffer was touched: at least 13 + 0 + 30 of them in the
        // ranges (where the pattern starts depends on the buffer's offset in its first page)
        assert!(got.len() >= 43, "{}", got.len());
    }

    /// A second scan with the first one's pages asks again only for pages whose frame is not
    /// visible or has changed; the nodes it reports are the same as a full query's.
    #[test]
    fn unchanged_frames_are_not_queried_again() {
        let pid = std::process::id() as i32;
        let n = 256usize;
        let mut v = vec![0u8; n * PAGE_SIZE as usize];
        for i in 0..n {
            v[i * PAGE_SIZE as usize] = 1;
        }
        let (mut a, mut s) = (Vec::new(), Vec::new());
        let mut st1 = ScanStats::default();
        let first = scan(pid, 64, &mut a, &mut s, &Known::default(), true, &mut st1).unwrap();
        let known = Known::from_present(&first);
        let mut st2 = ScanStats::default();
        let second = scan(pid, 64, &mut a, &mut s, &known, true, &mut st2).unwrap();
        let mut full = ScanStats::default();
        let third = scan(pid, 64, &mut a, &mut s, &known, false, &mut full).unwrap();
        std::hint::black_box(&v);
        // same pages, same nodes as a scan that queries everything (a page present in one scan
        // and gone in the next is the test's own allocator at work: compare the common pages)
        let node_of = |ps: &[Present]| -> std::collections::BTreeMap<u64, i32> {
            ps.iter().map(|p| (p.vpn, p.node)).collect()
        };
        let (b, c) = (node_of(&second), node_of(&third));
        assert!(b
            .iter()
            .filter(|(k, _)| c.contains_key(k))
            .all(|(k, n)| c[k] == *n));
        assert_eq!(full.reused, 0);
        assert_eq!(full.queried, third.len() as u64 + full.gone, "{full:?}");
        if st2.hidden_pfn == 0 {
            // frames visible (CAP_SYS_ADMIN): the buffer's pages did not move, nothing re-asked
            let start = v.as_ptr() as u64 / PAGE_SIZE + 1;
            let ours = |p: &&Present| p.vpn >= start && p.vpn < start + n as u64 - 1;
            assert_eq!(second.iter().filter(ours).count(), n - 1);
            assert!(st2.reused >= (n - 1) as u64, "{st2:?}");
            // every page of the second scan was either reused or asked (a page asked and gone
            // by the query is dropped): exact whatever other test threads map between the
            // scans, where comparing with the first scan's count could race
            assert_eq!(
                st2.reused + st2.queried,
                second.len() as u64 + st2.gone,
                "{st1:?} {st2:?}"
            );
            // a page whose frame changed (migrated or replaced) is asked again
            let moved = Known {
                pfns: known.pfns.iter().map(|p| p ^ 1).collect(),
                ..known.clone()
            };
            let mut st4 = ScanStats::default();
            scan(pid, 64, &mut a, &mut s, &moved, true, &mut st4).unwrap();
            assert_eq!(st4.reused, 0, "{st4:?}");
        } else {
            // frames hidden: every page is asked, as before
            assert_eq!(st2.reused, 0);
        }
    }
}
