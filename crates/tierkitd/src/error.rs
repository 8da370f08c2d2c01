//! tierkitd's error type: every failure names what it was doing and on what.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot parse {what}: `{got}`")]
    Parse {
        path: PathBuf,
        what: &'static str,
        got: String,
    },
    #[error("{field}: {why}")]
    Config { field: String, why: String },
    #[error("topology: {0}")]
    Topology(String),
    #[error("{syscall} failed: {source}")]
    Sys {
        syscall: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("telemetry: {0}")]
    Telemetry(String),
    #[error("policy `{policy}` cannot run on this host: {why}")]
    Unsupported { policy: String, why: String },
    #[error("permission: {0}")]
    Permission(String),
    #[error("stopped by a signal")]
    Stopped,
    #[error(transparent)]
    Policy(#[from] tierkit_core::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

/// Attach a path to an I/O error.
pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}

/// Read a whole sysfs/procfs file as text.
pub fn read_to_string(path: impl AsRef<std::path::Path>) -> Result<String> {
    let p = path.as_ref();
    std::fs::read_to_string(p).map_err(io(p))
}
