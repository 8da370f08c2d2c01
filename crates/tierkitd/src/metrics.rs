//! The daemon's Prometheus metrics, kept in a `prometheus` registry and served by `tiny_http` on
//! a loopback address in the text exposition format 0.0.4 (the one `promtool check metrics`
//! checks). Counters end in `_total`, durations are histograms in seconds, sizes are in bytes,
//! and per-target series carry a `target` label taken from the configuration (a `--pid` given,
//! or the `--cgroup` path), never the pids of a cgroup's members, which are unbounded.
//!
//! The metrics are atomics: the loop updates them in place and the server thread encodes them
//! at each scrape, so scraping never blocks the loop. docs/operator-guide.md lists every metric.

use std::net::SocketAddr;
use std::path::Path;

use prometheus::proto::MetricFamily;
use prometheus::{
    Encoder, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

use crate::error::{Error, Result};

/// Every metric's name starts with `tierkitd_`.
pub const NAMESPACE: &str = "tierkitd";

/// Bucket bounds of the duration histograms, in seconds: 10 µs to 2.6 s by factors of 4.
const SECONDS_BUCKETS: [f64; 10] = [
    1e-5, 4e-5, 1.6e-4, 6.4e-4, 2.56e-3, 0.01024, 0.04096, 0.16384, 0.65536, 2.62144,
];

/// The daemon's counters, gauges and histograms, registered in one registry.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    info: IntGaugeVec,
    /// Pages moved to the fast tier, per target.
    pub promotions: IntCounterVec,
    /// Pages moved to the slow tier, per target.
    pub demotions: IntCounterVec,
    /// Bytes of the targets' present pages per target and tier at the last scan.
    pub resident_bytes: IntGaugeVec,
    /// Errors by kind (errno names of move_pages, `scan`, `telemetry`, ...).
    pub errors: IntCounterVec,
    pub samples: IntCounter,
    pub intervals: IntCounter,
    pub policy_step_seconds: Histogram,
    pub observe_seconds: Histogram,
    /// Wall time of migration passes (validation, batching, move_pages, bookkeeping).
    pub migration_pass_seconds: Histogram,
    /// `move_pages` calls that migrate (not the scan's queries): their count and duration.
    pub move_pages_seconds: Histogram,
    /// Present pages whose node the scan asked of the kernel.
    pub scan_pages_queried: IntCounter,
    /// Present pages whose node the scan knew from an unchanged frame number.
    pub scan_pages_reused: IntCounter,
    /// Scans of every target's pages, and their wall time.
    pub page_scans: IntCounter,
    pub page_scan_seconds: Histogram,
    /// Intervals that kept the last scan's view of the targets to stay within scan-budget-pct.
    pub page_scans_deferred: IntCounter,
    /// Targeted scans (the ranges a source named, between full scans): their count, the pages
    /// they read and their wall time.
    pub targeted_scans: IntCounter,
    pub targeted_scan_pages: IntCounter,
    pub targeted_scan_seconds: Histogram,
    pub pages_migrated: IntCounter,
    pub rate_limited: IntCounter,
    pub external_moves: IntCounter,
    pub target_processes: IntGauge,
    pub target_exits: IntCounter,
    pub dry_run_skipped: IntCounter,
    // For the log lines only (Prometheus computes rates from the counters).
    /// Samples handed to the policy in the last interval, and their rate.
    pub samples_last: u64,
    pub samples_per_second: f64,
    pub step_seconds_last: f64,
    pub observe_seconds_last: f64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

fn sum(families: Vec<MetricFamily>) -> u64 {
    families
        .iter()
        .flat_map(|f| f.get_metric())
        .map(|m| m.get_counter().get_value() as u64)
        .sum()
}

/// The `target` label of a cgroup: its path below the cgroup2 mount (`/app.slice/app.service`,
/// as systemd names it), else the path as given.
pub fn cgroup_label(dir: &Path) -> String {
    match dir.strip_prefix("/sys/fs/cgroup") {
        Ok(rel) => format!("/{}", rel.display()),
        Err(_) => dir.display().to_string(),
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new_custom(Some(NAMESPACE.into()), None).expect("a valid prefix");
        fn reg<M: prometheus::core::Collector + Clone + 'static>(r: &Registry, m: M) -> M {
            r.register(Box::new(m.clone()))
                .expect("metric names are unique");
            m
        }
        let counter = |name: &str, help: &str| {
            reg(
                &registry,
                IntCounter::with_opts(Opts::new(name, help)).expect("a valid metric"),
            )
        };
        let counters = |name: &str, help: &str, labels: &[&str]| {
            reg(
                &registry,
                IntCounterVec::new(Opts::new(name, help), labels).expect("a valid metric"),
            )
        };
        let seconds = |name: &str, help: &str| {
            reg(
                &registry,
                Histogram::with_opts(
                    HistogramOpts::new(name, help).buckets(SECONDS_BUCKETS.to_vec()),
                )
                .expect("a valid metric"),
            )
        };
        Metrics {
            info: reg(
                &registry,
                IntGaugeVec::new(
                    Opts::new(
                        "info",
                        "Constant 1, labelled with tierkitd's version, the policy and the telemetry source.",
                    ),
                    &["version", "policy", "source"],
                )
                .expect("a valid metric"),
            ),
            promotions: counters(
                "promotions_total",
                "Pages moved to the fast tier, per target.",
                &["target"],
            ),
            demotions: counters(
                "demotions_total",
                "Pages moved to the slow tier, per target.",
                &["target"],
            ),
            resident_bytes: reg(
                &registry,
                IntGaugeVec::new(
                    Opts::new(
                        "resident_bytes",
                        "Bytes of the target's present pages on each tier at the last scan.",
                    ),
                    &["target", "tier"],
                )
                .expect("a valid metric"),
            ),
            errors: counters(
                "errors_total",
                "Errors by kind (per-page move_pages errnos, scan and telemetry failures).",
                &["kind"],
            ),
            samples: counter(
                "samples_total",
                "Samples (or pseudo-samples) handed to the policy.",
            ),
            intervals: counter("intervals_total", "Observe-decide-act steps run."),
            policy_step_seconds: seconds(
                "policy_step_seconds",
                "Time the policy's step took, per interval (without the migrations it asked for).",
            ),
            observe_seconds: seconds(
                "observe_seconds",
                "Time spent scanning the targets and reading telemetry, per interval.",
            ),
            migration_pass_seconds: seconds(
                "migration_pass_seconds",
                "Wall time of a migration pass (validation, batching, move_pages, bookkeeping), per interval with migrations.",
            ),
            move_pages_seconds: seconds(
                "move_pages_seconds",
                "Time of each move_pages call that migrates pages (each moves up to batch-pages pages).",
            ),
            scan_pages_queried: counter(
                "scan_pages_queried_total",
                "Present pages whose node the scan asked of the kernel (move_pages query).",
            ),
            scan_pages_reused: counter(
                "scan_pages_reused_total",
                "Present pages whose node the scan kept because their frame number had not changed.",
            ),
            page_scans: counter(
                "page_scans_total",
                "Scans of every target's present pages and their nodes.",
            ),
            page_scan_seconds: seconds(
                "page_scan_seconds",
                "Wall time of each scan of every target's pages (maps, pagemap, node queries, page events).",
            ),
            page_scans_deferred: counter(
                "page_scans_deferred_total",
                "Intervals that kept the last scan's view of the targets' pages to keep the scans within scan-budget-pct.",
            ),
            targeted_scans: counter(
                "targeted_scans_total",
                "Intervals between full scans that scanned the ranges the telemetry source named.",
            ),
            targeted_scan_pages: counter(
                "targeted_scan_pages_total",
                "Virtual pages read by targeted scans (the ranges the telemetry source named).",
            ),
            targeted_scan_seconds: seconds(
                "targeted_scan_seconds",
                "Wall time of each interval's targeted scans (maps, pagemap of the named ranges, node queries, page events).",
            ),
            pages_migrated: counter("pages_migrated_total", "Pages moved by tierkitd."),
            rate_limited: counter(
                "rate_limited_total",
                "Page migrations refused by the rate limit (migrate-mib-s).",
            ),
            external_moves: counter(
                "external_moves_total",
                "Pages found on another tier than tierkitd left them (kernel reclaim or balancing).",
            ),
            target_processes: reg(
                &registry,
                IntGauge::with_opts(Opts::new(
                    "target_processes",
                    "Target processes being managed.",
                ))
                .expect("a valid metric"),
            ),
            target_exits: counter(
                "target_exits_total",
                "Target processes that exited while managed.",
            ),
            dry_run_skipped: counter(
                "dry_run_skipped_total",
                "Page migrations not carried out because of --dry-run.",
            ),
            registry,
            samples_last: 0,
            samples_per_second: 0.0,
            step_seconds_last: 0.0,
            observe_seconds_last: 0.0,
        }
    }

    /// The registry the server encodes (a handle: it shares the metrics).
    pub fn registry(&self) -> Registry {
        self.registry.clone()
    }

    /// `tierkitd_info{version, policy, source} 1`.
    pub fn set_info(&self, policy: &str, source: &str) {
        self.info.reset();
        self.info
            .with_label_values(&[env!("CARGO_PKG_VERSION"), policy, source])
            .set(1);
    }

    pub fn error(&self, kind: &str) {
        self.errors.with_label_values(&[kind]).inc();
    }

    pub fn promoted_total(&self) -> u64 {
        sum(prometheus::core::Collector::collect(&self.promotions))
    }

    pub fn demoted_total(&self) -> u64 {
        sum(prometheus::core::Collector::collect(&self.demotions))
    }

    pub fn errors_total(&self) -> u64 {
        sum(prometheus::core::Collector::collect(&self.errors))
    }

    /// The exposition text of every metric with at least one series.
    pub fn render(&self) -> String {
        render(&self.registry)
    }
}

fn render(registry: &Registry) -> String {
    TextEncoder::new()
        .encode_to_string(&registry.gather())
        .unwrap_or_else(|e| format!("# encoding failed: {e}\n"))
}

fn cfg_err(why: String) -> Error {
    Error::Config {
        field: "--metrics-addr".into(),
        why,
    }
}

/// Serve the registry's metrics at `/metrics` of `addr` (loopback only) until the process exits;
/// returns the bound address (port 0 picks one).
pub fn serve(addr: SocketAddr, registry: Registry) -> Result<SocketAddr> {
    if !addr.ip().is_loopback() {
        return Err(cfg_err(format!(
            "{addr} is not a loopback address (use 127.0.0.1:PORT)"
        )));
    }
    let server = tiny_http::Server::http(addr)
        .map_err(|e| cfg_err(format!("cannot listen on {addr}: {e}")))?;
    let bound = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| cfg_err(format!("{addr}: not an IP listener")))?;
    let content_type = tiny_http::Header::from_bytes(
        &b"Content-Type"[..],
        TextEncoder::new().format_type().as_bytes(),
    )
    .expect("a valid header");
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for req in server.incoming_requests() {
                let path = req.url().split('?').next().unwrap_or("");
                let resp = match (req.method(), path) {
                    (tiny_http::Method::Get, "/metrics") => {
                        tiny_http::Response::from_string(render(&registry))
                            .with_header(content_type.clone())
                    }
                    (tiny_http::Method::Get, "/") => {
                        tiny_http::Response::from_string("tierkitd: the metrics are at /metrics\n")
                    }
                    (tiny_http::Method::Get, _) => {
                        tiny_http::Response::from_string("not found: the metrics are at /metrics\n")
                            .with_status_code(404)
                    }
                    _ => tiny_http::Response::from_string("GET only\n").with_status_code(405),
                };
                let _ = req.respond(resp);
            }
        })
        .map_err(|e| cfg_err(e.to_string()))?;
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        resp
    }

    #[test]
    fn renders_and_serves() {
        let m = Metrics::new();
        m.set_info("hemem", "damon");
        m.promotions.with_label_values(&["42"]).inc_by(7);
        m.resident_bytes
            .with_label_values(&["42", "fast"])
            .set(40960);
        m.error("EBUSY");
        m.error("EBUSY");
        m.policy_step_seconds.observe(0.002);
        let t = m.render();
        for line in [
            "tierkitd_info{policy=\"hemem\",source=\"damon\",version=\"0.1.0\"} 1\n",
            "tierkitd_promotions_total{target=\"42\"} 7\n",
            "tierkitd_resident_bytes{target=\"42\",tier=\"fast\"} 40960\n",
            "tierkitd_errors_total{kind=\"EBUSY\"} 2\n",
            "# TYPE tierkitd_samples_total counter\n",
            "tierkitd_policy_step_seconds_bucket{le=\"0.00256\"} 1\n",
            "tierkitd_policy_step_seconds_count 1\n",
        ] {
            assert!(t.contains(line), "{line} in\n{t}");
        }
        assert_eq!((m.promoted_total(), m.errors_total()), (7, 2));
        // every sample line belongs to a declared metric
        for l in t.lines().filter(|l| !l.starts_with('#')) {
            let name = l.split(['{', ' ']).next().unwrap();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .filter(|f| t.contains(&format!("# TYPE {f} histogram")))
                .unwrap_or(name);
            assert!(t.contains(&format!("# TYPE {family} ")), "{l}");
        }
        let addr = serve("127.0.0.1:0".parse().unwrap(), m.registry()).unwrap();
        let resp = get(addr, "/metrics");
        assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
        assert!(resp.contains("text/plain; version=0.0.4"), "{resp}");
        assert!(resp.ends_with(&t), "{resp}");
        // the server encodes at each scrape: a later change shows
        m.error("EBUSY");
        assert!(get(addr, "/metrics").contains("tierkitd_errors_total{kind=\"EBUSY\"} 3\n"));
        assert!(get(addr, "/other").starts_with("HTTP/1.1 404"));
        let e = serve("0.0.0.0:0".parse().unwrap(), Registry::new()).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--metrics-addr: 0.0.0.0:0 is not a loopback"),
            "{e}"
        );
    }

    #[test]
    fn cgroup_labels() {
        assert_eq!(
            cgroup_label(Path::new("/sys/fs/cgroup/app.slice/app.service")),
            "/app.slice/app.service"
        );
        assert_eq!(cgroup_label(Path::new("/sys/fs/cgroup")), "/");
        assert_eq!(cgroup_label(Path::new("/mnt/cg/app")), "/mnt/cg/app");
    }
}
