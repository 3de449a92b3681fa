//! `ember stream run`: Hadoop Streaming's contract with shell and Python
//! commands. The example word count scripts give `ember wordcount`'s
//! counts whatever the mappers, reducers and split size; the sort is by
//! key bytes and stable; a failing command ends the run with one line,
//! no output file and no temporary file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

mod support;
use support::{ember, names};

const MAPPER: &str = include_str!("../../../examples/streaming/wc_mapper.py");
const REDUCER: &str = include_str!("../../../examples/streaming/wc_reducer.py");

/// A folder with the example scripts and inputs: generated text in two
/// files, a file without a trailing newline, an empty file, and a file
/// with bytes >= 0x80 (UTF-8 and not).
struct Fixture {
    dir: tempfile::TempDir,
    files: Vec<PathBuf>,
}

impl Fixture {
    fn new(text_size: &str) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("wc_mapper.py"), MAPPER).unwrap();
        std::fs::write(dir.path().join("wc_reducer.py"), REDUCER).unwrap();
        let mut files = Vec::new();
        for seed in [1, 2] {
            let f = dir.path().join(format!("text{seed}.txt"));
            let gen = ember()
                .args(["gen", "text", "--size", text_size, "--vocab", "5000"])
                .args(["--seed", &seed.to_string(), "-o"])
                .arg(&f)
                .output()
                .unwrap();
            assert!(gen.status.success(), "{gen:?}");
            files.push(f);
        }
        let extra: [(&str, &[u8]); 3] = [
            ("no-newline.txt", b"The last line\nhas no newline, The END"),
            ("empty.txt", b""),
            (
                "bytes.txt",
                b"caf\xc3\xa9 na\xefve \xff\xfeABC\n\x80\x80the\tEND\r\nd\xc3\xa9j\xc3\xa0 vu\n",
            ),
        ];
        for (name, bytes) in extra {
            let f = dir.path().join(name);
            std::fs::write(&f, bytes).unwrap();
            files.push(f);
        }
        Fixture { dir, files }
    }

    fn script(&self, name: &str) -> String {
        format!("python3 '{}'", self.dir.path().join(name).display())
    }

    /// `ember stream run` with the example scripts and `extra` options.
    fn word_count(&self, extra: &[&str]) -> Vec<u8> {
        let out = ember()
            .args(["stream", "run", "--mapper", &self.script("wc_mapper.py")])
            .args(["--reducer", &self.script("wc_reducer.py")])
            .args(extra)
            .args(&self.files)
            .output()
            .unwrap();
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        out.stdout
    }

    /// What `ember wordcount` counts in the same files.
    fn reference(&self) -> BTreeSet<Vec<u8>> {
        let path = self.dir.path().join("reference.tsv");
        let out = ember()
            .arg("wordcount")
            .args(&self.files)
            .arg("-o")
            .arg(&path)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let set = lines(&std::fs::read(&path).unwrap());
        assert!(set.len() > 1000, "{} words", set.len());
        set
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn lines(bytes: &[u8]) -> BTreeSet<Vec<u8>> {
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

#[test]
fn python_word_count_equals_ember_wordcount() {
    let fx = Fixture::new("48KiB");
    let reference = fx.reference();
    for opts in [
        &["--mappers", "2", "--reducers", "2"][..],
        &["--mappers", "1", "--reducers", "1", "--split-size", "2KiB"],
        &["--mappers", "3", "--reducers", "5", "--split-size", "7KiB"],
        &[],
    ] {
        let out = fx.word_count(opts);
        assert_eq!(lines(&out), reference, "{opts:?}");
        // Every word once: no key split between two reducers.
        assert_eq!(
            out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count(),
            reference.len()
        );
    }
}

#[test]
fn the_reducer_as_combiner_gives_the_same_counts() {
    let fx = Fixture::new("48KiB");
    let reference = fx.reference();
    let combiner = fx.script("wc_reducer.py");
    for opts in [
        &["--mappers", "2", "--reducers", "3", "--split-size", "4KiB"][..],
        // Buffers of map output smaller than a split: several combined
        // runs per mapper.
        &[
            "--reducers",
            "2",
            "--split-size",
            "64KiB",
            "--sort-buffer",
            "64KiB",
        ],
    ] {
        let out = fx.word_count(&[&["--combiner", &combiner][..], opts].concat());
        assert_eq!(lines(&out), reference, "{opts:?}");
    }
}

#[test]
fn embers_own_stream_map_and_reduce_run_as_the_commands() {
    let fx = Fixture::new("48KiB");
    let reference = fx.reference();
    let bin = env!("CARGO_BIN_EXE_ember");
    let out = ember()
        .args(["stream", "run", "--reducers", "3", "--split-size", "16KiB"])
        .args(["--mapper", &format!("'{bin}' stream map -t 1 wordcount")])
        .args(["--combiner", &format!("'{bin}' stream combine wordcount")])
        .args(["--reducer", &format!("'{bin}' stream reduce wordcount")])
        .args(&fx.files)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(lines(&out.stdout), reference);
}

#[test]
fn output_does_not_depend_on_mappers_or_split_size() {
    let fx = Fixture::new("24KiB");
    let whole = fx.word_count(&["--mappers", "1", "--reducers", "3", "--split-size", "1GiB"]);
    for (mappers, split) in [("2", "1KiB"), ("4", "3KiB"), ("2", "20KiB")] {
        let opts = [
            "--mappers",
            mappers,
            "--reducers",
            "3",
            "--split-size",
            split,
        ];
        // The same partitions, each sorted: the same bytes.
        assert_eq!(fx.word_count(&opts), whole, "{opts:?}");
    }
    for reducers in ["1", "2", "4"] {
        let out = fx.word_count(&["--reducers", reducers, "--split-size", "2KiB"]);
        assert_eq!(lines(&out), lines(&whole), "--reducers {reducers}");
    }
    // One reducer: the whole output in byte order.
    let one = fx.word_count(&["--reducers", "1"]);
    let mut sorted: Vec<&[u8]> = one
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let as_written = sorted.clone();
    sorted.sort();
    assert_eq!(as_written, sorted);
}

/// Runs `ember stream run` in `dir` with `TMPDIR` set to `tmp`.
fn stream(dir: &Path, tmp: &Path, args: &[&str]) -> Output {
    ember()
        .current_dir(dir)
        .env("TMPDIR", tmp)
        .args(["stream", "run"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn lines_sort_by_key_bytes_stably_and_a_tabless_line_gains_a_tab() {
    let dir = tempfile::tempdir().unwrap();
    let input = b"b\t2\na\t1\n\xc3\xa9\t3\nb\t1\nB\t0\na\nb\t0\tx\n";
    std::fs::write(dir.path().join("in.txt"), input).unwrap();
    for split in ["1", "4", "1MiB"] {
        let args = ["--mapper", "cat", "--reducer", "cat", "--reducers", "1"];
        let out = stream(
            dir.path(),
            dir.path(),
            &[&args[..], &["--split-size", split, "in.txt"]].concat(),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        let expected: &[u8] = b"B\t0\na\t1\na\t\nb\t2\nb\t1\nb\t0\tx\n\xc3\xa9\t3\n";
        assert_eq!(out.stdout, expected, "--split-size {split}");
    }
}

#[test]
fn a_files_last_line_reaches_the_mapper_with_a_newline() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x\ny").unwrap();
    std::fs::write(dir.path().join("b.txt"), "z").unwrap();
    let args = ["--mapper", "wc -l", "--reducer", "cat", "--reducers", "1"];
    let out = stream(
        dir.path(),
        dir.path(),
        &[&args[..], &["a.txt", "b.txt"]].concat(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, b"1\t\n2\t\n");
}

#[test]
fn commands_see_hadoops_environment_variables() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "1\n2\n3\n").unwrap();
    let mapper = r#"printf '%s\t%s %s %s %s\n' "$mapreduce_task_partition" "$mapreduce_map_input_file" "$mapreduce_map_input_start" "$mapreduce_map_input_length" "$mapreduce_task_ismap""#;
    let reducer =
        r#"cat; printf 'reducer %s %s\n' "$mapreduce_task_partition" "$mapreduce_task_ismap""#;
    let out = stream(
        dir.path(),
        dir.path(),
        &[
            "--mapper",
            mapper,
            "--reducer",
            reducer,
            "--reducers",
            "2",
            "--split-size",
            "3",
            "a.txt",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let got: BTreeSet<&str> = text.lines().collect();
    let want: BTreeSet<&str> = [
        "0\ta.txt 0 4 true",
        "1\ta.txt 4 2 true",
        "reducer 0 false",
        "reducer 1 false",
    ]
    .into();
    assert_eq!(got, want);
    assert!(
        text.ends_with("reducer 1 false\n"),
        "partition order: {text}"
    );
}

/// A failure: exit 1, exactly one line on stderr, which it returns.
fn one_line_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
    let err = stderr(out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("ember: "), "{err}");
    err
}

#[test]
fn a_failing_mapper_ends_the_run_with_one_line_and_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for name in ["a.txt", "bad.txt", "c.txt", "d.txt"] {
        std::fs::write(dir.path().join(name), "x\n".repeat(100_000)).unwrap();
    }
    std::fs::write(dir.path().join("out.txt"), "old\n").unwrap();
    // The others would sleep a minute: they must be killed.
    let mapper = r#"case "$mapreduce_map_input_file" in
        *bad.txt) echo "starting"; echo "boom: cannot parse" >&2; exit 3;;
        *) sleep 60; cat;;
    esac"#;
    let start = Instant::now();
    let args = [
        "--mapper",
        mapper,
        "--reducer",
        "cat",
        "--mappers",
        "4",
        "-o",
        "out.txt",
    ];
    let files = ["a.txt", "bad.txt", "c.txt", "d.txt"];
    let out = stream(dir.path(), tmp.path(), &[&args[..], &files].concat());
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    let err = one_line_error(&out);
    for part in [
        "mapper",
        "'bad.txt', bytes 0..200000",
        "exit status 3",
        "boom: cannot parse",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
    assert_eq!(
        names(dir.path()),
        ["a.txt", "bad.txt", "c.txt", "d.txt", "out.txt"]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "old\n"
    );
    assert_eq!(names(tmp.path()), Vec::<String>::new());
}

#[test]
fn a_reducer_that_cannot_start_is_named_with_the_shells_status() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\tb\n").unwrap();
    let args = [
        "--mapper",
        "cat",
        "--reducer",
        "no-such-reducer-cmd",
        "-o",
        "out.txt",
        "a.txt",
    ];
    let err = one_line_error(&stream(dir.path(), dir.path(), &args));
    for part in [
        "reducer 'no-such-reducer-cmd'",
        "partition",
        "exit status 127",
        "not found",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
    assert_eq!(names(dir.path()), ["a.txt"]);
}

#[test]
fn a_command_killed_by_a_signal_and_a_missing_file_are_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "a\tb\n").unwrap();
    let args = [
        "--mapper",
        "cat",
        "--combiner",
        "kill -KILL $$",
        "--reducer",
        "cat",
        "a.txt",
    ];
    let err = one_line_error(&stream(dir.path(), dir.path(), &args));
    for part in [
        "combiner 'kill -KILL $$'",
        "'a.txt', bytes 0..4",
        "signal 9 (SIGKILL)",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
    let args = [
        "--mapper",
        "cat",
        "--reducer",
        "cat",
        "a.txt",
        "missing.txt",
    ];
    let err = one_line_error(&stream(dir.path(), dir.path(), &args));
    assert!(err.contains("cannot read 'missing.txt'"), "{err}");
}

#[test]
fn a_mapper_that_stops_reading_early_is_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "k\tv\n".repeat(1 << 20)).unwrap();
    let args = [
        "--mapper",
        "head -n 2",
        "--reducer",
        "cat",
        "--split-size",
        "2MiB",
        "a.txt",
    ];
    let out = stream(dir.path(), dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(out.stdout, b"k\tv\n".repeat(4));
}
