//! Geo command tests through the harness. Expected values come from redis-server 7.0.15.

use larder_resp::{Frame, Protocol};

use crate::testing::*;

fn arr(items: Vec<Frame>) -> Frame {
    Frame::Array(items)
}

fn sicily(h: &mut Harness) {
    assert_eq!(
        h.run(&[
            "GEOADD",
            "Sicily",
            "13.361389",
            "38.115556",
            "Palermo",
            "15.087269",
            "37.502669",
            "Catania"
        ]),
        int(2)
    );
}

#[test]
fn geoadd_flags_and_errors() {
    let mut h = Harness::new();
    sicily(&mut h);
    assert_eq!(h.run(&["TYPE", "Sicily"]), Frame::Simple("zset".into()));
    assert_eq!(
        h.run(&["ZSCORE", "Sicily", "Palermo"]),
        bulk("3479099956230698")
    );
    assert_eq!(
        h.run(&["GEOADD", "Sicily", "NX", "1", "1", "Palermo", "2", "2", "x"]),
        int(1)
    );
    assert_eq!(
        h.run(&["GEOADD", "Sicily", "XX", "CH", "1", "1", "Palermo", "2", "2", "y"]),
        int(1)
    );
    assert_eq!(
        h.run(&["GEOADD", "Sicily", "CH", "1", "1", "Palermo"]),
        int(0)
    );
    assert_eq!(h.run(&["GEOADD", "none", "XX", "1", "1", "a"]), int(0));
    assert_eq!(h.run(&["EXISTS", "none"]), int(0));
    for (argv, e) in [
        (&["GEOADD", "g", "1", "2", "a", "3"][..], "ERR syntax error"),
        (
            &["GEOADD", "g", "NX", "XX", "1", "2", "a"],
            "ERR syntax error",
        ),
        (&["GEOADD", "g", "CH", "CH", "CH"], "ERR syntax error"),
        (
            &["GEOADD", "g", "x", "2", "a"],
            "ERR value is not a valid float",
        ),
        (
            &["GEOADD", "g", "200", "100", "a"],
            "ERR invalid longitude,latitude pair 200.000000,100.000000",
        ),
        (
            &["GEOADD", "g", "1", "1", "a", "1", "85.1", "b"],
            "ERR invalid longitude,latitude pair 1.000000,85.100000",
        ),
        (
            &["GEOADD", "g"],
            "ERR wrong number of arguments for 'geoadd' command",
        ),
    ] {
        assert_eq!(h.run(argv), err(e), "{argv:?}");
    }
    assert_eq!(h.run(&["EXISTS", "g"]), int(0));
    h.run(&["SET", "s", "v"]);
    assert_eq!(
        h.run(&["GEOADD", "s", "1", "1", "a"]),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}

#[test]
fn geopos_geodist_geohash() {
    let mut h = Harness::new();
    sicily(&mut h);
    let pos = |lon: &str, lat: &str| arr(vec![bulk(lon), bulk(lat)]);
    assert_eq!(
        h.run(&["GEOPOS", "Sicily", "Palermo", "nope", "Catania"]),
        arr(vec![
            pos("13.36138933897018433", "38.11555639549629859"),
            Frame::Null,
            pos("15.08726745843887329", "37.50266842333162032"),
        ])
    );
    assert_eq!(h.run(&["GEOPOS", "none", "a"]), arr(vec![Frame::Null]));
    assert_eq!(h.run(&["GEOPOS", "Sicily"]), arr(vec![]));
    assert_eq!(
        h.run(&["GEODIST", "Sicily", "Palermo", "Catania"]),
        bulk("166274.1516")
    );
    assert_eq!(
        h.run(&["GEODIST", "Sicily", "Palermo", "Catania", "KM"]),
        bulk("166.2742")
    );
    assert_eq!(
        h.run(&["GEODIST", "Sicily", "Palermo", "Catania", "mi"]),
        bulk("103.3182")
    );
    assert_eq!(h.run(&["GEODIST", "Sicily", "Palermo", "x"]), Frame::Null);
    assert_eq!(h.run(&["GEODIST", "none", "a", "b"]), Frame::Null);
    assert_eq!(
        h.run(&["GEODIST", "Sicily", "a", "b", "yd"]),
        err("ERR unsupported unit provided. please use M, KM, FT, MI")
    );
    assert_eq!(
        h.run(&["GEODIST", "Sicily", "a", "b", "m", "x"]),
        err("ERR syntax error")
    );
    assert_eq!(
        h.run(&["GEOHASH", "Sicily", "Palermo", "Catania", "x"]),
        arr(vec![bulk("sqc8b49rny0"), bulk("sqdtr74hyu0"), Frame::Null])
    );
    h.out.proto = Protocol::Resp3;
    assert_eq!(
        h.run_raw(&[b"GEOPOS", b"Sicily", b"Palermo", b"x"]),
        b"*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n"
    );
    assert_eq!(
        h.run_raw(&[b"GEODIST", b"Sicily", b"Palermo", b"Catania", b"km"]),
        b"$8\r\n166.2742\r\n"
    );
}

#[test]
fn searches() {
    let mut h = Harness::new();
    sicily(&mut h);
    h.run(&[
        "GEOADD",
        "Sicily",
        "12.758489",
        "38.788135",
        "edge1",
        "17.241510",
        "38.788135",
        "edge2",
    ]);
    let all = h.run(&[
        "GEOSEARCH",
        "Sicily",
        "FROMLONLAT",
        "15",
        "37",
        "BYBOX",
        "400",
        "400",
        "km",
        "ASC",
        "WITHCOORD",
        "WITHDIST",
        "WITHHASH",
    ]);
    let item = |m: &str, d: &str, hash: i64, lon: &str, lat: &str| {
        arr(vec![
            bulk(m),
            bulk(d),
            int(hash),
            arr(vec![bulk(lon), bulk(lat)]),
        ])
    };
    assert_eq!(
        all,
        arr(vec![
            item(
                "Catania",
                "56.4413",
                3479447370796909,
                "15.08726745843887329",
                "37.50266842333162032"
            ),
            item(
                "Palermo",
                "190.4424",
                3479099956230698,
                "13.36138933897018433",
                "38.11555639549629859"
            ),
            item(
                "edge2",
                "279.7403",
                3481342659049484,
                "17.24151045083999634",
                "38.78813451624225195"
            ),
            item(
                "edge1",
                "279.7405",
                3479273021651468,
                "12.7584877610206604",
                "38.78813451624225195"
            ),
        ])
    );
    assert_eq!(
        h.run(&[
            "GEORADIUS",
            "Sicily",
            "15",
            "37",
            "200",
            "km",
            "WITHDIST",
            "DESC"
        ]),
        arr(vec![
            arr(vec![bulk("Palermo"), bulk("190.4424")]),
            arr(vec![bulk("Catania"), bulk("56.4413")]),
        ])
    );
    assert_eq!(
        h.run(&[
            "GEORADIUSBYMEMBER",
            "Sicily",
            "Palermo",
            "200",
            "km",
            "COUNT",
            "1",
            "ANY"
        ]),
        arr(vec![bulk("Palermo")])
    );
    assert_eq!(
        h.run(&[
            "GEOSEARCHSTORE",
            "dst",
            "Sicily",
            "FROMMEMBER",
            "Palermo",
            "BYRADIUS",
            "300",
            "km",
            "STOREDIST"
        ]),
        int(3)
    );
    assert_eq!(
        h.run(&["ZRANGE", "dst", "0", "-1", "WITHSCORES"]),
        arr(vec![
            bulk("Palermo"),
            bulk("0"),
            bulk("edge1"),
            bulk("91.400658605814272"),
            bulk("Catania"),
            bulk("166.27415156960032"),
        ])
    );
    // Nothing found: the destination is deleted.
    assert_eq!(
        h.run(&["GEORADIUS", "Sicily", "0", "0", "1", "km", "STORE", "dst"]),
        int(0)
    );
    assert_eq!(h.run(&["EXISTS", "dst"]), int(0));
    assert_eq!(
        h.run(&["GEORADIUS_RO", "Sicily", "15", "37", "100", "km"]),
        arr(vec![bulk("Catania")])
    );
    assert_eq!(
        h.run(&["GEORADIUSBYMEMBER", "none", "x", "bad", "unit"]),
        arr(vec![])
    );
    assert_eq!(
        h.run(&[
            "GEOSEARCH",
            "none",
            "FROMMEMBER",
            "x",
            "BYRADIUS",
            "1",
            "km"
        ]),
        arr(vec![])
    );
    for (argv, e) in [
        (
            &["GEOSEARCH", "Sicily", "FROMMEMBER", "nope", "BYRADIUS", "1", "km"][..],
            "ERR could not decode requested zset member",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STORE", "x"],
            "ERR syntax error",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "ANY"],
            "ERR the ANY argument requires COUNT argument",
        ),
        (
            &["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d", "WITHDIST"],
            "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
        (
            &["geosearchstore", "d", "Sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "WITHDIST"],
            "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
        ),
        (
            &["geoSearch", "Sicily", "BYRADIUS", "1", "km", "ASC", "ASC"],
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geoSearch",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "1", "2", "ASC", "ASC"],
            "ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "1", "2", "BYBOX", "1", "-1", "km"],
            "ERR height or width cannot be negative",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "1", "2", "BYBOX", "x", "1", "km"],
            "ERR need numeric width",
        ),
        (
            &["GEORADIUS", "Sicily", "1", "2", "x", "km"],
            "ERR need numeric radius",
        ),
        (
            &["GEORADIUS", "Sicily", "1", "2", "-1", "km"],
            "ERR radius cannot be negative",
        ),
        (
            &["GEORADIUS", "Sicily", "1", "2", "1", "km", "COUNT", "0"],
            "ERR COUNT must be > 0",
        ),
        (
            &["GEORADIUS_RO", "Sicily", "1", "2", "1", "km", "STORE", "x"],
            "ERR syntax error",
        ),
        (
            &["GEOSEARCH", "Sicily", "FROMLONLAT", "1", "2", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km"],
            "ERR syntax error",
        ),
    ] {
        assert_eq!(h.run(argv), err(e), "{argv:?}");
    }
}

#[test]
fn events() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    sicily(&mut h);
    h.run(&["GEOADD", "Sicily", "13.361389", "38.115556", "Palermo"]);
    h.run(&[
        "GEOSEARCHSTORE",
        "d",
        "Sicily",
        "FROMLONLAT",
        "15",
        "37",
        "BYRADIUS",
        "200",
        "km",
    ]);
    h.run(&["GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "d"]);
    h.run(&["GEORADIUS", "Sicily", "0", "0", "1", "km", "STORE", "d"]);
    assert_eq!(
        notices.take(),
        vec![
            "n:new@0:Sicily",
            "z:zadd@0:Sicily",
            "n:new@0:d",
            "z:geosearchstore@0:d",
            "z:georadiusstore@0:d",
            "g:del@0:d",
        ]
    );
}

#[test]
fn stores_stay_in_their_plans() {
    let mut h = Harness::new();
    sicily(&mut h);
    h.check_plans(&[
        "GEOSEARCHSTORE dst Sicily FROMLONLAT 15 37 BYRADIUS 200 km",
        "GEOSEARCHSTORE Sicily Sicily FROMMEMBER Palermo BYBOX 400 400 km STOREDIST",
        "GEORADIUS Sicily 15 37 200 km STORE d2",
        "GEORADIUSBYMEMBER Sicily Catania 200 km STOREDIST d3",
        "GEORADIUS none 15 37 200 km STORE d2",
    ]);
}
