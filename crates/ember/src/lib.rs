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
//! use ember::{Emit, Input, Job, MapResult, Records, Runtime, Split, Sum};
//!
//! struct Letters;
//! impl Job for Letters {
//!     type Key = u8;
//!     type Value = u64;
//!     type Combiner = Sum;
//!     type Out = u64;
//!     fn records(&self) -> Records { Records::Fixed(1) }
//!     fn map<E: Emit<u8, u64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
//!         for &b in split.data { emit.emit(b, 1) }
//!         Ok(())
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

#![deny(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    unsafe_op_in_unsafe_fn
)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod barrier;
mod busy;
mod combine;
mod compress;
mod container;
mod derive;
mod error;
mod guard;
mod hint;
mod ingest;
mod input;
pub mod isolate;
mod job;
mod key;
mod memory;
mod merge;
mod options;
mod paths;
mod pipeline;
mod plan;
mod pool;
mod predict;
mod progress;
mod read_ahead;
mod record_sort;
mod runtime;
mod sample;
mod schedule;
mod size;
pub mod spill;
pub mod stats;
pub mod stream;
pub mod trace;
mod unwind;

pub use combine::{Combiner, KeepAll, Max, Min, Sum};
pub use error::{Death, Error, Phase, Result};
pub use input::Input;
pub use job::{
    ContainerKind, Emit, Job, KeyHint, Malformed, MapOnlyJob, MapResult, OutputOrder, Records,
    Split,
};
pub use key::{Bytes, Key};
pub use options::RunOptions;
pub use paths::expand_paths;
pub use progress::Progress;
pub use record_sort::RecordShape;
pub use runtime::{Isolation, Output, Runtime, RuntimeBuilder};
pub use stats::Stats;
pub use trace::Trace;

/// The README's library example, compiled as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeExample;

/// Tuning knobs: how a run reads its input, schedules map and reduce, and
/// orders its output. The defaults serve; these are for measuring and for
/// inputs that need something else.
pub mod tune {
    pub use crate::container::partitioned::PartitionedOptions;
    pub use crate::ingest::{DEFAULT_CHUNK_BUFFERS, DEFAULT_CHUNK_SIZE};
    pub use crate::input::{Ingest, DEFAULT_SPLIT_SIZE};
    pub use crate::memory::default_limit as default_memory_limit;
    pub use crate::pipeline::{default_max_buffered_bytes, PipelineOptions, DEFAULT_BUFFER_BYTES};
    pub use crate::plan::{Aggregation, Mode};
    pub use crate::pool::{Locality, Topology};
    pub use crate::size::{format_size, parse_size, SizeError};
}

/// For code that extends ember: the key trait's parts, the combiner state
/// type of a job, and a prefetch hint for map functions that read memory at
/// random.
pub mod plumbing {
    pub use crate::combine::Values;
    pub use crate::hint::prefetch;
    pub use crate::job::{ReducedOf, StateOf};
    pub use crate::key::{BytesProbe, KeyHasher, TupleView2, TupleView3, INLINE_KEY_BYTES};
    pub use crate::pool::page_node;
}
