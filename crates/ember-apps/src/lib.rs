//! The classic MapReduce workloads on [`ember`], each with its input
//! generator and a plain sequential implementation used as the correctness
//! oracle and the benchmark baseline.

#![deny(missing_docs, unreachable_pub)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod blocks;
mod decimal;
pub mod histogram;
pub mod inverted_index;
mod isa;
pub use isa::vectorized;
pub mod kmeans;
pub mod linear_regression;
pub mod matrix;
pub mod matrix_multiply;
pub mod multijob;
pub mod pca;
pub mod sort;
pub mod stream;
pub mod string_match;
pub mod text;
mod tokens;
pub mod wordcount;
