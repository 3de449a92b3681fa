//! A run's progress, for a display polled from another thread.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Counts the input bytes a run has mapped. Clone it into
/// [`RunOptions::progress`](crate::RunOptions::progress) and read
/// [`Progress::bytes`] from any thread while the run goes on.
///
/// Each split's bytes are added once the split is mapped. After a run's map
/// phase the count has grown by the input's size: sampled splits count
/// once, whether the sample's work is kept or the splits are mapped again.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Bytes mapped. Relaxed adds and loads: it is a display's estimate and
    /// orders nothing.
    bytes: Arc<AtomicU64>,
}

impl Progress {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes mapped so far, by every run this counter was given to.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Relaxed)
    }

    /// Adds a mapped split's bytes.
    pub(crate) fn add(&self, bytes: usize) {
        self.bytes.fetch_add(bytes as u64, Relaxed);
    }
}

/// Adds a mapped split's bytes to a run's progress, if it has a counter.
pub(crate) fn add(progress: Option<&Progress>, bytes: usize) {
    if let Some(p) = progress {
        p.add(bytes);
    }
}
