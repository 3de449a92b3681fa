//! The settings of one run.

use crate::derive::setters;
use crate::job::ContainerKind;
use crate::merge::MergeKind;
use crate::pipeline::PipelineOptions;
use crate::plan::Mode;
use crate::progress::{Progress, Watch};
use crate::trace::Trace;

/// Settings for one run: `RunOptions::default()` and the setters below,
/// e.g. `RunOptions::default().top(10).split_size(1 << 20)`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunOptions {
    /// Target split size in bytes (overrides the runtime's). The last few
    /// splits of an input in memory are cut smaller (a quarter, at least
    /// 64 KiB) so that the map phase ends evenly.
    pub split_size: Option<usize>,
    /// Return only the first `k` pairs of the output order, found without
    /// sorting the whole output.
    pub top: Option<usize>,
    /// Force an intermediate container (overrides the job's choice).
    pub container: Option<ContainerKind>,
    /// How the merge phase orders the output (default: p-way).
    pub merge: Option<MergeKind>,
    /// Bytes per ingest chunk for a streamed input (default 64 MiB).
    pub chunk_size: Option<usize>,
    /// Chunk buffers for a streamed input (default 2: double buffering);
    /// input memory is about `chunk_buffers x chunk_size`.
    pub chunk_buffers: Option<usize>,
    /// Barrier or pipelined map and reduce (default: [`Mode::Auto`]).
    pub mode: Option<Mode>,
    /// Buffer size and memory bound of the pipelined mode.
    pub pipeline: PipelineOptions,
    /// A counter of the input bytes mapped, for a progress display polled
    /// from another thread (`ember` draws one from it).
    pub progress: Option<Progress>,
    /// A recorder of the run's timeline: a span per task, chunk read,
    /// merge and phase (`ember --trace` writes it for a profiler's viewer).
    pub trace: Option<Trace>,
}

setters!(RunOptions {
    split_size: usize,
    top: usize,
    container: ContainerKind,
    merge: MergeKind,
    chunk_size: usize,
    chunk_buffers: usize,
    mode: Mode,
    progress: Progress,
    trace: Trace,
});

impl RunOptions {
    /// Sets [`RunOptions::pipeline`].
    pub fn pipeline(mut self, pipeline: PipelineOptions) -> Self {
        self.pipeline = pipeline;
        self
    }

    /// What the run reports as it goes.
    pub(crate) fn watch(&self) -> Watch<'_> {
        Watch::new(self.progress.as_ref(), self.trace.as_ref())
    }
}
