//! `ember bench`: ember against baselines, as ratios measured in one run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use ember::{Input, RunOptions, Runtime};
use ember_apps::text::TextSpec;
use ember_apps::wordcount::WordCount;

use crate::common::{cache_dir, parse_size};

/// The benchmarks.
#[derive(Subcommand)]
pub(crate) enum Bench {
    /// Word count vs the single-threaded C reference (reference/wc_baseline.c).
    Wordcount(WordcountArgs),
}

/// `ember bench wordcount`.
#[derive(Args)]
pub(crate) struct WordcountArgs {
    /// Corpus size (the WORKLOADS.md shape: 1M-word vocabulary, Zipf 1.0).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    /// Runs of each contender; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Threads for the "all threads" row (default: all CPUs).
    #[arg(long, short = 't')]
    threads: Option<usize>,
}

/// Runs a benchmark.
pub(crate) fn run(b: Bench) -> Result<()> {
    match b {
        Bench::Wordcount(a) => wordcount(a),
    }
}

const WC_BASELINE_C: &str = include_str!("../../../reference/wc_baseline.c");

/// Builds the C reference into the cache folder (once).
fn build_wc_baseline() -> Result<PathBuf> {
    let dir = cache_dir()?;
    let src = dir.join("wc_baseline.c");
    let bin = dir.join("wc_baseline");
    if std::fs::read_to_string(&src).ok().as_deref() != Some(WC_BASELINE_C) || !bin.exists() {
        std::fs::write(&src, WC_BASELINE_C)?;
        let status = Command::new("cc")
            .args(["-O2", "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .context("cannot run the C compiler 'cc' (needed for the reference)")?;
        if !status.success() {
            bail!("cc -O2 wc_baseline.c failed");
        }
    }
    Ok(bin)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the C reference once: (seconds, total words, distinct words).
fn run_c(bin: &Path, file: &Path) -> Result<(f64, u64, u64)> {
    let t = Instant::now();
    let out = Command::new(bin).arg(file).arg("1").output()?;
    let secs = t.elapsed().as_secs_f64();
    if !out.status.success() {
        bail!(
            "wc_baseline failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // "total words N, distinct M"
    let nums: Vec<u64> = text
        .lines()
        .next()
        .unwrap_or("")
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    match nums[..] {
        [total, distinct, ..] => Ok((secs, total, distinct)),
        _ => bail!("unexpected wc_baseline output: {text}"),
    }
}

/// Runs ember once, input mapping included: (seconds, total, distinct, stats).
fn run_ember(rt: &Runtime, file: &Path) -> Result<(f64, u64, u64, ember::Stats)> {
    let t = Instant::now();
    let input = Input::file(file)?;
    let opts = RunOptions {
        top: Some(20),
        ..Default::default()
    };
    let out = rt.run_with(&WordCount::by_count(), &input, &opts)?;
    let secs = t.elapsed().as_secs_f64();
    Ok((
        secs,
        out.stats.pairs_emitted,
        out.stats.distinct_keys,
        out.stats,
    ))
}

fn wordcount(a: WordcountArgs) -> Result<()> {
    let runs = a.runs.max(1);
    let spec = TextSpec {
        size: a.size,
        ..TextSpec::default()
    };
    let file = crate::gen::cached_text(&spec)?;
    let bin = build_wc_baseline()?;
    let all = a
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mb = spec.size as f64 / 1e6;
    // Warm the page cache so every contender reads from memory.
    std::fs::read(&file)?;

    let rt1 = Runtime::builder().threads(1).build()?;
    let rtn = Runtime::builder().threads(all).build()?;
    let (mut c, mut e1, mut en) = (Vec::new(), Vec::new(), Vec::new());
    let mut last = None;
    let mut c_counts = (0, 0);
    // Interleaved, so that noise on this shared machine hits all alike.
    for _ in 0..runs {
        let (s, total, distinct) = run_c(&bin, &file)?;
        c.push(s);
        c_counts = (total, distinct);
        let r = run_ember(&rt1, &file)?;
        e1.push(r.0);
        let r = run_ember(&rtn, &file)?;
        en.push(r.0);
        if (r.1, r.2) != c_counts {
            bail!(
                "ember counted {} words / {} distinct, the C reference {} / {}",
                r.1,
                r.2,
                c_counts.0,
                c_counts.1
            );
        }
        last = Some(r.3);
    }
    let (c, e1, en) = (median(c), median(e1), median(en));
    println!(
        "word count, {:.1} MB ({} words, {} distinct), median of {runs} runs",
        mb, c_counts.0, c_counts.1
    );
    println!(
        "{:<28} {:>8} {:>9} {:>9}",
        "contender", "time s", "MB/s", "vs C"
    );
    for (name, t) in [
        ("C reference (1 thread)".to_string(), c),
        ("ember, 1 thread".to_string(), e1),
        (format!("ember, {all} threads"), en),
    ] {
        println!("{name:<28} {t:>8.3} {:>9.1} {:>8.2}x", mb / t, c / t);
    }
    if let Some(s) = last {
        println!("\nember, {all} threads, phases of the last run:\n{s}");
    }
    Ok(())
}
