//! GUPS with a hot set and a memory antagonist (Colloid §2.1): threads read-modify-write random
//! objects, `hot_access_frac` of them in a hot region, the rest anywhere in the buffer; the
//! antagonist streams 1:1 read/write traffic pinned to the fast tier, 5 cores per 1x intensity.

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{gib, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef {
        name: "threads",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: "15",
        unit: "threads",
        doc: "GUPS threads (Colloid: 15 cores)",
    },
    ParamDef {
        name: "working_set_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "24",
        unit: "GiB",
        doc: "whole buffer (Colloid: 72 GB; scaled 1/3 by default)",
    },
    ParamDef {
        name: "hot_set_gb",
        kind: ParamKind::Float { min: 0.0, max: 1e5 },
        default: "8",
        unit: "GiB",
        doc: "hot region inside the buffer (Colloid: 24 GB)",
    },
    ParamDef {
        name: "hot_access_frac",
        kind: ParamKind::Float { min: 0.0, max: 1.0 },
        default: "0.9",
        unit: "",
        doc: "share of updates that go to the hot set",
    },
    ParamDef {
        name: "hot_offset_frac",
        kind: ParamKind::Float { min: 0.0, max: 1.0 },
        default: "0.5",
        unit: "",
        doc: "where the hot region starts, as a fraction of the cold part before it",
    },
    ParamDef {
        name: "object_bytes",
        kind: ParamKind::Int {
            min: 64,
            max: 1 << 20,
        },
        default: "64",
        unit: "bytes",
        doc: "object updated per operation (Colloid Fig. 8: 64-4096)",
    },
    ParamDef {
        name: "mlp",
        kind: ParamKind::Float {
            min: 1.0,
            max: 64.0,
        },
        default: "5",
        unit: "misses",
        doc: "outstanding misses per thread at 64 B objects",
    },
    ParamDef {
        name: "compute_ns",
        kind: ParamKind::Float { min: 0.0, max: 1e6 },
        default: "2",
        unit: "ns",
        doc: "compute per miss",
    },
    ParamDef {
        name: "antagonist_intensity",
        kind: ParamKind::Float {
            min: 0.0,
            max: 10.0,
        },
        default: "0",
        unit: "x",
        doc: "memory antagonist on the fast tier: 0-3x = 0, 5, 10, 15 cores",
    },
    ParamDef {
        name: "antagonist_mlp",
        kind: ParamKind::Float { min: 1.0, max: 256.0 },
        default: "22",
        unit: "misses",
        doc: "outstanding misses per antagonist core (its loaded bandwidth: cores x MLP x 64 B / latency); 22 gives Colloid §2.2's ~3.5x default-tier latency from 0x to 3x under HeMem (3.55x on icx-numa)",
    },
    ParamDef {
        name: "antagonist_start_s",
        kind: ParamKind::Float { min: 0.0, max: 1e6 },
        default: "0",
        unit: "s",
        doc: "when the antagonist starts (Colloid Fig. 9, contention change)",
    },
    ParamDef {
        name: "hot_change_s",
        kind: ParamKind::Float { min: 0.0, max: 1e6 },
        default: "0",
        unit: "s",
        doc: "if > 0, the hot set moves to random cold pages at this time (Colloid Fig. 9)",
    },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "gups-hotset",
    description: "GUPS with a hot set (90/10) and a fast-tier memory antagonist (Colloid §2.1)",
    source: "Colloid (SOSP'24) §2.1, §5",
    params: P,
    defaults: || Defaults {
        platform: "icx-numa",
        duration_s: 20.0,
        fast: FastSize::Ratio(32.0, 40.0),
        // Colloid runs HeMem, MEMTIS and TPP (with THP) on 2 MiB pages.
        page_bytes: 2 << 20,
    },
    build,
};

fn build(p: &Params, e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let ws = gib(p.float("working_set_gb"));
    let hot = gib(p.float("hot_set_gb"));
    if hot > ws {
        return Err(format!(
            "hot_set_gb ({}) is larger than working_set_gb ({})",
            p.float("hot_set_gb"),
            p.float("working_set_gb")
        ));
    }
    // Objects are whole pages: a hot set below one page would be no object at all.
    if hot < e.page_bytes {
        return Err(format!(
            "hot_set_gb ({}) is smaller than one page ({} GiB at page_size = {} KiB); give at \
             least that, or a smaller page_size",
            p.float("hot_set_gb"),
            e.page_bytes as f64 / (1u64 << 30) as f64,
            e.page_bytes >> 10
        ));
    }
    let cold = ws - hot;
    let lo = ((cold as f64) * p.float("hot_offset_frac")) as u64;
    let mut objects = Vec::new();
    let mut obj = |name: &str, bytes: u64| {
        if bytes >= e.page_bytes {
            objects.push(ObjectSpec {
                name: name.into(),
                bytes,
                alloc_s: 0.0,
                free_s: None,
                first_touch_tier: None,
                pinned: false,
                mlocked: false,
                separate_vma: false,
            });
        }
    };
    obj("cold_lo", lo);
    obj("hot", hot);
    obj("cold_hi", cold - lo);
    let has = |name: &str| objects.iter().any(|o| o.name == name);
    // Where the hot set moves at hot_change_s: the cold part before it if that holds it, else
    // the one after; only a cold part that is an object (at least one page) can take it.
    let (has_lo, has_hi) = (has("cold_lo"), has("cold_hi"));
    let target = match (lo >= hot, has_lo, has_hi) {
        (true, true, _) | (false, true, false) => Some(("cold_lo", lo)),
        (_, _, true) => Some(("cold_hi", cold - lo)),
        _ => None,
    };
    let obj_bytes = p.int("object_bytes") as f64;
    // Larger objects are more sequential: prefetchers raise the effective per-core parallelism
    // (Colloid Fig. 8: 2.82x more in-flight misses at 4096 B than at 64 B).
    let mlp =
        (p.float("mlp") * (1.0 + 0.3 * (obj_bytes / 64.0).log2())).min(4.0 * e.platform.max_mlp);
    let phase = |access: Vec<AccessSpec>, duration_s: Option<f64>| PhaseSpec {
        duration_s,
        mlp,
        compute_ns: p.float("compute_ns"),
        read_frac: 0.5,
        misses_per_op: obj_bytes / 64.0,
        work_ops: None,
        barrier: false,
        access,
    };
    let hf = p.float("hot_access_frac");
    let first = vec![
        super::region("hot", hf, Pattern::Uniform),
        super::region("*", 1.0 - hf, Pattern::Uniform),
    ];
    let change = p.float("hot_change_s");
    let phases = if let Some((tname, tbytes)) = target.filter(|_| change > 0.0) {
        let moved = AccessSpec {
            object: tname.into(),
            weight: hf,
            pattern: Pattern::Uniform,
            start_frac: 0.0,
            len_frac: (hot as f64 / tbytes as f64).min(1.0),
            scatter_seed: Some(e.seed ^ 0x5eed),
            zipf_seed: None,
            in_order: false,
        };
        vec![
            phase(first, Some(change)),
            phase(
                vec![moved, super::region("*", 1.0 - hf, Pattern::Uniform)],
                None,
            ),
        ]
    } else {
        vec![phase(first, None)]
    };
    let proc_ = ProcessSpec {
        name: "gups".into(),
        class: QosClass::BestEffort,
        cpu_share: 1.0,
        start_s: 0.0,
        objects,
        threads: vec![ThreadSpec {
            count: p.int("threads") as u32,
            work_ops: None,
            phases,
        }],
    };
    let cores = (5.0 * p.float("antagonist_intensity")).round() as u32;
    let ants = if cores > 0 {
        vec![AntagonistSpec {
            tier: 0,
            cores,
            mlp: p.float("antagonist_mlp"),
            read_frac: 0.5,
            start_s: p.float("antagonist_start_s"),
            stop_s: None,
        }]
    } else {
        Vec::new()
    };
    Ok((vec![proc_], ants))
}
