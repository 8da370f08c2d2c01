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
//! Linux 6.x scans VMA by VMA (`task_numa_work`'s loop, with the per-VMA state of `struct
//! vma_numab_state`); in the simulator a process's objects are its VMAs, in listing order. A VMA is
//! skipped as unsuitable when pinned (MPOL_BIND without MPOL_F_MOF: `vma_policy_mof`), for
//! `scan_delay_ms` after the scanner first meets it once the first pass is done
//! (NUMAB_SKIP_SCAN_DELAY), when this pass already scanned it (NUMAB_SKIP_SEQ_COMPLETED), and
//! when the thread running the window has not taken a hint fault in it within the last one or
//! two `VMA_PID_RESET_PERIOD`s (`vma_is_accessed`, NUMAB_SKIP_PID_INACTIVE) unless the VMA is in
//! its first two passes, the window starts inside it, or it has missed more passes than the
//! process has threads (6.10's starvation fix). A window that reaches the end with VMAs skipped
//! for their pids starts over and force-scans the first of them, then stops ("only force scan
//! within one VMA at a time"): so a process whose faults skip some of its VMAs needs one more
//! window per such VMA to finish a pass (measured in the guest: docs/validation.md section 1c).
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

/// hash_32(pid, ilog2(BITS_PER_LONG)) of include/linux/hash.h (GOLDEN_RATIO_32): the bit of a
/// VMA's `pids_active` words a task sets when it takes a hint fault there.
pub fn pid_bit(pid: u32) -> u64 {
    1u64 << (pid.wrapping_mul(0x61C8_8647) >> 26)
}

/// One VMA's `struct vma_numab_state` (kernel/sched/fair.c, include/linux/mm_types.h).
#[derive(Clone, Debug, Default)]
pub struct VmaScan {
    /// The scanner has met this VMA (numab_state allocated).
    pub init: bool,
    /// mm->numa_scan_seq when it was first met.
    pub start_scan_seq: u64,
    /// First met + scan_delay: no scan before (after the first pass).
    pub next_scan_ns: f64,
    /// When `pids_active` shifts next (every VMA_PID_RESET_PERIOD = 4 x scan_delay).
    pub pids_reset_ns: f64,
    /// Tasks that took hint faults here: [older period, current period].
    pub pids_active: [u64; 2],
    /// The pass that last finished scanning it (start_scan_seq - 1 when first met).
    pub prev_scan_seq: i64,
}

impl VmaScan {
    /// Allocate the state as task_numa_work does when it first meets the VMA.
    pub fn meet(&mut self, s: &NumaScan, seq: u64, now_ns: f64) {
        if self.init {
            return;
        }
        let delay = s.scan_delay_ms * 1e6;
        *self = VmaScan {
            init: true,
            start_scan_seq: seq,
            next_scan_ns: now_ns + delay,
            pids_reset_ns: now_ns + delay + 4.0 * delay,
            pids_active: [0; 2],
            prev_scan_seq: seq as i64 - 1,
        };
    }

    /// "RESET access PIDs regularly for old VMAs" (after the first pass).
    pub fn age_pids(&mut self, s: &NumaScan, now_ns: f64) {
        if now_ns > self.pids_reset_ns {
            self.pids_reset_ns += 4.0 * s.scan_delay_ms * 1e6;
            self.pids_active = [self.pids_active[1], 0];
        }
    }

    /// vma_set_access_pid_bit: task `pid` took a hint fault in this VMA.
    pub fn fault_by(&mut self, pid: u32) {
        if self.init {
            self.pids_active[1] |= pid_bit(pid);
        }
    }

    /// vma_is_accessed for task `pid` of a process of `nr_threads` threads, with the scanner's
    /// offset `offset` and this VMA starting at `vm_start` (both in pages).
    pub fn is_accessed(
        &self,
        seq: u64,
        pid: u32,
        offset: u64,
        vm_start: u64,
        nr_threads: u64,
    ) -> bool {
        seq.saturating_sub(self.start_scan_seq) < 2
            || (self.pids_active[0] | self.pids_active[1]) & pid_bit(pid) != 0
            || offset > vm_start
            || seq as i64 > self.prev_scan_seq + nr_threads as i64
    }
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
    /// mm->numa_next_scan has been set: a new address space (exec) starts with it at 0, and the
    /// first task_numa_work only sets it `scan_delay_ms` of wall time ahead and returns.
    pub armed: bool,
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
    /// Per-VMA state, by object index.
    pub vmas: Vec<VmaScan>,
    /// Round robin over the process's threads: which one runs the next window (task_numa_work
    /// delays the task that ran it by two ticks "so that another task of this mm will likely
    /// win the next time around").
    pub next_thread: usize,
    /// Windows that forced a VMA skipped for its pids (the retry of task_numa_work).
    pub forced: u64,
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
    fn vma_is_accessed_as_in_fair_c() {
        let s = NumaScan::default();
        let mut v = VmaScan::default();
        // Met at seq 3, t = 10 s: delayed to 11 s, pids reset from 15 s on, never scanned.
        v.meet(&s, 3, 10e9);
        assert_eq!((v.start_scan_seq, v.prev_scan_seq), (3, 2));
        assert_eq!((v.next_scan_ns, v.pids_reset_ns), (11e9, 15e9));
        // Its first two passes: unconditional.
        assert!(v.is_accessed(3, 7, 0, 100, 1));
        assert!(v.is_accessed(4, 7, 0, 100, 1));
        // Then: only the pids that faulted, a scan already inside it, or starvation.
        v.prev_scan_seq = 4;
        assert!(!v.is_accessed(5, 7, 0, 100, 1));
        assert!(
            v.is_accessed(5, 7, 101, 100, 1),
            "the offset is past its start"
        );
        assert!(
            v.is_accessed(6, 7, 0, 100, 1),
            "missed more passes than it has threads"
        );
        assert!(
            !v.is_accessed(6, 7, 0, 100, 8),
            "eight threads could have faulted in it"
        );
        v.fault_by(7);
        assert!(v.is_accessed(5, 7, 0, 100, 1));
        // The bit survives one reset period and is gone after the second.
        v.age_pids(&s, 14e9);
        assert!(v.is_accessed(5, 7, 0, 100, 1), "no reset before 15 s");
        v.age_pids(&s, 15.5e9);
        assert!(
            v.is_accessed(5, 7, 0, 100, 1),
            "one reset: [0] still holds it"
        );
        v.age_pids(&s, 19.5e9);
        assert!(!v.is_accessed(5, 7, 0, 100, 1), "two resets");
        // Meeting it again changes nothing.
        v.meet(&s, 9, 50e9);
        assert_eq!(v.start_scan_seq, 3);
    }

    #[test]
    fn small_pids_hash_to_distinct_bits() {
        // hash_32 spreads consecutive pids (GOLDEN_RATIO_32): the first eight threads differ.
        let bits: Vec<u64> = (1..=8).map(pid_bit).collect();
        let all = bits.iter().fold(0u64, |a, b| a | b);
        assert_eq!(all.count_ones(), 8, "{bits:x?}");
        // include/linux/hash.h: hash_32(1, 6) = 0x61C88647 >> 26 = 24
        assert_eq!(pid_bit(1), 1 << 24);
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
