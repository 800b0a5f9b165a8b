//! `cache_memlimit`, `slabs` and `lru`: the memory limit and memcached's allocator tuning.

use larder_memcache::{TextReply, TextWriter, Tokens};

use super::{Ctx, Flow};

/// `cache_memlimit <megabytes> [noreply]`.
// FIXME(issue 16): not built yet; answers memcached's ERROR for an unknown command.
pub(super) fn cache_memlimit(_cx: &Ctx<'_>, _args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    w.reply(TextReply::Error);
    Flow::Continue
}

/// `slabs automove <0|1|2>`, `slabs reassign <src> <dst>`.
// FIXME(issue 16): not built yet.
pub(super) fn slabs(_cx: &Ctx<'_>, _args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    w.reply(TextReply::Error);
    Flow::Continue
}

/// `lru <tune|mode|temp_ttl> ...`.
// FIXME(issue 16): not built yet.
pub(super) fn lru(_cx: &Ctx<'_>, _args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    w.reply(TextReply::Error);
    Flow::Continue
}
