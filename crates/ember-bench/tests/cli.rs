//! `ember-bench` as a user meets it: the benches it lists, and tiny runs
//! whose tables are read back row by row (the smoke test CI runs: a bench
//! that stops printing a row, prints a number that is not one or fails
//! its check against the sequential oracle fails here).

use std::path::Path;
use std::process::{Command, Output};

/// Runs `ember-bench ARGS` with its inputs cached in `cache`.
fn bench(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ember-bench"))
        .args(args)
        .env("EMBER_CACHE", cache)
        .output()
        .expect("ember-bench runs")
}

/// The standard output of a run that succeeded.
fn stdout_of(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// One row of a bench's table.
#[derive(Debug)]
struct Row {
    name: String,
    median: f64,
    best: f64,
    speedup: f64,
}

/// The table under `title`: the rows between its `contender` header line
/// and the blank line after them, each row's name and numbers parsed.
fn table(stdout: &str, title: &str) -> Vec<Row> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with(title));
    let header = lines.nth(1).unwrap_or_default();
    let header = if header.starts_with("(peak RSS") {
        lines.next().unwrap_or_default()
    } else {
        header
    };
    assert!(
        header.starts_with("contender"),
        "no table under {title}:\n{stdout}"
    );
    lines
        .take_while(|l| !l.trim().is_empty())
        .map(|line| {
            // name..., median s, best s, rate, speedup, best, limit, peak MiB
            let words: Vec<&str> = line.split_whitespace().collect();
            assert!(words.len() > 7, "short row: {line}");
            let (name, numbers) = words.split_at(words.len() - 7);
            let number = |s: &str| -> f64 {
                let v = s.trim_end_matches('x').parse();
                v.unwrap_or_else(|_| panic!("not a number: {s} in {line}"))
            };
            let row = Row {
                name: name.join(" "),
                median: number(numbers[0]),
                best: number(numbers[1]),
                speedup: number(numbers[3]),
            };
            assert!(
                row.median.is_finite() && row.best >= 0.0 && row.best <= row.median,
                "{row:?}"
            );
            let peak = numbers[6];
            assert!(peak == "-" || number(peak) > 0.0, "{line}");
            row
        })
        .collect()
}

/// The rows' names.
fn names(rows: &[Row]) -> Vec<&str> {
    rows.iter().map(|r| r.name.as_str()).collect()
}

#[test]
fn a_tiny_workload_bench_prints_every_row_checked_against_the_oracle() {
    let cache = tempfile::tempdir().unwrap();
    let args = ["linear-regression", "--size", "64KiB", "--runs", "2"];
    let out = stdout_of(bench(cache.path(), &[&args[..], &["-t", "2"]].concat()));
    let rows = table(
        &out,
        "linear regression, 0.1 MB (32768 points), 2 runs each",
    );
    assert_eq!(
        names(&rows),
        [
            "sequential",
            "ember, 1 thread",
            "ember, 2 threads",
            "limit: memory read, 1 thread",
            "limit: memory read, 2 threads",
        ],
        "{out}"
    );
    // Speedups are over the first row.
    assert_eq!(rows[0].speedup, 1.0, "{out}");
    for line in [
        "ember on 2 threads: ",
        "ember, 2 threads, phases of the last run:",
        "pairs     5 emitted, 5 distinct keys, 5 output",
        "capacity  2 threads vs 1, before and after this bench",
    ] {
        assert!(out.contains(line), "no '{line}' in:\n{out}");
    }
    // The input was generated into the cache folder, once.
    let cached = cache.path().join("points-65536-s7.bin");
    assert_eq!(std::fs::metadata(&cached).unwrap().len(), 64 << 10);
}

#[test]
fn a_tiny_numeric_bench_reads_its_matrix_from_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let args = [
        "kmeans",
        "--points",
        "1000",
        "-k",
        "8",
        "--max-iter",
        "5",
        "--runs",
        "1",
        "-t",
        "2",
    ];
    let out = stdout_of(bench(cache.path(), &args));
    let title = "k-means, 1000 points x 3 dims, 8 clusters, ";
    let rows = table(&out, title);
    assert_eq!(
        names(&rows)[..3],
        ["sequential", "ember, 1 thread", "ember, 2 threads"],
        "{out}"
    );
    assert!(rows.len() > 3 && rows[3..].iter().all(|r| r.name.starts_with("limit: ")));
    assert!(cache.path().join("matrix-1000x3-v0..1000-s7.mat").is_file());
}

#[test]
fn a_tiny_compressed_bench_checks_every_form_against_the_plain_corpus() {
    // The copies are made with the system's gzip, pzstd, zstd and bzip2.
    let cache = tempfile::tempdir().unwrap();
    let args = ["compressed", "--size", "256KiB", "--pieces", "3"];
    let out = stdout_of(bench(
        cache.path(),
        &[&args[..], &["--runs", "1", "-t", "2"]].concat(),
    ));
    let forms = [
        ("3 .gz pieces", "gzip -dc"),
        ("one .gz", "gzip -dc"),
        ("one .zst of independent frames (pzstd)", "zstd -dc"),
        ("one .zst of one frame (zstd)", "zstd -dc"),
        ("one .bz2", "bzip2 -dc"),
    ];
    for (form, program) in forms {
        let rows = table(
            &out,
            &format!("compressed: {form}, 0.3 MB of text, 2 threads"),
        );
        assert_eq!(
            names(&rows),
            [
                format!("{program} | ember wordcount -").as_str(),
                "ember wordcount FILES",
                &format!("{program} alone > /dev/null, 2 processes side by side"),
                "ember wordcount, the plain file",
            ],
            "{out}"
        );
    }
    let pieces = std::fs::read_dir(cache.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with("-of-3.gz")
        })
        .count();
    assert_eq!(pieces, 3);
}

#[test]
fn a_workload_bench_has_the_name_of_its_command() {
    let cache = tempfile::tempdir().unwrap();
    let help = stdout_of(bench(cache.path(), &["--help"]));
    // The workloads' `ember` commands (crates/ember-cli/tests/cli.rs
    // checks that each is one).
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
        assert!(help.contains(name), "bench {name} missing from:\n{help}");
        let out = bench(cache.path(), &[name, "--help"]);
        assert!(out.status.success(), "{name}");
    }
    // The earlier short names still run their bench, unlisted.
    for old in ["linreg", "strmatch", "invindex", "matmul"] {
        assert!(!help.contains(old), "{old} listed in:\n{help}");
        assert!(
            bench(cache.path(), &[old, "--help"]).status.success(),
            "{old}"
        );
    }
}

#[test]
fn a_bench_that_times_the_ember_command_needs_it_built_beside() {
    // A copy of ember-bench alone in a folder: no `ember` beside it.
    let alone = tempfile::tempdir().unwrap();
    let copy = alone.path().join("ember-bench");
    std::fs::copy(env!("CARGO_BIN_EXE_ember-bench"), &copy).unwrap();
    for bench in [
        "sort",
        "inverted-index",
        "spill",
        "isolate",
        "compressed",
        "all",
    ] {
        let out = Command::new(&copy)
            .arg(bench)
            .env("EMBER_CACHE", alone.path())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bench}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("cargo build -p ember-cli"), "{bench}: {err}");
        // Failed before generating its input.
        assert!(out.stdout.is_empty(), "{bench}");
    }
}
