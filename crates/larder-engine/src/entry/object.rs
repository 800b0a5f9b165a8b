//! The types of a value: [`ObjectKind`] (what `TYPE` reports) and [`Object`] (a value that
//! lives in an entry's object block). Apart from `entry.rs` because they hold no pointers and
//! need no `unsafe`: they are the safe side of the entry's block.

/// The Redis type of a value, as `TYPE` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    String,
    List,
    Hash,
    Set,
    ZSet,
    Stream,
}

impl ObjectKind {
    /// The name `TYPE` and `SCAN ... TYPE` use.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::String => "string",
            ObjectKind::List => "list",
            ObjectKind::Hash => "hash",
            ObjectKind::Set => "set",
            ObjectKind::ZSet => "zset",
            ObjectKind::Stream => "stream",
        }
    }
}

/// A value that is not an inline string; it lives in the entry's object block, beside the key.
///
/// Strings start inline (one allocation holds key and value); a string that is grown in place
/// (APPEND, SETRANGE) moves here so that repeated growth is amortised. Collection types live
/// here too.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Object {
    /// A string that has been modified in place.
    Str(Vec<u8>),
    /// A large string kept in the buffer it arrived in: the server reads a large last
    /// argument into a buffer of its own, and SET stores that buffer instead of copying it.
    /// The connection holds it too until the command returns, and COPY shares it, which is
    /// why it is never modified in place: [`Entry::string_mut`](super::Entry::string_mut) turns it into a `Str` first.
    Shared(std::sync::Arc<Vec<u8>>),
    /// A list, head first. Never empty while stored: commands delete a list that empties.
    List(crate::List),
    /// A hash. Never empty while stored.
    Hash(crate::Hash),
    /// A set. Never empty while stored.
    Set(crate::Set),
    /// A sorted set. Never empty while stored.
    ZSet(crate::ZSet),
    /// A stream. May be empty while stored (XTRIM, XDEL and MAXLEN 0 keep the key, as Redis).
    Stream(Box<crate::stream::Stream>),
}

impl Object {
    pub fn kind(&self) -> ObjectKind {
        match self {
            Object::Str(_) | Object::Shared(_) => ObjectKind::String,
            Object::List(_) => ObjectKind::List,
            Object::Hash(_) => ObjectKind::Hash,
            Object::Set(_) => ObjectKind::Set,
            Object::ZSet(_) => ObjectKind::ZSet,
            Object::Stream(_) => ObjectKind::Stream,
        }
    }

    /// Where the object's own bytes start (a string's, or a collection's buffer or header),
    /// for a cache prefetch: an address only, never read through.
    pub(crate) fn heap_head(&self) -> *const u8 {
        match self {
            Object::Str(v) => v.as_ptr(),
            Object::Shared(v) => std::sync::Arc::as_ptr(v).cast(),
            Object::List(l) => l.heap_head(),
            Object::Hash(h) => h.heap_head(),
            Object::Set(s) => s.heap_head(),
            Object::ZSet(z) => z.heap_head(),
            Object::Stream(s) => std::ptr::from_ref::<crate::stream::Stream>(s).cast(),
        }
    }

    /// Asks the CPU to start loading the line a lookup of `member` reads in this object, where
    /// that line is known without a search: a dense HyperLogLog's register (PFADD's one
    /// element). Nothing for other values.
    #[inline]
    pub(crate) fn prefetch_member(&self, member: &[u8]) {
        if let Object::Str(s) = self {
            if let Some(at) = crate::hyperloglog::dense_register_byte(s, member) {
                super::prefetch(s.as_ptr().wrapping_add(at));
            }
        }
    }

    /// Redis 7.0's name for the object's encoding (OBJECT ENCODING), for every type but the
    /// string, whose name depends on its bytes: `None` for a string.
    pub fn encoding(&self) -> Option<&'static str> {
        match self {
            Object::Str(_) | Object::Shared(_) => None,
            Object::List(_) => Some("quicklist"),
            Object::Hash(h) => Some(h.encoding()),
            Object::Set(s) => Some(s.encoding()),
            Object::ZSet(z) => Some(z.encoding()),
            Object::Stream(_) => Some("stream"),
        }
    }

    /// Approximate heap bytes owned by the object, in O(1): the shard calls this before and
    /// after every write.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Object::Str(v) => v.capacity(),
            // The buffer and the `Arc`'s two counters; a copy of the key (COPY) counts it
            // again, as it would a buffer of its own.
            Object::Shared(v) => v.capacity() + 2 * std::mem::size_of::<usize>(),
            Object::List(l) => l.heap_bytes(),
            Object::Hash(h) => h.heap_bytes(),
            Object::Set(s) => s.heap_bytes(),
            Object::ZSet(z) => z.heap_bytes(),
            Object::Stream(s) => std::mem::size_of::<crate::stream::Stream>() + s.heap_bytes(),
        }
    }
}
