//! Intermediate containers: where map output lives between map and reduce.
//!
//! Metis' finding is that this structure decides performance and that no
//! single one wins every workload, so ember has five behind one
//! [`Container`] interface, chosen per run ([`ContainerKind`]), by the job,
//! by the caller, or by sampling (`Auto`, see `predict`).
//!
//! Lifecycle (as in Phoenix++ and Metis):
//!
//! 1. Each map worker owns one container for the whole map phase; `emit`
//!    writes only to it, so the map path takes no lock.
//! 2. A container is partitioned into `P` partitions (by key hash, or by key
//!    range for the array container); where the job's combiner can fold at
//!    insert, it does, so a key costs one entry per worker.
//! 3. After map, [`Container::into_parts`] hands partition `p` of every
//!    worker to reduce task `p`, whose [`Container::reduce`] joins them
//!    (merging states with the combiner) and runs the job's `reduce`.
//!
//! | kind | per worker | insert | best for |
//! |---|---|---|---|
//! | `hash` | open-addressing table per partition | O(1), combined | repeated keys (word count) |
//! | `hash_tree` | fixed bucket array, B-tree per bucket | O(log k) per bucket, combined | unpredictable key counts (Metis) |
//! | `array` | one state per key of a dense integer range | O(1), no hashing | few integer keys (histogram, k-means) |
//! | `append` | pairs appended per partition, grouped by sort in reduce | O(1), no lookup | few repeats (inverted index of unique words) |
//! | `unique` | pairs appended, never grouped | O(1) | keys declared unique (sort) |

use std::fmt;

use crate::job::{Emit, Job};
use crate::key::Key;
use table::Table;

pub(crate) mod append;
pub(crate) mod array;
pub(crate) mod hash;
pub(crate) mod hash_tree;
pub(crate) mod table;
pub(crate) mod unique;

/// Which intermediate container a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ContainerKind {
    /// Chosen by the runtime from the job's key hint and a sample of the
    /// input (the default).
    #[default]
    Auto,
    /// Open-addressing hash table per partition, combiner at insert.
    Hash,
    /// Fixed-size hash table with an ordered tree in each bucket (Metis).
    HashTree,
    /// A plain array indexed by key: integer keys in `0..n` (the job's
    /// [`KeyHint::Dense`]).
    Array,
    /// Append-only pair buffers, grouped by sorting at reduce time.
    Append,
    /// Append-only, never grouped: for keys each emitted once
    /// ([`KeyHint::Unique`]).
    Unique,
}

impl ContainerKind {
    /// Every kind but `Auto`.
    pub const ALL: [ContainerKind; 5] = [
        ContainerKind::Hash,
        ContainerKind::HashTree,
        ContainerKind::Array,
        ContainerKind::Append,
        ContainerKind::Unique,
    ];

    /// The kind's name, as the CLI and the stats spell it.
    pub fn name(self) -> &'static str {
        match self {
            ContainerKind::Auto => "auto",
            ContainerKind::Hash => "hash",
            ContainerKind::HashTree => "hash_tree",
            ContainerKind::Array => "array",
            ContainerKind::Append => "append",
            ContainerKind::Unique => "unique",
        }
    }
}

impl fmt::Display for ContainerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ContainerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        std::iter::once(ContainerKind::Auto)
            .chain(ContainerKind::ALL)
            .find(|k| k.name() == s.replace('-', "_"))
            .ok_or_else(|| {
                format!("unknown container '{s}' (auto, hash, hash_tree, array, append, unique)")
            })
    }
}

/// What a job knows about its keys: guides `Auto` and enables the array and
/// unique containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KeyHint {
    /// Nothing known: the runtime samples.
    #[default]
    Unknown,
    /// Integer keys in `0..n` (histogram's 768, k-means' clusters): the
    /// array container can hold them.
    Dense(usize),
    /// Every key is emitted once over the whole input (sort): nothing to
    /// group.
    Unique,
}

/// A map worker's container (see the module docs for the lifecycle).
pub(crate) trait Container<J: Job>: Emit<J::Key, J::Value> + Send {
    /// One partition of one worker's container.
    type Part: Send;
    /// Distinct keys held (pairs held, for containers that do not group).
    fn distinct(&self) -> usize;
    /// Splits the container into its partitions, in partition order.
    fn into_parts(self) -> Vec<Self::Part>;
    /// Joins partition `p` of every worker and reduces it.
    fn reduce(job: &J, parts: Vec<Self::Part>) -> Vec<(J::Key, J::Out)>;
}

/// Counts the pairs a container receives.
pub(crate) struct Counting<C> {
    pub(crate) inner: C,
    pub(crate) pairs: u64,
}

impl<C> Counting<C> {
    pub(crate) fn new(inner: C) -> Self {
        Counting { inner, pairs: 0 }
    }
}

impl<K: Key, V, C: Emit<K, V>> Emit<K, V> for Counting<C> {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, value: V) {
        self.pairs += 1;
        self.inner.emit(key, value);
    }

    #[inline(always)]
    fn prefetch(&mut self, key: K::Ref<'_>) {
        self.inner.prefetch(key);
    }
}

/// The distinct keys a sample emits, counted by their 64-bit hashes: no key
/// copies and no combiner states (the sampler's container for jobs whose
/// combiner keeps values, where a state per key is costly).
pub(crate) struct KeyHashes {
    seen: Table<u64, ()>,
}

impl KeyHashes {
    pub(crate) fn new() -> Self {
        KeyHashes {
            seen: Table::with_capacity(1024),
        }
    }

    /// Distinct hashes seen.
    pub(crate) fn len(&self) -> usize {
        self.seen.len()
    }
}

impl<K: Key, V> Emit<K, V> for KeyHashes {
    #[inline(always)]
    fn emit(&mut self, key: K::Ref<'_>, _value: V) {
        let h = K::probe_hash(&K::probe(key));
        self.seen
            .upsert(&h, u64::probe_hash(&h), (), |()| (), |_, ()| ());
    }
}

/// The partition a key hash belongs to, in `0..partitions`.
///
/// Uses hash bits 40..56, independent of the low bits the tables index
/// slots with, so that partitioning does not crowd a table's keys together.
#[inline(always)]
pub(crate) fn partition_of(hash: u64, partitions: usize) -> usize {
    ((((hash >> 40) & 0xFFFF) * partitions as u64) >> 16) as usize
}

/// Cuts `v` into `n` pieces of nearly equal length, in order.
pub(crate) fn chunks<T>(mut v: Vec<T>, n: usize) -> Vec<Vec<T>> {
    let n = n.max(1);
    let mut out = Vec::with_capacity(n);
    for i in (0..n).rev() {
        let take = v.len() / (i + 1);
        out.push(v.split_off(v.len() - take));
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_in_range_and_used() {
        for p in [1, 2, 3, 7, 64] {
            let mut seen = vec![false; p];
            for i in 0..10_000u64 {
                let h = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                let q = partition_of(h, p);
                assert!(q < p);
                seen[q] = true;
            }
            assert!(seen.iter().all(|&s| s), "{p}");
        }
    }

    #[test]
    fn key_hashes_count_distinct_keys() {
        let mut seen = KeyHashes::new();
        for i in 0..5000u32 {
            let word = format!("w{}", i % 1234);
            Emit::<crate::Bytes, u32>::emit(&mut seen, word.as_bytes(), i);
        }
        assert_eq!(seen.len(), 1234);
    }

    #[test]
    fn chunks_cover_in_order() {
        for len in [0, 1, 5, 17] {
            for n in [1, 2, 3, 8] {
                let c = chunks((0..len).collect::<Vec<_>>(), n);
                assert_eq!(c.len(), n);
                assert_eq!(c.concat(), (0..len).collect::<Vec<_>>());
                let (min, max) = (c.iter().map(Vec::len).min(), c.iter().map(Vec::len).max());
                assert!(max.unwrap() - min.unwrap() <= 1);
            }
        }
    }

    #[test]
    fn kinds_parse_by_name() {
        for k in ContainerKind::ALL {
            assert_eq!(k.name().parse::<ContainerKind>(), Ok(k));
        }
        assert_eq!(
            "hash-tree".parse::<ContainerKind>(),
            Ok(ContainerKind::HashTree)
        );
        assert!("heap"
            .parse::<ContainerKind>()
            .unwrap_err()
            .contains("unknown container"));
    }
}
