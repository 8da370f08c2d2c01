//! The dense page table: tierkit-core wants small dense [`PageId`]s, Linux has (pid, virtual
//! page). This table maps one to the other, keeps what tierkitd knows of each page (its tier,
//! whether a telemetry source saw it accessed, the pseudo-sample credit of sampled sources), and
//! reuses the ids of pages that went away, but only after the epoch whose telemetry reported them
//! freed (policies apply an epoch's allocations before its frees).

use rustc_hash::FxHashMap;
use tierkit_core::{PageId, Pid, TierId};

pub const NO_TIER: TierId = u8::MAX;

#[derive(Clone, Copy, Debug)]
pub struct Slot {
    pub pid: Pid,
    pub vpn: u64,
    pub tier: TierId,
    /// A telemetry source saw the page accessed since the policy last asked
    /// ([`tierkit_core::Mechanism::test_and_clear_accessed`]).
    pub accessed: bool,
    /// Fractional pseudo-samples carried over (DAMON and soft-dirty sources).
    pub credit: f32,
    /// The scan generation that last found the page present.
    pub seen: u32,
    /// tierkitd promoted the page and it has not left the fast tier since (the kernel's
    /// PagePromoted, which migration toggling's `demote_promoted` counts on).
    pub promoted: bool,
    live: bool,
}

#[derive(Default)]
pub struct PageTable {
    ids: FxHashMap<(Pid, u64), u32>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    released: Vec<u32>,
    live: usize,
}

impl PageTable {
    pub fn get(&self, pid: Pid, vpn: u64) -> Option<PageId> {
        self.ids.get(&(pid, vpn)).map(|&i| PageId(i as u64))
    }

    /// The id of (pid, vpn), and whether it is new.
    pub fn intern(&mut self, pid: Pid, vpn: u64) -> (PageId, bool) {
        if let Some(&i) = self.ids.get(&(pid, vpn)) {
            return (PageId(i as u64), false);
        }
        let slot = Slot {
            pid,
            vpn,
            tier: NO_TIER,
            accessed: false,
            credit: 0.0,
            seen: 0,
            promoted: false,
            live: true,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        self.ids.insert((pid, vpn), i);
        self.live += 1;
        (PageId(i as u64), true)
    }

    /// Forget a page; its id becomes reusable after [`PageTable::end_epoch`].
    pub fn release(&mut self, id: PageId) {
        let s = self.slots[id.0 as usize];
        if self.ids.remove(&(s.pid, s.vpn)).is_some() {
            self.slots[id.0 as usize].live = false;
            self.released.push(id.0 as u32);
            self.live -= 1;
        }
    }

    /// The epoch's telemetry has been consumed: released ids may be handed out again.
    pub fn end_epoch(&mut self) {
        self.free.append(&mut self.released);
    }

    pub fn slot(&self, id: PageId) -> Option<&Slot> {
        let s = self.slots.get(id.0 as usize)?;
        s.live.then_some(s)
    }

    pub fn slot_mut(&mut self, id: PageId) -> Option<&mut Slot> {
        let s = self.slots.get_mut(id.0 as usize)?;
        s.live.then_some(s)
    }

    /// Pages currently known.
    pub fn live(&self) -> usize {
        self.live
    }

    /// One past the largest id handed out (the span policies index by).
    pub fn span(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_dense_and_reused_only_after_the_epoch() {
        let mut t = PageTable::default();
        let (a, new_a) = t.intern(10, 0x1000);
        let (b, _) = t.intern(10, 0x1001);
        let (c, _) = t.intern(11, 0x1000);
        assert!(new_a);
        assert_eq!((a.0, b.0, c.0), (0, 1, 2));
        assert_eq!(t.intern(10, 0x1000), (a, false));
        assert_eq!(t.slot(a).unwrap().tier, NO_TIER);
        t.release(b);
        assert!(t.slot(b).is_none());
        assert_eq!(t.get(10, 0x1001), None);
        // not reused within the epoch it was freed in
        let (d, _) = t.intern(12, 7);
        assert_eq!(d.0, 3);
        t.end_epoch();
        let (e, _) = t.intern(12, 8);
        assert_eq!(e, b);
        assert_eq!(t.live(), 4);
        assert_eq!(t.span(), 4);
        // releasing twice is harmless
        t.release(a);
        t.release(a);
        assert_eq!(t.live(), 3);
    }
}
