//! Print a platform's calibration (development helper; the user-facing command is
//! `tierkit calibrate`): `cargo run --release -p tierkit-sim --example calibrate -- PLATFORM`
fn main() {
    for name in std::env::args().skip(1) {
        match tierkit_sim::calibrate::calibrate(&name) {
            Ok((c, pts)) => {
                println!("{name}: {c:?}");
                for p in pts {
                    println!(
                        "  m={} z={} AOL={:.2} P={:.4} S={:.4} K={:.4}",
                        p.mlp,
                        p.compute_ns,
                        p.aol_cycles,
                        p.p,
                        p.slowdown,
                        p.k()
                    );
                }
            }
            Err(e) => eprintln!("error: {e}"),
        }
    }
}
