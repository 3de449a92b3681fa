//! The runtime's promises: one pool for every job, errors as values, a
//! usable runtime after a failure.

use std::collections::HashSet;
use std::sync::Mutex;
use std::thread::ThreadId;

use ember::{
    Emit, Error, Input, Job, MapOnlyJob, MapResult, Phase, RunOptions, Runtime, Split, Sum,
};

use crate::tally;
use tally::{keyed, Tally, FEW, RECORDS, UNIQUE};

/// Counts bytes; records which threads ran map; panics on demand.
struct ByteCount<'a> {
    threads: &'a Mutex<HashSet<ThreadId>>,
    panic_in_map_on: Option<u8>,
    panic_in_reduce_on: Option<u8>,
}

impl Job for ByteCount<'_> {
    type Key = u8;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> ember::Records {
        ember::Records::Fixed(1)
    }

    fn map<E: Emit<u8, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        self.threads
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        for &b in split.data {
            if Some(b) == self.panic_in_map_on {
                panic!("map saw byte {b}");
            }
            emit.emit(b, 1);
        }
        Ok(())
    }

    fn reduce(&self, key: &u8, n: u64) -> u64 {
        if Some(*key) == self.panic_in_reduce_on {
            panic!("reduce saw key {key}");
        }
        n
    }
}

fn job(threads: &Mutex<HashSet<ThreadId>>) -> ByteCount<'_> {
    ByteCount {
        threads,
        panic_in_map_on: None,
        panic_in_reduce_on: None,
    }
}

fn small_splits() -> RunOptions {
    RunOptions::default().split_size(16)
}

#[test]
fn jobs_reuse_the_same_threads() {
    let rt = Runtime::builder().threads(4).build().unwrap();
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 7) as u8).collect();
    let first = Mutex::new(HashSet::new());
    let second = Mutex::new(HashSet::new());
    let a = rt
        .run_with(&job(&first), &Input::bytes(&data), &small_splits())
        .unwrap();
    let b = rt
        .run_with(&job(&second), &Input::bytes(&data), &small_splits())
        .unwrap();
    assert_eq!(a.pairs, b.pairs);
    let (first, second) = (first.into_inner().unwrap(), second.into_inner().unwrap());
    let all: HashSet<_> = first.union(&second).collect();
    // Thread ids are never reused, so a thread created for the second job
    // would make the union larger than the pool.
    assert!(all.len() <= 4, "{} distinct threads ran map", all.len());
    assert!(!all.contains(&std::thread::current().id()));
    assert!(a.stats.map_tasks.iter().sum::<u64>() == a.stats.splits as u64);
}

#[test]
fn a_panic_in_map_is_an_error_and_the_runtime_survives() {
    let rt = Runtime::builder().threads(3).build().unwrap();
    let seen = Mutex::new(HashSet::new());
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 200) as u8).collect();
    let bad = ByteCount {
        panic_in_map_on: Some(150),
        ..job(&seen)
    };
    let err = rt
        .run_with(&bad, &Input::bytes(&data), &small_splits())
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            Error::Panicked {
                phase: Phase::Map,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "the job's map function panicked: map saw byte 150"
    );
    let ok = rt.run(&job(&seen), &Input::bytes(&data)).unwrap();
    assert_eq!(ok.pairs.len(), 200);
    assert!(ok.pairs.iter().all(|&(_, n)| n == 50));
}

#[test]
fn a_panic_in_reduce_is_an_error_and_the_runtime_survives() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let seen = Mutex::new(HashSet::new());
    let bad = ByteCount {
        panic_in_reduce_on: Some(b'b'),
        ..job(&seen)
    };
    let err = rt.run(&bad, &Input::bytes(b"abc")).err().unwrap();
    assert_eq!(
        err.to_string(),
        "the job's reduce function panicked: reduce saw key 98"
    );
    let ok = rt.run(&job(&seen), &Input::bytes(b"abcb")).unwrap();
    assert_eq!(ok.pairs, vec![(b'a', 1), (b'b', 2), (b'c', 1)]);
}

#[test]
fn empty_input_is_an_empty_result() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let seen = Mutex::new(HashSet::new());
    let out = rt.run(&job(&seen), &Input::bytes(b"")).unwrap();
    assert!(out.pairs.is_empty());
    assert_eq!(out.stats.splits, 0);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    let out = rt.run(&job(&seen), &Input::file(&empty).unwrap()).unwrap();
    assert!(out.pairs.is_empty());
}

#[test]
fn file_errors_say_what_and_where() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let missing = dir.join("missing.txt");
    let e = Input::file(&missing).err().unwrap().to_string();
    assert_eq!(
        e,
        format!(
            "cannot read '{}': No such file or directory (os error 2)",
            missing.display()
        )
    );
    let e = Input::file(dir).err().unwrap().to_string();
    assert_eq!(e, format!("'{}' is a directory, not a file", dir.display()));
    // One bad file among good ones fails the whole input, naming the bad one.
    let good = dir.join("good.txt");
    std::fs::write(&good, b"x").unwrap();
    let e = Input::files([&good, &missing]).err().unwrap().to_string();
    assert!(e.contains("missing.txt"), "{e}");
}

/// Asserts that `Input::file(path)` fails with OS error `errno`, reported
/// as an I/O error that names the path and quotes the OS.
fn assert_refused(path: &std::path::Path, errno: i32) {
    let e = Input::file(path).expect_err("the OS refuses this input");
    assert!(
        matches!(&e, Error::Io { path: p, source }
            if p == path && source.raw_os_error() == Some(errno)),
        "{e:?}"
    );
    let os = std::io::Error::from_raw_os_error(errno);
    assert_eq!(
        e.to_string(),
        format!("cannot read '{}': {os}", path.display())
    );
}

/// An input file the OS will not open is an `Error::Io` naming the file
/// and quoting the OS's reason, whoever runs the test: a path through a
/// regular file (ENOTDIR, refused to root too), and a file without read
/// permission (EACCES). Root may read any file, so as root the permission
/// check runs again in a child process as user `nobody`.
#[test]
#[cfg(unix)]
fn a_file_the_os_will_not_open_is_an_io_error_naming_it() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let plain = dir.join("plain.txt");
    std::fs::write(&plain, b"x").unwrap();
    assert_refused(&plain.join("input.txt"), libc::ENOTDIR);

    // SAFETY: geteuid takes no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        let secret = dir.join("secret.txt");
        std::fs::write(&secret, b"x").unwrap();
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();
        assert_refused(&secret, libc::EACCES);
        return;
    }
    const NOBODY: u32 = 65534;
    let test = crate::test_name(
        module_path!(),
        "a_file_the_os_will_not_open_is_an_io_error_naming_it",
    );
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([&test, "--exact", "--test-threads=1"])
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .expect("root can start a process as nobody");
    let out = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success() && out.contains("1 passed"),
        "as nobody: {}\n{out}{}",
        child.status,
        String::from_utf8_lossy(&child.stderr)
    );
}

#[test]
fn bad_settings_are_config_errors() {
    let e = Runtime::builder().threads(0).build().err().unwrap();
    assert_eq!(
        e.to_string(),
        "invalid configuration: threads must be at least 1"
    );
    let rt = Runtime::builder().threads(1).build().unwrap();
    let seen = Mutex::new(HashSet::new());
    let e = rt
        .run_with(
            &job(&seen),
            &Input::bytes(b"a"),
            &RunOptions::default().split_size(0),
        )
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "invalid configuration: split size must be at least 1 byte"
    );
}

/// Emits each line with its offset; no reduce.
struct Lines;

impl MapOnlyJob for Lines {
    type Key = Vec<u8>;
    type Value = u64;
    fn map(&self, split: Split<'_>, out: &mut Vec<(Vec<u8>, u64)>) -> MapResult {
        let mut at = split.offset;
        for line in split.data.split_inclusive(|&b| b == b'\n') {
            out.push((line.to_vec(), at));
            at += line.len() as u64;
        }
        Ok(())
    }
}

#[test]
fn map_only_jobs_skip_reduce_and_are_deterministic() {
    let data = b"b\na\nb\nc\na\n".repeat(50);
    let mut want: Vec<(Vec<u8>, u64)> = Vec::new();
    let mut at = 0;
    for line in data.split_inclusive(|&b| b == b'\n') {
        want.push((line.to_vec(), at));
        at += line.len() as u64;
    }
    want.sort_by(|a, b| a.0.cmp(&b.0)); // stable: equal lines keep input order
    for t in [1, 2, 7] {
        let rt = Runtime::builder().threads(t).build().unwrap();
        for split in [Some(3), None] {
            let opts = RunOptions::default().split_size(split);
            let out = rt
                .run_map_only(&Lines, &Input::bytes(&data), &opts)
                .unwrap();
            assert_eq!(out.pairs, want);
            assert!(out.stats.reduce_skipped());
            assert_eq!(out.stats.reduce_secs, 0.0);
        }
    }
}

/// What the sample did.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sampled {
    /// No sample: every record mapped once.
    No,
    /// Sampled, and the sample's containers kept: every record mapped once.
    Kept,
    /// Sampled, then the sampled splits mapped again into the chosen
    /// container: more records mapped than there are, each counted once.
    Redone,
}

/// Issue #4: "the sampled pairs must not be lost or counted twice", for
/// every container kind, Auto choosing hash (the sample is kept) and Auto
/// choosing append (the sample is mapped again), in barrier mode; the
/// pipelined mode gives the same counts.
#[test]
fn sampled_pairs_are_neither_lost_nor_counted_twice() {
    use ember::tune::Mode;
    use ember::{ContainerKind as C, KeyHint as H};
    let n = RECORDS;
    let (few, unique) = (keyed(FEW), keyed(UNIQUE));
    let cases = [
        (H::Unknown, &few, C::Auto, C::Hash, Sampled::Kept),
        (H::Unknown, &unique, C::Auto, C::Append, Sampled::Redone),
        (H::Unknown, &few, C::Hash, C::Hash, Sampled::Kept),
        (H::Unknown, &unique, C::Hash, C::Hash, Sampled::Kept),
        (H::Unknown, &few, C::HashTree, C::HashTree, Sampled::Redone),
        (H::Unknown, &few, C::Append, C::Append, Sampled::No),
        (H::Unknown, &few, C::Intern, C::Intern, Sampled::No),
        (H::Dense(100), &few, C::Array, C::Array, Sampled::No),
        (H::Dense(100), &few, C::Auto, C::Array, Sampled::No),
        (H::Unique, &unique, C::Unique, C::Unique, Sampled::No),
        (H::Unique, &unique, C::Auto, C::Unique, Sampled::No),
    ];
    for (hint, data, container, chosen, sampled) in cases {
        let mut want = std::collections::BTreeMap::new();
        for r in data.chunks_exact(4) {
            *want
                .entry(u32::from_le_bytes(r.try_into().unwrap()))
                .or_insert(0u64) += 1;
        }
        let want: Vec<(u32, u64)> = want.into_iter().collect();
        for threads in [2, 3] {
            let rt = Runtime::builder().threads(threads).build().unwrap();
            for mode in [Mode::Barrier, Mode::Pipelined] {
                let label = format!("{container} on {hint:?}, {threads} threads, {mode}");
                let job = Tally {
                    hint,
                    mapped: Default::default(),
                };
                let opts = RunOptions::default()
                    .split_size(4096)
                    .container(container)
                    .mode(mode);
                let out = rt.run_with(&job, &Input::bytes(data), &opts).unwrap();
                assert!(out.pairs == want, "{label}: counts differ");
                if mode != Mode::Barrier {
                    continue;
                }
                assert_eq!(out.stats.plan.container, chosen, "{label}");
                let mapped = job.mapped.into_inner();
                assert_eq!(
                    out.stats.predicted_keys_per_worker.is_some(),
                    sampled != Sampled::No,
                    "{label}"
                );
                // Only a kept sample's bytes count as kept: about 5% of
                // the input, never all of it.
                let kept = out.stats.sample_kept_bytes as usize;
                match sampled {
                    Sampled::Kept => assert!(kept > 0 && kept < data.len() / 5, "{label}: {kept}"),
                    Sampled::No | Sampled::Redone => assert_eq!(kept, 0, "{label}"),
                }
                match sampled {
                    Sampled::No | Sampled::Kept => assert_eq!(mapped, n as u64, "{label}"),
                    // About 5% of the splits sampled, then mapped again.
                    Sampled::Redone => assert!(
                        mapped > n as u64 && mapped < n as u64 * 12 / 10,
                        "{label}: {mapped} records mapped"
                    ),
                }
            }
        }
    }
}

/// The append container's partitions are sized to the pairs the sample
/// predicts (about 2^17 pairs each, so that each partition's reduce stays in
/// the caches), whatever the thread count, and the output does not change.
#[test]
fn append_partitions_grow_with_the_predicted_pairs() {
    let n = 4_000_000u32;
    let data: Vec<u8> = (0..n)
        .flat_map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes())
        .collect();
    let mut want: Vec<(u32, u64)> = data
        .chunks_exact(4)
        .map(|r| (u32::from_le_bytes(r.try_into().unwrap()), 1))
        .collect();
    want.sort_unstable();
    for threads in [1, 2, 3] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let job = Tally {
            hint: ember::KeyHint::Unknown,
            mapped: Default::default(),
        };
        let opts = RunOptions::default().mode(ember::tune::Mode::Barrier);
        let out = rt.run_with(&job, &Input::bytes(&data), &opts).unwrap();
        assert_eq!(
            out.stats.plan.container,
            ember::ContainerKind::Append,
            "{threads} threads"
        );
        // 4M pairs predicted: 31 partitions of 2^17 pairs, rounded up to a
        // power of two (a prediction that runs high or low by a third still
        // lands between 16 and 64).
        assert!(
            (16..=64).contains(&out.stats.plan.partitions),
            "{threads} threads: {} partitions",
            out.stats.plan.partitions
        );
        assert!(out.pairs == want, "{threads} threads: counts differ");
    }
}

/// `RunOptions::progress` grows by exactly the input's size on every path:
/// a kept sample (hash), a sample mapped again (append, hash_tree), the
/// pipelined mode, a streamed input and a map-only job.
#[test]
fn progress_counts_every_input_byte_once() {
    use ember::tune::Mode;
    use ember::{ContainerKind as C, KeyHint as H, Progress};
    let (few, unique) = (keyed(FEW), keyed(UNIQUE));
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = |container, mode, progress: &Progress| {
        RunOptions::default()
            .split_size(4096)
            .chunk_size(100_000)
            .container(container)
            .mode(mode)
            .progress(progress.clone())
    };
    let cases = [
        (&few, C::Auto, Mode::Barrier, C::Hash, false),
        (&unique, C::Auto, Mode::Barrier, C::Append, false),
        (&few, C::HashTree, Mode::Barrier, C::HashTree, false),
        (&few, C::Auto, Mode::Pipelined, C::Hash, false),
        (&few, C::Auto, Mode::Barrier, C::Hash, true),
    ];
    for (data, container, mode, chosen, streamed) in cases {
        let label = format!("{container}, {mode}, streamed: {streamed}");
        let progress = Progress::new();
        let job = Tally {
            hint: H::Unknown,
            mapped: Default::default(),
        };
        let input = if streamed {
            Input::reader("bytes", std::io::Cursor::new(data.clone()))
        } else {
            Input::bytes(data)
        };
        let out = rt
            .run_with(&job, &input, &opts(container, mode, &progress))
            .unwrap();
        assert_eq!(out.stats.plan.container, chosen, "{label}");
        assert_eq!(progress.bytes(), data.len() as u64, "{label}");
    }
    let lines = b"b\na\nb\nc\na\n".repeat(5000);
    let progress = Progress::new();
    rt.run_map_only(
        &Lines,
        &Input::bytes(&lines),
        &opts(C::Auto, Mode::Auto, &progress),
    )
    .unwrap();
    assert_eq!(progress.bytes(), lines.len() as u64, "map-only");
}

/// A run called from inside another, larger rayon pool (a worker of it,
/// whose index is past this runtime's workers) counts its reduce tasks on
/// its own workers and gives the same output.
#[test]
fn a_run_from_a_larger_foreign_pool_works() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let foreign = rayon::ThreadPoolBuilder::new()
        .num_threads(4)
        .build()
        .unwrap();
    let data = b"abracadabra".repeat(100);
    let threads = Mutex::new(HashSet::new());
    let job = ByteCount {
        threads: &threads,
        panic_in_map_on: None,
        panic_in_reduce_on: None,
    };
    let want = rt.run(&job, &Input::bytes(&data)).unwrap();
    let outs = foreign.broadcast(|_| rt.run(&job, &Input::bytes(&data)));
    for out in outs {
        let out = out.unwrap();
        assert_eq!(out.pairs, want.pairs);
        assert_eq!(out.stats.reduce_tasks.len(), 2);
        assert_eq!(
            out.stats.reduce_tasks.iter().sum::<u64>(),
            out.stats.plan.partitions as u64
        );
    }
}

/// A runtime on the calling thread maps on that thread only and counts
/// what a pool of one thread counts, for tiny and whole-input splits, in
/// either mode; it refuses other thread counts, a second one on the same
/// thread, and runs from another thread.
#[test]
fn a_runtime_on_the_calling_thread_runs_there_and_counts_the_same() {
    use ember::tune::Mode;
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let one = Runtime::builder().threads(1).build().unwrap();
    let rt = Runtime::builder().on_caller().build().unwrap();
    assert_eq!(rt.threads(), 1);
    let me = std::thread::current().id();
    for split in [16, 4096, 1 << 20] {
        for mode in [Mode::Barrier, Mode::Pipelined] {
            let opts = RunOptions::default().split_size(split).mode(mode);
            let (ran, elsewhere) = (Mutex::new(HashSet::new()), Mutex::new(HashSet::new()));
            let got = rt.run_with(&job(&ran), &Input::bytes(&data), &opts);
            let want = one.run_with(&job(&elsewhere), &Input::bytes(&data), &opts);
            let label = format!("split {split}, {mode}");
            assert_eq!(got.unwrap().pairs, want.unwrap().pairs, "{label}");
            assert_eq!(ran.into_inner().unwrap(), HashSet::from([me]), "{label}");
        }
    }
    assert_eq!(rt.install(|| std::thread::current().id()), me);
    let refused = |b: ember::RuntimeBuilder| matches!(b.build(), Err(Error::Config(_)));
    assert!(refused(Runtime::builder().on_caller()));
    assert!(refused(Runtime::builder().on_caller().threads(2)));
    let threads = Mutex::new(HashSet::new());
    let from_another = std::thread::scope(|s| {
        s.spawn(|| rt.run(&job(&threads), &Input::bytes(&data)))
            .join()
    });
    assert!(matches!(from_another, Err(_) | Ok(Err(_))));
    assert!(threads.into_inner().unwrap().is_empty());
}

/// Counts whitespace-separated words, in the order its fields say.
struct Words {
    declared: ember::OutputOrder,
    reversed: bool,
}

impl Job for Words {
    type Key = ember::Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> ember::Records {
        ember::Records::Separator(|b| b == b' ')
    }

    fn map<E: Emit<ember::Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for w in split.data.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
            emit.emit(w, 1);
        }
        Ok(())
    }

    fn reduce(&self, _key: &ember::Bytes, n: u64) -> u64 {
        n
    }

    fn order(&self, a: &(ember::Bytes, u64), b: &(ember::Bytes, u64)) -> std::cmp::Ordering {
        match self.reversed {
            true => b.0.cmp(&a.0),
            false => a.0.cmp(&b.0),
        }
    }

    fn output_order(&self) -> ember::OutputOrder {
        self.declared
    }
}

#[test]
fn a_declared_key_order_sorts_as_the_comparator_does() {
    use ember::OutputOrder;
    // Enough distinct words, short and longer than an inline key, that the
    // merge cuts the runs into ranges.
    let words: Vec<String> = (0..6000u32)
        .map(|i| match i % 3 {
            0 => format!("w{}", i * 7919 % 6007),
            _ => format!("a-longer-word-than-sixteen-bytes-{}", i * 31 % 4001),
        })
        .collect();
    let text = words.join(" ");
    let mut counts = std::collections::BTreeMap::<Vec<u8>, u64>::new();
    for w in &words {
        *counts.entry(w.as_bytes().to_vec()).or_default() += 1;
    }
    let want: Vec<(Vec<u8>, u64)> = counts.into_iter().collect();
    let got = |rt: &Runtime, job: &Words, top: Option<usize>| {
        let mut opts = RunOptions::default().split_size(2048);
        if let Some(k) = top {
            opts = opts.top(k);
        }
        let out = rt
            .run_with(job, &Input::bytes(text.as_bytes()), &opts)
            .unwrap();
        let pairs = out.pairs.iter().map(|(k, n)| (k.as_bytes().to_vec(), *n));
        pairs.collect::<Vec<_>>()
    };
    for threads in [1, 2, 3] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let by_key = |declared| Words {
            declared,
            reversed: false,
        };
        assert_eq!(got(&rt, &by_key(OutputOrder::Key), None), want);
        assert_eq!(got(&rt, &by_key(OutputOrder::Comparator), None), want);
        assert_eq!(got(&rt, &by_key(OutputOrder::Key), Some(10)), want[..10]);
        // Declared a comparator, the job's own order is what counts.
        let reversed = |declared| Words {
            declared,
            reversed: true,
        };
        let mut backwards = want.clone();
        backwards.reverse();
        assert_eq!(
            got(&rt, &reversed(OutputOrder::Comparator), None),
            backwards
        );
        // Declared the key order, `order` is not called at all (here the
        // declaration is false on purpose, to show it).
        assert_eq!(got(&rt, &reversed(OutputOrder::Key), None), want);
    }
}
