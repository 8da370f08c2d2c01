//! CPU cost of tierkitd's monitoring on this host, natively (no emulation): one observe-decide-act
//! step of the Linux backend (maps + pagemap + move_pages queries over the target, soft-dirty
//! pseudo-samples and clear_refs when the kernel has soft-dirty, HeMem's step) on a 64 MiB target whose 16 MiB hot part a second
//! thread keeps writing. The target is this process, so one NUMA node is enough (every page reads
//! as fast; nothing migrates). Reports the step's CPU time (this thread's, RUSAGE_THREAD) and
//! what that is per second of monitoring at the default 500 ms interval, for the default scan
//! (a page whose frame number is unchanged keeps its node) and, stepped in turn with it, a scan
//! that asks the kernel for every page's node.
//!
//! Run: cargo bench -p tierkitd --bench monitor

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tierkit_core::backend;
use tierkitd::linux::Settings;
use tierkitd::source::softdirty::SoftDirty;

mod common;
use common::{self_backend, thread_cpu};

fn main() {
    const MIB: usize = 64;
    const HOT: usize = 16;
    let page = 4096usize;
    let mut buf = vec![0u8; MIB << 20];
    for i in (0..buf.len()).step_by(page) {
        buf[i] = 1;
    }
    let hot = buf.as_mut_ptr() as usize;
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let writer = std::thread::spawn(move || {
        while !s2.load(Ordering::Relaxed) {
            for i in (0..HOT << 20).step_by(page) {
                // SAFETY: [hot, hot + 16 MiB) lies inside `buf`, alive until after the join.
                unsafe { std::ptr::write_volatile((hot + i) as *mut u8, 2) };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    // two backends on the same target, stepped in turn so the machine's noise hits both alike:
    // the default (a page whose frame is unchanged keeps its node) and one that asks the kernel
    // for every present page's node each interval
    let make = |reuse: bool| {
        let settings = Settings {
            interval: Duration::from_millis(50),
            scan_reuse_frames: reuse,
            // a scan every step: the scan's cost is what this measures (benches/scale.rs
            // measures the pacing)
            scan_budget_pct: 100.0,
            ..Settings::default()
        };
        // soft-dirty when the kernel has it; DAMON is not used here (it may be busy on a shared host)
        let source: Box<dyn tierkitd::source::Source> = match tierkitd::source::softdirty::probe() {
            Ok(()) => Box::new(SoftDirty::new(1.0)),
            Err(e) => {
                if reuse {
                    println!("monitor: no soft-dirty ({e}); measuring the scan and the policy step alone");
                }
                Box::new(tierkitd::source::NoSource)
            }
        };
        let lx = self_backend(settings, source);
        (lx, tierkit_policies::build("hemem").unwrap())
    };
    let mut runs = [make(true), make(false)];
    let source_name = runs[0].0.source_name();
    let mut actions = Vec::new();
    for (lx, policy) in runs.iter_mut() {
        backend::init(policy.as_mut(), lx, &mut actions);
        // warm up: the first scan interns every page
        for _ in 0..3 {
            backend::drive(policy.as_mut(), lx, &mut actions).unwrap();
        }
    }
    let steps = 40;
    let mut cpu = [Duration::ZERO; 2];
    let t0 = Instant::now();
    for _ in 0..steps {
        for (i, (lx, policy)) in runs.iter_mut().enumerate() {
            let c0 = thread_cpu();
            backend::drive(policy.as_mut(), lx, &mut actions).unwrap();
            cpu[i] += thread_cpu() - c0;
        }
    }
    let wall = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    std::hint::black_box(&buf);
    println!(
        "monitor: {MIB} MiB target ({HOT} MiB written), source {source_name}, hemem: {steps} steps each in {:.2} s wall",
        wall.as_secs_f64()
    );
    for (i, (lx, _)) in runs.iter().enumerate() {
        let per = cpu[i] / steps;
        let m = &lx.metrics;
        let how = if i == 0 {
            "unchanged frames keep their node (default)"
        } else {
            "every page queried"
        };
        println!(
            "monitor: {how}: CPU per step {:.3} ms (observe {:.3} ms wall per step); pages queried {}, reused {}; at the default 500 ms interval {:.2} ms CPU per second of monitoring ({:.3}% of a CPU)",
            per.as_secs_f64() * 1e3,
            m.observe_seconds.get_sample_sum() / m.intervals.get() as f64 * 1e3,
            m.scan_pages_queried.get(),
            m.scan_pages_reused.get(),
            per.as_secs_f64() * 2.0 * 1e3,
            per.as_secs_f64() * 2.0 * 100.0
        );
    }
    println!(
        "monitor: ratio of CPU per step, default / every page queried: {:.3}",
        cpu[0].as_secs_f64() / cpu[1].as_secs_f64()
    );
}
