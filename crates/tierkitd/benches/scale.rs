//! tierkitd's CPU share on a large target (issue 18 item 6), natively: this process maps and
//! touches a target of GIB GiB (default 4) of 4 KiB pages and monitors itself with HeMem at the
//! default 500 ms interval, for SECS seconds (default 20) with the default scan budget
//! (`scan-budget-pct` 10) and then as long scanning every interval (`scan-budget-pct` 100). No
//! sampling source (so nothing but the scans and the policy step runs) and one node (nothing
//! migrates). Reports each run's CPU time per second of monitoring (this thread's, RUSAGE_THREAD:
//! the daemon's loop runs on one thread), the scans' count and mean time, and what a scan costs
//! per page, hence at 1 TiB.
//!
//! Then a third run at the default budget with a source that names STRETCHES (default 64)
//! random 2 MiB stretches of the target each interval, as `pebs` names the stretch around each
//! sampled address: its targeted scans' count, size and cost.
//!
//! Run: cargo bench -p tierkitd --bench scale [-- GIB [SECS [STRETCHES]]]

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
    // Third: the default budget with a source that names STRETCHES random 2 MiB stretches of
    // the target each interval (as `pebs` names the stretch around each sampled address), so
    // the intervals between full scans scan those ranges.
    let stretches: u64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(64);
    let lo = (buf.as_ptr() as u64).div_ceil(page as u64) / 512 * 512 + 512;
    let n = (pages as u64 / 512).saturating_sub(2).max(1);
    let settings = Settings::default();
    let mut lx = self_backend(
        settings,
        Box::new(Naming {
            lo,
            n,
            per_interval: stretches,
            state: 0x9E37_79B9_7F4A_7C15,
        }),
    );
    let mut policy = tierkit_policies::build("hemem").unwrap();
    let mut actions = Vec::new();
    backend::init(policy.as_mut(), &mut lx, &mut actions);
    backend::drive(policy.as_mut(), &mut lx, &mut actions).unwrap();
    let scans0 = lx.metrics.page_scans.get();
    let (c0, t0) = (thread_cpu(), Instant::now());
    while t0.elapsed() < Duration::from_secs(secs) {
        backend::drive(policy.as_mut(), &mut lx, &mut actions).unwrap();
    }
    let (cpu, wall) = (thread_cpu() - c0, t0.elapsed());
    let m = &lx.metrics;
    let (tn, tp, ts) = (
        m.targeted_scans.get(),
        m.targeted_scan_pages.get(),
        m.targeted_scan_seconds.get_sample_sum(),
    );
    println!(
        "scale: scan-budget-pct 10 with {stretches} named 2 MiB stretches an interval: {:.1}% of a CPU ({:.3} s CPU over {:.1} s), {} full scans, {tn} targeted scans of {:.0} pages and {:.2} ms each ({:.0} ns a page)",
        cpu.as_secs_f64() / wall.as_secs_f64() * 100.0,
        cpu.as_secs_f64(),
        wall.as_secs_f64(),
        m.page_scans.get() - scans0,
        tp as f64 / tn.max(1) as f64,
        ts / tn.max(1) as f64 * 1e3,
        ts / tp.max(1) as f64 * 1e9,
    );
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

/// Names `per_interval` 2 MiB stretches of this process, chosen at random among `n` from
/// virtual page `lo`, each interval.
struct Naming {
    lo: u64,
    n: u64,
    per_interval: u64,
    state: u64,
}

impl tierkitd::source::Source for Naming {
    fn name(&self) -> &'static str {
        "naming"
    }
    fn set_targets(&mut self, _pids: &[u32]) -> tierkitd::error::Result<Vec<String>> {
        Ok(Vec::new())
    }
    fn poll(&mut self, out: &mut Vec<tierkitd::source::Named>) -> tierkitd::error::Result<()> {
        for _ in 0..self.per_interval {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            let start_vpn = self.lo + self.state % self.n * 512;
            out.push(tierkitd::source::Named {
                pid: std::process::id(),
                start_vpn,
                end_vpn: start_vpn + 512,
            });
        }
        Ok(())
    }
    fn collect(
        &mut self,
        _ctx: &mut tierkitd::source::Ctx,
    ) -> tierkitd::error::Result<tierkitd::source::Stats> {
        Ok(Default::default())
    }
}
