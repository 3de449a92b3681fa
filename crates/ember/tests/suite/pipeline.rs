//! The pipelined mode: same output as the barrier, bounded buffering,
//! errors instead of hangs, and the fallbacks the stats report.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ember::{
    Combiner, Emit, Error, Input, Job, KeyHint, MapOnlyJob, MapResult, Phase, Records, RunOptions,
    Runtime, Split, Sum,
};

use ember::stats::{ModeReason, RunMode};
use ember::tune::{Mode, PipelineOptions};

use crate::modes;
use modes::{assert_modes_agree, options, within};

/// A byte histogram: how often each byte value occurs, folded by the
/// combiner `C` (a sum, or one of the sums below that misbehave). The one
/// job of these tests, in every shape they need: pipelinable or not, with
/// or without a key hint, emitting a key at a time or in batches, with
/// panics on demand.
struct Histogram<C = Sum> {
    pipelinable: bool,
    /// Emits through `emit_batch`, a few dozen bytes at a time.
    batched: bool,
    keys: KeyHint,
    panic_in_map_on: Option<u8>,
    panic_in_reduce_on: Option<u8>,
    combiner: PhantomData<C>,
}

impl<C> Default for Histogram<C> {
    fn default() -> Self {
        Histogram {
            pipelinable: true,
            batched: false,
            keys: KeyHint::Unknown,
            panic_in_map_on: None,
            panic_in_reduce_on: None,
            combiner: PhantomData,
        }
    }
}

impl<C> Job for Histogram<C>
where
    C: Combiner<u64, State = u64> + Default,
    for<'a> C: Combiner<u64, Reduced<'a> = u64>,
{
    type Key = u8;
    type Value = u64;
    type Combiner = C;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Fixed(1)
    }

    fn keys(&self) -> KeyHint {
        self.keys
    }

    fn map<E: Emit<u8, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        if self.batched {
            split
                .data
                .chunks(40)
                .for_each(|bytes| emit.emit_batch(bytes, 1));
            return Ok(());
        }
        for &b in split.data {
            if Some(b) == self.panic_in_map_on {
                panic!("map saw byte {b}");
            }
            emit.emit(b, 1);
        }
        Ok(())
    }

    fn reduce(&self, key: &u8, n: u64) -> u64 {
        if Some(*key) == self.panic_in_reduce_on {
            panic!("reduce saw key {key}");
        }
        n
    }

    fn pipelinable(&self) -> bool {
        self.pipelinable
    }
}

/// Skewed bytes: a few values are frequent, all 256 occur.
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let r = (x % 1000) as u32;
            if r < 600 {
                (r % 8) as u8
            } else {
                (x >> 20) as u8
            }
        })
        .collect()
}

fn sequential_histogram(data: &[u8]) -> Vec<(u8, u64)> {
    let mut counts = [0u64; 256];
    for &b in data {
        counts[b as usize] += 1;
    }
    (0..=255u8)
        .filter(|&b| counts[b as usize] > 0)
        .map(|b| (b, counts[b as usize]))
        .collect()
}

#[test]
fn histogram_is_the_same_in_both_modes() {
    for (n, seed) in [(0, 1), (1, 2), (5_000, 3), (200_000, 4)] {
        let data = bytes(n, seed);
        let out = assert_modes_agree(
            &Histogram::<Sum>::default(),
            &Input::bytes(&data),
            &[None, Some(7)],
        );
        assert_eq!(out, sequential_histogram(&data), "{n} bytes");
    }
}

#[test]
fn batched_emits_are_the_same_in_both_modes() {
    let batched = Histogram::<Sum> {
        batched: true,
        ..Histogram::default()
    };
    for (n, seed) in [(0, 1), (39, 2), (5_000, 3), (200_000, 4)] {
        let data = bytes(n, seed);
        let out = assert_modes_agree(&batched, &Input::bytes(&data), &[None, Some(7)]);
        assert_eq!(out, sequential_histogram(&data), "{n} bytes");
    }
}

/// Counts 32-bit little-endian integers mod a key range, with a combiner
/// whose merge (what a reducer does with each folded entry) sleeps.
struct SlowFolds {
    keys: u32,
}

/// A sum that calls `H::on_merge` before each merge (what a reducer does
/// with every folded entry).
#[derive(Clone, Default)]
struct HookedSum<H>(PhantomData<H>);

/// What [`HookedSum`] does on a merge.
trait MergeHook: Clone + Default + Send + Sync {
    fn on_merge();
}

impl<H: MergeHook> Combiner<u64> for HookedSum<H> {
    type State = u64;
    type Reduced<'a> = u64;
    fn init(&self, v: u64) -> u64 {
        v
    }
    fn add(&self, s: &mut u64, v: u64) {
        *s += v;
    }
    fn merge(&self, s: &mut u64, other: u64) {
        H::on_merge();
        *s += other;
    }
    fn finish<O>(&self, s: u64, reduce: impl FnOnce(u64) -> O) -> O {
        reduce(s)
    }
}

/// Merges are slow on worker 0: reducer 0 falls behind the mappers, which
/// keep sending it buffers.
#[derive(Clone, Default)]
struct Slow;

impl MergeHook for Slow {
    fn on_merge() {
        if std::thread::current().name() == Some("ember-worker-0") {
            std::thread::sleep(Duration::from_micros(50));
        }
    }
}

impl Job for SlowFolds {
    type Key = u32;
    type Value = u64;
    type Combiner = HookedSum<Slow>;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Fixed(4)
    }

    fn map<E: Emit<u32, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for c in split.data.chunks_exact(4) {
            let v = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            emit.emit(v % self.keys, 1);
        }
        Ok(())
    }

    fn reduce(&self, _key: &u32, n: u64) -> u64 {
        n
    }

    fn pipelinable(&self) -> bool {
        true
    }
}

#[test]
fn buffered_bytes_stay_within_the_bound_with_a_slow_reducer() {
    let data: Vec<u8> = (0..20_000u32)
        .flat_map(|i| (i * 7_919 % 20_000).to_le_bytes())
        .collect();
    let job = SlowFolds { keys: 5_000 };
    for threads in [1, 2, 4] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        let bound = 32 << 10;
        let opts = options(
            Mode::Pipelined,
            PipelineOptions::default()
                .buffer_bytes(512)
                .max_buffered_bytes(bound),
            Some(4 << 10),
        );
        let out = rt.run_with(&job, &Input::bytes(&data), &opts).unwrap();
        let p = out.stats.pipeline.clone().unwrap();
        assert!(
            p.peak_buffered_bytes <= bound,
            "{threads} threads: peak {} over the bound {bound}",
            p.peak_buffered_bytes
        );
        assert!(p.peak_buffered_bytes > 0);
        if threads > 1 {
            // The bound was reached: the other mappers had to wait for
            // reducer 0, which folds a buffer in about a millisecond.
            assert!(p.backpressure_waits > 0, "{threads} threads: {p:?}");
        }
        assert!(p.buffers_allocated * p.buffer_bytes <= bound);
        assert!(p.batches > p.buffers_allocated as u64, "buffers are reused");
        let total: u64 = out.pairs.iter().map(|(_, n)| n).sum();
        assert_eq!(total, 20_000);
        assert_eq!(out.pairs.len(), 5_000);
        assert!(out.pairs.iter().all(|&(_, n)| n == 4));
    }
}

#[test]
fn too_small_a_bound_is_a_config_error() {
    let rt = Runtime::builder().threads(4).build().unwrap();
    let opts = options(
        Mode::Pipelined,
        PipelineOptions::default().max_buffered_bytes(100),
        None,
    );
    let err = rt
        .run_with(&Histogram::<Sum>::default(), &Input::bytes(b"abc"), &opts)
        .err()
        .unwrap();
    assert!(matches!(err, Error::Config(_)), "{err}");
    assert!(err.to_string().contains("too small for the pipelined mode"));
}

/// Runs `job` pipelined on 4 threads in its own thread and expects an error
/// within 60 s; the runtime must be usable afterwards.
fn expect_panic_error(job: Histogram, data: Vec<u8>, buffer_bytes: usize) -> Error {
    within(60, move || {
        let rt = Runtime::builder().threads(4).build().unwrap();
        let opts = options(
            Mode::Pipelined,
            PipelineOptions::default().buffer_bytes(buffer_bytes),
            Some(64),
        );
        let err = rt.run_with(&job, &Input::bytes(&data), &opts).err();
        let again = rt
            .run_with(&Histogram::<Sum>::default(), &Input::bytes(b"aab"), &opts)
            .unwrap();
        assert_eq!(again.pairs, vec![(b'a', 2), (b'b', 1)]);
        err.expect("the run should fail")
    })
}

#[test]
fn a_panic_in_map_is_an_error_not_a_hang() {
    let mut data = bytes(100_000, 9);
    data[70_000] = 255;
    for buffer in [1, 4096] {
        let job = Histogram {
            panic_in_map_on: Some(255),
            ..Default::default()
        };
        let err = expect_panic_error(job, data.clone(), buffer);
        assert_eq!(
            err.to_string(),
            "the job's map function panicked: map saw byte 255"
        );
    }
}

#[test]
fn a_panic_in_reduce_is_an_error_not_a_hang() {
    for buffer in [1, 4096] {
        let job = Histogram {
            panic_in_reduce_on: Some(3),
            ..Default::default()
        };
        let err = expect_panic_error(job, bytes(100_000, 10), buffer);
        assert!(
            matches!(
                err,
                Error::Panicked {
                    phase: Phase::Reduce,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "the job's reduce function panicked: reduce saw key 3"
        );
    }
}

/// Whether [`Panicky`] merges panic.
static ARMED: AtomicBool = AtomicBool::new(false);

/// Merges panic once armed: a panic while a reducer folds buffers (and,
/// under back-pressure, while a mapper folds).
#[derive(Clone, Default)]
struct Panicky;

impl MergeHook for Panicky {
    fn on_merge() {
        if ARMED.load(Ordering::Relaxed) {
            panic!("merge failed");
        }
    }
}

#[test]
fn a_panic_while_folding_is_a_reduce_error_not_a_hang() {
    let err = within(60, || {
        ARMED.store(true, Ordering::Relaxed);
        let rt = Runtime::builder().threads(3).build().unwrap();
        let data = bytes(50_000, 11);
        let opts = options(
            Mode::Pipelined,
            PipelineOptions::default()
                .buffer_bytes(1)
                .max_buffered_bytes(64 << 10),
            Some(100),
        );
        rt.run_with(
            &Histogram::<HookedSum<Panicky>>::default(),
            &Input::bytes(&data),
            &opts,
        )
        .expect_err("the run should fail")
    });
    assert_eq!(
        err.to_string(),
        "the job's reduce function panicked: merge failed"
    );
}

/// A histogram that does not declare itself pipelinable.
fn plain() -> Histogram {
    Histogram {
        pipelinable: false,
        ..Default::default()
    }
}

#[test]
fn a_job_that_cannot_be_pipelined_falls_back_to_the_barrier() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let data = bytes(10_000, 12);
    let out = rt
        .run_with(
            &plain(),
            &Input::bytes(&data),
            &options(Mode::Pipelined, Default::default(), None),
        )
        .unwrap();
    assert_eq!(out.stats.plan.mode, RunMode::Barrier);
    assert_eq!(
        out.stats.plan.mode_reason,
        ModeReason::NotPipelinable {
            asked: Mode::Pipelined
        }
    );
    assert!(out.stats.pipeline.is_none());
    assert_eq!(out.pairs, sequential_histogram(&data));
    assert!(out.stats.to_string().contains("mode      barrier"));
}

/// `Auto` keeps the barrier whatever the job's shape, and says so; an
/// explicit barrier says it was the caller's choice.
#[test]
fn auto_keeps_the_barrier_and_says_why() {
    let data = bytes(10_000, 13);
    let input = Input::bytes(&data);
    let auto = RunOptions::default();
    let one = Runtime::builder().threads(1).build().unwrap();
    let two = Runtime::builder().threads(2).build().unwrap();
    let dense = Histogram::<Sum> {
        keys: KeyHint::Dense(256),
        ..Default::default()
    };
    let forced = RunOptions::default().container(ember::ContainerKind::Hash);
    let runs = [
        one.run_with(&Histogram::<Sum>::default(), &input, &auto),
        two.run_with(&dense, &input, &auto),
        two.run_with(&plain(), &input, &auto),
        two.run_with(&Histogram::<Sum>::default(), &input, &forced),
    ];
    for (i, out) in runs.into_iter().enumerate() {
        let plan = out.unwrap().stats.plan;
        assert_eq!(
            (plan.mode, plan.mode_reason),
            (RunMode::Barrier, ModeReason::Auto),
            "case {i}"
        );
    }
    let explicit = options(Mode::Barrier, Default::default(), None);
    let s = two
        .run_with(&Histogram::<Sum>::default(), &input, &explicit)
        .unwrap()
        .stats;
    assert_eq!(
        (s.plan.mode, s.plan.mode_reason),
        (RunMode::Barrier, ModeReason::Caller)
    );
    assert!(s
        .to_string()
        .contains("mode      barrier: chosen by the caller"));
}

#[test]
fn both_modes_report_busy_time_and_utilization() {
    let data = bytes(300_000, 14);
    let rt = Runtime::builder().threads(2).build().unwrap();
    for mode in [Mode::Barrier, Mode::Pipelined] {
        let out = rt
            .run_with(
                &Histogram::<Sum>::default(),
                &Input::bytes(&data),
                &options(mode, Default::default(), Some(16 << 10)),
            )
            .unwrap();
        let s = &out.stats;
        assert_eq!(s.plan.mode.name(), mode.name());
        assert_eq!(s.map_busy_secs.len(), 2);
        assert_eq!(s.reduce_busy_secs.len(), 2);
        assert!(s.map_busy_secs.iter().sum::<f64>() > 0.0, "{mode}");
        assert!(
            s.utilization > 0.0 && s.utilization <= 1.0,
            "{mode}: {}",
            s.utilization
        );
        assert!(s.to_string().contains("utilization"), "{s}");
    }
}

#[test]
fn dedicated_reducers_give_the_same_output() {
    let data = bytes(100_000, 15);
    for threads in [2, 4] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for dedicated in [1, threads] {
            let opts = options(
                Mode::Pipelined,
                PipelineOptions::default()
                    .buffer_bytes(1)
                    .dedicated_reducers(dedicated),
                Some(1000),
            );
            let out = rt
                .run_with(&Histogram::<Sum>::default(), &Input::bytes(&data), &opts)
                .unwrap();
            assert_eq!(out.pairs, sequential_histogram(&data));
            let p = out.stats.pipeline.unwrap();
            // At least one worker always maps.
            assert_eq!(p.dedicated_reducers, dedicated.min(threads - 1));
            let mapped = out.stats.map_tasks.iter().filter(|&&t| t > 0).count();
            assert!(mapped <= threads - p.dedicated_reducers);
        }
    }
}

/// Lines as (line number, length) pairs: a map-only job.
struct LineLengths;

impl MapOnlyJob for LineLengths {
    type Key = u64;
    type Value = usize;
    fn map(&self, split: Split<'_>, out: &mut Vec<(u64, usize)>) -> MapResult {
        for (i, line) in split.data.split(|&b| b == b'\n').enumerate() {
            out.push((split.offset + i as u64, line.len()));
        }
        Ok(())
    }
}

#[test]
fn map_only_jobs_say_so_in_both_modes() {
    let rt = Runtime::builder().threads(2).build().unwrap();
    let text = "a\nbb\nccc\n".repeat(1000);
    for mode in [Mode::Barrier, Mode::Pipelined, Mode::Auto] {
        let out = rt
            .run_map_only(
                &LineLengths,
                &Input::bytes(text.as_bytes()),
                &options(mode, Default::default(), Some(100)),
            )
            .unwrap();
        let s = &out.stats;
        assert!(s.reduce_skipped());
        assert_eq!(s.plan.mode, RunMode::MapOnly);
        assert_eq!(s.plan.mode_reason, ModeReason::MapOnly { asked: mode });
        assert!(s.to_string().contains("map-only job: skipped"));
        assert!(s.utilization > 0.0);
    }
}

#[test]
fn modes_parse_by_name() {
    for m in [Mode::Auto, Mode::Barrier, Mode::Pipelined] {
        assert_eq!(m.name().parse::<Mode>().unwrap(), m);
    }
    assert!("eager"
        .parse::<Mode>()
        .unwrap_err()
        .to_string()
        .contains("unknown mode"));
}
