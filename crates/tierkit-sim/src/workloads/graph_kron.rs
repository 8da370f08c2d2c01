//! A graph-analytics workload in the spirit of GAPBS bc/sssp on a Kronecker graph (PACT §5,
//! "bc-kron", "sssp-kron"): vertex properties with power-law (Zipfian) popularity, reached by
//! dependent pointer walks (low MLP), edge arrays streamed (high MLP), and a frontier reused
//! every iteration. The hub vertices are the same in every iteration (one Zipf ranking of the
//! vertex array). Each iteration is level-synchronous, as GAPBS's parallel loops are: every
//! level is a fixed amount of work ended by a barrier, so an iteration takes longer when its
//! pages are slow (`iteration_s` is its length with every page in the fast tier, unloaded):
//! - the small levels (next to the source and at the graph's fringe), whose frontiers hold
//!   fewer vertices than one OpenMP chunk per thread (GAPBS bc's `schedule(dynamic, 64)`): one
//!   thread walks them while the others wait at the barrier;
//! - an expand phase, in which every thread walks from frontier vertices to their neighbours'
//!   properties (dependent loads: MLP ~1.2);
//! - a scan phase, in which every thread streams the edge arrays and updates the frontier
//!   (independent loads: MLP ~8).
//!
//! The slow tier's MLP therefore changes window to window: the same access count costs several
//! times more stall in an expand window than in a scan window, and a vertex read in a small
//! level holds up every waiting thread, so it costs the program several times more than the
//! same read in a full level, while the tier's MLP in that window is one walker's (~1.2, not
//! threads x 1.2). Equal-frequency pages differ in criticality by the level they were read in
//! (PACT §3, Fig. 1).
//! `mlc_threads` adds PACT §5.8's bandwidth contention: Intel MLC threads reading the fast tier.

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
        default: "2",
        unit: "GiB",
        doc: "vertex properties (Kronecker degrees: Zipfian popularity)",
    },
    ParamDef {
        name: "edges_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "2",
        unit: "GiB",
        doc: "edge arrays (CSR neighbours and weights), streamed",
    },
    ParamDef {
        name: "frontier_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "0.25",
        unit: "GiB",
        doc: "frontier / worklist, reused every iteration",
    },
    ParamDef {
        name: "zipf_s",
        kind: ParamKind::Float {
            min: 0.01,
            max: 5.0,
        },
        default: "0.9",
        unit: "",
        doc: "degree skew of the Kronecker graph (power-law exponent of vertex popularity)",
    },
    ParamDef {
        name: "threads",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: "8",
        unit: "threads",
        doc: "worker threads (each does both phases)",
    },
    ParamDef {
        name: "iteration_s",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e4,
        },
        default: "0.5",
        unit: "s",
        doc: "nominal length of one iteration (small levels, expand, scan): its work at the fast tier's unloaded latency; each level is a fixed amount of work ended by a barrier, so iterations take longer when pages are slow",
    },
    ParamDef {
        name: "expand_frac",
        kind: ParamKind::Float {
            min: 0.05,
            max: 0.95,
        },
        default: "0.6",
        unit: "",
        doc: "share of an iteration spent in the expand (pointer-walk) phase",
    },
    ParamDef {
        name: "small_level_frac",
        kind: ParamKind::Float { min: 0.0, max: 0.9 },
        default: "0.02",
        unit: "",
        doc: "nominal share of an iteration in the BFS's small levels (next to the source and at the fringe), walked by one thread while the others wait at the barrier; an estimate, not a fit: a Kronecker BFS has ~7 levels of which two or three hold nearly all vertices, and the ~8 small levels of a forward and backward pass take ~1 ms each",
    },
    ParamDef {
        name: "scan_vertex_frac",
        kind: ParamKind::Float { min: 0.0, max: 0.9 },
        default: "0.2",
        unit: "",
        doc: "share of the scan phase's misses that read the properties of the streamed edges' endpoints: independent loads (the scan's MLP) spread over the whole vertex array, so a vertex page's accesses are cheap or dear by the phase that makes them (PACT §5.3: hubs are reached by serialized walks, the rest mostly by independent reads); an estimate, not a fit",
    },
    ParamDef {
        name: "walk_mlp",
        kind: ParamKind::Float {
            min: 1.0,
            max: 64.0,
        },
        default: "1.2",
        unit: "misses",
        doc: "MLP of the dependent vertex walks",
    },
    ParamDef {
        name: "scan_mlp",
        kind: ParamKind::Float {
            min: 1.0,
            max: 64.0,
        },
        default: "8",
        unit: "misses",
        doc: "MLP of the edge stream",
    },
    ParamDef {
        name: "mlc_threads",
        kind: ParamKind::Int { min: 0, max: 256 },
        default: "0",
        unit: "threads",
        doc: "bandwidth antagonist on the fast tier, as PACT §5.8 co-locates Intel MLC on the local node (1-8 threads)",
    },
    ParamDef {
        name: "mlc_gbps",
        kind: ParamKind::Float {
            min: 0.1,
            max: 1000.0,
        },
        default: "8",
        unit: "GB/s",
        doc: "each MLC thread's read bandwidth on the idle fast tier (PACT §5.8: ~8 GB/s); its outstanding misses are this times the tier's unloaded latency over 64 B, so under load it gets less, as MLC does",
    },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "graph-kron",
    description: "GAPBS bc/sssp-like on a Kronecker graph: power-law hub vertices by dependent walks (MLP 1.2) and streamed edges (MLP 8) in alternating phases, small BFS levels walked by one thread, frontier reused per iteration",
    source: "PACT ASPLOS'26 §5 (bc-kron, sssp-kron from GAPBS) in spirit",
    params: P,
    defaults: || Defaults {
        platform: "skx-cxl-emu",
        duration_s: 10.0,
        fast: FastSize::Ratio(1.0, 2.0),
        page_bytes: 4096,
    },
    build,
};

fn build(p: &Params, e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let obj = |name: &str, gb: f64| ObjectSpec {
        name: name.into(),
        bytes: gib(gb),
        alloc_s: 0.0,
        free_s: None,
        first_touch_tier: None,
        pinned: false,
        mlocked: false,
        separate_vma: false,
    };
    let objects = vec![
        obj("vertices", p.float("vertices_gb")),
        obj("edges", p.float("edges_gb")),
        obj("frontier", p.float("frontier_gb")),
    ];
    let it = p.float("iteration_s");
    let fx = p.float("expand_frac");
    let small = p.float("small_level_frac");
    let full = it * (1.0 - small);
    // A level is a fixed amount of work, ended by a barrier (GAPBS's parallel loops): its
    // nominal length is its work at the fast tier's unloaded latency, so it takes longer when
    // its pages are slow or a tier is loaded, and a level that waits on one thread holds up all.
    let l0 = e.platform.tiers[0].curve.unloaded_ns();
    let level = |mut ph: PhaseSpec, nominal_s: f64| {
        ph.work_ops =
            Some(nominal_s * 1e9 * ph.mlp / (l0 + ph.mlp * ph.compute_ns) / ph.misses_per_op);
        ph.barrier = true;
        ph
    };
    let walk = PhaseSpec {
        duration_s: None,
        mlp: p.float("walk_mlp"),
        compute_ns: 4.0,
        read_frac: 0.95,
        misses_per_op: 1.0,
        work_ops: None,
        barrier: false,
        access: vec![
            region(
                "vertices",
                0.85,
                Pattern::Zipf {
                    s: p.float("zipf_s"),
                },
            ),
            region("frontier", 0.15, Pattern::Uniform),
        ],
    };
    let stream = PhaseSpec {
        duration_s: None,
        mlp: p.float("scan_mlp"),
        compute_ns: 6.0,
        read_frac: 0.9,
        misses_per_op: 1.0,
        work_ops: None,
        barrier: false,
        access: {
            let sv = p.float("scan_vertex_frac");
            let mut a = vec![
                region("edges", 0.8 * (1.0 - sv), Pattern::Sequential),
                region("frontier", 0.2 * (1.0 - sv), Pattern::Sequential),
            ];
            if sv > 0.0 {
                a.push(region("vertices", sv, Pattern::Uniform));
            }
            a
        },
    };
    let expand = level(walk.clone(), full * fx);
    let scan = level(stream, full * (1.0 - fx));
    // The small levels: one thread walks them as it walks a full level; the others have no
    // work in them and wait at the barrier.
    let walk_small = level(walk, it * small);
    let wait_small = PhaseSpec {
        work_ops: Some(0.0),
        ..walk_small.clone()
    };
    // Enough iterations for the run (each takes at least its nominal length); the last phase
    // lasts until the experiment ends.
    let iterations = (e.duration_s / it).ceil().max(1.0) as usize + 1;
    let timeline = |small_phase: &PhaseSpec| {
        let mut phases = Vec::with_capacity(3 * iterations);
        for _ in 0..iterations {
            if small > 0.0 {
                phases.push(small_phase.clone());
            }
            phases.push(expand.clone());
            phases.push(scan.clone());
        }
        if let Some(last) = phases.last_mut() {
            last.work_ops = None;
            last.barrier = false;
        }
        phases
    };
    let threads = p.int("threads") as u32;
    let mut groups = vec![ThreadSpec {
        count: 1,
        work_ops: None,
        phases: timeline(&walk_small),
    }];
    if threads > 1 {
        groups.push(ThreadSpec {
            count: threads - 1,
            work_ops: None,
            phases: timeline(&wait_small),
        });
    }
    Ok((
        vec![ProcessSpec {
            name: "graph-kron".into(),
            class: QosClass::BestEffort,
            cpu_share: 1.0,
            start_s: 0.0,
            objects,
            threads: groups,
        }],
        mlc(p, e),
    ))
}

/// PACT §5.8's bandwidth contention: MLC threads reading the local (fast) node, each with the
/// outstanding misses that give `mlc_gbps` at the tier's unloaded latency (Little's law).
fn mlc(p: &Params, e: &Experiment) -> Vec<AntagonistSpec> {
    let threads = p.int("mlc_threads") as u32;
    if threads == 0 {
        return Vec::new();
    }
    let l0_ns = e.platform.tiers[0].curve.unloaded_ns();
    vec![AntagonistSpec {
        tier: 0,
        cores: threads,
        mlp: p.float("mlc_gbps") * l0_ns / 64.0,
        read_frac: 1.0,
        start_s: 0.0,
        stop_s: None,
    }]
}
