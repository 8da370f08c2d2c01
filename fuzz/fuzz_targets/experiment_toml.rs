//! Experiment files (`tierkit run FILE.toml`): the TOML text, then `--set` overrides, each after
//! a NUL byte. Property: no panic; the heap within a bound proportional to the input; an error
//! names the file (or `--set` for an override).
#![no_main]

use libfuzzer_sys::fuzz_target;

const FILE: &str = "fuzz.toml";

/// Whether a string anywhere in the table could name a file outside the working directory
/// (`workload = "trace"` reads its trace files: a FIFO or a device would block the fuzzer).
fn names_a_path(v: &toml::Value) -> bool {
    match v {
        toml::Value::String(s) => s.contains(['/', '\\']),
        toml::Value::Array(a) => a.iter().any(names_a_path),
        toml::Value::Table(t) => t.values().any(names_a_path),
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.split('\0');
    let toml_text = parts.next().unwrap_or("");
    let sets: Vec<String> = parts.map(str::to_string).collect();
    if sets.iter().any(|s| s.contains(['/', '\\']))
        || toml_text
            .parse::<toml::Table>()
            .is_ok_and(|t| t.values().any(names_a_path))
    {
        return;
    }
    let (res, peak) =
        tierkit_fuzz::peak_heap(|| tierkit_sim::load_str(FILE, toml_text, &sets, None));
    // The parsed table is a few times its text; the built-in workloads' tables are fixed.
    tierkit_fuzz::check_heap("experiment_toml", data.len(), peak, 16 << 20, 256);
    if let Err(e) = res {
        let m = e.to_string();
        assert!(
            m.starts_with(FILE) || m.starts_with("--set"),
            "the error does not name its input: {m}"
        );
    }
});
