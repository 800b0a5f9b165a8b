//! Running the queue's stream commands through the executor, from inside a queue command.
//!
//! A queue command declares no keys, so the executor locks nothing for it; each command it
//! runs here goes through [`execute`] like a client's own (every generic check, keyspace
//! events, statistics, MONITOR, and the log, which records the stream commands and never the
//! queue command). What a client set on its connection for its own replies (CLIENT REPLY, a
//! pipeline's clock) is set aside meanwhile and restored after.

use larder_resp::{Frame, Protocol, ReplyBuf};

use crate::exec::{execute, ConnState, Outcome, ReplyMode};
use crate::state::Server;

/// What running one command gave.
#[derive(Debug)]
pub enum Ran {
    /// Its reply, decoded.
    Reply(Frame),
    /// It blocked (a blocking read with nothing to serve): the client waits.
    Blocked,
}

/// Runs `argv` on `conn` through the executor, its reply decoded (RESP2 shapes), with the
/// connection's wait (`ConnState::blocked`) as it is: for the one step that may block, which
/// waits until that deadline, registers the client (or keeps its place in line on a retry),
/// or ends the wait.
pub fn run(server: &Server, conn: &mut ConnState, argv: &[&[u8]]) -> Ran {
    let mode = std::mem::replace(&mut conn.reply_mode, ReplyMode::On);
    let batching = std::mem::replace(&mut conn.batching, false);
    let clock = conn.clock_us.take();
    let mut out = ReplyBuf::new(Protocol::Resp2);
    let outcome = execute(server, conn, argv, &mut out);
    conn.reply_mode = mode;
    conn.batching = batching;
    conn.clock_us = clock;
    match outcome {
        Outcome::Continue => {}
        Outcome::Blocked { .. } => return Ran::Blocked,
        // CLIENT PAUSE began while the queue command ran: its step did not run.
        Outcome::Paused { .. } => {
            return Ran::Reply(Frame::Error(
                "ERR the server is paused (CLIENT PAUSE)".into(),
            ))
        }
    }
    let bytes = if out.attached.is_empty() {
        std::mem::take(&mut out.buf)
    } else {
        out.attached.splice(&out.buf)
    };
    Ran::Reply(match larder_resp::decode(&bytes) {
        Ok(Some((frame, _))) => frame,
        _ => Frame::Error("ERR the command gave no reply".into()),
    })
}

/// Runs a command that never blocks (no BLOCK argument): its reply. The connection's wait
/// is set aside meanwhile: the executor ends the wait of a command that ends while it is set
/// (taking the deadline and the client's place in line), and this step is not the command
/// that waits.
pub fn reply(server: &Server, conn: &mut ConnState, argv: &[&[u8]]) -> Frame {
    let wait = conn.blocked.take();
    let ran = run(server, conn, argv);
    conn.blocked = wait;
    match ran {
        Ran::Reply(f) => f,
        Ran::Blocked => Frame::Error("ERR the command blocked".into()),
    }
}

/// The integer of a reply (an integer, or a bulk holding one); 0 for anything else.
pub fn int(f: &Frame) -> i64 {
    match f {
        Frame::Integer(n) => *n,
        Frame::Bulk(b) => crate::args::parse_i64(b).unwrap_or(0),
        Frame::Simple(s) => s.parse().unwrap_or(0),
        _ => 0,
    }
}

/// The bytes of a bulk or simple string reply.
pub fn bytes(f: &Frame) -> Option<&[u8]> {
    match f {
        Frame::Bulk(b) => Some(b),
        Frame::Simple(s) => Some(s.as_bytes()),
        _ => None,
    }
}

/// The elements of an array (or set) reply; empty for anything else.
pub fn items(f: &Frame) -> &[Frame] {
    match f {
        Frame::Array(v) | Frame::Set(v) => v,
        _ => &[],
    }
}

/// The value named `name` in a reply of name/value pairs: a flat array (RESP2) or a map.
pub fn field<'f>(f: &'f Frame, name: &str) -> Option<&'f Frame> {
    match f {
        Frame::Map(pairs) => pairs
            .iter()
            .find(|(k, _)| bytes(k) == Some(name.as_bytes()))
            .map(|(_, v)| v),
        Frame::Array(v) => v
            .chunks_exact(2)
            .find(|kv| bytes(&kv[0]) == Some(name.as_bytes()))
            .map(|kv| &kv[1]),
        _ => None,
    }
}

/// One stream entry of a reply: `[id, [field, value, ...]]`.
pub struct Entry {
    pub id: Vec<u8>,
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Entry {
    /// The entry of a reply element; `None` when it is not one (a deleted entry's nil).
    pub fn of(f: &Frame) -> Option<Entry> {
        let [id, fields] = items(f) else {
            return None;
        };
        let id = bytes(id)?.to_vec();
        let fields = items(fields)
            .chunks_exact(2)
            .filter_map(|kv| Some((bytes(&kv[0])?.to_vec(), bytes(&kv[1])?.to_vec())))
            .collect();
        Some(Entry { id, fields })
    }

    /// The value of field `name`.
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_found_in_flat_arrays_and_maps() {
        let flat = Frame::Array(vec![
            Frame::Bulk(b"name".to_vec()),
            Frame::Bulk(b"w1".to_vec()),
            Frame::Bulk(b"idle".to_vec()),
            Frame::Integer(7),
        ]);
        assert_eq!(field(&flat, "idle").map(int), Some(7));
        assert!(field(&flat, "pending").is_none());
        let map = Frame::Map(vec![(Frame::Simple("idle".into()), Frame::Integer(9))]);
        assert_eq!(field(&map, "idle").map(int), Some(9));
    }

    #[test]
    fn entries_are_read_from_replies_and_nils_are_not_entries() {
        let e = Frame::Array(vec![
            Frame::Bulk(b"1-0".to_vec()),
            Frame::Array(vec![Frame::Bulk(b"p".to_vec()), Frame::Bulk(b"x".to_vec())]),
        ]);
        let e = Entry::of(&e).expect("an entry");
        assert_eq!(e.id, b"1-0");
        assert_eq!(e.get(b"p"), Some(&b"x"[..]));
        assert!(Entry::of(&Frame::Null).is_none());
    }
}
