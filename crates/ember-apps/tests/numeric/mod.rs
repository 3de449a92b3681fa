//! What the numeric workloads' tests share: the runtime configurations every
//! result must be the same under, and generated matrices.

use ember::{RunOptions, Runtime};
use ember_apps::matrix::{self, MatrixSpec};

/// Calls `f` for threads 1, 2 and 7 and split sizes of one record, of 4 KiB
/// and ember's default, with a label naming the configuration.
pub fn each_config(record_bytes: usize, mut f: impl FnMut(&Runtime, &RunOptions, &str)) {
    for threads in [1, 2, 7] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for split_size in [Some(record_bytes), Some(4096), None] {
            let opts = RunOptions::default().split_size(split_size);
            f(
                &rt,
                &opts,
                &format!("{threads} threads, split size {split_size:?}"),
            );
        }
    }
}

/// A generated matrix file's bytes.
pub fn matrix(rows: u64, cols: u64, lo: i32, hi: i32, seed: u64) -> Vec<u8> {
    matrix::matrix(&MatrixSpec {
        rows,
        cols,
        lo,
        hi,
        seed,
    })
}

/// A matrix file's bytes cut short by `cut` bytes.
pub fn truncated(mut bytes: Vec<u8>, cut: usize) -> Vec<u8> {
    bytes.truncate(bytes.len() - cut);
    bytes
}
