//! Assumptions: the profile values no measurement backs yet, each with the range it could
//! plausibly take and why (what bounds it from below and from above). A profile lists them in
//! its `[assumptions]` table, keyed as `vmlab profile show` names the value:
//!
//! ```toml
//! [assumptions]
//! "core.ipc" = { low = 1.5, high = 3.0, why = "..." }
//! ```
//!
//! The table is validated with the profile: every key names a numeric value of the profile,
//! `low < high`, a reason is given, and the file's value lies in its range (an override may
//! leave it: exploring outside the range is the user's choice). Sensitivity analyses vary the
//! assumptions over these ranges (README, "Python", `vmlab.sensitivity`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The profile section that holds the assumptions.
pub const SECTION: &str = "assumptions";

/// One assumption's plausible range and the reasoning behind it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assumption {
    /// The lowest plausible value.
    pub low: f64,
    /// The highest plausible value.
    pub high: f64,
    /// What bounds the range, in a sentence or two.
    pub why: String,
}

/// A profile's assumptions, by `SECTION.KEY`.
pub type Assumptions = BTreeMap<String, Assumption>;

/// Checks `assumptions` against the profile's values (`values`: the profile as a TOML table):
/// each key names a number of the profile, its range is ordered and finite, its reason is
/// not empty, and, with `within`, the value lies in the range. The error names the key.
pub fn check(assumptions: &Assumptions, values: &toml::Table, within: bool) -> Result<(), String> {
    for (key, a) in assumptions {
        let at = format!("{SECTION}.\"{key}\"");
        let value =
            lookup(values, key).ok_or_else(|| format!("{at}: the profile has no key '{key}'"))?;
        let value = value
            .as_float()
            .or_else(|| value.as_integer().map(|i| i as f64))
            .ok_or_else(|| format!("{at}: '{key}' is not a number, so it has no range"))?;
        if !(a.low.is_finite() && a.high.is_finite() && a.low < a.high) {
            return Err(format!(
                "{at}: low ({}) must be below high ({}), both finite",
                a.low, a.high
            ));
        }
        if a.why.trim().is_empty() {
            return Err(format!(
                "{at}: say why the range is what it is (why = \"...\")"
            ));
        }
        if within && !(a.low..=a.high).contains(&value) {
            return Err(format!(
                "{at}: the value {value} lies outside its range [{}, {}]",
                a.low, a.high
            ));
        }
    }
    Ok(())
}

/// The value at `SECTION.KEY` (or `SECTION.STRUCTURE.FIELD`) of a profile table.
fn lookup<'t>(table: &'t toml::Table, key: &str) -> Option<&'t toml::Value> {
    let mut parts = key.split('.');
    let mut here = table.get(parts.next()?)?;
    for part in parts {
        here = here.as_table()?.get(part)?;
    }
    (!here.is_table()).then_some(here)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values() -> toml::Table {
        toml::from_str("[core]\nipc = 2.0\n[tlb]\nstlb = { entries = 1536, ways = 12 }\n")
            .expect("toml")
    }

    fn one(key: &str, low: f64, high: f64, why: &str) -> Assumptions {
        [(
            key.to_string(),
            Assumption {
                low,
                high,
                why: why.to_string(),
            },
        )]
        .into()
    }

    #[test]
    fn a_range_around_a_value_of_the_profile_passes() {
        check(&one("core.ipc", 1.0, 3.0, "bounds"), &values(), true).expect("valid");
        check(
            &one("tlb.stlb.entries", 1024.0, 2048.0, "b"),
            &values(),
            true,
        )
        .expect("valid");
    }

    #[test]
    fn each_mistake_is_named() {
        let cases = [
            (
                one("core.nope", 1.0, 3.0, "b"),
                "the profile has no key 'core.nope'",
            ),
            (
                one("tlb.stlb", 1.0, 3.0, "b"),
                "the profile has no key 'tlb.stlb'",
            ),
            (
                one("core.ipc", 3.0, 1.0, "b"),
                "low (3) must be below high (1)",
            ),
            (one("core.ipc", 1.0, 3.0, " "), "say why"),
            (
                one("core.ipc", 2.5, 3.0, "b"),
                "the value 2 lies outside its range [2.5, 3]",
            ),
        ];
        for (a, message) in cases {
            let e = check(&a, &values(), true).expect_err(message);
            assert!(e.contains(message), "{e}");
        }
        // An override may take a value out of its range.
        check(&one("core.ipc", 2.5, 3.0, "b"), &values(), false).expect("not within");
    }
}
