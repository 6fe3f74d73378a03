//! Timing helpers: run a closure and keep its duration, medians, and the units every report
//! prints (seconds, GB/s with 1 GB = 10^9 bytes).

use crate::error::Result;
use std::time::{Duration, Instant};

/// Runs `work` and returns its result and how long it took.
pub fn timed<R>(work: impl FnOnce() -> Result<R>) -> Result<(R, Duration)> {
    let start = Instant::now();
    let result = work()?;
    Ok((result, start.elapsed()))
}

/// Median of `durations` in seconds (the mean of the two middle ones for an even count).
///
/// REQUIRES: `durations` is not empty.
pub fn median_seconds(durations: &[Duration]) -> f64 {
    assert!(!durations.is_empty(), "median of no measurement");
    let mut seconds: Vec<f64> = durations.iter().map(Duration::as_secs_f64).collect();
    seconds.sort_by(f64::total_cmp);
    let middle = seconds.len() / 2;
    if seconds.len() % 2 == 1 { seconds[middle] } else { (seconds[middle - 1] + seconds[middle]) / 2.0 }
}

/// Throughput in GB/s (10^9 bytes per second); 0 for a zero duration.
pub fn gigabytes_per_second(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 { bytes as f64 / seconds / 1e9 } else { 0.0 }
}

/// `numerator / denominator`, or NaN when the denominator is not positive: a broken figure
/// must not look like a real one (NaN prints as `NaN` and is `null` in the JSON).
pub fn ratio(numerator: f64, denominator: f64) -> f64 {
    if denominator > 0.0 { numerator / denominator } else { f64::NAN }
}

/// Seconds as printed in reports.
pub fn format_seconds(seconds: f64) -> String {
    if seconds < 0.01 { format!("{:.3} ms", seconds * 1e3) } else { format!("{seconds:.3} s") }
}

/// Sizes as printed in reports.
pub fn format_bytes(bytes: u64) -> String {
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / MIB)
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let odd = [3, 1, 2].map(Duration::from_secs);
        assert_eq!(median_seconds(&odd), 2.0);
        let even = [4, 1, 3, 2].map(Duration::from_secs);
        assert_eq!(median_seconds(&even), 2.5);
    }

    #[test]
    fn throughput_and_ratio_handle_zero() {
        assert_eq!(gigabytes_per_second(2_000_000_000, 2.0), 1.0);
        assert_eq!(gigabytes_per_second(1, 0.0), 0.0);
        assert!(ratio(1.0, 0.0).is_nan());
        assert_eq!(ratio(3.0, 2.0), 1.5);
    }
}
