//! Start-up checks: which telemetry source serves the policy's needs (or what it falls back to,
//! or why it cannot run), and whether tierkitd may move the targets' pages.

use std::path::Path;

use tierkit_core::{Pid, SampleFilter, TelemetryNeeds};

use crate::config::SourcePref;
use crate::error::{Error, Result};
use crate::mech;
use crate::source::damon::{self, Attrs, Damon};
use crate::source::pebs::Pebs;
use crate::source::softdirty::{self, SoftDirty};
use crate::source::{core_counters, uncore, NoSource, Source};

pub const EVENT_SOURCES: &str = "/sys/bus/event_source/devices";

/// The chosen source and the lines that explain the choice.
pub struct Choice {
    pub source: Box<dyn Source>,
    /// Uncore CHA counters, when the policy reads tier counters and the host has them.
    pub cha: Option<uncore::Cha>,
    /// The core PMU's microarchitecture, when the policy reads core counters (Alto, Soar).
    pub cores: Option<core_counters::Uarch>,
    pub report: Vec<String>,
}

fn filter_name(f: SampleFilter) -> &'static str {
    match f {
        SampleFilter::AllMisses => "LLC-missing loads and stores",
        SampleFilter::SlowLoads => "slow-tier loads",
        SampleFilter::Loads => "LLC-missing loads",
    }
}

/// Pick the telemetry for a policy's needs. `Err(Unsupported)` names what is missing.
pub fn choose(
    policy: &str,
    needs: &TelemetryNeeds,
    pref: SourcePref,
    damon_attrs: Attrs,
    samples_per_page: f64,
) -> Result<Choice> {
    choose_at(
        policy,
        needs,
        pref,
        damon_attrs,
        samples_per_page,
        Path::new(EVENT_SOURCES),
        Path::new(damon::ADMIN),
    )
}

pub fn choose_at(
    policy: &str,
    needs: &TelemetryNeeds,
    pref: SourcePref,
    damon_attrs: Attrs,
    samples_per_page: f64,
    pmu_root: &Path,
    damon_root: &Path,
) -> Result<Choice> {
    let unsupported = |why: String| Error::Unsupported {
        policy: policy.into(),
        why,
    };
    let mut report = Vec::new();
    if needs.hint_faults {
        return Err(unsupported(
            "it needs per-page NUMA hint faults (TPP/NBT/Nomad promote on them), which Linux handles inside the kernel \
             and never reports to user space; there is no fallback. Use the kernel's own tiering instead: \
             `--policy nbt` sets and restores its knobs (kernel.numa_balancing=2), or a sampling policy such as hemem or memtis"
                .into(),
        ));
    }
    let cores = if needs.core_counters {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let u = core_counters::probe(pmu_root, &cpuinfo).map_err(unsupported)?;
        report.push(format!(
            "core counters: {} encodings (Intel perfmon {}): cycles, {} per target process",
            u.name(),
            u.table(),
            core_counters::EVENT_NAMES[1..].join(", ")
        ));
        Some(u)
    } else {
        None
    };
    let pebs_probe = |period: u64| Pebs::probe(pmu_root, period);
    let mut cha = None;
    let mut pebs_for_counters = None;
    if needs.tier_counters {
        match uncore::Cha::open(pmu_root, &uncore::ChaEvents::default()) {
            Ok(c) => {
                report.push(format!("tier counters: uncore CHA TOR occupancy/inserts over {} boxes", c.boxes));
                cha = Some(c);
            }
            Err(cha) => match pebs_probe(needs.sampling.map_or(19997, |s| s.0)) {
                Ok(p) => {
                    report.push(format!("tier counters: no CHA counters ({cha}); falling back to per-tier latency from PEBS sample weights"));
                    pebs_for_counters = Some(p);
                }
                Err(pebs) => {
                    return Err(unsupported(format!(
                        "it needs per-tier uncore counters: {cha}; and the fallback, per-tier latency from PEBS weights, needs PEBS: {pebs}"
                    )))
                }
            },
        }
    }
    let Some((period, filter)) = needs.sampling else {
        if let Some(p) = pebs_for_counters {
            report.push(format!("telemetry: `{policy}` samples nothing itself; PEBS load samples feed its tier latencies"));
            return Ok(Choice {
                source: Box::new(p),
                cha,
                cores,
                report,
            });
        }
        report.push(format!(
            "telemetry: `{policy}` samples nothing; no source needed"
        ));
        return Ok(Choice {
            source: Box::new(NoSource),
            cha,
            cores,
            report,
        });
    };
    if pebs_for_counters.is_some() && !matches!(pref, SourcePref::Auto | SourcePref::Pebs) {
        return Err(unsupported(
            "its tier counters fall back to PEBS sample weights, which needs `source = \"pebs\"` (or auto)".into(),
        ));
    }
    let want = format!(
        "`{policy}` wants PEBS samples of {} every {period}",
        filter_name(filter)
    );
    let mut why_not = Vec::new();
    if pref != SourcePref::Auto {
        why_not.push(format!("source = {pref:?} set in the config"));
    }
    if matches!(pref, SourcePref::Auto | SourcePref::Pebs) {
        match pebs_probe(period) {
            Ok(p) => {
                report.push(format!(
                    "telemetry: {want}: served by PEBS (perf_event_open)"
                ));
                return Ok(Choice {
                    source: Box::new(p),
                    cha,
                    cores,
                    report,
                });
            }
            Err(e) => why_not.push(format!("PEBS: {e}")),
        }
    }
    if matches!(pref, SourcePref::Auto | SourcePref::Damon) {
        match damon::probe(damon_root) {
            Ok(()) => {
                report.push(format!(
                    "telemetry: {want}; {}; falling back to DAMON (vaddr): each region's nr_accesses becomes \
                     pseudo-samples per page ({samples_per_page} per interval at the maximum), all counted as loads",
                    why_not.join("; ")
                ));
                return Ok(Choice {
                    source: Box::new(Damon::new(damon_root, damon_attrs)),
                    cha,
                    cores,
                    report,
                });
            }
            Err(e) => why_not.push(format!("DAMON: {e}")),
        }
    }
    if matches!(pref, SourcePref::Auto | SourcePref::SoftDirty) {
        match softdirty::probe() {
            Ok(()) => {
                report.push(format!(
                    "telemetry: {want}; {}; falling back to soft-dirty bits: written pages become store pseudo-samples; \
                     pages only read are invisible to this source",
                    why_not.join("; ")
                ));
                return Ok(Choice {
                    source: Box::new(SoftDirty::new(samples_per_page)),
                    cha,
                    cores,
                    report,
                });
            }
            Err(e) => why_not.push(format!("soft-dirty: {e}")),
        }
    }
    Err(unsupported(format!(
        "it needs access samples and no source is available: {}",
        why_not.join("; ")
    )))
}

/// Our effective capabilities (CapEff of /proc/self/status).
fn cap_eff() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("CapEff:"))
                .and_then(|l| u64::from_str_radix(l[7..].trim(), 16).ok())
        })
        .unwrap_or(0)
}

fn uid_of(pid: Pid) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find(|l| l.starts_with("Uid:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Check that we may move each target's pages: a zero-page move_pages call runs exactly the
/// kernel's permission checks (ptrace read access with real credentials, LSM hooks).
pub fn check_access(pids: &[Pid]) -> Result<Vec<String>> {
    const CAP_SYS_PTRACE: u64 = 1 << 19;
    const CAP_SYS_NICE: u64 = 1 << 23;
    let caps = cap_eff();
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut notes = Vec::new();
    let mut problems = Vec::new();
    for &pid in pids {
        let mut st = [0i32; 0];
        match mech::move_pages(pid as i32, &[], None, &mut st, 0) {
            Ok(_) => notes.push(format!(
                "pid {pid}: move_pages permitted (target uid {}, ours {me})",
                uid_of(pid).map_or("?".into(), |u| u.to_string())
            )),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                problems.push(format!("--pid {pid}: no such process"))
            }
            Err(e) => {
                let uid = uid_of(pid);
                let mut missing = Vec::new();
                if uid != Some(me) {
                    missing.push(format!(
                        "tierkitd runs as uid {me}, the target as uid {}",
                        uid.map_or("?".into(), |u| u.to_string())
                    ));
                }
                if caps & CAP_SYS_PTRACE == 0 {
                    missing.push("CAP_SYS_PTRACE is not in tierkitd's effective set".into());
                }
                if caps & CAP_SYS_NICE == 0 {
                    missing.push("CAP_SYS_NICE is not in tierkitd's effective set (needed to move pages of other users on older kernels)".into());
                }
                if missing.is_empty() {
                    missing.push(
                        "same uid and both capabilities, so a security module or seccomp refuses it"
                            .into(),
                    );
                }
                problems.push(format!(
                    "pid {pid}: not permitted to move its pages ({e}): {}; run tierkitd as root, as the target's user, or with CAP_SYS_PTRACE and CAP_SYS_NICE",
                    missing.join("; ")
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(notes)
    } else {
        Err(Error::Permission(problems.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(sampling: Option<(u64, SampleFilter)>) -> TelemetryNeeds {
        TelemetryNeeds {
            sampling,
            ..TelemetryNeeds::default()
        }
    }

    #[test]
    fn hint_fault_policies_are_refused_with_the_reason() {
        let tpp = tierkit_policies::build("tpp").unwrap();
        let e = choose("tpp", &tpp.needs(), SourcePref::Auto, Attrs::default(), 1.0)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.starts_with(
                "policy `tpp` cannot run on this host: it needs per-page NUMA hint faults"
            ),
            "{e}"
        );
        assert!(e.contains("numa_balancing"), "{e}");
    }

    #[test]
    fn sampling_falls_back_in_order_and_says_why() {
        let fix = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let nothing = fix.join("no-such-dir");
        // no PMU, no DAMON: soft-dirty when the kernel has it, else a refusal naming all three
        let r = choose_at(
            "hemem",
            &needs(Some((19997, SampleFilter::AllMisses))),
            SourcePref::Auto,
            Attrs::default(),
            1.0,
            &nothing,
            &nothing,
        );
        match (r, softdirty::probe()) {
            (Ok(c), Ok(())) => {
                assert_eq!(c.source.name(), "softdirty");
                let r = c.report.join("\n");
                assert!(
                    r.contains("PEBS: no core PMU")
                        && r.contains("DAMON:")
                        && r.contains("falling back to soft-dirty"),
                    "{r}"
                );
            }
            (Err(e), Err(_)) => {
                let e = e.to_string();
                assert!(
                    e.contains("PEBS:") && e.contains("DAMON:") && e.contains("soft-dirty:"),
                    "{e}"
                );
            }
            (r, p) => panic!(
                "choice {:?} disagrees with the soft-dirty probe {p:?}",
                r.map(|c| c.report)
            ),
        }
        // forced DAMON without DAMON: refused, naming DAMON
        let e = choose_at(
            "hemem",
            &needs(Some((5003, SampleFilter::AllMisses))),
            SourcePref::Damon,
            Attrs::default(),
            1.0,
            &nothing,
            &nothing,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("DAMON:") && !e.contains("PEBS:"), "{e}");
        // no sampling: no source
        let c = choose_at(
            "notier",
            &needs(None),
            SourcePref::Auto,
            Attrs::default(),
            1.0,
            &nothing,
            &nothing,
        )
        .unwrap();
        assert_eq!(c.source.name(), "none");
        // tier counters with neither CHA nor PEBS: refused naming both
        let n = TelemetryNeeds {
            tier_counters: true,
            ..needs(None)
        };
        let e = choose_at(
            "colloid",
            &n,
            SourcePref::Auto,
            Attrs::default(),
            1.0,
            &fix.join("pmu"),
            &nothing,
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("uncore counters") && e.contains("PEBS"), "{e}");
    }

    /// What `spec` gets on a host with no PMU and no DAMON: the source chosen, or why it is
    /// refused.
    fn on_a_bare_host(spec: &str) -> std::result::Result<String, String> {
        let p = tierkit_policies::build(spec).unwrap();
        let nothing = Path::new("/nonexistent");
        choose_at(
            spec,
            &p.needs(),
            SourcePref::Auto,
            Attrs::default(),
            1.0,
            nothing,
            nothing,
        )
        .map(|c| c.source.name().to_string())
        .map_err(|e| e.to_string())
    }

    /// Why `spec` is refused on a host with no PMU and no telemetry source at all.
    fn refusal_on_a_bare_host(spec: &str) -> String {
        on_a_bare_host(spec).unwrap_err()
    }

    /// Vulcan runs where a sampling policy runs (its tenants by pid, their pages from the
    /// backend, their classes from `--latency-critical`): chosen or refused as hemem is.
    #[test]
    fn vulcan_is_chosen_as_a_sampling_policy_is() {
        let pick = on_a_bare_host;
        let (v, h) = (pick("vulcan:unit_mb=4"), pick("hemem"));
        assert_eq!(v.is_ok(), h.is_ok(), "{v:?} / {h:?}");
        if let (Ok(v), Ok(h)) = (&v, &h) {
            assert_eq!(v, h);
        }
        if let Err(e) = &v {
            assert!(
                !e.contains("does not run Vulcan") && e.contains("DAMON"),
                "{e}"
            );
        }
    }

    #[test]
    fn colloid_without_counters_or_pebs_is_refused() {
        let e = refusal_on_a_bare_host("hemem+colloid");
        assert!(
            e.contains("per-tier uncore counters") && e.contains("PEBS weights, needs PEBS"),
            "{e}"
        );
    }

    #[test]
    fn core_counter_policies_without_a_pmu_are_refused_in_one_line() {
        for spec in ["hemem+alto", "memtis+alto"] {
            let e = refusal_on_a_bare_host(spec);
            assert!(
                e.starts_with(&format!(
                    "policy `{spec}` cannot run on this host: it needs per-core PMU counters (cycles, CYCLE_ACTIVITY.STALLS_L3_MISS"
                )) && e.contains("no core PMU (/nonexistent/cpu is absent")
                    && !e.contains('\n'),
                "{e}"
            );
        }
    }

    #[test]
    fn access_check_on_ourselves_and_a_missing_pid() {
        let me = std::process::id();
        let notes = check_access(&[me]).unwrap();
        assert!(notes[0].contains("move_pages permitted"));
        let e = check_access(&[me, i32::MAX as u32 - 7])
            .unwrap_err()
            .to_string();
        assert!(e.contains("no such process"), "{e}");
    }
}
