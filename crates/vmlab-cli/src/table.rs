//! The human-readable report: one row per scheme, ratios against the first row.

use std::fmt::Write;
use vmlab_core::stats::seeds::SeedSummary;
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
    let _ = writeln!(out, "sample    {}\n", sample_line(first));
    let forks = runs.iter().any(|r| r.forks > 0);
    let w = runs
        .iter()
        .map(|r| r.paging.len())
        .max()
        .unwrap_or(6)
        .max(8);
    let times: Vec<String> = runs.iter().map(time_cell).collect();
    let tw = times
        .iter()
        .map(|t| t.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    let _ = write!(
        out,
        "{:<w$} {:>tw$} {:>7} {:>9} {:>10} {:>9} {:>20} {:>9} {:>7} {:>10}",
        "paging",
        "time (s)",
        "ratio",
        "ns/acc",
        "miss/kacc",
        "refs/walk",
        "walk refs l2/llc/mem",
        "exits",
        "bound",
        "warm-up"
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
    for (r, time) in runs.iter().zip(&times) {
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
            "{:<w$} {:>tw$} {:>7.2} {:>9} {:>10} {:>9.2} {:>20} {:>9} {:>7} {:>10}",
            r.paging,
            time,
            r.seconds / first.seconds.max(f64::MIN_POSITIVE),
            ns,
            misses,
            r.walk_refs_per_walk,
            served_shares(&r.walk_refs_served),
            r.vm_exits,
            r.cycles_breakdown.bound,
            warmup_cell(r)
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
        "\ntime: the model's time, ± the half-width of a 95% Student-t interval over the sample's windows.\n\
         warm-up: accesses run before measuring, and why the warm-up stopped (converged: steady within the\n\
         tolerance; cap: reached --warmup; end: the workload left no more before the sample; fixed; none: the\n\
         whole workload was simulated from cold).\n\
         ratio: time over the first row. miss/kacc: TLB misses per 1000 accesses. walk refs l2/llc/mem: percent of\n\
         walk references served by L2, LLC and DRAM (the rest hit L1). bound: what limits the run (compute, data\n\
         misses or walks for a loop of accesses; kernel work or hypervisor exits when they dominate).\n\
         Set-up (first touch) is not timed; --json has every counter, including set-up faults and exits."
    );
    out
}

/// The summary of `vmlab run --seeds N`: per scheme, the mean time over the seeds with its
/// interval, the ratio of means, the largest interval of a run over its own windows, and
/// every seed's time.
pub fn render_seeds(across: &[SeedSummary]) -> String {
    let mut out = String::new();
    let Some(first) = across.first() else {
        return out;
    };
    let seeds: Vec<String> = first.seeds.iter().map(|s| s.to_string()).collect();
    let _ = writeln!(
        out,
        "
across {} seeds ({}):
",
        seeds.len(),
        seeds.join(", ")
    );
    let w = across
        .iter()
        .map(|s| s.paging.len())
        .max()
        .unwrap_or(6)
        .max(8);
    let means: Vec<String> = across
        .iter()
        .map(|s| match s.seconds_ci {
            Some(ci) => vmlab_core::stats::format_ci(s.mean_seconds, ci, 3),
            None => format!("{:.3}", s.mean_seconds),
        })
        .collect();
    let mw = means
        .iter()
        .map(|m| m.chars().count())
        .max()
        .unwrap_or(0)
        .max(15);
    let _ = writeln!(
        out,
        "{:<w$} {:>mw$} {:>7} {:>12}  time per seed (s)",
        "paging", "mean time (s)", "ratio", "windows ±"
    );
    for (s, mean) in across.iter().zip(&means) {
        let windows = s
            .window_seconds_ci
            .iter()
            .flatten()
            .copied()
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        // Each seed's time to the decimal place of the mean's interval.
        let decimals = s
            .seconds_ci
            .filter(|ci| ci.is_finite() && *ci > 0.0)
            .map_or(3, |ci| {
                (1 - ci.log10().floor() as i64).clamp(0, 12) as usize
            });
        let each: Vec<String> = s
            .seconds
            .iter()
            .map(|t| format!("{t:.decimals$}"))
            .collect();
        let _ = writeln!(
            out,
            "{:<w$} {:>mw$} {:>7.2} {:>12}  {}",
            s.paging,
            mean,
            s.mean_seconds / first.mean_seconds.max(f64::MIN_POSITIVE),
            windows.map_or("-".to_string(), two_digits),
            each.join(" ")
        );
    }
    let _ = writeln!(
        out,
        "\nmean time: over the seeds, ± the half-width of a 95% Student-t interval over them (how much the\n\
         result depends on the seed's random choices). windows ±: the largest of the runs' own intervals\n\
         over their sample's windows. ratio: mean time over the first row's."
    );
    out
}

/// `x` to two significant digits (`0.0029`, `0.20`, `31`); zero as `0`.
fn two_digits(x: f64) -> String {
    if !(x.is_finite() && x > 0.0) {
        return "0".to_string();
    }
    let decimals = (1 - x.log10().floor() as i64).clamp(0, 12) as usize;
    format!("{x:.decimals$}")
}

/// What the run's sample was, from its report: the same for every scheme of a `run`.
fn sample_line(r: &RunReport) -> String {
    if r.accesses_total == 0 {
        return "no data accesses to sample: every operation of the measured phase simulated"
            .to_string();
    }
    let s = &r.sample;
    if s.windows == 0 {
        return format!(
            "all {} measured accesses simulated from cold (the sample covers the workload: no warm-up)",
            r.accesses_total
        );
    }
    if s.warmup_end == "recorded" {
        return format!(
            "{} of {} references in the recording's {} windows (time extrapolated; faults and exits over the whole run)",
            r.accesses_simulated, r.accesses_total, s.windows
        );
    }
    let warm = match s.tolerance {
        Some(t) => format!(
            "a warm-up to steady state (tolerance {}%, at most {} accesses)",
            t * 100.0,
            s.warmup_cap
        ),
        None => format!("a fixed warm-up of {} accesses", s.warmup_cap),
    };
    format!(
        "{} of {} measured accesses in {} windows{}, after {warm}",
        r.accesses_simulated,
        r.accesses_total,
        s.windows,
        if r.extrapolated {
            " (time extrapolated)"
        } else {
            ""
        }
    )
}

/// `35.734 ± 0.003`, or the time alone without an interval.
fn time_cell(r: &RunReport) -> String {
    match r.sample.seconds_ci {
        Some(ci) => vmlab_core::stats::format_ci(r.seconds, ci, 3),
        None => format!("{:.3}", r.seconds),
    }
}

/// The warm-up used, in millions of accesses, and why it stopped.
pub fn warmup_cell(r: &RunReport) -> String {
    let why = match r.sample.warmup_end.as_str() {
        "converged" => "",
        "workload" => " end",
        "none" => return "none".to_string(),
        other => return format!("{}M {other}", millions(r.accesses_warmup)),
    };
    format!("{}M{why}", millions(r.accesses_warmup))
}

/// A count in millions: `14`, `0.5`, `0.001`.
fn millions(n: u64) -> String {
    let m = n as f64 / 1e6;
    if n.is_multiple_of(1_000_000) {
        format!("{m:.0}")
    } else if n.is_multiple_of(100_000) {
        format!("{m:.1}")
    } else {
        format!("{m}")
    }
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
