//! A multi-process mix with start offsets: a latency-critical key-value tenant first, then a
//! GUPS-like best-effort tenant, then a streaming one, each `offset_s` after the previous.

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::telemetry::QosClass;

use super::{gib, region, Defaults, WorkloadInfo};
use crate::spec::*;

const P: &[ParamDef] = &[
    ParamDef {
        name: "offset_s",
        kind: ParamKind::Float { min: 0.0, max: 1e5 },
        default: "2",
        unit: "s",
        doc: "start offset between consecutive tenants",
    },
    ParamDef {
        name: "tenant_gb",
        kind: ParamKind::Float {
            min: 0.001,
            max: 1e5,
        },
        default: "4",
        unit: "GiB",
        doc: "footprint of each tenant",
    },
    ParamDef {
        name: "threads",
        kind: ParamKind::Int { min: 1, max: 1024 },
        default: "4",
        unit: "threads",
        doc: "threads per tenant",
    },
];

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "multi-tenant",
    description: "three tenants (LC key-value, BE GUPS, BE stream) starting at offsets",
    source: "Vulcan §5.3 and migration toggling §5 co-location in spirit",
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
    let size = gib(p.float("tenant_gb"));
    let threads = p.int("threads") as u32;
    let off = p.float("offset_s");
    let tenant = |name: &str,
                  class,
                  start_s,
                  mlp,
                  z,
                  read_frac,
                  access: Vec<AccessSpec>,
                  objects: Vec<ObjectSpec>| ProcessSpec {
        name: name.into(),
        class,
        cpu_share: 1.0,
        start_s,
        objects,
        threads: vec![ThreadSpec {
            count: threads,
            work_ops: None,
            phases: vec![PhaseSpec {
                duration_s: None,
                mlp,
                compute_ns: z,
                read_frac,
                misses_per_op: 1.0,
                work_ops: None,
                barrier: false,
                access,
            }],
        }],
    };
    let obj = |name: &str, bytes| ObjectSpec {
        name: name.into(),
        bytes,
        alloc_s: 0.0,
        free_s: None,
        first_touch_tier: None,
        pinned: false,
        mlocked: false,
        separate_vma: false,
    };
    let kv = tenant(
        "kv",
        QosClass::LatencyCritical,
        0.0,
        2.0,
        20.0,
        0.9,
        vec![region("values", 1.0, Pattern::Zipf { s: 0.99 })],
        vec![obj("values", size)],
    );
    let gups = tenant(
        "gups",
        QosClass::BestEffort,
        off,
        5.0,
        2.0,
        0.5,
        vec![
            region("hot", 0.9, Pattern::Uniform),
            region("*", 0.1, Pattern::Uniform),
        ],
        vec![obj("hot", size / 4), obj("cold", size - size / 4)],
    );
    let stream = tenant(
        "stream",
        QosClass::BestEffort,
        2.0 * off,
        8.0,
        4.0,
        1.0,
        vec![region("array", 1.0, Pattern::Sequential)],
        vec![obj("array", size)],
    );
    Ok((vec![kv, gups, stream], Vec::new()))
}
