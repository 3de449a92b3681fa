//! Where the time went, and what a run decided: [`Stats`], with the run's
//! typed [`Plan`] and its reasons, the per-chunk and pipeline measurements.
//! The JSON form is described in `docs/stats.md`.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

pub use crate::plan::{
    Aggregation, AggregationReason, ContainerReason, IngestKind, ModeReason, Plan, RunMode,
    Unsampled,
};

/// One ingest chunk of a streamed run.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct ChunkStats {
    /// Bytes in the chunk.
    pub bytes: u64,
    /// Seconds the ingest thread spent reading it.
    pub read_secs: f64,
    /// Seconds the workers spent mapping it.
    pub map_secs: f64,
}

/// Measurements of one run. Times are wall-clock seconds. The JSON form
/// (`ember --stats-json`) is described in `docs/stats.md`.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct Stats {
    /// Worker threads of the runtime.
    pub threads: usize,
    /// Input bytes over all parts.
    pub input_bytes: u64,
    /// Input parts (files).
    pub input_parts: usize,
    /// Per ingest chunk: bytes, read and map seconds (chunked runs).
    pub chunks: Vec<ChunkStats>,
    /// Seconds the ingest thread spent reading (chunked runs; overlapped
    /// with mapping).
    pub read_secs: f64,
    /// Seconds the workers waited for a chunk to be read (chunked runs).
    pub read_wait_secs: f64,
    /// Input buffer bytes in use at the peak (chunked runs).
    pub peak_chunk_bytes: u64,
    /// Splits the input was cut into.
    pub splits: usize,
    /// The run's decisions: container, mode, ingest, partitions,
    /// each with its reason.
    pub plan: Plan,
    /// Distinct keys per worker the sample predicted (when sampled).
    pub predicted_keys_per_worker: Option<u64>,
    /// Distinct keys (pairs, for containers that do not group) each worker
    /// held after the map phase, on average.
    pub actual_keys_per_worker: u64,
    /// Bytes the workers' containers held after the map phase (their own
    /// arrays: memory a key or a state owns on the heap is not counted).
    pub container_bytes: u64,
    /// Seconds spent sampling the input (the sample's map work, when kept,
    /// counts here rather than in `map_secs`).
    pub sample_secs: f64,
    /// Input bytes the sample mapped whose pairs the run kept (those splits
    /// are not mapped again); 0 when the sample only counted keys or there
    /// was none.
    pub sample_kept_bytes: u64,
    /// Seconds spent cutting the input into splits.
    pub split_secs: f64,
    /// Seconds in the map phase.
    pub map_secs: f64,
    /// Seconds in the reduce phase.
    pub reduce_secs: f64,
    /// Seconds in the merge (output ordering) phase.
    pub merge_secs: f64,
    /// Seconds for the whole run.
    pub total_secs: f64,
    /// Pairs emitted by `map`.
    pub pairs_emitted: u64,
    /// Distinct keys after reduce (0 for map-only runs, which do not group).
    pub distinct_keys: u64,
    /// Pairs in the output (fewer than `distinct_keys` for a top-k run).
    pub output_pairs: u64,
    /// Map tasks (splits) each worker ran, by worker index.
    pub map_tasks: Vec<u64>,
    /// Reduce tasks (partitions) each worker ran, by worker index (in
    /// pipelined mode: buffers each worker folded).
    pub reduce_tasks: Vec<u64>,
    /// Seconds each worker spent running map, by worker index (in pipelined
    /// mode, folds and waits inside map excluded).
    pub map_busy_secs: Vec<f64>,
    /// Seconds each worker spent reducing (pipelined: folding buffers and
    /// reducing its partition), by worker index.
    pub reduce_busy_secs: Vec<f64>,
    /// CPU utilization of the map and reduce phases: the workers' busy
    /// seconds over `threads x (map_secs + reduce_secs)`, in `0..=1`.
    pub utilization: f64,
    /// What the pipelined mode measured (pipelined runs only).
    pub pipeline: Option<PipelineStats>,
    /// What the partitioned aggregation did (runs that used it only).
    pub partitioned: Option<PartitionedStats>,
    /// The memory budget, what the containers held at the peak, and what
    /// was spilled to disk (barrier runs).
    pub memory: MemoryStats,
    /// Per NUMA node, by node index, the map phase's locality: tasks its
    /// workers ran, how many they stole from other nodes, and how many had
    /// their data on the node. Empty on one node.
    pub nodes: Vec<NodeStats>,
}

/// The map phase on one NUMA node (Phoenix Rebirth's Figure 5 reports the
/// hit rate).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NodeStats {
    /// Map tasks the node's workers ran.
    pub tasks: u64,
    /// Of those, tasks taken from another node's queue.
    pub stolen: u64,
    /// Of those, tasks whose data was on this node.
    pub data_local: u64,
    /// Splits whose data was on this node (wherever they ran).
    pub splits_here: u64,
}

impl NodeStats {
    /// Tasks taken from the node's own queue.
    pub fn local(&self) -> u64 {
        self.tasks - self.stolen
    }

    /// The locality hit rate: the share of the node's tasks whose data was
    /// on the node, in `0..=1` (0 when it ran none).
    pub fn hit_rate(&self) -> f64 {
        match self.tasks {
            0 => 0.0,
            t => self.data_local as f64 / t as f64,
        }
    }
}

/// A run's memory budget and spilling.
#[derive(Debug, Clone, Default, Serialize)]
#[non_exhaustive]
pub struct MemoryStats {
    /// The budget for intermediate data, in bytes.
    pub limit_bytes: u64,
    /// Whether the caller set the budget (else the machine's default).
    pub limit_explicit: bool,
    /// The most the workers' containers (and, in a spilled run that hands
    /// its output over, the key ranges' outputs not yet handed over) held
    /// at once, as tracked.
    pub peak_tracked_bytes: u64,
    /// Times a worker wrote its container to disk.
    pub spills: u64,
    /// Sorted runs written: one per spill (each holding every partition
    /// it spilled, in a section per partition, or in key order).
    pub spill_runs: u64,
    /// Bytes written to spill files.
    pub spilled_bytes: u64,
    /// Seconds the workers spent spilling (sorting and writing), summed
    /// over the workers.
    pub spill_secs: f64,
    /// Seconds the merge of the spilled runs took (reading them back,
    /// joining, reducing and handing the keys over: the reduce phase of a
    /// run that spilled), wall time; 0 if nothing was spilled.
    pub merge_secs: f64,
}

impl Stats {
    /// True for map-only runs, which skip the reduce phase.
    pub fn reduce_skipped(&self) -> bool {
        self.plan.mode == RunMode::MapOnly
    }
}

pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

impl fmt::Display for Stats {
    /// A human-readable breakdown, as `ember --stats` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |x: f64| {
            if self.total_secs > 0.0 {
                100.0 * x / self.total_secs
            } else {
                0.0
            }
        };
        writeln!(
            f,
            "input     {:>10.1} MB in {} part(s), {} splits, {} threads, {} partitions",
            self.input_bytes as f64 / 1e6,
            self.input_parts,
            self.splits,
            self.threads,
            self.plan.partitions,
        )?;
        if self.plan.ingest == IngestKind::Chunked {
            writeln!(
                f,
                "ingest    chunked: {} chunks, read {:.3} s (overlapped), waited for input {:.3} s, {:.1} MB of buffers",
                self.chunks.len(),
                self.read_secs,
                self.read_wait_secs,
                self.peak_chunk_bytes as f64 / 1e6
            )?;
        } else {
            writeln!(f, "ingest    {}", self.plan.ingest)?;
        }
        let plan = &self.plan;
        writeln!(f, "container {}: {}", plan.container, plan.container_reason)?;
        writeln!(f, "mode      {}: {}", plan.mode, plan.mode_reason)?;
        writeln!(
            f,
            "aggregate {}: {}",
            plan.aggregation, plan.aggregation_reason
        )?;
        if let Some(p) = self.predicted_keys_per_worker {
            writeln!(
                f,
                "keys      {} per worker predicted by sampling, {} actual",
                p, self.actual_keys_per_worker
            )?;
        }
        for (name, s) in [
            ("split", self.split_secs),
            ("sample", self.sample_secs),
            ("map", self.map_secs),
            ("reduce", self.reduce_secs),
            ("merge", self.merge_secs),
        ] {
            if name == "reduce" && self.reduce_skipped() {
                writeln!(f, "reduce    {:>10} (map-only job: skipped)", "-")?;
            } else {
                write!(f, "{name:<9} {s:>10.3} s  {:>5.1}%", pct(s))?;
                if name == "sample" && self.sample_kept_bytes > 0 {
                    let share = self.sample_kept_bytes as f64 / self.input_bytes.max(1) as f64;
                    write!(f, "  (mapped {:.1}% of the input, kept)", 100.0 * share)?;
                }
                writeln!(f)?;
            }
        }
        writeln!(f, "total     {:>10.3} s", self.total_secs)?;
        for (i, n) in self.nodes.iter().enumerate() {
            writeln!(
                f,
                "node {i:<4} {} map tasks, {} stolen, locality hit rate {:.1}%",
                n.tasks,
                n.stolen,
                100.0 * n.hit_rate()
            )?;
        }
        self.fmt_work(f)
    }
}

impl Stats {
    /// The busy time, pipeline, pair and task lines of the table.
    fn fmt_work(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // From 0.0: an empty float sum is -0.0.
        let sum = |v: &[f64]| v.iter().fold(0.0, |a, b| a + b);
        let reduce = if self.reduce_skipped() {
            "no reduce".to_string()
        } else {
            format!("reduce {:.3} s", sum(&self.reduce_busy_secs))
        };
        writeln!(
            f,
            "busy      map {:.3} s, {reduce} (all workers); utilization {:.1}%",
            sum(&self.map_busy_secs),
            100.0 * self.utilization
        )?;
        if let Some(p) = &self.pipeline {
            writeln!(
                f,
                "pipeline  {} batches of {} KiB ({} of {} mappers combining), {} helped, \
                 {} reduce-only workers, peak {:.1} of {:.1} MiB buffered, \
                 {} back-pressure waits, {:.3} s idle",
                p.batches,
                p.buffer_bytes >> 10,
                p.combining_mappers,
                self.threads - p.dedicated_reducers,
                p.helped_batches,
                p.dedicated_reducers,
                p.peak_buffered_bytes as f64 / (1 << 20) as f64,
                p.max_buffered_bytes as f64 / (1 << 20) as f64,
                p.backpressure_waits,
                p.idle_secs
            )?;
        }
        self.fmt_partitioned(f)?;
        let m = &self.memory;
        if m.limit_bytes > 0 {
            let mib = |b: u64| b as f64 / (1 << 20) as f64;
            let whose = if m.limit_explicit { "" } else { " (default)" };
            write!(
                f,
                "memory    budget {:.1} MiB{whose}, peak {:.1} MiB tracked",
                mib(m.limit_bytes),
                mib(m.peak_tracked_bytes)
            )?;
            match m.spills {
                0 => writeln!(f, ", nothing spilled")?,
                n => writeln!(
                    f,
                    ", {n} spills: {} runs, {:.1} MiB written in {:.3} s (all workers), \
                     merged in {:.3} s",
                    m.spill_runs,
                    mib(m.spilled_bytes),
                    m.spill_secs,
                    m.merge_secs
                )?,
            }
        }
        writeln!(
            f,
            "pairs     {} emitted, {} distinct keys, {} output",
            self.pairs_emitted, self.distinct_keys, self.output_pairs
        )?;
        write!(
            f,
            "tasks     map {:?}, reduce {:?} (per worker)",
            self.map_tasks, self.reduce_tasks
        )
    }

    /// The partitioned aggregation's line, for a run that used it.
    fn fmt_partitioned(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(p) = &self.partitioned else {
            return Ok(());
        };
        writeln!(
            f,
            "partition {} partitions, tables of {} keys per worker: {} evicted in {} \
             flushes, {} buffers of up to {} folded while mapping in {:.3} s \
             (all workers), {} found their partition busy",
            p.partitions,
            p.table_keys,
            p.evicted,
            p.flushes,
            p.folds,
            p.buffer_entries,
            p.fold_secs,
            p.contended
        )
    }
}

/// What a run's partitioned aggregation did (in [`Stats::partitioned`]).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[non_exhaustive]
pub struct PartitionedStats {
    /// Hash partitions, each folded into one table.
    pub partitions: usize,
    /// Keys a worker's small table holds before it is evicted.
    pub table_keys: usize,
    /// Entries a worker buffers for a partition before folding them.
    pub buffer_entries: usize,
    /// Times a worker's small table was emptied into its buffers (when
    /// full, and at the end of each split), over all workers.
    pub flushes: u64,
    /// Entries moved from the small tables into the buffers, combined.
    pub evicted: u64,
    /// Buffers folded into their partition's table during the map phase.
    pub folds: u64,
    /// Times a full buffer found its partition's table held by another
    /// worker and was kept for a later fold.
    pub contended: u64,
    /// Seconds the workers spent folding buffers during the map phase,
    /// summed over the workers (within their map busy time).
    pub fold_secs: f64,
}

/// What a pipelined run measured (in [`Stats::pipeline`]).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[non_exhaustive]
pub struct PipelineStats {
    /// Bytes of one buffer.
    pub buffer_bytes: usize,
    /// Keys a buffer takes before it is handed off.
    pub buffer_keys: usize,
    /// The bound on buffered bytes.
    pub max_buffered_bytes: usize,
    /// The most bytes in buffers out of the free lists at once (being
    /// filled, in flight or being folded): never above the bound.
    pub peak_buffered_bytes: usize,
    /// Buffers allocated in all (the rest of the hand-offs reused them).
    pub buffers_allocated: usize,
    /// Buffers handed from mappers to reducers.
    pub batches: u64,
    /// Buffers folded by a worker other than their partition's owner.
    pub helped_batches: u64,
    /// Times a mapper found the buffer budget spent (back-pressure).
    pub backpressure_waits: u64,
    /// Workers that only reduced.
    pub dedicated_reducers: usize,
    /// Mappers that ended with combining buffers (the others appended).
    pub combining_mappers: usize,
    /// Seconds the workers spent waiting, summed (back-pressure with
    /// nothing to fold, or reducers waiting for buffers).
    pub idle_secs: f64,
}
