//! The runtime: built once, runs many jobs, phase by phase.
//!
//! Phase protocol of one run:
//!
//! 1. **split**: the input is cut into splits at record boundaries.
//! 2. **map**: every worker takes one container and pulls split indices from
//!    one shared atomic counter (dynamic scheduling: one relaxed
//!    `fetch_add` per split), calling `map` under `catch_unwind`.
//! 3. **reduce**: partition `p` of every worker's container is joined and
//!    reduced by one task; partitions are spread over the workers by rayon's
//!    work stealing.
//! 4. **merge**: the runs are sorted into the output order (or only the top
//!    k are selected).
//!
//! In the pipelined mode ([`Mode::Pipelined`], chosen per run, see
//! `pipeline`), map and reduce overlap instead: reducers fold map output
//! while mappers map, and the same merge phase follows.
//!
//! A panic in user code stops the other workers at their next split and
//! comes back as [`Error::Panicked`]; the pool stays usable.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use rayon::prelude::*;

use crate::combine::Combiner;
use crate::container::append::AppendContainer;
use crate::container::array::ArrayContainer;
use crate::container::hash::HashContainer;
use crate::container::hash_tree::HashTreeContainer;
use crate::container::unique::UniqueContainer;
use crate::container::{Container, ContainerKind, Counting, KeyHashes, KeyHint};
use crate::error::{Error, Phase, Result};
use crate::ingest::{
    plan_chunk, ChunkReader, IngestThread, DEFAULT_CHUNK_BUFFERS, DEFAULT_CHUNK_SIZE,
};
use crate::input::{plan_slice, plan_splits, Input, SplitRange, DEFAULT_SPLIT_SIZE};
use crate::job::{Job, MapOnlyJob, Records, Split};
use crate::key::Key;
use crate::merge::{self, MergeKind};
use crate::pipeline::{self, Busy, Mode, PipelineOptions};
use crate::pool::Pool;
use crate::predict;
use crate::stats::{secs, ChunkStats, Stats};

/// Keys each partition table starts with; tables grow by doubling.
const INITIAL_CAPACITY: usize = 1024;
/// A prediction never reserves more than this many keys per worker up front
/// (tables still grow past it if needed).
const MAX_RESERVED_KEYS: usize = 1 << 24;
/// Nor more than this many times the keys the worker's sample held.
const RESERVE_CAP: usize = 4;
/// Map output of at most this many entries (all workers) is reduced on the
/// calling thread: waking the pool costs more than reducing a few thousand
/// entries (k-means runs one job per iteration, each with a few hundred
/// entries, and paid about 0.15 ms a job for the wake-ups). Only for
/// combiners that fold ([`Combiner::FOLDS`]): a kept list per key can be
/// any length (sort's reduce sorts a million keys per range), so such
/// reduces always use the pool.
const SMALL_REDUCE: usize = 1 << 12;
/// Pairs per reduce partition the append container aims at, when the
/// sample predicts how many there will be: its reduce numbers a
/// partition's keys in a table and counting-sorts the values by number,
/// and both stay in the caches only for small partitions (Phoenix
/// Rebirth's bucket counts sized to the keys). Measured on the inverted
/// index of the 256 MiB corpus (30.5M pairs, 943K keys), 2 threads: the
/// reduce took 0.8-1.3 s with 8 partitions, 0.5-0.8 s with 64, 0.4-0.6 s
/// with 128 and 0.40-0.47 s with 256 (119K pairs each); 512 made the map
/// and the merge slower.
const APPEND_PAIRS_PER_PARTITION: u64 = 1 << 17;
/// The most partitions the append container is given.
const MAX_APPEND_PARTITIONS: usize = 1 << 10;

/// A MapReduce runtime: a pool of worker threads and default settings,
/// reused for any number of jobs.
pub struct Runtime {
    pool: Pool,
    ingest: IngestThread,
    split_size: Option<usize>,
}

/// Builds a [`Runtime`].
#[derive(Debug, Clone, Default)]
pub struct RuntimeBuilder {
    threads: Option<usize>,
    split_size: Option<usize>,
    pin: bool,
}

impl RuntimeBuilder {
    /// Worker threads (default: the number of CPUs).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = Some(n);
        self
    }

    /// Default target split size in bytes for this runtime's runs (default:
    /// sized from the input, between 64 KiB and 4 MiB).
    pub fn split_size(mut self, bytes: usize) -> Self {
        self.split_size = Some(bytes);
        self
    }

    /// Pin worker `i` to the `i`-th CPU the process may use (Linux; only
    /// with two or more workers and no more than those CPUs). Default: no,
    /// the OS scheduler places the workers. Pinning is for a machine or
    /// cpuset given to this runtime alone: every pinned runtime takes the
    /// first allowed CPUs, so two of them share those and leave the rest.
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// Starts the worker threads.
    pub fn build(self) -> Result<Runtime> {
        let threads = match self.threads {
            Some(0) => return Err(Error::Config("threads must be at least 1".into())),
            Some(n) => n,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if self.split_size == Some(0) {
            return Err(Error::Config("split size must be at least 1 byte".into()));
        }
        Ok(Runtime {
            pool: Pool::new(threads, self.pin)?,
            ingest: IngestThread::start()?,
            split_size: self.split_size,
        })
    }
}

/// Settings for one run.
#[derive(Debug, Clone, Default)]
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
    /// A counter the run adds each split's bytes to once the split is
    /// mapped, for a progress display polled from another thread (`ember`
    /// draws a bar from it). After a run's map phase it has grown by the
    /// input's size: sampled splits count once, whether the sample's work
    /// is kept or the splits are mapped again. Relaxed atomic adds, one
    /// per split.
    pub progress: Option<Arc<AtomicU64>>,
}

/// The result of a run: the output pairs in order, and the stats.
pub struct Output<K, O> {
    /// `(key, output)` pairs, in the job's order.
    pub pairs: Vec<(K, O)>,
    /// Where the time went.
    pub stats: Stats,
}

/// One reduce partition's output.
type Run<J> = Vec<(<J as Job>::Key, <J as Job>::Out)>;

/// The first failure of a phase, shared by its workers.
pub(crate) struct Failure {
    set: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl Failure {
    pub(crate) fn new() -> Self {
        Failure {
            set: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Relaxed)
    }

    pub(crate) fn record(&self, e: Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        self.set.store(true, Relaxed);
    }

    pub(crate) fn into_result(self) -> Result<()> {
        match self.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Runtime {
    /// A builder with default settings.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// Worker threads.
    pub fn threads(&self) -> usize {
        self.pool.threads()
    }

    /// Runs `f` on the runtime's workers: rayon's parallel iterators and
    /// joins inside it use this runtime's threads (for work around a job,
    /// such as a gather after it, that should not start threads of its own).
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }

    /// Reduce partitions: a few per worker, so the reduce tasks balance.
    fn partitions(&self) -> usize {
        match self.threads() {
            1 => 1,
            t => t * 4,
        }
    }

    /// Reduce partitions for the append container: as many as keep each
    /// partition near [`APPEND_PAIRS_PER_PARTITION`] pairs when the sample
    /// predicts the pairs, a power of two, never fewer than
    /// [`Runtime::partitions`].
    fn append_partitions(&self, prediction: Option<&predict::Prediction>) -> usize {
        let pairs = prediction.map_or(0, |p| p.pairs_per_worker * self.threads() as u64);
        let wanted = pairs.div_ceil(APPEND_PAIRS_PER_PARTITION) as usize;
        wanted
            .next_power_of_two()
            .min(MAX_APPEND_PARTITIONS)
            .max(self.partitions())
    }

    /// Runs a job over the input; the output is sorted in the job's order.
    pub fn run<J: Job>(&self, job: &J, input: &Input<'_>) -> Result<Output<J::Key, J::Out>> {
        self.run_with(job, input, &RunOptions::default())
    }

    /// Runs a job with per-run settings.
    pub fn run_with<J: Job>(
        &self,
        job: &J,
        input: &Input<'_>,
        opts: &RunOptions,
    ) -> Result<Output<J::Key, J::Out>> {
        let start = Instant::now();
        let splits = self.plan(input, job.records(), opts)?;
        let mut stats = Stats {
            threads: self.threads(),
            input_bytes: input.len() as u64,
            input_parts: input.parts(),
            splits: splits.len(),
            partitions: self.partitions(),
            split_secs: secs(start.elapsed()),
            ..Stats::default()
        };
        let requested = opts.container.unwrap_or_else(|| job.container());
        let hint = job.keys();
        let dense_ok = J::Key::from_index(0).is_some();
        let dense = match hint {
            KeyHint::Dense(n) => Some(n),
            _ => None,
        };
        if requested == ContainerKind::Array && !(dense.is_some() && dense_ok) {
            return Err(Error::Config(
                "the array container needs a job with dense integer keys (KeyHint::Dense)".into(),
            ));
        }
        if requested == ContainerKind::Unique && hint != KeyHint::Unique {
            return Err(Error::Config(
                "the unique container needs a job that declares unique keys (KeyHint::Unique)"
                    .into(),
            ));
        }

        // Sample when the choice or the sizing depends on it.
        let needs_sample = match requested {
            ContainerKind::Auto => !matches!(
                (hint, dense_ok),
                (KeyHint::Dense(_), true) | (KeyHint::Unique, _)
            ),
            ContainerKind::Hash | ContainerKind::HashTree => true,
            _ => false,
        };
        let sample = if needs_sample && !pipeline::skips_sample(job, opts.mode) {
            predict::sample_splits(&splits, self.threads())
        } else {
            Vec::new()
        };
        let partitions = self.partitions();
        let sample_start = Instant::now();
        let mut sample_tasks: Vec<u64> = Vec::new();
        let (sampled, prediction) = if sample.is_empty() {
            (None, None)
        } else {
            // The sample in pieces, several per worker, so that every
            // worker's history has points to measure how distinct keys grow.
            let total: usize = sample
                .iter()
                .map(|&i| splits[i].end - splits[i].start)
                .sum();
            let piece = total.div_ceil(predict::PIECES_PER_WORKER * self.threads());
            let mut sample_splits: Vec<SplitRange> = Vec::new();
            for &i in &sample {
                let s = splits[i];
                let bytes = &input.part_bytes(s.part)[s.start..s.end];
                plan_slice(bytes, job.records(), piece, |a, b| {
                    sample_splits.push(SplitRange {
                        part: s.part,
                        start: s.start + a,
                        end: s.start + b,
                    })
                });
            }
            let sample_bytes: usize = sample_splits.iter().map(|s| s.end - s.start).sum();
            let fraction = sample_bytes as f64 / input.len().max(1) as f64;
            let (containers, histories) = if J::Combiner::FOLDS {
                let workers = self.map_phase(
                    sample_splits.len(),
                    |i| split_in(input, &sample_splits[i]),
                    |_| {
                        (
                            Counting::new(HashContainer::<J>::new(partitions, INITIAL_CAPACITY)),
                            predict::History::new(),
                        )
                    },
                    |(c, history), _, split| {
                        job.map(split, c);
                        history.push((c.pairs, c.inner.distinct() as u64));
                    },
                )?;
                sample_tasks = workers.iter().map(|w| w.1).collect();
                let (containers, histories): (Vec<_>, Vec<predict::History>) =
                    workers.into_iter().map(|w| w.0).unzip();
                (Some(containers), histories)
            } else {
                // A combiner that keeps values (posting lists) makes the
                // sample's per-key states costly, and the hash container
                // rarely wins for it: count distinct key hashes only, and
                // map the sampled splits again whatever is chosen (measured
                // on the containers bench's unique keys: the hash sample
                // cost 15% of the append run it then redid).
                let workers = self.map_phase(
                    sample_splits.len(),
                    |i| split_in(input, &sample_splits[i]),
                    |_| (Counting::new(KeyHashes::new()), predict::History::new()),
                    |(c, history), _, split| {
                        job.map(split, c);
                        history.push((c.pairs, c.inner.len() as u64));
                    },
                )?;
                let histories: Vec<predict::History> =
                    workers.into_iter().map(|w| w.0 .1).collect();
                (None, histories)
            };
            let prediction = predict::predict(&histories, fraction);
            (containers, Some(prediction))
        };
        stats.sample_secs = secs(sample_start.elapsed());

        let (kind, reason) = match requested {
            ContainerKind::Auto => {
                let unsampled = if input.is_streamed() {
                    "streamed input is not sampled"
                } else {
                    "input too small to sample"
                };
                predict::choose(
                    hint,
                    dense_ok,
                    J::Combiner::FOLDS,
                    prediction.as_ref(),
                    unsampled,
                )
            }
            k => {
                // A forced choice still gets the sample's opinion, so the
                // stats say why a poor choice is slow.
                let mut why = "chosen by the job or the caller".to_string();
                if let Some(p) = &prediction {
                    let (auto, r) =
                        predict::choose(hint, dense_ok, J::Combiner::FOLDS, Some(p), "");
                    if auto != k {
                        why = format!("{why}; Auto would pick {auto} ({r})");
                    }
                }
                (k, why)
            }
        };
        stats.container = kind.name().to_string();
        stats.container_reason = reason;
        stats.predicted_keys_per_worker = prediction.as_ref().map(|p| p.keys_per_worker);
        let predicted = prediction
            .as_ref()
            .map_or(0, |p| p.keys_per_worker as usize);
        let forced = !matches!(opts.container, None | Some(ContainerKind::Auto));
        let (mode, why) = pipeline::choose(job, opts.mode, forced, self.threads(), &prediction);
        (stats.mode, stats.mode_reason) = (mode.name().to_string(), why);
        // The pipelined mode maps in-memory splits; a streamed input is
        // mapped chunk by chunk in barrier mode.
        let pipelined = mode == Mode::Pipelined && !input.is_streamed();
        if mode == Mode::Pipelined && !pipelined {
            stats.mode = Mode::Barrier.name().to_string();
            stats.mode_reason =
                "streamed input: the pipelined mode needs the input in memory".into();
        }
        if pipelined {
            stats.ingest = if input.is_mapped() { "mmap" } else { "memory" }.into();
        }

        // The sample's output is kept only by the hash container and the
        // pipelined mode: the other kinds map every split, the sampled ones
        // included. Kept splits are not mapped again: they count as done.
        if sampled.is_some() && (pipelined || kind == ContainerKind::Hash) {
            let bytes = sample.iter().map(|&i| splits[i].end - splits[i].start);
            add_progress(opts.progress.as_deref(), bytes.sum());
        }
        let runs = if pipelined {
            pipeline::run(
                &self.pool,
                job,
                input,
                (&splits, &sample, sampled),
                (&opts.pipeline, opts.progress.as_deref()),
                &mut stats,
            )?
        } else {
            let rest: Vec<SplitRange> = match &sampled {
                Some(_) if kind == ContainerKind::Hash => splits
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| sample.binary_search(i).is_err())
                    .map(|(_, s)| *s)
                    .collect(),
                _ => splits,
            };
            let source = self.source(input, rest, job.records(), opts)?;
            stats.ingest = source.name(input).into();
            match kind {
                ContainerKind::Hash => {
                    let kept = Mutex::new(sampled.unwrap_or_default());
                    let runs = self.run_in(job, source, &mut stats, |w| {
                        let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                        let mut c = match kept.get_mut(w) {
                            Some(slot) => {
                                std::mem::replace(slot, Counting::new(HashContainer::new(1, 0)))
                            }
                            None => Counting::new(HashContainer::new(partitions, INITIAL_CAPACITY)),
                        };
                        // Room for the prediction, but not more than a few times
                        // what the sample already holds: predictions of skewed
                        // inputs run high, an oversized table costs cache and TLB
                        // misses on every insert, and a short one only grows.
                        let seen = c.inner.distinct().max(INITIAL_CAPACITY);
                        c.inner
                            .reserve(predicted.min(seen * RESERVE_CAP).min(MAX_RESERVED_KEYS));
                        c
                    })?;
                    // The kept sample's pieces were map tasks too, and took the
                    // place of the splits they were cut from.
                    if !sample_tasks.is_empty() {
                        stats.splits += sample_tasks.iter().sum::<u64>() as usize - sample.len();
                        for (t, s) in stats.map_tasks.iter_mut().zip(sample_tasks) {
                            *t += s;
                        }
                    }
                    runs
                }
                ContainerKind::HashTree => self.run_in(job, source, &mut stats, |_| {
                    Counting::new(HashTreeContainer::<J>::new(partitions, predicted))
                })?,
                ContainerKind::Array => {
                    let n = dense.unwrap_or(0);
                    self.run_in(job, source, &mut stats, |_| {
                        Counting::new(ArrayContainer::<J>::new(n, partitions))
                    })?
                }
                ContainerKind::Append => {
                    let pairs = prediction
                        .as_ref()
                        .map_or(0, |p| p.pairs_per_worker as usize);
                    let partitions = self.append_partitions(prediction.as_ref());
                    stats.partitions = partitions;
                    self.run_in(job, source, &mut stats, |_| {
                        Counting::new(AppendContainer::<J>::new(partitions, pairs))
                    })?
                }
                ContainerKind::Unique | ContainerKind::Auto => {
                    self.run_in(job, source, &mut stats, |_| {
                        Counting::new(UniqueContainer::<J>::new(partitions))
                    })?
                }
            }
        };

        // Merge: order the output.
        let merge_start = Instant::now();
        stats.distinct_keys = runs.iter().map(Vec::len).sum::<usize>() as u64;
        let cmp = |a: &(J::Key, J::Out), b: &(J::Key, J::Out)| {
            job.order(a, b).then_with(|| a.0.cmp(&b.0))
        };
        let merge_kind = opts.merge.unwrap_or_default();
        stats.merge = merge_kind;
        let pairs = catch_unwind(AssertUnwindSafe(|| match opts.top {
            Some(k) => merge::top_k(&self.pool, runs, k, cmp),
            None => merge::merge(&self.pool, merge_kind, runs, false, cmp),
        }))
        .map_err(|p| Error::panicked(Phase::Merge, p))?;
        stats.merge_secs = secs(merge_start.elapsed());
        stats.output_pairs = pairs.len() as u64;
        stats.total_secs = secs(start.elapsed());
        Ok(Output { pairs, stats })
    }

    /// The map and reduce phases with one kind of container: each worker
    /// gets its container from `container(worker)`, maps the splits it
    /// pulls, and partition `p` of every container is reduced by one task.
    /// Adds to the stats' counters and times.
    fn run_in<J: Job, C: Container<J>>(
        &self,
        job: &J,
        source: Source<'_, '_>,
        stats: &mut Stats,
        container: impl Fn(usize) -> Counting<C> + Sync,
    ) -> Result<Vec<Run<J>>> {
        let map_start = Instant::now();
        let map_busy = Busy::new(self.threads());
        let workers = self.map_source(source, stats, container, |c, _, split| {
            map_busy.time(|| job.map(split, c))
        })?;
        stats.map_secs = secs(map_start.elapsed());
        stats.map_tasks = workers.iter().map(|w| w.1).collect();
        stats.pairs_emitted = workers.iter().map(|w| w.0.pairs).sum();
        let held: usize = workers.iter().map(|w| w.0.inner.distinct()).sum();
        stats.actual_keys_per_worker = (held / workers.len().max(1)) as u64;

        let reduce_start = Instant::now();
        // Every worker's container has the same partitions.
        let mut columns: Vec<Vec<C::Part>> = Vec::new();
        let n = workers.len();
        for (c, _) in workers {
            for (p, part) in c.inner.into_parts().into_iter().enumerate() {
                if p == columns.len() {
                    columns.push(Vec::with_capacity(n));
                }
                columns[p].push(part);
            }
        }
        let reduce_tasks: Vec<AtomicU64> = (0..self.threads()).map(|_| AtomicU64::new(0)).collect();
        let reduce_busy = Busy::new(self.threads());
        let reduce = |parts| {
            // The calling thread counts as worker 0.
            let w = rayon::current_thread_index().unwrap_or(0);
            reduce_tasks[w].fetch_add(1, Relaxed);
            catch_unwind(AssertUnwindSafe(|| {
                reduce_busy.time(|| C::reduce(job, parts))
            }))
            .map_err(|p| Error::panicked(Phase::Reduce, p))
        };
        let runs: Vec<Result<Run<J>>> = if held <= SMALL_REDUCE && J::Combiner::FOLDS {
            columns.into_iter().map(reduce).collect()
        } else {
            self.pool
                .install(|| columns.into_par_iter().map(reduce).collect())
        };
        let runs = runs.into_iter().collect::<Result<Vec<_>>>()?;
        stats.reduce_tasks = reduce_tasks
            .into_iter()
            .map(AtomicU64::into_inner)
            .collect();
        stats.reduce_secs = secs(reduce_start.elapsed());
        stats.map_busy_secs = map_busy.secs();
        stats.reduce_busy_secs = reduce_busy.secs();
        stats.utilization = pipeline::utilization(
            &[&stats.map_busy_secs, &stats.reduce_busy_secs],
            self.threads(),
            stats.map_secs + stats.reduce_secs,
        );
        Ok(runs)
    }
}

impl Runtime {
    /// Runs a map-only job: map on every worker, no reduce; the output is
    /// every emitted pair (sorted by key unless the job says not to).
    pub fn run_map_only<J: MapOnlyJob>(
        &self,
        job: &J,
        input: &Input<'_>,
        opts: &RunOptions,
    ) -> Result<Output<J::Key, J::Value>> {
        let start = Instant::now();
        let splits = self.plan(input, job.records(), opts)?;
        let splits_len = splits.len();
        let split_done = Instant::now();
        let mut stats = Stats::default();
        let source = self.source(input, splits, job.records(), opts)?;
        stats.ingest = source.name(input).into();
        let busy = Busy::new(self.threads());
        let workers = self.map_source(
            source,
            &mut stats,
            |_| Vec::new(),
            |runs, i, split| {
                let mut out = Vec::new();
                busy.time(|| job.map(split, &mut out));
                runs.push((i, out));
            },
        )?;
        let map_done = Instant::now();

        // Input order first (each split's pairs, splits in order), so that a
        // stable sort by key is deterministic.
        let map_tasks = workers.iter().map(|w| w.1).collect();
        let mut runs: Vec<(usize, Vec<_>)> = workers.into_iter().flat_map(|w| w.0).collect();
        runs.sort_unstable_by_key(|r| r.0);
        let runs: Vec<Vec<_>> = runs.into_iter().map(|r| r.1).collect();
        let merge_kind = opts.merge.unwrap_or_default();
        let pairs = if job.sort_output() {
            // Runs in split order + a stable merge: equal keys keep input order.
            let by_key = |a: &(J::Key, J::Value), b: &(J::Key, J::Value)| a.0.cmp(&b.0);
            merge::merge(&self.pool, merge_kind, runs, true, by_key)
        } else {
            runs.into_iter().flatten().collect()
        };
        let end = Instant::now();
        let streamed = stats.ingest == "chunked";
        let stats = Stats {
            threads: self.threads(),
            input_bytes: if streamed {
                stats.input_bytes
            } else {
                input.len() as u64
            },
            input_parts: input.parts(),
            splits: if streamed { stats.splits } else { splits_len },
            container: "append".into(),
            container_reason: "map-only job: each split's pairs appended to a plain vector \
                               (SMR's array buffer)"
                .into(),
            merge: merge_kind,
            reduce_skipped: true,
            mode: "map_only".into(),
            mode_reason: format!(
                "map-only job: no reduce to overlap or wait for ({} mode asked)",
                opts.mode.unwrap_or_default()
            ),
            utilization: pipeline::utilization(
                &[&busy.secs()],
                self.threads(),
                secs(map_done - split_done),
            ),
            map_busy_secs: busy.secs(),
            split_secs: secs(split_done - start),
            map_secs: secs(map_done - split_done),
            merge_secs: secs(end - map_done),
            total_secs: secs(end - start),
            pairs_emitted: pairs.len() as u64,
            output_pairs: pairs.len() as u64,
            map_tasks,
            ..stats
        };
        Ok(Output { pairs, stats })
    }

    /// The map source of a run: the in-memory splits, or a chunk reader
    /// over the input's streams.
    fn source<'i, 'a>(
        &self,
        input: &'i Input<'a>,
        splits: Vec<SplitRange>,
        records: Records,
        opts: &RunOptions,
    ) -> Result<Source<'i, 'a>> {
        let progress = opts.progress.clone();
        if !input.is_streamed() {
            return Ok(Source {
                feed: Feed::Memory(input, splits),
                progress,
            });
        }
        let chunk_size = opts.chunk_size.unwrap_or(DEFAULT_CHUNK_SIZE);
        let buffers = opts.chunk_buffers.unwrap_or(DEFAULT_CHUNK_BUFFERS);
        if chunk_size == 0 || buffers == 0 {
            return Err(Error::Config(
                "chunk size and chunk buffers must be at least 1".into(),
            ));
        }
        let split_size = opts
            .split_size
            .or(self.split_size)
            .unwrap_or_else(|| default_split_size(chunk_size, self.threads()));
        Ok(Source {
            feed: Feed::Stream {
                reader: ChunkReader::new(input.take_streams()?, records, chunk_size),
                split_size,
                buffers,
            },
            progress,
        })
    }

    /// Cuts the input into splits of the run's, else the runtime's, else a
    /// size fitted to the input.
    fn plan(
        &self,
        input: &Input<'_>,
        records: Records,
        opts: &RunOptions,
    ) -> Result<Vec<SplitRange>> {
        if opts.split_size == Some(0) {
            return Err(Error::Config("split size must be at least 1 byte".into()));
        }
        let split_size = opts
            .split_size
            .or(self.split_size)
            .unwrap_or_else(|| default_split_size(input.len(), self.threads()));
        Ok(plan_splits(input, records, split_size, self.threads()))
    }

    /// The map loop shared by every kind of run: each worker makes its own
    /// state with `new_worker(worker_index)`, then pulls split indices
    /// `0..n` off one atomic counter and calls `map(state, index,
    /// split_at(index))` under `catch_unwind`. Returns each worker's state
    /// and task count, in worker order.
    fn map_phase<'s, W: Send>(
        &self,
        n: usize,
        split_at: impl Fn(usize) -> Split<'s> + Sync,
        new_worker: impl Fn(usize) -> W + Sync,
        map: impl Fn(&mut W, usize, Split<'s>) + Sync,
    ) -> Result<Vec<(W, u64)>> {
        // The next split to hand out; relaxed: it only has to give each
        // index to one worker, and the broadcast's end orders the results.
        let next = AtomicUsize::new(0);
        let failure = Failure::new();
        let workers = self.pool.broadcast(|w| {
            let mut state = new_worker(w);
            let mut tasks = 0;
            while !failure.is_set() {
                let i = next.fetch_add(1, Relaxed);
                if i >= n {
                    break;
                }
                let split = split_at(i);
                if let Err(p) = catch_unwind(AssertUnwindSafe(|| map(&mut state, i, split))) {
                    failure.record(Error::panicked(Phase::Map, p));
                    break;
                }
                tasks += 1;
            }
            (state, tasks)
        });
        failure.into_result()?;
        Ok(workers)
    }

    /// The map loop over a source: in-memory splits, or streamed chunks
    /// (each chunk mapped by every worker into the same per-worker state,
    /// which persists across chunks, while the ingest thread reads the
    /// next). `map` gets a split index that grows in input order.
    fn map_source<W: Send>(
        &self,
        source: Source<'_, '_>,
        stats: &mut Stats,
        new_worker: impl Fn(usize) -> W + Sync,
        map: impl Fn(&mut W, usize, Split<'_>) + Sync,
    ) -> Result<Vec<(W, u64)>> {
        let progress = source.progress.as_deref();
        let map = |w: &mut W, i: usize, split: Split<'_>| {
            let bytes = split.data.len();
            map(w, i, split);
            add_progress(progress, bytes);
        };
        let (reader, target, buffers) = match source.feed {
            Feed::Memory(input, splits) => {
                return self.map_phase(
                    splits.len(),
                    |i| split_in(input, &splits[i]),
                    new_worker,
                    map,
                );
            }
            Feed::Stream {
                reader,
                split_size,
                buffers,
            } => (reader, split_size, buffers),
        };
        let records = reader.records();
        // Counted as chunks arrive (a streamed size may not be known).
        stats.input_bytes = 0;
        let (empty_tx, full_rx) = self.ingest.read(reader, buffers)?;
        let mut workers: Vec<(W, u64)> = Vec::new();
        let mut base = 0;
        let mut capacity = vec![0usize; buffers];
        loop {
            let wait = Instant::now();
            let chunk = full_rx
                .recv()
                .map_err(|_| Error::Config("the ingest thread stopped".into()))??;
            stats.read_wait_secs += secs(wait.elapsed());
            if chunk.segments.is_empty() {
                break;
            }
            let splits = plan_chunk(&chunk, records, target);
            let bytes: usize = chunk.segments.iter().map(|s| s.end - s.start).sum();
            let previous = Mutex::new(std::mem::take(&mut workers));
            let map_start = Instant::now();
            let split_at = |i: usize| {
                let (seg, start, end) = splits[i];
                let seg = chunk.segments[seg];
                Split {
                    data: &chunk.data[start..end],
                    part: seg.part,
                    offset: seg.offset + (start - seg.start) as u64,
                }
            };
            let state = |w: usize| {
                let mut prev = previous.lock().unwrap_or_else(|p| p.into_inner());
                match prev.get_mut(w) {
                    Some(slot) => std::mem::replace(&mut slot.0, new_worker(w)),
                    None => new_worker(w),
                }
            };
            let out = self.map_phase(splits.len(), split_at, state, |st, i, split| {
                map(st, base + i, split)
            })?;
            let prev_tasks: Vec<u64> = previous
                .into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .map(|w| w.1)
                .collect();
            workers = out
                .into_iter()
                .enumerate()
                .map(|(w, (st, t))| (st, t + prev_tasks.get(w).copied().unwrap_or(0)))
                .collect();
            base += splits.len();
            stats.splits += splits.len();
            stats.input_bytes += bytes as u64;
            stats.chunks.push(ChunkStats {
                bytes: bytes as u64,
                read_secs: chunk.read_secs,
                map_secs: secs(map_start.elapsed()),
            });
            stats.read_secs += chunk.read_secs;
            // Buffers are reused round-robin; their largest sizes add up to
            // the input memory in use.
            let slot = (stats.chunks.len() - 1) % buffers;
            capacity[slot] = capacity[slot].max(chunk.data.capacity());
            stats.peak_chunk_bytes = capacity.iter().sum::<usize>() as u64;
            // A failed send means the reader is done: nothing to return.
            let _ = empty_tx.send(chunk);
        }
        Ok(workers)
    }
}

/// Where a run's map input comes from, and the run's progress counter.
struct Source<'i, 'a> {
    feed: Feed<'i, 'a>,
    progress: Option<Arc<AtomicU64>>,
}

/// The input side of a [`Source`].
enum Feed<'i, 'a> {
    /// An in-memory input and the splits to map.
    Memory(&'i Input<'a>, Vec<SplitRange>),
    /// A streamed input, read in chunks.
    Stream {
        reader: ChunkReader,
        split_size: usize,
        buffers: usize,
    },
}

impl Source<'_, '_> {
    /// How the input is read, for the stats.
    fn name(&self, input: &Input<'_>) -> &'static str {
        match self.feed {
            Feed::Stream { .. } => "chunked",
            Feed::Memory(..) if input.is_mapped() => "mmap",
            Feed::Memory(..) => "memory",
        }
    }
}

/// Adds a mapped split's bytes to a run's progress counter, if it has one.
pub(crate) fn add_progress(progress: Option<&AtomicU64>, bytes: usize) {
    if let Some(p) = progress {
        p.fetch_add(bytes as u64, Relaxed);
    }
}

/// The split a range of an in-memory input is.
fn split_in<'s>(input: &'s Input<'_>, s: &SplitRange) -> Split<'s> {
    Split {
        data: &input.part_bytes(s.part)[s.start..s.end],
        part: s.part,
        offset: s.start as u64,
    }
}

/// About 8 splits per worker, so the dynamic schedule can balance, within
/// 64 KiB..4 MiB: small enough to balance, large enough that the per-split
/// overhead is noise.
fn default_split_size(input_len: usize, threads: usize) -> usize {
    (input_len / (threads * 8)).clamp(64 << 10, 4 * DEFAULT_SPLIT_SIZE)
}
