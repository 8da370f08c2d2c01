//! damo's own record files, as `damo record` writes them (`--output_type json_compressed`, its
//! default, or `json`): a JSON list of records (one per monitoring target), each with a list of
//! snapshots `{start_time, end_time, regions: [{start, end, nr_accesses: {samples, percent},
//! age, ...}], total_bytes}`. Numbers may be JSON numbers or damo's strings ("140,731,667",
//! "104.599 ms", "1 m 2.3 s"); unknown keys are ignored.
//!
//! Streamed: the zlib stream is inflated as it is read, the JSON is parsed one snapshot at a
//! time (a snapshot's regions are the only thing held), and each snapshot is written out before
//! the next is read. Regions become page records as for `damo report raw` (import.rs): every
//! page of a region with accesses, count = the region's nr_accesses samples, stamped with the
//! snapshot's end time.

use std::fmt;
use std::io::{BufRead, BufReader, Seek, Write};

use serde::de::{
    self, DeserializeSeed, Deserializer as _, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde::Deserialize;

use super::import::ImportStats;
use super::{Op, TraceError, Writer};

/// The inflated JSON may be at most this many times the compressed bytes read so far (plus
/// [`INFLATE_FLOOR`]): a damo record compresses about 10-30x, and a bound proportional to the
/// input keeps a small crafted stream from inflating into gigabytes (one huge JSON token is held
/// whole while it is parsed).
pub const MAX_INFLATE_RATIO: u64 = 200;
/// Inflated bytes always allowed, whatever the ratio (small files compress less).
pub const INFLATE_FLOOR: u64 = 64 << 20;

/// Counts the compressed bytes the decoder consumes.
struct Counted<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: BufRead> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.read.set(self.read.get() + amt as u64);
        self.inner.consume(amt);
    }
}

/// The inflated stream, refused once it outgrows [`MAX_INFLATE_RATIO`] x the compressed input.
struct Inflated<R> {
    inner: R,
    compressed: std::rc::Rc<std::cell::Cell<u64>>,
    inflated: u64,
    floor: u64,
}

impl<R: std::io::Read> std::io::Read for Inflated<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.inflated += n as u64;
        let limit = self.floor + MAX_INFLATE_RATIO * self.compressed.get();
        if self.inflated > limit {
            return Err(std::io::Error::other(format!(
                "the compressed JSON inflates to more than {MAX_INFLATE_RATIO}x its size ({} MiB \
                 from {} KiB; damo's records compress about 10-30x): corrupt or crafted",
                self.inflated >> 20,
                self.compressed.get() >> 10
            )));
        }
        Ok(n)
    }
}

/// How a damo record file is encoded, from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// zlib (`json_compressed`, damo's default).
    Zlib,
    /// Plain JSON (`--output_type json`).
    Json,
    /// Text: `damo report raw`, or `perf script` of `damon:damon_aggregated` events.
    Text,
}

/// Tell the encoding from the start of the input (leading white space skipped for JSON).
pub fn sniff(head: &[u8]) -> Encoding {
    // A zlib stream: CMF 0x78 (deflate, 32 KiB window), a header check that makes the pair a
    // multiple of 31, and no preset dictionary (FDICT, bit 5 of FLG: zlib.compress never sets
    // it). That leaves FLG 0x01, 0x5e, 0x9c or 0xda: "x " or "x1" in a text file do not pass.
    if head.len() >= 2
        && head[0] == 0x78
        && head[1] & 0x20 == 0
        && (u16::from(head[0]) << 8 | u16::from(head[1])) % 31 == 0
    {
        return Encoding::Zlib;
    }
    match head.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') | Some(b'{') => Encoding::Json,
        _ => Encoding::Text,
    }
}

/// A number as damo writes it: a JSON number or a string.
#[derive(Deserialize)]
#[serde(untagged)]
enum Num {
    U(u64),
    F(f64),
    S(String),
}

impl Num {
    /// An integer (addresses, sample counts): "140,731,667,070,976" or a number.
    fn int(&self) -> Option<u64> {
        match self {
            Num::U(v) => Some(*v),
            Num::F(v) if *v >= 0.0 && v.fract() == 0.0 => Some(*v as u64),
            Num::F(_) => None,
            Num::S(s) => {
                let t: String = s.chars().filter(|c| *c != ',').collect();
                t.trim().parse().ok()
            }
        }
    }

    /// A time in ns: a number of ns, or damo's "104.599 ms" / "1 m 2.3 s".
    fn ns(&self) -> Option<u64> {
        match self {
            Num::U(v) => Some(*v),
            Num::F(v) if *v >= 0.0 => Some(*v as u64),
            Num::F(_) => None,
            Num::S(s) => {
                let t: String = s.chars().filter(|c| *c != ',').collect();
                super::import::damon_time_ns(t.trim())
            }
        }
    }

    fn show(&self) -> String {
        match self {
            Num::U(v) => v.to_string(),
            Num::F(v) => v.to_string(),
            Num::S(s) => format!("\"{s}\""),
        }
    }
}

#[derive(Deserialize)]
struct NrAccesses {
    samples: Option<Num>,
}

#[derive(Deserialize)]
struct Region {
    start: Num,
    end: Num,
    nr_accesses: Option<NrAccesses>,
}

#[derive(Deserialize)]
struct Snapshot {
    end_time: Num,
    regions: Vec<Region>,
}

/// Where parsed snapshots go. A write error or a bad value is kept here and handed to serde as
/// a message, so the parse stops at once and the caller reports the real error.
struct Sink<'a, W: Write + Seek> {
    w: &'a mut Writer<W>,
    st: ImportStats,
    last: u64,
    record: u64,
    snapshot: u64,
    failure: Option<Failure>,
}

enum Failure {
    Io(std::io::Error),
    Value(String),
}

impl<W: Write + Seek> Sink<'_, W> {
    fn snapshot(&mut self, s: Snapshot) -> std::result::Result<(), Failure> {
        let at = |what: &str| format!("record {}, snapshot {}: {what}", self.record, self.snapshot);
        let ts = s.end_time.ns().ok_or_else(|| {
            Failure::Value(at(&format!(
                "bad end_time {}; expected ns or a damo time such as \"104.599 ms\"",
                s.end_time.show()
            )))
        })?;
        let ts = ts.max(self.last);
        for (i, r) in s.regions.iter().enumerate() {
            self.st.lines += 1;
            let region = |what: String| Failure::Value(at(&format!("region {i}: {what}")));
            let a = r
                .start
                .int()
                .ok_or_else(|| region(format!("bad start {}", r.start.show())))?;
            let b = r
                .end
                .int()
                .ok_or_else(|| region(format!("bad end {}", r.end.show())))?;
            if b <= a {
                return Err(region(format!("empty region {a:x}-{b:x}")));
            }
            let nr = match r.nr_accesses.as_ref().and_then(|n| n.samples.as_ref()) {
                Some(n) => n
                    .int()
                    .ok_or_else(|| region(format!("bad nr_accesses.samples {}", n.show())))
                    .and_then(|nr| super::import::damon_nr(nr).map_err(region))?,
                None => return Err(region("no nr_accesses.samples".into())),
            };
            if nr == 0 {
                self.st.skipped += 1;
                continue;
            }
            super::import::damon_region(a, b).map_err(region)?;
            self.last = ts;
            for page in a >> 12..b.div_ceil(4096) {
                self.w.push(ts, page, nr, Op::Load).map_err(Failure::Io)?;
            }
        }
        self.snapshot += 1;
        Ok(())
    }

    fn fail<E: de::Error>(&mut self, f: Failure) -> E {
        let msg = match &f {
            Failure::Io(e) => format!("cannot write: {e}"),
            Failure::Value(m) => m.clone(),
        };
        self.failure = Some(f);
        E::custom(msg)
    }
}

struct Records<'s, 'a, W: Write + Seek>(&'s mut Sink<'a, W>);
struct Record<'s, 'a, W: Write + Seek>(&'s mut Sink<'a, W>);
struct Snapshots<'s, 'a, W: Write + Seek>(&'s mut Sink<'a, W>);

impl<'de, W: Write + Seek> Visitor<'de> for Records<'_, '_, W> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of damo records")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while seq.next_element_seed(Record(&mut *self.0))?.is_some() {
            self.0.record += 1;
            self.0.snapshot = 0;
        }
        Ok(())
    }
}

impl<'de, W: Write + Seek> DeserializeSeed<'de> for Record<'_, '_, W> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, W: Write + Seek> Visitor<'de> for Record<'_, '_, W> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a damo record (an object with `snapshots`)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<(), A::Error> {
        let mut seen = false;
        while let Some(k) = map.next_key::<String>()? {
            if k == "snapshots" {
                map.next_value_seed(Snapshots(&mut *self.0))?;
                seen = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        if !seen {
            return Err(de::Error::custom(format!(
                "record {} has no `snapshots`",
                self.0.record
            )));
        }
        Ok(())
    }
}

impl<'de, W: Write + Seek> DeserializeSeed<'de> for Snapshots<'_, '_, W> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, W: Write + Seek> Visitor<'de> for Snapshots<'_, '_, W> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of snapshots")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while let Some(s) = seq.next_element::<Snapshot>()? {
            if let Err(f) = self.0.snapshot(s) {
                return Err(self.0.fail(f));
            }
        }
        Ok(())
    }
}

/// Read a damo record file (JSON, inflated first when `enc` is Zlib) into `w`.
/// Returns the stats and the last stamp; `Err(Ok(io))` is a write error, `Err(Err(trace))` an
/// input error naming `path` and the line of the (inflated) JSON.
pub(super) fn read<R: BufRead, W: Write + Seek>(
    inp: R,
    enc: Encoding,
    path: &str,
    w: &mut Writer<W>,
) -> std::result::Result<(ImportStats, u64), std::result::Result<std::io::Error, TraceError>> {
    let mut sink = Sink {
        w,
        st: ImportStats::default(),
        last: 0,
        record: 0,
        snapshot: 0,
        failure: None,
    };
    let what = match enc {
        Encoding::Zlib => " (of the inflated JSON)",
        _ => "",
    };
    let res = match enc {
        Encoding::Zlib => {
            let read = std::rc::Rc::new(std::cell::Cell::new(0u64));
            let counted = Counted {
                inner: inp,
                read: read.clone(),
            };
            let z = BufReader::with_capacity(
                1 << 16,
                Inflated {
                    inner: flate2::bufread::ZlibDecoder::new(counted),
                    compressed: read,
                    inflated: 0,
                    floor: INFLATE_FLOOR,
                },
            );
            let mut de = serde_json::Deserializer::from_reader(z);
            de.deserialize_seq(Records(&mut sink))
                .and_then(|()| de.end())
        }
        _ => {
            let mut de = serde_json::Deserializer::from_reader(inp);
            de.deserialize_seq(Records(&mut sink))
                .and_then(|()| de.end())
        }
    };
    match (res, sink.failure.take()) {
        (Ok(()), _) => Ok((sink.st, sink.last)),
        (Err(_), Some(Failure::Io(e))) => Err(Ok(e)),
        (Err(e), f) => {
            let msg = match f {
                Some(Failure::Value(m)) => m,
                _ if e.is_io() => format!("cannot read damo record: {e}"),
                _ => format!("not a damo record file: {e}"),
            };
            Err(Err(TraceError::Parse {
                path: path.to_string(),
                line: e.line() as u64,
                msg: format!("{msg}{what}"),
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zlib stream that inflates far beyond its size (a run of one byte) is cut off once it
    /// passes MAX_INFLATE_RATIO x the compressed bytes read (plus the floor, small here), with an
    /// error that says why; an ordinary one passes.
    #[test]
    fn inflation_is_bounded_by_the_compressed_size() {
        use std::io::{Read, Write};
        let pack = |data: &[u8]| {
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
            z.write_all(data).unwrap();
            z.finish().unwrap()
        };
        let inflate = |packed: &[u8]| {
            let read = std::rc::Rc::new(std::cell::Cell::new(0u64));
            let counted = Counted {
                inner: packed,
                read: read.clone(),
            };
            let mut r = Inflated {
                inner: flate2::bufread::ZlibDecoder::new(counted),
                compressed: read,
                inflated: 0,
                floor: 1 << 10,
            };
            let mut out = Vec::new();
            r.read_to_end(&mut out).map(|_| out.len())
        };
        let bomb = pack(&vec![b' '; 8 << 20]);
        assert!(bomb.len() * 1000 < 8 << 20, "{} bytes", bomb.len());
        let e = inflate(&bomb).unwrap_err().to_string();
        assert!(e.contains("inflates to more than 200x"), "{e}");
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{i},").into_bytes())
            .collect();
        assert_eq!(inflate(&pack(&text)).unwrap(), text.len());
    }
    use crate::trace::import::{import, Format};
    use crate::trace::info;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("tk-damo-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    }

    /// Two targets' records as `damo record --output_type json` writes them (raw numbers as
    /// strings, human-readable ones with units), with keys the reader ignores.
    const JSON: &str = r#"[
 {"kdamond_idx": 0, "context_idx": 0,
  "intervals": {"sample_us": "5 ms", "aggr_us": "100 ms", "ops_update_us": "1 s"},
  "scheme_idx": null, "target_id": 0, "scheme_filters": [],
  "snapshots": [
   {"start_time": "0", "end_time": "100000000",
    "regions": [
     {"start": "94,819,803,136", "end": "94,819,815,424",
      "nr_accesses": {"samples": 5, "percent": 25}, "age": {"usec": null, "aggr_intervals": "3"},
      "sz_filter_passed": "0"},
     {"start": "140282712608768", "end": "140282712612864",
      "nr_accesses": {"samples": 0, "percent": 0}, "age": {"usec": null, "aggr_intervals": "9"}}
    ], "total_bytes": "16384"},
   {"start_time": "100000000", "end_time": "200.5 ms",
    "regions": [{"start": 94819803136, "end": 94819807232, "nr_accesses": {"samples": 2}}]}
  ]},
 {"target_id": 1, "snapshots": []}
]"#;

    #[test]
    fn json_and_compressed_json_records_become_page_records() {
        let out = tmp("j.tkt");
        let st = import(Format::Damon, "damon.json", JSON.as_bytes(), &out).unwrap();
        // 3 pages x 5 accesses, then 1 page x 2; of the 3 regions (counted as `lines`) the
        // one with no access is skipped.
        assert_eq!(
            (st.records, st.accesses, st.lines, st.skipped),
            (4, 17, 3, 1)
        );
        let i = info(&out).unwrap();
        assert_eq!((i.pages, i.last_stamp), (3, 200_500_000));

        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        use std::io::Write as _;
        z.write_all(JSON.as_bytes()).unwrap();
        let bytes = z.finish().unwrap();
        assert_eq!(sniff(&bytes), Encoding::Zlib);
        let out2 = tmp("z.tkt");
        let st2 = import(Format::Damon, "damon.data", &bytes[..], &out2).unwrap();
        assert_eq!(st2, st);
        assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&out2).unwrap());
    }

    #[test]
    fn bad_records_name_the_place() {
        let bad = JSON.replace("\"200.5 ms\"", "\"soon\"");
        let e = import(Format::Damon, "damon.json", bad.as_bytes(), &tmp("b1.tkt"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("damon.json")
                && e.contains("record 0, snapshot 1")
                && e.contains("end_time"),
            "{e}"
        );
        let bad = JSON.replace("\"140282712612864\"", "\"140282712608768\"");
        let e = import(Format::Damon, "damon.json", bad.as_bytes(), &tmp("b2.tkt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("region 1") && e.contains("empty region"), "{e}");
        let e = import(
            Format::Damon,
            "d.json",
            "[{\"snapshots\": [".as_bytes(),
            &tmp("b3.tkt"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("d.json") && e.contains("line 1"), "{e}");
        let e = import(
            Format::Damon,
            "d.json",
            "[{\"x\": 1}]".as_bytes(),
            &tmp("b4.tkt"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no `snapshots`"), "{e}");
        // A truncated zlib stream.
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(JSON.as_bytes()).unwrap();
        let bytes = z.finish().unwrap();
        let e = import(
            Format::Damon,
            "damon.data",
            &bytes[..bytes.len() / 2],
            &tmp("b5.tkt"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("damon.data") && e.contains("inflated"), "{e}");
    }

    #[test]
    fn sniffing() {
        assert_eq!(sniff(b"  \n[{"), Encoding::Json);
        assert_eq!(sniff(b"base_time_absolute: 1 s"), Encoding::Text);
        assert_eq!(
            sniff(b"kdamond.0  4452 [000] 1.5: damon:damon_aggregated:"),
            Encoding::Text
        );
        assert_eq!(sniff(&[0x78, 0x9c, 0]), Encoding::Zlib);
        assert_eq!(sniff(b"x y"), Encoding::Text);
    }
}
