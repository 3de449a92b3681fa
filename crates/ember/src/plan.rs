//! A run's decisions, made once, into one typed [`Plan`] that the stats
//! report as is: the intermediate container (by the job, the caller, or the
//! sample), how it aggregates (per worker, or in shared partitions), the
//! reduce partitions, the mode (barrier or pipelined) and how the input is
//! read.
//!
//! Every reported choice is an enum with a [`Display`](fmt::Display) that
//! says it in words, so tests match variants and people read sentences.

use std::fmt;

use serde::Serialize;

use crate::combine::Combiner;
use crate::derive::names;
use crate::error::{Error, Result};
use crate::input::Input;
use crate::job::{ContainerKind, Job, KeyHint, StateOf};
use crate::key::Key;
use crate::predict::Prediction;

/// Pairs per reduce partition the append container aims at when the sample
/// predicts how many there will be: its reduce numbers a partition's keys
/// in a table and counting-sorts the values by number, and both stay in the
/// caches only for small partitions (Phoenix Rebirth's bucket counts sized
/// to the keys; the sweep behind the figure is in `docs/measurements.md`).
const APPEND_PAIRS_PER_PARTITION: u64 = 1 << 17;
/// The most partitions the append container is given.
const MAX_APPEND_PARTITIONS: usize = 1 << 10;
/// Pairs per distinct key below which the append container wins, for a
/// combiner that folds values (sums) and for one that keeps them (lists);
/// measured with `ember-bench containers`.
const APPEND_BELOW_REPEATS: f64 = 2.0;
const APPEND_BELOW_REPEATS_UNFOLDED: f64 = 16.0;
/// Where keys repeat little, the intern container is picked over append
/// when its pairs and key tables are predicted to take at most this
/// fraction of the append container's pairs (numerator, denominator): it
/// pays a table lookup per emit for the memory.
const INTERN_AT_MOST: (usize, usize) = (2, 3);
/// `Auto` aggregates in partitions when a worker's own hash table would
/// take more than this many bytes (the predicted keys per worker, at half
/// load): past a core's L2 cache, where per-worker tables miss on most
/// rare keys, and hold the vocabulary once per worker.
const PARTITIONED_ABOVE_TABLE_BYTES: u64 = 4 << 20;
/// `Auto` partitions only from this many workers: below it the replicated
/// tables cost little memory, and on 2 threads partitioned word count on
/// the Zipf corpus measured about 1.3x the per-worker time (its evictions
/// cost more than the reduce's join saves; `docs/performance.md`).
const PARTITIONED_FROM_WORKERS: usize = 4;
/// Bytes of slots a partition table of the partitioned layout aims at: a
/// partition folded by one worker then stays within its L2 cache.
const PARTITION_TABLE_BYTES: u64 = 1 << 20;
/// The most partitions the partitioned layout is given.
const MAX_PARTITIONED: usize = 1 << 10;

/// How map and reduce are scheduled, as asked for in
/// [`RunOptions::mode`](crate::RunOptions::mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Mode {
    /// The runtime chooses. It picks the barrier: pipelining has not
    /// measured faster than it (`ember-bench pipeline`; docs/measurements.md).
    #[default]
    Auto,
    /// Reduce starts when the last map task has finished (Phoenix, Metis).
    Barrier,
    /// Reducers fold map output as it is produced (SMR). Jobs that cannot
    /// be pipelined ([`Job::pipelinable`]) still run with the barrier.
    Pipelined,
}

/// How a run's map and reduce actually ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunMode {
    /// Reduce after the last map task.
    #[default]
    Barrier,
    /// Reducers folded map output while mappers mapped.
    Pipelined,
    /// A map-only job: no reduce.
    MapOnly,
}

/// How a run's hash containers aggregate the map output, as asked for in
/// [`RunOptions::aggregation`](crate::RunOptions::aggregation) and as the
/// [`Plan`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Aggregation {
    /// The runtime chooses from the sample: partitioned when a worker's
    /// table would outgrow its core's cache, else per worker. Never in a
    /// plan.
    #[default]
    Auto,
    /// One hash table per worker, holding every key that worker saw;
    /// reduce joins the workers' tables partition by partition.
    PerWorker,
    /// A cache-sized table per worker, whose combined entries are folded
    /// into one table per hash partition shared by the workers: each key
    /// held once, whatever the worker count (the partitioned layout of the
    /// hash container; other containers aggregate per worker).
    Partitioned,
}

/// How a run read its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum IngestKind {
    /// Bytes the caller held in memory.
    #[default]
    Memory,
    /// Memory-mapped files.
    Mmap,
    /// Streamed in chunks, read while the previous chunk is mapped.
    Chunked,
}

/// Why a run has no sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Unsampled {
    /// A streamed input is read once, so it cannot be sampled ahead.
    Streamed,
    /// Too few splits for a sample to pay.
    TooSmall,
    /// The memory limit is below a quarter of the input: the sample's
    /// containers (a twentieth of the input, several times its bytes in
    /// tables) would not stay within it.
    Budget,
}

/// Why a run uses its container.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContainerReason {
    /// The job declares integer keys in `0..n`.
    DenseKeys {
        /// The key range's size.
        n: usize,
    },
    /// The job declares every key unique.
    UniqueKeys,
    /// No sample: hash is the safe default.
    NotSampled {
        /// Why there is no sample.
        unsampled: Unsampled,
    },
    /// The sample saw few pairs per key: little to combine, so append.
    FewRepeats {
        /// Pairs per distinct key in the sample.
        repeats: f64,
        /// The threshold it was below.
        threshold: f64,
        /// The job's combiner keeps values (a higher threshold).
        keeps_values: bool,
    },
    /// The sample saw few pairs per key, as for `FewRepeats`, and numbering
    /// the keys per worker takes much less memory than appending a key
    /// with every value: intern.
    KeysNumbered {
        /// Pairs per distinct key in the sample.
        repeats: f64,
        /// Predicted bytes per pair with keys numbered (the pair and its
        /// share of the key tables).
        numbered_bytes: f64,
        /// Bytes per pair appended with its key.
        appended_bytes: f64,
    },
    /// The sample saw keys repeat: combining at insert pays, so hash.
    ManyRepeats {
        /// Pairs per distinct key in the sample.
        repeats: f64,
    },
    /// The job or the caller chose the container.
    Chosen {
        /// What `Auto` would have picked from the sample, when it differs.
        auto: Option<(ContainerKind, Box<ContainerReason>)>,
    },
    /// The pipelined mode folds map buffers into one hash table per reducer.
    Pipelined,
    /// A map-only job appends each split's pairs to a vector.
    MapOnly,
}

/// Why a run aggregates as it does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AggregationReason {
    /// Only the hash container has a partitioned layout.
    Container {
        /// The run's container.
        container: ContainerKind,
    },
    /// The pipelined mode's reducers already fold into one table per
    /// partition.
    Pipelined,
    /// A map-only job does not aggregate.
    MapOnly,
    /// The caller chose.
    Chosen,
    /// Too few workers for the replicated tables to matter.
    FewWorkers {
        /// The run's workers.
        workers: usize,
        /// `Auto` partitions from this many.
        from: usize,
    },
    /// No sample: per-worker tables are the default.
    NotSampled,
    /// The sample predicts keys per worker whose table fits the limit.
    FewKeys {
        /// Distinct keys per worker predicted.
        keys: u64,
        /// Bytes of a worker's table for them, at half load.
        table_bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The sample predicts more keys per worker than a table within the
    /// limit holds: partitioned.
    ManyKeys {
        /// Distinct keys per worker predicted.
        keys: u64,
        /// Bytes of a worker's table for them, at half load.
        table_bytes: u64,
        /// The limit.
        limit: u64,
    },
}

/// Why a run uses its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModeReason {
    /// The caller asked for it.
    Caller,
    /// `Auto` keeps the barrier (see [`Mode::Auto`]).
    Auto,
    /// Pipelining was asked for, but the job is not pipelinable.
    NotPipelinable {
        /// The mode asked for.
        asked: Mode,
    },
    /// Pipelining was asked for, but the input is streamed.
    Streamed,
    /// A map-only job has no reduce to overlap.
    MapOnly {
        /// The mode asked for.
        asked: Mode,
    },
}

/// A run's decisions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Plan {
    /// The intermediate container.
    pub container: ContainerKind,
    /// Why that container.
    pub container_reason: ContainerReason,
    /// How map and reduce run.
    pub mode: RunMode,
    /// Why that mode.
    pub mode_reason: ModeReason,
    /// How the hash container aggregates: per worker or partitioned.
    pub aggregation: Aggregation,
    /// Why it aggregates so.
    pub aggregation_reason: AggregationReason,
    /// How the input is read.
    pub ingest: IngestKind,
    /// Reduce partitions per worker container (partitioned: the shared
    /// partitions).
    pub partitions: usize,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            container: ContainerKind::Hash,
            container_reason: ContainerReason::NotSampled {
                unsampled: Unsampled::TooSmall,
            },
            mode: RunMode::Barrier,
            mode_reason: ModeReason::Auto,
            aggregation: Aggregation::PerWorker,
            aggregation_reason: AggregationReason::NotSampled,
            ingest: IngestKind::Memory,
            partitions: 1,
        }
    }
}

/// What the caller asks of a run's plan (from its
/// [`RunOptions`](crate::RunOptions)).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Asked {
    pub(crate) container: Option<ContainerKind>,
    pub(crate) mode: Option<Mode>,
    pub(crate) aggregation: Option<Aggregation>,
    /// Partitions of the partitioned layout.
    pub(crate) partitions: Option<usize>,
}

/// What the caller and the job ask of a run, checked: the input to every
/// decision the sample does not make.
pub(crate) struct Request {
    /// The container asked for (`Auto` when the runtime chooses).
    pub(crate) container: ContainerKind,
    shape: JobShape,
    pipelinable: bool,
    mode: Mode,
    aggregation: Aggregation,
    /// Partitions of the partitioned layout, if the caller set them.
    partitioned: Option<usize>,
    threads: usize,
}

/// What the job's types say that `Auto` picks a container by.
#[derive(Debug, Clone, Copy)]
struct JobShape {
    hint: KeyHint,
    /// The key type can index an array (an integer type).
    dense_ok: bool,
    /// The combiner folds values (else it keeps them).
    folds: bool,
    footprint: Footprint,
    /// Bytes of a hash table slot of the job's keys and states.
    table_slot: usize,
}

/// The bytes the append and intern containers take, from the job's types.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Footprint {
    /// A (key, value) pair appended.
    appended: usize,
    /// A (key number, value) pair: one array entry, padding included.
    numbered: usize,
    /// A key table's slot; tables are a half to 70% full.
    key_slot: usize,
}

impl Footprint {
    fn of<K, V>() -> Self {
        Footprint {
            appended: std::mem::size_of::<(K, V)>(),
            numbered: std::mem::size_of::<(u32, V)>(),
            key_slot: std::mem::size_of::<Option<(K, u32)>>(),
        }
    }

    /// Predicted bytes per pair with keys numbered, for `p`'s pairs and
    /// keys per worker (tables counted half full).
    fn numbered_per_pair(&self, p: &Prediction) -> f64 {
        let repeats = p.pairs_per_worker as f64 / p.keys_per_worker.max(1) as f64;
        self.numbered as f64 + 2.0 * self.key_slot as f64 / repeats.max(1.0)
    }
}

impl Request {
    /// The request of `job` run with `opts` on `threads` workers; an
    /// error when the job cannot use the container asked for.
    pub(crate) fn new<J: Job>(job: &J, opts: &Asked, threads: usize) -> Result<Self> {
        let r = Request {
            container: opts.container.unwrap_or_else(|| job.container()),
            shape: JobShape {
                hint: job.keys(),
                dense_ok: J::Key::INDEXED,
                folds: J::Combiner::FOLDS,
                footprint: Footprint::of::<J::Key, J::Value>(),
                table_slot: std::mem::size_of::<Option<(J::Key, StateOf<J>)>>(),
            },
            pipelinable: job.pipelinable(),
            mode: opts.mode.unwrap_or_default(),
            aggregation: opts.aggregation.unwrap_or_default(),
            partitioned: opts.partitions,
            threads,
        };
        r.check()?;
        Ok(r)
    }

    fn check(&self) -> Result<()> {
        let JobShape { hint, dense_ok, .. } = self.shape;
        let dense = matches!(hint, KeyHint::Dense(_)) && dense_ok;
        if self.container == ContainerKind::Array && !dense {
            return Err(Error::Config(
                "the array container needs a job with dense integer keys (KeyHint::Dense)".into(),
            ));
        }
        if self.container == ContainerKind::Unique && hint != KeyHint::Unique {
            return Err(Error::Config(
                "the unique container needs a job that declares unique keys (KeyHint::Unique)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// True when the run pipelines whatever the input holds.
    pub(crate) fn pipelines(&self) -> bool {
        self.mode == Mode::Pipelined && self.pipelinable
    }

    /// True when the container choice or its sizing depends on a sample.
    pub(crate) fn needs_sample(&self) -> bool {
        let wanted = match self.container {
            ContainerKind::Auto => !matches!(
                (self.shape.hint, self.shape.dense_ok),
                (KeyHint::Dense(_), true) | (KeyHint::Unique, _)
            ),
            ContainerKind::Hash | ContainerKind::HashTree => true,
            _ => false,
        };
        wanted && !self.pipelines()
    }

    /// Reduce partitions: a few per worker, so the reduce tasks balance.
    pub(crate) fn partitions(&self) -> usize {
        match self.threads {
            1 => 1,
            t => t * 4,
        }
    }

    /// The plan for an input read as `ingest` says, given what the sample
    /// showed (none when `tight`: a memory limit too small for a sample).
    pub(crate) fn decide(
        &self,
        prediction: Option<&Prediction>,
        ingest: IngestKind,
        tight: bool,
    ) -> Plan {
        let streamed = ingest == IngestKind::Chunked;
        let unsampled = match (tight, streamed) {
            (true, _) => Unsampled::Budget,
            (false, true) => Unsampled::Streamed,
            (false, false) => Unsampled::TooSmall,
        };
        let (container, container_reason) = self.container(prediction, unsampled);
        let (mode, mode_reason) = self.mode(streamed);
        let partitions = match (mode, container) {
            (RunMode::Pipelined, _) => self.threads,
            (_, ContainerKind::Append | ContainerKind::Intern) => {
                self.append_partitions(prediction)
            }
            _ => self.partitions(),
        };
        let (container, container_reason) = match mode {
            RunMode::Pipelined => (ContainerKind::Hash, ContainerReason::Pipelined),
            _ => (container, container_reason),
        };
        let (aggregation, aggregation_reason) = self.aggregation(container, mode, prediction);
        let partitions = match aggregation {
            Aggregation::Partitioned => self.partitioned_partitions(prediction),
            _ => partitions,
        };
        Plan {
            container,
            container_reason,
            mode,
            mode_reason,
            aggregation,
            aggregation_reason,
            ingest,
            partitions,
        }
    }

    /// Per worker or partitioned, for a run with `container` in `mode`.
    fn aggregation(
        &self,
        container: ContainerKind,
        mode: RunMode,
        prediction: Option<&Prediction>,
    ) -> (Aggregation, AggregationReason) {
        use AggregationReason as Why;
        let per_worker = Aggregation::PerWorker;
        if mode == RunMode::Pipelined {
            return (per_worker, Why::Pipelined);
        }
        if container != ContainerKind::Hash {
            return (per_worker, Why::Container { container });
        }
        let (keys, limit) = match (self.aggregation, prediction) {
            (Aggregation::Auto, _) if self.threads < PARTITIONED_FROM_WORKERS => {
                let (workers, from) = (self.threads, PARTITIONED_FROM_WORKERS);
                return (per_worker, Why::FewWorkers { workers, from });
            }
            (Aggregation::Auto, None) => return (per_worker, Why::NotSampled),
            (Aggregation::Auto, Some(p)) => (p.keys_per_worker, PARTITIONED_ABOVE_TABLE_BYTES),
            (chosen, _) => return (chosen, Why::Chosen),
        };
        let table_bytes = keys * 2 * self.shape.table_slot as u64;
        match table_bytes > limit {
            true => (
                Aggregation::Partitioned,
                Why::ManyKeys {
                    keys,
                    table_bytes,
                    limit,
                },
            ),
            false => (
                per_worker,
                Why::FewKeys {
                    keys,
                    table_bytes,
                    limit,
                },
            ),
        }
    }

    /// Partitions of the partitioned layout: the caller's, else a power of
    /// two, a few per worker, and enough that each partition's table of
    /// the keys the sample predicts in all takes about
    /// [`PARTITION_TABLE_BYTES`].
    fn partitioned_partitions(&self, prediction: Option<&Prediction>) -> usize {
        if let Some(n) = self.partitioned {
            return n.max(1);
        }
        let keys = prediction.map_or(0, |p| p.keys_in_all);
        let bytes = keys * 2 * self.shape.table_slot as u64;
        let wanted = bytes.div_ceil(PARTITION_TABLE_BYTES) as usize;
        wanted
            .next_power_of_two()
            .max((self.threads * 4).next_power_of_two())
            .min(MAX_PARTITIONED)
    }

    /// How `input` is read.
    pub(crate) fn ingest(input: &Input<'_>) -> IngestKind {
        match (input.is_streamed(), input.is_mapped()) {
            (true, _) => IngestKind::Chunked,
            (false, true) => IngestKind::Mmap,
            (false, false) => IngestKind::Memory,
        }
    }

    fn container(
        &self,
        prediction: Option<&Prediction>,
        unsampled: Unsampled,
    ) -> (ContainerKind, ContainerReason) {
        let auto = |p| choose_container(self.shape, p, unsampled);
        if self.container == ContainerKind::Auto {
            return auto(prediction);
        }
        // A forced choice still gets the sample's opinion, so the stats say
        // why a poor choice is slow.
        let auto = prediction
            .map(|p| auto(Some(p)))
            .filter(|(k, _)| *k != self.container)
            .map(|(k, r)| (k, Box::new(r)));
        (self.container, ContainerReason::Chosen { auto })
    }

    fn mode(&self, streamed: bool) -> (RunMode, ModeReason) {
        match self.mode {
            Mode::Auto => (RunMode::Barrier, ModeReason::Auto),
            Mode::Barrier => (RunMode::Barrier, ModeReason::Caller),
            Mode::Pipelined if !self.pipelinable => (
                RunMode::Barrier,
                ModeReason::NotPipelinable { asked: self.mode },
            ),
            Mode::Pipelined if streamed => (RunMode::Barrier, ModeReason::Streamed),
            Mode::Pipelined => (RunMode::Pipelined, ModeReason::Caller),
        }
    }

    /// Reduce partitions for the append and intern containers: as many as keep each
    /// partition near [`APPEND_PAIRS_PER_PARTITION`] pairs when the sample
    /// predicts the pairs, a power of two, never fewer than
    /// [`Request::partitions`].
    fn append_partitions(&self, prediction: Option<&Prediction>) -> usize {
        let pairs = prediction.map_or(0, |p| p.pairs_per_worker * self.threads as u64);
        let wanted = pairs.div_ceil(APPEND_PAIRS_PER_PARTITION) as usize;
        wanted
            .next_power_of_two()
            .min(MAX_APPEND_PARTITIONS)
            .max(self.partitions())
    }
}

/// The container `Auto` picks, and why, for a job of this shape.
fn choose_container(
    shape: JobShape,
    p: Option<&Prediction>,
    unsampled: Unsampled,
) -> (ContainerKind, ContainerReason) {
    let JobShape {
        hint,
        dense_ok,
        folds,
        footprint,
        ..
    } = shape;
    let threshold = if folds {
        APPEND_BELOW_REPEATS
    } else {
        APPEND_BELOW_REPEATS_UNFOLDED
    };
    match (hint, p) {
        (KeyHint::Dense(n), _) if dense_ok => {
            (ContainerKind::Array, ContainerReason::DenseKeys { n })
        }
        (KeyHint::Unique, _) => (ContainerKind::Unique, ContainerReason::UniqueKeys),
        (_, None) => (
            ContainerKind::Hash,
            ContainerReason::NotSampled { unsampled },
        ),
        (_, Some(p)) if p.repeats < threshold => few_repeats(p, threshold, !folds, footprint),
        (_, Some(p)) => (
            ContainerKind::Hash,
            ContainerReason::ManyRepeats { repeats: p.repeats },
        ),
    }
}

/// Append or intern, for keys that repeat little: intern where it takes at
/// most [`INTERN_AT_MOST`] of append's memory.
fn few_repeats(
    p: &Prediction,
    threshold: f64,
    keeps_values: bool,
    footprint: Footprint,
) -> (ContainerKind, ContainerReason) {
    let numbered = footprint.numbered_per_pair(p);
    let appended = footprint.appended as f64;
    let (num, den) = INTERN_AT_MOST;
    if numbered * den as f64 <= appended * num as f64 {
        return (
            ContainerKind::Intern,
            ContainerReason::KeysNumbered {
                repeats: p.repeats,
                numbered_bytes: numbered,
                appended_bytes: appended,
            },
        );
    }
    (
        ContainerKind::Append,
        ContainerReason::FewRepeats {
            repeats: p.repeats,
            threshold,
            keeps_values,
        },
    )
}

names!(Mode, "mode" { Auto => "auto", Barrier => "barrier", Pipelined => "pipelined" });
names!(Aggregation, "aggregation" {
    Auto => "auto",
    PerWorker => "per_worker",
    Partitioned => "partitioned",
});
names!(RunMode, "run mode" { Barrier => "barrier", Pipelined => "pipelined", MapOnly => "map_only" });
names!(IngestKind, "ingest" { Memory => "memory", Mmap => "mmap", Chunked => "chunked" });

impl fmt::Display for Unsampled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unsampled::Streamed => "streamed input is not sampled",
            Unsampled::TooSmall => "input too small to sample",
            Unsampled::Budget => "the memory limit is too small for a sample",
        })
    }
}

impl fmt::Display for ContainerReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContainerReason::DenseKeys { n } => {
                write!(f, "the job declares dense integer keys 0..{n}")
            }
            ContainerReason::UniqueKeys => f.write_str("the job declares unique keys"),
            ContainerReason::NotSampled { unsampled } => {
                write!(f, "{unsampled}; hash is the safe default")
            }
            ContainerReason::FewRepeats {
                repeats,
                threshold,
                keeps_values,
            } => write!(
                f,
                "sample: {repeats:.2} pairs per distinct key (< {threshold}{}): little to combine",
                if *keeps_values {
                    ", the combiner keeps values"
                } else {
                    ""
                }
            ),
            ContainerReason::KeysNumbered {
                repeats,
                numbered_bytes,
                appended_bytes,
            } => write!(
                f,
                "sample: {repeats:.2} pairs per distinct key: little to combine, and keys \
                 numbered per worker take {numbered_bytes:.1} bytes a pair against \
                 {appended_bytes:.0} appended"
            ),
            ContainerReason::ManyRepeats { repeats } => write!(
                f,
                "sample: {repeats:.1} pairs per distinct key: combining at insert pays"
            ),
            ContainerReason::Chosen { auto: None } => {
                f.write_str("chosen by the job or the caller")
            }
            ContainerReason::Chosen {
                auto: Some((k, why)),
            } => write!(
                f,
                "chosen by the job or the caller; Auto would pick {k} ({why})"
            ),
            ContainerReason::Pipelined => {
                f.write_str("pipelined: map buffers fold into one hash table per reducer")
            }
            ContainerReason::MapOnly => f.write_str(
                "map-only job: each split's pairs appended to a plain vector (SMR's array buffer)",
            ),
        }
    }
}

impl fmt::Display for AggregationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |b: &u64| *b as f64 / (1 << 20) as f64;
        match self {
            AggregationReason::Container { container } => {
                write!(f, "the {container} container aggregates per worker")
            }
            AggregationReason::Pipelined => {
                f.write_str("pipelined: reducers fold into one table per partition")
            }
            AggregationReason::MapOnly => f.write_str("map-only job: nothing to aggregate"),
            AggregationReason::Chosen => f.write_str("chosen by the caller"),
            AggregationReason::FewWorkers { workers, from } => write!(
                f,
                "{workers} worker(s): per-worker tables below {from} workers, where their \
                 copies cost little memory and partitioning costs time"
            ),
            AggregationReason::NotSampled => {
                f.write_str("no sample; per-worker tables are the default")
            }
            AggregationReason::FewKeys {
                keys,
                table_bytes,
                limit,
            } => write!(
                f,
                "sample: {keys} keys per worker, a table of {:.1} MiB, within {:.0} MiB",
                mib(table_bytes),
                mib(limit)
            ),
            AggregationReason::ManyKeys {
                keys,
                table_bytes,
                limit,
            } => write!(
                f,
                "sample: {keys} keys per worker, a table of {:.1} MiB per worker, over {:.0} MiB: \
                 each key held once, in its partition",
                mib(table_bytes),
                mib(limit)
            ),
        }
    }
}

impl fmt::Display for ModeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModeReason::Caller => f.write_str("chosen by the caller"),
            ModeReason::Auto => f.write_str(
                "auto: the barrier, which measured as fast as pipelining or faster \
                 (ember-bench pipeline); --mode pipelined overlaps map and reduce",
            ),
            ModeReason::NotPipelinable { asked } => write!(
                f,
                "{asked} mode asked, but the job is not pipelinable (Job::pipelinable: its \
                 reduce needs a state from an associative and commutative combiner)"
            ),
            ModeReason::Streamed => {
                f.write_str("streamed input: the pipelined mode needs the input in memory")
            }
            ModeReason::MapOnly { asked } => write!(
                f,
                "map-only job: no reduce to overlap or wait for ({asked} mode asked)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prediction(pairs_per_worker: u64, repeats: f64) -> Prediction {
        Prediction {
            pairs: 1000,
            repeats,
            beta: 0.5,
            keys_per_worker: 1000,
            pairs_per_worker,
            keys_in_all: 2000,
        }
    }

    /// The footprint of `u32` keys with `u64` values: numbering them saves
    /// no memory.
    fn small() -> Footprint {
        Footprint::of::<u32, u64>()
    }

    /// The shape of a job that hints nothing about its keys, cannot index
    /// an array by them, folds values and has the [`small`] footprint.
    fn unknown_keys() -> JobShape {
        JobShape {
            hint: KeyHint::Unknown,
            dense_ok: false,
            folds: true,
            footprint: small(),
            table_slot: 32,
        }
    }

    /// A request for the hash container, with `aggregation`, on `threads`.
    fn hash_request(aggregation: Aggregation, threads: usize) -> Request {
        Request {
            container: ContainerKind::Hash,
            shape: unknown_keys(),
            pipelinable: true,
            mode: Mode::Auto,
            aggregation,
            partitioned: None,
            threads,
        }
    }

    #[test]
    fn auto_partitions_large_vocabularies_of_the_hash_container() {
        let keys = |k| Prediction {
            keys_per_worker: k,
            keys_in_all: k,
            ..prediction(1 << 20, 10.0)
        };
        let plan = |a, threads, k| {
            hash_request(a, threads).decide(Some(&keys(k)), IngestKind::Mmap, false)
        };
        // 32-byte slots at half load: 64K keys is a 4 MiB table.
        let few = plan(Aggregation::Auto, 4, 65_536);
        assert_eq!(few.aggregation, Aggregation::PerWorker);
        assert!(matches!(
            few.aggregation_reason,
            AggregationReason::FewKeys { .. }
        ));
        assert_eq!(few.partitions, 16);
        let many = plan(Aggregation::Auto, 4, 943_455);
        assert_eq!(many.aggregation, Aggregation::Partitioned);
        assert!(matches!(
            many.aggregation_reason,
            AggregationReason::ManyKeys { .. }
        ));
        // 58 MiB of slots in 1 MiB partitions.
        assert_eq!(many.partitions, 64);
        let two = plan(Aggregation::Auto, 2, 943_455);
        assert_eq!(two.aggregation, Aggregation::PerWorker);
        assert!(matches!(
            two.aggregation_reason,
            AggregationReason::FewWorkers {
                workers: 2,
                from: 4
            }
        ));
        assert_eq!(plan(Aggregation::Auto, 64, 10).partitions, 256);
        // The partition tables hold every key: their count follows the keys
        // predicted in all, not those of one worker.
        let spread = Prediction {
            keys_per_worker: 120_000,
            keys_in_all: 943_455,
            ..prediction(1 << 20, 10.0)
        };
        let request = hash_request(Aggregation::Auto, 8);
        let spread = request.decide(Some(&spread), IngestKind::Mmap, false);
        assert_eq!(
            (spread.aggregation, spread.partitions),
            (Aggregation::Partitioned, 64)
        );
        let forced = plan(Aggregation::Partitioned, 2, 10);
        assert_eq!(
            (forced.aggregation, forced.partitions),
            (Aggregation::Partitioned, 8)
        );
        let mut r = hash_request(Aggregation::Partitioned, 2);
        r.partitioned = Some(3);
        assert_eq!(r.decide(None, IngestKind::Mmap, false).partitions, 3);
        r.container = ContainerKind::Append;
        let append = r.decide(None, IngestKind::Mmap, false);
        assert_eq!(append.aggregation, Aggregation::PerWorker);
        r.container = ContainerKind::Hash;
        r.mode = Mode::Pipelined;
        let piped = r.decide(None, IngestKind::Mmap, false);
        assert_eq!(piped.aggregation_reason, AggregationReason::Pipelined);
    }

    #[test]
    fn intern_is_picked_where_numbered_keys_take_much_less_memory() {
        let long = Footprint::of::<crate::Bytes, u32>();
        let pick = |footprint, pairs, keys| {
            let p = Prediction {
                keys_per_worker: keys,
                ..prediction(pairs, 1.5)
            };
            let shape = JobShape {
                folds: false,
                footprint,
                ..unknown_keys()
            };
            choose_container(shape, Some(&p), Unsampled::TooSmall)
        };
        // An inverted index: 8 bytes a pair and a 32-byte slot for every
        // few pairs, against 32 bytes a pair appended.
        assert!(matches!(
            pick(long, 10_000, 2_000),
            (ContainerKind::Intern, ContainerReason::KeysNumbered { numbered_bytes, .. })
                if (20.0..21.0).contains(&numbered_bytes)
        ));
        // Keys that hardly repeat: their table would take more than the
        // pairs save.
        assert_eq!(pick(long, 10_000, 8_000).0, ContainerKind::Append);
        // Keys no longer than the values: nothing to save.
        assert_eq!(pick(small(), 10_000, 100).0, ContainerKind::Append);
    }

    #[test]
    fn hints_decide_before_samples() {
        let p = Some(prediction(1000, 1.0));
        let shape = |hint, dense_ok| JobShape {
            hint,
            dense_ok,
            ..unknown_keys()
        };
        let pick = |hint, dense_ok| {
            choose_container(shape(hint, dense_ok), p.as_ref(), Unsampled::TooSmall).0
        };
        assert_eq!(pick(KeyHint::Dense(768), true), ContainerKind::Array);
        assert_eq!(pick(KeyHint::Dense(768), false), ContainerKind::Append);
        assert_eq!(pick(KeyHint::Unique, false), ContainerKind::Unique);
        let none = choose_container(shape(KeyHint::Unknown, false), None, Unsampled::Streamed);
        assert_eq!(
            none,
            (
                ContainerKind::Hash,
                ContainerReason::NotSampled {
                    unsampled: Unsampled::Streamed
                }
            )
        );
    }

    #[test]
    fn repeats_pick_the_container_by_combiner() {
        let few = prediction(1000, 5.0);
        let pick = |folds| {
            let shape = JobShape {
                folds,
                ..unknown_keys()
            };
            choose_container(shape, Some(&few), Unsampled::TooSmall)
        };
        assert_eq!(pick(true).0, ContainerKind::Hash);
        let keeps = pick(false);
        assert!(matches!(
            keeps,
            (
                ContainerKind::Append,
                ContainerReason::FewRepeats {
                    keeps_values: true,
                    ..
                }
            )
        ));
    }

    #[test]
    fn append_partitions_follow_the_predicted_pairs() {
        let r = Request {
            container: ContainerKind::Append,
            shape: JobShape {
                folds: false,
                ..unknown_keys()
            },
            pipelinable: false,
            mode: Mode::Auto,
            aggregation: Aggregation::Auto,
            partitioned: None,
            threads: 2,
        };
        assert_eq!(r.append_partitions(None), 8);
        assert_eq!(r.append_partitions(Some(&prediction(2 << 20, 1.0))), 32);
        assert_eq!(r.append_partitions(Some(&prediction(1 << 40, 1.0))), 1024);
    }

    #[test]
    fn auto_keeps_the_barrier_and_pipelined_needs_a_pipelinable_job() {
        let mut r = Request {
            container: ContainerKind::Auto,
            shape: unknown_keys(),
            pipelinable: true,
            mode: Mode::Auto,
            aggregation: Aggregation::Auto,
            partitioned: None,
            threads: 2,
        };
        assert_eq!(r.mode(false), (RunMode::Barrier, ModeReason::Auto));
        r.mode = Mode::Pipelined;
        assert_eq!(r.mode(false), (RunMode::Pipelined, ModeReason::Caller));
        assert_eq!(r.mode(true), (RunMode::Barrier, ModeReason::Streamed));
        assert!(r.pipelines() && !r.needs_sample());
        r.pipelinable = false;
        assert_eq!(
            r.mode(false),
            (
                RunMode::Barrier,
                ModeReason::NotPipelinable {
                    asked: Mode::Pipelined
                }
            )
        );
    }

    #[test]
    fn names_parse_back() {
        for m in Mode::ALL {
            assert_eq!(m.name().parse::<Mode>().unwrap(), *m);
        }
        for a in Aggregation::ALL {
            assert_eq!(a.name().parse::<Aggregation>().unwrap(), *a);
        }
        assert_eq!(
            "per-worker".parse::<Aggregation>().unwrap(),
            Aggregation::PerWorker
        );
        let e = "fast".parse::<Mode>().unwrap_err().to_string();
        assert!(
            e.contains("unknown mode 'fast'") && e.contains("pipelined"),
            "{e}"
        );
    }
}
