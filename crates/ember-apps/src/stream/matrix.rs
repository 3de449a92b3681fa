//! PCA and matrix multiply in the streaming contract, over the rows of an
//! ember matrix file (its values, the 24-byte header skipped): the jobs
//! `ember pca --isolate` and `ember matrix-multiply --isolate` run in
//! their worker processes.
//!
//! - `pca-mean --matrix FILE`: `row<TAB>sum`, the exact sum of each row of
//!   the map input, the rows of FILE ([`crate::pca`]'s job 1).
//! - `pca-cov --matrix FILE --sums FILE`: `row<TAB>cov,cov,...`, for each
//!   row `i` of the map input the covariances `cov(i, j)`, `j >= i`, with
//!   the rows `j` read from the matrix FILE (mapped read-only, shared by
//!   every worker) and the exact row sums from the sums FILE (one per
//!   line, in row order: what `pca-mean` reduces to). Map only: every key
//!   is one row.
//! - `matmul-rows --b FILE`: `row<TAB>c,c,...`, row `i` of `A B` for each
//!   row `i` of the map input, rows of `A`, with `B` read from FILE (mapped
//!   read-only, packed by each worker). Map only.
//!
//! A map task numbers its rows from its split's start in the file
//! (Hadoop Streaming's `mapreduce_map_input_start`, past the header);
//! without it (standard input) from 0. The map-only jobs' keys are
//! [`RowIndex`]es, ten digits, so that their text order is row order.

use std::io::{BufRead, Write};
use std::path::Path;

use ember::spill::Encode;
use ember::stream::{
    push_record, read_lines, BinaryJob, Encoded, Form, KeyOrder, MapInput, Record, Registry,
    StreamJob, Text,
};
use ember::{Error, Input, Records, Result, RunOptions, Runtime, Stats};

use super::{whole, HADOOP_INPUT_START};
use crate::matrix::{Matrix, HEADER_BYTES};
use crate::matrix_multiply::Factor;
use crate::pca::{self, RowSums};

/// A row's index, written as ten decimal digits (`0000000042`): the text
/// order of the keys is the rows' order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowIndex(pub u32);

impl Text for RowIndex {
    fn write_text(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(format!("{:010}", self.0).as_bytes());
    }
    fn read_text(text: &[u8]) -> Option<Self> {
        if text.len() != 10 || !text.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(text).ok()?.parse().ok().map(RowIndex)
    }
}

/// A matrix file, memory-mapped read-only, its header checked.
struct MatrixFile {
    input: Input<'static>,
    rows: usize,
    cols: usize,
}

impl MatrixFile {
    fn open(path: &str) -> std::result::Result<Self, String> {
        let input = Input::in_memory([path]).map_err(|e| e.to_string())?;
        let m = Matrix::parse(input.part_bytes(0), path).map_err(|e| e.to_string())?;
        let (rows, cols) = (m.rows, m.cols);
        Ok(MatrixFile { input, rows, cols })
    }

    fn matrix(&self) -> Matrix<'_> {
        Matrix {
            rows: self.rows,
            cols: self.cols,
            data: &self.input.part_bytes(0)[HEADER_BYTES..],
        }
    }
}

/// The first row of this map task's input: its start in the file past the
/// header, over rows of `row_bytes`; 0 with no start in the environment.
fn first_row(row_bytes: usize) -> std::result::Result<usize, String> {
    let Ok(start) = std::env::var(HADOOP_INPUT_START) else {
        return Ok(0);
    };
    let past_header = start
        .parse::<usize>()
        .ok()
        .and_then(|s| s.checked_sub(HEADER_BYTES))
        .filter(|s| s % row_bytes == 0);
    past_header.map(|s| s / row_bytes).ok_or_else(|| {
        format!("{HADOOP_INPUT_START}={start} is not the start of a row past the matrix header")
    })
}

/// The values of `--flag VALUE` pairs in `args`, in the order of `flags`;
/// every flag is required, once.
fn flags<const N: usize>(
    args: &[String],
    flags: [&str; N],
) -> std::result::Result<[String; N], String> {
    let expected = || {
        let usage: Vec<String> = flags.iter().map(|f| format!("{f} FILE")).collect();
        format!("expected {}, got '{}'", usage.join(" "), args.join(" "))
    };
    let mut values: [Option<String>; N] = std::array::from_fn(|_| None);
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let at = flags.iter().position(|f| f == flag).ok_or_else(expected)?;
        let value = rest.next().ok_or_else(expected)?;
        if values[at].replace(value.clone()).is_some() {
            return Err(expected());
        }
    }
    let values = values.into_iter().collect::<Option<Vec<String>>>();
    values.and_then(|v| v.try_into().ok()).ok_or_else(expected)
}

/// Registers `pca-mean`, `pca-cov` and `matmul-rows` (the module's notes).
pub(super) fn register(registry: &mut Registry) {
    registry.register(
        "pca-mean",
        "row<TAB>sum: the exact sum of each row of an ember matrix file (--matrix FILE, its rows the input)",
        |args| Ok(Box::new(Encoded::new(row_sums(args)?)) as Box<dyn StreamJob>),
    );
    registry.register(
        "pca-cov",
        "row<TAB>cov,...: each input row's covariances with the rows after it (--matrix FILE --sums FILE)",
        |args| Ok(Box::new(CovarianceRows::from_args(args)?) as Box<dyn StreamJob>),
    );
    registry.register(
        "matmul-rows",
        "row<TAB>c,...: each input row of A times B (--b FILE, an ember matrix file)",
        |args| Ok(Box::new(ProductRows::from_args(args)?) as Box<dyn StreamJob>),
    );
}

/// `pca-mean --matrix FILE`: the row sums of [`crate::pca`]'s job 1.
pub(super) fn row_sums(args: &[String]) -> std::result::Result<RowSums, String> {
    let [path] = flags(args, ["--matrix"])?;
    let file = MatrixFile::open(&path)?;
    let m = file.matrix();
    pca::check(&m).map_err(|e| e.to_string())?;
    Ok(RowSums {
        cols: m.cols,
        first: first_row(m.row_bytes())?,
    })
}

/// A map-only job over matrix rows: an output row per input row.
pub trait RowMap: Send + Sync {
    /// An output row, a key's value.
    type Row: Text + Encode;
    /// Bytes of an input row.
    fn row_bytes(&self) -> usize;
    /// The output rows for the input rows `first..` in `data` (whole rows).
    fn map_rows(&self, first: usize, data: &[u8]) -> Vec<Self::Row>;
}

/// A [`RowMap`] in the streaming contract: map writes a
/// `row<TAB>value` line per row of its input (rows numbered from its
/// split's start, the module's notes); combine and reduce pass the lines
/// on in key order (every key is one row: nothing to fold).
pub struct EachRow<J> {
    job: J,
    first: usize,
}

impl<J: RowMap> EachRow<J> {
    /// `job` over this map task's rows.
    fn new(job: J) -> std::result::Result<Self, String> {
        let first = first_row(job.row_bytes())?;
        Ok(EachRow { job, first })
    }
}

/// Writes `rows` in the order given, as lines or as records.
fn write_rows<V: Text + Encode>(
    rows: impl Iterator<Item = (RowIndex, V)>,
    form: Form,
    out: &mut dyn Write,
) -> Result<()> {
    let mut bytes = Vec::new();
    for (row, value) in rows {
        bytes.clear();
        match form {
            Form::Text => {
                row.write_text(&mut bytes);
                bytes.push(b'\t');
                value.write_text(&mut bytes);
                bytes.push(b'\n');
            }
            Form::Binary => {
                push_record(&mut bytes, &row, &value);
            }
        }
        out.write_all(&bytes)
            .map_err(|e| Error::io("<output>", e))?;
    }
    Ok(())
}

impl<J: RowMap> EachRow<J> {
    /// Maps the whole rows of `input` and writes a line or a record per
    /// row; a partial row is an error.
    fn map_rows(&self, input: &Input<'_>, form: Form, out: &mut dyn Write) -> Result<Stats> {
        let data = whole(input, "rows of a matrix")?;
        let row = self.job.row_bytes();
        let rows = data.len() / row;
        if rows * row != data.len() {
            let partial = format!(
                "a partial row of {} bytes (a row is {row})",
                data.len() - rows * row
            );
            return Err(Error::Malformed {
                path: input.part_name(0).to_path_buf(),
                offset: (rows * row) as u64,
                message: partial,
            });
        }
        let out_rows = self.job.map_rows(self.first, data);
        let keys = (self.first..).map(|i| RowIndex(i as u32));
        write_rows(keys.zip(out_rows), form, out)?;
        let mut stats = Stats::default();
        stats.input_bytes = data.len() as u64;
        stats.distinct_keys = rows as u64;
        Ok(stats)
    }
}

impl<J: RowMap> BinaryJob for EachRow<J> {
    fn map_records(
        &self,
        _runtime: &Runtime,
        input: &Input<'_>,
        _opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats> {
        self.map_rows(input, Form::Binary, out)
    }

    fn reduce_records(
        &self,
        name: &str,
        input: &mut dyn Iterator<Item = Result<Record<'_>>>,
        out: &mut dyn Write,
    ) -> Result<()> {
        for (number, record) in input.enumerate() {
            let Some(row) = record?.decode::<RowIndex, J::Row>() else {
                let message = format!("{name}, record {}: not a row", number + 1);
                return Err(Error::InvalidInput(message));
            };
            write_rows(std::iter::once(row), Form::Binary, out)?;
        }
        Ok(())
    }
}

impl<J: RowMap> StreamJob for EachRow<J> {
    /// A map reads its rows at once (a block of whole rows: an isolated
    /// run cuts a file at multiples of a row).
    fn map_input(&self) -> MapInput {
        MapInput::Whole
    }

    fn records(&self) -> Records {
        Records::Fixed(self.job.row_bytes())
    }

    /// Every key is one row, numbered from the split's start: a split's
    /// lines are final, and the splits' follow each other in row order.
    fn map_only(&self) -> bool {
        true
    }

    /// A row's value as its [`Encode`] bytes: no number in text.
    fn binary(&self) -> Option<&dyn BinaryJob> {
        Some(self)
    }

    fn map(
        &self,
        _runtime: &Runtime,
        input: &Input<'_>,
        _opts: &RunOptions,
        out: &mut dyn Write,
    ) -> Result<Stats> {
        self.map_rows(input, Form::Text, out)
    }

    fn combine(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        let mut rows: Vec<(RowIndex, J::Row)> = Vec::new();
        read_lines(name, input, KeyOrder::Any, |row, value, _| {
            rows.push((row, value));
            Ok(())
        })?;
        rows.sort_by_key(|(row, _)| *row);
        write_rows(rows.into_iter(), Form::Text, out)
    }

    fn reduce(&self, name: &str, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<()> {
        read_lines(name, input, KeyOrder::Sorted, |row, value: J::Row, _| {
            write_rows(std::iter::once((row, value)), Form::Text, out)
        })
    }
}

/// `pca-cov`: covariance rows, from the whole matrix and its row sums.
pub struct CovarianceRows {
    matrix: MatrixFile,
    sums: Vec<i64>,
    row_bytes: usize,
}

impl CovarianceRows {
    /// From `--matrix FILE --sums FILE`.
    pub(super) fn from_args(args: &[String]) -> std::result::Result<EachRow<Self>, String> {
        let [matrix, sums] = flags(args, ["--matrix", "--sums"])?;
        let matrix = MatrixFile::open(&matrix)?;
        let m = matrix.matrix();
        pca::check(&m).map_err(|e| e.to_string())?;
        let sums = read_sums(Path::new(&sums), m.rows)?;
        let row_bytes = m.row_bytes();
        EachRow::new(CovarianceRows {
            matrix,
            sums,
            row_bytes,
        })
    }
}

/// The row sums of a sums file: one integer a line, `rows` of them.
fn read_sums(path: &Path, rows: usize) -> std::result::Result<Vec<i64>, String> {
    let text = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let sums = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(n, line)| {
            i64::read_text(line)
                .ok_or_else(|| format!("{} line {}: not an integer", path.display(), n + 1))
        })
        .collect::<std::result::Result<Vec<i64>, String>>()?;
    if sums.len() != rows {
        return Err(format!(
            "{}: {} sums for a matrix of {rows} rows",
            path.display(),
            sums.len()
        ));
    }
    Ok(sums)
}

impl RowMap for CovarianceRows {
    type Row = Vec<f64>;

    fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    fn map_rows(&self, first: usize, data: &[u8]) -> Vec<Vec<f64>> {
        let m = self.matrix.matrix();
        let rows = first..first + data.len() / self.row_bytes;
        let cov = pca::covariance_of_rows(&m, &self.sums, rows);
        cov.into_iter().map(|(_, row)| row).collect()
    }
}

/// `matmul-rows`: rows of `A B`, `B` from a file.
pub struct ProductRows {
    b: Factor,
    /// `A`'s row: `B`'s rows, 4 bytes each.
    row_bytes: usize,
    cols: usize,
}

impl ProductRows {
    /// From `--b FILE`.
    pub(super) fn from_args(args: &[String]) -> std::result::Result<EachRow<Self>, String> {
        let [path] = flags(args, ["--b"])?;
        let file = MatrixFile::open(&path)?;
        let b = file.matrix();
        if b.rows == 0 {
            return Err(format!("{path}: B has no rows (A's rows would be empty)"));
        }
        EachRow::new(ProductRows {
            b: Factor::new(&b),
            row_bytes: 4 * b.rows,
            cols: b.cols,
        })
    }
}

impl RowMap for ProductRows {
    type Row = Vec<i32>;

    fn row_bytes(&self) -> usize {
        self.row_bytes
    }

    fn map_rows(&self, _first: usize, data: &[u8]) -> Vec<Vec<i32>> {
        let c = self.b.multiply(data);
        c.chunks_exact(self.cols).map(<[i32]>::to_vec).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_indexes_are_ten_digits_in_row_order() {
        let mut text = Vec::new();
        RowIndex(42).write_text(&mut text);
        assert_eq!(text, b"0000000042");
        assert_eq!(RowIndex::read_text(&text), Some(RowIndex(42)));
        for bad in ["42", "+000000042", "00000000042", "000000004x"] {
            assert_eq!(RowIndex::read_text(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn flags_are_required_once_each() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let got = flags(
            &args(&["--sums", "s", "--matrix", "m"]),
            ["--matrix", "--sums"],
        );
        assert_eq!(got.unwrap(), ["m".to_string(), "s".to_string()]);
        let bad: [&[&str]; 4] = [
            &[],
            &["--matrix"],
            &["--matrix", "m", "--matrix", "n"],
            &["--b", "x"],
        ];
        for bad in bad {
            let e = flags(&args(bad), ["--matrix"]).unwrap_err();
            assert!(e.contains("expected --matrix FILE"), "{bad:?}: {e}");
        }
    }
}
