//! Geo unit tests, and comparisons with values computed by redis-server 7.0.15
//! (`fixtures.txt`, made by `make_fixtures.py`).

use super::*;
use crate::Limits;

const FIXTURES: &str = include_str!("fixtures.txt");

/// A small xorshift generator (`crate::xorshift`): deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = crate::xorshift::step(self.0);
        self.0
    }

    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (self.next() >> 11) as f64 / (1u64 << 53) as f64 * (hi - lo)
    }
}

fn unit(u: &str) -> f64 {
    match u {
        "m" => 1.0,
        "km" => 1000.0,
        "ft" => 0.3048,
        "mi" => 1609.34,
        _ => panic!("unit {u}"),
    }
}

struct Fixture {
    points: Vec<(f64, f64)>,
}

fn num(s: &str) -> f64 {
    s.parse().expect("a number")
}

#[test]
fn interleave_round_trips() {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    for _ in 0..10_000 {
        let (x, y) = (rng.next() as u32, rng.next() as u32);
        let i = interleave64(x, y);
        let d = deinterleave64(i);
        assert_eq!((d as u32, (d >> 32) as u32), (x, y));
    }
    assert_eq!(interleave64(1, 0), 1);
    assert_eq!(interleave64(0, 1), 2);
    assert_eq!(interleave64(u32::MAX, 0), 0x5555555555555555);
}

#[test]
fn encode_rejects_out_of_range() {
    assert!(score_of(180.0001, 0.0).is_none());
    assert!(score_of(0.0, 85.06).is_none());
    assert!(score_of(-180.0, -85.05112878).is_some());
    assert_eq!(score_of(-180.0, -85.05112878), Some(0));
    assert!(encode_wgs84(0.0, 0.0, 0).is_none());
    assert!(encode_wgs84(0.0, 0.0, 33).is_none());
}

#[test]
fn known_positions() {
    // Redis's documentation example.
    let palermo = score_of(13.361389, 38.115556).expect("in range");
    assert_eq!(palermo, 3479099956230698);
    let catania = score_of(15.087269, 37.502669).expect("in range");
    let (lon, lat) = decode_score(palermo as f64).expect("decodes");
    assert_eq!(format_coord(lon), "13.36138933897018433");
    assert_eq!(format_coord(lat), "38.11555639549629859");
    let (lon2, lat2) = decode_score(catania as f64).expect("decodes");
    assert_eq!(
        format_distance(distance(lon, lat, lon2, lat2) / 1000.0),
        "166.2742"
    );
    assert_eq!(
        &geohash_string(palermo as f64).expect("hash"),
        b"sqc8b49rny0"
    );
}

#[test]
fn formats() {
    assert_eq!(format_distance(0.0), "0.0000");
    assert_eq!(format_distance(0.00004), "0.0000");
    assert_eq!(format_distance(0.0123), "0.0123");
    assert_eq!(format_distance(1.5), "1.5000");
    assert_eq!(format_distance(12345.67891), "12345.6789");
    assert_eq!(format_coord(180.0), "180");
    assert_eq!(format_coord(-0.0), "0");
    assert_eq!(format_coord(0.5), "0.5");
    assert_eq!(format_coord(1.0 / 262144.0), "0.00000381469726562");
}

#[test]
fn neighbors_surround_the_cell() {
    let h = encode_wgs84(13.0, 41.0, 10).expect("in range");
    let n = neighbors(&h);
    let a = decode(WGS84_LONG, WGS84_LAT, h).expect("cell");
    let north = decode(WGS84_LONG, WGS84_LAT, n.north).expect("cell");
    let east = decode(WGS84_LONG, WGS84_LAT, n.east).expect("cell");
    let sw = decode(WGS84_LONG, WGS84_LAT, n.south_west).expect("cell");
    assert!((north.latitude.min - a.latitude.max).abs() < 1e-9);
    assert_eq!(north.longitude, a.longitude);
    assert!((east.longitude.min - a.longitude.max).abs() < 1e-9);
    assert!((sw.latitude.max - a.latitude.min).abs() < 1e-9);
    assert!((sw.longitude.max - a.longitude.min).abs() < 1e-9);
}

#[test]
fn steps_by_radius() {
    assert_eq!(estimate_steps_by_radius(0.0, 0.0), 26);
    assert_eq!(estimate_steps_by_radius(1.0, 0.0), 24);
    assert_eq!(estimate_steps_by_radius(1.0, 70.0), 23);
    assert_eq!(estimate_steps_by_radius(1.0, -85.0), 22);
    assert_eq!(estimate_steps_by_radius(1e9, 0.0), 1);
}

#[test]
fn odd_scores_decode_like_redis() {
    // C's (uint64_t) of a negative score wraps through int64.
    assert_eq!(score_bits(-1.0), u64::MAX);
    assert_eq!(score_bits(-0.5), 0);
    assert_eq!(score_bits(f64::INFINITY), 0);
    assert_eq!(score_bits(1e30), 0);
    assert_eq!(score_bits(9223372036854775808.0), 1 << 63);
    assert!(decode_score(-1.0).is_some());
}

fn load() -> (Fixture, Vec<&'static str>) {
    let mut points = Vec::new();
    let mut rest = Vec::new();
    for line in FIXTURES.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f[0] == "P" {
            points.push((num(f[1]), num(f[2])));
        } else {
            rest.push(line);
        }
    }
    (Fixture { points }, rest)
}

#[test]
fn positions_hashes_and_texts_match_redis() {
    let mut n = 0;
    for line in FIXTURES.lines().filter(|l| l.starts_with("P ")) {
        let f: Vec<&str> = line.split(' ').collect();
        let score = score_of(num(f[1]), num(f[2])).expect("in range");
        assert_eq!(score.to_string(), f[3], "{line}");
        let (lon, lat) = decode_score(score as f64).expect("decodes");
        assert_eq!(format_coord(lon), f[4], "{line}");
        assert_eq!(format_coord(lat), f[5], "{line}");
        let h = geohash_string(score as f64).expect("hash");
        assert_eq!(std::str::from_utf8(&h).expect("ascii"), f[6], "{line}");
        n += 1;
    }
    assert_eq!(n, 600);
}

#[test]
fn distances_match_redis() {
    let (fx, rest) = load();
    let pos: Vec<(f64, f64)> = fx
        .points
        .iter()
        .map(|&(lon, lat)| decode_score(score_of(lon, lat).expect("in") as f64).expect("decodes"))
        .collect();
    let mut n = 0;
    for line in rest.iter().filter(|l| l.starts_with("D ")) {
        let f: Vec<&str> = line.split(' ').collect();
        let i: usize = f[1].parse().expect("index");
        let j: usize = f[2].parse().expect("index");
        let d = distance(pos[i].0, pos[i].1, pos[j].0, pos[j].1) / unit(f[3]);
        assert_eq!(format_distance(d), f[4], "{line}");
        n += 1;
    }
    assert_eq!(n, 400);
}

fn geo_set(points: &[(f64, f64)]) -> (ZSet, Vec<String>) {
    let names: Vec<String> = (0..points.len()).map(|i| i.to_string()).collect();
    let limits = Limits::default();
    let mut z = ZSet::new();
    for (name, &(lon, lat)) in names.iter().zip(points) {
        z.insert(
            name.as_bytes(),
            score_of(lon, lat).expect("in") as f64,
            &limits,
        );
    }
    (z, names)
}

#[test]
fn searches_match_redis() {
    let (fx, rest) = load();
    let (z, _) = geo_set(&fx.points);
    let mut n = 0;
    for line in rest.iter().filter(|l| l.starts_with("S ")) {
        let f: Vec<&str> = line.split(' ').collect();
        let (lon, lat, a, b) = (num(f[2]), num(f[3]), num(f[4]), num(f[5]));
        let conversion = unit(f[6]);
        let count: usize = f[7].parse().expect("count");
        let any = f[8] == "any";
        let asc = f[9] == "asc";
        let kind = if f[1] == "R" {
            ShapeKind::Radius(a)
        } else {
            ShapeKind::Box {
                width: a,
                height: b,
            }
        };
        let shape = Shape {
            longitude: lon,
            latitude: lat,
            conversion,
            kind,
        };
        let mut found = search(&z, &shape, if any { count } else { 0 });
        if asc {
            found.sort_by(|x, y| x.dist.total_cmp(&y.dist));
        }
        if count > 0 {
            found.truncate(count);
        }
        let got: Vec<String> = found
            .iter()
            .map(|p| {
                format!(
                    "{}:{}",
                    std::str::from_utf8(p.member).expect("ascii"),
                    format_distance(p.dist / conversion)
                )
            })
            .collect();
        let want: Vec<&str> = f[10..].iter().copied().filter(|s| !s.is_empty()).collect();
        assert_eq!(got, want, "{line}");
        n += 1;
    }
    assert_eq!(n, 300);
}

/// Randomized: the nine-cell search finds exactly the points a scan of the whole set finds
/// inside the shape, in both encodings.
#[test]
fn search_agrees_with_a_full_scan() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let small = Limits {
        zset_max_listpack_entries: 16,
        ..Limits::default()
    };
    for round in 0..200 {
        let (clon, clat) = (rng.uniform(-170.0, 170.0), rng.uniform(-75.0, 75.0));
        let spread = [0.01, 0.1, 1.0, 5.0][round % 4];
        let n = 1 + (rng.next() % 120) as usize;
        let points: Vec<(f64, f64)> = (0..n)
            .map(|_| {
                (
                    (clon + rng.uniform(-spread, spread)).clamp(-180.0, 180.0),
                    (clat + rng.uniform(-spread, spread)).clamp(LAT_MIN, LAT_MAX),
                )
            })
            .collect();
        let names: Vec<String> = (0..n).map(|i| i.to_string()).collect();
        let mut z = ZSet::new();
        for (name, &(lon, lat)) in names.iter().zip(&points) {
            z.insert(
                name.as_bytes(),
                score_of(lon, lat).expect("in") as f64,
                &small,
            );
        }
        let size_m = spread * 111_000.0 * rng.uniform(0.05, 1.5);
        let kind = if round % 2 == 0 {
            ShapeKind::Radius(size_m / 1000.0)
        } else {
            ShapeKind::Box {
                width: size_m / 1000.0,
                height: size_m / 1000.0 * rng.uniform(0.3, 2.0),
            }
        };
        let shape = Shape {
            longitude: clon,
            latitude: clat,
            conversion: 1000.0,
            kind,
        };
        let mut got: Vec<&[u8]> = search(&z, &shape, 0).iter().map(|p| p.member).collect();
        let mut want: Vec<&[u8]> = z
            .scored()
            .filter(|&(_, s)| within_shape(&shape, s).is_some())
            .map(|(m, _)| m)
            .collect();
        got.sort();
        want.sort();
        assert_eq!(got, want, "round {round}");
        // ANY stops at the limit, with points of the shape.
        let limited = search(&z, &shape, 3);
        assert_eq!(limited.len(), want.len().min(3));
        assert!(limited.iter().all(|p| want.contains(&p.member)));
    }
}

/// Randomized: `partial_sort` leaves the wanted prefix sorted and the slice a permutation.
#[test]
fn partial_sort_sorts_the_prefix() {
    let mut rng = Rng(0xdead_beef_cafe_f00d);
    let cmp = |a: &(u64, usize), b: &(u64, usize)| a.0.cmp(&b.0) as i32;
    for round in 0..2000 {
        let n = 1 + (rng.next() % 120) as usize;
        let distinct = 1 + rng.next() % [3, 20, 1000][round % 3];
        let mut v: Vec<(u64, usize)> = (0..n).map(|i| (rng.next() % distinct, i)).collect();
        let mut want = v.clone();
        want.sort_by_key(|p| p.0);
        let k = 1 + (rng.next() as usize % n);
        partial_sort(&mut v, 0, k - 1, &cmp);
        let keys: Vec<u64> = v[..k].iter().map(|p| p.0).collect();
        let want_keys: Vec<u64> = want[..k].iter().map(|p| p.0).collect();
        assert_eq!(keys, want_keys, "round {round}");
        let mut ids: Vec<usize> = v.iter().map(|p| p.1).collect();
        ids.sort_unstable();
        assert_eq!(ids, (0..n).collect::<Vec<_>>());
    }
}
