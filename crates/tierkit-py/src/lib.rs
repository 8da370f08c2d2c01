//! `tierkit._core`: the Rust core seen from Python. Every bad input raises `TierkitError` with
//! a complete, user-facing message.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;

// Named by their full module path, so that they pickle (a run in a worker process raises in the
// parent with its class intact: sweeps and reproductions with workers).
create_exception!(
    tierkit._core,
    TierkitError,
    PyException,
    "A bad experiment, spec or input; the message says what and where."
);

create_exception!(
    tierkit._core,
    MemoryLimitError,
    TierkitError,
    "The run does not fit in memory: refused before it started, its estimated memory being above \
     the machine's available memory or `max_memory` (attributes `footprint_bytes`, \
     `estimate_bytes`, `limit_bytes`), or an allocation failed (those attributes are None)."
);

fn err(e: impl std::fmt::Display) -> PyErr {
    TierkitError::new_err(e.to_string())
}

/// A simulator error as a Python exception: memory errors as [`MemoryLimitError`] with the
/// figures as attributes, the others as [`TierkitError`].
fn sim_err(py: Python<'_>, e: tierkit_sim::SimError) -> PyErr {
    use tierkit_sim::SimError;
    let figures = match &e {
        SimError::TooLarge {
            footprint_bytes,
            estimate,
            limit,
            ..
        } => Some((*footprint_bytes, *estimate, limit.bytes())),
        SimError::OutOfMemory { .. } => None,
        _ => return err(e),
    };
    let pe = MemoryLimitError::new_err(e.to_string());
    let value = pe.value(py);
    let (f, est, lim) = match figures {
        Some((f, est, lim)) => (Some(f), Some(est), Some(lim)),
        None => (None, None, None),
    };
    // Attributes are best effort: the message already says everything.
    let _ = value.setattr("footprint_bytes", f);
    let _ = value.setattr("estimate_bytes", est);
    let _ = value.setattr("limit_bytes", lim);
    pe
}

/// Run an experiment; returns (summary_json, timeseries columns). `max_memory` (bytes) refuses
/// a run whose estimated memory is above it, before anything is allocated (as the machine's
/// available memory always does). `cache_dir`: where fast-only reference runs are kept across
/// processes (None: not kept).
#[pyfunction]
#[pyo3(signature = (experiment, policy=None, overrides=Vec::new(), seed=None, progress=None, max_memory=None, cache_dir=None))]
#[allow(clippy::too_many_arguments)] // the Python call's keyword arguments, one each
fn run(
    py: Python<'_>,
    experiment: &str,
    policy: Option<&str>,
    overrides: Vec<String>,
    seed: Option<u64>,
    progress: Option<Bound<'_, PyAny>>,
    max_memory: Option<u64>,
    cache_dir: Option<std::path::PathBuf>,
) -> PyResult<(String, Py<PyDict>)> {
    let start = std::time::Instant::now();
    let exp = tierkit_sim::load(experiment, &overrides, seed).map_err(err)?;
    let spec = policy
        .map(str::to_string)
        .or_else(|| exp.policy.clone())
        .unwrap_or_else(|| "notier".into());
    let mut py_err: Option<PyErr> = None;
    let progress: Option<Py<PyAny>> = progress.map(Bound::unbind);
    let opts = tierkit_sim::RunOptions {
        max_memory,
        reference_cache: cache_dir,
    };
    // The simulation runs without the GIL, so that runs in several Python threads (a thread
    // pool, Dask's threaded scheduler) use several cores; the GIL is taken again only for the
    // ~200 progress calls of a run (signals, the progress callback).
    let out = py.detach(|| {
        let mut cb = |done: f64, total: f64| -> bool {
            Python::attach(|py| {
                if let Err(e) = py.check_signals() {
                    py_err = Some(e);
                    return false;
                }
                if let Some(p) = &progress {
                    if let Err(e) = p.bind(py).call1((done, total)) {
                        py_err = Some(e);
                        return false;
                    }
                }
                true
            })
        };
        tierkit_sim::run_with(&exp, &spec, &opts, &mut cb)
    });
    if let Some(e) = py_err {
        return Err(e);
    }
    let mut out = out.map_err(|e| sim_err(py, e))?;
    // The whole call: loading (the trace replay passes included) and both runs.
    out.summary.wall_seconds = start.elapsed().as_secs_f64();
    let summary = serde_json::to_string(&out.summary).map_err(err)?;
    let cols = PyDict::new(py);
    for (name, values) in &out.series.columns {
        cols.set_item(name, values.clone())?;
    }
    Ok((summary, cols.unbind()))
}

/// Check an experiment and a policy spec without running them; returns the resolved policy spec.
#[pyfunction]
#[pyo3(signature = (experiment, policy=None, overrides=Vec::new()))]
fn check(experiment: &str, policy: Option<&str>, overrides: Vec<String>) -> PyResult<String> {
    let exp = tierkit_sim::load(experiment, &overrides, None).map_err(err)?;
    let spec = policy
        .map(str::to_string)
        .or_else(|| exp.policy.clone())
        .unwrap_or_else(|| "notier".into());
    tierkit_policies::check(&spec).map_err(err)?;
    Ok(spec)
}

#[pyfunction]
fn list_policies() -> Vec<(String, String)> {
    tierkit_policies::REGISTRY
        .iter()
        .map(|p| (p.name.to_string(), p.description.to_string()))
        .collect()
}

#[pyfunction]
fn list_workloads() -> Vec<(String, String)> {
    tierkit_sim::workloads::REGISTRY
        .iter()
        .map(|w| (w.name.to_string(), w.description.to_string()))
        .collect()
}

#[pyfunction]
fn list_platforms() -> Vec<(String, String)> {
    tierkit_sim::platform::PRESETS
        .iter()
        .map(|p| (p.0.to_string(), p.1.to_string()))
        .collect()
}

fn kind_name(k: &tierkit_core::ParamKind) -> String {
    use tierkit_core::ParamKind::*;
    match k {
        Int { min, max } => format!("int [{min}, {max}]"),
        Float { min, max } => format!("float [{min}, {max}]"),
        Bool => "bool".into(),
        // object-name lists are strings to describe's readers
        Str | Objects => "string".into(),
        Choice(c) => format!("one of {}", c.join("|")),
    }
}

fn params_to_py<'py>(
    py: Python<'py>,
    defs: &[tierkit_core::ParamDef],
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    defs.iter()
        .map(|d| {
            let x = PyDict::new(py);
            x.set_item("name", d.name)?;
            x.set_item("kind", kind_name(&d.kind))?;
            x.set_item("default", d.default)?;
            x.set_item("unit", d.unit)?;
            x.set_item("doc", d.doc)?;
            Ok(x)
        })
        .collect()
}

/// Parameters of a policy: name, kind, default, unit, doc.
#[pyfunction]
fn describe_policy<'py>(py: Python<'py>, name: &str) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let p = tierkit_policies::find(name).ok_or_else(|| {
        err(tierkit_core::Error::UnknownPolicy {
            name: name.into(),
            hint: tierkit_core::suggest::hint(
                name,
                tierkit_policies::REGISTRY.iter().map(|p| p.name),
            ),
        })
    })?;
    params_to_py(py, p.params)
}

/// Parameters of a built-in workload (top-level experiment keys).
#[pyfunction]
fn describe_workload<'py>(py: Python<'py>, name: &str) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let w = tierkit_sim::workloads::find(name).ok_or_else(|| {
        err(format!(
            "unknown workload `{name}`{}",
            tierkit_core::suggest::hint(name, tierkit_sim::workloads::names())
        ))
    })?;
    params_to_py(py, w.params)
}

/// The keys of `workload = "trace"`: (key, description).
#[pyfunction]
fn trace_keys() -> Vec<(String, String)> {
    tierkit_sim::config::TRACE_KEYS
        .iter()
        .map(|(k, d)| (k.to_string(), d.to_string()))
        .collect()
}

/// Calibrate a platform with the microbenchmarks; returns the constants and the points.
#[pyfunction]
fn calibrate<'py>(py: Python<'py>, platform: &str) -> PyResult<Bound<'py, PyDict>> {
    if tierkit_sim::platform::preset(platform).is_none() {
        let names: Vec<&str> = tierkit_sim::platform::PRESETS.iter().map(|p| p.0).collect();
        return Err(err(format!(
            "unknown platform `{platform}`{}; platforms: {}",
            tierkit_core::suggest::hint(platform, names.iter().copied()),
            names.join(", ")
        )));
    }
    let (c, pts) = tierkit_sim::calibrate::calibrate(platform).map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("platform", platform)?;
    d.set_item("aol_low_cycles", c.aol_low_cycles)?;
    d.set_item("aol_high_cycles", c.aol_high_cycles)?;
    d.set_item("k_a", c.k_a)?;
    d.set_item("k_b", c.k_b)?;
    d.set_item("stall_k_cycles", c.stall_k_cycles.clone())?;
    let points = pts
        .iter()
        .map(|p| {
            let x = PyDict::new(py);
            x.set_item("mlp", p.mlp)?;
            x.set_item("compute_ns", p.compute_ns)?;
            x.set_item("aol_cycles", p.aol_cycles)?;
            x.set_item("p", p.p)?;
            x.set_item("slowdown", p.slowdown)?;
            x.set_item("k", p.k())?;
            Ok(x)
        })
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("points", points)?;
    Ok(d)
}

/// Soar's profiling run on an experiment; returns the ranking table as TSV text.
#[pyfunction]
#[pyo3(signature = (experiment, overrides=Vec::new(), seed=None, params=Vec::new()))]
fn soar_profile(
    py: Python<'_>,
    experiment: &str,
    overrides: Vec<String>,
    seed: Option<u64>,
    params: Vec<(String, String)>,
) -> PyResult<String> {
    let exp = tierkit_sim::load(experiment, &overrides, seed).map_err(err)?;
    let mut profiler = tierkit_policies::soar::profiler(&params).map_err(err)?;
    tierkit_sim::memory::check(&exp, profiler.as_ref(), None).map_err(|e| sim_err(py, e))?;
    tierkit_sim::engine::profile(&exp, profiler.as_mut()).map_err(|e| sim_err(py, e))
}

/// Soar on a real run (`tierkit soar place`): join the shim's objects, given as
/// (site, address, bytes, alloc_ns, free_ns or None), with the LLC-miss samples of a `perf script`
/// file and per-interval counters, given as (end_ns, (A1, A3, stalls, cycles) or None); score
/// with Algorithm 1; rank and place the sites. `calibration` is (AOL_low, AOL_high, k_a, k_b);
/// `aol_low`/`aol_high` override its bands (or the Skylake 40/100 cycles without one), and an
/// `l0` of 0 is the resolved AOL_high.
#[pyfunction]
#[pyo3(signature = (objects, samples_path, intervals, fast_bytes, r_min=0.03, r_max=0.7, hot_factor=8.0, l0=0.0, calibration=None, aol_low=None, aol_high=None))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn soar_place<'py>(
    py: Python<'py>,
    objects: Vec<(u64, u64, u64, u64, Option<u64>)>,
    samples_path: std::path::PathBuf,
    intervals: Vec<(u64, Option<(f64, f64, f64, f64)>)>,
    fast_bytes: u64,
    r_min: f64,
    r_max: f64,
    hot_factor: f64,
    l0: f64,
    calibration: Option<(f64, f64, f64, f64)>,
    aol_low: Option<f64>,
    aol_high: Option<f64>,
) -> PyResult<Bound<'py, PyDict>> {
    use tierkit_policies::soar::{Algorithm1, Counters};
    use tierkit_policies::soar_flows::{place_sites, score_objects, FlowObject, Interval};
    let (samples, st) = tierkit_sim::trace::import::perf_llc_misses(&samples_path).map_err(err)?;
    let objs: Vec<FlowObject> = objects
        .into_iter()
        .map(|(site, address, bytes, alloc_ns, free_ns)| FlowObject {
            site,
            address,
            bytes,
            alloc_ns,
            free_ns,
        })
        .collect();
    let ivs: Vec<Interval> = intervals
        .into_iter()
        .map(|(end_ns, c)| Interval {
            end_ns,
            counters: c.map(|(a1, a3, stalls, cycles)| Counters {
                a1,
                a3,
                stalls,
                cycles,
            }),
        })
        .collect();
    let cal = calibration.map(|(lo, hi, a, b)| tierkit_core::telemetry::Calibration {
        aol_low_cycles: lo,
        aol_high_cycles: hi,
        k_a: a,
        k_b: b,
        stall_k_cycles: Vec::new(),
    });
    let alg = Algorithm1::new(r_min, r_max, hot_factor, l0, cal.as_ref())
        .with_bands(aol_low, aol_high, l0);
    if alg.aol_high <= alg.aol_low {
        return Err(TierkitError::new_err(format!(
            "AOL_high ({} cycles) must be above AOL_low ({} cycles)",
            alg.aol_high, alg.aol_low
        )));
    }
    let scored = score_objects(&objs, &samples, &ivs, &alg);
    let sites = place_sites(&objs, &scored, fast_bytes);
    let d = PyDict::new(py);
    d.set_item("perf_lines", st.lines)?;
    d.set_item("llc_miss_samples", st.accesses)?;
    d.set_item("skipped_lines", st.skipped)?;
    d.set_item("unmatched_samples", scored.unmatched)?;
    d.set_item("late_samples", scored.late)?;
    d.set_item("l0_cycles", alg.l0)?;
    d.set_item("aol_low_cycles", alg.aol_low)?;
    d.set_item("aol_high_cycles", alg.aol_high)?;
    let rows = sites
        .iter()
        .map(|s| {
            let r = PyDict::new(py);
            r.set_item("site", format!("{:016x}", s.site))?;
            r.set_item("objects", s.objects)?;
            r.set_item("bytes", s.bytes)?;
            r.set_item("peak_bytes", s.peak_bytes)?;
            r.set_item("samples", s.samples)?;
            r.set_item("score", s.score)?;
            r.set_item("unit_score", s.unit_score)?;
            r.set_item("rank", s.rank)?;
            r.set_item("fast", s.fast)?;
            Ok(r)
        })
        .collect::<PyResult<Vec<_>>>()?;
    d.set_item("sites", rows)?;
    Ok(d)
}

/// PACT's evaluation run: the `pact` policy on an experiment with per-page ground truth (true
/// slow-tier stall) next to its PAC and sample counts, and its per-window trace.
/// One field of every record, as a column for a Python dict.
fn column<T, U>(rows: &[T], f: impl Fn(&T) -> U) -> Vec<U> {
    rows.iter().map(f).collect()
}

#[pyfunction]
#[pyo3(signature = (experiment, policy="pact", overrides=Vec::new(), seed=None, truth_ms=20.0))]
fn pact_eval<'py>(
    py: Python<'py>,
    experiment: &str,
    policy: &str,
    overrides: Vec<String>,
    seed: Option<u64>,
    truth_ms: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let exp = tierkit_sim::load(experiment, &overrides, seed).map_err(err)?;
    let ev = tierkit_sim::pact_eval::run(&exp, policy, truth_ms).map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("policy", ev.spec)?;
    d.set_item("page", column(&ev.pages, |p| p.page.0))?;
    d.set_item("pac", column(&ev.pages, |p| p.pac))?;
    d.set_item("samples", column(&ev.pages, |p| p.samples))?;
    d.set_item("true_stall_ns", column(&ev.pages, |p| p.true_stall_ns))?;
    let tr = PyDict::new(py);
    tr.set_item("t_s", column(&ev.trace, |w| w.t_ns as f64 * 1e-9))?;
    tr.set_item("width", column(&ev.trace, |w| w.width))?;
    tr.set_item("mlp", column(&ev.trace, |w| w.mlp))?;
    tr.set_item("stall_cycles", column(&ev.trace, |w| w.stall_cycles))?;
    tr.set_item("candidates", column(&ev.trace, |w| w.candidates))?;
    tr.set_item("in_top_bin", column(&ev.trace, |w| w.in_top_bin))?;
    tr.set_item("tracked", column(&ev.trace, |w| w.tracked))?;
    tr.set_item("promotions", column(&ev.trace, |w| w.promotions))?;
    d.set_item("trace", tr)?;
    let st = PyDict::new(py);
    for (k, v) in ev.stats {
        st.set_item(k, v)?;
    }
    d.set_item("stats", st)?;
    Ok(d)
}

/// The keys every experiment accepts: (key, description).
#[pyfunction]
fn common_keys() -> Vec<(String, String)> {
    tierkit_sim::config::COMMON_KEYS
        .iter()
        .map(|(k, d)| (k.to_string(), d.to_string()))
        .collect()
}

/// Convert a lackey / perf-script / damon text trace (a path; "-" is stdin; plain, gzip or
/// zstd, told by content) into a binary trace; returns the import's counts. The output appears
/// only once complete (written beside it, then renamed).
#[pyfunction]
fn trace_import<'py>(
    py: Python<'py>,
    format: &str,
    input: &str,
    output: &str,
) -> PyResult<Bound<'py, PyDict>> {
    use tierkit_sim::trace::import::{import_path, Format};
    let fmt = Format::parse(format).ok_or_else(|| {
        err(format!(
            "unknown trace format `{format}`; expected one of: {}",
            Format::NAMES.join(", ")
        ))
    })?;
    let out = std::path::Path::new(output);
    let st = py.detach(|| import_path(fmt, input, out)).map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("lines", st.lines)?;
    d.set_item("skipped", st.skipped)?;
    d.set_item("records", st.records)?;
    d.set_item("accesses", st.accesses)?;
    d.set_item("instructions", st.instructions)?;
    d.set_item("compression", st.compression.name())?;
    Ok(d)
}

/// Summarise a binary trace (reads and validates every record), and its replay's per-window
/// MLP as a run with these overrides (`KEY=VALUE`: platform, llc_mb, window_accesses, ...)
/// would build it, over the trace's own windows unless the overrides set `window_ms` or
/// `window_epochs` (`run_windows`: the windows the run replays after merging); `mlp_error` says
/// why there is none (every access hits the LLC model...).
#[pyfunction]
#[pyo3(signature = (path, overrides=Vec::new()))]
fn trace_info<'py>(
    py: Python<'py>,
    path: &str,
    overrides: Vec<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let i = py
        .detach(|| tierkit_sim::trace::info(std::path::Path::new(path)))
        .map_err(err)?;
    let d = PyDict::new(py);
    d.set_item("path", path)?;
    d.set_item("version", i.header.version)?;
    d.set_item("source", i.header.source.name())?;
    d.set_item("stamp", i.header.stamp.name())?;
    d.set_item("has_stamps", i.header.has_stamps())?;
    d.set_item("unit_bytes", 1u64 << i.header.unit_shift)?;
    d.set_item("records", i.records)?;
    d.set_item("accesses", i.accesses)?;
    d.set_item("stores", i.stores)?;
    d.set_item("pages", i.pages)?;
    d.set_item("lines", i.lines)?;
    d.set_item("first_stamp", i.first_stamp)?;
    d.set_item("last_stamp", i.last_stamp)?;
    d.set_item("min_addr", i.min_addr)?;
    d.set_item("max_addr", i.max_addr)?;
    // The trace's own windows (no merging) unless the overrides set the merge threshold; the
    // windows a run with these overrides replays are counted apart (`run_windows`).
    let spec = format!("trace:{path}");
    let sets_merge = overrides
        .iter()
        .any(|o| o.starts_with("window_ms=") || o.starts_with("window_epochs="));
    let mut own = overrides.clone();
    if !sets_merge {
        own.push("window_epochs=0".into());
    }
    let exp = py.detach(|| tierkit_sim::load(&spec, &own, None));
    match exp {
        Ok(exp) => {
            let run_windows = if sets_merge {
                exp.replays[0].replay.windows.len()
            } else {
                py.detach(|| tierkit_sim::load(&spec, &overrides, None))
                    .map_err(err)?
                    .replays[0]
                    .replay
                    .windows
                    .len()
            };
            let r = &exp.replays[0].replay;
            let st = r.mlp_stats();
            let m = PyDict::new(py);
            m.set_item("estimate", st.estimate)?;
            m.set_item("windows", st.windows)?;
            m.set_item("min", st.min)?;
            m.set_item("p10", st.p10)?;
            m.set_item("p50", st.p50)?;
            m.set_item("p90", st.p90)?;
            m.set_item("max", st.max)?;
            m.set_item("per_window", column(&r.windows, |w| w.mlp))?;
            m.set_item("window_misses", column(&r.windows, |w| w.misses))?;
            m.set_item("misses", r.misses)?;
            m.set_item("run_windows", run_windows)?;
            m.set_item("platform", exp.platform.name.clone())?;
            d.set_item("mlp", m)?;
        }
        Err(e) if overrides.is_empty() => d.set_item("mlp_error", e.to_string())?,
        Err(e) => return Err(err(e)),
    }
    Ok(d)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("TierkitError", m.py().get_type::<TierkitError>())?;
    m.add("MemoryLimitError", m.py().get_type::<MemoryLimitError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(list_policies, m)?)?;
    m.add_function(wrap_pyfunction!(list_workloads, m)?)?;
    m.add_function(wrap_pyfunction!(list_platforms, m)?)?;
    m.add_function(wrap_pyfunction!(describe_policy, m)?)?;
    m.add_function(wrap_pyfunction!(describe_workload, m)?)?;
    m.add_function(wrap_pyfunction!(common_keys, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(soar_profile, m)?)?;
    m.add_function(wrap_pyfunction!(soar_place, m)?)?;
    m.add_function(wrap_pyfunction!(pact_eval, m)?)?;
    m.add_function(wrap_pyfunction!(trace_import, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(trace_keys, m)?)?;
    Ok(())
}
