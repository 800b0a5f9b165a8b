//! The operators' commands of the text protocol: `lru_crawler` ([`super::crawler`]), `watch`
//! ([`super::watch`]), `cache_memlimit`, `slabs` and `lru` ([`super::tune`]). Each reads its
//! own arguments (memcached's vary per subcommand) and writes memcached's answer.

use larder_memcache::{AdminCommand, TextWriter, Tokens};

use super::{crawler, tune, watch, Ctx, Flow};

/// Runs an operator's command.
pub(super) fn run(
    cx: &Ctx<'_>,
    command: AdminCommand,
    args: Tokens<'_>,
    w: &mut TextWriter<'_>,
) -> Flow {
    match command {
        AdminCommand::LruCrawler => crawler::command(cx, args, w),
        AdminCommand::Watch => watch::command(cx, args, w),
        AdminCommand::CacheMemlimit => tune::cache_memlimit(cx, args, w),
        AdminCommand::Slabs => tune::slabs(args, w),
        AdminCommand::Lru => tune::lru(args, w),
    }
}
