//! The `ember` command as a user meets it: results, and one clear line on
//! errors.

use std::path::Path;
use std::process::{Command, Output};

fn ember(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ember"))
        .args(args)
        .output()
        .expect("ember runs")
}

/// A fresh directory for one test, removed with its files when dropped.
fn tempdir(name: &str) -> tempfile::TempDir {
    let prefix = format!("ember-cli-{name}-");
    tempfile::Builder::new().prefix(&prefix).tempdir().unwrap()
}

/// A failure: non-zero exit, exactly one line on stderr, no backtrace.
fn one_line_error(out: &Output) -> String {
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        !err.contains("backtrace") && !err.contains("panicked"),
        "{err}"
    );
    err
}

#[test]
fn wordcount_prints_top_and_writes_everything() {
    let tmp = tempdir("wc");
    let d = tmp.path();
    let f = d.join("in.txt");
    std::fs::write(&f, "b a B c, b a\n").unwrap();
    let all = d.join("out.tsv");
    let out = ember(&[
        "wordcount",
        f.to_str().unwrap(),
        "--top",
        "2",
        "--threads",
        "2",
        "--output",
        all.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("b\t3\na\t2\n# 6 words, 3 distinct"),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&all).unwrap(), "a\t2\nb\t3\nc\t1\n");
}

#[test]
fn a_small_input_on_one_worker_counts_what_every_thread_count_counts() {
    let tmp = tempdir("small");
    let d = tmp.path();
    // Around the one-worker threshold (64 KiB): below, at and above it.
    for (i, bytes) in [0usize, 1, 1024, 65_535, 65_536, 65_537, 200_000]
        .into_iter()
        .enumerate()
    {
        let words = [
            "The", "quick", "brown", "fox", "x", "JUMPS", "over", "a", "dog",
        ];
        let mut text = String::new();
        let mut n = 0;
        while text.len() < bytes {
            text.push_str(words[n % words.len()]);
            text.push(if n % 7 == 0 { '\n' } else { ' ' });
            n += 1;
        }
        text.truncate(bytes);
        let f = d.join(format!("in{i}.txt"));
        std::fs::write(&f, &text).unwrap();
        let f = f.to_str().unwrap();
        let run = |extra: &[&str]| {
            let out = ember(&[&["wordcount", f, "-o", "-", "-k", "3"], extra].concat());
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            out.stdout
        };
        let plain = run(&["-t", "1"]);
        assert_eq!(run(&[]), plain, "{bytes} bytes");
        assert_eq!(run(&["-t", "2"]), plain, "{bytes} bytes");
        assert_eq!(
            run(&["-t", "3", "--split-size", "100"]),
            plain,
            "{bytes} bytes"
        );
        // The top words on standard output, written in one go, are those
        // of one thread too (the summary line's time left out).
        let top = |extra: &[&str]| {
            let out = ember(&[&["wordcount", f, "-k", "3"], extra].concat());
            assert!(out.status.success());
            let text = String::from_utf8(out.stdout).unwrap();
            let lines = text
                .lines()
                .map(|l| l.split(" in ").next().unwrap().to_string());
            lines.collect::<Vec<_>>()
        };
        assert_eq!(top(&[]), top(&["-t", "1"]), "{bytes} bytes");
        // The decision shows under --stats, for small inputs only.
        let stats = ember(&["wordcount", f, "--stats"]);
        let said = String::from_utf8_lossy(&stats.stderr).contains("workers   1: the input");
        assert_eq!(said, bytes <= 65_536, "{bytes} bytes");
    }
}

#[test]
fn wordcount_reads_stdin_and_writes_stats_json() {
    let tmp = tempdir("stdin");
    let d = tmp.path();
    let json = d.join("stats.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ember"))
        .args(["wordcount", "-", "--stats-json", json.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"x y x").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8(out.stdout)
        .unwrap()
        .starts_with("x\t2\ny\t1\n"));
    let stats = std::fs::read_to_string(&json).unwrap();
    assert!(stats.contains("\"pairs_emitted\": 3"), "{stats}");
    assert!(stats.contains("\"map_secs\""), "{stats}");
}

#[test]
fn missing_file_is_one_line() {
    let err = one_line_error(&ember(&["wordcount", "/no/such/file.txt"]));
    assert_eq!(
        err.trim(),
        "ember: cannot read '/no/such/file.txt': No such file or directory (os error 2)"
    );
}

#[test]
fn a_folder_or_pattern_without_files_is_one_line() {
    let tmp = tempdir("dir");
    let d = tmp.path();
    std::fs::write(d.join("_SUCCESS"), "").unwrap();
    let err = one_line_error(&ember(&["wordcount", d.to_str().unwrap()]));
    let want = format!(
        "ember: cannot read '{}': the folder holds no files",
        d.display()
    );
    assert!(err.starts_with(&want), "{err}");
    let pattern = d.join("*.txt");
    let err = one_line_error(&ember(&["wordcount", pattern.to_str().unwrap()]));
    let want = format!(
        "ember: cannot read '{}': no file matches this pattern\n",
        pattern.display()
    );
    assert_eq!(err, want);
}

/// Writes `files` (name, text) under `dir`, making folders as needed.
fn write_tree(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// What `ember ARGS... -o FILE` writes to FILE, the inputs named by
/// `inputs` (paths relative to `dir`).
fn output_of(dir: &Path, command: &[&str], inputs: &[&str]) -> String {
    let out = dir.join("out");
    let inputs: Vec<String> = inputs
        .iter()
        .map(|i| dir.join(i).to_str().unwrap().to_string())
        .collect();
    let mut args: Vec<&str> = command.to_vec();
    args.extend(inputs.iter().map(String::as_str));
    args.extend(["-o", out.to_str().unwrap()]);
    let run = ember(&args);
    assert!(
        run.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn folders_and_patterns_read_the_files_a_list_names() {
    let tmp = tempdir("paths");
    let d = tmp.path();
    write_tree(
        d,
        &[
            ("in/b.txt", "bee two\nshared\n"),
            ("in/a.txt", "ant one\nshared\n"),
            ("in/sub/c.txt", "cat three\n"),
            ("in/_SUCCESS", "marker\n"),
            ("in/.hidden.txt", "hidden\n"),
            ("in/.git/config", "git\n"),
        ],
    );
    let listed = ["in/a.txt", "in/b.txt", "in/sub/c.txt"];
    for command in [&["wordcount"][..], &["inverted-index"]] {
        let every = output_of(d, command, &listed);
        assert!(
            every.contains("cat") && !every.contains("hidden"),
            "{every}"
        );
        assert_eq!(output_of(d, command, &["in"]), every, "{command:?}");
        assert_eq!(
            output_of(d, command, &["in/sub", "in"]),
            output_of(d, command, &["in/sub/c.txt", "in/a.txt", "in/b.txt"])
        );
        let top = output_of(d, command, &listed[..2]);
        assert_ne!(top, every);
        assert_eq!(output_of(d, command, &["in/*.txt"]), top, "{command:?}");
        assert_eq!(output_of(d, command, &["in/[ab].txt", "in/a.txt"]), top);
    }
}

#[test]
fn a_one_file_argument_takes_a_folder_or_pattern_of_one_file() {
    let tmp = tempdir("one");
    let d = tmp.path();
    std::fs::create_dir(d.join("in")).unwrap();
    let image = d.join("in/image.bmp");
    let gen = ember(&[
        "gen",
        "histogram",
        "--width",
        "4",
        "--height",
        "3",
        "-o",
        image.to_str().unwrap(),
    ]);
    assert!(gen.status.success());
    let histogram = ["histogram"];
    let want = output_of(d, &histogram, &["in/image.bmp"]);
    assert_eq!(output_of(d, &histogram, &["in"]), want);
    assert_eq!(output_of(d, &histogram, &["in/*.bmp"]), want);
    std::fs::copy(&image, d.join("in/copy.bmp")).unwrap();
    let pattern = d.join("in/*.bmp");
    let out = ember(&["histogram", pattern.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("it names 2 files") && err.contains("this command reads one"),
        "{err}"
    );
}

#[test]
fn bad_size_and_threads_are_one_line() {
    let tmp = tempdir("gen");
    let d = tmp.path();
    let out = ember(&["gen", "text", "--size", "12 parsecs", "--out", "-"]);
    assert!(!out.status.success());
    let f = d.join("x.txt");
    std::fs::write(&f, "a").unwrap();
    let err = one_line_error(&ember(&[
        "wordcount",
        f.to_str().unwrap(),
        "--threads",
        "0",
    ]));
    assert!(err.contains("threads must be at least 1"), "{err}");
}

/// `ember ... | head`: when the reader goes away, ember ends quietly, with
/// no error line and no panic.
#[test]
fn a_closed_output_pipe_ends_ember_quietly() {
    use std::io::Read;
    // Far more than a pipe holds, so ember is still writing.
    let mut child = Command::new(env!("CARGO_BIN_EXE_ember"))
        .args(["gen", "text", "--size", "64MiB", "--out", "-"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ember runs");
    let mut first = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The pipe's read end is closed here.
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.is_empty(), "{err}");
}

#[test]
fn gen_text_is_reproducible() {
    let tmp = tempdir("gentext");
    let d = tmp.path();
    let (a, b) = (d.join("a.txt"), d.join("b.txt"));
    for p in [&a, &b] {
        let out = ember(&[
            "gen",
            "text",
            "--size",
            "300KiB",
            "--vocab",
            "1000",
            "--seed",
            "5",
            "--out",
            p.to_str().unwrap(),
        ]);
        assert!(out.status.success());
    }
    let (x, y) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(x.len(), 300 << 10);
    assert_eq!(x, y);
}

#[test]
fn wordcount_mode_option_reaches_the_stats() {
    let tmp = tempdir("mode");
    let d = tmp.path();
    let f = d.join("in.txt");
    std::fs::write(&f, "b a b c b a\n".repeat(100)).unwrap();
    let json = d.join("stats.json");
    for (mode, want) in [("pipelined", "pipelined"), ("barrier", "barrier")] {
        let out = ember(&[
            "wordcount",
            f.to_str().unwrap(),
            "--threads",
            "2",
            "--mode",
            mode,
            "--buffer-size",
            "1KiB",
            "--stats-json",
            json.to_str().unwrap(),
        ]);
        assert!(out.status.success());
        assert!(String::from_utf8(out.stdout)
            .unwrap()
            .starts_with("b\t300\n"));
        let stats = std::fs::read_to_string(&json).unwrap();
        assert!(stats.contains(&format!("\"mode\": \"{want}\"")), "{stats}");
        assert!(stats.contains("\"utilization\""), "{stats}");
    }
    let out = ember(&["wordcount", f.to_str().unwrap(), "--mode", "eager"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown mode 'eager'"), "{err}");
}

/// `--ingest chunked` reaches the workloads that can stream (string match,
/// linear regression): the same results as memory-mapped, and the same
/// one-line error on a malformed file.
#[test]
fn chunked_ingest_gives_the_mapped_results() {
    let tmp = tempdir("ingest");
    let d = tmp.path();
    let keys = d.join("keys.txt");
    let words: String = (0..20_000)
        .map(|i| format!("{}\n", ["ab", "ferrari", "xyz", "whotheman"][i % 4]))
        .collect();
    std::fs::write(&keys, words).unwrap();
    let points = d.join("points.bin");
    std::fs::write(
        &points,
        (0..100_000u32).map(|i| (i * 7) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    let odd = d.join("odd.bin");
    std::fs::write(&odd, [1u8, 2, 3]).unwrap();
    // Results without the timing line.
    let results = |args: &[&str]| -> String {
        let out = ember(args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8(out.stdout).unwrap();
        stdout
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for cmd in [
        vec![
            "string-match",
            keys.to_str().unwrap(),
            "ferrari",
            "whotheman",
        ],
        vec!["linear-regression", points.to_str().unwrap()],
    ] {
        let mapped = results(&[cmd.as_slice(), &["--ingest", "mmap"]].concat());
        let chunked = results(
            &[
                cmd.as_slice(),
                &["--ingest", "chunked", "--chunk-size", "4KiB"],
            ]
            .concat(),
        );
        assert!(!mapped.is_empty());
        assert_eq!(chunked, mapped, "{cmd:?}");
    }
    for ingest in ["mmap", "chunked"] {
        let e = one_line_error(&ember(&[
            "linear-regression",
            odd.to_str().unwrap(),
            "--ingest",
            ingest,
        ]));
        assert!(e.contains("3 bytes, an odd length"), "{ingest}: {e}");
    }
}

/// `ember-bench` names its workload benches after these commands
/// (crates/ember-bench/tests/cli.rs checks that side).
#[test]
fn every_workload_of_the_bench_suite_is_a_command() {
    for name in [
        "wordcount",
        "histogram",
        "linear-regression",
        "string-match",
        "inverted-index",
        "sort",
        "kmeans",
        "pca",
        "matrix-multiply",
    ] {
        assert!(ember(&[name, "--help"]).status.success(), "{name}");
    }
}

/// Every workload reads a gzip file as it reads the file gzipped: text
/// and records streamed through the decoder, images and matrices (read
/// whole) decoded into memory.
#[test]
fn every_workload_reads_a_gzip_file_as_the_plain_one() {
    let tmp = tempdir("gzip");
    let d = tmp.path();
    let path = |name: &str| d.join(name).to_str().unwrap().to_owned();
    let gen = |args: &[&str]| {
        assert!(
            ember(&[&["gen"], args].concat()).status.success(),
            "{args:?}"
        )
    };
    gen(&["text", "--size", "200KiB", "-o", &path("text")]);
    gen(&[
        "histogram",
        "--width",
        "60",
        "--height",
        "40",
        "-o",
        &path("image"),
    ]);
    gen(&["linreg", "--size", "64KiB", "-o", &path("points")]);
    gen(&["strmatch", "--size", "64KiB", "-o", &path("keys")]);
    gen(&["sort", "--records", "2000", "-o", &path("records")]);
    gen(&[
        "kmeans",
        "--points",
        "2000",
        "--dims",
        "3",
        "-o",
        &path("clusters"),
    ]);
    gen(&["pca", "--rows", "20", "--cols", "50", "-o", &path("rows")]);
    gen(&[
        "matmul",
        "--n",
        "30",
        "--cols",
        "20",
        "--seed",
        "1",
        "-o",
        &path("a"),
    ]);
    gen(&[
        "matmul",
        "--n",
        "20",
        "--cols",
        "25",
        "--seed",
        "2",
        "-o",
        &path("b"),
    ]);
    for name in [
        "text", "image", "points", "keys", "records", "clusters", "rows", "a", "b",
    ] {
        let zipped = Command::new("gzip").args(["-k", &path(name)]).status();
        assert!(zipped.expect("gzip runs").success(), "{name}");
    }
    // Results (text, or sorted records) without timings: lines that
    // start with '#', and any number before "s" or a rate ("GMAC/s").
    let untimed = |line: &[u8]| -> Vec<u8> {
        let words: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        let timed = |w: &&[u8]| {
            matches!(*w, b"s" | b"s," | b"s)") || w.ends_with(b"/s") || w.ends_with(b"/s,")
        };
        let kept = (0..words.len()).map(|i| match words.get(i + 1).is_some_and(timed) {
            true => &b"_"[..],
            false => words[i],
        });
        kept.collect::<Vec<_>>().join(&b' ')
    };
    let results = |args: &[String]| -> Vec<u8> {
        let out = Command::new(env!("CARGO_BIN_EXE_ember"))
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        let lines = out.stdout.split(|&b| b == b'\n');
        let kept: Vec<Vec<u8>> = lines
            .filter(|l| !l.starts_with(b"#"))
            .map(untimed)
            .collect();
        kept.join(&b'\n')
    };
    let commands: [&[&str]; 10] = [
        &["wordcount", "text"],
        &["inverted-index", "text", "--lines", "-o", "-"],
        &["string-match", "keys", "ferrari", "whotheman"],
        &["linear-regression", "points"],
        &["histogram", "image"],
        &["sort", "records", "--out", "-"],
        &["kmeans", "clusters"],
        &["pca", "rows"],
        &["matrix-multiply", "a", "b"],
        &["wordcount", "text", "--ingest", "chunked"],
    ];
    let files = [
        "text", "image", "points", "keys", "records", "clusters", "rows", "a", "b",
    ];
    for command in commands {
        let args = |suffix: &str| -> Vec<String> {
            command
                .iter()
                .map(|a| match files.contains(a) {
                    true => path(&format!("{a}{suffix}")),
                    false => a.to_string(),
                })
                .collect()
        };
        let plain = results(&args(""));
        assert!(plain.len() > 10, "{command:?}");
        assert_eq!(results(&args(".gz")), plain, "{command:?}");
    }
}
