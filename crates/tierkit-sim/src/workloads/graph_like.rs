//! A graph-like skewed traversal: power-law vertex popularity reached by dependent pointer
//! walks (low MLP), edge arrays streamed (high MLP), and a small frontier reused every step.

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{gib, region, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef {
        name: "vertices_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "4",
        unit: "GiB",
        doc: "vertex properties (Zipfian popularity)",
    },
    ParamDef {
        name: "edges_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "8",
        unit: "GiB",
        doc: "edge arrays (streamed)",
    },
    ParamDef {
        name: "frontier_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "0.5",
        unit: "GiB",
        doc: "frontier / worklist",
    },
    ParamDef {
        name: "zipf_s",
        kind: ParamKind::Float {
            min: 0.01,
            max: 5.0,
        },
        default: "0.8",
        unit: "",
        doc: "degree skew",
    },
    ParamDef {
        name: "walkers",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: "4",
        unit: "threads",
        doc: "threads doing dependent vertex walks",
    },
    ParamDef {
        name: "scanners",
        kind: ParamKind::Int { min: 0, max: 1024 },
        default: "4",
        unit: "threads",
        doc: "threads streaming edges",
    },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "graph-like",
    description:
        "skewed graph traversal: pointer-chased hub vertices (MLP ~1.5) + streamed edges (MLP 8)",
    source: "PACT §5 and Soar/Alto §6 graph workloads (GAPBS) in spirit",
    params: P,
    defaults: || Defaults {
        platform: "skx-cxl-emu",
        duration_s: 10.0,
        fast: FastSize::Ratio(1.0, 2.0),
        page_bytes: 4096,
    },
    build,
};

fn build(p: &Params, _e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let objects = vec![
        ObjectSpec {
            name: "vertices".into(),
            bytes: gib(p.float("vertices_gb")),
            alloc_s: 0.0,
            free_s: None,
            first_touch_tier: None,
            pinned: false,
            mlocked: false,
            separate_vma: false,
        },
        ObjectSpec {
            name: "edges".into(),
            bytes: gib(p.float("edges_gb")),
            alloc_s: 0.0,
            free_s: None,
            first_touch_tier: None,
            pinned: false,
            mlocked: false,
            separate_vma: false,
        },
        ObjectSpec {
            name: "frontier".into(),
            bytes: gib(p.float("frontier_gb")),
            alloc_s: 0.0,
            free_s: None,
            first_touch_tier: None,
            pinned: false,
            mlocked: false,
            separate_vma: false,
        },
    ];
    let walk = PhaseSpec {
        duration_s: None,
        mlp: 1.5,
        compute_ns: 5.0,
        read_frac: 0.9,
        misses_per_op: 1.0,
        work_ops: None,
        barrier: false,
        access: vec![
            region(
                "vertices",
                0.8,
                Pattern::Zipf {
                    s: p.float("zipf_s"),
                },
            ),
            region("frontier", 0.2, Pattern::Uniform),
        ],
    };
    let scan = PhaseSpec {
        duration_s: None,
        mlp: 8.0,
        compute_ns: 6.0,
        read_frac: 1.0,
        misses_per_op: 1.0,
        work_ops: None,
        barrier: false,
        access: vec![region("edges", 1.0, Pattern::Sequential)],
    };
    let mut threads = vec![ThreadSpec {
        count: p.int("walkers") as u32,
        work_ops: None,
        phases: vec![walk],
    }];
    if p.int("scanners") > 0 {
        threads.push(ThreadSpec {
            count: p.int("scanners") as u32,
            work_ops: None,
            phases: vec![scan],
        });
    }
    Ok((
        vec![ProcessSpec {
            name: "graph".into(),
            class: QosClass::BestEffort,
            cpu_share: 1.0,
            start_s: 0.0,
            objects,
            threads,
        }],
        Vec::new(),
    ))
}
