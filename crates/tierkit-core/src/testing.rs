//! A hand-driven machine for policy unit tests: a page table and accessed bits set by the test.

use crate::{HintFault, Mechanism, PageId, TierId};

/// Pages with a tier each and an accessed bit the test sets.
#[derive(Clone, Debug, Default)]
pub struct FakeMech {
    pub tiers: Vec<Option<TierId>>,
    pub accessed: Vec<bool>,
    /// The faults the policy reported at numa_migrate_prep, and those whose promotion failed.
    pub prepped: Vec<PageId>,
    pub failed: Vec<PageId>,
}

impl FakeMech {
    pub fn new(tiers: Vec<Option<TierId>>) -> Self {
        let n = tiers.len();
        FakeMech {
            tiers,
            accessed: vec![false; n],
            ..Default::default()
        }
    }
}

impl Mechanism for FakeMech {
    fn tier_of(&self, page: PageId) -> Option<TierId> {
        self.tiers.get(page.0 as usize).copied().flatten()
    }
    fn test_and_clear_accessed(&mut self, pages: &[PageId], out: &mut Vec<bool>) {
        out.clear();
        for p in pages {
            let i = p.0 as usize;
            out.push(self.accessed.get(i).copied().unwrap_or(false));
            if let Some(a) = self.accessed.get_mut(i) {
                *a = false;
            }
        }
    }
    fn numa_migrate_prep(&mut self, fault: &HintFault) {
        self.prepped.push(fault.page);
    }
    fn numa_migrate_failed(&mut self, fault: &HintFault) {
        self.failed.push(fault.page);
    }
}
