//! tierkitd's CPU share on a large target (issue 18 item 6), natively: this process maps and
//! touches a target of GIB GiB (default 4) of 4 KiB pages and monitors itself with HeMem at the
//! default 500 ms interval, for SECS seconds (default 20) with the default scan budget
//! (`scan-budget-pct` 10) and then as long scanning every interval (`scan-budget-pct` 100). No
//! sampling source (so nothing but the scans and the policy step runs) and one node (nothing
//! migrates). Reports each run's CPU time per second of monitoring (this thread's, RUSAGE_THREAD:
//! the daemon's loop runs on one thread), the scans' count and mean time, and what a scan costs
//! per page, hence at 1 TiB.
//!
//! Run: cargo bench -p tierkitd --bench scale [-- GIB [SECS]]

use std::time::{Duration, Instant};

use tierkit_core::backend;
use tierkitd::linux::Settings;

mod common;
use common::{self_backend, thread_cpu};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let gib: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(4);
    let secs: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(20);
    let page = 4096usize;
    let mut buf = vec![0u8; gib << 30];
    for i in (0..buf.len()).step_by(page) {
        buf[i] = 1;
    }
    let pages = buf.len() / page;
    println!("scale: a {gib} GiB target ({pages} pages of 4 KiB), hemem, no sampling source, interval 500 ms, {secs} s per run");
    let mut per_page_ns = Vec::new();
    for budget in [10.0, 100.0] {
        let settings = Settings {
            scan_budget_pct: budget,
            ..Settings::default()
        };
        let mut lx = self_backend(settings, Box::new(tierkitd::source::NoSource));
        let mut policy = tierkit_policies::build("hemem").unwrap();
        let mut actions = Vec::new();
        backend::init(policy.as_mut(), &mut lx, &mut actions);
        // the first scan interns every page: not part of the steady state
        backend::drive(policy.as_mut(), &mut lx, &mut actions).unwrap();
        let scans0 = lx.metrics.page_scans.get();
        let scan_s0 = lx.metrics.page_scan_seconds.get_sample_sum();
        let (c0, t0) = (thread_cpu(), Instant::now());
        while t0.elapsed() < Duration::from_secs(secs) {
            backend::drive(policy.as_mut(), &mut lx, &mut actions).unwrap();
        }
        let (cpu, wall) = (thread_cpu() - c0, t0.elapsed());
        let scans = lx.metrics.page_scans.get() - scans0;
        let scan_s = lx.metrics.page_scan_seconds.get_sample_sum() - scan_s0;
        let mean = scan_s / scans.max(1) as f64;
        per_page_ns.push(mean / pages as f64 * 1e9);
        println!(
            "scale: scan-budget-pct {budget}: {:.1}% of a CPU ({:.3} s CPU over {:.1} s), {} intervals, {scans} scans of {:.1} ms ({:.0} ns a page), {} deferred",
            cpu.as_secs_f64() / wall.as_secs_f64() * 100.0,
            cpu.as_secs_f64(),
            wall.as_secs_f64(),
            lx.metrics.intervals.get(),
            mean * 1e3,
            mean / pages as f64 * 1e9,
            lx.metrics.page_scans_deferred.get(),
        );
    }
    std::hint::black_box(&buf);
    // the run that scans every interval has the most scans to average
    let ns = per_page_ns.last().copied().unwrap_or(0.0);
    let tib = (1u64 << 40) / 4096;
    println!(
        "scale: at 1 TiB ({tib} pages) a scan would take {:.0} s at {ns:.0} ns a page: every interval that is {:.0}x the 500 ms interval; paced at 10% it comes every {:.0} s",
        ns * tib as f64 * 1e-9,
        ns * tib as f64 * 1e-9 / 0.5,
        ns * tib as f64 * 1e-9 / 0.1
    );
}
