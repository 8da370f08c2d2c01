//! Logs on stderr, one line per event: text (`2025-05-20T10:00:00.123Z INFO message`) or JSON
//! (`{"ts":"...","level":"info","msg":"..."}`), chosen by `--log-format`.

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Logger {
    pub format: Format,
    pub min: Level,
}

/// UTC time as RFC 3339 with milliseconds, from the Unix epoch (no time-zone database needed).
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // civil-from-days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        d.subsec_millis()
    )
}

impl Logger {
    pub fn new(format: Format) -> Logger {
        Logger {
            format,
            min: Level::Info,
        }
    }

    pub fn line(&self, level: Level, msg: &str) -> String {
        let ts = rfc3339(SystemTime::now());
        match self.format {
            Format::Text => format!("{ts} {:<5} {msg}", level.as_str().to_uppercase()),
            Format::Json => {
                serde_json::json!({"ts": ts, "level": level.as_str(), "msg": msg}).to_string()
            }
        }
    }

    pub fn log(&self, level: Level, msg: impl AsRef<str>) {
        if level < self.min {
            return;
        }
        let line = self.line(level, msg.as_ref());
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "{line}");
    }

    pub fn info(&self, msg: impl AsRef<str>) {
        self.log(Level::Info, msg)
    }
    pub fn warn(&self, msg: impl AsRef<str>) {
        self.log(Level::Warn, msg)
    }
    pub fn error(&self, msg: impl AsRef<str>) {
        self.log(Level::Error, msg)
    }
    pub fn debug(&self, msg: impl AsRef<str>) {
        self.log(Level::Debug, msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_and_formats() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_747_735_200_123); // 2025-05-20T10:00:00.123Z
        assert_eq!(rfc3339(t), "2025-05-20T10:00:00.123Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000Z"
        );
        let j = Logger::new(Format::Json).line(Level::Warn, "a \"quoted\" msg");
        let v: serde_json::Value = serde_json::from_str(&j).unwrap();
        assert_eq!(v["level"], "warn");
        assert_eq!(v["msg"], "a \"quoted\" msg");
        let t = Logger::new(Format::Text).line(Level::Info, "hello");
        assert!(t.ends_with("Z INFO  hello"), "{t}");
    }
}
