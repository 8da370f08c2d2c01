//! The daemon: start-up checks and report, then the observe-decide-act loop of
//! `tierkit_core::backend` over the Linux backend until SIGTERM or SIGINT.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tierkit_core::{backend, Backend};
use tracing::{debug, info};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::linux::{cgroup_procs, Linux, Targets};
use crate::metrics::Metrics;
use crate::topology::{self, Topology};

/// Set by SIGTERM/SIGINT; checked between intervals and between migration batches.
pub static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Install the SIGTERM and SIGINT handlers.
pub fn install_signals() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe; sa_mask is
        // initialised empty and SA_RESTART keeps our blocking reads working.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as usize;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Run until stopped. Errors before the loop starts are start-up refusals.
pub fn run(cfg: Config) -> Result<()> {
    let mut policy = tierkit_policies::build(&cfg.policy)?;
    // The targets first: a refused or absent process is reported whatever the host's topology.
    let pids = match &cfg.targets {
        Targets::Pids(p) => p.clone(),
        Targets::Cgroup(dir) => {
            if !dir.join("cgroup.procs").exists() {
                return Err(Error::Config {
                    field: "--cgroup".into(),
                    why: format!(
                        "{} is not a cgroup v2 directory (no cgroup.procs)",
                        dir.display()
                    ),
                });
            }
            cgroup_procs(dir)?
        }
    };
    let rights = crate::select::check_access(&pids)?;
    let topo = Topology::read_system()?;
    let tiers = topo.choose(cfg.fast_nodes.as_deref(), cfg.slow_nodes.as_deref())?;
    info!(
        "tierkitd {} starting: policy {}",
        env!("CARGO_PKG_VERSION"),
        policy.name()
    );
    for l in topo.describe() {
        info!("topology: {l}");
    }
    info!(
        "tiers: fast = node(s) {}, slow = node(s) {} ({})",
        topology::fmt_list(&tiers.fast),
        topology::fmt_list(&tiers.slow),
        tiers.reason
    );
    for n in rights {
        info!("rights: {n}");
    }
    if crate::kernel::is_kernel_spec(&cfg.policy) {
        return crate::kernel::run(&cfg, tiers);
    }
    let needs = policy.needs();
    let choice = crate::select::choose(
        &cfg.policy,
        &needs,
        cfg.source,
        cfg.damon,
        cfg.samples_per_page,
    )?;
    for l in &choice.report {
        info!("{}", l);
    }
    let s = &cfg.settings;
    info!(
        "settings: interval {} ms, batch {} pages, migration limit {}, fast-limit {}{}",
        s.interval.as_millis(),
        s.batch_pages,
        if s.migrate_mib_s > 0.0 {
            format!("{} MiB/s", s.migrate_mib_s)
        } else {
            "none".into()
        },
        s.fast_limit_bytes
            .map_or("none".into(), |b| format!("{b} bytes")),
        if s.dry_run {
            ", DRY RUN: nothing will be migrated"
        } else {
            ""
        }
    );
    install_signals();
    let metrics = Metrics::new();
    if let Some(addr) = cfg.metrics_addr {
        let bound = crate::metrics::serve(addr, metrics.registry())?;
        info!("metrics: http://{bound}/metrics");
    }
    let mut lx = Linux::new(
        cfg.targets.clone(),
        tiers,
        Path::new(topology::NODE_ROOT).into(),
        cfg.settings.clone(),
        choice.source,
        &STOP,
        metrics,
    )?;
    lx.metrics.set_info(&policy.name(), lx.source_name());
    lx.set_cha(choice.cha);
    if let Some(u) = choice.cores {
        let (reader, note) = crate::source::core_counters::reader_for(u, &cfg.targets);
        info!("{note}");
        lx.set_core_counters(crate::source::core_counters::CoreSampler::new(u, reader));
    }
    let mut actions = Vec::new();
    backend::init(policy.as_mut(), &mut lx, &mut actions);
    info!("running on {} target(s): {:?}", lx.pids().len(), lx.pids());
    let mut last_status = Instant::now();
    let mut idle_logged = false;
    let mut last_moves = (0u64, 0u64);
    // (move_pages calls, seconds in them) at the end of the last pass: a pass's own share
    let mut last_calls = (0u64, 0f64);
    loop {
        match lx.observe() {
            Ok(()) => {}
            Err(Error::Stopped) => break,
            Err(e) => return Err(e),
        }
        let t0 = Instant::now();
        backend::decide(policy.as_mut(), &mut lx, &mut actions);
        let step = t0.elapsed().saturating_sub(lx.last_apply).as_secs_f64();
        let m = &mut lx.metrics;
        m.step_seconds_last = step;
        m.policy_step_seconds.observe(step);
        let (promos, demos) = (m.promoted_total(), m.demoted_total());
        let moved = (
            promos.saturating_sub(last_moves.0),
            demos.saturating_sub(last_moves.1),
        );
        let calls_now = (
            m.move_pages_seconds.get_sample_count(),
            m.move_pages_seconds.get_sample_sum(),
        );
        let (calls, in_calls) = (calls_now.0 - last_calls.0, calls_now.1 - last_calls.1);
        let pass = lx.last_apply.as_secs_f64();
        debug!(
            "interval {}: {} target process(es), {} samples, observe {:.3} ms, policy step {:.3} ms, migration pass {pass:.4} s",
            m.intervals.get(),
            m.target_processes.get(),
            m.samples_last,
            m.observe_seconds_last * 1e3,
            step * 1e3
        );
        if moved != (0, 0) {
            info!(
                "interval {}: promoted {} pages, demoted {} (pass {pass:.4} s: {calls} move_pages call(s) {in_calls:.4} s)",
                m.intervals.get(),
                moved.0,
                moved.1,
            );
        }
        last_calls = calls_now;
        last_moves = (promos, demos);
        if lx.pids().is_empty() {
            if !idle_logged {
                info!("no live targets; waiting for targets (SIGTERM to stop)");
                idle_logged = true;
            }
        } else {
            idle_logged = false;
        }
        if last_status.elapsed() >= cfg.status_every {
            last_status = Instant::now();
            let m = &lx.metrics;
            info!(
                "status: {} target(s), {}; samples/s {:.0}; promoted {promos}, demoted {demos}; errors {}; policy step {:.3} ms",
                m.target_processes.get(),
                lx.tier_summary(),
                m.samples_per_second,
                m.errors_total(),
                m.step_seconds_last * 1e3
            );
        }
    }
    lx.stop_source();
    let m = &lx.metrics;
    let (migrated, passes) = (
        m.pages_migrated.get(),
        m.migration_pass_seconds.get_sample_sum(),
    );
    info!(
        "stopped by signal after {} intervals: promoted {}, demoted {}, pages migrated {migrated} in {passes:.4} s of migration passes ({:.0} pages/s; move_pages itself {:.4} s in {} calls)",
        m.intervals.get(),
        m.promoted_total(),
        m.demoted_total(),
        migrated as f64 / passes.max(1e-9),
        m.move_pages_seconds.get_sample_sum(),
        m.move_pages_seconds.get_sample_count()
    );
    for (k, v) in policy.stats() {
        debug!("policy stat {k} = {v}");
    }
    Ok(())
}
