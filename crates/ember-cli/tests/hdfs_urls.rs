//! `hdfs://` arguments without a cluster: a malformed URL, a namenode that
//! refuses connections or never answers, and a build without the `hdfs`
//! feature are each one line and exit 1. (`hdfs_cluster.rs` tests against
//! a real HDFS.)

use std::net::TcpListener;
use std::process::Output;
#[cfg(feature = "hdfs")]
use std::time::{Duration, Instant};

mod support;
use support::ember;

fn wordcount(url: &str) -> Output {
    ember()
        .args(["wordcount", url, "-t", "2"])
        .output()
        .expect("ember runs")
}

/// A failure: exit 1 and exactly one line on stderr, which is returned.
fn one_line_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("ember: "), "{err}");
    err
}

#[test]
fn a_malformed_url_says_what_is_wrong() {
    for (url, why) in [
        ("hdfs:/data/x.txt", "does not start with hdfs://"),
        ("hdfs://127.0.0.1:port/x", "'port' is not a port"),
        ("hdfs://:9000/x", "a port without a host"),
    ] {
        let err = one_line_error(&wordcount(url));
        assert!(
            err.contains(&format!("malformed HDFS URL '{url}'")),
            "{err}"
        );
        assert!(err.contains(why), "{err}");
    }
    // The other commands that read files take URLs too.
    let out = ember()
        .args(["string-match", "hdfs:/keys.txt", "-t", "1"])
        .output()
        .unwrap();
    assert!(one_line_error(&out).contains("malformed HDFS URL"));
}

/// A local port nobody listens on.
fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[cfg(not(feature = "hdfs"))]
#[test]
fn without_the_feature_a_url_says_how_to_get_it() {
    let url = format!("hdfs://127.0.0.1:{}/x", closed_port());
    let err = one_line_error(&wordcount(&url));
    assert!(err.contains("built without HDFS support"), "{err}");
    assert!(err.contains("--features hdfs"), "{err}");
}

#[cfg(feature = "hdfs")]
#[test]
fn a_namenode_that_refuses_is_reported_in_seconds() {
    let port = closed_port();
    let url = format!("hdfs://127.0.0.1:{port}/data");
    let t = Instant::now();
    let err = one_line_error(&wordcount(&url));
    assert!(t.elapsed() < Duration::from_secs(12), "{:?}", t.elapsed());
    assert_eq!(
        err.trim_end(),
        format!(
            "ember: cannot read '{url}': cannot reach the namenode 127.0.0.1:{port}: \
             Connection refused (os error 111)"
        )
    );
}

/// A namenode that accepts connections and never answers: the wait is
/// bounded (15 s per request to the namenode).
#[cfg(feature = "hdfs")]
#[test]
fn a_namenode_that_never_answers_times_out() {
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    // Accepts and holds connections, reading nothing, until the test ends.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in silent.incoming() {
            held.push(conn);
        }
    });
    let url = format!("hdfs://127.0.0.1:{port}/data");
    let t = Instant::now();
    let err = one_line_error(&wordcount(&url));
    let waited = t.elapsed();
    assert!(
        (Duration::from_secs(14)..Duration::from_secs(30)).contains(&waited),
        "{waited:?}"
    );
    assert!(
        err.contains(&format!(
            "cannot read '{url}': no answer from the namenode 127.0.0.1:{port} within 15 s"
        )),
        "{err}"
    );
}
