//! The barrier mode (Phoenix, Metis): every worker maps the splits it pulls
//! into its own container; when the last split is mapped, partition `p` of
//! every worker's container is joined and reduced by one task, the
//! partitions handed out to the workers as they finish one.
//!
//! Under a memory budget a worker whose container passes its share spills
//! it to disk and maps on; reduce then merges the spilled runs (`spill`).
//! The pipelined mode's reducers spill through the same workers.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use crate::busy::{utilization, Busy};
use crate::combine::Combiner;
use crate::container::{Container, Counting, ForJob, Visit};
use crate::error::{Phase, Result};
use crate::ingest::IngestThread;
use crate::job::Job;
use crate::pool::Pool;
use crate::progress::Watch;
use crate::schedule::{map_source, Source, Team};
use crate::stats::{secs, Stats};
use crate::trace::{Args, SpanKind, Track};
use crate::unwind;
use spill::{reduce_spilled, stream_spilled};

mod spill;

pub(crate) use spill::{memory_stats, Each, Memory, Spiller, Worker, Written};

/// Map output of at most this many entries (all workers) is reduced on the
/// calling thread: waking the pool costs more than reducing a few thousand
/// entries (k-means runs one job per iteration, each with a few hundred
/// entries). Only for combiners that fold ([`Combiner::FOLDS`]): a kept
/// list per key can be any length, so such reduces always use the pool.
const SMALL_REDUCE: usize = 1 << 12;

/// One reduce partition's output.
pub(crate) type Run<J> = Vec<(<J as Job>::Key, <J as Job>::Out)>;

/// What a barrier run's reduce produced.
pub(crate) enum Reduced<J: Job> {
    /// The output of every partition, in partition order, for the merge.
    Runs(Vec<Run<J>>),
    /// This many keys, handed to the run's [`Each`] in key order (a run
    /// that spilled, with somewhere to hand its output).
    Handed(u64),
}

/// A barrier-mode map and reduce over one source: a [`Visit`] of the run's
/// containers.
pub(crate) struct Barrier<'r, 'i, 'a, J: Job> {
    pub(crate) pool: &'r Pool,
    pub(crate) ingest: &'r IngestThread,
    pub(crate) job: &'r J,
    /// The combiner the containers were built with.
    pub(crate) combiner: &'r J::Combiner,
    pub(crate) source: Source<'i, 'a>,
    pub(crate) memory: Memory,
    pub(crate) watch: Watch<'r>,
    pub(crate) stats: &'r mut Stats,
    /// Where the output goes when it is not collected.
    pub(crate) each: Option<Each<'r, J>>,
}

impl<J: Job> Visit<J::Key, J::Value, J::Combiner> for Barrier<'_, '_, '_, J> {
    type Out = Result<Reduced<J>>;

    fn visit<C: Container<J::Key, J::Value, J::Combiner>>(
        self,
        make: impl Fn(usize) -> Counting<C> + Sync,
    ) -> Self::Out {
        let Barrier {
            pool,
            ingest,
            job,
            combiner,
            source,
            memory,
            watch,
            stats,
            each,
        } = self;
        let map_start = Instant::now();
        let map_busy = Busy::new(pool);
        let spiller =
            Spiller::new(&memory, job, combiner, pool.threads(), watch).hands(each.is_some());
        let new_worker = |w| Worker::new(w, make(w));
        let workers = map_source(
            Team { pool, watch },
            ingest,
            source,
            stats,
            new_worker,
            |w, _, split| {
                let before = w.container.pairs;
                map_busy.time(|| {
                    let mapped = job.map(split, ForJob::<J, _>::of(&mut w.container));
                    w.container.inner.split_done();
                    mapped
                })?;
                w.check(&spiller, w.index)?;
                Ok(w.container.pairs - before)
            },
        )?;
        stats.map_secs = secs(map_start.elapsed());
        stats.map_tasks = workers.iter().map(|w| w.1).collect();
        let workers: Vec<Worker<C, J::Key>> = workers.into_iter().map(|w| w.0).collect();
        let held = mapped(stats, &spiller, &workers);
        let reduce_start = Instant::now();
        let phase = watch.phase(Phase::Reduce);
        let reduce_busy = Busy::new(pool);
        let spilled = workers.iter().any(Worker::spilled);
        let (reduced, tasks) = match (spilled, each) {
            (true, Some(each)) => {
                let (keys, tasks, memory) = stream_spilled(pool, &spiller, workers, each)?;
                stats.memory = memory;
                (Reduced::Handed(keys), tasks)
            }
            (true, None) => {
                let (runs, tasks) = reduce_spilled(pool, &spiller, workers, &reduce_busy)?;
                (Reduced::Runs(runs), tasks)
            }
            (false, _) => {
                let containers = workers.into_iter().map(|w| w.container.inner);
                let (runs, tasks) = reduce(pool, &spiller, containers, held, &reduce_busy)?;
                (Reduced::Runs(runs), tasks)
            }
        };
        drop(phase);
        stats.reduce_tasks = tasks;
        stats.reduce_secs = secs(reduce_start.elapsed());
        if spilled {
            stats.memory.merge_secs = stats.reduce_secs;
        }
        stats.map_busy_secs = map_busy.secs();
        stats.reduce_busy_secs = reduce_busy.secs();
        stats.utilization = utilization(
            &[&stats.map_busy_secs, &stats.reduce_busy_secs],
            pool.threads(),
            stats.map_secs + stats.reduce_secs,
        );
        Ok(reduced)
    }
}

/// Adds what the map phase's `workers` hold to `stats`; returns the
/// entries they hold in all.
fn mapped<J: Job, C: Container<J::Key, J::Value, J::Combiner>>(
    stats: &mut Stats,
    spiller: &Spiller<'_, J>,
    workers: &[Worker<C, J::Key>],
) -> usize {
    stats.pairs_emitted = workers.iter().map(|w| w.container.pairs).sum();
    let held: usize = workers.iter().map(|w| w.container.distinct()).sum();
    stats.actual_keys_per_worker = (held / workers.len().max(1)) as u64;
    stats.container_bytes = workers
        .iter()
        .map(|w| w.container.memory_bytes() as u64)
        .sum();
    stats.memory = memory_stats(spiller, workers.iter().map(Worker::written));
    stats.partitioned = None;
    for w in workers {
        w.container.tally(&mut stats.partitioned);
    }
    held
}

/// Reduces partition `p` of every container as one task, for every `p`,
/// with the job and combiner of `s`; returns the runs in partition order
/// and the tasks each worker ran. A small output (`held` entries in all)
/// is reduced on the calling thread.
fn reduce<J: Job, C: Container<J::Key, J::Value, J::Combiner>>(
    pool: &Pool,
    s: &Spiller<'_, J>,
    containers: impl ExactSizeIterator<Item = C>,
    held: usize,
    busy: &Busy<'_>,
) -> Result<(Vec<Run<J>>, Vec<u64>)> {
    let (job, combiner) = (s.job, s.combiner);
    // Every worker's container has the same partitions.
    let mut columns: Vec<Vec<C::Part>> = Vec::new();
    let n = containers.len();
    for c in containers {
        for (p, part) in c.into_parts().into_iter().enumerate() {
            if p == columns.len() {
                columns.push(Vec::with_capacity(n));
            }
            columns[p].push(part);
        }
    }
    let tasks = Tasks::new(pool, s.watch);
    let task = |p, parts| {
        tasks.run(p, || {
            let reduce = || C::reduce(parts, combiner, |k, r| job.reduce(k, r));
            unwind::catch(Phase::Reduce, || busy.time(reduce))
        })
    };
    let runs: Vec<Result<Run<J>>> = if held <= SMALL_REDUCE && J::Combiner::FOLDS {
        columns
            .into_iter()
            .enumerate()
            .map(|(p, c)| task(p, c))
            .collect()
    } else {
        pool.map_each(columns, task)
    };
    let runs = runs.into_iter().collect::<Result<Vec<_>>>()?;
    Ok((runs, tasks.counts()))
}

/// The reduce tasks of a run: how many each worker ran, and a span each.
struct Tasks<'p> {
    pool: &'p Pool,
    watch: Watch<'p>,
    /// Each slot is added to by its own worker (relaxed) and read after
    /// the pool has joined them all.
    counts: Vec<AtomicU64>,
}

impl<'p> Tasks<'p> {
    fn new(pool: &'p Pool, watch: Watch<'p>) -> Self {
        let counts = (0..pool.threads()).map(|_| AtomicU64::new(0)).collect();
        Tasks {
            pool,
            watch,
            counts,
        }
    }

    /// Runs reduce task `p`, counted for the worker that runs it (the
    /// calling thread, if it is not one of the pool's, counts as worker
    /// 0) and traced on its track.
    fn run<T>(&self, p: usize, task: impl FnOnce() -> Result<Vec<T>>) -> Result<Vec<T>> {
        self.traced(p, task, |run| run.len() as u64)
    }

    /// Runs reduce task `p` as [`Tasks::run`] does, for a task whose output
    /// is `pairs(output)` pairs.
    fn traced<R>(
        &self,
        p: usize,
        task: impl FnOnce() -> Result<R>,
        pairs: impl FnOnce(&R) -> u64,
    ) -> Result<R> {
        let worker = self.pool.current_index();
        self.counts[worker.unwrap_or(0)].fetch_add(1, Relaxed);
        let start = self.watch.clock();
        let run = task();
        if let (Some(start), Ok(run)) = (start, &run) {
            let track = worker.map_or(Track::Caller, Track::Worker);
            let args = Args {
                index: Some(p as u64),
                bytes: None,
                pairs: Some(pairs(run)),
            };
            self.watch
                .span(track, SpanKind::Task(Phase::Reduce), start, args);
        }
        run
    }

    /// Tasks each worker ran.
    fn counts(self) -> Vec<u64> {
        self.counts.into_iter().map(AtomicU64::into_inner).collect()
    }
}
