//! Operations endpoints: `/metrics`, `/healthz`, `/livez`, `/readyz`.

use super::{Action, Cx};

/// Serves the operations endpoint `name`.
pub fn serve(cx: &mut Cx<'_, '_>, _name: &str) -> Action {
    cx.error(501, "not built yet")
}
