//! A panic in user code that reads or cuts the input (a streamed input's
//! reader, or the job's record splitter, run by the ingest thread, while a
//! chunk is planned, or while an in-memory input is cut into splits) ends
//! the run with an error, and the runtime's next run works.

use std::io::{Cursor, Read};

use ember::{
    Bytes, Emit, Error, Input, Job, MapResult, Phase, Records, RunOptions, Runtime, Split, Sum,
};

/// Counts space-separated words; cuts records with the given separator.
struct Words(fn(u8) -> bool);

impl Job for Words {
    type Key = Bytes;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Separator(self.0)
    }

    fn map<E: Emit<Bytes, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for w in split.data.split(|&b| b == b' ').filter(|w| !w.is_empty()) {
            emit.emit(w, 1);
        }
        Ok(())
    }

    fn reduce(&self, _key: &Bytes, n: u64) -> u64 {
        n
    }
}

fn space(b: u8) -> bool {
    b == b' '
}

/// A separator that panics on `!`.
fn bang(b: u8) -> bool {
    assert!(b != b'!', "the separator saw '!'");
    b == b' '
}

/// Reads `data`, then panics instead of returning the bytes after `at`.
struct PanicsAt {
    data: Cursor<Vec<u8>>,
    at: u64,
}

impl Read for PanicsAt {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.data.position() >= self.at {
            panic!("the reader broke at byte {}", self.at);
        }
        let room = (self.at - self.data.position()) as usize;
        let n = buf.len().min(room);
        self.data.read(&mut buf[..n])
    }
}

fn text() -> Vec<u8> {
    b"ab cd ef ".repeat(100)
}

fn opts(chunk: usize, split: usize) -> RunOptions {
    RunOptions::default().chunk_size(chunk).split_size(split)
}

/// A good streamed run on `rt` gives the right counts.
fn assert_streamed_run_works(rt: &Runtime) {
    let input = Input::reader("good", Cursor::new(text()));
    let out = rt.run_with(&Words(space), &input, &opts(64, 16)).unwrap();
    let counts: Vec<(&[u8], u64)> = out.pairs.iter().map(|(k, n)| (k.as_bytes(), *n)).collect();
    assert_eq!(counts, [(&b"ab"[..], 100), (b"cd", 100), (b"ef", 100)]);
}

#[test]
fn a_reader_panic_is_an_error_naming_the_input() {
    for threads in [1, 2] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for at in [0, 10, 200] {
            let reader = PanicsAt {
                data: Cursor::new(text()),
                at,
            };
            let input = Input::reader("broken.txt", reader);
            let err = rt
                .run_with(&Words(space), &input, &opts(64, 16))
                .expect_err("a panicking reader fails the run");
            assert!(matches!(err, Error::Io { .. }), "{err:?}");
            assert_eq!(
                err.to_string(),
                format!(
                    "cannot read 'broken.txt': the reader panicked: the reader broke at byte {at}"
                )
            );
            assert_streamed_run_works(&rt);
        }
    }
}

/// `err` is the split phase's error for [`bang`]'s panic.
fn assert_is_the_separator_panic(err: &Error) {
    assert!(
        matches!(
            err,
            Error::Panicked {
                phase: Phase::Split,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "the job's split function panicked: the separator saw '!'"
    );
}

#[test]
fn a_separator_panic_while_reading_is_a_split_error() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    // The first chunk is the first 64 bytes; cutting it at its last record
    // boundary looks at its last byte first.
    let mut data = text();
    data[63] = b'!';
    let input = Input::reader("bang.txt", Cursor::new(data));
    let err = rt
        .run_with(&Words(bang), &input, &opts(64, 1 << 20))
        .expect_err("a panicking separator fails the run");
    assert_is_the_separator_panic(&err);
    assert_streamed_run_works(&rt);
}

#[test]
fn a_separator_panic_while_planning_a_chunk_is_a_split_error() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    // One chunk holds the whole input (no cut while reading); planning its
    // 16-byte splits scans forward from byte 16 first.
    let mut data = text();
    data[16] = b'!';
    let input = Input::reader("bang.txt", Cursor::new(data));
    let err = rt
        .run_with(&Words(bang), &input, &opts(1 << 20, 16))
        .expect_err("a panicking separator fails the run");
    assert_is_the_separator_panic(&err);
    assert_streamed_run_works(&rt);
}

#[test]
fn a_separator_panic_while_planning_in_memory_splits_is_a_split_error() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let mut data = b"ab cd ".repeat(50);
    let opts = RunOptions::default().split_size(16);
    // Planning looks for the first boundary at or after byte 16.
    data[16] = b'!';
    let err = rt
        .run_with(&Words(bang), &Input::bytes(&data), &opts)
        .expect_err("a panicking separator fails the run");
    assert_is_the_separator_panic(&err);
    // The runtime still works, with the same job on clean input.
    data[16] = b'x';
    let out = rt
        .run_with(&Words(bang), &Input::bytes(&data), &opts)
        .unwrap();
    let total: u64 = out.pairs.iter().map(|p| p.1).sum();
    assert_eq!(total, 100);
}
