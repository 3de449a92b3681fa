//! The hash container: per worker, one hashbrown table per partition, keys
//! copied on first insert, combiner applied at insert.
//!
//! hashbrown's `HashTable` is used as is: its SIMD group probing beat our
//! linear-probing prototype, and it lets us keep the key's hash out of the
//! entry (an inline [`Bytes`](crate::Bytes) key plus a `u64` count is a
//! 32-byte entry, as in the C reference).

use hashbrown::hash_table::{Entry, HashTable};

use super::partition_of;
use crate::combine::Combiner;
use crate::key::Key;

/// One worker's hash container.
pub(crate) struct HashContainer<K, S> {
    parts: Vec<HashTable<(K, S)>>,
}

impl<K: Key, S> HashContainer<K, S> {
    /// A container with `partitions` tables of `capacity` entries each.
    pub(crate) fn new(partitions: usize, capacity: usize) -> Self {
        HashContainer {
            parts: (0..partitions)
                .map(|_| HashTable::with_capacity(capacity))
                .collect(),
        }
    }

    /// Inserts one pair, folding it into the key's state.
    #[inline(always)]
    pub(crate) fn insert<V, C: Combiner<V, State = S>>(&mut self, key: K::Ref<'_>, value: V) {
        let probe = K::probe(key);
        let hash = K::probe_hash(&probe);
        let n = self.parts.len();
        let table = &mut self.parts[partition_of(hash, n)];
        match table.entry(hash, |e| e.0.matches(&probe), |e| e.0.hash_owned()) {
            Entry::Occupied(mut o) => C::add(&mut o.get_mut().1, value),
            Entry::Vacant(v) => {
                v.insert((K::from_probe(&probe), C::init(value)));
            }
        }
    }

    /// Hands the partitions over to reduce.
    pub(crate) fn into_partitions(self) -> Vec<HashTable<(K, S)>> {
        self.parts
    }
}

/// Joins one partition's tables from every worker into one, merging the
/// states of keys several workers saw. The largest table is the base, so the
/// fewest entries move.
pub(crate) fn join<K: Key, V, C: Combiner<V>>(
    mut tables: Vec<HashTable<(K, C::State)>>,
) -> HashTable<(K, C::State)> {
    let Some(largest) = (0..tables.len()).max_by_key(|&i| tables[i].len()) else {
        return HashTable::new();
    };
    let mut base = tables.swap_remove(largest);
    for table in tables {
        base.reserve(table.len(), |e| e.0.hash_owned());
        for (k, s) in table {
            match base.entry(k.hash_owned(), |e| e.0 == k, |e| e.0.hash_owned()) {
                Entry::Occupied(mut o) => C::merge(&mut o.get_mut().1, s),
                Entry::Vacant(v) => {
                    v.insert((k, s));
                }
            }
        }
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combine::Sum;
    use crate::key::Bytes;

    #[test]
    fn counts_and_joins() {
        let mut a = HashContainer::<Bytes, u64>::new(3, 1);
        let mut b = HashContainer::<Bytes, u64>::new(3, 1);
        for w in ["x", "y", "x", "a-much-longer-key-than-16-bytes", "x"] {
            a.insert::<u64, Sum>(w.as_bytes(), 1);
        }
        for w in ["y", "z", "a-much-longer-key-than-16-bytes"] {
            b.insert::<u64, Sum>(w.as_bytes(), 10);
        }
        let (pa, pb) = (a.into_partitions(), b.into_partitions());
        assert_eq!(pa.iter().map(HashTable::len).sum::<usize>(), 3);
        let mut all: Vec<(String, u64)> = pa
            .into_iter()
            .zip(pb)
            .flat_map(|(x, y)| join::<Bytes, u64, Sum>(vec![x, y]))
            .map(|(k, v)| (String::from_utf8(k.as_bytes().to_vec()).unwrap(), v))
            .collect();
        all.sort();
        let want = [
            ("a-much-longer-key-than-16-bytes", 11),
            ("x", 3),
            ("y", 11),
            ("z", 10),
        ];
        let want: Vec<(String, u64)> = want.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        assert_eq!(all, want);
    }
}
