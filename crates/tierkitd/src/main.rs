//! `tierkitd`: see `tierkitd --help` and docs/operator-guide.md.

use clap::Parser;
use tierkitd::{config, daemon, log, Error};

fn main() {
    let cli = match config::Cli::try_parse() {
        Ok(c) => c,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            eprintln!("tierkitd: error: {}", config::clap_error_line(&e));
            std::process::exit(2);
        }
    };
    let cfg = match config::resolve(cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tierkitd: error: {e}");
            std::process::exit(2);
        }
    };
    log::init(cfg.log_format, &cfg.log_filter);
    if let Err(e) = daemon::run(cfg) {
        eprintln!("tierkitd: error: {e}");
        let code = match e {
            Error::Config { .. } | Error::Policy(_) => 2,
            _ => 1,
        };
        std::process::exit(code);
    }
}
