//! Operations endpoints: `/metrics` (Prometheus), `/healthz`, `/livez`, `/readyz`.
//!
//! `/metrics` has redis_exporter's `redis_*` families ([`redis`]) and `larder_*` ones for
//! what redis_exporter has no name for: expiry lateness and the HTTP door's requests
//! ([`door`]). It needs the bearer token once `requirepass` is set (as redis_exporter needs
//! the password to run INFO); the health endpoints never do, and show no data.

use std::sync::atomic::Ordering;

use larder_commands::Server;
use larder_http::Method;

use super::{Action, Cx};

mod door;
mod expo;
mod redis;

pub use door::{status_of, DoorStats, Route};
use expo::Exposition;

/// The exposition format's content type.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Answers methods other than GET and HEAD with `405`; `None` for GET and HEAD.
fn only_get(cx: &mut Cx<'_, '_>) -> Option<Action> {
    if matches!(cx.req.method, Method::Get | Method::Head) {
        return None;
    }
    let body = serde_json::json!({ "error": "method not allowed: use GET or HEAD" }).to_string();
    let mut r = cx.start(405);
    r.header("Allow", "GET, HEAD");
    r.body(Some("application/json"), body.as_bytes());
    Some(cx.done())
}

/// `GET /metrics`.
pub fn serve_metrics(cx: &mut Cx<'_, '_>) -> Action {
    if let Some(a) = only_get(cx) {
        return a;
    }
    let text = render(cx.server, &cx.shared.metrics, cx.now_ms);
    cx.start(200).body(Some(CONTENT_TYPE), text.as_bytes());
    cx.done()
}

/// The whole exposition.
fn render(server: &Server, door: &DoorStats, now_ms: u64) -> String {
    let mut e = Exposition::default();
    redis::collect(server, now_ms, &mut e);
    lateness(server, &mut e);
    door.collect(&mut e);
    e.render()
}

/// Upper bounds of the expiry lateness buckets, in ms.
const LATENESS_BOUNDS_MS: [usize; 9] = [1, 2, 5, 10, 25, 50, 100, 250, 500];

/// `larder_expiry_lateness_seconds`: how long after its deadline the expiry thread removed
/// each key it removed.
fn lateness(server: &Server, e: &mut Exposition) {
    let (counts, sum_ms) = server.expiry_lateness.counts();
    let count: u64 = counts.iter().sum();
    let buckets: Vec<(f64, u64)> = LATENESS_BOUNDS_MS
        .iter()
        .map(|&b| {
            let within: u64 = counts.iter().take(b + 1).sum();
            (b as f64 / 1e3, within)
        })
        .collect();
    e.histogram(
        "larder_expiry_lateness_seconds",
        "How long after its deadline the active expiry removed a key",
        &[],
        &buckets,
        sum_ms as f64 / 1e3,
        count,
    );
}

/// `/healthz`, `/livez` and `/readyz`.
pub fn serve_health(cx: &mut Cx<'_, '_>, name: &str) -> Action {
    if let Some(a) = only_get(cx) {
        return a;
    }
    if name == "readyz" {
        if cx.loading() {
            let body = serde_json::json!({
                "status": "loading",
                "error": "LOADING Redis is loading the dataset in memory",
            });
            return cx.json(503, &body);
        }
        let gates = &cx.server.gates;
        if gates.write_failed.load(Ordering::Acquire) {
            let reason = gates.write_error.lock().clone();
            let body = serde_json::json!({
                "status": "refusing writes",
                "error": format!("MISCONF Errors writing to the AOF file: {reason}"),
            });
            return cx.json(503, &body);
        }
        return cx.json(200, &serde_json::json!({ "status": "ready" }));
    }
    cx.json(200, &serde_json::json!({ "status": "ok" }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_of_a_fresh_server() {
        let server = larder_commands::testing::Harness::new().server;
        server.expiry_lateness.record(0);
        server.expiry_lateness.record(3);
        server.expiry_lateness.record(5000);
        let door = DoorStats::new(1);
        door.record(0, Route::Kv, 200, std::time::Duration::from_micros(5));
        let text = render(&server, &door, larder_engine::now_ms());
        for line in [
            "# TYPE redis_up gauge",
            "redis_up 1",
            "# HELP redis_connected_clients connected_clients metric",
            "# TYPE redis_keyspace_hits_total counter",
            "# HELP redis_memory_used_bytes memory_used_bytes metric",
            "# TYPE redis_rdb_last_bgsave_status gauge",
            "redis_rdb_last_bgsave_status 1",
            "redis_config_maxmemory 0",
            "larder_expiry_lateness_seconds_bucket{le=\"0.001\"} 1",
            "larder_expiry_lateness_seconds_bucket{le=\"0.005\"} 2",
            "larder_expiry_lateness_seconds_bucket{le=\"+Inf\"} 3",
            "larder_expiry_lateness_seconds_sum 5.003",
            "larder_http_requests_total{route=\"kv\",code=\"200\"} 1",
        ] {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
        assert!(text.contains("redis_instance_info{role=\"master\",redis_version=\"7.0"));
        // One HELP and one TYPE per family.
        let mut names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# TYPE "))
            .map(|l| l.split(' ').next().unwrap_or(""))
            .collect();
        let n = names.len();
        names.dedup();
        assert_eq!(n, names.len());
    }
}
