//! Server-Sent Events from the change feed and pub/sub, and long polls.

use super::{Action, Cx};

/// Watches, subscriptions over SSE and long polls.
#[derive(Default)]
pub struct Registry {}

/// `GET /v1/watch`.
pub fn watch(cx: &mut Cx<'_, '_>) -> Action {
    cx.error(501, "not built yet")
}

/// `GET /v1/subscribe`.
pub fn subscribe(cx: &mut Cx<'_, '_>) -> Action {
    cx.error(501, "not built yet")
}

/// A long poll on `key` while its version is `version` (0: while it is missing): `Some`
/// when the request is answered or waits, `None` when the wait ran out (the caller answers
/// `304`).
pub fn long_poll(
    _cx: &mut Cx<'_, '_>,
    _key: &[u8],
    _version: u64,
    _wait_ms: u64,
) -> Option<Action> {
    None
}
