//! `ember bench wordcount`: ember vs the C reference `wc_baseline.c`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use clap::Args as ClapArgs;
use ember::{Input, RunOptions, Runtime};
use ember_apps::text::TextSpec;
use ember_apps::wordcount::WordCount;

use crate::common::{cache_dir, parse_size};

use super::harness::{Contender, Measured};
use super::versus::{versus, warm};
use super::BenchArgs;

/// `ember bench wordcount`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Corpus size (the WORKLOADS.md shape: 1M-word vocabulary, Zipf 1.0).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

const WC_BASELINE_C: &str = include_str!("../../../../reference/wc_baseline.c");

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

/// Runs the C reference once: (total words, distinct words).
fn run_c(bin: &Path, file: &Path) -> Result<(u64, u64)> {
    let out = Command::new(bin).arg(file).arg("1").output()?;
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
        [total, distinct, ..] => Ok((total, distinct)),
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

/// Runs `ember bench wordcount`.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = TextSpec {
        size: a.size,
        ..TextSpec::default()
    };
    let file = crate::gen::cached_text(&spec)?;
    let bin = build_wc_baseline()?;
    warm(&[&file])?;
    // The C reference's counts, which every ember run must match.
    let want = run_c(&bin, &file)?;
    let c = Contender::new("C reference (1 thread)", || {
        Measured::of(|| run_c(&bin, &file).map(|_| None))
    });
    let v = versus(a.bench, c, |rt| run_ember(rt, &file, want), Vec::new())?;
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
    v.ember_all().print_phases("");
    Ok(())
}
