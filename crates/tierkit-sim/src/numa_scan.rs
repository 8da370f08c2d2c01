//! Linux's NUMA-balancing scanner, per process, as kernel/sched/fair.c runs it (v6.x): the
//! period formulas (`task_nr_scan_windows`, `task_scan_min`, `task_scan_max`,
//! `task_scan_start`), the start delay (`init_numa_balancing`, `task_tick_numa`), the
//! per-window budgets of `task_numa_work` (pages with PTE updates, and `virtpages` = 8x for the
//! address space walked) and the period adaptation of `update_task_scan_period`, which
//! `task_numa_placement` applies once per completed scan pass (`numa_scan_seq`) when a fault is
//! accounted. In tiering mode a fault that leaves its page on a slow (not top-tier) node returns
//! from `task_numa_fault` before any accounting; one whose page was promoted is accounted on the
//! top-tier node it moved to, private and not local, so promotions double the period
//! (`Machine::account_numa_fault`).
//!
//! The machine owns the page table, so it walks the pages ([`crate::machine::Machine`]); this
//! file holds the arithmetic and the per-process state, in the kernel's units (ms, base pages).

use tierkit_core::NumaScan;

/// MAX_SCAN_WINDOW: at most 2560 MB scanned per second of scan period (fair.c).
pub const MAX_SCAN_WINDOW_MB: u64 = 2560;
/// NUMA_PERIOD_SLOTS and NUMA_PERIOD_THRESHOLD of update_task_scan_period.
const NUMA_PERIOD_SLOTS: i64 = 10;
const NUMA_PERIOD_THRESHOLD: i64 = 7;
/// Linux counts the scan budgets in base pages.
const BASE_PAGE: u64 = 4096;

/// task_nr_scan_windows: RSS rounded up to whole scan windows of scan_size_mb (an empty RSS
/// counts as one window).
pub fn nr_scan_windows(rss_bytes: u64, scan_size_mb: u64) -> u64 {
    let window = (scan_size_mb.max(1)) << 20;
    let rss = if rss_bytes == 0 { window } else { rss_bytes };
    rss.div_ceil(window)
}

/// task_scan_min in ms: max(floor, scan_period_min / windows) with floor = 1000 / (2560 /
/// scan_size) (integer arithmetic, as the kernel's unsigned ints).
pub fn scan_min_ms(s: &NumaScan, rss_bytes: u64) -> u64 {
    let size = s.scan_size_mb.max(1);
    let windows = if size < MAX_SCAN_WINDOW_MB {
        MAX_SCAN_WINDOW_MB / size
    } else {
        1
    };
    let floor = 1000 / windows;
    let scan = s.scan_period_min_ms as u64 / nr_scan_windows(rss_bytes, size);
    floor.max(scan)
}

/// task_scan_max in ms: scan_period_max / windows, at least task_scan_min (no numa_group
/// scaling: tierkit's processes do not share memory with each other).
pub fn scan_max_ms(s: &NumaScan, rss_bytes: u64) -> u64 {
    let smin = scan_min_ms(s, rss_bytes);
    let smax = s.scan_period_max_ms as u64 / nr_scan_windows(rss_bytes, s.scan_size_mb);
    smin.max(smax)
}

/// task_scan_start: task_scan_min (numa_group scaling again left out).
pub fn scan_start_ms(s: &NumaScan, rss_bytes: u64) -> u64 {
    scan_min_ms(s, rss_bytes)
}

/// The per-window budgets of task_numa_work in bytes: (pages, virtpages).
pub fn window_budgets(s: &NumaScan) -> (u64, u64) {
    let pages = (s.scan_size_mb << 20) / BASE_PAGE * BASE_PAGE;
    let share = s.budget_share.clamp(0.0, 1.0);
    (((pages as f64) * share) as u64, pages * 8)
}

/// One accounted hint fault (task_numa_fault's arguments): base pages, whether the same task
/// faulted on the page last (private), whether the page is on the faulting CPU's node (local),
/// whether its migration failed.
#[derive(Clone, Copy, Debug)]
pub struct Fault {
    pub pages: u64,
    pub private: bool,
    pub local: bool,
    pub failed: bool,
}

/// One process's scanner: when its next window runs, its period, where it resumes, its scan
/// sequence and the faults accounted since the last placement.
#[derive(Clone, Debug, Default)]
pub struct ScanState {
    /// Time of the next window (ns); None until the process has started.
    pub next_ns: Option<f64>,
    /// p->numa_scan_period in ms; 0 until the first window (task_tick_numa's first tick).
    pub period_ms: u64,
    /// Page offset inside the process where the next window starts (mm->numa_scan_offset).
    pub cursor: u32,
    /// mm->numa_scan_seq: completed passes over the address space.
    pub seq: u64,
    /// p->numa_scan_seq: the pass the last placement ran in.
    pub placement_seq: u64,
    /// numa_faults_locality: [remote, local, migration failed], in base pages.
    pub locality: [u64; 3],
    /// Faults by shared (0) and private (1) access since the last placement, in base pages.
    pub faults: [u64; 2],
    /// Windows run, and update_task_scan_period calls.
    pub windows: u64,
    pub updates: u64,
}

impl ScanState {
    /// task_numa_fault for an accounted fault (top-tier page, or any page outside tiering
    /// mode): placement first (once per scan pass, as task_numa_placement checks
    /// numa_scan_seq), then this fault's counts. `now_ns` is needed when the period doubles
    /// (mm->numa_next_scan moves out).
    pub fn account_fault(&mut self, s: &NumaScan, rss_bytes: u64, f: Fault, now_ns: f64) {
        if self.placement_seq != self.seq {
            self.placement_seq = self.seq;
            self.update_period(s, rss_bytes, now_ns);
        }
        if f.failed {
            self.locality[2] += f.pages;
        }
        self.faults[f.private as usize] += f.pages;
        self.locality[f.local as usize] += f.pages;
    }

    /// update_task_scan_period: slow down (double, up to task_scan_max) when there were no
    /// local or shared faults or a migration failed; otherwise move by slots of a tenth of the
    /// period, up when the faults are mostly private or local (ratio >= 7/10), down otherwise.
    pub fn update_period(&mut self, s: &NumaScan, rss_bytes: u64, now_ns: f64) {
        if self.period_ms == 0 {
            return;
        }
        self.updates += 1;
        let [remote, local, failed] = self.locality.map(|x| x as i64);
        let [shared, private] = self.faults.map(|x| x as i64);
        self.faults = [0; 2];
        if local + shared == 0 || failed > 0 {
            self.period_ms = scan_max_ms(s, rss_bytes).min(self.period_ms << 1);
            let next = now_ns + self.period_ms as f64 * 1e6;
            self.next_ns = Some(self.next_ns.map_or(next, |n| n.max(next)));
            self.locality = [0; 3];
            return;
        }
        let period_slot = (self.period_ms as i64 + NUMA_PERIOD_SLOTS - 1) / NUMA_PERIOD_SLOTS;
        let lr_ratio = local * NUMA_PERIOD_SLOTS / (local + remote);
        let ps_ratio = private * NUMA_PERIOD_SLOTS / (private + shared).max(1);
        let diff = if ps_ratio >= NUMA_PERIOD_THRESHOLD {
            (ps_ratio - NUMA_PERIOD_THRESHOLD).max(1) * period_slot
        } else if lr_ratio >= NUMA_PERIOD_THRESHOLD {
            (lr_ratio - NUMA_PERIOD_THRESHOLD).max(1) * period_slot
        } else {
            -(NUMA_PERIOD_THRESHOLD - lr_ratio.max(ps_ratio)) * period_slot
        };
        let (lo, hi) = (scan_min_ms(s, rss_bytes), scan_max_ms(s, rss_bytes));
        self.period_ms = (self.period_ms as i64 + diff).clamp(lo as i64, hi as i64) as u64;
        self.locality = [0; 3];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn linux_periods_for_small_and_large_processes() {
        let s = NumaScan::default();
        // 24 GiB: 96 windows; 1000/96 = 10 ms is under the 100 ms floor (2560/256 = 10 windows
        // a second): a 256 MB window every 100 ms, 2.56 GB/s.
        assert_eq!(nr_scan_windows(24 * GIB, 256), 96);
        assert_eq!(scan_min_ms(&s, 24 * GIB), 100);
        assert_eq!(scan_max_ms(&s, 24 * GIB), 60_000 / 96);
        // 1 GiB: 4 windows, 250 ms each: the whole RSS once per scan_period_min.
        assert_eq!(scan_start_ms(&s, GIB), 250);
        assert_eq!(scan_max_ms(&s, GIB), 15_000);
        // Empty or tiny RSS: one window a second.
        assert_eq!(scan_min_ms(&s, 0), 1000);
        assert_eq!(scan_min_ms(&s, 4096), 1000);
        // scan_size 64 MB: floor 1000 / 40 = 25 ms.
        let small = NumaScan {
            scan_size_mb: 64,
            ..s
        };
        assert_eq!(scan_min_ms(&small, 24 * GIB), 25);
        assert_eq!(window_budgets(&s), (256 << 20, 2048 << 20));
    }

    #[test]
    fn period_adapts_like_update_task_scan_period() {
        let s = NumaScan::default();
        let rss = GIB; // min 250, max 15000
        let mut st = ScanState {
            period_ms: 250,
            ..Default::default()
        };
        // All private, local faults: +3 slots of 25 ms.
        st.locality = [0, 100, 0];
        st.faults = [0, 100];
        st.update_period(&s, rss, 0.0);
        assert_eq!(st.period_ms, 250 + 3 * 25);
        // Mostly shared and remote: faster, clamped at task_scan_min.
        st.locality = [90, 10, 0];
        st.faults = [90, 10];
        st.update_period(&s, rss, 0.0);
        assert_eq!(st.period_ms, 250);
        // No local or shared faults: doubles, and the next window moves out.
        st.locality = [10, 0, 0];
        st.faults = [0, 10];
        st.next_ns = Some(1e6);
        st.update_period(&s, rss, 5e9);
        assert_eq!(st.period_ms, 500);
        assert_eq!(st.next_ns, Some(5e9 + 500e6));
        // Placement runs once per scan pass.
        let f = Fault {
            pages: 1,
            private: true,
            local: true,
            failed: false,
        };
        let n = st.updates;
        st.account_fault(&s, rss, f, 0.0);
        assert_eq!(st.updates, n, "same pass as the last placement");
        st.seq += 1;
        st.account_fault(&s, rss, f, 0.0);
        st.account_fault(&s, rss, f, 0.0);
        assert_eq!(st.updates, n + 1);
    }
}
