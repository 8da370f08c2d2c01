//! Issue 19's reproducers that used to crash a run: each now runs or fails with a one-line error.

use std::path::PathBuf;

use tierkit_sim::{load, load_str, run};

fn columns_have_one_length(out: &tierkit_sim::RunOutput) {
    let rows = out.series.rows();
    assert!(rows > 0);
    for (name, c) in &out.series.columns {
        assert_eq!(c.len(), rows, "column {name}");
    }
}

#[test]
fn hot_set_below_one_page_is_an_error_not_a_panic() {
    let e = load("gups-hotset", &["hot_set_gb=0".into()], None);
    let m = e.unwrap_err().to_string();
    assert!(m.contains("hot_set_gb") && !m.contains('\n'), "{m}");
}

#[test]
fn the_same_trace_listed_many_times_runs_with_unique_names() {
    let t = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces/pchase.tkt");
    let t = format!("{:?}", t.display().to_string());
    let text = format!(
        "workload = \"trace\"\ntrace = [{t}, {t}, {t}]\nduration_s = 0.05\nfast_tier_gb = 1\n"
    );
    let e = load_str("traces.toml", &text, &[], None).unwrap();
    let names: Vec<&str> = e.processes.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["pchase", "pchase#2", "pchase#3"]);
    let out = run(&e, "notier", &mut |_, _| true).unwrap();
    columns_have_one_length(&out);
    assert!(out.series.get("throughput_ops_per_s.pchase#3").is_some());
    assert_eq!(out.summary.processes.len(), 3);
}

#[test]
fn a_region_at_the_very_end_of_an_object_runs() {
    let text = "workload = \"custom\"\nduration_s = 0.02\n[[process]]\nname = \"a\"\n\
                [[process.object]]\nname = \"buf\"\nsize_bytes = 12288\n[[process.thread]]\n\
                [[process.thread.phase]]\n[[process.thread.phase.access]]\nobject = \"buf\"\n\
                start_frac = 0.9999999999999999\nlen_frac = 1e-9\n";
    // the largest number below 1: the region is the object's last page
    let e = load_str("end.toml", text, &[], None).unwrap();
    columns_have_one_length(&run(&e, "notier", &mut |_, _| true).unwrap());
    let bad = text
        .replace("0.9999999999999999", "1.0")
        .replace("len_frac = 1e-9\n", "");
    let m = load_str("end.toml", &bad, &[], None)
        .unwrap_err()
        .to_string();
    assert!(m.contains("start_frac") && m.contains("[0, 1)"), "{m}");
}

#[test]
fn policies_naming_objects_the_experiment_lacks_are_errors() {
    let e = load("gups-hotset", &["duration_s=0.02".into()], None).unwrap();
    for (spec, param, name) in [
        ("place:objects=hto", "objects", "hto"),
        ("place:hot;nope", "objects", "nope"),
        ("static:hot_object=cold", "hot_object", "cold"),
        ("static", "", ""),
    ] {
        let r = run(&e, spec, &mut |_, _| true);
        if spec == "static" {
            r.unwrap(); // gups-hotset has "hot"
            continue;
        }
        let m = r.err().unwrap().to_string();
        assert!(
            m.contains(&format!("parameter `{param}` names object `{name}`"))
                && m.contains("cold_lo")
                && !m.contains('\n'),
            "{m}"
        );
    }
    let m = run(&e, "place:objects=hto", &mut |_, _| true)
        .err()
        .unwrap()
        .to_string();
    assert!(m.contains("did you mean `hot`"), "{m}");
    let m = tierkit_policies::build("place:objects=")
        .err()
        .unwrap()
        .to_string();
    assert!(m.contains("not KEY=VALUE"), "{m}");
    for spec in ["place:objects=;", "static:hot_object= ; "] {
        let m = tierkit_policies::build(spec).err().unwrap().to_string();
        assert!(m.contains("object names separated by `;`"), "{spec}: {m}");
    }
    let m = run(&e, "soar:r_min=0.9,r_max=0.1", &mut |_, _| true)
        .err()
        .unwrap()
        .to_string();
    assert!(m.contains("`r_max`") && m.contains("r_min (0.9)"), "{m}");
}

#[test]
fn every_builtin_passes_the_checks_with_its_defaults() {
    for w in tierkit_sim::workloads::REGISTRY {
        let e = load(w.name, &[], None).unwrap_or_else(|e| panic!("{}: {e}", w.name));
        let mut names: Vec<&str> = e.processes.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), e.processes.len(), "{}", w.name);
    }
}
