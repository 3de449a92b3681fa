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
use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;

use crate::container::append::AppendContainer;
use crate::container::array::ArrayContainer;
use crate::container::hash::HashContainer;
use crate::container::hash_tree::HashTreeContainer;
use crate::container::unique::UniqueContainer;
use crate::container::{Container, ContainerKind, Counting, KeyHint};
use crate::error::{Error, Phase, Result};
use crate::input::{plan_splits, Input, SplitRange, DEFAULT_SPLIT_SIZE};
use crate::job::{Job, MapOnlyJob, Records, Split};
use crate::key::Key;
use crate::merge;
use crate::pipeline::{self, Busy, Mode, PipelineOptions};
use crate::pool::Pool;
use crate::predict;
use crate::stats::{secs, Stats};

/// Keys each partition table starts with; tables grow by doubling.
const INITIAL_CAPACITY: usize = 1024;
/// A prediction never reserves more than this many keys per worker up front
/// (tables still grow past it if needed).
const MAX_RESERVED_KEYS: usize = 1 << 24;

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
    /// Force an intermediate container (overrides the job's choice).
    pub container: Option<ContainerKind>,
    /// Barrier or pipelined map and reduce (default: [`Mode::Auto`]).
    pub mode: Option<Mode>,
    /// Buffer size and memory bound of the pipelined mode.
    pub pipeline: PipelineOptions,
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

    /// Reduce partitions: a few per worker, so the reduce tasks balance.
    fn partitions(&self) -> usize {
        match self.threads() {
            1 => 1,
            t => t * 4,
        }
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
            let sample_splits: Vec<SplitRange> = sample.iter().map(|&i| splits[i]).collect();
            let workers = self.map_phase(
                input,
                &sample_splits,
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
            let sample_bytes: usize = sample_splits.iter().map(|s| s.end - s.start).sum();
            let fraction = sample_bytes as f64 / input.len().max(1) as f64;
            let histories: Vec<_> = workers.iter().map(|w| w.0 .1.clone()).collect();
            sample_tasks = workers.iter().map(|w| w.1).collect();
            let prediction = predict::predict(&histories, fraction);
            let containers: Vec<_> = workers.into_iter().map(|w| w.0 .0).collect();
            (Some(containers), Some(prediction))
        };
        stats.sample_secs = secs(sample_start.elapsed());

        let (kind, reason) = match requested {
            ContainerKind::Auto => predict::choose(hint, dense_ok, prediction.as_ref()),
            k => (k, "chosen by the job or the caller".to_string()),
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
        let pipelined = mode == Mode::Pipelined;

        // The sample's output is kept only by the hash container: the other
        // kinds map every split, the sampled ones included.
        let rest: Vec<SplitRange> = match &sampled {
            Some(_) if kind == ContainerKind::Hash => splits
                .iter()
                .enumerate()
                .filter(|(i, _)| sample.binary_search(i).is_err())
                .map(|(_, s)| *s)
                .collect(),
            _ => splits.clone(),
        };
        let runs = match kind {
            _ if pipelined => pipeline::run(
                &self.pool,
                job,
                input,
                (&splits, &sample, sampled),
                &opts.pipeline,
                &mut stats,
            )?,
            ContainerKind::Hash => {
                let kept = Mutex::new(sampled.unwrap_or_default());
                let runs = self.run_in(job, input, &rest, &mut stats, |w| {
                    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                    let mut c = match kept.get_mut(w) {
                        Some(slot) => {
                            std::mem::replace(slot, Counting::new(HashContainer::new(1, 0)))
                        }
                        None => Counting::new(HashContainer::new(partitions, INITIAL_CAPACITY)),
                    };
                    c.inner.reserve(predicted.min(MAX_RESERVED_KEYS));
                    c
                })?;
                // The kept sample's splits were map tasks too.
                for (t, s) in stats.map_tasks.iter_mut().zip(sample_tasks) {
                    *t += s;
                }
                runs
            }
            ContainerKind::HashTree => self.run_in(job, input, &rest, &mut stats, |_| {
                Counting::new(HashTreeContainer::<J>::new(partitions, predicted))
            })?,
            ContainerKind::Array => {
                let n = dense.unwrap_or(0);
                self.run_in(job, input, &rest, &mut stats, |_| {
                    Counting::new(ArrayContainer::<J>::new(n, partitions))
                })?
            }
            ContainerKind::Append => self.run_in(job, input, &rest, &mut stats, |_| {
                Counting::new(AppendContainer::<J>::new(partitions))
            })?,
            ContainerKind::Unique | ContainerKind::Auto => {
                self.run_in(job, input, &rest, &mut stats, |_| {
                    Counting::new(UniqueContainer::<J>::new(partitions))
                })?
            }
        };

        // Merge: order the output.
        let merge_start = Instant::now();
        stats.distinct_keys = runs.iter().map(Vec::len).sum::<usize>() as u64;
        let cmp = |a: &(J::Key, J::Out), b: &(J::Key, J::Out)| {
            job.order(a, b).then_with(|| a.0.cmp(&b.0))
        };
        let pairs = catch_unwind(AssertUnwindSafe(|| match opts.top {
            Some(k) => merge::top_k(&self.pool, runs, k, cmp),
            None => merge::sort_all(&self.pool, runs, cmp),
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
        input: &Input<'_>,
        splits: &[SplitRange],
        stats: &mut Stats,
        container: impl Fn(usize) -> Counting<C> + Sync,
    ) -> Result<Vec<Run<J>>> {
        let map_start = Instant::now();
        let map_busy = Busy::new(self.threads());
        let workers = self.map_phase(input, splits, container, |c, _, split| {
            map_busy.time(|| job.map(split, c))
        })?;
        stats.map_secs = secs(map_start.elapsed());
        stats.map_tasks = workers.iter().map(|w| w.1).collect();
        stats.pairs_emitted = workers.iter().map(|w| w.0.pairs).sum();
        let held: usize = workers.iter().map(|w| w.0.inner.distinct()).sum();
        stats.actual_keys_per_worker = (held / workers.len().max(1)) as u64;

        let reduce_start = Instant::now();
        let mut columns: Vec<Vec<C::Part>> = (0..self.partitions())
            .map(|_| Vec::with_capacity(workers.len()))
            .collect();
        for (c, _) in workers {
            for (p, part) in c.inner.into_parts().into_iter().enumerate() {
                columns[p].push(part);
            }
        }
        let reduce_tasks: Vec<AtomicU64> = (0..self.threads()).map(|_| AtomicU64::new(0)).collect();
        let reduce_busy = Busy::new(self.threads());
        let runs: Vec<Result<Run<J>>> = self.pool.install(|| {
            columns
                .into_par_iter()
                .map(|parts| {
                    if let Some(w) = rayon::current_thread_index() {
                        reduce_tasks[w].fetch_add(1, Relaxed);
                    }
                    catch_unwind(AssertUnwindSafe(|| {
                        reduce_busy.time(|| C::reduce(job, parts))
                    }))
                    .map_err(|p| Error::panicked(Phase::Reduce, p))
                })
                .collect()
        });
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
        let split_done = Instant::now();
        let busy = Busy::new(self.threads());
        let workers = self.map_phase(
            input,
            &splits,
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
    /// state with `new_worker(worker_index)`, then pulls split indices off one atomic
    /// counter and calls `map(state, split_index, split)` under
    /// `catch_unwind`. Returns each worker's state and task count, in worker
    /// order.
    fn map_phase<W: Send>(
        &self,
        input: &Input<'_>,
        splits: &[SplitRange],
        new_worker: impl Fn(usize) -> W + Sync,
        map: impl Fn(&mut W, usize, Split<'_>) + Sync,
    ) -> Result<Vec<(W, u64)>> {
        let next = AtomicUsize::new(0);
        let failure = Failure::new();
        let workers = self.pool.broadcast(|w| {
            let mut state = new_worker(w);
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
