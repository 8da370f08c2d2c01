//! Logging: `tracing` events, written to stderr by `tracing-subscriber`, one line per event.
//!
//! - `--log-format text`: `2025-05-20T10:00:00.123456Z  INFO message` (UTC, RFC 3339);
//! - `--log-format json`: `{"timestamp":"...","level":"INFO","message":"...","target":"tierkitd::linux"}`.
//!
//! Which events are written: the `--log-level` flag, else the `TIERKITD_LOG` environment variable,
//! else the config file's `log-level`, else `info` (resolved in [`crate::config`]). Events carry
//! their module as the target (`tierkitd::daemon`, `tierkitd::linux`), so `TIERKITD_LOG` can
//! switch on one module's debug output: `TIERKITD_LOG=info,tierkitd::linux=debug`.

use tracing::Subscriber;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// The environment variable with filter directives (a level, or `target=level` pairs).
pub const ENV: &str = "TIERKITD_LOG";

/// The levels, most severe first.
pub const LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

/// A `--log-level` value: one of [`LEVELS`].
pub fn parse_level(s: &str) -> std::result::Result<&'static str, String> {
    let t = s.trim().to_ascii_lowercase();
    LEVELS
        .iter()
        .find(|l| **l == t)
        .copied()
        .ok_or_else(|| format!("`{s}` is not a log level ({})", LEVELS.join(", ")))
}

/// Check `TIERKITD_LOG`-style directives: comma-separated, each a level or `target=level`.
/// (`tracing-subscriber` alone would take a misspelt level, `TIERKITD_LOG=verbose`, for the
/// name of a target and silence everything else.)
pub fn check_directives(s: &str) -> std::result::Result<(), String> {
    let parts: Vec<&str> = s
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() {
        return Err(
            "empty (give a level, e.g. debug, or directives like info,tierkitd::linux=debug)"
                .into(),
        );
    }
    for p in &parts {
        let level = p.rsplit_once('=').map_or(*p, |(_, l)| l);
        if parse_level(level).is_err() && !level.eq_ignore_ascii_case("off") {
            return Err(format!(
                "`{p}` is neither a level ({}) nor target=level",
                LEVELS.join(", ")
            ));
        }
    }
    EnvFilter::try_new(s)
        .map(|_| ())
        .map_err(|e| format!("`{s}`: {e}"))
}

/// A subscriber that writes the events that pass `directives` (checked by [`check_directives`])
/// to `writer` in `format`.
pub fn subscriber<W>(
    format: Format,
    directives: &str,
    writer: W,
) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let filter = EnvFilter::try_new(directives).unwrap_or_else(|_| EnvFilter::new("info"));
    let base = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_env_filter(filter)
        .with_ansi(false);
    match format {
        Format::Text => Box::new(base.with_target(false).finish()),
        Format::Json => Box::new(
            base.json()
                .flatten_event(true)
                .with_current_span(false)
                .with_span_list(false)
                .finish(),
        ),
    }
}

/// Log to stderr from now on (the first call wins).
pub fn init(format: Format, directives: &str) {
    let _ =
        tracing::subscriber::set_global_default(subscriber(format, directives, std::io::stderr));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn levels_and_directives() {
        assert_eq!(parse_level("DEBUG"), Ok("debug"));
        assert!(parse_level("verbose")
            .unwrap_err()
            .contains("error, warn, info, debug, trace"));
        assert!(check_directives("debug").is_ok());
        assert!(check_directives("info,tierkitd::linux=debug").is_ok());
        assert!(check_directives("off").is_ok());
        assert!(check_directives("verbose")
            .unwrap_err()
            .contains("`verbose` is neither"));
        assert!(check_directives("tierkitd=loud").is_err());
        assert!(check_directives(" , ").is_err());
    }

    /// A writer that keeps what is written, shared with the test.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(format: Format, directives: &str) -> Vec<String> {
        let buf = Buf::default();
        let out = buf.clone();
        let sub = subscriber(format, directives, move || out.clone());
        tracing::subscriber::with_default(sub, || {
            tracing::info!("pid {} (workload) joined the targets", 210);
            tracing::debug!("asked: promote {}, demote {}", 3, 0);
            tracing::warn!("a \"quoted\" msg");
        });
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        text.lines().map(String::from).collect()
    }

    #[test]
    fn text_and_json_lines() {
        let t = lines(Format::Text, "info");
        assert_eq!(t.len(), 2, "{t:?}");
        // 2025-05-20T10:00:00.123456Z  INFO pid 210 (workload) joined the targets
        let (ts, rest) = t[0].split_once(' ').unwrap();
        assert!(
            ts.ends_with('Z') && ts.contains('T') && ts.len() >= 20,
            "{ts}"
        );
        assert_eq!(
            rest.trim_start(),
            "INFO pid 210 (workload) joined the targets"
        );
        assert!(t[1].ends_with("WARN a \"quoted\" msg"), "{}", t[1]);
        let d = lines(Format::Text, "info,tierkitd::log::tests=debug");
        assert!(d[1].ends_with("DEBUG asked: promote 3, demote 0"), "{d:?}");
        assert_eq!(lines(Format::Text, "error").len(), 0);
        let j = lines(Format::Json, "debug");
        assert_eq!(j.len(), 3, "{j:?}");
        let v: serde_json::Value = serde_json::from_str(&j[2]).unwrap();
        assert_eq!(v["level"], "WARN");
        assert_eq!(v["message"], "a \"quoted\" msg");
        assert_eq!(v["target"], "tierkitd::log::tests");
        assert!(v["timestamp"].as_str().unwrap().ends_with('Z'));
        // the shape the kernel tests check (tests/kernel/guest/tests.sh, t_kill)
        assert!(
            j[0].starts_with("{\"timestamp\":\"")
                && j[0].contains(",\"level\":\"INFO\",\"message\":\"pid 210"),
            "{}",
            j[0]
        );
    }
}
