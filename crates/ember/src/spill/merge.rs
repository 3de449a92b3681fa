//! The one-pass p-way merge of sorted sources (runs on disk, entries in
//! memory): SupMR's merge, on disk.

use std::cmp::Ordering;
use std::collections::binary_heap::{BinaryHeap, PeekMut};

use super::read::RunReader;
use crate::error::Result;

/// Where a merge reads from: a sorted run in memory, or one on disk.
pub(crate) enum Source<'f, K, S> {
    /// Entries sorted by key.
    Memory(std::vec::IntoIter<(K, S)>),
    /// A spilled run.
    Disk(RunReader<'f, K, S>),
}

impl<K: Ord, S> Source<'_, K, S> {
    fn next(&mut self) -> Result<Option<(K, S)>> {
        match self {
            Source::Memory(it) => Ok(it.next()),
            Source::Disk(r) => r.next(),
        }
    }
}

/// A source's current key, ordered by key, then by source (so that a
/// merge is deterministic). Its state waits in the merge's slot for the
/// source: the heap moves keys only.
struct Head<K> {
    key: K,
    source: usize,
}

impl<K: Ord> Ord for Head<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: `BinaryHeap` pops the largest.
        (&other.key, other.source).cmp(&(&self.key, self.source))
    }
}

impl<K: Ord> PartialOrd for Head<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord> PartialEq for Head<K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K: Ord> Eq for Head<K> {}

/// The sources of a merge and their current entries: the keys in a heap,
/// each state in its source's slot.
struct Heads<'f, K, S> {
    sources: Vec<Source<'f, K, S>>,
    heap: BinaryHeap<Head<K>>,
    states: Vec<Option<S>>,
}

impl<'f, K: Ord, S> Heads<'f, K, S> {
    /// Every source's first entry.
    fn new(mut sources: Vec<Source<'f, K, S>>) -> Result<Self> {
        let mut heap = BinaryHeap::with_capacity(sources.len());
        let mut states = Vec::with_capacity(sources.len());
        for (source, s) in sources.iter_mut().enumerate() {
            states.push(s.next()?.map(|(key, state)| {
                heap.push(Head { key, source });
                state
            }));
        }
        Ok(Heads {
            sources,
            heap,
            states,
        })
    }

    /// The smallest entry, replaced by its source's next one: one sift
    /// down the heap, rather than a pop and a push.
    fn pop(&mut self) -> Result<Option<(K, S)>> {
        let Some(mut top) = self.heap.peek_mut() else {
            return Ok(None);
        };
        let source = top.source;
        let key = match self.sources[source].next()? {
            Some((key, state)) => {
                let state = self.states[source].replace(state);
                let key = std::mem::replace(&mut top.key, key);
                return Ok(Some((key, state.expect("a head's state"))));
            }
            None => PeekMut::pop(top).key,
        };
        let state = self.states[source].take().expect("a head's state");
        Ok(Some((key, state)))
    }

    /// Whether the smallest entry's key is `key`.
    fn next_is(&self, key: &K) -> bool {
        self.heap.peek().is_some_and(|h| h.key == *key)
    }
}

/// Merges sorted sources in one pass: calls `out` once per key, in key
/// order, with the states of every source for that key joined by `join`;
/// stops at the first error `out` returns.
pub(crate) fn merge<K: Ord, S>(
    sources: Vec<Source<'_, K, S>>,
    join: impl Fn(&mut S, S),
    mut out: impl FnMut(K, S) -> Result<()>,
) -> Result<()> {
    let mut heads = Heads::new(sources)?;
    while let Some((key, mut state)) = heads.pop()? {
        while heads.next_is(&key) {
            let (_, other) = heads.pop()?.expect("a next entry");
            join(&mut state, other);
        }
        out(key, state)?;
    }
    Ok(())
}
