//! tierkit-core: the contract between tiered-memory policies and the machines they run on.
//!
//! A [`Policy`] reads a [`Telemetry`] snapshot once per epoch and pushes [`Action`]s; the same
//! policy code runs on the simulated machine (`tierkit-sim`) and on real Linux (`tierkitd`).
//! Nothing in this crate knows about the simulator's ground truth.

pub mod action;
pub mod backend;
pub mod error;
pub mod events;
pub mod memory;
pub mod params;
pub mod policy;
pub mod rng;
pub mod suggest;
pub mod telemetry;
pub mod testing;

pub use action::{Action, MigrateMode, NumaScan, SampleFilter, ScanTiers};
pub use backend::Backend;
pub use error::{Error, Result};
pub use events::PageEvents;
pub use memory::PageSpace;
pub use params::{ParamDef, ParamKind, ParamValue, Params, PolicySpec, SpecLayer};
pub use policy::{AccessTracker, Layer, Mechanism, Policy, PolicyInfo, TelemetryNeeds};
pub use rng::Rng;
pub use telemetry::*;

/// A page of a target, at the machine's page granularity. Page ids are small dense integers
/// assigned by the backend (the simulator numbers pages globally; the Linux backend keeps its own
/// table from (pid, virtual page) to id), so policies may index vectors by them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageId(pub u64);

/// Index of a memory tier; 0 is the fast (default) tier, higher numbers are slower tiers.
pub type TierId = u8;
/// The fast tier (local DRAM).
pub const FAST: TierId = 0;
/// The slow tier (CXL or remote-socket memory).
pub const SLOW: TierId = 1;

/// A process (tenant) handled by the policy. In the simulator this is the process index.
pub type Pid = u32;
/// A thread of a process.
pub type Tid = u32;
