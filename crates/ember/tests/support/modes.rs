//! Test helpers for the execution modes, shared by the runtime's and the
//! workloads' pipeline tests (included with `#[path]`): any job whose output
//! is comparable can be checked in a line.

#![allow(dead_code)] // each test file uses its own subset

use std::fmt::Debug;
use std::sync::mpsc;
use std::time::Duration;

use ember::stats::{ModeReason, RunMode};
use ember::tune::{Mode, PipelineOptions};
use ember::{Input, Job, Output, RunOptions, Runtime, Stats};

/// Thread counts every comparison runs with.
pub const THREADS: [usize; 3] = [1, 2, 8];

/// Buffer settings for the pipelined runs: tiny (a hand-off every key, the
/// most hand-offs and helping), the default, and huge (1 MiB: one buffer
/// holds a whole test input, so hand-offs happen only at the end).
pub fn buffer_settings() -> Vec<(&'static str, PipelineOptions)> {
    vec![
        ("tiny buffers", PipelineOptions::default().buffer_bytes(1)),
        ("default buffers", PipelineOptions::default()),
        (
            "huge buffers",
            PipelineOptions::default().buffer_bytes(1 << 20),
        ),
    ]
}

/// Run options for one mode.
pub fn options(mode: Mode, pipeline: PipelineOptions, split_size: Option<usize>) -> RunOptions {
    RunOptions::default()
        .mode(mode)
        .pipeline(pipeline)
        .split_size(split_size)
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

/// Asserts that `run` (a workload run on a runtime with some options,
/// returning its result and the stats of its run, or of its last job) gives
/// in pipelined mode exactly what it gives in barrier mode, for every
/// thread count of [`THREADS`], every buffer setting of [`buffer_settings`]
/// and each split size given (`None`: the default), and that the stats say
/// which mode ran and that the buffered bytes stayed within the bound.
/// Returns the barrier result of the last thread count, for further checks.
pub fn assert_runs_agree<T: PartialEq + Debug>(
    split_sizes: &[Option<usize>],
    run: impl Fn(&Runtime, &RunOptions) -> (T, Stats),
) -> T {
    let mut last = None;
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for &split in split_sizes {
            let (want, stats) = run(&rt, &options(Mode::Barrier, Default::default(), split));
            assert_eq!(stats.plan.mode, RunMode::Barrier);
            for (name, pipe) in buffer_settings() {
                let (got, stats) = run(&rt, &options(Mode::Pipelined, pipe, split));
                let what = format!("{threads} threads, split size {split:?}, {name}");
                let why = &stats.plan.mode_reason;
                assert_eq!(stats.plan.mode, RunMode::Pipelined, "{what}: {why}");
                let p = stats.pipeline.as_ref().expect("pipeline stats");
                assert!(p.peak_buffered_bytes <= p.max_buffered_bytes, "{what}");
                assert!(got == want, "{what}: outputs differ");
            }
            last = Some(want);
        }
    }
    last.expect("at least one thread count and split size")
}

/// [`assert_runs_agree`] for one job on one input, also checking that both
/// modes count the same pairs. Returns the barrier output of the last
/// thread count.
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
    let (pairs, _) = assert_runs_agree(split_sizes, |rt, opts| {
        let out = run_mode(rt, job, input, opts);
        ((out.pairs, out.stats.pairs_emitted), out.stats)
    });
    pairs
}

/// Asserts that a job that is not pipelinable, asked for the pipelined
/// mode, runs with the barrier, gives the barrier's output and says why in
/// the stats, for every thread count of [`THREADS`]. `run` is as for
/// [`assert_runs_agree`].
pub fn assert_falls_back<T: PartialEq + Debug>(run: impl Fn(&Runtime, &RunOptions) -> (T, Stats)) {
    for threads in THREADS {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let (want, _) = run(&rt, &options(Mode::Barrier, Default::default(), None));
        for (name, pipe) in buffer_settings() {
            let (got, stats) = run(&rt, &options(Mode::Pipelined, pipe, None));
            let what = format!("{threads} threads, {name}");
            assert_eq!(stats.plan.mode, RunMode::Barrier, "{what}");
            assert!(
                matches!(stats.plan.mode_reason, ModeReason::NotPipelinable { .. }),
                "{what}: {}",
                stats.plan.mode_reason
            );
            assert!(stats.pipeline.is_none(), "{what}");
            assert!(got == want, "{what}: outputs differ");
        }
    }
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
