//! The page of `ember report`: one self-contained HTML file (inline SVG
//! and CSS, no script, nothing fetched) from what a run wrote with
//! `--stats-json` and/or `--trace`: the phase timeline, each worker's busy
//! and idle time, the utilization over time, the decisions and their
//! reasons, predicted against actual keys, chunk reads against mapping,
//! and the top time sinks. With only stats, the charts that need a trace
//! say so.
//!
//! ```
//! use std::path::Path;
//! use ember_cli::report::Run;
//!
//! let mut run = Run::default();
//! run.add(Path::new("stats.json"), br#"{"plan": {}, "total_secs": 0.5}"#)?;
//! assert!(run.has_stats());
//! assert!(run.html().starts_with("<!DOCTYPE html>"));
//! let e = run.add(Path::new("bad.json"), b"{\"plan\": 1,").unwrap_err();
//! assert_eq!(
//!     format!("{e:#}"),
//!     "'bad.json' is not JSON: EOF while parsing a value at line 1 column 11"
//! );
//! # Ok::<(), anyhow::Error>(())
//! ```

mod svg;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::Value;

/// One span of a trace, times in microseconds from the first span.
#[derive(Debug, Clone)]
pub(super) struct Span {
    track: String,
    name: String,
    category: String,
    ts: f64,
    dur: f64,
    index: Option<u64>,
    bytes: Option<u64>,
    pairs: Option<u64>,
}

impl Span {
    /// The tooltip: what, which, how much, how long.
    fn describe(&self) -> String {
        let mut s = self.name.clone();
        if let Some(i) = self.index {
            let _ = write!(s, " #{i}");
        }
        if let Some(b) = self.bytes {
            let _ = write!(s, ", {}", bytes(b as f64));
        }
        if let Some(p) = self.pairs {
            let _ = write!(s, ", {p} pairs");
        }
        let _ = write!(s, ", {:.3} ms", self.dur / 1e3);
        s
    }

    fn end(&self) -> f64 {
        self.ts + self.dur
    }
}

/// What a report is made from: a run's stats and/or its trace.
#[derive(Debug, Default)]
pub struct Run {
    stats: Option<Value>,
    spans: Vec<Span>,
}

impl Run {
    /// Reads each file as a stats file or a trace, whichever it is.
    pub fn read(files: &[PathBuf]) -> Result<Run> {
        let mut run = Run::default();
        for path in files {
            let text =
                std::fs::read(path).with_context(|| format!("cannot read '{}'", path.display()))?;
            run.add(path, &text)?;
        }
        Ok(run)
    }

    /// Adds the stats file or trace `text`, read from `path`; an error
    /// names `path` and, for text that is not JSON, the line and column.
    pub fn add(&mut self, path: &Path, text: &[u8]) -> Result<()> {
        let v: Value = serde_json::from_slice(text)
            .with_context(|| format!("'{}' is not JSON", path.display()))?;
        if v.get("traceEvents").is_some() {
            if !self.spans.is_empty() {
                bail!("'{}': only one trace per report", path.display());
            }
            self.spans = spans(&v, path)?;
        } else if v.get("plan").is_some() && v.get("total_secs").is_some() {
            if self.stats.is_some() {
                bail!("'{}': only one stats file per report", path.display());
            }
            self.stats = Some(v);
        } else {
            bail!(
                "'{}' is neither a stats file (--stats-json) nor a trace (--trace)",
                path.display()
            );
        }
        Ok(())
    }

    /// The number of spans of the trace (0 without one).
    pub fn span_count(&self) -> usize {
        self.spans.len()
    }

    /// True when the run's stats were added.
    pub fn has_stats(&self) -> bool {
        self.stats.is_some()
    }

    /// The stats as read, if added.
    pub fn stats(&self) -> Option<&Value> {
        self.stats.as_ref()
    }

    /// The page.
    pub fn html(&self) -> String {
        render(self)
    }

    /// The stats field `name` as a number (0 if absent).
    fn num(&self, name: &str) -> f64 {
        let v = self.stats.as_ref().and_then(|s| s.get(name));
        v.and_then(Value::as_f64).unwrap_or(0.0)
    }

    /// The end of the last span, in microseconds.
    fn end(&self) -> f64 {
        self.spans.iter().map(Span::end).fold(0.0, f64::max)
    }
}

/// The complete (`"ph": "X"`) events of a Chrome trace, with the names its
/// metadata events give their tracks, shifted to start at 0.
fn spans(v: &Value, path: &Path) -> Result<Vec<Span>> {
    let events = v["traceEvents"]
        .as_array()
        .with_context(|| format!("'{}': traceEvents is not a list", path.display()))?;
    let mut names = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let name = e["args"]["name"].as_str().unwrap_or("?");
        names.insert(e["tid"].as_u64().unwrap_or(0), name.to_owned());
    }
    let mut spans = Vec::new();
    for (i, e) in events.iter().enumerate().filter(|(_, e)| e["ph"] == "X") {
        let (Some(ts), Some(dur)) = (e["ts"].as_f64(), e["dur"].as_f64()) else {
            bail!("'{}': event {i} has no ts or dur", path.display());
        };
        let tid = e["tid"].as_u64().unwrap_or(0);
        spans.push(Span {
            track: names
                .get(&tid)
                .cloned()
                .unwrap_or_else(|| format!("thread {tid}")),
            name: e["name"].as_str().unwrap_or("?").to_owned(),
            category: e["cat"].as_str().unwrap_or("").to_owned(),
            ts,
            dur,
            index: e["args"]["index"].as_u64(),
            bytes: e["args"]["bytes"].as_u64(),
            pairs: e["args"]["pairs"].as_u64(),
        });
    }
    let origin = spans.iter().map(|s| s.ts).fold(f64::INFINITY, f64::min);
    for s in &mut spans {
        s.ts -= origin;
    }
    Ok(spans)
}

/// The whole page.
fn render(run: &Run) -> String {
    let mut page = String::from(HEAD);
    let _ = write!(
        page,
        "<h1>ember run report</h1><p class=\"summary\">{}</p>",
        summary(run)
    );
    let sections: [(&str, &str, String); 7] = [
        ("plan", "Decisions", plan(run)),
        ("phases", "Phases", phases(run)),
        ("workers", "Workers over time", workers(run)),
        ("utilization", "CPU utilization over time", utilization(run)),
        ("keys", "Predicted and actual keys", keys(run)),
        ("chunks", "Chunk reads and mapping", chunks(run)),
        ("sinks", "Top time sinks", sinks(run)),
    ];
    for (id, title, body) in sections {
        let _ = write!(
            page,
            "<section id=\"{id}\"><h2>{title}</h2>{body}</section>"
        );
    }
    page.push_str("</body></html>\n");
    page
}

const HEAD: &str = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>ember run report</title><style>\
body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}\
h2{font-size:1.1em;margin-top:28px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eee}\
.label{font-size:11px}.legend span{margin-right:14px;font-size:13px}.tick{font-size:10px;fill:#555}.none{color:#777;font-style:italic}\
</style></head><body>";

fn summary(run: &Run) -> String {
    match &run.stats {
        Some(_) => format!(
            "{} in {} part(s), {} splits, {} threads: {:.3} s; {} pairs emitted, {} distinct keys, {} output.",
            bytes(run.num("input_bytes")),
            run.num("input_parts"),
            run.num("splits"),
            run.num("threads"),
            run.num("total_secs"),
            run.num("pairs_emitted"),
            run.num("distinct_keys"),
            run.num("output_pairs"),
        ),
        None => format!("A trace of {} spans over {:.3} s (no stats given).", run.spans.len(), run.end() / 1e6),
    }
}

/// A paragraph saying what a chart needs.
fn none(what: &str) -> String {
    format!("<p class=\"none\">{}</p>", escape(what))
}

fn plan(run: &Run) -> String {
    let Some(stats) = run.stats.as_ref() else {
        return none("Needs the run's stats (--stats-json).");
    };
    let plan = &stats["plan"];
    let mut t = String::from("<table>");
    for (what, key, why) in [
        ("container", "container", Some("container_reason")),
        ("mode", "mode", Some("mode_reason")),
        ("aggregation", "aggregation", Some("aggregation_reason")),
        ("ingest", "ingest", None),
        ("partitions per worker", "partitions", None),
        ("merge", "merge", None),
    ] {
        let reason = why.map_or(String::new(), |w| reason(&plan[w]));
        let _ = write!(
            t,
            "<tr><th>{what}</th><td>{}</td><td>{}</td></tr>",
            escape(&plain(&plan[key])),
            escape(&reason)
        );
    }
    let _ = write!(
        t,
        "<tr><th>memory</th><td>{}</td><td>{}</td></tr></table>",
        escape(&memory(&stats["memory"])),
        escape(&spilled(&stats["memory"]))
    );
    t
}

/// The budget and the peak the containers held, as `--stats` prints them.
fn memory(m: &Value) -> String {
    let mib = |k: &str| m[k].as_f64().unwrap_or(0.0) / (1u64 << 20) as f64;
    format!(
        "budget {:.1} MiB, peak {:.1} MiB tracked",
        mib("limit_bytes"),
        mib("peak_tracked_bytes")
    )
}

/// What was spilled.
fn spilled(m: &Value) -> String {
    match m["spills"].as_u64().unwrap_or(0) {
        0 => "nothing spilled".into(),
        n => format!(
            "{n} spills: {} runs, {:.1} MiB in {:.3} s, merged in {:.3} s",
            plain(&m["spill_runs"]),
            m["spilled_bytes"].as_f64().unwrap_or(0.0) / (1u64 << 20) as f64,
            m["spill_secs"].as_f64().unwrap_or(0.0),
            m["merge_secs"].as_f64().unwrap_or(0.0)
        ),
    }
}

/// A reason object (`{"why": "few_repeats", "repeats": 1.2, ...}`) as
/// `few repeats: repeats 1.2, ...`.
fn reason(v: &Value) -> String {
    let Some(obj) = v.as_object() else {
        return plain(v);
    };
    let why = obj
        .get("why")
        .map_or(String::new(), plain)
        .replace('_', " ");
    let rest: Vec<String> = obj
        .iter()
        .filter(|(k, v)| *k != "why" && !v.is_null())
        .map(|(k, v)| format!("{} {}", k.replace('_', " "), plain(v)))
        .collect();
    match rest.is_empty() {
        true => why,
        false => format!("{why}: {}", rest.join(", ")),
    }
}

/// A JSON value without quotes around strings, fractions to 3 digits.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        Value::Number(n) if n.is_f64() => format!("{:.3}", n.as_f64().unwrap_or(0.0)),
        other => other.to_string(),
    }
}

fn phases(run: &Run) -> String {
    let from_trace: Vec<&Span> = run.spans.iter().filter(|s| s.track == "run").collect();
    if !from_trace.is_empty() {
        return svg::legend() + &svg::timeline(&[("run".into(), from_trace)], run.end());
    }
    if run.stats.is_none() {
        return none("Needs a trace (--trace) or the run's stats (--stats-json).");
    }
    // Stats only: the phases back to back.
    let mut t = 0.0;
    let mut spans = Vec::new();
    for p in ["split", "sample", "map", "reduce", "merge"] {
        let dur = run.num(&format!("{p}_secs")) * 1e6;
        spans.push(Span {
            track: "run".into(),
            name: p.into(),
            category: "phase".into(),
            ts: t,
            dur,
            index: None,
            bytes: None,
            pairs: None,
        });
        t += dur;
    }
    svg::legend() + &svg::timeline(&[("run".into(), spans.iter().collect())], t)
}

/// The tracks other than the run's, in the order a viewer shows them:
/// caller, ingest, merge, then the workers by number.
fn tracks(run: &Run) -> Vec<(String, Vec<&Span>)> {
    let mut by: BTreeMap<(u64, String), Vec<&Span>> = BTreeMap::new();
    for s in run.spans.iter().filter(|s| s.track != "run") {
        let n = s.track.strip_prefix("worker ").and_then(|n| n.parse().ok());
        let key = n.map_or((0, s.track.clone()), |n: u64| (1 + n, String::new()));
        by.entry(key).or_default().push(s);
    }
    let name = |(n, t): (u64, String)| {
        if n == 0 {
            t
        } else {
            format!("worker {}", n - 1)
        }
    };
    by.into_iter().map(|(k, v)| (name(k), v)).collect()
}

fn workers(run: &Run) -> String {
    if !run.spans.is_empty() {
        return svg::timeline(&tracks(run), run.end());
    }
    let Some(stats) = &run.stats else {
        return none("Needs a trace (--trace).");
    };
    // Stats only: busy seconds per worker.
    let busy = |k: &str, w: usize| stats[k][w].as_f64().unwrap_or(0.0);
    let n = stats["map_busy_secs"].as_array().map_or(0, Vec::len);
    let items: Vec<_> = (0..n)
        .map(|w| {
            let (m, r) = (busy("map_busy_secs", w), busy("reduce_busy_secs", w));
            (
                format!("worker {w}"),
                m + r,
                format!("map {m:.3} s, reduce {r:.3} s busy"),
            )
        })
        .collect();
    none("Busy seconds per worker from the stats; a trace (--trace) shows them over time.")
        + &svg::bars(&items)
}

/// Bins of the run's time line over which utilization is averaged.
const BINS: usize = 200;

fn utilization(run: &Run) -> String {
    let tasks: Vec<&Span> = run
        .spans
        .iter()
        .filter(|s| s.category == "task" && s.track.starts_with("worker "))
        .collect();
    if tasks.is_empty() {
        let u = run.num("utilization");
        return none(&format!(
            "Needs a trace (--trace); the stats give {:.0}% over map and reduce.",
            100.0 * u
        ));
    }
    let workers = tracks(run)
        .iter()
        .filter(|t| t.0.starts_with("worker "))
        .count();
    let threads = (run.num("threads") as usize).max(workers).max(1);
    let end = run.end();
    let width = end / BINS as f64;
    let mut busy = vec![0.0; BINS];
    for s in tasks {
        let first = ((s.ts / width) as usize).min(BINS - 1);
        let last = ((s.end() / width) as usize).min(BINS - 1);
        for (b, slot) in busy.iter_mut().enumerate().take(last + 1).skip(first) {
            let (lo, hi) = (b as f64 * width, (b + 1) as f64 * width);
            *slot += (s.end().min(hi) - s.ts.max(lo)).max(0.0);
        }
    }
    let points: Vec<(f64, f64)> = busy
        .iter()
        .enumerate()
        .flat_map(|(b, &t)| {
            let u = t / (width * threads as f64);
            [(b as f64 * width, u), ((b + 1) as f64 * width, u)]
        })
        .collect();
    let mean = busy.iter().sum::<f64>() / (end * threads as f64).max(1e-12);
    format!(
        "<p>Share of {threads} workers running a task; {:.0}% over the whole run.</p>{}",
        100.0 * mean,
        svg::utilization(&points, end)
    )
}

fn keys(run: &Run) -> String {
    let Some(stats) = &run.stats else {
        return none("Needs the run's stats (--stats-json).");
    };
    let actual = run.num("actual_keys_per_worker");
    let predicted = match stats["predicted_keys_per_worker"].as_f64() {
        Some(p) => format!("{p:.0} ({:.2}x the actual)", p / actual.max(1.0)),
        None => "- (the run was not sampled)".into(),
    };
    format!(
        "<table><tr><th>predicted keys per worker</th><td>{predicted}</td></tr>\
         <tr><th>actual keys per worker</th><td>{actual:.0}</td></tr>\
         <tr><th>container bytes</th><td>{}</td></tr></table>",
        bytes(run.num("container_bytes"))
    )
}

fn chunks(run: &Run) -> String {
    let list = run.stats.as_ref().and_then(|s| s["chunks"].as_array());
    let Some(list) = list.filter(|l| !l.is_empty()) else {
        return none("The input was not streamed in chunks (--ingest chunked).");
    };
    let mut items = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let (read, map) = (
            c["read_secs"].as_f64().unwrap_or(0.0),
            c["map_secs"].as_f64().unwrap_or(0.0),
        );
        let size = bytes(c["bytes"].as_f64().unwrap_or(0.0));
        items.push((
            format!("chunk {i} read"),
            read,
            format!("{read:.3} s, {size}"),
        ));
        items.push((format!("chunk {i} map"), map, format!("{map:.3} s")));
    }
    format!(
        "<p>Workers waited {:.3} s in all for chunks to be read.</p>{}",
        run.num("read_wait_secs"),
        svg::bars(&items)
    )
}

fn sinks(run: &Run) -> String {
    let mut items: Vec<(String, f64, String)> = Vec::new();
    let total = match run.stats {
        Some(_) => run.num("total_secs"),
        None => run.end() / 1e6,
    };
    let phase_secs: Vec<(String, f64)> = match run.spans.iter().any(|s| s.category == "phase") {
        true => run
            .spans
            .iter()
            .filter(|s| s.category == "phase" && s.name != "run")
            .map(|s| (format!("phase {}", s.name), s.dur / 1e6))
            .collect(),
        false => ["split", "sample", "map", "reduce", "merge"]
            .iter()
            .map(|p| (format!("phase {p}"), run.num(&format!("{p}_secs"))))
            .collect(),
    };
    for (name, secs) in phase_secs {
        let share = 100.0 * secs / total.max(1e-12);
        items.push((name, secs, format!("{secs:.3} s, {share:.1}% of the run")));
    }
    let mut tasks: Vec<&Span> = run.spans.iter().filter(|s| s.category == "task").collect();
    tasks.sort_by(|a, b| b.dur.total_cmp(&a.dur));
    for s in tasks.iter().take(5) {
        items.push((
            format!("{} on {}", s.name, s.track),
            s.dur / 1e6,
            s.describe(),
        ));
    }
    items.sort_by(|a, b| b.1.total_cmp(&a.1));
    items.truncate(10);
    if items.is_empty() {
        return none("Needs a trace (--trace) or the run's stats (--stats-json).");
    }
    svg::bars(&items)
}

/// A byte count with a unit.
fn bytes(b: f64) -> String {
    match b {
        b if b >= 1e9 => format!("{:.2} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1} KB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

/// Text safe inside HTML and SVG.
pub(super) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
