//! Zipfian key-value lookups (Redis / YCSB-like): each operation walks a small hash index with
//! dependent loads and then reads (or writes) a value whose popularity is Zipfian.

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{gib, region, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef {
        name: "values_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "12",
        unit: "GiB",
        doc: "value store",
    },
    ParamDef {
        name: "index_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "1",
        unit: "GiB",
        doc: "hash index",
    },
    ParamDef {
        name: "zipf_s",
        kind: ParamKind::Float {
            min: 0.01,
            max: 5.0,
        },
        default: "0.99",
        unit: "",
        doc: "Zipf exponent of key popularity (YCSB: 0.99)",
    },
    ParamDef {
        name: "get_frac",
        kind: ParamKind::Float {
            min: 0.01,
            max: 1.0,
        },
        default: "0.9",
        unit: "",
        doc: "share of GETs (the rest are SETs)",
    },
    ParamDef {
        name: "threads",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: "8",
        unit: "threads",
        doc: "worker threads",
    },
    ParamDef {
        name: "mlp",
        kind: ParamKind::Float {
            min: 1.0,
            max: 64.0,
        },
        default: "2",
        unit: "misses",
        doc: "outstanding misses per thread (dependent index walk + value read)",
    },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "zipf-kv",
    description: "Zipfian key-value GET/SET with a pointer-chased index (Redis/YCSB-like)",
    source: "Colloid §5 (Silo YCSB-C), PACT §5 (Redis), Vulcan (Memcached)",
    params: P,
    defaults: || Defaults {
        platform: "spr-cxl",
        duration_s: 10.0,
        fast: FastSize::Ratio(1.0, 2.0),
        page_bytes: 4096,
    },
    build,
};

fn build(p: &Params, _e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let objects = vec![
        ObjectSpec {
            name: "index".into(),
            bytes: gib(p.float("index_gb")),
            alloc_s: 0.0,
            free_s: None,
            first_touch_tier: None,
            pinned: false,
            mlocked: false,
            separate_vma: false,
        },
        ObjectSpec {
            name: "values".into(),
            bytes: gib(p.float("values_gb")),
            alloc_s: 0.0,
            free_s: None,
            first_touch_tier: None,
            pinned: false,
            mlocked: false,
            separate_vma: false,
        },
    ];
    let phase = PhaseSpec {
        duration_s: None,
        mlp: p.float("mlp"),
        compute_ns: 20.0,
        read_frac: p.float("get_frac"),
        // two index hops and one value line per operation
        misses_per_op: 3.0,
        work_ops: None,
        barrier: false,
        access: vec![
            region("index", 2.0, Pattern::PointerChase),
            region(
                "values",
                1.0,
                Pattern::Zipf {
                    s: p.float("zipf_s"),
                },
            ),
        ],
    };
    let threads = vec![ThreadSpec {
        count: p.int("threads") as u32,
        work_ops: None,
        phases: vec![phase],
    }];
    Ok((
        vec![ProcessSpec {
            name: "kv".into(),
            class: QosClass::LatencyCritical,
            cpu_share: 1.0,
            start_s: 0.0,
            objects,
            threads,
        }],
        Vec::new(),
    ))
}
