//! A file that changes while a run reads it (truncated, cut to a page,
//! grown) fails the run with `Error::InputChanged` naming it, mapped or
//! streamed; never a SIGBUS, never a partial output. The runtime's next run
//! works. A SIGBUS that is not ember's still kills the process.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use ember::tune::{Ingest, Mode};
use ember::{
    Emit, Error, Input, Job, MapOnlyJob, MapResult, Records, RunOptions, Runtime, Split, Sum,
};

/// What a job does to its input file in its first `map` call.
#[derive(Clone, Copy)]
enum Change {
    /// Nothing.
    None,
    /// Truncates it to this length.
    Cut(u64),
    /// Appends this many bytes.
    Grow(usize),
}

/// Counts bytes, changing the file as `change` says in its first `map`.
struct ByteCount {
    path: PathBuf,
    change: Change,
    done: AtomicBool,
}

impl ByteCount {
    fn new(path: &Path, change: Change) -> Self {
        ByteCount {
            path: path.to_path_buf(),
            change,
            done: AtomicBool::new(false),
        }
    }

    fn first_map(&self) {
        if self.done.swap(true, Ordering::SeqCst) {
            return;
        }
        let mut file = OpenOptions::new().append(true).open(&self.path).unwrap();
        match self.change {
            Change::None => {}
            Change::Cut(len) => file.set_len(len).unwrap(),
            Change::Grow(n) => file.write_all(&vec![b'z'; n]).unwrap(),
        }
    }
}

impl Job for ByteCount {
    type Key = u8;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Lines
    }

    fn map<E: Emit<u8, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        self.first_map();
        for &b in split.data {
            emit.emit(b, 1);
        }
        Ok(())
    }

    fn reduce(&self, _key: &u8, n: u64) -> u64 {
        n
    }
}

impl MapOnlyJob for ByteCount {
    type Key = u8;
    type Value = u64;

    fn records(&self) -> Records {
        Records::Lines
    }

    fn map(&self, split: Split<'_>, out: &mut Vec<(u8, u64)>) -> MapResult {
        self.first_map();
        out.push((
            split.data.first().copied().unwrap_or(0),
            split.data.len() as u64,
        ));
        Ok(())
    }
}

/// 1 MiB of lines `abc...` (256 pages, many 4 KiB splits).
const LEN: usize = 1 << 20;

fn write_input(dir: &Path, name: &str) -> PathBuf {
    let line = b"the quick brown fox jumps over the lazy dog\n";
    let data: Vec<u8> = line.iter().copied().cycle().take(LEN).collect();
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    path
}

fn opts(mode: Mode) -> RunOptions {
    RunOptions::default()
        .split_size(4096)
        .chunk_size(64 << 10)
        .mode(mode)
}

/// Asserts that `err` is `InputChanged` for `path`, from `was` bytes.
fn assert_changed(err: &Error, path: &Path, was: u64) -> u64 {
    match err {
        Error::InputChanged {
            path: p,
            was: w,
            now,
        } => {
            assert_eq!(p, path);
            assert_eq!(*w, was);
            let text = err.to_string();
            assert!(text.contains(&*path.to_string_lossy()), "{text}");
            assert!(text.contains("changed while it was being read"), "{text}");
            *now
        }
        other => panic!("expected InputChanged, got {other}"),
    }
}

/// After a failed run: the same runtime counts a fresh file right.
fn still_works(rt: &Runtime, dir: &Path, how: Ingest) {
    let path = write_input(dir, "fresh.txt");
    let input = Input::open([&path], how).unwrap();
    let out = rt
        .run_with(
            &ByteCount::new(&path, Change::None),
            &input,
            &opts(Mode::Auto),
        )
        .unwrap();
    let total: u64 = out.pairs.iter().map(|p| p.1).sum();
    assert_eq!(total, LEN as u64);
    let newlines = out.pairs.iter().find(|p| p.0 == b'\n').unwrap().1;
    assert_eq!(newlines, (LEN / 44) as u64);
}

#[test]
fn a_mapped_file_truncated_during_the_run_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for threads in [1, 2, 3] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for mode in [Mode::Barrier, Mode::Pipelined] {
            for cut in [0, 4096 * 100, LEN as u64 - 100] {
                let path = write_input(dir.path(), "big.txt");
                let input = Input::open([&path], Ingest::Mmap).unwrap();
                assert!(input.is_mapped());
                let job = ByteCount::new(&path, Change::Cut(cut));
                let err = rt.run_with(&job, &input, &opts(mode)).unwrap_err();
                assert_eq!(assert_changed(&err, &path, LEN as u64), cut);
                // The input stays changed; the runtime is fine.
                assert!(input.check_unchanged().is_err());
                still_works(&rt, dir.path(), Ingest::Mmap);
            }
        }
    }
}

/// Many mapped files (more than a block of the guard's registry), one of
/// them cut: the error names that one.
#[test]
fn the_changed_file_of_many_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let paths: Vec<PathBuf> = (0..150)
        .map(|i| {
            let path = dir.path().join(format!("doc{i}.txt"));
            std::fs::write(&path, vec![b'x'; 3 * 4096 + i]).unwrap();
            path
        })
        .collect();
    let input = Input::files(&paths).unwrap();
    let job = ByteCount::new(&paths[100], Change::Cut(5));
    let err = rt.run_with(&job, &input, &opts(Mode::Auto)).unwrap_err();
    assert_eq!(assert_changed(&err, &paths[100], 3 * 4096 + 100), 5);
    drop(input);
    still_works(&rt, dir.path(), Ingest::Mmap);
}

#[test]
fn a_map_only_run_over_a_truncated_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let path = write_input(dir.path(), "map-only.txt");
    let input = Input::file(&path).unwrap();
    let job = ByteCount::new(&path, Change::Cut(10));
    let err = rt
        .run_map_only(&job, &input, &opts(Mode::Auto))
        .unwrap_err();
    assert_eq!(assert_changed(&err, &path, LEN as u64), 10);
    still_works(&rt, dir.path(), Ingest::Mmap);
}

#[test]
fn a_mapped_file_that_grows_during_the_run_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let rt = Runtime::builder().threads(2).build().unwrap();
    let path = write_input(dir.path(), "grows.txt");
    let input = Input::file(&path).unwrap();
    let job = ByteCount::new(&path, Change::Grow(10));
    let err = rt.run_with(&job, &input, &opts(Mode::Auto)).unwrap_err();
    assert_eq!(assert_changed(&err, &path, LEN as u64), LEN as u64 + 10);
}

#[test]
fn a_streamed_file_that_shrinks_during_the_run_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for threads in [1, 2, 3] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let path = write_input(dir.path(), "streamed.txt");
        let input = Input::open([&path], Ingest::Chunked).unwrap();
        assert!(input.is_streamed());
        let job = ByteCount::new(&path, Change::Cut(4096));
        let err = rt.run_with(&job, &input, &opts(Mode::Auto)).unwrap_err();
        // Cut at 4096 after at least one whole chunk was read.
        assert!(assert_changed(&err, &path, LEN as u64) >= 64 << 10);
        still_works(&rt, dir.path(), Ingest::Chunked);
    }
}

#[test]
fn an_unchanged_file_passes_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_input(dir.path(), "same.txt");
    let input = Input::file(&path).unwrap();
    assert!(input.check_unchanged().is_ok());
    // Renamed over: the map still holds the file it was made from.
    std::fs::write(dir.path().join("other.txt"), b"other\n").unwrap();
    std::fs::rename(dir.path().join("other.txt"), &path).unwrap();
    assert!(input.check_unchanged().is_ok());
    assert_eq!(input.part_bytes(0).len(), LEN);
}

/// Set in the child process of `a_foreign_sigbus_still_kills`.
const CHILD: &str = "EMBER_TEST_FOREIGN_SIGBUS";

/// A SIGBUS outside ember's maps (a map of its own, cut short) kills the
/// process by the signal, as it would without ember: run in a child.
#[test]
fn a_foreign_sigbus_still_kills() {
    if std::env::var_os(CHILD).is_some() {
        foreign_sigbus();
    }
    let me = std::env::current_exe().unwrap();
    let test = crate::test_name(module_path!(), "a_foreign_sigbus_still_kills");
    let out = std::process::Command::new(me)
        .args(["--exact", &test, "--nocapture"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGBUS),
        "{:?} {stderr}",
        out.status
    );
    assert!(stderr.contains("ember's maps are guarded"), "{stderr}");
}

/// In the child: guards an input (the handler is installed and a map is
/// registered), then reads a page cut off a map of its own.
fn foreign_sigbus() -> ! {
    let dir = tempfile::tempdir().unwrap();
    let ours = write_input(dir.path(), "ours.txt");
    let input = Input::file(&ours).unwrap();
    let theirs = write_input(dir.path(), "theirs.txt");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&theirs)
        .unwrap();
    // SAFETY: the test cuts the file short on purpose to fault.
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    eprintln!("ember's maps are guarded: {}", input.parts());
    file.set_len(0).unwrap();
    // SAFETY: a volatile read of a mapped byte; the page is gone, so this
    // raises SIGBUS.
    let byte = unsafe { std::ptr::read_volatile(map.as_ptr().add(LEN / 2)) };
    panic!("read {byte} past the end of a truncated file without a signal");
}
