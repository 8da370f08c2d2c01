//! A live scrape of the metrics server over the Linux backend (issue 17): the daemon's own code
//! paths on a child process of this test, with made-up telemetry where this host has none
//! (one NUMA node, no telemetry source), served over HTTP and read back. The scrape must pass
//! `promtool check metrics` (skipped, with a note, where there is no promtool: `make test` gets
//! one from Debian's `prometheus` package with `tests/kernel/fetch.sh promtool`, and the
//! real-kernel tests check scrapes from the guest with it too), and its metric families must be
//! the ones docs/operator-guide.md lists.

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use tierkit_core::{Action, Backend, MigrateMode, SLOW};
use tierkitd::metrics::{serve, Metrics};
use tierkitd::source::core_counters::{CoreSampler, Recorded, Uarch};

fn scrape(addr: std::net::SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: tierkitd\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    body.to_string()
}

/// `promtool`: $PROMTOOL, else on the PATH, else where `tests/kernel/fetch.sh promtool` unpacks it.
fn promtool() -> Option<String> {
    let cached = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/kernel-cache/promtool/usr/bin/promtool")
        .display()
        .to_string();
    let candidates = std::env::var("PROMTOOL")
        .ok()
        .filter(|p| !p.is_empty())
        .into_iter()
        .chain(["promtool".to_string(), cached]);
    candidates.into_iter().find(|p| {
        Command::new(p)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// The families a scrape declares (`# TYPE name kind`).
fn families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}

/// The metric names in the first column of the operator guide's table of metrics.
fn documented() -> BTreeSet<String> {
    let guide = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/operator-guide.md");
    let text = std::fs::read_to_string(&guide).unwrap();
    let names: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("| `tierkitd_"))
        .map(|rest| format!("tierkitd_{}", rest.split('`').next().unwrap()))
        .collect();
    assert!(
        names.len() > 10,
        "the table of metrics in {}",
        guide.display()
    );
    names
}

#[test]
fn a_live_scrape_passes_promtool_and_matches_the_guide() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = child.id();
    let metrics = Metrics::new();
    let addr = serve("127.0.0.1:0".parse().unwrap(), metrics.registry()).unwrap();
    // kernel-tiering mode's metrics (`--policy nbt`) join the same registry
    let km = tierkitd::kernel::KernelMetrics::register(&metrics.registry());
    let mut vm = tierkitd::kernel::Vmstat {
        hint_faults: Some(10),
        ..Default::default()
    };
    let mut vm2 = vm.clone();
    vm2.hint_faults = Some(25);
    vm2.nodes.insert(
        0,
        tierkitd::kernel::NodeStat {
            promote_candidate: Some(3),
            promote_success: Some(2),
            demote_kswapd: Some(1),
            demote_direct: Some(0),
        },
    );
    vm.nodes.insert(
        0,
        tierkitd::kernel::NodeStat {
            promote_candidate: Some(0),
            promote_success: Some(0),
            demote_kswapd: Some(0),
            demote_direct: Some(0),
        },
    );
    km.add(&vm, &vm2);
    km.set_knobs(&[tierkitd::kernel::Changed {
        name: "kernel.numa_balancing".into(),
        path: "/proc/sys/kernel/numa_balancing".into(),
        original: "0".into(),
        set: "2".into(),
        was_set: None,
    }]);
    // and the layers' (`nbt+alto`, `nbt+colloid`)
    for l in ["nbt+alto", "nbt+colloid"] {
        let spec = tierkitd::layers::parse(l).unwrap().unwrap();
        let lm = tierkitd::layers::LayerMetrics::register(&metrics.registry(), &spec);
        lm.alto_ratio.set(0.25);
        lm.alto_aol.set(70.0);
        lm.colloid_latency.with_label_values(&["fast"]).set(2.5e-7);
        lm.colloid_stops.inc();
    }
    // one node here: everything is fast; a slow tier without nodes
    let mut lx = common::dry_run_backend(pid, Duration::from_millis(20), metrics);
    lx.metrics.set_info("hemem", lx.source_name());
    // core counters (Alto, Soar) from a recording: AOL 60 cycles, P 0.3 in the second interval
    let reads = format!(
        "read 0 {pid} cycles=0 stalls_l3_miss=0 a1=0 a2=0 a3=0\n\
         read 1 {pid} cycles=2000000000 stalls_l3_miss=600000000 a1=600000000 a2=900000000 a3=10000000\n\
         read 2 {pid} cycles=2000000000 stalls_l3_miss=600000000 a1=600000000 a2=900000000 a3=10000000\n"
    );
    lx.set_core_counters(CoreSampler::new(
        Uarch::SkylakeX,
        Box::new(Recorded::parse(&reads).unwrap()),
    ));
    lx.observe().unwrap();
    let tel = lx.take_telemetry();
    let pages: Vec<_> = tel.allocated.iter().take(4).map(|e| e.page).collect();
    lx.restore_telemetry(tel);
    // a dry-run demotion pass (a migration pass, skipped pages)
    let mut acts: Vec<Action> = pages
        .iter()
        .map(|&page| Action::Migrate {
            page,
            to: SLOW,
            mode: MigrateMode::Async,
            keep_shadow: false,
        })
        .collect();
    lx.apply(&mut acts);
    lx.observe().unwrap();
    // what this host cannot produce: moves, move_pages calls, errors, a policy step
    let m = &lx.metrics;
    let target = pid.to_string();
    m.promotions.with_label_values(&[&target]).inc_by(3);
    m.demotions.with_label_values(&[&target]).inc_by(1);
    m.pages_migrated.inc_by(4);
    m.move_pages_seconds.observe(0.003);
    m.policy_step_seconds.observe(0.0004);
    m.error("EBUSY");

    let text = scrape(addr);
    for line in [
        format!(
            "tierkitd_info{{policy=\"hemem\",source=\"none\",version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        ),
        format!("tierkitd_promotions_total{{target=\"{pid}\"}} 3"),
        format!("tierkitd_dry_run_skipped_total {}", pages.len()),
        "tierkitd_intervals_total 2".into(),
        "tierkitd_target_processes 1".into(),
        "tierkitd_migration_pass_seconds_count 1".into(),
        format!("tierkitd_amortized_offcore_latency_cycles{{target=\"{pid}\"}} 60"),
        format!("tierkitd_l3_miss_stall_ratio{{target=\"{pid}\"}} 0.3"),
        format!("tierkitd_predicted_slowdown_ratio{{target=\"{pid}\"}} 0.3"),
        "tierkitd_kernel_numa_hint_faults_total 15".into(),
        "tierkitd_kernel_pgpromote_success_total{node=\"0\"} 2".into(),
        "tierkitd_kernel_tiering_knob{knob=\"kernel.numa_balancing\"} 2".into(),
        "tierkitd_alto_promotion_ratio 0.25".into(),
        "tierkitd_alto_amortized_offcore_latency_cycles 70".into(),
        "tierkitd_colloid_tier_latency_seconds{tier=\"fast\"} 0.00000025".into(),
        "tierkitd_colloid_promotion_stops_total 1".into(),
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }
    let fast = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!(
                "tierkitd_resident_bytes{{target=\"{pid}\",tier=\"fast\"}} "
            ))
        })
        .expect("the child's resident bytes");
    assert!(fast.parse::<u64>().unwrap() > 0, "{fast}");
    assert!(!text.contains("pid=\""), "no pid label:\n{text}");

    // the child exits: its resident_bytes series go, its counters stay
    child.kill().unwrap();
    child.wait().unwrap();
    lx.observe().unwrap();
    let after = scrape(addr);
    assert!(!after.contains("tierkitd_resident_bytes{"), "{after}");
    assert!(
        !after.contains("tierkitd_amortized_offcore_latency_cycles{"),
        "{after}"
    );
    assert!(after.contains("tierkitd_target_exits_total 1\n"), "{after}");
    assert!(after.contains(&format!(
        "tierkitd_promotions_total{{target=\"{pid}\"}} 3\n"
    )));

    // every family is in the operator guide, and the guide names no other
    let fams = families(&text);
    let doc = documented();
    let undocumented: Vec<_> = fams.difference(&doc).collect();
    assert!(
        undocumented.is_empty(),
        "not in docs/operator-guide.md's Metrics section: {undocumented:?}"
    );
    let unknown: Vec<_> = doc.difference(&fams).collect();
    assert!(
        unknown.is_empty(),
        "docs/operator-guide.md lists metrics tierkitd does not serve: {unknown:?}"
    );

    match promtool() {
        Some(p) => {
            let mut c = Command::new(p)
                .args(["check", "metrics"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
            let out = c.wait_with_output().unwrap();
            let said = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(out.status.success() && said.trim().is_empty(), "promtool check metrics:\n{said}\n{text}");
        }
        None => eprintln!(
            "note: no promtool (PROMTOOL=..., or tests/kernel/fetch.sh promtool): `promtool check metrics` not run"
        ),
    }
}
