//! Means and their confidence intervals: what the engine reports over a sample's windows
//! and the lab over seeds.

/// Confidence level of the reported intervals.
pub const CONFIDENCE: f64 = 0.95;

/// The mean of `xs` (0 for none).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// A mean and the half-width of its confidence interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeanCi {
    /// Mean of the values.
    pub mean: f64,
    /// Half-width of the interval: it is `mean ± half_width`.
    pub half_width: f64,
}

/// The mean of `xs` and the half-width of its two-sided [`CONFIDENCE`] interval, Student t
/// with `len - 1` degrees of freedom; `None` for fewer than two values.
pub fn mean_ci(xs: &[f64]) -> Option<MeanCi> {
    if xs.len() < 2 {
        return None;
    }
    let n = xs.len() as f64;
    let m = mean(xs);
    let var = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    Some(MeanCi {
        mean: m,
        half_width: t_975(xs.len() as u64 - 1) * (var / n).sqrt(),
    })
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (two-sided 95%): the
/// standard table to 30, then the normal quantile's value at infinity, slightly small for
/// df > 30 (by under 4%).
pub fn t_975(df: u64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df as usize - 1],
        _ => 1.960,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_students_t_over_the_windows() {
        // Mean 3, sample variance 2.5, n = 5: half-width 2.776 * sqrt(2.5 / 5).
        let ci = mean_ci(&[1.0, 2.0, 3.0, 4.0, 5.0]).expect("five values");
        assert_eq!(ci.mean, 3.0);
        assert!((ci.half_width - 2.776 * 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(mean_ci(&[7.0; 10]).map(|c| c.half_width), Some(0.0));
        assert_eq!(mean_ci(&[1.0]), None);
        assert_eq!(t_975(9), 2.262);
        assert_eq!(t_975(1000), 1.960);
    }
}
