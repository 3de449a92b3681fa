//! A run's timeline: one span per task, chunk read, merge and phase, for a
//! profiler's viewer ([`Trace::write_chrome`]: the Chrome Trace Event
//! format that Perfetto and `chrome://tracing` open) or `ember report`.
//!
//! Spans are recorded per task, never per pair: two clock reads and one
//! uncontended lock per split or partition, so a trace costs nothing a run
//! can measure.

use std::io::{self, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use crate::error::Phase;

/// A recorder of spans, shared by clones: give one to
/// [`RunOptions::trace`](crate::RunOptions::trace) (several runs may share
/// it: k-means runs one per iteration), then read [`Trace::spans`] or write
/// [`Trace::write_chrome`]. Times count from the recorder's creation.
#[derive(Debug, Clone)]
pub struct Trace {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    origin: Instant,
    spans: Mutex<Vec<Span>>,
}

/// Where a span ran: one track per thread kind, as a viewer draws them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Track {
    /// The run and its phases.
    Run,
    /// The thread that called the runtime (small reduces run there).
    Caller,
    /// The ingest thread that reads a streamed input's chunks.
    Ingest,
    /// The output merge (its tasks run on the pool's workers).
    Merge,
    /// Worker `n` of the runtime's pool.
    Worker(usize),
}

/// What a span measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SpanKind {
    /// A whole run.
    Run,
    /// One phase of a run, on the run's track.
    Phase(Phase),
    /// One task of a phase on a worker: a split mapped (in the sample or
    /// the map phase), a partition reduced, the output merged.
    Task(Phase),
    /// The ingest thread reading one chunk.
    Read,
    /// A map worker writing its container to disk (a run whose
    /// intermediate data passed its memory budget).
    Spill,
}

impl SpanKind {
    /// The name a viewer shows: the phase's, for tasks and phases alike.
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Run => "run",
            SpanKind::Phase(p) | SpanKind::Task(p) => p.name(),
            SpanKind::Read => "read",
            SpanKind::Spill => "spill",
        }
    }

    /// The category a viewer filters by.
    fn category(self) -> &'static str {
        match self {
            SpanKind::Run | SpanKind::Phase(_) => "phase",
            SpanKind::Task(_) => "task",
            SpanKind::Read => "ingest",
            SpanKind::Spill => "spill",
        }
    }
}

/// One recorded span.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Span {
    /// The thread it ran on.
    pub track: Track,
    /// What it measured.
    pub kind: SpanKind,
    /// When it started, from the trace's creation.
    pub start: Duration,
    /// How long it took.
    pub duration: Duration,
    /// The split, partition or chunk number, for tasks and reads.
    pub index: Option<u64>,
    /// Input bytes it covered (map tasks, reads, runs).
    pub bytes: Option<u64>,
    /// Pairs emitted (map tasks) or keys produced (reduce tasks).
    pub pairs: Option<u64>,
}

/// The optional figures of a span.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Args {
    pub(crate) index: Option<u64>,
    pub(crate) bytes: Option<u64>,
    pub(crate) pairs: Option<u64>,
}

impl Default for Trace {
    fn default() -> Self {
        Self::new()
    }
}

impl Trace {
    /// An empty trace whose clock starts now.
    pub fn new() -> Self {
        Trace {
            inner: Arc::new(Inner {
                origin: Instant::now(),
                spans: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Every span recorded so far, by start time.
    pub fn spans(&self) -> Vec<Span> {
        let mut spans = self.lock().clone();
        spans.sort_by_key(|s| (s.start, s.track));
        spans
    }

    /// Records a span of `kind` on `track` that started at `start` and
    /// lasted `duration`.
    pub(crate) fn record(
        &self,
        track: Track,
        kind: SpanKind,
        start: Instant,
        duration: Duration,
        args: Args,
    ) {
        let span = Span {
            track,
            kind,
            start: start.saturating_duration_since(self.inner.origin),
            duration,
            index: args.index,
            bytes: args.bytes,
            pairs: args.pairs,
        };
        self.lock().push(span);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Span>> {
        // A panic while pushing leaves a valid Vec: keep recording.
        self.inner.spans.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes the spans as a Chrome Trace Event JSON object
    /// (`{"traceEvents": [...]}`): a complete event (`"ph": "X"`, times in
    /// microseconds) per span, its figures as `args`, and a name for each
    /// track.
    pub fn write_chrome(&self, w: impl Write) -> io::Result<()> {
        let spans = self.spans();
        serde_json::to_writer(w, &Chrome(&spans)).map_err(io::Error::from)
    }
}

/// Chrome's `tid` and the name shown for a track.
fn thread(track: Track) -> (usize, String) {
    match track {
        Track::Run => (0, "run".into()),
        Track::Caller => (1, "caller".into()),
        Track::Ingest => (2, "ingest".into()),
        Track::Merge => (3, "merge".into()),
        Track::Worker(n) => (10 + n, format!("worker {n}")),
    }
}

/// The Chrome Trace Event form of a list of spans.
struct Chrome<'a>(&'a [Span]);

impl Serialize for Chrome<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut tracks: Vec<Track> = self.0.iter().map(|sp| sp.track).collect();
        tracks.sort();
        tracks.dedup();
        let names = tracks.iter().map(|&t| ThreadName(t));
        let events: Vec<ChromeEvent<'_>> = names
            .map(ChromeEvent::Name)
            .chain(self.0.iter().map(ChromeEvent::Span))
            .collect();
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("traceEvents", &events)?;
        m.serialize_entry("displayTimeUnit", "ms")?;
        m.end()
    }
}

struct ThreadName(Track);

enum ChromeEvent<'a> {
    Name(ThreadName),
    Span(&'a Span),
}

impl Serialize for ChromeEvent<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("pid", &1)?;
        match self {
            ChromeEvent::Name(ThreadName(track)) => {
                let (tid, name) = thread(*track);
                m.serialize_entry("ph", "M")?;
                m.serialize_entry("name", "thread_name")?;
                m.serialize_entry("tid", &tid)?;
                m.serialize_entry("args", &serde_json::json!({ "name": name }))?;
            }
            ChromeEvent::Span(sp) => {
                m.serialize_entry("ph", "X")?;
                m.serialize_entry("name", sp.kind.name())?;
                m.serialize_entry("cat", sp.kind.category())?;
                m.serialize_entry("tid", &thread(sp.track).0)?;
                m.serialize_entry("ts", &micros(sp.start))?;
                m.serialize_entry("dur", &micros(sp.duration))?;
                let args = serde_json::json!({
                    "index": sp.index, "bytes": sp.bytes, "pairs": sp.pairs,
                });
                m.serialize_entry("args", &args)?;
            }
        }
        m.end()
    }
}

/// Microseconds, to the nanosecond, as Chrome's `ts` and `dur` take them.
fn micros(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_come_back_by_start_and_write_as_chrome_events() {
        let t = Trace::new();
        let early = Instant::now();
        std::thread::sleep(Duration::from_millis(1));
        let late = Instant::now();
        let args = Args {
            index: Some(3),
            bytes: Some(100),
            pairs: None,
        };
        let (worker, map) = (Track::Worker(1), SpanKind::Task(Phase::Map));
        t.clone().record(worker, map, late, late.elapsed(), args);
        let run = early.elapsed();
        t.record(Track::Run, SpanKind::Run, early, run, Args::default());
        let spans = t.spans();
        assert_eq!(spans.len(), 2);
        assert_eq!(spans[0].kind, SpanKind::Run);
        assert!(spans[0].duration >= spans[1].duration);
        assert_eq!((spans[1].index, spans[1].bytes), (Some(3), Some(100)));

        let mut out = Vec::new();
        t.write_chrome(&mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let events = v["traceEvents"].as_array().unwrap();
        let names: Vec<_> = events.iter().filter(|e| e["ph"] == "M").collect();
        assert_eq!(names.len(), 2);
        assert!(names.iter().any(|e| e["args"]["name"] == "worker 1"));
        let map = events.iter().find(|e| e["name"] == "map").unwrap();
        assert_eq!(
            (map["ph"].as_str(), map["tid"].as_u64()),
            (Some("X"), Some(11))
        );
        assert_eq!(map["args"]["index"], 3);
        assert!(map["args"]["pairs"].is_null());
    }
}
