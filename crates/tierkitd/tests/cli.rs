//! The tierkitd binary's errors (issue 19): one line in its style, the targets checked before the
//! host's topology.

use std::process::{Command, Output};

fn tierkitd(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tierkitd"))
        .args(args)
        .output()
        .expect("tierkitd runs")
}

fn one_error_line(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("tierkitd: error: "), "{err}");
    err
}

#[test]
fn negative_numbers_are_one_line_errors() {
    let o = tierkitd(&["--pid", "-5", "--policy", "notier"]);
    assert_eq!(o.status.code(), Some(2));
    let e = one_error_line(&o);
    assert!(
        e.contains("--pid") && e.contains("`-5` is not a process id"),
        "{e}"
    );
    let o = tierkitd(&["--pid", "1", "--policy", "notier", "--fast-limit", "-1G"]);
    assert_eq!(o.status.code(), Some(2));
    let e = one_error_line(&o);
    assert!(e.contains("--fast-limit: `-1G`"), "{e}");
}

#[test]
fn an_absent_target_is_reported_before_the_topology() {
    // Above any pid_max: never a process, on any host (one NUMA node or several).
    let o = tierkitd(&["--pid", "2147483646", "--policy", "notier"]);
    assert_eq!(o.status.code(), Some(1));
    let e = one_error_line(&o);
    assert!(e.contains("2147483646") && !e.contains("topology"), "{e}");
}

#[test]
fn a_bad_dry_run_in_the_file_is_reported_with_the_flag() {
    let p = std::env::temp_dir().join(format!("tierkitd-cli-{}.toml", std::process::id()));
    std::fs::write(&p, "dry-run = \"yes\"\n").unwrap();
    let o = tierkitd(&[
        "--config",
        p.to_str().unwrap(),
        "--dry-run",
        "--pid",
        "1",
        "--policy",
        "notier",
    ]);
    let _ = std::fs::remove_file(&p);
    assert_eq!(o.status.code(), Some(2));
    let e = one_error_line(&o);
    assert!(
        e.contains("dry-run: expected true or false") && e.contains(p.to_str().unwrap()),
        "{e}"
    );
}
