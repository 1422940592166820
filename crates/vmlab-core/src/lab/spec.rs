//! One run as data: [`RunSpec`] names everything a run depends on with plain strings and
//! numbers (what `vmlab run` takes on its command line), so it can be written to JSON or TOML,
//! read back, and resolved into the engine's [`RunConfig`]; and the parsers of those names.
//!
//! [`RunSpec::resolve`] (and its variants) is the one conversion from what a front end says
//! to what the engine runs: it loads the profile and applies the overrides, parses every
//! name, and checks the run ([`engine::check()`]), so a [`RunConfig`] it returns is one the
//! engine can run.

use crate::addr::PageSize;
use crate::cost::Profile;
use crate::engine::{self, sampling, Pipeline, ProgressFn, RunConfig};
use crate::lab::LabError;
use crate::scheme::Paging;
use crate::stats::RunReport;
use crate::workload::WorkloadSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One run, serializable: the workload spec, the scheme and the machine profile by name,
/// page sizes, the sample and the seed. Missing fields take `vmlab run`'s defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// A workload spec, `NAME[:key=value,...]`.
    pub workload: String,
    /// A scheme name: native, nested, shadow, agile, pv, tpt or tpt-prototype.
    #[serde(default = "default_paging")]
    pub paging: String,
    /// A machine profile: a built-in name or a path to a .toml file.
    #[serde(default = "default_machine")]
    pub machine: String,
    /// Guest page size: 4k or 2m.
    #[serde(default = "default_pages")]
    pub guest_pages: String,
    /// Host backing page size under virtualized schemes: 4k, 2m or 1g.
    #[serde(default = "default_pages")]
    pub host_pages: String,
    /// Fraction (0 to 1) of large host regions too fragmented for large backing pages.
    #[serde(default)]
    pub fragmentation: f64,
    /// Measured accesses to simulate (0: all).
    #[serde(default = "default_accesses")]
    pub accesses: u64,
    /// The most warm-up accesses before measuring (exactly this many with `fixed_warmup`).
    #[serde(default = "default_warmup")]
    pub warmup: u64,
    /// Relative tolerance of the warm-up's steady-state test.
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    /// Run exactly `warmup` warm-up accesses, with no steady-state test.
    #[serde(default)]
    pub fixed_warmup: bool,
    /// Seed of the workload's random numbers (and of host fragmentation).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Back all guest memory before set-up.
    #[serde(default)]
    pub pretouch: bool,
    /// Machine-profile keys to override, `SECTION.KEY` to a value as the profile file writes
    /// it (`"latency.dram_ns" = "60"`; `vmlab run --set`): see [`Profile::with_overrides`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, String>,
}

fn default_paging() -> String {
    Paging::Native.name().to_string()
}

fn default_machine() -> String {
    crate::cost::DEFAULT_PROFILE.to_string()
}

fn default_pages() -> String {
    PageSize::Size4K.name().to_string()
}

fn default_accesses() -> u64 {
    crate::workload::DEFAULT_SAMPLE
}

fn default_warmup() -> u64 {
    DEFAULT_WARMUP_CAP
}

/// `vmlab run`'s default cap on warm-up accesses (docs/model.md says why).
pub const DEFAULT_WARMUP_CAP: u64 = 50_000_000;

fn default_tolerance() -> f64 {
    sampling::DEFAULT_TOLERANCE
}

fn default_seed() -> u64 {
    1
}

impl RunSpec {
    /// A spec of `workload` with every other field at `vmlab run`'s default.
    pub fn new(workload: &str) -> RunSpec {
        RunSpec {
            workload: workload.to_string(),
            paging: default_paging(),
            machine: default_machine(),
            guest_pages: default_pages(),
            host_pages: default_pages(),
            fragmentation: 0.0,
            accesses: crate::workload::default_accesses(workload),
            warmup: default_warmup(),
            tolerance: default_tolerance(),
            fixed_warmup: false,
            seed: default_seed(),
            pretouch: false,
            overrides: BTreeMap::new(),
        }
    }

    /// The machine profile of this run: `machine` loaded (a built-in one, or the file it
    /// names), with `overrides` applied and validated.
    pub fn profile(&self) -> Result<Profile, LabError> {
        let base = load_profile(&self.machine)?;
        let overrides: Vec<(&String, &String)> = self.overrides.iter().collect();
        base.with_overrides(&overrides)
            .map_err(|e| LabError::Spec(e.to_string()))
    }

    /// The engine's configuration of this run, checked, with its machine profile loaded (a
    /// built-in one, or the file `machine` names) and `overrides` applied.
    pub fn resolve(&self) -> Result<RunConfig, LabError> {
        self.resolve_with(self.profile()?)
    }

    /// The same with `profile` as the machine, as it is: `machine` and `overrides` are not
    /// looked at (give [`RunSpec::profile`], or an effective profile read back from a
    /// report).
    pub fn resolve_with(&self, profile: Profile) -> Result<RunConfig, LabError> {
        self.resolve_named(profile, SettingNames::Fields)
    }

    /// The same, its errors naming each setting as `names` says (a spec file's field, or
    /// `vmlab run`'s flag for the same setting). The run is checked as the engine checks it
    /// ([`engine::check()`]: page sizes the scheme supports, schemes the workload runs under,
    /// a footprint the machine holds); that error names the workload and the scheme.
    pub fn resolve_named(
        &self,
        profile: Profile,
        names: SettingNames,
    ) -> Result<RunConfig, LabError> {
        if !(0.0..=1.0).contains(&self.fragmentation) {
            return Err(LabError::Spec(format!(
                "{} {} must be between 0 and 1",
                names.of("fragmentation"),
                self.fragmentation
            )));
        }
        sampling::validate(self.accesses, self.warmup, self.tolerance)
            .map_err(|e| LabError::Spec(e.0))?;
        let config = RunConfig {
            workload: WorkloadSpec::parse(&self.workload)
                .map_err(|e| LabError::Spec(e.to_string()))?,
            paging: Paging::parse(self.paging.trim()).map_err(LabError::Spec)?,
            profile,
            guest_pages: parse_page_size(
                &names.of("guest_pages"),
                &self.guest_pages,
                &[PageSize::Size4K, PageSize::Size2M],
            )?,
            host_pages: parse_page_size(&names.of("host_pages"), &self.host_pages, &PageSize::ALL)?,
            fragmentation: self.fragmentation,
            accesses: self.accesses,
            warmup: self.warmup,
            tolerance: self.tolerance,
            fixed_warmup: self.fixed_warmup,
            seed: self.seed,
            pretouch: self.pretouch,
            pipeline: Pipeline::default(),
        };
        engine::check(&config).map_err(|message| {
            LabError::Spec(format!(
                "{} under {}: {message}",
                config.workload.canonical(),
                config.paging.name()
            ))
        })?;
        Ok(config)
    }

    /// Resolves and runs this spec; `progress` may stop the run ([`LabError::Stopped`]).
    pub fn run(&self, progress: &mut ProgressFn<'_>) -> Result<RunReport, LabError> {
        let config = self.resolve()?;
        engine::run(&config, progress).map_err(|e| LabError::from_engine(e, &config, None))
    }
}

/// How the errors of [`RunSpec::resolve_named`] name a setting: as a spec file's field
/// (`guest_pages`) or as `vmlab run`'s flag (`--guest-pages`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettingNames {
    /// As a spec file's field: `guest_pages`.
    Fields,
    /// As `vmlab run`'s flag: `--guest-pages`.
    Flags,
}

impl SettingNames {
    /// The name of the setting whose spec field is `field`.
    fn of(self, field: &str) -> String {
        match self {
            SettingNames::Fields => field.to_string(),
            SettingNames::Flags => format!("--{}", field.replace('_', "-")),
        }
    }
}

/// Scheme names, in order, each at most once (at least one).
pub fn parse_schemes(names: &[String]) -> Result<Vec<Paging>, LabError> {
    let mut out = Vec::new();
    for name in names {
        let paging = Paging::parse(name.trim()).map_err(LabError::Spec)?;
        if out.contains(&paging) {
            return Err(LabError::Spec(format!(
                "paging scheme '{name}' given twice"
            )));
        }
        out.push(paging);
    }
    if out.is_empty() {
        return Err(LabError::Spec("--paging needs at least one scheme".into()));
    }
    Ok(out)
}

/// A page size by name (`4k`, `2m`, `1g`, any case) among `allowed`; `flag` names the
/// setting in the error.
pub fn parse_page_size(flag: &str, text: &str, allowed: &[PageSize]) -> Result<PageSize, LabError> {
    allowed
        .iter()
        .copied()
        .find(|s| s.name().eq_ignore_ascii_case(text))
        .ok_or_else(|| {
            let valid: Vec<_> = allowed.iter().map(|s| s.name()).collect();
            LabError::Spec(format!(
                "invalid {flag} '{text}'; valid values: {}",
                valid.join(", ")
            ))
        })
}

/// A built-in machine profile by name, or a profile file by path (a name ending in .toml or
/// containing a slash).
pub fn load_profile(name: &str) -> Result<Profile, LabError> {
    Profile::load(name).map_err(|e| LabError::Spec(e.to_string()))
}
