//! Kernel-tiering mode: `--policy nbt` runs the kernel's own tiering (NUMA balancing in
//! memory-tiering mode, `kernel.numa_balancing=2`, plus demotion in reclaim) under tierkitd's
//! control instead of tierkitd's own migrations.
//!
//! - [`wanted`]: the knobs an `nbt` spec sets. `numa_balancing` (2) and `demotion_enabled` (true)
//!   always; the policy's parameters given in the spec map to the knobs of the same Linux name
//!   (`hot_threshold_ms=500` sets `sched/numa_balancing/hot_threshold_ms` in debugfs, or the older
//!   sysctl where debugfs does not have it); parameters left out keep the kernel's values.
//! - [`Knobs::take`]: the ownership check, the state file, the writes; [`Knobs::restore`] puts back
//!   every value tierkitd changed (also from a crashed run's state file, at the next start).
//! - [`Knobs::set`]: a layer over `nbt` (`nbt+alto`, `nbt+colloid`, [`crate::layers`]) changes
//!   knobs while running; each change goes into the state file first, so it is restored the same
//!   way.
//! - [`Vmstat`]: the kernel's tiering counters from `/proc/vmstat` and per-node vmstat, as
//!   metrics and in the status line.
//!
//! Every path is below a root (`/` on a host, a temporary tree in the tests).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Instant;

use prometheus::{IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry};
use serde::{Deserialize, Serialize};
use tierkit_core::params::PolicySpec;
use tracing::{info, warn};

use crate::error::{Error, Result};

/// The default state directory (`--state-dir`).
pub const STATE_DIR: &str = "/run/tierkitd";
/// The state file in the state directory: the original value of every knob tierkitd changed.
pub const STATE_FILE: &str = "kernel-tiering.json";
/// Held (flock) while a tierkitd manages the knobs.
pub const LOCK_FILE: &str = "kernel-tiering.lock";
/// `nbt+alto` on a host without a PMU, for the real-kernel tests: core counters replayed from
/// this file (the recording format of [`crate::source::core_counters::Recorded`]) instead of
/// read from the PMU, one recorded interval per tierkitd interval.
pub const REPLAY_ENV: &str = "TIERKITD_CORE_COUNTERS_REPLAY";

/// One kernel knob: its Linux name, where it lives (first existing path wins) and the `nbt`
/// parameter that sets it.
#[derive(Clone, Copy, Debug)]
pub struct KnobDef {
    /// The Linux name: the sysctl's (`kernel.numa_balancing`) or the debugfs/sysfs path's.
    pub name: &'static str,
    /// Paths below the root, preferred first.
    pub paths: &'static [&'static str],
    /// The `nbt` parameter mapped to it (None: set by the mode itself).
    pub param: Option<&'static str>,
}

const DBG: &str = "sys/kernel/debug/sched/numa_balancing";

/// Every knob kernel-tiering mode may change.
pub const KNOBS: &[KnobDef] = &[
    KnobDef {
        name: "kernel.numa_balancing",
        paths: &["proc/sys/kernel/numa_balancing"],
        param: None,
    },
    KnobDef {
        name: "numa/demotion_enabled",
        paths: &["sys/kernel/mm/numa/demotion_enabled"],
        param: None,
    },
    KnobDef {
        name: "kernel.numa_balancing_promote_rate_limit_MBps",
        paths: &["proc/sys/kernel/numa_balancing_promote_rate_limit_MBps"],
        param: Some("promote_rate_limit_mbps"),
    },
    KnobDef {
        name: "numa_balancing/hot_threshold_ms",
        paths: &[
            "sys/kernel/debug/sched/numa_balancing/hot_threshold_ms",
            "proc/sys/kernel/numa_balancing_hot_threshold_ms",
        ],
        param: Some("hot_threshold_ms"),
    },
    KnobDef {
        name: "numa_balancing/scan_period_min_ms",
        paths: &[
            "sys/kernel/debug/sched/numa_balancing/scan_period_min_ms",
            "proc/sys/kernel/numa_balancing_scan_period_min_ms",
        ],
        param: Some("scan_period_min_ms"),
    },
    KnobDef {
        name: "numa_balancing/scan_period_max_ms",
        paths: &[
            "sys/kernel/debug/sched/numa_balancing/scan_period_max_ms",
            "proc/sys/kernel/numa_balancing_scan_period_max_ms",
        ],
        param: Some("scan_period_max_ms"),
    },
    KnobDef {
        name: "numa_balancing/scan_size_mb",
        paths: &[
            "sys/kernel/debug/sched/numa_balancing/scan_size_mb",
            "proc/sys/kernel/numa_balancing_scan_size_mb",
        ],
        param: Some("scan_size_mb"),
    },
    KnobDef {
        name: "numa_balancing/scan_delay_ms",
        paths: &[
            "sys/kernel/debug/sched/numa_balancing/scan_delay_ms",
            "proc/sys/kernel/numa_balancing_scan_delay_ms",
        ],
        param: Some("scan_delay_ms"),
    },
    KnobDef {
        name: "vm.watermark_scale_factor",
        paths: &["proc/sys/vm/watermark_scale_factor"],
        param: Some("watermark_scale_factor"),
    },
    KnobDef {
        name: "vm.min_free_kbytes",
        paths: &["proc/sys/vm/min_free_kbytes"],
        param: Some("min_free_kbytes"),
    },
];

/// Whether a spec runs in kernel-tiering mode (its base is `nbt`).
pub fn is_kernel_spec(spec: &str) -> bool {
    PolicySpec::parse(spec)
        .ok()
        .and_then(|s| s.layers.first().map(|l| l.name == "nbt"))
        .unwrap_or(false)
}

/// A knob to set: its definition and the value to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Want {
    pub name: &'static str,
    pub paths: &'static [&'static str],
    pub value: String,
}

fn unsupported(why: String) -> Error {
    Error::Unsupported {
        policy: "nbt".into(),
        why,
    }
}

/// The knobs an `nbt` spec sets, in [`KNOBS`] order. The spec has been validated by
/// `tierkit_policies::build`; this refuses what has no kernel knob.
pub fn wanted(spec: &str) -> Result<Vec<Want>> {
    let parsed = PolicySpec::parse(spec)?;
    // the layers over the kernel's tiering (+alto, +colloid) are checked by crate::layers
    crate::layers::parse(spec)?;
    let mut given: BTreeMap<&str, &str> = BTreeMap::new();
    for (k, v) in &parsed.layers[0].args {
        let k = match k.as_str() {
            // the older tierkit name of scan_period_min_ms; the newer one wins when both are set
            "scan_period_ms" => {
                if parsed.layers[0]
                    .args
                    .iter()
                    .any(|(o, _)| o == "scan_period_min_ms")
                {
                    continue;
                }
                "scan_period_min_ms"
            }
            "kswapd_scan_per_ms" => {
                return Err(unsupported(
                    "kswapd_scan_per_ms is a bound of the simulator's kswapd, not a kernel knob; drop it".into(),
                ))
            }
            "kswapd_wake_delay_us" => {
                return Err(unsupported(
                    "kswapd_wake_delay_us is the simulator's model of when kswapd gets a CPU; on a real host the scheduler decides; drop it".into(),
                ))
            }
            "kswapd_demote_us" => {
                return Err(unsupported(
                    "kswapd_demote_us is the simulator's model of how long kswapd's own demotions take; on a real host they take what they take; drop it".into(),
                ))
            }
            // what the kernel does for an exec'd program (task_numa_work arms numa_next_scan
            // first): nothing to set; the older model of the simulator is not the kernel
            "first_window" if v == "exec" => continue,
            "first_window" => {
                return Err(unsupported(format!(
                    "first_window={v} is the simulator's older model of where the scanner's first window comes; the kernel places it itself (first_window=exec); drop it"
                )))
            }
            "scan_stats" => {
                return Err(unsupported(
                    "scan_stats is how the kernel's own task_numa_fault accounts hint faults (upstream: it does; Colloid's patched kernel: it does not), not a knob; drop it".into(),
                ))
            }
            k => k,
        };
        given.insert(k, v.as_str());
    }
    let mut out = Vec::new();
    for d in KNOBS {
        let value = match d.param {
            None if d.name == "kernel.numa_balancing" => "2".to_string(),
            None => "true".to_string(),
            Some(p) => match given.remove(p) {
                None => continue,
                Some(v) => {
                    let f: f64 = v
                        .replace('_', "")
                        .trim()
                        .parse()
                        .map_err(|_| Error::Config {
                            field: "--policy".into(),
                            why: format!("nbt: {p}={v} is not a number"),
                        })?;
                    if f.fract() != 0.0 || f < 0.0 || f > u32::MAX as f64 {
                        return Err(Error::Config {
                            field: "--policy".into(),
                            why: format!(
                                "nbt: {p}={v}: the kernel's {} takes a whole number",
                                d.name
                            ),
                        });
                    }
                    if p == "min_free_kbytes" && f == 0.0 {
                        // the simulator's "the kernel's own value": nothing to set (0 itself
                        // would leave the kernel no reserve at all)
                        continue;
                    }
                    format!("{}", f as u64)
                }
            },
        };
        out.push(Want {
            name: d.name,
            paths: d.paths,
            value,
        });
    }
    if let Some((k, _)) = given.into_iter().next() {
        return Err(unsupported(format!("parameter {k} has no kernel knob")));
    }
    Ok(out)
}

/// A knob's value as written to the state file and compared: trimmed.
fn norm(v: &str) -> String {
    v.trim().to_string()
}

fn same(name: &str, a: &str, b: &str) -> bool {
    let (a, b) = (norm(a), norm(b));
    if name == "numa/demotion_enabled" {
        let t = |s: &str| matches!(s, "1" | "true" | "y" | "Y");
        return t(&a) == t(&b);
    }
    a == b
}

/// One knob changed, as the state file records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Changed {
    pub name: String,
    /// The full path written.
    pub path: PathBuf,
    pub original: String,
    pub set: String,
    /// The value set before `set`, while a layer (`+alto`, `+colloid`) changes the knob during
    /// the run: the state file is written before the knob, so after a crash between the two the
    /// knob may still hold this one, which is tierkitd's too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub was_set: Option<String>,
}

/// The state file's content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub pid: u32,
    /// Whether tierkitd took the knobs over from another manager (`--take-over`).
    pub took_over: bool,
    pub knobs: Vec<Changed>,
}

fn read_knob(path: &Path) -> Result<String> {
    Ok(norm(&crate::error::read_to_string(path)?))
}

fn write_knob(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, format!("{value}\n")).map_err(crate::error::io(path))
}

/// Write `bytes` to `path` atomically: a temporary file in the same directory, synced, renamed
/// over the path, and the directory synced.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::File::create(&tmp).map_err(crate::error::io(&tmp))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(crate::error::io(&tmp))?;
    std::fs::rename(&tmp, path).map_err(crate::error::io(path))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Restore the knobs a state names: a knob still at the value tierkitd set gets its original
/// back; one someone changed since is left as it is (and said so). Returns the log lines.
fn restore_state(state: &State) -> Vec<String> {
    let mut lines = Vec::new();
    // the reverse order: numa_balancing, set first, is put back last
    for c in state.knobs.iter().rev() {
        match read_knob(&c.path) {
            // at its original already (a layer put it back while running): nothing to do
            Ok(now) if same(&c.name, &now, &c.original) => {}
            Ok(now)
                if same(&c.name, &now, &c.set)
                    || c.was_set.as_deref().is_some_and(|w| same(&c.name, &now, w)) =>
            {
                match write_knob(&c.path, &c.original) {
                    Ok(()) => lines.push(format!(
                        "restored {} to {} (was {})",
                        c.name, c.original, now
                    )),
                    Err(e) => lines.push(format!(
                        "could not restore {} to {}: {e}",
                        c.name, c.original
                    )),
                }
            }
            Ok(now) => lines.push(format!(
                "left {} at {now}: someone changed it after tierkitd set {} (its original was {})",
                c.name, c.set, c.original
            )),
            Err(e) => lines.push(format!("could not read {} to restore it: {e}", c.name)),
        }
    }
    lines
}

/// Log a line of the knobs' report: failures and knobs left alone as warnings.
fn say(l: &str) {
    if l.starts_with("could not") || l.starts_with("left ") {
        warn!("kernel tiering: {l}");
    } else {
        info!("kernel tiering: {l}");
    }
}

/// The knobs tierkitd holds: the lock, the state file, and what to put back.
pub struct Knobs {
    root: PathBuf,
    state_path: PathBuf,
    state: State,
    _lock: Option<std::fs::File>,
    restored: bool,
    dry_run: bool,
    /// `--dry-run`: the values a layer would have set, to log each change once.
    dry: BTreeMap<String, String>,
}

/// What [`Knobs::take`] found and did, for the start-up report.
#[derive(Debug, Default)]
pub struct TakeReport {
    pub lines: Vec<String>,
}

impl Knobs {
    /// Take the knobs: lock the state directory (one tierkitd at a time), restore what a crashed
    /// run's state file records, check that no other manager owns the knobs (`kernel.numa_balancing`
    /// with the memory-tiering bit, 2, set; refused unless `take_over`), record the original value
    /// of every knob to change in the state file (atomically), then write the knobs. A knob whose
    /// every path is absent is refused if the spec set it, and skipped (said so) otherwise.
    /// With `dry_run`, reports what it would change and changes nothing.
    pub fn take(
        root: &Path,
        state_dir: &Path,
        wants: &[Want],
        take_over: bool,
        dry_run: bool,
    ) -> Result<(Knobs, TakeReport)> {
        let mut report = TakeReport::default();
        std::fs::create_dir_all(state_dir).map_err(crate::error::io(state_dir))?;
        let lock_path = state_dir.join(LOCK_FILE);
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&lock_path)
            .map_err(crate::error::io(&lock_path))?;
        // SAFETY: flock on an fd we own.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let holder = std::fs::read_to_string(&lock_path).unwrap_or_default();
            return Err(unsupported(format!(
                "another tierkitd (pid {}) manages the kernel's tiering knobs (it holds {}); one at a time",
                holder.trim(),
                lock_path.display()
            )));
        }
        let _ = lock.set_len(0);
        let _ = (&lock).write_all(format!("{}\n", std::process::id()).as_bytes());
        let state_path = state_dir.join(STATE_FILE);
        if state_path.exists() {
            let text = crate::error::read_to_string(&state_path)?;
            let old: State = serde_json::from_str(&text).map_err(|e| Error::Parse {
                path: state_path.clone(),
                what: "tierkitd's kernel-tiering state",
                got: e.to_string(),
            })?;
            report.lines.push(format!(
                "state file {} left by tierkitd pid {} (it did not exit cleanly): restoring its knobs",
                state_path.display(),
                old.pid
            ));
            report.lines.extend(restore_state(&old));
            std::fs::remove_file(&state_path).map_err(crate::error::io(&state_path))?;
        }
        // where each knob is, and its value now
        let mut plan = Vec::new();
        for w in wants {
            let found = w.paths.iter().map(|p| root.join(p)).find(|p| p.exists());
            let Some(path) = found else {
                let def = KNOBS.iter().find(|d| d.name == w.name);
                if def.is_some_and(|d| d.param.is_some()) {
                    let dbg = w.paths[0].starts_with(DBG);
                    return Err(unsupported(format!(
                        "the spec sets {} and this kernel has none of {}{}",
                        w.name,
                        w.paths
                            .iter()
                            .map(|p| format!("/{p}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        if dbg {
                            " (mount debugfs at /sys/kernel/debug, or drop the parameter)"
                        } else {
                            ""
                        }
                    )));
                }
                return Err(unsupported(format!(
                    "the kernel has no /{} (it needs CONFIG_NUMA_BALANCING and memory tiers, Linux 6.1 or later)",
                    w.paths[0]
                )));
            };
            let now = read_knob(&path)?;
            plan.push((w, path, now));
        }
        let nb = plan
            .iter()
            .find(|(w, _, _)| w.name == "kernel.numa_balancing")
            .map(|(_, _, v)| v.parse::<u32>().unwrap_or(0));
        if let Some(v) = nb {
            if v & 2 != 0 {
                if take_over {
                    report.lines.push(format!(
                        "kernel.numa_balancing is {v} (memory tiering on, not set by tierkitd): taking the knobs over (--take-over); their values now are restored at exit"
                    ));
                } else {
                    return Err(unsupported(format!(
                        "another manager owns the kernel's tiering: kernel.numa_balancing is {v} (the memory-tiering bit, 2, is set) and no tierkitd state file records setting it; stop that manager, or pass --take-over to take the knobs over (tierkitd then restores {v} at exit)"
                    )));
                }
            }
        }
        let mut state = State {
            pid: std::process::id(),
            took_over: take_over && nb.is_some_and(|v| v & 2 != 0),
            knobs: Vec::new(),
        };
        for (w, path, now) in &plan {
            if same(w.name, now, &w.value) {
                report.lines.push(format!("{} is {} already", w.name, now));
            } else {
                state.knobs.push(Changed {
                    name: w.name.to_string(),
                    path: path.clone(),
                    original: now.clone(),
                    set: w.value.clone(),
                    was_set: None,
                });
            }
        }
        for d in KNOBS.iter().filter(|d| d.param.is_some()) {
            if !wants.iter().any(|w| w.name == d.name) {
                match d.paths.iter().map(|p| root.join(p)).find(|p| p.exists()) {
                    Some(p) => report.lines.push(format!(
                        "{} kept at the kernel's {} (nbt parameter {} not given)",
                        d.name,
                        read_knob(&p).unwrap_or_else(|_| "?".into()),
                        d.param.unwrap_or("")
                    )),
                    None => report.lines.push(format!(
                        "{} not available (none of {})",
                        d.name,
                        d.paths
                            .iter()
                            .map(|p| format!("/{p}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
            }
        }
        let mut knobs = Knobs {
            root: root.to_path_buf(),
            state_path,
            state,
            _lock: Some(lock),
            restored: false,
            dry_run,
            dry: BTreeMap::new(),
        };
        if dry_run {
            for c in &knobs.state.knobs {
                report.lines.push(format!(
                    "DRY RUN: would set {} from {} to {}",
                    c.name, c.original, c.set
                ));
            }
            knobs.state.knobs.clear();
            knobs.restored = true;
            return Ok((knobs, report));
        }
        if !knobs.state.knobs.is_empty() {
            let json = serde_json::to_vec_pretty(&knobs.state).expect("a serialisable state");
            write_atomic(&knobs.state_path, &json)?;
        }
        let mut done = 0;
        let mut failed = None;
        for c in &knobs.state.knobs {
            match write_knob(&c.path, &c.set) {
                Ok(()) => {
                    report
                        .lines
                        .push(format!("set {} to {} (was {})", c.name, c.set, c.original));
                    done += 1;
                }
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failed {
            // put back what was written, then refuse
            knobs.state.knobs.truncate(done);
            for l in knobs.restore() {
                say(&l);
            }
            return Err(unsupported(format!(
                "cannot set the kernel's tiering knobs: {e}"
            )));
        }
        // a kernel that stores another value than the one written (rounding, clamping): the
        // value it reads back is the one restore compares with
        let mut reread = false;
        for c in &mut knobs.state.knobs {
            if let Ok(now) = read_knob(&c.path) {
                if !same(&c.name, &now, &c.set) {
                    report
                        .lines
                        .push(format!("{} reads back as {now} (set {})", c.name, c.set));
                    c.set = now;
                    reread = true;
                }
            }
        }
        if reread {
            let json = serde_json::to_vec_pretty(&knobs.state).expect("a serialisable state");
            write_atomic(&knobs.state_path, &json)?;
        }
        Ok((knobs, report))
    }

    /// A crash (SIGKILL), for the tests: the process's files close, which releases the lock,
    /// and nothing is restored; the state file stays for the next start.
    #[doc(hidden)]
    pub fn crash(mut self) {
        self.restored = true;
    }

    /// The knobs changed (name, original, set).
    pub fn changed(&self) -> &[Changed] {
        &self.state.knobs
    }

    /// A knob's value now (the first of its paths that exists), None when the kernel lacks it.
    pub fn value(&self, name: &str) -> Option<String> {
        let d = KNOBS.iter().find(|d| d.name == name)?;
        let p = d
            .paths
            .iter()
            .map(|p| self.root.join(p))
            .find(|p| p.exists())?;
        read_knob(&p).ok()
    }

    /// Change a knob while running (a layer's regulation: `+alto`, `+colloid`). The state file
    /// is updated first (atomically), recording the knob's original value the first time and
    /// the value set before this one, so that exit, SIGTERM and the next start after a crash
    /// restore it like the knobs set at start. Returns the log line, None when the knob already
    /// has the value. With `--dry-run` nothing is written and the line says what would be.
    pub fn set(&mut self, name: &str, value: &str) -> Result<Option<String>> {
        let d = KNOBS
            .iter()
            .find(|d| d.name == name)
            .ok_or_else(|| unsupported(format!("{name} is not a kernel-tiering knob")))?;
        let path = match self.state.knobs.iter().find(|c| c.name == name) {
            Some(c) => c.path.clone(),
            None => d
                .paths
                .iter()
                .map(|p| self.root.join(p))
                .find(|p| p.exists())
                .ok_or_else(|| {
                    unsupported(format!("this kernel has no {name} (/{})", d.paths[0]))
                })?,
        };
        let now = read_knob(&path)?;
        if self.dry_run {
            let prev = self.dry.get(name).cloned().unwrap_or(now);
            if same(name, &prev, value) {
                return Ok(None);
            }
            self.dry.insert(name.to_string(), value.to_string());
            return Ok(Some(format!(
                "DRY RUN: would set {name} from {prev} to {value}"
            )));
        }
        if same(name, &now, value) {
            return Ok(None);
        }
        match self.state.knobs.iter_mut().find(|c| c.name == name) {
            Some(c) => {
                c.was_set = Some(std::mem::replace(&mut c.set, value.to_string()));
            }
            None => self.state.knobs.push(Changed {
                name: name.to_string(),
                path: path.clone(),
                original: now.clone(),
                set: value.to_string(),
                was_set: None,
            }),
        }
        self.restored = false;
        let json = serde_json::to_vec_pretty(&self.state).expect("a serialisable state");
        write_atomic(&self.state_path, &json)?;
        write_knob(&path, value)?;
        Ok(Some(format!("set {name} to {value} (was {now})")))
    }

    /// Put back every knob changed (those still at the value tierkitd set) and remove the state
    /// file. Idempotent. Returns the log lines.
    pub fn restore(&mut self) -> Vec<String> {
        if self.restored {
            return Vec::new();
        }
        self.restored = true;
        let lines = restore_state(&self.state);
        if self.state_path.exists() {
            if let Err(e) = std::fs::remove_file(&self.state_path) {
                return [
                    lines,
                    vec![format!(
                        "could not remove {}: {e}",
                        self.state_path.display()
                    )],
                ]
                .concat();
            }
        }
        lines
    }
}

impl Drop for Knobs {
    fn drop(&mut self) {
        for l in self.restore() {
            say(&l);
        }
    }
}

/// The kernel's tiering counters at one moment. Absent counters (older kernels) are None.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vmstat {
    /// numa_hint_faults of /proc/vmstat (a global event count).
    pub hint_faults: Option<u64>,
    /// Per node: the node_stat counters of nodeN/vmstat.
    pub nodes: BTreeMap<u32, NodeStat>,
}

/// The pseudo-node of host-wide demotion counts: kernels before 6.8 count `pgdemote_*` in
/// `/proc/vmstat` only (events, not per-node stats); their series get `node="all"`.
pub const ALL_NODES: u32 = u32::MAX;

fn node_label(id: u32) -> String {
    if id == ALL_NODES {
        "all".into()
    } else {
        id.to_string()
    }
}

/// A node's tiering counters (pages).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeStat {
    pub promote_candidate: Option<u64>,
    pub promote_success: Option<u64>,
    pub demote_kswapd: Option<u64>,
    pub demote_direct: Option<u64>,
}

fn field(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next() == Some(key))
            .then(|| it.next().and_then(|v| v.parse().ok()))
            .flatten()
    })
}

impl Vmstat {
    /// Read `/proc/vmstat` and `sys/devices/system/node/node*/vmstat` below `root`.
    pub fn read(root: &Path) -> Result<Vmstat> {
        let text = crate::error::read_to_string(root.join("proc/vmstat"))?;
        let mut v = Vmstat {
            hint_faults: field(&text, "numa_hint_faults"),
            nodes: BTreeMap::new(),
        };
        let nodes = root.join("sys/devices/system/node");
        if let Ok(rd) = std::fs::read_dir(&nodes) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(id) = name
                    .strip_prefix("node")
                    .and_then(|n| n.parse::<u32>().ok())
                else {
                    continue;
                };
                let Ok(t) = std::fs::read_to_string(e.path().join("vmstat")) else {
                    continue;
                };
                v.nodes.insert(
                    id,
                    NodeStat {
                        promote_candidate: field(&t, "pgpromote_candidate"),
                        promote_success: field(&t, "pgpromote_success"),
                        demote_kswapd: field(&t, "pgdemote_kswapd"),
                        demote_direct: field(&t, "pgdemote_direct"),
                    },
                );
            }
        }
        if v.nodes.values().all(|n| n.demote_kswapd.is_none()) {
            let (k, d) = (
                field(&text, "pgdemote_kswapd"),
                field(&text, "pgdemote_direct"),
            );
            if k.is_some() || d.is_some() {
                v.nodes.insert(
                    ALL_NODES,
                    NodeStat {
                        demote_kswapd: k,
                        demote_direct: d,
                        ..NodeStat::default()
                    },
                );
            }
        }
        Ok(v)
    }

    /// Totals over the nodes: (candidates, promoted, demoted by kswapd, demoted directly).
    pub fn totals(&self) -> (u64, u64, u64, u64) {
        let s = |f: fn(&NodeStat) -> Option<u64>| self.nodes.values().filter_map(f).sum::<u64>();
        (
            s(|n| n.promote_candidate),
            s(|n| n.promote_success),
            s(|n| n.demote_kswapd),
            s(|n| n.demote_direct),
        )
    }
}

/// The kernel-tiering metrics, registered in the daemon's registry (names get its `tierkitd_`
/// prefix). Counters count from tierkitd's start.
pub struct KernelMetrics {
    pub hint_faults: IntCounter,
    pub promote_candidate: IntCounterVec,
    pub promote_success: IntCounterVec,
    pub demote_kswapd: IntCounterVec,
    pub demote_direct: IntCounterVec,
    pub knob: IntGaugeVec,
}

impl KernelMetrics {
    pub fn register(r: &Registry) -> KernelMetrics {
        fn reg<M: prometheus::core::Collector + Clone + 'static>(r: &Registry, m: M) -> M {
            r.register(Box::new(m.clone()))
                .expect("metric names are unique");
            m
        }
        let per_node = |name: &str, help: &str| {
            reg(
                r,
                IntCounterVec::new(Opts::new(name, help), &["node"]).expect("a valid metric"),
            )
        };
        KernelMetrics {
            hint_faults: reg(
                r,
                IntCounter::with_opts(Opts::new(
                    "kernel_numa_hint_faults_total",
                    "NUMA hint faults taken by the kernel since tierkitd started (/proc/vmstat numa_hint_faults).",
                ))
                .expect("a valid metric"),
            ),
            promote_candidate: per_node(
                "kernel_pgpromote_candidate_total",
                "Pages the kernel's tiering found hot enough to promote, per node, since tierkitd started (pgpromote_candidate).",
            ),
            promote_success: per_node(
                "kernel_pgpromote_success_total",
                "Pages the kernel promoted to the node since tierkitd started (pgpromote_success).",
            ),
            demote_kswapd: per_node(
                "kernel_pgdemote_kswapd_total",
                "Pages kswapd demoted from the node since tierkitd started (pgdemote_kswapd).",
            ),
            demote_direct: per_node(
                "kernel_pgdemote_direct_total",
                "Pages direct reclaim demoted from the node since tierkitd started (pgdemote_direct).",
            ),
            knob: reg(
                r,
                IntGaugeVec::new(
                    Opts::new(
                        "kernel_tiering_knob",
                        "Value of each kernel tiering knob tierkitd set (demotion_enabled: 1 or 0).",
                    ),
                    &["knob"],
                )
                .expect("a valid metric"),
            ),
        }
    }

    /// Add the growth from `prev` to `now`.
    pub fn add(&self, prev: &Vmstat, now: &Vmstat) {
        let d = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        if let Some(x) = d(prev.hint_faults, now.hint_faults) {
            self.hint_faults.inc_by(x);
        }
        for (id, n) in &now.nodes {
            let p = prev.nodes.get(id).cloned().unwrap_or_default();
            let node = node_label(*id);
            for (c, a, b) in [
                (
                    &self.promote_candidate,
                    p.promote_candidate,
                    n.promote_candidate,
                ),
                (&self.promote_success, p.promote_success, n.promote_success),
                (&self.demote_kswapd, p.demote_kswapd, n.demote_kswapd),
                (&self.demote_direct, p.demote_direct, n.demote_direct),
            ] {
                if let (Some(x), Some(_)) = (d(a, b), b) {
                    c.with_label_values(&[&node]).inc_by(x);
                }
            }
        }
    }

    pub fn set_knobs(&self, changed: &[Changed]) {
        for c in changed {
            let v = match c.set.as_str() {
                "true" => 1,
                "false" => 0,
                s => s.parse().unwrap_or(-1),
            };
            self.knob.with_label_values(&[&c.name]).set(v);
        }
    }
}

/// The status line's part for the kernel's tiering: growth from `a` to `b` over `secs`.
pub fn status(a: &Vmstat, b: &Vmstat, secs: f64) -> String {
    let (ca, pa, ka, da) = a.totals();
    let (cb, pb, kb, db) = b.totals();
    let hf = b
        .hint_faults
        .zip(a.hint_faults)
        .map_or(0, |(b, a)| b.saturating_sub(a));
    let per = |x: u64| x as f64 / secs.max(1e-9);
    format!(
        "kernel tiering: hint faults {hf} ({:.0}/s), promote candidates {}, promoted {} ({:.0}/s), demoted kswapd {} direct {}",
        per(hf),
        cb.saturating_sub(ca),
        pb.saturating_sub(pa),
        per(pb.saturating_sub(pa)),
        kb.saturating_sub(ka),
        db.saturating_sub(da)
    )
}

/// The time of the last status, and the counters then.
pub struct Since {
    pub at: Instant,
    pub vm: Vmstat,
}

/// Run `nbt` as the kernel's own tiering until SIGTERM/SIGINT: take the knobs, then every
/// interval scan the targets' placement and read the kernel's counters; restore the knobs at the
/// end (also when the loop fails). A layer (`nbt+alto`, `nbt+colloid`; [`crate::layers`]) reads
/// its counters each interval and regulates the knobs (and `+colloid` demotes pages); plain
/// `nbt` moves no page of its own.
pub fn run(cfg: &crate::config::Config, tiers: crate::topology::TierMap) -> Result<()> {
    use tierkit_core::Backend;
    let root = Path::new("/");
    let wants = wanted(&cfg.policy)?;
    let layer = crate::layers::parse(&cfg.policy)?;
    // tests only (the real-kernel tests' guest has no PMU): replay recorded core counters
    let replay = match (&layer, std::env::var_os(REPLAY_ENV)) {
        (Some(crate::layers::LayerSpec::Alto { .. }), Some(f)) if !f.is_empty() => {
            let f = PathBuf::from(f);
            let text = crate::error::read_to_string(&f)?;
            let rec = crate::source::core_counters::Recorded::parse(&text).map_err(|e| {
                Error::Config {
                    field: REPLAY_ENV.into(),
                    why: format!("{}: {e}", f.display()),
                }
            })?;
            warn!(
                "core counters: replayed from {} ({REPLAY_ENV}, for tests): {} intervals, not this host's PMU",
                f.display(),
                rec.intervals()
            );
            Some(crate::source::core_counters::CoreSampler::new(
                crate::source::core_counters::Uarch::SkylakeX,
                Box::new(rec),
            ))
        }
        _ => None,
    };
    // tests only: injected tier latencies for +colloid (its access samples are still read)
    let latencies = match (&layer, std::env::var_os(crate::layers::LATENCY_REPLAY_ENV)) {
        (Some(crate::layers::LayerSpec::Colloid { .. }), Some(f)) if !f.is_empty() => {
            let f = PathBuf::from(f);
            let text = crate::error::read_to_string(&f)?;
            let l = crate::layers::parse_latencies(&text).map_err(|e| Error::Config {
                field: crate::layers::LATENCY_REPLAY_ENV.into(),
                why: format!("{}: {e}", f.display()),
            })?;
            warn!(
                "tier latencies: injected from {} ({}, for tests): {} intervals, not this host's uncore counters",
                f.display(),
                crate::layers::LATENCY_REPLAY_ENV,
                l.len()
            );
            Some(l)
        }
        _ => None,
    };
    // a layer's counters are checked before any knob changes: a host without them is refused
    // with what is missing (no core PMU for +alto; no uncore CHA and no PEBS for +colloid)
    let choice = match &layer {
        Some(_) if replay.is_some() => None,
        Some(l) => {
            let mut needs = crate::layers::needs(l);
            needs.tier_counters &= latencies.is_none();
            Some(crate::select::choose(
                &cfg.policy,
                &needs,
                cfg.source,
                cfg.damon,
                cfg.samples_per_page,
            )?)
        }
        None => None,
    };
    let (mut knobs, rep) = Knobs::take(
        root,
        &cfg.state_dir,
        &wants,
        cfg.take_over,
        cfg.settings.dry_run,
    )?;
    info!(
        "telemetry: `nbt` runs as the kernel's own tiering (NUMA balancing in memory-tiering mode, demotion in reclaim); \
         tierkitd sets its knobs, restores them at exit (state file {}), and reads /proc/vmstat and per-node vmstat",
        cfg.state_dir.join(STATE_FILE).display()
    );
    for l in &rep.lines {
        say(l);
    }
    let (source, cha, cores): (Box<dyn crate::source::Source>, _, _) = match choice {
        Some(c) => {
            for l in &c.report {
                info!("{l}");
            }
            (c.source, c.cha, c.cores)
        }
        None => (Box::new(crate::source::NoSource), None, None),
    };
    crate::daemon::install_signals();
    let metrics = crate::metrics::Metrics::new();
    let km = KernelMetrics::register(&metrics.registry());
    km.set_knobs(knobs.changed());
    let lm = layer
        .as_ref()
        .map(|l| crate::layers::LayerMetrics::register(&metrics.registry(), l));
    let mut regulator = layer
        .as_ref()
        .map(|l| crate::layers::Regulator::new(l, &knobs));
    if let Some(r) = &regulator {
        info!("{}", r.describe());
    }
    if let Some(addr) = cfg.metrics_addr {
        let bound = crate::metrics::serve(addr, metrics.registry())?;
        info!("metrics: http://{bound}/metrics");
    }
    let result = (|| -> Result<()> {
        let mut lx = crate::linux::Linux::new(
            cfg.targets.clone(),
            tiers,
            Path::new(crate::topology::NODE_ROOT).into(),
            cfg.settings.clone(),
            source,
            &crate::daemon::STOP,
            metrics,
        )?;
        lx.metrics.set_info(
            &layer
                .as_ref()
                .map_or("nbt".to_string(), |l| format!("nbt+{}", l.name())),
            "kernel",
        );
        lx.set_cha(cha);
        if let Some(r) = replay {
            lx.set_core_counters(r);
        } else if let Some(u) = cores {
            let (reader, note) = crate::source::core_counters::reader_for(u, &cfg.targets);
            info!("{note}");
            lx.set_core_counters(crate::source::core_counters::CoreSampler::new(u, reader));
        }
        info!("running on {} target(s): {:?}", lx.pids().len(), lx.pids());
        let first = Vmstat::read(root)?;
        let mut prev = first.clone();
        let mut since = Since {
            at: Instant::now(),
            vm: first.clone(),
        };
        let started = Instant::now();
        let mut injected = 0usize;
        loop {
            match lx.observe() {
                Ok(()) => {}
                Err(Error::Stopped) => break,
                Err(e) => return Err(e),
            }
            if let Some(r) = regulator.as_mut() {
                let mut tel = lx.take_telemetry();
                if let Some(l) = &latencies {
                    let (f, s) = l[injected.min(l.len() - 1)];
                    injected += 1;
                    tel.tier_counters =
                        crate::layers::injected_tiers(f, s, tel.epoch_ns as f64 / 1e9, tel.cpu_ghz);
                }
                let res = r.step(&tel, &mut knobs, lm.as_ref(), |p| {
                    tierkit_core::Mechanism::tier_of(&lx, p)
                });
                lx.restore_telemetry(tel);
                let o = res?;
                for l in &o.lines {
                    info!("{l}");
                }
                if !o.demote.is_empty() {
                    let asked = o.demote.len();
                    let before = lx.metrics.demoted_total();
                    let mut acts = crate::layers::demotions(&o.demote);
                    lx.apply(&mut acts);
                    let moved = lx.metrics.demoted_total().saturating_sub(before);
                    // pages that would not move (their refusals are logged and counted by the
                    // migration pass) come back with the next samples: only moves at info
                    if moved > 0 {
                        info!("colloid: demoted {moved} of {asked} sampled hot page(s) of the fast tier");
                    } else {
                        tracing::debug!(
                            "colloid: demoted none of {asked} sampled hot page(s) of the fast tier"
                        );
                    }
                }
                km.set_knobs(knobs.changed());
            }
            let now = Vmstat::read(root)?;
            km.add(&prev, &now);
            prev = now;
            if since.at.elapsed() >= cfg.status_every {
                info!(
                    "status: {} target(s), {}; {}",
                    lx.metrics.target_processes.get(),
                    lx.tier_summary(),
                    status(&since.vm, &prev, since.at.elapsed().as_secs_f64())
                );
                since = Since {
                    at: Instant::now(),
                    vm: prev.clone(),
                };
            }
        }
        lx.stop_source();
        info!(
            "stopped by signal after {} intervals: {}",
            lx.metrics.intervals.get(),
            status(&first, &prev, started.elapsed().as_secs_f64())
        );
        Ok(())
    })();
    let lines = knobs.restore();
    for l in &lines {
        say(l);
    }
    if lines.is_empty() {
        info!("kernel tiering: no knob to restore");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

    /// A fake host: /proc and /sys knobs at a 6.12 kernel's defaults, vmstat files.
    fn fake(numa_balancing: &str, debugfs: bool) -> PathBuf {
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = std::env::temp_dir().join(format!("tierkitd-kt-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let w = |p: &str, v: &str| {
            let f = root.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, format!("{v}\n")).unwrap();
        };
        w("proc/sys/kernel/numa_balancing", numa_balancing);
        w("sys/kernel/mm/numa/demotion_enabled", "false");
        w(
            "proc/sys/kernel/numa_balancing_promote_rate_limit_MBps",
            "65536",
        );
        w("proc/sys/vm/watermark_scale_factor", "10");
        w("proc/sys/vm/min_free_kbytes", "45056");
        if debugfs {
            for (k, v) in [
                ("hot_threshold_ms", "1000"),
                ("scan_period_min_ms", "1000"),
                ("scan_period_max_ms", "60000"),
                ("scan_size_mb", "256"),
                ("scan_delay_ms", "1000"),
            ] {
                w(&format!("{DBG}/{k}"), v);
            }
        }
        w(
            "proc/vmstat",
            "nr_free_pages 100\nnuma_hint_faults 50\nnuma_pte_updates 9\npgpromote_success 7\n",
        );
        w(
            "sys/devices/system/node/node0/vmstat",
            "nr_free_pages 60\npgpromote_success 7\npgpromote_candidate 9\npgdemote_kswapd 0\npgdemote_direct 0\n",
        );
        w(
            "sys/devices/system/node/node1/vmstat",
            "nr_free_pages 40\npgpromote_success 0\npgpromote_candidate 0\npgdemote_kswapd 3\npgdemote_direct 1\n",
        );
        root
    }

    fn get(root: &Path, p: &str) -> String {
        std::fs::read_to_string(root.join(p))
            .unwrap()
            .trim()
            .to_string()
    }

    #[test]
    fn parameters_map_to_the_knobs_by_their_linux_names() {
        let w = wanted("nbt").unwrap();
        let names: Vec<&str> = w.iter().map(|w| w.name).collect();
        assert_eq!(names, ["kernel.numa_balancing", "numa/demotion_enabled"]);
        assert_eq!((w[0].value.as_str(), w[1].value.as_str()), ("2", "true"));
        let w = wanted(
            "nbt:hot_threshold_ms=500,promote_rate_limit_mbps=1_024,scan_period_ms=200,scan_period_max_ms=30000,scan_size_mb=64,scan_delay_ms=0,watermark_scale_factor=50",
        )
        .unwrap();
        let m: BTreeMap<&str, &str> = w.iter().map(|w| (w.name, w.value.as_str())).collect();
        assert_eq!(m["numa_balancing/hot_threshold_ms"], "500");
        assert_eq!(m["kernel.numa_balancing_promote_rate_limit_MBps"], "1024");
        assert_eq!(m["numa_balancing/scan_period_min_ms"], "200");
        assert_eq!(m["numa_balancing/scan_period_max_ms"], "30000");
        assert_eq!(m["numa_balancing/scan_size_mb"], "64");
        assert_eq!(m["numa_balancing/scan_delay_ms"], "0");
        assert_eq!(m["vm.watermark_scale_factor"], "50");
        assert_eq!(w.len(), 9);
        // vm.min_free_kbytes as given; 0 is the simulator's "the kernel's own": nothing to set
        let w = wanted("nbt:min_free_kbytes=67_584").unwrap();
        assert!(w
            .iter()
            .any(|w| w.name == "vm.min_free_kbytes" && w.value == "67584"));
        assert_eq!(
            wanted("nbt:min_free_kbytes=0").unwrap(),
            wanted("nbt").unwrap()
        );
        // the newer name wins over the older one
        let w = wanted("nbt:scan_period_min_ms=300,scan_period_ms=200").unwrap();
        assert!(w
            .iter()
            .any(|w| w.name.ends_with("scan_period_min_ms") && w.value == "300"));
        // every parameter of the simulator's nbt has a knob, or a reason
        let e = wanted("nbt:kswapd_scan_per_ms=64").unwrap_err().to_string();
        assert!(e.contains("not a kernel knob"), "{e}");
        let e = wanted("nbt:scan_stats=false").unwrap_err().to_string();
        assert!(e.contains("not a knob"), "{e}");
        let e = wanted("nbt:kswapd_wake_delay_us=5000")
            .unwrap_err()
            .to_string();
        assert!(e.contains("the scheduler decides"), "{e}");
        let e = wanted("nbt:kswapd_demote_us=50").unwrap_err().to_string();
        assert!(e.contains("take what they take"), "{e}");
        // the kernel's own first window is accepted, with nothing to set; the older model not
        assert_eq!(
            wanted("nbt:first_window=exec").unwrap(),
            wanted("nbt").unwrap()
        );
        let e = wanted("nbt:first_window=delay").unwrap_err().to_string();
        assert!(e.contains("the kernel places it itself"), "{e}");
        let e = wanted("nbt:scan_delay_ms=2.5").unwrap_err().to_string();
        assert!(e.contains("whole number"), "{e}");
        // +alto and +colloid regulate the kernel's tiering (crate::layers); other layers do not
        assert!(wanted("nbt+alto").is_ok() && wanted("nbt+colloid").is_ok());
        let e = wanted("nbt+toggle").unwrap_err().to_string();
        assert!(e.contains("+toggle") && e.contains("not supported"), "{e}");
        assert!(
            is_kernel_spec("nbt:hot_threshold_ms=5")
                && !is_kernel_spec("tpp")
                && !is_kernel_spec("hemem")
        );
        for d in KNOBS.iter().filter_map(|d| d.param) {
            let p = tierkit_policies::build(&format!("nbt:{d}=1000"));
            assert!(p.is_ok(), "{d} is not a parameter of nbt");
        }
    }

    #[test]
    fn set_then_restore() {
        let root = fake("1", true);
        let st = root.join("run");
        let w = wanted("nbt:hot_threshold_ms=500").unwrap();
        let (mut k, rep) = Knobs::take(&root, &st, &w, false, false).unwrap();
        assert_eq!(get(&root, "proc/sys/kernel/numa_balancing"), "2");
        assert_eq!(get(&root, "sys/kernel/mm/numa/demotion_enabled"), "true");
        assert_eq!(get(&root, &format!("{DBG}/hot_threshold_ms")), "500");
        assert_eq!(k.changed().len(), 3);
        let r = rep.lines.join("\n");
        assert!(r.contains("set kernel.numa_balancing to 2 (was 1)"), "{r}");
        assert!(
            r.contains("numa_balancing/scan_size_mb kept at the kernel's 256"),
            "{r}"
        );
        // the state file records the originals while the knobs are held
        let s: State = serde_json::from_str(&get(&st, STATE_FILE)).unwrap();
        assert_eq!(s.pid, std::process::id());
        assert_eq!(s.knobs[0].original, "1");
        assert!(!st.join("kernel-tiering.json.tmp").exists());
        // a second tierkitd is refused while the first holds the lock, even with --take-over
        let e = Knobs::take(&root, &st, &w, true, false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("another tierkitd"), "{e}");
        let lines = k.restore();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(get(&root, "proc/sys/kernel/numa_balancing"), "1");
        assert_eq!(get(&root, "sys/kernel/mm/numa/demotion_enabled"), "false");
        assert_eq!(get(&root, &format!("{DBG}/hot_threshold_ms")), "1000");
        assert!(!st.join(STATE_FILE).exists());
        assert!(k.restore().is_empty());
        drop(k);
        // a knob someone else changed meanwhile is left alone
        let (k, _) = Knobs::take(&root, &st, &w, false, false).unwrap();
        std::fs::write(root.join(DBG).join("hot_threshold_ms"), "700\n").unwrap();
        drop(k); // Drop restores too
        assert_eq!(get(&root, "proc/sys/kernel/numa_balancing"), "1");
        assert_eq!(get(&root, &format!("{DBG}/hot_threshold_ms")), "700");
        // the older sysctls where debugfs has no knobs; a spec's knob that exists nowhere is refused
        let old = fake("0", false);
        let e = Knobs::take(&old, &old.join("run"), &w, false, false)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("mount debugfs"), "{e}");
        std::fs::write(
            old.join("proc/sys/kernel/numa_balancing_hot_threshold_ms"),
            "1000\n",
        )
        .unwrap();
        let (mut k, _) = Knobs::take(&old, &old.join("run"), &w, false, false).unwrap();
        assert_eq!(
            get(&old, "proc/sys/kernel/numa_balancing_hot_threshold_ms"),
            "500"
        );
        k.restore();
        assert_eq!(
            get(&old, "proc/sys/kernel/numa_balancing_hot_threshold_ms"),
            "1000"
        );
        // dry run: nothing written, no state file
        let (k, rep) = Knobs::take(&root, &st, &w, false, true).unwrap();
        assert!(rep
            .lines
            .iter()
            .any(|l| l.starts_with("DRY RUN: would set kernel.numa_balancing from 1 to 2")));
        assert_eq!(get(&root, "proc/sys/kernel/numa_balancing"), "1");
        assert!(!st.join(STATE_FILE).exists());
        drop(k);
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&old);
    }

    #[test]
    fn a_crashed_run_is_restored_at_the_next_start() {
        let root = fake("0", true);
        let st = root.join("run");
        let w = wanted("nbt:scan_size_mb=64").unwrap();
        let (k, _) = Knobs::take(&root, &st, &w, false, false).unwrap();
        k.crash();
        let state: State = serde_json::from_str(&get(&st, STATE_FILE)).unwrap();
        assert_eq!(state.knobs.len(), 3);
        assert_eq!(get(&root, "proc/sys/kernel/numa_balancing"), "2");
        // the next start: restores from the state file, then finds numa_balancing=0 and sets it
        let (mut k, rep) = Knobs::take(&root, &st, &w, false, false).unwrap();
        let r = rep.lines.join("\n");
        assert!(
            r.contains("did not exit cleanly")
                && r.contains("restored kernel.numa_balancing to 0 (was 2)")
                && r.contains("set kernel.numa_balancing to 2 (was 0)"),
            "{r}"
        );
        assert_eq!(get(&root, "proc/sys/kernel/numa_balancing"), "2");
        k.restore();
        assert_eq!(get(&root, "proc/sys/kernel/numa_balancing"), "0");
        assert_eq!(get(&root, &format!("{DBG}/scan_size_mb")), "256");
        assert_eq!(get(&root, "sys/kernel/mm/numa/demotion_enabled"), "false");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn another_manager_owns_the_knobs() {
        for v in ["2", "3"] {
            let root = fake(v, true);
            let st = root.join("run");
            let w = wanted("nbt").unwrap();
            let e = Knobs::take(&root, &st, &w, false, false)
                .err()
                .unwrap()
                .to_string();
            assert!(
                e.contains("another manager owns") && e.contains("--take-over"),
                "{e}"
            );
            assert_eq!(get(&root, "sys/kernel/mm/numa/demotion_enabled"), "false");
            assert!(!st.join(STATE_FILE).exists());
            // --take-over: set, and the other manager's values come back at exit
            let (mut k, rep) = Knobs::take(&root, &st, &w, true, false).unwrap();
            assert!(
                rep.lines[0].contains("taking the knobs over"),
                "{:?}",
                rep.lines
            );
            assert_eq!(get(&root, "sys/kernel/mm/numa/demotion_enabled"), "true");
            k.restore();
            assert_eq!(get(&root, "proc/sys/kernel/numa_balancing"), v);
            assert_eq!(get(&root, "sys/kernel/mm/numa/demotion_enabled"), "false");
            let _ = std::fs::remove_dir_all(&root);
        }
        // the distributions' default, plain NUMA balancing (1), is not tiering: no refusal
        let root = fake("1", true);
        assert!(Knobs::take(
            &root,
            &root.join("run"),
            &wanted("nbt").unwrap(),
            false,
            false
        )
        .is_ok());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn state_dir_and_take_over_from_the_flags_or_the_file() {
        use clap::Parser;
        let cli = |a: &[&str]| {
            crate::config::Cli::try_parse_from(
                ["tierkitd", "--pid", "1", "--policy", "nbt"]
                    .iter()
                    .chain(a),
            )
            .unwrap()
        };
        let c = crate::config::resolve(cli(&[])).unwrap();
        assert_eq!(
            (c.state_dir.as_path(), c.take_over),
            (Path::new(STATE_DIR), false)
        );
        let c = crate::config::resolve(cli(&["--state-dir", "/tmp/x", "--take-over"])).unwrap();
        assert_eq!(
            (c.state_dir.as_path(), c.take_over),
            (Path::new("/tmp/x"), true)
        );
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let f = std::env::temp_dir().join(format!("tierkitd-kt-{}-{n}.toml", std::process::id()));
        std::fs::write(&f, "state-dir = \"/tmp/y\"\ntake_over = true\n").unwrap();
        let c = crate::config::resolve(cli(&["--config", f.to_str().unwrap()])).unwrap();
        assert_eq!(
            (c.state_dir.as_path(), c.take_over),
            (Path::new("/tmp/y"), true)
        );
        std::fs::write(&f, "take-over = 1\n").unwrap();
        let e = crate::config::resolve(cli(&["--config", f.to_str().unwrap()]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("take-over: expected true or false"), "{e}");
        let _ = std::fs::remove_file(&f);
    }

    #[test]
    fn vmstat_counters_become_metrics_and_a_status() {
        let root = fake("2", true);
        let a = Vmstat::read(&root).unwrap();
        assert_eq!(a.hint_faults, Some(50));
        assert_eq!(a.totals(), (9, 7, 3, 1));
        std::fs::write(root.join("proc/vmstat"), "numa_hint_faults 150\n").unwrap();
        std::fs::write(
            root.join("sys/devices/system/node/node0/vmstat"),
            "pgpromote_success 57\npgpromote_candidate 69\npgdemote_kswapd 0\npgdemote_direct 0\n",
        )
        .unwrap();
        let b = Vmstat::read(&root).unwrap();
        let r = Registry::new_custom(Some("tierkitd".into()), None).unwrap();
        let m = KernelMetrics::register(&r);
        m.add(&a, &b);
        m.set_knobs(&[Changed {
            name: "numa/demotion_enabled".into(),
            path: "x".into(),
            original: "false".into(),
            set: "true".into(),
            was_set: None,
        }]);
        let t = prometheus::TextEncoder::new()
            .encode_to_string(&r.gather())
            .unwrap();
        for line in [
            "tierkitd_kernel_numa_hint_faults_total 100\n",
            "tierkitd_kernel_pgpromote_success_total{node=\"0\"} 50\n",
            "tierkitd_kernel_pgpromote_candidate_total{node=\"0\"} 60\n",
            "tierkitd_kernel_pgdemote_kswapd_total{node=\"1\"} 0\n",
            "# TYPE tierkitd_kernel_pgdemote_direct_total counter\n",
            "tierkitd_kernel_tiering_knob{knob=\"numa/demotion_enabled\"} 1\n",
        ] {
            assert!(t.contains(line), "{line} in\n{t}");
        }
        // before 6.8 demotions are host-wide events in /proc/vmstat only: node="all"
        let old = fake("2", false);
        std::fs::write(
            old.join("proc/vmstat"),
            "numa_hint_faults 5\npgdemote_kswapd 40\npgdemote_direct 2\n",
        )
        .unwrap();
        for n in 0..2 {
            std::fs::write(
                old.join(format!("sys/devices/system/node/node{n}/vmstat")),
                "pgpromote_success 1\npgpromote_candidate 1\n",
            )
            .unwrap();
        }
        let o = Vmstat::read(&old).unwrap();
        assert_eq!(o.nodes[&ALL_NODES].demote_kswapd, Some(40));
        assert_eq!(o.totals(), (2, 2, 40, 2));
        let mut o2 = o.clone();
        o2.nodes.get_mut(&ALL_NODES).unwrap().demote_kswapd = Some(45);
        m.add(&o, &o2);
        let t = prometheus::TextEncoder::new()
            .encode_to_string(&r.gather())
            .unwrap();
        assert!(
            t.contains("tierkitd_kernel_pgdemote_kswapd_total{node=\"all\"} 5\n"),
            "{t}"
        );
        let _ = std::fs::remove_dir_all(&old);
        let s = status(&a, &b, 2.0);
        assert_eq!(
            s,
            "kernel tiering: hint faults 100 (50/s), promote candidates 60, promoted 50 (25/s), demoted kswapd 0 direct 0"
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
