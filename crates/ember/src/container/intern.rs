//! The intern container: the append container's pairs, with each key
//! stored once per worker and partition. A worker numbers the distinct
//! keys of each partition as it first sees them (a table from key to
//! number: the key copied once, Metis' *keycopy*) and appends each value
//! beside its key's number, in one array: for a byte-string key and a
//! `u32` value, 8 bytes a pair where the append container takes 32.
//! Reduce joins the workers' numberings of a partition (one lookup per
//! distinct key and worker, not per pair) and lays each key's values out
//! together with a counting sort by number ([`Groups`]).
//!
//! Wins over the append container where pairs are many and keys long
//! against values (an inverted index: most of its memory was keys), at the
//! cost of a table lookup per emit, which the batched emit prefetches.

use super::group::Groups;
use super::table::Table;
use super::{in_batches, partition_of, probes_in_batches, Container};
use crate::combine::Combiner;
use crate::job::Emit;
use crate::key::Key;

/// Keys each partition's table starts with when the sample predicts none.
const INITIAL_KEYS: usize = 64;

/// One partition of one worker's intern container.
pub(crate) struct Numbered<K, V> {
    /// Each key once, with its number: the order it was first seen in.
    keys: Table<K, u32>,
    /// Each pair as its key's number and its value, in emission order. One
    /// array, so that an emit writes one stream (as two, an inverted
    /// index's 256 partitions kept 512 open). The number is padded to the
    /// value's alignment (a `u64` value: 16 bytes a pair, not 12).
    pairs: Vec<(u32, V)>,
}

impl<K: Key, V> Numbered<K, V> {
    /// Room for `keys` keys and `pairs` pairs.
    fn with_capacity(keys: usize, pairs: usize) -> Self {
        Numbered {
            keys: Table::with_capacity(keys),
            pairs: Vec::with_capacity(pairs),
        }
    }

    /// Appends a pair, numbering its key if it is new.
    #[inline(always)]
    fn push(&mut self, probe: &K::Probe<'_>, hash: u64, value: V) {
        let next = u32::try_from(self.keys.len()).expect("at most 2^32 keys per partition");
        let mut number = next;
        self.keys
            .upsert(probe, hash, (), |()| next, |&mut known, ()| number = known);
        self.pairs.push((number, value));
    }

    /// Bytes of the table and of the pairs written (room reserved for more
    /// takes no memory until it is written).
    fn bytes(&self) -> usize {
        self.keys.bytes() + self.pairs.len() * std::mem::size_of::<(u32, V)>()
    }
}

/// One worker's intern container.
pub(crate) struct InternContainer<K, V, C> {
    parts: Vec<Numbered<K, V>>,
    /// Keys a partition's table starts with after a spill.
    keys_per_part: usize,
    combiner: std::marker::PhantomData<fn() -> C>,
}

impl<K: Key, V, C> InternContainer<K, V, C> {
    /// `partitions` partitions, with room for `keys` distinct keys and
    /// `pairs` pairs in all (the sample's predictions for one worker, 0 if
    /// unknown), pairs a quarter more, as the append container reserves.
    pub(crate) fn new(partitions: usize, keys: usize, pairs: usize) -> Self {
        let partitions = partitions.max(1);
        let keys_per_part = match keys {
            0 => INITIAL_KEYS,
            k => k / partitions,
        };
        let pairs_per_part = (pairs + pairs / 4) / partitions;
        InternContainer {
            parts: (0..partitions)
                .map(|_| Numbered::with_capacity(keys_per_part, pairs_per_part))
                .collect(),
            keys_per_part,
            combiner: std::marker::PhantomData,
        }
    }
}

impl<K: Key, V, C> Emit<K, V> for InternContainer<K, V, C> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
        let probe = K::probe(key);
        let hash = K::probe_hash(&probe);
        let n = self.parts.len();
        self.parts[partition_of(hash, n)].push(&probe, hash, value);
    }

    #[inline(always)]
    fn emit_batch(&mut self, keys: &[K::Ref<'_>], value: V)
    where
        V: Clone,
    {
        in_batches::<K, _>(
            keys,
            &mut self.parts[..],
            prefetch_slot,
            // Forced inline: without it the compiler calls it per key.
            #[inline(always)]
            |parts, p, hash| push(parts, p, hash, value.clone()),
        );
    }

    #[inline(always)]
    fn emit_probes(&mut self, probes: &[K::Probe<'_>], value: V)
    where
        V: Clone,
    {
        probes_in_batches::<K, _>(
            probes,
            &mut self.parts[..],
            prefetch_slot,
            // Forced inline: without it the compiler calls it per key.
            #[inline(always)]
            |parts, p, hash| push(parts, p, hash, value.clone()),
        );
    }

    #[inline(always)]
    fn prefetch(&mut self, key: K::Ref<'_>) {
        let hash = K::probe_hash(&K::probe(key));
        self.parts[partition_of(hash, self.parts.len())]
            .keys
            .prefetch(hash);
    }
}

/// Starts loading the key slot of the key hashed `hash` in its partition.
#[inline(always)]
fn prefetch_slot<K: Key, V>(parts: &[Numbered<K, V>], hash: u64) {
    parts[partition_of(hash, parts.len())].keys.prefetch(hash);
}

/// Appends `value` to `probe`'s key (hashed `hash`) in its partition.
/// Inlined into the batch's loop, as the hash container's insert.
#[inline(always)]
fn push<K: Key, V>(parts: &mut [Numbered<K, V>], probe: &K::Probe<'_>, hash: u64, value: V) {
    let n = parts.len();
    parts[partition_of(hash, n)].push(probe, hash, value);
}

impl<K: Key, V: Send, C: Combiner<V>> Container<K, V, C> for InternContainer<K, V, C> {
    type Part = Numbered<K, V>;

    fn distinct(&self) -> usize {
        self.parts.iter().map(|p| p.keys.len()).sum()
    }

    fn memory_bytes(&self) -> usize {
        self.parts.iter().map(Numbered::bytes).sum()
    }

    fn into_parts(self) -> Vec<Self::Part> {
        self.parts
    }

    /// Groups each partition's values by key number and folds each key's
    /// in the order they were emitted.
    fn drain(&mut self, combiner: &C) -> Vec<Vec<(K, C::State)>> {
        let keys = self.keys_per_part;
        let parts = self.parts.iter_mut();
        let parts: Vec<_> = parts
            .map(|p| std::mem::replace(p, Numbered::with_capacity(keys, 0)))
            .collect();
        let fold = |part| {
            let (keys, groups) = group(vec![part]);
            groups.runs(keys, |key, mut run| {
                let first = run.next().expect("a key has at least one value");
                let mut state = combiner.init(first);
                run.for_each(|v| combiner.add(&mut state, v));
                (key, state)
            })
        };
        parts.into_iter().map(fold).collect()
    }

    /// Joins the workers' numberings into the largest one's, then reduces
    /// each key's run of values: worker by worker, each in emission order,
    /// as the append container hands them over. The merge phase orders the
    /// keys.
    fn reduce<O>(
        parts: Vec<Self::Part>,
        combiner: &C,
        reduce: impl Fn(&K, C::Reduced<'_>) -> O,
    ) -> Vec<(K, O)> {
        let (keys, groups) = group(parts);
        groups.runs(keys, |key, run| {
            let o = combiner.finish_values(run, |r| reduce(&key, r));
            (key, o)
        })
    }
}

/// Joins the key numberings of `parts` (one partition of several workers)
/// into the one of the part with the most keys, and lays the values out
/// by joined number, worker by worker, each in emission order. Returns
/// the keys by joined number, and their values.
fn group<K: Key, V>(mut parts: Vec<Numbered<K, V>>) -> (impl Iterator<Item = K>, Groups<V>) {
    let largest = (0..parts.len()).max_by_key(|&i| parts[i].keys.len());
    let mut joined = match largest {
        Some(i) => std::mem::replace(&mut parts[i].keys, Table::with_capacity(0)),
        None => Table::with_capacity(0),
    };
    let own = u32::try_from(joined.len()).expect("at most 2^32 keys per partition");
    // Each part's key numbers in the joined numbering.
    let mut renumber: Vec<Vec<u32>> = Vec::with_capacity(parts.len());
    let mut next = own;
    for (w, part) in parts.iter_mut().enumerate() {
        if Some(w) == largest {
            renumber.push((0..own).collect());
            continue;
        }
        let keys = std::mem::replace(&mut part.keys, Table::with_capacity(0));
        let mut map = vec![0; keys.len()];
        for (k, n) in keys {
            let mut number = next;
            joined.merge_owned(k, next, |&mut known, _| number = known);
            if number == next {
                next = next
                    .checked_add(1)
                    .expect("at most 2^32 keys per partition");
            }
            map[n as usize] = number;
        }
        renumber.push(map);
    }
    let mut counts = vec![0; next as usize];
    for (part, map) in parts.iter().zip(&renumber) {
        for &(n, _) in &part.pairs {
            counts[map[n as usize] as usize] += 1;
        }
    }
    let mut groups = Groups::new(counts.into_iter());
    for (part, map) in parts.into_iter().zip(&renumber) {
        for (n, v) in part.pairs {
            groups.place(map[n as usize] as usize, v);
        }
    }
    (keys_by_number(joined), groups)
}

/// The keys of `table`, by number.
fn keys_by_number<K: Key>(table: Table<K, u32>) -> impl Iterator<Item = K> {
    let mut by_number: Vec<Option<K>> = (0..table.len()).map(|_| None).collect();
    for (k, n) in table {
        by_number[n as usize] = Some(k);
    }
    by_number
        .into_iter()
        .map(|k| k.expect("the numbers are 0..keys"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combine::KeepAll;
    use crate::container::append::AppendContainer;
    use crate::key::Bytes;
    use proptest::prelude::*;

    type Pairs = Vec<(Vec<u8>, u32)>;

    /// Emits `pairs` into `c`, one at a time or in batches of equal values.
    fn emit_all<C: Emit<Bytes, u32>>(c: &mut C, pairs: &[(Vec<u8>, u32)], batched: bool) {
        if !batched {
            pairs.iter().for_each(|(k, v)| c.emit(k, *v));
            return;
        }
        for run in pairs.chunk_by(|a, b| a.1 == b.1) {
            let keys: Vec<&[u8]> = run.iter().map(|(k, _)| k.as_slice()).collect();
            c.emit_batch(&keys, run[0].1);
        }
    }

    /// What each partition's drain gives, sorted by key.
    fn drained<C: Container<Bytes, u32, KeepAll>>(c: &mut C) -> Vec<Vec<(Bytes, Vec<u32>)>> {
        let mut parts = c.drain(&KeepAll);
        parts.iter_mut().for_each(|p| p.sort());
        parts
    }

    /// Partition by partition, every worker's part reduced, sorted by key.
    fn reduced<C: Container<Bytes, u32, KeepAll>>(workers: Vec<C>) -> Vec<Vec<(Bytes, Vec<u32>)>> {
        let mut columns: Vec<Vec<C::Part>> = Vec::new();
        for w in workers {
            for (p, part) in w.into_parts().into_iter().enumerate() {
                if p == columns.len() {
                    columns.push(Vec::new());
                }
                columns[p].push(part);
            }
        }
        let reduce = |_: &Bytes, values: &mut [u32]| values.to_vec();
        columns
            .into_iter()
            .map(|parts| {
                let mut out = C::reduce(parts, &KeepAll, reduce);
                out.sort();
                out
            })
            .collect()
    }

    proptest! {
        /// Against the append container, which holds every pair with its
        /// key: the same keys with the same values, in emission order,
        /// worker by worker, when drained (a spill) and when reduced; for
        /// short, long and non-ASCII keys, one to three workers, emitted
        /// one at a time or in batches.
        #[test]
        fn holds_what_the_append_container_holds(
            workers in proptest::collection::vec(
                proptest::collection::vec(
                    (
                        proptest::collection::vec(
                            prop_oneof![4 => b'a'..=b'c', 1 => any::<u8>()],
                            0..24,
                        ),
                        0u32..4,
                    ),
                    0..200,
                ),
                1..4,
            ),
            partitions in 1usize..5,
            (predicted_keys, batched) in (0usize..100, any::<bool>()),
            drain_at in 0usize..200,
        ) {
            let (mut interns, mut appends) = (Vec::new(), Vec::new());
            for pairs in &workers {
                let (before, after) = pairs.split_at(drain_at.min(pairs.len()));
                let mut i = InternContainer::<Bytes, u32, KeepAll>::new(
                    partitions,
                    predicted_keys,
                    pairs.len(),
                );
                let mut a = AppendContainer::<Bytes, u32, KeepAll>::new(partitions, 0);
                emit_all(&mut i, before, batched);
                emit_all(&mut a, before, batched);
                prop_assert_eq!(i.distinct() == 0, before.is_empty());
                prop_assert_eq!(drained(&mut i), drained(&mut a));
                prop_assert_eq!((i.distinct(), i.memory_bytes() > 0), (0, true));
                emit_all(&mut i, after, batched);
                emit_all(&mut a, after, batched);
                interns.push(i);
                appends.push(a);
            }
            prop_assert_eq!(reduced(interns), reduced(appends));
        }
    }

    #[test]
    fn a_key_is_stored_once_per_partition() {
        let pairs: Pairs = (0..1000u32)
            .map(|i| {
                (
                    format!("a word longer than sixteen bytes {}", i % 10).into_bytes(),
                    i,
                )
            })
            .collect();
        let mut c = InternContainer::<Bytes, u32, KeepAll>::new(2, 0, 0);
        emit_all(&mut c, &pairs, false);
        assert_eq!(Container::<_, _, KeepAll>::distinct(&c), 10);
        let slots: usize = c.parts.iter().map(|p| p.keys.bytes()).sum();
        let bytes = Container::<_, _, KeepAll>::memory_bytes(&c);
        assert_eq!(bytes, slots + 1000 * 8);
    }
}
