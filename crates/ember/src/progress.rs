//! What a run reports while it goes: a progress counter polled by a display
//! on another thread ([`Progress`]) and the timeline of
//! [`Trace`](crate::trace::Trace), both optional, carried through the
//! phases together as a [`Watch`].

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::Phase;
use crate::trace::{Args, SpanKind, Trace, Track};

/// Counts the input bytes a run has mapped and says which phase it is in;
/// and stops the run when asked ([`Progress::cancel`]). Clone it into
/// [`RunOptions::progress`](crate::RunOptions::progress) and use it from
/// any thread while the run goes on.
///
/// Each split's bytes are added once the split is mapped. After a run's map
/// phase the count has grown by the input's size: sampled splits count
/// once, whether the sample's work is kept or the splits are mapped again.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Relaxed adds and loads: a display's estimate, which orders nothing.
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    bytes: AtomicU64,
    total: AtomicU64,
    runs: AtomicU64,
    /// 0 before any phase, else 1 + the index in [`PHASES`].
    phase: AtomicU8,
    spills: AtomicU64,
    /// Set by `cancel`, read by the workers before each split: relaxed, a
    /// request that orders nothing (the run's error travels the usual way).
    cancelled: AtomicBool,
}

/// The phases a run reports, in the order a run enters them.
const PHASES: [Phase; 5] = [
    Phase::Split,
    Phase::Sample,
    Phase::Map,
    Phase::Reduce,
    Phase::Merge,
];

impl Progress {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes mapped so far, by every run this counter was given to.
    pub fn bytes(&self) -> u64 {
        self.counters.bytes.load(Relaxed)
    }

    /// Input bytes of every run started with this counter, when known (a
    /// stream of unknown length adds nothing).
    pub fn total(&self) -> u64 {
        self.counters.total.load(Relaxed)
    }

    /// Runs started with this counter.
    pub fn runs(&self) -> u64 {
        self.counters.runs.load(Relaxed)
    }

    /// The phase the latest run is in (`None` before the first starts).
    pub fn phase(&self) -> Option<Phase> {
        let i = self.counters.phase.load(Relaxed) as usize;
        i.checked_sub(1).map(|i| PHASES[i])
    }

    /// Times a worker of a run using this handle spilled its container to
    /// disk (a run over its memory budget).
    pub fn spills(&self) -> u64 {
        self.counters.spills.load(Relaxed)
    }

    /// Asks every run using this handle to stop: each one stops mapping at
    /// its next split and returns
    /// [`Error::Cancelled`](crate::Error::Cancelled) (a run past its map
    /// phase finishes). The runtime stays usable; a later run with this
    /// handle is cancelled at once, so give it a new one.
    pub fn cancel(&self) {
        self.counters.cancelled.store(true, Relaxed);
    }

    /// Whether [`cancel`](Progress::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.counters.cancelled.load(Relaxed)
    }

    fn set_phase(&self, p: Phase) {
        let i = PHASES.iter().position(|&q| q == p).unwrap_or(0);
        self.counters.phase.store(i as u8 + 1, Relaxed);
    }
}

/// A run's progress counter and trace, each if it was asked for.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Watch<'r> {
    progress: Option<&'r Progress>,
    trace: Option<&'r Trace>,
}

impl<'r> Watch<'r> {
    /// Reports to `progress` and `trace`, each if given.
    pub(crate) fn new(progress: Option<&'r Progress>, trace: Option<&'r Trace>) -> Self {
        Watch { progress, trace }
    }

    /// Counts a run, whose input is `bytes` long if known, as started.
    pub(crate) fn start(&self, bytes: Option<u64>) {
        if let Some(p) = self.progress {
            p.counters.runs.fetch_add(1, Relaxed);
            p.counters.total.fetch_add(bytes.unwrap_or(0), Relaxed);
        }
    }

    /// Whether the caller asked the run to stop.
    #[inline]
    pub(crate) fn cancelled(&self) -> bool {
        self.progress.is_some_and(Progress::is_cancelled)
    }

    /// Counts a spill.
    pub(crate) fn spilled(&self) {
        if let Some(p) = self.progress {
            p.counters.spills.fetch_add(1, Relaxed);
        }
    }

    /// Counts `bytes` of input as mapped.
    pub(crate) fn mapped(&self, bytes: usize) {
        if let Some(p) = self.progress {
            p.counters.bytes.fetch_add(bytes as u64, Relaxed);
        }
    }

    /// Enters phase `p`: shown at once, and traced as a span on the run's
    /// track when the returned guard drops.
    pub(crate) fn phase(&self, p: Phase) -> PhaseGuard<'r> {
        if let Some(progress) = self.progress {
            progress.set_phase(p);
        }
        PhaseGuard {
            trace: self.trace,
            kind: SpanKind::Phase(p),
            start: Instant::now(),
        }
    }

    /// Records a span of `kind` from `start` to now on `track`, if traced.
    #[inline]
    pub(crate) fn span(&self, track: Track, kind: SpanKind, start: Instant, args: Args) {
        if let Some(t) = self.trace {
            t.record(track, kind, start, start.elapsed(), args);
        }
    }

    /// Records a span of `kind` that started at `start` and lasted
    /// `duration`, if traced.
    pub(crate) fn span_of(
        &self,
        track: Track,
        kind: SpanKind,
        start: Instant,
        duration: Duration,
        args: Args,
    ) {
        if let Some(t) = self.trace {
            t.record(track, kind, start, duration, args);
        }
    }

    /// The time now if the run is traced (a task's start), else `None`:
    /// an untraced run reads no clock for it.
    #[inline]
    pub(crate) fn clock(&self) -> Option<Instant> {
        self.trace.map(|_| Instant::now())
    }
}

/// A phase in progress; records its span when dropped.
#[derive(Debug)]
pub(crate) struct PhaseGuard<'r> {
    trace: Option<&'r Trace>,
    kind: SpanKind,
    start: Instant,
}

impl Drop for PhaseGuard<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.trace {
            let took = self.start.elapsed();
            t.record(Track::Run, self.kind, self.start, took, Args::default());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_reports_phases_bytes_and_spans() {
        let progress = Progress::new();
        let trace = Trace::new();
        let w = Watch::new(Some(&progress), Some(&trace));
        assert_eq!(progress.phase(), None);
        w.start(Some(10));
        {
            let _map = w.phase(Phase::Map);
            assert_eq!(progress.phase(), Some(Phase::Map));
            w.mapped(4);
        }
        assert_eq!(
            (progress.bytes(), progress.total(), progress.runs()),
            (4, 10, 1)
        );
        let spans = trace.spans();
        assert_eq!(spans.len(), 1);
        assert_eq!(
            (spans[0].track, spans[0].kind),
            (Track::Run, SpanKind::Phase(Phase::Map))
        );
    }

    #[test]
    fn an_unwatched_run_reads_no_clock() {
        assert!(Watch::default().clock().is_none());
    }
}
