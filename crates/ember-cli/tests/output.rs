//! Output files appear whole or not at all: an interrupted run leaves the
//! old file and no temporary one, and two runs writing the same file leave
//! one complete file. Several ember processes at once on the same input
//! each write the exact result.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod support;
use support::{ember, names};

/// Waits until `child` has a temporary file for `target` in `dir`.
fn wait_for_temporary(child: &mut Child, dir: &Path, target: &str) {
    let start = Instant::now();
    let prefix = format!(".{target}.");
    while !names(dir).iter().any(|n| n.starts_with(&prefix)) {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("ember ended ({status}) before it created its temporary file");
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no temporary file"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn an_interrupted_run_leaves_the_old_file_and_no_temporary_one() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.txt");
        std::fs::write(&target, "old\n").unwrap();
        // Far more than can be written before the signal lands.
        let mut child = ember()
            .args(["gen", "text", "--size", "4GiB", "-o"])
            .arg(&target)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_temporary(&mut child, dir.path(), "out.txt");
        // SAFETY: `kill` only sends a signal to the child we started.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "signal {signal}");
        assert_eq!(String::from_utf8_lossy(&out.stderr), "ember: interrupted\n");
        assert_eq!(names(dir.path()), vec!["out.txt"]);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
    }
}

/// What `ember gen text` writes for `seed`.
fn text(seed: u32, path: &Path, sync: bool) -> Command {
    let mut c = ember();
    c.args(["gen", "text", "--size", "2MiB", "--seed", &seed.to_string()])
        .arg("-o")
        .arg(path);
    if sync {
        c.arg("--sync");
    }
    c.stderr(Stdio::null());
    c
}

#[test]
fn runs_writing_the_same_file_leave_one_of_them_whole() {
    let dir = tempfile::tempdir().unwrap();
    let expected: Vec<Vec<u8>> = (1..=4)
        .map(|seed| {
            let p = dir.path().join(format!("alone{seed}.txt"));
            assert!(text(seed, &p, false).status().unwrap().success());
            std::fs::read(&p).unwrap()
        })
        .collect();
    let shared: PathBuf = dir.path().join("shared.txt");
    let children: Vec<Child> = (1..=4)
        .map(|seed| text(seed, &shared, seed % 2 == 0).spawn().unwrap())
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let got = std::fs::read(&shared).unwrap();
    assert!(
        expected.contains(&got),
        "a mix of runs, {} bytes",
        got.len()
    );
    let mut want: Vec<String> = (1..=4).map(|s| format!("alone{s}.txt")).collect();
    want.push("shared.txt".into());
    assert_eq!(names(dir.path()), want);
}

/// Starts every command at once, then waits for all: each must succeed.
fn run_at_once(commands: impl IntoIterator<Item = Command>) {
    let children: Vec<Child> = commands
        .into_iter()
        .map(|mut c| c.stderr(Stdio::null()).spawn().unwrap())
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
}

/// The file `ember gen WHAT AMOUNT --seed SEED` writes, in `dir`.
fn generated(dir: &Path, what: &str, amount: [&str; 2], seed: u32) -> PathBuf {
    let path = dir.join(format!("{what}{seed}.in"));
    let status = ember()
        .args(["gen", what])
        .args(amount)
        .args(["--seed", &seed.to_string(), "-o"])
        .arg(&path)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "ember gen {what}");
    path
}

/// `ember wordcount INPUT -o OUT`.
fn wordcount(input: &Path, out: &Path) -> Command {
    let mut c = ember();
    c.arg("wordcount").arg(input).arg("-o").arg(out);
    c.stdout(Stdio::null());
    c
}

/// What `ember wordcount -o` writes for `input`, from the sequential
/// oracle: a `word\tcount` line per word, in word order.
fn counted(input: &Path) -> Vec<u8> {
    let data = std::fs::read(input).unwrap();
    let mut tsv = Vec::new();
    for (word, n) in ember_apps::wordcount::sequential(&[&data]) {
        tsv.extend_from_slice(&word);
        tsv.extend_from_slice(format!("\t{n}\n").as_bytes());
    }
    tsv
}

#[test]
fn four_processes_on_the_same_input_each_write_the_exact_result() {
    let dir = tempfile::tempdir().unwrap();
    let text = generated(dir.path(), "text", ["--size", "4MiB"], 1);
    let records = generated(dir.path(), "sort", ["--records", "40000"], 2);
    let (words, sorted) = (
        counted(&text),
        ember_apps::sort::sequential(&std::fs::read(&records).unwrap()).unwrap(),
    );
    let out = |what: &str, i: usize| dir.path().join(format!("{what}{i}.out"));
    run_at_once((0..4).flat_map(|i| {
        let mut sort = ember();
        sort.arg("sort").arg(&records).arg("-o").arg(out("sort", i));
        [wordcount(&text, &out("wc", i)), sort]
    }));
    for i in 0..4 {
        assert!(
            std::fs::read(out("wc", i)).unwrap() == words,
            "wordcount {i}"
        );
        assert!(std::fs::read(out("sort", i)).unwrap() == sorted, "sort {i}");
    }
}

#[test]
fn two_processes_with_different_inputs_writing_the_same_output_leave_one_whole() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = [1, 2].map(|seed| generated(dir.path(), "text", ["--size", "4MiB"], seed));
    let results = inputs.clone().map(|p| counted(&p));
    assert_ne!(results[0], results[1]);
    let shared = dir.path().join("shared.tsv");
    for attempt in 0..3 {
        run_at_once(inputs.iter().map(|p| wordcount(p, &shared)));
        let got = std::fs::read(&shared).unwrap();
        assert!(
            results.contains(&got),
            "attempt {attempt}: a mix of runs, {} bytes",
            got.len()
        );
        let want = ["shared.tsv", "text1.in", "text2.in"];
        assert_eq!(names(dir.path()), want, "attempt {attempt}");
    }
}

/// An output file gets the mode a plain `create` gives (0666 less the
/// umask), not the temporary file's owner-only 0600, and a file it
/// replaces keeps its own mode.
#[test]
fn output_files_get_the_usual_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let new = dir.path().join("new.txt");
    // The umask is set in a shell around the child, not in this process.
    let cmd = format!(
        "umask 022 && exec '{}' gen text --size 1KiB -o '{}'",
        env!("CARGO_BIN_EXE_ember"),
        new.display()
    );
    assert!(Command::new("sh")
        .args(["-c", &cmd])
        .status()
        .unwrap()
        .success());
    assert_eq!(mode(&new), 0o644);

    let old = dir.path().join("old.txt");
    std::fs::write(&old, "before").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o640)).unwrap();
    assert!(text(1, &old, false).status().unwrap().success());
    assert_eq!(mode(&old), 0o640);
    assert_ne!(std::fs::read(&old).unwrap(), b"before");
}

/// With `-o -` the results alone are on standard output (the summary goes
/// to standard error), byte for byte what `-o FILE` writes.
#[test]
fn standard_output_holds_only_the_results() {
    let dir = tempfile::tempdir().unwrap();
    let pca = generated(dir.path(), "pca", ["--rows", "6"], 1);
    let points = generated(dir.path(), "kmeans", ["--points", "300"], 2);
    let factor = generated(dir.path(), "matrix-multiply", ["--n", "5"], 3);
    let jobs: [&[&str]; 3] = [&["kmeans", "-k", "4"], &["pca"], &["matrix-multiply"]];
    for (job, inputs) in jobs
        .iter()
        .zip([vec![&points], vec![&pca], vec![&factor, &factor]])
    {
        let file = dir.path().join("out");
        let run = |out: &Path| {
            let o = ember()
                .args(*job)
                .args(&inputs)
                .arg("-o")
                .arg(out)
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "{job:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            o
        };
        let to_file = run(&file);
        assert!(
            !to_file.stdout.is_empty(),
            "{job:?}: a summary on standard output"
        );
        let to_stdout = run(Path::new("-"));
        assert_eq!(to_stdout.stdout, std::fs::read(&file).unwrap(), "{job:?}");
        assert!(
            !to_stdout.stderr.is_empty(),
            "{job:?}: the summary on standard error"
        );
    }
}

/// Whether process `pid` catches SIGINT (its `SigCgt` mask in /proc).
fn catches_sigint(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (libc::SIGINT - 1)) != 0)
}

/// A word count over a small input starts no signal thread; a signal
/// still prints the one line and exits with 128 + its number. The run
/// waits in opening its output, a named pipe nobody reads.
#[test]
fn a_small_run_without_the_signal_thread_still_says_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "a few words\n").unwrap();
    let fifo = dir.path().join("out.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `mkfifo` reads a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let mut child = ember()
        .arg("wordcount")
        .arg(&input)
        .arg("-o")
        .arg(&fifo)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !catches_sigint(child.id()) {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("ember ended ({status}) before it handled signals");
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no handler");
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: `kill` only sends a signal to the child we started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "ember: interrupted\n");
}

/// What `ember inverted-index --lines -o` writes for `input`, from the
/// sequential oracle: `word\tid,id,...` per word, in word order.
fn indexed(input: &Path) -> Vec<u8> {
    use ember_apps::inverted_index::{sequential, Docs};
    let data = std::fs::read(input).unwrap();
    let mut tsv = Vec::new();
    for (word, ids) in sequential(&[&data], Docs::Lines).unwrap() {
        let ids: Vec<String> = ids.iter().map(u32::to_string).collect();
        tsv.extend_from_slice(word.as_bytes());
        tsv.extend_from_slice(format!("\t{}\n", ids.join(",")).as_bytes());
    }
    tsv
}

/// Outputs of many megabytes are formatted in batches on every thread and
/// written in order: word count and the inverted index of lines write the
/// sequential oracle's bytes on 1, 2 and 3 threads and several split sizes.
#[test]
fn outputs_of_many_batches_are_the_oracles_on_every_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let amount = ["--size", "6MiB"];
    let text = generated(dir.path(), "text", amount, 3);
    // Many words, each seen about as often: an output of about 3 MiB.
    let wide = dir.path().join("wide.in");
    let status = ember()
        .args(["gen", "text", amount[0], amount[1]])
        .args(["--vocab", "400000", "--zipf", "0.5", "-o"])
        .arg(&wide)
        .status()
        .unwrap();
    assert!(status.success());
    let jobs: [(&str, &Path, Vec<u8>); 2] = [
        ("wordcount", &wide, counted(&wide)),
        ("inverted-index", &text, indexed(&text)),
    ];
    // Both outputs span several of the formatter's 1 MiB batches.
    assert!(jobs.iter().all(|(_, _, want)| want.len() > 2 << 20));
    let out = dir.path().join("out.tsv");
    for (job, input, want) in &jobs {
        for threads in ["1", "2", "3"] {
            for split in ["64KiB", "1MiB"] {
                let mut c = ember();
                c.arg(job)
                    .arg(input)
                    .args(["-t", threads, "--split-size", split]);
                if *job == "inverted-index" {
                    c.arg("--lines");
                }
                let o = c.arg("-o").arg(&out).output().unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                let got = std::fs::read(&out).unwrap();
                assert!(&got == want, "{job}, {threads} threads, split {split}");
            }
        }
    }
}
