//! What the numeric workloads' commands share: matrix files (generating,
//! caching, opening) and their generator arguments.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use ember::Input;
use ember_apps::matrix::{write_matrix, Matrix, MatrixSpec};

use crate::common::{cache_dir, cached, create_output, progress};

/// Writes the matrix of `spec` to `out` (`-`: standard output).
pub(crate) fn generate(spec: &MatrixSpec, out: &Path) -> Result<()> {
    let mut w = create_output(out)?;
    let bar = progress(spec.file_bytes(), "generating matrix");
    write_matrix(spec, &mut w, |n| bar.set_position(n))?;
    w.flush()?;
    bar.finish_and_clear();
    Ok(())
}

/// Generates (once) a cached matrix file and returns its path.
pub(crate) fn cached_matrix(spec: &MatrixSpec) -> Result<PathBuf> {
    let path = cache_dir()?.join(format!(
        "matrix-{}x{}-v{}..{}-s{}.mat",
        spec.rows, spec.cols, spec.lo, spec.hi, spec.seed
    ));
    cached(&path, |f| {
        let bar = progress(
            spec.file_bytes(),
            "generating matrix (cached for next time)",
        );
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        write_matrix(spec, &mut w, |n| bar.set_position(n))?;
        w.flush()?;
        bar.finish_and_clear();
        Ok(())
    })?;
    Ok(path)
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
