//! What a run and `tierkit trace info` do with a binary trace: `trace::info` (every record,
//! distinct pages and lines) and `trace::replay::build` (the LLC model, windows, the MLP estimate,
//! short windows merged) on the same bytes as a file. Property: no panic; an error names the file.
//! The heap is not bounded here: a replay holds every distinct page of the trace (the reader's own
//! bound is `trace_reader`'s property). A zstd frame can expand into many records, so inputs whose
//! header announces more than 2^20 accesses are skipped.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tierkit_sim::trace::replay::{build, ReplayOpts};
use tierkit_sim::trace::{info, Reader};

fuzz_target!(|data: &[u8]| {
    // Small enough to replay in well under the 10 s an input may take.
    match Reader::new("probe".into(), data) {
        Ok(r) if r.header.accesses <= 1 << 20 => {}
        _ => return,
    }
    let dir = std::env::temp_dir().join(format!("tk-fuzz-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fuzz.tkt");
    std::fs::write(&path, data).unwrap();
    let name = path.display().to_string();
    let named = |m: String| {
        assert!(m.contains(&name), "the error does not name its input: {m}");
    };
    if let Err(e) = info(&path) {
        named(e.to_string());
    }
    let o = ReplayOpts {
        mlp: None,
        max_mlp: 12.0,
        llc: Some((0.25, 8)),
        base_cpi: 0.5,
        cpu_ghz: 2.0,
        instructions_per_access: 3.0,
        compute_ns: None,
        window_accesses: None,
        min_window_misses: 16,
        page_bytes: 4096,
    };
    match build(&path, &o) {
        Ok(mut r) => {
            let _ = r.mlp_stats();
            r.merge_short_windows(1e6, 70.0, 1.0);
            let _ = r.mlp_stats();
        }
        Err(e) => named(e.to_string()),
    }
});
