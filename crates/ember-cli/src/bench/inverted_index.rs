//! `ember bench invindex`: ember vs the sequential inverted index, plain
//! (the baseline) and partitioned as ember's reduce is.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args as ClapArgs;
use ember::{Input, RunOptions, Runtime};
use ember_apps::inverted_index::{build, sequential, sequential_partitioned, Built, Docs, Index};
use ember_apps::text::TextSpec;

use crate::common::parse_size;
use crate::inverted_index::{cached_docs, docs_in};

use super::{all_threads, contender_rows, interleaved, timed, BenchArgs, Report};

/// `ember bench invindex`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Corpus size (the WORKLOADS.md text shape: 1M-word vocabulary, Zipf
    /// 1.0, 8-16 words per line).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    /// Documents are this many files (the corpus cut at line boundaries)
    /// instead of the corpus's lines.
    #[arg(long)]
    files: Option<usize>,
    #[command(flatten)]
    bench: BenchArgs,
}

/// A sequential index of the parts.
type Sequential = fn(&[&[u8]], Docs) -> ember::Result<Index>;

/// Runs a sequential index once, input mapping included.
fn run_sequential(index: Sequential, paths: &[PathBuf], docs: Docs) -> Result<Index> {
    let input = Input::files(paths)?;
    let parts: Vec<&[u8]> = (0..input.parts()).map(|p| input.part_bytes(p)).collect();
    Ok(index(&parts, docs)?)
}

/// Runs ember once, input mapping included.
fn run_ember(rt: &Runtime, paths: &[PathBuf], docs: Docs) -> Result<Built> {
    let input = Input::files(paths)?;
    Ok(build(rt, &input, docs, &RunOptions::default())?)
}

/// Times one contender, then checks its index against the sequential one.
fn checked(want: &Index, what: &str, run: impl FnOnce() -> Result<Index>) -> Result<f64> {
    let mut got = None;
    let t = timed(|| {
        got = Some(run()?);
        Ok(())
    })?;
    if got.as_ref() != Some(want) {
        bail!("{what}: the index differs from the sequential one");
    }
    Ok(t)
}

/// Runs `ember bench invindex`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = TextSpec {
        size: a.size,
        ..TextSpec::default()
    };
    let (paths, docs) = match a.files {
        None => (vec![crate::gen::cached_text(&spec)?], Docs::Lines),
        Some(n) => {
            anyhow::ensure!(n > 0, "--files must be at least 1");
            (docs_in(&cached_docs(&spec, n)?)?, Docs::Files)
        }
    };
    let all = all_threads(a.bench.threads);
    // Warm the page cache; the untimed first sequential run is the oracle.
    for p in &paths {
        std::fs::read(p)?;
    }
    let want = run_sequential(sequential, &paths, docs)?;
    let rt1 = Runtime::builder().threads(1).build()?;
    let rtn = Runtime::builder().threads(all).build()?;
    let mut last = None;
    let mut documents = 0;
    let times = interleaved(
        a.bench.runs,
        &mut [
            &mut || {
                checked(&want, "sequential", || {
                    run_sequential(sequential, &paths, docs)
                })
            },
            &mut || {
                checked(&want, "ember, 1 thread", || {
                    Ok(run_ember(&rt1, &paths, docs)?.index)
                })
            },
            &mut || {
                checked(&want, "ember, all threads", || {
                    let b = run_ember(&rtn, &paths, docs)?;
                    documents = b.documents;
                    last = Some((b.stats, b.numbering));
                    Ok(b.index)
                })
            },
            &mut || {
                checked(&want, "sequential, partitioned", || {
                    run_sequential(sequential_partitioned, &paths, docs)
                })
            },
        ],
    )?;
    let postings: usize = want.iter().map(|(_, ids)| ids.len()).sum();
    Report {
        title: format!(
            "inverted index, {:.1} MB, {documents} documents ({}), {} words, {postings} postings",
            spec.size as f64 / 1e6,
            match docs {
                Docs::Lines => "lines".to_string(),
                Docs::Files => format!("{} files", paths.len()),
            },
            want.len(),
        ),
        amount: spec.size as f64 / 1e6,
        unit: "MB",
        rows: {
            let mut rows = contender_rows("sequential (1 thread)", &times, all);
            rows.push(("sequential, partitioned".into(), times[3]));
            rows
        },
    }
    .print();
    if let Some((stats, numbering)) = last {
        println!("\nember, {all} threads, phases of the last run:\n{stats}");
        if let Some(n) = numbering {
            println!(
                "line numbering pass (map-only run before the index): {:.3} s",
                n.total_secs
            );
        }
    }
    Ok(())
}
