//! The runtime: built once, runs many jobs. One run reads top to bottom:
//!
//! 1. **split**: the input is cut into splits at record boundaries;
//! 2. **sample**: when the container choice or its sizing depends on the
//!    keys, `map` runs on a sample of the splits (`sample`);
//! 3. **plan**: every decision is made once, into the typed [`Plan`] the
//!    stats report (`plan`);
//! 4. **map and reduce**: with the barrier (`barrier`, over the containers
//!    `container::build` makes) or pipelined (`pipeline`);
//! 5. **merge**: the reduce runs are ordered, or only the top k selected
//!    (`merge`).
//!
//! A panic in user code stops the other workers at their next split and
//! comes back as [`Error::Panicked`]; the pool stays usable.

use std::path::PathBuf;
use std::time::Instant;

use crate::barrier::{Barrier, Each, Memory, Reduced, Run};
use crate::busy::{utilization, Busy};
use crate::container::partitioned::Shape;
use crate::container::{self, Sizing};
use crate::error::{Error, Phase, Result};
use crate::ingest::{
    ChunkReader, IngestThread, Stripes, DEFAULT_CHUNK_BUFFERS, DEFAULT_CHUNK_SIZE,
};
use crate::input::{plan_splits, Input, SplitRange};
use crate::job::{ContainerKind, Job, KeyHint, MapOnlyJob, OutputOrder, Records, StateOf};
use crate::memory::Budget;
use crate::merge;
use crate::options::RunOptions;
use crate::pipeline;
use crate::plan::{
    Aggregation, AggregationReason, ContainerReason, ModeReason, Plan, Request, RunMode,
};
use crate::pool::{Locality, Pool, Topology};
use crate::progress::Watch;
use crate::record_sort::{self, RecordShape};
use crate::sample::{self, Sample};
use crate::schedule::{default_split_size, map_source, Pages, Source, Team};
use crate::spill;
use crate::stats::{secs, Stats};
use crate::trace::{Args, SpanKind, Track};
use crate::unwind;

/// A MapReduce runtime: a pool of worker threads and default settings,
/// reused for any number of jobs.
pub struct Runtime {
    pool: Pool,
    ingest: IngestThread,
    split_size: Option<usize>,
    memory_limit: Option<u64>,
    spill_dir: Option<PathBuf>,
    isolation: Isolation,
    worker_retries: u32,
}

/// Where a runtime's runs map and reduce
/// ([`RuntimeBuilder::isolation`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Isolation {
    /// On the runtime's threads, in this process.
    #[default]
    Threads,
    /// In worker processes, a split or a key range each, so that a job
    /// that crashes costs a retry of its task, not the run
    /// ([`crate::isolate`]). The workers are this program re-executed and
    /// find their job by name: only a job of a
    /// [`Registry`](crate::stream::Registry) runs so
    /// ([`Runtime::run_registered`]), and the program's `main` calls
    /// [`worker_hook`](crate::isolate::worker_hook) first thing.
    Processes,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("threads", &self.threads())
            .field("split_size", &self.split_size)
            .field("memory_limit", &self.memory_limit)
            .field("spill_dir", &self.spill_dir)
            .field("isolation", &self.isolation)
            .finish()
    }
}

/// Builds a [`Runtime`].
#[derive(Debug, Clone, Default)]
pub struct RuntimeBuilder {
    threads: Option<usize>,
    split_size: Option<usize>,
    pin: bool,
    memory_limit: Option<u64>,
    spill_dir: Option<PathBuf>,
    topology: Option<Topology>,
    locality: Locality,
    on_caller: bool,
    isolation: Isolation,
    worker_retries: Option<u32>,
}

impl RuntimeBuilder {
    /// Worker threads (default: the number of CPUs).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = Some(n);
        self
    }

    /// One worker, which is the thread that calls [`build`](Self::build):
    /// no thread is started, and every phase of every run maps, reduces
    /// and merges on that thread (for a run too small to repay starting
    /// one, such as a command's one job over a small input). The runtime
    /// must be used from that thread only: a run from another thread
    /// panics. That thread stays one of the pool's after the runtime is
    /// dropped (rayon's `use_current_thread`), so it cannot build a second
    /// such runtime ([`Error::Config`]), and rayon's global pool, used
    /// from it, runs on it alone. A thread count other than one is
    /// refused.
    pub fn on_caller(mut self) -> Self {
        self.on_caller = true;
        self
    }

    /// Default target split size in bytes for this runtime's runs (default:
    /// sized from the input, between 64 KiB and 4 MiB).
    pub fn split_size(mut self, bytes: usize) -> Self {
        self.split_size = Some(bytes);
        self
    }

    /// Pin worker `i` to the `i`-th CPU the process may use, counted node
    /// by node (Linux; only with two or more workers and no more than
    /// those CPUs). Default: no, the OS scheduler places the workers (on
    /// two or more NUMA nodes, within their node's CPUs). Pinning is for a machine or
    /// cpuset given to this runtime alone: every pinned runtime takes the
    /// first allowed CPUs, so two of them share those and leave the rest.
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// Default memory budget in bytes for this runtime's runs (default:
    /// derived from the machine, see
    /// [`default_memory_limit`](crate::tune::default_memory_limit); a run's
    /// [`RunOptions::memory_limit`] overrides it).
    pub fn memory_limit(mut self, bytes: u64) -> Self {
        self.memory_limit = Some(bytes);
        self
    }

    /// Default directory for this runtime's spill files (default: the
    /// system's temporary directory; a run's [`RunOptions::spill_dir`]
    /// overrides it).
    pub fn spill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spill_dir = Some(dir.into());
        self
    }

    /// The NUMA nodes to place the workers on (default: the machine's,
    /// [`Topology::detect`]). Workers fill one node's CPUs before the next
    /// node's; on two or more nodes each split is queued to the node that
    /// holds its data and workers steal from other nodes only when their
    /// own queue is empty (see `docs/numa.md`). One node schedules as if
    /// there were no topology.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// How splits are handed out on two or more nodes (default:
    /// [`Locality::Aware`]; [`Locality::Blind`] is for comparison).
    pub fn locality(mut self, locality: Locality) -> Self {
        self.locality = locality;
        self
    }

    /// Where runs map and reduce (default: [`Isolation::Threads`]). A
    /// runtime with [`Isolation::Processes`] runs jobs of a registry by
    /// name ([`Runtime::run_registered`]); a [`Job`] value has no name a
    /// worker process could find it by, so running one is an
    /// [`Error::Config`].
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = isolation;
        self
    }

    /// With [`Isolation::Processes`]: further attempts of a task whose
    /// worker process died (default 1).
    pub fn worker_retries(mut self, retries: u32) -> Self {
        self.worker_retries = Some(retries);
        self
    }

    /// Starts the worker threads.
    pub fn build(self) -> Result<Runtime> {
        let threads = match (self.threads, self.on_caller) {
            (Some(0), _) => return Err(Error::Config("threads must be at least 1".into())),
            (Some(1) | None, true) => 1,
            (Some(n), true) => {
                return Err(Error::Config(format!(
                    "a runtime on the calling thread has one worker, not {n}"
                )))
            }
            (Some(n), false) => n,
            (None, false) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if self.split_size == Some(0) {
            return Err(Error::Config("split size must be at least 1 byte".into()));
        }
        let topology = self.topology.unwrap_or_else(Topology::detect);
        let pool = match self.on_caller {
            true => Pool::on_caller(topology, self.locality)?,
            false => Pool::on(threads, self.pin, topology, self.locality)?,
        };
        Ok(Runtime {
            pool,
            ingest: IngestThread::new(),
            split_size: self.split_size,
            memory_limit: self.memory_limit,
            spill_dir: self.spill_dir,
            isolation: self.isolation,
            worker_retries: self.worker_retries.unwrap_or(1),
        })
    }
}

/// The result of a run: the output pairs in order, and the stats.
#[derive(Debug)]
pub struct Output<K, O> {
    /// `(key, output)` pairs, in the job's order.
    pub pairs: Vec<(K, O)>,
    /// Where the time went.
    pub stats: Stats,
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

    /// The NUMA nodes the workers are placed on.
    pub fn topology(&self) -> &Topology {
        self.pool.topology()
    }

    /// Where this runtime's runs map and reduce.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// With [`Isolation::Processes`]: further attempts of a task whose
    /// worker process died.
    pub(crate) fn worker_retries(&self) -> u32 {
        self.worker_retries
    }

    /// The runtime's default split size, if it was given one.
    pub(crate) fn default_split_size(&self) -> Option<usize> {
        self.split_size
    }

    /// The runtime's memory limit and spill directory, where it was given
    /// them.
    pub(crate) fn memory_settings(&self) -> (Option<u64>, Option<&PathBuf>) {
        (self.memory_limit, self.spill_dir.as_ref())
    }

    /// An error unless this runtime maps on its threads: a [`Job`] value
    /// cannot run in worker processes.
    fn in_threads(&self) -> Result<()> {
        match self.isolation {
            Isolation::Threads => Ok(()),
            Isolation::Processes => Err(Error::Config(
                "a runtime built with Isolation::Processes runs jobs of a registry by name \
                 (Runtime::run_registered): its worker processes are this program \
                 re-executed, and a Job value has no name to find it by"
                    .into(),
            )),
        }
    }

    /// Runs `f` on the runtime's workers: rayon's parallel iterators and
    /// joins inside it use this runtime's threads (for work around a job,
    /// such as a gather after it, that should not start threads of its own).
    pub fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.pool.install(f)
    }

    /// Drops `input`, its mapped files' pages let go on every worker at
    /// once first. Unmapping a large file that was read whole is kernel
    /// work on one thread (its page tables), a serial step after the run;
    /// here each worker drops a stripe's pages in parallel and the unmap
    /// that follows has little left to do (Phoenix 2 keeps the OS's work
    /// off the serial path). Dropping the input works too, on one thread.
    pub fn release(&self, input: Input<'_>) {
        #[cfg(unix)]
        if input.is_mapped() && self.threads() > 1 {
            let n = self.threads();
            self.pool.broadcast(|k| input.release_stripe(k, n));
        }
        drop(input);
    }

    /// Sorts fixed-size records by a key of their first bytes (`shape`)
    /// and writes them to `out` in order, equal keys in input order: an
    /// external sort within the run's memory budget
    /// ([`RunOptions::memory_limit`], else the runtime's, else the
    /// machine's default). The input is cut into runs that a worker's
    /// share of the budget holds; each is sorted and, unless every record
    /// fits the budget, written to the spill directory as raw records (a
    /// mapped input's pages of the run let go); the runs are then merged
    /// in key ranges on the workers while the ranges merged before are
    /// written (see `docs/runtime.md`). The spill files are removed at the
    /// end, on an error too.
    ///
    /// `input` is one part held in memory or mapped (a streamed input is
    /// [`Error::Config`]); bytes that are not whole records, or more than
    /// 2^32 records, are [`Error::InvalidInput`]; a spill file that cannot
    /// be written or read is [`Error::Spill`], a failed write to `out`
    /// [`Error::Output`], and a mapped file that changed during the sort
    /// [`Error::InputChanged`] (after its records were written: write to a
    /// file that is kept only on success).
    pub fn sort_records(
        &self,
        input: &Input<'_>,
        shape: RecordShape,
        opts: &RunOptions,
        out: &mut dyn std::io::Write,
    ) -> Result<Stats> {
        self.sort_records_into(input, shape, opts, record_sort::Out::Stream(out))
    }

    /// [`Runtime::sort_records`] into a regular file, from its current
    /// position on: each worker writes the key ranges it merges at their
    /// offsets (`pwrite`), rather than the calling thread writing them all
    /// in order; the file's position is left after the records. `out` must
    /// not be opened for appending ([`Error::Config`]: an appending write
    /// ignores its offset).
    pub fn sort_records_to_file(
        &self,
        input: &Input<'_>,
        shape: RecordShape,
        opts: &RunOptions,
        out: &std::fs::File,
    ) -> Result<Stats> {
        use std::io::{Seek, SeekFrom};
        if appends(out) {
            return Err(Error::Config(
                "sorted records are written at offsets: the output file must not be opened for appending"
                    .into(),
            ));
        }
        let mut file = out;
        let base = file.stream_position().map_err(Error::Output)?;
        let stats =
            self.sort_records_into(input, shape, opts, record_sort::Out::File { file, base })?;
        file.seek(SeekFrom::Start(base + stats.input_bytes))
            .map_err(Error::Output)?;
        Ok(stats)
    }

    /// Checks the input and runs the record sort into `out`.
    fn sort_records_into(
        &self,
        input: &Input<'_>,
        shape: RecordShape,
        opts: &RunOptions,
        out: record_sort::Out<'_>,
    ) -> Result<Stats> {
        if input.parts() != 1 || input.is_streamed() {
            return Err(Error::Config(format!(
                "sorting records reads one file held in memory or mapped, not {} {}",
                input.parts(),
                if input.is_streamed() {
                    "streamed parts"
                } else {
                    "parts"
                }
            )));
        }
        let memory = self.memory(opts, 0)?;
        let sort = record_sort::Sort {
            data: input.part_bytes(0),
            input,
            shape,
            budget: memory.budget,
            dir: spill::SpillDir::under(memory.dir),
            threads: self.threads(),
            pool: &self.pool,
        };
        sort.run(out)
    }

    /// Runs a job over the input; the output is sorted in the job's order.
    pub fn run<J: Job>(&self, job: &J, input: &Input<'_>) -> Result<Output<J::Key, J::Out>> {
        self.run_with(job, input, &RunOptions::default())
    }

    /// Runs a job with per-run settings.
    ///
    /// A file of the input that changes while the run reads it (truncated,
    /// grown or rewritten by another process) fails the run with
    /// [`Error::InputChanged`], whatever else went wrong: a mapped page cut
    /// off the file reads as zeros, never as a crash or a partial output.
    pub fn run_with<J: Job>(
        &self,
        job: &J,
        input: &Input<'_>,
        opts: &RunOptions,
    ) -> Result<Output<J::Key, J::Out>> {
        let out = self.run_job(job, input, opts, None);
        input.check_unchanged()?;
        out
    }

    /// Runs a job and hands its output to `each`, one key at a time in key
    /// order (not [`Job::order`]), instead of collecting it: a run whose
    /// intermediate data spilled to disk
    /// ([`RunOptions::memory_limit`]) cuts its runs into key ranges,
    /// merges and reduces a few ranges at a time on the workers, and hands
    /// each range's keys over on the calling thread in key order, so that
    /// the output is never all held in memory (an external sort writes its
    /// output this way). A run that did not
    /// spill reduces as [`Runtime::run_with`] does, then hands its sorted
    /// output over. The first error `each` returns stops the run and is
    /// returned. Returns the run's stats; `opts.top` is refused
    /// ([`Error::Config`]).
    ///
    /// An input that changes while it is read fails the run as in
    /// [`Runtime::run_with`]; keys may have been handed over by then.
    pub fn run_each<J: Job>(
        &self,
        job: &J,
        input: &Input<'_>,
        opts: &RunOptions,
        mut each: impl FnMut(J::Key, J::Out) -> Result<()>,
    ) -> Result<Stats> {
        if opts.top.is_some() {
            return Err(Error::Config(
                "a run that hands its output over key by key cannot select a top k".into(),
            ));
        }
        let out = self.run_job(job, input, opts, Some(&mut each));
        input.check_unchanged()?;
        Ok(out?.stats)
    }

    /// [`Runtime::run_with`] (or [`Runtime::run_each`], with `each`),
    /// before the input is checked.
    fn run_job<J: Job>(
        &self,
        job: &J,
        input: &Input<'_>,
        opts: &RunOptions,
        mut each: Option<Each<'_, J>>,
    ) -> Result<Output<J::Key, J::Out>> {
        self.in_threads()?;
        let start = Instant::now();
        let watch = opts.watch();
        watch.start(input.known_len());
        let request = Request::new(job, &opts.asked(), self.threads())?;
        let splits = self.split(input, job.records(), opts)?;
        let mut stats = self.stats_of(input, splits.len(), start);

        let tight = match opts.memory_limit.or(self.memory_limit) {
            Some(limit) => limit < input.len() as u64 / 4,
            None => false,
        };
        let sample = match request.needs_sample() && !tight {
            true => {
                let _phase = watch.phase(Phase::Sample);
                let team = Team {
                    pool: &self.pool,
                    watch,
                };
                sample::run(team, job, input, &splits, request.partitions())?
            }
            false => Sample::none(),
        };
        let ingest = Request::ingest(input);
        let plan = request.decide(sample.prediction.as_ref(), ingest, tight);
        stats.sample_secs = sample.secs;
        stats.predicted_keys_per_worker = sample.prediction.as_ref().map(|p| p.keys_per_worker);
        stats.plan = plan.clone();

        let sampled = Sampled {
            job,
            input,
            splits,
            sample,
        };
        let reduced = match plan.mode {
            RunMode::Pipelined => Reduced::Runs(self.pipelined(sampled, opts, &mut stats)?),
            _ => {
                // A reborrow, for the barrier's lifetime only.
                let each = each.as_deref_mut().map(|e| e as Each<'_, J>);
                self.barrier(sampled, &plan, opts, each, &mut stats)?
            }
        };
        let pairs = match reduced {
            Reduced::Runs(runs) => self.merge(job, runs, opts, &mut stats, each)?,
            Reduced::Handed(keys) => {
                stats.distinct_keys = keys;
                stats.output_pairs = keys;
                Vec::new()
            }
        };
        stats.total_secs = secs(start.elapsed());
        trace_run(watch, start, &stats);
        Ok(Output { pairs, stats })
    }

    /// The stats of a run so far: the runtime and the input.
    fn stats_of(&self, input: &Input<'_>, splits: usize, start: Instant) -> Stats {
        Stats {
            threads: self.threads(),
            input_bytes: input.len() as u64,
            input_parts: input.parts(),
            splits,
            split_secs: secs(start.elapsed()),
            ..Stats::default()
        }
    }

    /// The barrier mode's map and reduce, with the plan's container. The
    /// hash container keeps the sample's work (its splits count as mapped);
    /// the others map every split.
    fn barrier<J: Job>(
        &self,
        sampled: Sampled<'_, '_, '_, J>,
        plan: &Plan,
        opts: &RunOptions,
        each: Option<Each<'_, J>>,
        stats: &mut Stats,
    ) -> Result<Reduced<J>> {
        let Sampled {
            job,
            input,
            splits,
            sample,
        } = sampled;
        let keep = plan.container == ContainerKind::Hash && sample.kept.is_some();
        let (splits, kept) = match keep {
            true => {
                stats.sample_kept_bytes = sample.bytes(&splits) as u64;
                opts.watch().mapped(stats.sample_kept_bytes as usize);
                (sample.rest(&splits), sample.kept.unwrap_or_default())
            }
            false => (splits, Vec::new()),
        };
        let prediction = sample.prediction.as_ref();
        let source = self.source(input, splits, job.records(), opts)?;
        let memory = self.memory(opts, input_buffers(&source, self.threads()))?;
        // A table reserved past the budget would spill at once: at most
        // the keys whose entries (at half load) fit in a worker's share.
        let entry = std::mem::size_of::<(J::Key, StateOf<J>)>().max(1);
        let share = memory.budget.share(memory.reserved, self.threads());
        let share_entries = share / entry;
        let fit = share_entries / 2;
        let partitioned = (plan.aggregation == Aggregation::Partitioned)
            .then(|| Shape::new::<J::Key, StateOf<J>>(plan.partitions, &opts.partitioned, share));
        let sizing = Sizing {
            partitions: plan.partitions,
            workers: self.threads(),
            dense: match job.keys() {
                KeyHint::Dense(n) => n,
                _ => 0,
            },
            keys: prediction.map_or(0, |p| (p.keys_per_worker as usize).min(fit)),
            pairs: prediction.map_or(0, |p| p.pairs_per_worker as usize),
            share_entries,
            partitioned,
        };
        let combiner = job.combiner();
        let barrier = Barrier {
            pool: &self.pool,
            ingest: &self.ingest,
            job,
            combiner: &combiner,
            memory,
            source,
            watch: opts.watch(),
            stats: &mut *stats,
            each: each.map(|e| e as Each<'_, J>),
        };
        let runs = container::build(plan.container, sizing, &combiner, kept, barrier)?;
        if keep {
            // The kept sample's pieces were map tasks too, and took the
            // place of the splits they were cut from.
            stats.splits += sample.tasks.iter().sum::<u64>() as usize - sample.splits.len();
            for (t, s) in stats.map_tasks.iter_mut().zip(&sample.tasks) {
                *t += s;
            }
        }
        Ok(runs)
    }

    /// A run's memory budget and spill directory: the run's settings, else
    /// the runtime's, else the defaults; `reserved` bytes of the budget
    /// are taken by buffers (a streamed run's input buffers).
    fn memory(&self, opts: &RunOptions, reserved: u64) -> Result<Memory> {
        let dir = opts.spill_dir.as_ref().or(self.spill_dir.as_ref());
        if let Some(dir) = dir {
            spill::check_dir(dir)?;
        }
        Ok(Memory {
            budget: Budget::new(opts.memory_limit.or(self.memory_limit)),
            dir: dir.cloned().unwrap_or_else(spill::default_dir),
            reserved,
        })
    }

    /// The pipelined mode's map and reduce; a kept sample is sent to the
    /// reducers, not mapped again.
    fn pipelined<J: Job>(
        &self,
        sampled: Sampled<'_, '_, '_, J>,
        opts: &RunOptions,
        stats: &mut Stats,
    ) -> Result<Vec<Run<J>>> {
        let Sampled {
            job,
            input,
            splits,
            sample,
        } = sampled;
        let (rest, bytes) = (sample.rest(&splits), sample.bytes(&splits));
        let (splits, seeds) = match sample.kept {
            Some(kept) => {
                stats.sample_kept_bytes = bytes as u64;
                opts.watch().mapped(bytes);
                (rest, kept)
            }
            None => (splits, Vec::new()),
        };
        let work = pipeline::Work {
            input,
            splits: &splits,
            seeds,
            watch: opts.watch(),
            // The pipeline reserves its buffers' bound.
            memory: self.memory(opts, 0)?,
        };
        pipeline::run(&self.pool, job, work, &opts.pipeline, stats)
    }

    /// Orders the runs into the output (or selects the top `opts.top`);
    /// with `each`, orders them by key and hands them over, returning
    /// nothing.
    fn merge<J: Job>(
        &self,
        job: &J,
        runs: Vec<Run<J>>,
        opts: &RunOptions,
        stats: &mut Stats,
        each: Option<Each<'_, J>>,
    ) -> Result<Vec<(J::Key, J::Out)>> {
        let (top, watch) = (opts.top, opts.watch());
        let start = Instant::now();
        let _phase = watch.phase(Phase::Merge);
        stats.distinct_keys = runs.iter().map(Vec::len).sum::<usize>() as u64;
        let by_key = each.is_some() || job.output_order() == OutputOrder::Key;
        let pool = &self.pool;
        // Two comparators, each its own instance of the sort: the key's
        // alone is small enough to inline into it.
        let mut pairs = unwind::catch(Phase::Merge, || match by_key {
            true => merge::order(pool, top, runs, |a: &(J::Key, J::Out), b| a.0.cmp(&b.0)),
            false => merge::order(pool, top, runs, |a, b| {
                job.order(a, b).then_with(|| a.0.cmp(&b.0))
            }),
        })?;
        stats.output_pairs = pairs.len() as u64;
        if let Some(each) = each {
            for (k, o) in pairs.drain(..) {
                each(k, o)?;
            }
        }
        stats.merge_secs = secs(start.elapsed());
        let args = Args {
            pairs: Some(stats.output_pairs),
            ..Args::default()
        };
        watch.span(Track::Merge, SpanKind::Task(Phase::Merge), start, args);
        Ok(pairs)
    }

    /// Runs a map-only job: map on every worker, no reduce; the output is
    /// every emitted pair (sorted by key unless the job says not to). An
    /// input that changes while it is read fails the run as in
    /// [`Runtime::run_with`].
    pub fn run_map_only<J: MapOnlyJob>(
        &self,
        job: &J,
        input: &Input<'_>,
        opts: &RunOptions,
    ) -> Result<Output<J::Key, J::Value>> {
        let out = self.map_only(job, input, opts);
        input.check_unchanged()?;
        out
    }

    /// [`Runtime::run_map_only`], before the input is checked.
    fn map_only<J: MapOnlyJob>(
        &self,
        job: &J,
        input: &Input<'_>,
        opts: &RunOptions,
    ) -> Result<Output<J::Key, J::Value>> {
        self.in_threads()?;
        let start = Instant::now();
        let watch = opts.watch();
        watch.start(input.known_len());
        let splits = self.split(input, job.records(), opts)?;
        let mut stats = self.stats_of(input, splits.len(), start);
        stats.plan = Plan {
            container: ContainerKind::Append,
            container_reason: ContainerReason::MapOnly,
            mode: RunMode::MapOnly,
            mode_reason: ModeReason::MapOnly {
                asked: opts.mode.unwrap_or_default(),
            },
            aggregation: Aggregation::PerWorker,
            aggregation_reason: AggregationReason::MapOnly,
            ingest: Request::ingest(input),
            partitions: 0,
        };
        let busy = Busy::new(&self.pool);
        let source = self.source(input, splits, job.records(), opts)?;
        let map_start = Instant::now();
        let team = Team {
            pool: &self.pool,
            watch,
        };
        let workers = map_source(
            team,
            &self.ingest,
            source,
            &mut stats,
            |_| Vec::new(),
            |runs, i, split| {
                let mut out = Vec::new();
                busy.time(|| job.map(split, &mut out))?;
                let pairs = out.len() as u64;
                runs.push((i, out));
                Ok(pairs)
            },
        )?;
        stats.map_secs = secs(map_start.elapsed());
        stats.map_busy_secs = busy.secs();
        stats.utilization = utilization(&[&stats.map_busy_secs], self.threads(), stats.map_secs);
        stats.map_tasks = workers.iter().map(|w| w.1).collect();

        // Input order first (each split's pairs, splits in order), so that a
        // stable sort by key is deterministic.
        let merge_start = Instant::now();
        let phase = watch.phase(Phase::Merge);
        let mut runs: Vec<(usize, Vec<_>)> = workers.into_iter().flat_map(|w| w.0).collect();
        runs.sort_unstable_by_key(|r| r.0);
        let runs: Vec<Vec<_>> = runs.into_iter().map(|r| r.1).collect();
        let pairs = if job.sort_output() {
            let by_key = |a: &(J::Key, J::Value), b: &(J::Key, J::Value)| a.0.cmp(&b.0);
            unwind::catch(Phase::Merge, || {
                merge::merge::<_, _, true>(&self.pool, runs, &by_key)
            })?
        } else {
            runs.into_iter().flatten().collect()
        };
        stats.merge_secs = secs(merge_start.elapsed());
        drop(phase);
        stats.total_secs = secs(start.elapsed());
        stats.pairs_emitted = pairs.len() as u64;
        stats.output_pairs = pairs.len() as u64;
        trace_run(watch, start, &stats);
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
        if !input.is_streamed() {
            let pages = if opts.release_mapped {
                // Finding the splits' first records and the sample mapped
                // pages all over the input (a whole large page-cache folio
                // per touch): let go of them before the map reads it split
                // by split, or they stay until their split is mapped.
                #[cfg(unix)]
                input.release_stripe(0, 1);
                Pages::Release
            } else {
                Pages::Keep
            };
            return Ok(Source::Memory(input, splits, pages));
        }
        let buffers = opts.chunk_buffers.unwrap_or(DEFAULT_CHUNK_BUFFERS);
        let chunk_size = opts.chunk_size.unwrap_or_else(|| {
            // Under a limit the caller set, the buffers take at most a
            // quarter of it (and chunks at least 1 MiB).
            let limit = opts.memory_limit.or(self.memory_limit);
            let fit = limit.map_or(usize::MAX, |l| (l / 4) as usize / buffers.max(1));
            DEFAULT_CHUNK_SIZE.min(fit.max(1 << 20))
        });
        if chunk_size == 0 || buffers == 0 {
            return Err(Error::Config(
                "chunk size and chunk buffers must be at least 1".into(),
            ));
        }
        let split_size = opts
            .split_size
            .or(self.split_size)
            .unwrap_or_else(|| default_split_size(chunk_size, self.threads()));
        Ok(Source::Stream {
            input,
            reader: ChunkReader::new(input.take_streams(self.threads())?, records, chunk_size)
                .placed(Stripes::new(self.pool.topology(), chunk_size)),
            split_size,
            buffers,
        })
    }

    /// Cuts the input into splits of the run's, else the runtime's, else a
    /// size fitted to the input.
    fn split(
        &self,
        input: &Input<'_>,
        records: Records,
        opts: &RunOptions,
    ) -> Result<Vec<SplitRange>> {
        let _phase = opts.watch().phase(Phase::Split);
        if opts.split_size == Some(0) {
            return Err(Error::Config("split size must be at least 1 byte".into()));
        }
        let split_size = opts.split_size.or(self.split_size).unwrap_or_else(|| {
            let fitted = default_split_size(input.len(), self.threads());
            match opts.memory_limit.or(self.memory_limit) {
                // A split adds to a container before its check: a quarter
                // of a worker's share at most, for a budget the caller set.
                Some(limit) => fitted.min(Budget::new(Some(limit)).share(0, self.threads()) / 4),
                None => fitted,
            }
        });
        plan_splits(input, records, split_size, self.threads())
    }
}

/// A run of a job once its input is split and sampled: what the barrier's
/// or the pipeline's map and reduce start from.
struct Sampled<'r, 'i, 'a, J: Job> {
    job: &'r J,
    input: &'i Input<'a>,
    splits: Vec<SplitRange>,
    sample: Sample<J>,
}

/// The bytes of a map source's input buffers: a streamed run's chunks in
/// circulation and the blocks its decoders (on up to `threads` threads)
/// read ahead, none for an input in memory.
fn input_buffers(source: &Source<'_, '_>, threads: usize) -> u64 {
    match source {
        Source::Memory(..) => 0,
        Source::Stream {
            input,
            buffers,
            reader,
            ..
        } => (*buffers * reader.chunk_size()) as u64 + input.read_ahead_bytes(threads),
    }
}

/// Traces a finished run as one span on the run's track, with its input
/// bytes and output pairs.
fn trace_run(watch: Watch<'_>, start: Instant, stats: &Stats) {
    let args = Args {
        index: None,
        bytes: Some(stats.input_bytes),
        pairs: Some(stats.output_pairs),
    };
    watch.span(Track::Run, SpanKind::Run, start, args);
}

/// Whether `file` was opened for appending (every write goes to its end,
/// whatever the offset asked).
fn appends(file: &std::fs::File) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: `F_GETFL` on a descriptor the `File` owns and keeps open for
    // the call reads its flags and touches no memory of ours.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    flags != -1 && flags & libc::O_APPEND != 0
}
