//! masim-style phased access (as PACT and the migration-toggling paper use masim): a region
//! visited in phases that change both where the hot pages are and how they are accessed:
//! random over a hot zone, a stream over another zone, a pointer chase over a third, repeated.

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{gib, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef {
        name: "region_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "8",
        unit: "GiB",
        doc: "the whole region",
    },
    ParamDef {
        name: "zone_frac",
        kind: ParamKind::Float {
            min: 0.01,
            max: 0.33,
        },
        default: "0.2",
        unit: "",
        doc: "size of each phase's hot zone as a fraction of the region",
    },
    ParamDef {
        name: "zone_access_frac",
        kind: ParamKind::Float { min: 0.0, max: 1.0 },
        default: "0.9",
        unit: "",
        doc: "share of accesses in the phase's zone (the rest anywhere)",
    },
    ParamDef {
        name: "phase_s",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "4",
        unit: "s",
        doc: "length of each phase",
    },
    ParamDef {
        name: "repeats",
        kind: ParamKind::Int { min: 1, max: 1000 },
        default: "2",
        unit: "",
        doc: "times the three phases repeat",
    },
    ParamDef {
        name: "threads",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: "4",
        unit: "threads",
        doc: "threads",
    },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "masim-phases",
    description:
        "phases moving the hot zone and the pattern: random, sequential, pointer chase (masim-like)",
    source: "PACT (ASPLOS'26) §5 and migration toggling §5 use masim",
    params: P,
    defaults: || Defaults {
        platform: "spr-cxl",
        duration_s: 24.0,
        fast: FastSize::Ratio(1.0, 2.0),
        page_bytes: 4096,
    },
    build,
};

fn build(p: &Params, _e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let zf = p.float("zone_frac");
    let za = p.float("zone_access_frac");
    let dur = p.float("phase_s");
    let zone = |i: usize, pattern: Pattern| AccessSpec {
        object: "region".into(),
        weight: za,
        pattern,
        start_frac: 0.1 + 0.3 * i as f64,
        len_frac: zf,
        scatter_seed: None,
        zipf_seed: None,
        in_order: false,
    };
    let background = super::region("region", 1.0 - za, Pattern::Uniform);
    let shapes = [
        (Pattern::Uniform, 6.0, 4.0),
        (Pattern::Sequential, 8.0, 6.0),
        (Pattern::PointerChase, 1.0, 3.0),
    ];
    let mut phases = Vec::new();
    for _ in 0..p.int("repeats") {
        for (i, &(pat, mlp, z)) in shapes.iter().enumerate() {
            phases.push(PhaseSpec {
                duration_s: Some(dur),
                mlp,
                compute_ns: z,
                read_frac: 0.8,
                misses_per_op: 1.0,
                work_ops: None,
                barrier: false,
                access: vec![zone(i, pat), background.clone()],
            });
        }
    }
    if let Some(last) = phases.last_mut() {
        last.duration_s = None;
    }
    let objects = vec![ObjectSpec {
        name: "region".into(),
        bytes: gib(p.float("region_gb")),
        alloc_s: 0.0,
        free_s: None,
        first_touch_tier: None,
        pinned: false,
        mlocked: false,
        separate_vma: false,
    }];
    let threads = vec![ThreadSpec {
        count: p.int("threads") as u32,
        work_ops: None,
        phases,
    }];
    Ok((
        vec![ProcessSpec {
            name: "masim".into(),
            class: QosClass::BestEffort,
            cpu_share: 1.0,
            start_s: 0.0,
            objects,
            threads,
        }],
        Vec::new(),
    ))
}
