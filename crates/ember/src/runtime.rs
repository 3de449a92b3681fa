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
//! A panic in user code stops the other workers at their next split and
//! comes back as [`Error::Panicked`]; the pool stays usable.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use crate::container::hash::{self, HashContainer};
use crate::error::{Error, Phase, Result};
use crate::input::{plan_splits, Input, SplitRange, DEFAULT_SPLIT_SIZE};
use crate::job::{Emit, Job, MapOnlyJob, Records, Split, StateOf};
use crate::key::Key;
use crate::merge;
use crate::pool::Pool;
use crate::stats::{secs, Stats};

/// Entries each partition table starts with; tables grow by doubling.
const INITIAL_CAPACITY: usize = 1024;

/// A MapReduce runtime: a pool of worker threads and default settings,
/// reused for any number of jobs.
pub struct Runtime {
    pool: Pool,
    split_size: Option<usize>,
}

/// Builds a [`Runtime`].
#[derive(Debug, Clone, Default)]
pub struct RuntimeBuilder {
    threads: Option<usize>,
    split_size: Option<usize>,
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
            pool: Pool::new(threads)?,
            split_size: self.split_size,
        })
    }
}

/// Settings for one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Target split size in bytes (overrides the runtime's).
    pub split_size: Option<usize>,
    /// Return only the first `k` pairs of the output order, found without
    /// sorting the whole output.
    pub top: Option<usize>,
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
struct Failure {
    set: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl Failure {
    fn new() -> Self {
        Failure {
            set: AtomicBool::new(false),
            error: Mutex::new(None),
        }
    }

    fn is_set(&self) -> bool {
        self.set.load(Relaxed)
    }

    fn record(&self, e: Error) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        self.set.store(true, Relaxed);
    }

    fn into_result(self) -> Result<()> {
        match self.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Emits into a worker's hash container.
struct HashEmitter<J: Job> {
    container: HashContainer<J::Key, StateOf<J>>,
    pairs: u64,
}

impl<J: Job> Emit<J::Key, J::Value> for HashEmitter<J> {
    #[inline(always)]
    fn emit(&mut self, key: <J::Key as Key>::Ref<'_>, value: J::Value) {
        self.pairs += 1;
        self.container.insert::<J::Value, J::Combiner>(key, value);
    }

    #[inline(always)]
    fn prefetch(&mut self, key: <J::Key as Key>::Ref<'_>) {
        self.container.prefetch(key);
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
        let threads = self.threads();
        let splits = self.plan(input, job.records(), opts)?;
        let split_done = Instant::now();

        // Map: each worker fills its own container.
        let partitions = if threads == 1 { 1 } else { threads * 4 };
        let workers = self.map_phase(
            input,
            &splits,
            || HashEmitter::<J> {
                container: HashContainer::new(partitions, INITIAL_CAPACITY),
                pairs: 0,
            },
            |emitter, _, split| job.map(split, emitter),
        )?;
        let map_done = Instant::now();

        // Reduce: partition p of every worker, joined and reduced by one task.
        let map_tasks = workers.iter().map(|w| w.1).collect();
        let pairs_emitted = workers.iter().map(|w| w.0.pairs).sum();
        let mut columns: Vec<Vec<_>> = (0..partitions)
            .map(|_| Vec::with_capacity(threads))
            .collect();
        for (w, _) in workers {
            for (p, table) in w.container.into_partitions().into_iter().enumerate() {
                columns[p].push(table);
            }
        }
        let reduce_tasks: Vec<AtomicU64> = (0..threads).map(|_| AtomicU64::new(0)).collect();
        let runs: Vec<Result<Run<J>>> = self.pool.install(|| {
            columns
                .into_par_iter()
                .map(|tables| {
                    if let Some(w) = rayon::current_thread_index() {
                        reduce_tasks[w].fetch_add(1, Relaxed);
                    }
                    catch_unwind(AssertUnwindSafe(|| {
                        hash::join::<J::Key, J::Value, J::Combiner>(tables)
                            .into_iter()
                            .map(|(k, s)| {
                                let out = job.reduce(&k, s);
                                (k, out)
                            })
                            .collect()
                    }))
                    .map_err(|p| Error::panicked(Phase::Reduce, p))
                })
                .collect()
        });
        let runs = runs.into_iter().collect::<Result<Vec<_>>>()?;
        let reduce_done = Instant::now();

        // Merge: order the output.
        let distinct_keys = runs.iter().map(Vec::len).sum::<usize>() as u64;
        let cmp = |a: &(J::Key, J::Out), b: &(J::Key, J::Out)| {
            job.order(a, b).then_with(|| a.0.cmp(&b.0))
        };
        let pairs = catch_unwind(AssertUnwindSafe(|| match opts.top {
            Some(k) => merge::top_k(&self.pool, runs, k, cmp),
            None => merge::sort_all(&self.pool, runs, cmp),
        }))
        .map_err(|p| Error::panicked(Phase::Merge, p))?;
        let end = Instant::now();

        let stats = Stats {
            threads,
            input_bytes: input.len() as u64,
            input_parts: input.parts(),
            splits: splits.len(),
            partitions,
            container: "hash".into(),
            reduce_skipped: false,
            split_secs: secs(split_done - start),
            map_secs: secs(map_done - split_done),
            reduce_secs: secs(reduce_done - map_done),
            merge_secs: secs(end - reduce_done),
            total_secs: secs(end - start),
            pairs_emitted,
            distinct_keys,
            output_pairs: pairs.len() as u64,
            map_tasks,
            reduce_tasks: reduce_tasks
                .into_iter()
                .map(AtomicU64::into_inner)
                .collect(),
        };
        Ok(Output { pairs, stats })
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
        let split_done = Instant::now();
        let workers = self.map_phase(input, &splits, Vec::new, |runs, i, split| {
            let mut out = Vec::new();
            job.map(split, &mut out);
            runs.push((i, out));
        })?;
        let map_done = Instant::now();

        // Input order first (each split's pairs, splits in order), so that a
        // stable sort by key is deterministic.
        let map_tasks = workers.iter().map(|w| w.1).collect();
        let mut runs: Vec<(usize, Vec<_>)> = workers.into_iter().flat_map(|w| w.0).collect();
        runs.sort_unstable_by_key(|r| r.0);
        let runs: Vec<Vec<_>> = runs.into_iter().map(|r| r.1).collect();
        let mut pairs = Vec::with_capacity(runs.iter().map(Vec::len).sum());
        for run in runs {
            pairs.extend(run);
        }
        if job.sort_output() {
            self.pool
                .install(|| pairs.par_sort_by(|a, b| a.0.cmp(&b.0)));
        }
        let end = Instant::now();
        let stats = Stats {
            threads: self.threads(),
            input_bytes: input.len() as u64,
            input_parts: input.parts(),
            splits: splits.len(),
            container: "append".into(),
            reduce_skipped: true,
            split_secs: secs(split_done - start),
            map_secs: secs(map_done - split_done),
            merge_secs: secs(end - map_done),
            total_secs: secs(end - start),
            pairs_emitted: pairs.len() as u64,
            output_pairs: pairs.len() as u64,
            map_tasks,
            ..Stats::default()
        };
        Ok(Output { pairs, stats })
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
        Ok(plan_splits(input, records, split_size))
    }

    /// The map loop shared by every kind of run: each worker makes its own
    /// state with `new_worker`, then pulls split indices off one atomic
    /// counter and calls `map(state, split_index, split)` under
    /// `catch_unwind`. Returns each worker's state and task count, in worker
    /// order.
    fn map_phase<W: Send>(
        &self,
        input: &Input<'_>,
        splits: &[SplitRange],
        new_worker: impl Fn() -> W + Sync,
        map: impl Fn(&mut W, usize, Split<'_>) + Sync,
    ) -> Result<Vec<(W, u64)>> {
        let next = AtomicUsize::new(0);
        let failure = Failure::new();
        let workers = self.pool.broadcast(|_| {
            let mut state = new_worker();
            let mut tasks = 0;
            while !failure.is_set() {
                let i = next.fetch_add(1, Relaxed);
                let Some(s) = splits.get(i) else { break };
                let split = Split {
                    data: &input.part_bytes(s.part)[s.start..s.end],
                    part: s.part,
                    offset: s.start as u64,
                };
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
}

/// About 8 splits per worker, so the dynamic schedule can balance, within
/// 64 KiB..4 MiB: small enough to balance, large enough that the per-split
/// overhead is noise.
fn default_split_size(input_len: usize, threads: usize) -> usize {
    (input_len / (threads * 8)).clamp(64 << 10, 4 * DEFAULT_SPLIT_SIZE)
}
