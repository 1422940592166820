//! The human-readable report: one row per scheme, ratios against the first row.

use std::fmt::Write;
use vmlab_core::stats::{LevelCounts, RunReport};

pub fn render(runs: &[RunReport]) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    let _ = writeln!(out, "workload  {}", first.workload);
    let _ = writeln!(
        out,
        "machine   {}, guest pages {}, host pages {}, seed {}",
        first.machine,
        first.guest_pages,
        host_pages(runs),
        first.seed
    );
    if first.accesses_total == 0 {
        let _ = writeln!(out, "sample    no data accesses to sample: every operation of the measured phase simulated\n");
    } else {
        let _ = writeln!(
            out,
            "sample    {} of {} measured accesses{} after {} warm-up accesses\n",
            first.accesses_simulated,
            first.accesses_total,
            if first.extrapolated {
                " (time extrapolated)"
            } else {
                ""
            },
            first.accesses_warmup
        );
    }
    let forks = runs.iter().any(|r| r.forks > 0);
    let w = runs
        .iter()
        .map(|r| r.paging.len())
        .max()
        .unwrap_or(6)
        .max(8);
    let _ = write!(
        out,
        "{:<w$} {:>10} {:>7} {:>9} {:>10} {:>9} {:>20} {:>9} {:>7}",
        "paging",
        "time (s)",
        "ratio",
        "ns/acc",
        "miss/kacc",
        "refs/walk",
        "walk refs l2/llc/mem",
        "exits",
        "bound"
    );
    let _ = writeln!(
        out,
        "{}",
        if forks {
            format!(" {:>10}", "us/fork")
        } else {
            String::new()
        }
    );
    for r in runs {
        // Per-access columns mean nothing for a workload of OS operations only.
        let (ns, misses) = if r.accesses_simulated == 0 {
            ("-".to_string(), "-".to_string())
        } else {
            let kacc = r.accesses_simulated as f64 / 1000.0;
            (
                format!("{:.2}", r.ns_per_access),
                format!("{:.1}", r.tlb_misses as f64 / kacc),
            )
        };
        let _ = write!(
            out,
            "{:<w$} {:>10.3} {:>7.2} {:>9} {:>10} {:>9.2} {:>20} {:>9} {:>7}",
            r.paging,
            r.seconds,
            r.seconds / first.seconds.max(f64::MIN_POSITIVE),
            ns,
            misses,
            r.walk_refs_per_walk,
            served_shares(&r.walk_refs_served),
            r.vm_exits,
            r.cycles_breakdown.bound
        );
        let _ = writeln!(
            out,
            "{}",
            if forks {
                format!(" {:>10.1}", r.us_per_fork.unwrap_or(0.0))
            } else {
                String::new()
            }
        );
    }
    let _ = writeln!(
        out,
        "\nratio: time over the first row. miss/kacc: TLB misses per 1000 accesses. walk refs l2/llc/mem: percent of\n\
         walk references served by L2, LLC and DRAM (the rest hit L1). bound: what limits the run (compute, data\n\
         misses or walks for a loop of accesses; kernel work or hypervisor exits when they dominate).\n\
         Set-up (first touch) is not timed; --json has every counter, including set-up faults and exits."
    );
    out
}

/// The host page size each run used: one size if the virtualized runs share it ("2m, none
/// under native"), else each run's.
fn host_pages(runs: &[RunReport]) -> String {
    let native = runs.iter().any(|r| r.host_pages == "-");
    let mut sizes: Vec<&str> = runs
        .iter()
        .map(|r| r.host_pages.as_str())
        .filter(|h| *h != "-")
        .collect();
    sizes.dedup();
    match sizes.as_slice() {
        [] => "none (native)".to_string(),
        [one] if native => format!("{one} (none under native)"),
        [one] => one.to_string(),
        _ => runs
            .iter()
            .map(|r| format!("{} {}", r.paging, r.host_pages))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn served_shares(c: &LevelCounts) -> String {
    let total = (c.l1 + c.l2 + c.llc + c.dram).max(1) as f64;
    format!(
        "{:.0}/{:.0}/{:.0}%",
        100.0 * c.l2 as f64 / total,
        100.0 * c.llc as f64 / total,
        100.0 * c.dram as f64 / total
    )
}
