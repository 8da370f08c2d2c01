//! The model's fingerprint: a hash of the simulator's and the core's sources, so that a
//! fast-only reference run cached on disk (engine.rs `reference`) is never reused by a build
//! whose model differs.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let dirs = [manifest.join("src"), manifest.join("../tierkit-core/src")];
    let mut all = Vec::new();
    for d in &dirs {
        println!("cargo:rerun-if-changed={}", d.display());
        files(d, &mut all);
    }
    all.sort();
    // FNV-1a, 64 bits, over each file's path (relative to the manifest) and contents.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(std::env::var("CARGO_PKG_VERSION")
        .unwrap_or_default()
        .as_bytes());
    for f in &all {
        let rel = f.strip_prefix(&manifest).unwrap_or(f);
        eat(rel.to_string_lossy().as_bytes());
        eat(&std::fs::read(f).unwrap_or_default());
    }
    println!("cargo:rustc-env=TIERKIT_MODEL_HASH={h:016x}");
}
