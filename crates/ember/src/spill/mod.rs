//! Spilling intermediate data to disk, and reading it back in key order.
//!
//! When a map worker's container passes its share of the run's memory
//! budget (`memory`), the worker takes every entry out of it as a (key,
//! combiner state) pair and writes them to its own spill file as one
//! *run* per spill, then maps on into the emptied container. A run is
//! sorted by partition, then key ([`Layout::ByPartition`]: one *section*
//! per partition, indexed by where each starts), or by key alone
//! ([`Layout::ByKey`], for a run whose output is handed over in key order:
//! one section). Reduce task `p` then merges partition `p`'s section of
//! every run, and what the containers still hold, in one pass (a p-way
//! merge on the sections' heads, SupMR's merge on disk): equal keys'
//! states are joined with the combiner and each key is reduced once, in key
//! order, so the output is the one an in-memory run gives.
//!
//! A job opts in by returning a [`Codec`] from
//! [`Job::codec`](crate::Job::codec): how its keys and states are written.
//! Keys and states of the types ember ships implement [`Encode`].
//!
//! Files: one per worker that spills, in a fresh directory under the spill
//! directory (by default the system's temporary directory), removed when
//! the run ends, with an error or a panic too. A record is its length (a
//! varint) and the key's and the state's encodings; a compressed run is
//! LZ4 blocks of records.
//!
//! The parts: `codec` (how keys and states are written), `dir` (the spill
//! directories), `write` (a worker's spill file, run by run), `read` (a
//! run read back, its pages released as it goes), `merge` (the p-way
//! merge of runs and in-memory entries) and `range` (the key ranges of a
//! merge of every run, merged apart).

use std::path::Path;

use crate::error::Error;

mod codec;
mod dir;
mod encode;
mod merge;
mod range;
mod read;
mod write;

pub use codec::{Codec, Compression, BLOCK};
pub use dir::remove_live_dirs;
pub(crate) use dir::{check_dir, default_dir, SpillDir};
pub use encode::{decode_len, encode_len, Encode};
pub(crate) use merge::{merge, Source};
pub(crate) use range::{Plan, Ranges};
pub(crate) use read::{punch_hole, read_buffer, Spilled};
pub(crate) use write::Writer;

/// How a spill orders its entries in its run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// By partition, then key: a section per partition, for a reduce
    /// that merges partition by partition.
    ByPartition,
    /// By key alone, every partition in one section: for a merge cut into
    /// key ranges across the partitions (the output handed over in key
    /// order), which then reads one section per run.
    ByKey,
}

/// Where one section of a run (one partition's entries, sorted by key; or
/// every partition's, [`Layout::ByKey`]) lies in a worker's spill file.
#[derive(Debug, Clone, Copy)]
struct RunAt {
    partition: usize,
    start: u64,
    len: u64,
}

/// A place in a section where a reader can start: the file offset of a
/// block (of a record, in an uncompressed run) and the key of its first
/// record. A section has a mark about every [`BLOCK`] bytes of records, its first
/// record's among them: what the key ranges of a parallel merge are cut
/// by.
#[derive(Debug)]
struct Mark<K> {
    at: u64,
    key: K,
}

/// The error for a spill file or directory that could not be written.
pub(crate) fn failed(path: &Path, source: std::io::Error) -> Error {
    Error::Spill {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The tests' codec, compressed with LZ4 or not, and with a sort
    /// prefix that ties on purpose (keys differing in the low bits only)
    /// or none.
    fn test_codec(lz4: bool, prefix: bool) -> Codec<u32, u64> {
        let mut codec = Codec::<u32, u64>::new();
        if lz4 {
            codec = codec.compression(Compression::Lz4);
        }
        if prefix {
            codec = codec.prefix(|k| u64::from(k / 8));
        }
        codec
    }

    proptest! {
        #[test]
        fn spilled_runs_merge_to_the_sums(
            spills in proptest::collection::vec(
                proptest::collection::vec((0u32..50, 1u64..5), 0..40), 1..6),
            memory in proptest::collection::vec((0u32..50, 1u64..5), 0..40),
            buffer in 1usize..64,
            lz4 in any::<bool>(),
            prefix in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let spill_dir = SpillDir::under(dir.path().to_path_buf());
            let codec = test_codec(lz4, prefix);
            let mut w = Writer::create(&spill_dir, 0, Layout::ByPartition).unwrap();
            let mut want = std::collections::BTreeMap::new();
            for pairs in spills.iter().chain([&memory]) {
                for &(k, v) in pairs {
                    *want.entry(k).or_insert(0) += v;
                }
            }
            for pairs in &spills {
                // Two partitions: even and odd keys, each summed per key.
                let mut parts = vec![Vec::new(), Vec::new()];
                let mut sums = std::collections::BTreeMap::new();
                for &(k, v) in pairs {
                    *sums.entry(k).or_insert(0) += v;
                }
                for (k, v) in sums {
                    parts[(k % 2) as usize].push((k, v));
                }
                w.spill(parts, codec).unwrap();
            }
            let spilled = w.finish().unwrap();
            // One run per spill that held anything, each partition's
            // section found in it once.
            let full = spills.iter().filter(|s| !s.is_empty()).count();
            prop_assert_eq!(spilled.runs.len(), full);
            for p in 0..2 {
                let holding = spills.iter().filter(|s| s.iter().any(|(k, _)| k % 2 == p)).count();
                prop_assert_eq!(spilled.count(p as usize), holding);
            }
            let mut got = std::collections::BTreeMap::new();
            for p in 0..2 {
                let mut mem: Vec<(u32, u64)> = memory.iter().copied().filter(|(k, _)| k % 2 == p as u32).collect();
                mem.sort();
                let mut sources: Vec<Source<'_, u32, u64>> =
                    spilled.runs_of(p, codec, buffer).map(Source::Disk).collect();
                sources.push(Source::Memory(mem.into_iter()));
                let mut last = None;
                merge(sources, |a, b| *a += b, |k, v| {
                    assert!(last < Some(k), "keys in order, once each");
                    last = Some(k);
                    got.insert(k, v);
                    Ok(())
                }).unwrap();
            }
            prop_assert_eq!(got, want);
        }
    }

    /// Runs of `lens[i]` entries each, keys drawn below `keys` (repeated
    /// within a run and across runs), each run sorted: (key, 1) pairs.
    fn runs_of_keys(lens: &[usize], keys: u32, seed: u64) -> Vec<Vec<(u32, u64)>> {
        let mut x = seed | 1;
        let mut next = move || {
            // xorshift64
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % u64::from(keys)) as u32
        };
        lens.iter()
            .map(|&n| (0..n).map(|_| (next(), 1)).collect())
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Every run cut into key ranges (at marks inside runs too), the
        /// ranges merged apart and joined in range order, pages released
        /// behind each range as the streamed merge does: each key once, in
        /// order, with the sums of the whole merge.
        #[test]
        fn ranges_merged_apart_give_the_whole_merge(
            lens in proptest::collection::vec(
                prop_oneof![Just(0usize), 1usize..50, 5_000usize..25_000], 1..6),
            keys in prop_oneof![Just(1u32), 2u32..100, 1_000u32..1_000_000],
            seed in any::<u64>(),
            blocks in prop_oneof![Just(0usize), 1usize..4, Just(1 << 20)],
            buffer in prop_oneof![Just(4usize << 10), Just(256usize << 10)],
            lz4 in any::<bool>(),
            prefix in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let spill_dir = SpillDir::under(dir.path().to_path_buf());
            let codec = test_codec(lz4, prefix);
            let runs = runs_of_keys(&lens, keys, seed);
            let mut want = std::collections::BTreeMap::new();
            for &(k, v) in runs.iter().flatten() {
                *want.entry(k).or_insert(0u64) += v;
            }
            // Two files: the runs dealt out between them, each run in
            // three partitions (by key) laid out by key.
            let create = |w| Writer::create(&spill_dir, w, Layout::ByKey).unwrap();
            let mut writers = [create(0), create(1)];
            let full = runs.iter().filter(|r| !r.is_empty()).count();
            for (i, run) in runs.into_iter().enumerate() {
                let mut parts = vec![Vec::new(), Vec::new(), Vec::new()];
                for (k, v) in run {
                    parts[(k % 3) as usize].push((k, v));
                }
                writers[i % 2].spill(parts, codec).unwrap();
            }
            let files: Vec<Spilled<u32>> = writers.into_iter().map(|w| w.finish().unwrap()).collect();
            // A section per run.
            let sections: usize = files.iter().map(|f| f.sections.len()).sum();
            prop_assert_eq!(sections, full);
            let ranges = Ranges::new(&files, blocks * BLOCK);
            let mut released = ranges.unreleased();
            let mut got = Vec::new();
            for r in 0..ranges.len() {
                let sources = ranges.sources(r, codec, buffer);
                merge(sources, |a, b| *a += b, |k, v| {
                    got.push((k, v));
                    Ok(())
                }).unwrap();
                if r + 1 < ranges.len() {
                    ranges.release(r + 1, &mut released);
                }
            }
            let want: Vec<(u32, u64)> = want.into_iter().collect();
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn a_damaged_run_is_an_error_naming_the_file() {
        for compression in [Compression::None, Compression::Lz4] {
            let dir = tempfile::tempdir().unwrap();
            let spill_dir = SpillDir::under(dir.path().to_path_buf());
            let codec = Codec::<Vec<u8>, u64>::new().compression(compression);
            let mut w = Writer::create(&spill_dir, 3, Layout::ByPartition).unwrap();
            let words = (0..50u64)
                .map(|i| (format!("word{i}").into_bytes(), i))
                .collect();
            w.spill(vec![words], codec).unwrap();
            let spilled = w.finish().unwrap();
            let path = spill_dir.path().unwrap().join("worker-3.runs");
            let mut bytes = std::fs::read(&path).unwrap();
            // A length past the run (or a block's header claiming more
            // than the run holds).
            bytes[..2].copy_from_slice(&[200u8, 1]);
            std::fs::write(&path, &bytes).unwrap();
            let sources = spilled.runs_of(0, codec, 16).map(Source::Disk).collect();
            let err = merge(sources, |a, b| *a += b, |_, _| Ok(())).unwrap_err();
            assert!(
                err.to_string().contains("worker-3.runs"),
                "{compression:?}: {err}"
            );
        }
    }

    #[test]
    fn the_directory_is_made_on_first_use_and_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::under(parent.path().to_path_buf());
        assert_eq!(dir.path(), None);
        Writer::<u32>::create(&dir, 0, Layout::ByPartition).unwrap();
        let made = dir.path().unwrap();
        assert!(made.is_dir());
        drop(dir);
        assert!(!made.exists());
    }
}
