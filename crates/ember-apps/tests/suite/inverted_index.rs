//! The inverted index on ember equals the sequential one, for files and
//! lines, any thread count and split size.

use std::path::{Path, PathBuf};

use ember::{Bytes, ContainerKind, Input, RunOptions, Runtime};
use ember_apps::inverted_index::{
    build, doc_name, sequential, sequential_partitioned, write_docs, DocId, Docs, Index,
};
use ember_apps::text::{text, TextSpec};

const THREADS: [usize; 3] = [1, 2, 7];
/// A tiny split size (a few words per split), a middling one, the default.
const SPLITS: [Option<usize>; 3] = [Some(7), Some(4096), None];

fn spec(size: u64, vocab: usize, seed: u64) -> TextSpec {
    TextSpec {
        size,
        vocab,
        zipf: 1.0,
        seed,
    }
}

/// Checks ember against the sequential index for every thread count and
/// split size, with a mapped input's pages kept and let go as they are
/// mapped (every run after the first then reads pages a run let go);
/// returns the index.
fn check_all(input: &Input<'_>, docs: Docs) -> Index {
    let parts: Vec<&[u8]> = (0..input.parts()).map(|p| input.part_bytes(p)).collect();
    let want = sequential(&parts, docs).unwrap();
    assert!(
        sequential_partitioned(&parts, docs).unwrap() == want,
        "{docs:?}: the partitioned sequential index differs"
    );
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for (split_size, release) in SPLITS.into_iter().flat_map(|s| [(s, false), (s, true)]) {
            let opts = RunOptions::default()
                .split_size(split_size)
                .release_mapped(release);
            let got = build(&rt, input, docs, &opts).unwrap();
            assert!(
                got.index == want,
                "{docs:?}, {threads} threads, split {split_size:?}, release {release}: \
                 ember differs"
            );
            assert_eq!(got.stats.distinct_keys, want.len() as u64);
        }
    }
    want
}

fn as_strings(index: &Index) -> Vec<(String, Vec<DocId>)> {
    index
        .iter()
        .map(|(w, ids)| {
            (
                String::from_utf8(w.as_bytes().to_vec()).unwrap(),
                ids.clone(),
            )
        })
        .collect()
}

/// A fresh, empty scratch folder for one test, removed when dropped
/// (when the test fails too).
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("ember-ii-")
        .tempdir()
        .unwrap()
}

fn sorted_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

#[test]
fn lines_by_hand() {
    // Upper case folds, repeats in a line count once, empty lines and a
    // last line without a newline are documents.
    let text = b"a b A\nB c\n\n\r\nc, a-c\nzz";
    let want = vec![
        ("a".to_string(), vec![0, 4]),
        ("b".to_string(), vec![0, 1]),
        ("c".to_string(), vec![1, 4]),
        ("zz".to_string(), vec![5]),
    ];
    let got = check_all(&Input::bytes(text), Docs::Lines);
    assert_eq!(as_strings(&got), want);
}

#[test]
fn lines_of_generated_text() {
    for (size, vocab, seed) in [(60_000, 300, 1), (150_000, 5_000, 2), (1, 10, 3)] {
        let data = text(&spec(size, vocab, seed));
        let index = check_all(&Input::bytes(&data), Docs::Lines);
        let lines = data.iter().filter(|&&b| b == b'\n').count() as DocId;
        assert!(index.iter().all(|(_, ids)| ids.iter().all(|&i| i < lines)));
    }
    // Without a final newline, more than one line block (16 KiB).
    let mut data = text(&spec(70_000, 2_000, 4));
    data.pop();
    check_all(&Input::bytes(&data), Docs::Lines);
}

#[test]
fn every_container_gives_the_same_index() {
    let data = text(&spec(200_000, 3000, 21));
    let input = Input::bytes(&data);
    for docs in [Docs::Lines, Docs::Files] {
        let want = sequential(&[&data], docs).unwrap();
        for threads in [2, 3] {
            let rt = Runtime::builder().threads(threads).build().unwrap();
            for container in [
                ContainerKind::Auto,
                ContainerKind::Hash,
                ContainerKind::HashTree,
                ContainerKind::Append,
                ContainerKind::Intern,
            ] {
                let opts = RunOptions::default().split_size(1000).container(container);
                let got = build(&rt, &input, docs, &opts).unwrap();
                assert!(
                    got.index == want,
                    "{docs:?}, {threads} threads, {container}"
                );
            }
        }
    }
}

#[test]
fn empty_input_has_an_empty_index() {
    assert!(check_all(&Input::bytes(b""), Docs::Lines).is_empty());
    assert!(check_all(&Input::bytes(b""), Docs::Files).is_empty());
}

#[test]
fn files_of_generated_docs() {
    let spec = spec(120_000, 1_000, 5);
    let scratch = scratch();
    let dir = scratch.path();
    write_docs(&spec, 9, dir, |_| {}).unwrap();
    let files = sorted_files(dir);
    let names: Vec<String> = (0..9).map(|i| doc_name(i, 9)).collect();
    let got_names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(got_names, names);
    // The documents are the corpus cut at line boundaries.
    let contents: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert_eq!(contents.concat(), text(&spec));
    for c in &contents {
        assert!(c.ends_with(b"\n"));
        assert!(
            (c.len() as u64).abs_diff(spec.size / 9) < 400,
            "{}",
            c.len()
        );
    }
    let input = Input::files(&files).unwrap();
    let by_file = check_all(&input, Docs::Files);
    // Frequent words occur in every file.
    assert!(by_file
        .iter()
        .any(|(_, ids)| ids == &(0..9).collect::<Vec<_>>()));
    // Lines numbered across the files.
    let by_line = check_all(&input, Docs::Lines);
    let whole = sequential(&[&text(&spec)], Docs::Lines).unwrap();
    assert!(by_line == whole);
}

#[test]
fn more_documents_than_lines_leaves_empty_files() {
    let spec = spec(200, 50, 6);
    let scratch = scratch();
    let dir = scratch.path();
    write_docs(&spec, 100, dir, |_| {}).unwrap();
    let files = sorted_files(dir);
    assert_eq!(files.len(), 100);
    let lines = text(&spec).iter().filter(|&&b| b == b'\n').count();
    let sizes: Vec<u64> = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .collect();
    assert_eq!(sizes.iter().filter(|&&s| s > 0).count(), lines);
    let index = check_all(&Input::files(&files).unwrap(), Docs::Files);
    let last = index.iter().flat_map(|(_, ids)| ids).max().unwrap();
    assert_eq!(*last as usize, lines - 1);
}

#[test]
fn zero_documents_is_an_error() {
    let err = write_docs(&spec(10, 10, 1), 0, scratch().path(), |_| {}).unwrap_err();
    assert!(err.to_string().contains("at least 1"), "{err}");
}

#[test]
fn words_are_byte_strings_not_utf8() {
    // Non-ASCII bytes separate words; long words are kept whole.
    let text = b"caf\xc3\xa9 averyveryverylongwordindeed\n\xff\xfecaf x\n";
    let got = check_all(&Input::bytes(text), Docs::Lines);
    let want: Vec<(Bytes, Vec<DocId>)> = vec![
        (Bytes::from("averyveryverylongwordindeed"), vec![0]),
        (Bytes::from("caf"), vec![0, 1]),
        (Bytes::from("x"), vec![1]),
    ];
    assert_eq!(got, want);
}

/// The partitioned sequential baseline equals the plain one with many
/// buckets too (one per MiB of input: 4 here), lines and files alike.
#[test]
fn the_partitioned_sequential_index_equals_the_plain_one() {
    let data = text(&spec(4 << 20, 50_000, 9));
    let (a, b) = data.split_at(data.len() / 3);
    for docs in [Docs::Lines, Docs::Files] {
        let parts: [&[u8]; 2] = [a, b];
        let want = sequential(&parts, docs).unwrap();
        assert!(want.len() > 40_000);
        assert!(
            sequential_partitioned(&parts, docs).unwrap() == want,
            "{docs:?}"
        );
    }
}
