//! Who may call the door and how much: bearer-token authentication (checked as AUTH checks
//! it), CORS, and per-address rate limits.

use larder_commands::config::Param;

use super::{Action, Cx};

/// Response headers a browser script may read (CORS).
pub const EXPOSED_HEADERS: &str = "ETag, X-Larder-TTL-Ms, Retry-After";

/// Per-address request budgets (`http-rate-limit`).
#[derive(Default)]
pub struct Rates {}

/// Checks that come before routing: CORS preflight and origin, and the rate limit. `Some`:
/// the request is answered.
pub fn screen(_cx: &mut Cx<'_, '_>) -> Option<Action> {
    None
}

/// Whether the request may use data endpoints: without `requirepass` anyone may; with it,
/// `Authorization: Bearer <token>` where the token is `<user>:<password>`, or a password
/// alone for the `default` user, checked as AUTH checks it.
pub fn authorized(cx: &mut Cx<'_, '_>) -> bool {
    let required = cx.server.config.text(Param::Requirepass);
    if required.is_empty() {
        cx.state.authenticated = true;
        return true;
    }
    let Some(token) = cx
        .req
        .header("authorization")
        .and_then(|v| {
            v.strip_prefix(b"Bearer ")
                .or_else(|| v.strip_prefix(b"bearer "))
        })
        .map(<[u8]>::trim_ascii)
    else {
        cx.state.authenticated = false;
        return false;
    };
    if let Some((t, pass)) = cx.authorized_token.as_ref() {
        if t == token && *pass == required {
            cx.state.authenticated = true;
            return true;
        }
    }
    let ok = match token.iter().position(|&b| b == b':') {
        Some(i) => {
            larder_commands::connection::credentials_ok(cx.server, &token[..i], &token[i + 1..])
                || larder_commands::connection::credentials_ok(cx.server, b"default", token)
        }
        None => larder_commands::connection::credentials_ok(cx.server, b"default", token),
    };
    cx.state.authenticated = ok;
    *cx.authorized_token = ok.then(|| (token.to_vec(), required.to_string()));
    ok
}

/// `401` with a bearer challenge.
pub fn unauthorized(cx: &mut Cx<'_, '_>) -> Action {
    let body = serde_json::json!({
        "error": "NOAUTH Authentication required: send Authorization: Bearer <user>:<password>"
    })
    .to_string();
    let mut r = cx.start(401);
    r.header("WWW-Authenticate", "Bearer realm=\"larder\"");
    r.body(Some("application/json"), body.as_bytes());
    cx.done()
}
