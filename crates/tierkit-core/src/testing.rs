//! A hand-driven machine for policy unit tests: a page table and accessed bits set by the test.

use crate::{Mechanism, PageId, TierId};

/// Pages with a tier each and an accessed bit the test sets.
#[derive(Clone, Debug, Default)]
pub struct FakeMech {
    pub tiers: Vec<Option<TierId>>,
    pub accessed: Vec<bool>,
}

impl FakeMech {
    pub fn new(tiers: Vec<Option<TierId>>) -> Self {
        let n = tiers.len();
        FakeMech {
            tiers,
            accessed: vec![false; n],
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
}
