//! String commands: GET, SET and friends.

use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: KeySpec,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        arity,
        flags,
        keys,
        group: Group::String,
        summary,
        since,
        handler,
        subcommands: &[],
    }
}

/// The string family's table.
pub static COMMANDS: &[CommandSpec] = &[
    cmd("get", 2, READONLY | FAST, KeySpec::ONE, "Returns the string value of a key.", "1.0.0", get),
    cmd("set", -3, WRITE | DENYOOM, KeySpec::ONE, "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", "1.0.0", set),
];

/// GET key
fn get(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let (mut shard, hash) = c.db().lock_key(key);
    match shard.find_touch(key, hash, c.now_ms) {
        Some(slot) => {
            let value = shard
                .entry(slot)
                .string()
                .ok_or(Error::Static(error::WRONGTYPE))?;
            c.out.bulk(value);
            drop(shard);
            c.hit(true);
        }
        None => {
            drop(shard);
            c.out.null();
            c.hit(false);
        }
    }
    Ok(())
}

/// When a write's deadline comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// Remove any deadline.
    Clear,
    /// Keep the existing deadline (KEEPTTL).
    Keep,
    /// Absolute Unix ms.
    At(u64),
}

/// NX / XX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Condition {
    Always,
    IfAbsent,
    IfPresent,
}

/// Parse one of EX/PX/EXAT/PXAT's argument into an absolute deadline, with Redis's checks.
/// `unit_ms` is 1000 for seconds; `absolute` for EXAT/PXAT.
pub fn parse_deadline(
    raw: &[u8],
    unit_ms: i64,
    absolute: bool,
    now_ms: u64,
    cmd_name: &str,
) -> Result<u64> {
    let v = crate::args::parse_i64(raw).ok_or(Error::Static(error::NOT_INTEGER))?;
    if v <= 0 {
        return Err(error::invalid_expire(cmd_name));
    }
    let ms = v
        .checked_mul(unit_ms)
        .ok_or_else(|| error::invalid_expire(cmd_name))?;
    let at = if absolute {
        ms
    } else {
        ms.checked_add(now_ms as i64)
            .ok_or_else(|| error::invalid_expire(cmd_name))?
    };
    Ok(at as u64)
}

/// SET key value [NX | XX] [GET] [EX s | PX ms | EXAT ts | PXAT ts-ms | KEEPTTL]
fn set(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let value = c.args.next_arg()?;
    let mut cond = Condition::Always;
    let mut expiry = Expiry::Clear;
    let mut expiry_given = false;
    let mut want_old = false;
    while let Some(opt) = c.args.opt() {
        let upper = opt.to_ascii_uppercase();
        match upper.as_slice() {
            b"NX" if cond == Condition::Always => cond = Condition::IfAbsent,
            b"XX" if cond == Condition::Always => cond = Condition::IfPresent,
            b"GET" if !want_old => want_old = true,
            b"KEEPTTL" if !expiry_given => {
                expiry = Expiry::Keep;
                expiry_given = true;
            }
            b"EX" | b"PX" | b"EXAT" | b"PXAT" if !expiry_given => {
                let raw = c.args.next_arg()?;
                let (unit, absolute) = match upper.as_slice() {
                    b"EX" => (1000, false),
                    b"PX" => (1, false),
                    b"EXAT" => (1000, true),
                    _ => (1, true),
                };
                expiry = Expiry::At(parse_deadline(raw, unit, absolute, c.now_ms, "set")?);
                expiry_given = true;
            }
            _ => return Err(Error::Static(error::SYNTAX)),
        }
    }
    let (mut shard, hash) = c.db().lock_key(key);
    let found = shard.find(key, hash, c.now_ms);
    if want_old {
        if let Some(slot) = found {
            if shard.entry(slot).string().is_none() {
                return Err(Error::Static(error::WRONGTYPE));
            }
        }
    }
    let proceed = match cond {
        Condition::Always => true,
        Condition::IfAbsent => found.is_none(),
        Condition::IfPresent => found.is_some(),
    };
    if want_old {
        match found.and_then(|s| shard.entry(s).string()) {
            Some(old) => c.out.bulk(old),
            None => c.out.null(),
        }
    }
    if !proceed {
        if !want_old {
            c.out.null();
        }
        return Ok(());
    }
    match found {
        Some(slot) => {
            shard.set_string(slot, value);
            match expiry {
                Expiry::Keep => {}
                Expiry::Clear => {
                    if shard.entry(slot).expire_at_ms().is_some() {
                        shard.set_expire(slot, None);
                    }
                }
                Expiry::At(at) => shard.set_expire(slot, Some(at)),
            }
        }
        None => {
            let at = match expiry {
                Expiry::At(at) => at,
                Expiry::Keep | Expiry::Clear => 0,
            };
            shard.insert_string(key, hash, value, at, c.now_ms);
        }
    }
    drop(shard);
    if !want_old {
        c.out.simple("OK");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::testing::*;

    #[test]
    fn get_set_basics() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["GET", "k"]), larder_resp::Frame::Null);
        assert_eq!(h.run(&["SET", "k", "v"]), ok());
        assert_eq!(h.run(&["get", "k"]), bulk("v"));
        assert_eq!(h.run(&["SET", "k", "w", "GET"]), bulk("v"));
        assert_eq!(h.run(&["SET", "k", "x", "NX"]), larder_resp::Frame::Null);
        assert_eq!(h.run(&["SET", "k", "x", "NX", "GET"]), bulk("w"));
        assert_eq!(h.run(&["SET", "n", "x", "XX"]), larder_resp::Frame::Null);
        assert_eq!(
            h.run(&["SET", "k", "v", "NX", "XX"]),
            err("ERR syntax error")
        );
        assert_eq!(
            h.run(&["SET", "k", "v", "EX", "0"]),
            err("ERR invalid expire time in 'set' command")
        );
        assert_eq!(
            h.run(&["SET", "k", "v", "EX", "x"]),
            err("ERR value is not an integer or out of range")
        );
        assert_eq!(
            h.run(&["SET", "k", "v", "EX", "10", "PX", "5"]),
            err("ERR syntax error")
        );
        assert_eq!(
            h.run(&["SET", "k", "v", "EX", "10", "KEEPTTL"]),
            err("ERR syntax error")
        );
        assert_eq!(
            h.run(&["SET", "k"]),
            err("ERR wrong number of arguments for 'set' command")
        );
    }
}
