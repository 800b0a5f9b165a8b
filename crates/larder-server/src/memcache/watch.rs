//! `watch`: a connection that receives a log line per event.

use larder_memcache::{TextReply, TextWriter, Tokens};

use super::{Ctx, Flow};

/// `watch [fetchers|mutations|evictions|connevents ...]`.
// FIXME(issue 16): not built yet; answers memcached's ERROR for an unknown command.
pub(super) fn command(_cx: &Ctx<'_>, _args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    w.reply(TextReply::Error);
    Flow::Continue
}
