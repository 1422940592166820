//! How a run samples its workload: warm up until the cost per access stops moving, then
//! measure in equal windows and give the mean with a Student-t confidence interval.
//!
//! The engine runs the warm-up in windows of [`WARMUP_WINDOW`] accesses and, after each, asks
//! [`Steady::converged`] whether the series of per-window costs (cycles per access, from the
//! machine profile's cost model applied to the window's counter deltas) has settled: the mean
//! of the last [`BLOCK`] windows must be within `tolerance` (relative) of the mean of the
//! [`BLOCK`] windows before. A cap bounds the warm-up, and so does the workload: the warm-up
//! never eats into the measured sample. The sample is then [`WINDOWS`] windows; their costs
//! give the confidence interval (`stats::ci::mean_ci`). docs/model.md explains the choice of numbers.

use crate::stats::ci::{mean, t_975};
use serde::{Deserialize, Serialize};

/// Measured windows per run: the sample is cut into this many equal windows.
pub const WINDOWS: u64 = 10;

/// Accesses per warm-up window. Fixed, not a fraction of the sample, so that the tolerance
/// means one thing for every sample size: the largest relative change of the cost between
/// two consecutive spans of `BLOCK * WARMUP_WINDOW` (2M) accesses.
pub const WARMUP_WINDOW: u64 = 1_000_000;

/// Windows per block in the steady-state test (two blocks are compared).
pub const BLOCK: usize = 2;

/// Default relative tolerance of the steady-state test (full runs): 0.1%.
pub const DEFAULT_TOLERANCE: f64 = 0.001;

/// Relative tolerance of `--quick` runs: 0.2%.
pub const QUICK_TOLERANCE: f64 = 0.002;

/// The steady-state test of the warm-up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Steady {
    /// Largest relative change between the means of the last two blocks of windows.
    pub tolerance: f64,
}

impl Steady {
    /// True when the last [`BLOCK`] costs of `series` average within `tolerance` (relative) of
    /// the [`BLOCK`] before them. Fewer than `2 * BLOCK` windows are never converged.
    pub fn converged(&self, series: &[f64]) -> bool {
        let Some(start) = series.len().checked_sub(2 * BLOCK) else {
            return false;
        };
        let before = mean(&series[start..start + BLOCK]);
        let last = mean(&series[start + BLOCK..]);
        (last - before).abs() <= self.tolerance * before.abs()
    }

    /// True when the measured window costs `xs` still move: the least-squares line through
    /// them drifts by more than `tolerance` (relative to their mean) over the sample, and its
    /// slope is significant (Student t on the slope, two-sided 95%, `len - 2` degrees of
    /// freedom). Noise alone rarely passes both; a cost still falling after a plateau does.
    pub fn trending(&self, xs: &[f64]) -> bool {
        if xs.len() < 3 {
            return false;
        }
        let n = xs.len() as f64;
        let (xm, ym) = ((n - 1.0) / 2.0, mean(xs));
        let sxx: f64 = (0..xs.len()).map(|i| (i as f64 - xm).powi(2)).sum();
        let sxy: f64 = xs
            .iter()
            .enumerate()
            .map(|(i, y)| (i as f64 - xm) * (y - ym))
            .sum();
        let slope = sxy / sxx;
        if (slope * (n - 1.0)).abs() <= self.tolerance * ym.abs() {
            return false;
        }
        let residual: f64 = xs
            .iter()
            .enumerate()
            .map(|(i, y)| (y - ym - slope * (i as f64 - xm)).powi(2))
            .sum();
        let se = (residual / (n - 2.0) / sxx).sqrt();
        se == 0.0 || (slope / se).abs() > t_975(xs.len() as u64 - 2)
    }
}

/// Why the warm-up ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmupEnd {
    /// The steady-state test passed.
    Converged,
    /// The cap (`--warmup`) was reached before the test passed.
    Cap,
    /// The workload had no more accesses to spare before the measured sample.
    Workload,
    /// A fixed warm-up (`--fixed-warmup`) ran in full.
    Fixed,
    /// No warm-up: the whole workload was simulated, cold, and measured.
    None,
}

impl WarmupEnd {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            WarmupEnd::Converged => "converged",
            WarmupEnd::Cap => "cap",
            WarmupEnd::Workload => "workload",
            WarmupEnd::Fixed => "fixed",
            WarmupEnd::None => "none",
        }
    }
}

/// How a run samples: decided from the configuration and the workload's length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SamplePlan {
    /// Simulate every access and operation of the measured phase, with no warm-up (the
    /// sample would cover the workload, or the user asked for everything).
    Whole,
    /// Warm up in windows of `warmup_window` accesses, at most `cap` in all (steady-state
    /// test `steady`, or none for a fixed warm-up), then measure `sample` accesses in
    /// [`WINDOWS`] windows of about `window` accesses.
    Windowed {
        /// Accesses per warm-up window ([`WARMUP_WINDOW`]).
        warmup_window: u64,
        /// Accesses per measured window: `sample` / [`WINDOWS`], rounded up.
        window: u64,
        /// Most warm-up accesses: the requested cap, or less if the workload leaves less
        /// beside the sample.
        cap: u64,
        /// The cap was lowered to leave the sample its accesses.
        cap_by_workload: bool,
        /// The steady-state test that may end the warm-up early; `None` for a fixed warm-up.
        steady: Option<Steady>,
        /// Accesses measured.
        sample: u64,
    },
}

/// An error in the requested sample (a count that overflows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampleError(pub String);

/// The sample of a workload with `total` measured accesses: `accesses` measured (0: all),
/// after a warm-up capped at `warmup`, to steady state within `tolerance` unless `fixed`.
pub fn plan(
    total: u64,
    accesses: u64,
    warmup: u64,
    tolerance: f64,
    fixed: bool,
) -> Result<SamplePlan, SampleError> {
    validate(accesses, warmup, tolerance)?;
    if accesses == 0 || accesses >= total {
        return Ok(SamplePlan::Whole);
    }
    let room = total - accesses;
    Ok(SamplePlan::Windowed {
        warmup_window: WARMUP_WINDOW,
        window: accesses.div_ceil(WINDOWS),
        cap: warmup.min(room),
        cap_by_workload: warmup > room,
        steady: (!fixed).then_some(Steady { tolerance }),
        sample: accesses,
    })
}

/// Checks the user's sample: counts whose sum fits 64 bits, a tolerance of at least 0.
pub fn validate(accesses: u64, warmup: u64, tolerance: f64) -> Result<(), SampleError> {
    if warmup.checked_add(accesses).is_none() {
        return Err(SampleError(format!(
            "warm-up {warmup} plus {accesses} measured accesses overflows a 64-bit count; use a smaller --warmup or --accesses"
        )));
    }
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(SampleError(format!(
            "tolerance {tolerance} must be a number at least 0 (e.g. 0.005 for 0.5%)"
        )));
    }
    Ok(())
}

/// The size of measured window `i` of `WINDOWS` when `sample` accesses are cut into equal
/// windows (the first ones one access larger when it does not divide).
pub fn window_len(sample: u64, i: u64) -> u64 {
    let n = sample.clamp(1, WINDOWS);
    if i >= n {
        return 0;
    }
    sample / n + u64::from(i < sample % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the warm-up loop the engine runs over a hand-built series of window costs: the
    /// windows it used and why it stopped.
    fn warm(series: &[f64], steady: Steady, cap_windows: usize) -> (usize, WarmupEnd) {
        let mut seen = Vec::new();
        for &c in series.iter().take(cap_windows) {
            seen.push(c);
            if steady.converged(&seen) {
                return (seen.len(), WarmupEnd::Converged);
            }
        }
        (seen.len(), WarmupEnd::Cap)
    }

    #[test]
    fn a_decaying_series_converges_once_two_blocks_agree() {
        // 100, 55, 32.5, ... settles towards 10: the two blocks ending at window n differ by
        // 50.625 * 0.5^(n-4), first under 1% of about 10.1 at n = 13 (0.099; 0.198 at n = 12).
        let series: Vec<f64> = (0..20).map(|i| 10.0 + 90.0 * 0.5f64.powi(i)).collect();
        let steady = Steady { tolerance: 0.01 };
        let (used, end) = warm(&series, steady, 20);
        assert_eq!(end, WarmupEnd::Converged);
        assert_eq!(used, 13);
    }

    #[test]
    fn a_plateau_before_a_drop_fools_a_loose_tolerance_but_not_the_default() {
        // Nested paging's cycles per 1M-access window on sysbench-mem 4G rnd (docs/model.md):
        // a plateau near 84, then a drop to 70 after 6M accesses.
        let nested = [
            85.56, 84.63, 84.16, 84.11, 84.05, 83.72, 76.17, 71.69, 70.41, 70.03, 69.92, 69.88,
            69.88, 69.88, 69.88, 69.88,
        ];
        let at = |tolerance| warm(&nested, Steady { tolerance }, 16);
        assert_eq!(
            at(0.005),
            (5, WarmupEnd::Converged),
            "0.5% stops on the plateau"
        );
        assert_eq!(at(QUICK_TOLERANCE), (13, WarmupEnd::Converged));
        assert_eq!(at(DEFAULT_TOLERANCE), (14, WarmupEnd::Converged));
    }

    #[test]
    fn a_sample_still_falling_after_a_plateau_is_trending_and_noise_is_not() {
        // TPT with per-frame tag checks: a warm-up plateau near 108 passed the test, then the
        // sample's windows fell (docs/model.md).
        let falling = [
            105.16, 93.67, 87.29, 84.86, 84.0, 83.81, 83.72, 83.66, 83.66, 83.59,
        ];
        let steady = Steady {
            tolerance: DEFAULT_TOLERANCE,
        };
        assert!(steady.trending(&falling));
        // Nested paging's steady windows: 0.04% apart, no trend.
        let flat = [
            69.89, 69.88, 69.88, 69.88, 69.87, 69.89, 69.87, 69.88, 69.89, 69.86,
        ];
        assert!(!steady.trending(&flat));
        // Alternating noise of 1% has no significant slope.
        let noise = [
            100.0, 101.0, 100.0, 101.0, 100.0, 101.0, 100.0, 101.0, 100.0, 101.0,
        ];
        assert!(!steady.trending(&noise));
        // An exact rise of 0.05% per window drifts 0.45%: a trend, with no noise at all.
        let rise: Vec<f64> = (0..10).map(|i| 100.0 + 0.05 * i as f64).collect();
        assert!(steady.trending(&rise));
        // The same rise within a looser tolerance is steady enough.
        assert!(!Steady { tolerance: 0.005 }.trending(&rise));
    }

    #[test]
    fn a_flat_series_converges_after_two_blocks() {
        let steady = Steady { tolerance: 0.0 };
        assert!(!steady.converged(&[5.0; 3]));
        assert!(steady.converged(&[5.0; 4]));
    }

    #[test]
    fn a_series_that_keeps_moving_hits_the_cap() {
        // Rising 3% per window never settles within 1%.
        let series: Vec<f64> = (0..50).map(|i| 1.03f64.powi(i)).collect();
        assert_eq!(
            warm(&series, Steady { tolerance: 0.01 }, 30),
            (30, WarmupEnd::Cap)
        );
    }

    #[test]
    fn noise_above_the_tolerance_is_not_steady_and_below_it_is() {
        let series = [100.0, 104.0, 100.0, 104.0, 96.0, 100.0];
        assert!(!Steady { tolerance: 0.01 }.converged(&series[..6]));
        assert!(Steady { tolerance: 0.05 }.converged(&series[..6]));
    }

    #[test]
    fn a_workload_shorter_than_the_sample_is_simulated_whole() {
        assert_eq!(plan(1000, 1000, 500, 0.01, false), Ok(SamplePlan::Whole));
        assert_eq!(plan(1000, 5000, 500, 0.01, false), Ok(SamplePlan::Whole));
        assert_eq!(plan(1000, 0, 500, 0.01, false), Ok(SamplePlan::Whole));
    }

    #[test]
    fn the_warmup_cap_leaves_the_sample_its_accesses() {
        assert_eq!(
            plan(1000, 600, 2000, 0.01, false),
            Ok(SamplePlan::Windowed {
                warmup_window: WARMUP_WINDOW,
                window: 60,
                cap: 400,
                cap_by_workload: true,
                steady: Some(Steady { tolerance: 0.01 }),
                sample: 600,
            })
        );
        assert_eq!(
            plan(10_000, 100, 50, 0.01, true),
            Ok(SamplePlan::Windowed {
                warmup_window: WARMUP_WINDOW,
                window: 10,
                cap: 50,
                cap_by_workload: false,
                steady: None,
                sample: 100,
            })
        );
    }

    #[test]
    fn counts_that_overflow_are_errors() {
        let e = plan(u64::MAX, 10, u64::MAX - 9, 0.01, false).expect_err("overflows");
        assert!(e.0.contains("overflows"), "{e:?}");
        assert!(plan(u64::MAX, 10, u64::MAX - 10, 0.01, false).is_ok());
        assert!(plan(100, 10, 10, f64::NAN, false).is_err());
        assert!(plan(100, 10, 10, -0.1, false).is_err());
    }

    #[test]
    fn windows_cut_the_sample_evenly() {
        let lens: Vec<u64> = (0..WINDOWS).map(|i| window_len(105, i)).collect();
        assert_eq!(lens, [11, 11, 11, 11, 11, 10, 10, 10, 10, 10]);
        let lens: Vec<u64> = (0..WINDOWS).map(|i| window_len(3, i)).collect();
        assert_eq!(lens, [1, 1, 1, 0, 0, 0, 0, 0, 0, 0]);
    }
}
