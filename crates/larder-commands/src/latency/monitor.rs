//! The latency monitor: for each event (`command`, `fast-command`), the latest 160 one-second
//! samples of latencies at or above `latency-monitor-threshold`, as Redis's `latency.c` keeps
//! them, and the texts LATENCY GRAPH and LATENCY DOCTOR make of them.

use std::fmt::Write as _;

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
pub const HISTORY_LEN: usize = 160;
/// Width of LATENCY GRAPH (Redis's `LATENCY_GRAPH_COLS`).
const GRAPH_COLUMNS: usize = 80;
/// Height of LATENCY GRAPH's sparkline, in rows of characters.
const GRAPH_ROWS: usize = 4;

/// The worst latency of one second.
#[derive(Clone, Copy, Default)]
pub struct Sample {
    /// Unix seconds; 0 marks an unused place.
    pub time_s: u64,
    pub latency_ms: u64,
}

/// One event's samples: a ring, oldest first from `next`.
pub struct Series {
    pub event: &'static str,
    samples: [Sample; HISTORY_LEN],
    next: usize,
    /// All-time high, kept when old samples leave the ring.
    pub max_ms: u64,
}

impl Series {
    fn new(event: &'static str) -> Series {
        Series {
            event,
            samples: [Sample::default(); HISTORY_LEN],
            next: 0,
            max_ms: 0,
        }
    }

    /// The most recent sample.
    pub fn latest(&self) -> Sample {
        self.samples[(self.next + HISTORY_LEN - 1) % HISTORY_LEN]
    }

    /// The samples, oldest first.
    pub fn history(&self) -> impl Iterator<Item = Sample> + '_ {
        (0..HISTORY_LEN)
            .map(|j| self.samples[(self.next + j) % HISTORY_LEN])
            .filter(|s| s.time_s != 0)
    }
}

/// Every event's series, in the order the events first happened.
#[derive(Default)]
pub struct Monitor {
    pub series: Vec<Series>,
}

impl Monitor {
    /// Record `latency_ms` for `event` at `now_s` (Redis's `latencyAddSample`): a sample in
    /// the same second as the previous one only raises it.
    pub fn add_sample(&mut self, event: &'static str, latency_ms: u64, now_s: u64) {
        let pos = match self.series.iter().position(|s| s.event == event) {
            Some(p) => p,
            None => {
                self.series.push(Series::new(event));
                self.series.len() - 1
            }
        };
        let ts = &mut self.series[pos];
        ts.max_ms = ts.max_ms.max(latency_ms);
        let prev = (ts.next + HISTORY_LEN - 1) % HISTORY_LEN;
        if ts.samples[prev].time_s == now_s {
            let s = &mut ts.samples[prev];
            s.latency_ms = s.latency_ms.max(latency_ms);
            return;
        }
        ts.samples[ts.next] = Sample {
            time_s: now_s,
            latency_ms,
        };
        ts.next = (ts.next + 1) % HISTORY_LEN;
    }

    /// The series of an event (names compare exactly, as Redis's event dictionary does).
    pub fn get(&self, event: &[u8]) -> Option<&Series> {
        self.series.iter().find(|s| s.event.as_bytes() == event)
    }

    /// Drop the series of `event` (any case), or of every event for `None`; how many went.
    pub fn reset(&mut self, event: Option<&[u8]>) -> usize {
        let before = self.series.len();
        self.series
            .retain(|s| event.is_some_and(|e| !s.event.as_bytes().eq_ignore_ascii_case(e)));
        before - self.series.len()
    }
}

/// LATENCY GRAPH's text: a title line, a rule, and Redis's sparkline of the samples (oldest
/// first, 80 per band, 4 rows high, each labelled with how long ago it happened).
pub fn graph(ts: &Series, now_s: u64) -> String {
    let samples: Vec<(f64, String)> = ts
        .history()
        .map(|s| {
            (
                s.latency_ms as f64,
                age_label(now_s as i64 - s.time_s as i64),
            )
        })
        .collect();
    let values = samples.iter().map(|s| s.0);
    let low = values.clone().fold(f64::INFINITY, f64::min);
    let high = values.fold(f64::NEG_INFINITY, f64::max);
    let (low, high) = if samples.is_empty() {
        (0.0, 0.0)
    } else {
        (low, high)
    };
    let mut out = format!(
        "{} - high {} ms, low {} ms (all time high {} ms)\n{}\n",
        ts.event,
        high as u64,
        low as u64,
        ts.max_ms,
        "-".repeat(GRAPH_COLUMNS)
    );
    for (i, band) in samples.chunks(GRAPH_COLUMNS).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        sparkline_band(&mut out, band, low, high);
    }
    out
}

/// "12s", "5m", "3h", "2d": how long ago a sample was taken.
fn age_label(elapsed_s: i64) -> String {
    match elapsed_s {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// One band of Redis's filled sparkline (`sparklineRenderRange` with `SPARKLINE_FILL`): each
/// column rises in 12 steps over 4 rows of `_`, `o`, `#` topped on `|`, scaled between the
/// whole sequence's `low` and `high`; then a blank row and the labels written downwards.
fn sparkline_band(out: &mut String, band: &[(f64, String)], low: f64, high: f64) {
    const FILL: [u8; 3] = [b'_', b'o', b'#'];
    let steps = (FILL.len() * GRAPH_ROWS) as i64;
    let range = if high - low == 0.0 { 1.0 } else { high - low };
    let step_of = |v: f64| {
        // As Redis: `(int)(relval*steps)` divided by the range, truncated.
        let step = (((v - low) * steps as f64) as i64 as f64 / range) as i64;
        step.clamp(0, steps - 1)
    };
    let mut row = 0;
    loop {
        let mut line = vec![b' '; band.len()];
        let mut any = false;
        if row < GRAPH_ROWS {
            any = true;
            for (c, (v, _)) in line.iter_mut().zip(band) {
                let index = step_of(*v) - ((GRAPH_ROWS - row - 1) * FILL.len()) as i64;
                if let Ok(i) = usize::try_from(index) {
                    *c = FILL.get(i).copied().unwrap_or(b'|');
                }
            }
        } else if row == GRAPH_ROWS {
            // The margin between the graph and its labels.
            any = true;
        } else {
            let at = row - GRAPH_ROWS - 1;
            for (c, (_, label)) in line.iter_mut().zip(band) {
                if let Some(&ch) = label.as_bytes().get(at) {
                    *c = ch;
                    any = true;
                }
            }
        }
        if !any {
            break;
        }
        out.push_str(&String::from_utf8_lossy(&line));
        out.push('\n');
        row += 1;
    }
}

/// What DOCTOR needs from the configuration.
pub struct DoctorConfig {
    pub threshold_ms: i64,
    pub slowlog_slower_than_us: i64,
    pub slowlog_max_len: i64,
}

/// LATENCY DOCTOR's report: each event's spikes (count, average, mean deviation, period,
/// worst), then advice for the events seen, in Redis's words (the advice that concerns
/// forks, disks, swapping or huge pages is left out: larder has none of those to blame).
pub fn doctor(monitor: &Monitor, cfg: &DoctorConfig, now_s: u64) -> String {
    if monitor.series.is_empty() && cfg.threshold_ms == 0 {
        return "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis \
                instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" \
                in order to enable it. If we weren't in a deep space mission I'd suggest to take \
                a look at https://redis.io/topics/latency-monitor.\n"
            .to_string();
    }
    let mut report = String::new();
    let (mut slowlog_enable, mut slowlog_tune, mut slow_commands, mut scheduler) =
        (false, false, false, false);
    for (i, ts) in monitor.series.iter().enumerate() {
        if i == 0 {
            report.push_str(
                "Dave, I have observed latency spikes in this Redis instance. You don't mind \
                 talking about it, do you Dave?\n\n",
            );
        }
        let stats = EventStats::of(ts, now_s);
        let _ = write!(
            report,
            "{}. {}: {} latency spikes (average {}ms, mean deviation {}ms, period {:.2} sec). \
             Worst all time event {}ms.",
            i + 1,
            ts.event,
            stats.samples,
            stats.avg_ms,
            stats.mad_ms,
            stats.period_s as f64 / stats.samples.max(1) as f64,
            ts.max_ms
        );
        match ts.event {
            "command" => {
                if cfg.slowlog_slower_than_us < 0 || cfg.slowlog_max_len == 0 {
                    slowlog_enable = true;
                } else if cfg.slowlog_slower_than_us / 1000 > cfg.threshold_ms {
                    slowlog_tune = true;
                }
                slow_commands = true;
            }
            "fast-command" => scheduler = true,
            _ => {}
        }
        report.push('\n');
    }
    let advised = slowlog_enable || slowlog_tune || slow_commands || scheduler;
    if monitor.series.is_empty() {
        report.push_str(
            "Dave, no latency spike was observed during the lifetime of this Redis instance, not \
             in the slightest bit. I honestly think you ought to sleep tonight.\n",
        );
        return report;
    }
    if !advised {
        report.push_str(
            "\nWhile there are latency events logged, I'm not able to suggest any easy fix. \
             Please use the Redis community to get some help, providing this report in your \
             help request.\n",
        );
        return report;
    }
    report.push_str("\nI have a few advices for you:\n\n");
    let suggested_us = cfg.threshold_ms.max(0) as u64 * 1000;
    if slowlog_enable {
        let _ = writeln!(
            report,
            "- There are latency issues with potentially slow commands you are using. Try to \
             enable the Slow Log Redis feature using the command 'CONFIG SET \
             slowlog-log-slower-than {suggested_us}'. If the Slow log is disabled Redis is not \
             able to log slow commands execution for you."
        );
    }
    if slowlog_tune {
        let _ = writeln!(
            report,
            "- Your current Slow Log configuration only logs events that are slower than your \
             configured latency monitor threshold. Please use 'CONFIG SET \
             slowlog-log-slower-than {suggested_us}'."
        );
    }
    if slow_commands {
        report.push_str(
            "- Check your Slow Log to understand what are the commands you are running which \
             are too slow to execute. Please check https://redis.io/commands/slowlog for more \
             information.\n",
        );
    }
    if scheduler {
        report.push_str(
            "- The system is slow to execute Redis code paths not containing system calls. This \
             usually means the system does not provide Redis CPU time to run for long periods. \
             You should try to:\n  1) Lower the system load.\n  2) Use a computer / VM just for \
             Redis if you are running other software in the same system.\n  3) Check if you \
             have a \"noisy neighbour\" problem.\n  4) Check with 'redis-cli --intrinsic-latency \
             100' what is the intrinsic latency in your system.\n",
        );
    }
    if slow_commands {
        report.push_str(
            "- Deleting, expiring or evicting (because of maxmemory policy) large objects is a \
             blocking operation. If you have very large objects that are often deleted, \
             expired, or evicted, try to fragment those objects into multiple smaller \
             objects.\n",
        );
    }
    report
}

/// Redis's `analyzeLatencyForEvent`: integer average and mean absolute deviation of the
/// samples, and the seconds since the oldest (at least 1).
struct EventStats {
    samples: u64,
    avg_ms: u64,
    mad_ms: u64,
    period_s: u64,
}

impl EventStats {
    fn of(ts: &Series, now_s: u64) -> EventStats {
        let samples: Vec<Sample> = ts.history().collect();
        let n = samples.len() as u64;
        if n == 0 {
            return EventStats {
                samples: 0,
                avg_ms: 0,
                mad_ms: 0,
                period_s: 0,
            };
        }
        let avg_ms = samples.iter().map(|s| s.latency_ms).sum::<u64>() / n;
        let mad_ms = samples
            .iter()
            .map(|s| s.latency_ms.abs_diff(avg_ms))
            .sum::<u64>()
            / n;
        let oldest = samples.iter().map(|s| s.time_s).min().unwrap_or(now_s);
        EventStats {
            samples: n,
            avg_ms,
            mad_ms,
            period_s: now_s.saturating_sub(oldest).max(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_merge_per_second_and_wrap() {
        let mut m = Monitor::default();
        m.add_sample("command", 5, 1000);
        m.add_sample("command", 3, 1000);
        m.add_sample("command", 9, 1000);
        let ts = m.get(b"command").expect("series");
        assert_eq!(ts.history().count(), 1);
        assert_eq!((ts.latest().time_s, ts.latest().latency_ms), (1000, 9));
        for t in 1001..1001 + HISTORY_LEN as u64 {
            m.add_sample("command", t - 1000, t);
        }
        let ts = m.get(b"command").expect("series");
        let history: Vec<u64> = ts.history().map(|s| s.time_s).collect();
        assert_eq!(history.len(), HISTORY_LEN);
        assert_eq!(history[0], 1001, "the oldest sample left the ring");
        assert_eq!(*history.last().expect("last"), 1000 + HISTORY_LEN as u64);
        assert_eq!(ts.max_ms, 160);
        assert!(m.get(b"COMMAND").is_none());
        assert_eq!(m.reset(Some(b"COMMAND")), 1);
        assert_eq!(m.reset(None), 0);
    }

    /// Byte for byte what redis-server 7.0 draws for three samples.
    #[test]
    fn graph_is_redis_sparkline() {
        let mut m = Monitor::default();
        m.add_sample("command", 10, 100);
        m.add_sample("command", 20, 101);
        m.add_sample("command", 40, 102);
        let text = graph(m.get(b"command").expect("series"), 130);
        let want = format!(
            "command - high 40 ms, low 10 ms (all time high 40 ms)\n{}\n  #\n  |\n o|\n_||\n   \n\
             322\n098\nsss\n",
            "-".repeat(80)
        );
        assert_eq!(text, want);
    }
}
