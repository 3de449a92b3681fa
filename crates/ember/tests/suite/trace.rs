//! A run's trace and progress: a span for every split, reduce partition,
//! chunk read and phase, spans of one worker never overlap, the Chrome form
//! parses, and the progress counter ends at the input's size in the last
//! phase. Every mode and ingest; the trace never changes the output.

use std::collections::BTreeMap;
use std::time::Duration;

use ember::stats::RunMode;
use ember::trace::{Span, SpanKind, Track};
use ember::tune::Mode;
use ember::{ContainerKind, Input, KeyHint, Phase, Progress, RunOptions, Runtime, Stats, Trace};

use crate::tally;
use tally::{keyed, Tally, FEW};

fn tally() -> Tally {
    Tally {
        hint: KeyHint::Unknown,
        mapped: Default::default(),
    }
}

/// The spans of `kind`.
fn of(spans: &[Span], kind: SpanKind) -> Vec<&Span> {
    spans.iter().filter(|s| s.kind == kind).collect()
}

/// No two spans on one worker's track overlap.
fn assert_workers_do_one_thing_at_a_time(spans: &[Span], what: &str) {
    let mut by_track: BTreeMap<Track, Vec<&Span>> = BTreeMap::new();
    for s in spans.iter().filter(|s| matches!(s.track, Track::Worker(_))) {
        by_track.entry(s.track).or_default().push(s);
    }
    for (track, mut spans) in by_track {
        spans.sort_by_key(|s| s.start);
        for w in spans.windows(2) {
            let end = w[0].start + w[0].duration;
            assert!(end <= w[1].start, "{what}: {track:?} overlaps: {w:?}");
        }
    }
}

/// The map tasks cover every split once: indices `0..splits`, bytes adding
/// up to the input.
fn assert_every_split_once(spans: &[Span], stats: &Stats, what: &str) {
    let maps = of(spans, SpanKind::Task(Phase::Map));
    let mut indices: Vec<u64> = maps.iter().map(|s| s.index.unwrap()).collect();
    indices.sort_unstable();
    let want: Vec<u64> = (0..stats.splits as u64).collect();
    assert_eq!(indices, want, "{what}: map task indices");
    let bytes: u64 = maps.iter().map(|s| s.bytes.unwrap()).sum();
    assert_eq!(bytes, stats.input_bytes, "{what}: map task bytes");
    let pairs: u64 = maps.iter().map(|s| s.pairs.unwrap()).sum();
    assert_eq!(pairs, stats.pairs_emitted, "{what}: map task pairs");
}

#[test]
fn every_split_partition_and_phase_is_a_span() {
    let data = keyed(FEW);
    for threads in [1, 2, 4] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let plain = rt.run(&tally(), &Input::bytes(&data)).unwrap().pairs;
        for mode in [Mode::Barrier, Mode::Pipelined] {
            let what = format!("{threads} threads, {mode}");
            let trace = Trace::new();
            // A container that needs no sample: every split is a map task.
            let opts = RunOptions::default()
                .split_size(8192)
                .container(ContainerKind::Append)
                .mode(mode)
                .trace(trace.clone());
            let out = rt.run_with(&tally(), &Input::bytes(&data), &opts).unwrap();
            assert!(out.pairs == plain, "{what}: the trace changed the output");
            let spans = trace.spans();
            assert_every_split_once(&spans, &out.stats, &what);
            assert_workers_do_one_thing_at_a_time(&spans, &what);
            let reduces = of(&spans, SpanKind::Task(Phase::Reduce));
            let keys: u64 = reduces.iter().map(|s| s.pairs.unwrap()).sum();
            assert_eq!(keys, out.stats.distinct_keys, "{what}: reduce keys");
            if out.stats.plan.mode == RunMode::Barrier {
                let tasks: u64 = out.stats.reduce_tasks.iter().sum();
                assert_eq!(reduces.len() as u64, tasks, "{what}: reduce tasks");
            }
            for p in [Phase::Split, Phase::Map, Phase::Merge] {
                assert_eq!(of(&spans, SpanKind::Phase(p)).len(), 1, "{what}: {p}");
            }
            let runs = of(&spans, SpanKind::Run);
            assert_eq!(runs.len(), 1, "{what}");
            let total = Duration::from_secs_f64(out.stats.total_secs);
            assert!(
                runs[0].duration >= total,
                "{what}: the run span covers the run"
            );
            assert!(spans.iter().all(|s| s.start >= runs[0].start), "{what}");
        }
    }
}

#[test]
fn a_sampled_run_traces_its_sample_and_a_streamed_one_its_reads() {
    let data = keyed(FEW);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let trace = Trace::new();
    let opts = RunOptions::default().split_size(8192).trace(trace.clone());
    let out = rt.run_with(&tally(), &Input::bytes(&data), &opts).unwrap();
    // Auto keeps the sample's hash containers: sample and map tasks
    // together cover the input once.
    assert_eq!(out.stats.plan.container, ContainerKind::Hash);
    let spans = trace.spans();
    let sampled = of(&spans, SpanKind::Task(Phase::Sample));
    assert!(!sampled.is_empty());
    let mapped = of(&spans, SpanKind::Task(Phase::Map));
    let bytes: u64 = sampled
        .iter()
        .chain(&mapped)
        .map(|s| s.bytes.unwrap())
        .sum();
    assert_eq!(bytes, data.len() as u64);
    assert_eq!(of(&spans, SpanKind::Phase(Phase::Sample)).len(), 1);
    assert_workers_do_one_thing_at_a_time(&spans, "sampled");

    let trace = Trace::new();
    let opts = RunOptions::default()
        .split_size(8192)
        .chunk_size(100_000)
        .trace(trace.clone());
    let input = Input::reader("stream", std::io::Cursor::new(data.clone()));
    let out = rt.run_with(&tally(), &input, &opts).unwrap();
    let spans = trace.spans();
    assert_every_split_once(&spans, &out.stats, "streamed");
    let reads = of(&spans, SpanKind::Read);
    assert_eq!(reads.len(), out.stats.chunks.len());
    assert!(reads.iter().all(|r| r.track == Track::Ingest));
    let read: u64 = reads.iter().map(|r| r.bytes.unwrap()).sum();
    assert_eq!(read, data.len() as u64);
}

#[test]
fn the_chrome_form_has_an_event_per_span_and_named_tracks() {
    let data = keyed(FEW);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let trace = Trace::new();
    let opts = RunOptions::default().split_size(8192).trace(trace.clone());
    rt.run_with(&tally(), &Input::bytes(&data), &opts).unwrap();
    let mut json = Vec::new();
    trace.write_chrome(&mut json).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let complete: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(complete.len(), trace.spans().len());
    assert!(complete
        .iter()
        .all(|e| e["ts"].is_number() && e["dur"].is_number()));
    // Every track with a span has a name; which workers got tasks depends
    // on the schedule.
    let named: std::collections::BTreeMap<u64, &str> = events
        .iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| {
            (
                e["tid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    for e in &complete {
        assert!(named.contains_key(&e["tid"].as_u64().unwrap()), "{e}");
    }
    let names: Vec<&str> = named.values().copied().collect();
    for want in ["run", "merge"] {
        assert!(names.contains(&want), "no track named {want}: {names:?}");
    }
    assert!(names.iter().any(|n| n.starts_with("worker ")), "{names:?}");
}

#[test]
fn progress_ends_at_the_input_size_in_the_last_phase() {
    let data = keyed(FEW);
    let rt = Runtime::builder().threads(2).build().unwrap();
    let progress = Progress::new();
    assert_eq!(progress.phase(), None);
    let opts = RunOptions::default().progress(progress.clone());
    rt.run_with(&tally(), &Input::bytes(&data), &opts).unwrap();
    assert_eq!(progress.phase(), Some(Phase::Merge));
    assert_eq!(
        (progress.bytes(), progress.total()),
        (data.len() as u64, data.len() as u64)
    );
    // A stream of unknown length adds nothing to the total.
    let input = Input::reader("stream", std::io::Cursor::new(data.clone()));
    rt.run_with(&tally(), &input, &opts).unwrap();
    assert_eq!(progress.total(), data.len() as u64);
    assert_eq!(progress.bytes(), 2 * data.len() as u64);
}
