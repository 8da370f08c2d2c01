//! The sequential + pointer-chase microbenchmark (Soar/Alto §2.1): one thread streams a buffer
//! (MLP ~7, "hot"), one chases pointers through another (MLP 1, "cold"); each has a fixed amount
//! of work sized so both take about the same time with everything in the fast tier. The
//! process's runtime (until both finish) is the metric.

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{gib, region, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef {
        name: "buffer_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "2",
        unit: "GiB",
        doc: "each thread's buffer (paper: 2 GB)",
    },
    ParamDef {
        name: "seq_mlp",
        kind: ParamKind::Float {
            min: 1.0,
            max: 64.0,
        },
        default: "7",
        unit: "misses",
        doc: "the stream's measured MLP (paper: 7)",
    },
    ParamDef {
        name: "pc_mlp",
        kind: ParamKind::Float {
            min: 1.0,
            max: 64.0,
        },
        default: "1",
        unit: "misses",
        doc: "the pointer chase's MLP (paper: 1)",
    },
    ParamDef {
        name: "seq_compute_ns",
        kind: ParamKind::Float { min: 0.0, max: 1e6 },
        default: "20.8",
        unit: "ns",
        doc: "compute per missed line in the stream (8 loads per line); fitted to Soar/Alto Fig. 1c: the stream alone on the slow tier (Cold-on-DRAM) at 70.2% of All-on-DRAM, (L_slow + 7z) / (L_fast + 7z) = 1 / 0.702 on skx-cxl-emu",
    },
    ParamDef {
        name: "pc_compute_ns",
        kind: ParamKind::Float { min: 0.0, max: 1e6 },
        default: "20",
        unit: "ns",
        doc: "compute per pointer hop; fitted to Soar/Alto Fig. 1c: the pointer chase alone on the slow tier (Hot-on-DRAM) at 52.4% of All-on-DRAM, (L_slow + z) / (L_fast + z) = 1 / 0.524 on skx-cxl-emu (the third bar, all on the slow tier, is the residual: 52.2% against 47.4%)",
    },
    ParamDef {
        name: "fast_runtime_s",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "5",
        unit: "s",
        doc: "each thread's runtime with everything in the fast tier, unloaded",
    },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "seq-pc",
    description: "one sequential (MLP 7) and one pointer-chasing (MLP 1) thread on their own buffers (Soar/Alto §2.1)",
    source: "Soar/Alto (OSDI'25) §2.1, Fig. 1",
    params: P,
    defaults: || Defaults { platform: "skx-cxl-emu", duration_s: 60.0, fast: FastSize::Ratio(1.0, 1.0), page_bytes: 4096 },
    build,
};

fn build(p: &Params, e: &Experiment) -> Result<(Vec<ProcessSpec>, Vec<AntagonistSpec>), String> {
    let l0 = e.platform.tiers[0].curve.unloaded_ns();
    let t_ns = p.float("fast_runtime_s") * 1e9;
    let thread = |obj: &str, m: f64, z: f64, pattern: Pattern| {
        // Closed loop: X = m / (L + m z) misses per ns at the unloaded fast latency.
        let ops = t_ns * m / (l0 + m * z);
        ThreadSpec {
            count: 1,
            work_ops: Some(ops.round()),
            phases: vec![PhaseSpec {
                duration_s: None,
                mlp: m,
                compute_ns: z,
                read_frac: 1.0,
                misses_per_op: 1.0,
                work_ops: None,
                barrier: false,
                access: vec![region(obj, 1.0, pattern)],
            }],
        }
    };
    let b = gib(p.float("buffer_gb"));
    let objects = vec![
        ObjectSpec {
            name: "seq".into(),
            bytes: b,
            alloc_s: 0.0,
            free_s: None,
            first_touch_tier: None,
            pinned: false,
            mlocked: false,
            separate_vma: false,
        },
        ObjectSpec {
            name: "pc".into(),
            bytes: b,
            alloc_s: 0.0,
            free_s: None,
            first_touch_tier: None,
            pinned: false,
            mlocked: false,
            separate_vma: false,
        },
    ];
    let threads = vec![
        thread(
            "seq",
            p.float("seq_mlp"),
            p.float("seq_compute_ns"),
            Pattern::Sequential,
        ),
        thread(
            "pc",
            p.float("pc_mlp"),
            p.float("pc_compute_ns"),
            Pattern::PointerChase,
        ),
    ];
    Ok((
        vec![ProcessSpec {
            name: "seq-pc".into(),
            class: QosClass::BestEffort,
            cpu_share: 1.0,
            start_s: 0.0,
            objects,
            threads,
        }],
        Vec::new(),
    ))
}
