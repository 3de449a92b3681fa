//! The unique container: for jobs that declare every key emitted once
//! ([`KeyHint::Unique`](crate::KeyHint::Unique)), pairs are appended as they
//! come and never looked up or grouped; each worker's buffer is cut into
//! equal ranges that reduce tasks take with no synchronization (SupMR's and
//! Phoenix++'s unlocked array container). Every emit stores an owned copy
//! of its key, as the append container does. No built-in workload declares
//! unique keys: sort routes records to key ranges instead (its keys repeat
//! per range).
//!
//! A job that declares unique keys but repeats one gets the key once per
//! emit in its output.
//!
//! The buffer doubles up to the entries a worker's share of the memory
//! budget holds, then grows by a sixteenth of that at a time: a doubling
//! past the share would take up to twice the share before the worker's
//! check after the split spills it. A spilled buffer is taken back
//! ([`Container::refill`]) at that size: the next spill's pairs go to
//! memory already mapped.

use super::{chunks, finish, vec_bytes, Container};
use crate::combine::Combiner;
use crate::job::Emit;
use crate::key::Key;

/// One worker's unique-key container.
pub(crate) struct UniqueContainer<K, V, C: Combiner<V>> {
    pairs: Vec<(K, C::State)>,
    partitions: usize,
    /// Entries a worker's share of the budget holds.
    limit: usize,
    combiner: C,
}

impl<K, V, C: Combiner<V>> UniqueContainer<K, V, C> {
    /// An empty buffer, handed to reduce in `partitions` ranges, that
    /// doubles up to `limit` entries (a worker's share of the budget).
    pub(crate) fn new(partitions: usize, limit: usize, combiner: C) -> Self {
        UniqueContainer {
            pairs: Vec::new(),
            partitions,
            limit,
            combiner,
        }
    }

    /// Makes room for more pairs: twice the capacity up to the limit, then
    /// a sixteenth of the limit more.
    #[cold]
    fn grow(&mut self) {
        let cap = self.pairs.capacity();
        let to = match cap < self.limit {
            true => (2 * cap).max(MIN_CAPACITY).min(self.limit),
            false => cap + (self.limit / 16).max(MIN_CAPACITY),
        };
        self.pairs
            .reserve_exact(to.saturating_sub(self.pairs.len()).max(1));
    }
}

/// The smallest buffer (and step) the container grows to.
const MIN_CAPACITY: usize = 16;

impl<K: Key, V, C: Combiner<V>> Emit<K, V> for UniqueContainer<K, V, C> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
        if self.pairs.len() == self.pairs.capacity() {
            self.grow();
        }
        let key = K::from_probe(&K::probe(key));
        self.pairs.push((key, self.combiner.init(value)));
    }
}

impl<K: Key, V, C: Combiner<V>> Container<K, V, C> for UniqueContainer<K, V, C> {
    type Part = Vec<(K, C::State)>;

    fn distinct(&self) -> usize {
        self.pairs.len()
    }

    fn memory_bytes(&self) -> usize {
        vec_bytes(&self.pairs)
    }

    fn into_parts(self) -> Vec<Self::Part> {
        chunks(self.pairs, self.partitions)
    }

    /// Everything as one part: unique keys are in no partition (any cut of
    /// them is as good), and one part spills as one sorted run rather
    /// than one per partition, so a merge has fewer runs to choose from.
    fn drain(&mut self, _combiner: &C) -> Vec<Vec<(K, C::State)>> {
        vec![std::mem::take(&mut self.pairs)]
    }

    /// The drained buffer, back at no more than the limit's capacity.
    fn refill(&mut self, emptied: Vec<Vec<(K, C::State)>>) {
        if let Some(mut pairs) = emptied.into_iter().next() {
            if self.pairs.capacity() == 0 {
                pairs.clear();
                pairs.shrink_to(self.limit);
                self.pairs = pairs;
            }
        }
    }

    fn reduce<O>(
        parts: Vec<Self::Part>,
        combiner: &C,
        reduce: impl Fn(&K, C::Reduced<'_>) -> O,
    ) -> Vec<(K, O)> {
        parts
            .into_iter()
            .flatten()
            .map(|(k, s)| finish(combiner, k, s, &reduce))
            .collect()
    }
}
