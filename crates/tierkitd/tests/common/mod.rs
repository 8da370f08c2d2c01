//! Helpers shared by tierkitd's integration tests.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tierkitd::linux::{Linux, Settings, Targets};
use tierkitd::metrics::Metrics;
use tierkitd::topology::{TierMap, NODE_ROOT};

static STOP: AtomicBool = AtomicBool::new(false);

/// The Linux backend in dry-run mode over one process of this host, without a telemetry source:
/// this host has one NUMA node, so every page is fast and the slow tier has no nodes.
pub fn dry_run_backend(pid: u32, interval: Duration, metrics: Metrics) -> Linux {
    let settings = Settings {
        interval,
        dry_run: true,
        ..Settings::default()
    };
    let tiers = TierMap {
        fast: vec![0],
        slow: vec![],
        reason: "test".into(),
    };
    Linux::new(
        Targets::Pids(vec![pid]),
        tiers,
        NODE_ROOT.into(),
        settings,
        Box::new(tierkitd::source::NoSource),
        &STOP,
        metrics,
    )
    .unwrap()
}
