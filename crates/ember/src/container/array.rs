//! The array container: integer keys in a known range `0..n` index a plain
//! per-worker array of combiner states; no hashing, no key copies
//! (Phoenix++'s `array_container`). Partition `p` is the `p`-th contiguous
//! range of indices.

use super::{chunks, finish, vec_bytes, Container};
use crate::combine::Combiner;
use crate::job::Emit;
use crate::key::Key;

/// One worker's array container.
pub(crate) struct ArrayContainer<K, V, C: Combiner<V>> {
    slots: Vec<Option<C::State>>,
    partitions: usize,
    combiner: C,
    keys: std::marker::PhantomData<fn(K, V)>,
}

impl<K, V, C: Combiner<V>> ArrayContainer<K, V, C> {
    /// Room for keys `0..n`, handed to reduce in `partitions` ranges.
    pub(crate) fn new(n: usize, partitions: usize, combiner: C) -> Self {
        let mut slots = Vec::with_capacity(n);
        slots.resize_with(n, || None);
        ArrayContainer {
            slots,
            partitions,
            combiner,
            keys: std::marker::PhantomData,
        }
    }
}

/// `slots` cut into `partitions` ranges, each with its first index.
fn ranges<S>(slots: Vec<S>, partitions: usize) -> Vec<(usize, Vec<S>)> {
    let mut start = 0;
    chunks(slots, partitions)
        .into_iter()
        .map(|c| {
            let first = start;
            start += c.len();
            (first, c)
        })
        .collect()
}

#[cold]
#[inline(never)]
fn out_of_range(index: Option<usize>, n: usize) -> ! {
    match index {
        Some(i) => panic!("key {i} is outside the job's declared dense key range 0..{n}"),
        None => panic!("the array container needs non-negative integer keys"),
    }
}

impl<K: Key, V, C: Combiner<V>> Emit<K, V> for ArrayContainer<K, V, C> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
        let index = K::as_index(key);
        let n = self.slots.len();
        match index.and_then(|i| self.slots.get_mut(i)) {
            Some(Some(s)) => self.combiner.add(s, value),
            Some(slot) => *slot = Some(self.combiner.init(value)),
            None => out_of_range(index, n),
        }
    }
}

impl<K: Key, V, C: Combiner<V>> Container<K, V, C> for ArrayContainer<K, V, C> {
    /// The first index of the range, and the states of the range.
    type Part = (usize, Vec<Option<C::State>>);

    fn distinct(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    fn memory_bytes(&self) -> usize {
        vec_bytes(&self.slots)
    }

    fn into_parts(self) -> Vec<Self::Part> {
        ranges(self.slots, self.partitions)
    }

    fn drain(&mut self, _combiner: &C) -> Vec<Vec<(K, C::State)>> {
        let mut empty = Vec::with_capacity(self.slots.len());
        empty.resize_with(self.slots.len(), || None);
        let slots = std::mem::replace(&mut self.slots, empty);
        let key = |i| K::from_index(i).expect("the key type was checked to be an integer");
        let keyed = |(start, states): (usize, Vec<Option<C::State>>)| {
            let states = states.into_iter().enumerate();
            states
                .filter_map(|(i, s)| s.map(|s| (key(start + i), s)))
                .collect()
        };
        ranges(slots, self.partitions)
            .into_iter()
            .map(keyed)
            .collect()
    }

    fn reduce<O>(
        parts: Vec<Self::Part>,
        combiner: &C,
        reduce: impl Fn(&K, C::Reduced<'_>) -> O,
    ) -> Vec<(K, O)> {
        let mut parts = parts.into_iter();
        let Some((start, mut base)) = parts.next() else {
            return Vec::new();
        };
        for (_, other) in parts {
            for (b, s) in base.iter_mut().zip(other) {
                match (b.as_mut(), s) {
                    (Some(b), Some(s)) => combiner.merge(b, s),
                    (None, s) => *b = s,
                    (Some(_), None) => {}
                }
            }
        }
        base.into_iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let key =
                    K::from_index(start + i).expect("the key type was checked to be an integer");
                s.map(|s| finish(combiner, key, s, &reduce))
            })
            .collect()
    }
}
