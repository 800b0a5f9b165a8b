//! Socket-free tests of the stream commands; the Python suite checks replies against
//! redis-server.

use larder_resp::Frame;

use crate::testing::*;

fn entry(id: &str, fields: &[&str]) -> Frame {
    Frame::Array(vec![
        bulk(id),
        Frame::Array(fields.iter().map(|s| bulk(s)).collect()),
    ])
}

#[test]
fn add_range_delete_trim() {
    let mut h = Harness::new();
    assert_eq!(h.run(&["XADD", "s", "1-1", "a", "1"]), bulk("1-1"));
    assert_eq!(h.run(&["XADD", "s", "1-*", "b", "2"]), bulk("1-2"));
    assert_eq!(
        h.run(&["XADD", "s", "1-2", "a", "1"]),
        err("ERR The ID specified in XADD is equal or smaller than the target stream top item")
    );
    assert_eq!(
        h.run(&["XRANGE", "s", "(1-1", "+"]),
        Frame::Array(vec![entry("1-2", &["b", "2"])])
    );
    assert_eq!(h.run(&["XLEN", "s"]), int(2));
    assert_eq!(h.run(&["TYPE", "s"]), Frame::Simple("stream".into()));
    assert_eq!(h.run(&["OBJECT", "ENCODING", "s"]), bulk("stream"));
    assert_eq!(h.run(&["XDEL", "s", "1-1", "9-9"]), int(1));
    assert_eq!(h.run(&["XTRIM", "s", "MAXLEN", "0"]), int(1));
    assert_eq!(h.run(&["XLEN", "s"]), int(0));
    assert_eq!(h.run(&["EXISTS", "s"]), int(1));
    assert_eq!(
        h.run(&["XADD", "s", "NOMKSTREAM", "*"]),
        err("ERR wrong number of arguments for 'xadd' command")
    );
    assert_eq!(
        h.run(&["XADD", "n", "NOMKSTREAM", "*", "a", "b"]),
        Frame::Null
    );
}

#[test]
fn xread_without_block_and_plans() {
    let mut h = Harness::new();
    h.run(&["XADD", "s", "5-0", "a", "1"]);
    assert_eq!(
        h.run(&["XREAD", "STREAMS", "s", "x", "0", "0"]),
        Frame::Array(vec![Frame::Array(vec![
            bulk("s"),
            Frame::Array(vec![entry("5-0", &["a", "1"])])
        ])])
    );
    assert_eq!(h.run(&["XREAD", "STREAMS", "s", "$"]), Frame::Null);
    h.check_plans(&["XREAD COUNT 1 STREAMS a b 0 0", "XREAD BLOCK 0 STREAMS s $"]);
}

#[test]
fn node_limits_follow_the_config() {
    let mut h = Harness::new();
    assert_eq!(
        h.run(&["CONFIG", "SET", "stream-node-max-entries", "2"]),
        ok()
    );
    for i in 1..=5 {
        let id = format!("{i}-0");
        assert_eq!(h.run(&["XADD", "s", &id, "f", "v"]), bulk(&id));
    }
    // Nodes of 2 entries: an approximate trim to 2 removes the first node only (the second
    // would leave 1).
    assert_eq!(h.run(&["XTRIM", "s", "MAXLEN", "~", "2"]), int(2));
    assert_eq!(
        h.run(&["CONFIG", "SET", "stream-node-max-bytes", "1kb"]),
        ok()
    );
}
