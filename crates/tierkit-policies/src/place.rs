//! Place: bind named objects (allocation sites) to the fast tier and let everything else fall by
//! first touch, the static allocation placement that Soar (OSDI '25, "Tiered Memory Management
//! Beyond Hotness" §4) applies once it has ranked objects, here with the objects named by hand.
//!
//! At `init` the policy emits `BindObject { pid, object, tier: FAST }` for every process that has
//! an object of each listed name; the backend then allocates those objects' pages in the fast tier
//! first (spilling to the slow tier when it is full), and every other page by first touch. The
//! policy never migrates.
//!
//! The object list is one parameter, `objects`, and the positional one: `place:pc` binds `pc`;
//! `place:objects=pc;seq` (or `place:pc;seq`) binds `pc` and `seq`. The separator is `;` because
//! the spec grammar already uses `+` (between layers), `,` (between parameters), `:` and `=`.
//!
//! A name no process has cannot be rejected when the spec is built (objects are only known when
//! the run starts). The simulator knows every object of an experiment before it runs and rejects
//! such a name then ([`crate::named_objects`]); on a live host (tierkitd) it binds nothing, and it
//! is reported: `stats()` gives `unbound_objects`, the number of listed names that matched no
//! object, and [`Place::unbound`] names them. An object of
//! a listed name that first appears in a later epoch's telemetry (a process that starts later) is
//! bound when it appears.

use std::collections::BTreeSet;

use tierkit_core::params::{ParamDef, ParamKind, Params};
use tierkit_core::policy::Builder;
use tierkit_core::{Action, Mechanism, Pid, Policy, PolicyInfo, Telemetry, TelemetryNeeds, FAST};

use crate::common::spec_name;

const PARAMS: &[ParamDef] = &[ParamDef {
    name: "objects",
    kind: ParamKind::Objects,
    default: "hot",
    unit: "",
    doc: "Names of the objects to allocate in the fast tier, separated by `;` (e.g. `pc;seq`).",
}];

pub const INFO: PolicyInfo = PolicyInfo {
    name: "place",
    description: "bind the named objects to the fast tier at start; all other pages by first touch; no migration",
    source: "Soar OSDI'25 §4 (object placement), with the ranking replaced by a list of names",
    params: PARAMS,
    positional: Some("objects"),
    build: Builder::Base(|p| Ok(Box::new(Place::new(p)))),
};

/// Split an `objects` value into names: `;`-separated, trimmed, empty parts and repeats dropped.
pub use tierkit_core::params::object_names;

pub struct Place {
    spec: String,
    names: Vec<String>,
    /// (pid, index in `names`) pairs bound so far.
    bound: BTreeSet<(Pid, usize)>,
    /// Whether each listed name has matched at least one object.
    matched: Vec<bool>,
}

impl Place {
    pub fn new(p: &Params) -> Self {
        let names = object_names(p.str("objects"));
        let matched = vec![false; names.len()];
        Place {
            spec: spec_name(INFO.name, PARAMS, p),
            names,
            bound: BTreeSet::new(),
            matched,
        }
    }

    /// Listed names that no process's object has matched (yet).
    pub fn unbound(&self) -> Vec<&str> {
        self.names
            .iter()
            .zip(&self.matched)
            .filter(|(_, &m)| !m)
            .map(|(n, _)| n.as_str())
            .collect()
    }

    fn bind(&mut self, tel: &Telemetry, out: &mut Vec<Action>) {
        for o in &tel.objects {
            let Some(i) = self.names.iter().position(|n| *n == o.name) else {
                continue;
            };
            self.matched[i] = true;
            if self.bound.insert((o.pid, i)) {
                out.push(Action::BindObject {
                    pid: o.pid,
                    object: o.name.clone(),
                    tier: FAST,
                });
            }
        }
    }
}

impl Policy for Place {
    fn name(&self) -> String {
        self.spec.clone()
    }

    fn needs(&self) -> TelemetryNeeds {
        TelemetryNeeds::default()
    }

    fn init(&mut self, tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        self.bind(tel, out);
    }

    fn step(&mut self, tel: &Telemetry, _mech: &mut dyn Mechanism, out: &mut Vec<Action>) {
        // objects of processes that start later
        if !tel.objects.is_empty() {
            self.bind(tel, out);
        }
    }

    fn stats(&self) -> Vec<(String, f64)> {
        vec![
            ("named_objects".to_string(), self.names.len() as f64),
            ("bound_objects".to_string(), self.bound.len() as f64),
            ("unbound_objects".to_string(), self.unbound().len() as f64),
            ("migrations_issued".to_string(), 0.0),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testbed::Machine;
    use tierkit_core::telemetry::ObjectInfo;
    use tierkit_core::PageId;

    fn object(pid: Pid, name: &str, first: u64, pages: u64) -> ObjectInfo {
        ObjectInfo {
            pid,
            name: name.into(),
            first_page: PageId(first),
            pages,
            live: true,
        }
    }

    fn stat(p: &dyn Policy, k: &str) -> f64 {
        p.stats().into_iter().find(|(n, _)| n == k).unwrap().1
    }

    #[test]
    fn parses_the_object_list() {
        assert_eq!(object_names("pc; seq;;pc"), vec!["pc", "seq"]);
        let p = crate::build("place:pc;seq").unwrap();
        assert_eq!(p.name(), "place:objects=pc;seq");
        assert_eq!(
            crate::build("place:objects=a;b").unwrap().name(),
            "place:objects=a;b"
        );
        assert_eq!(crate::build("place").unwrap().name(), "place");
    }

    #[test]
    fn binds_the_named_objects_of_every_process() {
        let mut m = Machine::new(&[100, 100]);
        m.objects = vec![
            object(0, "pc", 0, 10),
            object(0, "seq", 10, 50),
            object(1, "pc", 60, 10),
            object(1, "other", 70, 5),
        ];
        let mut p = crate::build("place:pc;seq;missing").unwrap();
        let out = m.init(p.as_mut());
        assert_eq!(
            m.bindings,
            vec![
                (0, "pc".to_string(), FAST),
                (0, "seq".to_string(), FAST),
                (1, "pc".to_string(), FAST)
            ]
        );
        assert_eq!(out.len(), 3);
        assert_eq!(stat(p.as_ref(), "bound_objects"), 3.0);
        assert_eq!(stat(p.as_ref(), "unbound_objects"), 1.0);
        // no migration, no rebinding afterwards
        assert!(m.run_for(p.as_mut(), vec![], 5).is_empty());
        assert_eq!(p.needs(), TelemetryNeeds::default());
    }

    #[test]
    fn binds_objects_that_appear_later_and_reports_names_never_seen() {
        let mut m = Machine::new(&[100, 100]);
        m.objects = vec![object(0, "pc", 0, 10)];
        let mut p = Place::new(
            &Params::resolve("place", PARAMS, &[("objects".into(), "pc;late".into())]).unwrap(),
        );
        m.init(&mut p);
        assert_eq!(p.unbound(), vec!["late"]);
        m.objects.push(object(3, "late", 20, 4));
        let out = m.run_for(&mut p, vec![], 1);
        assert_eq!(
            out,
            vec![Action::BindObject {
                pid: 3,
                object: "late".into(),
                tier: FAST
            }]
        );
        assert!(p.unbound().is_empty());
        assert!(m.run_for(&mut p, vec![], 3).is_empty());
    }
}
