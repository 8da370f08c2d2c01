//! Deterministic randomness. The generators and samplers are written here (not taken from a
//! crate) so that the same seed gives the same run, bit for bit, across dependency upgrades.

/// xoshiro256** seeded through SplitMix64.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A fixed bijective scramble of a 64-bit key (SplitMix64's finalizer): an order among keys that
/// is unrelated to their numeric order, for breaking ties without favouring low ids (page ids
/// follow the order of the processes in an experiment file).
#[inline]
pub fn scramble(x: u64) -> u64 {
    let mut z = x;
    splitmix(&mut z)
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let s = [
            splitmix(&mut x),
            splitmix(&mut x),
            splitmix(&mut x),
            splitmix(&mut x),
        ];
        Rng { s }
    }

    /// An independent stream derived from this seed and a label (e.g. a thread or policy id).
    pub fn derive(seed: u64, label: u64) -> Self {
        let mut x = seed ^ label.wrapping_mul(0xD1B5_4A32_D192_ED03);
        Rng::new(splitmix(&mut x))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in [0, n); n must be > 0 (Lemire's multiply-shift with rejection).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) < n {
            let t = n.wrapping_neg() % n;
            while (m as u64) < t {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as u64
    }

    /// Exponential with the given rate (mean 1/rate).
    #[inline]
    pub fn exp(&mut self, rate: f64) -> f64 {
        -(1.0 - self.f64()).ln() / rate
    }

    /// Standard normal (Box-Muller, one value used).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.f64();
        let u2 = self.f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Bernoulli(p).
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        self.f64() < p
    }

    /// Poisson(lambda): multiplication for small lambda, Hoermann's PTRS above 10.
    pub fn poisson(&mut self, lambda: f64) -> u64 {
        if lambda <= 0.0 || !lambda.is_finite() {
            return 0;
        }
        if lambda < 10.0 {
            let l = (-lambda).exp();
            let mut k = 0u64;
            let mut p = self.f64();
            while p > l {
                k += 1;
                p *= self.f64();
            }
            return k;
        }
        let slam = lambda.sqrt();
        let loglam = lambda.ln();
        let b = 0.931 + 2.53 * slam;
        let a = -0.059 + 0.02483 * b;
        let invalpha = 1.1239 + 1.1328 / (b - 3.4);
        let vr = 0.9277 - 3.6224 / (b - 2.0);
        loop {
            let u = self.f64() - 0.5;
            let v = self.f64();
            let us = 0.5 - u.abs();
            let k = ((2.0 * a / us + b) * u + lambda + 0.43).floor();
            if us >= 0.07 && v <= vr {
                return k as u64;
            }
            if k < 0.0 || (us < 0.013 && v > us) {
                continue;
            }
            if v.ln() + invalpha.ln() - (a / (us * us) + b).ln()
                <= -lambda + k * loglam - ln_gamma(k + 1.0)
            {
                return k as u64;
            }
        }
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// ln Gamma(x) for x > 0 (Lanczos, g = 7, n = 9).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Vose's alias table: O(1) draws from a discrete distribution.
#[derive(Clone, Debug, Default)]
pub struct AliasTable {
    prob: Vec<f64>,
    alias: Vec<u32>,
}

impl AliasTable {
    /// Weights must be non-negative with a positive sum.
    pub fn new(weights: &[f64]) -> Self {
        let n = weights.len();
        let sum: f64 = weights.iter().sum();
        let mut prob = vec![0.0; n];
        let mut alias = vec![0u32; n];
        if n == 0 || sum <= 0.0 {
            return AliasTable { prob, alias };
        }
        let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / sum).collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) =
            (0..n).partition(|&i| scaled[i] < 1.0);
        while !small.is_empty() && !large.is_empty() {
            let s = small.pop().expect("non-empty");
            let l = *large.last().expect("non-empty");
            prob[s] = scaled[s];
            alias[s] = l as u32;
            scaled[l] -= 1.0 - scaled[s];
            if scaled[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        for i in large.into_iter().chain(small) {
            prob[i] = 1.0;
        }
        AliasTable { prob, alias }
    }

    pub fn len(&self) -> usize {
        self.prob.len()
    }

    pub fn is_empty(&self) -> bool {
        self.prob.is_empty()
    }

    /// Bytes a table over `n` weights holds (a probability and an alias each).
    pub const fn bytes_for(n: u64) -> u64 {
        crate::memory::bytes_of::<f64>(n) + crate::memory::bytes_of::<u32>(n)
    }

    /// Bytes held now.
    pub fn bytes(&self) -> u64 {
        crate::memory::bytes_of::<f64>(self.prob.capacity() as u64)
            + crate::memory::bytes_of::<u32>(self.alias.capacity() as u64)
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> usize {
        let i = rng.below(self.prob.len() as u64) as usize;
        if rng.f64() < self.prob[i] {
            i
        } else {
            self.alias[i] as usize
        }
    }
}

/// Zipf(s) over ranks 1..=n by rejection-inversion (Hoermann and Derflinger, 1996): O(1) per
/// draw, no table.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
    norm: f64,
}

fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

fn log1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

impl Zipf {
    /// n >= 1 ranks, exponent s > 0.
    pub fn new(n: u64, s: f64) -> Self {
        let mut z = Zipf {
            n: n as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
            norm: 1.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.cut = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z.norm = (1..=n).map(|k| (k as f64).powf(-s)).sum();
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        expm1_over_x((1.0 - self.s) * lx) * lx
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.s);
        if t < -1.0 {
            t = -1.0;
        }
        (log1p_over_x(t) * x).exp()
    }

    /// A rank in 1..=n.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.f64() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    /// Probability of rank k (1-based).
    pub fn pmf(&self, k: u64) -> f64 {
        (k as f64).powf(-self.s) / self.norm
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scramble gives distinct keys in an order unrelated to the ids': of consecutive ids,
    /// about half keep their order (a tie-break by it favours neither the low ids nor the high).
    #[test]
    fn scramble_is_distinct_and_unrelated_to_the_ids_order() {
        let keys: Vec<u64> = (0..20_000u64).map(scramble).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), keys.len());
        let rising = keys.windows(2).filter(|w| w[0] < w[1]).count();
        assert!(
            (9_500..10_500).contains(&rising),
            "{rising} of 19999 pairs rise"
        );
        // the first and the second half of the ids share the low keys about evenly
        let median = sorted[sorted.len() / 2];
        let low_in_first_half = keys[..10_000].iter().filter(|&&k| k < median).count();
        assert!(
            (4_800..5_200).contains(&low_in_first_half),
            "{low_in_first_half}"
        );
    }

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::derive(7, 1).next_u64(), Rng::derive(7, 2).next_u64());
    }

    #[test]
    fn poisson_mean_and_variance() {
        let mut r = Rng::new(1);
        for &lam in &[0.3, 4.0, 25.0, 1000.0] {
            let n = 40_000;
            let xs: Vec<f64> = (0..n).map(|_| r.poisson(lam) as f64).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            assert!(
                (mean - lam).abs() < 0.05 * lam + 0.02,
                "lam {lam} mean {mean}"
            );
            assert!((var - lam).abs() < 0.1 * lam + 0.05, "lam {lam} var {var}");
        }
    }

    #[test]
    fn alias_matches_weights() {
        let w = [1.0, 0.0, 3.0, 6.0];
        let t = AliasTable::new(&w);
        let mut r = Rng::new(3);
        let mut c = [0usize; 4];
        for _ in 0..100_000 {
            c[t.sample(&mut r)] += 1;
        }
        assert_eq!(c[1], 0);
        assert!((c[3] as f64 / 100_000.0 - 0.6).abs() < 0.01);
        assert!((c[0] as f64 / 100_000.0 - 0.1).abs() < 0.01);
    }

    #[test]
    fn zipf_matches_pmf() {
        let z = Zipf::new(1000, 0.99);
        let mut r = Rng::new(5);
        let n = 200_000;
        let mut c1 = 0;
        let mut c10 = 0;
        for _ in 0..n {
            match z.sample(&mut r) {
                1 => c1 += 1,
                10 => c10 += 1,
                _ => {}
            }
        }
        assert!((c1 as f64 / n as f64 - z.pmf(1)).abs() < 0.01);
        assert!((c10 as f64 / n as f64 - z.pmf(10)).abs() < 0.003);
    }

    #[test]
    fn ln_gamma_known_values() {
        assert!((ln_gamma(1.0)).abs() < 1e-12);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-10);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-10);
    }
}
