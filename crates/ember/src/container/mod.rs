//! Intermediate containers: where map output lives between map and reduce.
//!
//! Metis' finding is that this structure decides performance and that no
//! single one wins every workload, so ember has six behind one
//! [`Container`] interface, chosen per run ([`ContainerKind`]), by the job,
//! by the caller, or by sampling (`Auto`, see `predict`).
//!
//! Lifecycle (as in Phoenix++ and Metis):
//!
//! 1. Each map worker owns one container for the whole map phase; `emit`
//!    writes only to it, so the map path takes no lock.
//! 2. A container is partitioned into `P` partitions (by key hash, or by key
//!    range for the array container); where the job's combiner can fold at
//!    insert, it does, so a key costs one entry per worker.
//! 3. After map, [`Container::into_parts`] hands partition `p` of every
//!    worker to reduce task `p`, whose [`Container::reduce`] joins them
//!    (merging states with the combiner) and runs the job's `reduce`.
//!
//! | kind | per worker | insert | best for |
//! |---|---|---|---|
//! | `hash` | open-addressing table per partition | O(1), combined | repeated keys (word count) |
//! | `hash_tree` | fixed bucket array, B-tree per bucket | O(log k) per bucket, combined | unpredictable key counts (Metis) |
//! | `array` | one state per key of a dense integer range | O(1), no hashing | few integer keys (histogram, k-means) |
//! | `append` | pairs appended per partition, grouped by sort in reduce | O(1), no lookup | few repeats (inverted index of unique words) |
//! | `intern` | keys numbered per partition, (number, value) appended, grouped by number in reduce | O(1), one lookup | few repeats, keys long against values (inverted index) |
//! | `unique` | pairs appended, never grouped | O(1) | keys declared unique (sort) |
//!
//! The hash container has a second layout for large vocabularies,
//! [`partitioned`]: a cache-sized table per worker whose evicted entries
//! are folded into one table per hash partition shared by all workers, so
//! that each key is held once however many workers there are (the plan's
//! [`Aggregation`](crate::tune::Aggregation)).

use std::marker::PhantomData;
use std::sync::Mutex;

use crate::combine::Combiner;
use crate::job::{ContainerKind, Emit};
use crate::key::Key;
use crate::stats::PartitionedStats;
use append::AppendContainer;
use array::ArrayContainer;
use hash::HashContainer;
use hash_tree::HashTreeContainer;
use intern::InternContainer;
use partitioned::{Partitioned, Partitions, Shape};
use table::Table;
use unique::UniqueContainer;

pub(crate) mod append;
pub(crate) mod array;
mod group;
pub(crate) mod hash;
pub(crate) mod hash_tree;
pub(crate) mod intern;
pub(crate) mod partitioned;
mod slots;
pub(crate) mod table;
pub(crate) mod unique;

/// A map worker's container (see the module docs for the lifecycle):
/// keys `K`, emitted values `V`, folded by the combiner `C`.
pub(crate) trait Container<K: Key, V, C: Combiner<V>>: Emit<K, V> + Send {
    /// One partition of one worker's container.
    type Part: Send;
    /// Distinct keys held (pairs held, for containers that do not group).
    fn distinct(&self) -> usize;
    /// Bytes the container's own arrays take (memory a key or a state owns
    /// on the heap, such as a long byte-string key or a kept list, is not
    /// counted).
    fn memory_bytes(&self) -> usize;
    /// Splits the container into its partitions, in partition order.
    fn into_parts(self) -> Vec<Self::Part>;
    /// Called after each split the worker mapped, before its memory is
    /// checked (the partitioned layout evicts its small table here).
    fn split_done(&mut self) {}
    /// Adds what the container counted of its own work to the run's
    /// partitioned-aggregation stats (only the partitioned layout has any).
    fn tally(&self, into: &mut Option<PartitionedStats>) {
        let _ = into;
    }
    /// Takes every entry out as (key, state) pairs, per partition in
    /// partition order (keys in no particular order; a container whose
    /// keys belong to no partition gives one part), and leaves the
    /// container empty and ready for more pairs: what a worker spills.
    fn drain(&mut self, combiner: &C) -> Vec<Vec<(K, C::State)>>;
    /// Takes back the parts [`Container::drain`] gave, written to disk
    /// and emptied, to reuse their memory (by default they are dropped).
    fn refill(&mut self, emptied: Vec<Vec<(K, C::State)>>) {
        drop(emptied);
    }
    /// Joins partition `p` of every worker (states merged with
    /// `combiner`) and reduces each key with `reduce`, which gets what the
    /// combiner hands over for it.
    fn reduce<O>(
        parts: Vec<Self::Part>,
        combiner: &C,
        reduce: impl Fn(&K, C::Reduced<'_>) -> O,
    ) -> Vec<(K, O)>;
}

/// One key's output: `reduce` called with what `combiner` makes of the
/// key's state.
#[inline]
pub(crate) fn finish<K, V, C: Combiner<V>, O>(
    combiner: &C,
    key: K,
    state: C::State,
    reduce: &impl Fn(&K, C::Reduced<'_>) -> O,
) -> (K, O) {
    let o = combiner.finish(state, |r| reduce(&key, r));
    (key, o)
}

/// Bytes of `v`'s allocation.
pub(crate) fn vec_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

/// Keys each hash partition table starts with; tables grow by doubling.
pub(crate) const INITIAL_CAPACITY: usize = 1024;
/// A prediction never reserves more than this many keys per worker up front
/// (tables still grow past it if needed).
const MAX_RESERVED_KEYS: usize = 1 << 24;
/// Nor more than this many times the keys the worker's sample held:
/// predictions of skewed inputs run high, an oversized table costs cache
/// and TLB misses on every insert, and a short one only grows.
const RESERVE_CAP: usize = 4;

/// How a run's containers are sized.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sizing {
    /// Reduce partitions per container.
    pub(crate) partitions: usize,
    /// Workers of the run (each builds one container).
    pub(crate) workers: usize,
    /// The dense key range's size (array container).
    pub(crate) dense: usize,
    /// Distinct keys per worker the sample predicts (0: unknown).
    pub(crate) keys: usize,
    /// Pairs per worker the sample predicts (0: unknown).
    pub(crate) pairs: usize,
    /// (key, state) entries that a worker's share of the memory budget
    /// holds: the unique container grows to it, then in small steps.
    pub(crate) share_entries: usize,
    /// The hash container's partitioned layout, when the plan chose it:
    /// its small tables' and buffers' sizes.
    pub(crate) partitioned: Option<Shape>,
}

/// Something to do with the containers of a run, whatever their kind:
/// [`build`] calls [`Visit::visit`] with the constructor of the kind the
/// run uses, so the map path is compiled for each kind (static dispatch)
/// and the one `match` over kinds lives here.
pub(crate) trait Visit<K: Key, V, C: Combiner<V>> {
    /// What the visit returns.
    type Out;
    /// Runs with `make(worker)`, which builds worker `worker`'s container.
    fn visit<Ct: Container<K, V, C>>(
        self,
        make: impl Fn(usize) -> Counting<Ct> + Sync,
    ) -> Self::Out;
}

/// Calls `visitor` with the constructor of `kind`'s containers (`Auto`
/// means unique: a run decides `Auto` before it builds containers). A hash
/// container starts from `kept[worker]`, the sample's container, when there
/// is one; with `sizing.partitioned` it is the partitioned layout.
pub(crate) fn build<K, V, C, X>(
    kind: ContainerKind,
    sizing: Sizing,
    combiner: &C,
    kept: Vec<Counting<HashContainer<K, V, C>>>,
    visitor: X,
) -> X::Out
where
    K: Key,
    V: Send,
    C: Combiner<V>,
    X: Visit<K, V, C>,
{
    let Sizing {
        partitions,
        dense,
        keys,
        pairs,
        share_entries,
        ..
    } = sizing;
    match kind {
        ContainerKind::Hash => match sizing.partitioned {
            Some(shape) => partitioned_layout(sizing, shape, combiner, kept, visitor),
            None => per_worker(sizing, combiner, kept, visitor),
        },
        ContainerKind::HashTree => visitor
            .visit(|_| Counting::new(HashTreeContainer::new(partitions, keys, combiner.clone()))),
        // A constant test: a key type without an index never compiles the
        // array container (the plan refuses it for such keys).
        ContainerKind::Array if K::INDEXED => visitor
            .visit(|_| Counting::new(ArrayContainer::new(dense, partitions, combiner.clone()))),
        ContainerKind::Array => unreachable!("the array container needs an indexed key type"),
        ContainerKind::Append => {
            visitor.visit(|_| Counting::new(AppendContainer::new(partitions, pairs)))
        }
        ContainerKind::Intern => {
            visitor.visit(|_| Counting::new(InternContainer::new(partitions, keys, pairs)))
        }
        ContainerKind::Unique | ContainerKind::Auto => {
            let new = || UniqueContainer::new(partitions, share_entries, combiner.clone());
            visitor.visit(|_| Counting::new(new()))
        }
    }
}

/// Takes worker `w`'s container out of `kept` (the sample's, one per
/// worker), if there is one.
fn take_kept<T>(kept: &Mutex<Vec<T>>, w: usize, empty: impl FnOnce() -> T) -> Option<T> {
    let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
    kept.get_mut(w).map(|slot| std::mem::replace(slot, empty()))
}

/// [`build`]'s hash containers: one table per partition per worker, grown
/// to the sample's prediction.
fn per_worker<K, V, C, X>(
    sizing: Sizing,
    combiner: &C,
    kept: Vec<Counting<HashContainer<K, V, C>>>,
    visitor: X,
) -> X::Out
where
    K: Key,
    V: Send,
    C: Combiner<V>,
    X: Visit<K, V, C>,
{
    let kept = Mutex::new(kept);
    visitor.visit(|w| {
        let new = |parts, capacity| HashContainer::new(parts, capacity, combiner.clone());
        // Taken out under the lock, grown outside it: every worker
        // rebuilds its own tables at once.
        let taken = take_kept(&kept, w, || Counting::new(new(1, 0)));
        let mut c =
            taken.unwrap_or_else(|| Counting::new(new(sizing.partitions, INITIAL_CAPACITY)));
        let seen = c.distinct().max(INITIAL_CAPACITY);
        c.inner
            .reserve(sizing.keys.min(seen * RESERVE_CAP).min(MAX_RESERVED_KEYS));
        c
    })
}

/// [`build`]'s partitioned hash containers: the run's partition tables
/// (empty; they grow as they are folded into), and a small table and
/// buffers per worker, which start with the sample's entries.
fn partitioned_layout<K, V, C, X>(
    sizing: Sizing,
    shape: Shape,
    combiner: &C,
    kept: Vec<Counting<HashContainer<K, V, C>>>,
    visitor: X,
) -> X::Out
where
    K: Key,
    V: Send,
    C: Combiner<V>,
    X: Visit<K, V, C>,
{
    let partitions = Partitions::new(sizing.partitions, sizing.workers);
    let kept = Mutex::new(kept);
    visitor.visit(|w| {
        let empty = || Counting::new(HashContainer::new(1, 0, combiner.clone()));
        match take_kept(&kept, w, empty) {
            Some(k) => Partitioned::seeded(&partitions, shape, combiner.clone(), k),
            None => Counting::new(Partitioned::new(&partitions, shape, combiner.clone())),
        }
    })
}

/// Counts the pairs a container receives.
pub(crate) struct Counting<C> {
    pub(crate) inner: C,
    pub(crate) pairs: u64,
}

impl<C> Counting<C> {
    pub(crate) fn new(inner: C) -> Self {
        Counting { inner, pairs: 0 }
    }
}

impl<C> std::ops::Deref for Counting<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.inner
    }
}

impl<K: Key, V, C: Emit<K, V>> Emit<K, V> for Counting<C> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
        self.pairs += 1;
        self.inner.emit(key, value);
    }

    #[inline(always)]
    fn prefetch(&mut self, key: K::Ref<'_>) {
        self.inner.prefetch(key);
    }

    #[inline(always)]
    fn emit_batch(&mut self, keys: &[K::Ref<'_>], value: V)
    where
        V: Clone,
    {
        self.pairs += keys.len() as u64;
        self.inner.emit_batch(keys, value);
    }

    #[inline(always)]
    fn emit_probes(&mut self, probes: &[K::Probe<'_>], value: V)
    where
        V: Clone,
    {
        self.pairs += probes.len() as u64;
        self.inner.emit_probes(probes, value);
    }
}

/// A worker's emitter as job `J`'s `map` receives it: `E` itself, with the
/// job in its type, so that every job's `map` is compiled for an emitter
/// type of its own.
///
/// Containers are generic over key, value and combiner, not over the job.
/// Untagged, a job whose `map` calls another job's (a wrapper job with the
/// same key, value and combiner types) would share the inner job's `map`
/// instance, and those of the closures and helpers it calls, with the inner
/// job itself. Referenced from several codegen units, such an instance is
/// no longer local to one, and LLVM then stops inlining a large helper
/// called once (word count's tokenizer loop) into `map`.
#[repr(transparent)]
pub(crate) struct ForJob<J, E> {
    inner: E,
    job: PhantomData<fn(&J)>,
}

impl<J, E> ForJob<J, E> {
    /// `emitter`, tagged with the job.
    #[inline(always)]
    pub(crate) fn of(emitter: &mut E) -> &mut Self {
        // SAFETY: `ForJob<J, E>` is `repr(transparent)` over `E` (its only
        // other field is a zero-sized `PhantomData`), so it has the layout
        // and validity of `E`; the returned borrow reborrows `emitter` for
        // its lifetime, so nothing else can reach the `E` meanwhile.
        unsafe { &mut *(emitter as *mut E).cast::<Self>() }
    }
}

impl<J, K: Key, V, E: Emit<K, V>> Emit<K, V> for ForJob<J, E> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
        self.inner.emit(key, value);
    }

    #[inline(always)]
    fn prefetch(&mut self, key: K::Ref<'_>) {
        self.inner.prefetch(key);
    }

    #[inline(always)]
    fn emit_batch(&mut self, keys: &[K::Ref<'_>], value: V)
    where
        V: Clone,
    {
        self.inner.emit_batch(keys, value);
    }

    #[inline(always)]
    fn emit_probes(&mut self, probes: &[K::Probe<'_>], value: V)
    where
        V: Clone,
    {
        self.inner.emit_probes(probes, value);
    }
}

/// The distinct keys a sample emits, counted by their 64-bit hashes: no key
/// copies and no combiner states (the sampler's container for jobs whose
/// combiner keeps values, where a state per key is costly).
pub(crate) struct KeyHashes {
    seen: Table<u64, ()>,
}

impl KeyHashes {
    pub(crate) fn new() -> Self {
        KeyHashes {
            seen: Table::with_capacity(1024),
        }
    }

    /// Distinct hashes seen.
    pub(crate) fn len(&self) -> usize {
        self.seen.len()
    }

    #[inline(always)]
    fn insert(&mut self, h: u64) {
        self.seen
            .upsert(&h, u64::probe_hash(&h), (), |()| (), |_, ()| ());
    }
}

impl<K: Key, V> Emit<K, V> for KeyHashes {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, _value: V) {
        self.insert(K::probe_hash(&K::probe(key)));
    }

    #[inline(always)]
    fn emit_probes(&mut self, probes: &[K::Probe<'_>], _value: V) {
        for p in probes {
            self.insert(K::probe_hash(p));
        }
    }
}

/// The partition a key hash belongs to, in `0..partitions`.
///
/// Uses hash bits 40..56, independent of the low bits the tables index
/// slots with, so that partitioning does not crowd a table's keys together.
#[inline(always)]
pub(crate) fn partition_of(hash: u64, partitions: usize) -> usize {
    ((((hash >> 40) & 0xFFFF) * partitions as u64) >> 16) as usize
}

/// Keys [`in_batches`] hashes and prefetches at a time.
pub(crate) const BATCH: usize = 32;

/// Probes and hashes up to [`BATCH`] of `keys` at a time, then inserts
/// them as [`prefetched`] does (the `emit_batch` of the containers that
/// look keys up).
#[inline(always)]
pub(crate) fn in_batches<'r, K: Key, T: ?Sized>(
    keys: &[K::Ref<'r>],
    target: &mut T,
    prefetch: impl Fn(&T, u64),
    mut insert: impl FnMut(&mut T, &K::Probe<'r>, u64),
) {
    for chunk in keys.chunks(BATCH) {
        let mut probes: [Option<K::Probe<'r>>; BATCH] = [const { None }; BATCH];
        for (slot, &key) in probes.iter_mut().zip(chunk) {
            *slot = Some(K::probe(key));
        }
        prefetched::<K, _>(probes.iter().flatten(), target, &prefetch, &mut insert);
    }
}

/// Inserts `probes` as [`prefetched`] does, [`BATCH`] at a time (the
/// `emit_probes` of the containers that look keys up).
#[inline(always)]
pub(crate) fn probes_in_batches<'r, K: Key, T: ?Sized>(
    probes: &[K::Probe<'r>],
    target: &mut T,
    prefetch: impl Fn(&T, u64),
    mut insert: impl FnMut(&mut T, &K::Probe<'r>, u64),
) {
    for chunk in probes.chunks(BATCH) {
        prefetched::<K, _>(chunk.iter(), target, &prefetch, &mut insert);
    }
}

/// Calls `prefetch` with the hash of each of `probes` (a batch of a few
/// dozen), then `insert` with each probe and its hash, in order: the
/// batch's cache misses overlap.
///
/// The functions come by reference, so each call is a direct call of the
/// caller's closure, which inlines into the loop (a `&mut F` passed as an
/// `impl FnMut` adds a forwarding call that did not inline, and the insert
/// behind it then cost a call per key).
#[inline(always)]
fn prefetched<'p, 'r: 'p, K: Key, T: ?Sized>(
    probes: impl Iterator<Item = &'p K::Probe<'r>> + Clone,
    target: &mut T,
    prefetch: &impl Fn(&T, u64),
    insert: &mut impl FnMut(&mut T, &K::Probe<'r>, u64),
) {
    for probe in probes.clone() {
        prefetch(target, K::probe_hash(probe));
    }
    for probe in probes {
        insert(target, probe, K::probe_hash(probe));
    }
}

/// Cuts `v` into `n` pieces of nearly equal length, in order.
pub(crate) fn chunks<T>(mut v: Vec<T>, n: usize) -> Vec<Vec<T>> {
    let n = n.max(1);
    let mut out = Vec::with_capacity(n);
    for i in (0..n).rev() {
        let take = v.len() / (i + 1);
        out.push(v.split_off(v.len() - take));
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_in_range_and_used() {
        for p in [1, 2, 3, 7, 64] {
            let mut seen = vec![false; p];
            for i in 0..10_000u64 {
                let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let q = partition_of(h, p);
                assert!(q < p);
                seen[q] = true;
            }
            assert!(seen.iter().all(|&s| s), "{p}");
        }
    }

    #[test]
    fn key_hashes_count_distinct_keys() {
        let mut seen = KeyHashes::new();
        for i in 0..5000u32 {
            let word = format!("w{}", i % 1234);
            Emit::<crate::key::Bytes, u32>::emit(&mut seen, word.as_bytes(), i);
        }
        assert_eq!(seen.len(), 1234);
    }

    #[test]
    fn chunks_cover_in_order() {
        for len in [0, 1, 5, 17] {
            for n in [1, 2, 3, 8] {
                let c = chunks((0..len).collect::<Vec<_>>(), n);
                assert_eq!(c.len(), n);
                assert_eq!(c.concat(), (0..len).collect::<Vec<_>>());
                let (min, max) = (c.iter().map(Vec::len).min(), c.iter().map(Vec::len).max());
                assert!(max.unwrap() - min.unwrap() <= 1);
            }
        }
    }
}
