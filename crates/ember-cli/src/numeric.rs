//! What the numeric workloads' commands share: matrix files (generating,
//! caching, opening) and their generator arguments.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args as ClapArgs;
use ember::Input;
use ember_apps::matrix::{write_matrix, Matrix, MatrixSpec};

use crate::genfile;

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
        let spec = spec(self.max, self.seed)?;
        let write = writer(&spec);
        genfile::write_file(&self.out, spec.file_bytes(), "generating matrix", &write)
    }
}

/// The generator of `spec`, for [`genfile`].
fn writer(
    spec: &MatrixSpec,
) -> impl Fn(&mut dyn Write, &mut dyn FnMut(u64)) -> std::io::Result<()> + '_ {
    move |mut w, p| write_matrix(spec, &mut w, p)
}

/// Generates (once) a cached matrix file and returns its path.
pub(crate) fn cached_matrix(spec: &MatrixSpec) -> Result<PathBuf> {
    let name = format!(
        "matrix-{}x{}-v{}..{}-s{}.mat",
        spec.rows, spec.cols, spec.lo, spec.hi, spec.seed
    );
    genfile::cached_file(&name, spec.file_bytes(), "generating matrix", &writer(spec))
}

/// Memory-maps a matrix file; [`matrix`] reads its header.
pub(crate) fn open(path: &Path) -> Result<Input<'static>> {
    Ok(Input::file(path)?)
}

/// The checked matrix of an input opened with [`open`].
pub(crate) fn matrix<'a>(input: &'a Input<'_>) -> Result<Matrix<'a>> {
    let name = input.part_name(0).display().to_string();
    Ok(Matrix::parse(input.part_bytes(0), &name)?)
}

/// A `rows x cols` matrix of values uniform in `0..max`, from `seed`.
pub(crate) fn uniform(rows: u64, cols: u64, max: i32, seed: u64) -> Result<MatrixSpec> {
    anyhow::ensure!(
        max >= 1,
        "--max must be at least 1 (values are drawn from 0..max)"
    );
    Ok(MatrixSpec {
        rows,
        cols,
        lo: 0,
        hi: max,
        seed,
    })
}
