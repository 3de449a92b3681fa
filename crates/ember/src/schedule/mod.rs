//! The map phase's schedule: which worker maps which split.
//!
//! Splits are handed out dynamically by [`Tasks`]: on one node by one
//! shared counter (a worker that finishes a split takes the next index with
//! one relaxed `fetch_add`), on several by one queue per node with stealing
//! (see `tasks`). The last splits are cut small (`input::plan_splits`), so
//! the phase ends evenly. Every kind of run maps through [`pull`]: the
//! barrier's containers, the sample, map-only jobs and the pipelined
//! mappers.
//!
//! A streamed input is mapped chunk by chunk: the ingest thread reads the
//! next chunk while every worker maps the current one into the state it
//! keeps across chunks ([`map_source`]).

mod tasks;

use std::sync::mpsc::{Receiver, Sender};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::error::{Error, Phase, Result};
use crate::ingest::{plan_chunk, Chunk, ChunkReader, IngestThread};
use crate::input::{Input, SplitRange};
use crate::job::{Malformed, Records, Split};
use crate::pool::Pool;
use crate::progress::Watch;
use crate::stats::{secs, ChunkStats, NodeStats, Stats};
use crate::trace::{Args, SpanKind, Track};
use crate::unwind::Failure;
use tasks::add_nodes;
pub(crate) use tasks::Tasks;

/// What [`map_splits`] returns: each worker's state and task count, in
/// worker order, and the map phase's tallies per node (empty on one node).
pub(crate) type Mapped<W> = (Vec<(W, u64)>, Vec<NodeStats>);

/// The pool a phase's tasks run on and the run's watch (progress, trace,
/// cancellation): what every map loop runs with.
#[derive(Clone, Copy)]
pub(crate) struct Team<'r> {
    pub(crate) pool: &'r Pool,
    pub(crate) watch: Watch<'r>,
}

/// The splits one [`map_splits`] maps: `n` splits of `input` (which places
/// a malformed record), split `i` being `at(i)`, numbered `first + i`
/// among the run's.
pub(crate) struct Batch<'i, 'a, F> {
    pub(crate) input: &'i Input<'a>,
    pub(crate) first: usize,
    pub(crate) n: usize,
    pub(crate) at: F,
}

/// Runs `task(i)` for split indices worker `w` takes from `tasks` until
/// none is left, the run has failed or the caller cancelled it (seen
/// through `watch`, before each split); an error or a panic in `task` is
/// recorded in `failure` and stops this worker. Returns how many tasks it
/// ran.
pub(crate) fn pull(
    tasks: &Tasks,
    w: usize,
    failure: &Failure,
    watch: Watch<'_>,
    mut task: impl FnMut(usize) -> Result<()>,
) -> u64 {
    let mut done = 0;
    while !failure.is_set() {
        if watch.cancelled() {
            failure.record(Error::Cancelled);
            break;
        }
        let Some(i) = tasks.take(w) else { break };
        if !failure.run(Phase::Map, || task(i)) {
            break;
        }
        done += 1;
    }
    done
}

/// Maps the `batch` of splits on every worker of `team`: each makes its
/// own state with `new_worker(worker)`, then pulls indices and calls
/// `map(state, first + index, at(index))`, which returns the pairs it
/// emitted. A malformed record fails the run with its place in the input.
/// Each task is traced as a task of `phase`. Splits are queued by the node
/// of their data ([`Tasks::new`]). Returns each worker's state
/// and task count, in worker order, and the tallies per node (empty on one
/// node).
pub(crate) fn map_splits<'s, W: Send>(
    team: Team<'_>,
    batch: Batch<'_, '_, impl Fn(usize) -> Split<'s> + Sync>,
    phase: Phase,
    new_worker: impl Fn(usize) -> W + Sync,
    map: impl Fn(&mut W, usize, Split<'s>) -> Result<u64, TaskError> + Sync,
) -> Result<Mapped<W>> {
    let Team { pool, watch } = team;
    let Batch {
        input,
        first,
        n,
        at: split_at,
    } = batch;
    let queue = Tasks::new(pool, n, &|i| split_at(i).data.as_ptr());
    let failure = Failure::new();
    let workers = pool.broadcast(|w| {
        let mut state = new_worker(w);
        let tasks = pull(&queue, w, &failure, watch, |i| {
            let split = split_at(i);
            let (part, offset, bytes) = (split.part, split.offset, split.data.len());
            let start = watch.clock();
            let pairs = map(&mut state, first + i, split).map_err(|e| e.at(input, part, offset))?;
            if let Some(start) = start {
                let args = Args {
                    index: Some((first + i) as u64),
                    bytes: Some(bytes as u64),
                    pairs: Some(pairs),
                };
                watch.span(Track::Worker(w), SpanKind::Task(phase), start, args);
            }
            Ok(())
        });
        (state, tasks)
    });
    failure.into_result()?;
    Ok((workers, queue.node_stats()))
}

/// Why a map task failed: a record `map` could not interpret (placed in
/// the input by [`TaskError::at`]), or an error of the runtime's own (a
/// spill that could not be written).
#[derive(Debug)]
pub(crate) enum TaskError {
    Malformed(Malformed),
    Run(Error),
}

impl From<Malformed> for TaskError {
    fn from(m: Malformed) -> Self {
        TaskError::Malformed(m)
    }
}

impl From<Error> for TaskError {
    fn from(e: Error) -> Self {
        TaskError::Run(e)
    }
}

impl TaskError {
    /// The run's error, for a task on the split at `offset` in part `part`
    /// of `input`.
    pub(crate) fn at(self, input: &Input<'_>, part: usize, offset: u64) -> Error {
        match self {
            TaskError::Malformed(m) => malformed(m, input, part, offset),
            TaskError::Run(e) => e,
        }
    }
}

/// The run's error for a malformed record in the split at `offset` in part
/// `part` of `input`.
pub(crate) fn malformed(m: Malformed, input: &Input<'_>, part: usize, offset: u64) -> Error {
    Error::Malformed {
        path: input.part_name(part).to_path_buf(),
        offset: offset + m.at() as u64,
        message: m.message().to_owned(),
    }
}

/// Where a run's map input comes from.
pub(crate) enum Source<'i, 'a> {
    /// An in-memory input, the splits to map, and what becomes of a mapped
    /// file's pages once a split is mapped.
    Memory(&'i Input<'a>, Vec<SplitRange>, Pages),
    /// A streamed input, read in chunks of splits of `split_size` bytes,
    /// `buffers` chunks at a time.
    Stream {
        input: &'i Input<'a>,
        reader: ChunkReader,
        split_size: usize,
        buffers: usize,
    },
}

/// What a run does with a mapped input's pages once a split is mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pages {
    /// Kept mapped (a later run may read them again).
    Keep,
    /// Let go ([`RunOptions::release_mapped`](crate::RunOptions::release_mapped)).
    Release,
}

/// The split a range of an in-memory input is.
pub(crate) fn split_in<'s>(input: &'s Input<'_>, s: &SplitRange) -> Split<'s> {
    Split {
        data: &input.part_bytes(s.part)[s.start..s.end],
        part: s.part,
        offset: s.start as u64,
    }
}

/// The map loop over a source, on `team`. In-memory splits go to
/// [`map_splits`]; a stream is mapped chunk by chunk, each chunk by every
/// worker into the same per-worker state. `map` gets a split index that
/// grows in input order and returns the pairs it emitted. Streamed runs
/// add their chunks to `stats`.
pub(crate) fn map_source<W: Send>(
    team: Team<'_>,
    ingest: &IngestThread,
    source: Source<'_, '_>,
    stats: &mut Stats,
    new_worker: impl Fn(usize) -> W + Sync,
    map: impl Fn(&mut W, usize, Split<'_>) -> Result<u64, TaskError> + Sync,
) -> Result<Vec<(W, u64)>> {
    let map = |w: &mut W, i: usize, split: Split<'_>| {
        let bytes = split.data.len();
        let pairs = map(w, i, split)?;
        team.watch.mapped(bytes);
        Ok(pairs)
    };
    let _phase = team.watch.phase(Phase::Map);
    match source {
        Source::Memory(input, splits, pages) => {
            let batch = Batch {
                input,
                first: 0,
                n: splits.len(),
                at: |i| split_in(input, &splits[i]),
            };
            let (workers, nodes) =
                map_splits(team, batch, Phase::Map, new_worker, |w, i, split| {
                    let pairs = map(w, i, split)?;
                    #[cfg(unix)]
                    if pages == Pages::Release {
                        let s = &splits[i];
                        input.release_range(s.part, s.start..s.end);
                    }
                    Ok(pairs)
                })?;
            add_nodes(&mut stats.nodes, nodes);
            Ok(workers)
        }
        Source::Stream {
            input,
            reader,
            split_size,
            buffers,
        } => {
            let mut stream = Stream::open(ingest, input, reader, buffers, stats)?;
            stream.map(team, split_size, new_worker, map)
        }
    }
}

/// A streamed run's chunk loop and its accounting.
struct Stream<'s, 'i, 'a> {
    /// The input, for the names of its parts.
    input: &'i Input<'a>,
    empty: Sender<Chunk>,
    full: Receiver<Result<Chunk>>,
    records: Records,
    /// The largest size each circulating buffer reached.
    capacity: Vec<usize>,
    stats: &'s mut Stats,
}

impl<'s, 'i, 'a> Stream<'s, 'i, 'a> {
    /// Starts `ingest` reading `input` through `reader`, `buffers` chunks
    /// at a time.
    fn open(
        ingest: &IngestThread,
        input: &'i Input<'a>,
        reader: ChunkReader,
        buffers: usize,
        stats: &'s mut Stats,
    ) -> Result<Self> {
        let records = reader.records();
        let (empty, full) = ingest.read(reader, buffers)?;
        // Counted as chunks arrive (a streamed size may not be known).
        stats.input_bytes = 0;
        Ok(Stream {
            input,
            empty,
            full,
            records,
            capacity: vec![0; buffers],
            stats,
        })
    }

    /// The next chunk, or `None` at the end of the input.
    fn next(&mut self) -> Result<Option<Chunk>> {
        let wait = Instant::now();
        let chunk = self
            .full
            .recv()
            .map_err(|_| Error::Config("the ingest thread stopped".into()))??;
        self.stats.read_wait_secs += secs(wait.elapsed());
        Ok(Some(chunk).filter(|c| !c.segments.is_empty()))
    }

    fn map<W: Send>(
        &mut self,
        team: Team<'_>,
        split_size: usize,
        new_worker: impl Fn(usize) -> W + Sync,
        map: impl Fn(&mut W, usize, Split<'_>) -> Result<u64, TaskError> + Sync,
    ) -> Result<Vec<(W, u64)>> {
        let mut workers: Vec<(W, u64)> = Vec::new();
        let mut base = 0;
        while let Some(chunk) = self.next()? {
            let splits = plan_chunk(&chunk, self.records, split_size)?;
            let previous: Vec<_> = workers.drain(..).map(|w| Mutex::new(Some(w))).collect();
            let start = Instant::now();
            let split_at = |i: usize| {
                let (seg, start, end) = splits[i];
                let seg = chunk.segments[seg];
                Split {
                    data: &chunk.data[start..end],
                    part: seg.part,
                    offset: seg.offset + (start - seg.start) as u64,
                }
            };
            // Each worker takes back the state it had after the last chunk
            // (or makes one, outside any lock: workers build theirs at once).
            let state = |w: usize| {
                let prev = previous.get(w).and_then(|slot| {
                    let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
                    slot.take()
                });
                prev.unwrap_or_else(|| (new_worker(w), 0))
            };
            let batch = Batch {
                input: self.input,
                first: base,
                n: splits.len(),
                at: split_at,
            };
            let (out, nodes) = map_splits(team, batch, Phase::Map, state, |st, i, split| {
                map(&mut st.0, i, split)
            })?;
            workers = out.into_iter().map(|((st, t0), t)| (st, t0 + t)).collect();
            add_nodes(&mut self.stats.nodes, nodes);
            self.record(&chunk, splits.len(), secs(start.elapsed()));
            if let Some(start) = chunk.read_start {
                let read = Args {
                    index: Some(self.stats.chunks.len() as u64 - 1),
                    bytes: self.stats.chunks.last().map(|c| c.bytes),
                    pairs: None,
                };
                let took = Duration::from_secs_f64(chunk.read_secs);
                team.watch
                    .span_of(Track::Ingest, SpanKind::Read, start, took, read);
            }
            base += splits.len();
            // A failed send means the reader is done: nothing to return.
            let _ = self.empty.send(chunk);
        }
        Ok(workers)
    }

    /// Adds a mapped chunk to the stats.
    fn record(&mut self, chunk: &Chunk, splits: usize, map_secs: f64) {
        let bytes: usize = chunk.segments.iter().map(|s| s.end - s.start).sum();
        let stats = &mut *self.stats;
        stats.splits += splits;
        stats.input_bytes += bytes as u64;
        stats.chunks.push(ChunkStats {
            bytes: bytes as u64,
            read_secs: chunk.read_secs,
            map_secs,
        });
        stats.read_secs += chunk.read_secs;
        // Buffers are reused round-robin; their largest sizes add up to the
        // input memory in use.
        let slot = (stats.chunks.len() - 1) % self.capacity.len();
        self.capacity[slot] = self.capacity[slot].max(chunk.data.capacity());
        stats.peak_chunk_bytes = self.capacity.iter().sum::<usize>() as u64;
    }
}

/// About 8 splits per worker, so the dynamic schedule can balance, within
/// 64 KiB..4 MiB: small enough to balance, large enough that the per-split
/// overhead is noise.
pub(crate) fn default_split_size(input_len: usize, threads: usize) -> usize {
    (input_len / (threads * 8)).clamp(64 << 10, 4 * crate::input::DEFAULT_SPLIT_SIZE)
}
