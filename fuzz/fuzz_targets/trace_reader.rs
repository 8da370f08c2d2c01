//! The binary trace reader (`.tkt`, versions 1 and 2): header, then every record. Property: no
//! panic; the heap bounded whatever the records (the reader streams); an error names the file
//! and its byte offset, which lies within the (decompressed) file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tierkit_sim::trace::{Reader, TraceError};

const FILE: &str = "fuzz.tkt";

fuzz_target!(|data: &[u8]| {
    let (res, peak) = tierkit_fuzz::peak_heap(|| -> Result<u64, TraceError> {
        let mut r = Reader::new(FILE.into(), data)?;
        let mut n = 0u64;
        // A zstd frame can expand a few bytes into millions of records: stop after enough
        // (the reader's work per record is constant).
        while n < 1 << 22 {
            match r.next_record()? {
                Some(_) => n += 1,
                None => break,
            }
        }
        Ok(n)
    });
    // The reader's 64 KiB buffer and zstd's own (C) buffers; nothing per record.
    tierkit_fuzz::check_heap("trace_reader", data.len(), peak, 1 << 20, 0);
    if let Err(e) = res {
        let m = e.to_string();
        assert!(
            m.starts_with(&format!("{FILE}: ")),
            "the error does not name its input: {m}"
        );
    }
});
