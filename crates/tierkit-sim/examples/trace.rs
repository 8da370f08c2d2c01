//! `trace import FORMAT INPUT OUTPUT`, `trace info FILE`, and `trace bench [MILLIONS]`: the
//! replay-speed benchmark of BENCHMARKS.md (a random-page trace through the LLC model and the
//! window bookkeeping, on one core).

use std::io::BufReader;
use std::path::Path;
use std::time::Instant;

use tierkit_sim::trace::replay::{build, ReplayOpts};
use tierkit_sim::trace::{import, info, Header, Op, Source, StampKind, Writer};

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let r = match a.first().map(String::as_str) {
        Some("import") if a.len() == 4 => {
            let fmt = import::Format::parse(&a[1]).expect("format: lackey|perf-script|damon");
            let f = std::fs::File::open(&a[2]).expect("input");
            import::import(fmt, &a[2], BufReader::new(f), Path::new(&a[3]))
                .map(|s| println!("{s:?}"))
        }
        Some("info") if a.len() == 2 => info(Path::new(&a[1])).map(|i| println!("{i:#?}")),
        Some("bench") => {
            let millions: u64 = a.get(1).map_or(50, |s| s.parse().expect("millions"));
            let pages: u64 = a.get(2).map_or(1 << 20, |s| s.parse().expect("pages"));
            bench(millions, pages);
            Ok(())
        }
        _ => {
            eprintln!("usage: trace import FORMAT IN OUT | trace info FILE | trace bench [MILLIONS [PAGES]]");
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
    let opts = ReplayOpts {
        mlp: None,
        max_mlp: 10.0,
        llc: std::env::var("NOLLC").map_or(Some((48.0, 12)), |_| None),
        base_cpi: 0.5,
        cpu_ghz: 2.0,
        compute_ns: None,
        window_accesses: None,
        min_window_misses: 1000,
        page_bytes: 4096,
    };
    let t = Instant::now();
    let mut rd = tierkit_sim::trace::Reader::open(&path).expect("open");
    let mut k = 0u64;
    while let Some(x) = rd.next_record().expect("read") {
        k = k.wrapping_add(x.unit);
    }
    println!("read only: {:.2} s ({k})", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let r = build(&path, &opts).expect("replay");
    let s = t.elapsed().as_secs_f64();
    println!(
        "{n} accesses ({:.1} B/record), {} misses, {} pages, {} windows: {:.2} s, {:.1} M accesses/s",
        bytes as f64 / n as f64,
        r.misses,
        r.page_numbers.len(),
        r.windows.len(),
        s,
        n as f64 / s / 1e6
    );
    let _ = std::fs::remove_file(&path);
}
