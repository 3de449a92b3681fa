//! `ember-bench string-match`: ember vs the sequential string match.

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::tune::parse_size;
use ember::{Input, RunOptions};
use ember_apps::string_match::{self, KeysSpec, Targets};
use ember_cli::inputs;

use crate::machine::all_threads;
use crate::roofline;
use crate::versus::{against_sequential, warm};
use crate::BenchArgs;

/// `ember-bench string-match`.
#[derive(ClapArgs)]
pub(crate) struct Args {
    /// Keys file size (WORKLOADS.md: 256 MiB).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    #[command(flatten)]
    bench: BenchArgs,
}

/// Runs `ember-bench string-match`: looks for the planted words and one
/// word that is not there.
pub(crate) fn run(a: Args) -> Result<()> {
    let spec = KeysSpec {
        size: a.size,
        ..KeysSpec::default()
    };
    let file = inputs::keys(&spec).cached()?;
    let bytes = warm(&[&file])?;
    let mut words = spec.plant.clone();
    words.push("notplantedanywhere".into());
    let targets = Targets::new(&words)?;
    let sequential = || {
        let input = Input::file(&file)?;
        Ok(string_match::sequential(input.part_bytes(0), &targets))
    };
    let want = sequential()?;
    let files = [file.clone()];
    let v = against_sequential(
        a.bench,
        &want,
        sequential,
        |rt| {
            let input = Input::file(&file)?;
            Ok(string_match::run_input(
                rt,
                &input,
                &targets,
                &RunOptions::default(),
            )?)
        },
        roofline::bandwidth(&files, all_threads(a.bench.threads)),
    )?;
    let found: usize = want.iter().map(Vec::len).sum();
    v.print(
        &format!(
            "string match, {:.1} MB keys, {} targets, {found} matching lines",
            spec.size as f64 / 1e6,
            words.len()
        ),
        bytes as f64 / 1e6,
        "MB",
    );
    v.print_speedup("sequential baseline");
    v.print_roofline("string-match", bytes);
    v.ember_all().print_phases("");
    Ok(())
}
