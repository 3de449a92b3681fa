//! Partitioned aggregation: the same output as per-worker tables and as a
//! plain sequential count, for jobs with a summing, a max and a keep-all
//! combiner, any thread count from 1 to 9, any split size, partition
//! count, table and buffer size, skewed (one key), repeated and
//! all-distinct keys; under a memory limit that spills, from a streamed
//! input, and asked of a pipelined run. `Auto` keeps per-worker tables for
//! a small vocabulary and partitions a large one.

use std::collections::BTreeMap;

use ember::spill::Codec;
use ember::stats::AggregationReason;
use ember::tune::{Aggregation, Mode, PartitionedOptions};
use ember::{
    Bytes, ContainerKind, Emit, Input, Job, KeepAll, MapResult, Max, OutputOrder, Records,
    RunOptions, Runtime, Split, Stats, Sum,
};
use proptest::prelude::*;

/// Counts space-separated words; emits them in batches when `batched`.
struct Words {
    batched: bool,
}

impl Job for Words {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Separator(|b| b == b' ')
    }

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let words = split.data.split(|&b| b == b' ').filter(|w| !w.is_empty());
        if !self.batched {
            words.for_each(|w| emit.emit(w, 1));
            return Ok(());
        }
        let all: Vec<&[u8]> = words.collect();
        all.chunks(19).for_each(|batch| emit.emit_batch(batch, 1));
        Ok(())
    }

    fn reduce(&self, _key: &Bytes, n: u64) -> u64 {
        n
    }

    fn codec(&self) -> Option<Codec<Bytes, u64>> {
        Some(Codec::new())
    }

    fn pipelinable(&self) -> bool {
        true
    }

    fn output_order(&self) -> OutputOrder {
        OutputOrder::Key
    }
}

/// 8-byte records of a `u32` key and a `u32` value: the largest value of
/// each key.
struct Largest;

impl Job for Largest {
    type Key = u32;
    type Value = u32;
    type Combiner = Max;
    type Out = u32;

    fn records(&self) -> Records {
        Records::Fixed(8)
    }

    fn map<E: Emit<u32, u32>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for (k, v) in split.data.chunks_exact(8).map(record) {
            emit.emit(k, v);
        }
        Ok(())
    }

    fn reduce(&self, _key: &u32, v: u32) -> u32 {
        v
    }

    fn codec(&self) -> Option<Codec<u32, u32>> {
        Some(Codec::new())
    }
}

/// The records of [`Largest`], each key's values kept and sorted.
struct Lists;

impl Job for Lists {
    type Key = u32;
    type Value = u32;
    type Combiner = KeepAll;
    type Out = Vec<u32>;

    fn records(&self) -> Records {
        Records::Fixed(8)
    }

    fn map<E: Emit<u32, u32>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for (k, v) in split.data.chunks_exact(8).map(record) {
            emit.emit(k, v);
        }
        Ok(())
    }

    fn reduce(&self, _key: &u32, values: &mut [u32]) -> Vec<u32> {
        values.sort_unstable();
        values.to_vec()
    }

    fn codec(&self) -> Option<Codec<u32, Vec<u32>>> {
        Some(Codec::new())
    }
}

/// A record's key and value.
fn record(r: &[u8]) -> (u32, u32) {
    let word = |i: usize| u32::from_le_bytes(r[i..i + 4].try_into().unwrap());
    (word(0), word(4))
}

/// The text of `keys`, one word per key.
fn text(keys: &[u32]) -> Vec<u8> {
    let words: Vec<String> = keys.iter().map(|k| format!("w{k}")).collect();
    words.join(" ").into_bytes()
}

/// The records of `keys`, record `i` valued `i`.
fn records(keys: &[u32]) -> Vec<u8> {
    let pairs = keys.iter().zip(0u32..);
    pairs
        .flat_map(|(k, i)| [k.to_le_bytes(), i.to_le_bytes()].concat())
        .collect()
}

/// What a plain sequential run of each job gives.
fn counted(keys: &[u32]) -> Vec<(Bytes, u64)> {
    let mut want = BTreeMap::<Bytes, u64>::new();
    for k in keys {
        *want
            .entry(Bytes::from(format!("w{k}").as_str()))
            .or_default() += 1;
    }
    want.into_iter().collect()
}

fn largest(keys: &[u32]) -> Vec<(u32, u32)> {
    let mut want = BTreeMap::new();
    for (k, i) in keys.iter().zip(0u32..) {
        want.insert(*k, i);
    }
    want.into_iter().collect()
}

fn lists(keys: &[u32]) -> Vec<(u32, Vec<u32>)> {
    let mut want = BTreeMap::<u32, Vec<u32>>::new();
    for (k, i) in keys.iter().zip(0u32..) {
        want.entry(*k).or_default().push(i);
    }
    want.into_iter().collect()
}

/// Options for the hash container, aggregating as `aggregation` says.
fn hash(aggregation: Aggregation, split: usize, sizes: &PartitionedOptions) -> RunOptions {
    RunOptions::default()
        .container(ContainerKind::Hash)
        .aggregation(aggregation)
        .partitioned(sizes.clone())
        .split_size(split)
}

/// Runs `job` per worker and partitioned with `opts`, asserts that both
/// give `want` and that the stats say which ran; returns the partitioned
/// run's stats.
fn agree<J: Job>(
    rt: &Runtime,
    job: &J,
    input: &Input<'_>,
    opts: &RunOptions,
    want: &[(J::Key, J::Out)],
) -> Stats
where
    J::Key: std::fmt::Debug,
    J::Out: PartialEq + std::fmt::Debug,
{
    let per_worker = opts.clone().aggregation(Aggregation::PerWorker);
    let plain = rt.run_with(job, input, &per_worker).unwrap();
    assert_eq!(plain.stats.plan.aggregation, Aggregation::PerWorker);
    assert!(plain.stats.partitioned.is_none());
    assert_eq!(plain.pairs, want, "per worker");
    let out = rt.run_with(job, input, opts).unwrap();
    assert_eq!(out.stats.plan.aggregation, Aggregation::Partitioned);
    let p = out.stats.partitioned.as_ref().expect("partitioned stats");
    assert_eq!(p.partitions, out.stats.plan.partitions);
    assert_eq!(out.pairs, want, "partitioned, {p:?}");
    assert_eq!(out.stats.pairs_emitted, plain.stats.pairs_emitted);
    out.stats
}

/// Keys of a test input: one key, a few repeated, or nearly all distinct.
fn keys() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        proptest::collection::vec(Just(7u32), 0..3000),
        proptest::collection::vec(0u32..60, 0..3000),
        proptest::collection::vec(any::<u32>(), 0..3000),
    ]
}

/// Sizes of the partitioned layout, from tiny (an eviction every key, a
/// fold every entry) to larger than a test's vocabulary.
fn sizes() -> impl Strategy<Value = PartitionedOptions> {
    (1usize..40, 1usize..3000, 1usize..100).prop_map(|(parts, table, buffer)| {
        PartitionedOptions::default()
            .partitions(parts)
            .table_keys(table)
            .buffer_entries(buffer)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Word count, a max and kept lists: partitioned equals per worker
    /// equals the plain count, on 1 to 9 threads.
    #[test]
    fn partitioned_equals_per_worker_and_the_plain_count(
        keys in keys(),
        threads in 1usize..=9,
        split in 8usize..4096,
        sizes in sizes(),
        batched in any::<bool>(),
    ) {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let opts = hash(Aggregation::Partitioned, split, &sizes);
        let words = text(&keys);
        agree(&rt, &Words { batched }, &Input::bytes(&words), &opts, &counted(&keys));
        let data = records(&keys);
        agree(&rt, &Largest, &Input::bytes(&data), &opts, &largest(&keys));
        agree(&rt, &Lists, &Input::bytes(&data), &opts, &lists(&keys));
    }
}

/// `n` keys from a vocabulary of `vocabulary`, skewed: key `i % 10 == 0`
/// is always key 0.
fn skewed(n: u32, vocabulary: u32) -> Vec<u32> {
    (0..n)
        .map(|i| match i % 10 {
            0 => 0,
            _ => i.wrapping_mul(2_654_435_761) % vocabulary,
        })
        .collect()
}

#[test]
fn small_tables_evict_and_fold_and_still_count_exactly() {
    let keys = skewed(60_000, 9_000);
    let words = text(&keys);
    let sizes = PartitionedOptions::default()
        .partitions(16)
        .table_keys(256)
        .buffer_entries(32);
    for threads in [1, 2, 3] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let opts = hash(Aggregation::Partitioned, 16 << 10, &sizes);
        let input = Input::bytes(&words);
        let stats = agree(
            &rt,
            &Words { batched: true },
            &input,
            &opts,
            &counted(&keys),
        );
        let p = stats.partitioned.as_ref().unwrap();
        assert!(p.flushes > 0 && p.evicted > 9_000 && p.folds > 0, "{p:?}");
        assert_eq!((p.table_keys, p.buffer_entries), (256, 32));
        assert!(stats.to_string().contains("aggregate partitioned"));
    }
}

#[test]
fn a_spilled_partitioned_run_counts_as_one_in_memory() {
    let keys = skewed(150_000, 40_000);
    let words = text(&keys);
    let want = counted(&keys);
    let sizes = PartitionedOptions::default().table_keys(512);
    for threads in [1, 2, 4] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let opts = hash(Aggregation::Partitioned, 32 << 10, &sizes)
            .memory_limit(256 << 10)
            .spill_dir(dir.path().to_path_buf());
        let input = Input::bytes(&words);
        let stats = agree(&rt, &Words { batched: false }, &input, &opts, &want);
        assert!(
            stats.memory.spills > 0,
            "{threads} threads: {:?}",
            stats.memory
        );
        // Handed over key by key: every run on disk, merged by key range.
        let mut handed = Vec::new();
        let stats = rt
            .run_each(&Words { batched: false }, &input, &opts, |k, n| {
                handed.push((k, n));
                Ok(())
            })
            .unwrap();
        assert!(stats.memory.spills > 0);
        assert_eq!(handed, want, "{threads} threads, handed over");
        let data = records(&keys);
        let lists_spilled = rt.run_with(&Lists, &Input::bytes(&data), &opts).unwrap();
        assert_eq!(lists_spilled.pairs, lists(&keys));
    }
}

#[test]
fn a_streamed_input_is_partitioned_chunk_by_chunk() {
    let keys = skewed(40_000, 5_000);
    let words = text(&keys);
    let sizes = PartitionedOptions::default().table_keys(300);
    let rt = Runtime::builder().threads(3).build().unwrap();
    let opts = hash(Aggregation::Partitioned, 8 << 10, &sizes).chunk_size(50 << 10);
    let input = Input::reader("words", std::io::Cursor::new(words));
    let out = rt
        .run_with(&Words { batched: true }, &input, &opts)
        .unwrap();
    assert_eq!(out.stats.plan.aggregation, Aggregation::Partitioned);
    assert!(out.stats.chunks.len() > 1);
    assert_eq!(out.pairs, counted(&keys));
}

#[test]
fn a_pipelined_run_keeps_its_own_partitions() {
    let keys = skewed(20_000, 3_000);
    let words = text(&keys);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = hash(
        Aggregation::Partitioned,
        4 << 10,
        &PartitionedOptions::default(),
    )
    .mode(Mode::Pipelined);
    let out = rt
        .run_with(&Words { batched: false }, &Input::bytes(&words), &opts)
        .unwrap();
    assert_eq!(
        out.stats.plan.aggregation_reason,
        AggregationReason::Pipelined
    );
    assert!(out.stats.partitioned.is_none() && out.stats.pipeline.is_some());
    assert_eq!(out.pairs, counted(&keys));
}

#[test]
fn auto_keeps_per_worker_tables_for_a_small_vocabulary_only() {
    let rt = Runtime::builder().threads(4).build().unwrap();
    let opts = RunOptions::default()
        .container(ContainerKind::Hash)
        .split_size(64 << 10);
    let run = |keys: &[u32]| {
        let words = text(keys);
        let out = rt
            .run_with(&Words { batched: true }, &Input::bytes(&words), &opts)
            .unwrap();
        assert_eq!(out.pairs, counted(keys));
        out.stats
    };
    let small = run(&skewed(400_000, 1_000));
    assert_eq!(small.plan.container, ContainerKind::Hash);
    assert_eq!(small.plan.aggregation, Aggregation::PerWorker);
    assert!(matches!(
        small.plan.aggregation_reason,
        AggregationReason::FewKeys { .. }
    ));
    // 200,000 words three times each: each worker's table would hold
    // many of them, over 4 MiB.
    let large: Vec<u32> = (0..600_000u32).map(|i| (i * 7) % 200_000).collect();
    let large = run(&large);
    assert_eq!(large.plan.aggregation, Aggregation::Partitioned, "{large}");
    assert!(large.partitioned.is_some());
    assert!(large.plan.partitions >= 16 && large.plan.partitions.is_power_of_two());
    // Two workers keep their tables whatever the vocabulary.
    let two = Runtime::builder().threads(2).build().unwrap();
    let keys: Vec<u32> = (0..600_000u32).map(|i| (i * 7) % 200_000).collect();
    let words = text(&keys);
    let out = two
        .run_with(&Words { batched: true }, &Input::bytes(&words), &opts)
        .unwrap();
    assert!(matches!(
        out.stats.plan.aggregation_reason,
        AggregationReason::FewWorkers {
            workers: 2,
            from: 4
        }
    ));
}
