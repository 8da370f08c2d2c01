//! Soar's profile of a real run (Soar/Alto OSDI'25 §4.1-4.3 on Linux): the three flows gathered
//! outside the simulator - the object flow from the allocation shim's profile log, the
//! memory-access flow from LLC-miss samples (`perf mem record`), the performance flow from
//! per-interval core counters (`perf stat -I`) - joined into Algorithm 1's score per object,
//! then per allocation site (the shim binds by call-chain hash), ranked by unit score and
//! selected for the fast tier by peak concurrent size.
//!
//! The same Algorithm 1 ([`crate::soar::Algorithm1`]) scores the simulator's profiling pass.

use std::collections::BTreeMap;

use crate::soar::{Algorithm1, Counters};

/// One allocation of the object flow (times in ns on the samples' clock).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowObject {
    pub site: u64,
    pub address: u64,
    pub bytes: u64,
    pub alloc_ns: u64,
    /// None: never freed during the profile.
    pub free_ns: Option<u64>,
}

/// One interval of the performance flow: it ends at `end_ns`; None when the host gave no
/// counters for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Interval {
    pub end_ns: u64,
    pub counters: Option<Counters>,
}

/// Per object: samples matched to it and its Algorithm 1 score; and what matched nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectScores {
    pub samples: Vec<u64>,
    pub scores: Vec<f64>,
    /// Samples at no live object's address (stack, globals, libraries, allocator metadata).
    pub unmatched: u64,
    /// Samples after the last interval's end (scored with the last interval).
    pub late: u64,
}

/// Match each sample `(time_ns, address)` to the object live at that address at that time
/// (alloc <= t < free, address <= a < address + bytes) and score the objects interval by
/// interval with Algorithm 1. `samples` need not be sorted.
pub fn score_objects(
    objs: &[FlowObject],
    samples: &[(u64, u64)],
    intervals: &[Interval],
    alg: &Algorithm1,
) -> ObjectScores {
    let mut out = ObjectScores {
        samples: vec![0; objs.len()],
        scores: vec![0.0; objs.len()],
        ..Default::default()
    };
    if intervals.is_empty() {
        out.unmatched = samples.len() as u64;
        return out;
    }
    // a sweep over time: allocations and frees keep the live objects by start address
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum Ev {
        // at equal times: a free first (its address may be reused), then an allocation, then
        // the samples (an object allocated at t is live at t)
        Free(usize),
        Alloc(usize),
        Sample(usize),
    }
    let mut evs: Vec<(u64, Ev)> = Vec::with_capacity(objs.len() * 2 + samples.len());
    for (i, o) in objs.iter().enumerate() {
        evs.push((o.alloc_ns, Ev::Alloc(i)));
        if let Some(f) = o.free_ns {
            evs.push((f.max(o.alloc_ns), Ev::Free(i)));
        }
    }
    for (j, &(t, _)) in samples.iter().enumerate() {
        evs.push((t, Ev::Sample(j)));
    }
    evs.sort_unstable();
    let mut live: BTreeMap<u64, usize> = BTreeMap::new();
    let mut k = 0usize; // current interval
    let mut counts: BTreeMap<usize, u64> = BTreeMap::new();
    let close = |k: usize, counts: &mut BTreeMap<usize, u64>, scores: &mut [f64]| {
        let c: Vec<(usize, u64)> = counts.iter().map(|(&i, &n)| (i, n)).collect();
        alg.score_interval(&c, intervals[k].counters, scores);
        counts.clear();
    };
    for (t, ev) in evs {
        match ev {
            Ev::Alloc(i) => {
                live.insert(objs[i].address, i);
            }
            Ev::Free(i) => {
                if live.get(&objs[i].address) == Some(&i) {
                    live.remove(&objs[i].address);
                }
            }
            Ev::Sample(j) => {
                while k + 1 < intervals.len() && t >= intervals[k].end_ns {
                    close(k, &mut counts, &mut out.scores);
                    k += 1;
                }
                if t >= intervals[k].end_ns {
                    out.late += 1;
                }
                let a = samples[j].1;
                match live.range(..=a).next_back() {
                    Some((&start, &i)) if a < start + objs[i].bytes => {
                        out.samples[i] += 1;
                        *counts.entry(i).or_default() += 1;
                    }
                    _ => out.unmatched += 1,
                }
            }
        }
    }
    close(k, &mut counts, &mut out.scores);
    out
}

/// One allocation site's profile and placement.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    pub site: u64,
    pub objects: u64,
    pub bytes: u64,
    /// The most bytes of this site live at once.
    pub peak_bytes: u64,
    pub samples: u64,
    pub score: f64,
    /// score / bytes (Soar §4.2 ranks by it).
    pub unit_score: f64,
    /// 1 = first.
    pub rank: usize,
    pub fast: bool,
}

/// The most bytes live at once among the objects `chosen` (a free at t before an allocation
/// at t: objects that never coexist share room).
fn peak_live(objs: &[FlowObject], chosen: impl Fn(&FlowObject) -> bool) -> u64 {
    let mut evs: Vec<(u64, i8, u64)> = Vec::new();
    for o in objs.iter().filter(|o| chosen(o)) {
        evs.push((o.alloc_ns, 1, o.bytes));
        if let Some(f) = o.free_ns {
            evs.push((f.max(o.alloc_ns), 0, o.bytes));
        }
    }
    evs.sort_unstable();
    let (mut live, mut peak) = (0u64, 0u64);
    for (_, kind, b) in evs {
        if kind == 1 {
            live += b;
            peak = peak.max(live);
        } else {
            live -= b;
        }
    }
    peak
}

/// Sum the objects' scores per site, rank the sites by unit score (ties: more samples first,
/// then the site hash) and choose the fast tier's sites (§4.3): in rank order while the peak
/// concurrent size of the chosen sites' objects fits in `fast_bytes`; the first site that does
/// not fit and every site below it stay in the slow tier (the shim binds a whole site, so the
/// paper's "the next object takes what is left by first touch" has no per-site equivalent).
/// Sites without samples are never chosen.
pub fn place_sites(objs: &[FlowObject], scored: &ObjectScores, fast_bytes: u64) -> Vec<Site> {
    let mut by_site: BTreeMap<u64, Site> = BTreeMap::new();
    for (i, o) in objs.iter().enumerate() {
        let s = by_site.entry(o.site).or_insert(Site {
            site: o.site,
            objects: 0,
            bytes: 0,
            peak_bytes: 0,
            samples: 0,
            score: 0.0,
            unit_score: 0.0,
            rank: 0,
            fast: false,
        });
        s.objects += 1;
        s.bytes += o.bytes;
        s.samples += scored.samples[i];
        s.score += scored.scores[i];
    }
    let mut sites: Vec<Site> = by_site.into_values().collect();
    for s in &mut sites {
        s.unit_score = s.score / s.bytes.max(1) as f64;
        s.peak_bytes = peak_live(objs, |o| o.site == s.site);
    }
    sites.sort_by(|a, b| {
        b.unit_score
            .total_cmp(&a.unit_score)
            .then(b.samples.cmp(&a.samples))
            .then(a.site.cmp(&b.site))
    });
    let mut chosen: Vec<u64> = Vec::new();
    let mut full = false;
    for (r, s) in sites.iter_mut().enumerate() {
        s.rank = r + 1;
        if full || s.samples == 0 {
            continue;
        }
        chosen.push(s.site);
        if peak_live(objs, |o| chosen.contains(&o.site)) <= fast_bytes {
            s.fast = true;
        } else {
            chosen.pop();
            full = true;
        }
    }
    sites
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alg() -> Algorithm1 {
        Algorithm1::new(0.03, 0.7, 8.0, 0.0, None)
    }

    fn obj(site: u64, address: u64, bytes: u64, alloc: u64, free: Option<u64>) -> FlowObject {
        FlowObject {
            site,
            address,
            bytes,
            alloc_ns: alloc,
            free_ns: free,
        }
    }

    #[test]
    fn samples_join_the_object_live_at_their_address_and_time() {
        // the same address holds site 1's object, then (after its free) site 2's
        let objs = [
            obj(1, 0x1000, 0x1000, 0, Some(100)),
            obj(2, 0x1000, 0x1000, 100, None),
        ];
        let samples = [
            (50, 0x1800),
            (100, 0x1800),
            (150, 0x1fff),
            (150, 0x2000),
            (5, 0x10),
        ];
        let iv = [Interval {
            end_ns: 1000,
            counters: None,
        }];
        let s = score_objects(&objs, &samples, &iv, &alg());
        assert_eq!(s.samples, vec![1, 2]);
        assert_eq!(s.unmatched, 2);
        // no counters: the score is the share of the interval's samples
        assert!((s.scores[0] - 1.0 / 3.0).abs() < 1e-12);
        assert!((s.scores[1] - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn each_interval_is_scored_with_its_own_counters() {
        // one small object (a chase, few samples) and one big (a stream, most samples)
        let objs = [
            obj(1, 0x10000, 4096, 0, None),
            obj(2, 0x100000, 1 << 20, 0, None),
        ];
        let mut samples = vec![(10, 0x10000)];
        samples.extend((0..99).map(|i| (20 + i, 0x100000 + i * 64)));
        let low_aol = Counters {
            a1: 30.0 * 1000.0,
            a3: 1000.0,
            stalls: 500.0,
            cycles: 1000.0,
        };
        let a = alg();
        let s = score_objects(
            &objs,
            &samples,
            &[Interval {
                end_ns: 1000,
                counters: Some(low_aol),
            }],
            &a,
        );
        // AOL 30 < L0 = 100: the rare object is amplified by F(30) = 2, the dominant one damped
        // by 8 (Algorithm 1), with p = s/c = 0.5
        assert!((s.scores[0] - 0.01 * 0.5 * 2.0).abs() < 1e-12, "{s:?}");
        assert!((s.scores[1] - 0.99 * 0.5 / 8.0).abs() < 1e-12, "{s:?}");
        // the same samples split over two intervals, the second without offcore reads: only
        // the first interval scores
        let s2 = score_objects(
            &objs,
            &samples,
            &[
                Interval {
                    end_ns: 15,
                    counters: Some(low_aol),
                },
                Interval {
                    end_ns: 1000,
                    counters: Some(Counters { a3: 0.0, ..low_aol }),
                },
            ],
            &a,
        );
        assert_eq!(s2.samples, vec![1, 99]);
        assert!(
            (s2.scores[0] - 0.5 / 8.0).abs() < 1e-12,
            "alone in its interval: R = 1 > R_max, damped"
        );
        assert_eq!(s2.scores[1], 0.0);
    }

    #[test]
    fn sites_are_chosen_by_unit_score_while_their_peak_fits() {
        // site 1: two 1 MiB objects that never coexist; site 2: 4 MiB, fewer samples per byte;
        // site 3: never sampled
        let objs = [
            obj(1, 0x0, 1 << 20, 0, Some(10)),
            obj(1, 0x0, 1 << 20, 10, Some(20)),
            obj(2, 0x1000_0000, 4 << 20, 0, None),
            obj(3, 0x2000_0000, 4096, 0, None),
        ];
        let scored = ObjectScores {
            samples: vec![5, 5, 10, 0],
            scores: vec![0.2, 0.2, 0.4, 0.0],
            ..Default::default()
        };
        let sites = place_sites(&objs, &scored, 2 << 20);
        let s1 = sites.iter().find(|s| s.site == 1).unwrap();
        assert_eq!(
            (s1.rank, s1.bytes, s1.peak_bytes, s1.fast),
            (1, 2 << 20, 1 << 20, true)
        );
        let s2 = sites.iter().find(|s| s.site == 2).unwrap();
        assert_eq!(
            (s2.rank, s2.fast),
            (2, false),
            "1 + 4 MiB does not fit in 2 MiB"
        );
        assert!(!sites.iter().find(|s| s.site == 3).unwrap().fast);
        // room for both: both chosen, the unsampled one still not
        let sites = place_sites(&objs, &scored, 5 << 20);
        assert_eq!(sites.iter().filter(|s| s.fast).count(), 2);
    }
}
