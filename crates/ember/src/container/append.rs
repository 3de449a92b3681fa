//! The append container: pairs appended to per-partition buffers as they
//! are emitted, with no lookup; reduce sorts each partition by key and folds
//! each run of equal keys (Metis' append container, SMR's array buffers).
//! Wins when keys rarely repeat, so there is little to combine.

use super::{partition_of, Container};
use crate::combine::Combiner;
use crate::job::{Emit, Job};
use crate::key::Key;

/// One worker's append container.
pub(crate) struct AppendContainer<J: Job> {
    parts: Vec<Vec<(J::Key, J::Value)>>,
}

impl<J: Job> AppendContainer<J> {
    /// Empty buffers for `partitions` partitions.
    pub(crate) fn new(partitions: usize) -> Self {
        AppendContainer {
            parts: (0..partitions).map(|_| Vec::new()).collect(),
        }
    }
}

impl<J: Job> Emit<J::Key, J::Value> for AppendContainer<J> {
    #[inline(always)]
    fn emit(&mut self, key: <J::Key as Key>::Ref<'_>, value: J::Value) {
        let probe = J::Key::probe(key);
        let p = partition_of(J::Key::probe_hash(&probe), self.parts.len());
        self.parts[p].push((J::Key::from_probe(&probe), value));
    }
}

impl<J: Job> Container<J> for AppendContainer<J> {
    type Part = Vec<(J::Key, J::Value)>;

    fn distinct(&self) -> usize {
        self.parts.iter().map(Vec::len).sum()
    }

    fn into_parts(self) -> Vec<Self::Part> {
        self.parts
    }

    fn reduce(job: &J, parts: Vec<Self::Part>) -> Vec<(J::Key, J::Out)> {
        let mut all = Vec::with_capacity(parts.iter().map(Vec::len).sum());
        for p in parts {
            all.extend(p);
        }
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut out = Vec::new();
        let mut pairs = all.into_iter().peekable();
        while let Some((key, v)) = pairs.next() {
            let mut state = J::Combiner::init(v);
            while let Some((_, v)) = pairs.next_if(|(k, _)| *k == key) {
                J::Combiner::add(&mut state, v);
            }
            let o = job.reduce(&key, state);
            out.push((key, o));
        }
        out
    }
}
