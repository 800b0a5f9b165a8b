use std::cell::Cell;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

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

/// [`now_us`] for the executor's per-command timing (a command's start, its end, and the
/// duration between), read once or twice per command.
///
/// The wall clock's read orders the CPU's time stamp counter against every instruction
/// before it, so it waits for the cache misses in flight; this reads the counter without
/// that order and extrapolates from the wall clock read at most [`ANCHOR_CYCLES`] earlier
/// by this thread, at the counter's rate measured against the monotonic clock since the
/// thread's first call. So it stays within a few microseconds of [`now_us`], follows the
/// wall clock's steps within a millisecond, and, as `now_us`, may step back (the executor
/// counts a negative duration as 0). Where the kernel does not keep time by the counter
/// itself (another clocksource, a virtual machine without a stable counter, another
/// architecture) and during each thread's first [`CALIBRATE_NS`], it is `now_us`.
#[inline]
pub fn command_us() -> u64 {
    match counter() {
        Some(tsc) => FAST.with(|f| f.read(tsc)),
        None => now_us(),
    }
}

/// The longest run of counter cycles extrapolated from one wall-clock read: about a
/// millisecond at 2-4 GHz.
const ANCHOR_CYCLES: u64 = 3_000_000;
/// How long a thread measures the counter's rate before it extrapolates.
const CALIBRATE_NS: u64 = 20_000_000;
/// The most counter cycles the clock reads of an anchor may take: a thread preempted between
/// them would pair the counter with a later time, so such an anchor is not taken.
const ANCHOR_SLACK: u64 = 50_000;

/// The time stamp counter, where the kernel's clocksource is the counter (so the kernel
/// found it invariant and in step across CPUs); `None` elsewhere.
#[inline]
fn counter() -> Option<u64> {
    #[cfg(target_arch = "x86_64")]
    {
        static USABLE: OnceLock<bool> = OnceLock::new();
        let usable = *USABLE.get_or_init(|| {
            std::fs::read_to_string(
                "/sys/devices/system/clocksource/clocksource0/current_clocksource",
            )
            .is_ok_and(|s| s.trim() == "tsc")
        });
        if !usable {
            return None;
        }
        // SAFETY: RDTSC is in every x86_64 CPU; it reads a register and touches no memory.
        #[allow(unsafe_code)]
        let tsc = unsafe { std::arch::x86_64::_rdtsc() };
        Some(tsc)
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

thread_local! {
    static FAST: Fast = const { Fast::new() };
}

/// One thread's extrapolation state.
struct Fast {
    /// The counter and the monotonic clock at the thread's first read: the rate's baseline.
    base: Cell<Option<(u64, Instant)>>,
    /// Microseconds per counter cycle, as a 32.32 fixed-point number (below 1 for any counter
    /// faster than 1 MHz); 0 until calibrated.
    mult: Cell<u64>,
    /// The counter and the wall clock (Unix µs) at the last anchor.
    anchor_tsc: Cell<u64>,
    anchor_us: Cell<u64>,
}

impl Fast {
    const fn new() -> Fast {
        Fast {
            base: Cell::new(None),
            mult: Cell::new(0),
            anchor_tsc: Cell::new(0),
            anchor_us: Cell::new(0),
        }
    }

    #[inline]
    fn read(&self, tsc: u64) -> u64 {
        let since = tsc.wrapping_sub(self.anchor_tsc.get());
        let mult = self.mult.get();
        if mult != 0 && since < ANCHOR_CYCLES {
            // Under 2^22 cycles times under 2^32: no overflow.
            return self.anchor_us.get() + ((since * mult) >> 32);
        }
        self.anchor(tsc)
    }

    /// Reads the wall clock, makes it the anchor, and measures the rate again; or, where the
    /// reads took too long to pair with the counter, only reads the wall clock.
    #[cold]
    fn anchor(&self, tsc: u64) -> u64 {
        let us = now_us();
        let now = Instant::now();
        let after = counter().unwrap_or(tsc);
        if after.wrapping_sub(tsc) > ANCHOR_SLACK {
            return us;
        }
        match self.base.get() {
            None => self.base.set(Some((tsc, now))),
            Some((tsc0, t0)) => {
                let elapsed = now.duration_since(t0);
                let cycles = tsc.wrapping_sub(tsc0);
                if elapsed.as_nanos() >= u128::from(CALIBRATE_NS) && cycles > 0 {
                    let mult = (elapsed.as_micros() << 32) / u128::from(cycles);
                    // A counter slower than 1 MHz is none worth extrapolating.
                    self.mult.set(
                        u64::try_from(mult)
                            .ok()
                            .filter(|&m| m < 1 << 32)
                            .unwrap_or(0),
                    );
                }
            }
        }
        self.anchor_tsc.set(tsc);
        self.anchor_us.set(us);
        us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_clock_stays_with_the_wall_clock() {
        // Past the calibration, then a stretch of reads each compared with the wall clock
        // read around it.
        let start = Instant::now();
        let mut worst = 0u64;
        let mut reads = 0u64;
        while start.elapsed().as_millis() < 120 {
            let before = now_us();
            let fast = command_us();
            let after = now_us();
            if start.elapsed().as_millis() > 40 {
                let off = if fast < before {
                    before - fast
                } else {
                    fast.saturating_sub(after)
                };
                worst = worst.max(off);
                reads += 1;
            }
        }
        assert!(reads > 1000, "{reads} reads");
        // An anchor's reads take at most ANCHOR_SLACK cycles (tens of µs on the slowest
        // counters), and the rate is measured over 20 ms or more.
        assert!(worst < 100, "command_us strayed {worst} µs from now_us");
    }
}
