//! The unique container: for jobs that declare every key emitted once
//! (sort), pairs are appended as they come and never looked up or grouped;
//! each worker's buffer is cut into equal ranges that reduce tasks take with
//! no synchronization (SupMR's and Phoenix++'s unlocked array container).
//!
//! A job that declares unique keys but repeats one gets the key once per
//! emit in its output.

use super::{chunks, Container};
use crate::combine::Combiner;
use crate::job::{Emit, Job, StateOf};
use crate::key::Key;

/// One worker's unique-key container.
pub(crate) struct UniqueContainer<J: Job> {
    pairs: Vec<(J::Key, StateOf<J>)>,
    partitions: usize,
}

impl<J: Job> UniqueContainer<J> {
    /// An empty buffer, handed to reduce in `partitions` ranges.
    pub(crate) fn new(partitions: usize) -> Self {
        UniqueContainer {
            pairs: Vec::new(),
            partitions,
        }
    }
}

impl<J: Job> Emit<J::Key, J::Value> for UniqueContainer<J> {
    #[inline(always)]
    fn emit(&mut self, key: <J::Key as Key>::Ref<'_>, value: J::Value) {
        let key = J::Key::from_probe(&J::Key::probe(key));
        self.pairs.push((key, J::Combiner::init(value)));
    }
}

impl<J: Job> Container<J> for UniqueContainer<J> {
    type Part = Vec<(J::Key, StateOf<J>)>;

    fn distinct(&self) -> usize {
        self.pairs.len()
    }

    fn into_parts(self) -> Vec<Self::Part> {
        chunks(self.pairs, self.partitions)
    }

    fn reduce(job: &J, parts: Vec<Self::Part>) -> Vec<(J::Key, J::Out)> {
        parts
            .into_iter()
            .flatten()
            .map(|(k, s)| {
                let o = job.reduce(&k, s);
                (k, o)
            })
            .collect()
    }
}
