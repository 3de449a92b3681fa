//! `ember stream job --isolate` and the workload commands' `--isolate`
//! (every split mapped, and every key range reduced, in a worker process
//! of its own) against the same job in threads, for every built-in
//! streaming job and every command that runs one, several worker counts
//! and split sizes; no worker process or shared memory is left behind; a
//! worker killed mid-run fails the command with one line. Crashing map and
//! reduce workers are tested further in `crates/ember/tests/isolate.rs`,
//! whose registry has faulty jobs.

mod support;

use std::ffi::OsString;
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
            _ => &["sort", "--records", "300"],
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

/// The isolated workers of the process `parent`.
fn workers_of(parent: u32) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let env = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let ppid = stat.rsplit(") ").next().and_then(|s| s.split(' ').nth(1));
        if String::from_utf8_lossy(&env).contains("EMBER_ISOLATE_WORKER=")
            && ppid == Some(&parent.to_string())
        {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    found
}

/// Asserts that no isolated worker outlives its command. The kernel kills
/// a worker whose parent died (`PR_SET_PDEATHSIG`), which takes a moment
/// when a command of another test has just ended: a worker is an orphan
/// only if it is still one after a few seconds.
fn assert_no_orphans() {
    let mut left = orphans();
    for _ in 0..50 {
        if left.is_empty() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        left.retain(|pid| orphans().contains(pid));
    }
    assert_eq!(left, Vec::<String>::new(), "isolated workers left behind");
}

/// Isolated workers, map or reduce, whose parent is not the program they
/// run: workers a command that ended left behind.
fn orphans() -> Vec<String> {
    let exe = |pid: &str| std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let env = std::fs::read(entry.path().join("environ")).unwrap_or_default();
        if !String::from_utf8_lossy(&env).contains("EMBER_ISOLATE_WORKER=") {
            continue;
        }
        let pid = entry.file_name().to_string_lossy().into_owned();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let parent = stat.rsplit(") ").next().and_then(|s| s.split(' ').nth(1));
        // A worker that exits meanwhile has no program left to compare.
        if let (Some(parent), Some(program)) = (parent, exe(&pid)) {
            if exe(parent) != Some(program) {
                found.push(pid);
            }
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
    let cases: [(&str, Vec<PathBuf>, Vec<&str>); 8] = [
        ("wordcount", text.clone(), vec![]),
        ("inverted-index", text.clone(), vec!["--doc", "d"]),
        ("inverted-index-lines", text.clone(), vec![]),
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
                assert_no_orphans();
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
fn isolated_sort_maps_a_file_in_record_splits() {
    let dir = tempfile::tempdir().unwrap();
    let records = binary_inputs(dir.path(), "sort").swap_remove(0);
    let out = dir.path().join("sorted");
    let run = |extra: &[&str]| {
        let done = ember()
            .arg("sort")
            .arg(&records)
            .arg("-o")
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
        assert!(done.status.success(), "{stderr}");
        (std::fs::read(&out).unwrap(), stderr)
    };
    let (want, _) = run(&["-t", "1"]);
    assert_eq!(want.len(), 30_000);
    for workers in ["1", "2", "4"] {
        let iso = [
            "--isolate",
            "-t",
            workers,
            "--split-size",
            "4KiB",
            "--stats",
        ];
        let (got, stderr) = run(&iso);
        assert!(got == want, "{workers} workers: {stderr}");
        // 30,000 bytes in splits of 4,000 (4 KiB down to whole records).
        assert!(stderr.contains("splits 8,"), "{stderr}");
        assert_no_orphans();
    }
}

/// By default a worker gets one split of a job with a streamed map and a
/// reduce (word count), two of one that holds its split in memory (sort).
#[test]
fn default_splits_are_one_a_worker_for_an_aggregating_map() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("words.txt");
    std::fs::write(&text, b"some words on a line\n".repeat(200_000)).unwrap();
    let records = dir.path().join("records");
    let record: Vec<u8> = (0..100u8).map(|i| b'a' + i % 26).collect();
    std::fs::write(&records, record.repeat(40_000)).unwrap();
    for (command, input, splits) in [("wordcount", &text, 2), ("sort", &records, 4)] {
        let done = ember()
            .args([command, "--isolate", "-t", "2", "--stats", "-o"])
            .arg(dir.path().join("out"))
            .arg(input)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert!(done.status.success(), "{stderr}");
        let want = format!("splits {splits},");
        assert!(
            stderr.lines().any(|l| l.starts_with(&want)),
            "{command}: {stderr}"
        );
    }
    assert_no_orphans();
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
    assert!(stderr.contains("key ranges 2,"), "{stderr}");
    assert!(stderr.contains("retries 0"), "{stderr}");
    assert!(stderr.contains("worker processes 2,"), "{stderr}");
    assert!(stderr.contains("\nphases: split "), "{stderr}");
    let workers = stderr
        .lines()
        .filter(|l| l.contains(" tasks, ok, peak RSS "));
    let tasks: usize = workers
        .map(|l| {
            l.split(": ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    let splits: usize = stderr[7..].split(',').next().unwrap().parse().unwrap();
    assert_eq!(tasks, splits + 2, "{stderr}");
}

#[test]
fn isolated_channels_past_the_memory_limit_go_to_the_spill_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (text, ..) = inputs(dir.path());
    let spill = tempfile::tempdir().unwrap();
    let wordcount = |extra: &[&str]| {
        let out = ember()
            .args(["wordcount", "--split-size", "4KiB", "-o", "-"])
            .args(extra)
            .args(&text)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{extra:?}: {stderr}");
        (out.stdout, stderr)
    };
    let (want, _) = wordcount(&["-t", "2"]);
    assert!(want.len() > 20);
    let spill_dir = spill.path().to_str().unwrap();
    for (limit, disk) in [("1", true), ("1GiB", false)] {
        let iso = ["--isolate", "-t", "2", "--stats", "--memory-limit", limit];
        let (got, stderr) = wordcount(&[&iso[..], &["--spill-dir", spill_dir]].concat());
        assert_eq!(got, want, "--memory-limit {limit}");
        let on_disk = stderr.split("channels on disk ").nth(1).unwrap_or("");
        assert_eq!(!on_disk.starts_with("0 of"), disk, "{limit}: {stderr}");
        assert_eq!(std::fs::read_dir(spill.path()).unwrap().count(), 0);
    }
    assert_no_orphans();
}

/// `ember ARGS`: its standard output and error, with each summary line
/// (`# ... in 0.012 s`) cut before its first ` in `, where the times
/// start, or a panic with its standard error.
fn command(args: &[OsString]) -> (Vec<u8>, Vec<u8>) {
    let out = ember().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {stderr}");
    (untimed(&out.stdout), untimed(&out.stderr))
}

fn untimed(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in text.split_inclusive(|&b| b == b'\n') {
        let cut = line.windows(4).position(|w| w == b" in ");
        match cut {
            Some(at) if line.starts_with(b"# ") => {
                out.extend_from_slice(&line[..at]);
                out.push(b'\n');
            }
            _ => out.extend_from_slice(line),
        }
    }
    out
}

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

#[test]
fn every_command_isolated_equals_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (text, keys, ..) = inputs(dir.path());
    let bmp = binary_inputs(dir.path(), "bmp").swap_remove(0);
    let records = binary_inputs(dir.path(), "sort").swap_remove(0);
    let points = dir.path().join("points.bin");
    let gen = ember()
        .args(["gen", "linreg", "--size", "20002", "-o"])
        .arg(&points)
        .output()
        .unwrap();
    assert!(gen.status.success());
    let out = dir.path().join("out");
    let with = |name: &str, files: &[PathBuf], rest: &[&str]| {
        let mut args = os(&[name]);
        args.extend(files.iter().map(OsString::from));
        args.extend(os(rest));
        args
    };
    let out_arg = out.to_str().unwrap();
    let cases = [
        with("wordcount", &text, &["-k", "7", "-o", out_arg]),
        with("wordcount", &text, &["-k", "3"]),
        with("wordcount", &text, &["-o", "-"]),
        with("inverted-index", &text, &["-o", out_arg]),
        with("inverted-index", &text, &["--lines", "-o", out_arg]),
        with("histogram", std::slice::from_ref(&bmp), &["-o", out_arg]),
        with("linear-regression", std::slice::from_ref(&points), &[]),
        with("sort", std::slice::from_ref(&records), &["-o", out_arg]),
        with(
            "string-match",
            std::slice::from_ref(&keys),
            &["cat", "DOG", "caf\u{e9}", "cat", "zebra", "--show", "0"],
        ),
        with(
            "string-match",
            std::slice::from_ref(&keys),
            &["cat", "DOG", "caf\u{e9}", "cat", "zebra", "the"],
        ),
        with(
            "string-match",
            std::slice::from_ref(&keys),
            &["mat", "sat", "--show", "700"],
        ),
    ];
    let shm_before = shm();
    for args in &cases {
        let run = |extra: &[&str]| {
            let _ = std::fs::remove_file(&out);
            let mut all = args.clone();
            all.extend(os(extra));
            let (stdout, stderr) = command(&all);
            (stdout, stderr, std::fs::read(&out).unwrap_or_default())
        };
        let want = run(&["-t", "1"]);
        assert!(want.0.len() + want.2.len() >= 40, "{args:?}: {want:?}");
        for workers in ["1", "2", "4"] {
            for split in ["100", "4KiB"] {
                let got = run(&["--isolate", "-t", workers, "--split-size", split]);
                assert!(
                    got == want,
                    "{args:?} isolated, {workers} workers, splits of {split}:\n{}\n{}",
                    String::from_utf8_lossy(&[&got.0[..], &got.1].concat()),
                    String::from_utf8_lossy(&[&want.0[..], &want.1].concat()),
                );
                assert_no_orphans();
            }
        }
    }
    assert_eq!(shm(), shm_before);
}

/// `ember gen kmeans` points: `dims` coordinates each, so that a row is
/// or is not a divisor of the 24-byte header.
fn kmeans_points(dir: &Path, points: u32, dims: u32) -> PathBuf {
    let name = format!("points-{dims}.mat");
    let (points, dims) = (points.to_string(), dims.to_string());
    let args = [
        "--points", &points, "--dims", &dims, "--max", "500", "--seed", "5",
    ];
    gen_matrix(dir, &name, "kmeans", &args)
}

/// Every line of `text` cut before its first ` in ` (the k-means summary
/// ends with its time).
fn cut_times(text: &[u8]) -> String {
    let text = String::from_utf8_lossy(text);
    let lines = text.lines().map(|l| l.split(" in ").next().unwrap_or(l));
    lines.collect::<Vec<_>>().join("\n")
}

#[test]
fn isolated_kmeans_equals_threads() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("clusters");
    let cases = [
        (
            kmeans_points(dir.path(), 3000, 3),
            "20",
            "8",
            ["4KiB", "16KiB"],
        ),
        (kmeans_points(dir.path(), 500, 5), "7", "3", ["100", "1KiB"]),
    ];
    let shm_before = shm();
    for (points, k, iterations, splits) in &cases {
        let run = |extra: &[&str]| {
            let _ = std::fs::remove_file(&out);
            let done = ember()
                .arg("kmeans")
                .arg(points)
                .args(["-k", *k, "--max-iter", *iterations, "-o"])
                .arg(&out)
                .args(extra)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&done.stderr);
            assert!(done.status.success(), "{extra:?}: {stderr}");
            let file = std::fs::read(&out).unwrap();
            (file, cut_times(&done.stdout), cut_times(&done.stderr))
        };
        let want = run(&["-t", "1"]);
        assert!(
            want.0.len() > 40 && want.1.contains("k-means: "),
            "{want:?}"
        );
        for workers in ["1", "2", "4"] {
            for split in splits {
                let got = run(&["--isolate", "-t", workers, "--split-size", *split]);
                assert!(
                    got == want,
                    "{points:?} isolated, {workers} workers, splits of {split}:\n{got:?}\n{want:?}"
                );
                assert_no_orphans();
            }
        }
    }
    assert_eq!(shm(), shm_before);
}

#[test]
fn isolated_standard_input_equals_threads() {
    let dir = tempfile::tempdir().unwrap();
    let (text, keys, ..) = inputs(dir.path());
    let cases = [
        (&text[0], os(&["wordcount", "-", "-o", "-"])),
        (&text[0], os(&["inverted-index", "-", "-o", "-"])),
        (&keys, os(&["string-match", "-", "cat", "DOG", "zebra"])),
    ];
    let shm_before = shm();
    for (stdin, args) in &cases {
        let run = |extra: &[&str]| {
            let out = ember()
                .args(args)
                .args(extra)
                .stdin(std::fs::File::open(stdin).unwrap())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{args:?} {extra:?}: {stderr}");
            (untimed(&out.stdout), untimed(&out.stderr))
        };
        let want = run(&["-t", "1"]);
        assert!(want.0.len() >= 40, "{args:?}: {want:?}");
        for workers in ["1", "2", "4"] {
            let got = run(&["--isolate", "-t", workers, "--split-size", "4KiB"]);
            assert!(
                got == want,
                "{args:?} isolated, {workers} workers:\n{}\n{}",
                String::from_utf8_lossy(&[&got.0[..], &got.1].concat()),
                String::from_utf8_lossy(&[&want.0[..], &want.1].concat()),
            );
            assert_no_orphans();
        }
    }
    assert_eq!(shm(), shm_before);
}

#[test]
fn options_an_isolated_run_cannot_honour_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let (text, keys, ..) = inputs(dir.path());
    let (a, b) = (text[0].to_str().unwrap(), text[1].to_str().unwrap());
    let k = keys.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["wordcount", a, "--isolate", "--container", "hash"],
            "--container",
        ),
        (
            &["wordcount", a, "--isolate", "--stats-json", "s.json"],
            "--stats-json",
        ),
        (
            &["wordcount", "hdfs://localhost:9/x", "--isolate"],
            "not 'hdfs://localhost:9/x'",
        ),
        (
            &["string-match", k, "--isolate", "--mode", "pipelined"],
            "--mode",
        ),
        (&["linear-regression", b, "--isolate"], "odd length"),
    ];
    for (args, want) in cases {
        let out = ember().args(args).current_dir(dir.path()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(want), "{args:?}: {stderr}");
    }
    assert!(!dir.path().join("s.json").exists());
}

/// Runs `ember wordcount --isolate` over many small splits, one worker at
/// a time, and SIGKILLs a worker mid-run: the command's standard error and
/// exit status, or `None` if the run ended before a worker could be
/// killed.
fn kill_a_worker(files: &[PathBuf], out: &Path) -> Option<(String, bool)> {
    let mut child = ember()
        .args(["wordcount", "--isolate", "--retries", "0", "-t", "1"])
        .args(["--split-size", "64", "-o"])
        .arg(out)
        .args(files)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut killed = false;
    while !killed && child.try_wait().unwrap().is_none() {
        for pid in workers_of(child.id()) {
            let pid: libc::pid_t = pid.parse().unwrap();
            // SAFETY: `kill` has no memory preconditions; the pid is one of
            // this test's isolated workers.
            killed |= unsafe { libc::kill(pid, libc::SIGKILL) } == 0;
        }
    }
    let done = child.wait_with_output().unwrap();
    killed.then(|| {
        let stderr = String::from_utf8_lossy(&done.stderr).into_owned();
        (stderr, done.status.success())
    })
}

#[test]
fn a_killed_worker_fails_the_command_with_one_line_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (text, ..) = inputs(dir.path());
    let out = dir.path().join("counts");
    let names_before = support::names(dir.path());
    let shm_before = shm();
    // A worker found in /proc may end before the signal lands: try again.
    let (stderr, _) = (0..5)
        .find_map(|_| kill_a_worker(&text, &out).filter(|(_, succeeded)| !succeeded))
        .expect("no run with a worker killed");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("SIGKILL"), "{stderr}");
    assert!(stderr.contains(dir.path().to_str().unwrap()), "{stderr}");
    assert_no_orphans();
    assert_eq!(shm(), shm_before);
    assert_eq!(support::names(dir.path()), names_before);
}

/// The means `kmeans --isolate` hands its workers live in shared memory
/// named by the parent's descriptor: nothing is left in the temporary
/// directory when the run ends, when Ctrl-C ends it, or when SIGPIPE does
/// (its reader gone, as under `| head`).
#[test]
fn isolated_kmeans_leaves_no_means_file() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let points = kmeans_points(dir.path(), 20_000, 3);
    let kmeans = |iterations: &str| {
        let mut cmd = ember();
        cmd.arg("kmeans")
            .arg(&points)
            .args(["-k", "50", "--max-iter", iterations, "--isolate", "-o", "-"])
            .env("TMPDIR", tmp.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        cmd
    };
    let done = kmeans("2").output().unwrap();
    assert!(done.status.success(), "{done:?}");
    assert_eq!(support::names(tmp.path()), Vec::<String>::new());

    let child = kmeans("100000").spawn().unwrap();
    wait_for_memfd(child.id(), "ember-input");
    // SAFETY: `kill` only sends a signal to the child we started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "ember: interrupted\n");
    assert_eq!(support::names(tmp.path()), Vec::<String>::new());
    assert_no_orphans();

    let mut cmd = kmeans("3");
    let child = cmd.stdout(std::process::Stdio::piped()).spawn().unwrap();
    wait_for_memfd(child.id(), "ember-input");
    let mut child = child;
    drop(child.stdout.take());
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}");
    assert_eq!(support::names(tmp.path()), Vec::<String>::new());
    assert_no_orphans();
}

/// Waits until process `pid` holds a memfd named `name` (its job file).
fn wait_for_memfd(pid: u32, name: &str) {
    let start = std::time::Instant::now();
    let want = format!("/memfd:{name}");
    let holds = || {
        std::fs::read_dir(format!("/proc/{pid}/fd"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .any(|l| l.to_string_lossy().starts_with(&want))
    };
    while !holds() {
        assert!(start.elapsed().as_secs() < 60, "no {want} in {pid}");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

/// `ember gen KIND ARGS -o DIR/NAME`: the file.
fn gen_matrix(dir: &Path, name: &str, kind: &str, args: &[&str]) -> PathBuf {
    let path = dir.join(name);
    let gen = ember()
        .args(["gen", kind])
        .args(args)
        .arg("-o")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    path
}

/// `ember pca` (values small and large: both of its dot-product paths)
/// and `ember matrix-multiply` write the same file and summary isolated
/// as in threads, for 1, 2 and 4 workers and two split sizes (one row a
/// split, and several).
#[test]
fn isolated_pca_and_matrix_multiply_equal_threads() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = gen_matrix(d, "small.mat", "pca", &["--rows", "37", "--cols", "53"]);
    let large = gen_matrix(
        d,
        "large.mat",
        "pca",
        &[
            "--rows",
            "21",
            "--cols",
            "9",
            "--max",
            "2000000000",
            "--seed",
            "3",
        ],
    );
    let a = gen_matrix(d, "a.mat", "matmul", &["--n", "45", "--cols", "70"]);
    let b = gen_matrix(
        d,
        "b.mat",
        "matmul",
        &["--n", "70", "--cols", "29", "--seed", "8"],
    );
    let out = d.join("out");
    let cases: [(Vec<&Path>, &str, &str); 4] = [
        (vec![small.as_path()], "pca", "1KiB"),
        (vec![large.as_path()], "pca", "100"),
        (vec![a.as_path(), b.as_path()], "matrix-multiply", "1KiB"),
        (vec![a.as_path(), b.as_path()], "matrix-multiply", "100"),
    ];
    let shm_before = shm();
    for (files, name, split) in &cases {
        let run = |extra: &[&str]| {
            let _ = std::fs::remove_file(&out);
            let done = ember()
                .arg(name)
                .args(files)
                .arg("-o")
                .arg(&out)
                .args(extra)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&done.stderr);
            assert!(done.status.success(), "{name} {extra:?}: {stderr}");
            // The multiply's first summary line is its time and speed.
            let summary = String::from_utf8_lossy(&done.stdout);
            let summary: Vec<&str> = summary
                .lines()
                .filter(|l| !l.starts_with("matrix multiply: "))
                .collect();
            let file = std::fs::read(&out).unwrap();
            (file, cut_times(summary.join("\n").as_bytes()))
        };
        let want = run(&["-t", "1"]);
        assert!(want.0.len() > 1000 && want.1.len() > 20, "{want:?}");
        for workers in ["1", "2", "4"] {
            let got = run(&["--isolate", "-t", workers, "--split-size", *split]);
            assert!(
                got == want,
                "{name} isolated, {workers} workers, splits of {split}:\n{}\n{}",
                got.1,
                want.1
            );
            assert_no_orphans();
        }
    }
    assert_eq!(shm(), shm_before);
}

/// A matrix `ember pca --isolate` or `ember matrix-multiply --isolate`
/// cannot take is a one-line error, as in threads.
#[test]
fn isolated_pca_and_matrix_multiply_bad_inputs_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let column = gen_matrix(d, "column.mat", "kmeans", &["--points", "5", "--dims", "1"]);
    let a = gen_matrix(d, "a.mat", "matmul", &["--n", "4", "--cols", "3"]);
    let text = d.join("text.txt");
    std::fs::write(&text, "not a matrix file, only some text\n").unwrap();
    let cases: [(Vec<&Path>, &str, &str); 4] = [
        (
            vec![column.as_path()],
            "pca",
            "covariance needs at least 2 columns",
        ),
        (vec![text.as_path()], "pca", "not an ember matrix file"),
        (
            vec![a.as_path(), a.as_path()],
            "matrix-multiply",
            "A needs as many columns as B has rows",
        ),
        (
            vec![a.as_path(), text.as_path()],
            "matrix-multiply",
            "not an ember matrix file",
        ),
    ];
    for (files, name, want) in cases {
        let out = ember()
            .arg(name)
            .args(&files)
            .args(["--isolate", "-t", "2"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{name} {files:?}");
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(stderr.contains(want), "{name}: {stderr}");
    }
    assert_no_orphans();
}
