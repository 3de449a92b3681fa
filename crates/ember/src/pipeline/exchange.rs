//! The exchange between mappers and reducers: buffers, channels, the buffer
//! budget (back-pressure) and folding.
//!
//! A buffer is one contiguous block that never outgrows its share of the
//! bound (it is handed off before it would), reused for the whole run:
//! emptied by the worker that folds it, and sent back to its mapper. It
//! comes in two kinds:
//!
//! - **combining**: a hash table ([`Table`]) that starts small and grows
//!   (by rebuilding, 2x) up to [`Sizing::table_keys`]; the mapper folds the
//!   values of a key into one entry with the job's combiner as it emits, so
//!   a frequent key costs one entry per buffer, not one per occurrence;
//! - **append**: a plain array of `(key, state)` pairs (SMR's array buffer):
//!   no lookup at all on the map side.
//!
//! A reducer moves a full buffer's entries into its partition's table with
//! the combiner's `merge`, prefetching ahead (an empty partition table
//! adopts a combining buffer whole instead). Combining pays when keys
//! repeat within a buffer; when they hardly do (unique keys) the lookups
//! cost more than the entries they save, and appending wins. So each mapper
//! starts with combining buffers, measures pairs per entry over its first
//! hand-offs, and switches to appending below [`MIN_COMBINING`] (unless
//! the caller fixed the kind).
//!
//! A partition is a barrier [`Worker`] over a one-partition hash container,
//! so that it spills as a barrier worker does: whoever folds buffers into
//! it reports its bytes to the run's ledger afterwards and, past the
//! partition's share of the memory budget, writes it to the partition's
//! spill file as a sorted run and folds on into the emptied table.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, Sender};

use crate::barrier::{Spiller, Worker};
use crate::combine::Combiner;
use crate::container::hash::HashContainer;
use crate::container::table::Table;
use crate::container::{Counting, INITIAL_CAPACITY};
use crate::error::{Error, Phase};
use crate::job::{Job, StateOf};
use crate::progress::Watch;
use crate::schedule::Tasks;
use crate::unwind::Failure;

use super::DEFAULT_BUFFER_BYTES;

/// A table of keys and combiner states: a combining buffer's.
pub(super) type Part<J> = Table<<J as Job>::Key, StateOf<J>>;

/// A reducer's partition: a one-partition hash container, its pairs
/// counted (for the values a non-folding combiner keeps), and its spill
/// file.
pub(super) type Reducer<J> = Worker<
    HashContainer<<J as Job>::Key, <J as Job>::Value, <J as Job>::Combiner>,
    <J as Job>::Key,
>;

/// A full buffer on its way to a reducer, and the pairs it stands for.
type Sent<J> = (Buf<J>, usize);

/// How much a partition table grows when a buffer would fill it: room for
/// 4x the keys it would hold (8-16x the slots, after rounding to a power of
/// two). The table's own doubling moves every key too often; a denser
/// table probes longer, and a sparser one costs more fresh pages to clear
/// (word count measured best at 4x).
const GROWTH: usize = 4;

/// Buffers a worker folds per hold of a partition's lock: a bounded hold
/// lets an idle worker take over a partition whose owner went back to
/// mapping (or was descheduled), and spreads the owner's folding over its
/// hand-offs.
const FOLDS_PER_LOCK: usize = 8;

/// Pairs a mapper emits between two looks at [`Exchange::wanted`].
pub(super) const CHECK_EVERY: u64 = 4096;

/// Pairs per entry below which a mapper stops combining in its buffers.
pub(super) const MIN_COMBINING: f64 = 3.0;

/// A map buffer (see the module docs).
pub(super) enum Buf<J: Job> {
    /// Combining: one entry per key.
    Table(Part<J>),
    /// Appending: one entry per emitted pair, with its key's hash (the
    /// mapper has it already; the reducer prefetches with it).
    Pairs(Vec<u64>, Vec<(J::Key, StateOf<J>)>),
}

impl<J: Job> Buf<J> {
    /// Entries held.
    pub(super) fn len(&self) -> usize {
        match self {
            Buf::Table(t) => t.len(),
            Buf::Pairs(_, v) => v.len(),
        }
    }

    fn combining(&self) -> bool {
        matches!(self, Buf::Table(_))
    }
}

/// Both ends of an unbounded channel.
struct Chan<T> {
    tx: Sender<T>,
    rx: Receiver<T>,
}

impl<T> Chan<T> {
    fn new() -> Self {
        let (tx, rx) = unbounded();
        Chan { tx, rx }
    }
}

/// What a run's buffers came to, for the stats.
#[derive(Debug, Clone, Copy)]
pub(super) struct Buffered {
    /// Buffers allocated.
    pub(super) allocated: usize,
    /// The most bytes buffered at once.
    pub(super) peak: usize,
}

/// How big a buffer is and how many may exist.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sizing {
    /// Keys a combining buffer takes before it is handed off.
    pub(super) keys: usize,
    /// Pairs a combining buffer takes before it is handed off (bounds the
    /// work and, for collecting combiners, the memory one buffer stands for).
    pub(super) pairs: usize,
    /// Keys a combining buffer's table holds at most (at least `keys`): a
    /// table starts small and grows up to this while its mapper fills it.
    pub(super) table_keys: usize,
    /// Pairs an append buffer takes (its capacity: it never grows).
    pub(super) append: usize,
    /// Bytes of one buffer at its largest, of either kind (an append
    /// buffer is never larger than a full-grown combining one).
    pub(super) bytes: usize,
    /// Buffers that may exist at once: the bound on buffered bytes divided
    /// by `bytes`.
    pub(super) budget: usize,
}

/// Keys a new combining buffer has room for before it first grows.
const START_KEYS: usize = 1024;

impl Sizing {
    /// Sizes buffers of at most `buffer_bytes` (`None`: combining tables
    /// take the bound's share, append buffers [`DEFAULT_BUFFER_BYTES`]) for
    /// `mappers` mappers and `reducers` reducers within `max_bytes`; an
    /// error if the bound cannot hold the buffers the exchange needs to
    /// make progress (one being filled per mapper and reducer, plus one
    /// spare per mapper).
    pub(super) fn new<J: Job>(
        buffer_bytes: Option<usize>,
        max_bytes: usize,
        mappers: usize,
        reducers: usize,
    ) -> Result<Sizing, Error> {
        let slot = slot_bytes::<J>();
        let needed = mappers * (reducers + 1);
        let share = max_bytes / needed.max(1);
        let table_bytes = buffer_bytes.unwrap_or(share).min(share);
        // The largest power-of-two slot array within `table_bytes` (16
        // slots at least), filled to just under the table's load limit.
        let slots = (table_bytes / slot).max(16);
        let slots = 1usize << (usize::BITS - 1 - slots.leading_zeros());
        let table_keys = (slots * 7 / 10).saturating_sub(1).max(1);
        let keys = (table_bytes / slot).clamp(1, table_keys);
        let bytes = slots * slot;
        let pair = std::mem::size_of::<(J::Key, StateOf<J>)>() + std::mem::size_of::<u64>();
        let append_bytes = buffer_bytes.unwrap_or(DEFAULT_BUFFER_BYTES);
        let sizing = Sizing {
            keys,
            pairs: keys.saturating_mul(16),
            table_keys,
            append: (append_bytes / pair).clamp(1, bytes / pair),
            bytes,
            budget: max_bytes / bytes,
        };
        if sizing.budget < needed {
            return Err(Error::Config(format!(
                "a bound of {max_bytes} buffered bytes is too small for the pipelined mode \
                 with {mappers} mapper(s) and {reducers} reducer(s): it needs at least {} \
                 ({needed} buffers of {} bytes)",
                needed * sizing.bytes,
                sizing.bytes
            )));
        }
        Ok(sizing)
    }

    /// The smallest bound on buffered bytes [`Sizing::new`] accepts for
    /// `mappers` mappers and `reducers` reducers: the buffers the exchange
    /// needs, at the smallest table (16 slots) each.
    pub(super) fn least<J: Job>(mappers: usize, reducers: usize) -> usize {
        mappers * (reducers + 1) * 16 * slot_bytes::<J>()
    }
}

/// Bytes of one slot of a table of the job's keys and states.
fn slot_bytes<J: Job>() -> usize {
    std::mem::size_of::<Option<(J::Key, StateOf<J>)>>().max(1)
}

/// What one worker did, counted by itself.
#[derive(Debug, Default, Clone)]
pub(super) struct Clock {
    /// Time spent running `map` (folds and waits inside it excluded).
    pub(super) map: Duration,
    /// Time spent folding buffers and finishing partitions.
    pub(super) reduce: Duration,
    /// Time spent waiting: back-pressure with nothing to fold, or an idle
    /// reducer waiting for buffers.
    pub(super) idle: Duration,
    /// Buffers this worker folded.
    pub(super) folded: u64,
    /// Of those, buffers of another worker's partition.
    pub(super) helped: u64,
    /// Buffers this worker handed off as a mapper.
    pub(super) sent: u64,
    /// Times this worker, as a mapper, found the buffer budget spent.
    pub(super) waits: u64,
}

/// Spin, then yield, then sleep: waiting without burning a shared core.
#[derive(Default)]
pub(super) struct Backoff {
    step: u32,
}

impl Backoff {
    /// Waits a little longer than last time; returns how long.
    pub(super) fn wait(&mut self) -> Duration {
        let start = Instant::now();
        match self.step {
            0..=3 => (0..64).for_each(|_| std::hint::spin_loop()),
            4..=7 => std::thread::yield_now(),
            s => std::thread::sleep(Duration::from_micros(50 << (s - 8).min(4))),
        }
        self.step += 1;
        start.elapsed()
    }

    /// Back to short waits, after useful work.
    pub(super) fn reset(&mut self) {
        self.step = 0;
    }
}

/// What the workers of one pipelined run share.
pub(super) struct Exchange<'j, J: Job> {
    pub(super) job: &'j J,
    /// The job's combiner, shared by every worker.
    pub(super) combiner: J::Combiner,
    /// Workers: every worker is a reducer, owning partition `w`.
    pub(super) workers: usize,
    pub(super) sizing: Sizing,
    /// Partition `r`, folded into by whoever holds the lock: reducer `r`
    /// itself, or an idle worker helping it.
    parts: Vec<Mutex<Reducer<J>>>,
    /// The memory budget the partitions are checked against, and where
    /// they spill.
    pub(super) spiller: &'j Spiller<'j, J>,
    /// `inbox[r][m]`: full buffers from mapper `m` for reducer `r` (one
    /// channel per mapper/reducer pair, so mappers never contend).
    inbox: Vec<Vec<Chan<Sent<J>>>>,
    /// `free[m]`: emptied buffers going back to mapper `m`.
    free: Vec<Chan<Buf<J>>>,
    /// The splits left to map, for the mappers to take.
    pub(super) tasks: Tasks,
    /// The run's progress counter and trace: each split's bytes once it is
    /// mapped, a span per task.
    pub(super) watch: Watch<'j>,
    /// Workers that have not yet sent their last buffer (every worker
    /// sends: its map output, or its share of a kept sample). Each worker
    /// decrements it once, with release ordering, after its last send;
    /// reducers read it with acquire ordering, so a reducer that sees 0
    /// also sees every buffer in the channels.
    pub(super) mappers_left: AtomicUsize,
    /// Set by a worker that has nothing left to map or fold while others
    /// still map; the first mapper to see it (at its next check, every
    /// [`CHECK_EVERY`] pairs or between splits) clears it and hands off
    /// every buffer it is filling, so the idle worker can fold them while
    /// it maps on. Relaxed: a hint; the buffers travel through channels.
    pub(super) wanted: AtomicBool,
    /// Buffers allocated so far (never more than `sizing.budget`): a
    /// mapper claims one with a relaxed compare-and-swap loop before
    /// allocating; it is a counter only (the buffers themselves move through
    /// the channels, which synchronize).
    allocated: AtomicUsize,
    /// Bytes of buffers out of the free lists (being filled, in flight, or
    /// being folded): added to (relaxed) by the mapper taking a buffer,
    /// subtracted from by the worker returning it after folding. Statistics
    /// only; bounded by `allocated * sizing.bytes`.
    live: AtomicUsize,
    /// The largest value `live` reached (relaxed `fetch_max` by whoever
    /// raised it; read after the run).
    peak: AtomicUsize,
    /// The first failure; every loop of the run checks it.
    pub(super) failure: Failure,
}

/// An empty partition `r` with room for `keys` keys, folding with
/// `combiner`.
fn empty_part<J: Job>(r: usize, keys: usize, combiner: &J::Combiner) -> Reducer<J> {
    let table = HashContainer::new(1, keys, combiner.clone());
    Worker::new(r, Counting::new(table))
}

/// Locks a partition table (a panic while one was held is reported through
/// the run's failure, so a poisoned lock holds no news).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<'j, J: Job> Exchange<'j, J> {
    /// The exchange of a run with `workers` workers.
    pub(super) fn new(
        job: &'j J,
        workers: usize,
        tasks: Tasks,
        sizing: Sizing,
        spiller: &'j Spiller<'j, J>,
        watch: Watch<'j>,
    ) -> Self {
        let combiner = job.combiner();
        Exchange {
            job,
            parts: (0..workers)
                .map(|r| Mutex::new(empty_part::<J>(r, INITIAL_CAPACITY, &combiner)))
                .collect(),
            combiner,
            workers,
            sizing,
            spiller,
            inbox: (0..workers)
                .map(|_| (0..workers).map(|_| Chan::new()).collect())
                .collect(),
            free: (0..workers).map(|_| Chan::new()).collect(),
            tasks,
            watch,
            mappers_left: AtomicUsize::new(workers),
            wanted: AtomicBool::new(false),
            allocated: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            failure: Failure::new(),
        }
    }

    /// True when a mapper should fold the buffers waiting for its own
    /// partition before it maps on: only while splits remain (else other
    /// workers are idle and fold for it) and more than half the bound is
    /// buffered. Below that, folding is left for idle moments (a worker out
    /// of splits while others still map: the straggler's tail), so that the
    /// reduce work fills idle time instead of delaying map.
    pub(super) fn should_fold(&self) -> bool {
        self.tasks.remain()
            && self.live.load(Ordering::Relaxed) > self.sizing.budget * self.sizing.bytes / 2
    }

    /// True (once per request) when an idle worker has asked for buffers
    /// to fold: the caller should hand off what it holds.
    pub(super) fn take_request(&self) -> bool {
        self.wanted.load(Ordering::Relaxed) && self.wanted.swap(false, Ordering::Relaxed)
    }

    /// Buffers allocated, and the peak of buffered bytes.
    pub(super) fn memory(&self) -> Buffered {
        Buffered {
            allocated: self.allocated.load(Ordering::Relaxed),
            peak: self.peak.load(Ordering::Relaxed),
        }
    }

    /// Hands a full buffer from mapper `m` to reducer `r`: `pairs` pairs
    /// emitted into it.
    pub(super) fn send(&self, m: usize, r: usize, (buf, pairs): Sent<J>) {
        // The receivers live as long as the exchange: sending cannot fail.
        let _ = self.inbox[r][m].tx.send((buf, pairs));
    }

    /// A new buffer of the given kind.
    fn new_buf(&self, combining: bool) -> Buf<J> {
        if combining {
            Buf::Table(Table::with_capacity(self.sizing.table_keys.min(START_KEYS)))
        } else {
            Buf::Pairs(
                Vec::with_capacity(self.sizing.append),
                Vec::with_capacity(self.sizing.append),
            )
        }
    }

    /// An empty buffer of the given kind for mapper `me`: a recycled one,
    /// else a new one within the budget, else (back-pressure) it folds
    /// waiting buffers or waits until a buffer comes back. `None` when the
    /// run has failed.
    pub(super) fn acquire(&self, me: usize, combining: bool, clock: &mut Clock) -> Option<Buf<J>> {
        let mut counted = false;
        let mut backoff = Backoff::default();
        loop {
            if let Ok(b) = self.free[me].rx.try_recv() {
                return Some(self.taken(b, combining));
            }
            let claim = self
                .allocated
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                    (n < self.sizing.budget).then_some(n + 1)
                });
            if claim.is_ok() {
                return Some(self.taken(self.new_buf(combining), combining));
            }
            // The budget is spent: any mapper's spare will do, else fold
            // (which frees buffers), else wait for a fold in progress.
            if !counted {
                clock.waits += 1;
                counted = true;
            }
            for m in (0..self.workers).filter(|&m| m != me) {
                if let Ok(b) = self.free[m].rx.try_recv() {
                    return Some(self.taken(b, combining));
                }
            }
            if self.failure.is_set() {
                return None;
            }
            if self.help(me, clock) > 0 {
                backoff.reset();
            } else {
                clock.idle += backoff.wait();
            }
        }
    }

    /// Accounts for a buffer leaving the free lists; one of the other kind
    /// is replaced (in the same place of the budget: both kinds take at
    /// most `sizing.bytes`).
    fn taken(&self, b: Buf<J>, combining: bool) -> Buf<J> {
        let live = self.live.fetch_add(self.sizing.bytes, Ordering::Relaxed) + self.sizing.bytes;
        self.peak.fetch_max(live, Ordering::Relaxed);
        if b.combining() == combining {
            b
        } else {
            self.new_buf(combining)
        }
    }

    /// Gives an empty buffer back to mapper `m`.
    pub(super) fn recycle(&self, m: usize, buf: Buf<J>) {
        self.live.fetch_sub(self.sizing.bytes, Ordering::Relaxed);
        let _ = self.free[m].tx.send(buf);
    }

    /// Folds up to [`FOLDS_PER_LOCK`] buffers waiting for reducer `r`,
    /// unless another worker is folding into partition `r` right now.
    /// Returns the buffers folded. `me` is the calling worker (for the
    /// helped count, and to start at a different mapper's channel than the
    /// other workers).
    pub(super) fn drain(&self, r: usize, me: usize, clock: &mut Clock) -> usize {
        let Ok(mut part) = self.parts[r].try_lock() else {
            return 0;
        };
        let mut folded = 0;
        let mut start = None;
        for m in (0..self.workers).map(|i| (me + i) % self.workers) {
            if folded == FOLDS_PER_LOCK {
                break;
            }
            let chan = &self.inbox[r][m];
            while let Some((mut buf, pairs)) = (folded < FOLDS_PER_LOCK)
                .then(|| chan.rx.try_recv().ok())
                .flatten()
            {
                start.get_or_insert_with(Instant::now);
                // Folded, then checked against the budget (and spilled
                // if over): the fold's errors and panics and the spill's
                // are the run's failure.
                let folded_ok = self.failure.run(Phase::Reduce, || {
                    self.fold(&mut part, &mut buf, pairs);
                    part.check(self.spiller, me)
                });
                if !folded_ok {
                    return folded;
                }
                folded += 1;
                self.recycle(m, buf);
            }
        }
        if let Some(s) = start {
            clock.reduce += s.elapsed();
        }
        clock.folded += folded as u64;
        if r != me {
            clock.helped += folded as u64;
        }
        folded
    }

    /// Folds one buffer of `pairs` pairs into a partition, leaving the
    /// buffer empty.
    fn fold(&self, part: &mut Reducer<J>, buf: &mut Buf<J>, pairs: usize) {
        part.container.pairs += pairs as u64;
        let table = part.container.inner.part_mut(0);
        if let Buf::Table(t) = buf {
            if table.len() == 0 && t.bytes() > table.bytes() {
                // An empty partition adopts a mapper's table whole.
                std::mem::swap(table, t);
            }
        }
        let need = table.len() + buf.len();
        if need > table.capacity() {
            let keys = match buf {
                Buf::Table(_) => need.max(2 * table.len()),
                Buf::Pairs(..) => need * GROWTH,
            };
            // Not past the partition's share of the budget (at half load,
            // as the barrier's tables): it would spill at once.
            let fit = self.spiller.share() / (2 * slot_bytes::<J>());
            table.reserve(keys.min(fit.max(need)));
        }
        let merge = |s: &mut StateOf<J>, o| self.combiner.merge(s, o);
        match buf {
            Buf::Table(t) => t.drain_into(table, merge),
            Buf::Pairs(h, v) => table.merge_hashed_all(h, v, merge),
        }
    }

    /// Folds whatever is waiting for any reducer, worker `me`'s own
    /// partition first. Returns the buffers folded.
    pub(super) fn help(&self, me: usize, clock: &mut Clock) -> usize {
        (0..self.workers)
            .map(|i| self.drain((me + i) % self.workers, me, clock))
            .sum()
    }

    /// True when no buffer waits in any channel.
    pub(super) fn all_folded(&self) -> bool {
        self.inbox.iter().flatten().all(|c| c.rx.is_empty())
    }

    /// Takes partition `r` out, once every buffer has been folded.
    pub(super) fn take_part(&self, r: usize) -> Reducer<J> {
        std::mem::replace(
            &mut *lock(&self.parts[r]),
            empty_part::<J>(r, 0, &self.combiner),
        )
    }
}
