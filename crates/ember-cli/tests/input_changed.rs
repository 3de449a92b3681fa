//! `ember wordcount` over a file that another process truncates while
//! ember has it mapped: one line naming the file and exit code 1, never
//! "Bus error" (signal 7, exit 135) and never a partial result.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// True once process `pid` has `path` memory-mapped.
fn maps(pid: u32, path: &Path) -> bool {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    maps.lines().any(|l| l.ends_with(&*path.to_string_lossy()))
}

/// Writes `mib` MiB of words.
fn write_words(path: &Path, mib: usize) {
    let line = b"alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu\n";
    let mut block = Vec::with_capacity(1 << 20);
    while block.len() + line.len() <= 1 << 20 {
        block.extend_from_slice(line);
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for _ in 0..mib {
        f.write_all(&block).unwrap();
    }
    f.flush().unwrap();
}

/// Runs `ember wordcount` on a 64 MiB file and truncates it to 1 MiB as
/// soon as the file shows in the process's maps. A run can finish before
/// the cut lands (then it must have counted everything): a few tries.
#[test]
fn a_file_truncated_under_wordcount_is_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.txt");
    let mut changed = 0;
    for _ in 0..5 {
        write_words(&path, 64);
        let len = std::fs::metadata(&path).unwrap().len();
        let child = Command::new(env!("CARGO_BIN_EXE_ember"))
            .args(["wordcount", path.to_str().unwrap(), "--threads", "2"])
            .args(["--ingest", "mmap", "--top", "3"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !maps(child.id(), &path) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(1 << 20)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), None, "killed: {stderr}");
        if out.status.success() {
            // Done before the cut: the whole file was counted.
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.starts_with("alpha\t"), "{stdout}");
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        let expected = format!(
            "ember: input '{}' changed while it was being read (it was {} bytes, now {})",
            path.display(),
            len,
            1 << 20
        );
        assert_eq!(stderr.trim_end(), expected);
        assert!(out.stdout.is_empty(), "a partial result was printed");
        changed += 1;
    }
    assert!(changed > 0, "no run saw the cut in 5 tries");
}
