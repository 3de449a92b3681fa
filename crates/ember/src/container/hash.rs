//! The hash container: per worker, one open-addressing [`Table`] per
//! partition; keys copied on first insert, combiner applied at insert.

use std::marker::PhantomData;

use super::table::Table;
use super::{finish, in_batches, partition_of, probes_in_batches, Container, INITIAL_CAPACITY};
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

    /// Partition `p`'s table (a pipelined reducer folds into the table of
    /// its one-partition container).
    pub(crate) fn part_mut(&mut self, p: usize) -> &mut Table<K, C::State> {
        &mut self.parts[p]
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

    /// Hashes up to [`BATCH`](super::BATCH) keys at a time, prefetches all
    /// their slots, then inserts them ([`in_batches`]).
    #[inline(always)]
    fn emit_batch(&mut self, keys: &[K::Ref<'_>], value: V)
    where
        V: Clone,
    {
        let c = &self.combiner;
        in_batches::<K, _>(
            keys,
            &mut self.parts[..],
            prefetch_slot,
            |parts, p, hash| upsert(parts, c, p, hash, value.clone()),
        );
    }

    /// Prefetches the slots of up to [`BATCH`](super::BATCH) probes at a
    /// time, then inserts them ([`probes_in_batches`](super::probes_in_batches)).
    #[inline(always)]
    fn emit_probes(&mut self, probes: &[K::Probe<'_>], value: V)
    where
        V: Clone,
    {
        let c = &self.combiner;
        probes_in_batches::<K, _>(
            probes,
            &mut self.parts[..],
            prefetch_slot,
            |parts, p, hash| upsert(parts, c, p, hash, value.clone()),
        );
    }

    #[inline(always)]
    fn prefetch(&mut self, key: K::Ref<'_>) {
        let hash = K::probe_hash(&K::probe(key));
        self.parts[partition_of(hash, self.parts.len())].prefetch(hash);
    }
}

/// Starts loading the slot of the key hashed `hash` in its partition's
/// table.
#[inline(always)]
fn prefetch_slot<K: Key, S>(parts: &[Table<K, S>], hash: u64) {
    parts[partition_of(hash, parts.len())].prefetch(hash);
}

/// Folds `value` into the state of `probe`'s key (hashed `hash`) in its
/// partition's table. Inlined into the batch's loop: a call per key cost
/// more than the insert's own work when the slot is in cache.
#[inline(always)]
fn upsert<K: Key, V, C: Combiner<V>>(
    parts: &mut [Table<K, C::State>],
    c: &C,
    probe: &K::Probe<'_>,
    hash: u64,
    value: V,
) {
    let n = parts.len();
    parts[partition_of(hash, n)].upsert(probe, hash, value, |v| c.init(v), |s, v| c.add(s, v));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combine::{KeepAll, Sum};
    use crate::key::Bytes;
    use proptest::prelude::*;

    /// Every partition's (key, state) pairs, sorted.
    fn contents<C: Combiner<u32, State: Ord>>(
        c: HashContainer<Bytes, u32, C>,
    ) -> Vec<Vec<(Bytes, C::State)>> {
        c.parts
            .into_iter()
            .map(|t| {
                let mut v: Vec<_> = t.into_iter().collect();
                v.sort();
                v
            })
            .collect()
    }

    /// Inserts `words` one at a time, and in batches cut at `cuts`, into
    /// containers of `partitions` partitions; both must hold the same.
    fn same_both_ways<C: Combiner<u32, State: Ord + std::fmt::Debug>>(
        combiner: C,
        words: &[Vec<u8>],
        cuts: &[usize],
        partitions: usize,
    ) {
        let mut one = HashContainer::<Bytes, u32, C>::new(partitions, 4, combiner.clone());
        let mut batched = HashContainer::<Bytes, u32, C>::new(partitions, 4, combiner);
        let mut at = 0;
        for (n, &cut) in cuts.iter().chain([&words.len()]).enumerate() {
            let end = cut.clamp(at, words.len());
            let keys: Vec<&[u8]> = words[at..end].iter().map(Vec::as_slice).collect();
            for &k in &keys {
                one.emit(k, n as u32);
            }
            batched.emit_batch(&keys, n as u32);
            at = end;
        }
        assert_eq!(contents(one), contents(batched));
    }

    proptest! {
        /// Batched, prefetched inserts hold what one-at-a-time inserts
        /// hold: counts, and values in emit order, for batches longer and
        /// shorter than [`BATCH`](super::super::BATCH), short and long keys, any bytes.
        #[test]
        fn batched_inserts_equal_one_at_a_time(
            words in proptest::collection::vec(
                proptest::collection::vec(prop_oneof![b'a'..=b'c', any::<u8>()], 0..24),
                0..300,
            ),
            mut cuts in proptest::collection::vec(0usize..300, 0..6),
            partitions in 1usize..5,
        ) {
            cuts.sort();
            same_both_ways(Sum, &words, &cuts, partitions);
            same_both_ways(KeepAll, &words, &cuts, partitions);
        }
    }
}
