//! The settings of one run.

use std::path::PathBuf;

use crate::container::partitioned::PartitionedOptions;
use crate::derive::setters;
use crate::job::ContainerKind;
use crate::pipeline::PipelineOptions;
use crate::plan::{Aggregation, Asked, Mode};
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
    /// Bytes per ingest chunk for a streamed input (default 64 MiB, or
    /// less under a memory limit the caller set: the buffers then take at
    /// most a quarter of it, with chunks of at least 1 MiB).
    pub chunk_size: Option<usize>,
    /// Chunk buffers for a streamed input (default 2: double buffering);
    /// input memory is about `chunk_buffers x chunk_size`.
    pub chunk_buffers: Option<usize>,
    /// Barrier or pipelined map and reduce (default: [`Mode::Auto`]).
    pub mode: Option<Mode>,
    /// Buffer size and memory bound of the pipelined mode.
    pub pipeline: PipelineOptions,
    /// How the hash container aggregates: per worker, or each key once in
    /// shared hash partitions (default: [`Aggregation::Auto`], chosen
    /// from the sample).
    pub aggregation: Option<Aggregation>,
    /// Sizes of the partitioned layout.
    pub partitioned: PartitionedOptions,
    /// A counter of the input bytes mapped, for a progress display polled
    /// from another thread (`ember` draws one from it).
    pub progress: Option<Progress>,
    /// A recorder of the run's timeline: a span per task, chunk read,
    /// merge and phase (`ember --trace` writes it for a profiler's viewer).
    pub trace: Option<Trace>,
    /// Bytes the intermediate data may take (overrides the runtime's; the
    /// default is derived from the machine: see
    /// [`default_memory_limit`](crate::tune::default_memory_limit)). A
    /// barrier-mode worker whose container passes its share spills it to
    /// disk, if the job has a [`codec`](crate::Job::codec).
    pub memory_limit: Option<u64>,
    /// Where spill files go (overrides the runtime's; default: the
    /// system's temporary directory). Each run that spills makes a
    /// directory of its own there and removes it when it ends.
    pub spill_dir: Option<PathBuf>,
    /// Let go of a memory-mapped input's pages as each split is mapped
    /// (barrier mode), for an input the run reads once: the run's resident
    /// memory then holds the splits being mapped, not the whole input. The
    /// page cache keeps the file; a later read of the input faults its
    /// pages back (slower, the same bytes), so a caller that maps one input
    /// for many runs leaves this off (the default).
    pub release_mapped: bool,
}

setters!(RunOptions {
    split_size: usize,
    top: usize,
    container: ContainerKind,
    chunk_size: usize,
    chunk_buffers: usize,
    mode: Mode,
    aggregation: Aggregation,
    progress: Progress,
    trace: Trace,
    memory_limit: u64,
    spill_dir: PathBuf,
});

impl RunOptions {
    /// Sets [`RunOptions::release_mapped`].
    pub fn release_mapped(mut self, release: bool) -> Self {
        self.release_mapped = release;
        self
    }

    /// Sets [`RunOptions::pipeline`].
    pub fn pipeline(mut self, pipeline: PipelineOptions) -> Self {
        self.pipeline = pipeline;
        self
    }

    /// Sets [`RunOptions::partitioned`].
    pub fn partitioned(mut self, partitioned: PartitionedOptions) -> Self {
        self.partitioned = partitioned;
        self
    }

    /// What the caller asks of the run's plan.
    pub(crate) fn asked(&self) -> Asked {
        Asked {
            container: self.container,
            mode: self.mode,
            aggregation: self.aggregation,
            partitions: self.partitioned.partitions,
        }
    }

    /// What the run reports as it goes.
    pub(crate) fn watch(&self) -> Watch<'_> {
        Watch::new(self.progress.as_ref(), self.trace.as_ref())
    }
}
