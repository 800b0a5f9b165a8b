//! Counters: INCR, DECR, INCRBY, DECRBY, INCRBYFLOAT.

use larder_engine::decimal::{format_i64, I64_MAX_DIGITS};
use larder_engine::feed::class;

use super::long_double::LongDouble;
use super::string_at;
use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;

/// DECRBY's own text for negating `i64::MIN`.
const DECREMENT_OVERFLOW: &str = "ERR decrement would overflow";

/// INCR key
pub(super) fn incr(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    incr_by(c, key, 1)
}

/// DECR key
pub(super) fn decr(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    incr_by(c, key, -1)
}

/// INCRBY key increment
pub(super) fn incrby(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let by = c.args.i64()?;
    incr_by(c, key, by)
}

/// DECRBY key decrement
pub(super) fn decrby(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let by = c.args.i64()?;
    let by = by.checked_neg().ok_or(Error::Static(DECREMENT_OVERFLOW))?;
    incr_by(c, key, by)
}

/// Add `by` to the integer at `key` (0 if absent), keeping its TTL. The new digits are
/// formatted on the stack, and an inline value of the same length is overwritten in place, so
/// the common case allocates nothing.
fn incr_by(c: &mut Cmd<'_>, key: &[u8], by: i64) -> Result<()> {
    let (mut shard, hash) = c.shard_of(key);
    let mut buf = [0u8; I64_MAX_DIGITS];
    let value = match shard.find_touch(key, hash, c.now_ms, c.access()) {
        Some(slot) => {
            let old =
                parse_i64(string_at(&shard, slot)?).ok_or(Error::Static(error::NOT_INTEGER))?;
            let new = old.checked_add(by).ok_or(Error::Static(error::OVERFLOW))?;
            shard.set_string(slot, format_i64(new, &mut buf));
            new
        }
        None => {
            shard.insert_string(key, hash, format_i64(by, &mut buf), 0, c.now_ms);
            c.notify(class::NEW, "new", key);
            by
        }
    };
    // Every counter command raises `incrby`, DECR included, as in Redis.
    c.notify(class::STRING, "incrby", key);
    drop(shard);
    c.out.int(value);
    Ok(())
}

/// INCRBYFLOAT key increment
///
/// Computed in x87 extended precision and stored as Redis's `%.17Lf` text (see
/// `long_double`), so results match Redis digit for digit. The TTL is kept.
pub(super) fn incrbyfloat(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    // Redis checks the key's type and value before the increment, so a bad increment is
    // reported only after those.
    let increment = LongDouble::parse(c.args.next_arg()?);
    let (mut shard, hash) = c.shard_of(key);
    let found = shard.find_touch(key, hash, c.now_ms, c.access());
    let current = match found {
        Some(slot) => {
            LongDouble::parse(string_at(&shard, slot)?).ok_or(Error::Static(error::NOT_FLOAT))?
        }
        None => LongDouble::ZERO,
    };
    let increment = increment.ok_or(Error::Static(error::NOT_FLOAT))?;
    let text = current
        .add(increment)
        .to_human()
        .ok_or(Error::Static(error::NAN_OR_INFINITY))?;
    match found {
        Some(slot) => shard.set_string(slot, &text),
        None => {
            shard.insert_string(key, hash, &text, 0, c.now_ms);
            c.notify(class::NEW, "new", key);
        }
    }
    c.notify(class::STRING, "incrbyfloat", key);
    // Replayed as the value it computed (float formatting must not differ on replay), keeping
    // the deadline: Redis's SET ... KEEPTTL.
    c.propagate(&[b"SET", key, &text, b"KEEPTTL"]);
    drop(shard);
    c.out.bulk(&text);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    #[test]
    fn format_i64_like_display() {
        let mut buf = [0u8; I64_MAX_DIGITS];
        for v in [
            0,
            1,
            -1,
            9,
            10,
            -10,
            12345,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ] {
            assert_eq!(format_i64(v, &mut buf), v.to_string().as_bytes());
        }
    }

    #[test]
    fn incr_decr() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["INCR", "n"]), int(1));
        assert_eq!(h.run(&["INCR", "n"]), int(2));
        assert_eq!(h.run(&["DECR", "n"]), int(1));
        assert_eq!(h.run(&["DECR", "m"]), int(-1));
        assert_eq!(h.run(&["INCRBY", "n", "100"]), int(101));
        assert_eq!(h.run(&["INCRBY", "n", "-200"]), int(-99));
        assert_eq!(h.run(&["DECRBY", "n", "-99"]), int(0));
        assert_eq!(h.run(&["DECRBY", "x", "5"]), int(-5));
        assert_eq!(h.run(&["GET", "n"]), bulk("0"));
        assert_eq!(h.run(&["GET", "x"]), bulk("-5"));
        assert_eq!(h.run(&["INCRBY", "x", "9"]), int(4));
        assert_eq!(h.run(&["GET", "x"]), bulk("4"));
        assert_eq!(h.run(&["SET", "big", "9223372036854775806"]), ok());
        assert_eq!(h.run(&["INCR", "big"]), int(i64::MAX));
        assert_eq!(h.run(&["SET", "neg", "-9223372036854775808"]), ok());
        assert_eq!(h.run(&["INCRBY", "neg", "9223372036854775807"]), int(-1));
    }

    #[test]
    fn incr_keeps_ttl() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["SETEX", "n", "100", "5"]), ok());
        assert_eq!(h.run(&["INCR", "n"]), int(6));
        assert_eq!(h.run(&["INCRBYFLOAT", "n", "0.5"]), bulk("6.5"));
        let (mut shard, hash) = crate::testing::shard_for(&h.server, b"n");
        let slot = shard.find(b"n", hash, 0).expect("n");
        assert!(shard.entry(slot).expire_at_ms().is_some());
    }

    #[test]
    fn incr_errors() {
        let mut h = Harness::new();
        for bad in [
            " 1",
            "1 ",
            "01",
            "+1",
            "-0",
            "1.0",
            "abc",
            "",
            "9223372036854775808",
        ] {
            assert_eq!(h.run(&["SET", "s", bad]), ok());
            assert_eq!(
                h.run(&["INCR", "s"]),
                err("ERR value is not an integer or out of range"),
                "{bad:?}"
            );
            assert_eq!(h.run(&["GET", "s"]), bulk(bad));
        }
        assert_eq!(h.run(&["SET", "max", "9223372036854775807"]), ok());
        assert_eq!(h.run(&["SET", "min", "-9223372036854775808"]), ok());
        for (argv, want) in [
            (
                &["INCR", "max"][..],
                "ERR increment or decrement would overflow",
            ),
            (
                &["INCRBY", "max", "1"],
                "ERR increment or decrement would overflow",
            ),
            (
                &["DECRBY", "max", "-1"],
                "ERR increment or decrement would overflow",
            ),
            (
                &["DECR", "min"],
                "ERR increment or decrement would overflow",
            ),
            (
                &["INCRBY", "min", "-1"],
                "ERR increment or decrement would overflow",
            ),
            (
                &["DECRBY", "n", "-9223372036854775808"],
                "ERR decrement would overflow",
            ),
            (
                &["INCRBY", "n", "abc"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["INCRBY", "n", "1.5"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["DECRBY", "n", "9223372036854775808"],
                "ERR value is not an integer or out of range",
            ),
            (
                &["INCR"],
                "ERR wrong number of arguments for 'incr' command",
            ),
            (
                &["INCRBY", "n"],
                "ERR wrong number of arguments for 'incrby' command",
            ),
        ] {
            assert_eq!(h.run(argv), err(want), "{argv:?}");
        }
        assert_eq!(h.run(&["GET", "max"]), bulk("9223372036854775807"));
        assert_eq!(h.run(&["GET", "n"]), larder_resp::Frame::Null);
    }

    #[test]
    fn incrbyfloat_like_redis() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["INCRBYFLOAT", "f", "10.5"]), bulk("10.5"));
        assert_eq!(h.run(&["INCRBYFLOAT", "f", "0.1"]), bulk("10.6"));
        assert_eq!(h.run(&["GET", "f"]), bulk("10.6"));
        for (start, by, want) in [
            ("0.1", "0.2", "0.3"),
            ("3.0e3", "0", "3000"),
            ("5.0e3", "2.0e2", "5200"),
            ("1", "-1", "0"),
            ("10", "-15.25", "-5.25"),
            ("0x10", "0x1p-2", "16.25"),
            ("1e20", "0", "100000000000000000000"),
            ("0.000003814697265625", "0", "0.00000381469726562"),
            ("-0.0000000000000000001", "0", "0"),
            ("5", "+.5", "5.5"),
            ("5", "1E1", "15"),
        ] {
            assert_eq!(h.run(&["SET", "f", start]), ok());
            assert_eq!(
                h.run(&["INCRBYFLOAT", "f", by]),
                bulk(want),
                "{start} + {by}"
            );
            assert_eq!(h.run(&["GET", "f"]), bulk(want));
        }
        // The reply is a bulk string in RESP3 too, as Redis sends it.
        h.out.proto = larder_resp::Protocol::Resp3;
        assert_eq!(h.run_raw(&[b"INCRBYFLOAT", b"g", b"1.5"]), b"$3\r\n1.5\r\n");
    }

    #[test]
    fn incrbyfloat_errors() {
        let mut h = Harness::new();
        for (start, by, want) in [
            ("1", "abc", "ERR value is not a valid float"),
            ("1", "1e5000", "ERR value is not a valid float"),
            ("1", "nan", "ERR value is not a valid float"),
            ("1", " 1", "ERR value is not a valid float"),
            ("1", "", "ERR value is not a valid float"),
            ("abc", "1", "ERR value is not a valid float"),
            ("1 ", "1", "ERR value is not a valid float"),
            ("1", "inf", "ERR increment would produce NaN or Infinity"),
            (
                "1",
                "-infinity",
                "ERR increment would produce NaN or Infinity",
            ),
            (
                "0x1.fffffffffffffffep16383",
                "0x1p16383",
                "ERR increment would produce NaN or Infinity",
            ),
        ] {
            assert_eq!(h.run(&["SET", "f", start]), ok());
            assert_eq!(
                h.run(&["INCRBYFLOAT", "f", by]),
                err(want),
                "{start} + {by}"
            );
            assert_eq!(h.run(&["GET", "f"]), bulk(start));
        }
        // A string with a NUL byte inside is not a float (Redis checks the whole length).
        h.run_bytes(&[b"SET", b"z", b"1\x002"]);
        assert_eq!(
            h.run(&["INCRBYFLOAT", "z", "1"]),
            err("ERR value is not a valid float")
        );
        assert_eq!(
            h.run(&["INCRBYFLOAT", "new", "x"]),
            err("ERR value is not a valid float")
        );
        assert_eq!(h.run(&["GET", "new"]), larder_resp::Frame::Null);
        assert_eq!(
            h.run(&["INCRBYFLOAT", "f"]),
            err("ERR wrong number of arguments for 'incrbyfloat' command")
        );
    }
}
