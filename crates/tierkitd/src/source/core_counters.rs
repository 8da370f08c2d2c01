//! Per-core offcore counters per target, for Alto and Soar (Soar/Alto §3.2, Table 1): cycles
//! (c), `CYCLE_ACTIVITY.STALLS_L3_MISS` (s_LLC), `OFFCORE_REQUESTS_OUTSTANDING.
//! CYCLES_WITH_DEMAND_DATA_RD` (A1), `OFFCORE_REQUESTS_OUTSTANDING.DEMAND_DATA_RD` (A2) and
//! `OFFCORE_REQUESTS.DEMAND_DATA_RD` (A3). Each interval's deltas become one
//! [`tierkit_core::CoreCounters`] per target process, the record the simulator gives Alto and
//! Soar; AOL = A1 / A3 in cycles and the predicted slowdown p = P K(AOL), P = s_LLC / c, follow
//! from them exactly as the policies compute them ([`aol_cycles`], [`predicted_slowdown`]).
//!
//! The events are model-specific raw encodings (event, umask, cmask in the architectural
//! `IA32_PERFEVTSELx` layout: event select bits 0-7, unit mask 8-15, counter mask 24-31; Intel
//! SDM vol. 3B, "Architectural Performance Monitoring Version 1"; the `cpu` PMU's sysfs `format/`
//! files say the same, which a test checks), opened as
//! `PERF_TYPE_RAW`. Cycles are the generic `PERF_COUNT_HW_CPU_CYCLES`, which Linux counts on
//! fixed counter 1 (`CPU_CLK_UNHALTED.THREAD`), so the four raw events fit the four
//! general-purpose counters a hyperthread has. The encodings come from Intel's published event
//! tables (github.com/intel/perfmon, the files [`Uarch::table`] names; the same JSON the Linux
//! kernel ships under tools/perf/pmu-events/arch/x86/); see [`events`].
//!
//! Every thread of a target gets one counting event per counter with `inherit` (threads it
//! creates later are counted into it), user space only, with `TOTAL_TIME_ENABLED` and
//! `TOTAL_TIME_RUNNING` so a multiplexed counter is scaled (the process's threads added up first,
//! then scaled by their summed enabled over running time). What the kernel returns passes
//! through [`CounterReader`], which tests replace with recorded reads ([`Recorded`]).

use std::collections::BTreeMap;
use std::path::Path;

use tierkit_core::{Calibration, CoreCounters, Pid};

use super::pebs::PERF_FLAG_FD_CLOEXEC;
use super::pebs::{PerfEventAttr, ATTR_EXCLUDE_HV, ATTR_EXCLUDE_KERNEL, ATTR_INHERIT};
use crate::error::{Error, Result};

/// The counters in the order of every reading: c, s_LLC, A1, A2, A3.
pub const EVENT_NAMES: [&str; 5] = [
    "CPU_CLK_UNHALTED.THREAD",
    "CYCLE_ACTIVITY.STALLS_L3_MISS",
    "OFFCORE_REQUESTS_OUTSTANDING.CYCLES_WITH_DEMAND_DATA_RD",
    "OFFCORE_REQUESTS_OUTSTANDING.DEMAND_DATA_RD",
    "OFFCORE_REQUESTS.DEMAND_DATA_RD",
];
/// Short names of the counters (recordings, logs).
pub const SHORT_NAMES: [&str; 5] = ["cycles", "stalls_l3_miss", "a1", "a2", "a3"];

/// What is missing, for the refusals.
const NEEDED: &str = "CYCLE_ACTIVITY.STALLS_L3_MISS, OFFCORE_REQUESTS.DEMAND_DATA_RD and \
OFFCORE_REQUESTS_OUTSTANDING.{CYCLES_WITH_DEMAND_DATA_RD,DEMAND_DATA_RD}";
const KNOWN: &str =
    "Intel Skylake, Skylake-X/Cascade Lake, Ice Lake, Ice Lake-X, Sapphire Rapids, Emerald Rapids";

const PERF_TYPE_HARDWARE: u32 = 0;
const PERF_TYPE_RAW: u32 = 4;
const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1;
const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 2;

/// The CPU as /proc/cpuinfo names it (its first processor).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuId {
    pub vendor: String,
    pub family: u32,
    pub model: u32,
    pub stepping: u32,
}

/// The first processor's vendor, family, model and stepping from /proc/cpuinfo's text.
pub fn parse_cpuinfo(text: &str) -> Option<CpuId> {
    let mut vendor = None;
    let (mut family, mut model, mut stepping) = (None, None, None);
    for line in text.lines() {
        if line.trim().is_empty() && vendor.is_some() {
            break; // end of the first processor's block
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "vendor_id" => vendor = Some(v.to_string()),
            "cpu family" => family = v.parse().ok(),
            "model" => model = v.parse().ok(),
            "stepping" => stepping = v.parse().ok(),
            _ => {}
        }
    }
    Some(CpuId {
        vendor: vendor?,
        family: family?,
        model: model?,
        stepping: stepping.unwrap_or(0),
    })
}

/// The microarchitectures whose encodings tierkitd carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Uarch {
    /// Client Skylake and its Kaby/Coffee/Comet Lake successors (family 6 models 0x4E, 0x5E,
    /// 0x8E, 0x9E, 0xA5, 0xA6).
    Skylake,
    /// Skylake-SP (model 0x55, steppings 0-4).
    SkylakeX,
    /// Cascade Lake-SP (model 0x55, stepping 5 and later).
    CascadeLakeX,
    /// Client Ice Lake (0x7D, 0x7E).
    IceLake,
    /// Ice Lake-SP (0x6A, 0x6C).
    IceLakeX,
    /// Sapphire Rapids (0x8F).
    SapphireRapids,
    /// Emerald Rapids (0xCF): Sapphire Rapids' encodings.
    EmeraldRapids,
}

impl Uarch {
    pub fn name(self) -> &'static str {
        match self {
            Uarch::Skylake => "Skylake",
            Uarch::SkylakeX => "Skylake-X",
            Uarch::CascadeLakeX => "Cascade Lake-X",
            Uarch::IceLake => "Ice Lake",
            Uarch::IceLakeX => "Ice Lake-X",
            Uarch::SapphireRapids => "Sapphire Rapids",
            Uarch::EmeraldRapids => "Emerald Rapids",
        }
    }

    /// The Intel perfmon event table the encodings were taken from (mapfile.csv maps the
    /// family-model to it).
    pub fn table(self) -> &'static str {
        match self {
            Uarch::Skylake => "SKL/events/skylake_core.json V59",
            Uarch::SkylakeX => "SKX/events/skylakex_core.json V1.37",
            Uarch::CascadeLakeX => "CLX/events/cascadelakex_core.json V1.25",
            Uarch::IceLake => "ICL/events/icelake_core.json V1.24",
            Uarch::IceLakeX => "ICX/events/icelakex_core.json V1.30",
            Uarch::SapphireRapids => "SPR/events/sapphirerapids_core.json V1.39",
            Uarch::EmeraldRapids => "EMR/events/emeraldrapids_core.json V1.24",
        }
    }
}

/// Which encodings serve this CPU, or a refusal naming what is missing.
pub fn uarch(cpu: &CpuId) -> std::result::Result<Uarch, String> {
    let what = format!(
        "{} family {} model {:#x}",
        cpu.vendor, cpu.family, cpu.model
    );
    if cpu.vendor == "AuthenticAMD" || cpu.vendor == "HygonGenuine" {
        return Err(format!(
            "the CPU is {what} (AMD), whose PMU has no counterparts of {NEEDED} that tierkitd knows \
             (AOL = A1/A3 needs the occupancy of the core's offcore queue); core counters are read on {KNOWN}"
        ));
    }
    if cpu.vendor != "GenuineIntel" || cpu.family != 6 {
        return Err(format!(
            "the CPU is {what}, for which tierkitd has no encodings of {NEEDED}; core counters are read on {KNOWN}"
        ));
    }
    Ok(match cpu.model {
        0x4E | 0x5E | 0x8E | 0x9E | 0xA5 | 0xA6 => Uarch::Skylake,
        0x55 if cpu.stepping <= 4 => Uarch::SkylakeX,
        0x55 => Uarch::CascadeLakeX,
        0x7D | 0x7E => Uarch::IceLake,
        0x6A | 0x6C => Uarch::IceLakeX,
        0x8F => Uarch::SapphireRapids,
        0xCF => Uarch::EmeraldRapids,
        _ => {
            return Err(format!(
                "the CPU is {what}, a model for which tierkitd has no encodings of {NEEDED} \
                 (it carries those of {KNOWN})"
            ))
        }
    })
}

/// One raw core event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawEvent {
    pub event: u8,
    pub umask: u8,
    pub cmask: u8,
}

impl RawEvent {
    /// `PERF_TYPE_RAW` config: the `IA32_PERFEVTSELx` fields (event 0-7, umask 8-15, cmask
    /// 24-31), the same layout as the `cpu` PMU's sysfs `format/` files.
    pub fn config(self) -> u64 {
        self.event as u64 | (self.umask as u64) << 8 | (self.cmask as u64) << 24
    }
}

const fn ev(event: u8, umask: u8, cmask: u8) -> RawEvent {
    RawEvent {
        event,
        umask,
        cmask,
    }
}

/// The raw encodings of s_LLC, A1, A2, A3 (cycles are the generic hardware event).
///
/// From Intel's perfmon tables ([`Uarch::table`]; EventCode, UMask, CounterMask):
/// - Skylake, Skylake-X, Cascade Lake-X: `CYCLE_ACTIVITY.STALLS_L3_MISS` 0xA3/0x06/6,
///   `OFFCORE_REQUESTS_OUTSTANDING.CYCLES_WITH_DEMAND_DATA_RD` 0x60/0x01/1,
///   `OFFCORE_REQUESTS_OUTSTANDING.DEMAND_DATA_RD` 0x60/0x01/0,
///   `OFFCORE_REQUESTS.DEMAND_DATA_RD` 0xB0/0x01/0.
/// - Ice Lake, Ice Lake-X: the same four codes, except that the tables do not list
///   `CYCLES_WITH_DEMAND_DATA_RD`; A1 is `OFFCORE_REQUESTS_OUTSTANDING.DEMAND_DATA_RD` (0x60/0x01)
///   with counter mask 1, exactly as Intel's own ICX metric `Info_Memory_Latency_Load_L2_MLP`
///   spells it (`OFFCORE_REQUESTS_OUTSTANDING.DEMAND_DATA_RD:c1`, ICX/metrics/icelakex_metrics.json),
///   and as the Skylake tables define the named event.
/// - Sapphire Rapids and Emerald Rapids: `CYCLE_ACTIVITY.STALLS_L3_MISS` 0xA3/0x06/6,
///   `OFFCORE_REQUESTS_OUTSTANDING.CYCLES_WITH_DEMAND_DATA_RD` 0x20/0x01/1,
///   `OFFCORE_REQUESTS_OUTSTANDING.DEMAND_DATA_RD` 0x20/0x01/0,
///   `OFFCORE_REQUESTS.DEMAND_DATA_RD` 0x21/0x01/0.
pub fn events(u: Uarch) -> [RawEvent; 4] {
    match u {
        Uarch::Skylake
        | Uarch::SkylakeX
        | Uarch::CascadeLakeX
        | Uarch::IceLake
        | Uarch::IceLakeX => [
            ev(0xA3, 0x06, 6),
            ev(0x60, 0x01, 1),
            ev(0x60, 0x01, 0),
            ev(0xB0, 0x01, 0),
        ],
        Uarch::SapphireRapids | Uarch::EmeraldRapids => [
            ev(0xA3, 0x06, 6),
            ev(0x20, 0x01, 1),
            ev(0x20, 0x01, 0),
            ev(0x21, 0x01, 0),
        ],
    }
}

/// (perf type, config) of the five counters, in [`EVENT_NAMES`] order.
pub fn attrs(u: Uarch) -> [(u32, u64); 5] {
    let e = events(u);
    [
        (PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES),
        (PERF_TYPE_RAW, e[0].config()),
        (PERF_TYPE_RAW, e[1].config()),
        (PERF_TYPE_RAW, e[2].config()),
        (PERF_TYPE_RAW, e[3].config()),
    ]
}

/// The start-up check: the host's core PMU and CPU model. Returns the microarchitecture, or the
/// one-line reason (it reads "it needs per-core PMU counters ...: <what is missing>").
pub fn probe(pmu_root: &Path, cpuinfo: &str) -> std::result::Result<Uarch, String> {
    probe_with(pmu_root, cpuinfo, |u| open_all(u, 0).map(drop))
}

/// [`probe`] with the opening of the counters on ourselves replaced (tests).
pub fn probe_with(
    pmu_root: &Path,
    cpuinfo: &str,
    open: impl FnOnce(Uarch) -> std::io::Result<()>,
) -> std::result::Result<Uarch, String> {
    let needs = format!("it needs per-core PMU counters (cycles, {NEEDED})");
    let cpu_pmu = pmu_root.join("cpu");
    if !cpu_pmu.exists() {
        return Err(format!(
            "{needs}, and this host exposes no core PMU ({} is absent: no hardware PMU, e.g. a VM without a virtual PMU)",
            cpu_pmu.display()
        ));
    }
    let cpu = parse_cpuinfo(cpuinfo)
        .ok_or_else(|| format!("{needs}, and /proc/cpuinfo names no vendor, family and model"))?;
    let u = uarch(&cpu).map_err(|e| format!("{needs}: {e}"))?;
    open(u).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => format!(
            "{needs}, and perf_event_open refuses them ({e}): the PMU does not count these events (a VM's virtual PMU?)"
        ),
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "{needs}, and perf_event_open is not permitted ({e}): see /proc/sys/kernel/perf_event_paranoid, or give tierkitd CAP_PERFMON"
        ),
        _ => format!("{needs}, and perf_event_open failed: {e}"),
    })?;
    Ok(u)
}

/// One counter's cumulative read: value, time enabled, time running (ns).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    pub value: u64,
    pub enabled: u64,
    pub running: u64,
}

impl std::ops::AddAssign for Reading {
    fn add_assign(&mut self, o: Reading) {
        self.value = self.value.wrapping_add(o.value);
        self.enabled = self.enabled.wrapping_add(o.enabled);
        self.running = self.running.wrapping_add(o.running);
    }
}

/// The five counters of one target, in [`EVENT_NAMES`] order.
pub type Reads = [Reading; 5];

/// Where the cumulative counts come from: the kernel ([`PerfReader`]) or a recording.
pub trait CounterReader: Send {
    /// The target processes changed: count the new ones, drop the departed.
    fn set_targets(&mut self, pids: &[Pid]) -> Vec<String>;
    /// Cumulative reads per target process (summed over its threads).
    fn read(&mut self) -> Result<Vec<(Pid, Reads)>>;
}

/// The scaled delta of one counter between two reads (value x enabled / running when the
/// kernel multiplexed it; 0 when it never ran in the interval).
pub fn scaled_delta(prev: Reading, now: Reading) -> f64 {
    let dv = now.value.wrapping_sub(prev.value) as f64;
    let de = now.enabled.wrapping_sub(prev.enabled);
    let dr = now.running.wrapping_sub(prev.running);
    if dr == 0 {
        return 0.0;
    }
    if dr >= de {
        dv
    } else {
        dv * de as f64 / dr as f64
    }
}

/// Turns cumulative reads into each interval's [`CoreCounters`] per target process.
pub struct CoreSampler {
    pub uarch: Uarch,
    reader: Box<dyn CounterReader>,
    last: BTreeMap<Pid, Reads>,
}

impl CoreSampler {
    pub fn new(uarch: Uarch, reader: Box<dyn CounterReader>) -> CoreSampler {
        CoreSampler {
            uarch,
            reader,
            last: BTreeMap::new(),
        }
    }

    pub fn set_targets(&mut self, pids: &[Pid]) -> Vec<String> {
        // pid 0 is a cgroup's aggregate ([`CgroupReader`]), which outlives its members
        self.last.retain(|p, _| *p == 0 || pids.contains(p));
        self.reader.set_targets(pids)
    }

    /// This interval's counters per target process (`tid` = pid: all its threads). A process
    /// read for the first time gives its baseline only.
    pub fn sample(&mut self) -> Result<Vec<CoreCounters>> {
        let mut out = Vec::new();
        for (pid, now) in self.reader.read()? {
            if let Some(prev) = self.last.insert(pid, now) {
                let d: Vec<f64> = (0..5).map(|i| scaled_delta(prev[i], now[i])).collect();
                out.push(CoreCounters {
                    pid,
                    tid: pid,
                    cycles: d[0],
                    stalls_l3_miss: d[1],
                    oro_cycles_with_demand_rd: d[2],
                    oro_demand_rd: d[3],
                    offcore_demand_rd: d[4],
                    ..CoreCounters::default()
                });
            }
        }
        Ok(out)
    }
}

/// The counters of several processes added up (a cgroup target's members).
pub fn sum<'a>(cs: impl IntoIterator<Item = &'a CoreCounters>) -> CoreCounters {
    cs.into_iter()
        .fold(CoreCounters::default(), |a, c| CoreCounters {
            pid: c.pid,
            tid: c.tid,
            cycles: a.cycles + c.cycles,
            stalls_l3_miss: a.stalls_l3_miss + c.stalls_l3_miss,
            oro_cycles_with_demand_rd: a.oro_cycles_with_demand_rd + c.oro_cycles_with_demand_rd,
            oro_demand_rd: a.oro_demand_rd + c.oro_demand_rd,
            offcore_demand_rd: a.offcore_demand_rd + c.offcore_demand_rd,
            llc_misses: a.llc_misses + c.llc_misses,
            ops: a.ops + c.ops,
        })
}

/// AOL = A1 / A3 in cycles (Soar/Alto §3.2; `Telemetry::aol_cycles`), None without offcore reads.
pub fn aol_cycles(c: &CoreCounters) -> Option<f64> {
    (c.offcore_demand_rd > 0.0).then(|| c.oro_cycles_with_demand_rd / c.offcore_demand_rd)
}

/// P = s_LLC / c, the share of cycles stalled on L3 misses; None without cycles.
pub fn stall_share(c: &CoreCounters) -> Option<f64> {
    (c.cycles > 0.0).then(|| c.stalls_l3_miss / c.cycles)
}

/// The predicted slowdown p = P K(AOL) with the machine's calibration, as Soar computes it; P
/// alone without one (Soar's uncalibrated case). None without cycles or offcore reads.
pub fn predicted_slowdown(c: &CoreCounters, cal: Option<&Calibration>) -> Option<f64> {
    let l = aol_cycles(c)?;
    let p = stall_share(c)?;
    Some(match cal {
        Some(cal) => cal.predict_slowdown(c.stalls_l3_miss, c.cycles, l),
        None => p,
    })
}

/// The per-target gauges: AOL, P and the predicted slowdown (docs/operator-guide.md, Metrics).
#[derive(Clone)]
pub struct CoreMetrics {
    pub aol_cycles: prometheus::GaugeVec,
    pub stall_ratio: prometheus::GaugeVec,
    pub slowdown_ratio: prometheus::GaugeVec,
    labels: std::collections::BTreeSet<String>,
}

impl CoreMetrics {
    /// Register the gauges in tierkitd's registry (its `tierkitd_` prefix applies).
    pub fn register(registry: &prometheus::Registry) -> CoreMetrics {
        let gauge = |name: &str, help: &str| {
            let g = prometheus::GaugeVec::new(prometheus::Opts::new(name, help), &["target"])
                .expect("a valid metric");
            registry
                .register(Box::new(g.clone()))
                .expect("metric names are unique");
            g
        };
        CoreMetrics {
            aol_cycles: gauge(
                "amortized_offcore_latency_cycles",
                "Amortized offcore latency AOL = A1/A3 of the target's threads over the last interval, in core cycles (Soar/Alto section 3.2).",
            ),
            stall_ratio: gauge(
                "l3_miss_stall_ratio",
                "Share of the target's cycles stalled on L3 misses over the last interval, P = CYCLE_ACTIVITY.STALLS_L3_MISS / cycles.",
            ),
            slowdown_ratio: gauge(
                "predicted_slowdown_ratio",
                "Predicted slowdown p = P K(AOL) of the target over the last interval (P alone without a calibration).",
            ),
            labels: Default::default(),
        }
    }

    /// Set each target's gauges from its summed counters; a target without a value this
    /// interval (departed, or no offcore reads) loses its series.
    pub fn update(
        &mut self,
        by_target: &BTreeMap<String, CoreCounters>,
        cal: Option<&Calibration>,
    ) {
        let mut now = std::collections::BTreeSet::new();
        for (label, c) in by_target {
            let vals = [
                (&self.aol_cycles, aol_cycles(c)),
                (&self.stall_ratio, stall_share(c)),
                (&self.slowdown_ratio, predicted_slowdown(c, cal)),
            ];
            for (g, v) in vals {
                match v {
                    Some(v) => g.with_label_values(&[label.as_str()]).set(v),
                    None => {
                        let _ = g.remove_label_values(&[label.as_str()]);
                    }
                }
            }
            now.insert(label.clone());
        }
        for gone in self.labels.difference(&now) {
            for g in [&self.aol_cycles, &self.stall_ratio, &self.slowdown_ratio] {
                let _ = g.remove_label_values(&[gone.as_str()]);
            }
        }
        self.labels = now;
    }
}

/// A perf fd closed on drop.
struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: the fd was returned by perf_event_open and is closed once.
        unsafe { libc::close(self.0) };
    }
}

impl Fd {
    fn read(&self) -> std::io::Result<Reading> {
        let mut v = [0u64; 3];
        // SAFETY: reading 24 bytes (value, time enabled, time running: the read_format asked
        // for) from a counting perf fd into a live [u64; 3].
        let n = unsafe { libc::read(self.0, v.as_mut_ptr() as *mut libc::c_void, 24) };
        if n != 24 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Reading {
            value: v[0],
            enabled: v[1],
            running: v[2],
        })
    }
}

/// perf_event_open flag: `pid` is the fd of a cgroup directory (count its tasks on `cpu`).
pub const PERF_FLAG_PID_CGROUP: libc::c_ulong = 1 << 2;

fn open_counter(ty: u32, config: u64, tid: i32) -> std::io::Result<Fd> {
    open_counter_on(ty, config, tid, -1, 0)
}

/// One counting event: on thread `pid` (any CPU, inherited by the threads it creates), or with
/// [`PERF_FLAG_PID_CGROUP`] on cgroup fd `pid` and CPU `cpu` (cgroup events do not inherit).
fn open_counter_on(
    ty: u32,
    config: u64,
    pid: i32,
    cpu: i32,
    flags: libc::c_ulong,
) -> std::io::Result<Fd> {
    let inherit = if flags & PERF_FLAG_PID_CGROUP != 0 {
        0
    } else {
        ATTR_INHERIT
    };
    let attr = PerfEventAttr {
        type_: ty,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config,
        read_format: PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
        flags: inherit | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV,
        ..Default::default()
    };
    // SAFETY: perf_event_open reads attr.size bytes from a live #[repr(C)] struct of that size;
    // the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            pid as libc::c_long,
            cpu as libc::c_long,
            -1 as libc::c_long,
            PERF_FLAG_FD_CLOEXEC | flags,
        )
    };
    if fd < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(Fd(fd as i32))
    }
}

fn open_all(u: Uarch, tid: i32) -> std::io::Result<Vec<Fd>> {
    attrs(u)
        .iter()
        .map(|&(ty, cfg)| open_counter(ty, cfg, tid))
        .collect()
}

/// The kernel's counters: five per thread of each target.
pub struct PerfReader {
    uarch: Uarch,
    /// Per target process: per thread, the five counters.
    fds: BTreeMap<Pid, Vec<Vec<Fd>>>,
}

impl PerfReader {
    pub fn new(uarch: Uarch) -> PerfReader {
        PerfReader {
            uarch,
            fds: BTreeMap::new(),
        }
    }
}

impl CounterReader for PerfReader {
    fn set_targets(&mut self, pids: &[Pid]) -> Vec<String> {
        self.fds.retain(|p, _| pids.contains(p));
        let mut notes = Vec::new();
        for &pid in pids {
            if self.fds.contains_key(&pid) {
                continue;
            }
            let tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
                .map(|rd| {
                    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            let mut threads = Vec::new();
            for tid in tids {
                match open_all(self.uarch, tid) {
                    Ok(v) => threads.push(v),
                    Err(e) => notes.push(format!("core counters: pid {pid} tid {tid}: {e}")),
                }
            }
            if !threads.is_empty() {
                self.fds.insert(pid, threads);
            }
        }
        notes.push(format!(
            "core counters ({}): {} process(es), {} thread(s)",
            self.uarch.name(),
            self.fds.len(),
            self.fds.values().map(Vec::len).sum::<usize>()
        ));
        notes
    }

    fn read(&mut self) -> Result<Vec<(Pid, Reads)>> {
        let mut out = Vec::new();
        for (&pid, threads) in &self.fds {
            let mut r = Reads::default();
            for t in threads {
                for (i, fd) in t.iter().enumerate() {
                    r[i] += fd.read().map_err(|e| Error::Sys {
                        syscall: "read(perf counter)",
                        source: e,
                    })?;
                }
            }
            out.push((pid, r));
        }
        Ok(out)
    }
}

/// A cgroup's counters (`PERF_FLAG_PID_CGROUP`): five per online CPU, counting every task of
/// the cgroup while it runs there, processes that come and go between two intervals included.
/// Needs CPU-wide counting rights (CAP_PERFMON, or `perf_event_paranoid` <= 0). Its one reading
/// carries pid 0: the Linux backend labels it with the cgroup's `target`.
pub struct CgroupReader {
    uarch: Uarch,
    /// Per CPU, the five counters.
    fds: Vec<Vec<Fd>>,
}

impl CgroupReader {
    pub fn open(
        uarch: Uarch,
        cgroup: &Path,
        cpus: &[u32],
    ) -> std::result::Result<CgroupReader, String> {
        let dir = std::fs::File::open(cgroup).map_err(|e| format!("{}: {e}", cgroup.display()))?;
        let cg = std::os::fd::AsRawFd::as_raw_fd(&dir);
        let mut fds = Vec::new();
        for &cpu in cpus {
            let per_cpu = attrs(uarch)
                .iter()
                .map(|&(ty, cfg)| open_counter_on(ty, cfg, cg, cpu as i32, PERF_FLAG_PID_CGROUP))
                .collect::<std::io::Result<Vec<Fd>>>()
                .map_err(|e| {
                    format!(
                        "perf_event_open(cgroup {}, cpu {cpu}): {e}",
                        cgroup.display()
                    )
                })?;
            fds.push(per_cpu);
        }
        if fds.is_empty() {
            return Err("no online CPU to count on".into());
        }
        Ok(CgroupReader { uarch, fds })
    }
}

impl CounterReader for CgroupReader {
    fn set_targets(&mut self, _pids: &[Pid]) -> Vec<String> {
        vec![format!(
            "core counters ({}): the cgroup on {} CPU(s)",
            self.uarch.name(),
            self.fds.len()
        )]
    }

    fn read(&mut self) -> Result<Vec<(Pid, Reads)>> {
        let mut r = Reads::default();
        for per_cpu in &self.fds {
            for (i, fd) in per_cpu.iter().enumerate() {
                r[i] += fd.read().map_err(|e| Error::Sys {
                    syscall: "read(perf counter)",
                    source: e,
                })?;
            }
        }
        Ok(vec![(0, r)])
    }
}

/// The kernel's reader for the targets: a cgroup's own counters when the cgroup can be counted
/// CPU-wide, else every thread of each target process. Returns a note for the log.
pub fn reader_for(u: Uarch, targets: &crate::linux::Targets) -> (Box<dyn CounterReader>, String) {
    if let crate::linux::Targets::Cgroup(dir) = targets {
        let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| crate::topology::parse_list(&s).ok())
            .unwrap_or_default();
        match CgroupReader::open(u, dir, &cpus) {
            Ok(r) => {
                return (
                    Box::new(r),
                    format!("core counters: per cgroup (PERF_FLAG_PID_CGROUP) on {} CPU(s)", cpus.len()),
                )
            }
            Err(e) => {
                return (
                    Box::new(PerfReader::new(u)),
                    format!("core counters: per thread of each member process (the cgroup cannot be counted CPU-wide: {e})"),
                )
            }
        }
    }
    (
        Box::new(PerfReader::new(u)),
        "core counters: per thread of each target process".into(),
    )
}

/// Recorded cumulative reads, replayed one interval per [`CounterReader::read`].
///
/// The text format (one read of one process per line; `#` starts a comment):
/// `read <interval> <pid> <counter>=<value>/<enabled>/<running> ...` with the five counters named
/// as in [`SHORT_NAMES`]; `/<enabled>/<running>` may be left out (never multiplexed). Pid 0 is a
/// cgroup's aggregate, as [`CgroupReader`] reads it: it is replayed whatever the targets.
pub struct Recorded {
    intervals: Vec<Vec<(Pid, Reads)>>,
    next: usize,
    /// The processes asked for (all recorded ones until `set_targets` is called).
    targets: Option<Vec<Pid>>,
}

impl Recorded {
    pub fn parse(text: &str) -> std::result::Result<Recorded, String> {
        let mut by: BTreeMap<u64, Vec<(Pid, Reads)>> = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            let mut w = line.split_whitespace();
            if w.next() != Some("read") {
                continue;
            }
            let bad = |what: &str| format!("line {}: {what}: `{line}`", n + 1);
            let interval: u64 = w
                .next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| bad("no interval number"))?;
            let pid: Pid = w
                .next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| bad("no pid"))?;
            let mut r = Reads::default();
            let mut seen = [false; 5];
            for kv in w {
                let (k, v) = kv.split_once('=').ok_or_else(|| bad("not name=value"))?;
                let i = SHORT_NAMES
                    .iter()
                    .position(|s| *s == k)
                    .ok_or_else(|| bad(&format!("unknown counter `{k}`")))?;
                let nums: Vec<u64> = v
                    .split('/')
                    .map(|x| x.parse::<u64>())
                    .collect::<std::result::Result<_, _>>()
                    .map_err(|_| bad("a value is not a whole number"))?;
                r[i] = match nums[..] {
                    [v] => Reading {
                        value: v,
                        enabled: 1,
                        running: 1,
                    },
                    [v, e, run] => Reading {
                        value: v,
                        enabled: e,
                        running: run,
                    },
                    _ => return Err(bad("value, or value/enabled/running")),
                };
                // a never-multiplexed counter's times grow with the interval
                if nums.len() == 1 {
                    r[i].enabled = interval + 1;
                    r[i].running = interval + 1;
                }
                seen[i] = true;
            }
            if let Some(i) = seen.iter().position(|s| !s) {
                return Err(bad(&format!("no `{}`", SHORT_NAMES[i])));
            }
            by.entry(interval).or_default().push((pid, r));
        }
        Ok(Recorded {
            intervals: by.into_values().collect(),
            next: 0,
            targets: None,
        })
    }

    pub fn intervals(&self) -> usize {
        self.intervals.len()
    }
}

impl CounterReader for Recorded {
    fn set_targets(&mut self, pids: &[Pid]) -> Vec<String> {
        self.targets = Some(pids.to_vec());
        Vec::new()
    }

    fn read(&mut self) -> Result<Vec<(Pid, Reads)>> {
        let v = self
            .intervals
            .get(self.next)
            .ok_or_else(|| Error::Telemetry("the recording has no more intervals".into()))?;
        self.next += 1;
        Ok(v.iter()
            .filter(|(p, _)| *p == 0 || self.targets.as_ref().is_none_or(|t| t.contains(p)))
            .copied()
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_first_processor() {
        let t = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Intel(R) Xeon(R) Gold 6140\nstepping\t: 4\n\nprocessor\t: 1\nvendor_id\t: Other\n";
        assert_eq!(
            parse_cpuinfo(t),
            Some(CpuId {
                vendor: "GenuineIntel".into(),
                family: 6,
                model: 0x55,
                stepping: 4
            })
        );
        assert_eq!(parse_cpuinfo("processor: 0\n"), None);
    }

    #[test]
    fn raw_configs_agree_with_the_sysfs_format() {
        // the cpu PMU's format files (event config:0-7, umask config:8-15, cmask config:24-31)
        let pmu = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pmu/cpu");
        for u in [Uarch::Skylake, Uarch::IceLakeX, Uarch::SapphireRapids] {
            for e in events(u) {
                let spec = format!(
                    "event={:#x},umask={:#x},cmask={}",
                    e.event, e.umask, e.cmask
                );
                let (_, cfg) = super::super::pebs::encode_event(&pmu, &spec).unwrap();
                assert_eq!(cfg[0], e.config(), "{spec}");
            }
        }
    }

    #[test]
    fn scaling_and_wraparound() {
        let r = |value, enabled, running| Reading {
            value,
            enabled,
            running,
        };
        assert_eq!(scaled_delta(r(10, 100, 100), r(30, 200, 200)), 20.0);
        // ran half the interval: doubled
        assert_eq!(scaled_delta(r(10, 100, 100), r(30, 200, 150)), 40.0);
        // never ran: nothing known
        assert_eq!(scaled_delta(r(10, 100, 100), r(10, 200, 100)), 0.0);
        assert_eq!(scaled_delta(r(u64::MAX, 0, 0), r(4, 1, 1)), 5.0);
    }

    #[test]
    fn a_cgroup_aggregate_keeps_its_baseline_across_member_changes() {
        let line = |i: u64| {
            format!(
                "read {i} 0 cycles={} stalls_l3_miss={} a1={} a2={} a3={}\n",
                i * 1000,
                i * 100,
                i * 500,
                i * 900,
                i * 10
            )
        };
        let text: String = (0..3).map(line).collect();
        let mut s = CoreSampler::new(Uarch::SkylakeX, Box::new(Recorded::parse(&text).unwrap()));
        assert!(s.sample().unwrap().is_empty());
        s.set_targets(&[12, 13]); // members joined
        let v = s.sample().unwrap();
        assert_eq!((v.len(), aol_cycles(&v[0])), (1, Some(50.0)));
        s.set_targets(&[13]); // one left
        assert_eq!(s.sample().unwrap().len(), 1);
    }

    #[test]
    fn a_cgroup_that_cannot_be_opened_falls_back_to_threads() {
        let e = CgroupReader::open(Uarch::SkylakeX, Path::new("/nonexistent/cg"), &[0])
            .err()
            .unwrap();
        assert!(e.starts_with("/nonexistent/cg: "), "{e}");
        let (_, note) = reader_for(
            Uarch::SkylakeX,
            &crate::linux::Targets::Cgroup("/nonexistent/cg".into()),
        );
        assert!(
            note.starts_with("core counters: per thread of each member process (the cgroup cannot be counted CPU-wide: /nonexistent/cg"),
            "{note}"
        );
    }

    #[test]
    fn recordings_reject_incomplete_lines() {
        let e = Recorded::parse("read 0 7 cycles=1 stalls_l3_miss=1 a1=1 a2=1\n")
            .err()
            .unwrap();
        assert!(e.contains("no `a3`"), "{e}");
        let e = Recorded::parse("read 0 7 cycles=1 bogus=1\n")
            .err()
            .unwrap();
        assert!(e.contains("unknown counter `bogus`"), "{e}");
    }
}
