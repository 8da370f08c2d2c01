//! A small in-order machine for policy unit tests: a page table with tier capacities, page
//! events and migration results delivered in the next epoch's telemetry, migrations carried out
//! in the order the policy emitted them (a migration into a full tier fails with `NoSpace` and is
//! counted, so tests can assert that a policy never over-fills a tier).

use tierkit_core::action::SampleFilter;
use tierkit_core::telemetry::{
    MigrationOutcome, MigrationResult, ObjectInfo, PageEvent, Sample, TierInfo,
};
use tierkit_core::testing::FakeMech;
use tierkit_core::{Action, PageEvents, PageId, Pid, Policy, Telemetry, TierId};

pub struct Machine {
    pub tier: Vec<Option<TierId>>,
    pub owner: Vec<Pid>,
    pub cap: Vec<u64>,
    pub page_bytes: u64,
    pub now_ns: u64,
    pub epoch_ns: u64,
    pub objects: Vec<ObjectInfo>,
    /// Migrations that found their destination full.
    pub nospace: u64,
    /// Refuse this many of the next migrations (outcome `Refused`), for failure-path tests.
    pub refuse_next: u64,
    pub bindings: Vec<(Pid, String, TierId)>,
    /// Per-page mbind targets from `BindRange`, honoured by [`Machine::touch`].
    pub bind: Vec<Option<TierId>>,
    pub sampling: Option<(u64, SampleFilter)>,
    allocated: PageEvents,
    freed: PageEvents,
    results: Vec<MigrationResult>,
}

pub fn read(p: u64) -> Sample {
    Sample {
        page: PageId(p),
        tier: 0,
        is_store: false,
        pid: 0,
        tid: 0,
        latency_ns: 0.0,
        exposed_ns: 0.0,
        time_ns: 0,
    }
}

pub fn write(p: u64) -> Sample {
    Sample {
        is_store: true,
        ..read(p)
    }
}

impl Machine {
    pub fn new(cap: &[u64]) -> Self {
        Machine {
            tier: Vec::new(),
            owner: Vec::new(),
            cap: cap.to_vec(),
            page_bytes: 4096,
            now_ns: 0,
            epoch_ns: 1_000_000,
            objects: Vec::new(),
            nospace: 0,
            refuse_next: 0,
            bindings: Vec::new(),
            bind: Vec::new(),
            sampling: None,
            allocated: PageEvents::new(),
            freed: PageEvents::new(),
            results: Vec::new(),
        }
    }

    pub fn used(&self, t: TierId) -> u64 {
        self.tier.iter().filter(|&&x| x == Some(t)).count() as u64
    }

    pub fn alloc(&mut self, p: u64, t: TierId, pid: Pid) {
        assert!(
            self.used(t) < self.cap[t as usize],
            "test allocates beyond tier {t}'s capacity"
        );
        let i = p as usize;
        if i >= self.tier.len() {
            self.tier.resize(i + 1, None);
            self.owner.resize(i + 1, 0);
        }
        assert!(self.tier[i].is_none(), "page {p} allocated twice");
        self.tier[i] = Some(t);
        self.owner[i] = pid;
        self.allocated.push(PageEvent {
            page: PageId(p),
            pid,
            tier: t,
        });
    }

    /// First touch of a page range: each page goes to its bound tier if it has room, else to
    /// the first tier (fast, then slow) with room.
    pub fn touch(&mut self, pages: std::ops::Range<u64>, pid: Pid) {
        for p in pages {
            let pref = self.bind.get(p as usize).copied().flatten();
            let t = pref
                .into_iter()
                .chain(0..self.cap.len() as TierId)
                .find(|&t| self.used(t) < self.cap[t as usize])
                .expect("every tier is full");
            self.alloc(p, t, pid);
        }
    }

    pub fn free(&mut self, p: u64) {
        let t = self.tier[p as usize]
            .take()
            .expect("freeing a page that is not resident");
        self.freed.push(PageEvent {
            page: PageId(p),
            pid: self.owner[p as usize],
            tier: t,
        });
    }

    /// The telemetry of the epoch that ends now (time advances by one epoch).
    pub fn telemetry(&mut self, samples: Vec<Sample>) -> Telemetry {
        self.now_ns += self.epoch_ns;
        let tiers = (0..self.cap.len())
            .map(|t| TierInfo {
                id: t as TierId,
                name: format!("tier{t}"),
                capacity_pages: self.cap[t],
                used_pages: self.used(t as TierId),
            })
            .collect();
        let samples = samples
            .into_iter()
            .map(|mut s| {
                s.tier = self
                    .tier
                    .get(s.page.0 as usize)
                    .copied()
                    .flatten()
                    .unwrap_or(0);
                s.time_ns = self.now_ns;
                s
            })
            .collect();
        Telemetry {
            now_ns: self.now_ns,
            epoch_ns: self.epoch_ns,
            page_bytes: self.page_bytes,
            cpu_ghz: 2.0,
            tiers,
            samples,
            allocated: std::mem::take(&mut self.allocated),
            freed: std::mem::take(&mut self.freed),
            migrations: std::mem::take(&mut self.results),
            objects: self.objects.clone(),
            ..Telemetry::default()
        }
    }

    /// Carry out actions in order.
    pub fn apply(&mut self, actions: &[Action]) {
        for a in actions {
            match a {
                Action::Migrate { page, to, .. } => {
                    let i = page.0 as usize;
                    let from = self.tier.get(i).copied().flatten();
                    let outcome = match from {
                        None => MigrationOutcome::NoPage,
                        Some(f) if f == *to => MigrationOutcome::AlreadyThere,
                        Some(_) if self.refuse_next > 0 => {
                            self.refuse_next -= 1;
                            MigrationOutcome::Refused
                        }
                        Some(_) if self.used(*to) >= self.cap[*to as usize] => {
                            self.nospace += 1;
                            MigrationOutcome::NoSpace
                        }
                        Some(_) => {
                            self.tier[i] = Some(*to);
                            MigrationOutcome::Done
                        }
                    };
                    self.results.push(MigrationResult {
                        page: *page,
                        from: from.unwrap_or(0),
                        to: *to,
                        outcome,
                        remap: false,
                    });
                }
                Action::SetSampling { period, filter } => self.sampling = Some((*period, *filter)),
                Action::BindObject { pid, object, tier } => {
                    self.bindings.push((*pid, object.clone(), *tier))
                }
                Action::BindRange { first, pages, tier } => {
                    let end = (first.0 + pages) as usize;
                    if self.bind.len() < end {
                        self.bind.resize(end, None);
                    }
                    self.bind[first.0 as usize..end]
                        .iter_mut()
                        .for_each(|b| *b = Some(*tier));
                }
                _ => {}
            }
        }
    }

    pub fn mech(&self) -> FakeMech {
        FakeMech::new(self.tier.clone())
    }

    /// Call `init` with the telemetry of time 0 (objects known, nothing allocated) and apply.
    pub fn init(&mut self, pol: &mut dyn Policy) -> Vec<Action> {
        let tel = Telemetry {
            page_bytes: self.page_bytes,
            epoch_ns: self.epoch_ns,
            cpu_ghz: 2.0,
            tiers: (0..self.cap.len())
                .map(|t| TierInfo {
                    id: t as TierId,
                    name: format!("tier{t}"),
                    capacity_pages: self.cap[t],
                    used_pages: 0,
                })
                .collect(),
            objects: self.objects.clone(),
            ..Telemetry::default()
        };
        let mut out = Vec::new();
        pol.init(&tel, &mut self.mech(), &mut out);
        self.apply(&out);
        out
    }

    /// Run `epochs` epochs; `samples` arrive in the first. Returns every action, in order.
    pub fn run_for(
        &mut self,
        pol: &mut dyn Policy,
        samples: Vec<Sample>,
        epochs: u32,
    ) -> Vec<Action> {
        let mut all = Vec::new();
        let mut samples = Some(samples);
        for _ in 0..epochs {
            let tel = self.telemetry(samples.take().unwrap_or_default());
            let mut out = Vec::new();
            pol.step(&tel, &mut self.mech(), &mut out);
            self.apply(&out);
            all.extend(out);
        }
        all
    }
}

/// Validated parameters from `(key, value)` pairs, for building a policy under test.
pub fn params(
    policy: &str,
    defs: &[tierkit_core::ParamDef],
    args: &[(&str, &str)],
) -> tierkit_core::Params {
    let raw: Vec<(String, String)> = args
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tierkit_core::Params::resolve(policy, defs, &raw).unwrap()
}

/// The (page, destination) of every migration in `out`, checking each is asynchronous.
pub fn async_migrations(out: &[Action]) -> Vec<(u64, TierId)> {
    out.iter()
        .filter_map(|a| match a {
            Action::Migrate { page, to, mode, .. } => {
                assert_eq!(*mode, tierkit_core::MigrateMode::Async);
                Some((page.0, *to))
            }
            _ => None,
        })
        .collect()
}
