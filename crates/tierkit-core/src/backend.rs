//! The machine side of the loop, written once for every world: a backend produces telemetry,
//! answers a policy's queries ([`Mechanism`]) and carries out its actions. The simulated
//! machine and `tierkitd`'s Linux backend both implement it; [`drive`] is the one step of the
//! observe-decide-act loop they share.

use crate::{Action, Mechanism, Policy, Telemetry};

pub trait Backend: Mechanism {
    type Error;
    /// Advance one epoch (simulate it, or wait for and read it) and fill the telemetry.
    fn observe(&mut self) -> Result<(), Self::Error>;
    /// Move the latest telemetry out (the policy reads it while querying the backend).
    fn take_telemetry(&mut self) -> Telemetry;
    /// Give the telemetry back; the backend clears the per-epoch events it keeps in it.
    fn restore_telemetry(&mut self, tel: Telemetry);
    /// Carry out a policy's actions, draining the vector.
    fn apply(&mut self, actions: &mut Vec<Action>);
}

/// Call the policy's `init` with the backend's current telemetry and apply what it asks.
pub fn init<B: Backend>(policy: &mut dyn Policy, backend: &mut B, actions: &mut Vec<Action>) {
    let tel = backend.take_telemetry();
    policy.init(&tel, backend, actions);
    backend.restore_telemetry(tel);
    backend.apply(actions);
}

/// One observe-decide-act step: the backend observes an epoch, the policy decides, the
/// backend acts.
pub fn drive<B: Backend>(
    policy: &mut dyn Policy,
    backend: &mut B,
    actions: &mut Vec<Action>,
) -> Result<(), B::Error> {
    backend.observe()?;
    decide(policy, backend, actions);
    Ok(())
}

/// The decide-act half of [`drive`], for loops that time the two halves separately.
pub fn decide<B: Backend>(policy: &mut dyn Policy, backend: &mut B, actions: &mut Vec<Action>) {
    let tel = backend.take_telemetry();
    policy.step(&tel, backend, actions);
    backend.restore_telemetry(tel);
    backend.apply(actions);
}
