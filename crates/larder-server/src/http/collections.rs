//! Hashes, sets and sorted sets as sub-resources, and the key listing.

use super::{Action, Cx};

/// Serves `/v1/{hash|set|zset}/{key}[/{member}]`.
pub fn serve(cx: &mut Cx<'_, '_>, _kind: &str, _rest: &[&str]) -> Action {
    cx.error(501, "not built yet")
}

/// `GET /v1/keys?prefix=&cursor=&count=`.
pub fn keys(cx: &mut Cx<'_, '_>) -> Action {
    cx.error(501, "not built yet")
}
