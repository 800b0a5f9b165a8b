//! The Prometheus text exposition format (version 0.0.4): families with one `# HELP` and one
//! `# TYPE` line each, their samples together, label values escaped.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// A family's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Summary,
    Histogram,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Summary => "summary",
            Kind::Histogram => "histogram",
        }
    }
}

struct Family {
    help: String,
    kind: Kind,
    /// Sample lines, complete but for the trailing newline.
    samples: Vec<String>,
}

/// Families collected in any order and written sorted by name (as Prometheus's Go client
/// writes them), so every family's samples are together.
#[derive(Default)]
pub struct Exposition {
    families: BTreeMap<String, Family>,
}

impl Exposition {
    /// The family `name`, declared with `help` and `kind` the first time it is named.
    fn family(&mut self, name: &str, help: &str, kind: Kind) -> &mut Family {
        self.families
            .entry(name.to_string())
            .or_insert_with(|| Family {
                help: help.to_string(),
                kind,
                samples: Vec::new(),
            })
    }

    /// One sample of a counter or gauge.
    pub fn sample(
        &mut self,
        name: &str,
        help: &str,
        kind: Kind,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        let line = sample_line(name, labels, value);
        self.family(name, help, kind).samples.push(line);
    }

    /// A summary's quantiles, sum and count.
    pub fn summary(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        quantiles: &[(f64, f64)],
        sum: f64,
        count: u64,
    ) {
        let mut lines = Vec::with_capacity(quantiles.len() + 2);
        for &(q, v) in quantiles {
            let q = number(q);
            let mut l = labels.to_vec();
            l.push(("quantile", &q));
            lines.push(sample_line(name, &l, v));
        }
        lines.push(sample_line(&format!("{name}_sum"), labels, sum));
        lines.push(sample_line(&format!("{name}_count"), labels, count as f64));
        self.family(name, help, Kind::Summary).samples.extend(lines);
    }

    /// A histogram: `buckets` are (upper bound, observations at most that bound), cumulative
    /// and ascending; the `+Inf` bucket is `count`.
    pub fn histogram(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        buckets: &[(f64, u64)],
        sum: f64,
        count: u64,
    ) {
        let bucket = format!("{name}_bucket");
        let mut lines = Vec::with_capacity(buckets.len() + 3);
        for &(le, n) in buckets {
            let le = number(le);
            let mut l = labels.to_vec();
            l.push(("le", &le));
            lines.push(sample_line(&bucket, &l, n as f64));
        }
        let mut l = labels.to_vec();
        l.push(("le", "+Inf"));
        lines.push(sample_line(&bucket, &l, count as f64));
        lines.push(sample_line(&format!("{name}_sum"), labels, sum));
        lines.push(sample_line(&format!("{name}_count"), labels, count as f64));
        self.family(name, help, Kind::Histogram)
            .samples
            .extend(lines);
    }

    /// The text of every family.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(64 * 1024);
        for (name, f) in &self.families {
            let _ = writeln!(out, "# HELP {name} {}", escape_help(&f.help));
            let _ = writeln!(out, "# TYPE {name} {}", f.kind.name());
            for s in &f.samples {
                out.push_str(s);
                out.push('\n');
            }
        }
        out
    }
}

fn sample_line(name: &str, labels: &[(&str, &str)], value: f64) -> String {
    let mut line = String::with_capacity(64);
    line.push_str(name);
    if !labels.is_empty() {
        line.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                line.push(',');
            }
            let _ = write!(line, "{k}=\"{}\"", escape_label(v));
        }
        line.push('}');
    }
    line.push(' ');
    line.push_str(&number(value));
    line
}

/// A value as the format writes it: `+Inf`, `-Inf`, `NaN`, or the shortest decimal that
/// reads back as the same float.
pub fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// A label value: backslash, double quote and line feed escaped.
fn escape_label(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text: backslash and line feed escaped.
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_grouped_sorted_and_escaped() {
        let mut e = Exposition::default();
        e.sample(
            "b_total",
            "B.",
            Kind::Counter,
            &[("cmd", "a\"b\\c\nd")],
            3.0,
        );
        e.sample("a", "A \\ help\nline", Kind::Gauge, &[], 0.5);
        e.sample("b_total", "B.", Kind::Counter, &[("cmd", "x")], 1e21);
        e.histogram(
            "h",
            "H.",
            &[("route", "kv")],
            &[(0.001, 1), (0.5, 2)],
            0.25,
            3,
        );
        e.summary("s", "S.", &[], &[(50.0, 1.5), (99.9, f64::NAN)], 10.0, 4);
        let text = e.render();
        assert_eq!(
            text,
            "# HELP a A \\\\ help\\nline\n# TYPE a gauge\na 0.5\n\
             # HELP b_total B.\n# TYPE b_total counter\n\
             b_total{cmd=\"a\\\"b\\\\c\\nd\"} 3\nb_total{cmd=\"x\"} 1000000000000000000000\n\
             # HELP h H.\n# TYPE h histogram\n\
             h_bucket{route=\"kv\",le=\"0.001\"} 1\nh_bucket{route=\"kv\",le=\"0.5\"} 2\n\
             h_bucket{route=\"kv\",le=\"+Inf\"} 3\nh_sum{route=\"kv\"} 0.25\n\
             h_count{route=\"kv\"} 3\n\
             # HELP s S.\n# TYPE s summary\ns{quantile=\"50\"} 1.5\ns{quantile=\"99.9\"} NaN\n\
             s_sum 10\ns_count 4\n"
        );
    }
}
