//! Migration-friendly and -unfriendly tenants of the migration-toggling paper (seeds/004 §5.3-5.4,
//! Tables 3-4), alone or in the FF, UF and UU pairs with a start offset. Sizes are the paper's
//! GB times `scale` (1/16 by default, so its 32 GB of DRAM is the 2 GiB default fast tier).
//!
//! - liblinear (friendly): 15 threads; a stable hot set, a quarter of the RSS scattered over it,
//!   takes 90% of the accesses at random and fits in the fast tier, so promoting it once pays; the
//!   other 10% sweep the whole data in order (a solver's pass over its training instances), one
//!   touch per page per sweep, so between sweeps the data reads idle to an LRU.
//! - ft (friendly): 24 threads streaming over a stable 30% of the RSS (90% of accesses).
//! - silo (unfriendly, single thread): one dependent-access thread over a weakly skewed (Zipf
//!   0.6) key space larger than the fast tier: the warm set does not fit, so pages ping-pong.
//! - gups (unfriendly): uniform random read-modify-write over the whole RSS; 24 threads, as in
//!   the UU pair (the single-tenant runs of Fig. 9 are single-threaded: `threads = 1`).
//!
//! Pairs (Table 4): ff = liblinear 69 GB + ft 40 GB; uf = silo 53 GB + ft 80.1 GB; uu = silo
//! 60 GB + gups 64 GB. The first starts at 0 s, the second at `offset_s`.
//!
//! The paper reports execution times (§5.3-5.4): `work_mops` gives the first tenant a fixed
//! amount of work, after which it exits, so its `runtime_s` is its execution time;
//! `second_work_mops` gives the second tenant of a pair its own.

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{gib, region, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef {
        name: "mix",
        kind: ParamKind::Choice(&["liblinear", "ft", "silo", "gups", "ff", "uf", "uu"]),
        default: "ff",
        unit: "",
        doc: "a single tenant or a Table 4 pair",
    },
    ParamDef {
        name: "offset_s",
        kind: ParamKind::Float { min: 0.0, max: 1e5 },
        default: "10",
        unit: "s",
        doc: "start of the second tenant of a pair",
    },
    ParamDef {
        name: "work_mops",
        kind: ParamKind::Float { min: 0.0, max: 1e12 },
        default: "0",
        unit: "Mops",
        doc: "operations the first tenant does in all (shared evenly by its threads) before it exits, so that its runtime is an execution time, as the paper reports; 0: it runs for the whole duration",
    },
    ParamDef {
        name: "second_work_mops",
        kind: ParamKind::Float { min: 0.0, max: 1e12 },
        default: "0",
        unit: "Mops",
        doc: "the same for the second tenant of a pair (refused for a single tenant)",
    },
    ParamDef {
        name: "threads",
        kind: ParamKind::Int { min: 0, max: 1024 },
        default: "0",
        unit: "threads",
        doc: "threads of a single tenant (the paper runs silo and GUPS single-threaded in Fig. 9); 0: the paper's count for it (liblinear 15, ft 24, silo 1, gups 24); refused for a pair",
    },
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
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "mig-friendliness",
    description: "migration-friendly (liblinear, ft) and -unfriendly (silo, gups) tenants, alone or as FF/UF/UU pairs",
    source: "migration toggling (seeds/004) §5.3-5.4, Tables 3-4",
    params: P,
    defaults: || Defaults {
        platform: "spr-cxl",
        duration_s: 60.0,
        fast: FastSize::Gb(2.0),
        page_bytes: 4096,
    },
    build,
};

/// One tenant of the given shape with `paper_gb` of RSS.
pub fn tenant(shape: &str, paper_gb: f64, scale: f64, start_s: f64) -> ProcessSpec {
    let bytes = gib(paper_gb * scale);
    let (threads, mlp, compute_ns, read_frac, access) = match shape {
        "liblinear" => (
            15,
            6.0,
            8.0,
            0.8,
            vec![
                AccessSpec {
                    object: "data".into(),
                    weight: 0.9,
                    pattern: Pattern::Uniform,
                    start_frac: 0.0,
                    len_frac: 0.25,
                    scatter_seed: Some(11),
                    zipf_seed: None,
                    in_order: false,
                },
                region("data", 0.1, Pattern::Sequential),
            ],
        ),
        "ft" => (
            24,
            8.0,
            4.0,
            0.7,
            vec![
                AccessSpec {
                    object: "data".into(),
                    weight: 0.9,
                    pattern: Pattern::Sequential,
                    start_frac: 0.1,
                    len_frac: 0.3,
                    scatter_seed: None,
                    zipf_seed: None,
                    in_order: false,
                },
                region("data", 0.1, Pattern::Uniform),
            ],
        ),
        "silo" => (
            1,
            1.5,
            30.0,
            0.7,
            vec![region("data", 1.0, Pattern::Zipf { s: 0.6 })],
        ),
        _ => (
            24,
            8.0,
            2.0,
            0.5,
            vec![region("data", 1.0, Pattern::Uniform)],
        ),
    };
    ProcessSpec {
        name: shape.into(),
        class: QosClass::BestEffort,
        cpu_share: 1.0,
        start_s,
        objects: vec![ObjectSpec {
            name: "data".into(),
            bytes,
            alloc_s: 0.0,
            free_s: None,
            first_touch_tier: None,
            pinned: false,
            mlocked: false,
            separate_vma: false,
        }],
        threads: vec![ThreadSpec {
            count: threads,
            work_ops: None,
            phases: vec![PhaseSpec {
                duration_s: None,
                mlp,
                compute_ns,
                read_frac,
                misses_per_op: 1.0,
                work_ops: None,
                barrier: false,
                access,
            }],
        }],
    }
}

fn build(p: &Params, _e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let (s, off) = (p.float("scale"), p.float("offset_s"));
    let mut procs = match p.str("mix") {
        "ff" => vec![
            tenant("liblinear", 69.0, s, 0.0),
            tenant("ft", 40.0, s, off),
        ],
        "uf" => vec![tenant("silo", 53.0, s, 0.0), tenant("ft", 80.1, s, off)],
        "uu" => vec![tenant("silo", 60.0, s, 0.0), tenant("gups", 64.0, s, off)],
        "liblinear" => vec![tenant("liblinear", 69.0, s, 0.0)],
        "ft" => vec![tenant("ft", 80.1, s, 0.0)],
        "silo" => vec![tenant("silo", 79.5, s, 0.0)],
        _ => vec![tenant("gups", 64.0, s, 0.0)],
    };
    let threads = p.int("threads");
    if threads > 0 {
        if procs.len() > 1 {
            return Err(format!(
                "`threads`: mix `{}` is a pair, whose tenants run the thread counts of Table 4; `threads` sets a single tenant's",
                p.str("mix")
            ));
        }
        for proc in &mut procs {
            for t in &mut proc.threads {
                t.count = threads as u32;
            }
        }
    }
    let second = p.float("second_work_mops");
    if second > 0.0 && procs.len() < 2 {
        return Err(format!(
            "`second_work_mops`: mix `{}` is a single tenant; only a pair (ff, uf, uu) has a second",
            p.str("mix")
        ));
    }
    for (proc, work) in procs.iter_mut().zip([p.float("work_mops"), second]) {
        if work > 0.0 {
            for t in &mut proc.threads {
                t.work_ops = Some(work * 1e6 / f64::from(t.count.max(1)));
            }
        }
    }
    Ok((procs, Vec::new()))
}
