//! The console at `/ui`.

use super::{Action, Cx};

/// Serves `/ui`.
pub fn serve(cx: &mut Cx<'_, '_>) -> Action {
    cx.error(501, "not built yet")
}
