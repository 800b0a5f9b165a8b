//! `larder cache bench`: shuffled lookups over every key of a cache file.

use std::path::Path;
use std::time::Instant;

use anyhow::bail;

use super::open;

/// Looks up every key (or the first `limit`) in shuffled order, `runs` times.
pub(super) fn bench(file: &Path, runs: u32, limit: Option<usize>) -> anyhow::Result<()> {
    let cache = open(file)?;
    let mut keys: Vec<Vec<u8>> = Vec::with_capacity(cache.len() as usize);
    for entry in cache.iter() {
        keys.push(entry?.0.to_vec());
        if limit.is_some_and(|l| keys.len() >= l) {
            break;
        }
    }
    if keys.is_empty() {
        bail!("{} has no keys", file.display());
    }
    // Fixed-seed Fisher-Yates shuffle (xorshift64*).
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..keys.len()).rev() {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        keys.swap(
            i,
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) % (i as u64 + 1)) as usize,
        );
    }
    let mut per_run = Vec::new();
    for run in 0..runs.max(1) {
        let started = Instant::now();
        let mut found = 0usize;
        for k in &keys {
            found += usize::from(std::hint::black_box(cache.get(k)?).is_some());
        }
        let ns = started.elapsed().as_nanos() as f64 / keys.len() as f64;
        anyhow::ensure!(
            found == keys.len(),
            "only {found} of {} keys found",
            keys.len()
        );
        println!("run {}: {ns:.1} ns/lookup", run + 1);
        per_run.push(ns);
    }
    let n = per_run.len() as f64;
    let mean = per_run.iter().sum::<f64>() / n;
    let sd = (per_run.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0)).sqrt();
    println!(
        "{}: {} keys, shuffled lookups: {mean:.1} ± {sd:.1} ns/lookup over {} runs",
        file.display(),
        keys.len(),
        per_run.len()
    );
    Ok(())
}
