//! `ember-bench wordcount`: ember vs the C reference `wc_baseline.c`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use clap::Args as ClapArgs;
use ember::tune::parse_size;
use ember::{Input, RunOptions, Runtime};
use ember_apps::text::TextSpec;
use ember_apps::wordcount::WordCount;
use ember_cli::inputs::{self, cache_dir};

use crate::harness::{Contender, Measured, Role};
use crate::machine::all_threads;
use crate::roofline;
use crate::rss;
use crate::versus::{versus, warm, Versus};
use crate::BenchArgs;

/// `ember-bench wordcount`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Corpus size (the WORKLOADS.md shape: 1M-word vocabulary, Zipf 1.0).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    #[command(flatten)]
    bench: BenchArgs,
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

/// Runs the C reference once: (total words, distinct words), and its peak
/// RSS.
fn run_c(bin: &Path, file: &Path) -> Result<((u64, u64), Option<u64>)> {
    let (out, peak) = rss::run_child(Command::new(bin).arg(file).arg("1"))?;
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
        [total, distinct, ..] => Ok(((total, distinct), peak)),
        _ => bail!("unexpected wc_baseline output: {text}"),
    }
}

/// Runs ember once, input mapping included, and checks its counts against
/// the C reference's `(total words, distinct words)`.
fn run_ember(rt: &Runtime, file: &Path, want: (u64, u64)) -> Result<Measured> {
    let measured = Measured::of(|| {
        let input = Input::file(file)?;
        let opts = RunOptions::default().top(20);
        Ok(Some(
            rt.run_with(&WordCount::by_count(), &input, &opts)?.stats,
        ))
    })?;
    let s = measured.stats.as_ref().expect("an ember run");
    ensure!(
        (s.pairs_emitted, s.distinct_keys) == want,
        "ember counted {} words / {} distinct, the C reference {} / {}",
        s.pairs_emitted,
        s.distinct_keys,
        want.0,
        want.1
    );
    Ok(measured)
}

/// Runs `ember-bench wordcount`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = TextSpec {
        size: a.size,
        ..TextSpec::default()
    };
    let file = inputs::text(&spec).cached()?;
    let bin = build_wc_baseline()?;
    warm(&[&file])?;
    // The C reference's counts, which every ember run must match.
    let want = run_c(&bin, &file)?.0;
    let c = Contender::new("C reference (1 thread)", || {
        let mut peak = None;
        let mut m = Measured::of(|| {
            peak = run_c(&bin, &file)?.1;
            Ok(None)
        })?;
        // The work ran in the child: its peak, not this process's.
        m.memory = peak.map(|peak| rss::Peak { base: 0, peak });
        Ok(m)
    })
    .role(Role::Work(1));
    let threads = all_threads(a.bench.threads);
    let files = [file.clone()];
    let mut limits = roofline::counting::limit(&files, threads, want.0, want.1);
    limits.extend(roofline::tokenizer(&files, threads, want.0));
    limits.extend(roofline::bandwidth(&files, threads));
    let v = versus(a.bench, c, |rt| run_ember(rt, &file, want), limits)?;
    let mb = spec.size as f64 / 1e6;
    v.print(
        &format!(
            "word count, {mb:.1} MB ({} words, {} distinct)",
            want.0, want.1
        ),
        mb,
        "MB",
    );
    v.print_speedup("C reference");
    v.print_roofline("wordcount", spec.size);
    print_bytes_per_key(&v, spec.size, want.1);
    v.ember_all().print_phases("");
    Ok(())
}

/// Prints each row's memory in the terms of the papers' word-count
/// figures: bytes per distinct word, of its peak RSS above what it held
/// before (the mapped input included, which is also printed apart), and
/// of ember's container arrays; the all-threads row's goes to the summary.
fn print_bytes_per_key(v: &Versus, input: u64, distinct: u64) {
    let per_key = |b: u64| b as f64 / distinct.max(1) as f64;
    println!(
        "\nmemory per distinct word ({distinct} words; the input alone is {:.0} bytes per word):",
        per_key(input)
    );
    for row in v.rows.iter().filter(|r| matches!(r.role, Role::Work(_))) {
        let Some(p) = row.peak() else { continue };
        let rise = p.peak.saturating_sub(p.base);
        let containers = row
            .median_run()
            .stats
            .as_ref()
            .map(|s| format!(", containers {:.0}", per_key(s.container_bytes)))
            .unwrap_or_default();
        let line = format!(
            "{:.0} bytes per distinct word (peak RSS rise{containers})",
            per_key(rise)
        );
        println!("{:<30} {line}", row.name);
        if std::ptr::eq(row, v.ember_all()) {
            roofline::note_last(line);
        }
    }
}
