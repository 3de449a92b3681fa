//! Spilling from the command line: the output equals the unlimited run's,
//! the spill directory is removed after a success, a full disk and Ctrl-C,
//! a full disk is one line on stderr with no output file left, and a limit
//! bounds the process's peak memory.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::{ember, names};

/// `dir/name`, written by `ember gen ARGS -o dir/name`.
fn generated(dir: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let path = dir.join(name);
    let status = ember()
        .arg("gen")
        .args(args)
        .arg("-o")
        .arg(&path)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    path
}

/// A generated text of `size` in `dir/text.txt`.
fn corpus(dir: &Path, size: &str) -> std::path::PathBuf {
    generated(dir, "text.txt", &["text", "--size", size])
}

/// 40,000 sort records (`ember gen sort`) in `dir/records.dat`.
fn records(dir: &Path) -> std::path::PathBuf {
    generated(dir, "records.dat", &["sort", "--records", "40000"])
}

#[test]
fn a_spilling_run_writes_what_an_unlimited_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let text = corpus(dir.path(), "4MiB");
    for (job, extra) in [("wordcount", None), ("inverted-index", Some("--lines"))] {
        let run = |out: &str, limit: Option<&str>| {
            let mut c = ember();
            c.arg(job)
                .args(extra)
                .arg(&text)
                .arg("-o")
                .arg(dir.path().join(out));
            if let Some(limit) = limit {
                c.args(["--memory-limit", limit, "--stats", "--spill-dir"]);
                c.arg(spill.path());
            }
            let o = c.output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8(o.stderr).unwrap()
        };
        run("plain.tsv", None);
        let stats = run("spilled.tsv", Some("256KiB"));
        assert!(stats.contains(" spills: "), "{job}: no spill: {stats}");
        let read = |name: &str| std::fs::read(dir.path().join(name)).unwrap();
        assert!(
            read("plain.tsv") == read("spilled.tsv"),
            "{job}: output differs"
        );
        assert!(names(spill.path()).is_empty(), "{job}: spill files left");
    }
}

/// `ember sort` of records larger than `--memory-limit` is an external
/// sort: the same bytes as the in-memory sort, for 1, 2 and 7 threads and
/// several split sizes, the spill directory left empty, and the plan on
/// stderr.
#[test]
fn an_external_sort_writes_what_the_in_memory_sort_does() {
    let dir = tempfile::tempdir().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let records = records(dir.path());
    let sort = |out: &str, extra: &[&str]| {
        let o = ember()
            .arg("sort")
            .arg(&records)
            .arg("-o")
            .arg(dir.path().join(out))
            .args(extra)
            .arg("--spill-dir")
            .arg(spill.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stderr).unwrap()
    };
    let plain = sort("plain.dat", &[]);
    assert!(!plain.contains("external"), "{plain}");
    let want = std::fs::read(dir.path().join("plain.dat")).unwrap();
    assert_eq!(want.len(), 4_000_000);
    for threads in ["1", "2", "7"] {
        for split in [None, Some("1000"), Some("100KiB")] {
            let mut extra = vec!["-t", threads, "--memory-limit", "1MiB"];
            extra.extend(split.iter().flat_map(|s| ["--split-size", s]));
            let said = sort("external.dat", &extra);
            let what = format!("{threads} threads, split {split:?}");
            assert!(said.contains("(external: "), "{what}: {said}");
            let got = std::fs::read(dir.path().join("external.dat")).unwrap();
            assert!(got == want, "{what}: output differs");
            assert!(names(spill.path()).is_empty(), "{what}: spill files left");
        }
    }
}

/// Runs `ember ARGS --spill-dir SPILL` on a disk that fills up after
/// `kib` KiB: a file-size limit (`ulimit -f`, with SIGXFSZ ignored so that
/// a write fails with EFBIG instead of killing the process), which holds
/// for root too. Checks that it fails with one line starting with
/// `starts` and naming the error, and leaves no `out` and no spill file.
fn assert_full_disk_fails(args: &[&str], kib: u32, spill: &Path, out: &Path, starts: &str) {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let cmd = format!(
        "trap '' XFSZ; ulimit -f {kib}; exec '{}' {} --spill-dir '{}'",
        env!("CARGO_BIN_EXE_ember"),
        quoted.join(" "),
        spill.display()
    );
    let o = Command::new("sh").args(["-c", &cmd]).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(starts) && stderr.contains("File too large"),
        "{stderr}"
    );
    assert!(!out.exists(), "an output file was left");
    assert!(names(spill).is_empty(), "spill files left");
}

#[test]
fn a_full_disk_is_one_line_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let text = corpus(dir.path(), "8MiB");
    let out = dir.path().join("counts.tsv");
    let (t, o) = (text.to_str().unwrap(), out.to_str().unwrap());
    let args = ["wordcount", t, "-o", o, "--memory-limit", "64KiB"];
    assert_full_disk_fails(&args, 1024, spill.path(), &out, "ember: cannot spill to '");
    assert_eq!(names(dir.path()), vec!["text.txt"]);
}

/// An output of many batches, formatted on every thread, to a disk that
/// fills up part way (no memory limit, nothing spilled): one line naming
/// the output, no output file, the input alone left.
#[test]
fn an_output_past_a_full_disk_is_one_line_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let text = corpus(dir.path(), "8MiB");
    let out = dir.path().join("out.tsv");
    let (t, o) = (text.to_str().unwrap(), out.to_str().unwrap());
    for job in [&["wordcount", t][..], &["inverted-index", t, "--lines"]] {
        let args = [job, &["-o", o, "-t", "2"]].concat();
        assert_full_disk_fails(&args, 512, spill.path(), &out, "ember: cannot write '");
        assert_eq!(names(dir.path()), vec!["text.txt"]);
    }
}

/// The external sort's output, written at offsets by the workers, on a
/// disk that fills up (a file-size limit the runs stay under and the
/// output passes): one line naming the output, nothing left.
#[test]
fn an_external_sort_to_a_full_disk_is_one_line_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let records = records(dir.path());
    let out = dir.path().join("sorted.dat");
    let (r, o) = (records.to_str().unwrap(), out.to_str().unwrap());
    let args = ["sort", r, "-o", o, "-t", "2", "--memory-limit", "1MiB"];
    assert_full_disk_fails(&args, 2048, spill.path(), &out, "ember: cannot write '");
    assert_eq!(names(dir.path()), vec!["records.dat"]);
}

#[test]
fn ctrl_c_removes_the_spill_directory() {
    let dir = tempfile::tempdir().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let text = corpus(dir.path(), "64MiB");
    let mut child = ember()
        .args([
            "wordcount",
            "-t",
            "1",
            "--memory-limit",
            "64KiB",
            "--spill-dir",
        ])
        .arg(spill.path())
        .arg(&text)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while names(spill.path()).is_empty() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("ember ended ({status}) before it spilled");
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no spill");
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: `kill` only sends a signal to the child we started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "ember: interrupted\n");
    assert!(names(spill.path()).is_empty(), "spill files left");
}

/// Runs `ember ARGS` to the end; its peak resident memory in MiB.
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4, which also reports its usage"
)]
fn peak_rss_mib(args: &[std::ffi::OsString]) -> f64 {
    let child = ember()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value (integers and
    // timevals).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, not yet waited for; both
    // out-parameters live for the call.
    let got = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(got, child.id() as i32);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    // Linux gives ru_maxrss in KiB.
    usage.ru_maxrss as f64 / 1024.0
}

/// Word count of 256 MiB of text with a vocabulary of a million words,
/// streamed: unlimited, its tables and 2 x 64 MiB chunk buffers take
/// hundreds of MiB; under a 32 MiB limit the process stays within the
/// limit plus a constant: what the ledger does not track, which is
/// mostly the output (943,455 words and their counts, 30 MiB, then the
/// sorted copy the merge makes, 30 MiB more), the chunk buffers, the
/// binary and the threads' stacks, and what the allocator and the
/// kernel round up (large hash tables ask for transparent huge pages,
/// whose 2 MiB pages are resident whole). The peak varies from run to
/// run with when the workers spill; the constant leaves room for that
/// and stays far below the unlimited run.
#[test]
fn a_memory_limit_bounds_the_peak_memory() {
    const LIMIT_MIB: f64 = 32.0;
    const UNTRACKED_MIB: f64 = 128.0;
    let dir = tempfile::tempdir().unwrap();
    let text = corpus(dir.path(), "256MiB");
    let out = dir.path().join("counts.tsv");
    let run = |limit: Option<&str>| {
        let mut args: Vec<std::ffi::OsString> = ["wordcount", "-t", "2", "--ingest", "chunked"]
            .iter()
            .map(|a| a.into())
            .collect();
        args.extend([text.clone().into(), "-o".into(), out.clone().into()]);
        if let Some(limit) = limit {
            args.extend(["--memory-limit".into(), limit.into()]);
        }
        peak_rss_mib(&args)
    };
    let unlimited = run(None);
    let limited = run(Some("32MiB"));
    eprintln!("peak RSS: unlimited {unlimited:.1} MiB, limited {limited:.1} MiB");
    assert!(unlimited > 250.0, "unlimited: {unlimited:.1} MiB");
    assert!(
        limited < LIMIT_MIB + UNTRACKED_MIB,
        "limited to {LIMIT_MIB} MiB: {limited:.1} MiB (unlimited {unlimited:.1} MiB)"
    );
}
