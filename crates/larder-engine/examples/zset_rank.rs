//! Times `ZSet::rank` (ZRANK's work in the engine) of random members in one sorted set of
//! `n` members `m:0..m:{n-1}` with scores uniform in [0, 1e6), as `bench/datatype_compare.py`'s
//! size sweep: no network, no parsing, so an A/B of the tree's search shows its own cost.
//!
//! `cargo run --release -p larder-engine --example zset_rank [-- N [LOOKUPS]]`

use std::time::Instant;

use larder_engine::zset::Order;
use larder_engine::{Limits, ZSet};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a count"))
        .collect();
    let n = args.first().copied().unwrap_or(10_000).max(1) as u64;
    let lookups = args.get(1).copied().unwrap_or(2_000_000);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut z = ZSet::new_full();
    let limits = Limits::default();
    for i in 0..n {
        let score = (next() % 1_000_000_000) as f64 / 1000.0;
        z.insert(format!("m:{i}").as_bytes(), score, &limits);
    }
    let probes: Vec<String> = (0..4096).map(|_| format!("m:{}", next() % n)).collect();
    let mut sum = 0usize;
    let t = Instant::now();
    for i in 0..lookups {
        let probe = probes[i % probes.len()].as_bytes();
        sum += z.rank(probe, Order::Ascending).map_or(0, |(r, _)| r);
    }
    let ns = t.elapsed().as_nanos() as f64 / lookups as f64;
    println!("{n} members, {lookups} ZRANKs: {ns:.1} ns each (rank sum {sum})");
}
