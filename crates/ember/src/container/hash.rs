//! The hash container: per worker, one open-addressing [`Table`] per
//! partition; keys copied on first insert, combiner applied at insert.

use std::marker::PhantomData;

use super::table::Table;
use super::{finish, partition_of, Container, INITIAL_CAPACITY};
use crate::combine::Combiner;
use crate::job::Emit;
use crate::key::Key;

/// One worker's hash container.
pub(crate) struct HashContainer<K, V, C: Combiner<V>> {
    parts: Vec<Table<K, C::State>>,
    combiner: C,
    values: PhantomData<fn(V)>,
}

impl<K: Key, V, C: Combiner<V>> HashContainer<K, V, C> {
    /// A container with `partitions` tables of room for `capacity` keys
    /// each, folding with `combiner`.
    pub(crate) fn new(partitions: usize, capacity: usize, combiner: C) -> Self {
        HashContainer {
            parts: (0..partitions)
                .map(|_| Table::with_capacity(capacity))
                .collect(),
            combiner,
            values: PhantomData,
        }
    }

    /// Makes room for `keys` distinct keys in all, spread over the
    /// partitions, so that the map phase does not grow the tables.
    pub(crate) fn reserve(&mut self, keys: usize) {
        let per_part = keys / self.parts.len();
        for t in &mut self.parts {
            t.reserve(per_part);
        }
    }
}

impl<K: Key, V, C: Combiner<V>> Emit<K, V> for HashContainer<K, V, C> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
        let probe = K::probe(key);
        let hash = K::probe_hash(&probe);
        let n = self.parts.len();
        let c = &self.combiner;
        self.parts[partition_of(hash, n)].upsert(
            &probe,
            hash,
            value,
            |v| c.init(v),
            |s, v| c.add(s, v),
        );
    }

    #[inline(always)]
    fn prefetch(&mut self, key: K::Ref<'_>) {
        let hash = K::probe_hash(&K::probe(key));
        self.parts[partition_of(hash, self.parts.len())].prefetch(hash);
    }
}

impl<K: Key, V, C: Combiner<V>> Container<K, V, C> for HashContainer<K, V, C> {
    type Part = Table<K, C::State>;

    fn distinct(&self) -> usize {
        self.parts.iter().map(Table::len).sum()
    }

    fn memory_bytes(&self) -> usize {
        self.parts.iter().map(Table::bytes).sum()
    }

    fn into_parts(self) -> Vec<Self::Part> {
        self.parts
    }

    fn drain(&mut self, _combiner: &C) -> Vec<Vec<(K, C::State)>> {
        let empty = || Table::with_capacity(INITIAL_CAPACITY);
        let parts = self.parts.iter_mut();
        parts
            .map(|t| std::mem::replace(t, empty()).into_iter().collect())
            .collect()
    }

    /// Joins the tables into the largest one, so the fewest entries move.
    fn reduce<O>(
        mut tables: Vec<Self::Part>,
        combiner: &C,
        reduce: impl Fn(&K, C::Reduced<'_>) -> O,
    ) -> Vec<(K, O)> {
        let Some(largest) = (0..tables.len()).max_by_key(|&i| tables[i].len()) else {
            return Vec::new();
        };
        let mut base = tables.swap_remove(largest);
        for table in tables {
            for (k, s) in table {
                base.merge_owned(k, s, |s, o| combiner.merge(s, o));
            }
        }
        let mut out = Vec::with_capacity(base.len());
        out.extend(
            base.into_iter()
                .map(|(k, s)| finish(combiner, k, s, &reduce)),
        );
        out
    }
}
