//! The e500 machine profile (`profiles/e500.toml`): clock, the cycles per guest instruction
//! the recorded execution costs on bare hardware, the cycles of each exit reason, and named
//! costs the hypervisor models look up (`[hv]`, `[pv]`, `[labt]`). Every number in the file
//! has its source, or is marked an assumption, beside it.
//!
//! Unlike the x86 [`Profile`](super::Profile) the named sections are open tables: a model asks
//! for `section.key` with [`E500Costs::cost`] when it is built, and a missing key is an error
//! naming it then, so a new model's costs are new lines in the profile, not new code here.

use crate::cost::assumptions::{self, Assumptions};
use crate::hv::e500::exits::E500Exit;
use std::collections::BTreeMap;

/// The e500 profiles built into the binary, by name.
pub const BUILTIN: &[(&str, &str)] = &[("e500", include_str!("../../../../profiles/e500.toml"))];

/// Why an e500 profile is unusable. One line naming the profile, the key and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum E500ProfileError {
    /// No built-in e500 profile has this name.
    #[error("unknown e500 profile '{0}'; built-in: e500 (or give a path to a .toml file)")]
    Unknown(String),
    /// The file cannot be read.
    #[error("cannot read e500 profile {0}: {1}")]
    Read(String, String),
    /// Not TOML, or a key is missing, of the wrong type or out of bounds.
    #[error("e500 profile {origin}: {message}")]
    Invalid {
        /// File path or built-in name.
        origin: String,
        /// What is wrong.
        message: String,
    },
    /// A model asked for a cost the profile does not have.
    #[error("e500 profile '{profile}' has no cost '{key}' (add it to its [{section}] table)")]
    Missing {
        /// The profile's name.
        profile: String,
        /// `section.key`.
        key: String,
        /// The section.
        section: String,
    },
}

/// A validated e500 profile.
#[derive(Clone, Debug, PartialEq)]
pub struct E500Costs {
    /// `[machine] name`.
    pub name: String,
    /// Core clock in MHz (`[machine] frequency_mhz`).
    pub frequency_mhz: f64,
    /// Cycles per instruction of the guest's own code on bare hardware (`[core] cpi`).
    pub cpi: f64,
    /// Cycles of one exit, by reason (`[exits]`, keyed by [`E500Exit::name`]).
    pub exit_cycles: [u64; E500Exit::COUNT],
    /// Every other integer cost, as `section.key`.
    pub named: BTreeMap<String, u64>,
    /// The values that are assumptions, with their plausible ranges
    /// ([`assumptions`]).
    pub assumptions: Assumptions,
    /// FNV-1a 64 of the profile's text, comments included (`fnv1a64:` and 16 hex digits).
    pub fingerprint: String,
}

impl E500Costs {
    /// A built-in profile by name, or a file path.
    pub fn load(name_or_path: &str) -> Result<Self, E500ProfileError> {
        if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Self::from_toml(text, &format!("'{name_or_path}'"));
        }
        if name_or_path.ends_with(".toml") || name_or_path.contains('/') {
            let text = std::fs::read_to_string(name_or_path)
                .map_err(|e| E500ProfileError::Read(name_or_path.into(), e.to_string()))?;
            return Self::from_toml(&text, name_or_path);
        }
        Err(E500ProfileError::Unknown(name_or_path.into()))
    }

    /// The default built-in profile.
    pub fn builtin() -> Self {
        Self::from_toml(BUILTIN[0].1, "'e500'").expect("the built-in e500 profile is valid")
    }

    /// Parses and validates a profile's text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self, E500ProfileError> {
        let bad = |message: String| E500ProfileError::Invalid {
            origin: origin.to_string(),
            message,
        };
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| bad(e.message().to_string()))?;
        let section = |name: &str| -> Result<&toml::Table, E500ProfileError> {
            table
                .get(name)
                .and_then(|v| v.as_table())
                .ok_or_else(|| bad(format!("missing table [{name}]")))
        };
        let float = |sec: &str, key: &str, lo: f64, hi: f64| -> Result<f64, E500ProfileError> {
            let v = section(sec)?
                .get(key)
                .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
                .ok_or_else(|| bad(format!("missing number {sec}.{key}")))?;
            if !(lo..=hi).contains(&v) {
                return Err(bad(format!("{sec}.{key} = {v} is outside {lo}..={hi}")));
            }
            Ok(v)
        };
        let name = section("machine")?
            .get("name")
            .and_then(|v| v.as_str())
            .ok_or_else(|| bad("missing string machine.name".into()))?
            .to_string();
        let frequency_mhz = float("machine", "frequency_mhz", 1.0, 10_000.0)?;
        let cpi = float("core", "cpi", 0.1, 100.0)?;
        let exits = section("exits")?;
        let mut exit_cycles = [0; E500Exit::COUNT];
        for r in E500Exit::ALL {
            exit_cycles[r as usize] = int_in(exits, "exits", r.name(), &bad)?;
        }
        if let Some(k) = exits.keys().find(|k| E500Exit::from_name(k).is_none()) {
            return Err(bad(format!("unknown exit reason exits.{k}")));
        }
        let mut named = BTreeMap::new();
        for (sec, v) in &table {
            if matches!(
                sec.as_str(),
                "machine" | "core" | "exits" | assumptions::SECTION
            ) {
                continue;
            }
            let t = v
                .as_table()
                .ok_or_else(|| bad(format!("{sec} must be a table")))?;
            for k in t.keys() {
                named.insert(format!("{sec}.{k}"), int_in(t, sec, k, &bad)?);
            }
        }
        let assumptions: Assumptions = match table.get(assumptions::SECTION) {
            Some(v) => v
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| bad(format!("[{}]: {e}", assumptions::SECTION)))?,
            None => Assumptions::new(),
        };
        assumptions::check(&assumptions, &table, true).map_err(bad)?;
        let fnv = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
        Ok(E500Costs {
            name,
            frequency_mhz,
            cpi,
            exit_cycles,
            named,
            assumptions,
            fingerprint: format!("fnv1a64:{fnv:016x}"),
        })
    }

    /// The cycles of one exit for `reason`.
    pub fn exit(&self, reason: E500Exit) -> u64 {
        self.exit_cycles[reason as usize]
    }

    /// The named cost `section.key`, or an error naming it.
    pub fn cost(&self, key: &str) -> Result<u64, E500ProfileError> {
        self.named
            .get(key)
            .copied()
            .ok_or_else(|| E500ProfileError::Missing {
                profile: self.name.clone(),
                key: key.to_string(),
                section: key.split('.').next().unwrap_or(key).to_string(),
            })
    }

    /// Seconds for `cycles` at the profile's clock.
    pub fn seconds(&self, cycles: f64) -> f64 {
        cycles / (self.frequency_mhz * 1e6)
    }
}

/// An integer cost in 0..=10^9 cycles.
fn int_in(
    t: &toml::Table,
    sec: &str,
    key: &str,
    bad: &dyn Fn(String) -> E500ProfileError,
) -> Result<u64, E500ProfileError> {
    let v = t
        .get(key)
        .ok_or_else(|| bad(format!("missing {sec}.{key}")))?
        .as_integer()
        .ok_or_else(|| bad(format!("{sec}.{key} must be an integer number of cycles")))?;
    if !(0..=1_000_000_000).contains(&v) {
        return Err(bad(format!("{sec}.{key} = {v} is outside 0..=1000000000")));
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_loads_and_names_missing_keys() {
        let c = E500Costs::builtin();
        assert!(c.exit(E500Exit::Mfmsr) > 0);
        let err = c.cost("labt.no_such_cost").unwrap_err().to_string();
        assert!(
            err.contains("labt.no_such_cost") && err.contains("[labt]"),
            "{err}"
        );
    }

    #[test]
    fn rejects_unknown_exit_and_bad_values() {
        let base = BUILTIN[0].1;
        let unknown = format!("{base}\n[extra]\nx = -1\n");
        assert!(E500Costs::from_toml(&unknown, "t").is_err());
        let renamed = base.replace("mfmsr =", "mfmsrx =");
        let err = E500Costs::from_toml(&renamed, "t").unwrap_err().to_string();
        assert!(err.contains("exits.mfmsr"), "{err}");
    }
}
