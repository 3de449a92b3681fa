//! Matrix multiply: `C = A B` for `i32` matrices (Phoenix's
//! `matrix_multiply`), as a map-only job.
//!
//! **Input**: two [`matrix`](crate::matrix) files, `A` (`m x k`) and `B`
//! (`k x p`); WORKLOADS.md multiplies two `2048 x 2048` matrices. They are
//! only read (memory-mapped read-only): Phoenix's version rewrites its input
//! files when given one argument; this one never writes them.
//!
//! **Arithmetic**: `i32` with wrapping, that is exact modulo 2^32 (what C's
//! `int` arithmetic in Phoenix does in practice). Modular sums do not depend
//! on the order of the additions, so the product is the same for any thread
//! count, split size or instruction set. Values in `0..1000` (the generator's
//! default) never wrap for `k <= 2147`.
//!
//! **Job**: the input is `A`'s rows (`Records::Fixed(4 k)`); each map task
//! computes the rows of `C` for its split of rows of `A` and emits them as
//! one `(first row, rows)` pair; no reduce. `B` is packed once, before the
//! job, into strips of `STRIP` columns (each strip's rows contiguous, so
//! that no power-of-two row stride makes blocks of it collide in the
//! caches); the kernel computes `ROWS x STRIP` tiles of `C` in registers over
//! blocks of `KC` inner indices and adds them into `C`.

use ember::{
    Error, Input, MapOnlyJob, MapResult, Records, Result, RunOptions, Runtime, Split, Stats,
};

use crate::isa::vectorized;
use crate::matrix::{decode_into, Matrix};
use crate::multijob::add_stats;

/// Columns of `B` (and `C`) per packed strip: four AVX-512 vectors of `i32`.
const STRIP: usize = 64;
/// Rows of `A` the kernel takes at once (each strip row loaded is used
/// `ROWS` times).
const ROWS: usize = 4;
/// Inner indices per block: a strip's block (`KC x STRIP` values, 64 KiB)
/// stays in the L2 cache while the split's rows go by.
const KC: usize = 256;

/// A matrix product, in blocks of whole rows (as the map tasks made them:
/// no copy to assemble it).
#[derive(Debug, Clone, Eq)]
pub struct Product {
    /// Rows of `C` (those of `A`).
    pub rows: usize,
    /// Columns of `C` (those of `B`).
    pub cols: usize,
    /// Blocks of consecutive rows, in order.
    blocks: Vec<Vec<i32>>,
    /// The first row of each block.
    starts: Vec<usize>,
}

impl Product {
    /// The product of `rows` rows of `cols` values from its blocks of
    /// consecutive whole rows, in order.
    pub fn from_blocks(rows: usize, cols: usize, blocks: Vec<Vec<i32>>) -> Product {
        let mut starts = Vec::with_capacity(blocks.len());
        let mut at = 0;
        for b in &blocks {
            starts.push(at);
            at += b.len() / cols;
        }
        debug_assert_eq!(at, rows);
        Product {
            rows,
            cols,
            blocks,
            starts,
        }
    }

    /// Row `i` of `C`.
    pub fn row(&self, i: usize) -> &[i32] {
        let b = self.starts.partition_point(|&s| s <= i) - 1;
        let at = (i - self.starts[b]) * self.cols;
        &self.blocks[b][at..at + self.cols]
    }

    /// The rows of `C`, in order.
    pub fn iter_rows(&self) -> impl Iterator<Item = &[i32]> + '_ {
        self.blocks.iter().flat_map(|b| b.chunks_exact(self.cols))
    }

    /// `C`, row by row, in one vector.
    pub fn values(&self) -> Vec<i32> {
        self.blocks.concat()
    }
}

impl PartialEq for Product {
    /// Same shape and values, however the rows are blocked.
    fn eq(&self, other: &Product) -> bool {
        (self.rows, self.cols) == (other.rows, other.cols) && self.iter_rows().eq(other.iter_rows())
    }
}

/// `B` packed for the kernel, in pieces of consecutive rows (`KC` rows, as
/// the pack job's splits or the sequential loop cut them; any length works).
/// A piece of `len` rows holds them in strips of `STRIP` columns: its value
/// `(s * len + r) * STRIP + l` is `B[first + r][s * STRIP + l]`, zero past
/// the last column. Contiguous strips mean that no power-of-two row stride
/// makes a block of `B` collide with itself in the caches.
struct Packed {
    k: usize,
    p: usize,
    pieces: Vec<Vec<i32>>,
}

impl Packed {
    /// `b` packed on the calling thread, in pieces of `KC` rows.
    fn new(b: &Matrix<'_>) -> Packed {
        Packed {
            k: b.rows,
            p: b.cols,
            pieces: b
                .data
                .chunks(KC * b.row_bytes())
                .map(|rows| pack(rows, b.cols))
                .collect(),
        }
    }

    /// Number of strips.
    fn strips(&self) -> usize {
        self.p.div_ceil(STRIP)
    }
}

/// Packs consecutive rows of `B` (`p` values each, as bytes).
fn pack(rows: &[u8], p: usize) -> Vec<i32> {
    let len = rows.len() / (4 * p);
    let mut piece = vec![0i32; p.div_ceil(STRIP) * len * STRIP];
    let mut row = Vec::with_capacity(p);
    for (r, bytes) in rows.chunks_exact(4 * p).enumerate() {
        row.clear();
        decode_into(bytes, &mut row);
        for (s, cols) in row.chunks(STRIP).enumerate() {
            let at = (s * len + r) * STRIP;
            piece[at..at + cols.len()].copy_from_slice(cols);
        }
    }
    piece
}

/// The pack job: a split of `B`'s rows to its packed piece.
struct Pack {
    p: usize,
}

impl MapOnlyJob for Pack {
    type Key = u32;
    type Value = Vec<i32>;

    fn records(&self) -> Records {
        Records::Fixed(4 * self.p)
    }

    fn map(&self, split: Split<'_>, out: &mut Vec<(u32, Vec<i32>)>) -> MapResult {
        let first = split.offset as usize / (4 * self.p);
        out.push((first as u32, pack(split.data, self.p)));
        Ok(())
    }

    fn sort_output(&self) -> bool {
        // Splits come in row order.
        false
    }
}

/// The `R x STRIP` tile of `a`'s rows times a strip block (`a[t][i]` pairs
/// with the block's row `i`), summed in registers: the inner loop over the
/// strip's columns unrolls into whole vectors, and the accumulators stay in
/// registers for the whole block (16 of them with AVX-512).
#[inline(always)]
fn tile<const R: usize>(a: &[&[i32]; R], panel: &[i32]) -> [[i32; STRIP]; R] {
    let mut acc = [[0i32; STRIP]; R];
    let n = panel.len() / STRIP;
    let a: [&[i32]; R] = std::array::from_fn(|t| &a[t][..n]);
    for i in 0..n {
        let b: &[i32; STRIP] = panel[i * STRIP..(i + 1) * STRIP]
            .try_into()
            .expect("a whole strip row");
        for t in 0..R {
            let x = a[t][i];
            for l in 0..STRIP {
                acc[t][l] = acc[t][l].wrapping_add(x.wrapping_mul(b[l]));
            }
        }
    }
    acc
}

/// Strip `s` of `B`'s inner block `ks`: the block's rows `ks`, cut to the
/// strip's columns, that [`add_tile`] multiplies rows of `a` by.
struct Panel<'b> {
    ks: std::ops::Range<usize>,
    s: usize,
    values: &'b [i32],
}

/// Adds `a b` for rows `first..first + R` of `a` (rows of `k` values) and
/// `panel` of `B` into `out` (rows of `padded`
/// values: whole strips, so that the tile is added with fixed-length loops
/// and its accumulators never leave the registers).
#[inline(always)]
fn add_tile<const R: usize>(
    a: &[i32],
    b: &Packed,
    first: usize,
    panel: &Panel<'_>,
    out: &mut [i32],
) {
    let k = b.k;
    let padded = b.strips() * STRIP;
    let ks = &panel.ks;
    let rows: [&[i32]; R] =
        std::array::from_fn(|t| &a[(first + t) * k + ks.start..(first + t) * k + ks.end]);
    let acc = tile(&rows, panel.values);
    for (t, acc) in acc.iter().enumerate() {
        let at = (first + t) * padded + panel.s * STRIP;
        let row: &mut [i32; STRIP] = (&mut out[at..at + STRIP])
            .try_into()
            .expect("a whole strip");
        for (c, &v) in row.iter_mut().zip(acc) {
            *c = c.wrapping_add(v);
        }
    }
}

/// Appends `a b` to `c`, for the rows of `a` (rows of `k >= 1` values): as
/// many rows of `p` values.
fn multiply_rows(a: &[i32], b: &Packed, c: &mut Vec<i32>) {
    let padded = b.strips() * STRIP;
    let rows = a.len() / b.k;
    let mut out = vec![0i32; rows * padded];
    vectorized(
        #[inline(always)]
        || {
            let mut k0 = 0;
            for piece in &b.pieces {
                let len = piece.len() / padded;
                let ks = k0..k0 + len;
                for (s, values) in piece.chunks_exact(len * STRIP).enumerate() {
                    let panel = Panel {
                        ks: ks.clone(),
                        s,
                        values,
                    };
                    let mut i = 0;
                    while i + ROWS <= rows {
                        add_tile::<ROWS>(a, b, i, &panel, &mut out);
                        i += ROWS;
                    }
                    for i in i..rows {
                        add_tile::<1>(a, b, i, &panel, &mut out);
                    }
                }
                k0 += len;
            }
        },
    );
    for row in out.chunks_exact(padded) {
        c.extend_from_slice(&row[..b.p]);
    }
}

/// The right factor `B` packed once for the kernel, to multiply rows of
/// `A` by: what a worker process of an isolated run does with its split of
/// `A`'s rows.
pub struct Factor(Packed);

impl Factor {
    /// `b` packed on the calling thread.
    pub fn new(b: &Matrix<'_>) -> Factor {
        Factor(Packed::new(b))
    }

    /// The rows of `A B` for `a`, whole rows of `A` (of `B`'s row count
    /// of values each) as bytes: as many rows of `B`'s column count of
    /// values, one after the other.
    pub fn multiply(&self, a: &[u8]) -> Vec<i32> {
        multiply_bytes(a, &self.0)
    }
}

/// `a b` for rows of `a` given as bytes (of `b.k >= 1` values each).
fn multiply_bytes(a: &[u8], b: &Packed) -> Vec<i32> {
    let mut rows = Vec::with_capacity(a.len() / 4);
    decode_into(a, &mut rows);
    let mut c = Vec::with_capacity(rows.len() / b.k * b.p);
    multiply_rows(&rows, b, &mut c);
    c
}

/// The map-only job: a split of `A`'s rows to the same rows of `C`.
struct Multiply<'a> {
    b: &'a Packed,
}

impl MapOnlyJob for Multiply<'_> {
    type Key = u32;
    type Value = Vec<i32>;

    fn records(&self) -> Records {
        Records::Fixed(4 * self.b.k)
    }

    fn map(&self, split: Split<'_>, out: &mut Vec<(u32, Vec<i32>)>) -> MapResult {
        let first = split.offset as usize / (4 * self.b.k);
        out.push((first as u32, multiply_bytes(split.data, self.b)));
        Ok(())
    }

    fn sort_output(&self) -> bool {
        // Splits come in row order.
        false
    }
}

/// Checks that `a b` is defined.
pub fn check(a: &Matrix<'_>, b: &Matrix<'_>) -> Result<()> {
    if a.cols != b.rows {
        return Err(Error::InvalidInput(format!(
            "A is {} x {} and B is {} x {}: A needs as many columns as B has rows",
            a.rows, a.cols, b.rows, b.cols
        )));
    }
    if a.rows as u64 > u32::MAX as u64 {
        return Err(Error::InvalidInput(format!(
            "A has {} rows: at most {} are supported",
            a.rows,
            u32::MAX
        )));
    }
    Ok(())
}

/// Rows of `A` per split: about 8 splits per worker, at most 128 rows (so
/// that a split's block of `A` stays in the L2 cache), in whole kernel
/// groups.
fn default_rows_per_split(rows: usize, threads: usize) -> usize {
    (rows / (threads * 8))
        .clamp(ROWS, 128)
        .next_multiple_of(ROWS)
}

/// `A B` with ember: two map-only jobs on `rt` (pack `B`, multiply); the
/// stats are summed over both.
pub fn run(
    rt: &Runtime,
    a: &Matrix<'_>,
    b: &Matrix<'_>,
    opts: &RunOptions,
) -> Result<(Product, Stats)> {
    check(a, b)?;
    // Job 1 packs B in pieces of KC rows.
    let pack_opts = RunOptions::default().split_size(KC * b.row_bytes());
    let pieces = rt.run_map_only(&Pack { p: b.cols }, &Input::bytes(b.data), &pack_opts)?;
    let mut stats = Stats::default();
    add_stats(&mut stats, &pieces.stats);
    let packed = Packed {
        k: b.rows,
        p: b.cols,
        pieces: pieces.pairs.into_iter().map(|(_, piece)| piece).collect(),
    };
    // Job 2 multiplies.
    let rows_per_split = default_rows_per_split(a.rows, rt.threads());
    let opts = opts
        .clone()
        .split_size(opts.split_size.or(Some(rows_per_split * a.row_bytes())));
    let out = rt.run_map_only(&Multiply { b: &packed }, &Input::bytes(a.data), &opts)?;
    add_stats(&mut stats, &out.stats);
    let blocks = out.pairs.into_iter().map(|(_, rows)| rows).collect();
    Ok((Product::from_blocks(a.rows, b.cols, blocks), stats))
}

/// The plain sequential multiply: the correctness oracle and the benchmark
/// baseline (the same kernel, on blocks of 128 rows).
pub fn sequential(a: &Matrix<'_>, b: &Matrix<'_>) -> Result<Product> {
    check(a, b)?;
    let packed = Packed::new(b);
    // At most the values A holds (a 0-row A may claim any width B allows).
    let mut rows = Vec::with_capacity(a.cols.saturating_mul(128).min(a.data.len() / 4));
    let blocks = a
        .data
        .chunks(128 * a.row_bytes())
        .map(|bytes| {
            rows.clear();
            decode_into(bytes, &mut rows);
            let mut c = Vec::with_capacity(rows.len() / a.cols * b.cols);
            multiply_rows(&rows, &packed, &mut c);
            c
        })
        .collect();
    Ok(Product::from_blocks(a.rows, b.cols, blocks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::encode;

    /// The definition, computed plainly.
    fn plain(a: &[i32], b: &[i32], m: usize, k: usize, p: usize) -> Vec<i32> {
        let mut c = vec![0i32; m * p];
        for i in 0..m {
            for j in 0..p {
                c[i * p + j] = (0..k).fold(0i32, |s, r| {
                    s.wrapping_add(a[i * k + r].wrapping_mul(b[r * p + j]))
                });
            }
        }
        c
    }

    #[test]
    fn kernel_matches_the_definition_on_odd_shapes() {
        // Shapes off every block size, and values that wrap.
        for (m, k, p) in [(7, 300, 33), (1, 1, 1), (5, 17, 16), (9, 257, 5), (0, 3, 4)] {
            let a: Vec<i32> = (0..m * k)
                .map(|x| (x as i32).wrapping_mul(0x9e37_79b9u32 as i32))
                .collect();
            let b: Vec<i32> = (0..k * p).map(|x| (x as i32 * 7) % 1001 - 500).collect();
            let (ab, bb) = (encode(m, k, &a), encode(k, p, &b));
            let got = sequential(
                &Matrix::parse(&ab, "a").unwrap(),
                &Matrix::parse(&bb, "b").unwrap(),
            )
            .unwrap();
            let want = plain(&a, &b, m, k, p);
            assert_eq!(got.values(), want, "{m} x {k} x {p}");
            for i in 0..m {
                assert_eq!(got.row(i), &want[i * p..(i + 1) * p]);
            }
        }
    }
}
