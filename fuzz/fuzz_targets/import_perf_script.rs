//! The perf_script importer (`tierkit trace import`), from raw bytes: plain, gzip or zstd as the
//! command reads them. Property: tierkit_fuzz::import.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tierkit_sim::trace::import::Format;

fuzz_target!(|data: &[u8]| {
    tierkit_fuzz::import("import_perf_script", Format::PerfScript, data);
});
