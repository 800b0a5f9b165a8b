//! GEOSEARCH, GEOSEARCHSTORE, GEORADIUS, GEORADIUSBYMEMBER and the _RO forms, after Redis
//! 7.0's `georadiusGeneric`: the same argument order, checks and error texts, the same
//! nine-cell search ([`geo::search`]), sort, COUNT / ANY, replies and stored results.

use larder_engine::geo::{self, Shape, ShapeKind};
use larder_engine::ZSet;

use super::{float_arg, lon_lat_arg, reply_coord, reply_distance, unit_arg};
use crate::args::parse_i64;
use crate::error::{self, Error, Result};
use crate::exec::Cmd;
use crate::zset::store_result;

const NOT_MEMBER: &str = "ERR could not decode requested zset member";
const NEED_RADIUS: &str = "ERR need numeric radius";
const NEED_WIDTH: &str = "ERR need numeric width";
const NEED_HEIGHT: &str = "ERR need numeric height";
const NEGATIVE_RADIUS: &str = "ERR radius cannot be negative";
const NEGATIVE_BOX: &str = "ERR height or width cannot be negative";
const COUNT_POSITIVE: &str = "ERR COUNT must be > 0";
const ANY_NEEDS_COUNT: &str = "ERR the ANY argument requires COUNT argument";
const STORE_WITH: &str =
    "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options";
const SEARCHSTORE_WITH: &str =
    "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options";

/// Which command runs the search.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// GEORADIUS: `key longitude latitude radius unit`.
    Coords,
    /// GEORADIUSBYMEMBER: `key member radius unit`.
    Member,
    /// GEOSEARCH: `key` then FROM... / BY... options.
    Search,
    /// GEOSEARCHSTORE: `destination source` then GEOSEARCH's options and STOREDIST.
    SearchStore,
}

/// The sort asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sort {
    None,
    Asc,
    Desc,
}

/// A point found, owned so that the source's shard can be let go before a store.
struct Found {
    member: Vec<u8>,
    score: f64,
    longitude: f64,
    latitude: f64,
    dist: f64,
}

/// `extractDistanceOrReply`: `radius unit` → (radius, meters per unit).
fn radius_args(radius: &[u8], unit: &[u8]) -> Result<(f64, f64)> {
    let r = float_arg(radius, NEED_RADIUS)?;
    if r < 0.0 {
        return Err(Error::Static(NEGATIVE_RADIUS));
    }
    Ok((r, unit_arg(unit)?))
}

/// `extractBoxOrReply`: `width height unit` → (width, height, meters per unit).
fn box_args(width: &[u8], height: &[u8], unit: &[u8]) -> Result<(f64, f64, f64)> {
    let w = float_arg(width, NEED_WIDTH)?;
    let h = float_arg(height, NEED_HEIGHT)?;
    if h < 0.0 || w < 0.0 {
        return Err(Error::Static(NEGATIVE_BOX));
    }
    Ok((w, h, unit_arg(unit)?))
}

/// The position of `member` in the geo set `z` (`longLatFromMember`).
fn member_position(z: &ZSet, member: &[u8]) -> Result<(f64, f64)> {
    z.score(member)
        .and_then(geo::decode_score)
        .ok_or(Error::Static(NOT_MEMBER))
}

/// GEORADIUS key longitude latitude radius unit [options] [STORE key] [STOREDIST key]
pub(super) fn georadius(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Kind::Coords, true)
}

/// GEORADIUSBYMEMBER key member radius unit [options] [STORE key] [STOREDIST key]
pub(super) fn georadiusbymember(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Kind::Member, true)
}

/// GEORADIUS_RO key longitude latitude radius unit [options]
pub(super) fn georadius_ro(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Kind::Coords, false)
}

/// GEORADIUSBYMEMBER_RO key member radius unit [options]
pub(super) fn georadiusbymember_ro(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Kind::Member, false)
}

/// GEOSEARCH key FROMMEMBER member | FROMLONLAT longitude latitude
/// BYRADIUS radius unit | BYBOX width height unit [ASC|DESC] [COUNT count [ANY]]
/// [WITHCOORD] [WITHDIST] [WITHHASH]
pub(super) fn geosearch(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Kind::Search, false)
}

/// GEOSEARCHSTORE destination source FROMMEMBER ... | FROMLONLAT ... BYRADIUS ... | BYBOX ...
/// [ASC|DESC] [COUNT count [ANY]] [STOREDIST]
pub(super) fn geosearchstore(c: &mut Cmd<'_>) -> Result<()> {
    generic(c, Kind::SearchStore, false)
}

/// What a parsed request asks for.
struct Request<'a> {
    store: Option<&'a [u8]>,
    storedist: bool,
    withdist: bool,
    withhash: bool,
    withcoord: bool,
    sort: Sort,
    any: bool,
    count: usize,
    conversion: f64,
}

/// `georadiusGeneric`. `store_ok`: the command takes STORE / STOREDIST keys.
fn generic(c: &mut Cmd<'_>, kind: Kind, store_ok: bool) -> Result<()> {
    let argv = c.args.argv();
    let src_index = if kind == Kind::SearchStore { 2 } else { 1 };
    let src = argv[src_index];
    let (mut shard, hash) = c.shard_of(src);
    let z = crate::collection::read_value::<larder_engine::ZSet>(c, &mut shard, src, hash)?;

    // The center and size the fixed arguments give.
    let mut center = (0.0, 0.0);
    let mut shape_kind = ShapeKind::Radius(0.0);
    let mut conversion = 0.0;
    let base = match kind {
        Kind::Coords => {
            center = lon_lat_arg(argv[2], argv[3])?;
            let (r, conv) = radius_args(argv[4], argv[5])?;
            (shape_kind, conversion) = (ShapeKind::Radius(r), conv);
            6
        }
        Kind::Member => {
            // Without a source key Redis parses the options only, to pick the reply.
            if let Some(z) = z {
                center = member_position(z, argv[2])?;
                let (r, conv) = radius_args(argv[3], argv[4])?;
                (shape_kind, conversion) = (ShapeKind::Radius(r), conv);
            }
            5
        }
        Kind::Search => 2,
        Kind::SearchStore => 3,
    };
    let search = matches!(kind, Kind::Search | Kind::SearchStore);

    let mut req = Request {
        store: (kind == Kind::SearchStore).then(|| argv[1]),
        storedist: false,
        withdist: false,
        withhash: false,
        withcoord: false,
        sort: Sort::None,
        any: false,
        count: 0,
        conversion,
    };
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let opts = argv.get(base..).unwrap_or_default();
    let remaining = opts.len();
    let mut i = 0;
    while i < remaining {
        let arg = opts[i];
        let is = |w: &str| arg.eq_ignore_ascii_case(w.as_bytes());
        if is("withdist") {
            req.withdist = true;
        } else if is("withhash") {
            req.withhash = true;
        } else if is("withcoord") {
            req.withcoord = true;
        } else if is("any") {
            req.any = true;
        } else if is("asc") {
            req.sort = Sort::Asc;
        } else if is("desc") {
            req.sort = Sort::Desc;
        } else if is("count") && i + 1 < remaining {
            let n = parse_i64(opts[i + 1]).ok_or(Error::Static(error::NOT_INTEGER))?;
            if n <= 0 {
                return Err(Error::Static(COUNT_POSITIVE));
            }
            req.count = n as usize;
            i += 1;
        } else if (is("store") || is("storedist")) && i + 1 < remaining && store_ok && !search {
            req.store = Some(opts[i + 1]);
            req.storedist = is("storedist");
            i += 1;
        } else if is("storedist") && kind == Kind::SearchStore {
            req.storedist = true;
        } else if is("frommember") && i + 1 < remaining && search && !fromloc {
            if let Some(z) = z {
                center = member_position(z, opts[i + 1])?;
            }
            frommember = true;
            i += 1;
        } else if is("fromlonlat") && i + 2 < remaining && search && !frommember {
            center = lon_lat_arg(opts[i + 1], opts[i + 2])?;
            fromloc = true;
            i += 2;
        } else if is("byradius") && i + 2 < remaining && search && !bybox {
            let (r, conv) = radius_args(opts[i + 1], opts[i + 2])?;
            (shape_kind, req.conversion) = (ShapeKind::Radius(r), conv);
            byradius = true;
            i += 2;
        } else if is("bybox") && i + 3 < remaining && search && !byradius {
            let (width, height, conv) = box_args(opts[i + 1], opts[i + 2], opts[i + 3])?;
            (shape_kind, req.conversion) = (ShapeKind::Box { width, height }, conv);
            bybox = true;
            i += 3;
        } else {
            return Err(Error::Static(error::SYNTAX));
        }
        i += 1;
    }

    if req.store.is_some() && (req.withdist || req.withhash || req.withcoord) {
        return Err(Error::Static(if kind == Kind::SearchStore {
            SEARCHSTORE_WITH
        } else {
            STORE_WITH
        }));
    }
    let name = String::from_utf8_lossy(argv[0]);
    if search && !(frommember || fromloc) {
        return Err(Error::Owned(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if search && !(byradius || bybox) {
        return Err(Error::Owned(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if req.any && req.count == 0 {
        return Err(Error::Static(ANY_NEEDS_COUNT));
    }

    let found: Option<Vec<Found>> = z.map(|z| {
        let shape = Shape {
            longitude: center.0,
            latitude: center.1,
            conversion: req.conversion,
            kind: shape_kind,
        };
        let limit = if req.any { req.count } else { 0 };
        geo::search(z, &shape, limit)
            .into_iter()
            .map(|p| Found {
                member: p.member.to_vec(),
                score: p.score,
                longitude: p.longitude,
                latitude: p.latitude,
                dist: p.dist,
            })
            .collect()
    });
    drop(shard);
    finish(c, found, &req, kind)
}

/// Sort, cut, and reply or store (the second half of `georadiusGeneric`).
fn finish(c: &mut Cmd<'_>, found: Option<Vec<Found>>, req: &Request<'_>, kind: Kind) -> Result<()> {
    let event = if kind == Kind::SearchStore {
        "geosearchstore"
    } else {
        "georadiusstore"
    };
    let Some(mut found) = found else {
        match req.store {
            Some(dest) => {
                let (mut shard, hash) = c.shard_of(dest);
                store_result(c, &mut shard, dest, hash, ZSet::new(), event);
                drop(shard);
                c.out.int(0);
            }
            None => c.out.array(0),
        }
        return Ok(());
    };
    // COUNT without ANY returns the nearest: ascending unless asked otherwise.
    let sort = if req.count != 0 && req.sort == Sort::None && !req.any {
        Sort::Asc
    } else {
        req.sort
    };
    // All of them sorted: Redis's qsort (glibc's stable merge sort) keeps equal distances
    // in the order found. Fewer: Redis's partial quicksort, whose order of equal distances
    // is its own.
    if sort != Sort::None {
        let sign = if sort == Sort::Asc { 1 } else { -1 };
        let cmp = |a: &Found, b: &Found| {
            sign * if a.dist > b.dist {
                1
            } else if a.dist == b.dist {
                0
            } else {
                -1
            }
        };
        if req.count == 0 || found.len() <= req.count {
            found.sort_by(|a, b| cmp(a, b).cmp(&0));
        } else {
            geo::partial_sort(&mut found, 0, req.count - 1, &cmp);
        }
    }
    if req.count != 0 {
        found.truncate(req.count);
    }
    for f in &mut found {
        f.dist /= req.conversion;
    }
    match req.store {
        None => {
            let options =
                usize::from(req.withdist) + usize::from(req.withhash) + usize::from(req.withcoord);
            c.out.array(found.len());
            for f in &found {
                if options > 0 {
                    c.out.array(options + 1);
                }
                c.out.bulk(&f.member);
                if req.withdist {
                    reply_distance(c.out, f.dist);
                }
                if req.withhash {
                    c.out.int(f.score as i64);
                }
                if req.withcoord {
                    c.out.array(2);
                    reply_coord(c.out, f.longitude);
                    reply_coord(c.out, f.latitude);
                }
            }
        }
        Some(dest) => {
            let limits = c.limits();
            let z = ZSet::from_pairs(
                found.iter().map(|f| {
                    (
                        f.member.as_slice(),
                        if req.storedist { f.dist } else { f.score },
                    )
                }),
                &limits,
            );
            let (mut shard, hash) = c.shard_of(dest);
            let n = store_result(c, &mut shard, dest, hash, z, event);
            drop(shard);
            c.out.int(n as i64);
        }
    }
    Ok(())
}
