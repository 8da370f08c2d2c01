//! Each page's last accessed-bit clear, in ns, kept exactly in as few bytes as the run allows.
//!
//! The machine's instants are whole nanoseconds wherever its epoch is a whole number of them
//! (every step advances the clock by the epoch; a policy tests bits at a whole `at_ns`), so a
//! clear time fits 48 bits (2^48 ns is 78 hours of simulated time) and the table takes 6 bytes
//! a page instead of an `f64`'s 8. A run whose epoch is not whole, or that could pass 2^48 ns,
//! keeps `f64`s from the start ([`ClearTimes::packs`] says which before anything is allocated).
//! Should a packed table ever be asked to hold an instant it cannot (a clock that drifted off
//! whole nanoseconds), it widens itself to `f64`s first: the times read back are always the
//! ones stored, bit for bit.

use std::ops::Range;

use tierkit_core::memory;

use crate::error::{Result, SimError};

const WHAT: &str = "the accessed-bit table";
/// Instants at or above this many ns do not fit 48 bits.
const LIMIT_NS: f64 = (1u64 << 48) as f64;

/// The clear times of every page (empty: the run keeps none).
#[derive(Clone, Debug)]
pub enum ClearTimes {
    /// Whole ns below 2^48, 6 little-endian bytes each.
    Packed(Vec<[u8; 6]>),
    Wide(Vec<f64>),
}

#[inline]
fn pack(t: f64) -> Option<[u8; 6]> {
    // the sign bit excludes -0.0, which would read back as +0.0
    if t.to_bits() >> 63 == 0 && t < LIMIT_NS && t.fract() == 0.0 {
        let b = (t as u64).to_le_bytes();
        Some([b[0], b[1], b[2], b[3], b[4], b[5]])
    } else {
        None
    }
}

#[inline]
fn unpack(b: [u8; 6]) -> f64 {
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], 0, 0]) as f64
}

impl ClearTimes {
    /// No table: the run's policy tests no accessed bits.
    pub fn none() -> Self {
        ClearTimes::Packed(Vec::new())
    }

    /// Whether a run whose epoch is `epoch_ns` and which ends by `end_ns` keeps its clear
    /// times packed (whole ns that fit 48 bits, with room to spare at the end).
    pub fn packs(epoch_ns: f64, end_ns: f64) -> bool {
        epoch_ns.fract() == 0.0 && end_ns < LIMIT_NS / 2.0
    }

    /// Bytes a page for a run as [`ClearTimes::packs`] decides.
    pub fn bytes_per_page(packed: bool) -> u64 {
        if packed {
            std::mem::size_of::<[u8; 6]>() as u64
        } else {
            std::mem::size_of::<f64>() as u64
        }
    }

    /// `pages` clear times at 0, packed or wide.
    pub fn zeroed(pages: u64, packed: bool) -> Result<Self> {
        Ok(if packed {
            ClearTimes::Packed(memory::filled(pages, [0u8; 6], WHAT)?)
        } else {
            ClearTimes::Wide(memory::filled(pages, 0.0, WHAT)?)
        })
    }

    pub fn len(&self) -> usize {
        match self {
            ClearTimes::Packed(v) => v.len(),
            ClearTimes::Wide(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The table's allocation, bytes.
    pub fn capacity_bytes(&self) -> u64 {
        match self {
            ClearTimes::Packed(v) => (v.capacity() * 6) as u64,
            ClearTimes::Wide(v) => (v.capacity() * 8) as u64,
        }
    }

    /// Whether the table is in its 6-byte form.
    #[cfg(test)]
    pub fn is_packed(&self) -> bool {
        matches!(self, ClearTimes::Packed(_))
    }

    /// Page `i`'s last clear, ns.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        match self {
            ClearTimes::Packed(v) => unpack(v[i]),
            ClearTimes::Wide(v) => v[i],
        }
    }

    /// Set page `i`'s last clear to `t` ns.
    #[inline]
    pub fn set(&mut self, i: usize, t: f64) -> Result<()> {
        if let ClearTimes::Packed(v) = self {
            if let Some(b) = pack(t) {
                v[i] = b;
                return Ok(());
            }
            self.widen()?;
        }
        if let ClearTimes::Wide(v) = self {
            v[i] = t;
        }
        Ok(())
    }

    /// Set pages `r` to `t` ns.
    pub fn fill(&mut self, r: Range<usize>, t: f64) -> Result<()> {
        if let ClearTimes::Packed(v) = self {
            if let Some(b) = pack(t) {
                v[r].fill(b);
                return Ok(());
            }
            self.widen()?;
        }
        if let ClearTimes::Wide(v) = self {
            v[r].fill(t);
        }
        Ok(())
    }

    /// From 6 bytes a page to 8, keeping every time.
    fn widen(&mut self) -> Result<()> {
        if let ClearTimes::Packed(v) = self {
            let mut w: Vec<f64> = Vec::new();
            memory::reserve_exact(&mut w, v.len() as u64, WHAT).map_err(SimError::from)?;
            w.extend(v.iter().map(|&b| unpack(b)));
            *self = ClearTimes::Wide(w);
        }
        Ok(())
    }

    /// Every time's bits, in page order (tests).
    #[cfg(test)]
    pub fn bits(&self) -> Vec<u64> {
        (0..self.len()).map(|i| self.get(i).to_bits()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn whole_ns_pack_and_others_widen_keeping_what_was_stored() {
        let mut c = ClearTimes::zeroed(4, true).unwrap();
        c.set(0, 1e9).unwrap();
        c.fill(1..3, 3.6e12).unwrap();
        assert!(c.is_packed());
        assert_eq!(
            (c.get(0), c.get(1), c.get(2), c.get(3)),
            (1e9, 3.6e12, 3.6e12, 0.0)
        );
        assert_eq!(c.capacity_bytes(), 24);
        c.set(3, 2.5).unwrap(); // not whole: the table widens
        assert!(!c.is_packed());
        assert_eq!((c.get(0), c.get(1), c.get(3)), (1e9, 3.6e12, 2.5));
        let mut big = ClearTimes::zeroed(1, true).unwrap();
        big.set(0, LIMIT_NS).unwrap();
        assert_eq!(big.get(0), LIMIT_NS);
        assert!(!big.is_packed());
        let mut neg0 = ClearTimes::zeroed(1, true).unwrap();
        neg0.set(0, -0.0).unwrap();
        assert_eq!(neg0.get(0).to_bits(), (-0.0f64).to_bits());
    }

    #[test]
    fn a_run_packs_when_its_epoch_is_whole_and_it_ends_well_before_2_pow_48_ns() {
        assert!(ClearTimes::packs(1e6, 1e12));
        assert!(!ClearTimes::packs(12345.6, 1e9));
        assert!(!ClearTimes::packs(1e6, 1e15));
        assert_eq!(ClearTimes::bytes_per_page(true), 6);
        assert_eq!(ClearTimes::bytes_per_page(false), 8);
    }

    proptest! {
        /// Any sequence of sets and fills reads back what a plain `Vec<f64>` holds, bit for
        /// bit, whichever form the table ends in.
        #[test]
        fn reads_back_what_a_vec_of_f64_holds(
            ops in prop::collection::vec(
                (0usize..64, 1usize..8, prop_oneof![
                    (0u64..(1u64 << 50)).prop_map(|n| n as f64),
                    (0u64..1_000_000u64).prop_map(|n| n as f64 + 0.25),
                    any::<f64>().prop_filter("finite", |x| x.is_finite()),
                ], any::<bool>()),
                0..200,
            )
        ) {
            let mut c = ClearTimes::zeroed(64, true).unwrap();
            let mut plain = vec![0.0f64; 64];
            for (i, n, t, one) in ops {
                if one {
                    c.set(i, t).unwrap();
                    plain[i] = t;
                } else {
                    let r = i..(i + n).min(64);
                    c.fill(r.clone(), t).unwrap();
                    plain[r].fill(t);
                }
            }
            let want: Vec<u64> = plain.iter().map(|x| x.to_bits()).collect();
            prop_assert_eq!(c.bits(), want);
        }
    }
}
