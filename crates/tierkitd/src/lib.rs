//! tierkitd: tierkit's policies on a real Linux host.
//!
//! - [`topology`]: nodes, CPUs, memory, distances and memory tiers from sysfs; fast/slow choice.
//! - [`mech`]: the syscalls (`move_pages`, `mbind`, `set_mempolicy`) and `/proc/PID/maps`.
//! - [`scan`], [`pages`]: present pages per target and the dense page-id table.
//! - [`source`]: telemetry sources (PEBS, DAMON, soft-dirty; uncore CHA counters).
//! - [`linux`]: the [`tierkit_core::Backend`] implementation.
//! - [`select`]: which source serves a policy's needs; rights checks.
//! - [`kernel`]: kernel-tiering mode (`--policy nbt`): the kernel's own tiering knobs, set and
//!   restored (state file), and its vmstat counters.
//! - [`layers`]: `nbt+alto` and `nbt+colloid`, regulating the kernel's tiering through its knobs.
//! - [`metrics`], [`log`], [`config`], [`daemon`]: the daemon around it.

pub mod config;
pub mod daemon;
pub mod error;
pub mod kernel;
pub mod layers;
pub mod linux;
pub mod log;
pub mod mech;
pub mod metrics;
pub mod pages;
pub mod scan;
pub mod select;
pub mod source;
pub mod topology;

pub use error::{Error, Result};
