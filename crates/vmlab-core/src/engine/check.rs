//! Whether a run can be done as configured, decided before anything runs: the page sizes the
//! scheme can map, the schemes the workload needs, the memory its footprint needs, and counts
//! that fit 64 bits. A
//! front end checks every run of a command with [`check`] first, so a bad combination is an
//! error before the first scheme runs, not after; [`run`](super::run) checks again.

use super::RunConfig;
use crate::addr::PageSize;
use crate::scheme::Paging;
use crate::units::format_size;
use crate::workload::WorkloadConfig;

/// Memory a run needs besides its footprint: the kernel's own frames (the page tables, under
/// 1/256 of the footprint, come on top).
const KERNEL_RESERVE: u64 = 64 << 20;

/// Why `config` cannot run, in one line naming the problem and the choices, if it cannot.
pub fn check(config: &RunConfig) -> Result<(), String> {
    super::sampling::validate(config.accesses, config.warmup, config.tolerance).map_err(|e| e.0)?;
    if config.guest_pages == PageSize::Size1G {
        return Err("guest pages of 1G are not modeled (Linux THP maps 2M); use 4k or 2m".into());
    }
    let paging = config.paging;
    if let Some(why) = paging.unsupported_pages(config.guest_pages, config.host_pages) {
        let host = if paging.is_virtualized() {
            format!(" (--host-pages {})", config.host_pages.name())
        } else {
            String::new()
        };
        return Err(format!(
            "{why}{host}; use --guest-pages 4k or --host-pages {}",
            config.guest_pages.name()
        ));
    }
    if let Some(schemes) = schemes_needed(config.workload.config()) {
        if !schemes.contains(&paging) {
            let names: Vec<&str> = schemes.iter().map(|p| p.name()).collect();
            return Err(format!(
                "{} does not run under {}: it needs one of {}",
                config.workload.name(),
                paging.name(),
                names.join(", ")
            ));
        }
    }
    fits(config)
}

/// The schemes a workload can run under, when not all: the isolation probe rewrites the
/// guest-built host-physical tables (schemes whose traits say `guest_built_host_tables`);
/// host remapping needs a scheme that models it (`host_remap`).
pub fn schemes_needed(workload: &WorkloadConfig) -> Option<Vec<Paging>> {
    let needs: fn(crate::scheme::SchemeTraits) -> bool = match workload {
        WorkloadConfig::TptIsolationProbe(_) => |t| t.guest_built_host_tables,
        WorkloadConfig::HostRemap(_) => |t| t.host_remap,
        _ => return None,
    };
    Some(
        Paging::ALL
            .into_iter()
            .filter(|p| needs(p.traits()))
            .collect(),
    )
}

/// Whether the workload's footprint, its page tables and the kernel fit the memory the run
/// has: the VM's guest memory under a hypervisor, host memory natively.
fn fits(config: &RunConfig) -> Result<(), String> {
    let profile = &config.profile;
    let footprint = config.workload.footprint_bytes();
    let needed = footprint
        .checked_add(footprint / 256)
        .and_then(|n| n.checked_add(KERNEL_RESERVE));
    let (memory, what) = if config.paging.is_virtualized() {
        (profile.machine.guest_memory, "the VM's guest_memory")
    } else {
        (profile.machine.host_memory, "host_memory")
    };
    let limit = max_footprint(memory);
    if needed.is_none_or(|n| n > memory) {
        return Err(format!(
            "workload footprint {} does not fit {what} {} in profile '{}' (at most {} with its page tables and kernel); use a smaller workload or a profile with more memory",
            format_size(footprint),
            format_size(memory),
            profile.machine.name,
            format_size(limit),
        ));
    }
    Ok(())
}

/// The largest footprint, in whole MiB, that fits `memory` with its page tables and the
/// kernel.
pub fn max_footprint(memory: u64) -> u64 {
    let room = memory.saturating_sub(KERNEL_RESERVE);
    // f + f/256 <= room when f <= room * 256/257; rounding down keeps it so.
    let f = (u128::from(room) * 256 / 257) as u64;
    f & !((1 << 20) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::Profile;
    use crate::workload::WorkloadSpec;

    fn config(workload: &str, paging: Paging, guest: PageSize, host: PageSize) -> RunConfig {
        RunConfig {
            workload: WorkloadSpec::parse(workload).expect("valid spec"),
            paging,
            guest_pages: guest,
            host_pages: host,
            ..crate::lab::RunSpec::new("gups")
                .resolve()
                .expect("defaults resolve")
        }
    }

    const K4: PageSize = PageSize::Size4K;
    const M2: PageSize = PageSize::Size2M;

    #[test]
    fn guest_pages_larger_than_host_pages_fail_under_pv_and_tpt_only() {
        for p in [Paging::Pv, Paging::Tpt, Paging::TptPrototype] {
            let e = check(&config("gups:table=64M", p, M2, K4)).expect_err("2m on 4k");
            assert!(e.contains("--host-pages 2m"), "{e}");
        }
        for p in [Paging::Native, Paging::Nested, Paging::Shadow] {
            check(&config("gups:table=64M", p, M2, K4)).expect("runs");
        }
    }

    #[test]
    fn the_probe_and_host_remapping_need_their_schemes() {
        let probe = "tpt-isolation-probe:pages=8,probes=8";
        let remap = "host-remap:size=4M";
        for p in Paging::ALL {
            let ok = check(&config(probe, p, K4, K4)).is_ok();
            assert_eq!(
                ok,
                matches!(p, Paging::Pv | Paging::Tpt | Paging::TptPrototype),
                "{p:?}"
            );
            let ok = check(&config(remap, p, K4, K4)).is_ok();
            assert_eq!(ok, matches!(p, Paging::Nested | Paging::Tpt), "{p:?}");
        }
        let e = check(&config(remap, Paging::Shadow, K4, K4)).expect_err("shadow");
        assert_eq!(
            e,
            "host-remap does not run under shadow: it needs one of nested, tpt"
        );
    }

    #[test]
    fn the_footprint_limit_is_the_largest_that_fits() {
        let profile = Profile::builtin("skylake").expect("built-in");
        let guest = profile.machine.guest_memory;
        let limit = max_footprint(guest);
        assert_eq!(limit % (1 << 20), 0);
        let fits = |bytes: u64| {
            check(&config(
                &format!("gups:table={}", format_size(bytes)),
                Paging::Nested,
                K4,
                K4,
            ))
        };
        fits(limit).expect("the limit fits");
        let e = fits(limit + (1 << 20)).expect_err("a MiB more does not");
        assert!(
            e.contains(&format!("at most {}", format_size(limit))),
            "{e}"
        );
        // The largest size a spec takes is refused, naming the limit.
        let e = check(&config("gups:table=64T", Paging::Native, K4, K4)).expect_err("64T");
        assert!(e.contains("does not fit host_memory 64G"), "{e}");
        assert!(
            e.contains(&format!("at most {}", format_size(max_footprint(64 << 30)))),
            "{e}"
        );
    }
}
