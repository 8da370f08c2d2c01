//! Streamed importers into the binary format: one line in, at most one record out; nothing is
//! held but the current run. Errors name the input's line. Inputs may be gzip- or
//! zstd-compressed (told by their first bytes, not their names; [`open_input`]), and an import
//! writes a temporary file beside the output and renames it only once it is complete, so a
//! failed import leaves no output behind.

use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::damo;
use super::{Header, Op, Result, Source, StampKind, TraceError, Writer};

/// Input formats `tierkit trace import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `valgrind --tool=lackey --trace-mem=yes`: `I addr,size`, ` L|S|M addr,size`.
    Lackey,
    /// `perf script -F time,event,addr,data_src,weight` of `perf mem record`.
    PerfScript,
    /// DAMON monitoring results: damo's record file itself (`damo record`'s default zlib-compressed
    /// JSON, or `--output_type json`; damo.rs), `damo report raw` of it, or `perf script` of the
    /// `damon:damon_aggregated` tracepoint. Told apart by their first bytes.
    Damon,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "lackey" => Some(Format::Lackey),
            "perf-script" | "perf" => Some(Format::PerfScript),
            "damon" | "damo" => Some(Format::Damon),
            _ => None,
        }
    }
    pub const NAMES: &'static [&'static str] = &["lackey", "perf-script", "damon"];
}

/// What an import did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportStats {
    /// How the input was compressed (told by its first bytes).
    pub compression: Compression,
    pub lines: u64,
    /// Input lines that were not accesses (valgrind banners, instructions, cache hits...).
    pub skipped: u64,
    pub records: u64,
    pub accesses: u64,
    /// Instruction (`I`) lines of a lackey trace (0: the trace has no stamps).
    pub instructions: u64,
}

/// How an input is compressed, from its first bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    #[default]
    None,
    Gzip,
    Zstd,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }

    /// Tell the compression from the first bytes; Err names a compression tierkit does not read.
    pub fn sniff(head: &[u8]) -> std::result::Result<Compression, &'static str> {
        if head.starts_with(&[0x1f, 0x8b]) {
            Ok(Compression::Gzip)
        } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Ok(Compression::Zstd)
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            Err("xz")
        } else if head.len() >= 10
            && head.starts_with(b"BZh")
            && (b'1'..=b'9').contains(&head[3])
            && head[4..10] == [0x31, 0x41, 0x59, 0x26, 0x53, 0x59]
        {
            Err("bzip2")
        } else {
            Ok(Compression::None)
        }
    }
}

/// An input as a buffered stream of its (decompressed) bytes.
pub type Input = Box<dyn BufRead + Send>;

/// Open an input for import: a path, or `-` for stdin. gzip (also several members, as `cat
/// a.gz b.gz` gives) and zstd inputs are decompressed as they are read; which one is told from
/// the first bytes, not the name.
pub fn open_input(input: &str) -> Result<(Input, Compression)> {
    let raw: Box<dyn Read + Send> = if input == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(input).map_err(|e| TraceError::Io {
            path: input.to_string(),
            msg: format!("cannot open: {e}"),
        })?)
    };
    wrap_input(display_name(input), raw)
}

/// How an input is named in messages.
pub fn display_name(input: &str) -> &str {
    if input == "-" {
        "<stdin>"
    } else {
        input
    }
}

/// [`open_input`] for an already open stream.
pub fn wrap_input(name: &str, raw: Box<dyn Read + Send>) -> Result<(Input, Compression)> {
    let mut b = BufReader::with_capacity(1 << 20, raw);
    let head = b.fill_buf().map_err(|e| TraceError::Io {
        path: name.to_string(),
        msg: format!("cannot read: {e}"),
    })?;
    let c = Compression::sniff(head).map_err(|what| TraceError::Io {
        path: name.to_string(),
        msg: format!(
            "{what}-compressed input; tierkit reads plain, gzip and zstd input (decompress it, \
             e.g. `{} -dc FILE | tierkit trace import FORMAT - -o OUT`)",
            if what == "xz" { "xz" } else { "bzip2" }
        ),
    })?;
    let inp: Input = match c {
        Compression::None => Box::new(b),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::bufread::MultiGzDecoder::new(b),
        )),
        Compression::Zstd => {
            let mut d =
                zstd::stream::read::Decoder::with_buffer(b).map_err(|e| TraceError::Io {
                    path: name.to_string(),
                    msg: format!("cannot start zstd: {e}"),
                })?;
            // `zstd --long=31` inputs need the large window (memory only if the file asks).
            d.window_log_max(31).map_err(|e| TraceError::Io {
                path: name.to_string(),
                msg: format!("cannot start zstd: {e}"),
            })?;
            Box::new(BufReader::with_capacity(1 << 20, d))
        }
    };
    Ok((inp, c))
}

/// The longest input line the text importers read, in bytes: a lackey, perf script or damo
/// line is a few hundred bytes; a longer one is not such a line (and a compressed input could
/// otherwise expand into one line as large as memory).
pub const MAX_LINE_BYTES: usize = 1 << 20;

struct Lines<R: BufRead> {
    inp: R,
    path: String,
    no: u64,
    raw: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    fn next<'b>(&mut self, buf: &'b mut String) -> Result<Option<&'b str>> {
        buf.clear();
        self.raw.clear();
        let line = self.no + 1;
        let n = (&mut self.inp)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut self.raw)
            .map_err(|e| perr(&self.path, line, format!("cannot read: {e}")))?;
        if n == 0 {
            return Ok(None);
        }
        if n > MAX_LINE_BYTES && self.raw.last() != Some(&b'\n') {
            return Err(perr(
                &self.path,
                line,
                format!(
                    "line longer than {MAX_LINE_BYTES} bytes; not a text trace (tierkit reads plain, \
                     gzip and zstd text traces)"
                ),
            ));
        }
        let text = std::str::from_utf8(&self.raw).map_err(|_| {
            perr(
                &self.path,
                line,
                "not text (invalid UTF-8); tierkit reads plain, gzip and zstd text traces",
            )
        })?;
        buf.push_str(text);
        self.no = line;
        Ok(Some(buf.trim_end_matches(['\n', '\r'])))
    }
}

fn perr(path: &str, line: u64, msg: impl Into<String>) -> TraceError {
    TraceError::Parse {
        path: path.to_string(),
        line,
        msg: msg.into(),
    }
}

/// A temporary file beside `output` (same directory, so the final rename is atomic), removed
/// when dropped unless kept.
struct Temp {
    path: PathBuf,
    keep: bool,
}

impl Temp {
    fn beside(output: &Path) -> Temp {
        let name = output
            .file_name()
            .map_or_else(|| "trace".into(), |n| n.to_string_lossy().into_owned());
        let dir = output.parent().unwrap_or(Path::new(""));
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Temp {
            path: dir.join(format!(".{name}.tmp-{}-{n}", std::process::id())),
            keep: false,
        }
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Import `input` (a path, or `-` for stdin; plain, gzip or zstd) into a trace at `output`.
pub fn import_path(format: Format, input: &str, output: &Path) -> Result<ImportStats> {
    let (inp, c) = open_input(input)?;
    let mut st = import(format, display_name(input), inp, output)?;
    st.compression = c;
    Ok(st)
}

/// Convert `input` (read streamed from `inp`, named `input_name` in messages; decompressed
/// already, see [`open_input`]) into a trace at `output`. The trace is written to a temporary
/// file beside `output` and renamed to it once complete: on any error `output` is left as it
/// was (absent, or the previous file) and the temporary file is removed.
pub fn import(
    format: Format,
    input_name: &str,
    inp: impl BufRead,
    output: &Path,
) -> Result<ImportStats> {
    let tmp = Temp::beside(output);
    let st = import_to(format, input_name, inp, &tmp.path, output)?;
    std::fs::rename(&tmp.path, output).map_err(|e| TraceError::Io {
        path: output.display().to_string(),
        msg: format!("cannot write: {e}"),
    })?;
    let mut tmp = tmp;
    tmp.keep = true;
    Ok(st)
}

fn import_to(
    format: Format,
    input_name: &str,
    inp: impl BufRead,
    path: &Path,
    output: &Path,
) -> Result<ImportStats> {
    let f = std::fs::File::create(path).map_err(|e| TraceError::Io {
        path: output.display().to_string(),
        msg: format!("cannot create: {e}"),
    })?;
    let out_name = output.display().to_string();
    import_into(format, input_name, inp, f, super::VERSION, &out_name).map(|(st, _)| st)
}

/// [`import`] into any writer (an in-memory trace, a fuzz target's sink), in trace format
/// `version` (1 or 2); `output_name` names `out` in write errors. Returns the stats and `out`,
/// holding the complete trace.
pub fn import_into<W: Write + Seek>(
    format: Format,
    input_name: &str,
    mut inp: impl BufRead,
    out: W,
    version: u16,
    output_name: &str,
) -> Result<(ImportStats, W)> {
    let mut header = match format {
        Format::Lackey => Header::new(6, StampKind::Instructions, Source::Lackey),
        Format::PerfScript => Header::new(6, StampKind::Nanoseconds, Source::PerfMem),
        Format::Damon => Header::new(12, StampKind::Nanoseconds, Source::Damon),
    };
    header.version = version;
    let werr = |e: std::io::Error| TraceError::Io {
        path: output_name.to_string(),
        msg: format!("cannot write: {e}"),
    };
    let mut w = Writer::new(out, header).map_err(werr)?;
    let enc = match format {
        Format::Damon => {
            let head = inp
                .fill_buf()
                .map_err(|e| perr(input_name, 1, format!("cannot read: {e}")))?;
            damo::sniff(head)
        }
        _ => damo::Encoding::Text,
    };
    let (stats, last) = if enc != damo::Encoding::Text {
        damo::read(inp, enc, input_name, &mut w).map_err(|e| match e {
            Ok(io) => werr(io),
            Err(t) => t,
        })?
    } else {
        let mut lines = Lines {
            inp,
            path: input_name.to_string(),
            no: 0,
            raw: Vec::new(),
        };
        match format {
            Format::Lackey => lackey(&mut lines, &mut w),
            Format::PerfScript => perf_script(&mut lines, &mut w),
            Format::Damon => damon(&mut lines, &mut w),
        }
        .map_err(|e| match e {
            Either::Trace(t) => t,
            Either::Io(e) => werr(e),
        })?
    };
    if format == Format::Lackey && stats.instructions == 0 {
        // No `I` lines: the trace has no time in it; replay models compute per access.
        w.set_stamp_kind(StampKind::None);
    }
    let (h, out) = w.finish_into(last).map_err(werr)?;
    if h.records == 0 {
        let expected = match format {
            Format::Lackey => "`valgrind --tool=lackey --trace-mem=yes`",
            Format::PerfScript => {
                "`perf script -F time,event,addr,data_src,weight` (of `perf mem record`)"
            }
            Format::Damon => {
                "a damo record file, `damo report raw` or `perf script` of damon:damon_aggregated"
            }
        };
        if stats.lines == 0 {
            // no line to point at: say the input is empty
            return Err(TraceError::Io {
                path: input_name.to_string(),
                msg: format!("the input is empty; expected {expected} output"),
            });
        }
        return Err(perr(
            input_name,
            stats.lines,
            format!(
                "no memory accesses found in {} lines; is this {expected} output?",
                stats.lines
            ),
        ));
    }
    Ok((
        ImportStats {
            records: h.records,
            accesses: h.accesses,
            ..stats
        },
        out,
    ))
}

enum Either {
    Trace(TraceError),
    Io(std::io::Error),
}
impl From<TraceError> for Either {
    fn from(e: TraceError) -> Self {
        Either::Trace(e)
    }
}
impl From<std::io::Error> for Either {
    fn from(e: std::io::Error) -> Self {
        Either::Io(e)
    }
}

type Out = std::result::Result<(ImportStats, u64), Either>;

fn hex(s: &str) -> Option<u64> {
    let s = s.trim();
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if s.is_empty() {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

/// lackey: the stamp is the number of instructions (`I` lines) before the access; an access
/// that straddles cache lines touches each of them.
/// The largest access one lackey line can mean: one instruction's data access (the widest, an
/// XSAVE of every register state, is a few KiB); anything larger is a corrupt line.
const MAX_LACKEY_ACCESS: u64 = 65536;

fn lackey<R: BufRead, W: Write + Seek>(l: &mut Lines<R>, w: &mut Writer<W>) -> Out {
    let mut st = ImportStats::default();
    let mut instr = 0u64;
    let mut buf = String::new();
    while let Some(line) = l.next(&mut buf)? {
        st.lines += 1;
        let t = line.trim_start();
        if t.is_empty() || t.starts_with("==") || t.starts_with("--") || t.starts_with("**") {
            st.skipped += 1;
            continue;
        }
        // the first character, whatever its width (a line may begin with any UTF-8 character)
        let (kind, rest) = t.split_at(t.chars().next().map_or(0, char::len_utf8));
        let op = match kind {
            "I" => {
                instr += 1;
                st.instructions += 1;
                st.skipped += 1;
                continue;
            }
            "L" => Op::Load,
            "S" => Op::Store,
            "M" => Op::Modify,
            _ => {
                return Err(perr(
                    &l.path,
                    l.no,
                    format!(
                        "expected a lackey line (`I|L|S|M addr,size`), got `{}`",
                        clip(line)
                    ),
                )
                .into())
            }
        };
        let (a, sz) = rest.trim().split_once(',').ok_or_else(|| {
            perr(
                &l.path,
                l.no,
                format!("expected `addr,size` after `{kind}`, got `{}`", clip(line)),
            )
        })?;
        let addr =
            hex(a).ok_or_else(|| perr(&l.path, l.no, format!("bad hex address `{}`", clip(a))))?;
        let size: u64 = sz
            .trim()
            .parse()
            .map_err(|_| perr(&l.path, l.no, format!("bad size `{}`", clip(sz))))?;
        if size > MAX_LACKEY_ACCESS {
            return Err(perr(
                &l.path,
                l.no,
                format!(
                    "bad size `{size}`: expected at most {MAX_LACKEY_ACCESS} bytes (lackey reports one instruction's access)"
                ),
            )
            .into());
        }
        let first = addr >> 6;
        let last = addr.saturating_add(size.max(1) - 1) >> 6;
        for unit in first..=last {
            w.push(instr, unit, 1, op)?;
        }
    }
    Ok((st, instr))
}

fn clip(s: &str) -> String {
    if s.len() > 60 {
        format!("{}...", &s[..s.floor_char_boundary_compat(60)])
    } else {
        s.to_string()
    }
}

trait FloorBoundary {
    fn floor_char_boundary_compat(&self, i: usize) -> usize;
}
impl FloorBoundary for str {
    fn floor_char_boundary_compat(&self, mut i: usize) -> usize {
        while !self.is_char_boundary(i) {
            i -= 1;
        }
        i
    }
}

/// Whether perf's data-source text says the access was served past the LLC (DRAM, PMEM, CXL
/// or a remote node): the accesses a tiered-memory model sees.
fn past_llc(data_src: &str) -> bool {
    [
        "RAM", "PMEM", "CXL", "Remote", "remote", "L3 miss", "Uncached",
    ]
    .iter()
    .any(|k| data_src.contains(k))
}

/// One `perf mem record` sample as `perf script -F time,event,addr,data_src,weight` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfSample {
    /// Sample time in ns (perf's clock: CLOCK_MONOTONIC when recorded with `-k mono`).
    pub time_ns: u64,
    pub addr: u64,
    /// Served past the LLC (DRAM, PMEM, CXL, a remote node): an LLC miss.
    pub past_llc: bool,
    pub store: bool,
}

/// Parse one line of `perf script` of `perf mem record`:
/// `comm pid [cpu] SECS.USECS: [period] EVENT: ADDR DATA_SRC |OP ..|LVL ..| WEIGHT`.
/// Ok(None) for a blank or comment line; Err says what is missing or malformed.
pub fn perf_mem_sample(line: &str) -> std::result::Result<Option<PerfSample>, String> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let (head, ds_text) = match t.find('|') {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let toks: Vec<&str> = head.split_whitespace().collect();
    let ti = toks.iter().position(|x| {
        x.ends_with(':')
            && x[..x.len() - 1].contains('.')
            && x[..x.len() - 1]
                .chars()
                .all(|c| c.is_ascii_digit() || c == '.')
    });
    let Some(ti) = ti else {
        return Err(format!("no timestamp (`SECS.USECS:`) in `{}`; expected `perf script -F time,event,addr,data_src,weight` output", clip(t)));
    };
    let time = toks[ti].trim_end_matches(':');
    let (s, frac) = time.split_once('.').unwrap_or((time, "0"));
    let secs: u64 = s.parse().map_err(|_| format!("bad time `{time}`"))?;
    let mut f = frac.to_string();
    f.truncate(9);
    while f.len() < 9 {
        f.push('0');
    }
    let frac_ns = f.parse::<u64>().map_err(|_| format!("bad time `{time}`"))?;
    let ns = secs
        .checked_mul(1_000_000_000)
        .and_then(|ns| ns.checked_add(frac_ns))
        .ok_or_else(|| format!("bad time `{time}`: more than 2^64 ns"))?;
    let ei = toks[ti + 1..]
        .iter()
        .position(|x| x.ends_with(':'))
        .map(|i| ti + 1 + i)
        .ok_or_else(|| format!("no `EVENT:` after the time in `{}`", clip(t)))?;
    let event = toks[ei];
    let addr_tok = toks.get(ei + 1).ok_or_else(|| {
        format!(
            "no data address after `{event}` (record with `perf mem record`, print with -F addr)"
        )
    })?;
    let addr = hex(addr_tok).ok_or_else(|| format!("bad hex data address `{}`", clip(addr_tok)))?;
    if ds_text.is_empty() {
        return Err("no data source (`|OP ...|LVL ...|`); print with `perf script -F time,event,addr,data_src,weight`".into());
    }
    Ok(Some(PerfSample {
        time_ns: ns,
        addr,
        past_llc: past_llc(ds_text),
        store: ds_text.contains("OP STORE") || event.contains("store"),
    }))
}

/// Read the LLC-miss samples of a `perf script` file of `perf mem record` as (time_ns, address),
/// streamed; also how many lines were read and how many samples were served before the LLC
/// (skipped). Errors name the file and line.
pub fn perf_llc_misses(path: &Path) -> Result<(Vec<(u64, u64)>, ImportStats)> {
    let name = path.display().to_string();
    let (inp, _) = open_input(&name)?;
    let mut l = Lines {
        inp,
        path: name,
        no: 0,
        raw: Vec::new(),
    };
    let mut st = ImportStats::default();
    let mut out = Vec::new();
    let mut buf = String::new();
    while let Some(line) = l.next(&mut buf)? {
        st.lines += 1;
        match perf_mem_sample(line).map_err(|m| perr(&l.path, l.no, m))? {
            Some(s) if s.past_llc && s.addr != 0 => {
                st.accesses += 1;
                out.push((s.time_ns, s.addr));
            }
            _ => st.skipped += 1,
        }
    }
    if st.accesses == 0 {
        return Err(perr(
            &l.path,
            l.no,
            "no LLC-miss samples (data source past the LLC) in the file; expected `perf script -F time,event,addr,data_src,weight` of `perf mem record`",
        ));
    }
    Ok((out, st))
}

/// perf script of `perf mem record` (see [`perf_mem_sample`]). The stamp is the sample time in
/// ns; only samples served past the LLC are kept (the others are counted as skipped).
fn perf_script<R: BufRead, W: Write + Seek>(l: &mut Lines<R>, w: &mut Writer<W>) -> Out {
    let mut st = ImportStats::default();
    let mut last = 0u64;
    let mut buf = String::new();
    while let Some(line) = l.next(&mut buf)? {
        st.lines += 1;
        let Some(s) = perf_mem_sample(line).map_err(|m| perr(&l.path, l.no, m))? else {
            st.skipped += 1;
            continue;
        };
        if !s.past_llc || s.addr == 0 {
            st.skipped += 1;
            continue;
        }
        let op = if s.store { Op::Store } else { Op::Load };
        last = s.time_ns.max(last);
        w.push(last, s.addr >> 6, 1, op)?;
    }
    Ok((st, last))
}

/// DAMON's access counts are 32-bit (`nr_accesses` of `struct damon_region`); a larger one is a
/// corrupt line (and could overflow the records' counts).
pub(super) fn damon_nr(nr: u64) -> std::result::Result<u64, String> {
    if nr > u64::from(u32::MAX) {
        return Err(format!(
            "nr_accesses {nr} is above {} (DAMON counts are 32-bit)",
            u32::MAX
        ));
    }
    Ok(nr)
}

/// The largest region one DAMON line may import: 64 GiB, 16M records of 4 KiB pages (every page
/// of an accessed region becomes a record). DAMON keeps at most max_nr_regions (1000 by default)
/// regions over a target's mappings and splits them as it monitors, so an accessed region this
/// large is rare in a real recording; a short corrupt line could otherwise name one of up to
/// 2^64 bytes and keep the import writing for hours.
pub(super) const MAX_DAMON_REGION_BYTES: u64 = 64 << 30;

/// Refuse an accessed region larger than [`MAX_DAMON_REGION_BYTES`].
pub(super) fn damon_region(a: u64, b: u64) -> std::result::Result<(), String> {
    if b - a > MAX_DAMON_REGION_BYTES {
        return Err(format!(
            "region {a:x}-{b:x} spans {:.1} GiB, above the {} GiB an accessed region may import as \
             (one record per 4 KiB page); a DAMON recording splits its regions (max_nr_regions), \
             so this line is corrupt or the recording needs more regions",
            (b - a) as f64 / f64::from(1u32 << 30),
            MAX_DAMON_REGION_BYTES >> 30
        ));
    }
    Ok(())
}

pub(super) fn damon_time_ns(s: &str) -> Option<u64> {
    // "104.599 ms", "1 m 2.3 s", "0 ns", or a bare number of ns.
    let toks: Vec<&str> = s.split_whitespace().collect();
    if toks.len() == 1 {
        return toks[0].parse::<f64>().ok().map(|v| v as u64);
    }
    let mut total = 0.0;
    let mut i = 0;
    while i + 1 < toks.len() {
        let v: f64 = toks[i].parse().ok()?;
        let unit = match toks[i + 1] {
            "ns" => 1.0,
            "us" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "d" => 86400e9,
            _ => return None,
        };
        total += v * unit;
        i += 2;
    }
    (i == toks.len()).then_some(total as u64)
}

/// `perf script` of `perf record -e damon:damon_aggregated` (damo's `--output_type perf_script`):
/// `COMM PID [CPU] SECONDS: damon:damon_aggregated: target_id=N nr_regions=N START-END: NR [AGE]`,
/// addresses in decimal, one line per region, stamped with the event's time. Returns
/// (time ns, start, end, nr_accesses).
fn damon_aggregated(t: &str) -> std::result::Result<(u64, u64, u64, u64), String> {
    let (before, after) = t
        .split_once("damon:damon_aggregated:")
        .ok_or("no damon:damon_aggregated event")?;
    let secs = before
        .split_whitespace()
        .last()
        .and_then(|s| s.strip_suffix(':'))
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or("expected the event time (`SECONDS:`) before the event name")?;
    let f: Vec<&str> = after.split_whitespace().collect();
    let range = f
        .iter()
        .position(|x| x.ends_with(':') && x.contains('-'))
        .ok_or("expected `START-END: NR_ACCESSES` after the event")?;
    let (a, b) = f[range]
        .trim_end_matches(':')
        .split_once('-')
        .ok_or("expected `START-END:`")?;
    let (a, b) = match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => (a, b),
        _ => {
            return Err(format!(
                "bad region `{}` (expected decimal addresses)",
                f[range]
            ))
        }
    };
    let nr = f
        .get(range + 1)
        .and_then(|x| x.parse::<u64>().ok())
        .ok_or("expected NR_ACCESSES after the region")?;
    Ok(((secs * 1e9) as u64, a, b, nr))
}

/// `damo report raw`: snapshots of `monitoring_end: TIME` then `START-END( SIZE): NR_ACCESSES`
/// region lines, or `perf script` lines of `damon:damon_aggregated` (damon_aggregated above).
/// Each page of a region with accesses becomes a record with count = the region's nr_accesses
/// (the sampling intervals in which it was seen accessed), stamped with the snapshot's end.
fn damon<R: BufRead, W: Write + Seek>(l: &mut Lines<R>, w: &mut Writer<W>) -> Out {
    let mut st = ImportStats::default();
    let mut now: Option<u64> = None;
    let mut last = 0u64;
    let mut buf = String::new();
    while let Some(line) = l.next(&mut buf)? {
        st.lines += 1;
        let t = line.trim();
        if t.is_empty() || t.contains("damon:damos_before_apply:") {
            st.skipped += 1;
            continue;
        }
        if t.contains("damon:damon_aggregated:") {
            let (ns, a, b, nr) = damon_aggregated(t)
                .map_err(|m| perr(&l.path, l.no, format!("{m}: `{}`", clip(t))))?;
            if b <= a {
                return Err(perr(&l.path, l.no, format!("empty region {a:x}-{b:x}")).into());
            }
            let nr = damon_nr(nr).map_err(|m| perr(&l.path, l.no, m))?;
            if nr == 0 {
                continue;
            }
            damon_region(a, b).map_err(|m| perr(&l.path, l.no, m))?;
            last = ns.max(last);
            for page in a >> 12..b.div_ceil(4096) {
                w.push(last, page, nr, Op::Load)?;
            }
            continue;
        }
        let is_region = t
            .split_once('-')
            .is_some_and(|(a, _)| !a.contains(' ') && hex(a).is_some());
        if !is_region {
            let (k, v) = t.split_once(':').ok_or_else(|| {
                perr(
                    &l.path,
                    l.no,
                    format!("expected `key: value` or a region line, got `{}`", clip(t)),
                )
            })?;
            let k = k.trim();
            match k {
                "monitoring_end" | "end_time" => {
                    let ns = damon_time_ns(v.trim()).ok_or_else(|| {
                        perr(&l.path, l.no, format!("bad time `{}` for {k}", v.trim()))
                    })?;
                    now = Some(ns.max(last));
                }
                "base_time_absolute"
                | "monitoring_start"
                | "monitoring_duration"
                | "target_id"
                | "nr_regions"
                | "start_time"
                | "record_start"
                | "kdamond_idx"
                | "context_idx"
                | "scheme_idx"
                | "intervals" => {}
                _ => {
                    return Err(perr(
                        &l.path,
                        l.no,
                        format!("unknown key `{k}`; expected `damo report raw` output"),
                    )
                    .into())
                }
            }
            st.skipped += 1;
            continue;
        }
        // A region: START-END(SIZE): NR
        let bad = || {
            perr(
                &l.path,
                l.no,
                format!(
                    "expected `START-END( SIZE): NR_ACCESSES`, got `{}`",
                    clip(t)
                ),
            )
        };
        let (range, nr) = t.rsplit_once(':').ok_or_else(bad)?;
        let range = range.split('(').next().ok_or_else(bad)?.trim();
        let (a, b) = range.split_once('-').ok_or_else(bad)?;
        let (a, b) = (hex(a).ok_or_else(bad)?, hex(b).ok_or_else(bad)?);
        if b <= a {
            return Err(perr(&l.path, l.no, format!("empty region {a:x}-{b:x}")).into());
        }
        let nr: u64 = nr
            .split_whitespace()
            .next()
            .unwrap_or("")
            .parse()
            .map_err(|_| bad())?;
        let nr = damon_nr(nr).map_err(|m| perr(&l.path, l.no, m))?;
        let Some(ts) = now else {
            return Err(perr(&l.path, l.no, "region before any `monitoring_end:` line").into());
        };
        if nr == 0 {
            continue;
        }
        damon_region(a, b).map_err(|m| perr(&l.path, l.no, m))?;
        last = ts;
        for page in a >> 12..b.div_ceil(4096) {
            w.push(ts, page, nr, Op::Load)?;
        }
    }
    Ok((st, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{info, Reader};
    use std::io::Read;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tk-import-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    }

    #[test]
    fn lackey_lines_become_line_records() {
        let text = "==1== Lackey\nI  04016e0,3\n L 1000,8\n L 1008,8\nI  04016e3,4\n S 103c,8\n M 2000,4\n";
        let out = tmp("l.tkt");
        let st = import(Format::Lackey, "in", text.as_bytes(), &out).unwrap();
        assert_eq!(st.accesses, 5); // the store straddles lines 0x40 and 0x41
        let mut r = Reader::open(&out).unwrap();
        let a = r.next_record().unwrap().unwrap();
        assert_eq!((a.unit, a.count, a.stamp, a.op), (0x40, 2, 1, Op::Load));
        let b = r.next_record().unwrap().unwrap();
        assert_eq!((b.unit, b.stamp, b.op), (0x40, 2, Op::Store));
        let i = info(&out).unwrap();
        assert_eq!(i.records, 4);
        assert_eq!(i.pages, 2);
        assert_eq!(i.last_stamp, 2);
    }

    /// Issue 19 reproducers: a line that begins with a multibyte character panicked ("end byte
    /// index 1 is not a char boundary"); a 4 GiB access imported as 67M records from one line.
    #[test]
    fn lackey_multibyte_lines_and_huge_sizes_are_errors_naming_the_line() {
        for (text, line, what) in [
            ("\u{e9}\n", 1, "expected a lackey line"),
            (" L 10,8\n\u{e9} 10,8\n", 2, "expected a lackey line"),
            (
                " L 1000,4294967296\n",
                1,
                "bad size `4294967296`: expected at most 65536",
            ),
        ] {
            let out = tmp("mb.tkt");
            let e = import(Format::Lackey, "u.lackey", text.as_bytes(), &out)
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("u.lackey: line {line}")), "{e}");
            assert!(e.contains(what), "{e}");
            assert!(!out.exists(), "no output file is left behind");
        }
        // the widest real access still imports, and an address at the top does not overflow
        let out = tmp("top.tkt");
        let st = import(
            Format::Lackey,
            "u.lackey",
            " L 1000,65536\n S ffffffffffffffff,8\n".as_bytes(),
            &out,
        )
        .unwrap();
        assert_eq!(st.accesses, 1024 + 1);
    }

    #[test]
    fn lackey_garbage_names_the_line() {
        let e = import(
            Format::Lackey,
            "prog.lackey",
            "I  0400,3\n L 10,8\nhello\n".as_bytes(),
            &tmp("g.tkt"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("prog.lackey: line 3:"), "{e}");
        let e = import(Format::Lackey, "p", " L zz,8\n".as_bytes(), &tmp("g2.tkt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("hex"), "{e}");
    }

    #[test]
    fn perf_keeps_samples_past_the_llc() {
        let text = "\
  stream  1234 [003]  100.000001:      cpu/mem-loads,ldlat=30/P:     7f0000001040         5080144 |OP LOAD|LVL L1 hit|SNP None|TLB L1 or L2 hit|LCK No|BLK  N/A       4
  stream  1234 [003]  100.000002:      cpu/mem-loads,ldlat=30/P:     7f0000002040         6880144 |OP LOAD|LVL Local RAM or RAM hit|SNP Hit|TLB L1 or L2 hit|LCK No|BLK  N/A     312
  stream  1234 [003]  100.000003:      cpu/mem-loads,ldlat=30/P:     7f0000003080         6880144 |OP LOAD|LVL Remote RAM (1 hop) hit|SNP Hit|TLB L1 or L2 hit|LCK No|BLK  N/A   410
";
        let out = tmp("p.tkt");
        let st = import(Format::PerfScript, "perf.txt", text.as_bytes(), &out).unwrap();
        assert_eq!((st.accesses, st.skipped), (2, 1));
        let mut r = Reader::open(&out).unwrap();
        let a = r.next_record().unwrap().unwrap();
        assert_eq!((a.unit, a.stamp), (0x7f0000002040 >> 6, 100_000_002_000));
        let e = import(
            Format::PerfScript,
            "perf.txt",
            "  x 1 [0] 1.5: ev: zz 1 |OP LOAD|LVL RAM hit|\n".as_bytes(),
            &tmp("p2.tkt"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 1") && e.contains("hex"), "{e}");
    }

    #[test]
    fn damon_regions_become_page_records() {
        let text = "\
base_time_absolute: 8 m 59.809 s

monitoring_start:                0 ns
monitoring_end:            104.599 ms
monitoring_duration:       104.599 ms
target_id: 0
nr_regions: 2
563ebaa00000-563ebaa03000(  12.000 KiB):        5
7f938d7e1000-7f938d7e2000(   4.000 KiB):        0
";
        let out = tmp("d.tkt");
        let st = import(Format::Damon, "damo.txt", text.as_bytes(), &out).unwrap();
        assert_eq!((st.records, st.accesses), (3, 15));
        let i = info(&out).unwrap();
        assert_eq!(i.pages, 3);
        assert_eq!(i.last_stamp, 104_599_000);
        let e = import(
            Format::Damon,
            "damo.txt",
            "monitoring_end: 1 ms\n10-5(1 B): 3\n".as_bytes(),
            &tmp("d2.tkt"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 2") && e.contains("empty region"), "{e}");
    }

    /// A short line naming a huge accessed region is refused at once, in every DAMON format,
    /// instead of importing one record per page for hours; 64 GiB still imports.
    #[test]
    fn huge_damon_regions_are_refused() {
        let raw = "monitoring_end: 1 ms\n0-ffffffffffff(1 B): 3\n";
        let perf =
            " k 1 [0] 1.5: damon:damon_aggregated: target_id=1 nr_regions=1 0-281474976710655: 3\n";
        let json = r#"[{"snapshots": [{"end_time": 1, "regions": [{"start": 0, "end": 281474976710655, "nr_accesses": {"samples": 3}}]}]}]"#;
        for (name, text) in [("raw.txt", raw), ("perf.txt", perf), ("d.json", json)] {
            let out = tmp(&format!("huge-{name}.tkt"));
            let e = import(Format::Damon, name, text.as_bytes(), &out)
                .unwrap_err()
                .to_string();
            assert!(e.contains(name) && e.contains("64 GiB"), "{e}");
            assert!(!out.exists(), "{name}: no partial output");
        }
        assert!(damon_region(0, MAX_DAMON_REGION_BYTES).is_ok());
        assert!(damon_region(0, MAX_DAMON_REGION_BYTES + 1).is_err());
        let ok = "monitoring_end: 1 ms\n0-40000000(1 GiB): 3\n";
        let st = import(Format::Damon, "ok.txt", ok.as_bytes(), &tmp("ok.tkt")).unwrap();
        assert_eq!(st.records, 1 << 18);
    }

    #[test]
    fn damon_aggregated_perf_script_lines_become_page_records() {
        let text = "\
 kdamond.0  4452 [000] 82877.315633: damon:damon_aggregated: target_id=18446623435582458880 nr_regions=2 94819803136-94819815424: 5 3
 kdamond.0  4452 [000] 82877.315633: damon:damon_aggregated: target_id=18446623435582458880 nr_regions=2 140282712608768-140282712612864: 0 9
 kdamond.0  4452 [000] 82877.415633: damon:damos_before_apply: ctx_idx=0 scheme_idx=0 target_idx=0 nr_regions=1 1-2: 0 1
 kdamond.0  4452 [000] 82877.415700: damon:damon_aggregated: target_id=18446623435582458880 nr_regions=1 94819803136-94819807232: 2
";
        let out = tmp("dp.tkt");
        let st = import(Format::Damon, "damon.perf.txt", text.as_bytes(), &out).unwrap();
        assert_eq!((st.records, st.accesses, st.skipped), (4, 17, 1));
        assert_eq!(info(&out).unwrap().last_stamp, 82_877_415_700_000);
        let e = import(
            Format::Damon,
            "damon.perf.txt",
            " kdamond.0 1 [0] 1.5: damon:damon_aggregated: target_id=1 nr_regions=1 0x10-0x20: 1\n"
                .as_bytes(),
            &tmp("dp2.tkt"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 1") && e.contains("decimal"), "{e}");
    }

    /// Found by inspection while fuzzing (the import fuzz targets panic on them without the
    /// fixes; the inputs are in fuzz/corpus): a perf time past 2^64 ns overflowed, and DAMON
    /// counts past 32 bits overflowed a run's count (issue 19).
    #[test]
    fn huge_times_and_counts_are_errors_naming_the_line() {
        for (fmt, text, want) in [
            (
                Format::PerfScript,
                "  s 1 [0] 99999999999.5: ev: 7f0000002040 1 |OP LOAD|LVL RAM hit|\n",
                "in: line 1: bad time `99999999999.5`: more than 2^64 ns",
            ),
            (
                Format::Damon,
                "monitoring_end: 1 ms\n0-1000(4 KiB): 5\n0-1000(4 KiB): 18446744073709551615\n",
                "in: line 3: nr_accesses 18446744073709551615 is above 4294967295",
            ),
            (
                Format::Damon,
                " k 1 [0] 1.5: damon:damon_aggregated: target_id=1 nr_regions=1 0-4096: 4294967296\n",
                "in: line 1: nr_accesses 4294967296 is above",
            ),
            (
                Format::Damon,
                r#"[{"snapshots": [{"end_time": 1, "regions": [{"start": 0, "end": 4096,
                    "nr_accesses": {"samples": 4294967296}}]}]}]"#,
                "region 0: nr_accesses 4294967296 is above",
            ),
        ] {
            let e = import(fmt, "in", text.as_bytes(), &tmp("huge.tkt"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want) && e.starts_with("in: "), "{e}");
        }
        // The largest DAMON count imports.
        let text = "monitoring_end: 1 ms\n0-1000(4 KiB): 4294967295\n0-1000(4 KiB): 4294967295\n";
        let st = import(Format::Damon, "in", text.as_bytes(), &tmp("max.tkt")).unwrap();
        assert_eq!(st.accesses, 2 * u64::from(u32::MAX));
    }

    fn gzip(b: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    /// A compressed input can expand into one line as large as memory (zstd frames of a
    /// repeated byte): a line past MAX_LINE_BYTES is an error naming the input and the line,
    /// and the importer holds at most that much of it.
    #[test]
    fn overlong_lines_are_errors_naming_the_line() {
        let mut text = b"\n".to_vec();
        text.extend(std::iter::repeat_n(b'7', MAX_LINE_BYTES + 10));
        text.push(b'\n');
        for (fmt, name) in [
            (Format::Lackey, "lk"),
            (Format::PerfScript, "pf"),
            (Format::Damon, "dm"),
        ] {
            let zs = tmp(&format!("{name}-long.zst"));
            std::fs::write(&zs, zstd::encode_all(text.as_slice(), 3).unwrap()).unwrap();
            let e = import_file(fmt, &zs, &tmp(&format!("{name}-long.tkt")))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with(&format!("{}: line 2: line longer than", zs.display())),
                "{e}"
            );
        }
        // A line of exactly MAX_LINE_BYTES (with its newline after) is read as a line.
        let mut text = vec![b' '; MAX_LINE_BYTES - 10];
        text.extend(b" L 1000,8\n");
        let st = import(Format::Lackey, "in", text.as_slice(), &tmp("exact.tkt")).unwrap();
        assert_eq!(st.accesses, 1);
    }

    /// The shipped lackey text of a shipped program (zstd-compressed in examples/traces).
    fn shipped_text(name: &str) -> Vec<u8> {
        let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/traces")
            .join(format!("{name}.lackey.zst"));
        let mut d = zstd::stream::read::Decoder::new(std::fs::File::open(p).unwrap()).unwrap();
        d.window_log_max(31).unwrap();
        let mut v = Vec::new();
        d.read_to_end(&mut v).unwrap();
        v
    }

    fn import_file(fmt: Format, input: &Path, out: &Path) -> Result<ImportStats> {
        import_path(fmt, input.to_str().unwrap(), out)
    }

    #[test]
    fn gzip_and_zstd_inputs_import_as_their_plain_text() {
        let lackey = "==1== Lackey\nI  04016e0,3\n L 1000,8\n L 1008,8\nI  04016e3,4\n S 103c,8\n M 2000,4\n"
            .repeat(50);
        let perf = "  s 1 [003] 100.000002: cpu/mem-loads/P: 7f0000002040 6880144 |OP LOAD|LVL Local RAM hit|SNP Hit| 312\n"
            .repeat(20);
        let damon = "monitoring_end: 104.599 ms\n563ebaa00000-563ebaa03000( 12.000 KiB): 5\n";
        for (fmt, text, name) in [
            (Format::Lackey, lackey.as_str(), "lk"),
            (Format::PerfScript, perf.as_str(), "pf"),
            (Format::Damon, damon, "dm"),
        ] {
            let plain = tmp(&format!("{name}.txt"));
            std::fs::write(&plain, text).unwrap();
            // Names that say nothing (or the wrong thing): the content decides.
            let gz = tmp(&format!("{name}.gz.txt"));
            std::fs::write(&gz, gzip(text.as_bytes())).unwrap();
            let zs = tmp(&format!("{name}.gz"));
            std::fs::write(&zs, zstd::encode_all(text.as_bytes(), 3).unwrap()).unwrap();
            let mut outs = Vec::new();
            for (inp, c) in [
                (&plain, Compression::None),
                (&gz, Compression::Gzip),
                (&zs, Compression::Zstd),
            ] {
                let out = tmp(&format!("{name}-{}.tkt", c.name()));
                let st = import_file(fmt, inp, &out).unwrap();
                assert_eq!(st.compression, c);
                outs.push(std::fs::read(&out).unwrap());
            }
            assert_eq!(outs[0], outs[1], "{name}: gzip");
            assert_eq!(outs[0], outs[2], "{name}: zstd");
        }
        // Two gzip members back to back (`cat a.gz b.gz`) read as one text.
        let two = [gzip(lackey.as_bytes()), gzip(lackey.as_bytes())].concat();
        let p = tmp("two.gz");
        std::fs::write(&p, two).unwrap();
        let st = import_file(Format::Lackey, &p, &tmp("two.tkt")).unwrap();
        assert_eq!(st.lines, 2 * 7 * 50);
    }

    #[test]
    fn a_failed_import_leaves_no_output() {
        let d = std::env::temp_dir().join(format!("tk-import-fail-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        // 200K good lines, then a bad one: the writer has written plenty by then.
        let mut text = "I  0400,3\n L 10000,8\n S 20000,8\n".repeat(100_000);
        text.push_str("garbage\n");
        let out = d.join("out.tkt");
        let e = import(Format::Lackey, "in", text.as_bytes(), &out)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("in: line 300001:"), "{e}");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0, "left behind");
        // A corrupt gzip stream: an error, nothing left.
        let mut gz = gzip(text.as_bytes());
        let n = gz.len();
        gz[n / 2] ^= 0xff;
        gz.truncate(n - 100);
        let inp = d.join("bad.gz");
        std::fs::write(&inp, gz).unwrap();
        assert!(import_file(Format::Lackey, &inp, &out).is_err());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "left behind");
        // A good import replaces a previous output only when it is complete.
        std::fs::write(&out, b"old").unwrap();
        assert!(import(Format::Lackey, "in", text.as_bytes(), &out).is_err());
        assert_eq!(std::fs::read(&out).unwrap(), b"old");
        // Binary or other compressed input: a clear message.
        std::fs::write(&inp, [0xfd, b'7', b'z', b'X', b'Z', 0, 1, 2]).unwrap();
        let e = import_file(Format::Lackey, &inp, &out)
            .unwrap_err()
            .to_string();
        assert!(e.contains("xz-compressed"), "{e}");
        std::fs::write(&inp, [b' ', b'L', 0xff, 0xfe, b'\n']).unwrap();
        let e = import_file(Format::Lackey, &inp, &out)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("not text"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn lackey_without_instruction_lines_has_no_stamps() {
        let out = tmp("noi.tkt");
        let st = import(
            Format::Lackey,
            "in",
            " L 1000,8\n S 2000,8\n".as_bytes(),
            &out,
        )
        .unwrap();
        assert_eq!(st.instructions, 0);
        assert_eq!(info(&out).unwrap().header.stamp, StampKind::None);
        let st = import(Format::Lackey, "in", "I 0,1\n L 1000,8\n".as_bytes(), &out).unwrap();
        assert_eq!(st.instructions, 1);
        assert_eq!(info(&out).unwrap().header.stamp, StampKind::Instructions);
    }

    /// The shipped programs' lackey text imports, from zstd and from gzip, to the same trace,
    /// no larger than the gzipped text (`gzip -6`, its default), and the shipped traces too.
    #[test]
    fn shipped_traces_are_no_larger_than_their_gzipped_text() {
        let d = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces");
        for name in ["pchase", "stream"] {
            let text = shipped_text(name);
            let gz = gzip(&text);
            let p = tmp(&format!("{name}.lackey.gz"));
            std::fs::write(&p, &gz).unwrap();
            let out = tmp(&format!("{name}-gz.tkt"));
            let st = import_file(Format::Lackey, &p, &out).unwrap();
            assert_eq!(st.compression, Compression::Gzip);
            let zst = d.join(format!("{name}.lackey.zst"));
            let out2 = tmp(&format!("{name}-zst.tkt"));
            import_file(Format::Lackey, &zst, &out2).unwrap();
            let (a, b) = (std::fs::read(&out).unwrap(), std::fs::read(&out2).unwrap());
            assert_eq!(a, b, "{name}");
            let shipped = std::fs::metadata(d.join(format!("{name}.tkt")))
                .unwrap()
                .len();
            assert!(
                (a.len() as u64) <= gz.len() as u64 && shipped <= gz.len() as u64,
                "{name}: tkt {} B, shipped {shipped} B, gzipped text {} B",
                a.len(),
                gz.len()
            );
        }
    }

    #[test]
    fn empty_input_is_an_error() {
        let e = import(
            Format::Lackey,
            "x",
            "==1== nothing\n".as_bytes(),
            &tmp("e.tkt"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no memory accesses"), "{e}");
        for f in [Format::Lackey, Format::PerfScript, Format::Damon] {
            let e = import(f, "x", "".as_bytes(), &tmp("e0.tkt"))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("x: the input is empty; expected "), "{e}");
        }
    }
}
