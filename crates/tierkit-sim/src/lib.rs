//! tierkit-sim: the simulated tiered-memory machine (design.md section 2).
//!
//! An epoch-level model: tiers with loaded-latency curves, closed-loop threads with
//! memory-level parallelism, the fixed point between them, counters synthesized by Little's
//! law, exact Poisson sampling, hint faults, access bits and migration costs. Policies from
//! `tierkit-policies` see only [`tierkit_core::Telemetry`].

pub mod calibrate;
mod clear_times;
pub mod config;
pub mod curve;
pub mod dist;
pub mod engine;
pub mod error;
pub mod machine;
pub mod memory;
mod minqueue;
pub mod numa_scan;
pub mod pact_eval;
pub mod platform;
pub mod spec;
pub mod trace;
pub mod workloads;

pub use config::{load, load_str};
pub use engine::{run, run_with, RunOptions, RunOutput, Series, Summary};
pub use error::{MemoryLimit, Result, SimError};
pub use spec::Experiment;
