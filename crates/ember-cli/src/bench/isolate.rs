//! `ember bench isolate`: streaming jobs with their splits mapped in
//! worker processes (`ember stream job --isolate`, docs/isolation.md)
//! against the same jobs in threads, in one run.
//!
//! Every contender is a child `ember` process: its CPU time, peak memory
//! and page faults (`wait4`'s resource usage) cover the workers it
//! started and reaped. Histogram is not a streaming job (its records are
//! binary), so it is not here.

use std::ffi::OsStr;
use std::path::Path;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember_apps::text::TextSpec;

use super::harness::{measure, median, print_table, Contender, Measured, Row};
use super::machine::all_threads;
use super::rss;
use super::BenchArgs;
use crate::common::parse_size;

/// `ember bench isolate`.
#[derive(ClapArgs)]
#[command(mut_arg("threads", |a| a.help("Workers, threads or processes (default: all CPUs)")))]
pub(crate) struct Args {
    /// Corpus size (word count's Zipf corpus).
    #[arg(long, value_parser = parse_size, default_value = "128MiB")]
    size: u64,
    /// Split size of both modes (default: the isolated mode's, fitted to
    /// the input).
    #[arg(long, value_parser = parse_size)]
    split_size: Option<u64>,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember bench isolate`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = TextSpec {
        size: a.size,
        ..TextSpec::default()
    };
    let text = crate::gen::cached_text(&spec)?;
    let workers = all_threads(a.bench.threads);
    // Both modes cut the input alike, so that they differ in isolation only.
    let split = a
        .split_size
        .unwrap_or_else(|| (a.size / (workers as u64 * 4)).clamp(1 << 20, 64 << 20));
    let contender = |job: &'static str, job_args: &'static [&'static str], isolate: bool| {
        let mut args: Vec<String> = ["stream", "job", job, "-t"].map(String::from).into();
        args.extend([
            workers.to_string(),
            "--split-size".into(),
            split.to_string(),
        ]);
        if isolate {
            args.push("--isolate".into());
        }
        let mode = if isolate { "processes" } else { "threads" };
        let text = text.clone();
        Contender::new(format!("{job}, {mode}"), move || {
            child(&args, &text, job_args)
        })
    };
    let contenders = vec![
        contender("wordcount", &[], false),
        contender("wordcount", &[], true),
        contender("inverted-index", &["--doc", "d"], false),
        contender("inverted-index", &["--doc", "d"], true),
    ];
    let rows = measure(a.bench.runs, contenders)?;
    let mb = a.size as f64 / 1e6;
    let title = format!(
        "isolate: {mb:.0} MB of text, {workers} workers, splits of {:.1} MiB",
        split as f64 / (1 << 20) as f64
    );
    print_table(&title, mb, "MB", &rows);
    print_ratios(&rows);
    Ok(())
}

/// For each job (its threads row, then its processes row): the processes'
/// wall and CPU time over the threads', paired by round (the harness runs
/// the rows in turn), and each row's page faults.
fn print_ratios(rows: &[Row]) {
    println!("processes / threads, medians of the ratios of runs of the same round:");
    for pair in rows.chunks(2) {
        let [threads, procs] = pair else {
            continue;
        };
        let ratio = |of: fn(&Measured) -> f64| {
            let pairs = threads.runs.iter().zip(&procs.runs);
            median(pairs.map(|(t, p)| of(p) / of(t)).collect())
        };
        println!(
            "  {}: wall {:.2}x, CPU {:.2}x",
            procs.name,
            ratio(|m| m.secs),
            ratio(|m| m.cpu)
        );
    }
    for row in rows {
        if let Some(note) = &row.median_run().note {
            println!("  {:<28} {note}", row.name);
        }
    }
}

/// Runs `ember ARGS TEXT -- JOB_ARGS` as a child process, its output
/// dropped: its times, peak memory and page faults, with its workers'.
fn child(args: &[String], text: &Path, job_args: &[&str]) -> Result<Measured> {
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.push(text.as_os_str());
    all.push(OsStr::new("--"));
    all.extend(job_args.iter().map(OsStr::new));
    let run = rss::run_self(&all)?;
    let usage = &run.usage;
    Ok(Measured {
        secs: run.secs,
        cpu: run.cpu,
        stats: None,
        note: Some(format!(
            "page faults: {} minor, {} major; system CPU {:.2} s",
            usage.ru_minflt,
            usage.ru_majflt,
            rss::seconds(usage.ru_stime)
        )),
        memory: rss::peak_of(usage).map(|peak| rss::Peak { base: 0, peak }),
    })
}
