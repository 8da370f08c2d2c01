//! `tierkitd`: see `tierkitd --help` and docs/operator-guide.md.

use clap::Parser;
use tierkitd::{config, daemon, Error};

fn main() {
    let cli = config::Cli::parse();
    let cfg = match config::resolve(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tierkitd: error: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = daemon::run(cfg) {
        eprintln!("tierkitd: error: {e}");
        let code = match e {
            Error::Config { .. } | Error::Policy(_) => 2,
            _ => 1,
        };
        std::process::exit(code);
    }
}
