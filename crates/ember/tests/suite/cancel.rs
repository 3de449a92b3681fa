//! A run cancelled through its `Progress` stops at its next split and
//! returns `Error::Cancelled`, in every mode and for a stream; the runtime
//! then runs the next job exactly.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use ember::tune::Mode;
use ember::{
    Emit, Error, Input, Job, MapResult, Progress, Records, RunOptions, Runtime, Split, Sum,
};

/// Counts 4-byte keys, and cancels its run's progress handle when its
/// `cancel_at`-th split is mapped.
struct CancelsItself {
    progress: Progress,
    cancel_at: u64,
    mapped: AtomicU64,
}

impl Job for CancelsItself {
    type Key = u32;
    type Value = u64;
    type Combiner = Sum;
    type Out = u64;

    fn records(&self) -> Records {
        Records::Fixed(4)
    }

    fn pipelinable(&self) -> bool {
        true
    }

    fn map<E: Emit<u32, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        for r in split.data.chunks_exact(4) {
            emit.emit(u32::from_le_bytes(r.try_into().unwrap()) % 97, 1);
        }
        if self.mapped.fetch_add(1, Relaxed) + 1 == self.cancel_at {
            self.progress.cancel();
        }
        Ok(())
    }

    fn reduce(&self, _k: &u32, n: u64) -> u64 {
        n
    }
}

fn numbers(n: u32) -> Vec<u8> {
    (0..n).flat_map(|i| i.to_le_bytes()).collect()
}

#[test]
fn a_cancelled_run_stops_and_the_runtime_goes_on() {
    let data = numbers(1 << 18);
    let splits = (data.len() / 4096) as u64;
    for threads in [1, 2, 3] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for (mode, streamed) in [
            (Mode::Barrier, false),
            (Mode::Pipelined, false),
            (Mode::Barrier, true),
        ] {
            let what = format!("{threads} threads, {mode:?}, streamed {streamed}");
            let progress = Progress::new();
            let job = CancelsItself {
                progress: progress.clone(),
                cancel_at: 3,
                mapped: AtomicU64::new(0),
            };
            let opts = RunOptions::default()
                .split_size(4096)
                .chunk_size(64 << 10)
                .mode(mode)
                .progress(progress.clone());
            let input = match streamed {
                true => Input::reader("numbers", std::io::Cursor::new(data.clone())),
                false => Input::bytes(&data),
            };
            let err = rt.run_with(&job, &input, &opts).unwrap_err();
            assert!(matches!(err, Error::Cancelled), "{what}: {err}");
            assert!(progress.is_cancelled());
            // Each worker may finish the split it is on, no more.
            let mapped = job.mapped.load(Relaxed);
            assert!(
                mapped < 3 + threads as u64,
                "{what}: {mapped} of {splits} splits mapped"
            );

            // The next run, with a fresh handle, is exact.
            let job = CancelsItself {
                progress: Progress::new(),
                cancel_at: u64::MAX,
                mapped: AtomicU64::new(0),
            };
            let out = rt.run(&job, &Input::bytes(&data)).unwrap();
            let total: u64 = out.pairs.iter().map(|p| p.1).sum();
            assert_eq!(total, 1 << 18, "{what}");
        }
    }
}
