//! `ember stream job --isolate` (every split mapped in a worker process of
//! its own) against the same job in threads, for every built-in streaming
//! job, several worker counts and split sizes; no worker process or shared
//! memory is left behind. Crashing workers are tested in
//! `crates/ember/tests/isolate.rs`, whose registry has a faulty job.

mod support;

use std::path::{Path, PathBuf};

use support::ember;

/// `ember stream job ARGS`: its standard output (sort's is binary
/// records), or a panic with its standard error.
fn job(args: &[&str], files: &[PathBuf], job_args: &[&str]) -> Vec<u8> {
    let out = ember()
        .args(["stream", "job"])
        .args(args)
        .args(files)
        .arg("--")
        .args(job_args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    out.stdout
}

/// Text with non-ASCII and invalid UTF-8 bytes, a file without a final
/// newline and an empty one; one-word lines for string-match; points and
/// their first means for k-means.
fn inputs(dir: &Path) -> (Vec<PathBuf>, PathBuf, PathBuf, PathBuf) {
    let words = ["the", "Cat", "sat", "on", "mat", "DOG", "caf\u{e9}", "a,b"];
    let mut text = Vec::new();
    let mut lines = Vec::new();
    let mut points = Vec::new();
    for i in 0..6000usize {
        let w = words[(i * 7 + i / 5) % words.len()];
        text.extend_from_slice(w.as_bytes());
        text.extend_from_slice(if i % 11 == 0 { b"\n" } else { b" " });
        if i % 97 == 0 {
            text.extend_from_slice(b"\xff\xfe\t");
        }
        lines.extend_from_slice(format!("{w}\n").as_bytes());
        points.extend_from_slice(format!("{},{}\n", (i * 37) % 301, (i * 91) % 257).as_bytes());
    }
    let files = [
        ("a.txt", &text[..]),
        ("b.txt", b"no newline at the end"),
        ("empty.txt", b""),
    ];
    let files: Vec<PathBuf> = files
        .iter()
        .map(|(name, data)| {
            std::fs::write(dir.join(name), data).unwrap();
            dir.join(name)
        })
        .collect();
    let (keys, means, pts) = (
        dir.join("keys.txt"),
        dir.join("means.txt"),
        dir.join("points.txt"),
    );
    std::fs::write(&keys, lines).unwrap();
    std::fs::write(&pts, &points).unwrap();
    let first: Vec<&[u8]> = points.split_inclusive(|&b| b == b'\n').take(4).collect();
    std::fs::write(&means, first.concat()).unwrap();
    (files, keys, means, pts)
}

/// Three files from `ember gen KIND` (BMP images or sort records), each a
/// whole map input, and an empty one.
fn binary_inputs(dir: &Path, kind: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for seed in 1..=3 {
        let path = dir.join(format!("{kind}-{seed}"));
        let gen: &[&str] = match kind {
            "bmp" => &["histogram", "--width", "61", "--height", "37"],
            _ => &["sort", "--records", "700"],
        };
        let seed = seed.to_string();
        let out = ember()
            .arg("gen")
            .args(gen)
            .args(["--seed", &seed, "-o"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        files.push(path);
    }
    let empty = dir.join(format!("{kind}-empty"));
    std::fs::write(&empty, b"").unwrap();
    files.insert(1, empty);
    files
}

/// The isolated workers still running with an input under `dir`.
fn workers_on(dir: &Path) -> Vec<String> {
    let marker = format!("mapreduce_map_input_file={}", dir.display());
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let env = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let env = String::from_utf8_lossy(&env);
        if env.contains("EMBER_ISOLATE_WORKER=") && env.contains(&marker) {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

fn shm() -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir("/dev/shm")
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn every_streaming_job_isolated_equals_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (text, keys, means, points) = inputs(dir.path());
    let means = means.to_str().unwrap();
    let (bmps, records) = (
        binary_inputs(dir.path(), "bmp"),
        binary_inputs(dir.path(), "sort"),
    );
    let cases: [(&str, Vec<PathBuf>, Vec<&str>); 7] = [
        ("wordcount", text.clone(), vec![]),
        ("inverted-index", text.clone(), vec!["--doc", "d"]),
        ("string-match", vec![keys], vec!["cat", "DOG", "caf\u{e9}"]),
        ("kmeans", vec![points.clone()], vec!["--means", means]),
        ("linear-regression", vec![points], vec![]),
        ("histogram", bmps, vec![]),
        ("sort", records, vec![]),
    ];
    let shm_before = shm();
    for (name, files, job_args) in &cases {
        let want = job(&[name, "-t", "1"], files, job_args);
        assert!(
            want.len() >= 20,
            "{name}: {}",
            String::from_utf8_lossy(&want)
        );
        for workers in ["1", "2", "4"] {
            assert_eq!(
                job(&[name, "-t", workers], files, job_args),
                want,
                "{name} threads"
            );
            for split in ["100", "4KiB", "1MiB"] {
                let args = [name, "--isolate", "-t", workers, "--split-size", split];
                let got = job(&args, files, job_args);
                assert_eq!(
                    got, want,
                    "{name} isolated: {workers} workers, splits of {split}"
                );
                assert_eq!(workers_on(dir.path()), Vec::<String>::new());
            }
        }
    }
    assert_eq!(shm(), shm_before);
}

#[test]
fn isolated_inverted_index_names_each_file() {
    let dir = tempfile::tempdir().unwrap();
    let (text, ..) = inputs(dir.path());
    let out = job(
        &["inverted-index", "--isolate", "--split-size", "4KiB"],
        &text,
        &[],
    );
    let out = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    let (a, b) = (text[0].display(), text[1].display());
    for want in [
        format!("mat\t{a}"),
        format!("newline\t{b}"),
        format!("the\t{a},{b}"),
    ] {
        assert!(lines.contains(&want.as_str()), "{want}: {out}");
    }
}

#[test]
fn isolated_workers_report_their_stats() {
    let dir = tempfile::tempdir().unwrap();
    let (text, ..) = inputs(dir.path());
    let out = ember()
        .args([
            "stream",
            "job",
            "wordcount",
            "--isolate",
            "-t",
            "2",
            "--split-size",
            "8KiB",
            "--stats",
        ])
        .args(&text)
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("splits "), "{stderr}");
    assert!(stderr.contains("retries 0"), "{stderr}");
    assert!(stderr.contains("attempt 0: ok, peak RSS "), "{stderr}");
}
