//! The hash container: per worker, one open-addressing [`Table`] per
//! partition; keys copied on first insert, combiner applied at insert.

use super::table::Table;
use super::{partition_of, Container};
use crate::combine::Combiner;
use crate::job::{Emit, Job, StateOf};
use crate::key::Key;

/// One worker's hash container.
pub(crate) struct HashContainer<J: Job> {
    parts: Vec<Table<J::Key, StateOf<J>>>,
}

impl<J: Job> HashContainer<J> {
    /// A container with `partitions` tables of room for `capacity` keys each.
    pub(crate) fn new(partitions: usize, capacity: usize) -> Self {
        HashContainer {
            parts: (0..partitions)
                .map(|_| Table::with_capacity(capacity))
                .collect(),
        }
    }

    /// Makes room for `keys` distinct keys in all, spread over the
    /// partitions, so that the map phase does not grow the tables.
    pub(crate) fn reserve(&mut self, keys: usize) {
        let per_part = keys / self.parts.len();
        for t in &mut self.parts {
            t.reserve(per_part);
        }
    }
}

impl<J: Job> Emit<J::Key, J::Value> for HashContainer<J> {
    #[inline(always)]
    fn emit(&mut self, key: <J::Key as Key>::Ref<'_>, value: J::Value) {
        let probe = J::Key::probe(key);
        let hash = J::Key::probe_hash(&probe);
        let n = self.parts.len();
        self.parts[partition_of(hash, n)].upsert(
            &probe,
            hash,
            value,
            J::Combiner::init,
            J::Combiner::add,
        );
    }

    #[inline(always)]
    fn prefetch(&mut self, key: <J::Key as Key>::Ref<'_>) {
        let hash = J::Key::probe_hash(&J::Key::probe(key));
        self.parts[partition_of(hash, self.parts.len())].prefetch(hash);
    }
}

impl<J: Job> Container<J> for HashContainer<J> {
    type Part = Table<J::Key, StateOf<J>>;

    fn distinct(&self) -> usize {
        self.parts.iter().map(Table::len).sum()
    }

    fn into_parts(self) -> Vec<Self::Part> {
        self.parts
    }

    /// Joins the tables into the largest one, so the fewest entries move.
    fn reduce(job: &J, mut tables: Vec<Self::Part>) -> Vec<(J::Key, J::Out)> {
        let Some(largest) = (0..tables.len()).max_by_key(|&i| tables[i].len()) else {
            return Vec::new();
        };
        let mut base = tables.swap_remove(largest);
        for table in tables {
            for (k, s) in table {
                base.merge_owned(k, s, J::Combiner::merge);
            }
        }
        let mut out = Vec::with_capacity(base.len());
        out.extend(base.into_iter().map(|(k, s)| {
            let o = job.reduce(&k, s);
            (k, o)
        }));
        out
    }
}
