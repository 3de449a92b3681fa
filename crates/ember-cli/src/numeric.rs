//! What the numeric workloads' `ember gen` commands share: the matrix
//! file's generator arguments.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use ember_apps::matrix::MatrixSpec;
use ember_cli::inputs;

/// The arguments of `ember gen kmeans`, `pca` and `matmul` besides the
/// shape: the values, the seed and the output file.
#[derive(ClapArgs)]
pub(crate) struct MatrixGenArgs {
    /// Values are drawn uniformly from 0..max.
    #[arg(long, default_value_t = 1000)]
    max: i32,
    /// Random seed: the same arguments give the same bytes.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Output file (`-` for standard output).
    #[arg(long, short = 'o')]
    out: PathBuf,
}

impl MatrixGenArgs {
    /// Writes the matrix `spec(max, seed)` describes to the output file.
    pub(crate) fn generate(&self, spec: impl FnOnce(i32, u64) -> Result<MatrixSpec>) -> Result<()> {
        inputs::matrix(&spec(self.max, self.seed)?).write_to(&self.out)
    }
}
