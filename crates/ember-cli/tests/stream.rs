//! `ember stream map|combine|reduce` as separate processes, with the
//! shuffle between them done here (lines sorted by key, as Hadoop's
//! shuffle sorts them), against `ember wordcount`, `ember inverted-index`
//! and `ember kmeans` on the same files, and string match against a plain
//! count.

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
    let cases: [(&[&str], &[u8], &str); 6] = [
        (
            &["reduce", "wordcount"],
            b"b\t1\na\t1\n",
            "line 2: keys out of order",
        ),
        (&["combine", "wordcount"], b"a\tmany\n", "line 1: bad value"),
        (
            &["map", "sorting"],
            b"",
            "unknown job 'sorting' (known: inverted-index, kmeans, string-match, wordcount)",
        ),
        (
            &["map", "wordcount", "--doc", "x"],
            b"",
            "wordcount: takes no arguments",
        ),
        (&["map", "kmeans"], b"", "kmeans: expected --means FILE"),
        (
            &["map", "string-match", "a\nb"],
            b"",
            "target word 1 (\"a\\nb\") has a line break",
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

#[test]
fn string_match_through_the_contract_counts_the_lines_equal_to_each_target() {
    let targets = ["ferrari", "caf\u{e9}", "absent"];
    let words = ["ferrari", "fer", "caf\u{e9}", "ferrarix", "x\ty", ""];
    let mut keys = Vec::new();
    for i in 0..3000usize {
        keys.extend_from_slice(words[(i * 7 + i / 13) % words.len()].as_bytes());
        keys.extend_from_slice(if i % 5 == 0 { b"\r\n" } else { b"\n" });
    }
    let text = String::from_utf8(keys.clone()).unwrap();
    let mut want: Vec<String> = targets
        .iter()
        .map(|t| {
            let n = text.lines().filter(|l| l == t).count();
            format!("{t}\t{n}")
        })
        .collect();
    want.sort();
    let mid = keys[..keys.len() / 2]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap()
        + 1;
    for threads in ["1", "2", "3"] {
        let mut mapped = Vec::new();
        for piece in [&keys[..mid], &keys[mid..]] {
            let mut cmd = stream(&["map", "--threads", threads, "string-match"]);
            cmd.args(targets);
            mapped.extend(pipe(cmd, piece));
        }
        let mut reduce = stream(&["reduce", "string-match"]);
        reduce.args(targets);
        let reduced = pipe(reduce, &shuffle(&mapped));
        assert_eq!(sorted_lines(&reduced), want, "threads {threads}");
    }
}

/// The points of a matrix file as text lines, `x,y,...`.
fn points_text(matrix: &Path) -> (Vec<u8>, usize) {
    let bytes = std::fs::read(matrix).unwrap();
    let m = ember_apps::matrix::Matrix::parse(&bytes, "points").unwrap();
    let mut text = Vec::new();
    let sep = if m.cols.is_multiple_of(2) { " " } else { "," };
    for row in m.values().chunks(m.cols) {
        let row: Vec<String> = row.iter().map(i32::to_string).collect();
        text.extend_from_slice(row.join(sep).as_bytes());
        text.push(b'\n');
    }
    (text, m.cols)
}

/// `ember kmeans -o -` lines, `cluster<TAB>size<TAB>x<TAB>y...`, as the
/// streaming output's `cluster<TAB>x,y,...`.
fn kmeans_means(out: &[u8]) -> Vec<String> {
    let lines = String::from_utf8_lossy(out)
        .lines()
        .map(|l| {
            let fields: Vec<&str> = l.split('\t').collect();
            format!("{}\t{}", fields[0], fields[2..].join(","))
        })
        .collect::<Vec<_>>();
    sorted_lines(lines.join("\n").as_bytes())
}

#[test]
fn kmeans_rounds_through_the_contract_equal_ember_kmeans() {
    let dir = tempfile::tempdir().unwrap();
    for (dims, k) in [(3, 5), (2, 1), (4, 9)] {
        let matrix = dir.path().join("points.mat");
        let gen = ember()
            .args(["gen", "kmeans", "--points", "700", "--max", "300"])
            .args(["--dims", &dims.to_string(), "-o"])
            .arg(&matrix)
            .output()
            .unwrap();
        assert!(gen.status.success());
        let want = ember()
            .arg("kmeans")
            .arg(&matrix)
            .args(["-k", &k.to_string(), "-o", "-"])
            .output()
            .unwrap();
        assert!(want.status.success());
        let (points, _) = points_text(&matrix);
        // The first k points are the initial means, as `ember kmeans` takes them.
        let first_k: Vec<&[u8]> = points.split_inclusive(|&b| b == b'\n').take(k).collect();
        let means = dir.path().join("means.txt");
        std::fs::write(&means, first_k.concat()).unwrap();
        let mid = points[..points.len() / 3]
            .iter()
            .rposition(|&b| b == b'\n')
            .unwrap()
            + 1;
        let m = means.to_str().unwrap();
        let mut rounds = 0;
        loop {
            let mut mapped = Vec::new();
            for (piece, threads) in [(&points[..mid], "1"), (&points[mid..], "2")] {
                let cmd = stream(&["map", "--threads", threads, "kmeans", "--means", m]);
                mapped.extend(pipe(cmd, piece));
            }
            let combined = pipe(stream(&["combine", "kmeans", "--means", m]), &mapped);
            let reduce = stream(&["reduce", "kmeans", "--means", m]);
            let next = pipe(reduce, &shuffle(&combined));
            rounds += 1;
            if std::fs::read(&means).unwrap() == next {
                break;
            }
            std::fs::write(&means, next).unwrap();
            assert!(rounds < 100, "no convergence");
        }
        let got = sorted_lines(&std::fs::read(&means).unwrap());
        assert_eq!(got, kmeans_means(&want.stdout), "dims {dims}, k {k}");
    }
}
