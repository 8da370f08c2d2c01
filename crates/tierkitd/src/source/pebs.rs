//! PEBS load/store samples through `perf_event_open(2)` and its mmap ring buffer.
//!
//! Events come from the core PMU's sysfs description (`/sys/bus/event_source/devices/cpu` or
//! `cpu_core` on hybrid parts): `events/mem-loads` (Intel: `event=0xcd,umask=0x1,ldlat=3`) and
//! `events/mem-stores`, encoded with the PMU's `format/` files. Each target thread gets one
//! event per kind with `precise_ip = 2`, `inherit = 1` (threads created later are counted into
//! the same buffer) and
//! `sample_type = IP | TID | TIME | ADDR | WEIGHT | DATA_SRC`.
//!
//! The ring buffer (perf_event_open(2), "MMAP layout"): one metadata page
//! (`struct perf_event_mmap_page`: `data_head` at byte 1024, `data_tail` 1032, `data_offset` 1040,
//! `data_size` 1048) followed by 2^n data pages of records, each a `perf_event_header`
//! (`u32 type, u16 misc, u16 size`) and a body. `PERF_RECORD_SAMPLE` (9) bodies hold the
//! selected fields in the kernel's fixed order (IP, TID = pid u32 + tid u32, TIME, ADDR, ...,
//! WEIGHT, DATA_SRC); `PERF_RECORD_LOST` (2) holds `u64 id, u64 lost`. Records wrap around the end
//! of the data area. [`parse_ring`] is the parser, tested on buffers written in that layout.
//!
//! The sample's weight is the load latency in core cycles; tierkitd reports it in ns with the
//! nominal clock (`cpu MHz` of /proc/cpuinfo). It also gives per-tier loaded latency
//! ([`weight_latency`]), the fallback for Colloid-style policies when CHA counters are missing.

use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering};

use tierkit_core::{Pid, SampleFilter, FAST};

use super::{named_around, Ctx, Named, Source, Stats};
use crate::error::{read_to_string, Error, Result};

pub const PERF_SAMPLE_IP: u64 = 1 << 0;
pub const PERF_SAMPLE_TID: u64 = 1 << 1;
pub const PERF_SAMPLE_TIME: u64 = 1 << 2;
pub const PERF_SAMPLE_ADDR: u64 = 1 << 3;
pub const PERF_SAMPLE_ID: u64 = 1 << 6;
pub const PERF_SAMPLE_CPU: u64 = 1 << 7;
pub const PERF_SAMPLE_PERIOD: u64 = 1 << 8;
pub const PERF_SAMPLE_WEIGHT: u64 = 1 << 14;
pub const PERF_SAMPLE_DATA_SRC: u64 = 1 << 15;
pub const SAMPLE_TYPE: u64 = PERF_SAMPLE_IP
    | PERF_SAMPLE_TID
    | PERF_SAMPLE_TIME
    | PERF_SAMPLE_ADDR
    | PERF_SAMPLE_WEIGHT
    | PERF_SAMPLE_DATA_SRC;
/// perf_event_open flag: close the fd on exec.
pub const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
pub const PERF_RECORD_LOST: u32 = 2;
pub const PERF_RECORD_SAMPLE: u32 = 9;
/// `perf_mem_data_src.mem_op` bits.
pub const PERF_MEM_OP_LOAD: u64 = 0x02;
pub const PERF_MEM_OP_STORE: u64 = 0x04;

/// One decoded sample record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawSample {
    pub ip: u64,
    pub pid: u32,
    pub tid: u32,
    pub time: u64,
    pub addr: u64,
    pub weight: u64,
    pub data_src: u64,
}

impl RawSample {
    pub fn is_store(&self) -> bool {
        self.data_src & 0x1f & PERF_MEM_OP_STORE != 0
    }
}

/// Decode one `PERF_RECORD_SAMPLE` body for `sample_type`. Only the fields tierkitd asks for (and
/// the fixed-size ones before WEIGHT) are supported; anything else is an error, not a misparse.
pub fn parse_sample(body: &[u8], sample_type: u64) -> std::result::Result<RawSample, String> {
    let unsupported =
        sample_type & !(SAMPLE_TYPE | PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD);
    if unsupported != 0 {
        return Err(format!(
            "sample_type bits {unsupported:#x} are not supported"
        ));
    }
    let mut off = 0usize;
    let u64_at = |off: &mut usize| -> std::result::Result<u64, String> {
        let b = body
            .get(*off..*off + 8)
            .ok_or_else(|| format!("sample record truncated at byte {}", *off))?;
        *off += 8;
        Ok(u64::from_le_bytes(b.try_into().unwrap()))
    };
    let mut s = RawSample::default();
    if sample_type & PERF_SAMPLE_IP != 0 {
        s.ip = u64_at(&mut off)?;
    }
    if sample_type & PERF_SAMPLE_TID != 0 {
        let v = u64_at(&mut off)?;
        s.pid = v as u32;
        s.tid = (v >> 32) as u32;
    }
    if sample_type & PERF_SAMPLE_TIME != 0 {
        s.time = u64_at(&mut off)?;
    }
    if sample_type & PERF_SAMPLE_ADDR != 0 {
        s.addr = u64_at(&mut off)?;
    }
    if sample_type & PERF_SAMPLE_ID != 0 {
        u64_at(&mut off)?;
    }
    if sample_type & PERF_SAMPLE_CPU != 0 {
        u64_at(&mut off)?;
    }
    if sample_type & PERF_SAMPLE_PERIOD != 0 {
        u64_at(&mut off)?;
    }
    if sample_type & PERF_SAMPLE_WEIGHT != 0 {
        s.weight = u64_at(&mut off)?;
    }
    if sample_type & PERF_SAMPLE_DATA_SRC != 0 {
        s.data_src = u64_at(&mut off)?;
    }
    Ok(s)
}

/// Parse the records between `tail` and `head` (free-running byte counters, as in the mmap
/// page) of a ring data area whose length is a power of two. Returns the new tail (== head when
/// every record was complete) and adds `PERF_RECORD_LOST` counts to `lost`.
pub fn parse_ring(
    data: &[u8],
    mut tail: u64,
    head: u64,
    sample_type: u64,
    out: &mut Vec<RawSample>,
    lost: &mut u64,
) -> std::result::Result<u64, String> {
    let size = data.len() as u64;
    if !size.is_power_of_two() {
        return Err(format!("ring data size {size} is not a power of two"));
    }
    if head.wrapping_sub(tail) > size {
        return Err(format!(
            "ring overrun: head {head} is more than {size} bytes past tail {tail}"
        ));
    }
    let mut rec = Vec::new();
    while head.wrapping_sub(tail) >= 8 {
        let at = |i: u64| data[((tail + i) & (size - 1)) as usize];
        let hdr: Vec<u8> = (0..8).map(at).collect();
        let typ = u32::from_le_bytes(hdr[0..4].try_into().unwrap());
        let len = u16::from_le_bytes(hdr[6..8].try_into().unwrap()) as u64;
        if len < 8 {
            return Err(format!("record at {tail} has size {len} < 8"));
        }
        if head.wrapping_sub(tail) < len {
            break; // incomplete (cannot happen with a consistent head)
        }
        rec.clear();
        rec.extend((8..len).map(at));
        match typ {
            PERF_RECORD_SAMPLE => out.push(parse_sample(&rec, sample_type)?),
            PERF_RECORD_LOST => {
                let n = rec.get(8..16).ok_or("truncated PERF_RECORD_LOST")?;
                *lost += u64::from_le_bytes(n.try_into().unwrap());
            }
            _ => {} // MMAP, COMM, THROTTLE, ...: not ours to use
        }
        tail = tail.wrapping_add(len);
    }
    Ok(tail)
}

/// Mean load latency in cycles per tier from sample weights (the Colloid fallback when the
/// uncore counters are missing), from (sample, its page's tier) pairs.
pub fn weight_latency<'a>(
    samples: impl IntoIterator<Item = (&'a RawSample, Option<u8>)>,
) -> [Option<f64>; 2] {
    let mut sum = [0f64; 2];
    let mut n = [0u64; 2];
    for (s, tier) in samples
        .into_iter()
        .filter(|(s, _)| !s.is_store() && s.weight > 0)
    {
        if let Some(t) = tier.filter(|t| *t < 2) {
            sum[t as usize] += s.weight as f64;
            n[t as usize] += 1;
        }
    }
    [0, 1].map(|t| (n[t] > 0).then(|| sum[t] / n[t] as f64))
}

/// `struct perf_event_attr`, PERF_ATTR_SIZE_VER5 (112 bytes).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct PerfEventAttr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub wakeup_events: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved: u16,
}

pub const ATTR_DISABLED: u64 = 1 << 0;
pub const ATTR_INHERIT: u64 = 1 << 1;
pub const ATTR_EXCLUDE_KERNEL: u64 = 1 << 5;
pub const ATTR_EXCLUDE_HV: u64 = 1 << 6;
pub const ATTR_PRECISE_IP_2: u64 = 2 << 15;

/// A PMU event spelled in sysfs terms (`event=0xcd,umask=0x1,ldlat=3`), encoded into
/// config/config1/config2 with the PMU's `format/` files (`config:0-7`, `config1:0-15`, ...).
pub fn encode_event(pmu_dir: &Path, spec: &str) -> Result<(u32, [u64; 3])> {
    let type_path = pmu_dir.join("type");
    let ty: u32 = read_to_string(&type_path)?
        .trim()
        .parse()
        .map_err(|_| Error::Parse {
            path: type_path.clone(),
            what: "a PMU type number",
            got: String::new(),
        })?;
    let mut cfg = [0u64; 3];
    for term in spec.trim().split(',').filter(|t| !t.is_empty()) {
        let (name, val) = term.split_once('=').unwrap_or((term, "1"));
        let v = parse_num(val)
            .ok_or_else(|| Error::Telemetry(format!("event `{spec}`: bad value in `{term}`")))?;
        let fpath = pmu_dir.join("format").join(name.trim());
        let fmt = read_to_string(&fpath)?;
        let (field, bits) = fmt.trim().split_once(':').ok_or_else(|| Error::Parse {
            path: fpath.clone(),
            what: "a format (configN:lo-hi)",
            got: fmt.trim().into(),
        })?;
        let idx = match field {
            "config" => 0,
            "config1" => 1,
            "config2" => 2,
            _ => {
                return Err(Error::Parse {
                    path: fpath,
                    what: "a config field",
                    got: field.into(),
                })
            }
        };
        // a field may be split: "config:0-7,21"
        let mut shift_in = 0u32;
        for part in bits.split(',') {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (a.parse::<u32>(), b.parse::<u32>()),
                None => (part.parse::<u32>(), part.parse::<u32>()),
            };
            let (Ok(lo), Ok(hi)) = (lo, hi) else {
                return Err(Error::Parse {
                    path: fpath,
                    what: "a bit range",
                    got: part.into(),
                });
            };
            let width = hi - lo + 1;
            let mask = if width >= 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            cfg[idx] |= ((v >> shift_in) & mask) << lo;
            shift_in += width;
        }
    }
    Ok((ty, cfg))
}

fn parse_num(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The core PMU with PEBS memory events, and its event specs (loads, stores).
pub fn find_pmu(root: &Path) -> std::result::Result<(PathBuf, String, Option<String>), String> {
    for name in ["cpu", "cpu_core"] {
        let d = root.join(name);
        if let Ok(l) = read_to_string(d.join("events/mem-loads")) {
            let s = read_to_string(d.join("events/mem-stores"))
                .ok()
                .map(|s| s.trim().to_string());
            return Ok((d, l.trim().to_string(), s));
        }
    }
    Err(format!(
        "no core PMU with PEBS memory events ({}/cpu/events/mem-loads missing: no hardware PMU, or not Intel)",
        root.display()
    ))
}

fn perf_event_open(attr: &PerfEventAttr, pid: i32) -> std::io::Result<i32> {
    // SAFETY: perf_event_open reads `attr.size` (112) bytes from a live, initialised
    // #[repr(C)] struct of exactly that size; the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid as libc::c_long,
            -1 as libc::c_long,
            -1 as libc::c_long,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(fd as i32)
    }
}

/// One perf event with its mmapped ring.
struct Ring {
    fd: i32,
    base: *mut u8,
    len: usize,
    data_off: usize,
    data_len: usize,
}

// SAFETY: the mapping is owned by this struct alone and only touched through &mut self.
unsafe impl Send for Ring {}

const RING_DATA_PAGES: usize = 64;

impl Ring {
    fn open(attr: &PerfEventAttr, pid: i32) -> std::io::Result<Ring> {
        let fd = perf_event_open(attr, pid)?;
        let len = (1 + RING_DATA_PAGES) * 4096;
        // SAFETY: mapping a perf event fd read-write with the documented size (1 + 2^n pages);
        // the result is checked against MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            // SAFETY: fd was returned by perf_event_open above and is closed once.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        Ok(Ring {
            fd,
            base: base as *mut u8,
            len,
            data_off: 4096,
            data_len: RING_DATA_PAGES * 4096,
        })
    }

    fn drain(
        &mut self,
        out: &mut Vec<RawSample>,
        lost: &mut u64,
    ) -> std::result::Result<(), String> {
        // SAFETY: the first page of the mapping is the kernel's perf_event_mmap_page; data_head
        // (offset 1024) is read volatile and followed by an acquire fence, as the man page asks,
        // and data_tail (1032) is written after we are done with the data (release fence). The
        // data area [data_off, data_off + data_len) lies inside the mapping.
        unsafe {
            let head = std::ptr::read_volatile(self.base.add(1024) as *const u64);
            fence(Ordering::Acquire);
            let tail = std::ptr::read_volatile(self.base.add(1032) as *const u64);
            let data = std::slice::from_raw_parts(self.base.add(self.data_off), self.data_len);
            let new_tail = parse_ring(data, tail, head, SAMPLE_TYPE, out, lost);
            fence(Ordering::Release);
            // on a parse error skip everything: the next records start at head
            std::ptr::write_volatile(
                self.base.add(1032) as *mut u64,
                *new_tail.as_ref().unwrap_or(&head),
            );
            new_tail.map(|_| ())
        }
    }

    fn set_period(&mut self, period: u64) {
        let mut p = period;
        // SAFETY: PERF_EVENT_IOC_PERIOD reads one u64 through the pointer.
        unsafe { libc::ioctl(self.fd, 0x4008_2404, &mut p as *mut u64) };
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base/len are the mapping made in open(); fd is ours; both released once.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
            libc::close(self.fd);
        }
    }
}

pub struct Pebs {
    pmu: PathBuf,
    loads: String,
    stores: Option<String>,
    period: u64,
    filter: SampleFilter,
    rings: Vec<(Pid, Ring)>,
    raw: Vec<RawSample>,
    /// `raw` holds this interval's records, read by `poll` (and the records the kernel dropped).
    polled: Option<u64>,
    /// Per-tier mean load latency (cycles) of the last interval, from sample weights.
    pub latency_cycles: [Option<f64>; 2],
    /// Load samples with a weight per tier in the last interval.
    pub weighted_loads: [u64; 2],
}

impl Pebs {
    /// This interval's records of every ring into `raw`.
    fn drain(&mut self, lost: &mut u64) -> Result<()> {
        self.raw.clear();
        for (_, r) in &mut self.rings {
            r.drain(&mut self.raw, lost).map_err(Error::Telemetry)?;
        }
        Ok(())
    }

    /// Find the PMU and check that a sampling event can be opened on ourselves.
    pub fn probe(root: &Path, period: u64) -> std::result::Result<Pebs, String> {
        let (pmu, loads, stores) = find_pmu(root)?;
        let p = Pebs {
            pmu,
            loads,
            stores,
            period,
            filter: SampleFilter::AllMisses,
            rings: Vec::new(),
            raw: Vec::new(),
            polled: None,
            latency_cycles: [None, None],
            weighted_loads: [0, 0],
        };
        let attr = p.attr(&p.loads).map_err(|e| e.to_string())?;
        perf_event_open(&attr, 0)
            .map(|fd| {
                // SAFETY: closing the fd just opened.
                unsafe { libc::close(fd) };
            })
            .map_err(|e| {
                format!(
                    "perf_event_open({}) failed: {e} (see /proc/sys/kernel/perf_event_paranoid)",
                    p.loads
                )
            })?;
        Ok(p)
    }

    fn attr(&self, spec: &str) -> Result<PerfEventAttr> {
        let (ty, cfg) = encode_event(&self.pmu, spec)?;
        Ok(PerfEventAttr {
            type_: ty,
            size: std::mem::size_of::<PerfEventAttr>() as u32,
            config: cfg[0],
            config1: cfg[1],
            config2: cfg[2],
            sample_period: self.period.max(1),
            sample_type: SAMPLE_TYPE,
            flags: ATTR_INHERIT | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV | ATTR_PRECISE_IP_2,
            wakeup_events: 0,
            ..Default::default()
        })
    }
}

impl Source for Pebs {
    fn name(&self) -> &'static str {
        "pebs"
    }

    fn set_targets(&mut self, pids: &[Pid]) -> Result<Vec<String>> {
        self.rings.retain(|(p, _)| pids.contains(p));
        let mut notes = Vec::new();
        for &pid in pids {
            if self.rings.iter().any(|(p, _)| *p == pid) {
                continue;
            }
            // every existing thread (inherit covers the ones created later)
            let tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
                .map(|rd| {
                    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                        .collect()
                })
                .unwrap_or_default();
            let mut specs = vec![self.loads.clone()];
            if self.filter == SampleFilter::AllMisses {
                specs.extend(self.stores.clone());
            }
            for spec in &specs {
                let attr = self.attr(spec)?;
                for &tid in &tids {
                    match Ring::open(&attr, tid) {
                        Ok(r) => self.rings.push((pid, r)),
                        Err(e) => notes.push(format!("pebs: pid {pid} tid {tid}: {e}")),
                    }
                }
            }
        }
        notes.push(format!(
            "pebs: {} ring(s), period {}",
            self.rings.len(),
            self.period
        ));
        Ok(notes)
    }

    /// Reads the rings now and names the 2 MiB stretch around every sampled address.
    fn poll(&mut self, out: &mut Vec<Named>) -> Result<()> {
        let mut lost = 0;
        self.drain(&mut lost)?;
        self.polled = Some(lost);
        out.extend(self.raw.iter().map(|s| named_around(s.pid, s.addr)));
        Ok(())
    }

    fn collect(&mut self, ctx: &mut Ctx) -> Result<Stats> {
        let mut st = Stats::default();
        match self.polled.take() {
            Some(lost) => st.lost = lost,
            None => self.drain(&mut st.lost)?,
        }
        st.observed = self.raw.len() as u64;
        let mut tiers = Vec::with_capacity(self.raw.len());
        for s in &self.raw {
            let page = ctx
                .procs
                .iter()
                .find(|p| p.pid == s.pid)
                .and_then(|p| p.find(s.addr / crate::mech::PAGE_SIZE));
            let Some(id) = page else {
                st.unmatched += 1;
                tiers.push(None);
                continue;
            };
            let Some(slot) = ctx.table.slot_mut(id) else {
                tiers.push(None);
                continue;
            };
            slot.accessed = true;
            let tier = slot.tier;
            tiers.push(Some(tier));
            if self.filter == SampleFilter::SlowLoads && (tier == FAST || s.is_store()) {
                continue;
            }
            ctx.samples.push(tierkit_core::Sample {
                page: id,
                tier,
                is_store: s.is_store(),
                pid: s.pid,
                tid: s.tid,
                latency_ns: (s.weight as f64 / ctx.cpu_ghz.max(0.1)) as f32,
                // WEIGHT is the load latency only; the retire latency of timed PEBS
                // (PERF_SAMPLE_WEIGHT_STRUCT) is not read
                exposed_ns: 0.0,
                time_ns: ctx.now_ns,
            });
            st.samples += 1;
        }
        self.weighted_loads = [0, 0];
        for (s, t) in self.raw.iter().zip(&tiers) {
            if let Some(t) = t.filter(|t| *t < 2) {
                if !s.is_store() && s.weight > 0 {
                    self.weighted_loads[t as usize] += 1;
                }
            }
        }
        self.latency_cycles = weight_latency(self.raw.iter().zip(tiers));
        Ok(st)
    }

    /// Little's law from the samples: each load sample stands for `period` misses, so a tier's
    /// inserts are samples x period and its occupancy inserts x mean latency (cycles); the
    /// telemetry's `tier_latency_ns` then gives the mean sampled latency.
    fn tier_counters(&self) -> Option<Vec<tierkit_core::TierCounters>> {
        Some(
            (0..2)
                .map(|t| {
                    let inserts = self.weighted_loads[t] as f64 * self.period as f64;
                    tierkit_core::TierCounters {
                        llc_misses: inserts,
                        tor_inserts: inserts,
                        tor_occupancy: inserts * self.latency_cycles[t].unwrap_or(0.0),
                        ..Default::default()
                    }
                })
                .collect(),
        )
    }

    fn set_sampling(&mut self, period: u64, filter: SampleFilter) -> Option<String> {
        self.filter = filter;
        if period > 0 && period != self.period {
            self.period = period;
            for (_, r) in &mut self.rings {
                r.set_period(period);
            }
        }
        None
    }

    fn stop(&mut self) {
        self.rings.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Write a PERF_RECORD_SAMPLE for SAMPLE_TYPE the way the kernel lays it out.
    fn sample_record(s: &RawSample) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(PERF_RECORD_SAMPLE.to_le_bytes());
        b.extend(0u16.to_le_bytes());
        b.extend(((8 + 6 * 8) as u16).to_le_bytes());
        for v in [
            s.ip,
            (s.pid as u64) | ((s.tid as u64) << 32),
            s.time,
            s.addr,
            s.weight,
            s.data_src,
        ] {
            b.extend(v.to_le_bytes());
        }
        b
    }

    fn lost_record(n: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(PERF_RECORD_LOST.to_le_bytes());
        b.extend(0u16.to_le_bytes());
        b.extend(24u16.to_le_bytes());
        b.extend(7u64.to_le_bytes());
        b.extend(n.to_le_bytes());
        b
    }

    fn other_record() -> Vec<u8> {
        // PERF_RECORD_THROTTLE (5): u64 time, id, stream_id
        let mut b = Vec::new();
        b.extend(5u32.to_le_bytes());
        b.extend(0u16.to_le_bytes());
        b.extend(32u16.to_le_bytes());
        b.extend([0u8; 24]);
        b
    }

    fn put(ring: &mut [u8], at: u64, bytes: &[u8]) {
        let n = ring.len() as u64;
        for (i, b) in bytes.iter().enumerate() {
            ring[((at + i as u64) % n) as usize] = *b;
        }
    }

    fn s(i: u64) -> RawSample {
        RawSample {
            ip: 0x401000 + i,
            pid: 100,
            tid: 101 + i as u32 % 2,
            time: 1_000 + i,
            addr: 0x7f00_0000_0000 + i * 4096,
            weight: 200 + i,
            // mem_op LOAD or STORE, mem_lvl LOC_RAM|HIT
            data_src: if i.is_multiple_of(3) {
                PERF_MEM_OP_STORE
            } else {
                PERF_MEM_OP_LOAD
            } | (0x82 << 5),
        }
    }

    #[test]
    fn parses_samples_lost_and_other_records_across_the_wrap() {
        let mut ring = vec![0u8; 512];
        // start near the end so records wrap around
        let start: u64 = 10 * 512 + 470;
        let mut at = start;
        let mut want = Vec::new();
        for i in 0..4 {
            let r = sample_record(&s(i));
            put(&mut ring, at, &r);
            at += r.len() as u64;
            want.push(s(i));
        }
        put(&mut ring, at, &lost_record(17));
        at += 24;
        put(&mut ring, at, &other_record());
        at += 32;
        let r = sample_record(&s(9));
        put(&mut ring, at, &r);
        at += r.len() as u64;
        want.push(s(9));
        let mut out = Vec::new();
        let mut lost = 0;
        let tail = parse_ring(&ring, start, at, SAMPLE_TYPE, &mut out, &mut lost).unwrap();
        assert_eq!(tail, at);
        assert_eq!(out, want);
        assert_eq!(lost, 17);
        assert!(out[0].is_store() && !out[1].is_store());
        // a partial record at the head waits for the rest
        let mut out2 = Vec::new();
        let t = parse_ring(&ring, start, start + 20, SAMPLE_TYPE, &mut out2, &mut lost).unwrap();
        assert_eq!((t, out2.len()), (start, 0));
    }

    #[test]
    fn rejects_corrupt_rings() {
        let ring = vec![0u8; 256];
        let mut out = Vec::new();
        let mut lost = 0;
        let e = parse_ring(&ring, 0, 16, SAMPLE_TYPE, &mut out, &mut lost).unwrap_err();
        assert!(e.contains("size 0 < 8"), "{e}");
        let e = parse_ring(&ring, 0, 1000, SAMPLE_TYPE, &mut out, &mut lost).unwrap_err();
        assert!(e.contains("overrun"), "{e}");
        let e = parse_ring(&[0u8; 100], 0, 0, SAMPLE_TYPE, &mut out, &mut lost).unwrap_err();
        assert!(e.contains("power of two"), "{e}");
        let e = parse_sample(&[0u8; 16], SAMPLE_TYPE).unwrap_err();
        assert!(e.contains("truncated"), "{e}");
        let e = parse_sample(&[0u8; 64], SAMPLE_TYPE | (1 << 5)).unwrap_err();
        assert!(e.contains("not supported"), "{e}");
        // with extra fixed fields (CPU, PERIOD) the offsets shift
        let mut b = Vec::new();
        for v in [1u64, 2 | (3 << 32), 4, 5, 6, 7, 8, 9] {
            b.extend(v.to_le_bytes());
        }
        let r = parse_sample(&b, SAMPLE_TYPE | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD).unwrap();
        assert_eq!(
            (r.ip, r.pid, r.tid, r.time, r.addr, r.weight, r.data_src),
            (1, 2, 3, 4, 5, 8, 9)
        );
    }

    #[test]
    fn weights_give_per_tier_latency() {
        let v: Vec<RawSample> = (0..6).map(s).collect();
        // samples 1, 2, 4, 5 are loads; even addresses' pages in tier 0, odd in tier 1
        let lat = weight_latency(v.iter().map(|x| (x, Some(((x.addr / 4096) % 2) as u8))));
        assert_eq!(
            lat,
            [Some((202.0 + 204.0) / 2.0), Some((201.0 + 205.0) / 2.0)]
        );
    }

    #[test]
    fn weights_become_tier_counters_by_littles_law() {
        let p = Pebs {
            pmu: PathBuf::new(),
            loads: String::new(),
            stores: None,
            period: 100,
            filter: SampleFilter::AllMisses,
            rings: Vec::new(),
            raw: Vec::new(),
            polled: None,
            latency_cycles: [Some(200.0), Some(500.0)],
            weighted_loads: [3, 1],
        };
        let tel = tierkit_core::Telemetry {
            cpu_ghz: 2.0,
            tier_counters: p.tier_counters().unwrap(),
            ..Default::default()
        };
        assert_eq!(tel.tier_counters[0].tor_inserts, 300.0);
        assert_eq!(tel.tier_latency_ns(0), Some(100.0));
        assert_eq!(tel.tier_latency_ns(1), Some(250.0));
    }

    #[test]
    fn events_encode_through_format_files() {
        let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pmu");
        let (pmu, loads, stores) = find_pmu(&d).unwrap();
        assert_eq!(loads, "event=0xcd,umask=0x1,ldlat=3");
        let (ty, cfg) = encode_event(&pmu, &loads).unwrap();
        assert_eq!(ty, 4);
        assert_eq!(cfg, [0x01cd, 3, 0]);
        let (_, cfg) = encode_event(&pmu, stores.as_deref().unwrap()).unwrap();
        assert_eq!(cfg[0], 0x82d0);
        // a split field (uncore umask_ext style): config:8-15,32-55
        let (_, cfg) =
            encode_event(&d.join("uncore_cha_0"), "event=0x35,umask=0xc816fe01").unwrap();
        assert_eq!(cfg[0], 0x35 | (0x01 << 8) | (0xc816fe << 32));
        let e = find_pmu(&d.join("nothing")).unwrap_err();
        assert!(e.contains("mem-loads missing"), "{e}");
    }
}
