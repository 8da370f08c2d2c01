//! The migration-toggling microbenchmark (seeds/004 §5.2, Fig. 7): an RSS five times the fast
//! tier; phase 1 hammers a randomly selected 3/8 of it (30 of 80 GB), phase 2 widens the range
//! to 3/4 (60 GB, a superset of the first region) with another access pattern, phase 3 returns
//! to the first region. The paper runs 5 minutes per phase on 80 GB with 16 GB of DRAM; here the
//! sizes are scaled down (2 GiB RSS, fast tier 1:4 of the slow) and the ratios kept. The defaults
//! are the paper's setting as the toggle reproduction runs it: one thread (the microbenchmark of
//! §3 is single-threaded; scaling the RSS down keeps per-page access rates high, and one thread
//! instead of eight brings them closer to the paper's) on its testbed, Table 2's SPR with a
//! CMM-D expander (`spr-cmmd`). Until 2026-12-04 they were 8 threads, 4 GiB and `spr-cxl`, under
//! which `tpp+toggle` made 2 stops and 1 restart where the paper and the reproduction have 3
//! and 2.

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{gib, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef {
        name: "rss_gb",
        kind: ParamKind::Float {
            min: 0.01,
            max: 1e5,
        },
        default: "2",
        unit: "GiB",
        doc: "resident set (the paper's 80 GB, scaled)",
    },
    ParamDef {
        name: "hot_frac",
        kind: ParamKind::Float {
            min: 0.01,
            max: 1.0,
        },
        default: "0.375",
        unit: "",
        doc: "phase 1 and 3 region as a fraction of the RSS (30 of 80 GB)",
    },
    ParamDef {
        name: "wide_frac",
        kind: ParamKind::Float {
            min: 0.01,
            max: 1.0,
        },
        default: "0.75",
        unit: "",
        doc: "phase 2 region, a superset of the first (60 of 80 GB)",
    },
    ParamDef {
        name: "phase_s",
        kind: ParamKind::Float {
            min: 0.01,
            max: 1e5,
        },
        default: "60",
        unit: "s",
        doc: "length of each phase (the paper's 5 min, scaled)",
    },
    ParamDef {
        name: "threads",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: "1",
        unit: "threads",
        doc: "threads (one, as the paper's single-threaded microbenchmark, §3)",
    },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "toggle-phases",
    description:
        "random hot region > fast tier, widened with another pattern, then back (3 phases)",
    source: "migration toggling (seeds/004) §5.2, Fig. 7",
    params: P,
    defaults: || Defaults {
        platform: "spr-cmmd",
        duration_s: 180.0,
        fast: FastSize::Ratio(1.0, 4.0),
        page_bytes: 4096,
    },
    build,
};

fn build(p: &Params, _e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let (hot, wide) = (p.float("hot_frac"), p.float("wide_frac"));
    if wide < hot {
        return Err(format!(
            "wide_frac ({wide}) must be at least hot_frac ({hot}): phase 2 widens the region"
        ));
    }
    let dur = p.float("phase_s");
    // The same scatter seed gives nested random subsets (a prefix of one shuffle).
    let area = |len_frac| AccessSpec {
        object: "rss".into(),
        weight: 1.0,
        pattern: Pattern::Uniform,
        start_frac: 0.0,
        len_frac,
        scatter_seed: Some(0x7067),
        zipf_seed: None,
        in_order: false,
    };
    let phase = |len_frac, mlp, compute_ns, read_frac, duration_s| PhaseSpec {
        duration_s,
        mlp,
        compute_ns,
        read_frac,
        misses_per_op: 1.0,
        work_ops: None,
        barrier: false,
        access: vec![area(len_frac)],
    };
    let phases = vec![
        phase(hot, 8.0, 4.0, 0.8, Some(dur)),
        // phase 2: wider, and another pattern (dependent, lower-MLP, read-only walk)
        phase(wide, 2.0, 10.0, 1.0, Some(dur)),
        phase(hot, 8.0, 4.0, 0.8, None),
    ];
    Ok((
        vec![ProcessSpec {
            name: "micro".into(),
            class: QosClass::BestEffort,
            cpu_share: 1.0,
            start_s: 0.0,
            objects: vec![ObjectSpec {
                name: "rss".into(),
                bytes: gib(p.float("rss_gb")),
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
                phases,
            }],
        }],
        Vec::new(),
    ))
}
