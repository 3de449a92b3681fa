//! The append container: pairs appended to per-partition buffers as they
//! are emitted, with no lookup; reduce groups each partition's pairs by key
//! and folds them (Metis' append container, SMR's array buffers).
//! Wins when keys rarely repeat, so there is little to combine.
//!
//! Every emit stores an owned copy of its key: with no lookup on the map
//! path there is no "first insert" to copy on. For keys of up to
//! [`INLINE_KEY_BYTES`](crate::plumbing::INLINE_KEY_BYTES) bytes the copy is
//! a move of the key's words; longer keys are allocated per emit.

use std::cell::RefCell;

use super::group::Groups;
use super::table::Table;
use super::{partition_of, Container};
use crate::combine::Combiner;
use crate::job::Emit;
use crate::key::Key;

/// Pairs per key the reduce table is first sized for: append is chosen
/// when keys repeat little, and the table grows (doubling) if they repeat
/// even less.
const EXPECTED_REPEATS: usize = 4;

/// One worker's append container.
pub(crate) struct AppendContainer<K, V, C> {
    parts: Vec<Vec<(K, V)>>,
    combiner: std::marker::PhantomData<fn() -> C>,
}

impl<K, V, C> AppendContainer<K, V, C> {
    /// Buffers for `partitions` partitions, with room for `pairs` pairs in
    /// all (the sample's prediction for one worker, 0 if unknown) and a
    /// quarter more: growing a buffer of hundreds of megabytes copies it,
    /// and room never written costs no memory (the pages are not touched).
    pub(crate) fn new(partitions: usize, pairs: usize) -> Self {
        let per_part = (pairs + pairs / 4) / partitions.max(1);
        AppendContainer {
            parts: (0..partitions)
                .map(|_| Vec::with_capacity(per_part))
                .collect(),
            combiner: std::marker::PhantomData,
        }
    }
}

impl<K: Key, V, C> Emit<K, V> for AppendContainer<K, V, C> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
        self.push(&K::probe(key), value);
    }

    #[inline(always)]
    fn emit_probes(&mut self, probes: &[K::Probe<'_>], value: V)
    where
        V: Clone,
    {
        for probe in probes {
            self.push(probe, value.clone());
        }
    }
}

impl<K: Key, V, C> AppendContainer<K, V, C> {
    /// Appends the pair of a probed key to its partition.
    #[inline(always)]
    fn push(&mut self, probe: &K::Probe<'_>, value: V) {
        let p = partition_of(K::probe_hash(probe), self.parts.len());
        self.parts[p].push((K::from_probe(probe), value));
    }
}

impl<K: Key, V: Send, C: Combiner<V>> Container<K, V, C> for AppendContainer<K, V, C> {
    type Part = Vec<(K, V)>;

    fn distinct(&self) -> usize {
        self.parts.iter().map(Vec::len).sum()
    }

    /// The pairs written: room reserved for more (from the sample's
    /// prediction) takes no memory until it is written.
    fn memory_bytes(&self) -> usize {
        let pairs: usize = self.parts.iter().map(Vec::len).sum();
        pairs * std::mem::size_of::<(K, V)>()
    }

    fn into_parts(self) -> Vec<Self::Part> {
        self.parts
    }

    /// Groups each partition by a stable sort by key, so that a key's
    /// values fold in the order they were emitted.
    fn drain(&mut self, combiner: &C) -> Vec<Vec<(K, C::State)>> {
        let fold = |mut pairs: Vec<(K, V)>| {
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            let mut states: Vec<(K, C::State)> = Vec::new();
            for (k, v) in pairs {
                match states.last_mut() {
                    Some((last, s)) if *last == k => combiner.add(s, v),
                    _ => states.push((k, combiner.init(v))),
                }
            }
            states
        };
        self.parts
            .iter_mut()
            .map(|p| fold(std::mem::take(p)))
            .collect()
    }

    /// Groups the partition's pairs by key without sorting them:
    ///
    /// 1. one pass numbers the keys in a hash table sized to the partition
    ///    (a fraction of the keys, so much smaller than a whole-input table)
    ///    and tags every value with its key's number;
    /// 2. a counting sort by number lays each key's values out together,
    ///    in emission order (worker by worker);
    /// 3. each key's run of values goes to the combiner's
    ///    [`finish_values`](Combiner::finish_values), which folds it in
    ///    sequence, or (keep-all) hands it to reduce as a slice.
    ///
    /// This costs no key comparisons beyond the table's, where a sort of the
    /// pairs by key costs O(n log n), and reads each key's values in
    /// sequence, where folding them into per-key states in the table costs
    /// a cache miss per value. The merge phase orders the keys.
    fn reduce<O>(
        parts: Vec<Self::Part>,
        combiner: &C,
        reduce: impl Fn(&K, C::Reduced<'_>) -> O,
    ) -> Vec<(K, O)> {
        let n: usize = parts.iter().map(Vec::len).sum();
        // 1. Number the keys, first seen first, counting each key's values
        //    in its table slot (already in cache: a separate count array
        //    cost a miss per value); tag the values.
        let tagged = RefCell::new(Tagged {
            values: Vec::with_capacity(n),
            keys: 0,
        });
        let mut numbers = Table::<K, (u32, u32)>::with_capacity(n / EXPECTED_REPEATS);
        for part in parts {
            numbers.fold_all(
                part.into_iter(),
                |v| (tagged.borrow_mut().add_new(v), 1),
                |(id, count), v| {
                    *count += 1;
                    tagged.borrow_mut().values.push((*id, v));
                },
            );
        }
        let Tagged { values, keys } = tagged.into_inner();
        let mut counts = vec![0u32; keys as usize];
        let mut keys: Vec<Option<K>> = (0..keys).map(|_| None).collect();
        for (k, (id, count)) in numbers {
            keys[id as usize] = Some(k);
            counts[id as usize] = count;
        }
        // 2. Counting sort of the values by key number (stable).
        let mut groups = Groups::new(counts.iter().map(|&c| c as usize));
        for (id, v) in values {
            groups.place(id as usize, v);
        }
        // 3. Reduce each key's run of values, in order.
        let keys = keys
            .into_iter()
            .map(|k| k.expect("every number was given to a key"));
        groups.runs(keys, |key, run| {
            let o = combiner.finish_values(run, |r| reduce(&key, r));
            (key, o)
        })
    }
}

/// Values tagged with their key's number, and how many keys there are.
struct Tagged<V> {
    values: Vec<(u32, V)>,
    keys: u32,
}

impl<V> Tagged<V> {
    /// The first value of a new key: returns the key's number.
    fn add_new(&mut self, v: V) -> u32 {
        let id = self.keys;
        self.keys = id
            .checked_add(1)
            .expect("at most 2^32 keys per reduce partition");
        self.values.push((id, v));
        id
    }
}
