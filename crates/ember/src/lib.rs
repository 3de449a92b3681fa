//! # ember
//!
//! A MapReduce runtime for one large shared-memory machine.
//!
//! A user writes a [`Job`]: `map` over splits of the input, emitting
//! key/value pairs; a [`Combiner`] that folds the values of a key as they are
//! emitted; and `reduce`, which turns each key's combined state into an
//! output value. A [`Runtime`] (a pool of worker threads, built once) runs
//! any number of jobs and returns the output sorted, with [`Stats`] saying
//! where the time went.
//!
//! ```
//! use ember::{Bytes, Emit, Input, Job, Records, Runtime, Split, Sum};
//!
//! struct Letters;
//! impl Job for Letters {
//!     type Key = u8;
//!     type Value = u64;
//!     type Combiner = Sum;
//!     type Out = u64;
//!     fn records(&self) -> Records { Records::Fixed(1) }
//!     fn map<E: Emit<u8, u64>>(&self, split: Split<'_>, emit: &mut E) {
//!         for &b in split.data { emit.emit(b, 1) }
//!     }
//!     fn reduce(&self, _k: &u8, n: u64) -> u64 { n }
//! }
//!
//! let rt = Runtime::builder().threads(2).build()?;
//! let out = rt.run(&Letters, &Input::bytes(b"abca"))?;
//! assert_eq!(out.pairs, vec![(b'a', 2), (b'b', 1), (b'c', 1)]);
//! # Ok::<(), ember::Error>(())
//! ```
//!
//! Design notes for people extending the runtime are in `docs/runtime.md`.

#![deny(missing_docs, unreachable_pub, unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod combine;
mod container;
mod error;
mod ingest;
mod input;
mod job;
mod key;
mod merge;
mod pipeline;
mod pool;
mod predict;
mod runtime;
mod stats;

pub use combine::{Combiner, KeepAll, Max, Min, Sum};
pub use container::{ContainerKind, KeyHint};
pub use error::{Error, Phase, Result};
pub use ingest::{DEFAULT_CHUNK_BUFFERS, DEFAULT_CHUNK_SIZE};
pub use input::{Ingest, Input, DEFAULT_SPLIT_SIZE};
pub use job::{Emit, Job, MapOnlyJob, Records, Split, StateOf};
pub use key::{Bytes, BytesProbe, Key, INLINE_KEY_BYTES};
pub use merge::MergeKind;
pub use pipeline::{
    default_max_buffered_bytes, Mode, PipelineOptions, PipelineStats, DEFAULT_BUFFER_BYTES,
};
pub use runtime::{Output, RunOptions, Runtime, RuntimeBuilder};
pub use stats::{ChunkStats, Stats};

/// Asks the CPU to bring the cache line at `p` in ahead of a read: for map
/// functions and gathers that read memory at random, a few items ahead of
/// the one they work on. A hint only: it never faults, whatever `p` is.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint with no architectural effect: it never
    // faults, even on an invalid address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
