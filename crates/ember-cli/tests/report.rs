//! `--trace` and `ember report` as a user meets them: a trace every split
//! and worker is in, and one self-contained HTML page with every section,
//! from a trace, from stats, or both; bad files get one line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn ember(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ember"))
        .args(args)
        .output()
        .expect("ember runs")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Word count over 2 MiB of generated text with `--trace` and
/// `--stats-json`, on 2 threads, with `extra` options; returns the paths of
/// the trace and the stats.
fn traced_run(dir: &Path, extra: &[&str]) -> (PathBuf, PathBuf) {
    let text = dir.join("in.txt");
    let out = ember(&["gen", "text", "--size", "2MiB", "-o", s(&text)]);
    assert!(out.status.success());
    let (trace, stats) = (dir.join("trace.json"), dir.join("stats.json"));
    let mut args = vec!["wordcount", s(&text), "-t", "2", "--split-size", "64KiB"];
    args.extend_from_slice(&["--trace", s(&trace), "--stats-json", s(&stats)]);
    args.extend_from_slice(extra);
    let out = ember(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (trace, stats)
}

fn json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

#[test]
fn a_trace_holds_every_split_once_and_one_task_at_a_time_per_worker() {
    let dir = tempfile::tempdir().unwrap();
    // Append (the sample redone), streamed (no sample), hash (the sample
    // kept).
    let chunked = ["--ingest", "chunked", "--chunk-size", "512KiB"];
    for extra in [&[][..], &chunked, &["--container", "hash"]] {
        let (trace, stats) = traced_run(dir.path(), extra);
        let (trace, stats) = (json(&trace), json(&stats));
        let events = trace["traceEvents"].as_array().unwrap();
        let tasks: Vec<&Value> = events
            .iter()
            .filter(|e| e["ph"] == "X" && e["cat"] == "task")
            .collect();
        let bytes = |name: &str| -> u64 {
            let of = tasks.iter().filter(|e| e["name"] == name);
            of.map(|e| e["args"]["bytes"].as_u64().unwrap()).sum()
        };
        // A kept sample (hash, on a mapped input) is part of the map work,
        // and the stats say how much; append maps the sampled splits
        // again, and a streamed input is not sampled.
        let kept = extra.contains(&"hash");
        let kept_bytes = stats["sample_kept_bytes"].as_u64().unwrap();
        let sampled = if kept { bytes("sample") } else { 0 };
        assert_eq!(kept_bytes, sampled, "{extra:?}");
        assert!(!kept || kept_bytes > 0, "{extra:?}");
        let mapped = bytes("map") + kept_bytes;
        assert_eq!(mapped, stats["input_bytes"].as_u64().unwrap(), "{extra:?}");
        let mut by_tid: std::collections::BTreeMap<u64, Vec<(f64, f64)>> = Default::default();
        for e in &tasks {
            let (ts, dur) = (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap());
            by_tid
                .entry(e["tid"].as_u64().unwrap())
                .or_default()
                .push((ts, ts + dur));
        }
        for (tid, mut spans) in by_tid {
            spans.sort_by(|a, b| a.0.total_cmp(&b.0));
            for w in spans.windows(2) {
                assert!(w[0].1 <= w[1].0, "{extra:?}: track {tid} overlaps: {w:?}");
            }
        }
        if !extra.is_empty() {
            let reads = events.iter().filter(|e| e["name"] == "read").count();
            assert_eq!(reads, stats["chunks"].as_array().unwrap().len());
        }
    }
}

/// The sections of a report, in order.
const SECTIONS: [&str; 7] = [
    "plan",
    "phases",
    "workers",
    "utilization",
    "keys",
    "chunks",
    "sinks",
];

fn report(files: &[&Path], out: &Path) -> String {
    let mut args = vec!["report"];
    args.extend(files.iter().map(|p| s(p)));
    args.extend_from_slice(&["-o", s(out)]);
    let run = ember(&args);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn a_report_has_every_section_a_span_per_event_and_fetches_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, stats) = traced_run(dir.path(), &[]);
    let html = report(&[&trace, &stats], &dir.path().join("r.html"));
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    let at: Vec<usize> = SECTIONS
        .iter()
        .map(|id| html.find(&format!("<section id=\"{id}\">")).expect(id))
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "sections out of order");
    // One rectangle per complete event of the trace.
    let events = json(&trace)["traceEvents"].as_array().unwrap().clone();
    let complete = events.iter().filter(|e| e["ph"] == "X").count();
    assert_eq!(html.matches("<rect class=\"span ").count(), complete);
    let maps = events.iter().filter(|e| e["name"] == "map").count();
    assert_eq!(html.matches("<rect class=\"span map\"").count(), maps);
    // Self-contained: no script, nothing loaded from elsewhere.
    for banned in ["<script", "src=", "href=", "url(", "@import"] {
        assert!(!html.contains(banned), "{banned}");
    }
    let stats = json(&stats);
    let container = stats["plan"]["container"].as_str().unwrap();
    assert!(html.contains(&format!("<td>{container}</td>")));
}

#[test]
fn a_report_from_stats_alone_or_a_trace_alone_says_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, stats) = traced_run(dir.path(), &[]);
    let html = report(&[&stats], &dir.path().join("s.html"));
    assert!(html.contains("Needs a trace (--trace)"));
    assert_eq!(
        html.matches("<rect class=\"span ").count(),
        5,
        "the phases from the stats"
    );
    let html = report(&[&trace], &dir.path().join("t.html"));
    assert!(html.contains("Needs the run&#39;s stats") || html.contains("Needs the run's stats"));
    assert!(html.contains("<path class=\"utilization\""));
}

#[test]
fn bad_report_inputs_get_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("words.txt");
    std::fs::write(&text, "not json").unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, "{\"a\": 1}").unwrap();
    let out = dir.path().join("r.html");
    for (file, says) in [
        (&text, "is not JSON"),
        (&other, "is neither a stats file"),
        (&dir.path().join("missing.json"), "cannot read"),
    ] {
        let run = ember(&["report", s(file), "-o", s(&out)]);
        assert!(!run.status.success());
        let err = String::from_utf8_lossy(&run.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(says) && err.contains(s(file)), "{err}");
        assert!(!out.exists(), "no report is written");
    }
}
