use crate::testing::*;
use larder_resp::Frame;

fn arr(f: &Frame) -> &[Frame] {
    match f {
        Frame::Array(v) => v,
        other => panic!("not an array: {other:?}"),
    }
}

fn got(h: &mut Harness, argv: &[&str]) -> Option<(String, String, i64, i64)> {
    match h.run(argv) {
        Frame::Null => None,
        Frame::Array(v) => match v.as_slice() {
            [Frame::Bulk(t), Frame::Bulk(p), Frame::Integer(pr), Frame::Integer(d)] => Some((
                String::from_utf8_lossy(t).into(),
                String::from_utf8_lossy(p).into(),
                *pr,
                *d,
            )),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[test]
fn put_get_ack_by_priority() {
    let mut h = Harness::new();
    h.run(&["QPUT", "q", "low"]);
    h.run(&["QPUT", "q", "PRIORITY", "2", "high"]);
    h.run(&["QPUT", "q", "PRIORITY", "1", "mid"]);
    let a = got(&mut h, &["QGET", "q", "w1"]).expect("a message");
    assert_eq!((a.1.as_str(), a.2, a.3), ("high", 2, 1));
    let b = got(&mut h, &["QGET", "q", "w1"]).expect("a message");
    assert_eq!(b.1, "mid");
    let c = got(&mut h, &["QGET", "q", "w2", "AUTOACK"]).expect("a message");
    assert_eq!(c.1, "low");
    assert_eq!(got(&mut h, &["QGET", "q", "w1"]), None);
    assert_eq!(h.run(&["QACK", "q", &a.0]), int(1));
    assert_eq!(h.run(&["QACK", "q", &a.0]), int(0));
    assert_eq!(h.run(&["XLEN", "queue:{q}:p2"]), int(0));
    assert_eq!(h.run(&["XLEN", "queue:{q}:p1"]), int(1));
    assert_eq!(
        h.run(&["QACK", "q", "nonsense"]),
        err("ERR invalid queue token")
    );
    assert_eq!(
        h.run(&["QPUT", "q", "PRIORITY", "3", "x"]),
        err("ERR PRIORITY must be 0, 1 or 2")
    );
    assert_eq!(
        h.run(&["QPUT", "q", "BOGUS", "3", "x"]),
        err("ERR syntax error")
    );
}

#[test]
fn expired_messages_are_counted_not_delivered() {
    let mut h = Harness::new();
    h.run(&["QPUT", "q", "TTL", "1", "gone"]);
    h.run(&["QPUT", "q", "kept"]);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let m = got(&mut h, &["QGET", "q", "w"]).expect("a message");
    assert_eq!(m.1, "kept");
    let stats = h.run(&["QSTATS", "q"]);
    let s = arr(&stats);
    let pos = s
        .iter()
        .position(|f| *f == bulk("expired"))
        .expect("expired");
    assert_eq!(s[pos + 1], int(1));
}

#[test]
fn lock_and_maxlen_refuse_puts() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["QMAXLEN", "q", "2"]), ok());
    h.run(&["QPUT", "q", "a"]);
    h.run(&["QPUT", "q", "PRIORITY", "1", "b"]);
    assert_eq!(h.run(&["QPUT", "q", "c"]), err(super::ops::FULL));
    assert_eq!(h.run(&["QMAXLEN", "q", "0"]), ok());
    assert_eq!(h.run(&["QLOCK", "q", "1"]), ok());
    assert_eq!(h.run(&["QPUT", "q", "c"]), err(super::ops::LOCKED));
    assert_eq!(h.run(&["QLOCK", "q", "0"]), ok());
    assert!(matches!(h.run(&["QPUT", "q", "c"]), Frame::Bulk(_)));
    assert_eq!(h.run(&["QPURGE", "q", "PRIORITY", "1"]), int(1));
    assert_eq!(h.run(&["QPURGE", "q"]), int(2));
    assert_eq!(got(&mut h, &["QGET", "q", "w"]), None);
    // Refused inside MULTI.
    h.run(&["MULTI"]);
    assert_eq!(
        h.run(&["QPUT", "q", "x"]),
        err("ERR Command not allowed inside a transaction")
    );
    h.run(&["DISCARD"]);
}

#[test]
fn reclaimed_messages_go_to_the_next_worker_with_one_more_delivery() {
    let mut h = Harness::new();
    h.run(&["QTIMEOUT", "q", "1"]);
    h.run(&["QPUT", "q", "job"]);
    let first = got(&mut h, &["QGET", "q", "w1"]).expect("a message");
    assert_eq!(got(&mut h, &["QGET", "q", "w2"]), None);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let server = std::sync::Arc::clone(&h.server);
    let now = larder_engine::now_ms();
    assert_eq!(super::timer::pass(&server, &mut h.conn, now), 1);
    let again = got(&mut h, &["QGET", "q", "w2"]).expect("redelivered");
    assert_eq!(
        (again.0.as_str(), again.1.as_str()),
        (first.0.as_str(), "job")
    );
    assert_eq!(again.3, 2);
    // The first worker's late acknowledgement is for a message it no longer holds, but the
    // message is still unacknowledged: whoever acknowledges first ends it.
    assert_eq!(h.run(&["QACK", "q", &again.0]), int(1));
    let workers = h.run(&["QWORKERS", "q"]);
    let names: Vec<&Frame> = arr(&workers).iter().map(|w| &arr(w)[0]).collect();
    assert!(
        names.contains(&&bulk("w1")) && names.contains(&&bulk("w2")),
        "{names:?}"
    );
}

#[test]
fn the_publish_window_is_read_by_index() {
    let mut h = Harness::new();
    for i in 1..=5 {
        assert_eq!(
            h.run(&["QPUB", "q", "WINDOW", "3", &format!("m{i}")]),
            int(i)
        );
    }
    let r = h.run(&["QSUB", "q", "1"]);
    let idx: Vec<&Frame> = arr(&r).iter().map(|m| &arr(m)[0]).collect();
    assert_eq!(idx, [&int(3), &int(4), &int(5)]);
    let r = h.run(&["QSUB", "q", "5", "COUNT", "10"]);
    assert_eq!(arr(&r).len(), 1);
    assert_eq!(arr(&arr(&r)[0])[1], bulk("m5"));
}

/// Runs `argv` as a connection's worker does: `Err(deadline)` when the client now waits
/// (its request is run again, with the same arguments, when woken or at the deadline).
fn run_or_wait(h: &mut Harness, argv: &[&str]) -> Result<Frame, u64> {
    let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_bytes()).collect();
    h.out.truncate(0);
    match crate::exec::execute(&h.server, &mut h.conn, &argv, &mut h.out) {
        crate::exec::Outcome::Blocked { until_ms } => Err(until_ms),
        crate::exec::Outcome::Continue => {
            let raw = h.out.take_bytes();
            Ok(larder_resp::decode(&raw)
                .expect("a reply")
                .expect("a reply")
                .0)
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_blocked_get_keeps_its_deadline_and_place_across_runs() {
    let mut h = Harness::new();
    let mut putter = Harness::connect(std::sync::Arc::clone(&h.server));
    let id = h.conn.id;
    let get = ["QGET", "q", "w", "BLOCK", "5000"];
    let until = run_or_wait(&mut h, &get).expect_err("nothing yet: it waits");
    assert!(h.server.blocking.is_blocked(id));
    // A wake-up that finds nothing (a write to another level's key, say): it waits on, until
    // the same deadline, still registered.
    std::thread::sleep(std::time::Duration::from_millis(3));
    assert_eq!(run_or_wait(&mut h, &get), Err(until));
    assert!(h.server.blocking.is_blocked(id));
    // A put wakes it: served once, and it leaves the line.
    putter.run(&["QPUT", "q", "PRIORITY", "1", "wake"]);
    let m = run_or_wait(&mut h, &get).expect("served");
    assert_eq!(arr(&m)[1], bulk("wake"));
    assert_eq!(arr(&m)[3], int(1));
    assert!(!h.server.blocking.is_blocked(id));
    assert_eq!(h.conn.blocked, None);
    // The next get on the connection waits on its own, shorter deadline and ends with null
    // when it passes: the message delivered above is not handed out again.
    let get = ["QGET", "q", "w", "BLOCK", "30"];
    let until = run_or_wait(&mut h, &get).expect_err("it waits");
    assert!(until <= larder_engine::now_ms() + 30);
    assert_eq!(run_or_wait(&mut h, &get), Err(until), "woken early");
    while larder_engine::now_ms() <= until {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(run_or_wait(&mut h, &get), Ok(Frame::Null));
    assert!(!h.server.blocking.is_blocked(id));
    assert_eq!(h.conn.blocked, None);
}

/// The commands INFO commandstats counts, but the test's own CONFIG and INFO.
fn command_stats(h: &mut Harness) -> String {
    match h.run(&["INFO", "commandstats"]) {
        Frame::Bulk(b) => String::from_utf8_lossy(&b)
            .lines()
            .filter(|l| l.starts_with("cmdstat_") && !l.starts_with("cmdstat_config"))
            .collect::<Vec<_>>()
            .join("\n"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_timer_sleeps_without_queues_and_looks_when_a_message_can_be_due() {
    let mut h = Harness::new();
    let server = std::sync::Arc::clone(&h.server);
    let timer = &server.queues;
    // No queue: nothing to look at, no wake-up planned, and a pass runs no command.
    assert!(timer.is_empty());
    assert_eq!(timer.plan(), u64::MAX);
    assert_eq!(
        super::timer::pass(&server, &mut h.conn, larder_engine::now_ms()),
        0
    );
    assert_eq!(command_stats(&mut h), "");

    h.run(&["QTIMEOUT", "q", "60000"]);
    h.run(&["QPUT", "q", "a"]);
    assert_eq!(timer.len(), 1);
    assert_eq!(timer.plan(), 0, "a new queue is looked at once");
    let delivered = larder_engine::now_ms();
    got(&mut h, &["QGET", "q", "w"]).expect("a message");
    h.run(&["CONFIG", "RESETSTAT"]);
    let now = larder_engine::now_ms();
    assert_eq!(super::timer::pass(&server, &mut h.conn, now), 0);
    // Next: when the message handed out becomes due, no later.
    let next = timer.plan();
    assert!(
        (delivered + 60_000..=now + 60_000).contains(&next),
        "{next}"
    );
    // The look read the keyspace directly: no command ran.
    assert_eq!(command_stats(&mut h), "");
    // A pass before then looks at nothing.
    assert_eq!(super::timer::pass(&server, &mut h.conn, next - 1), 0);
    assert_eq!(timer.plan(), next);

    // A shorter timeout: looked at once, and the message is taken back when due.
    h.run(&["QTIMEOUT", "q", "1"]);
    assert_eq!(timer.plan(), 0);
    std::thread::sleep(std::time::Duration::from_millis(3));
    h.run(&["CONFIG", "RESETSTAT"]);
    assert_eq!(
        super::timer::pass(&server, &mut h.conn, larder_engine::now_ms()),
        1
    );
    // The write went through the executor.
    let stats = command_stats(&mut h);
    assert!(stats.contains("cmdstat_xautoclaim:calls=1,"), "{stats}");
    assert_eq!(got(&mut h, &["QGET", "q", "w2"]).map(|m| m.3), Some(2));

    // A purged queue leaves the registry at its next look.
    h.run(&["QPURGE", "q"]);
    let later = timer.plan();
    assert_eq!(super::timer::pass(&server, &mut h.conn, later), 0);
    assert!(timer.is_empty());
    assert_eq!(timer.plan(), u64::MAX);
}

#[test]
fn the_timer_registry_is_rebuilt_from_the_index() {
    let mut h = Harness::new();
    // As a load leaves them: the index and a level, with no queue command run.
    h.run(&["SELECT", "3"]);
    h.run(&["SADD", "queue:index", "q", "7"]);
    h.run(&["XADD", "queue:{q}:p1", "*", "payload", "x"]);
    h.run(&["XADD", "queue:{7}:p0", "*", "payload", "y"]);
    let server = std::sync::Arc::clone(&h.server);
    assert!(server.queues.is_empty());
    super::timer::rebuild(&server);
    assert_eq!(server.queues.len(), 2);
    // Both levels exist: the queues stay after a look.
    super::timer::pass(&server, &mut h.conn, larder_engine::now_ms());
    assert_eq!(server.queues.len(), 2);
}
