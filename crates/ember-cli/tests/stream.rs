//! `ember stream map|combine|reduce` as separate processes, with the
//! shuffle between them done here (lines sorted by key, as Hadoop's
//! shuffle sorts them, or by `LC_ALL=C sort`), against `ember wordcount`,
//! `ember inverted-index`, `ember kmeans`, `ember linear-regression`,
//! `ember histogram` and `ember sort` on the same files, and string match
//! against a plain count.

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

/// Each `(args, input, want)`: `ember stream ARGS` fed `input` exits 1
/// with one line on standard error, `ember: ...` containing `want`.
fn assert_one_line_errors(cases: &[(&[&str], &[u8], &str)]) {
    for &(args, input, want) in cases {
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
            "unknown job 'sorting' (known: histogram, inverted-index, inverted-index-lines, \
             kmeans, kmeans-rows, linear-regression, linear-regression-bytes, matmul-rows, \
             pca-cov, pca-mean, sort, string-match, string-match-offsets, wordcount)",
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
    assert_one_line_errors(&cases);
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

/// Runs `ember ARGS` and returns its standard output, or panics with its
/// standard error.
fn output(args: &[&str]) -> Vec<u8> {
    let out = ember().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `data` cut at `unit`-aligned places into `n` pieces of uneven sizes.
fn pieces(data: &[u8], n: usize, unit: impl Fn(&[u8], usize) -> usize) -> Vec<&[u8]> {
    let mut cuts = vec![0];
    for i in 1..n {
        cuts.push(unit(data, data.len() * i * i / (n * n)).max(*cuts.last().unwrap()));
    }
    cuts.push(data.len());
    cuts.windows(2).map(|w| &data[w[0]..w[1]]).collect()
}

/// The start of the line that holds byte `at`.
fn line_start(data: &[u8], at: usize) -> usize {
    data[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1)
}

/// Maps each piece in a process of its own, with `threads` threads.
fn map_pieces(job: &str, pieces: &[&[u8]], threads: &str) -> Vec<u8> {
    let mut mapped = Vec::new();
    for piece in pieces {
        mapped.extend(pipe(stream(&["map", "--threads", threads, job]), piece));
    }
    mapped
}

/// A few pseudo-random numbers (xorshift), for test data.
fn numbers(seed: u64) -> impl Iterator<Item = u64> {
    let mut x = seed | 1;
    std::iter::repeat_with(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    })
}

/// Points as text lines, with every separator the job reads, blank lines
/// and `\r\n` endings.
fn point_lines(points: impl Iterator<Item = (i64, i64)>) -> Vec<u8> {
    let mut text = Vec::new();
    for (i, (x, y)) in points.enumerate() {
        let sep = [" ", ",", "\t", "  "][i % 4];
        text.extend_from_slice(format!("{x}{sep}{y}").as_bytes());
        text.extend_from_slice(match i % 9 {
            0 => b"\r\n",
            4 => b"\n\n",
            _ => b"\n",
        });
    }
    text
}

/// The streaming job over text points, against the in-process job over
/// the same points.
fn assert_regression_through_the_contract(text: &[u8]) {
    let rt = ember::Runtime::builder().threads(2).build().unwrap();
    let plain = rt
        .run(&ember_apps::stream::TextPoints, &ember::Input::bytes(text))
        .unwrap();
    let sums = plain.pairs[0].1;
    let want = ember_apps::stream::linear_regression::fit_lines(&sums);
    for (n, threads, combine) in [(1, "2", false), (2, "1", true), (3, "3", false)] {
        let mut mapped = map_pieces("linear-regression", &pieces(text, n, line_start), threads);
        assert_eq!(mapped.iter().filter(|&&b| b == b'\n').count(), n);
        if combine {
            mapped = pipe(stream(&["combine", "linear-regression"]), &mapped);
        }
        let reduced = pipe(stream(&["reduce", "linear-regression"]), &shuffle(&mapped));
        assert_eq!(
            String::from_utf8(reduced).unwrap(),
            String::from_utf8(want.clone()).unwrap(),
            "{n} pieces, threads {threads}"
        );
    }
}

#[test]
fn linear_regression_of_random_text_points_equals_the_in_process_job() {
    let mut r = numbers(11);
    let mut value = move || match r.next().unwrap() % 10 {
        0 => -32768,
        1 => 32767,
        _ => (r.next().unwrap() % 65536) as i64 - 32768,
    };
    let points: Vec<(i64, i64)> = (0..5000).map(|_| (value(), value())).collect();
    assert_regression_through_the_contract(&point_lines(points.into_iter()));
}

#[test]
fn linear_regression_of_generated_points_equals_ember_linear_regression() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("points.bin");
    let bin = bin.to_str().unwrap();
    output(&[
        "gen",
        "linear-regression",
        "--size",
        "40000",
        "--seed",
        "3",
        "-o",
        bin,
    ]);
    let data = std::fs::read(bin).unwrap();
    let text = point_lines(
        data.chunks_exact(2)
            .map(|p| (i64::from(p[0] as i8), i64::from(p[1] as i8))),
    );
    assert_regression_through_the_contract(&text);
    // `ember linear-regression` prints `NAME  value` lines, then the fit
    // to six places.
    let cli = String::from_utf8(output(&["linear-regression", bin, "-t", "2"])).unwrap();
    let mapped = map_pieces("linear-regression", &pieces(&text, 2, line_start), "2");
    let reduced = pipe(stream(&["reduce", "linear-regression"]), &shuffle(&mapped));
    let reduced = String::from_utf8(reduced).unwrap();
    let value = |key: &str| {
        let line = reduced.lines().find(|l| l.split('\t').next() == Some(key));
        line.unwrap().split('\t').nth(1).unwrap().to_owned()
    };
    for name in ["N", "SX", "SY", "SXX", "SYY", "SXY"] {
        let line = cli
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name));
        let cli_value = line.unwrap().split_whitespace().nth(1).unwrap();
        assert_eq!(value(name), cli_value, "{name}");
    }
    let six = |key: &str| format!("{:.6}", value(key).parse::<f64>().unwrap());
    let fit = format!(
        "y = a + b x:  a = {}  b = {}  R^2 = {}",
        six("a"),
        six("b"),
        six("R^2")
    );
    assert!(cli.lines().any(|l| l == fit), "{fit}\n{cli}");
}

/// `r:000<TAB>count` lines, in text order, of `ember histogram -o -`
/// outputs (`red<TAB>0<TAB>count`) added up, the keys with pixels only.
fn histogram_sum(outputs: &[Vec<u8>]) -> Vec<String> {
    let mut counts = std::collections::BTreeMap::new();
    for out in outputs {
        for line in String::from_utf8_lossy(out).lines() {
            let [channel, value, n] = line.split('\t').collect::<Vec<_>>()[..] else {
                panic!("{line}");
            };
            let key = format!("{}:{:03}", &channel[..1], value.parse::<u8>().unwrap());
            *counts.entry(key).or_insert(0u64) += n.parse::<u64>().unwrap();
        }
    }
    counts
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .map(|(k, n)| format!("{k}\t{n}"))
        .collect()
}

#[test]
fn histogram_of_several_images_equals_the_sum_of_ember_histogram() {
    let dir = tempfile::tempdir().unwrap();
    // A width whose rows are padded, a narrow one with few values, a
    // larger one.
    let specs = [("301", "40", "1"), ("2", "3", "2"), ("640", "480", "3")];
    let mut images = Vec::new();
    let mut outputs = Vec::new();
    for (width, height, seed) in specs {
        let path = dir.path().join(format!("{seed}.bmp"));
        let p = path.to_str().unwrap();
        output(&[
            "gen",
            "histogram",
            "--width",
            width,
            "--height",
            height,
            "--seed",
            seed,
            "-o",
            p,
        ]);
        outputs.push(output(&["histogram", p, "-o", "-", "-t", "2"]));
        images.push(std::fs::read(&path).unwrap());
    }
    // The 768 count lines come first, the summary after them.
    let outputs: Vec<Vec<u8>> = outputs
        .iter()
        .map(|o| {
            o.split_inclusive(|&b| b == b'\n')
                .take(768)
                .collect::<Vec<_>>()
                .concat()
        })
        .collect();
    let want = histogram_sum(&outputs);
    for (threads, combine) in [("1", false), ("2", true), ("3", false)] {
        let mut mapped = Vec::new();
        for image in &images {
            mapped.extend(pipe(
                stream(&["map", "--threads", threads, "histogram"]),
                image,
            ));
        }
        if combine {
            mapped = pipe(stream(&["combine", "histogram"]), &mapped);
        }
        let reduced = pipe(stream(&["reduce", "histogram"]), &shuffle(&mapped));
        let reduced: Vec<String> = String::from_utf8(reduced)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect();
        assert_eq!(reduced, want, "threads {threads}");
    }
}

/// Lines sorted by `sort` with `LC_ALL=C`, as a shell pipeline sorts them.
fn c_sort(lines: &[u8]) -> Vec<u8> {
    let mut sort = Command::new("sort");
    sort.env("LC_ALL", "C");
    pipe(sort, lines)
}

#[test]
fn sort_through_the_contract_is_byte_identical_to_ember_sort() {
    let dir = tempfile::tempdir().unwrap();
    let records = dir.path().join("records.dat");
    let sorted = dir.path().join("sorted.dat");
    let (r, s) = (records.to_str().unwrap(), sorted.to_str().unwrap());
    output(&["gen", "sort", "--records", "7001", "--seed", "5", "-o", r]);
    output(&["sort", r, "-o", s, "-t", "2"]);
    let data = std::fs::read(&records).unwrap();
    let want = std::fs::read(&sorted).unwrap();
    let record_start = |_: &[u8], at: usize| at / 100 * 100;
    for (n, threads, combine) in [(1, "2", false), (2, "1", true), (3, "3", false)] {
        let mut mapped = map_pieces("sort", &pieces(&data, n, record_start), threads);
        assert_eq!(mapped.len(), 7001 * 202);
        if combine {
            mapped = pipe(stream(&["combine", "sort"]), &mapped);
        }
        let reduced = pipe(stream(&["reduce", "sort"]), &c_sort(&mapped));
        assert!(reduced == want, "{n} pieces, threads {threads}");
    }
}

#[test]
fn binary_inputs_that_do_not_read_are_one_line_errors() {
    let cases: [(&[&str], &[u8], &str); 5] = [
        (&["map", "histogram"], b"P6 1 1 255\n", "not a BMP file"),
        (
            &["map", "sort"],
            &[7; 150],
            "150 bytes is not a whole number of 100-byte records",
        ),
        (
            &["map", "linear-regression"],
            b"1 2\n3 4 5\n",
            "point '3 4 5': 3 numbers",
        ),
        (
            &["reduce", "linear-regression"],
            b"total\t1,1,1,1,1,1\n",
            "line 1: bad key",
        ),
        (&["reduce", "sort"], b"00\t11\n", "line 1: bad key"),
    ];
    assert_one_line_errors(&cases);
}
