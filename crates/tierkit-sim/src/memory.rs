//! A run's memory, known before anything is allocated.
//!
//! The machine ([`Machine::memory_bytes`]) and the policy ([`Policy::memory_bytes`]) each add up
//! the tables they allocate for an experiment, next to the code that allocates them; both then
//! allocate those tables up front and fallibly. [`check`] refuses a run whose estimate is above
//! the memory the machine has available (MemAvailable) or a limit the user gave, before the
//! first page table exists. Tests keep the estimate true: they compare it with the tables'
//! capacities after small runs (`machine.rs`, `engine.rs`).

use serde::Serialize;
use tierkit_core::{PageSpace, Policy};

use crate::error::{MemoryLimit, Result, SimError};
use crate::machine::{Machine, MachineMemory};
use crate::spec::Experiment;

/// Bytes per simulated page, for `tierkit run --json` (`memory_bytes_per_page`).
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct MemoryPerPage {
    /// The machine: page table, page events, access distributions.
    pub machine: f64,
    /// The policy stack's tables.
    pub policy: f64,
    pub total: f64,
}

impl MemoryPerPage {
    /// `machine` and `policy` bytes over `pages` pages.
    pub fn of(machine: u64, policy: u64, pages: u64) -> Self {
        let n = pages.max(1) as f64;
        let (machine, policy) = (machine as f64 / n, policy as f64 / n);
        MemoryPerPage {
            machine,
            policy,
            total: machine + policy,
        }
    }
}

/// A run's estimated memory: the policy run's machine and the policy's tables (the fast-only
/// reference run and a profiling run come first and are freed before it, and take less).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// Pages of the experiment's footprint.
    pub pages: u64,
    pub page_bytes: u64,
    pub machine: MachineMemory,
    pub policy: u64,
}

impl Estimate {
    /// The whole estimate, bytes.
    pub fn total(&self) -> u64 {
        self.machine.total().saturating_add(self.policy)
    }

    /// The footprint, bytes.
    pub fn footprint_bytes(&self) -> u64 {
        self.pages.saturating_mul(self.page_bytes)
    }

    pub fn per_page(&self) -> MemoryPerPage {
        MemoryPerPage::of(self.machine.total(), self.policy, self.pages)
    }
}

/// The page space of the policy run of an experiment: its pages and the tiers' capacities.
pub fn page_space(exp: &Experiment) -> PageSpace {
    PageSpace::new(exp.footprint_pages(), Machine::capacities(exp, false))
}

/// The memory a run of `exp` under `policy` (built, not yet run) takes, estimated from the
/// sizes of the tables the machine and the policy allocate.
pub fn estimate(exp: &Experiment, policy: &dyn Policy) -> Estimate {
    Estimate {
        pages: exp.footprint_pages(),
        page_bytes: exp.page_bytes,
        machine: Machine::memory_bytes(exp, &policy.needs()),
        policy: policy.memory_bytes(&page_space(exp)),
    }
}

/// MemAvailable of a /proc/meminfo text, bytes.
pub fn parse_meminfo(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line.split_whitespace().skip(1);
    let n: u64 = words.next()?.parse().ok()?;
    let unit = match words.next() {
        Some("kB") | Some("KB") => 1024,
        None => 1,
        Some(_) => return None,
    };
    n.checked_mul(unit)
}

/// The memory the machine has available now (MemAvailable), if it says.
pub fn available_bytes() -> Option<u64> {
    parse_meminfo(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// The limit a run must fit in: `max_memory` or the share of the available memory a run may
/// take, whichever is lower.
pub fn limit(max_memory: Option<u64>, available: Option<u64>) -> Option<MemoryLimit> {
    let avail = available.map(MemoryLimit::Available);
    match (max_memory, avail) {
        (Some(m), Some(a)) if a.bytes() < m => Some(a),
        (Some(m), _) => Some(MemoryLimit::MaxMemory(m)),
        (None, a) => a,
    }
}

/// Estimate a run and refuse it ([`SimError::TooLarge`]) when the estimate is above the
/// limit: `max_memory` bytes, or 90% of the machine's available memory, whichever is lower.
pub fn check(exp: &Experiment, policy: &dyn Policy, max_memory: Option<u64>) -> Result<Estimate> {
    check_against(exp, policy, limit(max_memory, available_bytes()))
}

/// [`check`] against a given limit (None: no limit known).
pub fn check_against(
    exp: &Experiment,
    policy: &dyn Policy,
    limit: Option<MemoryLimit>,
) -> Result<Estimate> {
    let est = estimate(exp, policy);
    match limit {
        Some(l) if est.total() > l.bytes() => {
            let pp = est.per_page();
            Err(SimError::TooLarge {
                experiment: exp.source.clone(),
                policy: policy.name(),
                footprint_pages: est.pages,
                footprint_bytes: est.footprint_bytes(),
                machine_per_page: pp.machine,
                policy_per_page: pp.policy,
                estimate: est.total(),
                limit: l,
            })
        }
        _ => Ok(est),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   22000000 kB\n";
        assert_eq!(parse_meminfo(text), Some(22_000_000 * 1024));
        assert_eq!(parse_meminfo("MemTotal: 5 kB\n"), None);
        assert_eq!(parse_meminfo("MemAvailable: x kB\n"), None);
        if std::path::Path::new("/proc/meminfo").exists() {
            assert!(available_bytes().is_some_and(|b| b > 0));
        }
    }

    #[test]
    fn the_lower_limit_wins() {
        assert_eq!(limit(None, None), None);
        assert_eq!(limit(Some(5), None), Some(MemoryLimit::MaxMemory(5)));
        assert_eq!(limit(None, Some(700)), Some(MemoryLimit::Available(700)));
        assert_eq!(
            MemoryLimit::Available(700).bytes(),
            630,
            "90% of what is available"
        );
        assert_eq!(
            limit(Some(500), Some(700)),
            Some(MemoryLimit::MaxMemory(500))
        );
        assert_eq!(
            limit(Some(650), Some(700)),
            Some(MemoryLimit::Available(700))
        );
    }
}
