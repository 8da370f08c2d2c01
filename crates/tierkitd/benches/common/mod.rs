//! Helpers shared by tierkitd's benchmarks.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use tierkitd::linux::{Linux, Settings, Targets};
use tierkitd::topology::TierMap;

static STOP: AtomicBool = AtomicBool::new(false);

/// This thread's CPU time (RUSAGE_THREAD: user and system).
pub fn thread_cpu() -> Duration {
    // SAFETY: getrusage writes one struct rusage into the zeroed value we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The Linux backend over this process, on this host's node 0 as the fast tier (no slow nodes:
/// nothing migrates).
pub fn self_backend(settings: Settings, source: Box<dyn tierkitd::source::Source>) -> Linux {
    let tiers = TierMap {
        fast: vec![0],
        slow: vec![],
        reason: "bench".into(),
    };
    Linux::new(
        Targets::Pids(vec![std::process::id()]),
        tiers,
        tierkitd::topology::NODE_ROOT.into(),
        settings,
        source,
        &STOP,
        tierkitd::metrics::Metrics::new(),
    )
    .expect("backend")
}
