use thiserror::Error;
use tierkit_core::memory::fmt_bytes;

/// Everything that can go wrong setting up or running a simulation. Every message names the
/// file, key or field and says what was expected.
#[derive(Debug, Error)]
pub enum SimError {
    /// A bad experiment file or override: `where` is "file: key" or similar.
    #[error("{at}: {msg}")]
    Config { at: String, msg: String },
    #[error("{0}")]
    Policy(tierkit_core::Error),
    /// The run's estimated memory is above the limit: refused before anything was allocated.
    #[error(
        "{experiment}: a footprint of {} ({footprint_pages} pages of {}) needs an estimated {} to simulate under `{policy}` ({machine_per_page:.1} B per page for the machine, {policy_per_page:.1} B for the policy), above {}; make the experiment smaller",
        fmt_bytes(*footprint_bytes), fmt_bytes(footprint_bytes / (*footprint_pages).max(1)), fmt_bytes(*estimate), limit
    )]
    TooLarge {
        experiment: String,
        policy: String,
        footprint_pages: u64,
        footprint_bytes: u64,
        machine_per_page: f64,
        policy_per_page: f64,
        /// The estimate, bytes.
        estimate: u64,
        limit: MemoryLimit,
    },
    /// A fallible allocation failed while building or running (the estimate was too low, or
    /// other processes took the memory meanwhile).
    #[error(
        "could not allocate {} for {what}: not enough memory",
        fmt_bytes(*bytes)
    )]
    OutOfMemory { what: String, bytes: u64 },
    #[error("{0}")]
    Capacity(String),
    #[error("{0}")]
    Io(String),
    #[error("interrupted")]
    Interrupted,
}

/// The memory a run may take: most of what the machine has available, or a limit the user
/// gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryLimit {
    /// MemAvailable of /proc/meminfo, bytes: a run may take [`AVAILABLE_SHARE`] of it (the
    /// rest is headroom for the process itself, the allocator and the machine's other work).
    Available(u64),
    /// `--max-memory` (`max_memory` in the Python API), bytes.
    MaxMemory(u64),
}

/// The share of the available memory a run may take, in percent.
pub const AVAILABLE_SHARE: u64 = 90;

impl MemoryLimit {
    /// The bytes a run may take.
    pub fn bytes(&self) -> u64 {
        match *self {
            MemoryLimit::Available(b) => b / 100 * AVAILABLE_SHARE,
            MemoryLimit::MaxMemory(b) => b,
        }
    }
}

impl std::fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            MemoryLimit::Available(b) => write!(
                f,
                "the limit of {} ({AVAILABLE_SHARE}% of the {} of available memory, MemAvailable; --max-memory cannot raise it)",
                fmt_bytes(self.bytes()),
                fmt_bytes(b)
            ),
            MemoryLimit::MaxMemory(b) => write!(f, "the --max-memory limit of {}", fmt_bytes(b)),
        }
    }
}

impl From<tierkit_core::Error> for SimError {
    fn from(e: tierkit_core::Error) -> Self {
        match e {
            tierkit_core::Error::OutOfMemory { what, bytes } => {
                SimError::OutOfMemory { what, bytes }
            }
            e => SimError::Policy(e),
        }
    }
}

impl SimError {
    pub fn config(at: impl Into<String>, msg: impl Into<String>) -> Self {
        SimError::Config {
            at: at.into(),
            msg: msg.into(),
        }
    }
}

pub type Result<T> = std::result::Result<T, SimError>;
