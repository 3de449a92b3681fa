//! The binary integer-matrix file of the numeric workloads (k-means points,
//! the PCA matrix, the factors of matrix multiply) and its generator.
//!
//! Layout, all little-endian: the 8 bytes `EMBERMAT`, the row count and the
//! column count as `u64`, then `rows * cols` `i32` values, row by row. A row
//! is one fixed-size record (`Records::Fixed(4 * cols)` on
//! [`Matrix::data`]), so splits never cut one.

use std::io::{self, Write};

use ember::{Error, Input, Result};
use rand::Rng;

use crate::blocks;
use crate::text::rng_for;

/// The first 8 bytes of a matrix file.
pub const MAGIC: [u8; 8] = *b"EMBERMAT";
/// Bytes before the first value: magic, rows, columns.
pub const HEADER_BYTES: usize = 24;

/// A matrix file's header, checked, and its value bytes (borrowed).
#[derive(Debug, Clone, Copy)]
pub struct Matrix<'a> {
    /// Number of rows.
    pub rows: usize,
    /// Number of columns (at least 1).
    pub cols: usize,
    /// The `rows * cols` values, 4 little-endian bytes each, row by row.
    pub data: &'a [u8],
}

impl<'a> Matrix<'a> {
    /// Checks a matrix file's bytes; `name` (a path) is used in errors.
    pub fn parse(bytes: &'a [u8], name: &str) -> Result<Self> {
        let bad = |what: String| Err(Error::InvalidInput(format!("{name}: {what}")));
        if bytes.len() < HEADER_BYTES {
            return bad(format!(
                "{} bytes, too short for the {HEADER_BYTES}-byte matrix header",
                bytes.len()
            ));
        }
        if bytes[..8] != MAGIC {
            return bad(
                "not an ember matrix file (no EMBERMAT header; `ember gen` writes them)".into(),
            );
        }
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        let (rows, cols) = (word(8), word(16));
        if cols == 0 {
            return bad(format!(
                "the header says {rows} x 0: a matrix needs at least 1 column"
            ));
        }
        // A row's bytes must be a size even when there are no rows: every
        // reader of the matrix cuts its data into rows of `4 * cols` bytes.
        if cols
            .checked_mul(4)
            .is_none_or(|row| row > isize::MAX as u64)
        {
            return bad(format!(
                "the header says {rows} x {cols}: a row of {cols} columns is too large to be a file"
            ));
        }
        let data = &bytes[HEADER_BYTES..];
        let expected = rows
            .checked_mul(cols)
            .and_then(|v| v.checked_mul(4))
            .filter(|&b| b <= isize::MAX as u64);
        let Some(expected) = expected else {
            return bad(format!(
                "the header says {rows} x {cols}, too large to be a file"
            ));
        };
        if data.len() as u64 != expected {
            let row_bytes = 4 * cols;
            let rows_found = data.len() as u64 / row_bytes;
            let rest = data.len() as u64 % row_bytes;
            let whole = if rest == 0 {
                String::new()
            } else {
                format!(" plus {rest} bytes of a partial row")
            };
            return bad(format!(
                "the header says {rows} x {cols} ({expected} bytes of values) but {} bytes follow \
                 it: {rows_found} rows of {row_bytes} bytes{whole}",
                data.len()
            ));
        }
        Ok(Matrix {
            rows: rows as usize,
            cols: cols as usize,
            data,
        })
    }

    /// Checks the matrix file `input` holds (in its first part, mapped or
    /// in memory), named by it in errors.
    ///
    /// # Panics
    ///
    /// If `input` has no part.
    pub fn from_input(input: &'a Input<'_>) -> Result<Self> {
        let name = input.part_name(0).display().to_string();
        Matrix::parse(input.part_bytes(0), &name)
    }

    /// Bytes per row.
    pub fn row_bytes(&self) -> usize {
        4 * self.cols
    }

    /// All values, row by row.
    pub fn values(&self) -> Vec<i32> {
        let mut v = Vec::with_capacity(self.rows * self.cols);
        decode_into(self.data, &mut v);
        v
    }

    /// The smallest and largest value (`None` for an empty matrix).
    pub fn range(&self) -> Option<(i32, i32)> {
        if self.data.is_empty() {
            return None;
        }
        let (lo, hi) = self
            .data
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes")))
            .fold((i32::MAX, i32::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
        Some((lo, hi))
    }
}

/// Appends the little-endian `i32`s of `bytes` (a multiple of 4 long) to `out`.
pub fn decode_into(bytes: &[u8], out: &mut Vec<i32>) {
    debug_assert_eq!(bytes.len() % 4, 0);
    out.extend(
        bytes
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes(b.try_into().expect("4 bytes"))),
    );
}

/// The header of a `rows x cols` matrix file.
pub fn header(rows: u64, cols: u64) -> [u8; HEADER_BYTES] {
    let mut h = [0u8; HEADER_BYTES];
    h[..8].copy_from_slice(&MAGIC);
    h[8..16].copy_from_slice(&rows.to_le_bytes());
    h[16..].copy_from_slice(&cols.to_le_bytes());
    h
}

/// Writes a `rows x cols` matrix file holding `values` (row by row).
pub fn write(rows: usize, cols: usize, values: &[i32], out: &mut impl Write) -> io::Result<()> {
    assert_eq!(
        values.len(),
        rows * cols,
        "values of a {rows} x {cols} matrix"
    );
    out.write_all(&header(rows as u64, cols as u64))?;
    for chunk in values.chunks(1 << 16) {
        let bytes: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
        out.write_all(&bytes)?;
    }
    Ok(())
}

/// A matrix file in memory.
pub fn encode(rows: usize, cols: usize, values: &[i32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + 4 * values.len());
    write(rows, cols, values, &mut out).expect("writing to memory cannot fail");
    out
}

/// A random matrix: values uniform in `lo..hi`.
#[derive(Debug, Clone, PartialEq)]
pub struct MatrixSpec {
    /// Number of rows.
    pub rows: u64,
    /// Number of columns.
    pub cols: u64,
    /// Smallest value.
    pub lo: i32,
    /// One past the largest value.
    pub hi: i32,
    /// Random seed: the same spec gives the same bytes.
    pub seed: u64,
}

impl MatrixSpec {
    /// Total file size in bytes.
    pub fn file_bytes(&self) -> u64 {
        HEADER_BYTES as u64 + 4 * self.rows * self.cols
    }
}

/// Values per random stream: each block of values is generated from its own
/// stream, in parallel, so the output does not depend on the thread count.
const BLOCK_VALUES: u64 = 1 << 18;

/// Writes the matrix file of `spec` to `out`, calling `progress(bytes)` as
/// it goes.
pub fn write_matrix(
    spec: &MatrixSpec,
    out: &mut impl Write,
    mut progress: impl FnMut(u64),
) -> io::Result<()> {
    if spec.lo >= spec.hi {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("empty value range {}..{}", spec.lo, spec.hi),
        ));
    }
    out.write_all(&header(spec.rows, spec.cols))?;
    blocks::write_blocks(
        4 * spec.rows * spec.cols,
        4 * BLOCK_VALUES,
        out,
        |n| progress(n + HEADER_BYTES as u64),
        |b, len| {
            let mut r = rng_for(spec.seed, b);
            (0..len / 4)
                .flat_map(|_| r.gen_range(spec.lo..spec.hi).to_le_bytes())
                .collect()
        },
    )
}

/// The matrix file of `spec` in memory (for tests and small inputs).
pub fn matrix(spec: &MatrixSpec) -> Vec<u8> {
    let mut v = Vec::with_capacity(spec.file_bytes() as usize);
    write_matrix(spec, &mut v, |_| {}).expect("a valid spec written to memory");
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_is_reproducible() {
        let spec = MatrixSpec {
            rows: 300,
            cols: 1000,
            lo: -5,
            hi: 7,
            seed: 3,
        };
        let bytes = matrix(&spec);
        assert_eq!(bytes.len() as u64, spec.file_bytes());
        assert_eq!(bytes, matrix(&spec));
        assert_ne!(
            bytes,
            matrix(&MatrixSpec {
                seed: 4,
                ..spec.clone()
            })
        );
        let m = Matrix::parse(&bytes, "m").unwrap();
        assert_eq!((m.rows, m.cols), (300, 1000));
        let v = m.values();
        assert!(v.iter().all(|x| (-5..7).contains(x)));
        assert_eq!(m.range(), Some((-5, 6)));
        assert_eq!(encode(300, 1000, &v), bytes);
    }

    #[test]
    fn malformed_files_say_what_is_wrong() {
        let err = |b: &[u8]| Matrix::parse(b, "f.mat").unwrap_err().to_string();
        assert!(err(b"EMBERMAT").contains("f.mat: 8 bytes, too short for the 24-byte"));
        let mut bad_magic = encode(1, 1, &[5]);
        bad_magic[0] = b'X';
        assert!(err(&bad_magic).contains("not an ember matrix file"));
        assert!(err(&header(3, 0)).contains("says 3 x 0: a matrix needs at least 1 column"));
        assert!(err(&header(u64::MAX, 2)).contains("too large"));
        // A product that overflows, and one that fits in 64 bits but
        // claims far more than the file holds: refused before any
        // allocation.
        assert!(err(&header(1 << 32, 1 << 32)).contains("too large"));
        assert!(err(&header(1 << 20, 1 << 20)).contains("but 0 bytes follow"));
        let mut short = encode(2, 3, &[1, 2, 3, 4, 5, 6]);
        short.truncate(short.len() - 2);
        let e = err(&short);
        assert!(
            e.contains("says 2 x 3 (24 bytes of values) but 22 bytes follow it: 1 rows of 12 bytes plus 10 bytes of a partial row"),
            "{e}"
        );
        assert!(Matrix::parse(&header(0, 4), "e").unwrap().range().is_none());
    }
}
