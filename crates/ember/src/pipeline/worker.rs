//! One worker of a pipelined run: a mapper that hands off full buffers and
//! folds the buffers waiting for its own partition between hand-offs and
//! between splits, then a reducer that helps fold whatever is left and
//! finishes its partition.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::exchange::{Backoff, Buf, Clock, Exchange, Sizing, CHECK_EVERY, MIN_COMBINING};
use crate::barrier::Written;
use crate::combine::Combiner;
use crate::container::table::Table;
use crate::container::{in_batches, partition_of, probes_in_batches};
use crate::error::Phase;
use crate::input::{Input, SplitRange};
use crate::job::{Emit, Job, StateOf};
use crate::key::Key;
use crate::schedule::{malformed, pull, split_in};
use crate::stats::secs;
use crate::trace::{Args, SpanKind, Track};
use crate::unwind;

/// What a worker brings back from the run.
pub(super) struct Report<J: Job> {
    /// Its partition, reduced (empty after a failure).
    pub(super) run: Vec<(J::Key, J::Out)>,
    /// Splits it mapped.
    pub(super) tasks: u64,
    /// Pairs its `map` calls emitted.
    pub(super) pairs: u64,
    /// When it finished mapping (None for a dedicated reducer).
    pub(super) map_end: Option<Instant>,
    /// Whether it ended with combining buffers (None: it did not map).
    pub(super) combining: Option<bool>,
    /// Where its time went.
    pub(super) clock: Clock,
    /// What its partition spilled.
    pub(super) written: Written,
    /// Seconds the merge of its partition's runs took (0 if it did not
    /// spill).
    pub(super) merge_secs: f64,
}

/// A mapper's sink: one combining buffer per reducer.
struct Mapper<'x, 'j, J: Job> {
    x: &'x Exchange<'j, J>,
    me: usize,
    /// The buffer being filled for each reducer.
    outs: Vec<Out<J>>,
    pairs: u64,
    clock: Clock,
    /// The kind of buffer this mapper takes: combining or append.
    combining: bool,
    /// Combining hand-offs left before the mapper judges whether combining
    /// pays (0: judged, or the kind was fixed by the caller).
    trial: usize,
    /// Pairs and entries of the combining hand-offs so far.
    trial_pairs: usize,
    trial_entries: usize,
}

/// The buffer a mapper is filling for one reducer.
struct Out<J: Job> {
    /// Taken lazily, so a mapper holds no buffer for a reducer it has
    /// nothing for.
    buf: Option<Buf<J>>,
    /// Pairs emitted into it since it was taken.
    fill: usize,
}

/// A combining buffer that holds this many keys grows 8x at a time
/// instead of 2x. Each growth allocates a fresh slot array, and fresh
/// memory is costly (the kernel clears every page, and on a VM the host may
/// first have to back it); past 64K keys a table is already beyond the L2
/// cache, so a sparser one costs few more misses. Growing straight to the
/// largest table is too sparse on one thread; after an 8x step a table is
/// at least 4% full, after rounding its slots up to a power of two.
const JUMP_KEYS: usize = 64 << 10;

/// True when a combining buffer holds as many keys as it may; else makes
/// room for more keys if the next one would make the table grow (2x, or 8x
/// past [`JUMP_KEYS`]; never past [`Sizing::table_keys`]), and returns
/// false.
#[inline(always)]
fn full_or_grown<K: Key, S>(t: &mut Table<K, S>, sizing: &Sizing) -> bool {
    if t.len() >= sizing.keys {
        return true;
    }
    if t.half_full() {
        let step = if t.len() >= JUMP_KEYS { 8 } else { 2 };
        t.reserve((t.len() * step).min(sizing.table_keys));
    }
    false
}

/// Combining hand-offs a mapper measures before choosing its buffer kind.
const TRIAL_HANDOFFS: usize = 8;

impl<J: Job> Emit<J::Key, J::Value> for Mapper<'_, '_, J> {
    #[inline(always)]
    fn emit(&mut self, key: <J::Key as Key>::Ref<'_>, value: J::Value) {
        let probe = J::Key::probe(key);
        self.emit_probed(&probe, J::Key::probe_hash(&probe), value);
    }

    #[inline(always)]
    fn prefetch(&mut self, key: <J::Key as Key>::Ref<'_>) {
        self.prefetch_hash(J::Key::probe_hash(&J::Key::probe(key)));
    }

    /// Probes and prefetches a batch of keys, then emits them
    /// ([`in_batches`]).
    #[inline(always)]
    fn emit_batch(&mut self, keys: &[<J::Key as Key>::Ref<'_>], value: J::Value)
    where
        J::Value: Clone,
    {
        in_batches::<J::Key, _>(keys, self, Self::prefetch_hash, |m, p, hash| {
            m.emit_probed(p, hash, value.clone())
        });
    }

    /// Prefetches a batch of probes' slots, then emits them
    /// ([`probes_in_batches`]).
    #[inline(always)]
    fn emit_probes(&mut self, probes: &[<J::Key as Key>::Probe<'_>], value: J::Value)
    where
        J::Value: Clone,
    {
        probes_in_batches::<J::Key, _>(probes, self, Self::prefetch_hash, |m, p, hash| {
            m.emit_probed(p, hash, value.clone())
        });
    }
}

impl<'x, 'j, J: Job> Mapper<'x, 'j, J> {
    /// Emits the pair of a probed key, hashed `hash`.
    #[inline(always)]
    fn emit_probed(&mut self, probe: &<J::Key as Key>::Probe<'_>, hash: u64, value: J::Value) {
        let r = partition_of(hash, self.x.workers);
        self.pairs += 1;
        let out = &mut self.outs[r];
        let buf = match &mut out.buf {
            Some(b) => b,
            empty => match self.x.acquire(self.me, self.combining, &mut self.clock) {
                Some(b) => empty.insert(b),
                // Another worker failed: stop this map call.
                None => unwind::abort(),
            },
        };
        let full = match buf {
            Buf::Table(t) => {
                // Only a new key can fill the table or make it grow, so only
                // then are the limits checked: the emit path stays short.
                let c = &self.x.combiner;
                let new = t.upsert(probe, hash, value, |v| c.init(v), |s, v| c.add(s, v));
                out.fill += 1;
                (new && full_or_grown(t, &self.x.sizing)) || out.fill >= self.x.sizing.pairs
            }
            Buf::Pairs(h, v) => {
                h.push(hash);
                v.push((J::Key::from_probe(probe), self.x.combiner.init(value)));
                v.len() >= self.x.sizing.append
            }
        };
        if full {
            self.hand_off(r);
        }
        if self.pairs.is_multiple_of(CHECK_EVERY) && self.x.take_request() {
            self.flush();
        }
    }

    /// Starts loading the slot of the key hashed `hash`, if its buffer is
    /// a table.
    #[inline(always)]
    fn prefetch_hash(&self, hash: u64) {
        if let Some(Buf::Table(t)) = &self.outs[partition_of(hash, self.x.workers)].buf {
            t.prefetch(hash);
        }
    }

    /// Mapper `me`; `combine` fixes the buffer kind (None: measured).
    fn new(x: &'x Exchange<'j, J>, me: usize, combine: Option<bool>) -> Self {
        Mapper {
            x,
            me,
            outs: (0..x.workers).map(|_| Out { buf: None, fill: 0 }).collect(),
            pairs: 0,
            clock: Clock::default(),
            combining: combine.unwrap_or(true),
            trial: if combine.is_none() { TRIAL_HANDOFFS } else { 0 },
            trial_pairs: 0,
            trial_entries: 0,
        }
    }

    /// Notes a combining hand-off of `entries` entries for `pairs` pairs;
    /// after the trial, switches to append buffers if combining folded too
    /// few pairs per entry to pay for its lookups.
    fn judge(&mut self, pairs: usize, entries: usize) {
        if self.trial == 0 {
            return;
        }
        self.trial_pairs += pairs;
        self.trial_entries += entries;
        self.trial -= 1;
        if self.trial == 0 {
            self.combining = self.trial_pairs as f64 >= MIN_COMBINING * self.trial_entries as f64;
        }
    }

    /// Sends reducer `r`'s buffer; then, if buffers pile up while other
    /// mappers still have splits to map (so nobody is idle to fold for us),
    /// folds what waits for this worker's own partition.
    #[inline(never)]
    fn hand_off(&mut self, r: usize) {
        let fill = std::mem::take(&mut self.outs[r].fill);
        if let Some(buf) = self.outs[r].buf.take() {
            if let Buf::Table(t) = &buf {
                self.judge(fill, t.len());
            }
            // An append buffer holds one entry per pair, and counts none.
            let pairs = fill.max(buf.len());
            self.x.send(self.me, r, (buf, pairs));
            self.clock.sent += 1;
        }
        if self.x.should_fold() {
            self.x.drain(self.me, self.me, &mut self.clock);
        }
    }

    /// Sends every non-empty buffer and returns the empty ones.
    fn flush(&mut self) {
        for r in 0..self.x.workers {
            let fill = std::mem::take(&mut self.outs[r].fill);
            match self.outs[r].buf.take() {
                Some(b) if b.len() > 0 => {
                    let pairs = fill.max(b.len());
                    self.x.send(self.me, r, (b, pairs));
                    self.clock.sent += 1;
                }
                Some(b) => self.x.recycle(self.me, b),
                None => {}
            }
        }
    }

    /// Sends entries already combined elsewhere (a kept sample's) to
    /// their reducers, through append buffers.
    fn seed(&mut self, entries: impl Iterator<Item = (J::Key, StateOf<J>)>) {
        let start = Instant::now();
        let before = (self.clock.reduce, self.clock.idle);
        let combining = std::mem::replace(&mut self.combining, false);
        // Folding waiting buffers (under back-pressure) runs the combiner.
        if !self.x.failure.run(Phase::Reduce, || {
            self.send_entries(entries);
            Ok(())
        }) {
            return;
        }
        self.flush();
        self.combining = combining;
        let nested = (self.clock.reduce - before.0) + (self.clock.idle - before.1);
        self.clock.map += start.elapsed().saturating_sub(nested);
    }

    /// Puts owned entries into append buffers, handing off the full ones.
    fn send_entries(&mut self, entries: impl Iterator<Item = (J::Key, StateOf<J>)>) {
        for (k, s) in entries {
            let hash = k.hash_owned();
            let r = partition_of(hash, self.x.workers);
            let buf = match &mut self.outs[r].buf {
                Some(b) => b,
                empty => match self.x.acquire(self.me, false, &mut self.clock) {
                    Some(b) => empty.insert(b),
                    None => unwind::abort(),
                },
            };
            let full = match buf {
                Buf::Table(t) => {
                    t.merge_owned(k, s, |s, o| self.x.combiner.merge(s, o));
                    full_or_grown(t, &self.x.sizing)
                }
                Buf::Pairs(h, v) => {
                    h.push(hash);
                    v.push((k, s));
                    v.len() >= self.x.sizing.append
                }
            };
            if full {
                self.hand_off(r);
            }
        }
    }

    /// Maps splits until none is left or the run fails.
    fn map_all(&mut self, input: &Input<'_>, splits: &[SplitRange]) -> u64 {
        let x = self.x;
        let tasks = pull(&x.tasks, self.me, &x.failure, x.watch, |i| {
            let split = split_in(input, &splits[i]);
            let (bytes, part, offset) = (split.data.len(), split.part, split.offset);
            let start = Instant::now();
            let before = (self.clock.reduce, self.clock.idle, self.pairs);
            let mapped = x.job.map(split, &mut *self);
            // Folds and waits inside map (at hand-offs) are not map time.
            let nested = (self.clock.reduce - before.0) + (self.clock.idle - before.1);
            self.clock.map += start.elapsed().saturating_sub(nested);
            x.watch.mapped(bytes);
            let args = Args {
                index: Some(i as u64),
                bytes: Some(bytes as u64),
                pairs: Some(self.pairs - before.2),
            };
            x.watch.span(
                Track::Worker(self.me),
                SpanKind::Task(Phase::Map),
                start,
                args,
            );
            if x.take_request() {
                self.flush();
            }
            if x.should_fold() {
                x.drain(self.me, self.me, &mut self.clock);
            }
            mapped.map_err(|m| malformed(m, input, part, offset))
        });
        if !x.failure.is_set() {
            self.flush();
        }
        tasks
    }
}

/// What a worker does besides reducing.
#[derive(Debug, Clone, Copy)]
pub(super) struct Role {
    /// It maps (false for a dedicated reducer).
    pub(super) maps: bool,
    /// The buffer kind, if fixed by the caller.
    pub(super) combine: Option<bool>,
}

/// Runs worker `me`: sends its share of a kept sample (`seed`), maps
/// (unless it is a dedicated reducer), then folds until every worker has
/// sent its last buffer and every buffer is folded, then reduces its
/// partition.
pub(super) fn work<J: Job>(
    x: &Exchange<'_, J>,
    me: usize,
    role: Role,
    seed: Option<impl Iterator<Item = (J::Key, StateOf<J>)>>,
    input: &Input<'_>,
    splits: &[SplitRange],
) -> Report<J> {
    let mut report = Report {
        run: Vec::new(),
        tasks: 0,
        pairs: 0,
        map_end: None,
        combining: None,
        clock: Clock::default(),
        written: Written::default(),
        merge_secs: 0.0,
    };
    let mut mapper = Mapper::new(x, me, role.combine);
    if let Some(entries) = seed {
        mapper.seed(entries);
    }
    if role.maps {
        report.tasks = mapper.map_all(input, splits);
        report.pairs = mapper.pairs;
        report.combining = Some(mapper.combining);
        report.map_end = Some(Instant::now());
    }
    report.clock = mapper.clock;
    // Release: a reducer that reads 0 sees every buffer sent above.
    x.mappers_left.fetch_sub(1, Ordering::Release);
    let clock = &mut report.clock;
    let mut backoff = Backoff::default();
    loop {
        if x.failure.is_set() {
            return report;
        }
        let mapped = x.mappers_left.load(Ordering::Acquire) == 0;
        if x.help(me, clock) > 0 {
            backoff.reset();
        } else if mapped && x.all_folded() {
            break;
        } else {
            if !mapped {
                x.wanted.store(true, Ordering::Relaxed);
            }
            clock.idle += backoff.wait();
        }
    }
    // Every buffer has been taken from its channel, and a buffer is taken
    // only under its partition's lock: once we hold ours, it is complete.
    let part = x.take_part(me);
    report.written = part.written();
    let spilled = part.spilled();
    let start = Instant::now();
    let reduce = || part.reduce_alone(x.spiller);
    let reduced = unwind::catch(Phase::Reduce, reduce).and_then(|run| run);
    clock.reduce += start.elapsed();
    if spilled {
        report.merge_secs = secs(start.elapsed());
    }
    if let Ok(run) = &reduced {
        let args = Args {
            index: Some(me as u64),
            bytes: None,
            pairs: Some(run.len() as u64),
        };
        x.watch.span(
            Track::Worker(me),
            SpanKind::Task(Phase::Reduce),
            start,
            args,
        );
    }
    match reduced {
        Ok(run) => report.run = run,
        Err(e) => x.failure.record(e),
    }
    report
}
