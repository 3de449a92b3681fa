//! Pipelined map and reduce (SMR, "A Scalable MapReduce", sections 3.3 and
//! 5): reducers fold map output while the map phase is still running,
//! instead of waiting at a barrier for the last map task.
//!
//! # How a pipelined run goes
//!
//! With `T` workers there are `T` partitions, partition `r` owned by worker
//! `r`, and `T x T` one-to-one channels (crossbeam, unbounded):
//! `inbox[r][m]` carries full buffers from mapper `m` to reducer `r`, so no
//! two mappers ever push into the same channel (SMR's answer to MRPhi's
//! contended many-to-one queue).
//!
//! - **Map**: each mapper keeps one buffer per reducer: either a combining
//!   hash table (the job's combiner folds repeated keys at emit, as the
//!   barrier's containers do) that starts small and grows up to its share of
//!   the bound, or an append array of pairs (SMR's array buffer). Each
//!   mapper starts combining and switches to appending if its first
//!   hand-offs fold fewer than 3 pairs per key (see `exchange`). A buffer
//!   is sent to its reducer when it is full, when its mapper runs out of
//!   splits, or when an idle worker asks for work (`Exchange::wanted`,
//!   checked every few thousand pairs): the mapper goes on at once with
//!   another one. An empty partition adopts the first table it gets whole.
//!   Tables grow rather than stay small because a small buffer combines
//!   few pairs per key and leaves the reducer folding pairs one by one; a
//!   table that holds the mapper's vocabulary combines like the barrier's,
//!   and the reducer merges states.
//! - **Recycling**: the worker that folds a buffer empties it (keeping its
//!   memory) and sends it back to the mapper's free list, so the steady
//!   state allocates nothing.
//! - **Bound**: buffers are counted against
//!   [`PipelineOptions::max_buffered_bytes`]. Below it a mapper never waits
//!   for a reducer; at it, the mapper applies back-pressure to itself: it
//!   takes a spare buffer from another mapper, or folds waiting buffers
//!   itself (which frees them), or waits for a fold in progress. Memory
//!   stays bounded and the run cannot deadlock: the bound leaves room for
//!   one buffer per mapper and reducer plus one spare per mapper, and every
//!   buffer in flight can be folded by any worker.
//! - **Reduce**: partition `r`'s table is behind a lock held by whoever
//!   folds into it (a few buffers per hold); a buffer is only ever taken out
//!   of its channel under that lock, taken with `try_lock`, so no worker
//!   blocks on another. Once every worker has sent its last buffer and
//!   every channel is empty, each worker runs the job's `reduce` on its
//!   partition, and the runs go to the merge phase shared with the barrier
//!   mode.
//! - **Memory budget**: a partition is a barrier spill worker
//!   ([`crate::barrier::Worker`]) over a one-partition hash container.
//!   After each buffer folded into it, whoever folded it checks it against
//!   the partition's share of the run's budget (the budget less the
//!   buffers' bound, over the reducers) and, past it, spills it as a
//!   sorted run; at the end a reducer that spilled merges its runs with
//!   what its table still holds, in one pass, instead of reducing the
//!   table alone. Under a limit the caller set, the buffers' default bound
//!   is at most a quarter of it.
//!
//! # Who reduces: every worker, when it would otherwise idle
//!
//! No thread is created for a run: the pool's workers are the mappers and
//! the reducers. Each worker maps; buffers pile up in the channels (up to
//! half the bound) while there are splits to map; a worker that runs out
//! of splits folds any partition's buffers while the others finish theirs
//! (a straggler's tail is when reduce work costs nothing); above half the
//! bound a mapper folds its own partition's buffers at each hand-off and
//! between splits, and at the bound it must (back-pressure). There are no
//! dedicated reducer threads: one would take a share of the machine from
//! map for reduce work that is a fraction of map's, and idle when there is
//! none ([`PipelineOptions::dedicated_reducers`] sets some aside, to measure
//! that choice).
//!
//! # Which jobs, and when it pays
//!
//! A job can be pipelined when the state its `reduce` gets is built by an
//! associative and commutative combiner, so that partial states may be
//! folded in any order, as buffers arrive: [`Job::pipelinable`] says so
//! (false by default); other jobs run with the barrier, and the stats say
//! why. Pipelining can pay when there are many distinct keys that repeat:
//! the barrier keeps every key once per worker and joins those copies in
//! its reduce phase; the pipeline keeps each key once and folds while
//! mapping. It loses where the barrier's containers are at their best: few
//! keys (a table that stays in cache, or the array container for dense
//! keys), unique keys (the barrier only appends), and one thread (nothing
//! to overlap). `ember-bench pipeline` runs both modes on the same inputs
//! (docs/measurements.md); pipelining has not been faster there, so
//! [`Mode::Auto`](crate::tune::Mode) keeps the barrier and only an explicit
//! `Mode::Pipelined` pipelines.

use std::sync::Mutex;
use std::time::Instant;

use crate::barrier::{memory_stats, Memory, Run, Spiller};
use crate::busy::utilization;
use crate::container::Container;
use crate::error::{Phase, Result};
use crate::input::{Input, SplitRange};
use crate::job::Job;
use crate::pool::Pool;
use crate::progress::Watch;
use crate::sample::HashOf;
use crate::schedule::{split_in, Tasks};
use crate::stats::{secs, PipelineStats, Stats};

mod exchange;
mod worker;

/// Default size of one append buffer: 64 KiB (combining buffers grow up to
/// their share of the bound instead, see [`PipelineOptions::buffer_bytes`]).
/// No size from 16 KiB to 1 MiB measured clearly better on word count
/// (`ember-bench pipeline --buffer`); 64 KiB keeps a mapper's `T` buffers
/// within its L2 cache up to `T = 32`. Buffers shrink to fit the
/// bound's minimum of `T x (T + 1)` buffers: 32 KiB at `T = 64` under the
/// default bound.
pub const DEFAULT_BUFFER_BYTES: usize = 64 << 10;

/// Default bound on buffered bytes: 256 MiB, or an eighth of the machine's
/// memory if that is less.
pub fn default_max_buffered_bytes() -> usize {
    let cap = 256 << 20;
    physical_memory().map_or(cap, |m| cap.min(m / 8))
}

fn physical_memory() -> Option<usize> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads system configuration values.
        let (pages, size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && size > 0 {
            return Some((pages as usize).saturating_mul(size as usize));
        }
    }
    None
}

/// Settings of the pipelined mode: `PipelineOptions::default()` and its
/// setters.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PipelineOptions {
    /// Bytes of one map buffer at most. `None` (default): combining tables
    /// grow up to the bound's share (the bound over `T x (T + 1)` buffers)
    /// and append buffers take [`DEFAULT_BUFFER_BYTES`]. A buffer is handed
    /// to its reducer when its keys fill it (or after 16 pairs per key of
    /// room, for jobs with few keys); tiny buffers mean many hand-offs.
    /// Shrunk if the bound cannot hold the buffers needed.
    pub buffer_bytes: Option<usize>,
    /// The bound on buffered bytes: all buffers that exist at once (being
    /// filled, handed off and not yet folded, or free for reuse), counted at
    /// their slot arrays' size (heap memory a key or a state owns, e.g. a
    /// long byte-string key or a `KeepAll` vector, is not counted). At the
    /// bound, mappers fold buffers themselves instead of allocating more.
    /// Default [`default_max_buffered_bytes`]; too small a bound for the
    /// thread count is a configuration error.
    pub max_buffered_bytes: Option<usize>,
    /// Workers that only reduce (at most all but one; default 0: every
    /// worker maps and reduces). For measuring the scheduling choice.
    pub dedicated_reducers: usize,
    /// The map buffers' kind: `Some(true)` combining (a small hash table
    /// folding repeated keys), `Some(false)` append (SMR's array buffer);
    /// `None` (default): each mapper starts combining and switches to
    /// appending if its first hand-offs show too few pairs per key.
    pub combine: Option<bool>,
}

crate::derive::setters!(PipelineOptions {
    buffer_bytes: usize,
    max_buffered_bytes: usize,
    combine: bool,
});

impl PipelineOptions {
    /// Sets [`PipelineOptions::dedicated_reducers`].
    pub fn dedicated_reducers(mut self, workers: usize) -> Self {
        self.dedicated_reducers = workers;
        self
    }
}

/// What a pipelined run maps: the splits left to map, and the sample's
/// containers (one per worker; empty if none was kept), whose entries each
/// worker sends to the reducers first instead of mapping their splits
/// again; and its memory budget.
pub(crate) struct Work<'r, 'i, J: Job> {
    pub(crate) input: &'r Input<'i>,
    pub(crate) splits: &'r [SplitRange],
    pub(crate) seeds: Vec<HashOf<J>>,
    pub(crate) watch: Watch<'r>,
    /// The run's budget and spill directory (`reserved` is set here: the
    /// buffers' bound).
    pub(crate) memory: Memory,
}

/// The bound on buffered bytes of a run: the caller's, else the default;
/// under a memory limit the caller set, at most a quarter of it (as a
/// streamed run's input buffers), but never below what the exchange needs.
fn buffer_bound<J: Job>(
    opts: &PipelineOptions,
    memory: &Memory,
    mappers: usize,
    reducers: usize,
) -> usize {
    let default = default_max_buffered_bytes();
    opts.max_buffered_bytes
        .unwrap_or(match memory.budget.explicit {
            true => {
                let quarter = usize::try_from(memory.budget.bytes / 4).unwrap_or(usize::MAX);
                default.min(quarter.max(exchange::Sizing::least::<J>(mappers, reducers)))
            }
            false => default,
        })
}

/// Runs the map and reduce phases pipelined and returns the reduced runs
/// (one per partition), as the barrier mode does. Fills in the stats of
/// those phases.
pub(crate) fn run<J: Job>(
    pool: &Pool,
    job: &J,
    work: Work<'_, '_, J>,
    opts: &PipelineOptions,
    stats: &mut Stats,
) -> Result<Vec<Run<J>>> {
    let seed_pairs: u64 = work.seeds.iter().map(|c| c.pairs).sum();
    let seeds: Vec<_> = work
        .seeds
        .into_iter()
        .map(|c| Mutex::new(Some(c.inner.into_parts())))
        .collect();
    let threads = pool.threads();
    let dedicated = opts.dedicated_reducers.min(threads - 1);
    let max_bytes = buffer_bound::<J>(opts, &work.memory, threads - dedicated, threads);
    let sizing =
        exchange::Sizing::new::<J>(opts.buffer_bytes, max_bytes, threads - dedicated, threads)?;
    // The partitions share what the buffers leave of the budget.
    let memory = Memory {
        reserved: max_bytes as u64,
        ..work.memory
    };
    let combiner = job.combiner();
    let spiller = Spiller::new(&memory, job, &combiner, threads, work.watch);
    let first_byte = |i: usize| split_in(work.input, &work.splits[i]).data.as_ptr();
    let tasks = Tasks::new(pool, work.splits.len(), &first_byte);
    let x = exchange::Exchange::new(job, threads, tasks, sizing, &spiller, work.watch);

    let start = Instant::now();
    let phase = work.watch.phase(Phase::Map);
    let reports = pool.broadcast(|w| {
        let seed = seeds.get(w).and_then(|s| {
            let parts = s.lock().unwrap_or_else(|p| p.into_inner()).take();
            parts.map(|parts| parts.into_iter().flatten())
        });
        let role = worker::Role {
            maps: w >= dedicated,
            combine: opts.combine,
        };
        worker::work(&x, w, role, seed, work.input, work.splits)
    });
    let end = Instant::now();
    drop(phase);
    let buffered = x.memory();
    x.failure.into_result()?;

    let map_end = reports.iter().filter_map(|r| r.map_end).max();
    stats.map_secs = map_end.map_or(0.0, |t| secs(t - start));
    stats.reduce_secs = secs(end - map_end.unwrap_or(start));
    stats.map_tasks = reports.iter().map(|r| r.tasks).collect();
    stats.nodes = x.tasks.node_stats();
    stats.reduce_tasks = reports.iter().map(|r| r.clock.folded).collect();
    stats.pairs_emitted = seed_pairs + reports.iter().map(|r| r.pairs).sum::<u64>();
    let keys: usize = reports.iter().map(|r| r.run.len()).sum();
    stats.actual_keys_per_worker = (keys / threads) as u64;
    stats.map_busy_secs = reports.iter().map(|r| r.clock.map.as_secs_f64()).collect();
    stats.reduce_busy_secs = reports
        .iter()
        .map(|r| r.clock.reduce.as_secs_f64())
        .collect();
    stats.utilization = utilization(
        &[&stats.map_busy_secs, &stats.reduce_busy_secs],
        threads,
        secs(end - start),
    );
    stats.memory = memory_stats(&spiller, reports.iter().map(|r| r.written));
    // The partitions' merges run side by side: the longest is the wait.
    stats.memory.merge_secs = reports.iter().map(|r| r.merge_secs).fold(0.0, f64::max);
    let pipeline = pipeline_stats(&reports, sizing, max_bytes, buffered, dedicated);
    stats.pipeline = Some(pipeline);
    Ok(reports.into_iter().map(|r| r.run).collect())
}

/// The pipeline's own stats: the buffers' sizing, bound (`max_bytes`),
/// allocations and peak, and the workers' reports.
fn pipeline_stats<J: Job>(
    reports: &[worker::Report<J>],
    sizing: exchange::Sizing,
    max_bytes: usize,
    buffered: exchange::Buffered,
    dedicated: usize,
) -> PipelineStats {
    PipelineStats {
        buffer_bytes: sizing.bytes,
        buffer_keys: sizing.keys,
        max_buffered_bytes: max_bytes,
        peak_buffered_bytes: buffered.peak,
        buffers_allocated: buffered.allocated,
        batches: reports.iter().map(|r| r.clock.sent).sum(),
        helped_batches: reports.iter().map(|r| r.clock.helped).sum(),
        backpressure_waits: reports.iter().map(|r| r.clock.waits).sum(),
        dedicated_reducers: dedicated,
        combining_mappers: reports.iter().filter(|r| r.combining == Some(true)).count(),
        idle_secs: reports.iter().map(|r| r.clock.idle.as_secs_f64()).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combine::Sum;
    use crate::container::hash::HashContainer;
    use crate::container::Counting;
    use crate::input::plan_splits;
    use crate::job::{Emit, MapResult, Records, Split};

    /// Counts 2-byte keys: 65536 possible keys, repeated.
    struct Pairs;

    impl Job for Pairs {
        type Key = u16;
        type Value = u64;
        type Combiner = Sum;
        type Out = u64;
        fn records(&self) -> Records {
            Records::Fixed(2)
        }
        fn map<E: Emit<u16, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
            for c in split.data.chunks_exact(2) {
                emit.emit(u16::from_le_bytes([c[0], c[1]]), 1);
            }
            Ok(())
        }
        fn reduce(&self, _key: &u16, n: u64) -> u64 {
            n
        }
        fn pipelinable(&self) -> bool {
            true
        }
    }

    fn data() -> Vec<u8> {
        (0..200_000u32)
            .flat_map(|i| ((i * 7919 % 30_011) as u16).to_le_bytes())
            .collect()
    }

    fn expected(data: &[u8]) -> Vec<(u16, u64)> {
        let mut counts = std::collections::BTreeMap::new();
        for c in data.chunks_exact(2) {
            *counts.entry(u16::from_le_bytes([c[0], c[1]])).or_insert(0) += 1;
        }
        counts.into_iter().collect()
    }

    #[test]
    fn a_kept_sample_is_sent_not_mapped_again() {
        let data = data();
        let input = Input::bytes(&data);
        let splits = plan_splits(&input, Records::Fixed(2), 4096, 1).unwrap();
        for threads in [1, 2, 3] {
            let pool = Pool::new(threads, true).unwrap();
            let sample: Vec<usize> = (0..splits.len()).step_by(7).collect();
            let mut containers: Vec<HashOf<Pairs>> = (0..threads)
                .map(|_| Counting::new(HashContainer::new(4 * threads, 16, Sum)))
                .collect();
            for (n, &i) in sample.iter().enumerate() {
                let s = splits[i];
                let split = Split {
                    data: &data[s.start..s.end],
                    part: 0,
                    offset: s.start as u64,
                };
                Pairs.map(split, &mut containers[n % threads]).unwrap();
            }
            let mut stats = Stats::default();
            let opts = PipelineOptions::default().buffer_bytes(256);
            let rest: Vec<SplitRange> = (0..splits.len())
                .filter(|i| sample.binary_search(i).is_err())
                .map(|i| splits[i])
                .collect();
            let work = Work {
                input: &input,
                splits: &rest,
                seeds: containers,
                watch: Watch::default(),
                memory: Memory {
                    budget: crate::memory::Budget::new(None),
                    dir: std::env::temp_dir(),
                    reserved: 0,
                },
            };
            let runs = run(&pool, &Pairs, work, &opts, &mut stats).unwrap();
            let mut got: Vec<(u16, u64)> = runs.into_iter().flatten().collect();
            got.sort();
            assert_eq!(got, expected(&data), "{threads} threads");
            assert_eq!(stats.pairs_emitted, 200_000);
            let mapped: u64 = stats.map_tasks.iter().sum();
            assert_eq!(mapped as usize, splits.len() - sample.len());
        }
    }

    #[test]
    fn buffers_shrink_to_fit_the_bound() {
        let bound = 256 << 20;
        let s = exchange::Sizing::new::<Pairs>(None, bound, 64, 64).unwrap();
        assert!(s.budget >= 64 * 65 && s.budget * s.bytes <= bound, "{s:?}");
        let s = exchange::Sizing::new::<Pairs>(Some(1), bound, 2, 2).unwrap();
        assert_eq!((s.keys, s.append), (1, 1));
        assert!(exchange::Sizing::new::<Pairs>(Some(1 << 20), 1000, 2, 2).is_err());
    }
}
