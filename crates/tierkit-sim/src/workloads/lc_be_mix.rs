//! Vulcan's co-location study (§5.3, Table 2): a Memcached-like latency-critical tenant (YCSB-C
//! style, 90% GETs, a hot key set taking 90% of the requests) started and warmed at 0 s, then a
//! PageRank-like best-effort tenant at 50 s and a Liblinear-like one at 110 s, 8 threads each.
//! Sizes are the paper's GB (51, 42, 69; 32 GB of DRAM) times `scale` (1/16 by default, so the
//! default 2 GiB fast tier is its 32 GB).
//!
//! Page sharing, which per-thread page tables and Vulcan's queues depend on: Memcached's keys are
//! shared by all threads; PageRank's threads each walk their own partition of the edge array
//! (private, read-mostly) and update a shared rank vector; Liblinear's threads each stream their
//! own rows of the data matrix (private, read-only; the active half of its block) and update a
//! shared weight vector. Liblinear has the highest memory intensity (Fig. 1: it crowds Memcached out
//! of the fast tier under MEMTIS).

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{gib, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef {
        name: "scale",
        kind: ParamKind::Float {
            min: 1e-4,
            max: 1.0,
        },
        default: "0.0625",
        unit: "",
        doc: "GiB per paper GB (set fast_tier_gb to 32 x scale to keep the paper's DRAM)",
    },
    ParamDef {
        name: "pagerank_start_s",
        kind: ParamKind::Float { min: 0.0, max: 1e5 },
        default: "50",
        unit: "s",
        doc: "PageRank's start (§5.3: 50 s)",
    },
    ParamDef {
        name: "liblinear_start_s",
        kind: ParamKind::Float { min: 0.0, max: 1e5 },
        default: "110",
        unit: "s",
        doc: "Liblinear's start (§5.3: 110 s)",
    },
    ParamDef {
        name: "tenants",
        kind: ParamKind::Choice(&["all", "memcached", "liblinear", "memcached+liblinear"]),
        default: "all",
        unit: "",
        doc: "which tenants run (solo runs for the cold-page dilemma, Fig. 1)",
    },
    ParamDef {
        name: "threads",
        kind: ParamKind::Int { min: 1, max: 64 },
        default: "8",
        unit: "threads",
        doc: "threads per tenant (§5.3: 8 on 8 dedicated cores)",
    },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "lc-be-mix",
    description: "Vulcan §5.3: LC Memcached-like at 0 s, BE PageRank-like at 50 s, BE Liblinear-like at 110 s",
    source: "Vulcan §5.3, Table 2",
    params: P,
    defaults: || Defaults {
        platform: "icx-numa",
        duration_s: 170.0,
        fast: FastSize::Gb(2.0),
        page_bytes: 4096,
    },
    build,
};

fn acc(object: &str, weight: f64, pattern: Pattern, start_frac: f64, len_frac: f64) -> AccessSpec {
    AccessSpec {
        object: object.into(),
        weight,
        pattern,
        start_frac,
        len_frac,
        scatter_seed: None,
        zipf_seed: None,
        in_order: false,
    }
}

fn obj(name: &str, bytes: u64) -> ObjectSpec {
    ObjectSpec {
        name: name.into(),
        bytes,
        alloc_s: 0.0,
        free_s: None,
        first_touch_tier: None,
        pinned: false,
        mlocked: false,
        separate_vma: false,
    }
}

/// `n` single-thread groups, thread i with the first `private_len` of its private 1/n slice of
/// `private` plus `shared`.
#[allow(clippy::too_many_arguments)]
fn partitioned(
    n: u32,
    private: &str,
    private_len: f64,
    private_w: f64,
    private_pattern: Pattern,
    shared: &str,
    shared_pattern: Pattern,
    mlp: f64,
    compute_ns: f64,
    read_frac: f64,
) -> Vec<ThreadSpec> {
    (0..n)
        .map(|i| ThreadSpec {
            count: 1,
            work_ops: None,
            phases: vec![PhaseSpec {
                duration_s: None,
                mlp,
                compute_ns,
                read_frac,
                misses_per_op: 1.0,
                work_ops: None,
                barrier: false,
                access: vec![
                    acc(
                        private,
                        private_w,
                        private_pattern,
                        i as f64 / n as f64,
                        private_len / n as f64,
                    ),
                    acc(shared, 1.0 - private_w, shared_pattern, 0.0, 1.0),
                ],
            }],
        })
        .collect()
}

fn build(p: &Params, _e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let s = p.float("scale");
    let n = p.int("threads") as u32;
    let which = p.str("tenants");
    let mut procs = Vec::new();
    if which != "liblinear" {
        // Memcached: YCSB-C-like, a hot 20% of the keys gets 90% of the requests (YCSB's hotspot
        // default hot-set fraction), 90% GETs; low MLP, a network stack per request.
        procs.push(ProcessSpec {
            name: "memcached".into(),
            class: QosClass::LatencyCritical,
            cpu_share: 1.0,
            start_s: 0.0,
            objects: vec![obj("items", gib(51.0 * s))],
            threads: vec![ThreadSpec {
                count: n,
                work_ops: None,
                phases: vec![PhaseSpec {
                    duration_s: None,
                    mlp: 2.0,
                    compute_ns: 40.0,
                    read_frac: 0.9,
                    misses_per_op: 4.0,
                    work_ops: None,
                    barrier: false,
                    access: vec![
                        AccessSpec {
                            scatter_seed: Some(51),
                            zipf_seed: None,
                            ..acc("items", 0.9, Pattern::Uniform, 0.0, 0.2)
                        },
                        acc("items", 0.1, Pattern::Uniform, 0.0, 1.0),
                    ],
                }],
            }],
        });
    }
    if which == "all" {
        // PageRank: private edge partitions (read-only), shared rank vector (power-law, written).
        let total = gib(42.0 * s);
        procs.push(ProcessSpec {
            name: "pagerank".into(),
            class: QosClass::BestEffort,
            cpu_share: 1.0,
            start_s: p.float("pagerank_start_s"),
            objects: vec![obj("edges", total - total / 8), obj("ranks", total / 8)],
            threads: partitioned(
                n,
                "edges",
                1.0,
                0.6,
                Pattern::Uniform,
                "ranks",
                Pattern::Zipf { s: 0.8 },
                4.0,
                6.0,
                0.75,
            ),
        });
    }
    if which != "memcached" {
        // Liblinear: private row blocks of the data matrix streamed, shared weights updated.
        let total = gib(69.0 * s);
        let start = if which == "all" {
            p.float("liblinear_start_s")
        } else if which == "liblinear" {
            0.0
        } else {
            p.float("pagerank_start_s")
        };
        procs.push(ProcessSpec {
            name: "liblinear".into(),
            class: QosClass::BestEffort,
            cpu_share: 1.0,
            start_s: start,
            objects: vec![obj("data", total - total / 32), obj("weights", total / 32)],
            threads: partitioned(
                n,
                "data",
                0.5,
                0.7,
                Pattern::Uniform,
                "weights",
                Pattern::Uniform,
                8.0,
                2.0,
                0.8,
            ),
        });
    }
    Ok((procs, Vec::new()))
}
