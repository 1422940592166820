//! Replication across seeds: the same run under several seeds, summed up per scheme as the
//! mean time with a Student-t interval over the seeds, beside each run's own interval over
//! its sample's windows.
//!
//! The two intervals answer different questions. A run's interval over its windows says how
//! much the cost moved within that run's sample; the interval over seeds says how much the
//! result depends on the random choices the seed makes (the workload's random indices, host
//! fragmentation), and so how much of a difference between schemes is the seed's.

use super::ci::{mean_ci, CONFIDENCE};
use crate::stats::RunReport;
use serde::{Deserialize, Serialize};

/// One scheme's runs over several seeds, summed up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeedSummary {
    /// The scheme.
    pub paging: String,
    /// The seeds, in run order.
    pub seeds: Vec<u64>,
    /// Each seed's modeled time (seconds).
    pub seconds: Vec<f64>,
    /// The mean of `seconds`.
    pub mean_seconds: f64,
    /// Half-width of the [`CONFIDENCE`] Student-t interval of the mean over the seeds (n - 1
    /// degrees of freedom); `None` with a single seed.
    pub seconds_ci: Option<f64>,
    /// Each seed's cycles per access (0 for a workload without accesses).
    pub cycles_per_access: Vec<f64>,
    /// The mean of `cycles_per_access`.
    pub mean_cycles_per_access: f64,
    /// Half-width of the interval of `mean_cycles_per_access` over the seeds.
    pub cycles_per_access_ci: Option<f64>,
    /// Each seed's own interval over its sample's windows (seconds), when it has one.
    pub window_seconds_ci: Vec<Option<f64>>,
    /// The confidence of both kinds of interval (0.95).
    pub confidence: f64,
}

/// Sums `runs` up per scheme, in the order each scheme first appears; runs of one scheme
/// are taken in order as its seeds.
pub fn summarize(runs: &[RunReport]) -> Vec<SeedSummary> {
    let mut order: Vec<&str> = Vec::new();
    for r in runs {
        if !order.contains(&r.paging.as_str()) {
            order.push(&r.paging);
        }
    }
    order
        .into_iter()
        .map(|paging| {
            let of: Vec<&RunReport> = runs.iter().filter(|r| r.paging == paging).collect();
            let seconds: Vec<f64> = of.iter().map(|r| r.seconds).collect();
            let cpa: Vec<f64> = of.iter().map(|r| r.cycles_per_access).collect();
            let (mean_seconds, seconds_ci) = mean_and_ci(&seconds);
            let (mean_cycles_per_access, cycles_per_access_ci) = mean_and_ci(&cpa);
            SeedSummary {
                paging: paging.to_string(),
                seeds: of.iter().map(|r| r.seed).collect(),
                seconds,
                mean_seconds,
                seconds_ci,
                cycles_per_access: cpa,
                mean_cycles_per_access,
                cycles_per_access_ci,
                window_seconds_ci: of.iter().map(|r| r.sample.seconds_ci).collect(),
                confidence: CONFIDENCE,
            }
        })
        .collect()
}

fn mean_and_ci(xs: &[f64]) -> (f64, Option<f64>) {
    match mean_ci(xs) {
        Some(m) => (m.mean, Some(m.half_width)),
        None => (xs.first().copied().unwrap_or(0.0), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(paging: &str, seed: u64, seconds: f64, ci: Option<f64>) -> RunReport {
        let mut r = RunReport {
            paging: paging.to_string(),
            seed,
            seconds,
            cycles_per_access: seconds * 2.0,
            ..RunReport::default()
        };
        r.sample.seconds_ci = ci;
        r
    }

    #[test]
    fn the_interval_over_seeds_is_students_t_per_scheme() {
        let runs = [
            run("native", 1, 10.0, Some(0.1)),
            run("native", 2, 12.0, Some(0.2)),
            run("native", 3, 14.0, None),
            run("nested", 1, 30.0, Some(0.3)),
            run("nested", 2, 30.0, Some(0.3)),
            run("nested", 3, 30.0, Some(0.3)),
        ];
        let s = summarize(&runs);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].paging, "native");
        assert_eq!(s[0].seeds, [1, 2, 3]);
        assert_eq!(s[0].seconds, [10.0, 12.0, 14.0]);
        assert_eq!(s[0].mean_seconds, 12.0);
        // Sample standard deviation 2, standard error 2/sqrt(3), t(2 df) = 4.303.
        let half = 4.303 * 2.0 / 3f64.sqrt();
        assert!((s[0].seconds_ci.unwrap() - half).abs() < 1e-12);
        assert_eq!(s[0].mean_cycles_per_access, 24.0);
        assert!((s[0].cycles_per_access_ci.unwrap() - 2.0 * half).abs() < 1e-12);
        assert_eq!(s[0].window_seconds_ci, [Some(0.1), Some(0.2), None]);
        assert_eq!(s[1].mean_seconds, 30.0);
        assert_eq!(s[1].seconds_ci, Some(0.0));
        assert_eq!(s[1].confidence, 0.95);
    }

    #[test]
    fn one_seed_has_no_interval_over_seeds() {
        let s = summarize(&[run("pv", 7, 5.0, Some(0.01))]);
        assert_eq!(s[0].seeds, [7]);
        assert_eq!(s[0].mean_seconds, 5.0);
        assert_eq!(s[0].seconds_ci, None);
        assert_eq!(s[0].cycles_per_access_ci, None);
        assert!(summarize(&[]).is_empty());
    }
}
