//! Engine operations of the memcached door, without sockets.

use super::*;
use larder_engine::Keyspace;
use larder_memcache::{CounterOp, Recache, StoreMode};

const NOW: u64 = 1_700_000_000_000;
const MAX: usize = 1 << 20;

fn set_req(data: &[u8]) -> Store<'_> {
    Store {
        mode: StoreMode::Set,
        data,
        flags: 0,
        deadline: Deadline::Never,
        compare_cas: None,
        new_cas: None,
        invalidate: false,
        binary_key: false,
        item_size_max: MAX,
    }
}

fn with(mode: StoreMode, data: &[u8]) -> Store<'_> {
    Store {
        mode,
        ..set_req(data)
    }
}

fn stored_cas(s: StoreOutcome) -> u64 {
    match s {
        StoreOutcome::Stored { cas } => cas,
        other => panic!("not stored: {other:?}"),
    }
}

/// The value, flags and CAS of a key, without side effects.
fn peek(db: &Db, key: &[u8], now_ms: u64) -> Option<(Vec<u8>, u32, u64)> {
    let mut out = None;
    read(db, key, now_ms, Access::Peek, |i| {
        out = Some((i.value.to_vec(), i.flags, i.cas));
    });
    out
}

fn state(db: &Db, key: &[u8]) -> u8 {
    let mut out = 0;
    read(db, key, NOW, Access::Peek, |i| out = i.state);
    out
}

#[test]
fn exptime_rules_in_milliseconds() {
    let cases = [
        (0, Deadline::Never),
        (-1, Deadline::Expired),
        (1, Deadline::AtMs(NOW + 1000)),
        (2_592_000, Deadline::AtMs(NOW + 2_592_000_000)),
        (2_592_001, Deadline::Expired),
        (1_700_000_000, Deadline::Expired),
        (1_700_000_100, Deadline::AtMs(1_700_000_100_000)),
    ];
    for (exptime, want) in cases {
        assert_eq!(Deadline::from_exptime(exptime, NOW), want, "{exptime}");
    }
}

#[test]
fn set_get_and_flags() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let cas = stored_cas(store(
        db,
        b"k",
        NOW,
        &Store {
            flags: 0xdead_beef,
            ..set_req(b"v")
        },
    ));
    assert_eq!(peek(db, b"k", NOW), Some((b"v".to_vec(), 0xdead_beef, cas)));
    let cas2 = stored_cas(store(db, b"k", NOW, &set_req(b"w")));
    assert!(cas2 > cas);
    assert_eq!(peek(db, b"k", NOW), Some((b"w".to_vec(), 0, cas2)));
}

#[test]
fn add_replace_conditions() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    assert_eq!(
        store(db, b"k", NOW, &with(StoreMode::Replace, b"x")),
        StoreOutcome::NotStored
    );
    stored_cas(store(db, b"k", NOW, &with(StoreMode::Add, b"a")));
    assert_eq!(
        store(db, b"k", NOW, &with(StoreMode::Add, b"b")),
        StoreOutcome::NotStored
    );
    stored_cas(store(db, b"k", NOW, &with(StoreMode::Replace, b"c")));
    assert_eq!(peek(db, b"k", NOW).map(|p| p.0), Some(b"c".to_vec()));
}

#[test]
fn append_prepend_keep_flags_and_ttl() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    assert_eq!(
        store(db, b"k", NOW, &with(StoreMode::Append, b"x")),
        StoreOutcome::NotStored
    );
    store(
        db,
        b"k",
        NOW,
        &Store {
            flags: 7,
            deadline: Deadline::AtMs(NOW + 5000),
            ..set_req(b"mid")
        },
    );
    let req = Store {
        flags: 99,
        deadline: Deadline::Never,
        ..with(StoreMode::Append, b">>")
    };
    stored_cas(store(db, b"k", NOW, &req));
    let req = Store {
        flags: 99,
        ..with(StoreMode::Prepend, b"<<")
    };
    let cas = stored_cas(store(db, b"k", NOW, &req));
    assert_eq!(peek(db, b"k", NOW), Some((b"<<mid>>".to_vec(), 7, cas)));
    let mut ttl = 0;
    read(db, b"k", NOW, Access::Peek, |i| ttl = i.ttl_s(NOW));
    assert_eq!(ttl, 5);
    // A compare CAS must match; the result may not outgrow the item size limit.
    let req = Store {
        compare_cas: Some(cas + 1),
        ..with(StoreMode::Append, b"!")
    };
    assert_eq!(store(db, b"k", NOW, &req), StoreOutcome::Exists);
    let req = Store {
        item_size_max: 8,
        ..with(StoreMode::Append, b"!!")
    };
    assert_eq!(store(db, b"k", NOW, &req), StoreOutcome::NotStored);
}

#[test]
fn cas_exists_and_not_found() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let cas_req = |c| Store {
        compare_cas: Some(c),
        ..with(StoreMode::Cas, b"new")
    };
    assert_eq!(store(db, b"k", NOW, &cas_req(1)), StoreOutcome::NotFound);
    let cas = stored_cas(store(db, b"k", NOW, &set_req(b"old")));
    assert_eq!(
        store(db, b"k", NOW, &cas_req(cas + 1)),
        StoreOutcome::Exists
    );
    let cas2 = stored_cas(store(db, b"k", NOW, &cas_req(cas)));
    assert_ne!(cas2, cas);
    assert_eq!(store(db, b"k", NOW, &cas_req(cas)), StoreOutcome::Exists);
}

#[test]
fn a_resp_write_changes_the_cas() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let cas = stored_cas(store(db, b"k", NOW, &set_req(b"v")));
    {
        // What RESP SET does to an existing string.
        let (mut shard, hash) = db.lock_key(b"k");
        let slot = shard.find(b"k", hash, NOW).expect("present");
        shard.set_string(slot, b"resp");
    }
    let req = Store {
        compare_cas: Some(cas),
        ..with(StoreMode::Cas, b"mc")
    };
    assert_eq!(store(db, b"k", NOW, &req), StoreOutcome::Exists);
}

#[test]
fn expired_deadline_stores_nothing_visible() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    store(db, b"k", NOW, &set_req(b"v"));
    let req = Store {
        deadline: Deadline::Expired,
        ..set_req(b"w")
    };
    assert_eq!(store(db, b"k", NOW, &req), StoreOutcome::Stored { cas: 0 });
    assert_eq!(peek(db, b"k", NOW), None);
    let req = Store {
        deadline: Deadline::Expired,
        ..with(StoreMode::Add, b"w")
    };
    assert_eq!(store(db, b"k", NOW, &req), StoreOutcome::Stored { cas: 0 });
    assert_eq!(peek(db, b"k", NOW), None);
}

#[test]
fn lazy_expiry_is_reported() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let req = Store {
        deadline: Deadline::AtMs(NOW + 1000),
        ..set_req(b"v")
    };
    store(db, b"k", NOW, &req);
    assert_eq!(read(db, b"k", NOW + 999, Access::Fetch, |_| {}), Read::Hit);
    assert_eq!(
        read(db, b"k", NOW + 1000, Access::Fetch, |_| {}),
        Read::Expired
    );
    assert_eq!(
        read(db, b"k", NOW + 1000, Access::Fetch, |_| {}),
        Read::Miss
    );
    assert_eq!(db.len(), 0);
}

#[test]
fn touch_and_gat_keep_the_cas() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let cas = stored_cas(store(db, b"k", NOW, &set_req(b"v")));
    assert_eq!(
        touch(db, b"k", NOW, Deadline::AtMs(NOW + 10_000)),
        Some((0, cas))
    );
    let mut seen = (0, 0);
    let r = read(
        db,
        b"k",
        NOW,
        Access::FetchAndTouch(Deadline::AtMs(NOW + 20_000)),
        |i| seen = (i.cas, i.ttl_s(NOW)),
    );
    assert_eq!((r, seen), (Read::Hit, (cas, 20)));
    assert_eq!(touch(db, b"missing", NOW, Deadline::Never), None);
    // A negative exptime expires the item: touched now, gone after.
    assert!(touch(db, b"k", NOW, Deadline::Expired).is_some());
    assert_eq!(peek(db, b"k", NOW), None);
}

#[test]
fn fetched_bit_and_no_bump() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    store(db, b"k", NOW, &set_req(b"v"));
    assert_eq!(state(db, b"k"), 0);
    let opts = MetaGetOpts {
        no_bump: true,
        ..MetaGetOpts::default()
    };
    meta_get(db, b"k", NOW, opts, |_, _| {});
    assert_eq!(state(db, b"k"), 0);
    read(db, b"k", NOW, Access::Fetch, |i| assert_eq!(i.state, 0));
    assert_eq!(state(db, b"k"), FETCHED);
    let mut fetched_before = false;
    meta_get(db, b"k", NOW, MetaGetOpts::default(), |i, _| {
        fetched_before = i.meta(NOW).fetched;
    });
    assert!(fetched_before);
    // A new store clears it.
    store(db, b"k", NOW, &set_req(b"w"));
    assert_eq!(state(db, b"k"), 0);
}

#[test]
fn vivify_wins_once() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let opts = MetaGetOpts {
        vivify: Some(Deadline::AtMs(NOW + 30_000)),
        ..MetaGetOpts::default()
    };
    let mut first = None;
    assert_eq!(
        meta_get(db, b"k", NOW, opts, |i, r| first = Some((i.value.len(), r))),
        Read::Hit
    );
    let won = Recache {
        won: true,
        stale: false,
        win_sent: false,
    };
    assert_eq!(first, Some((0, won)));
    let mut second = None;
    meta_get(db, b"k", NOW, opts, |_, r| second = Some(r));
    let z = Recache {
        won: false,
        stale: false,
        win_sent: true,
    };
    assert_eq!(second, Some(z));
    // A store clears the win.
    store(db, b"k", NOW, &set_req(b"v"));
    let mut third = None;
    meta_get(db, b"k", NOW, opts, |_, r| third = Some(r));
    assert_eq!(third, Some(Recache::default()));
}

#[test]
fn recache_wins_when_ttl_is_low() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let req = Store {
        deadline: Deadline::AtMs(NOW + 50_000),
        ..set_req(b"v")
    };
    store(db, b"k", NOW, &req);
    let r = |secs: u64| MetaGetOpts {
        recache: Some(Deadline::AtMs(NOW + secs * 1000)),
        ..MetaGetOpts::default()
    };
    let mut got = Recache::default();
    meta_get(db, b"k", NOW, r(30), |_, rc| got = rc);
    assert!(!got.won);
    meta_get(db, b"k", NOW, r(60), |_, rc| got = rc);
    assert!(got.won && !got.win_sent);
    meta_get(db, b"k", NOW, r(60), |_, rc| got = rc);
    assert!(!got.won && got.win_sent);
    // Items without a deadline never win by R.
    store(db, b"n", NOW, &set_req(b"v"));
    meta_get(db, b"n", NOW, r(60), |_, rc| got = rc);
    assert!(!got.won);
}

#[test]
fn invalidate_marks_stale_and_hands_out_one_win() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let cas = stored_cas(store(db, b"k", NOW, &set_req(b"v")));
    let inv = Delete {
        invalidate: true,
        ttl: Some(Deadline::AtMs(NOW + 30_000)),
        ..Delete::default()
    };
    assert_eq!(delete(db, b"k", NOW, &inv), DeleteOutcome::Deleted);
    let mut got = (Recache::default(), 0, 0);
    meta_get(db, b"k", NOW, MetaGetOpts::default(), |i, r| {
        got = (r, i.cas, i.ttl_s(NOW))
    });
    assert_ne!(got.1, cas);
    assert_eq!(got.2, 30);
    assert_eq!(
        got.0,
        Recache {
            won: true,
            stale: true,
            win_sent: false
        }
    );
    meta_get(db, b"k", NOW, MetaGetOpts::default(), |_, r| got.0 = r);
    assert_eq!(
        got.0,
        Recache {
            won: false,
            stale: true,
            win_sent: true
        }
    );
    // A CAS store with the old CAS and I: stored, still stale, deadline kept.
    let req = Store {
        compare_cas: Some(cas),
        invalidate: true,
        ..with(StoreMode::Cas, b"late")
    };
    stored_cas(store(db, b"k", NOW, &req));
    assert_eq!(state(db, b"k") & (STALE | WIN_SENT), STALE | WIN_SENT);
    let mut ttl = 0;
    read(db, b"k", NOW, Access::Peek, |i| ttl = i.ttl_s(NOW));
    assert_eq!(ttl, 30);
}

#[test]
fn delete_variants() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    assert_eq!(
        delete(db, b"k", NOW, &Delete::default()),
        DeleteOutcome::NotFound
    );
    let cas = stored_cas(store(
        db,
        b"k",
        NOW,
        &Store {
            flags: 3,
            ..set_req(b"v")
        },
    ));
    let by_cas = |c| Delete {
        compare_cas: Some(c),
        ..Delete::default()
    };
    assert_eq!(
        delete(db, b"k", NOW, &by_cas(cas + 1)),
        DeleteOutcome::Exists
    );
    let empty = Delete {
        remove_value: true,
        ..Delete::default()
    };
    assert_eq!(delete(db, b"k", NOW, &empty), DeleteOutcome::Deleted);
    let (value, flags, cas2) = peek(db, b"k", NOW).expect("kept");
    assert_eq!((value.as_slice(), flags), (&b""[..], 3));
    assert_eq!(delete(db, b"k", NOW, &by_cas(cas2)), DeleteOutcome::Deleted);
    assert_eq!(peek(db, b"k", NOW), None);
}

#[test]
fn arith_wraps_floors_and_keeps_flags() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let incr = |delta| Arith {
        op: CounterOp::Incr,
        delta,
        compare_cas: None,
        create: None,
        ttl: None,
        new_cas: None,
    };
    let decr = |delta| Arith {
        op: CounterOp::Decr,
        ..incr(delta)
    };
    let value = |c: Counted| match c {
        Counted::Value { value, .. } => value,
        other => panic!("{other:?}"),
    };
    assert_eq!(arith(db, b"n", NOW, &incr(1)), Counted::NotFound);
    store(
        db,
        b"n",
        NOW,
        &Store {
            flags: 5,
            deadline: Deadline::AtMs(NOW + 9000),
            ..set_req(b"18446744073709551614")
        },
    );
    assert_eq!(value(arith(db, b"n", NOW, &incr(3))), 1);
    assert_eq!(value(arith(db, b"n", NOW, &decr(10))), 0);
    assert_eq!(value(arith(db, b"n", NOW, &incr(100))), 100);
    assert_eq!(value(arith(db, b"n", NOW, &decr(1))), 99);
    let (v, flags, _) = peek(db, b"n", NOW).expect("present");
    assert_eq!((v.as_slice(), flags), (&b"99"[..], 5));
    let mut ttl = 0;
    read(db, b"n", NOW, Access::Peek, |i| ttl = i.ttl_s(NOW));
    assert_eq!(ttl, 9);
    store(db, b"s", NOW, &set_req(b"abc"));
    assert_eq!(arith(db, b"s", NOW, &incr(1)), Counted::NonNumeric);
    let create = Arith {
        create: Some((42, Deadline::Never)),
        ..incr(5)
    };
    match arith(db, b"c", NOW, &create) {
        Counted::Value { value, created, .. } => assert_eq!((value, created), (42, true)),
        other => panic!("{other:?}"),
    }
    assert_eq!(value(arith(db, b"c", NOW, &create)), 47);
    let bad_cas = Arith {
        compare_cas: Some(1),
        ..incr(1)
    };
    assert_eq!(arith(db, b"c", NOW, &bad_cas), Counted::Exists);
}

#[test]
fn explicit_cas() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let req = Store {
        new_cas: Some(12_345),
        ..set_req(b"v")
    };
    assert_eq!(
        store(db, b"k", NOW, &req),
        StoreOutcome::Stored { cas: 12_345 }
    );
    assert_eq!(peek(db, b"k", NOW).map(|p| p.2), Some(12_345));
}

#[test]
fn binary_key_bit_follows_the_last_store() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let req = Store {
        binary_key: true,
        ..set_req(b"v")
    };
    store(db, b"k", NOW, &req);
    assert_eq!(state(db, b"k"), KEY_BINARY);
    store(db, b"k", NOW, &set_req(b"w"));
    assert_eq!(state(db, b"k"), 0);
}

#[test]
fn other_types_are_invisible_and_kept() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    {
        let (mut shard, hash) = db.lock_key(b"l");
        let list = larder_engine::Object::List(std::iter::once(Box::from(&b"x"[..])).collect());
        shard.insert_object(b"l", hash, list, 0, NOW);
    }
    let kind = || {
        let (mut shard, hash) = db.lock_key(b"l");
        let slot = shard.find(b"l", hash, NOW).expect("present");
        shard.entry(slot).kind()
    };
    assert_eq!(read(db, b"l", NOW, Access::Fetch, |_| {}), Read::Miss);
    assert_eq!(touch(db, b"l", NOW, Deadline::Never), None);
    for mode in [
        StoreMode::Add,
        StoreMode::Replace,
        StoreMode::Append,
        StoreMode::Prepend,
    ] {
        assert_eq!(
            store(db, b"l", NOW, &with(mode, b"x")),
            StoreOutcome::NotStored,
            "{mode:?}"
        );
    }
    let cas = Store {
        compare_cas: Some(1),
        ..with(StoreMode::Cas, b"x")
    };
    assert_eq!(store(db, b"l", NOW, &cas), StoreOutcome::NotFound);
    assert_eq!(
        delete(db, b"l", NOW, &Delete::default()),
        DeleteOutcome::NotFound
    );
    let incr = Arith {
        op: CounterOp::Incr,
        delta: 1,
        compare_cas: None,
        create: None,
        ttl: None,
        new_cas: None,
    };
    assert_eq!(arith(db, b"l", NOW, &incr), Counted::NotFound);
    let create = Arith {
        create: Some((1, Deadline::Never)),
        ..incr
    };
    assert_eq!(arith(db, b"l", NOW, &create), Counted::NotStored);
    let vivify = MetaGetOpts {
        vivify: Some(Deadline::Never),
        ..MetaGetOpts::default()
    };
    assert_eq!(meta_get(db, b"l", NOW, vivify, |_, _| {}), Read::Miss);
    assert_eq!(kind(), larder_engine::ObjectKind::List);
    // set replaces it, as RESP SET does.
    stored_cas(store(db, b"l", NOW, &set_req(b"s")));
    assert_eq!(kind(), larder_engine::ObjectKind::String);
    assert_eq!(peek(db, b"l", NOW).map(|p| p.0), Some(b"s".to_vec()));
}

#[test]
fn flush_empties_the_database() {
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    for i in 0..100 {
        store(db, format!("k{i}").as_bytes(), NOW, &set_req(b"v"));
    }
    flush(db);
    assert_eq!(db.len(), 0);
}

/// Each write raises the keyspace notifications of its RESP equivalent, in database 0.
#[test]
fn writes_raise_the_events_of_their_resp_equivalents() {
    use larder_commands::testing::Notices;
    let ks = Keyspace::new(1);
    let db = ks.db(0);
    let notices = Notices::subscribe(ks.feed());
    let events = || notices.take().join(" ");
    let ttl = Deadline::AtMs(NOW + 10_000);

    // set / add / replace / cas: `new` when created, `set`, `expire` with a deadline.
    stored_cas(store(db, b"k", NOW, &set_req(b"v")));
    assert_eq!(events(), "n:new@0:k $:set@0:k");
    let with_ttl = Store {
        deadline: ttl,
        ..set_req(b"w")
    };
    stored_cas(store(db, b"k", NOW, &with_ttl));
    assert_eq!(events(), "$:set@0:k g:expire@0:k");
    store(db, b"k", NOW, &with(StoreMode::Add, b"x"));
    assert_eq!(events(), "");
    stored_cas(store(db, b"a", NOW, &with(StoreMode::Add, b"x")));
    assert_eq!(events(), "n:new@0:a $:set@0:a");
    store(db, b"missing", NOW, &with(StoreMode::Replace, b"x"));
    assert_eq!(events(), "");
    stored_cas(store(db, b"k", NOW, &with(StoreMode::Replace, b"y")));
    assert_eq!(events(), "$:set@0:k");
    let cas_req = |compare| Store {
        compare_cas: Some(compare),
        ..with(StoreMode::Cas, b"z")
    };
    let cas = peek(db, b"k", NOW).map_or(0, |(_, _, c)| c);
    assert_eq!(
        store(db, b"k", NOW, &cas_req(cas + 1)),
        StoreOutcome::Exists
    );
    assert_eq!(events(), "");
    stored_cas(store(db, b"k", NOW, &cas_req(cas)));
    assert_eq!(events(), "$:set@0:k");
    let stale = Store {
        invalidate: true,
        ..cas_req(1)
    };
    stored_cas(store(db, b"k", NOW, &stale));
    assert_eq!(events(), "$:set@0:k");

    // A deadline already past: nothing on a miss, `del` when it removes a live item.
    let expired = Store {
        deadline: Deadline::Expired,
        ..set_req(b"v")
    };
    store(db, b"gone", NOW, &expired);
    assert_eq!(events(), "");
    store(db, b"a", NOW, &expired);
    assert_eq!(events(), "g:del@0:a");

    // append / prepend raise `append`; a miss raises nothing.
    stored_cas(store(db, b"k", NOW, &with(StoreMode::Append, b"+")));
    stored_cas(store(db, b"k", NOW, &with(StoreMode::Prepend, b"-")));
    assert_eq!(events(), "$:append@0:k $:append@0:k");
    store(db, b"missing", NOW, &with(StoreMode::Append, b"+"));
    assert_eq!(events(), "");

    // incr / decr raise `incrby`; creation adds `new` first and `expire` with a deadline.
    stored_cas(store(db, b"n", NOW, &set_req(b"5")));
    events();
    let incr = Arith {
        op: CounterOp::Incr,
        delta: 1,
        compare_cas: None,
        create: None,
        ttl: None,
        new_cas: None,
    };
    arith(db, b"n", NOW, &incr);
    let decr = Arith {
        op: CounterOp::Decr,
        ..incr
    };
    arith(db, b"n", NOW, &decr);
    assert_eq!(events(), "$:incrby@0:n $:incrby@0:n");
    assert_eq!(arith(db, b"none", NOW, &incr), Counted::NotFound);
    assert_eq!(arith(db, b"k", NOW, &incr), Counted::NonNumeric);
    assert_eq!(events(), "");
    let create = Arith {
        create: Some((7, ttl)),
        ..incr
    };
    arith(db, b"c", NOW, &create);
    assert_eq!(events(), "n:new@0:c $:incrby@0:c g:expire@0:c");
    let with_t = Arith {
        ttl: Some(ttl),
        ..incr
    };
    arith(db, b"n", NOW, &with_t);
    assert_eq!(events(), "$:incrby@0:n g:expire@0:n");

    // touch / gat: `expire`, `persist` when exptime 0 clears a deadline, `del` when past.
    touch(db, b"n", NOW, ttl);
    assert_eq!(events(), "g:expire@0:n");
    touch(db, b"n", NOW, Deadline::Never);
    touch(db, b"n", NOW, Deadline::Never);
    assert_eq!(events(), "g:persist@0:n");
    read(db, b"n", NOW, Access::Fetch, |_| {});
    touch(db, b"missing", NOW, ttl);
    assert_eq!(events(), "");
    read(
        db,
        b"n",
        NOW,
        Access::FetchAndTouch(Deadline::Expired),
        |_| {},
    );
    assert_eq!(events(), "g:del@0:n");

    // meta get: vivify creates the item; `T` sets a deadline.
    let vivify = MetaGetOpts {
        vivify: Some(Deadline::Never),
        ttl: Some(ttl),
        ..MetaGetOpts::default()
    };
    meta_get(db, b"v", NOW, vivify, |_, _| {});
    assert_eq!(events(), "n:new@0:v $:set@0:v g:expire@0:v");

    // delete: `del`; md x empties the value (`set`); md I with T announces the deadline.
    assert_eq!(
        delete(db, b"v", NOW, &Delete::default()),
        DeleteOutcome::Deleted
    );
    assert_eq!(
        delete(db, b"v", NOW, &Delete::default()),
        DeleteOutcome::NotFound
    );
    assert_eq!(events(), "g:del@0:v");
    let empty = Delete {
        remove_value: true,
        ..Delete::default()
    };
    delete(db, b"k", NOW, &empty);
    assert_eq!(events(), "$:set@0:k");
    let invalidate = Delete {
        invalidate: true,
        ttl: Some(ttl),
        ..Delete::default()
    };
    delete(db, b"k", NOW, &invalidate);
    assert_eq!(events(), "g:expire@0:k");

    // flush_all raises nothing, as FLUSHALL.
    flush(db);
    assert_eq!(events(), "");
}
