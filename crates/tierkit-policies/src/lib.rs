//! tierkit's policies. Each policy is one file exporting `pub const INFO: PolicyInfo`; adding a
//! policy is that file plus one `mod` line and one line in [`REGISTRY`].
//!
//! A spec is `base[:k=v,...][+layer[:k=v,...]]...`, e.g. `hemem:sample_period=5003`.

use tierkit_core::params::{Params, PolicySpec};
use tierkit_core::policy::Builder;
use tierkit_core::{suggest, Error, Policy, PolicyInfo, Result};

/// The `Policy` memory methods of a layer whose only per-page tables are its base's.
macro_rules! memory_of_base {
    () => {
        /// The base's tables; the layer's own are not per page.
        fn memory_bytes(&self, space: &tierkit_core::PageSpace) -> u64 {
            self.base.memory_bytes(space)
        }

        fn reserve(&mut self, space: &tierkit_core::PageSpace) -> tierkit_core::Result<()> {
            self.base.reserve(space)
        }

        fn allocated_bytes(&self) -> u64 {
            self.base.allocated_bytes()
        }
    };
}

/// The `Policy` memory methods of a policy whose only per-page table is its LRU (`self.t`).
macro_rules! memory_of_lru {
    () => {
        /// Per page: the LRU (list links 8 B and a flags byte; see `Lru::bytes_for`).
        fn memory_bytes(&self, space: &tierkit_core::PageSpace) -> u64 {
            Tiering::bytes_for(space.pages)
        }

        fn reserve(&mut self, space: &tierkit_core::PageSpace) -> tierkit_core::Result<()> {
            self.t.reserve(space.pages)
        }

        fn allocated_bytes(&self) -> u64 {
            self.t.bytes()
        }
    };
}

/// The fault path of a hint-fault policy built on [`lru::Tiering`] (field `t`), with the
/// fields `fault_path` (its parameter) and `on_path` (whether the backend took it up) and a
/// method `fault(&mut self, f, tel, mech, out)` deciding one fault: `Policy::fault_path` and
/// `Policy::on_fault`, which takes the epoch's events so far first (`Tiering::catch_up`), and
/// kswapd's timer (`Policy::next_timer_ns`, `Policy::on_timer`), run with the watermarks of
/// the policy's `kswapd_marks(&self) -> (wake_below, balanced_at)`.
/// Its `step` then calls [`fault_path_step!`].
macro_rules! fault_path_of_tiering {
    () => {
        fn fault_path(&mut self) -> bool {
            self.on_path = self.fault_path;
            self.on_path
        }

        fn on_fault(
            &mut self,
            f: &tierkit_core::HintFault,
            tel: &Telemetry,
            mech: &mut dyn Mechanism,
            out: &mut Vec<Action>,
        ) {
            self.t.catch_up(tel, |_, _| {});
            self.fault(f, tel, mech, out);
        }

        fn next_timer_ns(&self) -> Option<u64> {
            self.t.kswapd_timer_ns().filter(|_| self.on_path)
        }

        fn on_timer(
            &mut self,
            t_ns: u64,
            tel: &Telemetry,
            mech: &mut dyn Mechanism,
            out: &mut Vec<Action>,
        ) {
            let (wake_below, balanced_at) = self.kswapd_marks();
            self.t
                .on_kswapd_timer(tel, mech, out, wake_below, balanced_at, t_ns);
        }
    };
}

/// The start of such a policy's `step`: the rest of the epoch's events, then, off the fault
/// path, each of the epoch's faults in time order.
macro_rules! fault_path_step {
    ($self:ident, $tel:ident, $mech:ident, $out:ident) => {
        $self.t.begin($tel, |_, _| {});
        if !$self.on_path {
            for f in &$tel.hint_faults {
                $self.fault(f, $tel, $mech, $out);
            }
        }
    };
}

pub mod alto;
pub mod colloid;
pub mod common;
pub mod hemem;
pub mod lru;
pub mod memtis;
pub mod nbt;
pub mod nomad;
pub mod notier;
pub mod pact;
pub mod pact_bins;
pub mod pact_index;
pub mod pagelist;
pub mod place;
pub mod soar;
pub mod soar_flows;
pub mod static_;
#[cfg(test)]
mod testbed;
pub mod toggle;
pub mod tpp;
pub mod vulcan;

/// Every policy and layer, in the order `tierkit list policies` shows them.
pub static REGISTRY: &[&PolicyInfo] = &[
    &notier::INFO,
    &hemem::INFO,
    &memtis::INFO,
    &place::INFO,
    &static_::INFO,
    &tpp::INFO,
    &nbt::INFO,
    &nomad::INFO,
    &colloid::INFO,
    &alto::INFO,
    &pact::INFO,
    &toggle::INFO,
    &vulcan::INFO,
    &soar::INFO,
];

/// Look a policy up by name.
pub fn find(name: &str) -> Option<&'static PolicyInfo> {
    REGISTRY.iter().copied().find(|p| p.name == name)
}

fn lookup(name: &str) -> Result<&'static PolicyInfo> {
    find(name).ok_or_else(|| Error::UnknownPolicy {
        name: name.to_string(),
        hint: suggest::hint(name, REGISTRY.iter().map(|p| p.name)),
    })
}

/// Parse and validate a spec without building it (for early error reporting).
pub fn check(spec: &str) -> Result<()> {
    build(spec).map(|_| ())
}

/// Each layer of a spec with its validated parameters.
fn layers(spec: &str) -> Result<Vec<(&'static PolicyInfo, Params)>> {
    let parsed = PolicySpec::parse(spec)?;
    let mut out = Vec::new();
    for layer in &parsed.layers {
        let info = lookup(&layer.name)?;
        let mut raw = layer.args.clone();
        if let Some(pos) = &layer.positional {
            let Some(pname) = info.positional else {
                return Err(Error::BadSpec {
                    spec: spec.to_string(),
                    why: format!(
                        "`{}` takes no bare value; use KEY=VALUE (`{}:{}` is not valid)",
                        info.name, info.name, pos
                    ),
                });
            };
            raw.insert(0, (pname.to_string(), pos.clone()));
        }
        out.push((info, Params::resolve(info.name, info.params, &raw)?));
    }
    Ok(out)
}

/// The objects a spec names (parameters of kind [`tierkit_core::ParamKind::Objects`], such as
/// `place:objects` and `static:hot_object`): (policy, parameter, names), in spec order. A backend
/// that knows its objects before the run checks them with this.
pub fn named_objects(spec: &str) -> Result<Vec<(&'static str, &'static str, Vec<String>)>> {
    let mut out = Vec::new();
    for (info, params) in layers(spec)? {
        for d in info.params {
            if d.kind == tierkit_core::ParamKind::Objects {
                out.push((info.name, d.name, place::object_names(params.str(d.name))));
            }
        }
    }
    Ok(out)
}

/// Build the policy stack a spec names.
pub fn build(spec: &str) -> Result<Box<dyn Policy>> {
    let mut stack: Option<Box<dyn Policy>> = None;
    for (info, params) in layers(spec)? {
        stack = Some(match (&info.build, stack) {
            (Builder::Base(f), None) => f(&params)?,
            (Builder::Base(_), Some(_)) => {
                return Err(Error::BadStack {
                    name: info.name.into(),
                    why: "it is a base policy and can only come first".into(),
                })
            }
            (Builder::Layer(f), Some(base)) => f(base, &params)?,
            (Builder::Layer(_), None) => {
                return Err(Error::BadStack {
                    name: info.name.into(),
                    why: format!(
                        "it is a layer; put a base policy first, e.g. `hemem+{}`",
                        info.name
                    ),
                })
            }
        });
    }
    Ok(stack.expect("a parsed spec has at least one layer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_defaults_valid() {
        let mut names: Vec<_> = REGISTRY.iter().map(|p| p.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len());
        for p in REGISTRY {
            // a parameter listed twice shows twice in `tierkit describe` (nomad's scan_stats did)
            let mut params: Vec<_> = p.params.iter().map(|d| d.name).collect();
            params.sort();
            let n = params.len();
            params.dedup();
            assert_eq!(params.len(), n, "{}: a parameter is listed twice", p.name);
            if matches!(p.build, Builder::Base(_)) {
                build(p.name).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            }
        }
    }

    #[test]
    fn unknown_policy_suggests() {
        let e = build("notiers").err().unwrap();
        assert!(e.to_string().contains("did you mean `notier`"), "{e}");
    }
}
