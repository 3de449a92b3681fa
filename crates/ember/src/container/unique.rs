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

use super::{chunks, finish, vec_bytes, Container};
use crate::combine::Combiner;
use crate::job::Emit;
use crate::key::Key;

/// One worker's unique-key container.
pub(crate) struct UniqueContainer<K, V, C: Combiner<V>> {
    pairs: Vec<(K, C::State)>,
    partitions: usize,
    combiner: C,
}

impl<K, V, C: Combiner<V>> UniqueContainer<K, V, C> {
    /// An empty buffer, handed to reduce in `partitions` ranges.
    pub(crate) fn new(partitions: usize, combiner: C) -> Self {
        UniqueContainer {
            pairs: Vec::new(),
            partitions,
            combiner,
        }
    }
}

impl<K: Key, V, C: Combiner<V>> Emit<K, V> for UniqueContainer<K, V, C> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
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
