//! `trace import FORMAT INPUT OUTPUT`, `trace info FILE`, and `trace bench [MILLIONS [PAGES]]`:
//! the replay-speed benchmark of BENCHMARKS.md (a random-page trace through the LLC model and
//! the window bookkeeping, on one core). `trace bench-file TRACE MILLIONS` times the replay of
//! a trace file, run again until MILLIONS million accesses (the shipped lackey traces are
//! 0.1-0.8M). `trace bench-vs OLD MILLIONS PAGES|TRACE REPS` runs `OLD bench` (or `OLD
//! bench-file`; OLD: this example built from an older commit), this one's, this one's with
//! `NOLLC=1` and OLD's with `NOLLC=1` in turn, REPS times in a rotating order, and prints the
//! medians and their ratios (OLD replays a format-version-1 copy of TRACE: the same records, not
//! compressed). `trace convert IN OUT VERSION` rewrites a trace in format version 1 or 2.
//! The LLC model is 48 MiB, 12-way (`LLC_MB` sets the size).

use std::path::Path;
use std::time::Instant;

use tierkit_sim::trace::replay::{build, ReplayOpts};
use tierkit_sim::trace::{import, info, Header, Op, Source, StampKind, Writer};

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let r = match a.first().map(String::as_str) {
        Some("import") if a.len() == 4 => {
            let fmt = import::Format::parse(&a[1]).expect("format: lackey|perf-script|damon");
            import::import_path(fmt, &a[2], Path::new(&a[3])).map(|s| println!("{s:?}"))
        }
        Some("info") if a.len() == 2 => info(Path::new(&a[1])).map(|i| println!("{i:#?}")),
        Some("convert") if a.len() == 4 => tierkit_sim::trace::convert(
            Path::new(&a[1]),
            Path::new(&a[2]),
            a[3].parse().expect("version: 1 or 2"),
        )
        .map(|h| println!("{h:?}")),
        Some("bench-vs") if a.len() == 5 => {
            let reps: usize = a[4].parse().expect("reps");
            bench_vs(&a[1], &a[2], &a[3], reps);
            Ok(())
        }
        Some("bench-file") if a.len() == 3 => {
            bench_file(Path::new(&a[1]), a[2].parse().expect("millions"));
            Ok(())
        }
        Some("bench") => {
            let millions: u64 = a.get(1).map_or(50, |s| s.parse().expect("millions"));
            let pages: u64 = a.get(2).map_or(1 << 20, |s| s.parse().expect("pages"));
            bench(millions, pages);
            Ok(())
        }
        _ => {
            eprintln!("usage: trace import FORMAT IN OUT | trace info FILE | trace convert IN OUT VERSION | trace bench [MILLIONS [PAGES]] | trace bench-file TRACE MILLIONS | trace bench-vs OLD_BINARY MILLIONS PAGES|TRACE REPS");
            std::process::exit(2);
        }
    };
    if let Err(e) = r {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn bench(millions: u64, pages: u64) {
    let path = std::env::temp_dir().join(format!("tk-bench-{}.tkt", std::process::id()));
    let n = millions * 1_000_000;
    let mut w = Writer::create(
        &path,
        Header::new(6, StampKind::Instructions, Source::Lackey),
    )
    .expect("create");
    // Random lines over `pages` 4 KiB pages (default 4 GiB: nearly every access misses a 48 MiB LLC).
    let mut rng = tierkit_core::rng::Rng::new(1);
    for i in 0..n {
        w.push(i * 3, rng.below(pages * 64), 1, Op::Load)
            .expect("write");
    }
    w.finish(n * 3).expect("finish");
    let bytes = std::fs::metadata(&path).expect("meta").len();
    let opts = bench_opts();
    let t = Instant::now();
    let mut rd = tierkit_sim::trace::Reader::open(&path).expect("open");
    let mut k = 0u64;
    while let Some(x) = rd.next_record().expect("read") {
        k = k.wrapping_add(x.unit);
    }
    println!("read only: {:.2} s ({k})", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let cpu = thread_cpu_s();
    let r = build(&path, &opts).expect("replay");
    let s = t.elapsed().as_secs_f64();
    let cpu = thread_cpu_s().map(|c| c - cpu.unwrap_or(0.0));
    println!(
        "{n} accesses ({:.1} B/record), {} misses, {} pages, {} windows: {:.2} s, {:.1} M accesses/s; {:.2} s of CPU, {:.1} M accesses/CPU-s",
        bytes as f64 / n as f64,
        r.misses,
        r.page_numbers.len(),
        r.windows.len(),
        s,
        n as f64 / s / 1e6,
        cpu.unwrap_or(f64::NAN),
        cpu.map_or(f64::NAN, |c| n as f64 / c / 1e6),
    );
    let _ = std::fs::remove_file(&path);
}

/// The replay settings of the benchmarks (the LLC model from [`llc`]).
fn bench_opts() -> ReplayOpts {
    ReplayOpts {
        mlp: None,
        max_mlp: 10.0,
        llc: llc(),
        base_cpi: 0.5,
        cpu_ghz: 2.0,
        instructions_per_access: 3.0,
        compute_ns: None,
        window_accesses: None,
        min_window_misses: 1000,
        page_bytes: 4096,
    }
}

/// The LLC model: 48 MiB (or LLC_MB), 12-way; none with NOLLC set.
fn llc() -> Option<(f64, u32)> {
    let mb = std::env::var("LLC_MB").map_or(48.0, |s| s.parse().expect("LLC_MB"));
    std::env::var("NOLLC").map_or(Some((mb, 12)), |_| None)
}

fn bench_file(path: &Path, millions: u64) {
    let opts = bench_opts();
    let h = tierkit_sim::trace::Reader::open(path).expect("open").header;
    let rounds = (millions * 1_000_000).div_ceil(h.accesses.max(1)).max(1);
    let t = Instant::now();
    let cpu = thread_cpu_s();
    let mut last = None;
    for _ in 0..rounds {
        last = Some(build(path, &opts).expect("replay"));
    }
    let s = t.elapsed().as_secs_f64();
    let cpu = thread_cpu_s().map(|c| c - cpu.unwrap_or(0.0));
    let r = last.expect("a round");
    let n = (rounds * h.accesses) as f64;
    println!(
        "{} x {rounds}: {} accesses in {} records, {} misses, {} pages, {} windows: {s:.2} s, {:.1} M accesses/s; {:.2} s of CPU, {:.1} M accesses/CPU-s",
        path.display(),
        h.accesses,
        h.records,
        r.misses,
        r.page_numbers.len(),
        r.windows.len(),
        n / s / 1e6,
        cpu.unwrap_or(f64::NAN),
        cpu.map_or(f64::NAN, |c| n / c / 1e6),
    );
}

/// This thread's user + system CPU time (Linux, 10 ms ticks: the shared machine's other work
/// does not count, as it does in wall time).
fn thread_cpu_s() -> Option<f64> {
    let st = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    // Fields after the command name (in parentheses): utime and stime are the 12th and 13th.
    let rest = &st[st.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// The number before `unit` in `line`.
fn number_before(line: &str, unit: &str) -> Option<f64> {
    line[..line.find(unit)?].rsplit(' ').next()?.parse().ok()
}

/// One `bench` run of `bin` (NOLLC=1 if `nollc`): its M accesses/s by wall and by CPU time.
fn run_bench(bin: &str, millions: &str, pages: &str, nollc: bool) -> (f64, f64) {
    let mut c = std::process::Command::new(bin);
    if pages.parse::<u64>().is_ok() {
        c.args(["bench", millions, pages]);
    } else {
        c.args(["bench-file", pages, millions]);
    }
    if nollc {
        c.env("NOLLC", "1");
    } else {
        c.env_remove("NOLLC");
    }
    let out = c.output().expect("run bench");
    assert!(out.status.success(), "{bin} bench failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().expect("bench output");
    let wall = number_before(last, " M accesses/s");
    let cpu = number_before(last, " M accesses/CPU-s");
    match (wall, cpu) {
        (Some(w), Some(c)) => (w, c),
        _ => panic!("unexpected bench output (from a bench without CPU time?): {last}"),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn bench_vs(old: &str, millions: &str, pages: &str, reps: usize) {
    let me = std::env::current_exe().expect("current exe");
    let me = me.to_str().expect("utf-8 path");
    // A trace file: the old build may read only format version 1, so it gets a version 1 copy
    // (the same records, not compressed).
    let v1 = std::env::temp_dir().join(format!("tk-bench-v1-{}.tkt", std::process::id()));
    let old_pages = if pages.parse::<u64>().is_ok() {
        pages.to_string()
    } else {
        tierkit_sim::trace::convert(Path::new(pages), &v1, 1).expect("version 1 copy");
        v1.display().to_string()
    };
    let runs = [
        ("old", old, false, old_pages.as_str()),
        ("new", me, false, pages),
        ("NOLLC", me, true, pages),
        ("old NOLLC", old, true, old_pages.as_str()),
    ];
    let (mut wall, mut cpu) = (vec![vec![]; runs.len()], vec![vec![]; runs.len()]);
    for rep in 0..reps {
        for k in 0..runs.len() {
            let i = (k + rep) % runs.len();
            let (name, bin, nollc, input) = runs[i];
            let (w, c) = run_bench(bin, millions, input, nollc);
            println!("rep {rep} {name:9} {w:6.1} M accesses/s, {c:6.1} M accesses/CPU-s");
            wall[i].push(w);
            cpu[i].push(c);
        }
    }
    for (what, v) in [("wall", &mut wall), ("CPU ", &mut cpu)] {
        let m: Vec<f64> = v.iter_mut().map(|x| median(x)).collect();
        println!(
            "{millions}M accesses over {pages} (pages or trace), {what} medians of {reps}: old {:.1}, new {:.1}, NOLLC {:.1}, old NOLLC {:.1} M accesses/s; new/old {:.2}, new/NOLLC {:.2}, NOLLC new/old {:.2}",
            m[0], m[1], m[2], m[3], m[1] / m[0], m[1] / m[2], m[2] / m[3]
        );
    }
    let _ = std::fs::remove_file(&v1);
}
