//! `ember bench ingest`: read-then-map vs the chunked ingest pipeline, on a
//! reader throttled to simulate slow storage (files here sit in the page
//! cache, so unthrottled reads would be nearly free).

use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::{Input, RunOptions, Runtime, Stats};
use ember_apps::text::TextSpec;
use ember_apps::wordcount::WordCount;

use super::{all_threads, cpu_secs};
use crate::common::parse_size;

/// `ember bench ingest`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Corpus size for word count.
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    /// Reader speed in MB/s; default: calibrated so that reading takes about
    /// as long as ember's map phase (the case the pipeline is for).
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

/// A reader that delivers at most `rate` bytes per second.
pub(crate) struct Throttled<R> {
    inner: R,
    rate: f64,
    start: Instant,
    read: u64,
}

impl<R> Throttled<R> {
    pub(crate) fn new(inner: R, bytes_per_sec: f64) -> Self {
        Throttled {
            inner,
            rate: bytes_per_sec,
            start: Instant::now(),
            read: 0,
        }
    }
}

impl<R: Read> Read for Throttled<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // Small reads, so the pace is smooth.
        let n = buf.len().min(1 << 20);
        let got = self.inner.read(&mut buf[..n])?;
        self.read += got as u64;
        let due = Duration::from_secs_f64(self.read as f64 / self.rate);
        if let Some(wait) = due.checked_sub(self.start.elapsed()) {
            std::thread::sleep(wait);
        }
        Ok(got)
    }
}

/// One contender's measurements.
struct Row {
    name: String,
    total: f64,
    read: f64,
    map: f64,
    cpu: f64,
    stats: Stats,
}

/// Read the whole file through the throttle, then run on it.
fn read_then_map(rt: &Runtime, file: &Path, rate: f64) -> Result<Row> {
    let (cpu0, t0) = (cpu_secs(), Instant::now());
    let mut data = Vec::new();
    Throttled::new(std::fs::File::open(file)?, rate).read_to_end(&mut data)?;
    let read = t0.elapsed().as_secs_f64();
    let out = rt.run(&WordCount::by_count(), &Input::owned(file, data))?;
    let total = t0.elapsed().as_secs_f64();
    Ok(Row {
        name: "read, then map".into(),
        total,
        read,
        map: out.stats.map_secs,
        cpu: (cpu_secs() - cpu0) / (total * rt.threads() as f64),
        stats: out.stats,
    })
}

/// Stream the file through the throttle in chunks, mapping as they come.
fn chunked(rt: &Runtime, file: &Path, rate: f64, a: &Args) -> Result<Row> {
    let (cpu0, t0) = (cpu_secs(), Instant::now());
    let input = Input::reader(file, Throttled::new(std::fs::File::open(file)?, rate));
    let opts = RunOptions {
        chunk_size: Some(a.chunk_size as usize),
        chunk_buffers: Some(a.chunk_buffers),
        ..Default::default()
    };
    let out = rt.run_with(&WordCount::by_count(), &input, &opts)?;
    let total = t0.elapsed().as_secs_f64();
    Ok(Row {
        name: format!("chunked ({} x {} MiB)", a.chunk_buffers, a.chunk_size >> 20),
        total,
        read: out.stats.read_secs,
        map: out.stats.chunks.iter().map(|c| c.map_secs).sum(),
        cpu: (cpu_secs() - cpu0) / (total * rt.threads() as f64),
        stats: out.stats,
    })
}

/// Runs `ember bench ingest`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = TextSpec {
        size: a.size,
        ..TextSpec::default()
    };
    let file = crate::gen::cached_text(&spec)?;
    let threads = all_threads(a.threads);
    let rt = Runtime::builder().threads(threads).build()?;
    let mb = spec.size as f64 / 1e6;
    let rate = match a.rate {
        Some(r) => r * 1e6,
        None => {
            let map = rt
                .run(&WordCount::by_count(), &Input::file(&file)?)?
                .stats
                .map_secs;
            spec.size as f64 / map
        }
    };
    let rows = [
        read_then_map(&rt, &file, rate)?,
        chunked(&rt, &file, rate, &a)?,
    ];
    if rows[0].stats.distinct_keys != rows[1].stats.distinct_keys {
        anyhow::bail!("the two modes disagree on the distinct word count");
    }
    println!(
        "ingest: word count, {mb:.1} MB, reader throttled to {:.1} MB/s, {threads} threads",
        rate / 1e6
    );
    println!(
        "{:<26} {:>8} {:>8} {:>8} {:>9} {:>9}",
        "mode", "total s", "read s", "map s", "CPU busy", "speedup"
    );
    for r in &rows {
        println!(
            "{:<26} {:>8.3} {:>8.3} {:>8.3} {:>8.0}% {:>8.2}x",
            r.name,
            r.total,
            r.read,
            r.map,
            100.0 * r.cpu,
            rows[0].total / r.total
        );
    }
    println!("\nchunked run, phases:\n{}", rows[1].stats);
    Ok(())
}
