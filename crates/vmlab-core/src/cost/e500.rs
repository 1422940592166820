//! The e500 machine profile (`profiles/e500.toml`): clock, the cycles per guest instruction
//! the recorded execution costs on bare hardware, the cycles of an exit (the round trip every
//! exit pays, `[exit]`, by component, plus each reason's own work, `[exits]`), and named costs
//! the hypervisor models look up (`[hv]`, `[pv]`, `[labt]`). Every number in the file has its
//! source, or is marked an assumption, beside it.
//!
//! The models count (exits by reason, units of [`E500Work`], instructions they add); this file
//! prices the counts ([`E500Costs::added_cycles`], [`E500Costs::seconds_of`]), so a saved
//! replay's counts can be priced again under changed costs without replaying. Two keys are
//! sizes rather than prices and change what the models do ([`E500Costs::host`]): those need
//! a replay ([`CHANGE_COUNTS`]).

use crate::cost::assumptions::{self, Assumptions};
use crate::hv::e500::exits::E500Exit;
use crate::hv::e500::kvm::HostConfig;
use crate::hv::e500::model::ModelCounters;
use crate::hv::e500::work::E500Work;
use crate::hw::e500::PageSize;
use std::collections::BTreeMap;

/// The profile keys that are sizes the models act on, not prices: a change to one changes the
/// counts, so it needs a replay rather than a re-pricing.
pub const CHANGE_COUNTS: &[&str] = &[
    "hv.host_tlb1_reserved",
    "hv.guest_ram_mib",
    "hv.host_huge_page_kib",
];

/// The components of the round trip every exit pays, whatever its reason: the keys of the
/// profile's `[exit]` table, all required. One exit costs their sum plus its reason's
/// `[exits]` value ([`E500Costs::exit`]).
pub const EXIT_COMPONENTS: &[&str] = &[
    "vector",
    "handle_exit",
    "prepare_to_enter",
    "lightweight_exit",
];

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
    /// An override names no number of the profile, or its value is not one.
    #[error("e500 profile '{profile}': {message}")]
    Override {
        /// The profile's name.
        profile: String,
        /// What is wrong.
        message: String,
    },
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
    /// Cycles of each reason's own work on top of the round trip (`[exits]`, keyed by
    /// [`E500Exit::name`]); one exit costs [`Self::round_trip`] more ([`Self::exit`]).
    pub exit_cycles: [u64; E500Exit::COUNT],
    /// Cycles of the round trip every exit pays: the sum of the `[exit]` components
    /// ([`EXIT_COMPONENTS`]; each is also in [`Self::named`] as `exit.<component>`).
    pub round_trip: u64,
    /// Cycles of one unit of work, by unit (keyed by [`E500Work::name`], `section.key`).
    pub work_cycles: [u64; E500Work::COUNT],
    /// Every other integer cost, as `section.key`.
    pub named: BTreeMap<String, u64>,
    /// The values that are assumptions, with their plausible ranges
    /// ([`assumptions`]).
    pub assumptions: Assumptions,
    /// FNV-1a 64 of the profile's text, comments included (`fnv1a64:` and 16 hex digits).
    pub fingerprint: String,
    /// `--set` overrides applied on top of the file (`section.key` to the value given).
    pub overrides: BTreeMap<String, String>,
    /// The file's values with the overrides applied (what the fields above were read from).
    table: toml::Table,
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
        let table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| E500ProfileError::Invalid {
                    origin: origin.to_string(),
                    message: e.message().to_string(),
                })?;
        let fnv = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
        Self::from_table(table, origin, format!("fnv1a64:{fnv:016x}"), true)
    }

    /// Validates a profile's values; `within` requires every assumption inside its range (a
    /// file's values must be, an override's need not).
    fn from_table(
        table: toml::Table,
        origin: &str,
        fingerprint: String,
        within: bool,
    ) -> Result<Self, E500ProfileError> {
        let bad = |message: String| E500ProfileError::Invalid {
            origin: origin.to_string(),
            message,
        };
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
        let round = section("exit")?;
        let mut round_trip = 0;
        for c in EXIT_COMPONENTS {
            round_trip += int_in(round, "exit", c, &bad)?;
        }
        if let Some(k) = round
            .keys()
            .find(|k| !EXIT_COMPONENTS.contains(&k.as_str()))
        {
            return Err(bad(format!(
                "unknown round-trip component exit.{k} (the components: {})",
                EXIT_COMPONENTS.join(", ")
            )));
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
        assumptions::check(&assumptions, &table, within).map_err(bad)?;
        if let Some(&kib) = named.get("hv.host_huge_page_kib") {
            host_huge_page(kib).map_err(bad)?;
        }
        let mut work_cycles = [0; E500Work::COUNT];
        for w in E500Work::ALL {
            work_cycles[w as usize] = *named.get(w.name()).ok_or_else(|| {
                let (sec, key) = w.name().split_once('.').unwrap_or(("", w.name()));
                bad(format!(
                    "missing {sec}.{key} (cycles of one unit: {})",
                    w.doc()
                ))
            })?;
        }
        Ok(E500Costs {
            name,
            frequency_mhz,
            cpi,
            exit_cycles,
            round_trip,
            work_cycles,
            named,
            assumptions,
            fingerprint,
            overrides: BTreeMap::new(),
            table,
        })
    }

    /// This profile with `section.key=value` overrides applied (`--set`), validated like the
    /// file (bounds, types) except that an assumption may leave its range.
    pub fn with_overrides(&self, overrides: &[(String, String)]) -> Result<Self, E500ProfileError> {
        if overrides.is_empty() {
            return Ok(self.clone());
        }
        let bad = |message: String| E500ProfileError::Override {
            profile: self.name.clone(),
            message,
        };
        let mut table = self.table.clone();
        for (key, value) in overrides {
            let slot = key
                .split_once('.')
                .filter(|(sec, _)| *sec != assumptions::SECTION)
                .and_then(|(sec, k)| table.get_mut(sec)?.as_table_mut()?.get_mut(k))
                .filter(|v| v.is_integer() || v.is_float())
                .ok_or_else(|| {
                    bad(format!(
                        "unknown key '{key}': --set takes a number of the profile as SECTION.KEY ({})",
                        self.keys().join(", ")
                    ))
                })?;
            *slot = if slot.is_integer() {
                toml::Value::Integer(value.trim().parse().map_err(|_| {
                    bad(format!(
                        "{key} = {value}: a whole number of cycles is expected"
                    ))
                })?)
            } else {
                toml::Value::Float(
                    value
                        .trim()
                        .parse()
                        .map_err(|_| bad(format!("{key} = {value}: a number is expected")))?,
                )
            };
        }
        let mut out = Self::from_table(
            table,
            &format!("'{}' with --set", self.name),
            self.fingerprint.clone(),
            false,
        )?;
        out.overrides = self.overrides.clone();
        out.overrides.extend(
            overrides
                .iter()
                .map(|(k, v)| (k.clone(), v.trim().to_string())),
        );
        Ok(out)
    }

    /// Every number of the profile, as `section.key` (what `--set` takes).
    pub fn keys(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (sec, v) in &self.table {
            if sec == assumptions::SECTION {
                continue;
            }
            for (k, v) in v.as_table().into_iter().flatten() {
                if v.is_integer() || v.is_float() {
                    out.push(format!("{sec}.{k}"));
                }
            }
        }
        out
    }

    /// The host the models act on: the sizes among the profile's keys ([`CHANGE_COUNTS`]).
    pub fn host(&self) -> Result<HostConfig, E500ProfileError> {
        let huge_page = host_huge_page(self.cost("hv.host_huge_page_kib")?).map_err(|message| {
            E500ProfileError::Invalid {
                origin: self.name.clone(),
                message,
            }
        })?;
        Ok(HostConfig {
            tlb1_reserved: self.cost("hv.host_tlb1_reserved")? as usize,
            guest_ram_bytes: self.cost("hv.guest_ram_mib")? << 20,
            huge_page,
        })
    }

    /// The cycles a model's counts add over bare hardware: every exit at its cost (the round
    /// trip plus its reason's work, [`Self::exit`]), every unit of work at its cost, every
    /// instruction it ran in the guest at the CPI.
    pub fn added_cycles(&self, c: &ModelCounters) -> f64 {
        let exits: u64 = c.exits.iter().map(|(r, n)| n * self.exit(r)).sum();
        let work: u64 = c
            .work
            .iter()
            .map(|(w, n)| n * self.work_cycles[w as usize])
            .sum();
        (exits + work) as f64 + c.added_insns as f64 * self.cpi
    }

    /// Seconds of `recorded_insns` guest instructions under a model that counted `c`.
    pub fn seconds_of(&self, recorded_insns: u64, c: &ModelCounters) -> f64 {
        self.seconds(recorded_insns as f64 * self.cpi + self.added_cycles(c))
    }

    /// The cycles of one exit for `reason`: the round trip ([`Self::round_trip`], the `[exit]`
    /// components) plus the reason's own work (`[exits]`).
    pub fn exit(&self, reason: E500Exit) -> u64 {
        self.round_trip + self.exit_cycles[reason as usize]
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

/// The host's huge page of `hv.host_huge_page_kib`, which must be an e500 page size.
fn host_huge_page(kib: u64) -> Result<PageSize, String> {
    PageSize::from_bytes(kib << 10).ok_or_else(|| {
        format!(
            "hv.host_huge_page_kib = {kib}: not an e500 page size (4, 16, 64, 256, 1024, 4096, ... KiB)"
        )
    })
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

    /// A profile whose round trip and reasons are round numbers: the round trip 1+20+300+4000,
    /// each reason 10,000 x (its index + 1); every other key as the built-in profile has it.
    fn known() -> E500Costs {
        let mut sets = vec![
            ("exit.vector".to_string(), "1".to_string()),
            ("exit.handle_exit".to_string(), "20".to_string()),
            ("exit.prepare_to_enter".to_string(), "300".to_string()),
            ("exit.lightweight_exit".to_string(), "4000".to_string()),
        ];
        for r in E500Exit::ALL {
            sets.push((
                format!("exits.{}", r.name()),
                (10_000 * (r as u64 + 1)).to_string(),
            ));
        }
        E500Costs::builtin()
            .with_overrides(&sets)
            .expect("valid overrides")
    }

    #[test]
    fn every_exit_pays_the_round_trip_once() {
        let c = known();
        assert_eq!(c.round_trip, 4321);
        let mut counts = ModelCounters::default();
        let mut expected = 0;
        for r in E500Exit::ALL {
            let n = r as u64 + 2;
            counts.exits.add(r, n);
            assert_eq!(c.exit(r), 4321 + 10_000 * (r as u64 + 1), "{}", r.name());
            expected += n * (4321 + 10_000 * (r as u64 + 1));
        }
        counts.work.add(E500Work::FlushTlb, 3);
        counts.added_insns = 10;
        let flush = c.cost("hv.flush_tlb").unwrap();
        assert_eq!(
            c.added_cycles(&counts),
            (expected + 3 * flush) as f64 + 10.0 * c.cpi
        );
        // The components stay named costs, so reports and `--set` list them.
        assert_eq!(c.cost("exit.prepare_to_enter").unwrap(), 300);
        assert!(c.keys().contains(&"exit.lightweight_exit".to_string()));
    }

    #[test]
    fn a_component_override_moves_every_reason_by_exactly_its_change() {
        let base = known();
        for component in EXIT_COMPONENTS {
            let key = format!("exit.{component}");
            let was = base.cost(&key).unwrap();
            let moved = base
                .with_overrides(&[(key.clone(), (was + 777).to_string())])
                .expect("override");
            assert_eq!(moved.round_trip, base.round_trip + 777, "{key}");
            for r in E500Exit::ALL {
                assert_eq!(moved.exit(r), base.exit(r) + 777, "{key} {}", r.name());
                assert_eq!(moved.exit_cycles, base.exit_cycles);
            }
            assert_eq!(moved.overrides[&key], (was + 777).to_string());
        }
        // A reason's override moves that reason alone.
        let one = base
            .with_overrides(&[("exits.rfi".into(), "5".into())])
            .unwrap();
        assert_eq!(one.exit(E500Exit::Rfi), base.round_trip + 5);
        assert_eq!(one.exit(E500Exit::Mfmsr), base.exit(E500Exit::Mfmsr));
    }

    #[test]
    fn a_missing_or_unknown_component_is_a_one_line_error() {
        let base = BUILTIN[0].1;
        let missing = base.replace("\nvector =", "\nvectorx =");
        assert_ne!(missing, base);
        let err = E500Costs::from_toml(&missing, "t").unwrap_err().to_string();
        assert!(err.contains("exit.vector"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let unknown = base.replace("\nvector =", "\nrefill = 5\nvector =");
        let err = E500Costs::from_toml(&unknown, "t").unwrap_err().to_string();
        assert!(err.contains("exit.refill"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let no_table = base.replace("\n[exit]\n", "\n[exit_]\n");
        let err = E500Costs::from_toml(&no_table, "t")
            .unwrap_err()
            .to_string();
        assert!(err.contains("[exit]"), "{err}");
        let err = E500Costs::builtin()
            .with_overrides(&[("exit.refill".into(), "5".into())])
            .unwrap_err()
            .to_string();
        assert!(err.contains("exit.refill"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}
