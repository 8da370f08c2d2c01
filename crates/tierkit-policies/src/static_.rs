//! Static: the manual best-case placement of Colloid (SOSP '24) §2.1. "We determine the
//! best-case memory placement for each configuration by manually placing 0-100% of the hot set in
//! the default tier (in increments of 10) using the Linux mbind API; the remaining hot set is
//! placed in the alternate tier and any remaining capacity in the default tier is filled with
//! randomly chosen pages from the cold set."
//!
//! - The hot set is the object(s) named by `hot_object` (from the backend's object table); the
//!   target is every process that has such an object, and its cold set is all its other pages.
//!   Pages of other processes (an antagonist, say) are left where they are, and the fast pages
//!   they hold are not available to the placement.
//! - The placement: with a seeded generator, a random round(`hot_fraction` x hot pages) hot pages
//!   in the fast tier (fewer if it cannot hold them: reported as `hot_shortfall`), the rest of the
//!   fast capacity the target may use filled with randomly chosen cold pages, every other target
//!   page in the slow tier.
//! - At `init` nothing is allocated yet, but the objects are known: like Colloid's mbind before
//!   the run, the policy binds every page of the target's objects to its tier in that placement
//!   (`Action::BindRange`, coalesced into runs), assuming the target may use every free fast
//!   page. A backend that honours the bindings allocates the placement directly.
//! - It then waits until every page of every object of the target is resident, or at most
//!   `max_wait_ms` after the target's first page arrived (then it works with what is resident;
//!   later pages stay where first touch put them; an object allocated late, or freed before the
//!   others arrive, thus delays this step to that limit), and computes the placement again from
//!   what is resident and what the other processes hold in the fast tier. The same seed over the
//!   same pages gives the same choice (with less room, a subset of it), so when the bindings
//!   were honoured and the guess about room was right nothing needs to move.
//! - Otherwise it plans the migrations once, demotions first so that no step needs more fast
//!   pages than are free (a demotion waits for a promotion only if the slow tier is full), and
//!   carries the plan out in that order as fast as the machine's migration threads allow: at most
//!   `batch_pages` migrations in flight (a machine's migration queue is finite). A migration that
//!   fails for lack of room or a full queue is retried at the end of the plan, up to three times.
//!   Then the policy does nothing.
//!
//! A sweep over `hot_fraction` (0, 0.1, ..., 1) and taking the best run gives Colloid's best case.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use tierkit_core::action::MigrateMode;
use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::policy::Builder;
use tierkit_core::telemetry::{MigrationOutcome, ObjectInfo};
use tierkit_core::{
    Action, Mechanism, PageId, PageSpace, Pid, Policy, PolicyInfo, Rng, Telemetry, TelemetryNeeds,
    TierId, FAST, SLOW,
};

use crate::common::{spec_name, Dense, Residency};
use crate::place::object_names;

const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "hot_fraction",
        kind: ParamKind::Float { min: 0.0, max: 1.0 },
        default: "1.0",
        unit: "",
        doc: "Fraction of the hot set placed in the fast tier, as a random subset (Colloid §2.1 sweeps 0 to 1 in steps of 0.1).",
    },
    ParamDef {
        name: "hot_object",
        kind: ParamKind::Objects,
        default: "hot",
        unit: "",
        doc: "Name of the object that is the hot set (several names separated by `;`).",
    },
    ParamDef {
        name: "seed",
        kind: ParamKind::Int { min: 0, max: i64::MAX },
        default: "1",
        unit: "",
        doc: "Seed of the random choice of hot and cold pages.",
    },
    ParamDef {
        name: "batch_pages",
        kind: ParamKind::Int { min: 1, max: 1 << 32 },
        default: "65536",
        unit: "pages",
        doc: "Migrations of the placement kept in flight at once.",
    },
    ParamDef {
        name: "max_wait_ms",
        kind: ParamKind::Int { min: 0, max: 1 << 40 },
        default: "1000",
        unit: "ms",
        doc: "Place at the latest this long after the target's first page is allocated, even if some of its objects are not fully resident.",
    },
];

pub const INFO: PolicyInfo = PolicyInfo {
    name: "static",
    description: "manual placement: a random hot_fraction of the hot object in the fast tier, the rest of the fast tier filled with random cold pages, once",
    source: "Colloid SOSP'24 §2.1 (best-case manual placement)",
    params: PARAMS,
    positional: Some("hot_fraction"),
    build: Builder::Base(|p| Ok(Box::new(StaticPlace::new(p)))),
};

const NO_OWNER: u32 = u32::MAX;
/// Scratch of the placement per page, at most: the hot and cold lists (8 B a page, twice for
/// `Vec` growth), the pages chosen for the fast tier and the ones to move (8 B each), and the
/// plan (a 16 B [`Move`] a page, twice for growth).
const PLACE_SCRATCH: u64 = 2 * 8 + 8 + 8 + 2 * 16;
/// Attempts per migration of the plan.
const TRIES: u8 = 3;

/// One migration of the plan.
#[derive(Clone, Copy, Debug)]
struct Move {
    page: PageId,
    to: TierId,
    tries: u8,
}

/// A page range of one of the target's objects.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Range {
    start: u64,
    end: u64,
    hot: bool,
}

pub struct StaticPlace {
    spec: String,
    names: Vec<String>,
    hot_fraction: f64,
    seed: u64,
    max_wait_ns: u64,
    batch: usize,

    residency: Residency,
    /// The process each resident page belongs to.
    owner: Dense<u32>,
    objects: Vec<ObjectInfo>,
    target: BTreeSet<Pid>,
    /// The target's objects, sorted by first page.
    ranges: Vec<Range>,
    needed: u64,
    resident_in_ranges: u64,
    first_alloc_ns: Option<u64>,
    placed_at_ns: Option<u64>,
    done_at_ns: Option<u64>,
    plan: VecDeque<Move>,
    in_flight: BTreeMap<PageId, Move>,

    hot_pages: u64,
    hot_fast: u64,
    cold_fast: u64,
    hot_shortfall: u64,
    stuck: u64,
    retries: u64,
    bind_ranges: u64,
    promotions: u64,
    demotions: u64,
    migrations_done: u64,
    migrations_failed: u64,
    pages_tracked: u64,
    table_bytes: u64,
}

impl StaticPlace {
    pub fn new(p: &Params) -> Self {
        StaticPlace {
            spec: spec_name(INFO.name, PARAMS, p),
            names: object_names(p.str("hot_object")),
            hot_fraction: p.float("hot_fraction"),
            seed: p.u64("seed"),
            max_wait_ns: p.u64("max_wait_ms") * 1_000_000,
            batch: p.u64("batch_pages") as usize,
            residency: Residency::default(),
            owner: Dense::new(NO_OWNER),
            objects: Vec::new(),
            target: BTreeSet::new(),
            ranges: Vec::new(),
            needed: 0,
            resident_in_ranges: 0,
            first_alloc_ns: None,
            placed_at_ns: None,
            done_at_ns: None,
            plan: VecDeque::new(),
            in_flight: BTreeMap::new(),
            hot_pages: 0,
            hot_fast: 0,
            cold_fast: 0,
            hot_shortfall: 0,
            stuck: 0,
            retries: 0,
            bind_ranges: 0,
            promotions: 0,
            demotions: 0,
            migrations_done: 0,
            migrations_failed: 0,
            pages_tracked: 0,
            table_bytes: 0,
        }
    }

    fn range_of(&self, p: PageId) -> Option<&Range> {
        let i = self.ranges.partition_point(|r| r.start <= p.0);
        self.ranges[..i].last().filter(|r| p.0 < r.end)
    }

    /// Learn (or relearn) the target and its objects from the backend's object table.
    fn learn_objects(&mut self, objects: &[ObjectInfo]) {
        if objects.is_empty() || objects == self.objects.as_slice() {
            return;
        }
        self.objects = objects.to_vec();
        self.target = objects
            .iter()
            .filter(|o| self.names.contains(&o.name))
            .map(|o| o.pid)
            .collect();
        self.ranges = objects
            .iter()
            .filter(|o| self.target.contains(&o.pid))
            .map(|o| Range {
                start: o.first_page.0,
                end: o.first_page.0 + o.pages,
                hot: self.names.contains(&o.name),
            })
            .collect();
        self.ranges.sort_by_key(|r| r.start);
        self.needed = self.ranges.iter().map(|r| r.end - r.start).sum();
        self.resident_in_ranges = self
            .ranges
            .iter()
            .flat_map(|r| r.start..r.end)
            .filter(|&p| *self.owner.get(PageId(p)) != NO_OWNER)
            .count() as u64;
    }

    fn observe_events(&mut self, tel: &Telemetry) {
        self.residency.observe(tel);
        for e in &tel.allocated {
            if *self.owner.get(e.page) == NO_OWNER && self.range_of(e.page).is_some() {
                self.resident_in_ranges += 1;
            }
            self.owner.set(e.page, e.pid);
            if self.first_alloc_ns.is_none() && self.target.contains(&e.pid) {
                self.first_alloc_ns = Some(tel.now_ns);
            }
        }
        for e in &tel.freed {
            if *self.owner.get(e.page) != NO_OWNER && self.range_of(e.page).is_some() {
                self.resident_in_ranges -= 1;
            }
            self.owner.set(e.page, NO_OWNER);
        }
    }

    fn ready(&self, now_ns: u64) -> bool {
        if self.target.is_empty() {
            return false;
        }
        match self.first_alloc_ns {
            None => false,
            Some(t0) => self.resident_in_ranges >= self.needed || now_ns >= t0 + self.max_wait_ns,
        }
    }

    /// The target pages to place in the fast tier, sorted: a random round(f x hot) of `hot` (at
    /// most `avail`) and random `cold` pages for the rest of `avail`. Both lists must come in
    /// page order, so that the same pages give the same choice.
    fn choose(&mut self, hot: &mut [PageId], cold: &mut [PageId], avail: u64) -> Vec<PageId> {
        let want_hot = (self.hot_fraction * hot.len() as f64).round() as u64;
        let k = want_hot.min(avail);
        let r = (avail - k).min(cold.len() as u64);
        self.hot_pages = hot.len() as u64;
        self.hot_shortfall = want_hot - k;
        self.hot_fast = k;
        self.cold_fast = r;
        let mut in_fast: Vec<PageId> = Vec::with_capacity((k + r) as usize);
        in_fast.extend(random_subset(
            &mut Rng::derive(self.seed, 1),
            hot,
            k as usize,
        ));
        in_fast.extend(random_subset(
            &mut Rng::derive(self.seed, 2),
            cold,
            r as usize,
        ));
        in_fast.sort_unstable();
        in_fast
    }

    /// Before anything is allocated: mbind every page of the target's objects to the tier the
    /// placement gives it, assuming the target may use all the free fast capacity. Runs of pages
    /// with one tier become one `BindRange`.
    fn bind(&mut self, tel: &Telemetry, out: &mut Vec<Action>) {
        let pages = |hot: bool| -> Vec<PageId> {
            self.ranges
                .iter()
                .filter(|r| r.hot == hot)
                .flat_map(|r| (r.start..r.end).map(PageId))
                .collect()
        };
        let (mut hot, mut cold) = (pages(true), pages(false));
        let avail = tel.tier(FAST).map_or(0, |t| t.free_pages());
        let in_fast = self.choose(&mut hot, &mut cold, avail);
        let mut next_fast = in_fast.iter().peekable();
        let mut run: Option<(u64, u64, TierId)> = None;
        let flush = |run: (u64, u64, TierId), out: &mut Vec<Action>| {
            out.push(Action::BindRange {
                first: PageId(run.0),
                pages: run.1,
                tier: run.2,
            });
        };
        for r in &self.ranges {
            for p in r.start..r.end {
                while next_fast.next_if(|q| q.0 < p).is_some() {}
                let t = if next_fast.next_if(|q| q.0 == p).is_some() {
                    FAST
                } else {
                    SLOW
                };
                run = match run {
                    Some((first, n, rt)) if rt == t && first + n == p => Some((first, n + 1, t)),
                    Some(done) => {
                        flush(done, out);
                        self.bind_ranges += 1;
                        Some((p, 1, t))
                    }
                    None => Some((p, 1, t)),
                };
            }
        }
        if let Some(done) = run {
            flush(done, out);
            self.bind_ranges += 1;
        }
    }

    /// Choose the placement and emit the migrations that reach it.
    fn place(&mut self, tel: &Telemetry, out: &mut Vec<Action>) {
        let mut hot = Vec::new();
        let mut cold = Vec::new();
        let mut target_in_fast = 0;
        for i in 0..self.residency.page_space() {
            let p = PageId(i);
            let Some(t) = self.residency.tier(p) else {
                continue;
            };
            let owner = *self.owner.get(p);
            if owner == NO_OWNER || !self.target.contains(&owner) {
                continue;
            }
            target_in_fast += u64::from(t == FAST);
            if self.range_of(p).is_some_and(|r| r.hot) {
                hot.push(p);
            } else {
                cold.push(p);
            }
        }
        let fast = tel.tier(FAST);
        let cap = fast.map_or(0, |t| t.capacity_pages);
        let others_fast = fast
            .map_or(0, |t| t.used_pages)
            .saturating_sub(target_in_fast);
        let avail = cap.saturating_sub(others_fast);

        let in_fast = self.choose(&mut hot, &mut cold, avail);
        let chosen = |p: &PageId| in_fast.binary_search(p).is_ok();
        let mut down: Vec<PageId> = hot
            .iter()
            .chain(&cold)
            .copied()
            .filter(|&p| self.residency.tier(p) == Some(FAST) && !chosen(&p))
            .collect();
        down.sort_unstable();
        let up: Vec<PageId> = in_fast
            .into_iter()
            .filter(|&p| self.residency.tier(p) != Some(FAST))
            .collect();

        // demotions first; a demotion waits for a promotion only when the slow tier is full
        let mut fast_free = cap.saturating_sub(fast.map_or(0, |t| t.used_pages));
        let mut slow_free = tel.tier(SLOW).map_or(0, |t| t.free_pages());
        let (mut d, mut u) = (down.into_iter().peekable(), up.into_iter().peekable());
        loop {
            let (page, to) = if d.peek().is_some() && slow_free > 0 {
                slow_free -= 1;
                fast_free += 1;
                (d.next(), SLOW)
            } else if u.peek().is_some() && fast_free > 0 {
                fast_free -= 1;
                slow_free += 1;
                (u.next(), FAST)
            } else {
                break;
            };
            let page = page.unwrap_or_else(|| unreachable!("peeked"));
            self.plan.push_back(Move { page, to, tries: 0 });
        }
        self.stuck = (d.count() + u.count()) as u64;
        self.placed_at_ns = Some(tel.now_ns);
        self.issue(tel.now_ns, out);

        // the placement is done: drop the per-page tables
        self.pages_tracked = self.residency.count(FAST) + self.residency.count(SLOW);
        self.table_bytes = (self.owner.bytes() + self.residency.page_space() as usize) as u64;
        self.residency = Residency::default();
        self.owner = Dense::new(NO_OWNER);
    }

    /// Issue the plan's next migrations, keeping at most `batch` in flight.
    fn issue(&mut self, now_ns: u64, out: &mut Vec<Action>) {
        while self.in_flight.len() < self.batch {
            let Some(m) = self.plan.pop_front() else {
                break;
            };
            if self.in_flight.contains_key(&m.page) {
                // a retry of a page whose earlier attempt is still in flight: later
                self.plan.push_back(m);
                break;
            }
            out.push(Action::Migrate {
                page: m.page,
                to: m.to,
                mode: MigrateMode::Async,
                keep_shadow: false,
            });
            if m.tries == 0 {
                if m.to == FAST {
                    self.promotions += 1;
                } else {
                    self.demotions += 1;
                }
            }
            self.in_flight.insert(
                m.page,
                Move {
                    tries: m.tries + 1,
                    ..m
                },
            );
        }
        if self.plan.is_empty() && self.in_flight.is_empty() && self.done_at_ns.is_none() {
            self.done_at_ns = Some(now_ns);
        }
    }

    fn observe_results(&mut self, tel: &Telemetry) {
        for r in &tel.migrations {
            let Some(m) = self.in_flight.remove(&r.page) else {
                continue;
            };
            match r.outcome {
                MigrationOutcome::Done | MigrationOutcome::AlreadyThere => {
                    self.migrations_done += 1
                }
                MigrationOutcome::NoSpace
                | MigrationOutcome::Refused
                | MigrationOutcome::Aborted
                    if m.tries < TRIES =>
                {
                    self.retries += 1;
                    self.plan.push_back(m);
                }
                _ => self.migrations_failed += 1,
            }
        }
    }
}

/// Move a uniformly random `k`-subset of `v` to its front (partial Fisher-Yates) and return it.
fn random_subset<'a>(rng: &mut Rng, v: &'a mut [PageId], k: usize) -> &'a [PageId] {
    let n = v.len();
    for i in 0..k.min(n) {
        let j = i + rng.below((n - i) as u64) as usize;
        v.swap(i, j);
    }
    &v[..k.min(n)]
}

impl Policy for StaticPlace {
    fn name(&self) -> String {
        self.spec.clone()
    }

    fn needs(&self) -> TelemetryNeeds {
        TelemetryNeeds {
            bind_ranges: true,
            ..TelemetryNeeds::default()
        }
    }

    /// Per page: its tier (1 B) and its process (4 B) until the placement; while placing, the
    /// target's pages split hot and cold, the chosen ones, the ones to move and the plan
    /// ([`PLACE_SCRATCH`] bytes per page at most, `Vec` growth included).
    fn memory_bytes(&self, space: &PageSpace) -> u64 {
        Residency::bytes_for(space.pages)
            + Dense::<u32>::bytes_for(space.pages)
            + space.pages.saturating_mul(PLACE_SCRATCH)
    }

    fn reserve(&mut self, space: &PageSpace) -> tierkit_core::Result<()> {
        self.residency.reserve(space.pages)?;
        self.owner
            .reserve(space.pages, "the static placement's owner table")
    }

    fn allocated_bytes(&self) -> u64 {
        self.residency.bytes()
            + self.owner.bytes() as u64
            + (self.plan.capacity() * std::mem::size_of::<Move>()) as u64
    }

    fn init(&mut self, tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        self.learn_objects(&tel.objects);
        if !self.target.is_empty() {
            self.bind(tel, out);
        }
    }

    fn step(&mut self, tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        if self.placed_at_ns.is_some() {
            self.observe_results(tel);
            self.issue(tel.now_ns, out);
            return;
        }
        self.learn_objects(&tel.objects);
        self.observe_events(tel);
        if self.ready(tel.now_ns) {
            self.place(tel, out);
        }
    }

    fn stats(&self) -> Vec<(String, f64)> {
        let tracked = if self.placed_at_ns.is_some() {
            self.pages_tracked
        } else {
            self.residency.count(FAST) + self.residency.count(SLOW)
        };
        let plan_bytes =
            (self.plan.capacity() + self.in_flight.len()) * std::mem::size_of::<Move>();
        let table_bytes = (self.owner.bytes() + self.residency.page_space() as usize + plan_bytes)
            as u64
            + self.table_bytes;
        let mut v: Vec<(&str, f64)> = vec![
            ("placed", u64::from(self.placed_at_ns.is_some()) as f64),
            ("target_processes", self.target.len() as f64),
            ("hot_pages", self.hot_pages as f64),
            ("hot_pages_fast", self.hot_fast as f64),
            ("cold_pages_fast", self.cold_fast as f64),
            ("hot_shortfall", self.hot_shortfall as f64),
            ("bind_ranges", self.bind_ranges as f64),
            ("migrations_unordered", self.stuck as f64),
            (
                "migrations_outstanding",
                (self.plan.len() + self.in_flight.len()) as f64,
            ),
            ("migrations_retried", self.retries as f64),
            ("promotions_issued", self.promotions as f64),
            ("demotions_issued", self.demotions as f64),
            (
                "migrations_issued",
                (self.promotions + self.demotions) as f64,
            ),
            ("migrations_done", self.migrations_done as f64),
            ("migrations_failed", self.migrations_failed as f64),
            ("pages_tracked", tracked as f64),
            ("table_bytes", table_bytes as f64),
        ];
        // times only once they happened
        if let Some(t) = self.placed_at_ns {
            v.push(("placed_at_ms", t as f64 / 1e6));
        }
        if let Some(t) = self.done_at_ns {
            v.push(("done_at_ms", t as f64 / 1e6));
        }
        v.into_iter().map(|(k, x)| (k.to_string(), x)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testbed::Machine;
    use proptest::prelude::*;

    fn object(pid: Pid, name: &str, first: u64, pages: u64) -> ObjectInfo {
        ObjectInfo {
            pid,
            name: name.into(),
            first_page: PageId(first),
            pages,
            live: false,
        }
    }

    fn stat(p: &dyn Policy, k: &str) -> f64 {
        p.stats().into_iter().find(|(n, _)| n == k).unwrap().1
    }

    fn policy(args: &[(&str, &str)]) -> StaticPlace {
        let raw: Vec<(String, String)> = args
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        StaticPlace::new(&Params::resolve("static", PARAMS, &raw).unwrap())
    }

    /// First-touch allocation of a page range that ignores bindings (a machine without mbind,
    /// or pages allocated before the policy started): fast while it has room, then slow.
    fn first_touch(m: &mut Machine, pages: std::ops::Range<u64>, pid: Pid) {
        for p in pages {
            let t = if m.used(FAST) < m.cap[FAST as usize] {
                FAST
            } else {
                SLOW
            };
            m.alloc(p, t, pid);
        }
    }

    /// A GUPS-like target (pid 0: 40 hot pages at 100.., 200 cold at 140..) and an antagonist
    /// (pid 1: 10 pages at 400.. allocated first, in the fast tier) on a 50-page fast tier.
    fn gups() -> Machine {
        let mut m = Machine::new(&[50, 500]);
        m.objects = vec![
            object(0, "hot", 100, 40),
            object(0, "cold", 140, 200),
            object(1, "buf", 400, 10),
        ];
        m
    }

    fn run(fraction: &str, seed: &str) -> (Machine, Vec<Action>, StaticPlace) {
        let mut m = gups();
        let mut pol = policy(&[("hot_fraction", fraction), ("seed", seed)]);
        m.init(&mut pol);
        first_touch(&mut m, 400..410, 1);
        first_touch(&mut m, 140..340, 0);
        first_touch(&mut m, 100..140, 0);
        let out = m.run_for(&mut pol, vec![], 3);
        (m, out, pol)
    }

    fn tiers_of(m: &Machine, pages: std::ops::Range<u64>, t: TierId) -> usize {
        pages.filter(|&p| m.tier[p as usize] == Some(t)).count()
    }

    #[test]
    fn places_a_random_fraction_of_the_hot_set_and_fills_the_fast_tier() {
        for (f, k) in [("0", 0), ("0.25", 10), ("0.5", 20), ("0.9", 36), ("1", 40)] {
            let (m, out, pol) = run(f, "1");
            assert_eq!(tiers_of(&m, 100..140, FAST), k, "hot_fraction {f}");
            // the antagonist keeps its 10 fast pages; the target fills the other 40
            assert_eq!(tiers_of(&m, 400..410, FAST), 10);
            assert_eq!(tiers_of(&m, 140..340, FAST), 40 - k);
            assert_eq!((m.used(FAST), m.nospace), (50, 0));
            // demotions come first, and nothing of the antagonist moves
            let to: Vec<TierId> = out
                .iter()
                .map(|a| match a {
                    Action::Migrate { page, to, .. } => {
                        assert!((100..340).contains(&page.0));
                        *to
                    }
                    _ => panic!("{a:?}"),
                })
                .collect();
            assert!(to.windows(2).all(|w| w[0] >= w[1]), "{to:?}");
            assert_eq!(
                (stat(&pol, "hot_pages"), stat(&pol, "hot_pages_fast")),
                (40.0, k as f64)
            );
            assert_eq!(stat(&pol, "placed"), 1.0);
        }
    }

    #[test]
    fn the_choice_is_random_and_seeded() {
        let fast = |m: &Machine| {
            (100..340)
                .filter(|&p| m.tier[p as usize] == Some(FAST))
                .collect::<Vec<_>>()
        };
        let (a, ..) = run("0.5", "1");
        let (b, ..) = run("0.5", "1");
        let (c, ..) = run("0.5", "2");
        assert_eq!(fast(&a), fast(&b));
        assert_ne!(fast(&a), fast(&c));
        // not simply the first hot pages
        assert_ne!(
            fast(&a)
                .iter()
                .filter(|&&p| p < 140)
                .copied()
                .collect::<Vec<_>>(),
            (100..120).collect::<Vec<_>>()
        );
    }

    #[test]
    fn waits_for_the_target_to_be_allocated_then_acts_once() {
        let mut m = gups();
        let mut pol = policy(&[("hot_fraction", "0.5")]);
        m.init(&mut pol);
        first_touch(&mut m, 140..340, 0);
        assert!(m.run_for(&mut pol, vec![], 5).is_empty());
        first_touch(&mut m, 100..140, 0);
        assert!(!m.run_for(&mut pol, vec![], 1).is_empty());
        assert!(m.run_for(&mut pol, vec![], 10).is_empty());
        assert_eq!(
            stat(&pol, "migrations_done"),
            stat(&pol, "migrations_issued")
        );
    }

    /// With the bindings honoured at first touch, the placement needs no migration when the
    /// target allocates first, and only a correction when another process took fast pages first.
    #[test]
    fn binds_the_placement_before_allocation() {
        for antagonist_first in [false, true] {
            let mut m = gups();
            let mut pol = policy(&[("hot_fraction", "0.5")]);
            let binds = m.init(&mut pol);
            // every target page is bound, in runs; the antagonist's are not
            let bound: u64 = binds
                .iter()
                .map(|a| match a {
                    Action::BindRange { first, pages, .. } => {
                        assert!(first.0 >= 100 && first.0 + pages <= 340);
                        *pages
                    }
                    _ => panic!("{a:?}"),
                })
                .sum();
            assert_eq!(bound, 240);
            assert!(binds.len() < 240);
            assert_eq!(
                (0..400)
                    .filter(|&p| m.bind.get(p).copied().flatten() == Some(FAST))
                    .count(),
                50
            );
            if antagonist_first {
                m.touch(400..410, 1);
            }
            m.touch(140..340, 0);
            m.touch(100..140, 0);
            if !antagonist_first {
                m.touch(400..410, 1);
            }
            let out = m.run_for(&mut pol, vec![], 3);
            let other_fast = tiers_of(&m, 400..410, FAST);
            assert_eq!(other_fast, if antagonist_first { 10 } else { 0 });
            if antagonist_first {
                assert!(!out.is_empty());
            } else {
                assert!(out.is_empty(), "{out:?}");
            }
            assert_eq!(tiers_of(&m, 100..140, FAST), 20);
            assert_eq!(tiers_of(&m, 140..340, FAST), 30 - other_fast);
            assert_eq!((m.used(FAST), m.nospace), (50, 0));
        }
    }

    #[test]
    fn places_what_is_resident_after_the_wait_limit() {
        let mut m = gups();
        let mut pol = policy(&[("max_wait_ms", "20")]);
        m.init(&mut pol);
        first_touch(&mut m, 140..340, 0);
        first_touch(&mut m, 100..120, 0);
        // the pages are seen at 1 ms; the limit falls at 21 ms
        assert!(m.run_for(&mut pol, vec![], 20).is_empty());
        assert!(!m.run_for(&mut pol, vec![], 1).is_empty());
        m.run_for(&mut pol, vec![], 1);
        assert_eq!(tiers_of(&m, 100..120, FAST), 20);
        assert_eq!(stat(&pol, "hot_pages"), 20.0);
    }

    #[test]
    fn paces_the_plan_and_retries_refused_migrations() {
        let mut m = gups();
        let mut pol = policy(&[("hot_fraction", "0.5"), ("batch_pages", "4")]);
        m.init(&mut pol);
        first_touch(&mut m, 400..410, 1);
        first_touch(&mut m, 140..340, 0);
        first_touch(&mut m, 100..140, 0);
        // the first two migrations (demotions) are refused: they go to the end of the plan, and
        // the promotions that needed their room fail once for lack of it, then succeed
        m.refuse_next = 2;
        let mut epochs = 0;
        loop {
            let out = m.run_for(&mut pol, vec![], 1);
            assert!(out.len() <= 4);
            epochs += 1;
            if pol.stats().iter().any(|(k, _)| k == "done_at_ms") {
                break;
            }
            assert!(epochs < 100);
        }
        assert!(epochs > 5);
        assert_eq!(tiers_of(&m, 100..140, FAST), 20);
        assert_eq!(tiers_of(&m, 140..340, FAST), 20);
        assert_eq!(m.used(FAST), 50);
        assert!(stat(&pol, "migrations_retried") >= 2.0);
        assert_eq!(stat(&pol, "migrations_failed"), 0.0);
        assert_eq!(
            stat(&pol, "migrations_done"),
            stat(&pol, "migrations_issued")
        );
    }

    #[test]
    fn a_missing_hot_object_places_nothing() {
        let mut m = gups();
        let mut pol = policy(&[("hot_object", "nope"), ("max_wait_ms", "0")]);
        m.init(&mut pol);
        first_touch(&mut m, 100..340, 0);
        assert!(m.run_for(&mut pol, vec![], 5).is_empty());
        assert_eq!(
            (stat(&pol, "placed"), stat(&pol, "target_processes")),
            (0.0, 0.0)
        );
    }

    #[test]
    fn the_positional_value_is_the_fraction() {
        assert_eq!(
            crate::build("static:0.3").unwrap().name(),
            "static:hot_fraction=0.3"
        );
        assert!(crate::build("static:1.5").is_err());
    }

    proptest! {
        /// For any sizes, capacities, fractions and first placement, exactly
        /// min(round(f x hot), available) hot pages end in the fast tier, the fast tier is never
        /// over-filled at any step, and the target uses all the fast capacity it may.
        #[test]
        fn exact_fraction_within_capacity(
            hot in 0u64..60, cold in 0u64..60, other in 0u64..20, fast_cap in 1u64..80,
            f in 0.0f64..=1.0, seed in 0u64..1000, other_first in any::<bool>(),
        ) {
            let mut m = Machine::new(&[fast_cap, 400]);
            m.objects = vec![object(0, "hot", 0, hot), object(0, "cold", 100, cold), object(1, "x", 200, other)];
            let mut pol = policy(&[("hot_fraction", &f.to_string()), ("seed", &seed.to_string())]);
            m.init(&mut pol);
            if other_first {
                first_touch(&mut m, 200..200 + other, 1);
            }
            first_touch(&mut m, 100..100 + cold, 0);
            first_touch(&mut m, 0..hot, 0);
            if !other_first {
                first_touch(&mut m, 200..200 + other, 1);
            }
            let other_fast = tiers_of(&m, 200..200 + other, FAST) as u64;
            m.run_for(&mut pol, vec![], 3);
            prop_assert_eq!(m.nospace, 0);
            prop_assert!(m.used(FAST) <= fast_cap);
            let avail = fast_cap - other_fast;
            let k = ((f * hot as f64).round() as u64).min(avail);
            prop_assert_eq!(tiers_of(&m, 0..hot, FAST) as u64, k);
            prop_assert_eq!(tiers_of(&m, 100..100 + cold, FAST) as u64, (avail - k).min(cold));
            prop_assert_eq!(tiers_of(&m, 200..200 + other, FAST) as u64, other_fast);
        }
    }
}
