//! Test helpers for the execution modes, shared by the runtime's and the
//! workloads' pipeline tests (included with `#[path]`): any job whose output
//! is comparable can be checked in a line.

#![allow(dead_code)] // each test file uses its own subset

use std::fmt::Debug;
use std::sync::mpsc;
use std::time::Duration;

use ember::{Input, Job, Mode, Output, PipelineOptions, RunOptions, Runtime};

/// Thread counts every comparison runs with.
pub const THREADS: [usize; 3] = [1, 2, 8];

/// Buffer settings for the pipelined runs: tiny (a hand-off every key, the
/// most hand-offs and helping), the default, and huge (1 MiB: one buffer
/// holds a whole test input, so hand-offs happen only at the end).
pub fn buffer_settings() -> Vec<(&'static str, PipelineOptions)> {
    vec![
        (
            "tiny buffers",
            PipelineOptions {
                buffer_bytes: Some(1),
                ..Default::default()
            },
        ),
        ("default buffers", PipelineOptions::default()),
        (
            "huge buffers",
            PipelineOptions {
                buffer_bytes: Some(1 << 20),
                ..Default::default()
            },
        ),
    ]
}

/// Run options for one mode.
pub fn options(mode: Mode, pipeline: PipelineOptions, split_size: Option<usize>) -> RunOptions {
    RunOptions {
        mode: Some(mode),
        pipeline,
        split_size,
        ..Default::default()
    }
}

/// Runs `job` in one mode, panicking on an error.
pub fn run_mode<J: Job>(
    rt: &Runtime,
    job: &J,
    input: &Input<'_>,
    opts: &RunOptions,
) -> Output<J::Key, J::Out> {
    rt.run_with(job, input, opts)
        .unwrap_or_else(|e| panic!("{:?} run failed: {e}", opts.mode))
}

/// Asserts that the pipelined mode gives exactly the barrier mode's output
/// for every thread count of [`THREADS`], every buffer setting of
/// [`buffer_settings`], and each split size given (`None`: the default),
/// and that the stats say which mode ran. Returns the barrier output of the
/// last thread count, for further checks.
pub fn assert_modes_agree<J>(
    job: &J,
    input: &Input<'_>,
    split_sizes: &[Option<usize>],
) -> Vec<(J::Key, J::Out)>
where
    J: Job,
    J::Key: Debug,
    J::Out: PartialEq + Debug,
{
    let mut last = Vec::new();
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for &split in split_sizes {
            let barrier = run_mode(
                &rt,
                job,
                input,
                &options(Mode::Barrier, Default::default(), split),
            );
            assert_eq!(barrier.stats.mode, "barrier");
            for (name, pipe) in buffer_settings() {
                let got = run_mode(&rt, job, input, &options(Mode::Pipelined, pipe, split));
                let what = format!("{threads} threads, split size {split:?}, {name}");
                assert_eq!(got.stats.mode, "pipelined", "{what}");
                let p = got.stats.pipeline.as_ref().expect("pipeline stats");
                assert!(p.peak_buffered_bytes <= p.max_buffered_bytes, "{what}");
                assert_eq!(
                    got.stats.pairs_emitted, barrier.stats.pairs_emitted,
                    "{what}"
                );
                assert!(got.pairs == barrier.pairs, "{what}: outputs differ");
            }
            last = barrier.pairs;
        }
    }
    last
}

/// Runs `f` on its own thread and returns its result, failing the test if
/// it takes longer than `secs` seconds (a hang).
pub fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no result within {secs} s: a hang"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the run's thread panicked"),
    }
}
