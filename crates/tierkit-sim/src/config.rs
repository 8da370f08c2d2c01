//! Experiment files (TOML) and `--set` overrides into a validated [`Experiment`].
//!
//! Unknown keys are rejected with the nearest valid name; every value is type- and
//! range-checked; messages name the file and the dotted key.

use std::path::Path;

use tierkit_core::params::{ParamValue, Params};
use tierkit_core::suggest;
use tierkit_core::telemetry::QosClass;
use toml::{Table, Value};

use crate::curve::{Curve, QueueFit, Table as CurveTable};
use crate::error::{Result, SimError};
use crate::platform::{self, TierModel};
use crate::spec::*;
use crate::workloads;

/// Keys every experiment accepts (besides the workload's own parameters).
pub const COMMON_KEYS: &[(&str, &str)] = &[
    (
        "workload",
        "built-in workload name, or \"custom\" with [[process]] tables",
    ),
    ("name", "a label for reports"),
    (
        "policy",
        "policy spec to run when none is given on the command line (default notier)",
    ),
    ("description", "free text"),
    (
        "duration_s",
        "simulated seconds (an upper bound when threads have work_ops)",
    ),
    ("platform", "platform preset (tierkit list platforms)"),
    ("fast_tier_gb", "fast-tier capacity in GiB"),
    (
        "fast_ratio",
        "fast:slow as \"F:S\" of the footprint (alternative to fast_tier_gb)",
    ),
    (
        "slow_tier_gb",
        "slow-tier capacity in GiB (default: footprint + 25%)",
    ),
    ("seed", "random seed; the same seed gives the same result"),
    ("epoch_ms", "simulation epoch in ms (default 1)"),
    (
        "counter_noise",
        "relative std. deviation of seeded noise on the uncore counters (default 0)",
    ),
    (
        "report_interval_ms",
        "time-series resolution in ms (default 100)",
    ),
    (
        "kswapd_shares_cpu",
        "true: kswapd runs on the processes' one CPU and takes turns with their threads, which make no access in its turns (default false)",
    ),
    (
        "kswapd_cpu_share",
        "with kswapd_shares_cpu: the share of kswapd's running time in which it has the CPU, the threads having the rest (default 0.5, CFS's fair share beside one thread; 1: all of it)",
    ),
    (
        "kswapd_slice_ms",
        "with kswapd_shares_cpu: the length of kswapd's turns on the CPU in ms, alternating with the threads' (default 4, one tick at HZ=250; 0: shared continuously)",
    ),
    ("page_size", "\"4KiB\" or \"2MiB\""),
    (
        "tier",
        "[[tier]] tables replacing the platform's tier curves",
    ),
    (
        "costs",
        "a [costs] table replacing some of the platform's mechanism costs (hint_fault_us, migrate_fixed_us, copy_gbps, shootdown_*_us, sample_ns, migration_threads)",
    ),
    ("process", "[[process]] tables (workload = \"custom\")"),
    (
        "antagonist",
        "[[antagonist]] tables (workload = \"custom\")",
    ),
];

/// Where values come from, for messages.
struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, key: &str, msg: impl Into<String>) -> SimError {
        if key.is_empty() {
            SimError::config(self.file, msg)
        } else {
            SimError::config(format!("{}: `{}`", self.file, key), msg)
        }
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

/// The longest process, object or tier name, in characters (names label time-series columns).
pub const MAX_NAME_CHARS: usize = 128;

/// A process, object or tier name: non-empty, at most [`MAX_NAME_CHARS`], no control characters.
fn check_name(ctx: &Ctx, key: &str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(ctx.err(key, "expected a non-empty name"));
    }
    let n = name.chars().count();
    if n > MAX_NAME_CHARS {
        return Err(ctx.err(
            key,
            format!("expected a name of at most {MAX_NAME_CHARS} characters, got {n}"),
        ));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(ctx.err(
            key,
            format!(
                "expected a name without control characters, got one with {:?}",
                c
            ),
        ));
    }
    Ok(())
}

/// A table being read: typed getters, and a check that no key was left unread.
struct Reader<'a, 'c> {
    ctx: &'c Ctx<'c>,
    path: String,
    t: &'a Table,
    seen: Vec<String>,
}

impl<'a, 'c> Reader<'a, 'c> {
    fn new(ctx: &'c Ctx<'c>, path: String, t: &'a Table) -> Self {
        Reader {
            ctx,
            path,
            t,
            seen: Vec::new(),
        }
    }

    fn key(&self, k: &str) -> String {
        join(&self.path, k)
    }

    fn raw(&mut self, k: &str) -> Option<&'a Value> {
        self.seen.push(k.to_string());
        self.t.get(k)
    }

    fn f64_opt(&mut self, k: &str, min: f64, max: f64) -> Result<Option<f64>> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        let x = match v {
            Value::Integer(i) => *i as f64,
            Value::Float(f) => *f,
            other => {
                return Err(self.ctx.err(
                    &self.key(k),
                    format!(
                        "expected a number in [{min}, {max}], got {}",
                        type_name(other)
                    ),
                ))
            }
        };
        if !(x.is_finite() && x >= min && x <= max) {
            return Err(self.ctx.err(
                &self.key(k),
                format!("expected a number in [{min}, {max}], got {x:?}"),
            ));
        }
        Ok(Some(x))
    }

    fn f64_or(&mut self, k: &str, min: f64, max: f64, default: f64) -> Result<f64> {
        Ok(self.f64_opt(k, min, max)?.unwrap_or(default))
    }

    fn u64_opt(&mut self, k: &str, min: u64, max: u64) -> Result<Option<u64>> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        match v {
            Value::Integer(i) if *i >= min as i64 && (*i as u64) <= max => Ok(Some(*i as u64)),
            Value::Integer(i) => Err(self.ctx.err(
                &self.key(k),
                format!("expected an integer in [{min}, {max}], got {i}"),
            )),
            other => Err(self.ctx.err(
                &self.key(k),
                format!(
                    "expected an integer in [{min}, {max}], got {}",
                    type_name(other)
                ),
            )),
        }
    }

    fn bool_or(&mut self, k: &str, default: bool) -> Result<bool> {
        match self.raw(k) {
            None => Ok(default),
            Some(Value::Boolean(b)) => Ok(*b),
            Some(other) => Err(self.ctx.err(
                &self.key(k),
                format!("expected true or false, got {}", type_name(other)),
            )),
        }
    }

    fn str_opt(&mut self, k: &str) -> Result<Option<&'a str>> {
        let Some(v) = self.raw(k) else {
            return Ok(None);
        };
        match v {
            Value::String(s) => Ok(Some(s.as_str())),
            other => Err(self.ctx.err(
                &self.key(k),
                format!("expected a string, got {}", type_name(other)),
            )),
        }
    }

    fn tables(&mut self, k: &str) -> Result<Vec<&'a Table>> {
        let Some(v) = self.raw(k) else {
            return Ok(Vec::new());
        };
        let err = || {
            self.ctx.err(
                &self.key(k),
                format!(
                    "expected an array of tables ([[{k}]]), got {}",
                    type_name(v)
                ),
            )
        };
        match v {
            Value::Array(a) => a.iter().map(|x| x.as_table().ok_or_else(err)).collect(),
            _ => Err(err()),
        }
    }

    /// Reject keys that were never read, suggesting the nearest known one.
    fn finish(&self, extra_known: &[&str]) -> Result<()> {
        for k in self.t.keys() {
            if !self.seen.iter().any(|s| s == k) && !extra_known.contains(&k.as_str()) {
                let known: Vec<&str> = self
                    .seen
                    .iter()
                    .map(String::as_str)
                    .chain(extra_known.iter().copied())
                    .collect();
                let hint = suggest::hint(k, known.iter().copied());
                let mut sorted = known.clone();
                sorted.sort();
                sorted.dedup();
                return Err(self.ctx.err(
                    &self.key(k),
                    format!("unknown key{hint}; valid keys here: {}", sorted.join(", ")),
                ));
            }
        }
        Ok(())
    }
}

/// Parse `page_size`.
fn page_bytes(ctx: &Ctx, v: Option<&Value>, default: u64) -> Result<u64> {
    let bad = |got: String| {
        ctx.err(
            "page_size",
            format!("expected \"4KiB\" or \"2MiB\" (or 4096, 2097152), got {got}"),
        )
    };
    match v {
        None => Ok(default),
        Some(Value::Integer(4096)) => Ok(4096),
        Some(Value::Integer(2_097_152)) => Ok(2_097_152),
        Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
            "4kib" | "4k" | "4kb" => Ok(4096),
            "2mib" | "2m" | "2mb" => Ok(2 << 20),
            _ => Err(bad(format!("\"{s}\""))),
        },
        Some(other) => Err(bad(other.to_string())),
    }
}

fn parse_ratio(ctx: &Ctx, s: &str) -> Result<FastSize> {
    let bad = || {
        ctx.err(
            "fast_ratio",
            format!("expected \"F:S\" with F > 0 and S >= 0 (e.g. \"1:2\"), got \"{s}\""),
        )
    };
    let (f, sl) = s.split_once(':').ok_or_else(bad)?;
    let f: f64 = f.trim().parse().map_err(|_| bad())?;
    let sl: f64 = sl.trim().parse().map_err(|_| bad())?;
    if !(f > 0.0 && sl >= 0.0 && f.is_finite() && sl.is_finite()) {
        return Err(bad());
    }
    Ok(FastSize::Ratio(f, sl))
}

/// Parse a `--set` value: TOML syntax if it parses (numbers, booleans, quoted strings,
/// arrays), otherwise a bare string.
pub fn parse_value(s: &str) -> Value {
    let doc = format!("v = {s}");
    match doc.parse::<Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| Value::String(s.to_string())),
        Err(_) => Value::String(s.to_string()),
    }
}

/// Apply `KEY=VALUE` with a dotted key (array elements by index: `process.0.start_s`).
pub fn apply_override(root: &mut Table, item: &str) -> Result<()> {
    let (k, v) = item
        .split_once('=')
        .ok_or_else(|| SimError::config("--set", format!("`{item}` is not KEY=VALUE")))?;
    let k = k.trim();
    if k.is_empty() || k.split('.').any(str::is_empty) {
        return Err(SimError::config("--set", format!("`{item}`: empty key")));
    }
    let parts: Vec<&str> = k.split('.').collect();
    let mut cur: &mut Value = {
        let first = parts[0];
        if parts.len() == 1 {
            root.insert(first.to_string(), parse_value(v.trim()));
            return Ok(());
        }
        root.entry(first.to_string())
            .or_insert_with(|| Value::Table(Table::new()))
    };
    for (i, p) in parts.iter().enumerate().skip(1) {
        let last = i + 1 == parts.len();
        let here = parts[..i].join(".");
        cur = match cur {
            Value::Table(t) => {
                if last {
                    t.insert(p.to_string(), parse_value(v.trim()));
                    return Ok(());
                }
                t.entry(p.to_string())
                    .or_insert_with(|| Value::Table(Table::new()))
            }
            Value::Array(a) => {
                let idx: usize = p.parse().map_err(|_| {
                    SimError::config(
                        "--set",
                        format!("`{k}`: `{here}` is an array; expected an index, got `{p}`"),
                    )
                })?;
                let n = a.len();
                let el = a.get_mut(idx).ok_or_else(|| {
                    SimError::config(
                        "--set",
                        format!("`{k}`: `{here}` has {n} elements; index {idx} is out of range"),
                    )
                })?;
                if last {
                    *el = parse_value(v.trim());
                    return Ok(());
                }
                el
            }
            _ => {
                return Err(SimError::config(
                    "--set",
                    format!("`{k}`: `{here}` is a value, not a table"),
                ))
            }
        };
    }
    Ok(())
}

fn toml_to_param_string(ctx: &Ctx, key: &str, v: &Value) -> Result<String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        Value::Float(f) => Ok(f.to_string()),
        Value::Boolean(b) => Ok(b.to_string()),
        other => Err(ctx.err(
            key,
            format!("expected a single value, got {}", type_name(other)),
        )),
    }
}

/// Load an experiment: a built-in workload name or a TOML file, then overrides, then `seed`.
pub fn load(experiment: &str, overrides: &[String], seed: Option<u64>) -> Result<Experiment> {
    let (file, text) = if let Some(path) = experiment.strip_prefix("trace:") {
        (
            experiment.to_string(),
            format!(
                "workload = \"trace\"\ntrace = {}\n",
                Value::String(path.to_string())
            ),
        )
    } else if let Some(w) = workloads::find(experiment) {
        (
            format!("built-in `{}`", w.name),
            format!("workload = \"{}\"\n", w.name),
        )
    } else {
        let p = Path::new(experiment);
        if !p.exists() {
            let hint = suggest::hint(experiment, workloads::REGISTRY.iter().map(|w| w.name));
            return Err(SimError::Io(format!(
                "`{experiment}`: no such file and no built-in workload of that name{hint}; built-ins: {}",
                workloads::REGISTRY.iter().map(|w| w.name).collect::<Vec<_>>().join(", ")
            )));
        }
        let text = std::fs::read_to_string(p)
            .map_err(|e| SimError::Io(format!("{experiment}: cannot read: {e}")))?;
        (experiment.to_string(), text)
    };
    load_str(&file, &text, overrides, seed)
}

/// Load an experiment from TOML text; `file` names it in messages.
pub fn load_str(
    file: &str,
    text: &str,
    overrides: &[String],
    seed: Option<u64>,
) -> Result<Experiment> {
    let file = file.to_string();
    let mut root: Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
        let at = match line {
            Some(l) => format!("{file}: line {l}"),
            None => file.clone(),
        };
        SimError::config(at, format!("invalid TOML: {}", e.message()))
    })?;
    for o in overrides {
        apply_override(&mut root, o)?;
    }
    if let Some(s) = seed {
        // TOML integers are i64: a larger seed would wrap to a negative one.
        let s = i64::try_from(s).map_err(|_| {
            SimError::config(
                "seed",
                format!("expected an integer in [0, {}], got {s}", i64::MAX),
            )
        })?;
        root.insert("seed".into(), Value::Integer(s));
    }
    from_table(&file, &root)
}

/// Build an experiment from a parsed table (after overrides).
pub fn from_table(file: &str, root: &Table) -> Result<Experiment> {
    let ctx = Ctx { file };
    let mut r = Reader::new(&ctx, String::new(), root);
    let workload = r.str_opt("workload")?.ok_or_else(|| {
        ctx.err(
            "workload",
            format!(
                "missing; expected a built-in workload ({}) or \"custom\"",
                workloads::names().join(", ")
            ),
        )
    })?;
    let builtin = if workload == "custom" || workload == "trace" {
        None
    } else {
        Some(workloads::find(workload).ok_or_else(|| {
            ctx.err(
                "workload",
                format!(
                    "unknown workload \"{workload}\"{}; expected one of: {}, custom",
                    suggest::hint(workload, workloads::names()),
                    workloads::names().join(", ")
                ),
            )
        })?)
    };
    let defaults = builtin.map(|b| (b.defaults)()).unwrap_or_default();
    r.str_opt("name")?;
    let policy = r.str_opt("policy")?.map(str::to_string);
    r.str_opt("description")?;
    let duration_s = r.f64_or("duration_s", 1e-3, 1e6, defaults.duration_s)?;
    let epoch_ms = r.f64_or("epoch_ms", 0.01, 1000.0, 1.0)?;
    let report_interval_ms =
        r.f64_or("report_interval_ms", epoch_ms, 1e6, 100.0_f64.max(epoch_ms))?;
    let seed = r.u64_opt("seed", 0, i64::MAX as u64)?.unwrap_or(1);
    let counter_noise = r.f64_or("counter_noise", 0.0, 1.0, 0.0)?;
    let kswapd_shares_cpu = r.bool_or("kswapd_shares_cpu", false)?;
    let cpu_share = r.f64_opt("kswapd_cpu_share", 1e-3, 1.0)?;
    let slice_ms = r.f64_opt("kswapd_slice_ms", 0.0, 1000.0)?;
    // kswapd's turns mean something only on a CPU it shares with the threads
    let turns_unused = !kswapd_shares_cpu && (cpu_share.is_some() || slice_ms.is_some());
    let (kswapd_cpu_share, kswapd_slice_ms) = (cpu_share.unwrap_or(0.5), slice_ms.unwrap_or(4.0));
    let pname = r.str_opt("platform")?.unwrap_or(defaults.platform);
    let mut plat = platform::preset(pname).ok_or_else(|| {
        let names: Vec<&str> = platform::PRESETS.iter().map(|p| p.0).collect();
        ctx.err(
            "platform",
            format!(
                "unknown platform \"{pname}\"{}; expected one of: {}",
                suggest::hint(pname, names.iter().copied()),
                names.join(", ")
            ),
        )
    })?;
    let page = page_bytes(&ctx, r.raw("page_size"), defaults.page_bytes)?;
    let fast_gb = r.f64_opt("fast_tier_gb", 0.0, 1e6)?;
    let ratio = match r.raw("fast_ratio") {
        None => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(other) => {
            return Err(ctx.err(
                "fast_ratio",
                format!(
                    "expected \"F:S\" such as \"1:2\" (fast:slow of the footprint), got {other}"
                ),
            ))
        }
    };
    let fast = match (fast_gb, ratio) {
        (Some(_), Some(_)) => {
            return Err(ctx.err("fast_ratio", "give fast_tier_gb or fast_ratio, not both"))
        }
        (Some(g), None) => FastSize::Gb(g),
        (None, Some(s)) => parse_ratio(&ctx, s)?,
        (None, None) => defaults.fast,
    };
    let slow_tier_gb = r.f64_opt("slow_tier_gb", 0.0, 1e6)?;
    let tiers = r.tables("tier")?;
    if !tiers.is_empty() {
        plat.tiers = tiers
            .iter()
            .enumerate()
            .map(|(i, t)| read_tier(&ctx, i, t))
            .collect::<Result<_>>()?;
        for (i, t) in plat.tiers.iter().enumerate() {
            if let Some(j) = plat.tiers[..i].iter().position(|u| u.name == t.name) {
                return Err(ctx.err(
                    &format!("tier.{i}.name"),
                    format!(
                        "\"{}\" is also the name of tier.{j}; tier names must be unique (they label the time series)",
                        t.name
                    ),
                ));
            }
        }
        if plat.tiers.len() != 2 {
            return Err(ctx.err(
                "tier",
                format!(
                    "expected exactly 2 [[tier]] tables (fast, slow), got {}",
                    plat.tiers.len()
                ),
            ));
        }
    }
    match r.raw("costs") {
        None => {}
        Some(Value::Table(t)) => read_costs(&ctx, t, &mut plat.costs)?,
        Some(other) => {
            return Err(ctx.err(
                "costs",
                format!(
                    "expected a table ([costs], or --set costs.KEY=VALUE), got {}",
                    type_name(other)
                ),
            ))
        }
    }
    let mut exp = Experiment {
        source: file.to_string(),
        workload: workload.to_string(),
        policy,
        platform: plat,
        duration_s,
        epoch_ms,
        report_interval_ms,
        seed,
        counter_noise,
        kswapd_shares_cpu,
        kswapd_cpu_share,
        kswapd_slice_ms,
        page_bytes: page,
        fast,
        slow_tier_gb,
        processes: Vec::new(),
        antagonists: Vec::new(),
        replays: Vec::new(),
        replay_seconds: 0.0,
        warnings: Vec::new(),
    };
    if turns_unused {
        exp.warnings.push(
            "kswapd_cpu_share and kswapd_slice_ms have no effect without kswapd_shares_cpu = true \
             (kswapd has a CPU of its own)"
                .to_string(),
        );
    }
    if workload == "trace" {
        read_trace(&ctx, &mut r, &mut exp)?;
        r.finish(&[])?;
        validate(&ctx, &exp)?;
        return Ok(exp);
    }
    match builtin {
        Some(b) => {
            let mut raw = Vec::new();
            for d in b.params {
                if let Some(v) = r.raw(d.name) {
                    raw.push((d.name.to_string(), toml_to_param_string(&ctx, d.name, v)?));
                }
            }
            let mut known: Vec<&str> = COMMON_KEYS
                .iter()
                .map(|k| k.0)
                .filter(|k| *k != "process" && *k != "antagonist")
                .collect();
            known.extend(b.params.iter().map(|d| d.name));
            for k in root.keys() {
                if (k == "process" || k == "antagonist") && root.contains_key(k) {
                    return Err(ctx.err(
                        k,
                        format!(
                            "[[{k}]] tables go with workload = \"custom\"; `{}` builds its own",
                            b.name
                        ),
                    ));
                }
                if !known.contains(&k.as_str()) {
                    return Err(ctx.err(
                        k,
                        format!(
                            "unknown key{}; `{}` takes: {}",
                            suggest::hint(k, known.iter().copied()),
                            b.name,
                            known.join(", ")
                        ),
                    ));
                }
            }
            let params = Params::resolve(b.name, b.params, &raw).map_err(|e| match e {
                tierkit_core::Error::BadParam {
                    param,
                    expected,
                    got,
                    ..
                } => ctx.err(
                    &param,
                    format!("workload `{}`: expected {expected}, got `{got}`", b.name),
                ),
                other => ctx.err("", format!("workload `{}`: {other}", b.name)),
            })?;
            let (procs, ants) = (b.build)(&params, &exp)
                .map_err(|m| ctx.err("", format!("workload `{}`: {m}", b.name)))?;
            exp.processes = procs;
            exp.antagonists = ants;
        }
        None => {
            for (i, p) in r.tables("process")?.iter().enumerate() {
                let proc_ = read_process(&ctx, i, p, exp.platform.tiers.len())?;
                if let Some(j) = exp.processes.iter().position(|q| q.name == proc_.name) {
                    return Err(ctx.err(
                        &format!("process.{i}.name"),
                        format!(
                            "\"{}\" is also the name of process.{j}; process names must be unique \
                             (they label the summary and the time series)",
                            proc_.name
                        ),
                    ));
                }
                exp.processes.push(proc_);
            }
            for (i, a) in r.tables("antagonist")?.iter().enumerate() {
                exp.antagonists
                    .push(read_antagonist(&ctx, i, a, exp.platform.tiers.len())?);
            }
            r.finish(&[])?;
            if exp.processes.is_empty() {
                return Err(ctx.err(
                    "process",
                    "a custom workload needs at least one [[process]] table",
                ));
            }
        }
    }
    validate(&ctx, &exp)?;
    Ok(exp)
}

/// `[costs]`: each key given replaces the platform preset's value (platform::Costs).
fn read_costs(ctx: &Ctx, t: &Table, c: &mut platform::Costs) -> Result<()> {
    let mut r = Reader::new(ctx, "costs".to_string(), t);
    for (k, min, max, v) in [
        ("migrate_fixed_us", 0.0, 1e6, &mut c.migrate_fixed_us),
        ("copy_gbps", 0.001, 1e5, &mut c.copy_gbps),
        ("shootdown_base_us", 0.0, 1e6, &mut c.shootdown_base_us),
        (
            "shootdown_per_target_us",
            0.0,
            1e6,
            &mut c.shootdown_per_target_us,
        ),
        ("shootdown_ipi_us", 0.0, 1e6, &mut c.shootdown_ipi_us),
        ("hint_fault_us", 0.0, 1e6, &mut c.hint_fault_us),
        ("sample_ns", 0.0, 1e9, &mut c.sample_ns),
    ] {
        if let Some(x) = r.f64_opt(k, min, max)? {
            *v = x;
        }
    }
    if let Some(n) = r.u64_opt("migration_threads", 1, 1024)? {
        c.migration_threads = n as u32;
    }
    r.finish(&[])
}

fn read_tier(ctx: &Ctx, i: usize, t: &Table) -> Result<TierModel> {
    let mut r = Reader::new(ctx, format!("tier.{i}"), t);
    let name = r
        .str_opt("name")?
        .unwrap_or(if i == 0 { "fast" } else { "slow" })
        .to_string();
    check_name(ctx, &r.key("name"), &name)?;
    let peak = r.f64_opt("peak_gbps", 0.001, 1e5)?.ok_or_else(|| {
        ctx.err(
            &r.key("peak_gbps"),
            "missing; expected the peak bandwidth in GB/s",
        )
    })?;
    let kind = r.str_opt("curve")?.unwrap_or("queueing");
    let mixed_read_frac = r.f64_or("mixed_read_frac", 0.0, 1.0, 0.5)?;
    let curve = match kind {
        "queueing" => {
            let l0 = r.f64_opt("l0_ns", 1.0, 1e5)?.ok_or_else(|| {
                ctx.err(
                    &r.key("l0_ns"),
                    "missing; expected the unloaded latency in ns",
                )
            })?;
            let bsat_r = r.f64_or("bsat_read_gbps", 0.001, 1e5, 0.9 * peak)?;
            let k_r = r.f64_or("k_read_ns", 0.0, 1e5, 0.25 * l0)?;
            let bsat_m = r.f64_or("bsat_mixed_gbps", 0.001, 1e5, 0.75 * peak)?;
            // Saturation cannot come above the peak bandwidth the tier delivers.
            for (k, v) in [("bsat_read_gbps", bsat_r), ("bsat_mixed_gbps", bsat_m)] {
                if v > peak {
                    return Err(ctx.err(
                        &r.key(k),
                        format!("expected at most peak_gbps ({peak}), got {v}"),
                    ));
                }
            }
            let k_m = r.f64_or("k_mixed_ns", 0.0, 1e5, 0.5 * l0)?;
            Curve::Queueing {
                l0_ns: l0,
                read_only: QueueFit {
                    bsat_gbps: bsat_r,
                    k_ns: k_r,
                },
                mixed: QueueFit {
                    bsat_gbps: bsat_m,
                    k_ns: k_m,
                },
                mixed_read_frac,
            }
        }
        "table" => {
            let pts = |r: &mut Reader, k: &str| -> Result<Option<CurveTable>> {
                let Some(v) = r.raw(k) else { return Ok(None) };
                let key = r.key(k);
                let bad = || {
                    ctx.err(
                        &key,
                        "expected an array of [bandwidth_gbps, latency_ns] pairs",
                    )
                };
                let arr = v.as_array().ok_or_else(bad)?;
                let mut points = Vec::new();
                for p in arr {
                    let pair = p.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
                    let num = |x: &Value| {
                        x.as_float()
                            .or_else(|| x.as_integer().map(|i| i as f64))
                            .ok_or_else(bad)
                    };
                    points.push((num(&pair[0])?, num(&pair[1])?));
                }
                let t = CurveTable { points };
                t.validate().map_err(|m| ctx.err(&key, m))?;
                Ok(Some(t))
            };
            let read = pts(&mut r, "points")?.ok_or_else(|| {
                ctx.err(
                    &join(&format!("tier.{i}"), "points"),
                    "missing; a table curve needs points = [[GB/s, ns], ...]",
                )
            })?;
            let mixed = pts(&mut r, "mixed_points")?.unwrap_or_else(|| read.clone());
            Curve::Measured {
                read_only: read,
                mixed,
                mixed_read_frac,
            }
        }
        other => {
            return Err(ctx.err(
                &r.key("curve"),
                format!("expected \"queueing\" or \"table\", got \"{other}\""),
            ))
        }
    };
    r.finish(&[])?;
    Ok(TierModel {
        name,
        peak_gbps: peak,
        curve,
    })
}

fn read_class(ctx: &Ctx, key: &str, s: Option<&str>) -> Result<QosClass> {
    match s {
        None | Some("BE") | Some("be") => Ok(QosClass::BestEffort),
        Some("LC") | Some("lc") => Ok(QosClass::LatencyCritical),
        Some(o) => Err(ctx.err(key, format!("expected \"LC\" or \"BE\", got \"{o}\""))),
    }
}

fn size_bytes(r: &mut Reader, ctx: &Ctx) -> Result<u64> {
    let gb = r.f64_opt("size_gb", 0.0, 1e6)?;
    let mb = r.f64_opt("size_mb", 0.0, 1e9)?;
    let b = r.u64_opt("size_bytes", 1, u64::MAX >> 1)?;
    match (gb, mb, b) {
        (Some(g), None, None) => Ok((g * (1u64 << 30) as f64) as u64),
        (None, Some(m), None) => Ok((m * (1u64 << 20) as f64) as u64),
        (None, None, Some(b)) => Ok(b),
        (None, None, None) => Err(ctx.err(
            &r.key("size_gb"),
            "missing; give the object's size as size_gb, size_mb or size_bytes",
        )),
        _ => Err(ctx.err(
            &r.key("size_gb"),
            "give exactly one of size_gb, size_mb, size_bytes",
        )),
    }
    .and_then(|x| {
        if x == 0 {
            Err(ctx.err(&r.key("size_gb"), "an object must have a positive size"))
        } else {
            Ok(x)
        }
    })
}

fn read_process(ctx: &Ctx, i: usize, t: &Table, ntiers: usize) -> Result<ProcessSpec> {
    let mut r = Reader::new(ctx, format!("process.{i}"), t);
    let name = r
        .str_opt("name")?
        .map(str::to_string)
        .unwrap_or_else(|| format!("p{i}"));
    check_name(ctx, &r.key("name"), &name)?;
    let ck = r.key("class");
    let class = read_class(ctx, &ck, r.str_opt("class")?)?;
    let start_s = r.f64_or("start_s", 0.0, 1e6, 0.0)?;
    let cpu_share = r.f64_or("cpu_share", 0.01, 1.0, 1.0)?;
    let mut objects: Vec<ObjectSpec> = Vec::new();
    for (j, o) in r.tables("object")?.iter().enumerate() {
        let mut orr = Reader::new(ctx, format!("process.{i}.object.{j}"), o);
        let oname = orr
            .str_opt("name")?
            .ok_or_else(|| ctx.err(&orr.key("name"), "missing; every object needs a name"))?
            .to_string();
        check_name(ctx, &orr.key("name"), &oname)?;
        let bytes = size_bytes(&mut orr, ctx)?;
        let alloc_s = orr.f64_or("alloc_s", 0.0, 1e6, 0.0)?;
        let free_s = orr.f64_opt("free_s", 0.0, 1e6)?;
        let first_touch_tier = match orr.raw("tier") {
            None => None,
            Some(v) => Some(tier_index(ctx, &orr.key("tier"), v, ntiers)?),
        };
        let pinned = orr.bool_or("pinned", false)?;
        if pinned && first_touch_tier.is_none() {
            return Err(ctx.err(
                &orr.key("pinned"),
                "a pinned object is bound to a tier: give its `tier` too",
            ));
        }
        let mlocked = orr.bool_or("mlocked", false)?;
        if mlocked && first_touch_tier.is_none() {
            return Err(ctx.err(
                &orr.key("mlocked"),
                "an mlocked object stays on the tier its first touch put it on: give its `tier` too",
            ));
        }
        let separate_vma = orr.bool_or("separate_vma", false)?;
        if let Some(f) = free_s {
            if f <= alloc_s {
                return Err(ctx.err(
                    &orr.key("free_s"),
                    format!("must be after alloc_s ({alloc_s}), got {f}"),
                ));
            }
        }
        orr.finish(&[])?;
        if objects.iter().any(|x: &ObjectSpec| x.name == oname) {
            return Err(ctx.err(
                &orr.key("name"),
                format!("object \"{oname}\" is defined twice"),
            ));
        }
        objects.push(ObjectSpec {
            name: oname,
            bytes,
            alloc_s,
            free_s,
            first_touch_tier,
            pinned,
            mlocked,
            separate_vma,
        });
    }
    let mut threads = Vec::new();
    for (j, th) in r.tables("thread")?.iter().enumerate() {
        threads.push(read_thread(
            ctx,
            &format!("process.{i}.thread.{j}"),
            th,
            &objects,
        )?);
    }
    r.finish(&[])?;
    if objects.is_empty() {
        return Err(ctx.err(
            &format!("process.{i}.object"),
            "a process needs at least one [[process.object]]",
        ));
    }
    if threads.is_empty() {
        return Err(ctx.err(
            &format!("process.{i}.thread"),
            "a process needs at least one [[process.thread]]",
        ));
    }
    Ok(ProcessSpec {
        name,
        class,
        cpu_share,
        start_s,
        objects,
        threads,
    })
}

fn read_thread(ctx: &Ctx, path: &str, t: &Table, objects: &[ObjectSpec]) -> Result<ThreadSpec> {
    let mut r = Reader::new(ctx, path.to_string(), t);
    let count = r.u64_opt("count", 1, 4096)?.unwrap_or(1) as u32;
    let work_ops = r.f64_opt("work_ops", 1.0, 1e18)?;
    let mut phases = Vec::new();
    for (k, ph) in r.tables("phase")?.iter().enumerate() {
        let pp = format!("{path}.phase.{k}");
        let mut pr = Reader::new(ctx, pp.clone(), ph);
        let duration_s = pr.f64_opt("duration_s", 1e-6, 1e6)?;
        let mlp = pr.f64_or("mlp", 1.0, 64.0, 1.0)?;
        let compute_ns = pr.f64_or("compute_ns", 0.0, 1e9, 0.0)?;
        let read_frac = pr.f64_or("read_frac", 0.01, 1.0, 1.0)?;
        let misses_per_op = pr.f64_or("misses_per_op", 1e-6, 1e9, 1.0)?;
        let phase_work = pr.f64_opt("work_ops", 1e-3, 1e18)?;
        let barrier = pr.bool_or("barrier", false)?;
        let mut access = Vec::new();
        for (a, ac) in pr.tables("access")?.iter().enumerate() {
            access.push(read_access(ctx, &format!("{pp}.access.{a}"), ac, objects)?);
        }
        pr.finish(&[])?;
        if access.is_empty() {
            return Err(ctx.err(
                &format!("{pp}.access"),
                "a phase needs at least one [[...access]] region",
            ));
        }
        if access.iter().all(|a| a.weight == 0.0) {
            return Err(ctx.err(
                &format!("{pp}.access.0.weight"),
                "every region of this phase has weight 0; give at least one a positive weight",
            ));
        }
        phases.push(PhaseSpec {
            duration_s,
            mlp,
            compute_ns,
            read_frac,
            misses_per_op,
            work_ops: phase_work,
            barrier,
            access,
        });
    }
    r.finish(&[])?;
    if phases.is_empty() {
        return Err(ctx.err(
            &format!("{path}.phase"),
            "a thread needs at least one [[...phase]]",
        ));
    }
    Ok(ThreadSpec {
        count,
        work_ops,
        phases,
    })
}

fn read_access(ctx: &Ctx, path: &str, t: &Table, objects: &[ObjectSpec]) -> Result<AccessSpec> {
    let mut r = Reader::new(ctx, path.to_string(), t);
    let object = r
        .str_opt("object")?
        .ok_or_else(|| {
            ctx.err(
                &join(path, "object"),
                "missing; name an object of this process or \"*\"",
            )
        })?
        .to_string();
    if object != "*" && !objects.iter().any(|o| o.name == object) {
        let names: Vec<&str> = objects.iter().map(|o| o.name.as_str()).collect();
        return Err(ctx.err(
            &join(path, "object"),
            format!(
                "no object \"{object}\" in this process{}; objects: {}",
                suggest::hint(&object, names.iter().copied()),
                names.join(", ")
            ),
        ));
    }
    let weight = r.f64_or("weight", 0.0, 1e12, 1.0)?;
    // Checked whatever the pattern; used only by "zipf" (a sweep over `pattern` may keep it).
    let zipf_s = r.f64_opt("zipf_s", 0.01, 5.0)?;
    let pattern = match r.str_opt("pattern")?.unwrap_or("uniform") {
        "uniform" | "random" => Pattern::Uniform,
        "sequential" | "seq" => Pattern::Sequential,
        "pointer-chase" | "pc" => Pattern::PointerChase,
        "zipf" => Pattern::Zipf {
            s: zipf_s.unwrap_or(0.99),
        },
        o => {
            return Err(ctx.err(
                &join(path, "pattern"),
                format!("expected uniform, sequential, pointer-chase or zipf, got \"{o}\""),
            ))
        }
    };
    let start_frac = r.f64_or("start_frac", 0.0, 1.0, 0.0)?;
    if start_frac >= 1.0 {
        return Err(ctx.err(
            &join(path, "start_frac"),
            format!(
                "expected a number in [0, 1) (the region starts inside the object), got {start_frac}"
            ),
        ));
    }
    let len_frac = r.f64_or("len_frac", 1e-9, 1.0, 1.0 - start_frac)?;
    if start_frac + len_frac > 1.0 + 1e-9 {
        return Err(ctx.err(
            &join(path, "len_frac"),
            format!(
                "start_frac + len_frac must be <= 1, got {}",
                start_frac + len_frac
            ),
        ));
    }
    let scatter_seed = r.u64_opt("scatter_seed", 0, i64::MAX as u64)?;
    let zipf_seed = r.u64_opt("zipf_seed", 0, i64::MAX as u64)?;
    let in_order = r.bool_or("in_order", false)?;
    if in_order && (scatter_seed.is_some() || matches!(pattern, Pattern::Zipf { .. })) {
        return Err(ctx.err(
            &join(path, "in_order"),
            "a swept region is a range of pages: not with scatter_seed or pattern = \"zipf\"",
        ));
    }
    r.finish(&[])?;
    Ok(AccessSpec {
        object,
        weight,
        pattern,
        start_frac,
        len_frac,
        scatter_seed,
        zipf_seed,
        in_order,
    })
}

/// A tier named in an experiment: "fast", "slow" or an index below the number of tiers.
fn tier_index(ctx: &Ctx, key: &str, v: &Value, ntiers: usize) -> Result<u8> {
    match v {
        Value::String(s) if s == "fast" => Ok(0),
        Value::String(s) if s == "slow" => Ok(1),
        Value::Integer(n) if *n >= 0 && (*n as usize) < ntiers => Ok(*n as u8),
        v => Err(ctx.err(
            key,
            format!("expected \"fast\", \"slow\" or a tier index, got {v}"),
        )),
    }
}

fn read_antagonist(ctx: &Ctx, i: usize, t: &Table, ntiers: usize) -> Result<AntagonistSpec> {
    let mut r = Reader::new(ctx, format!("antagonist.{i}"), t);
    let tier = match r.raw("tier") {
        None => return Err(ctx.err(
            &r.key("tier"),
            "missing; expected the tier the antagonist loads: \"fast\", \"slow\" or a tier index",
        )),
        Some(v) => tier_index(ctx, &r.key("tier"), v, ntiers)? as usize,
    };
    let cores = r.u64_opt("cores", 1, 4096)?.unwrap_or(5) as u32;
    let mlp = r.f64_or("mlp", 1.0, 64.0, 16.0)?;
    let read_frac = r.f64_or("read_frac", 0.01, 1.0, 0.5)?;
    let start_s = r.f64_or("start_s", 0.0, 1e6, 0.0)?;
    let stop_s = r.f64_opt("stop_s", 0.0, 1e6)?;
    if let Some(stop) = stop_s {
        if stop <= start_s {
            return Err(ctx.err(
                &r.key("stop_s"),
                format!("must be after start_s ({start_s}), got {stop}"),
            ));
        }
    }
    r.finish(&[])?;
    Ok(AntagonistSpec {
        tier,
        cores,
        mlp,
        read_frac,
        start_s,
        stop_s,
    })
}

fn validate(ctx: &Ctx, e: &Experiment) -> Result<()> {
    // What TOML readers check per table, checked again for every experiment (built-in workloads
    // build their processes in code): unique process names, and access regions that name an
    // object of their process and carry some weight.
    for (i, p) in e.processes.iter().enumerate() {
        if let Some(j) = e.processes[..i].iter().position(|q| q.name == p.name) {
            return Err(ctx.err(
                &format!("process.{i}.name"),
                format!(
                    "\"{}\" is also the name of process.{j}; process names must be unique",
                    p.name
                ),
            ));
        }
        for (j, t) in p.threads.iter().enumerate() {
            for (k, ph) in t.phases.iter().enumerate() {
                let pp = format!("process.{i}.thread.{j}.phase.{k}");
                for (a, ac) in ph.access.iter().enumerate() {
                    if ac.object != "*" && !p.objects.iter().any(|o| o.name == ac.object) {
                        return Err(ctx.err(
                            &format!("{pp}.access.{a}.object"),
                            format!(
                                "process \"{}\" has no object \"{}\" (workload `{}`)",
                                p.name, ac.object, e.workload
                            ),
                        ));
                    }
                }
                if ph.access.iter().all(|a| a.weight <= 0.0) {
                    return Err(ctx.err(
                        &format!("{pp}.access"),
                        format!(
                            "no region of process \"{}\" has a positive weight (workload `{}`)",
                            p.name, e.workload
                        ),
                    ));
                }
            }
        }
    }
    let (fast, slow) = e.capacities();
    let fp = e.footprint_pages();
    if fast + slow < fp {
        return Err(ctx.err(
            "slow_tier_gb",
            format!(
                "the tiers hold {} pages but the workload needs {fp}; make slow_tier_gb larger",
                fast + slow
            ),
        ));
    }
    if e.processes.iter().all(|p| p.start_s >= e.duration_s) {
        return Err(ctx.err(
            "duration_s",
            "every process starts after the experiment ends",
        ));
    }
    Ok(())
}

/// Keys of `workload = "trace"` (docs/traces.md).
pub const TRACE_KEYS: &[(&str, &str)] = &[
    ("trace", "trace file(s) from `tierkit trace import`: one process each"),
    ("mlp", "MLP of every window, or a list with one entry per trace: a number, or a list with one MLP per window (default: estimated from the misses)"),
    ("compute_ns", "compute per miss, ns (default: from instruction stamps at base_cpi; 10 for time-stamped traces)"),
    ("base_cpi", "cycles per instruction between misses, for instruction-stamped traces and those without stamps (default 0.5)"),
    ("run_time_s", "the program's measured run time for the traced run, s (one, or one per trace): compute per access = (run time - the misses' time on the unloaded fast tier) / trace accesses; replaces the compute from stamps or instructions_per_access"),
    ("instructions_per_access", "instructions per trace access for a trace without stamps (a lackey trace without `I` lines; default 3: lackey's I lines are about 3 per data access)"),
    ("llc_mb", "LLC size of the cache model for lackey traces, MiB (default: the platform's)"),
    ("window_accesses", "trace accesses per window (default: the trace's accesses / 32)"),
    ("min_window_misses", "a window closes only after this many misses (default 1000)"),
    ("window_ms", "trace windows shorter than this, ms (at the fast tier's unloaded latency, the fastest they run), are merged with the next, their page mixes combined and their time kept, so that results do not depend on the epoch (default 20: 20 epochs of 1 ms; 0 keeps the trace's windows)"),
    ("window_epochs", "the same threshold in epochs (window_ms = window_epochs x epoch_ms); replaces window_ms"),
    ("time_scale", "each traced miss stands for this many misses (default 1)"),
    ("loops", "passes over the trace; 0 repeats until duration_s (default 0)"),
];

/// `workload = "trace"`: one process per trace file, each one thread whose phases are the
/// trace's windows (trace/replay.rs).
fn read_trace(ctx: &Ctx, r: &mut Reader, exp: &mut Experiment) -> Result<()> {
    use crate::trace::replay::{build, ReplayOpts, ReplaySpec};
    let files: Vec<String> = match r.raw("trace") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) if !a.is_empty() => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(ctx.err(
                    "trace",
                    format!("expected file names, got {}", type_name(other)),
                )),
            })
            .collect::<Result<_>>()?,
        Some(other) => {
            return Err(ctx.err(
                "trace",
                format!(
                    "expected a file name or a list of them, got {}",
                    type_name(other)
                ),
            ))
        }
        None => {
            return Err(ctx.err(
                "trace",
                "missing; expected the trace file (tierkit trace import makes one)",
            ))
        }
    };
    // One MLP for every trace, or one entry per trace (per process): a number for all its
    // windows, or a list with one per window (its phases); absent: estimated.
    let num = |v: &Value| match v {
        Value::Integer(i) if (1..=64).contains(i) => Ok(*i as f64),
        Value::Float(f) if (1.0..=64.0).contains(f) => Ok(*f),
        other => Err(ctx.err("mlp", format!("expected numbers in [1, 64], got {other}"))),
    };
    let mlps: Vec<Option<Vec<f64>>> = match r.raw("mlp") {
        Some(Value::Array(a)) => {
            if a.len() != files.len() {
                return Err(ctx.err(
                    "mlp",
                    format!(
                        "a list of {} entries for {} traces; give one per trace (a number, or a list \
                         with one MLP per window) or a single number",
                        a.len(),
                        files.len()
                    ),
                ));
            }
            a.iter()
                .map(|v| match v {
                    Value::Array(w) if !w.is_empty() => {
                        w.iter().map(num).collect::<Result<Vec<f64>>>().map(Some)
                    }
                    other => num(other).map(|x| Some(vec![x])),
                })
                .collect::<Result<_>>()?
        }
        _ => vec![r.f64_opt("mlp", 1.0, 64.0)?.map(|x| vec![x]); files.len()],
    };
    let compute_ns = r.f64_opt("compute_ns", 0.0, 1e6)?;
    let base_cpi = r.f64_or("base_cpi", 0.01, 100.0, 0.5)?;
    let instructions_per_access = r.f64_or("instructions_per_access", 0.0, 1e6, 3.0)?;
    // The programs' measured run times (one for all traces, or one per trace).
    let run_times: Vec<Option<f64>> = match r.raw("run_time_s") {
        Some(Value::Array(a)) => {
            if a.len() != files.len() {
                return Err(ctx.err(
                    "run_time_s",
                    format!(
                        "a list of {} entries for {} traces; give one per trace or a single number",
                        a.len(),
                        files.len()
                    ),
                ));
            }
            a.iter()
                .map(|v| match v {
                    Value::Integer(i) if *i > 0 => Ok(Some(*i as f64)),
                    Value::Float(f) if *f > 0.0 && f.is_finite() => Ok(Some(*f)),
                    other => Err(ctx.err(
                        "run_time_s",
                        format!("expected positive numbers of seconds, got {other}"),
                    )),
                })
                .collect::<Result<_>>()?
        }
        _ => vec![r.f64_opt("run_time_s", 1e-9, 1e9)?; files.len()],
    };
    if compute_ns.is_some() && run_times.iter().any(Option::is_some) {
        return Err(ctx.err(
            "run_time_s",
            "give compute_ns or run_time_s, not both (run_time_s derives the compute time)",
        ));
    }
    let llc_mb = r.f64_or("llc_mb", 0.0625, 1e5, exp.platform.llc_mb)?;
    let window_accesses = r.u64_opt("window_accesses", 1, u64::MAX >> 2)?;
    let min_window_misses = r
        .u64_opt("min_window_misses", 1, u64::MAX >> 2)?
        .unwrap_or(1000);
    let time_scale = r.f64_or("time_scale", 1e-6, 1e9, 1.0)?;
    // The merge threshold in ns: window_ms (default 20 ms), or window_epochs epochs.
    let window_ms = r.f64_opt("window_ms", 0.0, 1e9)?;
    let window_epochs = r.f64_opt("window_epochs", 0.0, 1e6)?;
    let merge_ns =
        match (window_ms, window_epochs) {
            (Some(_), Some(_)) => return Err(ctx.err(
                "window_epochs",
                "set one of window_ms and window_epochs (the same threshold in ms or in epochs)",
            )),
            (_, Some(n)) => n * exp.epoch_ms * 1e6,
            (ms, None) => ms.unwrap_or(20.0) * 1e6,
        };
    let loops = r.u64_opt("loops", 0, 1 << 40)?.unwrap_or(0);
    let base = Path::new(ctx.file)
        .parent()
        .filter(|_| Path::new(ctx.file).is_file());
    let mut opts = ReplayOpts {
        mlp: None,
        max_mlp: exp.platform.max_mlp,
        llc: Some((llc_mb, exp.platform.llc_ways)),
        base_cpi,
        cpu_ghz: exp.platform.cpu_ghz,
        instructions_per_access,
        compute_ns,
        window_accesses,
        min_window_misses,
        page_bytes: exp.page_bytes,
    };
    for (i, f) in files.iter().enumerate() {
        let p = match base {
            Some(b) if Path::new(f).is_relative() => b.join(f),
            _ => Path::new(f).to_path_buf(),
        };
        opts.mlp = match mlps[i].as_deref() {
            Some([one]) => Some(*one),
            _ => None,
        };
        let t0 = std::time::Instant::now();
        let mut replay = build(&p, &opts).map_err(|e| ctx.err("trace", e.to_string()))?;
        exp.replay_seconds += t0.elapsed().as_secs_f64();
        if let Some(t) = run_times[i] {
            let fast_ns = exp.platform.tiers[0].curve.unloaded_ns();
            replay.compute_from_run_time(t, fast_ns);
        } else if !replay.stamped && compute_ns.is_none() {
            exp.warnings.push(format!(
                "trace {f} has no instruction stamps (a lackey trace without its `I` lines): \
                 compute time is modelled as instructions_per_access = {instructions_per_access} \
                 x base_cpi = {base_cpi} cycles per access at {} GHz; set them, or compute_ns \
                 (docs/traces.md)",
                exp.platform.cpu_ghz
            ));
        }
        if let Some(per_window) = mlps[i].as_ref().filter(|m| m.len() > 1) {
            if per_window.len() != replay.windows.len() {
                return Err(ctx.err(
                    "mlp",
                    format!(
                        "{} MLPs for trace {f}, which replays as {} windows with these settings \
                         (window_accesses, min_window_misses, llc_mb); give one per window",
                        per_window.len(),
                        replay.windows.len()
                    ),
                ));
            }
            for (w, &m) in replay.windows.iter_mut().zip(per_window) {
                w.mlp = m;
            }
        }
        // Windows shorter than merge_ns (at the fast tier's unloaded latency, the fastest they
        // can run) are merged with their timing kept (Replay::merge_short_windows). The threshold
        // is a time, not a number of epochs, so halving the epoch leaves the windows as they are.
        let fast_ns = exp.platform.tiers[0].curve.unloaded_ns();
        replay.merge_short_windows(merge_ns, fast_ns, time_scale);
        let stem = p
            .file_stem()
            .map_or_else(|| format!("trace{i}"), |s| s.to_string_lossy().into_owned());
        // The same trace listed again (or two files with one stem) is another process: NAME#2,
        // NAME#3, ... (docs/traces.md), so every process has its own summary and columns.
        let mut name = stem.clone();
        let mut n = 1;
        while exp.processes.iter().any(|q| q.name == name) {
            n += 1;
            name = format!("{stem}#{n}");
        }
        let total: f64 = replay.windows.iter().map(|w| w.misses).sum::<f64>() * time_scale;
        let phases = replay
            .windows
            .iter()
            .map(|w| PhaseSpec {
                duration_s: None,
                mlp: w.mlp,
                compute_ns: w.compute_ns,
                read_frac: w.read_frac,
                misses_per_op: 1.0,
                work_ops: None,
                barrier: false,
                access: vec![workloads::region("trace", 1.0, Pattern::Uniform)],
            })
            .collect();
        exp.processes.push(ProcessSpec {
            name,
            class: QosClass::BestEffort,
            cpu_share: 1.0,
            start_s: 0.0,
            objects: vec![ObjectSpec {
                name: "trace".into(),
                bytes: replay.page_numbers.len() as u64 * exp.page_bytes,
                alloc_s: 0.0,
                free_s: None,
                first_touch_tier: None,
                pinned: false,
                mlocked: false,
                separate_vma: false,
            }],
            threads: vec![ThreadSpec {
                count: 1,
                work_ops: (loops > 0).then_some(total * loops as f64),
                phases,
            }],
        });
        exp.replays.push(ReplaySpec {
            process: exp.processes.len() - 1,
            group: 0,
            replay: std::sync::Arc::new(replay),
            time_scale,
            looped: loops != 1,
        });
    }
    Ok(())
}

/// Values of a built-in's parameters as strings (for reports).
pub fn param_summary(p: &Params) -> Vec<(String, String)> {
    p.iter()
        .map(|(k, v)| {
            (
                k.to_string(),
                match v {
                    ParamValue::Str(s) => s.clone(),
                    other => other.to_string(),
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err_of(text: &str, sets: &[&str]) -> String {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        match load_str("exp.toml", text, &sets, None) {
            Ok(_) => panic!("expected an error for {text:?} {sets:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn builtin_keys_and_overrides() {
        let e = load(
            "gups-hotset",
            &[
                "antagonist_intensity=3".into(),
                "fast_tier_gb=4".into(),
                "threads=8".into(),
            ],
            Some(9),
        )
        .unwrap();
        assert_eq!(e.seed, 9);
        assert_eq!(e.antagonists[0].cores, 15);
        assert_eq!(e.fast, FastSize::Gb(4.0));
        assert_eq!(e.processes[0].threads[0].count, 8);
        let e = load("gups-hotset", &["fast_ratio=1:2".into()], None).unwrap();
        let (f, _) = e.capacities();
        assert_eq!(f, (e.footprint_pages() as f64 / 3.0).round() as u64);
    }

    #[test]
    fn phase_work_barrier_and_zipf_seed_are_read_and_checked() {
        let exp = |phase: &str, access: &str| {
            format!(
                "workload = \"custom\"\n[[process]]\nname = \"p\"\n[[process.object]]\nname = \"b\"\nsize_mb = 4\n[[process.thread]]\n[[process.thread.phase]]\n{phase}\n[[process.thread.phase.access]]\nobject = \"b\"\npattern = \"zipf\"\n{access}\n"
            )
        };
        let e = load_str(
            "exp.toml",
            &exp("work_ops = 1e6\nbarrier = true", "zipf_seed = 7"),
            &[],
            None,
        )
        .unwrap();
        let ph = &e.processes[0].threads[0].phases[0];
        assert_eq!(ph.work_ops, Some(1e6));
        assert!(ph.barrier);
        assert_eq!(ph.access[0].zipf_seed, Some(7));
        let m = err_of(&exp("work_ops = 0", ""), &[]);
        assert!(
            m.contains("phase.0.work_ops") && m.contains("expected"),
            "{m}"
        );
        let m = err_of(&exp("barrier = 1", ""), &[]);
        assert!(m.contains("barrier") && m.contains("expected"), "{m}");
        let m = err_of(&exp("", "zipf_seed = -1"), &[]);
        assert!(m.contains("zipf_seed") && m.contains("expected"), "{m}");
    }

    #[test]
    fn unknown_key_names_it_and_suggests() {
        let m = err_of("workload = \"gups-hotset\"\nduraton_s = 3\n", &[]);
        assert!(
            m.contains("exp.toml")
                && m.contains("`duraton_s`")
                && m.contains("did you mean `duration_s`"),
            "{m}"
        );
        let m = err_of("workload = \"gups-hotset\"\n", &["antagonist_intensty=2"]);
        assert!(m.contains("did you mean `antagonist_intensity`"), "{m}");
    }

    #[test]
    fn wrong_types_and_ranges() {
        let m = err_of("workload = \"gups-hotset\"\nduration_s = \"long\"\n", &[]);
        assert!(
            m.contains("`duration_s`") && m.contains("expected a number"),
            "{m}"
        );
        let m = err_of("workload = \"gups-hotset\"\nfast_tier_gb = -4\n", &[]);
        assert!(m.contains("`fast_tier_gb`") && m.contains("[0,"), "{m}");
        let m = err_of("workload = \"gups-hotset\"\nthreads = 0\n", &[]);
        assert!(
            m.contains("threads") && m.contains("expected an integer in [1, 1024]"),
            "{m}"
        );
        let m = err_of("workload = \"gups-hotset\"\nfast_ratio = \"2-1\"\n", &[]);
        assert!(m.contains("fast_ratio") && m.contains("F:S"), "{m}");
        let m = err_of(
            "workload = \"gups-hotset\"\nfast_ratio = \"1:1\"\nfast_tier_gb = 3\n",
            &[],
        );
        assert!(m.contains("not both"), "{m}");
        let m = err_of("workload = \"gups-hotset\"\nhot_set_gb = 100\n", &[]);
        assert!(
            m.contains("hot_set_gb") && m.contains("larger than working_set_gb"),
            "{m}"
        );
    }

    #[test]
    fn names_and_files() {
        let m = err_of("workload = \"gupz-hotset\"\n", &[]);
        assert!(
            m.contains("did you mean \"gups-hotset\"") || m.contains("did you mean `gups-hotset`"),
            "{m}"
        );
        let m = err_of("workload = \"gups-hotset\"\nplatform = \"icx\"\n", &[]);
        assert!(m.contains("`platform`") && m.contains("icx-numa"), "{m}");
        let m = load("/nonexistent/exp.toml", &[], None)
            .unwrap_err()
            .to_string();
        assert!(
            m.contains("/nonexistent/exp.toml") && m.contains("no such file"),
            "{m}"
        );
        let m = load("gups-hotsett", &[], None).unwrap_err().to_string();
        assert!(m.contains("did you mean `gups-hotset`"), "{m}");
    }

    #[test]
    fn malformed_toml_gives_the_line() {
        let m = err_of("workload = \"gups-hotset\"\n\nduration_s = = 3\n", &[]);
        assert!(
            m.contains("exp.toml: line 3") && m.contains("invalid TOML"),
            "{m}"
        );
    }

    #[test]
    fn malformed_overrides() {
        assert!(err_of("workload = \"gups-hotset\"\n", &["threads"]).contains("not KEY=VALUE"));
        assert!(err_of("workload = \"gups-hotset\"\n", &["a..b=1"]).contains("empty key"));
        let m = err_of(
            "workload = \"custom\"\n[[process]]\nname=\"a\"\n",
            &["process.3.name=x"],
        );
        assert!(m.contains("out of range"), "{m}");
    }

    #[test]
    fn in_order_and_kswapd_shares_cpu_are_read_and_checked() {
        let base = "workload = \"custom\"\n[[process]]\nname = \"a\"\n[[process.object]]\nname = \"buf\"\nsize_mb = 4\n[[process.thread]]\n[[process.thread.phase]]\nmlp = 2\n[[process.thread.phase.access]]\nobject = \"buf\"\n";
        let exp = load_str("exp.toml", base, &[], None).unwrap();
        assert!(!exp.kswapd_shares_cpu);
        assert!(!exp.processes[0].threads[0].phases[0].access[0].in_order);
        let on = format!("kswapd_shares_cpu = true\n{base}in_order = true\n");
        let exp = load_str("exp.toml", &on, &[], None).unwrap();
        assert!(exp.kswapd_shares_cpu);
        assert!(exp.processes[0].threads[0].phases[0].access[0].in_order);
        // kswapd's turns: half the CPU in turns of a tick (HZ=250) unless set
        assert_eq!((exp.kswapd_cpu_share, exp.kswapd_slice_ms), (0.5, 4.0));
        let turns = format!("kswapd_cpu_share = 1\nkswapd_slice_ms = 0\n{base}");
        let exp = load_str("exp.toml", &turns, &[], None).unwrap();
        assert_eq!((exp.kswapd_cpu_share, exp.kswapd_slice_ms), (1.0, 0.0));
        // without a shared CPU they do nothing, and the run says so
        assert!(exp
            .warnings
            .iter()
            .any(|w| w.contains("no effect without kswapd_shares_cpu")));
        let shared = format!("kswapd_shares_cpu = true\n{turns}");
        let exp = load_str("exp.toml", &shared, &[], None).unwrap();
        assert!(exp.warnings.is_empty(), "{:?}", exp.warnings);
        for bad in [
            "kswapd_cpu_share = 0",
            "kswapd_cpu_share = 1.5",
            "kswapd_slice_ms = -1",
        ] {
            let m = err_of(&format!("{bad}\n{base}"), &[]);
            let key = bad.split(' ').next().unwrap();
            assert!(m.contains(key) && m.contains("expected a number in"), "{m}");
        }
        let m = err_of(&format!("{base}in_order = true\npattern = \"zipf\"\n"), &[]);
        assert!(
            m.contains("process.0.thread.0.phase.0.access.0.in_order") && m.contains("zipf"),
            "{m}"
        );
        let m = err_of(&format!("{base}in_order = 1\n"), &[]);
        assert!(m.contains("in_order"), "{m}");
    }

    #[test]
    fn pinned_separate_vma_and_cpu_share_errors_name_the_field() {
        let base = "workload = \"custom\"\n[[process]]\nname = \"a\"\ncpu_share = 0.5\n[[process.object]]\nname = \"buf\"\nsize_mb = 4\n[[process.object]]\nname = \"b2\"\nsize_mb = 4\n[[process.thread]]\n[[process.thread.phase]]\nmlp = 2\n[[process.thread.phase.access]]\nobject = \"buf\"\n";
        let exp = load_str("exp.toml", base, &[], None).unwrap();
        assert_eq!(exp.processes[0].cpu_share, 0.5);
        assert!(!exp.processes[0].objects[1].separate_vma);
        let m = err_of(&base.replace("cpu_share = 0.5", "cpu_share = 2"), &[]);
        assert!(
            m.contains("process.0.cpu_share") && m.contains("[0.01, 1]"),
            "{m}"
        );
        let m = err_of(
            &base.replace(
                "size_mb = 4\n[[process.object]]",
                "size_mb = 4\npinned = true\n[[process.object]]",
            ),
            &[],
        );
        assert!(
            m.contains("process.0.object.0.pinned") && m.contains("`tier`"),
            "{m}"
        );
        let m = err_of(
            &base.replace(
                "size_mb = 4\n[[process.object]]",
                "size_mb = 4\nmlocked = true\n[[process.object]]",
            ),
            &[],
        );
        assert!(
            m.contains("process.0.object.0.mlocked") && m.contains("`tier`"),
            "{m}"
        );
        let m = err_of(
            &base.replace(
                "name = \"b2\"\nsize_mb = 4",
                "name = \"b2\"\nsize_mb = 4\nseparate_vma = 1",
            ),
            &[],
        );
        assert!(
            m.contains("separate_vma") && m.contains("true or false"),
            "{m}"
        );
        let ok = base.replace(
            "name = \"b2\"\nsize_mb = 4",
            "name = \"b2\"\nsize_mb = 4\nseparate_vma = true",
        );
        let exp = load_str("exp.toml", &ok, &[], None).unwrap();
        assert!(exp.processes[0].objects[1].separate_vma);
    }

    #[test]
    fn custom_workload_errors_name_the_field() {
        let base = "workload = \"custom\"\n[[process]]\nname = \"a\"\n[[process.object]]\nname = \"buf\"\nsize_mb = 4\n[[process.thread]]\n[[process.thread.phase]]\nmlp = 2\n[[process.thread.phase.access]]\nobject = \"bfu\"\n";
        let m = err_of(base, &[]);
        assert!(
            m.contains("process.0.thread.0.phase.0.access.0.object")
                && m.contains("did you mean `buf`"),
            "{m}"
        );
        let ok = base.replace("bfu", "buf");
        load_str("exp.toml", &ok, &[], None).unwrap();
        let m = err_of(&ok, &["process.0.thread.0.phase.0.mlp=0"]);
        assert!(
            m.contains("process.0.thread.0.phase.0.mlp") && m.contains("[1, 64]"),
            "{m}"
        );
        let m = err_of(&ok.replace("size_mb = 4", "size_mb = 4\nsize_gb = 1"), &[]);
        assert!(m.contains("exactly one of"), "{m}");
        let m = err_of(&ok.replace("size_mb = 4", "size_mb = 0"), &[]);
        assert!(m.contains("positive size"), "{m}");
        let m = err_of(&ok.replace("mlp = 2", "mlp = 2\nburst = 3"), &[]);
        assert!(
            m.contains("`process.0.thread.0.phase.0.burst`: unknown key"),
            "{m}"
        );
        let m = err_of(
            &format!("slow_tier_gb = 0.001\nfast_tier_gb = 0.001\n{ok}"),
            &[],
        );
        assert!(
            m.contains("slow_tier_gb") && m.contains("make slow_tier_gb larger"),
            "{m}"
        );
    }

    #[test]
    fn tier_tables_replace_curves() {
        let base = "workload = \"gups-hotset\"\n[[tier]]\nname = \"fast\"\nl0_ns = 80\npeak_gbps = 100\n[[tier]]\nname = \"slow\"\ncurve = \"table\"\npeak_gbps = 30\npoints = [[0, 200], [20, 260], [30, 600]]\n";
        let e = load_str("exp.toml", base, &[], None).unwrap();
        assert_eq!(e.platform.tiers[1].curve.latency_ns(10.0, 1.0), 230.0);
        let m = err_of(&base.replace("[30, 600]", "[10, 600]"), &[]);
        assert!(m.contains("tier.1.points") && m.contains("ascend"), "{m}");
        let m = err_of(&base.replace("l0_ns = 80\n", ""), &[]);
        assert!(m.contains("tier.0.l0_ns") && m.contains("missing"), "{m}");
    }

    #[test]
    fn costs_table_replaces_the_given_costs_only() {
        let preset = platform::preset("skx-cxl-emu").unwrap().costs;
        let text = "workload = \"gups-hotset\"\nplatform = \"skx-cxl-emu\"\n[costs]\nhint_fault_us = 1.5\nmigration_threads = 2\n";
        let e = load_str("exp.toml", text, &[], None).unwrap();
        assert_eq!(e.platform.costs.hint_fault_us, 1.5);
        assert_eq!(e.platform.costs.migration_threads, 2);
        assert_eq!(e.platform.costs.copy_gbps, preset.copy_gbps);
        // --set with a dotted key, integers taken as numbers
        let sets = vec!["costs.copy_gbps=3".to_string()];
        let e = load_str("exp.toml", "workload = \"gups-hotset\"\n", &sets, None).unwrap();
        assert_eq!(e.platform.costs.copy_gbps, 3.0);
        let m = err_of("workload = \"gups-hotset\"\n", &["costs.hint_fault=2"]);
        assert!(
            m.contains("costs.hint_fault") && m.contains("hint_fault_us"),
            "{m}"
        );
        let m = err_of(
            "workload = \"gups-hotset\"\n",
            &["costs.migration_threads=0"],
        );
        assert!(
            m.contains("costs.migration_threads") && m.contains("[1, 1024]"),
            "{m}"
        );
        let m = err_of("workload = \"gups-hotset\"\ncosts = 3\n", &[]);
        assert!(m.contains("`costs`") && m.contains("table"), "{m}");
    }

    // Issue 19: nonsense that was accepted silently (or crashed later) is a one-line error
    // naming the file and the key.
    const CUSTOM: &str = "workload = \"custom\"\nduration_s = 0.05\n[[process]]\nname = \"a\"\n[[process.object]]\nname = \"buf\"\nsize_mb = 4\n[[process.thread]]\n[[process.thread.phase]]\nmlp = 2\n[[process.thread.phase.access]]\nobject = \"buf\"\n";

    fn one_line(m: &str) {
        assert!(!m.contains('\n') && m.starts_with("exp.toml"), "{m}");
    }

    #[test]
    fn hot_set_below_one_page_is_an_error() {
        for v in ["0", "0.001", "0.0019"] {
            let m = load("gups-hotset", &[format!("hot_set_gb={v}")], None)
                .unwrap_err()
                .to_string();
            assert!(
                m.contains("hot_set_gb") && m.contains("smaller than one page"),
                "{m}"
            );
        }
        load("gups-hotset", &["hot_set_gb=0.002".into()], None).unwrap();
        load(
            "gups-hotset",
            &["hot_set_gb=0.002".into(), "page_size=\"4KiB\"".into()],
            None,
        )
        .unwrap();
        // The hot set moves to a cold part that exists, or nowhere.
        for sets in [
            &["working_set_gb=10", "hot_offset_frac=1", "hot_change_s=1"][..],
            &["working_set_gb=8", "hot_set_gb=8", "hot_change_s=1"][..],
            &["working_set_gb=8.001", "hot_set_gb=8", "hot_change_s=1"][..],
        ] {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let e = load("gups-hotset", &sets, None).unwrap();
            let p = &e.processes[0];
            for ph in &p.threads[0].phases {
                for a in &ph.access {
                    assert!(
                        a.object == "*" || p.objects.iter().any(|o| o.name == a.object),
                        "{sets:?}: {}",
                        a.object
                    );
                }
            }
        }
    }

    #[test]
    fn start_frac_one_is_an_error() {
        let m = err_of(&format!("{CUSTOM}start_frac = 1.0\n"), &[]);
        one_line(&m);
        assert!(
            m.contains("process.0.thread.0.phase.0.access.0.start_frac") && m.contains("[0, 1)"),
            "{m}"
        );
        load_str(
            "exp.toml",
            &format!("{CUSTOM}start_frac = 0.99\n"),
            &[],
            None,
        )
        .unwrap();
    }

    #[test]
    fn duplicate_process_names_name_both_entries() {
        let second = CUSTOM.split_once("[[process]]").unwrap().1;
        let m = err_of(&format!("{CUSTOM}[[process]]{second}"), &[]);
        one_line(&m);
        assert!(
            m.contains("`process.1.name`") && m.contains("process.0") && m.contains("unique"),
            "{m}"
        );
        // a default name (p1) taken by an explicit one
        let m = err_of(
            &format!(
                "{CUSTOM}[[process]]{}",
                second.replace("name = \"a\"\n", "")
            ),
            &["process.0.name=\"p1\""],
        );
        assert!(m.contains("`process.1.name`"), "{m}");
    }

    #[test]
    fn bad_process_and_tier_names() {
        for (name, want) in [
            ("\"\"", "non-empty"),
            ("\"a\\u0000b\"", "control characters"),
            (&format!("\"{}\"", "x".repeat(200_000)), "at most 128"),
        ] {
            let m = err_of(
                &CUSTOM.replace("name = \"a\"", &format!("name = {name}")),
                &[],
            );
            one_line(&m);
            assert!(m.contains("`process.0.name`") && m.contains(want), "{m}");
            assert!(m.len() < 300, "{}", m.len());
        }
        let m = err_of(&CUSTOM.replace("name = \"buf\"", "name = \"\""), &[]);
        assert!(m.contains("`process.0.object.0.name`"), "{m}");
        let tiers = "[[tier]]\nname = \"x\"\nl0_ns = 80\npeak_gbps = 100\n[[tier]]\nname = \"x\"\nl0_ns = 200\npeak_gbps = 30\n";
        let m = err_of(&format!("workload = \"gups-hotset\"\n{tiers}"), &[]);
        assert!(m.contains("`tier.1.name`") && m.contains("tier.0"), "{m}");
    }

    #[test]
    fn zero_weight_and_zipf_s() {
        let m = err_of(&format!("{CUSTOM}weight = 0\n"), &[]);
        one_line(&m);
        assert!(
            m.contains("process.0.thread.0.phase.0.access.0.weight") && m.contains("weight 0"),
            "{m}"
        );
        for v in ["nan", "-1", "inf"] {
            let m = err_of(&format!("{CUSTOM}zipf_s = {v}\n"), &[]);
            one_line(&m);
            assert!(
                m.contains("access.0.zipf_s") && m.contains("[0.01, 5]"),
                "{m}"
            );
        }
        // a valid zipf_s with another pattern is ignored (documented: a sweep over `pattern`)
        load_str("exp.toml", &format!("{CUSTOM}zipf_s = 1.2\n"), &[], None).unwrap();
    }

    #[test]
    fn antagonist_checks() {
        let ant = "[[antagonist]]\ntier = \"fast\"\ncores = 2\nstart_s = 0.02\n";
        load_str("exp.toml", &format!("{CUSTOM}{ant}"), &[], None).unwrap();
        let m = err_of(&format!("{CUSTOM}{ant}stop_s = 0.01\n"), &[]);
        one_line(&m);
        assert!(
            m.contains("`antagonist.0.stop_s`") && m.contains("after start_s"),
            "{m}"
        );
        let m = err_of(
            &format!("{CUSTOM}{}", ant.replace("cores = 2", "cores = 0")),
            &[],
        );
        assert!(
            m.contains("`antagonist.0.cores`") && m.contains("[1, 4096]"),
            "{m}"
        );
        let m = err_of(
            &format!("{CUSTOM}{}", ant.replace("tier = \"fast\"\n", "")),
            &[],
        );
        assert!(
            m.contains("`antagonist.0.tier`") && m.contains("missing"),
            "{m}"
        );
    }

    #[test]
    fn tier_curves_that_cannot_be() {
        let q = "workload = \"gups-hotset\"\n[[tier]]\nl0_ns = 80\npeak_gbps = 50\nbsat_read_gbps = 60\n[[tier]]\nl0_ns = 200\npeak_gbps = 30\n";
        let m = err_of(q, &[]);
        one_line(&m);
        assert!(
            m.contains("`tier.0.bsat_read_gbps`") && m.contains("peak_gbps (50)"),
            "{m}"
        );
        let m = err_of(&q.replace("bsat_read_gbps", "bsat_mixed_gbps"), &[]);
        assert!(m.contains("`tier.0.bsat_mixed_gbps`"), "{m}");
        let t = "workload = \"gups-hotset\"\n[[tier]]\nl0_ns = 80\npeak_gbps = 50\n[[tier]]\ncurve = \"table\"\npeak_gbps = 30\npoints = [[0, 300], [10, 250], [20, 400]]\n";
        let m = err_of(t, &[]);
        one_line(&m);
        assert!(
            m.contains("`tier.1.points`") && m.contains("must not fall"),
            "{m}"
        );
    }

    #[test]
    fn seeds_beyond_i64_do_not_wrap() {
        let m = load("gups-hotset", &[], Some(1 << 63))
            .unwrap_err()
            .to_string();
        assert!(
            m.contains("seed") && m.contains("9223372036854775807"),
            "{m}"
        );
        assert_eq!(
            load("gups-hotset", &[], Some(i64::MAX as u64))
                .unwrap()
                .seed,
            i64::MAX as u64
        );
    }

    #[test]
    fn workload_parameter_errors_say_workload() {
        let m = err_of("workload = \"gups-hotset\"\nthreads = 0\n", &[]);
        one_line(&m);
        assert!(
            m.contains("`threads`")
                && m.contains("workload `gups-hotset`")
                && !m.contains("policy"),
            "{m}"
        );
    }
}
