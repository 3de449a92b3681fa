//! The open-addressing table under the hash container.
//!
//! Our own rather than hashbrown's, for two measured reasons (word count on
//! the 256 MiB corpus, 943K distinct words, where the table outgrows the
//! caches and most of the time is cache and TLB misses on rare words):
//!
//! - **one array**: slots hold `Option<(K, S)>` directly (32 bytes for a
//!   [`Bytes`](crate::Bytes) key and a `u64` count), so a cold lookup misses
//!   once, where hashbrown's separate control bytes make it miss twice;
//! - **prefetch**: [`Table::prefetch`] lets the map side start loading the
//!   slot of a key it will emit a few words later, overlapping the misses
//!   (Emit::prefetch), which hashbrown's API cannot express.
//!
//! The slots are aligned to the cache line, and large tables to huge pages
//! and advised to use them, which removes most TLB misses on random slot
//! accesses ([`Slots`]).
//!
//! Linear probing on the hash's low bits, at most 70% full, doubling when
//! fuller (so a table that starts too small is rehashed a logarithmic
//! number of times). A table can index by other bits ([`Table::rotated`]),
//! so that two tables walked together do not meet at the same offsets.

use super::slots::{self, Slots};
use crate::key::Key;

/// Slots at most 70% full.
const MAX_LOAD_NUM: usize = 7;
const MAX_LOAD_DEN: usize = 10;

/// An open-addressing map from keys to combiner states.
pub(crate) struct Table<K, S> {
    slots: Slots<Option<(K, S)>>,
    len: usize,
    /// The hash is rotated right by this many bits before its low bits
    /// pick a slot.
    rotate: u32,
}

impl<K: Key, S> Table<K, S> {
    /// A table that holds `n` keys without growing.
    pub(crate) fn with_capacity(n: usize) -> Self {
        let slots = (n * MAX_LOAD_DEN / MAX_LOAD_NUM + 1)
            .next_power_of_two()
            .max(16);
        Table {
            slots: Slots::new(slots),
            len: 0,
            rotate: 0,
        }
    }

    /// This table indexing its slots by the hash's bits from `bit` on
    /// (wrapping round), not from bit 0.
    pub(crate) fn rotated(mut self, bit: u32) -> Self {
        assert_eq!(self.len, 0, "a table is rotated before it holds keys");
        self.rotate = bit;
        self
    }

    /// Makes room for `keys` keys in all without growing.
    pub(crate) fn reserve(&mut self, keys: usize) {
        if keys * MAX_LOAD_DEN > self.slots.len() * MAX_LOAD_NUM {
            self.rebuild(keys);
        }
    }

    /// Keys held.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    /// The slot a key with this hash is looked for first.
    #[inline(always)]
    fn home(&self, hash: u64) -> usize {
        hash.rotate_right(self.rotate) as usize & self.mask()
    }

    /// Starts loading the slot a key with this hash would be found in.
    #[inline(always)]
    pub(crate) fn prefetch(&self, hash: u64) {
        let slot = self.slots.as_ptr().wrapping_add(self.home(hash));
        crate::hint::prefetch(slot);
    }

    /// Folds `value` into the state of the probed key, inserting the key
    /// (copied from the probe) with `init(value)` if it is new. Returns
    /// true when it was new.
    #[inline(always)]
    pub(crate) fn upsert<V>(
        &mut self,
        probe: &K::Probe<'_>,
        hash: u64,
        value: V,
        init: impl FnOnce(V) -> S,
        add: impl FnOnce(&mut S, V),
    ) -> bool {
        let (mask, mut i) = (self.mask(), self.home(hash));
        loop {
            match &mut self.slots[i] {
                Some((k, s)) if k.matches(probe) => {
                    add(s, value);
                    return false;
                }
                Some(_) => i = (i + 1) & mask,
                None => break,
            }
        }
        self.slots[i] = Some((K::from_probe(probe), init(value)));
        self.inserted();
        true
    }

    /// True when at least half the slots hold a key.
    #[inline(always)]
    pub(crate) fn half_full(&self) -> bool {
        self.len >= self.slots.len() / 2
    }

    /// Folds an owned key and state in (joining another worker's table).
    pub(crate) fn merge_owned(&mut self, key: K, state: S, merge: impl FnOnce(&mut S, S)) {
        let hash = key.hash_owned();
        self.fold_hashed(key, hash, state, |s| s, merge);
    }

    /// Folds `x` into the state of an owned key whose hash is known,
    /// inserting the key with `init(x)` if it is new.
    #[inline]
    fn fold_hashed<X>(
        &mut self,
        key: K,
        hash: u64,
        x: X,
        init: impl FnOnce(X) -> S,
        add: impl FnOnce(&mut S, X),
    ) {
        let (mask, mut i) = (self.mask(), self.home(hash));
        loop {
            match &mut self.slots[i] {
                Some((k, s)) if *k == key => return add(s, x),
                Some(_) => i = (i + 1) & mask,
                None => break,
            }
        }
        self.slots[i] = Some((key, init(x)));
        self.inserted();
    }

    /// Folds owned keys and states in, prefetching each key's slot a few
    /// keys before it is merged, so that the cache misses of a large table
    /// overlap.
    pub(crate) fn merge_all(
        &mut self,
        items: impl Iterator<Item = (K, S)>,
        merge: impl Fn(&mut S, S),
    ) {
        self.fold_all(items, |s| s, merge);
    }

    /// Folds owned keys with values (or states) in: `init(x)` for a new
    /// key, `add(state, x)` for a known one, in the items' order. Prefetches
    /// each key's slot a few keys ahead, like [`Table::merge_all`].
    pub(crate) fn fold_all<X>(
        &mut self,
        items: impl Iterator<Item = (K, X)>,
        init: impl Fn(X) -> S,
        add: impl Fn(&mut S, X),
    ) {
        const AHEAD: usize = 8;
        let mut ring: [Option<(K, u64, X)>; AHEAD] = std::array::from_fn(|_| None);
        let mut n = 0;
        for (k, x) in items {
            let hash = k.hash_owned();
            self.prefetch(hash);
            if let Some((k, h, x)) = ring[n % AHEAD].replace((k, hash, x)) {
                self.fold_hashed(k, h, x, &init, &add);
            }
            n += 1;
        }
        // The ring holds the last items, the oldest in slot n % AHEAD: fold
        // them in the order they came, so `add` sees each key's values in
        // order.
        let (newer, older) = ring.split_at_mut(n % AHEAD);
        for (k, h, x) in older.iter_mut().chain(newer).filter_map(Option::take) {
            self.fold_hashed(k, h, x, &init, &add);
        }
    }

    /// Keys the table holds without growing.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len() * MAX_LOAD_NUM / MAX_LOAD_DEN
    }

    /// Folds owned keys and states whose hashes are known (`hashes[i]` is
    /// the hash of `items[i].0`), prefetching each key's slot a few keys
    /// before it is merged. Drains both vectors, keeping their memory.
    pub(crate) fn merge_hashed_all(
        &mut self,
        hashes: &mut Vec<u64>,
        items: &mut Vec<(K, S)>,
        merge: impl Fn(&mut S, S),
    ) {
        // Further ahead than `merge_all`: a merge alone is quick, so 8 keys
        // ahead is too little time for the miss (24 measured best of 8-48).
        const AHEAD: usize = 24;
        for &h in hashes.iter().take(AHEAD) {
            self.prefetch(h);
        }
        for (i, (k, s)) in items.drain(..).enumerate() {
            if let Some(&h) = hashes.get(i + AHEAD) {
                self.prefetch(h);
            }
            self.fold_hashed(k, hashes[i], s, |s| s, &merge);
        }
        hashes.clear();
    }

    /// Bytes of the slot array.
    pub(crate) fn bytes(&self) -> usize {
        self.slots.len() * std::mem::size_of::<Option<(K, S)>>()
    }

    /// Moves every key and state of this table into `dst` (joining states
    /// with `merge`), leaving this table empty with its slots kept for reuse.
    pub(crate) fn drain_into(&mut self, dst: &mut Table<K, S>, merge: impl Fn(&mut S, S)) {
        dst.merge_all(self.slots.iter_mut().filter_map(Option::take), merge);
        self.len = 0;
    }

    /// Calls `f` with every key and state, moved out in slot order, and
    /// leaves the table empty with its slots kept for reuse.
    pub(crate) fn take_each(&mut self, mut f: impl FnMut(K, S)) {
        for (k, s) in self.slots.iter_mut().filter_map(Option::take) {
            f(k, s);
        }
        self.len = 0;
    }

    #[inline(always)]
    fn inserted(&mut self) {
        self.len += 1;
        if self.len * MAX_LOAD_DEN > self.slots.len() * MAX_LOAD_NUM {
            self.grow();
        }
    }

    /// Doubles the slots: `len` is just past [`MAX_LOAD_NUM`]/[`MAX_LOAD_DEN`]
    /// of them, so a table for `len` keys has twice as many (room for
    /// `2 * len` keys would be four times the slots).
    #[cold]
    fn grow(&mut self) {
        self.rebuild(self.len);
    }

    /// Moves every key into a table with room for `keys`.
    fn rebuild(&mut self, keys: usize) {
        let bigger = Table::with_capacity(keys).rotated(self.rotate);
        let old = std::mem::replace(self, bigger);
        for (k, s) in old {
            self.place_new(k, s);
        }
    }

    /// Puts a key known to be absent into a table with room for it.
    fn place_new(&mut self, key: K, state: S) {
        let (mask, mut i) = (self.mask(), self.home(key.hash_owned()));
        while self.slots[i].is_some() {
            i = (i + 1) & mask;
        }
        self.slots[i] = Some((key, state));
        self.len += 1;
    }
}

impl<K, S> IntoIterator for Table<K, S> {
    type Item = (K, S);
    type IntoIter = IntoIter<K, S>;
    fn into_iter(self) -> Self::IntoIter {
        self.slots.into_iter().flatten()
    }
}

/// A table's keys and states, moved out slot by slot.
pub(crate) type IntoIter<K, S> = std::iter::Flatten<slots::IntoIter<Option<(K, S)>>>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::Bytes;

    #[test]
    fn a_rotated_table_grows_rotated_and_counts_as_a_plain_map() {
        let mut t = Table::<u64, u64>::with_capacity(0).rotated(32);
        let mut want = std::collections::HashMap::new();
        for i in 0..20_000u64 {
            let k = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 7_001;
            t.merge_owned(k, 1, |s, v| *s += v);
            *want.entry(k).or_insert(0u64) += 1;
        }
        assert_eq!(t.rotate, 32);
        let mut other = Table::with_capacity(16);
        t.drain_into(&mut other, |s, v| *s += v);
        let got: std::collections::HashMap<u64, u64> = other.into_iter().collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_full_table_doubles() {
        let mut t = Table::<u64, u64>::with_capacity(0);
        let slot = std::mem::size_of::<Option<(u64, u64)>>();
        let mut slots = t.bytes() / slot;
        for k in 0..100_000u64 {
            t.merge_owned(k, 1, |s, v| *s += v);
            let now = t.bytes() / slot;
            assert!(now == slots || now == 2 * slots, "{slots} -> {now} slots");
            slots = now;
            assert!(t.len() * MAX_LOAD_DEN <= slots * MAX_LOAD_NUM);
        }
        assert_eq!(slots, 1 << 18);
    }

    #[test]
    fn grows_and_keeps_every_key() {
        let mut t = Table::<Bytes, u64>::with_capacity(1);
        let words: Vec<String> = (0..5000).map(|i| format!("w{}", i * 7919)).collect();
        for _ in 0..3 {
            for w in &words {
                let p = Bytes::probe(w.as_bytes());
                let h = Bytes::probe_hash(&p);
                t.prefetch(h);
                t.upsert(&p, h, 1u64, |v| v, |s, v| *s += v);
            }
        }
        assert_eq!(t.len(), words.len());
        let mut other = Table::<Bytes, u64>::with_capacity(4);
        other.merge_owned(Bytes::from("w0"), 10, |s, v| *s += v);
        other.merge_owned(Bytes::from("new"), 1, |s, v| *s += v);
        for (k, s) in t {
            other.merge_owned(k, s, |a, b| *a += b);
        }
        let mut all: Vec<(Bytes, u64)> = other.into_iter().collect();
        all.sort();
        assert_eq!(all.len(), words.len() + 1);
        assert!(all.contains(&(Bytes::from("w0"), 13)));
        assert!(all.contains(&(Bytes::from("new"), 1)));
        assert!(all
            .iter()
            .filter(|(k, _)| k.as_bytes() != b"w0" && k.as_bytes() != b"new")
            .all(|(_, n)| *n == 3));
    }

    #[test]
    fn drain_and_merge_all_fold_and_keep_the_slots() {
        let key = |i: u32| Bytes::from(format!("key-{}", i % 1000).as_str());
        let mut dst = Table::<Bytes, u64>::with_capacity(4);
        let mut buf = Table::<Bytes, u64>::with_capacity(700);
        let slots = buf.bytes();
        for round in 0..3 {
            for i in 0..700 {
                buf.merge_owned(key(i * 7 + round), 1, |s, v| *s += v);
            }
            buf.drain_into(&mut dst, |s, v| *s += v);
            assert_eq!((buf.len(), buf.bytes()), (0, slots));
        }
        let mut pairs: Vec<(Bytes, u64)> = (0..1000).map(|i| (key(i), 10)).collect();
        dst.merge_all(pairs.drain(..), |s, v| *s += v);
        let total: u64 = dst.into_iter().map(|(_, n)| n).sum();
        assert_eq!(total, 3 * 700 + 10 * 1000);
    }
    proptest::proptest! {
        /// Tables of any starting capacity count every key as a plain map
        /// does, through probes that wrap around the end, growth, and
        /// draining into another table.
        #[test]
        fn any_starting_capacity_counts_as_a_plain_map(
            start in 0usize..200,
            words in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20),
                0..600,
            ),
        ) {
            let mut want = std::collections::BTreeMap::<Vec<u8>, u64>::new();
            let mut t = Table::<Bytes, u64>::with_capacity(start);
            for w in &words {
                *want.entry(w.clone()).or_default() += 1;
                let p = Bytes::probe(w);
                let h = Bytes::probe_hash(&p);
                t.prefetch(h);
                t.upsert(&p, h, 1u64, |v| v, |s, v| *s += v);
                proptest::prop_assert!(t.len() <= t.capacity());
            }
            let mut other = Table::<Bytes, u64>::with_capacity(start / 2);
            t.drain_into(&mut other, |a, b| *a += b);
            let got: std::collections::BTreeMap<Vec<u8>, u64> = other
                .into_iter()
                .map(|(k, n)| (k.as_bytes().to_vec(), n))
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }
}
