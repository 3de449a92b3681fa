//! The worker pool: threads created once per [`Runtime`](crate::Runtime) and
//! reused by every phase of every job (Phoenix Rebirth's persistent pool).
//!
//! Built on a rayon `ThreadPool`: `broadcast` runs one closure per worker
//! (the map phase, where each worker owns a container and pulls splits from
//! an atomic counter), and `install` runs rayon's work-stealing parallel
//! iterators and sorts on the same threads (reduce and merge). No phase
//! creates a thread.

use crate::error::{Error, Result};

/// The runtime's threads.
pub(crate) struct Pool {
    inner: rayon::ThreadPool,
}

impl Pool {
    /// Starts `threads` worker threads.
    pub(crate) fn new(threads: usize) -> Result<Pool> {
        let inner = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("ember-worker-{i}"))
            .build()
            .map_err(|e| Error::Config(format!("cannot start {threads} worker threads: {e}")))?;
        Ok(Pool { inner })
    }

    /// Number of workers.
    pub(crate) fn threads(&self) -> usize {
        self.inner.current_num_threads()
    }

    /// Runs `f(worker_index)` once on every worker and returns the results in
    /// worker order.
    pub(crate) fn broadcast<R: Send>(&self, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
        self.inner.broadcast(|ctx| f(ctx.index()))
    }

    /// Runs `f` inside the pool, so rayon's parallel iterators in it use the
    /// pool's workers.
    pub(crate) fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        self.inner.install(f)
    }
}
