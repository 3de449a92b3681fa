//! The hash container: per worker, one open-addressing [`Table`] per
//! partition; keys copied on first insert, combiner applied at insert.

use super::partition_of;
use super::table::Table;
use crate::combine::Combiner;
use crate::key::Key;

/// One worker's hash container.
pub(crate) struct HashContainer<K, S> {
    parts: Vec<Table<K, S>>,
}

impl<K: Key, S> HashContainer<K, S> {
    /// A container with `partitions` tables of room for `capacity` keys each.
    pub(crate) fn new(partitions: usize, capacity: usize) -> Self {
        HashContainer {
            parts: (0..partitions)
                .map(|_| Table::with_capacity(capacity))
                .collect(),
        }
    }

    /// Inserts one pair, folding it into the key's state.
    #[inline(always)]
    pub(crate) fn insert<V, C: Combiner<V, State = S>>(&mut self, key: K::Ref<'_>, value: V) {
        let probe = K::probe(key);
        let hash = K::probe_hash(&probe);
        let n = self.parts.len();
        self.parts[partition_of(hash, n)].upsert(&probe, hash, value, C::init, C::add);
    }

    /// Starts loading the slot of a key about to be inserted.
    #[inline(always)]
    pub(crate) fn prefetch(&self, key: K::Ref<'_>) {
        let hash = K::probe_hash(&K::probe(key));
        self.parts[partition_of(hash, self.parts.len())].prefetch(hash);
    }

    /// Hands the partitions over to reduce.
    pub(crate) fn into_partitions(self) -> Vec<Table<K, S>> {
        self.parts
    }
}

/// Joins one partition's tables from every worker into one, merging the
/// states of keys several workers saw. The largest table is the base, so the
/// fewest entries move.
pub(crate) fn join<K: Key, V, C: Combiner<V>>(
    mut tables: Vec<Table<K, C::State>>,
) -> Table<K, C::State> {
    let Some(largest) = (0..tables.len()).max_by_key(|&i| tables[i].len()) else {
        return Table::with_capacity(0);
    };
    let mut base = tables.swap_remove(largest);
    for table in tables {
        for (k, s) in table {
            base.merge_owned(k, s, C::merge);
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
            a.prefetch(w.as_bytes());
            a.insert::<u64, Sum>(w.as_bytes(), 1);
        }
        for w in ["y", "z", "a-much-longer-key-than-16-bytes"] {
            b.insert::<u64, Sum>(w.as_bytes(), 10);
        }
        let (pa, pb) = (a.into_partitions(), b.into_partitions());
        assert_eq!(pa.iter().map(Table::len).sum::<usize>(), 3);
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
