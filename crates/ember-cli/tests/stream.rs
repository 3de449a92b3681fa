//! `ember stream map|combine|reduce` as separate processes, with the
//! shuffle between them done here (lines sorted by key, as Hadoop's
//! shuffle sorts them), against `ember wordcount` and `ember
//! inverted-index` on the same files.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use support::ember;

/// Runs `cmd` with `input` on standard input; its standard output, or a
/// panic with its standard error.
fn pipe(mut cmd: Command, input: &[u8]) -> Vec<u8> {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn stream(args: &[&str]) -> Command {
    let mut cmd = ember();
    cmd.arg("stream").args(args);
    cmd
}

/// Lines sorted by the key's bytes (the text before the first tab).
fn shuffle(lines: &[u8]) -> Vec<u8> {
    let mut v: Vec<&[u8]> = lines.split_inclusive(|&b| b == b'\n').collect();
    v.sort_by_key(|l| &l[..l.iter().position(|&b| b == b'\t').unwrap()]);
    v.concat()
}

fn sorted_lines(out: &[u8]) -> Vec<String> {
    let mut v: Vec<String> = String::from_utf8_lossy(out)
        .lines()
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

/// Text files with upper case, punctuation, non-ASCII and invalid UTF-8
/// bytes, a file without a final newline and an empty one.
fn corpus(dir: &Path) -> Vec<PathBuf> {
    let words = [
        "the",
        "Cat",
        "sat",
        "on",
        "mat",
        "DOG",
        "caf\u{e9}",
        "x\u{ff}y",
        "a,b",
    ];
    let mut files = Vec::new();
    for f in 0..4 {
        let mut text = Vec::new();
        for i in 0..(400 * f + 3) {
            let w = words[(i * 7 + f * 3 + i / 5) % words.len()];
            text.extend_from_slice(w.as_bytes());
            text.extend_from_slice(if i % 11 == 0 { b"\n" } else { b" " });
            if i % 97 == 0 {
                text.extend_from_slice(b"\xff\xfe\t");
            }
        }
        let path = dir.join(format!("doc {f}.txt"));
        std::fs::write(&path, &text).unwrap();
        files.push(path);
    }
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, b"").unwrap();
    files.push(empty);
    files
}

/// Each file mapped by its own process (the last one cut in two at a line
/// boundary, as an engine splits a large file), shuffled, reduced.
fn map_outputs(job: &str, files: &[PathBuf], threads: &str, doc: bool) -> Vec<u8> {
    let mut mapped = Vec::new();
    for file in files {
        let data = std::fs::read(file).unwrap();
        let mid = data[..data.len() / 2]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        for piece in [&data[..mid], &data[mid..]] {
            let mut cmd = stream(&["map", "--threads", threads, job]);
            if doc {
                cmd.args(["--doc", file.to_str().unwrap()]);
            }
            mapped.extend(pipe(cmd, piece));
        }
    }
    mapped
}

#[test]
fn wordcount_through_the_contract_equals_ember_wordcount() {
    let dir = tempfile::tempdir().unwrap();
    let files = corpus(dir.path());
    let want = ember()
        .arg("wordcount")
        .args(&files)
        .args(["-o", "-"])
        .output()
        .unwrap();
    assert!(want.status.success());
    for (threads, combine) in [("1", false), ("2", true), ("3", false)] {
        let mut mapped = map_outputs("wordcount", &files, threads, false);
        if combine {
            mapped = pipe(stream(&["combine", "wordcount"]), &mapped);
        }
        let reduced = pipe(stream(&["reduce", "wordcount"]), &shuffle(&mapped));
        assert_eq!(
            sorted_lines(&reduced),
            sorted_lines(&want.stdout),
            "threads {threads}"
        );
    }
}

#[test]
fn inverted_index_through_the_contract_equals_ember_inverted_index() {
    let dir = tempfile::tempdir().unwrap();
    let files = corpus(dir.path());
    let docs = dir.path().join("docs.tsv");
    let want = ember()
        .arg("inverted-index")
        .args(&files)
        .args(["-o", "-", "--doc-list"])
        .arg(&docs)
        .output()
        .unwrap();
    assert!(want.status.success());
    let names: Vec<String> = std::fs::read_to_string(&docs)
        .unwrap()
        .lines()
        .map(|l| l.split_once('\t').unwrap().1.to_owned())
        .collect();
    // `word<TAB>id,id` with ids as paths: the names the contract writes.
    let mut expected: Vec<String> = String::from_utf8(want.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (word, ids) = l.split_once('\t').unwrap();
            let mut paths: Vec<&str> = ids
                .split(',')
                .map(|i| names[i.parse::<usize>().unwrap()].as_str())
                .collect();
            paths.sort();
            format!("{word}\t{}", paths.join(","))
        })
        .collect();
    expected.sort();
    let mapped = map_outputs("inverted-index", &files, "2", true);
    let combined = pipe(stream(&["combine", "inverted-index"]), &mapped);
    let reduced = pipe(stream(&["reduce", "inverted-index"]), &shuffle(&combined));
    assert_eq!(sorted_lines(&reduced), expected);
}

#[test]
fn the_document_comes_from_hadoops_environment_and_is_escaped() {
    let mut cmd = stream(&["map", "inverted-index"]);
    cmd.env("mapreduce_map_input_file", "file:/in/a,b\tc.txt");
    let out = pipe(cmd, b"one two one");
    assert_eq!(
        out,
        b"one\tfile:/in/a\\x2cb\\tc.txt\ntwo\tfile:/in/a\\x2cb\\tc.txt\n"
    );
}

#[test]
fn bad_input_and_arguments_are_one_line_errors() {
    let cases: [(&[&str], &[u8], &str); 4] = [
        (
            &["reduce", "wordcount"],
            b"b\t1\na\t1\n",
            "line 2: keys out of order",
        ),
        (&["combine", "wordcount"], b"a\tmany\n", "line 1: bad value"),
        (
            &["map", "sorting"],
            b"",
            "unknown job 'sorting' (known: inverted-index, wordcount)",
        ),
        (
            &["map", "wordcount", "--doc", "x"],
            b"",
            "wordcount: takes no arguments",
        ),
    ];
    for (args, input, want) in cases {
        let mut child = stream(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // A process that fails before reading closes its input early.
        let _ = child.stdin.take().unwrap().write_all(input);
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("ember: ") && err.contains(want),
            "{args:?}: {err}"
        );
    }
}
