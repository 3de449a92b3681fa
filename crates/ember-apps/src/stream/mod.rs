//! The built-in jobs in the streaming contract ([`ember::stream`]): what
//! `ember stream map|combine|reduce JOB` runs, by name.
//!
//! - `wordcount`: `word<TAB>count`, the lines of `ember wordcount -o -`.
//! - `inverted-index`: `word<TAB>doc,doc,...`, the names of the documents
//!   a word occurs in, sorted by their bytes, each escaped as a byte string
//!   with its commas written `\x2c`. A map process reads one document: its
//!   name is `--doc NAME`, else the environment's
//!   `mapreduce_map_input_file` (which Hadoop Streaming sets to the file of
//!   the map task's split), else `-`.
//! - `inverted-index-lines`: `word<TAB>id,id,...`, documents are lines,
//!   whose ids count the lines of all the files in order (`ember
//!   inverted-index --lines`'s); a map numbers its split's lines from
//!   the first line's id an isolated run gives it (see
//!   [`LineDocuments`]).
//! - `string-match [WORD...]`: `word<TAB>lines`, how many lines of the
//!   keys file are each target word (default: the words `ember gen
//!   string-match` plants).
//! - `string-match-offsets --show N [WORD...]`: `word<TAB>lines:offset,...`,
//!   the count and the byte offsets in the file of the first N lines that
//!   are each target word (a map task adds `mapreduce_map_input_start`).
//! - `kmeans --means FILE`: one k-means iteration over points given as
//!   text lines, `cluster<TAB>x,y,...` (see [`kmeans`]).
//! - `kmeans-rows --means FILE`: one k-means iteration's cluster sums,
//!   `cluster<TAB>count:sum,sum,...`, over binary points (an ember matrix
//!   file's rows, its header skipped: what `ember kmeans --isolate` runs).
//! - `linear-regression`: points as text lines `x y`; one
//!   `sums<TAB>n,sx,sy,sxx,syy,sxy` line per map process; reduce writes
//!   the sums and the fit as `key<TAB>value` lines (see
//!   [`linear_regression`]).
//! - `linear-regression-bytes`: points as pairs of signed bytes (what
//!   `ember gen linreg` writes and `ember linear-regression` reads),
//!   `0<TAB>SX` .. `4<TAB>SXY` lines: the five sums of
//!   [`crate::linear_regression`] (the point count is the input's bytes
//!   over two); an isolated run cuts it at even byte offsets.
//! - `pca-mean --matrix FILE`, `pca-cov --matrix FILE --sums FILE`:
//!   PCA's row sums and covariance rows over an ember matrix file's rows;
//!   `matmul-rows --b FILE`: the rows of `A B` over `A`'s rows (see
//!   [`matrix`]: what `ember pca --isolate` and `ember matrix-multiply
//!   --isolate` run).
//! - `histogram`: one whole 24-bit BMP per map process (a BMP cannot be
//!   cut at line boundaries), `r:000<TAB>pixels` lines summed over the
//!   images (see [`histogram`]).
//! - `sort`: 100-byte binary records in, `hexkey<TAB>hexrest` lines out of
//!   map, which a text sort orders by key; reduce writes the records back
//!   (see [`sort`]).
//!
//! Histogram and sort read their map input whole
//! ([`MapInput::Whole`](ember::stream::MapInput)): one object (an image, a
//! block of records) per map process, as Spark's `binaryFiles` or a
//! whole-file input format hands it over.

pub mod histogram;
mod inverted_index;
pub mod kmeans;
pub mod linear_regression;
pub mod matrix;
pub mod sort;
mod string_match;

pub use histogram::{ChannelValue, Images};
pub use inverted_index::{DocNames, DocumentWords, InDocument, LineDocuments};
pub use kmeans::{Round, Rows};
pub use linear_regression::{Regression, TextPoints};
pub use matrix::{CovarianceRows, EachRow, ProductRows, RowIndex, RowMap};
pub use sort::{Hex, SortRecords};
pub use string_match::{FirstOffsets, Found, TargetLines, TargetOffsets};

use ember::stream::{Encoded, Folding, Registry, StreamJob};
use ember::{Error, Input, Malformed, MapResult};

use crate::linear_regression::LinearRegression;
use crate::wordcount::WordCount;

/// The environment variable Hadoop Streaming names a map task's input
/// file in.
pub const HADOOP_INPUT_FILE: &str = "mapreduce_map_input_file";
/// The environment variable Hadoop Streaming gives a map task's split's
/// start in its file in.
pub const HADOOP_INPUT_START: &str = "mapreduce_map_input_start";

/// The built-in jobs, by name.
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.register(
        "wordcount",
        "word<TAB>count: words are runs of ASCII letters, lower-cased",
        |args| {
            no_arguments(args)?;
            Ok(Box::new(Encoded::new(WordCount::new())) as Box<dyn StreamJob>)
        },
    );
    registry.register(
        "inverted-index",
        "word<TAB>doc,doc,...: map takes --doc NAME (else $mapreduce_map_input_file)",
        |args| Ok(Box::new(Folding(DocumentWords::from_args(args)?)) as Box<dyn StreamJob>),
    );
    registry.register(
        "inverted-index-lines",
        "word<TAB>line,line,...: documents are lines, ids counted over the files in order (map needs its input in memory: isolated)",
        |args| {
            no_arguments(args)?;
            Ok(Box::new(LineDocuments) as Box<dyn StreamJob>)
        },
    );
    registry.register(
        "string-match",
        "word<TAB>lines: how many lines are each target word (args: the words)",
        |args| Ok(Box::new(Folding(TargetLines::from_args(args)?)) as Box<dyn StreamJob>),
    );
    registry.register(
        "string-match-offsets",
        "word<TAB>lines:offset,...: the count and the first N lines' byte offsets (args: --show N, the words)",
        |args| Ok(Box::new(Folding(TargetOffsets::from_args(args)?)) as Box<dyn StreamJob>),
    );
    registry.register(
        "kmeans",
        "cluster<TAB>x,y,...: one k-means iteration over text points (map and reduce take --means FILE)",
        |args| Ok(Box::new(Folding(Round::from_args(args)?)) as Box<dyn StreamJob>),
    );
    registry.register(
        "kmeans-rows",
        "cluster<TAB>count:sum,...: one k-means iteration's sums over binary points (rows of i32; --means FILE)",
        |args| Ok(Box::new(Folding(Rows::from_args(args)?)) as Box<dyn StreamJob>),
    );
    registry.register(
        "linear-regression",
        "N, SX, ..., a, b, R^2 lines: the fit of text points `x y` (partial: sums<TAB>n,sx,sy,sxx,syy,sxy)",
        |args| {
            no_arguments(args)?;
            Ok(Box::new(Regression) as Box<dyn StreamJob>)
        },
    );
    registry.register(
        "linear-regression-bytes",
        "0<TAB>SX .. 4<TAB>SXY: the sums of points as pairs of signed bytes (ember gen linreg)",
        |args| {
            no_arguments(args)?;
            Ok(Box::new(Folding(LinearRegression)) as Box<dyn StreamJob>)
        },
    );
    matrix::register(&mut registry);
    registry.register(
        "histogram",
        "channel:value<TAB>pixels (r:000 .. b:255): map reads one whole 24-bit BMP",
        |args| {
            no_arguments(args)?;
            Ok(Box::new(Images) as Box<dyn StreamJob>)
        },
    );
    registry.register(
        "sort",
        "hexkey<TAB>hexrest: map reads 100-byte records, reduce writes them back in key order",
        |args| {
            no_arguments(args)?;
            Ok(Box::new(SortRecords) as Box<dyn StreamJob>)
        },
    );
    registry
}

/// Calls `f` on each line of `data` that is not blank (without its
/// `\n` or `\r\n`); an error of `f` is the split's malformed record at
/// that line.
fn map_lines(data: &[u8], mut f: impl FnMut(&[u8]) -> Result<(), String>) -> MapResult {
    let mut at = 0;
    for line in data.split_inclusive(|&b| b == b'\n') {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if !text.is_empty() {
            f(text).map_err(|e| Malformed::new(at, e))?;
        }
        at += line.len();
    }
    Ok(())
}

/// The bytes of an input read whole (one part in memory), which a job of
/// [`MapInput::Whole`](ember::stream::MapInput) reads as `what`.
fn whole<'a>(input: &'a Input<'_>, what: &str) -> ember::Result<&'a [u8]> {
    if input.is_streamed() || input.parts() != 1 {
        return Err(Error::InvalidInput(format!(
            "map reads {what} as one input in memory (MapInput::Whole), \
             not a stream or several inputs"
        )));
    }
    Ok(input.part_bytes(0))
}

fn no_arguments(args: &[String]) -> Result<(), String> {
    match args.first() {
        Some(a) => Err(format!("takes no arguments, got '{a}'")),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(name: &str, args: &[&str]) -> String {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        match registry().job(name, &args) {
            Ok(_) => panic!("{name} {args:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_job_takes_only_the_arguments_it_knows() {
        let registry = registry();
        assert!(registry.job("wordcount", &[]).is_ok());
        let e = error("wordcount", &["--doc"]);
        assert!(e.contains("wordcount: takes no arguments"), "{e}");
        assert!(registry
            .job("inverted-index", &["--doc".into(), "a".into()])
            .is_ok());
        let e = error("inverted-index", &["--docs"]);
        assert!(e.contains("expected [--doc NAME]"), "{e}");
        let e = error("sorting", &[]);
        assert!(
            e.contains(
                "unknown job 'sorting' (known: histogram, inverted-index, \
                 inverted-index-lines, kmeans, kmeans-rows, linear-regression, \
                 linear-regression-bytes, matmul-rows, pca-cov, pca-mean, sort, \
                 string-match, string-match-offsets, wordcount)"
            ),
            "{e}"
        );
    }
}
