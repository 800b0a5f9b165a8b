//! The console at `/ui`: one page (`ui.html`, HTML with its CSS and script inline, no build
//! step, nothing fetched from elsewhere) that talks to the door's own endpoints: `/v1/keys`
//! to browse, `/v1/kv/{key}` to view and edit with the version (If-Match), `/v1/watch` for
//! the live tail, `/metrics` for the chart. The page holds no data, so it is served without
//! a token; the token the user types is kept in the tab's sessionStorage and sent with every
//! call (as `?_token=` for the event stream, which cannot send headers).

use larder_http::Method;

use super::{Action, Cx};

const PAGE: &str = include_str!("ui.html");

/// Only the page's own script and style, no frames, connections to this origin only.
const CSP: &str = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                   connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; \
                   base-uri 'none'; form-action 'none'";

/// Serves `/ui` (and `/ui/`).
pub fn serve(cx: &mut Cx<'_, '_>) -> Action {
    if larder_http::path_segments(cx.req.path)
        .skip(1)
        .any(|s| !s.is_empty())
    {
        return cx.error(404, "no such page");
    }
    if !matches!(cx.req.method, Method::Get | Method::Head) {
        let body = serde_json::json!({ "error": "method not allowed: use GET or HEAD" });
        let body = body.to_string();
        let mut r = cx.start(405);
        r.header("Allow", "GET, HEAD");
        r.body(Some("application/json"), body.as_bytes());
        return cx.done();
    }
    let mut r = cx.start(200);
    r.header("Content-Security-Policy", CSP)
        .header("X-Content-Type-Options", "nosniff")
        .header("Referrer-Policy", "no-referrer")
        .header("Cache-Control", "no-cache");
    r.body(Some("text/html; charset=utf-8"), PAGE.as_bytes());
    cx.done()
}
