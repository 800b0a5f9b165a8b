//! Geo commands, with Redis 7.0 semantics: GEOADD GEOPOS GEODIST GEOHASH here, the searches
//! (GEOSEARCH GEOSEARCHSTORE GEORADIUS GEORADIUSBYMEMBER and the _RO forms) in [`search`].
//!
//! A geo set is a sorted set whose scores are 52-bit geohashes; the geohash algorithms live
//! in [`larder_engine::geo`], the sorted set's lookups and writes are the zset family's
//! ([`crate::zset`]). These files parse arguments and shape replies.

mod search;
#[cfg(test)]
mod tests;

use larder_engine::geo;
use larder_engine::zset::AddFlags;
use larder_resp::{Protocol, ReplyBuf};

use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::locks::Scope;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};
use crate::zset::{apply_adds, parse_score, read_zset, zset_at, Adds};

const BAD_UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    keys: KeySpec,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        keys,
        Group::Geo,
        summary,
        since,
        handler,
    )
}

const ONE: KeySpec = KeySpec::ONE;
/// GEORADIUS and GEORADIUSBYMEMBER name their STORE / STOREDIST key among the options: the
/// executor locks it beside the source when one is given.
const RADIUS_KEYS: KeySpec = KeySpec::ONE.with_scope(Scope::AfterWords {
    words: &["store", "storedist"],
});

/// The geo family's table. Arity, flags, key positions, summaries and versions are those of
/// Redis 7.0's COMMAND INFO / COMMAND DOCS.
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = &[
    cmd("geoadd", -5, WRITE | DENYOOM, ONE, "Add one or more geospatial items in the geospatial index represented using a sorted set", "3.2.0", geoadd),
    cmd("geopos", -2, READONLY, ONE, "Returns longitude and latitude of members of a geospatial index", "3.2.0", geopos),
    cmd("geodist", -4, READONLY, ONE, "Returns the distance between two members of a geospatial index", "3.2.0", geodist),
    cmd("geohash", -2, READONLY, ONE, "Returns members of a geospatial index as standard geohash strings", "3.2.0", geohash),
    cmd("geosearch", -7, READONLY, ONE, "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.", "6.2.0", search::geosearch),
    cmd("geosearchstore", -8, WRITE | DENYOOM, KeySpec::TWO, "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.", "6.2.0", search::geosearchstore),
    cmd("georadius", -6, WRITE | DENYOOM | MOVABLE_KEYS, RADIUS_KEYS, "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point", "3.2.0", search::georadius),
    cmd("georadiusbymember", -5, WRITE | DENYOOM | MOVABLE_KEYS, RADIUS_KEYS, "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member", "3.2.0", search::georadiusbymember),
    cmd("georadius_ro", -6, READONLY, ONE, "A read-only variant for GEORADIUS", "3.2.10", search::georadius_ro),
    cmd("georadiusbymember_ro", -5, READONLY, ONE, "A read-only variant for GEORADIUSBYMEMBER", "3.2.10", search::georadiusbymember_ro),
];

// ---------------------------------------------------------------------------------------------
// Arguments and replies shared by the family.

/// A unit's size in meters (`extractUnitOrReply`).
fn unit_arg(b: &[u8]) -> Result<f64> {
    let u = b.to_ascii_lowercase();
    match u.as_slice() {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err(Error::Static(BAD_UNIT)),
    }
}

/// A float as `getDoubleFromObjectOrReply` reads it, with `msg` as the error.
fn float_arg(b: &[u8], msg: &'static str) -> Result<f64> {
    parse_score(b).ok_or(Error::Static(msg))
}

/// `longitude latitude` (`extractLongLatOrReply`): floats, then inside the geo limits.
fn lon_lat_arg(lon: &[u8], lat: &[u8]) -> Result<(f64, f64)> {
    let lon = float_arg(lon, error::NOT_FLOAT)?;
    let lat = float_arg(lat, error::NOT_FLOAT)?;
    if !(geo::LONG_MIN..=geo::LONG_MAX).contains(&lon)
        || !(geo::LAT_MIN..=geo::LAT_MAX).contains(&lat)
    {
        return Err(Error::Owned(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok((lon, lat))
}

/// A coordinate (`addReplyHumanLongDouble`): a bulk string in RESP2, a double in RESP3, in
/// `%.17Lf` without trailing zeros.
fn reply_coord(out: &mut ReplyBuf, v: f64) {
    let text = geo::format_coord(v);
    match out.proto {
        Protocol::Resp2 => out.bulk(text.as_bytes()),
        Protocol::Resp3 => {
            out.raw(b",");
            out.raw(text.as_bytes());
            out.raw(b"\r\n");
        }
    }
}

/// A distance (`addReplyDoubleDistance`): a bulk string with four decimals.
fn reply_distance(out: &mut ReplyBuf, d: f64) {
    out.bulk(geo::format_distance(d).as_bytes());
}

// ---------------------------------------------------------------------------------------------
// Handlers.

/// GEOADD key [NX|XX] [CH] longitude latitude member [longitude latitude member ...]
///
/// Redis rewrites it into ZADD: the scores are the positions' geohashes, and the key's
/// events are ZADD's (`zadd`).
fn geoadd(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let (mut nx, mut xx, mut ch) = (false, false, false);
    loop {
        if c.args.eat("NX") {
            nx = true;
        } else if c.args.eat("XX") {
            xx = true;
        } else if c.args.eat("CH") {
            ch = true;
        } else {
            break;
        }
    }
    let rest = c.args.rest();
    // Redis's own check (XX with NX is a plain syntax error here), then ZADD's (no pairs).
    if rest.len() % 3 != 0 || (xx && nx) || rest.is_empty() {
        return Err(Error::Static(error::SYNTAX));
    }
    let mut scores = Vec::with_capacity(rest.len() / 3);
    let mut pairs: Vec<&[u8]> = Vec::with_capacity(rest.len() / 3 * 2);
    for t in rest.chunks(3) {
        let (lon, lat) = lon_lat_arg(t[0], t[1])?;
        let score = geo::score_of(lon, lat).ok_or(Error::Static(error::SYNTAX))?;
        scores.push(score as f64);
        pairs.push(t[0]);
        pairs.push(t[2]);
    }
    let limits = c.limits();
    let adds = Adds {
        pairs: &pairs,
        scores: &scores,
        flags: AddFlags {
            nx,
            xx,
            ..AddFlags::default()
        },
        limits: &limits,
    };
    let tally = apply_adds(c, key, &adds, rest[2].len(), "zadd")?;
    c.out.int(if ch {
        tally.added + tally.updated
    } else {
        tally.added
    });
    Ok(())
}

/// GEOPOS key [member ...]
fn geopos(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let members = c.args.rest();
    let (mut shard, hash) = c.shard_of(key);
    let z = crate::collection::read_value::<larder_engine::ZSet>(c, &mut shard, key, hash)?;
    c.out.array(members.len());
    for m in members {
        match z.and_then(|z| z.score(m)).and_then(geo::decode_score) {
            Some((lon, lat)) => {
                c.out.array(2);
                reply_coord(c.out, lon);
                reply_coord(c.out, lat);
            }
            None => c.out.null_array(),
        }
    }
    Ok(())
}

/// GEODIST key member1 member2 [M|KM|FT|MI]
fn geodist(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let m1 = c.args.next_arg()?;
    let m2 = c.args.next_arg()?;
    let to_meters = match c.args.rest() {
        [] => 1.0,
        [unit] => unit_arg(unit)?,
        _ => return Err(Error::Static(error::SYNTAX)),
    };
    let (mut shard, hash) = c.shard_of(key);
    let Some(slot) = read_zset(c, &mut shard, key, hash)? else {
        c.out.null();
        return Ok(());
    };
    let z = zset_at(&shard, slot)?;
    let positions = z
        .score(m1)
        .zip(z.score(m2))
        .and_then(|(s1, s2)| geo::decode_score(s1).zip(geo::decode_score(s2)));
    match positions {
        Some(((lon1, lat1), (lon2, lat2))) => {
            reply_distance(c.out, geo::distance(lon1, lat1, lon2, lat2) / to_meters)
        }
        None => c.out.null(),
    }
    Ok(())
}

/// GEOHASH key [member ...]
fn geohash(c: &mut Cmd<'_>) -> Result<()> {
    let key = c.args.key()?;
    let members = c.args.rest();
    let (mut shard, hash) = c.shard_of(key);
    let z = crate::collection::read_value::<larder_engine::ZSet>(c, &mut shard, key, hash)?;
    c.out.array(members.len());
    for m in members {
        match z.and_then(|z| z.score(m)).and_then(geo::geohash_string) {
            Some(h) => c.out.bulk(&h),
            None => c.out.null(),
        }
    }
    Ok(())
}
