//! Soar (OSDI'25 §4): rank objects by their contribution to the slowdown and place the top of
//! the ranking in the fast tier at allocation, instead of migrating pages later.
//!
//! * **Profiling** (§4.1), one run with every page in the fast tier: the object flow (named
//!   allocations with size and lifetime: telemetry `objects` here, the LD_PRELOAD shim on Linux),
//!   the memory-access flow (PEBS-like LLC-miss samples, period 3001, matched to live objects by
//!   address and time) and the performance flow (per interval: AOL = A1/A3 and the predicted
//!   slowdown p = P K(AOL), §3.2, from the machine's calibration).
//! * **Scoring** (Algorithm 1), per interval and object: R = c / sum c; with l the interval's
//!   AOL and factor F(l): R < R_min and l < L0: s = R p factor (low-MLP object); R > R_max and
//!   l < L0: s = R p / factor (high-MLP object); otherwise s = R p. Scores add up over the
//!   object's life; the unit score s' = s / size ranks the objects (§4.2).
//! * **Placement** (§4.3): bind the top-ranked objects to the fast tier while their peak
//!   concurrent size fits (short-lived objects that never coexist share room), let the first
//!   that does not fit take what is left by first touch, bind the rest to the slow tier; when a
//!   top-ranked object finds the fast tier taken by lower-ranked pages, demote those.
//!
//! The factor follows the paper's text (§4.2), which differs from design.md's artifact table
//! (2/4/8/12 by AOL band): a dominant object is divided by 8 ("the MLP of access patterns with
//! high parallelism", `hot_factor`), a rarely accessed one is multiplied by 2, 4 or 8, a
//! stepwise function growing with AOL over the AOL bands Alto uses (40-50-60-80-100 cycles on the
//! paper's Skylake), placed between the machine's calibrated AOL_low and AOL_high. L0 (100 cycles
//! there, "where K stabilizes") is the calibrated AOL_high.

use std::collections::BTreeMap;

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::policy::Builder;
use tierkit_core::{
    Action, Error, Mechanism, MigrateMode, MigrationOutcome, PageId, Pid, Policy, PolicyInfo,
    SampleFilter, Telemetry, TelemetryNeeds, FAST, SLOW,
};

use crate::common::Residency;

const P: &[ParamDef] = &[
    ParamDef { name: "sample_period", kind: ParamKind::Int { min: 1, max: 1 << 30 }, default: "3001", unit: "misses", doc: "PEBS period of the profiling run (§4.1.1: ~3000 suffices)" },
    ParamDef { name: "interval_ms", kind: ParamKind::Float { min: 1.0, max: 1e6 }, default: "1000", unit: "ms", doc: "performance-flow interval (§4.1.1: every second)" },
    ParamDef { name: "r_min", kind: ParamKind::Float { min: 0.0, max: 1.0 }, default: "0.03", unit: "", doc: "R_min: below it an object is a low-frequency (low-MLP) one (Algorithm 1)" },
    ParamDef { name: "r_max", kind: ParamKind::Float { min: 0.0, max: 1.0 }, default: "0.7", unit: "", doc: "R_max: above it an object is a high-frequency (high-MLP) one" },
    ParamDef { name: "hot_factor", kind: ParamKind::Float { min: 1.0, max: 64.0 }, default: "8", unit: "", doc: "divisor of a dominant object's score at low AOL (§4.2: 8, the stream's MLP)" },
    ParamDef { name: "l0", kind: ParamKind::Float { min: 0.0, max: 1e6 }, default: "0", unit: "cycles", doc: "L0: AOL below which MLP is significant; 0 = the calibrated AOL_high (100 cycles on the paper's Skylake)" },
];

pub const INFO: PolicyInfo = PolicyInfo {
    name: "soar",
    description: "profile-guided object placement by AOL-weighted unit score (runs a fast-tier profiling pass first)",
    source: "Soar/Alto (OSDI'25) §4, Algorithm 1",
    params: P,
    positional: None,
    build: Builder::Base(|p| {
        check_bounds(p)?;
        Ok(Box::new(Soar::new(p)))
    }),
};

/// `r_min` is the low-frequency bound and `r_max` the high-frequency one: the first cannot lie
/// above the second (equal bounds leave no middle band, which is allowed).
fn check_bounds(p: &Params) -> tierkit_core::Result<()> {
    let (lo, hi) = (p.float("r_min"), p.float("r_max"));
    if lo > hi {
        return Err(Error::BadParam {
            policy: "soar".into(),
            param: "r_max".into(),
            expected: format!("a value at least r_min ({lo})"),
            got: hi.to_string(),
        });
    }
    Ok(())
}

/// The amplification of a rarely accessed object: 2, 4 or 8, growing with the AOL over bands
/// placed between `low` and `high` at the proportions of 40-50-60-80 cycles (§4.2).
pub fn factor(l: f64, low: f64, high: f64) -> f64 {
    let x = (l - low) / (high - low).max(1e-9);
    if x < 1.0 / 6.0 {
        2.0
    } else if x < 2.0 / 3.0 {
        4.0
    } else {
        8.0
    }
}

/// Algorithm 1: one interval's score of an object with access ratio `r`, given the interval's
/// predicted slowdown `p` and AOL `l`; `amplify` multiplies a rarely accessed object, `damp`
/// divides a dominant one, only while MLP is significant (l < L0).
#[allow(clippy::too_many_arguments)]
pub fn score(
    r: f64,
    p: f64,
    l: f64,
    amplify: f64,
    damp: f64,
    r_min: f64,
    r_max: f64,
    l0: f64,
) -> f64 {
    if r < r_min && l < l0 {
        r * p * amplify // low-MLP object
    } else if r > r_max && l < l0 {
        r * p / damp // high-MLP object
    } else {
        r * p
    }
}

/// One interval's performance flow (§4.1.1): A1 = OFFCORE_REQUESTS_OUTSTANDING.
/// CYCLES_WITH_DEMAND_DATA_RD (cycles with at least one demand read outstanding, Table 1; AOL =
/// A1/A3 = latency / MLP), A3 = OFFCORE_REQUESTS.DEMAND_DATA_RD, STALLS_L3_MISS, cycles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counters {
    pub a1: f64,
    pub a3: f64,
    pub stalls: f64,
    pub cycles: f64,
}

/// L0 in cycles: as given, or AOL_high ("where K stabilizes") when given as 0 (Soar §4.2).
fn resolve_l0(l0: f64, aol_high: f64) -> f64 {
    if l0 > 0.0 {
        l0
    } else {
        aol_high
    }
}

/// Algorithm 1 with its parameters and the machine's calibration (AOL bands, L0, predictor).
#[derive(Clone, Debug)]
pub struct Algorithm1 {
    pub r_min: f64,
    pub r_max: f64,
    pub hot_factor: f64,
    /// L0 in cycles (resolved: the calibrated AOL_high when given as 0).
    pub l0: f64,
    pub aol_low: f64,
    pub aol_high: f64,
    cal: Option<tierkit_core::telemetry::Calibration>,
}

impl Algorithm1 {
    /// Without a calibration the AOL bands are the paper's Skylake ones (40-100 cycles) and the
    /// predicted slowdown is P = s_LLC / c alone.
    pub fn new(
        r_min: f64,
        r_max: f64,
        hot_factor: f64,
        l0: f64,
        cal: Option<&tierkit_core::telemetry::Calibration>,
    ) -> Algorithm1 {
        let (aol_low, aol_high) =
            cal.map_or((40.0, 100.0), |c| (c.aol_low_cycles, c.aol_high_cycles));
        Algorithm1 {
            r_min,
            r_max,
            hot_factor,
            l0: resolve_l0(l0, aol_high),
            aol_low,
            aol_high,
            cal: cal.cloned(),
        }
    }

    /// Override the AOL bands (a real host's, given on the command line); an L0 of 0 follows
    /// the resolved AOL_high, as in [`Algorithm1::new`].
    pub fn with_bands(mut self, aol_low: Option<f64>, aol_high: Option<f64>, l0: f64) -> Self {
        self.aol_low = aol_low.unwrap_or(self.aol_low);
        self.aol_high = aol_high.unwrap_or(self.aol_high);
        self.l0 = resolve_l0(l0, self.aol_high);
        self
    }

    /// Add one interval's score of each object with samples in it, given as (index, samples),
    /// to `scores`. With counters: R = samples / all samples, l = A1/A3, p the predicted
    /// slowdown. Without (a host whose PMU does not count them): p = 1 and no MLP adjustment,
    /// so the score is the object's share of the interval's samples. An interval whose counters
    /// saw no offcore reads or no cycles adds nothing.
    pub fn score_interval(&self, counts: &[(usize, u64)], c: Option<Counters>, scores: &mut [f64]) {
        let total: u64 = counts.iter().map(|&(_, n)| n).sum();
        if total == 0 {
            return;
        }
        let (p, l) = match c {
            Some(c) if c.a3 <= 0.0 || c.cycles <= 0.0 => return,
            Some(c) => {
                let l = c.a1 / c.a3;
                let p = match &self.cal {
                    Some(cal) => cal.predict_slowdown(c.stalls, c.cycles, l),
                    None => c.stalls / c.cycles,
                };
                (p, l)
            }
            None => (1.0, f64::INFINITY),
        };
        let f = factor(l, self.aol_low, self.aol_high);
        for &(i, n) in counts {
            let r = n as f64 / total as f64;
            scores[i] += score(r, p, l, f, self.hot_factor, self.r_min, self.r_max, self.l0);
        }
    }
}

/// One object's profile.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectProfile {
    pub pid: Pid,
    pub name: String,
    pub first_page: u64,
    pub pages: u64,
    pub bytes: u64,
    pub alloc_s: f64,
    pub free_s: Option<f64>,
    pub accesses: u64,
    pub score: f64,
    pub first_touch: usize,
}

impl ObjectProfile {
    pub fn unit_score(&self) -> f64 {
        self.score / self.bytes.max(1) as f64
    }
    fn lifetime_s(&self, end_s: f64) -> f64 {
        self.free_s.unwrap_or(end_s) - self.alloc_s
    }
}

/// The ranking table (Table 2's columns): rows in Soar rank order, with the first-touch and
/// frequency ranks. `end_s` closes lifetimes that are still open.
pub fn ranking_table(objs: &[ObjectProfile], end_s: f64) -> String {
    let mut soar: Vec<usize> = (0..objs.len()).collect();
    soar.sort_by(|&a, &b| {
        objs[b]
            .unit_score()
            .total_cmp(&objs[a].unit_score())
            .then(a.cmp(&b))
    });
    let mut freq: Vec<usize> = (0..objs.len()).collect();
    freq.sort_by(|&a, &b| objs[b].accesses.cmp(&objs[a].accesses).then(a.cmp(&b)));
    let rank_of =
        |order: &[usize], i: usize| order.iter().position(|&x| x == i).map_or(0, |p| p + 1);
    let mut out = String::from("pid\tobject\tfirst_page\tpages\tbytes\talloc_s\tfree_s\tlifetime_s\taccesses\tscore\tunit_score\trank_first_touch\trank_frequency\trank_soar\n");
    for &i in &soar {
        let o = &objs[i];
        out += &format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{:e}\t{:e}\t{}\t{}\t{}\n",
            o.pid,
            o.name,
            o.first_page,
            o.pages,
            o.bytes,
            o.alloc_s,
            o.free_s.map_or("-".to_string(), |f| f.to_string()),
            o.lifetime_s(end_s),
            o.accesses,
            o.score,
            o.unit_score(),
            o.first_touch + 1,
            rank_of(&freq, i),
            rank_of(&soar, i)
        );
    }
    out
}

fn parse_ranking(text: &str) -> tierkit_core::Result<Vec<ObjectProfile>> {
    let bad = |line: usize, why: &str| Error::BadParam {
        policy: "soar".into(),
        param: "profile".into(),
        expected: format!("a ranking table (line {line}: {why})"),
        got: String::new(),
    };
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 14 {
            return Err(bad(n + 1, "expected 14 tab-separated fields"));
        }
        let num = |i: usize| {
            f[i].parse::<f64>()
                .map_err(|_| bad(n + 1, "a field is not a number"))
        };
        rows.push(ObjectProfile {
            pid: num(0)? as Pid,
            name: f[1].to_string(),
            first_page: num(2)? as u64,
            pages: num(3)? as u64,
            bytes: num(4)? as u64,
            alloc_s: num(5)?,
            free_s: if f[6] == "-" { None } else { Some(num(6)?) },
            accesses: num(8)? as u64,
            score: num(9)?,
            first_touch: num(11)? as usize - 1,
        });
    }
    Ok(rows)
}

/// The profiling run's observer (§4.1).
#[derive(Clone)]
pub struct SoarProfiler {
    period: u64,
    interval_ns: f64,
    r_min: f64,
    r_max: f64,
    l0: f64,
    hot_factor: f64,
    objs: Vec<ObjectProfile>,
    /// (first_page, index) sorted, for matching samples to objects.
    index: Vec<(u64, usize)>,
    live: Vec<bool>,
    counts: Vec<u64>,
    per_pid: BTreeMap<Pid, (f64, f64, f64, f64)>,
    next: f64,
    touched: usize,
    now_s: f64,
    samples: u64,
    cal: Option<tierkit_core::telemetry::Calibration>,
}

impl SoarProfiler {
    fn new(p: &Params) -> Self {
        SoarProfiler {
            period: p.u64("sample_period"),
            interval_ns: p.float("interval_ms") * 1e6,
            r_min: p.float("r_min"),
            r_max: p.float("r_max"),
            l0: p.float("l0"),
            hot_factor: p.float("hot_factor"),
            objs: Vec::new(),
            index: Vec::new(),
            live: Vec::new(),
            counts: Vec::new(),
            per_pid: BTreeMap::new(),
            next: 0.0,
            touched: 0,
            now_s: 0.0,
            samples: 0,
            cal: None,
        }
    }

    fn object_of(&self, page: u64) -> Option<usize> {
        let k = self.index.partition_point(|&(first, _)| first <= page);
        let (_, i) = *self.index.get(k.checked_sub(1)?)?;
        (page < self.objs[i].first_page + self.objs[i].pages).then_some(i)
    }

    fn algorithm1(&self) -> Algorithm1 {
        Algorithm1::new(
            self.r_min,
            self.r_max,
            self.hot_factor,
            self.l0,
            self.cal.as_ref(),
        )
    }

    fn close_interval(&mut self) {
        let alg = self.algorithm1();
        let mut scores = vec![0.0; self.objs.len()];
        for (&pid, &(a1, a3, stalls, cycles)) in &self.per_pid {
            let counts: Vec<(usize, u64)> = (0..self.objs.len())
                .filter(|&i| self.objs[i].pid == pid && self.counts[i] > 0)
                .map(|i| (i, self.counts[i]))
                .collect();
            let c = Counters {
                a1,
                a3,
                stalls,
                cycles,
            };
            alg.score_interval(&counts, Some(c), &mut scores);
        }
        for (o, s) in self.objs.iter_mut().zip(scores) {
            o.score += s;
        }
        self.counts.iter_mut().for_each(|c| *c = 0);
        self.per_pid.clear();
    }
}

impl Policy for SoarProfiler {
    fn name(&self) -> String {
        "soar-profiler".into()
    }
    fn needs(&self) -> TelemetryNeeds {
        TelemetryNeeds {
            sampling: Some((self.period, SampleFilter::AllMisses)),
            core_counters: true,
            quantum_ns: self.interval_ns as u64,
            ..Default::default()
        }
    }
    fn init(&mut self, tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        self.objs = tel
            .objects
            .iter()
            .map(|o| ObjectProfile {
                pid: o.pid,
                name: o.name.clone(),
                first_page: o.first_page.0,
                pages: o.pages,
                bytes: o.pages * tel.page_bytes,
                alloc_s: f64::NAN,
                free_s: None,
                accesses: 0,
                score: 0.0,
                first_touch: usize::MAX,
            })
            .collect();
        self.index = self
            .objs
            .iter()
            .enumerate()
            .map(|(i, o)| (o.first_page, i))
            .collect();
        self.index.sort();
        self.live = vec![false; self.objs.len()];
        self.counts = vec![0; self.objs.len()];
        self.cal = tel.calibration.clone();
        self.next = tel.now_ns as f64 + self.interval_ns;
        out.push(Action::SetSampling {
            period: self.period,
            filter: SampleFilter::AllMisses,
        });
    }
    fn step(&mut self, tel: &Telemetry, _mech: &mut dyn Mechanism, _out: &mut Vec<Action>) {
        self.now_s = tel.now_ns as f64 * 1e-9;
        // object flow: lifetimes and first-touch order
        for (i, o) in tel.objects.iter().enumerate().take(self.objs.len()) {
            if o.live && !self.live[i] {
                self.objs[i].alloc_s = (tel.now_ns - tel.epoch_ns) as f64 * 1e-9;
                self.objs[i].first_touch = self.touched;
                self.touched += 1;
            } else if !o.live && self.live[i] {
                self.objs[i].free_s = Some(self.now_s);
            }
            self.live[i] = o.live;
        }
        // memory-access flow: samples matched to live objects by address (and so time)
        for s in &tel.samples {
            self.samples += 1;
            if let Some(i) = self.object_of(s.page.0) {
                if self.live[i] {
                    self.counts[i] += 1;
                    self.objs[i].accesses += 1;
                }
            }
        }
        // performance flow
        for c in &tel.cores {
            let e = self.per_pid.entry(c.pid).or_default();
            *e = (
                e.0 + c.oro_cycles_with_demand_rd,
                e.1 + c.offcore_demand_rd,
                e.2 + c.stalls_l3_miss,
                e.3 + c.cycles,
            );
        }
        let now = tel.now_ns as f64;
        if now + 1e-6 >= self.next {
            self.next = crate::common::next_boundary(self.next, now, self.interval_ns);
            self.close_interval();
        }
    }
    fn stats(&self) -> Vec<(String, f64)> {
        vec![
            ("samples".into(), self.samples as f64),
            ("objects".into(), self.objs.len() as f64),
        ]
    }
    fn profile(&self) -> Option<String> {
        // the run may end inside an interval: score what it gathered
        let mut last = self.clone();
        last.close_interval();
        let mut objs = last.objs;
        for o in &mut objs {
            if o.alloc_s.is_nan() {
                o.alloc_s = self.now_s; // never allocated during the run
            }
        }
        // first-touch ranks must be a permutation: order by (first touch, index)
        let mut order: Vec<usize> = (0..objs.len()).collect();
        order.sort_by_key(|&i| (objs[i].first_touch, i));
        for (rank, &i) in order.iter().enumerate() {
            objs[i].first_touch = rank;
        }
        Some(ranking_table(&objs, self.now_s))
    }
}

/// The placement policy.
pub struct Soar {
    params: Params,
    ranking: Vec<ObjectProfile>,
    /// Objects bound to the fast tier, in rank order (indices into `ranking`).
    selected: Vec<usize>,
    res: Residency,
    demoted: u64,
    promoted: u64,
    spill: Option<usize>,
    /// Promotions of selected pages the machine refused or found no room for (its migration
    /// queue was full, or a victim's demotion failed): issued again once nothing Soar asked for
    /// is still in flight.
    retry: Vec<PageId>,
    /// Migrations issued and not yet reported back.
    inflight: u64,
    /// Pages the last retry round asked for, and how many promotions have been done since it
    /// went out (a round that moves none ends the retries: `promotions_given_up`).
    retried: u64,
    round_moved: u64,
    given_up: u64,
}

impl Soar {
    fn new(p: &Params) -> Self {
        Soar {
            params: p.clone(),
            ranking: Vec::new(),
            selected: Vec::new(),
            res: Residency::default(),
            demoted: 0,
            promoted: 0,
            spill: None,
            retry: Vec::new(),
            inflight: 0,
            retried: 0,
            round_moved: 0,
            given_up: 0,
        }
    }

    fn rank_of_page(&self, page: u64) -> Option<usize> {
        self.ranking
            .iter()
            .position(|o| page >= o.first_page && page < o.first_page + o.pages)
    }

    /// Choose the objects for the fast tier: in unit-score order, each if its peak concurrent
    /// size with the objects already chosen fits (objects that never coexist share room).
    fn select(&mut self, fast_pages: u64) {
        let mut chosen: Vec<usize> = Vec::new();
        for i in 0..self.ranking.len() {
            if self.ranking[i].score <= 0.0 {
                break;
            }
            let o = &self.ranking[i];
            // peak size of the chosen objects plus `o` at any allocation instant
            let group: Vec<&ObjectProfile> = chosen
                .iter()
                .map(|&j| &self.ranking[j])
                .chain([o])
                .collect();
            let alive_at = |t: f64| {
                group
                    .iter()
                    .filter(|x| x.alloc_s <= t && x.free_s.is_none_or(|f| f > t))
                    .map(|x| x.pages)
                    .sum::<u64>()
            };
            let peak = group
                .iter()
                .map(|x| alive_at(x.alloc_s))
                .max()
                .unwrap_or(o.pages);
            if peak <= fast_pages {
                chosen.push(i);
            } else if self.spill.is_none() {
                self.spill = Some(i);
            }
        }
        self.selected = chosen;
    }
}

impl Policy for Soar {
    fn name(&self) -> String {
        crate::common::spec_name("soar", P, &self.params)
    }
    fn needs(&self) -> TelemetryNeeds {
        TelemetryNeeds::default()
    }
    fn profiler(&self) -> Option<Box<dyn Policy>> {
        Some(Box::new(SoarProfiler::new(&self.params)))
    }
    /// Per page: its tier (1 B); the ranking is per object.
    fn memory_bytes(&self, space: &tierkit_core::PageSpace) -> u64 {
        Residency::bytes_for(space.pages)
    }
    fn reserve(&mut self, space: &tierkit_core::PageSpace) -> tierkit_core::Result<()> {
        self.res.reserve(space.pages)
    }
    fn allocated_bytes(&self) -> u64 {
        self.res.bytes()
    }
    fn accept_profile(&mut self, profile: &str) -> tierkit_core::Result<()> {
        self.ranking = parse_ranking(profile)?;
        Ok(())
    }
    fn init(&mut self, tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        let fast = tel.tier(FAST).map_or(0, |t| t.capacity_pages);
        self.select(fast);
        for (i, o) in self.ranking.iter().enumerate() {
            let tier = if self.selected.contains(&i) {
                FAST
            } else if self.spill == Some(i) {
                continue; // first touch: what is left of the fast tier, then the slow tier
            } else {
                SLOW
            };
            out.push(Action::BindObject {
                pid: o.pid,
                object: o.name.clone(),
                tier,
            });
        }
    }
    fn step(&mut self, tel: &Telemetry, mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        self.res.observe(tel);
        // Every migration of a Soar stack is Soar's own: each comes back once, done or not.
        self.inflight = self.inflight.saturating_sub(tel.migrations.len() as u64);
        for m in &tel.migrations {
            if m.to != FAST {
                continue;
            }
            match m.outcome {
                MigrationOutcome::Done => self.round_moved += 1,
                MigrationOutcome::Refused
                | MigrationOutcome::NoSpace
                | MigrationOutcome::Aborted => self.retry.push(m.page),
                MigrationOutcome::NoPage | MigrationOutcome::AlreadyThere => {}
            }
        }
        // A selected object's pages that found the fast tier full: demote pages of the
        // lowest-ranked objects resident there to make room, then move them up (§4.3).
        let mut need: Vec<PageId> = Vec::new();
        for e in &tel.allocated {
            if e.tier != FAST {
                if let Some(r) = self.rank_of_page(e.page.0) {
                    if self.selected.contains(&r) {
                        need.push(e.page);
                    }
                }
            }
        }
        // A round of retries goes out when the last one has come back: if it moved nothing,
        // the machine will not take these pages (migration off for the process), so stop.
        if self.inflight == 0 && !self.retry.is_empty() {
            if self.retried > 0 && self.round_moved == 0 {
                self.given_up += self.retry.len() as u64;
                self.retry.clear();
                self.retried = 0;
            } else {
                let before = need.len();
                need.extend(
                    self.retry
                        .drain(..)
                        .filter(|&p| matches!(mech.tier_of(p), Some(t) if t != FAST)),
                );
                self.retried = (need.len() - before) as u64;
                self.round_moved = 0;
            }
        }
        if need.is_empty() {
            return;
        }
        let free = tel.tier(FAST).map_or(0, |t| t.free_pages()) as usize;
        let mut victims = Vec::new();
        if need.len() > free {
            for r in (0..self.ranking.len()).rev() {
                if self.selected.contains(&r) {
                    continue;
                }
                let o = &self.ranking[r];
                for p in o.first_page..o.first_page + o.pages {
                    if victims.len() + free >= need.len() {
                        break;
                    }
                    if mech.tier_of(PageId(p)) == Some(FAST) {
                        victims.push(PageId(p));
                    }
                }
            }
        }
        for v in &victims {
            out.push(Action::Migrate {
                page: *v,
                to: SLOW,
                mode: MigrateMode::Async,
                keep_shadow: false,
            });
        }
        self.demoted += victims.len() as u64;
        let n = need.len().min(free + victims.len());
        self.inflight += (victims.len() + n) as u64;
        // what finds no room now waits for the next round
        self.retry.extend_from_slice(&need[n..]);
        for p in &need[..n] {
            out.push(Action::Migrate {
                page: *p,
                to: FAST,
                mode: MigrateMode::Async,
                keep_shadow: false,
            });
        }
        self.promoted += n as u64;
    }
    fn stats(&self) -> Vec<(String, f64)> {
        vec![
            ("objects_ranked".into(), self.ranking.len() as f64),
            ("objects_in_fast".into(), self.selected.len() as f64),
            ("room_demotions".into(), self.demoted as f64),
            ("late_promotions".into(), self.promoted as f64),
            ("promotions_given_up".into(), self.given_up as f64),
        ]
    }
}

/// Build Soar's profiler for `tierkit soar profile`.
pub fn profiler(spec_params: &[(String, String)]) -> tierkit_core::Result<Box<dyn Policy>> {
    let p = Params::resolve("soar", P, spec_params)?;
    check_bounds(&p)?;
    Ok(Box::new(SoarProfiler::new(&p)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tierkit_core::{MigrationResult, PageEvent, TierId};

    #[test]
    fn r_min_above_r_max_is_an_error() {
        let e = crate::build("soar:r_min=0.9,r_max=0.1")
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("soar")
                && e.contains("`r_max`")
                && e.contains("r_min (0.9)")
                && !e.contains('\n'),
            "{e}"
        );
        let raw = [
            ("r_min".to_string(), "0.9".to_string()),
            ("r_max".to_string(), "0.1".to_string()),
        ];
        assert!(profiler(&raw).is_err());
        crate::build("soar:r_min=0.5,r_max=0.5").unwrap();
    }

    #[test]
    fn band_overrides_move_an_unset_l0_with_aol_high() {
        let a = Algorithm1::new(0.03, 0.7, 8.0, 0.0, None);
        assert_eq!((a.aol_low, a.aol_high, a.l0), (40.0, 100.0, 100.0));
        let a = a.with_bands(Some(60.0), Some(180.0), 0.0);
        assert_eq!((a.aol_low, a.aol_high, a.l0), (60.0, 180.0, 180.0));
        // a given L0 stays; an absent band keeps the one before
        let a = Algorithm1::new(0.03, 0.7, 8.0, 90.0, None).with_bands(None, Some(150.0), 90.0);
        assert_eq!((a.aol_low, a.aol_high, a.l0), (40.0, 150.0, 90.0));
    }

    #[test]
    fn algorithm1_scales_low_and_high_frequency_objects() {
        // low AOL (significant MLP): a rarely accessed object is amplified, a dominant one damped
        let (p, l, f, l0) = (0.5, 30.0, 4.0, 100.0);
        assert_eq!(score(0.01, p, l, f, 8.0, 0.03, 0.7, l0), 0.01 * p * f);
        assert_eq!(score(0.8, p, l, f, 8.0, 0.03, 0.7, l0), 0.8 * p / 8.0);
        assert_eq!(score(0.3, p, l, f, 8.0, 0.03, 0.7, l0), 0.3 * p);
        // AOL at or above L0 (MLP ~ 1): accesses count evenly
        assert_eq!(score(0.01, p, 150.0, f, 8.0, 0.03, 0.7, l0), 0.01 * p);
        // the amplification grows with the AOL: 2, 4, 8
        assert_eq!(
            [
                factor(40.0, 40.0, 100.0),
                factor(55.0, 40.0, 100.0),
                factor(70.0, 40.0, 100.0),
                factor(95.0, 40.0, 100.0)
            ],
            [2.0, 4.0, 4.0, 8.0]
        );
    }

    fn obj(name: &str, pages: u64, alloc: f64, free: Option<f64>, score: f64) -> ObjectProfile {
        ObjectProfile {
            pid: 0,
            name: name.into(),
            first_page: 0,
            pages,
            bytes: pages * 4096,
            alloc_s: alloc,
            free_s: free,
            accesses: 0,
            score,
            first_touch: 0,
        }
    }

    #[test]
    fn the_ranking_table_round_trips_and_ranks_by_unit_score() {
        let objs = vec![
            obj("big", 100, 0.0, None, 1.0),
            obj("small", 10, 0.0, Some(5.0), 0.5),
        ];
        let t = ranking_table(&objs, 10.0);
        let back = parse_ranking(&t).unwrap();
        assert_eq!(back[0].name, "small", "higher unit score first");
        assert_eq!(back[1].lifetime_s(10.0), 10.0);
        assert!(parse_ranking("header\nnot\ta\ttable").is_err());
    }

    #[test]
    fn refused_promotions_are_issued_again_once_the_round_has_come_back() {
        // "hot" (pages 0-9) is bound to the fast tier, "cold" (10-19) fills it; hot's pages
        // were allocated in the slow tier. The machine takes the demotions and refuses 6 of
        // the 10 promotions (a full migration queue, as the simulator's at 1M requests).
        let mut s = Soar::new(&Params::resolve("soar", P, &[]).unwrap());
        let mut hot = obj("hot", 10, 0.0, None, 9.0);
        let mut cold = obj("cold", 10, 0.0, None, 1.0);
        hot.first_page = 0;
        cold.first_page = 10;
        s.ranking = vec![hot, cold];
        s.select(10);
        assert_eq!(s.selected, vec![0]);
        let mut tiers = vec![Some(SLOW); 10];
        tiers.extend(vec![Some(FAST); 10]);
        let mut mech = tierkit_core::testing::FakeMech::new(tiers);
        let tel_with = |used: u64| Telemetry {
            tiers: vec![tierkit_core::TierInfo {
                id: FAST,
                name: "f".into(),
                capacity_pages: 10,
                used_pages: used,
            }],
            ..Default::default()
        };
        let promoted = |out: &[Action]| -> Vec<u64> {
            out.iter()
                .filter_map(|a| match a {
                    Action::Migrate { page, to, .. } if *to == FAST => Some(page.0),
                    _ => None,
                })
                .collect()
        };
        let demoted = |out: &[Action]| {
            out.iter()
                .filter(|a| matches!(a, Action::Migrate { to, .. } if *to == SLOW))
                .count()
        };
        let mut tel = tel_with(10);
        for p in 0..10 {
            tel.allocated.push(PageEvent {
                page: PageId(p),
                pid: 0,
                tier: SLOW,
            });
        }
        let mut out = Vec::new();
        s.step(&tel, &mut mech, &mut out);
        assert_eq!((promoted(&out).len(), demoted(&out)), (10, 10));
        // the results: every demotion done, promotions of pages 0-3 done, 4-9 refused
        let mut tel = tel_with(4);
        for p in 10..20 {
            mech.tiers[p] = Some(SLOW);
            tel.migrations
                .push(result(p as u64, FAST, SLOW, MigrationOutcome::Done));
        }
        for p in 0..10u64 {
            let outcome = if p < 4 {
                mech.tiers[p as usize] = Some(FAST);
                MigrationOutcome::Done
            } else {
                MigrationOutcome::Refused
            };
            tel.migrations.push(result(p, SLOW, FAST, outcome));
        }
        let mut out = Vec::new();
        s.step(&tel, &mut mech, &mut out);
        // the refused six go again into the room the demotions left, and nothing more is demoted
        assert_eq!((promoted(&out), demoted(&out)), ((4..10).collect(), 0));
        // refused again: a retry round that moves nothing ends the retries (the machine will
        // not take these pages), so Soar does not ask every step
        let mut tel = tel_with(4);
        for p in 4..10u64 {
            tel.migrations
                .push(result(p, SLOW, FAST, MigrationOutcome::Refused));
        }
        let mut out = Vec::new();
        s.step(&tel, &mut mech, &mut out);
        assert!(out.is_empty());
        s.step(&tel_with(4), &mut mech, &mut out);
        assert!(out.is_empty());
        let given_up = s
            .stats()
            .into_iter()
            .find(|(k, _)| k == "promotions_given_up");
        assert_eq!(given_up.map(|(_, v)| v), Some(6.0));
    }

    fn result(page: u64, from: TierId, to: TierId, outcome: MigrationOutcome) -> MigrationResult {
        MigrationResult {
            page: PageId(page),
            from,
            to,
            outcome,
            remap: false,
        }
    }

    #[test]
    fn selection_fits_peak_concurrent_size_and_spills_the_next() {
        let mut s = Soar::new(&Params::resolve("soar", P, &[]).unwrap());
        // two short-lived objects that never coexist share room; the third does not fit
        s.ranking = vec![
            obj("a", 60, 0.0, Some(10.0), 9.0),
            obj("b", 60, 10.0, Some(20.0), 8.0),
            obj("c", 60, 0.0, None, 7.0),
            obj("d", 10, 0.0, None, 0.0),
        ];
        s.select(100);
        assert_eq!(s.selected, vec![0, 1]);
        assert_eq!(s.spill, Some(2));
        let mut out = Vec::new();
        let mut mech = tierkit_core::testing::FakeMech::new(vec![]);
        let tel = Telemetry {
            tiers: vec![tierkit_core::TierInfo {
                id: FAST,
                name: "f".into(),
                capacity_pages: 100,
                used_pages: 0,
            }],
            ..Default::default()
        };
        s.init(&tel, &mut mech, &mut out);
        let binds: Vec<(String, u8)> = out
            .iter()
            .filter_map(|a| {
                if let Action::BindObject { object, tier, .. } = a {
                    Some((object.clone(), *tier))
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(
            binds,
            vec![("a".into(), FAST), ("b".into(), FAST), ("d".into(), SLOW)]
        );
    }
}
