//! The barrier mode under a memory budget: each map worker checks its
//! container against its share after every split and spills it when it is
//! over ([`Worker::check`]); when any worker spilled, reduce merges
//! every partition's runs from disk with what the containers still hold
//! ([`reduce_spilled`]).
//!
//! The pipelined mode's reducers are [`Worker`]s too, each over a
//! one-partition hash container: whoever folds buffers into a partition
//! checks it the same way, and its reducer merges its runs at the end
//! ([`Worker::reduce_alone`]).

use std::path::PathBuf;
use std::time::Instant;

use super::{Run, Tasks};
use crate::busy::Busy;
use crate::combine::Combiner;
use crate::container::{Container, Counting};
use crate::error::{Error, Phase, Result};
use crate::job::{Job, StateOf};
use crate::key::Key;
use crate::memory::{Budget, Ledger};
use crate::pool::Pool;
use crate::progress::Watch;
use crate::spill::{self, Codec, Layout, Plan, Ranges, Source, SpillDir, Spilled, Writer};
use crate::stats::{secs, MemoryStats};
use crate::trace::{Args, SpanKind, Track};
use crate::unwind;

/// A run's memory settings: the budget, where spills go, and the bytes
/// of the budget the input buffers take.
#[derive(Debug, Clone)]
pub(crate) struct Memory {
    pub(crate) budget: Budget,
    pub(crate) dir: PathBuf,
    pub(crate) reserved: u64,
}

/// What every worker of a run shares to check its container against the
/// budget and spill it, and to reduce the containers: the job and its
/// combiner, the budget's shares, the ledger and where spills go.
pub(crate) struct Spiller<'r, J: Job> {
    pub(super) job: &'r J,
    share: usize,
    /// The budget less the input buffers: what a merge on one thread may
    /// give its run readers.
    merge_bytes: usize,
    budget: Budget,
    ledger: Ledger,
    dir: SpillDir,
    layout: Layout,
    codec: Option<Codec<J::Key, StateOf<J>>>,
    pub(super) combiner: &'r J::Combiner,
    pub(super) watch: Watch<'r>,
}

impl<'r, J: Job> Spiller<'r, J> {
    /// The spiller of a run of `job` with `workers` workers, folding with
    /// `combiner`.
    pub(crate) fn new(
        memory: &Memory,
        job: &'r J,
        combiner: &'r J::Combiner,
        workers: usize,
        watch: Watch<'r>,
    ) -> Self {
        Spiller {
            job,
            share: memory.budget.share(memory.reserved, workers),
            merge_bytes: memory.budget.bytes.saturating_sub(memory.reserved) as usize,
            budget: memory.budget,
            ledger: Ledger::new(workers),
            dir: SpillDir::under(memory.dir.clone()),
            layout: Layout::ByPartition,
            codec: job.codec(),
            combiner,
            watch,
        }
    }
}

impl<J: Job> Spiller<'_, J> {
    /// The spiller of a run that hands its output over in key order
    /// (`hands`), or collects it: the first merges in key ranges across
    /// the partitions, so its workers' runs are laid out by key; the
    /// other by partition (the default).
    pub(crate) fn hands(self, hands: bool) -> Self {
        let layout = match hands {
            true => Layout::ByKey,
            false => Layout::ByPartition,
        };
        Spiller { layout, ..self }
    }

    /// One worker's share of the budget, in bytes.
    pub(crate) fn share(&self) -> usize {
        self.share
    }
}

/// One map worker's container (keys `K`) and its spill file.
pub(crate) struct Worker<C, K> {
    pub(crate) index: usize,
    pub(crate) container: Counting<C>,
    /// Pairs the container had received at its last spill.
    spilled_at: u64,
    writer: Option<Writer<K>>,
    spill_secs: f64,
}

impl<C, K: Key> Worker<C, K> {
    /// Worker `index`, mapping into `container`.
    pub(crate) fn new(index: usize, container: Counting<C>) -> Self {
        Worker {
            index,
            container,
            spilled_at: 0,
            writer: None,
            spill_secs: 0.0,
        }
    }

    /// The bytes the container holds, as tracked: its own arrays, and the
    /// values a non-folding combiner keeps.
    fn held<J: Job<Key = K>>(&self) -> usize
    where
        C: Container<K, J::Value, J::Combiner>,
    {
        let kept = match J::Combiner::FOLDS {
            true => 0,
            false => self.container.pairs - self.spilled_at,
        };
        self.container.memory_bytes() + kept as usize * std::mem::size_of::<J::Value>()
    }

    /// Reports the container's bytes and, if they pass the worker's share,
    /// spills it: every partition sorted by key, written as one run. Called
    /// after each split (barrier) or each fold of buffers into a pipelined
    /// reducer's partition, by pool worker `by` (traced on its track).
    pub(crate) fn check<J: Job<Key = K>>(&mut self, s: &Spiller<'_, J>, by: usize) -> Result<()>
    where
        C: Container<K, J::Value, J::Combiner>,
    {
        let held = self.held::<J>();
        s.ledger.hold(self.index, held as u64);
        if held <= s.share {
            return Ok(());
        }
        let Some(codec) = s.codec else {
            return match s.budget.explicit {
                true => Err(Error::MemoryLimit {
                    limit: s.budget.bytes,
                }),
                false => Ok(()),
            };
        };
        self.spill(s, codec, by)
    }

    /// Spills what the container holds, if anything: what is left of a
    /// worker that spilled before, at the end of map.
    fn spill_rest<J: Job<Key = K>>(&mut self, s: &Spiller<'_, J>) -> Result<()>
    where
        C: Container<K, J::Value, J::Combiner>,
    {
        match (s.codec, self.container.distinct()) {
            (Some(codec), 1..) => self.spill(s, codec, self.index),
            _ => Ok(()),
        }
    }

    /// Spills the container: every partition sorted by key, written as one
    /// run, traced on pool worker `by`'s track.
    fn spill<J: Job<Key = K>>(
        &mut self,
        s: &Spiller<'_, J>,
        codec: Codec<K, StateOf<J>>,
        by: usize,
    ) -> Result<()>
    where
        C: Container<K, J::Value, J::Combiner>,
    {
        if self.container.distinct() == 0 {
            // Empty tables past the share: nothing to write.
            return Ok(());
        }
        let start = Instant::now();
        let writer = match &mut self.writer {
            Some(w) => w,
            None => self
                .writer
                .insert(Writer::create(&s.dir, self.index, s.layout)?),
        };
        let before = writer.bytes();
        let emptied = writer.spill(self.container.inner.drain(s.combiner), codec)?;
        self.container.inner.refill(emptied);
        self.spilled_at = self.container.pairs;
        self.spill_secs += secs(start.elapsed());
        let args = Args {
            index: Some(writer.spills - 1),
            bytes: Some(writer.bytes() - before),
            pairs: None,
        };
        s.watch
            .span(Track::Worker(by), SpanKind::Spill, start, args);
        s.watch.spilled();
        s.ledger.hold(self.index, self.held::<J>() as u64);
        Ok(())
    }

    /// Whether the worker has spilled.
    pub(crate) fn spilled(&self) -> bool {
        self.writer.is_some()
    }

    /// What the worker has written to disk so far.
    pub(crate) fn written(&self) -> Written {
        let w = self.writer.as_ref();
        Written {
            spills: w.map_or(0, |w| w.spills),
            runs: w.map_or(0, |w| w.runs() as u64),
            bytes: w.map_or(0, Writer::bytes),
            secs: self.spill_secs,
        }
    }

    /// Reduces a worker whose container is one whole partition (a
    /// pipelined reducer's): in memory if it never spilled, else its runs
    /// merged with what the container still holds, in key order.
    pub(crate) fn reduce_alone<J: Job<Key = K>>(self, s: &Spiller<'_, J>) -> Result<Run<J>>
    where
        C: Container<K, J::Value, J::Combiner>,
    {
        if !self.spilled() {
            let parts = self.container.inner.into_parts();
            return Ok(C::reduce(parts, s.combiner, |k, r| s.job.reduce(k, r)));
        }
        let (files, columns) = take_out(s, vec![self])?;
        let parts = columns.into_iter().flatten().collect();
        merge_partition(s, &files, 0, parts)
    }
}

/// What one worker wrote to its spill file, for the stats.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Written {
    spills: u64,
    runs: u64,
    bytes: u64,
    secs: f64,
}

/// The memory stats of a run whose workers wrote `written`.
pub(crate) fn memory_stats<J: Job>(
    s: &Spiller<'_, J>,
    written: impl Iterator<Item = Written> + Clone,
) -> MemoryStats {
    MemoryStats {
        limit_bytes: s.budget.bytes,
        limit_explicit: s.budget.explicit,
        peak_tracked_bytes: s.ledger.peak(),
        spills: written.clone().map(|w| w.spills).sum(),
        spill_runs: written.clone().map(|w| w.runs).sum(),
        spilled_bytes: written.clone().map(|w| w.bytes).sum(),
        spill_secs: written.map(|w| w.secs).sum(),
        // Set once the reduce phase has merged the runs.
        merge_secs: 0.0,
    }
}

/// One partition of one container, taken out: (key, state) pairs.
type Entries<J> = Vec<(<J as Job>::Key, StateOf<J>)>;

/// Where a run hands its output when it does not collect it: called once
/// per key, in key order.
pub(crate) type Each<'e, J> = &'e mut dyn FnMut(<J as Job>::Key, <J as Job>::Out) -> Result<()>;

/// What the containers of a run still hold, by partition
/// (`columns[p][w]`: partition `p` of worker `w`).
type Columns<J> = Vec<Vec<Entries<J>>>;

/// The finished spill files of a run's workers.
type Files<J> = Vec<Spilled<<J as Job>::Key>>;

/// Everything the workers of a spilled run hold, taken out for the merge:
/// their finished spill files, and what each container still holds.
fn take_out<J: Job, C: Container<J::Key, J::Value, J::Combiner>>(
    s: &Spiller<'_, J>,
    workers: Vec<Worker<C, J::Key>>,
) -> Result<(Files<J>, Columns<J>)> {
    let mut files: Files<J> = Vec::new();
    let mut columns: Columns<J> = Vec::new();
    for mut w in workers {
        if let Some(writer) = w.writer.take() {
            files.push(writer.finish()?);
        }
        for (p, part) in w.container.inner.drain(s.combiner).into_iter().enumerate() {
            if p == columns.len() {
                columns.push(Vec::new());
            }
            columns[p].push(part);
        }
    }
    Ok((files, columns))
}

/// A merge source of entries still in memory: sorted by key.
fn in_memory<'f, K: Ord, S>(mut part: Vec<(K, S)>) -> Source<'f, K, S> {
    part.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Source::Memory(part.into_iter())
}

/// Partition `p` reduced: its section of every run in `files` merged with
/// its entries still in memory (`parts`, one per container), each key's
/// states joined and reduced once, in key order.
fn merge_partition<J: Job>(
    s: &Spiller<'_, J>,
    files: &[Spilled<J::Key>],
    p: usize,
    parts: Vec<Entries<J>>,
) -> Result<Run<J>> {
    let codec = s.codec.expect("only a job with a codec spills");
    let runs: usize = files.iter().map(|f| f.count(p)).sum();
    let buffer = spill::read_buffer(s.share, runs);
    let mut sources: Vec<Source<'_, _, _>> = files
        .iter()
        .flat_map(|f| f.runs_of(p, codec, buffer))
        .map(Source::Disk)
        .collect();
    sources.extend(parts.into_iter().map(in_memory));
    merge_reduced(s, sources, 0)
}

/// `sources` merged, each key's states joined and reduced once, in key
/// order, into an output with room for `entries` entries.
fn merge_reduced<J: Job>(
    s: &Spiller<'_, J>,
    sources: Vec<Source<'_, J::Key, StateOf<J>>>,
    entries: usize,
) -> Result<Run<J>> {
    let mut out = Vec::with_capacity(entries);
    let (job, combiner) = (s.job, s.combiner);
    let join = |a: &mut StateOf<J>, b| combiner.merge(a, b);
    let reduce = |k: J::Key, st| {
        let o = combiner.finish(st, |r| job.reduce(&k, r));
        out.push((k, o));
        Ok(())
    };
    spill::merge(sources, join, reduce)?;
    Ok(out)
}

/// Reduces a run in which some worker spilled: partition `p` is the merge
/// of `p`'s runs on disk and what every container still holds of `p`, one
/// task per partition. Returns the runs in partition order and the tasks
/// each worker ran.
pub(crate) fn reduce_spilled<J: Job, C: Container<J::Key, J::Value, J::Combiner>>(
    pool: &Pool,
    s: &Spiller<'_, J>,
    workers: Vec<Worker<C, J::Key>>,
    busy: &Busy<'_>,
) -> Result<(Vec<Run<J>>, Vec<u64>)> {
    let (files, columns) = take_out(s, workers)?;
    reduce_columns(pool, s, files, columns, busy)
}

/// [`reduce_spilled`] once the containers are taken out (compiled once
/// per job, not per job and container).
fn reduce_columns<J: Job>(
    pool: &Pool,
    s: &Spiller<'_, J>,
    files: Files<J>,
    columns: Columns<J>,
    busy: &Busy<'_>,
) -> Result<(Vec<Run<J>>, Vec<u64>)> {
    let tasks = Tasks::new(pool, s.watch);
    let task = |p, parts: Vec<Entries<J>>| {
        tasks.run(p, || {
            let merge = || merge_partition(s, &files, p, parts);
            unwind::catch(Phase::Reduce, || busy.time(merge))?
        })
    };
    let runs: Vec<Result<Run<J>>> = pool.map_each(columns, task);
    let runs = runs.into_iter().collect::<Result<Vec<_>>>()?;
    Ok((runs, tasks.counts()))
}

/// Reduces a run in which some worker spilled straight into `each`, each
/// key reduced and handed over in key order, and no output held in
/// memory past a few key ranges'. What the containers still hold is
/// spilled first, so that every source is a run on disk that can be cut
/// at a key (and the containers' memory is the merge's; their runs are
/// laid out by key, [`Layout::ByKey`], so a range reads one section per
/// run); then the key space is cut into ranges of about equal bytes
/// ([`Ranges`], sized by a [`Plan`] of the budget), each range's runs are
/// merged and reduced by one task on the workers, a few ranges ahead of
/// the one handed over, and the calling thread hands the ranges' keys to
/// `each` in range order. A range's output is in the ledger from its
/// merge until it is handed over. Returns the keys handed over, the tasks
/// each worker ran (a range is a task) and the memory stats, the last
/// spills and the ranges' outputs counted.
pub(crate) fn stream_spilled<J: Job, C: Container<J::Key, J::Value, J::Combiner>>(
    pool: &Pool,
    s: &Spiller<'_, J>,
    workers: Vec<Worker<C, J::Key>>,
    each: Each<'_, J>,
) -> Result<(u64, Vec<u64>, MemoryStats)> {
    let spilled = pool.map_each(workers, |_, mut w: Worker<C, J::Key>| {
        let done = w.spill_rest(s);
        (w, done)
    });
    let mut workers = Vec::with_capacity(spilled.len());
    for (w, done) in spilled {
        done?;
        workers.push(w);
    }
    let written: Vec<Written> = workers.iter().map(Worker::written).collect();
    let (files, _) = take_out(s, workers)?;
    stream_files(pool, s, files, written, each)
}

/// [`stream_spilled`] once every worker's entries are on disk (compiled
/// once per job, not per job and container).
fn stream_files<J: Job>(
    pool: &Pool,
    s: &Spiller<'_, J>,
    files: Files<J>,
    written: Vec<Written>,
    each: Each<'_, J>,
) -> Result<(u64, Vec<u64>, MemoryStats)> {
    let codec = s.codec.expect("only a job with a codec spills");
    // The containers are gone: the merge holds the budget.
    (0..written.len()).for_each(|w| s.ledger.hold(w, 0));
    let entry = std::mem::size_of::<(J::Key, J::Out)>();
    let plan = Plan::new(&files, s.merge_bytes, pool.threads(), entry);
    let ranges = Ranges::new(&files, plan.range_bytes);
    let tasks = Tasks::new(pool, s.watch);
    let merge_range = |r: usize| {
        tasks.run(r, || {
            let sources = ranges.sources(r, codec, plan.buffer);
            let merge = || merge_reduced(s, sources, plan.range_entries);
            let out = unwind::catch(Phase::Reduce, merge)??;
            s.ledger.merged((out.len() * entry) as u64);
            Ok(out)
        })
    };
    let mut released = ranges.unreleased();
    let mut keys = 0u64;
    let hand = |r: usize, out: Result<Run<J>>| {
        let out = out?;
        let bytes = (out.len() * entry) as u64;
        for (k, o) in out {
            keys += 1;
            each(k, o)?;
        }
        s.ledger.hand_over(bytes);
        if r + 1 < ranges.len() {
            ranges.release(r + 1, &mut released);
        }
        Ok(())
    };
    pool.ordered(ranges.len(), plan.window, merge_range, hand)?;
    Ok((keys, tasks.counts(), memory_stats(s, written.into_iter())))
}
