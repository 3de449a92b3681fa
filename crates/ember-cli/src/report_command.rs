//! `ember report`: its arguments; the page is [`ember_cli::report`].

use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember_cli::report::Run;

use crate::common::write_output;

/// `ember report`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// A run's stats (`--stats-json`) and/or trace (`--trace`) files, in
    /// any order.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The HTML file to write (`-`: standard output).
    #[arg(short, long, default_value = "report.html")]
    output: PathBuf,
}

/// Runs `ember report`.
pub(crate) fn run(a: Args) -> Result<()> {
    let run = Run::read(&a.files)?;
    let html = run.html();
    write_output(Some(&a.output), |w| Ok(w.write_all(html.as_bytes())?))?;
    eprintln!(
        "report: {} ({} spans{})",
        a.output.display(),
        run.span_count(),
        if run.has_stats() { ", stats" } else { "" }
    );
    Ok(())
}
