//! PACT's adaptive binning pieces (PACT ASPLOS'26 §4.5, Algorithm 3): the reservoir of PAC
//! values, its quartiles and the Freedman-Diaconis bin width with the scaling rule.

use tierkit_core::Rng;

/// A fixed-size uniform sample of the PAC values observed (Algorithm 3 lines 1-6: the first
/// `k` values fill it; the n-th later one replaces entry `rnd` when `rnd = rand() % n < k`).
#[derive(Clone, Debug)]
pub struct Reservoir {
    k: usize,
    /// Values observed so far (Algorithm 3's N_page counter).
    n: u64,
    vals: Vec<f64>,
    rng: Rng,
}

impl Reservoir {
    pub fn new(k: usize, seed: u64) -> Self {
        Reservoir {
            k: k.max(1),
            n: 0,
            vals: Vec::with_capacity(k.max(1)),
            rng: Rng::derive(seed, 0x5eed_9ac7),
        }
    }

    /// Offer one value (Algorithm 3 lines 3-6).
    pub fn offer(&mut self, v: f64) {
        self.n += 1;
        if self.vals.len() < self.k {
            self.vals.push(v);
            return;
        }
        let rnd = self.rng.below(self.n) as usize;
        if rnd < self.k {
            self.vals[rnd] = v;
        }
    }

    pub fn len(&self) -> usize {
        self.vals.len()
    }
    pub fn is_empty(&self) -> bool {
        self.vals.is_empty()
    }
    pub fn seen(&self) -> u64 {
        self.n
    }
    pub fn values(&self) -> &[f64] {
        &self.vals
    }

    /// Smallest and largest held values; None when empty.
    pub fn range(&self) -> Option<(f64, f64)> {
        let lo = self.vals.iter().copied().reduce(f64::min)?;
        let hi = self.vals.iter().copied().reduce(f64::max)?;
        Some((lo, hi))
    }

    /// First and third quartiles of the held values (Algorithm 3 lines 7-8), by linear
    /// interpolation between order statistics; None with fewer than 4 values.
    pub fn quartiles(&self) -> Option<(f64, f64)> {
        if self.vals.len() < 4 {
            return None;
        }
        let mut v = self.vals.clone();
        v.sort_by(f64::total_cmp);
        Some((quantile_sorted(&v, 0.25), quantile_sorted(&v, 0.75)))
    }
}

/// The q-quantile of sorted values, linear interpolation between order statistics.
pub fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    let x = q * (v.len() - 1) as f64;
    let i = x.floor() as usize;
    let j = (i + 1).min(v.len() - 1);
    v[i] + (v[j] - v[i]) * (x - i as f64)
}

/// Freedman-Diaconis bin width W = 2 (Q3 - Q1) / cbrt(n) (Algorithm 3 line 9); None when it is
/// not positive (no spread yet).
pub fn fd_width(q1: f64, q3: f64, n: u64) -> Option<f64> {
    let w = 2.0 * (q3 - q1) / (n.max(1) as f64).cbrt();
    (w > 0.0 && w.is_finite()).then_some(w)
}

/// The scaling rule (Algorithm 3 lines 10-14): double the width when the priority bin crowds
/// (its share of the binned pages exceeds T_scale: bin collapse), halve it otherwise.
pub fn scale_width(w: f64, share_in_priority_bin: f64, t_scale: f64) -> f64 {
    if share_in_priority_bin > t_scale {
        w * 2.0
    } else {
        w / 2.0
    }
}

/// The bin of a PAC value: floor(PAC / W), the last bin holding everything above.
#[inline]
pub fn bin_of(pac: f64, width: f64, bins: usize) -> usize {
    if width <= 0.0 {
        return bins - 1;
    }
    ((pac / width).floor().max(0.0) as usize).min(bins - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reservoir_is_uniform_over_the_stream() {
        // Offer 0..1000 many times; each value should be held with probability k/n = 0.1.
        let (n, k, trials) = (1000usize, 100usize, 2000u64);
        let mut held = vec![0u32; n];
        for t in 0..trials {
            let mut r = Reservoir::new(k, t);
            for i in 0..n {
                r.offer(i as f64);
            }
            assert_eq!(r.len(), k);
            for &v in r.values() {
                held[v as usize] += 1;
            }
        }
        // Expected count per value: trials * k / n = 200; binomial sd ~ 13.4.
        let exp = trials as f64 * k as f64 / n as f64;
        // Uniform over deciles of the stream: early and late values are kept alike.
        for d in 0..10 {
            let s: u32 = held[d * 100..(d + 1) * 100].iter().sum();
            let m = s as f64 / 100.0;
            assert!(
                (m - exp).abs() < 0.05 * exp,
                "decile {d}: mean {m} vs {exp}"
            );
        }
        // chi-square over the 1000 values stays near its 999 degrees of freedom
        let chi: f64 = held
            .iter()
            .map(|&c| (c as f64 - exp).powi(2) / exp)
            .sum::<f64>()
            * (1.0 / (1.0 - k as f64 / n as f64));
        assert!(chi < 1200.0, "chi-square {chi}");
    }

    #[test]
    fn quartiles_of_a_known_set() {
        let mut r = Reservoir::new(100, 1);
        for i in 0..=100 {
            r.offer(i as f64);
        }
        let (q1, q3) = r.quartiles().unwrap();
        assert!(q1 < q3);
        let mut full = Reservoir::new(200, 1);
        for i in 1..=9 {
            full.offer(i as f64);
        }
        assert_eq!(full.quartiles(), Some((3.0, 7.0)));
    }

    #[test]
    fn freedman_diaconis_width() {
        // IQR 4, n = 8: 2 * 4 / 2 = 4
        assert_eq!(fd_width(3.0, 7.0, 8), Some(4.0));
        // IQR 4, n = 1000: 8 / 10
        assert!((fd_width(3.0, 7.0, 1000).unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(fd_width(5.0, 5.0, 100), None);
    }

    #[test]
    fn scaling_doubles_on_collapse_and_halves_otherwise() {
        assert_eq!(scale_width(100.0, 0.9, 0.7), 200.0);
        assert_eq!(scale_width(100.0, 0.7, 0.7), 50.0);
        assert_eq!(scale_width(100.0, 0.01, 0.7), 50.0);
    }

    proptest! {
        #[test]
        fn bins_are_monotone_and_bounded(a in 0.0f64..1e9, b in 0.0f64..1e9, w in 1e-3f64..1e6) {
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(bin_of(lo, w, 20) <= bin_of(hi, w, 20));
            prop_assert!(bin_of(hi, w, 20) < 20);
        }

        #[test]
        fn reservoir_holds_only_offered_values(xs in proptest::collection::vec(0.0f64..1e6, 0..500)) {
            let mut r = Reservoir::new(100, 3);
            for &x in &xs { r.offer(x); }
            prop_assert_eq!(r.len(), xs.len().min(100));
            prop_assert_eq!(r.seen(), xs.len() as u64);
            for v in r.values() { prop_assert!(xs.contains(v)); }
        }
    }
}
