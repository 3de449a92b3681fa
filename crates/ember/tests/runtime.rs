//! The runtime's promises: one pool for every job, errors as values, a
//! usable runtime after a failure.

use std::collections::HashSet;
use std::sync::Mutex;
use std::thread::ThreadId;

use ember::{Emit, Error, Input, Job, MapOnlyJob, Phase, RunOptions, Runtime, Split, Sum};

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

    fn map<E: Emit<u8, u64>>(&self, split: Split<'_>, emit: &mut E) {
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
    RunOptions {
        split_size: Some(16),
        ..Default::default()
    }
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
    let dir = std::env::temp_dir().join(format!("ember-empty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    let out = rt.run(&job(&seen), &Input::file(&empty).unwrap()).unwrap();
    assert!(out.pairs.is_empty());
}

#[test]
fn file_errors_say_what_and_where() {
    let dir = std::env::temp_dir().join(format!("ember-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.txt");
    let e = Input::file(&missing).err().unwrap().to_string();
    assert_eq!(
        e,
        format!(
            "cannot read '{}': No such file or directory (os error 2)",
            missing.display()
        )
    );
    let e = Input::file(&dir).err().unwrap().to_string();
    assert_eq!(e, format!("'{}' is a directory, not a file", dir.display()));
    // One bad file among good ones fails the whole input, naming the bad one.
    let good = dir.join("good.txt");
    std::fs::write(&good, b"x").unwrap();
    let e = Input::files([&good, &missing]).err().unwrap().to_string();
    assert!(e.contains("missing.txt"), "{e}");
}

#[test]
#[cfg(unix)]
fn unreadable_file_is_an_error() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("ember-perm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("secret.txt");
    std::fs::write(&f, b"x").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o000)).unwrap();
    let res = Input::file(&f);
    // root can read anything; the check is meaningful only for other users.
    if std::fs::read(&f).is_err() {
        let e = res.err().unwrap().to_string();
        assert!(
            e.contains("Permission denied") && e.contains("secret.txt"),
            "{e}"
        );
    }
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
            &RunOptions {
                split_size: Some(0),
                ..Default::default()
            },
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
    fn map(&self, split: Split<'_>, out: &mut Vec<(Vec<u8>, u64)>) {
        let mut at = split.offset;
        for line in split.data.split_inclusive(|&b| b == b'\n') {
            out.push((line.to_vec(), at));
            at += line.len() as u64;
        }
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
            let opts = RunOptions {
                split_size: split,
                ..Default::default()
            };
            let out = rt
                .run_map_only(&Lines, &Input::bytes(&data), &opts)
                .unwrap();
            assert_eq!(out.pairs, want);
            assert!(out.stats.reduce_skipped);
            assert_eq!(out.stats.reduce_secs, 0.0);
        }
    }
}
