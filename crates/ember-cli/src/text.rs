//! `ember gen text`: the Zipf text corpus that word count and the inverted
//! index read (`ember gen docs` cuts the same text into files).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use ember_apps::text::TextSpec;
use ember_cli::inputs;

use crate::common::parse_size;

/// `ember gen text`.
#[derive(Args)]
pub(crate) struct TextArgs {
    /// Output size, e.g. 256MiB (exact).
    #[arg(long, value_parser = parse_size, default_value = "256MiB")]
    size: u64,
    /// Distinct words in the vocabulary.
    #[arg(long, default_value_t = 1_000_000)]
    vocab: usize,
    /// Zipf exponent of word frequencies.
    #[arg(long, default_value_t = 1.0)]
    zipf: f64,
    /// Random seed: the same arguments give the same bytes.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Output file (`-` for standard output).
    #[arg(long, short = 'o')]
    pub(crate) out: PathBuf,
}

impl TextArgs {
    /// The text these arguments describe; an error for an empty
    /// vocabulary or a Zipf exponent out of range.
    pub(crate) fn spec(&self) -> Result<TextSpec> {
        anyhow::ensure!(self.vocab > 0, "--vocab must be at least 1");
        anyhow::ensure!(
            self.zipf.is_finite() && self.zipf >= 0.0,
            "--zipf must be a number >= 0"
        );
        Ok(TextSpec {
            size: self.size,
            vocab: self.vocab,
            zipf: self.zipf,
            seed: self.seed,
        })
    }
}

/// Runs `ember gen text`.
pub(crate) fn gen(a: TextArgs) -> Result<()> {
    inputs::text(&a.spec()?).write_to(&a.out)
}
