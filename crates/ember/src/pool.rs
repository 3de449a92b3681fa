//! The worker pool: threads created once per [`Runtime`](crate::Runtime) and
//! reused by every phase of every job (Phoenix Rebirth's persistent pool).
//!
//! Built on a rayon `ThreadPool`: `broadcast` runs one closure per worker
//! (the map phase, where each worker owns a container and pulls splits from
//! an atomic counter), and `install` runs rayon's work-stealing parallel
//! iterators and sorts on the same threads (reduce and merge). No phase
//! creates a thread.
//!
//! Workers are pinned, one to each CPU the process may run on, when there
//! are two or more and no more workers than such CPUs (Linux; Phoenix
//! binds its workers the same way). Measured on the 2-vCPU development VM:
//! two compute-bound single-threaded processes left to the scheduler
//! sometimes shared one vCPU (each took 2x as long, 0.47 s against
//! 0.24-0.26 s for PCA's kernel), and in three trials pinned with
//! `taskset` they did not; unpinned 2-thread runs of PCA, k-means and
//! matrix multiply swung between 1.0x and 2.0x over 1 thread.

use crate::error::{Error, Result};

/// The runtime's threads.
pub(crate) struct Pool {
    inner: rayon::ThreadPool,
}

impl Pool {
    /// Starts `threads` worker threads, pinned to CPUs if `pin` and there
    /// are enough of them (see the module docs).
    pub(crate) fn new(threads: usize, pin: bool) -> Result<Pool> {
        let cpus = if pin { allowed_cpus() } else { Vec::new() };
        // One worker has nothing to share a CPU with: it stays free.
        let pinned = threads > 1 && threads <= cpus.len();
        let mut builder = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("ember-worker-{i}"));
        if pinned {
            builder = builder.start_handler(move |i| pin_to(cpus[i]));
        }
        let inner = builder
            .build()
            .map_err(|e| Error::Config(format!("cannot start {threads} worker threads: {e}")))?;
        Ok(Pool { inner })
    }

    /// Number of workers.
    pub(crate) fn threads(&self) -> usize {
        self.inner.current_num_threads()
    }

    /// The calling thread's worker index, if it is one of this pool's
    /// workers (not another pool's: their indices mean nothing here).
    pub(crate) fn current_index(&self) -> Option<usize> {
        self.inner.current_thread_index()
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

/// The CPUs this process may run on, in order (empty if unknown).
#[cfg(target_os = "linux")]
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: `set` is a plain bit set that sched_getaffinity fills in; its
    // size is passed along, and it is only read after the call succeeded.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

#[cfg(not(target_os = "linux"))]
fn allowed_cpus() -> Vec<usize> {
    Vec::new()
}

/// Pins the calling thread to `cpu` (a hint: if it fails, the thread runs
/// where the scheduler puts it).
#[cfg(target_os = "linux")]
fn pin_to(cpu: usize) {
    // SAFETY: `set` is a zeroed bit set with one bit set, passed with its
    // size; sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(not(target_os = "linux"))]
fn pin_to(_cpu: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_workers_run_on_distinct_allowed_cpus() {
        let cpus = allowed_cpus();
        if cfg!(target_os = "linux") {
            assert!(!cpus.is_empty());
        }
        if cpus.len() < 2 {
            return;
        }
        let pool = Pool::new(2, true).unwrap();
        // SAFETY: sched_getcpu takes no arguments and returns the CPU the
        // calling thread runs on.
        let on: Vec<i32> = pool.broadcast(|_| unsafe { libc::sched_getcpu() });
        assert_eq!(on, vec![cpus[0] as i32, cpus[1] as i32]);
    }
}
