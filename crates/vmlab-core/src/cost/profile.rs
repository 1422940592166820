//! Machine profiles: the simulated machine's structures and the costs of its events, as
//! data (TOML in `profiles/`), validated once. Every number in a profile file carries its
//! source in a comment beside it.

use crate::hw::cache::MemoryConfig;
use crate::hw::x86::mmu::TlbConfig;
use serde::Deserialize;

/// Profiles built into the binary, by name; `profiles/NAME.toml` in the repository.
pub const BUILTIN: &[(&str, &str)] =
    &[("skylake", include_str!("../../../../profiles/skylake.toml"))];

/// The default machine.
pub const DEFAULT_PROFILE: &str = "skylake";

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("unknown machine profile '{name}'; built-in profiles: {valid} (or give a path to a .toml file)")]
    Unknown { name: String, valid: String },
    #[error("machine profile {origin}: {message}")]
    Parse { origin: String, message: String },
    #[error("machine profile {origin}: {message}")]
    Invalid { origin: String, message: String },
}

/// A complete machine description.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    pub machine: MachineSection,
    pub core: CoreSection,
    pub latency: LatencySection,
    pub tlb: TlbConfig,
    pub memory: MemoryConfig,
    pub virt: VirtSection,
    pub tags: TagsSection,
    pub kernel: KernelSection,
}

/// Memory tags (TPT's isolation): how a check's cost is modeled.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct TagsSection {
    pub check_cost: crate::hw::tags::TagCheckCost,
    /// Cycles per TLB fill when `check_cost = "per-fill"`.
    pub per_fill: f64,
}

#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSection {
    pub name: String,
    pub description: String,
    pub frequency_ghz: f64,
    /// 4 or 5 (LA57); both dimensions use the same depth.
    pub paging_levels: u8,
    #[serde(deserialize_with = "crate::units::deserialize_size")]
    pub host_memory: u64,
    /// RAM of the simulated VM under virtualized schemes.
    #[serde(deserialize_with = "crate::units::deserialize_size")]
    pub guest_memory: u64,
}

#[derive(Clone, Debug, Deserialize, serde::Serialize)]
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
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct LatencySection {
    pub l1d: f64,
    pub l2: f64,
    pub llc: f64,
    pub dram_ns: f64,
    /// Extra cycles of an L1 DTLB miss that hits the STLB.
    pub stlb_hit: f64,
}

/// Costs of hypervisor interventions, in cycles, per exit reason.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct VirtSection {
    /// Shadow paging: let guest leaf tables go unsync (KVM's default since 2.6.30).
    pub shadow_unsync: bool,
    /// Shadow paging: guest not-present faults reach the guest without an exit.
    pub shadow_bypass_not_present: bool,
    pub ept_violation: f64,
    pub write_protect: f64,
    pub shadow_fault: f64,
    pub pf_reflect: f64,
    pub cr3_load: f64,
    pub invlpg: f64,
    pub tpt_switch: f64,
    pub hypercall: f64,
    pub pv_bounce: f64,
    /// Host remapping of a guest page: the hypervisor's work per move (the interrupted vCPU's
    /// round trip, unmapping and remapping the p2m entry; the copy costs `kernel.copy_page_4k`
    /// per 4 KiB frame), per memory-tag update, and per global TLB flush.
    pub host_remap: f64,
    pub tag_update: f64,
    pub global_flush: f64,
    /// TPT: the guest's notification of a move, and per devirt entry it rewrites.
    pub remap_notify: f64,
    pub devirt_fixup: f64,
}

/// Costs of the kernel's own work, in cycles.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSection {
    /// An anonymous page fault: entry, handling, exit (page zeroing separate).
    pub page_fault: f64,
    /// Zeroing one 4 KiB page.
    pub clear_page_4k: f64,
    /// Copying one 4 KiB page.
    pub copy_page_4k: f64,
    /// A copy-on-write fault beyond a page fault and the copy.
    pub cow_fault: f64,
    /// fork (with the child's exit and the parent's wait), and per copied leaf entry.
    pub fork: f64,
    pub fork_per_pte: f64,
    /// exec, beyond the faults of the new image.
    pub exec: f64,
    pub context_switch: f64,
    /// Entry and exit of a memory system call (munmap, mprotect, madvise).
    pub syscall: f64,
    /// Whether the kernel tags address spaces with PCIDs (no TLB flush on context switch).
    pub pcid: bool,
}

impl Profile {
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

    /// Parse and validate profile text; `origin` names it in errors (a file path or name).
    pub fn from_toml(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        let profile: Profile = toml::from_str(text).map_err(|e| ProfileError::Parse {
            origin: origin.to_string(),
            message: e.message().to_string()
                + &e.span()
                    .map(|s| format!(" (at byte {})", s.start))
                    .unwrap_or_default(),
        })?;
        profile
            .validate()
            .map_err(|message| ProfileError::Invalid {
                origin: origin.to_string(),
                message,
            })?;
        Ok(profile)
    }

    /// Check every value once, so the simulator can trust them.
    pub fn validate(&self) -> Result<(), String> {
        let m = &self.machine;
        if !(4..=5).contains(&m.paging_levels) {
            return Err(format!(
                "machine.paging_levels = {} (valid: 4 or 5)",
                m.paging_levels
            ));
        }
        if !(m.frequency_ghz > 0.0 && m.frequency_ghz < 20.0) {
            return Err(format!(
                "machine.frequency_ghz = {} must be in (0, 20)",
                m.frequency_ghz
            ));
        }
        if m.host_memory < (64 << 20) || m.host_memory % (1 << 30) != 0 {
            return Err("machine.host_memory must be a whole number of GiB (e.g. \"64G\")".into());
        }
        if m.guest_memory == 0 || m.guest_memory % (1 << 30) != 0 || m.guest_memory > m.host_memory
        {
            return Err(
                "machine.guest_memory must be a whole number of GiB, at most host_memory".into(),
            );
        }
        let positive = [
            ("core.ipc", self.core.ipc),
            ("core.mlp", self.core.mlp),
            ("core.page_walkers", self.core.page_walkers),
        ];
        for (name, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name} = {v} must be a positive number"));
            }
        }
        let non_negative = [
            ("latency.l1d", self.latency.l1d),
            ("latency.l2", self.latency.l2),
            ("latency.llc", self.latency.llc),
            ("latency.dram_ns", self.latency.dram_ns),
            ("latency.stlb_hit", self.latency.stlb_hit),
            ("virt.ept_violation", self.virt.ept_violation),
            ("virt.write_protect", self.virt.write_protect),
            ("virt.shadow_fault", self.virt.shadow_fault),
            ("virt.pf_reflect", self.virt.pf_reflect),
            ("virt.cr3_load", self.virt.cr3_load),
            ("virt.invlpg", self.virt.invlpg),
            ("virt.tpt_switch", self.virt.tpt_switch),
            ("virt.hypercall", self.virt.hypercall),
            ("virt.pv_bounce", self.virt.pv_bounce),
            ("virt.host_remap", self.virt.host_remap),
            ("virt.tag_update", self.virt.tag_update),
            ("virt.global_flush", self.virt.global_flush),
            ("virt.remap_notify", self.virt.remap_notify),
            ("virt.devirt_fixup", self.virt.devirt_fixup),
            ("tags.per_fill", self.tags.per_fill),
            ("kernel.page_fault", self.kernel.page_fault),
            ("kernel.clear_page_4k", self.kernel.clear_page_4k),
            ("kernel.copy_page_4k", self.kernel.copy_page_4k),
            ("kernel.cow_fault", self.kernel.cow_fault),
            ("kernel.fork", self.kernel.fork),
            ("kernel.fork_per_pte", self.kernel.fork_per_pte),
            ("kernel.exec", self.kernel.exec),
            ("kernel.context_switch", self.kernel.context_switch),
            ("kernel.syscall", self.kernel.syscall),
        ];
        for (name, v) in non_negative {
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!("{name} = {v} must be a non-negative number"));
            }
        }
        self.tlb.validate()?;
        self.memory.validate()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_profiles_load() {
        for (name, _) in BUILTIN {
            let p = Profile::builtin(name).unwrap();
            assert_eq!(p.machine.name, *name);
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
        let text = BUILTIN[0].1.replace("[core]", "[core]\nturbo = true");
        let err = Profile::from_toml(&text, "test.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("test.toml") && err.contains("turbo"), "{err}");
    }

    #[test]
    fn invalid_values_are_named() {
        let text = BUILTIN[0]
            .1
            .replace("paging_levels = 4", "paging_levels = 3");
        let err = Profile::from_toml(&text, "x").unwrap_err().to_string();
        assert!(err.contains("paging_levels"), "{err}");
        let text = BUILTIN[0].1.replace("page_walkers = 2", "page_walkers = 0");
        assert!(Profile::from_toml(&text, "x")
            .unwrap_err()
            .to_string()
            .contains("core.page_walkers"));
    }
}
