//! PCA's first two steps, as Phoenix computes them: the mean of every row of
//! an integer matrix, then the covariance matrix of the rows (each row a
//! variable, its columns the observations), as two MapReduce jobs.
//!
//! **Input**: a [`matrix`](crate::matrix) file, `m` rows of `n >= 2` values.
//!
//! **Definition** (exact, so that the result is the same for any thread count
//! or split size): with `S_i` the sum of row `i` and `P_ij` the dot product of
//! rows `i` and `j`, both computed exactly in integers,
//! - `mean_i = S_i / n`;
//! - `cov(i, j) = sum_k (x_ik - mean_i)(x_jk - mean_j) / (n - 1)
//!   = (n P_ij - S_i S_j) / (n (n - 1))`: the numerator is computed exactly
//!   in `i128` and converted to `f64` (the nearest value), then divided by
//!   `n (n - 1)` in `f64`. Phoenix truncates the means and covariances to
//!   integers instead; this keeps them exact to within the `f64` rounding of
//!   those last two steps.
//!
//! **Jobs**: job 1 (`RowSums`, a [`Job`]) maps splits of whole rows to
//! `(row, S_i)` pairs. Job 2 (`Covariance`, a [`MapOnlyJob`]: every key is
//! one row, so there is nothing to group) maps a split of rows `i` to
//! `(i, [cov(i, j) for j >= i])`, the upper triangle, reading the rows `j`
//! from a copy of the matrix prepared once (as `i16` when the values are
//! small enough, so that the dot products vectorize to 16-bit multiplies
//! with 32-bit sums). Rows near the top have the most work (the triangle);
//! splits of a few rows, handed out dynamically in order, keep the workers
//! balanced.

use ember::{
    Emit, Error, Input, Job, MapOnlyJob, MapResult, Records, Result, RunOptions, Runtime, Split,
    Stats, Sum,
};

use rayon::prelude::*;

use crate::isa::vectorized;
use crate::matrix::Matrix;
use crate::multijob::add_stats;

/// Means and covariance matrix of the rows of a matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Pca {
    /// Values per row (observations).
    pub cols: usize,
    /// The exact sum of each row.
    pub sums: Vec<i64>,
    /// The upper triangle of the covariance matrix: `upper[i][j - i]` is
    /// `cov(i, j)` for `j >= i`.
    pub upper: Vec<Vec<f64>>,
}

impl Pca {
    /// Number of rows (variables).
    pub fn rows(&self) -> usize {
        self.sums.len()
    }

    /// The mean of row `i`.
    pub fn mean(&self, i: usize) -> f64 {
        self.sums[i] as f64 / self.cols as f64
    }

    /// The covariance of rows `i` and `j` (symmetric).
    pub fn cov(&self, i: usize, j: usize) -> f64 {
        let (i, j) = if i <= j { (i, j) } else { (j, i) };
        self.upper[i][j - i]
    }
}

/// `cov(i, j)` from the exact sums and dot product, by the module's
/// definition.
pub fn covariance(cols: usize, dot: i128, sum_i: i64, sum_j: i64) -> f64 {
    let n = cols as i128;
    let divisor = (n * (n - 1)) as f64;
    // In i64 when it fits (the common case, and much faster), else in i128:
    // the same integer either way, rounded to the same f64.
    let narrow = i64::try_from(dot).ok().and_then(|dot| {
        (cols as i64)
            .checked_mul(dot)?
            .checked_sub(sum_i.checked_mul(sum_j)?)
    });
    match narrow {
        Some(numerator) => numerator as f64 / divisor,
        None => (n * dot - sum_i as i128 * sum_j as i128) as f64 / divisor,
    }
}

/// The matrix prepared for the dot products, in the narrowest exact form.
#[derive(Debug, PartialEq)]
enum Prepared {
    /// Every value fits in an `i16` and a sum of `chunk` products of two
    /// values fits in an `i32` (`chunk` is also at most [`BLOCK_COLS`]).
    Narrow { values: Vec<i16>, chunk: usize },
    /// Any `i32` values; a sum of `chunk` products fits in an `i64`.
    Wide { values: Vec<i32>, chunk: usize },
}

/// Shortest column chunk worth the narrow path.
const MIN_NARROW_CHUNK: u64 = 64;

impl Prepared {
    /// The matrix prepared on the calling thread.
    fn new(m: &Matrix<'_>) -> Prepared {
        Prepared::choose(
            m.range(),
            || m.data.chunks_exact(4).map(|b| value(b) as i16).collect(),
            || m.values(),
        )
    }

    /// The matrix prepared as [`Prepared::new`] does, by `rt`'s workers
    /// (the range and the conversion are passes over the whole matrix,
    /// which would otherwise run on one core before the parallel job).
    fn new_on(m: &Matrix<'_>, rt: &Runtime) -> Prepared {
        rt.install(|| {
            let range = (!m.data.is_empty()).then(|| {
                let both = |(lo, hi): (i32, i32), (l, h): (i32, i32)| (lo.min(l), hi.max(h));
                m.data
                    .par_chunks_exact(4)
                    .map(|b| (value(b), value(b)))
                    .reduce(|| (i32::MAX, i32::MIN), both)
            });
            Prepared::choose(
                range,
                || {
                    m.data
                        .par_chunks_exact(4)
                        .map(|b| value(b) as i16)
                        .collect()
                },
                || m.data.par_chunks_exact(4).map(value).collect(),
            )
        })
    }

    /// The narrow form (its values from `narrow`) when the matrix's value
    /// `range` allows it, else the wide one (from `wide`).
    fn choose(
        range: Option<(i32, i32)>,
        narrow: impl FnOnce() -> Vec<i16>,
        wide: impl FnOnce() -> Vec<i32>,
    ) -> Prepared {
        let max_abs = range.map_or(0, |(lo, hi)| {
            (lo.unsigned_abs() as u64).max(hi.unsigned_abs() as u64)
        });
        let square = (max_abs * max_abs).max(1);
        let narrow_chunk = i32::MAX as u64 / square;
        if narrow_chunk >= MIN_NARROW_CHUNK {
            // |v| <= 5792 here: the casts are exact.
            Prepared::Narrow {
                values: narrow(),
                chunk: narrow_chunk.min(BLOCK_COLS as u64) as usize,
            }
        } else {
            Prepared::Wide {
                values: wide(),
                chunk: (i64::MAX as u64 / square).min(BLOCK_COLS as u64) as usize,
            }
        }
    }
}

/// The little-endian `i32` of 4 bytes.
fn value(b: &[u8]) -> i32 {
    i32::from_le_bytes(b.try_into().expect("4 bytes"))
}

/// An integer type the dot-product kernel multiplies, with the accumulator
/// a chunk of its products is summed in.
trait Elem: Copy {
    type Acc: Copy;
    const ZERO: Self::Acc;
    fn mul_add(acc: Self::Acc, a: Self, b: Self) -> Self::Acc;
    fn widen(acc: Self::Acc) -> i128;
}

impl Elem for i16 {
    type Acc = i32;
    const ZERO: i32 = 0;
    #[inline(always)]
    fn mul_add(acc: i32, a: i16, b: i16) -> i32 {
        acc.wrapping_add((a as i32).wrapping_mul(b as i32))
    }
    #[inline(always)]
    fn widen(acc: i32) -> i128 {
        acc as i128
    }
}

impl Elem for i32 {
    type Acc = i64;
    const ZERO: i64 = 0;
    #[inline(always)]
    fn mul_add(acc: i64, a: i32, b: i32) -> i64 {
        acc.wrapping_add((a as i64).wrapping_mul(b as i64))
    }
    #[inline(always)]
    fn widen(acc: i64) -> i128 {
        acc as i128
    }
}

/// Rows the kernel takes at once: each chunk of a row `j` read is used
/// `GROUP` times.
const GROUP: usize = 8;

/// Most columns the kernel takes at once, so that the chunks of the
/// `GROUP` rows stay in the L1 cache while the rows `j` stream by.
const BLOCK_COLS: usize = 1024;

/// The dot product of two equally long slices in `E::Acc`: one plain
/// reduction loop, the form compilers turn into multiply-add instructions.
#[inline(always)]
fn dot<E: Elem>(a: &[E], b: &[E]) -> E::Acc {
    a.iter()
        .zip(b)
        .fold(E::ZERO, |acc, (&x, &y)| E::mul_add(acc, x, y))
}

/// Covariance rows `first..first + R` (the upper triangle, `j >= i`),
/// appended to `out`. The dot products are exact: sums of at most `chunk`
/// columns in `E::Acc` (which the chunk length keeps from overflowing),
/// added up in `i128`.
#[inline(always)]
fn group<E: Elem, const R: usize>(
    values: &[E],
    chunk: usize,
    sums: &[i64],
    cols: usize,
    first: usize,
    out: &mut Vec<(u32, Vec<f64>)>,
) {
    let m = sums.len();
    let row = |i: usize| &values[i * cols..(i + 1) * cols];
    let mut dots = vec![[0i128; R]; m - first];
    let mut start = 0;
    while start < cols {
        let end = (start + chunk).min(cols);
        let a: [&[E]; R] = std::array::from_fn(|t| &row(first + t)[start..end]);
        for (j, d) in (first..m).zip(&mut dots) {
            let b = &row(j)[start..end];
            for (d, a) in d.iter_mut().zip(&a) {
                *d += E::widen(dot(a, b));
            }
        }
        start = end;
    }
    for t in 0..R {
        // Row i = first + t: dots[j - first][t] for j >= i.
        let i = first + t;
        let cov = dots[t..]
            .iter()
            .zip(&sums[i..])
            .map(|(d, &sum_j)| covariance(cols, d[t], sums[i], sum_j));
        out.push((i as u32, cov.collect()));
    }
}

/// Covariance rows `rows` (the upper triangle), appended to `out`.
fn covariance_rows(
    prepared: &Prepared,
    sums: &[i64],
    cols: usize,
    rows: std::ops::Range<usize>,
    out: &mut Vec<(u32, Vec<f64>)>,
) {
    #[inline(always)]
    fn all<E: Elem>(
        values: &[E],
        chunk: usize,
        sums: &[i64],
        cols: usize,
        rows: std::ops::Range<usize>,
        out: &mut Vec<(u32, Vec<f64>)>,
    ) {
        let mut i = rows.start;
        while i + GROUP <= rows.end {
            group::<E, GROUP>(values, chunk, sums, cols, i, out);
            i += GROUP;
        }
        for i in i..rows.end {
            group::<E, 1>(values, chunk, sums, cols, i, out);
        }
    }
    vectorized(
        #[inline(always)]
        || match prepared {
            Prepared::Narrow { values, chunk } => all(values, *chunk, sums, cols, rows, out),
            Prepared::Wide { values, chunk } => all(values, *chunk, sums, cols, rows, out),
        },
    )
}

/// The exact sum of one row's bytes.
fn row_sum(row: &[u8]) -> i64 {
    row.chunks_exact(4)
        .map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes")) as i64)
        .sum()
}

/// Job 1: the sum of every row (its mean times `n`), keyed by the row's
/// index in the matrix: `first` plus its index in the input (`first` is
/// not 0 for a worker of an isolated run, whose input is a split of the
/// matrix's rows).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowSums {
    pub(crate) cols: usize,
    pub(crate) first: usize,
}

impl Job for RowSums {
    type Key = u32;
    type Value = i64;
    type Combiner = Sum;
    type Out = i64;

    fn records(&self) -> Records {
        Records::Fixed(4 * self.cols)
    }

    fn map<E: Emit<u32, i64>>(&self, split: Split<'_>, emit: &mut E) -> MapResult {
        let first = self.first + split.offset as usize / (4 * self.cols);
        for (r, row) in split.data.chunks_exact(4 * self.cols).enumerate() {
            emit.emit((first + r) as u32, row_sum(row));
        }
        Ok(())
    }

    fn reduce(&self, _row: &u32, sum: i64) -> i64 {
        sum
    }
}

/// Job 2: the covariance rows of a split of rows.
struct Covariance<'a> {
    cols: usize,
    prepared: &'a Prepared,
    sums: &'a [i64],
}

impl MapOnlyJob for Covariance<'_> {
    type Key = u32;
    type Value = Vec<f64>;

    fn records(&self) -> Records {
        Records::Fixed(4 * self.cols)
    }

    fn map(&self, split: Split<'_>, out: &mut Vec<(u32, Vec<f64>)>) -> MapResult {
        let row_bytes = 4 * self.cols;
        let first = split.offset as usize / row_bytes;
        let rows = first..first + split.data.len() / row_bytes;
        covariance_rows(self.prepared, self.sums, self.cols, rows, out);
        Ok(())
    }

    fn sort_output(&self) -> bool {
        // Splits come in row order and each emits its rows in order.
        false
    }
}

/// Checks the matrix's shape for PCA.
pub fn check(m: &Matrix<'_>) -> Result<()> {
    if m.cols < 2 {
        return Err(Error::InvalidInput(format!(
            "a {} x {} matrix: covariance needs at least 2 columns (observations) per row",
            m.rows, m.cols
        )));
    }
    if m.rows as u64 > u32::MAX as u64 || m.cols as u64 > u32::MAX as u64 {
        // Keeps row indices in a u32 and the sums and products exact.
        return Err(Error::InvalidInput(format!(
            "a {} x {} matrix: at most {} rows and columns are supported",
            m.rows,
            m.cols,
            u32::MAX
        )));
    }
    Ok(())
}

/// Rows per split of job 2 unless the caller sets a split size: about 16
/// splits per worker, in whole groups, for balance on the triangle (the
/// first splits have the most work; the last ones, the least, even out the
/// end).
fn default_rows_per_split(rows: usize, threads: usize) -> usize {
    (rows / (threads * 16)).next_multiple_of(GROUP).max(GROUP)
}

/// Means and covariances with ember: two jobs on `rt`; the stats are summed
/// over both.
///
/// The matrix is in memory (a [`Matrix`] over bytes, memory-mapped by the
/// CLI): both jobs read it, and each covariance row of job 2 reads every
/// later row (random access), so chunked ingest does not apply here.
pub fn run(rt: &Runtime, m: &Matrix<'_>, opts: &RunOptions) -> Result<(Pca, Stats)> {
    check(m)?;
    let input = Input::bytes(m.data);
    let sums_out = rt.run_with(
        &RowSums {
            cols: m.cols,
            first: 0,
        },
        &input,
        opts,
    )?;
    let sums: Vec<i64> = sums_out.pairs.into_iter().map(|(_, s)| s).collect();
    let mut stats = Stats::default();
    add_stats(&mut stats, &sums_out.stats);

    let prepared = Prepared::new_on(m, rt);
    let job = Covariance {
        cols: m.cols,
        prepared: &prepared,
        sums: &sums,
    };
    let rows_per_split = default_rows_per_split(m.rows, rt.threads());
    let opts = opts
        .clone()
        .split_size(opts.split_size.or(Some(rows_per_split * m.row_bytes())));
    let cov = rt.run_map_only(&job, &input, &opts)?;
    add_stats(&mut stats, &cov.stats);
    let upper = cov.pairs.into_iter().map(|(_, row)| row).collect();
    Ok((
        Pca {
            cols: m.cols,
            sums,
            upper,
        },
        stats,
    ))
}

/// The covariance rows `rows` of `m` (the upper triangle: row `i` holds
/// `cov(i, j)` for `j >= i`), keyed by `i`, from the exact row sums `sums`
/// of all of `m`'s rows: what job 2 computes for a split of those rows,
/// here from the matrix's rows `rows.start..` alone (a worker process of an
/// isolated run prepares only the rows it reads). The dot products are
/// exact, so the values are job 2's, however the rows are cut.
pub fn covariance_of_rows(
    m: &Matrix<'_>,
    sums: &[i64],
    rows: std::ops::Range<usize>,
) -> Vec<(u32, Vec<f64>)> {
    let tail = Matrix {
        rows: m.rows - rows.start,
        cols: m.cols,
        data: &m.data[rows.start * m.row_bytes()..],
    };
    let mut out = Vec::with_capacity(rows.len());
    let local = 0..rows.len();
    covariance_rows(
        &Prepared::new(&tail),
        &sums[rows.start..],
        m.cols,
        local,
        &mut out,
    );
    for (row, _) in &mut out {
        *row += rows.start as u32;
    }
    out
}

/// The plain sequential PCA: the correctness oracle and the benchmark
/// baseline.
pub fn sequential(m: &Matrix<'_>) -> Result<Pca> {
    check(m)?;
    let sums: Vec<i64> = m.data.chunks_exact(m.row_bytes()).map(row_sum).collect();
    let prepared = Prepared::new(m);
    let mut rows = Vec::with_capacity(m.rows);
    covariance_rows(&prepared, &sums, m.cols, 0..m.rows, &mut rows);
    Ok(Pca {
        cols: m.cols,
        sums,
        upper: rows.into_iter().map(|(_, row)| row).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::encode;

    /// The definition, computed plainly in i128.
    fn plain(rows: &[Vec<i32>]) -> Vec<Vec<f64>> {
        let n = rows[0].len();
        let sum = |r: &[i32]| r.iter().map(|&v| v as i64).sum::<i64>();
        (0..rows.len())
            .map(|i| {
                (i..rows.len())
                    .map(|j| {
                        let dot: i128 = (0..n)
                            .map(|k| rows[i][k] as i128 * rows[j][k] as i128)
                            .sum();
                        covariance(n, dot, sum(&rows[i]), sum(&rows[j]))
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn both_paths_match_the_definition() {
        // Small values take the narrow path, large ones the wide path with
        // chunks of 2 columns.
        for (rows, cols, scale) in [
            (11, 70, 1000),
            (9, 5, i32::MAX),
            (17, 3, -5792),
            (8, 2, 5793),
        ] {
            let mut values: Vec<i32> = (0..rows * cols)
                .map(|x| ((x as i64 * 7919 % 2001 - 1000) * scale as i64 / 1000) as i32)
                .collect();
            values[1] = scale;
            let bytes = encode(rows, cols, &values);
            let m = Matrix::parse(&bytes, "m").unwrap();
            let prepared = Prepared::new(&m);
            let narrow = matches!(prepared, Prepared::Narrow { .. });
            assert_eq!(narrow, scale.unsigned_abs() <= 5792, "scale {scale}");
            for threads in [1, 2, 3] {
                let rt = Runtime::builder().threads(threads).build().unwrap();
                assert_eq!(Prepared::new_on(&m, &rt), prepared, "{threads} threads");
            }
            let got = sequential(&m).unwrap();
            let by_row: Vec<Vec<i32>> = m.values().chunks(cols).map(<[i32]>::to_vec).collect();
            assert_eq!(got.upper, plain(&by_row), "{rows} x {cols}, scale {scale}");
        }
    }

    #[test]
    fn covariance_of_known_rows() {
        // Rows (1, 2, 3) and (2, 4, 6): variances 1 and 4, covariance 2.
        let bytes = encode(2, 3, &[1, 2, 3, 2, 4, 6]);
        let p = sequential(&Matrix::parse(&bytes, "m").unwrap()).unwrap();
        assert_eq!((p.mean(0), p.mean(1)), (2.0, 4.0));
        assert_eq!(
            (p.cov(0, 0), p.cov(0, 1), p.cov(1, 0), p.cov(1, 1)),
            (1.0, 2.0, 2.0, 4.0)
        );
    }
}
