//! Intermediate containers: where map output lives between map and reduce.
//!
//! Lifecycle (as in Phoenix++ and Metis):
//!
//! 1. Each map worker owns one container for the whole map phase; `emit`
//!    writes only to it, so the map path takes no lock.
//! 2. A container is partitioned by key hash into `P` partitions
//!    ([`partition_of`]); the combiner is applied at insert, so a key costs
//!    one entry per worker, not one per occurrence.
//! 3. After map, partition `p` of every worker goes to reduce task `p`, which
//!    joins them (merging states with the combiner) and runs `reduce`.
//!
//! Only the hash container exists so far; the array, append, hash+B+tree and
//! unique-key containers of Metis/SupMR plug in at the same two seams: an
//! [`Emit`](crate::Emit) implementation for the map side and a per-partition
//! hand-over for the reduce side.

pub(crate) mod hash;
mod table;

/// The partition a key hash belongs to, in `0..partitions`.
///
/// Uses hash bits 40..56, independent of the low bits the tables index
/// slots with, so that partitioning does not crowd a table's keys together.
#[inline(always)]
pub(crate) fn partition_of(hash: u64, partitions: usize) -> usize {
    ((((hash >> 40) & 0xFFFF) * partitions as u64) >> 16) as usize
}

#[cfg(test)]
mod tests {
    use super::partition_of;

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
}
