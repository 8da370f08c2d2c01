use thiserror::Error;

/// Errors of the policy interface: bad specs and parameters, and failed allocations.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    #[error("unknown policy `{name}`{hint}; `tierkit list policies` shows the available ones")]
    UnknownPolicy { name: String, hint: String },
    #[error("policy `{policy}`: unknown parameter `{param}`{hint}; parameters: {known}")]
    UnknownParam {
        policy: String,
        param: String,
        hint: String,
        known: String,
    },
    #[error("policy `{policy}`: parameter `{param}`: expected {expected}, got `{got}`")]
    BadParam {
        policy: String,
        param: String,
        expected: String,
        got: String,
    },
    #[error(
        "policy `{policy}`: parameter `{param}` names object `{object}`, which no process of this experiment has{hint}; objects: {known}"
    )]
    UnknownObject {
        policy: String,
        param: String,
        object: String,
        hint: String,
        known: String,
    },
    #[error("malformed policy spec `{spec}`: {why}")]
    BadSpec { spec: String, why: String },
    #[error("policy `{name}` cannot be stacked here: {why}")]
    BadStack { name: String, why: String },
    /// A fallible allocation failed: `bytes` for `what`.
    #[error(
        "could not allocate {} for {what}: not enough memory",
        crate::memory::fmt_bytes(*bytes)
    )]
    OutOfMemory { what: String, bytes: u64 },
    /// A per-page table indexes pages in fewer bits than the page space needs.
    #[error(
        "{what} index pages in 32 bits: this run has {pages} pages, at most {max} fit; use larger pages or a smaller footprint"
    )]
    TooManyPages { what: String, pages: u64, max: u64 },
}

pub type Result<T> = std::result::Result<T, Error>;
