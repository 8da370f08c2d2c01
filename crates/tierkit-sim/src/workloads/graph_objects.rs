//! A graph workload built from objects shaped like bc-urand's (Soar/Alto §6.2, Table 2), sizes
//! scaled by `scale` (1/8 by default) and times by `duration_s`: an input buffer read while the
//! graph is built and freed later (never touched again), one very large graph object streamed
//! with high MLP (low score per byte), an index chased with dependent loads, several vectors
//! with different MLP, a frontier queue, a bitmap swept by a high-MLP thread with few accesses,
//! and short-lived objects (a tiny one and a vector that lives a quarter of the run).

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{region, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef { name: "scale", kind: ParamKind::Float { min: 0.001, max: 4.0 }, default: "0.125", unit: "", doc: "object sizes as a fraction of bc-urand's (Table 2: 17 GB graph, 1 GB and 536 MB vectors)" },
    ParamDef { name: "threads", kind: ParamKind::Int { min: 3, max: 1024 }, default: "8", unit: "threads", doc: "threads (the paper runs 8): half traverse, 3/8 stream edges, the rest sweep the bitmap" },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "graph-objects",
    description: "bc-urand-like objects (Soar Table 2): huge streamed graph, chased index, vectors, bitmap, short-lived objects; lifetimes and phases are shares of duration_s (the paper's 223 s run scaled to the run)",
    source: "Soar/Alto (OSDI'25) §6.2, Table 2",
    params: P,
    defaults: || Defaults { platform: "skx-cxl-emu", duration_s: 60.0, fast: FastSize::Ratio(1.0, 1.0), page_bytes: 4096 },
    build,
};

fn build(p: &Params, e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let sc = p.float("scale");
    let mb = |m: f64| ((m * sc * (1u64 << 20) as f64) as u64).max(e.page_bytes);
    let t = e.duration_s;
    // lifetimes scaled from the paper's 223 s run
    let at = |s: f64| s / 223.0 * t;
    let obj = |name: &str, bytes: u64, alloc: f64, free: Option<f64>| ObjectSpec {
        name: name.into(),
        bytes,
        alloc_s: at(alloc),
        free_s: free.map(at),
        first_touch_tier: None,
        pinned: false,
        mlocked: false,
        separate_vma: false,
    };
    // first-touch order as in Table 2's FT column
    let objects = vec![
        obj("input", mb(1073.0), 0.0, Some(139.0)),
        obj("graph", mb(17408.0), 0.0, None),
        obj("index", mb(1073.0), 15.0, None),
        obj("vec_c", mb(536.0), 15.0, None),
        obj("vec_b", mb(1073.0), 15.0, None),
        obj("bitmap", mb(536.0), 15.0, None),
        obj("queue", mb(536.0), 15.0, None),
        obj("vec_a", mb(536.0), 84.0, None),
        obj("scratch", 327 * 1024, 15.0, Some(29.0)),
        obj("vec_d", mb(536.0), 130.0, Some(190.0)),
    ];
    let ph =
        |until: f64, from: f64, mlp: f64, z: f64, rf: f64, access: Vec<AccessSpec>| PhaseSpec {
            duration_s: if until.is_infinite() {
                None
            } else {
                Some(at(until) - at(from))
            },
            mlp,
            compute_ns: z,
            read_frac: rf,
            misses_per_op: 1.0,
            work_ops: None,
            barrier: false,
            access,
        };
    let build_graph = |until: f64| {
        ph(
            until,
            0.0,
            8.0,
            6.0,
            0.5,
            vec![
                region("input", 0.5, Pattern::Sequential),
                region("graph", 0.5, Pattern::Sequential),
            ],
        )
    };
    let n = p.int("threads") as u32;
    let (walkers, scanners) = (n / 2, (3 * n) / 8);
    let sweepers = n - walkers - scanners;
    let inf = f64::INFINITY;
    let traverse = vec![
        build_graph(15.0),
        ph(
            84.0,
            15.0,
            1.5,
            10.0,
            0.8,
            vec![
                region("index", 0.3, Pattern::PointerChase),
                region("vec_c", 0.3, Pattern::Uniform),
                region("queue", 0.2, Pattern::Uniform),
                region("vec_b", 0.2, Pattern::Uniform),
            ],
        ),
        ph(
            130.0,
            84.0,
            1.5,
            10.0,
            0.8,
            vec![
                region("vec_a", 0.6, Pattern::Uniform),
                region("index", 0.2, Pattern::PointerChase),
                region("queue", 0.1, Pattern::Uniform),
                region("vec_b", 0.1, Pattern::Uniform),
            ],
        ),
        ph(
            190.0,
            130.0,
            1.5,
            10.0,
            0.8,
            vec![
                region("vec_a", 0.45, Pattern::Uniform),
                region("vec_d", 0.35, Pattern::Uniform),
                region("index", 0.2, Pattern::PointerChase),
            ],
        ),
        ph(
            inf,
            190.0,
            1.5,
            10.0,
            0.8,
            vec![
                region("vec_a", 0.7, Pattern::Uniform),
                region("index", 0.3, Pattern::PointerChase),
            ],
        ),
    ];
    let edges = vec![
        build_graph(15.0),
        ph(
            inf,
            15.0,
            8.0,
            6.0,
            1.0,
            vec![
                region("graph", 0.85, Pattern::Sequential),
                region("vec_b", 0.15, Pattern::Uniform),
            ],
        ),
    ];
    let sweep = vec![
        build_graph(15.0),
        ph(
            inf,
            15.0,
            10.0,
            4.0,
            0.6,
            vec![
                region("bitmap", 0.7, Pattern::Uniform),
                region("vec_c", 0.3, Pattern::Uniform),
            ],
        ),
    ];
    let threads = vec![
        ThreadSpec {
            count: walkers,
            work_ops: None,
            phases: traverse,
        },
        ThreadSpec {
            count: scanners,
            work_ops: None,
            phases: edges,
        },
        ThreadSpec {
            count: sweepers,
            work_ops: None,
            phases: sweep,
        },
    ];
    Ok((
        vec![ProcessSpec {
            name: "bc".into(),
            class: QosClass::BestEffort,
            cpu_share: 1.0,
            start_s: 0.0,
            objects,
            threads,
        }],
        Vec::new(),
    ))
}
