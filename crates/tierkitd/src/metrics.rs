//! Prometheus text-format metrics (exposition format 0.0.4) and a minimal HTTP server for them on
//! a loopback address. The daemon renders the text once per interval; the server thread only
//! copies the latest rendering, so scraping never blocks the loop.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};

/// The daemon's counters and gauges.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub promotions: BTreeMap<u32, u64>,
    pub demotions: BTreeMap<u32, u64>,
    /// Resident pages per (pid, tier name).
    pub pages: BTreeMap<(u32, &'static str), u64>,
    pub errors: BTreeMap<String, u64>,
    pub samples_total: u64,
    pub samples_per_second: f64,
    pub source: &'static str,
    pub policy: String,
    pub intervals: u64,
    pub step_seconds_sum: f64,
    pub step_seconds_last: f64,
    pub observe_seconds_sum: f64,
    pub migrate_seconds_sum: f64,
    /// Wall time of whole migration passes (validation, batching, move_pages, bookkeeping).
    pub apply_seconds_sum: f64,
    /// `move_pages` calls that migrate (not the scan's queries).
    pub migrate_calls: u64,
    /// Present pages whose node the scan asked of the kernel.
    pub scan_pages_queried: u64,
    /// Present pages whose node the scan knew from an unchanged frame number.
    pub scan_pages_reused: u64,
    pub pages_migrated: u64,
    pub rate_limited: u64,
    pub external_moves: u64,
    pub targets: u64,
    pub target_exits: u64,
    pub dry_run_skipped: u64,
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    pub fn error(&mut self, kind: &str) {
        *self.errors.entry(kind.to_string()).or_default() += 1;
    }

    pub fn render(&self) -> String {
        let mut o = String::new();
        let head = |o: &mut String, name: &str, kind: &str, help: &str| {
            let _ = writeln!(
                o,
                "# HELP tierkitd_{name} {help}\n# TYPE tierkitd_{name} {kind}"
            );
        };
        head(
            &mut o,
            "info",
            "gauge",
            "Constant 1, labelled with the policy and telemetry source.",
        );
        let _ = writeln!(
            o,
            "tierkitd_info{{policy=\"{}\",source=\"{}\"}} 1",
            esc(&self.policy),
            self.source
        );
        head(
            &mut o,
            "promotions_total",
            "counter",
            "Pages moved to the fast tier, per target.",
        );
        for (pid, n) in &self.promotions {
            let _ = writeln!(o, "tierkitd_promotions_total{{pid=\"{pid}\"}} {n}");
        }
        head(
            &mut o,
            "demotions_total",
            "counter",
            "Pages moved to the slow tier, per target.",
        );
        for (pid, n) in &self.demotions {
            let _ = writeln!(o, "tierkitd_demotions_total{{pid=\"{pid}\"}} {n}");
        }
        head(
            &mut o,
            "pages",
            "gauge",
            "Resident managed pages per target and tier at the last scan.",
        );
        for ((pid, tier), n) in &self.pages {
            let _ = writeln!(o, "tierkitd_pages{{pid=\"{pid}\",tier=\"{tier}\"}} {n}");
        }
        head(
            &mut o,
            "errors_total",
            "counter",
            "Errors by kind (per-page move_pages errnos, scan and telemetry failures).",
        );
        for (k, n) in &self.errors {
            let _ = writeln!(o, "tierkitd_errors_total{{kind=\"{}\"}} {n}", esc(k));
        }
        let scalars: [(&str, &str, &str, String); 17] = [
            ("samples_total", "counter", "Samples (or pseudo-samples) handed to the policy.", self.samples_total.to_string()),
            ("samples_per_second", "gauge", "Samples per second over the last interval.", format!("{:.3}", self.samples_per_second)),
            ("intervals_total", "counter", "Observe-decide-act steps run.", self.intervals.to_string()),
            ("policy_step_seconds_sum", "counter", "Time spent in the policy's step, total.", format!("{:.6}", self.step_seconds_sum)),
            ("policy_step_seconds_last", "gauge", "Time the last policy step took.", format!("{:.6}", self.step_seconds_last)),
            ("observe_seconds_sum", "counter", "Time spent scanning targets and reading telemetry, total.", format!("{:.6}", self.observe_seconds_sum)),
            ("migrate_seconds_sum", "counter", "Time spent in move_pages migrations, total.", format!("{:.6}", self.migrate_seconds_sum)),
            ("apply_seconds_sum", "counter", "Wall time of whole migration passes (validation, batching, move_pages, bookkeeping), total.", format!("{:.6}", self.apply_seconds_sum)),
            ("migrate_calls_total", "counter", "move_pages calls that migrate pages (each moves up to batch-pages pages).", self.migrate_calls.to_string()),
            ("scan_pages_queried_total", "counter", "Present pages whose node the scan asked of the kernel (move_pages query).", self.scan_pages_queried.to_string()),
            ("scan_pages_reused_total", "counter", "Present pages whose node the scan kept because their frame number had not changed.", self.scan_pages_reused.to_string()),
            ("pages_migrated_total", "counter", "Pages moved by tierkitd.", self.pages_migrated.to_string()),
            ("rate_limited_total", "counter", "Migrations refused by the rate limit.", self.rate_limited.to_string()),
            ("external_moves_total", "counter", "Pages found on another tier than tierkitd left them (kernel reclaim or balancing).", self.external_moves.to_string()),
            ("targets", "gauge", "Target processes being managed.", self.targets.to_string()),
            ("target_exits_total", "counter", "Target processes that exited while managed.", self.target_exits.to_string()),
            ("dry_run_skipped_total", "counter", "Migrations not carried out because of --dry-run.", self.dry_run_skipped.to_string()),
        ];
        for (name, kind, help, v) in scalars {
            head(&mut o, name, kind, help);
            let _ = writeln!(o, "tierkitd_{name} {v}");
        }
        o
    }
}

/// Serve `text` at any path of `addr` (loopback only) until the process exits.
pub fn serve(addr: SocketAddr, text: Arc<Mutex<String>>) -> Result<SocketAddr> {
    if !addr.ip().is_loopback() {
        return Err(Error::Config {
            field: "--metrics-addr".into(),
            why: format!("{addr} is not a loopback address (use 127.0.0.1:PORT)"),
        });
    }
    let l = TcpListener::bind(addr).map_err(|e| Error::Config {
        field: "--metrics-addr".into(),
        why: format!("cannot listen on {addr}: {e}"),
    })?;
    let bound = l.local_addr().map_err(|e| Error::Config {
        field: "--metrics-addr".into(),
        why: e.to_string(),
    })?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
                let mut buf = [0u8; 2048];
                let n = s.read(&mut buf).unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]);
                let (status, body) = if req.starts_with("GET ") {
                    ("200 OK", text.lock().map(|t| t.clone()).unwrap_or_default())
                } else {
                    ("405 Method Not Allowed", "GET only\n".to_string())
                };
                let _ = write!(
                    s,
                    "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        })
        .map_err(|e| Error::Config { field: "--metrics-addr".into(), why: e.to_string() })?;
    Ok(bound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpStream;

    #[test]
    fn renders_and_serves() {
        let mut m = Metrics {
            policy: "hemem".into(),
            source: "damon",
            ..Default::default()
        };
        m.promotions.insert(42, 7);
        m.pages.insert((42, "fast"), 10);
        m.error("EBUSY");
        m.error("EBUSY");
        let t = m.render();
        assert!(
            t.contains("tierkitd_promotions_total{pid=\"42\"} 7\n"),
            "{t}"
        );
        assert!(t.contains("tierkitd_pages{pid=\"42\",tier=\"fast\"} 10\n"));
        assert!(t.contains("tierkitd_errors_total{kind=\"EBUSY\"} 2\n"));
        assert!(t.contains("# TYPE tierkitd_samples_total counter\n"));
        // every sample line belongs to a declared metric
        for l in t.lines().filter(|l| !l.starts_with('#')) {
            let name = l.split(['{', ' ']).next().unwrap();
            assert!(t.contains(&format!("# TYPE {name} ")), "{l}");
        }
        let shared = Arc::new(Mutex::new(t.clone()));
        let addr = serve("127.0.0.1:0".parse().unwrap(), shared).unwrap();
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 200 OK"), "{resp}");
        assert!(resp.ends_with(&t));
        let e = serve(
            "0.0.0.0:0".parse().unwrap(),
            Arc::new(Mutex::new(String::new())),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--metrics-addr: 0.0.0.0:0 is not a loopback"),
            "{e}"
        );
    }
}
