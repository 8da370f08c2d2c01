//! Run one experiment from the command line without Python (development and profiling):
//! `cargo run --release -p tierkit-sim --example run -- EXPERIMENT POLICY [KEY=VALUE...]`
use tierkit_sim::{load, run};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: run EXPERIMENT POLICY [KEY=VALUE...]");
        std::process::exit(2);
    }
    let exp = match load(&args[0], &args[2..], None) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    match run(&exp, &args[1], &mut |_, _| true) {
        Ok(out) => {
            println!(
                "{}",
                serde_json::to_string_pretty(&out.summary).expect("serializable")
            );
            eprintln!(
                "timing: machine {:.3}s policy {:.3}s reference {:.3}s",
                out.timing.machine_s, out.timing.policy_s, out.timing.reference_s
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
