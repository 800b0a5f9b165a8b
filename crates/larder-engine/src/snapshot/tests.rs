//! Tests of `snapshot.rs` and the shard side of captures.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::*;
use crate::feed::Value;
use crate::list::End;
use crate::{Limits, Object, RestoreValue, Restored, Shard};

/// What a snapshot holds of one key: value, deadline (0 = none), version, flags.
type Image = (Value, u64, u64, u32);
type Copy = BTreeMap<(u32, Vec<u8>), Image>;

fn image(e: &Entry) -> Image {
    (
        Value::of(e),
        e.expire_at_ms().unwrap_or(0),
        e.version(),
        e.flags(),
    )
}

fn copy_of(guards: &mut DbGuards<'_>) -> Copy {
    let mut out = Copy::new();
    for ((d, _), shard) in guards.iter_keyed() {
        for e in shard.iter() {
            out.insert((d as u32, e.key().to_vec()), image(e));
        }
    }
    out
}

/// Collects pre-images and visited entries; fails on any key handed over twice.
#[derive(Default)]
struct Collect {
    got: Mutex<Copy>,
    saves: AtomicU64,
}

impl Collect {
    fn add(&self, db: u32, e: &Entry) {
        let old = self
            .got
            .lock()
            .expect("lock")
            .insert((db, e.key().to_vec()), image(e));
        assert!(old.is_none(), "{db}/{:?} handed over twice", e.key());
    }
}

impl PreImage for Collect {
    fn save(&self, db: u32, entry: &Entry) {
        self.saves.fetch_add(1, Ordering::Relaxed);
        self.add(db, entry);
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = crate::xorshift::step(self.0);
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const DBS: usize = 3;
const KEYS: u64 = 400;

fn key(rng: &mut Rng) -> Vec<u8> {
    format!("k{}", rng.below(KEYS)).into_bytes()
}

fn new_object(rng: &mut Rng, limits: &Limits) -> Object {
    let n = 1 + rng.below(6);
    match rng.below(4) {
        0 => {
            let mut l = crate::List::new();
            for i in 0..n {
                l.push(End::Tail, &[format!("e{i}")], limits);
            }
            Object::List(l)
        }
        1 => {
            let mut h = crate::Hash::new();
            for i in 0..n {
                h.insert(format!("f{i}").as_bytes(), b"v", limits);
            }
            Object::Hash(h)
        }
        2 => {
            let mut s = crate::Set::new();
            for i in 0..n {
                s.insert(format!("{}", i * 7).as_bytes(), limits);
            }
            Object::Set(s)
        }
        _ => {
            let mut z = crate::ZSet::new();
            for i in 0..n {
                z.insert(format!("m{i}").as_bytes(), i as f64 / 2.0, limits);
            }
            Object::ZSet(z)
        }
    }
}

/// One random write. `now` is the clock the lazy and active expiry see.
fn random_write(ks: &Keyspace, rng: &mut Rng, now: u64, limits: &Limits) {
    let db = rng.below(DBS as u64) as usize;
    let k = key(rng);
    let deadline = |rng: &mut Rng| match rng.below(3) {
        0 => 0,
        _ => 1000 + rng.below(2000),
    };
    let op = rng.below(100);
    if op == 0 {
        ks.db(db).clear();
        return;
    }
    if op == 1 {
        ks.swap_dbs(db, rng.below(DBS as u64) as usize);
        return;
    }
    if op == 2 {
        ks.expire_cycle(now, |_, _| {});
        return;
    }
    if op == 3 {
        ks.evict(
            crate::EvictionPolicy::AllkeysRandom,
            3,
            now,
            1,
            1,
            |_, _| {},
        );
        return;
    }
    let (mut s, h) = ks.db(db).lock_key(&k);
    let Some(slot) = s.find(&k, h, now) else {
        if rng.below(2) == 0 {
            let v = format!("v{}", rng.next());
            let at = deadline(rng);
            s.insert_string(&k, h, v.as_bytes(), at, now);
        } else {
            let o = new_object(rng, limits);
            let at = deadline(rng);
            s.insert_object(&k, h, o, at, now);
        }
        return;
    };
    let is_string = s.entry(slot).string().is_some();
    match op % 9 {
        0 | 1 => {
            s.remove(slot);
        }
        2 => s.set_string(slot, format!("w{}", rng.next()).as_bytes()),
        3 => s.set_flags(slot, rng.next() as u32),
        // A client-chosen version lower than any issued since the point.
        4 => {
            s.set_version(slot, 1 + rng.below(5));
        }
        5 => {
            let at = deadline(rng);
            s.set_expire(slot, (at != 0).then_some(at));
        }
        6 => {
            let at = deadline(rng);
            s.set_expire_keep_version(slot, (at != 0).then_some(at));
        }
        7 if is_string => {
            s.update_string(slot, |v| v.extend_from_slice(b"+"));
        }
        _ if !is_string => s.object_mut(slot, |o| {
            if let Object::List(l) = o {
                l.push(End::Head, &[b"x"], limits);
            }
        }),
        _ => s.set_access(slot, rng.next() as u32),
    }
}

fn fill(ks: &Keyspace, rng: &mut Rng, limits: &Limits) {
    for _ in 0..3000 {
        random_write(ks, rng, 0, limits);
    }
}

/// Runs a capture with `writes` random writes interleaved, the walk on another thread
/// (`threaded`) or on this one, and checks that what it handed over is the keyspace at the
/// point, each key once.
fn check_capture(seed: u64, threaded: bool, writes: usize) {
    let limits = Limits::default();
    let ks = Keyspace::new(DBS);
    let mut rng = Rng(seed);
    fill(&ks, &mut rng, &limits);
    let sink = Arc::new(Collect::default());
    let mut at_point = Copy::new();
    let mut capture = ks
        .begin_capture(sink.clone(), |g| at_point = copy_of(g))
        .expect("no other capture");
    assert!(ks.begin_capture(sink.clone(), |_| {}).is_none());
    let now = |i: usize| i as u64 * 3000 / writes.max(1) as u64;
    if threaded {
        std::thread::scope(|scope| {
            let sink = &sink;
            let walker = scope.spawn(move || {
                let mut rng = Rng(seed ^ 0xabcdef);
                while capture.step(1 + rng.below(20) as usize, |db, e| sink.add(db, e)) {
                    std::thread::yield_now();
                }
                drop(capture);
            });
            for i in 0..writes {
                random_write(&ks, &mut rng, now(i), &limits);
            }
            walker.join().expect("walker");
        });
    } else {
        let mut i = 0;
        loop {
            for _ in 0..rng.below(30) {
                random_write(&ks, &mut rng, now(i), &limits);
                i += 1;
            }
            if !capture.step(1 + rng.below(20) as usize, |db, e| sink.add(db, e)) {
                break;
            }
        }
        drop(capture);
    }
    let got = std::mem::take(&mut *sink.got.lock().expect("lock"));
    assert_eq!(got.len(), at_point.len(), "seed {seed}");
    assert!(
        got == at_point,
        "seed {seed}: capture differs from the point"
    );
    // A second capture may start once the first ended.
    assert!(ks.begin_capture(sink.clone(), |_| {}).is_some());
}

#[test]
fn capture_equals_the_keyspace_at_the_point_walk_on_this_thread() {
    for seed in 1..=40 {
        check_capture(seed * 7919, false, 0);
    }
}

#[test]
fn capture_equals_the_keyspace_at_the_point_walk_on_another_thread() {
    for seed in 1..=40 {
        check_capture(seed * 104_729, true, 4000);
    }
}

#[test]
fn pre_images_are_taken_when_writes_come_first() {
    // Every key rewritten before the walk reaches it: everything comes from the hook.
    let limits = Limits::default();
    let ks = Keyspace::new(1);
    let mut rng = Rng(99);
    for i in 0..500 {
        let k = format!("k{i}");
        let (mut s, h) = ks.db(0).lock_key(k.as_bytes());
        s.insert_string(k.as_bytes(), h, b"old", 0, 0);
    }
    let sink = Arc::new(Collect::default());
    let mut at_point = Copy::new();
    let mut capture = ks
        .begin_capture(sink.clone(), |g| at_point = copy_of(g))
        .expect("no other capture");
    for i in 0..500 {
        let k = format!("k{i}");
        let (mut s, h) = ks.db(0).lock_key(k.as_bytes());
        let slot = s.find(k.as_bytes(), h, 0).expect("present");
        s.set_string(slot, b"new");
        // A second write hands nothing over again.
        s.set_string(slot, b"newer");
        let o = new_object(&mut rng, &limits);
        s.insert_object(format!("n{i}").as_bytes(), 0, o, 0, 0);
    }
    assert_eq!(sink.saves.load(Ordering::Relaxed), 500);
    assert_eq!(capture.saved(), 500);
    let mut visited = 0;
    while capture.step(7, |db, e| {
        visited += 1;
        sink.add(db, e);
    }) {}
    assert_eq!(visited, 0);
    drop(capture);
    assert!(*sink.got.lock().expect("lock") == at_point);
}

#[test]
fn flush_and_swap_during_a_capture() {
    for seed in 1..=20 {
        let limits = Limits::default();
        let ks = Keyspace::new(DBS);
        let mut rng = Rng(seed * 31);
        fill(&ks, &mut rng, &limits);
        let sink = Arc::new(Collect::default());
        let mut at_point = Copy::new();
        let mut capture = ks
            .begin_capture(sink.clone(), |g| at_point = copy_of(g))
            .expect("no other capture");
        capture.step(rng.below(300) as usize, |db, e| sink.add(db, e));
        ks.swap_dbs(0, 1);
        capture.step(rng.below(300) as usize, |db, e| sink.add(db, e));
        // The flush hands the slabs over whole: nothing is serialized under its locks.
        let saves = sink.saves.load(Ordering::Relaxed);
        ks.db(1).clear();
        assert_eq!(sink.saves.load(Ordering::Relaxed), saves);
        ks.swap_dbs(2, 1);
        fill(&ks, &mut rng, &limits);
        while capture.step(50, |db, e| sink.add(db, e)) {}
        drop(capture);
        assert!(*sink.got.lock().expect("lock") == at_point, "seed {seed}");
    }
}

#[test]
fn no_capture_no_sink_calls() {
    let limits = Limits::default();
    let ks = Keyspace::new(DBS);
    let mut rng = Rng(5);
    fill(&ks, &mut rng, &limits);
    let sink = Arc::new(Collect::default());
    // One capture that ends half-way, one that runs to the end: afterwards, writes hand
    // nothing to the sink.
    let mut capture = ks
        .begin_capture(sink.clone(), |_| {})
        .expect("no other capture");
    capture.step(10, |_, _| {});
    drop(capture);
    let mut capture = ks
        .begin_capture(sink.clone(), |_| {})
        .expect("no other capture");
    while capture.step(100, |_, _| {}) {}
    drop(capture);
    let before = sink.saves.load(Ordering::Relaxed);
    for i in 0..5000 {
        random_write(&ks, &mut rng, i, &limits);
    }
    assert_eq!(sink.saves.load(Ordering::Relaxed), before);
}

#[test]
fn a_capture_of_an_empty_keyspace_ends_at_once() {
    let ks = Keyspace::new(2);
    let sink = Arc::new(Collect::default());
    let mut capture = ks
        .begin_capture(sink.clone(), |_| {})
        .expect("no other capture");
    assert!(!capture.step(10, |_, _| panic!("nothing to visit")));
}

#[test]
fn restore_keeps_versions_flags_and_deadlines_and_moves_the_counter() {
    let ks = Keyspace::new(2);
    let high = (77u64 << 20) | 5;
    assert_eq!(
        ks.restore(1, b"a", RestoreValue::String(b"x"), 5000, high, 9, 100),
        Restored::Inserted(0)
    );
    assert_eq!(
        ks.restore(1, b"a", RestoreValue::String(b"y"), 0, 3, 0, 100),
        Restored::Exists
    );
    assert_eq!(
        ks.restore(1, b"gone", RestoreValue::String(b"y"), 100, 3, 0, 100),
        Restored::Expired
    );
    let mut list = crate::List::new();
    list.push(End::Tail, &[b"e"], &Limits::default());
    let r = ks.restore(
        0,
        b"l",
        RestoreValue::Object(Object::List(list)),
        0,
        0,
        0,
        0,
    );
    assert!(matches!(r, Restored::Inserted(_)));
    let (mut s, h) = ks.db(1).lock_key(b"a");
    let slot = s.find(b"a", h, 100).expect("present");
    let e = s.entry(slot);
    assert_eq!(
        (e.string(), e.expire_at_ms(), e.version(), e.flags()),
        (Some(&b"x"[..]), Some(5000), high, 9)
    );
    // The next version this shard issues is above the restored one.
    s.set_string(slot, b"z");
    assert!(s.entry(slot).version() > high);
    assert!(s.find(b"gone", crate::Db::route(b"gone").1, 100).is_none());
    let mut lone = Shard::new(3);
    let h = crate::Db::route(b"k").1;
    assert!(matches!(
        lone.restore_entry(b"k", h, RestoreValue::String(b""), 0, u64::MAX >> 1, 0, 0),
        Restored::Inserted(_)
    ));
}
