//! The workloads' generated inputs: written to a file with a progress bar
//! (`ember gen`, any path, `-` for standard output), or once into the cache
//! folder and reused from there (`ember demo`, `ember-bench`). The same
//! spec gives the same bytes and the same name in the cache.
//!
//! ```no_run
//! use ember_apps::text::TextSpec;
//!
//! let spec = TextSpec { size: 1 << 20, ..TextSpec::default() };
//! // Generated on the first call, found in the cache on the next ones.
//! let path = ember_cli::inputs::text(&spec).cached()?;
//! # Ok::<(), anyhow::Error>(())
//! ```

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ember_apps::histogram::BmpSpec;
use ember_apps::linear_regression::PointsSpec;
use ember_apps::matrix::MatrixSpec;
use ember_apps::sort::{SortSpec, RECORD_LEN};
use ember_apps::string_match::KeysSpec;
use ember_apps::text::TextSpec;
use indicatif::{ProgressBar, ProgressStyle};

use crate::output::write_output;

/// Writes an input's bytes to the writer, reporting the bytes written so
/// far.
type Generator = dyn Fn(&mut dyn Write, &mut dyn FnMut(u64)) -> io::Result<()>;

/// A generated input: its bytes' generator, their number, its name in the
/// cache folder and what its progress bar says.
pub struct Generated {
    name: String,
    size: u64,
    what: &'static str,
    write: Box<Generator>,
}

impl Generated {
    fn new(
        name: String,
        size: u64,
        what: &'static str,
        write: impl Fn(&mut dyn Write, &mut dyn FnMut(u64)) -> io::Result<()> + 'static,
    ) -> Generated {
        Generated {
            name,
            size,
            what,
            write: Box::new(write),
        }
    }

    /// Writes the input to `out` (`-`: standard output) under a progress
    /// bar; a file appears only once complete (see [`crate::output`]).
    pub fn write_to(&self, out: &Path) -> Result<()> {
        write_output(Some(out), |w| self.generate(w, self.what))
    }

    /// The input's path in the [`cache_dir`], where it is generated first
    /// if it is not there yet.
    pub fn cached(&self) -> Result<PathBuf> {
        let path = cache_dir()?.join(&self.name);
        if !path.exists() {
            let what = format!("{} (cached for next time)", self.what);
            write_output(Some(&path), |w| self.generate(w, &what))?;
        }
        Ok(path)
    }

    /// Writes the bytes into `w` under a progress bar saying `what`.
    fn generate(&self, w: &mut dyn Write, what: &str) -> Result<()> {
        let bar = bar(self.size, what);
        (self.write)(w, &mut |n| bar.set_position(n))?;
        bar.finish_and_clear();
        Ok(())
    }
}

/// The folder generated inputs are cached in: `$EMBER_CACHE`, else
/// `$XDG_CACHE_HOME/ember`, else `~/.cache/ember`, else `./.ember-cache`.
/// Created if missing.
pub fn cache_dir() -> Result<PathBuf> {
    let dir = if let Some(d) = std::env::var_os("EMBER_CACHE") {
        PathBuf::from(d)
    } else if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        PathBuf::from(d).join("ember")
    } else if let Some(h) = std::env::var_os("HOME") {
        PathBuf::from(h).join(".cache").join("ember")
    } else {
        PathBuf::from(".ember-cache")
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create cache folder '{}'", dir.display()))?;
    Ok(dir)
}

/// Text: lines of 8-16 words from a Zipf-distributed vocabulary (word
/// count, inverted index).
pub fn text(spec: &TextSpec) -> Generated {
    let name = format!(
        "text-{}-v{}-z{}-s{}.txt",
        spec.size, spec.vocab, spec.zipf, spec.seed
    );
    let spec = spec.clone();
    Generated::new(name, spec.size, "generating text", move |mut w, p| {
        ember_apps::text::write_text(&spec, &mut w, p)
    })
}

/// A 24-bit BMP of pseudo-random pixels (histogram).
pub fn bmp(spec: BmpSpec) -> Generated {
    let name = format!("bmp-{}x{}-s{}.bmp", spec.width, spec.height, spec.seed);
    Generated::new(name, spec.file_len(), "generating BMP", move |mut w, p| {
        ember_apps::histogram::write_bmp(&spec, &mut w, p)
    })
}

/// Points as pairs of signed bytes (linear regression).
pub fn points(spec: PointsSpec) -> Generated {
    let name = format!("points-{}-s{}.bin", spec.size, spec.seed);
    Generated::new(name, spec.size, "generating points", move |mut w, p| {
        ember_apps::linear_regression::write_points(&spec, &mut w, p)
    })
}

/// A keys file, one word per line, the spec's words planted (string
/// match).
pub fn keys(spec: &KeysSpec) -> Generated {
    let name = format!(
        "keys-{}-s{}-{}.txt",
        spec.size,
        spec.seed,
        spec.plant.join("-")
    );
    let spec = spec.clone();
    Generated::new(name, spec.size, "generating keys", move |mut w, p| {
        ember_apps::string_match::write_keys(&spec, &mut w, p)
    })
}

/// 100-byte records with random 10-byte keys, gensort's layout (sort).
pub fn records(spec: SortSpec) -> Generated {
    let name = format!("sort-{}-s{}.dat", spec.records, spec.seed);
    let size = spec.records * RECORD_LEN as u64;
    Generated::new(name, size, "generating records", move |mut w, p| {
        ember_apps::sort::write_records(&spec, &mut w, p)
    })
}

/// An ember matrix file (k-means, PCA, matrix multiply).
pub fn matrix(spec: &MatrixSpec) -> Generated {
    let name = format!(
        "matrix-{}x{}-v{}..{}-s{}.mat",
        spec.rows, spec.cols, spec.lo, spec.hi, spec.seed
    );
    let spec = spec.clone();
    Generated::new(
        name,
        spec.file_bytes(),
        "generating matrix",
        move |mut w, p| ember_apps::matrix::write_matrix(&spec, &mut w, p),
    )
}

/// k-means points: `points` rows of `dims` coordinates uniform in
/// `0..max` (WORKLOADS.md: 500,000 x 3, `max` 1000).
pub fn kmeans_points(points: u64, dims: u64, max: i32, seed: u64) -> Result<MatrixSpec> {
    anyhow::ensure!(dims >= 1, "--dims must be at least 1");
    uniform(points, dims, max, seed)
}

/// PCA's matrix: `rows x cols` values uniform in `0..max` (WORKLOADS.md:
/// 2500 x 2500, `max` 1000).
pub fn pca_matrix(rows: u64, cols: u64, max: i32, seed: u64) -> Result<MatrixSpec> {
    anyhow::ensure!(cols >= 2, "--cols must be at least 2");
    uniform(rows, cols, max, seed)
}

/// A factor of a matrix product: `rows x cols` values uniform in `0..max`
/// (WORKLOADS.md: 2048 x 2048, `max` 1000).
pub fn factor(rows: u64, cols: u64, max: i32, seed: u64) -> Result<MatrixSpec> {
    anyhow::ensure!(cols >= 1, "a matrix needs at least 1 column");
    uniform(rows, cols, max, seed)
}

/// A `rows x cols` matrix of values uniform in `0..max`, from `seed`.
fn uniform(rows: u64, cols: u64, max: i32, seed: u64) -> Result<MatrixSpec> {
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

/// Writes the text of `spec` into the folder `dir` as `files` documents
/// (inverted index), under a progress bar.
pub fn write_docs(spec: &TextSpec, files: usize, dir: &Path) -> Result<()> {
    docs_into(spec, files, dir, "generating documents")
}

/// The folder of `files` documents of the text of `spec` in the
/// [`cache_dir`], where it is generated first if it is not there yet.
pub fn docs(spec: &TextSpec, files: usize) -> Result<PathBuf> {
    let dir = cache_dir()?.join(format!(
        "docs-{}-v{}-z{}-s{}-f{files}",
        spec.size, spec.vocab, spec.zipf, spec.seed
    ));
    if !dir.exists() {
        // Written whole, then renamed.
        let tmp = dir.with_extension("partial");
        let _ = std::fs::remove_dir_all(&tmp);
        docs_into(
            spec,
            files,
            &tmp,
            "generating documents (cached for next time)",
        )?;
        std::fs::rename(&tmp, &dir)
            .with_context(|| format!("cannot create '{}'", dir.display()))?;
    }
    Ok(dir)
}

/// Writes the documents under a progress bar saying `what`.
fn docs_into(spec: &TextSpec, files: usize, dir: &Path, what: &str) -> Result<()> {
    anyhow::ensure!(files > 0, "--files must be at least 1");
    let bar = bar(spec.size, what);
    ember_apps::inverted_index::write_docs(spec, files, dir, |n| bar.set_position(n))
        .with_context(|| format!("cannot write documents to '{}'", dir.display()))?;
    bar.finish_and_clear();
    Ok(())
}

/// A bar of `len` bytes on standard error (drawn only on a terminal), for
/// writing generated inputs.
fn bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}
