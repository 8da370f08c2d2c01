//! Colocated masim tenants (PACT §5.9, Fig. 12): two processes of the same footprint, one
//! streaming its buffer sequentially (latency-tolerant, high MLP), one accessing its buffer at
//! random with dependent loads (latency-bound, MLP ~1), with the fast tier holding half of their
//! combined footprint (fast:slow 1:1). Both run for the whole experiment; the throughput of each
//! tenant is the metric.

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{gib, region, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef {
        name: "size_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "6",
        unit: "GiB",
        doc: "each tenant's buffer (paper: 6 GB each)",
    },
    ParamDef {
        name: "threads",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: "2",
        unit: "threads",
        doc: "threads per tenant",
    },
    ParamDef {
        name: "seq_mlp",
        kind: ParamKind::Float {
            min: 1.0,
            max: 64.0,
        },
        default: "8",
        unit: "misses",
        doc: "MLP of the sequential tenant's stream",
    },
    ParamDef {
        name: "rand_mlp",
        kind: ParamKind::Float {
            min: 1.0,
            max: 64.0,
        },
        default: "1",
        unit: "misses",
        doc: "MLP of the random tenant's dependent accesses",
    },
    ParamDef {
        name: "rand_zipf_s",
        kind: ParamKind::Float { min: 0.0, max: 5.0 },
        default: "0.6",
        unit: "",
        doc: "skew of the random tenant's accesses (0: uniform)",
    },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "masim-colocate",
    description: "two colocated masim tenants, one sequential (MLP 8) and one random with dependent loads (MLP 1), 6 GiB each, fast tier half the footprint",
    source: "PACT ASPLOS'26 §5.9, Fig. 12 (masim colocation)",
    params: P,
    defaults: || Defaults {
        platform: "skx-cxl-emu",
        duration_s: 10.0,
        fast: FastSize::Ratio(1.0, 1.0),
        page_bytes: 4096,
    },
    build,
};

fn build(p: &Params, _e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let tenant = |name: &str, mlp: f64, z: f64, pattern: Pattern| ProcessSpec {
        name: name.into(),
        class: QosClass::BestEffort,
        cpu_share: 1.0,
        start_s: 0.0,
        objects: vec![ObjectSpec {
            name: "buf".into(),
            bytes: gib(p.float("size_gb")),
            alloc_s: 0.0,
            free_s: None,
            first_touch_tier: None,
            pinned: false,
            mlocked: false,
            separate_vma: false,
        }],
        threads: vec![ThreadSpec {
            count: p.int("threads") as u32,
            work_ops: None,
            phases: vec![PhaseSpec {
                duration_s: None,
                mlp,
                compute_ns: z,
                read_frac: 1.0,
                misses_per_op: 1.0,
                work_ops: None,
                barrier: false,
                access: vec![region("buf", 1.0, pattern)],
            }],
        }],
    };
    let s = p.float("rand_zipf_s");
    let rand = if s > 0.0 {
        Pattern::Zipf { s }
    } else {
        Pattern::Uniform
    };
    Ok((
        vec![
            tenant("seq", p.float("seq_mlp"), 6.0, Pattern::Sequential),
            tenant("rand", p.float("rand_mlp"), 4.0, rand),
        ],
        Vec::new(),
    ))
}
