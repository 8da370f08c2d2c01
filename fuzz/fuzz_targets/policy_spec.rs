//! The policy spec grammar (`--policy`, `policy = ` in an experiment): parse, validate and build
//! the stack. Property: no panic; the heap within a bound; an error quotes the part of the spec
//! that is wrong (the spec itself for a malformed one), so it names its input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tierkit_core::Error;

fuzz_target!(|data: &[u8]| {
    let Ok(spec) = std::str::from_utf8(data) else {
        return;
    };
    let (res, peak) = tierkit_fuzz::peak_heap(|| tierkit_policies::build(spec).map(drop));
    // Policies allocate their fixed tables when built; nothing grows with the spec's values.
    tierkit_fuzz::check_heap("policy_spec", data.len(), peak, 64 << 20, 64);
    let Err(e) = res else { return };
    let m = e.to_string();
    let quoted = match &e {
        Error::BadSpec { spec: s, .. } => s.clone(),
        Error::UnknownPolicy { name, .. } => name.clone(),
        Error::UnknownParam { param, .. } => param.clone(),
        Error::BadParam { got, .. } => got.clone(),
        Error::BadStack { name, .. } => name.clone(),
        Error::UnknownObject { object, .. } => object.clone(),
        // Building a spec reserves no page tables (that comes with a page space).
        Error::OutOfMemory { .. } | Error::TooManyPages { .. } => {
            panic!("building `{spec}` reserved page tables: {m}")
        }
    };
    if spec.trim().is_empty() {
        assert!(m.contains("empty spec"), "a blank spec: {m}");
        return;
    }
    assert!(
        !quoted.is_empty() && spec.contains(quoted.as_str()) && m.contains(quoted.as_str()),
        "the error does not quote its input `{spec}`: {m}"
    );
});
