//! Deadlines: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT, TTL, PTTL, EXPIRETIME, PEXPIRETIME and
//! PERSIST.

use larder_engine::feed::class;

use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

const NX_INCOMPATIBLE: &str = "ERR NX and XX, GT or LT options at the same time are not compatible";
const GT_LT_INCOMPATIBLE: &str = "ERR GT and LT options at the same time are not compatible";

/// The unit of a command's time argument or reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Seconds,
    Millis,
}

/// Whether a time is relative to now (EXPIRE, TTL) or a Unix time (EXPIREAT, EXPIRETIME).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Base {
    Now,
    Epoch,
}

/// EXPIRE's NX | XX | GT | LT.
#[derive(Clone, Copy, Debug, Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Conditions {
    /// Parse like Redis's `parseExtendedExpireArgumentsOrReply` (before the time argument).
    fn parse(opts: &[&[u8]]) -> Result<Conditions> {
        let mut f = Conditions::default();
        for opt in opts {
            if opt.eq_ignore_ascii_case(b"nx") {
                f.nx = true;
            } else if opt.eq_ignore_ascii_case(b"xx") {
                f.xx = true;
            } else if opt.eq_ignore_ascii_case(b"gt") {
                f.gt = true;
            } else if opt.eq_ignore_ascii_case(b"lt") {
                f.lt = true;
            } else {
                return Err(Error::Owned(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(opt).replace(['\r', '\n'], " ")
                )));
            }
        }
        if f.nx && (f.xx || f.gt || f.lt) {
            return Err(Error::Static(NX_INCOMPATIBLE));
        }
        if f.gt && f.lt {
            return Err(Error::Static(GT_LT_INCOMPATIBLE));
        }
        Ok(f)
    }

    /// Whether a new deadline `when` may replace `current` (`None` = no deadline, which GT and
    /// LT treat as an infinite TTL).
    fn allow(self, current: Option<i64>, when: i64) -> bool {
        !(self.nx && current.is_some()
            || self.xx && current.is_none()
            || self.gt && current.is_none_or(|cur| when <= cur)
            || self.lt && current.is_some_and(|cur| when >= cur))
    }
}

/// EXPIRE key seconds [NX | XX | GT | LT]
pub(super) fn expire(c: &mut Cmd<'_>) -> Result<()> {
    set_deadline(c, Unit::Seconds, Base::Now)
}

/// PEXPIRE key milliseconds [NX | XX | GT | LT]
pub(super) fn pexpire(c: &mut Cmd<'_>) -> Result<()> {
    set_deadline(c, Unit::Millis, Base::Now)
}

/// EXPIREAT key unix-time-seconds [NX | XX | GT | LT]
pub(super) fn expireat(c: &mut Cmd<'_>) -> Result<()> {
    set_deadline(c, Unit::Seconds, Base::Epoch)
}

/// PEXPIREAT key unix-time-milliseconds [NX | XX | GT | LT]
pub(super) fn pexpireat(c: &mut Cmd<'_>) -> Result<()> {
    set_deadline(c, Unit::Millis, Base::Epoch)
}

/// The shared part of the EXPIRE family (Redis's `expireGenericCommand`). A deadline at or
/// before now deletes the key and still replies 1.
fn set_deadline(c: &mut Cmd<'_>, unit: Unit, base: Base) -> Result<()> {
    let key = c.args.key()?;
    let raw = c.args.next_arg()?;
    let conditions = Conditions::parse(c.args.rest())?;
    let value = parse_i64(raw).ok_or(Error::Static(error::NOT_INTEGER))?;
    let now = i64::try_from(c.now_ms).unwrap_or(i64::MAX);
    let when = value
        .checked_mul(if unit == Unit::Seconds { 1000 } else { 1 })
        .and_then(|ms| ms.checked_add(if base == Base::Now { now } else { 0 }))
        .ok_or_else(|| error::invalid_expire(c.resolved.full_name))?;
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = shard.find_touch(key, hash, c.now_ms, c.access()) else {
        drop(shard);
        c.out.int(0);
        return Ok(());
    };
    let current = shard
        .entry(slot)
        .expire_at_ms()
        .map(|at| i64::try_from(at).unwrap_or(i64::MAX));
    if !conditions.allow(current, when) {
        drop(shard);
        c.out.int(0);
        return Ok(());
    }
    let removed = match u64::try_from(when) {
        Ok(at) if when > now => {
            shard.set_expire(slot, Some(at));
            c.notify(class::GENERIC, "expire", key);
            // Replayed as the absolute deadline, whatever the form (Redis's PEXPIREAT).
            if c.records_commands() {
                c.propagate(&[b"PEXPIREAT", key, at.to_string().as_bytes()]);
            }
            None
        }
        _ => {
            let removed = shard.remove(slot);
            c.notify(class::GENERIC, "del", key);
            c.propagate(&[b"DEL", key]);
            Some(removed)
        }
    };
    drop(shard);
    drop(removed);
    c.out.int(1);
    Ok(())
}

/// TTL key
pub(super) fn ttl(c: &mut Cmd<'_>) -> Result<()> {
    report_deadline(c, Unit::Seconds, Base::Now)
}

/// PTTL key
pub(super) fn pttl(c: &mut Cmd<'_>) -> Result<()> {
    report_deadline(c, Unit::Millis, Base::Now)
}

/// EXPIRETIME key
pub(super) fn expiretime(c: &mut Cmd<'_>) -> Result<()> {
    report_deadline(c, Unit::Seconds, Base::Epoch)
}

/// PEXPIRETIME key
pub(super) fn pexpiretime(c: &mut Cmd<'_>) -> Result<()> {
    report_deadline(c, Unit::Millis, Base::Epoch)
}

/// The shared part of TTL and friends: -2 for a missing key, -1 for no deadline; seconds are
/// rounded to the nearest second as Redis does.
fn report_deadline(c: &mut Cmd<'_>, unit: Unit, base: Base) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let found = shard
        .find(key, hash, c.now_ms)
        .map(|slot| shard.entry(slot).expire_at_ms());
    drop(shard);
    c.hit(found.is_some());
    let reply = match found {
        None => -2,
        Some(None) => -1,
        Some(Some(at)) => {
            let ms = match base {
                Base::Now => at.saturating_sub(c.now_ms),
                Base::Epoch => at,
            };
            let ms = i64::try_from(ms).unwrap_or(i64::MAX);
            match unit {
                Unit::Millis => ms,
                Unit::Seconds => ms.saturating_add(500) / 1000,
            }
        }
    };
    c.out.int(reply);
    Ok(())
}

/// PERSIST key
pub(super) fn persist(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.shard_of(key);
    let cleared = match shard.find_touch(key, hash, c.now_ms, c.access()) {
        Some(slot) if shard.entry(slot).expire_at_ms().is_some() => {
            shard.set_expire(slot, None);
            c.notify(class::GENERIC, "persist", key);
            true
        }
        _ => false,
    };
    drop(shard);
    c.out.int(i64::from(cleared));
    Ok(())
}

#[cfg(test)]
mod tests {
    use larder_resp::Frame;

    use crate::testing::*;

    fn int_of(f: Frame) -> i64 {
        match f {
            Frame::Integer(v) => v,
            other => panic!("not an integer: {other:?}"),
        }
    }

    #[test]
    fn option_errors_in_redis_order() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "v"]);
        let nx = "ERR NX and XX, GT or LT options at the same time are not compatible";
        let gtlt = "ERR GT and LT options at the same time are not compatible";
        for (argv, want) in [
            (&["EXPIRE", "k", "10", "NX", "XX"][..], nx),
            (&["EXPIRE", "k", "10", "nx", "gt"], nx),
            (&["PEXPIRE", "k", "10", "lt", "NX"], nx),
            (&["EXPIRE", "k", "abc", "NX", "XX"], nx),
            (&["EXPIRE", "k", "10", "GT", "LT"], gtlt),
            (&["EXPIRE", "k", "10", "foo"], "ERR Unsupported option foo"),
            (&["EXPIRE", "k", "abc", "foo"], "ERR Unsupported option foo"),
            (
                &["EXPIRE", "k", "abc"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["EXPIRE", "k", "1.5"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["EXPIRE", "k", "9223372036854775"],
                "ERR invalid expire time in 'expire' command",
            ),
            (
                &["EXPIRE", "k", "-9223372036854776"],
                "ERR invalid expire time in 'expire' command",
            ),
            (
                &["PEXPIRE", "k", "9223372036854775807"],
                "ERR invalid expire time in 'pexpire' command",
            ),
            (
                &["EXPIREAT", "k", "9223372036854776"],
                "ERR invalid expire time in 'expireat' command",
            ),
        ] {
            assert_eq!(h.run(argv), err(want), "{argv:?}");
        }
        assert_eq!(
            h.run(&["EXPIRE", "k"]),
            err("ERR wrong number of arguments for 'expire' command")
        );
        // Nothing changed the key.
        assert_eq!(h.run(&["TTL", "k"]), int(-1));
        // The largest EXPIREAT that does not overflow is accepted.
        assert_eq!(h.run(&["EXPIREAT", "k", "9223372036854775"]), int(1));
        assert_eq!(h.run(&["EXPIRETIME", "k"]), int(9223372036854775));
        assert_eq!(h.run(&["PEXPIRETIME", "k"]), int(9_223_372_036_854_775_000));
    }

    #[test]
    fn expire_sets_and_reports() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["EXPIRE", "nokey", "10"]), int(0));
        assert_eq!(h.run(&["TTL", "nokey"]), int(-2));
        assert_eq!(h.run(&["PTTL", "nokey"]), int(-2));
        assert_eq!(h.run(&["EXPIRETIME", "nokey"]), int(-2));
        assert_eq!(h.run(&["PEXPIRETIME", "nokey"]), int(-2));
        h.run(&["SET", "k", "v"]);
        assert_eq!(h.run(&["TTL", "k"]), int(-1));
        assert_eq!(h.run(&["PTTL", "k"]), int(-1));
        assert_eq!(h.run(&["EXPIRETIME", "k"]), int(-1));
        assert_eq!(h.run(&["PEXPIRETIME", "k"]), int(-1));
        assert_eq!(h.run(&["EXPIRE", "k", "100"]), int(1));
        assert_eq!(h.run(&["TTL", "k"]), int(100));
        let pttl = int_of(h.run(&["PTTL", "k"]));
        assert!((99_000..=100_000).contains(&pttl), "{pttl}");
        let now = larder_engine::now_ms() as i64;
        let at = int_of(h.run(&["PEXPIRETIME", "k"]));
        assert!((now + 99_000..=now + 100_000).contains(&at), "{at}");
        assert_eq!(h.run(&["PEXPIRE", "k", "5000"]), int(1));
        assert_eq!(h.run(&["TTL", "k"]), int(5));
        let at_s = (now / 1000 + 1000).to_string();
        assert_eq!(h.run(&["EXPIREAT", "k", &at_s]), int(1));
        assert_eq!(h.run(&["EXPIRETIME", "k"]), int_str(&at_s));
        let at_ms = (now + 7_000).to_string();
        assert_eq!(h.run(&["PEXPIREAT", "k", &at_ms]), int(1));
        assert_eq!(h.run(&["PEXPIRETIME", "k"]), int_str(&at_ms));
        // Seconds are rounded to the nearest second.
        assert_eq!(h.run(&["PEXPIREAT", "k", "99999999999499"]), int(1));
        assert_eq!(h.run(&["EXPIRETIME", "k"]), int(99_999_999_999));
        assert_eq!(h.run(&["PEXPIREAT", "k", "99999999999500"]), int(1));
        assert_eq!(h.run(&["EXPIRETIME", "k"]), int(100_000_000_000));
        assert_eq!(h.run(&["PERSIST", "k"]), int(1));
        assert_eq!(h.run(&["PERSIST", "k"]), int(0));
        assert_eq!(h.run(&["PERSIST", "nokey"]), int(0));
        assert_eq!(h.run(&["TTL", "k"]), int(-1));
        // SET without KEEPTTL clears; a deadline in the past deletes and replies 1.
        assert_eq!(h.run(&["EXPIRE", "k", "0"]), int(1));
        assert_eq!(h.run(&["EXISTS", "k"]), int(0));
        h.run(&["SET", "k", "v"]);
        assert_eq!(h.run(&["EXPIRE", "k", "-9223372036854775"]), int(1));
        assert_eq!(h.run(&["EXISTS", "k"]), int(0));
        h.run(&["SET", "k", "v"]);
        assert_eq!(h.run(&["PEXPIREAT", "k", "1"]), int(1));
        assert_eq!(h.run(&["TTL", "k"]), int(-2));
        h.run(&["SET", "k", "v"]);
        assert_eq!(h.run(&["PEXPIRE", "k", "-9223372036854775808"]), int(1));
        assert_eq!(h.run(&["EXISTS", "k"]), int(0));
    }

    fn int_str(s: &str) -> Frame {
        int(s.parse().expect("number"))
    }

    /// TTL reads `secs`, or one less when the machine took over half a second between the
    /// EXPIRE and the TTL (TTL rounds to the nearest second, as Redis's does).
    fn assert_ttl_near(h: &mut Harness, secs: i64) {
        let got = h.run(&["TTL", "k"]);
        assert!(
            got == int(secs) || got == int(secs - 1),
            "TTL {got:?}, want {secs}"
        );
    }

    #[test]
    fn nx_xx_gt_lt() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "v"]);
        // No deadline: XX and GT refuse (infinite TTL), LT and NX accept.
        assert_eq!(h.run(&["EXPIRE", "k", "100", "XX"]), int(0));
        assert_eq!(h.run(&["EXPIRE", "k", "100", "GT"]), int(0));
        assert_eq!(h.run(&["EXPIRE", "k", "100", "xx", "gt"]), int(0));
        assert_eq!(h.run(&["TTL", "k"]), int(-1));
        assert_eq!(h.run(&["EXPIRE", "k", "100", "LT"]), int(1));
        assert_eq!(h.run(&["PERSIST", "k"]), int(1));
        assert_eq!(h.run(&["EXPIRE", "k", "100", "NX"]), int(1));
        assert_ttl_near(&mut h, 100);
        // With a deadline.
        assert_eq!(h.run(&["EXPIRE", "k", "200", "NX"]), int(0));
        assert_eq!(h.run(&["EXPIRE", "k", "50", "GT"]), int(0));
        assert_eq!(h.run(&["EXPIRE", "k", "100", "GT"]), int(0));
        assert_eq!(h.run(&["EXPIRE", "k", "200", "GT"]), int(1));
        assert_ttl_near(&mut h, 200);
        assert_eq!(h.run(&["EXPIRE", "k", "300", "LT"]), int(0));
        assert_eq!(h.run(&["EXPIRE", "k", "150", "XX", "LT"]), int(1));
        assert_ttl_near(&mut h, 150);
        assert_eq!(h.run(&["EXPIRE", "k", "120", "XX"]), int(1));
        assert_ttl_near(&mut h, 120);
        // LT with a past deadline deletes.
        assert_eq!(h.run(&["EXPIRE", "k", "-1", "LT"]), int(1));
        assert_eq!(h.run(&["EXISTS", "k"]), int(0));
    }

    #[test]
    fn lazy_expiry_is_seen() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "v"]);
        assert_eq!(h.run(&["PEXPIRE", "k", "1"]), int(1));
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(h.run(&["TTL", "k"]), int(-2));
        assert_eq!(h.run(&["PERSIST", "k"]), int(0));
        assert_eq!(h.run(&["EXPIRE", "k", "10"]), int(0));
    }
}
