//! Finding a target's present pages and their nodes each interval: `/proc/PID/maps` for the
//! managed VMAs, `/proc/PID/pagemap` for which pages are present (bit 63) and soft-dirty
//! (bit 55), then `move_pages(2)` queries in batches for the node of each present page.

use std::io;
use std::os::unix::fs::FileExt;

use crate::mech::{self, Vma, PAGE_SIZE};

pub const PM_PRESENT: u64 = 1 << 63;
pub const PM_SOFT_DIRTY: u64 = 1 << 55;
const CHUNK: u64 = 1 << 16;

/// Read `count` pagemap entries of `pid` (0: ourselves) from virtual page `vpn`.
pub fn pagemap_entries(pid: i32, vpn: u64, count: u64) -> io::Result<Vec<u64>> {
    let path = if pid == 0 {
        "/proc/self/pagemap".to_string()
    } else {
        format!("/proc/{pid}/pagemap")
    };
    let f = std::fs::File::open(path)?;
    let mut out = Vec::with_capacity(count as usize);
    let mut buf = vec![0u8; (CHUNK.min(count) * 8) as usize];
    let mut done = 0;
    while done < count {
        let n = CHUNK.min(count - done);
        let b = &mut buf[..(n * 8) as usize];
        f.read_exact_at(b, (vpn + done) * 8)?;
        out.extend(
            b.chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap())),
        );
        done += n;
    }
    Ok(out)
}

/// One present page of a target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Present {
    pub vpn: u64,
    pub node: i32,
    pub soft_dirty: bool,
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
/// `status` and `addrs` are scratch buffers kept by the caller between intervals.
pub fn scan(
    pid: i32,
    batch: usize,
    addrs: &mut Vec<u64>,
    status: &mut Vec<i32>,
) -> Result<Vec<Present>, ScanError> {
    let maps =
        std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|e| classify("maps", e))?;
    let vmas: Vec<Vma> =
        mech::parse_maps(&maps).map_err(|e| ScanError::Failed(format!("/proc/{pid}/maps: {e}")))?;
    let mut present = Vec::new();
    for v in vmas.iter().filter(|v| v.managed()) {
        let first = v.start / PAGE_SIZE;
        let entries = pagemap_entries(pid, first, v.pages()).map_err(|e| classify("pagemap", e))?;
        for (i, e) in entries.iter().enumerate() {
            if e & PM_PRESENT != 0 {
                present.push(Present {
                    vpn: first + i as u64,
                    node: -1,
                    soft_dirty: e & PM_SOFT_DIRTY != 0,
                });
            }
        }
    }
    for chunk in present.chunks_mut(batch.max(1)) {
        addrs.clear();
        addrs.extend(chunk.iter().map(|p| p.vpn * PAGE_SIZE));
        status.clear();
        status.resize(chunk.len(), 0);
        mech::move_pages(pid, addrs, None, status, 0)
            .map_err(|e| classify("move_pages query", e))?;
        for (p, &s) in chunk.iter_mut().zip(status.iter()) {
            p.node = s;
        }
    }
    // pages unmapped between the pagemap read and the query read -ENOENT/-EFAULT: drop them
    present.retain(|p| p.node >= 0);
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
        let pages = scan(pid, 16, &mut a, &mut s).unwrap();
        let ours: Vec<_> = pages
            .iter()
            .filter(|p| p.vpn >= start && p.vpn < start + n as u64 - 1)
            .collect();
        assert_eq!(ours.len(), n - 1);
        assert!(ours.iter().all(|p| p.node >= 0));
        assert!(pages.windows(2).all(|w| w[0].vpn < w[1].vpn));
        std::hint::black_box(&v);
        assert!(matches!(
            scan(i32::MAX - 3, 16, &mut a, &mut s),
            Err(ScanError::Gone)
        ));
    }
}
