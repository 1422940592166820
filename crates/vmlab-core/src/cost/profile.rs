//! Machine profiles: the simulated machine's structures and the costs of its events, as
//! data (TOML in `profiles/`), read once and validated once. Every number in a profile file
//! carries its source in a comment beside it.
//!
//! A [`Profile`] exists only validated: [`Profile::from_toml`] (and [`Profile::builtin`],
//! [`Profile::load`], and serde deserialization) parse the whole file, reject unknown and
//! missing keys, and check every number against a lower and an upper bound, so a latency of
//! `1e300` cycles or a host memory the cache model cannot tag is an error naming the key at
//! load time, never a surprise in the middle of a run.
//!
//! Costs that belong to an event with a name are tables keyed by that name
//! ([`CostTable`]): `[exits]` by [`ExitReason::name`], the costs in `[kernel]` by
//! [`KernelCost::name`]. Adding an exit reason is one line in `hv/x86/exits.rs` and its cost
//! in the profile; nothing here changes.

use crate::cost::assumptions::{self, Assumptions};
use crate::cost::model::KernelCost;
use crate::hv::x86::shadow_work::ShadowWork;
use crate::hv::ExitReason;
use crate::hw::assoc::TranslationCacheConfig;
use crate::hw::cache::{CacheConfig, MemoryConfig};
use crate::hw::tags::{TagCheckCost, TAG_ENTRY_BYTES};
use crate::hw::x86::mmu::TlbConfig;
use crate::stats::named::NamedKey;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::marker::PhantomData;

/// Profiles built into the binary, by name; `profiles/NAME.toml` in the repository.
pub const BUILTIN: &[(&str, &str)] = &[
    ("skylake", include_str!("../../../../profiles/skylake.toml")),
    ("desktop", include_str!("../../../../profiles/desktop.toml")),
];

/// The default machine.
pub const DEFAULT_PROFILE: &str = "skylake";

/// Why a profile could not be loaded. Every message is one line that names the profile and,
/// for a bad value, the key and the bound it breaks.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// No built-in profile has this name.
    #[error("unknown machine profile '{name}'; built-in profiles: {valid} (or give a path to a .toml file)")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The built-in names, comma-separated.
        valid: String,
    },
    /// The profile file could not be read.
    #[error("cannot read machine profile {path}: {message}")]
    Read {
        /// The path given.
        path: String,
        /// The system's reason.
        message: String,
    },
    /// The text is not valid TOML, or a key is unknown, missing or of the wrong type.
    #[error("machine profile {origin}: {message}")]
    Parse {
        /// The file path, or the built-in name in quotes.
        origin: String,
        /// What is wrong, and where.
        message: String,
    },
    /// An override (`SECTION.KEY=VALUE`) names no key of the profile, or its value is not
    /// of the key's type.
    #[error("profile override {setting}: {message}")]
    Override {
        /// The override as given, `SECTION.KEY=VALUE`.
        setting: String,
        /// What is wrong: the unknown key and the valid ones, or the value expected.
        message: String,
    },
    /// A value is out of its bounds, or values contradict each other.
    #[error("machine profile {origin}: {message}")]
    Invalid {
        /// The file path, or the built-in name in quotes.
        origin: String,
        /// The key, its value and the bound it breaks.
        message: String,
    },
}

/// A complete, validated machine description.
///
/// Its sections are the profile file's tables. Build one with [`Profile::from_toml`],
/// [`Profile::builtin`] or [`Profile::load`]; each validates it, so the simulator can trust
/// every value. (A caller that edits a field afterwards can re-check with
/// [`Profile::validate`].)
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "ProfileFile")]
pub struct Profile {
    /// What the machine is, its clock, paging depth and memory sizes.
    pub machine: MachineSection,
    /// The core's throughput: IPC, memory-level parallelism, page walkers.
    pub core: CoreSection,
    /// Load-to-use latencies of the memory hierarchy and of an STLB hit.
    pub latency: LatencySection,
    /// TLB, paging-structure cache and nested-translation cache geometry.
    pub tlb: TlbConfig,
    /// Cache geometry and replacement policies.
    pub memory: MemoryConfig,
    /// Hypervisor options (shadow paging) and the costs of host remapping.
    pub virt: VirtSection,
    /// Cycles per VM exit, by [`ExitReason`] (the `[exits]` table).
    pub exits: CostTable<ExitReason>,
    /// Cycles per unit of the shadow MMU's own work, by [`ShadowWork`] (the `[shadow]` table).
    pub shadow: CostTable<ShadowWork>,
    /// Memory tags (TPT's isolation): how a check's cost is modeled.
    pub tags: TagsSection,
    /// The kernel's options and the costs of its own work.
    pub kernel: KernelSection,
    /// The values that are assumptions, each with its plausible range and why
    /// ([`assumptions`]); none in a profile without the table.
    #[serde(default, skip_serializing_if = "Assumptions::is_empty")]
    pub assumptions: Assumptions,
    /// FNV-1a hash of the text the profile was read from.
    #[serde(skip)]
    fingerprint: u64,
    /// The overrides applied on top of that text ([`Profile::with_overrides`]), in order.
    #[serde(skip)]
    overrides: Vec<(String, String)>,
}

/// The profile file as written: every section, nothing checked yet.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    machine: MachineSection,
    core: CoreSection,
    latency: LatencySection,
    tlb: TlbConfig,
    memory: MemoryConfig,
    virt: VirtSection,
    exits: CostTable<ExitReason>,
    shadow: CostTable<ShadowWork>,
    tags: TagsSection,
    kernel: KernelSection,
    #[serde(default)]
    assumptions: Assumptions,
}

/// Memory tags (TPT's isolation): how a check's cost is modeled.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TagsSection {
    /// `none`, `per-fill` or `per-frame` (see [`TagCheckCost`]).
    pub check_cost: TagCheckCost,
    /// Cycles per TLB fill when `check_cost = "per-fill"`.
    pub per_fill: f64,
}

/// What the machine is: its name, clock, paging depth and memory sizes.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSection {
    /// The profile's name, as reports print it (`machine` in JSON).
    pub name: String,
    /// One line describing the machine.
    pub description: String,
    /// Core clock in GHz: converts DRAM nanoseconds to cycles and cycles to seconds.
    pub frequency_ghz: f64,
    /// 4 or 5 (LA57); both dimensions use the same depth.
    pub paging_levels: u8,
    /// Simulated host RAM in bytes (a whole number of GiB).
    #[serde(
        deserialize_with = "crate::units::deserialize_size",
        serialize_with = "crate::units::serialize_size"
    )]
    pub host_memory: u64,
    /// RAM of the simulated VM under virtualized schemes (a whole number of GiB).
    #[serde(
        deserialize_with = "crate::units::deserialize_size",
        serialize_with = "crate::units::serialize_size"
    )]
    pub guest_memory: u64,
}

/// The core's throughput.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CoreSection {
    /// Instructions per cycle of the non-memory work of a workload's loop.
    pub ipc: f64,
    /// Data misses the core keeps in flight at once (memory-level parallelism).
    pub mlp: f64,
    /// Page walks in flight at once.
    pub page_walkers: f64,
}

/// Load-to-use latencies in core cycles (DRAM in nanoseconds).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LatencySection {
    /// An L1D hit.
    pub l1d: f64,
    /// An L2 hit.
    pub l2: f64,
    /// An LLC hit.
    pub llc: f64,
    /// DRAM, in nanoseconds (converted at `machine.frequency_ghz`).
    pub dram_ns: f64,
    /// Extra cycles of an L1 DTLB miss that hits the STLB.
    pub stlb_hit: f64,
}

/// Hypervisor options, and the costs (cycles) of moving guest pages in host memory. The
/// costs of exits are in [`Profile::exits`].
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VirtSection {
    /// Shadow paging: let guest leaf tables go unsync (KVM's default since 2.6.30).
    pub shadow_unsync: bool,
    /// Shadow paging: guest not-present faults reach the guest without an exit (VMX's #PF
    /// error-code filtering; KVM's `bypass_guest_pf`, removed in Linux 3.1: current KVM
    /// with EPT off intercepts every guest #PF).
    pub shadow_bypass_not_present: bool,
    /// Host remapping of a guest page: the hypervisor's work per move (the interrupted vCPU's
    /// round trip, unmapping and remapping the p2m entry; the copy costs the kernel's
    /// `copy_page_4k` per 4 KiB frame).
    pub host_remap: f64,
    /// Per memory-tag update of a move.
    pub tag_update: f64,
    /// Per global TLB flush of a move.
    pub global_flush: f64,
    /// TPT: the guest's notification of a move.
    pub remap_notify: f64,
    /// TPT: per devirt entry the guest rewrites after a move.
    pub devirt_fixup: f64,
    /// Agile paging: trapped writes to one guest table, within one scan interval, that move
    /// it to nested mode (an assumption).
    pub agile_writes_to_nested: u32,
    /// Agile paging: seconds between the scans that move quiet nested-mode tables back to
    /// shadow mode, rounded to timer ticks at `kernel.hz` (an assumption).
    pub agile_revert_s: f64,
}

/// The kernel's options and the costs (cycles) of its own work, keyed by [`KernelCost`].
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
pub struct KernelSection {
    /// Costs of the kernel's operations, in cycles: `page_fault = 3152`, ... in the file.
    #[serde(flatten)]
    pub costs: CostTable<KernelCost>,
    /// Whether the kernel tags address spaces with PCIDs (no TLB flush on context switch).
    pub pcid: bool,
    /// Kernel page-table isolation (KPTI, Linux's mitigation for Meltdown, on for CPUs with
    /// X86_BUG_CPU_MELTDOWN): every kernel entry and exit switches between the process's
    /// kernel and user top-level tables (see `os::entry`).
    pub kpti: bool,
    /// Timer ticks per second while a process runs (Linux's CONFIG_HZ); the engine delivers
    /// one every 1/hz of simulated time.
    pub hz: f64,
}

/// Something with a cost in a profile table, keyed by its name: an [`ExitReason`] under
/// `[exits]`, a [`ShadowWork`] under `[shadow]`, a [`KernelCost`] under `[kernel]`.
pub trait CostKey: NamedKey {
    /// The profile table the costs sit in.
    const SECTION: &'static str;
    /// Other keys the same table holds (not costs), for error messages.
    const OTHER_KEYS: &'static [&'static str];
}

impl CostKey for ExitReason {
    const SECTION: &'static str = "exits";
    const OTHER_KEYS: &'static [&'static str] = &[];
}

impl CostKey for ShadowWork {
    const SECTION: &'static str = "shadow";
    const OTHER_KEYS: &'static [&'static str] = &[];
}

impl CostKey for KernelCost {
    const SECTION: &'static str = "kernel";
    const OTHER_KEYS: &'static [&'static str] = &["pcid", "kpti", "hz"];
}

/// Cycles per event, one for every key of `K`, indexed by key (`table[ExitReason::Invlpg]`).
/// In a profile file it is a table of `name = cycles` lines; every key must be there, and
/// no other.
#[derive(Clone, PartialEq)]
pub struct CostTable<K: CostKey> {
    cycles: Vec<f64>,
    key: PhantomData<K>,
}

impl<K: CostKey> CostTable<K> {
    /// (key, cycles) for every key, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (K, f64)> + '_ {
        K::all().iter().map(|&k| (k, self.cycles[k.index()]))
    }

    /// The table from a map of names to cycles: every key of `K` must be there, and only
    /// keys of `K` (or [`CostKey::OTHER_KEYS`], which the caller takes out first).
    fn from_map(map: BTreeMap<String, f64>) -> Result<Self, String> {
        let mut cycles = vec![f64::NAN; K::all().len()];
        for (name, value) in map {
            match K::all().iter().find(|k| k.name() == name) {
                Some(k) => cycles[k.index()] = value,
                None => {
                    let valid: Vec<&str> = K::OTHER_KEYS
                        .iter()
                        .copied()
                        .chain(K::all().iter().map(|k| k.name()))
                        .collect();
                    return Err(format!(
                        "unknown key {}.{name}; valid keys: {}",
                        K::SECTION,
                        valid.join(", ")
                    ));
                }
            }
        }
        if let Some(k) = K::all().iter().find(|k| cycles[k.index()].is_nan()) {
            return Err(format!(
                "missing key {}.{} (cycles: {})",
                K::SECTION,
                k.name(),
                k.doc()
            ));
        }
        Ok(CostTable {
            cycles,
            key: PhantomData,
        })
    }
}

impl<K: CostKey> std::ops::Index<K> for CostTable<K> {
    type Output = f64;
    fn index(&self, key: K) -> &f64 {
        &self.cycles[key.index()]
    }
}

impl<K: CostKey> std::fmt::Debug for CostTable<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (k.name(), v)))
            .finish()
    }
}

impl<K: CostKey> Serialize for CostTable<K> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.cycles.len()))?;
        for (k, v) in self.iter() {
            map.serialize_entry(k.name(), &v)?;
        }
        map.end()
    }
}

impl<'de, K: CostKey> Deserialize<'de> for CostTable<K> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, f64>::deserialize(d)?;
        CostTable::from_map(map).map_err(serde::de::Error::custom)
    }
}

/// The bounds a number must lie in: `min` (exclusive if `min_open`) to `max` (inclusive).
#[derive(Clone, Copy)]
struct Bound {
    min: f64,
    min_open: bool,
    max: f64,
    unit: &'static str,
}

impl Bound {
    const fn closed(min: f64, max: f64, unit: &'static str) -> Bound {
        Bound {
            min,
            min_open: false,
            max,
            unit,
        }
    }

    const fn positive(max: f64, unit: &'static str) -> Bound {
        Bound {
            min: 0.0,
            min_open: true,
            max,
            unit,
        }
    }

    fn contains(self, v: f64) -> bool {
        let above = if self.min_open {
            v > self.min
        } else {
            v >= self.min
        };
        above && v <= self.max
    }

    /// `key = value is out of range: ...` naming both bounds.
    fn check(self, key: &str, v: f64) -> Result<(), String> {
        if self.contains(v) {
            return Ok(());
        }
        let low = if self.min_open {
            format!("greater than {}", number(self.min))
        } else {
            format!("at least {}", number(self.min))
        };
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        Err(format!(
            "{key} = {} is out of range: it must be {low} and at most {}{unit}",
            number(v),
            number(self.max),
        ))
    }
}

/// A number as a user would write it: plain when short, in exponent form when huge or tiny.
fn number(v: f64) -> String {
    if v != 0.0 && v.is_finite() && !(1e-4..1e9).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A machine event costs at most this many cycles (about half a second at 2 GHz): far
/// above any exit, fault or fork, far below what would overflow a run's total.
const MAX_EVENT_CYCLES: f64 = 1e9;
/// A load-to-use latency or a per-fill check costs at most this many cycles.
const MAX_LATENCY_CYCLES: f64 = 1e6;
/// The most entries of one TLB or walk cache.
const MAX_TLB_ENTRIES: u32 = 1 << 20;
/// The largest cache level.
const MAX_CACHE_BYTES: u64 = 1 << 30;
/// The largest cache line.
const MAX_LINE_BYTES: u32 = 4096;
/// The most host memory x86-64 can address (52 physical address bits).
const MAX_PHYSICAL_BYTES: u64 = 1 << 52;
/// Bits of a cache level's packed tag (`hw/cache.rs`: 32 bits less 4 of replacement state;
/// the all-ones tag marks an empty way).
const CACHE_TAG_BITS: u32 = 28;

/// The first host address the caches of `memory` cannot tag: every address below it can be
/// cached at every enabled level. Mirrors `MemoryHierarchy::max_addr` (a test pins the two
/// together) without building the caches. Assumes a validated geometry.
pub fn taggable_host_bytes(memory: &MemoryConfig) -> u64 {
    let line = u64::from(memory.line_size);
    [&memory.l1d, &memory.l2, &memory.llc]
        .into_iter()
        .filter(|c| c.size != 0)
        .map(|c| {
            let sets = c.size / (u64::from(c.ways) * line);
            ((1u64 << CACHE_TAG_BITS) - 2) << sets.trailing_zeros() | (sets - 1)
        })
        .min()
        .map_or(u64::MAX, |lines| lines.saturating_mul(line))
}

/// The host memory the simulator addresses for `host_memory` bytes of RAM: the RAM and the
/// memory-tag table right above it (16 bytes per 4 KiB frame).
fn host_bytes_addressed(host_memory: u64) -> u64 {
    host_memory + (host_memory >> crate::addr::PAGE_SHIFT) * TAG_ENTRY_BYTES
}

/// FNV-1a, 64 bits: a stable hash of a profile's text (not for security).
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl TryFrom<ProfileFile> for Profile {
    type Error = String;

    /// Validates the file's values; the fingerprint is that of the profile's canonical TOML
    /// form ([`Profile::to_toml`]), as there is no text to hash.
    fn try_from(file: ProfileFile) -> Result<Profile, String> {
        let mut profile = Profile::unchecked(file, 0);
        profile.check()?;
        // A profile read back from a report may carry overrides outside the ranges.
        profile.check_assumptions(false)?;
        profile.fingerprint = fnv1a64(profile.to_toml().as_bytes());
        Ok(profile)
    }
}

impl Profile {
    fn unchecked(file: ProfileFile, fingerprint: u64) -> Profile {
        let ProfileFile {
            machine,
            core,
            latency,
            tlb,
            memory,
            virt,
            exits,
            shadow,
            tags,
            kernel,
            assumptions,
        } = file;
        Profile {
            machine,
            core,
            latency,
            tlb,
            memory,
            virt,
            exits,
            shadow,
            tags,
            kernel,
            assumptions,
            fingerprint,
            overrides: Vec::new(),
        }
    }

    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Result<Profile, ProfileError> {
        let (_, text) =
            BUILTIN
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| ProfileError::Unknown {
                    name: name.to_string(),
                    valid: BUILTIN
                        .iter()
                        .map(|(n, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
        Profile::from_toml(text, &format!("'{name}'"))
    }

    /// A built-in profile by name, or a profile file by path: `spec` is a path when it ends
    /// in `.toml` or contains a `/`.
    pub fn load(spec: &str) -> Result<Profile, ProfileError> {
        let is_path = spec.ends_with(".toml") || spec.contains('/');
        if !is_path {
            return Profile::builtin(spec);
        }
        let text = std::fs::read_to_string(spec).map_err(|e| ProfileError::Read {
            path: spec.to_string(),
            message: e.to_string(),
        })?;
        Profile::from_toml(&text, spec)
    }

    /// Parse and validate profile text; `origin` names it in errors (a file path or name).
    pub fn from_toml(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        Profile::parse(text, origin, true)
    }

    /// [`Profile::from_toml`]; `within`: every assumption's value must lie in its range.
    fn parse(text: &str, origin: &str, within: bool) -> Result<Profile, ProfileError> {
        let file: ProfileFile = toml::from_str(text).map_err(|e| ProfileError::Parse {
            origin: origin.to_string(),
            message: parse_message(&e, text),
        })?;
        let profile = Profile::unchecked(file, fnv1a64(text.as_bytes()));
        profile
            .check()
            .and_then(|()| profile.check_assumptions(within))
            .map_err(|message| ProfileError::Invalid {
                origin: origin.to_string(),
                message,
            })?;
        Ok(profile)
    }

    /// Checks the `[assumptions]` table against the values; `within`: each value lies in its
    /// range (as the file must have it; an override may move a value out of its range).
    fn check_assumptions(&self, within: bool) -> Result<(), String> {
        let table: toml::Table = toml::from_str(&self.to_toml()).map_err(|e| e.to_string())?;
        assumptions::check(&self.assumptions, &table, within)
    }

    /// The machine's name (`machine.name`).
    pub fn name(&self) -> &str {
        &self.machine.name
    }

    /// A stable hash of the full text the profile was read from (FNV-1a, 64 bits), for
    /// provenance: two runs with the same fingerprint used the same profile file, comments
    /// included. Deserialized through serde instead, it hashes [`Profile::to_toml`].
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The fingerprint as text: `fnv1a64:` and 16 hex digits.
    pub fn fingerprint_hex(&self) -> String {
        format!("fnv1a64:{:016x}", self.fingerprint)
    }

    /// The overrides applied to the profile file ([`Profile::with_overrides`]), in order, as
    /// (`SECTION.KEY`, value as given); empty for a profile as its file says.
    pub fn overrides(&self) -> &[(String, String)] {
        &self.overrides
    }

    /// The profile with `overrides` applied: each is a key as `vmlab profile show` prints it,
    /// `SECTION.KEY` (or `SECTION.STRUCTURE.FIELD`, as in `tlb.stlb.entries`), and a value
    /// written as in the profile file (numbers, `true`/`false`, sizes such as `32M`, names;
    /// quotes optional). The result is validated as a profile file is: an unknown key, a value
    /// of the wrong type or out of bounds is an error naming the override. The fingerprint
    /// stays the file's; [`Profile::overrides`] lists what was changed on top of it. No
    /// overrides: the profile as it is.
    pub fn with_overrides<K: AsRef<str>, V: AsRef<str>>(
        &self,
        overrides: &[(K, V)],
    ) -> Result<Profile, ProfileError> {
        if overrides.is_empty() {
            return Ok(self.clone());
        }
        let mut table: toml::Table = toml::from_str(&self.to_toml())
            .map_err(|e| unreachable_toml(&e))
            .unwrap_or_default();
        let mut applied = self.overrides.clone();
        for (key, value) in overrides {
            let (key, value) = (key.as_ref().trim(), value.as_ref().trim());
            let setting = format!("{key}={value}");
            let err = |message: String| ProfileError::Override {
                setting: setting.clone(),
                message,
            };
            set_key(&mut table, key, value).map_err(err)?;
            applied.retain(|(k, _)| k != key);
            applied.push((key.to_string(), value.to_string()));
        }
        let text = toml::to_string(&table).map_err(|e| ProfileError::Invalid {
            origin: format!("'{}'", self.machine.name),
            message: e.to_string(),
        })?;
        let origin = format!("'{}' with overrides", self.machine.name);
        let mut profile = Profile::parse(&text, &origin, false)?;
        profile.fingerprint = self.fingerprint;
        profile.overrides = applied;
        Ok(profile)
    }

    /// The profile with the file fingerprint (`fnv1a64:HEX`, as [`Profile::fingerprint_hex`]
    /// gives it) and the overrides a report recorded for it: a profile read back from a
    /// report ([`crate::provenance::Provenance::effective_profile`]) names the same file and
    /// overrides as the report did. A fingerprint that does not parse is left as it was.
    pub fn restore_provenance(
        mut self,
        fingerprint_hex: &str,
        overrides: Vec<(String, String)>,
    ) -> Profile {
        if let Some(hash) = fingerprint_hex
            .strip_prefix("fnv1a64:")
            .and_then(|h| u64::from_str_radix(h, 16).ok())
        {
            self.fingerprint = hash;
        }
        self.overrides = overrides;
        self
    }

    /// Every key of the profile as `SECTION.KEY` (`SECTION.STRUCTURE.FIELD` inside the
    /// structure tables), in `vmlab profile show`'s order: what [`Profile::with_overrides`]
    /// and an experiment's `sweep` accept.
    pub fn keys(&self) -> Vec<String> {
        fn walk(prefix: &str, table: &toml::Table, out: &mut Vec<String>) {
            for (k, v) in table {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match v {
                    toml::Value::Table(t) => walk(&path, t, out),
                    _ => out.push(path),
                }
            }
        }
        let mut out = Vec::new();
        if let Ok(mut table) = toml::from_str::<toml::Table>(&self.to_toml()) {
            // The ranges are about the values, not values themselves.
            table.remove(assumptions::SECTION);
            walk("", &table, &mut out);
        }
        out
    }

    /// The effective profile as TOML: every section and key with the value the simulator
    /// uses, sizes in binary units, and the meaning of each exit and kernel cost as a comment
    /// above it. [`Profile::from_toml`] reads it back to the same values.
    pub fn to_toml(&self) -> String {
        let mut value = match toml::Value::try_from(self) {
            Ok(toml::Value::Table(t)) => t,
            _ => unreachable!("a profile serializes to a TOML table"),
        };
        // Cache sizes are plain byte counts in `hw`; print them as the file writes them.
        if let Some(toml::Value::Table(memory)) = value.get_mut("memory") {
            for (_, level) in memory.iter_mut() {
                if let Some(size) = level.get_mut("size") {
                    if let Some(bytes) = size.as_integer() {
                        *size = toml::Value::String(crate::units::format_size(bytes as u64));
                    }
                }
            }
        }
        let mut out = String::new();
        for (section, body) in &value {
            let toml::Value::Table(body) = body else {
                unreachable!("every profile section is a table")
            };
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("[{section}]\n"));
            for (key, v) in body {
                if let Some(doc) = cost_doc(section, key) {
                    out.push_str(&format!("# {doc}\n"));
                }
                out.push_str(&format!("{} = {}\n", toml_key(key), inline(v)));
            }
        }
        out
    }

    /// Check every value once, so the simulator can trust them: each number against its
    /// lower and upper bound, geometries, and the memory sizes against each other and
    /// against what the caches can tag.
    pub fn validate(&self) -> Result<(), ProfileError> {
        self.check().map_err(|message| ProfileError::Invalid {
            origin: format!("'{}'", self.machine.name),
            message,
        })
    }

    fn check(&self) -> Result<(), String> {
        let m = &self.machine;
        if !(4..=5).contains(&m.paging_levels) {
            return Err(format!(
                "machine.paging_levels = {} is out of range: it must be 4 or 5",
                m.paging_levels
            ));
        }
        let cycles = Bound::closed(0.0, MAX_EVENT_CYCLES, "cycles");
        let latency = Bound::closed(0.0, MAX_LATENCY_CYCLES, "cycles");
        let mut numbers: Vec<(String, f64, Bound)> = vec![
            (
                "machine.frequency_ghz".into(),
                m.frequency_ghz,
                Bound::positive(20.0, "GHz"),
            ),
            ("core.ipc".into(), self.core.ipc, Bound::positive(64.0, "")),
            (
                "core.mlp".into(),
                self.core.mlp,
                Bound::positive(1024.0, ""),
            ),
            (
                "core.page_walkers".into(),
                self.core.page_walkers,
                Bound::positive(64.0, ""),
            ),
            ("latency.l1d".into(), self.latency.l1d, latency),
            ("latency.l2".into(), self.latency.l2, latency),
            ("latency.llc".into(), self.latency.llc, latency),
            (
                "latency.dram_ns".into(),
                self.latency.dram_ns,
                Bound::closed(0.0, MAX_LATENCY_CYCLES, "ns"),
            ),
            ("latency.stlb_hit".into(), self.latency.stlb_hit, latency),
            ("virt.host_remap".into(), self.virt.host_remap, cycles),
            ("virt.tag_update".into(), self.virt.tag_update, cycles),
            ("virt.global_flush".into(), self.virt.global_flush, cycles),
            ("virt.remap_notify".into(), self.virt.remap_notify, cycles),
            ("virt.devirt_fixup".into(), self.virt.devirt_fixup, cycles),
            (
                "virt.agile_writes_to_nested".into(),
                f64::from(self.virt.agile_writes_to_nested),
                Bound::closed(1.0, 1e6, "trapped writes"),
            ),
            (
                "virt.agile_revert_s".into(),
                self.virt.agile_revert_s,
                Bound::closed(1e-3, 1e6, "s"),
            ),
            ("tags.per_fill".into(), self.tags.per_fill, latency),
            (
                "kernel.hz".into(),
                self.kernel.hz,
                Bound::closed(0.0, 100_000.0, "ticks per second (0: no ticks)"),
            ),
        ];
        numbers.extend(
            self.exits
                .iter()
                .map(|(r, v)| (format!("exits.{}", r.name()), v, cycles)),
        );
        numbers.extend(
            self.shadow
                .iter()
                .map(|(w, v)| (format!("shadow.{}", w.name()), v, cycles)),
        );
        numbers.extend(
            self.kernel
                .costs
                .iter()
                .map(|(k, v)| (format!("kernel.{}", k.name()), v, cycles)),
        );
        for (key, v, bound) in numbers {
            bound.check(&key, v)?;
        }

        // Structures: the bounds here, the geometry rules in `hw`.
        let TlbConfig {
            l1_4k,
            l1_2m,
            l1_1g,
            stlb,
            stlb_1g,
            pde_cache,
            pdpte_cache,
            pml4e_cache,
            nested_tlb,
            ept_pde_cache,
            ept_pdpte_cache,
            ept_pml4e_cache,
        } = &self.tlb;
        let structures: [(&str, &TranslationCacheConfig); 12] = [
            ("tlb.l1_4k", l1_4k),
            ("tlb.l1_2m", l1_2m),
            ("tlb.l1_1g", l1_1g),
            ("tlb.stlb", stlb),
            ("tlb.stlb_1g", stlb_1g),
            ("tlb.pde_cache", pde_cache),
            ("tlb.pdpte_cache", pdpte_cache),
            ("tlb.pml4e_cache", pml4e_cache),
            ("tlb.nested_tlb", nested_tlb),
            ("tlb.ept_pde_cache", ept_pde_cache),
            ("tlb.ept_pdpte_cache", ept_pdpte_cache),
            ("tlb.ept_pml4e_cache", ept_pml4e_cache),
        ];
        for (name, s) in structures {
            if s.entries > MAX_TLB_ENTRIES {
                return Err(format!(
                    "{name}.entries = {} is out of range: it must be at most {MAX_TLB_ENTRIES} \
                     (0 disables the structure)",
                    s.entries
                ));
            }
        }
        self.tlb.validate()?;
        let line = self.memory.line_size;
        if line > MAX_LINE_BYTES {
            return Err(format!(
                "memory.line_size = {line} is out of range: it must be at most {MAX_LINE_BYTES} bytes"
            ));
        }
        let levels: [(&str, &CacheConfig); 3] = [
            ("memory.l1d", &self.memory.l1d),
            ("memory.l2", &self.memory.l2),
            ("memory.llc", &self.memory.llc),
        ];
        for (name, level) in levels {
            if level.size > MAX_CACHE_BYTES {
                return Err(format!(
                    "{name}.size = {} is out of range: it must be at most {} (0 disables the level)",
                    crate::units::format_size(level.size),
                    crate::units::format_size(MAX_CACHE_BYTES)
                ));
            }
        }
        self.memory.validate()?;

        // Memory sizes, against each other and against what the caches can tag.
        let size = crate::units::format_size;
        if m.host_memory < (1 << 30)
            || !m.host_memory.is_multiple_of(1 << 30)
            || m.host_memory > MAX_PHYSICAL_BYTES
        {
            return Err(format!(
                "machine.host_memory = {} is out of range: it must be a whole number of GiB \
                 from 1G to {} (52 physical address bits)",
                size(m.host_memory),
                size(MAX_PHYSICAL_BYTES)
            ));
        }
        let taggable = taggable_host_bytes(&self.memory);
        let addressed = host_bytes_addressed(m.host_memory);
        if addressed > taggable {
            let most = (taggable / (1 << 30)) * 256 / 257;
            return Err(format!(
                "machine.host_memory = {} is more than the caches can tag: with its tag table \
                 it spans {} bytes and the [memory] geometry tags addresses below {} bytes; \
                 use at most {most}G, or caches with more sets",
                size(m.host_memory),
                addressed,
                taggable
            ));
        }
        if m.guest_memory < (1 << 30)
            || !m.guest_memory.is_multiple_of(1 << 30)
            || m.guest_memory > m.host_memory
        {
            return Err(format!(
                "machine.guest_memory = {} is out of range: it must be a whole number of GiB \
                 from 1G to host_memory ({})",
                size(m.guest_memory),
                size(m.host_memory)
            ));
        }
        Ok(())
    }
}

/// `to_toml`'s text always parses (a test pins it); this is never reached.
fn unreachable_toml(e: &toml::de::Error) -> toml::Table {
    debug_assert!(false, "Profile::to_toml does not parse: {e}");
    toml::Table::new()
}

/// Sets `path` (`SECTION.KEY[.FIELD]`) of the profile `table` to `text`, read as the type of
/// the value it replaces: the key must exist (every key of a profile is present in it).
fn set_key(table: &mut toml::Table, path: &str, text: &str) -> Result<(), String> {
    if path.split('.').next() == Some(assumptions::SECTION) {
        return Err(format!(
            "the [{}] ranges are the profile file's: edit a copy (vmlab profile show > FILE.toml)",
            assumptions::SECTION
        ));
    }
    let parts: Vec<&str> = path.split('.').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        let sections: Vec<&str> = table.keys().map(String::as_str).collect();
        return Err(format!(
            "'{path}' is not SECTION.KEY=VALUE; sections: {}",
            sections.join(", ")
        ));
    }
    let mut here = table;
    let mut at = String::new();
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let valid = |t: &toml::Table| t.keys().map(String::as_str).collect::<Vec<_>>().join(", ");
        let Some(slot) = here.get(*part) else {
            return Err(if at.is_empty() {
                format!("unknown section '{part}'; sections: {}", valid(here))
            } else {
                format!(
                    "unknown key '{at}.{part}'; valid keys of {at}: {}",
                    valid(here)
                )
            });
        };
        if !at.is_empty() {
            at.push('.');
        }
        at.push_str(part);
        match (last, slot) {
            (false, toml::Value::Table(_)) => {}
            (false, _) => return Err(format!("{at} is a value, not a table")),
            (true, toml::Value::Table(t)) => {
                return Err(format!(
                    "{at} is a table; set one of its keys: {}",
                    t.keys()
                        .map(|k| format!("{at}.{k}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
            (true, old) => {
                let new = typed_value(old, text)
                    .map_err(|want| format!("{at} takes {want}, not '{text}'"))?;
                here.insert((*part).to_string(), new);
                return Ok(());
            }
        }
        let Some(toml::Value::Table(next)) = here.get_mut(*part) else {
            unreachable!("checked to be a table above")
        };
        here = next;
    }
    Ok(())
}

/// `text` as a value of `old`'s type, or what that type is, for the error.
fn typed_value(old: &toml::Value, text: &str) -> Result<toml::Value, &'static str> {
    let unquoted = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    match old {
        toml::Value::Float(_) => unquoted
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .map(toml::Value::Float)
            .ok_or("a number"),
        toml::Value::Integer(_) => unquoted
            .parse::<i64>()
            .map(toml::Value::Integer)
            .map_err(|_| "a whole number"),
        toml::Value::Boolean(_) => match unquoted {
            "true" => Ok(toml::Value::Boolean(true)),
            "false" => Ok(toml::Value::Boolean(false)),
            _ => Err("true or false"),
        },
        toml::Value::String(_) => Ok(toml::Value::String(unquoted.to_string())),
        _ => Err("a value of the profile file's type"),
    }
}

/// The documentation of cost `key` in table `section`, for the keyed cost tables.
fn cost_doc(section: &str, key: &str) -> Option<&'static str> {
    fn find<K: CostKey>(section: &str, key: &str) -> Option<&'static str> {
        (section == K::SECTION)
            .then(|| K::all().iter().find(|k| k.name() == key).map(|k| k.doc()))
            .flatten()
    }
    find::<ExitReason>(section, key)
        .or_else(|| find::<ShadowWork>(section, key))
        .or_else(|| find::<KernelCost>(section, key))
}

/// A TOML value on one line: tables inline (`{ entries = 64, ways = 4 }`).
/// A key as TOML writes it: bare when it can be, quoted when it holds a dot (an
/// assumption's `SECTION.KEY`) or anything else a bare key cannot.
fn toml_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_string()
    } else {
        toml::Value::String(key.to_string()).to_string()
    }
}

fn inline(v: &toml::Value) -> String {
    match v {
        toml::Value::Table(t) => {
            let body: Vec<String> = t
                .iter()
                .map(|(k, v)| format!("{k} = {}", inline(v)))
                .collect();
            format!("{{ {} }}", body.join(", "))
        }
        other => other.to_string(),
    }
}

/// A TOML parse error as one line: the message and the line it is on.
fn parse_message(e: &toml::de::Error, text: &str) -> String {
    let message = e.message().trim().replace('\n', "; ");
    let Some(span) = e.span().filter(|s| s.start <= text.len()) else {
        return message;
    };
    let line_no = text[..span.start].matches('\n').count() + 1;
    let lines: Vec<&str> = text.lines().collect();
    let line = lines.get(line_no - 1).map_or("", |l| l.trim());
    // The `[section]` the error is in: the nearest header at or above its line.
    let section = lines[..line_no.min(lines.len())]
        .iter()
        .rev()
        .map(|l| l.trim())
        .find_map(|l| l.strip_prefix('[')?.split(']').next())
        .map(str::trim);
    // The key on the error's line, when the line is `key = value` (not a header).
    let line_key = (!line.starts_with('['))
        .then(|| line.split_once('='))
        .flatten()
        .map(|(k, _)| k.trim().trim_matches('"'));
    let path = |key: Option<&str>| {
        [section, line_key, key]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(".")
    };
    let place = match section {
        Some(s) => format!("in [{s}], line {line_no}"),
        None => format!("line {line_no}"),
    };
    // serde names a missing key but not where it belongs; the span points at its table.
    if let Some(field) = message
        .strip_prefix("missing field `")
        .and_then(|m| m.split('`').next())
    {
        return format!("missing key {} ({place})", path(Some(field)));
    }
    match line_key {
        Some(_) => format!("{}: {message} ({place}: `{line}`)", path(None)),
        None => format!("{message} ({place}: `{line}`)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skylake_text() -> &'static str {
        BUILTIN[0].1
    }

    fn error(text: &str) -> String {
        Profile::from_toml(text, "test.toml")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn builtin_profiles_load() {
        for (name, text) in BUILTIN {
            let p = Profile::builtin(name).unwrap();
            assert_eq!(p.name(), *name);
            assert_eq!(p.fingerprint(), fnv1a64(text.as_bytes()));
        }
    }

    #[test]
    fn unknown_profile_lists_the_valid_ones() {
        let err = Profile::builtin("pentium").unwrap_err().to_string();
        assert!(
            err.contains("'pentium'") && err.contains("skylake"),
            "{err}"
        );
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = error(&skylake_text().replace("[core]", "[core]\nturbo = true"));
        assert!(err.contains("test.toml") && err.contains("turbo"), "{err}");
        let err = error(&skylake_text().replace("[exits]", "[exits]\nvmcall = 1000"));
        assert!(
            err.contains("exits.vmcall") && err.contains("ept_violation"),
            "{err}"
        );
        let err = error(&skylake_text().replace("[kernel]", "[kernel]\nbrk = 1000"));
        assert!(
            err.contains("kernel.brk") && err.contains("pcid") && err.contains("page_fault"),
            "{err}"
        );
    }

    #[test]
    fn missing_costs_are_named() {
        let text: String = skylake_text()
            .lines()
            .filter(|l| !l.starts_with("invlpg ="))
            .map(|l| format!("{l}\n"))
            .collect();
        let err = error(&text);
        assert!(err.contains("missing key exits.invlpg"), "{err}");
    }

    #[test]
    fn invalid_values_are_named() {
        let err = error(&skylake_text().replace("paging_levels = 4", "paging_levels = 3"));
        assert!(err.contains("paging_levels"), "{err}");
        let err = error(&skylake_text().replace("page_walkers = 2", "page_walkers = 0"));
        assert!(err.contains("core.page_walkers"), "{err}");
    }

    #[test]
    fn values_have_upper_bounds() {
        for (line, key) in [
            ("l2 = 14", "latency.l2"),
            ("ept_violation = 2500", "exits.ept_violation"),
            ("fork = 147000", "kernel.fork"),
            ("mlp = 10", "core.mlp"),
            ("host_remap = 3500", "virt.host_remap"),
        ] {
            let (name, _) = line.split_once(" = ").unwrap();
            let text = skylake_text().replace(line, &format!("{name} = 1e300"));
            let err = error(&text);
            assert!(
                err.contains(&format!("{key} = 1e300")) && err.contains("at most"),
                "{err}"
            );
            assert!(!err.contains('\n'), "{err}");
        }
        let err = error(&skylake_text().replace(
            "stlb = { entries = 1536, ways = 12 }",
            "stlb = { entries = 3145728, ways = 12 }",
        ));
        assert!(err.contains("tlb.stlb.entries"), "{err}");
        let err = error(&skylake_text().replace("size = \"22M\"", "size = \"2G\""));
        assert!(err.contains("memory.llc.size"), "{err}");
    }

    #[test]
    fn host_memory_the_caches_cannot_tag_is_rejected_at_load() {
        let err = error(&skylake_text().replace("host_memory = \"64G\"", "host_memory = \"2T\""));
        assert!(
            err.contains("machine.host_memory = 2T") && err.contains("tag"),
            "{err}"
        );
        // The largest size the message suggests loads.
        let most = err
            .split("at most ")
            .nth(1)
            .and_then(|s| s.split('G').next())
            .unwrap();
        let text = skylake_text().replace(
            "host_memory = \"64G\"",
            &format!("host_memory = \"{most}G\""),
        );
        Profile::from_toml(&text, "x").unwrap();
    }

    #[test]
    fn taggable_bytes_match_the_cache_model() {
        use crate::hw::cache::Replacement;
        use crate::hw::memory::MemoryHierarchy;
        let skylake = Profile::builtin("skylake").unwrap().memory;
        let level = |size: u64, ways: u32| CacheConfig {
            size,
            ways,
            replacement: Replacement::Lru,
        };
        let mut configs = vec![skylake.clone()];
        for (l1, l2, llc) in [
            (level(0, 1), level(0, 1), level(0, 1)),
            (level(4096, 1), level(0, 1), level(1 << 20, 16)),
            (level(32 << 10, 8), level(0, 1), level(0, 1)),
        ] {
            configs.push(MemoryConfig {
                line_size: 64,
                l1d: l1,
                l2,
                llc,
            });
        }
        for cfg in configs {
            assert_eq!(
                taggable_host_bytes(&cfg),
                MemoryHierarchy::new(&cfg).max_addr(),
                "{cfg:?}"
            );
        }
    }

    #[test]
    fn to_toml_reads_back_to_the_same_profile() {
        let p = Profile::builtin("skylake").unwrap();
        let text = p.to_toml();
        let q = Profile::from_toml(&text, "shown").unwrap();
        assert_eq!(q.to_toml(), text);
        assert_eq!(
            (&q.machine, &q.core, &q.latency, &q.tlb, &q.memory),
            (&p.machine, &p.core, &p.latency, &p.tlb, &p.memory)
        );
        assert_eq!(
            (&q.virt, &q.exits, &q.tags, &q.kernel),
            (&p.virt, &p.exits, &p.tags, &p.kernel)
        );
        assert!(text.contains("host_memory = \"64G\""), "{text}");
        assert!(
            text.contains("llc = { size = \"22M\", ways = 11, replacement = \"drrip\" }"),
            "{text}"
        );
        assert_ne!(q.fingerprint(), p.fingerprint(), "the texts differ");
        // Through serde: validated, and fingerprinted by the canonical text.
        let r: Profile = toml::from_str(&text).unwrap();
        assert_eq!(r.fingerprint(), fnv1a64(text.as_bytes()));
        assert!(toml::from_str::<Profile>(&text.replace("l2 = 14.0", "l2 = 1e300")).is_err());
    }

    #[test]
    fn fingerprint_covers_the_whole_text() {
        let a = Profile::from_toml(skylake_text(), "a").unwrap();
        let b = Profile::from_toml(&format!("{}# a comment\n", skylake_text()), "b").unwrap();
        assert_ne!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint_hex().len(), "fnv1a64:".len() + 16);
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn parse_errors_name_the_line() {
        let err = error(&skylake_text().replace("paging_levels = 4", "paging_levels = 400"));
        assert!(err.contains("paging_levels = 400"), "{err}");
        assert!(!err.contains('\n'), "{err}");
    }

    fn without_line(prefix: &str) -> String {
        let text: String = skylake_text()
            .lines()
            .filter(|l| !l.starts_with(prefix))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_ne!(
            text.len() + 1,
            skylake_text().len(),
            "no line starts with {prefix}"
        );
        text
    }

    #[test]
    fn missing_keys_name_their_section_and_key() {
        let err = error(&without_line("page_walkers ="));
        assert!(
            err.contains("missing key core.page_walkers (in [core], line "),
            "{err}"
        );
        let err = error(&without_line("l2 ="));
        assert!(
            err.contains("missing key latency.l2 (in [latency], line "),
            "{err}"
        );
    }

    #[test]
    fn mistyped_keys_name_their_section_and_key() {
        let err = error(&skylake_text().replace("page_walkers = 2", "page_walkers = \"2\""));
        assert!(err.contains("core.page_walkers: invalid type"), "{err}");
        assert!(err.contains("in [core], line "), "{err}");
        let err = error(&skylake_text().replace("page_walkers = 2", "page_walkrs = 2"));
        assert!(err.contains("core.page_walkrs: unknown field"), "{err}");
        let err = error(&skylake_text().replace(
            "l1d = { size = \"32K\", ways = 8,",
            "l1d = { size = \"32K\",",
        ));
        assert!(
            err.contains("missing key memory.l1d.ways (in [memory], line "),
            "{err}"
        );
    }

    #[test]
    fn overrides_change_the_key_and_keep_the_file_fingerprint() {
        let base = Profile::builtin("skylake").expect("built-in");
        let p = base
            .with_overrides(&[
                ("latency.dram_ns", "60"),
                ("tlb.stlb.entries", "3072"),
                ("memory.llc.size", "44M"),
                ("memory.llc.replacement", "lru"),
                ("kernel.pcid", "false"),
            ])
            .expect("valid overrides");
        assert_eq!(p.latency.dram_ns, 60.0);
        assert_eq!(p.tlb.stlb.entries, 3072);
        assert_eq!(p.memory.llc.size, 44 << 20);
        assert!(!p.kernel.pcid);
        assert_eq!(p.fingerprint(), base.fingerprint());
        assert_eq!(p.overrides().len(), 5);
        assert_eq!(p.overrides()[0], ("latency.dram_ns".into(), "60".into()));
        // Everything else is the file's.
        assert_eq!(p.latency.l2, base.latency.l2);
        assert_eq!(
            p.exits[ExitReason::Cr3Load],
            base.exits[ExitReason::Cr3Load]
        );
        // No overrides: the profile as it is.
        let same = base
            .with_overrides::<&str, &str>(&[])
            .expect("nothing to do");
        assert_eq!(same.to_toml(), base.to_toml());
        assert!(same.overrides().is_empty());
    }

    #[test]
    fn bad_overrides_are_one_line_naming_the_key() {
        let base = Profile::builtin("skylake").expect("built-in");
        let err = |k: &str, v: &str| {
            let e = base.with_overrides(&[(k, v)]).expect_err("bad").to_string();
            assert!(!e.contains('\n'), "{e}");
            e
        };
        let e = err("latency.dram", "60");
        assert!(
            e.starts_with("profile override latency.dram=60: unknown key 'latency.dram'"),
            "{e}"
        );
        assert!(e.contains("dram_ns"), "{e}");
        let e = err("lantency.dram_ns", "60");
        assert!(e.contains("unknown section 'lantency'"), "{e}");
        assert!(e.contains("latency"), "{e}");
        assert!(err("latency.dram_ns", "fast").contains("takes a number"));
        assert!(err("kernel.pcid", "1").contains("takes true or false"));
        assert!(err("tlb.stlb", "1").contains("is a table"));
        assert!(err("dram_ns", "1").contains("SECTION.KEY"));
        // Bounds as the profile file's.
        let e = err("latency.dram_ns", "-5");
        assert!(e.contains("latency.dram_ns = -5 is out of range"), "{e}");
    }

    #[test]
    fn keys_are_the_override_paths() {
        let p = Profile::builtin("skylake").expect("built-in");
        let keys = p.keys();
        for k in [
            "latency.dram_ns",
            "tlb.stlb.entries",
            "memory.llc.size",
            "exits.cr3_load",
            "kernel.hz",
        ] {
            assert!(keys.iter().any(|x| x == k), "{k}");
        }
        assert!(keys.iter().all(|k| k.contains('.')));
    }

    #[test]
    fn every_built_in_x86_profile_ranges_its_assumptions() {
        for name in ["skylake", "desktop"] {
            let p = Profile::builtin(name).expect("built-in");
            // Every exit cost: none was measured on the core the profile describes.
            for reason in ExitReason::ALL {
                let key = format!("exits.{}", reason.name());
                assert!(p.assumptions.contains_key(&key), "{name}: {key}");
            }
            for (work, _) in p.shadow.iter() {
                let key = format!("shadow.{}", work.name());
                assert!(p.assumptions.contains_key(&key), "{name}: {key}");
            }
            for key in [
                "core.ipc",
                "tags.per_fill",
                "virt.agile_revert_s",
                "kernel.timer_tick",
            ] {
                assert!(p.assumptions.contains_key(key), "{name}: {key}");
            }
            // The ranges are not keys: nothing overrides or sweeps them.
            assert!(p.keys().iter().all(|k| !k.starts_with("assumptions")));
            let e = p
                .with_overrides(&[("assumptions.core.ipc", "1")])
                .expect_err("ranges are the file's");
            assert!(e.to_string().contains("edit a copy"), "{e}");
            // `profile show` prints them, and reads back to the same profile.
            let text = p.to_toml();
            assert!(text.contains("[assumptions]\n\"core.ipc\" = { "), "{text}");
            let back = Profile::from_toml(&text, "shown").expect("reads back");
            assert_eq!(back.assumptions, p.assumptions);
        }
    }

    #[test]
    fn a_file_value_outside_its_range_is_refused_and_an_override_is_not() {
        let p = Profile::builtin("skylake").expect("built-in");
        let text = p.to_toml().replace("ipc = 2.0", "ipc = 3.5");
        let e = Profile::from_toml(&text, "edited").expect_err("outside");
        assert!(
            e.to_string()
                .contains("assumptions.\"core.ipc\": the value 3.5 lies outside its range [1, 3]"),
            "{e}"
        );
        let moved = p
            .with_overrides(&[("core.ipc", "3.5")])
            .expect("an override may");
        assert_eq!(moved.core.ipc, 3.5);
        // And a report's effective profile, read back, keeps it.
        let json = serde_json::to_value(&moved).expect("json");
        let back: Profile = serde_json::from_value(json).expect("reads back");
        assert_eq!(back.core.ipc, 3.5);
    }
}
