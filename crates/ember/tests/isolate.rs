//! Isolated map and reduce workers ([`ember::isolate`]) against the plain
//! run, and their faults: a map or reduce worker that segfaults, aborts or
//! is SIGKILLed is retried or named in the error; no worker process and no channel outlive a run,
//! nor a parent killed by SIGTERM.
//!
//! This test has its own `main` (`harness = false`): it is also the
//! workers' program, so it calls `worker_hook` first, as a user's `main`
//! does. The faulty job exists only in this test's registry.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ember::isolate::{self, Options, Report, Task, ATTEMPT_ENV};
use ember::stream::{Encoded, Folding, Form, Registry};
use ember::{
    Bytes, Death, Emit, Error, Input, Isolation, Job, Malformed, MapResult, RunOptions, Runtime,
    Split, Sum,
};

/// Set in the environment of this test re-executed as a parent whose
/// isolated run hangs, for the SIGTERM test.
const PARENT_ENV: &str = "EMBER_ISOLATE_TEST_PARENT";
/// The folder where a worker that hangs leaves a file named by its pid
/// (`hanging-PID`) first, for a test to find it.
const MARKS_ENV: &str = "EMBER_ISOLATE_TEST_MARKS";

/// What the faulty job does on its chosen split.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Writes through a wild pointer (SIGSEGV).
    Segv,
    /// Calls `abort` (SIGABRT).
    Abort,
    /// Sleeps a minute before mapping, to be killed meanwhile.
    Hang,
    /// Returns a malformed-record error.
    Malformed,
}

/// Counts whitespace-separated words; with a fault, strikes first in
/// `map`, or in `reduce`.
struct Words {
    map_fault: Option<Fault>,
    reduce_fault: Option<Fault>,
}

/// Strikes with `fault`; a malformed record is `map`'s error to return.
fn strike(fault: Fault) -> MapResult {
    match fault {
        Fault::Segv => {
            let wild = 16usize as *mut u8;
            // SAFETY: none: this crashes the worker on purpose.
            unsafe { wild.write_volatile(1) };
        }
        // SAFETY: `abort` has no preconditions.
        Fault::Abort => unsafe { libc::abort() },
        Fault::Hang => {
            if let Some(marks) = std::env::var_os(MARKS_ENV) {
                let mark = Path::new(&marks).join(format!("hanging-{}", std::process::id()));
                std::fs::write(mark, b"").expect("the marks folder is writable");
            }
            std::thread::sleep(Duration::from_secs(60))
        }
        Fault::Malformed => return Err(Malformed::new(0, "a bad record")),
    }
    Ok(())
}

impl Job for Words {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        self.map_fault.map_or(Ok(()), strike)?;
        for word in split.data.split(u8::is_ascii_whitespace) {
            if !word.is_empty() {
                emit.emit(word, 1);
            }
        }
        Ok(())
    }
    fn reduce(&self, _word: &Bytes, n: u64) -> u64 {
        if let Some(fault) = self.reduce_fault {
            strike(fault).expect("a reduce fault crashes");
        }
        n
    }
}

/// The fault HOW names.
fn fault(how: Option<&String>) -> Result<Fault, String> {
    Ok(match how.map(String::as_str) {
        Some("segv") => Fault::Segv,
        Some("abort") => Fault::Abort,
        Some("hang") => Fault::Hang,
        Some("malformed") => Fault::Malformed,
        _ => return Err("expected segv|abort|hang|malformed".into()),
    })
}

/// Whether this process strikes: its environment's variable `name` is
/// `value`, on its first attempt only if `transient`.
fn chosen(name: &str, value: impl Fn(&str) -> bool, transient: bool) -> bool {
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    value(&env(name)) && (!transient || env(ATTEMPT_ENV) == "0")
}

/// `words`; `faulty HOW FILE [transient]`: words, but the worker of the
/// split at the start of the file named FILE strikes with fault HOW (on
/// its first attempt only if `transient`); `faulty-reduce HOW RANGE
/// [transient]`: words, but the reduce worker of key range RANGE (from 0)
/// strikes.
fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register("words", "count words", |_| {
        Ok(Box::new(Folding(Words {
            map_fault: None,
            reduce_fault: None,
        })))
    });
    registry.register("words-binary", "count words, with a binary form", |_| {
        Ok(Box::new(Encoded::new(Words {
            map_fault: None,
            reduce_fault: None,
        })))
    });
    registry.register("faulty", "count words, with a fault in map", |args| {
        let how = fault(args.first())?;
        let file = args.get(1).ok_or("no file")?;
        let at_start = chosen("mapreduce_map_input_start", |s| s == "0", args.len() > 2);
        let strikes = at_start
            && chosen(
                "mapreduce_map_input_file",
                |f| f.ends_with(file.as_str()),
                false,
            );
        Ok(Box::new(Folding(Words {
            map_fault: strikes.then_some(how),
            reduce_fault: None,
        })))
    });
    registry.register(
        "faulty-reduce",
        "count words, with a fault in reduce",
        |args| {
            let how = fault(args.first())?;
            let range = args.get(1).ok_or("no key range")?;
            let strikes = chosen("mapreduce_task_partition", |p| p == range, args.len() > 2);
            Ok(Box::new(Encoded::new(Words {
                map_fault: None,
                reduce_fault: strikes.then_some(how),
            })))
        },
    );
    registry
}

fn main() {
    isolate::worker_hook(&registry());
    let marks = tempfile::tempdir().unwrap();
    if std::env::var_os(MARKS_ENV).is_none() {
        // Set before any thread starts; the workers inherit it.
        std::env::set_var(MARKS_ENV, marks.path());
    }
    if let Some(dir) = std::env::var_os(PARENT_ENV) {
        let files = inputs(Path::new(&dir));
        let _ = run(&["faulty", "hang", "a.txt"], &files, 2, Some(4 << 10), 1);
        return;
    }
    let tests: [(&str, fn()); 13] = [
        (
            "isolated_output_is_the_plain_output",
            isolated_output_is_the_plain_output,
        ),
        (
            "binary_output_is_the_plain_output",
            binary_output_is_the_plain_output,
        ),
        (
            "workers_are_kept_from_run_to_run",
            workers_are_kept_from_run_to_run,
        ),
        (
            "channels_past_the_memory_limit_are_kept_on_disk",
            channels_past_the_memory_limit_are_kept_on_disk,
        ),
        ("a_transient_crash_is_retried", a_transient_crash_is_retried),
        (
            "a_permanent_crash_names_the_split",
            a_permanent_crash_names_the_split,
        ),
        ("a_job_error_is_not_retried", a_job_error_is_not_retried),
        (
            "a_worker_killed_mid_run_is_retried",
            a_worker_killed_mid_run_is_retried,
        ),
        (
            "a_transient_reduce_crash_is_retried",
            a_transient_reduce_crash_is_retried,
        ),
        (
            "a_permanent_reduce_crash_names_the_key_range",
            a_permanent_reduce_crash_names_the_key_range,
        ),
        (
            "a_reduce_worker_killed_mid_run_is_retried",
            a_reduce_worker_killed_mid_run_is_retried,
        ),
        (
            "a_runtime_with_processes_runs_registered_jobs_only",
            a_runtime_with_processes_runs_registered_jobs_only,
        ),
        (
            "a_killed_parent_leaves_no_worker",
            a_killed_parent_leaves_no_worker,
        ),
    ];
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for (name, test) in tests {
        if filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str())) {
            test();
            println!("test {name} ... ok");
        }
    }
}

/// Writes the inputs into `dir` (if not there yet): text with repeated
/// words, a file without a final newline, an empty file.
fn inputs(dir: &Path) -> Vec<PathBuf> {
    let names = ["a.txt", "b.txt", "empty.txt"];
    let files: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    if !files[0].exists() {
        let mut text = String::new();
        let mut x: u64 = 7;
        for i in 0..40_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            text.push_str(&format!("w{}", (x >> 33) % 997));
            text.push(if i % 9 == 8 { '\n' } else { ' ' });
        }
        std::fs::write(&files[0], text).unwrap();
        std::fs::write(&files[1], "last words\nno newline at the end").unwrap();
        std::fs::write(&files[2], "").unwrap();
    }
    files
}

/// The job `job[0]` of [`registry`], with the arguments after it, run
/// isolated.
fn run(
    job: &[&str],
    files: &[PathBuf],
    workers: usize,
    split_size: Option<u64>,
    retries: u32,
) -> ember::Result<(String, Report)> {
    let opts = Options {
        workers,
        retries,
        split_size,
        ..Options::default()
    };
    run_with(job, files, &opts)
}

/// [`run`] with every option given.
fn run_with(job: &[&str], files: &[PathBuf], opts: &Options) -> ember::Result<(String, Report)> {
    let mut out = Vec::new();
    let args = strings(&job[1..]);
    let report = isolate::run(&registry(), job[0], &args, files, opts, &mut out)?;
    Ok((String::from_utf8(out).unwrap(), report))
}

/// The job `job[0]` of [`registry`], with the arguments after it, run
/// isolated with its output asked for in binary form, and that output as
/// `key<TAB>count` lines.
fn run_binary(job: &[&str], files: &[PathBuf], opts: Options) -> ember::Result<(String, Report)> {
    let mut workers = isolate::Workers::new(opts)?;
    let mut out = Vec::new();
    let args = strings(&job[1..]);
    let report = workers.run(&registry(), job[0], &args, files, Form::Binary, &mut out);
    let mut report = report?;
    report.workers.extend(workers.finish());
    let mut text = String::new();
    for record in ember::stream::records("output", &out) {
        let record = record?;
        let (_, n): (Bytes, u64) = record.decode().expect("a word and its count");
        text.push_str(&format!("{}\t{n}\n", String::from_utf8_lossy(record.key)));
    }
    Ok((text, report))
}

/// `words` run on `threads` threads in this process, mapped and reduced.
fn plain(files: &[PathBuf], threads: usize) -> String {
    let job = registry().job("words", &[]).unwrap();
    let runtime = Runtime::builder().threads(threads).build().unwrap();
    let input = Input::files(files).unwrap();
    let mut mapped = Vec::new();
    job.map(&runtime, &input, &RunOptions::default(), &mut mapped)
        .unwrap();
    let mut out = Vec::new();
    job.reduce("map output", &mut &mapped[..], &mut out)
        .unwrap();
    String::from_utf8(out).unwrap()
}

/// What a run could leave behind: this process's children (running or
/// not reaped), its channel descriptors (shared memory, or unnamed files
/// in a temporary directory), the files in /dev/shm.
#[derive(Debug, PartialEq)]
struct Leftovers {
    children: Vec<u32>,
    channels: usize,
    shm: Vec<PathBuf>,
}

/// Whether a descriptor's target is a channel: a memfd, or a file left
/// open in the temporary directory after it was deleted (an unnamed
/// file's target reads `DIR/#INODE (deleted)`).
fn is_channel(target: &Path) -> bool {
    let text = target.to_string_lossy();
    let deleted_temp = target.starts_with(std::env::temp_dir()) && text.ends_with("(deleted)");
    text.contains("memfd:ember-channel") || deleted_temp
}

fn leftovers() -> Leftovers {
    let me = std::process::id();
    let children = processes()
        .into_iter()
        .filter(|&(_, parent)| parent == me)
        .map(|(p, _)| p);
    let channels = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| is_channel(target))
        .count();
    let mut shm: Vec<PathBuf> = std::fs::read_dir("/dev/shm")
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    shm.sort();
    Leftovers {
        children: children.collect(),
        channels,
        shm,
    }
}

/// Every process's pid and parent pid.
fn processes() -> Vec<(u32, u32)> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some(parent) = stat_field(pid, 1).and_then(|p| p.parse().ok()) {
            all.push((pid, parent));
        }
    }
    all
}

/// Field `i` after the command name of /proc/PID/stat (0: the state, 1:
/// the parent's pid).
fn stat_field(pid: u32, i: usize) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(i).map(str::to_owned)
}

/// Runs `f`, checking that it leaves nothing behind.
fn clean<T>(f: impl FnOnce() -> T) -> T {
    let before = leftovers();
    assert!(before.children.is_empty(), "{before:?}");
    let result = f();
    assert_eq!(
        leftovers(),
        before,
        "a run left processes, channels or shared memory"
    );
    result
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

fn isolated_output_is_the_plain_output() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    for workers in [1, 2, 4] {
        let want = plain(&files, workers);
        assert!(want.lines().count() > 900, "{want}");
        for split in [Some(997), Some(16 << 10), None] {
            let (got, report) = clean(|| run(&["words"], &files, workers, split, 1)).unwrap();
            assert_eq!(got, want, "{workers} workers, splits of {split:?}");
            assert_eq!(report.tasks.len(), report.splits + report.partitions);
            assert!(report.partitions <= workers, "{workers}: {report:?}");
            assert_eq!(report.partitions > 1, workers > 1, "{report:?}");
            let reducers = report
                .tasks
                .iter()
                .filter(|t| matches!(t.task, Task::Reduce { .. }));
            assert_eq!(reducers.count(), report.partitions);
            assert_eq!(report.retries(), 0);
            // Each worker is started once and does task after task.
            let started = report.workers.len();
            assert!(started >= 1 && started <= workers, "{report:?}");
            let done: usize = report.workers.iter().map(|w| w.tasks).sum();
            assert_eq!(done, report.tasks.len(), "{report:?}");
            assert!(report
                .workers
                .iter()
                .all(|w| w.death.is_none() && w.peak_rss_kib > 0));
        }
    }
}

fn binary_output_is_the_plain_output() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    for workers in [1, 2, 4] {
        let want = plain(&files, workers);
        for split_size in [Some(997), Some(16 << 10), None] {
            let opts = Options {
                workers,
                split_size,
                ..Options::default()
            };
            let (got, report) = clean(|| run_binary(&["words-binary"], &files, opts)).unwrap();
            assert_eq!(report.form, Form::Binary);
            assert_eq!(got, want, "{workers} workers, splits of {split_size:?}");
            assert_eq!(report.partitions > 1, workers > 1, "{report:?}");
        }
    }
}

fn workers_are_kept_from_run_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    let want = plain(&files, 2);
    let opts = Options {
        workers: 2,
        split_size: Some(8 << 10),
        ..Options::default()
    };
    let (ended, pids, tasks) = clean(|| {
        let mut workers = isolate::Workers::new(opts).unwrap();
        let (mut tasks, mut pids) = (0, std::collections::BTreeSet::new());
        for _ in 0..3 {
            let mut out = Vec::new();
            // A job with no binary form writes text, whatever is asked.
            let report = workers
                .run(&registry(), "words", &[], &files, Form::Binary, &mut out)
                .unwrap();
            assert_eq!(report.form, Form::Text);
            assert_eq!(String::from_utf8(out).unwrap(), want);
            assert!(report.splits > 2, "{report:?}");
            assert!(report.workers.is_empty(), "none ended: {report:?}");
            tasks += report.tasks.len();
            pids.extend(report.tasks.iter().map(|t| t.pid));
        }
        (workers.finish(), pids, tasks)
    });
    assert!(pids.len() <= 2, "two processes did every task: {pids:?}");
    let ended_pids: std::collections::BTreeSet<u32> = ended.iter().map(|w| w.pid).collect();
    assert_eq!(ended_pids, pids);
    assert_eq!(ended.iter().map(|w| w.tasks).sum::<usize>(), tasks);
    assert!(ended.iter().all(|w| w.death.is_none()), "{ended:?}");
}

fn channels_past_the_memory_limit_are_kept_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    let spill = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let want = plain(&files, 2);
    for (limit, disk) in [(1, true), (1 << 40, false)] {
        let opts = Options {
            workers: 2,
            split_size: Some(4 << 10),
            memory_limit: Some(limit),
            spill_dir: Some(spill.path().to_path_buf()),
            ..Options::default()
        };
        let (got, report) = clean(|| run_with(&["words"], &files, &opts)).unwrap();
        assert_eq!(got, want, "a limit of {limit} bytes");
        let channels = report.splits + report.partitions;
        match disk {
            // The first workers start with nothing held, in memory.
            true => assert!((1..channels).contains(&report.disk_channels), "{report:?}"),
            false => assert_eq!(report.disk_channels, 0, "{report:?}"),
        }
        let named = std::fs::read_dir(spill.path()).unwrap().count();
        assert_eq!(named, 0, "the channels' files are unnamed");
    }
    let missing = Options {
        spill_dir: Some(dir.path().join("missing")),
        ..Options::default()
    };
    let e = run_with(&["words"], &files, &missing).unwrap_err();
    assert!(matches!(e, Error::Spill { .. }), "{e}");
    assert!(e.to_string().contains("missing"), "{e}");
}

fn a_transient_crash_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    let want = plain(&files, 2);
    for (how, signal) in [("segv", libc::SIGSEGV), ("abort", libc::SIGABRT)] {
        let args = ["faulty", how, "a.txt", "transient"];
        let (got, report) = clean(|| run(&args, &files, 2, Some(8 << 10), 1)).unwrap();
        assert_eq!(got, want, "{how}");
        assert_eq!(report.retries(), 1, "{how}");
        let deaths: Vec<_> = report.tasks.iter().filter_map(|t| t.death).collect();
        assert_eq!(deaths, [Death::Signal(signal)], "{how}");
        let died: Vec<_> = report.workers.iter().filter_map(|w| w.death).collect();
        assert_eq!(died, [Death::Signal(signal)], "{how}");
    }
}

fn a_permanent_crash_names_the_split() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    for retries in [0, 2] {
        let args = ["faulty", "segv", "a.txt"];
        let err = clean(|| run(&args, &files, 2, Some(8 << 10), retries)).unwrap_err();
        let Error::WorkerDied {
            path,
            start,
            end,
            death,
            attempts,
        } = &err
        else {
            panic!("{err}");
        };
        assert_eq!((path, *start), (&files[0], 0));
        assert!(*end > 8 << 10 && *end < 9 << 10, "{err}");
        assert_eq!(
            (*death, *attempts),
            (Death::Signal(libc::SIGSEGV), retries + 1)
        );
        let message = err.to_string();
        assert!(
            message.contains("a.txt' bytes 0..") && message.contains("SIGSEGV"),
            "{message}"
        );
    }
}

fn a_job_error_is_not_retried() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    let args = ["faulty", "malformed", "b.txt"];
    let err = clean(|| run(&args, &files, 2, Some(8 << 10), 1)).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("b.txt' bytes 0..") && message.contains("a bad record"),
        "{message}"
    );
}

/// The worker, a child of `parent`, that hangs in its task, once it does
/// (its mark in the marks folder, [`MARKS_ENV`]).
fn hanging_worker(parent: u32) -> u32 {
    let marks = std::env::var_os(MARKS_ENV).expect("set in main");
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        for entry in std::fs::read_dir(&marks).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("hanging-").and_then(|p| p.parse().ok()) else {
                continue;
            };
            if stat_field(pid, 1).and_then(|p| p.parse().ok()) == Some(parent) {
                return pid;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no hanging worker of {parent}");
}

fn a_worker_killed_mid_run_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    let want = plain(&files, 2);
    let (got, report) = clean(|| {
        std::thread::scope(|s| {
            let run = s.spawn(|| {
                run(
                    &["faulty", "hang", "a.txt", "transient"],
                    &files,
                    2,
                    Some(8 << 10),
                    1,
                )
            });
            let pid = hanging_worker(std::process::id());
            // SAFETY: `kill` has no memory-safety preconditions.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            run.join().unwrap()
        })
    })
    .unwrap();
    assert_eq!(got, want);
    let deaths: Vec<_> = report.tasks.iter().filter_map(|t| t.death).collect();
    assert_eq!(deaths, [Death::Signal(libc::SIGKILL)]);
}

fn a_transient_reduce_crash_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    let want = plain(&files, 4);
    for (how, signal) in [("segv", libc::SIGSEGV), ("abort", libc::SIGABRT)] {
        let args = ["faulty-reduce", how, "1", "transient"];
        let (got, report) = clean(|| run(&args, &files, 4, Some(8 << 10), 1)).unwrap();
        assert_eq!(got, want, "{how}");
        assert_eq!(report.retries(), 1, "{how}");
        let deaths: Vec<_> = report
            .tasks
            .iter()
            .filter_map(|t| Some((t.task, t.death?)))
            .collect();
        let range_1 = Task::Reduce { partition: 1 };
        assert_eq!(deaths, [(range_1, Death::Signal(signal))], "{how}");
    }
    // The same in binary form: the retried range's records are whole.
    let opts = Options {
        workers: 4,
        split_size: Some(8 << 10),
        ..Options::default()
    };
    let args = ["faulty-reduce", "segv", "1", "transient"];
    let (got, report) = clean(|| run_binary(&args, &files, opts)).unwrap();
    assert_eq!((report.form, report.retries()), (Form::Binary, 1));
    assert_eq!(got, want);
}

fn a_permanent_reduce_crash_names_the_key_range() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    for retries in [0, 2] {
        let args = ["faulty-reduce", "abort", "2"];
        let err = clean(|| run(&args, &files, 4, Some(8 << 10), retries)).unwrap_err();
        let Error::ReducerDied {
            partition,
            partitions,
            death,
            attempts,
        } = &err
        else {
            panic!("{err}");
        };
        assert_eq!((*partition, *partitions), (2, 4), "{err}");
        assert_eq!(
            (*death, *attempts),
            (Death::Signal(libc::SIGABRT), retries + 1)
        );
        let message = err.to_string();
        assert!(
            message.contains("key range 3 of 4") && message.contains("SIGABRT"),
            "{message}"
        );
    }
}

fn a_reduce_worker_killed_mid_run_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    let want = plain(&files, 2);
    let args = ["faulty-reduce", "hang", "0", "transient"];
    let (got, report) = clean(|| {
        std::thread::scope(|s| {
            let run = s.spawn(|| run(&args, &files, 2, Some(8 << 10), 1));
            let pid = hanging_worker(std::process::id());
            // SAFETY: `kill` has no memory-safety preconditions.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            run.join().unwrap()
        })
    })
    .unwrap();
    assert_eq!(got, want);
    let deaths: Vec<_> = report
        .tasks
        .iter()
        .filter_map(|t| Some((t.task, t.death?)))
        .collect();
    let range_0 = Task::Reduce { partition: 0 };
    assert_eq!(deaths, [(range_0, Death::Signal(libc::SIGKILL))]);
}

fn a_runtime_with_processes_runs_registered_jobs_only() {
    let dir = tempfile::tempdir().unwrap();
    let files = inputs(dir.path());
    let want = plain(&files, 2);
    for isolation in [Isolation::Threads, Isolation::Processes] {
        let runtime = Runtime::builder()
            .threads(2)
            .split_size(8 << 10)
            .isolation(isolation)
            .build()
            .unwrap();
        let mut out = Vec::new();
        let report =
            clean(|| runtime.run_registered(&registry(), "words", &[], &files, &mut out)).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), want, "{isolation:?}");
        match (isolation, report) {
            (Isolation::Threads, None) => {}
            (Isolation::Processes, Some(report)) => {
                assert!(report.splits > 2 && report.partitions == 2, "{report:?}")
            }
            (_, report) => panic!("{isolation:?}: {report:?}"),
        }
        let job = Words {
            map_fault: None,
            reduce_fault: None,
        };
        let input = Input::files(&files).unwrap();
        let plain = runtime.run(&job, &input);
        match isolation {
            Isolation::Processes => {
                let err = plain.unwrap_err();
                assert!(
                    matches!(err, Error::Config(_)) && err.to_string().contains("run_registered"),
                    "{err}"
                );
            }
            _ => assert_eq!(plain.unwrap().pairs.len(), want.lines().count()),
        }
    }
}

fn a_killed_parent_leaves_no_worker() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path());
    let mut parent = Command::new(std::env::current_exe().unwrap())
        .env(PARENT_ENV, dir.path())
        .spawn()
        .unwrap();
    let hanging = hanging_worker(parent.id());
    let workers: Vec<u32> = processes()
        .into_iter()
        .filter(|&(_, p)| p == parent.id())
        .map(|(w, _)| w)
        .collect();
    assert!(workers.contains(&hanging));
    // SAFETY: `kill` has no memory-safety preconditions.
    unsafe { libc::kill(parent.id() as i32, libc::SIGTERM) };
    let status = parent.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGTERM)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let alive = |pid: &u32| stat_field(*pid, 0).is_some_and(|state| state != "Z");
    while workers.iter().any(alive) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let alive: Vec<&u32> = workers.iter().filter(|w| alive(w)).collect();
    assert!(alive.is_empty(), "workers {alive:?} outlived their parent");
}
