//! Geo sets: sorted sets whose scores are 52-bit interleaved geohashes, ported from Redis
//! 7.0's `geohash.c`, `geohash_helper.c` and the search half of `geo.c`, so that positions,
//! distances, geohash strings and search results match Redis exactly.
//!
//! A position is encoded at [`STEP_MAX`] (26 bits of latitude interleaved with 26 bits of
//! longitude); a radius or box search covers the shape with the cell of the center and its
//! eight neighbours at a step estimated from the radius ([`areas_by_shape`]), reads each
//! cell's score range from the [`ZSet`], and keeps the points inside the shape
//! ([`search`]). Sorting and replying are the command's business.

use crate::zset::{Order, ScoreRange};
use crate::ZSet;

/// The latitude limits (EPSG:900913 / EPSG:3785 / OSGEO:41001).
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
/// The longitude limits.
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
/// 26 × 2 = 52 bits.
pub const STEP_MAX: u8 = 26;

/// Earth's quadratic mean radius for WGS-84, Redis's constant.
pub const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

fn deg_rad(ang: f64) -> f64 {
    ang * D_R
}

fn rad_deg(ang: f64) -> f64 {
    ang / D_R
}

/// A geohash of `step` bits per coordinate (`GeoHashBits`). Zero bits and zero step is
/// "no cell" (a neighbour excluded from a search).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashBits {
    pub bits: u64,
    pub step: u8,
}

impl HashBits {
    fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }

    /// The hash left-aligned to 52 bits (`geohashAlign52Bits`): the score of a cell's start.
    pub fn align52(&self) -> u64 {
        self.bits << (52 - u32::from(self.step) * 2)
    }
}

/// A coordinate interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CoordRange {
    pub min: f64,
    pub max: f64,
}

impl CoordRange {
    fn is_zero(&self) -> bool {
        self.min == 0.0 && self.max == 0.0
    }
}

/// The cell a hash names.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Area {
    pub hash: HashBits,
    pub longitude: CoordRange,
    pub latitude: CoordRange,
}

const WGS84_LONG: CoordRange = CoordRange {
    min: LONG_MIN,
    max: LONG_MAX,
};
const WGS84_LAT: CoordRange = CoordRange {
    min: LAT_MIN,
    max: LAT_MAX,
};

/// Interleave the bits of `x` (even positions) and `y` (odd positions).
pub fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let mut x = u64::from(xlo);
    let mut y = u64::from(ylo);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

/// The inverse of [`interleave64`]: the even bits in the low half, the odd in the high half.
pub fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = interleaved;
    let mut y = interleaved >> 1;
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// `geohashEncode`: the cell of `step` bits holding the point, within the given ranges.
pub fn encode(
    long_range: CoordRange,
    lat_range: CoordRange,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<HashBits> {
    if step > 32 || step == 0 || lat_range.is_zero() || long_range.is_zero() {
        return None;
    }
    if !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude) {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * scale;
    Some(HashBits {
        bits: interleave64(lat_offset as u32, long_offset as u32),
        step,
    })
}

/// [`encode`] within Redis's WGS-84 limits.
pub fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<HashBits> {
    encode(WGS84_LONG, WGS84_LAT, longitude, latitude, step)
}

/// `geohashDecode`: the cell a hash names.
pub fn decode(long_range: CoordRange, lat_range: CoordRange, hash: HashBits) -> Option<Area> {
    if hash.is_zero() || lat_range.is_zero() || long_range.is_zero() {
        return None;
    }
    let sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = sep as u32;
    let ilono = (sep >> 32) as u32;
    let div = (1u64 << hash.step) as f64;
    Some(Area {
        hash,
        latitude: CoordRange {
            min: lat_range.min + (f64::from(ilato) / div) * lat_scale,
            max: lat_range.min + (f64::from(ilato.wrapping_add(1)) / div) * lat_scale,
        },
        longitude: CoordRange {
            min: long_range.min + (f64::from(ilono) / div) * long_scale,
            max: long_range.min + (f64::from(ilono.wrapping_add(1)) / div) * long_scale,
        },
    })
}

/// The center of a cell, clamped to the limits (`geohashDecodeAreaToLongLat`).
fn area_center(area: &Area) -> (f64, f64) {
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// The 52-bit score of a position (GEOADD), or `None` outside the limits.
pub fn score_of(longitude: f64, latitude: f64) -> Option<u64> {
    encode_wgs84(longitude, latitude, STEP_MAX).map(|h| h.align52())
}

/// C's `(uint64_t)` conversion of a double as x86-64 compilers emit it (a score that no
/// GEOADD wrote may be anything).
fn score_bits(score: f64) -> u64 {
    const TWO_63: f64 = 9223372036854775808.0;
    if score < TWO_63 {
        // cvttsd2si: out of range (or NaN) gives i64::MIN's bits; `as` saturates to it
        // for the negative side.
        if score.is_nan() {
            return 1 << 63;
        }
        (score as i64) as u64
    } else {
        let rest = score - TWO_63;
        let low = if rest < TWO_63 {
            rest as i64 as u64
        } else {
            1 << 63
        };
        low ^ (1 << 63)
    }
}

/// The position (longitude, latitude) a score stands for (`decodeGeohash`).
pub fn decode_score(score: f64) -> Option<(f64, f64)> {
    let hash = HashBits {
        bits: score_bits(score),
        step: STEP_MAX,
    };
    decode(WGS84_LONG, WGS84_LAT, hash).map(|a| area_center(&a))
}

/// The standard 11-character geohash string of a score (GEOHASH): the position re-encoded
/// over -180..180 / -90..90, the 11th character always '0'.
pub fn geohash_string(score: f64) -> Option<[u8; 11]> {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score)?;
    let long_range = CoordRange {
        min: -180.0,
        max: 180.0,
    };
    let lat_range = CoordRange {
        min: -90.0,
        max: 90.0,
    };
    // Redis ignores a failed encode and uses the zeroed hash.
    let bits = encode(long_range, lat_range, lon, lat, 26).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        let idx = (bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = ALPHABET[idx as usize];
    }
    Some(out)
}

fn move_x(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let mut x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let y = hash.bits & 0x5555555555555555;
    let zz = 0x5555555555555555u64 >> (64 - u32::from(hash.step) * 2);
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaaaaaaaaaaaaaau64 >> (64 - u32::from(hash.step) * 2);
    hash.bits = x | y;
}

fn move_y(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let mut y = hash.bits & 0x5555555555555555;
    let zz = 0xaaaaaaaaaaaaaaaau64 >> (64 - u32::from(hash.step) * 2);
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555555555555555u64 >> (64 - u32::from(hash.step) * 2);
    hash.bits = x | y;
}

/// The eight cells around one (`GeoHashNeighbors`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Neighbors {
    pub north: HashBits,
    pub east: HashBits,
    pub west: HashBits,
    pub south: HashBits,
    pub north_east: HashBits,
    pub south_east: HashBits,
    pub north_west: HashBits,
    pub south_west: HashBits,
}

/// `geohashNeighbors`.
pub fn neighbors(hash: &HashBits) -> Neighbors {
    let moved = |dx: i8, dy: i8| {
        let mut h = *hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    Neighbors {
        east: moved(1, 0),
        west: moved(-1, 0),
        south: moved(0, -1),
        north: moved(0, 1),
        north_west: moved(-1, 1),
        north_east: moved(1, 1),
        south_east: moved(1, -1),
        south_west: moved(-1, -1),
    }
}

/// `geohashEstimateStepsByRadius`: the step of the nine search cells for a radius.
pub fn estimate_steps_by_radius(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range = range_meters;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// What a search covers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ShapeKind {
    /// A circle of this radius (in the unit).
    Radius(f64),
    /// An axis-aligned box of this width and height (in the unit).
    Box { width: f64, height: f64 },
}

/// A search shape (`GeoShape`): center, size, and the unit's size in meters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub longitude: f64,
    pub latitude: f64,
    /// Meters per unit (1, 1000, 0.3048, 1609.34).
    pub conversion: f64,
    pub kind: ShapeKind,
}

/// The bounding box of a shape: `[min_lon, min_lat, max_lon, max_lat]`
/// (`geohashBoundingBox`).
pub fn bounding_box(shape: &Shape) -> [f64; 4] {
    let (longitude, latitude) = (shape.longitude, shape.latitude);
    let (height, width) = match shape.kind {
        ShapeKind::Radius(r) => (shape.conversion * r, shape.conversion * r),
        ShapeKind::Box { width, height } => (
            shape.conversion * (height / 2.0),
            shape.conversion * (width / 2.0),
        ),
    };
    let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
    let long_delta_top =
        rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude + lat_delta).cos());
    let long_delta_bottom =
        rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(latitude - lat_delta).cos());
    let southern = latitude < 0.0;
    [
        if southern {
            longitude - long_delta_bottom
        } else {
            longitude - long_delta_top
        },
        latitude - lat_delta,
        if southern {
            longitude + long_delta_bottom
        } else {
            longitude + long_delta_top
        },
        latitude + lat_delta,
    ]
}

/// The nine cells covering a shape (`GeoHashRadius`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cells {
    pub hash: HashBits,
    pub neighbors: Neighbors,
    pub area: Area,
}

impl Cells {
    /// The cells in Redis's search order: center, N, S, E, W, NE, NW, SE, SW.
    pub fn in_order(&self) -> [HashBits; 9] {
        let n = &self.neighbors;
        [
            self.hash,
            n.north,
            n.south,
            n.east,
            n.west,
            n.north_east,
            n.north_west,
            n.south_east,
            n.south_west,
        ]
    }
}

/// `geohashCalculateAreasByShapeWGS84`.
pub fn areas_by_shape(shape: &Shape) -> Cells {
    let [min_lon, min_lat, max_lon, max_lat] = bounding_box(shape);
    let (longitude, latitude) = (shape.longitude, shape.latitude);
    let radius_meters = match shape.kind {
        ShapeKind::Radius(r) => r,
        ShapeKind::Box { width, height } => {
            ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
        }
    } * shape.conversion;
    let mut steps = estimate_steps_by_radius(radius_meters, latitude);
    let dec = |h: HashBits| decode(WGS84_LONG, WGS84_LAT, h).unwrap_or_default();
    let mut hash = encode_wgs84(longitude, latitude, steps).unwrap_or_default();
    let mut nb = neighbors(&hash);
    let mut area = dec(hash);

    let north = dec(nb.north);
    let south = dec(nb.south);
    let east = dec(nb.east);
    let west = dec(nb.west);
    let decrease_step = north.latitude.max < max_lat
        || south.latitude.min > min_lat
        || east.longitude.max < max_lon
        || west.longitude.min > min_lon;
    if steps > 1 && decrease_step {
        steps -= 1;
        hash = encode_wgs84(longitude, latitude, steps).unwrap_or(hash);
        nb = neighbors(&hash);
        area = dec(hash);
    }
    if steps >= 2 {
        let zero = HashBits::default();
        if area.latitude.min < min_lat {
            nb.south = zero;
            nb.south_west = zero;
            nb.south_east = zero;
        }
        if area.latitude.max > max_lat {
            nb.north = zero;
            nb.north_east = zero;
            nb.north_west = zero;
        }
        if area.longitude.min < min_lon {
            nb.west = zero;
            nb.south_west = zero;
            nb.north_west = zero;
        }
        if area.longitude.max > max_lon {
            nb.east = zero;
            nb.south_east = zero;
            nb.north_east = zero;
        }
    }
    Cells {
        hash,
        neighbors: nb,
        area,
    }
}

/// `geohashGetLatDistance`: the distance along a meridian.
pub fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// `geohashGetDistance`: the haversine great-circle distance in meters.
pub fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lon1r = deg_rad(lon1d);
    let lon2r = deg_rad(lon2d);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let lat1r = deg_rad(lat1d);
    let lat2r = deg_rad(lat2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// `geoWithinShape`: the position of `score` and its distance (meters) from the shape's
/// center, when it lies inside the shape.
pub fn within_shape(shape: &Shape, score: f64) -> Option<(f64, f64, f64)> {
    let (lon, lat) = decode_score(score)?;
    let (cx, cy) = (shape.longitude, shape.latitude);
    match shape.kind {
        ShapeKind::Radius(r) => {
            let d = distance(cx, cy, lon, lat);
            (d <= r * shape.conversion).then_some((lon, lat, d))
        }
        ShapeKind::Box { width, height } => {
            let (width_m, height_m) = (width * shape.conversion, height * shape.conversion);
            if lat_distance(lat, cy) > height_m / 2.0 {
                return None;
            }
            if distance(lon, lat, cx, lat) > width_m / 2.0 {
                return None;
            }
            Some((lon, lat, distance(cx, cy, lon, lat)))
        }
    }
}

/// A point a search found (`geoPoint`).
#[derive(Clone, Debug, PartialEq)]
pub struct Point<'a> {
    pub member: &'a [u8],
    pub score: f64,
    pub longitude: f64,
    pub latitude: f64,
    /// Meters from the center.
    pub dist: f64,
}

/// The members of `z` inside `shape`, in Redis's collection order (cell by cell, each cell in
/// score order), as `membersOfAllNeighbors` gathers them; with `limit` > 0 (COUNT ... ANY),
/// gathering stops once that many are found.
pub fn search<'a>(z: &'a ZSet, shape: &Shape, limit: usize) -> Vec<Point<'a>> {
    let cells = areas_by_shape(shape).in_order();
    let mut out: Vec<Point<'a>> = Vec::new();
    let mut last_processed = 0usize;
    for (i, cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        // Huge radii make neighbours coincide: skip a cell equal to the last one searched
        // (Redis compares only once a cell other than the center was searched).
        if last_processed != 0 && *cell == cells[last_processed] {
            continue;
        }
        if !out.is_empty() && limit != 0 && out.len() >= limit {
            break;
        }
        points_in_cell(z, *cell, shape, limit, &mut out);
        last_processed = i;
    }
    out
}

/// `membersOfGeoHashBox` / `geoGetPointsInRange`: the points of one cell's score range.
fn points_in_cell<'a>(
    z: &'a ZSet,
    cell: HashBits,
    shape: &Shape,
    limit: usize,
    out: &mut Vec<Point<'a>>,
) {
    let min = cell.align52() as f64;
    let max = HashBits {
        bits: cell.bits + 1,
        step: cell.step,
    }
    .align52() as f64;
    let range = ScoreRange {
        min,
        min_ex: false,
        max,
        max_ex: true,
    };
    let ranks = z.score_ranks(&range);
    let mut done = false;
    z.visit(ranks, Order::Ascending, |member, score| {
        if done {
            return;
        }
        if let Some((longitude, latitude, dist)) = within_shape(shape, score) {
            out.push(Point {
                member,
                score,
                longitude,
                latitude,
                dist,
            });
        }
        if !out.is_empty() && limit != 0 && out.len() >= limit {
            done = true;
        }
    });
}

/// Redis's `pqsort` (Bentley & McIlroy's quicksort that only recurses into partitions
/// overlapping `lo..=hi`): what GEOSEARCH COUNT uses when it returns fewer points than it
/// found, so that points at equal distances come out in Redis's order. `cmp` is the
/// comparator; the elements at `lo..=hi` end up sorted.
pub fn partial_sort<T>(v: &mut [T], lo: usize, hi: usize, cmp: &impl Fn(&T, &T) -> i32) {
    pqsort_range(v, 0, v.len(), lo, hi, cmp);
}

fn med3<T>(v: &[T], a: usize, b: usize, c: usize, cmp: &impl Fn(&T, &T) -> i32) -> usize {
    if cmp(&v[a], &v[b]) < 0 {
        if cmp(&v[b], &v[c]) < 0 {
            b
        } else if cmp(&v[a], &v[c]) < 0 {
            c
        } else {
            a
        }
    } else if cmp(&v[b], &v[c]) > 0 {
        b
    } else if cmp(&v[a], &v[c]) < 0 {
        a
    } else {
        c
    }
}

/// `vecswap`: swap the `n` elements at `a` with the `n` at `b`, pairwise in order.
fn vecswap<T>(v: &mut [T], a: usize, b: usize, n: usize) {
    for i in 0..n {
        v.swap(a + i, b + i);
    }
}

/// `_pqsort` over `v[a..a + n]`, indices instead of pointers.
fn pqsort_range<T>(
    v: &mut [T],
    mut a: usize,
    mut n: usize,
    lo: usize,
    hi: usize,
    cmp: &impl Fn(&T, &T) -> i32,
) {
    // Whether the partition `start..start + len` overlaps the wanted range.
    let wanted = |start: usize, len: usize| {
        !((lo < start && hi < start) || (lo >= start + len && hi >= start + len))
    };
    loop {
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && cmp(&v[pl - 1], &v[pl]) > 0 {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d, cmp);
                pm = med3(v, pm - d, pm, pm + d, cmp);
                pn = med3(v, pn - 2 * d, pn - d, pn, cmp);
            }
            pm = med3(v, pl, pm, pn, cmp);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        // `pc` and `pd` may step to just before `a + 1`: kept one higher to stay unsigned.
        let (mut pc1, mut pd1) = (a + n, a + n);
        loop {
            while pb < pc1 {
                let r = cmp(&v[pb], &v[a]);
                if r > 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb < pc1 {
                let r = cmp(&v[pc1 - 1], &v[a]);
                if r < 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pc1 - 1, pd1 - 1);
                    pd1 -= 1;
                }
                pc1 -= 1;
            }
            if pb >= pc1 {
                break;
            }
            v.swap(pb, pc1 - 1);
            pb += 1;
            pc1 -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        // pd - pc, and pn - pd - 1, in element counts.
        let r = (pd1 - pc1).min(pn - pd1);
        vecswap(v, pb, pn - r, r);
        let left = pb - pa;
        if left > 1 && wanted(a, left) {
            pqsort_range(v, a, left, lo, hi, cmp);
        }
        let right = pd1 - pc1;
        if right > 1 {
            a = pn - right;
            n = right;
            if wanted(a, n) {
                continue;
            }
        }
        return;
    }
}

/// A distance as Redis replies it: `fixedpoint_d2string(d, 4)`, i.e. `llrint(d * 10000)`
/// written with four decimals.
pub fn format_distance(d: f64) -> String {
    if d == 0.0 {
        return "0.0000".into();
    }
    let scaled = (d * 10000.0).round_ties_even();
    // llrint of a value past the i64 range is unspecified; such distances do not occur.
    let v = scaled as i64;
    let neg = v < 0;
    let digits = v.unsigned_abs().to_string();
    let digits = if digits.len() < 5 {
        format!("{digits:0>5}")
    } else {
        digits
    };
    let (int, frac) = digits.split_at(digits.len() - 4);
    format!("{}{int}.{frac}", if neg { "-" } else { "" })
}

/// A coordinate as Redis replies it (`ld2string(..., LD_STR_HUMAN)`: `%.17Lf` without
/// trailing zeros, "-0" as "0").
pub fn format_coord(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    let mut s = format!("{v:.17}");
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.').len();
        s.truncate(trimmed);
    }
    if s == "-0" {
        s = "0".into();
    }
    s
}

#[cfg(test)]
mod tests;
