//! Policy specs (`hemem:sample_period=5003+colloid`) and typed policy parameters.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::suggest;

/// The type of a parameter.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ParamKind {
    Int {
        min: i64,
        max: i64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Bool,
    Str,
    Choice(&'static [&'static str]),
    /// Names of objects (allocation sites), separated by `;`: at least one. A backend that
    /// knows its objects before the run (the simulator) checks each name exists.
    Objects,
}

/// Split an object-name list (`pc;seq`): `;`-separated, trimmed, empty parts and repeats dropped.
pub fn object_names(s: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for n in s.split(';').map(str::trim).filter(|n| !n.is_empty()) {
        if !names.iter().any(|x| x == n) {
            names.push(n.to_string());
        }
    }
    names
}

/// A parameter declared by a policy next to its code: name, type, default, unit, doc.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamDef {
    pub name: &'static str,
    pub kind: ParamKind,
    pub default: &'static str,
    pub unit: &'static str,
    pub doc: &'static str,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl std::fmt::Display for ParamValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ParamValue::Int(v) => write!(f, "{v}"),
            ParamValue::Float(v) => write!(f, "{v}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Str(v) => write!(f, "{v}"),
        }
    }
}

impl ParamKind {
    fn expected(&self) -> String {
        match self {
            ParamKind::Int { min, max } => format!("an integer in [{min}, {max}]"),
            ParamKind::Float { min, max } => format!("a number in [{min}, {max}]"),
            ParamKind::Bool => "true or false".into(),
            ParamKind::Str => "a string".into(),
            ParamKind::Choice(c) => format!("one of {}", c.join(", ")),
            ParamKind::Objects => "object names separated by `;`".into(),
        }
    }

    fn parse(&self, s: &str) -> Option<ParamValue> {
        match *self {
            ParamKind::Int { min, max } => {
                let v: i64 = s.replace('_', "").parse().ok()?;
                (min..=max).contains(&v).then_some(ParamValue::Int(v))
            }
            ParamKind::Float { min, max } => {
                let v: f64 = s.parse().ok()?;
                (v.is_finite() && v >= min && v <= max).then_some(ParamValue::Float(v))
            }
            ParamKind::Bool => match s {
                "true" | "1" | "yes" | "on" => Some(ParamValue::Bool(true)),
                "false" | "0" | "no" | "off" => Some(ParamValue::Bool(false)),
                _ => None,
            },
            ParamKind::Str => (!s.is_empty()).then(|| ParamValue::Str(s.to_string())),
            ParamKind::Choice(c) => c.contains(&s).then(|| ParamValue::Str(s.to_string())),
            ParamKind::Objects => {
                (!object_names(s).is_empty()).then(|| ParamValue::Str(s.to_string()))
            }
        }
    }
}

/// Validated parameters of one policy, defaults filled in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    pub policy: String,
    values: BTreeMap<String, ParamValue>,
}

impl Params {
    /// Check raw `key=value` pairs against the declared parameters and fill in defaults.
    pub fn resolve(policy: &str, defs: &[ParamDef], raw: &[(String, String)]) -> Result<Params> {
        let mut values = BTreeMap::new();
        for d in defs {
            let v = d
                .kind
                .parse(d.default)
                .unwrap_or_else(|| panic!("policy {policy}: bad default for {}", d.name));
            values.insert(d.name.to_string(), v);
        }
        for (k, v) in raw {
            let Some(d) = defs.iter().find(|d| d.name == k) else {
                return Err(Error::UnknownParam {
                    policy: policy.into(),
                    param: k.clone(),
                    hint: suggest::hint(k, defs.iter().map(|d| d.name)),
                    known: if defs.is_empty() {
                        "none".into()
                    } else {
                        defs.iter().map(|d| d.name).collect::<Vec<_>>().join(", ")
                    },
                });
            };
            let parsed = d.kind.parse(v).ok_or_else(|| Error::BadParam {
                policy: policy.into(),
                param: k.clone(),
                expected: d.kind.expected(),
                got: v.clone(),
            })?;
            values.insert(k.clone(), parsed);
        }
        Ok(Params {
            policy: policy.into(),
            values,
        })
    }

    fn get(&self, k: &str) -> &ParamValue {
        self.values
            .get(k)
            .unwrap_or_else(|| panic!("policy {}: parameter {k} is not declared", self.policy))
    }

    pub fn int(&self, k: &str) -> i64 {
        match self.get(k) {
            ParamValue::Int(v) => *v,
            ParamValue::Float(v) => *v as i64,
            other => panic!(
                "policy {}: parameter {k} is {other}, not an integer",
                self.policy
            ),
        }
    }

    pub fn u64(&self, k: &str) -> u64 {
        self.int(k).max(0) as u64
    }

    pub fn float(&self, k: &str) -> f64 {
        match self.get(k) {
            ParamValue::Float(v) => *v,
            ParamValue::Int(v) => *v as f64,
            other => panic!(
                "policy {}: parameter {k} is {other}, not a number",
                self.policy
            ),
        }
    }

    pub fn bool(&self, k: &str) -> bool {
        match self.get(k) {
            ParamValue::Bool(v) => *v,
            other => panic!(
                "policy {}: parameter {k} is {other}, not a bool",
                self.policy
            ),
        }
    }

    pub fn str(&self, k: &str) -> &str {
        match self.get(k) {
            ParamValue::Str(v) => v,
            other => panic!(
                "policy {}: parameter {k} is {other}, not a string",
                self.policy
            ),
        }
    }

    /// All values, for reports (`name=value`).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ParamValue)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// One `name:args` element of a spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecLayer {
    pub name: String,
    /// A bare value (`place:pc`), set on the policy's positional parameter.
    pub positional: Option<String>,
    pub args: Vec<(String, String)>,
}

/// A parsed policy spec: a base and the layers stacked on it, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicySpec {
    pub layers: Vec<SpecLayer>,
}

fn valid_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl PolicySpec {
    /// Grammar: `layer ('+' layer)*`, `layer = name (':' arg (',' arg)*)?`,
    /// `arg = key '=' value | value` (a bare value only first).
    pub fn parse(spec: &str) -> Result<PolicySpec> {
        let bad = |why: String| Error::BadSpec {
            spec: spec.to_string(),
            why,
        };
        let spec_t = spec.trim();
        if spec_t.is_empty() {
            return Err(bad(
                "empty spec; expected NAME[:KEY=VALUE,...][+LAYER...]".into()
            ));
        }
        let mut layers = Vec::new();
        for part in spec_t.split('+') {
            let (name, rest) = match part.split_once(':') {
                Some((n, r)) => (n.trim(), Some(r)),
                None => (part.trim(), None),
            };
            if !valid_ident(name) {
                return Err(bad(format!(
                    "`{name}` is not a policy name (letters, digits, _ and - only)"
                )));
            }
            let mut layer = SpecLayer {
                name: name.to_string(),
                positional: None,
                args: Vec::new(),
            };
            if let Some(rest) = rest {
                if rest.trim().is_empty() {
                    return Err(bad(format!("`{name}:` has no parameters after the colon")));
                }
                for (i, arg) in rest.split(',').enumerate() {
                    let arg = arg.trim();
                    match arg.split_once('=') {
                        Some((k, v)) => {
                            let (k, v) = (k.trim(), v.trim());
                            if !valid_ident(k) || v.is_empty() {
                                return Err(bad(format!("`{arg}` is not KEY=VALUE")));
                            }
                            if layer.args.iter().any(|(kk, _)| kk == k) {
                                return Err(bad(format!("`{k}` is given twice for `{name}`")));
                            }
                            layer.args.push((k.to_string(), v.to_string()));
                        }
                        None if i == 0 && !arg.is_empty() => layer.positional = Some(arg.to_string()),
                        None => return Err(bad(format!("`{arg}` is not KEY=VALUE (only the first argument may be a bare value)"))),
                    }
                }
            }
            if layers.iter().any(|l: &SpecLayer| l.name == layer.name) {
                // Two instances of one policy would publish the same stats keys and time-series
                // columns, the second silently overwriting the first.
                return Err(bad(format!(
                    "`{}` appears twice; each policy or layer may be stacked once",
                    layer.name
                )));
            }
            layers.push(layer);
        }
        Ok(PolicySpec { layers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFS: &[ParamDef] = &[
        ParamDef {
            name: "sample_period",
            kind: ParamKind::Int {
                min: 1,
                max: 1 << 30,
            },
            default: "19997",
            unit: "accesses",
            doc: "",
        },
        ParamDef {
            name: "delta",
            kind: ParamKind::Float { min: 0.0, max: 1.0 },
            default: "0.05",
            unit: "",
            doc: "",
        },
        ParamDef {
            name: "mode",
            kind: ParamKind::Choice(&["a", "b"]),
            default: "a",
            unit: "",
            doc: "",
        },
    ];

    #[test]
    fn parses_stacks_and_positionals() {
        let s = PolicySpec::parse("hemem:sample_period=5003+colloid:delta=0.1").unwrap();
        assert_eq!(s.layers.len(), 2);
        assert_eq!(
            s.layers[0].args,
            vec![("sample_period".to_string(), "5003".to_string())]
        );
        let p = PolicySpec::parse("place:pc").unwrap();
        assert_eq!(p.layers[0].positional.as_deref(), Some("pc"));
    }

    #[test]
    fn rejects_malformed_specs() {
        for bad in [
            "",
            "hemem:",
            "hemem:x=",
            "a b",
            "hemem:a=1,b",
            "hemem:a=1,a=2",
            "+colloid",
            "tpp+alto+alto",
            "tpp+alto:auto=true+colloid+alto",
        ] {
            assert!(PolicySpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resolves_defaults_and_rejects_bad_values() {
        let p = Params::resolve("hemem", DEFS, &[]).unwrap();
        assert_eq!(p.int("sample_period"), 19997);
        let p = Params::resolve("hemem", DEFS, &[("delta".into(), "0.2".into())]).unwrap();
        assert_eq!(p.float("delta"), 0.2);
        let e = Params::resolve("hemem", DEFS, &[("sample_perod".into(), "1".into())]).unwrap_err();
        assert!(
            e.to_string().contains("did you mean `sample_period`"),
            "{e}"
        );
        assert!(Params::resolve("hemem", DEFS, &[("delta".into(), "2".into())]).is_err());
        assert!(Params::resolve("hemem", DEFS, &[("mode".into(), "c".into())]).is_err());
    }
}
