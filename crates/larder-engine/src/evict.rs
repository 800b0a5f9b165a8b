//! Access tracking for eviction (LRU clock or LFU counter in `Entry::access`), the eviction
//! policies, and the small random source sampling uses.
//!
//! Under an LFU policy `access` holds, as Redis's 24-bit `lru` field does, 16 bits of minutes
//! (the last decrement time) above an 8-bit logarithmic counter. Under any other policy it is
//! the LRU clock in seconds.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// Initial LFU counter of a new key (Redis's `LFU_INIT_VAL`), so that new keys are not evicted
/// before they had a chance to be accessed.
pub const LFU_INIT_VAL: u8 = 5;

/// How reads and writes record an access; shared by every shard of a keyspace.
#[derive(Debug)]
pub(crate) struct AccessPolicy {
    lfu: AtomicBool,
    log_factor: AtomicU32,
    decay_time: AtomicU32,
    /// The keyspace follows a master: a key past its deadline stays until the master's DEL.
    follows_master: AtomicBool,
}

thread_local! {
    /// This thread applies a master's replication stream: it sees keys past their deadline
    /// as they still are on the master (Redis's replica lets its master client see them).
    static APPLIES_MASTER_STREAM: Cell<bool> = const { Cell::new(false) };
}

/// Mark the calling thread as the one applying a master's stream (see
/// [`crate::Keyspace::set_follows_master`]).
pub fn set_applies_master_stream(on: bool) {
    APPLIES_MASTER_STREAM.with(|c| c.set(on));
}

/// Whether the calling thread applies a master's stream ([`set_applies_master_stream`]).
pub fn applies_master_stream() -> bool {
    APPLIES_MASTER_STREAM.with(Cell::get)
}

impl Default for AccessPolicy {
    fn default() -> Self {
        AccessPolicy {
            lfu: AtomicBool::new(false),
            log_factor: AtomicU32::new(10),
            decay_time: AtomicU32::new(1),
            follows_master: AtomicBool::new(false),
        }
    }
}

impl AccessPolicy {
    /// Store the settings; writes only what changed, so calling this per command is cheap.
    pub(crate) fn set(&self, lfu: bool, log_factor: u32, decay_time: u32) {
        if self.lfu.load(Ordering::Relaxed) != lfu {
            self.lfu.store(lfu, Ordering::Relaxed);
        }
        if self.log_factor.load(Ordering::Relaxed) != log_factor {
            self.log_factor.store(log_factor, Ordering::Relaxed);
        }
        if self.decay_time.load(Ordering::Relaxed) != decay_time {
            self.decay_time.store(decay_time, Ordering::Relaxed);
        }
    }

    pub(crate) fn set_follows_master(&self, on: bool) {
        self.follows_master.store(on, Ordering::Relaxed);
    }

    pub(crate) fn follows_master(&self) -> bool {
        self.follows_master.load(Ordering::Relaxed)
    }

    /// Whether the calling thread applies the master's stream.
    pub(crate) fn applies_master_stream() -> bool {
        applies_master_stream()
    }

    #[inline]
    pub(crate) fn is_lfu(&self) -> bool {
        self.lfu.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn decay_time(&self) -> u32 {
        self.decay_time.load(Ordering::Relaxed)
    }

    /// The `access` value of a key created at `now_ms`.
    #[inline]
    pub(crate) fn initial(&self, now_ms: u64) -> u32 {
        if self.is_lfu() {
            (lfu_minutes(now_ms) << 8) | u32::from(LFU_INIT_VAL)
        } else {
            crate::clock::lru_clock(now_ms)
        }
    }

    /// The `access` value after an access at `now_ms` (Redis's `updateLFU` under LFU).
    #[inline]
    pub(crate) fn touched(&self, old: u32, now_ms: u64) -> u32 {
        if self.is_lfu() {
            let counter = lfu_decayed(old, now_ms, self.decay_time());
            let counter = lfu_log_incr(counter, self.log_factor.load(Ordering::Relaxed));
            (lfu_minutes(now_ms) << 8) | u32::from(counter)
        } else {
            crate::clock::lru_clock(now_ms)
        }
    }
}

/// Minutes since the epoch, 16 bits (Redis's `LFUGetTimeInMinutes`).
#[inline]
fn lfu_minutes(now_ms: u64) -> u32 {
    ((now_ms / 60_000) & 0xffff) as u32
}

/// The LFU counter of `access` after decay: one per `decay_time` minutes elapsed since the last
/// decrement (Redis's `LFUDecrAndReturn`). `decay_time` 0 never decays.
pub fn lfu_decayed(access: u32, now_ms: u64, decay_time: u32) -> u8 {
    let ldt = (access >> 8) & 0xffff;
    let counter = (access & 0xff) as u8;
    if decay_time == 0 {
        return counter;
    }
    let now = lfu_minutes(now_ms);
    let elapsed = if now >= ldt {
        now - ldt
    } else {
        65535 - ldt + now
    };
    let periods = elapsed / decay_time;
    counter.saturating_sub(periods.min(255) as u8)
}

/// Logarithmic increment: probability 1/((counter-LFU_INIT_VAL)*log_factor+1).
pub fn lfu_log_incr(counter: u8, log_factor: u32) -> u8 {
    if counter == 255 {
        return 255;
    }
    let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
    let p = 1.0 / (base * f64::from(log_factor) + 1.0);
    if random_unit() < p {
        counter + 1
    } else {
        counter
    }
}

/// Which keys eviction may pick and how it ranks them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvictionPolicy {
    VolatileLru,
    VolatileLfu,
    VolatileRandom,
    VolatileTtl,
    AllkeysLru,
    AllkeysLfu,
    AllkeysRandom,
}

impl EvictionPolicy {
    /// Only keys with a deadline are candidates.
    pub fn volatile_only(self) -> bool {
        matches!(
            self,
            EvictionPolicy::VolatileLru
                | EvictionPolicy::VolatileLfu
                | EvictionPolicy::VolatileRandom
                | EvictionPolicy::VolatileTtl
        )
    }

    /// The policy ranks keys by an LFU counter.
    pub fn is_lfu(self) -> bool {
        matches!(
            self,
            EvictionPolicy::VolatileLfu | EvictionPolicy::AllkeysLfu
        )
    }
}

thread_local! {
    static RNG: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    let local = 0u8;
    let addr = std::ptr::addr_of!(local) as u64;
    (crate::clock::now_us() ^ addr.rotate_left(32)) | 1
}

/// A fast thread-local pseudo-random number (xorshift64*); not for anything secret.
#[inline]
pub fn random_u64() -> u64 {
    RNG.with(|c| {
        let mut x = c.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        c.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    })
}

/// Uniform in `[0, 1)`.
#[inline]
fn random_unit() -> f64 {
    (random_u64() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lfu_counter_grows_logarithmically() {
        // Factor 0: every access counts.
        let mut c = LFU_INIT_VAL;
        for _ in 0..10 {
            c = lfu_log_incr(c, 0);
        }
        assert_eq!(c, LFU_INIT_VAL + 10);
        // Factor 10: a thousand accesses get nowhere near a thousand.
        let mut c = LFU_INIT_VAL;
        for _ in 0..1000 {
            c = lfu_log_incr(c, 10);
        }
        assert!(c > LFU_INIT_VAL + 3 && c < 40, "{c}");
        assert_eq!(lfu_log_incr(255, 0), 255);
    }

    #[test]
    fn lfu_counter_decays_per_period() {
        let now = 1_000 * 60_000;
        let access = (lfu_minutes(now) << 8) | 20;
        assert_eq!(lfu_decayed(access, now, 1), 20);
        assert_eq!(lfu_decayed(access, now + 3 * 60_000, 1), 17);
        assert_eq!(lfu_decayed(access, now + 4 * 60_000, 2), 18);
        assert_eq!(lfu_decayed(access, now + 400 * 60_000, 1), 0);
        assert_eq!(lfu_decayed(access, now + 400 * 60_000, 0), 20);
    }

    #[test]
    fn policy_switches_access_encoding() {
        let p = AccessPolicy::default();
        let now = 1_700_000_000_000;
        assert_eq!(p.initial(now), crate::clock::lru_clock(now));
        p.set(true, 0, 1);
        let a = p.initial(now);
        assert_eq!(lfu_decayed(a, now, 1), LFU_INIT_VAL);
        let a = p.touched(a, now);
        assert_eq!(lfu_decayed(a, now, 1), LFU_INIT_VAL + 1);
    }
}
