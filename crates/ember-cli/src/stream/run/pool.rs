//! Running tasks a few at a time, and stopping at the first failure.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use anyhow::Result;

use super::command::Control;

/// Calls `task(i)` for every `i` in `0..n`, at most `width` at once and
/// in order of `i`, on threads of its own; the first error is recorded in
/// `ctl` and no further task starts.
pub(super) fn each(
    n: usize,
    width: usize,
    ctl: &Control,
    task: impl Fn(usize) -> Result<()> + Sync,
) {
    let next = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..width.clamp(1, n.max(1)) {
            s.spawn(|| {
                while !ctl.failed() {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    if let Err(e) = task(i) {
                        ctl.fail(e);
                    }
                }
            });
        }
    });
}
