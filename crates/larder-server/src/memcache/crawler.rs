//! `lru_crawler`: metadump, mgdump, crawl and the crawler's settings.

use larder_memcache::{TextReply, TextWriter, Tokens};

use super::{Ctx, Flow};

/// `lru_crawler <subcommand> ...`.
// FIXME(issue 16): not built yet; answers memcached's ERROR for an unknown command.
pub(super) fn command(_cx: &Ctx<'_>, _args: Tokens<'_>, w: &mut TextWriter<'_>) -> Flow {
    w.reply(TextReply::Error);
    Flow::Continue
}
