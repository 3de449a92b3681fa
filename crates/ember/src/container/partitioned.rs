//! Partitioned aggregation: each distinct key held once, whatever the
//! worker count (Müller et al., "Cache-Efficient Aggregation: Hashing Is
//! Sorting", SIGMOD 2015; DuckDB's radix-partitioned hash aggregation).
//!
//! The hash container keeps one table per worker, and with a large
//! vocabulary every worker's table holds most of it: memory grows with the
//! workers, every table outgrows the caches, and reduce joins the copies.
//! This container splits the work by key hash instead:
//!
//! 1. **A cache-sized table per worker.** `emit` folds into a small table
//!    ([`Shape::table_keys`], about 1 MiB of slots) with the job's
//!    combiner, as the hash container does: frequent keys combine in cache.
//!    When the table is full, and at the end of every split, all its
//!    entries are **evicted**, already combined, into the worker's buffers:
//!    one per hash partition, each entry with its hash (the partition is a
//!    radix of the hash, [`partition_of`]).
//! 2. **Partitions folded as buffers fill.** A buffer that reaches
//!    [`Shape::buffer_entries`] is folded by its worker into the
//!    partition's one table, shared by all workers behind a lock (taken
//!    with `try_lock`: a worker that finds it held keeps buffering, and
//!    waits only once its buffer is twice full). Every key is in one
//!    partition table, once; a worker holds its small table and its
//!    bounded buffers. With enough partitions (a few per worker, more for
//!    a large vocabulary: see `plan`), a partition's table is small, so a
//!    fold touches little memory and locks rarely collide.
//! 3. **Reduce, one task per partition.** After the map phase, partition
//!    `p`'s table and what every worker still buffers for `p` are joined by
//!    one task ([`Container::reduce`], scheduled as the barrier schedules
//!    every container's partitions) and reduced; the runs go to the merge,
//!    which orders them as the job asks. No key is merged twice: an entry
//!    is folded once into its partition's table.
//!
//! Under a memory budget a worker's share counts its own table and
//! buffers and its share of the partition tables; a worker past it spills
//! everything it can reach ([`Container::drain`]): its own entries and the
//! partition tables, taken out under their locks (the tables are the
//! data's one copy, so any worker may write them). Entries are never lost
//! or counted twice: each is in a worker's table, a buffer, a partition
//! table or a spill file, and moves between them under `&mut` or a lock.
//!
//! `plan` picks this path for the hash container when the sample predicts
//! more keys per worker than a cache holds; small vocabularies keep the
//! hash container's per-worker tables, which then stay in cache and cost
//! no eviction.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Instant;

use super::hash::HashContainer;
use super::table::Table;
use super::{finish, in_batches, partition_of, probes_in_batches, vec_bytes, Container, Counting};
use crate::combine::Combiner;
use crate::job::Emit;
use crate::key::Key;
use crate::stats::PartitionedStats;

/// Bytes of slots a worker's small table takes by default: within a
/// core's L2 cache on current server cores (1-2 MiB), with room to spare
/// for the buffers being written.
const TABLE_BYTES: usize = 1 << 20;
/// Bytes a worker's buffers take at most, all partitions together, by
/// default (each buffer is folded at its share of this).
const BUFFER_BYTES: usize = 2 << 20;
/// The hash bit a worker's small table indexes its slots from
/// ([`Table::rotated`]). An eviction walks the small table in slot order
/// and folds each entry into its partition's table, which indexes from bit
/// 0: indexed by the same bits, the walk reads its slots in the partition
/// tables' own order and misses the cache on most of them; indexed by
/// other bits, it does not.
const SMALL_TABLE_BIT: u32 = 32;
/// A buffer takes at least this many entries before it is folded: a fold
/// takes a lock and loads part of a table, which a few entries do not pay.
const MIN_BUFFER_ENTRIES: usize = 64;
/// A worker that finds a partition locked keeps buffering for it until the
/// buffer is this many times full, then waits for the lock.
const WAIT_AT: usize = 2;

/// Settings of the partitioned layout (for measuring and testing it; the
/// defaults serve): `PartitionedOptions::default()` and its setters.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct PartitionedOptions {
    /// Hash partitions (default: a power of two, at least four per worker,
    /// and enough that each partition's table of the keys the sample
    /// predicts for the whole input takes about 1 MiB).
    pub partitions: Option<usize>,
    /// Keys a worker's small table holds before its entries are evicted to
    /// the partitions' buffers (default: a table of 1 MiB of slots, half
    /// full).
    pub table_keys: Option<usize>,
    /// Entries a worker buffers for one partition before folding them into
    /// the partition's table (default: 2 MiB of buffers per worker in all,
    /// at least 64 entries a partition).
    pub buffer_entries: Option<usize>,
}

crate::derive::setters!(PartitionedOptions {
    partitions: usize,
    table_keys: usize,
    buffer_entries: usize,
});

/// How big a worker's small table and buffers are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Keys a worker's small table holds before it is evicted.
    pub(crate) table_keys: usize,
    /// Entries a partition's buffer takes before its worker folds it.
    pub(crate) buffer_entries: usize,
}

impl Shape {
    /// The shape for keys `K` and states `S` over `partitions` partitions,
    /// for a worker whose share of the memory budget is `share` bytes: the
    /// sizes `opts` gives (at least 1), else a table of [`TABLE_BYTES`] of
    /// slots half full, and buffers of [`BUFFER_BYTES`] in all, or a
    /// quarter of the share if less.
    pub(crate) fn new<K, S>(partitions: usize, opts: &PartitionedOptions, share: usize) -> Shape {
        let slot = std::mem::size_of::<Option<(K, S)>>().max(1);
        let slots = (TABLE_BYTES / slot).max(32);
        let slots = 1 << (usize::BITS - 1 - slots.leading_zeros());
        let entry = std::mem::size_of::<(K, S)>() + std::mem::size_of::<u64>();
        let buffered = BUFFER_BYTES.min(share / 4) / entry / partitions.max(1);
        Shape {
            table_keys: opts.table_keys.unwrap_or(slots / 2).max(1),
            buffer_entries: (opts.buffer_entries)
                .unwrap_or(buffered.max(MIN_BUFFER_ENTRIES))
                .max(1),
        }
    }
}

/// The partition tables every worker of a run folds into: each distinct
/// key once.
pub(crate) struct Partitions<K, S> {
    /// Each starts empty and grows as it is folded into, not reserved: the
    /// sample's prediction runs high on skewed text, and a reserved table
    /// takes more memory than a grown one for no gain in time.
    tables: Vec<Mutex<Table<K, S>>>,
    /// Workers of the run, over which the tables' keys and bytes are
    /// shared out in each worker's report.
    workers: usize,
    /// Keys in all tables: changed by whoever holds a table's lock after a
    /// fold or a drain (relaxed: read for reports and estimates only).
    keys: AtomicUsize,
    /// Bytes of all tables' slots, changed as `keys` is.
    bytes: AtomicUsize,
}

impl<K: Key, S> Partitions<K, S> {
    /// `partitions` empty tables for `workers` workers.
    pub(crate) fn new(partitions: usize, workers: usize) -> Self {
        let partitions = partitions.max(1);
        Partitions {
            tables: (0..partitions)
                .map(|_| Mutex::new(Table::with_capacity(0)))
                .collect(),
            workers: workers.max(1),
            keys: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
        }
    }

    /// Partitions.
    fn len(&self) -> usize {
        self.tables.len()
    }

    /// Partition `p`'s table, when the lock is free or the caller must
    /// wait for it (`wait`); None when it is held and the caller need not.
    fn lock(&self, p: usize, wait: bool) -> Option<MutexGuard<'_, Table<K, S>>> {
        match self.tables[p].try_lock() {
            Ok(t) => Some(t),
            Err(TryLockError::Poisoned(t)) => Some(t.into_inner()),
            Err(TryLockError::WouldBlock) if !wait => None,
            Err(TryLockError::WouldBlock) => Some(
                self.tables[p]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            ),
        }
    }

    /// Takes partition `p`'s table out, leaving an empty one, when it
    /// holds keys.
    fn take(&self, p: usize) -> Option<Table<K, S>> {
        let mut t = self.lock(p, true)?;
        if t.len() == 0 {
            return None;
        }
        let before = (t.len(), t.bytes());
        let taken = std::mem::replace(&mut *t, Table::with_capacity(0));
        self.changed(before, (0, t.bytes()));
        Some(taken)
    }

    /// Records a table's change from `(keys, bytes)` `before` to `after`.
    fn changed(&self, before: (usize, usize), after: (usize, usize)) {
        let shift = |n: &AtomicUsize, from: usize, to: usize| match to >= from {
            true => n.fetch_add(to - from, Relaxed),
            false => n.fetch_sub(from - to, Relaxed),
        };
        shift(&self.keys, before.0, after.0);
        shift(&self.bytes, before.1, after.1);
    }

    /// One worker's share of `total`, rounded up (so that a worker reports
    /// keys as long as any table holds one).
    fn share(&self, total: &AtomicUsize) -> usize {
        total.load(Relaxed).div_ceil(self.workers)
    }
}

/// A worker's entries for one partition, each with its key's hash.
struct Buffer<K, S> {
    hashes: Vec<u64>,
    items: Vec<(K, S)>,
}

impl<K, S> Buffer<K, S> {
    fn new() -> Self {
        Buffer {
            hashes: Vec::new(),
            items: Vec::new(),
        }
    }

    fn bytes(&self) -> usize {
        vec_bytes(&self.hashes) + vec_bytes(&self.items)
    }
}

/// What a worker counts of its own evictions and folds.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    flushes: u64,
    evicted: u64,
    folds: u64,
    contended: u64,
    fold_nanos: u64,
}

/// One worker's partitioned container: its small table, and where its
/// evicted entries go.
pub(crate) struct Partitioned<'p, K, V, C: Combiner<V>> {
    table: Table<K, C::State>,
    out: Out<'p, K, V, C>,
}

/// Where a worker's evicted entries go: its buffers, and the run's
/// partition tables they are folded into.
struct Out<'p, K, V, C: Combiner<V>> {
    buffers: Vec<Buffer<K, C::State>>,
    partitions: &'p Partitions<K, C::State>,
    shape: Shape,
    combiner: C,
    counts: Counts,
    values: PhantomData<fn(V)>,
}

impl<'p, K: Key, V, C: Combiner<V>> Partitioned<'p, K, V, C> {
    /// A worker's container over `partitions`, folding with `combiner`.
    pub(crate) fn new(partitions: &'p Partitions<K, C::State>, shape: Shape, combiner: C) -> Self {
        Partitioned {
            table: Table::with_capacity(shape.table_keys).rotated(SMALL_TABLE_BIT),
            out: Out {
                buffers: (0..partitions.len()).map(|_| Buffer::new()).collect(),
                partitions,
                shape,
                combiner,
                counts: Counts::default(),
                values: PhantomData,
            },
        }
    }

    /// A worker's container that starts with what the sample's hash
    /// container `kept` holds (its pairs still counted), its entries
    /// buffered by partition, each buffer folded as it fills.
    pub(crate) fn seeded(
        partitions: &'p Partitions<K, C::State>,
        shape: Shape,
        combiner: C,
        kept: Counting<HashContainer<K, V, C>>,
    ) -> Counting<Self> {
        let mut c = Partitioned::new(partitions, shape, combiner);
        for table in kept.inner.into_parts() {
            for (k, s) in table {
                c.out.push(k.hash_owned(), k, s);
            }
        }
        Counting {
            inner: c,
            pairs: kept.pairs,
        }
    }

    /// Folds `value` into its key's entry in the small table; evicts the
    /// table when it is full.
    #[inline(always)]
    fn upsert(&mut self, probe: &K::Probe<'_>, hash: u64, value: V) {
        let c = &self.out.combiner;
        let new = self
            .table
            .upsert(probe, hash, value, |v| c.init(v), |s, v| c.add(s, v));
        if new && self.table.len() >= self.out.shape.table_keys {
            self.evict();
        }
    }

    /// Moves every entry of the small table to the buffers, each buffer
    /// folded into its partition's table as it fills.
    #[inline(never)]
    fn evict(&mut self) {
        if self.table.len() == 0 {
            return;
        }
        let out = &mut self.out;
        out.counts.flushes += 1;
        out.counts.evicted += self.table.len() as u64;
        self.table.take_each(|k, s| out.push(k.hash_owned(), k, s));
    }

    /// Entries in the small table and the buffers.
    fn own_entries(&self) -> usize {
        let buffered: usize = self.out.buffers.iter().map(|b| b.items.len()).sum();
        self.table.len() + buffered
    }
}

impl<K: Key, V, C: Combiner<V>> Out<'_, K, V, C> {
    /// Adds an entry (its key hashed `hash`) to its partition's buffer.
    /// A buffer that fills is folded into its partition's table, unless
    /// another worker holds that table, when the buffer takes up to
    /// [`WAIT_AT`] times its size before its worker waits for the lock.
    #[inline]
    fn push(&mut self, hash: u64, key: K, state: C::State) {
        let p = partition_of(hash, self.partitions.len());
        let b = &mut self.buffers[p];
        b.hashes.push(hash);
        b.items.push((key, state));
        let (len, full) = (b.items.len(), self.shape.buffer_entries);
        if len.is_multiple_of(full) {
            match self.partitions.lock(p, len >= full * WAIT_AT) {
                Some(mut table) => self.fold(p, &mut table),
                None => self.counts.contended += 1,
            }
        }
    }

    /// Folds buffer `p` into `table` (partition `p`'s, locked), emptying
    /// the buffer but keeping its memory.
    fn fold(&mut self, p: usize, table: &mut Table<K, C::State>) {
        let start = Instant::now();
        let before = (table.len(), table.bytes());
        let (c, b) = (&self.combiner, &mut self.buffers[p]);
        table.merge_hashed_all(&mut b.hashes, &mut b.items, |s, o| c.merge(s, o));
        self.partitions
            .changed(before, (table.len(), table.bytes()));
        self.counts.folds += 1;
        self.counts.fold_nanos += start.elapsed().as_nanos() as u64;
    }
}

impl<K: Key, V, C: Combiner<V>> Emit<K, V> for Partitioned<'_, K, V, C> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
        let probe = K::probe(key);
        let hash = K::probe_hash(&probe);
        self.upsert(&probe, hash, value);
    }

    #[inline(always)]
    fn prefetch(&mut self, key: K::Ref<'_>) {
        self.table.prefetch(K::probe_hash(&K::probe(key)));
    }

    /// Hashes and prefetches a batch of keys, then inserts them
    /// ([`in_batches`]).
    #[inline(always)]
    fn emit_batch(&mut self, keys: &[K::Ref<'_>], value: V)
    where
        V: Clone,
    {
        in_batches::<K, _>(
            keys,
            self,
            |c, h| c.table.prefetch(h),
            |c, p, h| c.upsert(p, h, value.clone()),
        );
    }

    /// Prefetches a batch of probes' slots, then inserts them
    /// ([`probes_in_batches`]).
    #[inline(always)]
    fn emit_probes(&mut self, probes: &[K::Probe<'_>], value: V)
    where
        V: Clone,
    {
        probes_in_batches::<K, _>(
            probes,
            self,
            |c, h| c.table.prefetch(h),
            |c, p, h| c.upsert(p, h, value.clone()),
        );
    }
}

/// Partition `p` of one worker after the map phase: what the worker still
/// buffers for it, and (from the first worker to hand its parts over) the
/// partition's table.
pub(crate) struct Piece<K, S> {
    table: Option<Table<K, S>>,
    buffer: Buffer<K, S>,
}

impl<K: Key, V, C: Combiner<V>> Container<K, V, C> for Partitioned<'_, K, V, C> {
    type Part = Piece<K, C::State>;

    /// The worker's own entries, and its share of the partition tables'
    /// keys.
    fn distinct(&self) -> usize {
        let partitions = self.out.partitions;
        self.own_entries() + partitions.share(&partitions.keys)
    }

    /// The worker's table and buffers, and its share of the partition
    /// tables' bytes.
    fn memory_bytes(&self) -> usize {
        let partitions = self.out.partitions;
        let buffers: usize = self.out.buffers.iter().map(Buffer::bytes).sum();
        self.table.bytes() + buffers + partitions.share(&partitions.bytes)
    }

    fn split_done(&mut self) {
        self.evict();
    }

    fn into_parts(mut self) -> Vec<Self::Part> {
        self.evict();
        let partitions = self.out.partitions;
        (self.out.buffers.into_iter().enumerate())
            .map(|(p, buffer)| Piece {
                table: partitions.take(p),
                buffer,
            })
            .collect()
    }

    /// The worker's entries and every partition table's, by partition.
    fn drain(&mut self, _combiner: &C) -> Vec<Vec<(K, C::State)>> {
        self.evict();
        let partitions = self.out.partitions;
        (self.out.buffers.iter_mut().enumerate())
            .map(|(p, b)| {
                b.hashes.clear();
                let mut items = std::mem::take(&mut b.items);
                if let Some(table) = partitions.take(p) {
                    items.extend(table);
                }
                items
            })
            .collect()
    }

    fn tally(&self, into: &mut Option<PartitionedStats>) {
        let out = &self.out;
        let s = into.get_or_insert_with(|| PartitionedStats {
            partitions: out.partitions.len(),
            table_keys: out.shape.table_keys,
            buffer_entries: out.shape.buffer_entries,
            ..PartitionedStats::default()
        });
        let c = &out.counts;
        s.flushes += c.flushes;
        s.evicted += c.evicted;
        s.folds += c.folds;
        s.contended += c.contended;
        s.fold_secs += c.fold_nanos as f64 * 1e-9;
    }

    /// Folds every worker's buffer into the partition's table (the largest
    /// table of the pieces, or a new one) and reduces each key.
    fn reduce<O>(
        mut pieces: Vec<Self::Part>,
        combiner: &C,
        reduce: impl Fn(&K, C::Reduced<'_>) -> O,
    ) -> Vec<(K, O)> {
        let merge = |s: &mut C::State, o| combiner.merge(s, o);
        let largest = (0..pieces.len()).max_by_key(|&i| pieces[i].table.as_ref().map(Table::len));
        let mut base = largest
            .and_then(|i| pieces[i].table.take())
            .unwrap_or_else(|| {
                Table::with_capacity(pieces.iter().map(|p| p.buffer.items.len()).sum())
            });
        for piece in &mut pieces {
            if let Some(t) = piece.table.take() {
                base.merge_all(t.into_iter(), merge);
            }
            let b = &mut piece.buffer;
            base.merge_hashed_all(&mut b.hashes, &mut b.items, merge);
        }
        let mut out = Vec::with_capacity(base.len());
        out.extend(
            base.into_iter()
                .map(|(k, s)| finish(combiner, k, s, &reduce)),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combine::{KeepAll, Sum};
    use crate::key::Bytes;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Word `i` of a test's vocabulary.
    fn word(i: u32) -> Vec<u8> {
        format!("w{}", i.wrapping_mul(2_654_435_761) % 100_003).into_bytes()
    }

    /// Emits `keys` into `workers` containers over the same partitions
    /// (worker `i % workers` takes key `i`, a split ending every `split`
    /// keys), then reduces the partitions: the counts, sorted.
    fn run(
        keys: &[u32],
        workers: usize,
        parts: usize,
        shape: Shape,
        split: usize,
    ) -> Vec<(Bytes, u64)> {
        let shared = Partitions::new(parts, workers);
        let mut cs: Vec<Partitioned<'_, Bytes, u64, Sum>> = (0..workers)
            .map(|_| Partitioned::new(&shared, shape, Sum))
            .collect();
        for (i, &k) in keys.iter().enumerate() {
            let c = &mut cs[i % workers];
            c.emit(&word(k)[..], 1);
            if i % split == split - 1 {
                Container::<Bytes, u64, Sum>::split_done(c);
            }
        }
        let mut columns: Vec<Vec<Piece<Bytes, u64>>> = (0..parts).map(|_| Vec::new()).collect();
        for c in cs {
            for (p, piece) in c.into_parts().into_iter().enumerate() {
                columns[p].push(piece);
            }
        }
        let mut out: Vec<(Bytes, u64)> = columns
            .into_iter()
            .flat_map(|col| {
                <Partitioned<'_, Bytes, u64, Sum> as Container<Bytes, u64, Sum>>::reduce(
                    col,
                    &Sum,
                    |_, n| n,
                )
            })
            .collect();
        out.sort();
        out
    }

    fn counted(keys: &[u32]) -> Vec<(Bytes, u64)> {
        let mut want = BTreeMap::<Bytes, u64>::new();
        for &k in keys {
            *want.entry(Bytes::from(&word(k)[..])).or_default() += 1;
        }
        want.into_iter().collect()
    }

    #[test]
    fn shapes_fit_the_cache_and_the_buffer_bound() {
        let s = Shape::new::<Bytes, u64>(64, &PartitionedOptions::default(), usize::MAX);
        let slot = std::mem::size_of::<Option<(Bytes, u64)>>();
        assert_eq!(s.table_keys * 2 * slot, TABLE_BYTES);
        assert!(s.buffer_entries * 64 * (slot + 8) <= BUFFER_BYTES);
        let opts = PartitionedOptions::default().table_keys(0);
        let tiny = Shape::new::<Bytes, u64>(1 << 20, &opts, usize::MAX);
        assert_eq!(
            (tiny.table_keys, tiny.buffer_entries),
            (1, MIN_BUFFER_ENTRIES)
        );
    }

    #[test]
    fn every_key_is_reduced_once_in_its_partition() {
        let keys: Vec<u32> = (0..20_000).map(|i| i % 3_000 + (i % 7) * 5).collect();
        let shape = Shape {
            table_keys: 100,
            buffer_entries: 20,
        };
        assert_eq!(run(&keys, 3, 8, shape, 1000), counted(&keys));
    }

    #[test]
    fn draining_takes_the_partition_tables_once() {
        let shape = Shape {
            table_keys: 8,
            buffer_entries: 2,
        };
        let shared = Partitions::new(4, 2);
        let mut a = Partitioned::<Bytes, u64, Sum>::new(&shared, shape, Sum);
        let mut b = Partitioned::<Bytes, u64, Sum>::new(&shared, shape, Sum);
        for i in 0..500 {
            a.emit(&word(i % 50)[..], 1);
            b.emit(&word(i % 70)[..], 1);
        }
        assert!(a.memory_bytes() > 0 && shared.keys.load(Relaxed) > 0);
        let mut all: Vec<(Bytes, u64)> = a.drain(&Sum).into_iter().flatten().collect();
        assert_eq!(shared.keys.load(Relaxed), 0);
        all.extend(b.drain(&Sum).into_iter().flatten());
        let mut totals = BTreeMap::<Bytes, u64>::new();
        for (k, n) in all {
            *totals.entry(k).or_default() += n;
        }
        let want: Vec<u32> = (0..500)
            .map(|i| i % 50)
            .chain((0..500).map(|i| i % 70))
            .collect();
        assert_eq!(totals.into_iter().collect::<Vec<_>>(), counted(&want));
        assert_eq!((a.distinct(), b.distinct()), (0, 0));
    }

    #[test]
    fn kept_values_move_whole() {
        let shared = Partitions::new(2, 1);
        let shape = Shape {
            table_keys: 3,
            buffer_entries: 1,
        };
        let mut c = Partitioned::<Bytes, u32, KeepAll>::new(&shared, shape, KeepAll);
        for i in 0..40u32 {
            c.emit(&word(i % 5)[..], i);
        }
        let parts = c.into_parts();
        let mut lists: Vec<(Bytes, Vec<u32>)> = parts
            .into_iter()
            .flat_map(|p| {
                <Partitioned<'_, Bytes, u32, KeepAll> as Container<Bytes, u32, KeepAll>>::reduce(
                    vec![p],
                    &KeepAll,
                    |_, vs| {
                        vs.sort();
                        vs.to_vec()
                    },
                )
            })
            .collect();
        lists.sort();
        for (k, vs) in lists {
            let i = (0..5).find(|&i| Bytes::from(&word(i)[..]) == k).unwrap();
            assert_eq!(vs, (0..40).filter(|v| v % 5 == i).collect::<Vec<_>>());
        }
    }

    proptest! {
        /// Any table size, buffer size, partition and worker count counts
        /// as a plain map does: skewed keys, all-distinct keys, one key.
        #[test]
        fn any_shape_counts_as_a_plain_map(
            keys in prop_oneof![
                proptest::collection::vec(0u32..40, 0..2000),
                proptest::collection::vec(any::<u32>(), 0..2000),
                proptest::collection::vec(Just(7u32), 0..2000),
            ],
            table_keys in 1usize..64,
            buffer_entries in 1usize..32,
            parts in 1usize..20,
            workers in 1usize..5,
            split in 1usize..500,
        ) {
            let shape = Shape { table_keys, buffer_entries };
            prop_assert_eq!(run(&keys, workers, parts, shape, split), counted(&keys));
        }
    }
}
