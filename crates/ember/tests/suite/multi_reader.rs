//! An input of several readers (`Input::readers`, one part per reader, as
//! a remote file system's files are read) gives what the same files give
//! memory-mapped: the same pairs, with each split's part and offset, on
//! any thread count and chunk size; a part that ends at another length
//! than it was said to have fails the run.

use std::io::{Cursor, Read};
use std::path::PathBuf;

use ember::{Error, Input, RunOptions, Runtime};

use crate::placed::Placed;
use proptest::prelude::*;

/// Writes `files` into a fresh folder; returns it and the paths, in order.
fn write(files: &[Vec<u8>]) -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..files.len())
        .map(|i| dir.path().join(format!("f{i}.txt")))
        .collect();
    for (p, data) in paths.iter().zip(files) {
        std::fs::write(p, data).unwrap();
    }
    (dir, paths)
}

/// The files as readers of in-memory copies, with their lengths if `known`.
fn readers(files: &[Vec<u8>], known: bool) -> Input<'static> {
    Input::readers(files.iter().enumerate().map(|(i, f)| {
        let len = known.then_some(f.len() as u64);
        (format!("f{i}.txt"), Cursor::new(f.clone()), len)
    }))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn readers_map_as_the_files_do(
        files in proptest::collection::vec("[ab \n]{0,300}", 0..6),
        known in any::<bool>(),
    ) {
        let files: Vec<Vec<u8>> = files.into_iter().map(String::into_bytes).collect();
        let (_dir, paths) = write(&files);
        for threads in [1, 2, 4] {
            let rt = Runtime::builder().threads(threads).build().unwrap();
            let mapped = rt.run_with(&Placed, &Input::files(&paths).unwrap(),
                &RunOptions::default().split_size(16)).unwrap();
            for chunk in [1, 7, 64, 1 << 20] {
                let opts = RunOptions::default().split_size(16).chunk_size(chunk);
                let input = readers(&files, known);
                prop_assert_eq!(input.is_streamed(), !files.is_empty());
                let streamed = rt.run_with(&Placed, &input, &opts).unwrap();
                prop_assert_eq!(&streamed.pairs, &mapped.pairs,
                    "{} threads, chunks of {}", threads, chunk);
                let total: usize = files.iter().map(Vec::len).sum();
                prop_assert_eq!(streamed.stats.input_bytes, total as u64);
            }
        }
    }
}

/// Readers of different types, boxed, in one input: a file and bytes.
#[test]
fn readers_of_different_types_mix() {
    let (_dir, paths) = write(&[b"a b\n".to_vec()]);
    let file: Box<dyn Read + Send> = Box::new(std::fs::File::open(&paths[0]).unwrap());
    let bytes: Box<dyn Read + Send> = Box::new(Cursor::new(b"b c".to_vec()));
    let input = Input::readers([("f0.txt", file, Some(4)), ("mem", bytes, None)]);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let out = rt.run(&Placed, &input).unwrap();
    let keys: Vec<String> = out
        .pairs
        .iter()
        .map(|(k, _)| String::from_utf8_lossy(k.as_bytes()).into_owned())
        .collect();
    assert_eq!(keys, ["0:0:a", "0:2:b", "1:0:b", "1:2:c"]);
    assert_eq!(input.part_name(1), std::path::Path::new("mem"));
}

/// A part shorter or longer than its stated length is an input that
/// changed (a remote file appended to or cut while it was read), naming
/// the part; one without a stated length is read to its end.
#[test]
fn a_part_of_another_length_than_stated_fails_the_run() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let opts = RunOptions::default().chunk_size(4);
    for stated in [5, 20] {
        let input = Input::readers([
            ("ok", Cursor::new(b"a b c d\n".to_vec()), Some(8)),
            (
                "short",
                Cursor::new(b"a b c d e f\n".to_vec()),
                Some(stated),
            ),
        ]);
        let err = rt.run_with(&Placed, &input, &opts).unwrap_err();
        match err {
            Error::InputChanged { path, was, now } => {
                assert_eq!(path, PathBuf::from("short"));
                assert_eq!((was, now), (stated, 12));
            }
            other => panic!("stated {stated}: {other}"),
        }
    }
}

/// A streamed input is read once; no readers at all is an empty input.
#[test]
fn readers_are_taken_once_and_none_is_empty() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let input = readers(&[b"x y".to_vec(), b"z".to_vec()], true);
    assert_eq!(rt.run(&Placed, &input).unwrap().pairs.len(), 3);
    let again = rt.run(&Placed, &input).unwrap_err().to_string();
    assert!(again.contains("already read"), "{again}");
    let none = Input::readers(Vec::<(String, Cursor<Vec<u8>>, Option<u64>)>::new());
    assert!(rt.run(&Placed, &none).unwrap().pairs.is_empty());
}
