//! What the fuzz targets share: a runtime and run options chosen by the
//! fuzzer's first bytes, so that every input is also tried at several
//! thread counts and split sizes.

use std::sync::OnceLock;

use ember::{RunOptions, Runtime};

/// Runtimes of 1, 2 and 3 workers, built once per fuzzing process.
fn runtimes() -> &'static [Runtime; 3] {
    static RUNTIMES: OnceLock<[Runtime; 3]> = OnceLock::new();
    RUNTIMES.get_or_init(|| {
        [1, 2, 3].map(|n| Runtime::builder().threads(n).build().expect("a runtime"))
    })
}

/// The runtime and options the first three bytes of `data` pick (threads
/// 1-3; a split size of 1 byte to 64 KiB), and the rest of `data`.
pub fn setup(data: &[u8]) -> Option<(&'static Runtime, RunOptions, &[u8])> {
    let (head, rest) = data.split_first_chunk::<3>()?;
    let rt = &runtimes()[usize::from(head[0] % 3)];
    let split = 1 + usize::from(u16::from_le_bytes([head[1], head[2]]));
    Some((rt, RunOptions::default().split_size(split), rest))
}
