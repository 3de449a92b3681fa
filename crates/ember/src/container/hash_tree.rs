//! The hash+tree container of Metis: per partition, a fixed array of
//! buckets sized from the sampled key count (about 10 keys a bucket), each
//! bucket an ordered B-tree (`std::collections::BTreeMap`). Lookups are O(1)
//! when the prediction holds and degrade to O(log k) per bucket, never to a
//! full rehash, when it does not.
//!
//! A bucket's tree is ordered, but buckets are chosen by hash, so a
//! partition is not: the merge phase sorts each reduce run whatever the
//! container.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use super::{finish, partition_of, Container};
use crate::combine::Combiner;
use crate::job::Emit;
use crate::key::Key;

/// Keys a bucket is sized to hold (Metis: 10).
pub(crate) const KEYS_PER_BUCKET: usize = 10;

type Bucket<K, S> = BTreeMap<K, S>;

/// One worker's hash+tree container.
pub(crate) struct HashTreeContainer<K, V, C: Combiner<V>> {
    parts: Vec<Vec<Bucket<K, C::State>>>,
    len: usize,
    combiner: C,
}

impl<K: Key, V, C: Combiner<V>> HashTreeContainer<K, V, C> {
    /// `partitions` bucket arrays sized for `keys` keys in all.
    pub(crate) fn new(partitions: usize, keys: usize, combiner: C) -> Self {
        let buckets = (keys / partitions / KEYS_PER_BUCKET)
            .max(1)
            .next_power_of_two();
        HashTreeContainer {
            parts: (0..partitions)
                .map(|_| (0..buckets).map(|_| BTreeMap::new()).collect())
                .collect(),
            len: 0,
            combiner,
        }
    }
}

impl<K: Key, V, C: Combiner<V>> Emit<K, V> for HashTreeContainer<K, V, C> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
        let probe = K::probe(key);
        let hash = K::probe_hash(&probe);
        let n = self.parts.len();
        let part = &mut self.parts[partition_of(hash, n)];
        let mask = part.len() - 1;
        let bucket = &mut part[hash as usize & mask];
        match bucket.get_mut(K::borrow_ref(&key)) {
            Some(s) => self.combiner.add(s, value),
            None => {
                bucket.insert(K::from_probe(&probe), self.combiner.init(value));
                self.len += 1;
            }
        }
    }
}

impl<K: Key, V, C: Combiner<V>> Container<K, V, C> for HashTreeContainer<K, V, C> {
    type Part = Vec<Bucket<K, C::State>>;

    fn distinct(&self) -> usize {
        self.len
    }

    /// The bucket arrays and, per key, its entry in a tree node (B-tree
    /// nodes hold up to 11 entries; counted as full, plus the node's
    /// header, estimated at one entry's size per node).
    fn memory_bytes(&self) -> usize {
        let buckets: usize = self.parts.iter().map(super::vec_bytes).sum();
        let entry = std::mem::size_of::<(K, C::State)>();
        buckets + self.len * entry * 12 / 11
    }

    fn into_parts(self) -> Vec<Self::Part> {
        self.parts
    }

    fn drain(&mut self, _combiner: &C) -> Vec<Vec<(K, C::State)>> {
        self.len = 0;
        let parts = self.parts.iter_mut();
        parts
            .map(|buckets| buckets.iter_mut().flat_map(std::mem::take).collect())
            .collect()
    }

    fn reduce<O>(
        parts: Vec<Self::Part>,
        combiner: &C,
        reduce: impl Fn(&K, C::Reduced<'_>) -> O,
    ) -> Vec<(K, O)> {
        let mut parts = parts.into_iter();
        let Some(mut base) = parts.next() else {
            return Vec::new();
        };
        for other in parts {
            for (b, bucket) in base.iter_mut().zip(other) {
                for (k, s) in bucket {
                    match b.entry(k) {
                        Entry::Occupied(mut o) => combiner.merge(o.get_mut(), s),
                        Entry::Vacant(v) => {
                            v.insert(s);
                        }
                    }
                }
            }
        }
        base.into_iter()
            .flatten()
            .map(|(k, s)| finish(combiner, k, s, &reduce))
            .collect()
    }
}
