//! The run settings every workload test sweeps: 1, 2 and 7 threads, each
//! with a tiny split size (many splits, records cut as finely as allowed)
//! and a larger one.

use ember::{RunOptions, Runtime};

/// Split sizes: tiny, medium, and the runtime's default.
const SPLIT_SIZES: [Option<usize>; 3] = [Some(64), Some(5000), None];

/// Calls `f(runtime, options, label)` for every setting.
pub fn for_each_setting(mut f: impl FnMut(&Runtime, &RunOptions, &str)) {
    for threads in [1, 2, 7] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for split_size in SPLIT_SIZES {
            let opts = RunOptions {
                split_size,
                ..Default::default()
            };
            f(
                &rt,
                &opts,
                &format!("{threads} threads, split size {split_size:?}"),
            );
        }
    }
}
