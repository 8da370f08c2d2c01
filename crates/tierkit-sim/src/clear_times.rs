//! Each page's last accessed-bit clear, in ns, kept exactly in as few bytes as the run allows.
//!
//! The machine's instants are whole nanoseconds wherever its epoch is a whole number of them
//! (every step advances the clock by the epoch; a policy tests bits at a whole `at_ns`), so a
//! clear time fits 40 bits in a run shorter than 2^40 ns (18 minutes of simulated time) and 48
//! bits in one shorter than 2^48 ns (78 hours): the table takes 5 or 6 bytes a page instead of an
//! `f64`'s 8. A run whose epoch is not whole, or that could pass 2^48 ns, keeps `f64`s from the
//! start ([`ClearTimes::width`] says which before anything is allocated). Should a packed table
//! ever be asked to hold an instant it cannot (a clock that drifted off whole nanoseconds, or
//! one past its width), it widens itself to `f64`s first: the times read back are always the
//! ones stored, bit for bit.

use std::ops::Range;

use tierkit_core::memory;

use crate::error::{Result, SimError};

const WHAT: &str = "the accessed-bit table";

/// The clear times of every page (empty: the run keeps none).
#[derive(Clone, Debug)]
pub enum ClearTimes {
    /// Whole ns below 2^40, 5 little-endian bytes each.
    Packed5(Vec<[u8; 5]>),
    /// Whole ns below 2^48, 6 little-endian bytes each.
    Packed6(Vec<[u8; 6]>),
    Wide(Vec<f64>),
}

/// `t` as N little-endian bytes, if it is a whole number of ns that fits them.
#[inline]
fn pack<const N: usize>(t: f64) -> Option<[u8; N]> {
    let limit = (1u64 << (8 * N)) as f64;
    // the sign bit excludes -0.0, which would read back as +0.0
    if t.to_bits() >> 63 == 0 && t < limit && t.fract() == 0.0 {
        let b = (t as u64).to_le_bytes();
        let mut out = [0u8; N];
        out.copy_from_slice(&b[..N]);
        Some(out)
    } else {
        None
    }
}

#[inline]
fn unpack<const N: usize>(b: [u8; N]) -> f64 {
    let mut w = [0u8; 8];
    w[..N].copy_from_slice(&b);
    u64::from_le_bytes(w) as f64
}

/// Set `v[i]` to `t` if it packs; false if it does not.
#[inline]
fn set_packed<const N: usize>(v: &mut [[u8; N]], i: usize, t: f64) -> bool {
    match pack::<N>(t) {
        Some(b) => {
            v[i] = b;
            true
        }
        None => false,
    }
}

#[inline]
fn fill_packed<const N: usize>(v: &mut [[u8; N]], r: Range<usize>, t: f64) -> bool {
    match pack::<N>(t) {
        Some(b) => {
            v[r].fill(b);
            true
        }
        None => false,
    }
}

impl ClearTimes {
    /// No table: the run's policy tests no accessed bits.
    pub fn none() -> Self {
        ClearTimes::Packed6(Vec::new())
    }

    /// Bytes a page for a run whose epoch is `epoch_ns` and which ends by `end_ns`: 5 or 6
    /// when its instants are whole ns that fit 40 or 48 bits with room to spare at the end
    /// (twice the run), 8 (`f64`s) otherwise.
    pub fn width(epoch_ns: f64, end_ns: f64) -> u64 {
        if epoch_ns.fract() != 0.0 {
            8
        } else if end_ns < (1u64 << 39) as f64 {
            5
        } else if end_ns < (1u64 << 47) as f64 {
            6
        } else {
            8
        }
    }

    /// `pages` clear times at 0, `width` bytes each (as [`ClearTimes::width`] decides).
    pub fn zeroed(pages: u64, width: u64) -> Result<Self> {
        Ok(match width {
            5 => ClearTimes::Packed5(memory::filled(pages, [0u8; 5], WHAT)?),
            6 => ClearTimes::Packed6(memory::filled(pages, [0u8; 6], WHAT)?),
            _ => ClearTimes::Wide(memory::filled(pages, 0.0, WHAT)?),
        })
    }

    pub fn len(&self) -> usize {
        match self {
            ClearTimes::Packed5(v) => v.len(),
            ClearTimes::Packed6(v) => v.len(),
            ClearTimes::Wide(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The table's allocation, bytes.
    pub fn capacity_bytes(&self) -> u64 {
        match self {
            ClearTimes::Packed5(v) => (v.capacity() * 5) as u64,
            ClearTimes::Packed6(v) => (v.capacity() * 6) as u64,
            ClearTimes::Wide(v) => (v.capacity() * 8) as u64,
        }
    }

    /// Bytes a page in the table's present form.
    #[cfg(test)]
    pub fn page_bytes(&self) -> u64 {
        match self {
            ClearTimes::Packed5(_) => 5,
            ClearTimes::Packed6(_) => 6,
            ClearTimes::Wide(_) => 8,
        }
    }

    /// Page `i`'s last clear, ns.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        match self {
            ClearTimes::Packed5(v) => unpack(v[i]),
            ClearTimes::Packed6(v) => unpack(v[i]),
            ClearTimes::Wide(v) => v[i],
        }
    }

    /// Set page `i`'s last clear to `t` ns.
    #[inline]
    pub fn set(&mut self, i: usize, t: f64) -> Result<()> {
        let done = match self {
            ClearTimes::Packed5(v) => set_packed(v, i, t),
            ClearTimes::Packed6(v) => set_packed(v, i, t),
            ClearTimes::Wide(v) => {
                v[i] = t;
                true
            }
        };
        if !done {
            self.widen()?;
            if let ClearTimes::Wide(v) = self {
                v[i] = t;
            }
        }
        Ok(())
    }

    /// Set pages `r` to `t` ns.
    pub fn fill(&mut self, r: Range<usize>, t: f64) -> Result<()> {
        let done = match self {
            ClearTimes::Packed5(v) => fill_packed(v, r.clone(), t),
            ClearTimes::Packed6(v) => fill_packed(v, r.clone(), t),
            ClearTimes::Wide(v) => {
                v[r.clone()].fill(t);
                true
            }
        };
        if !done {
            self.widen()?;
            if let ClearTimes::Wide(v) = self {
                v[r].fill(t);
            }
        }
        Ok(())
    }

    /// From 5 or 6 bytes a page to 8, keeping every time.
    fn widen(&mut self) -> Result<()> {
        if !matches!(self, ClearTimes::Wide(_)) {
            let mut w: Vec<f64> = Vec::new();
            memory::reserve_exact(&mut w, self.len() as u64, WHAT).map_err(SimError::from)?;
            w.extend((0..self.len()).map(|i| self.get(i)));
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
        for width in [5, 6] {
            let mut c = ClearTimes::zeroed(4, width).unwrap();
            c.set(0, 1e9).unwrap();
            c.fill(1..3, 3.6e11).unwrap();
            assert_eq!(c.page_bytes(), width);
            assert_eq!(
                (c.get(0), c.get(1), c.get(2), c.get(3)),
                (1e9, 3.6e11, 3.6e11, 0.0)
            );
            assert_eq!(c.capacity_bytes(), 4 * width);
            c.set(3, 2.5).unwrap(); // not whole: the table widens
            assert_eq!(c.page_bytes(), 8);
            assert_eq!((c.get(0), c.get(1), c.get(3)), (1e9, 3.6e11, 2.5));
            // the first instant past the width widens it too
            let limit = (1u64 << (8 * width)) as f64;
            let mut big = ClearTimes::zeroed(2, width).unwrap();
            big.set(0, limit - 1.0).unwrap();
            assert_eq!(big.page_bytes(), width);
            big.fill(1..2, limit).unwrap();
            assert_eq!((big.get(0), big.get(1)), (limit - 1.0, limit));
            assert_eq!(big.page_bytes(), 8);
            let mut neg0 = ClearTimes::zeroed(1, width).unwrap();
            neg0.set(0, -0.0).unwrap();
            assert_eq!(neg0.get(0).to_bits(), (-0.0f64).to_bits());
        }
    }

    #[test]
    fn a_run_takes_5_bytes_below_2_pow_39_ns_6_below_2_pow_47_and_f64s_otherwise() {
        assert_eq!(ClearTimes::width(1e6, 400e9), 5);
        assert_eq!(ClearTimes::width(1e6, (1u64 << 39) as f64 - 1.0), 5);
        assert_eq!(ClearTimes::width(1e6, (1u64 << 39) as f64), 6);
        assert_eq!(ClearTimes::width(1e6, 1e12), 6);
        assert_eq!(ClearTimes::width(12345.6, 1e9), 8);
        assert_eq!(ClearTimes::width(1e6, 1e15), 8);
    }

    proptest! {
        /// Any sequence of sets and fills reads back what a plain `Vec<f64>` holds, bit for
        /// bit, whichever form the table ends in.
        #[test]
        fn reads_back_what_a_vec_of_f64_holds(
            ops in prop::collection::vec(
                (0usize..64, 1usize..8, prop_oneof![
                    (0u64..(1u64 << 50)).prop_map(|n| n as f64),
                    (0u64..(1u64 << 41)).prop_map(|n| n as f64),
                    (0u64..1_000_000u64).prop_map(|n| n as f64 + 0.25),
                    any::<f64>().prop_filter("finite", |x| x.is_finite()),
                ], any::<bool>()),
                0..200,
            ),
            width in prop_oneof![Just(5u64), Just(6), Just(8)],
        ) {
            let mut c = ClearTimes::zeroed(64, width).unwrap();
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
