//! The hash+tree container of Metis: per partition, a fixed array of
//! buckets sized from the sampled key count (about 10 keys a bucket), each
//! bucket an ordered B-tree (`std::collections::BTreeMap`). Lookups are O(1)
//! when the prediction holds and degrade to O(log k) per bucket, never to a
//! full rehash, when it does not.

use std::collections::btree_map::Entry;
use std::collections::BTreeMap;

use super::{partition_of, Container};
use crate::combine::Combiner;
use crate::job::{Emit, Job, StateOf};
use crate::key::Key;

/// Keys a bucket is sized to hold (Metis: 10).
pub(crate) const KEYS_PER_BUCKET: usize = 10;

type Bucket<J> = BTreeMap<<J as Job>::Key, StateOf<J>>;

/// One worker's hash+tree container.
pub(crate) struct HashTreeContainer<J: Job> {
    parts: Vec<Vec<Bucket<J>>>,
}

impl<J: Job> HashTreeContainer<J> {
    /// `partitions` bucket arrays sized for `keys` keys in all.
    pub(crate) fn new(partitions: usize, keys: usize) -> Self {
        let buckets = (keys / partitions / KEYS_PER_BUCKET)
            .max(1)
            .next_power_of_two();
        HashTreeContainer {
            parts: (0..partitions)
                .map(|_| (0..buckets).map(|_| BTreeMap::new()).collect())
                .collect(),
        }
    }
}

impl<J: Job> Emit<J::Key, J::Value> for HashTreeContainer<J> {
    #[inline(always)]
    fn emit(&mut self, key: <J::Key as Key>::Ref<'_>, value: J::Value) {
        let probe = J::Key::probe(key);
        let hash = J::Key::probe_hash(&probe);
        let n = self.parts.len();
        let part = &mut self.parts[partition_of(hash, n)];
        let mask = part.len() - 1;
        let bucket = &mut part[hash as usize & mask];
        match bucket.get_mut(J::Key::borrow_ref(&key)) {
            Some(s) => J::Combiner::add(s, value),
            None => {
                bucket.insert(J::Key::from_probe(&probe), J::Combiner::init(value));
            }
        }
    }
}

impl<J: Job> Container<J> for HashTreeContainer<J> {
    type Part = Vec<Bucket<J>>;

    fn distinct(&self) -> usize {
        self.parts.iter().flatten().map(BTreeMap::len).sum()
    }

    fn into_parts(self) -> Vec<Self::Part> {
        self.parts
    }

    fn reduce(job: &J, parts: Vec<Self::Part>) -> Vec<(J::Key, J::Out)> {
        let mut parts = parts.into_iter();
        let Some(mut base) = parts.next() else {
            return Vec::new();
        };
        for other in parts {
            for (b, bucket) in base.iter_mut().zip(other) {
                for (k, s) in bucket {
                    match b.entry(k) {
                        Entry::Occupied(mut o) => J::Combiner::merge(o.get_mut(), s),
                        Entry::Vacant(v) => {
                            v.insert(s);
                        }
                    }
                }
            }
        }
        base.into_iter()
            .flatten()
            .map(|(k, s)| {
                let o = job.reduce(&k, s);
                (k, o)
            })
            .collect()
    }
}
