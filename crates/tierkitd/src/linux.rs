//! The Linux backend: tierkit-core's [`Backend`] on a real host. Each interval it waits, finds
//! the targets (the given PIDs, or the cgroup's `cgroup.procs` re-read), scans their present
//! pages and nodes ([`crate::scan`]), turns changes into page events, asks the telemetry source
//! for samples, and fills a [`Telemetry`]. It carries out the policy's migrations with batched
//! `move_pages(2)`, demotions first, under a rate limit, and reports each page's outcome back to
//! the policy at the next interval.
//!
//! Page events: a page first found present is `allocated`; a page no longer present (unmapped,
//! or its process exited or exec'd) is `freed`; a page found on another tier than tierkitd left it
//! (kernel reclaim demotion, NUMA balancing) is reported as a completed migration. Pages on nodes
//! in neither tier are not shown to the policy.
//!
//! Tier sizes: without `--fast-limit` the fast tier's capacity is the targets' fast pages plus
//! the fast nodes' free memory minus a reserve (`fast_reserve_pct` of the nodes' memory, so
//! tierkitd never fills a node to the kernel's watermarks); with it, at most the limit. The slow
//! tier is sized the same way without a limit.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tracing::{debug, error, info, trace, warn};

use tierkit_core::{
    Action, Backend, Mechanism, MigrationOutcome, MigrationResult, PageEvent, PageId, Pid,
    ProcInfo, QosClass, Telemetry, TierId, TierInfo, FAST, SLOW,
};

use crate::error::{Error, Result};
use crate::mech::{self, PAGE_SIZE};
use crate::metrics::Metrics;
use crate::pages::PageTable;
use crate::scan::{self, ScanError};
use crate::source::core_counters::{self, CoreMetrics, CoreSampler};
use crate::source::Named;
use crate::source::{Ctx, ProcPages, Source};
use crate::topology::{self, TierMap};

/// What to manage.
#[derive(Clone, Debug, PartialEq)]
pub enum Targets {
    Pids(Vec<Pid>),
    Cgroup(PathBuf),
}

/// Daemon settings (the config file's keys; see `config.rs`).
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    pub interval: Duration,
    pub batch_pages: usize,
    /// Migration rate limit in MiB/s (0: unlimited).
    pub migrate_mib_s: f64,
    pub dry_run: bool,
    pub fast_limit_bytes: Option<u64>,
    pub fast_reserve_pct: f64,
    /// Keep the node of a page whose frame number is unchanged since the last scan instead of
    /// asking the kernel again (needs pagemap's frame numbers: CAP_SYS_ADMIN). Off only to
    /// measure what it saves.
    pub scan_reuse_frames: bool,
    /// The share of one CPU (percent) the scans of the targets' pages may take on average
    /// (`scan-budget-pct`): after a scan of every target that took d seconds the next comes
    /// d / share later, or at the next interval if that is later. In between, the ranges the
    /// telemetry source names ([`crate::source::Source::poll`]) are scanned, up to half the
    /// share of an interval, and their time postpones the next full scan the same way. A
    /// target that joined is scanned at once; the soft-dirty source, which reads its bits in
    /// the scan, scans every interval. 100 scans every interval.
    pub scan_budget_pct: f64,
    /// Targets of Vulcan's latency-critical class (`--latency-critical`); the others are
    /// best-effort.
    pub latency_critical: Vec<u32>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            interval: Duration::from_millis(500),
            batch_pages: 4096,
            migrate_mib_s: 512.0,
            dry_run: false,
            fast_limit_bytes: None,
            fast_reserve_pct: 2.0,
            scan_reuse_frames: true,
            scan_budget_pct: 10.0,
            latency_critical: Vec::new(),
        }
    }
}

#[derive(Default)]
struct Proc {
    start: u64,
    name: String,
    exe: String,
    pages: ProcPages,
    /// The last scan's pages with their frames and nodes.
    known: scan::Known,
    migration_enabled: bool,
    fast_cap: Option<u64>,
    promotions: u64,
    demotions: u64,
    /// Pages demoted (by tierkitd or by the kernel's reclaim) after tierkitd promoted them:
    /// migration toggling's signal (seeds/004 §4.2).
    demote_promoted: u64,
    threads: u32,
    gone: bool,
    /// Its pages per tier, kept up to date by the scans and the migrations.
    rss: [u64; 2],
    /// Scanned at least once.
    scanned: bool,
}

/// A token bucket of pages.
struct Bucket {
    rate: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn take(&mut self, want: usize) -> usize {
        if self.rate <= 0.0 {
            return want;
        }
        let now = Instant::now();
        self.tokens =
            (self.tokens + now.duration_since(self.last).as_secs_f64() * self.rate).min(self.rate);
        self.last = now;
        let n = (self.tokens.floor() as usize).min(want);
        self.tokens -= n as f64;
        n
    }
}

/// A migration group's key: (`u8::MAX` - destination tier, target pid).
type GroupKey = (u8, Pid);

pub struct Linux {
    settings: Settings,
    targets: Targets,
    tiers: TierMap,
    node_root: PathBuf,
    procs: BTreeMap<Pid, Proc>,
    /// Given pids whose process exited: never adopted again (the pid may be reused).
    departed: BTreeSet<Pid>,
    table: PageTable,
    source: Box<dyn Source>,
    cha: Option<crate::source::uncore::Cha>,
    /// Per-target core counters (Alto, Soar) and their gauges.
    cores: Option<(CoreSampler, CoreMetrics)>,
    tel: Telemetry,
    results: Vec<MigrationResult>,
    gen: u32,
    start: Instant,
    next_tick: Instant,
    last_tick: Instant,
    bucket: Bucket,
    stop: &'static AtomicBool,
    pub metrics: Metrics,
    /// The `target` label of a cgroup target (metrics::cgroup_label); pids label themselves.
    cgroup_label: Option<String>,
    /// Target labels with resident_bytes series, to remove those of departed targets.
    resident_labels: BTreeSet<String>,
    /// Free pages per node at the last observation.
    node_free: BTreeMap<u32, u64>,
    node_total: BTreeMap<u32, u64>,
    scratch_addrs: Vec<u64>,
    scratch_status: Vec<i32>,
    scratch_nodes: Vec<i32>,
    noted: BTreeSet<&'static str>,
    last_warn: BTreeMap<Pid, (String, Instant)>,
    /// Time spent in apply() during the last decide (to separate the policy's own time).
    pub last_apply: Duration,
    /// When the next scan of every target is due (`scan_budget_pct`).
    next_scan: Instant,
    /// What the last full scan cost per page read (s), to size the targeted scans.
    scan_s_per_page: f64,
    /// The ranges the source named this interval ([`Source::poll`]).
    named: Vec<Named>,
}

fn read_comm(pid: Pid) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Alive and not a zombie.
pub fn alive(pid: Pid) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().next())
            .is_some_and(|st| st != "Z" && st != "X"),
        Err(_) => false,
    }
}

/// The process's start time (field 22 of /proc/PID/stat, clock ticks since boot): tells a process
/// from a later one that reuses its pid.
pub fn start_time(pid: Pid) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = s.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn threads_of(pid: Pid) -> u32 {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count() as u32)
        .unwrap_or(0)
}

fn exe_of(pid: Pid) -> String {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}

/// Read a cgroup's member processes.
pub fn cgroup_procs(dir: &std::path::Path) -> Result<Vec<Pid>> {
    let p = dir.join("cgroup.procs");
    let text = crate::error::read_to_string(&p)?;
    let mut v = Vec::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        v.push(l.trim().parse().map_err(|_| Error::Parse {
            path: p.clone(),
            what: "a pid",
            got: l.into(),
        })?);
    }
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

fn cpu_ghz() -> f64 {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("cpu MHz"))
                .and_then(|l| l.split(':').nth(1))
                .and_then(|v| v.trim().parse::<f64>().ok())
        })
        .map(|mhz| mhz / 1000.0)
        .unwrap_or(2.0)
}

impl Linux {
    pub fn new(
        targets: Targets,
        tiers: TierMap,
        node_root: PathBuf,
        settings: Settings,
        source: Box<dyn Source>,
        stop: &'static AtomicBool,
        metrics: Metrics,
    ) -> Result<Linux> {
        let now = Instant::now();
        let cgroup_label = match &targets {
            Targets::Cgroup(dir) => Some(crate::metrics::cgroup_label(dir)),
            Targets::Pids(_) => None,
        };
        let rate = settings.migrate_mib_s * (1 << 20) as f64 / PAGE_SIZE as f64;
        let mut l = Linux {
            bucket: Bucket {
                rate,
                tokens: rate,
                last: now,
            },
            settings,
            targets,
            tiers,
            node_root,
            procs: BTreeMap::new(),
            departed: BTreeSet::new(),
            table: PageTable::default(),
            source,
            cha: None,
            cores: None,
            tel: Telemetry::default(),
            results: Vec::new(),
            gen: 0,
            start: now,
            next_tick: now,
            last_tick: now,
            stop,
            metrics,
            cgroup_label,
            resident_labels: BTreeSet::new(),
            node_free: BTreeMap::new(),
            node_total: BTreeMap::new(),
            scratch_addrs: Vec::new(),
            scratch_status: Vec::new(),
            scratch_nodes: Vec::new(),
            noted: BTreeSet::new(),
            last_warn: BTreeMap::new(),
            last_apply: Duration::ZERO,
            next_scan: Instant::now(),
            scan_s_per_page: 150e-9,
            named: Vec::new(),
        };
        l.tel.page_bytes = PAGE_SIZE;
        l.tel.cpu_ghz = cpu_ghz();
        l.refresh_targets(true)?;
        l.read_nodes()?;
        l.fill_tiers();
        l.fill_processes();
        l.next_tick = now + l.settings.interval;
        Ok(l)
    }

    /// Read per-tier uncore counters every interval.
    pub fn set_cha(&mut self, cha: Option<crate::source::uncore::Cha>) {
        self.cha = cha;
    }

    /// Read per-target core counters every interval (Alto, Soar).
    pub fn set_core_counters(&mut self, sampler: CoreSampler) {
        let m = CoreMetrics::register(&self.metrics.registry());
        self.cores = Some((sampler, m));
        self.retarget_cores();
    }

    fn retarget_cores(&mut self) {
        let pids = self.pids();
        if let Some((s, _)) = self.cores.as_mut() {
            s.set_targets(&pids).iter().for_each(|n| info!("{}", n));
        }
    }

    /// This interval's core counters per target process; the gauges per target label.
    fn read_cores(&mut self) -> Vec<tierkit_core::CoreCounters> {
        let Some((s, _)) = self.cores.as_mut() else {
            return Vec::new();
        };
        let v = match s.sample() {
            Ok(v) => v,
            Err(e) => {
                self.metrics.error("core_counters");
                warn!("core counters: {e}");
                Vec::new()
            }
        };
        let mut by: BTreeMap<String, Vec<tierkit_core::CoreCounters>> = BTreeMap::new();
        for c in &v {
            by.entry(self.target_label(c.pid)).or_default().push(*c);
        }
        let by = by
            .into_iter()
            .map(|(l, cs)| (l, core_counters::sum(&cs)))
            .collect();
        let cal = self.tel.calibration.clone();
        if let Some((_, m)) = self.cores.as_mut() {
            m.update(&by, cal.as_ref());
        }
        v
    }

    pub fn source_name(&self) -> &'static str {
        self.source.name()
    }

    pub fn pids(&self) -> Vec<Pid> {
        self.procs
            .iter()
            .filter(|(_, p)| !p.gone)
            .map(|(&pid, _)| pid)
            .collect()
    }

    fn wanted_pids(&self) -> Result<Vec<Pid>> {
        match &self.targets {
            Targets::Pids(v) => Ok(v
                .iter()
                .copied()
                .filter(|p| !self.departed.contains(p) && alive(*p))
                .collect()),
            Targets::Cgroup(dir) => Ok(cgroup_procs(dir)?
                .into_iter()
                .filter(|&p| alive(p))
                .collect()),
        }
    }

    /// Follow the target set: new members, exits, execs. Tells the source when it changed.
    fn refresh_targets(&mut self, first: bool) -> Result<()> {
        let want = match self.wanted_pids() {
            Ok(v) => v,
            Err(e) => {
                // a cgroup removed under us: nothing to manage, keep running
                self.metrics.error("cgroup");
                warn!("targets: {e}");
                Vec::new()
            }
        };
        let mut changed = first;
        for &pid in &want {
            let start = start_time(pid).unwrap_or(0);
            if self.procs.get(&pid).is_some_and(|p| p.start != start) {
                self.forget(pid, "exited (its pid now names another process)");
                changed = true;
                if matches!(self.targets, Targets::Pids(_)) {
                    continue;
                }
            }
            let comm = read_comm(pid).unwrap_or_default();
            let exe = exe_of(pid);
            match self.procs.get_mut(&pid) {
                None => {
                    if !first {
                        info!("pid {pid} ({comm}) joined the targets");
                    }
                    self.procs.insert(
                        pid,
                        Proc {
                            start,
                            name: comm,
                            exe,
                            migration_enabled: true,
                            pages: ProcPages {
                                pid,
                                ..Default::default()
                            },
                            ..Default::default()
                        },
                    );
                    changed = true;
                }
                Some(p) if p.exe != exe && !exe.is_empty() && !p.exe.is_empty() => {
                    info!(
                        "pid {pid} exec'd ({} -> {exe}); its old pages are forgotten",
                        p.exe
                    );
                    p.exe = exe;
                    p.name = comm;
                    // every page is re-learned by the next scan
                    let ids = std::mem::take(&mut p.pages.ids);
                    p.pages.vpns.clear();
                    p.pages.soft_dirty.clear();
                    p.known = scan::Known::default();
                    p.rss = [0, 0];
                    p.scanned = false;
                    for id in ids {
                        if let Some(s) = self.table.slot(id) {
                            self.tel.freed.push(PageEvent {
                                page: id,
                                pid,
                                tier: s.tier,
                            });
                        }
                        self.table.release(id);
                    }
                    changed = true;
                }
                Some(_) => {}
            }
        }
        let gone: Vec<Pid> = self
            .procs
            .keys()
            .copied()
            .filter(|p| !want.contains(p))
            .collect();
        for pid in gone {
            self.forget(pid, "exited");
            changed = true;
        }
        if changed {
            self.retarget_cores();
            let pids = self.pids();
            match self.source.set_targets(&pids) {
                Ok(notes) => notes.iter().for_each(|n| info!("{}", n)),
                Err(e) => {
                    self.metrics.error("telemetry");
                    error!("telemetry source {}: {e}", self.source.name());
                }
            }
        }
        self.metrics.target_processes.set(self.pids().len() as i64);
        Ok(())
    }

    /// Drop a target: its pages are freed for the policy.
    fn forget(&mut self, pid: Pid, why: &str) {
        let Some(p) = self.procs.remove(&pid) else {
            return;
        };
        if matches!(self.targets, Targets::Pids(_)) {
            self.departed.insert(pid);
        }
        let n = p.pages.ids.len();
        for id in p.pages.ids {
            if let Some(s) = self.table.slot(id) {
                self.tel.freed.push(PageEvent {
                    page: id,
                    pid,
                    tier: s.tier,
                });
            }
            self.table.release(id);
        }
        // counters stay (Prometheus counters do not vanish); a given pid's resident_bytes go at
        // the next fill_processes
        self.metrics.target_exits.inc();
        info!(
            "pid {pid} ({}) {why}; forgot its {n} pages; still running with {} target(s)",
            p.name,
            self.procs.len()
        );
    }

    fn read_nodes(&mut self) -> Result<()> {
        for &n in self.tiers.fast.iter().chain(&self.tiers.slow) {
            let (total, free) = topology::node_meminfo(&self.node_root, n)?;
            self.node_free.insert(n, free * 1024 / PAGE_SIZE);
            self.node_total.insert(n, total * 1024 / PAGE_SIZE);
        }
        Ok(())
    }

    fn our_pages(&self, tier: TierId) -> u64 {
        self.procs.values().map(|p| p.rss[tier as usize]).sum()
    }

    fn fill_tiers(&mut self) {
        let mut tiers = Vec::new();
        for (t, nodes, name) in [
            (FAST, &self.tiers.fast, "fast"),
            (SLOW, &self.tiers.slow, "slow"),
        ] {
            let free: u64 = nodes
                .iter()
                .map(|n| self.node_free.get(n).copied().unwrap_or(0))
                .sum();
            let total: u64 = nodes
                .iter()
                .map(|n| self.node_total.get(n).copied().unwrap_or(0))
                .sum();
            let reserve = (total as f64 * self.settings.fast_reserve_pct / 100.0) as u64;
            let used = self.our_pages(t);
            let mut cap = used + free.saturating_sub(reserve);
            if t == FAST {
                if let Some(l) = self.settings.fast_limit_bytes {
                    cap = cap.min(l / PAGE_SIZE);
                }
            }
            tiers.push(TierInfo {
                id: t,
                name: format!("{name} (nodes {})", topology::fmt_list(nodes)),
                capacity_pages: cap,
                used_pages: used,
            });
        }
        self.tel.tiers = tiers;
    }

    /// The `target` label of a target process's series: the cgroup's, or the pid given.
    fn target_label(&self, pid: Pid) -> String {
        self.cgroup_label.clone().unwrap_or_else(|| pid.to_string())
    }

    fn fill_processes(&mut self) {
        let mut v = Vec::new();
        // resident pages per target and tier: a cgroup's members add up under its label
        let mut resident: BTreeMap<String, [u64; 2]> = BTreeMap::new();
        if let Some(l) = &self.cgroup_label {
            resident.insert(l.clone(), [0, 0]);
        }
        for (&pid, p) in &self.procs {
            let rss = p.rss.to_vec();
            let r = resident.entry(self.target_label(pid)).or_default();
            r[0] += rss[0];
            r[1] += rss[1];
            v.push(ProcInfo {
                pid,
                name: p.name.clone(),
                class: if self.settings.latency_critical.contains(&pid) {
                    QosClass::LatencyCritical
                } else {
                    QosClass::BestEffort
                },
                alive: !p.gone,
                threads: p.threads,
                rss_pages: rss,
                demote_promoted: p.demote_promoted,
                promotions: p.promotions,
                demotions: p.demotions,
                migration_enabled: p.migration_enabled,
            });
        }
        self.tel.processes = v;
        for (label, r) in &resident {
            for (tier, pages) in [("fast", r[0]), ("slow", r[1])] {
                self.metrics
                    .resident_bytes
                    .with_label_values(&[label.as_str(), tier])
                    .set((pages * PAGE_SIZE) as i64);
            }
        }
        for gone in self
            .resident_labels
            .iter()
            .filter(|l| !resident.contains_key(*l))
        {
            for tier in ["fast", "slow"] {
                let _ = self
                    .metrics
                    .resident_bytes
                    .remove_label_values(&[gone.as_str(), tier]);
            }
        }
        self.resident_labels = resident.into_keys().collect();
    }

    /// Scan one target's pages (all of them, or only the ranges `only`) with the scan's
    /// metrics; `None` when the scan failed (the target gone: marked so; another error: logged,
    /// and the view kept).
    fn scan_pages(&mut self, pid: Pid, only: Option<&[(u64, u64)]>) -> Option<Vec<scan::Present>> {
        let empty = scan::Known::default();
        let known = self.procs.get(&pid).map_or(&empty, |p| &p.known);
        let mut st = scan::ScanStats::default();
        let r = scan::scan_ranges(
            pid as i32,
            only,
            self.settings.batch_pages,
            &mut self.scratch_addrs,
            &mut self.scratch_status,
            known,
            self.settings.scan_reuse_frames,
            &mut st,
        );
        self.metrics.scan_pages_queried.inc_by(st.queried);
        self.metrics.scan_pages_reused.inc_by(st.reused);
        if st.hidden_pfn > 0 && self.settings.scan_reuse_frames {
            self.note_once(
                "hiddenpfn",
                "pagemap hides page frame numbers (no CAP_SYS_ADMIN): every present page's node is asked of the kernel each interval".into(),
            );
        }
        match r {
            Ok(v) => Some(v),
            Err(ScanError::Gone) => {
                if let Some(p) = self.procs.get_mut(&pid) {
                    p.gone = true;
                }
                None
            }
            Err(ScanError::Failed(e)) => {
                self.metrics.error("scan");
                let what = if only.is_some() {
                    "targeted scan"
                } else {
                    "scan"
                };
                warn!("pid {pid}: {what} failed, keeping the last view: {e}");
                None
            }
        }
    }

    /// Scan one target and turn what changed into page events.
    fn scan_one(&mut self, pid: Pid) {
        let Some(present) = self.scan_pages(pid, None) else {
            return;
        };
        let gen = self.gen;
        let mut pages = ProcPages {
            pid,
            ..Default::default()
        };
        pages.vpns.reserve(present.len());
        // the last scan's pages, in address order like this one's: a page found again keeps
        // its id without a lookup in the table's hash map
        let prev = std::mem::take(&mut self.procs.get_mut(&pid).expect("a known target").pages);
        let mut k = 0usize;
        let mut demote_promoted_here = 0u64;
        let mut rss = [0u64; 2];
        for p in &present {
            let Some(tier) = self.tiers.tier_of_node(p.node as u32) else {
                continue;
            };
            while k < prev.vpns.len() && prev.vpns[k] < p.vpn {
                k += 1;
            }
            let again = (prev.vpns.get(k) == Some(&p.vpn)).then(|| prev.ids[k]);
            let (id, _) = self.take_present(pid, p, tier, again, &mut demote_promoted_here);
            pages.vpns.push(p.vpn);
            pages.ids.push(id);
            pages.soft_dirty.push(p.soft_dirty);
            rss[tier as usize] += 1;
        }
        let proc_ = self.procs.get_mut(&pid).expect("scanned a known target");
        proc_.rss = rss;
        proc_.scanned = true;
        proc_.known = scan::Known::from_present(&present);
        proc_.demote_promoted += demote_promoted_here;
        for &id in &prev.ids {
            if let Some(s) = self.table.slot(id) {
                if s.seen != gen {
                    self.tel.freed.push(PageEvent {
                        page: id,
                        pid,
                        tier: s.tier,
                    });
                    self.table.release(id);
                }
            }
        }
        proc_.pages = pages;
        proc_.threads = threads_of(pid);
        if self.source.wants_soft_dirty() {
            if let Err(e) = scan::clear_soft_dirty(pid as i32) {
                if alive(pid) {
                    self.metrics.error("clear_refs");
                    warn!("pid {pid}: clear_refs: {e}");
                }
            }
        }
    }

    /// One present page found by a scan, on `tier`: its id (`again`, the id the last scan gave
    /// this virtual page, if it still names it; else a new one) and the page events its change
    /// makes (a new page, a page the kernel moved). Returns the id and the tier it had before
    /// (`NO_TIER` for a new page).
    fn take_present(
        &mut self,
        pid: Pid,
        p: &scan::Present,
        tier: TierId,
        again: Option<PageId>,
        demote_promoted: &mut u64,
    ) -> (PageId, TierId) {
        let again = again.filter(|&id| {
            self.table
                .slot(id)
                .is_some_and(|s| s.pid == pid && s.vpn == p.vpn)
        });
        let (id, new) = match again {
            Some(id) => (id, false),
            None => self.table.intern(pid, p.vpn),
        };
        let slot = self.table.slot_mut(id).expect("an interned page is live");
        let old = slot.tier;
        slot.tier = tier;
        slot.seen = self.gen;
        // the kernel's reclaim demoted a page tierkitd had promoted
        if old == FAST && tier != FAST && std::mem::take(&mut slot.promoted) {
            *demote_promoted += 1;
        }
        if new || old == crate::pages::NO_TIER {
            self.tel.allocated.push(PageEvent {
                page: id,
                pid,
                tier,
            });
        } else if old != tier {
            self.metrics.external_moves.inc();
            self.tel.migrations.push(MigrationResult {
                page: id,
                from: old,
                to: tier,
                outcome: MigrationOutcome::Done,
                remap: false,
            });
        }
        (id, if new { crate::pages::NO_TIER } else { old })
    }

    /// A page of `pid`'s view that a targeted scan no longer finds: released, with its event.
    fn forget_page(&mut self, pid: Pid, id: PageId, vpn: u64, rss: &mut [u64; 2]) {
        if let Some(s) = self.table.slot(id).filter(|s| s.pid == pid && s.vpn == vpn) {
            if let Some(r) = rss.get_mut(s.tier as usize) {
                *r = r.saturating_sub(1);
            }
            self.tel.freed.push(PageEvent {
                page: id,
                pid,
                tier: s.tier,
            });
            self.table.release(id);
        }
    }

    /// The targeted scan of one target between its full scans: only the virtual page ranges
    /// `ranges` (sorted, disjoint) that its telemetry source named this interval. Their pages
    /// replace what the view held in them, with the events a full scan would make there (new
    /// pages, pages gone, pages the kernel moved); the rest of the view stays as it was.
    /// Returns the pages read.
    fn scan_named(&mut self, pid: Pid, ranges: &[(u64, u64)]) -> u64 {
        let read: u64 = ranges.iter().map(|r| r.1 - r.0).sum();
        let Some(present) = self.scan_pages(pid, Some(ranges)) else {
            return read;
        };
        let proc_ = self.procs.get_mut(&pid).expect("a known target");
        let mut pages = std::mem::take(&mut proc_.pages);
        let mut known = std::mem::take(&mut proc_.known);
        let mut rss = proc_.rss;
        let mut demote_promoted_here = 0u64;
        // one range at a time: its stretch of the view is replaced in place (no shift of the
        // rest when the range holds as many pages as before, the usual case), so a targeted
        // scan costs in proportion to its ranges, not to the view
        let (mut vpns, mut ids, mut dirty) = (Vec::new(), Vec::new(), Vec::new());
        let mut rest = &present[..];
        for &(lo, hi) in ranges {
            let cut = rest.partition_point(|p| p.vpn < hi);
            let (found, after) = rest.split_at(cut);
            rest = after;
            let a = pages.vpns.partition_point(|&v| v < lo);
            let b = pages.vpns.partition_point(|&v| v < hi);
            vpns.clear();
            ids.clear();
            dirty.clear();
            let mut i = a;
            for p in found {
                // the view's pages before this one in the range are gone
                while i < b && pages.vpns[i] < p.vpn {
                    self.forget_page(pid, pages.ids[i], pages.vpns[i], &mut rss);
                    i += 1;
                }
                let again = (i < b && pages.vpns[i] == p.vpn).then(|| pages.ids[i]);
                if again.is_some() {
                    i += 1;
                }
                let Some(tier) = self.tiers.tier_of_node(p.node as u32) else {
                    if let Some(id) = again {
                        self.forget_page(pid, id, p.vpn, &mut rss);
                    }
                    continue;
                };
                let (id, old) = self.take_present(pid, p, tier, again, &mut demote_promoted_here);
                if (old as usize) < rss.len() {
                    rss[old as usize] = rss[old as usize].saturating_sub(1);
                }
                rss[tier as usize] += 1;
                vpns.push(p.vpn);
                ids.push(id);
                dirty.push(p.soft_dirty);
            }
            while i < b {
                self.forget_page(pid, pages.ids[i], pages.vpns[i], &mut rss);
                i += 1;
            }
            pages.vpns.splice(a..b, vpns.iter().copied());
            pages.ids.splice(a..b, ids.iter().copied());
            pages.soft_dirty.splice(a..b, dirty.iter().copied());
            // the frames and nodes: this scan's in the range
            let ka = known.vpns.partition_point(|&v| v < lo);
            let kb = known.vpns.partition_point(|&v| v < hi);
            known.vpns.splice(ka..kb, found.iter().map(|p| p.vpn));
            known.pfns.splice(ka..kb, found.iter().map(|p| p.pfn));
            known.nodes.splice(ka..kb, found.iter().map(|p| p.node));
        }
        let proc_ = self.procs.get_mut(&pid).expect("a known target");
        proc_.pages = pages;
        proc_.known = known;
        proc_.rss = rss;
        proc_.demote_promoted += demote_promoted_here;
        read
    }

    fn wait_for_tick(&mut self) -> Result<()> {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Err(Error::Stopped);
            }
            let now = Instant::now();
            if now >= self.next_tick {
                break;
            }
            std::thread::sleep((self.next_tick - now).min(Duration::from_millis(50)));
        }
        let now = Instant::now();
        // no catch-up bursts after a long step
        self.next_tick =
            (self.next_tick + self.settings.interval).max(now + self.settings.interval / 2);
        Ok(())
    }

    fn note_once(&mut self, key: &'static str, msg: String) {
        if self.noted.insert(key) {
            info!("{}", msg);
        }
    }

    /// The node of a tier that has the most free memory (the destination of moves to it).
    fn dest_node(&self, tier: TierId) -> Option<u32> {
        let nodes = if tier == FAST {
            &self.tiers.fast
        } else {
            &self.tiers.slow
        };
        nodes.iter().copied().max_by_key(|n| {
            (
                self.node_free.get(n).copied().unwrap_or(0),
                std::cmp::Reverse(*n),
            )
        })
    }

    fn result(&mut self, page: PageId, from: TierId, to: TierId, outcome: MigrationOutcome) {
        self.results.push(MigrationResult {
            page,
            from,
            to,
            outcome,
            remap: false,
        });
    }

    /// Move one batch of one target's pages, given as (virtual page number, id), to `node`;
    /// record each page's outcome.
    fn move_batch(&mut self, pid: Pid, to: TierId, node: u32, batch: &[(u64, PageId)]) {
        self.scratch_addrs.clear();
        self.scratch_addrs
            .extend(batch.iter().map(|&(vpn, _)| vpn * PAGE_SIZE));
        self.scratch_nodes.clear();
        self.scratch_nodes.resize(batch.len(), node as i32);
        self.scratch_status.clear();
        self.scratch_status.resize(batch.len(), 0);
        let t0 = Instant::now();
        let r = mech::move_pages(
            pid as i32,
            &self.scratch_addrs,
            Some(&self.scratch_nodes),
            &mut self.scratch_status,
            mech::MPOL_MF_MOVE,
        );
        let took = t0.elapsed().as_secs_f64();
        self.metrics.move_pages_seconds.observe(took);
        let from = if to == FAST { SLOW } else { FAST };
        match r {
            Err(e) => {
                let kind = mech::errno_name(e.raw_os_error().unwrap_or(0));
                self.metrics.error(&kind);
                let outcome = if e.raw_os_error() == Some(libc::ESRCH) {
                    if let Some(p) = self.procs.get_mut(&pid) {
                        p.gone = true;
                    }
                    info!(
                        "pid {pid} exited mid-batch (ESRCH): {} moves dropped",
                        batch.len()
                    );
                    MigrationOutcome::NoPage
                } else {
                    warn!(
                        "pid {pid}: move_pages of {} pages failed: {kind} ({e})",
                        batch.len()
                    );
                    MigrationOutcome::Refused
                };
                for &(_, id) in batch {
                    self.result(id, from, to, outcome);
                }
            }
            Ok(_) => {
                let mut errs: BTreeMap<String, u64> = BTreeMap::new();
                let mut moved = 0u64;
                let mut demoted_promoted = 0u64;
                for (i, &(_, id)) in batch.iter().enumerate() {
                    let st = self.scratch_status[i];
                    let outcome = if st == node as i32 {
                        moved += 1;
                        if let Some(s) = self.table.slot_mut(id) {
                            if let Some(p) = self.procs.get_mut(&pid) {
                                if let Some(r) = p.rss.get_mut(s.tier as usize) {
                                    *r = r.saturating_sub(1);
                                }
                                if let Some(r) = p.rss.get_mut(to as usize) {
                                    *r += 1;
                                }
                            }
                            s.tier = to;
                            if to == FAST {
                                s.promoted = true;
                            } else if std::mem::take(&mut s.promoted) {
                                demoted_promoted += 1;
                            }
                        }
                        MigrationOutcome::Done
                    } else if st >= 0 {
                        *errs.entry(format!("landed on node {st}")).or_default() += 1;
                        MigrationOutcome::Refused
                    } else {
                        let kind = mech::errno_name(-st);
                        self.metrics.error(&kind);
                        *errs.entry(kind).or_default() += 1;
                        match -st {
                            libc::ENOMEM => MigrationOutcome::NoSpace,
                            libc::ENOENT | libc::EFAULT => MigrationOutcome::NoPage,
                            _ => MigrationOutcome::Refused,
                        }
                    };
                    self.result(id, from, to, outcome);
                }
                self.metrics.pages_migrated.inc_by(moved);
                trace!(
                    "pid {pid}: move_pages of {} pages to node {node}: {moved} moved in {took:.4} s",
                    batch.len()
                );
                let p = self.procs.get_mut(&pid);
                if let Some(p) = p {
                    if to == FAST {
                        p.promotions += moved;
                    } else {
                        p.demotions += moved;
                        p.demote_promoted += demoted_promoted;
                    }
                }
                let m = if to == FAST {
                    &self.metrics.promotions
                } else {
                    &self.metrics.demotions
                };
                m.with_label_values(&[self.target_label(pid)]).inc_by(moved);
                if let Some(n) = self.node_free.get_mut(&node) {
                    *n = n.saturating_sub(moved);
                }
                if !errs.is_empty() {
                    let full = errs.contains_key("ENOMEM");
                    let list: Vec<String> = errs.iter().map(|(k, v)| format!("{k} x{v}")).collect();
                    // the same kinds again for the same target within a minute: debug, not warn
                    let kinds: String = errs.keys().cloned().collect::<Vec<_>>().join(",");
                    let now = Instant::now();
                    let repeat = self.last_warn.get(&pid).is_some_and(|(k, t)| {
                        *k == kinds && now.duration_since(*t) < Duration::from_secs(60)
                    });
                    if !repeat {
                        self.last_warn.insert(pid, (kinds, now));
                    }
                    let tail = if repeat {
                        ""
                    } else {
                        " (repeats within a minute are logged at debug level; tierkitd_errors_total counts them all)"
                    };
                    let full = if full { " (destination tier full)" } else { "" };
                    let msg = format!(
                        "pid {pid}: {} of {} pages not moved to node {node}: {}{full}{tail}",
                        batch.len() as u64 - moved,
                        batch.len(),
                        list.join(", "),
                    );
                    if repeat {
                        debug!("{msg}");
                    } else {
                        warn!("{msg}");
                    }
                }
            }
        }
    }

    fn apply_migrations(&mut self, moves: Vec<(PageId, TierId)>) {
        // validate, then demotions first so they make room for the promotions. A group is one
        // (direction, target) with its pages as (virtual page number, id): sorted by address
        // and batched below without looking the pages up again
        let mut groups: Vec<(GroupKey, Vec<(u64, PageId)>)> = Vec::new();
        let mut last_group = usize::MAX;
        // per target, looked up once per pass: None when unknown; else whether it may migrate
        // and how many promotions its fast-tier cap still allows
        let mut room: BTreeMap<Pid, Option<(bool, Option<u64>)>> = BTreeMap::new();
        let mut seen =
            rustc_hash::FxHashSet::with_capacity_and_hasher(moves.len(), Default::default());
        self.results.reserve(moves.len());
        for (page, to) in moves {
            let Some(s) = self.table.slot(page).copied() else {
                self.result(page, to, to, MigrationOutcome::NoPage);
                continue;
            };
            if to > SLOW {
                self.result(page, s.tier, to, MigrationOutcome::Refused);
                continue;
            }
            if s.tier == to {
                self.result(page, s.tier, to, MigrationOutcome::AlreadyThere);
                continue;
            }
            if !seen.insert(page) {
                self.result(page, s.tier, to, MigrationOutcome::Refused);
                continue;
            }
            let (procs, table) = (&self.procs, &self.table);
            let r = room.entry(s.pid).or_insert_with(|| {
                procs.get(&s.pid).map(|p| {
                    let left = p.fast_cap.map(|cap| {
                        let fast = p
                            .pages
                            .ids
                            .iter()
                            .filter(|&&id| table.slot(id).is_some_and(|x| x.tier == FAST))
                            .count() as u64;
                        cap.saturating_sub(fast)
                    });
                    (p.migration_enabled && !p.gone, left)
                })
            });
            let Some((ok, left)) = r else {
                self.result(page, s.tier, to, MigrationOutcome::NoPage);
                continue;
            };
            if !*ok {
                self.result(page, s.tier, to, MigrationOutcome::Refused);
                continue;
            }
            if to == FAST {
                if let Some(left) = left {
                    if *left == 0 {
                        self.result(page, s.tier, to, MigrationOutcome::Refused);
                        continue;
                    }
                    *left -= 1;
                }
            }
            // key: demotions (to = 1) sort before promotions (to = 0)
            let key = (u8::MAX - to, s.pid);
            if groups.get(last_group).is_none_or(|g| g.0 != key) {
                last_group = match groups.iter().position(|g| g.0 == key) {
                    Some(i) => i,
                    None => {
                        groups.push((key, Vec::new()));
                        groups.len() - 1
                    }
                };
            }
            groups[last_group].1.push((s.vpn, page));
        }
        groups.sort_by_key(|g| g.0);
        let total: usize = groups.iter().map(|g| g.1.len()).sum();
        if total == 0 {
            return;
        }
        if self.settings.dry_run {
            for ((k, pid), pages) in &groups {
                let to = u8::MAX - k;
                info!(
                    "dry-run: would {} {} pages of pid {pid} to node {}",
                    if to == FAST { "promote" } else { "demote" },
                    pages.len(),
                    self.dest_node(to).map_or("?".into(), |n| n.to_string())
                );
            }
            self.metrics.dry_run_skipped.inc_by(total as u64);
            for ((k, _), pages) in groups {
                for (_, id) in pages {
                    let to = u8::MAX - k;
                    self.result(
                        id,
                        if to == FAST { SLOW } else { FAST },
                        to,
                        MigrationOutcome::Refused,
                    );
                }
            }
            return;
        }
        let mut allowed = self.bucket.take(total);
        let (mut promoted, mut demoted, mut limited, mut stopped) =
            (0usize, 0usize, 0usize, 0usize);
        for ((k, pid), mut pages) in groups {
            let to = u8::MAX - k;
            let from = if to == FAST { SLOW } else { FAST };
            let Some(node) = self.dest_node(to) else {
                for &(_, id) in &pages {
                    self.result(id, from, to, MigrationOutcome::Refused);
                }
                continue;
            };
            let n = pages.len().min(allowed);
            allowed -= n;
            for &(_, id) in &pages[n..] {
                self.result(id, from, to, MigrationOutcome::Refused);
            }
            limited += pages.len() - n;
            // the rate limit cut the policy's order; what is allowed moves in address order: the
            // kernel walks each page's VMA and page table, and neighbours share them
            pages[..n].sort_unstable_by_key(|&(vpn, _)| vpn);
            for chunk in pages[..n].chunks(self.settings.batch_pages.max(1)) {
                if self.stop.load(Ordering::Relaxed) {
                    stopped += chunk.len();
                    for &(_, id) in chunk {
                        self.result(id, from, to, MigrationOutcome::Refused);
                    }
                    continue;
                }
                if self.procs.get(&pid).is_none_or(|p| p.gone) {
                    for &(_, id) in chunk {
                        self.result(id, from, to, MigrationOutcome::NoPage);
                    }
                    continue;
                }
                self.move_batch(pid, to, node, chunk);
            }
            if to == FAST {
                promoted += n;
            } else {
                demoted += n;
            }
        }
        self.metrics.rate_limited.inc_by(limited as u64);
        if limited > 0 {
            info!(
                "rate limit ({} MiB/s): {limited} migrations deferred",
                self.settings.migrate_mib_s
            );
        }
        if stopped > 0 {
            info!("stopping: {stopped} migrations not started");
        }
        debug!("asked: promote {promoted}, demote {demoted}");
    }

    pub fn stop_source(&mut self) {
        self.source.stop();
    }

    /// Free pages of each tier at the last observation (for reports).
    pub fn tier_summary(&self) -> String {
        self.tel
            .tiers
            .iter()
            .map(|t| {
                format!(
                    "{}: {} pages of targets, capacity {}",
                    t.name, t.used_pages, t.capacity_pages
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

impl Mechanism for Linux {
    fn tier_of(&self, page: PageId) -> Option<TierId> {
        self.table.slot(page).map(|s| s.tier)
    }

    /// Answered from the telemetry source: a page reads as accessed when the source saw it
    /// accessed (a PEBS sample, a DAMON region with accesses, a soft-dirty bit) since the last
    /// call for it.
    fn test_and_clear_accessed(&mut self, pages: &[PageId], out: &mut Vec<bool>) {
        out.clear();
        for &p in pages {
            out.push(match self.table.slot_mut(p) {
                Some(s) => std::mem::replace(&mut s.accessed, false),
                None => false,
            });
        }
    }

    /// One present page per `stride_bytes`-aligned stretch of the target's address space, from
    /// the last scan's pages (in address order): what a PTE walk at that stride finds. A pid
    /// that is not a target has none.
    fn stride_pages(&self, pid: Pid, stride_bytes: u64, out: &mut Vec<PageId>) -> bool {
        out.clear();
        if let Some(p) = self.procs.get(&pid) {
            stride_sample(&p.pages.vpns, &p.pages.ids, stride_bytes, out);
        }
        true
    }
}

/// The first page of every `stride_bytes`-aligned stretch of virtual pages `vpns` (sorted) that
/// holds one, as `ids`.
fn stride_sample(vpns: &[u64], ids: &[PageId], stride_bytes: u64, out: &mut Vec<PageId>) {
    let per = (stride_bytes / PAGE_SIZE).max(1);
    let mut last = None;
    for (&vpn, &id) in vpns.iter().zip(ids) {
        let chunk = vpn / per;
        if last != Some(chunk) {
            out.push(id);
            last = Some(chunk);
        }
    }
}

impl Backend for Linux {
    type Error = Error;

    fn observe(&mut self) -> Result<()> {
        self.wait_for_tick()?;
        let t0 = Instant::now();
        self.gen = self.gen.wrapping_add(1);
        self.table.end_epoch();
        self.tel.allocated.clear();
        self.tel.freed.clear();
        self.tel.samples.clear();
        self.tel.migrations.clear();
        self.tel.migrations.append(&mut self.results);
        self.refresh_targets(false)?;
        // The source reads this interval's observations first and names where they fall
        // (`Source::poll`): between full scans those ranges are scanned, so that pages mapped
        // or moved since the last full scan are seen where the telemetry points.
        let mut named = std::mem::take(&mut self.named);
        named.clear();
        if let Err(e) = self.source.poll(&mut named) {
            self.metrics.error("telemetry");
            warn!("telemetry source {}: {e}", self.source.name());
        }
        // every target when a scan is due (scan_budget_pct), else only those never scanned;
        // the others keep the last scan's view, with tierkitd's own migrations applied to it,
        // and the named ranges scanned again
        let every = Instant::now() >= self.next_scan || self.source.wants_soft_dirty();
        let share = (self.settings.scan_budget_pct / 100.0).clamp(1e-6, 1.0);
        let t_scan = Instant::now();
        let mut scanned = 0usize;
        let mut targeted_pages = 0u64;
        // What one interval's targeted scans may read: half the budget's share of the interval
        // at the last full scan's cost per page (at least one 2 MiB stretch). Their time also
        // postpones the next full scan (below), so scanning as a whole stays within the budget
        // and the full scans keep at least half their pace.
        let cap = (0.5 * share * self.settings.interval.as_secs_f64()
            / self.scan_s_per_page.max(1e-9))
        .max(512.0) as u64;
        named.sort_unstable();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for pid in self.pids() {
            let p = &self.procs[&pid];
            if every || !p.scanned {
                self.scan_one(pid);
                scanned += 1;
                continue;
            }
            self.procs.get_mut(&pid).expect("a target").threads = threads_of(pid);
            let a = named.partition_point(|n| n.pid < pid);
            let b = named.partition_point(|n| n.pid <= pid);
            if a == b || targeted_pages >= cap {
                continue;
            }
            ranges.clear();
            ranges.extend(named[a..b].iter().map(|n| (n.start_vpn, n.end_vpn)));
            scan::merge_ranges(&mut ranges);
            // within the cap, in address order
            let mut left = cap - targeted_pages;
            ranges.retain_mut(|r| {
                let n = (r.1 - r.0).min(left);
                r.1 = r.0 + n;
                left -= n;
                n > 0
            });
            targeted_pages += self.scan_named(pid, &ranges);
        }
        self.named = named;
        if every {
            let took = t_scan.elapsed();
            self.next_scan = t_scan + took.div_f64(share);
            let read: u64 = self.procs.values().map(|p| p.pages.vpns.len() as u64).sum();
            if read > 0 {
                self.scan_s_per_page = took.as_secs_f64() / read as f64;
            }
            self.metrics.page_scans.inc();
            self.metrics.page_scan_seconds.observe(took.as_secs_f64());
        } else {
            if scanned < self.procs.len() {
                self.metrics.page_scans_deferred.inc();
            }
            if targeted_pages > 0 {
                // the targeted scans spend the same budget: the next full scan comes later
                let took = t_scan.elapsed();
                self.next_scan += took.div_f64(share);
                self.metrics.targeted_scans.inc();
                self.metrics.targeted_scan_pages.inc_by(targeted_pages);
                self.metrics
                    .targeted_scan_seconds
                    .observe(took.as_secs_f64());
            }
        }
        let gone: Vec<Pid> = self
            .procs
            .iter()
            .filter(|(_, p)| p.gone)
            .map(|(&k, _)| k)
            .collect();
        for pid in &gone {
            self.forget(*pid, "exited");
        }
        if !gone.is_empty() {
            self.retarget_cores();
            let pids = self.pids();
            if let Ok(notes) = self.source.set_targets(&pids) {
                notes.iter().for_each(|n| debug!("{}", n));
            }
            self.metrics.target_processes.set(pids.len() as i64);
        }
        let now_ns = self.start.elapsed().as_nanos() as u64;
        // lent to the source for the interval and given back (no copy of every page's entry)
        let procs: Vec<ProcPages> = self
            .procs
            .values_mut()
            .map(|p| std::mem::take(&mut p.pages))
            .collect();
        let mut samples = std::mem::take(&mut self.tel.samples);
        let mut ctx = Ctx {
            table: &mut self.table,
            procs: &procs,
            now_ns,
            cpu_ghz: self.tel.cpu_ghz,
            samples: &mut samples,
        };
        match self.source.collect(&mut ctx) {
            Ok(st) => {
                if st.lost > 0 {
                    warn!(
                        "{}: the kernel dropped {} records",
                        self.source.name(),
                        st.lost
                    );
                }
            }
            Err(e) => {
                self.metrics.error("telemetry");
                warn!("telemetry source {}: {e}", self.source.name());
            }
        }
        self.tel.samples = samples;
        for (p, pages) in self.procs.values_mut().zip(procs) {
            p.pages = pages;
        }
        self.tel.tier_counters = match self.cha.as_mut().map(|c| c.read()) {
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                self.metrics.error("uncore");
                warn!("uncore counters: {e}");
                Vec::new()
            }
            None => self.source.tier_counters().unwrap_or_default(),
        };
        self.tel.cores = self.read_cores();
        if let Err(e) = self.read_nodes() {
            self.metrics.error("meminfo");
            warn!("node memory: {e}");
        }
        self.fill_tiers();
        self.fill_processes();
        let dt = self.last_tick.elapsed();
        self.last_tick = Instant::now();
        self.tel.epoch_ns = dt.as_nanos() as u64;
        self.tel.now_ns = now_ns;
        let n = self.tel.samples.len() as u64;
        self.metrics.samples.inc_by(n);
        self.metrics.samples_last = n;
        self.metrics.samples_per_second = n as f64 / dt.as_secs_f64().max(1e-9);
        self.metrics.intervals.inc();
        let took = t0.elapsed().as_secs_f64();
        self.metrics.observe_seconds_last = took;
        self.metrics.observe_seconds.observe(took);
        Ok(())
    }

    fn take_telemetry(&mut self) -> Telemetry {
        std::mem::take(&mut self.tel)
    }

    fn restore_telemetry(&mut self, tel: Telemetry) {
        self.tel = tel;
    }

    fn apply(&mut self, actions: &mut Vec<Action>) {
        let t0 = Instant::now();
        let mut moves = Vec::new();
        for a in actions.drain(..) {
            match a {
                Action::Migrate { page, to, .. } => moves.push((page, to)),
                Action::SetSampling { period, filter } => {
                    if let Some(n) = self.source.set_sampling(period, filter) {
                        self.note_once("sampling", n);
                    }
                }
                Action::SetHintScan { .. } | Action::SetNumaScan { .. } => self.note_once(
                    "hintscan",
                    "SetHintScan ignored: Linux gives user space no per-page NUMA hint faults".into(),
                ),
                Action::SetMigration { pid, enabled } => {
                    if let Some(p) = self.procs.get_mut(&pid) {
                        if p.migration_enabled != enabled {
                            // the policy's decision (migration toggling's stop and restart),
                            // with the count it decides on (Algorithm 1 reads its slope)
                            info!(
                                "migration {} for target pid {pid} by the policy (demote_promoted {})",
                                if enabled { "restarted" } else { "stopped" },
                                p.demote_promoted
                            );
                        }
                        p.migration_enabled = enabled;
                    }
                }
                Action::SetPartition { pid, fast_pages } => {
                    if let Some(p) = self.procs.get_mut(&pid) {
                        p.fast_cap = fast_pages;
                    }
                }
                Action::SetTlbScope { .. } => self.note_once(
                    "tlbscope",
                    "SetTlbScope ignored: per-thread page tables need Vulcan's kernel patch".into(),
                ),
                Action::Refuse { page, to } => {
                    let from = self.table.slot(page).map_or(to, |s| s.tier);
                    self.result(page, from, to, MigrationOutcome::Refused);
                }
                Action::BindRange { first, pages, tier } => self.note_once(
                    "bindrange",
                    format!("BindRange({first:?} +{pages}, tier {tier}) not applied: tierkitd only knows pages once they are present; bind allocations with the shim's place mode"),
                ),
                Action::BindObject { pid, object, tier } => self.note_once(
                    "bind",
                    format!("BindObject(pid {pid}, {object}, tier {tier}) not applied: allocation binding is the shim's place mode (shim/README.md)"),
                ),
            }
        }
        let migrating = !moves.is_empty();
        if migrating {
            self.apply_migrations(moves);
        }
        self.last_apply = t0.elapsed();
        if migrating {
            self.metrics
                .migration_pass_seconds
                .observe(self.last_apply.as_secs_f64());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The restart scan's stride over a target's present pages: the first page of each aligned
    /// stretch that has one, none for a stretch without pages.
    #[test]
    fn stride_pages_take_one_present_page_per_aligned_stretch() {
        let per = 2 * 1024 * 1024 / PAGE_SIZE; // 512 pages of 4 KiB
        let vpns = [3, 4, 511, 512, 2 * per + 7, 2 * per + 8, 5 * per];
        let ids: Vec<PageId> = (0..vpns.len() as u64).map(|i| PageId(100 + i)).collect();
        let mut out = Vec::new();
        stride_sample(&vpns, &ids, 2 * 1024 * 1024, &mut out);
        assert_eq!(
            out,
            vec![PageId(100), PageId(103), PageId(104), PageId(106)]
        );
        out.clear();
        stride_sample(&vpns, &ids, 1, &mut out); // a stride below a page: every page
        assert_eq!(out, ids);
    }
    use tierkit_core::MigrateMode;

    static STOP: AtomicBool = AtomicBool::new(false);
    /// Taken by the tests that count this process's own pages across scans: another such test
    /// mapping and unmapping a buffer in between (tests run on parallel threads) could leave
    /// one at an address the other's new buffer then takes, which would not read as new.
    static SELF_SCAN: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// A fresh anonymous mapping of `bytes`, every page touched, unmapped when dropped. Not a
    /// `Vec`: glibc raises its mmap threshold when an mmapped chunk is freed, so a test's large
    /// `Vec` may come from heap pages another test already touched, which a scan sees as old.
    struct Fresh {
        ptr: *mut u8,
        len: usize,
    }

    impl Fresh {
        fn new(bytes: usize) -> Fresh {
            // SAFETY: a private anonymous mapping of our own; checked for failure below.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(ptr, libc::MAP_FAILED);
            let ptr = ptr as *mut u8;
            for i in (0..bytes).step_by(PAGE_SIZE as usize) {
                // SAFETY: i < bytes, inside the mapping.
                unsafe { ptr.add(i).write_volatile(1) };
            }
            Fresh { ptr, len: bytes }
        }

        /// Its whole pages, as virtual page numbers [lo, hi).
        fn vpns(&self) -> (u64, u64) {
            let a = self.ptr as u64;
            (a.div_ceil(PAGE_SIZE), (a + self.len as u64) / PAGE_SIZE)
        }
    }

    impl Drop for Fresh {
        fn drop(&mut self) {
            // SAFETY: the mapping made in `new`, unmapped once.
            unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
        }
    }

    fn backend(targets: Targets, dry_run: bool) -> Linux {
        let settings = Settings {
            interval: Duration::from_millis(20),
            dry_run,
            ..Settings::default()
        };
        backend_with(targets, settings)
    }

    /// The backend on this host's node 0 as the fast tier, without a telemetry source.
    fn backend_with(targets: Targets, settings: Settings) -> Linux {
        backend_with_source(targets, settings, Box::new(crate::source::NoSource))
    }

    /// The backend on this host's node 0 as the fast tier, with telemetry from `source`.
    fn backend_with_source(targets: Targets, settings: Settings, source: Box<dyn Source>) -> Linux {
        let tiers = TierMap {
            fast: vec![0],
            slow: vec![],
            reason: "test".into(),
        };
        Linux::new(
            targets,
            tiers,
            topology::NODE_ROOT.into(),
            settings,
            source,
            &STOP,
            Metrics::new(),
        )
        .unwrap()
    }

    /// A child process to manage: it sleeps until the test kills it.
    fn sleeper() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap()
    }

    #[test]
    fn follows_a_target_until_it_exits_and_never_readopts_its_pid() {
        let mut child = sleeper();
        let pid = child.id();
        let mut lx = backend(Targets::Pids(vec![pid]), false);
        assert_eq!(lx.pids(), vec![pid]);
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        assert!(!tel.allocated.is_empty(), "the child's pages are reported");
        assert!(tel.allocated.iter().all(|e| e.pid == pid && e.tier == FAST));
        let page = tel.allocated.iter().next().expect("an event").page;
        assert_eq!(tel.processes.len(), 1);
        assert_eq!(tel.processes[0].rss_pages[0], tel.allocated.len() as u64);
        assert_eq!(tel.tiers[0].used_pages, tel.allocated.len() as u64);
        let n = tel.allocated.len();
        lx.restore_telemetry(tel);
        assert_eq!(lx.tier_of(page), Some(FAST));
        // a move to a tier with no node is refused, and reported at the next interval
        let mut acts = vec![Action::Migrate {
            page,
            to: SLOW,
            mode: MigrateMode::Async,
            keep_shadow: false,
        }];
        lx.apply(&mut acts);
        child.kill().unwrap();
        child.wait().unwrap();
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        assert_eq!(tel.migrations.len(), 1);
        assert_eq!(tel.migrations[0].outcome, MigrationOutcome::Refused);
        assert_eq!(
            tel.freed.len(),
            n,
            "every page of the exited target is freed"
        );
        assert!(tel.processes.is_empty());
        lx.restore_telemetry(tel);
        assert_eq!(lx.metrics.target_exits.get(), 1);
        assert!(lx.departed.contains(&pid));
        assert_eq!(lx.tier_of(page), None);
        // its ids are reused only after the epoch that reported them freed
        lx.observe().unwrap();
        assert!(lx.pids().is_empty());
    }

    #[test]
    fn scans_are_paced_by_their_budget_and_a_deferred_interval_keeps_the_view() {
        let _one = SELF_SCAN.lock().unwrap_or_else(|e| e.into_inner());
        let me = std::process::id();
        let settings = Settings {
            interval: Duration::from_millis(20),
            // the next scan 1000 times the last one's duration later
            scan_budget_pct: 0.1,
            ..Settings::default()
        };
        let mut lx = backend_with(Targets::Pids(vec![me]), settings);
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        let first = tel.allocated.len() as u64;
        assert!(first > 0);
        assert_eq!(tel.processes[0].rss_pages, vec![first, 0]);
        lx.restore_telemetry(tel);
        assert_eq!(lx.metrics.page_scans.get(), 1);
        // 8 MiB more, touched: the next interval does not see them, the scan after it does
        let more = Fresh::new(8 << 20);
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        assert!(tel.allocated.is_empty() && tel.freed.is_empty());
        assert_eq!(
            tel.processes[0].rss_pages,
            vec![first, 0],
            "the last scan's view"
        );
        assert_eq!(tel.tiers[0].used_pages, first);
        lx.restore_telemetry(tel);
        assert_eq!(lx.metrics.page_scans.get(), 1);
        assert_eq!(lx.metrics.page_scans_deferred.get(), 1);
        lx.next_scan = Instant::now();
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        assert_eq!(lx.metrics.page_scans.get(), 2);
        assert!(tel.allocated.len() >= 2048, "{}", tel.allocated.len());
        let rss = tel.processes[0].rss_pages[0];
        assert_eq!(
            rss,
            first + tel.allocated.len() as u64 - tel.freed.len() as u64
        );
        assert_eq!(tel.tiers[0].used_pages, rss);
        drop(more);
    }

    /// A telemetry source that names the ranges a test gives it and samples nothing.
    struct Naming(std::sync::Arc<std::sync::Mutex<Vec<Named>>>);

    impl crate::source::Source for Naming {
        fn name(&self) -> &'static str {
            "naming"
        }
        fn set_targets(&mut self, _pids: &[Pid]) -> crate::error::Result<Vec<String>> {
            Ok(Vec::new())
        }
        fn poll(&mut self, out: &mut Vec<Named>) -> crate::error::Result<()> {
            out.extend(self.0.lock().unwrap().drain(..));
            Ok(())
        }
        fn collect(
            &mut self,
            _ctx: &mut crate::source::Ctx,
        ) -> crate::error::Result<crate::source::Stats> {
            Ok(Default::default())
        }
    }

    /// Between full scans only the ranges the source names are scanned: pages mapped there
    /// since the last full scan join the view (and the target's resident pages), pages unmapped
    /// there leave it, and nothing outside them changes; the view stays the one a full scan
    /// would build there, in address order.
    #[test]
    fn a_targeted_scan_sees_new_and_gone_pages_in_the_named_ranges_only() {
        let _one = SELF_SCAN.lock().unwrap_or_else(|e| e.into_inner());
        let me = std::process::id();
        let settings = Settings {
            interval: Duration::from_millis(20),
            scan_budget_pct: 0.1,
            ..Settings::default()
        };
        let names = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut lx = backend_with_source(
            Targets::Pids(vec![me]),
            settings,
            Box::new(Naming(names.clone())),
        );
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        lx.restore_telemetry(tel);
        assert_eq!(lx.metrics.page_scans.get(), 1);
        // 8 MiB more, touched, in a mapping of its own
        let more = Fresh::new(8 << 20);
        let (lo, hi) = more.vpns();
        let in_more =
            |lx: &Linux, id: PageId| lx.table.slot(id).is_some_and(|s| s.vpn >= lo && s.vpn < hi);
        // no full scan during the test, and the targeted scans' cap sized by a tiny cost per
        // page, except where the cap itself is tested
        lx.next_scan = Instant::now() + Duration::from_secs(3600);
        // nothing named: the view stays
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        assert!(tel.allocated.is_empty() && tel.freed.is_empty());
        lx.restore_telemetry(tel);
        // the cap: at 0.1% of a 20 ms interval at 1 us a page only one 2 MiB stretch's worth
        // is read, the lowest addresses first
        lx.scan_s_per_page = 1e-6;
        names.lock().unwrap().push(Named {
            pid: me,
            start_vpn: lo,
            end_vpn: hi,
        });
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        assert_eq!(lx.metrics.targeted_scan_pages.get(), 512);
        assert_eq!(tel.allocated.len(), 512);
        assert!(tel.allocated.iter().all(|e| lx
            .table
            .slot(e.page)
            .is_some_and(|s| s.vpn >= lo && s.vpn < lo + 512)));
        lx.restore_telemetry(tel);
        lx.scan_s_per_page = 1e-15;
        // the buffer named (in two overlapping pieces): the rest of its pages join, and only they
        names.lock().unwrap().extend([
            Named {
                pid: me,
                start_vpn: lo,
                end_vpn: lo + (hi - lo) / 2 + 7,
            },
            Named {
                pid: me,
                start_vpn: lo + (hi - lo) / 2,
                end_vpn: hi,
            },
        ]);
        let rss0 = lx.procs[&me].rss;
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        assert_eq!(lx.metrics.page_scans.get(), 1, "no full scan");
        assert_eq!(lx.metrics.targeted_scans.get(), 2);
        assert_eq!(lx.metrics.targeted_scan_pages.get(), 512 + hi - lo);
        assert_eq!(
            tel.allocated.len() as u64,
            hi - lo - 512,
            "the rest of the buffer"
        );
        assert!(tel.allocated.iter().all(|e| in_more(&lx, e.page)));
        assert!(tel.freed.is_empty());
        assert_eq!(tel.processes[0].rss_pages[0], rss0[0] + hi - lo - 512);
        lx.restore_telemetry(tel);
        let p = &lx.procs[&me];
        assert!(p.pages.vpns.windows(2).all(|w| w[0] < w[1]));
        assert!(p.known.vpns.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(p.pages.vpns.len(), p.pages.ids.len());
        assert_eq!(p.rss[0] as usize, p.pages.vpns.len());
        // the buffer's pages given back (MADV_DONTNEED: still mapped, so that no other test's
        // allocation can land there meanwhile) and named again: they leave
        // SAFETY: the range is `more`'s own memory, which nothing reads until it is dropped.
        let r = unsafe {
            libc::madvise(
                (lo * PAGE_SIZE) as *mut libc::c_void,
                ((hi - lo) * PAGE_SIZE) as usize,
                libc::MADV_DONTNEED,
            )
        };
        assert_eq!(r, 0);
        names.lock().unwrap().push(Named {
            pid: me,
            start_vpn: lo,
            end_vpn: hi,
        });
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        assert_eq!(tel.freed.len() as u64, hi - lo);
        assert!(tel.allocated.is_empty());
        assert_eq!(tel.processes[0].rss_pages[0], rss0[0] - 512);
        lx.restore_telemetry(tel);
        assert_eq!(lx.procs[&me].pages.vpns.len() as u64, rss0[0] - 512);
        drop(more);
    }

    #[test]
    fn dry_run_moves_nothing_and_answers_refused() {
        let me = std::process::id();
        let mut lx = backend(Targets::Pids(vec![me]), true);
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        let pages: Vec<PageId> = tel.allocated.iter().take(3).map(|e| e.page).collect();
        lx.restore_telemetry(tel);
        let mut acts: Vec<Action> = pages
            .iter()
            .map(|&page| Action::Migrate {
                page,
                to: SLOW,
                mode: MigrateMode::Async,
                keep_shadow: false,
            })
            .chain([Action::Refuse {
                page: pages[0],
                to: SLOW,
            }])
            .collect();
        lx.apply(&mut acts);
        assert!(acts.is_empty());
        assert_eq!(lx.metrics.dry_run_skipped.get(), 3);
        assert_eq!(lx.metrics.pages_migrated.get(), 0);
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        assert_eq!(tel.migrations.len(), 4);
        assert!(tel
            .migrations
            .iter()
            .all(|m| m.outcome == MigrationOutcome::Refused));
        lx.restore_telemetry(tel);
    }

    /// Migration toggling's signal: a page tierkitd promoted and then demoted counts in the
    /// process's `demote_promoted`; one it only demoted does not. Both tiers map to this host's
    /// node 0 here, so move_pages succeeds in place.
    #[test]
    fn demotions_of_promoted_pages_are_counted_per_process() {
        let mut child = sleeper();
        let pid = child.id();
        let mut lx = backend(Targets::Pids(vec![pid]), false);
        lx.tiers = TierMap {
            fast: vec![0],
            slow: vec![0],
            reason: "test".into(),
        };
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        let pages: Vec<PageId> = tel.allocated.iter().take(2).map(|e| e.page).collect();
        assert_eq!(tel.processes[0].demote_promoted, 0);
        lx.restore_telemetry(tel);
        let go = |page, to| Action::Migrate {
            page,
            to,
            mode: MigrateMode::Async,
            keep_shadow: false,
        };
        // both demoted; then pages[0] promoted and demoted again: one demotion of a promoted page
        lx.apply(&mut vec![go(pages[0], SLOW), go(pages[1], SLOW)]);
        lx.apply(&mut vec![go(pages[0], FAST)]);
        lx.apply(&mut vec![go(pages[0], SLOW)]);
        lx.observe().unwrap();
        let tel = lx.take_telemetry();
        let done = tel
            .migrations
            .iter()
            .filter(|m| m.outcome == MigrationOutcome::Done)
            .count();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(done >= 4, "{:?}", tel.migrations);
        assert_eq!(tel.processes[0].demote_promoted, 1);
        assert_eq!(tel.processes[0].demotions, 3);
        lx.restore_telemetry(tel);
    }

    #[test]
    fn start_time_tells_processes_apart() {
        let me = std::process::id();
        assert!(start_time(me).is_some());
        assert!(alive(me));
        assert!(!alive(u32::MAX - 5));
    }
}
