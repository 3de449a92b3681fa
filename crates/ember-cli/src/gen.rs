//! `ember gen`: reproducible inputs for the workloads.

use anyhow::Result;
use clap::Subcommand;

/// The generators.
#[derive(Subcommand)]
pub(crate) enum Gen {
    /// Text: lines of 8-16 words from a Zipf-distributed vocabulary (word
    /// count, inverted index).
    Text(crate::text::TextArgs),
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

/// Runs a generator.
pub(crate) fn run(g: Gen) -> Result<()> {
    match g {
        Gen::Text(a) => crate::text::gen(a),
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
