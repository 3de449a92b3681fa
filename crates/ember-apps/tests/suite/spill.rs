//! Runs under a memory limit small enough to spill give the output of the
//! plain run and of the sequential oracle, for word count and the inverted
//! index, any thread count, split size and container; the spill directory
//! is gone after a success, an error and a panic; a job that cannot spill
//! fails only past a limit the caller set. The same for the pipelined mode,
//! whose reducers spill their partitions.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use ember::spill::Codec;
use ember::stats::RunMode;
use ember::tune::Mode;
use ember::{
    Bytes, ContainerKind, Emit, Error, Input, Job, MapResult, Phase, Records, RunOptions, Runtime,
    Split, Sum,
};
use ember_apps::inverted_index::{build, build_each, sequential, Docs};
use ember_apps::text::{text, TextSpec};
use ember_apps::wordcount::{self, WordCount};
use proptest::prelude::*;

const THREADS: [usize; 3] = [1, 2, 7];
const CONTAINERS: [ContainerKind; 5] = [
    ContainerKind::Auto,
    ContainerKind::Hash,
    ContainerKind::HashTree,
    ContainerKind::Append,
    ContainerKind::Intern,
];

fn corpus(size: u64, vocab: usize, seed: u64) -> Vec<u8> {
    text(&TextSpec {
        size,
        vocab,
        zipf: 1.0,
        seed,
    })
}

/// What is left in a spill directory after a run: nothing, if the run
/// cleaned up.
fn left_in(dir: &Path) -> Vec<String> {
    let entries = std::fs::read_dir(dir).unwrap();
    entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn as_pairs(out: &[(Bytes, u64)]) -> Vec<(Vec<u8>, u64)> {
    out.iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), *v))
        .collect()
}

#[test]
fn spilled_word_count_equals_the_plain_run() {
    let data = corpus(2 << 20, 20_000, 3);
    let want = wordcount::sequential(&[&data]);
    let dir = tempfile::tempdir().unwrap();
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for container in CONTAINERS {
            for limit in [64 << 10, 256 << 10] {
                let opts = RunOptions::default()
                    .container(container)
                    .memory_limit(limit)
                    .spill_dir(dir.path().to_path_buf());
                let out = rt
                    .run_with(&WordCount::new(), &Input::bytes(&data), &opts)
                    .unwrap();
                let what = format!("{threads} threads, {container}, limit {limit}");
                let m = &out.stats.memory;
                assert!(m.spills > 0 && m.spilled_bytes > 0, "{what}: no spill");
                // One run per spill, whatever the partitions.
                assert_eq!(m.spill_runs, m.spills, "{what}: {m:?}");
                assert_eq!(m.limit_bytes, limit, "{what}");
                assert!(as_pairs(&out.pairs) == want, "{what}: output differs");
                assert!(left_in(dir.path()).is_empty(), "{what}: spill files left");
            }
        }
    }
}

/// The spilled index, collected and handed over word by word, equals the
/// plain one; each spill writes one run whatever the partitions (sorted
/// by partition then key when collected, by key alone when handed over).
#[test]
fn spilled_inverted_index_equals_the_plain_run() {
    let data = corpus(1 << 20, 10_000, 5);
    let input = Input::bytes(&data);
    let want = sequential(&[&data], Docs::Lines).unwrap();
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for container in CONTAINERS {
            let opts = RunOptions::default()
                .container(container)
                .memory_limit(256 << 10);
            let got = build(&rt, &input, Docs::Lines, &opts).unwrap();
            let what = format!("{threads} threads, {container}");
            let m = &got.stats.memory;
            assert!(m.spills > 0 && m.spill_runs == m.spills, "{what}: {m:?}");
            assert!(got.index == want, "{what}: index differs");
            // Handed over word by word as the merge reaches them, from
            // runs sorted by key alone: still one run per spill.
            let mut handed = Vec::new();
            let streamed = build_each(&rt, &input, Docs::Lines, &opts, |word, ids| {
                handed.push((word, ids));
                Ok(())
            })
            .unwrap();
            let m = &streamed.stats.memory;
            assert!(m.spills > 0 && m.spill_runs == m.spills, "{what}: {m:?}");
            assert!(handed == want, "{what}: streamed index differs");
            assert_eq!(streamed.words, want.len() as u64, "{what}");
            let postings: usize = want.iter().map(|(_, ids)| ids.len()).sum();
            assert_eq!(streamed.postings, postings as u64, "{what}");
        }
    }
}

#[test]
fn a_streamed_input_spills_too() {
    let data = corpus(2 << 20, 20_000, 9);
    let want = wordcount::sequential(&[&data]);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default()
        .memory_limit(1 << 20)
        .chunk_size(256 << 10);
    let input = Input::reader("stream", std::io::Cursor::new(data));
    let out = rt.run_with(&WordCount::new(), &input, &opts).unwrap();
    assert!(out.stats.memory.spills > 0);
    assert!(as_pairs(&out.pairs) == want);
}

/// `run_each` hands over the plain run's output in key order (not the
/// job's order: word count by count here), spilled or not, and any
/// container; an error it returns stops the run, spill files removed.
#[test]
fn run_each_hands_over_the_plain_output_in_key_order() {
    let data = corpus(1 << 20, 20_000, 17);
    let want = wordcount::sequential(&[&data]);
    let dir = tempfile::tempdir().unwrap();
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for (container, limit) in [
            (ContainerKind::Auto, Some(64 << 10)),
            (ContainerKind::Append, Some(256 << 10)),
            (ContainerKind::Intern, Some(256 << 10)),
            (ContainerKind::Auto, None),
        ] {
            let opts = RunOptions::default()
                .container(container)
                .memory_limit(limit)
                .spill_dir(dir.path().to_path_buf());
            let mut got = Vec::new();
            let job = WordCount::by_count();
            let stats = rt
                .run_each(&job, &Input::bytes(&data), &opts, |word, n| {
                    got.push((word.as_bytes().to_vec(), n));
                    Ok(())
                })
                .unwrap();
            let what = format!("{threads} threads, {container}, limit {limit:?}");
            assert_eq!(stats.memory.spills > 0, limit.is_some(), "{what}");
            assert_eq!(stats.output_pairs, want.len() as u64, "{what}");
            assert!(got == want, "{what}: output differs");
            assert!(left_in(dir.path()).is_empty(), "{what}: spill files left");
        }
        let opts = RunOptions::default()
            .memory_limit(64 << 10)
            .spill_dir(dir.path().to_path_buf());
        let mut seen = 0;
        let err = rt
            .run_each(&WordCount::new(), &Input::bytes(&data), &opts, |_, _| {
                seen += 1;
                match seen {
                    10 => Err(Error::Output(std::io::Error::other("stop"))),
                    _ => Ok(()),
                }
            })
            .unwrap_err();
        assert!(matches!(err, Error::Output(_)), "{err}");
        assert_eq!(seen, 10, "{threads} threads: handed over after the error");
        assert!(left_in(dir.path()).is_empty(), "spill files left");
    }
    let rt = Runtime::builder().threads(2).build().unwrap();
    let top = RunOptions::default().top(Some(5));
    let err = rt
        .run_each(&WordCount::new(), &Input::bytes(&data), &top, |_, _| Ok(()))
        .unwrap_err();
    assert!(matches!(err, Error::Config(_)), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn any_budget_and_split_size_gives_the_same_counts(
        limit in 0u64..(2 << 20),
        split in prop_oneof![Just(None), (16usize..200_000).prop_map(Some)],
        threads in 1usize..4,
        seed in 0u64..1000,
    ) {
        let data = corpus(512 << 10, 5_000, seed);
        let want = wordcount::sequential(&[&data]);
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let opts = RunOptions::default().memory_limit(limit).split_size(split);
        let out = rt.run_with(&WordCount::new(), &Input::bytes(&data), &opts).unwrap();
        prop_assert!(as_pairs(&out.pairs) == want);
    }
}

/// How [`Count`] fails: in the second half of the input, or in reduce.
#[derive(Clone, Copy)]
enum Fail {
    Never,
    Malformed,
    Panic,
    PanicInReduce,
}

/// Word count, with or without a codec, that can fail in the second half
/// of its input, noting whether the run had spilled by then.
struct Count<'a> {
    fail: Fail,
    codec: bool,
    /// Whether the job says it can be pipelined.
    pipelinable: bool,
    half: u64,
    spill_dir: Option<&'a Path>,
    spilled_before: AtomicBool,
}

impl<'a> Count<'a> {
    fn new(fail: Fail, codec: bool, data: &[u8], spill_dir: Option<&'a Path>) -> Self {
        Count {
            fail,
            codec,
            pipelinable: false,
            half: data.len() as u64 / 2,
            spill_dir,
            spilled_before: AtomicBool::new(false),
        }
    }
}

impl Job for Count<'_> {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        WordCount::new().records()
    }

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        if split.offset < self.half || matches!(self.fail, Fail::Never | Fail::PanicInReduce) {
            return WordCount::new().map(split, emit);
        }
        if self.spill_dir.is_some_and(|d| !left_in(d).is_empty()) {
            self.spilled_before.store(true, Relaxed);
        }
        match self.fail {
            Fail::Panic => panic!("late failure"),
            _ => Err(split.malformed(split.data, "late failure")),
        }
    }

    fn reduce(&self, _k: &Bytes, n: u64) -> u64 {
        if matches!(self.fail, Fail::PanicInReduce) {
            panic!("reduce failure");
        }
        n
    }

    fn codec(&self) -> Option<Codec<Bytes, u64>> {
        self.codec.then(Codec::new)
    }

    fn pipelinable(&self) -> bool {
        self.pipelinable
    }
}

#[test]
fn an_error_or_a_panic_removes_the_spill_files() {
    let data = corpus(2 << 20, 20_000, 11);
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    for fail in [Fail::Malformed, Fail::Panic] {
        let job = Count::new(fail, true, &data, Some(dir.path()));
        let opts = RunOptions::default()
            .memory_limit(64 << 10)
            .split_size(16 << 10)
            .spill_dir(dir.path().to_path_buf());
        let err = rt.run_with(&job, &Input::bytes(&data), &opts).unwrap_err();
        match (fail, &err) {
            (Fail::Panic, Error::Panicked { phase, .. }) => assert_eq!(*phase, Phase::Map),
            (Fail::Malformed, Error::Malformed { .. }) => {}
            _ => panic!("unexpected error: {err}"),
        }
        assert!(job.spilled_before.load(Relaxed), "the run had not spilled");
        assert!(left_in(dir.path()).is_empty(), "spill files left");
    }
    // The runtime is still usable.
    let out = rt.run(&WordCount::new(), &Input::bytes(&data)).unwrap();
    assert!(as_pairs(&out.pairs) == wordcount::sequential(&[&data]));
}

/// A reduce that panics in the streamed merge (key ranges merged on the
/// workers, handed over on the calling thread) fails the run in reduce,
/// spill files removed, for any thread count and a runtime on the calling
/// thread; the runtime is usable afterwards.
#[test]
fn a_panic_in_a_streamed_merge_removes_the_spill_files() {
    let data = corpus(2 << 20, 20_000, 19);
    let dir = tempfile::tempdir().unwrap();
    let runtimes = THREADS
        .iter()
        .map(|&t| Runtime::builder().threads(t).build().unwrap())
        .chain([Runtime::builder().on_caller().build().unwrap()]);
    for rt in runtimes {
        let job = Count::new(Fail::PanicInReduce, true, &data, None);
        let opts = RunOptions::default()
            .memory_limit(64 << 10)
            .spill_dir(dir.path().to_path_buf());
        let err = rt
            .run_each(&job, &Input::bytes(&data), &opts, |_, _| Ok(()))
            .unwrap_err();
        let what = format!("{} threads", rt.threads());
        assert!(
            matches!(
                err,
                Error::Panicked {
                    phase: Phase::Reduce,
                    ..
                }
            ),
            "{what}: {err}"
        );
        assert!(left_in(dir.path()).is_empty(), "{what}: spill files left");
        let out = rt.run(&WordCount::new(), &Input::bytes(&data)).unwrap();
        assert!(
            as_pairs(&out.pairs) == wordcount::sequential(&[&data]),
            "{what}"
        );
    }
}

#[test]
fn a_job_that_cannot_spill_fails_only_past_a_limit_the_caller_set() {
    let data = corpus(1 << 20, 20_000, 13);
    let rt = Runtime::builder().threads(2).build().unwrap();
    // Word count without a codec: it cannot spill.
    let no_codec = Count::new(Fail::Never, false, &data, None);
    let opts = RunOptions::default().memory_limit(64 << 10);
    let err = rt
        .run_with(&no_codec, &Input::bytes(&data), &opts)
        .unwrap_err();
    assert!(
        matches!(err, Error::MemoryLimit { limit } if limit == 64 << 10),
        "{err}"
    );
    assert!(err.to_string().contains("cannot spill"), "{err}");
    let out = rt.run(&no_codec, &Input::bytes(&data)).unwrap();
    assert_eq!(out.stats.memory.spills, 0);
    assert!(!out.stats.memory.limit_explicit);
    assert!(as_pairs(&out.pairs) == wordcount::sequential(&[&data]));
}

#[test]
fn a_spill_directory_that_is_a_file_is_a_clear_error() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default().spill_dir(file.path().to_path_buf());
    let err = rt
        .run_with(&WordCount::new(), &Input::bytes(b"a b"), &opts)
        .unwrap_err();
    assert!(err.to_string().contains("is not a directory"), "{err}");
}

/// Options for a pipelined run under `limit`, spilling into `dir`.
fn pipelined(limit: u64, dir: &Path) -> RunOptions {
    RunOptions::default()
        .mode(Mode::Pipelined)
        .memory_limit(limit)
        .spill_dir(dir.to_path_buf())
}

/// The pipelined reducers spill their partitions past the budget, and the
/// output is the in-memory barrier run's; the stats count the spills.
#[test]
fn pipelined_word_count_spills_and_equals_the_plain_run() {
    let data = corpus(2 << 20, 20_000, 19);
    let input = Input::bytes(&data);
    let dir = tempfile::tempdir().unwrap();
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let want = rt.run(&WordCount::new(), &input).unwrap();
        assert_eq!(want.stats.memory.spills, 0);
        for limit in [1 << 20, 256 << 10] {
            let out = rt
                .run_with(&WordCount::new(), &input, &pipelined(limit, dir.path()))
                .unwrap();
            let what = format!("{threads} threads, limit {limit}");
            assert_eq!(out.stats.plan.mode, RunMode::Pipelined, "{what}");
            let m = &out.stats.memory;
            assert!(m.spills > 0 && m.spill_runs >= m.spills, "{what}: {m:?}");
            assert!(
                m.spilled_bytes > 0 && m.peak_tracked_bytes > 0,
                "{what}: {m:?}"
            );
            assert!(m.limit_explicit && m.limit_bytes == limit, "{what}: {m:?}");
            // The buffers take at most a quarter of the budget.
            let p = out.stats.pipeline.as_ref().unwrap();
            assert!(p.max_buffered_bytes as u64 <= limit / 4, "{what}: {p:?}");
            assert!(out.pairs == want.pairs, "{what}: output differs");
            assert!(left_in(dir.path()).is_empty(), "{what}: spill files left");
        }
    }
}

#[test]
fn pipelined_inverted_index_spills_and_equals_the_plain_run() {
    let data = corpus(1 << 20, 10_000, 23);
    let input = Input::bytes(&data);
    let want = sequential(&[&data], Docs::Lines).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let plain = build(&rt, &input, Docs::Lines, &RunOptions::default()).unwrap();
        assert!(
            plain.index == want,
            "{threads} threads: plain index differs"
        );
        let opts = pipelined(1 << 20, dir.path());
        let got = build(&rt, &input, Docs::Lines, &opts).unwrap();
        let what = format!("{threads} threads");
        assert_eq!(got.stats.plan.mode, RunMode::Pipelined, "{what}");
        assert!(got.stats.memory.spills > 0, "{what}: no spill");
        assert!(got.index == plain.index, "{what}: index differs");
        let mut handed = Vec::new();
        build_each(&rt, &input, Docs::Lines, &opts, |word, ids| {
            handed.push((word, ids));
            Ok(())
        })
        .unwrap();
        assert!(handed == want, "{what}: streamed index differs");
        assert!(left_in(dir.path()).is_empty(), "{what}: spill files left");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn pipelined_any_budget_and_split_size_gives_the_barrier_output(
        limit in 0u64..(2 << 20),
        split in prop_oneof![Just(None), (16usize..200_000).prop_map(Some)],
        threads in prop_oneof![Just(1usize), Just(2), Just(7)],
        index in any::<bool>(),
        seed in 0u64..1000,
    ) {
        let data = corpus(512 << 10, 5_000, seed);
        let input = Input::bytes(&data);
        let dir = tempfile::tempdir().unwrap();
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let opts = pipelined(limit, dir.path()).split_size(split);
        if index {
            let want = build(&rt, &input, Docs::Lines, &RunOptions::default()).unwrap();
            let got = build(&rt, &input, Docs::Lines, &opts).unwrap();
            prop_assert_eq!(got.stats.plan.mode, RunMode::Pipelined);
            prop_assert!(got.index == want.index);
        } else {
            let want = rt.run(&WordCount::new(), &input).unwrap();
            let got = rt.run_with(&WordCount::new(), &input, &opts).unwrap();
            prop_assert_eq!(got.stats.plan.mode, RunMode::Pipelined);
            prop_assert!(got.pairs == want.pairs);
        }
        prop_assert!(left_in(dir.path()).is_empty());
    }
}

#[test]
fn a_pipelined_error_or_panic_removes_the_spill_files() {
    let data = corpus(2 << 20, 20_000, 29);
    let dir = tempfile::tempdir().unwrap();
    for threads in [2, 7] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for fail in [Fail::Malformed, Fail::Panic] {
            let mut job = Count::new(fail, true, &data, Some(dir.path()));
            job.pipelinable = true;
            let opts = pipelined(256 << 10, dir.path()).split_size(16 << 10);
            let err = rt.run_with(&job, &Input::bytes(&data), &opts).unwrap_err();
            match (fail, &err) {
                (Fail::Panic, Error::Panicked { phase, .. }) => assert_eq!(*phase, Phase::Map),
                (Fail::Malformed, Error::Malformed { .. }) => {}
                _ => panic!("unexpected error: {err}"),
            }
            assert!(job.spilled_before.load(Relaxed), "the run had not spilled");
            assert!(left_in(dir.path()).is_empty(), "spill files left");
        }
        // Without a codec, a pipelined run past the limit fails too.
        let mut no_codec = Count::new(Fail::Never, false, &data, None);
        no_codec.pipelinable = true;
        let opts = RunOptions::default()
            .mode(Mode::Pipelined)
            .memory_limit(64 << 10);
        let err = rt
            .run_with(&no_codec, &Input::bytes(&data), &opts)
            .unwrap_err();
        assert!(matches!(err, Error::MemoryLimit { .. }), "{err}");
    }
}

/// Word count whose output per word is wide (8 KiB): the outputs of
/// a spilled `run_each`'s key ranges outweigh its containers.
struct Wide;

impl Job for Wide {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = [u64; 1024];

    fn records(&self) -> Records {
        WordCount::new().records()
    }

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        WordCount::new().map(split, emit)
    }

    fn reduce(&self, _k: &Bytes, n: u64) -> [u64; 1024] {
        [n; 1024]
    }

    fn codec(&self) -> Option<Codec<Bytes, u64>> {
        Some(Codec::new())
    }
}

/// A spilled `run_each` charges its key ranges' outputs to the ledger:
/// the peak it reports is at least an average range's output (the
/// containers alone stay near the limit, far below it), and the output
/// is the plain run's.
#[test]
fn the_ledger_counts_the_key_ranges_outputs() {
    let data = corpus(1 << 20, 20_000, 29);
    let input = Input::bytes(&data);
    let counts = wordcount::sequential(&[&data]);
    let limit = 256 << 10;
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let opts = RunOptions::default().memory_limit(limit);
        let mut got = Vec::new();
        let stats = rt
            .run_each(&Wide, &input, &opts, |word, out| {
                got.push((word.as_bytes().to_vec(), out[1023]));
                Ok(())
            })
            .unwrap();
        let what = format!("{threads} threads");
        assert!(got == counts, "{what}: output differs");
        let m = &stats.memory;
        let ranges: u64 = stats.reduce_tasks.iter().sum();
        let entry = std::mem::size_of::<(Bytes, [u64; 1024])>() as u64;
        let average = entry * counts.len() as u64 / ranges;
        assert!(
            m.spills > 0 && average > 4 * limit,
            "{what}: {m:?}, {ranges} ranges"
        );
        assert!(
            m.peak_tracked_bytes >= average,
            "{what}: {m:?}, {ranges} ranges"
        );
    }
}
