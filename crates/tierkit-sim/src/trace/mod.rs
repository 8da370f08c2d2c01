//! Memory-access traces: one compact binary format (docs/traces.md), streamed importers for
//! valgrind lackey, `perf script` of `perf mem record` and `damo report raw` (plain, gzip or zstd,
//! told apart by their first bytes), and replay as a workload (per-window empirical page
//! distributions with an LLC model in front).
//!
//! Format, version 2 (little-endian):
//!
//! ```text
//! header, 64 bytes (not compressed)
//!   0  magic  "TKTRACE\0"
//!   8  u16    version (2; version 1 files, whose records are not compressed, still read)
//!  10  u8     unit_shift: record units are addr >> unit_shift (6 = cache lines, 12 = 4 KiB)
//!  11  u8     stamp kind: 0 = instructions retired, 1 = nanoseconds, 2 = none (the trace had
//!             no instruction lines: every stamp is 0; compute time is modelled per access)
//!  12  u8     source: 0 = lackey (every access; a cache model applies), 1 = perf mem samples
//!             (memory accesses past the LLC), 2 = DAMON regions, 3 = other
//!  13  u8     flags: bit 0 = complete (the writer finished and patched the counts)
//!  14  u16    reserved (0)
//!  16  u64    records
//!  24  u64    accesses (sum of the records' counts)
//!  32  u64    last stamp
//!  40  24 B   reserved (0)
//! records: version 2, one zstd frame (with its checksum) holding the record stream; version 1,
//! the record stream as it is. Each record:
//!   u8      tag: bits 0-1 op (0 load, 1 store, 2 modify = load + store), bit 2 count follows
//!   varint  stamp delta from the previous record (LEB128)
//!   varint  unit delta from the previous record, zigzag-encoded
//!   varint  count (only if tag bit 2; otherwise 1)
//! ```
//!
//! A record is a run of `count` accesses to one unit that began at `stamp`. Byte offsets in a
//! version 2 file's errors count the header and then the decompressed record stream.

mod damo;
pub mod import;
pub mod replay;

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

pub const MAGIC: &[u8; 8] = b"TKTRACE\0";
/// The version the writer writes.
pub const VERSION: u16 = 2;
/// The versions the reader reads (1: records not compressed).
pub const READS: [u16; 2] = [1, 2];
/// zstd level of the record stream. Level 9 saves 3% more on the shipped pointer chase but
/// compresses random traces at a fifth of the speed and decompresses them at two thirds.
pub const ZSTD_LEVEL: i32 = 3;
/// Files from this size on are decompressed by a helper thread while the reader's thread
/// replays (BENCHMARKS.md: on short traces the thread's start and the wait for its first chunk,
/// and on a loaded machine the wait for a core, cost more than decompressing in line).
const PIPE_BYTES: u64 = 4 << 20;
/// Decompressed chunk a [`Reader`]'s helper thread hands over at a time: the first, and the
/// largest (each is twice the one before).
const FIRST_CHUNK: usize = 1 << 14;
const CHUNK: usize = 1 << 17;
pub const HEADER_BYTES: usize = 64;

/// A bad or unreadable trace, with where it went wrong.
#[derive(Debug, Error)]
pub enum TraceError {
    #[error("{path}: {msg}")]
    Io { path: String, msg: String },
    #[error("{path}: byte {offset}: {msg}")]
    Format {
        path: String,
        offset: u64,
        msg: String,
    },
    #[error("{path}: line {line}: {msg}")]
    Parse {
        path: String,
        line: u64,
        msg: String,
    },
}

pub type Result<T> = std::result::Result<T, TraceError>;

fn io_err(path: &Path, e: impl std::fmt::Display) -> TraceError {
    TraceError::Io {
        path: path.display().to_string(),
        msg: e.to_string(),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Load = 0,
    Store = 1,
    Modify = 2,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StampKind {
    Instructions = 0,
    Nanoseconds = 1,
    /// No stamps (a lackey trace without its `I` lines): compute time is modelled per access.
    None = 2,
}

impl StampKind {
    pub fn name(self) -> &'static str {
        match self {
            StampKind::Instructions => "instructions",
            StampKind::Nanoseconds => "ns",
            StampKind::None => "none",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Lackey = 0,
    PerfMem = 1,
    Damon = 2,
    Other = 3,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::Lackey => "lackey",
            Source::PerfMem => "perf-mem",
            Source::Damon => "damon",
            Source::Other => "other",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u16,
    pub unit_shift: u8,
    pub stamp: StampKind,
    pub source: Source,
    pub complete: bool,
    pub records: u64,
    pub accesses: u64,
    pub last_stamp: u64,
}

impl Header {
    pub fn new(unit_shift: u8, stamp: StampKind, source: Source) -> Self {
        Header {
            version: VERSION,
            unit_shift,
            stamp,
            source,
            complete: false,
            records: 0,
            accesses: 0,
            last_stamp: 0,
        }
    }

    /// Whether the records carry time: not for a trace imported without stamps (a lackey trace
    /// without `I` lines; a version 1 file of one has instruction stamps that are all 0).
    pub fn has_stamps(&self) -> bool {
        match self.stamp {
            StampKind::None => false,
            StampKind::Instructions => !(self.source == Source::Lackey && self.last_stamp == 0),
            StampKind::Nanoseconds => true,
        }
    }

    fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[..8].copy_from_slice(MAGIC);
        b[8..10].copy_from_slice(&self.version.to_le_bytes());
        b[10] = self.unit_shift;
        // Version 1 has no kind for "no stamps": such a trace is written as instruction stamps
        // that are all 0 (which `has_stamps` reads as none for a lackey trace, the only kind of
        // trace without stamps). Kind 2 there made a file the reader refuses.
        b[11] = match (self.version, self.stamp) {
            (1, StampKind::None) => StampKind::Instructions as u8,
            (_, k) => k as u8,
        };
        b[12] = self.source as u8;
        b[13] = self.complete as u8;
        b[16..24].copy_from_slice(&self.records.to_le_bytes());
        b[24..32].copy_from_slice(&self.accesses.to_le_bytes());
        b[32..40].copy_from_slice(&self.last_stamp.to_le_bytes());
        b
    }

    fn decode(path: &str, b: &[u8]) -> Result<Header> {
        let bad = |offset: u64, msg: String| TraceError::Format {
            path: path.to_string(),
            offset,
            msg,
        };
        if b.len() < HEADER_BYTES {
            return Err(bad(
                b.len() as u64,
                format!(
                    "truncated header: {} of {HEADER_BYTES} bytes; not a tierkit trace?",
                    b.len()
                ),
            ));
        }
        if &b[..8] != MAGIC {
            return Err(bad(
                0,
                "not a tierkit trace (magic is not \"TKTRACE\\0\"); convert with `tierkit trace import`".into(),
            ));
        }
        let version = u16::from_le_bytes([b[8], b[9]]);
        if !READS.contains(&version) {
            return Err(bad(
                8,
                format!(
                    "trace format version {version}; this tierkit reads versions 1 and 2{}",
                    if version > VERSION {
                        " (a newer tierkit wrote it: upgrade, or import the input again)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let unit_shift = b[10];
        if !(3..=30).contains(&unit_shift) {
            return Err(bad(
                10,
                format!("unit_shift {unit_shift} out of range 3..=30"),
            ));
        }
        let stamp = match b[11] {
            0 => StampKind::Instructions,
            1 => StampKind::Nanoseconds,
            2 if version >= 2 => StampKind::None,
            k => return Err(bad(11, format!("unknown stamp kind {k} (0-2)"))),
        };
        let source = match b[12] {
            0 => Source::Lackey,
            1 => Source::PerfMem,
            2 => Source::Damon,
            3 => Source::Other,
            k => return Err(bad(12, format!("unknown source {k} (0-3)"))),
        };
        let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        Ok(Header {
            version,
            unit_shift,
            stamp,
            source,
            complete: b[13] & 1 == 1,
            records: u64_at(16),
            accesses: u64_at(24),
            last_stamp: u64_at(32),
        })
    }
}

/// One run of accesses to one unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub stamp: u64,
    pub unit: u64,
    pub count: u64,
    pub op: Op,
}

fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Where a writer's record bytes go: the file itself (version 1) or a zstd frame (version 2).
enum Sink<W: Write> {
    Raw(W),
    Zstd(zstd::stream::write::Encoder<'static, W>),
}

impl<W: Write> Write for Sink<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::Raw(w) => w.write(b),
            Sink::Zstd(z) => z.write(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::Raw(w) => w.flush(),
            Sink::Zstd(z) => z.flush(),
        }
    }
}

impl<W: Write> Sink<W> {
    /// End the frame (version 2) and hand back the file.
    fn finish(self) -> std::io::Result<W> {
        match self {
            Sink::Raw(w) => Ok(w),
            Sink::Zstd(z) => z.finish(),
        }
    }
}

/// Streams records into a trace, collapsing consecutive accesses of one op to one unit. Writes
/// the header's version: 2 (records compressed) unless the header asks for 1.
pub struct Writer<W: Write + Seek> {
    out: BufWriter<Sink<W>>,
    header: Header,
    buf: Vec<u8>,
    prev_stamp: u64,
    prev_unit: u64,
    pending: Option<Record>,
}

impl Writer<File> {
    pub fn create(path: &Path, header: Header) -> Result<Self> {
        let f = File::create(path).map_err(|e| io_err(path, format!("cannot create: {e}")))?;
        Writer::new(f, header).map_err(|e| io_err(path, e))
    }
}

impl<W: Write + Seek> Writer<W> {
    pub fn new(mut w: W, header: Header) -> std::io::Result<Self> {
        if !READS.contains(&header.version) {
            return Err(std::io::Error::other(format!(
                "cannot write trace format version {}",
                header.version
            )));
        }
        w.write_all(&header.encode())?;
        let sink = if header.version == 1 {
            Sink::Raw(w)
        } else {
            let mut z = zstd::stream::write::Encoder::new(w, ZSTD_LEVEL)?;
            z.include_checksum(true)?;
            Sink::Zstd(z)
        };
        Ok(Writer {
            out: BufWriter::with_capacity(1 << 16, sink),
            header,
            buf: Vec::with_capacity(32),
            prev_stamp: 0,
            prev_unit: 0,
            pending: None,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Change the stamp kind the header will carry (an importer that found no stamps).
    pub fn set_stamp_kind(&mut self, k: StampKind) {
        self.header.stamp = k;
    }

    /// Add `count` accesses to `unit` at `stamp` (stamps must not decrease).
    pub fn push(&mut self, stamp: u64, unit: u64, count: u64, op: Op) -> std::io::Result<()> {
        if count == 0 {
            return Ok(());
        }
        if let Some(p) = &mut self.pending {
            if p.unit == unit && p.op == op {
                // A run whose count would overflow u64 goes on in a second record.
                if let Some(c) = p.count.checked_add(count) {
                    p.count = c;
                    return Ok(());
                }
            }
            let p = *p;
            self.emit(p)?;
        }
        self.pending = Some(Record {
            stamp: stamp.max(self.prev_stamp),
            unit,
            count,
            op,
        });
        Ok(())
    }

    fn emit(&mut self, r: Record) -> std::io::Result<()> {
        self.buf.clear();
        let tag = r.op as u8 | if r.count > 1 { 4 } else { 0 };
        self.buf.push(tag);
        put_varint(&mut self.buf, r.stamp - self.prev_stamp);
        put_varint(
            &mut self.buf,
            zigzag(r.unit.wrapping_sub(self.prev_unit) as i64),
        );
        if r.count > 1 {
            put_varint(&mut self.buf, r.count);
        }
        self.out.write_all(&self.buf)?;
        self.prev_stamp = r.stamp;
        self.prev_unit = r.unit;
        self.header.records += 1;
        // The header's total is a summary: it saturates where the records' counts cannot.
        self.header.accesses = self.header.accesses.saturating_add(r.count);
        Ok(())
    }

    /// Flush the last run, end the compressed frame, patch the header's counts and mark the
    /// trace complete; returns the header and the file.
    fn finish_inner(mut self, last_stamp: u64) -> std::io::Result<(Header, W)> {
        if let Some(p) = self.pending.take() {
            self.emit(p)?;
        }
        self.header.last_stamp = last_stamp.max(self.prev_stamp);
        self.header.complete = true;
        let mut w = self
            .out
            .into_inner()
            .map_err(|e| e.into_error())?
            .finish()?;
        w.seek(SeekFrom::Start(0))?;
        w.write_all(&self.header.encode())?;
        w.flush()?;
        Ok((self.header, w))
    }

    /// Flush the last run, patch the header's counts and mark the trace complete.
    pub fn finish(self, last_stamp: u64) -> std::io::Result<Header> {
        self.finish_inner(last_stamp).map(|(h, _)| h)
    }

    /// [`Writer::finish`], handing back the writer's output too (an in-memory trace).
    pub fn finish_into(self, last_stamp: u64) -> std::io::Result<(Header, W)> {
        self.finish_inner(last_stamp)
    }
}

/// Where a reader's record bytes come from: the file (version 1) or its zstd frame (version
/// 2), decompressed in line or by a helper thread.
enum Body<R: Read> {
    Raw(R),
    Zstd(zstd::stream::read::Decoder<'static, std::io::BufReader<R>>),
    Thread(Pipe),
}

impl<R: Read> Read for Body<R> {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Body::Raw(r) => r.read(b),
            Body::Zstd(z) => z.read(b),
            Body::Thread(_) => {
                unreachable!("a piped body hands over whole chunks (Reader::refill)")
            }
        }
    }
}

/// A helper thread that decompresses a version 2 file's records chunk by chunk, a few chunks
/// ahead of the reader, so the reader's thread spends no time in zstd (a core is usually free
/// while a trace is replayed before a run). Chunks go back to it for reuse; dropping the pipe
/// stops it.
struct Pipe {
    full: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    empty: std::sync::mpsc::SyncSender<Vec<u8>>,
}

impl Pipe {
    fn start<R: Read + Send + 'static>(inp: R) -> std::io::Result<Pipe> {
        let mut z = zstd::stream::read::Decoder::with_buffer(std::io::BufReader::with_capacity(
            1 << 20,
            inp,
        ))?;
        let (full_tx, full) = std::sync::mpsc::sync_channel::<std::io::Result<Vec<u8>>>(4);
        let (empty, empty_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
        std::thread::Builder::new()
            .name("tkt-zstd".into())
            .spawn(move || {
                // Small chunks first, so the reader starts at once (a short trace is only a few
                // chunks), then larger ones.
                let mut size = FIRST_CHUNK;
                loop {
                    let mut chunk = empty_rx.try_recv().unwrap_or_default();
                    chunk.resize(size, 0);
                    let mut n = 0;
                    let res = loop {
                        match z.read(&mut chunk[n..]) {
                            Ok(0) => break Ok(()),
                            Ok(k) => {
                                n += k;
                                if n == size {
                                    break Ok(());
                                }
                            }
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => break Err(e),
                        }
                    };
                    chunk.truncate(n);
                    let end = n == 0 || res.is_err();
                    let msg = match res {
                        Ok(()) => Ok(chunk),
                        Err(e) => Err(e),
                    };
                    // An empty chunk ends the stream; the reader gone ends the thread.
                    if full_tx.send(msg).is_err() || end {
                        return;
                    }
                    size = (size * 2).min(CHUNK);
                }
            })?;
        Ok(Pipe { full, empty })
    }
}

/// Streams records out of a trace file; errors carry the byte offset (for version 2: the
/// header's 64 bytes, then the offset in the decompressed records).
pub struct Reader<R: Read> {
    path: String,
    inp: Body<R>,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    pub header: Header,
    offset: u64,
    read: u64,
    stamp: u64,
    unit: u64,
}

impl Reader<File> {
    /// Open a trace file. A version 2 file's records are decompressed in line, or from
    /// [`PIPE_BYTES`] on by a helper thread.
    pub fn open(path: &Path) -> Result<Self> {
        let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
        Reader::open_with(path, bytes >= PIPE_BYTES)
    }

    /// [`Reader::open`], with or without the helper thread.
    fn open_with(path: &Path, piped: bool) -> Result<Self> {
        let mut f = File::open(path).map_err(|e| io_err(path, format!("cannot open: {e}")))?;
        let name = path.display().to_string();
        let header = read_header(&name, &mut f)?;
        let body = if header.version == 1 {
            Body::Raw(f)
        } else if piped {
            Body::Thread(Pipe::start(f).map_err(|e| io_err(path, e))?)
        } else {
            Body::Zstd(zstd::stream::read::Decoder::new(f).map_err(|e| io_err(path, e))?)
        };
        Ok(Reader::with_body(name, header, body))
    }
}

/// Read and check a trace's header (the stream is left at the records).
fn read_header(path: &str, inp: &mut impl Read) -> Result<Header> {
    let mut b = Vec::with_capacity(HEADER_BYTES);
    inp.take(HEADER_BYTES as u64)
        .read_to_end(&mut b)
        .map_err(|e| TraceError::Io {
            path: path.to_string(),
            msg: e.to_string(),
        })?;
    let header = Header::decode(path, &b)?;
    if !header.complete {
        return Err(TraceError::Format {
            path: path.to_string(),
            offset: 13,
            msg: "incomplete trace (the writer did not finish; interrupted import?)".into(),
        });
    }
    Ok(header)
}

impl<R: Read> Reader<R> {
    /// Read a trace from a stream (version 2 records decompressed in line).
    pub fn new(path: String, mut inp: R) -> Result<Self> {
        let header = read_header(&path, &mut inp)?;
        let body = if header.version == 1 {
            Body::Raw(inp)
        } else {
            Body::Zstd(
                zstd::stream::read::Decoder::new(inp).map_err(|e| TraceError::Io {
                    path: path.clone(),
                    msg: e.to_string(),
                })?,
            )
        };
        Ok(Reader::with_body(path, header, body))
    }

    fn with_body(path: String, header: Header, inp: Body<R>) -> Self {
        Reader {
            path,
            inp,
            buf: vec![0u8; 1 << 16],
            pos: 0,
            len: 0,
            header,
            offset: HEADER_BYTES as u64,
            read: 0,
            stamp: 0,
            unit: 0,
        }
    }

    fn err(&self, offset: u64, msg: impl Into<String>) -> TraceError {
        TraceError::Format {
            path: self.path.clone(),
            offset,
            msg: msg.into(),
        }
    }

    /// Refill the buffer; Ok(false) at end of file.
    #[cold]
    fn refill(&mut self) -> Result<bool> {
        if let Body::Thread(p) = &self.inp {
            let got = match p.full.recv() {
                Ok(Ok(chunk)) => chunk,
                Ok(Err(e)) => {
                    return Err(self.err(
                        self.offset,
                        format!("corrupt or truncated compressed records ({e})"),
                    ))
                }
                // The thread ended after the last chunk.
                Err(_) => Vec::new(),
            };
            let old = std::mem::replace(&mut self.buf, got);
            let _ = p.empty.try_send(old);
            self.pos = 0;
            self.len = self.buf.len();
            return Ok(self.len > 0);
        }
        loop {
            match self.inp.read(&mut self.buf) {
                Ok(n) => {
                    self.pos = 0;
                    self.len = n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) if matches!(self.inp, Body::Zstd(_)) => {
                    return Err(self.err(
                        self.offset,
                        format!("corrupt or truncated compressed records ({e})"),
                    ))
                }
                Err(e) => return Err(self.err(self.offset, e.to_string())),
            }
        }
    }

    #[inline]
    fn try_byte(&mut self) -> Result<Option<u8>> {
        if self.pos == self.len && !self.refill()? {
            return Ok(None);
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        self.offset += 1;
        Ok(Some(b))
    }

    #[inline]
    fn byte(&mut self, start: u64) -> Result<u8> {
        match self.try_byte()? {
            Some(b) => Ok(b),
            None => Err(self.err(
                start,
                format!(
                    "truncated record {} of {} (file ends mid-record)",
                    self.read + 1,
                    self.header.records
                ),
            )),
        }
    }

    #[inline]
    fn varint(&mut self, start: u64) -> Result<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte(start)?;
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.err(start, "varint longer than 10 bytes (corrupt record)"))
    }

    /// The next record, None at a clean end; an error if the file is corrupt or truncated.
    #[inline]
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        // Fast path: a whole record (at most 31 bytes) is in the buffer.
        if self.len - self.pos >= 31 && self.read < self.header.records {
            let b = &self.buf[self.pos..self.pos + 31];
            let tag = b[0];
            if tag & !7 == 0 && tag & 3 != 3 {
                let mut i = 1;
                let mut vals = [0u64; 3];
                let n = if tag & 4 != 0 { 3 } else { 2 };
                let mut ok = true;
                for v in vals.iter_mut().take(n) {
                    let mut x = 0u64;
                    let mut shift = 0;
                    loop {
                        let c = b[i];
                        i += 1;
                        x |= ((c & 0x7f) as u64) << shift;
                        if c & 0x80 == 0 {
                            break;
                        }
                        shift += 7;
                        if shift >= 64 {
                            ok = false;
                            break;
                        }
                    }
                    *v = x;
                }
                let count = if n == 3 { vals[2] } else { 1 };
                if ok && count >= 1 && (n == 2 || count >= 2) {
                    if let Some(stamp) = self.stamp.checked_add(vals[0]) {
                        self.pos += i;
                        self.offset += i as u64;
                        self.stamp = stamp;
                        self.unit = self.unit.wrapping_add(unzigzag(vals[1]) as u64);
                        self.read += 1;
                        let op = match tag & 3 {
                            0 => Op::Load,
                            1 => Op::Store,
                            _ => Op::Modify,
                        };
                        return Ok(Some(Record {
                            stamp,
                            unit: self.unit,
                            count,
                            op,
                        }));
                    }
                }
            }
            // Anything odd: the careful path below reports it with its offset.
        }
        let start = self.offset;
        if self.read == self.header.records {
            return match self.try_byte()? {
                None => Ok(None),
                Some(_) => Err(self.err(
                    start,
                    format!(
                        "trailing data after the {} records the header announces",
                        self.header.records
                    ),
                )),
            };
        }
        let Some(tag) = self.try_byte()? else {
            return Err(self.err(
                start,
                format!(
                    "truncated: {} of {} records",
                    self.read, self.header.records
                ),
            ));
        };
        if tag & !7 != 0 || tag & 3 == 3 {
            return Err(self.err(start, format!("bad record tag 0x{tag:02x}")));
        }
        let ds = self.varint(start)?;
        let du = unzigzag(self.varint(start)?);
        let count = if tag & 4 != 0 {
            let c = self.varint(start)?;
            if c < 2 {
                return Err(self.err(start, format!("record count {c} < 2 with the count bit")));
            }
            c
        } else {
            1
        };
        self.stamp = self
            .stamp
            .checked_add(ds)
            .ok_or_else(|| self.err(start, "stamp overflows u64"))?;
        self.unit = self.unit.wrapping_add(du as u64);
        self.read += 1;
        let op = match tag & 3 {
            0 => Op::Load,
            1 => Op::Store,
            _ => Op::Modify,
        };
        Ok(Some(Record {
            stamp: self.stamp,
            unit: self.unit,
            count,
            op,
        }))
    }
}

/// Rewrite a trace in another format version (1: records not compressed, 2: compressed); the
/// records, stamps and header fields stay as they are.
pub fn convert(input: &Path, output: &Path, version: u16) -> Result<Header> {
    let mut r = Reader::open(input)?;
    let mut h = r.header;
    h.version = version;
    h.complete = false;
    h.records = 0;
    h.accesses = 0;
    let mut w = Writer::create(output, h)?;
    while let Some(rec) = r.next_record()? {
        w.emit(rec).map_err(|e| io_err(output, e))?;
    }
    w.finish(r.header.last_stamp).map_err(|e| io_err(output, e))
}

/// What `tierkit trace info` prints.
#[derive(Clone, Debug, PartialEq)]
pub struct Info {
    pub path: PathBuf,
    pub header: Header,
    pub records: u64,
    pub accesses: u64,
    pub stores: u64,
    pub pages: u64,
    pub lines: u64,
    pub first_stamp: u64,
    pub last_stamp: u64,
    pub min_addr: u64,
    pub max_addr: u64,
}

/// Read a whole trace (streamed) and summarise it; validates every record.
pub fn info(path: &Path) -> Result<Info> {
    let mut r = Reader::open(path)?;
    let h = r.header;
    let shift = h.unit_shift as u32;
    let mut pages = rustc_hash::FxHashSet::default();
    let mut lines = rustc_hash::FxHashSet::default();
    let (mut n, mut acc, mut st) = (0u64, 0u64, 0u64);
    let (mut first, mut last) = (None, 0);
    let (mut lo, mut hi) = (u64::MAX, 0);
    while let Some(rec) = r.next_record()? {
        n += 1;
        acc = rec.count.saturating_add(acc);
        if rec.op != Op::Load {
            st = rec.count.saturating_add(st);
        }
        first.get_or_insert(rec.stamp);
        last = rec.stamp;
        let addr = rec.unit << shift;
        lo = lo.min(addr);
        hi = hi.max(addr.saturating_add((1 << shift) - 1));
        pages.insert(addr >> 12);
        if shift <= 6 {
            lines.insert(addr >> 6);
        }
    }
    Ok(Info {
        path: path.to_path_buf(),
        header: h,
        records: n,
        accesses: acc,
        stores: st,
        pages: pages.len() as u64,
        lines: lines.len() as u64,
        first_stamp: first.unwrap_or(0),
        last_stamp: h.last_stamp.max(last),
        min_addr: if n == 0 { 0 } else { lo },
        max_addr: hi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Cursor;

    fn roundtrip_v(recs: &[(u64, u64, u64, Op)], version: u16) -> (Vec<u8>, Header) {
        let mut h = Header::new(6, StampKind::Instructions, Source::Other);
        h.version = version;
        let mut w = Writer::new(Cursor::new(Vec::new()), h).unwrap();
        for &(s, u, c, op) in recs {
            w.push(s, u, c, op).unwrap();
        }
        let (h, c) = w.finish_into(recs.last().map_or(0, |r| r.0)).unwrap();
        (c.into_inner(), h)
    }

    fn roundtrip(recs: &[(u64, u64, u64, Op)]) -> (Vec<u8>, Header) {
        roundtrip_v(recs, VERSION)
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<Record>> {
        let mut r = Reader::new("t".into(), Cursor::new(bytes.to_vec()))?;
        let mut v = Vec::new();
        while let Some(x) = r.next_record()? {
            v.push(x);
        }
        Ok(v)
    }

    /// Found by the trace_reader/import fuzz targets' round trip: a lackey trace without `I`
    /// lines (stamp kind none) written as version 1 had stamp kind 2, which version 1 readers
    /// refuse ("unknown stamp kind 2"); `convert` to version 1 made such files.
    #[test]
    fn stampless_trace_in_version_1_reads_back_without_stamps() {
        let mut h = Header::new(6, StampKind::None, Source::Lackey);
        h.version = 1;
        let mut w = Writer::new(Cursor::new(Vec::new()), h).unwrap();
        w.push(0, 5, 1, Op::Load).unwrap();
        w.push(0, 9, 1, Op::Store).unwrap();
        let (_, c) = w.finish_into(0).unwrap();
        let bytes = c.into_inner();
        let r = Reader::new("t".into(), Cursor::new(bytes.clone())).unwrap();
        assert_eq!(r.header.version, 1);
        assert!(!r.header.has_stamps());
        assert_eq!(read_all(&bytes).unwrap().len(), 2);
    }

    /// A run whose count would overflow u64 is split, not a panic; the header's total and
    /// `info`'s sums saturate; a unit at the top of the address space does not overflow
    /// `info`'s range (fuzzing, issue 19).
    #[test]
    fn huge_counts_and_top_units_do_not_overflow() {
        let recs = [
            (0, 7, u64::MAX, Op::Load),
            (1, 7, 5, Op::Load),
            (2, u64::MAX, 2, Op::Store),
        ];
        let (bytes, h) = roundtrip(&recs);
        assert_eq!((h.records, h.accesses), (3, u64::MAX));
        let got = read_all(&bytes).unwrap();
        assert_eq!(
            got.iter().map(|r| (r.unit, r.count)).collect::<Vec<_>>(),
            [(7, u64::MAX), (7, 5), (u64::MAX, 2)]
        );
        let p = std::env::temp_dir().join(format!("tk-huge-{}.tkt", std::process::id()));
        std::fs::write(&p, &bytes).unwrap();
        let i = info(&p).unwrap();
        std::fs::remove_file(&p).unwrap();
        assert_eq!((i.accesses, i.stores, i.max_addr), (u64::MAX, 2, u64::MAX));
    }

    #[test]
    fn collapses_runs_and_round_trips() {
        let recs = [
            (0, 10, 1, Op::Load),
            (1, 10, 1, Op::Load),
            (2, 9, 1, Op::Store),
            (5, 1 << 40, 3, Op::Modify),
        ];
        let (bytes, h) = roundtrip(&recs);
        assert_eq!(h.records, 3);
        assert_eq!(h.accesses, 6);
        let got = read_all(&bytes).unwrap();
        assert_eq!(
            got,
            vec![
                Record {
                    stamp: 0,
                    unit: 10,
                    count: 2,
                    op: Op::Load
                },
                Record {
                    stamp: 2,
                    unit: 9,
                    count: 1,
                    op: Op::Store
                },
                Record {
                    stamp: 5,
                    unit: 1 << 40,
                    count: 3,
                    op: Op::Modify
                },
            ]
        );
    }

    #[test]
    fn truncation_wrong_version_and_garbage_name_the_offset() {
        let recs: Vec<_> = (0..50).map(|i| (i, i * 977 % 4096, 1, Op::Load)).collect();
        // Version 1: the records as they are, so offsets are the file's.
        let (bytes, _) = roundtrip_v(&recs, 1);
        let cut = &bytes[..bytes.len() - 2];
        let e = read_all(cut).unwrap_err().to_string();
        assert!(e.contains("byte ") && e.contains("truncated"), "{e}");
        let mut v = bytes.clone();
        v[8] = 7;
        let e = read_all(&v).unwrap_err().to_string();
        assert!(
            e.contains("byte 8") && e.contains("version 7") && e.contains("versions 1 and 2"),
            "{e}"
        );
        let mut v = bytes.clone();
        v[HEADER_BYTES] = 0xff;
        let e = read_all(&v).unwrap_err().to_string();
        assert!(
            e.contains(&format!("byte {HEADER_BYTES}")) && e.contains("tag"),
            "{e}"
        );
        let e = read_all(b"hello world, this is not a trace at all, no no no no no no no no")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a tierkit trace"), "{e}");
        let mut v = bytes.clone();
        v.push(0);
        assert!(read_all(&v).unwrap_err().to_string().contains("trailing"));
        // Version 2: a cut, a flipped byte or trailing bytes in the compressed frame are errors.
        let (bytes, _) = roundtrip(&recs);
        let e = read_all(&bytes[..bytes.len() - 2]).unwrap_err().to_string();
        assert!(e.contains("byte ") && e.contains("truncated"), "{e}");
        let mut v = bytes.clone();
        let mid = HEADER_BYTES + (bytes.len() - HEADER_BYTES) / 2;
        v[mid] ^= 0x55;
        let e = read_all(&v).unwrap_err().to_string();
        assert!(e.starts_with("t: byte "), "{e}");
        let mut v = bytes.clone();
        v.extend_from_slice(b"junk");
        let e = read_all(&v).unwrap_err().to_string();
        assert!(e.contains("corrupt"), "{e}");
        let mut v = bytes.clone();
        v[8] = 3;
        let e = read_all(&v).unwrap_err().to_string();
        assert!(
            e.contains("version 3") && e.contains("newer tierkit"),
            "{e}"
        );
    }

    #[test]
    fn the_helper_thread_reads_what_the_inline_decoder_reads() {
        let d = std::env::temp_dir().join(format!("tk-pipe-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("big.tkt");
        let mut w =
            Writer::create(&p, Header::new(6, StampKind::Instructions, Source::Other)).unwrap();
        let mut x = 1u64;
        for i in 0..300_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            w.push(i, x >> 40, 1 + (x >> 62), Op::Load).unwrap();
        }
        w.finish(300_000).unwrap();
        let all = |piped: bool, path: &Path| -> Result<Vec<Record>> {
            let mut r = Reader::open_with(path, piped)?;
            let mut v = Vec::new();
            while let Some(x) = r.next_record()? {
                v.push(x);
            }
            Ok(v)
        };
        let a = all(false, &p).unwrap();
        assert_eq!(a.len(), 300_000);
        assert_eq!(all(true, &p).unwrap(), a);
        // A damaged frame is an error either way, with the file named.
        let mut bytes = std::fs::read(&p).unwrap();
        let n = bytes.len();
        bytes[n / 2] ^= 0x5a;
        bytes.truncate(n - 1000);
        let bad = d.join("bad.tkt");
        std::fs::write(&bad, bytes).unwrap();
        for piped in [false, true] {
            let e = all(piped, &bad).unwrap_err().to_string();
            assert!(e.contains("bad.tkt: byte "), "{e}");
        }
        // Dropping a reader early stops its thread (nothing to join; this must not hang).
        let mut r = Reader::open_with(&p, true).unwrap();
        r.next_record().unwrap();
        drop(r);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn version_1_files_read_as_version_2_ones_and_are_larger() {
        let recs: Vec<_> = (0..5000)
            .map(|i| (i * 3, (i * 977) % 64 + (i / 100) * 64, 1 + i % 2, Op::Load))
            .collect();
        let (v1, h1) = roundtrip_v(&recs, 1);
        let (v2, h2) = roundtrip(&recs);
        assert_eq!((h1.version, h2.version), (1, 2));
        assert_eq!(read_all(&v1).unwrap(), read_all(&v2).unwrap());
        assert!(v2.len() * 3 < v1.len(), "{} vs {}", v2.len(), v1.len());
        // Deterministic: the same records give the same bytes.
        assert_eq!(roundtrip(&recs).0, v2);
    }

    proptest! {
        #[test]
        fn any_sequence_round_trips(
            steps in proptest::collection::vec((0u64..1000, any::<u32>(), 1u64..5, 0u8..3), 0..200)
        ) {
            let mut stamp = 0;
            let mut recs = Vec::new();
            for (ds, u, c, op) in steps {
                stamp += ds;
                let op = match op { 0 => Op::Load, 1 => Op::Store, _ => Op::Modify };
                recs.push((stamp, u as u64 * 3, c, op));
            }
            let (bytes, h) = roundtrip(&recs);
            let got = read_all(&bytes).unwrap();
            let total: u64 = got.iter().map(|r| r.count).sum();
            prop_assert_eq!(total, recs.iter().map(|r| r.2).sum::<u64>());
            prop_assert_eq!(h.records, got.len() as u64);
            // Expanding the runs gives back the (unit, op) sequence.
            let a: Vec<(u64, Op)> = recs.iter().flat_map(|r| std::iter::repeat_n((r.1, r.3), r.2 as usize)).collect();
            let b: Vec<(u64, Op)> = got.iter().flat_map(|r| std::iter::repeat_n((r.unit, r.op), r.count as usize)).collect();
            prop_assert_eq!(a, b);
        }
    }
}
