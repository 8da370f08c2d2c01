//! Uncore CHA TOR counters through the kernel's `uncore_cha_N` PMUs (per-tier occupancy and
//! inserts, summed over every CHA box, for Colloid- and PACT-style policies).
//!
//! The event encodings are model-specific; the defaults are Ice Lake SP's (Intel's perfmon
//! tables: `UNC_CHA_TOR_INSERTS.IA_MISS_DRD_LOCAL` = event 0x35 umask 0xC816FE01,
//! `..._REMOTE` = umask 0xC8177E01, `UNC_CHA_TOR_OCCUPANCY.*` = event 0x36 with the same umasks)
//! and the config file can replace them. Local demand reads are counted for the fast tier and
//! remote ones for the slow tier, as the Colloid artifact does. Each counter is opened
//! system-wide on the first CPU of the PMU's `cpumask` (root or perf_event_paranoid <= 0).

use std::path::{Path, PathBuf};

use tierkit_core::TierCounters;

use super::pebs::{encode_event, PerfEventAttr, PERF_FLAG_FD_CLOEXEC};
use crate::error::{read_to_string, Error, Result};

/// Event specs per tier: (inserts, occupancy), fast tier first.
#[derive(Clone, Debug, PartialEq)]
pub struct ChaEvents {
    pub inserts: [String; 2],
    pub occupancy: [String; 2],
}

impl Default for ChaEvents {
    fn default() -> Self {
        ChaEvents {
            inserts: [
                "event=0x35,umask=0xc816fe01".into(),
                "event=0x35,umask=0xc8177e01".into(),
            ],
            occupancy: [
                "event=0x36,umask=0xc816fe01".into(),
                "event=0x36,umask=0xc8177e01".into(),
            ],
        }
    }
}

/// The CHA PMU directories under an event_source root.
pub fn cha_pmus(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    e.file_name()
                        .to_str()
                        .is_some_and(|n| n.starts_with("uncore_cha_"))
                })
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

struct Counter {
    fd: i32,
    last: u64,
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: fd was returned by perf_event_open and is closed once.
        unsafe { libc::close(self.fd) };
    }
}

impl Counter {
    fn read_delta(&mut self) -> std::io::Result<u64> {
        let mut v = 0u64;
        // SAFETY: read of 8 bytes from a counting perf fd into a live u64.
        let n = unsafe { libc::read(self.fd, &mut v as *mut u64 as *mut libc::c_void, 8) };
        if n != 8 {
            return Err(std::io::Error::last_os_error());
        }
        let d = v.wrapping_sub(self.last);
        self.last = v;
        Ok(d)
    }
}

/// Open counters; each `tier x {inserts, occupancy}` is a list of per-box counters.
pub struct Cha {
    /// counters[tier][0 = inserts, 1 = occupancy] = per-box counters
    counters: Vec<[Vec<Counter>; 2]>,
    pub boxes: usize,
}

impl Cha {
    pub fn open(root: &Path, ev: &ChaEvents) -> std::result::Result<Cha, String> {
        let pmus = cha_pmus(root);
        if pmus.is_empty() {
            return Err(format!(
                "no uncore_cha_* PMU under {} (no uncore PMU exposed)",
                root.display()
            ));
        }
        let mut counters = Vec::new();
        for tier in 0..2 {
            let mut pair: [Vec<Counter>; 2] = [Vec::new(), Vec::new()];
            for (k, spec) in [&ev.inserts[tier], &ev.occupancy[tier]]
                .into_iter()
                .enumerate()
            {
                for pmu in &pmus {
                    let c = open_counter(pmu, spec)
                        .map_err(|e| format!("{}: {spec}: {e}", pmu.display()))?;
                    pair[k].push(c);
                }
            }
            counters.push(pair);
        }
        Ok(Cha {
            counters,
            boxes: pmus.len(),
        })
    }

    /// Deltas since the last read, summed over the boxes.
    pub fn read(&mut self) -> Result<Vec<TierCounters>> {
        let mut out = Vec::new();
        for pair in &mut self.counters {
            let mut sums = [0u64; 2];
            for (k, list) in pair.iter_mut().enumerate() {
                for c in list.iter_mut() {
                    sums[k] += c
                        .read_delta()
                        .map_err(|e| Error::Telemetry(format!("uncore read: {e}")))?;
                }
            }
            out.push(TierCounters {
                llc_misses: sums[0] as f64,
                tor_inserts: sums[0] as f64,
                tor_occupancy: sums[1] as f64,
                ..TierCounters::default()
            });
        }
        Ok(out)
    }
}

fn open_counter(pmu: &Path, spec: &str) -> Result<Counter> {
    let (ty, cfg) = encode_event(pmu, spec)?;
    let cpumask = read_to_string(pmu.join("cpumask")).unwrap_or_else(|_| "0".into());
    let cpu = crate::topology::parse_list(&cpumask)
        .ok()
        .and_then(|v| v.first().copied())
        .unwrap_or(0);
    let attr = PerfEventAttr {
        type_: ty,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: cfg[0],
        config1: cfg[1],
        config2: cfg[2],
        ..Default::default()
    };
    // SAFETY: perf_event_open reads attr.size bytes from a live #[repr(C)] struct of that size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            -1 as libc::c_long,
            cpu as libc::c_long,
            -1 as libc::c_long,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(Error::Sys {
            syscall: "perf_event_open",
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(Counter {
        fd: fd as i32,
        last: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_cha_boxes_and_reports_absence() {
        let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pmu");
        assert_eq!(cha_pmus(&d), vec![d.join("uncore_cha_0")]);
        let e = Cha::open(&d.join("cpu"), &ChaEvents::default())
            .err()
            .unwrap();
        assert!(e.contains("no uncore_cha_*"), "{e}");
        // the default encodings fit the CHA format (split umask field)
        for spec in ChaEvents::default()
            .inserts
            .iter()
            .chain(&ChaEvents::default().occupancy)
        {
            encode_event(&d.join("uncore_cha_0"), spec).unwrap();
        }
    }
}
