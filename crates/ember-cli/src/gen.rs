//! `ember gen`: reproducible inputs for the workloads.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use ember_apps::text::TextSpec;
use ember_cli::inputs;

use crate::common::parse_size;

/// The generators.
#[derive(Subcommand)]
pub(crate) enum Gen {
    /// Text: lines of 8-16 words from a Zipf-distributed vocabulary (word
    /// count, inverted index).
    Text(TextArgs),
    /// A 24-bit BMP of pseudo-random pixels (histogram).
    Histogram(crate::histogram::GenArgs),
    /// Points as pairs of signed bytes around y = x/2 + 20 (linear regression).
    #[command(alias = "linreg")]
    LinearRegression(crate::linear_regression::GenArgs),
    /// A keys file, one random word per line, target words planted (string match).
    #[command(alias = "strmatch")]
    StringMatch(crate::string_match::GenArgs),
    /// Text cut into N document files at line boundaries (inverted index).
    Docs(crate::inverted_index::DocsArgs),
    /// 100-byte records with random 10-byte keys, gensort layout (sort).
    Sort(crate::sort::GenArgs),
    /// k-means points: uniform integer coordinates (an ember matrix file).
    Kmeans(crate::kmeans::GenArgs),
    /// PCA matrix: uniform integer values (an ember matrix file).
    Pca(crate::pca::GenArgs),
    /// A matrix-multiply factor: uniform integer values (an ember matrix file).
    #[command(alias = "matmul")]
    MatrixMultiply(crate::matrix_multiply::GenArgs),
}

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

/// Runs a generator.
pub(crate) fn run(g: Gen) -> Result<()> {
    match g {
        Gen::Text(a) => inputs::text(&a.spec()?).write_to(&a.out),
        Gen::Histogram(a) => crate::histogram::gen(a),
        Gen::LinearRegression(a) => crate::linear_regression::gen(a),
        Gen::StringMatch(a) => crate::string_match::gen(a),
        Gen::Docs(a) => crate::inverted_index::gen(a),
        Gen::Sort(a) => crate::sort::gen(a),
        Gen::Kmeans(a) => crate::kmeans::gen(a),
        Gen::Pca(a) => crate::pca::gen(a),
        Gen::MatrixMultiply(a) => crate::matrix_multiply::gen(a),
    }
}
