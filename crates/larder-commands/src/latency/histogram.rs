//! The per-command latency histogram: Redis's HdrHistogram buckets, kept only where a duration
//! in whole microseconds can land.
//!
//! Redis records each call's duration (whole µs, times 1000) in nanoseconds into an
//! HdrHistogram of 2 significant digits over 1 ns..1 s: buckets one unit wide below 256, then
//! 128 buckets per power of two, each 1/128 to 1/256 of its value wide. Below 128 µs those
//! buckets are narrower than a microsecond, so every whole µs has a slot of its own here; from
//! 128 µs to 1 s a slot is one HdrHistogram bucket. Percentiles and LATENCY HISTOGRAM's
//! buckets are therefore computed exactly as Redis computes them from the same durations, from
//! [`SLOTS`] counters (14 KiB) instead of HdrHistogram's 3072.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::state::bump;

/// Durations below this many µs have a slot each.
const LINEAR_US: u64 = 128;
/// Redis's histogram range ends at 1 s (`LATENCY_HISTOGRAM_MAX_VALUE`); longer calls count as 1 s.
const MAX_NS: u64 = 1_000_000_000;
/// log2 of half the sub-bucket count (2 significant digits: 256 sub-buckets).
const HALF_MAGNITUDE: u32 = 7;
const HALF_COUNT: usize = 1 << HALF_MAGNITUDE;
/// The HdrHistogram index of the first duration past the linear slots.
const HDR_FIRST: usize = hdr_index(LINEAR_US * 1000);
/// Number of slots: the linear ones, then HdrHistogram's indexes up to that of 1 s.
pub const SLOTS: usize = LINEAR_US as usize + hdr_index(MAX_NS) - HDR_FIRST + 1;
/// HdrHistogram's counts array length for Redis's range (23 buckets of 128 sub-buckets,
/// plus one): LATENCY HISTOGRAM's iteration ends there.
const HDR_COUNTS_LEN: usize = 24 * HALF_COUNT;

/// The HdrHistogram bucket of a value (log2 of its bucket's width).
const fn hdr_bucket(ns: u64) -> u32 {
    63 - (ns | 0xff).leading_zeros() - HALF_MAGNITUDE
}

/// HdrHistogram's counts index of a value (`counts_index_for`).
const fn hdr_index(ns: u64) -> usize {
    let b = hdr_bucket(ns);
    (((b + 1) as usize) << HALF_MAGNITUDE) + (ns >> b) as usize - HALF_COUNT
}

/// The lowest value of the bucket at a counts index (`hdr_value_at_index`).
const fn hdr_value_at(index: usize) -> u64 {
    let bucket = (index >> HALF_MAGNITUDE) as i64 - 1;
    let sub = (index & (HALF_COUNT - 1)) + HALF_COUNT;
    if bucket < 0 {
        (sub - HALF_COUNT) as u64
    } else {
        (sub as u64) << bucket
    }
}

/// The lowest value counted with `ns`.
pub fn lowest_equivalent(ns: u64) -> u64 {
    let b = hdr_bucket(ns);
    (ns >> b) << b
}

/// The highest value counted with `ns`.
pub fn highest_equivalent(ns: u64) -> u64 {
    lowest_equivalent(ns) + (1 << hdr_bucket(ns)) - 1
}

/// The slot of a duration.
#[inline]
fn slot(elapsed_us: u64) -> usize {
    if elapsed_us < LINEAR_US {
        elapsed_us as usize
    } else {
        hdr_index(elapsed_us.saturating_mul(1000).min(MAX_NS)) - HDR_FIRST + LINEAR_US as usize
    }
}

/// A value (ns) in the HdrHistogram bucket of a slot; 0 µs is recorded as 1 ns, Redis's
/// smallest value.
fn slot_ns(slot: usize) -> u64 {
    if slot < LINEAR_US as usize {
        (slot as u64 * 1000).max(1)
    } else {
        hdr_value_at(slot - LINEAR_US as usize + HDR_FIRST)
    }
}

/// One worker thread's counts for one command: written by that thread only (load + store),
/// read by any.
pub struct Histogram {
    counts: Box<[AtomicU64]>,
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram {
            counts: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Count one call. Only the owning worker thread calls this.
    #[inline]
    pub fn record(&self, elapsed_us: u64) {
        if let Some(c) = self.counts.get(slot(elapsed_us)) {
            bump(c, 1);
        }
    }

    /// Forget every call (CONFIG RESETSTAT).
    pub fn clear(&self) {
        for c in self.counts.iter() {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// The counts of one command summed over the worker threads.
pub struct Merged {
    counts: Vec<u64>,
    pub total: u64,
}

impl Merged {
    /// The sum of `parts`.
    pub fn sum<'a>(parts: impl Iterator<Item = &'a Histogram>) -> Merged {
        let mut counts = vec![0u64; SLOTS];
        for h in parts {
            for (sum, c) in counts.iter_mut().zip(h.counts.iter()) {
                *sum += c.load(Ordering::Relaxed);
            }
        }
        let total = counts.iter().sum();
        Merged { counts, total }
    }

    /// The value (ns) at a percentile, as HdrHistogram's `hdr_value_at_percentile`: the
    /// highest value of the bucket where the count reaches the percentile (the lowest for
    /// percentile 0).
    pub fn value_at_percentile_ns(&self, percentile: f64) -> u64 {
        let p = percentile.min(100.0);
        let wanted = (((p / 100.0) * self.total as f64) + 0.5) as u64;
        let wanted = wanted.max(1);
        let mut seen = 0;
        for (slot, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= wanted {
                let v = slot_ns(slot);
                return if percentile == 0.0 {
                    lowest_equivalent(v)
                } else {
                    highest_equivalent(v)
                };
            }
        }
        0
    }

    /// LATENCY HISTOGRAM's `histogram_usec`: `(µs, calls at most that long)` at powers of two
    /// from 1024 ns, cumulative, only where the count grows, as Redis's walk of its histogram
    /// with a logarithmic iterator (`hdr_iter_log_init(1024, 2)`) reports them. Each bound is
    /// the highest value of the bucket holding 1024·2^k ns, in whole µs. That walk stops at
    /// the end of HdrHistogram's counts, before the bound at 2^30 ns: calls slower than about
    /// 541 ms are in `calls` but in no bucket, in Redis as here.
    pub fn cumulative_buckets(&self) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut slot = 0;
        let mut cumulative = 0;
        let mut level_ns: u64 = 1024;
        while hdr_index(level_ns) < HDR_COUNTS_LEN {
            let last = hdr_index(level_ns);
            while slot < SLOTS && hdr_index(slot_ns(slot)) <= last {
                cumulative += self.counts[slot];
                slot += 1;
            }
            if cumulative > out.last().map_or(0, |&(_, c)| c) {
                out.push((highest_equivalent(level_ns) / 1000, cumulative));
            }
            level_ns *= 2;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(durations_us: &[u64]) -> Merged {
        let h = Histogram::new();
        for &d in durations_us {
            h.record(d);
        }
        Merged::sum(std::iter::once(&h))
    }

    #[test]
    fn slots_follow_hdrhistogram_buckets() {
        assert_eq!(HDR_FIRST, 1402);
        assert_eq!(SLOTS, 1781);
        assert_eq!(slot(0), 0);
        assert_eq!(slot(127), 127);
        assert_eq!(slot(128), 128);
        assert_eq!(slot(1_000_000), SLOTS - 1);
        assert_eq!(slot(u64::MAX), SLOTS - 1);
        for d in 0..5000u64 {
            let ns = (d * 1000).max(1);
            // A slot stands for exactly the HdrHistogram bucket of its durations.
            assert_eq!(hdr_index(slot_ns(slot(d))), hdr_index(ns), "{d}");
            assert!(slot(d) <= slot(d + 1));
        }
        for i in [1, 127, 128, 300, 1402, 3054] {
            assert_eq!(hdr_index(hdr_value_at(i)), i);
        }
    }

    /// Values read from redis-server 7.0 for single calls of these durations.
    #[test]
    fn percentiles_match_redis() {
        let one = |d: u64, p: f64| merged(&[d]).value_at_percentile_ns(p);
        assert_eq!(one(7, 50.0), 7007);
        assert_eq!(one(32, 99.9), 32127);
        assert_eq!(one(32, 0.0), 32000);
        assert_eq!(one(1, 50.0), 1003);
        assert_eq!(one(11, 50.0), 11007);
        assert_eq!(one(3, 0.0), 2992);
        assert_eq!(one(0, 50.0), 1);
        let m = merged(&[3, 5]);
        assert_eq!(m.value_at_percentile_ns(50.0), 3007);
        assert_eq!(m.value_at_percentile_ns(99.0), 5023);
        assert_eq!(merged(&[]).value_at_percentile_ns(50.0), 0);
    }

    #[test]
    fn cumulative_buckets_match_redis() {
        assert!(merged(&[]).cumulative_buckets().is_empty());
        // redis-server 7.0: durations 3 and 5 µs -> {4: 1, 8: 2}; 32 µs -> {33: 1}.
        assert_eq!(merged(&[3, 5]).cumulative_buckets(), [(4, 1), (8, 2)]);
        assert_eq!(merged(&[32]).cumulative_buckets(), [(33, 1)]);
        assert_eq!(merged(&[0, 1, 2]).cumulative_buckets(), [(1, 2), (2, 3)]);
        let bounds: Vec<u64> = merged(&[541_065])
            .cumulative_buckets()
            .iter()
            .map(|b| b.0)
            .collect();
        assert_eq!(bounds, [541_065]);
        // Past the last bound: counted in calls, in no bucket.
        let slow = merged(&[1, 600_000, 5_000_000]);
        assert_eq!(slow.total, 3);
        assert_eq!(slow.cumulative_buckets(), [(1, 1)]);
    }
}
