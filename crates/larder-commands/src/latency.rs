//! Command latency, as Redis 7.0 tracks it: a histogram of every command's durations (INFO
//! latencystats, LATENCY HISTOGRAM; `latency-tracking`) and the latency monitor's events for
//! commands at least `latency-monitor-threshold` ms long (LATENCY LATEST, HISTORY, RESET,
//! GRAPH, DOCTOR).
//!
//! [`record`] runs after every command. Histograms are per worker thread and per command, as
//! the counters of `ThreadStats` are: written by one thread with a plain load and store, summed
//! when read. A command's histogram is allocated the first time it runs on a thread. The
//! monitor's events are behind a lock that only commands over the threshold take.

mod histogram;
mod monitor;

use std::fmt::Write as _;
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::config::{self, Param};
use crate::error::{Error, Result};
use crate::exec::Cmd;
use crate::state::Server;
use crate::table::{flags::*, CommandSpec, Group, KeySpec};

use histogram::{Histogram, Merged};
use monitor::Monitor;

/// Latency state of a server: histograms per worker thread and command, and the monitor.
pub struct Latency {
    /// `[worker][stats index]`.
    threads: Box<[Box<[OnceLock<Histogram>]>]>,
    monitor: Mutex<Monitor>,
}

impl Latency {
    /// Empty histograms for `threads` stats slots of `commands` commands (registry stats
    /// indexes), and no events.
    pub fn new(threads: usize, commands: usize) -> Latency {
        Latency {
            threads: (0..threads)
                .map(|_| (0..commands).map(|_| OnceLock::new()).collect())
                .collect(),
            monitor: Mutex::new(Monitor::default()),
        }
    }

    /// The histogram of a command summed over the threads; `None` if it has no calls.
    fn merged(&self, stat_index: usize) -> Option<Merged> {
        let parts = self
            .threads
            .iter()
            .filter_map(|t| t.get(stat_index).and_then(OnceLock::get));
        let merged = Merged::sum(parts);
        (merged.total > 0).then_some(merged)
    }

    /// Forget every command's durations (CONFIG RESETSTAT; the monitor's events stay, as in
    /// Redis).
    pub fn reset_histograms(&self) {
        for h in self
            .threads
            .iter()
            .flat_map(|t| t.iter())
            .filter_map(OnceLock::get)
        {
            h.clear();
        }
    }

    /// Add a monitor sample for `event` at `now_s`.
    fn add_sample(&self, event: &'static str, latency_ms: u64, now_s: u64) {
        self.monitor.lock().add_sample(event, latency_ms, now_s);
    }
}

/// Record one call of the command with stats index `stat_index` that took `elapsed_us`, run on
/// worker `worker`: in its histogram when `latency-tracking` is on, and as a monitor event
/// when it took at least `latency-monitor-threshold` ms (a non-zero threshold).
#[inline]
pub fn record(server: &Server, worker: usize, stat_index: usize, elapsed_us: u64) {
    let latency = &server.latency;
    if server.config.num(Param::LatencyTracking) != 0 {
        if let Some(cell) = latency.threads.get(worker).and_then(|t| t.get(stat_index)) {
            cell.get_or_init(Histogram::new).record(elapsed_us);
        }
    }
    let threshold_ms = server.config.num(Param::LatencyMonitorThreshold);
    if threshold_ms > 0 && elapsed_us / 1000 >= threshold_ms as u64 {
        record_event(server, stat_index, elapsed_us / 1000);
    }
}

/// A monitor sample for a slow call: `fast-command` for a command flagged FAST (a fast
/// command this slow points at the system, not at the command), `command` otherwise.
#[cold]
fn record_event(server: &Server, stat_index: usize, latency_ms: u64) {
    let fast = server
        .registry
        .all()
        .get(stat_index)
        .is_some_and(|(_, spec)| spec.has(FAST));
    let event = if fast { "fast-command" } else { "command" };
    server
        .latency
        .add_sample(event, latency_ms, larder_engine::now_ms() / 1000);
}

/// INFO latencystats: `latency_percentiles_usec_<command>:p50=…,p99=…` for every command with
/// calls, at the percentiles of `latency-tracking-info-percentiles`, in µs with 3 decimals.
pub fn info_section(server: &Server, out: &mut String) {
    let text = server.config.text(Param::LatencyTrackingInfoPercentiles);
    let percentiles = config::parse_percentiles(&text).unwrap_or_default();
    for (i, (name, _)) in server.registry.all().iter().enumerate() {
        let Some(merged) = server.latency.merged(i) else {
            continue;
        };
        let _ = write!(out, "latency_percentiles_usec_{name}:");
        for (j, &p) in percentiles.iter().enumerate() {
            let us = merged.value_at_percentile_ns(p) as f64 / 1000.0;
            let sep = if j + 1 < percentiles.len() { "," } else { "" };
            let _ = write!(out, "p{}={us:.3}{sep}", config::format_percentile(p));
        }
        out.push_str("\r\n");
    }
}

// ---------------------------------------------------------------------------------------------
// LATENCY

const ADMIN_CMD: u32 = ADMIN | NOSCRIPT | LOADING | STALE;

const fn cmd(
    name: &'static str,
    arity: i32,
    flags: u32,
    summary: &'static str,
    since: &'static str,
    handler: crate::table::Handler,
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags,
        KeySpec::NONE,
        Group::Server,
        summary,
        since,
        handler,
    )
}

/// The latency family's table.
pub static COMMANDS: &[CommandSpec] = &[CommandSpec {
    name: "latency",
    arity: -2,
    flags: 0,
    keys: KeySpec::NONE,
    group: Group::Server,
    summary: "A container for latency diagnostics commands",
    since: "2.8.13",
    handler: unreachable_container,
    subcommands: LATENCY_SUBCOMMANDS,
}];

#[rustfmt::skip]
static LATENCY_SUBCOMMANDS: &[CommandSpec] = &[
    cmd("doctor", 2, ADMIN_CMD, "Return a human readable latency analysis report.", "2.8.13", latency_doctor),
    cmd("graph", 3, ADMIN_CMD, "Return a latency graph for the event.", "2.8.13", latency_graph),
    cmd("help", 2, LOADING | STALE, "Show helpful text about the different subcommands.", "2.8.13", latency_help),
    cmd("histogram", -2, ADMIN_CMD, "Return the cumulative distribution of latencies of a subset of commands or all.", "7.0.0", latency_histogram),
    cmd("history", 3, ADMIN_CMD, "Return timestamp-latency samples for the event.", "2.8.13", latency_history),
    cmd("latest", 2, ADMIN_CMD, "Return the latest latency samples for all events.", "2.8.13", latency_latest),
    cmd("reset", -2, ADMIN_CMD, "Reset latency data for one or more events.", "2.8.13", latency_reset),
];

/// The framework runs a container's subcommands, never the container itself.
fn unreachable_container(_: &mut Cmd<'_>) -> Result<()> {
    Err(Error::Static("ERR internal error"))
}

/// LATENCY LATEST: `[event, time of the latest sample, its latency, all-time high]` per event.
fn latency_latest(c: &mut Cmd<'_>) -> Result<()> {
    let monitor = c.server.latency.monitor.lock();
    c.out.array(monitor.series.len());
    for ts in &monitor.series {
        let latest = ts.latest();
        c.out.array(4);
        c.out.bulk(ts.event.as_bytes());
        c.out.int(latest.time_s as i64);
        c.out.int(latest.latency_ms as i64);
        c.out.int(ts.max_ms as i64);
    }
    Ok(())
}

/// LATENCY HISTORY event: `[time, latency]` per sample, oldest first; empty for an event
/// never seen.
fn latency_history(c: &mut Cmd<'_>) -> Result<()> {
    let event = c.args.next_arg()?;
    let monitor = c.server.latency.monitor.lock();
    let samples: Vec<_> = monitor
        .get(event)
        .map(|ts| ts.history().collect())
        .unwrap_or_default();
    c.out.array(samples.len());
    for s in samples {
        c.out.array(2);
        c.out.int(s.time_s as i64);
        c.out.int(s.latency_ms as i64);
    }
    Ok(())
}

/// LATENCY RESET [event ...]: drop the named events' samples (all without names); replies
/// with the number of events dropped.
fn latency_reset(c: &mut Cmd<'_>) -> Result<()> {
    let events = c.args.rest();
    let mut monitor = c.server.latency.monitor.lock();
    let dropped = if events.is_empty() {
        monitor.reset(None)
    } else {
        events.iter().map(|e| monitor.reset(Some(e))).sum()
    };
    c.out.int(dropped as i64);
    Ok(())
}

/// LATENCY GRAPH event: an ASCII graph of the event's samples.
fn latency_graph(c: &mut Cmd<'_>) -> Result<()> {
    let event = c.args.next_arg()?;
    let monitor = c.server.latency.monitor.lock();
    let Some(ts) = monitor.get(event) else {
        return Err(Error::Owned(format!(
            "ERR No samples available for event '{}'",
            String::from_utf8_lossy(event)
        )));
    };
    let text = monitor::graph(ts, c.now_ms / 1000);
    c.out.verbatim("txt", text.as_bytes());
    Ok(())
}

/// LATENCY DOCTOR: a report on the recorded events, with advice.
fn latency_doctor(c: &mut Cmd<'_>) -> Result<()> {
    let cfg = &c.server.config;
    let doctor_cfg = monitor::DoctorConfig {
        threshold_ms: cfg.num(Param::LatencyMonitorThreshold),
        slowlog_slower_than_us: cfg.num(Param::SlowlogLogSlowerThan),
        slowlog_max_len: cfg.num(Param::SlowlogMaxLen),
    };
    let text = monitor::doctor(
        &c.server.latency.monitor.lock(),
        &doctor_cfg,
        c.now_ms / 1000,
    );
    c.out.verbatim("txt", text.as_bytes());
    Ok(())
}

/// LATENCY HISTOGRAM [command ...]: for each named command (a container names its
/// subcommands; `container|sub` one of them; unknown names are skipped) or, without names,
/// every command, that has calls: `{calls, histogram_usec: {µs: calls at most that long}}`.
fn latency_histogram(c: &mut Cmd<'_>) -> Result<()> {
    let registry = &c.server.registry;
    let mut indexes: Vec<usize> = Vec::new();
    let names = c.args.rest();
    if names.is_empty() {
        indexes.extend(0..registry.all().len());
    }
    for name in names {
        let mut parts = name.splitn(3, |&b| b == b'|');
        let (top, sub) = (parts.next().unwrap_or_default(), parts.next());
        if parts.next().is_some() {
            continue;
        }
        let Some((top_index, spec)) = registry.top(top) else {
            continue;
        };
        let base = registry.stat_base(top_index);
        match (sub, spec.subcommands.is_empty()) {
            (None, true) => indexes.push(base),
            (None, false) => indexes.extend(base..base + spec.subcommands.len()),
            (Some(s), false) => {
                if let Some(pos) = spec
                    .subcommands
                    .iter()
                    .position(|x| x.name.as_bytes().eq_ignore_ascii_case(s))
                {
                    indexes.push(base + pos);
                }
            }
            (Some(_), true) => {}
        }
    }
    let found: Vec<(usize, Merged)> = indexes
        .into_iter()
        .filter_map(|i| c.server.latency.merged(i).map(|m| (i, m)))
        .collect();
    c.out.map(found.len());
    for (i, merged) in found {
        c.out.bulk(registry.all()[i].0.as_bytes());
        c.out.map(2);
        c.out.bulk(b"calls");
        c.out.int(merged.total as i64);
        c.out.bulk(b"histogram_usec");
        let buckets = merged.cumulative_buckets();
        c.out.map(buckets.len());
        for (us, calls) in buckets {
            c.out.int(us as i64);
            c.out.int(calls as i64);
        }
    }
    Ok(())
}

/// LATENCY HELP
fn latency_help(c: &mut Cmd<'_>) -> Result<()> {
    const LINES: &[&str] = &[
        "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
        "    If no commands are specified then all histograms are replied.",
        "HELP",
        "    Prints this help.",
    ];
    crate::server::reply_help(c, LINES)
}

#[cfg(test)]
mod tests {
    use larder_resp::{Frame, Protocol};

    use super::*;
    use crate::testing::*;

    fn stat_index(h: &Harness, name: &str) -> usize {
        h.server
            .registry
            .all()
            .iter()
            .position(|(n, _)| n == name)
            .expect("command")
    }

    fn text(f: Frame) -> String {
        match f {
            Frame::Bulk(b) | Frame::Verbatim { text: b, .. } => {
                String::from_utf8(b).expect("utf-8")
            }
            other => panic!("not text: {other:?}"),
        }
    }

    fn latencystats(h: &mut Harness) -> Vec<String> {
        text(h.run(&["INFO", "latencystats"]))
            .lines()
            .skip(1)
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn every_call_is_recorded_and_resetstat_forgets() {
        let mut h = Harness::new();
        h.run(&["SET", "k", "v"]);
        h.run(&["SET", "k", "v"]);
        h.run(&["GET", "k"]);
        let set = stat_index(&h, "set");
        let merged = h.server.latency.merged(set).expect("set has calls");
        assert_eq!(merged.total, 2);
        let lines = latencystats(&mut h);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("latency_percentiles_usec_set:p50=")),
            "{lines:?}"
        );
        // Failed calls count; rejected ones (arity) never ran.
        h.run(&["CONFIG", "GET"]);
        h.run(&["LATENCY", "GRAPH", "nosuch"]);
        assert!(h
            .server
            .latency
            .merged(stat_index(&h, "latency|graph"))
            .is_some());
        assert!(h
            .server
            .latency
            .merged(stat_index(&h, "config|get"))
            .is_none());
        assert_eq!(h.run(&["CONFIG", "RESETSTAT"]), ok());
        // Only the RESETSTAT call itself, recorded after it ran.
        let lines = latencystats(&mut h);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("latency_percentiles_usec_config|resetstat:p50="));
    }

    #[test]
    fn info_uses_configured_percentiles() {
        let mut h = Harness::new();
        let get = stat_index(&h, "get");
        for us in [3, 5] {
            record(&h.server, 0, get, us);
        }
        record(&h.server, 1, get, 7);
        assert_eq!(
            h.run(&[
                "CONFIG",
                "SET",
                "latency-tracking-info-percentiles",
                "0 50 99.99999999"
            ]),
            ok()
        );
        let lines = latencystats(&mut h);
        assert!(
            lines.contains(&"latency_percentiles_usec_get:p0=2.992,p50=5.023,p100=7.007".into()),
            "{lines:?}"
        );
        h.run(&["CONFIG", "SET", "latency-tracking-info-percentiles", ""]);
        assert!(latencystats(&mut h).contains(&"latency_percentiles_usec_get:".into()));
    }

    #[test]
    fn tracking_off_records_nothing() {
        let mut h = Harness::new();
        assert_eq!(h.run(&["CONFIG", "SET", "latency-tracking", "no"]), ok());
        h.run(&["PING"]);
        assert!(h.server.latency.merged(stat_index(&h, "ping")).is_none());
        h.run(&["CONFIG", "SET", "latency-tracking", "yes"]);
        h.run(&["PING"]);
        assert!(h.server.latency.merged(stat_index(&h, "ping")).is_some());
    }

    #[test]
    fn config_parameters() {
        let mut h = Harness::new();
        let get = |h: &mut Harness, name: &str| match h.run(&["CONFIG", "GET", name]) {
            Frame::Array(v) => v[1].clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(get(&mut h, "latency-tracking"), bulk("yes"));
        assert_eq!(
            get(&mut h, "latency-tracking-info-percentiles"),
            bulk("50 99 99.9")
        );
        assert_eq!(get(&mut h, "latency-monitor-threshold"), bulk("0"));
        let prefix = "ERR CONFIG SET failed (possibly related to argument \
                      'latency-tracking-info-percentiles') - ";
        for (value, why) in [
            (
                "50 abc",
                "Invalid latency-tracking-info-percentiles parameters",
            ),
            (
                "50  99",
                "Invalid latency-tracking-info-percentiles parameters",
            ),
            (" ", "Invalid latency-tracking-info-percentiles parameters"),
            (
                "nan",
                "Invalid latency-tracking-info-percentiles parameters",
            ),
            (
                "101",
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
            ),
            (
                "-1",
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
            ),
            (
                "inf",
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
            ),
        ] {
            assert_eq!(
                h.run(&["CONFIG", "SET", "latency-tracking-info-percentiles", value]),
                err(&format!("{prefix}{why}")),
                "{value:?}"
            );
        }
        assert_eq!(
            get(&mut h, "latency-tracking-info-percentiles"),
            bulk("50 99 99.9")
        );
        h.run(&[
            "CONFIG",
            "SET",
            "latency-tracking-info-percentiles",
            "0 100 99.99999 1e1 0x10 50.0 5.",
        ]);
        assert_eq!(
            get(&mut h, "latency-tracking-info-percentiles"),
            bulk("0 100 99.99999 10 16 50 5")
        );
        assert_eq!(
            h.run(&["CONFIG", "SET", "latency-monitor-threshold", "-1"]),
            err("ERR CONFIG SET failed (possibly related to argument 'latency-monitor-threshold') - argument must be between 0 and 9223372036854775807 inclusive")
        );
    }

    #[test]
    fn histogram_reply_shapes() {
        let mut h = Harness::new();
        let set = stat_index(&h, "set");
        record(&h.server, 0, set, 3);
        record(&h.server, 1, set, 5);
        record(&h.server, 0, stat_index(&h, "config|get"), 32);
        let set_entry = || {
            Frame::Map(vec![
                (bulk("calls"), int(2)),
                (
                    bulk("histogram_usec"),
                    Frame::Map(vec![(int(4), int(1)), (int(8), int(2))]),
                ),
            ])
        };
        h.run(&["HELLO", "3"]);
        assert_eq!(h.out.proto, Protocol::Resp3);
        assert_eq!(
            h.run(&["LATENCY", "HISTOGRAM", "SET", "nosuch", "a|b|c", "get"]),
            Frame::Map(vec![(bulk("set"), set_entry())])
        );
        let config_get = Frame::Map(vec![
            (bulk("calls"), int(1)),
            (bulk("histogram_usec"), Frame::Map(vec![(int(33), int(1))])),
        ]);
        for name in ["config", "CONFIG|GET"] {
            assert_eq!(
                h.run(&["LATENCY", "HISTOGRAM", name]),
                Frame::Map(vec![(bulk("config|get"), config_get.clone())]),
                "{name}"
            );
        }
        // Without names: every command with calls (the LATENCY HISTOGRAM calls included).
        let Frame::Map(all) = h.run(&["LATENCY", "HISTOGRAM"]) else {
            panic!("map");
        };
        let names: Vec<Frame> = all.into_iter().map(|(k, _)| k).collect();
        assert!(names.contains(&bulk("set")) && names.contains(&bulk("latency|histogram")));
        // RESP2: maps are flat arrays.
        let mut h2 = Harness::connect(std::sync::Arc::clone(&h.server));
        assert_eq!(
            h2.run(&["LATENCY", "HISTOGRAM", "set"]),
            Frame::Array(vec![
                bulk("set"),
                Frame::Array(vec![
                    bulk("calls"),
                    int(2),
                    bulk("histogram_usec"),
                    Frame::Array(vec![int(4), int(1), int(8), int(2)]),
                ]),
            ])
        );
    }

    #[test]
    fn monitor_off_by_default() {
        let mut h = Harness::new();
        record(&h.server, 0, stat_index(&h, "get"), 50_000);
        assert_eq!(h.run(&["LATENCY", "LATEST"]), Frame::Array(vec![]));
        assert_eq!(
            h.run(&["LATENCY", "HISTORY", "command"]),
            Frame::Array(vec![])
        );
        assert_eq!(
            h.run(&["LATENCY", "GRAPH", "command"]),
            err("ERR No samples available for event 'command'")
        );
        let report = text(h.run(&["LATENCY", "DOCTOR"]));
        assert!(
            report.starts_with("I'm sorry, Dave, I can't do that."),
            "{report}"
        );
        h.run(&["CONFIG", "SET", "latency-monitor-threshold", "100"]);
        let report = text(h.run(&["LATENCY", "DOCTOR"]));
        assert!(
            report.starts_with("Dave, no latency spike was observed"),
            "{report}"
        );
    }

    #[test]
    fn monitor_events() {
        let mut h = Harness::new();
        h.run(&["CONFIG", "SET", "latency-monitor-threshold", "10"]);
        // Below the threshold: nothing.
        record(&h.server, 0, stat_index(&h, "keys"), 9_999);
        assert_eq!(h.run(&["LATENCY", "LATEST"]), Frame::Array(vec![]));
        record(&h.server, 0, stat_index(&h, "keys"), 25_000);
        record(&h.server, 0, stat_index(&h, "keys"), 12_000);
        // GET is FAST: its slow calls are `fast-command` events.
        record(&h.server, 0, stat_index(&h, "get"), 10_000);
        let Frame::Array(latest) = h.run(&["LATENCY", "LATEST"]) else {
            panic!("array");
        };
        assert_eq!(latest.len(), 2);
        let Frame::Array(first) = &latest[0] else {
            panic!("array");
        };
        assert_eq!(first[0], bulk("command"));
        // Both calls fell in the same second: one sample, the worse of the two.
        assert_eq!((&first[2], &first[3]), (&int(25), &int(25)));
        let Frame::Array(history) = h.run(&["LATENCY", "HISTORY", "fast-command"]) else {
            panic!("array");
        };
        assert_eq!(history.len(), 1);
        let Frame::Array(sample) = &history[0] else {
            panic!("array");
        };
        assert_eq!(sample[1], int(10));
        let graph = text(h.run(&["LATENCY", "GRAPH", "command"]));
        assert!(
            graph.starts_with("command - high 25 ms, low 25 ms (all time high 25 ms)\n"),
            "{graph}"
        );
        let report = text(h.run(&["LATENCY", "DOCTOR"]));
        assert!(report.contains("1. command: 1 latency spikes (average 25ms, mean deviation 0ms, period 1.00 sec). Worst all time event 25ms."), "{report}");
        assert!(
            report.contains("2. fast-command: 1 latency spikes"),
            "{report}"
        );
        assert!(report.contains("Check your Slow Log"), "{report}");
        assert!(report.contains("intrinsic latency"), "{report}");
        assert_eq!(
            h.run(&["LATENCY", "RESET", "FAST-COMMAND", "nosuch", "fast-command"]),
            int(1)
        );
        assert_eq!(h.run(&["LATENCY", "RESET"]), int(1));
        assert_eq!(h.run(&["LATENCY", "LATEST"]), Frame::Array(vec![]));
    }

    #[test]
    fn help_and_errors() {
        let mut h = Harness::new();
        let Frame::Array(lines) = h.run(&["LATENCY", "HELP"]) else {
            panic!("array");
        };
        assert_eq!(lines.len(), 17);
        assert_eq!(
            lines[0],
            Frame::Simple(
                "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into()
            )
        );
        assert_eq!(
            h.run(&["LATENCY", "foo"]),
            err("ERR unknown subcommand 'foo'. Try LATENCY HELP.")
        );
        assert_eq!(
            h.run(&["LATENCY"]),
            err("ERR wrong number of arguments for 'latency' command")
        );
        assert_eq!(
            h.run(&["LATENCY", "HISTORY"]),
            err("ERR wrong number of arguments for 'latency|history' command")
        );
    }

    #[test]
    fn every_command_is_exercised() {
        // Table guardrail: every subcommand has a test above.
        let tested = [
            "doctor",
            "graph",
            "help",
            "histogram",
            "history",
            "latest",
            "reset",
        ];
        let listed: Vec<&str> = LATENCY_SUBCOMMANDS.iter().map(|s| s.name).collect();
        assert_eq!(listed, tested);
    }
}
