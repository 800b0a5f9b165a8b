//! Claiming pending entries for another consumer: XCLAIM (by ID) and XAUTOCLAIM (a walk of
//! the PEL), as `xclaimCommand` and `xautoclaimCommand` in Redis 7.0's t_stream.c.
//!
//! Both drop a pending entry whose stream entry is gone (deleted or trimmed) instead of
//! claiming it, and report it, so that the caller can record the change for replay.

use super::{Group, Lookup, Nack, StreamId};

/// What a claim does to a claimed entry's delivery count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClaimCount {
    /// One more delivery (the default).
    Increment,
    /// Unchanged (JUSTID).
    Keep,
    /// RETRYCOUNT n.
    Set(u64),
}

/// One XCLAIM's options.
#[derive(Clone, Copy, Debug)]
pub struct Claim<'a> {
    pub consumer: &'a [u8],
    /// Entries delivered less than this long ago stay with their owner (0: no limit).
    pub min_idle_ms: u64,
    /// The claimed entries' new delivery time (IDLE, TIME, or now).
    pub delivery_time_ms: u64,
    pub count: ClaimCount,
    /// FORCE: an entry of the stream that is not pending becomes pending.
    pub force: bool,
    pub now_ms: u64,
}

/// What a claim did with one ID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claimed {
    /// The entry is now the consumer's, in this state.
    Owned(StreamId, Nack),
    /// The stream no longer holds the entry: its pending state (shown as it was) is gone.
    Gone(StreamId, Nack),
}

/// What XAUTOCLAIM did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoClaimed {
    /// Each entry claimed or dropped, in PEL order.
    pub claims: Vec<Claimed>,
    /// Where the next call should start (0-0: the walk reached the PEL's end).
    pub next: StreamId,
    /// Whether the consumer was created.
    pub created: bool,
}

/// How long ago `n` was delivered; negative for a delivery time in the future.
fn idle_ms(n: &Nack, now_ms: u64) -> i128 {
    i128::from(now_ms) - i128::from(n.delivery_time_ms)
}

impl Group {
    /// XCLAIM of one ID. `exists`: whether the stream holds the entry. `None` when nothing
    /// changed: the entry is not pending (nor forced), or was delivered too recently.
    /// `created` is set when the consumer had to be created.
    pub fn claim(
        &mut self,
        id: StreamId,
        claim: &Claim<'_>,
        exists: bool,
        created: &mut bool,
    ) -> Option<Claimed> {
        if !exists {
            return self.ack(id).map(|n| Claimed::Gone(id, n));
        }
        match self.pel.get(&id) {
            None if !claim.force => return None,
            // A pending entry delivered too recently stays where it is; a forced new one
            // has no delivery to measure.
            Some(n)
                if claim.min_idle_ms > 0
                    && idle_ms(n, claim.now_ms) < i128::from(claim.min_idle_ms) =>
            {
                return None
            }
            _ => {}
        }
        if self.touch_consumer(claim.consumer, claim.now_ms) == Lookup::Created {
            *created = true;
        }
        let nack = self.assign(id, claim.consumer, |n| {
            n.delivery_time_ms = claim.delivery_time_ms;
            match claim.count {
                ClaimCount::Increment => n.delivery_count += 1,
                ClaimCount::Keep => {}
                ClaimCount::Set(c) => n.delivery_count = c,
            }
        })?;
        Some(Claimed::Owned(id, nack.clone()))
    }

    /// XAUTOCLAIM: walk the PEL from `start`, claiming for `consumer` each entry idle for
    /// at least `min_idle_ms` (delivered again now; one more delivery unless `count` is
    /// [`ClaimCount::Keep`]) and dropping those the stream no longer holds, until `limit`
    /// entries were claimed or dropped or `10 × limit` were looked at.
    #[allow(clippy::too_many_arguments)]
    pub fn autoclaim(
        &mut self,
        start: StreamId,
        limit: u64,
        consumer: &[u8],
        min_idle_ms: u64,
        count: ClaimCount,
        now_ms: u64,
        exists: impl Fn(StreamId) -> bool,
    ) -> AutoClaimed {
        let mut attempts = limit.saturating_mul(10);
        let mut left = limit;
        let mut cursor = Some(start);
        let mut out = AutoClaimed {
            claims: Vec::new(),
            next: StreamId::MIN,
            created: false,
        };
        let claim = Claim {
            consumer,
            min_idle_ms,
            delivery_time_ms: now_ms,
            count,
            force: false,
            now_ms,
        };
        while attempts > 0 && left > 0 {
            attempts -= 1;
            let Some(from) = cursor else { break };
            let Some((&id, _)) = self.pel.range(from..).next() else {
                cursor = None;
                break;
            };
            cursor = id.next();
            if let Some(c) = self.claim(id, &claim, exists(id), &mut out.created) {
                out.claims.push(c);
                left -= 1;
            }
        }
        if let Some(from) = cursor {
            if let Some((&id, _)) = self.pel.range(from..).next() {
                out.next = id;
            }
        }
        out
    }
}
