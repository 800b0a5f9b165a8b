use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (wall clock, as Redis's `mstime`).
#[inline]
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Microseconds since the Unix epoch.
#[inline]
pub fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| {
        d.as_secs() * 1_000_000 + u64::from(d.subsec_micros())
    })
}

/// The LRU clock stored in each entry: seconds since the epoch, truncated to 32 bits.
#[inline]
pub fn lru_clock(now_ms: u64) -> u32 {
    (now_ms / 1000) as u32
}
