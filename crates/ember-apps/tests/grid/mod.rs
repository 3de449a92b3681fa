//! The run settings every workload test sweeps: 1, 2 and 7 threads, each
//! with a tiny split size (many splits, records cut as finely as allowed)
//! and a larger one.

use ember::{ContainerKind, RunOptions, Runtime};

/// Split sizes: tiny, medium, and the runtime's default.
#[allow(dead_code)] // not every test file sweeps settings
const SPLIT_SIZES: [Option<usize>; 3] = [Some(64), Some(5000), None];

/// Calls `f(runtime, options, label)` for every setting.
#[allow(dead_code)] // not every test file sweeps settings
pub fn for_each_setting(mut f: impl FnMut(&Runtime, &RunOptions, &str)) {
    for threads in [1, 2, 7] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for split_size in SPLIT_SIZES {
            let opts = RunOptions::default().split_size(split_size);
            f(
                &rt,
                &opts,
                &format!("{threads} threads, split size {split_size:?}"),
            );
        }
    }
}

/// Containers that can hold any key.
#[allow(dead_code)] // not every test file sweeps containers
pub const ANY_KEY: [ContainerKind; 5] = [
    ContainerKind::Auto,
    ContainerKind::Hash,
    ContainerKind::HashTree,
    ContainerKind::Append,
    ContainerKind::Intern,
];

/// Calls `f(runtime, options, label)` with each container of `kinds`, on 2
/// and 3 threads, with a tiny and the default split size.
#[allow(dead_code)] // not every test file sweeps containers
pub fn for_each_container(kinds: &[ContainerKind], mut f: impl FnMut(&Runtime, &RunOptions, &str)) {
    for threads in [2, 3] {
        let rt = Runtime::builder().threads(threads).build().unwrap();
        for split_size in [Some(64), None] {
            for &container in kinds {
                let opts = RunOptions::default()
                    .split_size(split_size)
                    .container(container);
                f(
                    &rt,
                    &opts,
                    &format!("{threads} threads, split {split_size:?}, {container}"),
                );
            }
        }
    }
}
