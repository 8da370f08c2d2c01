//! NoTier: first-touch allocation, no migration (the baseline of Soar/Alto section 6 and PACT).

use tierkit_core::policy::Builder;
use tierkit_core::{Action, Mechanism, Policy, PolicyInfo, Telemetry, TelemetryNeeds};

pub const INFO: PolicyInfo = PolicyInfo {
    name: "notier",
    description: "first touch: pages stay where they were first allocated; no migration",
    source: "Soar/Alto §6 (NoTier), PACT §5",
    params: &[],
    positional: None,
    build: Builder::Base(|_| Ok(Box::new(NoTier))),
};

pub struct NoTier;

impl Policy for NoTier {
    fn name(&self) -> String {
        "notier".into()
    }
    fn needs(&self) -> TelemetryNeeds {
        TelemetryNeeds::default()
    }
    fn step(&mut self, _tel: &Telemetry, _mech: &mut dyn Mechanism, _out: &mut Vec<Action>) {}
}
