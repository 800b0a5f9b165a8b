//! The HTTP door's own request counts and latencies, per route class and status: counters
//! written only by the worker that served the request (a plain load and store, as
//! `ThreadStats`), summed when `/metrics` is read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use larder_commands::state::bump;

use super::expo::{Exposition, Kind};

/// What a request asked for, as the `route` label names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    Kv,
    Hash,
    Set,
    Zset,
    Keys,
    Watch,
    Subscribe,
    /// The work queue (`/v1/queue/...`).
    Queue,
    /// The Upstash command API (`POST /`, `/pipeline`, `/multi-exec`, `/<command>/...`).
    Command,
    Metrics,
    Health,
    Ui,
    /// Another path under `/v1/` (answered 404).
    Other,
    /// A request the codec refused before it had a path (400, 413, 431, ...).
    Invalid,
}

const ROUTES: [Route; 14] = [
    Route::Kv,
    Route::Hash,
    Route::Set,
    Route::Zset,
    Route::Keys,
    Route::Watch,
    Route::Subscribe,
    Route::Queue,
    Route::Command,
    Route::Metrics,
    Route::Health,
    Route::Ui,
    Route::Other,
    Route::Invalid,
];

impl Route {
    /// The route class of a request path, as `route()` in `http/mod.rs` dispatches it.
    pub fn of(path: &str) -> Route {
        let mut segs = larder_http::path_segments(path);
        match segs.next().unwrap_or("") {
            "healthz" | "livez" | "readyz" => Route::Health,
            "metrics" => Route::Metrics,
            "ui" => Route::Ui,
            "v1" => {
                let kind = segs.next().unwrap_or("");
                let more = segs.next().is_some();
                match kind {
                    "kv" => Route::Kv,
                    "hash" => Route::Hash,
                    "set" => Route::Set,
                    "zset" => Route::Zset,
                    "keys" if !more => Route::Keys,
                    "watch" if !more => Route::Watch,
                    "subscribe" if !more => Route::Subscribe,
                    "queue" if more => Route::Queue,
                    _ => Route::Other,
                }
            }
            _ => Route::Command,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Route::Kv => "kv",
            Route::Hash => "hash",
            Route::Set => "set",
            Route::Zset => "zset",
            Route::Keys => "keys",
            Route::Watch => "watch",
            Route::Subscribe => "subscribe",
            Route::Queue => "queue",
            Route::Command => "command",
            Route::Metrics => "metrics",
            Route::Health => "health",
            Route::Ui => "ui",
            Route::Other => "other",
            Route::Invalid => "invalid",
        }
    }
}

/// Status codes counted: every three-digit code HTTP defines classes for.
const FIRST_CODE: u16 = 100;
const CODES: usize = 500;

/// Upper bounds of the latency buckets, in microseconds.
const BOUNDS_US: [u64; 16] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 5_000_000, 10_000_000,
];

/// One route's figures on one worker.
struct RouteStats {
    /// Responses by status code (index: code − 100).
    codes: Box<[AtomicU64]>,
    /// Requests by the first bucket whose bound is at least their latency; the last slot
    /// counts those over every bound.
    buckets: [AtomicU64; BOUNDS_US.len() + 1],
    sum_us: AtomicU64,
}

impl Default for RouteStats {
    fn default() -> Self {
        RouteStats {
            codes: (0..CODES).map(|_| AtomicU64::new(0)).collect(),
            buckets: Default::default(),
            sum_us: AtomicU64::new(0),
        }
    }
}

/// One worker's figures, every route.
struct WorkerStats {
    routes: [RouteStats; ROUTES.len()],
}

/// The door's request figures: one slot per worker thread.
pub struct DoorStats {
    workers: Box<[WorkerStats]>,
}

/// One slot, for a door whose worker count is not known yet.
impl Default for DoorStats {
    fn default() -> Self {
        DoorStats::new(1)
    }
}

impl DoorStats {
    pub fn new(workers: usize) -> DoorStats {
        DoorStats {
            workers: (0..workers.max(1))
                .map(|_| WorkerStats {
                    routes: Default::default(),
                })
                .collect(),
        }
    }

    /// Counts a response with `status` to a request of `route` that took `elapsed`. Only
    /// worker `worker` may call this for its slot (the last slot takes indices past the end,
    /// which only unit tests use).
    pub fn record(&self, worker: usize, route: Route, status: u16, elapsed: Duration) {
        let w = &self.workers[worker.min(self.workers.len() - 1)];
        let r = &w.routes[route as usize];
        if let Some(c) = status
            .checked_sub(FIRST_CODE)
            .and_then(|i| r.codes.get(usize::from(i)))
        {
            bump(c, 1);
        }
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let slot = BOUNDS_US.partition_point(|&b| b < us);
        bump(&r.buckets[slot], 1);
        bump(&r.sum_us, us);
    }

    /// Adds `larder_http_requests_total` and `larder_http_request_duration_seconds`.
    pub fn collect(&self, e: &mut Exposition) {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for (i, route) in ROUTES.iter().enumerate() {
            let per_worker = || self.workers.iter().map(move |w| &w.routes[i]);
            for code in 0..CODES {
                let n: u64 = per_worker().map(|r| load(&r.codes[code])).sum();
                if n > 0 {
                    let code = (FIRST_CODE as usize + code).to_string();
                    e.sample(
                        "larder_http_requests_total",
                        "HTTP requests answered, by route class and status code",
                        Kind::Counter,
                        &[("route", route.label()), ("code", &code)],
                        n as f64,
                    );
                }
            }
            let mut slots = [0u64; BOUNDS_US.len() + 1];
            let mut sum_us = 0;
            for r in per_worker() {
                for (s, b) in slots.iter_mut().zip(&r.buckets) {
                    *s += load(b);
                }
                sum_us += load(&r.sum_us);
            }
            let count: u64 = slots.iter().sum();
            if count == 0 {
                continue;
            }
            let mut cumulative = 0;
            let buckets: Vec<(f64, u64)> = BOUNDS_US
                .iter()
                .zip(slots)
                .map(|(&b, n)| {
                    cumulative += n;
                    (b as f64 / 1e6, cumulative)
                })
                .collect();
            e.histogram(
                "larder_http_request_duration_seconds",
                "Time from a complete HTTP request to its response (or a stream's head), by \
                 route class",
                &[("route", route.label())],
                &buckets,
                sum_us as f64 / 1e6,
                count,
            );
        }
    }
}

/// The status code of the response at the start of `out` (`HTTP/1.1 200 OK`).
pub fn status_of(out: &[u8]) -> Option<u16> {
    let code = out.strip_prefix(b"HTTP/1.1 ")?.get(..3)?;
    std::str::from_utf8(code).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_of_paths() {
        for (path, route) in [
            ("/v1/kv/a%2Fb", Route::Kv),
            ("/v1/hash/h/f", Route::Hash),
            ("/v1/keys", Route::Keys),
            ("/v1/keys/x", Route::Other),
            ("/v1/nope", Route::Other),
            ("/", Route::Command),
            ("/pipeline", Route::Command),
            ("/set/a/b", Route::Command),
            ("/readyz", Route::Health),
            ("/metrics", Route::Metrics),
            ("/ui", Route::Ui),
            ("/v1/watch", Route::Watch),
            ("/v1/queue/jobs", Route::Queue),
            ("/v1/queue/jobs/ack", Route::Queue),
            ("/v1/queue", Route::Other),
        ] {
            assert_eq!(Route::of(path), route, "{path}");
        }
        assert_eq!(
            status_of(b"HTTP/1.1 412 Precondition Failed\r\n"),
            Some(412)
        );
        assert_eq!(status_of(b""), None);
    }

    #[test]
    fn counts_and_buckets_sum_over_workers() {
        let d = DoorStats::new(2);
        d.record(0, Route::Kv, 200, Duration::from_micros(90));
        d.record(1, Route::Kv, 200, Duration::from_micros(300));
        d.record(1, Route::Kv, 404, Duration::from_secs(20));
        d.record(9, Route::Health, 503, Duration::from_micros(100));
        let mut e = Exposition::default();
        d.collect(&mut e);
        let text = e.render();
        for line in [
            "larder_http_requests_total{route=\"kv\",code=\"200\"} 2",
            "larder_http_requests_total{route=\"kv\",code=\"404\"} 1",
            "larder_http_requests_total{route=\"health\",code=\"503\"} 1",
            "larder_http_request_duration_seconds_bucket{route=\"kv\",le=\"0.0001\"} 1",
            "larder_http_request_duration_seconds_bucket{route=\"kv\",le=\"0.00025\"} 1",
            "larder_http_request_duration_seconds_bucket{route=\"kv\",le=\"0.0005\"} 2",
            "larder_http_request_duration_seconds_bucket{route=\"kv\",le=\"10\"} 2",
            "larder_http_request_duration_seconds_bucket{route=\"kv\",le=\"+Inf\"} 3",
            "larder_http_request_duration_seconds_count{route=\"kv\"} 3",
            "larder_http_request_duration_seconds_sum{route=\"kv\"} 20.00039",
            "larder_http_request_duration_seconds_bucket{route=\"health\",le=\"0.0001\"} 1",
        ] {
            assert!(text.contains(line), "{line} not in\n{text}");
        }
        assert!(!text.contains("route=\"ui\""));
    }
}
