//! `ember-bench ingest`: read-then-map vs the chunked ingest pipeline, on a
//! reader throttled to simulate slow storage (files here sit in the page
//! cache, so unthrottled reads would be nearly free), for word count and
//! sort, in one run.
//!
//! **Sort streamed**: its map (each record's key and index) runs on the
//! chunks as they arrive, like any map-only job; its gather then needs
//! random access to every record, so the chunked contender keeps the bytes
//! it reads (a copy made by the reader thread, [`Keep`]) and gathers from
//! that copy once the order is known. Both contenders end with the sorted
//! records in memory; their outputs are checked equal.

use std::hash::{DefaultHasher, Hasher};
use std::io::Read;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args as ClapArgs;
use ember::tune::parse_size;
use ember::{Input, RunOptions, Runtime, Stats};
use ember_apps::sort::{sort_order_input, SortSpec};
use ember_apps::text::TextSpec;
use ember_apps::wordcount::WordCount;
use ember_cli::inputs;

use crate::machine::{all_threads, cpu_secs};

/// `ember-bench ingest`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Corpus size for word count.
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    /// Number of 100-byte records for sort.
    #[arg(long, default_value_t = 2_500_000)]
    records: u64,
    /// Reader speed in MB/s, for both workloads; default: calibrated per
    /// workload so that reading takes about as long as ember's map phase
    /// (the case the pipeline is for).
    #[arg(long)]
    rate: Option<f64>,
    /// Ingest chunk size.
    #[arg(long, value_parser = parse_size, default_value = "16MiB")]
    chunk_size: u64,
    /// Chunk buffers.
    #[arg(long, default_value_t = 2)]
    chunk_buffers: usize,
    /// Worker threads (default: all CPUs).
    #[arg(long, short = 't')]
    threads: Option<usize>,
}

/// A reader that delivers at most `rate` bytes per second, like a device
/// that is busy for `n / rate` seconds per read of `n` bytes. Time the
/// caller spends not reading is not banked: a read after a pause (the
/// pipeline waiting for a free buffer) is as slow as any other.
pub(crate) struct Throttled<R> {
    inner: R,
    rate: f64,
    /// When the simulated device finishes its last read.
    free_at: Instant,
}

impl<R> Throttled<R> {
    pub(crate) fn new(inner: R, bytes_per_sec: f64) -> Self {
        Throttled {
            inner,
            rate: bytes_per_sec,
            free_at: Instant::now(),
        }
    }
}

impl<R: Read> Read for Throttled<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // Small reads, so the pace is smooth.
        let n = buf.len().min(1 << 20);
        let start = self.free_at.max(Instant::now());
        let got = self.inner.read(&mut buf[..n])?;
        self.free_at = start + Duration::from_secs_f64(got as f64 / self.rate);
        if let Some(wait) = self.free_at.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        Ok(got)
    }
}

/// A reader that keeps a copy of every byte it delivers, for a step after
/// the map that needs the whole input (sort's gather).
struct Keep<R> {
    inner: R,
    kept: Arc<Mutex<Vec<u8>>>,
}

impl<R: Read> Read for Keep<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// The workloads of the benchmark.
#[derive(Clone, Copy)]
enum Work {
    /// Word count, output by count.
    WordCount,
    /// Sort: the order on ember, then the records gathered in it.
    Sort,
}

/// What a run of a workload measured and produced.
struct Done {
    /// Stats of the ember job.
    stats: Stats,
    /// Seconds of the gather after the job (sort), else 0.
    gather: f64,
    /// A digest of the output, to check that both contenders agree.
    digest: u64,
}

impl Work {
    fn name(self) -> &'static str {
        match self {
            Work::WordCount => "word count",
            Work::Sort => "sort",
        }
    }

    /// Runs on `input`, whose bytes are, for a step that needs them all,
    /// `kept` when the input is streamed, else the input's own.
    fn run(
        self,
        rt: &Runtime,
        input: &Input<'_>,
        opts: &RunOptions,
        kept: &Mutex<Vec<u8>>,
    ) -> Result<Done> {
        match self {
            Work::WordCount => {
                let out = rt.run_with(&WordCount::by_count(), input, opts)?;
                let digest = out.stats.distinct_keys;
                Ok(Done {
                    stats: out.stats,
                    gather: 0.0,
                    digest,
                })
            }
            Work::Sort => {
                let order = sort_order_input(rt, input, opts)?;
                let t = Instant::now();
                let kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                let records = if input.is_streamed() {
                    &kept[..]
                } else {
                    input.part_bytes(0)
                };
                let mut out = vec![0; records.len()];
                order.gather_into(rt, records, &mut out);
                let gather = t.elapsed().as_secs_f64();
                let mut h = DefaultHasher::new();
                h.write(&out);
                Ok(Done {
                    stats: order.stats,
                    gather,
                    digest: h.finish(),
                })
            }
        }
    }
}

/// One contender's measurements.
struct Row {
    name: String,
    total: f64,
    read: f64,
    map: f64,
    gather: f64,
    cpu: f64,
    done: Done,
}

/// Read the whole file through the throttle, then run on it.
fn read_then_map(rt: &Runtime, work: Work, file: &Path, rate: f64) -> Result<Row> {
    let (cpu0, t0) = (cpu_secs(), Instant::now());
    let f = std::fs::File::open(file)?;
    let mut data = Vec::with_capacity(f.metadata()?.len() as usize);
    Throttled::new(f, rate).read_to_end(&mut data)?;
    let read = t0.elapsed().as_secs_f64();
    let done = work.run(
        rt,
        &Input::owned(file, data),
        &RunOptions::default(),
        &Mutex::default(),
    )?;
    let total = t0.elapsed().as_secs_f64();
    Ok(Row {
        name: "read, then map".into(),
        total,
        read,
        map: done.stats.map_secs,
        gather: done.gather,
        cpu: (cpu_secs() - cpu0) / (total * rt.threads() as f64),
        done,
    })
}

/// Stream the file through the throttle in chunks, mapping as they come.
fn chunked(rt: &Runtime, work: Work, file: &Path, rate: f64, a: &Args) -> Result<Row> {
    let (cpu0, t0) = (cpu_secs(), Instant::now());
    let f = std::fs::File::open(file)?;
    let kept = Arc::new(Mutex::new(Vec::with_capacity(f.metadata()?.len() as usize)));
    let throttled = Throttled::new(f, rate);
    let input = match work {
        Work::WordCount => Input::reader(file, throttled),
        Work::Sort => Input::reader(
            file,
            Keep {
                inner: throttled,
                kept: Arc::clone(&kept),
            },
        ),
    };
    let opts = RunOptions::default()
        .chunk_size(a.chunk_size as usize)
        .chunk_buffers(a.chunk_buffers);
    let done = work.run(rt, &input, &opts, &kept)?;
    let total = t0.elapsed().as_secs_f64();
    Ok(Row {
        name: format!("chunked ({} x {} MiB)", a.chunk_buffers, a.chunk_size >> 20),
        total,
        read: done.stats.read_secs,
        map: done.stats.chunks.iter().map(|c| c.map_secs).sum(),
        gather: done.gather,
        cpu: (cpu_secs() - cpu0) / (total * rt.threads() as f64),
        done,
    })
}

/// Benchmarks one workload on `file`: calibrates the rate (unless given),
/// runs both contenders, checks they agree, prints their table.
fn bench(rt: &Runtime, work: Work, file: &Path, a: &Args) -> Result<Row> {
    let bytes = std::fs::metadata(file)?.len() as f64;
    let rate = match a.rate {
        Some(r) => r * 1e6,
        None => {
            let mapped = Input::file(file)?;
            let done = work.run(rt, &mapped, &RunOptions::default(), &Mutex::default())?;
            bytes / done.stats.map_secs
        }
    };
    let rows = [
        read_then_map(rt, work, file, rate)?,
        chunked(rt, work, file, rate, a)?,
    ];
    if rows[0].done.digest != rows[1].done.digest {
        bail!("{}: the two modes disagree on the output", work.name());
    }
    println!(
        "\ningest: {}, {:.1} MB, reader throttled to {:.1} MB/s, {} threads",
        work.name(),
        bytes / 1e6,
        rate / 1e6,
        rt.threads()
    );
    println!(
        "{:<26} {:>8} {:>8} {:>8} {:>9} {:>9} {:>9}",
        "mode", "total s", "read s", "map s", "gather s", "CPU busy", "speedup"
    );
    for r in &rows {
        println!(
            "{:<26} {:>8.3} {:>8.3} {:>8.3} {:>9.3} {:>8.0}% {:>8.2}x",
            r.name,
            r.total,
            r.read,
            r.map,
            r.gather,
            100.0 * r.cpu,
            rows[0].total / r.total
        );
    }
    let [_, chunked] = rows;
    Ok(chunked)
}

/// Runs `ember-bench ingest`.
pub(crate) fn run(a: Args) -> Result<()> {
    let text = inputs::text(&TextSpec {
        size: a.size,
        ..TextSpec::default()
    })
    .cached()?;
    let records = inputs::records(SortSpec {
        records: a.records,
        ..SortSpec::default()
    })
    .cached()?;
    let rt = Runtime::builder().threads(all_threads(a.threads)).build()?;
    println!(
        "read s: reading (chunked: the reader thread's time, overlapped with map); \
         map s: the map phase (chunked: summed over chunks); gather s: sort's \
         record copy after the job (chunked: from the bytes the reader kept)"
    );
    for work in [Work::WordCount, Work::Sort] {
        let file = match work {
            Work::WordCount => &text,
            Work::Sort => &records,
        };
        let chunked = bench(&rt, work, file, &a)?;
        println!(
            "\n{}, chunked run, phases:\n{}",
            work.name(),
            chunked.done.stats
        );
    }
    Ok(())
}
