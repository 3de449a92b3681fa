//! Busy time per worker: how much of a phase each worker spent running user
//! code and the runtime's work, rather than waiting. Both modes report it
//! (`Stats::map_busy_secs`, `Stats::reduce_busy_secs`, `Stats::utilization`).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::pool::Pool;

/// Busy nanoseconds per worker of the pool, added to by the workers
/// themselves.
pub(crate) struct Busy<'p> {
    pool: &'p Pool,
    /// Nanoseconds worker `w` spent inside [`Busy::time`]. Each slot is
    /// written (`fetch_add`, relaxed) only by its own worker, and read after
    /// the phase, once the pool has joined every worker (the join orders the
    /// reads after the writes); the atomics only make the shared slice
    /// writable without a lock.
    nanos: Vec<AtomicU64>,
}

impl<'p> Busy<'p> {
    /// A clock for the workers of `pool`, at zero.
    pub(crate) fn new(pool: &'p Pool) -> Self {
        Busy {
            pool,
            nanos: (0..pool.threads()).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Runs `f`, adding its duration to the calling worker's busy time (on a
    /// thread outside the pool, including another pool's worker, it is not
    /// counted).
    #[inline]
    pub(crate) fn time<R>(&self, f: impl FnOnce() -> R) -> R {
        let start = Instant::now();
        let r = f();
        self.add(start.elapsed());
        r
    }

    /// Adds `d` to the calling worker's busy time.
    pub(crate) fn add(&self, d: Duration) {
        if let Some(slot) = self.pool.current_index().and_then(|w| self.nanos.get(w)) {
            slot.fetch_add(d.as_nanos() as u64, Relaxed);
        }
    }

    /// Busy seconds per worker.
    pub(crate) fn secs(&self) -> Vec<f64> {
        self.nanos
            .iter()
            .map(|n| n.load(Relaxed) as f64 * 1e-9)
            .collect()
    }
}

/// The share of `threads x wall` seconds that the workers were busy, given
/// each worker's busy seconds (in `0..=1`, 0 for an empty phase).
pub(crate) fn utilization(busy: &[&[f64]], threads: usize, wall: f64) -> f64 {
    let total: f64 = busy.iter().flat_map(|b| b.iter()).sum();
    if wall <= 0.0 || threads == 0 {
        return 0.0;
    }
    (total / (threads as f64 * wall)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilization_is_a_share() {
        assert_eq!(utilization(&[&[1.0, 1.0]], 2, 2.0), 0.5);
        assert_eq!(utilization(&[&[1.0], &[1.0]], 1, 2.0), 1.0);
        assert_eq!(utilization(&[&[]], 2, 0.0), 0.0);
    }

    #[test]
    fn time_outside_the_pool_is_not_counted() {
        let pool = Pool::new(2, false).unwrap();
        let b = Busy::new(&pool);
        assert_eq!(b.time(|| 7), 7);
        assert_eq!(b.secs(), vec![0.0, 0.0]);
        let other = Pool::new(3, false).unwrap();
        other.broadcast(|_| b.time(|| std::thread::sleep(Duration::from_millis(2))));
        assert_eq!(b.secs(), vec![0.0, 0.0]);
        pool.broadcast(|_| b.time(|| std::thread::sleep(Duration::from_millis(2))));
        assert!(b.secs().iter().all(|&s| s >= 0.002));
    }
}
