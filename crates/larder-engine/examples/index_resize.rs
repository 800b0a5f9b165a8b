//! Times the inserts that grow a shard's key index: the longest a client waits on one
//! insert while its shard resizes. Shards of 3,906, 39,062 and 390,625 keys are what 1M, 10M
//! and 100M keys spread over 256 shards give.
//!
//! `cargo run --release -p larder-engine --example index_resize [-- KEYS...]`

use std::time::{Duration, Instant};

use larder_engine::Shard;

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a key count"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![3_906, 39_062, 390_625]
    } else {
        sizes
    };
    for n in sizes {
        let mut shard = Shard::new(0);
        let mut worst = Duration::ZERO;
        let mut last = (0, Duration::ZERO);
        for i in 0..n {
            let key = format!("key:{i:012}");
            let hash = xxhash_rust::xxh3::xxh3_64(key.as_bytes());
            let before = shard.index_capacity();
            let t = Instant::now();
            shard.insert_string(key.as_bytes(), hash, &[b'v'; 32], 0, 0);
            let took = t.elapsed();
            if shard.index_capacity() != before {
                worst = worst.max(took);
                last = (shard.index_capacity(), took);
            }
        }
        println!(
            "{n} keys: last resize (to room for {} keys) {:?}, worst resize {:?}",
            last.0, last.1, worst
        );
    }
}
