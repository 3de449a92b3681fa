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
//!   Why growing tables: with fixed 64 KiB buffers a word count buffer
//!   combined only 1.7 pairs per key and the reducers paid ~60 ns a pair to
//!   fold them, against ~25 ns for the barrier's in-map update; a table that
//!   holds the mapper's vocabulary combines like the barrier's, and the
//!   reducer merges states, not pairs.
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
//!
//! # Who reduces: every worker, when it would otherwise idle
//!
//! No thread is created for a run: the pool's workers are the mappers and
//! the reducers. Each worker maps; buffers pile up in the channels (up to
//! half the bound) while there are splits to map; a worker that runs out
//! of splits folds any partition's buffers while the others finish theirs
//! (a straggler's tail is when reduce work costs nothing); above half the
//! bound a mapper folds its own partition's buffers at each hand-off and
//! between splits, and at the bound it must (back-pressure). Why not
//! dedicated reducer threads:
//!
//! - on 2 cores, a dedicated reducer takes half the machine from map for
//!   reduce work that is a fraction of map's, and idles when there is none
//!   (measured: 0.9x of the alternating design on word count and on the
//!   skewed input, `ember bench pipeline`, row "1 reduce-only");
//! - on 64 cores the same holds, and more so, since reduce work per
//!   worker shrinks with `T` while a dedicated reducer's share of the
//!   machine does not; the fixed ownership spreads reduce evenly (`T`
//!   partitions by hash), the one-to-one channels keep the hand-off free of
//!   contention (only the `T` free lists are shared, by steals under
//!   back-pressure), and helpers only take partitions whose lock is free.
//!   (Not measured here: this machine has 2 cores.)
//!
//! [`PipelineOptions::dedicated_reducers`] turns some workers into reducers
//! only, to measure that choice.
//!
//! # Which jobs, and when it pays
//!
//! A job can be pipelined when the state its `reduce` gets is built by an
//! associative and commutative combiner, so that partial states may be
//! folded in any order, as buffers arrive: [`Job::pipelinable`] says so
//! (false by default); other jobs run with the barrier, and the stats say
//! why. Measured on 2 cores (`ember bench pipeline`), pipelining pays when
//! there are many distinct keys that repeat: the barrier keeps every key
//! once per worker and joins those copies in its reduce phase, and it must
//! sample to size its tables; the pipeline keeps each key once and folds
//! while mapping. It loses where the barrier's containers are at their best:
//! few keys (a table that stays in cache; the array container for dense
//! keys: 0.2x on a byte histogram), unique keys (the barrier only appends:
//! 0.2x), and one thread (nothing to overlap: 0.65x). [`Mode::Auto`] picks
//! the pipeline only where it measured faster (see [`choose`]).
//!
//! The skewed case (5% of the splits carry half the map work): the
//! pipelined run is 0.95-1.07x the barrier's time over nine `ember bench
//! pipeline --cases skewed --runs 5` runs (median 1.01x; before this
//! session's changes 0.82-0.98x). Two changes got it there:
//!
//! - the runtime cuts the last splits into pieces (see
//!   `input::plan_splits`), so both workers finish mapping together in
//!   either mode; the pipeline's edge is then its reduce after the last
//!   map, 0.01-0.02 s against the barrier's 0.06-0.09 s;
//! - the mappers' emit path does less per pair (limits checked only when a
//!   key is new, one index per pair; 702M to 622M instructions on a 16 MB
//!   word count, against the barrier's 563M) and their tables grow 8x past
//!   64K keys (fresh memory is costly here: page clearing was 13% of a
//!   pipelined word count run; the first touch of freshly mapped huge pages
//!   runs at 0.45 GB/s on this VM).
//!
//! The pipelined workers still spend a little more CPU time (more table
//! memory: each mapper's buffers and each reducer's partition table).
//! Measured and ruled out: table growth from a small start (mappers whose
//! tables were the sample's were no faster), the tail hand-offs (they
//! help), and mapping a worker's own partition straight into its partition
//! table with no buffer (0.69-0.95x on word count: the partition table,
//! locked while its owner maps, could not be folded into by the other
//! worker until the end). At parity, not ahead, `Auto` keeps the barrier
//! (the skewed word count's sample predicts about 1.1M keys per worker,
//! below [`AUTO_MIN_KEYS`]).

use std::sync::atomic::AtomicU64;
use std::time::Instant;

use serde::Serialize;

use crate::combine::Combiner;
use crate::container::hash::HashContainer;
use crate::container::{Container, Counting, KeyHint};
use crate::error::Result;
use crate::input::{Input, SplitRange};
use crate::job::Job;
use crate::pool::Pool;
use crate::predict::Prediction;
use crate::stats::{secs, Stats};

mod busy;
mod exchange;
mod worker;

pub(crate) use busy::{utilization, Busy};

/// How map and reduce are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// The runtime chooses: the barrier unless the job can be pipelined and
    /// its shape is one where pipelining measured faster.
    #[default]
    Auto,
    /// Reduce starts when the last map task has finished (Phoenix, Metis).
    Barrier,
    /// Reducers fold map output as it is produced (SMR). Jobs that cannot
    /// be pipelined ([`Job::pipelinable`]) still run with the barrier.
    Pipelined,
}

impl Mode {
    /// The mode's name, as the CLI and the stats spell it.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Barrier => "barrier",
            Mode::Pipelined => "pipelined",
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        [Mode::Auto, Mode::Barrier, Mode::Pipelined]
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown mode '{s}' (auto, barrier, pipelined)"))
    }
}

/// Default size of one append buffer: 64 KiB (combining buffers grow up to
/// their share of the bound instead, see [`PipelineOptions::buffer_bytes`]).
/// A 16 KiB to 1 MiB sweep
/// on word count (`ember bench pipeline --buffer`) showed no size clearly
/// better (all within the machine's noise); 64 KiB keeps a mapper's `T`
/// buffers within its L2 cache up to `T = 32`. Buffers shrink to fit the
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

/// Settings of the pipelined mode.
#[derive(Debug, Clone, Default)]
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

/// What a pipelined run measured (in [`Stats::pipeline`]).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct PipelineStats {
    /// Bytes of one buffer.
    pub buffer_bytes: usize,
    /// Keys a buffer takes before it is handed off.
    pub buffer_keys: usize,
    /// The bound on buffered bytes.
    pub max_buffered_bytes: usize,
    /// The most bytes in buffers out of the free lists at once (being
    /// filled, in flight or being folded): never above the bound.
    pub peak_buffered_bytes: usize,
    /// Buffers allocated in all (the rest of the hand-offs reused them).
    pub buffers_allocated: usize,
    /// Buffers handed from mappers to reducers.
    pub batches: u64,
    /// Buffers folded by a worker other than their partition's owner.
    pub helped_batches: u64,
    /// Times a mapper found the buffer budget spent (back-pressure).
    pub backpressure_waits: u64,
    /// Workers that only reduced.
    pub dedicated_reducers: usize,
    /// Mappers that ended with combining buffers (the others appended).
    pub combining_mappers: usize,
    /// Seconds the workers spent waiting, summed (back-pressure with
    /// nothing to fold, or reducers waiting for buffers).
    pub idle_secs: f64,
}

/// Pipelining can pay only when the sample shows at least this many pairs
/// per distinct key: below it keys are nearly unique, nothing combines, and
/// every pair would go through a buffer and a hash table where the
/// barrier's append or unique container only copies it (measured: 4-5x
/// slower pipelined, `ember bench pipeline --cases offsets-unhinted`).
const AUTO_MIN_REPEATS: f64 = 1.05;

/// Pipelining can pay only when the sample predicts at least this many
/// keys per worker: with fewer, each worker's barrier table stays small and
/// cached, so combining at insert is cheap and the barrier's reduce phase
/// short, and the buffers' extra pass costs more than the overlap saves.
/// Measured on 2 cores, word count, 128 MiB, pipelined vs barrier time:
/// 10K-word vocabulary (160K keys predicted) 0.64x, 100K (984K predicted)
/// 0.92x, 300K (1.5M) 1.04x, 1M (1.1-2.1M) 1.0-1.1x, 10M at Zipf 0.6 (7M)
/// 1.5x. (The sampler over-predicts: 100K words is 99K keys per worker.)
const AUTO_MIN_KEYS: u64 = 1_500_000;

/// True when the run is pipelined whatever a sample would show, so the
/// runtime need not sample the input.
pub(crate) fn skips_sample<J: Job>(job: &J, mode: Option<Mode>) -> bool {
    mode == Some(Mode::Pipelined) && job.pipelinable()
}

/// The mode a run uses, and why. `threads` is the pool's size;
/// `prediction` what the sample showed (`None` if the input was not
/// sampled).
///
/// Pipelining can pay only for a pipelinable job on more than one thread,
/// with no container forced by the caller (a container is a barrier-mode
/// choice), whose keys are neither declared dense (the array container's
/// plain indexing beats any buffer) nor unique (nothing combines), and
/// whose sample shows repeated keys ([`AUTO_MIN_REPEATS`]) and many of them
/// ([`AUTO_MIN_KEYS`]). Even there it has not measured faster on 2 cores,
/// so `Auto` picks the barrier everywhere today and says which case it is;
/// an explicit [`Mode::Pipelined`] still pipelines.
pub(crate) fn choose<J: Job>(
    job: &J,
    mode: Option<Mode>,
    container_forced: bool,
    threads: usize,
    prediction: &Option<Prediction>,
) -> (Mode, String) {
    let requested = mode.unwrap_or_default();
    let barrier = |why: String| (Mode::Barrier, why);
    if requested == Mode::Barrier {
        return barrier("chosen by the caller".into());
    }
    if !job.pipelinable() {
        return barrier(format!(
            "{} mode asked, but the job is not pipelinable (Job::pipelinable: its reduce \
             needs a state from an associative and commutative combiner)",
            requested.name()
        ));
    }
    if requested == Mode::Pipelined {
        return (Mode::Pipelined, "chosen by the caller".into());
    }
    if threads < 2 {
        return barrier("auto: one thread has nothing to overlap".into());
    }
    if container_forced {
        return barrier("auto: the caller chose a container, a barrier-mode choice".into());
    }
    if !J::Combiner::FOLDS {
        return barrier(
            "auto: the combiner keeps every value: the barrier's append container groups \
             them at reduce with no table per key on the map path (pipelined: 0.40x on the \
             inverted index, ember bench pipeline)"
                .into(),
        );
    }
    match (job.keys(), prediction) {
        (KeyHint::Dense(_), _) => {
            barrier("auto: dense integer keys: the array container beats buffers and tables".into())
        }
        (KeyHint::Unique, _) => {
            barrier("auto: unique keys: nothing combines, buffers would only copy".into())
        }
        (_, None) => barrier("auto: input too small to sample".into()),
        (_, Some(p)) if p.repeats < AUTO_MIN_REPEATS => barrier(format!(
            "auto: sample: {:.2} pairs per key: nearly unique keys, nothing to fold",
            p.repeats
        )),
        (_, Some(p)) if p.keys_per_worker < AUTO_MIN_KEYS => barrier(format!(
            "auto: sample: {} keys per worker predicted (< {AUTO_MIN_KEYS}): \
             combining at insert stays in cache",
            p.keys_per_worker
        )),
        // Where pipelining could pay (many keys that repeat), it has not
        // measured faster on 2 cores (`ember bench pipeline`, 2026-11-22:
        // word count 0.95-1.05x, the skewed case 0.95-1.07x, at parity
        // after the fourth session's changes; the 256 MiB word count
        // 0.79-0.97x before them). Auto keeps the barrier until pipelining
        // measures ahead.
        (_, Some(p)) => barrier(format!(
            "auto: sample: {} keys per worker predicted, {:.1} pairs per key: \
             pipelining could fold while mappers map, but measured no faster than the \
             barrier on such inputs (ember bench pipeline)",
            p.keys_per_worker, p.repeats
        )),
    }
}

/// One partition's reduced output.
type Run<J> = Vec<(<J as Job>::Key, <J as Job>::Out)>;

/// What the pipelined run maps: every split, the indices of the sampled
/// ones, and the sample's containers (one per worker) when it was kept.
pub(crate) type Work<'s, J> = (
    &'s [SplitRange],
    &'s [usize],
    Option<Vec<Counting<HashContainer<J>>>>,
);

/// Runs the map and reduce phases pipelined and returns the reduced runs
/// (one per partition), as the barrier mode's `run_in` does. Fills in the
/// stats of those phases. A kept sample is not mapped again: each worker
/// first sends its sample container's entries to the reducers.
pub(crate) fn run<J: Job>(
    pool: &Pool,
    job: &J,
    input: &Input<'_>,
    (all, sample, sampled): Work<'_, J>,
    (opts, progress): (&PipelineOptions, Option<&AtomicU64>),
    stats: &mut Stats,
) -> Result<Vec<Run<J>>> {
    let (splits, seeds, seed_pairs) = match sampled {
        Some(containers) => {
            let rest: Vec<SplitRange> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| sample.binary_search(i).is_err())
                .map(|(_, s)| *s)
                .collect();
            let pairs: u64 = containers.iter().map(|c| c.pairs).sum();
            let seeds: Vec<_> = containers
                .into_iter()
                .map(|c| std::sync::Mutex::new(Some(c.inner.into_parts())))
                .collect();
            (rest, seeds, pairs)
        }
        None => (all.to_vec(), Vec::new(), 0),
    };
    let splits = &splits[..];
    let threads = pool.threads();
    let dedicated = opts.dedicated_reducers.min(threads - 1);
    let mappers = threads - dedicated;
    let max_bytes = opts
        .max_buffered_bytes
        .unwrap_or_else(default_max_buffered_bytes);
    let sizing = exchange::Sizing::new::<J>(opts.buffer_bytes, max_bytes, mappers, threads)?;
    let x = exchange::Exchange::new(job, threads, splits.len(), sizing, progress);

    let start = Instant::now();
    let reports = pool.broadcast(|w| {
        let seed = seeds.get(w).and_then(|s| {
            s.lock()
                .unwrap_or_else(|p| p.into_inner())
                .take()
                .map(|parts| parts.into_iter().flatten())
        });
        let role = worker::Role {
            maps: w >= dedicated,
            combine: opts.combine,
        };
        worker::work(&x, w, role, seed, input, splits)
    });
    let end = Instant::now();
    let (allocated, peak) = x.memory();
    x.failure.into_result()?;

    let map_end = reports.iter().filter_map(|r| r.map_end).max();
    stats.map_secs = map_end.map_or(0.0, |t| secs(t - start));
    stats.reduce_secs = secs(end - map_end.unwrap_or(start));
    stats.partitions = threads;
    stats.container = "hash".into();
    stats.container_reason = "pipelined: map buffers fold into one hash table per reducer".into();
    stats.map_tasks = reports.iter().map(|r| r.tasks).collect();
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
    stats.pipeline = Some(PipelineStats {
        buffer_bytes: sizing.bytes,
        buffer_keys: sizing.keys,
        max_buffered_bytes: max_bytes,
        peak_buffered_bytes: peak,
        buffers_allocated: allocated,
        batches: reports.iter().map(|r| r.clock.sent).sum(),
        helped_batches: reports.iter().map(|r| r.clock.helped).sum(),
        backpressure_waits: reports.iter().map(|r| r.clock.waits).sum(),
        dedicated_reducers: dedicated,
        combining_mappers: reports.iter().filter(|r| r.combining == Some(true)).count(),
        idle_secs: reports.iter().map(|r| r.clock.idle.as_secs_f64()).sum(),
    });
    Ok(reports.into_iter().map(|r| r.run).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combine::Sum;
    use crate::input::plan_splits;
    use crate::job::{Emit, Records, Split};

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
        fn map<E: Emit<u16, u64>>(&self, split: Split<'_>, emit: &mut E) {
            for c in split.data.chunks_exact(2) {
                emit.emit(u16::from_le_bytes([c[0], c[1]]), 1);
            }
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
            let mut containers: Vec<_> = (0..threads)
                .map(|_| Counting::new(HashContainer::<Pairs>::new(4 * threads, 16)))
                .collect();
            for (n, &i) in sample.iter().enumerate() {
                let s = splits[i];
                let split = Split {
                    data: &data[s.start..s.end],
                    part: 0,
                    offset: s.start as u64,
                };
                Pairs.map(split, &mut containers[n % threads]);
            }
            let mut stats = Stats::default();
            let opts = PipelineOptions {
                buffer_bytes: Some(256),
                ..Default::default()
            };
            let work = (&splits[..], &sample[..], Some(containers));
            let runs = run(&pool, &Pairs, &input, work, (&opts, None), &mut stats).unwrap();
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

    fn prediction(keys_per_worker: u64, repeats: f64) -> Option<Prediction> {
        Some(Prediction {
            pairs: 1000,
            repeats,
            beta: 0.5,
            keys_per_worker,
            pairs_per_worker: 1000,
        })
    }

    #[test]
    fn auto_follows_the_sample() {
        let many = prediction(4_000_000, 3.8);
        let (m, why) = choose(&Pairs, None, false, 2, &many);
        assert_eq!(m, Mode::Barrier, "{why}");
        assert!(why.contains("4000000 keys per worker"), "{why}");
        assert!(why.contains("measured no faster"), "{why}");
        let (m, why) = choose(
            &Pairs,
            Some(Mode::Auto),
            false,
            2,
            &prediction(100_000, 8.0),
        );
        assert_eq!(m, Mode::Barrier);
        assert!(why.contains("stays in cache"), "{why}");
        let (m, why) = choose(&Pairs, None, false, 2, &prediction(8_000_000, 1.0));
        assert_eq!(m, Mode::Barrier);
        assert!(why.contains("nearly unique"), "{why}");
        let (m, why) = choose(&Pairs, None, false, 2, &None);
        assert_eq!(m, Mode::Barrier);
        assert!(why.contains("too small to sample"), "{why}");
        assert_eq!(choose(&Pairs, None, false, 1, &many).0, Mode::Barrier);
        assert_eq!(choose(&Pairs, None, true, 2, &many).0, Mode::Barrier);
        let explicit = choose(&Pairs, Some(Mode::Pipelined), true, 1, &None);
        assert_eq!(explicit, (Mode::Pipelined, "chosen by the caller".into()));
        assert!(skips_sample(&Pairs, Some(Mode::Pipelined)));
        assert!(!skips_sample(&Pairs, None));
    }
}
