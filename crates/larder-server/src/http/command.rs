//! The command API of the Upstash REST protocol.

use super::{Action, Cx};

/// Serves `POST /`, `/pipeline`, `/multi-exec` and the path form `/{command}/{arg}...`.
pub fn serve(cx: &mut Cx<'_, '_>) -> Action {
    cx.error(501, "not built yet")
}
