//! Built-in workloads. Each is one file exporting `pub const INFO: WorkloadInfo`; adding one is
//! that file plus one `mod` line and one line in [`REGISTRY`]. A built-in's parameters are
//! top-level keys of the experiment (`--set antagonist_intensity=3`).

use tierkit_core::params::{ParamDef, Params};

use crate::spec::{AntagonistSpec, Experiment, FastSize, ProcessSpec};

pub mod graph_kron;
pub mod graph_like;
pub mod graph_objects;
pub mod gups_hotset;
pub mod lc_be_mix;
pub mod masim_colocate;
pub mod masim_phases;
pub mod mig_friendliness;
pub mod multi_tenant;
pub mod seq_pc;
pub mod toggle_phases;
pub mod zipf_kv;

/// Defaults of the common keys for a built-in.
#[derive(Clone, Copy, Debug)]
pub struct Defaults {
    pub platform: &'static str,
    pub duration_s: f64,
    pub fast: FastSize,
    /// Page size (the migration unit) in bytes.
    pub page_bytes: u64,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            platform: "icx-numa",
            duration_s: 10.0,
            fast: FastSize::Ratio(1.0, 2.0),
            page_bytes: 4096,
        }
    }
}

/// What a built-in builds: processes and antagonists, given its parameters and the experiment
/// so far (platform, page size, seed). Errors are messages about the parameters.
pub type BuildFn =
    fn(&Params, &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String>;

pub struct WorkloadInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub source: &'static str,
    pub params: &'static [ParamDef],
    pub defaults: fn() -> Defaults,
    pub build: BuildFn,
}

pub static REGISTRY: &[&WorkloadInfo] = &[
    &gups_hotset::INFO,
    &seq_pc::INFO,
    &masim_phases::INFO,
    &zipf_kv::INFO,
    &graph_like::INFO,
    &graph_objects::INFO,
    &multi_tenant::INFO,
    &lc_be_mix::INFO,
    &toggle_phases::INFO,
    &mig_friendliness::INFO,
    &graph_kron::INFO,
    &masim_colocate::INFO,
];

pub fn find(name: &str) -> Option<&'static WorkloadInfo> {
    REGISTRY.iter().copied().find(|w| w.name == name)
}

pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|w| w.name).collect()
}

/// Bytes in `gb` GiB.
pub fn gib(gb: f64) -> u64 {
    (gb * (1u64 << 30) as f64) as u64
}

/// An access region over a whole object.
pub fn region(object: &str, weight: f64, pattern: crate::spec::Pattern) -> crate::spec::AccessSpec {
    crate::spec::AccessSpec {
        object: object.into(),
        weight,
        pattern,
        start_frac: 0.0,
        len_frac: 1.0,
        scatter_seed: None,
        zipf_seed: None,
        in_order: false,
    }
}
