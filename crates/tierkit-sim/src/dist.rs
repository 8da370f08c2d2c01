//! Per-phase access distributions over pages: weighted regions (uniform, Zipf over a seeded
//! permutation, or a seeded random subset), O(1) sampling and O(regions) point probabilities.

use tierkit_core::rng::{AliasTable, Rng, Zipf};

#[derive(Clone, Debug)]
pub enum RegionKind {
    /// Every page of [first, first + len) equally likely.
    Range,
    /// A random subset of the range: `pages` lists them, `member` is a bitset over the range.
    Subset { pages: Vec<u32>, member: Vec<u64> },
    /// Zipf over ranks; `perm[rank]` is the page offset, `inv[offset]` its rank.
    Zipf {
        z: Zipf,
        perm: Vec<u32>,
        inv: Vec<u32>,
    },
    /// Measured frequencies (a trace window): `offs` sorted page offsets, `prob` their
    /// probabilities (summing to 1), drawn with an alias table.
    Empirical {
        offs: Vec<u32>,
        prob: Vec<f64>,
        alias: AliasTable,
    },
}

#[derive(Clone, Debug)]
pub struct Region {
    pub first: u32,
    pub len: u32,
    /// Normalized weight (the weights of a distribution sum to 1).
    pub w: f64,
    pub kind: RegionKind,
    /// Share of the region's misses that a hardware prefetcher already has in flight when the
    /// demand load arrives (1 for a sequential stream, 0 for random or dependent loads). Only
    /// the latency a sample reports depends on it: such a load waits for the rest of the prefetch.
    pub prefetched: f64,
}

impl Region {
    pub fn range(first: u32, len: u32, w: f64) -> Self {
        Region {
            first,
            len,
            w,
            kind: RegionKind::Range,
            prefetched: 0.0,
        }
    }

    pub fn subset(first: u32, len: u32, count: u32, w: f64, seed: u64) -> Self {
        let mut rng = Rng::derive(seed, 0x5b5e7);
        let mut all: Vec<u32> = (0..len).collect();
        // Partial Fisher-Yates: the first `count` entries are a uniform random subset.
        let count = count.clamp(1, len);
        for i in 0..count as usize {
            let j = i + rng.below((len as usize - i) as u64) as usize;
            all.swap(i, j);
        }
        all.truncate(count as usize);
        all.sort_unstable();
        let mut member = vec![0u64; (len as usize).div_ceil(64)];
        for &o in &all {
            member[o as usize / 64] |= 1 << (o % 64);
        }
        Region {
            first,
            len,
            w,
            kind: RegionKind::Subset { pages: all, member },
            prefetched: 0.0,
        }
    }

    pub fn zipf(first: u32, len: u32, s: f64, w: f64, seed: u64) -> Self {
        let mut rng = Rng::derive(seed, 0x21ff);
        let mut perm: Vec<u32> = (0..len).collect();
        rng.shuffle(&mut perm);
        let mut inv = vec![0u32; len as usize];
        for (rank, &off) in perm.iter().enumerate() {
            inv[off as usize] = rank as u32;
        }
        Region {
            first,
            len,
            w,
            kind: RegionKind::Zipf {
                z: Zipf::new(len as u64, s),
                perm,
                inv,
            },
            prefetched: 0.0,
        }
    }

    /// A region over `counts[i]` accesses to page `first + offs[i]` (offsets sorted, distinct).
    pub fn empirical(first: u32, offs: Vec<u32>, counts: &[f64], w: f64) -> Self {
        let total: f64 = counts.iter().sum();
        let prob: Vec<f64> = counts.iter().map(|c| c / total).collect();
        let len = offs.last().map_or(1, |&o| o + 1);
        Region {
            first,
            len,
            w,
            kind: RegionKind::Empirical {
                alias: AliasTable::new(&prob),
                offs,
                prob,
            },
            prefetched: 0.0,
        }
    }

    /// Probability of `page` within this region (0 outside).
    #[inline]
    pub fn pmf(&self, page: u32) -> f64 {
        if page < self.first || page >= self.first + self.len {
            return 0.0;
        }
        let off = page - self.first;
        match &self.kind {
            RegionKind::Range => 1.0 / self.len as f64,
            RegionKind::Subset { pages, member } => {
                if member[off as usize / 64] >> (off % 64) & 1 == 1 {
                    1.0 / pages.len() as f64
                } else {
                    0.0
                }
            }
            RegionKind::Zipf { z, inv, .. } => z.pmf(inv[off as usize] as u64 + 1),
            RegionKind::Empirical { offs, prob, .. } => {
                offs.binary_search(&off).map_or(0.0, |i| prob[i])
            }
        }
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u32 {
        match &self.kind {
            RegionKind::Range => self.first + rng.below(self.len as u64) as u32,
            RegionKind::Subset { pages, .. } => {
                self.first + pages[rng.below(pages.len() as u64) as usize]
            }
            RegionKind::Zipf { z, perm, .. } => self.first + perm[(z.sample(rng) - 1) as usize],
            RegionKind::Empirical { offs, alias, .. } => self.first + offs[alias.sample(rng)],
        }
    }

    /// Every page with positive probability, with that probability (times the weight).
    pub fn for_each(&self, mut f: impl FnMut(u32, f64)) {
        match &self.kind {
            RegionKind::Range => {
                let p = self.w / self.len as f64;
                for o in 0..self.len {
                    f(self.first + o, p);
                }
            }
            RegionKind::Subset { pages, .. } => {
                let p = self.w / pages.len() as f64;
                for &o in pages {
                    f(self.first + o, p);
                }
            }
            RegionKind::Zipf { z, perm, .. } => {
                for (rank, &o) in perm.iter().enumerate() {
                    f(self.first + o, self.w * z.pmf(rank as u64 + 1));
                }
            }
            RegionKind::Empirical { offs, prob, .. } => {
                for (&o, &p) in offs.iter().zip(prob) {
                    f(self.first + o, self.w * p);
                }
            }
        }
    }
}

/// A thread phase's distribution over pages, with its probability mass per tier kept up to
/// date as pages are allocated, move and are freed.
#[derive(Clone, Debug)]
pub struct Dist {
    pub proc_: usize,
    pub regions: Vec<Region>,
    alias: AliasTable,
    /// Probability mass in each tier (unallocated pages hold none).
    pub mass: Vec<f64>,
    /// Threads currently in this phase.
    pub users: u32,
    /// Sum of the miss rates of the threads using it (misses per ns), for page rates.
    pub rate: f64,
    /// Share of loads among memory operations (for write rates).
    pub read_frac: f64,
    pub lo: u32,
    pub hi: u32,
}

impl Dist {
    pub fn new(proc_: usize, mut regions: Vec<Region>, ntiers: usize, read_frac: f64) -> Self {
        let total: f64 = regions.iter().map(|r| r.w).sum();
        for r in &mut regions {
            r.w /= total;
        }
        let alias = AliasTable::new(&regions.iter().map(|r| r.w).collect::<Vec<_>>());
        let lo = regions.iter().map(|r| r.first).min().unwrap_or(0);
        let hi = regions.iter().map(|r| r.first + r.len).max().unwrap_or(0);
        Dist {
            proc_,
            regions,
            alias,
            mass: vec![0.0; ntiers],
            users: 0,
            rate: 0.0,
            read_frac,
            lo,
            hi,
        }
    }

    #[inline]
    pub fn pmf(&self, page: u32) -> f64 {
        if page < self.lo || page >= self.hi {
            return 0.0;
        }
        self.regions.iter().map(|r| r.w * r.pmf(page)).sum()
    }

    #[inline]
    pub fn sample(&self, rng: &mut Rng) -> u32 {
        self.sample_region(rng).0
    }

    /// A page and the index of the region it was drawn from.
    #[inline]
    pub fn sample_region(&self, rng: &mut Rng) -> (u32, usize) {
        let r = if self.regions.len() == 1 {
            0
        } else {
            self.alias.sample(rng)
        };
        (self.regions[r].sample(rng), r)
    }

    /// Recompute the per-tier mass from the page table (`tier_of` gives None if unallocated).
    pub fn recompute_mass(&mut self, tier_of: impl Fn(u32) -> Option<u8>) {
        let mut mass = vec![0.0; self.mass.len()];
        for r in &self.regions {
            r.for_each(|p, pr| {
                if let Some(t) = tier_of(p) {
                    mass[t as usize] += pr;
                }
            });
        }
        self.mass = mass;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pmf_sums_to_one_and_matches_samples() {
        let regions = vec![
            Region::range(0, 100, 0.9),
            Region::range(0, 1000, 0.1),
            Region::zipf(1000, 50, 0.99, 0.5, 3),
            Region::subset(2000, 100, 10, 0.5, 4),
        ];
        let d = Dist::new(0, regions, 2, 1.0);
        let total: f64 = (0..3000).map(|p| d.pmf(p)).sum();
        assert!((total - 1.0).abs() < 1e-9, "{total}");
        let mut rng = Rng::new(9);
        let mut hits = vec![0u32; 3000];
        let n = 400_000;
        for _ in 0..n {
            hits[d.sample(&mut rng) as usize] += 1;
        }
        for p in [0u32, 50, 500, 1000, 1001] {
            let expect = d.pmf(p) * n as f64;
            assert!(
                (hits[p as usize] as f64 - expect).abs() < 5.0 * expect.sqrt() + 5.0,
                "page {p}: {} vs {expect}",
                hits[p as usize]
            );
        }
        let in_subset = (2000..2100).filter(|&p| d.pmf(p) > 0.0).count();
        assert_eq!(in_subset, 10);
    }

    #[test]
    fn empirical_region_matches_its_counts() {
        let r = Region::empirical(100, vec![0, 5, 9], &[1.0, 3.0, 6.0], 1.0);
        let d = Dist::new(0, vec![r], 2, 1.0);
        assert!((d.pmf(105) - 0.3).abs() < 1e-12 && d.pmf(104) == 0.0 && d.pmf(99) == 0.0);
        let mut rng = Rng::new(3);
        let n = 100_000;
        let hits = (0..n).filter(|_| d.sample(&mut rng) == 109).count() as f64;
        assert!((hits / n as f64 - 0.6).abs() < 0.01, "{hits}");
    }

    #[test]
    fn recompute_mass_counts_allocated_pages() {
        let mut d = Dist::new(0, vec![Region::range(0, 10, 1.0)], 2, 1.0);
        d.recompute_mass(|p| {
            if p < 3 {
                Some(0)
            } else if p < 8 {
                Some(1)
            } else {
                None
            }
        });
        assert!((d.mass[0] - 0.3).abs() < 1e-12 && (d.mass[1] - 0.5).abs() < 1e-12);
    }
}
