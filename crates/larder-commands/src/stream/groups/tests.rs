use std::sync::Arc;

use larder_engine::{Change, ChangeKind, Consumer, Interest, Object};
use larder_resp::Frame;
use parking_lot::Mutex;

use crate::testing::{err, int, ok, shard_for, Harness, Notices};

#[derive(Default)]
struct Collect(Mutex<Vec<Vec<Vec<u8>>>>);

impl Consumer for Collect {
    fn committed(&self, _: u64, changes: &[Change]) {
        let commands = changes.iter().filter(|c| c.kind == ChangeKind::Command);
        self.0.lock().extend(commands.map(|c| c.argv.to_vecs()));
    }
}

/// A group's state as replay must reproduce it: last delivered ID, read counter, the PEL
/// (ID, owner, delivery time, delivery count) and each consumer's pending IDs. Seen times
/// are left out: a replay happens at another time.
type GroupState = (
    Vec<u8>,
    String,
    Option<u64>,
    Vec<(String, Vec<u8>, u64, u64)>,
    Vec<(Vec<u8>, Vec<String>)>,
);

fn groups_of(h: &Harness, key: &str) -> Vec<GroupState> {
    let (mut shard, hash) = shard_for(&h.server, key.as_bytes());
    let Some(slot) = shard.find(key.as_bytes(), hash, larder_engine::now_ms()) else {
        return Vec::new();
    };
    let Some(Object::Stream(s)) = shard.entry(slot).object() else {
        return Vec::new();
    };
    let Some(groups) = s.groups.as_ref() else {
        return Vec::new();
    };
    groups
        .iter()
        .map(|(name, g)| {
            let pel = g
                .pending_range(
                    larder_engine::stream::StreamId::MIN,
                    larder_engine::stream::StreamId::MAX,
                )
                .map(|(id, n)| {
                    let owner = n.consumer().to_vec();
                    (id.to_string(), owner, n.delivery_time_ms, n.delivery_count)
                })
                .collect();
            let consumers = g
                .consumers()
                .map(|(n, c)| {
                    let ids = c
                        .pending_from(larder_engine::stream::StreamId::MIN)
                        .map(|i| i.to_string())
                        .collect();
                    (n.to_vec(), ids)
                })
                .collect();
            (
                name.to_vec(),
                g.last_id().to_string(),
                g.entries_read(),
                pel,
                consumers,
            )
        })
        .collect()
}

fn run(h: &mut Harness, line: &str) -> Frame {
    h.run(&line.split(' ').collect::<Vec<_>>())
}

/// Every group command's recorded replay, run on a fresh server, rebuilds the same groups:
/// last delivered IDs, read counters, PELs with owners, delivery times and counts.
#[test]
fn recorded_commands_replay_groups_exactly() {
    let mut h = Harness::new();
    let log = Arc::new(Collect::default());
    h.server
        .keyspace
        .feed()
        .subscribe(Interest::COMMANDS, log.clone());
    for line in [
        "XADD s 1-1 f a",
        "XADD s 2-1 f b",
        "XADD s 3-1 f c",
        "XADD s 4-1 f d",
        "XGROUP CREATE s g 0",
        "XGROUP CREATE s other $ ENTRIESREAD 4",
        "XREADGROUP GROUP g alice COUNT 2 STREAMS s >",
        "XREADGROUP GROUP g bob NOACK COUNT 1 STREAMS s >",
        "XREADGROUP GROUP g bob STREAMS s >",
        "XREADGROUP GROUP g alice STREAMS s 0",
        "XREADGROUP GROUP g carol STREAMS s 0",
        "XACK s g 2-1",
        "XCLAIM s g bob 0 1-1 IDLE 5000",
        "XCLAIM s g dave 0 3-1 4-1 RETRYCOUNT 7 JUSTID",
        "XCLAIM s g bob 0 1-1 LASTID 9-9",
        "XDEL s 4-1",
        "XAUTOCLAIM s g erin 0 0 COUNT 10",
        "XGROUP CREATECONSUMER s g frank",
        "XGROUP DELCONSUMER s g carol",
        "XGROUP SETID s other 2-1 ENTRIESREAD 2",
        "XREADGROUP GROUP other zed STREAMS s >",
        "XGROUP CREATE s gone 0",
        "XGROUP DESTROY s gone",
    ] {
        let r = run(&mut h, line);
        assert!(!matches!(r, Frame::Error(_)), "{line}: {r:?}");
    }
    let want = groups_of(&h, "s");
    assert_eq!(want.len(), 2);
    let mut replay = Harness::new();
    for argv in log.0.lock().iter() {
        let argv: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
        replay.run_bytes(&argv);
    }
    assert_eq!(groups_of(&replay, "s"), want);
    // Requests that change nothing record nothing.
    log.0.lock().clear();
    for line in [
        "XREADGROUP GROUP g bob STREAMS s >",
        "XACK s g 2-1 99-9",
        "XCLAIM s g bob 3600000 3-1",
        "XAUTOCLAIM s g bob 3600000 0",
        "XGROUP DESTROY s nope",
        "XGROUP CREATECONSUMER s g frank",
        "XPENDING s g",
    ] {
        run(&mut h, line);
    }
    let recorded: Vec<String> = log
        .0
        .lock()
        .iter()
        .map(|a| String::from_utf8_lossy(&a.concat()).into_owned())
        .collect();
    assert_eq!(recorded, Vec::<String>::new());
}

/// Group commands raise Redis's keyspace events, and only when they change something.
#[test]
fn group_commands_raise_redis_events() {
    let mut h = Harness::new();
    let notices = Notices::subscribe(h.server.keyspace.feed());
    assert_eq!(run(&mut h, "XGROUP CREATE s g $ MKSTREAM"), ok());
    assert_eq!(run(&mut h, "XGROUP CREATECONSUMER s g c"), int(1));
    assert_eq!(run(&mut h, "XGROUP CREATECONSUMER s g c"), int(0));
    assert_eq!(run(&mut h, "XGROUP SETID s g 0"), ok());
    assert_eq!(run(&mut h, "XGROUP DELCONSUMER s g c"), int(0));
    assert_eq!(run(&mut h, "XGROUP DESTROY s g"), int(1));
    assert_eq!(run(&mut h, "XGROUP DESTROY s g"), int(0));
    assert_eq!(
        notices.take(),
        [
            "n:new@0:s",
            "t:xgroup-create@0:s",
            "t:xgroup-createconsumer@0:s",
            "t:xgroup-setid@0:s",
            "t:xgroup-delconsumer@0:s",
            "t:xgroup-destroy@0:s",
        ]
    );
    run(&mut h, "XADD s 1-1 f v");
    run(&mut h, "XGROUP CREATE s g 0");
    notices.take();
    let r = run(&mut h, "XREADGROUP GROUP g new STREAMS s >");
    assert!(matches!(r, Frame::Array(_)), "{r:?}");
    let r = run(&mut h, "XCLAIM s g other 0 1-1");
    assert!(matches!(r, Frame::Array(ref v) if v.len() == 1), "{r:?}");
    assert_eq!(
        notices.take(),
        ["t:xgroup-createconsumer@0:s", "t:xgroup-createconsumer@0:s"]
    );
}

/// Redis's errors for a missing key, group or a bad argument, byte for byte.
#[test]
fn errors_match_redis() {
    let mut h = Harness::new();
    assert_eq!(
        run(&mut h, "XGROUP CREATE s g 0"),
        err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
    );
    assert_eq!(run(&mut h, "XGROUP CREATE s g 0 MKSTREAM"), ok());
    assert_eq!(
        run(&mut h, "XGROUP CREATE s g 0"),
        err("BUSYGROUP Consumer Group name already exists")
    );
    assert_eq!(
        run(&mut h, "XGROUP SETID s nope 0"),
        err("NOGROUP No such consumer group 'nope' for key name 's'")
    );
    assert_eq!(
        run(&mut h, "XGROUP SETID s g 0 ENTRIESREAD -2"),
        err("ERR value for ENTRIESREAD must be positive or -1")
    );
    assert_eq!(
        run(&mut h, "XGROUP CREATE s g2 0 BOGUS"),
        err("ERR unknown subcommand or wrong number of arguments for 'CREATE'. Try XGROUP HELP.")
    );
    assert_eq!(
        run(&mut h, "XREADGROUP GROUP nope c STREAMS s >"),
        err("NOGROUP No such key 's' or consumer group 'nope' in XREADGROUP with GROUP option")
    );
    assert_eq!(
        run(&mut h, "XREADGROUP GROUP g c STREAMS s $"),
        err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
    );
    assert_eq!(
        run(&mut h, "XREADGROUP GROUP g c STREAMS s t >"),
        err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
    );
    assert_eq!(
        run(&mut h, "XPENDING s nope"),
        err("NOGROUP No such key 's' or consumer group 'nope'")
    );
    assert_eq!(
        run(&mut h, "XCLAIM s g c 0 1-1 BOGUS"),
        err("ERR Unrecognized XCLAIM option 'BOGUS'")
    );
    assert_eq!(
        run(&mut h, "XAUTOCLAIM s g c 0 0 COUNT 0"),
        err("ERR COUNT must be > 0")
    );
    run(&mut h, "SET str v");
    assert_eq!(
        run(&mut h, "XACK str g 1-1"),
        err("WRONGTYPE Operation against a key holding the wrong kind of value")
    );
}
