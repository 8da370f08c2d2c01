//! The command line and the TOML config file. The file takes the flags' names as keys
//! (`fast-nodes = "0"`; `_` may stand for `-`), plus the daemon settings that have no flag
//! (`interval-ms`, `migrate-mib-s`, ...). Flags win over the file. Unknown keys and bad values
//! are errors that name the key.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;

use crate::error::{Error, Result};
use crate::linux::{Settings, Targets};
use crate::log::{self, Format};
use crate::source::damon::Attrs;
use crate::topology::parse_list;

/// tierkitd: run a tierkit tiering policy on real Linux processes.
///
/// Watches the given processes (or a cgroup's), reads their page placement and access telemetry
/// (PEBS samples, DAMON, or soft-dirty bits, best available), runs the policy every interval and
/// moves pages between the fast and slow NUMA nodes with move_pages(2).
#[derive(Parser, Debug, Default)]
#[command(
    name = "tierkitd",
    version,
    after_help = AFTER_HELP,
    override_usage = "tierkitd (--pid PID... | --cgroup PATH) --policy SPEC [--config FILE] [--fast-nodes LIST] [--slow-nodes LIST]\n                [--fast-limit BYTES] [--dry-run] [--metrics-addr 127.0.0.1:PORT] [--log-format text|json]\n                [--log-level LEVEL] [--latency-critical PID...]\n       (targets and policy may also come from the config file)"
)]
pub struct Cli {
    /// Target process IDs (several after one --pid, or --pid repeated). Only these are touched.
    #[arg(
        long,
        value_name = "PID",
        num_args = 1..,
        conflicts_with = "cgroup",
        allow_negative_numbers = true,
        value_parser = parse_pid
    )]
    pub pid: Vec<u32>,
    /// Target a cgroup v2 directory instead: its cgroup.procs is re-read every interval.
    #[arg(long, value_name = "PATH")]
    pub cgroup: Option<PathBuf>,
    /// Policy spec, as in the simulator: base[:k=v,...][+layer...], e.g. `hemem:sample_period=5003`.
    #[arg(long, value_name = "SPEC")]
    pub policy: Option<String>,
    /// TOML file with the same keys as the flags plus daemon settings (see the operator guide).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Nodes of the fast tier (e.g. `0` or `0-1`); default: from the kernel's memory tiers, else the nodes with CPUs.
    #[arg(long, value_name = "LIST")]
    pub fast_nodes: Option<String>,
    /// Nodes of the slow tier; default: the other memory nodes.
    #[arg(long, value_name = "LIST")]
    pub slow_nodes: Option<String>,
    /// The targets' fast-tier budget in bytes (suffixes K, M, G, KiB, MiB, GiB accepted).
    #[arg(long, value_name = "BYTES", allow_hyphen_values = true)]
    pub fast_limit: Option<String>,
    /// Decide but migrate nothing; log what would move.
    #[arg(long)]
    pub dry_run: bool,
    /// Serve Prometheus metrics on this loopback address (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "127.0.0.1:PORT")]
    pub metrics_addr: Option<String>,
    /// Log format on stderr.
    #[arg(long, value_name = "text|json")]
    pub log_format: Option<String>,
    /// Log level: error, warn, info (default), debug or trace. Without this flag the TIERKITD_LOG
    /// environment variable, then the config file's log-level, set it; TIERKITD_LOG also takes
    /// per-module directives, e.g. TIERKITD_LOG=info,tierkitd::linux=debug.
    #[arg(long, value_name = "LEVEL")]
    pub log_level: Option<String>,
    /// Directory of the kernel-tiering state file and lock (`--policy nbt`, `nbt+alto`, `nbt+colloid`;
    /// default /run/tierkitd).
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// `--policy nbt[+alto|+colloid]`: take the kernel's tiering knobs over from another manager (numa_balancing
    /// already in memory-tiering mode); their values are restored at exit.
    #[arg(long)]
    pub take_over: bool,
    /// Targets that are latency-critical (Vulcan's QoS class, §3.3: served first when fast memory
    /// is lent); every other target is best-effort. Each must be one of the --pid targets.
    #[arg(long, value_name = "PID", num_args = 1.., value_parser = parse_pid)]
    pub latency_critical: Vec<u32>,
}

const AFTER_HELP: &str = "\
Config-file-only settings (defaults): interval-ms (500), batch-pages (4096), migrate-mib-s (512; 0 = unlimited),
fast-reserve-pct (2), scan-budget-pct (10), source (auto | pebs | damon | softdirty), samples-per-page (1.0), damon-sample-us (5000),
damon-aggr-us (100000), damon-update-us (1000000), damon-min-regions (10), damon-max-regions (500),
status-every-s (10), log-level (info); state-dir and take-over as the flags.

Exit status: 0 after SIGTERM/SIGINT, 2 for bad flags or config, 1 when the host cannot serve the policy
(missing telemetry, rights, topology). See docs/operator-guide.md.";

/// Which telemetry source to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SourcePref {
    Auto,
    Pebs,
    Damon,
    SoftDirty,
}

/// Everything tierkitd runs with, validated.
#[derive(Clone, Debug)]
pub struct Config {
    pub targets: Targets,
    pub policy: String,
    pub fast_nodes: Option<Vec<u32>>,
    pub slow_nodes: Option<Vec<u32>>,
    pub settings: Settings,
    pub metrics_addr: Option<SocketAddr>,
    pub log_format: Format,
    /// `tracing` filter directives: a level, or TIERKITD_LOG's directives.
    pub log_filter: String,
    pub source: SourcePref,
    pub damon: Attrs,
    pub samples_per_page: f64,
    pub status_every: Duration,
    /// Kernel-tiering mode's state directory, and whether it may take the knobs over.
    pub state_dir: PathBuf,
    pub take_over: bool,
}

const KEYS: &[&str] = &[
    "pid",
    "cgroup",
    "policy",
    "fast-nodes",
    "slow-nodes",
    "fast-limit",
    "dry-run",
    "metrics-addr",
    "log-format",
    "log-level",
    "interval-ms",
    "batch-pages",
    "migrate-mib-s",
    "fast-reserve-pct",
    "scan-budget-pct",
    "source",
    "samples-per-page",
    "damon-sample-us",
    "damon-aggr-us",
    "damon-update-us",
    "damon-min-regions",
    "damon-max-regions",
    "status-every-s",
    "state-dir",
    "take-over",
    "latency-critical",
];

/// A `--pid` value: a positive process id (negative numbers reach this check, not clap's).
fn parse_pid(s: &str) -> std::result::Result<u32, String> {
    match s.trim().parse::<i64>() {
        // 0 passes here and gets its own message from `resolve`
        Ok(n) if (0..=i32::MAX as i64).contains(&n) => Ok(n as u32),
        _ => Err(format!(
            "`{s}` is not a process id (expected a positive integer)"
        )),
    }
}

/// A command-line error from clap as one line in tierkitd's style (`tierkitd: error: ...`
/// is added by the caller): clap's first line without its `error: ` prefix, and where to look.
pub fn clap_error_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("invalid arguments");
    let first = first.strip_prefix("error: ").unwrap_or(first);
    format!("{first} (see tierkitd --help)")
}

fn cfg_err(field: &str, why: impl Into<String>) -> Error {
    Error::Config {
        field: field.into(),
        why: why.into(),
    }
}

/// Parse a byte count: `1073741824`, `512M`, `1.5GiB`, `64k`.
pub fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| format!("`{s}` is not a byte count (e.g. 512M, 2GiB, 1073741824)"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        u => return Err(format!("unknown unit `{u}` in `{s}` (use K, M, G, T)")),
    };
    let v = num * mult as f64;
    if !(v.is_finite() && v >= 1.0) {
        return Err(format!("`{s}` must be at least 1 byte"));
    }
    Ok(v as u64)
}

fn as_int(k: &str, v: &toml::Value, min: i64, max: i64) -> Result<i64> {
    let i = v
        .as_integer()
        .ok_or_else(|| cfg_err(k, format!("expected an integer, got {v}")))?;
    if i < min || i > max {
        return Err(cfg_err(k, format!("{i} is out of range [{min}, {max}]")));
    }
    Ok(i)
}

fn as_float(k: &str, v: &toml::Value, min: f64, max: f64) -> Result<f64> {
    let f = v
        .as_float()
        .or_else(|| v.as_integer().map(|i| i as f64))
        .ok_or_else(|| cfg_err(k, format!("expected a number, got {v}")))?;
    if !(f >= min && f <= max) {
        return Err(cfg_err(k, format!("{f} is out of range [{min}, {max}]")));
    }
    Ok(f)
}

/// An array of process ids (`pid`, `latency-critical`).
fn as_pids(k: &str, v: &toml::Value) -> Result<Vec<u32>> {
    let arr = v.as_array().ok_or_else(|| {
        cfg_err(
            k,
            format!("expected an array of process ids, e.g. {k} = [1234]"),
        )
    })?;
    arr.iter()
        .map(|x| Ok(as_int(k, x, 1, i32::MAX as i64)? as u32))
        .collect()
}

fn as_str<'a>(k: &str, v: &'a toml::Value) -> Result<&'a str> {
    v.as_str()
        .ok_or_else(|| cfg_err(k, format!("expected a string, got {v}")))
}

/// Check the file's keys and merge those with a flag into `cli` where the flag is absent
/// (flags win); return the settings only the file has.
fn read_file(cli: &mut Cli, table: &toml::Table) -> Result<FileSettings> {
    let file = |k: &str| table.get(k);
    let mut s = Settings::default();
    let mut damon = Attrs::default();
    let mut source = SourcePref::Auto;
    let mut samples_per_page = 1.0;
    let mut status_every = Duration::from_secs(10);
    // the file first, flags override
    let pids = file("pid")
        .map(|v| as_pids("pid", v))
        .transpose()?
        .unwrap_or_default();
    let cgroup = file("cgroup")
        .map(|v| as_str("cgroup", v).map(PathBuf::from))
        .transpose()?;
    if let Some(v) = file("latency-critical") {
        let lc = as_pids("latency-critical", v)?;
        if cli.latency_critical.is_empty() {
            cli.latency_critical = lc;
        }
    }
    if cli.pid.is_empty() && cli.cgroup.is_none() {
        cli.pid = pids;
        cli.cgroup = cgroup;
    }
    if let Some(v) = file("policy") {
        let p = as_str("policy", v)?;
        cli.policy.get_or_insert_with(|| p.to_string());
    }
    // Values of keys that are flags too: checked here with the flag's check, named by the key.
    let checks: [(&str, ValueCheck); 5] = [
        ("fast-nodes", |v| parse_list(v).map(|_| ())),
        ("slow-nodes", |v| parse_list(v).map(|_| ())),
        ("fast-limit", |v| parse_bytes(v).map(|_| ())),
        ("metrics-addr", |v| parse_addr(v).map(|_| ())),
        ("log-format", |v| parse_format(v).map(|_| ())),
    ];
    for (key, check) in checks {
        let Some(v) = file(key) else { continue };
        let text = match v {
            toml::Value::Integer(i) => i.to_string(),
            _ => as_str(key, v)?.to_string(),
        };
        check(&text).map_err(|e| cfg_err(key, e))?;
        let slot = match key {
            "fast-nodes" => &mut cli.fast_nodes,
            "slow-nodes" => &mut cli.slow_nodes,
            "fast-limit" => &mut cli.fast_limit,
            "metrics-addr" => &mut cli.metrics_addr,
            _ => &mut cli.log_format,
        };
        slot.get_or_insert(text);
    }
    let log_level = file("log-level")
        .map(|v| {
            as_str("log-level", v)
                .and_then(|t| log::parse_level(t).map_err(|e| cfg_err("log-level", e)))
        })
        .transpose()?;
    if let Some(v) = file("state-dir") {
        let d = as_str("state-dir", v)?;
        cli.state_dir.get_or_insert_with(|| PathBuf::from(d));
    }
    if let Some(v) = file("take-over") {
        let t = v
            .as_bool()
            .ok_or_else(|| cfg_err("take-over", format!("expected true or false, got {v}")))?;
        cli.take_over |= t;
    }
    if let Some(v) = file("dry-run") {
        let d = v
            .as_bool()
            .ok_or_else(|| cfg_err("dry-run", format!("expected true or false, got {v}")))?;
        cli.dry_run |= d;
    }
    for (k, v) in table {
        match k.as_str() {
            "interval-ms" => {
                s.interval = Duration::from_millis(as_int(k, v, 10, 3_600_000)? as u64)
            }
            "batch-pages" => s.batch_pages = as_int(k, v, 1, 1 << 20)? as usize,
            "migrate-mib-s" => s.migrate_mib_s = as_float(k, v, 0.0, 1e7)?,
            "fast-reserve-pct" => s.fast_reserve_pct = as_float(k, v, 0.0, 90.0)?,
            "scan-budget-pct" => s.scan_budget_pct = as_float(k, v, 0.1, 100.0)?,
            "samples-per-page" => samples_per_page = as_float(k, v, 0.001, 1000.0)?,
            "damon-sample-us" => damon.sample_us = as_int(k, v, 100, 10_000_000)? as u64,
            "damon-aggr-us" => damon.aggr_us = as_int(k, v, 1000, 100_000_000)? as u64,
            "damon-update-us" => damon.update_us = as_int(k, v, 1000, 1_000_000_000)? as u64,
            "damon-min-regions" => damon.min_regions = as_int(k, v, 3, 1 << 20)? as u64,
            "damon-max-regions" => damon.max_regions = as_int(k, v, 3, 1 << 20)? as u64,
            "status-every-s" => status_every = Duration::from_secs(as_int(k, v, 1, 86400)? as u64),
            "source" => {
                source = match as_str(k, v)? {
                    "auto" => SourcePref::Auto,
                    "pebs" => SourcePref::Pebs,
                    "damon" => SourcePref::Damon,
                    "softdirty" => SourcePref::SoftDirty,
                    o => {
                        return Err(cfg_err(
                            k,
                            format!("`{o}` is not one of auto, pebs, damon, softdirty"),
                        ))
                    }
                }
            }
            _ => {}
        }
    }
    if damon.min_regions > damon.max_regions {
        return Err(cfg_err(
            "damon-min-regions",
            "must not exceed damon-max-regions",
        ));
    }
    if damon.aggr_us < damon.sample_us {
        return Err(cfg_err("damon-aggr-us", "must be at least damon-sample-us"));
    }
    Ok(FileSettings {
        settings: s,
        damon,
        source,
        samples_per_page,
        status_every,
        log_level,
    })
}

/// A check of a flag's value given as a file key: the message without the key.
type ValueCheck = fn(&str) -> std::result::Result<(), String>;

/// What the config file sets that no flag does.
struct FileSettings {
    settings: Settings,
    damon: Attrs,
    source: SourcePref,
    samples_per_page: f64,
    status_every: Duration,
    log_level: Option<&'static str>,
}

/// Build the configuration from the command line, the environment (`TIERKITD_LOG`) and, if
/// given, the config file.
pub fn resolve(cli: Cli) -> Result<Config> {
    resolve_with_env(cli, std::env::var(log::ENV).ok())
}

/// [`resolve`] with `TIERKITD_LOG`'s value given.
pub fn resolve_with_env(cli: Cli, log_env: Option<String>) -> Result<Config> {
    let mut cli = cli;
    let mut table = toml::Table::new();
    if let Some(path) = &cli.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| cfg_err("--config", format!("{}: {e}", path.display())))?;
        table = load_table(path, &text)?;
    }
    // Every key of the file is checked, also those a flag overrides; errors name the file.
    let FileSettings {
        settings: mut s,
        damon,
        source,
        samples_per_page,
        status_every,
        log_level: file_log_level,
    } = read_file(&mut cli, &table).map_err(|e| match (e, &cli.config) {
        (Error::Config { field, why }, Some(path)) => {
            let shown = path.display().to_string();
            let why = if why.contains(&shown) {
                why
            } else {
                format!("{why} (in {shown})")
            };
            Error::Config { field, why }
        }
        (e, _) => e,
    })?;
    let targets = match (cli.pid.is_empty(), cli.cgroup) {
        (false, Some(_)) => {
            return Err(cfg_err(
                "--pid/--cgroup",
                "give either process ids or a cgroup, not both",
            ))
        }
        (false, None) => {
            let mut p = cli.pid.clone();
            p.sort_unstable();
            p.dedup();
            if p.contains(&0) {
                return Err(cfg_err("--pid", "0 is not a process id"));
            }
            Targets::Pids(p)
        }
        (true, Some(c)) => Targets::Cgroup(c),
        (true, None) => {
            return Err(cfg_err(
                "--pid/--cgroup",
                "no targets: give --pid PID... or --cgroup PATH",
            ))
        }
    };
    let policy = cli.policy.ok_or_else(|| {
        cfg_err(
            "--policy",
            "missing: give a policy spec, e.g. --policy hemem",
        )
    })?;
    let nodes = |flag: &str, v: Option<String>| -> Result<Option<Vec<u32>>> {
        v.map(|s| parse_list(&s).map_err(|e| cfg_err(flag, e)))
            .transpose()
    };
    let mut lc = cli.latency_critical.clone();
    lc.sort_unstable();
    lc.dedup();
    if let Targets::Pids(p) = &targets {
        if let Some(x) = lc.iter().find(|x| !p.contains(x)) {
            return Err(cfg_err(
                "--latency-critical",
                format!("pid {x} is not one of the --pid targets"),
            ));
        }
    }
    s.latency_critical = lc;
    s.dry_run = cli.dry_run;
    s.fast_limit_bytes = cli
        .fast_limit
        .map(|b| parse_bytes(&b).map_err(|e| cfg_err("--fast-limit", e)))
        .transpose()?;
    let metrics_addr = cli
        .metrics_addr
        .map(|a| parse_addr(&a).map_err(|e| cfg_err("--metrics-addr", e)))
        .transpose()?;
    let log_format = cli
        .log_format
        .map(|f| parse_format(&f).map_err(|e| cfg_err("--log-format", e)))
        .transpose()?
        .unwrap_or(Format::Text);
    // the flag, then the environment, then the file
    let log_filter = match (cli.log_level, log_env.filter(|e| !e.trim().is_empty())) {
        (Some(l), _) => log::parse_level(&l)
            .map_err(|e| cfg_err("--log-level", e))?
            .to_string(),
        (None, Some(env)) => {
            log::check_directives(&env).map_err(|e| cfg_err(log::ENV, e))?;
            env
        }
        (None, None) => file_log_level.unwrap_or("info").to_string(),
    };
    Ok(Config {
        targets,
        policy,
        fast_nodes: nodes("--fast-nodes", cli.fast_nodes)?,
        slow_nodes: nodes("--slow-nodes", cli.slow_nodes)?,
        settings: s,
        metrics_addr,
        log_format,
        log_filter,
        source,
        damon: Attrs {
            samples_per_page,
            ..damon
        },
        samples_per_page,
        status_every,
        state_dir: cli
            .state_dir
            .unwrap_or_else(|| PathBuf::from(crate::kernel::STATE_DIR)),
        take_over: cli.take_over,
    })
}

/// A metrics address: loopback only.
fn parse_addr(a: &str) -> std::result::Result<SocketAddr, String> {
    let addr = a
        .parse::<SocketAddr>()
        .map_err(|_| format!("`{a}` is not an address like 127.0.0.1:9464"))?;
    if !addr.ip().is_loopback() {
        return Err(format!(
            "{addr} is not a loopback address (use 127.0.0.1:PORT)"
        ));
    }
    Ok(addr)
}

fn parse_format(f: &str) -> std::result::Result<Format, String> {
    match f {
        "text" => Ok(Format::Text),
        "json" => Ok(Format::Json),
        o => Err(format!("`{o}` is not text or json")),
    }
}

/// Parse the file and check its keys (normalising `_` to `-`).
fn load_table(path: &Path, text: &str) -> Result<toml::Table> {
    let raw: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        cfg_err("--config", format!("{}: {}", path.display(), e.message()))
    })?;
    let mut out = toml::Table::new();
    for (k, v) in raw {
        let norm = k.replace('_', "-");
        if !KEYS.contains(&norm.as_str()) {
            return Err(cfg_err(
                &k,
                format!(
                    "unknown key in {}{}; keys: {}",
                    path.display(),
                    tierkit_core::suggest::hint(&norm, KEYS.iter().copied()),
                    KEYS.join(", ")
                ),
            ));
        }
        out.insert(norm, v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli(args: &[&str]) -> std::result::Result<Cli, clap::Error> {
        let mut v = vec!["tierkitd"];
        v.extend_from_slice(args);
        Cli::try_parse_from(v)
    }

    fn with_file(text: &str, args: &[&str]) -> Result<Config> {
        // One file per call: tests run in parallel threads of one process, and a name made of
        // the text's length alone let two tests share (and delete) each other's file.
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("tierkitd-cfg-{}-{n}.toml", std::process::id()));
        std::fs::write(&p, text).unwrap();
        let mut a = vec!["--config", p.to_str().unwrap()];
        a.extend_from_slice(args);
        let r = resolve(cli(&a).unwrap());
        let _ = std::fs::remove_file(&p);
        r
    }

    #[test]
    fn flags_parse() {
        let c = resolve(
            cli(&[
                "--pid",
                "12",
                "7",
                "--pid",
                "9",
                "--policy",
                "hemem",
                "--fast-limit",
                "512M",
                "--dry-run",
                "--log-format",
                "json",
                "--metrics-addr",
                "127.0.0.1:9464",
                "--slow-nodes",
                "1-2",
            ])
            .unwrap(),
        )
        .unwrap();
        assert_eq!(c.targets, Targets::Pids(vec![7, 9, 12]));
        assert_eq!(c.settings.fast_limit_bytes, Some(512 << 20));
        assert!(c.settings.dry_run);
        assert_eq!(c.log_format, Format::Json);
        assert_eq!(c.slow_nodes, Some(vec![1, 2]));
        assert_eq!(c.metrics_addr.unwrap().port(), 9464);
        assert!(cli(&["--pid", "1", "--cgroup", "/x", "--policy", "notier"]).is_err());
    }

    #[test]
    fn bad_input_names_the_field() {
        let e = |a: &[&str]| resolve(cli(a).unwrap()).unwrap_err().to_string();
        assert!(e(&["--policy", "hemem"]).starts_with("--pid/--cgroup: no targets"));
        assert!(e(&["--pid", "1"]).starts_with("--policy: missing"));
        assert!(e(&["--pid", "1", "--policy", "x", "--fast-limit", "12Q"])
            .starts_with("--fast-limit: unknown unit `q`"));
        assert!(
            e(&["--pid", "1", "--policy", "x", "--fast-nodes", "0-"]).starts_with("--fast-nodes:")
        );
        assert!(e(&["--pid", "1", "--policy", "x", "--log-format", "xml"])
            .starts_with("--log-format: `xml`"));
        assert!(
            e(&["--pid", "1", "--policy", "x", "--metrics-addr", "0.0.0.0:1"])
                .contains("not a loopback")
        );
        assert!(
            e(&["--pid", "1", "--policy", "x", "--metrics-addr", "nope"])
                .starts_with("--metrics-addr: `nope`")
        );
        assert!(e(&["--pid", "0", "--policy", "x"]).starts_with("--pid: 0"));
    }

    /// Vulcan's QoS classes: `--latency-critical` (or the file's `latency-critical`) names
    /// targets; a pid that is not a target is an error naming the flag.
    #[test]
    fn latency_critical_targets() {
        let c = resolve(
            cli(&[
                "--pid",
                "12",
                "7",
                "--latency-critical",
                "7",
                "--policy",
                "vulcan",
            ])
            .unwrap(),
        )
        .unwrap();
        assert_eq!(c.settings.latency_critical, vec![7]);
        let c = with_file(
            "pid = [3, 4]\nlatency-critical = [4]\n",
            &["--policy", "vulcan"],
        )
        .unwrap();
        assert_eq!(c.settings.latency_critical, vec![4]);
        let e = resolve(
            cli(&[
                "--pid",
                "12",
                "--latency-critical",
                "13",
                "--policy",
                "vulcan",
            ])
            .unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("--latency-critical: pid 13 is not one of the --pid targets"),
            "{e}"
        );
        let e = with_file("pid = [3]\nlatency-critical = 3\n", &["--policy", "vulcan"])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("latency-critical: expected an array"), "{e}");
    }

    #[test]
    fn config_file_keys_and_precedence() {
        let c = with_file(
            "pid = [5]\npolicy = \"hemem\"\nfast_nodes = \"0\"\nfast-limit = 1048576\ninterval-ms = 200\nmigrate-mib-s = 0\nsource = \"damon\"\ndamon-aggr-us = 200000\n",
            &["--policy", "notier"],
        )
        .unwrap();
        assert_eq!(c.targets, Targets::Pids(vec![5]));
        assert_eq!(c.policy, "notier");
        assert_eq!(c.fast_nodes, Some(vec![0]));
        assert_eq!(c.settings.fast_limit_bytes, Some(1 << 20));
        assert_eq!(c.settings.interval, Duration::from_millis(200));
        assert_eq!(c.settings.migrate_mib_s, 0.0);
        assert_eq!(c.source, SourcePref::Damon);
        assert_eq!(c.damon.aggr_us, 200_000);
        let e = with_file("intervl-ms = 5\n", &["--pid", "1", "--policy", "x"])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("intervl-ms: unknown key") && e.contains("did you mean `interval-ms`"),
            "{e}"
        );
        let e = with_file("interval-ms = \"fast\"\n", &["--pid", "1", "--policy", "x"])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("interval-ms: expected an integer"), "{e}");
        let e = with_file("interval-ms = 1\n", &["--pid", "1", "--policy", "x"])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("interval-ms: 1 is out of range"), "{e}");
        let e = with_file("source = \"perf\"\n", &["--pid", "1", "--policy", "x"])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("source: `perf`"), "{e}");
        let e = with_file("pid = [1\n", &["--policy", "x"])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--config: "), "{e}");
        let e = with_file("dry-run = 3\n", &["--pid", "1", "--policy", "x"])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("dry-run: expected true or false"), "{e}");
    }

    // Issue 19: negative numbers are one-line errors naming the flag; the file's keys are
    // checked even where a flag overrides them, and their errors name the file.
    #[test]
    fn negative_pid_and_fast_limit() {
        for args in [
            &["--pid", "-5", "--policy", "notier"][..],
            &["--policy", "notier", "--pid", "3", "-5"][..],
        ] {
            let e = cli(args).unwrap_err();
            let line = clap_error_line(&e);
            assert!(
                !line.contains('\n')
                    && line.contains("--pid")
                    && line.contains("`-5` is not a process id"),
                "{line}"
            );
        }
        let e = resolve(cli(&["--pid", "1", "--policy", "x", "--fast-limit", "-1G"]).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--fast-limit: `-1G` is not a byte count"),
            "{e}"
        );
        // an unknown flag: clap's first line, no usage block
        let line = clap_error_line(&cli(&["--pidd", "1"]).unwrap_err());
        assert!(!line.contains('\n') && line.contains("--pidd"), "{line}");
    }

    #[test]
    fn file_keys_are_checked_when_a_flag_overrides_them() {
        let e = with_file(
            "dry-run = 3\n",
            &["--pid", "1", "--policy", "x", "--dry-run"],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("dry-run: expected true or false, got 3 (in ") && e.contains(".toml)"),
            "{e}"
        );
        let e = with_file(
            "fast-limit = \"12Q\"\n",
            &["--pid", "1", "--policy", "x", "--fast-limit", "1G"],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("fast-limit: unknown unit `q`") && e.contains(".toml)"),
            "{e}"
        );
        let e = with_file("pid = [0]\n", &["--pid", "1", "--policy", "x"])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("pid: 0 is out of range"), "{e}");
        let e = with_file(
            "policy = 3\nlog-format = \"xml\"\n",
            &["--pid", "1", "--policy", "x"],
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("policy: expected a string"), "{e}");
        let e = with_file(
            "log-format = \"xml\"\n",
            &["--pid", "1", "--policy", "x", "--log-format", "json"],
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("log-format: `xml`"), "{e}");
        // the flag still wins over a valid file value
        let c = with_file(
            "dry-run = false\nfast-limit = \"2G\"\n",
            &[
                "--pid",
                "1",
                "--policy",
                "x",
                "--dry-run",
                "--fast-limit",
                "1G",
            ],
        )
        .unwrap();
        assert!(c.settings.dry_run);
        assert_eq!(c.settings.fast_limit_bytes, Some(1 << 30));
    }

    #[test]
    fn log_level_from_the_flag_the_environment_or_the_file() {
        let args = ["--pid", "1", "--policy", "x"];
        let with = |text: &str, extra: &[&str], env: Option<&str>| {
            static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let p =
                std::env::temp_dir().join(format!("tierkitd-log-{}-{n}.toml", std::process::id()));
            std::fs::write(&p, text).unwrap();
            let mut a = vec!["--config", p.to_str().unwrap()];
            a.extend_from_slice(&args);
            a.extend_from_slice(extra);
            let r = resolve_with_env(cli(&a).unwrap(), env.map(String::from));
            let _ = std::fs::remove_file(&p);
            r
        };
        assert_eq!(with("", &[], None).unwrap().log_filter, "info");
        assert_eq!(
            with("log-level = \"warn\"\n", &[], None)
                .unwrap()
                .log_filter,
            "warn"
        );
        let env = Some("info,tierkitd::linux=debug");
        assert_eq!(
            with("log-level = \"warn\"\n", &[], env).unwrap().log_filter,
            "info,tierkitd::linux=debug"
        );
        let c = with("log-level = \"warn\"\n", &["--log-level", "DEBUG"], env).unwrap();
        assert_eq!(c.log_filter, "debug");
        let e = |r: Result<Config>| r.unwrap_err().to_string();
        assert!(e(with("", &["--log-level", "loud"], None))
            .starts_with("--log-level: `loud` is not a log level"),);
        assert!(e(with("", &[], Some("verbose"))).starts_with("TIERKITD_LOG: `verbose` is neither"));
        // the file's key is checked even where the flag or the environment decides
        let bad = e(with(
            "log-level = \"loud\"\n",
            &["--log-level", "info"],
            None,
        ));
        assert!(
            bad.starts_with("log-level: `loud`") && bad.contains(".toml)"),
            "{bad}"
        );
    }

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_bytes("64k").unwrap(), 65536);
        assert!(parse_bytes("0").is_err());
        assert!(parse_bytes("").is_err());
    }
}
