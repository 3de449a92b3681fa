//! `ember` against a real HDFS: every command that reads files gives from
//! `hdfs://` URLs what it gives from the same files on the local disk, and
//! a missing path or a file it may not read is one line.
//!
//! The cluster is named by `EMBER_HDFS_URL` (`hdfs://HOST:PORT`, where
//! this user is the superuser, as on the one-node cluster that
//! `scripts/test-hdfs.sh` starts); the tests write under
//! `/ember-tests/PID`. Without it each test prints that it was skipped;
//! with it, anything wrong fails.

use std::path::PathBuf;
use std::process::Output;

use hdfs_native::sync::{Client, ClientBuilder};
use hdfs_native::WriteOptions;

mod support;
use support::ember;

/// The test cluster and this test's folder in it.
struct Cluster {
    url: String,
    client: Client,
    /// This test's folder in HDFS.
    root: String,
    /// A local folder for the same files.
    local: tempfile::TempDir,
}

/// The cluster, or `None` (with a notice) when `EMBER_HDFS_URL` is unset.
fn cluster(test: &str) -> Option<Cluster> {
    let Some(url) = std::env::var("EMBER_HDFS_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        // Straight to the process's stderr: the test harness would hide
        // an `eprintln!` of a passing test.
        let notice =
            format!("skipped {test}: EMBER_HDFS_URL is not set (scripts/test-hdfs.sh sets it)\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr(), notice.as_bytes());
        return None;
    };
    let url = url.trim_end_matches('/').to_string();
    let client = ClientBuilder::new().with_url(&url).build().unwrap();
    let root = format!("/ember-tests/{}/{test}", std::process::id());
    client.mkdirs(&root, 0o755, true).unwrap();
    let local = tempfile::tempdir().unwrap();
    Some(Cluster {
        url,
        client,
        root,
        local,
    })
}

impl Cluster {
    /// Writes `data` to `rel` under the test's folder, in HDFS (blocks of
    /// `block` bytes) and locally; returns the URL and the local path.
    fn put(&self, rel: &str, data: &[u8], block: u64) -> (String, PathBuf) {
        let path = format!("{}/{rel}", self.root);
        let opts = WriteOptions::default()
            .block_size(block)
            .create_parent(true);
        let mut w = self.client.create(&path, opts).unwrap();
        for piece in data.chunks(1 << 20) {
            w.write_bytes(bytes::Bytes::copy_from_slice(piece)).unwrap();
        }
        w.close().unwrap();
        let local = self.local.path().join(rel);
        std::fs::create_dir_all(local.parent().unwrap()).unwrap();
        std::fs::write(&local, data).unwrap();
        (self.url(rel), local)
    }

    /// The URL of `rel` under the test's folder.
    fn url(&self, rel: &str) -> String {
        format!("{}{}/{rel}", self.url, self.root)
    }
}

/// Bytes of `ember gen KIND --size SIZE`.
fn gen(kind: &str, size: &str, seed: u32) -> Vec<u8> {
    let out = ember()
        .args(["gen", kind, "--size", size, "--seed", &seed.to_string()])
        .args(["-o", "-"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    out.stdout
}

/// Runs `ember ARGS...`; fails the test on a failure.
fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    let out = ember().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A command's results: its standard output less the `#` summary lines
/// (they hold times).
fn results(out: &str) -> String {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n")
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| s.to_string()).collect()
}

#[test]
fn a_folder_counts_as_its_files_do_locally() {
    let Some(c) = cluster("folder") else { return };
    let (_, a) = c.put("in/a.txt", &gen("text", "300KiB", 1), 128 << 20);
    let (_, b) = c.put("in/sub/b.txt", &gen("text", "1MiB", 2), 128 << 20);
    let (_, e) = c.put("in/empty.txt", b"", 128 << 20);
    // Left out of a folder, as Hadoop's input formats leave them out.
    c.put("in/_SUCCESS", b"not words\n", 128 << 20);
    c.put("in/.a.txt.crc", b"not words\n", 128 << 20);
    let mut args = strings(&["wordcount", "-o", "-"]);
    args.extend([a, b, e].iter().map(|p| p.display().to_string()));
    let local = run(&args);
    for threads in ["1", "2"] {
        for chunk in ["64KiB", "1MiB", "64MiB"] {
            let url = c.url("in");
            let args = [
                "wordcount",
                &url,
                "-o",
                "-",
                "-t",
                threads,
                "--chunk-size",
                chunk,
            ];
            assert_eq!(run(&args), local, "{threads} threads, chunks of {chunk}");
        }
    }
}

#[test]
fn a_file_of_many_blocks_reads_across_ranges() {
    let Some(c) = cluster("blocks") else { return };
    // 20 MiB in 1 MiB blocks: each 8 MiB read range spans blocks.
    let (url, local) = c.put("big.txt", &gen("text", "20MiB", 3), 1 << 20);
    let want = run(&["wordcount", local.to_str().unwrap(), "-o", "-"]);
    let got = run(&[
        "wordcount",
        &url,
        "-o",
        "-",
        "-t",
        "2",
        "--chunk-size",
        "3MiB",
    ]);
    assert_eq!(got, want);
    // The top words, without -o.
    let top = |f: &str| results(&run(&["wordcount", f, "-k", "5"]));
    assert_eq!(top(&url), top(local.to_str().unwrap()));
}

#[test]
fn local_files_and_urls_mix() {
    let Some(c) = cluster("mix") else { return };
    let (_, a) = c.put("a.txt", &gen("text", "200KiB", 4), 128 << 20);
    let (url_b, b) = c.put("b.txt", &gen("text", "200KiB", 5), 128 << 20);
    let local = run(&[
        "wordcount",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        "-",
    ]);
    let mixed = run(&["wordcount", a.to_str().unwrap(), &url_b, "-o", "-"]);
    assert_eq!(mixed, local);
}

#[test]
fn string_match_and_linear_regression_read_urls() {
    let Some(c) = cluster("others") else { return };
    let (url, local) = c.put("keys.txt", &gen("string-match", "2MiB", 6), 1 << 20);
    let sm = |f: &str| results(&run(&["string-match", f, "-t", "2"]));
    assert_eq!(sm(&url), sm(local.to_str().unwrap()));
    let (url, local) = c.put("points.bin", &gen("linear-regression", "2MiB", 7), 1 << 20);
    let lr = |f: &str| results(&run(&["linear-regression", f, "-t", "2"]));
    assert_eq!(lr(&url), lr(local.to_str().unwrap()));
}

#[test]
fn a_gzip_file_reads_as_its_text() {
    let Some(c) = cluster("gzip") else { return };
    let text = gen("text", "3MiB", 8);
    let (_, plain) = c.put("text.txt", &text, 1 << 20);
    let zipped = std::process::Command::new("gzip")
        .args(["-c", plain.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(zipped.status.success());
    let (url, _) = c.put("text.txt.gz", &zipped.stdout, 1 << 20);
    let want = run(&["wordcount", plain.to_str().unwrap(), "-o", "-"]);
    assert_eq!(run(&["wordcount", &url, "-o", "-", "-t", "2"]), want);
}

/// Runs `ember wordcount URL` (as `user`, if given); expects exit 1 and
/// one line.
fn error_as(user: Option<&str>, url: &str) -> String {
    let mut cmd = ember();
    cmd.args(["wordcount", url]);
    if let Some(user) = user {
        cmd.env("HADOOP_USER_NAME", user);
    }
    let out: Output = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn missing_and_forbidden_paths_are_one_line() {
    let Some(c) = cluster("errors") else { return };
    let missing = c.url("no/such.txt");
    assert_eq!(
        error_as(None, &missing),
        format!("ember: cannot read '{missing}': No such file or directory")
    );
    // Mode 000, read by a user who is not the superuser.
    let (url, _) = c.put("locked.txt", b"locked words\n", 128 << 20);
    c.client
        .set_permission(&format!("{}/locked.txt", c.root), 0)
        .unwrap();
    let err = error_as(Some("ember-nobody"), &url);
    assert!(
        err.starts_with(&format!(
            "ember: cannot read '{url}': Permission denied: user=ember-nobody, access=READ"
        )),
        "{err}"
    );
    // The superuser reads it.
    assert!(results(&run(&["wordcount", &url])).contains("locked\t1"));
    // A folder that holds no files.
    c.client
        .mkdirs(&format!("{}/none", c.root), 0o755, true)
        .unwrap();
    let none = c.url("none");
    assert_eq!(
        error_as(None, &none),
        format!("ember: no input files: folder '{none}' holds no files")
    );
}
