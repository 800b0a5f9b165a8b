//! The keys a queue is made of, and its acknowledgement tokens.
//!
//! Queue `jobs` is, in the client's selected database:
//! - `queue:{jobs}:p0`, `queue:{jobs}:p1`, `queue:{jobs}:p2`: one stream per priority level
//!   (2 is the highest, read first), each with the consumer group `workers`;
//! - `queue:{jobs}:meta`: a hash of its settings and counters (`maxlen`, `locked`,
//!   `timeout_ms`, `expired`);
//! - `queue:{jobs}:pub`: the stream of its retained publish window.
//!
//! The name is a hash tag, so all of a queue's keys hash to one cluster slot. The set
//! `queue:index` lists every queue, for the reclaim timer.

/// Priority levels: 0 (the default) to `LEVELS - 1`.
pub const LEVELS: usize = 3;
/// The consumer group of every level.
pub const GROUP: &[u8] = b"workers";
/// The consumer that holds messages the timer took back from a worker that did not
/// acknowledge them in time, until a get hands them to another.
pub const RECLAIM: &[u8] = b"(reclaimed)";
/// The set of every queue's name.
pub const INDEX_KEY: &[u8] = b"queue:index";

fn key(name: &[u8], suffix: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(name.len() + suffix.len() + 9);
    k.extend_from_slice(b"queue:{");
    k.extend_from_slice(name);
    k.extend_from_slice(b"}:");
    k.extend_from_slice(suffix);
    k
}

/// The stream of priority level `p`.
pub fn level_key(name: &[u8], p: usize) -> Vec<u8> {
    key(name, format!("p{p}").as_bytes())
}

/// The hash of settings and counters.
pub fn meta_key(name: &[u8]) -> Vec<u8> {
    key(name, b"meta")
}

/// The stream of the publish window.
pub fn pub_key(name: &[u8]) -> Vec<u8> {
    key(name, b"pub")
}

/// What a worker acknowledges a message with: its level and stream ID, written
/// `<level>-<ms>-<seq>` (opaque to clients).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub priority: usize,
    pub id: Vec<u8>,
}

impl Token {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut t = format!("{}-", self.priority).into_bytes();
        t.extend_from_slice(&self.id);
        t
    }

    /// A token as [`Token::to_bytes`] writes it; `None` for anything else.
    pub fn parse(t: &[u8]) -> Option<Token> {
        let (p, id) = t.split_at(t.iter().position(|&b| b == b'-')?);
        let id = &id[1..];
        let priority = std::str::from_utf8(p).ok()?.parse::<usize>().ok()?;
        let mut parts = id.split(|&b| b == b'-');
        let (ms, seq) = (parts.next()?, parts.next()?);
        let digits = |s: &[u8]| !s.is_empty() && s.len() <= 20 && s.iter().all(u8::is_ascii_digit);
        if priority >= LEVELS || parts.next().is_some() || !digits(ms) || !digits(seq) {
            return None;
        }
        Some(Token {
            priority,
            id: id.to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_garbage_is_refused() {
        let t = Token {
            priority: 2,
            id: b"1700000000000-3".to_vec(),
        };
        assert_eq!(t.to_bytes(), b"2-1700000000000-3");
        assert_eq!(Token::parse(&t.to_bytes()), Some(t));
        for bad in [
            &b""[..],
            b"2",
            b"2-",
            b"3-1-0",
            b"x-1-0",
            b"1-1",
            b"1-1-0-0",
            b"1--0",
            b"1-a-0",
            b"-1-0",
        ] {
            assert_eq!(
                Token::parse(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn key_names_carry_the_name_as_a_hash_tag() {
        assert_eq!(level_key(b"jobs", 2), b"queue:{jobs}:p2");
        assert_eq!(meta_key(b"jobs"), b"queue:{jobs}:meta");
        assert_eq!(pub_key(b"jobs"), b"queue:{jobs}:pub");
    }
}
